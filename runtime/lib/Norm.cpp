//===- Norm.cpp - Batch, layer and RMS normalization -----------*- C++ -*-===//
//
// Batch norm and layer norm run on oneDNN (forward, and the input gradient);
// their weight gradients are two reductions, done with plain loops so they
// can run apart from the input gradient (zero-bubble schedules). RMS norm,
// which oneDNN 2.x lacks, is plain loops throughout.
//
//===----------------------------------------------------------------------===//
#include "Internal.h"
#include "cpu/CpuState.h"
#include "cpu/Loops.h"
#ifdef DISTRT_HAVE_CUDA
#include "cuda/CudaApi.h"
#endif

#include <cmath>

using namespace distrt;
using dnnl::memory;
using dnnl::normalization_flags;
using dnnl::prop_kind;

namespace {

/// Checks x [N, C, ...] and that every per-channel tensor is [C].
distrt_status checkBatchNorm(Checker &c, const distrt_tensor *x,
                             std::initializer_list<std::pair<const char *,
                                                   const distrt_tensor *>>
                                 perChannel) {
  DISTRT_TRY(c.tensor("x", x, DISTRT_F32));
  if (x->rank < 2 || x->rank > 5)
    return c.fail(DISTRT_ERROR_SHAPE_MISMATCH, "'x' has shape ",
                  shapeString(*x), "; batch norm takes [N, C, spatial...] of "
                                   "rank 2 to 5");
  for (auto &pc : perChannel) {
    if (!pc.second)
      continue;
    DISTRT_TRY(c.tensor(pc.first, pc.second, DISTRT_F32));
    DISTRT_TRY(c.shape(pc.first, pc.second, {x->dims[1]}));
  }
  return DISTRT_OK;
}

/// Per-channel (C) reduction geometry of [N, C, S].
struct ChannelGeom {
  int64_t n, c, s;
};
ChannelGeom channelGeom(const distrt_tensor *x) {
  int64_t s = 1;
  for (int i = 2; i < x->rank; ++i)
    s *= x->dims[i];
  return {x->dims[0], x->dims[1], s};
}

memory::desc statDesc(int64_t c) { return cpu::plainDesc({c}); }

dnnl::batch_normalization_forward::primitive_desc
bnForwardPd(cpu::CpuState &st, const memory::desc &md, float eps,
            prop_kind pk, normalization_flags flags) {
  dnnl::batch_normalization_forward::desc d(pk, md, eps, flags);
  return dnnl::batch_normalization_forward::primitive_desc(d, st.engine);
}

#ifdef DISTRT_HAVE_CUDA
cuda::BatchNormArgs bnArgs(const distrt_tensor *x, const distrt_tensor *scale,
                           const distrt_tensor *shift, const distrt_tensor *y,
                           const distrt_tensor *mean, const distrt_tensor *var,
                           float eps, bool training) {
  ChannelGeom g = channelGeom(x);
  auto p = [](const distrt_tensor *t) { return t ? cpu::f32(t) : nullptr; };
  cuda::BatchNormArgs a{};
  a.n = g.n;
  a.c = g.c;
  a.s = g.s;
  a.x = cpu::f32(x);
  a.scale = p(scale);
  a.shift = p(shift);
  a.y = p(y);
  a.mean = p(mean);
  a.var = p(var);
  a.eps = eps;
  a.training = training;
  return a;
}
#endif

const normalization_flags kScaleShift =
    normalization_flags::use_scale | normalization_flags::use_shift;

} // namespace

