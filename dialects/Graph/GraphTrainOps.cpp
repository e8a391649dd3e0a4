//===- GraphTrainOps.cpp - Training ops of the graph dialect ----*- C++ -*-===//
//
// Part of DistOpt. Verifiers and FLOP counts of the training ops (gradients,
// state, optimizer updates). The FLOP rules mirror the analytic backward
// costs of the forward ops (GraphCost.cpp, lib/Cost/ModelDesc.cpp) so that
// explicit backward graphs and the analytic backward costs can be compared.
//
//===----------------------------------------------------------------------===//
#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/GraphShapeUtils.h"

#include "llvm/Support/CheckedArithmetic.h"

using namespace mlir;
using namespace distopt::graph;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

static RankedTensorType tensorOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// `a` and `b` have equal element types and compatible shapes.
static LogicalResult verifySameTensor(Operation *op, Value a, Value b,
                                      StringRef aName, StringRef bName) {
  auto at = tensorOf(a), bt = tensorOf(b);
  if (at.getElementType() != bt.getElementType() ||
      !shapesCompatible(at.getShape(), bt.getShape()))
    return op->emitOpError()
           << "'" << aName << "' (" << at << ") and '" << bName << "' (" << bt
           << ") must have the same type";
  return success();
}

static LogicalResult verifyFloat(Operation *op, Value v, StringRef name) {
  if (!isa<FloatType>(tensorOf(v).getElementType()))
    return op->emitOpError()
           << "'" << name << "' must have a float element type, got "
           << tensorOf(v).getElementType();
  return success();
}

static LogicalResult verifyScalar(Operation *op, Value v, StringRef name,
                                  bool isI1) {
  auto t = tensorOf(v);
  bool ok = t.getRank() == 0 && (isI1 ? t.getElementType().isInteger(1)
                                      : t.getElementType().isF32());
  if (!ok)
    return op->emitOpError()
           << "'" << name << "' must be a "
           << (isI1 ? "tensor<i1>" : "tensor<f32>") << " scalar, got " << t;
  return success();
}

/// Shared window checks of the conv gradients: rank, window attributes.
static LogicalResult verifyConvWindow(Operation *op, RankedTensorType x,
                                      RankedTensorType w, RankedTensorType dy,
                                      ArrayRef<int64_t> strides,
                                      ArrayRef<int64_t> pads,
                                      ArrayRef<int64_t> dilations,
                                      int64_t group) {
  if (x.getRank() < 3 || w.getRank() != x.getRank() ||
      dy.getRank() != x.getRank())
    return op->emitOpError("input, weight and gradient must all be rank >= 3 "
                           "of the same rank");
  int64_t spatial = x.getRank() - 2;
  if (failed(verifyWindowAttrs(
          op, spatial, std::nullopt, strides, pads, dilations,
          ("needs " + Twine(spatial) + " strides and dilations and " +
           Twine(2 * spatial) + " pads")
              .str())))
    return failure();
  if (group <= 0)
    return op->emitOpError("'group' must be positive");
  if (x.getElementType() != w.getElementType() ||
      x.getElementType() != dy.getElementType())
    return op->emitOpError("element types must match");
  SmallVector<int64_t> expected = {x.getDimSize(0), w.getDimSize(0)};
  for (int64_t i = 0; i < spatial; ++i)
    expected.push_back(
        windowOutputSize(x.getDimSize(i + 2), w.getDimSize(i + 2), strides[i],
                         pads[i], pads[i + spatial], dilations[i], false));
  if (!shapesCompatible(expected, dy.getShape()))
    return op->emitOpError("gradient shape ")
           << shapeToString(dy.getShape())
           << " is not the forward output shape " << shapeToString(expected);
  if (!ShapedType::isDynamic(x.getDimSize(1)) && !w.isDynamicDim(1) &&
      llvm::checkedMul(w.getDimSize(1), group) != x.getDimSize(1))
    return op->emitOpError("input has ")
           << x.getDimSize(1) << " channels but weight expects "
           << w.getDimSize(1) << " x group " << group;
  // As graph.conv: each group computes its share of the filters (an ONNX
  // ConvTranspose's input channels, imported as conv_grad_input).
  if (!w.isDynamicDim(0) && w.getDimSize(0) % group != 0)
    return op->emitOpError("filter count ")
           << w.getDimSize(0) << " is not divisible by group " << group;
  return success();
}

