//===- GradRulesInternal.h - Rule families behind emitGradient --*- C++ -*-===//
//
// Part of DistOpt. Internal to passes/Autodiff: the gradient rules that
// live outside GradRules.cpp, one entry point per family, called by its
// dispatcher emitGradient. Each emits the operand gradients of one op
// through the GradEmitter and fails with an error on the op when the rule
// cannot handle its attributes.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_PASSES_AUTODIFF_GRADRULESINTERNAL_H
#define DIST_PASSES_AUTODIFF_GRADRULESINTERNAL_H

#include "passes/Autodiff/GradRules.h"

#include "dialects/Graph/GraphOps.h"

#include <optional>

namespace distopt::autodiff {

/// Reductions (GradRulesReduce.cpp): dy broadcast back over the reduced
/// axes times the local derivative of the reduction kind. argmax/argmin
/// fail: they yield indices.
mlir::LogicalResult reduceGrad(GradEmitter &e, graph::ReduceOp op,
                               mlir::Value dy);

/// Pooling (GradRulesReduce.cpp): one `graph.pool_grad` for max and avg
/// pools; L2 pools as an average-pool gradient of dy / y times x.
mlir::LogicalResult poolGrad(GradEmitter &e, graph::PoolOp op, mlir::Value dy);

/// Views and data movement (GradRulesData.cpp): reshape, flatten, expand,
/// transpose, slice, concat, split, pad, trilu, cumsum, gather, gather_nd,
/// top_k and embedding.
/// `dys` holds one gradient per result (null where a result has none).
/// Returns std::nullopt when `op` is not one of these ops.
std::optional<mlir::LogicalResult> dataGrad(GradEmitter &e, mlir::Operation *op,
                                            llvm::ArrayRef<mlir::Value> dys);

/// Scatters (GradRulesScatter.cpp): scatter_elements and scatter_nd with
/// every reduction (PyTorch's scatter_reduce with include_self=True).
/// Returns std::nullopt when `op` is not one of these ops.
std::optional<mlir::LogicalResult>
scatterGrad(GradEmitter &e, mlir::Operation *op, mlir::Value dy);

} // namespace distopt::autodiff

#endif // DIST_PASSES_AUTODIFF_GRADRULESINTERNAL_H
