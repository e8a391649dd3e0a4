//===- CudaNorm.cu - Softmax, layer/RMS norm and losses --------*- C++ -*-===//
//
// Row kernels: one block per row with block-wide reductions when the row is
// contiguous (softmax over the last axis, norms, cross-entropy), one thread
// per (outer, inner) pair for softmax over an inner axis. Weight gradients
// of the norms stage per-row statistics, then sum over rows per column.
//
//===----------------------------------------------------------------------===//
#include "cuda/CudaState.h"

namespace distrt {
namespace cuda {

namespace {

__global__ void softmaxRowKernel(const float *x, float *y, int64_t len,
                                 bool log) {
  const float *row = x + blockIdx.x * len;
  float *out = y + blockIdx.x * len;
  float mx = -INFINITY;
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x)
    mx = fmaxf(mx, row[j]);
  mx = blockMax(mx);
  float sum = 0.0f;
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x)
    sum += expf(row[j] - mx);
  sum = blockSum(sum);
  float lse = logf(sum);
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x)
    out[j] = log ? row[j] - mx - lse : expf(row[j] - mx) / sum;
}

__global__ void softmaxStridedKernel(const float *x, float *y, int64_t outer,
                                     int64_t len, int64_t inner, bool log) {
  DISTRT_GRID_LOOP(t, outer * inner) {
    int64_t base = (t / inner) * len * inner + t % inner;
    float mx = -INFINITY, sum = 0.0f;
    for (int64_t j = 0; j < len; ++j)
      mx = fmaxf(mx, x[base + j * inner]);
    for (int64_t j = 0; j < len; ++j)
      sum += expf(x[base + j * inner] - mx);
    for (int64_t j = 0; j < len; ++j) {
      float v = x[base + j * inner] - mx;
      y[base + j * inner] = log ? v - logf(sum) : expf(v) / sum;
    }
  }
}

/// softmax: dx = y * (dy - sum(dy*y)); log-softmax: dx = dy - exp(y)*sum(dy).
__global__ void softmaxBwdKernel(const float *y, const float *dy, float *dx,
                                 int64_t outer, int64_t len, int64_t inner,
                                 bool log) {
  DISTRT_GRID_LOOP(t, outer * inner) {
    int64_t base = (t / inner) * len * inner + t % inner;
    float s = 0.0f;
    for (int64_t j = 0; j < len; ++j) {
      int64_t k = base + j * inner;
      s += log ? dy[k] : dy[k] * y[k];
    }
    for (int64_t j = 0; j < len; ++j) {
      int64_t k = base + j * inner;
      dx[k] = log ? dy[k] - expf(y[k]) * s : y[k] * (dy[k] - s);
    }
  }
}

/// Mean (0 for RMS) and 1/sqrt(var + eps) of one row, on every thread.
__device__ void rowStats(const float *row, int64_t d, float eps, bool rms,
                         float &mean, float &rstd, float &var) {
  float s = 0.0f;
  if (!rms) {
    for (int64_t j = threadIdx.x; j < d; j += blockDim.x)
      s += row[j];
    s = blockSum(s);
  }
  mean = rms ? 0.0f : s / float(d);
  float q = 0.0f;
  for (int64_t j = threadIdx.x; j < d; j += blockDim.x) {
    float c = row[j] - mean;
    q += c * c;
  }
  var = blockSum(q) / float(d);
  rstd = rsqrtf(var + eps);
}

__global__ void normKernel(const float *x, const float *g, const float *b,
                           float *y, float *meanOut, float *varOut, int64_t d,
                           float eps, bool rms) {
  const float *row = x + blockIdx.x * d;
  float mean, rstd, var;
  rowStats(row, d, eps, rms, mean, rstd, var);
  for (int64_t j = threadIdx.x; j < d; j += blockDim.x)
    y[blockIdx.x * d + j] =
        (row[j] - mean) * rstd * (g ? g[j] : 1.0f) + (b ? b[j] : 0.0f);
  if (threadIdx.x == 0) {
    if (meanOut)
      meanOut[blockIdx.x] = mean;
    if (varOut)
      varOut[blockIdx.x] = var;
  }
}

