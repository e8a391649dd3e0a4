//===- dist-opt.cpp - The DistOpt driver -----------------------*- C++ -*-===//
//
// Part of DistOpt. mlir-opt with DistOpt's dialects, passes and pipelines.
// An ONNX model (known by its extension or its bytes) is imported first;
// the planning flags (--dist-cluster, --dist-plan, --dist-search, ...) are
// spellings of the planning passes, which run before the passes named on
// the command line. With planning flags, or a dist-simulate among the
// passes, the summary goes to stdout and the IR only to -o FILE.
//
//===----------------------------------------------------------------------===//
#include "dist/Diagnostics.h"
#include "dist/InitAll.h"
#include "lib/Cluster/Cluster.h"
#include "lib/Support/MLIRInputCheck.h"
#include "lib/Support/OutputFile.h"
#include "tools/Init/ParseGuard.h"
#include "tools/Init/ToolFlags.h"

#include "mlir/Bytecode/BytecodeWriter.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/ToolUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

using namespace mlir;
using namespace llvm;

static int fail(const Twine &message) {
  WithColor::error(errs(), "dist-opt") << message << "\n";
  return 1;
}

/// The ONNX model at \p path (stdin: \p file) imported and written as
/// bytecode, for MlirOptMain to parse; null after reporting an error.
static std::unique_ptr<MemoryBuffer>
importModel(StringRef path, std::unique_ptr<MemoryBuffer> file,
            const distopt::ONNXImportOptions &options,
            DialectRegistry &registry) {
  MLIRContext context(registry);
  // The importer's errors and remarks print as mlir-opt prints diagnostics.
  SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  // ONNX ops: "FILE: node 'NAME': error: ..." instead of "FILE:0:0".
  distopt::NodeDiagnosticHandler nodeHandler(&context, errs());
  OwningOpRef<ModuleOp> module =
      path == "-" ? distopt::importONNXBuffer(file->getBuffer(), "<stdin>", ".",
                                              &context, options)
                  : distopt::importONNXFile(path, &context, options);
  if (!module)
    return nullptr;
  std::string bytes;
  raw_string_ostream os(bytes);
  if (failed(writeBytecodeToFile(*module, os)))
    return nullptr;
  return MemoryBuffer::getMemBufferCopy(bytes, path);
}

int main(int argc, char **argv) {
  InitLLVM y(argc, argv);
  distopt::registerAllPasses();
  DialectRegistry registry;
  distopt::registerAllDialects(registry);

  distopt::ImportFlags importFlags;
  distopt::PlanFlags planFlags;
  distopt::TrainFlags trainFlags;
  auto [inputFilename, outputFilename] = registerAndParseCLIOptions(
      argc, argv, "DistOpt: plan and optimize distributed DNN programs\n",
      registry);
  if (planFlags.listClusters) {
    distopt::cluster::listClusters(outs());
    return 0;
  }
  if (planFlags.printCluster) {
    std::string spec = planFlags.values().cluster;
    if (spec.empty()) {
      errs()
          << "dist-opt: --print-cluster prints --dist-cluster=PRESET[:NODES] "
             "or FILE.yaml; add it\n";
      return 1;
    }
    llvm::Expected<distopt::cluster::Cluster> c =
        distopt::cluster::resolveCluster(spec);
    if (!c) {
      errs() << "dist-opt: " << llvm::toString(c.takeError()) << "\n";
      return 1;
    }
    distopt::cluster::writeClusterYAML(*c, outs());
    return 0;
  }
  MlirOptMainConfig cli = MlirOptMainConfig::createFromCLOptions();

  // Which passes the command line names decides where the planning flags'
  // outputs go; look before building the real pipeline.
  MLIRContext probeContext(registry);
  PassManager probe(&probeContext);
  if (failed(cli.setupPassPipeline(probe)))
    return 1;
  bool simulatorNamed = !distopt::passesNamed(probe, "dist-simulate").empty();
  bool summaries = planFlags.any() || simulatorNamed;

  std::string error;
  MlirOptMainConfig config = cli;
  config.setPassPipelineSetupFn([&](PassManager &pm) -> LogicalResult {
    // The passes' diagnostics at ONNX node locations name the node too (not
    // under -verify-diagnostics, which must see every diagnostic).
    if (!cli.shouldVerifyDiagnostics())
      distopt::registerNodeDiagnostics(pm.getContext(), errs());
    if (!planFlags.addPasses(pm, simulatorNamed, error) ||
        failed(cli.setupPassPipeline(pm)) || !planFlags.configure(pm, error) ||
        !trainFlags.apply(pm, error)) {
      if (!error.empty())
        fail(error);
      return failure();
    }
    return success();
  });

  std::string message;
  std::unique_ptr<MemoryBuffer> file = openInputFile(inputFilename, &message);
  if (!file)
    return fail(message);
  if (distopt::looksLikeONNX(inputFilename, file->getBuffer())) {
    distopt::ONNXImportOptions options;
    if (!importFlags.get(options, error))
      return fail(error);
    file = importModel(inputFilename, std::move(file), options, registry);
    if (!file)
      return 1;
  } else {
    std::string bad =
        distopt::checkMLIRResultNumbers(file->getBuffer(), inputFilename);
    if (!bad.empty())
      return fail(bad);
    // MLIR's parser and forward uses of block arguments (ParseGuard.h);
    // -verify-diagnostics must see the parser's errors itself.
    // Chunks as MlirOptMain splits them (--split-input-file).
    auto probe = [&](std::unique_ptr<MemoryBuffer> chunk, raw_ostream &) {
      return distopt::checkParseInChild(
          chunk->getBuffer(), chunk->getBufferIdentifier(), registry,
          cli.shouldAllowUnregisteredDialects(), /*quiet=*/false);
    };
    if (!cli.shouldVerifyDiagnostics() &&
        failed(splitAndProcessBuffer(
            MemoryBuffer::getMemBuffer(file->getMemBufferRef(),
                                       /*RequiresNullTerminator=*/false),
            probe, nulls(), cli.inputSplitMarker())))
      return 1;
  }

  // Planning prints its summary on stdout; the IR then goes to -o only.
  bool discard = summaries && outputFilename == "-";
  std::unique_ptr<ToolOutputFile> output =
      discard ? nullptr : openOutputFile(outputFilename, &message);
  if (!discard && !output)
    return fail(message);
  if (failed(MlirOptMain(discard ? nulls() : output->os(), std::move(file),
                         registry, config)))
    return 1;
  if (output) {
    std::string problem = distopt::closeOutput(output->os(), outputFilename);
    if (!problem.empty())
      return fail(problem);
    output->keep();
  }
  return 0;
}
