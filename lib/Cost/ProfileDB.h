//===- ProfileDB.h - Measured op times --------------------------*- C++ -*-===//
//
// A JSON database of measured op times keyed by (device, op signature,
// micro-batch size, TP degree). Entries override the analytic roofline.
// Format (docs/cost-model.md):
//   {"version": 1, "entries": [{"device": "a100-80gb",
//     "signature": "matmul:bf16:b=1,m=2048,n=6912,k=2304,w",
//     "micro_batch": 1, "tp": 1, "fwd_s": 1.2e-4,
//     "bwd_input_s": 1.3e-4, "bwd_weight_s": 1.2e-4}]}
// A missing phase falls back to the analytic time. An optional
//   "optimizer": [{"device": "local-core", "seconds_per_parameter": 2e-9}]
// gives the measured optimizer step (every update of a training step over
// the parameters it updated), which replaces the analytic update time.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_LIB_COST_PROFILEDB_H
#define DISTOPT_LIB_COST_PROFILEDB_H

#include "lib/Cost/ModelDesc.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <map>
#include <optional>

namespace llvm {
class raw_ostream;
namespace json {
class Value;
} // namespace json
} // namespace llvm

namespace distopt::cost {

class ProfileDB {
public:
  /// Seconds per phase; a negative value means "not measured".
  struct Entry {
    double fwd = -1;
    double bwdInput = -1;
    double bwdWeight = -1;
  };

  /// The database in \p json (text), errors naming \p fileName.
  static llvm::Expected<ProfileDB> parse(llvm::StringRef json,
                                         llvm::StringRef fileName);
  /// The database in the file \p path (readJSONFile's errors for a file
  /// that cannot be read or is not JSON).
  static llvm::Expected<ProfileDB> load(llvm::StringRef path);

  void add(llvm::StringRef device, llvm::StringRef signature, unsigned mbs,
           unsigned tp, Entry e);
  /// Measured time of \p phase, if any.
  std::optional<double> lookup(llvm::StringRef device,
                               llvm::StringRef signature, unsigned mbs,
                               unsigned tp, Phase phase) const;
  /// Measured optimizer step per parameter on \p device, if any.
  std::optional<double> optimizerPerParameter(llvm::StringRef device) const;
  void setOptimizerPerParameter(llvm::StringRef device, double seconds);
  size_t size() const { return entries.size(); }
  void write(llvm::raw_ostream &os) const;
  /// The union of \p dbs: each measured value is the mean over the
  /// databases that measured it (runs of one program at once, or of
  /// several micro-batch sizes, which share no entry).
  static ProfileDB mean(llvm::ArrayRef<ProfileDB> dbs);

private:
  /// The database in the parsed JSON \p root of \p fileName.
  static llvm::Expected<ProfileDB> fromJSON(const llvm::json::Value &root,
                                            llvm::StringRef fileName);
  struct Stored {
    std::string device, signature;
    unsigned mbs, tp;
    Entry e;
  };
  static std::string key(llvm::StringRef device, llvm::StringRef signature,
                         unsigned mbs, unsigned tp);
  llvm::StringMap<Stored> entries;
  std::map<std::string, double> optimizer;
};

} // namespace distopt::cost

#endif // DISTOPT_LIB_COST_PROFILEDB_H
