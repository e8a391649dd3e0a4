//===- GradRulesScatter.cpp - Gradient rules of scatters --------*- C++ -*-===//
//
// Part of DistOpt. Gradient rules of `graph.scatter_elements` and
// `graph.scatter_nd` with every reduction, following PyTorch's
// `scatter_reduce(..., include_self=True)`. Both ops share one rule: it
// needs only "scatter with this op's indices" and "gather at this op's
// indices" (scatter_elements / gather_elements along the axis, scatter_nd /
// gather_nd at the tuples), so each reduction is built from those two and
// element-wise graph ops, with no new op to lower. Dispatched from
// emitGradient in GradRules.cpp.
//
//===----------------------------------------------------------------------===//
#include "passes/Autodiff/GradBuilder.h"
#include "passes/Autodiff/GradRulesInternal.h"

#include "dialects/Graph/GraphOps.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace distopt;
using namespace distopt::autodiff;
namespace g = distopt::graph;

namespace {
/// One scatter of `updates` into `data` (result `result`, gradient `dy`)
/// and the two index-driven builders its gradient needs.
struct Scatter {
  Operation *op;
  g::ScatterReduction reduction;
  Value data, updates, result, dy;
  /// `base` (data's shape) with `values` (updates' shape) combined into it
  /// by `red` at the op's indices.
  function_ref<Value(g::ScatterReduction red, Value base, Value values)>
      scatter;
  /// `full` (data's shape) read at the op's indices (updates' shape).
  function_ref<Value(Value full)> gather;
};
} // namespace

/// max / min: every contributor equal to the result (the data element and
/// each update written there) shares the position's dy evenly, as PyTorch's
/// amax/amin scatter_reduce backward does. The count of contributors is a
/// scatter-add of the updates' hits into the data's hits (a position no
/// update reaches counts its data element alone, so it keeps its dy).
static void extremumGrad(GradEmitter &e, const Scatter &s) {
  OpBuilder &b = e.b;
  Location loc = s.op->getLoc();
  Type elt = tensorOf(s.data).getElementType();
  // The shares serve both gradients: they take the phase of the result's
  // gradient (input work when the result depends on the function's
  // arguments), so neither a data nor an update gradient reads a later
  // phase's value.
  e.setPhaseFor(s.result);
  Value one = scalar(b, loc, elt, 1.0), zero = scalar(b, loc, elt, 0.0);
  auto hits = [&](Value v, Value extremum) {
    return where(b, loc, binary(b, loc, g::BinaryKind::Equal, v, extremum), one,
                 zero);
  };
  Value dataHit = hits(s.data, s.result);
  Value updateHit = hits(s.updates, s.gather(s.result));
  Value count = s.scatter(g::ScatterReduction::Add, dataHit, updateHit);
  Value share = binary(b, loc, g::BinaryKind::Div, s.dy, count);
  e.give(s.data,
         [&] { return binary(b, loc, g::BinaryKind::Mul, dataHit, share); });
  e.give(s.updates, [&] {
    return binary(b, loc, g::BinaryKind::Mul, updateHit, s.gather(share));
  });
}

/// mul: a position's result is its data element times every update written
/// there. The data element's derivative is the product of those updates,
/// which is the scatter itself applied to dy (no division). An update's is
/// the product of the position's other factors: with no zero among them
/// all, the product of the factors divided by the update; with exactly one
/// zero, the product of the nonzero factors at that zero and 0 at the
/// others; with two or more, 0 everywhere. The products and zero counts are
/// scatters of the zero-masked factors, so a division is only ever by a
/// nonzero update (PyTorch's prod rule has the same cases).
static void productGrad(GradEmitter &e, const Scatter &s) {
  OpBuilder &b = e.b;
  Location loc = s.op->getLoc();
  e.give(s.data,
         [&] { return s.scatter(g::ScatterReduction::Mul, s.dy, s.updates); });
  e.give(s.updates, [&]() -> Value {
    using K = g::BinaryKind;
    Type elt = tensorOf(s.data).getElementType();
    Value one = scalar(b, loc, elt, 1.0), zero = scalar(b, loc, elt, 0.0);
    Value dataZero = binary(b, loc, K::Equal, s.data, zero);
    Value updateZero = binary(b, loc, K::Equal, s.updates, zero);
    Value nonzeroUpdates = where(b, loc, updateZero, one, s.updates);
    Value product = s.gather(s.scatter(g::ScatterReduction::Mul,
                                       where(b, loc, dataZero, one, s.data),
                                       nonzeroUpdates));
    Value zeros = s.gather(s.scatter(g::ScatterReduction::Add,
                                     where(b, loc, dataZero, one, zero),
                                     where(b, loc, updateZero, one, zero)));
    Value others = where(
        b, loc, updateZero,
        where(b, loc, binary(b, loc, K::Equal, zeros, one), product, zero),
        where(b, loc, binary(b, loc, K::Equal, zeros, zero),
              binary(b, loc, K::Div, product, nonzeroUpdates), zero));
    return binary(b, loc, K::Mul, s.gather(s.dy), others);
  });
}