/// 2 * output elements * (C/group) * kernel volume.
static double convFlops(RankedTensorType w, RankedTensorType dy) {
  double k = 1;
  for (int64_t d : w.getShape().drop_front())
    k *= ShapedType::isDynamic(d) ? 1 : d;
  return 2 * tensorElements(dy) * k;
}

//===----------------------------------------------------------------------===//
// State and randomness
//===----------------------------------------------------------------------===//

LogicalResult StateOp::verify() {
  if (getSymName().empty())
    return emitOpError("needs a non-empty name");
  if (!getResult().getType().hasStaticShape())
    return emitOpError("state buffers need a static shape, got ")
           << getResult().getType();
  return success();
}

LogicalResult DropoutMaskOp::verify() {
  double r = getRatio().convertToDouble();
  if (!(r >= 0 && r < 1))
    return emitOpError("'ratio' must be in [0, 1), got ") << r;
  for (auto [v, what] :
       {std::pair(getStep(), "step"), std::pair(getMicrobatch(), "microbatch")})
    if (v) {
      auto t = cast<RankedTensorType>(v.getType());
      if (t.getRank() != 0 || !t.getElementType().isF32())
        return emitOpError("'") << what << "' must be a tensor<f32> counter, "
                                << "got " << t;
    }
  if (getMicrobatch() && !getStep())
    return emitOpError("a 'microbatch' index needs a 'step' counter");
  return verifyFloat(*this, getResult(), "result");
}
double DropoutMaskOp::getFlopCount() { return 0; }

//===----------------------------------------------------------------------===//
// Elementwise, softmax and loss gradients
//===----------------------------------------------------------------------===//

LogicalResult UnaryGradOp::verify() {
  switch (getKind()) {
  case UnaryKind::Not:
  case UnaryKind::IsNaN:
  case UnaryKind::IsInf:
    return emitOpError("'")
           << stringifyUnaryKind(getKind()) << "' has no gradient";
  default:
    break;
  }
  if (failed(verifyFloat(*this, getInput(), "input")) ||
      failed(verifySameTensor(*this, getInput(), getGrad(), "input", "grad")))
    return failure();
  return verifySameTensor(*this, getGrad(), getResult(), "grad", "result");
}
double UnaryGradOp::getFlopCount() {
  return 2 * tensorElements(getResult().getType()) * unaryFlopsPerElement(getKind());
}

LogicalResult SoftmaxGradOp::verify() {
  if (!normalizeAxis(getAxis(), tensorOf(getOutput()).getRank()))
    return emitOpError("'axis' ") << getAxis() << " is out of range for rank "
                                  << tensorOf(getOutput()).getRank();
  if (failed(verifyFloat(*this, getOutput(), "output")) ||
      failed(verifySameTensor(*this, getOutput(), getGrad(), "output", "grad")))
    return failure();
  return verifySameTensor(*this, getGrad(), getResult(), "grad", "result");
}
double SoftmaxGradOp::getFlopCount() {
  return 4 * tensorElements(getResult().getType());
}

LogicalResult SoftmaxCrossEntropyGradOp::verify() {
  auto logits = tensorOf(getLogits()), labels = tensorOf(getLabels());
  if (logits.getRank() < 2)
    return emitOpError("logits must be N x C x ..., got rank ")
           << logits.getRank();
  if (!labels.getElementType().isInteger(32) &&
      !labels.getElementType().isInteger(64))
    return emitOpError("labels must be i32 or i64, got ")
           << labels.getElementType();
  SmallVector<int64_t> expected = {logits.getDimSize(0)};
  llvm::append_range(expected, logits.getShape().drop_front(2));
  if (!shapesCompatible(expected, labels.getShape()))
    return emitOpError("labels shape ")
           << shapeToString(labels.getShape()) << " must be "
           << shapeToString(expected);
  auto grad = tensorOf(getGrad());
  bool none = getReduction() == LossReduction::None;
  if (none ? !shapesCompatible(grad.getShape(), labels.getShape())
           : grad.getRank() != 0)
    return emitOpError("'grad' must have the loss's shape ")
           << (none ? shapeToString(labels.getShape()) : "scalar") << ", got "
           << shapeToString(grad.getShape());
  if (failed(verifyFloat(*this, getLogits(), "logits")))
    return failure();
  return verifySameTensor(*this, getLogits(), getResult(), "logits", "result");
}
double SoftmaxCrossEntropyGradOp::getFlopCount() {
  return 2 * tensorElements(getResult().getType());
}

