//===- TranslateNN.cpp - Convolution, pooling, norms, reductions ----------===//
//
// Part of DistOpt. ONNX Conv, ConvTranspose, pooling, BatchNormalization,
// LayerNormalization, InstanceNormalization, LRN, Dropout, Reduce*,
// ArgMax/ArgMin, Hardmax, TopK and SoftmaxCrossEntropyLoss to the graph
// dialect.
//
//===----------------------------------------------------------------------===//
#include "Translator.h"

#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/GraphShapeUtils.h"
#include "dialects/Graph/KeepF32.h"

using namespace mlir;
using namespace distopt::graph;
using onnx::NodeProto;

namespace distopt {
namespace import {

/// Strides, pads (begins then ends) and dilations of a window op, with
/// auto_pad resolved against the input's spatial sizes.
struct Window {
  SmallVector<int64_t> kernel, strides, pads, dilations;
};

static std::optional<Window> resolveWindow(const NodeProto &node,
                                           ArrayRef<int64_t> spatial,
                                           ArrayRef<int64_t> kernel) {
  size_t n = spatial.size();
  Window w;
  w.kernel.assign(kernel.begin(), kernel.end());
  w.strides = Translator::attrInts(node, "strides")
                  .value_or(SmallVector<int64_t>(n, 1));
  w.dilations = Translator::attrInts(node, "dilations")
                    .value_or(SmallVector<int64_t>(n, 1));
  w.pads = Translator::attrInts(node, "pads")
               .value_or(SmallVector<int64_t>(2 * n, 0));
  if (w.strides.size() != n || w.dilations.size() != n ||
      w.pads.size() != 2 * n || w.kernel.size() != n)
    return std::nullopt;
  std::string autoPad = Translator::attrString(node, "auto_pad", "NOTSET");
  if (autoPad == "VALID") {
    w.pads.assign(2 * n, 0);
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (size_t i = 0; i < n; ++i) {
      int64_t out = (spatial[i] + w.strides[i] - 1) / w.strides[i];
      int64_t total = std::max<int64_t>((out - 1) * w.strides[i] +
                                            (w.kernel[i] - 1) * w.dilations[i] +
                                            1 - spatial[i],
                                        0);
      int64_t small = total / 2, large = total - small;
      w.pads[i] = autoPad == "SAME_UPPER" ? small : large;
      w.pads[i + n] = autoPad == "SAME_UPPER" ? large : small;
    }
  }
  return w;
}

/// X, W, the optional bias, the result type and X's and W's types of a
/// Conv or ConvTranspose; failure (an error emitted) when one is missing.
struct ConvOperands {
  Value x, w, bias;
  RankedTensorType type, xt, wt;
};
static FailureOr<ConvOperands> convOperands(Translator &t,
                                            const NodeProto &node) {
  ConvOperands c{t.operand(node, 0), t.operand(node, 1), Value(),
                 t.resultType(node, 0)};
  if (!c.x || !c.w || !c.type)
    return failure();
  if (Translator::hasInput(node, 2) && !(c.bias = t.operand(node, 2)))
    return failure();
  c.xt = cast<RankedTensorType>(c.x.getType());
  c.wt = cast<RankedTensorType>(c.w.getType());
  return c;
}

static LogicalResult translateConv(Translator &t, const NodeProto &node) {
  FailureOr<ConvOperands> ops = convOperands(t, node);
  if (failed(ops))
    return failure();
  auto [x, w, bias, type, xt, wt] = *ops;
  if (xt.getRank() < 3 || wt.getRank() != xt.getRank())
    return t.emitOpaque(node);
  auto window = resolveWindow(node, xt.getShape().drop_front(2),
                              wt.getShape().drop_front(2));
  if (!window)
    return t.emitOpaque(node);
  OpBuilder &b = t.builder;
  return t.setResult(
      node, ConvOp::create(
                b, t.loc(node), type, x, w, bias,
                b.getDenseI64ArrayAttr(window->strides),
                b.getDenseI64ArrayAttr(window->pads),
                b.getDenseI64ArrayAttr(window->dilations),
                b.getI64IntegerAttr(Translator::attrInt(node, "group", 1))));
}

/// ConvTranspose is the input gradient of the convolution it transposes:
/// `graph.conv_grad_input` of X through W, whose result type (from shape
/// inference) carries output_padding and output_shape. Pads follow ONNX
/// (and onnxruntime): given, or with output_shape or SAME_* auto_pad the
/// total padding max(0, stride*(in-1) + output_padding + (K-1)*dilation + 1
/// - out), split as the spec says. A bias adds as a [C, 1, ...] broadcast.
static LogicalResult translateConvTranspose(Translator &t,
                                            const NodeProto &node) {
  FailureOr<ConvOperands> ops = convOperands(t, node);
  if (failed(ops))
    return failure();
  auto [x, w, bias, type, xt, wt] = *ops;
  int64_t n = xt.getRank() - 2;
  if (n < 1 || wt.getRank() != xt.getRank() || type.getRank() != xt.getRank())
    return t.emitOpaque(node);
  auto ints = [&](StringRef name, int64_t size, int64_t fill) {
    return Translator::attrInts(node, name)
        .value_or(SmallVector<int64_t>(size, fill));
  };
  SmallVector<int64_t> strides = ints("strides", n, 1),
                       dilations = ints("dilations", n, 1),
                       pads = ints("pads", 2 * n, 0),
                       extra = ints("output_padding", n, 0);
  if (int64_t(strides.size()) != n || int64_t(dilations.size()) != n ||
      int64_t(pads.size()) != 2 * n || int64_t(extra.size()) != n)
    return t.emitOpaque(node);
  std::string autoPad = Translator::attrString(node, "auto_pad", "NOTSET");
  bool fromShape = Translator::attrInts(node, "output_shape").has_value() ||
                   autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER";
  for (int64_t i = 0; i < n; ++i) {
    int64_t in = xt.getDimSize(i + 2), out = type.getDimSize(i + 2),
            k = wt.getDimSize(i + 2);
    int64_t full =
        strides[i] * (in - 1) + extra[i] + (k - 1) * dilations[i] + 1;
    if (autoPad == "VALID") {
      pads[i] = pads[i + n] = 0;
    } else if (fromShape) {
      // An output_shape past the full extent pads nothing; its extra tail
      // positions get no contribution (as output_padding's do).
      int64_t total = std::max<int64_t>(0, full - out);
      int64_t half = total / 2;
      pads[i] = autoPad == "SAME_UPPER" ? half : total - half;
      pads[i + n] = total - pads[i];
    }
    // What the result holds past the padded extent: less than a stride,
    // as the convolution it transposes needs.
    int64_t tail = out - (full - pads[i] - pads[i + n]);
    if (tail < 0 || tail >= strides[i])
      return t.emitOpaque(node);
  }
  // Each group transposes its share of the input channels (ONNX's
  // inference does not check it; onnxruntime refuses such a model).
  int64_t group = Translator::attrInt(node, "group", 1);
  if (group >= 1 && !xt.isDynamicDim(1) && xt.getDimSize(1) % group != 0)
    return t.emitError(node) << "ConvTranspose's input has " << xt.getDimSize(1)
                             << " channels, which its 'group' " << group
                             << " does not divide; fix the model";
  OpBuilder &b = t.builder;
  Location loc = t.loc(node);
  Value y = ConvGradInputOp::create(
      b, loc, type, x, w, b.getDenseI64ArrayAttr(strides),
      b.getDenseI64ArrayAttr(pads), b.getDenseI64ArrayAttr(dilations),
      b.getI64IntegerAttr(group));
  if (!bias)
    return t.setResult(node, y);
  SmallVector<int64_t> channels(n + 1, 1);
  channels[0] = type.getDimSize(1);
  Value c = ReshapeOp::create(
      b, loc, RankedTensorType::get(channels, type.getElementType()), bias);
  return t.setResult(
      node, BinaryOp::create(b, loc, type, BinaryKind::Add, y, c, false));
}

static LogicalResult translatePool(Translator &t, const NodeProto &node) {
  Value x = t.operand(node, 0);
  RankedTensorType type = t.resultType(node, 0);
  if (!x || !type)
    return failure();
  StringRef op = node.op_type();
  PoolKind kind = op.contains("Max")                             ? PoolKind::Max
                  : op.contains("Avg") || op.contains("Average") ? PoolKind::Avg
                                                                 : PoolKind::L2;
  // MaxPool's optional Indices output and Lp pooling with p != 2 are not
  // modelled.
  if ((node.output_size() > 1 && !node.output(1).empty()) ||
      (kind == PoolKind::L2 && Translator::attrInt(node, "p", 2) != 2))
    return t.emitOpaque(node);
  auto xt = cast<RankedTensorType>(x.getType());
  OpBuilder &b = t.builder;
  if (op.starts_with("Global"))
    return t.setResult(
        node, PoolOp::create(
                  b, t.loc(node), type, PoolKindAttr::get(b.getContext(), kind),
                  x, b.getUnitAttr(), b.getDenseI64ArrayAttr({}),
                  b.getDenseI64ArrayAttr({}), b.getDenseI64ArrayAttr({}),
                  b.getDenseI64ArrayAttr({}), UnitAttr(), UnitAttr()));
  auto kernel = Translator::attrInts(node, "kernel_shape");
  if (!kernel || xt.getRank() < 3)
    return t.emitOpaque(node);
  auto window = resolveWindow(node, xt.getShape().drop_front(2), *kernel);
  if (!window)
    return t.emitOpaque(node);
  bool ceil = Translator::attrInt(node, "ceil_mode", 0);
  bool includePad = Translator::attrInt(node, "count_include_pad", 0);
  return t.setResult(
      node, PoolOp::create(b, t.loc(node), type,
                           PoolKindAttr::get(b.getContext(), kind), x,
                           UnitAttr(), b.getDenseI64ArrayAttr(window->kernel),
                           b.getDenseI64ArrayAttr(window->strides),
                           b.getDenseI64ArrayAttr(window->pads),
                           b.getDenseI64ArrayAttr(window->dilations),
                           ceil ? b.getUnitAttr() : UnitAttr(),
                           includePad ? b.getUnitAttr() : UnitAttr()));
}

static LogicalResult translateBatchNorm(Translator &t, const NodeProto &node) {
  // Opset < 14 training outputs (saved mean/variance) are not modelled.
  if (node.output_size() > 3)
    return t.emitOpaque(node);
  bool training = Translator::attrInt(node, "training_mode", 0) != 0;
  int numOutputs = node.output_size();
  while (numOutputs > 1 && node.output(numOutputs - 1).empty())
    --numOutputs;
  if (numOutputs == 2 || (numOutputs > 1 && !training))
    return t.emitOpaque(node);
  SmallVector<Value> in;
  for (int i = 0; i < 5; ++i) {
    Value v = t.operand(node, i);
    if (!v)
      return failure();
    in.push_back(v);
  }
  SmallVector<Type> statsTypes;
  RankedTensorType type = t.resultType(node, 0);
  if (!type)
    return failure();
  for (int i = 1; i < numOutputs; ++i) {
    RankedTensorType st = t.resultType(node, i);
    if (!st)
      return failure();
    statsTypes.push_back(st);
  }
  OpBuilder &b = t.builder;
  auto op = BatchNormOp::create(
      b, t.loc(node), type, statsTypes, in[0], in[1], in[2], in[3], in[4],
      b.getF64FloatAttr(Translator::attrFloat(node, "epsilon", 1e-5)),
      b.getF64FloatAttr(Translator::attrFloat(node, "momentum", 0.9)),
      training ? b.getUnitAttr() : UnitAttr());
  for (int i = 0; i < numOutputs; ++i)
    t.define(node.output(i), op->getResult(i));
  return success();
}

/// LayerNormalization; its optional Mean and InvStdDev outputs (what a
/// training export saves for the backward) are computed beside it in f32
/// as ONNX defines them: the mean over the normalized dimensions and
/// 1 / sqrt(variance + epsilon), kept as unit dimensions.
static LogicalResult translateLayerNorm(Translator &t, const NodeProto &node) {
  Value x = t.operand(node, 0), scale = t.operand(node, 1);
  RankedTensorType type = t.resultType(node, 0);
  if (!x || !scale || !type)
    return failure();
  Value bias;
  if (Translator::hasInput(node, 2) && !(bias = t.operand(node, 2)))
    return failure();
  int64_t rank = type.getRank();
  std::optional<int64_t> axis =
      normalizeAxis(Translator::attrInt(node, "axis", -1), rank);
  double epsilon = Translator::attrFloat(node, "epsilon", 1e-5);
  auto wants = [&](int i) {
    return node.output_size() > i && !node.output(i).empty();
  };
  bool stats = wants(1) || wants(2);
  RankedTensorType statType;
  if (stats) {
    if (!axis || !type.getElementType().isF32() ||
        Translator::attrInt(node, "stash_type", 1) != 1)
      return t.emitOpaque(node);
    SmallVector<int64_t> shape(type.getShape().take_front(*axis));
    shape.append(rank - *axis, 1);
    statType = RankedTensorType::get(shape, type.getElementType());
    for (int i : {1, 2})
      if (wants(i) && t.resultType(node, i) != statType)
        return t.emitOpaque(node);
  }
  OpBuilder &b = t.builder;
  Location loc = t.loc(node);
  if (failed(t.setResult(
          node, LayerNormOp::create(
                    b, loc, type, x, scale, bias,
                    b.getI64IntegerAttr(Translator::attrInt(node, "axis", -1)),
                    b.getF64FloatAttr(epsilon)))))
    return failure();
  if (!stats)
    return success();
  SmallVector<int64_t> axes;
  for (int64_t d = *axis; d < rank; ++d)
    axes.push_back(d);
  auto mean = [&](Value v) -> Value {
    return ReduceOp::create(
        b, loc, statType, ReduceKindAttr::get(b.getContext(), ReduceKind::Mean),
        v, b.getDenseI64ArrayAttr(axes), b.getBoolAttr(true));
  };
  Value m = mean(x);
  Value d = BinaryOp::create(b, loc, type, BinaryKind::Sub, x, m, false);
  Value var =
      mean(BinaryOp::create(b, loc, type, BinaryKind::Mul, d, d, false));
  Value eps = ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(RankedTensorType::get({}, b.getF32Type()),
                             b.getF32FloatAttr(float(epsilon))));
  Value inv = UnaryOp::create(
      b, loc, statType, UnaryKindAttr::get(b.getContext(), UnaryKind::Rsqrt),
      BinaryOp::create(b, loc, statType, BinaryKind::Add, var, eps, false),
      FloatAttr(), FloatAttr());
  if (wants(1))
    t.define(node.output(1), m);
  if (wants(2))
    t.define(node.output(2), inv);
  return success();
}

/// InstanceNormalization of x [N, C, D1, ...] normalizes each (n, c) over
/// D1... : a layer norm from axis 2 with a unit scale, then the per-channel
/// scale and bias as [C, 1, ...] broadcasts. Its kernels, costs and
/// gradients are those ops'.
static LogicalResult translateInstanceNorm(Translator &t,
                                           const NodeProto &node) {
  Value x = t.operand(node, 0), scale = t.operand(node, 1),
        bias = t.operand(node, 2);
  RankedTensorType type = t.resultType(node, 0);
  if (!x || !scale || !bias || !type)
    return failure();
  auto xType = cast<RankedTensorType>(x.getType());
  auto isChannelVector = [&](Value v) {
    auto vt = cast<RankedTensorType>(v.getType());
    return vt.getRank() == 1 && vt.getDimSize(0) == xType.getDimSize(1) &&
           vt.getElementType() == xType.getElementType();
  };
  if (xType.getRank() < 3 || type != xType ||
      !isa<FloatType>(xType.getElementType()) || !isChannelVector(scale) ||
      !isChannelVector(bias))
    return t.emitOpaque(node);
  OpBuilder &b = t.builder;
  Location loc = t.loc(node);
  Type f = xType.getElementType();
  auto unitType = RankedTensorType::get({1}, f);
  Value one = ConstantOp::create(
      b, loc, DenseElementsAttr::get(unitType, b.getFloatAttr(f, 1.0)));
  Value y = LayerNormOp::create(
      b, loc, type, x, one, Value(), b.getI64IntegerAttr(2),
      b.getF64FloatAttr(Translator::attrFloat(node, "epsilon", 1e-5)));
  SmallVector<int64_t> channelShape(xType.getRank() - 1, 1);
  channelShape[0] = xType.getDimSize(1);
  auto channelType = RankedTensorType::get(channelShape, f);
  Value s = ReshapeOp::create(b, loc, channelType, scale);
  Value c = ReshapeOp::create(b, loc, channelType, bias);
  y = BinaryOp::create(b, loc, type, BinaryKind::Mul, y, s, false);
  return t.setResult(
      node, BinaryOp::create(b, loc, type, BinaryKind::Add, y, c, false));
}

/// LRN as the graph ops of its definition, y = x / (bias + alpha / size *
/// S)^beta with S the sum of x^2 over the `size` channels around each
/// channel (floor((size - 1) / 2) before it, ceil((size - 1) / 2) after it,
/// clipped at the ends): x^2 viewed as [N, 1, C, rest] and averaged by a
/// 2-D pool with a [size, 1] window that counts its zero padding, which
/// gives S / size. Its kernels, costs and gradient are those ops'.
static LogicalResult translateLRN(Translator &t, const NodeProto &node) {
  Value x = t.operand(node, 0);
  RankedTensorType type = t.resultType(node, 0);
  if (!x || !type)
    return failure();
  auto xt = cast<RankedTensorType>(x.getType());
  int64_t size = Translator::attrInt(node, "size", 0);
  if (size <= 0)
    return t.emitError(node)
           << "LRN needs a positive 'size' attribute (the number of channels "
              "summed), got "
           << size << "; fix the model";
  if (xt.getRank() < 2 || !isa<FloatType>(xt.getElementType()) || type != xt)
    return t.emitOpaque(node);
  OpBuilder &b = t.builder;
  Location loc = t.loc(node);
  Type f = xt.getElementType();
  auto scalar = [&](double v) -> Value {
    auto st = RankedTensorType::get({}, f);
    return ConstantOp::create(b, loc,
                              DenseElementsAttr::get(st, b.getFloatAttr(f, v)));
  };
  int64_t rest = 1;
  for (int64_t d : xt.getShape().drop_front(2))
    rest *= d;
  auto planes =
      RankedTensorType::get({xt.getDimSize(0), 1, xt.getDimSize(1), rest}, f);
  Value square = BinaryOp::create(b, loc, xt, BinaryKind::Mul, x, x, false);
  Value view = ReshapeOp::create(b, loc, planes, square);
  Value mean = PoolOp::create(
      b, loc, planes, PoolKindAttr::get(b.getContext(), PoolKind::Avg), view,
      UnitAttr(), b.getDenseI64ArrayAttr({size, 1}),
      b.getDenseI64ArrayAttr({1, 1}),
      b.getDenseI64ArrayAttr({(size - 1) / 2, 0, size / 2, 0}),
      b.getDenseI64ArrayAttr({1, 1}), UnitAttr(), b.getUnitAttr());
  mean = ReshapeOp::create(b, loc, xt, mean);
  Value scaled = BinaryOp::create(
      b, loc, xt, BinaryKind::Mul, mean,
      scalar(Translator::attrFloat(node, "alpha", 1e-4)), false);
  Value base =
      BinaryOp::create(b, loc, xt, BinaryKind::Add, scaled,
                       scalar(Translator::attrFloat(node, "bias", 1.0)), false);
  Value denominator = BinaryOp::create(
      b, loc, xt, BinaryKind::Pow, base,
      scalar(Translator::attrFloat(node, "beta", 0.75)), false);
  return t.setResult(node, BinaryOp::create(b, loc, type, BinaryKind::Div, x,
                                            denominator, false));
}

static LogicalResult translateDropout(Translator &t, const NodeProto &node) {
  if (node.output_size() > 1 && !node.output(1).empty())
    return t.emitOpaque(node); // the mask is used
  Value x = t.operand(node, 0);
  RankedTensorType type = t.resultType(node, 0);
  if (!x || !type)
    return failure();
  double ratio = Translator::attrFloat(node, "ratio", 0.5);
  if (t.opset >= 12 && Translator::hasInput(node, 1)) {
    const SmallTensor *r = t.constantInput(node, 1);
    if (!r || r->numElements() != 1)
      return t.emitOpaque(node);
    ratio = r->getDouble(0);
  }
  if (t.opset >= 12 && !Translator::hasInput(node, 1))
    ratio = 0.5;
  OpBuilder &b = t.builder;
  return t.setResult(node, DropoutOp::create(b, t.loc(node), type, x,
                                             b.getF64FloatAttr(ratio)));
}

static std::optional<ReduceKind> reduceKind(StringRef op) {
  return llvm::StringSwitch<std::optional<ReduceKind>>(op)
      .Case("ReduceSum", ReduceKind::Sum)
      .Case("ReduceMean", ReduceKind::Mean)
      .Case("ReduceMax", ReduceKind::Max)
      .Case("ReduceMin", ReduceKind::Min)
      .Case("ReduceProd", ReduceKind::Prod)
      .Case("ReduceL1", ReduceKind::L1)
      .Case("ReduceL2", ReduceKind::L2)
      .Case("ReduceSumSquare", ReduceKind::SumSquare)
      .Case("ReduceLogSum", ReduceKind::LogSum)
      .Case("ReduceLogSumExp", ReduceKind::LogSumExp)
      .Case("ArgMax", ReduceKind::ArgMax)
      .Case("ArgMin", ReduceKind::ArgMin)
      .Default(std::nullopt);
}

/// Hardmax as the one-hot of the first maximum along its axis:
/// equal(iota along the axis, arg_max) cast to the input's type, so its
/// kernels and costs are those ops'. Piecewise constant: no gradient flows
/// through it. Before opset 13 Hardmax flattens the input from its axis
/// into one; that is the same only when the axis is the last, so other
/// axes stay opaque there.
static LogicalResult translateHardmax(Translator &t, const NodeProto &node) {
  Value x = t.operand(node, 0);
  RankedTensorType type = t.resultType(node, 0);
  if (!x || !type)
    return failure();
  int64_t rank = type.getRank();
  std::optional<int64_t> axis = normalizeAxis(
      Translator::attrInt(node, "axis", t.opset >= 13 ? -1 : 1), rank);
  if (!axis || (t.opset < 13 && *axis != rank - 1) ||
      !isa<FloatType>(type.getElementType()))
    return t.emitOpaque(node);
  OpBuilder &b = t.builder;
  Location loc = t.loc(node);
  Type i64 = b.getI64Type();
  SmallVector<int64_t> kept(type.getShape()), line(rank, 1);
  kept[*axis] = 1;
  line[*axis] = type.getDimSize(*axis);
  Value first =
      ReduceOp::create(b, loc, RankedTensorType::get(kept, i64),
                       ReduceKindAttr::get(b.getContext(), ReduceKind::ArgMax),
                       x, b.getDenseI64ArrayAttr({*axis}), b.getBoolAttr(true),
                       b.getBoolAttr(false));
  Value pos = IotaOp::create(
      b, loc, RankedTensorType::get({type.getDimSize(*axis)}, i64),
      b.getI64IntegerAttr(0), b.getI64IntegerAttr(1));
  pos = ReshapeOp::create(b, loc, RankedTensorType::get(line, i64), pos);
  Value hit = BinaryOp::create(
      b, loc, RankedTensorType::get(type.getShape(), b.getI1Type()),
      BinaryKind::Equal, pos, first, false);
  return t.setResult(node, CastOp::create(b, loc, type, hit));
}

static LogicalResult translateReduce(Translator &t, const NodeProto &node) {
  Value x = t.operand(node, 0);
  RankedTensorType type = t.resultType(node, 0);
  if (!x || !type)
    return failure();
  ReduceKind kind = *reduceKind(node.op_type());
  bool isArg = kind == ReduceKind::ArgMax || kind == ReduceKind::ArgMin;
  SmallVector<int64_t> axes;
  if (isArg) {
    axes.push_back(Translator::attrInt(node, "axis", 0));
  } else if (Translator::hasInput(node, 1)) {
    // Opset 13 (ReduceSum) / 18 (the rest) moved axes to an input.
    const SmallTensor *a = t.constantInput(node, 1);
    if (!a)
      return t.emitOpaque(node);
    axes.assign(a->ints.begin(), a->ints.end());
  } else if (auto a = Translator::attrInts(node, "axes")) {
    axes = *a;
  }
  if (axes.empty() && !isArg &&
      Translator::attrInt(node, "noop_with_empty_axes", 0))
    return t.setResult(node, x);
  OpBuilder &b = t.builder;
  return t.setResult(
      node, ReduceOp::create(
                b, t.loc(node), type, ReduceKindAttr::get(b.getContext(), kind),
                x, b.getDenseI64ArrayAttr(axes),
                b.getBoolAttr(Translator::attrInt(node, "keepdims", 1)),
                b.getBoolAttr(isArg && Translator::attrInt(
                                           node, "select_last_index", 0))));
}

/// NegativeLogLikelihoodLoss of log-probabilities `input` [N, C, d...]
/// from graph ops, or null when the operands do not fit: a one-hot of the
/// target (`graph.iota` of the classes compared with it) picks
/// input[n, target] and weight[target]; ignored targets weigh 0. `none`
/// keeps the per-item losses, `sum` adds them, `mean` divides the sum by
/// the total weight of the items not ignored, as ONNX defines it. The loss
/// thus costs, runs and differentiates as those ops do.
static Value buildNLL(Translator &t, const NodeProto &node, Value input,
                      Value target, Value weight) {
  auto it = cast<RankedTensorType>(input.getType());
  auto tt = cast<RankedTensorType>(target.getType());
  std::string reduction = Translator::attrString(node, "reduction", "mean");
  if (it.getRank() < 2 || tt.getRank() != it.getRank() - 1 ||
      !isa<FloatType>(it.getElementType()) ||
      !isa<IntegerType>(tt.getElementType()) ||
      (reduction != "none" && reduction != "sum" && reduction != "mean"))
    return Value();
  if (weight &&
      cast<RankedTensorType>(weight.getType()) !=
          RankedTensorType::get({it.getDimSize(1)}, it.getElementType()))
    return Value();
  OpBuilder &b = t.builder;
  Location loc = t.loc(node);
  Type f = it.getElementType();
  int64_t classes = it.getDimSize(1);
  // [N, 1, d...] targets against [1, C, 1...] classes: the one-hot.
  SmallVector<int64_t> items(tt.getShape()), column(tt.getShape()),
      row(it.getRank(), 1);
  column.insert(column.begin() + 1, 1);
  row[1] = classes;
  Value classIds = IotaOp::create(
      b, loc, RankedTensorType::get({classes}, tt.getElementType()),
      b.getIntegerAttr(tt.getElementType(), 0),
      b.getIntegerAttr(tt.getElementType(), 1));
  classIds = ReshapeOp::create(
      b, loc, RankedTensorType::get(row, tt.getElementType()), classIds);
  Value targetColumn = ReshapeOp::create(
      b, loc, RankedTensorType::get(column, tt.getElementType()), target);
  auto like = [&](ArrayRef<int64_t> shape, Type e) {
    return RankedTensorType::get(shape, e);
  };
  Value hit =
      BinaryOp::create(b, loc, like(it.getShape(), b.getI1Type()),
                       BinaryKind::Equal, targetColumn, classIds, false);
  Value oneHot = CastOp::create(b, loc, like(it.getShape(), f), hit);
  auto sumClasses = [&](Value v) -> Value {
    return ReduceOp::create(
        b, loc, like(items, f),
        ReduceKindAttr::get(b.getContext(), ReduceKind::Sum), v,
        b.getDenseI64ArrayAttr({1}), b.getBoolAttr(false));
  };
  auto mul = [&](Value x, Value y, ArrayRef<int64_t> shape) -> Value {
    return BinaryOp::create(b, loc, like(shape, f), BinaryKind::Mul, x, y,
                            false);
  };
  Value picked = sumClasses(mul(input, oneHot, it.getShape()));
  // The weight of each item: weight[target] (1 without weights), 0 when
  // its target is ignore_index.
  Value itemWeight;
  if (weight) {
    Value w = ReshapeOp::create(b, loc, like(row, f), weight);
    itemWeight = sumClasses(mul(oneHot, w, it.getShape()));
  }
  if (const onnx::AttributeProto *ignore =
          Translator::attr(node, "ignore_index")) {
    Value index = ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(
            like({}, tt.getElementType()),
            b.getIntegerAttr(tt.getElementType(), ignore->i())));
    Value same = BinaryOp::create(b, loc, like(items, b.getI1Type()),
                                  BinaryKind::Equal, target, index, false);
    Value kept =
        UnaryOp::create(b, loc, like(items, b.getI1Type()),
                        UnaryKindAttr::get(b.getContext(), UnaryKind::Not),
                        same, FloatAttr(), FloatAttr());
    kept = CastOp::create(b, loc, like(items, f), kept);
    itemWeight = itemWeight ? mul(itemWeight, kept, items) : kept;
  }
  Value loss = itemWeight ? mul(picked, itemWeight, items) : picked;
  loss = UnaryOp::create(b, loc, like(items, f),
                         UnaryKindAttr::get(b.getContext(), UnaryKind::Neg),
                         loss, FloatAttr(), FloatAttr());
  if (reduction == "none")
    return loss;
  SmallVector<int64_t> all;
  for (int64_t d = 0; d < tt.getRank(); ++d)
    all.push_back(d);
  auto total = [&](Value v) -> Value {
    return ReduceOp::create(
        b, loc, like({}, f),
        ReduceKindAttr::get(b.getContext(), reduction == "sum" || itemWeight
                                                ? ReduceKind::Sum
                                                : ReduceKind::Mean),
        v, b.getDenseI64ArrayAttr(all), b.getBoolAttr(false));
  };
  Value sum = total(loss);
  if (reduction == "sum" || !itemWeight)
    return sum;
  return BinaryOp::create(b, loc, like({}, f), BinaryKind::Div, sum,
                          total(itemWeight), false);
}

