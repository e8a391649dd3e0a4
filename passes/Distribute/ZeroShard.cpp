//===- ZeroShard.cpp - ZeRO: optimizer updates on one shard -----*- C++ -*-===//
//
// Part of DistOpt. Each parameter is flattened and padded with zeros to a
// multiple of the replica count; replica r owns the r-th equal block of
// that flat buffer. Padding zeros stay zero through every update (a zero
// gradient and a zero parameter give zero moments and a zero step, with or
// without weight decay), so the all-gathered buffer's tail is dropped and
// nothing else sees it. Under ZeRO-3 the block is all a replica keeps of
// the parameter itself. ZeroShard.h.
//
//===----------------------------------------------------------------------===//
#include "passes/Distribute/ZeroShard.h"

#include "dialects/Dist/DistDialect.h"
#include "dialects/Dist/DistOps.h"
#include "dialects/Graph/GraphOps.h"

using namespace mlir;
using namespace distopt;

int64_t zero::shardElements(int64_t numel, int64_t replicas) {
  return (numel + replicas - 1) / replicas;
}

namespace {
/// Builds the flat, padded and sharded forms of one tensor type at a fixed
/// insertion point, every op tagged with the optimizer phase.
struct ShardBuilder {
  OpBuilder &b;
  Location loc;
  ArrayRef<int64_t> group;
  ArrayRef<std::vector<unsigned>> alike;
  RankedTensorType full;
  int64_t numel, shard;
  StringRef phase;
  /// Where each op built is also recorded, in order (may be null).
  SmallVectorImpl<Operation *> *built = nullptr;

  ShardBuilder(OpBuilder &b, Location loc, const zero::ShardGroup &g,
               Type type, StringRef phase = "optimizer")
      : b(b), loc(loc), group(g.devices), alike(g.alike),
        full(cast<RankedTensorType>(type)), numel(full.getNumElements()),
        shard(zero::shardElements(numel, group.size())), phase(phase) {}

  RankedTensorType flat(int64_t n) const {
    return RankedTensorType::get({n}, full.getElementType());
  }
  int64_t padded() const { return shard * static_cast<int64_t>(group.size()); }
  Value tag(Operation *op) {
    op->setAttr("graph.phase", b.getStringAttr(phase));
    if (built)
      built->push_back(op);
    if (isa<dist::CollectiveOpInterface>(op) && !alike.empty())
      dist::setRunGroups(op, alike);
    return op->getResult(0);
  }
  /// \p v (of the full type) as the flat buffer of padded() elements.
  Value flatPadded(Value v) {
    if (full.getRank() != 1)
      v = tag(graph::ReshapeOp::create(b, loc, flat(numel), v));
    if (padded() != numel)
      v = tag(graph::PadOp::create(b, loc, flat(padded()), v,
                                   ArrayRef<int64_t>{0, padded() - numel},
                                   graph::PadMode::Constant,
                                   llvm::APFloat(0.0)));
    return v;
  }
  /// The all-gathered shards \p v back in the full type.
  Value gathered(Value v) {
    v = tag(dist::AllGatherOp::create(b, loc, flat(padded()), v,
                                      b.getI64IntegerAttr(0),
                                      b.getDenseI64ArrayAttr(group)));
    if (padded() != numel)
      v = tag(graph::SliceOp::create(
          b, loc, flat(numel), v, b.getDenseI64ArrayAttr({0}),
          b.getDenseI64ArrayAttr({numel}), b.getDenseI64ArrayAttr({0}),
          b.getDenseI64ArrayAttr({1})));
    if (full.getRank() != 1)
      v = tag(graph::ReshapeOp::create(b, loc, full, v));
    return v;
  }
};
} // namespace

Value zero::reduceScatterMean(OpBuilder &b, Location loc, Value grad,
                              const ShardGroup &group, StringRef phase,
                              SmallVectorImpl<Operation *> *built) {
  ShardBuilder sb(b, loc, group, grad.getType(), phase);
  sb.built = built;
  return sb.tag(dist::ReduceScatterOp::create(
      b, loc, sb.flat(sb.shard), sb.flatPadded(grad),
      dist::ReductionKindAttr::get(b.getContext(),
                                   group.shares ? dist::ReductionKind::sum
                                                : dist::ReductionKind::mean),
      b.getI64IntegerAttr(0), b.getDenseI64ArrayAttr(group.devices)));
}

