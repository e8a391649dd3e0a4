//===- KernelRules.cpp - What may run as one kernel -------------*- C++ -*-===//
//
// Part of DistOpt.
//
//===----------------------------------------------------------------------===//
#include "dialects/Emit/KernelRules.h"

#include "dialects/Graph/GraphOps.h"

#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

#include <cfloat>

using namespace mlir;
using namespace distopt::emit;
namespace g = distopt::graph;

bool distopt::emit::isElementwiseOp(Operation *op) {
  return isa<g::UnaryOp, g::BinaryOp, g::WhereOp, g::CastOp, g::ClipOp,
             g::UnaryGradOp>(op);
}

int64_t distopt::emit::elementBytes(Type t) {
  if (auto it = dyn_cast<IntegerType>(t))
    return it.getWidth() == 1 ? 1 : it.getWidth() / 8;
  if (auto ft = dyn_cast<FloatType>(t))
    return ft.getWidth() / 8;
  return 0;
}

SmallVector<int64_t> distopt::emit::rowMajorStrides(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> s(shape.size(), 1);
  for (int i = (int)shape.size() - 2; i >= 0; --i)
    s[i] = s[i + 1] * shape[i + 1];
  return s;
}

bool distopt::emit::sameLayout(ArrayRef<int64_t> shape, ArrayRef<int64_t> a,
                               ArrayRef<int64_t> b) {
  if (a.size() != shape.size() || b.size() != shape.size())
    return false;
  for (auto [d, x, y] : llvm::zip(shape, a, b))
    if (d != 1 && x != y)
      return false;
  return true;
}

static RankedTensorType tensorType(Value v) {
  return dyn_cast<RankedTensorType>(v.getType());
}

static bool isF32(Value v) {
  auto t = tensorType(v);
  return t && t.getElementType().isF32() && t.hasStaticShape();
}

//===----------------------------------------------------------------------===//
// Post-ops
//===----------------------------------------------------------------------===//

bool distopt::emit::isPostOpAnchor(Operation *op) {
  if (auto mm = dyn_cast<g::MatmulOp>(op)) {
    if (!llvm::all_of(op->getOperands(), isF32) || !isF32(mm.getResult()))
      return false;
    if (tensorType(mm.getLhs()).getRank() < 2 ||
        tensorType(mm.getRhs()).getRank() < 2)
      return false;
    if (Value b = mm.getBias()) {
      // The runtime adds a per-column bias itself; anything else is a loop
      // after the call, which would run after the post-ops.
      auto bs = tensorType(b).getShape();
      int64_t n = tensorType(mm.getResult()).getShape().back();
      int64_t numel = 1;
      for (int64_t d : bs)
        numel *= d;
      if (bs.empty() || bs.back() != n || numel != n ||
          mm.getBeta().convertToDouble() != 1.0)
        return false;
    }
    return true;
  }
  if (auto conv = dyn_cast<g::ConvOp>(op)) {
    // A 1-D convolution runs as a 2-D one of height 1 ([N, C, L] viewed as
    // [N, C, 1, L]), so its post-ops fold into the primitive as well.
    int64_t rank = tensorType(conv.getInput()).getRank();
    return llvm::all_of(op->getOperands(), isF32) && isF32(conv.getResult()) &&
           (rank == 3 || rank == 4);
  }
  return false;
}

/// Whether `other` (broadcast to `out`) is a scalar, a tensor of `out`'s
/// shape, or a vector along dim `channel` of `out`.
static bool isPostOpOperand(RankedTensorType other, ArrayRef<int64_t> out,
                            unsigned channel) {
  if (!other || !other.hasStaticShape() || !other.getElementType().isF32() ||
      other.getRank() > (int64_t)out.size())
    return false;
  if (other.getNumElements() == 1 || other.getShape() == out)
    return true;
  unsigned lead = out.size() - other.getRank();
  for (unsigned d = 0; d < other.getRank(); ++d) {
    int64_t want = lead + d == channel ? out[channel] : 1;
    if (other.getShape()[d] != want)
      return false;
  }
  return true;
}

static PostOp eltwise(StringRef alg, float alpha = 0, float beta = 0) {
  PostOp p;
  p.kind = PostOp::Eltwise;
  p.alg = alg.str();
  p.alpha = alpha;
  p.beta = beta;
  return p;
}

