//===- Pool.cpp - Max pooling on channels-last data -------------*- C++ -*-===//
#include "cpu/Pool.h"

#include "Internal.h"
#include "cpu/VecMath.h"

#include <cstdint>
#include <limits>
#include <vector>

using namespace distrt;

namespace {

struct PoolShape {
  int64_t n, c, h, w, oh, ow;
  int64_t xs[3], ys[3]; // strides of N, H, W (C's is 1)
  int kernel[2], stride[2], pad[2];
};

/// Output row `row` (= b * oh + i): each pixel the maximum of its window's
/// channel rows, accumulated in place so that the channel loop vectorizes
/// (`v > m ? v : m` is one maxps with v first).
inline __attribute__((always_inline)) void
poolRow(const float *x, float *y, const PoolShape &s, int64_t row) {
  int64_t b = row / s.oh, i = row % s.oh;
  for (int64_t j = 0; j < s.ow; ++j) {
    float *out = y + b * s.ys[0] + i * s.ys[1] + j * s.ys[2];
    for (int64_t k = 0; k < s.c; ++k)
      out[k] = -std::numeric_limits<float>::infinity();
    for (int a = 0; a < s.kernel[0]; ++a) {
      int64_t hi = i * s.stride[0] - s.pad[0] + a;
      if (hi < 0 || hi >= s.h)
        continue;
      for (int e = 0; e < s.kernel[1]; ++e) {
        int64_t wi = j * s.stride[1] - s.pad[1] + e;
        if (wi < 0 || wi >= s.w)
          continue;
        const float *in = x + b * s.xs[0] + hi * s.xs[1] + wi * s.xs[2];
        for (int64_t k = 0; k < s.c; ++k)
          out[k] = in[k] > out[k] ? in[k] : out[k];
      }
    }
  }
}

__attribute__((target("avx2"))) void
poolRowAvx2(const float *x, float *y, const PoolShape &s, int64_t row) {
  poolRow(x, y, s, row);
}

void poolRowBase(const float *x, float *y, const PoolShape &s, int64_t row) {
  poolRow(x, y, s, row);
}

} // namespace

void cpu::maxPoolChannelsLast(const distrt_tensor &x, const distrt_tensor &y,
                              const distrt_pool2d_attr &attr) {
  PoolShape s;
  s.n = x.dims[0];
  s.c = x.dims[1];
  s.h = x.dims[2];
  s.w = x.dims[3];
  s.oh = y.dims[2];
  s.ow = y.dims[3];
  // A unit dim's stride may be anything; its index is always 0.
  std::vector<int64_t> xs = stridesOf(x), ys = stridesOf(y);
  for (int d = 0; d < 3; ++d) {
    s.xs[d] = xs[d == 0 ? 0 : d + 1];
    s.ys[d] = ys[d == 0 ? 0 : d + 1];
  }
  for (int i = 0; i < 2; ++i) {
    s.kernel[i] = attr.kernel[i];
    s.stride[i] = attr.stride[i];
    s.pad[i] = attr.pad_begin[i];
  }
  auto row = vec::useAvx2() ? poolRowAvx2 : poolRowBase;
  const float *px = static_cast<const float *>(x.data);
  float *py = static_cast<float *>(y.data);
  int64_t rows = s.n * s.oh;
#pragma omp parallel for schedule(static) if (rows * s.ow * s.c >= 16384)
  for (int64_t r = 0; r < rows; ++r)
    row(px, py, s, r);
}
