//===- ComputeExTest.cpp - Post-ops, strided and channels-last calls ------===//
//
// distrt_matmul_ex and distrt_conv2d_ex against the plain entry points with
// the epilogue done on the host: post-ops (activations, binary with scalar /
// per-channel / full operands, sum), strided matmul operands (a transposed
// view read in place), channels-last convolution and pooling, constant
// weights kept in the kernel's layout (convolutions and matmuls), and the
// argument errors.
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"

#include <algorithm>

using namespace distrt_test;

namespace {

distrt_post_op eltwise(int32_t alg, float alpha = 0, float beta = 0) {
  distrt_post_op p = {};
  p.kind = DISTRT_POST_ELTWISE;
  p.alg = alg;
  p.alpha = alpha;
  p.beta = beta;
  return p;
}

distrt_post_op binary(int32_t alg, const distrt_tensor *src1) {
  distrt_post_op p = {};
  p.kind = DISTRT_POST_BINARY;
  p.alg = alg;
  p.src1 = *src1;
  return p;
}

float gelu(float x) {
  return 0.5f * x * (1.0f + std::erf(x / std::sqrt(2.0f)));
}

/// NCHW [n, c, h, w] data re-laid out channels-last (NHWC order in memory).
std::vector<float> toNhwc(const std::vector<float> &v, int64_t n, int64_t c,
                          int64_t h, int64_t w) {
  std::vector<float> out(v.size());
  for (int64_t a = 0; a < n; ++a)
    for (int64_t b = 0; b < c; ++b)
      for (int64_t y = 0; y < h; ++y)
        for (int64_t x = 0; x < w; ++x)
          out[((a * h + y) * w + x) * c + b] = v[((a * c + b) * h + y) * w + x];
  return out;
}

distrt_tensor nhwcDesc(Tensor &t, int64_t n, int64_t c, int64_t h, int64_t w) {
  int64_t dims[] = {n, c, h, w}, strides[] = {h * w * c, 1, w * c, c};
  return distrt_make_strided_tensor(t.v.data(), DISTRT_F32, 4, dims, strides);
}

} // namespace

TEST_F(RuntimeTest, MatmulExPostOpsMatchTheEpilogueOnTheHost) {
  int64_t m = 6, n = 5, k = 7;
  Tensor a({m, k}), b({k, n}), bias({n}), full({m, n}), col({n}), one({1}),
      c({m, n}), plain({m, n});
  randomize(a, 1);
  randomize(b, 2);
  randomize(bias, 3);
  randomize(full, 4);
  randomize(col, 5);
  one[0] = 0.75f;
  distrt_matmul_attr attr{0, 0, 1.0f, 0.0f};
  ASSERT_OK(distrt_matmul(ctx, a.d(), b.d(), bias.d(), plain.d(), &attr));
  // y = gelu(ab + bias) * col + full, then max with the scalar.
  distrt_compute_ex ex = {};
  ex.count = 4;
  ex.post[0] = eltwise(DISTRT_ELTWISE_GELU);
  ex.post[1] = binary(DISTRT_BINARY_MUL, col.d());
  ex.post[2] = binary(DISTRT_BINARY_ADD, full.d());
  ex.post[3] = binary(DISTRT_BINARY_MAX, one.d());
  ASSERT_OK(distrt_matmul_ex(ctx, a.d(), b.d(), bias.d(), c.d(), &attr, &ex));
  std::vector<float> want(plain.v);
  for (int64_t i = 0; i < m * n; ++i)
    want[i] = std::max(gelu(want[i]) * col[i % n] + full[i], one[0]);
  expectClose(c.v, want, 1e-4f, "post-ops");
}

