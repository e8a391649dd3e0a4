//===- PartitionBranches.h - Programs of a branch placement -----*- C++ -*-===//
//
// Part of DistOpt. What dist-partition does to a module planned with
// --dist-branches (`dist.branch` on the ops, `dist.branch_devices` on the
// module): one function per piece and one program per device.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_PASSES_PARTITION_PARTITIONBRANCHES_H
#define DIST_PASSES_PARTITION_PARTITIONBRANCHES_H

#include "dialects/Dist/DistOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace distopt::partition {

/// Outlines each piece of \p func (the trunk, each branch, the tail) into
/// `@<f>_piece<p>` and builds `@<f>_rank<L>` for every action list of
/// \p plan: the calls of the pieces its device runs, in piece order, each
/// after receiving its inputs from the lists that compute them (the
/// inputs of @<f> are the trunk's device's) and followed by sending its
/// results to the lists that read them; the trunk's device receives what
/// @<f> returns and returns it. Sends are eager and every list runs the
/// pieces in one order, so no list waits on one that waits on it.
mlir::LogicalResult partitionBranches(mlir::ModuleOp module,
                                      mlir::func::FuncOp func,
                                      dist::PlanAttr plan,
                                      llvm::ArrayRef<int64_t> devices);

} // namespace distopt::partition

#endif // DIST_PASSES_PARTITION_PARTITIONBRANCHES_H
