//===- EmitTrain.cpp - Training-step ops ------------------------*- C++ -*-===//
//
// Part of DistOpt. Lowers the ops dist-autodiff adds (GraphTrainOps.td):
// persistent optimizer state, optimizer updates as generated loops (new
// parameter and moments computed in double from the old ones, the step
// counter read from its scalar buffer), and gradients through the runtime's
// backward kernels (softmax, cross-entropy, layer/RMS norm, embedding).
// graph.unary_grad is elementwise and fuses with its neighbours
// (EmitElementwise.cpp).
//
//===----------------------------------------------------------------------===//
#include "lib/Codegen/FunctionEmitter.h"

#include "dialects/Emit/MemoryPlan.h"
#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/GraphShapeUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace distopt::codegen;
using namespace distopt::graph;

bool distopt::codegen::isTrainOp(Operation *op) {
  return isa<StateOp, DropoutMaskOp, SgdUpdateOp, AdamUpdateOp, UnscaleOp,
             LossScaleUpdateOp, SoftmaxGradOp, SoftmaxCrossEntropyGradOp,
             NormGradOp, NormGradParamsOp, ScatterAddOp, ConvGradInputOp,
             ConvGradWeightOp, PoolGradOp>(op);
}

/// `v` as a 4-D descriptor (a 1-D op's tensors gain a unit height).
static std::string as4D(FunctionEmitter &e, Value v) {
  auto s = FunctionEmitter::typeOf(v).getShape();
  if (s.size() == 4)
    return e.desc(v);
  return e.desc(v, {s[0], s[1], 1, s[2]});
}

/// distrt_conv2d_attr initializer for a conv gradient op.
template <typename ConvGrad>
static FailureOr<std::string> convAttr(ConvGrad op, unsigned rank) {
  if (rank != 3 && rank != 4)
    return op.emitError()
           << op->getName() << ": " << rank - 2
           << "-D convolution has no lowering (1-D and 2-D only)";
  int64_t st[2] = {1, 1}, pb[2] = {0, 0}, pe[2] = {0, 0}, dl[2] = {1, 1};
  unsigned n = rank - 2, off = 2 - n;
  for (unsigned k = 0; k < n; ++k) {
    st[off + k] = op.getStrides().empty() ? 1 : op.getStrides()[k];
    dl[off + k] = op.getDilations().empty() ? 1 : op.getDilations()[k];
    pb[off + k] = op.getPads().empty() ? 0 : op.getPads()[k];
    pe[off + k] = op.getPads().empty() ? 0 : op.getPads()[n + k];
  }
  return "{{" + std::to_string(st[0]) + ", " + std::to_string(st[1]) + "}, {" +
         std::to_string(pb[0]) + ", " + std::to_string(pb[1]) + "}, {" +
         std::to_string(pe[0]) + ", " + std::to_string(pe[1]) + "}, {" +
         std::to_string(dl[0]) + ", " + std::to_string(dl[1]) + "}, " +
         std::to_string(op.getGroup()) + "}";
}

static LogicalResult emitConvGradInput(FunctionEmitter &e, ConvGradInputOp op) {
  auto at = convAttr(op, FunctionEmitter::typeOf(op.getResult()).getRank());
  if (failed(at))
    return failure();
  e.allocate(op.getResult());
  e.os << "  { distrt_tensor dy = " << as4D(e, op.getGrad())
       << ", w = " << as4D(e, op.getWeight())
       << ", dx = " << as4D(e, op.getResult())
       << ";\n    distrt_conv2d_attr at = " << *at << ";\n  ";
  e.call("distrt_conv2d_bwd_data(P.ctx, &dy, &w, &dx, &at)", op);
  e.os << "  }\n";
  return success();
}

static LogicalResult emitConvGradWeight(FunctionEmitter &e,
                                        ConvGradWeightOp op) {
  auto at = convAttr(op, FunctionEmitter::typeOf(op.getInput()).getRank());
  if (failed(at))
    return failure();
  e.allocate(op.getResult());
  e.os << "  { distrt_tensor x = " << as4D(e, op.getInput())
       << ", dy = " << as4D(e, op.getGrad())
       << ", dw = " << as4D(e, op.getResult())
       << ";\n    distrt_conv2d_attr at = " << *at << ";\n  ";
  e.call("distrt_conv2d_bwd_weight(P.ctx, &x, &dy, &dw, nullptr, &at, 0)", op);
  e.os << "  }\n";
  return success();
}

