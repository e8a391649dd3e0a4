//===- ONNXImporter.cpp - The ONNX importer driver --------------*- C++ -*-===//
//
// Part of DistOpt. importONNXFile/importONNXBuffer: scan the file (mmap, no
// weight copies), check the model, pin input shapes, alternate ONNX shape
// inference and shape-subgraph folding to a fixed point, translate nodes by
// family, fuse exporter patterns, and report what went opaque.
//
//===----------------------------------------------------------------------===//
#include "dist/ImportONNX.h"

#include "Fusion.h"
#include "ModelChecks.h"
#include "ModelScanner.h"
#include "SchemaChecks.h"
#include "ShapeInference.h"
#include "SmallTensor.h"
#include "Translator.h"
#include "Weights.h"

#include "dialects/Graph/GraphDialect.h"
#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/GraphShapeUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

using namespace mlir;
using namespace distopt::import;

namespace {
/// Everything one import needs.
struct Import {
  StringRef bytes;
  std::string name;    // for diagnostics
  std::string baseDir; // for external data
  MLIRContext *context;
  distopt::ONNXImportOptions options;
  Location fileLoc;

  /// An error at the file's location (printed as "FILE:0:0: error: ...").
  InFlightDiagnostic error() { return emitError(fileLoc); }
  OwningOpRef<ModuleOp> run();
  LogicalResult translate(onnx::ModelProto &model, int64_t opset,
                          const ScannedModel &scan, ModuleOp module);
};
} // namespace

LogicalResult Import::translate(onnx::ModelProto &model, int64_t opset,
                                const ScannedModel &scan, ModuleOp module) {
  const onnx::GraphProto &graph = model.graph();
  OpBuilder builder(context);
  builder.setInsertionPointToEnd(module.getBody());
  Translator t(builder, name, opset, graph);

  // Function arguments: graph inputs that are not initializers.
  llvm::StringSet<> initNames;
  for (const auto &init : graph.initializer())
    initNames.insert(init.name());
  SmallVector<Type> argTypes;
  SmallVector<std::string> argNames;
  for (const auto &input : graph.input()) {
    if (initNames.contains(input.name()))
      continue;
    RankedTensorType type = t.convertType(input.type());
    int32_t elem = input.type().tensor_type().elem_type();
    if (!type && !t.elementType(elem))
      return error() << "graph input '" << input.name()
                     << "' has ONNX element type " << elem
                     << ", which the importer does not support (numeric "
                        "and bool tensors only)",
             failure();
    if (!type)
      return error() << "graph input '" << input.name()
                     << "' has no static tensor type after pinning; pass "
                        "--input-shape="
                     << input.name() << ":D0xD1x...",
             failure();
    if (!distopt::graph::tensorBytes(type))
      return error() << "graph input '" << input.name() << "' has shape "
                     << distopt::graph::shapeToString(type.getShape())
                     << ", whose size in bytes does not fit in int64; pin a "
                        "smaller one with --input-shape="
                     << input.name() << ":D0xD1x...",
             failure();
    argTypes.push_back(type);
    argNames.push_back(input.name());
  }
  auto func = func::FuncOp::create(builder, fileLoc, options.funcName,
                                   builder.getFunctionType(argTypes, {}));
  Block *body = func.addEntryBlock();
  for (unsigned i = 0; i < argNames.size(); ++i) {
    func.setArgAttr(i, "graph.name", builder.getStringAttr(argNames[i]));
    t.define(argNames[i], body->getArgument(i));
  }
  builder.setInsertionPointToStart(body);

  // ONNX training info names the initializers training updates
  // (update_binding keys); the others stay as they are.
  if (model.training_info_size() > 0) {
    t.trainedByModel.emplace();
    for (const auto &info : model.training_info())
      for (const auto &binding : info.update_binding())
        t.trainedByModel->insert(binding.key());
    t.untieIdentityWeights = false;
    emitRemark(fileLoc) << "the model's training_info updates "
                        << t.trainedByModel->size()
                        << " initializer(s); training leaves the others "
                           "frozen";
  }
  WeightSource source{bytes, llvm::sys::path::filename(name).str(), baseDir,
                      &scan, options.weights};
  if (failed(defineInitializers(t, graph, source, fileLoc)))
    return failure();

  t.modelFile = source.modelFile;
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto &node = graph.node(i);
    t.nodeData.reset();
    if (options.weights == distopt::WeightPolicy::Reference)
      if (auto it = scan.nodePayloads.find(i); it != scan.nodePayloads.end())
        t.nodeData = it->second;
    if (failed(translateNode(t, node)))
      return failure();
  }

  SmallVector<Value> results;
  SmallVector<Type> resultTypes;
  for (const auto &output : graph.output()) {
    Value v = t.lookup(output.name());
    if (!v)
      return error() << "graph output '" << output.name()
                     << "' is not computed by any node",
             failure();
    results.push_back(v);
    resultTypes.push_back(v.getType());
  }
  builder.setInsertionPointToEnd(body);
  func::ReturnOp::create(builder, fileLoc, results);
  func.setFunctionType(builder.getFunctionType(argTypes, resultTypes));
  for (int i = 0; i < graph.output_size(); ++i)
    func.setResultAttr(i, "graph.name",
                       builder.getStringAttr(graph.output(i).name()));

  if (failed(verify(module)))
    return failure();
  if (failed(fuseExporterPatterns(func)))
    return error() << "pattern fusion did not converge", failure();

  if (!t.opaqueCounts.empty()) {
    auto diag = emitRemark(fileLoc) << "op types kept as graph.opaque: ";
    bool first = true;
    for (auto &[op, count] : t.opaqueCounts) {
      diag << (first ? "" : ", ") << op << " x" << count;
      first = false;
    }
  }
  return verify(module);
}

