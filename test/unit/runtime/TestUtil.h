//===- TestUtil.h - Helpers for the runtime kernel tests -------*- C++ -*-===//
//
// Host tensors that own their storage, seeded random fills, and a
// finite-difference gradient checker: d/dx sum(w * f(x)) by central
// differences against the analytic gradient a backward kernel returned.
//
//===----------------------------------------------------------------------===//
#ifndef DISTRT_TEST_TESTUTIL_H
#define DISTRT_TEST_TESTUTIL_H

#include "distrt/distrt.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <vector>

namespace distrt_test {

/// A host f32 tensor owning its data.
struct Tensor {
  std::vector<int64_t> dims;
  std::vector<float> v;
  distrt_tensor desc;

  explicit Tensor(std::vector<int64_t> d, float fill = 0.0f) : dims(d) {
    int64_t n = 1;
    for (int64_t x : dims)
      n *= x;
    v.assign(n, fill);
    desc = distrt_make_tensor(v.data(), DISTRT_F32,
                              static_cast<int32_t>(dims.size()), dims.data());
  }
  Tensor(const Tensor &) = delete;
  Tensor &operator=(const Tensor &) = delete;
  const distrt_tensor *d() {
    desc.data = v.data();
    return &desc;
  }
  int64_t n() const { return static_cast<int64_t>(v.size()); }
  float &operator[](int64_t i) { return v[i]; }
};

/// A host index tensor.
struct Index {
  std::vector<int64_t> dims, v;
  distrt_tensor desc;
  Index(std::vector<int64_t> d, std::vector<int64_t> values)
      : dims(d), v(values) {
    desc = distrt_make_tensor(v.data(), DISTRT_I64,
                              static_cast<int32_t>(dims.size()), dims.data());
  }
  const distrt_tensor *d() { return &desc; }
};

inline void randomize(Tensor &t, uint32_t seed, float lo = -1.0f,
                      float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  for (float &x : t.v)
    x = dist(gen);
}

/// A CPU context per test.
class RuntimeTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_EQ(distrt_context_create(DISTRT_BACKEND_CPU, 0, &ctx), DISTRT_OK)
        << distrt_last_error(nullptr);
  }
  void TearDown() override { distrt_context_destroy(ctx); }
  const char *err() const { return distrt_last_error(ctx); }
  distrt_context *ctx = nullptr;
};

#define EXPECT_OK(expr) EXPECT_EQ((expr), DISTRT_OK) << distrt_last_error(ctx)
#define ASSERT_OK(expr) ASSERT_EQ((expr), DISTRT_OK) << distrt_last_error(ctx)

inline void expectClose(const std::vector<float> &got,
                        const std::vector<float> &want, float tol,
                        const char *what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * std::max(1.0f, std::fabs(want[i])))
        << what << " at " << i;
}

/// Central-difference check of `analytic` = d/dx sum(w * forward()).
/// `forward` must read the current contents of `x`.
inline void checkGradient(std::vector<float> &x,
                          const std::function<std::vector<float>()> &forward,
                          const std::vector<float> &w,
                          const std::vector<float> &analytic, const char *what,
                          float eps = 1e-2f, float tol = 2e-2f) {
  ASSERT_EQ(x.size(), analytic.size()) << what;
  auto loss = [&] {
    std::vector<float> y = forward();
    double s = 0;
    for (size_t i = 0; i < y.size(); ++i)
      s += double(y[i]) * w[i];
    return s;
  };
  for (size_t i = 0; i < x.size(); ++i) {
    float saved = x[i];
    x[i] = saved + eps;
    double lp = loss();
    x[i] = saved - eps;
    double lm = loss();
    x[i] = saved;
    float numeric = float((lp - lm) / (2.0 * eps));
    ASSERT_NEAR(analytic[i], numeric,
                tol * std::max(1.0f, std::fabs(numeric)))
        << what << ": gradient element " << i;
  }
}

} // namespace distrt_test

#endif // DISTRT_TEST_TESTUTIL_H
