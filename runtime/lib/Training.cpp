//===- Training.cpp - Optimizers, dropout, mixed precision -----*- C++ -*-===//
//
// Elementwise training kernels oneDNN has no primitive for: optimizer
// updates (PyTorch semantics), deterministic dropout, fills, gradient
// accumulation, casts and loss-scale overflow checks. Plain OpenMP loops.
//
//===----------------------------------------------------------------------===//
#include "Internal.h"
#include "ScalarOps.h"
#include "cpu/CpuState.h"
#include "cpu/Loops.h"
#ifdef DISTRT_HAVE_CUDA
#include "cuda/CudaApi.h"
#endif

#include <cmath>

using namespace distrt;

namespace {

float loadAs(const void *p, distrt_dtype dt, int64_t i) {
  switch (dt) {
  case DISTRT_F16:
    return halfToFloat(static_cast<const uint16_t *>(p)[i]);
  case DISTRT_BF16:
    return bf16ToFloat(static_cast<const uint16_t *>(p)[i]);
  default:
    return static_cast<const float *>(p)[i];
  }
}

void storeAs(void *p, distrt_dtype dt, int64_t i, float v) {
  switch (dt) {
  case DISTRT_F16:
    static_cast<uint16_t *>(p)[i] = floatToHalf(v);
    break;
  case DISTRT_BF16:
    static_cast<uint16_t *>(p)[i] = floatToBf16(v);
    break;
  default:
    static_cast<float *>(p)[i] = v;
  }
}

distrt_status checkParamGrad(Checker &c, const distrt_tensor *param,
                             const distrt_tensor *grad) {
  DISTRT_TRY(c.tensor("param", param, DISTRT_F32));
  DISTRT_TRY(c.tensor("grad", grad, DISTRT_F32));
  return c.same("param", param, "grad", grad);
}

distrt_status checkStep(Checker &c, int64_t step) {
  if (step < 1)
    return c.fail(DISTRT_ERROR_INVALID_ARGUMENT, "step is ", step,
                  "; steps count from 1");
  return DISTRT_OK;
}

distrt_status adamCommon(const char *fn, distrt_context *ctx,
                         const distrt_tensor *param, const distrt_tensor *grad,
                         const distrt_tensor *m, const distrt_tensor *v,
                         const distrt_adam_attr *attr, int64_t step,
                         bool decoupled) {
  Checker c(ctx, fn);
  DISTRT_TRY(c.context());
  DISTRT_TRY(c.pointer("attr", attr));
  DISTRT_TRY(checkStep(c, step));
  DISTRT_TRY(checkParamGrad(c, param, grad));
  DISTRT_TRY(c.tensor("exp_avg", m, DISTRT_F32));
  DISTRT_TRY(c.tensor("exp_avg_sq", v, DISTRT_F32));
  DISTRT_TRY(c.same("param", param, "exp_avg", m));
  DISTRT_TRY(c.same("param", param, "exp_avg_sq", v));
  int64_t n = distrt_numel(param);
  float *p = cpu::f32(param), *pm = cpu::f32(m), *pv = cpu::f32(v);
  const float *g = cpu::f32(grad);
  DISTRT_ON_CUDA(ctx, cuda::adam(ctx, p, g, pm, pv, *attr, step, decoupled, n));
  distrt_adam_attr a = *attr;
  float bc1 = 1.0f - std::pow(a.beta1, static_cast<float>(step));
  float bc2 = 1.0f - std::pow(a.beta2, static_cast<float>(step));
  float stepSize = a.lr / bc1, bc2Sqrt = std::sqrt(bc2);
  cpu::parallelFor(n, [&](int64_t i) {
    float gi = g[i];
    if (decoupled)
      p[i] *= 1.0f - a.lr * a.weight_decay;
    else
      gi += a.weight_decay * p[i];
    pm[i] = a.beta1 * pm[i] + (1.0f - a.beta1) * gi;
    pv[i] = a.beta2 * pv[i] + (1.0f - a.beta2) * gi * gi;
    p[i] -= stepSize * pm[i] / (std::sqrt(pv[i]) / bc2Sqrt + a.eps);
  });
  return DISTRT_OK;
}

distrt_status dropoutCommon(const char *fn, const char *xName,
                            const char *yName, distrt_context *ctx,
                            const distrt_tensor *x, const distrt_tensor *y,
                            const distrt_tensor *mask, float p, uint64_t seed,
                            uint64_t offset) {
  Checker c(ctx, fn);
  DISTRT_TRY(c.context());
  DISTRT_TRY(c.tensor(xName, x, DISTRT_F32));
  DISTRT_TRY(c.tensor(yName, y, DISTRT_F32));
  DISTRT_TRY(c.same(xName, x, yName, y));
  DISTRT_TRY(c.optTensor("mask", mask, DISTRT_U8));
  if (mask)
    DISTRT_TRY(c.same(xName, x, "mask", mask));
  if (!(p >= 0.0f && p < 1.0f))
    return c.fail(DISTRT_ERROR_INVALID_ARGUMENT, "p is ", p,
                  "; the drop probability must be in [0, 1)");
  int64_t n = distrt_numel(x);
  const float *px = cpu::f32(x);
  float *py = cpu::f32(y);
  uint8_t *pm = mask ? static_cast<uint8_t *>(mask->data) : nullptr;
  DISTRT_ON_CUDA(ctx, cuda::dropout(ctx, px, py, pm, n, p, seed, offset));
  float keepScale = 1.0f / (1.0f - p);
  cpu::parallelFor(n, [&](int64_t i) {
    bool keep = dropoutUniform(seed, offset + i) >= p;
    py[i] = keep ? px[i] * keepScale : 0.0f;
    if (pm)
      pm[i] = keep;
  });
  return DISTRT_OK;
}

} // namespace

