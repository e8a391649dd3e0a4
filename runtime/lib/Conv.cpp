//===- Conv.cpp - 2-D convolution and pooling on oneDNN --------*- C++ -*-===//
//
// Activations are NCHW or channels-last (NHWC, oneDNN's "nxc", which its
// AVX2 and AVX-512 kernels run natively, depthwise included), weights OIHW;
// generated programs never see oneDNN's blocked formats: distrt_conv2d_ex
// lets oneDNN pick the weights layout and reorders them itself (once, when
// they are constant). Primitives are cached per shape, layout and
// post-ops. The backward of max pooling recomputes the forward's workspace
// (argmax) instead of carrying an opaque buffer through the ABI.
//
//===----------------------------------------------------------------------===//
#include "Internal.h"
#include "cpu/CpuState.h"
#include "cpu/Loops.h"
#include "cpu/Pool.h"
#include "cpu/PostOps.h"
#ifdef DISTRT_HAVE_CUDA
#include "cuda/CudaApi.h"
#endif

using namespace distrt;
using dnnl::algorithm;
using dnnl::memory;
using dnnl::prop_kind;

namespace {

int64_t outSize(int64_t in, int64_t k, int64_t stride, int64_t pb, int64_t pe,
                int64_t dil) {
  int64_t eff = (k - 1) * dil + 1;
  return (in + pb + pe - eff) / stride + 1;
}

struct ConvGeom {
  memory::dims src, wei, dst, bias, strides, dil, padL, padR;
  int64_t groups;
};

memory::dims dimsOf4(const distrt_tensor &t) {
  return memory::dims(t.dims, t.dims + t.rank);
}

/// The layouts a 4-D activation is laid out in: bit 0 NCHW (dense), bit 1
/// channels-last; both for a tensor whose strides only differ on unit dims
/// ([N, C, 1, 1]), none for others.
unsigned activationLayouts(const distrt_tensor &t) {
  if (t.rank != 4)
    return 0;
  std::vector<int64_t> s = stridesOf(t);
  const int64_t *d = t.dims;
  auto same = [&](int i, int64_t want) { return d[i] == 1 || s[i] == want; };
  unsigned l = isDense(t) ? 1u : 0u;
  if (same(1, 1) && same(3, d[1]) && same(2, d[1] * d[3]) &&
      same(0, d[1] * d[2] * d[3]))
    l |= 2u;
  return l;
}

/// The layout two activations share (channels-last when either is only
/// that), or false when they share none.
bool commonTag(const distrt_tensor &x, const distrt_tensor &y,
               memory::format_tag &tag) {
  unsigned lx = activationLayouts(x), ly = activationLayouts(y);
  unsigned both = lx & ly;
  if (!both)
    return false;
  bool nhwc = (both & 2u) && (!(both & 1u) || lx == 2u || ly == 2u);
  tag = nhwc ? memory::format_tag::nhwc : memory::format_tag::nchw;
  return true;
}

/// Refuses a binary post-op operand that varies over the batch but not
/// over the whole image ([N, C, 1, 1] with N > 1, a squeeze-excitation
/// scale) on
/// a channels-last output: oneDNN 2.6's jit kernels decline it and its
/// gemm convolution, which takes it, applies the first image's values to
/// every image (ConvolutionRejectsPerImageOperandsChannelsLast).
distrt_status checkPerImageOperands(Checker &c, const distrt_compute_ex *ex,
                                    const distrt_tensor &y) {
  for (int i = 0; ex && i < ex->count; ++i) {
    const distrt_tensor &t = ex->post[i].src1;
    if (ex->post[i].kind != DISTRT_POST_BINARY || t.rank != 4)
      continue;
    bool perImage =
        t.dims[0] > 1 && t.dims[2] * t.dims[3] < y.dims[2] * y.dims[3];
    if (perImage)
      return c.fail(DISTRT_ERROR_UNSUPPORTED, "post-op ", i, ": src1 ",
                    shapeString(t),
                    " varies over the batch but not over the whole image; on a "
                    "channels-last output oneDNN 2.6 applies the first "
                    "image's values to every image. Apply it after the "
                    "convolution (distrt_binary) or use NCHW");
  }
  return DISTRT_OK;
}

/// The oneDNN descriptor of an activation in layout `tag`.
memory::desc activationDesc(const distrt_tensor &t, memory::format_tag tag) {
  return memory::desc(dimsOf4(t), memory::data_type::f32, tag);
}

distrt_status checkConv(Checker &c, const distrt_conv2d_attr *attr,
                        const distrt_tensor *x, const distrt_tensor *w,
                        const distrt_tensor *y, ConvGeom &g) {
  DISTRT_TRY(c.pointer("attr", attr));
  DISTRT_TRY(c.tensor("x", x, DISTRT_F32));
  DISTRT_TRY(c.tensor("w", w, DISTRT_F32));
  DISTRT_TRY(c.tensor("y", y, DISTRT_F32));
  if (x->rank != 4 || w->rank != 4)
    return c.fail(DISTRT_ERROR_SHAPE_MISMATCH, "x ", shapeString(*x),
                  " and w ", shapeString(*w),
                  " must both be rank 4 (NCHW, OIHW)");
  g.groups = attr->groups;
  for (int i = 0; i < 2; ++i)
    if (attr->stride[i] < 1 || attr->dilation[i] < 1 ||
        attr->pad_begin[i] < 0 || attr->pad_end[i] < 0)
      return c.fail(DISTRT_ERROR_INVALID_ARGUMENT,
                    "stride and dilation must be >= 1 and padding >= 0");
  if (g.groups < 1 || x->dims[1] % g.groups || w->dims[0] % g.groups)
    return c.fail(DISTRT_ERROR_INVALID_ARGUMENT, "groups = ", g.groups,
                  " must be >= 1 and divide input channels ", x->dims[1],
                  " and output channels ", w->dims[0]);
  if (w->dims[1] * g.groups != x->dims[1])
    return c.fail(DISTRT_ERROR_SHAPE_MISMATCH, "w ", shapeString(*w),
                  " expects ", w->dims[1] * g.groups,
                  " input channels but x ", shapeString(*x), " has ",
                  x->dims[1]);
  int64_t oh = outSize(x->dims[2], w->dims[2], attr->stride[0],
                       attr->pad_begin[0], attr->pad_end[0],
                       attr->dilation[0]);
  int64_t ow = outSize(x->dims[3], w->dims[3], attr->stride[1],
                       attr->pad_begin[1], attr->pad_end[1],
                       attr->dilation[1]);
  if (oh < 1 || ow < 1)
    return c.fail(DISTRT_ERROR_SHAPE_MISMATCH, "kernel ", shapeString(*w),
                  " does not fit input ", shapeString(*x),
                  " with this padding and dilation");
  DISTRT_TRY(c.shape("y", y, {x->dims[0], w->dims[0], oh, ow}));
  g.src = memory::dims(x->dims, x->dims + 4);
  g.dst = {x->dims[0], w->dims[0], oh, ow};
  if (g.groups == 1)
    g.wei = memory::dims(w->dims, w->dims + 4);
  else
    g.wei = {g.groups, w->dims[0] / g.groups, w->dims[1], w->dims[2],
             w->dims[3]};
  g.bias = {w->dims[0]};
  g.strides = {attr->stride[0], attr->stride[1]};
  g.dil = {attr->dilation[0] - 1, attr->dilation[1] - 1};
  g.padL = {attr->pad_begin[0], attr->pad_begin[1]};
  g.padR = {attr->pad_end[0], attr->pad_end[1]};
  return DISTRT_OK;
}

#ifdef DISTRT_HAVE_CUDA
cuda::ConvShape convShape(const ConvGeom &g, const distrt_conv2d_attr *a) {
  cuda::ConvShape s;
  s.n = g.src[0];
  s.c = g.src[1];
  s.h = g.src[2];
  s.w = g.src[3];
  s.o = g.dst[1];
  s.kh = g.wei[g.wei.size() - 2];
  s.kw = g.wei[g.wei.size() - 1];
  s.oh = g.dst[2];
  s.ow = g.dst[3];
  for (int i = 0; i < 2; ++i) {
    s.stride[i] = a->stride[i];
    s.padBegin[i] = a->pad_begin[i];
    s.padEnd[i] = a->pad_end[i];
    s.dilation[i] = a->dilation[i];
  }
  s.groups = static_cast<int32_t>(g.groups);
  return s;
}
#endif

dnnl::convolution_forward::primitive_desc
convFwdPd(cpu::CpuState &st, const ConvGeom &g, bool bias) {
  memory::desc s = cpu::plainDesc(g.src), w = cpu::plainDesc(g.wei),
               d = cpu::plainDesc(g.dst);
  if (bias) {
    dnnl::convolution_forward::desc desc(
        prop_kind::forward_training, algorithm::convolution_direct, s, w,
        cpu::plainDesc(g.bias), d, g.strides, g.dil, g.padL, g.padR);
    return dnnl::convolution_forward::primitive_desc(desc, st.engine);
  }
  dnnl::convolution_forward::desc desc(prop_kind::forward_training,
                                       algorithm::convolution_direct, s, w, d,
                                       g.strides, g.dil, g.padL, g.padR);
  return dnnl::convolution_forward::primitive_desc(desc, st.engine);
}

} // namespace

