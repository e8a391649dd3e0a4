//===- FusedBench.cpp - Fused elementwise chain vs op by op ----*- C++ -*-===//
//
// y = act(x * s + b) with a per-column scale and bias, over a large tensor
// (act = relu: memory-bound; act = gelu: compute-bound):
// three ABI calls (two oneDNN binaries and one oneDNN eltwise, each a full
// pass over memory) against one distrt_fused_elementwise pass.
//
//===----------------------------------------------------------------------===//
#include "distrt/distrt.h"

#include <benchmark/benchmark.h>

#include <vector>

namespace {

struct Setup {
  int64_t rows, cols;
  std::vector<float> x, s, b, t, y;
  distrt_tensor tx, ts, tb, tt, ty;
  distrt_context *ctx = nullptr;
  explicit Setup(int64_t r, int64_t c)
      : rows(r), cols(c), x(r * c, 0.5f), s(c, 1.5f), b(c, -0.25f),
        t(r * c), y(r * c) {
    int64_t d2[] = {rows, cols}, d1[] = {cols};
    tx = distrt_make_tensor(x.data(), DISTRT_F32, 2, d2);
    tt = distrt_make_tensor(t.data(), DISTRT_F32, 2, d2);
    ty = distrt_make_tensor(y.data(), DISTRT_F32, 2, d2);
    ts = distrt_make_tensor(s.data(), DISTRT_F32, 1, d1);
    tb = distrt_make_tensor(b.data(), DISTRT_F32, 1, d1);
    distrt_context_create(DISTRT_BACKEND_CPU, 0, &ctx);
  }
  ~Setup() { distrt_context_destroy(ctx); }
};

void setBytes(benchmark::State &state, const Setup &s) {
  // Compulsory traffic: read x, write y.
  state.SetBytesProcessed(int64_t(state.iterations()) * s.rows * s.cols * 8);
}

void BM_OpByOp(benchmark::State &state) {
  Setup s(state.range(0), 1024);
  for (auto _ : state) {
    distrt_binary(s.ctx, DISTRT_BINARY_MUL, &s.tx, &s.ts, &s.tt);
    distrt_binary(s.ctx, DISTRT_BINARY_ADD, &s.tt, &s.tb, &s.tt);
    if (distrt_unary(s.ctx, distrt_unary_op(state.range(1)), &s.tt, &s.ty) !=
        DISTRT_OK) {
      state.SkipWithError(distrt_last_error(s.ctx));
      break;
    }
  }
  setBytes(state, s);
}

void BM_Fused(benchmark::State &state) {
  Setup s(state.range(0), 1024);
  distrt_fused_instr prog[] = {
      {DISTRT_FUSED_FMA, 0, 3, 0, 1, 2, 0.0f},
      {DISTRT_FUSED_UNARY, uint8_t(state.range(1)), 4, 3, 0, 0, 0.0f}};
  const distrt_tensor *ins[] = {&s.tx, &s.ts, &s.tb};
  const distrt_tensor *outs[] = {&s.ty};
  uint8_t regs[] = {4};
  distrt_fused_program p{2, prog, 3, ins, 1, outs, regs};
  for (auto _ : state)
    if (distrt_fused_elementwise(s.ctx, &p) != DISTRT_OK) {
      state.SkipWithError(distrt_last_error(s.ctx));
      break;
    }
  setBytes(state, s);
}

} // namespace

BENCHMARK(BM_OpByOp)
    ->Args({4096, DISTRT_UNARY_RELU})
    ->Args({4096, DISTRT_UNARY_GELU})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_Fused)
    ->Args({4096, DISTRT_UNARY_RELU})
    ->Args({4096, DISTRT_UNARY_GELU})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

BENCHMARK_MAIN();
