//===- StagePlacement.h - Which pipeline stage each op goes to --*- C++ -*-===//
//
// Part of DistOpt. The analysis half of --dist-outline-stages: reads the
// plan's parallel degrees from the module and decides, for every top-level op
// of an annotated function, the virtual pipeline stage(s) it belongs to. It
// checks the annotations and reports every inconsistency before anything is
// rewritten, so a failed outlining leaves the IR as it was.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_PASSES_PARTITION_STAGEPLACEMENT_H
#define DIST_PASSES_PARTITION_STAGEPLACEMENT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallVector.h"

namespace distopt::partition {

/// Name of the per-op virtual stage annotation the planner writes.
inline constexpr llvm::StringLiteral kStageAttr = "dist.stage";
/// Name of the module's plan dictionary.
inline constexpr llvm::StringLiteral kPlanAttr = "dist.plan";

/// The parallel degrees of `dist.plan` that fix stages and meshes.
struct StageGrid {
  int64_t dp = 1, tp = 1, pp = 1, chunks = 1;
  /// PipeDream-style replicas per pipeline stage (`replicas`, with dp = 1
  /// and chunks = 1); empty: dp replicas for every stage.
  llvm::SmallVector<int64_t> replicas;

  int64_t numVirtualStages() const { return pp * chunks; }
  /// Pipeline rank (device group) that runs virtual stage \p v.
  int64_t pipelineRank(int64_t v) const { return v % pp; }
  /// Data-parallel replicas of pipeline rank \p s.
  int64_t replicasOf(int64_t s) const {
    return replicas.empty() ? dp : replicas[s];
  }
  /// Slot of replica 0 of pipeline rank \p s (slots are stage-major).
  int64_t firstSlot(int64_t s) const;
  /// Devices the plan needs: tp times the replicas of all stages.
  int64_t numDevices() const { return tp * firstSlot(pp); }
  /// Cluster device numbers of virtual stage \p v as a row-major
  /// [replicas, tp] mesh: rank = t + tp * (firstSlot(s) + d) with
  /// s = v % pp, which is t + tp * (d + dp * s) without `replicas`.
  llvm::SmallVector<int64_t> devices(int64_t v) const;
};

/// Reads dp, tp, pp, chunks (default 1) and replicas (optional) from the
/// module's `dist.plan`;
/// \p func names the function that needs them in the diagnostics.
mlir::FailureOr<StageGrid> readStageGrid(mlir::ModuleOp module,
                                         mlir::func::FuncOp func);

/// Where each top-level op of one function body goes.
struct StagePlacement {
  /// Virtual stages of each op, ascending; more than one only for ops in
  /// `cloned`.
  llvm::DenseMap<mlir::Operation *, llvm::SmallVector<int64_t, 1>> stages;
  /// Ops copied into every stage that uses them (cheap, pure and
  /// sample-independent: constants, weight reads, shape ops on those).
  llvm::DenseSet<mlir::Operation *> cloned;
};

/// True when some top-level op of \p func carries `dist.stage`.
bool hasStageAnnotations(mlir::func::FuncOp func);

/// Values \p op reads: its operands and the values its regions use from
/// outside, in first-use order.
llvm::SetVector<mlir::Value> usedValues(mlir::Operation *op);

/// Places every top-level op of \p func (single-block body) on virtual
/// stages of \p grid and checks that values only flow forward. Emits an
/// error on the offending op and fails on inconsistent annotations.
mlir::FailureOr<StagePlacement> placeOps(mlir::func::FuncOp func,
                                         const StageGrid &grid);

} // namespace distopt::partition

#endif // DIST_PASSES_PARTITION_STAGEPLACEMENT_H
