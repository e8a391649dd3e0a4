//===- TokenSplit.cpp - Ops that run on a rank's part of the tokens -------===//
//
// Part of DistOpt. See TokenSplit.h.
//
//===----------------------------------------------------------------------===//
#include "passes/Distribute/TokenSplit.h"
#include "passes/Planning/NormalizedMatmuls.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace distopt;
using namespace distopt::split;
namespace g = distopt::graph;

void TokenSplit::seed(Value v, Split s, Operation *op) {
  split[v] = s;
  if (op) {
    seeds.insert(op);
    ops.insert(op);
  }
}

Operation *TokenSplit::placeFor(Operation *user, Value v) {
  if (user->hasAttr(dist::DistDialect::VirtualStageAttrHelper::getNameStr()) ||
      !v.getDefiningOp())
    return user;
  return v.getDefiningOp();
}

void TokenSplit::broadcast(OpOperand &use, SmallVectorImpl<Whole> &out) {
  // Each rank's gradient is its tokens' part of the whole one (a constant
  // has none).
  Value v = use.get();
  if (isa<FloatType>(tensorOf(v).getElementType()) &&
      !v.getDefiningOp<g::ConstantOp>())
    out.push_back({use.getOwner(), use.getOperandNumber(), How::Copy});
}

std::optional<Split> TokenSplit::visitElementwise(Operation *op,
                                                  SmallVectorImpl<Whole> &out) {
  auto result = tensorOf(op->getResult(0));
  std::optional<Split> common;
  for (Value v : op->getOperands())
    if (auto it = split.find(v); it != split.end()) {
      Split s = it->second;
      s.dim += result.getRank() - tensorOf(v).getRank();
      if (common && !(*common == s))
        return std::nullopt;
      common = s;
    }
  if (!attention && !contiguousAlong(result, common->dim))
    return std::nullopt;
  for (OpOperand &use : op->getOpOperands()) {
    Value v = use.get();
    if (split.contains(v))
      continue;
    auto t = tensorOf(v);
    if (!t)
      return std::nullopt;
    int64_t aligned = common->dim - (result.getRank() - t.getRank());
    if (aligned < 0 || t.getDimSize(aligned) == 1) {
      broadcast(use, out);
      continue;
    }
    if (t.getDimSize(aligned) != result.getDimSize(common->dim))
      return std::nullopt;
    out.push_back({op, use.getOperandNumber(), How::Slice, aligned});
  }
  return common;
}

/// A matmul whose left operand holds the rank's tokens along a dimension
/// it does not contract: its rows (or a batch dimension) stay the rank's.
/// A token-split right operand (the keys of Q Kt, the values of P V) is
/// gathered whole: the rank's queries meet every key (all-gather context
/// parallelism, as Llama 3 trains); a whole one (a weight) is read
/// through a copy.
std::optional<Split> TokenSplit::visitMatmul(Operation *op,
                                             SmallVectorImpl<Whole> &out) {
  auto m = cast<g::MatmulOp>(op);
  auto ls = split.find(m.getLhs()), rs = split.find(m.getRhs());
  if (ls == split.end() || (m.getBias() && split.contains(m.getBias())))
    return std::nullopt;
  int64_t rl = tensorOf(m.getLhs()).getRank(),
          rr = tensorOf(m.getRhs()).getRank(),
          r = tensorOf(m.getResult()).getRank();
  int64_t d = ls->second.dim;
  int64_t rows = m.getTransposeLhs() ? rl - 1 : rl - 2;
  int64_t contracted = m.getTransposeLhs() ? rl - 2 : rl - 1;
  if (rl < 2 || d == contracted)
    return std::nullopt;
  Split result{d == rows ? r - 2 : d + (r - rl), 1};
  OpOperand &rhs = op->getOpOperand(1);
  if (d != rows) {
    // A batch dimension: the right operand must broadcast over it.
    int64_t aligned = result.dim - (r - rr);
    if (rs != split.end() ||
        (aligned >= 0 && tensorOf(m.getRhs()).getDimSize(aligned) != 1))
      return std::nullopt;
    broadcast(rhs, out);
  } else if (rs != split.end()) {
    out.push_back({op, 1, How::Gather, rs->second.dim});
  } else {
    broadcast(rhs, out);
  }
  if (m.getBias())
    broadcast(op->getOpOperand(2), out);
  return result;
}

