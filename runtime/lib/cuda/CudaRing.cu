//===- CudaRing.cu - Ring attention on CUDA contexts -----------*- C++ -*-===//
//
// distrt_ring_attention and its backward on the GPU (RingAttention.cpp
// checks the arguments and dispatches here). The kernels compute one step,
// this rank's queries against the key/value block it holds; the block
// moves to the next rank with grouped ncclSend/ncclRecv on a stream of its
// own, so the transfer of step s + 1's block overlaps step s's kernel
// (events order the two streams: a block is received into a buffer only
// after the kernel that read it). One thread per query row (forward, dq)
// or per key row (dk, dv): every sum runs in one order, so runs agree bit
// for bit. Multi-rank rings need NCCL (DISTRT_HAVE_NCCL).
//
//===----------------------------------------------------------------------===//
#include "RingAttention.h"
#include "cuda/CudaState.h"

#ifdef DISTRT_HAVE_NCCL
#include <nccl.h>
#endif

#include <utility>
#include <vector>

namespace distrt {
namespace cuda {
namespace {

/// A float scratch buffer on the device, freed on scope exit.
struct DeviceBuffer {
  float *data = nullptr;
  ~DeviceBuffer() {
    if (data)
      cudaFree(data);
  }
  cudaError_t alloc(int64_t floats) {
    return cudaMalloc(&data,
                      (size_t)std::max<int64_t>(floats, 1) * sizeof(float));
  }
};

__global__ void initRows(float *m, float *l, float *acc, int64_t rows,
                         int64_t dv) {
  DISTRT_GRID_LOOP(i, rows) {
    m[i] = -INFINITY;
    l[i] = 0;
    for (int64_t x = 0; x < dv; ++x)
      acc[i * dv + x] = 0;
  }
}

/// One query row per thread: merges block `block` into the row's running
/// max, sum and unnormalized output.
__global__ void forwardStep(RingShape s, int32_t block, const float *q,
                            const float *kv, float *m, float *l, float *acc) {
  const float *kBase = kv, *vBase = kv + s.batch * s.skv * s.d;
  DISTRT_GRID_LOOP(row, s.batch * s.sq) {
    const int64_t b = row / s.sq, i = row % s.sq;
    const float *qi = q + row * s.d;
    const float *k = kBase + b * s.skv * s.d;
    const float *v = vBase + b * s.skv * s.dv;
    float blockMax = -INFINITY;
    for (int64_t j = 0; j < s.skv; ++j) {
      const float bias = s.biasAt(b, i, block, j);
      if (bias > kMaskedBias)
        blockMax = fmaxf(blockMax, s.scoreOf(qi, k + j * s.d, bias));
    }
    if (blockMax == -INFINITY)
      continue;
    const float mNew = fmaxf(m[row], blockMax);
    const float rescale = expf(m[row] - mNew);
    float *a = acc + row * s.dv;
    for (int64_t x = 0; x < s.dv; ++x)
      a[x] *= rescale;
    float sum = l[row] * rescale;
    for (int64_t j = 0; j < s.skv; ++j) {
      const float bias = s.biasAt(b, i, block, j);
      if (bias <= kMaskedBias)
        continue;
      const float p = expf(s.scoreOf(qi, k + j * s.d, bias) - mNew);
      sum += p;
      for (int64_t x = 0; x < s.dv; ++x)
        a[x] += p * v[j * s.dv + x];
    }
    l[row] = sum;
    m[row] = mNew;
  }
}

__global__ void finishRows(RingShape s, const float *m, const float *l,
                           const float *acc, float *out, float *lse) {
  DISTRT_GRID_LOOP(row, s.batch * s.sq) {
    const float inv = l[row] > 0 ? 1 / l[row] : 0;
    for (int64_t x = 0; x < s.dv; ++x)
      out[row * s.dv + x] = acc[row * s.dv + x] * inv;
    lse[row] = m[row] + logf(l[row]);
  }
}

/// delta = dout . out per query row; dq starts at zero.
__global__ void startBackward(RingShape s, const float *out, const float *dout,
                              float *delta, float *dq) {
  DISTRT_GRID_LOOP(row, s.batch * s.sq) {
    float sum = 0;
    for (int64_t x = 0; x < s.dv; ++x)
      sum += dout[row * s.dv + x] * out[row * s.dv + x];
    delta[row] = sum;
    for (int64_t x = 0; x < s.d; ++x)
      dq[row * s.d + x] = 0;
  }
}

/// dS of query `row` against key `j` of the block (and P through `p`).
__device__ float scoreGrad(const RingShape &s, const float *qi, const float *k,
                           const float *v, const float *gi, float bias,
                           float lse, float delta, float &p) {
  float dp = 0;
  for (int64_t x = 0; x < s.dv; ++x)
    dp += gi[x] * v[x];
  p = expf(s.scoreOf(qi, k, bias) - lse);
  return p * (dp - delta) * s.scale;
}

/// One query row per thread: dq += dS K over the block's visible keys.
__global__ void backwardQueries(RingShape s, int32_t block, const float *q,
                                const float *kv, const float *lse,
                                const float *dout, const float *delta,
                                float *dq) {
  const float *kBase = kv, *vBase = kv + s.batch * s.skv * s.d;
  DISTRT_GRID_LOOP(row, s.batch * s.sq) {
    const int64_t b = row / s.sq, i = row % s.sq;
    const float *k = kBase + b * s.skv * s.d;
    const float *v = vBase + b * s.skv * s.dv;
    for (int64_t j = 0; j < s.skv; ++j) {
      const float bias = s.biasAt(b, i, block, j);
      if (bias <= kMaskedBias)
        continue;
      float p;
      float ds = scoreGrad(s, q + row * s.d, k + j * s.d, v + j * s.dv,
                           dout + row * s.dv, bias, lse[row], delta[row], p);
      for (int64_t x = 0; x < s.d; ++x)
        dq[row * s.d + x] += ds * k[j * s.d + x];
    }
  }
}

/// One key row per thread: the block's dk += dS^T Q and dv += P^T dout over
/// the queries that see the key.
__global__ void backwardKeys(RingShape s, int32_t block, const float *q,
                             const float *kv, const float *lse,
                             const float *dout, const float *delta,
                             float *dkv) {
  const int64_t kOff = s.batch * s.skv * s.d;
  DISTRT_GRID_LOOP(key, s.batch * s.skv) {
    const int64_t b = key / s.skv, j = key % s.skv;
    const float *k = kv + key * s.d, *v = kv + kOff + key * s.dv;
    float *dk = dkv + key * s.d, *dv = dkv + kOff + key * s.dv;
    for (int64_t i = 0; i < s.sq; ++i) {
      const float bias = s.biasAt(b, i, block, j);
      if (bias <= kMaskedBias)
        continue;
      const int64_t row = b * s.sq + i;
      float p;
      float ds = scoreGrad(s, q + row * s.d, k, v, dout + row * s.dv, bias,
                           lse[row], delta[row], p);
      for (int64_t x = 0; x < s.d; ++x)
        dk[x] += ds * q[row * s.d + x];
      for (int64_t x = 0; x < s.dv; ++x)
        dv[x] += p * dout[row * s.dv + x];
    }
  }
}

/// The ring's transfers on a stream beside the context's: `send` to rank
/// + 1, `recv` from rank - 1, after what the context's stream queued so
/// far; the context's stream waits for them at `join`.
class Ring {
public:
  Ring(distrt_comm *comm, const char *fn) : comm_(comm), fn_(fn) {}
  ~Ring() {
    if (side_) {
      cudaStreamSynchronize(side_);
      cudaStreamDestroy(side_);
    }
    if (ready_)
      cudaEventDestroy(ready_);
    if (moved_)
      cudaEventDestroy(moved_);
  }

