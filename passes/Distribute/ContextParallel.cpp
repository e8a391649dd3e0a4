//===- ContextParallel.cpp - The dist-context-parallel pass -----*- C++ -*-===//
//
// Part of DistOpt. Rewrites the planned forward function into what one
// context-parallel rank runs: its contiguous part of every sequence, the
// token-wise ops on it, and its attentions as ring attention over the
// rank's cp group (dist.ring_attention: the key/value blocks passed around
// the ring; RingAttention.cpp), or, where that form does not apply, the
// keys and values of the whole sequence all-gathered (Llama 3's all-gather
// context parallelism). The weights are read as they are: a rank's weight
// gradients are its tokens' part, which dist-partition sums over cp in the
// schedule's gradient sync (over dp x cp). Runs before dist-autodiff,
// which differentiates the rewritten function. docs/distributed.md
// "Context parallelism".
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/Planning/FusedKernels.h"
#include "passes/Planning/Planning.h"

#include "dialects/Dist/DistDialect.h"
#include "dialects/Dist/DistOps.h"
#include "dialects/Graph/GraphOps.h"
#include "lib/Schedule/Plan.h"
#include "lib/Schedule/RankLayout.h"
#include "passes/Distribute/RingAttention.h"
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

  /// Why the split is contiguous rather than balanced (empty: balanced):
  /// `balance=0`, or an input whose sequence does not cut into 2 cp chunks.
  std::string balancedSplit(Block &body, unsigned cp) {
    if (!balance)
      return "balance=0";
    for (BlockArgument arg : body.getArguments())
      if (int64_t seq = tensorOf(arg).getDimSize(1); seq % (2 * cp) != 0)
        return "input #" + std::to_string(arg.getArgNumber()) + " has " +
               std::to_string(seq) + " positions, which do not cut into the " +
               std::to_string(2 * cp) +
               " chunks of the load-balanced split (2 x cp)";
    return "";
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
    if (layout.replicated()) {
      emitError(module.getLoc())
          << "dist-context-parallel: the plan has cp = " << layout.cp
          << " with per-stage replicas; context parallelism executes with "
             "data, tensor (and sequence) and pipeline parallelism (dp x cp "
             "x tp x pp) yet: plan dp replicas of the whole pipeline";
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

    // Megatron's load-balanced split where every sequence cuts into 2 cp
    // chunks: rank c holds chunks c and 2 cp - 1 - c, so under a causal
    // mask each rank's ring computes the same share of the scores.
    std::string contiguousWhy = balancedSplit(body, layout.cp);
    bool balanced = contiguousWhy.empty();
    if (verbose && !balanced)
      func->emitRemark("dist-context-parallel: the sequence splits "
                       "contiguously (rank c holds [c S/cp, (c+1) S/cp)): ")
          << contiguousWhy;
    split::TokenSplit tokens(
        *func, layout.cp,
        [&](Operation *op) { return contextGroupsOf(op, layout); },
        /*attention=*/true, balanced);
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
      dist::setBalanced(slice, balanced);
      splitAttr.setAttr(slice, b.getI64IntegerAttr(layout.cp));
      arg.replaceAllUsesExcept(slice.getResult(), slice);
    });
    // Ring attention on the rank's K and V blocks (under tp > 1,
    // dist-tensor-parallel then splits each ring by heads).
    if (ring) {
      split::RingAttentions rings = split::formRingAttentions(*func);
      if (verbose && !rings.firstKept.empty())
        func->emitRemark("dist-context-parallel: ")
            << rings.formed << " attention(s) run as ring attention; "
            << rings.firstKept << " keeps the all-gather form";
    }
    llvm::DenseSet<Operation *> onSlots;
    if (failed(splitExpertSlots(*func, layout, tokens, onSlots)))
      return signalPassFailure();
    if (failed(readWeightsAsTheyAre(body, onSlots)))
      return signalPassFailure();
    if (failed(mlir::verify(*func)))
      return signalPassFailure();
  }

  /// The routed experts of each mixture-of-experts block
  /// (planning::routedExperts, docs/modelgen.md's form) run on the rank's
  /// part of every expert's capacity slots. Routing picks each expert's
  /// top-C tokens of the whole sequence, so TokenSplit leaves the routing,
  /// the dispatch and the combine whole (the router's scores and the
  /// block's input gathered over the cp group): every context rank
  /// dispatches the same [B, E, C, h] tokens, as one process does. Each
  /// then runs the experts on its C/cp slots of every expert
  /// (`split::sliceWhole` over the context group) and gathers the outputs
  /// whole before the combine, so the experts run once per replica and
  /// each context rank's expert-weight gradients are its slots' part,
  /// which the step's gradient sync sums over cp as it does the other
  /// weights'. dist-expert-parallel, which runs after, exchanges each
  /// context rank's slots over its expert group. Fills `onSlots` with the
  /// expert GEMMs (they read their weights as they are).
  LogicalResult splitExpertSlots(func::FuncOp func,
                                 const schedule::RankLayout &layout,
                                 const split::TokenSplit &tokens,
                                 llvm::DenseSet<Operation *> &onSlots) {
    llvm::DenseSet<Value> dependent = split::sampleDependent(func);
    auto isDep = [&](Value v) { return dependent.contains(v); };
    SmallVector<Operation *> gemms;
    func.walk([&](graph::MatmulOp m) {
      if (!tokens.contains(m) && planning::stackedExperts(m, isDep))
        gemms.push_back(m);
    });
    const int64_t cp = layout.cp;
    for (Operation *first : gemms) {
      if (onSlots.contains(first))
        continue;
      Value in = first->getOperand(0);
      SmallVector<Operation *> inputs =
          planning::expertInputs(gemms, first, onSlots);
      planning::RoutedExperts experts;
      // Every error names the plan and the GEMM; each says what to plan.
      auto fail = [&](Operation *at) {
        return at->emitError("dist-context-parallel: the plan has cp = ")
               << cp << " but this GEMM with stacked expert weights ";
      };
      if (std::string why = planning::routedExperts(inputs, isDep, experts);
          !why.empty())
        return fail(first)
               << "is not in a mixture-of-experts block whose capacity slots "
                  "split over the context ranks: "
               << why
               << " (the form is docs/modelgen.md's: dispatched tokens "
                  "[batch, experts, capacity, hidden], stacked-weight GEMMs, "
                  "elementwise ops between); plan cp = 1";
      auto type = cast<RankedTensorType>(in.getType());
      const int64_t axis = type.getRank() - 2; // the capacity slots
      if (!type.hasStaticShape())
        return fail(first) << "reads tokens " << type
                           << " of unknown shape; pin the inputs' shapes "
                              "(--input-shape) or plan cp = 1";
      if (type.getDimSize(axis) % cp != 0)
        return fail(first)
               << "runs " << type.getDimSize(axis)
               << " capacity slots per expert (top-k x sequence / experts), "
                  "which do not split over the "
               << cp << " context ranks; plan a cp that divides them";
      // The region between the GEMMs is elementwise on [.., E, C, f].
      std::string notElementwise;
      if (Operation *op =
              planning::notElementwiseBetween(experts, notElementwise))
        return fail(op) << "is in a block with " << notElementwise
                        << "; plan cp = 1";
      for (Operation *op :
           llvm::concat<Operation *const>(experts.inputs, experts.outputs))
        onSlots.insert(op);
      OpBuilder b(first);
      const std::vector<std::vector<unsigned>> groups =
          layout.contextGroups(split::stageOf(first, layout));
      Value slots = split::sliceWhole(b, first, in, axis, groups);
      for (Operation *op : experts.inputs)
        op->setOperand(0, slots);
      auto onRankSlots = [&](Value v) {
        auto t = cast<RankedTensorType>(v.getType());
        SmallVector<int64_t> shape(t.getShape());
        shape[axis] /= cp;
        v.setType(t.clone(shape));
      };
      for (Operation *op : llvm::concat<Operation *const>(
               experts.inputs, experts.between, experts.outputs))
        onRankSlots(op->getResult(0));
      // The outputs gathered whole before the combine.
      for (Operation *op : experts.outputs) {
        Value out = op->getResult(0);
        SmallVector<OpOperand *> uses;
        for (OpOperand &use : out.getUses())
          uses.push_back(&use);
        b.setInsertionPointAfter(op);
        Value whole = split::gatherWhole(
            b, op, out, cast<RankedTensorType>(out.getType()), axis, groups);
        for (OpOperand *use : uses)
          use->set(whole);
      }
    }
    return success();
  }

  /// The token-split ops read the weights through the copies TokenSplit
  /// made (their gradients summed over the cp group in every micro-batch's
  /// backward): read them as they are instead, so each context rank's
  /// weight gradients are its tokens' part, which the schedule's gradient
  /// sync sums over cp once per step (with dp's mean, over the stage's
  /// dp x cp devices: dist-partition). So are whole values computed from
  /// weights alone (a transposed tied embedding). A trained weight that
  /// any other op reads (whole, or sliced along the tokens) would have the
  /// whole sequence's gradient on every context rank, which that sum would
  /// count cp times: refused.
  LogicalResult
  readWeightsAsTheyAre(Block &body,
                       const llvm::DenseSet<Operation *> &onSlots) {
    // Ops computed from weights and constants alone, and the trained
    // weight each of those that reads one reads (the first).
    llvm::DenseSet<Operation *> fromWeights;
    llvm::DenseMap<Operation *, graph::WeightOp> trained;
    for (Operation &op : body) {
      if (auto weight = dyn_cast<graph::WeightOp>(op)) {
        fromWeights.insert(&op);
        auto type = dyn_cast<RankedTensorType>(weight.getType());
        if (!weight.getFrozen() && type &&
            isa<FloatType>(type.getElementType()))
          trained[&op] = weight;
        continue;
      }
      if (isa<graph::ConstantOp>(op)) {
        fromWeights.insert(&op);
        continue;
      }
      if (op.getNumResults() == 0 || op.getNumOperands() == 0 ||
          isa<dist::DistDialect>(op.getDialect()) ||
          llvm::any_of(op.getOperands(), [&](Value v) {
            return !v.getDefiningOp() ||
                   !fromWeights.contains(v.getDefiningOp());
          }))
        continue;
      fromWeights.insert(&op);
      for (Value v : op.getOperands())
        if (graph::WeightOp w = trained.lookup(v.getDefiningOp())) {
          trained[&op] = w;
          break;
        }
    }
    SmallVector<dist::TpCopyOp> copies;
    for (Operation &op : body) {
      graph::WeightOp weight = trained.lookup(&op);
      if (!weight)
        continue;
      for (Operation *user : op.getUsers()) {
        if (auto copy = dyn_cast<dist::TpCopyOp>(user)) {
          copies.push_back(copy);
          continue;
        }
        if (fromWeights.contains(user) || onSlots.contains(user))
          continue;
        return user->emitError("dist-context-parallel: '")
               << user->getName() << "' reads the trained weight '"
               << weight.getSymName()
               << "' outside the rank's tokens (whole, or sliced along "
                  "them): its gradient would be the whole sequence's on "
                  "every context rank, which the step's gradient sum over "
                  "the cp ranks counts cp times; context parallelism trains "
                  "weights that token-wise ops read (matmuls, norms, "
                  "lookups of the rank's ids) yet: plan cp = 1";
      }
    }
    for (dist::TpCopyOp copy : copies) {
      copy.getResult().replaceAllUsesWith(copy.getInput());
      copy->erase();
    }
    return success();
  }
};

} // namespace
