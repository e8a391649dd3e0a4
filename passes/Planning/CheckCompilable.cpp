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

namespace distopt {
#define GEN_PASS_DEF_CHECKCOMPILABLEPASS
#include "passes/Passes.h.inc"
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
    if (auto why = codegen::findUnsupported(module, func->getSymName()))
      emitWarning(why->first)
          << "dist-compile cannot build programs for this model yet, so the "
             "plan below is a prediction only: "
          << why->second;
    markAllAnalysesPreserved();
  }
};
} // namespace
