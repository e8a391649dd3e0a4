//===- ConvBench.cpp - ResNet-18's convolutions, three ways ----*- C++ -*-===//
//
// The 3x3 and 1x1 convolutions of ResNet-18 at 128x128, batch 2 (the
// shapes of bench/codegen/bench_ort.py's model), bias and relu fused, each
// run three ways:
//
//   way 0: oneDNN on channels-last activations (nhwc), weights in the
//          layout it picks (the activations' layout that
//          passes/Emission/Layouts.cpp chooses on the CPU);
//   way 1: oneDNN on the blocked layout it picks for the activations too
//          (nChw8c on AVX2, nChw16c on AVX-512), reorders not counted: the
//          most a blocked layout through the chain could save;
//   way 2: distrt_conv2d_ex on channels-last data with constant weights:
//          way 0 plus the runtime's call (checks, replay lookup).
//
// CPU time of the process (docs/benchmarks.md): run with OMP_NUM_THREADS=1.
//
//===----------------------------------------------------------------------===//
#include "BenchUtil.h"
#include "distrt/distrt.h"

#include <benchmark/benchmark.h>
#include <dnnl.hpp>

#include <vector>

namespace {

struct Shape {
  int64_t c, o, h, k, stride;
};

// ResNet-18's distinct shapes after the stem (which reads the 3-channel
// image, NCHW).
const Shape kShapes[] = {{64, 64, 32, 3, 1},   {64, 128, 32, 3, 2},
                         {128, 128, 16, 3, 1}, {64, 128, 32, 1, 2},
                         {128, 256, 16, 3, 2}, {256, 256, 8, 3, 1},
                         {128, 256, 16, 1, 2}, {256, 512, 8, 3, 2},
                         {512, 512, 4, 3, 1},  {256, 512, 8, 1, 2}};
constexpr int64_t kBatch = 2;

using distrt_bench::randomVector;

int64_t outSize(const Shape &s) {
  int64_t pad = s.k / 2;
  return (s.h + 2 * pad - s.k) / s.stride + 1;
}

void setCounters(benchmark::State &state, const Shape &s) {
  int64_t oh = outSize(s);
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * kBatch * oh * oh * s.o * s.c * s.k * s.k,
                         benchmark::Counter::kIsIterationInvariantRate,
                         benchmark::Counter::kIs1000);
}

void runOneDnn(benchmark::State &state, const Shape &s, bool blocked) {
  using dnnl::memory;
  using tag = memory::format_tag;
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(eng);
  int64_t oh = outSize(s), pad = s.k / 2;
  tag act = blocked ? tag::any : tag::nhwc;
  memory::desc src({kBatch, s.c, s.h, s.h}, memory::data_type::f32, act),
      wei({s.o, s.c, s.k, s.k}, memory::data_type::f32, tag::any),
      bias({s.o}, memory::data_type::f32, tag::x),
      dst({kBatch, s.o, oh, oh}, memory::data_type::f32, act);
  dnnl::convolution_forward::desc desc(
      dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
      src, wei, bias, dst, {s.stride, s.stride}, {pad, pad}, {pad, pad});
  dnnl::post_ops ops;
  ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
  dnnl::primitive_attr attr;
  attr.set_post_ops(ops);
  dnnl::convolution_forward::primitive_desc pd(desc, attr, eng);
  std::vector<float> x = randomVector(pd.src_desc().get_size() / 4, 1),
                     w = randomVector(pd.weights_desc().get_size() / 4, 2),
                     b = randomVector(s.o, 3), y(pd.dst_desc().get_size() / 4);
  dnnl::convolution_forward conv(pd);
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, memory(pd.src_desc(), eng, x.data())},
      {DNNL_ARG_WEIGHTS, memory(pd.weights_desc(), eng, w.data())},
      {DNNL_ARG_BIAS, memory(bias, eng, b.data())},
      {DNNL_ARG_DST, memory(pd.dst_desc(), eng, y.data())}};
  for (auto _ : state) {
    conv.execute(stream, args);
    stream.wait();
  }
  state.SetLabel(pd.impl_info_str());
  setCounters(state, s);
}

void runRuntime(benchmark::State &state, const Shape &s) {
  int64_t oh = outSize(s);
  int32_t pad = (int32_t)(s.k / 2), st = (int32_t)s.stride;
  std::vector<float> x = randomVector(kBatch * s.c * s.h * s.h, 1),
                     w = randomVector(s.o * s.c * s.k * s.k, 2),
                     b = randomVector(s.o, 3), y(kBatch * s.o * oh * oh);
  int64_t xd[] = {kBatch, s.c, s.h, s.h},
          xs[] = {s.h * s.h * s.c, 1, s.h * s.c, s.c},
          wd[] = {s.o, s.c, s.k, s.k}, bd[] = {s.o},
          yd[] = {kBatch, s.o, oh, oh},
          ys[] = {oh * oh * s.o, 1, oh * s.o, s.o};
  distrt_tensor tx =
      distrt_make_strided_tensor(x.data(), DISTRT_F32, 4, xd, xs);
  distrt_tensor tw = distrt_make_tensor(w.data(), DISTRT_F32, 4, wd);
  distrt_tensor tb = distrt_make_tensor(b.data(), DISTRT_F32, 1, bd);
  distrt_tensor ty =
      distrt_make_strided_tensor(y.data(), DISTRT_F32, 4, yd, ys);
  distrt_conv2d_attr attr = {{st, st}, {pad, pad}, {pad, pad}, {1, 1}, 1};
  distrt_compute_ex ex = {};
  ex.count = 1;
  ex.post[0].kind = DISTRT_POST_ELTWISE;
  ex.post[0].alg = DISTRT_ELTWISE_RELU;
  ex.constant_weights = 1;
  distrt_context *ctx = nullptr;
  if (distrt_context_create(DISTRT_BACKEND_CPU, 0, &ctx) != DISTRT_OK) {
    state.SkipWithError(distrt_last_error(nullptr));
    return;
  }
  for (auto _ : state)
    if (distrt_conv2d_ex(ctx, &tx, &tw, &tb, &ty, &attr, &ex) != DISTRT_OK) {
      state.SkipWithError(distrt_last_error(ctx));
      break;
    }
  distrt_context_destroy(ctx);
  setCounters(state, s);
}

void BM_ResNetConv(benchmark::State &state) {
  const Shape &s = kShapes[state.range(0)];
  switch (state.range(1)) {
  case 0:
    return runOneDnn(state, s, false);
  case 1:
    return runOneDnn(state, s, true);
  default:
    return runRuntime(state, s);
  }
}

void shapeArgs(benchmark::internal::Benchmark *b) {
  b->ArgNames({"shape", "way"});
  for (int64_t i = 0; i < (int64_t)(sizeof(kShapes) / sizeof(kShapes[0])); ++i)
    for (int64_t way = 0; way < 3; ++way)
      b->Args({i, way});
}

BENCHMARK(BM_ResNetConv)
    ->Apply(shapeArgs)
    ->MeasureProcessCPUTime()
    ->Unit(benchmark::kMillisecond);

} // namespace

BENCHMARK_MAIN();