static LogicalResult emitPoolGrad(FunctionEmitter &e, PoolGradOp op) {
  auto in = FunctionEmitter::typeOf(op.getInput()).getShape();
  auto out = FunctionEmitter::typeOf(op.getGrad()).getShape();
  unsigned rank = in.size();
  if ((rank != 3 && rank != 4) || op.getKind() == PoolKind::L2)
    return op.emitError() << "graph.pool_grad has a lowering only for 1-D/2-D "
                             "max and avg pooling";
  for (int64_t d : op.getDilations())
    if (d != 1)
      return op.emitError() << "graph.pool_grad: dilation " << d
                            << " has no lowering (dilation 1 only)";
  int64_t kr[2] = {1, 1}, st[2] = {1, 1}, pb[2] = {0, 0}, pe[2] = {0, 0};
  unsigned n = rank - 2, off = 2 - n;
  for (unsigned k = 0; k < n; ++k) {
    int64_t D = in[2 + k];
    if (op.getGlobal()) {
      kr[off + k] = D;
      continue;
    }
    kr[off + k] = op.getKernel()[k];
    st[off + k] = op.getStrides().empty() ? 1 : op.getStrides()[k];
    pb[off + k] = op.getPads().empty() ? 0 : op.getPads()[k];
    int64_t p = op.getPads().empty() ? 0 : op.getPads()[n + k];
    int64_t need =
        (out[2 + k] - 1) * st[off + k] + kr[off + k] - D - pb[off + k];
    pe[off + k] = std::max(p, need);
  }
  const char *kind = op.getKind() == PoolKind::Max ? "DISTRT_POOL_MAX"
                     : op.getCountIncludePad() ? "DISTRT_POOL_AVG_INCLUDE_PAD"
                                               : "DISTRT_POOL_AVG_EXCLUDE_PAD";
  e.allocate(op.getResult());
  e.os << "  { distrt_tensor x = " << as4D(e, op.getInput())
       << ", dy = " << as4D(e, op.getGrad())
       << ", dx = " << as4D(e, op.getResult())
       << ";\n    distrt_pool2d_attr at = {" << kind << ", {" << kr[0] << ", "
       << kr[1] << "}, {" << st[0] << ", " << st[1] << "}, {" << pb[0] << ", "
       << pb[1] << "}, {" << pe[0] << ", " << pe[1] << "}};\n  ";
  e.call("distrt_pool2d_bwd(P.ctx, &x, &dy, &dx, &at)", op);
  e.os << "  }\n";
  return success();
}

static std::string lit(double v, Operation *op) {
  return FunctionEmitter::literal(v, Float64Type::get(op->getContext()));
}

static LogicalResult emitState(FunctionEmitter &e, StateOp op) {
  if (!e.training)
    return op.emitError() << "graph.state '" << op.getSymName()
                          << "' outside a training step (no graph.update "
                             "result) has no lowering";
  bool fresh;
  Value r = op.getResult();
  e.bindPersistent(r, op.getSymName(), fresh);
  std::string ct = FunctionEmitter::cType(r);
  e.os << "  if (fresh_" << e.name(r) << " && P.fillValue<" << ct << ">("
       << e.name(r) << ", " << FunctionEmitter::numel(r) << ", (" << ct << ")"
       << lit(op.getInit().convertToDouble(), op) << ")) return 1;\n";
  return success();
}

/// An f32 literal: the optimizer updates compute in float, as PyTorch's
/// float32 SGD and Adam do (double arithmetic in the item loops cost 4-5x on
/// a baseline x86-64 target, where doubles vectorize two at a time).
static std::string flit(double v, Operation *op) {
  return FunctionEmitter::literal(v, Float32Type::get(op->getContext()));
}

static LogicalResult emitSgd(FunctionEmitter &e, SgdUpdateOp op) {
  Value p = op.getParam();
  int64_t n = FunctionEmitter::numel(p);
  for (Value r : op.getResults())
    e.allocate(r);
  std::string np = e.name(op.getResults()[0]);
  Value buf = op.getMomentumBuf();
  std::string nb = buf ? e.name(op.getResults()[1]) : "";
  std::string P = e.name(p), G = e.name(op.getGrad()), S = e.name(op.getStep());
  std::string B = buf ? e.name(buf) : "",
              K = op.getSkip() ? e.name(op.getSkip()) : "";
  // The step counter and the skip flag are read once a chunk, so the
  // items' loop vectorizes.
  e.openChunkLoop(n);
  if (buf)
    e.os << "    const bool first = " << S << "[0] == 1;\n";
  if (!K.empty())
    e.os << "    const bool skip = " << K << "[0];\n";
  e.openChunkItems();
  // A skipped step keeps the old values; it tests first, as the result may
  // be written over its operand (inPlaceUpdates).
  if (!K.empty()) {
    e.os << "    if (skip) { " << np << "[i] = " << P << "[i];";
    if (buf)
      e.os << " " << nb << "[i] = " << B << "[i];";
    e.os << " continue; }\n";
  }
  double wd = op.getWeightDecay().convertToDouble();
  e.os << "    float g = (float)" << G << "[i]";
  if (wd != 0)
    e.os << " + " << flit(wd, op) << " * (float)" << P << "[i]";
  e.os << ";\n";
  if (buf) {
    double mom = op.getMomentum().convertToDouble();
    e.os << "    const float b = first ? g : " << flit(mom, op) << " * (float)"
         << B << "[i] + " << flit(1.0 - op.getDampening().convertToDouble(), op)
         << " * g;\n";
    e.os << "    g = "
         << (op.getNesterov() ? "g + " + flit(mom, op) + " * b" : "b")
         << ";\n    " << nb << "[i] = b;\n";
  }
  e.os << "    " << np << "[i] = (float)" << P << "[i] - "
       << flit(op.getLr().convertToDouble(), op) << " * g;\n";
  e.closeChunkLoop();
  return success();
}

