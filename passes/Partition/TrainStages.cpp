//===- TrainStages.cpp - A training step split by stage and phase -*- C++ -*-===//
//
// Part of DistOpt. Outlines the training step of a pipelined model
// (dist-autodiff's @train_step on a planned forward function) into one
// function per virtual stage and phase: `<f>_stage<v>_forward`,
// `_backward_input` and `_backward_weight`, what the schedule's forward,
// backward-input and backward-weight actions run for one micro-batch. The
// step itself becomes their calls followed by the optimizer, so it still
// computes one micro-batch's step. docs/partition.md has the rules.
//
//===----------------------------------------------------------------------===//
#include "passes/Partition/TrainStages.h"

#include "dialects/Dist/DistDialect.h"
#include "dialects/Graph/GraphOps.h"
#include "passes/Planning/FusedKernels.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace distopt;
using namespace distopt::partition;

StringRef partition::trainPhaseName(TrainPhase p) {
  switch (p) {
  case TrainPhase::Forward:
    return "forward";
  case TrainPhase::BackwardInput:
    return "backward_input";
  case TrainPhase::BackwardWeight:
    return "backward_weight";
  }
  return "forward";
}

std::optional<std::pair<int64_t, TrainPhase>>
partition::trainGroupOf(func::FuncOp callee) {
  MLIRContext *ctx = callee.getContext();
  auto stage = dist::DistDialect::VirtualStageAttrHelper(ctx).getAttr(callee);
  auto phase = dist::DistDialect::TrainPhaseAttrHelper(ctx).getAttr(callee);
  if (!stage || !phase)
    return std::nullopt;
  for (TrainPhase p : {TrainPhase::Forward, TrainPhase::BackwardInput,
                       TrainPhase::BackwardWeight})
    if (phase.getValue() == trainPhaseName(p))
      return std::make_pair(stage.getInt(), p);
  return std::nullopt;
}

namespace {
/// Where an op of the training step runs.
struct Place {
  enum Kind : uint8_t {
    /// Reads no input: weights, state, constants and what is computed from
    /// them alone. Copied into every function that reads it.
    Free,
    /// Computed from the step's inputs alone (a label transform): copied
    /// into every stage function that reads it.
    Replicable,
    /// Per micro-batch, in one stage and phase.
    MicroBatch,
    /// The optimizer: once per step, after the micro-batches. Stage -1:
    /// every stage's (a mixed-precision step's overflow flag, which reads
    /// every stage's gradients, and what reads it and no gradient: the
    /// step counter, the loss-scale update).
    Step
  } kind = Free;
  int64_t stage = -1;
  TrainPhase phase = TrainPhase::Forward;
};

/// The training step's ops by place, checked.
struct Split {
  DenseMap<Operation *, Place> place;
  /// Per group (stage * 3 + phase): its ops in program order.
  SmallVector<SmallVector<Operation *>> groups;
};
} // namespace

static TrainPhase phaseOf(Operation *op) {
  auto s = op->getAttrOfType<StringAttr>("graph.phase");
  if (s && s.getValue() == "backward_input")
    return TrainPhase::BackwardInput;
  if (s && s.getValue() == "backward_weight")
    return TrainPhase::BackwardWeight;
  return TrainPhase::Forward;
}

static bool isOptimizer(Operation *op) {
  auto s = op->getAttrOfType<StringAttr>("graph.phase");
  return s && s.getValue() == "optimizer";
}

static bool isBackward(TrainPhase p) { return p != TrainPhase::Forward; }

bool partition::isOverflowFlag(Value v) {
  Operation *def = v.getDefiningOp();
  if (auto unscale = dyn_cast_if_present<graph::UnscaleOp>(def))
    return v == unscale.getResults().back();
  auto any = dyn_cast_if_present<graph::BinaryOp>(def);
  return any && any.getKind() == graph::BinaryKind::Or &&
         isOverflowFlag(any.getLhs()) && isOverflowFlag(any.getRhs());
}

