//===- GradRulesData.cpp - Gradient rules of data movement ------*- C++ -*-===//
//
// Part of DistOpt. Gradient rules of views and data movement: reshape,
// flatten, expand, transpose, strided slices, concat, split, pads of every
// mode, trilu, cumsum, gather, gather_nd, top_k and embedding (the
// scatters are in GradRulesScatter.cpp).
// Each moves dy back to where the forward op read it (scatter-adds for the
// index-driven ops, a running sum the other way for cumsum), so none of
// them computes anything beyond sums. Dispatched from emitGradient in
// GradRules.cpp.
//
//===----------------------------------------------------------------------===//
#include "passes/Autodiff/GradBuilder.h"
#include "passes/Autodiff/GradRulesInternal.h"

#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/GraphShapeUtils.h"

#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>

using namespace mlir;
using namespace distopt;
using namespace distopt::autodiff;
namespace g = distopt::graph;

//===----------------------------------------------------------------------===//
// Slices
//===----------------------------------------------------------------------===//

/// Gradient of a strided slice: along each sliced axis, dy is spread back
/// to the positions it was read from. A negative step is a positive one
/// over reversed dy; a step s > 1 interleaves s - 1 zeros after each
/// element (reshape to [.., n, 1, ..], pad to [.., n, s, ..], reshape to
/// [.., n*s, ..]); one constant pad (or a trim of the interleaved tail)
/// then places the result at its start.
static LogicalResult sliceGrad(GradEmitter &e, g::SliceOp op, Value dy) {
  auto xt = tensorOf(op.getInput());
  int64_t rank = xt.getRank();
  e.give(op.getInput(), [&]() -> Value {
    OpBuilder &b = e.b;
    Location loc = op.getLoc();
    Type elt = xt.getElementType();
    if (tensorOf(dy).getNumElements() == 0)
      return g::ConstantOp::create(
          b, loc, xt, DenseElementsAttr::get(xt, b.getFloatAttr(elt, 0.0)));
    SmallVector<int64_t> pads(2 * rank, 0);
    Value d = dy;
    for (auto [i, axis] : llvm::enumerate(op.getAxes())) {
      int64_t ax = *g::normalizeAxis(axis, rank), dim = xt.getDimSize(ax);
      int64_t step = op.getSteps()[i], start = op.getStarts()[i];
      int64_t n = tensorOf(d).getDimSize(ax);
      if (start < 0)
        start += dim;
      start = step > 0 ? std::clamp<int64_t>(start, 0, dim)
                       : std::clamp<int64_t>(start, 0, dim - 1);
      SmallVector<int64_t> shape(tensorOf(d).getShape());
      if (step < 0) {
        // Reversed dy: element k of the slice read x[start + k*step].
        d = g::SliceOp::create(
            b, loc, tensorOf(d), d, b.getDenseI64ArrayAttr({n - 1}),
            b.getDenseI64ArrayAttr({-n - 1}), b.getDenseI64ArrayAttr({ax}),
            b.getDenseI64ArrayAttr({-1}));
        start += (n - 1) * step;
        step = -step;
      }
      if (step > 1) {
        SmallVector<int64_t> split(shape);
        split.insert(split.begin() + ax + 1, 1);
        d = reshape(b, loc, d, split);
        SmallVector<int64_t> spread(split), gap(2 * (rank + 1), 0);
        spread[ax + 1] = step;
        gap[rank + 1 + ax + 1] = step - 1;
        d = g::PadOp::create(b, loc, RankedTensorType::get(spread, elt), d, gap,
                             g::PadMode::Constant, llvm::APFloat(0.0));
        shape[ax] = n * step;
        d = reshape(b, loc, d, shape);
      }
      int64_t length = shape[ax], tail = dim - start - length;
      if (tail < 0) {
        // The interleaved zeros after the last element run past the end.
        SmallVector<int64_t> trimmed(shape);
        trimmed[ax] = length + tail;
        d = g::SliceOp::create(b, loc, RankedTensorType::get(trimmed, elt), d,
                               b.getDenseI64ArrayAttr({0}),
                               b.getDenseI64ArrayAttr({length + tail}),
                               b.getDenseI64ArrayAttr({ax}),
                               b.getDenseI64ArrayAttr({1}));
        tail = 0;
      }
      pads[ax] = start;
      pads[rank + ax] = tail;
    }
    if (llvm::all_of(pads, [](int64_t p) { return p == 0; }))
      return d;
    return g::PadOp::create(b, loc, xt, d, pads, g::PadMode::Constant,
                            llvm::APFloat(0.0));
  });
  return success();
}

