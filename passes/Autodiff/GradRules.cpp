//===- GradRules.cpp - Per-op gradient rules --------------------*- C++ -*-===//
//
// Part of DistOpt. One rule per differentiable graph op. Contractions get
// one op per operand gradient (a `graph.matmul` for dX and another for dW,
// `graph.conv_grad_input` and `graph.conv_grad_weight`) so input and weight
// gradients stay separable; broadcast operands get their gradient summed
// back to their shape.
//
//===----------------------------------------------------------------------===//
#include "passes/Autodiff/GradRules.h"
#include "passes/Autodiff/GradBuilder.h"

#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/GraphShapeUtils.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace distopt;
using namespace distopt::autodiff;
namespace g = distopt::graph;

//===----------------------------------------------------------------------===//
// Small builders
//===----------------------------------------------------------------------===//

static RankedTensorType tensorOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// The op's inherent attributes (no discardable `graph.*` ones), to copy
/// onto a gradient op with the same attribute names.
static SmallVector<NamedAttribute> inherentAttrs(Operation *op) {
  SmallVector<NamedAttribute> attrs;
  for (NamedAttribute a : op->getAttrs())
    if (!a.getName().getValue().contains('.'))
      attrs.push_back(a);
  return attrs;
}

static Value scalar(OpBuilder &b, Location loc, Type elt, double v) {
  auto type = RankedTensorType::get({}, elt);
  return g::ConstantOp::create(
      b, loc, type, DenseElementsAttr::get(type, b.getFloatAttr(elt, v)));
}

static bool isComparison(g::BinaryKind k) {
  return k == g::BinaryKind::Less || k == g::BinaryKind::Greater ||
         k == g::BinaryKind::GreaterEqual || k == g::BinaryKind::LessEqual ||
         k == g::BinaryKind::Equal || k == g::BinaryKind::Or ||
         k == g::BinaryKind::And;
}

static Value binary(OpBuilder &b, Location loc, g::BinaryKind kind, Value lhs,
                    Value rhs) {
  auto l = tensorOf(lhs), r = tensorOf(rhs);
  SmallVector<int64_t> shape = *g::broadcastShapes(l.getShape(), r.getShape());
  Type elt = isComparison(kind) ? b.getI1Type() : l.getElementType();
  return g::BinaryOp::create(b, loc, RankedTensorType::get(shape, elt), kind,
                             lhs, rhs);
}

static Value unary(OpBuilder &b, Location loc, g::UnaryKind kind, Value x) {
  return g::UnaryOp::create(b, loc, x.getType(), kind, x, FloatAttr(),
                            FloatAttr());
}

static Value where(OpBuilder &b, Location loc, Value cond, Value lhs,
                   Value rhs) {
  auto shape =
      *g::broadcastShapes(tensorOf(cond).getShape(), tensorOf(lhs).getShape());
  shape = *g::broadcastShapes(shape, tensorOf(rhs).getShape());
  return g::WhereOp::create(
      b, loc, RankedTensorType::get(shape, tensorOf(lhs).getElementType()),
      cond, lhs, rhs);
}

static Value reshape(OpBuilder &b, Location loc, Value v,
                     ArrayRef<int64_t> shape) {
  auto type = RankedTensorType::get(shape, tensorOf(v).getElementType());
  if (type == v.getType())
    return v;
  return g::ReshapeOp::create(b, loc, type, v);
}

/// `dy` broadcast back to `x`'s shape after a reduction over `axes`.
static Value broadcastBack(OpBuilder &b, Location loc, Value dy,
                           RankedTensorType x, ArrayRef<int64_t> axes) {
  SmallVector<int64_t> kept(x.getShape());
  for (int64_t a : axes)
    kept[a] = 1;
  Value v = reshape(b, loc, dy, kept);
  auto full =
      RankedTensorType::get(x.getShape(), tensorOf(dy).getElementType());
  return g::ExpandOp::create(b, loc, full, v);
}