static LogicalResult emitAdam(FunctionEmitter &e, AdamUpdateOp op) {
  int64_t n = FunctionEmitter::numel(op.getParam());
  e.allocate(op.getNewParam());
  e.allocate(op.getNewExpAvg());
  e.allocate(op.getNewExpAvgSq());
  std::string P = e.name(op.getParam()), G = e.name(op.getGrad()),
              M = e.name(op.getExpAvg()), V = e.name(op.getExpAvgSq()),
              S = e.name(op.getStep()), NP = e.name(op.getNewParam()),
              NM = e.name(op.getNewExpAvg()), NV = e.name(op.getNewExpAvgSq());
  double lr = op.getLr().convertToDouble(),
         wd = op.getWeightDecay().convertToDouble();
  double b1 = op.getBeta1().convertToDouble(),
         b2 = op.getBeta2().convertToDouble();
  // The bias corrections depend on the step alone: computed once a chunk
  // (in double, then rounded), the items' loop vectorizes.
  e.openChunkLoop(n);
  e.os << "    const double t = " << S
       << "[0];\n    const float bc1 = (float)(1.0 - pow(" << lit(b1, op)
       << ", t)), bc2 = (float)(1.0 - pow(" << lit(b2, op) << ", t));\n";
  if (op.getSkip())
    e.os << "    const bool skip = " << e.name(op.getSkip()) << "[0];\n";
  e.openChunkItems();
  if (op.getSkip())
    e.os << "    if (skip) { " << NP << "[i] = " << P << "[i]; " << NM
         << "[i] = " << M << "[i]; " << NV << "[i] = " << V
         << "[i]; continue; }\n";
  e.os << "    float p = " << P << "[i], g = " << G << "[i];\n";
  if (wd != 0) {
    if (op.getDecoupled())
      e.os << "    p *= " << flit(1.0 - lr * wd, op) << ";\n";
    else
      e.os << "    g += " << flit(wd, op) << " * p;\n";
  }
  e.os << "    const float m = " << flit(b1, op) << " * (float)" << M
       << "[i] + " << flit(1 - b1, op)
       << " * g;\n    const float v = " << flit(b2, op) << " * (float)" << V
       << "[i] + " << flit(1 - b2, op) << " * g * g;\n"
       << "    const float mh = m / bc1, vh = v / bc2;\n"
       << "    " << NP << "[i] = p - " << flit(lr, op)
       << " * mh / (sqrtf(vh) + " << flit(op.getEpsilon().convertToDouble(), op)
       << ");\n    " << NM << "[i] = m;\n    " << NV << "[i] = v;\n";
  e.closeChunkLoop();
  return success();
}

/// graph.unscale: `r = (float)g * (1 / scale)` per gradient; the flag is
/// cleared by a one-element loop, then set by any loop that meets a
/// non-finite result (every writer stores the same `true`; the test is
/// false for inf and NaN alike, on the host and under nvcc).
static LogicalResult emitUnscale(FunctionEmitter &e, UnscaleOp op) {
  for (Value r : op.getResults())
    e.allocate(r);
  std::string S = e.name(op.getScale());
  std::string F = e.name(op.getResults().back());
  e.openLoop(1);
  e.os << "    " << F << "[0] = false;\n";
  e.closeLoop();
  for (auto [g, r] : llvm::zip(op.getGrads(), op.getResults())) {
    e.openLoop(FunctionEmitter::numel(g));
    e.os << "    const float r = (float)" << e.name(g)
         << "[i] * (1.0f / (float)" << S << "[0]);\n    " << e.name(r)
         << "[i] = r;\n    if (!(fabsf(r) <= 3.40282347e+38f)) " << F
         << "[0] = true;\n";
    e.closeLoop();
  }
  return success();
}

/// graph.loss_scale_update: the GradScaler rule on one element.
static LogicalResult emitLossScaleUpdate(FunctionEmitter &e,
                                         LossScaleUpdateOp op) {
  e.allocate(op.getNewScale());
  e.allocate(op.getNewGoodSteps());
  std::string S = e.name(op.getScale()), G = e.name(op.getGoodSteps()),
              F = e.name(op.getFoundInf()), NS = e.name(op.getNewScale()),
              NG = e.name(op.getNewGoodSteps());
  Type f32 = Float32Type::get(op.getContext());
  e.openLoop(1);
  e.os << "    const float s = (float)" << S << "[0], g = (float)" << G
       << "[0] + 1.0f;\n    if (" << F << "[0]) { " << NS << "[0] = s * "
       << FunctionEmitter::literal(op.getBackoffFactor().convertToDouble(), f32)
       << "; " << NG << "[0] = 0.0f; }\n    else if (g >= "
       << FunctionEmitter::literal((double)op.getGrowthInterval(), f32)
       << ") { " << NS << "[0] = s * "
       << FunctionEmitter::literal(op.getGrowthFactor().convertToDouble(), f32)
       << "; " << NG << "[0] = 0.0f; }\n    else { " << NS << "[0] = s; " << NG
       << "[0] = g; }\n";
  e.closeLoop();
  return success();
}

