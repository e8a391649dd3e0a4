//===- CudaState.h - CUDA backend state and launch helpers -----*- C++ -*-===//
//
// Only included by .cu files. Holds the stream and cuBLAS handle of a CUDA
// context, the error translation (every CUDA/cuBLAS failure becomes a
// DISTRT_ERROR_BACKEND status with the call and the library's message) and
// the shared device helpers (grid sizing, block reductions).
//
//===----------------------------------------------------------------------===//
#ifndef DISTRT_LIB_CUDA_CUDASTATE_H
#define DISTRT_LIB_CUDA_CUDASTATE_H

#include "Internal.h"
#include "ScalarOps.h"
#include "cuda/CudaApi.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

namespace distrt {
namespace cuda {

struct CudaState {
  int device = 0;
  cudaStream_t stream = nullptr;
  bool ownsStream = false;
  cublasHandle_t blas = nullptr;
  void *dnn = nullptr; ///< cudnnHandle_t, created on first use
};

inline CudaState &state(distrt_context *ctx) { return *ctx->cuda; }

inline distrt_status cudaFail(distrt_context *ctx, const char *fn,
                              cudaError_t err) {
  return setError(ctx, DISTRT_ERROR_BACKEND,
                  concat(fn, ": CUDA error ", cudaGetErrorName(err), ": ",
                         cudaGetErrorString(err),
                         "; check device pointers and sizes"));
}

#define DISTRT_CUDA_TRY(ctx, expr)                                            \
  do {                                                                        \
    cudaError_t distrtErr_ = (expr);                                          \
    if (distrtErr_ != cudaSuccess)                                            \
      return ::distrt::cuda::cudaFail((ctx), __func__, distrtErr_);           \
  } while (0)

/// Makes the context's device current (contexts may move between threads).
#define DISTRT_CUDA_ENTER(ctx)                                                \
  DISTRT_CUDA_TRY(ctx, cudaSetDevice(state(ctx).device))

/// Checks the launch that just happened.
#define DISTRT_CUDA_LAUNCHED(ctx) DISTRT_CUDA_TRY(ctx, cudaGetLastError())

constexpr int kThreads = 256;

inline unsigned gridFor(int64_t n) {
  int64_t blocks = (n + kThreads - 1) / kThreads;
  if (blocks < 1)
    blocks = 1;
  return static_cast<unsigned>(blocks > 65535 * 8 ? 65535 * 8 : blocks);
}

/// Grid-stride loop over [0, n).
#define DISTRT_GRID_LOOP(i, n)                                                \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n);   \
       i += int64_t(blockDim.x) * gridDim.x)

/// Sum over the block (blockDim.x a multiple of 32, <= 1024); every thread
/// gets the result.
__device__ __forceinline__ float blockSum(float v) {
  __shared__ float partial[32];
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0)
    partial[warp] = v;
  __syncthreads();
  int warps = (blockDim.x + 31) >> 5;
  v = lane < warps ? partial[lane] : 0.0f;
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float blockMax(float v) {
  __shared__ float partial[32];
  for (int o = 16; o > 0; o >>= 1)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0)
    partial[warp] = v;
  __syncthreads();
  int warps = (blockDim.x + 31) >> 5;
  v = lane < warps ? partial[lane] : -INFINITY;
  for (int o = 16; o > 0; o >>= 1)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

__device__ __forceinline__ float loadAs(const void *p, distrt_dtype dt,
                                        int64_t i) {
  if (dt == DISTRT_F16)
    return halfToFloat(static_cast<const uint16_t *>(p)[i]);
  if (dt == DISTRT_BF16)
    return bf16ToFloat(static_cast<const uint16_t *>(p)[i]);
  return static_cast<const float *>(p)[i];
}

__device__ __forceinline__ void storeAs(void *p, distrt_dtype dt, int64_t i,
                                        float v) {
  if (dt == DISTRT_F16)
    static_cast<uint16_t *>(p)[i] = floatToHalf(v);
  else if (dt == DISTRT_BF16)
    static_cast<uint16_t *>(p)[i] = floatToBf16(v);
  else
    static_cast<float *>(p)[i] = v;
}

} // namespace cuda
} // namespace distrt

#endif // DISTRT_LIB_CUDA_CUDASTATE_H
