//===- PartitionTrain.cpp - Per-list programs of a training step *- C++ -*-===//
//
// Part of DistOpt. The program of one action list of a pipelined training
// step, from the outlined step (TrainStages.cpp) and the schedule: every
// action in the list's order becomes IR.
//
//  - forward / backward_input / backward_weight of micro-batch m: a call of
//    the stage's function of that phase (backward: both), on micro-batch
//    m's values. Values the backward reads from its forward stay live
//    between the calls: the stash of micro-batch m, freed after its last
//    reader like any value;
//  - send/recv_activation: the values later stages read (a value read
//    several stages on is forwarded stage by stage); send/recv_grad: the
//    gradients earlier stages read;
//  - optimizer_step: the optimizer ops of the list's stages, on the mean of
//    each gradient over the step's micro-batches (the gradient of the step's
//    mean loss, as with dist-autodiff's accumulation-steps). The running sum
//    is kept from the first backward on: later backwards are calls of the
//    stage's accumulating variant, which adds its gradient to the sum it is
//    given (`dist.accumulates`). In mixed precision it starts with the
//    graph.unscale of each of its stages and the overflow flag or-ed over
//    the world, which every update, the step counter and the loss scale
//    read (every rank skips together);
//  - all_reduce (dp > 1): those means averaged over the stage's
//    data-parallel replicas (`dist.all_reduce mean` over their devices).
//    Every replica runs the list's program on its own rows of the batch
//    (the inputs are `dist.batch_shard`), and the loss is averaged over the
//    replicas too, so rank 0 reports the global batch's loss;
//  - grad_reduce_scatter / param_all_gather (ZeRO-1, zero = 1): instead of
//    the all_reduce, each replica receives its shard of the averaged
//    gradients, and the optimizer_step updates that shard of each
//    parameter with its shard of the optimizer state (zero::shardUpdate,
//    as dist-data-parallel does); the updated shards are gathered where the
//    step updates them, which is where the schedule puts param_all_gather
//    (right after the optimizer_step). ZeRO-2 (zero = 2) reduce-scatters
//    each micro-batch's gradient right after its backward and sums the
//    shards (DeepSpeed's stage 2 under gradient accumulation): the list
//    holds one shard per weight across the step, not a whole gradient, and
//    the grad_reduce_scatter only scales the sum to the mean.
//
// Asynchronous schedules keep weight versions as values of the program:
// the stage functions that read a weight the list updates get it as an
// argument (a clone, `<function>_versioned`), so the forward of micro-batch
// m passes a version and the backward of m passes the same one (the stash
// of m: the version stays live until that backward ran).
//
//  - pipedream: the optimizer_step of micro-batch m updates the stage's
//    newest version with m's own gradient (not a mean over the step), so
//    later forwards read the new version while in-flight micro-batches
//    finish on the one they started with (weight stashing; stage s of pp
//    holds up to pp - s versions). Each update also advances the
//    optimizer's step counter. Every step ends with its micro-batches
//    drained, as every program's step does. With per-stage replicas every
//    stage updates once per round of lcm(replicas) micro-batches
//    (schedule::updateRound), after the list's last backward of the round,
//    on the round's mean gradient: each list sums its micro-batches of the
//    round scaled by 1 / round and the stage's all_reduce sums the
//    replicas' shares; the list's first forward of a round picks the
//    version all of the round's micro-batches compute with. An update is
//    one process's step on the round's rows, as with dp replicas one on
//    micro-batch m's rows of every replica;
//  - pipedream-2bw: every micro-batch of step t computes with W(t-1), the
//    step's coalesced gradient (the mean, as in a synchronous step) updates
//    W(t): W(t+1) = W(t) - lr * grad(W(t-1)), the 2BW paper's update. The
//    second buffer is the state `<weight>.last_update` = W(t) - W(t-1)
//    (zero before the first step, so step 0 computes with W(0)).
//  - pipemare: PipeDream's order and per-micro-batch updates with one
//    version of the weights (no stash): the forward computes with the
//    newest, the backward with the newest corrected back towards the
//    forward's by the updates since (discrepancy correction, from the
//    state `<weight>.velocity`), and a stage's learning rate starts at
//    lr / (tau + 1) for its delay tau (learning-rate rescheduling), as in
//    PipeMare (Yang et al., MLSys 2021). With per-stage replicas it
//    updates in PipeDream's rounds, tau the list's own (updateDelay).
//
// In mixed precision the versions are f32 masters (the versioned clone
// casts each to the low type next to its argument). 2BW checks for
// overflow once per step as the synchronous schedules do; PipeDream's
// update of micro-batch m is one process's step on m, so it unscales the
// stage's gradients of m by the newest loss scale (which m's backward on
// the last stage was seeded with: the clone takes it as an argument) and
// or-s the flag over the world before that update: every rank skips m's
// updates together and keeps the same step counter and loss scale.
// PipeMare checks the same way; a skipped update also keeps the velocity,
// and the correction counts the updates taken (from the step counter).
//
// ZeRO under the asynchronous schedules (dp > 1): PipeDream and PipeMare
// reduce-scatter micro-batch m's gradient, update the replica's shard of
// the newest weights and of the optimizer state, and all-gather the new
// weights (grad_reduce_scatter, optimizer_step and param_all_gather of
// micro-batch m; under ZeRO-2 the reduce-scatters run inside m's backward
// call, shardInsideCalls, so no gradient is whole outside it); 2BW syncs
// once per step like the synchronous schedules (zero = 1 or 2). What the stage
// calls read stays whole: the stashed versions, 2BW's W(t-1) and last_update,
// and PipeMare's velocity, which every replica computes alike from the gathered
// update (sharding it would cost a gather per corrected backward); the step
// counter that drives PipeMare's warm-up is a scalar every list keeps.
//
// With tensor parallelism a list is what each tensor rank of its stage
// runs: the versions, last_update and velocity are the rank's parts of
// the weights (the states carry the weight's dist.tp_shard), and the tp
// collectives are inside the stage functions, versioned clones included.
//
// Running statistics (batch norm's) are values of the program too: a
// stage's forward takes them as arguments (the same clone) and returns them
// updated, and they follow the micro-batches in the list's order of
// forwards, as one process accumulating micro-batches updates them; the
// step's update is the last forward's.
//
// The list holding the last stage sends the step's outputs (the mean loss)
// to list 0, which returns them; every list returns the updates of its own
// weights and state. A weight several stages read (a tied embedding) is
// updated by the earliest reader's list: each reading list sums its part of
// the gradient over the step's micro-batches and sends it there once, at
// its first gradient sync, and the updated weight comes back after the
// step (Megatron's embedding group, as two messages: the same bytes as its
// two-rank all-reduce, and one copy of the optimizer state).
//
//===----------------------------------------------------------------------===//
#include "passes/Partition/TrainStages.h"

#include "lib/Schedule/Updates.h"
#include "passes/Distribute/ZeroShard.h"
#include "passes/Partition/BoundarySends.h"

#include "dialects/Dist/DistDialect.h"
#include "dialects/Dist/DistOps.h"
#include "dialects/Graph/GraphOps.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"

#include <array>
#include <cmath>
#include <functional>
#include <map>

using namespace mlir;
using namespace distopt;
using namespace distopt::partition;
using schedule::ActionKind;

/// The value of the step's top-level \p v in the program \p b builds:
/// \p leaf's answer where it has one (a non-null value, or failure), else
/// \p v's defining op cloned after what it reads, once per \p map.
static FailureOr<Value>
cloneTopLevel(OpBuilder &b, Operation *at, Value v, IRMapping &map,
              function_ref<FailureOr<Value>(Value)> leaf) {
  FailureOr<Value> known = leaf(v);
  if (failed(known) || *known)
    return known;
  if (Value mapped = map.lookupOrNull(v))
    return mapped;
  Operation *def = v.getDefiningOp();
  if (!def)
    return at->emitOpError("reads the step's input outside the stage "
                           "functions");
  for (Value operand : def->getOperands()) {
    FailureOr<Value> mapped = cloneTopLevel(b, at, operand, map, leaf);
    if (failed(mapped))
      return failure();
    map.map(operand, *mapped);
  }
  b.clone(*def, map);
  return map.lookup(v);
}

/// The gradient an optimizer update reads as \p v: in mixed precision
/// through the graph.unscale that divides it by the loss scale.
static Value gradientOf(Value v) {
  auto unscale = v.getDefiningOp<graph::UnscaleOp>();
  if (!unscale || isOverflowFlag(v))
    return v;
  return unscale.getGrads()[cast<OpResult>(v).getResultNumber()];
}

RankedTensorType partition::batchedType(Type t, int64_t m) {
  auto r = cast<RankedTensorType>(t);
  SmallVector<int64_t> shape(r.getShape());
  shape[0] *= m;
  return RankedTensorType::get(shape, r.getElementType(), r.getEncoding());
}

Value MicrobatchValues::get(int64_t mb, Value v) {
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    auto [it, fresh] = slices.try_emplace(arg.getArgNumber());
    if (fresh) {
      SmallVector<Type> parts(m, arg.getType());
      it->second = dist::MicrobatchSplitOp::create(
          b, loc, parts, entry->getArgument(arg.getArgNumber()),
          b.getI64IntegerAttr(0));
    }
    return it->second.getResult(mb);
  }
  return values.lookup({mb, v.getAsOpaquePointer()});
}

namespace {
/// The outlined step read back: calls by stage and phase, what crosses
/// stage boundaries, and the stage of every optimizer op.
struct TrainGraph {
  SmallVector<std::array<func::CallOp, kNumTrainPhases>> calls;
  /// fwd[v]: values stage v sends on to v + 1 (computed on stages <= v).
  SmallVector<llvm::SetVector<Value>> fwd;
  /// grad[v]: values stage v sends back to v - 1 (computed on stages >= v).
  SmallVector<llvm::SetVector<Value>> grad;
  /// Top-level ops other than calls: their stage, -1 for ops every list
  /// computes (weights, state, constants and what they alone determine).
  DenseMap<Operation *, int64_t> stageOf;
  /// The stage of each call result.
  DenseMap<Value, int64_t> perMicroBatch;
  /// The stages whose functions read each weight and state buffer.
  llvm::StringMap<llvm::SmallSetVector<int64_t, 4>> readers;
  /// The sums of a tied weight's gradient parts (outlineTrainStages keeps
  /// them in the step), by result: the parts in the sum's operand order,
  /// each with the stage that computes it. The sum's own stage (in
  /// perMicroBatch) is the earliest part's, whose optimizer updates the
  /// weight.
  llvm::MapVector<Value, SmallVector<std::pair<Value, int64_t>, 2>> tiedSums;
  /// Parts of tiedSums that their stage function makes by transposing a
  /// value of the reader's layout (an LM head's weight gradient, [h, V/tp]
  /// of a [V/tp, h] table; transposedResult), read by the sum alone.
  llvm::SetVector<Value> transposedParts;
  unsigned width = 1;
};

/// Whether \p op, a top-level op of the outlined step reading \p stages
/// (of its operands), is the sum of a tied weight's gradient parts: an add
/// of results of backward calls of different stages.
static bool isTiedSum(Operation &op, ArrayRef<int64_t> stages) {
  auto sum = dyn_cast<graph::BinaryOp>(op);
  if (!sum || sum.getKind() != graph::BinaryKind::Add || stages.size() != 2 ||
      stages[0] < 0 || stages[1] < 0 || stages[0] == stages[1])
    return false;
  return llvm::all_of(op.getOperands(), [](Value v) {
    auto call = v.getDefiningOp<func::CallOp>();
    if (!call)
      return false;
    auto callee = call->getParentOfType<ModuleOp>().lookupSymbol<func::FuncOp>(
        call.getCallee());
    auto group = callee ? trainGroupOf(callee) : std::nullopt;
    return group && group->second != TrainPhase::Forward;
  });
}
} // namespace

/// The variant of stage function \p callee for its results \p results,
/// `<callee>_<kind>_<k>...`: the module's when it has one (second: false),
/// else a new clone of \p callee inserted before it, for the caller to
/// change (second: true).
static std::pair<func::FuncOp, bool>
variantOf(func::FuncOp callee, StringRef kind, ArrayRef<unsigned> results) {
  std::string name = (callee.getSymName() + "_" + kind).str();
  for (unsigned k : results)
    name += "_" + std::to_string(k);
  auto module = callee->getParentOfType<ModuleOp>();
  if (auto done = module.lookupSymbol<func::FuncOp>(name))
    return {done, false};
  auto clone = cast<func::FuncOp>(callee->clone());
  clone.setSymName(name);
  OpBuilder(callee).insert(clone);
  return {clone, true};
}

