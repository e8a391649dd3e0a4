//===- Trainable.h - Which weights a training step updates ------*- C++ -*-===//
//
// Part of DistOpt. The weight selection of `--dist-autodiff`: a float
// `graph.weight` is trained unless the model marks it `frozen` (an ONNX
// Constant, or an initializer its training_info does not update), a
// `freeze=` glob names it, or `train-only=` globs are given and none names
// it. Values computed from frozen weights and constants alone get no
// gradient, so they are never trained either.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_PASSES_AUTODIFF_TRAINABLE_H
#define DIST_PASSES_AUTODIFF_TRAINABLE_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"

#include <string>

namespace distopt::autodiff {

/// The float weights of a function that training leaves unchanged.
struct WeightSelection {
  /// The `graph.weight` ops not to differentiate.
  llvm::DenseSet<mlir::Operation *> frozenOps;
  /// One entry per frozen weight name, in program order: the name, its
  /// element count and why it is frozen (the weight's `frozen` reason,
  /// "constant" or "training_info", or "freeze" / "train-only" for the
  /// options).
  struct Frozen {
    std::string name;
    int64_t parameters;
    std::string reason;
  };
  llvm::SmallVector<Frozen> frozen;
};

/// Selects the weights of `func` to train. `freeze` and `trainOnly` are
/// name globs (llvm::GlobPattern: `*`, `?`, `[...]`). A glob that
/// is malformed or names no float weight fails with an error on `func`
/// that suggests the closest weight name.
mlir::FailureOr<WeightSelection>
selectTrainable(mlir::func::FuncOp func, llvm::ArrayRef<std::string> freeze,
                llvm::ArrayRef<std::string> trainOnly);

} // namespace distopt::autodiff

#endif // DIST_PASSES_AUTODIFF_TRAINABLE_H
