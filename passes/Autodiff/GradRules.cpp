//===- GradRules.cpp - Per-op gradient rules --------------------*- C++ -*-===//
//
// Part of DistOpt. The dispatcher emitGradient and the rules of
// contractions, normalizations and element-wise ops. Contractions get one
// op per operand gradient (a `graph.matmul` for dX and another for dW,
// `graph.conv_grad_input` and `graph.conv_grad_weight`) so input and weight
// gradients stay separable; broadcast operands get their gradient summed
// back to their shape. Reductions and pooling live in GradRulesReduce.cpp,
// views and data movement in GradRulesData.cpp, scatters in
// GradRulesScatter.cpp.
//
//===----------------------------------------------------------------------===//
#include "passes/Autodiff/GradRules.h"
#include "passes/Autodiff/GradBuilder.h"
#include "passes/Autodiff/GradRulesInternal.h"

#include "dialects/Dist/Balanced.h"
#include "dialects/Dist/DistOps.h"
#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/GraphShapeUtils.h"
#include "dist/Diagnostics.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace distopt;
using namespace distopt::autodiff;
namespace g = distopt::graph;

//===----------------------------------------------------------------------===//
// Contractions and normalizations
//===----------------------------------------------------------------------===//

/// Matrix form of a rank-1 matmul operand (numpy: a vector lhs is a row,
/// a vector rhs a column).
static SmallVector<int64_t> matrixShape(RankedTensorType t, bool isLhs) {
  SmallVector<int64_t> s(t.getShape());
  if (s.size() == 1)
    s.insert(isLhs ? s.begin() : s.end(), 1);
  return s;
}

static LogicalResult matmulGrad(GradEmitter &e, g::MatmulOp op, Value dy) {
  OpBuilder &b = e.b;
  Location loc = op.getLoc();
  Value a0 = op.getLhs(), w0 = op.getRhs();
  auto a0t = tensorOf(a0), w0t = tensorOf(w0);
  // A rank-1 operand is differentiated in its matrix form: the operand and
  // dy are reshaped (rank-1 operands are never transposed), and the
  // gradient is reshaped back.
  SmallVector<int64_t> aShape = matrixShape(a0t, true),
                       wShape = matrixShape(w0t, false);
  auto at = RankedTensorType::get(aShape, a0t.getElementType());
  auto wt = RankedTensorType::get(wShape, w0t.getElementType());
  SmallVector<int64_t> dyShape(tensorOf(dy).getShape());
  if (a0t.getRank() == 1)
    dyShape.insert(dyShape.end() - (w0t.getRank() == 1 ? 0 : 1), 1);
  if (w0t.getRank() == 1)
    dyShape.push_back(1);
  auto asMatrix = [&](Value v, ArrayRef<int64_t> shape) {
    return reshape(b, loc, v, shape);
  };
  bool tl = op.getTransposeLhs(), tr = op.getTransposeRhs();
  double alpha = op.getAlpha().convertToDouble();
  e.give(a0, [&]() -> Value {
    Value w = asMatrix(w0, wShape), dy2 = asMatrix(dy, dyShape);
    Value d = tl ? matmul(b, loc, w, dy2, tr, true, alpha)
                 : matmul(b, loc, dy2, w, false, !tr, alpha);
    return reshape(b, loc, sumToShape(b, loc, d, at), a0t.getShape());
  });
  e.give(w0, [&]() -> Value {
    Value a = asMatrix(a0, aShape), dy2 = asMatrix(dy, dyShape);
    // A linear layer (2-D right operand, batched left operand): fold the
    // batch into the rows so the weight gradient is one 2-D product.
    if (wt.getRank() == 2 && at.getRank() > 2 && !tl) {
      int64_t k = at.getShape().back(), n = dyShape.back();
      int64_t rows = tensorOf(dy).getNumElements() / n;
      Value a2 = reshape(b, loc, a, {rows, k});
      Value d2 = reshape(b, loc, dy2, {rows, n});
      Value d = tr ? matmul(b, loc, d2, a2, true, false, alpha)
                   : matmul(b, loc, a2, d2, true, false, alpha);
      return reshape(b, loc, d, w0t.getShape());
    }
    Value d = tr ? matmul(b, loc, dy2, a, true, tl, alpha)
                 : matmul(b, loc, a, dy2, !tl, false, alpha);
    return reshape(b, loc, sumToShape(b, loc, d, wt), w0t.getShape());
  });
  if (Value bias = op.getBias())
    e.give(bias, [&]() -> Value {
      Value d = dy;
      double beta = op.getBeta().convertToDouble();
      if (beta != 1.0)
        d = binary(b, loc, g::BinaryKind::Mul, d,
                   scalar(b, loc, tensorOf(dy).getElementType(), beta));
      return sumToShape(b, loc, d, tensorOf(bias));
    });
  return success();
}