TEST_F(RuntimeTest, MatmulExConstantWeightsArePackedOnce) {
  // An inference program's constant weights (here a transposed [n, k]
  // Gemm weight, 2 rows as a classifier's): packed into the kernel's layout
  // on the first call and reused by address; the results are the plain
  // call's, with and without post-ops, on the second call too.
  int64_t m = 2, n = 96, k = 80;
  Tensor a({m, k}), w({n, k}), bias({n}), c({m, n}), plain({m, n});
  randomize(a, 11);
  randomize(w, 12);
  randomize(bias, 13);
  distrt_matmul_attr attr{0, 1, 1.0f, 0.0f};
  ASSERT_OK(distrt_matmul(ctx, a.d(), w.d(), bias.d(), plain.d(), &attr));
  distrt_compute_ex ex = {};
  ex.constant_weights = 1;
  for (int call = 0; call < 2; ++call) {
    std::fill(c.v.begin(), c.v.end(), -1.0f);
    ASSERT_OK(
        distrt_matmul_ex(ctx, a.d(), w.d(), bias.d(), c.d(), &attr, &ex));
    expectClose(c.v, plain.v, 1e-5f, "packed weights");
  }
  ex.count = 1;
  ex.post[0] = eltwise(DISTRT_ELTWISE_RELU);
  ASSERT_OK(distrt_matmul_ex(ctx, a.d(), w.d(), bias.d(), c.d(), &attr, &ex));
  std::vector<float> want(plain.v);
  for (float &x : want)
    x = std::max(0.0f, x);
  expectClose(c.v, want, 1e-5f, "packed weights + relu");
}

TEST_F(RuntimeTest, MatmulExSumAddsWhatTheOutputHeld) {
  int64_t m = 4, n = 8, k = 3;
  Tensor a({m, k}), b({k, n}), c({m, n}), plain({m, n});
  randomize(a, 6);
  randomize(b, 7);
  randomize(c, 8);
  std::vector<float> before(c.v);
  distrt_matmul_attr attr{0, 0, 1.0f, 0.0f};
  ASSERT_OK(distrt_matmul(ctx, a.d(), b.d(), nullptr, plain.d(), &attr));
  distrt_compute_ex ex = {};
  ex.count = 2;
  ex.post[0].kind = DISTRT_POST_SUM;
  ex.post[1] = eltwise(DISTRT_ELTWISE_RELU);
  ASSERT_OK(distrt_matmul_ex(ctx, a.d(), b.d(), nullptr, c.d(), &attr, &ex));
  std::vector<float> want(plain.v);
  for (size_t i = 0; i < want.size(); ++i)
    want[i] = std::max(0.0f, want[i] + before[i]);
  expectClose(c.v, want, 1e-5f, "sum + relu");
}

TEST_F(RuntimeTest, MatmulExReadsStridedViewsInPlace) {
  // Heads of a [2, 4, 3 * 8] projection read as [2, 3, 4, 8] (batch b,
  // head h): element (b, h, s, d) is at ((b * 4 + s) * 3 + h) * 8 + d.
  int64_t B = 2, H = 3, S = 4, D = 8;
  Tensor proj({B, S, H * D}), q({B, H, S, D}), kt({B, H, D, S}),
      c({B, H, S, S}), want({B, H, S, S});
  randomize(proj, 9);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t s = 0; s < S; ++s)
        for (int64_t d = 0; d < D; ++d) {
          float v = proj[((b * S + s) * H + h) * D + d];
          q[((b * H + h) * S + s) * D + d] = v;
          kt[((b * H + h) * D + d) * S + s] = v;
        }
  distrt_matmul_attr attr{0, 0, 1.0f, 0.0f};
  ASSERT_OK(distrt_matmul(ctx, q.d(), kt.d(), nullptr, want.d(), &attr));
  int64_t qd[] = {B, H, S, D}, qs[] = {S * H * D, D, H * D, 1};
  int64_t kd[] = {B, H, D, S}, ks[] = {S * H * D, D, 1, H * D};
  distrt_tensor qv =
      distrt_make_strided_tensor(proj.v.data(), DISTRT_F32, 4, qd, qs);
  distrt_tensor kv =
      distrt_make_strided_tensor(proj.v.data(), DISTRT_F32, 4, kd, ks);
  ASSERT_OK(distrt_matmul_ex(ctx, &qv, &kv, nullptr, c.d(), &attr, nullptr));
  expectClose(c.v, want.v, 1e-5f, "strided q k^T");
  // The plain entry point refuses strided tensors and says what to do.
  EXPECT_EQ(distrt_matmul(ctx, &qv, &kv, nullptr, c.d(), &attr),
            DISTRT_ERROR_UNSUPPORTED);
  EXPECT_NE(std::string(err()).find("is strided"), std::string::npos) << err();
}

