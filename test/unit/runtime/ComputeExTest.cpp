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

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>

using namespace distrt_test;

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

TEST_F(RuntimeTest, MatmulExConstantWeightsWithWideRowsAreCopiedPadded) {
  // Rows of 1024 floats (4 KiB) are copied with padded rows for oneDNN's
  // gemm:jit; a [2, m, k] input against a shared weight, as an LM head
  // calls it, read plain [k, n] and transposed [n, k]. The copy is made on
  // the first call and serves the second even after the caller's buffer
  // changed (constant weights are reordered once per address); plain rows
  // of 80 floats (5 lines) are read in place (a transposed weight is copied
  // either way).
  int64_t m = 6, k = 24;
  for (int64_t n : {1024, 80})
    for (int tb = 0; tb < 2; ++tb) {
      Tensor a({2, m, k}),
          w(tb ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n}),
          bias({n}), c({2, m, n}), plain({2, m, n});
      randomize(a, 21);
      randomize(w, 22);
      randomize(bias, 23);
      distrt_matmul_attr attr{0, tb, 1.0f, 0.0f};
      ASSERT_OK(distrt_matmul(ctx, a.d(), w.d(), bias.d(), plain.d(), &attr));
      distrt_compute_ex ex = {};
      ex.constant_weights = 1;
      ASSERT_OK(
          distrt_matmul_ex(ctx, a.d(), w.d(), bias.d(), c.d(), &attr, &ex));
      expectClose(c.v, plain.v, 1e-5f, "constant weights");
      std::vector<float> kept = w.v;
      std::fill(w.v.begin(), w.v.end(), 0.0f);
      std::fill(c.v.begin(), c.v.end(), -1.0f);
      ASSERT_OK(
          distrt_matmul_ex(ctx, a.d(), w.d(), bias.d(), c.d(), &attr, &ex));
      if (n == 1024 || tb) {
        expectClose(c.v, plain.v, 1e-5f, "the copy");
      } else {
        // Dense rows are read in place: the zeroed weights leave the bias.
        for (int64_t i = 0; i < 2 * m * n; ++i)
          ASSERT_EQ(c.v[i], bias[i % n]) << "n=" << n << " tb=" << tb;
      }
      w.v = kept;
    }
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

// Channels-last max pooling runs the runtime's own loop (cpu/Pool.h); NCHW
// runs oneDNN's. Both agree bit for bit on windows that overhang the image
// on either side, channel counts that fill no vector, all-negative inputs
// (padding never wins) and a NaN, which both skip.
TEST_F(RuntimeTest, MaxPoolChannelsLastMatchesNchw) {
  struct Case {
    int64_t c, h, w;
    distrt_pool2d_attr a;
  } cases[] = {
      {64, 16, 16, {DISTRT_POOL_MAX, {3, 3}, {2, 2}, {1, 1}, {1, 1}}},
      {13, 7, 9, {DISTRT_POOL_MAX, {2, 3}, {1, 2}, {1, 0}, {0, 2}}},
      {3, 5, 5, {DISTRT_POOL_MAX, {5, 5}, {1, 1}, {2, 2}, {2, 2}}},
  };
  for (const Case &k : cases) {
    int64_t n = 2,
            oh = (k.h + k.a.pad_begin[0] + k.a.pad_end[0] - k.a.kernel[0]) /
                     k.a.stride[0] +
                 1,
            ow = (k.w + k.a.pad_begin[1] + k.a.pad_end[1] - k.a.kernel[1]) /
                     k.a.stride[1] +
                 1;
    Tensor x({n, k.c, k.h, k.w}), y({n, k.c, oh, ow});
    randomize(x, 21);
    for (float &v : x.v)
      v = -1.0f - std::fabs(v); // padding (0) must never be the max
    x.v[5] = std::nanf("");
    ASSERT_OK(distrt_pool2d(ctx, x.d(), y.d(), &k.a));
    Tensor xl({n * k.c * k.h * k.w}), yl({n * k.c * oh * ow});
    xl.v = toNhwc(x.v, n, k.c, k.h, k.w);
    distrt_tensor xd = nhwcDesc(xl, n, k.c, k.h, k.w),
                  yd = nhwcDesc(yl, n, k.c, oh, ow);
    ASSERT_OK(distrt_pool2d(ctx, &xd, &yd, &k.a));
    std::vector<float> want = toNhwc(y.v, n, k.c, oh, ow);
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_FALSE(std::isnan(yl.v[i])) << "c " << k.c << " at " << i;
      ASSERT_LT(yl.v[i], -1.0f) << "c " << k.c << " at " << i;
      ASSERT_EQ(yl.v[i], want[i]) << "c " << k.c << " at " << i;
    }
  }
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

