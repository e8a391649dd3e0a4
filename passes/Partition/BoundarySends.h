//===- BoundarySends.h - Pipeline boundary messages -------------*- C++ -*-===//
//
// Part of DistOpt. How dist-partition's programs move one micro-batch's
// boundary value (an activation, or its gradient) between the action lists
// of neighbouring pipeline stages: whole, or by Megatron's scatter/gather
// where cost::scatterGathers says so, the rule cost::boundaryMessage
// prices.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_PASSES_PARTITION_BOUNDARYSENDS_H
#define DIST_PASSES_PARTITION_BOUNDARYSENDS_H

#include "lib/Schedule/Plan.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseSet.h"

#include <set>
#include <vector>

namespace distopt::partition {

/// Which values of a pipelined step function (its stage calls' results:
/// activations and gradients) differ between the tensor ranks of a stage.
/// A value varies when it reads one that does: a weight's or a dropout
/// mask's part (`dist.tp_shard`), or a shard a collective over a tensor
/// group leaves (`dist.reduce_scatter`, `dist.all_slice`,
/// `dist.all_to_all`); an all-reduce, all-gather or broadcast over a tensor
/// group makes it whole again. The calls are followed into the stage
/// functions, their arguments varying as the step's operands do.
class TensorRankVariance {
public:
  TensorRankVariance(mlir::func::FuncOp step, const schedule::Plan &plan);
  bool varies(mlir::Value v) const { return varying.contains(v); }

private:
  void visit(mlir::Block &body);
  bool overTensorGroup(mlir::Operation *op) const;

  mlir::SymbolTable symbols;
  std::set<std::vector<int64_t>> tensorGroups;
  llvm::DenseSet<mlir::Value> varying;
};

/// Sends \p value from a list of pipeline stage \p stage to list \p peer
/// with \p tag: when every tensor rank holds it \p whole and
/// cost::scatterGathers says so, this tensor rank's 1/tp of the flattened
/// value (a `dist.all_slice` over the stage's tensor groups), else the
/// value.
void sendBoundary(mlir::OpBuilder &b, mlir::Location loc, mlir::Value value,
                  bool whole, int64_t peer, int64_t tag,
                  const schedule::Plan &plan, unsigned stage);

/// Receives on a list of pipeline stage \p stage the value of type \p type
/// that list \p peer sends with sendBoundary and \p tag: under
/// scatter/gather the tensor ranks' parts, all-gathered over the stage's
/// tensor groups and reshaped to \p type.
mlir::Value recvBoundary(mlir::OpBuilder &b, mlir::Location loc,
                         mlir::Type type, bool whole, int64_t peer, int64_t tag,
                         const schedule::Plan &plan, unsigned stage);

} // namespace distopt::partition

#endif // DIST_PASSES_PARTITION_BOUNDARYSENDS_H
