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

/// GEMMs reading one activation (Q, K and V projections of one norm
/// output; gate and up projections of a gated FFN) run as one wider GEMM
/// does (cost::llmBlock's qkv and ffn_up): the activation is kept once for
/// their backward and, when the GEMMs are column-parallel (it is whole on
/// every tensor-parallel rank: kept replicated, as buildGpt's and
/// buildLlm's column-parallel inputs), its gradient is all-reduced once.
static void shareGemmInputs(std::vector<Item> &items,
                            const ValueClasses &values, double samples) {
  DenseSet<Value> kept;
  for (Item &item : items) {
    if (!item.desc || !isa<g::MatmulOp>(item.op) || item.desc->params <= 0)
      continue;
    Value x = values.mainOperandOf(item.op);
    if (!x)
      continue;
    OpDesc &d = *item.desc;
    double bytes =
        tensorElements(x.getType()) / samples * cluster::dtypeBytes(d.dtype);
    double fromSplit = std::min(d.savedBytes, bytes);
    d.savedBytes -= fromSplit;
    bool column = d.tpAllReduceBwdBytes > 0;
    if (kept.insert(x).second) {
      // The first reader keeps it: whole on every rank when column-parallel.
      (column ? d.savedReplicatedBytes : d.savedBytes) += fromSplit;
      continue;
    }
    d.savedReplicatedBytes =
        std::max(0.0, d.savedReplicatedBytes - (bytes - fromSplit));
    d.tpAllReduceBwdBytes = std::max(0.0, d.tpAllReduceBwdBytes - bytes);
  }
}

/// Gated activations (SwiGLU's silu(a) * b, GeGLU): a unary op whose only
/// user multiplies it with another activation runs inside that product's
/// kernel, which reads a instead of silu(a) and keeps a and b for the
/// backward (recomputing silu(a) there), as cost::llmBlock's one
/// activation op.
static void fuseGatedActivations(std::vector<Item> &items,
                                 const ValueClasses &values, double samples,
                                 function_ref<Item *(Value)> itemOf) {
  for (Item &item : items) {
    auto act = dyn_cast<g::UnaryOp>(item.op);
    if (!item.desc || !act || !act->getResult(0).hasOneUse())
      continue;
    auto mul = dyn_cast<g::BinaryOp>(*act->getResult(0).getUsers().begin());
    if (!mul || mul.getKind() != g::BinaryKind::Mul ||
        mul->getOperand(0).getType() != mul->getOperand(1).getType())
      continue;
    Value other = mul->getOperand(0) == act->getResult(0) ? mul->getOperand(1)
                                                          : mul->getOperand(0);
    Item *product = itemOf(mul->getResult(0));
    if (other == act->getResult(0) || !values.sampleDependent.contains(other) ||
        values.side.contains(other) || !product)
      continue;
    fuse(*item.desc);
    OpDesc &p = *product->desc;
    double kept = 2 * tensorElements(mul->getResult(0).getType()) / samples *
                  cluster::dtypeBytes(p.dtype);
    if (p.tp == TpMode::Replicated)
      p.savedReplicatedBytes = kept;
    else
      p.savedBytes = kept;
  }
}

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
  shareGemmInputs(items, values, samples);
  fuseGatedActivations(items, values, samples, itemOf);
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
  // Splits are views (torch.split, chunk): their readers read the parts
  // in place.
  for (Item &item : items)
    if (item.desc && (isa<g::SplitOp>(item.op) ||
                      (isa<g::TransposeOp>(item.op) &&
                       llvm::all_of(item.op->getResults(), [&](Value r) {
                         return feedsGemms(r, feedsGemms);
                       }))))
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

/// Layout ops: a fused attention kernel reads through them (strided heads,
/// broadcast K/V heads of grouped-query attention, split heads: latent
/// attention's parts without and with rotary embedding, its K and V).
static bool isLayout(Operation *op) {
  return isa<g::ReshapeOp, g::FlattenOp, g::TransposeOp, g::ExpandOp,
             g::SplitOp>(op);
}

/// How many times the layout ops before \p v repeat its elements (an
/// Expand of grouped K/V heads to every query head: heads / kv heads).
static double repeatsBefore(Value v) {
  double r = 1;
  while (Operation *def = v.getDefiningOp()) {
    if (!isLayout(def))
      break;
    if (isa<g::ExpandOp>(def))
      r *= tensorElements(def->getResult(0).getType()) /
           std::max(1.0, tensorElements(def->getOperand(0).getType()));
    v = def->getOperand(0);
  }
  return r;
}