extern "C" distrt_status distrt_batchnorm_fwd_training(
    distrt_context *ctx, const distrt_tensor *x, const distrt_tensor *scale,
    const distrt_tensor *shift, const distrt_tensor *y,
    const distrt_tensor *save_mean, const distrt_tensor *save_var,
    const distrt_tensor *running_mean, const distrt_tensor *running_var,
    float epsilon, float momentum) {
  const char *fn = "distrt_batchnorm_fwd_training";
  Checker c(ctx, fn);
  DISTRT_TRY(c.context());
  DISTRT_TRY(checkBatchNorm(c, x,
                            {{"scale", scale},
                             {"shift", shift},
                             {"save_mean", save_mean},
                             {"save_var", save_var},
                             {"running_mean", running_mean},
                             {"running_var", running_var}}));
  DISTRT_TRY(c.pointer("scale", scale));
  DISTRT_TRY(c.pointer("shift", shift));
  DISTRT_TRY(c.pointer("save_mean", save_mean));
  DISTRT_TRY(c.pointer("save_var", save_var));
  DISTRT_TRY(c.tensor("y", y, DISTRT_F32));
  DISTRT_TRY(c.same("x", x, "y", y));
  if (!running_mean != !running_var)
    return c.fail(DISTRT_ERROR_INVALID_ARGUMENT,
                  "pass both running_mean and running_var, or neither");
  DISTRT_ON_CUDNN(ctx, c, [&] {
    cuda::BatchNormArgs a =
        bnArgs(x, scale, shift, y, save_mean, save_var, epsilon, true);
    a.runningMean = running_mean ? cpu::f32(running_mean) : nullptr;
    a.runningVar = running_var ? cpu::f32(running_var) : nullptr;
    a.momentum = momentum;
    return cuda::batchNorm(ctx, a);
  }());
  return guardCall(ctx, fn, [&] {
    cpu::CpuState &st = cpu::state(ctx);
    memory::desc md = cpu::plainDesc(*x);
    ChannelGeom g = channelGeom(x);
    auto pd = bnForwardPd(st, md, epsilon, prop_kind::forward_training,
                          kScaleShift);
    memory::desc sd = statDesc(g.c);
    dnnl::batch_normalization_forward(pd).execute(
        st.stream, {{DNNL_ARG_SRC, cpu::mem(st, md, x->data)},
                    {DNNL_ARG_DST, cpu::mem(st, md, y->data)},
                    {DNNL_ARG_SCALE, cpu::mem(st, sd, scale->data)},
                    {DNNL_ARG_SHIFT, cpu::mem(st, sd, shift->data)},
                    {DNNL_ARG_MEAN, cpu::mem(st, sd, save_mean->data)},
                    {DNNL_ARG_VARIANCE, cpu::mem(st, sd, save_var->data)}});
    st.stream.wait();
    if (running_mean) {
      int64_t count = g.n * g.s;
      float unbias = count > 1 ? float(count) / float(count - 1) : 1.0f;
      float *rm = cpu::f32(running_mean), *rv = cpu::f32(running_var);
      const float *m = cpu::f32(save_mean), *v = cpu::f32(save_var);
      for (int64_t ch = 0; ch < g.c; ++ch) {
        rm[ch] = (1.0f - momentum) * rm[ch] + momentum * m[ch];
        rv[ch] = (1.0f - momentum) * rv[ch] + momentum * v[ch] * unbias;
      }
    }
    return DISTRT_OK;
  });
}

extern "C" distrt_status distrt_batchnorm_fwd_inference(
    distrt_context *ctx, const distrt_tensor *x, const distrt_tensor *scale,
    const distrt_tensor *shift, const distrt_tensor *mean,
    const distrt_tensor *var, const distrt_tensor *y, float epsilon) {
  const char *fn = "distrt_batchnorm_fwd_inference";
  Checker c(ctx, fn);
  DISTRT_TRY(c.context());
  DISTRT_TRY(checkBatchNorm(
      c, x,
      {{"scale", scale}, {"shift", shift}, {"mean", mean}, {"var", var}}));
  DISTRT_TRY(c.pointer("scale", scale));
  DISTRT_TRY(c.pointer("shift", shift));
  DISTRT_TRY(c.pointer("mean", mean));
  DISTRT_TRY(c.pointer("var", var));
  DISTRT_TRY(c.tensor("y", y, DISTRT_F32));
  DISTRT_TRY(c.same("x", x, "y", y));
  DISTRT_ON_CUDNN(ctx, c, cuda::batchNorm(ctx, bnArgs(x, scale, shift, y, mean,
                                                      var, epsilon, false)));
  return guardCall(ctx, fn, [&] {
    cpu::CpuState &st = cpu::state(ctx);
    memory::desc md = cpu::plainDesc(*x);
    memory::desc sd = statDesc(x->dims[1]);
    dnnl::primitive &prim = st.primitive(
        "batchnorm_inference:" + cpu::dimsKey(dimsOf(*x)) +
            std::to_string(epsilon),
        [&] {
          return dnnl::batch_normalization_forward(bnForwardPd(
              st, md, epsilon, prop_kind::forward_inference,
              kScaleShift | normalization_flags::use_global_stats));
        });
    prim.execute(
        st.stream, {{DNNL_ARG_SRC, cpu::mem(st, md, x->data)},
                    {DNNL_ARG_DST, cpu::mem(st, md, y->data)},
                    {DNNL_ARG_SCALE, cpu::mem(st, sd, scale->data)},
                    {DNNL_ARG_SHIFT, cpu::mem(st, sd, shift->data)},
                    {DNNL_ARG_MEAN, cpu::mem(st, sd, mean->data)},
                    {DNNL_ARG_VARIANCE, cpu::mem(st, sd, var->data)}});
    st.stream.wait();
    return DISTRT_OK;
  });
}

