//===- NormConvTest.cpp - Norms, softmax, conv, pooling --------*- C++ -*-===//
#include "TestUtil.h"

#include <algorithm>

using namespace distrt_test;

TEST_F(RuntimeTest, LayerNormForwardAndGradients) {
  const int64_t rows = 3, d = 5;
  const float eps = 1e-5f;
  Tensor x({rows, d}), g({d}), b({d}), y({rows, d}), mean({rows}),
      var({rows}), w({rows, d});
  randomize(x, 51);
  randomize(g, 52, 0.5f, 1.5f);
  randomize(b, 53);
  randomize(w, 54);
  ASSERT_OK(distrt_layernorm_fwd(ctx, x.d(), g.d(), b.d(), y.d(), mean.d(),
                                 var.d(), eps));
  for (int64_t r = 0; r < rows; ++r) {
    float m = 0, v = 0;
    for (int64_t j = 0; j < d; ++j)
      m += x[r * d + j] / d;
    for (int64_t j = 0; j < d; ++j)
      v += (x[r * d + j] - m) * (x[r * d + j] - m) / d;
    ASSERT_NEAR(mean[r], m, 1e-5f);
    ASSERT_NEAR(var[r], v, 1e-5f);
    for (int64_t j = 0; j < d; ++j)
      ASSERT_NEAR(y[r * d + j],
                  (x[r * d + j] - m) / std::sqrt(v + eps) * g[j] + b[j], 1e-4f);
  }
  Tensor dx({rows, d}), dg({d}), db({d});
  ASSERT_OK(distrt_layernorm_bwd_data(ctx, x.d(), w.d(), g.d(), mean.d(),
                                      var.d(), dx.d(), eps));
  ASSERT_OK(distrt_layernorm_bwd_weight(ctx, x.d(), w.d(), mean.d(), var.d(),
                                        dg.d(), db.d(), eps, 0));
  auto forward = [&] {
    EXPECT_OK(distrt_layernorm_fwd(ctx, x.d(), g.d(), b.d(), y.d(), nullptr,
                                   nullptr, eps));
    return y.v;
  };
  checkGradient(x.v, forward, w.v, dx.v, "layernorm dx", 1e-3f);
  checkGradient(g.v, forward, w.v, dg.v, "layernorm dscale", 1e-3f);
  checkGradient(b.v, forward, w.v, db.v, "layernorm dshift", 1e-3f);
}

TEST_F(RuntimeTest, RmsNormForwardAndGradients) {
  const int64_t rows = 4, d = 6;
  const float eps = 1e-6f;
  Tensor x({rows, d}), g({d}), y({rows, d}), w({rows, d}), dx({rows, d}),
      dg({d});
  randomize(x, 61);
  randomize(g, 62, 0.5f, 1.5f);
  randomize(w, 63);
  ASSERT_OK(distrt_rmsnorm_fwd(ctx, x.d(), g.d(), y.d(), eps));
  for (int64_t r = 0; r < rows; ++r) {
    float ss = 0;
    for (int64_t j = 0; j < d; ++j)
      ss += x[r * d + j] * x[r * d + j];
    float rms = std::sqrt(ss / d + eps);
    for (int64_t j = 0; j < d; ++j)
      ASSERT_NEAR(y[r * d + j], x[r * d + j] / rms * g[j], 1e-5f);
  }
  ASSERT_OK(distrt_rmsnorm_bwd_data(ctx, x.d(), w.d(), g.d(), dx.d(), eps));
  ASSERT_OK(distrt_rmsnorm_bwd_weight(ctx, x.d(), w.d(), dg.d(), eps, 0));
  auto forward = [&] {
    EXPECT_OK(distrt_rmsnorm_fwd(ctx, x.d(), g.d(), y.d(), eps));
    return y.v;
  };
  checkGradient(x.v, forward, w.v, dx.v, "rmsnorm dx", 1e-3f);
  checkGradient(g.v, forward, w.v, dg.v, "rmsnorm dscale", 1e-3f);
}

