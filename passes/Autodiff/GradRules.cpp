//===- GradRules.cpp - Per-op gradient rules --------------------*- C++ -*-===//
//
// Part of DistOpt. One rule per differentiable graph op. Contractions get
// one op per operand gradient (a `graph.matmul` for dX and another for dW,
// `graph.conv_grad_input` and `graph.conv_grad_weight`) so input and weight
// gradients stay separable; broadcast operands get their gradient summed
// back to their shape.
//
//===----------------------------------------------------------------------===//
#include "passes/Autodiff/GradRules.h"
#include "passes/Autodiff/GradBuilder.h"

#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/GraphShapeUtils.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace distopt;
using namespace distopt::autodiff;
namespace g = distopt::graph;

//===----------------------------------------------------------------------===//
// Rules
//===----------------------------------------------------------------------===//

/// Matrix form of a rank-1 matmul operand (numpy: a vector lhs is a row,
/// a vector rhs a column).
static SmallVector<int64_t> matrixShape(RankedTensorType t, bool isLhs) {
  SmallVector<int64_t> s(t.getShape());
  if (s.size() == 1)
    s.insert(isLhs ? s.begin() : s.end(), 1);
  return s;
}

static LogicalResult matmulGrad(GradEmitter &e, g::MatmulOp op, Value dy) {
  OpBuilder &b = e.b;
  Location loc = op.getLoc();
  Value a0 = op.getLhs(), w0 = op.getRhs();
  auto a0t = tensorOf(a0), w0t = tensorOf(w0);
  // A rank-1 operand is differentiated in its matrix form: the operand and
  // dy are reshaped (rank-1 operands are never transposed), and the
  // gradient is reshaped back.
  SmallVector<int64_t> aShape = matrixShape(a0t, true),
                       wShape = matrixShape(w0t, false);
  auto at = RankedTensorType::get(aShape, a0t.getElementType());
  auto wt = RankedTensorType::get(wShape, w0t.getElementType());
  SmallVector<int64_t> dyShape(tensorOf(dy).getShape());
  if (a0t.getRank() == 1)
    dyShape.insert(dyShape.end() - (w0t.getRank() == 1 ? 0 : 1), 1);
  if (w0t.getRank() == 1)
    dyShape.push_back(1);
  auto asMatrix = [&](Value v, ArrayRef<int64_t> shape) {
    return reshape(b, loc, v, shape);
  };
  bool tl = op.getTransposeLhs(), tr = op.getTransposeRhs();
  double alpha = op.getAlpha().convertToDouble();
  e.give(a0, [&]() -> Value {
    Value w = asMatrix(w0, wShape), dy2 = asMatrix(dy, dyShape);
    Value d = tl ? matmul(b, loc, w, dy2, tr, true, alpha)
                 : matmul(b, loc, dy2, w, false, !tr, alpha);
    return reshape(b, loc, sumToShape(b, loc, d, at), a0t.getShape());
  });
  e.give(w0, [&]() -> Value {
    Value a = asMatrix(a0, aShape), dy2 = asMatrix(dy, dyShape);
    // A linear layer (2-D right operand, batched left operand): fold the
    // batch into the rows so the weight gradient is one 2-D product.
    if (wt.getRank() == 2 && at.getRank() > 2 && !tl) {
      int64_t k = at.getShape().back(), n = dyShape.back();
      int64_t rows = tensorOf(dy).getNumElements() / n;
      Value a2 = reshape(b, loc, a, {rows, k});
      Value d2 = reshape(b, loc, dy2, {rows, n});
      Value d = tr ? matmul(b, loc, d2, a2, true, false, alpha)
                   : matmul(b, loc, a2, d2, true, false, alpha);
      return reshape(b, loc, d, w0t.getShape());
    }
    Value d = tr ? matmul(b, loc, dy2, a, true, tl, alpha)
                 : matmul(b, loc, a, dy2, !tl, false, alpha);
    return reshape(b, loc, sumToShape(b, loc, d, wt), w0t.getShape());
  });
  if (Value bias = op.getBias())
    e.give(bias, [&]() -> Value {
      Value d = dy;
      double beta = op.getBeta().convertToDouble();
      if (beta != 1.0)
        d = binary(b, loc, g::BinaryKind::Mul, d,
                   scalar(b, loc, tensorOf(dy).getElementType(), beta));
      return sumToShape(b, loc, d, tensorOf(bias));
    });
  return success();
}

static LogicalResult convGrad(GradEmitter &e, g::ConvOp op, Value dy) {
  OpBuilder &b = e.b;
  Location loc = op.getLoc();
  auto attrs = inherentAttrs(op);
  e.give(op.getInput(), [&]() -> Value {
    return g::ConvGradInputOp::create(b, loc,
                                      TypeRange{op.getInput().getType()},
                                      ValueRange{dy, op.getWeight()}, attrs);
  });
  e.give(op.getWeight(), [&]() -> Value {
    return g::ConvGradWeightOp::create(b, loc,
                                       TypeRange{op.getWeight().getType()},
                                       ValueRange{op.getInput(), dy}, attrs);
  });
  if (Value bias = op.getBias())
    e.give(bias, [&]() -> Value {
      SmallVector<int64_t> axes = {0};
      for (int64_t i = 2; i < tensorOf(dy).getRank(); ++i)
        axes.push_back(i);
      return g::ReduceOp::create(b, loc, bias.getType(), g::ReduceKind::Sum, dy,
                                 axes, false);
    });
  return success();
}

