//===- GradBuilder.cpp - Reverse-mode differentiation of graph IR -*- C++
//-*-===//
//
// Part of DistOpt. The reverse sweep and its helpers; the per-op rules live
// in GradRules.cpp.
//
//===----------------------------------------------------------------------===//
#include "passes/Autodiff/GradBuilder.h"
#include "passes/Autodiff/GradRules.h"

#include "dialects/Graph/GraphOps.h"

#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace distopt;
using namespace distopt::autodiff;
namespace g = distopt::graph;

namespace {
/// Stamps every op the builder creates with the current phase.
struct PhaseListener : public OpBuilder::Listener {
  StringAttr phase;
  void notifyOperationInserted(Operation *op, OpBuilder::InsertPoint) override {
    if (phase)
      op->setAttr(kPhaseAttr, phase);
  }
};
} // namespace

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
                                               DenseMap<Value, Value> &grads) {
  // Values computed from the function's arguments (activations); the rest
  // is weight-only.
  DenseSet<Value> fromInput, needsGrad;
  for (Operation *op : body) {
    bool dependent = llvm::any_of(op->getOperands(), [&](Value v) {
      return isa<BlockArgument>(v) || fromInput.contains(v);
    });
    bool active = isa<g::WeightOp>(op) ||
                  llvm::any_of(op->getOperands(),
                               [&](Value v) { return needsGrad.contains(v); });
    for (Value r : op->getResults()) {
      if (dependent)
        fromInput.insert(r);
      if (active && isa<FloatType>(getElementTypeOrSelf(r.getType())))
        needsGrad.insert(r);
    }
  }
  if (!needsGrad.contains(loss))
    return emitError(loss.getLoc())
           << "the loss does not depend on any float graph.weight: nothing "
              "to train";

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
    if (failed(emitGradient(emitter, op, resultGrads))) {
      result = failure();
      break;
    }
  }
  builder.setListener(previous);
  return result;
}
