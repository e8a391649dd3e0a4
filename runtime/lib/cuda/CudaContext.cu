//===- CudaContext.cu - CUDA contexts, memory, gemm, training --*- C++ -*-===//
//
// Context lifetime, memory, cuBLAS gemm, and the elementwise training
// kernels (optimizers, dropout, casts, loss-scale checks) of the CUDA
// backend.
//
//===----------------------------------------------------------------------===//
#include "cuda/CudaState.h"

#include <climits>

namespace distrt {
namespace cuda {

int32_t deviceCount() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError(); // clear the sticky "no driver" error
    return 0;
  }
  return n;
}

distrt_status createState(distrt_context *ctx, int32_t device) {
  const char *fn = "distrt_context_create";
  int n = deviceCount();
  if (n == 0)
    return setError(ctx, DISTRT_ERROR_NO_DEVICE,
                    concat(fn, ": no CUDA device is visible (driver missing or "
                               "CUDA_VISIBLE_DEVICES empty); use "
                               "DISTRT_BACKEND_CPU"));
  if (device < 0 || device >= n)
    return setError(ctx, DISTRT_ERROR_INVALID_ARGUMENT,
                    concat(fn, ": CUDA device ", device, " does not exist; ",
                           n, " device(s) visible"));
  ctx->cuda = new CudaState();
  CudaState &st = *ctx->cuda;
  st.device = device;
  DISTRT_CUDA_TRY(ctx, cudaSetDevice(device));
  DISTRT_CUDA_TRY(ctx,
                  cudaStreamCreateWithFlags(&st.stream, cudaStreamNonBlocking));
  st.ownsStream = true;
  if (cublasCreate(&st.blas) != CUBLAS_STATUS_SUCCESS)
    return setError(ctx, DISTRT_ERROR_BACKEND,
                    concat(fn, ": cublasCreate failed on device ", device));
  cublasSetStream(st.blas, st.stream);
  return DISTRT_OK;
}

void destroyState(distrt_context *ctx) {
  CudaState *st = ctx->cuda;
  cudaSetDevice(st->device);
  if (st->blas)
    cublasDestroy(st->blas);
#ifdef DISTRT_HAVE_CUDNN
  destroyDnn(*st);
#endif
  if (st->ownsStream && st->stream)
    cudaStreamDestroy(st->stream);
  delete st;
  ctx->cuda = nullptr;
}

distrt_status setStream(distrt_context *ctx, void *stream) {
  CudaState &st = state(ctx);
  DISTRT_CUDA_ENTER(ctx);
  if (st.ownsStream)
    cudaStreamDestroy(st.stream);
  st.ownsStream = false;
  st.stream = static_cast<cudaStream_t>(stream);
  cublasSetStream(st.blas, st.stream);
  return DISTRT_OK;
}

distrt_status synchronize(distrt_context *ctx) {
  DISTRT_CUDA_ENTER(ctx);
  DISTRT_CUDA_TRY(ctx, cudaStreamSynchronize(state(ctx).stream));
  return DISTRT_OK;
}

distrt_status alloc(distrt_context *ctx, size_t bytes, void **out) {
  DISTRT_CUDA_ENTER(ctx);
  cudaError_t e = cudaMallocAsync(out, bytes ? bytes : 1, state(ctx).stream);
  if (e == cudaErrorMemoryAllocation)
    return setError(ctx, DISTRT_ERROR_OUT_OF_MEMORY,
                    concat("distrt_alloc: out of device memory allocating ",
                           bytes, " bytes"));
  DISTRT_CUDA_TRY(ctx, e);
  return DISTRT_OK;
}

distrt_status release(distrt_context *ctx, void *ptr) {
  DISTRT_CUDA_ENTER(ctx);
  if (ptr)
    DISTRT_CUDA_TRY(ctx, cudaFreeAsync(ptr, state(ctx).stream));
  return DISTRT_OK;
}

distrt_status copy(distrt_context *ctx, void *dst, const void *src,
                   size_t bytes, distrt_copy_kind kind) {
  DISTRT_CUDA_ENTER(ctx);
  cudaMemcpyKind k = kind == DISTRT_COPY_HOST_TO_DEVICE ? cudaMemcpyHostToDevice
                     : kind == DISTRT_COPY_DEVICE_TO_HOST
                         ? cudaMemcpyDeviceToHost
                         : cudaMemcpyDeviceToDevice;
  DISTRT_CUDA_TRY(ctx, cudaMemcpyAsync(dst, src, bytes, k, state(ctx).stream));
  // Host buffers may be reused as soon as this returns.
  if (kind != DISTRT_COPY_DEVICE_TO_DEVICE)
    DISTRT_CUDA_TRY(ctx, cudaStreamSynchronize(state(ctx).stream));
  return DISTRT_OK;
}