TEST_F(RuntimeTest, ConvolutionRejectsPerImageOperandsChannelsLast) {
  // A squeeze-excitation scale [N, C, 1, 1] as a post-op of a channels-last
  // convolution: oneDNN 2.6 ran it on its gemm convolution, which applied
  // image 0's scale to image 1 too (off by up to 4.4 here), so it is
  // refused, saying what to do. NCHW computes it right.
  int64_t n = 2, c = 8, h = 6, w = 6, o = 8;
  Tensor x({n, c, h, w}), wt({o, c, 3, 3}), scale({n, o, 1, 1}),
      plain({n, o, h, w}), y({n, o, h, w});
  randomize(x, 30);
  randomize(wt, 31);
  randomize(scale, 34);
  distrt_conv2d_attr a = {{1, 1}, {1, 1}, {1, 1}, {1, 1}, 1};
  ASSERT_OK(distrt_conv2d(ctx, x.d(), wt.d(), nullptr, plain.d(), &a));
  distrt_compute_ex ex = {};
  ex.count = 1;
  ex.post[0] = binary(DISTRT_BINARY_MUL, scale.d());
  ASSERT_OK(distrt_conv2d_ex(ctx, x.d(), wt.d(), nullptr, y.d(), &a, &ex));
  std::vector<float> want(plain.v);
  for (size_t i = 0; i < want.size(); ++i)
    want[i] *= scale[(int64_t)i / (h * w)];
  expectClose(y.v, want, 1e-5f, "NCHW per-image scale");
  Tensor xl({x.n()}), yl({y.n()});
  xl.v = toNhwc(x.v, n, c, h, w);
  distrt_tensor xd = nhwcDesc(xl, n, c, h, w), yd = nhwcDesc(yl, n, o, h, w);
  EXPECT_EQ(distrt_conv2d_ex(ctx, &xd, wt.d(), nullptr, &yd, &a, &ex),
            DISTRT_ERROR_UNSUPPORTED);
  EXPECT_NE(
      std::string(err()).find("post-op 0: src1 [2, 8, 1, 1] varies "
                              "over the batch but not over the whole image"),
      std::string::npos)
      << err();
  // One image: [1, C, 1, 1] is per channel, which oneDNN reads right.
  Tensor x1({1 * c * h * w}), y1({1 * o * h * w}), scale1({1, o, 1, 1}),
      plain1({1, o, h, w}), xn({1, c, h, w});
  std::copy(x.v.begin(), x.v.begin() + c * h * w, xn.v.begin());
  x1.v = toNhwc(xn.v, 1, c, h, w);
  randomize(scale1, 35);
  distrt_tensor x1d = nhwcDesc(x1, 1, c, h, w), y1d = nhwcDesc(y1, 1, o, h, w);
  ex.post[0] = binary(DISTRT_BINARY_MUL, scale1.d());
  ASSERT_OK(distrt_conv2d_ex(ctx, &x1d, wt.d(), nullptr, &y1d, &a, &ex));
  ASSERT_OK(distrt_conv2d(ctx, xn.d(), wt.d(), nullptr, plain1.d(), &a));
  std::vector<float> want1(plain1.v);
  for (size_t i = 0; i < want1.size(); ++i)
    want1[i] *= scale1[(int64_t)i / (h * w)];
  expectClose(y1.v, toNhwc(want1, 1, o, h, w), 1e-5f, "one image, NHWC");
}

