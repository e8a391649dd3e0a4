//===- ToolFlags.h - The command-line spellings of the pipelines -*- C++ -*-===//
//
// Part of DistOpt. dist-opt and dist-compile share these flags. The import
// flags fill ONNXImportOptions; the planning flags (--dist-cluster,
// --dist-plan, --dist-search, ...) are spellings of the planning passes and
// of dist-plan-pipeline (--dist-simulate is the dist-simulate pass itself,
// and the report, trace and timeline flags are its options); --dist-loss is the spelling of
// dist-autodiff's default-loss option.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_TOOLS_INIT_TOOLFLAGS_H
#define DIST_TOOLS_INIT_TOOLFLAGS_H

#include "dist/ImportONNX.h"
#include "dist/Pipelines.h"
#include "passes/PlanOptionTable.h"

#include "mlir/Pass/PassManager.h"
#include "llvm/Support/CommandLine.h"

#include <string>

namespace distopt {

/// --input-shape, --input-dim, --input-value, --default-batch,
/// --dist-weights.
struct ImportFlags {
  llvm::cl::OptionCategory category{"ONNX import options"};
  llvm::cl::list<std::string> inputShapes{
      "input-shape",
      llvm::cl::desc("Pin the shape of a graph input: NAME:D0xD1x... "
                     "(repeatable)"),
      llvm::cl::value_desc("NAME:2x1024"), llvm::cl::cat(category)};
  llvm::cl::list<std::string> inputDims{
      "input-dim",
      llvm::cl::desc("Pin a named symbolic dimension (ONNX dim_param) in "
                     "every graph input that uses it: NAME=N, or a comma "
                     "list NAME=N,NAME=N (repeatable)"),
      llvm::cl::value_desc("sequence=128"), llvm::cl::cat(category)};
  llvm::cl::list<std::string> inputValues{
      "input-value",
      llvm::cl::desc("Fix a scalar graph input to a value, so that what "
                     "depends on it folds (an If on it keeps one branch): "
                     "NAME:VALUE (repeatable)"),
      llvm::cl::value_desc("NAME:16000"), llvm::cl::cat(category)};
  llvm::cl::opt<std::string> weights{
      "dist-weights",
      llvm::cl::desc("What to do with weight data: 'reference' (default: "
                     "refer to it by file and offset, checking it exists) or "
                     "'ignore' (shapes and types only, nothing read)"),
      llvm::cl::init("reference"), llvm::cl::cat(category)};
  llvm::cl::opt<int64_t> defaultBatch{
      "default-batch",
      llvm::cl::desc("Size given to a dynamic leading (batch) dimension "
                     "that --input-shape and --input-dim do not pin"),
      llvm::cl::init(1), llvm::cl::cat(category)};

  /// The importer options; false with \p error set on a malformed value.
  bool get(ONNXImportOptions &options, std::string &error) const;
};

/// The planning flags: dist-plan-pipeline's options under their flag names
/// (passes/PlanOptionTable.h), and two of the tools' own.
struct PlanFlags {
  template <typename T> using Flag = llvm::cl::opt<T>;

  llvm::cl::OptionCategory category{"Planning options"};
  llvm::cl::opt<bool> listClusters{
      "list-clusters", llvm::cl::desc("List the built-in cluster presets"),
      llvm::cl::cat(category)};
  llvm::cl::opt<bool> printCluster{
      "print-cluster",
      llvm::cl::desc("Print --dist-cluster as YAML (a preset's figures, to "
                     "edit) and exit"),
      llvm::cl::cat(category)};
  llvm::cl::opt<bool> stageRegions{
      "dist-stage-regions",
      llvm::cl::desc("Also write the chosen plan's pipeline stages as "
                     "dist.stage regions (dist-outline-stages)"),
      llvm::cl::cat(category)};
  /// --dist-cluster, --dist-plan, --dist-search, --dist-batch, ...
  PlanOptionSet<Flag> options;

  /// Whether a plan is preceded by dist-check-compilable's warning (dist-opt;
  /// dist-compile, which builds the programs, reports the error itself).
  bool checkCompilable = true;
  /// Constraints every search starts from, before --dist-search's own
  /// (which override them key by key): dist-compile limits the search to
  /// the plans its programs run.
  std::string baseConstraints;

  PlanFlags();
  /// The flags' values (the pipeline-only options at their defaults).
  PlanOptions values() const;
  /// True when --dist-search is given (with or without constraints).
  bool searching() const;
  /// True when any planning flag is given.
  bool any() const;
  /// Adds the passes the flags spell to \p pm; they run before the passes
  /// named on the command line. \p simulatorNamed says whether those
  /// include dist-simulate (--dist-simulate): the report, trace and timeline
  /// flags are then its options (configure). False with \p error set when
  /// the flags contradict each other or a value is malformed.
  bool addPasses(mlir::OpPassManager &pm, bool simulatorNamed,
                 std::string &error) const;
  /// Gives every dist-simulate pass of \p pm the report, trace and timeline
  /// flags.
  bool configure(mlir::OpPassManager &pm, std::string &error) const;
};

/// --dist-loss.
struct TrainFlags {
  llvm::cl::OptionCategory category{"Training options"};
  llvm::cl::opt<std::string> loss{
      "dist-loss",
      llvm::cl::desc("Loss that dist-autodiff adds to a forward-only model "
                     "when its loss= option is empty: "
                     "softmax-cross-entropy:LABEL_INPUT or mse:TARGET_INPUT "
                     "(dist-autodiff's default-loss)"),
      llvm::cl::value_desc("kind:input"), llvm::cl::cat(category)};

  /// Gives every dist-autodiff pass of \p pm the default loss; false with
  /// \p error set when one rejects it.
  bool apply(mlir::OpPassManager &pm, std::string &error) const;
};

/// The passes of \p pm (top level) whose flag is \p argument.
llvm::SmallVector<mlir::Pass *> passesNamed(mlir::OpPassManager &pm,
                                            llvm::StringRef argument);

/// Parses \p text as \p pass's options; false with \p error set to the
/// parser's message when the pass rejects them.
bool initializePassOptions(mlir::Pass &pass, llvm::StringRef text,
                           std::string &error);

} // namespace distopt

#endif // DIST_TOOLS_INIT_TOOLFLAGS_H