//===----------------------------------------------------------------------===//
// Normalization gradients
//===----------------------------------------------------------------------===//

/// Checks `kind`, `axis` and `epsilon`; returns the normalized dimensions'
/// shape (the parameters' shape) in `paramShape`.
static LogicalResult verifyNormKind(Operation *op, RankedTensorType x,
                                    StringRef kind, int64_t axis,
                                    double epsilon,
                                    SmallVectorImpl<int64_t> &paramShape) {
  if (epsilon < 0)
    return op->emitOpError("'epsilon' must be non-negative");
  if (kind == "batch") {
    if (x.getRank() < 2)
      return op->emitOpError("batch normalization needs rank >= 2, got ")
             << x.getRank();
    paramShape.push_back(x.getDimSize(1));
    return success();
  }
  if (kind != "layer" && kind != "rms")
    return op->emitOpError("'kind' must be \"layer\", \"rms\" or \"batch\", "
                           "got \"")
           << kind << "\"";
  auto a = normalizeAxis(axis, x.getRank());
  if (!a)
    return op->emitOpError("'axis' ")
           << axis << " is out of range for rank " << x.getRank();
  llvm::append_range(paramShape, x.getShape().drop_front(*a));
  return success();
}

LogicalResult NormGradOp::verify() {
  SmallVector<int64_t> paramShape;
  if (failed(verifyFloat(*this, getInput(), "input")) ||
      failed(verifyNormKind(*this, tensorOf(getInput()), getKind(), getAxis(),
                            getEpsilon().convertToDouble(), paramShape)))
    return failure();
  auto scale = tensorOf(getScale());
  auto b = broadcastShapes(scale.getShape(), paramShape);
  if (!b || !shapesCompatible(*b, paramShape))
    return emitOpError("scale shape ")
           << shapeToString(scale.getShape())
           << " does not broadcast to the normalized shape "
           << shapeToString(paramShape);
  if (failed(verifySameTensor(*this, getInput(), getGrad(), "input", "grad")))
    return failure();
  return verifySameTensor(*this, getInput(), getResult(), "input", "result");
}
double NormGradOp::getFlopCount() {
  return 10 * tensorElements(getResult().getType());
}

LogicalResult NormGradParamsOp::verify() {
  SmallVector<int64_t> paramShape;
  if (failed(verifyFloat(*this, getInput(), "input")) ||
      failed(verifyNormKind(*this, tensorOf(getInput()), getKind(), getAxis(),
                            getEpsilon().convertToDouble(), paramShape)) ||
      failed(verifySameTensor(*this, getInput(), getGrad(), "input", "grad")))
    return failure();
  if (getResults().empty() || getResults().size() > 2)
    return emitOpError("yields the scale gradient and optionally the bias "
                       "gradient (1 or 2 results), got ")
           << getResults().size();
  for (Value r : getResults()) {
    auto t = tensorOf(r);
    if (t.getElementType() != tensorOf(getInput()).getElementType() ||
        !shapesCompatible(t.getShape(), paramShape))
      return emitOpError("results must have shape ")
             << shapeToString(paramShape) << " and the input's element type, "
             << "got " << t;
  }
  return success();
}
double NormGradParamsOp::getFlopCount() {
  return 2 * tensorElements(getInput().getType());
}

//===----------------------------------------------------------------------===//
// Convolution, pooling and lookup gradients
//===----------------------------------------------------------------------===//

LogicalResult ConvGradInputOp::verify() {
  return verifyConvWindow(*this, getResult().getType(), getWeight().getType(),
                          getGrad().getType(), getStrides(), getPads(),
                          getDilations(), getGroup());
}
double ConvGradInputOp::getFlopCount() {
  return convFlops(getWeight().getType(), getGrad().getType());
}