// Defined by the runtime (runtime/lib/cpu/CpuState.h): calls a CPU context
// served from its replay cache.
namespace distrt {
namespace cpu {
int64_t replayedCalls(const distrt_context *ctx);
int64_t skinnyCalls(const distrt_context *ctx);
int64_t vectorTails(const distrt_context *ctx);
bool slowGeluTanh(dnnl::cpu_isa isa);
} // namespace cpu
} // namespace distrt

TEST_F(RuntimeTest, RepeatedCallsReplayOnTheirBuffersCurrentContents) {
  // A generated program makes the same calls every run: from the second
  // one on, a convolution, a matmul and a pooling run on the arguments
  // prepared by the first, reading what the buffers hold now. A call that
  // differs in a buffer, a shape or a post-op is not replayed.
  int64_t n = 2, c = 8, h = 6, w = 5, o = 4;
  Tensor x({n, c, h, w}), wt({o, c, 3, 3}), bias({o}), y({n, o, h, w}),
      want({n, o, h, w}), pooled({n, o, 1, 1}), a({6, 8}), b({5, 8}),
      mm({6, 5}), mmWant({6, 5}); // 6 rows: not the skinny kernel's
  distrt_conv2d_attr ca = {{1, 1}, {1, 1}, {1, 1}, {1, 1}, 1};
  distrt_pool2d_attr pa = {
      DISTRT_POOL_AVG_EXCLUDE_PAD, {6, 5}, {1, 1}, {0, 0}, {0, 0}};
  distrt_matmul_attr ma{0, 1, 1.0f, 0.0f};
  distrt_compute_ex ex = {};
  ex.count = 1;
  ex.post[0] = eltwise(DISTRT_ELTWISE_RELU);
  ex.constant_weights = 1;
  distrt_compute_ex mx = {};
  mx.constant_weights = 1;
  auto runAll = [&] {
    ASSERT_OK(distrt_conv2d_ex(ctx, x.d(), wt.d(), bias.d(), y.d(), &ca, &ex));
    ASSERT_OK(distrt_pool2d(ctx, y.d(), pooled.d(), &pa));
    ASSERT_OK(distrt_matmul_ex(ctx, a.d(), b.d(), nullptr, mm.d(), &ma, &mx));
  };
  auto check = [&](const char *what) {
    ASSERT_OK(distrt_conv2d(ctx, x.d(), wt.d(), bias.d(), want.d(), &ca));
    for (float &v : want.v)
      v = std::max(0.0f, v);
    expectClose(y.v, want.v, 1e-5f, what);
    for (int64_t i = 0; i < n * o; ++i) {
      double s = 0;
      for (int64_t k = 0; k < h * w; ++k)
        s += want[i * h * w + k];
      EXPECT_NEAR(pooled[i], s / (h * w), 1e-5) << what << " pool " << i;
    }
    ASSERT_OK(distrt_matmul(ctx, a.d(), b.d(), nullptr, mmWant.d(), &ma));
    expectClose(mm.v, mmWant.v, 1e-5f, what);
  };
  randomize(x, 21);
  randomize(wt, 22);
  randomize(bias, 23);
  randomize(a, 24);
  randomize(b, 25);
  int64_t before = distrt::cpu::replayedCalls(ctx);
  runAll();
  EXPECT_EQ(distrt::cpu::replayedCalls(ctx), before) << "first calls";
  check("first calls");
  // New inputs in the same buffers: replayed, and computed from them.
  randomize(x, 31);
  randomize(a, 32);
  std::fill(y.v.begin(), y.v.end(), -7.0f);
  int64_t first = distrt::cpu::replayedCalls(ctx);
  runAll();
  EXPECT_EQ(distrt::cpu::replayedCalls(ctx), first + 3) << "repeated calls";
  check("replayed calls");
  // Another output buffer, another post-op: prepared anew.
  Tensor y2({n, o, h, w});
  int64_t second = distrt::cpu::replayedCalls(ctx);
  ASSERT_OK(distrt_conv2d_ex(ctx, x.d(), wt.d(), bias.d(), y2.d(), &ca, &ex));
  expectClose(y2.v, y.v, 0.0f, "another output buffer");
  ex.post[0] = eltwise(DISTRT_ELTWISE_LINEAR, 2.0f, 1.0f);
  ASSERT_OK(distrt_conv2d_ex(ctx, x.d(), wt.d(), bias.d(), y.d(), &ca, &ex));
  EXPECT_EQ(distrt::cpu::replayedCalls(ctx), second) << "changed calls";
  ASSERT_OK(distrt_conv2d(ctx, x.d(), wt.d(), bias.d(), want.d(), &ca));
  for (float &v : want.v)
    v = 2.0f * v + 1.0f;
  expectClose(y.v, want.v, 1e-5f, "another post-op");
  // A call refused once is refused again (it was never recorded).
  ex.count = 1;
  ex.post[0] = eltwise(99);
  for (int rep = 0; rep < 2; ++rep)
    EXPECT_EQ(distrt_conv2d_ex(ctx, x.d(), wt.d(), bias.d(), y.d(), &ca, &ex),
              DISTRT_ERROR_INVALID_ARGUMENT);
}

