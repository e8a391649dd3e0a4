//===- Loops.h - Parallel strided loops for CPU fallbacks ------*- C++ -*-===//
//
// The plain-loop kernels (what oneDNN has no primitive for) iterate an output
// shape while tracking one strided offset per operand. Chunks of the flat
// index space run in parallel under OpenMP.
//
//===----------------------------------------------------------------------===//
#ifndef DISTRT_LIB_CPU_LOOPS_H
#define DISTRT_LIB_CPU_LOOPS_H

#include "distrt/distrt.h"

#include <cstdint>
#include <vector>

namespace distrt {
namespace cpu {

/// Calls f(flatIndex, offsets) for every coordinate of `dims`, where
/// offsets[j] = sum_d coord[d] * strides[j][d]. Chunks run in parallel, so
/// f must only write to locations owned by its flat index.
template <int N, typename F>
void stridedLoop(const std::vector<int64_t> &dims,
                 const std::vector<int64_t> (&strides)[N], F &&f) {
  int rank = static_cast<int>(dims.size());
  int64_t total = 1;
  for (int64_t d : dims)
    total *= d;
  const int64_t chunk = 8192;
  int64_t chunks = (total + chunk - 1) / chunk;
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (int64_t c = 0; c < chunks; ++c) {
    int64_t begin = c * chunk, end = begin + chunk < total ? begin + chunk
                                                           : total;
    int64_t idx[DISTRT_MAX_RANK] = {};
    int64_t off[N] = {};
    int64_t rem = begin;
    for (int d = rank - 1; d >= 0; --d) {
      idx[d] = rem % dims[d];
      rem /= dims[d];
    }
    for (int j = 0; j < N; ++j)
      for (int d = 0; d < rank; ++d)
        off[j] += idx[d] * strides[j][d];
    for (int64_t i = begin; i < end; ++i) {
      f(i, off);
      for (int d = rank - 1; d >= 0; --d) {
        ++idx[d];
        for (int j = 0; j < N; ++j)
          off[j] += strides[j][d];
        if (idx[d] < dims[d])
          break;
        for (int j = 0; j < N; ++j)
          off[j] -= strides[j][d] * dims[d];
        idx[d] = 0;
      }
    }
  }
}

/// Parallel for over [0, n).
template <typename F> void parallelFor(int64_t n, F &&f) {
#pragma omp parallel for schedule(static) if (n > 4096)
  for (int64_t i = 0; i < n; ++i)
    f(i);
}

} // namespace cpu
} // namespace distrt

#endif // DISTRT_LIB_CPU_LOOPS_H
