//===- EmitPipeline.cpp - dist.stage regions to one program ---*- C++ -*-===//
//
// Part of DistOpt. Compiles a function whose body is `dist.stage` regions
// (passes/Partition, --dist-stage-regions) into ONE program every rank of
// the job runs (docs/distributed.md, "Pipeline execution"):
//
//  - each stage becomes `static int stageV(P, in, out)`: its block
//    arguments are the pointers `in[j]`, its `dist.yield` operands come back
//    in `out[k]`;
//  - `run` loops over the micro-batches; rank r runs the stages whose mesh
//    holds device r: a function argument is the micro-batch's rows of the
//    input file, a value of another stage is received from the rank that
//    made it (distrt_recv), every result is sent to each other rank whose
//    stage reads it (distrt_send), and the returned values are written into
//    the micro-batch's rows of the outputs on the last stage's rank.
//
// Tags: the value's number among all stage results in stage order (stage
// 0's results first). Receives go in (producer stage, result) order and
// sends in (consumer stage, result) order, which cannot deadlock with
// blocking transfers when each rank runs one stage.
//
// First slice: forward functions, one device per stage, every device in one
// stage, devices 0..N-1; anything else is a compile-time error.
//
//===----------------------------------------------------------------------===//
#include "lib/Codegen/FunctionEmitter.h"

#include "dialects/Dist/DistOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/STLExtras.h"

#include <map>

using namespace mlir;
using namespace distopt::codegen;
namespace dist = distopt::dist;

namespace {

/// Tags distrt_send/recv accept: [0, 32767].
constexpr int64_t kMaxTag = 32767;

/// A descriptor of `ptr` holding a value of type `t` for distrt_send/recv:
/// its runtime dtype, or its bytes as u8 when the ABI has no such dtype
/// (f64, i8, i16...).
std::string transferDesc(llvm::StringRef ptr, RankedTensorType t) {
  std::string rt = FunctionEmitter::rtType(t.getElementType());
  if (rt.empty())
    return "dg::T(" + ptr.str() + ", DISTRT_U8, {" +
           std::to_string(t.getNumElements() *
                          (int64_t)FunctionEmitter::byteSize(
                              t.getElementType())) +
           "})";
  std::string s = "dg::T(" + ptr.str() + ", " + rt + ", {";
  for (int64_t i = 0; i < t.getRank(); ++i)
    s += (i ? ", " : "") + std::to_string(t.getShape()[i]);
  return s + "})";
}

int64_t bytesOf(RankedTensorType t) {
  return t.getNumElements() *
         (int64_t)FunctionEmitter::byteSize(t.getElementType());
}

/// Emits `static int <fnName>(dg::Program &P, void *const *in, void **out)`.
LogicalResult emitStage(dist::StageOp stage, const std::string &fnName,
                        llvm::StringRef prefix,
                        const CodegenOptions &options, std::string &text,
                        std::string &globals) {
  Block &body = stage.getBody().front();
  std::string bodyText;
  llvm::raw_string_ostream bodyOS(bodyText), globalOS(globals);
  FunctionEmitter e(bodyOS, globalOS, options, prefix.str());
  // Weights are loaded once and kept across micro-batches.
  e.training = true;
  computeFusion(body, e.fused);
  e.computeLifetimes(body);
  for (BlockArgument arg : body.getArguments()) {
    auto t = dyn_cast<RankedTensorType>(arg.getType());
    if (!t || !t.hasStaticShape() || FunctionEmitter::cType(arg).empty())
      return stage.emitError()
             << "dist-compile: stage " << stage.getIndex() << " input #"
             << arg.getArgNumber() << " has type " << arg.getType()
             << "; values crossing stage boundaries must be statically "
                "shaped tensors";
    e.bindInput(arg, "in[" + std::to_string(arg.getArgNumber()) + "]");
  }
  unsigned position = 0;
  for (Operation &op : body) {
    if (auto yield = dyn_cast<dist::YieldOp>(&op)) {
      for (auto [k, v] : llvm::enumerate(yield.getValues()))
        bodyOS << "  out[" << k << "] = (void *)" << e.name(v) << ";\n";
      continue;
    }
    if (isCommOp(&op) || isa<dist::StageOp>(&op))
      return op.emitError()
             << "dist-compile: '" << op.getName()
             << "' inside a pipeline stage has no lowering yet; stages run "
                "on one device each (dp = tp = 1)";
    if (failed(emitOp(e, &op)))
      return failure();
    e.releaseAfter(position++);
  }
  text += "static int " + fnName +
          "(dg::Program &P, void *const *in, void **out) {\n  (void)in;\n  "
          "(void)out;\n" +
          bodyText + "  return 0;\n}\n";
  return success();
}

} // namespace