extern "C" distrt_status distrt_batchnorm_bwd_data(
    distrt_context *ctx, const distrt_tensor *x, const distrt_tensor *dy,
    const distrt_tensor *scale, const distrt_tensor *save_mean,
    const distrt_tensor *save_var, const distrt_tensor *dx, float epsilon) {
  const char *fn = "distrt_batchnorm_bwd_data";
  Checker c(ctx, fn);
  DISTRT_TRY(c.context());
  DISTRT_TRY(checkBatchNorm(c, x,
                            {{"scale", scale},
                             {"save_mean", save_mean},
                             {"save_var", save_var}}));
  DISTRT_TRY(c.pointer("scale", scale));
  DISTRT_TRY(c.pointer("save_mean", save_mean));
  DISTRT_TRY(c.pointer("save_var", save_var));
  DISTRT_TRY(c.tensor("dy", dy, DISTRT_F32));
  DISTRT_TRY(c.tensor("dx", dx, DISTRT_F32));
  DISTRT_TRY(c.same("x", x, "dy", dy));
  DISTRT_TRY(c.same("x", x, "dx", dx));
  DISTRT_ON_CUDNN(ctx, c, cuda::batchNormBwdData(
                              ctx, bnArgs(x, scale, nullptr, nullptr, save_mean,
                                          save_var, epsilon, true),
                              cpu::f32(dy), cpu::f32(dx)));
  return guardCall(ctx, fn, [&] {
    cpu::CpuState &st = cpu::state(ctx);
    memory::desc md = cpu::plainDesc(*x);
    memory::desc sd = statDesc(x->dims[1]);
    auto fpd = bnForwardPd(st, md, epsilon, prop_kind::forward_training,
                           kScaleShift);
    // prop_kind::backward also yields dscale/dshift; they go to scratch so
    // the weight gradient stays a separate entry point.
    dnnl::batch_normalization_backward::desc d(prop_kind::backward, md, md,
                                               epsilon, kScaleShift);
    dnnl::batch_normalization_backward::primitive_desc pd(d, st.engine, fpd);
    std::vector<float> scratch(2 * x->dims[1]);
    dnnl::batch_normalization_backward(pd).execute(
        st.stream,
        {{DNNL_ARG_SRC, cpu::mem(st, md, x->data)},
         {DNNL_ARG_DIFF_DST, cpu::mem(st, md, dy->data)},
         {DNNL_ARG_SCALE, cpu::mem(st, sd, scale->data)},
         {DNNL_ARG_SHIFT, cpu::mem(st, sd, scale->data)},
         {DNNL_ARG_MEAN, cpu::mem(st, sd, save_mean->data)},
         {DNNL_ARG_VARIANCE, cpu::mem(st, sd, save_var->data)},
         {DNNL_ARG_DIFF_SRC, cpu::mem(st, md, dx->data)},
         {DNNL_ARG_DIFF_SCALE, cpu::mem(st, sd, scratch.data())},
         {DNNL_ARG_DIFF_SHIFT, cpu::mem(st, sd, scratch.data() + x->dims[1])}});
    st.stream.wait();
    return DISTRT_OK;
  });
}