/// Mixed precision: dist-autodiff's one `graph.unscale` divides every
/// gradient of the step by the loss scale and flags an overflow in any of
/// them. A pipeline's stages hold their own gradients, so \p unscale
/// becomes one unscale per stage of the gradients it reads (in their
/// order) and the step's flag the `or` of the stages' flags (stage -1:
/// every list computes it), both placed. Returns whether it split (an
/// unscale of one stage's gradients stays as it is).
static bool splitUnscaleByStage(graph::UnscaleOp unscale, Split &split) {
  llvm::MapVector<int64_t, SmallVector<unsigned>> byStage;
  for (auto [k, g] : llvm::enumerate(unscale.getGrads()))
    byStage[split.place.lookup(g.getDefiningOp()).stage].push_back(k);
  if (byStage.size() < 2)
    return false;
  OpBuilder b(unscale);
  Location loc = unscale.getLoc();
  Value flag;
  for (auto &[stage, indices] : byStage) {
    SmallVector<Value> operands = {unscale.getScale()};
    SmallVector<Type> types;
    for (unsigned k : indices) {
      operands.push_back(unscale.getGrads()[k]);
      types.push_back(unscale.getResult(k).getType());
    }
    Value found = unscale.getResults().back();
    types.push_back(found.getType());
    auto part = graph::UnscaleOp::create(b, loc, types, operands,
                                         ArrayRef<NamedAttribute>{});
    part->setDiscardableAttrs(unscale->getDiscardableAttrDictionary());
    for (auto [i, k] : llvm::enumerate(indices))
      unscale.getResult(k).replaceAllUsesWith(part.getResult(i));
    Place place;
    place.kind = Place::Step;
    place.stage = stage;
    split.place[part] = place;
    if (!flag) {
      flag = part.getResults().back();
      continue;
    }
    auto any =
        graph::BinaryOp::create(b, loc, found.getType(), graph::BinaryKind::Or,
                                flag, part.getResults().back());
    any->setDiscardableAttrs(unscale->getDiscardableAttrDictionary());
    place.stage = -1;
    split.place[any] = place;
    flag = any.getResult();
  }
  unscale.getResults().back().replaceAllUsesWith(flag);
  return true;
}

/// "stage 1's backward_input".
static std::string groupName(int64_t stage, TrainPhase p) {
  return ("stage " + Twine(stage) + "'s " + trainPhaseName(p)).str();
}

/// Whether only the optimizer reads \p v: optimizer ops (in mixed
/// precision the unscale) or one cast to the master type they read.
static bool onlyOptimizerReads(Value v) {
  return llvm::all_of(v.getUsers(), [&](Operation *user) {
    if (isOptimizer(user) || isa<graph::UnscaleOp>(user))
      return true;
    return isa<graph::CastOp>(user) && v.hasOneUse() &&
           llvm::all_of(user->getUsers(), [](Operation *u) {
             return isOptimizer(u) || isa<graph::UnscaleOp>(u);
           });
  });
}

/// The stage whose optimizer updates a weight several stages read (a tied
/// embedding) if \p op is dist-autodiff's sum of its gradient parts: a
/// backward `graph.binary add` of two backward values of different stages
/// that only the optimizer reads.
/// dist-autodiff puts the sum on the earliest reader (its
/// dist.virtual_stage), once per micro-batch, so the later stage's part
/// would cross the pipeline with every micro-batch; the step adds the
/// parts once instead, on that reader (buildTrainList exchanges them).
static std::optional<int64_t> tiedSumOf(Operation *op, const Split &split) {
  auto sum = dyn_cast<graph::BinaryOp>(op);
  if (!sum || sum.getKind() != graph::BinaryKind::Add ||
      !isBackward(phaseOf(op)) || isOptimizer(op) ||
      !onlyOptimizerReads(sum.getResult()))
    return std::nullopt;
  auto stageOf = [&](Value v) -> std::optional<int64_t> {
    Operation *def = v.getDefiningOp();
    Place d = def ? split.place.lookup(def) : Place{Place::Replicable};
    if (d.kind != Place::MicroBatch || !isBackward(d.phase))
      return std::nullopt;
    return d.stage;
  };
  std::optional<int64_t> lhs = stageOf(sum.getLhs()),
                         rhs = stageOf(sum.getRhs());
  if (!lhs || !rhs || *lhs == *rhs)
    return std::nullopt;
  return std::min(*lhs, *rhs);
}

