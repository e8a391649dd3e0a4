//===- SetPlan.cpp - The dist-set-plan pass ----------------------*- C++ -*-===//
//
// Part of DistOpt. Checks a hand-written plan against the module's function
// and cluster, finalizes it (micro-batches, balanced stages) and records it.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/Planning/Planning.h"

namespace distopt {
#define GEN_PASS_DEF_SETPLANPASS
#include "passes/Planning/Passes.h.inc"
} // namespace distopt

using namespace mlir;
using namespace distopt;
using namespace distopt::planning;

namespace {
struct SetPlanPass : public distopt::impl::SetPlanPassBase<SetPlanPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(run(module)))
      signalPassFailure();
  }

  LogicalResult run(ModuleOp module) {
    // The pass may report on the whole module; printing it under the error
    // would bury the message.
    if (plan.empty() && from.empty())
      return emitError(module.getLoc())
             << "dist-set-plan needs a plan: --dist-plan=\"dp=..,tp=..,pp=..,"
                "mbs=..,schedule=..\" (plan=...), --dist-plan-from="
                "megatron:ARGS_FILE (from=...), or --dist-search to find one";
    if (!plan.empty() && !from.empty())
      return emitError(module.getLoc())
             << "give --dist-plan or --dist-plan-from, not both";
    Costing costing{dtype, fusedAttention, optimizer};
    schedule::Plan p;
    unsigned globalBatch = batch;
    if (!from.empty()) {
      // Its precision and attention kernel decide how the model is costed.
      FailureOr<exporting::ImportedPlan> imported =
          readTrainerPlan(module, from, costing, batch, "dist-set-plan");
      if (failed(imported))
        return failure();
      p = imported->plan;
      costing = Costing::of(p);
      globalBatch = imported->globalBatch;
      if (globalBatch == 0)
        return emitError(module.getLoc())
               << from << " gives no --global-batch-size: pass --dist-batch=N";
    } else {
      if (batch == 0)
        return emitError(module.getLoc())
               << "--dist-plan needs the global batch in samples: pass "
                  "--dist-batch=N (dist-set-plan's batch=N)";
      llvm::Expected<schedule::Plan> parsed = schedule::parsePlan(plan);
      if (!parsed)
        return emitError(module.getLoc())
               << "bad --dist-plan: " << llvm::toString(parsed.takeError());
      p = std::move(*parsed);
    }
    p.mode = mode;
    p.objective = objective;
    costing.applyTo(p);
    if (mode == schedule::Mode::Infer)
      p.schedule = schedule::ScheduleKind::GPipe;
    FailureOr<PlanningInputs> in =
        planningInputs(module, costing, "dist-set-plan");
    if (failed(in))
      return failure();
    cost::CostModel cm = in->machine.costModel(costing);
    if (llvm::Error err = schedule::finalizePlan(
            p, in->model, in->machine.cluster, globalBatch, cm))
      return emitError(module.getLoc()) << (from.empty() ? "" : from + ": ")
                                        << llvm::toString(std::move(err));
    recordPlan(module, p, in->ops);
    return success();
  }
};
} // namespace