OwningOpRef<ModuleOp> Import::run() {
  context->loadDialect<distopt::graph::GraphDialect, func::FuncDialect>();
  llvm::Expected<ScannedModel> scan = scanModel(bytes, /*stripThreshold=*/1);
  if (!scan) {
    error() << "not a parsable ONNX model (" << llvm::toString(scan.takeError())
            << "); check that the file is a complete ONNX ModelProto "
               "(re-export or re-download it)";
    return nullptr;
  }
  onnx::ModelProto model;
  if (!model.ParseFromString(scan->stripped)) {
    error() << "not a parsable ONNX model (protobuf parse failed); check that "
               "the file is a complete ONNX ModelProto (re-export or "
               "re-download it)";
    return nullptr;
  }
  if (!model.has_graph() || model.ir_version() <= 0) {
    error() << "not an ONNX model (no ir_version or graph); check that the "
               "file is an ONNX ModelProto";
    return nullptr;
  }
  llvm::Expected<int64_t> opset = checkOpsets(model);
  if (!opset) {
    error() << llvm::toString(opset.takeError());
    return nullptr;
  }
  onnx::GraphProto &graph = *model.mutable_graph();
  for (const auto &prop : model.metadata_props())
    if (prop.key() == "distopt.graph_only" && prop.value() == "true" &&
        options.weights != distopt::WeightPolicy::Ignore) {
      emitRemark(fileLoc) << "graph-only model (distopt.graph_only = true); "
                             "weights are imported without data";
      options.weights = distopt::WeightPolicy::Ignore;
    }
  if (llvm::Error e = checkDefinitions(graph)) {
    error() << llvm::toString(std::move(e));
    return nullptr;
  }
  if (llvm::Error e = checkNodeSchemas(model)) {
    error() << llvm::toString(std::move(e));
    return nullptr;
  }
  std::vector<std::string> remarks;
  if (llvm::Error e = pinInputShapes(graph, options, remarks)) {
    error() << llvm::toString(std::move(e));
    return nullptr;
  }
  for (const std::string &r : remarks)
    emitRemark(fileLoc) << r;
  if (llvm::Error e = bindInputValues(graph, options)) {
    error() << llvm::toString(std::move(e));
    return nullptr;
  }

  WeightSource source{bytes, "", baseDir, &*scan, options.weights};
  restoreSmallPayloads(graph, source);
  if (llvm::Error e = checkInlinePayloads(graph)) {
    error() << llvm::toString(std::move(e));
    return nullptr;
  }
  // Inference makes Shape outputs static; folding turns them into
  // constants; the next inference then sees static reshape targets.
  for (int round = 0; round < 16; ++round) {
    if (llvm::Error e = inferShapes(model)) {
      error() << llvm::toString(std::move(e));
      return nullptr;
    }
    if (foldConstants(graph, *opset) == 0)
      break;
  }
  if (llvm::Error e = checkNodeTypes(model, collectValueTypes(graph))) {
    error() << llvm::toString(std::move(e));
    return nullptr;
  }

  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  if (failed(translate(model, *opset, *scan, *module)))
    return nullptr;
  return module;
}

OwningOpRef<ModuleOp>
distopt::importONNXBuffer(StringRef bytes, StringRef bufferName,
                          StringRef baseDir, MLIRContext *context,
                          const ONNXImportOptions &options) {
  Import import{bytes,         bufferName.str(),
                baseDir.str(), context,
                options,       FileLineColLoc::get(context, bufferName, 0, 0)};
  return import.run();
}

OwningOpRef<ModuleOp>
distopt::importONNXFile(StringRef path, MLIRContext *context,
                        const ONNXImportOptions &options) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer) {
    emitError(FileLineColLoc::get(context, path, 0, 0))
        << "cannot open '" << path << "': " << buffer.getError().message();
    return nullptr;
  }
  StringRef dir = llvm::sys::path::parent_path(path);
  return importONNXBuffer((*buffer)->getBuffer(), path,
                          dir.empty() ? StringRef(".") : dir, context, options);
}