/// Mixed precision: the tied sum \p sum is cast to the master type before
/// the optimizer (\p cast, its one reader). Each stage casts its own part
/// instead, in its backward phase, so the step's sums over micro-batches
/// and the exchange between the stages run in the master type, as any
/// other weight's gradient does; the sum of the casts replaces the cast.
static void castTiedParts(graph::BinaryOp sum, graph::CastOp cast,
                          Split &split) {
  OpBuilder b(cast);
  SmallVector<Value, 2> parts;
  for (Value v : sum->getOperands()) {
    Place d = split.place.lookup(v.getDefiningOp());
    auto part = graph::CastOp::create(b, cast.getLoc(), cast.getType(), v);
    part->setDiscardableAttrs(cast->getDiscardableAttrDictionary());
    part->setAttr("graph.phase", b.getStringAttr(trainPhaseName(d.phase)));
    split.place[part] = d;
    split.groups[d.stage * kNumTrainPhases + static_cast<unsigned>(d.phase)]
        .push_back(part);
    parts.push_back(part.getResult());
  }
  auto total =
      graph::BinaryOp::create(b, sum.getLoc(), cast.getType(),
                              graph::BinaryKind::Add, parts[0], parts[1]);
  total->setDiscardableAttrs(sum->getDiscardableAttrDictionary());
  split.place[total] = split.place.lookup(sum);
  cast.getResult().replaceAllUsesWith(total.getResult());
}