//===----------------------------------------------------------------------===//
// Pads
//===----------------------------------------------------------------------===//

/// `v[begin:end]` along `axis`.
static Value sliceAxis(OpBuilder &b, Location loc, Value v, int64_t axis,
                       int64_t begin, int64_t end) {
  SmallVector<int64_t> shape(tensorOf(v).getShape());
  shape[axis] = end - begin;
  return g::SliceOp::create(
      b, loc, RankedTensorType::get(shape, tensorOf(v).getElementType()), v,
      b.getDenseI64ArrayAttr({begin}), b.getDenseI64ArrayAttr({end}),
      b.getDenseI64ArrayAttr({axis}), b.getDenseI64ArrayAttr({1}));
}

/// `v` reversed along `axis` (a step -1 slice through index 0).
static Value reverseAxis(OpBuilder &b, Location loc, Value v, int64_t axis) {
  int64_t n = tensorOf(v).getDimSize(axis);
  return g::SliceOp::create(
      b, loc, v.getType(), v, b.getDenseI64ArrayAttr({n - 1}),
      b.getDenseI64ArrayAttr({-n - 1}), b.getDenseI64ArrayAttr({axis}),
      b.getDenseI64ArrayAttr({-1}));
}

/// `v` summed along `axis`, kept as a size-1 dimension.
static Value sumAxis(OpBuilder &b, Location loc, Value v, int64_t axis) {
  auto t = tensorOf(v);
  SmallVector<int64_t> shape(t.getShape());
  shape[axis] = 1;
  return g::ReduceOp::create(
      b, loc, RankedTensorType::get(shape, t.getElementType()),
      g::ReduceKind::Sum, v, ArrayRef<int64_t>{axis}, true);
}

/// `v` with `before` and `after` zeros along `axis`.
static Value zeroPadAxis(OpBuilder &b, Location loc, Value v, int64_t axis,
                         int64_t before, int64_t after) {
  auto t = tensorOf(v);
  int64_t rank = t.getRank();
  SmallVector<int64_t> pads(2 * rank, 0), shape(t.getShape());
  pads[axis] = before;
  pads[rank + axis] = after;
  shape[axis] += before + after;
  return g::PadOp::create(b, loc,
                          RankedTensorType::get(shape, t.getElementType()), v,
                          pads, g::PadMode::Constant, llvm::APFloat(0.0));
}

/// Gradient of edge / reflect / wrap padding. Such a pad is a 1-D pad per
/// axis, so its gradient folds one axis at a time: the centre of dy, plus
/// each border added back where it was read from (edge: its sum onto the
/// first/last element; reflect: reversed, onto x[1..b] / x[n-1-e..n-2];
/// wrap: onto the last b / first e elements).
static std::optional<LogicalResult> borderPadGrad(GradEmitter &e, g::PadOp p,
                                                  Value dy) {
  auto xt = tensorOf(p.getInput());
  int64_t rank = xt.getRank();
  ArrayRef<int64_t> pads = p.getPads();
  g::PadMode mode = p.getMode();
  for (int64_t a = 0; a < rank; ++a) {
    // Edge pads may be any length; reflect reads x[1..n-1], wrap x[0..n).
    int64_t n = xt.getDimSize(a), limit = INT64_MAX;
    if (mode == g::PadMode::Reflect)
      limit = n - 1;
    else if (mode == g::PadMode::Wrap)
      limit = n;
    for (int64_t pad : {pads[a], pads[rank + a]})
      if (pad < 0 || pad > limit)
        return p.emitOpError("autodiff supports '")
               << g::stringifyPadMode(mode)
               << "' padding with non-negative pads"
               << (limit == INT64_MAX ? std::string()
                                      : " up to " + std::to_string(limit))
               << " only (axis " << a << " pads " << pad
               << "); pad in steps or keep it off the path from the weights "
                  "to the loss";
  }
  e.give(p.getInput(), [&]() -> Value {
    OpBuilder &b = e.b;
    Location loc = p.getLoc();
    Value d = dy;
    for (int64_t a = 0; a < rank; ++a) {
      int64_t n = xt.getDimSize(a), lo = pads[a], hi = pads[rank + a];
      if (lo == 0 && hi == 0)
        continue;
      Value acc = sliceAxis(b, loc, d, a, lo, lo + n);
      auto add = [&](Value part, int64_t before) {
        int64_t len = tensorOf(part).getDimSize(a);
        acc = binary(b, loc, g::BinaryKind::Add, acc,
                     zeroPadAxis(b, loc, part, a, before, n - before - len));
      };
      if (lo > 0) {
        Value left = sliceAxis(b, loc, d, a, 0, lo);
        if (mode == g::PadMode::Edge)
          add(sumAxis(b, loc, left, a), 0);
        else if (mode == g::PadMode::Reflect)
          add(reverseAxis(b, loc, left, a), 1);
        else
          add(left, n - lo);
      }
      if (hi > 0) {
        Value right = sliceAxis(b, loc, d, a, lo + n, lo + n + hi);
        if (mode == g::PadMode::Edge)
          add(sumAxis(b, loc, right, a), n - 1);
        else if (mode == g::PadMode::Reflect)
          add(reverseAxis(b, loc, right, a), n - 1 - hi);
        else
          add(right, 0);
      }
      d = acc;
    }
    return d;
  });
  return success();
}

