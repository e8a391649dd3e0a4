//===- VecMath.h - 8-wide float math for the fused executor ----*- C++ -*-===//
//
// The fused executor applies one op to a whole register block at a time.
// libm's expf/erff/tanhf are calls no compiler vectorizes, and GCC's
// if-conversion of scalar code with selects is fragile (it gave up under
// -march=haswell), so the transcendental ops are written directly on GCC
// vector types, generic over the width (4 x f32 for SSE2, 8 x f32 for
// AVX2; the caller picks by CPU): Cephes-style range reduction and
// polynomials (about 1-2 ulp for exp/log, 2e-7 absolute for erf), with
// special values (inf, NaN, zero, subnormal inputs) handled by lane selects.
// exp flushes results in the subnormal range to zero.
//
//===----------------------------------------------------------------------===//
#ifndef DISTRT_LIB_CPU_VECMATH_H
#define DISTRT_LIB_CPU_VECMATH_H

#include "ScalarOps.h"
#include "distrt/gen/Scalar.h"

#include <cstdint>
#include <cstdlib>
#include <limits>

namespace distrt {
namespace vec {

typedef float V4 __attribute__((vector_size(16)));
typedef int32_t VI4 __attribute__((vector_size(16)));
typedef float V8 __attribute__((vector_size(32)));
typedef int32_t VI8 __attribute__((vector_size(32)));

template <typename V> struct Lanes;
template <> struct Lanes<V4> {
  using Int = VI4;
  static constexpr int count = 4;
};
template <> struct Lanes<V8> {
  using Int = VI8;
  static constexpr int count = 8;
};

/// Whether the runtime's vector code takes its AVX2+FMA path: the CPU has
/// both and DISTRT_FUSED_BASELINE=1 does not force SSE2 (tests cover both).
inline bool useAvx2() {
  const char *forceBase = std::getenv("DISTRT_FUSED_BASELINE");
  return !(forceBase && *forceBase == '1') && __builtin_cpu_supports("avx2") &&
         __builtin_cpu_supports("fma");
}

#define DISTRT_VEC_INLINE inline __attribute__((always_inline))
#define DISTRT_VEC_FN template <typename V> DISTRT_VEC_INLINE V

DISTRT_VEC_FN splat(float f) { return V{} + f; }
DISTRT_VEC_FN sel(typename Lanes<V>::Int mask, V a, V b) { return mask ? a : b; }

DISTRT_VEC_FN exp(V x) {
  using VI = typename Lanes<V>::Int;
  V xc = sel<V>(x < -87.3f, splat<V>(-87.3f), sel<V>(x > 88.3f, splat<V>(88.3f), x));
  V t = xc * 1.44269504088896341f + 0.5f;
  VI ki = __builtin_convertvector(t, VI); // truncates toward zero
  ki += (t < __builtin_convertvector(ki, V)); // masks are -1: now floor
  V k = __builtin_convertvector(ki, V);
  V r = xc - k * 0.693359375f + k * 2.12194440e-4f;
  V p = dg::expPolynomial<V>(r);
  V y = p * reinterpret_cast<V>((ki + 127) << 23);
  y = sel<V>(x > 88.7f, splat<V>(std::numeric_limits<float>::infinity()), y);
  y = sel<V>(x < -87.3f, splat<V>(0.0f), y);
  return sel<V>(x != x, x, y);
}

DISTRT_VEC_FN log(V x) {
  using VI = typename Lanes<V>::Int;
  VI sub = x < 1.17549435e-38f;
  V xs = sel<V>(sub, x * 8388608.0f, x); // 2^23
  VI bits = reinterpret_cast<VI>(xs);
  V e = __builtin_convertvector(((bits >> 23) & 0xff) - 126, V);
  V m = reinterpret_cast<V>((bits & static_cast<int32_t>(0x807fffff)) |
                            0x3f000000); // [0.5, 1)
  VI lo = m < 0.707106781186547524f;
  e = sel<V>(lo, e - 1.0f, e);
  m = sel<V>(lo, m + m - 1.0f, m - 1.0f);
  e = sel<V>(sub, e - 23.0f, e);
  V z = m * m;
  V y = splat<V>(7.0376836292e-2f);
  y = y * m - 1.1514610310e-1f;
  y = y * m + 1.1676998740e-1f;
  y = y * m - 1.2420140846e-1f;
  y = y * m + 1.4249322787e-1f;
  y = y * m - 1.6668057665e-1f;
  y = y * m + 2.0000714765e-1f;
  y = y * m - 2.4999993993e-1f;
  y = y * m + 3.3333331174e-1f;
  y = y * m * z;
  y += -2.12194440e-4f * e;
  y += -0.5f * z;
  V r = m + y + 0.693359375f * e;
  r = sel<V>(x == 0.0f, splat<V>(-std::numeric_limits<float>::infinity()), r);
  r = sel<V>(x < 0.0f, splat<V>(std::numeric_limits<float>::quiet_NaN()), r);
  r = sel<V>(x == std::numeric_limits<float>::infinity(), x, r);
  return sel<V>(x != x, x, r);
}

DISTRT_VEC_FN abs(V x) { return sel<V>(x < 0.0f, -x, x); }

/// GELU's exact form as the generated loops compute it (dg::gelu<float>
/// in distrt/gen/Scalar.h: the same polynomials, ranges and selects), a
/// lane per element. erfc(|x|) with |x| clamped into [0.875, 4]; NaN
/// stays NaN.
DISTRT_VEC_FN erfcLarge(V x) {
  V a = abs(x);
  a = sel<V>(a > 4.0f, splat<V>(4.0f), a);
  a = sel<V>(a < 0.875f, splat<V>(0.875f), a);
  return vec::exp<V>(-a * a) * dg::erfcScaled<V>(a);
}

/// 0.5 x (1 + erf(u)), u = x / sqrt(2); 0.5 x erfc(|u|) where erf(u) is
/// near -1, which does not cancel.
DISTRT_VEC_FN gelu(V x) {
  V u = x * 0.70710678118654752f;
  V small = 0.5f * x * (1.0f + dg::erfSmall<V>(u));
  V c = sel<V>(u < -4.0f, splat<V>(0.0f), erfcLarge<V>(u));
  V xc = sel<V>(x < -8.0f, splat<V>(-8.0f), x);
  V big = 0.5f * xc * sel<V>(x < 0.0f, c, 2.0f - c);
  return sel<V>(abs<V>(u) < 0.875f, small, big);
}

DISTRT_VEC_FN tanh(V x) {
  V ax = abs(x);
  V y = 1.0f - 2.0f / (vec::exp<V>(2.0f * ax) + 1.0f);
  // Small |x|: the odd Taylor series avoids the cancellation above.
  V x2 = x * x;
  V small = ax * (1.0f + x2 * (-1.0f / 3.0f + x2 * (2.0f / 15.0f)));
  y = sel<V>(ax < 0.03f, small, y);
  return sel<V>(x < 0.0f, -y, y);
}

DISTRT_VEC_FN sigmoid(V x) { return 1.0f / (1.0f + vec::exp<V>(-x)); }

DISTRT_VEC_FN sqrt(V x) {
  V r = x;
  for (int i = 0; i < Lanes<V>::count; ++i) // becomes sqrtps
    r[i] = __builtin_sqrtf(x[i]);
  return r;
}

template <int Op, typename V> DISTRT_VEC_INLINE V unary(V x) {
  switch (Op) {
  case DISTRT_UNARY_RELU:
    return sel<V>(x > 0.0f, x, splat<V>(0.0f));
  case DISTRT_UNARY_GELU:
    return vec::gelu<V>(x);
  case DISTRT_UNARY_GELU_TANH:
    return 0.5f * x *
           (1.0f + vec::tanh<V>(kSqrt2OverPi * (x + kGeluTanhC * x * x * x)));
  case DISTRT_UNARY_TANH:
    return vec::tanh<V>(x);
  case DISTRT_UNARY_SIGMOID:
    return vec::sigmoid<V>(x);
  case DISTRT_UNARY_SILU:
    return x * vec::sigmoid<V>(x);
  case DISTRT_UNARY_EXP:
    return vec::exp<V>(x);
  case DISTRT_UNARY_LOG:
    return vec::log<V>(x);
  case DISTRT_UNARY_SQRT:
    return vec::sqrt<V>(x);
  case DISTRT_UNARY_NEG:
    return -x;
  case DISTRT_UNARY_ABS:
    return vec::abs<V>(x);
  case DISTRT_UNARY_SQUARE:
    return x * x;
  case DISTRT_UNARY_RECIPROCAL:
    return 1.0f / x;
  case DISTRT_UNARY_SOFTPLUS:
    return sel<V>(x > 20.0f, x, vec::log<V>(1.0f + vec::exp<V>(x)));
  }
  return x;
}

#undef DISTRT_VEC_FN
#undef DISTRT_VEC_INLINE

} // namespace vec
} // namespace distrt

#endif // DISTRT_LIB_CPU_VECMATH_H
