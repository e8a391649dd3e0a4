//===- Softmax.cpp - Softmax, log-softmax and losses -----------*- C++ -*-===//
//
// Softmax and log-softmax run on oneDNN softmax_v2. The losses fuse their
// softmax into one pass per row (max, sum of exp, pick) with plain loops:
// computing a full softmax tensor first would double the memory traffic.
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
using dnnl::algorithm;
using dnnl::memory;

namespace {

distrt_status normalizeAxis(Checker &c, const distrt_tensor *x, int32_t &axis) {
  if (axis < 0)
    axis += x->rank;
  if (axis < 0 || axis >= x->rank)
    return c.fail(DISTRT_ERROR_INVALID_ARGUMENT, "axis is out of range for ",
                  shapeString(*x), "; expected -rank..rank-1");
  return DISTRT_OK;
}

void axisGeom(const distrt_tensor *x, int axis, int64_t &outer, int64_t &len,
              int64_t &inner) {
  outer = inner = 1;
  for (int i = 0; i < axis; ++i)
    outer *= x->dims[i];
  len = x->dims[axis];
  for (int i = axis + 1; i < x->rank; ++i)
    inner *= x->dims[i];
}

} // namespace

extern "C" distrt_status distrt_softmax(distrt_context *ctx,
                                        const distrt_tensor *x,
                                        const distrt_tensor *y, int32_t axis,
                                        int32_t log) {
  const char *fn = "distrt_softmax";
  Checker c(ctx, fn);
  DISTRT_TRY(c.context());
  DISTRT_TRY(c.tensor("x", x, DISTRT_F32));
  DISTRT_TRY(c.tensor("y", y, DISTRT_F32));
  DISTRT_TRY(c.same("x", x, "y", y));
  DISTRT_TRY(normalizeAxis(c, x, axis));
  int64_t outer, len, inner;
  axisGeom(x, axis, outer, len, inner);
  DISTRT_ON_CUDA(ctx, cuda::softmax(ctx, cpu::f32(x), cpu::f32(y), outer, len,
                                    inner, log));
  if (distrt_numel(x) == 0)
    return DISTRT_OK;
  return guardCall(ctx, fn, [&] {
    cpu::CpuState &st = cpu::state(ctx);
    memory::desc md = cpu::plainDesc({outer, len, inner});
    algorithm alg = log ? algorithm::softmax_log : algorithm::softmax_accurate;
    dnnl::primitive &prim = st.primitive(
        "softmax:" + std::to_string(log) + cpu::dimsKey({outer, len, inner}),
        [&] {
          dnnl::softmax_v2_forward::desc d(dnnl::prop_kind::forward_training,
                                           alg, md, md, 1);
          return dnnl::softmax_v2_forward(
              dnnl::softmax_v2_forward::primitive_desc(d, st.engine));
        });
    prim.execute(st.stream, {{DNNL_ARG_SRC, cpu::mem(st, md, x->data)},
                             {DNNL_ARG_DST, cpu::mem(st, md, y->data)}});
    st.stream.wait();
    return DISTRT_OK;
  });
}