extern "C" {

distrt_status distrt_sgd_step(distrt_context *ctx, const distrt_tensor *param,
                              const distrt_tensor *grad,
                              const distrt_tensor *momentum_buf,
                              const distrt_sgd_attr *attr, int64_t step) {
  const char *fn = "distrt_sgd_step";
  Checker c(ctx, fn);
  DISTRT_TRY(c.context());
  DISTRT_TRY(c.pointer("attr", attr));
  DISTRT_TRY(checkStep(c, step));
  DISTRT_TRY(checkParamGrad(c, param, grad));
  if (attr->momentum != 0.0f && !momentum_buf)
    return c.fail(DISTRT_ERROR_INVALID_ARGUMENT,
                  "momentum is ", attr->momentum,
                  " but momentum_buf is NULL; pass a buffer shaped like param");
  if (momentum_buf) {
    DISTRT_TRY(c.tensor("momentum_buf", momentum_buf, DISTRT_F32));
    DISTRT_TRY(c.same("param", param, "momentum_buf", momentum_buf));
  }
  if (attr->nesterov && (attr->momentum <= 0.0f || attr->dampening != 0.0f))
    return c.fail(DISTRT_ERROR_INVALID_ARGUMENT,
                  "nesterov needs momentum > 0 and dampening == 0");
  int64_t n = distrt_numel(param);
  float *p = cpu::f32(param);
  const float *g = cpu::f32(grad);
  float *buf = momentum_buf ? cpu::f32(momentum_buf) : nullptr;
  DISTRT_ON_CUDA(ctx, cuda::sgd(ctx, p, g, buf, *attr, step, n));
  distrt_sgd_attr a = *attr;
  cpu::parallelFor(n, [&](int64_t i) {
    float d = g[i] + a.weight_decay * p[i];
    if (a.momentum != 0.0f) {
      buf[i] = step == 1 ? d : a.momentum * buf[i] + (1.0f - a.dampening) * d;
      d = a.nesterov ? d + a.momentum * buf[i] : buf[i];
    }
    p[i] -= a.lr * d;
  });
  return DISTRT_OK;
}

distrt_status distrt_adam_step(distrt_context *ctx, const distrt_tensor *param,
                               const distrt_tensor *grad,
                               const distrt_tensor *exp_avg,
                               const distrt_tensor *exp_avg_sq,
                               const distrt_adam_attr *attr, int64_t step) {
  return adamCommon("distrt_adam_step", ctx, param, grad, exp_avg, exp_avg_sq,
                    attr, step, false);
}

distrt_status distrt_adamw_step(distrt_context *ctx, const distrt_tensor *param,
                                const distrt_tensor *grad,
                                const distrt_tensor *exp_avg,
                                const distrt_tensor *exp_avg_sq,
                                const distrt_adam_attr *attr, int64_t step) {
  return adamCommon("distrt_adamw_step", ctx, param, grad, exp_avg, exp_avg_sq,
                    attr, step, true);
}

distrt_status distrt_dropout(distrt_context *ctx, const distrt_tensor *x,
                             const distrt_tensor *y, const distrt_tensor *mask,
                             float p, uint64_t seed, uint64_t offset) {
  return dropoutCommon("distrt_dropout", "x", "y", ctx, x, y, mask, p, seed,
                       offset);
}

distrt_status distrt_dropout_bwd(distrt_context *ctx, const distrt_tensor *dy,
                                 const distrt_tensor *dx, float p,
                                 uint64_t seed, uint64_t offset) {
  // The mask is a pure function of (seed, offset + i): regenerate it.
  return dropoutCommon("distrt_dropout_bwd", "dy", "dx", ctx, dy, dx, nullptr,
                       p, seed, offset);
}

distrt_status distrt_fill(distrt_context *ctx, const distrt_tensor *x,
                          float value) {
  const char *fn = "distrt_fill";
  Checker c(ctx, fn);
  DISTRT_TRY(c.context());
  DISTRT_TRY(c.floatTensor("x", x));
  int64_t n = distrt_numel(x);
  DISTRT_ON_CUDA(ctx, cuda::fill(ctx, x->data, x->dtype, value, n));
  cpu::parallelFor(n, [&](int64_t i) { storeAs(x->data, x->dtype, i, value); });
  return DISTRT_OK;
}

distrt_status distrt_accumulate(distrt_context *ctx, const distrt_tensor *acc,
                                const distrt_tensor *x, float scale) {
  const char *fn = "distrt_accumulate";
  Checker c(ctx, fn);
  DISTRT_TRY(c.context());
  DISTRT_TRY(c.tensor("acc", acc, DISTRT_F32));
  DISTRT_TRY(c.floatTensor("x", x));
  DISTRT_TRY(c.same("acc", acc, "x", x));
  int64_t n = distrt_numel(x);
  float *pa = cpu::f32(acc);
  DISTRT_ON_CUDA(ctx, cuda::accumulate(ctx, pa, x->data, x->dtype, scale, n));
  cpu::parallelFor(
      n, [&](int64_t i) { pa[i] += scale * loadAs(x->data, x->dtype, i); });
  return DISTRT_OK;
}

distrt_status distrt_cast(distrt_context *ctx, const distrt_tensor *x,
                          const distrt_tensor *y) {
  const char *fn = "distrt_cast";
  Checker c(ctx, fn);
  DISTRT_TRY(c.context());
  DISTRT_TRY(c.floatTensor("x", x));
  DISTRT_TRY(c.floatTensor("y", y));
  DISTRT_TRY(c.same("x", x, "y", y));
  int64_t n = distrt_numel(x);
  DISTRT_ON_CUDA(ctx,
                 cuda::cast(ctx, x->data, x->dtype, y->data, y->dtype, n));
  cpu::parallelFor(n, [&](int64_t i) {
    storeAs(y->data, y->dtype, i, loadAs(x->data, x->dtype, i));
  });
  return DISTRT_OK;
}

distrt_status distrt_unscale_check(distrt_context *ctx,
                                   const distrt_tensor *grad, float inv_scale,
                                   const distrt_tensor *found_inf) {
  const char *fn = "distrt_unscale_check";
  Checker c(ctx, fn);
  DISTRT_TRY(c.context());
  DISTRT_TRY(c.floatTensor("grad", grad));
  DISTRT_TRY(c.tensor("found_inf", found_inf, DISTRT_I32));
  DISTRT_TRY(c.scalar("found_inf", found_inf));
  int64_t n = distrt_numel(grad);
  auto *flag = static_cast<int32_t *>(found_inf->data);
  DISTRT_ON_CUDA(ctx, cuda::unscaleCheck(ctx, grad->data, grad->dtype,
                                         inv_scale, flag, n));
  int32_t bad = 0;
#pragma omp parallel for reduction(| : bad) if (n > 4096)
  for (int64_t i = 0; i < n; ++i) {
    float v = loadAs(grad->data, grad->dtype, i) * inv_scale;
    bad |= !std::isfinite(v);
    storeAs(grad->data, grad->dtype, i, v);
  }
  if (bad)
    *flag = 1;
  return DISTRT_OK;
}

} // extern "C"