static LogicalResult convGrad(GradEmitter &e, g::ConvOp op, Value dy) {
  OpBuilder &b = e.b;
  Location loc = op.getLoc();
  auto attrs = inherentAttrs(op);
  e.give(op.getInput(), [&]() -> Value {
    return g::ConvGradInputOp::create(b, loc,
                                      TypeRange{op.getInput().getType()},
                                      ValueRange{dy, op.getWeight()}, attrs);
  });
  e.give(op.getWeight(), [&]() -> Value {
    return g::ConvGradWeightOp::create(b, loc,
                                       TypeRange{op.getWeight().getType()},
                                       ValueRange{op.getInput(), dy}, attrs);
  });
  if (Value bias = op.getBias())
    e.give(bias, [&]() -> Value {
      SmallVector<int64_t> axes = {0};
      for (int64_t i = 2; i < tensorOf(dy).getRank(); ++i)
        axes.push_back(i);
      return g::ReduceOp::create(b, loc, bias.getType(), g::ReduceKind::Sum, dy,
                                 axes, false);
    });
  return success();
}

/// conv_grad_input as a forward op (an imported ConvTranspose): its
/// operand's gradient is the forward convolution of dy, its weight's the
/// convolution weight gradient with dy as the input.
static LogicalResult convTransposeGrad(GradEmitter &e, g::ConvGradInputOp op,
                                       Value dy) {
  OpBuilder &b = e.b;
  Location loc = op.getLoc();
  auto attrs = inherentAttrs(op);
  e.give(op.getGrad(), [&]() -> Value {
    return g::ConvOp::create(b, loc, TypeRange{op.getGrad().getType()},
                             ValueRange{dy, op.getWeight()}, attrs);
  });
  e.give(op.getWeight(), [&]() -> Value {
    return g::ConvGradWeightOp::create(b, loc,
                                       TypeRange{op.getWeight().getType()},
                                       ValueRange{dy, op.getGrad()}, attrs);
  });
  return success();
}

/// layer_norm / rms_norm / batch_norm: one input-gradient op, one
/// parameter-gradient op for scale and bias.
static LogicalResult normGrad(GradEmitter &e, Operation *op, StringRef kind,
                              Value x, Value scale, Value bias, Value dy,
                              int64_t axis, double epsilon) {
  OpBuilder &b = e.b;
  Location loc = op->getLoc();
  SmallVector<NamedAttribute> attrs = {
      b.getNamedAttr("kind", b.getStringAttr(kind)),
      b.getNamedAttr("axis", b.getI64IntegerAttr(axis)),
      b.getNamedAttr("epsilon", b.getF64FloatAttr(epsilon))};
  e.give(x, [&]() -> Value {
    return g::NormGradOp::create(b, loc, TypeRange{x.getType()},
                                 ValueRange{x, scale, dy}, attrs);
  });
  bool wantScale = e.wants(scale), wantBias = bias && e.wants(bias);
  if (!wantScale && !wantBias)
    return success();
  auto xt = tensorOf(x);
  SmallVector<int64_t> paramShape;
  if (kind == "batch")
    paramShape.push_back(xt.getDimSize(1));
  else
    llvm::append_range(paramShape, xt.getShape().drop_front(
                                       *g::normalizeAxis(axis, xt.getRank())));
  auto pt = RankedTensorType::get(paramShape, xt.getElementType());
  SmallVector<Type> types = {pt};
  if (bias)
    types.push_back(pt);
  e.setPhaseFor(wantScale ? scale : bias);
  auto params =
      g::NormGradParamsOp::create(b, loc, types, ValueRange{x, dy}, attrs);
  auto toParam = [&](Value grad, Value param) -> Value {
    auto t = tensorOf(param);
    if (t.getNumElements() == pt.getNumElements())
      return reshape(b, loc, grad, t.getShape());
    return sumToShape(b, loc, grad, t);
  };
  e.give(scale, [&] { return toParam(params.getResult(0), scale); });
  if (bias)
    e.give(bias, [&] { return toParam(params.getResult(1), bias); });
  return success();
}

