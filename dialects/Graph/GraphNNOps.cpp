//===- GraphNNOps.cpp - Neural-network ops of the graph dialect -*- C++ -*-===//
//
// Part of DistOpt. Verifiers of conv, pool, softmax, the normalizations,
// reduce and softmax_cross_entropy.
//
//===----------------------------------------------------------------------===//
#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/GraphShapeUtils.h"

#include "llvm/Support/CheckedArithmetic.h"

using namespace mlir;
using namespace distopt::graph;

static LogicalResult verifySameType(Operation *op, RankedTensorType input,
                                    RankedTensorType result) {
  if (input.getElementType() != result.getElementType())
    return op->emitOpError("result element type ")
           << result.getElementType() << " differs from the operand's "
           << input.getElementType();
  return verifyResultShape(op, input.getShape(), result.getShape());
}

/// Checks the window attributes of conv/pool for `spatial` dimensions.
static LogicalResult verifyWindow(Operation *op, int64_t spatial,
                                  std::optional<ArrayRef<int64_t>> kernel,
                                  ArrayRef<int64_t> strides,
                                  ArrayRef<int64_t> pads,
                                  ArrayRef<int64_t> dilations) {
  return verifyWindowAttrs(op, spatial, kernel, strides, pads, dilations,
                           ("needs " + Twine(spatial) +
                            " strides and dilations and " + Twine(2 * spatial) +
                            " pads for " + Twine(spatial) +
                            " spatial dimensions")
                               .str());
}

LogicalResult ConvOp::verify() {
  auto in = getInput().getType(), w = getWeight().getType(),
       out = getResult().getType();
  if (in.getRank() < 3)
    return emitOpError("input must be N x C x spatial..., got rank ")
           << in.getRank();
  if (w.getRank() != in.getRank())
    return emitOpError("weight rank ")
           << w.getRank() << " differs from input rank " << in.getRank();
  int64_t spatial = in.getRank() - 2;
  if (failed(verifyWindow(*this, spatial, std::nullopt, getStrides(), getPads(),
                          getDilations())))
    return failure();
  int64_t group = static_cast<int64_t>(getGroup());
  if (group <= 0)
    return emitOpError("'group' must be positive");
  int64_t channels = in.getDimSize(1), filters = w.getDimSize(0);
  if (!ShapedType::isDynamic(channels) && !w.isDynamicDim(1) &&
      llvm::checkedMul(w.getDimSize(1), group) != channels)
    return emitOpError("input has ")
           << channels << " channels but weight expects " << w.getDimSize(1)
           << " x group " << group;
  if (!ShapedType::isDynamic(filters) && filters % group != 0)
    return emitOpError("filter count ")
           << filters << " is not divisible by group " << group;
  if (Value bias = getBias()) {
    auto b = cast<RankedTensorType>(bias.getType());
    if (b.getRank() != 1 || !dimsCompatible(b.getDimSize(0), filters))
      return emitOpError("bias must be 1-D of size ") << filters;
  }
  if (in.getElementType() != w.getElementType() ||
      in.getElementType() != out.getElementType())
    return emitOpError("input, weight and result element types must match");
  SmallVector<int64_t> expected = {in.getDimSize(0), filters};
  for (int64_t i = 0; i < spatial; ++i)
    expected.push_back(windowOutputSize(
        in.getDimSize(i + 2), w.getDimSize(i + 2), getStrides()[i],
        getPads()[i], getPads()[i + spatial], getDilations()[i], false));
  return verifyResultShape(*this, expected, out.getShape());
}

LogicalResult PoolOp::verify() {
  auto in = getInput().getType(), out = getResult().getType();
  if (in.getRank() < 3)
    return emitOpError("input must be N x C x spatial..., got rank ")
           << in.getRank();
  int64_t spatial = in.getRank() - 2;
  SmallVector<int64_t> expected = {in.getDimSize(0), in.getDimSize(1)};
  if (getGlobal()) {
    if (!getKernel().empty() || !getStrides().empty() || !getPads().empty() ||
        !getDilations().empty())
      return emitOpError("global pooling takes no window attributes");
    expected.append(spatial, 1);
  } else {
    if ((int64_t)getKernel().size() != spatial)
      return emitOpError("'kernel' needs ") << spatial << " entries";
    if (failed(verifyWindow(*this, spatial, getKernel(), getStrides(),
                            getPads(), getDilations())))
      return failure();
    for (int64_t i = 0; i < spatial; ++i)
      expected.push_back(windowOutputSize(
          in.getDimSize(i + 2), getKernel()[i], getStrides()[i], getPads()[i],
          getPads()[i + spatial], getDilations()[i], getCeilMode()));
  }
  if (in.getElementType() != out.getElementType())
    return emitOpError("result element type differs from the input's");
  return verifyResultShape(*this, expected, out.getShape());
}

LogicalResult SoftmaxOp::verify() {
  auto in = getInput().getType();
  int64_t axis = static_cast<int64_t>(getAxis());
  if (!normalizeAxis(axis, in.getRank()))
    return emitOpError("'axis' ")
           << axis << " is out of range for rank " << in.getRank();
  return verifySameType(*this, in, getResult().getType());
}

