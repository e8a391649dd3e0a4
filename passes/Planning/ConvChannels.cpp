//===- ConvChannels.cpp - Channel-parallel convolutions ---------*- C++ -*-===//
//
// Part of DistOpt.
//
//===----------------------------------------------------------------------===//
#include "passes/Planning/ConvChannels.h"

#include "dialects/Graph/GraphOps.h"
#include "passes/Distribute/SplitValues.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <numeric>

using namespace mlir;
using namespace distopt;
using namespace distopt::planning;
namespace g = distopt::graph;
using split::tensorOf;

int64_t ConvChannels::divisor() const {
  int64_t d = 0;
  for (auto [op, n] : counts)
    d = std::gcd(d, n);
  return d;
}

std::optional<std::pair<Operation *, int64_t>>
ConvChannels::indivisible(int64_t tp) const {
  for (auto [op, n] : counts)
    if (n % tp != 0)
      return std::pair{op, n};
  return std::nullopt;
}

namespace {

/// The graph.weight `v` is when only `user` reads it: a weight shared with
/// another op stays whole.
g::WeightOp ownWeight(Value v, Operation *user) {
  auto w = v ? v.getDefiningOp<g::WeightOp>() : g::WeightOp();
  if (!w || !v.hasOneUse() || *v.getUsers().begin() != user)
    return {};
  return w;
}

class Analysis {
public:
  explicit Analysis(ConvChannels &out) : out(out) {}
  void visit(Operation *op);

private:
  std::optional<int64_t> splitOf(Value v) const {
    auto it = out.split.find(v);
    if (it == out.split.end())
      return std::nullopt;
    return it->second;
  }
  bool anySplit(Operation *op) const {
    return llvm::any_of(op->getOperands(),
                        [&](Value v) { return out.split.contains(v); });
  }
  void setSplit(Operation *op, Value v, int64_t dim) {
    out.split[v] = dim;
    out.counts.push_back({op, tensorOf(v).getDimSize(dim)});
  }
  void role(Operation *op, ChannelRole r) { out.roles[op] = r; }
  /// Every weight in `ws` (with its dimension to slice), or none: false
  /// when one is not a weight only `op` reads.
  bool sliceAll(Operation *op, ArrayRef<std::pair<Value, int64_t>> ws) {
    for (auto [v, dim] : ws)
      if (!ownWeight(v, op))
        return false;
    for (auto [v, dim] : ws)
      out.weights[v.getDefiningOp()] = dim;
    return true;
  }
  void visitConv(g::ConvOp conv);
  bool visitElementwise(Operation *op);
  bool visitSplitInput(Operation *op);