TEST_F(RuntimeTest, NoReplayEnvironmentTurnsReplaysOff) {
  setenv("DISTRT_NO_REPLAY", "1", 1);
  distrt_context *off = nullptr;
  distrt_status created = distrt_context_create(DISTRT_BACKEND_CPU, 0, &off);
  unsetenv("DISTRT_NO_REPLAY");
  ASSERT_EQ(created, DISTRT_OK);
  Tensor x({1, 2, 3, 3}), wt({2, 2, 1, 1}), y({1, 2, 3, 3});
  randomize(x, 41);
  randomize(wt, 42);
  distrt_conv2d_attr ca = {{1, 1}, {0, 0}, {0, 0}, {1, 1}, 1};
  for (int rep = 0; rep < 3; ++rep)
    EXPECT_EQ(distrt_conv2d(off, x.d(), wt.d(), nullptr, y.d(), &ca),
              DISTRT_OK);
  EXPECT_EQ(distrt::cpu::replayedCalls(off), 0);
  distrt_context_destroy(off);
}

TEST_F(RuntimeTest, FewRowsByConstantWeightsMatchThePlainMatmul) {
  // 1-4 rows by constant weights run on the runtime's skinny kernel
  // (cpu/SkinnyGemm.h), post-ops included; 5 rows stay on oneDNN. Every
  // case against the plain matmul with the epilogue on the
  // host, N not a multiple of the 16-column panel, both weight layouts,
  // and operands with a row stride wider than the row.
  int64_t n = 37, k = 29;
  // Both vector paths: AVX2 (where the CPU has it) and SSE2.
  for (int baseline = 0; baseline < 2; ++baseline) {
    setenv("DISTRT_FUSED_BASELINE", baseline ? "1" : "0", 1);
    auto hardswish = [](float x) {
      return x * std::min(std::max(x + 3.0f, 0.0f), 6.0f) / 6.0f;
    };
    for (int64_t m = 1; m <= 5; ++m) {
      for (int tb = 0; tb < 2; ++tb) {
        Tensor a({m, k + 3}),
            w(tb ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n}),
            bias({n}), col({n}), full({m, n}), one({1}), c({m, n + 5}),
            plain({m, n}), aDense({m, k});
        randomize(a, 50 + (uint32_t)m);
        randomize(w, 60 + (uint32_t)tb);
        randomize(bias, 70);
        randomize(col, 71);
        randomize(full, 72);
        one[0] = 0.25f;
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < k; ++j)
            aDense[i * k + j] = a[i * (k + 3) + j];
        distrt_matmul_attr attr{0, tb, 1.0f, 0.0f};
        ASSERT_OK(
            distrt_matmul(ctx, aDense.d(), w.d(), bias.d(), plain.d(), &attr));
        // [m, k] rows of a [m, k + 3] buffer; [m, n] rows of [m, n + 5].
        int64_t ad[] = {m, k}, as[] = {k + 3, 1}, cd[] = {m, n},
                cs[] = {n + 5, 1};
        distrt_tensor av =
            distrt_make_strided_tensor(a.v.data(), DISTRT_F32, 2, ad, as);
        distrt_tensor cv =
            distrt_make_strided_tensor(c.v.data(), DISTRT_F32, 2, cd, cs);
        auto run = [&](distrt_compute_ex &ex, auto epilogue, const char *what) {
          bool skinny = m <= 4;
          for (int call = 0; call < 2; ++call) { // packed on the first call
            std::vector<float> before(c.v);
            int64_t calls = distrt::cpu::skinnyCalls(ctx);
            ASSERT_OK(
                distrt_matmul_ex(ctx, &av, w.d(), bias.d(), &cv, &attr, &ex));
            EXPECT_EQ(distrt::cpu::skinnyCalls(ctx), calls + (skinny ? 1 : 0))
                << what << " m=" << m;
            for (int64_t i = 0; i < m; ++i)
              for (int64_t j = 0; j < n; ++j) {
                float want =
                    epilogue(plain[i * n + j], i, j, before[i * (n + 5) + j]);
                ASSERT_NEAR(c[i * (n + 5) + j], want,
                            1e-5f * std::max(1.0f, std::fabs(want)))
                    << what << " m=" << m << " tb=" << tb << " at " << i << ","
                    << j << " call " << call;
              }
            // The padding between rows is not written.
            for (int64_t i = 0; i < m; ++i)
              for (int64_t j = n; j < n + 5; ++j)
                ASSERT_EQ(c[i * (n + 5) + j], before[i * (n + 5) + j]);
          }
        };
        distrt_compute_ex ex = {};
        ex.constant_weights = 1;
        run(
            ex, [](float v, int64_t, int64_t, float) { return v; }, "bias");
        ex.count = 5;
        ex.post[0] = binary(DISTRT_BINARY_MUL, col.d());
        ex.post[1] = binary(DISTRT_BINARY_ADD, full.d());
        ex.post[2] = eltwise(DISTRT_ELTWISE_LINEAR, 0.5f, 0.25f);
        ex.post[3] = eltwise(DISTRT_ELTWISE_HARDSWISH);
        ex.post[4] = binary(DISTRT_BINARY_MAX, one.d());
        run(
            ex,
            [&](float v, int64_t i, int64_t j, float) {
              v = v * col[j] + full[i * n + j];
              return std::max(hardswish(0.5f * v + 0.25f), 0.25f);
            },
            "binary, linear, hardswish");
        ex.count = 3;
        ex.post[0].kind = DISTRT_POST_SUM;
        ex.post[1] = eltwise(DISTRT_ELTWISE_RELU, 0.1f);
        ex.post[2] = eltwise(DISTRT_ELTWISE_CLIP, -0.05f, 0.5f);
        run(
            ex,
            [](float v, int64_t, int64_t, float old) {
              v += old;
              v = v > 0 ? v : 0.1f * v;
              return std::min(std::max(v, -0.05f), 0.5f);
            },
            "sum, leaky relu, clip");
        ex.count = 2;
        ex.post[0] = eltwise(DISTRT_ELTWISE_SILU);
        ex.post[1] = eltwise(DISTRT_ELTWISE_SIGMOID);
        run(
            ex,
            [](float v, int64_t, int64_t, float) {
              v = v / (1.0f + std::exp(-v));
              return 1.0f / (1.0f + std::exp(-v));
            },
            "silu, sigmoid");
        ex.post[0] = eltwise(DISTRT_ELTWISE_ELU, 0.5f);
        ex.post[1] = eltwise(DISTRT_ELTWISE_SOFTPLUS);
        run(
            ex,
            [](float v, int64_t, int64_t, float) {
              v = v > 0 ? v : 0.5f * (std::exp(v) - 1.0f);
              return std::log(1.0f + std::exp(v));
            },
            "elu, softplus");
        ex.count = 5; // sqrt(1 + |x|): conditioned near 0
        ex.post[0] = eltwise(DISTRT_ELTWISE_GELU_TANH);
        ex.post[1] = eltwise(DISTRT_ELTWISE_TANH);
        ex.post[2] = eltwise(DISTRT_ELTWISE_ABS);
        ex.post[3] = eltwise(DISTRT_ELTWISE_LINEAR, 1.0f, 1.0f);
        ex.post[4] = eltwise(DISTRT_ELTWISE_SQRT);
        run(
            ex,
            [](float v, int64_t, int64_t, float) {
              v = 0.5f * v *
                  (1.0f +
                   std::tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
              return std::sqrt(1.0f + std::fabs(std::tanh(v)));
            },
            "gelu_tanh, tanh, abs, linear, sqrt");
        ex.count = 2;
        ex.post[0] = eltwise(DISTRT_ELTWISE_EXP);
        ex.post[1] = eltwise(DISTRT_ELTWISE_LOG);
        run(
            ex, [](float v, int64_t, int64_t, float) { return v; }, "exp, log");
        ex.count = 1;
        ex.post[0] = eltwise(DISTRT_ELTWISE_GELU);
        run(
            ex, [](float v, int64_t, int64_t, float) { return gelu(v); },
            "gelu");
      }
    }
  }
  unsetenv("DISTRT_FUSED_BASELINE");
}

