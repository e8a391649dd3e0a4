//===- GradBuilder.cpp - Reverse-mode differentiation of graph IR ---------===//
//
// Part of DistOpt. The reverse sweep and its helpers; the per-op rules live
// in GradRules.cpp.
//
//===----------------------------------------------------------------------===//
#include "passes/Autodiff/GradBuilder.h"
#include "passes/Autodiff/GradRules.h"

#include "dialects/Dist/DistDialect.h"
#include "dialects/Graph/GraphOps.h"
#include "dist/Diagnostics.h"

#include "dialects/Graph/GraphShapeUtils.h"

#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace distopt;
using namespace distopt::autodiff;
namespace g = distopt::graph;

namespace {
/// Stamps every op the builder creates with the current phase, with the
/// pipeline stage of the forward op being differentiated when the plan gave
/// it one (a stage's backward runs where its forward ran), and its location
/// as the gradient of that forward op (errors about it then name the op's
/// ONNX node).
struct PhaseListener : public OpBuilder::Listener {
  StringAttr phase;
  Attribute stage;
  void notifyOperationInserted(Operation *op, OpBuilder::InsertPoint) override {
    if (phase)
      op->setAttr(kPhaseAttr, phase);
    if (stage)
      op->setAttr(kVirtualStageAttr, stage);
    op->setLoc(distopt::gradientLocation(op->getLoc()));
  }
};
} // namespace

//===----------------------------------------------------------------------===//
// Graph-op builders shared by the rules
//===----------------------------------------------------------------------===//

RankedTensorType distopt::autodiff::tensorOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

SmallVector<NamedAttribute> distopt::autodiff::inherentAttrs(Operation *op) {
  SmallVector<NamedAttribute> attrs;
  for (NamedAttribute a : op->getAttrs())
    if (!a.getName().getValue().contains('.'))
      attrs.push_back(a);
  return attrs;
}

Value distopt::autodiff::scalar(OpBuilder &b, Location loc, Type elt,
                                double v) {
  auto type = RankedTensorType::get({}, elt);
  return g::ConstantOp::create(
      b, loc, type, DenseElementsAttr::get(type, b.getFloatAttr(elt, v)));
}

static bool isComparison(g::BinaryKind k) {
  return k == g::BinaryKind::Less || k == g::BinaryKind::Greater ||
         k == g::BinaryKind::GreaterEqual || k == g::BinaryKind::LessEqual ||
         k == g::BinaryKind::Equal || k == g::BinaryKind::Or ||
         k == g::BinaryKind::And;
}

Value distopt::autodiff::binary(OpBuilder &b, Location loc, g::BinaryKind kind,
                                Value lhs, Value rhs) {
  auto l = tensorOf(lhs), r = tensorOf(rhs);
  SmallVector<int64_t> shape = *g::broadcastShapes(l.getShape(), r.getShape());
  Type elt = isComparison(kind) ? b.getI1Type() : l.getElementType();
  return g::BinaryOp::create(b, loc, RankedTensorType::get(shape, elt), kind,
                             lhs, rhs);
}

Value distopt::autodiff::unary(OpBuilder &b, Location loc, g::UnaryKind kind,
                               Value x) {
  return g::UnaryOp::create(b, loc, x.getType(), kind, x, FloatAttr(),
                            FloatAttr());
}

Value distopt::autodiff::where(OpBuilder &b, Location loc, Value cond,
                               Value lhs, Value rhs) {
  auto shape =
      *g::broadcastShapes(tensorOf(cond).getShape(), tensorOf(lhs).getShape());
  shape = *g::broadcastShapes(shape, tensorOf(rhs).getShape());
  return g::WhereOp::create(
      b, loc, RankedTensorType::get(shape, tensorOf(lhs).getElementType()),
      cond, lhs, rhs);
}

Value distopt::autodiff::reshape(OpBuilder &b, Location loc, Value v,
                                 ArrayRef<int64_t> shape) {
  auto type = RankedTensorType::get(shape, tensorOf(v).getElementType());
  if (type == v.getType())
    return v;
  return g::ReshapeOp::create(b, loc, type, v);
}

Value distopt::autodiff::broadcastBack(OpBuilder &b, Location loc, Value dy,
                                       RankedTensorType x,
                                       ArrayRef<int64_t> axes) {
  SmallVector<int64_t> kept(x.getShape());
  for (int64_t a : axes)
    kept[a] = 1;
  Value v = reshape(b, loc, dy, kept);
  auto full =
      RankedTensorType::get(x.getShape(), tensorOf(dy).getElementType());
  return g::ExpandOp::create(b, loc, full, v);
}

Value distopt::autodiff::matmul(OpBuilder &b, Location loc, Value lhs,
                                Value rhs, bool tl, bool tr, double alpha) {
  std::string error;
  auto shape = g::inferMatmulShape(tensorOf(lhs).getShape(),
                                   tensorOf(rhs).getShape(), tl, tr, error);
  auto type = RankedTensorType::get(*shape, tensorOf(lhs).getElementType());
  SmallVector<NamedAttribute> attrs;
  if (tl)
    attrs.push_back(b.getNamedAttr("transpose_lhs", b.getBoolAttr(true)));
  if (tr)
    attrs.push_back(b.getNamedAttr("transpose_rhs", b.getBoolAttr(true)));
  if (alpha != 1.0)
    attrs.push_back(b.getNamedAttr("alpha", b.getF64FloatAttr(alpha)));
  return g::MatmulOp::create(b, loc, TypeRange{type}, ValueRange{lhs, rhs},
                             attrs);
}

