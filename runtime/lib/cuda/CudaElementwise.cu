//===- CudaElementwise.cu - Elementwise, fused, reduce, gather -*- C++ -*-===//
//
// Handwritten kernels for unary/binary ops (NumPy broadcasting through
// per-operand strides), the fused-chain interpreter, reductions, transpose
// and the embedding gather / atomic scatter-add. The scalar math comes from
// ScalarOps.h, shared with the CPU backend.
//
//===----------------------------------------------------------------------===//
#include "cuda/CudaState.h"

namespace distrt {
namespace cuda {

namespace {

/// Offset of flat output index `i` in operand `j` of `d`.
__device__ __forceinline__ int64_t offsetOf(const BroadcastDesc &d, int j,
                                            int64_t i) {
  int64_t off = 0;
  for (int k = d.rank - 1; k >= 0; --k) {
    int64_t c = i % d.dims[k];
    i /= d.dims[k];
    off += c * d.strides[j][k];
  }
  return off;
}

int64_t numel(const BroadcastDesc &d) {
  int64_t n = 1;
  for (int i = 0; i < d.rank; ++i)
    n *= d.dims[i];
  return n;
}

__global__ void unaryKernel(int op, const float *x, float *y, int64_t n) {
  DISTRT_GRID_LOOP(i, n) { y[i] = unaryFwd(op, x[i]); }
}

__global__ void unaryBwdKernel(int op, const float *x, const float *dy,
                               float *dx, int64_t n) {
  DISTRT_GRID_LOOP(i, n) { dx[i] = dy[i] * unaryDeriv(op, x[i]); }
}

__global__ void binaryKernel(int op, BroadcastDesc d, const float *a,
                             const float *b, float *y, int64_t n) {
  DISTRT_GRID_LOOP(i, n) {
    y[i] = binaryFwd(op, a[offsetOf(d, 0, i)], b[offsetOf(d, 1, i)]);
  }
}

__global__ void binaryBwdKernel(int op, BroadcastDesc d, const float *a,
                                const float *b, const float *dy, float *ga,
                                float *gb, int64_t n) {
  DISTRT_GRID_LOOP(i, n) {
    float va = a[offsetOf(d, 0, i)], vb = b[offsetOf(d, 1, i)];
    if (ga)
      ga[i] = dy[i] * binaryDerivA(op, va, vb);
    if (gb)
      gb[i] = dy[i] * binaryDerivB(op, va, vb);
  }
}

/// One thread per output element; walks the reduced coordinates.
__global__ void reduceKernel(int op, BroadcastDesc d, const float *x,
                             float *y, int64_t yn, int64_t count) {
  DISTRT_GRID_LOOP(yi, yn) {
    int64_t base = 0, rem = yi, xs = 1;
    int64_t xStride[DISTRT_MAX_RANK];
    for (int k = d.rank - 1; k >= 0; --k) {
      xStride[k] = xs;
      xs *= d.dims[k];
    }
    for (int k = d.rank - 1; k >= 0; --k)
      if (d.strides[0][k] != 0) {
        base += (rem % d.dims[k]) * xStride[k];
        rem /= d.dims[k];
      }
    float acc = op == DISTRT_REDUCE_MAX   ? -INFINITY
                : op == DISTRT_REDUCE_MIN ? INFINITY
                                          : 0.0f;
    for (int64_t r = 0; r < count; ++r) {
      int64_t off = base, rr = r;
      for (int k = d.rank - 1; k >= 0; --k)
        if (d.strides[0][k] == 0) {
          off += (rr % d.dims[k]) * xStride[k];
          rr /= d.dims[k];
        }
      float v = x[off];
      acc = op == DISTRT_REDUCE_MAX   ? fmaxf(acc, v)
            : op == DISTRT_REDUCE_MIN ? fminf(acc, v)
                                      : acc + v;
    }
    y[yi] = op == DISTRT_REDUCE_MEAN ? acc / float(count) : acc;
  }
}

__global__ void reduceBwdKernel(int op, BroadcastDesc d, const float *x,
                                const float *y, const float *dy, float *dx,
                                int64_t n, float inv) {
  DISTRT_GRID_LOOP(i, n) {
    int64_t o = offsetOf(d, 0, i);
    float g = dy[o];
    dx[i] = op == DISTRT_REDUCE_SUM    ? g
            : op == DISTRT_REDUCE_MEAN ? g * inv
                                       : (x[i] == y[o] ? g : 0.0f);
  }
}

constexpr int kMaxFusedInstrs = 64;
constexpr int kMaxFusedOutputs = 8;

struct FusedParams {
  distrt_fused_instr instrs[kMaxFusedInstrs];
  const float *inputs[DISTRT_FUSED_MAX_REGS];
  int64_t strides[DISTRT_FUSED_MAX_REGS][DISTRT_MAX_RANK];
  float *outputs[kMaxFusedOutputs];
  uint8_t outputRegs[kMaxFusedOutputs];
  int32_t numInstrs, numInputs, numOutputs;
};

/// Whole program by value (~2.5 KB of kernel parameters, under the 4 KB
/// limit): no staging copy, no synchronization.
__global__ void fusedKernel(FusedParams p, BroadcastDesc d, int64_t n) {
  DISTRT_GRID_LOOP(i, n) {
    float r[DISTRT_FUSED_MAX_REGS];
    for (int j = 0; j < p.numInputs; ++j) {
      int64_t off = 0, rem = i;
      for (int k = d.rank - 1; k >= 0; --k) {
        off += (rem % d.dims[k]) * p.strides[j][k];
        rem /= d.dims[k];
      }
      r[j] = p.inputs[j][off];
    }
    for (int s = 0; s < p.numInstrs; ++s) {
      const distrt_fused_instr &in = p.instrs[s];
      float v;
      switch (in.opcode) {
      case DISTRT_FUSED_UNARY:
        v = unaryFwd(in.op, r[in.src0]);
        break;
      case DISTRT_FUSED_BINARY:
        v = binaryFwd(in.op, r[in.src0], r[in.src1]);
        break;
      case DISTRT_FUSED_CONST:
        v = in.imm;
        break;
      default:
        v = r[in.src0] * r[in.src1] + r[in.src2];
      }
      r[in.dst] = v;
    }
    for (int o = 0; o < p.numOutputs; ++o)
      p.outputs[o][i] = r[p.outputRegs[o]];
  }
}

template <typename T>
__global__ void transposeKernel(const T *x, T *y, BroadcastDesc d,
                                int64_t n) {
  DISTRT_GRID_LOOP(i, n) { y[i] = x[offsetOf(d, 0, i)]; }
}

template <typename I>
__global__ void embeddingKernel(const float *table, const I *idx, float *y,
                                int64_t n, int64_t vocab, int64_t d) {
  DISTRT_GRID_LOOP(i, n * d) {
    int64_t row = static_cast<int64_t>(idx[i / d]);
    // Out-of-range rows read as zeros (no host-side check on device data).
    y[i] = row >= 0 && row < vocab ? table[row * d + i % d] : 0.0f;
  }
}

template <typename I>
__global__ void embeddingBwdKernel(const I *idx, const float *dy,
                                   float *dtable, int64_t n, int64_t vocab,
                                   int64_t d) {
  DISTRT_GRID_LOOP(i, n * d) {
    int64_t row = static_cast<int64_t>(idx[i / d]);
    if (row >= 0 && row < vocab)
      atomicAdd(&dtable[row * d + i % d], dy[i]);
  }
}

} // namespace

distrt_status unary(distrt_context *ctx, int op, const float *x, float *y,
                    int64_t n) {
  DISTRT_CUDA_ENTER(ctx);
  unaryKernel<<<gridFor(n), kThreads, 0, state(ctx).stream>>>(op, x, y, n);
  DISTRT_CUDA_LAUNCHED(ctx);
  return DISTRT_OK;
}

distrt_status unaryBwd(distrt_context *ctx, int op, const float *x,
                       const float *dy, float *dx, int64_t n) {
  DISTRT_CUDA_ENTER(ctx);
  unaryBwdKernel<<<gridFor(n), kThreads, 0, state(ctx).stream>>>(op, x, dy,
                                                                 dx, n);
  DISTRT_CUDA_LAUNCHED(ctx);
  return DISTRT_OK;
}

distrt_status binary(distrt_context *ctx, int op, const BroadcastDesc &d,
                     const float *a, const float *b, float *y) {
  DISTRT_CUDA_ENTER(ctx);
  int64_t n = numel(d);
  binaryKernel<<<gridFor(n), kThreads, 0, state(ctx).stream>>>(op, d, a, b, y,
                                                               n);
  DISTRT_CUDA_LAUNCHED(ctx);
  return DISTRT_OK;
}

distrt_status binaryBwd(distrt_context *ctx, int op, const BroadcastDesc &d,
                        const float *a, const float *b, const float *dy,
                        float *gaFull, float *gbFull) {
  DISTRT_CUDA_ENTER(ctx);
  int64_t n = numel(d);
  binaryBwdKernel<<<gridFor(n), kThreads, 0, state(ctx).stream>>>(
      op, d, a, b, dy, gaFull, gbFull, n);
  DISTRT_CUDA_LAUNCHED(ctx);
  return DISTRT_OK;
}

distrt_status reduce(distrt_context *ctx, int op, const BroadcastDesc &d,
                     const float *x, float *y, int64_t yNumel,
                     int64_t reducedCount) {
  DISTRT_CUDA_ENTER(ctx);
  reduceKernel<<<gridFor(yNumel), kThreads, 0, state(ctx).stream>>>(
      op, d, x, y, yNumel, reducedCount);
  DISTRT_CUDA_LAUNCHED(ctx);
  return DISTRT_OK;
}

distrt_status reduceBwd(distrt_context *ctx, int op, const BroadcastDesc &d,
                        const float *x, const float *y, const float *dy,
                        float *dx, int64_t reducedCount) {
  DISTRT_CUDA_ENTER(ctx);
  int64_t n = numel(d);
  reduceBwdKernel<<<gridFor(n), kThreads, 0, state(ctx).stream>>>(
      op, d, x, y, dy, dx, n, reducedCount ? 1.0f / float(reducedCount) : 0.f);
  DISTRT_CUDA_LAUNCHED(ctx);
  return DISTRT_OK;
}

distrt_status fused(distrt_context *ctx, const distrt_fused_instr *instrs,
                    int32_t numInstrs, int32_t numInputs,
                    const float *const *inputs, const int64_t *inputStrides,
                    int32_t rank, const int64_t *dims, int32_t numOutputs,
                    float *const *outputs, const uint8_t *outputRegs) {
  if (numInstrs > kMaxFusedInstrs || numOutputs > kMaxFusedOutputs)
    return setError(ctx, DISTRT_ERROR_UNSUPPORTED,
                    concat("distrt_fused_elementwise: the CUDA executor takes "
                           "at most ",
                           kMaxFusedInstrs, " instructions and ",
                           kMaxFusedOutputs, " outputs; split the program"));
  DISTRT_CUDA_ENTER(ctx);
  CudaState &st = state(ctx);
  FusedParams p{};
  for (int i = 0; i < numInstrs; ++i)
    p.instrs[i] = instrs[i];
  for (int i = 0; i < numInputs; ++i) {
    p.inputs[i] = inputs[i];
    for (int k = 0; k < DISTRT_MAX_RANK; ++k)
      p.strides[i][k] = inputStrides[i * DISTRT_MAX_RANK + k];
  }
  for (int i = 0; i < numOutputs; ++i) {
    p.outputs[i] = outputs[i];
    p.outputRegs[i] = outputRegs[i];
  }
  p.numInstrs = numInstrs;
  p.numInputs = numInputs;
  p.numOutputs = numOutputs;
  BroadcastDesc d;
  d.rank = rank;
  int64_t n = 1;
  for (int i = 0; i < rank; ++i) {
    d.dims[i] = dims[i];
    n *= dims[i];
  }
  fusedKernel<<<gridFor(n), kThreads, 0, st.stream>>>(p, d, n);
  DISTRT_CUDA_LAUNCHED(ctx);
  return DISTRT_OK;
}

distrt_status transpose(distrt_context *ctx, const float *x, float *y,
                        int32_t rank, const int64_t *yDims,
                        const int64_t *xStrides, size_t elemSize) {
  DISTRT_CUDA_ENTER(ctx);
  BroadcastDesc d;
  d.rank = rank;
  int64_t n = 1;
  for (int i = 0; i < rank; ++i) {
    d.dims[i] = yDims[i];
    d.strides[0][i] = xStrides[i];
    n *= yDims[i];
  }
  cudaStream_t s = state(ctx).stream;
  if (elemSize == 4)
    transposeKernel<<<gridFor(n), kThreads, 0, s>>>(x, y, d, n);
  else
    transposeKernel<<<gridFor(n), kThreads, 0, s>>>(
        reinterpret_cast<const uint16_t *>(x), reinterpret_cast<uint16_t *>(y),
        d, n);
  DISTRT_CUDA_LAUNCHED(ctx);
  return DISTRT_OK;
}

distrt_status embedding(distrt_context *ctx, const float *table,
                        const void *indices, bool i64, float *y, int64_t n,
                        int64_t vocab, int64_t d) {
  DISTRT_CUDA_ENTER(ctx);
  cudaStream_t s = state(ctx).stream;
  if (i64)
    embeddingKernel<<<gridFor(n * d), kThreads, 0, s>>>(
        table, static_cast<const int64_t *>(indices), y, n, vocab, d);
  else
    embeddingKernel<<<gridFor(n * d), kThreads, 0, s>>>(
        table, static_cast<const int32_t *>(indices), y, n, vocab, d);
  DISTRT_CUDA_LAUNCHED(ctx);
  return DISTRT_OK;
}

distrt_status embeddingBwd(distrt_context *ctx, const void *indices, bool i64,
                           const float *dy, float *dtable, int64_t n,
                           int64_t vocab, int64_t d, bool accumulate) {
  DISTRT_CUDA_ENTER(ctx);
  cudaStream_t s = state(ctx).stream;
  if (!accumulate)
    DISTRT_CUDA_TRY(ctx,
                    cudaMemsetAsync(dtable, 0, sizeof(float) * vocab * d, s));
  if (i64)
    embeddingBwdKernel<<<gridFor(n * d), kThreads, 0, s>>>(
        static_cast<const int64_t *>(indices), dy, dtable, n, vocab, d);
  else
    embeddingBwdKernel<<<gridFor(n * d), kThreads, 0, s>>>(
        static_cast<const int32_t *>(indices), dy, dtable, n, vocab, d);
  DISTRT_CUDA_LAUNCHED(ctx);
  return DISTRT_OK;
}

} // namespace cuda
} // namespace distrt
