//===- dist-opt.cpp - The DistOpt driver -----------------------*- C++ -*-===//
//
// Part of DistOpt. Works like mlir-opt on `.mlir` input; an ONNX model (known
// by its extension or its bytes) is imported into graph IR first, then the
// requested passes run on it and the result is printed.
//
//===----------------------------------------------------------------------===//
#include "dist/Diagnostics.h"
#include "dist/ImportONNX.h"
#include "dist/InitAll.h"
#include "lib/Cluster/Cluster.h"
#include "lib/Driver/PlanDriver.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

using namespace mlir;
using namespace llvm;

namespace {
/// Options that only apply to ONNX input.
struct ImportCLOptions {
  cl::OptionCategory category{"ONNX import options"};
  cl::list<std::string> inputShapes{
      "input-shape",
      cl::desc("Pin the shape of a graph input: NAME:D0xD1x... (repeatable)"),
      cl::value_desc("NAME:2x1024"), cl::cat(category)};
  cl::list<std::string> inputValues{
      "input-value",
      cl::desc("Fix a scalar graph input to a value, so that what depends on "
               "it folds (an If on it keeps one branch): NAME:VALUE "
               "(repeatable)"),
      cl::value_desc("NAME:16000"), cl::cat(category)};
  cl::opt<std::string> weights{
      "dist-weights",
      cl::desc("What to do with weight data: 'reference' (default: refer to "
               "it by file and offset, checking it exists) or 'ignore' "
               "(shapes and types only, nothing read)"),
      cl::init("reference"), cl::cat(category)};
  cl::opt<int64_t> defaultBatch{
      "default-batch",
      cl::desc("Size given to a dynamic leading (batch) dimension that "
               "--input-shape does not pin"),
      cl::init(1), cl::cat(category)};
};

/// Options of the planner, cost model and simulator.
struct PlanCLOptions {
  cl::OptionCategory category{"Planning options"};
  cl::opt<bool> listClusters{"list-clusters",
                             cl::desc("List the built-in cluster presets"),
                             cl::cat(category)};
  cl::opt<std::string> cluster{
      "dist-cluster",
      cl::desc("The machines: PRESET[:NODES] (see --list-clusters) or a "
               "cluster YAML file"),
      cl::value_desc("dgx-a100-80gb:4"), cl::cat(category)};
  cl::opt<std::string> plan{
      "dist-plan",
      cl::desc("A hand-written plan: dp=..,tp=..,pp=..,mbs=..,schedule="
               "gpipe|1f1b|interleaved|zb-h1|pipedream|2bw,chunks=..,"
               "recompute=none|selective|full,zero=0..3[,stages=A/B/..][,uneven=1]"),
      cl::cat(category)};
  cl::opt<unsigned> batch{"dist-batch",
                          cl::desc("Global batch in samples per iteration"),
                          cl::init(0), cl::cat(category)};
  cl::opt<bool> simulate{
      "dist-simulate",
      cl::desc("Simulate the plan and print its predicted cost"),
      cl::cat(category)};
  cl::opt<std::string> report{
      "dist-report", cl::desc("Write the plan and its estimate as JSON"),
      cl::value_desc("report.json"), cl::cat(category)};
  cl::opt<std::string> trace{
      "dist-trace", cl::desc("Write a Chrome/Perfetto trace of the schedule"),
      cl::value_desc("trace.json"), cl::cat(category)};
  cl::opt<std::string> timeline{
      "dist-timeline", cl::desc("Draw the schedule as an SVG timeline"),
      cl::value_desc("timeline.svg"), cl::cat(category)};
  cl::opt<std::string> dtype{
      "dist-dtype",
      cl::desc("Compute element type the plan assumes (default bf16: mixed "
               "precision)"),
      cl::init("bf16"), cl::cat(category)};
  cl::opt<std::string> profile{
      "dist-profile",
      cl::desc("Profile database (JSON) of measured op times"),
      cl::cat(category)};
  cl::opt<bool> printModel{
      "dist-print-model",
      cl::desc("Print the layers, parameters and FLOPs the planner sees"),
      cl::cat(category)};
  cl::opt<std::string> search{
      "dist-search", cl::ValueOptional,
      cl::desc("Search the best plan; optional constraints such as "
               "\"tp<=8,pp>=2,mbs=1|2,schedule=1f1b|interleaved,"
               "recompute=any,zero<=1\""),
      cl::value_desc("constraints"), cl::cat(category)};
  cl::opt<std::string> mode{
      "dist-mode",
      cl::desc("What the plan is for: train (default) or infer (forward "
               "only)"),
      cl::init("train"), cl::cat(category)};
  cl::opt<std::string> objective{
      "dist-objective",
      cl::desc("Inference goal: throughput (a stream of batches, default) "
               "or latency (one global batch)"),
      cl::init("throughput"), cl::cat(category)};
  cl::opt<std::string> memoryLimit{
      "dist-memory-limit",
      cl::desc("Per-device memory limit for the search, e.g. 80GB or 40GiB "
               "(default: each device's memory)"),
      cl::cat(category)};
  cl::opt<bool> allowAsync{
      "dist-allow-async",
      cl::desc("Let the search choose PipeDream / PipeDream-2BW "
               "(asynchronous weight updates)"),
      cl::cat(category)};
  cl::opt<bool> explain{
      "dist-explain",
      cl::desc("Print compute, communication, bubble and memory of the best "
               "plans and why the winner wins"),
      cl::cat(category)};
  cl::opt<unsigned> alternatives{
      "dist-alternatives",
      cl::desc("Runner-up plans to report (default 3)"), cl::init(3),
      cl::cat(category)};
  cl::opt<unsigned> devices{
      "dist-devices",
      cl::desc("Let the search use only the cluster's first N devices (the "
               "others stay idle and are reported)"),
      cl::init(0), cl::cat(category)};
  cl::opt<std::string> progress{
      "dist-progress",
      cl::desc("Search progress on stderr: auto (on a terminal, or after "
               "1 s), always, never"),
      cl::init("auto"), cl::cat(category)};
  cl::opt<bool> stageRegions{
      "dist-stage-regions",
      cl::desc("Write the chosen plan's pipeline stages as dist.stage regions "
               "on their devices (as --dist-outline-stages does), not only as "
               "per-op dist.stage annotations"),
      cl::cat(category)};