LogicalResult ConvGradWeightOp::verify() {
  return verifyConvWindow(*this, getInput().getType(), getResult().getType(),
                          getGrad().getType(), getStrides(), getPads(),
                          getDilations(), getGroup());
}
double ConvGradWeightOp::getFlopCount() {
  return convFlops(getResult().getType(), getGrad().getType());
}

LogicalResult PoolGradOp::verify() {
  if (getKind() == PoolKind::L2)
    return emitOpError("'l2' pooling has no gradient op");
  auto x = getInput().getType(), dy = getGrad().getType();
  if (x.getRank() < 3)
    return emitOpError("input must be N x C x spatial..., got rank ")
           << x.getRank();
  int64_t spatial = x.getRank() - 2;
  SmallVector<int64_t> expected = {x.getDimSize(0), x.getDimSize(1)};
  if (getGlobal()) {
    if (!getKernel().empty() || !getStrides().empty() || !getPads().empty() ||
        !getDilations().empty())
      return emitOpError("global pooling takes no window attributes");
    expected.append(spatial, 1);
  } else {
    if (failed(verifyWindowAttrs(*this, spatial, getKernel(), getStrides(),
                                 getPads(), getDilations(),
                                 ("needs " + Twine(spatial) +
                                  " kernel, stride and dilation entries and " +
                                  Twine(2 * spatial) + " pads")
                                     .str())))
      return failure();
    for (int64_t i = 0; i < spatial; ++i)
      expected.push_back(windowOutputSize(
          x.getDimSize(i + 2), getKernel()[i], getStrides()[i], getPads()[i],
          getPads()[i + spatial], getDilations()[i], getCeilMode()));
  }
  if (!shapesCompatible(expected, dy.getShape()))
    return emitOpError("gradient shape ")
           << shapeToString(dy.getShape())
           << " is not the forward output shape " << shapeToString(expected);
  if (x.getElementType() != dy.getElementType())
    return emitOpError("gradient element type differs from the input's");
  return verifySameTensor(*this, getInput(), getResult(), "input", "result");
}
double PoolGradOp::getFlopCount() { return tensorElements(getInput().getType()); }

LogicalResult ScatterAddOp::verify() {
  auto indices = getIndices().getType(), grad = getGrad().getType(),
       out = getResult().getType();
  if (failed(verifyIndexType(*this, indices)))
    return failure();
  auto axis = normalizeAxis(getAxis(), out.getRank());
  if (!axis)
    return emitOpError("'axis' ")
           << getAxis() << " is out of range for rank " << out.getRank();
  if (grad.getElementType() != out.getElementType())
    return emitOpError("gradient and result element types must match");
  if (getElements()) {
    if (indices.getRank() != out.getRank() ||
        !shapesCompatible(indices.getShape(), grad.getShape()))
      return emitOpError("with 'elements', indices ")
             << shapeToString(indices.getShape()) << " and gradient "
             << shapeToString(grad.getShape())
             << " must have one shape of the result's rank " << out.getRank();
    return success();
  }
  SmallVector<int64_t> expected(out.getShape().take_front(*axis));
  llvm::append_range(expected, indices.getShape());
  llvm::append_range(expected, out.getShape().drop_front(*axis + 1));
  if (!shapesCompatible(expected, grad.getShape()))
    return emitOpError("gradient shape ")
           << shapeToString(grad.getShape()) << " must be "
           << shapeToString(expected);
  if (grad.getElementType() != out.getElementType())
    return emitOpError("gradient and result element types must match");
  return success();
}
double ScatterAddOp::getFlopCount() { return tensorElements(getGrad().getType()); }

//===----------------------------------------------------------------------===//
// Loss scaling and optimizer updates
//===----------------------------------------------------------------------===//

LogicalResult UnscaleOp::verify() {
  if (failed(verifyScalar(*this, getScale(), "scale", false)))
    return failure();
  if (getResults().size() != getGrads().size() + 1)
    return emitOpError("needs one result per gradient plus the found_inf "
                       "flag: expected ")
           << getGrads().size() + 1 << " results, got " << getResults().size();
  for (auto [g, r] : llvm::zip(getGrads(), getResults())) {
    if (failed(verifyFloat(*this, g, "grads")))
      return failure();
    auto gt = tensorOf(g), rt = tensorOf(r);
    if (!rt.getElementType().isF32() ||
        !shapesCompatible(gt.getShape(), rt.getShape()))
      return emitOpError("result for gradient ")
             << gt << " must be f32 of the same shape, got " << rt;
  }
  return verifyScalar(*this, getResults().back(), "found_inf", true);
}
double UnscaleOp::getFlopCount() {
  double n = 0;
  for (Value g : getGrads())
    n += tensorElements(g.getType());
  return 2 * n;
}

