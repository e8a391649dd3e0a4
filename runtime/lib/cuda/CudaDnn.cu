//===- CudaDnn.cu - Convolution, pooling, batch norm on cuDNN --*- C++ -*-===//
//
// cuDNN's descriptor API (deprecated in cuDNN 9 in favour of the graph API,
// still shipped and supported) covers exactly the NCHW fp32 cases the ABI
// has. The cuDNN handle is created on first use so contexts that never run
// these ops do not pay cuDNN's start-up. Only built when cuDNN is found.
//
//===----------------------------------------------------------------------===//
#include "cuda/CudaState.h"

#ifdef DISTRT_HAVE_CUDNN

#include <cudnn.h>

#pragma nv_diag_suppress 1444 // deprecated cuDNN descriptor API
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace distrt {
namespace cuda {

namespace {

distrt_status dnnFail(distrt_context *ctx, const char *what,
                      cudnnStatus_t s) {
  return setError(ctx, DISTRT_ERROR_BACKEND,
                  concat(what, ": cuDNN failed: ", cudnnGetErrorString(s),
                         "; check shapes (cuDNN needs symmetric padding)"));
}

#define DISTRT_DNN_TRY(ctx, what, expr)                                       \
  do {                                                                        \
    cudnnStatus_t distrtDnn_ = (expr);                                        \
    if (distrtDnn_ != CUDNN_STATUS_SUCCESS)                                   \
      return dnnFail((ctx), (what), distrtDnn_);                              \
  } while (0)

distrt_status handle(distrt_context *ctx, const char *what,
                     cudnnHandle_t &h) {
  CudaState &st = state(ctx);
  if (!st.dnn) {
    cudnnHandle_t created;
    DISTRT_DNN_TRY(ctx, what, cudnnCreate(&created));
    st.dnn = created;
  }
  h = static_cast<cudnnHandle_t>(st.dnn);
  DISTRT_DNN_TRY(ctx, what, cudnnSetStream(h, st.stream));
  return DISTRT_OK;
}

/// Owns the descriptors of one call.
struct Descs {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, b = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnPoolingDescriptor_t pool = nullptr;
  ~Descs() {
    if (x)
      cudnnDestroyTensorDescriptor(x);
    if (y)
      cudnnDestroyTensorDescriptor(y);
    if (b)
      cudnnDestroyTensorDescriptor(b);
    if (w)
      cudnnDestroyFilterDescriptor(w);
    if (conv)
      cudnnDestroyConvolutionDescriptor(conv);
    if (pool)
      cudnnDestroyPoolingDescriptor(pool);
  }
};

cudnnStatus_t tensor4d(cudnnTensorDescriptor_t &d, int64_t n, int64_t c,
                       int64_t h, int64_t w) {
  cudnnStatus_t s = cudnnCreateTensorDescriptor(&d);
  if (s != CUDNN_STATUS_SUCCESS)
    return s;
  return cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                                    int(n), int(c), int(h), int(w));
}

distrt_status convDescs(distrt_context *ctx, const char *what,
                        const ConvShape &s, Descs &d) {
  if (s.padBegin[0] != s.padEnd[0] || s.padBegin[1] != s.padEnd[1])
    return setError(ctx, DISTRT_ERROR_UNSUPPORTED,
                    concat(what, ": cuDNN takes symmetric padding only; pad "
                                 "the input explicitly or run on a CPU "
                                 "context"));
  DISTRT_DNN_TRY(ctx, what, tensor4d(d.x, s.n, s.c, s.h, s.w));
  DISTRT_DNN_TRY(ctx, what, tensor4d(d.y, s.n, s.o, s.oh, s.ow));
  DISTRT_DNN_TRY(ctx, what, tensor4d(d.b, 1, s.o, 1, 1));
  DISTRT_DNN_TRY(ctx, what, cudnnCreateFilterDescriptor(&d.w));
  DISTRT_DNN_TRY(ctx, what,
                 cudnnSetFilter4dDescriptor(d.w, CUDNN_DATA_FLOAT,
                                            CUDNN_TENSOR_NCHW, int(s.o),
                                            int(s.c / s.groups), int(s.kh),
                                            int(s.kw)));
  DISTRT_DNN_TRY(ctx, what, cudnnCreateConvolutionDescriptor(&d.conv));
  DISTRT_DNN_TRY(ctx, what,
                 cudnnSetConvolution2dDescriptor(
                     d.conv, s.padBegin[0], s.padBegin[1], s.stride[0],
                     s.stride[1], s.dilation[0], s.dilation[1],
                     CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  DISTRT_DNN_TRY(ctx, what, cudnnSetConvolutionGroupCount(d.conv, s.groups));
  // Keep fp32 semantics: no TF32 tensor-op rounding.
  DISTRT_DNN_TRY(ctx, what,
                 cudnnSetConvolutionMathType(d.conv, CUDNN_FMA_MATH));
  return DISTRT_OK;
}

/// Scoped workspace from the stream-ordered allocator.
struct Workspace {
  distrt_context *ctx;
  void *ptr = nullptr;
  ~Workspace() {
    if (ptr)
      cudaFreeAsync(ptr, state(ctx).stream);
  }
  distrt_status get(size_t bytes) {
    if (bytes == 0)
      return DISTRT_OK;
    DISTRT_CUDA_TRY(ctx, cudaMallocAsync(&ptr, bytes, state(ctx).stream));
    return DISTRT_OK;
  }
};

__global__ void varToInvStd(const float *var, float *out, float eps, int n) {
  DISTRT_GRID_LOOP(i, n) { out[i] = rsqrtf(var[i] + eps); }
}
__global__ void invStdToVar(float *inout, float eps, int n) {
  DISTRT_GRID_LOOP(i, n) {
    float r = inout[i];
    inout[i] = 1.0f / (r * r) - eps;
  }
}

/// dscale[c] = sum dy * xhat, dshift[c] = sum dy over N and spatial.
__global__ void bnWeightGrad(const float *x, const float *dy,
                             const float *mean, const float *var, float *ds,
                             float *db, int64_t n, int64_t c, int64_t s,
                             float eps, bool accumulate) {
  int64_t ch = blockIdx.x;
  float rstd = rsqrtf(var[ch] + eps), m = mean[ch];
  float sg = 0.0f, sb = 0.0f;
  for (int64_t i = threadIdx.x; i < n * s; i += blockDim.x) {
    int64_t at = ((i / s) * c + ch) * s + i % s;
    sg += dy[at] * (x[at] - m) * rstd;
    sb += dy[at];
  }
  sg = blockSum(sg);
  sb = blockSum(sb);
  if (threadIdx.x == 0) {
    ds[ch] = (accumulate ? ds[ch] : 0.0f) + sg;
    if (db)
      db[ch] = (accumulate ? db[ch] : 0.0f) + sb;
  }
}

} // namespace

void destroyDnn(CudaState &st) {
  if (st.dnn)
    cudnnDestroy(static_cast<cudnnHandle_t>(st.dnn));
  st.dnn = nullptr;
}

distrt_status convFwd(distrt_context *ctx, const ConvShape &s, const float *x,
                      const float *w, const float *bias, float *y) {
  const char *what = "distrt_conv2d";
  DISTRT_CUDA_ENTER(ctx);
  cudnnHandle_t h;
  DISTRT_TRY(handle(ctx, what, h));
  Descs d;
  DISTRT_TRY(convDescs(ctx, what, s, d));
  cudnnConvolutionFwdAlgoPerf_t perf;
  int found = 0;
  DISTRT_DNN_TRY(ctx, what,
                 cudnnGetConvolutionForwardAlgorithm_v7(h, d.x, d.w, d.conv,
                                                        d.y, 1, &found, &perf));
  size_t bytes = 0;
  DISTRT_DNN_TRY(ctx, what,
                 cudnnGetConvolutionForwardWorkspaceSize(
                     h, d.x, d.w, d.conv, d.y, perf.algo, &bytes));
  Workspace ws{ctx};
  DISTRT_TRY(ws.get(bytes));
  float one = 1.0f, zero = 0.0f;
  DISTRT_DNN_TRY(ctx, what,
                 cudnnConvolutionForward(h, &one, d.x, x, d.w, w, d.conv,
                                         perf.algo, ws.ptr, bytes, &zero, d.y,
                                         y));
  if (bias)
    DISTRT_DNN_TRY(ctx, what,
                   cudnnAddTensor(h, &one, d.b, bias, &one, d.y, y));
  return DISTRT_OK;
}

distrt_status convBwdData(distrt_context *ctx, const ConvShape &s,
                          const float *dy, const float *w, float *dx) {
  const char *what = "distrt_conv2d_bwd_data";
  DISTRT_CUDA_ENTER(ctx);
  cudnnHandle_t h;
  DISTRT_TRY(handle(ctx, what, h));
  Descs d;
  DISTRT_TRY(convDescs(ctx, what, s, d));
  cudnnConvolutionBwdDataAlgoPerf_t perf;
  int found = 0;
  DISTRT_DNN_TRY(ctx, what,
                 cudnnGetConvolutionBackwardDataAlgorithm_v7(
                     h, d.w, d.y, d.conv, d.x, 1, &found, &perf));
  size_t bytes = 0;
  DISTRT_DNN_TRY(ctx, what,
                 cudnnGetConvolutionBackwardDataWorkspaceSize(
                     h, d.w, d.y, d.conv, d.x, perf.algo, &bytes));
  Workspace ws{ctx};
  DISTRT_TRY(ws.get(bytes));
  float one = 1.0f, zero = 0.0f;
  DISTRT_DNN_TRY(ctx, what,
                 cudnnConvolutionBackwardData(h, &one, d.w, w, d.y, dy,
                                              d.conv, perf.algo, ws.ptr, bytes,
                                              &zero, d.x, dx));
  return DISTRT_OK;
}

distrt_status convBwdWeight(distrt_context *ctx, const ConvShape &s,
                            const float *x, const float *dy, float *dw,
                            float *dbias, bool accumulate) {
  const char *what = "distrt_conv2d_bwd_weight";
  DISTRT_CUDA_ENTER(ctx);
  cudnnHandle_t h;
  DISTRT_TRY(handle(ctx, what, h));
  Descs d;
  DISTRT_TRY(convDescs(ctx, what, s, d));
  cudnnConvolutionBwdFilterAlgoPerf_t perf;
  int found = 0;
  DISTRT_DNN_TRY(ctx, what,
                 cudnnGetConvolutionBackwardFilterAlgorithm_v7(
                     h, d.x, d.y, d.conv, d.w, 1, &found, &perf));
  size_t bytes = 0;
  DISTRT_DNN_TRY(ctx, what,
                 cudnnGetConvolutionBackwardFilterWorkspaceSize(
                     h, d.x, d.y, d.conv, d.w, perf.algo, &bytes));
  Workspace ws{ctx};
  DISTRT_TRY(ws.get(bytes));
  float one = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  DISTRT_DNN_TRY(ctx, what,
                 cudnnConvolutionBackwardFilter(h, &one, d.x, x, d.y, dy,
                                                d.conv, perf.algo, ws.ptr,
                                                bytes, &beta, d.w, dw));
  if (dbias)
    DISTRT_DNN_TRY(ctx, what,
                   cudnnConvolutionBackwardBias(h, &one, d.y, dy, &beta, d.b,
                                                dbias));
  return DISTRT_OK;
}

distrt_status pool(distrt_context *ctx, const PoolShape &s, const float *x,
                   float *y, const float *dy, float *dx) {
  const char *what = dy ? "distrt_pool2d_bwd" : "distrt_pool2d";
  if (s.padBegin[0] != s.padEnd[0] || s.padBegin[1] != s.padEnd[1])
    return setError(ctx, DISTRT_ERROR_UNSUPPORTED,
                    concat(what, ": cuDNN takes symmetric padding only; pad "
                                 "the input explicitly or run on a CPU "
                                 "context"));
  DISTRT_CUDA_ENTER(ctx);
  cudnnHandle_t h;
  DISTRT_TRY(handle(ctx, what, h));
  Descs d;
  DISTRT_DNN_TRY(ctx, what, tensor4d(d.x, s.n, s.c, s.h, s.w));
  DISTRT_DNN_TRY(ctx, what, tensor4d(d.y, s.n, s.c, s.oh, s.ow));
  DISTRT_DNN_TRY(ctx, what, cudnnCreatePoolingDescriptor(&d.pool));
  cudnnPoolingMode_t mode =
      s.kind == DISTRT_POOL_MAX ? CUDNN_POOLING_MAX_DETERMINISTIC
      : s.kind == DISTRT_POOL_AVG_INCLUDE_PAD
          ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
          : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
  DISTRT_DNN_TRY(ctx, what,
                 cudnnSetPooling2dDescriptor(d.pool, mode, CUDNN_PROPAGATE_NAN,
                                             s.kernel[0], s.kernel[1],
                                             s.padBegin[0], s.padBegin[1],
                                             s.stride[0], s.stride[1]));
  float one = 1.0f, zero = 0.0f;
  if (!dy) {
    DISTRT_DNN_TRY(ctx, what, cudnnPoolingForward(h, d.pool, &one, d.x, x,
                                                  &zero, d.y, y));
    return DISTRT_OK;
  }
  // The backward needs the forward output: recompute it into scratch.
  Workspace yTmp{ctx};
  DISTRT_TRY(yTmp.get(sizeof(float) * s.n * s.c * s.oh * s.ow));
  float *py = static_cast<float *>(yTmp.ptr);
  DISTRT_DNN_TRY(ctx, what, cudnnPoolingForward(h, d.pool, &one, d.x, x,
                                                &zero, d.y, py));
  DISTRT_DNN_TRY(ctx, what,
                 cudnnPoolingBackward(h, d.pool, &one, d.y, py, d.y, dy, d.x,
                                      x, &zero, d.x, dx));
  return DISTRT_OK;
}

distrt_status batchNorm(distrt_context *ctx, const BatchNormArgs &a) {
  const char *what = a.training ? "distrt_batchnorm_fwd_training"
                                : "distrt_batchnorm_fwd_inference";
  DISTRT_CUDA_ENTER(ctx);
  cudnnHandle_t h;
  DISTRT_TRY(handle(ctx, what, h));
  Descs d;
  // Spatial dims flattened: [N, C, S, 1] has the same per-channel stats.
  DISTRT_DNN_TRY(ctx, what, tensor4d(d.x, a.n, a.c, a.s, 1));
  DISTRT_DNN_TRY(ctx, what, tensor4d(d.b, 1, a.c, 1, 1));
  float one = 1.0f, zero = 0.0f;
  cudaStream_t stream = state(ctx).stream;
  if (!a.training) {
    DISTRT_DNN_TRY(ctx, what,
                   cudnnBatchNormalizationForwardInference(
                       h, CUDNN_BATCHNORM_SPATIAL, &one, &zero, d.x, a.x, d.x,
                       a.y, d.b, a.scale, a.shift, a.mean, a.var, a.eps));
    return DISTRT_OK;
  }
  // cuDNN saves 1/sqrt(var + eps); the ABI stores the biased variance.
  DISTRT_DNN_TRY(ctx, what,
                 cudnnBatchNormalizationForwardTraining(
                     h, CUDNN_BATCHNORM_SPATIAL, &one, &zero, d.x, a.x, d.x,
                     a.y, d.b, a.scale, a.shift, a.momentum, a.runningMean,
                     a.runningVar, a.eps, a.mean, a.var));
  invStdToVar<<<gridFor(a.c), kThreads, 0, stream>>>(a.var, a.eps,
                                                     int(a.c));
  DISTRT_CUDA_LAUNCHED(ctx);
  return DISTRT_OK;
}

distrt_status batchNormBwdData(distrt_context *ctx, const BatchNormArgs &a,
                               const float *dy, float *dx) {
  const char *what = "distrt_batchnorm_bwd_data";
  DISTRT_CUDA_ENTER(ctx);
  cudnnHandle_t h;
  DISTRT_TRY(handle(ctx, what, h));
  Descs d;
  DISTRT_DNN_TRY(ctx, what, tensor4d(d.x, a.n, a.c, a.s, 1));
  DISTRT_DNN_TRY(ctx, what, tensor4d(d.b, 1, a.c, 1, 1));
  Workspace tmp{ctx};
  DISTRT_TRY(tmp.get(sizeof(float) * 3 * a.c));
  float *invStd = static_cast<float *>(tmp.ptr);
  cudaStream_t stream = state(ctx).stream;
  varToInvStd<<<gridFor(a.c), kThreads, 0, stream>>>(a.var, invStd, a.eps,
                                                     int(a.c));
  DISTRT_CUDA_LAUNCHED(ctx);
  float one = 1.0f, zero = 0.0f;
  // Parameter gradients go to scratch: they have their own entry point.
  DISTRT_DNN_TRY(ctx, what,
                 cudnnBatchNormalizationBackward(
                     h, CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one, &zero, d.x,
                     a.x, d.x, dy, d.x, dx, d.b, a.scale, invStd + a.c,
                     invStd + 2 * a.c, a.eps, a.mean, invStd));
  return DISTRT_OK;
}

distrt_status batchNormBwdWeight(distrt_context *ctx, const BatchNormArgs &a,
                                 const float *dy, float *dscale,
                                 float *dshift, bool accumulate) {
  DISTRT_CUDA_ENTER(ctx);
  if (a.c == 0)
    return DISTRT_OK;
  bnWeightGrad<<<unsigned(a.c), kThreads, 0, state(ctx).stream>>>(
      a.x, dy, a.mean, a.var, dscale, dshift, a.n, a.c, a.s, a.eps,
      accumulate);
  DISTRT_CUDA_LAUNCHED(ctx);
  return DISTRT_OK;
}

} // namespace cuda
} // namespace distrt

#endif // DISTRT_HAVE_CUDNN