namespace {

/// The forward convolution on oneDNN, cached per geometry, layouts and
/// post-ops. With `anyWeights` oneDNN picks the weights layout its fastest
/// kernel wants and `w` is reordered into it (once per address when
/// `ex->constant_weights`); otherwise the weights are read as OIHW. The
/// call is recorded under `replayKey` unless its weights need a reorder
/// every call.
distrt_status convForward(distrt_context *ctx, const ConvGeom &g,
                          const distrt_tensor *x, const distrt_tensor *w,
                          const distrt_tensor *bias, const distrt_tensor *y,
                          const distrt_compute_ex *ex, bool anyWeights,
                          memory::format_tag tag,
                          const std::string &replayKey) {
  cpu::CpuState &st = cpu::state(ctx);
  memory::desc s = activationDesc(*x, tag), d = activationDesc(*y, tag),
               wPlain = cpu::plainDesc(g.wei), b = cpu::plainDesc(g.bias);
  std::string key =
      "conv:" + cpu::dimsKey(g.src) + std::to_string((int)tag) + "|" +
      cpu::dimsKey(g.wei) + "|" + cpu::dimsKey(g.dst) + "|" +
      cpu::dimsKey(g.strides) +
      cpu::dimsKey(g.dil) + cpu::dimsKey(g.padL) + cpu::dimsKey(g.padR) +
      (bias ? "b" : "") + (anyWeights ? "any" : "") +
      cpu::postOpsKey(ex, 4);
  auto it = st.layered.find(key);
  if (it == st.layered.end()) {
    memory::desc wd = anyWeights ? memory::desc(g.wei, memory::data_type::f32,
                                                memory::format_tag::any)
                                 : wPlain;
    dnnl::post_ops ops;
    cpu::appendPostOps(ops, ex, 0, 4);
    dnnl::primitive_attr attr;
    attr.set_post_ops(ops);
    auto desc = bias ? dnnl::convolution_forward::desc(
                           prop_kind::forward_inference,
                           algorithm::convolution_direct, s, wd, b, d,
                           g.strides, g.dil, g.padL, g.padR)
                     : dnnl::convolution_forward::desc(
                           prop_kind::forward_inference,
                           algorithm::convolution_direct, s, wd, d, g.strides,
                           g.dil, g.padL, g.padR);
    dnnl::convolution_forward::primitive_desc pd(desc, attr, st.engine);
    it = st.layered
             .emplace(key, cpu::CpuState::Layered{dnnl::convolution_forward(pd),
                                                  pd.weights_desc()})
             .first;
  }
  const cpu::CpuState::Layered &entry = it->second;
  memory weights =
      st.weightsFor(key, entry, cpu::mem(st, wPlain, w->data), w->data,
                    ex && ex->constant_weights);
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, cpu::mem(st, s, x->data)},
      {DNNL_ARG_WEIGHTS, weights},
      {DNNL_ARG_DST, cpu::mem(st, d, y->data)}};
  if (bias)
    args[DNNL_ARG_BIAS] = cpu::mem(st, b, bias->data);
  cpu::postOpArgs(st, args, ex, 0, 0, 4);
  entry.prim.execute(st.stream, args);
  st.stream.wait();
  if (entry.weights == wPlain || (ex && ex->constant_weights))
    st.remember(replayKey, entry.prim, args);
  return DISTRT_OK;
}