//===----------------------------------------------------------------------===//
// GEMM
//===----------------------------------------------------------------------===//

__global__ void addBiasKernel(void *c, const void *bias, distrt_dtype dt,
                              int64_t rows, int64_t n) {
  DISTRT_GRID_LOOP(i, rows * n) {
    storeAs(c, dt, i, loadAs(c, dt, i) + loadAs(bias, dt, i % n));
  }
}

distrt_status gemm(distrt_context *ctx, distrt_dtype dt, int64_t batch,
                   int64_t m, int64_t n, int64_t k, const void *a,
                   bool transA, int64_t strideA, const void *b, bool transB,
                   int64_t strideB, void *c, float alpha, float beta,
                   const void *bias) {
  if (m > INT_MAX || n > INT_MAX || k > INT_MAX || batch > INT_MAX)
    return setError(ctx, DISTRT_ERROR_UNSUPPORTED,
                    "distrt_matmul: a dimension exceeds cuBLAS's 32-bit "
                    "limit; split the matmul");
  DISTRT_CUDA_ENTER(ctx);
  CudaState &st = state(ctx);
  if (m == 0 || n == 0)
    return DISTRT_OK;
  cudaDataType_t type = dt == DISTRT_F16    ? CUDA_R_16F
                        : dt == DISTRT_BF16 ? CUDA_R_16BF
                                            : CUDA_R_32F;
  // Row-major C = A B is column-major C^T = B^T A^T: swap the operands.
  // f32 keeps full-precision FMA (no TF32); halves accumulate in f32.
  int lda = transA ? int(m) : int(k), ldb = transB ? int(k) : int(n);
  cublasStatus_t s = cublasGemmStridedBatchedEx(
      st.blas, transB ? CUBLAS_OP_T : CUBLAS_OP_N,
      transA ? CUBLAS_OP_T : CUBLAS_OP_N, int(n), int(m), int(k), &alpha, b,
      type, ldb, strideB, a, type, lda, strideA, &beta, c, type, int(n),
      m * n, int(batch), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  if (s != CUBLAS_STATUS_SUCCESS)
    return setError(ctx, DISTRT_ERROR_BACKEND,
                    concat("distrt_matmul: cublasGemmStridedBatchedEx failed "
                           "with status ",
                           int(s), " for M=", m, " N=", n, " K=", k));
  if (bias) {
    addBiasKernel<<<gridFor(batch * m * n), kThreads, 0, st.stream>>>(
        c, bias, dt, batch * m, n);
    DISTRT_CUDA_LAUNCHED(ctx);
  }
  return DISTRT_OK;
}

//===----------------------------------------------------------------------===//
// Training elementwise kernels
//===----------------------------------------------------------------------===//

__global__ void sgdKernel(float *p, const float *g, float *buf,
                          distrt_sgd_attr a, int64_t step, int64_t n) {
  DISTRT_GRID_LOOP(i, n) {
    float d = g[i] + a.weight_decay * p[i];
    if (a.momentum != 0.0f) {
      buf[i] = step == 1 ? d : a.momentum * buf[i] + (1.0f - a.dampening) * d;
      d = a.nesterov ? d + a.momentum * buf[i] : buf[i];
    }
    p[i] -= a.lr * d;
  }
}

distrt_status sgd(distrt_context *ctx, float *param, const float *grad,
                  float *buf, const distrt_sgd_attr &attr, int64_t step,
                  int64_t n) {
  DISTRT_CUDA_ENTER(ctx);
  sgdKernel<<<gridFor(n), kThreads, 0, state(ctx).stream>>>(param, grad, buf,
                                                            attr, step, n);
  DISTRT_CUDA_LAUNCHED(ctx);
  return DISTRT_OK;
}

__global__ void adamKernel(float *p, const float *g, float *m, float *v,
                           distrt_adam_attr a, float stepSize, float bc2Sqrt,
                           bool decoupled, int64_t n) {
  DISTRT_GRID_LOOP(i, n) {
    float gi = g[i];
    if (decoupled)
      p[i] *= 1.0f - a.lr * a.weight_decay;
    else
      gi += a.weight_decay * p[i];
    m[i] = a.beta1 * m[i] + (1.0f - a.beta1) * gi;
    v[i] = a.beta2 * v[i] + (1.0f - a.beta2) * gi * gi;
    p[i] -= stepSize * m[i] / (sqrtf(v[i]) / bc2Sqrt + a.eps);
  }
}

distrt_status adam(distrt_context *ctx, float *param, const float *grad,
                   float *m, float *v, const distrt_adam_attr &attr,
                   int64_t step, bool decoupled, int64_t n) {
  DISTRT_CUDA_ENTER(ctx);
  float bc1 = 1.0f - powf(attr.beta1, float(step));
  float bc2 = 1.0f - powf(attr.beta2, float(step));
  adamKernel<<<gridFor(n), kThreads, 0, state(ctx).stream>>>(
      param, grad, m, v, attr, attr.lr / bc1, sqrtf(bc2), decoupled, n);
  DISTRT_CUDA_LAUNCHED(ctx);
  return DISTRT_OK;
}

__global__ void dropoutKernel(const float *x, float *y, uint8_t *mask,
                              int64_t n, float p, uint64_t seed,
                              uint64_t offset) {
  float keepScale = 1.0f / (1.0f - p);
  DISTRT_GRID_LOOP(i, n) {
    bool keep = dropoutUniform(seed, offset + i) >= p;
    y[i] = keep ? x[i] * keepScale : 0.0f;
    if (mask)
      mask[i] = keep;
  }
}

distrt_status dropout(distrt_context *ctx, const float *x, float *y,
                      uint8_t *mask, int64_t n, float p, uint64_t seed,
                      uint64_t offset) {
  DISTRT_CUDA_ENTER(ctx);
  dropoutKernel<<<gridFor(n), kThreads, 0, state(ctx).stream>>>(
      x, y, mask, n, p, seed, offset);
  DISTRT_CUDA_LAUNCHED(ctx);
  return DISTRT_OK;
}

__global__ void fillKernel(void *x, distrt_dtype dt, float v, int64_t n) {
  DISTRT_GRID_LOOP(i, n) { storeAs(x, dt, i, v); }
}

distrt_status fill(distrt_context *ctx, void *x, distrt_dtype dtype,
                   float value, int64_t n) {
  DISTRT_CUDA_ENTER(ctx);
  fillKernel<<<gridFor(n), kThreads, 0, state(ctx).stream>>>(x, dtype, value,
                                                             n);
  DISTRT_CUDA_LAUNCHED(ctx);
  return DISTRT_OK;
}

__global__ void accumulateKernel(float *acc, const void *x, distrt_dtype dt,
                                 float scale, int64_t n) {
  DISTRT_GRID_LOOP(i, n) { acc[i] += scale * loadAs(x, dt, i); }
}

distrt_status accumulate(distrt_context *ctx, float *acc, const void *x,
                         distrt_dtype dtype, float scale, int64_t n) {
  DISTRT_CUDA_ENTER(ctx);
  accumulateKernel<<<gridFor(n), kThreads, 0, state(ctx).stream>>>(
      acc, x, dtype, scale, n);
  DISTRT_CUDA_LAUNCHED(ctx);
  return DISTRT_OK;
}

__global__ void castKernel(const void *x, distrt_dtype from, void *y,
                           distrt_dtype to, int64_t n) {
  DISTRT_GRID_LOOP(i, n) { storeAs(y, to, i, loadAs(x, from, i)); }
}

distrt_status cast(distrt_context *ctx, const void *x, distrt_dtype from,
                   void *y, distrt_dtype to, int64_t n) {
  DISTRT_CUDA_ENTER(ctx);
  castKernel<<<gridFor(n), kThreads, 0, state(ctx).stream>>>(x, from, y, to,
                                                             n);
  DISTRT_CUDA_LAUNCHED(ctx);
  return DISTRT_OK;
}

__global__ void unscaleKernel(void *g, distrt_dtype dt, float inv,
                              int32_t *found, int64_t n) {
  DISTRT_GRID_LOOP(i, n) {
    float v = loadAs(g, dt, i) * inv;
    if (!isfinite(v))
      *found = 1; // benign race: every writer stores 1
    storeAs(g, dt, i, v);
  }
}

distrt_status unscaleCheck(distrt_context *ctx, void *grad, distrt_dtype dtype,
                           float invScale, int32_t *foundInf, int64_t n) {
  DISTRT_CUDA_ENTER(ctx);
  unscaleKernel<<<gridFor(n), kThreads, 0, state(ctx).stream>>>(
      grad, dtype, invScale, foundInf, n);
  DISTRT_CUDA_LAUNCHED(ctx);
  return DISTRT_OK;
}

} // namespace cuda
} // namespace distrt