Value distopt::autodiff::castTo(OpBuilder &b, Location loc, Value v, Type elt) {
  auto t = tensorOf(v);
  if (t.getElementType() == elt)
    return v;
  return g::CastOp::create(b, loc, t.clone(elt), v);
}

Value distopt::autodiff::sumToShape(OpBuilder &b, Location loc, Value grad,
                                    RankedTensorType target) {
  auto type = cast<RankedTensorType>(grad.getType());
  if (type.getShape() == target.getShape())
    return grad;
  ArrayRef<int64_t> shape = type.getShape(), want = target.getShape();
  int64_t lead = type.getRank() - target.getRank();
  SmallVector<int64_t> axes;
  SmallVector<int64_t> kept;
  for (int64_t i = 0; i < type.getRank(); ++i) {
    bool reduce = i < lead || (want[i - lead] == 1 && shape[i] != 1);
    if (reduce)
      axes.push_back(i);
    kept.push_back(reduce ? 1 : shape[i]);
  }
  Value v = grad;
  if (!axes.empty()) {
    auto keptType = RankedTensorType::get(kept, type.getElementType());
    v = g::ReduceOp::create(b, loc, keptType, g::ReduceKind::Sum, v, axes,
                            true);
  }
  auto resultType = RankedTensorType::get(want, type.getElementType());
  if (cast<RankedTensorType>(v.getType()) != resultType)
    v = g::ReshapeOp::create(b, loc, resultType, v);
  return v;
}

LogicalResult distopt::autodiff::buildBackward(OpBuilder &builder,
                                               ArrayRef<Operation *> body,
                                               Value loss, Value seed,
                                               const DenseSet<Operation *> &frozen,
                                               DenseMap<Value, Value> &grads) {
  // Values computed from the function's arguments (activations); the rest
  // is weight-only.
  DenseSet<Value> fromInput, needsGrad;
  for (Operation *op : body) {
    bool dependent = llvm::any_of(op->getOperands(), [&](Value v) {
      return isa<BlockArgument>(v) || fromInput.contains(v);
    });
    // A shift (dist.shift: the row maximum of a vocabulary-parallel
    // cross-entropy) is a constant to the backward: its gradient cancels.
    bool active =
        (isa<g::WeightOp>(op) && !frozen.contains(op)) ||
        (!op->hasAttr(dist::DistDialect::ShiftAttrHelper::getNameStr()) &&
         llvm::any_of(op->getOperands(),
                      [&](Value v) { return needsGrad.contains(v); }));
    for (Value r : op->getResults()) {
      if (dependent)
        fromInput.insert(r);
      if (active && isa<FloatType>(getElementTypeOrSelf(r.getType())))
        needsGrad.insert(r);
    }
  }
  if (!needsGrad.contains(loss))
    return emitError(loss.getLoc())
           << "the loss does not depend on any "
           << (frozen.empty() ? "" : "trainable ")
           << "float graph.weight: nothing to train"
           << (frozen.empty() ? ""
                              : " (every weight it reads is frozen: a "
                                "constant, or named by freeze= / not named "
                                "by train-only=)");

  PhaseListener listener;
  OpBuilder::Listener *previous = builder.getListener();
  builder.setListener(&listener);
  auto phaseFor = [&](Value v) {
    return builder.getStringAttr(fromInput.contains(v) ? "backward_input"
                                                       : "backward_weight");
  };
  auto accumulate = [&](Value v, Value g) {
    listener.phase = phaseFor(v);
    auto it = grads.find(v);
    if (it == grads.end()) {
      grads[v] = g;
      return;
    }
    it->second = g::BinaryOp::create(builder, v.getLoc(), g.getType(),
                                     g::BinaryKind::Add, it->second, g);
  };
  grads[loss] = seed;

  GradEmitter emitter{builder, [&](Value v) { return needsGrad.contains(v); },
                      [&](Value v) { listener.phase = phaseFor(v); },
                      accumulate};
  LogicalResult result = success();
  for (Operation *op : llvm::reverse(body)) {
    SmallVector<Value> resultGrads;
    bool any = false;
    for (Value r : op->getResults()) {
      Value gr = grads.lookup(r);
      resultGrads.push_back(gr);
      any |= static_cast<bool>(gr);
    }
    if (!any || isa<g::WeightOp, g::ConstantOp, g::StateOp>(op))
      continue;
    if (!llvm::any_of(op->getOperands(),
                      [&](Value v) { return needsGrad.contains(v); }))
      continue;
    listener.stage = op->getAttr(kVirtualStageAttr);
    if (failed(emitGradient(emitter, op, resultGrads))) {
      result = failure();
      break;
    }
  }
  builder.setListener(previous);
  return result;
}