  ConvChannels &out;
};

void Analysis::visitConv(g::ConvOp conv) {
  std::optional<int64_t> in = splitOf(conv.getInput());
  bool own = ownWeight(conv.getWeight(), conv) &&
             (!conv.getBias() || ownWeight(conv.getBias(), conv));
  if (in && (*in != 1 || !own))
    return role(conv, ChannelRole::Gather);
  if (!own)
    return role(conv, ChannelRole::Whole);
  SmallVector<std::pair<Value, int64_t>> outputChannels{{conv.getWeight(), 0}};
  if (conv.getBias())
    outputChannels.push_back({conv.getBias(), 0});
  if (conv.getGroup() != 1) {
    // A grouped (depthwise) convolution of a split input: each rank's
    // channels are whole groups when tp divides the group count; their
    // outputs are the rank's output channels. No communication.
    if (!in)
      return role(conv, ChannelRole::Whole);
    sliceAll(conv, outputChannels);
    out.counts.push_back({conv, conv.getGroup()});
    setSplit(conv, conv.getResult(), 1);
    return role(conv, ChannelRole::Split);
  }
  if (in) {
    sliceAll(conv, {{conv.getWeight(), 1}});
    return role(conv, ChannelRole::Row);
  }
  sliceAll(conv, outputChannels);
  setSplit(conv, conv.getResult(), 1);
  role(conv, ChannelRole::Column);
}

/// A binary or where op: the split operands agree, and every other operand
/// broadcasts over the split dimension or is a weight of its size that only
/// this op reads (a per-channel scale or shift: sliced alike).
bool Analysis::visitElementwise(Operation *op) {
  auto result = tensorOf(op->getResult(0));
  std::optional<int64_t> common;
  for (Value v : op->getOperands())
    if (std::optional<int64_t> s = splitOf(v)) {
      int64_t dim = *s + result.getRank() - tensorOf(v).getRank();
      if (common && *common != dim)
        return false;
      common = dim;
    }
  SmallVector<std::pair<Value, int64_t>> sliced;
  for (Value v : op->getOperands()) {
    if (out.split.contains(v))
      continue;
    auto t = tensorOf(v);
    int64_t aligned = *common - (result.getRank() - t.getRank());
    if (aligned < 0 || t.getDimSize(aligned) == 1)
      continue;
    if (!ownWeight(v, op))
      return false;
    sliced.push_back({v, aligned});
  }
  sliceAll(op, sliced);
  setSplit(op, op->getResult(0), *common);
  return true;
}

/// An op with a split operand: true when it carries the split (its role and
/// its results' splits recorded), false when the split operands must be
/// gathered whole for it.
bool Analysis::visitSplitInput(Operation *op) {
  if (isa<g::BinaryOp, g::WhereOp>(op))
    return visitElementwise(op);
  // The ops below carry the split of their first operand; another split
  // operand is gathered.
  Value in = op->getOperand(0);
  std::optional<int64_t> s = splitOf(in);
  if (!s || llvm::any_of(op->getOperands().drop_front(),
                         [&](Value v) { return out.split.contains(v); }))
    return false;
  if (isa<g::UnaryOp, g::CastOp, g::ClipOp, g::DropoutOp>(op)) {
    setSplit(op, op->getResult(0), *s);
    return true;
  }
  if (auto pool = dyn_cast<g::PoolOp>(op)) {
    if (*s != 1)
      return false;
    setSplit(op, pool.getResult(), 1);
    return true;
  }
  if (auto bn = dyn_cast<g::BatchNormOp>(op)) {
    // Per-channel statistics: a split of the channels is exact, also with
    // the batch's own statistics in training.
    if (*s != 1 || !sliceAll(op, {{bn.getScale(), 0},
                                  {bn.getBias(), 0},
                                  {bn.getMean(), 0},
                                  {bn.getVariance(), 0}}))
      return false;
    setSplit(op, bn.getResult(), 1);
    for (Value stat : bn.getRunningStats())
      setSplit(op, stat, 0);
    return true;
  }
  if (isa<g::ReshapeOp, g::FlattenOp>(op)) {
    std::optional<split::Split> next =
        split::reshaped(in, op->getResult(0), {*s, 1}, 1);
    if (!next)
      return false;
    setSplit(op, op->getResult(0), next->dim);
    return true;
  }
  if (auto t = dyn_cast<g::TransposeOp>(op)) {
    ArrayRef<int64_t> perm = t.getPerm();
    setSplit(op, t.getResult(), llvm::find(perm, *s) - perm.begin());
    return true;
  }
  if (auto m = dyn_cast<g::MatmulOp>(op)) {
    // A matmul contracting the split features (a classifier after the
    // pooled channels): row-parallel.
    auto lhs = tensorOf(m.getLhs()), rhs = tensorOf(m.getRhs());
    if (m.getTransposeLhs() || *s != lhs.getRank() - 1 || !rhs ||
        rhs.getRank() != 2 ||
        !sliceAll(op, {{m.getRhs(), m.getTransposeRhs() ? 1 : 0}}))
      return false;
    role(op, ChannelRole::Row);
    return true;
  }
  return false;
}

void Analysis::visit(Operation *op) {
  if (auto conv = dyn_cast<g::ConvOp>(op))
    return visitConv(conv);
  if (!anySplit(op))
    return;
  if (isa<func::ReturnOp>(op) || !visitSplitInput(op))
    return role(op, ChannelRole::Gather);
  if (!out.roles.contains(op))
    role(op, ChannelRole::Split);
}

} // namespace

ConvChannels planning::analyzeConvChannels(func::FuncOp func) {
  ConvChannels out;
  if (func.getBody().empty())
    return out;
  Analysis analysis(out);
  for (Operation &op : func.getBody().front())
    analysis.visit(&op);
  return out;
}
