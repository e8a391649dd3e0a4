//===- AttentionHeads.cpp - Head counts of a graph's attention --*- C++ -*-===//
//
// Part of DistOpt. Implements attentionHeadCount (LayerAnalysis.h).
// Tensor parallelism splits attention by heads (Megatron gives each rank
// heads / tp of them), so a plan's tp must divide every head count the
// graph has: those of the head-batched matmuls (Q K^T and scores x V) and,
// for grouped-query attention, the key/value heads that are expanded to
// them. The key/value count is found where the projection's last dimension
// is split into [heads, head size], walking back from each matmul operand
// through views, expansions and elementwise ops (rotary embeddings).
//
//===----------------------------------------------------------------------===//
#include "passes/Planning/LayerAnalysis.h"

#include "dialects/Graph/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <numeric>

using namespace mlir;
namespace g = distopt::graph;

/// True when `v` is computed from a weight or a constant alone, not from
/// the function's inputs (a rotary table, a mask).
static bool isParameter(Value v) {
  Operation *def = v.getDefiningOp();
  return def && isa<g::WeightOp, g::ConstantOp>(def);
}

/// The head count of the reshape that split the last dimension of the
/// tensor `v` is computed from into [heads, head size], or 0.
static int64_t splitHeads(Value v) {
  for (int steps = 0; steps < 64; ++steps) {
    Operation *def = v.getDefiningOp();
    if (!def || isa<g::MatmulOp, g::ConvOp, g::WeightOp, g::ConstantOp>(def))
      return 0;
    if (auto reshape = dyn_cast<g::ReshapeOp>(def)) {
      auto in = cast<RankedTensorType>(reshape.getInput().getType());
      auto out = cast<RankedTensorType>(reshape.getResult().getType());
      int64_t r = in.getRank();
      if (out.getRank() == r + 1 && r >= 1 && in.hasStaticShape() &&
          out.hasStaticShape() &&
          out.getDimSize(r - 1) * out.getDimSize(r) == in.getDimSize(r - 1) &&
          out.getShape().take_front(r - 1) == in.getShape().take_front(r - 1))
        return out.getDimSize(r - 1);
    }
    // Follow the operand the result is a view or elementwise image of.
    Value next;
    for (Value operand : def->getOperands())
      if (isa<RankedTensorType>(operand.getType()) && !isParameter(operand)) {
        next = operand;
        break;
      }
    if (!next)
      return 0;
    v = next;
  }
  return 0;
}

unsigned distopt::planning::attentionHeadCount(func::FuncOp func) {
  int64_t heads = 0;
  func.walk([&](g::MatmulOp mm) {
    auto out = cast<RankedTensorType>(mm.getResult().getType());
    // Head-batched: [batch, heads, rows, cols] between activations.
    if (out.getRank() < 4 || isParameter(mm.getLhs()) ||
        isParameter(mm.getRhs()) || !out.hasStaticShape())
      return;
    int64_t h = 1;
    for (int64_t d : out.getShape().drop_front().drop_back(2))
      h *= d;
    heads = std::gcd(heads, h);
    for (Value operand : {mm.getLhs(), mm.getRhs()})
      if (int64_t kv = splitHeads(operand))
        heads = std::gcd(heads, kv);
  });
  return heads > 0 && heads <= UINT32_MAX ? unsigned(heads) : 0;
}
