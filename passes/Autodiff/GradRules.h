//===- GradRules.h - Per-op gradient rules ----------------------*- C++ -*-===//
//
// Part of DistOpt. The gradient rule of every differentiable graph op,
// called by the reverse sweep in GradBuilder.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_PASSES_AUTODIFF_GRADRULES_H
#define DIST_PASSES_AUTODIFF_GRADRULES_H

#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <functional>

namespace distopt::autodiff {

/// What a rule needs from the sweep.
struct GradEmitter {
  mlir::OpBuilder &b;
  /// True when the value needs a gradient (it depends on a weight).
  std::function<bool(mlir::Value)> wants;
  /// Sets the phase of the ops emitted next to the one of `value`'s gradient.
  std::function<void(mlir::Value)> setPhaseFor;
  /// Adds `grad` to the gradient of `value`.
  std::function<void(mlir::Value, mlir::Value)> accumulate;

  /// Emits the gradient of `operand` built by `make` when it needs one.
  void give(mlir::Value operand, llvm::function_ref<mlir::Value()> make) {
    if (!wants(operand))
      return;
    setPhaseFor(operand);
    if (mlir::Value grad = make())
      accumulate(operand, grad);
  }
};

/// Emits the operand gradients of `op` from its result gradients (null where
/// a result has none). Fails with an error on `op` when it has no rule.
mlir::LogicalResult emitGradient(GradEmitter &e, mlir::Operation *op,
                                 llvm::ArrayRef<mlir::Value> resultGrads);

} // namespace distopt::autodiff

#endif // DIST_PASSES_AUTODIFF_GRADRULES_H
