//===- BenchUtil.h - Helpers of the runtime benchmarks ---------*- C++ -*-===//
//
// Seeded random operands shared by the Google Benchmark programs here.
//
//===----------------------------------------------------------------------===//
#ifndef DISTRT_BENCH_BENCHUTIL_H
#define DISTRT_BENCH_BENCHUTIL_H

#include <random>
#include <vector>

namespace distrt_bench {

/// `n` values uniform in [-1, 1), the same for the same seed.
inline std::vector<float> randomVector(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(gen);
  return v;
}

} // namespace distrt_bench

#endif // DISTRT_BENCH_BENCHUTIL_H
