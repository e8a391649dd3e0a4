//===- ExpertParallel.cpp - The dist-expert-parallel pass -------*- C++ -*-===//
//
// Part of DistOpt. Rewrites the planned forward function into what one
// expert-parallel rank runs (GShard): the routed experts of each
// mixture-of-experts block (planning::routedExperts, the form the cost
// model recognizes) run on the rank's E/ep experts for the tokens of every
// rank of its expert group. The dispatched tokens [B, .., E, C, h] go
// through `dist.all_to_all` over the group (the experts' axis split into
// ep pieces, the pieces concatenated along the leading one:
// [ep B, .., E/ep, C, h]), the expert GEMMs read the rank's part of the
// stacked weights ([E/ep, in, out], `dist.tp_shard` [0, 1, ep]: each rank
// reads only its part of the weight file), and the inverse all-to-all
// brings the outputs back before the routing weights and the combine.
// With tensor parallelism each expert's GEMMs are split over the tensor
// ranks too, as the cost model prices them (planning::routedExperts): the
// input GEMMs column-parallel (their weights' output features split), the
// output GEMMs row-parallel (input features split). Each tensor rank
// exchanges only its C/tp of every expert's capacity slots (the bytes the
// cost model prices); the slots of the tensor group are gathered before
// the experts, the partial sums reduce-scattered onto the rank's slots
// after them (Megatron's expert tensor parallelism), and the exchanged
// outputs gathered whole for the combine. The weights then carry two
// axes, `dist.tp_shard` [0, 1, ep, tp, feature, 1, tp, 1]: the experts by
// the rank's replica coordinate ((rank / tp) mod ep), the features by its
// tensor coordinate; the expert groups are the ranks of one tensor
// coordinate (RankLayout::expertGroups). With ep = 1 the experts split
// over the tensor ranks alone (Megatron's copy before, all-reduce after),
// under cp on the context rank's slots.
// With sequence parallelism dist-tensor-parallel has gathered the block's
// input over the tensor group before the routing, so every tensor rank
// routes the whole sequence's tokens as without it.
// Routing is per sequence, so each rank routes its own rows as one process
// would. With context parallelism dist-context-parallel, which runs
// first, leaves the routing whole on every context rank and runs the
// experts on the rank's part of the capacity slots ([.., E, C/cp, h]):
// the expert groups are then the replicas of one context rank
// (RankLayout::expertGroups), which exchange those slots; with tensor
// parallelism too each tensor rank of a context rank exchanges its
// C/(cp tp) of them, as at cp = 1, and the experts' part is the replica
// coordinate, (rank / (tp cp)) mod ep. Runs before
// dist-autodiff, whose all-to-all rule (the inverse exchange) makes the
// backward; dist-partition syncs the experts' gradients over the expert data
// group (the ranks that hold the same experts). docs/distributed.md "Expert
// parallelism".
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/Planning/FusedKernels.h"
#include "passes/Planning/Planning.h"

#include "dialects/Dist/DistDialect.h"
#include "dialects/Dist/DistOps.h"
#include "dialects/Graph/GraphOps.h"
#include "lib/Schedule/RankLayout.h"
#include "passes/Distribute/SplitValues.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/DenseSet.h"

namespace distopt {
#define GEN_PASS_DEF_EXPERTPARALLELPASS
#include "passes/Distribute/Passes.h.inc"
} // namespace distopt

using namespace mlir;
using namespace distopt;
namespace g = distopt::graph;

namespace {

/// `type` as one expert rank holds it: the leading dimension ep times, the
/// experts' dimension (`axis`) an ep-th.
RankedTensorType rankPart(Type type, int64_t axis, int64_t ep) {
  auto t = cast<RankedTensorType>(type);
  SmallVector<int64_t> shape(t.getShape());
  shape[0] *= ep;
  shape[axis] /= ep;
  return t.clone(shape);
}

/// Why a block of routed experts cannot run split, and at which op.
struct Refusal {
  Operation *at = nullptr;
  std::string why;
};

class Rewriter {
public:
  Rewriter(func::FuncOp func, const schedule::RankLayout &layout, int64_t ep)
      : func(func), layout(layout), ep(ep), tp(layout.tp),
        dependent(split::sampleDependent(func)) {}

  /// Rewrites every block of routed experts. With ep > 1 fails with an
  /// error on a block that cannot run on the rank's experts; with ep = 1
  /// (the experts split over the tensor ranks only) such a block runs
  /// whole on every tensor rank, as before the pass. Counts the blocks it
  /// split.
  LogicalResult run(unsigned &blocks);

private:
  bool isDependent(Value v) const { return dependent.contains(v); }
  /// Why `experts` cannot be split (no refusal when it can); fills
  /// `weights` with the GEMMs' stacked weights, inputs first.
  Refusal check(const planning::RoutedExperts &experts,
                SmallVectorImpl<g::WeightOp> &weights) const;
  void rewrite(const planning::RoutedExperts &experts,
               MutableArrayRef<g::WeightOp> weights);

