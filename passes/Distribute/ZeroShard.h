//===- ZeroShard.h - ZeRO: optimizer updates on one shard -------*- C++ -*-===//
//
// Part of DistOpt. Rewrites an optimizer update (graph.sgd_update,
// graph.adam_update) of a data-parallel program so that each of the n
// replicas keeps and updates only its part of the optimizer state (ZeRO
// stage 1, Rajbhandari et al. 2020): the gradient is reduce-scattered, the
// replica updates its shard of the parameter, and the updated shards are
// all-gathered. Under ZeRO-3 the replica keeps only its shard of the
// parameter too, and its readers gather it. Used by dist-data-parallel
// (replicas over the world) and by dist-partition (the replicas of a
// pipeline stage). docs/distributed.md, "ZeRO".
//
//===----------------------------------------------------------------------===//
#ifndef DIST_PASSES_DISTRIBUTE_ZEROSHARD_H
#define DIST_PASSES_DISTRIBUTE_ZEROSHARD_H

#include "dialects/Graph/GraphOps.h"

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
             llvm::ArrayRef<std::vector<unsigned>> alike = {},
             bool shares = false)
      : devices(devices), alike(alike), shares(shares) {}
  llvm::ArrayRef<int64_t> devices;
  llvm::ArrayRef<std::vector<unsigned>> alike;
  /// The devices' gradients are shares of the mean that add up to it (a
  /// stage's per-stage replicas, each with its own micro-batches), not
  /// means over their own rows (data-parallel replicas).
  bool shares = false;
};

/// This replica's shard of the mean over \p group of \p grad: \p grad
/// flattened, padded and reduce-scattered (`dist.reduce_scatter mean`, or
/// `sum` of a group's shares),
/// built at \p b's insertion point, its ops in \p phase (`graph.phase`:
/// "optimizer" where the update reads it, "backward" where ZeRO-2 shards a
/// gradient as soon as it is computed). The ops built are appended to
/// \p built in order when given.
mlir::Value
reduceScatterMean(mlir::OpBuilder &b, mlir::Location loc, mlir::Value grad,
                  const ShardGroup &group, llvm::StringRef phase = "optimizer",
                  llvm::SmallVectorImpl<mlir::Operation *> *built = nullptr);

/// The type of the whole tensor \p v is a ZeRO block of (its defining op's
/// `dist.zero_shard` shape), or \p v's own type when it is not a block.
mlir::RankedTensorType wholeType(mlir::Value v);

/// Makes \p op's single result this device's block of the tensor it was
/// (1-D, `dist.zero_shard` on \p op): a weight or state read as its block.
/// An op that already is a block stays as it is.
void markBlock(mlir::Operation *op, const ShardGroup &group);

/// ZeRO-3: \p weight becomes this device's block of it (weightBlock), and
/// every reader but \p except gets the whole weight all-gathered right
/// before the first reader of its phase (the forward and the backward
/// gather separately, so the whole weight lives only while a phase reads
/// it). \p weight is erased when \p except is null. A weight that already
/// is a block is returned as it is. Fails (with an error) for a
/// tensor-parallel part.
mlir::FailureOr<mlir::Value> weightAsBlock(graph::WeightOp weight,
                                           const ShardGroup &group,
                                           mlir::Operation *except = nullptr);

/// A clone of \p weight at \p b's insertion point that holds this
/// device's block of it (ZeRO-3): 1-D, marked `dist.zero_shard`, so the
/// program reads only that block of the weights file and keeps only it.
graph::WeightOp weightBlock(mlir::OpBuilder &b, graph::WeightOp weight,
                            const ShardGroup &group);

/// The whole tensor that \p block (a ZeRO block) is part of: the group's
/// blocks all-gathered, unpadded and reshaped at \p b's insertion point,
/// the ops tagged with \p phase.
mlir::Value gatherWhole(mlir::OpBuilder &b, mlir::Location loc,
                        mlir::Value block, const ShardGroup &group,
                        llvm::StringRef phase);

/// Rewrites \p update, a graph.sgd_update or graph.adam_update, to run on
/// one shard over the devices of \p group:
///
///   - the gradient: its mean's shard (reduceScatterMean), unless
///     \p gradIsShard says the operand already is one;
///   - the parameter: this device's shard of it (`dist.all_slice`);
///   - every state operand (momentum buffer, Adam moments) must be read by
///     a graph.state that only this update reads: it is read again as the
///     shard's shape under the same name, so the persistent buffer holds
///     this device's shard. A state operand that already has the shard's
///     type (an earlier update's new state, where a program updates several
///     times) is read as it is;
///   - the updated parameter shards are all-gathered, unpadded and
///     reshaped, and replace the update's new parameter; the new state
///     shards replace its other results (a function returning them must get
///     its type updated, see setResultTypes).
///
/// With \p paramIsShard (ZeRO-3) the parameter must be read by a
/// graph.weight, which becomes this device's shard (weightBlock; a weight
/// that already is a block stays as it is):
/// the update reads it as it is and the function returns the updated
/// shard; every other reader of the weight gets it all-gathered right
/// before the first reader of each phase (the forward and the backward
/// gather separately, so the whole weight lives only while a phase reads
/// it).
///
/// Fails with an error on \p update when a state operand is read otherwise
/// (or, under ZeRO-3, the parameter is not a graph.weight or is a
/// tensor-parallel part). \p update is erased; \p replacements, when given,
/// receives what replaced each of its results.
mlir::LogicalResult
shardUpdate(mlir::Operation *update, const ShardGroup &group,
            bool gradIsShard = false,
            llvm::SmallVectorImpl<mlir::Value> *replacements = nullptr,
            bool paramIsShard = false);

/// Sets \p func's result types to the types its return passes.
void setResultTypes(mlir::func::FuncOp func);

} // namespace distopt::zero

#endif // DIST_PASSES_DISTRIBUTE_ZEROSHARD_H
