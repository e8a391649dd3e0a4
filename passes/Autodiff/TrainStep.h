//===- TrainStep.h - Pieces of the training program -------------*- C++ -*-===//
//
// Part of DistOpt. Steps of `--dist-autodiff` before and after the reverse
// sweep: adding a loss, making dropout and batch norm trainable, mixed
// precision, and the optimizer update with its state.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_PASSES_AUTODIFF_TRAINSTEP_H
#define DIST_PASSES_AUTODIFF_TRAINSTEP_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <string>

namespace distopt::autodiff {

/// Result attribute naming the buffer a training-function result writes.
inline constexpr llvm::StringLiteral kUpdateAttr = "graph.update";
/// Result attribute naming a plain output (the loss).
inline constexpr llvm::StringLiteral kOutputAttr = "graph.output";

/// Checks the form of a loss spec (`softmax-cross-entropy:NAME` or
/// `mse:NAME`, NAME not empty). Returns the error text for a bad one and an
/// empty string for a well-formed one.
std::string lossSpecError(llvm::StringRef spec);

/// Replaces the results of `func` by a scalar loss. `spec` is
/// `softmax-cross-entropy:NAME` (the first result holds logits with the
/// classes in the last dimension; a new i64 argument NAME holds the class
/// labels, the logits' shape without its last dimension) or `mse:NAME` (a
/// new argument NAME of the first result's type; mean squared error over
/// all elements). An empty spec keeps the function's only scalar float
/// result. Returns the loss value or fails with an error on `func`.
mlir::FailureOr<mlir::Value> addLoss(mlir::func::FuncOp func,
                                     llvm::StringRef spec);

/// Rewrites training `graph.dropout` into a `graph.dropout_mask` multiply
/// (seeds from `seed` on, in program order) and inference-form
/// `graph.batch_norm` into the training form. For every batch norm whose
/// running statistics come from `graph.weight` ops, appends (weight name,
/// new value) to `runningStats`.
void makeTrainable(
    mlir::func::FuncOp func, int64_t seed,
    llvm::SmallVectorImpl<std::pair<std::string, mlir::Value>> &runningStats);

/// Name of the micro-batch index state of a gradient-accumulation program.
inline constexpr llvm::StringLiteral kMicrobatchState = "microbatch";

/// Keys every `graph.dropout_mask` of `func` by the optimizer step (the
/// f32 state "step", read at the start of `func`) and, with
/// `withMicrobatch`, by the micro-batch index (the f32 state
/// "microbatch"). Returns the micro-batch index value (null when `func`
/// has no mask or `withMicrobatch` is false); the caller returns it plus
/// one as the next index and resets it in the apply step.
mlir::Value keyDropoutMasks(mlir::func::FuncOp func, bool withMicrobatch);

/// Computes `func` in `lowType` (bf16/f16): casts after every f32 argument,
/// weight and constant, retypes f32 results of the other ops, and casts the
/// returned values back to f32. A softmax cross-entropy and the ops marked
/// graph::kKeepF32Attr (dialects/Graph/KeepF32.h) stay f32: they read f32
/// values (the argument, weight or constant itself, else a cast of the 16-bit
/// value), and the other ops read a 16-bit cast of their f32 results. Fails
/// when an op rejects the new types.
mlir::LogicalResult lowerPrecision(mlir::func::FuncOp func, mlir::Type lowType);

} // namespace distopt::autodiff

#endif // DIST_PASSES_AUTODIFF_TRAINSTEP_H