/// The replay key of a forward convolution entry point's call ("" when
/// replays are off).
std::string convKey(distrt_context *ctx, const char *fn, const distrt_tensor *x,
                    const distrt_tensor *w, const distrt_tensor *bias,
                    const distrt_tensor *y, const distrt_conv2d_attr *attr,
                    const distrt_compute_ex *ex) {
  if (cpu::state(ctx).replayOff)
    return "";
  cpu::CallKey k(fn);
  k.tensor(x).tensor(w).tensor(bias).tensor(y).ex(ex);
  if (attr)
    k.pod(*attr);
  return std::move(k.bytes);
}

} // namespace

extern "C" distrt_status distrt_conv2d(distrt_context *ctx,
                                       const distrt_tensor *x,
                                       const distrt_tensor *w,
                                       const distrt_tensor *bias,
                                       const distrt_tensor *y,
                                       const distrt_conv2d_attr *attr) {
  const char *fn = "distrt_conv2d";
  Checker c(ctx, fn);
  DISTRT_TRY(c.context());
  ConvGeom g;
  DISTRT_TRY(checkConv(c, attr, x, w, y, g));
  DISTRT_TRY(c.optTensor("bias", bias, DISTRT_F32));
  if (bias)
    DISTRT_TRY(c.shape("bias", bias, {w->dims[0]}));
  DISTRT_ON_CUDNN(ctx, c, cuda::convFwd(ctx, convShape(g, attr), cpu::f32(x),
                                       cpu::f32(w),
                                       bias ? cpu::f32(bias) : nullptr,
                                       cpu::f32(y)));
  std::string key = convKey(ctx, fn, x, w, bias, y, attr, nullptr);
  return guardCall(ctx, fn, [&] {
    if (const cpu::CpuState::Replay *r = cpu::state(ctx).replay(key)) {
      cpu::state(ctx).run(*r);
      return DISTRT_OK;
    }
    return convForward(ctx, g, x, w, bias, y, nullptr, false,
                       memory::format_tag::nchw, key);
  });
}