static Value matmul(OpBuilder &b, Location loc, Value lhs, Value rhs, bool tl,
                    bool tr, double alpha) {
  std::string error;
  auto shape = g::inferMatmulShape(tensorOf(lhs).getShape(),
                                   tensorOf(rhs).getShape(), tl, tr, error);
  auto type = RankedTensorType::get(*shape, tensorOf(lhs).getElementType());
  SmallVector<NamedAttribute> attrs;
  if (tl)
    attrs.push_back(b.getNamedAttr("transpose_lhs", b.getBoolAttr(true)));
  if (tr)
    attrs.push_back(b.getNamedAttr("transpose_rhs", b.getBoolAttr(true)));
  if (alpha != 1.0)
    attrs.push_back(b.getNamedAttr("alpha", b.getF64FloatAttr(alpha)));
  return g::MatmulOp::create(b, loc, TypeRange{type}, ValueRange{lhs, rhs},
                             attrs);
}

//===----------------------------------------------------------------------===//
// Rules
//===----------------------------------------------------------------------===//

static LogicalResult matmulGrad(GradEmitter &e, g::MatmulOp op, Value dy) {
  OpBuilder &b = e.b;
  Location loc = op.getLoc();
  Value a = op.getLhs(), w = op.getRhs();
  auto at = tensorOf(a), wt = tensorOf(w);
  if (at.getRank() < 2 || wt.getRank() < 2)
    return op.emitOpError("autodiff supports matmul operands of rank >= 2; "
                          "reshape the rank-1 operand to a matrix first");
  bool tl = op.getTransposeLhs(), tr = op.getTransposeRhs();
  double alpha = op.getAlpha().convertToDouble();
  e.give(a, [&]() -> Value {
    Value d = tl ? matmul(b, loc, w, dy, tr, true, alpha)
                 : matmul(b, loc, dy, w, false, !tr, alpha);
    return sumToShape(b, loc, d, at);
  });
  e.give(w, [&]() -> Value {
    // A linear layer (2-D right operand, batched left operand): fold the
    // batch into the rows so the weight gradient is one 2-D product.
    if (wt.getRank() == 2 && at.getRank() > 2 && !tl) {
      int64_t k = at.getShape().back(), n = tensorOf(dy).getShape().back();
      int64_t rows = tensorOf(dy).getNumElements() / n;
      Value a2 = reshape(b, loc, a, {rows, k});
      Value dy2 = reshape(b, loc, dy, {rows, n});
      return tr ? matmul(b, loc, dy2, a2, true, false, alpha)
                : matmul(b, loc, a2, dy2, true, false, alpha);
    }
    Value d = tr ? matmul(b, loc, dy, a, true, tl, alpha)
                 : matmul(b, loc, a, dy, !tl, false, alpha);
    return sumToShape(b, loc, d, wt);
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
    if (e.wants(rhs))
      return op.emitOpError("autodiff does not differentiate 'pow' with "
                            "respect to its exponent; make the exponent a "
                            "constant");
    e.give(lhs, [&] {
      Value one = scalar(b, loc, rt.getElementType(), 1.0);
      Value p = binary(b, loc, K::Pow, lhs, binary(b, loc, K::Sub, rhs, one));
      Value r = rhs;
      if (rt.getElementType() != lt.getElementType())
        r = g::CastOp::create(
            b, loc, RankedTensorType::get(rt.getShape(), lt.getElementType()),
            rhs);
      return sumToShape(b, loc, mul(mul(dy, r), p), lt);
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
    return op.emitOpError("'")
           << g::stringifyBinaryKind(op.getKind())
           << "' is not differentiable: autodiff cannot pass a gradient "
              "through it to the weights; keep it off the path from the "
              "weights to the loss";
  }
}

static LogicalResult reduceGrad(GradEmitter &e, g::ReduceOp op, Value dy) {
  OpBuilder &b = e.b;
  Location loc = op.getLoc();
  auto xt = tensorOf(op.getInput());
  SmallVector<int64_t> axes;
  for (int64_t a : op.getAxes())
    axes.push_back(*g::normalizeAxis(a, xt.getRank()));
  if (axes.empty())
    for (int64_t i = 0; i < xt.getRank(); ++i)
      axes.push_back(i);
  double count = 1;
  for (int64_t a : axes)
    count *= xt.getDimSize(a);
  switch (op.getKind()) {
  case g::ReduceKind::Sum:
  case g::ReduceKind::Mean:
  case g::ReduceKind::SumSquare:
    break;
  default:
    return op.emitOpError("reduction '")
           << g::stringifyReduceKind(op.getKind())
           << "' has no gradient rule (sum, mean and sum_square do)";
  }
  e.give(op.getInput(), [&]() -> Value {
    Value d = broadcastBack(b, loc, dy, xt, axes);
    Type elt = xt.getElementType();
    if (op.getKind() == g::ReduceKind::Mean)
      return binary(b, loc, g::BinaryKind::Mul, d,
                    scalar(b, loc, elt, 1 / count));
    if (op.getKind() == g::ReduceKind::SumSquare)
      return binary(b, loc, g::BinaryKind::Mul,
                    binary(b, loc, g::BinaryKind::Mul, d, op.getInput()),
                    scalar(b, loc, elt, 2.0));
    return d;
  });
  return success();
}

static LogicalResult sliceGrad(GradEmitter &e, g::SliceOp op, Value dy) {
  auto xt = tensorOf(op.getInput());
  if (llvm::any_of(op.getSteps(), [](int64_t s) { return s != 1; }))
    return op.emitOpError("autodiff supports slices with step 1 only");
  int64_t rank = xt.getRank();
  SmallVector<int64_t> pads(2 * rank, 0);
  for (auto [i, axis] : llvm::enumerate(op.getAxes())) {
    int64_t ax = *g::normalizeAxis(axis, rank), dim = xt.getDimSize(ax);
    int64_t start = op.getStarts()[i];
    start = std::clamp<int64_t>(start < 0 ? start + dim : start, 0, dim);
    pads[ax] = start;
    pads[rank + ax] = dim - start - tensorOf(dy).getDimSize(ax);
  }
  e.give(op.getInput(), [&]() -> Value {
    return g::PadOp::create(e.b, op.getLoc(), xt, dy, pads,
                            g::PadMode::Constant, llvm::APFloat(0.0));
  });
  return success();
}

/// Slice of `dy` along `axis` from `begin`, of `type`'s shape.
static Value sliceAlong(OpBuilder &b, Location loc, Value dy, int64_t axis,
                        int64_t begin, RankedTensorType type) {
  int64_t size = type.getDimSize(axis);
  return g::SliceOp::create(
      b, loc,
      RankedTensorType::get(type.getShape(), tensorOf(dy).getElementType()), dy,
      b.getDenseI64ArrayAttr({begin}), b.getDenseI64ArrayAttr({begin + size}),
      b.getDenseI64ArrayAttr({axis}), b.getDenseI64ArrayAttr({1}));
}

/// Gradients of views and data movement; nullopt for other ops.
static std::optional<LogicalResult> dataGrad(GradEmitter &e, Operation *op,
                                             ArrayRef<Value> dys) {
  OpBuilder &b = e.b;
  Location loc = op->getLoc();
  Value dy = dys.empty() ? Value() : dys[0];
  using Result = std::optional<LogicalResult>;
  return TypeSwitch<Operation *, Result>(op)
      .Case<g::ReshapeOp, g::FlattenOp>([&](Operation *) {
        e.give(op->getOperand(0), [&] {
          return reshape(b, loc, dy, tensorOf(op->getOperand(0)).getShape());
        });
        return success();
      })
      .Case<g::ExpandOp>([&](g::ExpandOp ex) {
        e.give(ex.getInput(),
               [&] { return sumToShape(b, loc, dy, tensorOf(ex.getInput())); });
        return success();
      })
      .Case<g::TransposeOp>([&](g::TransposeOp t) {
        SmallVector<int64_t> inverse(t.getPerm().size());
        for (auto [i, p] : llvm::enumerate(t.getPerm()))
          inverse[p] = i;
        e.give(t.getInput(), [&]() -> Value {
          return g::TransposeOp::create(b, loc, t.getInput().getType(), dy,
                                        b.getDenseI64ArrayAttr(inverse));
        });
        return success();
      })
      .Case<g::SliceOp>([&](g::SliceOp s) { return sliceGrad(e, s, dy); })
      .Case<g::ConcatOp>([&](g::ConcatOp c) {
        int64_t axis = *g::normalizeAxis(c.getAxis(), tensorOf(dy).getRank());
        int64_t offset = 0;
        for (Value in : c.getInputs()) {
          e.give(in, [&] {
            return sliceAlong(b, loc, dy, axis, offset, tensorOf(in));
          });
          offset += tensorOf(in).getDimSize(axis);
        }
        return success();
      })
      .Case<g::SplitOp>([&](g::SplitOp s) {
        e.give(s.getInput(), [&]() -> Value {
          SmallVector<Value> parts;
          for (auto [r, d] : llvm::zip(s.getResults(), dys)) {
            if (d) {
              parts.push_back(d);
              continue;
            }
            auto t = tensorOf(r);
            parts.push_back(g::ConstantOp::create(
                b, loc, t,
                DenseElementsAttr::get(
                    t, b.getFloatAttr(t.getElementType(), 0.0))));
          }
          return g::ConcatOp::create(b, loc, s.getInput().getType(), parts,
                                     s.getAxisAttr());
        });
        return success();
      })
      .Case<g::PadOp>([&](g::PadOp p) -> Result {
        if (p.getMode() != g::PadMode::Constant ||
            llvm::any_of(p.getPads(), [](int64_t v) { return v < 0; }))
          return p.emitOpError("autodiff supports constant padding with "
                               "non-negative pads only");
        auto xt = tensorOf(p.getInput());
        SmallVector<int64_t> starts, ends, axes, steps;
        for (int64_t i = 0; i < xt.getRank(); ++i) {
          starts.push_back(p.getPads()[i]);
          ends.push_back(p.getPads()[i] + xt.getDimSize(i));
          axes.push_back(i);
          steps.push_back(1);
        }
        e.give(p.getInput(), [&]() -> Value {
          return g::SliceOp::create(
              b, loc, xt, dy, b.getDenseI64ArrayAttr(starts),
              b.getDenseI64ArrayAttr(ends), b.getDenseI64ArrayAttr(axes),
              b.getDenseI64ArrayAttr(steps));
        });
        return success();
      })
      .Case<g::TriluOp>([&](g::TriluOp t) {
        e.give(t.getInput(), [&]() -> Value {
          return g::TriluOp::create(b, loc, TypeRange{t.getType()},
                                    ValueRange{dy}, inherentAttrs(t));
        });
        return success();
      })
      .Case<g::GatherOp>([&](g::GatherOp ga) {
        e.give(ga.getData(), [&]() -> Value {
          return g::ScatterAddOp::create(b, loc, ga.getData().getType(),
                                         ga.getIndices(), dy, ga.getAxisAttr());
        });
        return success();
      })
      .Case<g::EmbeddingOp>([&](g::EmbeddingOp em) {
        e.give(em.getTable(), [&]() -> Value {
          return g::ScatterAddOp::create(b, loc, em.getTable().getType(),
                                         em.getIndices(), dy,
                                         b.getI64IntegerAttr(0));
        });
        return success();
      })
      .Default([&](Operation *) { return std::nullopt; });
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
              "from the weights to the loss; teach the importer this op or "
              "keep it off that path";
  if (std::optional<LogicalResult> r = dataGrad(e, op, dys))
    return *r;
  return TypeSwitch<Operation *, LogicalResult>(op)
      .Case<g::MatmulOp>([&](g::MatmulOp m) { return matmulGrad(e, m, dy); })
      .Case<g::ConvOp>([&](g::ConvOp c) { return convGrad(e, c, dy); })
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
      .Case<g::PoolOp>([&](g::PoolOp p) -> LogicalResult {
        if (p.getKind() == g::PoolKind::L2)
          return p.emitOpError("'l2' pooling has no gradient rule");
        e.give(p.getInput(), [&]() -> Value {
          SmallVector<NamedAttribute> attrs = inherentAttrs(p);
          return g::PoolGradOp::create(b, loc,
                                       TypeRange{p.getInput().getType()},
                                       ValueRange{p.getInput(), dy}, attrs);
        });
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