  distopt::PlanDriverOptions get() const {
    distopt::PlanDriverOptions o;
    o.cluster = cluster;
    o.plan = plan;
    o.batch = batch;
    o.simulate = simulate;
    o.report = report;
    o.trace = trace;
    o.timeline = timeline;
    o.dtype = dtype;
    o.profile = profile;
    o.printModel = printModel;
    o.search = search.getNumOccurrences() > 0;
    o.searchConstraints = search;
    o.mode = mode;
    o.objective = objective;
    o.memoryLimit = memoryLimit;
    o.allowAsync = allowAsync;
    o.explain = explain;
    o.alternatives = alternatives;
    o.devices = devices;
    o.progress = progress;
    o.stageRegions = stageRegions;
    return o;
  }
};
} // namespace

/// Turns the command line into importer options; reports malformed values.
static bool buildImportOptions(const ImportCLOptions &cl,
                               distopt::ONNXImportOptions &options) {
  for (const std::string &spec : cl.inputShapes) {
    std::string error;
    if (!distopt::parseInputShapeSpec(spec, options, error)) {
      WithColor::error(errs(), "dist-opt")
          << "malformed --input-shape='" << spec << "': " << error << "\n";
      return false;
    }
  }
  for (const std::string &spec : cl.inputValues) {
    std::string error;
    if (!distopt::parseInputValueSpec(spec, options, error)) {
      WithColor::error(errs(), "dist-opt")
          << "malformed --input-value='" << spec << "': " << error << "\n";
      return false;
    }
  }
  if (cl.weights == "reference") {
    options.weights = distopt::WeightPolicy::Reference;
  } else if (cl.weights == "ignore") {
    options.weights = distopt::WeightPolicy::Ignore;
  } else {
    WithColor::error(errs(), "dist-opt")
        << "unknown --dist-weights='" << cl.weights
        << "': expected 'reference' or 'ignore'\n";
    return false;
  }
  if (cl.defaultBatch < 1) {
    WithColor::error(errs(), "dist-opt")
        << "--default-batch must be at least 1, got " << cl.defaultBatch
        << "\n";
    return false;
  }
  options.defaultBatch = cl.defaultBatch;
  return true;
}

