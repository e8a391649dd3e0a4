//===- DistOps.h - Operations of the distribution dialect -------*- C++ -*-===//
//
// Part of DistOpt.
//
//===----------------------------------------------------------------------===//
#ifndef DIALECTS_DIST_DISTOPS_H
#define DIALECTS_DIST_DISTOPS_H

#include "dialects/Dist/DistDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "lib/Schedule/Schedule.h"

#include "dialects/Dist/DistInterfaces.h.inc"

namespace distopt::dist {
/// Custom assembly of collective groups: `world` (every rank, an empty
/// group) or `[d0, d1, ...]`.
mlir::ParseResult parseWorldGroup(mlir::OpAsmParser &parser,
                                  mlir::DenseI64ArrayAttr &group);
void printWorldGroup(mlir::OpAsmPrinter &printer, mlir::Operation *op,
                     mlir::DenseI64ArrayAttr group);

/// The `group` attribute of a collective over `devices`.
mlir::DenseI64ArrayAttr deviceGroup(mlir::MLIRContext *ctx,
                                    llvm::ArrayRef<unsigned> devices);
/// Records on the collective (or ZeRO block) `op` that each of `groups` runs it
/// alike
/// (`dist.groups`), when there is more than one; the op's `group` must be
/// one of them. A program several device groups share (a stage's list
/// program under data and tensor parallelism) combines each device with
/// the group that holds it.
void setRunGroups(mlir::Operation *op,
                  llvm::ArrayRef<std::vector<unsigned>> groups);
/// The device group of a collective, a dist.tp_copy or a ZeRO block
/// (`dist.zero_shard`'s group; empty: world); nullopt for other ops.
std::optional<llvm::ArrayRef<int64_t>> groupOf(mlir::Operation *op);
/// The groups that run the collective or ZeRO block `op`: `dist.groups`,
/// or its own group alone.
llvm::SmallVector<llvm::SmallVector<int64_t>> runGroups(mlir::Operation *op);
/// The shape of the whole tensor the single-result \p op holds a part of:
/// its ZeRO block's `shape` (`dist.zero_shard`) or its result's, times the
/// tensor-parallel parts along the split dimension (`dist.tp_shard`).
llvm::SmallVector<int64_t> wholeShape(mlir::Operation *op);
/// One axis of a `dist.tp_shard`: the op holds part `(rank / stride) mod
/// parts` of the tensor along `dim`, viewed there as [blocks][parts][n].
struct ShardAxis {
  int64_t dim = 0, blocks = 1, parts = 1, stride = 1;
  /// The part rank \p rank holds along this axis.
  int64_t indexOf(int64_t rank) const { return rank / stride % parts; }
};
/// The axes of a `dist.tp_shard`, outermost first: `[dim, blocks, parts]`
/// (one axis, stride 1) or `[dim, blocks, parts, stride]` per axis (an
/// expert-parallel rank's tensor-parallel part: the experts' axis, then a
/// feature axis). Empty when \p shard has neither form.
llvm::SmallVector<ShardAxis> shardAxes(llvm::ArrayRef<int64_t> shard);
} // namespace distopt::dist

#define GET_OP_CLASSES
#include "dialects/Dist/DistOps.h.inc"

#endif // DIALECTS_DIST_DISTOPS_H