//===----------------------------------------------------------------------===//
// Element-wise ops
//===----------------------------------------------------------------------===//

static LogicalResult binaryGrad(GradEmitter &e, g::BinaryOp op, Value dy) {
  OpBuilder &b = e.b;
  Location loc = op.getLoc();
  Value lhs = op.getLhs(), rhs = op.getRhs();
  auto lt = tensorOf(lhs), rt = tensorOf(rhs);
  using K = g::BinaryKind;
  auto mul = [&](Value x, Value y) { return binary(b, loc, K::Mul, x, y); };
  switch (op.getKind()) {
  case K::Add:
  case K::Sub:
    e.give(lhs, [&] { return sumToShape(b, loc, dy, lt); });
    e.give(rhs, [&] {
      Value d = sumToShape(b, loc, dy, rt);
      return op.getKind() == K::Sub ? unary(b, loc, g::UnaryKind::Neg, d) : d;
    });
    return success();
  case K::Mul:
    e.give(lhs, [&] { return sumToShape(b, loc, mul(dy, rhs), lt); });
    e.give(rhs, [&] { return sumToShape(b, loc, mul(dy, lhs), rt); });
    return success();
  case K::Div:
    e.give(lhs, [&] {
      return sumToShape(b, loc, binary(b, loc, K::Div, dy, rhs), lt);
    });
    e.give(rhs, [&] {
      // d(a/b)/db = -(a/b)/b
      Value q = binary(b, loc, K::Div, mul(dy, op.getResult()), rhs);
      return sumToShape(b, loc, unary(b, loc, g::UnaryKind::Neg, q), rt);
    });
    return success();
  case K::Pow: {
    // d(a^b)/da = b a^(b-1); d(a^b)/db = a^b log(a) for a > 0 and 0
    // elsewhere (PyTorch gives NaN for a < 0, where a real a^b exists only
    // for integer b and has no derivative in b, and 0 for a = 0, b >= 0).
    e.give(lhs, [&] {
      Value one = scalar(b, loc, rt.getElementType(), 1.0);
      Value p = binary(b, loc, K::Pow, lhs, binary(b, loc, K::Sub, rhs, one));
      Value r = castTo(b, loc, rhs, lt.getElementType());
      return sumToShape(b, loc, mul(mul(dy, r), p), lt);
    });
    e.give(rhs, [&] {
      Type elt = lt.getElementType();
      Value zero = scalar(b, loc, elt, 0.0);
      Value positive = binary(b, loc, K::Greater, lhs, zero);
      Value safe = where(b, loc, positive, lhs, scalar(b, loc, elt, 1.0));
      Value d =
          mul(mul(dy, op.getResult()), unary(b, loc, g::UnaryKind::Log, safe));
      d = where(b, loc, positive, d, zero);
      return sumToShape(b, loc, castTo(b, loc, d, rt.getElementType()), rt);
    });
    return success();
  }
  case K::PRelu: {
    // y = x < 0 ? slope * x : x (ONNX PRelu).
    Value zero = scalar(b, loc, lt.getElementType(), 0.0);
    e.give(lhs, [&] {
      Value neg = binary(b, loc, K::Less, lhs, zero);
      return sumToShape(b, loc, where(b, loc, neg, mul(dy, rhs), dy), lt);
    });
    e.give(rhs, [&] {
      Value neg = binary(b, loc, K::Less, lhs, zero);
      return sumToShape(b, loc, where(b, loc, neg, mul(dy, lhs), zero), rt);
    });
    return success();
  }
  case K::Mod: {
    // a mod b = a - q b with q = floor(a / b) (Python) or trunc(a / b)
    // (fmod): da = dy, db = -q dy (PyTorch remainder / fmod).
    if (!isa<FloatType>(lt.getElementType()))
      break;
    e.give(lhs, [&] { return sumToShape(b, loc, dy, lt); });
    e.give(rhs, [&] {
      Value q = binary(b, loc, K::Div, lhs, rhs);
      if (op.getFmod()) {
        Value neg = binary(b, loc, K::Less, q,
                           scalar(b, loc, lt.getElementType(), 0.0));
        q = where(b, loc, neg, unary(b, loc, g::UnaryKind::Ceil, q),
                  unary(b, loc, g::UnaryKind::Floor, q));
      } else {
        q = unary(b, loc, g::UnaryKind::Floor, q);
      }
      return sumToShape(b, loc, unary(b, loc, g::UnaryKind::Neg, mul(dy, q)),
                        rt);
    });
    return success();
  }
  case K::Max:
  case K::Min: {
    // The gradient goes to the operand that was selected (lhs on ties).
    K cmp = op.getKind() == K::Max ? K::GreaterEqual : K::LessEqual;
    Value zero = scalar(b, loc, lt.getElementType(), 0.0);
    e.give(lhs, [&] {
      Value pick = binary(b, loc, cmp, lhs, rhs);
      return sumToShape(b, loc, where(b, loc, pick, dy, zero), lt);
    });
    e.give(rhs, [&] {
      Value pick = binary(b, loc, cmp, lhs, rhs);
      return sumToShape(b, loc, where(b, loc, pick, zero, dy), rt);
    });
    return success();
  }
  default:
    break;
  }
  return op.emitOpError("'")
         << g::stringifyBinaryKind(op.getKind())
         << "' is not differentiable: autodiff cannot pass a gradient "
            "through it to the weights; keep it off the path from the "
            "weights to the loss";
}

