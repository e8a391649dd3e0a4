//===- ChannelParallel.h - Channel-parallel convolutions --------*- C++ -*-===//
//
// Part of DistOpt. dist-tensor-parallel's rewrite of the channel regions
// planning::analyzeConvChannels decides (the regions the cost model
// prices): column convolutions keep their rank's output channels, row
// convolutions their input channels with the partial sums all-reduced,
// the ops between work on the rank's channels, and split values are
// gathered whole where anything else reads them.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_PASSES_DISTRIBUTE_CHANNELPARALLEL_H
#define DISTOPT_PASSES_DISTRIBUTE_CHANNELPARALLEL_H

#include "lib/Schedule/RankLayout.h"
#include "passes/Planning/ConvChannels.h"

#include "llvm/ADT/DenseSet.h"

namespace mlir::func {
class FuncOp;
} // namespace mlir::func

namespace distopt::split {

/// Rewrites the channel regions `channels` of `func` into what one tensor
/// rank of `layout` runs; adds the ops it rewrote to `taken`. Returns how
/// many convolutions and matmuls it split, or failure (an error on the op)
/// when the plan's tp does not divide a channel or group count.
llvm::FailureOr<unsigned>
splitConvChannels(mlir::func::FuncOp func, const schedule::RankLayout &layout,
                  const planning::ConvChannels &channels,
                  llvm::DenseSet<mlir::Operation *> &taken);

} // namespace distopt::split

#endif // DISTOPT_PASSES_DISTRIBUTE_CHANNELPARALLEL_H
