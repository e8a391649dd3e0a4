//===- Branches.h - The fork of a model and its pieces ----------*- C++ -*-===//
//
// Part of DistOpt. Finds where a planned function falls apart into
// independent branches (a trunk shared by several heads, the parallel paths
// of an Inception-style block) and describes its pieces for the branch
// placement search (lib/Search/Branches.h); writes a chosen placement onto
// the IR for dist-partition.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_PASSES_PLANNING_BRANCHES_H
#define DIST_PASSES_PLANNING_BRANCHES_H

#include "lib/Search/Branches.h"
#include "passes/Planning/Planning.h"

#include "llvm/ADT/DenseMap.h"

namespace distopt::planning {

/// The ops of \p func that do per-sample work (their results depend on
/// the inputs), in program order: what is placed; the others (weights,
/// constants, weight transforms) are cloned where they are used.
llvm::SmallVector<mlir::Operation *> sampleOps(mlir::func::FuncOp func);

/// The pieces of a forked function: 0 the trunk (the work before the
/// fork), 1..branches the branches (connected by no value among
/// themselves), branches + 1 the tail (after the join). Trunk and tail may
/// hold no ops.
struct BranchSplit {
  unsigned branches = 0;
  llvm::DenseMap<mlir::Operation *, unsigned> pieceOf;
  unsigned numPieces() const { return branches + 2; }
};

/// Finds the fork: the program is cut where one activation is live (as the
/// layer analysis cuts layers), and the stretch between two consecutive
/// cuts (or the start or end) whose ops fall apart into at least two
/// independent groups is the branch level; of several, the one with the
/// most ops. An error on \p func when there is none (a chain of layers).
mlir::FailureOr<BranchSplit> findBranches(mlir::func::FuncOp func);

/// The cost description of the pieces (one layer each, in piece order:
/// a copy of \p func reordered so that each piece is contiguous) and what
/// crosses between them.
mlir::FailureOr<std::pair<cost::ModelDesc, search::BranchShape>>
branchModel(mlir::func::FuncOp func, const BranchSplit &split,
            const Costing &costing);

/// Writes the placement: `dist.branch` on every op of \p split, the
/// devices of the pieces (`dist.branch_devices`) and a plan of one action
/// list per device up to the last one used (`dist.plan`, pp = lists,
/// one micro-batch of the batch, mode infer, objective latency).
void recordBranches(mlir::ModuleOp module, mlir::func::FuncOp func,
                    const BranchSplit &split,
                    const search::BranchPlacement &placement,
                    schedule::Plan plan);

/// Fails with an error naming \p pass when \p module holds a branch
/// placement (`dist.branch_devices`): passes that work on a chain of
/// stages (simulation, stage outlining, schedules) do not apply to it.
mlir::LogicalResult rejectBranchPlacement(mlir::ModuleOp module,
                                          llvm::StringRef pass);

} // namespace distopt::planning

#endif // DIST_PASSES_PLANNING_BRANCHES_H