extern "C" distrt_status distrt_conv2d_ex(distrt_context *ctx,
                                          const distrt_tensor *x,
                                          const distrt_tensor *w,
                                          const distrt_tensor *bias,
                                          const distrt_tensor *y,
                                          const distrt_conv2d_attr *attr,
                                          const distrt_compute_ex *ex) {
  const char *fn = "distrt_conv2d_ex";
  Checker c(ctx, fn);
  DISTRT_TRY(c.context());
  bool post = ex && ex->count > 0;
  if (ctx->isCuda()) {
    if (post)
      return c.fail(DISTRT_ERROR_UNSUPPORTED,
                    "post-ops run on the CPU backend only");
    return distrt_conv2d(ctx, x, w, bias, y, attr);
  }
  // The same call as one that ran before: the checks passed then.
  std::string key = convKey(ctx, fn, x, w, bias, y, attr, ex);
  if (const cpu::CpuState::Replay *r = cpu::state(ctx).replay(key))
    return guardCall(ctx, fn, [&] {
      cpu::state(ctx).run(*r);
      return DISTRT_OK;
    });
  c.allowStrided();
  ConvGeom g;
  DISTRT_TRY(checkConv(c, attr, x, w, y, g));
  c.allowStrided(false);
  DISTRT_TRY(c.tensor("w", w, DISTRT_F32));
  DISTRT_TRY(c.optTensor("bias", bias, DISTRT_F32));
  if (bias)
    DISTRT_TRY(c.shape("bias", bias, {w->dims[0]}));
  memory::format_tag tag;
  if (!commonTag(*x, *y, tag))
    return c.fail(DISTRT_ERROR_UNSUPPORTED, "x ", shapeString(*x),
                  " strides ", shapeString(stridesOf(*x)), " and y ",
                  shapeString(*y), " strides ", shapeString(stridesOf(*y)),
                  " must both be NCHW or both channels-last");
  DISTRT_TRY(cpu::checkPostOps(c, ex, dimsOf(*y), stridesOf(*y)));
  if (tag == memory::format_tag::nhwc)
    DISTRT_TRY(checkPerImageOperands(c, ex, *y));
  return guardCall(ctx, fn, [&] {
    return convForward(ctx, g, x, w, bias, y, ex, true, tag, key);
  });
}