/// layer_norm / rms_norm / batch_norm: one input-gradient op, one
/// parameter-gradient op for scale and bias.
static LogicalResult normGrad(GradEmitter &e, Operation *op, StringRef kind,
                              Value x, Value scale, Value bias, Value dy,
                              int64_t axis, double epsilon) {
  OpBuilder &b = e.b;
  Location loc = op->getLoc();
  SmallVector<NamedAttribute> attrs = {
      b.getNamedAttr("kind", b.getStringAttr(kind)),
      b.getNamedAttr("axis", b.getI64IntegerAttr(axis)),
      b.getNamedAttr("epsilon", b.getF64FloatAttr(epsilon))};
  e.give(x, [&]() -> Value {
    return g::NormGradOp::create(b, loc, TypeRange{x.getType()},
                                 ValueRange{x, scale, dy}, attrs);
  });
  bool wantScale = e.wants(scale), wantBias = bias && e.wants(bias);
  if (!wantScale && !wantBias)
    return success();
  auto xt = tensorOf(x);
  SmallVector<int64_t> paramShape;
  if (kind == "batch")
    paramShape.push_back(xt.getDimSize(1));
  else
    llvm::append_range(paramShape, xt.getShape().drop_front(
                                       *g::normalizeAxis(axis, xt.getRank())));
  auto pt = RankedTensorType::get(paramShape, xt.getElementType());
  SmallVector<Type> types = {pt};
  if (bias)
    types.push_back(pt);
  e.setPhaseFor(wantScale ? scale : bias);
  auto params =
      g::NormGradParamsOp::create(b, loc, types, ValueRange{x, dy}, attrs);
  auto toParam = [&](Value grad, Value param) -> Value {
    auto t = tensorOf(param);
    if (t.getNumElements() == pt.getNumElements())
      return reshape(b, loc, grad, t.getShape());
    return sumToShape(b, loc, grad, t);
  };
  e.give(scale, [&] { return toParam(params.getResult(0), scale); });
  if (bias)
    e.give(bias, [&] { return toParam(params.getResult(1), bias); });
  return success();
}

