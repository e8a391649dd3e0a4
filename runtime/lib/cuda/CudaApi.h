//===- CudaApi.h - CUDA backend entry points (no CUDA headers) -*- C++ -*-===//
//
// What the ABI layer calls on a CUDA context. Arguments are already checked;
// pointers are device pointers; sizes are element counts. Only compiled and
// called when DISTRT_HAVE_CUDA is defined.
//
//===----------------------------------------------------------------------===//
#ifndef DISTRT_LIB_CUDA_CUDAAPI_H
#define DISTRT_LIB_CUDA_CUDAAPI_H

#include "Internal.h"

namespace distrt {
namespace cuda {

/// Shapes of a broadcast elementwise op: output dims and, per operand, its
/// element strides at output coordinates (0 on broadcast dims).
struct BroadcastDesc {
  int32_t rank = 0;
  int64_t dims[DISTRT_MAX_RANK] = {};
  int64_t strides[4][DISTRT_MAX_RANK] = {};
};

int32_t deviceCount();
distrt_status createState(distrt_context *ctx, int32_t device);
void destroyState(distrt_context *ctx);
distrt_status setStream(distrt_context *ctx, void *stream);
distrt_status synchronize(distrt_context *ctx);
distrt_status alloc(distrt_context *ctx, size_t bytes, void **out);
distrt_status release(distrt_context *ctx, void *ptr);
distrt_status copy(distrt_context *ctx, void *dst, const void *src,
                   size_t bytes, distrt_copy_kind kind);

/// C[b] = alpha op(A[b]) op(B[b]) + bias + beta C[b], row-major; every
/// operand of dtype `dt` (f32, f16, bf16), f32 accumulation.
distrt_status gemm(distrt_context *ctx, distrt_dtype dt, int64_t batch,
                   int64_t m, int64_t n, int64_t k, const void *a,
                   bool transA, int64_t strideA, const void *b, bool transB,
                   int64_t strideB, void *c, float alpha, float beta,
                   const void *bias);

distrt_status unary(distrt_context *ctx, int op, const float *x, float *y,
                    int64_t n);
distrt_status unaryBwd(distrt_context *ctx, int op, const float *x,
                       const float *dy, float *dx, int64_t n);
/// y = a op b; strides[0] for a, strides[1] for b.
distrt_status binary(distrt_context *ctx, int op, const BroadcastDesc &d,
                     const float *a, const float *b, float *y);
/// Full-size (output-shaped) partial gradients; either may be null.
distrt_status binaryBwd(distrt_context *ctx, int op, const BroadcastDesc &d,
                        const float *a, const float *b, const float *dy,
                        float *gaFull, float *gbFull);
/// y[keepdims] = reduce(x) for x dims `d.dims`; strides[0] maps x coords to
/// y offsets (0 on reduced dims).
distrt_status reduce(distrt_context *ctx, int op, const BroadcastDesc &d,
                     const float *x, float *y, int64_t yNumel,
                     int64_t reducedCount);
distrt_status reduceBwd(distrt_context *ctx, int op, const BroadcastDesc &d,
                        const float *x, const float *y, const float *dy,
                        float *dx, int64_t reducedCount);
/// Fused program: instrs as in the ABI; strides[i] per input (up to 4 on
/// this path: larger programs use `inputStrides`).
distrt_status fused(distrt_context *ctx, const distrt_fused_instr *instrs,
                    int32_t numInstrs, int32_t numInputs,
                    const float *const *inputs, const int64_t *inputStrides,
                    int32_t rank, const int64_t *dims, int32_t numOutputs,
                    float *const *outputs, const uint8_t *outputRegs);
distrt_status transpose(distrt_context *ctx, const float *x, float *y,
                        int32_t rank, const int64_t *yDims,
                        const int64_t *xStrides, size_t elemSize);

distrt_status softmax(distrt_context *ctx, const float *x, float *y,
                      int64_t outer, int64_t axis, int64_t inner, bool log);
distrt_status softmaxBwd(distrt_context *ctx, const float *y, const float *dy,
                         float *dx, int64_t outer, int64_t axis, int64_t inner,
                         bool log);
distrt_status layerNorm(distrt_context *ctx, const float *x,
                        const float *scale, const float *shift, float *y,
                        float *mean, float *var, int64_t rows, int64_t d,
                        float eps, bool rms);
distrt_status layerNormBwdData(distrt_context *ctx, const float *x,
                               const float *dy, const float *scale,
                               float *dx, int64_t rows, int64_t d, float eps,
                               bool rms);
distrt_status layerNormBwdWeight(distrt_context *ctx, const float *x,
                                 const float *dy, float *dscale, float *dshift,
                                 int64_t rows, int64_t d, float eps, bool rms,
                                 bool accumulate);

distrt_status embedding(distrt_context *ctx, const float *table,
                        const void *indices, bool i64, float *y, int64_t n,
                        int64_t vocab, int64_t d);
distrt_status embeddingBwd(distrt_context *ctx, const void *indices, bool i64,
                           const float *dy, float *dtable, int64_t n,
                           int64_t vocab, int64_t d, bool accumulate);
distrt_status crossEntropy(distrt_context *ctx, const float *logits,
                           const void *labels, bool i64, float *loss, int64_t n,
                           int64_t c, int64_t ignoreIndex,
                           distrt_loss_reduction reduction);
distrt_status crossEntropyBwd(distrt_context *ctx, const float *logits,
                              const void *labels, bool i64, const float *dloss,
                              float *dlogits, int64_t n, int64_t c,
                              int64_t ignoreIndex,
                              distrt_loss_reduction reduction);
distrt_status mse(distrt_context *ctx, const float *x, const float *t,
                  float *loss, int64_t n);
distrt_status mseBwd(distrt_context *ctx, const float *x, const float *t,
                     const float *dloss, float *dx, int64_t n);
distrt_status dropout(distrt_context *ctx, const float *x, float *y,
                      uint8_t *mask, int64_t n, float p, uint64_t seed,
                      uint64_t offset);

distrt_status sgd(distrt_context *ctx, float *param, const float *grad,
                  float *buf, const distrt_sgd_attr &attr, int64_t step,
                  int64_t n);
distrt_status adam(distrt_context *ctx, float *param, const float *grad,
                   float *m, float *v, const distrt_adam_attr &attr,
                   int64_t step, bool decoupled, int64_t n);
distrt_status fill(distrt_context *ctx, void *x, distrt_dtype dtype,
                   float value, int64_t n);
distrt_status accumulate(distrt_context *ctx, float *acc, const void *x,
                         distrt_dtype dtype, float scale, int64_t n);
distrt_status cast(distrt_context *ctx, const void *x, distrt_dtype from,
                   void *y, distrt_dtype to, int64_t n);
distrt_status unscaleCheck(distrt_context *ctx, void *grad,
                           distrt_dtype dtype, float invScale,
                           int32_t *foundInf, int64_t n);

/// cuDNN-backed ops (DISTRT_HAVE_CUDNN): convolution, pooling, batch norm.
struct ConvShape {
  int64_t n, c, h, w, o, kh, kw, oh, ow;
  int32_t stride[2], padBegin[2], padEnd[2], dilation[2], groups;
};
struct PoolShape {
  int64_t n, c, h, w, oh, ow;
  distrt_pool_kind kind;
  int32_t kernel[2], stride[2], padBegin[2], padEnd[2];
};
/// x [N, C, S] with S the flattened spatial size. In training `mean`/`var`
/// are outputs (biased batch variance); otherwise inputs.
struct BatchNormArgs {
  int64_t n, c, s;
  const float *x, *scale, *shift;
  float *y, *mean, *var, *runningMean, *runningVar;
  float eps, momentum;
  bool training;
};

distrt_status convFwd(distrt_context *ctx, const ConvShape &s, const float *x,
                      const float *w, const float *bias, float *y);
distrt_status convBwdData(distrt_context *ctx, const ConvShape &s,
                          const float *dy, const float *w, float *dx);
distrt_status convBwdWeight(distrt_context *ctx, const ConvShape &s,
                            const float *x, const float *dy, float *dw,
                            float *dbias, bool accumulate);
/// Forward when dy is null, else dx from x and dy (y unused).
distrt_status pool(distrt_context *ctx, const PoolShape &s, const float *x,
                   float *y, const float *dy, float *dx);
distrt_status batchNorm(distrt_context *ctx, const BatchNormArgs &a);
distrt_status batchNormBwdData(distrt_context *ctx, const BatchNormArgs &a,
                               const float *dy, float *dx);
distrt_status batchNormBwdWeight(distrt_context *ctx, const BatchNormArgs &a,
                                 const float *dy, float *dscale,
                                 float *dshift, bool accumulate);
void destroyDnn(CudaState &st);

} // namespace cuda
} // namespace distrt

#endif // DISTRT_LIB_CUDA_CUDAAPI_H
