//===- ZeroShard.h - ZeRO: optimizer updates on one shard -------*- C++ -*-===//
//
// Part of DistOpt. Rewrites an optimizer update (graph.sgd_update,
// graph.adam_update) of a data-parallel program so that each of the n
// replicas keeps and updates only its part of the optimizer state (ZeRO
// stage 1, Rajbhandari et al. 2020): the gradient is reduce-scattered, the
// replica updates its shard of the parameter, and the updated shards are
// all-gathered. Used by dist-data-parallel (replicas over the world) and by
// dist-partition (the replicas of a pipeline stage). docs/distributed.md,
// "ZeRO-1".
//
//===----------------------------------------------------------------------===//
#ifndef DIST_PASSES_DISTRIBUTE_ZEROSHARD_H
#define DIST_PASSES_DISTRIBUTE_ZEROSHARD_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Operation.h"

#include <vector>

namespace distopt::zero {

/// Elements of one replica's shard of a tensor of \p numel elements over
/// \p replicas: the tensor is flattened and padded with zeros at its end to
/// `replicas * shard` elements; replica r holds elements
/// [r * shard, (r + 1) * shard).
int64_t shardElements(int64_t numel, int64_t replicas);

/// The devices a tensor is sharded over. A program that several such groups
/// run alike (a stage's list program under tensor parallelism: each tensor
/// rank with its own replicas) lists them all in \p alike, `devices` being
/// one of them; each device then shards over the group that holds it
/// (dist::setRunGroups on every collective).
struct ShardGroup {
  ShardGroup(llvm::ArrayRef<int64_t> devices,
             llvm::ArrayRef<std::vector<unsigned>> alike = {})
      : devices(devices), alike(alike) {}
  llvm::ArrayRef<int64_t> devices;
  llvm::ArrayRef<std::vector<unsigned>> alike;
};

/// This replica's shard of the mean over \p group of \p grad: \p grad
/// flattened, padded and reduce-scattered (`dist.reduce_scatter mean`),
/// built at \p b's insertion point, its ops in \p phase (`graph.phase`:
/// "optimizer" where the update reads it, "backward" where ZeRO-2 shards a
/// gradient as soon as it is computed). The ops built are appended to
/// \p built in order when given.
mlir::Value
reduceScatterMean(mlir::OpBuilder &b, mlir::Location loc, mlir::Value grad,
                  const ShardGroup &group, llvm::StringRef phase = "optimizer",
                  llvm::SmallVectorImpl<mlir::Operation *> *built = nullptr);

/// Rewrites \p update, a graph.sgd_update or graph.adam_update, to run on
/// one shard over the devices of \p group:
///
///   - the gradient: its mean's shard (reduceScatterMean), unless
///     \p gradIsShard says the operand already is one;
///   - the parameter: this device's shard of it (`dist.all_slice`);
///   - every state operand (momentum buffer, Adam moments) must be read by
///     a graph.state that only this update reads: it is read again as the
///     shard's shape under the same name, so the persistent buffer holds
///     this device's shard;
///   - the updated parameter shards are all-gathered, unpadded and
///     reshaped, and replace the update's new parameter; the new state
///     shards replace its other results (a function returning them must get
///     its type updated, see setResultTypes).
///
/// Fails with an error on \p update when a state operand is read otherwise.
/// \p update is erased; \p replacements, when given, receives what replaced
/// each of its results.
mlir::LogicalResult
shardUpdate(mlir::Operation *update, const ShardGroup &group,
            bool gradIsShard = false,
            llvm::SmallVectorImpl<mlir::Value> *replacements = nullptr);

/// Sets \p func's result types to the types its return passes.
void setResultTypes(mlir::func::FuncOp func);

} // namespace distopt::zero

#endif // DIST_PASSES_DISTRIBUTE_ZEROSHARD_H