static LogicalResult binaryGrad(GradEmitter &e, g::BinaryOp op, Value dy) {
  OpBuilder &b = e.b;
  Location loc = op.getLoc();
  Value lhs = op.getLhs(), rhs = op.getRhs();
  auto lt = tensorOf(lhs), rt = tensorOf(rhs);
  using K = g::BinaryKind;
  auto mul = [&](Value x, Value y) { return binary(b, loc, K::Mul, x, y); };
  switch (op.getKind()) {
  case K::Add:
  case K::Sub:
    e.give(lhs, [&] { return sumToShape(b, loc, dy, lt); });
    e.give(rhs, [&] {
      Value d = sumToShape(b, loc, dy, rt);
      return op.getKind() == K::Sub ? unary(b, loc, g::UnaryKind::Neg, d) : d;
    });
    return success();
  case K::Mul:
    e.give(lhs, [&] { return sumToShape(b, loc, mul(dy, rhs), lt); });
    e.give(rhs, [&] { return sumToShape(b, loc, mul(dy, lhs), rt); });
    return success();
  case K::Div:
    e.give(lhs, [&] {
      return sumToShape(b, loc, binary(b, loc, K::Div, dy, rhs), lt);
    });
    e.give(rhs, [&] {
      // d(a/b)/db = -(a/b)/b
      Value q = binary(b, loc, K::Div, mul(dy, op.getResult()), rhs);
      return sumToShape(b, loc, unary(b, loc, g::UnaryKind::Neg, q), rt);
    });
    return success();
  case K::Pow: {
    // d(a^b)/da = b a^(b-1); d(a^b)/db = a^b log(a) for a > 0 and 0
    // elsewhere (PyTorch gives NaN for a < 0, where a real a^b exists only
    // for integer b and has no derivative in b, and 0 for a = 0, b >= 0).
    e.give(lhs, [&] {
      Value one = scalar(b, loc, rt.getElementType(), 1.0);
      Value p = binary(b, loc, K::Pow, lhs, binary(b, loc, K::Sub, rhs, one));
      Value r = castTo(b, loc, rhs, lt.getElementType());
      return sumToShape(b, loc, mul(mul(dy, r), p), lt);
    });
    e.give(rhs, [&] {
      Type elt = lt.getElementType();
      Value zero = scalar(b, loc, elt, 0.0);
      Value positive = binary(b, loc, K::Greater, lhs, zero);
      Value safe = where(b, loc, positive, lhs, scalar(b, loc, elt, 1.0));
      Value d =
          mul(mul(dy, op.getResult()), unary(b, loc, g::UnaryKind::Log, safe));
      d = where(b, loc, positive, d, zero);
      return sumToShape(b, loc, castTo(b, loc, d, rt.getElementType()), rt);
    });
    return success();
  }
  case K::PRelu: {
    // y = x < 0 ? slope * x : x (ONNX PRelu).
    Value zero = scalar(b, loc, lt.getElementType(), 0.0);
    e.give(lhs, [&] {
      Value neg = binary(b, loc, K::Less, lhs, zero);
      return sumToShape(b, loc, where(b, loc, neg, mul(dy, rhs), dy), lt);
    });
    e.give(rhs, [&] {
      Value neg = binary(b, loc, K::Less, lhs, zero);
      return sumToShape(b, loc, where(b, loc, neg, mul(dy, lhs), zero), rt);
    });
    return success();
  }
  case K::Mod: {
    // a mod b = a - q b with q = floor(a / b) (Python) or trunc(a / b)
    // (fmod): da = dy, db = -q dy (PyTorch remainder / fmod).
    if (!isa<FloatType>(lt.getElementType()))
      break;
    e.give(lhs, [&] { return sumToShape(b, loc, dy, lt); });
    e.give(rhs, [&] {
      Value q = binary(b, loc, K::Div, lhs, rhs);
      if (op.getFmod()) {
        Value neg = binary(b, loc, K::Less, q,
                           scalar(b, loc, lt.getElementType(), 0.0));
        q = where(b, loc, neg, unary(b, loc, g::UnaryKind::Ceil, q),
                  unary(b, loc, g::UnaryKind::Floor, q));
      } else {
        q = unary(b, loc, g::UnaryKind::Floor, q);
      }
      return sumToShape(b, loc, unary(b, loc, g::UnaryKind::Neg, mul(dy, q)),
                        rt);
    });
    return success();
  }
  case K::Max:
  case K::Min: {
    // The gradient goes to the operand that was selected (lhs on ties).
    K cmp = op.getKind() == K::Max ? K::GreaterEqual : K::LessEqual;
    Value zero = scalar(b, loc, lt.getElementType(), 0.0);
    e.give(lhs, [&] {
      Value pick = binary(b, loc, cmp, lhs, rhs);
      return sumToShape(b, loc, where(b, loc, pick, dy, zero), lt);
    });
    e.give(rhs, [&] {
      Value pick = binary(b, loc, cmp, lhs, rhs);
      return sumToShape(b, loc, where(b, loc, pick, zero, dy), rt);
    });
    return success();
  }
  default:
    break;
  }
  return op.emitOpError("'")
         << g::stringifyBinaryKind(op.getKind())
         << "' is not differentiable: autodiff cannot pass a gradient "
            "through it to the weights; keep it off the path from the "
            "weights to the loss";
}

/// Gradient of a reduction of `x` to `y` over `axes`. max/min share the
/// gradient evenly among tied extreme positions (PyTorch's amax/amin);
/// prod divides the product of the nonzero elements by the element where
/// no element is zero, and otherwise routes it to the single zero (two or
/// more zeros: 0), so zeros never cause a division by zero.
static Value reduceInputGrad(OpBuilder &b, Location loc, g::ReduceOp op,
                             Value dy, ArrayRef<int64_t> axes, double count) {
  using K = g::BinaryKind;
  Value x = op.getInput();
  auto xt = tensorOf(x);
  Type elt = xt.getElementType();
  SmallVector<int64_t> keptShape(xt.getShape());
  for (int64_t a : axes)
    keptShape[a] = 1;
  auto keptType = RankedTensorType::get(keptShape, elt);
  auto kept = [&](Value v) { return reshape(b, loc, v, keptShape); };
  auto sumKept = [&](Value v) -> Value {
    return g::ReduceOp::create(b, loc, keptType, g::ReduceKind::Sum, v, axes,
                               true);
  };
  auto mul = [&](Value l, Value r) { return binary(b, loc, K::Mul, l, r); };
  auto div = [&](Value l, Value r) { return binary(b, loc, K::Div, l, r); };
  auto zero = [&] { return scalar(b, loc, elt, 0.0); };
  auto one = [&] { return scalar(b, loc, elt, 1.0); };
  Value d = broadcastBack(b, loc, dy, xt, axes);
  switch (op.getKind()) {
  case g::ReduceKind::Sum:
    return d;
  case g::ReduceKind::Mean:
    return mul(d, scalar(b, loc, elt, 1 / count));
  case g::ReduceKind::SumSquare:
    return mul(mul(d, x), scalar(b, loc, elt, 2.0));
  case g::ReduceKind::Max:
  case g::ReduceKind::Min: {
    Value hit = binary(b, loc, K::Equal, x, kept(op.getResult()));
    Value mask = where(b, loc, hit, one(), zero());
    return mul(d, div(mask, sumKept(mask)));
  }
  case g::ReduceKind::Prod: {
    Value z = zero(), o = one();
    Value isZero = binary(b, loc, K::Equal, x, z);
    Value nonzero = where(b, loc, isZero, o, x);
    Value prodNonzero = g::ReduceOp::create(
        b, loc, keptType, g::ReduceKind::Prod, nonzero, axes, true);
    Value zeros = sumKept(where(b, loc, isZero, o, z));
    Value others = where(b, loc, binary(b, loc, K::Equal, zeros, z),
                         div(prodNonzero, nonzero),
                         where(b, loc, binary(b, loc, K::Equal, zeros, o),
                               where(b, loc, isZero, prodNonzero, z), z));
    return mul(d, others);
  }
  case g::ReduceKind::L1:
    return mul(d, unary(b, loc, g::UnaryKind::Sign, x));
  case g::ReduceKind::L2: {
    // x / ||x||, 0 where the norm is 0 (PyTorch's masked norm backward).
    Value y = kept(op.getResult());
    Value z = zero();
    Value isZero = binary(b, loc, K::Equal, y, z);
    Value safe = where(b, loc, isZero, one(), y);
    return where(b, loc, isZero, z, mul(d, div(x, safe)));
  }
  case g::ReduceKind::LogSum:
    return div(d, sumKept(x));
  case g::ReduceKind::LogSumExp:
    return mul(d, unary(b, loc, g::UnaryKind::Exp,
                        binary(b, loc, K::Sub, x, kept(op.getResult()))));
  case g::ReduceKind::ArgMax:
  case g::ReduceKind::ArgMin:
    break;
  }
  return Value();
}

