//===- MatmulBench.cpp - Runtime matmul vs oneDNN directly -----*- C++ -*-===//
//
// Both sides run the same plain-layout f32 oneDNN matmul primitive; the
// runtime adds argument checking, the primitive-cache lookup and the ABI
// call. Target: the runtime at >= 80% of oneDNN's throughput.
//
// BM_Impl* runs the products of the GPT training step (bench_train.py:
// 512 tokens, hidden 768, MLP 3072, QKV 2304, vocabulary 8192) with either
// operand transposed, three ways: oneDNN's first-ranked implementation
// (brgemm on AVX-512), its JIT GEMM, and the runtime (which chooses between
// them; runtime/lib/Matmul.cpp, matmulDesc).
//
//===----------------------------------------------------------------------===//
#include "BenchUtil.h"
#include "distrt/distrt.h"

#include <benchmark/benchmark.h>
#include <dnnl.hpp>

#include <array>
#include <string>
#include <vector>

namespace {

using distrt_bench::randomVector;

void setCounters(benchmark::State &state, int64_t m, int64_t n, int64_t k) {
  state.counters["GFLOP/s"] = benchmark::Counter(
      2.0 * m * n * k, benchmark::Counter::kIsIterationInvariantRate,
      benchmark::Counter::kIs1000);
}

/// op(A) [m, k] by op(B) [k, n] through distrt_matmul.
void runRuntime(benchmark::State &state, int64_t m, int64_t n, int64_t k,
                int ta, int tb) {
  std::vector<float> a = randomVector(m * k, 1), b = randomVector(k * n, 2),
                     c(m * n);
  int64_t ad[] = {ta ? k : m, ta ? m : k}, bd[] = {tb ? n : k, tb ? k : n},
          cd[] = {m, n};
  distrt_tensor tA = distrt_make_tensor(a.data(), DISTRT_F32, 2, ad);
  distrt_tensor tB = distrt_make_tensor(b.data(), DISTRT_F32, 2, bd);
  distrt_tensor tC = distrt_make_tensor(c.data(), DISTRT_F32, 2, cd);
  distrt_context *ctx = nullptr;
  if (distrt_context_create(DISTRT_BACKEND_CPU, 0, &ctx) != DISTRT_OK) {
    state.SkipWithError(distrt_last_error(nullptr));
    return;
  }
  distrt_matmul_attr attr{ta, tb, 1.0f, 0.0f};
  for (auto _ : state)
    if (distrt_matmul(ctx, &tA, &tB, nullptr, &tC, &attr) != DISTRT_OK) {
      state.SkipWithError(distrt_last_error(ctx));
      break;
    }
  setCounters(state, m, n, k);
  distrt_context_destroy(ctx);
}

void BM_RuntimeMatmul(benchmark::State &state) {
  runRuntime(state, state.range(0), state.range(0), state.range(0), 0, 0);
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

/// Args: m, n, k, ta, tb. One oneDNN matmul of op(A) [m, k] by op(B)
/// [k, n], by the implementation whose name starts with `impl` (empty:
/// oneDNN's first).
void runImpl(benchmark::State &state, const std::string &impl) {
  using dnnl::memory;
  int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  bool ta = state.range(3), tb = state.range(4);
  std::vector<float> a = randomVector(m * k, 1), b = randomVector(k * n, 2),
                     c(m * n);
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  memory::desc aMd({m, k}, memory::data_type::f32,
                   ta ? memory::dims{1, m} : memory::dims{k, 1});
  memory::desc bMd({k, n}, memory::data_type::f32,
                   tb ? memory::dims{1, k} : memory::dims{n, 1});
  memory::desc cMd({m, n}, memory::data_type::f32, memory::format_tag::ab);
  // The iterator over implementations reads the op descriptor: it must
  // outlive next_impl().
  dnnl::matmul::desc d(aMd, bMd, cMd);
  dnnl::matmul::primitive_desc pd(d, eng);
  while (std::string(pd.impl_info_str()).rfind(impl, 0) != 0)
    if (!pd.next_impl()) {
      state.SkipWithError(("oneDNN offers no " + impl).c_str());
      return;
    }
  state.SetLabel(pd.impl_info_str());
  dnnl::matmul prim(pd);
  memory am(aMd, eng, a.data()), bm(bMd, eng, b.data()), cm(cMd, eng, c.data());
  for (auto _ : state) {
    prim.execute(
        strm, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
    strm.wait();
  }
  setCounters(state, m, n, k);
}

void BM_ImplFirst(benchmark::State &state) { runImpl(state, ""); }
void BM_ImplJitGemm(benchmark::State &state) { runImpl(state, "gemm:jit"); }

void BM_ImplRuntime(benchmark::State &state) {
  runRuntime(state, state.range(0), state.range(1), state.range(2),
             (int)state.range(3), (int)state.range(4));
}

/// The GPT step's products, each with both operands' layouts.
void stepShapes(benchmark::internal::Benchmark *b) {
  for (auto [m, n, k] : {std::array<int64_t, 3>{512, 3072, 768},
                         {512, 768, 3072},
                         {768, 3072, 512},
                         {512, 2304, 768},
                         {512, 768, 768},
                         {512, 8192, 768},
                         {128, 128, 64}})
    for (int64_t ta : {0, 1})
      for (int64_t tb : {0, 1})
        b->Args({m, n, k, ta, tb});
  b->ArgNames({"m", "n", "k", "ta", "tb"});
}

} // namespace

BENCHMARK(BM_ImplFirst)
    ->Apply(stepShapes)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_ImplJitGemm)
    ->Apply(stepShapes)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_ImplRuntime)
    ->Apply(stepShapes)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_OneDnnMatmul)->Arg(512)->Arg(1024)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_RuntimeMatmul)->Arg(512)->Arg(1024)->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_MAIN();