/// With fused attention: the elementwise and layout ops between the
/// projections and the core's Q, K and V operands (\p core: Q K^T and the
/// product with V), used by nothing else, run as trainers run them. Layout
/// ops (head transposes, the repeat of grouped K/V heads) are read through
/// and never materialized; the elementwise ops (rotary embedding: slices,
/// neg, concat, products with the cos/sin tables, add) run as one kernel
/// that reads the projections' outputs once and writes what the attention
/// reads (before any repeat), keeping nothing (the attention keeps its Q
/// and K; the tables are constants). Each op keeps its FLOPs.
static void fuseOperandChains(ArrayRef<Operation *> core, double samples,
                              const ValueClasses &values,
                              function_ref<Item *(Value)> itemOf) {
  DenseSet<Operation *> inside(core.begin(), core.end());
  SmallVector<Operation *> chain;
  auto candidate = [&](Operation *op) {
    if (!op || inside.contains(op) ||
        !isa<g::UnaryOp, g::BinaryOp, g::SliceOp, g::SplitOp, g::ConcatOp,
             g::ReshapeOp, g::FlattenOp, g::TransposeOp, g::ExpandOp>(op) ||
        !llvm::all_of(op->getResults(), [&](Value r) {
          return values.sampleDependent.contains(r) && !values.side.contains(r);
        }))
      return false;
    if (Item *it = itemOf(op->getResult(0)); it && it->desc->params > 0)
      return false; // reads a weight: a bias add, a GEMM's epilogue
    return llvm::all_of(op->getUsers(),
                        [&](Operation *u) { return inside.contains(u); });
  };
  for (bool grew = true; grew;) {
    grew = false;
    SmallVector<Operation *> frontier(inside.begin(), inside.end());
    for (Operation *op : frontier)
      for (Value v : op->getOperands())
        if (Operation *def = v.getDefiningOp(); candidate(def)) {
          inside.insert(def);
          chain.push_back(def);
          grew = true;
        }
  }
  // The kernel: on the last elementwise op in program order.
  Item *kernel = nullptr;
  for (Operation *op : chain)
    if (!isLayout(op))
      if (Item *it = itemOf(op->getResult(0));
          it && (!kernel || kernel->op->isBeforeInBlock(op)))
        kernel = it;
  for (Operation *op : chain)
    if (Item *it = itemOf(op->getResult(0)); it && it != kernel)
      fuse(*it->desc);
  if (!kernel)
    return;
  double e = cluster::dtypeBytes(kernel->desc->dtype);
  double read = 0, written = 0;
  DenseSet<Value> counted;
  auto throughLayout = [&](Value v) {
    while (v.getDefiningOp() && isLayout(v.getDefiningOp()) &&
           inside.contains(v.getDefiningOp()))
      v = v.getDefiningOp()->getOperand(0);
    return v;
  };
  // What the elementwise ops read from outside (through layout ops).
  for (Operation *op : chain)
    if (!isLayout(op))
      for (Value v : op->getOperands()) {
        v = throughLayout(v);
        if (values.sampleDependent.contains(v) && !values.side.contains(v) &&
            !inside.contains(v.getDefiningOp()) && counted.insert(v).second)
          read += tensorElements(v.getType()) / samples * e;
      }
  for (Operation *op : core)
    for (Value v : op->getOperands()) {
      v = throughLayout(v);
      if (inside.contains(v.getDefiningOp()) &&
          !llvm::is_contained(core, v.getDefiningOp()) &&
          counted.insert(v).second)
        written += tensorElements(v.getType()) / samples * e;
    }
  // Forward: read the projections, write the result; backward: read the
  // result's gradient and (at most) the inputs, write the inputs' gradient.
  // An elementwise kernel over the attention's operands, split by heads as
  // the attention is (latent attention's shared rotary key is made for each
  // rank's heads where it is read).
  OpDesc &k = *kernel->desc;
  k.cls = OpClass::Elementwise;
  const OpDesc &attention = *itemOf(core.back()->getResult(0))->desc;
  k.tp = attention.tp;
  k.tpDivisor = attention.tpDivisor;
  k.tpAllReduceFwdBytes = 0;
  k.fwd.bytesRead = read;
  k.fwd.bytesWritten = written;
  k.bwdInput.bytesRead = written + read;
  k.bwdInput.bytesWritten = read;
  k.savedBytes = k.savedReplicatedBytes = 0;
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
  // Grouped K/V heads repeated to every query head before Q K^T: the
  // kernel reads each once (the repeat is never materialized).
  double kvRepeats = repeatsBefore(qk->op->getOperand(1));
  a.kvHeads = a.heads / kvRepeats;
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
  fused.savedBytes +=
      (tensorElements(q) + tensorElements(k) / kvRepeats) / samples * e;
  // The scores, softmax and dropout are the fused op's (it counts their
  // FLOPs); the folded scale and mask keep their few.
  for (Item *part : {qk, &softmax, dropout})
    if (part) {
      fuse(*part->desc);
      part->desc->fwd.flops = part->desc->bwdInput.flops = 0;
      part->desc->selective = false;
    }
  *out->desc = fused;
  fuseOperandChains({qk->op, pv.getOperation()}, samples, values, itemOf);
  return true;
}