//===----------------------------------------------------------------------===//
// Dispatch
//===----------------------------------------------------------------------===//

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

/// Gradient of graph.gather_nd with respect to its data: dy scatter-added
/// at the positions the index tuples read. The tuples become row numbers
/// of the data flattened to [batch x indexed dims, rest] (each index
/// wrapped when negative, times its stride, summed, plus its batch's first
/// row), and one graph.scatter_add along axis 0 (an embedding gradient)
/// adds dy's rows there.
static Value gatherNDGrad(OpBuilder &b, Location loc, g::GatherNDOp op,
                          Value dy) {
  auto dt = tensorOf(op.getData()), it = tensorOf(op.getIndices());
  ArrayRef<int64_t> dShape = dt.getShape(), iShape = it.getShape();
  int64_t bd = static_cast<int64_t>(op.getBatchDims()), k = iShape.back();
  int64_t iRank = iShape.size();
  auto product = [](ArrayRef<int64_t> dims) {
    int64_t p = 1;
    for (int64_t d : dims)
      p *= d;
    return p;
  };
  int64_t batches = product(dShape.take_front(bd)),
          rows = product(dShape.slice(bd, k)),
          rest = product(dShape.drop_front(bd + k)),
          tuples = product(iShape.drop_back());
  Type ie = it.getElementType();
  auto ints = [&](ArrayRef<int64_t> shape, ArrayRef<int64_t> values) -> Value {
    auto type = RankedTensorType::get(shape, ie);
    SmallVector<APInt> v;
    for (int64_t x : values)
      v.push_back(APInt(ie.getIntOrFloatBitWidth(), x, /*isSigned=*/true));
    return g::ConstantOp::create(b, loc, type, DenseElementsAttr::get(type, v));
  };
  SmallVector<int64_t> dims(dShape.slice(bd, k)), strides(k, 1);
  for (int64_t j = k - 2; j >= 0; --j)
    strides[j] = strides[j + 1] * dims[j + 1];
  Value idx = op.getIndices();
  Value negative =
      g::BinaryOp::create(b, loc, RankedTensorType::get(iShape, b.getI1Type()),
                          g::BinaryKind::Less, idx, ints({}, {0}), false);
  Value wrapped = g::BinaryOp::create(b, loc, it, g::BinaryKind::Add, idx,
                                      ints({k}, dims), false);
  idx = g::WhereOp::create(b, loc, it, negative, wrapped, idx);
  idx = g::BinaryOp::create(b, loc, it, g::BinaryKind::Mul, idx,
                            ints({k}, strides), false);
  SmallVector<int64_t> tupleShape(iShape.drop_back());
  Value row = g::ReduceOp::create(
      b, loc, RankedTensorType::get(tupleShape, ie),
      g::ReduceKindAttr::get(b.getContext(), g::ReduceKind::Sum), idx,
      b.getDenseI64ArrayAttr({iRank - 1}), b.getBoolAttr(false),
      b.getBoolAttr(false));
  if (bd > 0) {
    // Batch c's tuples index rows c * rows ...
    Value first =
        g::IotaOp::create(b, loc, RankedTensorType::get({batches}, ie),
                          b.getIntegerAttr(ie, 0), b.getIntegerAttr(ie, rows));
    SmallVector<int64_t> shape(dShape.take_front(bd));
    shape.append(iRank - 1 - bd, 1);
    first =
        g::ReshapeOp::create(b, loc, RankedTensorType::get(shape, ie), first);
    row = g::BinaryOp::create(b, loc, RankedTensorType::get(tupleShape, ie),
                              g::BinaryKind::Add, row, first, false);
  }
  row = g::ReshapeOp::create(b, loc, RankedTensorType::get({tuples}, ie), row);
  Type et = dt.getElementType();
  Value grad = g::ReshapeOp::create(
      b, loc, RankedTensorType::get({tuples, rest}, et), dy);
  Value table = g::ScatterAddOp::create(
      b, loc, RankedTensorType::get({batches * rows, rest}, et), row, grad,
      b.getI64IntegerAttr(0));
  return g::ReshapeOp::create(b, loc, dt, table);
}

