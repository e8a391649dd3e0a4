//===- ChannelParallel.cpp - Channel-parallel convolutions ------*- C++ -*-===//
//
// Part of DistOpt. docs/distributed.md "Channel-parallel convolutions".
//
//===----------------------------------------------------------------------===//
#include "passes/Distribute/ChannelParallel.h"
#include "passes/Distribute/SplitValues.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace distopt;
using namespace distopt::split;
using planning::ChannelRole;
namespace g = distopt::graph;

FailureOr<unsigned>
split::splitConvChannels(func::FuncOp func, const schedule::RankLayout &layout,
                         const planning::ConvChannels &channels,
                         llvm::DenseSet<Operation *> &taken) {
  int64_t tp = layout.tp;
  if (auto bad = channels.indivisible(tp))
    return bad->first->emitError("dist-tensor-parallel: splits ")
           << bad->second << " channels (or groups) over tp = " << tp
           << " ranks, which does not divide them; channel-parallel "
              "convolutions give each rank an equal share: plan a tp that "
              "divides "
           << channels.divisor();
  MLIRContext *ctx = func.getContext();
  OpBuilder b(ctx);
  dist::DistDialect::TpShardAttrHelper shardAttr(ctx);
  dist::DistDialect::TpAttrHelper tpAttr(ctx);
  dist::DistDialect::VirtualStageAttrHelper stageAttr(ctx);
  auto groups = [&](Operation *op) {
    return layout.tensorGroups(stageOf(op, layout));
  };
  auto shard = [&](int64_t dim) {
    return b.getDenseI64ArrayAttr({dim, 1, tp});
  };
  for (auto [w, dim] : channels.weights) {
    Value v = w->getResult(0);
    v.setType(localType(tensorOf(v), {dim, 1}, tp));
    shardAttr.setAttr(w, shard(dim));
  }
  for (auto [v, dim] : channels.split) {
    v.setType(localType(tensorOf(v), {dim, 1}, tp));
    // A dropout of split channels draws the rank's part of one process's
    // mask.
    if (auto d = v.getDefiningOp<g::DropoutOp>();
        d && d.getRatio().convertToDouble() != 0)
      shardAttr.setAttr(d, shard(dim));
  }
  // One copy of each whole input of column convolutions (per stage), one
  // gather of each split value that something reads whole (per stage).
  llvm::DenseMap<std::pair<Value, Attribute>, Value> copies, gathered;
  unsigned count = 0;
  auto role = [&](Operation *op, dist::TensorParallelRole r) {
    tpAttr.setAttr(op, dist::TensorParallelRoleAttr::get(ctx, r));
    taken.insert(op);
  };
  for (auto [op, r] : channels.roles) {
    switch (r) {
    case ChannelRole::Column: {
      auto conv = cast<g::ConvOp>(op);
      Value in = conv.getInput();
      Value &copy = copies[{in, stageAttr.getAttr(op)}];
      if (!copy) {
        b.setInsertionPoint(op);
        auto c = createCollective<dist::TpCopyOp>(b, op, groups(op),
                                                  in.getType(), in);
        placeLike(c, op);
        copy = c.getResult();
      }
      conv.getInputMutable().assign(copy);
      role(op, dist::TensorParallelRole::Column);
      ++count;
      break;
    }
    case ChannelRole::Row: {
      // Each rank's product is a partial sum over its input channels; the
      // bias joins after the sum, once.
      Value bias;
      if (auto conv = dyn_cast<g::ConvOp>(op)) {
        bias = conv.getBias();
        conv.getBiasMutable().clear();
      } else {
        auto m = cast<g::MatmulOp>(op);
        bias = m.getBias();
        m.getBiasMutable().clear();
      }
      Value out = op->getResult(0);
      auto type = cast<RankedTensorType>(out.getType());
      b.setInsertionPointAfter(op);
      auto sum = createCollective<dist::AllReduceOp>(
          b, op, groups(op), type, out,
          dist::ReductionKindAttr::get(ctx, dist::ReductionKind::sum));
      placeLike(sum, op);
      Value result = sum.getResult();
      if (bias) {
        if (isa<g::ConvOp>(op)) {
          // [C] -> [C, 1, .., 1]: broadcast over the spatial dimensions.
          SmallVector<int64_t> shape(type.getRank() - 1, 1);
          shape.front() = type.getDimSize(1);
          auto view = g::ReshapeOp::create(b, op->getLoc(),
                                           tensorOf(bias).clone(shape), bias);
          placeLike(view, op);
          bias = view.getResult();
        }
        auto add = g::BinaryOp::create(b, op->getLoc(), type,
                                       g::BinaryKind::Add, result, bias);
        placeLike(add, op);
        result = add.getResult();
      }
      out.replaceAllUsesExcept(result, sum);
      role(op, dist::TensorParallelRole::Row);
      ++count;
      break;
    }
    case ChannelRole::Split:
      if (auto conv = dyn_cast<g::ConvOp>(op)) {
        conv.setGroup(conv.getGroup() / tp);
        ++count;
      }
      role(op, dist::TensorParallelRole::Split);
      break;
    case ChannelRole::Gather:
      for (OpOperand &use : op->getOpOperands()) {
        auto it = channels.split.find(use.get());
        if (it == channels.split.end())
          continue;
        Value &whole = gathered[{use.get(), stageAttr.getAttr(op)}];
        if (!whole) {
          b.setInsertionPoint(op);
          whole = gatherWhole(b, op, use.get(), tensorOf(use.get()), it->second,
                              groups(op));
        }
        use.set(whole);
      }
      [[fallthrough]];
    case ChannelRole::Whole:
      if (!isa<func::ReturnOp>(op))
        role(op, dist::TensorParallelRole::Replicated);
      break;
    }
  }
  return count;
}