TEST_F(RuntimeTest, BatchNormTrainingInferenceAndGradients) {
  const int64_t n = 2, c = 3, h = 2, wd = 2;
  const float eps = 1e-5f;
  Tensor x({n, c, h, wd}), g({c}), b({c}), y({n, c, h, wd}), m({c}), v({c}),
      rm({c}, 0.0f), rv({c}, 1.0f), w({n, c, h, wd});
  randomize(x, 71);
  randomize(g, 72, 0.5f, 1.5f);
  randomize(b, 73);
  randomize(w, 74);
  ASSERT_OK(distrt_batchnorm_fwd_training(ctx, x.d(), g.d(), b.d(), y.d(),
                                          m.d(), v.d(), rm.d(), rv.d(), eps,
                                          0.1f));
  for (int64_t ch = 0; ch < c; ++ch) {
    float mu = 0, var = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t s = 0; s < h * wd; ++s)
        mu += x[(i * c + ch) * h * wd + s] / (n * h * wd);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t s = 0; s < h * wd; ++s) {
        float dlt = x[(i * c + ch) * h * wd + s] - mu;
        var += dlt * dlt / (n * h * wd);
      }
    ASSERT_NEAR(m[ch], mu, 1e-5f);
    ASSERT_NEAR(v[ch], var, 1e-5f);
    ASSERT_NEAR(rm[ch], 0.1f * mu, 1e-5f);
    ASSERT_NEAR(rv[ch], 0.9f + 0.1f * var * 8.0f / 7.0f, 1e-5f);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t s = 0; s < h * wd; ++s) {
        int64_t at = (i * c + ch) * h * wd + s;
        ASSERT_NEAR(y[at], (x[at] - mu) / std::sqrt(var + eps) * g[ch] + b[ch],
                    1e-4f);
      }
  }
  // Inference with the batch statistics reproduces the training output.
  Tensor yi({n, c, h, wd});
  ASSERT_OK(distrt_batchnorm_fwd_inference(ctx, x.d(), g.d(), b.d(), m.d(),
                                           v.d(), yi.d(), eps));
  expectClose(yi.v, y.v, 1e-5f, "batchnorm inference");

  Tensor dx({n, c, h, wd}), dg({c}), db({c});
  ASSERT_OK(distrt_batchnorm_bwd_data(ctx, x.d(), w.d(), g.d(), m.d(), v.d(),
                                      dx.d(), eps));
  ASSERT_OK(distrt_batchnorm_bwd_weight(ctx, x.d(), w.d(), m.d(), v.d(),
                                        dg.d(), db.d(), eps, 0));
  Tensor m2({c}), v2({c});
  auto forward = [&] {
    EXPECT_OK(distrt_batchnorm_fwd_training(ctx, x.d(), g.d(), b.d(), y.d(),
                                            m2.d(), v2.d(), nullptr, nullptr,
                                            eps, 0.1f));
    return y.v;
  };
  checkGradient(x.v, forward, w.v, dx.v, "batchnorm dx", 1e-3f);
  checkGradient(g.v, forward, w.v, dg.v, "batchnorm dscale", 1e-3f);
  checkGradient(b.v, forward, w.v, db.v, "batchnorm dshift", 1e-3f);
}

TEST_F(RuntimeTest, SoftmaxAndLogSoftmaxWithGradients) {
  for (int log = 0; log <= 1; ++log) {
    Tensor x({2, 4, 3}), y({2, 4, 3}), w({2, 4, 3}), dx({2, 4, 3});
    randomize(x, 81, -2.f, 2.f);
    randomize(w, 82);
    ASSERT_OK(distrt_softmax(ctx, x.d(), y.d(), 1, log)); // middle axis
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t k = 0; k < 3; ++k) {
        float s = 0;
        for (int64_t j = 0; j < 4; ++j)
          s += std::exp(x[(i * 4 + j) * 3 + k]);
        for (int64_t j = 0; j < 4; ++j) {
          float p = std::exp(x[(i * 4 + j) * 3 + k]) / s;
          ASSERT_NEAR(y[(i * 4 + j) * 3 + k], log ? std::log(p) : p, 1e-5f);
        }
      }
    ASSERT_OK(distrt_softmax_bwd(ctx, y.d(), w.d(), dx.d(), -2, log));
    auto forward = [&] {
      EXPECT_OK(distrt_softmax(ctx, x.d(), y.d(), 1, log));
      return y.v;
    };
    checkGradient(x.v, forward, w.v, dx.v, "softmax", 1e-3f);
  }
}

namespace {

/// Naive NCHW convolution with groups.
std::vector<float> refConv(const Tensor &x, const Tensor &w, const float *bias,
                           const distrt_conv2d_attr &a, int64_t oh,
                           int64_t ow) {
  int64_t n = x.dims[0], c = x.dims[1], ih = x.dims[2], iw = x.dims[3];
  int64_t o = w.dims[0], cg = w.dims[1], kh = w.dims[2], kw = w.dims[3];
  int64_t og = o / a.groups;
  std::vector<float> y(n * o * oh * ow, 0.0f);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t oc = 0; oc < o; ++oc)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double s = bias ? bias[oc] : 0.0;
          int64_t grp = oc / og;
          for (int64_t ic = 0; ic < cg; ++ic)
            for (int64_t p = 0; p < kh; ++p)
              for (int64_t q = 0; q < kw; ++q) {
                int64_t yy = i * a.stride[0] - a.pad_begin[0] + p * a.dilation[0];
                int64_t xx = j * a.stride[1] - a.pad_begin[1] + q * a.dilation[1];
                if (yy < 0 || yy >= ih || xx < 0 || xx >= iw)
                  continue;
                s += double(x.v[((b * c + grp * cg + ic) * ih + yy) * iw + xx]) *
                     w.v[((oc * cg + ic) * kh + p) * kw + q];
              }
          y[((b * o + oc) * oh + i) * ow + j] = float(s);
        }
  return y;
}

} // namespace

