//===- VocabParallel.cpp - Vocabulary-parallel cross-entropy ----*- C++ -*-===//
//
// Part of DistOpt. Megatron-LM's vocabulary-parallel cross-entropy
// (VocabParallelCrossEntropy): tensor rank r holds the logits' columns
// [r V/tp, (r+1) V/tp). Per row, the ranks all-reduce the maximum of their
// columns (the shift m), the sum of exp(logit - m) over their columns (S)
// and the label's logit minus m (only the rank that holds the label's
// column contributes it), so loss = log S - (logit[label] - m) per row,
// reduced as the loss says (none: the rows themselves, whole on every
// rank). The gradient of the rank's columns, softmax - onehot, needs no
// communication: dist-autodiff differentiates these graph ops,
// and the all-reduced sums pass their gradients through (tp's convention,
// the loss is the same on every rank), while the shift is marked
// `dist.shift`, a constant to the backward (its gradient cancels: it is
// subtracted inside the log-sum-exp and added back). Under mixed precision
// the loss reads the 16-bit logits cast to f32: each rank casts its columns
// and runs the same f32 loss, and the cast's gradient rounds the rank's
// columns of softmax - onehot (times the loss scale) back to 16 bits. A
// loss in the planned function is rewritten here before dist-autodiff
// lowers the precision: its float ops carry `graph.keep_f32`, so they stay
// f32 and read the rank's logits cast to f32, as the loss that
// dist-autodiff adds does.
//
//===----------------------------------------------------------------------===//
#include "passes/Distribute/VocabParallel.h"
#include "passes/Distribute/SplitValues.h"

#include "dialects/Dist/DistDialect.h"
#include "dialects/Dist/DistOps.h"
#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/KeepF32.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace distopt;
namespace g = distopt::graph;
using split::tensorOf;