extern "C" distrt_status distrt_batchnorm_bwd_weight(
    distrt_context *ctx, const distrt_tensor *x, const distrt_tensor *dy,
    const distrt_tensor *save_mean, const distrt_tensor *save_var,
    const distrt_tensor *dscale, const distrt_tensor *dshift, float epsilon,
    int32_t accumulate) {
  const char *fn = "distrt_batchnorm_bwd_weight";
  Checker c(ctx, fn);
  DISTRT_TRY(c.context());
  DISTRT_TRY(checkBatchNorm(c, x,
                            {{"save_mean", save_mean},
                             {"save_var", save_var},
                             {"dscale", dscale},
                             {"dshift", dshift}}));
  DISTRT_TRY(c.pointer("save_mean", save_mean));
  DISTRT_TRY(c.pointer("save_var", save_var));
  DISTRT_TRY(c.pointer("dscale", dscale));
  DISTRT_TRY(c.tensor("dy", dy, DISTRT_F32));
  DISTRT_TRY(c.same("x", x, "dy", dy));
  DISTRT_ON_CUDNN(ctx, c, cuda::batchNormBwdWeight(
                              ctx, bnArgs(x, nullptr, nullptr, nullptr,
                                          save_mean, save_var, epsilon, true),
                              cpu::f32(dy), cpu::f32(dscale),
                              dshift ? cpu::f32(dshift) : nullptr,
                              accumulate));
  ChannelGeom g = channelGeom(x);
  const float *px = cpu::f32(x), *pdy = cpu::f32(dy);
  const float *m = cpu::f32(save_mean), *v = cpu::f32(save_var);
  float *ds = cpu::f32(dscale), *db = dshift ? cpu::f32(dshift) : nullptr;
  cpu::parallelFor(g.c, [&](int64_t ch) {
    double sumDy = 0, sumDyXhat = 0;
    float rstd = 1.0f / std::sqrt(v[ch] + epsilon);
    for (int64_t i = 0; i < g.n; ++i) {
      const float *xs = px + (i * g.c + ch) * g.s;
      const float *dys = pdy + (i * g.c + ch) * g.s;
      for (int64_t j = 0; j < g.s; ++j) {
        sumDy += dys[j];
        sumDyXhat += dys[j] * (xs[j] - m[ch]) * rstd;
      }
    }
    ds[ch] = (accumulate ? ds[ch] : 0.0f) + float(sumDyXhat);
    if (db)
      db[ch] = (accumulate ? db[ch] : 0.0f) + float(sumDy);
  });
  return DISTRT_OK;
}

//===----------------------------------------------------------------------===//
// Layer norm and RMS norm (over the last dimension)
//===----------------------------------------------------------------------===//

namespace {

/// x [rows..., D]; optional [D] params; optional [rows...] statistics.
distrt_status checkRowNorm(Checker &c, const distrt_tensor *x,
                           std::initializer_list<std::pair<
                               const char *, const distrt_tensor *>> perCol,
                           std::initializer_list<std::pair<
                               const char *, const distrt_tensor *>> perRow) {
  DISTRT_TRY(c.tensor("x", x, DISTRT_F32));
  DISTRT_TRY(c.minRank("x", x, 1));
  int64_t d = x->dims[x->rank - 1];
  for (auto &pc : perCol)
    if (pc.second) {
      DISTRT_TRY(c.tensor(pc.first, pc.second, DISTRT_F32));
      DISTRT_TRY(c.shape(pc.first, pc.second, {d}));
    }
  std::vector<int64_t> rows(x->dims, x->dims + x->rank - 1);
  for (auto &pr : perRow)
    if (pr.second) {
      DISTRT_TRY(c.tensor(pr.first, pr.second, DISTRT_F32));
      if (distrt_numel(pr.second) != distrt_numel(x) / (d ? d : 1))
        return c.fail(DISTRT_ERROR_SHAPE_MISMATCH, "'", pr.first,
                      "' has shape ", shapeString(*pr.second), "; expected ",
                      shapeString(rows), " (one value per row of x)");
    }
  return DISTRT_OK;
}

normalization_flags lnFlags(const distrt_tensor *scale,
                            const distrt_tensor *shift) {
  normalization_flags f = normalization_flags::none;
  if (scale)
    f = f | normalization_flags::use_scale;
  if (shift)
    f = f | normalization_flags::use_shift;
  return f;
}

} // namespace

