//===- ScheduleIR.h - Schedules between the IR and the cost core -*- C++ -*-===//
//
// Part of DistOpt. A schedule lives in the IR as a `dist.schedule` of
// per-rank `dist.actions` lists (dialects/Dist/DistScheduleOps.td) and in
// the cost core as schedule::Schedule. These functions convert between the
// two, so the generators, the verifier, the simulator and the code
// generator work on one schedule whichever form it is in.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_PASSES_PARTITION_SCHEDULEIR_H
#define DIST_PASSES_PARTITION_SCHEDULEIR_H

#include "dialects/Dist/DistOps.h"
#include "lib/Schedule/Schedule.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <optional>

namespace distopt::partition {

/// The schedule \p plan's kind generates: the training schedule, or for an
/// inference plan the forward-only stream.
llvm::Expected<schedule::Schedule> planSchedule(const schedule::Plan &plan);

/// The name `dist.schedule` gives \p s's kind: the schedule's name, or
/// "forward" for a forward-only stream.
std::string scheduleKindName(const schedule::Schedule &s);

/// The stage functions of \p func in virtual-stage order: the callees of its
/// calls that carry `dist.virtual_stage`. Emits an error on \p func when a
/// virtual stage of \p plan has none.
mlir::FailureOr<llvm::SmallVector<mlir::func::FuncOp>>
stageFunctions(mlir::func::FuncOp func, dist::PlanAttr plan);

/// Writes \p s as the `dist.schedule` of \p func at the end of the module,
/// replacing one it had; compute actions call \p stages[v] for virtual
/// stage v.
dist::ScheduleOp writeSchedule(mlir::func::FuncOp func, dist::PlanAttr plan,
                               const schedule::Schedule &s,
                               llvm::ArrayRef<mlir::func::FuncOp> stages);

/// A schedule read from the IR: the cost core's form and, for every action,
/// the op it came from.
struct ScheduleIR {
  dist::ScheduleOp op;
  schedule::Schedule schedule;
  std::vector<std::vector<mlir::Operation *>> actions;
};

/// The module's `dist.schedule` (at most one), converted with the plan's
/// shape; nullopt when the module has none.
mlir::FailureOr<std::optional<ScheduleIR>> readScheduleIR(mlir::ModuleOp module,
                                                          dist::PlanAttr plan);

/// Just the schedule of readScheduleIR.
mlir::FailureOr<std::optional<schedule::Schedule>>
readSchedule(mlir::ModuleOp module, dist::PlanAttr plan);

/// Names the ops \p entry gained after \p before (every op when null) with
/// `dist.action`, the name of the schedule action \p a they carry out
/// (schedule::Action::str(): "F3.0", "OPT"), unless they have one: the
/// executor's trace times each action by it.
void labelAction(mlir::Block *entry, mlir::Operation *before,
                 const schedule::Action &a);

} // namespace distopt::partition

#endif // DIST_PASSES_PARTITION_SCHEDULEIR_H
