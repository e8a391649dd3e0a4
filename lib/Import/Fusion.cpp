//===- Fusion.cpp - Exporters' spellings back to graph ops ------*- C++ -*-===//
//
// Part of DistOpt. Exporters at opset < 17 spell LayerNorm, RMSNorm, GELU and
// SiLU as chains of elementwise ops; these patterns (all rooted at the op the
// chain ends in) fold them back:
//   LayerNorm: d = x - mean(x); y = d / sqrt(mean(d^2) + eps) [* g [+ b]]
//   RMSNorm:   y = x * 1/sqrt(mean(x^2) + eps) * g   (or x / sqrt(...) * g)
//   GELU:      0.5 * x * (1 + erf(x / sqrt(2)))
//   GELU-tanh: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
//   SiLU:      x * sigmoid(x)
//
// The ONNX importer calls fuseExporterPatterns on every function it creates;
// the dist-fuse-exporter-patterns pass (passes/Import) runs it on .mlir from
// another compiler.
//
//===----------------------------------------------------------------------===//
#include "Fusion.h"

#include "dialects/Graph/GraphOps.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

using namespace mlir;
using namespace distopt;
using namespace distopt::graph;

//===----------------------------------------------------------------------===//
// Matchers
//===----------------------------------------------------------------------===//

/// The value of a one-element `graph.constant`.
static std::optional<double> scalarOf(Value v) {
  auto c = v.getDefiningOp<ConstantOp>();
  if (!c)
    return std::nullopt;
  auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
  if (!dense || dense.getNumElements() != 1)
    return std::nullopt;
  Type elem = dense.getElementType();
  if (isa<FloatType>(elem))
    return (*dense.getValues<APFloat>().begin()).convertToDouble();
  if (elem.isSignlessInteger())
    return double((*dense.getValues<APInt>().begin()).getSExtValue());
  return std::nullopt;
}

static bool isScalar(Value v, double expected, double tolerance = 1e-4) {
  auto s = scalarOf(v);
  return s && std::fabs(*s - expected) <= tolerance * std::fabs(expected);
}

static BinaryOp binary(Value v, BinaryKind kind) {
  auto op = v.getDefiningOp<BinaryOp>();
  return op && op.getKind() == kind ? op : BinaryOp();
}

static UnaryOp unary(Value v, UnaryKind kind) {
  auto op = v.getDefiningOp<UnaryOp>();
  return op && op.getKind() == kind ? op : UnaryOp();
}

/// `v = mean(x)` over exactly the last axis, keepdims; returns x.
static Value meanOverLastAxis(Value v) {
  auto r = v.getDefiningOp<ReduceOp>();
  if (!r || r.getKind() != ReduceKind::Mean || !r.getKeepdims() ||
      r.getAxes().size() != 1)
    return nullptr;
  int64_t rank = r.getInput().getType().getRank();
  int64_t axis = r.getAxes()[0];
  return axis == -1 || axis == rank - 1 ? r.getInput() : Value();
}

/// For a commutative op, calls `fn(a, b)` with both operand orders until it
/// returns true.
template <typename Fn> static bool eitherOrder(BinaryOp op, Fn fn) {
  return fn(op.getLhs(), op.getRhs()) || fn(op.getRhs(), op.getLhs());
}

/// `s = sqrt(mean(inner) + eps)`; sets inner and eps.
static bool matchRootMeanEps(Value s, Value &inner, double &eps) {
  auto sqrt = unary(s, UnaryKind::Sqrt);
  if (!sqrt)
    return false;
  auto add = binary(sqrt.getInput(), BinaryKind::Add);
  if (!add)
    return false;
  return eitherOrder(add, [&](Value m, Value e) {
    auto epsValue = scalarOf(e);
    Value x = meanOverLastAxis(m);
    if (!epsValue || !x)
      return false;
    inner = x;
    eps = *epsValue;
    return true;
  });
}

/// `v = x^2` (pow by 2 or x*x); returns x.
static Value squareOf(Value v) {
  if (auto pow = binary(v, BinaryKind::Pow))
    return isScalar(pow.getRhs(), 2.0) ? pow.getLhs() : Value();
  if (auto mul = binary(v, BinaryKind::Mul))
    return mul.getLhs() == mul.getRhs() ? mul.getLhs() : Value();
  return nullptr;
}

/// Builds the norm op in place of `root` when the operand shapes verify.
template <typename NormOp>
static LogicalResult replaceWithNorm(PatternRewriter &rewriter, Operation *root,
                                     Value x, Value scale, Value bias,
                                     double eps) {
  auto type = cast<RankedTensorType>(root->getResult(0).getType());
  if (x.getType() != type)
    return failure();
  for (Value v : {scale, bias})
    if (v && cast<RankedTensorType>(v.getType()).getRank() > 1)
      return failure();
  auto op = NormOp::create(rewriter, root->getLoc(), type, x, scale, bias,
                           rewriter.getI64IntegerAttr(-1),
                           rewriter.getF64FloatAttr(eps));
  if (failed(mlir::verify(op.getOperation()))) {
    rewriter.eraseOp(op);
    return failure();
  }
  rewriter.replaceOp(root, op.getResult());
  return success();
}

