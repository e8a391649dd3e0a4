//===- RmsNorm.cpp - RMS normalization (plain loops) -----------*- C++ -*-===//
//
// oneDNN 2.x has no RMS norm, so forward and both gradients are row loops.
// The backward recomputes the per-row 1/rms from x (one extra read of a row
// that is loaded anyway) instead of carrying a saved-statistics tensor.
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

namespace {

distrt_status checkRms(Checker &c, const distrt_tensor *x,
                       const char *paramName, const distrt_tensor *param,
                       int64_t &rows, int64_t &d) {
  DISTRT_TRY(c.tensor("x", x, DISTRT_F32));
  DISTRT_TRY(c.minRank("x", x, 1));
  d = x->dims[x->rank - 1];
  rows = d ? distrt_numel(x) / d : 0;
  if (param) {
    DISTRT_TRY(c.tensor(paramName, param, DISTRT_F32));
    DISTRT_TRY(c.shape(paramName, param, {d}));
  }
  return DISTRT_OK;
}

float rowRstd(const float *row, int64_t d, float eps) {
  double ss = 0;
  for (int64_t j = 0; j < d; ++j)
    ss += double(row[j]) * row[j];
  return float(1.0 / std::sqrt(ss / double(d) + eps));
}

} // namespace

extern "C" distrt_status distrt_rmsnorm_fwd(distrt_context *ctx,
                                            const distrt_tensor *x,
                                            const distrt_tensor *scale,
                                            const distrt_tensor *y,
                                            float epsilon) {
  const char *fn = "distrt_rmsnorm_fwd";
  Checker c(ctx, fn);
  DISTRT_TRY(c.context());
  int64_t rows, d;
  DISTRT_TRY(checkRms(c, x, "scale", scale, rows, d));
  DISTRT_TRY(c.tensor("y", y, DISTRT_F32));
  DISTRT_TRY(c.same("x", x, "y", y));
  const float *px = cpu::f32(x), *g = scale ? cpu::f32(scale) : nullptr;
  float *py = cpu::f32(y);
  DISTRT_ON_CUDA(ctx, cuda::layerNorm(ctx, px, g, nullptr, py, nullptr,
                                      nullptr, rows, d, epsilon, true));
  cpu::parallelFor(rows, [&](int64_t r) {
    const float *row = px + r * d;
    float rstd = rowRstd(row, d, epsilon);
    for (int64_t j = 0; j < d; ++j)
      py[r * d + j] = row[j] * rstd * (g ? g[j] : 1.0f);
  });
  return DISTRT_OK;
}

extern "C" distrt_status
distrt_rmsnorm_bwd_data(distrt_context *ctx, const distrt_tensor *x,
                        const distrt_tensor *dy, const distrt_tensor *scale,
                        const distrt_tensor *dx, float epsilon) {
  const char *fn = "distrt_rmsnorm_bwd_data";
  Checker c(ctx, fn);
  DISTRT_TRY(c.context());
  int64_t rows, d;
  DISTRT_TRY(checkRms(c, x, "scale", scale, rows, d));
  DISTRT_TRY(c.tensor("dy", dy, DISTRT_F32));
  DISTRT_TRY(c.tensor("dx", dx, DISTRT_F32));
  DISTRT_TRY(c.same("x", x, "dy", dy));
  DISTRT_TRY(c.same("x", x, "dx", dx));
  const float *px = cpu::f32(x), *pdy = cpu::f32(dy);
  const float *g = scale ? cpu::f32(scale) : nullptr;
  float *pdx = cpu::f32(dx);
  DISTRT_ON_CUDA(ctx, cuda::layerNormBwdData(ctx, px, pdy, g, pdx, rows, d,
                                             epsilon, true));
  // y = x * r * g with r = (mean(x^2) + eps)^-1/2:
  // dx = r * (g*dy - x * r^2 * mean(g*dy*x)).
  cpu::parallelFor(rows, [&](int64_t r) {
    const float *row = px + r * d, *drow = pdy + r * d;
    float rstd = rowRstd(row, d, epsilon);
    double dot = 0;
    for (int64_t j = 0; j < d; ++j)
      dot += double(drow[j]) * (g ? g[j] : 1.0f) * row[j];
    float k = float(dot / double(d)) * rstd * rstd;
    for (int64_t j = 0; j < d; ++j)
      pdx[r * d + j] = rstd * (drow[j] * (g ? g[j] : 1.0f) - row[j] * k);
  });
  return DISTRT_OK;
}

extern "C" distrt_status
distrt_rmsnorm_bwd_weight(distrt_context *ctx, const distrt_tensor *x,
                          const distrt_tensor *dy, const distrt_tensor *dscale,
                          float epsilon, int32_t accumulate) {
  const char *fn = "distrt_rmsnorm_bwd_weight";
  Checker c(ctx, fn);
  DISTRT_TRY(c.context());
  DISTRT_TRY(c.pointer("dscale", dscale));
  int64_t rows, d;
  DISTRT_TRY(checkRms(c, x, "dscale", dscale, rows, d));
  DISTRT_TRY(c.tensor("dy", dy, DISTRT_F32));
  DISTRT_TRY(c.same("x", x, "dy", dy));
  const float *px = cpu::f32(x), *pdy = cpu::f32(dy);
  float *ds = cpu::f32(dscale);
  DISTRT_ON_CUDA(ctx, cuda::layerNormBwdWeight(ctx, px, pdy, ds, nullptr, rows,
                                               d, epsilon, true, accumulate));
  std::vector<float> rstd(rows);
  cpu::parallelFor(rows,
                   [&](int64_t r) { rstd[r] = rowRstd(px + r * d, d, epsilon); });
  cpu::parallelFor(d, [&](int64_t j) {
    double s = 0;
    for (int64_t r = 0; r < rows; ++r)
      s += double(pdy[r * d + j]) * px[r * d + j] * rstd[r];
    ds[j] = (accumulate ? ds[j] : 0.0f) + float(s);
  });
  return DISTRT_OK;
}
