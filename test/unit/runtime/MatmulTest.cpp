//===- MatmulTest.cpp - Matmul forward/backward tests ----------*- C++ -*-===//
#include "TestUtil.h"

using namespace distrt_test;

namespace {

/// Naive C[b] = alpha op(A[bA]) op(B[bB]) + bias + beta C[b].
std::vector<float> refMatmul(const std::vector<float> &a,
                             const std::vector<float> &b,
                             const std::vector<float> *bias,
                             std::vector<float> c, int64_t batch,
                             bool sharedA, bool sharedB, int64_t m, int64_t n, int64_t k,
                             bool ta, bool tb, float alpha, float beta) {
  for (int64_t bi = 0; bi < batch; ++bi) {
    const float *pa = a.data() + (sharedA ? 0 : bi * m * k);
    const float *pb = b.data() + (sharedB ? 0 : bi * k * n);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p)
          s += double(ta ? pa[p * m + i] : pa[i * k + p]) *
               (tb ? pb[j * k + p] : pb[p * n + j]);
        float &out = c[(bi * m + i) * n + j];
        out = alpha * float(s) + beta * out + (bias ? (*bias)[j] : 0.0f);
      }
  }
  return c;
}

struct Case {
  int64_t batch;
  bool sharedB, ta, tb, sharedA = false;
};

class MatmulTest : public RuntimeTest,
                   public ::testing::WithParamInterface<Case> {};

std::vector<int64_t> aDims(const Case &p, int64_t m, int64_t k) {
  std::vector<int64_t> d;
  if (p.batch > 1 && !p.sharedA)
    d.push_back(p.batch);
  d.push_back(p.ta ? k : m);
  d.push_back(p.ta ? m : k);
  return d;
}
std::vector<int64_t> bDims(const Case &p, int64_t k, int64_t n) {
  std::vector<int64_t> d;
  if (p.batch > 1 && !p.sharedB)
    d.push_back(p.batch);
  d.push_back(p.tb ? n : k);
  d.push_back(p.tb ? k : n);
  return d;
}
std::vector<int64_t> cDims(const Case &p, int64_t m, int64_t n) {
  std::vector<int64_t> d;
  if (p.batch > 1)
    d.push_back(p.batch);
  d.push_back(m);
  d.push_back(n);
  return d;
}

} // namespace

TEST_P(MatmulTest, ForwardMatchesReference) {
  Case p = GetParam();
  int64_t m = 5, n = 7, k = 6;
  Tensor a(aDims(p, m, k)), b(bDims(p, k, n)), c(cDims(p, m, n)), bias({n});
  randomize(a, 1);
  randomize(b, 2);
  randomize(c, 3);
  randomize(bias, 4);
  std::vector<float> want = refMatmul(a.v, b.v, &bias.v, c.v, p.batch,
                                      p.sharedA, p.sharedB, m, n, k, p.ta, p.tb, 0.5f,
                                      0.25f);
  distrt_matmul_attr attr{p.ta, p.tb, 0.5f, 0.25f};
  ASSERT_OK(distrt_matmul(ctx, a.d(), b.d(), bias.d(), c.d(), &attr));
  expectClose(c.v, want, 1e-4f, "matmul");
}

TEST_P(MatmulTest, GradientsMatchFiniteDifferences) {
  Case p = GetParam();
  int64_t m = 3, n = 4, k = 5;
  Tensor a(aDims(p, m, k)), b(bDims(p, k, n)), c(cDims(p, m, n)),
      w(cDims(p, m, n)), bias({n});
  randomize(a, 5);
  randomize(b, 6);
  randomize(w, 7);
  randomize(bias, 8);
  distrt_matmul_attr attr{p.ta, p.tb, 1.5f, 0.0f};
  auto forward = [&] {
    EXPECT_OK(distrt_matmul(ctx, a.d(), b.d(), bias.d(), c.d(), &attr));
    return c.v;
  };
  Tensor da(a.dims), db(b.dims, 9.0f), dbias({n}, 9.0f);
  ASSERT_OK(distrt_matmul_bwd_data(ctx, w.d(), b.d(), da.d(), &attr));
  ASSERT_OK(distrt_matmul_bwd_weight(ctx, a.d(), w.d(), db.d(), &attr, 0));
  ASSERT_OK(distrt_matmul_bwd_bias(ctx, w.d(), dbias.d(), 0));
  checkGradient(a.v, forward, w.v, da.v, "dA");
  checkGradient(b.v, forward, w.v, db.v, "dB");
  checkGradient(bias.v, forward, w.v, dbias.v, "dbias");

  // accumulate = 1 adds a second copy.
  std::vector<float> once = db.v;
  ASSERT_OK(distrt_matmul_bwd_weight(ctx, a.d(), w.d(), db.d(), &attr, 1));
  for (size_t i = 0; i < once.size(); ++i)
    ASSERT_NEAR(db.v[i], 2 * once[i], 1e-4f);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, MatmulTest,
    ::testing::Values(Case{1, false, false, false}, Case{1, false, true, false},
                      Case{1, false, false, true}, Case{1, false, true, true},
                      Case{3, false, false, false}, Case{3, false, true, true},
                      Case{3, true, false, false}, Case{3, true, false, true},
                      Case{3, true, true, false}, Case{3, true, true, true},
                      Case{3, false, false, false, true},
                      Case{3, false, true, true, true}));