//===----------------------------------------------------------------------===//
// Dispatch
//===----------------------------------------------------------------------===//

/// The groups that run the collective `from` (one per replica) run `to`,
/// the collective of its gradient.
static void copyRunGroups(Operation *from, Operation *to) {
  dist::DistDialect::GroupsAttrHelper groups(from->getContext());
  if (auto runs = groups.getAttr(from))
    groups.setAttr(to, runs);
}

LogicalResult distopt::autodiff::emitGradient(GradEmitter &e, Operation *op,
                                              ArrayRef<Value> dys) {
  OpBuilder &b = e.b;
  Location loc = op->getLoc();
  Value dy = dys.empty() ? Value() : dys[0];
  auto unsupported = [&]() {
    return op->emitOpError()
           << "is not differentiable: it lies on the path from the weights "
              "to the loss and autodiff has no gradient rule for it; replace "
              "it with differentiable graph ops or keep it off that path";
  };
  if (isa<g::OpaqueOp>(op))
    return op->emitOpError()
           << "(ONNX '" << cast<g::OpaqueOp>(op).getOpType()
           << "') is opaque and not differentiable, but it lies on the path "
              "from the weights to the loss; "
           << opaqueAdvice(cast<g::OpaqueOp>(op).getOpType())
           << ", or freeze the weights before it (freeze=GLOB)";
  if (std::optional<LogicalResult> r = dataGrad(e, op, dys))
    return *r;
  if (std::optional<LogicalResult> r = scatterGrad(e, op, dy))
    return *r;
  return TypeSwitch<Operation *, LogicalResult>(op)
      .Case<g::MatmulOp>([&](g::MatmulOp m) { return matmulGrad(e, m, dy); })
      .Case<g::ConvOp>([&](g::ConvOp c) { return convGrad(e, c, dy); })
      .Case<g::ConvGradInputOp>(
          [&](g::ConvGradInputOp c) { return convTransposeGrad(e, c, dy); })
      .Case<g::ReduceOp>([&](g::ReduceOp r) { return reduceGrad(e, r, dy); })
      .Case<g::UnaryOp>([&](g::UnaryOp u) -> LogicalResult {
        if (u.getKind() == g::UnaryKind::Not ||
            u.getKind() == g::UnaryKind::IsNaN ||
            u.getKind() == g::UnaryKind::IsInf)
          return unsupported();
        e.give(u.getInput(), [&]() -> Value {
          return g::UnaryGradOp::create(b, loc, TypeRange{u.getType()},
                                        ValueRange{u.getInput(), dy},
                                        inherentAttrs(u));
        });
        return success();
      })
      .Case<g::BinaryOp>([&](g::BinaryOp bo) { return binaryGrad(e, bo, dy); })
      .Case<g::WhereOp>([&](g::WhereOp w) {
        Value zero = scalar(b, loc, tensorOf(dy).getElementType(), 0.0);
        e.give(w.getLhs(), [&] {
          return sumToShape(b, loc, where(b, loc, w.getCondition(), dy, zero),
                            tensorOf(w.getLhs()));
        });
        e.give(w.getRhs(), [&] {
          return sumToShape(b, loc, where(b, loc, w.getCondition(), zero, dy),
                            tensorOf(w.getRhs()));
        });
        return success();
      })
      .Case<g::ClipOp>([&](g::ClipOp c) {
        e.give(c.getInput(), [&]() -> Value {
          Type elt = tensorOf(dy).getElementType();
          Value zero = scalar(b, loc, elt, 0.0), d = dy;
          if (auto lo = c.getMin())
            d = where(b, loc,
                      binary(b, loc, g::BinaryKind::Less, c.getInput(),
                             scalar(b, loc, elt, lo->convertToDouble())),
                      zero, d);
          if (auto hi = c.getMax())
            d = where(b, loc,
                      binary(b, loc, g::BinaryKind::Greater, c.getInput(),
                             scalar(b, loc, elt, hi->convertToDouble())),
                      zero, d);
          return d;
        });
        return success();
      })
      .Case<g::CastOp>([&](g::CastOp c) {
        e.give(c.getInput(), [&]() -> Value {
          return g::CastOp::create(b, loc, c.getInput().getType(), dy);
        });
        return success();
      })
      .Case<g::DropoutOp>([&](g::DropoutOp d) -> LogicalResult {
        if (d.getRatio().convertToDouble() != 0)
          return d.emitOpError("training dropout must be rewritten to a "
                               "graph.dropout_mask multiply before autodiff");
        e.give(d.getInput(), [&] { return dy; });
        return success();
      })
      .Case<g::SoftmaxOp>([&](g::SoftmaxOp s) {
        e.give(s.getInput(), [&]() -> Value {
          return g::SoftmaxGradOp::create(b, loc, TypeRange{s.getType()},
                                          ValueRange{s.getResult(), dy},
                                          inherentAttrs(s));
        });
        return success();
      })
      .Case<g::LayerNormOp>([&](g::LayerNormOp n) {
        return normGrad(e, n, "layer", n.getInput(), n.getScale(), n.getBias(),
                        dy, n.getAxis(), n.getEpsilon().convertToDouble());
      })
      .Case<g::RMSNormOp>([&](g::RMSNormOp n) {
        return normGrad(e, n, "rms", n.getInput(), n.getScale(), n.getBias(),
                        dy, n.getAxis(), n.getEpsilon().convertToDouble());
      })
      .Case<g::BatchNormOp>([&](g::BatchNormOp n) -> LogicalResult {
        if (!n.getTraining())
          return n.emitOpError("inference-form batch_norm cannot be trained; "
                               "autodiff converts it to the training form "
                               "first");
        if (!dy)
          return success();
        return normGrad(e, n, "batch", n.getInput(), n.getScale(), n.getBias(),
                        dy, 1, n.getEpsilon().convertToDouble());
      })
      .Case<g::PoolOp>([&](g::PoolOp p) { return poolGrad(e, p, dy); })
      // Tensor parallelism (dist-tensor-parallel), Megatron's f and g: the
      // ranks' input gradients of a column-parallel region are summed; the
      // sum after a row-parallel matmul passes its (replicated) gradient.
      .Case<dist::TpCopyOp>([&](dist::TpCopyOp c) {
        e.give(c.getInput(), [&]() -> Value {
          auto sum = dist::AllReduceOp::create(
              b, loc, dy.getType(), dy,
              dist::ReductionKindAttr::get(b.getContext(),
                                           dist::ReductionKind::sum),
              c.getGroupAttr());
          copyRunGroups(c, sum);
          return sum;
        });
        return success();
      })
      // Sequence parallelism (dist-tensor-parallel with sp). A whole value's
      // gradient is the same on every tensor rank (partial ones are summed
      // where they become whole, at a dist.tp_copy), so a gather's input
      // gradient is the rank's shard of it; a reduce-scatter's shards each
      // came from every rank's whole input, and a slice's from one whole
      // value, so both pass back the gathered shard gradients.
      .Case<dist::AllGatherOp>([&](dist::AllGatherOp g) {
        e.give(g.getInput(), [&]() -> Value {
          auto slice =
              dist::AllSliceOp::create(b, loc, g.getInput().getType(), dy,
                                       g.getAxisAttr(), g.getGroupAttr());
          dist::setBalanced(slice, dist::isBalanced(g));
          copyRunGroups(g, slice);
          return slice;
        });
        return success();
      })
      .Case<dist::ReduceScatterOp, dist::AllSliceOp>(
          [&](Operation *op) -> LogicalResult {
            auto rs = dyn_cast<dist::ReduceScatterOp>(op);
            if (rs && rs.getKind() != dist::ReductionKind::sum)
              return unsupported();
            Value in = op->getOperand(0);
            e.give(in, [&]() -> Value {
              auto gather = dist::AllGatherOp::create(
                  b, loc, in.getType(), dy,
                  op->getAttrOfType<IntegerAttr>("axis"),
                  op->getAttrOfType<DenseI64ArrayAttr>("group"));
              dist::setBalanced(gather, dist::isBalanced(op));
              copyRunGroups(op, gather);
              return gather;
            });
            return success();
          })
      // An all-to-all is a permutation of the group's pieces: its adjoint
      // sends each piece back, the all-to-all with the axes swapped.
      .Case<dist::AllToAllOp>([&](dist::AllToAllOp a) {
        e.give(a.getInput(), [&]() -> Value {
          auto back = dist::AllToAllOp::create(
              b, loc, a.getInput().getType(), dy, a.getConcatAxisAttr(),
              a.getSplitAxisAttr(), a.getGroupAttr());
          copyRunGroups(a, back);
          return back;
        });
        return success();
      })
      // Ring attention (dist-context-parallel): one backward ring gives the
      // query's, key's and value's gradients; the mask gets none.
      .Case<dist::RingAttentionOp>(
          [&](dist::RingAttentionOp r) -> LogicalResult {
            if (dys.size() > 1 && dys[1])
              return r.emitOpError(
                  "has its log-sum-exp on the path to the loss; only its "
                  "result is differentiable");
            if (r.getMask() && e.wants(r.getMask()))
              return r.emitOpError(
                  "has a mask computed from trained weights, which gets no "
                  "gradient through the ring: keep the mask off the "
                  "weights' path (plan with dist-context-parallel=ring=0)");
            if (!dy)
              return success();
            dist::RingAttentionGradOp grad;
            auto ringGrad = [&]() {
              if (!grad) {
                grad = dist::RingAttentionGradOp::create(
                    b, loc, r.getQuery().getType(), r.getKey().getType(),
                    r.getValue().getType(), r.getQuery(), r.getKey(),
                    r.getValue(), r.getResult(), r.getLse(), dy, r.getMask(),
                    r.getScaleAttr(), r.getGroupAttr());
                dist::setBalanced(grad, dist::isBalanced(r));
                copyRunGroups(r, grad);
              }
              return grad;
            };
            e.give(r.getQuery(),
                   [&]() -> Value { return ringGrad().getQueryGrad(); });
            e.give(r.getKey(),
                   [&]() -> Value { return ringGrad().getKeyGrad(); });
            e.give(r.getValue(),
                   [&]() -> Value { return ringGrad().getValueGrad(); });
            return success();
          })
      .Case<dist::AllReduceOp>([&](dist::AllReduceOp a) -> LogicalResult {
        if (a.getKind() != dist::ReductionKind::sum)
          return unsupported();
        e.give(a.getInput(), [&] { return dy; });
        return success();
      })
      .Case<g::SoftmaxCrossEntropyOp>([&](g::SoftmaxCrossEntropyOp l) {
        e.give(l.getLogits(), [&]() -> Value {
          return g::SoftmaxCrossEntropyGradOp::create(
              b, loc, TypeRange{l.getLogits().getType()},
              ValueRange{l.getLogits(), l.getLabels(), dy}, inherentAttrs(l));
        });
        return success();
      })
      .Default([&](Operation *) { return unsupported(); });
}
