//===- ZeroShard.cpp - ZeRO-1: optimizer updates on one shard ---*- C++ -*-===//
//
// Part of DistOpt. Each parameter is flattened and padded with zeros to a
// multiple of the replica count; replica r owns the r-th equal block of
// that flat buffer. Padding zeros stay zero through every update (a zero
// gradient and a zero parameter give zero moments and a zero step, with or
// without weight decay), so the all-gathered buffer's tail is dropped and
// nothing else sees it. ZeroShard.h.
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
      dist::ReductionKindAttr::get(b.getContext(), dist::ReductionKind::mean),
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

LogicalResult zero::shardUpdate(Operation *update, const ShardGroup &group,
                                bool gradIsShard,
                                SmallVectorImpl<Value> *replacements) {
  OpOperand &param = update->getOpOperand(0), &grad = update->getOpOperand(1);
  OpBuilder b(update);
  Location loc = update->getLoc();
  ShardBuilder sb(b, loc, group, param.get().getType());
  RankedTensorType shardType = sb.flat(sb.shard);

  // The state buffers, read again as this device's shard.
  SmallVector<std::pair<OpOperand *, graph::StateOp>> states;
  for (OpOperand *operand : stateOperands(update)) {
    auto state = operand->get().getDefiningOp<graph::StateOp>();
    if (!state || !state->hasOneUse())
      return update->emitOpError()
             << "reads optimizer state that ZeRO cannot shard: operand #"
             << operand->getOperandNumber()
             << " must come from a graph.state that only this update reads "
                "(dist-autodiff's form)";
    states.push_back({operand, state});
  }

  Value gradShard = gradIsShard ? grad.get()
                                : reduceScatterMean(b, loc, grad.get(), group);
  Value paramShard = sb.tag(dist::AllSliceOp::create(
      b, loc, shardType, sb.flatPadded(param.get()), b.getI64IntegerAttr(0),
      b.getDenseI64ArrayAttr(group.devices)));
  Operation *sharded = b.clone(*update);
  sharded->setOperand(0, paramShard);
  sharded->setOperand(1, gradShard);
  for (auto [operand, state] : states) {
    b.setInsertionPoint(state);
    auto part = cast<graph::StateOp>(b.clone(*state));
    part.getResult().setType(shardType);
    // A flat ZeRO block, not a tensor-parallel part of the state's shape.
    // Which block, of what: a checkpoint then resumes under another replica
    // count (docs/distributed.md, "Checkpoints across plans"). Blocks of a
    // tensor-parallel part (several groups) resume under the same layout
    // only.
    bool tensorPart = static_cast<bool>(
        part->removeAttr(dist::DistDialect::TpShardAttrHelper::getNameStr()));
    if (!tensorPart && group.alike.size() <= 1)
      dist::DistDialect::ZeroShardAttrHelper(b.getContext())
          .setAttr(part,
                   b.getDictionaryAttr(
                       {b.getNamedAttr("shape", b.getDenseI64ArrayAttr(
                                                    sb.full.getShape())),
                        b.getNamedAttr("group", b.getDenseI64ArrayAttr(
                                                    group.devices))}));
    sharded->setOperand(operand->getOperandNumber(), part.getResult());
  }
  for (OpResult r : sharded->getResults())
    r.setType(shardType);

  b.setInsertionPointAfter(sharded);
  SmallVector<Value> now = {sb.gathered(sharded->getResult(0))};
  for (unsigned k = 1; k < update->getNumResults(); ++k)
    now.push_back(sharded->getResult(k));
  update->replaceAllUsesWith(now);
  if (replacements)
    replacements->assign(now.begin(), now.end());
  update->erase();
  for (auto &entry : states)
    entry.second->erase();
  return success();
}

void zero::setResultTypes(func::FuncOp func) {
  Operation *ret = func.getBody().front().getTerminator();
  func.setFunctionType(FunctionType::get(
      func.getContext(), func.getArgumentTypes(), ret->getOperandTypes()));
}