/// graph.dropout_mask: element i keeps (value 1/(1-ratio), else 0) when
/// dg::dropoutUniform(stream, i) >= ratio (i: the element's index in the
/// whole mask, for a tensor-parallel part or a data-parallel replica's
/// block). With a `step` operand the stream
/// is dg::dropoutStream(seed, step, microbatch), read from the training
/// state, so masks follow the optimizer step (a resumed run draws the same
/// ones); without it, the stream index is c * n + i for call c of a
/// persistent i64 counter of this op, advanced after each call.
static LogicalResult emitDropoutMask(FunctionEmitter &e, DropoutMaskOp op) {
  Value r = op.getResult();
  int64_t n = FunctionEmitter::numel(r);
  double ratio = op.getRatio().convertToDouble();
  // A tensor-parallel rank's part of the mask (`dist.tp_shard` [dim,
  // blocks, parts]): each element is drawn by its index in the whole mask,
  // so the ranks' parts put together are the mask one process draws.
  // The rank's place is read into locals before the loop, which captures
  // them (not the program state) by value, on the host and on a GPU.
  std::string at = "(uint64_t)i", id = std::to_string(e.positionOf(op));
  int64_t whole = n;
  if (auto shard = op->getAttrOfType<DenseI64ArrayAttr>("dist.tp_shard")) {
    // dist-tensor-parallel's one axis by the tensor rank is the only part
    // a mask is drawn in.
    if (shard.size() != 3)
      return op.emitError("a dropout mask's 'dist.tp_shard' is one axis "
                          "[dim, blocks, parts] by the tensor rank (as "
                          "dist-tensor-parallel writes it), got ")
             << shard;
    ArrayRef<int64_t> shape = FunctionEmitter::typeOf(r).getShape();
    int64_t inner = 1;
    for (int64_t d : shape.drop_front(shard[0] + 1))
      inner *= d;
    e.os << "  const uint64_t tpIndex" << id << " = (uint64_t)(P.rank % "
         << shard[2] << ");\n";
    at = "dg::shardElement((uint64_t)i, " + std::to_string(shape[shard[0]]) +
         "ull, " + std::to_string(inner) + "ull, " + std::to_string(shard[1]) +
         "ull, " + std::to_string(shard[2]) + "ull, tpIndex" + id + ")";
    whole = n * shard[2];
  }
  // The running call's block of the whole batch's mask
  // (`dist.batch_block`): a data-parallel rank's rows, or a replica's
  // micro-batch in a pipeline (P.batchBlock of P.batchBlocks equal,
  // contiguous blocks of every batch-major tensor).
  std::string wholeCount = std::to_string(whole) + "ull";
  if (op->hasAttr("dist.batch_block")) {
    e.os << "  const uint64_t dpBlock" << id
         << " = P.batchBlock, dpBlocks" << id << " = P.batchBlocks;\n";
    at = "dpBlock" + id + " * " + wholeCount + " + " + at;
    wholeCount = "(" + wholeCount + " * dpBlocks" + id + ")";
  }
  Type f32 = Float32Type::get(op.getContext());
  std::string keep = "u >= " + FunctionEmitter::literal(ratio, f32) + " ? " +
                     FunctionEmitter::literal(1.0 / (1.0 - ratio), f32) +
                     " : 0.0f";
  if (Value step = op.getStep()) {
    std::string mb = op.getMicrobatch()
                         ? "(uint64_t)" + e.name(op.getMicrobatch()) + "[0]"
                         : std::string("0ull");
    e.allocate(r);
    e.openLoop(n);
    e.os << "    const float u = dg::dropoutUniform(dg::dropoutStream("
         << op.getSeed() << "ull, (uint64_t)" << e.name(step) << "[0], " << mb
         << "), " << at << ");\n    " << e.name(r) << "[i] = " << keep
         << ";\n";
    e.closeLoop();
    return success();
  }
  std::string c = "dmc" + std::to_string(e.positionOf(op));
  e.os << "  int64_t *" << c << ";\n  { static const int64_t dims[] = {0}; "
       << "bool fresh = false;\n    " << c
       << " = (int64_t *)P.persistentBuffer(\"dropout_mask." << e.positionOf(op)
       << ".calls\", dg::I64, 0, dims, fresh);\n    if (!" << c
       << " || (fresh && P.fillValue<int64_t>(" << c
       << ", 1, (int64_t)0))) return 1; }\n";
  e.allocate(r);
  e.openLoop(n);
  e.os << "    const float u = dg::dropoutUniform(" << op.getSeed() << "ull, "
       << "(uint64_t)" << c << "[0] * " << wholeCount << " + " << at
       << ");\n    "
       << e.name(r) << "[i] = " << keep << ";\n";
  e.closeLoop();
  e.openLoop(1);
  e.os << "    " << c << "[0] += 1;\n";
  e.closeLoop();
  return success();
}