namespace {

/// The gather of column-parallel logits that `logits` (the [rows, classes]
/// operand of a loss) is, as split::gatherWhole builds it: its ops, last
/// first, the all-gather, the rank's logits (classes last) and, under mixed
/// precision, the cast of the gathered 16-bit logits to the loss's f32.
struct GatheredLogits {
  SmallVector<Operation *> chain;
  dist::AllGatherOp gather;
  Value local;
  g::CastOp widen;
};

std::optional<GatheredLogits> gatheredLogits(Value logits) {
  GatheredLogits out;
  Value v = logits;
  auto step = [&](Operation *op) {
    out.chain.push_back(op);
    return op->getOperand(0);
  };
  auto single = [](Value x) { return x.hasOneUse(); };
  // The loss's view as [rows, classes].
  if (auto r = v.getDefiningOp<g::ReshapeOp>();
      r && single(v) &&
      (r.getInput().getDefiningOp<g::ReshapeOp>() ||
       r.getInput().getDefiningOp<dist::AllGatherOp>() ||
       r.getInput().getDefiningOp<g::CastOp>()))
    v = step(r);
  // Mixed precision casts the forward's 16-bit result to f32 before the
  // loss (autodiff::lowerPrecision). The cast is elementwise: the rank
  // casts its own columns instead.
  if (auto c = v.getDefiningOp<g::CastOp>();
      c && single(v) && isa<FloatType>(getElementTypeOrSelf(c.getInput())) &&
      isa<FloatType>(getElementTypeOrSelf(c.getType()))) {
    out.widen = c;
    v = step(c);
  }
  if (!single(v))
    return std::nullopt;
  // Along the split dimension itself, when every dimension before it is 1.
  if (auto ag = v.getDefiningOp<dist::AllGatherOp>()) {
    auto in = tensorOf(ag.getInput());
    if (!in || static_cast<int64_t>(ag.getAxis()) != in.getRank() - 1)
      return std::nullopt;
    out.local = step(ag);
    out.gather = ag;
    return out;
  }
  // Else along a new leading dimension, moved next to the split one and
  // merged into it: reshape(transpose(all_gather(reshape(local)))).
  auto merge = v.getDefiningOp<g::ReshapeOp>();
  auto t = merge ? merge.getInput().getDefiningOp<g::TransposeOp>() : nullptr;
  auto ag = t ? t.getInput().getDefiningOp<dist::AllGatherOp>() : nullptr;
  auto lead = ag ? ag.getInput().getDefiningOp<g::ReshapeOp>() : nullptr;
  if (!lead || ag.getAxis() != 0 || !single(merge.getInput()) ||
      !single(t.getInput()) || !single(lead.getResult()))
    return std::nullopt;
  auto local = tensorOf(lead.getInput());
  int64_t rank = local ? local.getRank() : 0;
  if (rank == 0 || tensorOf(lead.getResult()).getRank() != rank + 1 ||
      tensorOf(lead.getResult()).getDimSize(0) != 1)
    return std::nullopt;
  // [parts, a.., n/parts] -> [a.., parts, n/parts]: the split dimension is
  // the last.
  SmallVector<int64_t> perm;
  for (int64_t d = 1; d < rank; ++d)
    perm.push_back(d);
  perm.push_back(0);
  perm.push_back(rank);
  if (t.getPerm() != ArrayRef<int64_t>(perm))
    return std::nullopt;
  for (Operation *op : {merge.getOperation(), t.getOperation(),
                        ag.getOperation(), lead.getOperation()})
    step(op);
  out.local = lead.getInput();
  out.gather = ag;
  return out;
}

/// Why the loss keeps its gathered logits, or "" when it splits.
std::string unsupported(g::SoftmaxCrossEntropyOp loss) {
  auto logits = tensorOf(loss.getLogits());
  auto labels = tensorOf(loss.getLabels());
  if (!logits || logits.getRank() != 2 || !logits.hasStaticShape() ||
      !logits.getElementType().isF32())
    return "its logits are not static f32 [rows, classes]";
  if (!labels || labels.getRank() != 1 ||
      !labels.getElementType().isSignlessInteger())
    return "its labels are not integer [rows]";
  return "";
}

void rewrite(g::SoftmaxCrossEntropyOp loss, GatheredLogits gathered) {
  MLIRContext *ctx = loss.getContext();
  OpBuilder b(loss);
  Location loc = loss.getLoc();
  auto logits = tensorOf(loss.getLogits());
  auto labels = tensorOf(loss.getLabels());
  int64_t rows = logits.getDimSize(0);
  int64_t columns = tensorOf(gathered.local).getShape().back();
  int64_t tp = logits.getDimSize(1) / columns;
  Type f32 = logits.getElementType(), it = labels.getElementType();
  auto rowType = RankedTensorType::get({rows, 1}, f32);
  auto localType = RankedTensorType::get({rows, columns}, f32);
  auto place = [&](Operation *op) {
    split::placeLike(op, gathered.gather);
    g::markKeepF32(op);
    return op->getResult(0);
  };
  // Collectives over the gather's group, run by the gather's groups.
  dist::DistDialect::GroupsAttrHelper runs(ctx);
  auto collective = [&](Operation *op) {
    if (auto groups = runs.getAttr(gathered.gather))
      runs.setAttr(op, groups);
    return place(op);
  };
  auto allReduce = [&](dist::ReductionKind kind, Value v) {
    return dist::AllReduceOp::create(b, loc, v.getType(), v,
                                     dist::ReductionKindAttr::get(ctx, kind),
                                     gathered.gather.getGroupAttr());
  };
  auto reduce = [&](g::ReduceKind kind, Type type, Value v,
                    ArrayRef<int64_t> axes, bool keep) {
    return place(g::ReduceOp::create(b, loc, type, kind, v, axes, keep));
  };
  auto binary = [&](g::BinaryKind kind, Type type, Value l, Value r) {
    return place(g::BinaryOp::create(b, loc, type, kind, l, r));
  };
  auto constant = [&](RankedTensorType type, ArrayRef<APInt> values) {
    return place(g::ConstantOp::create(b, loc, type,
                                       DenseElementsAttr::get(type, values)));
  };
  unsigned bits = it.getIntOrFloatBitWidth();

  // The rank's logits as [rows, columns], in the loss's f32: under mixed
  // precision cast from the 16-bit logits as the whole logits were, so the
  // backward casts the rank's gradient back where one process casts its.
  Value x = gathered.local;
  auto localView = localType.clone(tensorOf(x).getElementType());
  if (tensorOf(x) != localView)
    x = place(g::ReshapeOp::create(b, loc, localView, x));
  if (gathered.widen)
    x = place(g::CastOp::create(b, loc, localType, x));
  // The shift: the row maxima over every rank's columns.
  Value m = reduce(g::ReduceKind::Max, rowType, x, {1}, true);
  auto max = allReduce(dist::ReductionKind::max, m);
  dist::DistDialect::ShiftAttrHelper(ctx).setAttr(max, b.getUnitAttr());
  m = collective(max);
  Value z = binary(g::BinaryKind::Sub, localType, x, m);
  Value e = place(g::UnaryOp::create(b, loc, localType, g::UnaryKind::Exp, z,
                                     FloatAttr(), FloatAttr()));
  Value sum =
      collective(allReduce(dist::ReductionKind::sum,
                           reduce(g::ReduceKind::Sum, rowType, e, {1}, true)));
  // The rank's first column, r V/tp, from its element of [0, .., tp-1].
  SmallVector<APInt> ranks;
  for (int64_t r = 0; r < tp; ++r)
    ranks.push_back(APInt(bits, r));
  Value all = constant(RankedTensorType::get({tp}, it), ranks);
  auto one = RankedTensorType::get({1}, it);
  Value rank = collective(
      dist::AllSliceOp::create(b, loc, one, all, b.getI64IntegerAttr(0),
                               gathered.gather.getGroupAttr()));
  Value first =
      binary(g::BinaryKind::Mul, one, rank,
             constant(RankedTensorType::get({}, it), {APInt(bits, columns)}));
  // The label's column among the rank's (out of [0, V/tp) on other ranks).
  auto labelRows = RankedTensorType::get({rows, 1}, it);
  auto rowBits = labelRows.clone(b.getI1Type());
  Value labelOf =
      place(g::ReshapeOp::create(b, loc, labelRows, loss.getLabels()));
  Value label = binary(g::BinaryKind::Sub, labelRows, labelOf, first);
  auto scalarOf = [&](int64_t v) {
    return constant(RankedTensorType::get({}, it),
                    {APInt(bits, v, /*isSigned=*/true)});
  };
  auto inRange = [&](Value v, int64_t size) {
    return binary(g::BinaryKind::And, rowBits,
                  binary(g::BinaryKind::GreaterEqual, rowBits, v, scalarOf(0)),
                  binary(g::BinaryKind::Less, rowBits, v, scalarOf(size)));
  };
  Value mine = inRange(label, columns);
  // A label of no rank's columns (outside [0, V), not the ignore index)
  // reads column `columns`, outside the rank's, so the gather stops the
  // program as one process's loss does; other ranks' labels read column 0,
  // which `mine` zeroes.
  Value valid = inRange(labelOf, logits.getDimSize(1));
  IntegerAttr ignore = loss.getIgnoreIndexAttr();
  if (ignore)
    valid = binary(g::BinaryKind::Or, rowBits, valid,
                   binary(g::BinaryKind::Equal, rowBits, labelOf,
                          scalarOf(ignore.getInt())));
  Value index = place(g::WhereOp::create(
      b, loc, labelRows, mine, label,
      place(g::WhereOp::create(b, loc, labelRows, valid, scalarOf(0),
                               scalarOf(columns)))));
  // The label's shifted logit: from the rank that holds it, 0 from others.
  Value picked = place(g::GatherElementsOp::create(b, loc, rowType, z, index,
                                                   b.getI64IntegerAttr(1)));
  Value target = collective(
      allReduce(dist::ReductionKind::sum,
                binary(g::BinaryKind::Mul, rowType, picked,
                       place(g::CastOp::create(b, loc, rowType, mine)))));
  Value lse = place(g::UnaryOp::create(b, loc, rowType, g::UnaryKind::Log, sum,
                                       FloatAttr(), FloatAttr()));
  Value perRow = binary(g::BinaryKind::Sub, rowType, lse, target);
  g::LossReduction reduction = loss.getReduction();
  auto lossType = cast<RankedTensorType>(loss.getType());
  auto scalar = RankedTensorType::get({}, f32);
  auto f32Scalar = [&](double v) {
    return place(g::ConstantOp::create(
        b, loc, scalar,
        DenseElementsAttr::get(scalar, b.getFloatAttr(f32, v))));
  };
  // Rows whose label is the ignore index count 0.
  Value keep;
  if (ignore) {
    Value ignored =
        place(g::CastOp::create(b, loc, rowType,
                                binary(g::BinaryKind::Equal, rowBits, labelOf,
                                       scalarOf(ignore.getInt()))));
    keep = binary(g::BinaryKind::Sub, rowType, f32Scalar(1), ignored);
    perRow = binary(g::BinaryKind::Mul, rowType, perRow, keep);
  }
  Value out;
  if (reduction == g::LossReduction::None) {
    out = place(g::ReshapeOp::create(b, loc, lossType, perRow));
  } else if (reduction == g::LossReduction::Mean && !keep) {
    out = reduce(g::ReduceKind::Mean, lossType, perRow, {}, false);
  } else {
    out = reduce(g::ReduceKind::Sum, lossType, perRow, {}, false);
    // A mean with an ignore index divides by the rows that count (by 1
    // when none does: the loss is then 0).
    if (reduction == g::LossReduction::Mean)
      out = binary(g::BinaryKind::Div, lossType, out,
                   binary(g::BinaryKind::Max, lossType,
                          reduce(g::ReduceKind::Sum, lossType, keep, {}, false),
                          f32Scalar(1)));
  }
  loss.getResult().replaceAllUsesWith(out);
  loss.erase();
  for (Operation *op : gathered.chain)
    if (op->use_empty())
      op->erase();
}

} // namespace

unsigned split::vocabParallelCrossEntropy(func::FuncOp func, bool verbose) {
  SmallVector<g::SoftmaxCrossEntropyOp> losses;
  func.walk([&](g::SoftmaxCrossEntropyOp l) { losses.push_back(l); });
  unsigned rewritten = 0;
  for (g::SoftmaxCrossEntropyOp loss : losses) {
    std::optional<GatheredLogits> gathered = gatheredLogits(loss.getLogits());
    if (!gathered)
      continue;
    if (std::string why = unsupported(loss); !why.empty()) {
      if (verbose)
        loss.emitRemark("dist-tensor-parallel: the logits are gathered whole "
                        "for this softmax cross-entropy, not "
                        "vocabulary-parallel: ")
            << why;
      continue;
    }
    rewrite(loss, *gathered);
    ++rewritten;
  }
  return rewritten;
}
