//===- dist-opt.cpp - The DistOpt driver -----------------------*- C++ -*-===//
//
// Part of DistOpt. Works like mlir-opt on `.mlir` input; an ONNX model (known
// by its extension or its bytes) is imported into graph IR first, then the
// requested passes run on it and the result is printed.
//
//===----------------------------------------------------------------------===//
#include "dist/ImportONNX.h"
#include "dist/InitAll.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
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

/// Imports `path` (or, for "-", the bytes read from stdin), runs the
/// configured pipeline and prints the module.
static LogicalResult runOnONNX(StringRef path, const MemoryBuffer *stdinBytes,
                               StringRef outputFilename,
                               const distopt::ONNXImportOptions &options,
                               const MlirOptMainConfig &config,
                               DialectRegistry &registry) {
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagHandler(sourceMgr, &context);

  // External data is resolved relative to the model's folder; for stdin
  // that is the working directory.
  OwningOpRef<ModuleOp> module =
      stdinBytes ? distopt::importONNXBuffer(stdinBytes->getBuffer(),
                                             "<stdin>", ".", &context, options)
                 : distopt::importONNXFile(path, &context, options);
  if (!module)
    return failure();

  PassManager pm(module.get()->getName(), PassManager::Nesting::Implicit);
  pm.enableVerifier(config.shouldVerifyPasses());
  if (failed(applyPassManagerCLOptions(pm)) ||
      failed(config.setupPassPipeline(pm)) || failed(pm.run(*module)))
    return failure();

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
  auto [inputFilename, outputFilename] = registerAndParseCLIOptions(
      argc, argv, "DistOpt: plan and optimize distributed DNN programs\n",
      registry);
  MlirOptMainConfig config = MlirOptMainConfig::createFromCLOptions();

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
    // stdin input is kept in memory.
    if (inputFilename != "-")
      file.reset();
    return asMainReturnCode(runOnONNX(inputFilename, file.get(),
                                      outputFilename, options, config,
                                      registry));
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
