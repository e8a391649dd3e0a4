//===- ScalarMathTest.cpp - Float fast paths of generated loops -*- C++ -*-===//
//
// Part of DistOpt. distrt/gen/Scalar.h computes erf, GELU (both forms),
// sigmoid, SiLU and their derivatives in float without libm, so that generated
// loops vectorize. Here they are held to double references over the whole
// range where the results are not 0 or 1, and at the special values.
//
//===----------------------------------------------------------------------===//
#include "distrt/gen/Scalar.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace {

/// Every 1/256 in [-40, 40]: past that every function below is its limit.
std::vector<float> grid() {
  std::vector<float> xs;
  for (int k = -40 * 256; k <= 40 * 256; ++k)
    xs.push_back(k / 256.0f);
  for (float tiny : {1e-30f, 1e-10f, 1e-5f, 3e-2f})
    for (float s : {1.0f, -1.0f})
      xs.push_back(s * tiny);
  return xs;
}

/// 0.5 x (1 + tanh(u)) in double, as x / (1 + e^-2u): the first form
/// cancels to 0 below x = -5 where the result is still above 1e-37.
double geluTanhRef(double x) {
  return x / (1 + std::exp(-1.5957691216057308 * (x + 0.044715 * x * x * x)));
}
double sigmoidRef(double x) { return 1 / (1 + std::exp(-x)); }
/// 1 - sigmoid(x), without the cancellation of 1 - s in double.
double oneMinusSigmoidRef(double x) { return 1 / (1 + std::exp(x)); }

/// |got - want| within `rel` of |want| plus `abs`: a few float ulp. GELU
/// rounds its argument u in float, and e^-2u amplifies that where x is
/// below -5: up to 1e-5 relative on results under 1e-3, so it is held to
/// an absolute 1e-8 there (float's ulp at 1 is 1.2e-7).
void expectNear(float got, double want, double rel, double abs, float x,
                const char *what) {
  EXPECT_LE(std::fabs(got - want), rel * std::fabs(want) + abs)
      << what << "(" << x << ") = " << got << ", want " << want;
}

TEST(ScalarMath, ExpFastIsWithinTwoUlp) {
  for (float x : grid()) {
    if (x > 88.0f || x < -87.0f)
      continue;
    expectNear(dg::expFast(x), std::exp((double)x), 2.5e-7, 0, x, "expFast");
  }
  EXPECT_EQ(dg::expFast(100.0f), std::numeric_limits<float>::infinity());
  EXPECT_EQ(dg::expFast(-100.0f), 0.0f);
  EXPECT_TRUE(std::isnan(dg::expFast(NAN)));
}

TEST(ScalarMath, FloatPathsAreFloatAccurate) {
  for (float x : grid()) {
    double s = sigmoidRef(x), q = oneMinusSigmoidRef(x);
    expectNear(dg::geluTanh<float>(x), geluTanhRef(x), 2e-6, 1e-8, x,
               "geluTanh");
    expectNear(dg::sigmoid<float>(x), s, 1e-6, 1e-37, x, "sigmoid");
    expectNear(dg::dUnary<float>(2, x, 1.0, 0.5), dg::dGeluTanh<double>(x),
               1e-6, 1e-6, x, "dGeluTanh");
    expectNear(dg::dUnary<float>(5, x, 1.0, 0.5), s * q, 2e-6, 1e-37,
               x, "dSigmoid");
    expectNear(dg::dUnary<float>(6, x, 1.0, 0.5), s * (1 + x * q),
               2e-6, 1e-6, x, "dSilu");
  }
}

/// |got - want| in units of the last place of `want` rounded to float.
double ulpError(float got, double want) {
  float w = std::fabs((float)want);
  return std::fabs(got - want) /
         (std::nextafter(w, std::numeric_limits<float>::infinity()) - w);
}

/// Every 257th float from 0 to 11 (past 4, erf rounds to 1), both signs.
template <typename F> void forFloatsTo11(F f) {
  for (uint32_t bits = 0; bits < 0x41300000u; bits += 257) {
    float x;
    memcpy(&x, &bits, sizeof x);
    f(x);
    f(-x);
  }
}

TEST(ScalarMath, ErfFastIsWithinOneAndAHalfUlp) {
  double worst = 0;
  forFloatsTo11([&](float x) {
    double e = ulpError(dg::erfFast(x), std::erf((double)x));
    worst = std::max(worst, e);
    EXPECT_LE(e, 1.5) << "erfFast(" << x << ")";
  });
  EXPECT_GT(worst, 0.5); // the sweep reached rounded results
  EXPECT_EQ(dg::erfOf<float>(0.3f), dg::erfFast(0.3f));
}