extern "C" distrt_status distrt_conv2d_bwd_data(distrt_context *ctx,
                                                const distrt_tensor *dy,
                                                const distrt_tensor *w,
                                                const distrt_tensor *dx,
                                                const distrt_conv2d_attr *attr) {
  const char *fn = "distrt_conv2d_bwd_data";
  Checker c(ctx, fn);
  DISTRT_TRY(c.context());
  ConvGeom g;
  DISTRT_TRY(checkConv(c, attr, dx, w, dy, g));
  DISTRT_ON_CUDNN(ctx, c, cuda::convBwdData(ctx, convShape(g, attr), cpu::f32(dy),
                                           cpu::f32(w), cpu::f32(dx)));
  return guardCall(ctx, fn, [&] {
    cpu::CpuState &st = cpu::state(ctx);
    auto fpd = convFwdPd(st, g, false);
    memory::desc s = cpu::plainDesc(g.src), wd = cpu::plainDesc(g.wei),
                 d = cpu::plainDesc(g.dst);
    dnnl::convolution_backward_data::desc desc(
        algorithm::convolution_direct, s, wd, d, g.strides, g.dil, g.padL,
        g.padR);
    dnnl::convolution_backward_data::primitive_desc pd(desc, st.engine, fpd);
    dnnl::convolution_backward_data(pd).execute(
        st.stream, {{DNNL_ARG_DIFF_DST, cpu::mem(st, d, dy->data)},
                    {DNNL_ARG_WEIGHTS, cpu::mem(st, wd, w->data)},
                    {DNNL_ARG_DIFF_SRC, cpu::mem(st, s, dx->data)}});
    st.stream.wait();
    return DISTRT_OK;
  });
}