/// The runtime eltwise of an f32 unary kind (with its alpha/beta), or
/// nullopt. HardSigmoid takes two post-ops and is handled by the caller.
static std::optional<PostOp> unaryEltwise(g::UnaryOp u) {
  auto alpha = [&](double d) {
    return (float)(u.getAlpha() ? u.getAlpha()->convertToDouble() : d);
  };
  switch (u.getKind()) {
  case g::UnaryKind::Relu:
    return eltwise("RELU");
  case g::UnaryKind::LeakyRelu:
    return eltwise("RELU", alpha(0.01));
  case g::UnaryKind::Gelu:
    return eltwise("GELU");
  case g::UnaryKind::GeluTanh:
    return eltwise("GELU_TANH");
  case g::UnaryKind::Tanh:
    return eltwise("TANH");
  case g::UnaryKind::Sigmoid:
    return eltwise("SIGMOID");
  case g::UnaryKind::Silu:
    return eltwise("SILU");
  case g::UnaryKind::Exp:
    return eltwise("EXP");
  case g::UnaryKind::Log:
    return eltwise("LOG");
  case g::UnaryKind::Sqrt:
    return eltwise("SQRT");
  case g::UnaryKind::Abs:
    return eltwise("ABS");
  case g::UnaryKind::Neg:
    return eltwise("LINEAR", -1.0f, 0.0f);
  case g::UnaryKind::HardSwish:
    return eltwise("HARDSWISH");
  case g::UnaryKind::Elu:
    return eltwise("ELU", alpha(1.0));
  case g::UnaryKind::Softplus:
    return eltwise("SOFTPLUS");
  default:
    return std::nullopt;
  }
}

std::optional<SmallVector<PostOp, 2>>
distopt::emit::postOpsOf(Operation *op, Value chain, Operation *anchor) {
  if (!anchor || op->getNumResults() != 1 || anchor->getNumResults() != 1)
    return std::nullopt;
  auto out = tensorType(anchor->getResult(0));
  if (op->getResult(0).getType() != out || chain.getType() != out)
    return std::nullopt;
  SmallVector<PostOp, 2> ops;
  if (auto u = dyn_cast<g::UnaryOp>(op)) {
    if (u.getInput() != chain)
      return std::nullopt;
    if (u.getKind() == g::UnaryKind::Identity)
      return ops;
    if (u.getKind() == g::UnaryKind::HardSigmoid) {
      double a = u.getAlpha() ? u.getAlpha()->convertToDouble() : 0.2;
      double b = u.getBeta() ? u.getBeta()->convertToDouble() : 0.5;
      ops.push_back(eltwise("LINEAR", (float)a, (float)b));
      ops.push_back(eltwise("CLIP", 0.0f, 1.0f));
      return ops;
    }
    std::optional<PostOp> p = unaryEltwise(u);
    if (!p)
      return std::nullopt;
    ops.push_back(*p);
    return ops;
  }
  if (auto c = dyn_cast<g::ClipOp>(op)) {
    if (c.getInput() != chain)
      return std::nullopt;
    ops.push_back(eltwise(
        "CLIP", c.getMin() ? (float)c.getMin()->convertToDouble() : -FLT_MAX,
        c.getMax() ? (float)c.getMax()->convertToDouble() : FLT_MAX));
    return ops;
  }
  auto b = dyn_cast<g::BinaryOp>(op);
  if (!b || b.getLhs() == b.getRhs())
    return std::nullopt;
  int chainIdx = b.getLhs() == chain ? 0 : b.getRhs() == chain ? 1 : -1;
  if (chainIdx < 0)
    return std::nullopt;
  PostOp p;
  p.kind = PostOp::Binary;
  p.operand = 1 - chainIdx;
  switch (b.getKind()) {
  case g::BinaryKind::Add:
    p.alg = "ADD";
    break;
  case g::BinaryKind::Mul:
    p.alg = "MUL";
    break;
  case g::BinaryKind::Max:
    p.alg = "MAX";
    break;
  case g::BinaryKind::Min:
    p.alg = "MIN";
    break;
  case g::BinaryKind::Sub:
    p.alg = "SUB";
    break;
  case g::BinaryKind::Div:
    p.alg = "DIV";
    break;
  default:
    return std::nullopt;
  }
  if ((p.alg == "SUB" || p.alg == "DIV") && chainIdx != 0)
    return std::nullopt;
  unsigned channel = isa<g::ConvOp>(anchor) ? 1 : out.getRank() - 1;
  if (!isPostOpOperand(tensorType(op->getOperand(p.operand)), out.getShape(),
                       channel))
    return std::nullopt;
  ops.push_back(p);
  return ops;
}