static LogicalResult reduceGrad(GradEmitter &e, g::ReduceOp op, Value dy) {
  auto xt = tensorOf(op.getInput());
  SmallVector<int64_t> axes;
  for (int64_t a : op.getAxes())
    axes.push_back(*g::normalizeAxis(a, xt.getRank()));
  if (axes.empty())
    for (int64_t i = 0; i < xt.getRank(); ++i)
      axes.push_back(i);
  double count = 1;
  for (int64_t a : axes)
    count *= xt.getDimSize(a);
  if (op.getKind() == g::ReduceKind::ArgMax ||
      op.getKind() == g::ReduceKind::ArgMin)
    return op.emitOpError("reduction '")
           << g::stringifyReduceKind(op.getKind())
           << "' yields indices and has no gradient; keep it off the path "
              "from the weights to the loss";
  e.give(op.getInput(), [&]() -> Value {
    return reduceInputGrad(e.b, op.getLoc(), op, dy, axes, count);
  });
  return success();
}

/// Gradient of a strided slice: along each sliced axis, dy is spread back
/// to the positions it was read from. A negative step is a positive one
/// over reversed dy; a step s > 1 interleaves s - 1 zeros after each
/// element (reshape to [.., n, 1, ..], pad to [.., n, s, ..], reshape to
/// [.., n*s, ..]); one constant pad (or a trim of the interleaved tail)
/// then places the result at its start.
static LogicalResult sliceGrad(GradEmitter &e, g::SliceOp op, Value dy) {
  auto xt = tensorOf(op.getInput());
  int64_t rank = xt.getRank();
  e.give(op.getInput(), [&]() -> Value {
    OpBuilder &b = e.b;
    Location loc = op.getLoc();
    Type elt = xt.getElementType();
    if (tensorOf(dy).getNumElements() == 0)
      return g::ConstantOp::create(
          b, loc, xt, DenseElementsAttr::get(xt, b.getFloatAttr(elt, 0.0)));
    SmallVector<int64_t> pads(2 * rank, 0);
    Value d = dy;
    for (auto [i, axis] : llvm::enumerate(op.getAxes())) {
      int64_t ax = *g::normalizeAxis(axis, rank), dim = xt.getDimSize(ax);
      int64_t step = op.getSteps()[i], start = op.getStarts()[i];
      int64_t n = tensorOf(d).getDimSize(ax);
      if (start < 0)
        start += dim;
      start = step > 0 ? std::clamp<int64_t>(start, 0, dim)
                       : std::clamp<int64_t>(start, 0, dim - 1);
      SmallVector<int64_t> shape(tensorOf(d).getShape());
      if (step < 0) {
        // Reversed dy: element k of the slice read x[start + k*step].
        d = g::SliceOp::create(
            b, loc, tensorOf(d), d, b.getDenseI64ArrayAttr({n - 1}),
            b.getDenseI64ArrayAttr({-n - 1}), b.getDenseI64ArrayAttr({ax}),
            b.getDenseI64ArrayAttr({-1}));
        start += (n - 1) * step;
        step = -step;
      }
      if (step > 1) {
        SmallVector<int64_t> split(shape);
        split.insert(split.begin() + ax + 1, 1);
        d = reshape(b, loc, d, split);
        SmallVector<int64_t> spread(split), gap(2 * (rank + 1), 0);
        spread[ax + 1] = step;
        gap[rank + 1 + ax + 1] = step - 1;
        d = g::PadOp::create(b, loc, RankedTensorType::get(spread, elt), d, gap,
                             g::PadMode::Constant, llvm::APFloat(0.0));
        shape[ax] = n * step;
        d = reshape(b, loc, d, shape);
      }
      int64_t length = shape[ax], tail = dim - start - length;
      if (tail < 0) {
        // The interleaved zeros after the last element run past the end.
        SmallVector<int64_t> trimmed(shape);
        trimmed[ax] = length + tail;
        d = g::SliceOp::create(b, loc, RankedTensorType::get(trimmed, elt), d,
                               b.getDenseI64ArrayAttr({0}),
                               b.getDenseI64ArrayAttr({length + tail}),
                               b.getDenseI64ArrayAttr({ax}),
                               b.getDenseI64ArrayAttr({1}));
        tail = 0;
      }
      pads[ax] = start;
      pads[rank + ax] = tail;
    }
    if (llvm::all_of(pads, [](int64_t p) { return p == 0; }))
      return d;
    return g::PadOp::create(b, loc, xt, d, pads, g::PadMode::Constant,
                            llvm::APFloat(0.0));
  });
  return success();
}

