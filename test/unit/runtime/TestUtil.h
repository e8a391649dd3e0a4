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
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
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

/// An activation post-op.
inline distrt_post_op eltwise(int32_t alg, float alpha = 0, float beta = 0) {
  distrt_post_op p = {};
  p.kind = DISTRT_POST_ELTWISE;
  p.alg = alg;
  p.alpha = alpha;
  p.beta = beta;
  return p;
}

/// A binary post-op with `src1`.
inline distrt_post_op binary(int32_t alg, const distrt_tensor *src1) {
  distrt_post_op p = {};
  p.kind = DISTRT_POST_BINARY;
  p.alg = alg;
  p.src1 = *src1;
  return p;
}

inline float gelu(float x) {
  return 0.5f * x * (1.0f + std::erf(x / std::sqrt(2.0f)));
}

/// NCHW [n, c, h, w] data re-laid out channels-last (NHWC order in memory).
inline std::vector<float> toNhwc(const std::vector<float> &v, int64_t n,
                                 int64_t c, int64_t h, int64_t w) {
  std::vector<float> out(v.size());
  for (int64_t a = 0; a < n; ++a)
    for (int64_t b = 0; b < c; ++b)
      for (int64_t y = 0; y < h; ++y)
        for (int64_t x = 0; x < w; ++x)
          out[((a * h + y) * w + x) * c + b] = v[((a * c + b) * h + y) * w + x];
  return out;
}

/// `t`'s data as an [n, c, h, w] tensor laid out channels-last.
inline distrt_tensor nhwcDesc(Tensor &t, int64_t n, int64_t c, int64_t h,
                              int64_t w) {
  int64_t dims[] = {n, c, h, w}, strides[] = {h * w * c, 1, w * c, c};
  return distrt_make_strided_tensor(t.v.data(), DISTRT_F32, 4, dims, strides);
}

/// An environment variable set for a scope and restored after: children
/// started in it see it (a threadsafe death test re-runs the test binary,
/// so its child starts with the variable set).
class ScopedEnv {
public:
  ScopedEnv(const char *name, const char *value) : name(name) {
    const char *old = std::getenv(name);
    had = old != nullptr;
    if (had)
      saved = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (had)
      setenv(name, saved.c_str(), 1);
    else
      unsetenv(name);
  }
  ScopedEnv(const ScopedEnv &) = delete;
  ScopedEnv &operator=(const ScopedEnv &) = delete;

private:
  const char *name;
  bool had = false;
  std::string saved;
};

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
