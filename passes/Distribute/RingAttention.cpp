//===- RingAttention.cpp - Token-split attention as ring attention -------===//
//
// Part of DistOpt. See RingAttention.h.
//
//===----------------------------------------------------------------------===//
#include "passes/Distribute/RingAttention.h"

#include "dialects/Dist/Balanced.h"
#include "dialects/Dist/DistDialect.h"
#include "dialects/Dist/DistOps.h"
#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/KeepF32.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Sequence.h"
#include "llvm/ADT/SetVector.h"

#include <optional>

using namespace mlir;
using namespace distopt;
namespace g = distopt::graph;

namespace {

/// A mask value at or below this drops its key in the runtime's ring
/// attention (runtime/lib/RingAttention.h, kMaskedBias): a `graph.where`
/// fill must be one for the two to agree.
constexpr double kMaskedBias = -1e30;

/// The value of a scalar (or splat) floating constant.
std::optional<double> scalarOf(Value v) {
  auto c = v.getDefiningOp<g::ConstantOp>();
  auto dense = c ? dyn_cast<DenseElementsAttr>(c.getValue()) : nullptr;
  if (!dense || !dense.isSplat() || !isa<FloatType>(dense.getElementType()))
    return std::nullopt;
  return dense.getSplatValue<APFloat>().convertToDouble();
}

/// The rank's block behind `whole`, a value gathered whole over a context
/// group as split::gatherWhole builds it ([reshape <- transpose <-] tp_copy
/// <- all_gather <- [[transpose <-] reshape <-] block), and the gather; null
/// when `whole` is not one. `dim` is the dimension of `whole` the gather
/// merged.
Value blockOf(Value whole, int64_t dim, dist::AllGatherOp &gather) {
  Value x = whole;
  auto reshape = x.getDefiningOp<g::ReshapeOp>();
  auto transpose =
      reshape ? reshape.getInput().getDefiningOp<g::TransposeOp>() : nullptr;
  if (transpose)
    x = transpose.getInput();
  auto copy = x.getDefiningOp<dist::TpCopyOp>();
  gather = copy ? copy.getInput().getDefiningOp<dist::AllGatherOp>() : nullptr;
  if (!gather)
    return {};
  Value block = gather.getInput();
  auto wholeType = cast<RankedTensorType>(whole.getType());
  const int64_t parts = gather.getGroup().size();
  if (transpose) {
    // Stacked along a new leading dimension: the block is the gather's
    // input without it (a balanced block's two chunks moved there first).
    if (auto chunks = block.getDefiningOp<g::TransposeOp>();
        chunks && dist::isBalanced(gather))
      block = chunks.getInput();
    auto stacked = block.getDefiningOp<g::ReshapeOp>();
    if (!stacked || gather.getAxis() != 0)
      return {};
    block = stacked.getInput();
  } else if (static_cast<int64_t>(gather.getAxis()) != dim) {
    return {};
  }
  auto blockType = cast<RankedTensorType>(block.getType());
  SmallVector<int64_t> expected(wholeType.getShape());
  if (expected[dim] % parts != 0)
    return {};
  expected[dim] /= parts;
  if (blockType.getShape() != ArrayRef<int64_t>(expected))
    return {};
  return block;
}

/// One attention in the all-gather form, and the ops it is made of.
struct Match {
  g::MatmulOp scores, product;
  g::SoftmaxOp softmax;
  Operation *scale = nullptr, *mask = nullptr;
  double factor = 1;
  Value key, value;
  dist::AllGatherOp gather;
};

/// Why the product `pv` of probabilities and gathered values is not an
/// attention the ring computes (empty when it is: `m` filled).
std::string matchAttention(g::MatmulOp pv, Match &m) {
  m.product = pv;
  dist::AllGatherOp valueGather;
  auto rank = cast<RankedTensorType>(pv.getType()).getRank();
  if (pv.getTransposeLhs() || pv.getTransposeRhs() || pv.getBias() ||
      pv.getAlpha().convertToDouble() != 1)
    return "the product with V is transposed, scaled or has a bias";
  m.value = blockOf(pv.getRhs(), rank - 2, valueGather);
  m.softmax = pv.getLhs().getDefiningOp<g::SoftmaxOp>();
  int64_t axis = m.softmax ? static_cast<int64_t>(m.softmax.getAxis()) : 0;
  if (!m.softmax || m.softmax.getLog() || !m.softmax->hasOneUse() ||
      (axis < 0 ? axis + rank : axis) != rank - 1)
    return "the probabilities are not a softmax along the keys that only "
           "the product with V reads";
  if (!m.value)
    return "V is not gathered whole along its positions";
  Value s = m.softmax.getInput();
  // The mask, then the scale, then the scores.
  auto chained = [](Value v) { return v.hasOneUse(); };
  if (auto where = s.getDefiningOp<g::WhereOp>()) {
    std::optional<double> fill =
        chained(where.getLhs()) ? scalarOf(where.getRhs()) : std::nullopt;
    if (!fill || *fill > kMaskedBias)
      return "the mask fills masked scores with a value above -1e30 (or "
             "keeps them on the false side)";
    m.mask = where;
    s = where.getLhs();
  } else if (auto add = s.getDefiningOp<g::BinaryOp>();
             add && add.getKind() == g::BinaryKind::Add) {
    auto isScores = [](Value v) {
      Operation *def = v.getDefiningOp();
      return isa_and_nonnull<g::MatmulOp, g::BinaryOp>(def) && v.hasOneUse();
    };
    Value a = add.getLhs(), b = add.getRhs();
    bool lhs = isScores(a) && !isScores(b);
    if (!lhs && !(isScores(b) && !isScores(a)))
      return "an addition to the scores whose mask operand is not clear";
    m.mask = add;
    s = lhs ? a : b;
  }
  if (auto scale = s.getDefiningOp<g::BinaryOp>();
      scale && chained(s) &&
      (scale.getKind() == g::BinaryKind::Div ||
       scale.getKind() == g::BinaryKind::Mul)) {
    std::optional<double> c = scalarOf(scale.getRhs());
    if (!c || *c == 0)
      return "the scores are scaled by a value other than a scalar constant";
    m.factor = scale.getKind() == g::BinaryKind::Div ? 1 / *c : *c;
    m.scale = scale;
    s = scale.getLhs();
  }
  m.scores = s.getDefiningOp<g::MatmulOp>();
  if (!m.scores || !chained(s) || m.scores.getTransposeLhs() ||
      m.scores.getBias() || m.scores.getAlpha().convertToDouble() != 1)
    return "the scores are not a plain product of Q and K that only the "
           "softmax reads";
  // Q Kt with Kt gathered along its last dimension, or Q K^T of K along
  // its positions.
  bool transposed = m.scores.getTransposeRhs();
  m.key =
      blockOf(m.scores.getRhs(), transposed ? rank - 2 : rank - 1, m.gather);
  if (!m.key)
    return "K is not gathered whole along its positions";
  if (m.gather.getGroup() != valueGather.getGroup() ||
      dist::isBalanced(m.gather) != dist::isBalanced(valueGather))
    return "K and V are gathered over different groups or splits";
  auto q = cast<RankedTensorType>(m.scores.getLhs().getType());
  auto v = cast<RankedTensorType>(m.value.getType());
  if (q.getRank() != rank ||
      q.getShape().drop_back(2) != v.getShape().drop_back(2))
    return "Q, K and V do not share their leading (head) dimensions";
  return "";
}

/// The additive mask of `m` ([..., Sq, S] f32, leading dims 1 or Q's): the
/// added one, or 0 / the fill by a `graph.where`'s condition; null without
/// a mask. Fails, with `why` set and nothing created, when the ring cannot
/// take it.
FailureOr<Value> maskOf(OpBuilder &b, Match &m, std::string &why) {
  if (!m.mask)
    return Value();
  auto scores = cast<RankedTensorType>(m.scores.getType());
  auto where = dyn_cast<g::WhereOp>(m.mask);
  Value added;
  RankedTensorType type;
  if (where) {
    type = cast<RankedTensorType>(where.getCondition().getType())
               .clone(scores.getElementType());
  } else {
    Value lhs = m.mask->getOperand(0);
    added =
        lhs == m.scores.getResult() || (m.scale && lhs == m.scale->getResult(0))
            ? m.mask->getOperand(1)
            : lhs;
    type = cast<RankedTensorType>(added.getType());
  }
  // A mask of lower rank (dist-modelgen's [queries, keys]) broadcasts over
  // the leading dims: the ring reads it with leading 1s.
  ArrayRef<int64_t> lead = scores.getShape().drop_back(2);
  SmallVector<int64_t> padded(
      std::max<int64_t>(scores.getRank() - type.getRank(), 0), 1);
  padded.append(type.getShape().begin(), type.getShape().end());
  ArrayRef<int64_t> maskLead = ArrayRef<int64_t>(padded).drop_back(2);
  if (type.getRank() < 2 || type.getRank() > scores.getRank() ||
      !type.getElementType().isF32() ||
      type.getShape().take_back(2) != scores.getShape().take_back(2) ||
      (maskLead != lead &&
       llvm::any_of(maskLead, [](int64_t d) { return d != 1; }))) {
    why = "the mask is not f32 [..., queries, keys] with leading dims 1 or "
          "the heads'";
    return failure();
  }
  Value mask = added;
  if (!mask) {
    Location loc = where.getLoc();
    auto scalar = RankedTensorType::get({}, scores.getElementType());
    auto zero = g::ConstantOp::create(
        b, loc, scalar,
        DenseElementsAttr::get(scalar, b.getFloatAttr(b.getF32Type(), 0.0)));
    auto filled = g::WhereOp::create(b, loc, type, where.getCondition(), zero,
                                     where.getRhs());
    split::placeLike(filled, m.product);
    mask = filled.getResult();
  }
  if (type.getRank() == scores.getRank())
    return mask;
  auto view = g::ReshapeOp::create(b, mask.getLoc(), type.clone(padded), mask);
  split::placeLike(view, m.product);
  return view.getResult();
}

} // namespace