/// While alive, marks the float ops `t.builder` inserts graph.keep_f32: a
/// loss built from graph ops computes in f32 under mixed precision, as the
/// loss dist-autodiff adds does (dialects/Graph/KeepF32.h).
class MarkLossOps {
public:
  explicit MarkLossOps(Translator &t)
      : builder(t.builder), previous(t.builder.getListener()) {
    builder.setListener(&mark);
  }
  ~MarkLossOps() { builder.setListener(previous); }

private:
  OpBuilder &builder;
  OpBuilder::Listener *previous;
  graph::KeepF32Listener mark;
};

/// The optional class weights (input 2) of a loss; false when named but
/// undefined (an error emitted).
static bool lossWeight(Translator &t, const NodeProto &node, Value &weight) {
  return !Translator::hasInput(node, 2) || (weight = t.operand(node, 2));
}

static LogicalResult translateNLL(Translator &t, const NodeProto &node) {
  Value input = t.operand(node, 0), target = t.operand(node, 1), weight;
  RankedTensorType type = t.resultType(node, 0);
  if (!input || !target || !type || !lossWeight(t, node, weight))
    return failure();
  Value loss;
  {
    MarkLossOps mark(t);
    loss = buildNLL(t, node, input, target, weight);
  }
  if (!loss || loss.getType() != type)
    return t.emitOpaque(node);
  // The log-softmax only this loss reads (an exporter's cross-entropy) is
  // part of it.
  if (auto logp = input.getDefiningOp<SoftmaxOp>();
      logp && logp.getLog() && input.hasOneUse())
    graph::markKeepF32(logp);
  return t.setResult(node, loss);
}

