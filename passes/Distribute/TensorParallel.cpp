//===- TensorParallel.cpp - The dist-tensor-parallel pass -------*- C++ -*-===//
//
// Part of DistOpt. Rewrites the planned forward function into what one
// tensor-parallel rank runs (Megatron-LM): each column-parallel matmul keeps
// its rank's columns, the values computed from them stay split through
// the ops that work on split activations (bias, activation functions,
// views, attention heads) until a row-parallel matmul, whose partial sums
// are all-reduced. Attention with separate Q, K and V projections (Llama:
// RoPE, grouped-query heads) is one region grown from the three
// (Region::pullColumns); the columns that read one input share one copy.
// DeepSeek's latent attention splits so too: q_b_proj and kv_b_proj by
// heads, the one rotary key expanded by each rank to its own heads
// (Region::splitBroadcast), the low-rank a-projections and norms whole.
// Weights get their local types and `dist.tp_shard`, the
// part of the file each rank reads. Runs before dist-autodiff, which
// differentiates the rewritten function: `dist.tp_copy` (the identity,
// gradient all-reduced) and `dist.all_reduce sum` (gradient the identity)
// make the backward Megatron's. A dropout of split activations gets
// `dist.tp_shard` too: its mask is drawn as the rank's part of the whole
// mask, and a dropout of whole activations draws the whole mask on every
// rank, so the masks are one process's. A split result of the function
// (a column-parallel LM head's logits) is gathered whole, and a softmax
// cross-entropy of them runs vocabulary-parallel (VocabParallel.h); a lookup of
// data is vocabulary-parallel (splitVocabulary), also in a table tied to the
// LM head, which splits by the same rows for both uses (tiedHead); with sp = 1
// the token-wise ops between regions run on the rank's tokens
// (SequenceParallel). After dist-context-parallel (tp inside cp) the regions
// grow through its ring attentions (Region::visitRing: each tensor rank's ring
// passes its own heads' key/value blocks), or through its all-gathers of keys
// and values where it kept that form (each tensor rank gathers its own heads).
// Convolutions split by channels before the regions
// (ChannelParallel.h). docs/distributed.md "Tensor parallelism".
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/Planning/Planning.h"
#include "passes/Planning/VocabularyTables.h"

#include "dialects/Dist/DistDialect.h"
#include "dialects/Dist/DistOps.h"
#include "dialects/Graph/GraphOps.h"
#include "lib/Schedule/RankLayout.h"
#include "passes/Distribute/ChannelParallel.h"
#include "passes/Distribute/SplitValues.h"
#include "passes/Distribute/TokenSplit.h"
#include "passes/Distribute/VocabParallel.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

namespace distopt {
#define GEN_PASS_DEF_TENSORPARALLELPASS
#include "passes/Distribute/Passes.h.inc"
} // namespace distopt

using namespace mlir;
using namespace distopt;
namespace g = distopt::graph;
using planning::splitsVocabulary;
using planning::tiedHead;
using split::contiguousAlong;
using split::dimOf;
using split::localType;
using split::placeLike;
using split::reshaped;
using split::Split;
using split::tensorOf;

namespace {

/// The graph.weight that `v` is, if only `user` reads it (a weight shared
/// with other ops stays whole, but for a table tied to an LM head: tiedHead).
g::WeightOp ownWeight(Value v, Operation *user) {
  auto w = v.getDefiningOp<g::WeightOp>();
  if (!w || !v.hasOneUse() || *v.getUsers().begin() != user ||
      w->hasAttr(dist::DistDialect::TpShardAttrHelper::getNameStr()))
    return {};
  return w;
}

/// The tied table (tiedHead) that `m` reads as its right operand, if `m`
/// is its head and `tied` holds it; else null.
g::WeightOp tiedTableOf(g::MatmulOp m,
                        const llvm::DenseSet<Operation *> &tied) {
  Value rhs = m.getRhs();
  if (auto t = rhs.getDefiningOp<g::TransposeOp>())
    rhs = t.getInput();
  auto w = rhs.getDefiningOp<g::WeightOp>();
  return w && tied.contains(w) ? w : g::WeightOp();
}

/// One Megatron region, grown from a column-parallel matmul: the values
/// split in it, the ops that compute them, the weights to shard and the
/// row-parallel matmuls that close it. `fail` says why a region cannot be
/// split (it then stays replicated).
class Region {
public:
  Region(func::FuncOp func, int64_t tp, const llvm::DenseSet<Operation *> &tied)
      : func(func), tp(tp), tied(tied) {}

  /// Grows the region from `origin`; false (with `why`) when some value
  /// computed from its columns cannot stay split.
  bool grow(g::MatmulOp origin);

