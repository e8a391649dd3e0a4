//===- ExportPlan.cpp - The dist-export-plan pass ---------------*- C++ -*-===//
//
// Part of DistOpt. Writes the module's plan as the configuration of another
// trainer (Megatron-LM, torchtitan, DeepSpeed; lib/Export/Trainers.h).
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/Planning/Planning.h"

#include "llvm/Support/WithColor.h"

namespace distopt {
#define GEN_PASS_DEF_EXPORTPLANPASS
#include "passes/Planning/Passes.h.inc"
} // namespace distopt

using namespace mlir;
using namespace distopt;
using namespace distopt::planning;

namespace {
struct ExportPlanPass
    : public distopt::impl::ExportPlanPassBase<ExportPlanPass> {
  using Base::Base;
  void runOnOperation() override {
    if (failed(run(getOperation())))
      signalPassFailure();
    markAllAnalysesPreserved();
  }

  LogicalResult run(ModuleOp module) {
    llvm::Expected<exporting::TrainerSpec> spec =
        exporting::parseTrainerSpec(trainer);
    if (!spec)
      return emitError(module.getLoc())
             << "bad --dist-export='" << trainer
             << "': " << llvm::toString(spec.takeError());
    auto planAttr =
        dist::DistDialect::PlanAttrHelper(&getContext()).getAttr(module);
    if (!planAttr)
      return emitError(module.getLoc())
             << "--dist-export writes a plan: add --dist-plan=..., "
                "--dist-plan-from=... or --dist-search";
    schedule::Plan plan = planAttr.toPlan();
    FailureOr<cost::ModelDesc> model = planningModel(module, Costing::of(plan));
    if (failed(model))
      return failure();
    llvm::Expected<exporting::Export> out =
        exporting::exportPlan(spec->trainer, plan, *model);
    if (!out)
      return emitError(module.getLoc()) << "--dist-export=" << trainer << ": "
                                        << llvm::toString(out.takeError());
    std::string file = spec->file.empty()
                           ? exporting::defaultExportFile(spec->trainer).str()
                           : spec->file;
    if (failed(writeFile(module, file, "export",
                         [&](llvm::raw_ostream &os) { os << out->text; })))
      return failure();
    std::string what = exporting::trainerName(spec->trainer).str();
    warnNotes(what, out->notes);
    llvm::errs() << "wrote the plan as " << what << " configuration to " << file
                 << "\n";
    return success();
  }
};
} // namespace