TEST_F(RuntimeTest, Conv2dExChannelsLastWithPostOpsAndConstantWeights) {
  int64_t n = 2, c = 8, h = 6, w = 5, o = 16;
  for (int64_t groups : {int64_t(1), c}) {
    int64_t ci = c / groups;
    int64_t oc = groups == 1 ? o : c;
    Tensor x({n, c, h, w}), wt({oc, ci, 3, 3}), bias({oc}), y({n, oc, h, w}),
        res({n, oc, h, w});
    randomize(x, 10);
    randomize(wt, 11);
    randomize(bias, 12);
    randomize(res, 13);
    distrt_conv2d_attr a = {{1, 1}, {1, 1}, {1, 1}, {1, 1}, (int32_t)groups};
    ASSERT_OK(distrt_conv2d(ctx, x.d(), wt.d(), bias.d(), y.d(), &a));
    // Channels-last input and output; residual sum then relu.
    Tensor xl({n * c * h * w}), yl({n * oc * h * w});
    xl.v = toNhwc(x.v, n, c, h, w);
    yl.v = toNhwc(res.v, n, oc, h, w);
    distrt_tensor xd = nhwcDesc(xl, n, c, h, w), yd = nhwcDesc(yl, n, oc, h, w);
    distrt_compute_ex ex = {};
    ex.count = 2;
    ex.post[0].kind = DISTRT_POST_SUM;
    ex.post[1] = eltwise(DISTRT_ELTWISE_RELU);
    ex.constant_weights = 1;
    std::vector<float> want = y.v;
    for (size_t i = 0; i < want.size(); ++i)
      want[i] = std::max(0.0f, want[i] + res.v[i]);
    want = toNhwc(want, n, oc, h, w);
    for (int rep = 0; rep < 2; ++rep) { // the second call reuses the weights
      yl.v = toNhwc(res.v, n, oc, h, w);
      yd.data = yl.v.data();
      ASSERT_OK(distrt_conv2d_ex(ctx, &xd, wt.d(), bias.d(), &yd, &a, &ex));
      expectClose(yl.v, want, 1e-4f, groups == 1 ? "conv nhwc" : "dw nhwc");
    }
    // The residual as a binary post-op: read in the output's layout
    // (channels-last); an NCHW one is refused (oneDNN would read it at the
    // output's offsets), saying what to do.
    Tensor rl({n * oc * h * w});
    rl.v = toNhwc(res.v, n, oc, h, w);
    distrt_tensor rd = nhwcDesc(rl, n, oc, h, w);
    distrt_compute_ex bx = {};
    bx.count = 2;
    bx.post[0] = binary(DISTRT_BINARY_ADD, res.d());
    bx.post[1] = eltwise(DISTRT_ELTWISE_RELU);
    EXPECT_EQ(distrt_conv2d_ex(ctx, &xd, wt.d(), bias.d(), &yd, &a, &bx),
              DISTRT_ERROR_UNSUPPORTED);
    EXPECT_NE(std::string(err()).find("is not laid out in the output's dim "
                                      "order"),
              std::string::npos)
        << err();
    bx.post[0] = binary(DISTRT_BINARY_ADD, &rd);
    std::fill(yl.v.begin(), yl.v.end(), 0.0f);
    ASSERT_OK(distrt_conv2d_ex(ctx, &xd, wt.d(), bias.d(), &yd, &a, &bx));
    expectClose(yl.v, want, 1e-4f,
                groups == 1 ? "conv nhwc + binary" : "dw nhwc + binary");
  }
}

