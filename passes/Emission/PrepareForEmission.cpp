//===- PrepareForEmission.cpp - The dist-prepare-for-emission pass --------===//
//
// Part of DistOpt. Runs the emission steps (EmissionSteps.h) on every body
// the printer emits: each function's, or each pipeline stage's when the
// function is made of dist.stage regions. docs/codegen.md lists what the
// printer then reads.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "passes/Emission/EmissionSteps.h"

#include "dialects/Dist/DistOps.h"
#include "dialects/Emit/EmitDialect.h"

namespace distopt {
#define GEN_PASS_DEF_PREPAREFOREMISSIONPASS
#include "passes/Emission/Passes.h.inc"
} // namespace distopt

using namespace mlir;
using namespace distopt;

namespace {

struct PrepareForEmissionPass
    : public distopt::impl::PrepareForEmissionPassBase<PrepareForEmissionPass> {
  using Base::Base;

  void prepare(Operation *holder, Block &body,
               const emission::EmissionOptions &options, bool called = false) {
    if (holder->hasAttr(emit::kMemoryPlanAttr))
      return; // prepared before
    // Tensor-parallel region entries are the identity once dist-autodiff
    // gave them their gradient.
    for (auto copy : llvm::make_early_inc_range(body.getOps<dist::TpCopyOp>())) {
      copy.getResult().replaceAllUsesWith(copy.getInput());
      copy.erase();
    }
    emission::markPrecision(body);
    emission::formKernels(body, options);
    emission::assignLayouts(body, options);
    emission::markAsync(body, options);
    emission::planMemory(holder, body, options, called);
  }

  void runOnOperation() override {
    emission::EmissionOptions options;
    options.cpu = target == EmissionTarget::CPU;
    options.postOps = postOps;
    options.inPlace = inPlace;
    options.eltwise = eltwiseKernels;
    options.views = views;
    options.channelsLast = channelsLast;
    options.async = asyncCollectives;
    // Functions another function calls (pipeline stages called by action
    // lists) read their arguments where the caller holds them.
    llvm::DenseSet<StringAttr> called;
    getOperation().walk([&](func::CallOp call) {
      called.insert(call.getCalleeAttr().getAttr());
    });
    getOperation().walk([&](func::FuncOp func) {
      if (func.isExternal() || !func.getBody().hasOneBlock())
        return;
      Block &body = func.getBody().front();
      bool staged = llvm::any_of(
          body, [](Operation &op) { return isa<dist::StageOp>(op); });
      if (!staged) {
        prepare(func, body, options, called.contains(func.getSymNameAttr()));
        return;
      }
      for (Operation &op : body)
        if (auto stage = dyn_cast<dist::StageOp>(op))
          prepare(stage, stage.getBody().front(), options);
    });
  }
};

} // namespace