TEST(ScalarMath, GeluFloatIsFloatAccurate) {
  forFloatsTo11([&](float x) {
    double u = x, want = 0.5 * u * std::erfc(-u / std::sqrt(2.0));
    float got = dg::gelu<float>(x);
    if (x < -5.6f)
      EXPECT_LE(std::fabs(got - want), 5e-8) << "gelu(" << x << ")";
    else if (std::fabs(x) > 1e-37f) // normal results
      expectNear(got, want,
                 x >= 0       ? 2e-7
                 : x >= -3.0f ? 1.2e-6
                              : 2.5e-6,
                 0, x, "gelu");
  });
}

TEST(ScalarMath, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  for (float x : {NAN, -NAN}) {
    EXPECT_TRUE(std::isnan(dg::geluTanh<float>(x)));
    EXPECT_TRUE(std::isnan(dg::sigmoid<float>(x)));
    EXPECT_TRUE(std::isnan(dg::dGeluTanh<float>(x)));
    EXPECT_TRUE(std::isnan(dg::dSigmoid<float>(x)));
    EXPECT_TRUE(std::isnan(dg::dSilu<float>(x)));
  }
  for (float x : {NAN, -NAN}) {
    EXPECT_TRUE(std::isnan(dg::erfFast(x)));
    EXPECT_TRUE(std::isnan(dg::gelu<float>(x)));
  }
  EXPECT_EQ(dg::erfFast(inf), 1.0f);
  EXPECT_EQ(dg::erfFast(-inf), -1.0f);
  EXPECT_TRUE(std::signbit(dg::erfFast(-0.0f)));
  EXPECT_EQ(dg::gelu<float>(inf), inf);
  EXPECT_EQ(dg::gelu<float>(-inf), 0.0f);
  EXPECT_EQ(dg::gelu<float>(0.0f), 0.0f);
  EXPECT_EQ(dg::geluTanh<float>(inf), inf);
  EXPECT_EQ(dg::geluTanh<float>(-1e20f), 0.0f); // x^3 overflows to -inf
  EXPECT_EQ(dg::geluTanh<float>(0.0f), 0.0f);
  EXPECT_EQ(dg::sigmoid<float>(inf), 1.0f);
  EXPECT_EQ(dg::sigmoid<float>(-inf), 0.0f);
  EXPECT_EQ(dg::dGeluTanh<float>(inf), 1.0f);
  EXPECT_EQ(dg::dGeluTanh<float>(-inf), 0.0f);
  EXPECT_EQ(dg::dGeluTanh<float>(1e20f), 1.0f);
  EXPECT_EQ(dg::dGeluTanh<float>(-1e20f), 0.0f);
  EXPECT_EQ(dg::dSigmoid<float>(inf), 0.0f);
  EXPECT_EQ(dg::dSigmoid<float>(-inf), 0.0f);
  EXPECT_EQ(dg::dSilu<float>(inf), 1.0f);
  EXPECT_EQ(dg::dSilu<float>(-100.0f), 0.0f);
}

} // namespace

// shardElement maps each element of a tensor-parallel part to its index in
// the whole tensor: a [2, 12, 3] tensor split along dimension 1 as 3
// blocks (a fused Q|K|V) over 2 ranks. The parts, put together, cover the
// whole tensor once, and each keeps its rank's 2 columns of every block.
TEST(ShardElement, PartsCoverTheWholeTensorOnce) {
  const uint64_t outer = 2, size = 12, inner = 3, blocks = 3, parts = 2;
  const uint64_t local = size / parts, n = local / blocks;
  std::vector<int> seen(outer * size * inner, 0);
  for (uint64_t index = 0; index < parts; ++index)
    for (uint64_t i = 0; i < outer * local * inner; ++i) {
      uint64_t g =
          dg::shardElement(i, local, inner, blocks, parts, index);
      ASSERT_LT(g, seen.size());
      ++seen[g];
      // The whole-tensor coordinate along the split dimension.
      uint64_t c = i / inner % local, gc = g / inner % size;
      EXPECT_EQ(gc, (c / n * parts + index) * n + c % n) << "i " << i;
      EXPECT_EQ(g / (size * inner), i / (local * inner));
      EXPECT_EQ(g % inner, i % inner);
    }
  for (int count : seen)
    EXPECT_EQ(count, 1);
}