  func::FuncOp func;
  const schedule::RankLayout &layout;
  int64_t ep, tp;
  DenseSet<Value> dependent;
};

LogicalResult Rewriter::run(unsigned &blocks) {
  auto isDep = [&](Value v) { return isDependent(v); };
  // The input GEMMs of a block read one tokens value; the outputs are
  // found from them.
  DenseSet<Operation *> done;
  SmallVector<Operation *> gemms;
  func.walk([&](g::MatmulOp m) {
    if (planning::stackedExperts(m, isDep))
      gemms.push_back(m);
  });
  for (Operation *first : gemms) {
    if (done.contains(first))
      continue;
    planning::RoutedExperts experts;
    std::string why = planning::routedExperts(
        planning::expertInputs(gemms, first, done), isDep, experts);
    if (!why.empty()) {
      if (ep == 1)
        continue;
      return first->emitError("dist-expert-parallel: the plan has ep = ")
             << ep
             << " but this GEMM with stacked expert weights is not in a "
                "mixture-of-experts block the pass can split: "
             << why
             << " (the form is docs/modelgen.md's: dispatched tokens "
                "[batch, experts, capacity, hidden], stacked-weight GEMMs, "
                "elementwise ops between); plan ep = 1";
    }
    for (Operation *op :
         llvm::concat<Operation *const>(experts.inputs, experts.outputs))
      done.insert(op);
    SmallVector<g::WeightOp> weights;
    Refusal refusal = check(experts, weights);
    if (refusal.at && ep == 1)
      continue;
    if (refusal.at)
      return refusal.at->emitError("dist-expert-parallel: cannot split the ")
             << experts.experts << " experts over ep = " << ep << ": "
             << refusal.why;
    rewrite(experts, weights);
    ++blocks;
  }
  return success();
}

Refusal Rewriter::check(const planning::RoutedExperts &experts,
                        SmallVectorImpl<g::WeightOp> &weights) const {
  Operation *first = experts.inputs.front();
  auto type = cast<RankedTensorType>(first->getOperand(0).getType());
  const int64_t rank = type.getRank();
  std::string why;
  llvm::raw_string_ostream os(why);
  if (rank < 4 || !type.hasStaticShape()) {
    os << "their tokens " << type
       << " have no batch dimension before [experts, capacity, hidden] to "
          "gather the expert group's tokens along";
    return {first, why};
  }
  if (experts.experts % ep != 0)
    return {first, "the experts do not divide evenly; plan an ep that "
                   "divides the expert count"};
  // The region between the GEMMs is elementwise on [.., E, C, f].
  std::string notElementwise;
  if (Operation *op = planning::notElementwiseBetween(experts, notElementwise))
    return {op, notElementwise};
  // Every expert GEMM reads its own stacked weight.
  for (Operation *op :
       llvm::concat<Operation *const>(experts.inputs, experts.outputs)) {
    auto w = op->getOperand(1).getDefiningOp<g::WeightOp>();
    if (!w || !w.getResult().hasOneUse())
      return {op, "the GEMM's stacked weights are not a graph.weight that "
                  "only it reads"};
    if (w->hasAttr(dist::DistDialect::TpShardAttrHelper::getNameStr()))
      return {op, "its weights are split already"};
    weights.push_back(w);
  }
  if (tp == 1)
    return {};
  // With tensor parallelism the input GEMMs' output features and the
  // output GEMMs' input features (the region's) split over the tensor
  // ranks.
  for (auto [k, w] : llvm::enumerate(weights))
    if (int64_t f = w.getType().getDimSize(k < experts.inputs.size() ? 2 : 1);
        f % tp != 0) {
      os << "the experts' " << f << " features do not split over tp = " << tp
         << "; plan a tp that divides the experts' hidden width";
      return {w, why};
    }
  // With expert parallelism each tensor rank exchanges its C/tp capacity
  // slots of every expert (Megatron's token split before the dispatch);
  // under context parallelism its C/(cp tp) (the tokens here are the
  // context rank's C/cp slots already).
  if (int64_t slots = type.getDimSize(rank - 2); ep > 1 && slots % tp != 0) {
    const int64_t cp = layout.cp;
    os << "each expert's " << slots * cp
       << " capacity slots (top-k x sequence / experts) do not split over "
       << (cp > 1 ? "the " + std::to_string(cp) + " context ranks x " : "the ")
       << tp
       << " tensor ranks, which exchange their parts of the slots; plan a "
       << (cp > 1 ? "cp x tp" : "tp") << " that divides them";
    return {first, why};
  }
  return {};
}

void Rewriter::rewrite(const planning::RoutedExperts &experts,
                       MutableArrayRef<g::WeightOp> weights) {
  Operation *first = experts.inputs.front();
  Value tokens = first->getOperand(0);
  auto type = cast<RankedTensorType>(tokens.getType());
  const int64_t rank = type.getRank(), axis = rank - 3, slotAxis = rank - 2;
  const size_t numInputs = experts.inputs.size();
  auto featureDim = [&](size_t k) -> int64_t { return k < numInputs ? 2 : 1; };
  MLIRContext *ctx = func.getContext();
  OpBuilder b(first);
  const unsigned stage = split::stageOf(first, layout);
  const std::vector<std::vector<unsigned>> tensorGroups =
      layout.tensorGroups(stage);
  // Megatron's `f`: every tensor rank's columns read the same tokens, so
  // the backward sums their gradients over the tensor group.
  auto copy = [&](Value v) {
    auto made = split::createCollective<dist::TpCopyOp>(b, first, tensorGroups,
                                                        v.getType(), v);
    split::placeLike(made, first);
    return made.getResult();
  };
  Value expertTokens = tokens;
  std::vector<std::vector<unsigned>> groups;
  if (ep > 1) {
    groups = layout.expertGroups(stage, ep);
    // Dispatch: the rank's experts' tokens of every rank of the group.
    // With tensor parallelism each tensor rank exchanges its C/tp capacity
    // slots (Megatron's token split before the dispatch), and the slots of
    // the tensor group are gathered for its columns (Megatron's all-gather
    // before the experts), through `f`: dist-autodiff makes the gradient's
    // sum and the gather's slice one reduce-scatter.
    Value rankSlots = tokens;
    if (tp > 1)
      rankSlots = split::sliceWhole(b, first, tokens, slotAxis, tensorGroups);
    auto dispatch = split::createCollective<dist::AllToAllOp>(
        b, first, groups, rankPart(rankSlots.getType(), axis, ep), rankSlots,
        b.getI64IntegerAttr(axis), b.getI64IntegerAttr(0));
    split::placeLike(dispatch, first);
    expertTokens = dispatch.getResult();
    if (tp > 1)
      expertTokens =
          split::gatherWhole(b, first, expertTokens,
                             cast<RankedTensorType>(expertTokens.getType()),
                             slotAxis, tensorGroups, copy);
  } else {
    // Expert tensor parallelism alone: every tensor rank holds the whole
    // dispatched tokens.
    expertTokens = copy(tokens);
  }
  for (Operation *op : experts.inputs)
    op->setOperand(0, expertTokens);
  dist::DistDialect::TpShardAttrHelper shard(ctx);
  for (auto [k, w] : llvm::enumerate(weights)) {
    auto wt = cast<RankedTensorType>(w.getType());
    SmallVector<int64_t> part(wt.getShape());
    part[0] = wt.getDimSize(0) / ep;
    if (tp > 1)
      part[featureDim(k)] /= tp;
    // The experts' part by the replica coordinate, (rank / (tp cp)) mod
    // ep; the features by the tensor coordinate, rank mod tp.
    const int64_t replicaStride = tp * layout.cp;
    if (tp == 1 && replicaStride == 1) {
      shard.setAttr(w, b.getDenseI64ArrayAttr({0, 1, ep}));
    } else if (tp == 1) {
      shard.setAttr(w, b.getDenseI64ArrayAttr({0, 1, ep, replicaStride}));
    } else if (ep == 1) {
      // Every expert's features, as a dense weight's.
      shard.setAttr(w, b.getDenseI64ArrayAttr({featureDim(k), 1, tp}));
    } else {
      shard.setAttr(w, b.getDenseI64ArrayAttr(
                           {0, 1, ep, replicaStride, featureDim(k), 1, tp, 1}));
    }
    w.getResult().setType(wt.clone(part));
  }
  SmallVector<Type> wholeOutputs;
  for (Operation *op : experts.outputs)
    wholeOutputs.push_back(op->getResult(0).getType());
  for (Operation *op : llvm::concat<Operation *const>(
           experts.inputs, experts.between, experts.outputs))
    op->getResult(0).setType(rankPart(op->getResult(0).getType(), axis, ep));
  if (tp > 1) {
    // The region between the GEMMs holds the rank's features.
    dist::DistDialect::TpAttrHelper role(ctx);
    auto setRole = [&](Operation *op, dist::TensorParallelRole r) {
      role.setAttr(op, dist::TensorParallelRoleAttr::get(ctx, r));
    };
    for (Operation *op :
         llvm::concat<Operation *const>(experts.inputs, experts.between)) {
      auto t = cast<RankedTensorType>(op->getResult(0).getType());
      SmallVector<int64_t> part(t.getShape());
      part.back() /= tp;
      op->getResult(0).setType(t.clone(part));
      setRole(op, llvm::is_contained(experts.inputs, op)
                      ? dist::TensorParallelRole::Column
                      : dist::TensorParallelRole::Split);
    }
    for (Operation *op : experts.outputs)
      setRole(op, dist::TensorParallelRole::Row);
  }
  // Combine: each rank's tokens back from the experts that ran them. With
  // tensor parallelism the row-parallel GEMMs' partial sums are summed
  // over the tensor group: with ep onto the rank's slots (Megatron's
  // reduce-scatter after the experts), which are exchanged back and
  // gathered whole over the tensor group for the combine, which every
  // tensor rank runs; without ep whole (Megatron's `g`).
  for (auto [op, whole] : llvm::zip(experts.outputs, wholeOutputs)) {
    Value out = op->getResult(0);
    SmallVector<OpOperand *> uses;
    for (OpOperand &use : out.getUses())
      uses.push_back(&use);
    b.setInsertionPointAfter(op);
    if (ep == 1) {
      auto sum = split::createCollective<dist::AllReduceOp>(
          b, op, tensorGroups, out.getType(), out,
          dist::ReductionKindAttr::get(ctx, dist::ReductionKind::sum));
      split::placeLike(sum, op);
      out = sum.getResult();
    } else {
      auto exchanged = cast<RankedTensorType>(whole);
      if (tp > 1) {
        out = split::scatterSum(b, op, out, slotAxis, tensorGroups);
        SmallVector<int64_t> slots(exchanged.getShape());
        slots[slotAxis] /= tp;
        exchanged = exchanged.clone(slots);
      }
      auto back = split::createCollective<dist::AllToAllOp>(
          b, op, groups, exchanged, out, b.getI64IntegerAttr(0),
          b.getI64IntegerAttr(axis));
      split::placeLike(back, op);
      out = back.getResult();
      if (tp > 1)
        out = split::gatherWhole(b, op, out, exchanged, slotAxis, tensorGroups);
    }
    for (OpOperand *use : uses)
      use->set(out);
  }
}

struct ExpertParallelPass
    : public distopt::impl::ExpertParallelPassBase<ExpertParallelPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto plan =
        dist::DistDialect::PlanAttrHelper(&getContext()).getAttr(module);
    if (!plan) {
      emitError(module.getLoc())
          << "dist-expert-parallel needs the module's plan ('dist.plan'): "
             "run dist-set-plan or dist-search-plan first";
      return signalPassFailure();
    }
    const int64_t ep = plan.getEp();
    schedule::RankLayout layout = plan.getLayout();
    if (ep == 1) {
      // Expert tensor parallelism alone: each expert's GEMMs split over the
      // tensor ranks, as the cost model prices them (under cp on the
      // context rank's capacity slots).
      if (layout.tp == 1)
        return;
      FailureOr<func::FuncOp> func =
          planning::plannedFunction(module, "", "dist-expert-parallel");
      unsigned blocks = 0;
      if (failed(func) || failed(Rewriter(*func, layout, ep).run(blocks)) ||
          failed(mlir::verify(*func)))
        return signalPassFailure();
      return;
    }
    auto refuse = [&](const Twine &what) {
      emitError(module.getLoc())
          << "dist-expert-parallel: the plan has ep = " << ep << " with "
          << what
          << "; expert parallelism executes with data, tensor, context and "
             "pipeline parallelism (dp x cp x tp x pp, ep dividing dp) yet";
      signalPassFailure();
    };
    if (layout.replicated())
      return refuse("per-stage replicas");
    if (layout.dp % ep != 0)
      return refuse("dp = " + Twine(layout.dp) + ", which ep does not divide");
    FailureOr<func::FuncOp> func =
        planning::plannedFunction(module, "", "dist-expert-parallel");
    if (failed(func))
      return signalPassFailure();
    unsigned blocks = 0;
    if (failed(Rewriter(*func, layout, ep).run(blocks)))
      return signalPassFailure();
    if (blocks == 0) {
      func->emitError("dist-expert-parallel: the plan has ep = ")
          << ep << " but @" << func->getSymName()
          << " has no mixture-of-experts block (GEMMs with stacked expert "
             "weights [experts, in, out]); plan ep = 1";
      return signalPassFailure();
    }
    if (failed(mlir::verify(*func)))
      return signalPassFailure();
  }
};

} // namespace
