//===- PlanOptionTable.h - dist-plan-pipeline's options, once ---*- C++ -*-===//
//
// Part of DistOpt. dist-plan-pipeline's options have three spellings: the
// fields of PlanOptions (the C++ API), the pipeline's textual options
// (--pass-pipeline='builtin.module(dist-plan-pipeline{plan=... batch=64})')
// and the tools' flags (--dist-plan=..., --dist-batch=64). One table names
// each option in every spelling; both kinds of command-line option are made
// from it, take their defaults from PlanOptions' initializers, and copy
// into PlanOptions through it.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_PASSES_PLANOPTIONTABLE_H
#define DIST_PASSES_PLANOPTIONTABLE_H

#include "dist/Pipelines.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace distopt {

/// A field of PlanOptions.
using PlanOptionField =
    std::variant<std::string PlanOptions::*, unsigned PlanOptions::*,
                 bool PlanOptions::*>;

/// One option of dist-plan-pipeline.
struct PlanOptionSpec {
  /// The pipeline's option ("memory-limit").
  llvm::StringLiteral name;
  /// The tools' flag ("dist-memory-limit"); empty where the tools spell the
  /// option otherwise (summary, simulate, stages, check-compilable: the
  /// tools decide those themselves).
  llvm::StringLiteral flag;
  llvm::StringLiteral help;
  PlanOptionField field;
};

/// Every option, in PlanOptions' order.
llvm::ArrayRef<PlanOptionSpec> planOptionSpecs();

/// How messages name an option: as the pipeline's option or as the tools'
/// flag.
enum class PlanOptionSpelling { Pipeline, Flag };

/// "memory-limit" or "--dist-memory-limit".
std::string spellPlanOption(PlanOptionField field, PlanOptionSpelling spelling);

/// Checks the enum-valued options (mode, objective, dtype, progress,
/// stages); false with \p error naming the option as \p spelling does.
bool checkPlanOptions(const PlanOptions &options, PlanOptionSpelling spelling,
                      std::string &error);

/// Reads dist-plan-pipeline's textual options ("plan=dp=2 batch=8") into
/// \p out; false (with the problem on stderr) when they do not parse.
bool parsePlanPipelineOptions(llvm::StringRef text, PlanOptions &out);

/// buildPlanPipeline, with errors naming the options as \p spelling does.
mlir::LogicalResult buildPlanPipeline(mlir::OpPassManager &pm,
                                      const PlanOptions &options,
                                      PlanOptionSpelling spelling,
                                      std::string &error);

/// One command-line option per table row, of the kind Opt<T> (an
/// llvm::cl::opt or a pass option; T is std::string, unsigned or bool).
template <template <typename> class Opt> class PlanOptionSet {
public:
  /// Makes the options: make(spec, defaultValue) returns a
  /// std::unique_ptr<Opt<T>>. With \p flagsOnly, rows without a flag get
  /// none.
  template <typename Make> PlanOptionSet(bool flagsOnly, Make make) {
    PlanOptions defaults;
    for (const PlanOptionSpec &spec : planOptionSpecs()) {
      if (flagsOnly && spec.flag.empty())
        continue;
      std::visit(
          [&](auto member) {
            entries.push_back({&spec, Holder(make(spec, defaults.*member))});
          },
          spec.field);
    }
  }

  /// Copies every option's value into its field of \p out.
  void get(PlanOptions &out) const {
    for (const auto &[spec, holder] : entries)
      std::visit(
          [&](auto member, const auto &option) {
            using Field = std::remove_reference_t<decltype(out.*member)>;
            using Value = std::decay_t<decltype(option->getValue())>;
            if constexpr (std::is_same_v<Field, Value>)
              out.*member = option->getValue();
          },
          spec->field, holder);
  }

  /// The option of \p member (null when the set has none).
  template <typename T> Opt<T> *find(T PlanOptions::*member) const {
    for (const auto &[spec, holder] : entries)
      if (spec->field == PlanOptionField(member))
        return std::get<std::unique_ptr<Opt<T>>>(holder).get();
    return nullptr;
  }

private:
  using Holder =
      std::variant<std::unique_ptr<Opt<std::string>>,
                   std::unique_ptr<Opt<unsigned>>, std::unique_ptr<Opt<bool>>>;
  std::vector<std::pair<const PlanOptionSpec *, Holder>> entries;
};

} // namespace distopt

#endif // DIST_PASSES_PLANOPTIONTABLE_H