/// The 2-D `graph.transpose` [1, 0] that makes result \p k of stage
/// function \p callee, directly or through a `graph.cast` after it (mixed
/// precision casts a weight gradient to the master type), read by nothing
/// else: a tied LM head's gradient part, which the head computes in its
/// own layout. Null otherwise.
static graph::TransposeOp transposedResult(func::FuncOp callee, unsigned k) {
  Value v = callee.getBody().front().getTerminator()->getOperand(k);
  if (!v.hasOneUse())
    return {};
  if (auto cast = v.getDefiningOp<graph::CastOp>()) {
    v = cast.getInput();
    if (!v.hasOneUse())
      return {};
  }
  auto t = v.getDefiningOp<graph::TransposeOp>();
  if (!t || t.getPerm() != ArrayRef<int64_t>{1, 0})
    return {};
  return t;
}

/// The variant of stage function \p callee that returns each result of
/// \p results (transposedResult) before its transpose, cast as the result
/// was: the list sums such a part over the step's micro-batches in the
/// reader's layout and transposes the sum once a step, not each
/// micro-batch's part.
static func::FuncOp untransposedVariant(func::FuncOp callee,
                                        ArrayRef<unsigned> results) {
  auto [clone, fresh] = variantOf(callee, "untransposed", results);
  if (!fresh)
    return clone;
  Operation *ret = clone.getBody().front().getTerminator();
  for (unsigned k : results) {
    graph::TransposeOp t = transposedResult(clone, k);
    Value result = ret->getOperand(k), before = t.getInput();
    if (auto castOp = result.getDefiningOp<graph::CastOp>()) {
      // Elementwise: cast the untransposed value (the cast follows the
      // transpose, so it follows that value too).
      auto type = cast<RankedTensorType>(before.getType());
      castOp->setOperand(0, before);
      castOp.getResult().setType(type.clone(
          cast<RankedTensorType>(result.getType()).getElementType()));
    } else {
      ret->setOperand(k, before);
    }
    t.erase();
  }
  clone.setFunctionType(FunctionType::get(
      callee.getContext(), clone.getArgumentTypes(), ret->getOperandTypes()));
  return clone;
}

static FailureOr<TrainGraph> readTrainGraph(func::FuncOp func,
                                            int64_t numStages) {
  TrainGraph g;
  g.calls.resize(numStages);
  g.fwd.resize(numStages);
  g.grad.resize(numStages);
  auto module = func->getParentOfType<ModuleOp>();
  for (Operation &op : func.getBody().front().without_terminator()) {
    auto call = dyn_cast<func::CallOp>(op);
    auto callee =
        call ? module.lookupSymbol<func::FuncOp>(call.getCallee()) : nullptr;
    std::optional<std::pair<int64_t, TrainPhase>> group =
        callee ? trainGroupOf(callee) : std::nullopt;
    if (!group) {
      // The or of the stages' overflow flags: every list's (over the world).
      if (isa<graph::BinaryOp>(op) && isOverflowFlag(op.getResult(0))) {
        g.stageOf[&op] = -1;
        continue;
      }
      int64_t stage = -1;
      SmallVector<int64_t, 2> stages;
      for (Value v : op.getOperands()) {
        if (isa<BlockArgument>(v))
          return op.emitOpError("reads the step's input outside the stage "
                                "functions; outline the step again "
                                "(dist-partition on dist-autodiff's output)");
        auto it = g.perMicroBatch.find(v);
        stages.push_back(it != g.perMicroBatch.end()
                             ? it->second
                             : g.stageOf.lookup(v.getDefiningOp()));
      }
      if (isTiedSum(op, stages)) {
        auto &parts = g.tiedSums[op.getResult(0)];
        for (auto [v, s] : llvm::zip(op.getOperands(), stages)) {
          parts.push_back({v, s});
          auto call = v.getDefiningOp<func::CallOp>();
          if (v.hasOneUse() &&
              transposedResult(
                  module.lookupSymbol<func::FuncOp>(call.getCallee()),
                  cast<OpResult>(v).getResultNumber()))
            g.transposedParts.insert(v);
        }
        g.perMicroBatch[op.getResult(0)] = std::min(stages[0], stages[1]);
        // No list clones the sum: meanOf computes its value.
        g.stageOf[&op] = -1;
        continue;
      }
      for (int64_t s : stages) {
        if (s >= 0 && stage >= 0 && s != stage)
          return op.emitOpError("reads values of stages ")
                 << stage << " and " << s
                 << " outside the stage functions; the optimizer of a stage "
                    "reads only that stage's gradients";
        stage = std::max(stage, s);
      }
      g.stageOf[&op] = stage;
      continue;
    }
    auto [stage, phase] = *group;
    if (stage >= numStages)
      return call.emitOpError("calls stage ")
             << stage << " but the plan has " << numStages << " stages";
    auto &slot = g.calls[stage][static_cast<unsigned>(phase)];
    if (slot)
      return call.emitOpError("calls stage ")
             << stage << "'s " << trainPhaseName(phase)
             << " a second time; the step runs each stage function once";
    slot = call;
    callee.walk([&](Operation *op) {
      if (auto w = dyn_cast<graph::WeightOp>(op))
        g.readers[w.getSymName()].insert(stage);
      if (auto st = dyn_cast<graph::StateOp>(op))
        g.readers[st.getSymName()].insert(stage);
    });
    for (Value v : call.getOperands()) {
      if (isa<BlockArgument>(v))
        continue;
      auto it = g.perMicroBatch.find(v);
      if (it == g.perMicroBatch.end())
        return call.emitOpError("passes a value computed outside the stage "
                                "functions; stage functions read the step's "
                                "inputs and other stages' results");
      int64_t from = it->second;
      if (from < stage) // forward, possibly over several stages
        for (int64_t w = from; w < stage; ++w)
          g.fwd[w].insert(v);
      else // gradients flow back
        for (int64_t w = stage + 1; w <= from; ++w)
          g.grad[w].insert(v);
    }
    for (Value r : call.getResults())
      g.perMicroBatch[r] = stage;
  }
  for (int64_t v = 0; v < numStages; ++v) {
    if (!g.calls[v][0])
      return func.emitError("@")
             << func.getSymName() << " calls no forward function of stage "
             << v << "; outline it again (dist-partition)";
    g.width = std::max<unsigned>(
        g.width, std::max(g.fwd[v].size(), g.grad[v].size()));
  }
  return g;
}

/// Moves each of a list's sums over micro-batches (in the order they were
/// built: each reads the one before) right behind the later of its two
/// operands, so a micro-batch's gradient is added to the running sum as
/// soon as its backward ran and dies there: the list holds one gradient
/// buffer per weight instead of one per micro-batch. The order of the adds,
/// and so the bits of the sum, do not change. A moved add joins the action
/// of the op it follows.
static void accumulateEarly(ArrayRef<Operation *> adds) {
  for (Operation *add : adds) {
    Operation *after = nullptr;
    for (Value operand : add->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (def && def->getBlock() == add->getBlock() &&
          (!after || after->isBeforeInBlock(def)))
        after = def;
    }
    if (!after)
      continue;
    if (after->getNextNode() != add)
      add->moveAfter(after);
    auto label = dist::DistDialect::ActionAttrHelper(add->getContext());
    if (StringAttr action = label.getAttr(after))
      label.setAttr(add, action);
  }
}

/// The variant of stage function \p callee that accumulates its results
/// \p sums (ascending): it takes one running sum per such result as a
/// trailing argument marked `dist.accumulates = k` and returns
/// `sum + result k` in place of result k.
static func::FuncOp accumulatingVariant(func::FuncOp callee,
                                        ArrayRef<unsigned> sums) {
  auto [clone, fresh] = variantOf(callee, "accumulate", sums);
  if (!fresh)
    return clone;
  Block &body = clone.getBody().front();
  Operation *ret = body.getTerminator();
  OpBuilder b(ret);
  SmallVector<Type> argTypes(clone.getArgumentTypes());
  for (unsigned k : sums) {
    Value result = ret->getOperand(k);
    BlockArgument sum = body.addArgument(result.getType(), callee.getLoc());
    argTypes.push_back(result.getType());
    auto add = graph::BinaryOp::create(b, result.getLoc(), result.getType(),
                                       graph::BinaryKind::Add, sum, result);
    // The stage and phase of the op that made the result.
    if (Operation *def = result.getDefiningOp())
      for (StringRef name : {"dist.virtual_stage", "graph.phase"})
        if (Attribute a = def->getAttr(name))
          add->setAttr(name, a);
    ret->setOperand(k, add.getResult());
  }
  clone.setFunctionType(
      FunctionType::get(callee.getContext(), argTypes, clone.getResultTypes()));
  auto accumulates = dist::DistDialect::AccumulatesAttrHelper(b.getContext());
  for (auto [i, k] : llvm::enumerate(sums))
    clone.setArgAttr(callee.getNumArguments() + i, accumulates.getName(),
                     b.getI64IntegerAttr(k));
  return clone;
}

/// Folds each running sum `add(sum, part)` of \p adds whose `part` is a stage
/// call's result read only there (a later micro-batch's gradient) into that
/// call: the call runs the stage's accumulating variant on `sum`, which the
/// emission computes in the sum's buffer (the weight-gradient GEMM adds
/// into it, oneDNN's sum), so the list makes no separate pass over each
/// gradient per micro-batch. The order of the additions, and so the bits
/// of the sum, do not change. Only backward calls are folded: a forward's
/// sum is the loss, a scalar not worth a second copy of the forward.
static void accumulateIntoCalls(ArrayRef<Operation *> adds) {
  llvm::MapVector<Operation *, SmallVector<Operation *>> byCall;
  for (Operation *add : adds) {
    auto bin = dyn_cast<graph::BinaryOp>(add);
    if (!bin || bin.getKind() != graph::BinaryKind::Add)
      continue; // a ZeRO-2 reduce-scatter
    Value sum = bin.getLhs(), part = bin.getRhs();
    auto call = part.getDefiningOp<func::CallOp>();
    if (!call || call->getBlock() != add->getBlock() || !part.hasOneUse() ||
        !sum.hasOneUse() || sum.getType() != part.getType())
      continue;
    auto module = call->getParentOfType<ModuleOp>();
    auto callee = module.lookupSymbol<func::FuncOp>(call.getCallee());
    StringAttr phase =
        dist::DistDialect::TrainPhaseAttrHelper(call.getContext())
            .getAttr(callee);
    if (phase && phase.getValue() != "forward")
      byCall[call].push_back(add);
  }
  for (auto &[op, sums] : byCall) {
    auto call = cast<func::CallOp>(op);
    // Each sum is made before the call (an earlier micro-batch's).
    llvm::erase_if(sums, [&](Operation *add) {
      Operation *def = add->getOperand(0).getDefiningOp();
      return def && def->getBlock() == call->getBlock() &&
             !def->isBeforeInBlock(call);
    });
    if (sums.empty())
      continue;
    llvm::sort(sums, [](Operation *a, Operation *b) {
      return cast<OpResult>(a->getOperand(1)).getResultNumber() <
             cast<OpResult>(b->getOperand(1)).getResultNumber();
    });
    SmallVector<unsigned> results;
    SmallVector<Value> operands(call.getOperands());
    for (Operation *add : sums) {
      results.push_back(cast<OpResult>(add->getOperand(1)).getResultNumber());
      operands.push_back(add->getOperand(0));
    }
    auto module = call->getParentOfType<ModuleOp>();
    func::FuncOp variant = accumulatingVariant(
        module.lookupSymbol<func::FuncOp>(call.getCallee()), results);
    OpBuilder b(call);
    auto folded = func::CallOp::create(b, call.getLoc(), variant, operands);
    folded->setAttrs(call->getAttrs());
    folded.setCallee(variant.getSymName());
    for (Operation *add : sums) {
      unsigned k = cast<OpResult>(add->getOperand(1)).getResultNumber();
      add->getResult(0).replaceAllUsesWith(folded.getResult(k));
      add->erase();
    }
    call->replaceAllUsesWith(folded.getResults());
    call->erase();
  }
}