extern "C" distrt_status
distrt_layernorm_fwd(distrt_context *ctx, const distrt_tensor *x,
                     const distrt_tensor *scale, const distrt_tensor *shift,
                     const distrt_tensor *y, const distrt_tensor *mean,
                     const distrt_tensor *var, float epsilon) {
  const char *fn = "distrt_layernorm_fwd";
  Checker c(ctx, fn);
  DISTRT_TRY(c.context());
  DISTRT_TRY(checkRowNorm(c, x, {{"scale", scale}, {"shift", shift}},
                          {{"mean", mean}, {"var", var}}));
  DISTRT_TRY(c.tensor("y", y, DISTRT_F32));
  DISTRT_TRY(c.same("x", x, "y", y));
  int64_t d = x->dims[x->rank - 1], rows = d ? distrt_numel(x) / d : 0;
  DISTRT_ON_CUDA(ctx, cuda::layerNorm(
                          ctx, cpu::f32(x), scale ? cpu::f32(scale) : nullptr,
                          shift ? cpu::f32(shift) : nullptr, cpu::f32(y),
                          mean ? cpu::f32(mean) : nullptr,
                          var ? cpu::f32(var) : nullptr, rows, d, epsilon,
                          false));
  if (rows == 0 || d == 0)
    return DISTRT_OK;
  return guardCall(ctx, fn, [&] {
    cpu::CpuState &st = cpu::state(ctx);
    memory::desc md = cpu::plainDesc({rows, d}), sd = cpu::plainDesc({rows}),
                 pd1 = cpu::plainDesc({d});
    dnnl::primitive &prim = st.primitive(
        "layernorm:" + cpu::dimsKey({rows, d}) + std::to_string(epsilon) +
            (scale ? "s" : "") + (shift ? "b" : ""),
        [&] {
          dnnl::layer_normalization_forward::desc desc(
              prop_kind::forward_training, md, sd, epsilon,
              lnFlags(scale, shift));
          return dnnl::layer_normalization_forward(
              dnnl::layer_normalization_forward::primitive_desc(desc,
                                                                st.engine));
        });
    std::vector<float> stats(mean && var ? 0 : 2 * rows);
    void *pm = mean ? mean->data : stats.data();
    void *pv = var ? var->data : stats.data() + rows;
    std::unordered_map<int, memory> args = {
        {DNNL_ARG_SRC, cpu::mem(st, md, x->data)},
        {DNNL_ARG_DST, cpu::mem(st, md, y->data)},
        {DNNL_ARG_MEAN, cpu::mem(st, sd, pm)},
        {DNNL_ARG_VARIANCE, cpu::mem(st, sd, pv)}};
    if (scale)
      args[DNNL_ARG_SCALE] = cpu::mem(st, pd1, scale->data);
    if (shift)
      args[DNNL_ARG_SHIFT] = cpu::mem(st, pd1, shift->data);
    prim.execute(st.stream, args);
    st.stream.wait();
    return DISTRT_OK;
  });
}

