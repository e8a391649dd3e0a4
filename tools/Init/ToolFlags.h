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

#include "mlir/Pass/PassManager.h"
#include "llvm/Support/CommandLine.h"

#include <string>

namespace distopt {

/// --input-shape, --input-value, --default-batch, --dist-weights.
struct ImportFlags {
  llvm::cl::OptionCategory category{"ONNX import options"};
  llvm::cl::list<std::string> inputShapes{
      "input-shape",
      llvm::cl::desc("Pin the shape of a graph input: NAME:D0xD1x... "
                     "(repeatable)"),
      llvm::cl::value_desc("NAME:2x1024"), llvm::cl::cat(category)};
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
                     "that --input-shape does not pin"),
      llvm::cl::init(1), llvm::cl::cat(category)};

  /// The importer options; false with \p error set on a malformed value.
  bool get(ONNXImportOptions &options, std::string &error) const;
};

/// The planning flags.
struct PlanFlags {
  llvm::cl::OptionCategory category{"Planning options"};
  llvm::cl::opt<bool> listClusters{
      "list-clusters", llvm::cl::desc("List the built-in cluster presets"),
      llvm::cl::cat(category)};
  llvm::cl::opt<std::string> cluster{
      "dist-cluster",
      llvm::cl::desc("The machines: PRESET[:NODES] (see --list-clusters) or "
                     "a cluster YAML file (dist-attach-cluster)"),
      llvm::cl::value_desc("dgx-a100-80gb:4"), llvm::cl::cat(category)};
  llvm::cl::opt<std::string> profile{
      "dist-profile",
      llvm::cl::desc("Profile database (JSON) of measured op times"),
      llvm::cl::cat(category)};
  llvm::cl::opt<std::string> plan{
      "dist-plan",
      llvm::cl::desc("A hand-written plan: dp=..,tp=..,pp=..,mbs=..,schedule="
                     "gpipe|1f1b|interleaved|zb-h1|pipedream|2bw,chunks=..,"
                     "recompute=none|selective|full,zero=0..3[,stages=A/B/..]"
                     "[,replicas=R0/R1/..][,uneven=1] (dist-set-plan)"),
      llvm::cl::cat(category)};
  llvm::cl::opt<unsigned> batch{
      "dist-batch", llvm::cl::desc("Global batch in samples per iteration"),
      llvm::cl::init(0), llvm::cl::cat(category)};
  llvm::cl::opt<std::string> report{
      "dist-report", llvm::cl::desc("Write the plan and its estimate as JSON"),
      llvm::cl::value_desc("report.json"), llvm::cl::cat(category)};
  llvm::cl::opt<std::string> trace{
      "dist-trace",
      llvm::cl::desc("Write a Chrome/Perfetto trace of the schedule"),
      llvm::cl::value_desc("trace.json"), llvm::cl::cat(category)};
  llvm::cl::opt<std::string> timeline{
      "dist-timeline", llvm::cl::desc("Draw the schedule as an SVG timeline"),
      llvm::cl::value_desc("timeline.svg"), llvm::cl::cat(category)};
  llvm::cl::opt<std::string> dtype{
      "dist-dtype",
      llvm::cl::desc("Compute element type the plan assumes (default bf16: "
                     "mixed precision; fp8: fp8 matmuls, bf16 elsewhere)"),
      llvm::cl::init("bf16"), llvm::cl::cat(category)};
  llvm::cl::opt<bool> fusedAttention{
      "dist-fused-attention",
      llvm::cl::desc("Cost each attention softmax(Q K^T) V of the model as "
                     "one fused kernel (FlashAttention, cuDNN): no s^2 "
                     "score tensors"),
      llvm::cl::cat(category)};
  llvm::cl::opt<bool> printModel{
      "dist-print-model",
      llvm::cl::desc("Print the layers, parameters and FLOPs the planner "
                     "sees (dist-annotate-layers)"),
      llvm::cl::cat(category)};
  llvm::cl::opt<std::string> search{
      "dist-search", llvm::cl::ValueOptional,
      llvm::cl::desc("Search the best plan; optional constraints such as "
                     "\"tp<=8,pp>=2,mbs=1|2,schedule=1f1b|interleaved,"
                     "recompute=any,zero<=1\" (dist-search)"),
      llvm::cl::value_desc("constraints"), llvm::cl::cat(category)};
  llvm::cl::opt<std::string> mode{
      "dist-mode",
      llvm::cl::desc("What the plan is for: train (default) or infer "
                     "(forward only)"),
      llvm::cl::init("train"), llvm::cl::cat(category)};
  llvm::cl::opt<std::string> objective{
      "dist-objective",
      llvm::cl::desc("Inference goal: throughput (a stream of batches, "
                     "default) or latency (one global batch)"),
      llvm::cl::init("throughput"), llvm::cl::cat(category)};
  llvm::cl::opt<std::string> memoryLimit{
      "dist-memory-limit",
      llvm::cl::desc("Per-device memory limit for the search, e.g. 80GB or "
                     "40GiB (default: each device's memory)"),
      llvm::cl::cat(category)};
  llvm::cl::opt<bool> allowAsync{
      "dist-allow-async",
      llvm::cl::desc("Let the search choose PipeDream / PipeDream-2BW "
                     "(asynchronous weight updates)"),
      llvm::cl::cat(category)};
  llvm::cl::opt<bool> explain{
      "dist-explain",
      llvm::cl::desc("Print compute, communication, bubble and memory of the "
                     "best plans and why the winner wins"),
      llvm::cl::cat(category)};
  llvm::cl::opt<unsigned> alternatives{
      "dist-alternatives", llvm::cl::desc("Runner-up plans to report "
                                          "(default 3)"),
      llvm::cl::init(3), llvm::cl::cat(category)};
  llvm::cl::opt<unsigned> devices{
      "dist-devices",
      llvm::cl::desc("Let the search use only the cluster's first N devices "
                     "(the others stay idle and are reported)"),
      llvm::cl::init(0), llvm::cl::cat(category)};
  llvm::cl::opt<std::string> progress{
      "dist-progress",
      llvm::cl::desc("Search progress on stderr: auto (on a terminal, or "
                     "after 1 s), always, never"),
      llvm::cl::init("auto"), llvm::cl::cat(category)};
  llvm::cl::opt<bool> stageRegions{
      "dist-stage-regions",
      llvm::cl::desc("Also write the chosen plan's pipeline stages as "
                     "dist.stage regions (dist-outline-stages)"),
      llvm::cl::cat(category)};

  /// Whether a plan is preceded by dist-check-compilable's warning (dist-opt;
  /// dist-compile, which builds the programs, reports the error itself).
  bool checkCompilable = true;

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

} // namespace distopt

#endif // DIST_TOOLS_INIT_TOOLFLAGS_H
