//===- GradRulesReduce.cpp - Gradient rules of reductions -------*- C++ -*-===//
//
// Part of DistOpt. Gradient rules of `graph.reduce` (every kind with a
// gradient; the index-valued argmax/argmin are rejected) and `graph.pool`
// (max/avg through one `graph.pool_grad`, L2 through an average-pool
// gradient of dy / y). Dispatched from emitGradient in GradRules.cpp.
//
//===----------------------------------------------------------------------===//
#include "passes/Autodiff/GradBuilder.h"
#include "passes/Autodiff/GradRulesInternal.h"

#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/GraphShapeUtils.h"

using namespace mlir;
using namespace distopt;
using namespace distopt::autodiff;
namespace g = distopt::graph;

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

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

LogicalResult distopt::autodiff::reduceGrad(GradEmitter &e, g::ReduceOp op,
                                            Value dy) {
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

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

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

LogicalResult distopt::autodiff::poolGrad(GradEmitter &e, g::PoolOp p,
                                          Value dy) {
  if (p.getKind() == g::PoolKind::L2)
    return l2PoolGrad(e, p, dy);
  e.give(p.getInput(), [&]() -> Value {
    SmallVector<NamedAttribute> attrs = inherentAttrs(p);
    return g::PoolGradOp::create(e.b, p.getLoc(),
                                 TypeRange{p.getInput().getType()},
                                 ValueRange{p.getInput(), dy}, attrs);
  });
  return success();
}