std::optional<std::string> distopt::emit::standaloneEltwise(Operation *op) {
  auto u = dyn_cast<g::UnaryOp>(op);
  if (!u || !isF32(u.getInput()) || !isF32(u.getResult()))
    return std::nullopt;
  // The transcendental kinds, where the runtime's vector code is far faster
  // than a scalar libm call per element; cheap kinds stay in loops.
  switch (u.getKind()) {
  case g::UnaryKind::Gelu:
  case g::UnaryKind::GeluTanh:
  case g::UnaryKind::Tanh:
  case g::UnaryKind::Sigmoid:
  case g::UnaryKind::Silu:
  case g::UnaryKind::Exp:
  case g::UnaryKind::Log:
  case g::UnaryKind::Softplus:
    break;
  default:
    return std::nullopt;
  }
  std::optional<PostOp> p = unaryEltwise(u);
  if (!p)
    return std::nullopt;
  return p->alg;
}

//===----------------------------------------------------------------------===//
// Views
//===----------------------------------------------------------------------===//

bool distopt::emit::isViewableOp(Operation *op) {
  if (auto s = dyn_cast<g::SliceOp>(op))
    return llvm::all_of(s.getSteps(), [](int64_t k) { return k > 0; });
  return isa<g::ReshapeOp, g::FlattenOp, g::DropoutOp, g::TransposeOp,
             g::SplitOp>(op);
}

std::optional<SmallVector<int64_t>>
distopt::emit::reshapeStrides(ArrayRef<int64_t> shape,
                              ArrayRef<int64_t> strides,
                              ArrayRef<int64_t> newShape) {
  // Drop unit dims (their stride is irrelevant), then match runs of old
  // dims whose product equals a run of new dims; each old run must be
  // contiguous (stride[i] == stride[i+1] * size[i+1]).
  SmallVector<int64_t> os, ost;
  for (auto [d, s] : llvm::zip(shape, strides))
    if (d != 1) {
      os.push_back(d);
      ost.push_back(s);
    }
  SmallVector<int64_t> out(newShape.size(), 0);
  size_t i = 0, j = 0;
  while (j < newShape.size() || i < os.size()) {
    if (j < newShape.size() && newShape[j] == 1) {
      out[j] = 1; // fixed below
      ++j;
      continue;
    }
    if (i >= os.size() || j >= newShape.size())
      return std::nullopt;
    // Grow an old run and a new run until their products agree.
    size_t i0 = i, j0 = j;
    int64_t po = os[i++], pn = newShape[j++];
    while (po != pn) {
      if (po < pn) {
        if (i >= os.size())
          return std::nullopt;
        po *= os[i++];
      } else {
        while (j < newShape.size() && newShape[j] == 1)
          out[j++] = 1;
        if (j >= newShape.size())
          return std::nullopt;
        pn *= newShape[j++];
      }
    }
    for (size_t k = i0; k + 1 < i; ++k)
      if (ost[k] != ost[k + 1] * os[k + 1])
        return std::nullopt;
    // The new run is row-major inside the old run's innermost stride.
    int64_t s = ost[i - 1];
    for (size_t k = j; k-- > j0;) {
      if (newShape[k] == 1)
        continue;
      out[k] = s;
      s *= newShape[k];
    }
  }
  // Unit dims: any stride works; give the row-major one of their position.
  for (size_t k = 0; k < newShape.size(); ++k)
    if (newShape[k] == 1) {
      int64_t s = 1;
      for (size_t m = k + 1; m < newShape.size(); ++m)
        if (newShape[m] != 1) {
          s = out[m] * newShape[m];
          break;
        }
      out[k] = s;
    }
  return out;
}