TEST(GeluTanhTail, OneDnnIsSlowBelowAvx512) {
  using dnnl::cpu_isa;
  for (cpu_isa isa :
       {cpu_isa::sse41, cpu_isa::avx, cpu_isa::avx2, cpu_isa::avx2_vnni})
    EXPECT_TRUE(distrt::cpu::slowGeluTanh(isa)) << static_cast<int>(isa);
  for (cpu_isa isa : {cpu_isa::avx512_mic, cpu_isa::avx512_mic_4ops,
                      cpu_isa::avx512_core, cpu_isa::avx512_core_vnni,
                      cpu_isa::avx512_core_bf16, cpu_isa::avx512_core_amx})
    EXPECT_FALSE(distrt::cpu::slowGeluTanh(isa)) << static_cast<int>(isa);
}

/// One 6 x 45 matmul with a trailing gelu_tanh post-op: whether the
/// runtime applied the tail itself (0 or 1), or 2 where a call failed.
int geluTanhTailsOfOneMatmul() {
  distrt_context *ctx = nullptr;
  if (distrt_context_create(DISTRT_BACKEND_CPU, 0, &ctx) != DISTRT_OK)
    return 2;
  Tensor a({6, 19}), b({19, 45}), c({6, 45});
  randomize(a, 1);
  randomize(b, 2);
  distrt_matmul_attr attr{0, 0, 1.0f, 0.0f};
  distrt_compute_ex ex = {};
  ex.count = 1;
  ex.post[0] = eltwise(DISTRT_ELTWISE_GELU_TANH);
  distrt_status st =
      distrt_matmul_ex(ctx, a.d(), b.d(), nullptr, c.d(), &attr, &ex);
  int64_t tails = distrt::cpu::vectorTails(ctx);
  distrt_context_destroy(ctx);
  return st == DISTRT_OK ? static_cast<int>(tails) : 2;
}