/// The variant of stage function \p callee that returns, in place of each
/// result k of \p parts (ascending), this device's ZeRO shard of it: the
/// part's chain (the flatten, pad and dist.reduce_scatter a list built on
/// the result) cloned right behind the op that computes the result, so a
/// weight's gradient is reduce-scattered as soon as the backward produced
/// it and dies there, before the next weight's is computed.
static func::FuncOp
shardingVariant(func::FuncOp callee,
                ArrayRef<std::pair<unsigned, ArrayRef<Operation *>>> parts) {
  SmallVector<unsigned> results;
  for (const auto &part : parts)
    results.push_back(part.first);
  auto [clone, fresh] = variantOf(callee, "shard", results);
  if (!fresh)
    return clone;
  Block &body = clone.getBody().front();
  Operation *ret = body.getTerminator();
  auto label = dist::DistDialect::ActionAttrHelper(callee.getContext());
  for (const auto &[k, chain] : parts) {
    Value result = ret->getOperand(k);
    Operation *def = result.getDefiningOp();
    OpBuilder b(callee.getContext());
    if (def)
      b.setInsertionPointAfter(def);
    else
      b.setInsertionPointToStart(&body);
    IRMapping map;
    map.map(chain.front()->getOperand(0), result);
    Operation *last = nullptr;
    for (Operation *op : chain) {
      last = b.clone(*op, map);
      last->removeAttr(label.getName());
      // The stage and phase of the op that made the result.
      if (def)
        for (StringRef name : {"dist.virtual_stage", "graph.phase"})
          if (Attribute a = def->getAttr(name))
            last->setAttr(name, a);
    }
    ret->setOperand(k, last->getResult(0));
  }
  zero::setResultTypes(clone);
  return clone;
}

/// ZeRO-2 under the schedules that update after every micro-batch
/// (PipeDream, PipeMare): moves each of \p chains (a micro-batch's
/// gradient flattened, padded and reduce-scattered over the stage's
/// replicas right after its backward) into the backward call that returns
/// the gradient (shardingVariant), so the list never holds a whole
/// gradient: the backward returns this replica's shard of each, which the
/// update reads. Fails on a chain whose gradient is not a call's result
/// read only by it (the list would hold it whole).
static LogicalResult
shardInsideCalls(ArrayRef<SmallVector<Operation *>> chains) {
  llvm::MapVector<Operation *,
                  SmallVector<std::pair<unsigned, ArrayRef<Operation *>>>>
      byCall;
  for (const SmallVector<Operation *> &chain : chains) {
    Value part = chain.front()->getOperand(0);
    auto call = part.getDefiningOp<func::CallOp>();
    if (!call || !part.hasOneUse() || !isa<dist::ReduceScatterOp>(chain.back()))
      return chain.back()->emitOpError(
          "reduce-scatters a gradient (ZeRO-2) that no backward call returns "
          "to it alone, so the list would hold it whole; plan it with zero=1");
    byCall[call].push_back(
        {cast<OpResult>(part).getResultNumber(), ArrayRef(chain)});
  }
  for (auto &[op, parts] : byCall) {
    auto call = cast<func::CallOp>(op);
    llvm::sort(parts,
               [](const auto &a, const auto &b) { return a.first < b.first; });
    auto module = call->getParentOfType<ModuleOp>();
    func::FuncOp variant = shardingVariant(
        module.lookupSymbol<func::FuncOp>(call.getCallee()), parts);
    OpBuilder b(call);
    auto sharded =
        func::CallOp::create(b, call.getLoc(), variant, call.getOperands());
    sharded->setAttrs(call->getAttrs());
    sharded.setCallee(variant.getSymName());
    for (const auto &[k, chain] : parts) {
      chain.back()->getResult(0).replaceAllUsesWith(sharded.getResult(k));
      for (Operation *dead : llvm::reverse(chain))
        dead->erase();
    }
    for (auto [old, now] : llvm::zip(call.getResults(), sharded.getResults()))
      if (!old.use_empty())
        old.replaceAllUsesWith(now);
    call->erase();
  }
  return success();
}

