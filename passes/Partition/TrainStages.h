//===- TrainStages.h - A training step split by stage and phase -*- C++ -*-===//
//
// Part of DistOpt. What dist-partition does to a pipelined training step:
// outlines it into per-stage, per-phase functions (TrainStages.cpp) and
// builds each action list's program from them (PartitionTrain.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef DIST_PASSES_PARTITION_TRAINSTAGES_H
#define DIST_PASSES_PARTITION_TRAINSTAGES_H

#include "dialects/Dist/DistOps.h"
#include "lib/Schedule/Plan.h"
#include "passes/Partition/ScheduleIR.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <optional>

namespace distopt::partition {

/// The phases of one micro-batch on one stage, in the order they run.
enum class TrainPhase : uint8_t { Forward, BackwardInput, BackwardWeight };
inline constexpr unsigned kNumTrainPhases = 3;
llvm::StringRef trainPhaseName(TrainPhase p);

/// The stage and phase of an outlined training function (its
/// `dist.virtual_stage` and `dist.train_phase`); nullopt for any other
/// function.
std::optional<std::pair<int64_t, TrainPhase>>
trainGroupOf(mlir::func::FuncOp callee);

/// Outlines the training step \p func (its ops carry `dist.virtual_stage`
/// from the planned forward function and `graph.phase` from dist-autodiff)
/// into `@<f>_stage<v>_<phase>` functions, one per stage and phase with
/// work (every stage has a forward one), and rewrites \p func as their
/// calls in pipeline order followed by the optimizer. Ops without a stage
/// run where what they read runs; weights, state and constants are copied
/// into every function that reads them. A weight read by several stages
/// (a tied embedding) is updated by the earliest reader's optimizer, where
/// dist-autodiff sums its gradient parts: that sum stays in the step, after
/// the calls, so each stage's part is a result of its own backward (summed
/// over the micro-batches by its list) and the parts meet once a step
/// (buildTrainList); in mixed precision each part is cast to the master
/// type in its stage. A mixed-precision step's
/// `graph.unscale` becomes one per stage and its overflow flag their `or`
/// (isOverflowFlag). Errors (on the op) for a training step no pipeline
/// can run in order.
mlir::LogicalResult outlineTrainStages(mlir::func::FuncOp func,
                                       int64_t numStages);

/// Whether \p v is a mixed-precision step's overflow flag: the flag of a
/// `graph.unscale`, or the `graph.binary or` of such flags that
/// outlineTrainStages makes when it splits the check by stage. Every list
/// of a pipeline computes the same flag, or-ed over the world
/// (buildTrainList), so every rank skips the step together.
bool isOverflowFlag(mlir::Value v);

/// Selective recomputation (Korthikanti et al.): every value of the
/// attention core a backward op of \p func reads (a forward result shaped
/// like attention scores: Q K^T, its scale and mask, the softmax, the
/// dropped-out probabilities) is computed again in that backward phase from
/// the core's inputs (Q, K, V, the mask), so the stash of a micro-batch
/// holds those inputs instead of the s x s tensors. Dropout masks are not
/// drawn again: a stashed mask stays stashed. Run on the training step
/// before outlineTrainStages; the numbers do not change.
void rematerializeAttentionCores(mlir::func::FuncOp func);

/// Builds the program of action list \p list for the outlined training
/// step \p func (see PartitionTrain.cpp), inserted at \p b; \p plan
/// places the list's data-parallel replicas and says whether the backward
/// recomputes its forward (recompute = full).
mlir::LogicalResult buildTrainList(mlir::func::FuncOp func,
                                   const ScheduleIR &s,
                                   const schedule::Plan &plan, unsigned list,
                                   mlir::OpBuilder &b);

/// \p t with its leading (sample) dimension \p m times as large.
mlir::RankedTensorType batchedType(mlir::Type t, int64_t m);

/// What a list program knows of the pipelined function's values, per
/// micro-batch: its inputs (the program's arguments, split into
/// micro-batches where first read) and what the program computed or
/// received so far.
class MicrobatchValues {
public:
  /// \p entry holds the program's arguments, \p b inserts at its end.
  MicrobatchValues(mlir::OpBuilder &b, mlir::Block *entry, int64_t m,
                   mlir::Location loc)
      : b(b), entry(entry), m(m), loc(loc) {}
  /// Micro-batch \p mb's value of \p v; null when not there yet.
  mlir::Value get(int64_t mb, mlir::Value v);
  void set(int64_t mb, mlir::Value v, mlir::Value mapped) {
    values[{mb, v.getAsOpaquePointer()}] = mapped;
  }

private:
  mlir::OpBuilder &b;
  mlir::Block *entry;
  int64_t m;
  mlir::Location loc;
  llvm::DenseMap<unsigned, dist::MicrobatchSplitOp> slices;
  llvm::DenseMap<std::pair<int64_t, void *>, mlir::Value> values;
};

} // namespace distopt::partition

#endif // DIST_PASSES_PARTITION_TRAINSTAGES_H