extern "C" distrt_status distrt_layernorm_bwd_data(
    distrt_context *ctx, const distrt_tensor *x, const distrt_tensor *dy,
    const distrt_tensor *scale, const distrt_tensor *mean,
    const distrt_tensor *var, const distrt_tensor *dx, float epsilon) {
  const char *fn = "distrt_layernorm_bwd_data";
  Checker c(ctx, fn);
  DISTRT_TRY(c.context());
  DISTRT_TRY(c.pointer("mean", mean));
  DISTRT_TRY(c.pointer("var", var));
  DISTRT_TRY(checkRowNorm(c, x, {{"scale", scale}},
                          {{"mean", mean}, {"var", var}}));
  DISTRT_TRY(c.tensor("dy", dy, DISTRT_F32));
  DISTRT_TRY(c.tensor("dx", dx, DISTRT_F32));
  DISTRT_TRY(c.same("x", x, "dy", dy));
  DISTRT_TRY(c.same("x", x, "dx", dx));
  int64_t d = x->dims[x->rank - 1], rows = d ? distrt_numel(x) / d : 0;
  DISTRT_ON_CUDA(ctx, cuda::layerNormBwdData(
                          ctx, cpu::f32(x), cpu::f32(dy),
                          scale ? cpu::f32(scale) : nullptr, cpu::f32(dx),
                          rows, d, epsilon, false));
  if (rows == 0 || d == 0)
    return DISTRT_OK;
  return guardCall(ctx, fn, [&] {
    cpu::CpuState &st = cpu::state(ctx);
    memory::desc md = cpu::plainDesc({rows, d}), sd = cpu::plainDesc({rows}),
                 pd1 = cpu::plainDesc({d});
    normalization_flags flags = lnFlags(scale, nullptr);
    dnnl::layer_normalization_forward::desc fdesc(prop_kind::forward_training,
                                                  md, sd, epsilon, flags);
    dnnl::layer_normalization_forward::primitive_desc fpd(fdesc, st.engine);
    dnnl::layer_normalization_backward::desc bdesc(
        scale ? prop_kind::backward : prop_kind::backward_data, md, md, sd,
        epsilon, flags);
    dnnl::layer_normalization_backward::primitive_desc pd(bdesc, st.engine,
                                                          fpd);
    std::vector<float> scratch(d);
    std::unordered_map<int, memory> args = {
        {DNNL_ARG_SRC, cpu::mem(st, md, x->data)},
        {DNNL_ARG_DIFF_DST, cpu::mem(st, md, dy->data)},
        {DNNL_ARG_MEAN, cpu::mem(st, sd, mean->data)},
        {DNNL_ARG_VARIANCE, cpu::mem(st, sd, var->data)},
        {DNNL_ARG_DIFF_SRC, cpu::mem(st, md, dx->data)}};
    if (scale) {
      args[DNNL_ARG_SCALE] = cpu::mem(st, pd1, scale->data);
      args[DNNL_ARG_DIFF_SCALE] = cpu::mem(st, pd1, scratch.data());
    }
    dnnl::layer_normalization_backward(pd).execute(st.stream, args);
    st.stream.wait();
    return DISTRT_OK;
  });
}

extern "C" distrt_status distrt_layernorm_bwd_weight(
    distrt_context *ctx, const distrt_tensor *x, const distrt_tensor *dy,
    const distrt_tensor *mean, const distrt_tensor *var,
    const distrt_tensor *dscale, const distrt_tensor *dshift, float epsilon,
    int32_t accumulate) {
  const char *fn = "distrt_layernorm_bwd_weight";
  Checker c(ctx, fn);
  DISTRT_TRY(c.context());
  DISTRT_TRY(c.pointer("mean", mean));
  DISTRT_TRY(c.pointer("var", var));
  DISTRT_TRY(c.pointer("dscale", dscale));
  DISTRT_TRY(checkRowNorm(c, x, {{"dscale", dscale}, {"dshift", dshift}},
                          {{"mean", mean}, {"var", var}}));
  DISTRT_TRY(c.tensor("dy", dy, DISTRT_F32));
  DISTRT_TRY(c.same("x", x, "dy", dy));
  int64_t d = x->dims[x->rank - 1], rows = d ? distrt_numel(x) / d : 0;
  DISTRT_ON_CUDA(ctx, cuda::layerNormBwdWeight(
                          ctx, cpu::f32(x), cpu::f32(dy), cpu::f32(dscale),
                          dshift ? cpu::f32(dshift) : nullptr, rows, d,
                          epsilon, false, accumulate));
  const float *px = cpu::f32(x), *pdy = cpu::f32(dy);
  const float *pm = cpu::f32(mean), *pv = cpu::f32(var);
  float *ds = cpu::f32(dscale), *db = dshift ? cpu::f32(dshift) : nullptr;
  cpu::parallelFor(d, [&](int64_t j) {
    double sScale = 0, sShift = 0;
    for (int64_t r = 0; r < rows; ++r) {
      float g = pdy[r * d + j];
      sScale += g * (px[r * d + j] - pm[r]) / std::sqrt(pv[r] + epsilon);
      sShift += g;
    }
    ds[j] = (accumulate ? ds[j] : 0.0f) + float(sScale);
    if (db)
      db[j] = (accumulate ? db[j] : 0.0f) + float(sShift);
  });
  return DISTRT_OK;
}