  distrt_status start(const float *send, float *recv, int64_t floats) {
#ifdef DISTRT_HAVE_NCCL
    distrt_context *ctx = comm_->ctx;
    if (!side_) {
      DISTRT_CUDA_TRY(ctx,
                      cudaStreamCreateWithFlags(&side_, cudaStreamNonBlocking));
      DISTRT_CUDA_TRY(
          ctx, cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming));
      DISTRT_CUDA_TRY(
          ctx, cudaEventCreateWithFlags(&moved_, cudaEventDisableTiming));
    }
    DISTRT_CUDA_TRY(ctx, cudaEventRecord(ready_, state(ctx).stream));
    DISTRT_CUDA_TRY(ctx, cudaStreamWaitEvent(side_, ready_, 0));
    auto nccl = static_cast<ncclComm_t>(comm_->nccl);
    const int32_t n = comm_->size;
    const int32_t right = (comm_->rank + 1) % n,
                  left = (comm_->rank + n - 1) % n;
    ncclResult_t r = ncclGroupStart();
    if (r == ncclSuccess)
      r = ncclSend(send, (size_t)floats, ncclFloat32, right, nccl, side_);
    if (r == ncclSuccess)
      r = ncclRecv(recv, (size_t)floats, ncclFloat32, left, nccl, side_);
    ncclResult_t end = ncclGroupEnd();
    if (r == ncclSuccess)
      r = end;
    if (r != ncclSuccess)
      return setError(ctx, DISTRT_ERROR_BACKEND,
                      concat(fn_,
                             ": ncclSend/ncclRecv of the ring's block "
                             "failed on rank ",
                             comm_->rank, ": ", ncclGetErrorString(r),
                             "; set NCCL_DEBUG=WARN for details"));
    DISTRT_CUDA_TRY(ctx, cudaEventRecord(moved_, side_));
    return DISTRT_OK;
#else
    (void)send, (void)recv, (void)floats;
    return setError(comm_->ctx, DISTRT_ERROR_UNSUPPORTED,
                    concat(fn_, ": ring attention over ", comm_->size,
                           " ranks on CUDA needs NCCL, which this runtime "
                           "was built without"));
#endif
  }