LogicalResult LossScaleUpdateOp::verify() {
  if (failed(verifyScalar(*this, getScale(), "scale", false)) ||
      failed(verifyScalar(*this, getGoodSteps(), "good_steps", false)) ||
      failed(verifyScalar(*this, getFoundInf(), "found_inf", true)) ||
      failed(verifyScalar(*this, getNewScale(), "new_scale", false)) ||
      failed(verifyScalar(*this, getNewGoodSteps(), "new_good_steps", false)))
    return failure();
  if (getGrowthFactor().convertToDouble() < 1 ||
      getBackoffFactor().convertToDouble() <= 0 ||
      getBackoffFactor().convertToDouble() >= 1 || getGrowthInterval() < 1)
    return emitOpError("needs growth_factor >= 1, 0 < backoff_factor < 1 and "
                       "growth_interval >= 1");
  return success();
}
double LossScaleUpdateOp::getFlopCount() { return 2; }

/// Parameter, gradient and results of an update: same shape, f32 param.
static LogicalResult verifyUpdate(Operation *op, Value param, Value grad,
                                  Value step, Value skip, double lr) {
  if (failed(verifyFloat(op, param, "param")))
    return failure();
  auto p = tensorOf(param), g = tensorOf(grad);
  if (!shapesCompatible(p.getShape(), g.getShape()) ||
      g.getElementType() != p.getElementType())
    return op->emitOpError("gradient ")
           << g << " must have the parameter's type " << p
           << "; cast or unscale it first";
  if (failed(verifyScalar(op, step, "step", false)) ||
      (skip && failed(verifyScalar(op, skip, "skip", true))))
    return failure();
  if (!(lr >= 0))
    return op->emitOpError("'lr' must be non-negative, got ") << lr;
  for (Value r : op->getResults())
    if (failed(verifySameTensor(op, param, r, "param", "result")))
      return failure();
  return success();
}

LogicalResult SgdUpdateOp::verify() {
  if (failed(verifyUpdate(*this, getParam(), getGrad(), getStep(), getSkip(),
                          getLr().convertToDouble())))
    return failure();
  bool hasBuf = static_cast<bool>(getMomentumBuf());
  if (getMomentum().convertToDouble() != 0 && !hasBuf)
    return emitOpError("momentum ") << getMomentum().convertToDouble()
                                    << " needs a momentum_buf operand";
  if (getNesterov() && !hasBuf)
    return emitOpError("nesterov needs momentum and a momentum_buf operand");
  if (getResults().size() != (hasBuf ? 2u : 1u))
    return emitOpError("yields the parameter")
           << (hasBuf ? " and the momentum buffer" : "") << ": expected "
           << (hasBuf ? 2 : 1) << " results, got " << getResults().size();
  if (hasBuf && failed(verifySameTensor(*this, getParam(), getMomentumBuf(),
                                        "param", "momentum_buf")))
    return failure();
  return success();
}
double SgdUpdateOp::getFlopCount() {
  return (getMomentumBuf() ? 4 : 2) * tensorElements(getParam().getType());
}

LogicalResult AdamUpdateOp::verify() {
  if (failed(verifyUpdate(*this, getParam(), getGrad(), getStep(), getSkip(),
                          getLr().convertToDouble())) ||
      failed(verifySameTensor(*this, getParam(), getExpAvg(), "param",
                              "exp_avg")) ||
      failed(verifySameTensor(*this, getParam(), getExpAvgSq(), "param",
                              "exp_avg_sq")))
    return failure();
  double b1 = getBeta1().convertToDouble(), b2 = getBeta2().convertToDouble();
  if (!(b1 >= 0 && b1 < 1 && b2 >= 0 && b2 < 1))
    return emitOpError("betas must be in [0, 1), got ") << b1 << ", " << b2;
  return success();
}
double AdamUpdateOp::getFlopCount() {
  return 12 * tensorElements(getParam().getType());
}