/// A split or slice along another dimension than the tokens', or a concat
/// along another one of pieces of the same tokens (each split alike).
std::optional<Split>
TokenSplit::visitPieces(Operation *op,
                        function_ref<bool(int64_t)> notSplitAxis) {
  Split s = split.lookup(op->getOperand(0));
  return TypeSwitch<Operation *, std::optional<Split>>(op)
      .Case<g::SplitOp>([&](g::SplitOp p) -> std::optional<Split> {
        return notSplitAxis(p.getAxis()) ? std::optional(s) : std::nullopt;
      })
      .Case<g::SliceOp>([&](g::SliceOp p) -> std::optional<Split> {
        return llvm::all_of(p.getAxes(), notSplitAxis) ? std::optional(s)
                                                       : std::nullopt;
      })
      .Case<g::ConcatOp>([&](g::ConcatOp c) -> std::optional<Split> {
        if (!notSplitAxis(c.getAxis()) ||
            llvm::any_of(c->getOperands(), [&](Value v) {
              auto it = split.find(v);
              return it == split.end() || !(it->second == s);
            }))
          return std::nullopt;
        return s;
      })
      .Default([](Operation *) { return std::nullopt; });
}

std::optional<Split> TokenSplit::visit(Operation *op,
                                       SmallVectorImpl<Whole> &out) {
  if (op->getNumResults() == 0 || llvm::any_of(op->getResults(), [](Value r) {
        return !tensorOf(r) || !tensorOf(r).hasStaticShape();
      }))
    return std::nullopt;
  Value in = op->getOperand(0);
  auto inSplit = split.find(in);
  if (isa<g::ReshapeOp, g::FlattenOp>(op)) {
    // A balanced split cuts the tokens into 2 parts chunks: a dimension
    // they are cut into keeps them whole only if it divides so.
    std::optional<Split> s = reshaped(in, op->getResult(0), inSplit->second,
                                      balanced ? 2 * parts : parts);
    if (!s ||
        (!attention && !contiguousAlong(tensorOf(op->getResult(0)), s->dim)))
      return std::nullopt;
    return s;
  }
  if (isa<g::LayerNormOp, g::RMSNormOp>(op)) {
    // Token by token when the normalized dimensions come after the split;
    // the scale and bias broadcast over the tokens.
    if (inSplit == split.end())
      return std::nullopt;
    int64_t axis = op->getAttrOfType<IntegerAttr>("axis").getInt();
    if (axis < 0)
      axis += tensorOf(in).getRank();
    if (axis <= inSplit->second.dim)
      return std::nullopt;
    for (OpOperand &use : op->getOpOperands().drop_front()) {
      if (split.contains(use.get()))
        return std::nullopt;
      out.push_back({op, use.getOperandNumber(), How::Copy});
    }
    return inSplit->second;
  }
  // A dropout that draws a mask would draw the whole mask's first part on
  // every context rank: context parallelism reads it whole.
  if (auto d = dyn_cast<g::DropoutOp>(op);
      d && attention && d.getRatio().convertToDouble() != 0)
    return std::nullopt;
  if (isa<g::BinaryOp, g::WhereOp>(op) ||
      (isa<g::UnaryOp, g::CastOp, g::ClipOp, g::DropoutOp>(op) &&
       op->getNumOperands() == 1))
    return visitElementwise(op, out);
  auto notSplitAxis = [&](int64_t axis) {
    return inSplit != split.end() &&
           dimOf(axis, tensorOf(in).getRank()) != inSplit->second.dim;
  };
  // Pieces of the features (latent attention's compressed keys and values
  // beside the rotary key, RoPE's rotate-half) and their joins.
  if (isa<g::SplitOp, g::SliceOp, g::ConcatOp>(op)) {
    std::optional<Split> s = visitPieces(op, notSplitAxis);
    if (!s ||
        (!attention && !contiguousAlong(tensorOf(op->getResult(0)), s->dim)))
      return std::nullopt;
    return s;
  }
  // A weighted matmul tensor parallelism keeps whole because a norm over
  // its features follows (latent attention's down-projections): Megatron's
  // sequence parallelism runs it on the rank's tokens, its weight read
  // through a copy (its gradient, the rank's tokens' part, summed over the
  // group), and gathers its narrower output where the column-parallel
  // up-projection reads it.
  if (auto m = dyn_cast<g::MatmulOp>(op); m && !attention) {
    if (!m.getRhs().getDefiningOp<g::WeightOp>() ||
        !planning::normalizedOverFeatures(m.getResult()))
      return std::nullopt;
    std::optional<Split> s = visitMatmul(op, out);
    if (!s || !contiguousAlong(tensorOf(m.getResult()), s->dim))
      return std::nullopt;
    return s;
  }
  if (!attention)
    return std::nullopt;
  // Context parallelism: the attention between the token-wise ops.
  return TypeSwitch<Operation *, std::optional<Split>>(op)
      .Case<g::MatmulOp>([&](auto) { return visitMatmul(op, out); })
      .Case<g::TransposeOp>([&](g::TransposeOp t) -> std::optional<Split> {
        ArrayRef<int64_t> perm = t.getPerm();
        return Split{llvm::find(perm, inSplit->second.dim) - perm.begin(), 1};
      })
      .Case<g::SoftmaxOp>([&](g::SoftmaxOp s) -> std::optional<Split> {
        if (!notSplitAxis(s.getAxis()))
          return std::nullopt;
        return inSplit->second;
      })
      .Case<g::ExpandOp>([&](g::ExpandOp e) -> std::optional<Split> {
        // A broadcast over other dimensions (grouped-query attention's
        // key and value heads).
        auto from = tensorOf(in), to = tensorOf(e.getResult());
        Split s = inSplit->second;
        s.dim += to.getRank() - from.getRank();
        if (from.getDimSize(inSplit->second.dim) != to.getDimSize(s.dim))
          return std::nullopt;
        return s;
      })
      .Case<g::EmbeddingOp>([&](g::EmbeddingOp e) -> std::optional<Split> {
        // A lookup of token-split ids in a whole table.
        auto ids = split.find(e.getIndices());
        if (ids == split.end() || split.contains(e.getTable()))
          return std::nullopt;
        broadcast(op->getOpOperand(0), out);
        return ids->second;
      })
      .Default([](Operation *) { return std::nullopt; });
}