/// SoftmaxCrossEntropyLoss: `graph.softmax_cross_entropy` for the mean
/// loss of f32 [N, C] logits (what its kernel computes); otherwise (class
/// weights, the log-prob output, other reductions or ranks) a log-softmax
/// over the classes (axis 1) and the NegativeLogLikelihoodLoss of it
/// (buildNLL).
static LogicalResult translateSCE(Translator &t, const NodeProto &node) {
  Value logits = t.operand(node, 0), labels = t.operand(node, 1), weight;
  RankedTensorType type = t.resultType(node, 0);
  if (!logits || !labels || !type || !lossWeight(t, node, weight))
    return failure();
  bool logProbs = node.output_size() > 1 && !node.output(1).empty();
  auto lt = cast<RankedTensorType>(logits.getType());
  bool fused = !weight && !logProbs && lt.getRank() == 2 &&
               lt.getElementType().isF32() &&
               Translator::attrString(node, "reduction", "mean") == "mean";
  if (!fused) {
    OpBuilder &b = t.builder;
    MarkLossOps mark(t);
    Value logp = SoftmaxOp::create(b, t.loc(node), logits.getType(), logits,
                                   b.getI64IntegerAttr(1), b.getUnitAttr());
    Value loss = buildNLL(t, node, logp, labels, weight);
    if (!loss || loss.getType() != type ||
        (logProbs && t.resultType(node, 1) != logits.getType()))
      return t.emitOpaque(node);
    if (logProbs)
      t.define(node.output(1), logp);
    return t.setResult(node, loss);
  }
  std::string reduction = Translator::attrString(node, "reduction", "mean");
  LossReduction r = reduction == "none"  ? LossReduction::None
                    : reduction == "sum" ? LossReduction::Sum
                                         : LossReduction::Mean;
  OpBuilder &b = t.builder;
  IntegerAttr ignore;
  if (Translator::attr(node, "ignore_index"))
    ignore = b.getI64IntegerAttr(Translator::attrInt(node, "ignore_index", 0));
  return t.setResult(node, SoftmaxCrossEntropyOp::create(
                               b, t.loc(node), type,
                               LossReductionAttr::get(b.getContext(), r),
                               logits, labels, ignore));
}