/// Shared by layer_norm and rms_norm: `scale` and `bias` must broadcast to
/// the normalized (trailing) dimensions.
static LogicalResult verifyNorm(Operation *op, RankedTensorType in,
                                RankedTensorType out, int64_t axis,
                                double epsilon, Value scale, Value bias) {
  auto a = normalizeAxis(axis, in.getRank());
  if (!a)
    return op->emitOpError("'axis' ")
           << axis << " is out of range for rank " << in.getRank();
  if (epsilon < 0)
    return op->emitOpError("'epsilon' must be non-negative");
  ArrayRef<int64_t> normalized = in.getShape().drop_front(*a);
  for (Value v : {scale, bias}) {
    if (!v)
      continue;
    auto t = cast<RankedTensorType>(v.getType());
    auto b = broadcastShapes(t.getShape(), normalized);
    if (t.getRank() > (int64_t)normalized.size() || !b ||
        !shapesCompatible(*b, normalized))
      return op->emitOpError("scale/bias shape ")
             << shapeToString(t.getShape())
             << " does not broadcast to the normalized dimensions "
             << shapeToString(normalized);
  }
  return verifySameType(op, in, out);
}

LogicalResult LayerNormOp::verify() {
  return verifyNorm(*this, getInput().getType(), getResult().getType(),
                    getAxis(), getEpsilon().convertToDouble(), getScale(),
                    getBias());
}

LogicalResult RMSNormOp::verify() {
  return verifyNorm(*this, getInput().getType(), getResult().getType(),
                    getAxis(), getEpsilon().convertToDouble(), getScale(),
                    getBias());
}

LogicalResult BatchNormOp::verify() {
  auto in = getInput().getType();
  if (in.getRank() < 2)
    return emitOpError("input must have rank >= 2, got ") << in.getRank();
  int64_t channels = in.getDimSize(1);
  for (Value v : {getScale(), getBias(), getMean(), getVariance()}) {
    auto t = cast<RankedTensorType>(v.getType());
    if (t.getRank() != 1 || !dimsCompatible(t.getDimSize(0), channels))
      return emitOpError("scale, bias, mean and variance must be 1-D of the "
                         "channel count ")
             << channels;
  }
  if (!getRunningStats().empty()) {
    if (!getTraining())
      return emitOpError("running statistics results need 'training'");
    if (getRunningStats().size() != 2)
      return emitOpError("yields the running mean and variance: 2 "
                         "statistics results, got ")
             << getRunningStats().size();
    for (Value v : getRunningStats()) {
      auto t = cast<RankedTensorType>(v.getType());
      if (t.getRank() != 1 || !dimsCompatible(t.getDimSize(0), channels))
        return emitOpError("running statistics must be 1-D of the channel "
                           "count ")
               << channels;
    }
  }
  return verifySameType(*this, in, getResult().getType());
}

LogicalResult ReduceOp::verify() {
  auto in = getInput().getType(), out = getResult().getType();
  SmallVector<bool> reduced(in.getRank(), getAxes().empty());
  for (int64_t axis : getAxes()) {
    auto a = normalizeAxis(axis, in.getRank());
    if (!a)
      return emitOpError("axis ")
             << axis << " is out of range for rank " << in.getRank();
    if (reduced[*a])
      return emitOpError("axis ") << axis << " is listed twice";
    reduced[*a] = true;
  }
  bool isArg =
      getKind() == ReduceKind::ArgMax || getKind() == ReduceKind::ArgMin;
  if (isArg && getAxes().size() != 1)
    return emitOpError("'")
           << stringifyReduceKind(getKind()) << "' needs exactly one axis";
  if (!isArg && getSelectLastIndex())
    return emitOpError("select_last_index applies to arg_max and arg_min, "
                       "not '")
           << stringifyReduceKind(getKind()) << "'";
  Type expectedElem =
      isArg ? Type(IntegerType::get(getContext(), 64)) : in.getElementType();
  if (out.getElementType() != expectedElem)
    return emitOpError("result element type ")
           << out.getElementType() << " should be " << expectedElem;
  SmallVector<int64_t> expected;
  for (int64_t i = 0; i < in.getRank(); ++i) {
    if (!reduced[i])
      expected.push_back(in.getDimSize(i));
    else if (getKeepdims())
      expected.push_back(1);
  }
  return verifyResultShape(*this, expected, out.getShape());
}

LogicalResult SoftmaxCrossEntropyOp::verify() {
  auto logits = getLogits().getType(), labels = getLabels().getType(),
       out = getResult().getType();
  if (logits.getRank() < 2)
    return emitOpError("logits must be N x C (x D...), got rank ")
           << logits.getRank();
  if (!labels.getElementType().isInteger(32) &&
      !labels.getElementType().isInteger(64))
    return emitOpError("labels must be i32 or i64 class indices, got ")
           << labels.getElementType();
  SmallVector<int64_t> labelShape = {logits.getDimSize(0)};
  llvm::append_range(labelShape, logits.getShape().drop_front(2));
  if (!shapesCompatible(labelShape, labels.getShape()))
    return emitOpError("labels shape ")
           << shapeToString(labels.getShape()) << " should be "
           << shapeToString(labelShape);
  if (out.getElementType() != logits.getElementType())
    return emitOpError("result element type must be the logits' ")
           << logits.getElementType();
  SmallVector<int64_t> expected;
  if (getReduction() == LossReduction::None)
    expected = labelShape;
  return verifyResultShape(*this, expected, out.getShape());
}
