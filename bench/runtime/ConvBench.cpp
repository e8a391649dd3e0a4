//===- ConvBench.cpp - ResNet-18's convolutions and their chain -*- C++ -*-===//
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
// BM_ResNetChain runs the whole network from the image to the pooled
// features (the stem, max pooling, the 16 3x3 and 3 1x1 convolutions with
// their residual sums, global average pooling), each chain with the
// reorders at its edges counted:
//
//   chain 0: channels-last, as the generated program runs it (the image
//            reordered to nhwc, max pooling on the runtime's loop);
//   chain 1: the blocked layout oneDNN's jit kernels use on this CPU
//            (nChw8c, nChw16c with AVX-512) through the chain: the stem
//            reads the image as it is (nchw, oneDNN's kernel for few input
//            channels) and writes it, the pooled features are reordered
//            out of it;
//   chain 2: blocked up to the 128-channel layers (where the per-shape
//            ways above gain), reordered to channels-last before the
//            256-channel ones.
//
// CPU time of the process (docs/benchmarks.md): run with OMP_NUM_THREADS=1.
//
//===----------------------------------------------------------------------===//
#include "BenchUtil.h"
#include "distrt/distrt.h"

#include <benchmark/benchmark.h>
#include <dnnl.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <unordered_map>
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

/// One ResNet-18 forward from the image to the pooled features, every
/// activation in `act` (nhwc or a blocked tag) between the edge reorders.
class ResNetChain {
public:
  using memory = dnnl::memory;
  using tag = memory::format_tag;

  /// With `plainFrom` > 0 the chain turns channels-last before the first
  /// layer of that many output channels (a blocked prefix only).
  ResNetChain(tag layout, int64_t plainFrom = 0) : act(layout), stream(eng) {
    int64_t h = 128;
    memory::desc image({kBatch, 3, h, h}, memory::data_type::f32, tag::nchw);
    x0 = memory(image, eng);
    fill(x0, 7);
    // oneDNN's blocked kernels read a 3-channel image as it is (nchw);
    // channels-last reads it reordered, as the program does.
    memory cur = act == tag::nhwc ? reorder(x0, desc({kBatch, 3, h, h})) : x0;
    cur = conv(cur, 64, 7, 2, 3, {}); // the stem, bn folded, relu
    cur = maxPool(cur);
    int64_t c = 64;
    for (int64_t stage = 0; stage < 4; ++stage) {
      int64_t o = 64 << stage;
      if (o == plainFrom && act != tag::nhwc) {
        act = tag::nhwc;
        cur = reorder(cur, desc(cur.get_desc().dims()));
      }
      for (int64_t block = 0; block < 2; ++block) {
        int64_t s = (stage > 0 && block == 0) ? 2 : 1;
        memory skip = cur;
        if (s != 1 || c != o)
          skip = conv(cur, o, 1, s, 0, {}, /*relu=*/false);
        memory mid = conv(cur, o, 3, s, 1, {});
        cur = conv(mid, o, 3, 1, 1, skip);
        c = o;
      }
    }
    cur = avgPool(cur);
    memory::dims d = cur.get_desc().dims();
    out = reorder(cur, memory::desc(d, memory::data_type::f32, tag::nchw));
  }

  void run() {
    for (Step &s : steps) {
      if (s.pool) {
        if (distrt_pool2d(ctx, &s.x, &s.y, &s.poolAttr) != DISTRT_OK)
          throw std::runtime_error(distrt_last_error(ctx));
      } else {
        s.prim.execute(stream, s.args);
      }
    }
    stream.wait();
  }

  /// The pooled features of the last run, [N, 512].
  const float *features() const { return (const float *)out.get_data_handle(); }
  size_t featureCount() const { return out.get_desc().get_size() / 4; }

  ResNetChain(const ResNetChain &) = delete;
  ResNetChain &operator=(const ResNetChain &) = delete;
  ~ResNetChain() { distrt_context_destroy(ctx); }

private:
  struct Step {
    dnnl::primitive prim;
    std::unordered_map<int, memory> args;
    bool pool = false; // the runtime's channels-last max pooling
    distrt_tensor x{}, y{};
    distrt_pool2d_attr poolAttr{};
  };

  tag act;
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream;
  distrt_context *ctx = nullptr;
  memory x0, out;
  std::vector<Step> steps;
  unsigned seed = 10;

  memory::desc desc(const memory::dims &d) {
    return memory::desc(d, memory::data_type::f32, act);
  }

  /// Uniform in [-scale, scale) (weights scaled by their fan-in, so the
  /// activations keep their magnitude through the 20 layers).
  void fill(memory &m, unsigned s, float scale = 1.0f) {
    std::vector<float> v = randomVector(m.get_desc().get_size() / 4, s);
    float *p = (float *)m.get_data_handle();
    for (size_t i = 0; i < v.size(); ++i)
      p[i] = v[i] * scale;
  }

