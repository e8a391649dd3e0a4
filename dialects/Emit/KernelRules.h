//===- KernelRules.h - What may run as one kernel ---------------*- C++ -*-===//
//
// Part of DistOpt. The rules shared by dist-prepare-for-emission (which
// forms kernels and views), the emit dialect's verifiers (which check
// them) and the printer (which turns them into runtime calls): the
// elementwise ops, how an elementwise op becomes a oneDNN post-op of a
// matmul or convolution, which ops may be strided views of their operand,
// and where a kernel may write its result over an operand.
//
//===----------------------------------------------------------------------===//
#ifndef DIALECTS_EMIT_KERNELRULES_H
#define DIALECTS_EMIT_KERNELRULES_H

#include "dialects/Emit/EmitDialect.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <string>

namespace distopt::emit {

/// Elementwise graph ops: element i of the result reads element i of each
/// operand (NumPy-broadcast). They fuse into one generated loop.
bool isElementwiseOp(mlir::Operation *op);

/// Bytes per element of `t` (i1 takes a byte); 0 when unsupported.
int64_t elementBytes(mlir::Type t);

/// Row-major element strides of `shape`.
llvm::SmallVector<int64_t> rowMajorStrides(llvm::ArrayRef<int64_t> shape);
/// Whether two layouts of `shape` are the same memory: equal strides on
/// every dim but the unit ones (whose stride never matters).
bool sameLayout(llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<int64_t> a,
                llvm::ArrayRef<int64_t> b);

//===--- Post-ops -----------------------------------------------------===//

/// One oneDNN post-op: what the runtime's distrt_post_op carries.
struct PostOp {
  enum Kind { Eltwise, Binary };
  Kind kind = Eltwise;
  /// Eltwise: the DISTRT_ELTWISE_* suffix; Binary: the DISTRT_BINARY_* one.
  std::string alg;
  float alpha = 0, beta = 0;
  /// Binary: the operand of the chain op that is the second source.
  int operand = -1;
};

/// A matmul or convolution whose result oneDNN can post-process: f32,
/// operands of rank >= 2 (matmul; a bias per column with beta 1, if any)
/// or a 1-D or 2-D convolution (rank-3 or rank-4 input; the emitter runs a
/// 1-D one as 2-D with height 1).
bool isPostOpAnchor(mlir::Operation *op);
/// The post-ops that compute `op` from `chain` (the value so far, of the
/// anchor's result shape) inside the kernel of `anchor`, or nullopt when
/// `op` cannot be one: an f32 activation with a oneDNN counterpart, a clip,
/// or add/sub/mul/div/max/min with a scalar, a per-channel vector (the last
/// dim of a matmul, dim 1 of a convolution) or a tensor of the result's
/// shape as second operand (the chain on the left for sub and div).
std::optional<llvm::SmallVector<PostOp, 2>>
postOpsOf(mlir::Operation *op, mlir::Value chain, mlir::Operation *anchor);

/// The DISTRT_ELTWISE_* suffix of an f32 `graph.unary` the runtime's
/// vectorized eltwise kernel computes alone (`emit.kernel eltwise`).
std::optional<std::string> standaloneEltwise(mlir::Operation *op);

//===--- Views --------------------------------------------------------===//

/// Where a view's elements are: `offset` elements into its operand's
/// memory, with `strides`.
struct ViewLayout {
  int64_t offset = 0;
  llvm::SmallVector<int64_t> strides;
};

/// Ops whose result (number `result`) can be a view of their first
/// operand: reshape, flatten, dropout (inference identity), transpose,
/// slice with positive steps, split.
bool isViewableOp(mlir::Operation *op);
/// The layout of result `result` of `op` as a view of its operand laid out
/// with `strides`; nullopt when it cannot be one (a reshape that merges
/// dims which are not contiguous in memory).
std::optional<ViewLayout> viewLayout(mlir::Operation *op, unsigned result,
                                     llvm::ArrayRef<int64_t> strides);

/// Reshape of memory with `strides` and `shape` to `newShape`, as strides
/// (nullopt when merged dims are not contiguous).
std::optional<llvm::SmallVector<int64_t>>
reshapeStrides(llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<int64_t> strides,
               llvm::ArrayRef<int64_t> newShape);

//===--- In place -----------------------------------------------------===//

/// Whether `op` may write its result `result` over operand `operand` (read
/// for the last time by it): a loop or eltwise kernel reading it at the
/// result's shape and element size, or a post-op kernel whose first
/// post-op adds it in full (oneDNN's sum post-op), or an all-reduce (the
/// runtime's reduces in place), or a call whose callee returns that
/// argument plus what it computes as that result (`dist.accumulates`).
/// `strides` give the layouts of the operand and the result.
bool mayWriteInPlace(mlir::Operation *op, unsigned operand,
                     llvm::ArrayRef<int64_t> operandStrides,
                     llvm::ArrayRef<int64_t> resultStrides,
                     unsigned result = 0);

/// The result that argument `arg` of function `fn` is the running sum of
/// (`dist.accumulates`), if any.
std::optional<unsigned> accumulatedResult(mlir::Operation *fn, unsigned arg);

/// The first post-op of a post_ops kernel when it adds a full-shape
/// operand (which the printer turns into oneDNN's sum when the result is
/// written over it): the kernel input index, else -1.
int sumCandidate(KernelOp kernel);

} // namespace distopt::emit

#endif // DIALECTS_EMIT_KERNELRULES_H