/// Classifies every op of \p func and checks that the stages and phases
/// can run in pipeline order: forward values flow to later stages,
/// gradients to earlier ones, and the optimizer of a stage reads only that
/// stage's gradients.
static FailureOr<Split> classify(func::FuncOp func, int64_t numStages) {
  Split split;
  split.groups.resize(numStages * kNumTrainPhases);
  auto stageAttr = dist::DistDialect::VirtualStageAttrHelper(func.getContext());
  Block &body = func.getBody().front();
  for (Operation &op : llvm::make_early_inc_range(body.without_terminator())) {
    if (auto unscale = dyn_cast<graph::UnscaleOp>(op);
        unscale && splitUnscaleByStage(unscale, split)) {
      unscale.erase();
      continue;
    }
    if (op.getNumRegions() != 0)
      return op.emitOpError("has regions; a pipelined training step is a "
                            "flat list of graph ops (dist-autodiff's output)");
    bool perMb = false, readsStep = false;
    int64_t from = -1;
    for (Value v : op.getOperands()) {
      if (isa<BlockArgument>(v)) {
        perMb = true;
        continue;
      }
      const Place &d = split.place[v.getDefiningOp()];
      if (d.kind == Place::Replicable)
        perMb = true;
      if (d.kind == Place::MicroBatch) {
        perMb = true;
        from = std::max(from, d.stage);
      }
      if (d.kind == Place::Step) {
        readsStep = true;
        from = std::max(from, d.stage);
      }
    }
    Place p;
    if (!perMb && !readsStep) {
      split.place[&op] = p; // Free
      continue;
    }
    if (isOptimizer(&op)) {
      p.kind = Place::Step;
      p.stage = from;
      bool everyStage = llvm::any_of(op.getOperands(), [&](Value v) {
        Operation *def = v.getDefiningOp();
        return def && split.place.lookup(def).kind == Place::Step &&
               split.place.lookup(def).stage < 0;
      });
      if (p.stage < 0 && !everyStage)
        return op.emitOpError("is an optimizer op that reads the step's "
                              "inputs directly; the optimizer reads "
                              "gradients, weights and state");
      for (Value v : op.getOperands()) {
        Operation *def = v.getDefiningOp();
        const Place &d = def ? split.place[def] : Place{Place::Replicable};
        if (d.kind == Place::Replicable)
          return op.emitOpError("is an optimizer op that reads the step's "
                                "inputs; the optimizer reads gradients, "
                                "weights and state");
        if ((d.kind == Place::MicroBatch || d.kind == Place::Step) &&
            d.stage >= 0 && d.stage != p.stage)
          return op.emitOpError("updates with values of stages ")
                 << d.stage << " and " << p.stage
                 << "; an optimizer op reads one stage's gradients, or the "
                    "sum of a tied weight's parts (dist-autodiff's add of "
                    "each stage's gradient of it, which the pipeline "
                    "exchanges once a step): untie the weight (one "
                    "initializer per use) or plan its uses into one stage";
      }
      split.place[&op] = p;
      continue;
    }
    if (std::optional<int64_t> tied = tiedSumOf(&op, split)) {
      p.kind = Place::Step;
      p.stage = *tied;
      split.place[&op] = p;
      continue;
    }
    // A tied sum's one reader casting it to the master type (mixed
    // precision): each part is cast instead (castTiedParts).
    if (auto cast = dyn_cast<graph::CastOp>(op)) {
      auto sum = cast.getOperand().getDefiningOp<graph::BinaryOp>();
      if (sum && sum->hasOneUse() &&
          split.place.lookup(sum).kind == Place::Step && !isOptimizer(sum) &&
          tiedSumOf(sum, split)) {
        castTiedParts(sum, cast, split);
        split.place.erase(sum);
        cast.erase();
        sum.erase();
        continue;
      }
    }
    if (readsStep)
      return op.emitOpError("reads an optimizer result inside a "
                            "micro-batch; only the optimizer runs after the "
                            "micro-batches of a step");
    IntegerAttr stamp = stageAttr.getAttr(&op);
    if (stamp && (stamp.getInt() < 0 || stamp.getInt() >= numStages))
      return op.emitOpError("has dist.virtual_stage = ")
             << stamp.getInt() << " but the plan has " << numStages
             << " virtual stages";
    p.stage = stamp ? stamp.getInt() : from;
    if (p.stage < 0) {
      p.kind = Place::Replicable;
      split.place[&op] = p;
      continue;
    }
    p.kind = Place::MicroBatch;
    p.phase = phaseOf(&op);
    for (Value v : op.getOperands()) {
      Operation *def = v.getDefiningOp();
      if (!def || split.place[def].kind != Place::MicroBatch)
        continue;
      const Place &d = split.place[def];
      bool ok = isBackward(d.phase)
                    ? isBackward(p.phase) &&
                          (d.stage > p.stage ||
                           (d.stage == p.stage &&
                            !(d.phase == TrainPhase::BackwardWeight &&
                              p.phase == TrainPhase::BackwardInput)))
                    : d.stage <= p.stage;
      if (!ok)
        return op.emitOpError("runs in ")
               << groupName(p.stage, p.phase) << " but reads a value of "
               << groupName(d.stage, d.phase)
               << ", which runs later in a pipeline (forward values flow "
                  "to later stages, gradients to earlier ones); re-plan "
                  "the forward function so its stages follow program "
                  "order, then run dist-autodiff on it";
    }
    split.place[&op] = p;
    split.groups[p.stage * kNumTrainPhases + static_cast<unsigned>(p.phase)]
        .push_back(&op);
  }
  for (Value v : body.getTerminator()->getOperands())
    if (Operation *def = v.getDefiningOp())
      if (split.place[def].kind == Place::Replicable)
        return def->emitOpError("is a result of the training step computed "
                                "from its inputs alone; pipelines return "
                                "the loss, outputs of stages and updates");
  return split;
}