__global__ void normBwdDataKernel(const float *x, const float *dy,
                                  const float *g, float *dx, int64_t d,
                                  float eps, bool rms) {
  const float *row = x + blockIdx.x * d, *drow = dy + blockIdx.x * d;
  float mean, rstd, var;
  rowStats(row, d, eps, rms, mean, rstd, var);
  float s1 = 0.0f, s2 = 0.0f;
  for (int64_t j = threadIdx.x; j < d; j += blockDim.x) {
    float gx = drow[j] * (g ? g[j] : 1.0f);
    s1 += gx;
    s2 += gx * (row[j] - mean) * rstd;
  }
  s1 = blockSum(s1) / float(d);
  s2 = blockSum(s2) / float(d);
  for (int64_t j = threadIdx.x; j < d; j += blockDim.x) {
    float gx = drow[j] * (g ? g[j] : 1.0f);
    float xhat = (row[j] - mean) * rstd;
    dx[blockIdx.x * d + j] = rstd * (gx - (rms ? 0.0f : s1) - xhat * s2);
  }
}

__global__ void rowStatsKernel(const float *x, float *mean, float *rstd,
                               int64_t d, float eps, bool rms) {
  float m, r, v;
  rowStats(x + blockIdx.x * d, d, eps, rms, m, r, v);
  if (threadIdx.x == 0) {
    mean[blockIdx.x] = m;
    rstd[blockIdx.x] = r;
  }
}

__global__ void normBwdWeightKernel(const float *x, const float *dy,
                                    const float *mean, const float *rstd,
                                    float *dg, float *db, int64_t rows,
                                    int64_t d, bool accumulate) {
  DISTRT_GRID_LOOP(j, d) {
    float sg = 0.0f, sb = 0.0f;
    for (int64_t r = 0; r < rows; ++r) {
      float g = dy[r * d + j];
      sg += g * (x[r * d + j] - mean[r]) * rstd[r];
      sb += g;
    }
    dg[j] = (accumulate ? dg[j] : 0.0f) + sg;
    if (db)
      db[j] = (accumulate ? db[j] : 0.0f) + sb;
  }
}

/// Row blockIdx.x's loss: into rows[blockIdx.x] (reduction none; 0 for an
/// ignored row) or added to acc[0], with acc[1] counting the rows.
template <typename I>
__global__ void crossEntropyKernel(const float *logits, const I *labels,
                                   float *acc, float *rows, int64_t c,
                                   int64_t ignore) {
  int64_t l = static_cast<int64_t>(labels[blockIdx.x]);
  if (l == ignore || l < 0 || l >= c) {
    // Out-of-range labels count as ignored on the device.
    if (rows && threadIdx.x == 0)
      rows[blockIdx.x] = 0.0f;
    return;
  }
  const float *row = logits + blockIdx.x * c;
  float mx = -INFINITY;
  for (int64_t j = threadIdx.x; j < c; j += blockDim.x)
    mx = fmaxf(mx, row[j]);
  mx = blockMax(mx);
  float s = 0.0f;
  for (int64_t j = threadIdx.x; j < c; j += blockDim.x)
    s += expf(row[j] - mx);
  s = blockSum(s);
  if (threadIdx.x == 0) {
    float loss = logf(s) + mx - row[l];
    if (rows) {
      rows[blockIdx.x] = loss;
      return;
    }
    atomicAdd(&acc[0], loss);
    atomicAdd(&acc[1], 1.0f);
  }
}

/// The mean (or the sum) of the rows crossEntropyKernel added up.
__global__ void lossOfKernel(const float *acc, float *loss, bool mean) {
  loss[0] = !mean ? acc[0] : acc[1] > 0.0f ? acc[0] / acc[1] : 0.0f;
}

template <typename I>
__global__ void countKernel(const I *labels, int64_t n, int64_t c,
                            int64_t ignore, float *count) {
  float k = 0.0f;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    int64_t l = static_cast<int64_t>(labels[i]);
    k += (l != ignore && l >= 0 && l < c) ? 1.0f : 0.0f;
  }
  k = blockSum(k);
  if (threadIdx.x == 0)
    count[0] = k;
}

template <typename I>
__global__ void crossEntropyBwdKernel(const float *logits, const I *labels,
                                      const float *dloss, const float *count,
                                      float *dlogits, int64_t c, int64_t ignore,
                                      distrt_loss_reduction reduction) {
  int64_t l = static_cast<int64_t>(labels[blockIdx.x]);
  const float *row = logits + blockIdx.x * c;
  float *drow = dlogits + blockIdx.x * c;
  if (l == ignore || l < 0 || l >= c) {
    for (int64_t j = threadIdx.x; j < c; j += blockDim.x)
      drow[j] = 0.0f;
    return;
  }
  float mx = -INFINITY;
  for (int64_t j = threadIdx.x; j < c; j += blockDim.x)
    mx = fmaxf(mx, row[j]);
  mx = blockMax(mx);
  float s = 0.0f;
  for (int64_t j = threadIdx.x; j < c; j += blockDim.x)
    s += expf(row[j] - mx);
  s = blockSum(s);
  float scale = reduction == DISTRT_LOSS_NONE  ? dloss[blockIdx.x]
                : reduction == DISTRT_LOSS_SUM ? dloss[0]
                                               : dloss[0] / count[0];
  for (int64_t j = threadIdx.x; j < c; j += blockDim.x)
    drow[j] = (expf(row[j] - mx) / s - (j == l ? 1.0f : 0.0f)) * scale;
}

