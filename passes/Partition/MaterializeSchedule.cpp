//===- MaterializeSchedule.cpp - The plan's schedule as IR -------*- C++ -*-===//
//
// Part of DistOpt. Generates the action lists of the module's plan and
// writes them as a dist.schedule whose compute actions call the stage
// functions (outlining them first when the planned function is not).
//
//===----------------------------------------------------------------------===//
#include "passes/Partition/ScheduleIR.h"
#include "passes/Passes.h"
#include "passes/Planning/Branches.h"
#include "passes/Planning/Planning.h"

#include "mlir/Pass/PassManager.h"

namespace distopt {
#define GEN_PASS_DEF_MATERIALIZESCHEDULEPASS
#include "passes/Partition/Passes.h.inc"
} // namespace distopt

using namespace mlir;
using namespace distopt;

/// True when \p func calls stage functions (it is outlined).
static bool callsStages(func::FuncOp func) {
  auto helper = dist::DistDialect::VirtualStageAttrHelper(func.getContext());
  bool found = false;
  func.walk([&](func::CallOp call) {
    if (auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
            call, call.getCalleeAttr()))
      found |= helper.isAttrPresent(callee);
  });
  return found;
}

namespace {
struct MaterializeSchedulePass
    : public distopt::impl::MaterializeSchedulePassBase<
          MaterializeSchedulePass> {
  using Base::Base;
  void runOnOperation() override {
    if (failed(run(getOperation())))
      signalPassFailure();
  }

  LogicalResult run(ModuleOp module) {
    if (failed(planning::rejectBranchPlacement(module,
                                               "dist-materialize-schedule")))
      return failure();
    auto plan = dist::DistDialect::PlanAttrHelper(&getContext()).getAttr(module);
    if (!plan)
      return emitError(module.getLoc())
             << "dist-materialize-schedule needs the module's plan "
                "('dist.plan'); plan it first (--dist-plan=... or "
                "--dist-search)";
    FailureOr<func::FuncOp> func =
        planning::plannedFunction(module, "", "dist-materialize-schedule");
    if (failed(func))
      return failure();
    // The schedule calls stage functions: outline the planned function
    // first when it is still annotated ops or dist.stage regions.
    if (!callsStages(*func)) {
      bool regions = !func->getOps<dist::StageOp>().empty();
      OpPassManager pm(ModuleOp::getOperationName());
      if (!regions)
        pm.addPass(createOutlineStagesPass());
      pm.addPass(createOutlineStageFunctionsPass());
      if (failed(runPipeline(pm, module)))
        return failure();
    }
    FailureOr<SmallVector<func::FuncOp>> stages =
        partition::stageFunctions(*func, plan);
    if (failed(stages))
      return failure();
    schedule::Plan p = plan.toPlan();
    if (forward)
      p.mode = schedule::Mode::Infer;
    llvm::Expected<schedule::Schedule> s = partition::planSchedule(p);
    if (!s)
      return emitError(module.getLoc())
             << "dist-materialize-schedule: " << llvm::toString(s.takeError());
    partition::writeSchedule(*func, plan, *s, *stages);
    return success();
  }
};
} // namespace
