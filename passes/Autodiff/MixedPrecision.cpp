//===- MixedPrecision.cpp - bf16/fp16 compute, f32 masters ------*- C++ -*-===//
//
// Part of DistOpt. Retypes a forward function to a low-precision float type
// before differentiation, so the backward inherits it: the cast after each
// f32 weight becomes a cast of the gradient back to f32 (the master type).
// The loss stays f32, whether dist-autodiff adds it after this, the model
// computes it (a softmax cross-entropy, or graph ops the importer or
// dist-tensor-parallel built for one and marked graph.keep_f32):
// its logits are cast to f32, so the backward casts their gradient back.
//
//===----------------------------------------------------------------------===//
#include "passes/Autodiff/TrainStep.h"

#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/KeepF32.h"

#include "mlir/IR/Verifier.h"

using namespace mlir;
using namespace distopt;
namespace g = distopt::graph;

static bool isF32Tensor(Type t) {
  auto r = dyn_cast<RankedTensorType>(t);
  return r && r.getElementType().isF32();
}

static RankedTensorType lowered(Type t, Type low) {
  return cast<RankedTensorType>(t).clone(low);
}

/// Whether `op` computes in f32 under mixed precision: the loss (an f32
/// softmax cross-entropy, as the loss dist-autodiff adds after this) and the
/// ops another pass built for one and marked.
static bool keepsF32(Operation *op) {
  if (auto loss = dyn_cast<g::SoftmaxCrossEntropyOp>(op))
    return isF32Tensor(loss.getType());
  return op->hasAttr(g::kKeepF32Attr);
}

namespace {
/// The casts between the two precisions, one per value: `wide` maps a
/// 16-bit value to its f32 value (the argument, weight or constant it casts,
/// else a cast of it), `narrow` an f32 result of an op kept in f32 to its
/// 16-bit cast. `low` holds the values made 16-bit, `inputs` the casts
/// after f32 arguments, weights and constants.
struct Casts {
  explicit Casts(OpBuilder &b) : b(b) {}

  OpBuilder &b;
  DenseMap<Value, Value> wide, narrow;
  DenseSet<Value> low;
  SmallVector<g::CastOp> inputs;

  /// Casts `v` to `type` right after its definition and reroutes its uses.
  void castUses(Value v, Type type) {
    auto cast = g::CastOp::create(b, v.getLoc(), lowered(v.getType(), type), v);
    v.replaceAllUsesExcept(cast.getResult(), cast);
    wide[cast.getResult()] = v;
    low.insert(cast.getResult());
    inputs.push_back(cast);
  }

  /// `v` cast to `element` right after its definition, once per value of
  /// `cache`.
  Value castOnce(DenseMap<Value, Value> &cache, Value v, Type element) {
    Value &out = cache[v];
    if (!out) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointAfterValue(v);
      out = g::CastOp::create(
          b, v.getLoc(), cast<RankedTensorType>(v.getType()).clone(element), v);
    }
    return out;
  }
};
} // namespace

LogicalResult distopt::autodiff::lowerPrecision(func::FuncOp func, Type low) {
  Block &body = func.getBody().front();
  OpBuilder b(func.getContext());
  Casts casts(b);
  b.setInsertionPointToStart(&body);
  for (BlockArgument arg : body.getArguments())
    if (isF32Tensor(arg.getType()))
      casts.castUses(arg, low);
  SmallVector<Operation *> ops;
  for (Operation &op : body)
    ops.push_back(&op);
  DenseSet<Value> kept; // The f32 results of the ops kept in f32.
  for (Operation *op : ops) {
    if (isa<func::ReturnOp>(op)) {
      b.setInsertionPoint(op);
      for (OpOperand &operand : op->getOpOperands()) {
        Type want =
            func.getFunctionType().getResult(operand.getOperandNumber());
        if (operand.get().getType() != want)
          operand.set(g::CastOp::create(b, op->getLoc(), want, operand.get()));
      }
      continue;
    }
    if (keepsF32(op)) {
      Type f32 = b.getF32Type();
      for (OpOperand &operand : op->getOpOperands())
        if (casts.low.contains(operand.get()))
          operand.set(casts.castOnce(casts.wide, operand.get(), f32));
      for (Value r : op->getResults())
        if (isF32Tensor(r.getType()))
          kept.insert(r);
      continue;
    }
    for (OpOperand &operand : op->getOpOperands())
      if (kept.contains(operand.get()))
        operand.set(casts.castOnce(casts.narrow, operand.get(), low));
    if (isa<g::WeightOp, g::ConstantOp, g::StateOp>(op)) {
      b.setInsertionPointAfter(op);
      for (Value r : op->getResults())
        if (isF32Tensor(r.getType()) && !r.use_empty())
          casts.castUses(r, low);
      continue;
    }
    for (Value r : op->getResults())
      if (isF32Tensor(r.getType())) {
        r.setType(lowered(r.getType(), low));
        casts.low.insert(r);
      }
  }
  // Every reader of such a cast may have stayed f32.
  for (g::CastOp cast : casts.inputs)
    if (cast->use_empty())
      cast->erase();
  for (Operation &op : body)
    if (failed(verify(&op)))
      return failure();
  return success();
}
