//===- EmitNN.cpp - Matmul, convolution, pooling, norms, losses -*- C++ -*-===//
//
// Part of DistOpt. The compute-heavy ops become calls into the kernel
// runtime (oneDNN on CPU, cuBLAS/cuDNN on CUDA). Where graph semantics are
// wider than the ABI, the emitter adapts: rank-1 matmul operands gain a unit
// dimension, batch dimensions that broadcast are expanded into a temporary,
// a bias that is not a per-column vector (or is scaled by beta) is added by
// a generated loop, 1-D convolution and pooling run as 2-D with height 1,
// and norms over several trailing dimensions run over their product.
//
//===----------------------------------------------------------------------===//
#include "lib/Codegen/FunctionEmitter.h"

#include "dialects/Emit/EmitDialect.h"
#include "dialects/Emit/KernelRules.h"
#include "dialects/Emit/MemoryPlan.h"
#include "dialects/Graph/GraphOps.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
namespace emit = distopt::emit;
using namespace distopt::codegen;
using namespace distopt::graph;

bool distopt::codegen::isNNOp(Operation *op) {
  return isa<MatmulOp, ConvOp, PoolOp, SoftmaxOp, LayerNormOp, RMSNormOp,
             BatchNormOp, SoftmaxCrossEntropyOp, ReduceOp>(op);
}

static std::string dimsStr(ArrayRef<int64_t> dims) {
  std::string s = "{";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "}";
}

