//===- ScalarOps.h - Scalar math shared by CPU and CUDA kernels -*- C++ -*-===//
//
// One definition of every elementwise op, its derivative, the half-precision
// conversions and the dropout hash, compiled for host and device. Sharing it
// is what makes the fused executor, the CPU fallbacks and the CUDA kernels
// agree bit for bit on masks and to rounding on math.
//
//===----------------------------------------------------------------------===//
#ifndef DISTRT_LIB_SCALAROPS_H
#define DISTRT_LIB_SCALAROPS_H

#include "distrt/distrt.h"

#include <cmath>
#include <cstdint>
#include <cstring>

#ifdef __CUDACC__
#define DISTRT_HD __host__ __device__ __forceinline__
#else
#define DISTRT_HD inline
#endif

namespace distrt {

DISTRT_HD float bitsToFloat(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}
DISTRT_HD uint32_t floatToBits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

/// Round-to-nearest-even float -> bfloat16 bits (NaN stays NaN).
DISTRT_HD uint16_t floatToBf16(float f) {
  uint32_t x = floatToBits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((x >> 16) | 0x40);
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}
DISTRT_HD float bf16ToFloat(uint16_t h) {
  return bitsToFloat(static_cast<uint32_t>(h) << 16);
}

/// Round-to-nearest-even float -> IEEE half bits, with subnormals.
DISTRT_HD uint16_t floatToHalf(float f) {
  uint32_t x = floatToBits(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t mant = x & 0x7fffffu;
  int exp = static_cast<int>((x >> 23) & 0xffu);
  if (exp == 0xff)
    return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0u));
  int e = exp - 127 + 15;
  if (e >= 31)
    return static_cast<uint16_t>(sign | 0x7c00u);
  if (e <= 0) {
    if (e < -10)
      return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    int shift = 14 - e;
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1u);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u)))
      ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = (static_cast<uint32_t>(e) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u)))
    ++half;
  return static_cast<uint16_t>(sign | half);
}
DISTRT_HD float halfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    float v = static_cast<float>(mant) * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  if (exp == 31)
    return bitsToFloat(sign | 0x7f800000u | (mant << 13));
  return bitsToFloat(sign | ((exp + 112u) << 23) | (mant << 13));
}

/// Counter-based uniform in [0, 1): splitmix64 of (seed, index).
DISTRT_HD float dropoutUniform(uint64_t seed, uint64_t index) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ull * (index + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z = z ^ (z >> 31);
  return static_cast<float>(z >> 40) * (1.0f / 16777216.0f);
}

DISTRT_HD float sigmoidf(float x) { return 1.0f / (1.0f + expf(-x)); }

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluTanhC = 0.044715f;
constexpr float kInvSqrt2 = 0.7071067811865476f;
constexpr float kInvSqrt2Pi = 0.3989422804014327f;

DISTRT_HD float unaryFwd(int op, float x) {
  switch (op) {
  case DISTRT_UNARY_RELU:
    return x > 0.0f ? x : 0.0f;
  case DISTRT_UNARY_GELU:
    return 0.5f * x * (1.0f + erff(x * kInvSqrt2));
  case DISTRT_UNARY_GELU_TANH:
    return 0.5f * x *
           (1.0f + tanhf(kSqrt2OverPi * (x + kGeluTanhC * x * x * x)));
  case DISTRT_UNARY_TANH:
    return tanhf(x);
  case DISTRT_UNARY_SIGMOID:
    return sigmoidf(x);
  case DISTRT_UNARY_SILU:
    return x * sigmoidf(x);
  case DISTRT_UNARY_EXP:
    return expf(x);
  case DISTRT_UNARY_LOG:
    return logf(x);
  case DISTRT_UNARY_SQRT:
    return sqrtf(x);
  case DISTRT_UNARY_NEG:
    return -x;
  case DISTRT_UNARY_ABS:
    return fabsf(x);
  case DISTRT_UNARY_SQUARE:
    return x * x;
  case DISTRT_UNARY_RECIPROCAL:
    return 1.0f / x;
  case DISTRT_UNARY_SOFTPLUS:
    return x > 20.0f ? x : log1pf(expf(x));
  }
  return x;
}