static int64_t product(ArrayRef<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

/// Batch norm gradients (training form: statistics of the batch, recomputed
/// by a forward pass into temporaries).
static LogicalResult emitBatchNormGrad(FunctionEmitter &e, Operation *op,
                                       Value x, Value scale, Value dy,
                                       double eps, ValueRange results,
                                       bool params) {
  auto shape = FunctionEmitter::typeOf(x).getShape();
  if (shape.size() < 2 || shape.size() > 5)
    return op->emitError() << op->getName()
                           << " kind 'batch' needs an input of rank 2 to 5";
  int64_t C = shape[1], n = FunctionEmitter::numel(x);
  for (Value r : results)
    e.allocate(r);
  std::string epsS =
      FunctionEmitter::literal(eps, Float32Type::get(op->getContext()));
  std::string w = FunctionEmitter::where(op);
  e.os << "  { float *sm = (float *)P.alloc(" << C * 4
       << "), *sv = (float *)P.alloc(" << C * 4 << "), *one = (float *)P.alloc("
       << C * 4 << "), *zero = (float *)P.alloc(" << C * 4
       << "), *yt = (float *)P.alloc(" << n * 4
       << ");\n    if (!sm || !sv || !one || !zero || !yt) return 1;\n"
       << "    if (P.fillValue<float>(one, " << C
       << ", 1.0f) || P.fillValue<float>(zero, " << C << ", 0.0f)) return 1;\n"
       << "    distrt_tensor x = " << e.desc(x) << ", dy = " << e.desc(dy)
       << ", m = dg::T(sm, DISTRT_F32, {" << C
       << "}), v = dg::T(sv, DISTRT_F32, {" << C
       << "}), o = dg::T(one, DISTRT_F32, {" << C
       << "}), z = dg::T(zero, DISTRT_F32, {" << C
       << "}), y = dg::T(yt, DISTRT_F32, "
       << "{";
  for (size_t k = 0; k < shape.size(); ++k)
    e.os << (k ? ", " : "") << shape[k];
  e.os << "});\n    if (P.check(distrt_batchnorm_fwd_training(P.ctx, &x, &o, "
          "&z, &y, "
          "&m, &v, nullptr, nullptr, "
       << epsS << ", 0.0f), \"" << w << "\")) return 1;\n";
  if (params) {
    e.os << "    distrt_tensor ds = " << e.desc(results[0], {C});
    if (results.size() > 1)
      e.os << ", db = " << e.desc(results[1], {C});
    e.os << ";\n    if (P.check(distrt_batchnorm_bwd_weight(P.ctx, &x, &dy, "
            "&m, &v, "
            "&ds, "
         << (results.size() > 1 ? "&db" : "nullptr") << ", " << epsS
         << ", 0), \"" << w << "\")) return 1;\n";
  } else {
    e.os << "    distrt_tensor s = " << e.desc(scale, {C})
         << ", dx = " << e.desc(results[0])
         << ";\n    if (P.check(distrt_batchnorm_bwd_data(P.ctx, "
         << "&x, &dy, &s, &m, &v, &dx, " << epsS << "), \"" << w
         << "\")) return 1;\n";
  }
  e.os << "    P.release(sm); P.release(sv); P.release(one); P.release(zero); "
          "P.release(yt);\n  }\n";
  return success();
}

/// Layer/RMS norm gradients through the runtime over [rows, D].
static LogicalResult emitNormGrad(FunctionEmitter &e, Operation *op, Value x,
                                  Value scale, Value dy, StringRef kind,
                                  int64_t axis, double eps, ValueRange results,
                                  bool params) {
  if (kind == "batch")
    return emitBatchNormGrad(e, op, x, scale, dy, eps, results, params);
  if (kind != "layer" && kind != "rms")
    return op->emitError() << op->getName() << " kind '" << kind
                           << "' has no lowering (layer, rms and batch only)";
  auto shape = FunctionEmitter::typeOf(x).getShape();
  if (axis < 0)
    axis += shape.size();
  int64_t rows = product(shape.take_front(axis)),
          D = product(shape.drop_front(axis));
  for (Value r : results)
    e.allocate(r);
  // A scale that broadcasts to the normalized dimensions (the importer's
  // InstanceNormalization: one element) is expanded to their D first.
  std::string scaleTemp;
  if (scale && FunctionEmitter::numel(scale) != D)
    scaleTemp = e.broadcastTemp(scale, shape.drop_front(axis));
  std::string epsS =
      FunctionEmitter::literal(eps, Float32Type::get(op->getContext()));
  std::string w = FunctionEmitter::where(op);
  e.os << "  { distrt_tensor x = " << e.desc(x, {rows, D})
       << ", dy = " << e.desc(dy, {rows, D}) << ";\n";
  if (scale)
    e.os << "    distrt_tensor s = "
         << (scaleTemp.empty() ? e.desc(scale, {D})
                               : "dg::T(" + scaleTemp + ", DISTRT_F32, {" +
                                     std::to_string(D) + "})")
         << ";\n";
  if (kind == "rms") {
    if (params)
      e.os << "    distrt_tensor ds = " << e.desc(results[0], {D})
           << ";\n    if (P.check(distrt_rmsnorm_bwd_weight(P.ctx, &x, &dy, "
              "&ds, "
           << epsS << ", 0), \"" << w << "\")) return 1;\n  }\n";
    else
      e.os << "    distrt_tensor dx = " << e.desc(results[0], {rows, D})
           << ";\n    if (P.check(distrt_rmsnorm_bwd_data(P.ctx, &x, &dy, &s, "
              "&dx, "
           << epsS << "), \"" << w << "\")) return 1;\n  }\n";
    if (!scaleTemp.empty())
      e.os << "  P.release(" << scaleTemp << ");\n";
    return success();
  }
  // Layer norm: recompute the statistics with a forward pass.
  e.os << "    float *mean = (float *)P.alloc(" << rows * 4
       << "), *var = (float *)P.alloc(" << rows * 4
       << "), *ytmp = (float *)P.alloc(" << rows * D * 4
       << ");\n    if (!mean || !var || !ytmp) return 1;\n"
       << "    distrt_tensor m = dg::T(mean, DISTRT_F32, {" << rows
       << "}), v = dg::T(var, DISTRT_F32, {" << rows
       << "}), yt = dg::T(ytmp, DISTRT_F32, {" << rows << ", " << D << "});\n"
       << "    if (P.check(distrt_layernorm_fwd(P.ctx, &x, nullptr, nullptr, "
          "&yt, "
          "&m, &v, "
       << epsS << "), \"" << w << "\")) return 1;\n";
  if (params) {
    e.os << "    distrt_tensor ds = " << e.desc(results[0], {D});
    if (results.size() > 1)
      e.os << ", db = " << e.desc(results[1], {D});
    e.os << ";\n    if (P.check(distrt_layernorm_bwd_weight(P.ctx, &x, &dy, "
            "&m, &v, "
            "&ds, "
         << (results.size() > 1 ? "&db" : "nullptr") << ", " << epsS
         << ", 0), \"" << w << "\")) return 1;\n";
  } else {
    e.os << "    distrt_tensor dx = " << e.desc(results[0], {rows, D})
         << ";\n    if (P.check(distrt_layernorm_bwd_data(P.ctx, &x, &dy, "
         << (scale ? "&s" : "nullptr") << ", &m, &v, &dx, " << epsS << "), \""
         << w << "\")) return 1;\n";
  }
  e.os << "    P.release(mean); P.release(var); P.release(ytmp);\n  }\n";
  if (!scaleTemp.empty())
    e.os << "  P.release(" << scaleTemp << ");\n";
  return success();
}

/// graph.scatter_add on any axis and float type (the gradient of a gather
/// such as `x[:, 0]`, BERT/ViT's CLS pooling): one generated loop over the
/// result, each element summing (in double) the gradient entries whose
/// index selects it. Race-free, so the same body is the CUDA kernel; the
/// cost is |result| x |indices|, small for the pooling gathers it serves.
static LogicalResult emitScatterAddLoop(FunctionEmitter &e, ScatterAddOp op) {
  auto table = FunctionEmitter::typeOf(op.getResult());
  auto shape = table.getShape();
  // getAxis() is the I64Attr's bits as uint64_t: a negative axis counts
  // from the end (the verifier accepts it).
  int64_t axis = *normalizeAxis(static_cast<int64_t>(op.getAxis()),
                                table.getRank());
  int64_t inner = 1, rows = shape[axis];
  for (int64_t d = axis + 1; d < table.getRank(); ++d)
    inner *= shape[d];
  int64_t n = FunctionEmitter::numel(op.getIndices());
  std::string ct = FunctionEmitter::cType(op.getResult());
  std::string it = FunctionEmitter::cType(op.getIndices());
  e.allocate(op.getResult());
  std::string out = e.name(op.getResult()), ix = e.name(op.getIndices()),
              dy = e.name(op.getGrad());
  e.openLoop(FunctionEmitter::numel(op.getResult()), "i");
  e.os << "    const " << it << " *ix = " << ix << ";\n    const " << ct
       << " *dy = " << dy << ";\n    int64_t o = i / " << rows * inner
       << ", j = i / " << inner << " % " << rows << ", q = i % " << inner
       << ";\n    double a = 0;\n    for (int64_t p = 0; p < " << n
       << "; ++p) {\n      int64_t k = (int64_t)ix[p];\n      if (k < 0) k += "
       << rows << ";\n      if (k == j) a += (double)dy[(o * " << n
       << " + p) * " << inner << " + q];\n    }\n    " << out << "[i] = ("
       << ct << ")a;\n";
  e.closeLoop();
  return success();
}

/// graph.scatter_add with `elements` (the gradient of gather_elements): a
/// loop over the result, each element summing (in double) the gradient
/// entries along the axis whose index selects it (|result| x the indices'
/// axis length; race-free, so the same body is the CUDA kernel).
static LogicalResult emitScatterAddElements(FunctionEmitter &e,
                                            ScatterAddOp op) {
  auto shape = FunctionEmitter::typeOf(op.getResult()).getShape();
  auto iShape = FunctionEmitter::typeOf(op.getIndices()).getShape();
  int64_t rank = shape.size();
  int64_t axis = *normalizeAxis(static_cast<int64_t>(op.getAxis()), rank);
  auto iStrides = e.layoutOf(op.getIndices());
  auto gStrides = e.layoutOf(op.getGrad());
  std::string ct = FunctionEmitter::cType(op.getResult());
  e.allocate(op.getResult());
  e.openLoop(FunctionEmitter::numel(op.getResult()), "i");
  // Result coordinates outside the indices' extent get no gradient.
  std::string inside = "true", iOff = "0", gOff = "0";
  for (int64_t d = 0; d < rank; ++d) {
    if (d == axis)
      continue;
    std::string c = FunctionEmitter::coord(shape, d, "i");
    if (iShape[d] < shape[d])
      inside += " && " + c + " < " + std::to_string(iShape[d]);
    iOff += " + " + c + " * " + std::to_string(iStrides[d]);
    gOff += " + " + c + " * " + std::to_string(gStrides[d]);
  }
  e.os << "    const int64_t j = " << FunctionEmitter::coord(shape, axis, "i")
       << ";\n    double a = 0;\n    if (" << inside
       << ")\n      for (int64_t p = 0; p < " << iShape[axis]
       << "; ++p) {\n        int64_t k = (int64_t)" << e.name(op.getIndices())
       << "[" << iOff << " + p * " << iStrides[axis]
       << "];\n        if (k < 0) k += " << shape[axis]
       << ";\n        if (k == j) a += (double)" << e.name(op.getGrad()) << "["
       << gOff << " + p * " << gStrides[axis] << "];\n      }\n    "
       << e.name(op.getResult()) << "[i] = (" << ct << ")a;\n";
  e.closeLoop();
  return success();
}

static LogicalResult emitScatterAdd(FunctionEmitter &e, ScatterAddOp op) {
  auto table = FunctionEmitter::typeOf(op.getResult());
  Type it = FunctionEmitter::typeOf(op.getIndices()).getElementType();
  if (!isa<FloatType>(table.getElementType()) ||
      !(it.isInteger(32) || it.isInteger(64)))
    return op.emitError() << "graph.scatter_add needs a float result and "
                             "i32/i64 indices, got "
                          << table << " and " << it;
  if (op.getElements())
    return emitScatterAddElements(e, op);
  // An embedding table's gradient (axis 0 of an f32 [V, D] table): the
  // runtime kernel, linear in the indices.
  if (op.getAxisAttr().getInt() != 0 || table.getRank() != 2 ||
      !e.isF32Like(table.getElementType()))
    return emitScatterAddLoop(e, op);
  int64_t n = FunctionEmitter::numel(op.getIndices()), D = table.getShape()[1];
  e.allocate(op.getResult());
  e.os << "  { distrt_tensor t = " << e.desc(op.getResult())
       << ", ix = " << e.desc(op.getIndices(), {n})
       << ", dy = " << e.desc(op.getGrad(), {n, D}) << ";\n  ";
  e.call("distrt_fill(P.ctx, &t, 0.0f)", op);
  e.os << "  ";
  e.call("distrt_embedding_bwd(P.ctx, &ix, &dy, &t, 1)", op);
  e.os << "  }\n";
  return success();
}

LogicalResult distopt::codegen::emitTrainOp(FunctionEmitter &e, Operation *op) {
  if (failed(e.checkTypes(op)))
    return failure();
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case<StateOp>([&](auto o) { return emitState(e, o); })
      .Case<DropoutMaskOp>([&](auto o) { return emitDropoutMask(e, o); })
      .Case<SgdUpdateOp>([&](auto o) { return emitSgd(e, o); })
      .Case<AdamUpdateOp>([&](auto o) { return emitAdam(e, o); })
      .Case<UnscaleOp>([&](auto o) { return emitUnscale(e, o); })
      .Case<LossScaleUpdateOp>(
          [&](auto o) { return emitLossScaleUpdate(e, o); })
      .Case<SoftmaxGradOp>([&](SoftmaxGradOp o) {
        e.allocate(o.getResult());
        e.os << "  { distrt_tensor y = " << e.desc(o.getOutput())
             << ", dy = " << e.desc(o.getGrad())
             << ", dx = " << e.desc(o.getResult()) << ";\n  ";
        e.call("distrt_softmax_bwd(P.ctx, &y, &dy, &dx, " +
                   std::to_string(o.getAxisAttr().getInt()) + ", " +
                   (o.getLog() ? "1" : "0") + ")",
               o);
        e.os << "  }\n";
        return success();
      })
      .Case<SoftmaxCrossEntropyGradOp>(
          [&](SoftmaxCrossEntropyGradOp o) -> LogicalResult {
            auto logits = FunctionEmitter::typeOf(o.getLogits());
            if (logits.getRank() != 2)
              return o.emitError() << "graph.softmax_cross_entropy_grad has a "
                                      "lowering only for [N, C] logits";
            e.allocate(o.getResult());
            bool rows = o.getReduction() == LossReduction::None;
            e.os << "  { distrt_tensor x = " << e.desc(o.getLogits())
                 << ", l = " << e.desc(o.getLabels()) << ", g = "
                 << (rows ? e.desc(o.getGrad()) : e.desc(o.getGrad(), {}))
                 << ", dx = " << e.desc(o.getResult()) << ";\n  ";
            e.call("distrt_softmax_cross_entropy_bwd(P.ctx, &x, &l, &g, &dx, " +
                       crossEntropyArgs(o) + ")",
                   o);
            e.os << "  }\n";
            return success();
          })
      .Case<NormGradOp>([&](NormGradOp o) {
        return emitNormGrad(e, o, o.getInput(), o.getScale(), o.getGrad(),
                            o.getKind(), o.getAxisAttr().getInt(),
                            o.getEpsilon().convertToDouble(), o->getResults(),
                            false);
      })
      .Case<NormGradParamsOp>([&](NormGradParamsOp o) {
        return emitNormGrad(e, o, o.getInput(), Value(), o.getGrad(),
                            o.getKind(), o.getAxisAttr().getInt(),
                            o.getEpsilon().convertToDouble(), o.getResults(),
                            true);
      })
      .Case<ScatterAddOp>([&](auto o) { return emitScatterAdd(e, o); })
      .Case<ConvGradInputOp>([&](auto o) { return emitConvGradInput(e, o); })
      .Case<ConvGradWeightOp>([&](auto o) { return emitConvGradWeight(e, o); })
      .Case<PoolGradOp>([&](auto o) { return emitPoolGrad(e, o); })
      .Default([&](Operation *) {
        return op->emitError() << op->getName() << " has no lowering";
      });
}

llvm::DenseMap<Value, Value> distopt::codegen::inPlaceUpdates(
    Operation *fnOp, const llvm::DenseSet<Operation *> &fused) {
  llvm::DenseMap<Value, Value> out;
  auto fn = dyn_cast<func::FuncOp>(fnOp);
  if (!fn || !fn.getBody().hasOneBlock())
    return out;
  Block &body = fn.getBody().front();
  auto ret = dyn_cast<func::ReturnOp>(body.getTerminator());
  if (!ret)
    return out;
  distopt::emit::BlockLiveness live(body);
  llvm::DenseMap<Value, unsigned> returned;
  for (Value v : ret.getOperands())
    ++returned[v];
  // The buffer a result replaces: its update's operand of the same role.
  auto replaced = [](Operation *def, Value v) -> Value {
    if (auto sgd = dyn_cast<SgdUpdateOp>(def))
      return v == sgd.getResults()[0] ? sgd.getParam() : sgd.getMomentumBuf();
    if (auto adam = dyn_cast<AdamUpdateOp>(def)) {
      if (v == adam.getNewParam())
        return adam.getParam();
      return v == adam.getNewExpAvg() ? adam.getExpAvg() : adam.getExpAvgSq();
    }
    return Value();
  };
  auto named = [](Value x) -> llvm::StringRef {
    if (auto w = x.getDefiningOp<WeightOp>())
      return w.getSymName();
    if (auto st = x.getDefiningOp<StateOp>())
      return st.getSymName();
    return "";
  };
  for (auto [k, v] : llvm::enumerate(ret.getOperands())) {
    auto upd = fn.getResultAttrOfType<StringAttr>(k, "graph.update");
    Operation *def = v.getDefiningOp();
    if (!upd || !def || def->getBlock() != &body || returned[v] != 1)
      continue;
    Value x = replaced(def, v);
    if (!x || x.getType() != v.getType() || named(x) != upd.getValue() ||
        live.root(x) != x || !live.ranges.count(x) ||
        live.ranges.lookup(x).last != live.position.lookup(def))
      continue;
    // A fused reader runs in its user's loop, which may come later.
    bool laterRead = llvm::any_of(x.getUsers(), [&](Operation *user) {
      Operation *top = body.findAncestorOpInBlock(*user);
      return !top || fused.contains(top);
    });
    // A stage function reads its weights by name: none may run after the
    // update (an asynchronous schedule passes versions as arguments).
    laterRead |= llvm::any_of(body, [&](Operation &op) {
      return isa<func::CallOp>(op) && def->isBeforeInBlock(&op);
    });
    if (!laterRead)
      out[v] = x;
  }
  return out;
}