  func::FuncOp func;
  int64_t tp;
  /// Tables tied to an LM head (tiedHead): their head may be a column.
  const llvm::DenseSet<Operation *> &tied;
  llvm::MapVector<Value, Split> split;
  llvm::SetVector<Operation *> ops;
  SmallVector<g::MatmulOp> columns, rows;
  /// Split values that are results of the function: gathered whole.
  llvm::SetVector<Value> results;
  /// Split logits of a softmax cross-entropy (classes split): gathered
  /// whole in front of it, then made vocabulary-parallel
  /// (split::vocabParallelCrossEntropy) where the loss allows.
  llvm::SetVector<Operation *> losses;
  /// Weights and their shard: dimension and blocks.
  llvm::MapVector<Operation *, Split> weights;
  std::string why;
  /// Set by visit when it pulled other projections of the region's input
  /// in (pullColumns): the op is visited again once they are split.
  bool deferred = false;
  /// The projections pullColumns added (keys, values).
  SmallVector<g::MatmulOp> pulled;
  /// Broadcasts over the heads that each rank makes for its own heads
  /// (splitBroadcast): their inputs get a dist.tp_copy.
  SmallVector<g::ExpandOp> broadcasts;
  /// Ring attentions whose whole mask differs from head to head, and its
  /// head dimension: each rank slices its heads' part (visitRing).
  SmallVector<std::pair<dist::RingAttentionOp, int64_t>> headMasks;

private:
  bool failAt(Operation *op, const Twine &reason) {
    llvm::raw_string_ostream os(why);
    os << "'" << op->getName() << "' at " << op->getLoc() << ": " << reason;
    return false;
  }
  bool fits(Value v, Split s) {
    auto t = tensorOf(v);
    return t && t.hasStaticShape() && s.dim < t.getRank() &&
           t.getDimSize(s.dim) % (s.blocks * tp) == 0;
  }
  bool setSplit(Operation *op, Value v, Split s) {
    if (!fits(v, s))
      return failAt(op, "dimension " + Twine(s.dim) + " of " +
                            Twine(tensorOf(v) ? tensorOf(v).getDimSize(s.dim)
                                              : 0) +
                            " does not split into " + Twine(s.blocks) +
                            " block(s) of " + Twine(tp) + " ranks");
    split[v] = s;
    return true;
  }
  bool shardWeight(g::WeightOp w, Split s) {
    if (!fits(w.getResult(), s))
      return failAt(w, "weight '" + w.getSymName() + "' does not split " +
                           Twine(tp) + " ways along dimension " +
                           Twine(s.dim));
    weights[w] = s;
    return true;
  }
  bool addColumn(g::MatmulOp m);
  bool pullColumns(Value v);
  /// A whole operand `v` of `op` that meets split ones: pulls in the
  /// projections that compute it (pullColumns; `op` is visited again once
  /// they are split), else fails with `reason`.
  bool pullWhole(Operation *op, Value v, const Twine &reason) {
    if (pullColumns(v)) {
      deferred = true;
      return true;
    }
    return why.empty() ? failAt(op, reason) : false;
  }
  bool splitBroadcast(Value v, Operation *user, Split s);
  bool visit(Operation *op);
  bool visitMatmul(g::MatmulOp m);
  bool visitRing(dist::RingAttentionOp ring);
  bool visitElementwise(Operation *op, ValueRange operands);
};

/// True for a matmul whose right operand is a weight only it reads (or a
/// table in `tied` that it reads as its head) and whose left operand is not
/// split: a column-parallel candidate.
bool isColumnCandidate(g::MatmulOp m,
                       const llvm::MapVector<Value, Split> &split,
                       const llvm::DenseSet<Operation *> &tied) {
  auto rhs = tensorOf(m.getRhs());
  return rhs && rhs.getRank() == 2 &&
         (ownWeight(m.getRhs(), m) || tiedTableOf(m, tied)) &&
         !split.contains(m.getLhs()) && !m.getTransposeLhs() &&
         (!m.getBias() || ownWeight(m.getBias(), m));
}

bool Region::addColumn(g::MatmulOp m) {
  if (ops.contains(m))
    return true;
  Split out{tensorOf(m.getResult()).getRank() - 1, split::fusedBlocks(m)};
  // The weight's columns: its last dimension, or its first when the
  // matmul reads it transposed.
  Split w{m.getTransposeRhs() ? 0 : 1, out.blocks};
  if (g::WeightOp table = tiedTableOf(m, tied)) {
    // An LM head tied to the embedding: the table's rows are its columns,
    // and the rank's V/tp rows serve its lookup too (splitVocabulary).
    if (out.blocks != 1)
      return failAt(m, "an LM head tied to an embedding whose logits are "
                       "cut into blocks");
    if (!shardWeight(table, {0, 1}))
      return false;
    if (auto t = m.getRhs().getDefiningOp<g::TransposeOp>();
        t && !setSplit(t, t.getResult(), {1, 1}))
      return false;
  } else if (!shardWeight(m.getRhs().getDefiningOp<g::WeightOp>(), w)) {
    return false;
  }
  if (Value bias = m.getBias()) {
    auto b = bias.getDefiningOp<g::WeightOp>();
    if (tensorOf(bias).getRank() != 1 || !shardWeight(b, {0, out.blocks}))
      return failAt(m, "its bias is not a vector of its columns");
  }
  ops.insert(m);
  columns.push_back(m);
  return setSplit(m, m.getResult(), out);
}

/// A binary, where, unary or cast op: every operand either has the
/// region's split, broadcasts over the split dimension, or is a weight of
/// the split dimension's size (a bias: sharded alike), or is the output of
/// another column-parallel matmul (SwiGLU's gate and up projections).
bool Region::visitElementwise(Operation *op, ValueRange operands) {
  auto result = tensorOf(op->getResult(0));
  std::optional<Split> common;
  for (Value v : operands)
    if (auto it = split.find(v); it != split.end()) {
      // Operands of lower rank broadcast from the right.
      Split s = it->second;
      s.dim += result.getRank() - tensorOf(v).getRank();
      if (common && !(*common == s))
        return failAt(op, "its operands are split differently");
      common = s;
    }
  for (Value v : operands) {
    if (split.contains(v))
      continue;
    auto t = tensorOf(v);
    int64_t aligned = common->dim - (result.getRank() - t.getRank());
    if (aligned < 0 || t.getDimSize(aligned) == 1)
      continue; // broadcast over the split dimension
    if (auto w = ownWeight(v, op)) {
      if (!shardWeight(w, {aligned, common->blocks}))
        return false;
      continue;
    }
    if (auto m = v.getDefiningOp<g::MatmulOp>();
        m && isColumnCandidate(m, split, tied) && t == result &&
        aligned == t.getRank() - 1 && split::fusedBlocks(m) == common->blocks) {
      if (!addColumn(m))
        return false;
      continue;
    }
    return failAt(op, "a whole tensor meets a split one (a residual or a "
                      "replicated operand); Megatron regions end at a "
                      "row-parallel matmul before it");
  }
  return setSplit(op, op->getResult(0), *common);
}

/// The heads a projection's output is viewed as: the count of the reshape
/// (after elementwise ops) that cuts its last dimension into [heads, head
/// size], or 0.
int64_t headsOf(g::MatmulOp m) {
  Value v = m.getResult();
  for (int hops = 0; hops < 8 && v.hasOneUse(); ++hops) {
    Operation *user = *v.getUsers().begin();
    if (auto r = dyn_cast<g::ReshapeOp>(user)) {
      auto in = tensorOf(v), out = tensorOf(r.getResult());
      int64_t k = in.getRank();
      return out.getRank() == k + 1 &&
                     out.getDimSize(k - 1) * out.getDimSize(k) ==
                         in.getDimSize(k - 1)
                 ? out.getDimSize(k - 1)
                 : 0;
    }
    if (!isa<g::BinaryOp, g::UnaryOp, g::CastOp>(user))
      return 0;
    v = user->getResult(0);
  }
  return 0;
}

/// Attention with separate query, key and value projections (Llama): the
/// whole operand `v` of an attention matmul is computed (through RoPE's
/// rotation, GQA's head expansion, views) from other column-parallel
/// candidates whose output is viewed as heads and that read the same input
/// as a column of the region, or another whole input (DeepSeek's latent
/// attention: `kv_b_proj` reads the normed compressed keys/values,
/// `q_b_proj` the normed compressed queries). Adds them as columns, so the
/// next sweep splits their heads too and the attention meets both operands
/// split: one region from the projections. False when `v` comes from no
/// new such projection.
bool Region::pullColumns(Value v) {
  llvm::SmallPtrSet<Value, 4> inputs;
  for (g::MatmulOp c : columns)
    inputs.insert(c.getLhs());
  SmallVector<g::MatmulOp> found;
  SmallVector<Value> work{v};
  llvm::DenseSet<Value> seen;
  while (!work.empty()) {
    Value x = work.pop_back_val();
    if (!seen.insert(x).second || split.contains(x))
      continue;
    Operation *def = x.getDefiningOp();
    if (auto m = dyn_cast_or_null<g::MatmulOp>(def)) {
      // A projection not viewed as heads (latent attention's
      // kv_a_proj_with_mqa, cut into the compressed keys/values and the
      // one rotary key) is not split by heads: it stays replicated.
      if (!ops.contains(m) && isColumnCandidate(m, split, tied) &&
          split::fusedBlocks(m) == 1 && headsOf(m) > 0)
        found.push_back(m);
      continue;
    }
    if (!isa_and_nonnull<g::ReshapeOp, g::FlattenOp, g::TransposeOp,
                         g::ExpandOp, g::SliceOp, g::ConcatOp, g::SplitOp,
                         g::UnaryOp, g::CastOp, g::BinaryOp, dist::AllGatherOp,
                         dist::TpCopyOp>(def))
      continue;
    for (Value o : def->getOperands())
      work.push_back(o);
  }
  for (g::MatmulOp m : found) {
    // Each rank needs whole key/value heads (GQA: kv_heads % tp == 0).
    if (int64_t heads = headsOf(m); heads % tp != 0)
      return failAt(m, (inputs.contains(m.getLhs())
                            ? "grouped-query attention: the "
                            : "the ") +
                           Twine(heads) +
                           " key/value heads of this projection do not "
                           "split over tp = " +
                           Twine(tp) +
                           " ranks (each rank needs whole key/value heads: "
                           "kv_heads % tp == 0); the attention stays "
                           "replicated");
    if (!addColumn(m))
      return false;
  }
  pulled.append(found.begin(), found.end());
  return !found.empty();
}

bool Region::visitMatmul(g::MatmulOp m) {
  auto lhs = tensorOf(m.getLhs()), rhs = tensorOf(m.getRhs());
  auto ls = split.find(m.getLhs()), rs = split.find(m.getRhs());
  if (ls != split.end() && rs == split.end() && ownWeight(m.getRhs(), m) &&
      rhs.getRank() == 2) {
    // Row-parallel: the split is the contracted dimension; each rank's
    // product is a partial sum of the output.
    int64_t k = m.getTransposeLhs() ? lhs.getRank() - 2 : lhs.getRank() - 1;
    if (ls->second.dim != k || ls->second.blocks != 1)
      return failAt(m, "a weighted matmul reads an activation split along a "
                       "dimension it does not contract");
    if (m.getBias() && !isa<RankedTensorType>(m.getBias().getType()))
      return failAt(m, "its bias is not a tensor");
    if (!shardWeight(m.getRhs().getDefiningOp<g::WeightOp>(),
                     {m.getTransposeRhs() ? 1 : 0, 1}))
      return false;
    ops.insert(m);
    rows.push_back(m);
    return true;
  }
  // Attention: both operands split along the same batch (head) dimension,
  // or one broadcast over it.
  int64_t rank = tensorOf(m.getResult()).getRank();
  std::optional<Split> common;
  for (auto [v, it] : {std::pair{m.getLhs(), ls}, std::pair{m.getRhs(), rs}})
    if (it != split.end()) {
      Split s = it->second;
      s.dim += rank - tensorOf(v).getRank();
      if (s.dim >= rank - 2 || (common && !(*common == s)))
        return failAt(m, "a matmul of activations split along a dimension "
                         "other than a shared batch (head) dimension");
      common = s;
    }
  for (auto [v, it] : {std::pair{m.getLhs(), ls}, std::pair{m.getRhs(), rs}})
    if (it == split.end()) {
      int64_t aligned = common->dim - (rank - tensorOf(v).getRank());
      if (aligned >= 0 && tensorOf(v).getDimSize(aligned) != 1)
        return pullWhole(m, v,
                         "a whole operand meets a split one in a "
                         "matmul");
    }
  if (m.getBias())
    return failAt(m, "a biased matmul of split activations");
  return setSplit(m, m.getResult(), *common);
}

/// Ring attention (dist-context-parallel ran first): the heads are
/// independent, so the ring on the rank's heads is the same op on fewer
/// heads, run over the same context group (each tensor rank passes its own
/// heads' key/value blocks around it). The query, key and value are split
/// alike along a leading (head) dimension; a projection not split yet is
/// pulled in (pullColumns) as visitMatmul does. The mask is split alike,
/// or broadcasts over the heads (a causal mask's leading 1s), or is whole
/// and differs from head to head (ALiBi's biases): each rank then slices
/// its heads' part (rewrite; the mask gets no gradient through the ring).
/// The result and the log-sum-exp keep the split.
bool Region::visitRing(dist::RingAttentionOp ring) {
  int64_t rank = tensorOf(ring.getResult()).getRank();
  Value qkv[] = {ring.getQuery(), ring.getKey(), ring.getValue()};
  std::optional<Split> common;
  for (Value v : qkv)
    if (auto it = split.find(v); it != split.end()) {
      if (it->second.dim >= rank - 2 || (common && !(*common == it->second)))
        return failAt(ring, "a ring attention of a query, key or value "
                            "split along a dimension other than a shared "
                            "leading (head) dimension");
      common = it->second;
    }
  for (Value v : qkv)
    if (!split.contains(v))
      return pullWhole(ring, v,
                       "a ring attention of a whole query, key or "
                       "value beside split ones");
  if (Value mask = ring.getMask()) {
    auto it = split.find(mask);
    if (it != split.end() && !(it->second == *common))
      return failAt(ring, "a ring attention whose mask is split otherwise "
                          "than its heads");
    if (it == split.end() && tensorOf(mask).getDimSize(common->dim) != 1) {
      if (common->blocks != 1)
        return failAt(ring, "a ring attention whose mask differs from head "
                            "to head, of heads split in blocks");
      headMasks.push_back({ring, common->dim});
    }
  }
  return setSplit(ring, ring.getResult(), *common) &&
         setSplit(ring, ring.getLse(), *common);
}

/// Latent attention's rotary key: one key `[B, 1, S, R]` for every head,
/// `graph.expand`ed to `[B, a, S, R]` and read only by `user`, which meets
/// it with heads split `s`. Each rank expands it to its own heads instead
/// (the expand joins the region); its input is read through a
/// `dist.tp_copy` (rewrite), so the key's gradient, each rank's sum over its
/// heads, is summed over the group. False when `v` is no such broadcast.
bool Region::splitBroadcast(Value v, Operation *user, Split s) {
  auto e = v.getDefiningOp<g::ExpandOp>();
  if (!e || !v.hasOneUse() || *v.getUsers().begin() != user)
    return false;
  auto from = tensorOf(e.getInput()), to = tensorOf(v);
  int64_t aligned = s.dim - (to.getRank() - from.getRank());
  if (s.blocks != 1 || (aligned >= 0 && from.getDimSize(aligned) != 1) ||
      !fits(v, s))
    return false;
  split[v] = s;
  ops.insert(e);
  broadcasts.push_back(e);
  return true;
}

bool Region::visit(Operation *op) {
  auto splitOf = [&](Value v) { return split.find(v)->second; };
  Value in = op->getNumOperands() ? op->getOperand(0) : Value();
  if (auto m = dyn_cast<g::MatmulOp>(op))
    return visitMatmul(m);
  if (auto ring = dyn_cast<dist::RingAttentionOp>(op))
    return visitRing(ring);
  if (isa<g::BinaryOp, g::WhereOp>(op))
    return visitElementwise(op, op->getOperands());
  if (isa<g::UnaryOp, g::CastOp, g::ClipOp, g::DropoutOp>(op)) {
    if (op->getNumOperands() != 1 && !isa<g::ClipOp>(op))
      return failAt(op, "unexpected operands");
    return setSplit(op, op->getResult(0), splitOf(in));
  }
  if (isa<g::ReshapeOp, g::FlattenOp>(op)) {
    std::optional<Split> s = reshaped(in, op->getResult(0), splitOf(in), tp);
    if (!s)
      return failAt(op, "the reshape mixes the split dimension with others");
    return setSplit(op, op->getResult(0), *s);
  }
  if (auto t = dyn_cast<g::TransposeOp>(op)) {
    Split s = splitOf(in);
    ArrayRef<int64_t> perm = t.getPerm();
    s.dim = llvm::find(perm, s.dim) - perm.begin();
    return setSplit(op, t.getResult(), s);
  }
  if (auto sp = dyn_cast<g::SplitOp>(op)) {
    Split s = splitOf(in);
    if (dimOf(sp.getAxis(), tensorOf(in).getRank()) == s.dim) {
      int64_t k = sp.getNumResults();
      int64_t first = tensorOf(sp.getResult(0)).getDimSize(s.dim);
      for (Value r : sp.getResults())
        if (tensorOf(r).getDimSize(s.dim) != first)
          return failAt(op, "unequal pieces of the split dimension");
      if (s.blocks % k != 0)
        return failAt(op, "pieces that cross the ranks' columns");
      s.blocks /= k;
    }
    for (Value r : sp.getResults())
      if (!setSplit(op, r, s))
        return false;
    return true;
  }
  // GQA's key/value head expansion: a broadcast of dimensions other than
  // the split one (each rank's key/value heads serve its query heads).
  if (auto e = dyn_cast<g::ExpandOp>(op)) {
    Split s = splitOf(in);
    auto from = tensorOf(in), to = tensorOf(e.getResult());
    int64_t lead = to.getRank() - from.getRank();
    if (from.getDimSize(s.dim) != to.getDimSize(s.dim + lead))
      return failAt(op, "an expand of the split dimension");
    s.dim += lead;
    return setSplit(op, e.getResult(), s);
  }
  // RoPE's rotate-half: a concatenation of operands split alike, along
  // another dimension; or latent attention's keys, the heads' own parts
  // beside the one rotary key broadcast to every head (splitBroadcast).
  if (auto c = dyn_cast<g::ConcatOp>(op)) {
    auto first = llvm::find_if(c.getInputs(),
                               [&](Value v) { return split.contains(v); });
    Split s = split.find(*first)->second;
    if (dimOf(c.getAxis(), tensorOf(in).getRank()) == s.dim)
      return failAt(op, "a concatenation along the split dimension");
    for (Value v : c.getInputs()) {
      auto it = split.find(v);
      if (it == split.end() ? !splitBroadcast(v, op, s) : !(it->second == s))
        return failAt(op, "a concatenation of a split tensor with a whole or "
                          "differently split one");
    }
    return setSplit(op, c.getResult(), s);
  }
  if (auto sm = dyn_cast<g::SoftmaxOp>(op)) {
    Split s = splitOf(in);
    if (dimOf(sm.getAxis(), tensorOf(in).getRank()) == s.dim)
      return failAt(op, "a softmax along the split dimension");
    return setSplit(op, sm.getResult(), s);
  }
  if (auto sl = dyn_cast<g::SliceOp>(op)) {
    Split s = splitOf(in);
    if (llvm::any_of(sl.getAxes(), [&](int64_t a) {
          return dimOf(a, tensorOf(in).getRank()) == s.dim;
        }))
      return failAt(op, "a slice of the split dimension");
    return setSplit(op, sl.getResult(), s);
  }
  // Tensor parallelism inside cp (dist-context-parallel ran first): the
  // keys and values of the rank's heads are all-gathered over its context
  // group along the sequence (or a new leading dimension) and read through
  // a copy (its gradient summed over that group), as Megatron runs cp
  // inside tp. The heads stay split: each tensor rank gathers its own.
  if (auto gather = dyn_cast<dist::AllGatherOp>(op)) {
    Split s = splitOf(in);
    if (static_cast<int64_t>(gather.getAxis()) == s.dim)
      return failAt(op, "an all-gather along the split dimension");
    return setSplit(op, gather.getResult(), s);
  }
  if (isa<dist::TpCopyOp>(op))
    return setSplit(op, op->getResult(0), splitOf(in));
  return failAt(op, "the op does not work on split activations");
}

bool Region::grow(g::MatmulOp origin) {
  if (!addColumn(origin))
    return false;
  // Sweep the body in order until nothing changes: ops see their operands'
  // splits before their own (a new column found on the way may split
  // values that earlier ops of the sweep already passed).
  for (bool changed = true; changed;) {
    changed = false;
    for (Operation &op : func.getBody().front()) {
      if (ops.contains(&op) || isa<g::WeightOp, g::ConstantOp>(op))
        continue;
      if (llvm::none_of(op.getOperands(),
                        [&](Value v) { return split.contains(v); }))
        continue;
      if (isa<func::ReturnOp>(op)) {
        // A split result is gathered whole (a column-parallel LM head).
        for (Value v : op.getOperands())
          if (auto it = split.find(v); it != split.end()) {
            if (it->second.blocks != 1)
              return failAt(&op, "a result split in blocks");
            changed |= results.insert(v);
          }
        continue;
      }
      if (auto loss = dyn_cast<g::SoftmaxCrossEntropyOp>(op)) {
        auto it = split.find(loss.getLogits());
        if (split.contains(loss.getLabels()) || it == split.end() ||
            it->second.dim != 1 || it->second.blocks != 1)
          return failAt(&op, "a softmax cross-entropy of logits split other "
                             "than by their classes");
        changed |= losses.insert(&op);
        continue;
      }
      if (!visit(&op))
        return false;
      if (deferred) { // visited again once the pulled columns are split
        deferred = false;
        changed = true;
        continue;
      }
      ops.insert(&op);
      changed = true;
    }
  }
  return true;
}

/// The tensor-parallel groups of the pipeline stage that runs `op` (its
/// `dist.virtual_stage`, else stage 0): one per data-parallel replica.
std::vector<std::vector<unsigned>>
groupsOf(Operation *op, const schedule::RankLayout &layout) {
  return layout.tensorGroups(split::stageOf(op, layout));
}

/// Creates the tensor-parallel collective `Op` of the stage that runs `at`
/// over replica 0's group, run by every replica's (`dist.groups`).
template <typename Op, typename... Args>
Op createCollective(OpBuilder &b, Operation *at,
                    const schedule::RankLayout &layout, Args &&...args) {
  return split::createCollective<Op>(b, at, groupsOf(at, layout),
                                     std::forward<Args>(args)...);
}

/// Gathers the split result `v` of the region (with its local type) whole
/// before the function returns it: along its split dimension when every
/// dimension before it is 1, else along a new leading one, moved next to
/// the split dimension and merged into it. The gather's gradient is the
/// rank's slice of the replicated gradient of the result.
void gatherResult(Region &r, Value v, const schedule::RankLayout &layout) {
  Operation *ret = r.func.getBody().front().getTerminator();
  OpBuilder b(ret);
  Value out = split::gatherWhole(b, v.getDefiningOp(), v, tensorOf(v),
                                 r.split.lookup(v).dim,
                                 groupsOf(v.getDefiningOp(), layout));
  for (OpOperand &use : ret->getOpOperands())
    if (use.get() == v)
      use.set(out);
}

/// Rewrites a grown region into one rank's part; appends the sums of its
/// row-parallel matmuls to `sums`.
void rewrite(Region &r, const schedule::RankLayout &layout,
             SmallVectorImpl<dist::AllReduceOp> &sums) {
  MLIRContext *ctx = r.func.getContext();
  OpBuilder b(ctx);
  auto role = [&](dist::TensorParallelRole x) {
    return dist::TensorParallelRoleAttr::get(ctx, x);
  };
  dist::DistDialect::TpAttrHelper tpAttr(ctx);
  dist::DistDialect::TpShardAttrHelper shardAttr(ctx);
  for (auto [w, s] : r.weights) {
    Value v = w->getResult(0);
    v.setType(localType(tensorOf(v), s, r.tp));
    shardAttr.setAttr(w, b.getDenseI64ArrayAttr({s.dim, s.blocks, r.tp}));
  }
  for (auto [v, s] : r.split) {
    v.setType(localType(tensorOf(v), s, r.tp));
    // A dropout of split activations draws this rank's part of the mask
    // one process would draw (its elements by their whole-tensor index).
    if (auto d = v.getDefiningOp<g::DropoutOp>();
        d && d.getRatio().convertToDouble() != 0)
      shardAttr.setAttr(d, b.getDenseI64ArrayAttr({s.dim, s.blocks, r.tp}));
  }
  for (Operation *op : r.ops)
    tpAttr.setAttr(op, role(dist::TensorParallelRole::Split));
  // One copy per input (and stage): the columns that read it (the query,
  // key and value projections, SwiGLU's gate and up) share it, so the
  // backward sums the input's gradient over the group once.
  llvm::MapVector<std::pair<Value, Attribute>, SmallVector<g::MatmulOp>>
      byInput;
  dist::DistDialect::VirtualStageAttrHelper stageAttr(ctx);
  for (g::MatmulOp m : r.columns) {
    tpAttr.setAttr(m, role(dist::TensorParallelRole::Column));
    byInput[{m.getLhs(), stageAttr.getAttr(m)}].push_back(m);
  }
  for (auto &[key, ms] : byInput) {
    g::MatmulOp first = *llvm::min_element(
        ms, [](g::MatmulOp x, g::MatmulOp y) { return x->isBeforeInBlock(y); });
    b.setInsertionPoint(first);
    auto copy = createCollective<dist::TpCopyOp>(
        b, first, layout, key.first.getType(), key.first);
    placeLike(copy, first);
    for (g::MatmulOp m : ms)
      m.getLhsMutable().assign(copy.getResult());
  }
  // A broadcast each rank makes for its own heads: the forward reads the
  // whole input, the backward sums the ranks' partial gradients of it.
  for (g::ExpandOp e : r.broadcasts) {
    b.setInsertionPoint(e);
    auto copy = createCollective<dist::TpCopyOp>(
        b, e, layout, e.getInput().getType(), e.getInput());
    placeLike(copy, e);
    e.getInputMutable().assign(copy.getResult());
  }
  for (g::MatmulOp m : r.rows) {
    tpAttr.setAttr(m, role(dist::TensorParallelRole::Row));
    // The bias joins after the sum: every rank adds it once.
    Value bias = m.getBias();
    if (bias)
      m.getBiasMutable().clear();
    b.setInsertionPointAfter(m);
    auto sum = createCollective<dist::AllReduceOp>(
        b, m, layout, m.getType(), m.getResult(),
        dist::ReductionKindAttr::get(ctx, dist::ReductionKind::sum));
    placeLike(sum, m);
    sums.push_back(sum);
    Value out = sum.getResult();
    if (bias) {
      auto add = g::BinaryOp::create(b, m.getLoc(), m.getType(),
                                     g::BinaryKind::Add, out, bias);
      placeLike(add, m);
      out = add.getResult();
    }
    m.getResult().replaceAllUsesExcept(out, sum);
  }
  // A whole mask that differs from head to head: the rank's heads' part.
  for (auto [ring, dim] : r.headMasks) {
    b.setInsertionPoint(ring);
    ring.getMaskMutable().assign(split::sliceWhole(b, ring, ring.getMask(), dim,
                                                   groupsOf(ring, layout)));
  }
  for (Value v : r.results)
    gatherResult(r, v, layout);
  // The logits of a loss: whole in front of it.
  for (Operation *loss : r.losses) {
    auto l = cast<g::SoftmaxCrossEntropyOp>(loss);
    Value v = l.getLogits();
    OpBuilder at(loss);
    l.getLogitsMutable().assign(
        split::gatherWhole(at, v.getDefiningOp(), v, tensorOf(v), 1,
                           groupsOf(v.getDefiningOp(), layout)));
  }
}

/// Megatron's vocabulary-parallel embedding: each tensor rank holds rows
/// [r V/tp, (r+1) V/tp) of the table (`dist.tp_shard` [0, 1, tp]), looks up
/// the ids in its range (the others read row 0 and are zeroed) and the
/// ranks' rows are summed (`dist.all_reduce`, appended to `sums`). The
/// rank's range comes from dist.all_slice of the constant [0, 1, .., tp-1]
/// (no data moves). An id outside the whole table stays outside every
/// rank's rows, so the lookup still fails on it. Only lookups of data
/// (not of constant positions) whose table only they read, of V rows that
/// split tp ways. Returns the rank's lookup, or null when `em` is not such
/// a lookup. A table tied to an LM head (in `tied`, tiedHead) splits so
/// when the head's region sharded it (its rows are already the rank's), and
/// stays whole otherwise.
Operation *splitVocabulary(g::EmbeddingOp em,
                           const schedule::RankLayout &layout,
                           const llvm::DenseSet<Operation *> &tied,
                           SmallVectorImpl<dist::AllReduceOp> &sums) {
  int64_t tp = layout.tp;
  auto table = tensorOf(em.getTable());
  auto ids = tensorOf(em.getIndices());
  MLIRContext *ctx = em.getContext();
  dist::DistDialect::TpShardAttrHelper shardAttr(ctx);
  auto weight = em.getTable().getDefiningOp<g::WeightOp>();
  bool isTied = weight && tied.contains(weight);
  if (isTied ? !shardAttr.isAttrPresent(weight)
             : !(weight = ownWeight(em.getTable(), em)) ||
                   !splitsVocabulary(em, tp))
    return nullptr;
  OpBuilder b(em);
  Location loc = em.getLoc();
  int64_t vocab = table.getDimSize(0) * (isTied ? tp : 1);
  int64_t rows = vocab / tp;
  Type it = ids.getElementType();
  auto i1 = ids.clone(b.getI1Type());
  SmallVector<Operation *> made;
  auto scalar = [&](int64_t v) {
    auto t = RankedTensorType::get({}, it);
    return made
        .emplace_back(g::ConstantOp::create(
            b, loc, t, DenseElementsAttr::get(t, b.getIntegerAttr(it, v))))
        ->getResult(0);
  };
  auto binary = [&](g::BinaryKind kind, Type type, Value l, Value r) {
    return made.emplace_back(g::BinaryOp::create(b, loc, type, kind, l, r))
        ->getResult(0);
  };
  // This rank's index in its group: its element of [0, 1, .., tp-1].
  auto all = RankedTensorType::get({tp}, it);
  SmallVector<APInt> indices;
  for (int64_t r = 0; r < tp; ++r)
    indices.push_back(APInt(it.getIntOrFloatBitWidth(), r));
  Value ranks =
      made.emplace_back(g::ConstantOp::create(
                            b, loc, all, DenseElementsAttr::get(all, indices)))
          ->getResult(0);
  Value rank =
      made.emplace_back(createCollective<dist::AllSliceOp>(
                            b, em, layout, RankedTensorType::get({1}, it),
                            ranks, b.getI64IntegerAttr(0)))
          ->getResult(0);
  Value id = em.getIndices(), zero = scalar(0), block = scalar(rows);
  Value mine = binary(g::BinaryKind::Equal, i1,
                      binary(g::BinaryKind::Div, ids, id, block), rank);
  // Ids of another rank's rows read row 0; ids outside the table keep
  // their (out of range) local index.
  Value valid = binary(g::BinaryKind::And, i1,
                       binary(g::BinaryKind::GreaterEqual, i1, id, zero),
                       binary(g::BinaryKind::Less, i1, id, scalar(vocab)));
  Value other = binary(g::BinaryKind::Xor, i1, valid,
                       binary(g::BinaryKind::And, i1, valid, mine));
  Value local = binary(g::BinaryKind::Sub, ids, id,
                       binary(g::BinaryKind::Mul, rank.getType(), rank, block));
  Value safe =
      made.emplace_back(g::WhereOp::create(b, loc, ids, other, zero, local))
          ->getResult(0);
  auto outType = cast<RankedTensorType>(em.getType());
  auto lookup = g::EmbeddingOp::create(b, loc, outType, em.getTable(), safe);
  lookup->setDiscardableAttrs(em->getDiscardableAttrDictionary());
  SmallVector<int64_t> maskShape(ids.getShape());
  maskShape.push_back(1);
  Value keep =
      made.emplace_back(g::CastOp::create(
                            b, loc, ids.clone(outType.getElementType()), mine))
          ->getResult(0);
  keep =
      made
          .emplace_back(g::ReshapeOp::create(
              b, loc,
              RankedTensorType::get(maskShape, outType.getElementType()), keep))
          ->getResult(0);
  Value part = binary(g::BinaryKind::Mul, outType, lookup.getResult(), keep);
  auto sum = createCollective<dist::AllReduceOp>(
      b, em, layout, outType, part,
      dist::ReductionKindAttr::get(ctx, dist::ReductionKind::sum));
  made.push_back(sum);
  sums.push_back(sum);
  for (Operation *op : made)
    placeLike(op, em);
  dist::DistDialect::TpAttrHelper(ctx).setAttr(
      lookup,
      dist::TensorParallelRoleAttr::get(ctx, dist::TensorParallelRole::Row));
  em.getResult().replaceAllUsesWith(sum.getResult());
  em.erase();
  if (!isTied) {
    weight.getResult().setType(localType(table, {0, 1}, tp));
    shardAttr.setAttr(weight, b.getDenseI64ArrayAttr({0, 1, tp}));
  }
  return lookup;
}

//===----------------------------------------------------------------------===//
// Sequence parallelism (Megatron-LM, Korthikanti et al.)
//===----------------------------------------------------------------------===//

/// The token split of a row-parallel sum: its first dimension of more than
/// one element (tokens: batch x sequence, or the sequence of one row),
/// when that is not its last (the features) and splits `tp` ways.
std::optional<Split> tokenSplit(RankedTensorType t, int64_t tp) {
  if (!t || !t.hasStaticShape())
    return std::nullopt;
  int64_t dim = 0;
  while (dim < t.getRank() && t.getDimSize(dim) == 1)
    ++dim;
  if (dim + 1 >= t.getRank() || t.getDimSize(dim) % tp != 0)
    return std::nullopt;
  return Split{dim, 1};
}

/// Megatron's sequence parallelism over the tensor-parallel regions: the
/// sum after each row-parallel matmul becomes a reduce-scatter over the
/// tokens, and the ops that work token by token after it (bias, dropout,
/// residual adds, norms, views, latent attention's down-projections and
/// their norms) run on the rank's tokens (TokenSplit),
/// until a value enters a column-parallel region (its dist.tp_copy becomes
/// an all-gather) or any other op that needs it whole. With the gradients
/// of the collectives (all-gather <-> reduce-scatter) that is the backward
/// of Megatron's sequence parallelism; the numbers are those of tensor
/// parallelism without it. Returns how many sums split.
unsigned sequenceParallel(func::FuncOp func, const schedule::RankLayout &layout,
                          ArrayRef<dist::AllReduceOp> sums) {
  int64_t tp = layout.tp;
  split::TokenSplit tokens(
      func, tp, [&](Operation *op) { return groupsOf(op, layout); },
      /*attention=*/false);
  llvm::DenseSet<Operation *> sumOps;
  for (dist::AllReduceOp sum : sums)
    if (std::optional<Split> s = tokenSplit(tensorOf(sum.getResult()), tp)) {
      tokens.seed(sum.getResult(), *s, sum);
      sumOps.insert(sum);
    }
  tokens.analyze();
  // The rank's types; the sums become reduce-scatters.
  MLIRContext *ctx = func.getContext();
  OpBuilder b(ctx);
  dist::DistDialect::TpShardAttrHelper shardAttr(ctx);
  dist::DistDialect::TpAttrHelper tpAttr(ctx);
  tokens.rewrite([&](Value v, Split s) {
    RankedTensorType local = localType(tensorOf(v), s, tp);
    Operation *def = v.getDefiningOp();
    if (auto sum = dyn_cast<dist::AllReduceOp>(def);
        sum && sumOps.contains(def)) {
      b.setInsertionPoint(sum);
      auto scatter = dist::ReduceScatterOp::create(
          b, sum.getLoc(), local, sum.getInput(), sum.getKindAttr(),
          b.getI64IntegerAttr(s.dim), sum.getGroupAttr());
      scatter->setDiscardableAttrs(sum->getDiscardableAttrDictionary());
      sum.getResult().replaceAllUsesWith(scatter.getResult());
      sum.erase();
      return;
    }
    v.setType(local);
    // A dropout draws the rank's tokens of the mask one process draws.
    if (auto d = dyn_cast<g::DropoutOp>(def);
        d && d.getRatio().convertToDouble() != 0)
      shardAttr.setAttr(d, b.getDenseI64ArrayAttr({s.dim, s.blocks, tp}));
    if (tpAttr.isAttrPresent(def))
      tpAttr.setAttr(def, dist::TensorParallelRoleAttr::get(
                              ctx, dist::TensorParallelRole::Split));
  });
  return sumOps.size();
}

struct TensorParallelPass
    : public distopt::impl::TensorParallelPassBase<TensorParallelPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto plan = dist::DistDialect::PlanAttrHelper(&getContext()).getAttr(module);
    if (!plan) {
      emitError(module.getLoc())
          << "dist-tensor-parallel needs the module's plan ('dist.plan'): "
             "run dist-set-plan or dist-search-plan first";
      return signalPassFailure();
    }
    schedule::RankLayout layout = plan.getLayout();
    if (layout.tp == 1)
      return;
    if (layout.replicated()) {
      emitError(module.getLoc())
          << "dist-tensor-parallel: the plan has tp = " << layout.tp
          << " with per-stage replicas; tensor parallelism executes with "
             "data, context and pipeline parallelism (dp x cp x tp x pp) "
             "yet, not with per-stage replicas";
      return signalPassFailure();
    }
    FailureOr<func::FuncOp> func =
        planning::plannedFunction(module, "", "dist-tensor-parallel");
    if (failed(func))
      return signalPassFailure();
    if (func->getBody().getBlocks().size() != 1) {
      func->emitError("dist-tensor-parallel: @")
          << func->getSymName() << " must be one block";
      return signalPassFailure();
    }
    // Convolutions split by channels, as the cost model decided
    // (planning::analyzeConvChannels); the matmuls they split stay out of
    // the regions below.
    llvm::DenseSet<Operation *> taken;
    // Tables tied to an LM head split by vocabulary rows for both uses
    // (Megatron): the head is a column of its region, the lookups split
    // below on the rows the region gave the rank.
    llvm::DenseSet<Operation *> tied;
    func->walk([&](g::WeightOp w) {
      if (tiedHead(w, layout.tp))
        tied.insert(w);
    });
    FailureOr<unsigned> convs = split::splitConvChannels(
        *func, layout, planning::analyzeConvChannels(*func), taken);
    if (failed(convs))
      return signalPassFailure();
    // Grow a region from each column candidate, in order; a region that
    // cannot be split stays replicated (correct, only not parallel).
    unsigned regions = *convs;
    std::string lastWhy;
    SmallVector<dist::AllReduceOp> sums;
    SmallVector<g::MatmulOp> candidates;
    func->walk([&](g::MatmulOp m) { candidates.push_back(m); });
    for (g::MatmulOp m : candidates) {
      if (taken.contains(m) || !isColumnCandidate(m, {}, tied))
        continue;
      Region r(*func, layout.tp, tied);
      if (!r.grow(m) ||
          (r.rows.empty() && r.results.empty() && r.losses.empty())) {
        lastWhy = r.why.empty() ? "its columns reach no row-parallel matmul "
                                  "and no result of the function"
                                : r.why;
        if (verbose)
          m.emitRemark("dist-tensor-parallel: stays replicated: ") << lastWhy;
        continue;
      }
      for (Operation *op : r.ops)
        taken.insert(op);
      rewrite(r, layout, sums);
      ++regions;
    }
    // Vocabulary-parallel lookups, after the regions (whose growth stops
    // at the lookups' whole outputs).
    SmallVector<g::EmbeddingOp> lookups;
    func->walk([&](g::EmbeddingOp em) { lookups.push_back(em); });
    for (g::EmbeddingOp em : lookups) {
      if (Operation *lookup = splitVocabulary(em, layout, tied, sums)) {
        taken.insert(lookup);
        ++regions;
      } else if (verbose && tied.contains(em.getTable().getDefiningOp())) {
        em.emitRemark("dist-tensor-parallel: stays replicated: its table is "
                      "tied to an LM head that stays replicated");
      }
    }
    if (regions == 0) {
      func->emitError("dist-tensor-parallel: the plan has tp = ")
          << layout.tp << " but no matmul or convolution of @"
          << func->getSymName()
          << " can be split over the tp ranks (Megatron regions: a "
             "column-parallel matmul, ops on its columns, a row-parallel "
             "matmul); the last candidate failed at "
          << lastWhy << "; plan tp = 1";
      return signalPassFailure();
    }
    // What is left runs whole on every rank: say so where the cost model's
    // roles said otherwise.
    dist::DistDialect::TpAttrHelper tpAttr(&getContext());
    for (Operation &op : func->getBody().front())
      if (!taken.contains(&op) && tpAttr.isAttrPresent(&op))
        tpAttr.setAttr(&op, dist::TensorParallelRoleAttr::get(
                                &getContext(),
                                dist::TensorParallelRole::Replicated));
    // A loss on the gathered logits runs on the rank's columns.
    split::vocabParallelCrossEntropy(*func, verbose);
    if (plan.getSp()) {
      unsigned splitSums = sequenceParallel(*func, layout, sums);
      if (splitSums < sums.size())
        emitWarning(func->getLoc())
            << "dist-tensor-parallel: sp = 1, but " << sums.size() - splitSums
            << " of " << sums.size()
            << " row-parallel sums have no token dimension that splits "
            << layout.tp
            << " ways after leading 1s (their outputs stay whole on every "
               "tensor rank, taking more memory than the plan predicts); "
               "a micro-batch of one row whose sequence splits "
            << layout.tp << " ways does";
    }
    if (failed(mlir::verify(*func)))
      return signalPassFailure();
  }
};

} // namespace