LogicalResult partition::buildTrainList(func::FuncOp func, const ScheduleIR &s,
                                        const schedule::Plan &plan,
                                        unsigned list, OpBuilder &b) {
  const schedule::RankLayout &layout = plan;
  bool recompute = plan.recompute == cost::Recompute::Full;
  MLIRContext *ctx = func.getContext();
  const schedule::Schedule &sched = s.schedule;
  int64_t m = sched.microbatches;
  unsigned pp = sched.pp;
  int64_t numStages = static_cast<int64_t>(pp) * sched.chunks;
  FailureOr<TrainGraph> graph = readTrainGraph(func, numStages);
  if (failed(graph))
    return failure();
  TrainGraph &g = *graph;
  const bool twoBW = sched.kind == schedule::ScheduleKind::PipeDream2BW;
  const bool pipeMare = sched.kind == schedule::ScheduleKind::PipeMare;
  // PipeDream and PipeMare update after every micro-batch.
  const bool perMicrobatch = schedule::updatesEveryMicrobatch(sched.kind);
  const bool versioned = perMicrobatch || twoBW;
  // ZeRO-3: each replica keeps its block of the weights its stages train;
  // every stage call gets them gathered, as the asynchronous schedules pass
  // their versions (weightArgs: the stage functions take the weights they
  // train as arguments).
  const bool zero3 = plan.zero >= 3;
  const bool weightArgs = versioned || zero3;
  dist::ScheduleOp scheduleOp = s.op;
  if (versioned) {
    auto refuse = [&](StringRef why) {
      return scheduleOp.emitOpError("runs the asynchronous schedule \"")
             << scheduleOp.getKind() << "\" " << why;
    };
    // ZeRO-1 shards the optimizer state and each update, ZeRO-2 the
    // gradients too; the versions the forwards and backwards read stay
    // whole (schedule::maxZeroStage, which the search weighs too).
    const unsigned maxZero = schedule::maxZeroStage(sched.kind);
    if (plan.zero > maxZero)
      return refuse("with ZeRO-" + std::to_string(plan.zero) +
                    ", which is not run yet: it keeps a block of each "
                    "weight, but the schedule's weight versions are whole "
                    "weights the stage calls read; plan it with zero=" +
                    std::to_string(maxZero) + " or lower");
    if (plan.ep > 1)
      return refuse("with expert parallelism (ep = " + std::to_string(plan.ep) +
                    "), which is not run yet: its experts' gradients would "
                    "sync per micro-batch; use 1f1b or gpipe");
  }
  // Tags: forward boundaries, then gradient boundaries, then the outputs
  // sent to list 0.
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  // The tied weights' gradient parts come after the outputs.
  int64_t gradBase = numStages * g.width, outBase = 2 * gradBase;
  int64_t tiedBase = outBase + ret.getNumOperands();
  auto tiedTag = [&](Value sum, size_t part) {
    return tiedBase + 2 * (g.tiedSums.find(sum) - g.tiedSums.begin()) +
           static_cast<int64_t>(part);
  };
  if (tiedBase + 2 * static_cast<int64_t>(g.tiedSums.size()) > 32768)
    return func.emitError("@")
           << func.getSymName() << ": " << numStages << " stages of up to "
           << g.width
           << " boundary values each need more than the 32768 tags the "
              "runtime's transfers carry";
  // Lists and stages: one list per pipeline rank, or with per-stage
  // replicas (PipeDream's replicas=2/1; chunks = 1) one per slot, replica d
  // of stage s running the micro-batches m with m mod r_s = d.
  // Virtual stage v's pipeline rank: v mod pp, or on V-shaped schedules
  // (ZB-V, V-Half, DualPipe-V) down the ranks and back up.
  auto pipelineStageOf = [&](int64_t v) {
    return schedule::rankOfStage(schedule::isVShape(sched.kind), pp,
                                 static_cast<unsigned>(v));
  };
  auto listOfStage = [&](int64_t v) {
    unsigned s = pipelineStageOf(v);
    return sched.replicated() ? sched.firstList[s] : s;
  };
  auto listsOfStage = [&](int64_t v) {
    unsigned s = pipelineStageOf(v);
    llvm::SmallSetVector<unsigned, 4> out;
    if (!sched.replicated())
      out.insert(s);
    else
      for (unsigned l = sched.firstList[s]; l < sched.firstList[s + 1]; ++l)
        out.insert(l);
    return out;
  };
  auto onList = [&](int64_t v) {
    return v >= 0 && pipelineStageOf(v) == sched.stageOfList(list);
  };
  // The micro-batches this list runs (of each of its stages).
  SmallVector<int64_t> ownMicrobatches;
  for (int64_t mb = 0; mb < m; ++mb)
    if (!sched.replicated() ||
        sched.listOf(sched.stageOfList(list), static_cast<int>(mb)) == list)
      ownMicrobatches.push_back(mb);
  // Replicas that hold the same weights: dp, or this stage's r_s.
  unsigned stageReplicas = layout.replicasOf(sched.stageOfList(list));
  // PipeDream and PipeMare with per-stage replicas: micro-batches per
  // update (a round; 1 otherwise).
  const int64_t round = schedule::updateRound(sched);
  Location loc = func.getLoc();

  // Results: list 0 returns the outputs (the list holding them sends them
  // there), every list the updates of its stages and those every list
  // computes (a step counter).
  // A weight one stage's optimizer updates and other stages also read (a
  // tied embedding: dist-autodiff sums its gradient on the earliest reader)
  // travels from the updating list to each reading list after the step.
  struct ResultPlace {
    /// everywhere: an update every list computes itself (a step counter).
    bool update, returned, everywhere;
    /// The stage that computes it (-1: every list); its first list holds
    /// it (the one that sends it), the stage's other replicas compute it
    /// too.
    int64_t stage;
    unsigned holder;
    /// Lists other than the holder that receive it: list 0 for an output,
    /// the other readers of an updated weight.
    llvm::SmallSetVector<unsigned, 4> receivers;
  };
  auto placeOf = [&](unsigned k, Value v) {
    ResultPlace p;
    auto name = func.getResultAttrOfType<StringAttr>(k, "graph.update");
    p.update = static_cast<bool>(name);
    int64_t stage = g.perMicroBatch.count(v)
                        ? g.perMicroBatch.lookup(v)
                        : g.stageOf.lookup(v.getDefiningOp());
    p.stage = stage;
    p.holder = stage < 0 ? 0 : listOfStage(stage);
    p.everywhere = p.update && stage < 0;
    if (!p.update && p.holder != 0)
      p.receivers.insert(0);
    if (p.update && stage >= 0)
      for (int64_t reader : g.readers.lookup(name.getValue()))
        if (pipelineStageOf(reader) != pipelineStageOf(stage))
          for (unsigned l : listsOfStage(reader))
            p.receivers.insert(l);
    p.returned =
        p.update ? (p.everywhere || onList(stage) || p.receivers.contains(list))
                 : list == 0;
    return p;
  };
  // Running statistics (batch norm's): a weight a stage's forward reads
  // and returns updated, which the step returns as its update. They follow
  // the micro-batches in the order the list runs their forwards: each
  // forward reads the value the one before it returned, as one process
  // accumulating micro-batches does, and the step's update is the last.
  // Each replica of a stage keeps its own, as data parallelism does.
  llvm::StringMap<Value> chained; // name -> the forward call's result
  auto module = func->getParentOfType<ModuleOp>();
  auto forwardReads = [&](Value v, StringRef n) {
    auto call = v.getDefiningOp<func::CallOp>();
    int64_t stage = g.perMicroBatch.lookup(v);
    if (!call ||
        call != g.calls[stage][static_cast<unsigned>(TrainPhase::Forward)])
      return false;
    auto callee = module.lookupSymbol<func::FuncOp>(call.getCallee());
    bool reads = false;
    callee.walk([&](graph::WeightOp w) { reads |= w.getSymName() == n; });
    return reads;
  };
  SmallVector<unsigned> resultIndices;
  for (auto [k, v] : llvm::enumerate(ret.getOperands())) {
    if (isa<BlockArgument>(v))
      return ret.emitOpError("returns input #")
             << cast<BlockArgument>(v).getArgNumber()
             << " unchanged; a pipelined step returns its loss and updates";
    if (auto n = func.getResultAttrOfType<StringAttr>(k, "graph.update");
        n && g.perMicroBatch.count(v)) {
      if (!forwardReads(v, n.getValue()))
        return ret.emitOpError("returns a stage function's result as update #")
               << k << " ('" << n.getValue()
               << "'), which is neither computed by the optimizer nor a "
                  "running statistic its stage's forward reads and updates";
      chained[n.getValue()] = v;
    }
    if (placeOf(k, v).returned)
      resultIndices.push_back(k);
  }
  SmallVector<Type> inputs, outputs;
  for (BlockArgument arg : func.getArguments()) {
    auto r = dyn_cast<RankedTensorType>(arg.getType());
    if (!r || !r.hasStaticShape() || r.getRank() == 0)
      return func.emitError("@")
             << func.getSymName() << " input #" << arg.getArgNumber()
             << " has type " << arg.getType()
             << "; a pipeline streams micro-batches along the leading "
                "dimension of statically shaped tensors";
    inputs.push_back(batchedType(arg.getType(), m));
  }
  for (unsigned k : resultIndices)
    outputs.push_back(ret.getOperand(k).getType());
  std::string name = (func.getSymName() + "_rank" + Twine(list)).str();
  auto fn = func::FuncOp::create(b, loc, name,
                                 FunctionType::get(ctx, inputs, outputs));
  fn.setAllArgAttrs(func.getAllArgAttrs());
  // Data parallelism: each replica of the stage reads its own rows.
  bool dataParallel = layout.dp > 1;
  // Gradients and the loss are reduced over the stage's replicas (dp, or
  // the stage's own count).
  bool reduced = stageReplicas > 1;
  if (dataParallel)
    for (unsigned k = 0; k < fn.getNumArguments(); ++k)
      fn.setArgAttr(k, dist::DistDialect::BatchShardAttrHelper::getNameStr(),
                    b.getUnitAttr());
  for (auto [i, k] : llvm::enumerate(resultIndices))
    fn.setResultAttrs(i, func.getResultAttrDict(k));
  dist::DistDialect::ActionListAttrHelper(ctx).setAttr(
      fn, b.getI64IntegerAttr(list));
  Block *entry = fn.addEntryBlock();
  OpBuilder ib = OpBuilder::atBlockEnd(entry);

  MicrobatchValues values(ib, entry, m, loc);
  auto valueOf = [&](int64_t mb, Value v) { return values.get(mb, v); };

  // Boundary values every tensor rank holds whole go by scatter/gather.
  TensorRankVariance variance(func, plan);
  auto send = [&](Operation *at, int64_t mb, const llvm::SetVector<Value> &vals,
                  int64_t tagBase, int64_t peer,
                  StringRef what) -> LogicalResult {
    for (auto [k, v] : llvm::enumerate(vals)) {
      Value val = valueOf(mb, v);
      if (!val)
        return at->emitOpError("sends ")
               << what << " of micro-batch " << mb
               << " before they are computed or received on this list";
      sendBoundary(ib, at->getLoc(), val, !variance.varies(v), peer,
                   tagBase + k, plan, sched.stageOfList(list));
    }
    return success();
  };
  auto recv = [&](Operation *at, int64_t mb, const llvm::SetVector<Value> &vals,
                  int64_t tagBase, int64_t peer) {
    for (auto [k, v] : llvm::enumerate(vals))
      values.set(mb, v,
                 recvBoundary(ib, at->getLoc(), v.getType(),
                              !variance.varies(v), peer, tagBase + k, plan,
                              sched.stageOfList(list)));
  };

  // The devices of this list's stage replicas, over which gradients and
  // the loss are averaged: with tensor parallelism one group per tensor
  // rank (the replicas' devices that hold the same shards).
  std::vector<std::vector<unsigned>> replicaGroups =
      layout.replicaGroups(sched.stageOfList(list));
  // With data parallelism each replica holds the mean over its rows, and
  // the means are averaged; with per-stage replicas each holds its
  // micro-batches' share of the mean over all of them (meanOf), and the
  // shares are summed.
  auto averageOverReplicas = [&](Value v) -> Value {
    auto mean = dist::AllReduceOp::create(
        ib, loc, v.getType(), v,
        dist::ReductionKindAttr::get(ctx, layout.replicated()
                                              ? dist::ReductionKind::sum
                                              : dist::ReductionKind::mean),
        dist::deviceGroup(ctx, replicaGroups.front()));
    dist::setRunGroups(mean, replicaGroups);
    return mean.getResult();
  };

  // The mean over the step's micro-batches of a stage function's result
  // (with dp > 1, after the stage's all_reduce: over the replicas too).
  // With per-stage replicas a list sums its own micro-batches and scales
  // by the step's count: the stage's all_reduce adds the shares.
  DenseMap<Value, Value> means;
  llvm::DenseSet<Value> averaged;
  // The adds of meanOf's sums, emitted where the mean is first needed and
  // moved up behind their operands once the list is built.
  SmallVector<Operation *> accumulations;
  // ZeRO-2: each micro-batch's reduce-scatters (flatten, pad,
  // reduce_scatter), in the order built, for shardInsideCalls.
  SmallVector<SmallVector<Operation *>> scatterChains;
  // A sum of n values, scaled to their mean.
  auto meanOfSum = [&](Value sum, int64_t n) -> Value {
    if (n == 1)
      return sum;
    auto type = cast<RankedTensorType>(sum.getType());
    auto scalar = RankedTensorType::get({}, type.getElementType());
    Value inv = graph::ConstantOp::create(
        ib, loc, scalar,
        DenseElementsAttr::get(
            scalar, ib.getFloatAttr(type.getElementType(), 1.0 / n)));
    return graph::BinaryOp::create(ib, loc, type, graph::BinaryKind::Mul, sum,
                                   inv);
  };
  // A sum over the step's micro-batches, scaled to their mean.
  auto overStep = [&](Value sum) { return meanOfSum(sum, m); };
  // The mean over the list's micro-batches of v, each micro-batch's value
  // first passed through \p each when given.
  auto meanOverStep = [&](Operation *at, Value v,
                         llvm::function_ref<Value(Value)> each)
      -> FailureOr<Value> {
    Value sum;
    for (int64_t mb : ownMicrobatches) {
      Value part = valueOf(mb, v);
      if (!part)
        return at->emitOpError("needs micro-batch ")
               << mb << " of a stage's result that this list never computed "
               << "or received; run dist-verify-schedule";
      if (each)
        part = each(part);
      if (!sum) {
        sum = part;
        continue;
      }
      auto add = graph::BinaryOp::create(ib, loc, part.getType(),
                                         graph::BinaryKind::Add, sum, part);
      accumulations.push_back(add);
      sum = add.getResult();
    }
    return overStep(sum);
  };
  // A tied weight's gradient (Megatron's embedding group): each stage
  // that reads the weight keeps its part summed over the step's
  // micro-batches, and once a step, at its first gradient sync, every list
  // of a later stage sends its part's mean to the list of the updating
  // stage (replica for replica and tensor rank for tensor rank), which adds
  // the parts (in the sum's operand order) before its own sync and update
  // and sends the updated weight back after the step (ResultPlace). With
  // per-stage replicas the updating stage's first list receives every
  // reading list's share, and the stage's all_reduce adds its replicas'.
  std::function<FailureOr<Value>(Operation *, Value)> meanOf;
  // A part an LM head computes transposed (g.transposedParts) comes from
  // the stage function's variant that leaves it in the head's layout
  // (untransposedVariant): its running sum over the micro-batches stays in
  // that layout and its mean is transposed to the table's once a step. The
  // asynchronous schedules and ZeRO-3, which call versioned variants,
  // refuse tied weights; running statistics keep the stage's functions as
  // they are.
  DenseMap<Operation *, func::FuncOp> headLayout; // step's call -> variant
  if (!versioned && !zero3 && chained.empty()) {
    llvm::MapVector<Operation *, SmallVector<unsigned>> byCall;
    for (Value part : g.transposedParts)
      byCall[part.getDefiningOp()].push_back(
          cast<OpResult>(part).getResultNumber());
    for (auto &[op, results] : byCall) {
      llvm::sort(results);
      headLayout[op] = untransposedVariant(
          module.lookupSymbol<func::FuncOp>(cast<func::CallOp>(op).getCallee()),
          results);
    }
  }
  DenseMap<Value, Value> partMeans;
  auto partMeanOf = [&](Operation *at, Value part) -> FailureOr<Value> {
    if (Value done = partMeans.lookup(part))
      return done;
    FailureOr<Value> mean = meanOf(at, part);
    if (failed(mean))
      return failure();
    Value out = *mean;
    if (g.transposedParts.contains(part) &&
        headLayout.count(part.getDefiningOp()))
      out = graph::TransposeOp::create(ib, loc, part.getType(), out,
                                       ib.getDenseI64ArrayAttr({1, 0}));
    return partMeans[part] = out;
  };
  auto tiedMeanOf = [&](Operation *at, Value v) -> FailureOr<Value> {
    int64_t stage = g.perMicroBatch.lookup(v);
    unsigned holder = listOfStage(stage);
    Value sum;
    for (auto [k, part] : llvm::enumerate(g.tiedSums.lookup(v))) {
      auto [value, from] = part;
      SmallVector<Value, 2> shares;
      if (onList(from)) {
        FailureOr<Value> mean = partMeanOf(at, value);
        if (failed(mean))
          return failure();
        shares.push_back(*mean);
      } else if (list == holder) {
        for (unsigned l : listsOfStage(from))
          shares.push_back(dist::RecvOp::create(
              ib, loc, value.getType(), ib.getI64IntegerAttr(l),
              ib.getI64IntegerAttr(tiedTag(v, k)), ib.getUnitAttr()));
      }
      for (Value share : shares)
        sum = sum ? graph::BinaryOp::create(ib, loc, share.getType(),
                                            graph::BinaryKind::Add, sum, share)
                        .getResult()
                  : share;
    }
    return sum;
  };
  meanOf = [&](Operation *at, Value v) -> FailureOr<Value> {
    if (Value done = means.lookup(v))
      return done;
    if (g.tiedSums.count(v)) {
      FailureOr<Value> mean = tiedMeanOf(at, v);
      if (succeeded(mean))
        means[v] = *mean;
      return mean;
    }
    auto type = cast<RankedTensorType>(v.getType());
    if (!isa<FloatType>(type.getElementType()))
      return at->emitOpError("reads a ")
             << type << " per micro-batch value; only float values (the "
             << "loss, gradients) are averaged over a step's micro-batches";
    FailureOr<Value> mean = meanOverStep(at, v, {});
    if (succeeded(mean))
      means[v] = *mean;
    return mean;
  };
  // Top-level values (weights, state, optimizer results) in this program;
  // ops every list computes are copied where first read.
  IRMapping stepMap;
  std::function<FailureOr<Value>(Operation *)> overflowFlag;
  auto stepValue = [&](Operation *at, Value v) -> FailureOr<Value> {
    return cloneTopLevel(ib, at, v, stepMap, [&](Value x) -> FailureOr<Value> {
      if (g.perMicroBatch.count(x))
        return meanOf(at, x);
      if (isOverflowFlag(x))
        return overflowFlag(at);
      return Value();
    });
  };
  // The schedule's gradient sync of stage v: every gradient its optimizer
  // reads, averaged over the replicas.
  // Calls fn on each per-micro-batch value (gradient) stage v's optimizer
  // ops read.
  auto gradsOfStage = [&](int64_t v, auto &&fn) -> LogicalResult {
    for (Operation &op : func.getBody().front().without_terminator())
      if (!isa<func::CallOp>(op) && g.stageOf.lookup(&op) == v)
        for (Value operand : op.getOperands())
          if (g.perMicroBatch.count(operand) && failed(fn(operand)))
            return failure();
    return success();
  };
  // Context parallelism: each context rank's weight gradients are its
  // tokens' part (dist-context-parallel reads the weights as they are), so
  // the schedule's sync sums them over cp and averages over dp, one
  // collective over the stage's dp x cp devices per step (Megatron's
  // data-parallel group "with cp"): a sum, scaled by 1 / dp.
  const bool contextParallel = layout.cp > 1;
  const bool gradsReduced = reduced || contextParallel;
  std::vector<std::vector<unsigned>> syncGroups =
      layout.replicaContextGroups(sched.stageOfList(list));
  auto overReplicas = [&](Value sum) -> Value {
    return contextParallel ? meanOfSum(sum, stageReplicas) : sum;
  };
  // Expert parallelism: an expert-parallel rank's experts
  // (dist-expert-parallel's weights: a `dist.tp_shard` axis of ep parts
  // by the rank's replica coordinate, stride tp) get gradients that
  // already hold its expert group's tokens (the backward all-to-all
  // brought them), so they are summed over the ranks that hold the same
  // experts (every ep-th replica, at the same tensor rank, with its context
  // ranks, whose parts of the capacity slots the sum adds) and scaled by
  // 1 / the stage's replicas: one process's mean over every row.
  llvm::DenseSet<Value> expertGrads;
  llvm::StringSet<> expertWeights; // by name (ZeRO-3's blocks)
  auto isExpertPart = [&](Operation *w) {
    auto shard = dist::DistDialect::TpShardAttrHelper(ctx).getAttr(w);
    return shard && llvm::any_of(dist::shardAxes(shard.asArrayRef()),
                                 [&](const dist::ShardAxis &a) {
                                   return a.parts == plan.ep &&
                                          a.stride == layout.tp * layout.cp;
                                 });
  };
  if (plan.ep > 1)
    for (Operation &op : func.getBody().front().without_terminator())
      if (isa<graph::SgdUpdateOp, graph::AdamUpdateOp>(op))
        if (auto w = op.getOperand(0).getDefiningOp<graph::WeightOp>();
            w && isExpertPart(w)) {
          expertGrads.insert(gradientOf(op.getOperand(1)));
          expertWeights.insert(w.getSymName());
        }
  std::vector<std::vector<unsigned>> expertSyncGroups =
      layout.expertDataGroups(sched.stageOfList(list), plan.ep);
  auto syncGradient = [&](Value grad, bool expert) -> Value {
    if (expert && expertSyncGroups.front().size() == 1)
      return meanOfSum(grad, stageReplicas); // dp = ep: no other holder
    if (expert) {
      auto sum = dist::AllReduceOp::create(
          ib, loc, grad.getType(), grad,
          dist::ReductionKindAttr::get(ctx, dist::ReductionKind::sum),
          dist::deviceGroup(ctx, expertSyncGroups.front()));
      dist::setRunGroups(sum, expertSyncGroups);
      return meanOfSum(sum.getResult(), stageReplicas);
    }
    if (!contextParallel)
      return averageOverReplicas(grad);
    auto sum = dist::AllReduceOp::create(
        ib, loc, grad.getType(), grad,
        dist::ReductionKindAttr::get(ctx, dist::ReductionKind::sum),
        dist::deviceGroup(ctx, syncGroups.front()));
    dist::setRunGroups(sum, syncGroups);
    return overReplicas(sum.getResult());
  };
  // The list's parts of tied weights updated on other lists: their means
  // over the step, sent once, at the list's first gradient sync (tiedMeanOf
  // receives them).
  bool tiedSent = false;
  auto sendTiedParts = [&](Operation *at) -> LogicalResult {
    if (tiedSent)
      return success();
    tiedSent = true;
    for (auto &[sum, parts] : g.tiedSums) {
      int64_t stage = g.perMicroBatch.lookup(sum);
      if (onList(stage))
        continue;
      for (auto [k, part] : llvm::enumerate(parts)) {
        if (!onList(part.second))
          continue;
        FailureOr<Value> mean = partMeanOf(at, part.first);
        if (failed(mean))
          return failure();
        dist::SendOp::create(
            ib, loc, *mean, ib.getI64IntegerAttr(listOfStage(stage)),
            ib.getI64IntegerAttr(tiedTag(sum, k)), ib.getUnitAttr());
      }
    }
    return success();
  };
  auto allReduce = [&](Operation *at, int64_t v) -> LogicalResult {
    if (failed(sendTiedParts(at)))
      return failure();
    if (!gradsReduced)
      return at->emitOpError("averages gradients over data-parallel replicas "
                             "but the stage has one");
    return gradsOfStage(v, [&](Value grad) -> LogicalResult {
      if (averaged.contains(grad))
        return success();
      FailureOr<Value> mean = meanOf(at, grad);
      if (failed(mean))
        return failure();
      means[grad] = syncGradient(*mean, expertGrads.contains(grad));
      averaged.insert(grad);
      return success();
    });
  };
  // ZeRO-1: the gradient means that are this replica's shard, and the
  // replicas that share them: with tensor parallelism each tensor rank
  // shards its part over its own replicas (one of replicaGroups); with
  // context parallelism over its replicas' context ranks (syncGroups),
  // whose parts of the gradient the reduce-scatter sums.
  llvm::DenseSet<Value> sharded;
  const std::vector<std::vector<unsigned>> &shardGroups =
      contextParallel ? syncGroups : replicaGroups;
  SmallVector<int64_t> zeroDevices(shardGroups.front().begin(),
                                   shardGroups.front().end());
  zero::ShardGroup zeroGroup(zeroDevices, shardGroups,
                             /*shares=*/layout.replicated() || contextParallel);
  // ZeRO under expert parallelism: the experts' gradients and optimizer
  // state shard over the expert data group (the devices that hold the same
  // experts), the reduce-scatter summing their gradients (each holds its
  // expert group's tokens already) before the scale by 1 / the stage's
  // replicas, as syncGradient's all-reduce does. With dp = ep no other
  // device holds them: they are synced unsharded.
  SmallVector<int64_t> expertZeroDevices(expertSyncGroups.front().begin(),
                                         expertSyncGroups.front().end());
  zero::ShardGroup expertZeroGroup(expertZeroDevices, expertSyncGroups,
                                   /*shares=*/true);
  auto shardGroupOf = [&](Value grad) -> const zero::ShardGroup & {
    return expertGrads.contains(grad) ? expertZeroGroup : zeroGroup;
  };
  auto scaleShard = [&](Value grad, Value shard) -> Value {
    return expertGrads.contains(grad) ? meanOfSum(shard, stageReplicas)
                                      : overReplicas(shard);
  };
  // ZeRO-1: the shard of the mean over the step's micro-batches.
  auto shardOfMean = [&](Operation *at, Value grad) -> FailureOr<Value> {
    FailureOr<Value> mean = meanOf(at, grad);
    if (failed(mean))
      return failure();
    return scaleShard(
        grad, zero::reduceScatterMean(ib, loc, *mean, shardGroupOf(grad)));
  };
  // ZeRO-2: the mean of the micro-batches' shards. Each micro-batch's
  // gradient is reduce-scattered and added to the running sum of shards;
  // accumulateEarly moves both right behind the backward that computed it
  // and shardInsideCalls the reduce-scatter into it, so the list holds
  // only shards.
  auto shardedMeanOf = [&](Operation *at, Value grad) -> FailureOr<Value> {
    FailureOr<Value> mean = meanOverStep(at, grad, [&](Value part) {
      SmallVector<Operation *> &chain = scatterChains.emplace_back();
      Value shard = zero::reduceScatterMean(ib, loc, part, shardGroupOf(grad),
                                            "backward", &chain);
      accumulations.append(chain.begin(), chain.end());
      return shard;
    });
    if (failed(mean))
      return failure();
    return scaleShard(grad, *mean);
  };
  // ZeRO shards a gradient only where an optimizer update reads it, or in
  // mixed precision the unscale whose result the update reads (the unscale
  // then runs on the shard).
  auto checkShardable = [&](Operation *at, int64_t v, Operation &op,
                            OpOperand &use) -> LogicalResult {
    bool updateGradient = isa<graph::SgdUpdateOp, graph::AdamUpdateOp>(op)
                              ? use.getOperandNumber() == 1
                              : isa<graph::UnscaleOp>(op) &&
                                    use.getOperandNumber() >= 1;
    if (updateGradient)
      return success();
    return at->emitOpError("shards stage ")
           << v << "'s gradients over its replicas (ZeRO-" << plan.zero
           << "), but " << op.getName() << " reads one (operand #"
           << use.getOperandNumber()
           << ") other than as an optimizer update's gradient; plan it with "
              "zero=0";
  };
  auto reduceScatter = [&](Operation *at, int64_t v) -> LogicalResult {
    if (failed(sendTiedParts(at)))
      return failure();
    if (!gradsReduced)
      return at->emitOpError("shards gradients over data-parallel replicas "
                             "but the stage has one");
    if (layout.replicated() && plan.zero >= 2)
      return at->emitOpError("shards stage ")
             << v
             << "'s gradients of every micro-batch over its replicas (ZeRO-"
             << plan.zero << ") with per-stage replicas, whose replicas run "
             << "different micro-batches; plan it with zero=1 or zero=0";
    for (Operation &op : func.getBody().front().without_terminator()) {
      if (isa<func::CallOp>(op) || g.stageOf.lookup(&op) != v)
        continue;
      for (OpOperand &use : op.getOpOperands()) {
        Value operand = use.get();
        if (!g.perMicroBatch.count(operand) || averaged.contains(operand))
          continue;
        if (failed(checkShardable(at, v, op, use)))
          return failure();
        if (expertGrads.contains(operand) && expertZeroDevices.size() == 1) {
          FailureOr<Value> mean = meanOf(at, operand);
          if (failed(mean))
            return failure();
          means[operand] = syncGradient(*mean, /*expert=*/true);
          averaged.insert(operand);
          continue;
        }
        // A tied weight's gradient exists once a step (its parts meet
        // then), so it is reduce-scattered then, as ZeRO-1 does.
        FailureOr<Value> shard = plan.zero >= 2 && !g.tiedSums.count(operand)
                                     ? shardedMeanOf(at, operand)
                                     : shardOfMean(at, operand);
        if (failed(shard))
          return failure();
        means[operand] = *shard;
        averaged.insert(operand);
        sharded.insert(operand);
      }
    }
    return success();
  };
  // An optimizer op of the list's stages reads gradients averaged over the
  // stage's replicas (the schedule's all_reduce before its optimizer_step).
  auto checkSynced = [&](Operation *at, Operation &op) -> LogicalResult {
    if (!gradsReduced)
      return success();
    for (Value operand : op.getOperands())
      if (g.perMicroBatch.count(operand) && !averaged.contains(operand))
        return at->emitOpError("updates stage ")
               << g.stageOf.lookup(&op)
               << "'s weights with gradients not yet averaged over its "
               << stageReplicas
               << " data-parallel replicas; the schedule needs an "
                  "all_reduce of that stage before the optimizer_step "
                  "(dist-materialize-schedule writes it)";
    return success();
  };
  // Mixed precision: the step's overflow flag. The list unscales the
  // (synced) gradients of its stages (its graph.unscale of each) and the
  // flags are or-ed over the world, one value per rank: every rank skips
  // the step and moves the loss scale together, as one process does when
  // any gradient overflowed, whatever stage, shard or replica holds it.
  auto unscales = func.getBody().front().getOps<graph::UnscaleOp>();
  const bool mixedPrecision = !unscales.empty();
  // The unscales of the stages \p onStage selects, cloned into \p map
  // with \p operandOf resolving what they read (a gradient \p isShard says
  // this replica holds a shard of is unscaled as that shard, ZeRO), and
  // their flags or-ed, then over the world: max of one i1 per rank.
  auto worldOverflow =
      [&](function_ref<bool(int64_t)> onStage,
          function_ref<FailureOr<Value>(Value)> operandOf, IRMapping &map,
          function_ref<bool(Value)> isShard) -> FailureOr<Value> {
    Value local;
    for (graph::UnscaleOp unscale : unscales) {
      if (!onStage(g.stageOf.lookup(unscale)))
        continue;
      for (Value operand : unscale->getOperands()) {
        FailureOr<Value> mapped = operandOf(operand);
        if (failed(mapped))
          return failure();
        map.map(operand, *mapped);
      }
      Operation *copy = ib.clone(*unscale, map);
      for (auto [k, grad] : llvm::enumerate(unscale.getGrads()))
        if (isShard(grad))
          copy->getResult(k).setType(copy->getOperand(k + 1).getType());
      Value found = copy->getResults().back();
      local = local
                  ? graph::BinaryOp::create(ib, loc, found.getType(),
                                            graph::BinaryKind::Or, local, found)
                  : found;
    }
    auto flagType = RankedTensorType::get({}, ib.getI1Type());
    if (!local) // no gradient on this list's stages
      local = graph::ConstantOp::create(
          ib, loc, flagType, DenseElementsAttr::get(flagType, false));
    return dist::AllReduceOp::create(
               ib, loc, flagType, local,
               dist::ReductionKindAttr::get(ctx, dist::ReductionKind::max),
               ib.getDenseI64ArrayAttr({}))
        .getResult();
  };
  Value overflow;
  overflowFlag = [&](Operation *at) -> FailureOr<Value> {
    if (overflow)
      return overflow;
    for (graph::UnscaleOp unscale : unscales)
      if (onList(g.stageOf.lookup(unscale)) &&
          failed(checkSynced(at, *unscale)))
        return failure();
    FailureOr<Value> flag = worldOverflow(
        onList, [&](Value x) { return stepValue(at, x); }, stepMap,
        [&](Value grad) { return sharded.contains(grad); });
    if (failed(flag))
      return failure();
    overflow = *flag;
    for (graph::UnscaleOp unscale : unscales)
      stepMap.map(unscale.getResults().back(), overflow);
    return overflow;
  };
  bool stepped = false;
  auto optimizerStep = [&](Operation *at) -> LogicalResult {
    if (stepped)
      return at->emitOpError("is list ")
             << list << "'s second optimizer step; a step updates once";
    stepped = true;
    if (failed(sendTiedParts(at)))
      return failure();
    // Every rank joins the world's or of the overflow flags here, before
    // any update reads it.
    if (mixedPrecision && failed(overflowFlag(at)))
      return failure();
    for (Operation &op : func.getBody().front().without_terminator()) {
      if (isa<func::CallOp, graph::UnscaleOp>(op) ||
          !onList(g.stageOf.lookup(&op)))
        continue;
      if (failed(checkSynced(at, op)))
        return failure();
      for (Value operand : op.getOperands()) {
        FailureOr<Value> mapped = stepValue(at, operand);
        if (failed(mapped))
          return failure();
        stepMap.map(operand, *mapped);
      }
      Operation *copy = ib.clone(op, stepMap);
      if (op.getNumOperands() < 2 ||
          !sharded.contains(gradientOf(op.getOperand(1))))
        continue;
      // ZeRO-1 and 2: this replica's shard of the update, gathered; ZeRO-3:
      // the update of the list's block of the weight.
      SmallVector<Value> replaced;
      if (failed(zero::shardUpdate(copy,
                                   shardGroupOf(gradientOf(op.getOperand(1))),
                                   /*gradIsShard=*/true, &replaced,
                                   /*paramIsShard=*/zero3)))
        return failure();
      for (auto [from, to] : llvm::zip(op.getResults(), replaced))
        stepMap.map(from, to);
    }
    return success();
  };

  // Asynchronous schedules and ZeRO-3: the weights each stage updates (by
  // name); asynchronous schedules: the newest version of each weight and
  // optimizer state this list updates, and the versions each (micro-batch,
  // stage) computes with.
  llvm::StringMap<Value> topWeights;
  for (auto w : func.getBody().front().getOps<graph::WeightOp>())
    topWeights.try_emplace(w.getSymName(), w.getResult());
  // Mixed precision under PipeDream: the loss scale (what the unscales
  // divide by) moves with every micro-batch's update, so the last stage's
  // backward, which seeds with it, reads its newest value as an argument
  // of the versioned clone, like a weight version.
  llvm::StringMap<Value> scaleStates;
  if (perMicrobatch)
    for (graph::UnscaleOp unscale : unscales)
      if (auto st = unscale.getScale().getDefiningOp<graph::StateOp>())
        scaleStates.try_emplace(st.getSymName(), st.getResult());
  std::map<std::string, int64_t> trainedOn; // by name: ordered output
  if (weightArgs)
    for (auto [k, v] : llvm::enumerate(ret.getOperands()))
      if (auto n = func.getResultAttrOfType<StringAttr>(k, "graph.update");
          n && topWeights.count(n.getValue()))
        if (!chained.count(n.getValue()))
          trainedOn[n.getValue().str()] = placeOf(k, v).stage;
  llvm::StringMap<Value> newest;
  std::map<std::string, Value> lastUpdate; // 2BW: W(t) - W(t-1), by name
  llvm::StringMap<Value> previous;         // 2BW: W(t-1)
  DenseMap<std::pair<int64_t, int64_t>, llvm::StringMap<Value>> stash;
  // PipeDream: the version each (round, stage) computes with.
  DenseMap<std::pair<int64_t, int64_t>, llvm::StringMap<Value>> roundVersions;
  // The clone of a stage function that takes as trailing arguments (in the
  // order it reads them) the weights it reads and this plan trains as
  // versions (asynchronous schedules) or blocks (ZeRO-3), and the running
  // statistics it reads.
  struct Versioned {
    func::FuncOp callee;
    SmallVector<std::string> weights;
  };
  llvm::StringMap<Versioned> versionedCallees;
  auto versionedCallee = [&](func::CallOp call,
                             int64_t v) -> FailureOr<Versioned> {
    auto callee = module.lookupSymbol<func::FuncOp>(call.getCallee());
    if (auto it = versionedCallees.find(callee.getSymName());
        it != versionedCallees.end())
      return it->second;
    Versioned out{callee, {}};
    llvm::SmallSetVector<StringRef, 8> names;
    WalkResult walk = callee.walk([&](graph::WeightOp w) {
      if (chained.count(w.getSymName())) {
        names.insert(w.getSymName());
        return WalkResult::advance();
      }
      if (!weightArgs)
        return WalkResult::advance();
      auto it = trainedOn.find(w.getSymName().str());
      if (it == trainedOn.end() || it->second < 0)
        return WalkResult::advance();
      if (pipelineStageOf(it->second) != pipelineStageOf(v)) {
        if (zero3)
          w.emitOpError("is read by stage ")
              << v << " and updated by stage " << it->second
              << " (a tied weight); ZeRO-3 keeps each stage's blocks of the "
                 "weights it trains, so a weight shared by stages on two "
                 "pipeline ranks is not run yet; untie it or use zero=2";
        else
          w.emitOpError("is read by stage ")
              << v << " and updated by stage " << it->second
              << " (a tied weight); the asynchronous schedule \""
              << scheduleOp.getKind()
              << "\" keeps each stage's own weight versions, so a weight "
                 "shared by two stages is not run yet; untie it or use a "
                 "synchronous schedule (1f1b)";
        return WalkResult::interrupt();
      }
      names.insert(w.getSymName());
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
    callee.walk([&](graph::StateOp st) {
      if (scaleStates.count(st.getSymName()))
        names.insert(st.getSymName());
    });
    if (!names.empty()) {
      std::string cloneName = (callee.getSymName() + "_versioned").str();
      auto clone = module.lookupSymbol<func::FuncOp>(cloneName);
      if (!clone) {
        clone = cast<func::FuncOp>(callee->clone());
        clone.setSymName(cloneName);
        OpBuilder(callee).insert(clone);
        Block &body = clone.getBody().front();
        SmallVector<Type> argTypes(clone.getArgumentTypes());
        for (StringRef n : names) {
          Type t = chained.count(n)       ? chained.lookup(n).getType()
                   : scaleStates.count(n) ? scaleStates.lookup(n).getType()
                                          : topWeights.lookup(n).getType();
          BlockArgument arg = body.addArgument(t, callee.getLoc());
          argTypes.push_back(t);
          clone.walk([&](Operation *op) {
            auto w = dyn_cast<graph::WeightOp>(op);
            auto st = dyn_cast<graph::StateOp>(op);
            if ((w && w.getSymName() == n) || (st && st.getSymName() == n)) {
              op->getResult(0).replaceAllUsesWith(arg);
              op->erase();
            }
          });
        }
        clone.setFunctionType(FunctionType::get(
            ctx, argTypes, clone.getFunctionType().getResults()));
      }
      out.callee = clone;
      out.weights.assign(names.begin(), names.end());
    }
    versionedCallees[callee.getSymName()] = out;
    return out;
  };
  // The newest version of a weight or state this list updates (before the
  // first update: the stored one).
  auto newestOf = [&](Operation *at, StringRef n) -> FailureOr<Value> {
    if (Value v = newest.lookup(n))
      return v;
    Value top = topWeights.lookup(n);
    FailureOr<Value> stored = stepValue(at, top ? top : scaleStates.lookup(n));
    if (failed(stored))
      return failure();
    return newest[n] = *stored;
  };
  // A state of the schedule's kept beside weight \p n (2BW's last update,
  // PipeMare's velocity): zero at first, of the weight's type, and with
  // tensor parallelism the same part of the whole as the weight
  // (dist.tp_shard), so each tensor rank keeps and saves its own.
  auto weightState = [&](StringRef n, StringRef suffix, Type t) -> Value {
    auto state = graph::StateOp::create(
        ib, loc, t, ib.getStringAttr(n + suffix), ib.getF64FloatAttr(0.0));
    if (Value w = topWeights.lookup(n))
      if (Attribute shard = w.getDefiningOp()->getAttr(
              dist::DistDialect::TpShardAttrHelper::getNameStr()))
        state->setAttr(dist::DistDialect::TpShardAttrHelper::getNameStr(),
                       shard);
    return state.getResult();
  };
  // The version micro-batches compute with: the newest (PipeDream), or the
  // one before it (2BW).
  auto computeVersion = [&](Operation *at, StringRef n) -> FailureOr<Value> {
    FailureOr<Value> w = newestOf(at, n);
    if (failed(w) || !twoBW)
      return w;
    Value &stale = previous[n];
    if (!stale) {
      Value delta = weightState(n, ".last_update", w->getType());
      lastUpdate[n.str()] = delta;
      stale = graph::BinaryOp::create(ib, loc, w->getType(),
                                      graph::BinaryKind::Sub, *w, delta);
    }
    return stale;
  };

  // ZeRO-3: this list's block of each weight it trains (the optimizer
  // step updates it in place of the whole weight), and the whole weight
  // gathered for one stage call.
  // The experts' blocks are over the expert data group; with dp = ep no
  // other rank holds them, and the weight is read whole.
  llvm::StringMap<Value> blocks;
  auto gatheredWeight = [&](Operation *at, StringRef n,
                            TrainPhase phase) -> FailureOr<Value> {
    const bool expert = expertWeights.contains(n);
    Value whole = topWeights.lookup(n);
    if (expert && expertZeroDevices.size() == 1)
      return stepValue(at, whole);
    const zero::ShardGroup &group = expert ? expertZeroGroup : zeroGroup;
    Value &block = blocks[n];
    if (!block) {
      block =
          zero::weightBlock(ib, whole.getDefiningOp<graph::WeightOp>(), group)
              .getResult();
      stepMap.map(whole, block);
    }
    return zero::gatherWhole(ib, loc, block, group,
                             phase == TrainPhase::Forward ? "forward"
                                                          : "backward");
  };

  // PipeMare keeps no stash: a forward computes with the newest weights,
  // the backward of micro-batch mb with the newest less d * velocity, d the
  // updates since mb's forward and velocity `<weight>.velocity`, the moving
  // average of the stage's updates with decay D^(1/tau) (discrepancy
  // correction); tau, the stage's delay in the steady state, also scales
  // its learning rate by (tau + 1)^-p, p falling from 1 to 0 over the
  // first pipemare_warmup updates (learning-rate rescheduling).
  unsigned updates = 0; // this list's updates so far in the step
  // With per-stage replicas the delay is the list's own (in rounds).
  const unsigned tau =
      sched.replicated() ? schedule::updateDelay(sched, list)
                         : schedule::pipelineDelay(pp, sched.stageOfList(list),
                                                   static_cast<unsigned>(m));
  const bool correct = pipeMare && plan.pipemareDecay < 1 && tau > 0;
  const bool reschedule = pipeMare && plan.pipemareWarmup > 0 && tau > 0;
  std::map<std::string, Value> velocity; // by name: the newest
  DenseMap<std::pair<int64_t, int64_t>, unsigned> forwardUpdates;
  // Mixed precision: an update skipped on an overflow moves no weight, so
  // the correction counts the updates taken since the forward, from the
  // optimizer's step counter (which counts them) at the forward and now.
  DenseMap<std::pair<int64_t, int64_t>, Value> forwardSteps;
  auto stepCounter = [&](Operation *at) -> FailureOr<Value> {
    if (Value n = newest.lookup("step"))
      return n;
    for (auto st : func.getBody().front().getOps<graph::StateOp>())
      if (st.getSymName() == "step")
        return stepValue(at, st.getResult());
    return at->emitOpError("corrects stage ")
           << sched.stageOfList(list)
           << "'s backward under pipemare in mixed precision without the "
              "optimizer's step counter 'step' among the step's states "
              "(dist-autodiff writes it)";
  };
  // A scalar of \p like's element type (one constant per value: the list
  // is straight-line code, so the first dominates every later use).
  std::map<std::pair<const void *, double>, Value> scalars;
  auto scalar = [&](Value like, double x) -> Value {
    Type et = cast<RankedTensorType>(like.getType()).getElementType();
    Value &c = scalars[{et.getAsOpaquePointer(), x}];
    if (!c) {
      auto t = RankedTensorType::get({}, et);
      c = graph::ConstantOp::create(
          ib, loc, t, DenseElementsAttr::get(t, ib.getFloatAttr(et, x)));
    }
    return c;
  };
  auto binary = [&](graph::BinaryKind k, Value l, Value r) -> Value {
    Type t = cast<RankedTensorType>(l.getType()).getRank() >=
                     cast<RankedTensorType>(r.getType()).getRank()
                 ? l.getType()
                 : r.getType();
    return graph::BinaryOp::create(ib, loc, t, k, l, r);
  };
  auto velocityOf = [&](StringRef n, Type t) -> Value {
    Value &vel = velocity[n.str()];
    if (!vel)
      vel = weightState(n, ".velocity", t);
    return vel;
  };
  auto backwardVersion = [&](Operation *at, int64_t mb, int64_t v,
                             StringRef n) -> FailureOr<Value> {
    llvm::StringMap<Value> &chosen = stash[{mb, v}];
    if (Value w = chosen.lookup(n))
      return w;
    auto fwd = forwardUpdates.find({mb, v});
    if (fwd == forwardUpdates.end())
      return at->emitOpError("runs stage ")
             << v << "'s backward of micro-batch " << mb
             << " before its forward";
    FailureOr<Value> w = newestOf(at, n);
    if (failed(w))
      return failure();
    Value out = *w;
    if (unsigned d = updates - fwd->second; correct && d > 0) {
      Value times = scalar(out, d);
      if (Value then = forwardSteps.lookup({mb, v})) {
        FailureOr<Value> now = stepCounter(at);
        if (failed(now))
          return failure();
        times = binary(graph::BinaryKind::Sub, *now, then);
      }
      out = binary(
          graph::BinaryKind::Sub, out,
          binary(graph::BinaryKind::Mul, velocityOf(n, w->getType()), times));
    }
    return chosen[n] = out;
  };

  // Running statistics: the value the next forward reads (before the
  // first: the stored weight), and what each (micro-batch, stage) read.
  llvm::StringMap<Value> chain;
  DenseMap<std::pair<int64_t, int64_t>, llvm::StringMap<Value>> statsRead;
  llvm::DenseSet<std::pair<int64_t, int64_t>> forwarded;
  auto statInput = [&](Operation *at, int64_t mb, int64_t v, TrainPhase phase,
                       StringRef n) -> FailureOr<Value> {
    llvm::StringMap<Value> &read = statsRead[{mb, v}];
    if (Value x = read.lookup(n))
      return x;
    if (phase != TrainPhase::Forward)
      return at->emitOpError("runs stage ")
             << v << "'s " << trainPhaseName(phase) << " of micro-batch " << mb
             << ", which reads the running statistic '" << n
             << "', before its forward";
    Value &current = chain[n];
    if (!current) {
      // The stored weight, as the forward function reads it.
      auto call = chained.lookup(n).getDefiningOp<func::CallOp>();
      graph::WeightOp stored;
      module.lookupSymbol<func::FuncOp>(call.getCallee())
          .walk([&](graph::WeightOp w) {
            if (!stored && w.getSymName() == n)
              stored = w;
          });
      current = ib.clone(*stored)->getResult(0);
    }
    return read[n] = current;
  };

  // Full recomputation: the first backward call of (micro-batch, stage)
  // runs the stage's forward again from its inputs, so what the backward
  // reads of the forward is that second call's (the first call's values
  // die after their sends: only the stage's inputs are stashed).
  llvm::DenseSet<std::pair<int64_t, int64_t>> recomputed;
  std::function<LogicalResult(Operation *, int64_t, int64_t, TrainPhase)>
      callGroup;
  callGroup = [&](Operation *at, int64_t mb, int64_t v,
                  TrainPhase phase) -> LogicalResult {
    func::CallOp call = g.calls[v][static_cast<unsigned>(phase)];
    if (!call)
      return success(); // nothing of that phase on this stage
    if (recompute && phase != TrainPhase::Forward &&
        recomputed.insert({mb, v}).second &&
        failed(callGroup(at, mb, v, TrainPhase::Forward)))
      return failure();
    SmallVector<Value> operands;
    for (Value operand : call.getOperands()) {
      Value mapped = valueOf(mb, operand);
      if (!mapped)
        return at->emitOpError("runs stage ")
               << v << "'s " << trainPhaseName(phase) << " of micro-batch "
               << mb << " before a value it reads is on this list (computed "
               << "here or received); run dist-verify-schedule";
      operands.push_back(mapped);
    }
    FlatSymbolRefAttr callee = call.getCalleeAttr();
    SmallVector<Type> resultTypes(call.getResultTypes());
    if (func::FuncOp variant = headLayout.lookup(call)) {
      callee = FlatSymbolRefAttr::get(variant.getSymNameAttr());
      resultTypes.assign(variant.getResultTypes().begin(),
                         variant.getResultTypes().end());
    }
    // The first forward of (mb, v) advances the running statistics; a
    // recomputed one reads and returns what the first did.
    bool firstForward =
        phase == TrainPhase::Forward && forwarded.insert({mb, v}).second;
    if (zero3 || versioned || !chained.empty()) {
      FailureOr<Versioned> vc = versionedCallee(call, v);
      if (failed(vc))
        return failure();
      // The asynchronous schedules' weight versions: the forward picks the
      // version of every weight the stage trains; its backward calls read
      // the same ones.
      llvm::StringMap<Value> *chosen = nullptr;
      bool trains = llvm::any_of(vc->weights, [&](const std::string &n) {
        return !chained.count(n) && !scaleStates.count(n);
      });
      if (versioned && !pipeMare && !zero3 && trains) {
        auto [it, first] = stash.try_emplace({mb, v});
        if (first) {
          if (phase != TrainPhase::Forward)
            return at->emitOpError("runs stage ")
                   << v << "'s " << trainPhaseName(phase) << " of micro-batch "
                   << mb << " before its forward chose the weight version";
          // With per-stage replicas the list's first forward of a round
          // chooses the version the round's micro-batches compute with.
          llvm::StringMap<Value> &version = roundVersions[{mb / round, v}];
          for (auto &[n, stage] : trainedOn) {
            if (stage != v || version.count(n))
              continue;
            FailureOr<Value> w = computeVersion(at, n);
            if (failed(w))
              return failure();
            version[n] = *w;
          }
          it->second = version;
        }
        chosen = &it->second;
      }
      for (const std::string &n : vc->weights) {
        FailureOr<Value> w;
        if (chained.count(n))
          w = statInput(at, mb, v, phase, n);
        else if (scaleStates.count(n))
          w = newestOf(at, n); // the scale of this micro-batch's update
        else if (zero3)
          w = gatheredWeight(at, n, phase);
        else if (pipeMare)
          w = phase == TrainPhase::Forward ? newestOf(at, n)
                                           : backwardVersion(at, mb, v, n);
        else
          w = chosen->lookup(n);
        if (failed(w))
          return failure();
        operands.push_back(*w);
      }
      if (!vc->weights.empty()) {
        if (pipeMare && phase == TrainPhase::Forward) {
          forwardUpdates[{mb, v}] = updates;
          if (correct && mixedPrecision) {
            FailureOr<Value> n = stepCounter(at);
            if (failed(n))
              return failure();
            forwardSteps[{mb, v}] = *n;
          }
        }
        callee = FlatSymbolRefAttr::get(vc->callee.getSymNameAttr());
      }
    }
    auto copy =
        func::CallOp::create(ib, call.getLoc(), callee, resultTypes, operands);
    dist::DistDialect::MicrobatchAttrHelper(ctx).setAttr(
        copy, ib.getI64IntegerAttr(mb));
    for (auto [res, val] : llvm::zip(call.getResults(), copy.getResults()))
      values.set(mb, res, val);
    if (firstForward)
      for (auto &[n, result] : chained)
        if (result.getDefiningOp() == call)
          chain[n] = values.get(mb, result);
    return success();
  };
  // The gradient \p grad of the update after micro-batch mb: mb's own, or
  // with per-stage replicas this list's share of the mean over mb's round
  // (its micro-batches of the round summed, scaled by 1 / round; the
  // stage's all_reduce sums the replicas' shares), which one process
  // computes on the round's rows together. Null before a backward it
  // needs ran.
  auto roundShare = [&](int64_t mb, Value grad) -> Value {
    if (round == 1)
      return valueOf(mb, grad);
    Value sum;
    for (int64_t k : ownMicrobatches) {
      if (k / round != mb / round)
        continue;
      Value part = valueOf(k, grad);
      if (!part)
        return Value();
      sum = sum ? graph::BinaryOp::create(ib, loc, part.getType(),
                                          graph::BinaryKind::Add, sum, part)
                      .getResult()
                : part;
    }
    return sum ? meanOfSum(sum, round) : Value();
  };
  // PipeDream's update after micro-batch mb's backward on stage v (with
  // per-stage replicas after the list's last backward of mb's round): the
  // stage's optimizer ops (and the step counter every list keeps) on the
  // newest versions and mb's own gradient (the round's mean), averaged
  // over the stage's replicas by the schedule's all_reduce of mb.
  DenseMap<std::pair<int64_t, Value>, Value> mbAveraged;
  auto allReduceMicrobatch = [&](Operation *at, int64_t mb,
                                 int64_t v) -> LogicalResult {
    if (!reduced)
      return at->emitOpError("averages gradients over data-parallel replicas "
                             "but the stage has one");
    return gradsOfStage(v, [&](Value grad) -> LogicalResult {
      Value &avg = mbAveraged[{mb, grad}];
      if (avg)
        return success();
      Value part = roundShare(mb, grad);
      if (!part)
        return at->emitOpError("averages micro-batch ")
               << mb << "'s gradients before its backward ran";
      avg = averageOverReplicas(part);
      return success();
    });
  };
  // ZeRO under PipeDream and PipeMare: micro-batch mb's gradients of
  // stage v, each replica's shard of their mean over the replicas; the
  // update of mb then runs on that shard of the weights and optimizer state
  // and gathers the new weights (zero::shardUpdate).
  llvm::DenseSet<std::pair<int64_t, Value>> mbSharded;
  auto reduceScatterMicrobatch = [&](Operation *at, int64_t mb,
                                     int64_t v) -> LogicalResult {
    if (!reduced)
      return at->emitOpError("shards gradients over data-parallel replicas "
                             "but the stage has one");
    for (Operation &op : func.getBody().front().without_terminator()) {
      if (isa<func::CallOp>(op) || g.stageOf.lookup(&op) != v)
        continue;
      for (OpOperand &use : op.getOpOperands()) {
        Value grad = use.get();
        if (!g.perMicroBatch.count(grad) || mbAveraged.count({mb, grad}))
          continue;
        if (failed(checkShardable(at, v, op, use)))
          return failure();
        Value part = roundShare(mb, grad);
        if (!part)
          return at->emitOpError("shards micro-batch ")
                 << mb << "'s gradients before its backward ran";
        // ZeRO-2: the chain joins the backward's phase, and
        // shardInsideCalls moves it into the backward call.
        SmallVector<Operation *> &chain = scatterChains.emplace_back();
        mbAveraged[{mb, grad}] = zero::reduceScatterMean(
            ib, loc, part, zeroGroup, plan.zero >= 2 ? "backward" : "optimizer",
            plan.zero >= 2 ? &chain : nullptr);
        if (chain.empty())
          scatterChains.pop_back();
        mbSharded.insert({mb, grad});
      }
    }
    return success();
  };
  llvm::DenseSet<int64_t> updatedMicrobatches;
  auto updateMicrobatch = [&](Operation *at, int64_t mb,
                              int64_t v) -> LogicalResult {
    IRMapping map;
    Value flag; // mixed precision: this update's overflow flag, the world's
    auto resolve = [&](Value value) -> FailureOr<Value> {
      return cloneTopLevel(
          ib, at, value, map, [&](Value x) -> FailureOr<Value> {
            if (flag && isOverflowFlag(x))
              return flag;
            if (g.perMicroBatch.count(x)) {
              if (Value avg = mbAveraged.lookup({mb, x}))
                return avg;
              if (reduced)
                return at->emitOpError("updates stage ")
                       << v << " with micro-batch " << mb
                       << "'s gradients not yet averaged over its "
                       << stageReplicas
                       << " replicas; the schedule needs an all_reduce of that "
                          "micro-batch (a grad_reduce_scatter under ZeRO) "
                          "before its optimizer_step";
              Value part = roundShare(mb, x);
              if (!part)
                return at->emitOpError("updates stage ")
                       << v << " with micro-batch " << mb
                       << "'s gradients before its backward ran";
              return part;
            }
            // The newest version of what earlier updates changed.
            StringAttr name;
            if (auto w = x.getDefiningOp<graph::WeightOp>())
              name = w.getSymNameAttr();
            if (auto st = x.getDefiningOp<graph::StateOp>())
              name = st.getSymNameAttr();
            return name ? newest.lookup(name.getValue()) : Value();
          });
    };
    // Mixed precision: micro-batch mb's update is one process's step on
    // that micro-batch, so it skips when any of mb's gradients overflowed,
    // on whatever stage, replica or shard: the list unscales its stage's
    // gradients of mb (averaged over the replicas, or this replica's
    // shard) by the newest loss scale, the one mb's backward was seeded
    // with, and or-s the flags over the world. Every list updates after
    // each of its micro-batches in the same order, so every rank joins the
    // same all-reduces and keeps the same step counter and loss scale.
    if (mixedPrecision) {
      FailureOr<Value> world =
          worldOverflow([&](int64_t stage) { return stage == v; }, resolve, map,
                        [&](Value grad) {
                          return mbSharded.contains({mb, grad});
                        });
      if (failed(world))
        return failure();
      flag = *world;
    }
    // PipeMare: the stage's weights before the update.
    std::map<std::string, Value> before;
    if (pipeMare)
      for (auto &[n, stage] : trainedOn)
        if (stage == v) {
          FailureOr<Value> w = newestOf(at, n);
          if (failed(w))
            return failure();
          before[n] = *w;
        }
    for (Operation &op : func.getBody().front().without_terminator()) {
      if (isa<func::CallOp>(op) || g.stageOf.lookup(&op) != v ||
          !op.getNumResults())
        continue;
      // ZeRO: the update of a sharded gradient runs on this replica's shard
      // of the newest weights and of its optimizer state (the stored one,
      // or the shard the previous update left) and gathers the new weights.
      if (isa<graph::SgdUpdateOp, graph::AdamUpdateOp>(op) &&
          mbSharded.contains({mb, gradientOf(op.getOperand(1))})) {
        for (Value operand : op.getOperands()) {
          FailureOr<Value> mapped = resolve(operand);
          if (failed(mapped))
            return failure();
          map.map(operand, *mapped);
        }
        SmallVector<Value> replaced;
        if (failed(zero::shardUpdate(ib.clone(op, map), zeroGroup,
                                     /*gradIsShard=*/true, &replaced)))
          return failure();
        map.map(op.getResults(), replaced);
        continue;
      }
      if (failed(resolve(op.getResult(0))))
        return failure();
    }
    for (auto [k, val] : llvm::enumerate(ret.getOperands())) {
      auto n = func.getResultAttrOfType<StringAttr>(k, "graph.update");
      if (!n)
        continue;
      ResultPlace where = placeOf(k, val);
      if ((where.stage != v && !where.everywhere) ||
          chained.count(n.getValue()))
        continue;
      FailureOr<Value> updated = resolve(val);
      if (failed(updated))
        return failure();
      newest[n.getValue()] = *updated;
    }
    ++updates;
    updatedMicrobatches.insert(mb);
    if (before.empty() || (!reschedule && !correct))
      return success();
    // PipeMare's rescheduled learning rate scales the whole update (SGD,
    // momentum and Adam all update by lr times a step of their own): the
    // factor (tau + 1)^-p, p = max(0, 1 - (n - 1) / K) for the list's n-th
    // update (the optimizer's step counter).
    Value factor;
    if (reschedule) {
      Value n = newest.lookup("step");
      if (!n)
        return at->emitOpError("updates stage ")
               << v
               << " under pipemare_warmup without the optimizer's step "
                  "counter 'step' among the step's updates (dist-autodiff "
                  "writes it)";
      Value done = binary(graph::BinaryKind::Sub, n, scalar(n, 1.0));
      Value rest = binary(graph::BinaryKind::Sub, scalar(n, 1.0),
                          binary(graph::BinaryKind::Mul, done,
                                 scalar(n, 1.0 / plan.pipemareWarmup)));
      Value p = binary(graph::BinaryKind::Max, rest, scalar(n, 0.0));
      factor = binary(graph::BinaryKind::Pow, scalar(n, tau + 1.0),
                      binary(graph::BinaryKind::Sub, scalar(n, 0.0), p));
    }
    const double gamma = std::pow(plan.pipemareDecay, 1.0 / tau);
    for (auto &[n, old] : before) {
      Value &w = newest[n];
      Value step = binary(graph::BinaryKind::Sub, w, old);
      if (factor) {
        step = binary(graph::BinaryKind::Mul, step, factor);
        w = binary(graph::BinaryKind::Add, old, step);
      }
      if (!correct)
        continue;
      Value kept = binary(graph::BinaryKind::Mul, step, scalar(w, 1.0 - gamma));
      Value last = velocityOf(n, w.getType());
      Value moved =
          binary(graph::BinaryKind::Add,
                 binary(graph::BinaryKind::Mul, last, scalar(w, gamma)), kept);
      // A skipped update (mixed precision) leaves the velocity too.
      velocity[n] = flag ? graph::WhereOp::create(ib, loc, last.getType(), flag,
                                                  last, moved)
                               .getResult()
                         : moved;
    }
    return success();
  };

  for (auto [i, a] : llvm::enumerate(sched.devices[list])) {
    Operation *at = s.actions[list][i];
    int64_t v = sched.stageOf(list, a.chunk);
    Operation *before = entry->empty() ? nullptr : &entry->back();
    LogicalResult r = success();
    switch (a.kind) {
    case ActionKind::Forward:
      r = callGroup(at, a.mb, v, TrainPhase::Forward);
      break;
    case ActionKind::Backward:
      r = callGroup(at, a.mb, v, TrainPhase::BackwardInput);
      if (succeeded(r))
        r = callGroup(at, a.mb, v, TrainPhase::BackwardWeight);
      break;
    case ActionKind::BackwardInput:
      r = callGroup(at, a.mb, v, TrainPhase::BackwardInput);
      break;
    case ActionKind::BackwardWeight:
      r = callGroup(at, a.mb, v, TrainPhase::BackwardWeight);
      break;
    case ActionKind::SendActivation:
      r = send(at, a.mb, g.fwd[v], v * g.width, a.peer, "activations");
      break;
    case ActionKind::RecvActivation:
      if (v == 0)
        return at->emitOpError("receives activations into the first stage");
      recv(at, a.mb, g.fwd[v - 1], (v - 1) * g.width, a.peer);
      break;
    case ActionKind::SendGrad:
      if (v == 0)
        return at->emitOpError("sends gradients from the first stage");
      r = send(at, a.mb, g.grad[v], gradBase + v * g.width, a.peer,
               "gradients");
      break;
    case ActionKind::RecvGrad:
      if (v + 1 >= numStages)
        return at->emitOpError("receives gradients into the last stage");
      recv(at, a.mb, g.grad[v + 1], gradBase + (v + 1) * g.width, a.peer);
      break;
    case ActionKind::OptimizerStep:
      r = perMicrobatch ? updateMicrobatch(at, a.mb, v) : optimizerStep(at);
      break;
    case ActionKind::AllReduce:
      r = perMicrobatch ? allReduceMicrobatch(at, a.mb, v) : allReduce(at, v);
      break;
    case ActionKind::ReduceScatter:
      r = perMicrobatch ? reduceScatterMicrobatch(at, a.mb, v)
                        : reduceScatter(at, v);
      break;
    case ActionKind::AllGather:
      // The updated shards were gathered where the step (or, updating
      // after every micro-batch, that micro-batch's update) updated them.
      if (perMicrobatch ? !updatedMicrobatches.contains(a.mb) : !stepped)
        return at->emitOpError("gathers stage ")
               << v << "'s parameters before the optimizer_step updated "
               << "them; the schedule puts param_all_gather after it";
      break;
    }
    if (failed(r))
      return failure();
    labelAction(entry, before, a);
  }
  if (perMicrobatch ? updates != m / round : !stepped)
    return scheduleOp.emitOpError("list ")
           << list << " has "
           << (perMicrobatch
                   ? std::to_string(updates) + " optimizer_steps for " +
                         std::to_string(m / round) + " updates (" +
                         scheduleOp.getKind().str() + " updates after each " +
                         (round == 1 ? std::string("micro-batch")
                                     : "round of " + std::to_string(round) +
                                           " micro-batches") +
                         ")"
                   : std::string("no optimizer_step; a training "
                                 "step ends with one"));

  // Outputs travel to list 0; updates stay where they were computed.
  SmallVector<Value> results;
  llvm::StringMap<Value> updatedTo;
  for (auto [k, v] : llvm::enumerate(ret.getOperands())) {
    ResultPlace where = placeOf(k, v);
    // Every replica of the stage computes it (the loss's all_reduce needs
    // them all); its first list sends it.
    bool computes =
        where.everywhere || where.holder == list || onList(where.stage);
    if (!computes && !where.returned)
      continue;
    auto type = cast<RankedTensorType>(v.getType());
    auto upd = func.getResultAttrOfType<StringAttr>(k, "graph.update");
    bool stat = upd && chained.count(upd.getValue());
    bool perSample =
        g.perMicroBatch.count(v) && type.getNumElements() != 1 && !stat;
    Value val;
    if (computes && perSample) {
      // A per-sample output: the micro-batches' rows, merged.
      if (type.getRank() == 0)
        return ret.emitOpError("output #") << k << " has no batch dimension";
      if (dataParallel || layout.replicated())
        return ret.emitOpError("output #")
               << k << " (" << type << ") has a row per sample; with "
               << (dataParallel ? "dp = " + std::to_string(layout.dp)
                                : std::string("per-stage replicas"))
               << " each replica holds its own rows and the job returns one "
                  "replica's: return a scalar (the loss) from a pipelined "
                  "data-parallel step";
      SmallVector<Value> parts;
      for (int64_t mb = 0; mb < m; ++mb) {
        Value part = valueOf(mb, v);
        if (!part)
          return ret.emitOpError("output #")
                 << k << " is never computed for micro-batch " << mb;
        parts.push_back(part);
      }
      val = dist::MicrobatchMergeOp::create(ib, loc, batchedType(type, m),
                                            parts, ib.getI64IntegerAttr(0));
    } else if (computes) {
      if (stat) {
        val = chain.lookup(upd.getValue());
        if (!val)
          return ret.emitOpError("returns the running statistic '")
                 << upd.getValue() << "' of stage " << where.stage
                 << ", whose forward list " << list << " never ran";
      } else if (perMicrobatch && upd && newest.count(upd.getValue())) {
        val = newest.lookup(upd.getValue());
      } else {
        FailureOr<Value> mapped = stepValue(ret, v);
        if (failed(mapped))
          return failure();
        val = *mapped;
      }
      if (upd)
        updatedTo[upd.getValue()] = val;
      // The loss of the global batch: the replicas' means, averaged.
      if (reduced && !stat && g.perMicroBatch.count(v) &&
          !averaged.contains(v)) {
        val = averageOverReplicas(val);
        means[v] = val;
        averaged.insert(v);
      }
    }
    if (list == where.holder)
      for (unsigned to : where.receivers)
        dist::SendOp::create(ib, loc, val, ib.getI64IntegerAttr(to),
                             ib.getI64IntegerAttr(outBase + k),
                             ib.getUnitAttr());
    if (where.receivers.contains(list))
      val = dist::RecvOp::create(
          ib, loc, perSample ? Type(batchedType(type, m)) : Type(type),
          ib.getI64IntegerAttr(where.holder),
          ib.getI64IntegerAttr(outBase + k), ib.getUnitAttr());
    if (where.returned)
      results.push_back(val);
  }
  // 2BW: the second buffer of each weight the list's stages computed with,
  // W(t+1) - W(t).
  SmallVector<std::string> stateUpdates;
  for (auto &[n, delta] : lastUpdate) {
    Value updated = updatedTo.lookup(n);
    if (!updated)
      return ret.emitOpError("returns no update of weight '")
             << n << "', which list " << list << " computes with";
    results.push_back(graph::BinaryOp::create(ib, loc, updated.getType(),
                                              graph::BinaryKind::Sub, updated,
                                              newest.lookup(n)));
    stateUpdates.push_back(n + ".last_update");
  }
  // PipeMare: the moving average of each weight's updates.
  for (auto &[n, vel] : velocity) {
    results.push_back(vel);
    stateUpdates.push_back(n + ".velocity");
  }
  func::ReturnOp::create(ib, loc, results);
  // Per-sample outputs come back with the whole batch.
  SmallVector<Type> types;
  for (Value r : results)
    types.push_back(r.getType());
  accumulateEarly(accumulations);
  accumulateIntoCalls(accumulations);
  if (failed(shardInsideCalls(scatterChains)))
    return failure();
  SmallVector<DictionaryAttr> resultAttrs;
  fn.getAllResultAttrs(resultAttrs);
  for (const std::string &n : stateUpdates)
    resultAttrs.push_back(ib.getDictionaryAttr(
        ib.getNamedAttr("graph.update", ib.getStringAttr(n))));
  fn.setFunctionType(FunctionType::get(ctx, inputs, types));
  fn.setAllResultAttrs(resultAttrs);
  return success();
}
