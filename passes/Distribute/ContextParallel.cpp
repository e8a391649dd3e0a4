//===- ContextParallel.cpp - The dist-context-parallel pass -----*- C++ -*-===//
//
// Part of DistOpt. Rewrites the planned forward function into what one
// context-parallel rank runs: its contiguous part of every sequence, the
// token-wise ops on it, and in attention the keys and values of the whole
// sequence, all-gathered over the rank's cp group (Llama 3's all-gather
// context parallelism). Runs before dist-autodiff, which differentiates
// the rewritten function. docs/distributed.md "Context parallelism".
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/Planning/Planning.h"

#include "dialects/Dist/DistDialect.h"
#include "dialects/Dist/DistOps.h"
#include "dialects/Graph/GraphOps.h"
#include "lib/Schedule/Plan.h"
#include "lib/Schedule/RankLayout.h"
#include "passes/Distribute/TokenSplit.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"

namespace distopt {
#define GEN_PASS_DEF_CONTEXTPARALLELPASS
#include "passes/Distribute/Passes.h.inc"
} // namespace distopt

using namespace mlir;
using namespace distopt;
using split::Split;
using split::tensorOf;

namespace {

/// The context-parallel groups of the pipeline stage that runs `op` (its
/// `dist.virtual_stage`, else stage 0): one per data-parallel replica.
std::vector<std::vector<unsigned>>
contextGroupsOf(Operation *op, const schedule::RankLayout &layout) {
  return layout.contextGroups(split::stageOf(op, layout));
}

struct ContextParallelPass
    : public distopt::impl::ContextParallelPassBase<ContextParallelPass> {
  using Base::Base;

  /// The sequence dimension of input `arg`: dimension 1, which must split
  /// cp ways behind one row.
  LogicalResult checkInput(func::FuncOp func, BlockArgument arg, unsigned cp) {
    auto t = tensorOf(arg);
    auto name =
        func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "graph.name");
    auto fail = [&]() {
      return func.emitError("dist-context-parallel: input #")
             << arg.getArgNumber() << (name ? " '" + name.str() + "'" : "")
             << " of @" << func.getSymName() << " (" << arg.getType() << ") ";
    };
    if (!t || !t.hasStaticShape() || t.getRank() < 2)
      return fail() << "has no sequence dimension (dimension 1 of a "
                       "statically shaped [rows, sequence, ...] tensor) to "
                       "split over cp = "
                    << cp << " ranks; plan cp = 1";
    if (t.getDimSize(1) % cp != 0)
      return fail() << "has a sequence of " << t.getDimSize(1)
                    << " positions, which does not split over cp = " << cp
                    << " ranks; plan a cp that divides it";
    if (t.getDimSize(0) != 1)
      return fail() << "holds " << t.getDimSize(0)
                    << " rows; context parallelism splits the sequence of a "
                       "micro-batch of one row (plan mbs=1, or compile for "
                       "one row: --input-shape NAME:1x...)";
    return success();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    auto plan = dist::DistDialect::PlanAttrHelper(ctx).getAttr(module);
    if (!plan) {
      emitError(module.getLoc())
          << "dist-context-parallel needs the module's plan ('dist.plan'): "
             "run dist-set-plan or dist-search-plan first";
      return signalPassFailure();
    }
    schedule::RankLayout layout = plan.getLayout();
    if (layout.cp == 1)
      return;
    if (layout.tp != 1 || layout.replicated()) {
      emitError(module.getLoc())
          << "dist-context-parallel: the plan has cp = " << layout.cp
          << (layout.tp != 1 ? " with tp = " + std::to_string(layout.tp)
                             : std::string(" with per-stage replicas"))
          << "; context parallelism executes with data and pipeline "
             "parallelism (dp x cp x pp) yet: plan tp = 1 and dp replicas";
      return signalPassFailure();
    }
    if (schedule::isAsync(plan.getSchedule())) {
      emitError(module.getLoc())
          << "dist-context-parallel: the plan has cp = " << layout.cp
          << " under the asynchronous schedule \""
          << schedule::scheduleName(plan.getSchedule())
          << "\"; context parallelism executes under the synchronous "
             "schedules yet: plan gpipe, 1f1b, interleaved or a zero-bubble "
             "one";
      return signalPassFailure();
    }
    if (plan.getZero() != 0) {
      emitError(module.getLoc())
          << "dist-context-parallel: the plan has cp = " << layout.cp
          << " with zero = " << plan.getZero()
          << "; context parallelism executes without ZeRO yet: plan zero=0";
      return signalPassFailure();
    }
    FailureOr<func::FuncOp> func =
        planning::plannedFunction(module, "", "dist-context-parallel");
    if (failed(func))
      return signalPassFailure();
    if (func->getBody().getBlocks().size() != 1) {
      func->emitError("dist-context-parallel: @")
          << func->getSymName() << " must be one block";
      return signalPassFailure();
    }
    Block &body = func->getBody().front();
    for (BlockArgument arg : body.getArguments())
      if (failed(checkInput(*func, arg, layout.cp)))
        return signalPassFailure();

    split::TokenSplit tokens(
        *func, layout.cp,
        [&](Operation *op) { return contextGroupsOf(op, layout); },
        /*attention=*/true);
    for (BlockArgument arg : body.getArguments())
      tokens.seed(arg, Split{1, 1});
    tokens.analyze();
    if (tokens.attentions() == 0) {
      func->emitError("dist-context-parallel: the plan has cp = ")
          << layout.cp << " but no attention of @" << func->getSymName()
          << " reads the split sequence (a matmul of the rank's queries "
             "against token-split keys or values)"
          << (tokens.firstWhole().empty()
                  ? std::string()
                  : "; the split first stops at " + tokens.firstWhole())
          << "; context parallelism splits the sequence of attention "
             "models: plan cp = 1";
      return signalPassFailure();
    }
    if (verbose && !tokens.firstWhole().empty())
      func->emitRemark("dist-context-parallel: a token-split value is first "
                       "gathered whole before ")
          << tokens.firstWhole();

    OpBuilder b(ctx);
    dist::DistDialect::ContextSplitAttrHelper splitAttr(ctx);
    tokens.rewrite([&](Value v, Split s) {
      RankedTensorType local = split::localType(tensorOf(v), s, layout.cp);
      auto arg = dyn_cast<BlockArgument>(v);
      if (!arg) {
        v.setType(local);
        return;
      }
      // An input: every rank reads the whole rows and keeps its part,
      // before (and on the stage of) its first reader.
      Operation *first = nullptr;
      for (Operation *user : arg.getUsers())
        if (!first || user->isBeforeInBlock(first))
          first = user;
      if (!first)
        return;
      b.setInsertionPoint(first);
      auto slice = split::createCollective<dist::AllSliceOp>(
          b, first, contextGroupsOf(first, layout), local, arg,
          b.getI64IntegerAttr(s.dim));
      split::placeLike(slice, first);
      splitAttr.setAttr(slice, b.getI64IntegerAttr(layout.cp));
      arg.replaceAllUsesExcept(slice.getResult(), slice);
    });
    if (failed(mlir::verify(*func)))
      return signalPassFailure();
  }
};

} // namespace
