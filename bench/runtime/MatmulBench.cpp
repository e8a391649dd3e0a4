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
// BM_JitGemmPaddedRows runs the step's products as its program calls them,
// with each operand's rows dense or padded by one 64-byte line (whether
// training weights want the padded copy that constant weights get).
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
/// oneDNN's first). The stored rows of A and B (as laid out in memory) are
/// `padA` and `padB` floats longer than their width.
void runImpl(benchmark::State &state, const std::string &impl, int64_t padA = 0,
             int64_t padB = 0) {
  using dnnl::memory;
  int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  bool ta = state.range(3), tb = state.range(4);
  // Stored A is [m, k] (or [k, m] when ta); its rows are ldA apart.
  int64_t ldA = (ta ? m : k) + padA, ldB = (tb ? k : n) + padB;
  std::vector<float> a = randomVector((ta ? k : m) * ldA, 1),
                     b = randomVector((tb ? n : k) * ldB, 2), c(m * n);
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  memory::desc aMd({m, k}, memory::data_type::f32,
                   ta ? memory::dims{1, ldA} : memory::dims{ldA, 1});
  memory::desc bMd({k, n}, memory::data_type::f32,
                   tb ? memory::dims{1, ldB} : memory::dims{ldB, 1});
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
  state.SetLabel(std::string(pd.impl_info_str()) +
                 (padA || padB ? std::string(" padded") + (padA ? " a" : "") +
                                     (padB ? " b" : "")
                               : ""));
  dnnl::matmul prim(pd);
  memory am(aMd, eng, a.data()), bm(bMd, eng, b.data()), cm(cMd, eng, c.data());
  for (auto _ : state) {
    prim.execute(
        strm, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
    strm.wait();
  }
  setCounters(state, m, n, k);
}

/// Args: m, n, k, ta, tb, pad. oneDNN's JIT GEMM on the training step's
/// products with their operands' rows dense (pad 0) or padded by one
/// 64-byte line (16 floats; runtime/lib/Matmul.cpp, staggeredWeights):
/// A's (pad 1), B's (pad 2) or both (pad 3).
void BM_JitGemmPaddedRows(benchmark::State &state) {
  int64_t which = state.range(5), line = 16;
  runImpl(state, "gemm:jit", which & 1 ? line : 0, which & 2 ? line : 0);
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

/// The training step's products as its program calls them (forward
/// X W, dX = dY W^T, dW = X^T dY; the LM head's too), every way of padding.
void trainingCalls(benchmark::internal::Benchmark *b) {
  for (auto [m, n, k, ta, tb] : {std::array<int64_t, 5>{512, 3072, 768, 0, 0},
                                 {512, 768, 3072, 0, 1},
                                 {768, 3072, 512, 1, 0},
                                 {512, 768, 3072, 0, 0},
                                 {512, 3072, 768, 0, 1},
                                 {3072, 768, 512, 1, 0},
                                 {512, 2304, 768, 0, 0},
                                 {512, 768, 2304, 0, 1},
                                 {768, 2304, 512, 1, 0},
                                 {512, 768, 768, 0, 0},
                                 {512, 768, 768, 0, 1},
                                 {768, 768, 512, 1, 0},
                                 {512, 8192, 768, 0, 0},
                                 {512, 768, 8192, 0, 1},
                                 {768, 8192, 512, 1, 0}})
    for (int64_t which : {0, 1, 2, 3})
      b->Args({m, n, k, ta, tb, which});
  b->ArgNames({"m", "n", "k", "ta", "tb", "pad"});
}

} // namespace

BENCHMARK(BM_JitGemmPaddedRows)
    ->Apply(trainingCalls)
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime();
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
