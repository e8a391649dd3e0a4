//===- MemoryPlan.h - Live ranges and the arena check -----------*- C++ -*-===//
//
// Part of DistOpt. The static memory plan of a function body: every value
// that owns memory lives in an arena slot (or a resident buffer), views
// share their operand's. The live ranges computed here are what
// dist-prepare-for-emission packs slots by and what the dialect's verifier
// checks a recorded plan against.
//
//===----------------------------------------------------------------------===//
#ifndef DIALECTS_EMIT_MEMORYPLAN_H
#define DIALECTS_EMIT_MEMORYPLAN_H

#include "dialects/Emit/EmitDialect.h"

#include "mlir/IR/Block.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace distopt::emit {

/// The buffer recorded for `v` (`emit.buffers` of its op, `emit.buffer` of
/// a function argument), or null.
BufferAttr bufferOf(mlir::Value v);
/// Element strides of `v` in memory: its buffer's, else row-major.
llvm::SmallVector<int64_t> stridesOf(mlir::Value v);
/// Bytes memory with `strides` spans for a tensor of type `t`.
int64_t spanBytes(mlir::RankedTensorType t, llvm::ArrayRef<int64_t> strides);

/// Elements `v` starts into the buffer it views (0 for a buffer itself),
/// summed along a chain of views.
int64_t viewOffset(mlir::Value v);
/// Byte offset of `v` in its body's arena, when its memory is an arena
/// slot (or a view of one).
std::optional<int64_t> arenaOffset(mlir::Value v);

/// From the op that defines a buffer (-1: the block's arguments) to the
/// last op that reads it or a view of it (the block's op count when the
/// terminator does).
struct LiveRange {
  int64_t def = -1, last = -1;
};

/// Positions and live ranges of the top-level ops and buffers of a block.
struct BlockLiveness {
  explicit BlockLiveness(mlir::Block &block);
  /// The value whose memory `v` uses (itself unless it is a view).
  mlir::Value root(mlir::Value v) const;
  /// Whether started collective `op` (emit.async) writes its result over
  /// operand `k`: an arena value of its own that dies there, into an arena
  /// result, in a layout it reduces in place. Its range then ends there
  /// (planMemory puts both in one slot); otherwise it lasts until the wait.
  bool writtenOverWhenStarted(mlir::Operation &op, unsigned k) const;
  llvm::DenseMap<mlir::Operation *, int64_t> position;
  llvm::DenseMap<mlir::Value, mlir::Value> viewOf;
  /// Per root value.
  llvm::DenseMap<mlir::Value, LiveRange> ranges;
  int64_t end = 0;
};

/// Checks `plan`, recorded on `holder` (a function or a pipeline stage),
/// against its body; reports on the offending op.
mlir::LogicalResult verifyMemoryPlan(mlir::Operation *holder,
                                     MemoryPlanAttr plan);

} // namespace distopt::emit

#endif // DIALECTS_EMIT_MEMORYPLAN_H
