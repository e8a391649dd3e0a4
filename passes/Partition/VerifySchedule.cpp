//===- VerifySchedule.cpp - The dist-verify-schedule pass --------*- C++ -*-===//
//
// Part of DistOpt. Runs the cost core's schedule verifier on the module's
// dist.schedule and reports a problem on the action op it is about.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/Partition/ScheduleIR.h"
#include "passes/Planning/Planning.h"

namespace distopt {
#define GEN_PASS_DEF_VERIFYSCHEDULEPASS
#include "passes/Partition/Passes.h.inc"
} // namespace distopt

using namespace mlir;
using namespace distopt;
using namespace distopt::planning;

namespace {
struct VerifySchedulePass
    : public distopt::impl::VerifySchedulePassBase<VerifySchedulePass> {
  using Base::Base;
  void runOnOperation() override {
    if (failed(run(getOperation())))
      signalPassFailure();
    markAllAnalysesPreserved();
  }

  LogicalResult run(ModuleOp module) {
    auto *dialect = getContext().getOrLoadDialect<dist::DistDialect>();
    auto plan = dialect->getPlanAttrHelper().getAttr(module);
    if (!plan)
      return emitError(module.getLoc())
             << "dist-verify-schedule needs the module's plan ('dist.plan')";
    FailureOr<std::optional<partition::ScheduleIR>> ir =
        partition::readScheduleIR(module, plan);
    if (failed(ir))
      return failure();
    if (!*ir)
      return emitError(module.getLoc())
             << "dist-verify-schedule: the module has no dist.schedule; "
                "write one with dist-materialize-schedule";
    double limit = 0;
    if (!memoryLimit.empty()) {
      llvm::Expected<double> parsed = cost::parseByteSize(memoryLimit);
      if (!parsed)
        return emitError(module.getLoc())
               << "bad memory-limit='" << memoryLimit
               << "': " << llvm::toString(parsed.takeError());
      limit = *parsed;
    }
    // Memory is checked when the module says what the devices hold.
    std::optional<schedule::PipelineCosts> costs;
    if (dialect->getClusterAttrHelper().isAttrPresent(module)) {
      FailureOr<ModuleMachine> machine =
          moduleMachine(module, "dist-verify-schedule");
      if (failed(machine))
        return failure();
      schedule::Plan p = plan.toPlan();
      FailureOr<cost::ModelDesc> model = planningModel(module, p.dtype);
      if (failed(model))
        return failure();
      cost::CostModel cm = machine->costModel();
      costs = schedule::buildPipelineCosts(p, *model, machine->cluster, cm,
                                           (*ir)->schedule.weightVersions,
                                           planning::Costing::of(p).memory());
    }
    llvm::Error err = schedule::verifySchedule(
        (*ir)->schedule, costs ? &*costs : nullptr, limit);
    if (!err)
      return success();
    LogicalResult result = failure();
    llvm::handleAllErrors(
        std::move(err),
        [&](const schedule::ScheduleError &e) {
          partition::ScheduleIR &s = **ir;
          Operation *at = s.op;
          if (e.list >= 0 && e.list < static_cast<int>(s.actions.size())) {
            const auto &ops = s.actions[e.list];
            if (e.action >= 0 && e.action < static_cast<int>(ops.size()))
              at = ops[e.action];
            else
              for (auto list : s.op.getBody().getOps<dist::ActionsOp>())
                if (static_cast<int64_t>(list.getRank()) == e.list)
                  at = list;
          }
          at->emitError(e.message);
        },
        [&](const llvm::ErrorInfoBase &e) {
          (*ir)->op.emitError(e.message());
        });
    return result;
  }
};
} // namespace