  /// The context's stream waits for the transfer started last.
  distrt_status join() {
    if (moved_)
      DISTRT_CUDA_TRY(comm_->ctx,
                      cudaStreamWaitEvent(state(comm_->ctx).stream, moved_, 0));
    return DISTRT_OK;
  }

private:
  distrt_comm *comm_;
  const char *fn_;
  cudaStream_t side_ = nullptr;
  cudaEvent_t ready_ = nullptr, moved_ = nullptr;
};

/// liveBlocks of the device mask, read back once.
distrt_status liveOnDevice(distrt_context *ctx, const RingShape &s,
                           std::vector<bool> &live) {
  std::vector<float> host;
  if (s.bias) {
    const int64_t pairs = s.biasStride ? s.batch : 1;
    host.resize((size_t)(pairs * s.sq * s.ranks * s.skv));
    DISTRT_CUDA_TRY(
        ctx, cudaMemcpyAsync(host.data(), s.bias, host.size() * sizeof(float),
                             cudaMemcpyDeviceToHost, state(ctx).stream));
    DISTRT_CUDA_TRY(ctx, cudaStreamSynchronize(state(ctx).stream));
  }
  live = liveBlocks(s, s.bias ? host.data() : nullptr);
  return DISTRT_OK;
}

int32_t blockAt(const RingShape &s, int32_t step) {
  return (s.rank - step % s.ranks + s.ranks) % s.ranks;
}

/// K then V of this rank into `kv`, on the context's stream.
distrt_status packBlock(distrt_context *ctx, const RingShape &s, const float *k,
                        const float *v, float *kv) {
  cudaStream_t stream = state(ctx).stream;
  const int64_t kFloats = s.batch * s.skv * s.d;
  DISTRT_CUDA_TRY(ctx, cudaMemcpyAsync(kv, k, kFloats * sizeof(float),
                                       cudaMemcpyDeviceToDevice, stream));
  DISTRT_CUDA_TRY(ctx, cudaMemcpyAsync(kv + kFloats, v,
                                       s.batch * s.skv * s.dv * sizeof(float),
                                       cudaMemcpyDeviceToDevice, stream));
  return DISTRT_OK;
}

} // namespace

distrt_status ringAttention(distrt_comm *comm, const RingShape &s,
                            const float *q, const float *k, const float *v,
                            float *out, float *lse) {
  const char *fn = "distrt_ring_attention";
  distrt_context *ctx = comm->ctx;
  DISTRT_CUDA_ENTER(ctx);
  cudaStream_t stream = state(ctx).stream;
  const int64_t rows = s.batch * s.sq;
  DeviceBuffer m, l, acc, cur, next;
  DISTRT_CUDA_TRY(ctx, m.alloc(rows));
  DISTRT_CUDA_TRY(ctx, l.alloc(rows));
  DISTRT_CUDA_TRY(ctx, acc.alloc(rows * s.dv));
  DISTRT_CUDA_TRY(ctx, cur.alloc(s.kvFloats()));
  DISTRT_CUDA_TRY(ctx, next.alloc(s.kvFloats()));
  initRows<<<gridFor(rows), kThreads, 0, stream>>>(m.data, l.data, acc.data,
                                                   rows, s.dv);
  DISTRT_CUDA_LAUNCHED(ctx);
  DISTRT_TRY(packBlock(ctx, s, k, v, cur.data));
  std::vector<bool> live;
  DISTRT_TRY(liveOnDevice(ctx, s, live));
  Ring ring(comm, fn);
  for (int32_t step = 0; step < s.ranks; ++step) {
    // The next block arrives into the buffer the last step's kernel read,
    // which the context's stream finished before this point.
    if (step + 1 < s.ranks)
      DISTRT_TRY(ring.start(cur.data, next.data, s.kvFloats()));
    if (live[blockAt(s, step)]) {
      forwardStep<<<gridFor(rows), kThreads, 0, stream>>>(
          s, blockAt(s, step), q, cur.data, m.data, l.data, acc.data);
      DISTRT_CUDA_LAUNCHED(ctx);
    }
    DISTRT_TRY(ring.join());
    std::swap(cur.data, next.data);
  }
  finishRows<<<gridFor(rows), kThreads, 0, stream>>>(s, m.data, l.data,
                                                     acc.data, out, lse);
  DISTRT_CUDA_LAUNCHED(ctx);
  // The scratch buffers are freed when this returns.
  DISTRT_CUDA_TRY(ctx, cudaStreamSynchronize(stream));
  return DISTRT_OK;
}

distrt_status ringAttentionBackward(distrt_comm *comm, const RingShape &s,
                                    const float *q, const float *k,
                                    const float *v, const float *out,
                                    const float *lse, const float *dout,
                                    float *dq, float *dk, float *dv) {
  const char *fn = "distrt_ring_attention_backward";
  distrt_context *ctx = comm->ctx;
  DISTRT_CUDA_ENTER(ctx);
  cudaStream_t stream = state(ctx).stream;
  const int64_t rows = s.batch * s.sq, keys = s.batch * s.skv;
  DeviceBuffer delta, cur, next, grad, gradNext;
  DISTRT_CUDA_TRY(ctx, delta.alloc(rows));
  DISTRT_CUDA_TRY(ctx, cur.alloc(s.kvFloats()));
  DISTRT_CUDA_TRY(ctx, next.alloc(s.kvFloats()));
  DISTRT_CUDA_TRY(ctx, grad.alloc(s.kvFloats()));
  DISTRT_CUDA_TRY(ctx, gradNext.alloc(s.kvFloats()));
  DISTRT_CUDA_TRY(
      ctx, cudaMemsetAsync(grad.data, 0, s.kvFloats() * sizeof(float), stream));
  startBackward<<<gridFor(rows), kThreads, 0, stream>>>(s, out, dout,
                                                        delta.data, dq);
  DISTRT_CUDA_LAUNCHED(ctx);
  DISTRT_TRY(packBlock(ctx, s, k, v, cur.data));
  std::vector<bool> live;
  DISTRT_TRY(liveOnDevice(ctx, s, live));
  Ring kvRing(comm, fn), gradRing(comm, fn);
  for (int32_t step = 0; step < s.ranks; ++step) {
    const int32_t block = blockAt(s, step);
    if (step + 1 < s.ranks)
      DISTRT_TRY(kvRing.start(cur.data, next.data, s.kvFloats()));
    if (live[block]) {
      backwardQueries<<<gridFor(rows), kThreads, 0, stream>>>(
          s, block, q, cur.data, lse, dout, delta.data, dq);
      DISTRT_CUDA_LAUNCHED(ctx);
      backwardKeys<<<gridFor(keys), kThreads, 0, stream>>>(
          s, block, q, cur.data, lse, dout, delta.data, grad.data);
      DISTRT_CUDA_LAUNCHED(ctx);
    }
    // The block's gradient sums follow it once its kernel is done.
    if (s.ranks > 1) {
      DISTRT_TRY(gradRing.start(grad.data, gradNext.data, s.kvFloats()));
      DISTRT_TRY(gradRing.join());
      std::swap(grad.data, gradNext.data);
    }
    DISTRT_TRY(kvRing.join());
    std::swap(cur.data, next.data);
  }
  const int64_t kFloats = keys * s.d;
  DISTRT_CUDA_TRY(ctx, cudaMemcpyAsync(dk, grad.data, kFloats * sizeof(float),
                                       cudaMemcpyDeviceToDevice, stream));
  DISTRT_CUDA_TRY(ctx, cudaMemcpyAsync(dv, grad.data + kFloats,
                                       keys * s.dv * sizeof(float),
                                       cudaMemcpyDeviceToDevice, stream));
  DISTRT_CUDA_TRY(ctx, cudaStreamSynchronize(stream));
  return DISTRT_OK;
}

} // namespace cuda
} // namespace distrt
