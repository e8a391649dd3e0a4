//===- KeepF32.h - Loss ops that stay f32 under mixed precision -*- C++ -*-===//
//
// Part of DistOpt. The discardable unit attribute `graph.keep_f32` marks an
// op of a loss built from graph ops, which computes in f32 under mixed
// precision as the loss dist-autodiff adds does: dist-autodiff's
// lowerPrecision keeps such an op f32 instead of retyping it to bf16/fp16.
// The ONNX importer marks the ops of a NegativeLogLikelihoodLoss (and of the
// log-softmax only it reads); dist-tensor-parallel marks the
// vocabulary-parallel cross-entropy it builds before dist-autodiff runs.
// A discardable name, not a dialect attribute: no op definition changes.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_DIALECTS_GRAPH_KEEPF32_H
#define DIST_DIALECTS_GRAPH_KEEPF32_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"

namespace distopt::graph {

inline constexpr llvm::StringLiteral kKeepF32Attr = "graph.keep_f32";

/// Marks `op` kKeepF32Attr when its first result is a float tensor.
inline void markKeepF32(mlir::Operation *op) {
  if (op->getNumResults() &&
      llvm::isa<mlir::FloatType>(
          mlir::getElementTypeOrSelf(op->getResult(0).getType())))
    op->setAttr(kKeepF32Attr, mlir::UnitAttr::get(op->getContext()));
}

/// Marks every op a builder inserts while it listens (markKeepF32).
struct KeepF32Listener : mlir::OpBuilder::Listener {
  void notifyOperationInserted(mlir::Operation *op,
                               mlir::OpBuilder::InsertPoint) override {
    markKeepF32(op);
  }
};

} // namespace distopt::graph

#endif // DIST_DIALECTS_GRAPH_KEEPF32_H