split::RingAttentions split::formRingAttentions(func::FuncOp func) {
  RingAttentions done;
  SmallVector<g::MatmulOp> products;
  func.walk([&](g::MatmulOp pv) {
    if (pv.getLhs().getDefiningOp<g::SoftmaxOp>())
      products.push_back(pv);
  });
  llvm::SetVector<Operation *> dead;
  for (g::MatmulOp pv : products) {
    Match m;
    std::string why = matchAttention(pv, m);
    OpBuilder b(pv);
    FailureOr<Value> mask = Value();
    if (why.empty())
      mask = maskOf(b, m, why);
    if (!why.empty()) {
      // Only attentions over gathered keys and values are context split.
      dist::AllGatherOp gathered;
      auto rank = cast<RankedTensorType>(pv.getType()).getRank();
      if (done.firstKept.empty() && blockOf(pv.getRhs(), rank - 2, gathered))
        llvm::raw_string_ostream(done.firstKept)
            << "the attention at " << pv.getLoc() << ": " << why;
      continue;
    }
    Location loc = pv.getLoc();
    Value key = m.key;
    if (!m.scores.getTransposeRhs()) {
      // Kt [..., D, Skv]: the ring takes K [..., Skv, D], one transpose
      // with the one that made Kt (GPT-2's k.transpose(-1, -2)).
      auto kt = cast<RankedTensorType>(key.getType());
      SmallVector<int64_t> perm;
      for (int64_t d = 0; d < kt.getRank(); ++d)
        perm.push_back(d);
      std::swap(perm[kt.getRank() - 1], perm[kt.getRank() - 2]);
      Value from = key;
      if (auto inner = key.getDefiningOp<g::TransposeOp>()) {
        for (int64_t &d : perm)
          d = inner.getPerm()[d];
        from = inner.getInput();
      }
      auto source = cast<RankedTensorType>(from.getType());
      SmallVector<int64_t> shape;
      for (int64_t d : perm)
        shape.push_back(source.getDimSize(d));
      if (llvm::equal(perm, llvm::seq<int64_t>(0, kt.getRank()))) {
        key = from;
      } else {
        auto t = g::TransposeOp::create(b, loc, kt.clone(shape), from,
                                        b.getDenseI64ArrayAttr(perm));
        split::placeLike(t, pv);
        key = t.getResult();
      }
      if (Operation *inner = m.key.getDefiningOp<g::TransposeOp>())
        dead.insert(inner);
    }
    auto out = cast<RankedTensorType>(pv.getType());
    SmallVector<int64_t> lseShape(out.getShape().drop_back());
    auto ring = dist::RingAttentionOp::create(
        b, loc, out, out.clone(lseShape), m.scores.getLhs(), key, m.value,
        *mask, b.getF32FloatAttr(static_cast<float>(m.factor)),
        m.gather.getGroupAttr());
    dist::setBalanced(ring, dist::isBalanced(m.gather));
    dist::DistDialect::GroupsAttrHelper groups(b.getContext());
    if (auto runs = groups.getAttr(m.gather))
      groups.setAttr(ring, runs);
    split::placeLike(ring, pv);
    // The runtime's ring is f32: under mixed precision its operands are
    // cast up and its result down (as the loss is).
    g::markKeepF32(ring);
    pv.getResult().replaceAllUsesWith(ring.getResult());
    for (Operation *op : {pv.getOperation(), m.softmax.getOperation(), m.mask,
                          m.scale, m.scores.getOperation()})
      if (op)
        dead.insert(op);
    ++done.formed;
  }
  // The attentions' ops, then the gathers, copies and views of K and V
  // that only they read: erased once nothing reads them.
  for (unsigned i = 0; i < dead.size(); ++i)
    for (Value v : dead[i]->getOperands())
      if (Operation *def = v.getDefiningOp();
          def &&
          isa<g::ReshapeOp, g::TransposeOp, dist::TpCopyOp, dist::AllGatherOp>(
              def))
        dead.insert(def);
  SmallVector<Operation *> left(dead.begin(), dead.end());
  for (bool erased = true; erased;) {
    erased = false;
    for (Operation *&op : left)
      if (op && op->use_empty()) {
        op->erase();
        op = nullptr;
        erased = true;
      }
  }
  return done;
}