/// The leaves of a product tree of single-use multiplies, e.g.
/// (x * a) * 0.5 -> [x, a, 0.5].
static void collectFactors(Value v, SmallVectorImpl<Value> &factors, bool top) {
  auto mul = binary(v, BinaryKind::Mul);
  if (mul && (top || mul->hasOneUse()) && factors.size() < 4) {
    collectFactors(mul.getLhs(), factors, false);
    collectFactors(mul.getRhs(), factors, false);
    return;
  }
  factors.push_back(v);
}

/// `v = 1 + u` in either order; returns u.
static Value onePlus(Value v) {
  auto add = binary(v, BinaryKind::Add);
  if (!add)
    return nullptr;
  if (isScalar(add.getRhs(), 1.0))
    return add.getLhs();
  if (isScalar(add.getLhs(), 1.0))
    return add.getRhs();
  return nullptr;
}

/// `v = x * c` in either order with c ~ `expected`; returns x.
static Value scaledBy(Value v, double expected) {
  auto mul = binary(v, BinaryKind::Mul);
  if (!mul)
    return nullptr;
  if (isScalar(mul.getRhs(), expected))
    return mul.getLhs();
  if (isScalar(mul.getLhs(), expected))
    return mul.getRhs();
  return nullptr;
}

/// The x of erf(x / sqrt(2)) or erf(x * (1/sqrt(2))).
static Value erfArgument(Value u) {
  auto erf = unary(u, UnaryKind::Erf);
  if (!erf)
    return nullptr;
  if (auto div = binary(erf.getInput(), BinaryKind::Div))
    return isScalar(div.getRhs(), std::sqrt(2.0)) ? div.getLhs() : Value();
  return scaledBy(erf.getInput(), 1.0 / std::sqrt(2.0));
}

/// The x of tanh(sqrt(2/pi) * (x + 0.044715 * x^3)).
static Value tanhArgument(Value u) {
  auto tanh = unary(u, UnaryKind::Tanh);
  if (!tanh)
    return nullptr;
  Value inner = scaledBy(tanh.getInput(), std::sqrt(2.0 / M_PI));
  auto add = inner ? binary(inner, BinaryKind::Add) : BinaryOp();
  if (!add)
    return nullptr;
  Value x;
  eitherOrder(add, [&](Value a, Value cube) {
    Value p = scaledBy(cube, 0.044715);
    auto pow = p ? binary(p, BinaryKind::Pow) : BinaryOp();
    if (!pow || pow.getLhs() != a || !isScalar(pow.getRhs(), 3.0))
      return false;
    x = a;
    return true;
  });
  return x;
}

//===----------------------------------------------------------------------===//
// Patterns
//===----------------------------------------------------------------------===//

namespace {

/// LayerNorm, rooted at the `* gamma` multiply (a following `+ beta` is
/// folded in by LayerNormBias).
struct LayerNormPattern : OpRewritePattern<BinaryOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BinaryOp mul,
                                PatternRewriter &rewriter) const override {
    if (mul.getKind() != BinaryKind::Mul)
      return failure();
    Value x, gamma;
    double eps = 0;
    bool matched = eitherOrder(mul, [&](Value normalized, Value g) {
      auto div = binary(normalized, BinaryKind::Div);
      if (!div)
        return false;
      auto sub = binary(div.getLhs(), BinaryKind::Sub);
      if (!sub || meanOverLastAxis(sub.getRhs()) != sub.getLhs())
        return false;
      Value inner;
      if (!matchRootMeanEps(div.getRhs(), inner, eps) ||
          squareOf(inner) != sub.getResult())
        return false;
      x = sub.getLhs();
      gamma = g;
      return true;
    });
    if (!matched)
      return failure();
    // Fold a following bias add into the same op.
    if (mul->hasOneUse())
      if (auto add = dyn_cast<BinaryOp>(*mul->getUsers().begin()))
        if (add.getKind() == BinaryKind::Add) {
          Value beta =
              add.getLhs() == mul.getResult() ? add.getRhs() : add.getLhs();
          if (add.getType() == mul.getType() &&
              succeeded(replaceWithNorm<LayerNormOp>(rewriter, add, x, gamma,
                                                     beta, eps)))
            return success();
        }
    return replaceWithNorm<LayerNormOp>(rewriter, mul, x, gamma, Value(), eps);
  }
};