__global__ void sqDiffKernel(const float *x, const float *t, float *acc,
                             int64_t n) {
  float s = 0.0f;
  DISTRT_GRID_LOOP(i, n) {
    float d = x[i] - t[i];
    s += d * d;
  }
  s = blockSum(s);
  if (threadIdx.x == 0)
    atomicAdd(acc, s);
}

__global__ void divideKernel(float *v, float by) { v[0] = by ? v[0] / by : 0; }

__global__ void mseBwdKernel(const float *x, const float *t,
                             const float *dloss, float *dx, int64_t n) {
  float scale = 2.0f * dloss[0] / float(n);
  DISTRT_GRID_LOOP(i, n) { dx[i] = (x[i] - t[i]) * scale; }
}

} // namespace

distrt_status softmax(distrt_context *ctx, const float *x, float *y,
                      int64_t outer, int64_t axis, int64_t inner, bool log) {
  DISTRT_CUDA_ENTER(ctx);
  cudaStream_t s = state(ctx).stream;
  if (outer * axis * inner == 0)
    return DISTRT_OK;
  if (inner == 1)
    softmaxRowKernel<<<unsigned(outer), kThreads, 0, s>>>(x, y, axis, log);
  else
    softmaxStridedKernel<<<gridFor(outer * inner), kThreads, 0, s>>>(
        x, y, outer, axis, inner, log);
  DISTRT_CUDA_LAUNCHED(ctx);
  return DISTRT_OK;
}

distrt_status softmaxBwd(distrt_context *ctx, const float *y, const float *dy,
                         float *dx, int64_t outer, int64_t axis, int64_t inner,
                         bool log) {
  DISTRT_CUDA_ENTER(ctx);
  if (outer * axis * inner == 0)
    return DISTRT_OK;
  softmaxBwdKernel<<<gridFor(outer * inner), kThreads, 0, state(ctx).stream>>>(
      y, dy, dx, outer, axis, inner, log);
  DISTRT_CUDA_LAUNCHED(ctx);
  return DISTRT_OK;
}

distrt_status layerNorm(distrt_context *ctx, const float *x,
                        const float *scale, const float *shift, float *y,
                        float *mean, float *var, int64_t rows, int64_t d,
                        float eps, bool rms) {
  DISTRT_CUDA_ENTER(ctx);
  if (rows == 0 || d == 0)
    return DISTRT_OK;
  normKernel<<<unsigned(rows), kThreads, 0, state(ctx).stream>>>(
      x, scale, shift, y, mean, var, d, eps, rms);
  DISTRT_CUDA_LAUNCHED(ctx);
  return DISTRT_OK;
}

distrt_status layerNormBwdData(distrt_context *ctx, const float *x,
                               const float *dy, const float *scale, float *dx,
                               int64_t rows, int64_t d, float eps, bool rms) {
  DISTRT_CUDA_ENTER(ctx);
  if (rows == 0 || d == 0)
    return DISTRT_OK;
  normBwdDataKernel<<<unsigned(rows), kThreads, 0, state(ctx).stream>>>(
      x, dy, scale, dx, d, eps, rms);
  DISTRT_CUDA_LAUNCHED(ctx);
  return DISTRT_OK;
}

distrt_status layerNormBwdWeight(distrt_context *ctx, const float *x,
                                 const float *dy, float *dscale, float *dshift,
                                 int64_t rows, int64_t d, float eps, bool rms,
                                 bool accumulate) {
  DISTRT_CUDA_ENTER(ctx);
  cudaStream_t s = state(ctx).stream;
  if (d == 0)
    return DISTRT_OK;
  float *stats = nullptr;
  DISTRT_CUDA_TRY(ctx, cudaMallocAsync(reinterpret_cast<void **>(&stats),
                                       sizeof(float) * 2 * (rows + 1), s));
  if (rows > 0)
    rowStatsKernel<<<unsigned(rows), kThreads, 0, s>>>(x, stats,
                                                       stats + rows, d, eps,
                                                       rms);
  normBwdWeightKernel<<<gridFor(d), kThreads, 0, s>>>(
      x, dy, stats, stats + rows, dscale, dshift, rows, d, accumulate);
  cudaError_t launch = cudaGetLastError();
  DISTRT_CUDA_TRY(ctx, cudaFreeAsync(stats, s));
  DISTRT_CUDA_TRY(ctx, launch);
  return DISTRT_OK;
}

