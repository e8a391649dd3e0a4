//===- Precision.cpp - Which ops compute in f32 -----------------*- C++ -*-===//
//
// Part of DistOpt. The runtime's softmax, norm, loss, convolution, pooling
// and training kernels compute in f32 only; matmul takes f16/bf16 itself
// and reductions and elementwise ops are generated loops that compute in
// float registers. An op of the first group with a 16-bit float operand or
// result gets `emit.compute_type = f32`: the printer gives its kernel f32
// copies of those tensors (widened before the call, rounded back after).
//
//===----------------------------------------------------------------------===//
#include "passes/Emission/EmissionSteps.h"

#include "dialects/Emit/EmitDialect.h"
#include "dialects/Graph/GraphOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace distopt;
namespace g = distopt::graph;

/// Ops lowered to a runtime kernel that computes in f32 only.
static bool hasF32OnlyKernel(Operation *op) {
  return isa<g::ConvOp, g::PoolOp, g::SoftmaxOp, g::LayerNormOp, g::RMSNormOp,
             g::BatchNormOp, g::SoftmaxCrossEntropyOp, g::DropoutMaskOp,
             g::SgdUpdateOp, g::AdamUpdateOp, g::UnscaleOp,
             g::LossScaleUpdateOp, g::SoftmaxGradOp,
             g::SoftmaxCrossEntropyGradOp, g::NormGradOp, g::NormGradParamsOp,
             g::ScatterAddOp, g::ConvGradInputOp, g::ConvGradWeightOp,
             g::PoolGradOp>(op);
}

static bool isHalf(Type t) {
  Type e = getElementTypeOrSelf(t);
  return e.isF16() || e.isBF16();
}

void emission::markPrecision(Block &body) {
  Builder b(body.getParentOp()->getContext());
  for (Operation &op : body)
    if (hasF32OnlyKernel(&op) && (llvm::any_of(op.getOperandTypes(), isHalf) ||
                                  llvm::any_of(op.getResultTypes(), isHalf)))
      op.setAttr(emit::kComputeTypeAttr, TypeAttr::get(b.getF32Type()));
}