/// The ops \p roots need that are copied into every reader (Free and
/// Replicable), in program order.
static SmallVector<Operation *>
prerequisites(ArrayRef<Operation *> roots, const Split &split, Block &body) {
  DenseSet<Operation *> need;
  SmallVector<Operation *> work(roots.begin(), roots.end());
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    for (Value v : op->getOperands())
      if (Operation *def = v.getDefiningOp()) {
        Place::Kind k = split.place.lookup(def).kind;
        if ((k == Place::Free || k == Place::Replicable) &&
            need.insert(def).second)
          work.push_back(def);
      }
  }
  SmallVector<Operation *> out;
  for (Operation &op : body.without_terminator())
    if (need.contains(&op))
      out.push_back(&op);
  return out;
}

void partition::rematerializeAttentionCores(func::FuncOp func) {
  if (!func.getBody().hasOneBlock())
    return;
  Block &body = func.getBody().front();
  // Values computed from the step's inputs: per micro-batch.
  DenseSet<Value> perMicroBatch(body.getArguments().begin(),
                                body.getArguments().end());
  for (Operation &op : body.without_terminator())
    if (llvm::any_of(op.getOperands(),
                     [&](Value v) { return perMicroBatch.contains(v); }))
      perMicroBatch.insert(op.result_begin(), op.result_end());
  // A core op: a pure forward op of a micro-batch whose results are all
  // score-shaped. A dropout mask is random, so never drawn again.
  auto isCore = [&](Operation *op) {
    if (!op || op->getNumRegions() != 0 || op->getNumResults() == 0 ||
        isa<graph::DropoutMaskOp>(op) || !isMemoryEffectFree(op) ||
        phaseOf(op) != TrainPhase::Forward || isOptimizer(op) ||
        !perMicroBatch.contains(op->getResult(0)))
      return false;
    return llvm::all_of(op->getResultTypes(), planning::isScoreShaped);
  };
  // One copy per value and backward phase, before the phase's first reader.
  DenseMap<std::pair<Value, StringAttr>, Value> copies;
  std::function<Value(Value, StringAttr, Operation *)> copyOf =
      [&](Value v, StringAttr phase, Operation *before) -> Value {
    Operation *def = v.getDefiningOp();
    if (!isCore(def))
      return v;
    if (Value done = copies.lookup({v, phase}))
      return done;
    IRMapping map;
    for (Value operand : def->getOperands())
      map.map(operand, copyOf(operand, phase, before));
    OpBuilder b(before);
    Operation *copy = b.clone(*def, map);
    copy->setAttr("graph.phase", phase);
    for (auto [orig, res] : llvm::zip(def->getResults(), copy->getResults()))
      copies[{orig, phase}] = res;
    return copies.lookup({v, phase});
  };
  SmallVector<Operation *> readers;
  for (Operation &op : body.without_terminator()) {
    TrainPhase p = phaseOf(&op);
    if (isBackward(p) && !isOptimizer(&op))
      readers.push_back(&op);
  }
  for (Operation *op : readers) {
    auto phase = op->getAttrOfType<StringAttr>("graph.phase");
    for (OpOperand &use : op->getOpOperands())
      if (isCore(use.get().getDefiningOp()))
        use.set(copyOf(use.get(), phase, op));
  }
}