TEST_F(RuntimeTest, Conv2dForwardAndGradients) {
  struct Cfg {
    distrt_conv2d_attr a;
    int64_t c, o;
  } cfgs[] = {{{{1, 1}, {1, 1}, {1, 1}, {1, 1}, 1}, 2, 3},
              {{{2, 1}, {0, 1}, {1, 0}, {1, 2}, 2}, 4, 2}};
  for (auto &cfg : cfgs) {
    const distrt_conv2d_attr &a = cfg.a;
    Tensor x({2, cfg.c, 5, 5}), w({cfg.o, cfg.c / a.groups, 3, 3}),
        bias({cfg.o});
    randomize(x, 91);
    randomize(w, 92);
    randomize(bias, 93);
    int64_t oh = (5 + a.pad_begin[0] + a.pad_end[0] - 2 * a.dilation[0] - 1) /
                     a.stride[0] + 1;
    int64_t ow = (5 + a.pad_begin[1] + a.pad_end[1] - 2 * a.dilation[1] - 1) /
                     a.stride[1] + 1;
    Tensor y({2, cfg.o, oh, ow}), gw({2, cfg.o, oh, ow});
    randomize(gw, 94);
    ASSERT_OK(distrt_conv2d(ctx, x.d(), w.d(), bias.d(), y.d(), &a));
    expectClose(y.v, refConv(x, w, bias.v.data(), a, oh, ow), 1e-4f, "conv");
    Tensor dx(x.dims), dw(w.dims), db({cfg.o});
    ASSERT_OK(distrt_conv2d_bwd_data(ctx, gw.d(), w.d(), dx.d(), &a));
    ASSERT_OK(distrt_conv2d_bwd_weight(ctx, x.d(), gw.d(), dw.d(), db.d(), &a,
                                       0));
    auto forward = [&] {
      EXPECT_OK(distrt_conv2d(ctx, x.d(), w.d(), bias.d(), y.d(), &a));
      return y.v;
    };
    checkGradient(x.v, forward, gw.v, dx.v, "conv dx");
    checkGradient(w.v, forward, gw.v, dw.v, "conv dw");
    checkGradient(bias.v, forward, gw.v, db.v, "conv dbias");
  }
}

TEST_F(RuntimeTest, Pool2dForwardAndGradients) {
  for (int kind = DISTRT_POOL_MAX; kind <= DISTRT_POOL_AVG_EXCLUDE_PAD;
       ++kind) {
    distrt_pool2d_attr a{distrt_pool_kind(kind), {2, 2}, {2, 2}, {1, 1},
                         {1, 1}};
    Tensor x({1, 2, 4, 4}), y({1, 2, 3, 3}), w({1, 2, 3, 3}),
        dx({1, 2, 4, 4});
    randomize(x, 101);
    randomize(w, 102);
    ASSERT_OK(distrt_pool2d(ctx, x.d(), y.d(), &a));
    for (int64_t c = 0; c < 2; ++c)
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t j = 0; j < 3; ++j) {
          float mx = -1e30f, sum = 0;
          int cnt = 0;
          for (int64_t p = 0; p < 2; ++p)
            for (int64_t q = 0; q < 2; ++q) {
              int64_t yy = i * 2 - 1 + p, xx = j * 2 - 1 + q;
              if (yy < 0 || yy >= 4 || xx < 0 || xx >= 4)
                continue;
              float v = x[(c * 4 + yy) * 4 + xx];
              mx = std::max(mx, v);
              sum += v;
              ++cnt;
            }
          float want = kind == DISTRT_POOL_MAX ? mx
                       : kind == DISTRT_POOL_AVG_INCLUDE_PAD ? sum / 4
                                                             : sum / cnt;
          ASSERT_NEAR(y[(c * 3 + i) * 3 + j], want, 1e-5f) << "kind " << kind;
        }
    ASSERT_OK(distrt_pool2d_bwd(ctx, x.d(), w.d(), dx.d(), &a));
    auto forward = [&] {
      EXPECT_OK(distrt_pool2d(ctx, x.d(), y.d(), &a));
      return y.v;
    };
    checkGradient(x.v, forward, w.v, dx.v, "pool", 1e-3f);
  }
}