TEST_F(RuntimeTest, Pool2dChannelsLast) {
  int64_t n = 2, c = 4, h = 6, w = 6;
  Tensor x({n, c, h, w}), y({n, c, 3, 3});
  randomize(x, 14);
  distrt_pool2d_attr a = {DISTRT_POOL_MAX, {3, 3}, {2, 2}, {1, 1}, {0, 0}};
  ASSERT_OK(distrt_pool2d(ctx, x.d(), y.d(), &a));
  Tensor xl({n * c * h * w}), yl({n * c * 9});
  xl.v = toNhwc(x.v, n, c, h, w);
  distrt_tensor xd = nhwcDesc(xl, n, c, h, w), yd = nhwcDesc(yl, n, c, 3, 3);
  ASSERT_OK(distrt_pool2d(ctx, &xd, &yd, &a));
  expectClose(yl.v, toNhwc(y.v, n, c, 3, 3), 0.0f, "max pool nhwc");
}

TEST_F(RuntimeTest, ComputeExRejectsBadEpilogues) {
  Tensor a({2, 3}), b({3, 4}), c({2, 4}), row({2, 1, 3});
  distrt_matmul_attr attr{0, 0, 1.0f, 0.0f};
  distrt_compute_ex ex = {};
  ex.count = 2;
  ex.post[0] = eltwise(DISTRT_ELTWISE_RELU);
  ex.post[1].kind = DISTRT_POST_SUM;
  EXPECT_EQ(distrt_matmul_ex(ctx, a.d(), b.d(), nullptr, c.d(), &attr, &ex),
            DISTRT_ERROR_UNSUPPORTED);
  EXPECT_NE(std::string(err()).find("a sum must be the first post-op"),
            std::string::npos)
      << err();
  ex.count = 1;
  ex.post[0] = binary(DISTRT_BINARY_ADD, row.d());
  EXPECT_EQ(distrt_matmul_ex(ctx, a.d(), b.d(), nullptr, c.d(), &attr, &ex),
            DISTRT_ERROR_SHAPE_MISMATCH);
  EXPECT_NE(std::string(err()).find("does not broadcast to the output [2, 4]"),
            std::string::npos)
      << err();
  ex.post[0] = eltwise(99);
  EXPECT_EQ(distrt_matmul_ex(ctx, a.d(), b.d(), nullptr, c.d(), &attr, &ex),
            DISTRT_ERROR_INVALID_ARGUMENT);
  // A convolution's activations are NCHW or channels-last, nothing else.
  Tensor x({1, 2, 3, 3}), wt({2, 2, 1, 1}), y({1, 2, 3, 3});
  int64_t dims[] = {1, 2, 3, 3}, odd[] = {18, 1, 2, 6};
  distrt_tensor xs =
      distrt_make_strided_tensor(x.v.data(), DISTRT_F32, 4, dims, odd);
  distrt_conv2d_attr ca = {{1, 1}, {0, 0}, {0, 0}, {1, 1}, 1};
  EXPECT_EQ(distrt_conv2d_ex(ctx, &xs, wt.d(), nullptr, y.d(), &ca, nullptr),
            DISTRT_ERROR_UNSUPPORTED);
  EXPECT_NE(std::string(err()).find("must both be NCHW or both channels-last"),
            std::string::npos)
      << err();
  // Input and output in different layouts: the caller copies one.
  int64_t nhwc[] = {18, 1, 6, 2};
  distrt_tensor xl =
      distrt_make_strided_tensor(x.v.data(), DISTRT_F32, 4, dims, nhwc);
  EXPECT_EQ(distrt_conv2d_ex(ctx, &xl, wt.d(), nullptr, y.d(), &ca, nullptr),
            DISTRT_ERROR_UNSUPPORTED);
  EXPECT_NE(std::string(err()).find("must both be NCHW or both channels-last"),
            std::string::npos)
      << err();
}