/// L2 pooling, y = sqrt(sum over the window of x^2): dx = x * (sum over
/// the windows holding x of dy / y), 0 where y = 0. The window sum is an
/// average pool gradient over all kernel positions (padding included)
/// times the kernel size.
static LogicalResult l2PoolGrad(GradEmitter &e, g::PoolOp p, Value dy) {
  OpBuilder &b = e.b;
  Location loc = p.getLoc();
  Value x = p.getInput(), y = p.getResult();
  auto xt = tensorOf(x);
  Type elt = xt.getElementType();
  double window = 1;
  if (p.getGlobal())
    for (int64_t d : xt.getShape().drop_front(2))
      window *= d;
  else
    for (int64_t k : p.getKernel())
      window *= k;
  e.give(x, [&]() -> Value {
    Value zero = scalar(b, loc, elt, 0.0);
    Value isZero = binary(b, loc, g::BinaryKind::Equal, y, zero);
    Value safe = where(b, loc, isZero, scalar(b, loc, elt, 1.0), y);
    Value gy = where(b, loc, isZero, zero,
                     binary(b, loc, g::BinaryKind::Div, dy, safe));
    gy = binary(b, loc, g::BinaryKind::Mul, gy, scalar(b, loc, elt, window));
    SmallVector<NamedAttribute> attrs;
    for (NamedAttribute a : inherentAttrs(p))
      if (a.getName() != "kind" && a.getName() != "count_include_pad")
        attrs.push_back(a);
    attrs.push_back(b.getNamedAttr(
        "kind", g::PoolKindAttr::get(b.getContext(), g::PoolKind::Avg)));
    attrs.push_back(b.getNamedAttr("count_include_pad", b.getUnitAttr()));
    Value sum =
        g::PoolGradOp::create(b, loc, TypeRange{xt}, ValueRange{x, gy}, attrs);
    return binary(b, loc, g::BinaryKind::Mul, sum, x);
  });
  return success();
}

/// `v[begin:end]` along `axis`.
static Value sliceAxis(OpBuilder &b, Location loc, Value v, int64_t axis,
                       int64_t begin, int64_t end) {
  SmallVector<int64_t> shape(tensorOf(v).getShape());
  shape[axis] = end - begin;
  return g::SliceOp::create(
      b, loc, RankedTensorType::get(shape, tensorOf(v).getElementType()), v,
      b.getDenseI64ArrayAttr({begin}), b.getDenseI64ArrayAttr({end}),
      b.getDenseI64ArrayAttr({axis}), b.getDenseI64ArrayAttr({1}));
}

/// `v` reversed along `axis` (a step -1 slice through index 0).
static Value reverseAxis(OpBuilder &b, Location loc, Value v, int64_t axis) {
  int64_t n = tensorOf(v).getDimSize(axis);
  return g::SliceOp::create(
      b, loc, v.getType(), v, b.getDenseI64ArrayAttr({n - 1}),
      b.getDenseI64ArrayAttr({-n - 1}), b.getDenseI64ArrayAttr({axis}),
      b.getDenseI64ArrayAttr({-1}));
}

/// `v` summed along `axis`, kept as a size-1 dimension.
static Value sumAxis(OpBuilder &b, Location loc, Value v, int64_t axis) {
  auto t = tensorOf(v);
  SmallVector<int64_t> shape(t.getShape());
  shape[axis] = 1;
  return g::ReduceOp::create(
      b, loc, RankedTensorType::get(shape, t.getElementType()),
      g::ReduceKind::Sum, v, ArrayRef<int64_t>{axis}, true);
}

/// `v` with `before` and `after` zeros along `axis`.
static Value zeroPadAxis(OpBuilder &b, Location loc, Value v, int64_t axis,
                         int64_t before, int64_t after) {
  auto t = tensorOf(v);
  int64_t rank = t.getRank();
  SmallVector<int64_t> pads(2 * rank, 0), shape(t.getShape());
  pads[axis] = before;
  pads[rank + axis] = after;
  shape[axis] += before + after;
  return g::PadOp::create(b, loc,
                          RankedTensorType::get(shape, t.getElementType()), v,
                          pads, g::PadMode::Constant, llvm::APFloat(0.0));
}

