//===- CudaComm.cu - NCCL collectives of the CUDA backend ------*- C++ -*-===//
//
// NCCL communicators on the context's device and collectives on its stream
// (Comm.cpp bootstraps the ncclUniqueId over MPI). Compiled only when CMake
// found NCCL (DISTRT_HAVE_NCCL).
//
//===----------------------------------------------------------------------===//
#ifdef DISTRT_HAVE_NCCL
#include "CommInternal.h"
#include "cuda/CudaState.h"

#include <nccl.h>

#include <cstring>

static_assert(NCCL_UNIQUE_ID_BYTES == distrt::cuda::kNcclIdBytes,
              "ncclUniqueId size changed; update kNcclIdBytes");

namespace distrt {
namespace cuda {

static distrt_status ncclFail(distrt_comm *comm, const char *fn,
                              const char *call, ncclResult_t r) {
  return setError(comm ? comm->ctx : nullptr, DISTRT_ERROR_BACKEND,
                  concat(fn, ": ", call, " failed on rank ",
                         comm ? comm->rank : 0, ": ", ncclGetErrorString(r),
                         " (", ncclGetLastError(nullptr),
                         "); set NCCL_DEBUG=WARN for details"));
}

#define DISTRT_NCCL_TRY(comm, fn, call)                                       \
  do {                                                                        \
    ncclResult_t ncclRes_ = (call);                                           \
    if (ncclRes_ != ncclSuccess)                                              \
      return ncclFail((comm), (fn), #call, ncclRes_);                         \
  } while (0)

static ncclComm_t handle(const distrt_comm *comm) {
  return static_cast<ncclComm_t>(comm->nccl);
}

static bool ncclTypeOf(distrt_dtype dt, ncclDataType_t &out) {
  switch (dt) {
  case DISTRT_F32:
    out = ncclFloat32;
    return true;
  case DISTRT_F16:
    out = ncclFloat16;
    return true;
  case DISTRT_BF16:
    out = ncclBfloat16;
    return true;
  case DISTRT_I32:
    out = ncclInt32;
    return true;
  case DISTRT_I64:
    out = ncclInt64;
    return true;
  case DISTRT_U8:
    out = ncclUint8;
    return true;
  }
  return false;
}

/// ncclTypeOf, or DISTRT_ERROR_UNSUPPORTED naming `fn` and the dtype.
static distrt_status ncclType(distrt_context *ctx, const char *fn,
                              distrt_dtype dt, ncclDataType_t &out) {
  if (ncclTypeOf(dt, out))
    return DISTRT_OK;
  return setError(ctx, DISTRT_ERROR_UNSUPPORTED,
                  concat(fn, ": dtype ", dtypeName(dt),
                         " is not carried by NCCL"));
}

distrt_status ncclMakeId(distrt_context *ctx, char *id) {
  ncclUniqueId uid;
  ncclResult_t r = ncclGetUniqueId(&uid);
  if (r != ncclSuccess)
    return setError(ctx, DISTRT_ERROR_BACKEND,
                    concat("distrt_comm_create: ncclGetUniqueId failed: ",
                           ncclGetErrorString(r)));
  std::memcpy(id, uid.internal, NCCL_UNIQUE_ID_BYTES);
  return DISTRT_OK;
}

distrt_status ncclInit(distrt_comm *comm, const char *id) {
  const char *fn = "distrt_comm_create";
  distrt_context *ctx = comm->ctx;
  DISTRT_CUDA_ENTER(ctx);
  ncclUniqueId uid;
  std::memcpy(uid.internal, id, NCCL_UNIQUE_ID_BYTES);
  ncclComm_t nc = nullptr;
  DISTRT_NCCL_TRY(comm, fn, ncclCommInitRank(&nc, comm->size, uid, comm->rank));
  comm->nccl = nc;
  return DISTRT_OK;
}

void ncclRelease(distrt_comm *comm) {
  if (comm->ncclStream) {
    // The started collectives finish before their communicator goes.
    auto stream = static_cast<cudaStream_t>(comm->ncclStream);
    cudaSetDevice(state(comm->ctx).device);
    cudaStreamSynchronize(stream);
    cudaEventDestroy(static_cast<cudaEvent_t>(comm->ncclEvent));
    cudaStreamDestroy(stream);
    comm->ncclStream = nullptr;
    comm->ncclEvent = nullptr;
  }
  if (comm->nccl)
    ncclCommDestroy(handle(comm));
  comm->nccl = nullptr;
}

static ncclRedOp_t ncclOp(distrt_reduce_op op) {
  return op == DISTRT_REDUCE_SUM    ? ncclSum
         : op == DISTRT_REDUCE_MEAN ? ncclAvg
         : op == DISTRT_REDUCE_MAX  ? ncclMax
                                    : ncclMin;
}

distrt_status ncclReduceScatter(distrt_comm *comm, const void *in, void *out,
                                size_t n, distrt_dtype dtype,
                                distrt_reduce_op op) {
  const char *fn = "distrt_reduce_scatter";
  distrt_context *ctx = comm->ctx;
  ncclDataType_t type;
  DISTRT_TRY(ncclType(ctx, fn, dtype, type));
  DISTRT_CUDA_ENTER(ctx);
  DISTRT_NCCL_TRY(comm, fn,
                  ncclReduceScatter(in, out, n, type, ncclOp(op), handle(comm),
                                    state(ctx).stream));
  return DISTRT_OK;
}

distrt_status ncclAllGather(distrt_comm *comm, const void *in, void *out,
                            size_t n, distrt_dtype dtype) {
  const char *fn = "distrt_all_gather";
  distrt_context *ctx = comm->ctx;
  ncclDataType_t type;
  DISTRT_TRY(ncclType(ctx, fn, dtype, type));
  DISTRT_CUDA_ENTER(ctx);
  DISTRT_NCCL_TRY(comm, fn,
                  ncclAllGather(in, out, n, type, handle(comm),
                                state(ctx).stream));
  return DISTRT_OK;
}

distrt_status ncclAllReduce(distrt_comm *comm, const void *in, void *out,
                            size_t n, distrt_dtype dtype, distrt_reduce_op op) {
  const char *fn = "distrt_all_reduce";
  distrt_context *ctx = comm->ctx;
  ncclDataType_t type;
  DISTRT_TRY(ncclType(ctx, fn, dtype, type));
  ncclRedOp_t red = ncclOp(op);
  DISTRT_CUDA_ENTER(ctx);
  DISTRT_NCCL_TRY(comm, fn,
                  ncclAllReduce(in, out, n, type, red, handle(comm),
                                state(ctx).stream));
  return DISTRT_OK;
}

/// The communicator's own stream (and its ordering event), made on first
/// use: started collectives overlap the context's stream.
static distrt_status commStream(distrt_comm *comm, const char *fn,
                                cudaStream_t &out) {
  distrt_context *ctx = comm->ctx;
  if (!comm->ncclStream) {
    cudaStream_t stream = nullptr;
    cudaEvent_t event = nullptr;
    cudaError_t err = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    if (err != cudaSuccess)
      return cudaFail(ctx, fn, err);
    err = cudaEventCreateWithFlags(&event, cudaEventDisableTiming);
    if (err != cudaSuccess) {
      cudaStreamDestroy(stream);
      return cudaFail(ctx, fn, err);
    }
    comm->ncclStream = stream;
    comm->ncclEvent = event;
  }
  out = static_cast<cudaStream_t>(comm->ncclStream);
  return DISTRT_OK;
}

distrt_status ncclAllReduceStart(distrt_comm *comm, const char *fn,
                                 const void *in, void *out, size_t n,
                                 distrt_dtype dtype, distrt_reduce_op op,
                                 void **done) {
  distrt_context *ctx = comm->ctx;
  ncclDataType_t type;
  DISTRT_TRY(ncclType(ctx, fn, dtype, type));
  DISTRT_CUDA_ENTER(ctx);
  cudaStream_t stream;
  DISTRT_TRY(commStream(comm, fn, stream));
  // The all-reduce reads what the context's stream computes before it.
  auto ready = static_cast<cudaEvent_t>(comm->ncclEvent);
  DISTRT_CUDA_TRY(ctx, cudaEventRecord(ready, state(ctx).stream));
  DISTRT_CUDA_TRY(ctx, cudaStreamWaitEvent(stream, ready, 0));
  cudaEvent_t finished = nullptr;
  DISTRT_CUDA_TRY(ctx,
                  cudaEventCreateWithFlags(&finished, cudaEventDisableTiming));
  ncclResult_t r =
      ncclAllReduce(in, out, n, type, ncclOp(op), handle(comm), stream);
  if (r != ncclSuccess) {
    cudaEventDestroy(finished);
    return ncclFail(comm, fn, "ncclAllReduce", r);
  }
  cudaError_t err = cudaEventRecord(finished, stream);
  if (err != cudaSuccess) {
    cudaEventDestroy(finished);
    return cudaFail(ctx, fn, err);
  }
  *done = finished;
  return DISTRT_OK;
}

distrt_status ncclWaitDone(distrt_context *ctx, void *done) {
  auto finished = static_cast<cudaEvent_t>(done);
  cudaError_t err = cudaSetDevice(state(ctx).device);
  if (err == cudaSuccess)
    err = cudaStreamWaitEvent(state(ctx).stream, finished, 0);
  // Safe while pending: CUDA frees the event once it completes.
  cudaEventDestroy(finished);
  if (err != cudaSuccess)
    return cudaFail(ctx, "distrt_wait", err);
  return DISTRT_OK;
}

distrt_status ncclAfterStarted(distrt_comm *comm) {
  if (!comm->ncclStream)
    return DISTRT_OK;
  distrt_context *ctx = comm->ctx;
  DISTRT_CUDA_ENTER(ctx);
  auto tail = static_cast<cudaEvent_t>(comm->ncclEvent);
  DISTRT_CUDA_TRY(
      ctx, cudaEventRecord(tail, static_cast<cudaStream_t>(comm->ncclStream)));
  DISTRT_CUDA_TRY(ctx, cudaStreamWaitEvent(state(ctx).stream, tail, 0));
  return DISTRT_OK;
}

distrt_status ncclBcast(distrt_comm *comm, void *buf, size_t n,
                        distrt_dtype dtype, int32_t root) {
  const char *fn = "distrt_broadcast";
  distrt_context *ctx = comm->ctx;
  ncclDataType_t type;
  DISTRT_TRY(ncclType(ctx, fn, dtype, type));
  DISTRT_CUDA_ENTER(ctx);
  DISTRT_NCCL_TRY(comm, fn,
                  ncclBroadcast(buf, buf, n, type, root, handle(comm),
                                state(ctx).stream));
  return DISTRT_OK;
}

distrt_status ncclSendBytes(distrt_comm *comm, const void *buf, size_t bytes,
                            int32_t peer) {
  distrt_context *ctx = comm->ctx;
  DISTRT_CUDA_ENTER(ctx);
  DISTRT_NCCL_TRY(comm, "distrt_send",
                  ncclSend(buf, bytes, ncclUint8, peer, handle(comm),
                           state(ctx).stream));
  return DISTRT_OK;
}

distrt_status ncclRecvBytes(distrt_comm *comm, void *buf, size_t bytes,
                            int32_t peer) {
  distrt_context *ctx = comm->ctx;
  DISTRT_CUDA_ENTER(ctx);
  DISTRT_NCCL_TRY(comm, "distrt_recv",
                  ncclRecv(buf, bytes, ncclUint8, peer, handle(comm),
                           state(ctx).stream));
  return DISTRT_OK;
}

distrt_status ncclAllToAll(distrt_comm *comm, const void *send, void *recv,
                           size_t blockBytes) {
  const char *fn = "distrt_all_to_all";
  distrt_context *ctx = comm->ctx;
  DISTRT_CUDA_ENTER(ctx);
  const char *s = static_cast<const char *>(send);
  char *r = static_cast<char *>(recv);
  DISTRT_NCCL_TRY(comm, fn, ncclGroupStart());
  for (int32_t p = 0; p < comm->size; ++p) {
    ncclResult_t res = ncclSend(s + (size_t)p * blockBytes, blockBytes,
                                ncclUint8, p, handle(comm), state(ctx).stream);
    if (res == ncclSuccess)
      res = ncclRecv(r + (size_t)p * blockBytes, blockBytes, ncclUint8, p,
                     handle(comm), state(ctx).stream);
    if (res != ncclSuccess) {
      ncclGroupEnd();
      return ncclFail(comm, fn, "ncclSend/ncclRecv", res);
    }
  }
  DISTRT_NCCL_TRY(comm, fn, ncclGroupEnd());
  return DISTRT_OK;
}

distrt_status copyRows(distrt_context *ctx, void *dst, size_t dstPitch,
                       const void *src, size_t srcPitch, size_t width,
                       size_t height) {
  DISTRT_CUDA_ENTER(ctx);
  DISTRT_CUDA_TRY(ctx, cudaMemcpy2DAsync(dst, dstPitch, src, srcPitch, width,
                                         height, cudaMemcpyDeviceToDevice,
                                         state(ctx).stream));
  return DISTRT_OK;
}

} // namespace cuda
} // namespace distrt
#endif // DISTRT_HAVE_NCCL
