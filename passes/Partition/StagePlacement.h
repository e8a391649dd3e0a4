//===- StagePlacement.h - Which pipeline stage each op goes to --*- C++ -*-===//
//
// Part of DistOpt. The analysis half of --dist-outline-stages: reads the
// module's plan and decides, for every top-level op of an annotated
// function, the virtual pipeline stage(s) it belongs to. It
// checks the annotations and reports every inconsistency before anything is
// rewritten, so a failed outlining leaves the IR as it was.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_PASSES_PARTITION_STAGEPLACEMENT_H
#define DIST_PASSES_PARTITION_STAGEPLACEMENT_H

#include "dialects/Dist/DistDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallVector.h"

namespace distopt::partition {

/// Name of the per-op virtual stage annotation the planner writes.
inline constexpr llvm::StringLiteral kStageAttr =
    dist::DistDialect::VirtualStageAttrHelper::getNameStr();

/// The module's plan, for \p func's stages; emits an error on \p func when
/// the module has none.
mlir::FailureOr<dist::PlanAttr> readPlan(mlir::ModuleOp module,
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
/// stages of \p plan and checks that values only flow forward. Emits an
/// error on the offending op and fails on inconsistent annotations.
mlir::FailureOr<StagePlacement> placeOps(mlir::func::FuncOp func,
                                         dist::PlanAttr plan);

} // namespace distopt::partition

#endif // DIST_PASSES_PARTITION_STAGEPLACEMENT_H