  memory reorder(memory &from, const memory::desc &to) {
    memory m(to, eng);
    dnnl::reorder r(from, m);
    steps.push_back({r, {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, m}}});
    return m;
  }

  /// A convolution with bias; relu, after the sum into `skip`'s memory
  /// when given (written in place there, as the program's sum post-op).
  memory conv(memory &x, int64_t o, int64_t k, int64_t s, int64_t pad,
              memory skip, bool relu = true) {
    memory::dims xd = x.get_desc().dims();
    int64_t oh = (xd[2] + 2 * pad - k) / s + 1;
    memory::desc wei({o, xd[1], k, k}, memory::data_type::f32, tag::any),
        bias({o}, memory::data_type::f32, tag::x),
        dst = desc({xd[0], o, oh, oh});
    dnnl::convolution_forward::desc cd(
        dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
        x.get_desc(), wei, bias, dst, {s, s}, {pad, pad}, {pad, pad});
    dnnl::post_ops ops;
    if (skip)
      ops.append_sum(1.0f);
    if (relu)
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    dnnl::primitive_attr attr;
    attr.set_post_ops(ops);
    dnnl::convolution_forward::primitive_desc pd(cd, attr, eng);
    // The same weights in every chain: filled as oihw, reordered into the
    // layout the kernel picks.
    memory plain({{o, xd[1], k, k}, memory::data_type::f32, tag::oihw}, eng),
        w(pd.weights_desc(), eng), b(bias, eng);
    fill(plain, seed++, 1.0f / std::sqrt((float)(xd[1] * k * k)));
    fill(b, seed++, 0.1f);
    dnnl::reorder(plain, w).execute(stream, plain, w);
    stream.wait();
    memory y = skip ? skip : memory(pd.dst_desc(), eng);
    steps.push_back({dnnl::convolution_forward(pd),
                     {{DNNL_ARG_SRC, x},
                      {DNNL_ARG_WEIGHTS, w},
                      {DNNL_ARG_BIAS, b},
                      {DNNL_ARG_DST, y}}});
    return y;
  }

  memory pool(memory &x, dnnl::algorithm alg, int64_t k, int64_t s,
              int64_t pad) {
    memory::dims xd = x.get_desc().dims();
    int64_t oh = (xd[2] + 2 * pad - k) / s + 1;
    memory y(desc({xd[0], xd[1], oh, oh}), eng);
    dnnl::pooling_forward::desc pd(dnnl::prop_kind::forward_inference, alg,
                                   x.get_desc(), y.get_desc(), {s, s}, {k, k},
                                   {pad, pad}, {pad, pad});
    steps.push_back({dnnl::pooling_forward({pd, eng}),
                     {{DNNL_ARG_SRC, x}, {DNNL_ARG_DST, y}}});
    return y;
  }

  memory maxPool(memory &x) {
    if (act != tag::nhwc)
      return pool(x, dnnl::algorithm::pooling_max, 3, 2, 1);
    // Channels-last: the runtime's own loop, as the program calls it.
    if (!ctx && distrt_context_create(DISTRT_BACKEND_CPU, 0, &ctx) != DISTRT_OK)
      throw std::runtime_error(distrt_last_error(nullptr));
    memory::dims xd = x.get_desc().dims(),
                 yd = {xd[0], xd[1], (xd[2] - 1) / 2 + 1, (xd[3] - 1) / 2 + 1};
    memory y(desc(yd), eng);
    Step st;
    st.pool = true;
    int64_t xs[] = {xd[1] * xd[2] * xd[3], 1, xd[3] * xd[1], xd[1]},
            ys[] = {yd[1] * yd[2] * yd[3], 1, yd[3] * yd[1], yd[1]};
    st.x = distrt_make_strided_tensor(x.get_data_handle(), DISTRT_F32, 4,
                                      xd.data(), xs);
    st.y = distrt_make_strided_tensor(y.get_data_handle(), DISTRT_F32, 4,
                                      yd.data(), ys);
    // 3x3, stride 2, padding 1: (h + 2 - 3) / 2 + 1 rows out.
    st.poolAttr = {DISTRT_POOL_MAX, {3, 3}, {2, 2}, {1, 1}, {1, 1}};
    steps.push_back(st);
    return y;
  }

  memory avgPool(memory &x) {
    memory::dims xd = x.get_desc().dims();
    return pool(x, dnnl::algorithm::pooling_avg_exclude_padding, xd[2], 1, 0);
  }
};

/// The blocked layout oneDNN's direct kernels use on this CPU.
dnnl::memory::format_tag blockedTag() {
  return dnnl::get_effective_cpu_isa() >= dnnl::cpu_isa::avx512_core
             ? dnnl::memory::format_tag::nChw16c
             : dnnl::memory::format_tag::nChw8c;
}

void BM_ResNetChain(benchmark::State &state) {
  ResNetChain chain(state.range(0) ? blockedTag()
                                   : dnnl::memory::format_tag::nhwc,
                    state.range(0) == 2 ? 256 : 0);
  for (auto _ : state)
    chain.run();
  // The chains compute the same network: label the blocked ones with their
  // distance from the channels-last one's features.
  if (state.range(0) != 0) {
    ResNetChain reference(dnnl::memory::format_tag::nhwc);
    reference.run();
    float diff = 0, largest = 0;
    for (size_t i = 0; i < chain.featureCount(); ++i) {
      diff = std::max(diff,
                      std::abs(chain.features()[i] - reference.features()[i]));
      largest = std::max(largest, std::abs(reference.features()[i]));
    }
    char label[96];
    std::snprintf(label, sizeof(label),
                  "max abs diff from chain 0: %.1e (features up to %.2f)", diff,
                  largest);
    state.SetLabel(label);
  }
}

BENCHMARK(BM_ResNetChain)
    ->ArgName("chain")
    ->Arg(0)
    ->Arg(1)
    ->Arg(2)
    ->MeasureProcessCPUTime()
    ->Unit(benchmark::kMillisecond);

} // namespace

BENCHMARK_MAIN();