std::optional<ViewLayout> distopt::emit::viewLayout(Operation *op,
                                                    unsigned result,
                                                    ArrayRef<int64_t> strides) {
  if (!isViewableOp(op) || op->getNumOperands() < 1)
    return std::nullopt;
  auto in = tensorType(op->getOperand(0));
  if (result >= op->getNumResults())
    return std::nullopt;
  auto out = tensorType(op->getResult(result));
  if (!in || !out || !in.hasStaticShape() || !out.hasStaticShape() ||
      strides.size() != (size_t)in.getRank())
    return std::nullopt;
  ViewLayout v;
  if (isa<g::ReshapeOp, g::FlattenOp, g::DropoutOp>(op)) {
    // No element, no memory: any strides describe it.
    if (out.getNumElements() == 0) {
      v.strides = rowMajorStrides(out.getShape());
      return v;
    }
    if (in.getShape() == out.getShape()) {
      v.strides.assign(strides.begin(), strides.end());
      return v;
    }
    auto s = reshapeStrides(in.getShape(), strides, out.getShape());
    if (!s)
      return std::nullopt;
    v.strides = *s;
    return v;
  }
  if (auto t = dyn_cast<g::TransposeOp>(op)) {
    for (int64_t p : t.getPerm())
      v.strides.push_back(strides[p]);
    return v;
  }
  int64_t rank = in.getRank();
  if (auto s = dyn_cast<g::SliceOp>(op)) {
    v.strides.assign(strides.begin(), strides.end());
    for (auto [k, axis] : llvm::enumerate(s.getAxes())) {
      int64_t a = axis < 0 ? axis + rank : axis;
      int64_t dim = in.getShape()[a];
      int64_t step = s.getSteps().empty() ? 1 : s.getSteps()[k];
      int64_t start = s.getStarts()[k];
      if (start < 0)
        start += dim;
      start = std::clamp<int64_t>(start, 0, dim);
      v.offset += start * strides[a];
      v.strides[a] = strides[a] * step;
    }
    return v;
  }
  if (auto sp = dyn_cast<g::SplitOp>(op)) {
    int64_t axis = sp.getAxis();
    if (axis < 0)
      axis += rank;
    for (unsigned k = 0; k < result; ++k)
      v.offset += tensorType(sp->getResult(k)).getShape()[axis] * strides[axis];
    v.strides.assign(strides.begin(), strides.end());
    return v;
  }
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// In place
//===----------------------------------------------------------------------===//

int distopt::emit::sumCandidate(KernelOp kernel) {
  if (kernel.getKind() != KernelKind::post_ops)
    return -1;
  Operation *anchor = kernel.getAnchor();
  if (!anchor || !anchor->getNextNode())
    return -1;
  Operation *first = anchor->getNextNode();
  auto b = dyn_cast<g::BinaryOp>(first);
  if (!b || b.getKind() != g::BinaryKind::Add)
    return -1;
  auto ops = postOpsOf(first, anchor->getResult(0), anchor);
  if (!ops || ops->size() != 1)
    return -1;
  Value src1 = first->getOperand((*ops)[0].operand);
  auto arg = dyn_cast<BlockArgument>(src1);
  if (!arg || src1.getType() != anchor->getResult(0).getType())
    return -1;
  return arg.getArgNumber();
}

std::optional<unsigned> distopt::emit::accumulatedResult(Operation *fn,
                                                         unsigned arg) {
  // dist.accumulates by name: the emit dialect does not depend on dist.
  auto f = dyn_cast_or_null<FunctionOpInterface>(fn);
  if (!f || arg >= f.getNumArguments())
    return std::nullopt;
  if (auto k = f.getArgAttrOfType<IntegerAttr>(arg, "dist.accumulates"))
    return static_cast<unsigned>(k.getInt());
  return std::nullopt;
}

bool distopt::emit::mayWriteInPlace(Operation *op, unsigned operand,
                                    ArrayRef<int64_t> operandStrides,
                                    ArrayRef<int64_t> resultStrides,
                                    unsigned result) {
  if (auto call = dyn_cast<CallOpInterface>(op)) {
    if (operand >= op->getNumOperands() || result >= op->getNumResults())
      return false;
    std::optional<unsigned> k =
        accumulatedResult(call.resolveCallable(), operand);
    // The callee reads the sum and writes the result row-major.
    auto t = tensorType(op->getResult(result));
    return k == result && t && op->getOperand(operand).getType() == t &&
           sameLayout(t.getShape(), operandStrides, resultStrides) &&
           sameLayout(t.getShape(), resultStrides,
                      rowMajorStrides(t.getShape()));
  }
  if (result != 0)
    return false;
  auto kernel = dyn_cast<KernelOp>(op);
  // dist.all_reduce by name: the emit dialect does not depend on dist.
  bool allReduce = op->getName().getStringRef() == "dist.all_reduce";
  if ((!kernel && !allReduce) || operand >= op->getNumOperands() ||
      op->getNumResults() != 1)
    return false;
  auto in = tensorType(op->getOperand(operand));
  auto out = tensorType(op->getResult(0));
  if (!in || !out || in.getShape() != out.getShape() ||
      elementBytes(in.getElementType()) != elementBytes(out.getElementType()) ||
      !sameLayout(in.getShape(), operandStrides, resultStrides))
    return false;
  if (allReduce)
    return true;
  switch (kernel.getKind()) {
  case KernelKind::loop:
  case KernelKind::eltwise:
    return true;
  case KernelKind::post_ops:
    return sumCandidate(kernel) == (int)operand;
  }
  return false;
}