/// Gradient of edge / reflect / wrap padding. Such a pad is a 1-D pad per
/// axis, so its gradient folds one axis at a time: the centre of dy, plus
/// each border added back where it was read from (edge: its sum onto the
/// first/last element; reflect: reversed, onto x[1..b] / x[n-1-e..n-2];
/// wrap: onto the last b / first e elements).
static std::optional<LogicalResult> borderPadGrad(GradEmitter &e, g::PadOp p,
                                                  Value dy) {
  auto xt = tensorOf(p.getInput());
  int64_t rank = xt.getRank();
  ArrayRef<int64_t> pads = p.getPads();
  g::PadMode mode = p.getMode();
  for (int64_t a = 0; a < rank; ++a) {
    // Edge pads may be any length; reflect reads x[1..n-1], wrap x[0..n).
    int64_t n = xt.getDimSize(a), limit = INT64_MAX;
    if (mode == g::PadMode::Reflect)
      limit = n - 1;
    else if (mode == g::PadMode::Wrap)
      limit = n;
    for (int64_t pad : {pads[a], pads[rank + a]})
      if (pad < 0 || pad > limit)
        return p.emitOpError("autodiff supports '")
               << g::stringifyPadMode(mode)
               << "' padding with non-negative pads"
               << (limit == INT64_MAX ? std::string()
                                      : " up to " + std::to_string(limit))
               << " only (axis " << a << " pads " << pad
               << "); pad in steps or keep it off the path from the weights "
                  "to the loss";
  }
  e.give(p.getInput(), [&]() -> Value {
    OpBuilder &b = e.b;
    Location loc = p.getLoc();
    Value d = dy;
    for (int64_t a = 0; a < rank; ++a) {
      int64_t n = xt.getDimSize(a), lo = pads[a], hi = pads[rank + a];
      if (lo == 0 && hi == 0)
        continue;
      Value acc = sliceAxis(b, loc, d, a, lo, lo + n);
      auto add = [&](Value part, int64_t before) {
        int64_t len = tensorOf(part).getDimSize(a);
        acc = binary(b, loc, g::BinaryKind::Add, acc,
                     zeroPadAxis(b, loc, part, a, before, n - before - len));
      };
      if (lo > 0) {
        Value left = sliceAxis(b, loc, d, a, 0, lo);
        if (mode == g::PadMode::Edge)
          add(sumAxis(b, loc, left, a), 0);
        else if (mode == g::PadMode::Reflect)
          add(reverseAxis(b, loc, left, a), 1);
        else
          add(left, n - lo);
      }
      if (hi > 0) {
        Value right = sliceAxis(b, loc, d, a, lo + n, lo + n + hi);
        if (mode == g::PadMode::Edge)
          add(sumAxis(b, loc, right, a), n - 1);
        else if (mode == g::PadMode::Reflect)
          add(reverseAxis(b, loc, right, a), n - 1 - hi);
        else
          add(right, 0);
      }
      d = acc;
    }
    return d;
  });
  return success();
}

/// Slice of `dy` along `axis` from `begin`, of `type`'s shape.
static Value sliceAlong(OpBuilder &b, Location loc, Value dy, int64_t axis,
                        int64_t begin, RankedTensorType type) {
  int64_t size = type.getDimSize(axis);
  return g::SliceOp::create(
      b, loc,
      RankedTensorType::get(type.getShape(), tensorOf(dy).getElementType()), dy,
      b.getDenseI64ArrayAttr({begin}), b.getDenseI64ArrayAttr({begin + size}),
      b.getDenseI64ArrayAttr({axis}), b.getDenseI64ArrayAttr({1}));
}

