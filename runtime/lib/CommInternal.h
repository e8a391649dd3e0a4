//===- CommInternal.h - Communicator state shared by backends --*- C++ -*-===//
//
// The communicator behind the opaque distrt_comm, and the NCCL entry points
// Comm.cpp calls on CUDA contexts (cuda/CudaComm.cu; only compiled when
// NCCL was found). No MPI or NCCL header is included: handles are opaque.
//
//===----------------------------------------------------------------------===//
#ifndef DISTRT_LIB_COMMINTERNAL_H
#define DISTRT_LIB_COMMINTERNAL_H

#include "Internal.h"

#include <atomic>
#include <string>

namespace distrt {
struct CommQueue;
} // namespace distrt

struct distrt_comm {
  distrt_context *ctx = nullptr;
  int32_t rank = 0;
  int32_t size = 1;
  /// "local" (a world of one), "mpi" or "nccl".
  const char *backend = "local";
  /// A heap MPI_Comm (a duplicate of MPI_COMM_WORLD) when MPI is in use.
  void *mpi = nullptr;
  /// The ncclComm_t of a CUDA context with more than one rank.
  void *nccl = nullptr;
  /// Cross-rank check of every collective's arguments (DISTRT_COMM_CHECK=0
  /// turns it off).
  bool checkArgs = true;
  /// Seconds a transfer or collective waits for its peers before it fails
  /// (DISTRT_TIMEOUT, distrt_comm_set_timeout); 0 waits forever. Atomic:
  /// the worker thread reads it while the caller may set it.
  std::atomic<double> timeout{60};
  /// MPI_Init_thread provided MPI_THREAD_MULTIPLE, so a worker thread may
  /// run started collectives while the caller's thread uses MPI too.
  bool mpiThreads = false;
  /// Started collectives run on the worker thread (distrt_comm_set_overlap);
  /// otherwise on the caller's when waited for.
  bool overlapThread = true;
  /// The FIFO of started collectives on the MPI backend and, with
  /// overlapThread, the worker thread that runs them (Comm.cpp); made by the
  /// first distrt_all_reduce_start.
  distrt::CommQueue *queue = nullptr;
  /// NCCL: the cudaStream_t started collectives run on and a reusable
  /// cudaEvent_t for ordering it with the context's stream, made by the
  /// first distrt_all_reduce_start.
  void *ncclStream = nullptr;
  void *ncclEvent = nullptr;
  /// MPI sends in flight (Comm.cpp's PendingSends): distrt_send copies the
  /// payload and returns, so two ranks sending to each other never wait on
  /// each other (a 1F1B pipeline's forward and backward transfers cross).
  void *pendingSends = nullptr;
};

namespace distrt {

/// The largest tag distrt_send/recv accept (MPI guarantees at least 32767);
/// the ring's transfers use the next one, so a ring on a worker thread never
/// matches a caller's message.
constexpr int32_t kMaxSendTag = 32767;

namespace cuda {

/// Bytes of an ncclUniqueId (NCCL_UNIQUE_ID_BYTES).
constexpr int kNcclIdBytes = 128;

/// Rank 0 of a world: a fresh ncclUniqueId into `id`.
distrt_status ncclMakeId(distrt_context *ctx, char *id);
/// Creates comm->nccl for comm->rank of comm->size on the context's device.
distrt_status ncclInit(distrt_comm *comm, const char *id);
void ncclRelease(distrt_comm *comm);
/// On the context's stream; `n` elements of `dtype`.
distrt_status ncclAllReduce(distrt_comm *comm, const void *in, void *out,
                            size_t n, distrt_dtype dtype, distrt_reduce_op op);
/// ncclAllReduce on the communicator's own stream, after the work queued so
/// far on the context's stream; `*done` receives a cudaEvent_t recorded
/// after it (ncclWaitDone releases it).
distrt_status ncclAllReduceStart(distrt_comm *comm, const char *fn,
                                 const void *in, void *out, size_t n,
                                 distrt_dtype dtype, distrt_reduce_op op,
                                 void **done);
/// Makes the context's stream wait for `done` and destroys it.
distrt_status ncclWaitDone(distrt_context *ctx, void *done);
/// Makes the context's stream wait for every collective started on the
/// communicator's stream so far (nothing when none was started).
distrt_status ncclAfterStarted(distrt_comm *comm);
distrt_status ncclBcast(distrt_comm *comm, void *buf, size_t n,
                        distrt_dtype dtype, int32_t root);
/// `n` elements per rank: `in` holds size x n, `out` n.
distrt_status ncclReduceScatter(distrt_comm *comm, const void *in, void *out,
                                size_t n, distrt_dtype dtype,
                                distrt_reduce_op op);
/// `n` elements per rank: `in` holds n, `out` size x n.
distrt_status ncclAllGather(distrt_comm *comm, const void *in, void *out,
                            size_t n, distrt_dtype dtype);
/// All-to-all of contiguous blocks: block j (`blockBytes` bytes) of `send`
/// goes to rank j, and rank j's block lands at block j of `recv` (grouped
/// ncclSend/ncclRecv on the context's stream).
distrt_status ncclAllToAll(distrt_comm *comm, const void *send, void *recv,
                           size_t blockBytes);
/// `height` rows of `width` bytes from `src` (rows `srcPitch` bytes apart)
/// to `dst` (rows `dstPitch` apart), on the context's stream.
distrt_status copyRows(distrt_context *ctx, void *dst, size_t dstPitch,
                       const void *src, size_t srcPitch, size_t width,
                       size_t height);
/// Point-to-point: `bytes` bytes as ncclUint8 on the context's stream.
distrt_status ncclSendBytes(distrt_comm *comm, const void *buf, size_t bytes,
                            int32_t peer);
distrt_status ncclRecvBytes(distrt_comm *comm, void *buf, size_t bytes,
                            int32_t peer);

} // namespace cuda
} // namespace distrt

#endif // DISTRT_LIB_COMMINTERNAL_H
