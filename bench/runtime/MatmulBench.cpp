//===- MatmulBench.cpp - Runtime matmul vs oneDNN directly -----*- C++ -*-===//
//
// Both sides run the same plain-layout f32 oneDNN matmul primitive; the
// runtime adds argument checking, the primitive-cache lookup and the ABI
// call. Target: the runtime at >= 80% of oneDNN's throughput.
//
//===----------------------------------------------------------------------===//
#include "distrt/distrt.h"

#include <benchmark/benchmark.h>
#include <dnnl.hpp>

#include <random>
#include <vector>

namespace {

std::vector<float> randomVector(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(gen);
  return v;
}

void setCounters(benchmark::State &state, int64_t m, int64_t n, int64_t k) {
  state.counters["GFLOP/s"] = benchmark::Counter(
      2.0 * m * n * k, benchmark::Counter::kIsIterationInvariantRate,
      benchmark::Counter::kIs1000);
}

void BM_RuntimeMatmul(benchmark::State &state) {
  int64_t m = state.range(0), n = state.range(0), k = state.range(0);
  std::vector<float> a = randomVector(m * k, 1), b = randomVector(k * n, 2),
                     c(m * n);
  int64_t ad[] = {m, k}, bd[] = {k, n}, cd[] = {m, n};
  distrt_tensor ta = distrt_make_tensor(a.data(), DISTRT_F32, 2, ad);
  distrt_tensor tb = distrt_make_tensor(b.data(), DISTRT_F32, 2, bd);
  distrt_tensor tc = distrt_make_tensor(c.data(), DISTRT_F32, 2, cd);
  distrt_context *ctx = nullptr;
  if (distrt_context_create(DISTRT_BACKEND_CPU, 0, &ctx) != DISTRT_OK) {
    state.SkipWithError(distrt_last_error(nullptr));
    return;
  }
  distrt_matmul_attr attr{0, 0, 1.0f, 0.0f};
  for (auto _ : state)
    if (distrt_matmul(ctx, &ta, &tb, nullptr, &tc, &attr) != DISTRT_OK) {
      state.SkipWithError(distrt_last_error(ctx));
      break;
    }
  setCounters(state, m, n, k);
  distrt_context_destroy(ctx);
}

void BM_OneDnnMatmul(benchmark::State &state) {
  using dnnl::memory;
  int64_t m = state.range(0), n = state.range(0), k = state.range(0);
  std::vector<float> a = randomVector(m * k, 1), b = randomVector(k * n, 2),
                     c(m * n);
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  memory::desc aMd({m, k}, memory::data_type::f32, memory::format_tag::ab);
  memory::desc bMd({k, n}, memory::data_type::f32, memory::format_tag::ab);
  memory::desc cMd({m, n}, memory::data_type::f32, memory::format_tag::ab);
  dnnl::matmul prim(dnnl::matmul::primitive_desc(
      dnnl::matmul::desc(aMd, bMd, cMd), eng));
  memory am(aMd, eng, a.data()), bm(bMd, eng, b.data()),
      cm(cMd, eng, c.data());
  for (auto _ : state) {
    prim.execute(strm, {{DNNL_ARG_SRC, am},
                        {DNNL_ARG_WEIGHTS, bm},
                        {DNNL_ARG_DST, cm}});
    strm.wait();
  }
  setCounters(state, m, n, k);
}

} // namespace

BENCHMARK(BM_OneDnnMatmul)->Arg(512)->Arg(1024)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_RuntimeMatmul)->Arg(512)->Arg(1024)->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_MAIN();