/// Gradients of views and data movement; nullopt for other ops.
static std::optional<LogicalResult> dataGrad(GradEmitter &e, Operation *op,
                                             ArrayRef<Value> dys) {
  OpBuilder &b = e.b;
  Location loc = op->getLoc();
  Value dy = dys.empty() ? Value() : dys[0];
  using Result = std::optional<LogicalResult>;
  return TypeSwitch<Operation *, Result>(op)
      .Case<g::ReshapeOp, g::FlattenOp>([&](Operation *) {
        e.give(op->getOperand(0), [&] {
          return reshape(b, loc, dy, tensorOf(op->getOperand(0)).getShape());
        });
        return success();
      })
      .Case<g::ExpandOp>([&](g::ExpandOp ex) {
        e.give(ex.getInput(),
               [&] { return sumToShape(b, loc, dy, tensorOf(ex.getInput())); });
        return success();
      })
      .Case<g::TransposeOp>([&](g::TransposeOp t) {
        SmallVector<int64_t> inverse(t.getPerm().size());
        for (auto [i, p] : llvm::enumerate(t.getPerm()))
          inverse[p] = i;
        e.give(t.getInput(), [&]() -> Value {
          return g::TransposeOp::create(b, loc, t.getInput().getType(), dy,
                                        b.getDenseI64ArrayAttr(inverse));
        });
        return success();
      })
      .Case<g::SliceOp>([&](g::SliceOp s) { return sliceGrad(e, s, dy); })
      .Case<g::ConcatOp>([&](g::ConcatOp c) {
        int64_t axis = *g::normalizeAxis(c.getAxis(), tensorOf(dy).getRank());
        int64_t offset = 0;
        for (Value in : c.getInputs()) {
          e.give(in, [&] {
            return sliceAlong(b, loc, dy, axis, offset, tensorOf(in));
          });
          offset += tensorOf(in).getDimSize(axis);
        }
        return success();
      })
      .Case<g::SplitOp>([&](g::SplitOp s) {
        e.give(s.getInput(), [&]() -> Value {
          SmallVector<Value> parts;
          for (auto [r, d] : llvm::zip(s.getResults(), dys)) {
            if (d) {
              parts.push_back(d);
              continue;
            }
            auto t = tensorOf(r);
            parts.push_back(g::ConstantOp::create(
                b, loc, t,
                DenseElementsAttr::get(
                    t, b.getFloatAttr(t.getElementType(), 0.0))));
          }
          return g::ConcatOp::create(b, loc, s.getInput().getType(), parts,
                                     s.getAxisAttr());
        });
        return success();
      })
      .Case<g::PadOp>([&](g::PadOp p) -> Result {
        if (p.getMode() != g::PadMode::Constant)
          return borderPadGrad(e, p, dy);
        // dx: dy without the added border (a slice) and with zeros where
        // negative pads cropped x (a pad).
        auto xt = tensorOf(p.getInput());
        int64_t rank = xt.getRank();
        ArrayRef<int64_t> pads = p.getPads();
        e.give(p.getInput(), [&]() -> Value {
          Value d = dy;
          SmallVector<int64_t> starts, ends, axes, steps, shape, back(2 * rank);
          for (int64_t i = 0; i < rank; ++i) {
            int64_t lo = std::max<int64_t>(pads[i], 0),
                    hi = std::max<int64_t>(pads[rank + i], 0);
            int64_t len = tensorOf(dy).getDimSize(i) - lo - hi;
            starts.push_back(lo);
            ends.push_back(lo + len);
            axes.push_back(i);
            steps.push_back(1);
            shape.push_back(len);
            back[i] = std::max<int64_t>(-pads[i], 0);
            back[rank + i] = std::max<int64_t>(-pads[rank + i], 0);
          }
          if (ArrayRef<int64_t>(shape) != tensorOf(dy).getShape())
            d = g::SliceOp::create(
                b, loc, RankedTensorType::get(shape, xt.getElementType()), d,
                b.getDenseI64ArrayAttr(starts), b.getDenseI64ArrayAttr(ends),
                b.getDenseI64ArrayAttr(axes), b.getDenseI64ArrayAttr(steps));
          if (llvm::any_of(back, [](int64_t v) { return v != 0; }))
            d = g::PadOp::create(b, loc, xt, d, back, g::PadMode::Constant,
                                 llvm::APFloat(0.0));
          return d;
        });
        return success();
      })
      .Case<g::TriluOp>([&](g::TriluOp t) {
        e.give(t.getInput(), [&]() -> Value {
          return g::TriluOp::create(b, loc, TypeRange{t.getType()},
                                    ValueRange{dy}, inherentAttrs(t));
        });
        return success();
      })
      .Case<g::GatherOp>([&](g::GatherOp ga) {
        e.give(ga.getData(), [&]() -> Value {
          return g::ScatterAddOp::create(b, loc, ga.getData().getType(),
                                         ga.getIndices(), dy, ga.getAxisAttr());
        });
        return success();
      })
      .Case<g::EmbeddingOp>([&](g::EmbeddingOp em) {
        e.give(em.getTable(), [&]() -> Value {
          return g::ScatterAddOp::create(b, loc, em.getTable().getType(),
                                         em.getIndices(), dy,
                                         b.getI64IntegerAttr(0));
        });
        return success();
      })
      .Default([&](Operation *) { return std::nullopt; });
}

