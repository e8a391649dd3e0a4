//===- FusedKernels.cpp - Ops that run inside their neighbours --*- C++ -*-===//
//
// Part of DistOpt.
//
//===----------------------------------------------------------------------===//
#include "passes/Planning/FusedKernels.h"

#include "dialects/Graph/GraphCost.h"
#include "dialects/Graph/GraphOps.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace distopt;
using namespace distopt::cost;
using namespace distopt::planning;
using graph::tensorElements;
namespace g = distopt::graph;

Value ValueClasses::mainOperandOf(Operation *op) const {
  Value main;
  for (Value v : op->getOperands())
    if (sampleDependent.contains(v) && !side.contains(v)) {
      if (main)
        return Value();
      main = v;
    }
  return main;
}

/// Runs \p op inside a neighbouring kernel: it keeps its FLOPs but moves
/// no bytes of its own, launches nothing (OpDesc::kernels = 0) and saves
/// nothing for the backward.
static void fuse(OpDesc &op) {
  for (PhaseCost *c : {&op.fwd, &op.bwdInput, &op.bwdWeight})
    c->bytesRead = c->bytesWritten = 0;
  op.savedBytes = op.savedReplicatedBytes = 0;
  op.kernels = 0;
  op.signature.clear();
}

/// True when \p v is computed from a lower- or upper-triangular matrix (a
/// causal mask), looking a few ops back.
static bool fromTriangle(Value v, unsigned depth = 6) {
  Operation *def = v.getDefiningOp();
  if (!def || depth == 0)
    return false;
  if (isa<g::TriluOp>(def))
    return true;
  return llvm::any_of(def->getOperands(),
                      [&](Value w) { return fromTriangle(w, depth - 1); });
}

/// The only user of \p v, or null.
static Operation *soleUser(Value v) {
  return v.hasOneUse() ? *v.getUsers().begin() : nullptr;
}

/// With fused attention: softmax(\p scores) V as one attention op on the
/// product's item, the parts costing nothing. False when the ops around
/// \p softmax are not an attention core.
static bool fuseAttention(Item &softmax, Value scores, double samples,
                          const ValueClasses &values,
                          function_ref<Item *(Value)> itemOf);

void planning::fuseKernels(std::vector<Item> &items,
                            const DenseMap<Value, int64_t> &defIndex,
                            const ValueClasses &values, double samples,
                            bool fusedAttention) {
  auto itemOf = [&](Value v) -> Item * {
    auto it = defIndex.find(v);
    if (it == defIndex.end() || it->second < 0)
      return nullptr;
    Item &item = items[it->second];
    return item.desc ? &item : nullptr;
  };
  // Bias adds: a GEMM epilogue (cuBLAS, Megatron's fused bias-GeLU and
  // bias-dropout-add).
  for (Item &item : items) {
    auto add = dyn_cast<g::BinaryOp>(item.op);
    if (!item.desc || !add || add.getKind() != g::BinaryKind::Add)
      continue;
    Value x = values.mainOperandOf(add);
    bool weightOperand = llvm::any_of(add->getOperands(), [&](Value v) {
      return !values.sampleDependent.contains(v) &&
             isa<RankedTensorType>(v.getType()) &&
             cast<RankedTensorType>(v.getType()).getRank() >= 1;
    });
    Item *producer = x ? itemOf(x) : nullptr;
    if (producer && weightOperand && x.hasOneUse() &&
        isa<g::MatmulOp>(producer->op))
      fuse(*item.desc);
  }
  // Layout changes that only feed GEMMs (through views): the GEMM reads the
  // operand strided (batched GEMMs over heads, split Q/K/V), no copy.
  auto feedsGemms = [](Value v, auto &self) -> bool {
    return llvm::all_of(v.getUsers(), [&](Operation *user) {
      if (isa<g::ReshapeOp, g::FlattenOp>(user))
        return self(user->getResult(0), self);
      return isa<g::MatmulOp>(user);
    });
  };
  for (Item &item : items)
    if (item.desc && isa<g::TransposeOp, g::SplitOp>(item.op) &&
        llvm::all_of(item.op->getResults(),
                     [&](Value r) { return feedsGemms(r, feedsGemms); }))
      fuse(*item.desc);
  // Scale and mask on the attention scores: Megatron's
  // FusedScaleMaskSoftmax runs them inside the softmax. Walk back from each
  // softmax over single-use elementwise ops.
  for (Item &item : items) {
    if (!item.desc || !isa<g::SoftmaxOp>(item.op))
      continue;
    Value v = item.op->getOperand(0);
    while (Item *prev = itemOf(v)) {
      if (!isa<g::BinaryOp, g::WhereOp>(prev->op) || !v.hasOneUse() ||
          !isScoreShaped(v.getType()))
        break;
      Value x = values.mainOperandOf(prev->op);
      if (!x)
        break;
      fuse(*prev->desc);
      v = x;
    }
    if (fusedAttention && fuseAttention(item, v, samples, values, itemOf))
      continue;
    // The product with V keeps the probabilities the softmax already keeps.
    // Under context parallelism it is where the ring passes K and V on
    // (OpDesc::cpKvBytes, as the analytic GPT's unfused "context" op).
    Value probs = item.op->getResult(0);
    if (auto pv = dyn_cast_or_null<g::MatmulOp>(soleUser(probs)))
      if (Item *out = itemOf(pv.getResult()); out && pv.getLhs() == probs) {
        double e = cluster::dtypeBytes(out->desc->dtype);
        out->desc->savedBytes =
            std::max(0.0, out->desc->savedBytes -
                              tensorElements(probs.getType()) / samples * e);
        Item *qk = itemOf(v);
        if (qk && isa<g::MatmulOp>(qk->op) && qk->desc->params <= 0 &&
            isScoreShaped(v.getType()))
          out->desc->cpKvBytes =
              (tensorElements(qk->op->getOperand(1).getType()) +
               tensorElements(pv.getRhs().getType())) /
              samples * e;
      }
  }
}

