//===- VocabParallel.h - Vocabulary-parallel cross-entropy ------*- C++ -*-===//
//
// Part of DistOpt. Megatron-LM's vocabulary-parallel cross-entropy: a
// softmax cross-entropy of column-parallel logits that dist-tensor-parallel
// gathered whole runs on each rank's columns instead (three all-reduces of
// one value per row; no communication in the backward). Used by
// dist-tensor-parallel (a loss in the planned function) and dist-autodiff
// (the loss it adds on the gathered logits). docs/distributed.md "Tensor
// parallelism".
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_PASSES_DISTRIBUTE_VOCABPARALLEL_H
#define DISTOPT_PASSES_DISTRIBUTE_VOCABPARALLEL_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace distopt::split {

/// Rewrites every graph.softmax_cross_entropy of `func` whose logits are
/// column-parallel logits gathered whole (split::gatherWhole along their
/// last dimension, then possibly cast from 16-bit floats to f32 as mixed
/// precision does, and viewed as [rows, classes]) into the
/// vocabulary-parallel form on the rank's columns (cast there). A variant
/// it does not implement (logits other than f32, labels other than
/// integers) keeps the gathered logits; with `verbose` a remark says why.
/// Returns how many losses it rewrote.
unsigned vocabParallelCrossEntropy(mlir::func::FuncOp func, bool verbose);

} // namespace distopt::split

#endif // DISTOPT_PASSES_DISTRIBUTE_VOCABPARALLEL_H