distrt_status crossEntropy(distrt_context *ctx, const float *logits,
                           const void *labels, bool i64, float *loss, int64_t n,
                           int64_t c, int64_t ignoreIndex,
                           distrt_loss_reduction reduction) {
  DISTRT_CUDA_ENTER(ctx);
  cudaStream_t s = state(ctx).stream;
  float *acc = nullptr;
  DISTRT_CUDA_TRY(ctx, cudaMallocAsync(reinterpret_cast<void **>(&acc),
                                       2 * sizeof(float), s));
  DISTRT_CUDA_TRY(ctx, cudaMemsetAsync(acc, 0, 2 * sizeof(float), s));
  float *rows = reduction == DISTRT_LOSS_NONE ? loss : nullptr;
  if (n > 0) {
    if (i64)
      crossEntropyKernel<<<unsigned(n), kThreads, 0, s>>>(
          logits, static_cast<const int64_t *>(labels), acc, rows, c,
          ignoreIndex);
    else
      crossEntropyKernel<<<unsigned(n), kThreads, 0, s>>>(
          logits, static_cast<const int32_t *>(labels), acc, rows, c,
          ignoreIndex);
  }
  if (!rows)
    lossOfKernel<<<1, 1, 0, s>>>(acc, loss, reduction == DISTRT_LOSS_MEAN);
  cudaError_t launch = cudaGetLastError();
  DISTRT_CUDA_TRY(ctx, cudaFreeAsync(acc, s));
  DISTRT_CUDA_TRY(ctx, launch);
  return DISTRT_OK;
}

distrt_status crossEntropyBwd(distrt_context *ctx, const float *logits,
                              const void *labels, bool i64, const float *dloss,
                              float *dlogits, int64_t n, int64_t c,
                              int64_t ignoreIndex,
                              distrt_loss_reduction reduction) {
  DISTRT_CUDA_ENTER(ctx);
  cudaStream_t s = state(ctx).stream;
  if (n == 0)
    return DISTRT_OK;
  float *count = nullptr;
  DISTRT_CUDA_TRY(ctx, cudaMallocAsync(reinterpret_cast<void **>(&count),
                                       sizeof(float), s));
  if (i64) {
    auto *l = static_cast<const int64_t *>(labels);
    countKernel<<<1, 1024, 0, s>>>(l, n, c, ignoreIndex, count);
    crossEntropyBwdKernel<<<unsigned(n), kThreads, 0, s>>>(
        logits, l, dloss, count, dlogits, c, ignoreIndex, reduction);
  } else {
    auto *l = static_cast<const int32_t *>(labels);
    countKernel<<<1, 1024, 0, s>>>(l, n, c, ignoreIndex, count);
    crossEntropyBwdKernel<<<unsigned(n), kThreads, 0, s>>>(
        logits, l, dloss, count, dlogits, c, ignoreIndex, reduction);
  }
  cudaError_t launch = cudaGetLastError();
  DISTRT_CUDA_TRY(ctx, cudaFreeAsync(count, s));
  DISTRT_CUDA_TRY(ctx, launch);
  return DISTRT_OK;
}

distrt_status mse(distrt_context *ctx, const float *x, const float *t,
                  float *loss, int64_t n) {
  DISTRT_CUDA_ENTER(ctx);
  cudaStream_t s = state(ctx).stream;
  DISTRT_CUDA_TRY(ctx, cudaMemsetAsync(loss, 0, sizeof(float), s));
  sqDiffKernel<<<gridFor(n), kThreads, 0, s>>>(x, t, loss, n);
  divideKernel<<<1, 1, 0, s>>>(loss, float(n));
  DISTRT_CUDA_LAUNCHED(ctx);
  return DISTRT_OK;
}

distrt_status mseBwd(distrt_context *ctx, const float *x, const float *t,
                     const float *dloss, float *dx, int64_t n) {
  DISTRT_CUDA_ENTER(ctx);
  mseBwdKernel<<<gridFor(n), kThreads, 0, state(ctx).stream>>>(x, t, dloss, dx,
                                                               n);
  DISTRT_CUDA_LAUNCHED(ctx);
  return DISTRT_OK;
}

} // namespace cuda
} // namespace distrt