static bool fuseAttention(Item &softmax, Value scores, double samples,
                          const ValueClasses &values,
                          function_ref<Item *(Value)> itemOf) {
  // softmax(S) [dropout] V with S = Q K^T, each link used once.
  Item *qk = itemOf(scores);
  if (!qk || !isa<g::MatmulOp>(qk->op) || !scores.hasOneUse() ||
      !isScoreShaped(scores.getType()) || qk->desc->params > 0)
    return false;
  Value probs = softmax.op->getResult(0);
  Item *dropout = nullptr;
  Operation *user = soleUser(probs);
  if (user && isa<g::DropoutOp>(user)) {
    dropout = itemOf(user->getResult(0));
    probs = user->getResult(0);
    user = soleUser(probs);
  }
  auto pv = dyn_cast_or_null<g::MatmulOp>(user);
  if (!pv || pv.getLhs() != probs)
    return false;
  Item *out = itemOf(pv.getResult());
  if (!out || out->desc->params > 0)
    return false;
  auto s = cast<RankedTensorType>(scores.getType());
  auto q = cast<RankedTensorType>(qk->op->getOperand(0).getType());
  auto k = cast<RankedTensorType>(qk->op->getOperand(1).getType());
  auto o = cast<RankedTensorType>(pv.getResult().getType());
  AttentionShape a;
  a.seqQ = s.getDimSize(s.getRank() - 2);
  a.seqKV = s.getDimSize(s.getRank() - 1);
  a.heads = tensorElements(s) / (a.seqQ * a.seqKV) / samples;
  a.kvHeads = a.heads; // the graph repeats grouped K/V heads before QK^T
  a.headDimQK = tensorElements(q) / samples / a.heads / a.seqQ;
  a.headDimV = tensorElements(o) / samples / a.heads / a.seqQ;
  // A causal mask is built from a triangle; the folded mask ops read it.
  a.causal = false;
  for (Value v = softmax.op->getOperand(0); v && v != scores;) {
    Operation *m = v.getDefiningOp();
    Value next = m ? values.mainOperandOf(m) : Value();
    if (m)
      for (Value w : m->getOperands())
        a.causal |= w != next && fromTriangle(w);
    v = next;
  }
  OpDesc fused = attentionOp(out->desc->name, out->desc->dtype, a);
  fused.tp = out->desc->tp;
  // Q and K are kept for the backward here (the projections around the
  // core keep V's producer input and O).
  double e = cluster::dtypeBytes(out->desc->dtype);
  fused.savedBytes += (tensorElements(q) + tensorElements(k)) / samples * e;
  // The scores, softmax and dropout are the fused op's (it counts their
  // FLOPs); the folded scale and mask keep their few.
  for (Item *part : {qk, &softmax, dropout})
    if (part) {
      fuse(*part->desc);
      part->desc->fwd.flops = part->desc->bwdInput.flops = 0;
      part->desc->selective = false;
    }
  *out->desc = fused;
  return true;
}