/// TopK: graph.top_k. K (an attribute before opset 10, an input since)
/// sets the outputs' shape, so it must be known at import.
static LogicalResult translateTopK(Translator &t, const NodeProto &node) {
  Value x = t.operand(node, 0);
  if (!x)
    return failure();
  int64_t k;
  if (t.opset < 10) {
    k = Translator::attrInt(node, "k", -1);
  } else {
    const SmallTensor *kIn = t.constantInput(node, 1);
    if (!kIn || kIn->numElements() != 1)
      return t.emitError(node)
             << "TopK needs K (input 1"
             << (Translator::hasInput(node, 1) ? ", '" + node.input(1) + "'"
                                               : std::string())
             << ") as one constant integer: it sets the outputs' shape; make "
                "it an initializer or a Constant (or a value folded from "
                "them), or give a graph input its value with "
                "--input-value=NAME:VALUE";
    k = kIn->getInt(0);
  }
  auto in = cast<RankedTensorType>(x.getType());
  int64_t axis = Translator::attrInt(node, "axis", -1);
  std::optional<int64_t> a = normalizeAxis(axis, in.getRank());
  if (!a || k < 0 || k > in.getDimSize(*a))
    return t.emitError(node)
           << "TopK needs an axis in [-" << in.getRank() << ", " << in.getRank()
           << ") and K in [0, the axis' dimension], got axis " << axis
           << " and K " << k << " for input " << shapeToString(in.getShape())
           << "; fix the model";
  RankedTensorType values = t.resultType(node, 0),
                   indices = t.resultType(node, 1);
  if (!values || !indices)
    return failure();
  bool largest = t.opset < 11 || Translator::attrInt(node, "largest", 1);
  bool sorted = t.opset < 11 || Translator::attrInt(node, "sorted", 1);
  OpBuilder &b = t.builder;
  auto top = TopKOp::create(b, t.loc(node), values, indices, x,
                            b.getI64IntegerAttr(k), b.getI64IntegerAttr(axis),
                            b.getBoolAttr(largest), b.getBoolAttr(sorted));
  t.define(node.output(1), top.getIndices());
  return t.setResult(node, top.getValues());
}

void registerNNTranslations(TranslateTable &table) {
  table["Conv"] = translateConv;
  table["Hardmax"] = translateHardmax;
  table["ConvTranspose"] = translateConvTranspose;
  for (StringRef op : {"MaxPool", "AveragePool", "LpPool", "GlobalMaxPool",
                       "GlobalAveragePool", "GlobalLpPool"})
    table[op] = translatePool;
  table["BatchNormalization"] = translateBatchNorm;
  table["LayerNormalization"] = translateLayerNorm;
  table["InstanceNormalization"] = translateInstanceNorm;
  table["LRN"] = translateLRN;
  table["Dropout"] = translateDropout;
  for (StringRef op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin",
                       "ReduceProd", "ReduceL1", "ReduceL2", "ReduceSumSquare",
                       "ReduceLogSum", "ReduceLogSumExp", "ArgMax", "ArgMin"})
    table[op] = translateReduce;
  table["TopK"] = translateTopK;
  table["SoftmaxCrossEntropyLoss"] = translateSCE;
  table["NegativeLogLikelihoodLoss"] = translateNLL;
}

} // namespace import
} // namespace distopt