bool distopt::codegen::isPipelined(Operation *func) {
  auto f = dyn_cast<func::FuncOp>(func);
  if (!f || f.getBody().empty())
    return false;
  return llvm::any_of(f.getBody().front(),
                      [](Operation &op) { return isa<dist::StageOp>(&op); });
}

LogicalResult distopt::codegen::emitPipelineModel(const ModelUnit &model,
                                                  Operation *funcOp,
                                                  llvm::StringRef ns,
                                                  const CodegenOptions &options,
                                                  llvm::raw_ostream &out) {
  auto func = cast<func::FuncOp>(funcOp);
  if (func.getBody().getBlocks().size() != 1)
    return func.emitError() << "dist-compile: @" << func.getSymName()
                            << " must have a single block";
  Block &body = func.getBody().front();
  // Forward functions only.
  bool training = func->hasAttr("graph.train");
  for (unsigned k = 0; k < func.getNumResults(); ++k)
    if (func.getResultAttr(k, "graph.update"))
      training = true;
  if (training)
    return func.emitError()
           << "dist-compile: @" << func.getSymName()
           << " is a training step in dist.stage regions; pipeline programs "
              "run forward functions only (no backward or schedule executor "
              "yet). Compile the forward model, or train with --train "
              "--data-parallel";

  // Stages, their devices and the numbering of their results (tags).
  SmallVector<dist::StageOp> stages;
  llvm::DenseMap<Operation *, int64_t> deviceOf, firstTag;
  std::map<int64_t, dist::StageOp> stageOfDevice;
  int64_t tags = 0;
  func::ReturnOp ret;
  for (Operation &op : body) {
    if (auto r = dyn_cast<func::ReturnOp>(&op)) {
      ret = r;
      continue;
    }
    auto stage = dyn_cast<dist::StageOp>(&op);
    if (!stage)
      return op.emitError()
             << "dist-compile: '" << op.getName()
             << "' outside the dist.stage regions of a pipelined function; "
                "every op must be in a stage (run --dist-outline-stages on "
                "the planner's output)";
    ArrayRef<int64_t> devices = stage.getMesh().getDevices();
    if (devices.size() != 1) {
      auto d = stage.emitError()
               << "dist-compile: stage " << stage.getIndex() << " runs on "
               << devices.size() << " devices (mesh shape [";
      llvm::interleaveComma(stage.getMesh().getShape(), d);
      d << "]); pipeline programs need one device per stage (dp = tp = 1). "
           "For data parallelism use dist-compile --train=... "
           "--data-parallel; tensor parallelism has no lowering yet";
      return failure();
    }
    int64_t dev = devices[0];
    auto [it, fresh] = stageOfDevice.try_emplace(dev, stage);
    if (!fresh) {
      stage.emitError() << "dist-compile: device " << dev
                        << " runs stages " << it->second.getIndex() << " and "
                        << stage.getIndex()
                        << " (an interleaved schedule, chunks > 1); pipeline "
                           "programs need one stage per device yet";
      return failure();
    }
    deviceOf[stage] = dev;
    firstTag[stage] = tags;
    tags += stage.getNumResults();
    stages.push_back(stage);
    for (auto [j, v] : llvm::enumerate(stage.getInputs()))
      for (auto [i, w] : llvm::enumerate(stage.getInputs()))
        if (i < j && v == w)
          return stage.emitError()
                 << "dist-compile: stage " << stage.getIndex()
                 << " takes the same value as inputs #" << i << " and #" << j
                 << "; outline the stages again (inputs are unique)";
  }
  int64_t world = (int64_t)stages.size();
  int64_t expect = 0;
  for (auto &[dev, stage] : stageOfDevice)
    if (dev != expect++)
      return stage.emitError()
             << "dist-compile: stage " << stage.getIndex() << " runs on device "
             << dev << ", but a pipeline of " << world
             << " stage(s) runs on ranks 0.." << world - 1
             << " (rank r = device r); plan for a cluster of " << world
             << " device(s)";
  if (tags > kMaxTag + 1)
    return func.emitError() << "dist-compile: " << tags
                            << " values cross stage boundaries; the runtime "
                               "numbers them with tags below 32768";
  if (!ret)
    return func.emitError() << "dist-compile: @" << func.getSymName()
                            << " has no return";

  // Outputs: every returned value comes from a stage on one rank.
  int64_t outputRank = world - 1;
  SmallVector<std::string> outNames, inNames;
  for (auto [k, v] : llvm::enumerate(ret.getOperands())) {
    auto stage = v.getDefiningOp<dist::StageOp>();
    if (!stage)
      return ret.emitError()
             << "dist-compile: result #" << k
             << " is not computed by a dist.stage; outlined functions return "
                "the last stage's results";
    if (k == 0)
      outputRank = deviceOf[stage];
    else if (deviceOf[stage] != outputRank)
      return ret.emitError()
             << "dist-compile: results come from ranks " << outputRank
             << " and " << deviceOf[stage]
             << "; outlined functions return every result from the last "
                "stage";
    auto n = func.getResultAttrOfType<StringAttr>(k, "graph.name");
    if (!n)
      n = func.getResultAttrOfType<StringAttr>(k, "graph.output");
    outNames.push_back(n ? n.str() : "out" + std::to_string(k));
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t || !t.hasStaticShape() || t.getRank() == 0 ||
        FunctionEmitter::dgType(t.getElementType()).empty())
      return ret.emitError()
             << "dist-compile: output '" << outNames.back() << "' has type "
             << v.getType()
             << "; pipeline outputs are statically shaped tensors with a "
                "batch dimension (dim 0) of a .npy element type";
  }
  for (BlockArgument arg : body.getArguments()) {
    auto n =
        func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "graph.name");
    inNames.push_back(n ? n.str() : "arg" + std::to_string(arg.getArgNumber()));
    auto t = dyn_cast<RankedTensorType>(arg.getType());
    if (!t || !t.hasStaticShape() || t.getRank() == 0 ||
        FunctionEmitter::dgType(t.getElementType()).empty())
      return func.emitError()
             << "dist-compile: input '" << inNames.back() << "' has type "
             << arg.getType()
             << "; pipeline inputs are statically shaped tensors with a "
                "batch dimension (dim 0) of a .npy element type (pin shapes "
                "with --input-shape=NAME:D0xD1...)";
  }

  // The stage functions.
  std::string stageText, globals;
  // Named by position (the outline pass numbers stages in order, so this
  // is the stage index; a hand-written module may repeat an index).
  llvm::DenseMap<Operation *, std::string> fnOf;
  for (auto [k, stage] : llvm::enumerate(stages)) {
    fnOf[stage] = "stage" + std::to_string(k);
    std::string prefix = (ns + "s" + std::to_string(k)).str();
    if (failed(emitStage(stage, fnOf[stage], prefix, options, stageText,
                         globals)))
      return failure();
  }

  // The driver.
  std::string run;
  llvm::raw_string_ostream os(run);
  os << "static int run(dg::Program &P) {\n"
     << "  for (int64_t mb = 0; mb < P.microbatches; ++mb) {\n";
  for (dist::StageOp stage : stages) {
    int64_t dev = deviceOf[stage], idx = stage.getIndex();
    std::string what = "dist.stage " + std::to_string(idx);
    unsigned nIn = stage.getNumOperands(), nOut = stage.getNumResults();
    os << "    if (P.rank == " << dev << ") { // stage " << idx << "\n"
       << "      void *in[" << nIn + 1 << "] = {};\n      void *out["
       << nOut + 1 << "] = {};\n";
    // Function arguments: this micro-batch's rows.
    for (auto [j, v] : llvm::enumerate(stage.getInputs()))
      if (auto arg = dyn_cast<BlockArgument>(v))
        os << "      if (!(in[" << j << "] = P.inputSlice("
           << arg.getArgNumber() << ", mb))) return 1;\n";
    // Other stages' values, in (producer stage, result) order.
    SmallVector<std::pair<std::pair<int64_t, int64_t>, unsigned>> recvs;
    for (auto [j, v] : llvm::enumerate(stage.getInputs()))
      if (auto res = dyn_cast<OpResult>(v)) {
        auto from = dyn_cast<dist::StageOp>(res.getOwner());
        if (!from)
          return stage.emitError()
                 << "dist-compile: stage " << idx << " input #" << j
                 << " is not a function argument or a stage result";
        recvs.push_back({{firstTag[from], res.getResultNumber()}, (unsigned)j});
      }
    llvm::sort(recvs);
    for (auto &[key, j] : recvs) {
      auto res = cast<OpResult>(stage.getInputs()[j]);
      auto from = cast<dist::StageOp>(res.getOwner());
      auto t = FunctionEmitter::typeOf(res);
      os << "      if (!(in[" << j << "] = P.alloc(" << bytesOf(t)
         << "))) return 1;\n"
         << "      { distrt_tensor t = "
         << transferDesc("in[" + std::to_string(j) + "]", t)
         << ";\n        if (P.check(distrt_recv(P.comm, &t, "
         << deviceOf[from] << ", " << firstTag[from] + res.getResultNumber()
         << "), \"" << what << ": receiving input #" << j << " from stage "
         << from.getIndex() << " (rank " << deviceOf[from]
         << ")\")) return 1; }\n";
    }
    os << "      if (" << fnOf[stage] << "(P, in, out)) return 1;\n";
    // Sends, in (consumer stage, result) order; outputs on this rank.
    for (dist::StageOp to : stages) {
      if (to == stage)
        continue;
      for (OpResult res : stage->getResults()) {
        if (!llvm::is_contained(to.getInputs(), Value(res)))
          continue;
        auto t = FunctionEmitter::typeOf(res);
        unsigned k = res.getResultNumber();
        os << "      { distrt_tensor t = "
           << transferDesc("out[" + std::to_string(k) + "]", t)
           << ";\n        if (P.check(distrt_send(P.comm, &t, "
           << deviceOf[to] << ", " << firstTag[stage] + k << "), \"" << what
           << ": sending result #" << k << " to stage " << to.getIndex()
           << " (rank " << deviceOf[to] << ")\")) return 1; }\n";
      }
    }
    for (auto [slot, v] : llvm::enumerate(ret.getOperands()))
      if (v.getDefiningOp() == stage.getOperation())
        os << "      if (P.outputSlice(" << slot << ", mb, out["
           << cast<OpResult>(v).getResultNumber() << "])) return 1;\n";
    os << "    }\n";
  }
  os << "    P.releaseAll();\n  }\n  return 0;\n}\n";

  out << "namespace " << ns << " {\n" << globals << stageText;
  out << run;
  ModelTableFields fields;
  fields.collectives = true;
  fields.world = world;
  fields.outputRank = outputRank;
  emitModelTable(out, model, body.getArguments(), inNames, ret.getOperands(),
                 outNames, fields);
  out << "} // namespace " << ns << "\n\n";
  return success();
}