/// The optimizer state operands of \p update (momentum buffer, moments).
static SmallVector<OpOperand *> stateOperands(Operation *update) {
  SmallVector<OpOperand *> out;
  if (auto adam = dyn_cast<graph::AdamUpdateOp>(update)) {
    out.push_back(&adam.getExpAvgMutable());
    out.push_back(&adam.getExpAvgSqMutable());
  } else if (auto sgd = dyn_cast<graph::SgdUpdateOp>(update)) {
    if (sgd.getMomentumBuf())
      out.push_back(&sgd.getMomentumBufMutable()[0]);
  }
  return out;
}

/// The phase class a ZeRO-3 gather serves: the backward's phases
/// (backward, backward_input, backward_weight) share one gather, every
/// other phase (forward, recompute, optimizer) has its own.
static StringRef gatherPhase(Operation *user) {
  auto phase = user->getAttrOfType<StringAttr>("graph.phase");
  if (!phase)
    return "forward";
  return phase.getValue().starts_with("backward") ? "backward"
                                                  : phase.getValue();
}

RankedTensorType zero::wholeType(Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  Operation *def = v.getDefiningOp();
  auto block = def ? def->getAttrOfType<DictionaryAttr>(
                         dist::DistDialect::ZeroShardAttrHelper::getNameStr())
                   : DictionaryAttr();
  if (!block)
    return type;
  return RankedTensorType::get(
      block.getAs<DenseI64ArrayAttr>("shape").asArrayRef(),
      type.getElementType());
}

graph::WeightOp zero::weightBlock(OpBuilder &b, graph::WeightOp weight,
                                  const ShardGroup &group) {
  auto part = cast<graph::WeightOp>(b.clone(*weight));
  markBlock(part, group);
  return part;
}

void zero::markBlock(Operation *op, const ShardGroup &group) {
  if (op->hasAttr(dist::DistDialect::ZeroShardAttrHelper::getNameStr()))
    return; // already a block
  OpBuilder b(op);
  ShardBuilder sb(b, op->getLoc(), group, op->getResult(0).getType());
  op->getResult(0).setType(sb.flat(sb.shard));
  // Which block, of what: a tensor-parallel part (`dist.tp_shard`, kept)
  // is flattened as the part; the groups that hold blocks alike (one per
  // part) say where each rank's block is.
  dist::DistDialect::ZeroShardAttrHelper(b.getContext())
      .setAttr(op, b.getDictionaryAttr(
                       {b.getNamedAttr("shape", b.getDenseI64ArrayAttr(
                                                    sb.full.getShape())),
                        b.getNamedAttr("group", b.getDenseI64ArrayAttr(
                                                    group.devices))}));
  dist::setRunGroups(op, group.alike);
}

Value zero::gatherWhole(OpBuilder &b, Location loc, Value block,
                        const ShardGroup &group, StringRef phase) {
  ShardBuilder sb(b, loc, group, wholeType(block), phase);
  return sb.gathered(block);
}

FailureOr<Value> zero::weightAsBlock(graph::WeightOp weight,
                                     const ShardGroup &group,
                                     Operation *except) {
  if (weight->hasAttr(dist::DistDialect::ZeroShardAttrHelper::getNameStr()))
    return weight.getResult();
  OpBuilder b(weight);
  graph::WeightOp part = zero::weightBlock(b, weight, group);
  // The readers other than `except`, in program order.
  Block *body = weight->getBlock();
  SmallVector<std::pair<Operation *, OpOperand *>> readers;
  for (OpOperand &use : weight.getResult().getUses())
    if (use.getOwner() != except)
      readers.push_back({body->findAncestorOpInBlock(*use.getOwner()), &use});
  llvm::stable_sort(readers, [](auto &x, auto &y) {
    return x.first->isBeforeInBlock(y.first);
  });
  Value gathered;
  StringRef gatheredFor;
  for (auto [top, use] : readers) {
    StringRef phase = gatherPhase(use->getOwner());
    if (!gathered || phase != gatheredFor) {
      b.setInsertionPoint(top);
      gathered = zero::gatherWhole(b, top->getLoc(), part.getResult(), group,
                                   phase);
      gatheredFor = phase;
    }
    use->set(gathered);
  }
  if (!except && weight.getResult().use_empty())
    weight.erase();
  return part.getResult();
}