/// d op(x) / dx.
DISTRT_HD float unaryDeriv(int op, float x) {
  switch (op) {
  case DISTRT_UNARY_RELU:
    return x > 0.0f ? 1.0f : 0.0f;
  case DISTRT_UNARY_GELU:
    return 0.5f * (1.0f + erff(x * kInvSqrt2)) +
           x * kInvSqrt2Pi * expf(-0.5f * x * x);
  case DISTRT_UNARY_GELU_TANH: {
    float u = kSqrt2OverPi * (x + kGeluTanhC * x * x * x);
    float t = tanhf(u);
    float du = kSqrt2OverPi * (1.0f + 3.0f * kGeluTanhC * x * x);
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du;
  }
  case DISTRT_UNARY_TANH: {
    float t = tanhf(x);
    return 1.0f - t * t;
  }
  case DISTRT_UNARY_SIGMOID: {
    float s = sigmoidf(x);
    return s * (1.0f - s);
  }
  case DISTRT_UNARY_SILU: {
    float s = sigmoidf(x);
    return s * (1.0f + x * (1.0f - s));
  }
  case DISTRT_UNARY_EXP:
    return expf(x);
  case DISTRT_UNARY_LOG:
    return 1.0f / x;
  case DISTRT_UNARY_SQRT:
    return 0.5f / sqrtf(x);
  case DISTRT_UNARY_NEG:
    return -1.0f;
  case DISTRT_UNARY_ABS:
    return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : 0.0f);
  case DISTRT_UNARY_SQUARE:
    return 2.0f * x;
  case DISTRT_UNARY_RECIPROCAL:
    return -1.0f / (x * x);
  case DISTRT_UNARY_SOFTPLUS:
    return sigmoidf(x);
  }
  return 1.0f;
}

DISTRT_HD float binaryFwd(int op, float a, float b) {
  switch (op) {
  case DISTRT_BINARY_ADD:
    return a + b;
  case DISTRT_BINARY_SUB:
    return a - b;
  case DISTRT_BINARY_MUL:
    return a * b;
  case DISTRT_BINARY_DIV:
    return a / b;
  case DISTRT_BINARY_MAX:
    return a >= b ? a : b;
  case DISTRT_BINARY_MIN:
    return a <= b ? a : b;
  case DISTRT_BINARY_POW:
    return powf(a, b);
  }
  return a;
}

/// d(a op b)/da and d(a op b)/db. Ties of max/min go to `a`.
DISTRT_HD float binaryDerivA(int op, float a, float b) {
  switch (op) {
  case DISTRT_BINARY_ADD:
  case DISTRT_BINARY_SUB:
    return 1.0f;
  case DISTRT_BINARY_MUL:
    return b;
  case DISTRT_BINARY_DIV:
    return 1.0f / b;
  case DISTRT_BINARY_MAX:
    return a >= b ? 1.0f : 0.0f;
  case DISTRT_BINARY_MIN:
    return a <= b ? 1.0f : 0.0f;
  case DISTRT_BINARY_POW:
    return b * powf(a, b - 1.0f);
  }
  return 0.0f;
}
DISTRT_HD float binaryDerivB(int op, float a, float b) {
  switch (op) {
  case DISTRT_BINARY_ADD:
    return 1.0f;
  case DISTRT_BINARY_SUB:
    return -1.0f;
  case DISTRT_BINARY_MUL:
    return a;
  case DISTRT_BINARY_DIV:
    return -a / (b * b);
  case DISTRT_BINARY_MAX:
    return a >= b ? 0.0f : 1.0f;
  case DISTRT_BINARY_MIN:
    return a <= b ? 0.0f : 1.0f;
  case DISTRT_BINARY_POW:
    return powf(a, b) * logf(a);
  }
  return 0.0f;
}

} // namespace distrt

#endif // DISTRT_LIB_SCALAROPS_H