extern "C" distrt_status distrt_softmax_bwd(distrt_context *ctx,
                                            const distrt_tensor *y,
                                            const distrt_tensor *dy,
                                            const distrt_tensor *dx,
                                            int32_t axis, int32_t log) {
  const char *fn = "distrt_softmax_bwd";
  Checker c(ctx, fn);
  DISTRT_TRY(c.context());
  DISTRT_TRY(c.tensor("y", y, DISTRT_F32));
  DISTRT_TRY(c.tensor("dy", dy, DISTRT_F32));
  DISTRT_TRY(c.tensor("dx", dx, DISTRT_F32));
  DISTRT_TRY(c.same("y", y, "dy", dy));
  DISTRT_TRY(c.same("y", y, "dx", dx));
  DISTRT_TRY(normalizeAxis(c, y, axis));
  int64_t outer, len, inner;
  axisGeom(y, axis, outer, len, inner);
  DISTRT_ON_CUDA(ctx, cuda::softmaxBwd(ctx, cpu::f32(y), cpu::f32(dy),
                                       cpu::f32(dx), outer, len, inner, log));
  if (distrt_numel(y) == 0)
    return DISTRT_OK;
  return guardCall(ctx, fn, [&] {
    cpu::CpuState &st = cpu::state(ctx);
    memory::desc md = cpu::plainDesc({outer, len, inner});
    algorithm alg = log ? algorithm::softmax_log : algorithm::softmax_accurate;
    dnnl::primitive &prim = st.primitive(
        "softmax_bwd:" + std::to_string(log) +
            cpu::dimsKey({outer, len, inner}),
        [&] {
          dnnl::softmax_v2_forward::desc fd(dnnl::prop_kind::forward_training,
                                            alg, md, md, 1);
          dnnl::softmax_v2_forward::primitive_desc fpd(fd, st.engine);
          dnnl::softmax_v2_backward::desc d(alg, md, md, md, 1);
          return dnnl::softmax_v2_backward(
              dnnl::softmax_v2_backward::primitive_desc(d, st.engine, fpd));
        });
    prim.execute(st.stream, {{DNNL_ARG_DST, cpu::mem(st, md, y->data)},
                             {DNNL_ARG_DIFF_DST, cpu::mem(st, md, dy->data)},
                             {DNNL_ARG_DIFF_SRC, cpu::mem(st, md, dx->data)}});
    st.stream.wait();
    return DISTRT_OK;
  });
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

namespace {

distrt_status checkCrossEntropy(Checker &c, const distrt_tensor *logits,
                                const distrt_tensor *labels,
                                distrt_loss_reduction reduction) {
  DISTRT_TRY(c.tensor("logits", logits, DISTRT_F32));
  DISTRT_TRY(c.indexTensor("labels", labels));
  if (reduction != DISTRT_LOSS_MEAN && reduction != DISTRT_LOSS_SUM &&
      reduction != DISTRT_LOSS_NONE)
    return c.fail(DISTRT_ERROR_INVALID_ARGUMENT, "reduction ",
                  static_cast<int>(reduction),
                  " is not DISTRT_LOSS_MEAN, _SUM or _NONE");
  if (logits->rank != 2)
    return c.fail(DISTRT_ERROR_SHAPE_MISMATCH, "'logits' has shape ",
                  shapeString(*logits),
                  "; expected [N, C] (flatten leading dims first)");
  return c.shape("labels", labels, {logits->dims[0]});
}

/// The loss (or its gradient) of \p reduction: one element, or [N] rows.
distrt_status checkLossShape(Checker &c, const char *name,
                             const distrt_tensor *t, int64_t n,
                             distrt_loss_reduction reduction) {
  DISTRT_TRY(c.tensor(name, t, DISTRT_F32));
  return reduction == DISTRT_LOSS_NONE ? c.shape(name, t, {n})
                                       : c.scalar(name, t);
}

/// Rows counted in the mean, or an error for a label outside [0, C).
distrt_status crossEntropyCount(Checker &c, const distrt_tensor *labels,
                                int64_t n, int64_t classes,
                                int64_t ignoreIndex, int64_t &count) {
  count = 0;
  for (int64_t i = 0; i < n; ++i) {
    int64_t l = cpu::indexAt(labels, i);
    if (l == ignoreIndex)
      continue;
    if (l < 0 || l >= classes)
      return c.fail(DISTRT_ERROR_INVALID_ARGUMENT, "labels[", i, "] = ", l,
                    " is outside [0, ", classes,
                    "); fix the labels or set ignore_index");
    ++count;
  }
  return DISTRT_OK;
}

/// Row \p row's shift (its maximum) and sum of exp(logit - shift).
void rowSoftmaxSums(const float *row, int64_t cls, float &mx, double &sum) {
  mx = row[0];
  for (int64_t j = 1; j < cls; ++j)
    mx = std::max(mx, row[j]);
  sum = 0;
  for (int64_t j = 0; j < cls; ++j)
    sum += std::exp(row[j] - mx);
}

} // namespace

extern "C" distrt_status
distrt_softmax_cross_entropy(distrt_context *ctx, const distrt_tensor *logits,
                             const distrt_tensor *labels,
                             const distrt_tensor *loss, int64_t ignore_index,
                             distrt_loss_reduction reduction) {
  const char *fn = "distrt_softmax_cross_entropy";
  Checker c(ctx, fn);
  DISTRT_TRY(c.context());
  DISTRT_TRY(checkCrossEntropy(c, logits, labels, reduction));
  int64_t n = logits->dims[0], cls = logits->dims[1];
  DISTRT_TRY(checkLossShape(c, "loss", loss, n, reduction));
  DISTRT_ON_CUDA(ctx,
                 cuda::crossEntropy(ctx, cpu::f32(logits), labels->data,
                                    labels->dtype == DISTRT_I64, cpu::f32(loss),
                                    n, cls, ignore_index, reduction));
  int64_t count;
  DISTRT_TRY(crossEntropyCount(c, labels, n, cls, ignore_index, count));
  const float *pl = cpu::f32(logits);
  float *out = cpu::f32(loss);
  double total = 0;
#pragma omp parallel for reduction(+ : total) if (n > 64)
  for (int64_t i = 0; i < n; ++i) {
    int64_t l = cpu::indexAt(labels, i);
    double rowLoss = 0;
    if (l != ignore_index) {
      const float *row = pl + i * cls;
      float mx;
      double sum;
      rowSoftmaxSums(row, cls, mx, sum);
      rowLoss = std::log(sum) + mx - row[l];
    }
    if (reduction == DISTRT_LOSS_NONE)
      out[i] = float(rowLoss);
    total += rowLoss;
  }
  if (reduction == DISTRT_LOSS_MEAN)
    *out = count ? float(total / count) : 0.0f;
  else if (reduction == DISTRT_LOSS_SUM)
    *out = float(total);
  return DISTRT_OK;
}

extern "C" distrt_status distrt_softmax_cross_entropy_bwd(
    distrt_context *ctx, const distrt_tensor *logits,
    const distrt_tensor *labels, const distrt_tensor *dloss,
    const distrt_tensor *dlogits, int64_t ignore_index,
    distrt_loss_reduction reduction) {
  const char *fn = "distrt_softmax_cross_entropy_bwd";
  Checker c(ctx, fn);
  DISTRT_TRY(c.context());
  DISTRT_TRY(checkCrossEntropy(c, logits, labels, reduction));
  int64_t n = logits->dims[0], cls = logits->dims[1];
  DISTRT_TRY(checkLossShape(c, "dloss", dloss, n, reduction));
  DISTRT_TRY(c.tensor("dlogits", dlogits, DISTRT_F32));
  DISTRT_TRY(c.same("logits", logits, "dlogits", dlogits));
  DISTRT_ON_CUDA(ctx, cuda::crossEntropyBwd(ctx, cpu::f32(logits), labels->data,
                                            labels->dtype == DISTRT_I64,
                                            cpu::f32(dloss), cpu::f32(dlogits),
                                            n, cls, ignore_index, reduction));
  int64_t count;
  DISTRT_TRY(crossEntropyCount(c, labels, n, cls, ignore_index, count));
  const float *pg = cpu::f32(dloss);
  float scale = reduction == DISTRT_LOSS_SUM ? *pg
                : count                      ? *pg / float(count)
                                             : 0.0f;
  const float *pl = cpu::f32(logits);
  float *pd = cpu::f32(dlogits);
  cpu::parallelFor(n, [&](int64_t i) {
    int64_t l = cpu::indexAt(labels, i);
    const float *row = pl + i * cls;
    float *drow = pd + i * cls;
    if (l == ignore_index) {
      std::fill(drow, drow + cls, 0.0f);
      return;
    }
    float mx;
    double sum;
    rowSoftmaxSums(row, cls, mx, sum);
    float inv = float(1.0 / sum);
    float g = reduction == DISTRT_LOSS_NONE ? pg[i] : scale;
    for (int64_t j = 0; j < cls; ++j)
      drow[j] = (std::exp(row[j] - mx) * inv - (j == l ? 1.0f : 0.0f)) * g;
  });
  return DISTRT_OK;
}

extern "C" distrt_status distrt_mse_loss(distrt_context *ctx,
                                         const distrt_tensor *x,
                                         const distrt_tensor *target,
                                         const distrt_tensor *loss) {
  const char *fn = "distrt_mse_loss";
  Checker c(ctx, fn);
  DISTRT_TRY(c.context());
  DISTRT_TRY(c.tensor("x", x, DISTRT_F32));
  DISTRT_TRY(c.tensor("target", target, DISTRT_F32));
  DISTRT_TRY(c.same("x", x, "target", target));
  DISTRT_TRY(c.tensor("loss", loss, DISTRT_F32));
  DISTRT_TRY(c.scalar("loss", loss));
  int64_t n = distrt_numel(x);
  DISTRT_ON_CUDA(ctx, cuda::mse(ctx, cpu::f32(x), cpu::f32(target),
                                cpu::f32(loss), n));
  const float *px = cpu::f32(x), *pt = cpu::f32(target);
  double total = 0;
#pragma omp parallel for reduction(+ : total) if (n > 4096)
  for (int64_t i = 0; i < n; ++i) {
    double d = double(px[i]) - pt[i];
    total += d * d;
  }
  *cpu::f32(loss) = n ? float(total / n) : 0.0f;
  return DISTRT_OK;
}

extern "C" distrt_status distrt_mse_loss_bwd(distrt_context *ctx,
                                             const distrt_tensor *x,
                                             const distrt_tensor *target,
                                             const distrt_tensor *dloss,
                                             const distrt_tensor *dx) {
  const char *fn = "distrt_mse_loss_bwd";
  Checker c(ctx, fn);
  DISTRT_TRY(c.context());
  DISTRT_TRY(c.tensor("x", x, DISTRT_F32));
  DISTRT_TRY(c.tensor("target", target, DISTRT_F32));
  DISTRT_TRY(c.same("x", x, "target", target));
  DISTRT_TRY(c.tensor("dloss", dloss, DISTRT_F32));
  DISTRT_TRY(c.scalar("dloss", dloss));
  DISTRT_TRY(c.tensor("dx", dx, DISTRT_F32));
  DISTRT_TRY(c.same("x", x, "dx", dx));
  int64_t n = distrt_numel(x);
  DISTRT_ON_CUDA(ctx, cuda::mseBwd(ctx, cpu::f32(x), cpu::f32(target),
                                   cpu::f32(dloss), cpu::f32(dx), n));
  float scale = n ? 2.0f * *cpu::f32(dloss) / float(n) : 0.0f;
  const float *px = cpu::f32(x), *pt = cpu::f32(target);
  float *pd = cpu::f32(dx);
  cpu::parallelFor(n, [&](int64_t i) { pd[i] = (px[i] - pt[i]) * scale; });
  return DISTRT_OK;
}
