//===- ConvChannels.h - Channel-parallel convolutions -----------*- C++ -*-===//
//
// Part of DistOpt. Which convolutions tensor parallelism splits by channels
// and how (Megatron's column/row scheme on output/input channels), what
// carries a channel split, and where a split value must be gathered whole.
// The one decision both the cost model (LayerAnalysis: the `dist.tp` roles
// and the collectives it prices) and dist-tensor-parallel (the programs)
// follow. docs/distributed.md "Channel-parallel convolutions".
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_PASSES_PLANNING_CONVCHANNELS_H
#define DISTOPT_PASSES_PLANNING_CONVCHANNELS_H

#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace mlir::func {
class FuncOp;
} // namespace mlir::func

namespace distopt::planning {

/// What tensor parallelism does with an op of a channel region.
enum class ChannelRole {
  /// A convolution of a whole input: each rank computes its share of the
  /// output channels (weight and bias sliced on dimension 0); the input's
  /// gradient is summed over the group.
  Column,
  /// A convolution (or a matmul contracting the channels) of a split input:
  /// the weight is sliced on its input channels and the ranks' partial
  /// sums are all-reduced; the bias joins after the sum.
  Row,
  /// Works channel by channel: the output is split like the input (batch
  /// norm, activations, pooling, per-channel adds and products, views that
  /// keep the channels, a grouped convolution of a split input, whose
  /// groups are split); per-channel weights are sliced.
  Split,
  /// A convolution that stays whole on every rank (a weight shared with
  /// another op, a grouped convolution of a whole input).
  Whole,
  /// Reads channel-split values it cannot work on split (a residual add
  /// meeting a whole operand, a norm over the channels, a result of the
  /// function): they are all-gathered whole first, and the op runs whole.
  Gather,
};

/// The channel regions of one function.
struct ConvChannels {
  /// Every convolution and every op reading a channel-split value, in
  /// program order (func.return included, as Gather, when it returns
  /// one).
  llvm::MapVector<mlir::Operation *, ChannelRole> roles;
  /// Split values and the dimension split (dimension 1 of NCHW activations,
  /// 0 of per-channel running statistics).
  llvm::DenseMap<mlir::Value, int64_t> split;
  /// `graph.weight`s sliced over the ranks and the dimension sliced.
  llvm::MapVector<mlir::Operation *, int64_t> weights;
  /// Every count the tensor-parallel degree must divide, with the op it
  /// belongs to: the split dimension's size of each split value and the
  /// group count of each split grouped convolution.
  llvm::SmallVector<std::pair<mlir::Operation *, int64_t>> counts;

  std::optional<ChannelRole> roleOf(mlir::Operation *op) const {
    auto it = roles.find(op);
    if (it == roles.end())
      return std::nullopt;
    return it->second;
  }
  /// The gcd of `counts`: tp must divide it (0 when nothing is split).
  int64_t divisor() const;
  /// The first count `tp` does not divide, if any.
  std::optional<std::pair<mlir::Operation *, int64_t>>
  indivisible(int64_t tp) const;
};

/// Decides the channel regions of `func` (one block), in program order:
/// a convolution whose weight (and bias) only it reads is Column when its
/// input is whole and Row when its input is split along the channels
/// (grouped: Split when the input is split, else Whole); the split then
/// passes through the ops that work channel by channel and is gathered
/// where anything else reads it. Independent of the degree: `counts`
/// says what it must divide.
ConvChannels analyzeConvChannels(mlir::func::FuncOp func);

} // namespace distopt::planning

#endif // DISTOPT_PASSES_PLANNING_CONVCHANNELS_H