static int64_t product(ArrayRef<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

static LogicalResult requireF32(FunctionEmitter &e, Operation *op) {
  for (Type t :
       llvm::concat<Type>(op->getOperandTypes(), op->getResultTypes())) {
    Type et = cast<RankedTensorType>(t).getElementType();
    if (!e.isF32Like(et))
      return op->emitError()
             << op->getName() << ": element type " << et
             << " has no lowering (the runtime computes in f32)";
  }
  return success();
}

namespace {
/// A temporary buffer that lives for one op.
struct Temp {
  std::string name;
};
} // namespace

static unsigned tempCounter = 0;

/// Allocates a temporary of `n` floats; the caller releases it.
static Temp allocTemp(FunctionEmitter &e, int64_t n,
                      llvm::StringRef ct = "float", size_t elemBytes = 4) {
  Temp t{"tmp" + std::to_string(tempCounter++)};
  e.os << "  " << ct << " *" << t.name << " = (" << ct << " *)P.alloc("
       << n * (int64_t)elemBytes << ");\n  if (!" << t.name << ") return 1;\n";
  return t;
}

/// Copies `v` broadcast to `shape` into a fresh temporary.
static Temp expandInto(FunctionEmitter &e, Value v, ArrayRef<int64_t> shape) {
  return Temp{e.broadcastTemp(v, shape)};
}

/// The descriptor of post-op operand `src1` of `anchor`. A 1-D convolution
/// runs as 2-D with height 1 ([N, C, L] as [N, C, 1, L]), so an operand of
/// rank >= 2 (aligned with the result's trailing dims) gains the unit dim
/// before its last one, in its own layout (the layout pass lays post-op
/// operands out in the result's dim order); a rank-1 operand is a scalar or
/// spans L alone.
static std::string postOpOperand(FunctionEmitter &e, Value src1,
                                 Operation *anchor) {
  auto conv = dyn_cast<ConvOp>(anchor);
  if (!conv || FunctionEmitter::typeOf(conv.getResult()).getRank() != 3 ||
      FunctionEmitter::typeOf(src1).getRank() < 2)
    return e.desc(src1);
  return e.descWithUnitHeight(src1);
}

/// Emits `distrt_compute_ex ex` for the post-ops of `kernel` (an
/// emit.kernel post_ops whose anchor is `anchor`) and the constness of
/// `weights`; returns "&ex", or "" when neither applies (the plain entry
/// point will do).
static std::string computeEx(FunctionEmitter &e, Operation *kernel,
                             Operation *anchor, Value weights) {
  std::string text;
  unsigned count = 0;
  if (kernel) {
    auto k = cast<emit::KernelOp>(kernel);
    int sum = emit::sumCandidate(k);
    // oneDNN's sum reads what the output buffer holds: the plan wrote the
    // result over that operand (in place, an arena slot), or the operand is
    // the running sum the caller passed in that result's buffer
    // (`dist.accumulates`).
    std::optional<int64_t> at = emit::arenaOffset(k.getResult());
    Value src = sum >= 0 ? e.resolve(k.getBody().getArgument(sum)) : Value();
    auto arg = dyn_cast_or_null<BlockArgument>(src);
    auto slot = e.resultSlots.find(k.getResult());
    bool inPlace =
        sum >= 0 &&
        ((at && emit::arenaOffset(src) == at) ||
         (arg && slot != e.resultSlots.end() &&
          emit::accumulatedResult(arg.getOwner()->getParentOp(),
                                  arg.getArgNumber()) == slot->second));
    Value chain = anchor->getResult(0);
    for (Operation *op = anchor->getNextNode();
         op && !op->hasTrait<OpTrait::IsTerminator>(); op = op->getNextNode()) {
      auto posts = emit::postOpsOf(op, chain, anchor);
      if (!posts)
        return "";
      for (const emit::PostOp &p : *posts) {
        std::string slot = "ex.post[" + std::to_string(count++) + "]";
        Value src1 = p.operand >= 0 ? op->getOperand(p.operand) : Value();
        if (inPlace && count == 1 && src1 == k.getBody().getArgument(sum)) {
          text += "    " + slot + ".kind = DISTRT_POST_SUM;\n";
          continue;
        }
        bool elt = p.kind == emit::PostOp::Eltwise;
        text += "    " + slot + ".kind = DISTRT_POST_" +
                (elt ? "ELTWISE" : "BINARY") + ";\n    " + slot +
                ".alg = DISTRT_" + (elt ? "ELTWISE_" : "BINARY_") + p.alg +
                ";\n";
        Type f32 = Float32Type::get(op->getContext());
        if (p.alpha != 0 || p.beta != 0)
          text += "    " + slot + ".alpha = " +
                  FunctionEmitter::literal(p.alpha, f32) + "; " + slot +
                  ".beta = " + FunctionEmitter::literal(p.beta, f32) + ";\n";
        if (src1)
          text += "    " + slot + ".src1 = " + postOpOperand(e, src1, anchor) +
                  ";\n";
      }
      chain = op->getResult(0);
    }
  }
  bool constant = weights && e.isConstant(weights);
  if (!count && !constant)
    return "";
  e.os << "    distrt_compute_ex ex = {};\n    ex.count = " << count << ";\n"
       << text;
  if (constant)
    e.os << "    ex.constant_weights = 1;\n";
  return "&ex";
}

static LogicalResult emitMatmul(FunctionEmitter &e, MatmulOp op, Value out,
                                Operation *kernel = nullptr) {
  Type et = FunctionEmitter::typeOf(out).getElementType();
  for (Value v : op->getOperands()) {
    Type t = FunctionEmitter::typeOf(v).getElementType();
    if (!(t.isF32() || t.isF16() || t.isBF16()) || t != et)
      return op.emitError() << "graph.matmul: element type " << t
                            << " has no lowering (f32, f16 or bf16, the "
                               "same for every operand and the result)";
  }
  std::string ct = FunctionEmitter::cType(et);
  SmallVector<int64_t> a(FunctionEmitter::typeOf(op.getLhs()).getShape());
  SmallVector<int64_t> b(FunctionEmitter::typeOf(op.getRhs()).getShape());
  if (a.size() == 1)
    a.insert(a.begin(), 1);
  if (b.size() == 1)
    b.push_back(1);
  bool ta = op.getTransposeLhs(), tb = op.getTransposeRhs();
  int64_t M = ta ? a[a.size() - 1] : a[a.size() - 2];
  int64_t N = tb ? b[b.size() - 2] : b[b.size() - 1];
  // Broadcast batch shape.
  size_t batchRank = std::max(a.size(), b.size()) - 2;
  SmallVector<int64_t> batch(batchRank, 1);
  for (size_t k = 0; k < batchRank; ++k) {
    auto dimOf = [&](ArrayRef<int64_t> s) -> int64_t {
      int64_t idx = (int64_t)k - (int64_t)(batchRank - (s.size() - 2));
      return idx < 0 ? 1 : s[idx];
    };
    batch[k] = std::max(dimOf(a), dimOf(b));
  }
  e.allocate(out);
  SmallVector<Temp> temps;
  auto operand = [&](Value v, SmallVector<int64_t> shape) -> std::string {
    if (shape.size() == 2 ||
        ArrayRef<int64_t>(shape).drop_back(2) == ArrayRef<int64_t>(batch))
      return e.desc(v, shape);
    SmallVector<int64_t> full(batch);
    full.push_back(shape[shape.size() - 2]);
    full.push_back(shape[shape.size() - 1]);
    // Broadcast against the operand's own (unit-extended) shape.
    Temp t = allocTemp(e, product(full), ct, FunctionEmitter::byteSize(et));
    std::string src = e.name(v);
    e.openLoop(product(full));
    e.os << "    " << t.name << "[i] = " << src << "["
         << FunctionEmitter::broadcastOffset(full, shape, "i") << "];\n";
    e.closeLoop();
    temps.push_back(t);
    return "dg::T(" + t.name + ", " + FunctionEmitter::rtType(et) + ", " +
           dimsStr(full) + ")";
  };
  std::string da = operand(op.getLhs(), a), db = operand(op.getRhs(), b);
  SmallVector<int64_t> cDims(batch);
  cDims.push_back(M);
  cDims.push_back(N);
  std::string bias = "nullptr";
  bool biasLoop = false;
  double beta = op.getBeta().convertToDouble();
  if (Value bv = op.getBias()) {
    auto bs = FunctionEmitter::typeOf(bv).getShape();
    bool perColumn = !bs.empty() && bs.back() == N && product(bs) == N;
    if (perColumn && beta == 1.0 && et.isF32())
      bias = "&bias";
    else
      biasLoop = true;
  }
  e.os << "  { distrt_tensor a = " << da << ", b = " << db
       << ", c = " << e.desc(out, cDims);
  if (bias != "nullptr")
    e.os << ", bias = " << e.desc(op.getBias(), {N});
  e.os << ";\n    distrt_matmul_attr at = {" << ta << ", " << tb << ", "
       << FunctionEmitter::literal(op.getAlpha().convertToDouble(),
                                   Float32Type::get(op.getContext()))
       << ", 0.0f};\n";
  std::string ex = computeEx(e, kernel, op, op.getRhs());
  bool strided = !e.isRowMajor(op.getLhs()) || !e.isRowMajor(op.getRhs()) ||
                 !e.isRowMajor(out);
  e.os << "  ";
  if (ex.empty() && !strided)
    e.call("distrt_matmul(P.ctx, &a, &b, " + bias + ", &c, &at)", op);
  else
    e.call("distrt_matmul_ex(P.ctx, &a, &b, " + bias + ", &c, &at, " +
               (ex.empty() ? std::string("nullptr") : ex) + ")",
           op);
  e.os << "  }\n";
  for (Temp &t : temps)
    e.os << "  P.release(" << t.name << ");\n";
  if (biasLoop) {
    std::string o = e.name(out), bn = e.name(op.getBias());
    e.openLoop(FunctionEmitter::numel(out));
    e.os << "    " << o << "[i] = (float)" << o << "[i] + "
         << FunctionEmitter::literal(beta, Float32Type::get(op.getContext()))
         << " * (float)" << bn << "["
         << FunctionEmitter::broadcastOffset(
                FunctionEmitter::typeOf(out).getShape(),
                FunctionEmitter::typeOf(op.getBias()).getShape(), "i")
         << "];\n";
    e.closeLoop();
  }
  return success();
}

/// Spatial attributes as 2-D (a 1-D op gets a unit height).
struct Spatial2D {
  int64_t stride[2] = {1, 1}, padBegin[2] = {0, 0}, padEnd[2] = {0, 0},
          dilation[2] = {1, 1}, kernel[2] = {1, 1};
};

static std::string as4D(FunctionEmitter &e, Value v) {
  if (FunctionEmitter::typeOf(v).getRank() == 4)
    return e.desc(v);
  return e.descWithUnitHeight(v);
}

static LogicalResult emitConv(FunctionEmitter &e, ConvOp op, Value out,
                              Operation *kernel = nullptr) {
  if (failed(requireF32(e, op)))
    return failure();
  unsigned rank = FunctionEmitter::typeOf(op.getInput()).getRank();
  if (rank != 3 && rank != 4)
    return op.emitError()
           << "graph.conv: " << rank - 2
           << "-D convolution has no lowering (1-D and 2-D only)";
  Spatial2D s;
  unsigned n = rank - 2, off = 2 - n;
  for (unsigned k = 0; k < n; ++k) {
    s.stride[off + k] = op.getStrides().empty() ? 1 : op.getStrides()[k];
    s.dilation[off + k] = op.getDilations().empty() ? 1 : op.getDilations()[k];
    s.padBegin[off + k] = op.getPads().empty() ? 0 : op.getPads()[k];
    s.padEnd[off + k] = op.getPads().empty() ? 0 : op.getPads()[n + k];
  }
  e.allocate(out);
  e.os << "  { distrt_tensor x = " << as4D(e, op.getInput())
       << ", w = " << as4D(e, op.getWeight()) << ", y = " << as4D(e, out);
  if (op.getBias())
    e.os << ", bias = " << e.desc(op.getBias());
  e.os << ";\n    distrt_conv2d_attr at = {{" << s.stride[0] << ", "
       << s.stride[1] << "}, {" << s.padBegin[0] << ", " << s.padBegin[1]
       << "}, {" << s.padEnd[0] << ", " << s.padEnd[1] << "}, {"
       << s.dilation[0] << ", " << s.dilation[1] << "}, " << op.getGroup()
       << "};\n";
  bool strided = !e.isRowMajor(op.getInput()) || !e.isRowMajor(out);
  std::string ex = kernel || strided
                       ? computeEx(e, kernel, op, op.getWeight())
                       : std::string();
  e.os << "  ";
  std::string bias = op.getBias() ? "&bias" : "nullptr";
  if (ex.empty() && !strided)
    e.call("distrt_conv2d(P.ctx, &x, &w, " + bias + ", &y, &at)", op);
  else
    e.call("distrt_conv2d_ex(P.ctx, &x, &w, " + bias + ", &y, &at, " +
               (ex.empty() ? std::string("nullptr") : ex) + ")",
           op);
  e.os << "  }\n";
  return success();
}

/// graph.pool l2 (1-D/2-D, any stride, padding, dilation): a generated
/// loop over the outputs, y = sqrt(sum of x^2 over the window positions
/// inside the input), accumulated in double. The runtime has no Lp pool.
static LogicalResult emitL2Pool(FunctionEmitter &e, PoolOp op) {
  auto in = FunctionEmitter::typeOf(op.getInput()).getShape();
  auto out = FunctionEmitter::typeOf(op.getResult()).getShape();
  unsigned n = in.size() - 2, off = 2 - n;
  int64_t H[2] = {1, 1}, O[2] = {1, 1}, k[2] = {1, 1}, st[2] = {1, 1},
          pb[2] = {0, 0}, dl[2] = {1, 1};
  for (unsigned d = 0; d < n; ++d) {
    H[off + d] = in[2 + d];
    O[off + d] = out[2 + d];
    k[off + d] = op.getGlobal() ? in[2 + d] : op.getKernel()[d];
    if (op.getGlobal())
      continue;
    st[off + d] = op.getStrides().empty() ? 1 : op.getStrides()[d];
    pb[off + d] = op.getPads().empty() ? 0 : op.getPads()[d];
    dl[off + d] = op.getDilations().empty() ? 1 : op.getDilations()[d];
  }
  std::string ct = FunctionEmitter::cType(op.getResult());
  e.allocate(op.getResult());
  e.openLoop(FunctionEmitter::numel(op.getResult()));
  e.os << "    const int64_t ow = i % " << O[1] << ", oh = (i / " << O[1]
       << ") % " << O[0] << ", nc = i / " << O[0] * O[1] << ";\n"
       << "    double s = 0;\n    for (int64_t a = 0; a < " << k[0]
       << "; ++a) {\n      const int64_t ih = oh * " << st[0] << " - " << pb[0]
       << " + a * " << dl[0] << ";\n      if (ih < 0 || ih >= " << H[0]
       << ") continue;\n      for (int64_t b = 0; b < " << k[1]
       << "; ++b) {\n        const int64_t iw = ow * " << st[1] << " - "
       << pb[1] << " + b * " << dl[1]
       << ";\n        if (iw < 0 || iw >= " << H[1]
       << ") continue;\n        const double v = (double)"
       << e.name(op.getInput()) << "[(nc * " << H[0] << " + ih) * " << H[1]
       << " + iw];\n        s += v * v;\n      }\n    }\n    "
       << e.name(op.getResult()) << "[i] = (" << ct << ")sqrt(s);\n";
  e.closeLoop();
  return success();
}

static LogicalResult emitPool(FunctionEmitter &e, PoolOp op) {
  if (failed(requireF32(e, op)))
    return failure();
  auto in = FunctionEmitter::typeOf(op.getInput()).getShape();
  auto out = FunctionEmitter::typeOf(op.getResult()).getShape();
  unsigned rank = in.size();
  if (rank != 3 && rank != 4)
    return op.emitError() << "graph.pool: " << rank - 2
                          << "-D pooling has no lowering (1-D and 2-D only)";
  if (op.getKind() == PoolKind::L2)
    return emitL2Pool(e, op);
  for (int64_t d : op.getDilations())
    if (d != 1)
      return op.emitError() << "graph.pool: dilation " << d
                            << " has no lowering (dilation 1 only)";
  Spatial2D s;
  unsigned n = rank - 2, off = 2 - n;
  for (unsigned k = 0; k < n; ++k) {
    int64_t D = in[2 + k];
    if (op.getGlobal()) {
      s.kernel[off + k] = D;
      continue;
    }
    s.kernel[off + k] = op.getKernel()[k];
    s.stride[off + k] = op.getStrides().empty() ? 1 : op.getStrides()[k];
    s.padBegin[off + k] = op.getPads().empty() ? 0 : op.getPads()[k];
    int64_t pe = op.getPads().empty() ? 0 : op.getPads()[n + k];
    // ceil_mode: extend the end padding so the runtime's floor formula
    // yields the op's output size.
    int64_t need = (out[2 + k] - 1) * s.stride[off + k] + s.kernel[off + k] -
                   D - s.padBegin[off + k];
    s.padEnd[off + k] = std::max(pe, need);
  }
  const char *kind = op.getKind() == PoolKind::Max ? "DISTRT_POOL_MAX"
                     : op.getCountIncludePad() ? "DISTRT_POOL_AVG_INCLUDE_PAD"
                                               : "DISTRT_POOL_AVG_EXCLUDE_PAD";
  e.allocate(op.getResult());
  e.os << "  { distrt_tensor x = " << as4D(e, op.getInput())
       << ", y = " << as4D(e, op.getResult())
       << ";\n    distrt_pool2d_attr at = {" << kind << ", {" << s.kernel[0]
       << ", " << s.kernel[1] << "}, {" << s.stride[0] << ", " << s.stride[1]
       << "}, {" << s.padBegin[0] << ", " << s.padBegin[1] << "}, {"
       << s.padEnd[0] << ", " << s.padEnd[1] << "}};\n  ";
  e.call("distrt_pool2d(P.ctx, &x, &y, &at)", op);
  e.os << "  }\n";
  return success();
}

/// Descriptor of a norm parameter over the trailing `D` elements of shape
/// `trailing` (expanded into a temporary when it broadcasts).
static std::string normParam(FunctionEmitter &e, Value p,
                             ArrayRef<int64_t> trailing,
                             SmallVector<Temp> &temps) {
  int64_t D = product(trailing);
  if (FunctionEmitter::numel(p) == D)
    return e.desc(p, {D});
  Temp t = expandInto(e, p, trailing);
  temps.push_back(t);
  return "dg::T(" + t.name + ", DISTRT_F32, {" + std::to_string(D) + "})";
}

template <typename NormOp>
static LogicalResult emitNorm(FunctionEmitter &e, NormOp op, bool rms) {
  if (failed(requireF32(e, op)))
    return failure();
  auto shape = FunctionEmitter::typeOf(op.getInput()).getShape();
  int64_t axis = op.getAxisAttr().getInt();
  if (axis < 0)
    axis += shape.size();
  int64_t rows = product(shape.take_front(axis));
  auto trailing = shape.drop_front(axis);
  int64_t D = product(trailing);
  SmallVector<Temp> temps;
  e.allocate(op.getResult());
  std::string scale = normParam(e, op.getScale(), trailing, temps);
  std::string shift;
  if (op.getBias() && !rms)
    shift = normParam(e, op.getBias(), trailing, temps);
  std::string eps = FunctionEmitter::literal(op.getEpsilon().convertToDouble(),
                                             Float32Type::get(op.getContext()));
  e.os << "  { distrt_tensor x = " << e.desc(op.getInput(), {rows, D})
       << ", y = " << e.desc(op.getResult(), {rows, D}) << ", s = " << scale;
  if (!shift.empty())
    e.os << ", b = " << shift;
  e.os << ";\n  ";
  if (rms)
    e.call("distrt_rmsnorm_fwd(P.ctx, &x, &s, &y, " + eps + ")", op);
  else
    e.call(std::string("distrt_layernorm_fwd(P.ctx, &x, &s, ") +
               (shift.empty() ? "nullptr" : "&b") + ", &y, nullptr, nullptr, " +
               eps + ")",
           op);
  e.os << "  }\n";
  for (Temp &t : temps)
    e.os << "  P.release(" << t.name << ");\n";
  if (rms && op.getBias()) {
    std::string o = e.name(op.getResult()), bn = e.name(op.getBias());
    e.openLoop(FunctionEmitter::numel(op.getResult()));
    e.os << "    " << o << "[i] += " << bn << "["
         << FunctionEmitter::broadcastOffset(
                shape, FunctionEmitter::typeOf(op.getBias()).getShape(), "i")
         << "];\n";
    e.closeLoop();
  }
  return success();
}

static LogicalResult emitBatchNorm(FunctionEmitter &e, BatchNormOp op) {
  if (failed(requireF32(e, op)))
    return failure();
  std::string eps = FunctionEmitter::literal(op.getEpsilon().convertToDouble(),
                                             Float32Type::get(op.getContext()));
  e.allocate(op.getResult());
  // Results are declared at function scope, before the call's block.
  for (Value r : op.getRunningStats())
    e.allocate(r);
  e.os << "  { distrt_tensor x = " << e.desc(op.getInput())
       << ", y = " << e.desc(op.getResult())
       << ", s = " << e.desc(op.getScale()) << ", b = " << e.desc(op.getBias())
       << ", m = " << e.desc(op.getMean())
       << ", v = " << e.desc(op.getVariance()) << ";\n  ";
  if (!op.getTraining()) {
    e.call("distrt_batchnorm_fwd_inference(P.ctx, &x, &s, &b, &m, &v, &y, " +
               eps + ")",
           op);
    e.os << "  }\n";
    return success();
  }
  int64_t C = FunctionEmitter::numel(op.getScale());
  Temp sm = allocTemp(e, C), sv = allocTemp(e, C);
  e.os << "  distrt_tensor sm = dg::T(" << sm.name << ", DISTRT_F32, {" << C
       << "}), sv = dg::T(" << sv.name << ", DISTRT_F32, {" << C << "});\n";
  e.os << "  ";
  e.call("distrt_batchnorm_fwd_training(P.ctx, &x, &s, &b, &y, &sm, &sv, "
         "nullptr, nullptr, " +
             eps + ", 0.0f)",
         op);
  // Running statistics as ONNX defines them: running = momentum * running +
  // (1 - momentum) * batch, with the batch's biased variance (the ABI's own
  // update follows PyTorch: unbiased variance, momentum on the batch side).
  if (op.getRunningStats().size() == 2) {
    Value rm = op.getRunningStats()[0], rv = op.getRunningStats()[1];
    std::string mom = FunctionEmitter::literal(
        op.getMomentum().convertToDouble(), Float32Type::get(op.getContext()));
    std::string rmN = e.name(rm), rvN = e.name(rv), m = e.name(op.getMean()),
                v = e.name(op.getVariance());
    e.openLoop(C);
    e.os << "    " << rmN << "[i] = " << mom << " * " << m << "[i] + (1.0f - "
         << mom << ") * " << sm.name << "[i];\n    " << rvN << "[i] = " << mom
         << " * " << v << "[i] + (1.0f - " << mom << ") * " << sv.name
         << "[i];\n";
    e.closeLoop();
  }
  e.os << "  P.release(" << sm.name << ");\n  P.release(" << sv.name
       << ");\n  }\n";
  return success();
}

std::string distopt::codegen::crossEntropyArgs(Operation *op) {
  auto ignore = op->getAttrOfType<IntegerAttr>("ignore_index");
  auto reduction = op->getAttrOfType<LossReductionAttr>("reduction");
  std::string args =
      ignore ? std::to_string(ignore.getInt()) + "ll" : "INT64_MIN";
  switch (reduction.getValue()) {
  case LossReduction::Mean:
    return args + ", DISTRT_LOSS_MEAN";
  case LossReduction::Sum:
    return args + ", DISTRT_LOSS_SUM";
  case LossReduction::None:
    return args + ", DISTRT_LOSS_NONE";
  }
  llvm_unreachable("unknown loss reduction");
}

static LogicalResult emitCrossEntropy(FunctionEmitter &e,
                                      SoftmaxCrossEntropyOp op) {
  auto logits = FunctionEmitter::typeOf(op.getLogits());
  auto labels = FunctionEmitter::typeOf(op.getLabels());
  if (logits.getRank() != 2 || labels.getRank() != 1 ||
      !e.isF32Like(logits.getElementType()))
    return op.emitError()
           << "graph.softmax_cross_entropy has a lowering only for f32 "
              "[N, C] logits and [N] labels";
  e.allocate(op.getResult());
  bool rows = op.getReduction() == LossReduction::None;
  e.os << "  { distrt_tensor x = " << e.desc(op.getLogits())
       << ", l = " << e.desc(op.getLabels()) << ", y = "
       << (rows ? e.desc(op.getResult()) : e.desc(op.getResult(), {}))
       << ";\n  ";
  e.call("distrt_softmax_cross_entropy(P.ctx, &x, &l, &y, " +
             crossEntropyArgs(op) + ")",
         op);
  e.os << "  }\n";
  return success();
}

LogicalResult distopt::codegen::emitNNOp(FunctionEmitter &e, Operation *op) {
  if (failed(e.checkTypes(op)))
    return failure();
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case<MatmulOp>([&](auto o) { return emitMatmul(e, o, o.getResult()); })
      .Case<ConvOp>([&](auto o) { return emitConv(e, o, o.getResult()); })
      .Case<PoolOp>([&](auto o) { return emitPool(e, o); })
      .Case<SoftmaxOp>([&](SoftmaxOp o) -> LogicalResult {
        if (failed(requireF32(e, o)))
          return failure();
        e.allocate(o.getResult());
        e.os << "  { distrt_tensor x = " << e.desc(o.getInput())
             << ", y = " << e.desc(o.getResult()) << ";\n  ";
        e.call("distrt_softmax(P.ctx, &x, &y, " +
                   std::to_string(o.getAxisAttr().getInt()) + ", " +
                   (o.getLog() ? "1" : "0") + ")",
               o);
        e.os << "  }\n";
        return success();
      })
      .Case<LayerNormOp>([&](auto o) { return emitNorm(e, o, false); })
      .Case<RMSNormOp>([&](auto o) { return emitNorm(e, o, true); })
      .Case<BatchNormOp>([&](auto o) { return emitBatchNorm(e, o); })
      .Case<SoftmaxCrossEntropyOp>(
          [&](auto o) { return emitCrossEntropy(e, o); })
      .Case<ReduceOp>([&](auto o) { return emitReduce(e, o); })
      .Default([&](Operation *) {
        return op->emitError() << op->getName() << " has no lowering";
      });
}

LogicalResult distopt::codegen::emitPostOpKernel(FunctionEmitter &e,
                                                 Operation *op) {
  auto kernel = cast<emit::KernelOp>(op);
  Block &body = kernel.getBody().front();
  for (auto [arg, in] : llvm::zip(body.getArguments(), kernel.getInputs()))
    e.bindKernelInput(arg, in);
  Operation *anchor = kernel.getAnchor();
  if (!anchor || failed(e.checkTypes(anchor)))
    return failure();
  if (auto mm = dyn_cast<MatmulOp>(anchor))
    return emitMatmul(e, mm, kernel.getResult(), op);
  return emitConv(e, cast<ConvOp>(anchor), kernel.getResult(), op);
}
