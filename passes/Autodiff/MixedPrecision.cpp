//===- MixedPrecision.cpp - bf16/fp16 compute, f32 masters ------*- C++ -*-===//
//
// Part of DistOpt. Retypes a forward function to a low-precision float type
// before differentiation, so the backward inherits it: the cast after each
// f32 weight becomes a cast of the gradient back to f32 (the master type).
//
//===----------------------------------------------------------------------===//
#include "passes/Autodiff/TrainStep.h"

#include "dialects/Graph/GraphOps.h"

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

/// Casts `v` to `low` right after its definition and reroutes its uses.
static void castUses(OpBuilder &b, Value v, Type low) {
  auto cast = g::CastOp::create(b, v.getLoc(), lowered(v.getType(), low), v);
  v.replaceAllUsesExcept(cast.getResult(), cast);
}

LogicalResult distopt::autodiff::lowerPrecision(func::FuncOp func, Type low) {
  Block &body = func.getBody().front();
  OpBuilder b(func.getContext());
  b.setInsertionPointToStart(&body);
  for (BlockArgument arg : body.getArguments())
    if (isF32Tensor(arg.getType()))
      castUses(b, arg, low);
  SmallVector<Operation *> ops;
  for (Operation &op : body)
    ops.push_back(&op);
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
    if (isa<g::WeightOp, g::ConstantOp, g::StateOp>(op)) {
      b.setInsertionPointAfter(op);
      for (Value r : op->getResults())
        if (isF32Tensor(r.getType()) && !r.use_empty())
          castUses(b, r, low);
      continue;
    }
    for (Value r : op->getResults())
      if (isF32Tensor(r.getType()))
        r.setType(lowered(r.getType(), low));
  }
  for (Operation &op : body)
    if (failed(verify(&op)))
      return failure();
  return success();
}