/// RMSNorm, rooted at the `* gamma` multiply.
struct RMSNormPattern : OpRewritePattern<BinaryOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BinaryOp mul,
                                PatternRewriter &rewriter) const override {
    if (mul.getKind() != BinaryKind::Mul)
      return failure();
    Value x, gamma;
    double eps = 0;
    auto matchNormalized = [&](Value v) {
      Value s, candidate;
      if (auto div = binary(v, BinaryKind::Div)) {
        candidate = div.getLhs();
        s = div.getRhs();
      } else if (auto m = binary(v, BinaryKind::Mul)) {
        // x * (1 / s) or x * reciprocal(s), either order.
        return eitherOrder(m, [&](Value a, Value r) {
          Value root;
          if (auto d = binary(r, BinaryKind::Div);
              d && isScalar(d.getLhs(), 1.0))
            root = d.getRhs();
          else if (auto rec = unary(r, UnaryKind::Reciprocal))
            root = rec.getInput();
          else
            return false;
          Value inner;
          if (!matchRootMeanEps(root, inner, eps) || squareOf(inner) != a)
            return false;
          x = a;
          return true;
        });
      } else {
        return false;
      }
      Value inner;
      if (!matchRootMeanEps(s, inner, eps) || squareOf(inner) != candidate)
        return false;
      x = candidate;
      return true;
    };
    bool matched = eitherOrder(mul, [&](Value normalized, Value g) {
      if (!matchNormalized(normalized))
        return false;
      gamma = g;
      return true;
    });
    if (!matched)
      return failure();
    if (auto sub = binary(x, BinaryKind::Sub);
        sub && meanOverLastAxis(sub.getRhs()) == sub.getLhs())
      return failure(); // a LayerNorm without its scale
    return replaceWithNorm<RMSNormOp>(rewriter, mul, x, gamma, Value(), eps);
  }
};

struct GeluPattern : OpRewritePattern<BinaryOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BinaryOp mul,
                                PatternRewriter &rewriter) const override {
    if (mul.getKind() != BinaryKind::Mul)
      return failure();
    SmallVector<Value> factors;
    collectFactors(mul.getResult(), factors, true);
    if (factors.size() != 3)
      return failure();
    for (int half = 0; half < 3; ++half) {
      if (!isScalar(factors[half], 0.5))
        continue;
      for (int k = 0; k < 3; ++k) {
        if (k == half)
          continue;
        Value x = factors[3 - half - k];
        Value u = onePlus(factors[k]);
        if (!u)
          continue;
        UnaryKind kind;
        if (erfArgument(u) == x)
          kind = UnaryKind::Gelu;
        else if (tanhArgument(u) == x)
          kind = UnaryKind::GeluTanh;
        else
          continue;
        if (x.getType() != mul.getType())
          return failure();
        rewriter.replaceOpWithNewOp<UnaryOp>(
            mul, mul.getType(), UnaryKindAttr::get(rewriter.getContext(), kind),
            x, FloatAttr(), FloatAttr());
        return success();
      }
    }
    return failure();
  }
};

/// SiLU (swish): x * sigmoid(x), either order.
struct SiluPattern : OpRewritePattern<BinaryOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BinaryOp mul,
                                PatternRewriter &rewriter) const override {
    if (mul.getKind() != BinaryKind::Mul)
      return failure();
    Value x;
    bool matched = eitherOrder(mul, [&](Value a, Value s) {
      auto sigmoid = unary(s, UnaryKind::Sigmoid);
      if (!sigmoid || sigmoid.getInput() != a || a.getType() != mul.getType())
        return false;
      x = a;
      return true;
    });
    if (!matched)
      return failure();
    rewriter.replaceOpWithNewOp<UnaryOp>(
        mul, mul.getType(),
        UnaryKindAttr::get(rewriter.getContext(), UnaryKind::Silu), x,
        FloatAttr(), FloatAttr());
    return success();
  }
};

/// Puts a `+ beta` after an already-fused layer_norm into the op.
struct LayerNormBias : OpRewritePattern<BinaryOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BinaryOp add,
                                PatternRewriter &rewriter) const override {
    if (add.getKind() != BinaryKind::Add)
      return failure();
    for (auto [a, b] : {std::pair(add.getLhs(), add.getRhs()),
                        std::pair(add.getRhs(), add.getLhs())}) {
      auto ln = a.getDefiningOp<LayerNormOp>();
      if (!ln || ln.getBias() || !ln->hasOneUse() ||
          ln.getType() != add.getType())
        continue;
      if (succeeded(replaceWithNorm<LayerNormOp>(
              rewriter, add, ln.getInput(), ln.getScale(), b,
              ln.getEpsilon().convertToDouble())))
        return success();
    }
    return failure();
  }
};

} // namespace

/// Erases ops without uses and without side effects (what the chains leave,
/// unused constants, weights and shape leftovers), innermost first.
static void eraseDeadOps(Block &block) {
  bool changed = true;
  while (changed) {
    changed = false;
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(block))) {
      if (op.use_empty() && !op.hasTrait<OpTrait::IsTerminator>() &&
          isMemoryEffectFree(&op)) {
        op.erase();
        changed = true;
      }
    }
  }
}

LogicalResult distopt::import::fuseExporterPatterns(func::FuncOp func) {
  MLIRContext *ctx = func.getContext();
  RewritePatternSet patterns(ctx);
  // LayerNorm is RMSNorm of (x - mean(x)): try it first.
  patterns.add<LayerNormPattern>(ctx, /*benefit=*/2);
  patterns.add<RMSNormPattern, GeluPattern, SiluPattern, LayerNormBias>(ctx);
  GreedyRewriteConfig config;
  config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
  if (failed(applyPatternsGreedily(func, std::move(patterns), config)))
    return failure();
  if (!func.getBody().empty())
    eraseDeadOps(func.getBody().front());
  return success();
}
