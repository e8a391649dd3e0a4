//===- GradBuilder.h - Reverse-mode differentiation of graph IR -*- C++ -*-===//
//
// Part of DistOpt. The reverse sweep behind `--dist-autodiff`: given a block
// of graph ops and the gradient of its loss, emits the backward ops at the
// builder's insertion point. Every emitted op carries `graph.phase`
// ("backward_input" or "backward_weight"): a gradient of a value that does
// not depend on the function's arguments (a weight, or a cast/transpose of
// weights) is weight-gradient work, everything else input-gradient work.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_PASSES_AUTODIFF_GRADBUILDER_H
#define DIST_PASSES_AUTODIFF_GRADBUILDER_H

#include "dialects/Graph/GraphOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

namespace distopt::autodiff {

/// Name of the discardable phase attribute on training-program ops.
inline constexpr llvm::StringLiteral kPhaseAttr = "graph.phase";
/// The pipeline stage the plan gave a forward op (the dist dialect's
/// `dist.virtual_stage`); copied onto the ops of its gradient.
inline constexpr llvm::StringLiteral kVirtualStageAttr = "dist.virtual_stage";
/// The tensor-parallel shard of a weight (dist-tensor-parallel), which its
/// optimizer state shares.
inline constexpr llvm::StringLiteral kTpShardAttr = "dist.tp_shard";

/// Builds the backward graph of the ops in `body` (in program order), from
/// `seed`, the gradient of `loss`. On success `grads` maps every float
/// value on a path from a `graph.weight` that is not in `frozen` to `loss`
/// to its gradient. Non-differentiable ops on such a path make it fail
/// with an error naming the op. The builder's insertion point must be
/// after every op of `body`.
llvm::LogicalResult
buildBackward(mlir::OpBuilder &builder, llvm::ArrayRef<mlir::Operation *> body,
              mlir::Value loss, mlir::Value seed,
              const llvm::DenseSet<mlir::Operation *> &frozen,
              llvm::DenseMap<mlir::Value, mlir::Value> &grads);

/// Sums `grad` over broadcast dimensions so it gets `target`'s shape
/// (reduce sum with kept dimensions, then a reshape). Exposed for tests.
mlir::Value sumToShape(mlir::OpBuilder &builder, mlir::Location loc,
                       mlir::Value grad, mlir::RankedTensorType target);

//===----------------------------------------------------------------------===//
// Graph-op builders shared by the gradient rules (GradRules*.cpp)
//===----------------------------------------------------------------------===//

/// The ranked tensor type of `v`.
mlir::RankedTensorType tensorOf(mlir::Value v);
/// The op's inherent attributes (no discardable `graph.*` ones), to copy
/// onto a gradient op with the same attribute names.
llvm::SmallVector<mlir::NamedAttribute> inherentAttrs(mlir::Operation *op);
/// A rank-0 `graph.constant` of element type `elt`.
mlir::Value scalar(mlir::OpBuilder &b, mlir::Location loc, mlir::Type elt,
                   double v);
/// `graph.binary kind` with the broadcast result shape (i1 for
/// comparisons and logical kinds).
mlir::Value binary(mlir::OpBuilder &b, mlir::Location loc,
                   graph::BinaryKind kind, mlir::Value lhs, mlir::Value rhs);
mlir::Value unary(mlir::OpBuilder &b, mlir::Location loc, graph::UnaryKind kind,
                  mlir::Value x);
/// `graph.where` with the broadcast result shape.
mlir::Value where(mlir::OpBuilder &b, mlir::Location loc, mlir::Value cond,
                  mlir::Value lhs, mlir::Value rhs);
/// `graph.reshape`, or `v` itself when it already has `shape`.
mlir::Value reshape(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v,
                    llvm::ArrayRef<int64_t> shape);
/// `dy` broadcast back to `x`'s shape after a reduction over `axes`.
mlir::Value broadcastBack(mlir::OpBuilder &b, mlir::Location loc,
                          mlir::Value dy, mlir::RankedTensorType x,
                          llvm::ArrayRef<int64_t> axes);
/// `graph.matmul` with transposes and `alpha`.
mlir::Value matmul(mlir::OpBuilder &b, mlir::Location loc, mlir::Value lhs,
                   mlir::Value rhs, bool transposeLhs, bool transposeRhs,
                   double alpha);
/// `graph.cast` of `v` to element type `elt` (or `v` when it has it).
mlir::Value castTo(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v,
                   mlir::Type elt);

} // namespace distopt::autodiff

#endif // DIST_PASSES_AUTODIFF_GRADBUILDER_H
