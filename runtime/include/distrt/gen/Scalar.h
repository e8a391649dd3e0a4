//===- distrt/gen/Scalar.h - Scalar math of generated kernels ---*- C++ -*-===//
//
// Part of the support code of programs dist-compile generates
// (distrt_gen.h includes every piece; docs/codegen.md).
//
//===----------------------------------------------------------------------===//
#ifndef DISTRT_GEN_SCALAR_H
#define DISTRT_GEN_SCALAR_H

#include "distrt/gen/Common.h"

/// The float paths below are meant to be inlined into the generated loops,
/// which vectorize only without a call; GCC's -O2 heuristics leave the
/// larger ones (erf, GELU) out of line.
#if defined(__CUDACC__)
#define DG_ALWAYS_INLINE __forceinline__
#else
#define DG_ALWAYS_INLINE inline __attribute__((always_inline))
#endif

namespace dg {

//===----------------------------------------------------------------------===//
// Scalar functions used by generated kernels (host and device)
//===----------------------------------------------------------------------===//

/// Counter-based uniform in [0, 1): splitmix64 of (seed, index), the same
/// stream as distrt_dropout (runtime/lib/ScalarOps.h).
DG_HD inline float dropoutUniform(uint64_t seed, uint64_t index) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ull * (index + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z = z ^ (z >> 31);
  return (float)(z >> 40) * (1.0f / 16777216.0f);
}

/// splitmix64's finalizer: a bijective 64-bit mix.
DG_HD inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// The dropout stream seed of (seed, optimizer step, micro-batch): element
/// i of that mask is dropoutUniform(dropoutStream(...), i). Mixing each
/// key into the previous one keeps the streams of different steps and
/// micro-batches apart for any tensor size.
DG_HD inline uint64_t dropoutStream(uint64_t seed, uint64_t step,
                                    uint64_t microbatch) {
  return mix64(mix64(mix64(seed) ^ (step + 0x632be59bd9b4e019ull)) ^
               (microbatch + 0x8cb92ba72f3d8dd7ull));
}

/// Element i of a tensor-parallel part is element shardElement(i, ...) of
/// the whole tensor: the part keeps, along its dimension of `size`
/// elements (`inner` elements apart), its n = size / blocks of each of the
/// whole dimension's `blocks` x `parts` pieces, as rank `index` of the
/// parts (dist.tp_shard [dim, blocks, parts]). A dropout mask drawn by
/// whole-tensor index is then the part of the mask one process draws.
DG_HD inline uint64_t shardElement(uint64_t i, uint64_t size, uint64_t inner,
                                   uint64_t blocks, uint64_t parts,
                                   uint64_t index) {
  uint64_t n = size / blocks, span = size * inner;
  uint64_t outer = i / span, c = i % span / inner, k = i % inner;
  uint64_t whole = (c / n * parts + index) * n + c % n;
  return (outer * size * parts + whole) * inner + k;
}

template <typename T> DG_HD inline T gelu(T x) {
  return (T)(0.5 * (double)x * (1.0 + erf((double)x * 0.70710678118654752)));
}
template <typename T> DG_HD inline T geluTanh(T x) {
  double d = x;
  return (T)(0.5 * d *
             (1.0 + tanh(0.7978845608028654 * (d + 0.044715 * d * d * d))));
}
template <typename T> DG_HD inline T sigmoid(T x) {
  return (T)(1.0 / (1.0 + exp(-(double)x)));
}

//===----------------------------------------------------------------------===//
// float fast paths: a loop of these vectorizes
//===----------------------------------------------------------------------===//
//
// The templates above compute in double through libm, one call per item,
// which no loop vectorizes: GPT-2's GELU loops took 17% of a training step.
// For float, the functions below use no call and no branch (selects, which
// GCC if-converts in programs built with -fno-trapping-math), so the
// generated loops (DG_SIMD) run them 4 or 8 items at a time. They are
// float-accurate: 1-2 ulp for expFast, a few ulp after the formulas.

/// e^r for |r| <= ln(2)/2: Cephes' degree-6 polynomial, for float and for
/// GCC vector types of float alike (the runtime's fused executor,
/// runtime/lib/cpu/VecMath.h, evaluates it 8 lanes at a time).
template <typename T> DG_HD inline T expPolynomial(T r) {
  T p = r * 1.9875691500e-4f + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  return p * r * r + r + 1.0f;
}

/// e^x: Cephes' range reduction and expPolynomial, as the fused executor
/// computes it. inf above 88.7, 0 below -87.3 (no subnormal results), NaN
/// for NaN.
DG_HD inline float expFast(float x) {
  float xc = x < -87.3f ? -87.3f : x;
  xc = xc > 88.3f ? 88.3f : xc;
  float t = xc * 1.44269504088896341f + 0.5f;
  int32_t ki = (int32_t)t; // toward zero
  ki -= t < (float)ki;     // now floor
  float k = (float)ki;
  float r = xc - k * 0.693359375f + k * 2.12194440e-4f;
  float p = expPolynomial(r);
  int32_t bits = (ki + 127) << 23;
  float scale;
  memcpy(&scale, &bits, sizeof scale);
  float y = p * scale;
  y = x > 88.7f ? INFINITY : y;
  y = x < -87.3f ? 0.0f : y;
  return x != x ? x : y;
}

/// erf and GELU's exact (erf) form in float. erf(x) = x P(x^2) for
/// |x| < 0.875 (P = 1 + R, R of degree 5 fitted to erf(x) / x - 1 with
/// relative weight),
/// and 1 - erfc(|x|), erfc(a) = e^-a^2 Q(a - 2.4375), for larger |x|
/// (Q: degree 11, fitted to erfc(a) e^a^2 on [0.875, 4] with relative
/// weight; erfc(4) = 1.5e-8 rounds 1 - erfc to 1, so |x| is clamped at 4).
/// Both are evaluated and one is selected, which keeps the loops of them
/// vectorizable. Measured against double-precision erf
/// (test/unit/codegen/ScalarMathTest.cpp): erf within 1.5 ulp everywhere;
/// GELU within 2e-7 relative for x >= 0, 1.2e-6 for x in [-3, 0) and
/// 2.5e-6 in [-5.6, -3) (the rounding of u = x / sqrt(2) and of u^2,
/// amplified by e^-u^2 on results below 0.2, as for geluTanh), and within
/// 5e-8 of 0 below -5.6. The polynomials are templates, for float and
/// for GCC vector types of float alike: the runtime's fused executor
/// (runtime/lib/cpu/VecMath.h) computes erf and GELU with them.
template <typename T> DG_HD DG_ALWAYS_INLINE T erfSmall(T x) {
  // x + x R(x^2) rather than x P(x^2): R's rounding errors are scaled by
  // R(z) <= 0.13, which keeps the result within about 1 ulp.
  T z = x * x;
  T r = z * -6.203239e-4f + 5.032179e-3f;
  r = r * z - 2.6791463e-2f;
  r = r * z + 1.1282455e-1f;
  r = r * z - 3.761255e-1f;
  r = r * z + 1.2837915e-1f;
  return x + x * r;
}

/// erfc(a) e^(a^2) for a in [0.875, 4]: Q(a - 2.4375).
template <typename T> DG_HD DG_ALWAYS_INLINE T erfcScaled(T a) {
  T t = a - 2.4375f;
  T q = t * -4.978762e-7f + 2.0781338e-6f;
  q = q * t - 4.5308516e-6f;
  q = q * t + 1.620969e-5f;
  q = q * t - 6.7876106e-5f;
  q = q * t + 2.4163077e-4f;
  q = q * t - 8.177047e-4f;
  q = q * t + 2.7074348e-3f;
  q = q * t - 8.647987e-3f;
  q = q * t + 2.6498312e-2f;
  q = q * t - 7.756085e-2f;
  return q * t + 2.1555246e-1f;
}

/// erfc(a) for a in [0.875, 4], about 2.5e-7 relative.
DG_HD DG_ALWAYS_INLINE float erfcLarge(float a) {
  return expFast(-a * a) * erfcScaled(a);
}

/// |x| clamped into erfcLarge's range; NaN stays NaN.
DG_HD DG_ALWAYS_INLINE float erfLargeArg(float x) {
  float a = x < 0.0f ? -x : x;
  a = a > 4.0f ? 4.0f : a;
  return a < 0.875f ? 0.875f : a;
}

DG_HD DG_ALWAYS_INLINE float erfFast(float x) {
  float big = 1.0f - erfcLarge(erfLargeArg(x));
  big = x < 0.0f ? -big : big;
  return (x < 0.875f && x > -0.875f) ? erfSmall(x) : big;
}

/// erf for every type: libm in double, erfFast for float.
template <typename T> DG_HD inline T erfOf(T x) { return (T)erf((double)x); }
template <> DG_HD DG_ALWAYS_INLINE float erfOf<float>(float x) {
  return erfFast(x);
}

/// 0.5 x (1 + erf(u)), u = x / sqrt(2). Where erf(u) is near -1 (x below
/// -1.24) it is 0.5 x erfc(|u|) instead, which does not cancel; below
/// x = -4 sqrt(2), erfc(|u|) < 1.6e-8 counts as 0 (and -inf gives -0).
template <> DG_HD DG_ALWAYS_INLINE float gelu<float>(float x) {
  float u = x * 0.70710678118654752f;
  float small = 0.5f * x * (1.0f + erfSmall(u));
  float c = erfcLarge(erfLargeArg(u));
  c = u < -4.0f ? 0.0f : c;
  float xc = x < -8.0f ? -8.0f : x;
  float big = 0.5f * xc * (x < 0.0f ? c : 2.0f - c);
  return (u < 0.875f && u > -0.875f) ? small : big;
}

/// 0.5 x (1 + tanh(u)) written as x / (1 + e^-2u), which does not cancel
/// where tanh(u) is near -1 (x below -3).
template <> DG_HD inline float geluTanh<float>(float x) {
  return x / (1.0f + expFast(-1.5957691216057308f * (x + 0.044715f * x * x * x)));
}

template <> DG_HD inline float sigmoid<float>(float x) {
  return 1.0f / (1.0f + expFast(-x));
}

/// s = 1 / (1 + e) and 1 - s = e s, without the cancellation of 1 - s
/// where s is near 1 (e = inf: s = 0, 1 - s = 1).
struct SigmoidParts {
  float s, oneMinus;
};
DG_HD inline SigmoidParts sigmoidParts(float e) {
  float s = 1.0f / (1.0f + e);
  return {s, e < INFINITY ? e * s : 1.0f};
}

/// Derivatives of gelu_tanh, sigmoid and silu (dUnary kinds 2, 5, 6): the
/// double formulas for every type, the fast paths for float.
template <typename T> DG_HD inline T dGeluTanh(T xv) {
  double x = xv, c = 0.7978845608028654, u = c * (x + 0.044715 * x * x * x);
  double t = tanh(u);
  return (T)(0.5 * (1 + t) +
             0.5 * x * (1 - t * t) * c * (1 + 3 * 0.044715 * x * x));
}
template <> DG_HD inline float dGeluTanh<float>(float x) {
  // Beyond +-30 the float derivative is 1 or 0; clamping keeps x^3 finite.
  float xc = x > 30.0f ? 30.0f : (x < -30.0f ? -30.0f : x);
  SigmoidParts p = sigmoidParts(
      expFast(-1.5957691216057308f * (xc + 0.044715f * xc * xc * xc)));
  float du = 1.5957691216057308f * (1.0f + 3.0f * 0.044715f * xc * xc);
  return p.s + xc * du * p.s * p.oneMinus;
}
template <typename T> DG_HD inline T dSigmoid(T xv) {
  double s = 1 / (1 + exp(-(double)xv));
  return (T)(s * (1 - s));
}
template <> DG_HD inline float dSigmoid<float>(float x) {
  SigmoidParts p = sigmoidParts(expFast(-x));
  return p.s * p.oneMinus;
}
template <typename T> DG_HD inline T dSilu(T xv) {
  double x = xv, s = 1 / (1 + exp(-x));
  return (T)(s * (1 + x * (1 - s)));
}
template <> DG_HD inline float dSilu<float>(float x) {
  // Beyond +-100 the float derivative is 1 or 0 (x = inf: not inf * 0).
  float xc = x > 100.0f ? 100.0f : (x < -100.0f ? -100.0f : x);
  SigmoidParts p = sigmoidParts(expFast(-xc));
  return p.s * (1.0f + xc * p.oneMinus);
}
template <typename T> DG_HD inline T softplus(T x) {
  double d = x;
  return (T)(d > 20 ? d : log1p(exp(d)));
}
template <typename T> DG_HD inline T sign(T x) {
  return (T)((x > T(0)) - (x < T(0)));
}
template <typename T> DG_HD inline T fmodPy(T a, T b) {
  // Integer Mod in ONNX (fmod = 0) takes the divisor's sign.
  T r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
DG_HD inline float fmodPy(float a, float b) {
  float r = fmodf(a, b);
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
DG_HD inline double fmodPy(double a, double b) {
  double r = fmod(a, b);
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
template <typename T> DG_HD inline T maxOf(T a, T b) {
  return (a != a) ? a : (b != b) ? b : (a > b ? a : b);
}
template <typename T> DG_HD inline T minOf(T a, T b) {
  return (a != a) ? a : (b != b) ? b : (a < b ? a : b);
}
template <typename T> DG_HD inline T powOf(T a, double b) {
  return (T)pow((double)a, b);
}
template <typename T> DG_HD inline bool isInf(T x) {
  return x == (T)INFINITY || x == (T)-INFINITY;
}

/// Derivative factor f'(x) of graph.unary kind `k` (the UnaryKind values of
/// the graph dialect; docs of graph.unary_grad): unary_grad = dy * dUnary.
template <typename T>
DG_HD inline T dUnary(int k, T xv, double alpha, double beta) {
  double x = xv;
  const double kPi = 3.14159265358979323846;
  switch (k) {
  case 0:
    return (T)(x > 0 ? 1 : 0); // relu
  case 1:
    return (T)(0.5 * (1 + erf(x / 1.4142135623730951)) + // gelu
               x * exp(-0.5 * x * x) / sqrt(2 * kPi));
  case 2:
    return dGeluTanh<T>(xv);
  case 3:
    return (T)(2 / sqrt(kPi) * exp(-x * x)); // erf
  case 4: {
    double t = tanh(x);
    return (T)(1 - t * t);
  } // tanh
  case 5:
    return dSigmoid<T>(xv);
  case 6:
    return dSilu<T>(xv); // silu
  case 7:
    return (T)exp(x);
  case 8:
    return (T)(1 / x);
  case 9:
    return (T)(0.5 / sqrt(x));
  case 10:
    return (T)(-0.5 * pow(x, -1.5));
  case 11:
    return (T)-1;
  case 12:
    return (T)((x > 0) - (x < 0));
  case 13:
    return (T)(-1 / (x * x));
  case 17:
    return (T)cos(x);
  case 18:
    return (T)-sin(x);
  case 21:
    return (T)(1 / (1 + exp(-x))); // softplus
  case 22: {
    double d = 1 + fabs(x);
    return (T)(1 / (d * d));
  } // softsign
  case 23: {
    double y = alpha * x + beta;
    return (T)(y > 0 && y < 1 ? alpha : 0);
  }
  case 24:
    return (T)(x < -3 ? 0 : (x > 3 ? 1 : x / 3 + 0.5)); // hard_swish
  case 25:
    return (T)(x > 0 ? 1 : alpha); // leaky_relu
  case 26:
    return (T)(x > 0 ? 1 : alpha * exp(x)); // elu
  case 27:
    return (T)1; // identity
  default:
    return (T)0; // sign, floor, ceil, round
  }
}

} // namespace dg

#endif // DISTRT_GEN_SCALAR_H