LogicalResult distopt::autodiff::emitGradient(GradEmitter &e, Operation *op,
                                              ArrayRef<Value> dys) {
  OpBuilder &b = e.b;
  Location loc = op->getLoc();
  Value dy = dys.empty() ? Value() : dys[0];
  auto unsupported = [&]() {
    return op->emitOpError()
           << "is not differentiable: it lies on the path from the weights "
              "to the loss and autodiff has no gradient rule for it; replace "
              "it with differentiable graph ops or keep it off that path";
  };
  if (isa<g::OpaqueOp>(op))
    return op->emitOpError()
           << "(ONNX '" << cast<g::OpaqueOp>(op).getOpType()
           << "') is opaque and not differentiable, but it lies on the path "
              "from the weights to the loss; teach the importer this op or "
              "keep it off that path";
  if (std::optional<LogicalResult> r = dataGrad(e, op, dys))
    return *r;
  return TypeSwitch<Operation *, LogicalResult>(op)
      .Case<g::MatmulOp>([&](g::MatmulOp m) { return matmulGrad(e, m, dy); })
      .Case<g::ConvOp>([&](g::ConvOp c) { return convGrad(e, c, dy); })
      .Case<g::ReduceOp>([&](g::ReduceOp r) { return reduceGrad(e, r, dy); })
      .Case<g::UnaryOp>([&](g::UnaryOp u) -> LogicalResult {
        if (u.getKind() == g::UnaryKind::Not ||
            u.getKind() == g::UnaryKind::IsNaN ||
            u.getKind() == g::UnaryKind::IsInf)
          return unsupported();
        e.give(u.getInput(), [&]() -> Value {
          return g::UnaryGradOp::create(b, loc, TypeRange{u.getType()},
                                        ValueRange{u.getInput(), dy},
                                        inherentAttrs(u));
        });
        return success();
      })
      .Case<g::BinaryOp>([&](g::BinaryOp bo) { return binaryGrad(e, bo, dy); })
      .Case<g::WhereOp>([&](g::WhereOp w) {
        Value zero = scalar(b, loc, tensorOf(dy).getElementType(), 0.0);
        e.give(w.getLhs(), [&] {
          return sumToShape(b, loc, where(b, loc, w.getCondition(), dy, zero),
                            tensorOf(w.getLhs()));
        });
        e.give(w.getRhs(), [&] {
          return sumToShape(b, loc, where(b, loc, w.getCondition(), zero, dy),
                            tensorOf(w.getRhs()));
        });
        return success();
      })
      .Case<g::ClipOp>([&](g::ClipOp c) {
        e.give(c.getInput(), [&]() -> Value {
          Type elt = tensorOf(dy).getElementType();
          Value zero = scalar(b, loc, elt, 0.0), d = dy;
          if (auto lo = c.getMin())
            d = where(b, loc,
                      binary(b, loc, g::BinaryKind::Less, c.getInput(),
                             scalar(b, loc, elt, lo->convertToDouble())),
                      zero, d);
          if (auto hi = c.getMax())
            d = where(b, loc,
                      binary(b, loc, g::BinaryKind::Greater, c.getInput(),
                             scalar(b, loc, elt, hi->convertToDouble())),
                      zero, d);
          return d;
        });
        return success();
      })
      .Case<g::CastOp>([&](g::CastOp c) {
        e.give(c.getInput(), [&]() -> Value {
          return g::CastOp::create(b, loc, c.getInput().getType(), dy);
        });
        return success();
      })
      .Case<g::DropoutOp>([&](g::DropoutOp d) -> LogicalResult {
        if (d.getRatio().convertToDouble() != 0)
          return d.emitOpError("training dropout must be rewritten to a "
                               "graph.dropout_mask multiply before autodiff");
        e.give(d.getInput(), [&] { return dy; });
        return success();
      })
      .Case<g::SoftmaxOp>([&](g::SoftmaxOp s) {
        e.give(s.getInput(), [&]() -> Value {
          return g::SoftmaxGradOp::create(b, loc, TypeRange{s.getType()},
                                          ValueRange{s.getResult(), dy},
                                          inherentAttrs(s));
        });
        return success();
      })
      .Case<g::LayerNormOp>([&](g::LayerNormOp n) {
        return normGrad(e, n, "layer", n.getInput(), n.getScale(), n.getBias(),
                        dy, n.getAxis(), n.getEpsilon().convertToDouble());
      })
      .Case<g::RMSNormOp>([&](g::RMSNormOp n) {
        return normGrad(e, n, "rms", n.getInput(), n.getScale(), n.getBias(),
                        dy, n.getAxis(), n.getEpsilon().convertToDouble());
      })
      .Case<g::BatchNormOp>([&](g::BatchNormOp n) -> LogicalResult {
        if (!n.getTraining())
          return n.emitOpError("inference-form batch_norm cannot be trained; "
                               "autodiff converts it to the training form "
                               "first");
        if (!dy)
          return success();
        return normGrad(e, n, "batch", n.getInput(), n.getScale(), n.getBias(),
                        dy, 1, n.getEpsilon().convertToDouble());
      })
      .Case<g::PoolOp>([&](g::PoolOp p) -> LogicalResult {
        if (p.getKind() == g::PoolKind::L2)
          return l2PoolGrad(e, p, dy);
        e.give(p.getInput(), [&]() -> Value {
          SmallVector<NamedAttribute> attrs = inherentAttrs(p);
          return g::PoolGradOp::create(b, loc,
                                       TypeRange{p.getInput().getType()},
                                       ValueRange{p.getInput(), dy}, attrs);
        });
        return success();
      })
      .Case<g::SoftmaxCrossEntropyOp>([&](g::SoftmaxCrossEntropyOp l) {
        e.give(l.getLogits(), [&]() -> Value {
          return g::SoftmaxCrossEntropyGradOp::create(
              b, loc, TypeRange{l.getLogits().getType()},
              ValueRange{l.getLogits(), l.getLabels(), dy}, inherentAttrs(l));
        });
        return success();
      })
      .Default([&](Operation *) { return unsupported(); });
}