/// The gradients of one scatter. add: every data element reaches the result
/// once, so the data gets dy; none: the scattered positions were
/// overwritten, so the data gets dy with zeros scattered there. With none
/// and add each update went to one position unchanged: dy read there (with
/// none and repeated indices every duplicate gets its position's dy, as in
/// PyTorch).
static void reductionGrad(GradEmitter &e, const Scatter &s) {
  switch (s.reduction) {
  case g::ScatterReduction::None:
  case g::ScatterReduction::Add:
    e.give(s.data, [&]() -> Value {
      if (s.reduction == g::ScatterReduction::Add)
        return s.dy;
      auto ut = tensorOf(s.updates);
      Value zeros = g::ConstantOp::create(
          e.b, s.op->getLoc(), ut,
          DenseElementsAttr::get(ut,
                                 e.b.getFloatAttr(ut.getElementType(), 0.0)));
      return s.scatter(g::ScatterReduction::None, s.dy, zeros);
    });
    e.give(s.updates, [&] { return s.gather(s.dy); });
    return;
  case g::ScatterReduction::Mul:
    return productGrad(e, s);
  case g::ScatterReduction::Max:
  case g::ScatterReduction::Min:
    return extremumGrad(e, s);
  }
}

std::optional<LogicalResult>
distopt::autodiff::scatterGrad(GradEmitter &e, Operation *op, Value dy) {
  OpBuilder &b = e.b;
  Location loc = op->getLoc();
  using Result = std::optional<LogicalResult>;
  return TypeSwitch<Operation *, Result>(op)
      .Case<g::ScatterElementsOp>([&](g::ScatterElementsOp sc) -> Result {
        auto scatter = [&](g::ScatterReduction red, Value base,
                           Value values) -> Value {
          return g::ScatterElementsOp::create(
              b, loc, base.getType(),
              g::ScatterReductionAttr::get(b.getContext(), red), base,
              sc.getIndices(), values, sc.getAxisAttr());
        };
        auto gather = [&](Value full) -> Value {
          return g::GatherElementsOp::create(
              b, loc,
              tensorOf(sc.getUpdates()).clone(tensorOf(full).getElementType()),
              full, sc.getIndices(), sc.getAxisAttr());
        };
        reductionGrad(e, {sc, sc.getReduction(), sc.getData(), sc.getUpdates(),
                          sc.getResult(), dy, scatter, gather});
        return success();
      })
      .Case<g::ScatterNDOp>([&](g::ScatterNDOp sc) -> Result {
        auto scatter = [&](g::ScatterReduction red, Value base,
                           Value values) -> Value {
          return g::ScatterNDOp::create(
              b, loc, base.getType(),
              g::ScatterReductionAttr::get(b.getContext(), red), base,
              sc.getIndices(), values);
        };
        auto gather = [&](Value full) -> Value {
          return g::GatherNDOp::create(
              b, loc,
              tensorOf(sc.getUpdates()).clone(tensorOf(full).getElementType()),
              full, sc.getIndices(), b.getI64IntegerAttr(0));
        };
        reductionGrad(e, {sc, sc.getReduction(), sc.getData(), sc.getUpdates(),
                          sc.getResult(), dy, scatter, gather});
        return success();
      })
      .Default([&](Operation *) { return std::nullopt; });
}
