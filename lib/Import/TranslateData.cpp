//===- TranslateData.cpp - Data movement and constants ----------*- C++ -*-===//
//
// Part of DistOpt. ONNX Reshape/Squeeze/Unsqueeze/Flatten, Transpose,
// Split, Slice, Concat, Expand, Tile, nearest Resize/Upsample, Pad, Trilu,
// CumSum, Gather, Range and the constant makers to the graph dialect. Shape
// and axis operands must be constants by now (shape subgraphs are folded
// before translation); otherwise the node is opaque.
//
//===----------------------------------------------------------------------===//
#include "Translator.h"

#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/GraphShapeUtils.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace distopt::graph;
using onnx::NodeProto;

namespace distopt {
namespace import {

/// Reshape, Squeeze and Unsqueeze only change the shape, which shape
/// inference has already worked out.
static LogicalResult translateReshape(Translator &t, const NodeProto &node) {
  Value x = t.operand(node, 0);
  RankedTensorType type = t.resultType(node, 0);
  if (!x || !type)
    return failure();
  if (x.getType() == type)
    return t.setResult(node, x);
  return t.setResult(node, ReshapeOp::create(t.builder, t.loc(node), type, x));
}

static LogicalResult translateFlatten(Translator &t, const NodeProto &node) {
  Value x = t.operand(node, 0);
  RankedTensorType type = t.resultType(node, 0);
  if (!x || !type)
    return failure();
  return t.setResult(
      node, FlattenOp::create(t.builder, t.loc(node), type, x,
                              t.builder.getI64IntegerAttr(
                                  Translator::attrInt(node, "axis", 1))));
}

static LogicalResult translateTranspose(Translator &t, const NodeProto &node) {
  Value x = t.operand(node, 0);
  RankedTensorType type = t.resultType(node, 0);
  if (!x || !type)
    return failure();
  int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
  SmallVector<int64_t> perm;
  if (auto p = Translator::attrInts(node, "perm"))
    perm = *p;
  else
    for (int64_t i = rank - 1; i >= 0; --i)
      perm.push_back(i);
  return t.setResult(node,
                     TransposeOp::create(t.builder, t.loc(node), type, x,
                                         t.builder.getDenseI64ArrayAttr(perm)));
}

static LogicalResult translateSplit(Translator &t, const NodeProto &node) {
  Value x = t.operand(node, 0);
  if (!x)
    return failure();
  SmallVector<Type> types;
  for (int i = 0; i < node.output_size(); ++i) {
    RankedTensorType type = t.resultType(node, i);
    if (!type)
      return failure();
    types.push_back(type);
  }
  auto op = SplitOp::create(
      t.builder, t.loc(node), types, x,
      t.builder.getI64IntegerAttr(Translator::attrInt(node, "axis", 0)));
  for (int i = 0; i < node.output_size(); ++i)
    t.define(node.output(i), op.getResult(i));
  return success();
}

static LogicalResult translateSlice(Translator &t, const NodeProto &node) {
  Value x = t.operand(node, 0);
  RankedTensorType type = t.resultType(node, 0);
  if (!x || !type)
    return failure();
  SmallVector<int64_t> starts, ends, axes, steps;
  if (t.opset < 10) {
    starts =
        Translator::attrInts(node, "starts").value_or(SmallVector<int64_t>{});
    ends = Translator::attrInts(node, "ends").value_or(SmallVector<int64_t>{});
    axes = Translator::attrInts(node, "axes").value_or(SmallVector<int64_t>{});
  } else {
    const SmallTensor *s = t.constantInput(node, 1),
                      *e = t.constantInput(node, 2);
    if (!s || !e)
      return t.emitOpaque(node);
    starts.assign(s->ints.begin(), s->ints.end());
    ends.assign(e->ints.begin(), e->ints.end());
    for (int i : {3, 4}) {
      if (!Translator::hasInput(node, i))
        continue;
      const SmallTensor *c = t.constantInput(node, i);
      if (!c)
        return t.emitOpaque(node);
      (i == 3 ? axes : steps).assign(c->ints.begin(), c->ints.end());
    }
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(i);
  if (steps.empty())
    steps.assign(starts.size(), 1);
  OpBuilder &b = t.builder;
  return t.setResult(node, SliceOp::create(b, t.loc(node), type, x,
                                           b.getDenseI64ArrayAttr(starts),
                                           b.getDenseI64ArrayAttr(ends),
                                           b.getDenseI64ArrayAttr(axes),
                                           b.getDenseI64ArrayAttr(steps)));
}

static LogicalResult translateConcat(Translator &t, const NodeProto &node) {
  SmallVector<Value> inputs;
  for (int i = 0; i < node.input_size(); ++i) {
    Value v = t.operand(node, i);
    if (!v)
      return failure();
    inputs.push_back(v);
  }
  RankedTensorType type = t.resultType(node, 0);
  if (!type)
    return failure();
  return t.setResult(
      node, ConcatOp::create(t.builder, t.loc(node), type, inputs,
                             t.builder.getI64IntegerAttr(
                                 Translator::attrInt(node, "axis", 0))));
}

static LogicalResult translateExpand(Translator &t, const NodeProto &node) {
  Value x = t.operand(node, 0);
  RankedTensorType type = t.resultType(node, 0);
  if (!x || !type)
    return failure();
  if (x.getType() == type)
    return t.setResult(node, x);
  return t.setResult(node, ExpandOp::create(t.builder, t.loc(node), type, x));
}

/// Defines `node`'s result (`type`) as `x` with each dimension d repeated
/// factors[d] times through a broadcast: a unit dimension next to each
/// repeated one, broadcast to its factor, and the pair merged. With the
/// unit dimension before (`wholeBlocks`: Tile) the whole extent repeats
/// ([2,3] x [2,1]: [1,2,3] -> [2,2,3] -> [4,3]); after it, each element
/// does (nearest upsampling: [2,1,3] -> [2,2,3]). Expand's gradient sums
/// the copies, so these need no kernel or gradient of their own.
static LogicalResult repeatByBroadcast(Translator &t, const NodeProto &node,
                                       Value x, ArrayRef<int64_t> factors,
                                       RankedTensorType type,
                                       bool wholeBlocks) {
  auto inType = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> split, expanded;
  for (int64_t d = 0; d < inType.getRank(); ++d) {
    int64_t in = inType.getDimSize(d), r = factors[d];
    if (r < 1 || type.getDimSize(d) % r != 0 || type.getDimSize(d) / r != in)
      return t.emitOpaque(node);
    if (r != 1 && wholeBlocks) {
      split.push_back(1);
      expanded.push_back(r);
    }
    split.push_back(in);
    expanded.push_back(in);
    if (r != 1 && !wholeBlocks) {
      split.push_back(1);
      expanded.push_back(r);
    }
  }
  if (split.size() == size_t(inType.getRank()))
    return t.setResult(node, x);
  OpBuilder &b = t.builder;
  Location loc = t.loc(node);
  Value v = ReshapeOp::create(
      b, loc, RankedTensorType::get(split, inType.getElementType()), x);
  v = ExpandOp::create(
      b, loc, RankedTensorType::get(expanded, inType.getElementType()), v);
  return t.setResult(node, ReshapeOp::create(b, loc, type, v));
}

/// Tile with constant repeats.
static LogicalResult translateTile(Translator &t, const NodeProto &node) {
  Value x = t.operand(node, 0);
  RankedTensorType type = t.resultType(node, 0);
  if (!x || !type)
    return failure();
  const SmallTensor *repeats = t.constantInput(node, 1);
  auto inType = cast<RankedTensorType>(x.getType());
  if (!repeats || repeats->numElements() != inType.getRank() ||
      type.getRank() != inType.getRank())
    return t.emitOpaque(node);
  SmallVector<int64_t> factors;
  for (int64_t d = 0; d < inType.getRank(); ++d)
    factors.push_back(repeats->getInt(d));
  return repeatByBroadcast(t, node, x, factors, type, /*wholeBlocks=*/true);
}

namespace {
/// How ONNX Resize (and Upsample) maps output coordinates to input ones
/// and mixes the input elements around them.
struct ResizeMode {
  std::string mode, coords, nearest;
  double cubicA = -0.75;
  bool excludeOutside = false;
};
} // namespace

/// The coefficients of the `n` input elements around a source coordinate
/// whose fraction is `ratio` (in (0, 1]; onnx.reference's _*_coeffs).
static SmallVector<double, 4> resizeCoeffs(const ResizeMode &m, double ratio) {
  if (m.mode == "linear")
    return {1 - ratio, ratio};
  if (m.mode == "cubic") {
    double a = m.cubicA, r = ratio, s = 1 - ratio;
    return {((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a,
            ((a + 2) * r - (a + 3)) * r * r + 1,
            ((a + 2) * s - (a + 3)) * s * s + 1,
            ((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) - 4 * a};
  }
  bool up;
  if (ratio == std::floor(ratio))
    up = true;
  else if (m.nearest == "round_prefer_floor")
    up = ratio > 0.5;
  else if (m.nearest == "round_prefer_ceil")
    up = ratio >= 0.5;
  else
    up = m.nearest == "ceil";
  return {up ? 0.0 : 1.0, up ? 1.0 : 0.0};
}

/// The [out, in] matrix that Resize applies along one axis of `in`
/// elements scaled by `scale` to `out` (onnx.reference's
/// _interpolate_1d_with_x, row by row): each output element is the
/// coefficients' mix of the input elements nearest its source coordinate,
/// the input padded by its edge values. align_corners and
/// pytorch_half_pixel use the output's length `out`, as onnxruntime and
/// PyTorch do (onnx.reference uses scale x in, which differs when that is
/// not whole). None for a mode that is not a linear map of the input
/// (tf_crop_and_resize, unknown names).
static std::optional<std::vector<double>>
resizeMatrix(int64_t in, int64_t out, double scale, const ResizeMode &m) {
  double width = scale * in; // the real-valued output length
  std::vector<double> w(out * in, 0.0);
  for (int64_t o = 0; o < out; ++o) {
    double x;
    if (m.coords == "align_corners")
      x = out == 1 ? 0.0 : o * double(in - 1) / (out - 1);
    else if (m.coords == "asymmetric")
      x = o / scale;
    else if (m.coords == "pytorch_half_pixel")
      x = out == 1 ? -0.5 : (o + 0.5) / scale - 0.5;
    else if (m.coords == "half_pixel")
      x = (o + 0.5) / scale - 0.5;
    else if (m.coords == "half_pixel_symmetric")
      x = in / 2.0 * (1 - out / width) + (o + 0.5) / scale - 0.5;
    else if (m.coords == "tf_half_pixel_for_nn")
      x = (o + 0.5) / scale;
    else
      return std::nullopt;
    // Far outside the input (a vanishing scale): not an index.
    if (!std::isfinite(x) || std::abs(x) > double(in) + 1e6)
      return std::nullopt;
    double lower = std::floor(x);
    double ratio = x == lower ? 1.0 : x - lower;
    SmallVector<double, 4> c = resizeCoeffs(m, ratio);
    int64_t n = c.size(), pad = (n + 1) / 2, limit = in + 2 * pad;
    // The n indices of the padded input nearest x + pad, nearer first and
    // the smaller on ties, then in order.
    double xp = x + pad;
    SmallVector<int64_t, 8> near;
    for (int64_t i = std::max<int64_t>(0, (int64_t)std::floor(xp) - n);
         i <= std::min<int64_t>(limit - 1, (int64_t)std::floor(xp) + n); ++i)
      near.push_back(i);
    llvm::stable_sort(near, [&](int64_t a, int64_t b) {
      return std::abs(xp - a) < std::abs(xp - b);
    });
    near.resize(std::min<size_t>(near.size(), n));
    llvm::sort(near);
    if ((int64_t)near.size() != n)
      return std::nullopt;
    if (m.excludeOutside) {
      double sum = 0;
      for (int64_t k = 0; k < n; ++k) {
        int64_t src = near[k] - pad;
        if (src < 0 || src >= in)
          c[k] = 0;
        sum += c[k];
      }
      if (sum == 0)
        return std::nullopt;
      for (double &v : c)
        v /= sum;
    }
    for (int64_t k = 0; k < n; ++k) {
      int64_t src = std::clamp<int64_t>(near[k] - pad, 0, in - 1);
      w[o * in + src] += c[k];
    }
  }
  return w;
}

/// `v` resized along dimension `d` by the [out, in] matrix `w`: a matmul
/// with the constant, as W x over [A, in, B] (or x W^T when nothing
/// follows d).
static Value resizeAlong(OpBuilder &b, Location loc, Value v, int64_t d,
                         int64_t out, ArrayRef<double> w) {
  auto type = cast<RankedTensorType>(v.getType());
  Type et = type.getElementType();
  int64_t in = type.getDimSize(d), before = 1, after = 1;
  for (int64_t k = 0; k < d; ++k)
    before *= type.getDimSize(k);
  for (int64_t k = d + 1; k < type.getRank(); ++k)
    after *= type.getDimSize(k);
  bool last = after == 1;
  SmallVector<Attribute> values;
  for (int64_t r = 0; r < (last ? in : out); ++r)
    for (int64_t c = 0; c < (last ? out : in); ++c)
      values.push_back(
          b.getFloatAttr(et, last ? w[c * in + r] : w[r * in + c]));
  auto matType = last ? RankedTensorType::get({in, out}, et)
                      : RankedTensorType::get({out, in}, et);
  Value mat = ConstantOp::create(b, loc, matType,
                                 DenseElementsAttr::get(matType, values));
  SmallVector<int64_t> from{before, in}, to{before, out};
  if (!last) {
    from.push_back(after);
    to.push_back(after);
  }
  Value x = ReshapeOp::create(b, loc, RankedTensorType::get(from, et), v);
  Value y = MatmulOp::create(b, loc, RankedTensorType::get(to, et),
                             last ? x : mat, last ? mat : x, Value(),
                             b.getBoolAttr(false), b.getBoolAttr(false),
                             b.getF64FloatAttr(1.0), b.getF64FloatAttr(1.0));
  SmallVector<int64_t> shape(type.getShape());
  shape[d] = out;
  return ReshapeOp::create(b, loc, RankedTensorType::get(shape, et), y);
}

/// Resize and Upsample with constant scales or sizes, any mode but
/// tf_crop_and_resize: a whole-factor nearest upsampling that repeats each
/// element (asymmetric coordinates with floor rounding, or half_pixel /
/// pytorch_half_pixel with round_prefer_floor / _ceil: output o reads
/// input floor(o / factor)) is a broadcast; anything else is separable,
/// one constant [out, in] interpolation matrix per resized axis
/// (`resizeMatrix`) applied as a matmul, so its kernel and gradient are
/// the matmul's. Antialiasing, `axes` and aspect-ratio policies other than
/// stretch stay opaque.
static LogicalResult translateResize(Translator &t, const NodeProto &node) {
  Value x = t.operand(node, 0);
  RankedTensorType type = t.resultType(node, 0);
  if (!x || !type)
    return failure();
  auto inType = cast<RankedTensorType>(x.getType());
  if (type.getRank() != inType.getRank() || !inType.hasStaticShape() ||
      !isa<FloatType>(inType.getElementType()))
    return t.emitOpaque(node);
  bool legacy = node.op_type() == "Upsample" || t.opset < 11;
  ResizeMode m;
  m.mode = Translator::attrString(node, "mode", "nearest");
  if (m.mode == "bilinear" || m.mode == "trilinear") // Upsample-7's names
    m.mode = "linear";
  m.coords = legacy ? "asymmetric"
                    : Translator::attrString(
                          node, "coordinate_transformation_mode", "half_pixel");
  m.nearest = legacy ? "floor"
                     : Translator::attrString(node, "nearest_mode",
                                              "round_prefer_floor");
  m.cubicA = Translator::attrFloat(node, "cubic_coeff_a", -0.75);
  m.excludeOutside = Translator::attrInt(node, "exclude_outside", 0) != 0;
  if ((m.mode != "nearest" && m.mode != "linear" && m.mode != "cubic") ||
      Translator::attrInt(node, "antialias", 0) != 0 ||
      Translator::attr(node, "axes") ||
      Translator::attrString(node, "keep_aspect_ratio_policy", "stretch") !=
          "stretch")
    return t.emitOpaque(node);
  // The scale of each axis: out / in when sizes are given (whether known
  // now or at run time: the output type holds them), else the scales.
  int64_t rank = inType.getRank();
  SmallVector<double> scales;
  bool sizes = !legacy && Translator::hasInput(node, 3);
  const SmallTensor *given = node.op_type() == "Upsample" && t.opset < 9
                                 ? nullptr
                                 : t.constantInput(node, legacy ? 1 : 2);
  if (sizes) {
    for (int64_t d = 0; d < rank; ++d)
      scales.push_back(double(type.getDimSize(d)) / inType.getDimSize(d));
  } else if (given && given->numElements() == rank) {
    for (int64_t d = 0; d < rank; ++d)
      scales.push_back(given->getDouble(d));
  } else if (const onnx::AttributeProto *a = Translator::attr(node, "scales");
             a && a->floats_size() == rank) {
    for (float s : a->floats())
      scales.push_back(s);
  } else {
    // Scales known only at run time: the output type fixes floor(in x
    // scale), so take out / in, and say so (a scale of 0.6 on 4 elements
    // would be taken as 0.5).
    std::string taken;
    for (int64_t d = 0; d < rank; ++d) {
      scales.push_back(double(type.getDimSize(d)) / inType.getDimSize(d));
      taken += (d ? ", " : "") + llvm::formatv("{0}", scales.back()).str();
    }
    emitWarning(t.loc(node))
        << node.op_type()
        << ": its scales are known only at run time; the importer takes "
           "them as output / input length ("
        << taken
        << "), which is exact unless a scale does not divide its output "
           "length; make them a constant of the model to be sure";
  }
  bool floorOfQuotient =
      m.mode == "nearest" &&
      ((m.coords == "asymmetric" && m.nearest == "floor") ||
       ((m.coords == "half_pixel" || m.coords == "pytorch_half_pixel") &&
        (m.nearest == "round_prefer_floor" ||
         m.nearest == "round_prefer_ceil")));
  SmallVector<int64_t> factors;
  for (int64_t d = 0; d < rank && floorOfQuotient; ++d) {
    int64_t in = inType.getDimSize(d), out = type.getDimSize(d);
    if (in < 1 || out % in != 0 || scales[d] != double(out / in))
      floorOfQuotient = false;
    factors.push_back(out / std::max<int64_t>(in, 1));
  }
  if (floorOfQuotient)
    return repeatByBroadcast(t, node, x, factors, type, /*wholeBlocks=*/false);
  // The matrices are constants of the IR: a resize of longer axes (more
  // than 2^20 coefficients) stays opaque.
  constexpr int64_t kMaxCoefficients = int64_t(1) << 20;
  Value v = x;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t in = inType.getDimSize(d), out = type.getDimSize(d);
    if (in < 1 || out < 1 || !(scales[d] > 0) || !std::isfinite(scales[d]))
      return t.emitOpaque(node);
    // An axis kept as it is maps each element to itself.
    if (in == out && scales[d] == 1 && m.coords != "tf_half_pixel_for_nn")
      continue;
    if (out > kMaxCoefficients / in)
      return t.emitOpaque(node);
    std::optional<std::vector<double>> w = resizeMatrix(in, out, scales[d], m);
    if (!w)
      return t.emitOpaque(node);
    bool identity = in == out;
    for (int64_t i = 0; identity && i < out; ++i)
      for (int64_t j = 0; identity && j < in; ++j)
        identity = (*w)[i * in + j] == (i == j ? 1.0 : 0.0);
    if (!identity)
      v = resizeAlong(t.builder, t.loc(node), v, d, out, *w);
  }
  return t.setResult(node, v);
}

static LogicalResult translatePad(Translator &t, const NodeProto &node) {
  Value x = t.operand(node, 0);
  RankedTensorType type = t.resultType(node, 0);
  if (!x || !type)
    return failure();
  SmallVector<int64_t> pads;
  double value = Translator::attrFloat(node, "value", 0.0);
  if (t.opset < 11) {
    pads = Translator::attrInts(node, "pads").value_or(SmallVector<int64_t>{});
  } else {
    const SmallTensor *p = t.constantInput(node, 1);
    if (!p || Translator::hasInput(node, 3))
      return t.emitOpaque(node);
    pads.assign(p->ints.begin(), p->ints.end());
    if (Translator::hasInput(node, 2)) {
      const SmallTensor *v = t.constantInput(node, 2);
      if (!v || v->numElements() != 1)
        return t.emitOpaque(node);
      value = v->getDouble(0);
    }
  }
  std::string mode = Translator::attrString(node, "mode", "constant");
  PadMode padMode = mode == "reflect" ? PadMode::Reflect
                    : mode == "edge"  ? PadMode::Edge
                    : mode == "wrap"  ? PadMode::Wrap
                                      : PadMode::Constant;
  OpBuilder &b = t.builder;
  return t.setResult(
      node, PadOp::create(b, t.loc(node), type, x, b.getDenseI64ArrayAttr(pads),
                          PadModeAttr::get(b.getContext(), padMode),
                          b.getF64FloatAttr(value)));
}

static LogicalResult translateTrilu(Translator &t, const NodeProto &node) {
  Value x = t.operand(node, 0);
  RankedTensorType type = t.resultType(node, 0);
  if (!x || !type)
    return failure();
  // k: a constant, or a one-element tensor known at run time.
  int64_t k = 0;
  Value diagonal;
  if (Translator::hasInput(node, 1)) {
    if (const SmallTensor *c = t.constantInput(node, 1)) {
      if (c->numElements() != 1)
        return t.emitOpaque(node);
      k = c->getInt(0);
    } else {
      diagonal = t.operand(node, 1);
      auto dt = diagonal ? dyn_cast<RankedTensorType>(diagonal.getType())
                         : RankedTensorType();
      if (!dt || !dt.hasStaticShape() || dt.getNumElements() != 1 ||
          !dt.getElementType().isSignlessInteger())
        return t.emitOpaque(node);
    }
  }
  OpBuilder &b = t.builder;
  return t.setResult(
      node,
      TriluOp::create(b, t.loc(node), type, x, diagonal,
                      b.getBoolAttr(Translator::attrInt(node, "upper", 1)),
                      b.getI64IntegerAttr(k)));
}

/// CumSum with a constant axis; one known only at run time stays opaque.
static LogicalResult translateCumSum(Translator &t, const NodeProto &node) {
  Value x = t.operand(node, 0);
  RankedTensorType type = t.resultType(node, 0);
  if (!x || !type)
    return failure();
  const SmallTensor *axis = t.constantInput(node, 1);
  if (!axis || axis->numElements() != 1 ||
      !normalizeAxis(axis->getInt(0), type.getRank()))
    return t.emitOpaque(node);
  OpBuilder &b = t.builder;
  return t.setResult(
      node, CumSumOp::create(
                b, t.loc(node), type, x, b.getI64IntegerAttr(axis->getInt(0)),
                b.getBoolAttr(Translator::attrInt(node, "exclusive", 0)),
                b.getBoolAttr(Translator::attrInt(node, "reverse", 0))));
}

/// A Gather on axis 0 of a 2-D weight is an embedding lookup.
static LogicalResult translateGather(Translator &t, const NodeProto &node) {
  Value data = t.operand(node, 0), indices = t.operand(node, 1);
  RankedTensorType type = t.resultType(node, 0);
  if (!data || !indices || !type)
    return failure();
  int64_t axis = Translator::attrInt(node, "axis", 0);
  auto dataType = cast<RankedTensorType>(data.getType());
  if (axis == 0 && dataType.getRank() == 2 && data.getDefiningOp<WeightOp>())
    return t.setResult(
        node, EmbeddingOp::create(t.builder, t.loc(node), type, data, indices));
  return t.setResult(node, GatherOp::create(t.builder, t.loc(node), type, data,
                                            indices,
                                            t.builder.getI64IntegerAttr(axis)));
}

static LogicalResult translateGatherElements(Translator &t,
                                             const NodeProto &node) {
  Value data = t.operand(node, 0), indices = t.operand(node, 1);
  RankedTensorType type = t.resultType(node, 0);
  if (!data || !indices || !type)
    return failure();
  auto d = cast<RankedTensorType>(data.getType());
  auto i = cast<RankedTensorType>(indices.getType());
  if (d.getRank() != i.getRank() || d.getRank() == 0)
    return t.emitError(node) << "GatherElements needs indices of the data's "
                                "rank (at least 1), got data of rank "
                             << d.getRank() << " and indices of rank "
                             << i.getRank() << "; fix the model";
  return t.setResult(node, GatherElementsOp::create(
                               t.builder, t.loc(node), type, data, indices,
                               t.builder.getI64IntegerAttr(
                                   Translator::attrInt(node, "axis", 0))));
}

/// GatherND: graph.gather_nd (ONNX shape inference checked the shapes;
/// the verifier checks them again).
static LogicalResult translateGatherND(Translator &t, const NodeProto &node) {
  Value data = t.operand(node, 0), indices = t.operand(node, 1);
  RankedTensorType type = t.resultType(node, 0);
  if (!data || !indices || !type)
    return failure();
  return t.setResult(
      node, GatherNDOp::create(t.builder, t.loc(node), type, data, indices,
                               t.builder.getI64IntegerAttr(Translator::attrInt(
                                   node, "batch_dims", 0))));
}

/// A scatter node's `reduction` attribute (default none); null after an
/// error for one the importer does not know.
static ScatterReductionAttr scatterReduction(Translator &t,
                                             const NodeProto &node) {
  std::string name = Translator::attrString(node, "reduction", "none");
  if (auto reduction = symbolizeScatterReduction(name))
    return ScatterReductionAttr::get(t.builder.getContext(), *reduction);
  t.emitError(node)
      << node.op_type() << " has reduction '" << name
      << "'; the importer knows none, add, mul, max and min: fix the "
         "model";
  return {};
}

/// ScatterElements and its opset-9/10 name Scatter (no reduction):
/// graph.scatter_elements.
static LogicalResult translateScatterElements(Translator &t,
                                              const NodeProto &node) {
  Value data = t.operand(node, 0), indices = t.operand(node, 1),
        updates = t.operand(node, 2);
  RankedTensorType type = t.resultType(node, 0);
  if (!data || !indices || !updates || !type)
    return failure();
  auto d = cast<RankedTensorType>(data.getType());
  auto i = cast<RankedTensorType>(indices.getType());
  auto u = cast<RankedTensorType>(updates.getType());
  if (d.getRank() != i.getRank() || d.getRank() == 0 ||
      i.getShape() != u.getShape())
    return t.emitError(node)
           << node.op_type()
           << " needs indices of the data's rank (at least 1) and updates of "
              "the indices' shape, got data "
           << shapeToString(d.getShape()) << ", indices "
           << shapeToString(i.getShape()) << " and updates "
           << shapeToString(u.getShape()) << "; fix the model";
  ScatterReductionAttr reduction = scatterReduction(t, node);
  if (!reduction)
    return failure();
  return t.setResult(
      node,
      ScatterElementsOp::create(
          t.builder, t.loc(node), type, reduction, data, indices, updates,
          t.builder.getI64IntegerAttr(Translator::attrInt(node, "axis", 0))));
}

/// ScatterND: graph.scatter_nd (opset 16 adds the reduction).
static LogicalResult translateScatterND(Translator &t, const NodeProto &node) {
  Value data = t.operand(node, 0), indices = t.operand(node, 1),
        updates = t.operand(node, 2);
  RankedTensorType type = t.resultType(node, 0);
  if (!data || !indices || !updates || !type)
    return failure();
  auto d = cast<RankedTensorType>(data.getType());
  auto i = cast<RankedTensorType>(indices.getType());
  auto u = cast<RankedTensorType>(updates.getType());
  int64_t k = i.getRank() ? i.getShape().back() : 0;
  if (k < 1 || k > d.getRank())
    return t.emitError(node)
           << "ScatterND needs indices whose last dimension is in [1, "
           << d.getRank() << "] (the data's rank), got indices "
           << shapeToString(i.getShape()) << " for data "
           << shapeToString(d.getShape()) << "; fix the model";
  SmallVector<int64_t> expected(i.getShape().drop_back());
  llvm::append_range(expected, d.getShape().drop_front(k));
  if (u.getShape() != ArrayRef<int64_t>(expected))
    return t.emitError(node)
           << "ScatterND needs updates of shape " << shapeToString(expected)
           << " (the indices' shape without its last dimension, then the "
              "data's dimensions after the indexed ones), got "
           << shapeToString(u.getShape()) << "; fix the model";
  ScatterReductionAttr reduction = scatterReduction(t, node);
  if (!reduction)
    return failure();
  return t.setResult(node,
                     ScatterNDOp::create(t.builder, t.loc(node), type,
                                         reduction, data, indices, updates));
}

/// A Constant node that constant folding did not claim: small ones become
/// `graph.constant`, large ones a `frozen` `graph.weight` referencing the
/// tensor's bytes inside the model file (a constant is never trained).
static LogicalResult translateConstant(Translator &t, const NodeProto &node) {
  const onnx::AttributeProto *value = Translator::attr(node, "value");
  SmallTensor small;
  OpBuilder &b = t.builder;
  if (value) {
    if (auto s = readSmallTensor(value->t())) {
      t.defineConstant(node.output(0), std::move(*s));
      return success();
    }
    // More than kMaxInlineElements elements in at most
    // kNodeTensorStripBytes bytes: the scanner left the bytes inline, so
    // there is no file range to reference; the tensor is small enough to
    // be a constant in the IR (a 16x8 rotary table, a 16x16 bool mask).
    if (!t.nodeData)
      if (auto s = readSmallTensor(value->t(), kNodeTensorStripBytes)) {
        t.defineConstant(node.output(0), std::move(*s));
        return success();
      }
    RankedTensorType type = t.resultType(node, 0);
    if (!type)
      return failure();
    StringAttr file;
    IntegerAttr offset, size;
    if (t.nodeData) {
      file = b.getStringAttr(t.modelFile);
      offset = b.getI64IntegerAttr(t.nodeData->offset);
      size = b.getI64IntegerAttr(t.nodeData->size);
    }
    return t.setResult(node, WeightOp::create(b, t.loc(node), type,
                                              b.getStringAttr(node.output(0)),
                                              file, offset, size,
                                              b.getStringAttr("constant")));
  }
  if (const auto *a = Translator::attr(node, "value_int")) {
    small.dtype = onnx::TensorProto::INT64;
    small.ints = {a->i()};
  } else if (const auto *a = Translator::attr(node, "value_ints")) {
    small.dtype = onnx::TensorProto::INT64;
    small.shape = {a->ints_size()};
    small.ints.assign(a->ints().begin(), a->ints().end());
  } else if (const auto *a = Translator::attr(node, "value_float")) {
    small.dtype = onnx::TensorProto::FLOAT;
    small.floats = {a->f()};
  } else if (const auto *a = Translator::attr(node, "value_floats")) {
    small.dtype = onnx::TensorProto::FLOAT;
    small.shape = {a->floats_size()};
    small.floats.assign(a->floats().begin(), a->floats().end());
  } else {
    return t.emitOpaque(node);
  }
  t.defineConstant(node.output(0), std::move(small));
  return success();
}

/// ConstantOfShape with a large result: a scalar broadcast to the shape.
static LogicalResult translateConstantOfShape(Translator &t,
                                              const NodeProto &node) {
  RankedTensorType type = t.resultType(node, 0);
  if (!type)
    return failure();
  SmallTensor scalar;
  scalar.dtype = onnx::TensorProto::FLOAT;
  scalar.floats = {0.0};
  if (const auto *a = Translator::attr(node, "value")) {
    auto v = readSmallTensor(a->t());
    if (!v || v->numElements() != 1)
      return t.emitOpaque(node);
    scalar = *v;
    scalar.shape.clear();
  }
  std::string name = node.output(0) + ".value";
  t.defineConstant(name, scalar);
  Value v = t.lookup(name);
  return t.setResult(node, ExpandOp::create(t.builder, t.loc(node), type, v));
}

/// A Range whose start, limit and delta folded to constants but whose result
/// is too long to inline becomes `graph.iota`; anything else stays opaque.
static LogicalResult translateRange(Translator &t, const NodeProto &node) {
  const SmallTensor *start = t.constantInput(node, 0),
                    *limit = t.constantInput(node, 1),
                    *delta = t.constantInput(node, 2);
  if (!start || !limit || !delta || start->numElements() != 1 ||
      limit->numElements() != 1 || delta->numElements() != 1)
    return t.emitOpaque(node);
  Type et = t.elementType(start->dtype);
  if (!et || !isa<IntegerType, FloatType>(et))
    return t.emitOpaque(node);
  Attribute startAttr, deltaAttr;
  std::optional<int64_t> n;
  bool zeroDelta;
  if (isa<IntegerType>(et)) {
    int64_t s = start->getInt(0), l = limit->getInt(0), d = delta->getInt(0);
    zeroDelta = d == 0;
    n = graph::rangeCount(s, l, d);
    startAttr = t.builder.getIntegerAttr(et, s);
    deltaAttr = t.builder.getIntegerAttr(et, d);
  } else {
    double s = start->getDouble(0), l = limit->getDouble(0),
           d = delta->getDouble(0);
    zeroDelta = d == 0;
    n = graph::rangeCount(s, l, d);
    startAttr = t.builder.getFloatAttr(et, s);
    deltaAttr = t.builder.getFloatAttr(et, d);
  }
  if (zeroDelta)
    return t.emitError(node) << "Range with delta 0 never ends; fix the "
                                "model's delta input";
  if (!n)
    return t.emitError(node)
           << "Range from " << start->getDouble(0) << " to "
           << limit->getDouble(0) << " by " << delta->getDouble(0)
           << " has no finite length that fits in int64; "
              "fix the model's start, limit and delta";
  auto type = RankedTensorType::get({*n}, et);
  return t.setResult(
      node, IotaOp::create(t.builder, t.loc(node), type, startAttr, deltaAttr));
}

void registerDataTranslations(TranslateTable &table) {
  table["Reshape"] = translateReshape;
  table["Squeeze"] = translateReshape;
  table["Unsqueeze"] = translateReshape;
  table["Flatten"] = translateFlatten;
  table["Transpose"] = translateTranspose;
  table["Split"] = translateSplit;
  table["Slice"] = translateSlice;
  table["Concat"] = translateConcat;
  table["Expand"] = translateExpand;
  table["Pad"] = translatePad;
  table["Trilu"] = translateTrilu;
  table["CumSum"] = translateCumSum;
  table["Tile"] = translateTile;
  table["Resize"] = translateResize;
  table["Upsample"] = translateResize;
  table["Gather"] = translateGather;
  table["GatherElements"] = translateGatherElements;
  table["GatherND"] = translateGatherND;
  table["ScatterElements"] = translateScatterElements;
  table["ScatterND"] = translateScatterND;
  table["Scatter"] = translateScatterElements;
  table["Constant"] = translateConstant;
  table["ConstantOfShape"] = translateConstantOfShape;
  table["Range"] = translateRange;
}

} // namespace import
} // namespace distopt