/// Loads the module (ONNX import or MLIR parse), runs the configured
/// pipeline, then the planning steps, and prints the module. With planning
/// options the summary goes to stdout and the IR only to `-o FILE`.
static LogicalResult
runPipeline(llvm::function_ref<OwningOpRef<ModuleOp>(MLIRContext &)> load,
            StringRef outputFilename, const distopt::PlanDriverOptions &plan,
            const MlirOptMainConfig &config, DialectRegistry &registry) {
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagHandler(sourceMgr, &context);
  // ONNX ops: "FILE: node 'NAME': error: ..." instead of "FILE:0:0".
  distopt::NodeDiagnosticHandler nodeHandler(&context, errs());

  OwningOpRef<ModuleOp> module = load(context);
  if (!module)
    return failure();

  PassManager pm(module.get()->getName(), PassManager::Nesting::Implicit);
  pm.enableVerifier(config.shouldVerifyPasses());
  if (failed(applyPassManagerCLOptions(pm)) ||
      failed(config.setupPassPipeline(pm)) || failed(pm.run(*module)))
    return failure();
  if (plan.any()) {
    // Planning errors are reported on the module; printing the whole module
    // under each of them would bury the message.
    context.printOpOnDiagnostic(false);
    if (failed(distopt::runPlanDriver(*module, plan, outs())))
      return failure();
  }
  if (plan.any() && outputFilename == "-")
    return success();

  std::string errorMessage;
  std::unique_ptr<ToolOutputFile> output =
      openOutputFile(outputFilename, &errorMessage);
  if (!output) {
    WithColor::error(errs(), "dist-opt") << errorMessage << "\n";
    return failure();
  }
  OpPrintingFlags flags;
  module->print(output->os(), flags);
  output->os() << "\n";
  output->keep();
  return success();
}

int main(int argc, char **argv) {
  InitLLVM y(argc, argv);
  distopt::registerAllPasses();
  DialectRegistry registry;
  distopt::registerAllDialects(registry);

  ImportCLOptions importOptions;
  PlanCLOptions planOptions;
  auto [inputFilename, outputFilename] = registerAndParseCLIOptions(
      argc, argv, "DistOpt: plan and optimize distributed DNN programs\n",
      registry);
  MlirOptMainConfig config = MlirOptMainConfig::createFromCLOptions();
  if (planOptions.listClusters) {
    distopt::cluster::listClusters(outs());
    return 0;
  }
  distopt::PlanDriverOptions plan = planOptions.get();

  std::string errorMessage;
  std::unique_ptr<MemoryBuffer> file =
      openInputFile(inputFilename, &errorMessage);
  if (!file) {
    WithColor::error(errs(), "dist-opt") << errorMessage << "\n";
    return 1;
  }

  if (distopt::looksLikeONNX(inputFilename, file->getBuffer())) {
    distopt::ONNXImportOptions options;
    if (!buildImportOptions(importOptions, options))
      return 1;
    // A file is imported from its path (the importer maps it itself); only
    // stdin input is kept in memory. External data of stdin input is looked
    // up in the working directory.
    if (inputFilename != "-")
      file.reset();
    auto import = [&](MLIRContext &context) {
      return file ? distopt::importONNXBuffer(file->getBuffer(), "<stdin>",
                                              ".", &context, options)
                  : distopt::importONNXFile(inputFilename, &context, options);
    };
    return asMainReturnCode(
        runPipeline(import, outputFilename, plan, config, registry));
  }

  if (plan.any()) {
    auto parse = [&](MLIRContext &context) {
      auto sourceMgr = std::make_shared<SourceMgr>();
      sourceMgr->AddNewSourceBuffer(std::move(file), SMLoc());
      return parseSourceFile<ModuleOp>(*sourceMgr, &context);
    };
    return asMainReturnCode(
        runPipeline(parse, outputFilename, plan, config, registry));
  }

  std::unique_ptr<ToolOutputFile> output =
      openOutputFile(outputFilename, &errorMessage);
  if (!output) {
    WithColor::error(errs(), "dist-opt") << errorMessage << "\n";
    return 1;
  }
  if (failed(MlirOptMain(output->os(), std::move(file), registry, config)))
    return 1;
  output->keep();
  return 0;
}