extern "C" distrt_status
distrt_conv2d_bwd_weight(distrt_context *ctx, const distrt_tensor *x,
                         const distrt_tensor *dy, const distrt_tensor *dw,
                         const distrt_tensor *dbias,
                         const distrt_conv2d_attr *attr, int32_t accumulate) {
  const char *fn = "distrt_conv2d_bwd_weight";
  Checker c(ctx, fn);
  DISTRT_TRY(c.context());
  ConvGeom g;
  DISTRT_TRY(checkConv(c, attr, x, dw, dy, g));
  DISTRT_TRY(c.optTensor("dbias", dbias, DISTRT_F32));
  if (dbias)
    DISTRT_TRY(c.shape("dbias", dbias, {dw->dims[0]}));
  DISTRT_ON_CUDNN(ctx, c, cuda::convBwdWeight(
                              ctx, convShape(g, attr), cpu::f32(x), cpu::f32(dy),
                              cpu::f32(dw), dbias ? cpu::f32(dbias) : nullptr,
                              accumulate));
  return guardCall(ctx, fn, [&] {
    cpu::CpuState &st = cpu::state(ctx);
    auto fpd = convFwdPd(st, g, dbias);
    memory::desc s = cpu::plainDesc(g.src), wd = cpu::plainDesc(g.wei),
                 d = cpu::plainDesc(g.dst), bd = cpu::plainDesc(g.bias);
    int64_t wn = distrt_numel(dw), bn = g.bias[0];
    // With accumulate the result lands in scratch and is added afterwards.
    std::vector<float> scratch(accumulate ? wn + bn : 0);
    void *wOut = accumulate ? scratch.data() : dw->data;
    void *bOut = dbias ? (accumulate ? scratch.data() + wn : dbias->data)
                       : nullptr;
    std::unordered_map<int, memory> args = {
        {DNNL_ARG_SRC, cpu::mem(st, s, x->data)},
        {DNNL_ARG_DIFF_DST, cpu::mem(st, d, dy->data)},
        {DNNL_ARG_DIFF_WEIGHTS, cpu::mem(st, wd, wOut)}};
    if (dbias) {
      dnnl::convolution_backward_weights::desc desc(
          algorithm::convolution_direct, s, wd, bd, d, g.strides, g.dil,
          g.padL, g.padR);
      dnnl::convolution_backward_weights::primitive_desc pd(desc, st.engine,
                                                            fpd);
      args[DNNL_ARG_DIFF_BIAS] = cpu::mem(st, bd, bOut);
      dnnl::convolution_backward_weights(pd).execute(st.stream, args);
    } else {
      dnnl::convolution_backward_weights::desc desc(
          algorithm::convolution_direct, s, wd, d, g.strides, g.dil, g.padL,
          g.padR);
      dnnl::convolution_backward_weights::primitive_desc pd(desc, st.engine,
                                                            fpd);
      dnnl::convolution_backward_weights(pd).execute(st.stream, args);
    }
    st.stream.wait();
    if (accumulate) {
      float *pw = cpu::f32(dw);
      for (int64_t i = 0; i < wn; ++i)
        pw[i] += scratch[i];
      if (dbias)
        for (int64_t i = 0; i < bn; ++i)
          cpu::f32(dbias)[i] += scratch[wn + i];
    }
    return DISTRT_OK;
  });
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

namespace {

distrt_status checkPool(Checker &c, const distrt_pool2d_attr *attr,
                        const distrt_tensor *x, const distrt_tensor *y) {
  DISTRT_TRY(c.pointer("attr", attr));
  DISTRT_TRY(c.tensor("x", x, DISTRT_F32));
  DISTRT_TRY(c.tensor("y", y, DISTRT_F32));
  if (attr->kind < DISTRT_POOL_MAX || attr->kind > DISTRT_POOL_AVG_EXCLUDE_PAD)
    return c.fail(DISTRT_ERROR_INVALID_ARGUMENT, "unknown pool kind ",
                  int(attr->kind));
  if (x->rank != 4)
    return c.fail(DISTRT_ERROR_SHAPE_MISMATCH, "x ", shapeString(*x),
                  " must be NCHW (rank 4)");
  for (int i = 0; i < 2; ++i)
    if (attr->kernel[i] < 1 || attr->stride[i] < 1 || attr->pad_begin[i] < 0 ||
        attr->pad_end[i] < 0 || attr->pad_begin[i] >= attr->kernel[i] ||
        attr->pad_end[i] >= attr->kernel[i])
      return c.fail(DISTRT_ERROR_INVALID_ARGUMENT,
                    "kernel and stride must be >= 1, padding in "
                    "[0, kernel)");
  int64_t oh = outSize(x->dims[2], attr->kernel[0], attr->stride[0],
                       attr->pad_begin[0], attr->pad_end[0], 1);
  int64_t ow = outSize(x->dims[3], attr->kernel[1], attr->stride[1],
                       attr->pad_begin[1], attr->pad_end[1], 1);
  if (oh < 1 || ow < 1)
    return c.fail(DISTRT_ERROR_SHAPE_MISMATCH, "the pooling window does not "
                                               "fit input ",
                  shapeString(*x));
  return c.shape("y", y, {x->dims[0], x->dims[1], oh, ow});
}

#ifdef DISTRT_HAVE_CUDA
cuda::PoolShape poolShape(const distrt_tensor *x, const distrt_tensor *y,
                          const distrt_pool2d_attr *a) {
  cuda::PoolShape s;
  s.n = x->dims[0];
  s.c = x->dims[1];
  s.h = x->dims[2];
  s.w = x->dims[3];
  s.oh = y->dims[2];
  s.ow = y->dims[3];
  s.kind = a->kind;
  for (int i = 0; i < 2; ++i) {
    s.kernel[i] = a->kernel[i];
    s.stride[i] = a->stride[i];
    s.padBegin[i] = a->pad_begin[i];
    s.padEnd[i] = a->pad_end[i];
  }
  return s;
}
#endif

algorithm poolAlg(distrt_pool_kind k) {
  return k == DISTRT_POOL_MAX               ? algorithm::pooling_max
         : k == DISTRT_POOL_AVG_INCLUDE_PAD ? algorithm::pooling_avg_include_padding
                                            : algorithm::pooling_avg_exclude_padding;
}

dnnl::pooling_forward::primitive_desc poolFwdPd(cpu::CpuState &st,
                                                const distrt_pool2d_attr *a,
                                                const memory::desc &s,
                                                const memory::desc &d) {
  dnnl::pooling_forward::desc desc(
      prop_kind::forward_training, poolAlg(a->kind), s, d,
      {a->stride[0], a->stride[1]}, {a->kernel[0], a->kernel[1]},
      {a->pad_begin[0], a->pad_begin[1]}, {a->pad_end[0], a->pad_end[1]});
  return dnnl::pooling_forward::primitive_desc(desc, st.engine);
}

} // namespace

extern "C" distrt_status distrt_pool2d(distrt_context *ctx,
                                       const distrt_tensor *x,
                                       const distrt_tensor *y,
                                       const distrt_pool2d_attr *attr) {
  const char *fn = "distrt_pool2d";
  Checker c(ctx, fn);
  DISTRT_TRY(c.context());
  c.allowStrided(!ctx->isCuda());
  DISTRT_TRY(checkPool(c, attr, x, y));
  c.allowStrided(false);
  memory::format_tag tag = memory::format_tag::nchw;
  if (!commonTag(*x, *y, tag))
    return c.fail(DISTRT_ERROR_UNSUPPORTED, "x and y must both be NCHW or "
                                            "both channels-last");
  DISTRT_ON_CUDNN(ctx, c, cuda::pool(ctx, poolShape(x, y, attr), cpu::f32(x),
                                   cpu::f32(y), nullptr, nullptr));
  // Channels-last max pooling runs the runtime's loop (cpu/Pool.h):
  // oneDNN's kernel for it was 4x slower on ResNet-18's pooling.
  if (tag == memory::format_tag::nhwc && attr->kind == DISTRT_POOL_MAX)
    return guardCall(ctx, fn, [&] {
      cpu::maxPoolChannelsLast(*x, *y, *attr);
      return DISTRT_OK;
    });
  std::string replayKey;
  if (!cpu::state(ctx).replayOff)
    replayKey =
        std::move(cpu::CallKey(fn).tensor(x).tensor(y).pod(*attr).bytes);
  return guardCall(ctx, fn, [&] {
      cpu::CpuState &st = cpu::state(ctx);
      if (const cpu::CpuState::Replay *r = st.replay(replayKey)) {
        st.run(*r);
        return DISTRT_OK;
      }
      memory::desc s = activationDesc(*x, tag), d = activationDesc(*y, tag);
      std::string key = "pool:" + cpu::dimsKey(dimsOf4(*x)) +
                        std::to_string((int)tag) + cpu::dimsKey(dimsOf4(*y)) +
                        std::to_string(attr->kind) + "," +
                        cpu::dimsKey({attr->kernel[0], attr->kernel[1],
                                      attr->stride[0], attr->stride[1],
                                      attr->pad_begin[0], attr->pad_begin[1],
                                      attr->pad_end[0], attr->pad_end[1]});
      dnnl::primitive &prim = st.primitive(key, [&] {
        // Inference propagation: no workspace (the backward recomputes it).
        dnnl::pooling_forward::desc desc(
            prop_kind::forward_inference, poolAlg(attr->kind), s, d,
            {attr->stride[0], attr->stride[1]},
            {attr->kernel[0], attr->kernel[1]},
            {attr->pad_begin[0], attr->pad_begin[1]},
            {attr->pad_end[0], attr->pad_end[1]});
        return dnnl::pooling_forward(
            dnnl::pooling_forward::primitive_desc(desc, st.engine));
      });
      std::unordered_map<int, memory> args = {
          {DNNL_ARG_SRC, cpu::mem(st, s, x->data)},
          {DNNL_ARG_DST, cpu::mem(st, d, y->data)}};
      prim.execute(st.stream, args);
      st.stream.wait();
      st.remember(replayKey, prim, args);
      return DISTRT_OK;
    });
}

extern "C" distrt_status distrt_pool2d_bwd(distrt_context *ctx,
                                           const distrt_tensor *x,
                                           const distrt_tensor *dy,
                                           const distrt_tensor *dx,
                                           const distrt_pool2d_attr *attr) {
  const char *fn = "distrt_pool2d_bwd";
  Checker c(ctx, fn);
  DISTRT_TRY(c.context());
  DISTRT_TRY(checkPool(c, attr, x, dy));
  DISTRT_TRY(c.tensor("dx", dx, DISTRT_F32));
  DISTRT_TRY(c.same("x", x, "dx", dx));
  DISTRT_ON_CUDNN(ctx, c, cuda::pool(ctx, poolShape(x, dy, attr), cpu::f32(x),
                                   nullptr, cpu::f32(dy), cpu::f32(dx)));
  return guardCall(ctx, fn, [&] {
    cpu::CpuState &st = cpu::state(ctx);
    memory::desc s = cpu::plainDesc(*x), d = cpu::plainDesc(*dy);
    auto fpd = poolFwdPd(st, attr, s, d);
    std::unordered_map<int, memory> args = {
        {DNNL_ARG_DIFF_DST, cpu::mem(st, d, dy->data)},
        {DNNL_ARG_DIFF_SRC, cpu::mem(st, s, dx->data)}};
    if (attr->kind == DISTRT_POOL_MAX) {
      memory ws(fpd.workspace_desc(), st.engine);
      memory ytmp(d, st.engine);
      dnnl::pooling_forward(fpd).execute(
          st.stream, {{DNNL_ARG_SRC, cpu::mem(st, s, x->data)},
                      {DNNL_ARG_DST, ytmp},
                      {DNNL_ARG_WORKSPACE, ws}});
      args[DNNL_ARG_WORKSPACE] = ws;
    }
    dnnl::pooling_backward::desc desc(
        poolAlg(attr->kind), s, d, {attr->stride[0], attr->stride[1]},
        {attr->kernel[0], attr->kernel[1]},
        {attr->pad_begin[0], attr->pad_begin[1]},
        {attr->pad_end[0], attr->pad_end[1]});
    dnnl::pooling_backward::primitive_desc pd(desc, st.engine, fpd);
    dnnl::pooling_backward(pd).execute(st.stream, args);
    st.stream.wait();
    return DISTRT_OK;
  });
}
