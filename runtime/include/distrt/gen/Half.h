//===- distrt/gen/Half.h - f16/bf16 storage types ---------------*- C++ -*-===//
//
// Part of the support code of programs dist-compile generates
// (distrt_gen.h includes every piece; docs/codegen.md). Generated loops
// store f16/bf16 tensors as these 16-bit types and compute in float: a
// value converts to float implicitly and back with round-to-nearest-even,
// bit for bit as distrt_cast (runtime/lib/ScalarOps.h).
//
//===----------------------------------------------------------------------===//
#ifndef DISTRT_GEN_HALF_H
#define DISTRT_GEN_HALF_H

#include "distrt/gen/Common.h"

namespace dg {

DG_HD inline uint32_t floatBits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
DG_HD inline float bitsFloat(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/// IEEE binary16 storage.
struct f16 {
  uint16_t bits;
  f16() = default;
  DG_HD f16(float f) : bits(fromFloat(f)) {}
  DG_HD operator float() const { return toFloat(bits); }

  DG_HD static uint16_t fromFloat(float f) {
    uint32_t x = floatBits(f);
    uint32_t sign = (x >> 16) & 0x8000u, mant = x & 0x7fffffu;
    int exp = (int)((x >> 23) & 0xffu);
    if (exp == 0xff)
      return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0u));
    int e = exp - 127 + 15;
    if (e >= 31)
      return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) {
      if (e < -10)
        return (uint16_t)sign;
      mant |= 0x800000u;
      int shift = 14 - e;
      uint32_t h = mant >> shift, rem = mant & ((1u << shift) - 1u),
               mid = 1u << (shift - 1);
      if (rem > mid || (rem == mid && (h & 1u)))
        ++h;
      return (uint16_t)(sign | h);
    }
    uint32_t h = ((uint32_t)e << 10) | (mant >> 13), rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
      ++h;
    return (uint16_t)(sign | h);
  }
  DG_HD static float toFloat(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu,
             mant = h & 0x3ffu;
    if (exp == 0) {
      float v = (float)mant * 5.9604644775390625e-8f;
      return sign ? -v : v;
    }
    if (exp == 31)
      return bitsFloat(sign | 0x7f800000u | (mant << 13));
    return bitsFloat(sign | ((exp + 112u) << 23) | (mant << 13));
  }
};

/// bfloat16 storage (the upper half of a float).
struct bf16 {
  uint16_t bits;
  bf16() = default;
  DG_HD bf16(float f) : bits(fromFloat(f)) {}
  DG_HD operator float() const { return bitsFloat((uint32_t)bits << 16); }

  DG_HD static uint16_t fromFloat(float f) {
    uint32_t x = floatBits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u)
      return (uint16_t)((x >> 16) | 0x40);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
  }
};

static_assert(sizeof(f16) == 2 && sizeof(bf16) == 2, "16-bit storage");

} // namespace dg

#endif // DISTRT_GEN_HALF_H