TEST_F(RuntimeTest, MatmulRejectsMismatchedK) {
  Tensor a({4, 5}), b({6, 3}), c({4, 3});
  distrt_matmul_attr attr{0, 0, 1.0f, 0.0f};
  EXPECT_EQ(distrt_matmul(ctx, a.d(), b.d(), nullptr, c.d(), &attr),
            DISTRT_ERROR_SHAPE_MISMATCH);
  EXPECT_NE(std::string(err()).find("contraction sizes differ"),
            std::string::npos)
      << err();
  EXPECT_NE(std::string(err()).find("distrt_matmul"), std::string::npos);
}

TEST_F(RuntimeTest, MatmulRejectsWrongOutputShape) {
  Tensor a({4, 5}), b({5, 3}), c({4, 4});
  distrt_matmul_attr attr{0, 0, 1.0f, 0.0f};
  EXPECT_EQ(distrt_matmul(ctx, a.d(), b.d(), nullptr, c.d(), &attr),
            DISTRT_ERROR_SHAPE_MISMATCH);
  EXPECT_NE(std::string(err()).find("expected [4, 3]"), std::string::npos)
      << err();
}

namespace {

/// Rounds an f32 tensor to `dt` in place and returns the half bits.
std::vector<uint16_t> toHalf(distrt_context *ctx, Tensor &t, distrt_dtype dt) {
  std::vector<uint16_t> h(t.n());
  distrt_tensor ht = *t.d();
  ht.data = h.data();
  ht.dtype = dt;
  EXPECT_EQ(distrt_cast(ctx, t.d(), &ht), DISTRT_OK);
  EXPECT_EQ(distrt_cast(ctx, &ht, t.d()), DISTRT_OK); // t = rounded values
  return h;
}

} // namespace

TEST_F(RuntimeTest, HalfPrecisionMatmulAccumulatesInF32) {
  for (distrt_dtype dt : {DISTRT_BF16, DISTRT_F16}) {
    Tensor a({2, 4, 6}), b({6, 5}), bias({5}), c({2, 4, 5});
    randomize(a, 301);
    randomize(b, 302);
    randomize(bias, 303);
    std::vector<uint16_t> ha = toHalf(ctx, a, dt), hb = toHalf(ctx, b, dt),
                          hbias = toHalf(ctx, bias, dt), hc(c.n());
    distrt_matmul_attr attr{0, 0, 1.0f, 0.0f};
    ASSERT_OK(distrt_matmul(ctx, a.d(), b.d(), bias.d(), c.d(), &attr));
    distrt_tensor ta = *a.d(), tb = *b.d(), tbias = *bias.d(), tc = *c.d();
    ta.data = ha.data();
    tb.data = hb.data();
    tbias.data = hbias.data();
    tc.data = hc.data();
    ta.dtype = tb.dtype = tbias.dtype = tc.dtype = dt;
    ASSERT_OK(distrt_matmul(ctx, &ta, &tb, &tbias, &tc, &attr));
    Tensor back(c.dims);
    ASSERT_OK(distrt_cast(ctx, &tc, back.d()));
    // Same rounded inputs, f32 accumulation: only the output rounding differs.
    float ulp = dt == DISTRT_BF16 ? 1.0f / 128 : 1.0f / 1024;
    expectClose(back.v, c.v, ulp, "half matmul");
    // The weight gradient runs through the same path.
    std::vector<uint16_t> hdb(b.n());
    distrt_tensor tdb = tb;
    tdb.data = hdb.data();
    ASSERT_OK(distrt_matmul_bwd_weight(ctx, &ta, &tc, &tdb, &attr, 0));
    Tensor db(b.dims), dbHalf(b.dims);
    ASSERT_OK(distrt_matmul_bwd_weight(ctx, a.d(), back.d(), db.d(), &attr, 0));
    ASSERT_OK(distrt_cast(ctx, &tdb, dbHalf.d()));
    expectClose(dbHalf.v, db.v, 2 * ulp, "half matmul dB");
  }
}

TEST_F(RuntimeTest, MatmulRejectsMixedDtypes) {
  Tensor a({2, 3}), b({3, 2}), c({2, 2});
  std::vector<uint16_t> hb(6);
  distrt_tensor tb = *b.d();
  tb.data = hb.data();
  tb.dtype = DISTRT_BF16;
  distrt_matmul_attr attr{0, 0, 1.0f, 0.0f};
  EXPECT_EQ(distrt_matmul(ctx, a.d(), &tb, nullptr, c.d(), &attr),
            DISTRT_ERROR_UNSUPPORTED);
  EXPECT_NE(std::string(err()).find("one dtype"), std::string::npos) << err();
}