std::optional<LogicalResult> distopt::autodiff::dataGrad(GradEmitter &e,
                                                         Operation *op,
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
        if (p.getMode() != g::PadMode::Constant)
          return borderPadGrad(e, p, dy);
        // dx: dy without the added border (a slice) and with zeros where
        // negative pads cropped x (a pad).
        auto xt = tensorOf(p.getInput());
        int64_t rank = xt.getRank();
        ArrayRef<int64_t> pads = p.getPads();
        e.give(p.getInput(), [&]() -> Value {
          Value d = dy;
          SmallVector<int64_t> starts, ends, axes, steps, shape, back(2 * rank);
          for (int64_t i = 0; i < rank; ++i) {
            int64_t lo = std::max<int64_t>(pads[i], 0),
                    hi = std::max<int64_t>(pads[rank + i], 0);
            int64_t len = tensorOf(dy).getDimSize(i) - lo - hi;
            starts.push_back(lo);
            ends.push_back(lo + len);
            axes.push_back(i);
            steps.push_back(1);
            shape.push_back(len);
            back[i] = std::max<int64_t>(-pads[i], 0);
            back[rank + i] = std::max<int64_t>(-pads[rank + i], 0);
          }
          if (ArrayRef<int64_t>(shape) != tensorOf(dy).getShape())
            d = g::SliceOp::create(
                b, loc, RankedTensorType::get(shape, xt.getElementType()), d,
                b.getDenseI64ArrayAttr(starts), b.getDenseI64ArrayAttr(ends),
                b.getDenseI64ArrayAttr(axes), b.getDenseI64ArrayAttr(steps));
          if (llvm::any_of(back, [](int64_t v) { return v != 0; }))
            d = g::PadOp::create(b, loc, xt, d, back, g::PadMode::Constant,
                                 llvm::APFloat(0.0));
          return d;
        });
        return success();
      })
      .Case<g::TriluOp>([&](g::TriluOp t) {
        e.give(t.getInput(), [&]() -> Value {
          SmallVector<Value> operands{dy};
          if (Value d = t.getDiagonal())
            operands.push_back(d);
          return g::TriluOp::create(b, loc, TypeRange{t.getType()}, operands,
                                    inherentAttrs(t));
        });
        return success();
      })
      .Case<g::CumSumOp>([&](g::CumSumOp c) {
        // x_i feeds y_j for every j at or after i (before it with
        // reverse), so dx is the running sum of dy the other way.
        e.give(c.getInput(), [&]() -> Value {
          return g::CumSumOp::create(b, loc, c.getType(), dy, c.getAxisAttr(),
                                     c.getExclusiveAttr(),
                                     b.getBoolAttr(!c.getReverse()));
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
      .Case<g::GatherElementsOp>([&](g::GatherElementsOp ga) {
        e.give(ga.getData(), [&]() -> Value {
          return g::ScatterAddOp::create(b, loc, ga.getData().getType(),
                                         ga.getIndices(), dy, ga.getAxisAttr(),
                                         b.getUnitAttr());
        });
        return success();
      })
      .Case<g::TopKOp>([&](g::TopKOp top) -> Result {
        // The values are x read at the indices (a gather_elements): their
        // gradient goes back there. The indices carry none.
        if (!dy)
          return success();
        e.give(top.getInput(), [&]() -> Value {
          return g::ScatterAddOp::create(b, loc, top.getInput().getType(),
                                         top.getIndices(), dy,
                                         top.getAxisAttr(), b.getUnitAttr());
        });
        return success();
      })
      .Case<g::GatherNDOp>([&](g::GatherNDOp ga) {
        e.give(ga.getData(),
               [&]() -> Value { return gatherNDGrad(b, loc, ga, dy); });
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
