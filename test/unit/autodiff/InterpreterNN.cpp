//===- InterpreterNN.cpp - Convolution and pooling --------------*- C++ -*-===//
//
// Part of DistOpt. The test interpreter's 2-D convolution (and its two
// gradients) and pooling (max, avg, l2; max/avg gradients), from the op
// descriptions.
//
//===----------------------------------------------------------------------===//
#include "InterpreterNN.h"

#include "dialects/Graph/GraphOps.h"

#include <cmath>

using namespace mlir;
using namespace distopt::testing;
namespace g = distopt::graph;

/// Visits every (output, kernel) pair of a 2-D convolution or pooling window
/// whose input position is inside the input: f(n, m, oh, ow, kh, kw, ih, iw).
template <typename F>
static void window2d(const std::vector<int64_t> &in,
                     const std::vector<int64_t> &out, int64_t kh, int64_t kw,
                     ArrayRef<int64_t> strides, ArrayRef<int64_t> pads,
                     ArrayRef<int64_t> dilations, F f) {
  for (int64_t n = 0; n < out[0]; ++n)
    for (int64_t m = 0; m < out[1]; ++m)
      for (int64_t oh = 0; oh < out[2]; ++oh)
        for (int64_t ow = 0; ow < out[3]; ++ow)
          for (int64_t a = 0; a < kh; ++a)
            for (int64_t b = 0; b < kw; ++b) {
              int64_t ih = oh * strides[0] - pads[0] + a * dilations[0];
              int64_t iw = ow * strides[1] - pads[1] + b * dilations[1];
              if (ih >= 0 && ih < in[2] && iw >= 0 && iw < in[3])
                f(n, m, oh, ow, a, b, ih, iw);
            }
}

static int64_t at4(const std::vector<int64_t> &s, int64_t a, int64_t b,
                   int64_t c, int64_t d) {
  return ((a * s[1] + b) * s[2] + c) * s[3] + d;
}

bool distopt::testing::convValue(Operation *o, const Tensor &first,
                                 const Tensor &second, const Tensor *bias,
                                 Tensor &out, std::string &error) {
  auto strides = o->getAttrOfType<DenseI64ArrayAttr>("strides");
  auto pads = o->getAttrOfType<DenseI64ArrayAttr>("pads");
  auto dil = o->getAttrOfType<DenseI64ArrayAttr>("dilations");
  auto groupAttr = o->getAttrOfType<IntegerAttr>("group");
  int64_t group = groupAttr ? groupAttr.getInt() : 1;
  Type rt = o->getResult(0).getType();
  // x: N x C x H x W, w: M x C/g x KH x KW, y: N x M x P x Q.
  Tensor x, w, y;
  if (isa<g::ConvOp>(o)) {
    x = first, w = second, y = zerosOf(rt);
  } else if (isa<g::ConvGradInputOp>(o)) {
    y = first, w = second, x = zerosOf(rt);
  } else {
    x = first, y = second, w = zerosOf(rt);
  }
  if (x.shape.size() != 4) {
    error = "the interpreter runs 2-D convolutions only";
    return false;
  }
  int64_t cg = w.shape[1], mg = w.shape[0] / group;
  window2d(x.shape, y.shape, w.shape[2], w.shape[3], strides, pads, dil,
           [&](int64_t n, int64_t m, int64_t oh, int64_t ow, int64_t a,
               int64_t b, int64_t ih, int64_t iw) {
             int64_t gi = m / mg;
             for (int64_t c = 0; c < cg; ++c) {
               int64_t xi = at4(x.shape, n, gi * cg + c, ih, iw);
               int64_t wi = at4(w.shape, m, c, a, b);
               int64_t yi = at4(y.shape, n, m, oh, ow);
               if (isa<g::ConvOp>(o))
                 y.data[yi] += x.data[xi] * w.data[wi];
               else if (isa<g::ConvGradInputOp>(o))
                 x.data[xi] += y.data[yi] * w.data[wi];
               else
                 w.data[wi] += y.data[yi] * x.data[xi];
             }
           });
  if (isa<g::ConvOp>(o) && bias)
    for (int64_t i = 0; i < y.size(); ++i)
      y.data[i] += bias->data[(i / (y.shape[2] * y.shape[3])) % y.shape[1]];
  out = isa<g::ConvOp>(o) ? y : isa<g::ConvGradInputOp>(o) ? x : w;
  return true;
}

bool distopt::testing::poolValue(Operation *o, const Tensor &x,
                                 const Tensor *dy, Tensor &out,
                                 std::string &error) {
  bool grad = dy != nullptr;
  g::PoolKind kind = o->getAttrOfType<g::PoolKindAttr>("kind").getValue();
  bool isMax = kind == g::PoolKind::Max, isL2 = kind == g::PoolKind::L2;
  if (grad && isL2) {
    error = "graph.pool_grad has no l2 form";
    return false;
  }
  bool global = o->hasAttr("global");
  bool includePad = o->hasAttr("count_include_pad");
  Tensor y = grad ? *dy : zerosOf(o->getResult(0).getType());
  Tensor dx = zerosOf(o->getOperand(0).getType());
  std::vector<int64_t> kernel = {x.shape[2], x.shape[3]}, one = {1, 1},
                       zero = {0, 0, 0, 0};
  ArrayRef<int64_t> k = kernel, st = one, pd = zero, dl = one;
  if (!global) {
    k = o->getAttrOfType<DenseI64ArrayAttr>("kernel").asArrayRef();
    st = o->getAttrOfType<DenseI64ArrayAttr>("strides").asArrayRef();
    pd = o->getAttrOfType<DenseI64ArrayAttr>("pads").asArrayRef();
    dl = o->getAttrOfType<DenseI64ArrayAttr>("dilations").asArrayRef();
  }
  // Per output: the count of in-bounds positions and the max position.
  std::vector<double> best(y.size(), -INFINITY), count(y.size(), 0);
  std::vector<int64_t> arg(y.size(), -1);
  window2d(x.shape, y.shape, k[0], k[1], st, pd, dl,
           [&](int64_t n, int64_t c, int64_t oh, int64_t ow, int64_t, int64_t,
               int64_t ih, int64_t iw) {
             int64_t yi = at4(y.shape, n, c, oh, ow);
             int64_t xi = at4(x.shape, n, c, ih, iw);
             count[yi] += 1;
             if (x.data[xi] > best[yi]) {
               best[yi] = x.data[xi];
               arg[yi] = xi;
             }
           });
  window2d(x.shape, y.shape, k[0], k[1], st, pd, dl,
           [&](int64_t n, int64_t c, int64_t oh, int64_t ow, int64_t, int64_t,
               int64_t ih, int64_t iw) {
             int64_t yi = at4(y.shape, n, c, oh, ow);
             int64_t xi = at4(x.shape, n, c, ih, iw);
             double div = includePad ? k[0] * k[1] : count[yi];
             if (isMax) {
               if (grad && xi == arg[yi])
                 dx.data[xi] += y.data[yi];
               if (!grad)
                 y.data[yi] = best[yi];
             } else if (isL2) {
               y.data[yi] += x.data[xi] * x.data[xi];
             } else if (grad) {
               dx.data[xi] += y.data[yi] / div;
             } else {
               y.data[yi] += x.data[xi] / div;
             }
           });
  if (isL2)
    for (double &v : y.data)
      v = std::sqrt(v);
  out = grad ? dx : y;
  return true;
}