LogicalResult partition::outlineTrainStages(func::FuncOp func,
                                            int64_t numStages) {
  MLIRContext *ctx = func.getContext();
  if (!func.getBody().hasOneBlock())
    return func.emitError("@") << func.getSymName()
                               << " must have a single block to pipeline";
  FailureOr<Split> split = classify(func, numStages);
  if (failed(split))
    return failure();
  Block &body = func.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  auto module = func->getParentOfType<ModuleOp>();
  OpBuilder b(ctx);

  // One function per non-empty group (every stage gets a forward one: the
  // schedule's actions name the stage by it).
  struct Group {
    int64_t stage;
    TrainPhase phase;
    func::FuncOp fn;
    SmallVector<Value> inputs, outputs;
  };
  SmallVector<Group> groups;
  for (int64_t s = 0; s < numStages; ++s)
    groups.push_back({s, TrainPhase::Forward, {}, {}, {}});
  for (int64_t s = numStages - 1; s >= 0; --s)
    for (TrainPhase p : {TrainPhase::BackwardInput, TrainPhase::BackwardWeight})
      if (!split->groups[s * kNumTrainPhases + static_cast<unsigned>(p)]
               .empty())
        groups.push_back({s, p, {}, {}, {}});

  b.setInsertionPointAfter(func);
  for (Group &g : groups) {
    ArrayRef<Operation *> ops =
        split->groups[g.stage * kNumTrainPhases + static_cast<unsigned>(g.phase)];
    DenseSet<Operation *> mine(ops.begin(), ops.end());
    SmallVector<Operation *> copied = prerequisites(ops, *split, body);
    DenseSet<Operation *> local(mine);
    local.insert(copied.begin(), copied.end());
    llvm::SetVector<Value> inputs;
    for (Operation *op : llvm::concat<Operation *const>(copied, ops))
      for (Value v : op->getOperands())
        if (isa<BlockArgument>(v) || !local.contains(v.getDefiningOp()))
          inputs.insert(v);
    llvm::SetVector<Value> outputs;
    for (Operation *op : ops)
      for (Value r : op->getResults())
        for (Operation *user : r.getUsers())
          if (!mine.contains(user))
            outputs.insert(r);
    g.inputs.assign(inputs.begin(), inputs.end());
    g.outputs.assign(outputs.begin(), outputs.end());

    std::string name = (func.getSymName() + "_stage" + Twine(g.stage) + "_" +
                        trainPhaseName(g.phase))
                           .str();
    if (module.lookupSymbol(name))
      return func.emitError("@")
             << func.getSymName() << "'s " << groupName(g.stage, g.phase)
             << " would become @" << name
             << ", but the module already has a symbol of that name";
    SmallVector<Type> in, out;
    for (Value v : g.inputs)
      in.push_back(v.getType());
    for (Value v : g.outputs)
      out.push_back(v.getType());
    g.fn = func::FuncOp::create(b, func.getLoc(), name,
                                FunctionType::get(ctx, in, out));
    g.fn.setPrivate();
    dist::DistDialect::VirtualStageAttrHelper(ctx).setAttr(
        g.fn, b.getI64IntegerAttr(g.stage));
    dist::DistDialect::TrainPhaseAttrHelper(ctx).setAttr(
        g.fn, b.getStringAttr(trainPhaseName(g.phase)));
    Block *entry = g.fn.addEntryBlock();
    IRMapping map;
    for (auto [v, arg] : llvm::zip(g.inputs, entry->getArguments()))
      map.map(v, arg);
    OpBuilder fb = OpBuilder::atBlockEnd(entry);
    for (Operation *op : llvm::concat<Operation *const>(copied, ops))
      fb.clone(*op, map);
    SmallVector<Value> results;
    for (Value v : g.outputs)
      results.push_back(map.lookup(v));
    func::ReturnOp::create(fb, func.getLoc(), results);
  }

  // The step: the calls in pipeline order, then the optimizer.
  SmallVector<Operation *> original;
  for (Operation &op : body.without_terminator())
    original.push_back(&op);
  b.setInsertionPoint(ret);
  IRMapping map;
  SmallVector<Operation *> stepOps;
  for (Operation *op : original)
    if (split->place.lookup(op).kind == Place::Step)
      stepOps.push_back(op);
  SmallVector<Operation *> roots(stepOps);
  roots.push_back(ret);
  for (Operation *op : prerequisites(roots, *split, body))
    b.clone(*op, map);
  for (Group &g : groups) {
    SmallVector<Value> operands;
    for (Value v : g.inputs)
      operands.push_back(map.lookupOrDefault(v));
    auto call = func::CallOp::create(b, func.getLoc(), g.fn, operands);
    for (auto [v, r] : llvm::zip(g.outputs, call.getResults()))
      map.map(v, r);
  }
  for (Operation *op : stepOps)
    b.clone(*op, map);
  SmallVector<Value> results;
  for (Value v : ret.getOperands())
    results.push_back(map.lookupOrDefault(v));
  func::ReturnOp::create(b, ret.getLoc(), results);
  ret.erase();
  for (Operation *op : llvm::reverse(original))
    op->erase();
  return success();
}