TEST(GeluTanhTail, FollowsDnnlMaxCpuIsa) {
  // The decision follows the ISA oneDNN dispatches to, not the CPU's: a
  // process started with DNNL_MAX_CPU_ISA=AVX2 runs oneDNN's slow AVX2
  // gelu_tanh on any CPU, so the runtime applies the tail there (on an
  // AVX-512 CPU the CPU's own flags would say otherwise). The child is a
  // fresh process (oneDNN reads the variable once, on first dispatch).
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  ScopedEnv isa("DNNL_MAX_CPU_ISA", "AVX2");
  EXPECT_EXIT(std::exit(geluTanhTailsOfOneMatmul()), testing::ExitedWithCode(1),
              "");
}

TEST_F(RuntimeTest, TrailingGeluTanhRunsOnTheRuntimesVectorMath) {
  // Where oneDNN dispatches below AVX-512, a matmul's trailing gelu_tanh
  // post-op on a dense output is applied by the runtime after oneDNN's
  // primitive (oneDNN's AVX2 one is 4x slower), replayed calls included,
  // on the AVX2 and the SSE2 path; a strided output keeps oneDNN's.
  // Values against the host.
  bool runtimeTail = distrt::cpu::slowGeluTanh(dnnl::get_effective_cpu_isa());
  int64_t m = 6, n = 45, k = 19; // 6 rows: not the skinny kernel's
  Tensor a({m, k}), b({k, n}), bias({n}), col({n}), c({m, n}), plain({m, n}),
      wide({m, n + 3});
  randomize(b, 81);
  randomize(bias, 82);
  randomize(col, 83, 0.5f, 4.0f);
  distrt_matmul_attr attr{0, 0, 1.0f, 0.0f};
  distrt_compute_ex ex = {};
  ex.count = 2;
  ex.post[0] = binary(DISTRT_BINARY_MUL, col.d());
  ex.post[1] = eltwise(DISTRT_ELTWISE_GELU_TANH);
  auto geluTanh = [](float v) {
    return 0.5f * v *
           (1.0f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
  };
  for (int call = 0; call < 4; ++call) {
    setenv("DISTRT_FUSED_BASELINE", call % 2 ? "1" : "0", 1);
    randomize(a, 90 + (uint32_t)call, -3.0f, 3.0f);
    ASSERT_OK(distrt_matmul(ctx, a.d(), b.d(), bias.d(), plain.d(), &attr));
    int64_t tails = distrt::cpu::vectorTails(ctx);
    ASSERT_OK(distrt_matmul_ex(ctx, a.d(), b.d(), bias.d(), c.d(), &attr, &ex));
    EXPECT_EQ(distrt::cpu::vectorTails(ctx), tails + (runtimeTail ? 1 : 0))
        << "call " << call;
    std::vector<float> want(plain.v);
    for (int64_t i = 0; i < m * n; ++i)
      want[i] = geluTanh(want[i] * col[i % n]);
    expectClose(c.v, want, 1e-5f, "gelu_tanh tail");
    // A strided output: oneDNN applies it.
    int64_t cd[] = {m, n}, cs[] = {n + 3, 1};
    distrt_tensor cv =
        distrt_make_strided_tensor(wide.v.data(), DISTRT_F32, 2, cd, cs);
    tails = distrt::cpu::vectorTails(ctx);
    ASSERT_OK(distrt_matmul_ex(ctx, a.d(), b.d(), bias.d(), &cv, &attr, &ex));
    EXPECT_EQ(distrt::cpu::vectorTails(ctx), tails) << "strided output";
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        ASSERT_NEAR(wide[i * (n + 3) + j], want[i * n + j],
                    1e-5f * std::max(1.0f, std::fabs(want[i * n + j])))
            << "strided output at " << i << "," << j;
  }
  unsetenv("DISTRT_FUSED_BASELINE");
}