void TokenSplit::analyze() {
  // One sweep in order: an op's operands are split or whole before it is
  // visited.
  for (Operation &op : func.getBody().front()) {
    if (seeds.contains(&op) || isa<func::ReturnOp>(op) ||
        llvm::none_of(op.getOperands(),
                      [&](Value v) { return split.contains(v); }))
      continue;
    SmallVector<Whole> found;
    if (std::optional<Split> s = visit(&op, found)) {
      for (Value r : op.getResults())
        split[r] = *s;
      ops.insert(&op);
      numAttentions += llvm::count_if(
          found, [](const Whole &w) { return w.how == How::Gather; });
      wholes.append(found);
    } else if (whole.empty()) {
      llvm::raw_string_ostream os(whole);
      os << "'" << op.getName() << "' at " << op.getLoc();
    }
  }
}

void TokenSplit::rewrite(function_ref<void(Value, Split)> localize) {
  MLIRContext *ctx = func.getContext();
  OpBuilder b(ctx);
  dist::DistDialect::VirtualStageAttrHelper stageAttr(ctx);
  // Whole values where token-split ones leave the domain: one all-gather
  // per value and stage, before its first user there. Into a
  // column-parallel region (sequence parallelism) the gather feeds its
  // dist.tp_copy, whose summed gradient dist-autodiff slices back into one
  // reduce-scatter.
  using Key = std::pair<Value, Attribute>;
  auto keyOf = [&](Value v, Operation *at) -> Key {
    return {v, stageAttr.getAttr(at)};
  };
  llvm::DenseSet<Key> leaving;
  for (Operation &op : func.getBody().front())
    if (!ops.contains(&op))
      for (Value v : op.getOperands())
        if (split.contains(v))
          leaving.insert(keyOf(v, placeFor(&op, v)));
  // An elementwise op of one token-split value and constants (the zeros
  // `x * 0` a scatter starts from) whose input leaves the domain too is
  // computed again from that input's gathered whole instead of gathered
  // itself: the same numbers, one collective fewer. (A whole operand with
  // a gradient would have it counted on every rank, so only constants.)
  auto fromGathered = [&](Value v, Operation *at) -> Value {
    Operation *def = v.getDefiningOp();
    if (!def || def->getNumResults() != 1 ||
        !isa<g::BinaryOp, g::UnaryOp, g::CastOp>(def))
      return {};
    Value in;
    for (Value x : def->getOperands()) {
      if (!split.contains(x)) {
        if (!x.getDefiningOp<g::ConstantOp>())
          return {};
      } else if (in || tensorOf(x).getShape() != tensorOf(v).getShape()) {
        return {};
      } else {
        in = x;
      }
    }
    return in && leaving.contains(keyOf(in, at)) ? in : Value();
  };
  DenseMap<Key, Value> gathered;
  llvm::SmallSetVector<Operation *, 4> madeAgain;
  std::function<Value(Value, Operation *, Operation *)> wholeOf =
      [&](Value v, Operation *at, Operation *before) -> Value {
    if (Value known = gathered.lookup(keyOf(v, at)))
      return known;
    Value whole;
    if (Value in = fromGathered(v, at)) {
      Value wholeIn = wholeOf(in, at, before);
      b.setInsertionPoint(before);
      Operation *again = b.clone(*v.getDefiningOp());
      again->replaceUsesOfWith(in, wholeIn);
      placeLike(again, at);
      whole = again->getResult(0);
      madeAgain.insert(v.getDefiningOp());
    } else {
      b.setInsertionPoint(before);
      whole =
          gatherWhole(b, at, v, localType(tensorOf(v), split.lookup(v), parts),
                      split.lookup(v).dim, groupsOf(at), {}, balanced);
    }
    gathered[keyOf(v, at)] = whole;
    return whole;
  };
  for (Operation &op : func.getBody().front()) {
    if (ops.contains(&op))
      continue;
    for (OpOperand &use : op.getOpOperands())
      if (split.contains(use.get()))
        use.set(wholeOf(use.get(), placeFor(&op, use.get()), &op));
  }
  // Whole operands of token-split ops: the rank's tokens of them, or the
  // whole value through a copy whose gradient is summed over the group,
  // gathered first when it is token-split.
  DenseMap<std::tuple<Value, int64_t, Attribute>, Value> adapted;
  llvm::SmallSetVector<g::EmbeddingOp, 2> lookedUp;
  for (const Whole &w : wholes) {
    Value v = w.user->getOperand(w.operand);
    int64_t key = w.how == How::Slice  ? w.axis
                  : w.how == How::Copy ? -1
                                       : -2 - w.axis;
    Value &local = adapted[{v, key, stageAttr.getAttr(w.user)}];
    if (!local) {
      b.setInsertionPoint(w.user);
      Groups groups = groupsOf(w.user);
      auto copy = [&](Value x) {
        auto made =
            createCollective<dist::TpCopyOp>(b, w.user, groups, x.getType(), x);
        placeLike(made, w.user);
        return made.getResult();
      };
      auto lookup = v.getDefiningOp<g::EmbeddingOp>();
      if (w.how == How::Slice && attention && lookup &&
          !split.contains(lookup.getIndices()) &&
          w.axis < tensorOf(lookup.getIndices()).getRank()) {
        // The rows of a lookup of whole ids (the position embedding): the
        // rank's ids looked up, so the table is read by the rank's tokens
        // only (its gradient is their part, as a weight's is).
        Value ids = lookup.getIndices();
        auto rankIds = createCollective<dist::AllSliceOp>(
            b, w.user, groups, localType(tensorOf(ids), {w.axis, 1}, parts),
            ids, b.getI64IntegerAttr(w.axis));
        dist::setBalanced(rankIds, balanced);
        placeLike(rankIds, w.user);
        Value table = lookup.getTable();
        if (!table.getDefiningOp<g::ConstantOp>())
          table = copy(table);
        auto rows = cast<g::EmbeddingOp>(b.clone(*lookup));
        rows->setOperands({table, rankIds.getResult()});
        rows.getResult().setType(localType(tensorOf(v), {w.axis, 1}, parts));
        placeLike(rows, w.user);
        local = rows.getResult();
        lookedUp.insert(lookup);
      } else if (w.how == How::Slice) {
        // Along the leading dimensions of more than one element too (a
        // mask of every head's rows: ALiBi's biases).
        local = sliceWhole(b, w.user, v, w.axis, groups, balanced);
      } else if (w.how == How::Copy) {
        local = copy(v);
      } else {
        local = gatherWhole(b, w.user, v,
                            localType(tensorOf(v), split.lookup(v), parts),
                            w.axis, groups, copy, balanced);
      }
    }
    w.user->setOperand(w.operand, local);
  }
  // Whole lookups whose rows every reader now looks up itself.
  for (g::EmbeddingOp lookup : lookedUp)
    if (lookup->use_empty())
      lookup->erase();
  for (auto [v, s] : split)
    localize(v, s);
  // The token-split ops computed again whole that nothing reads now.
  for (Operation *op : madeAgain)
    if (op->use_empty()) {
      split.erase(op->getResult(0));
      ops.remove(op);
      op->erase();
    }
}
