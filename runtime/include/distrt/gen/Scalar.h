//===- distrt/gen/Scalar.h - Scalar math of generated kernels ---*- C++ -*-===//
//
// Part of the support code of programs dist-compile generates
// (distrt_gen.h includes every piece; docs/codegen.md).
//
//===----------------------------------------------------------------------===//
#ifndef DISTRT_GEN_SCALAR_H
#define DISTRT_GEN_SCALAR_H

#include "distrt/gen/Common.h"

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
  case 2: { // gelu_tanh
    double c = 0.7978845608028654, u = c * (x + 0.044715 * x * x * x);
    double t = tanh(u);
    return (T)(0.5 * (1 + t) +
               0.5 * x * (1 - t * t) * c * (1 + 3 * 0.044715 * x * x));
  }
  case 3:
    return (T)(2 / sqrt(kPi) * exp(-x * x)); // erf
  case 4: {
    double t = tanh(x);
    return (T)(1 - t * t);
  } // tanh
  case 5: {
    double s = 1 / (1 + exp(-x));
    return (T)(s * (1 - s));
  } // sigmoid
  case 6: {
    double s = 1 / (1 + exp(-x));
    return (T)(s * (1 + x * (1 - s)));
  }
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
