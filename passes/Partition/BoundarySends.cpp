//===- BoundarySends.cpp - Pipeline boundary messages -----------*- C++ -*-===//
//
// Part of DistOpt.
//
//===----------------------------------------------------------------------===//
#include "passes/Partition/BoundarySends.h"

#include "dialects/Dist/DistDialect.h"
#include "dialects/Dist/DistOps.h"
#include "dialects/Graph/GraphOps.h"
#include "lib/Cost/CostModel.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace distopt;

partition::TensorRankVariance::TensorRankVariance(func::FuncOp step,
                                                  const schedule::Plan &plan)
    : symbols(step->getParentOfType<ModuleOp>()) {
  for (unsigned s = 0; s < plan.pp; ++s)
    for (const std::vector<unsigned> &g : plan.tensorGroups(s))
      tensorGroups.insert(std::vector<int64_t>(g.begin(), g.end()));
  visit(step.getBody().front());
}

bool partition::TensorRankVariance::overTensorGroup(Operation *op) const {
  std::optional<ArrayRef<int64_t>> group = dist::groupOf(op);
  return group &&
         tensorGroups.count(std::vector<int64_t>(group->begin(), group->end()));
}

void partition::TensorRankVariance::visit(Block &body) {
  auto anyVaries = [&](ValueRange values) {
    return llvm::any_of(values, [&](Value v) { return varying.contains(v); });
  };
  for (Operation &op : body) {
    bool varies;
    if (auto call = dyn_cast<func::CallOp>(op)) {
      auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
      if (!callee || callee.isExternal()) {
        varies = anyVaries(call.getOperands());
      } else {
        Block &entry = callee.getBody().front();
        for (auto [arg, operand] :
             llvm::zip(entry.getArguments(), call.getOperands()))
          if (varying.contains(operand))
            varying.insert(arg);
        visit(entry);
        auto ret = cast<func::ReturnOp>(entry.getTerminator());
        for (auto [result, returned] :
             llvm::zip(call.getResults(), ret.getOperands()))
          if (varying.contains(returned))
            varying.insert(result);
        continue;
      }
    } else if (isa<dist::AllReduceOp, dist::AllGatherOp, dist::BroadcastOp>(
                   op) &&
               overTensorGroup(&op)) {
      varies = false;
    } else if (isa<dist::ReduceScatterOp, dist::AllSliceOp, dist::AllToAllOp>(
                   op) &&
               overTensorGroup(&op)) {
      varies = true;
    } else {
      varies = op.hasAttr(dist::DistDialect::TpShardAttrHelper::getNameStr()) ||
               anyVaries(op.getOperands());
      // An op with regions varies when anything inside reads a part.
      for (Region &region : op.getRegions())
        region.walk([&](Operation *inner) {
          varies |=
              inner->hasAttr(
                  dist::DistDialect::TpShardAttrHelper::getNameStr()) ||
              isa<dist::ReduceScatterOp, dist::AllSliceOp, dist::AllToAllOp>(
                  inner);
        });
    }
    if (varies)
      for (Value r : op.getResults())
        varying.insert(r);
  }
}

/// The type of one tensor rank's part of \p type under scatter/gather (a
/// 1-d tensor of 1/tp of its elements), or null when \p type goes whole.
static RankedTensorType partType(Type type, bool whole,
                                 const schedule::Plan &plan) {
  auto t = dyn_cast<RankedTensorType>(type);
  if (!whole || !t || !t.hasStaticShape() ||
      !cost::scatterGathers(double(t.getNumElements()),
                            isa<FloatType>(t.getElementType()), plan.tp,
                            plan.scatterGather))
    return {};
  return RankedTensorType::get({t.getNumElements() / plan.tp},
                               t.getElementType());
}

/// A collective over the first tensor group of pipeline stage \p stage,
/// run alike by each (every replica's and context rank's).
template <typename Op, typename... Args>
static Value overTensorGroups(OpBuilder &b, Location loc,
                              const schedule::Plan &plan, unsigned stage,
                              Args &&...args) {
  std::vector<std::vector<unsigned>> groups = plan.tensorGroups(stage);
  auto op = Op::create(b, loc, std::forward<Args>(args)...,
                       dist::deviceGroup(b.getContext(), groups.front()));
  dist::setRunGroups(op, groups);
  return op.getResult();
}

void partition::sendBoundary(OpBuilder &b, Location loc, Value value,
                             bool whole, int64_t peer, int64_t tag,
                             const schedule::Plan &plan, unsigned stage) {
  if (RankedTensorType part = partType(value.getType(), whole, plan)) {
    auto flat = RankedTensorType::get({part.getNumElements() * plan.tp},
                                      part.getElementType());
    Value flatValue = graph::ReshapeOp::create(b, loc, flat, value);
    value = overTensorGroups<dist::AllSliceOp>(
        b, loc, plan, stage, part, flatValue, b.getI64IntegerAttr(0));
  }
  dist::SendOp::create(b, loc, value, b.getI64IntegerAttr(peer),
                       b.getI64IntegerAttr(tag), b.getUnitAttr());
}

Value partition::recvBoundary(OpBuilder &b, Location loc, Type type, bool whole,
                              int64_t peer, int64_t tag,
                              const schedule::Plan &plan, unsigned stage) {
  RankedTensorType part = partType(type, whole, plan);
  Value value = dist::RecvOp::create(b, loc, part ? Type(part) : type,
                                     b.getI64IntegerAttr(peer),
                                     b.getI64IntegerAttr(tag), b.getUnitAttr());
  if (!part)
    return value;
  auto flat = RankedTensorType::get({part.getNumElements() * plan.tp},
                                    part.getElementType());
  Value gathered = overTensorGroups<dist::AllGatherOp>(
      b, loc, plan, stage, flat, value, b.getI64IntegerAttr(0));
  return graph::ReshapeOp::create(b, loc, type, gathered);
}