/// ZeRO-3: the parameter \p param of \p update, read by a graph.weight,
/// becomes this device's block of it (zero::weightAsBlock).
static FailureOr<Value> shardWeight(Operation *update, OpOperand &param,
                                   const zero::ShardGroup &group) {
  auto weight = param.get().getDefiningOp<graph::WeightOp>();
  if (!weight)
    return update->emitOpError()
           << "updates a parameter ZeRO-3 cannot shard: operand #0 must be "
              "read by a graph.weight (dist-autodiff's form), so the program "
              "keeps only its block; use zero=2";
  return zero::weightAsBlock(weight, group, update);
}

LogicalResult zero::shardUpdate(Operation *update, const ShardGroup &group,
                                bool gradIsShard,
                                SmallVectorImpl<Value> *replacements,
                                bool paramIsShard) {
  OpOperand &param = update->getOpOperand(0), &grad = update->getOpOperand(1);
  OpBuilder b(update);
  Location loc = update->getLoc();
  ShardBuilder sb(b, loc, group, wholeType(param.get()));
  RankedTensorType shardType = sb.flat(sb.shard);

  // The state buffers, read again as this device's shard. A state that
  // already is the shard (what an earlier update of the same program
  // returned: the asynchronous schedules update once per micro-batch) is
  // read as it is.
  SmallVector<std::pair<OpOperand *, graph::StateOp>> states;
  for (OpOperand *operand : stateOperands(update)) {
    if (operand->get().getType() == shardType)
      continue;
    auto state = operand->get().getDefiningOp<graph::StateOp>();
    if (!state || !state->hasOneUse())
      return update->emitOpError()
             << "reads optimizer state that ZeRO cannot shard: operand #"
             << operand->getOperandNumber()
             << " must come from a graph.state that only this update reads "
                "(dist-autodiff's form) or be this device's shard of it";
    states.push_back({operand, state});
  }

  Value gradShard = gradIsShard ? grad.get()
                                : reduceScatterMean(b, loc, grad.get(), group);
  Value paramShard;
  if (paramIsShard) {
    FailureOr<Value> block = shardWeight(update, param, group);
    if (failed(block))
      return failure();
    paramShard = *block;
    b.setInsertionPoint(update);
  } else {
    paramShard = sb.tag(dist::AllSliceOp::create(
        b, loc, shardType, sb.flatPadded(param.get()), b.getI64IntegerAttr(0),
        b.getDenseI64ArrayAttr(group.devices)));
  }
  Operation *sharded = b.clone(*update);
  sharded->setOperand(0, paramShard);
  sharded->setOperand(1, gradShard);
  for (auto [operand, state] : states) {
    b.setInsertionPoint(state);
    auto part = cast<graph::StateOp>(b.clone(*state));
    part.getResult().setType(sb.full);
    // A flat ZeRO block of the state (of its tensor-parallel part, when it
    // is one). Which block, of what: a checkpoint then resumes under
    // another plan (docs/distributed.md, "Checkpoints across plans").
    markBlock(part, group);
    sharded->setOperand(operand->getOperandNumber(), part.getResult());
  }
  for (OpResult r : sharded->getResults())
    r.setType(shardType);

  b.setInsertionPointAfter(sharded);
  // ZeRO-3 keeps the updated block (a returned update of the weight's
  // block); a reader of the new parameter other than the return gets it
  // gathered.
  Value newParam = sharded->getResult(0);
  bool gather = !paramIsShard || llvm::any_of(update->getResult(0).getUsers(),
                                              [](Operation *user) {
                                                return !isa<func::ReturnOp>(
                                                    user);
                                              });
  Value whole = gather ? sb.gathered(newParam) : Value();
  SmallVector<Value> now = {paramIsShard ? newParam : whole};
  for (unsigned k = 1; k < update->getNumResults(); ++k)
    now.push_back(sharded->getResult(k));
  if (paramIsShard && whole)
    update->getResult(0).replaceUsesWithIf(whole, [](OpOperand &use) {
      return !isa<func::ReturnOp>(use.getOwner());
    });
  update->replaceAllUsesWith(now);
  if (replacements)
    replacements->assign(now.begin(), now.end());
  Operation *weight = param.get().getDefiningOp();
  update->erase();
  if (paramIsShard && weight && weight->use_empty() &&
      !weight->hasAttr(dist::DistDialect::ZeroShardAttrHelper::getNameStr()))
    weight->erase();
  for (auto &entry : states)
    entry.second->erase();
  return success();
}

void zero::setResultTypes(func::FuncOp func) {
  Operation *ret = func.getBody().front().getTerminator();
  func.setFunctionType(FunctionType::get(
      func.getContext(), func.getArgumentTypes(), ret->getOperandTypes()));
}
