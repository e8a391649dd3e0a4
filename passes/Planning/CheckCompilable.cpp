//===- CheckCompilable.cpp - The dist-check-compilable pass ------*- C++ -*-===//
//
// Part of DistOpt. Says, before a plan is printed, when dist-compile could
// not build programs for the planned function: a dry run of its code
// generation (codegen::findUnsupported) and a warning at the first op that
// does not lower.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/Planning/Planning.h"

#include "lib/Codegen/Codegen.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/ScopeExit.h"

namespace distopt {
#define GEN_PASS_DEF_CHECKCOMPILABLEPASS
#include "passes/Planning/Passes.h.inc"
} // namespace distopt

using namespace mlir;
using namespace distopt;

namespace {
struct CheckCompilablePass
    : public distopt::impl::CheckCompilablePassBase<CheckCompilablePass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<func::FuncOp> func =
        planning::plannedFunction(module, funcName, "dist-check-compilable");
    if (failed(func))
      return signalPassFailure();
    // dist-compile prints what dist-prepare-for-emission decides: probe a
    // prepared copy (nested in the module while the pass runs, so that the
    // preparation can run on it), and leave the module as it was.
    auto copy = cast<ModuleOp>(module->clone());
    module.getBody()->push_back(copy);
    llvm::scope_exit erase([&] { copy->erase(); });
    std::optional<std::pair<Location, std::string>> why;
    {
      std::optional<std::pair<Location, std::string>> prepError;
      ScopedDiagnosticHandler capture(&getContext(), [&](Diagnostic &d) {
        if (d.getSeverity() == DiagnosticSeverity::Error && !prepError)
          prepError.emplace(d.getLocation(), d.str());
        return success();
      });
      OpPassManager pm(ModuleOp::getOperationName());
      pm.addPass(createPrepareForEmissionPass());
      if (failed(runPipeline(pm, copy)))
        why = prepError ? prepError
                        : std::make_pair(module.getLoc(),
                                         std::string("dist-prepare-for-"
                                                     "emission failed"));
    }
    if (!why)
      why = codegen::findUnsupported(copy, func->getSymName());
    if (why)
      emitWarning(why->first)
          << "dist-compile cannot build programs for this model yet, so the "
             "plan below is a prediction only: "
          << why->second;
    markAllAnalysesPreserved();
  }
};
} // namespace
