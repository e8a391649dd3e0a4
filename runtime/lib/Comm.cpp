//===- Comm.cpp - Communicators and collectives (MPI, NCCL) ----*- C++ -*-===//
//
// The distrt_comm ABI (distrt_comm.h). A world of one needs nothing: its
// collectives are local copies. Larger worlds use MPI on CPU contexts and
// NCCL (bootstrapped over MPI) on CUDA contexts. Sum and mean on MPI run a
// ring reduce-scatter and all-gather (Ring.cpp): each element is reduced in
// one place, so every rank ends with the same bits and data-parallel
// replicas apply identical optimizer updates and never drift. The ring also
// reduces f16 and bf16 (every op), which MPI has no type for: a tensor-
// parallel sum of a mixed-precision forward.
//
// Started all-reduces (distrt_all_reduce_start) run on a worker thread of
// the communicator on MPI, on the communicator's own stream on NCCL; every
// other collective first waits for (or queues after) the started ones, so
// each rank issues its collectives in the one order it called them.
//
//===----------------------------------------------------------------------===//
#include "CommInternal.h"
#include "CommMpi.h"
#include "Ring.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

/// A started all-reduce and, once it ran, its result.
struct distrt_request {
  distrt_comm *comm = nullptr;
  /// Where distrt_wait reports (a completed request needs no `comm`).
  distrt_context *ctx = nullptr;
  distrt_tensor input = {};
  void *output = nullptr;
  distrt_reduce_op op = DISTRT_REDUCE_SUM;
  /// Set under the queue's lock after status and message.
  std::atomic<bool> done{false};
  distrt_status status = DISTRT_OK;
  std::string message;
  /// NCCL: the cudaEvent_t recorded after the all-reduce.
  void *ncclDone = nullptr;
};

namespace distrt {
/// The all-reduces started on an MPI communicator, run first started
/// first: by its worker thread, or (without one: distrt_comm_set_overlap
/// 0) by the caller's thread when it waits for one of them.
struct CommQueue {
  std::mutex mutex;
  /// Work arrived, or the worker must stop.
  std::condition_variable wake;
  /// A request completed.
  std::condition_variable finished;
  std::deque<distrt_request *> pending;
  /// The worker runs a request it took from `pending`.
  bool busy = false;
  bool stop = false;
  /// Not joinable when the caller runs the queue (deferred).
  std::thread worker;
};
} // namespace distrt

using namespace distrt;
#ifdef DISTRT_HAVE_MPI
using namespace distrt::mpi;
#endif

namespace {

/// Parses a non-negative decimal environment variable; -1 when unset,
/// -2 when malformed.
int64_t envInt(const char *name) {
  const char *v = std::getenv(name);
  if (!v || !*v)
    return -1;
  char *end = nullptr;
  long long x = std::strtoll(v, &end, 10);
  if (*end || x < 0)
    return -2;
  return x;
}

struct EnvWorld {
  const char *rankVar, *sizeVar, *localVar;
};

/// Launcher conventions, most specific first.
const EnvWorld kLaunchers[] = {
    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
     "OMPI_COMM_WORLD_LOCAL_RANK"},
    {"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},
    {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
    {"RANK", "WORLD_SIZE", "LOCAL_RANK"},
};

size_t elementSize(distrt_dtype dt) { return distrt_dtype_size(dt); }

#ifdef DISTRT_HAVE_MPI
void finalizeMpi() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized)
    MPI_Finalize();
}

/// A send in flight: its header and a copy of its payload, kept until MPI
/// has sent them.
struct PendingSend {
  int64_t header[2] = {0, 0};
  std::vector<char> payload;
  std::vector<MPI_Request> requests;
};
using PendingSends = std::vector<std::unique_ptr<PendingSend>>;

PendingSends &pendingOf(distrt_comm *comm) {
  if (!comm->pendingSends)
    comm->pendingSends = new PendingSends();
  return *static_cast<PendingSends *>(comm->pendingSends);
}

/// Frees the sends MPI has completed; with \p wait, waits for all.
distrt_status reapSends(distrt_comm *comm, const char *fn, bool wait) {
  if (!comm->pendingSends)
    return DISTRT_OK;
  PendingSends &pending = pendingOf(comm);
  for (size_t k = 0; k < pending.size();) {
    std::vector<MPI_Request> &r = pending[k]->requests;
    int done = 1;
    if (wait)
      DISTRT_TRY(waitUntil(comm, fn, "its sent messages to be received", -1,
                           [&](int &all) {
                             return MPI_Testall((int)r.size(), r.data(), &all,
                                                MPI_STATUSES_IGNORE);
                           }));
    else
      DISTRT_MPI_TRY(comm, fn, MPI_Testall((int)r.size(), r.data(), &done,
                                           MPI_STATUSES_IGNORE));
    if (done)
      pending.erase(pending.begin() + k);
    else
      ++k;
  }
  return DISTRT_OK;
}

#endif

const char *opName(distrt_reduce_op op) {
  switch (op) {
  case DISTRT_REDUCE_SUM:
    return "sum";
  case DISTRT_REDUCE_MEAN:
    return "mean";
  case DISTRT_REDUCE_MAX:
    return "max";
  case DISTRT_REDUCE_MIN:
    return "min";
  }
  return "?";
}

/// What checkAgreement's `extra` is for collective `kind`: a broadcast's
/// root (1), an all-to-all's axes (5), else a reduction op.
std::string extraText(int64_t kind, int64_t extra) {
  if (kind == 1)
    return concat("root ", extra);
  if (kind == 5)
    return concat("split axis ", extra / DISTRT_MAX_RANK, ", concat axis ",
                  extra % DISTRT_MAX_RANK);
  return concat("op ", opName((distrt_reduce_op)extra));
}

/// Every rank must pass the same collective: gathers (kind, dtype, count,
/// op-or-root) from all ranks and names the first rank that differs.
distrt_status checkAgreement(distrt_comm *comm, const char *fn,
                             int64_t kind, const distrt_tensor &t,
                             int64_t extra) {
#ifdef DISTRT_HAVE_MPI
  if (!comm->mpi || !comm->checkArgs)
    return DISTRT_OK;
  int64_t mine[4] = {kind, (int64_t)t.dtype, distrt_numel(&t), extra};
  std::vector<int64_t> all(4 * (size_t)comm->size);
  DISTRT_MPI_WAIT(comm, fn, "the same collective", -1,
                  MPI_Iallgather(mine, 4, MPI_INT64_T, all.data(), 4,
                                 MPI_INT64_T, mpiOf(comm), &request_));
  for (int32_t r = 0; r < comm->size; ++r) {
    const int64_t *o = &all[4 * (size_t)r];
    if (o[0] == mine[0] && o[1] == mine[1] && o[2] == mine[2] &&
        o[3] == mine[3])
      continue;
    if (o[0] != mine[0])
      return setError(comm->ctx, DISTRT_ERROR_INVALID_ARGUMENT,
                      concat(fn, ": rank ", comm->rank,
                             " is in this collective while rank ", r,
                             " is in another; every rank must issue the "
                             "same collectives in the same order"));
    return setError(comm->ctx, DISTRT_ERROR_SHAPE_MISMATCH,
                    concat(fn, ": mismatched arguments across ranks: rank ",
                           comm->rank, " passes ", dtypeName(t.dtype), " x ",
                           mine[2], " elements (", extraText(kind, mine[3]),
                           ") but rank ", r, " passes ",
                           dtypeName((distrt_dtype)o[1]), " x ", o[2],
                           " elements (", extraText(kind, o[3]),
                           "); every rank must pass the same dtype, size and ",
                           kind == 1   ? "root"
                           : kind == 5 ? "axes"
                                       : "op"));
  }
#else
  (void)comm, (void)fn, (void)kind, (void)t, (void)extra;
#endif
  return DISTRT_OK;
}

/// `op` is a distrt_reduce_op, and mean is of a floating dtype.
distrt_status checkReduceOp(Checker &c, distrt_dtype dtype,
                            distrt_reduce_op op) {
  if (op < DISTRT_REDUCE_SUM || op > DISTRT_REDUCE_MIN)
    return c.fail(DISTRT_ERROR_INVALID_ARGUMENT, "op ", (int)op,
                  " is not a distrt_reduce_op (SUM, MEAN, MAX, MIN)");
  bool isFloat = dtype == DISTRT_F32 || dtype == DISTRT_F16 ||
                 dtype == DISTRT_BF16;
  if (op == DISTRT_REDUCE_MEAN && !isFloat)
    return c.fail(DISTRT_ERROR_UNSUPPORTED, "mean of ",
                  dtypeName(dtype),
                  " values; use sum and divide, or a floating dtype");
  return DISTRT_OK;
}

distrt_status checkComm(const distrt_comm *comm, const char *fn) {
  if (!comm)
    return setError(nullptr, DISTRT_ERROR_INVALID_ARGUMENT,
                    concat(fn, ": communicator is NULL; create one with "
                               "distrt_comm_create()"));
  return DISTRT_OK;
}

/// Copies `bytes` between two buffers of the communicator's context.
distrt_status localCopy(distrt_comm *comm, void *dst, const void *src,
                        size_t bytes) {
  if (dst == src || !bytes)
    return DISTRT_OK;
  if (comm->ctx->isCuda())
    return distrt_copy(comm->ctx, dst, src, bytes,
                       DISTRT_COPY_DEVICE_TO_DEVICE);
  std::memcpy(dst, src, bytes);
  return DISTRT_OK;
}

#ifdef DISTRT_HAVE_MPI
/// Creates the NCCL communicator of \p comm (MPI already joined): rank 0
/// makes the id and broadcasts it over the communicator's MPI group.
distrt_status joinNccl(distrt_comm *comm, const char *fn) {
#ifdef DISTRT_HAVE_NCCL
  char id[cuda::kNcclIdBytes] = {};
  distrt_status st = DISTRT_OK;
  if (comm->rank == 0)
    st = cuda::ncclMakeId(comm->ctx, id);
  // Every rank joins the broadcast so a failing rank 0 cannot hang the
  // others; they learn of the failure from the flag that travels with it.
  int ok = st == DISTRT_OK;
  MPI_Bcast(&ok, 1, MPI_INT, 0, mpiOf(comm));
  if (ok)
    MPI_Bcast(id, cuda::kNcclIdBytes, MPI_BYTE, 0, mpiOf(comm));
  if (ok)
    st = cuda::ncclInit(comm, id);
  else if (comm->rank != 0)
    st = setError(comm->ctx, DISTRT_ERROR_BACKEND,
                  concat(fn, ": rank 0 could not create the NCCL id; see its "
                             "error"));
  if (st == DISTRT_OK)
    comm->backend = "nccl";
  return st;
#else
  return setError(comm->ctx, DISTRT_ERROR_UNSUPPORTED,
                  concat(fn, ": a CUDA context with ", comm->size,
                         " ranks needs NCCL, and this runtime was built "
                         "without it; install NCCL (nccl.h, libnccl.so) and "
                         "rebuild"));
#endif
}
/// Completes a communicator whose MPI_Comm is made (the world's or a
/// group's): errors are returned, not fatal, and a CUDA context gets its
/// NCCL communicator. On failure the communicator is destroyed.
distrt_status finishMpiComm(distrt_comm *comm, const char *fn,
                            distrt_comm **out) {
  MPI_Comm_set_errhandler(mpiOf(comm), MPI_ERRORS_RETURN);
  comm->backend = "mpi";
  if (comm->ctx->isCuda()) {
    distrt_status st = joinNccl(comm, fn);
    if (st != DISTRT_OK) {
      distrt_comm_destroy(comm);
      return st;
    }
  }
  *out = comm;
  return DISTRT_OK;
}
#endif

/// The checks of an all-reduce that need no other rank: they fail at once,
/// also for a started one.
distrt_status checkAllReduce(distrt_comm *comm, const char *fn,
                             const distrt_tensor *input,
                             const distrt_tensor *output, distrt_reduce_op op) {
  Checker c(comm->ctx, fn);
  DISTRT_TRY(c.pointer("input", input));
  DISTRT_TRY(c.tensor("input", input, input->dtype));
  if (output) {
    DISTRT_TRY(c.tensor("output", output, output->dtype));
    if (output->dtype != input->dtype ||
        distrt_numel(output) != distrt_numel(input))
      return c.fail(DISTRT_ERROR_SHAPE_MISMATCH, "output is ",
                    dtypeName(output->dtype), " ", shapeString(*output),
                    " but input is ", dtypeName(input->dtype), " ",
                    shapeString(*input),
                    "; the output needs the input's dtype and element count");
  }
  DISTRT_TRY(checkReduceOp(c, input->dtype, op));
  size_t bytes = (size_t)distrt_numel(input) * elementSize(input->dtype);
  const void *out = output ? output->data : input->data;
  const void *in = input->data;
  if (out != in && bytes && (const char *)out < (const char *)in + bytes &&
      (const char *)in < (const char *)out + bytes)
    return c.fail(DISTRT_ERROR_INVALID_ARGUMENT,
                  "output overlaps input without being the same buffer; "
                  "pass the same tensor (in place) or disjoint memory");
  return DISTRT_OK;
}

/// The all-reduce itself, once checkAllReduce passed: the cross-rank check,
/// then a copy, NCCL or MPI. The blocking call runs it on the caller's
/// thread, a started one on the worker thread. With `ncclDone`, NCCL runs on
/// the communicator's stream and records *ncclDone after it.
distrt_status runAllReduce(distrt_comm *comm, const char *fn,
                           const distrt_tensor &input, void *out,
                           distrt_reduce_op op, void **ncclDone) {
  (void)ncclDone;
  DISTRT_TRY(checkAgreement(comm, fn, 0, input, op));
  size_t n = (size_t)distrt_numel(&input);
  size_t bytes = n * elementSize(input.dtype);
  const void *in = input.data;
  if (comm->size == 1)
    return localCopy(comm, out, in, bytes);
#ifdef DISTRT_HAVE_NCCL
  if (comm->nccl)
    return ncclDone ? cuda::ncclAllReduceStart(comm, fn, in, out, n,
                                               input.dtype, op, ncclDone)
                    : cuda::ncclAllReduce(comm, in, out, n, input.dtype, op);
#endif
#ifdef DISTRT_HAVE_MPI
  // 16-bit floats have no MPI type: the ring reduces them, every op.
  const bool half = isHalfFloat(input.dtype);
  MPI_Datatype type;
  if (!half)
    DISTRT_TRY(mpiType(comm, fn, input.dtype, type));
  MPI_Comm mc = mpiOf(comm);
  char *o = static_cast<char *>(out);
  const char *i = static_cast<const char *>(in);
  size_t esz = elementSize(input.dtype);
  if (!half && (op == DISTRT_REDUCE_MAX || op == DISTRT_REDUCE_MIN))
    return chunked(n, [&](size_t off, int cnt) {
      DISTRT_MPI_WAIT(
          comm, fn, "its all-reduce", -1,
          MPI_Iallreduce(out == in ? MPI_IN_PLACE : i + off * esz,
                         o + off * esz, cnt, type,
                         op == DISTRT_REDUCE_MAX ? MPI_MAX : MPI_MIN, mc,
                         &request_));
      return DISTRT_OK;
    });
  // Sum and mean (16-bit floats: every op): a ring reduce-scatter then
  // all-gather on the output, in slices whose blocks MPI's int byte counts
  // hold.
  if (out != in)
    std::memcpy(o, i, bytes);
  const size_t slice = (size_t(1) << 26) * (size_t)comm->size;
  for (size_t off = 0; off < n; off += slice) {
    size_t cnt = std::min(slice, n - off);
    DISTRT_TRY(
        ringReduceScatter(comm, fn, o + off * esz, cnt, input.dtype, op));
    DISTRT_TRY(ringAllGather(comm, fn, o + off * esz, cnt, input.dtype));
  }
  return DISTRT_OK;
#else
  return setError(comm->ctx, DISTRT_ERROR_UNSUPPORTED,
                  concat(fn, ": no MPI in this runtime"));
#endif
}

/// Runs `body` (an all-reduce) into `req`: its status, and its message
/// captured instead of set on the context, which only distrt_wait, on the
/// caller's thread, writes.
template <typename F>
void runInto(distrt_request &req, const char *fn, F body) {
  std::string message;
  distrt_status st;
  {
    ErrorCapture capture(message);
    try {
      st = body();
    } catch (...) {
      st = guardException(nullptr, fn);
    }
  }
  req.status = st;
  if (st != DISTRT_OK)
    req.message = std::move(message);
}

const char *const kStartFn = "distrt_all_reduce_start";

/// The worker: runs the queue's requests in order until told to stop with
/// nothing pending.
void workerLoop(CommQueue *q) {
  std::unique_lock<std::mutex> lock(q->mutex);
  for (;;) {
    q->wake.wait(lock, [&] { return q->stop || !q->pending.empty(); });
    if (q->pending.empty())
      return;
    distrt_request *req = q->pending.front();
    q->pending.pop_front();
    q->busy = true;
    lock.unlock();
    runInto(*req, kStartFn, [&] {
      return runAllReduce(req->comm, kStartFn, req->input, req->output, req->op,
                          nullptr);
    });
    lock.lock();
    // distrt_wait may free the request from here on.
    req->done.store(true, std::memory_order_release);
    q->busy = false;
    q->finished.notify_all();
  }
}

/// The communicator's queue, made on first use with its worker (when
/// started collectives overlap on a thread); null when it cannot be made
/// (the caller then runs the all-reduce itself).
CommQueue *queueOf(distrt_comm *comm) {
  if (comm->queue)
    return comm->queue;
  try {
    auto q = std::make_unique<CommQueue>();
    if (comm->overlapThread)
      q->worker = std::thread(workerLoop, q.get());
    comm->queue = q.release();
  } catch (...) {
    return nullptr;
  }
  return comm->queue;
}

/// Without a worker: runs `only` on this thread (taken from the queue), or
/// every queued request, first started first, when null. Every rank waits
/// in one order (the program's), so running the waited one alone keeps the
/// ranks' collectives in step, and each runs right before its reader (as
/// the blocking call would, with its result hot in cache).
void runDeferred(CommQueue &q, distrt_request *only) {
  auto run = [](distrt_request *req) {
    runInto(*req, kStartFn, [&] {
      return runAllReduce(req->comm, kStartFn, req->input, req->output, req->op,
                          nullptr);
    });
    req->done.store(true, std::memory_order_release);
  };
  if (only) {
    q.pending.erase(std::find(q.pending.begin(), q.pending.end(), only));
    return run(only);
  }
  while (!q.pending.empty()) {
    distrt_request *req = q.pending.front();
    q.pending.pop_front();
    run(req);
  }
}

/// Every rank must issue one communicator's collectives in one order, the
/// order it started or called them: a blocking collective runs after the
/// started ones (MPI: waits until the worker is idle; NCCL: the context's
/// stream waits for the communicator's).
distrt_status afterStarted(distrt_comm *comm) {
  if (CommQueue *q = comm->queue) {
    if (!q->worker.joinable()) {
      runDeferred(*q, nullptr);
    } else {
      std::unique_lock<std::mutex> lock(q->mutex);
      q->finished.wait(lock, [&] { return q->pending.empty() && !q->busy; });
    }
  }
#ifdef DISTRT_HAVE_NCCL
  if (comm->nccl)
    return cuda::ncclAfterStarted(comm);
#endif
  return DISTRT_OK;
}

/// Completes the started collectives and joins the worker.
void stopWorker(distrt_comm *comm) {
  CommQueue *q = comm->queue;
  if (!q)
    return;
  if (!q->worker.joinable()) {
    runDeferred(*q, nullptr);
    delete q;
    comm->queue = nullptr;
    return;
  }
  {
    std::lock_guard<std::mutex> lock(q->mutex);
    q->stop = true;
  }
  q->wake.notify_all();
  q->worker.join();
  delete q;
  comm->queue = nullptr;
}

} // namespace

extern "C" distrt_status distrt_comm_env(int32_t *rank, int32_t *size,
                                         int32_t *localRank) {
  const char *fn = "distrt_comm_env";
  int64_t r = 0, s = 1, l = 0;
  for (const EnvWorld &w : kLaunchers) {
    int64_t er = envInt(w.rankVar), es = envInt(w.sizeVar);
    if (er == -1 && es == -1)
      continue;
    if (er < 0 || es < 1 || er >= es)
      return setError(nullptr, DISTRT_ERROR_INVALID_ARGUMENT,
                      concat(fn, ": the launcher's environment is malformed: ",
                             w.rankVar, "='",
                             std::getenv(w.rankVar) ? std::getenv(w.rankVar)
                                                    : "",
                             "', ", w.sizeVar, "='",
                             std::getenv(w.sizeVar) ? std::getenv(w.sizeVar)
                                                    : "",
                             "'; expected 0 <= rank < size"));
    r = er;
    s = es;
    int64_t el = envInt(w.localVar);
    l = el >= 0 ? el : er;
    break;
  }
  if (rank)
    *rank = (int32_t)r;
  if (size)
    *size = (int32_t)s;
  if (localRank)
    *localRank = (int32_t)l;
  return DISTRT_OK;
}

extern "C" distrt_status distrt_comm_create(distrt_context *ctx,
                                            distrt_comm **out) {
  const char *fn = "distrt_comm_create";
  Checker c(ctx, fn);
  DISTRT_TRY(c.context());
  DISTRT_TRY(c.pointer("out", out));
  *out = nullptr;
  int32_t rank = 0, size = 1;
  DISTRT_TRY(distrt_comm_env(&rank, &size, nullptr));
  distrt_comm *comm = new (std::nothrow) distrt_comm;
  if (!comm)
    return c.fail(DISTRT_ERROR_OUT_OF_MEMORY, "cannot allocate a communicator");
  comm->ctx = ctx;
  comm->rank = rank;
  comm->size = size;
  const char *check = std::getenv("DISTRT_COMM_CHECK");
  comm->checkArgs = !(check && std::strcmp(check, "0") == 0);
  if (const char *t = std::getenv("DISTRT_COMM_THREAD"); t && *t) {
    if (std::strcmp(t, "0") && std::strcmp(t, "1")) {
      delete comm;
      return c.fail(DISTRT_ERROR_INVALID_ARGUMENT, "DISTRT_COMM_THREAD='", t,
                    "' is neither 0 (started all-reduces run when waited "
                    "for) nor 1 (on a worker thread)");
    }
    comm->overlapThread = *t == '1';
  }
  if (const char *t = std::getenv("DISTRT_TIMEOUT"); t && *t) {
    char *end = nullptr;
    double seconds = std::strtod(t, &end);
    if (*end || !(seconds >= 0) || seconds > 1e9) {
      delete comm;
      return c.fail(DISTRT_ERROR_INVALID_ARGUMENT, "DISTRT_TIMEOUT='", t,
                    "' is not a number of seconds (0 waits forever)");
    }
    comm->timeout = seconds;
  }
  if (size == 1) {
    *out = comm;
    return DISTRT_OK;
  }
#ifdef DISTRT_HAVE_MPI
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised) {
    // MPI_THREAD_MULTIPLE lets a communicator's worker thread run started
    // collectives while this thread calls MPI too.
    int provided = MPI_THREAD_SINGLE;
    int code =
        MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
    if (code != MPI_SUCCESS) {
      delete comm;
      return c.fail(DISTRT_ERROR_BACKEND,
                    "MPI_Init_thread failed: ", mpiMessage(code),
                    "; launch the program with mpirun (Open MPI)");
    }
    std::atexit(finalizeMpi);
  }
  // Also when someone else initialised MPI, perhaps with less.
  int threadLevel = MPI_THREAD_SINGLE;
  MPI_Query_thread(&threadLevel);
  comm->mpiThreads = threadLevel >= MPI_THREAD_MULTIPLE;
  int mpiRank = 0, mpiSize = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &mpiRank);
  MPI_Comm_size(MPI_COMM_WORLD, &mpiSize);
  if (mpiRank != rank || mpiSize != size) {
    delete comm;
    return c.fail(DISTRT_ERROR_INVALID_ARGUMENT, "the launcher's environment "
                  "says rank ", rank, " of ", size, " but MPI says rank ",
                  mpiRank, " of ", mpiSize,
                  "; launch with mpirun so both agree");
  }
  comm->mpi = new (std::nothrow) MPI_Comm;
  if (!comm->mpi || MPI_Comm_dup(MPI_COMM_WORLD, &mpiOf(comm)) != MPI_SUCCESS) {
    delete static_cast<MPI_Comm *>(comm->mpi);
    delete comm;
    return c.fail(DISTRT_ERROR_BACKEND, "MPI_Comm_dup failed");
  }
  return finishMpiComm(comm, fn, out);
#else
  delete comm;
  return c.fail(DISTRT_ERROR_UNSUPPORTED, "the launcher started ", size,
                " ranks but this runtime was built without MPI; install "
                "libopenmpi-dev (scripts/install-deps.sh) and rebuild");
#endif
}

extern "C" distrt_status distrt_comm_group(distrt_comm *comm,
                                           const int32_t *ranks, int32_t n,
                                           distrt_comm **out) {
  const char *fn = "distrt_comm_group";
  DISTRT_TRY(checkComm(comm, fn));
  Checker c(comm->ctx, fn);
  DISTRT_TRY(c.pointer("out", out));
  *out = nullptr;
  if (n < 1 || n > comm->size || !ranks)
    return c.fail(DISTRT_ERROR_INVALID_ARGUMENT, "a group of ", n,
                  " rank(s) in a world of ", comm->size,
                  "; list between 1 and ", comm->size, " ranks");
  int32_t mine = -1;
  std::vector<bool> seen((size_t)comm->size, false);
  for (int32_t k = 0; k < n; ++k) {
    if (ranks[k] < 0 || ranks[k] >= comm->size || seen[(size_t)ranks[k]])
      return c.fail(DISTRT_ERROR_INVALID_ARGUMENT, "rank ", ranks[k],
                    " (entry ", k, ") is ",
                    ranks[k] < 0 || ranks[k] >= comm->size
                        ? "outside the world"
                        : "listed twice",
                    "; a group lists distinct ranks of the world of ",
                    comm->size);
    seen[(size_t)ranks[k]] = true;
    if (ranks[k] == comm->rank)
      mine = k;
  }
  if (mine < 0)
    return c.fail(DISTRT_ERROR_INVALID_ARGUMENT, "rank ", comm->rank,
                  " is not in the group it joins; only the group's ranks "
                  "call distrt_comm_group");
  // Collective over the parent: after the collectives started on it.
  DISTRT_TRY(afterStarted(comm));
  distrt_comm *g = new (std::nothrow) distrt_comm;
  if (!g)
    return c.fail(DISTRT_ERROR_OUT_OF_MEMORY, "cannot allocate a communicator");
  g->ctx = comm->ctx;
  g->rank = mine;
  g->size = n;
  g->checkArgs = comm->checkArgs;
  g->timeout = comm->timeout.load();
  g->mpiThreads = comm->mpiThreads;
  g->overlapThread = comm->overlapThread;
  if (n == 1) {
    *out = g;
    return DISTRT_OK;
  }
#ifdef DISTRT_HAVE_MPI
  MPI_Group world, members;
  g->mpi = new (std::nothrow) MPI_Comm;
  int code = g->mpi ? MPI_Comm_group(mpiOf(comm), &world) : MPI_ERR_NO_MEM;
  if (code == MPI_SUCCESS) {
    code = MPI_Group_incl(world, n, ranks, &members);
    MPI_Group_free(&world);
  }
  if (code == MPI_SUCCESS) {
    // Collective over the members only: each group is made by its own
    // ranks, whenever they first need it.
    code = MPI_Comm_create_group(mpiOf(comm), members, /*tag=*/0, &mpiOf(g));
    MPI_Group_free(&members);
  }
  if (code != MPI_SUCCESS) {
    delete static_cast<MPI_Comm *>(g->mpi);
    delete g;
    return mpiFail(comm, fn, "MPI_Comm_create_group", code);
  }
  return finishMpiComm(g, fn, out);
#else
  delete g;
  return c.fail(DISTRT_ERROR_UNSUPPORTED, "no MPI in this runtime");
#endif
}

extern "C" distrt_status distrt_comm_set_timeout(distrt_comm *comm,
                                                 double seconds) {
  const char *fn = "distrt_comm_set_timeout";
  DISTRT_TRY(checkComm(comm, fn));
  if (!(seconds >= 0) || seconds > 1e9)
    return setError(comm->ctx, DISTRT_ERROR_INVALID_ARGUMENT,
                    concat(fn, ": ", seconds,
                           " is not a number of seconds in [0, 1e9] (0 waits "
                           "forever)"));
  comm->timeout = seconds;
  return DISTRT_OK;
}

extern "C" distrt_status distrt_comm_set_overlap(distrt_comm *comm,
                                                 int thread) {
  const char *fn = "distrt_comm_set_overlap";
  DISTRT_TRY(checkComm(comm, fn));
  if (thread != 0 && thread != 1)
    return setError(comm->ctx, DISTRT_ERROR_INVALID_ARGUMENT,
                    concat(fn, ": thread is ", thread,
                           "; pass 1 (a worker thread runs started "
                           "all-reduces) or 0 (they run when waited for)"));
  // The started ones complete under the old setting; the queue is made
  // again, with or without its worker, by the next start.
  DISTRT_TRY(afterStarted(comm));
  if (comm->overlapThread != (thread == 1))
    stopWorker(comm);
  comm->overlapThread = thread == 1;
  return DISTRT_OK;
}

extern "C" distrt_status distrt_comm_destroy(distrt_comm *comm) {
  if (!comm)
    return DISTRT_OK;
  stopWorker(comm);
#ifdef DISTRT_HAVE_NCCL
  if (comm->nccl)
    cuda::ncclRelease(comm);
#endif
#ifdef DISTRT_HAVE_MPI
  if (comm->pendingSends) {
    (void)reapSends(comm, "distrt_comm_destroy", /*wait=*/true);
    delete static_cast<PendingSends *>(comm->pendingSends);
  }
  if (comm->mpi) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized)
      MPI_Comm_free(&mpiOf(comm));
    delete static_cast<MPI_Comm *>(comm->mpi);
  }
#endif
  delete comm;
  return DISTRT_OK;
}

extern "C" void distrt_comm_abort(distrt_comm *comm, int code) {
#ifdef DISTRT_HAVE_MPI
  if (comm && comm->mpi) {
    fflush(stdout);
    fflush(stderr);
    MPI_Abort(mpiOf(comm), code);
  }
#else
  (void)comm;
  (void)code;
#endif
}

extern "C" distrt_status distrt_comm_rank(const distrt_comm *comm,
                                          int32_t *rank) {
  DISTRT_TRY(checkComm(comm, "distrt_comm_rank"));
  if (!rank)
    return setError(comm->ctx, DISTRT_ERROR_INVALID_ARGUMENT,
                    "distrt_comm_rank: argument 'rank' is NULL");
  *rank = comm->rank;
  return DISTRT_OK;
}

extern "C" distrt_status distrt_comm_size(const distrt_comm *comm,
                                          int32_t *size) {
  DISTRT_TRY(checkComm(comm, "distrt_comm_size"));
  if (!size)
    return setError(comm->ctx, DISTRT_ERROR_INVALID_ARGUMENT,
                    "distrt_comm_size: argument 'size' is NULL");
  *size = comm->size;
  return DISTRT_OK;
}

extern "C" const char *distrt_comm_backend(const distrt_comm *comm) {
  return comm ? comm->backend : "";
}

extern "C" distrt_status distrt_all_reduce(distrt_comm *comm,
                                           const distrt_tensor *input,
                                           const distrt_tensor *output,
                                           distrt_reduce_op op) {
  const char *fn = "distrt_all_reduce";
  DISTRT_TRY(checkComm(comm, fn));
  DISTRT_TRY(checkAllReduce(comm, fn, input, output, op));
  DISTRT_TRY(afterStarted(comm));
  return runAllReduce(comm, fn, *input, output ? output->data : input->data, op,
                      nullptr);
}

extern "C" distrt_status distrt_all_reduce_start(distrt_comm *comm,
                                                 const distrt_tensor *input,
                                                 const distrt_tensor *output,
                                                 distrt_reduce_op op,
                                                 distrt_request **request) {
  const char *fn = kStartFn;
  DISTRT_TRY(checkComm(comm, fn));
  Checker c(comm->ctx, fn);
  DISTRT_TRY(c.pointer("request", request));
  *request = nullptr;
  DISTRT_TRY(checkAllReduce(comm, fn, input, output, op));
  std::unique_ptr<distrt_request> req(new (std::nothrow) distrt_request);
  if (!req)
    return c.fail(DISTRT_ERROR_OUT_OF_MEMORY, "cannot allocate a request");
  req->comm = comm;
  req->ctx = comm->ctx;
  req->input = *input;
  req->output = output ? output->data : input->data;
  req->op = op;
  // Queued for the worker thread, or for the caller's wait (deferred).
  CommQueue *q = comm->size > 1 && !comm->nccl &&
                         (comm->mpiThreads || !comm->overlapThread)
                     ? queueOf(comm)
                     : nullptr;
  if (q) {
    try {
      std::lock_guard<std::mutex> lock(q->mutex);
      q->pending.push_back(req.get());
    } catch (...) {
      return guardException(comm->ctx, fn);
    }
    q->wake.notify_one();
  } else {
    // A world of one (a copy), NCCL (which only queues work on a stream) or
    // MPI without MPI_THREAD_MULTIPLE: done here, reported by distrt_wait
    // all the same.
    runInto(*req, fn, [&] {
      return runAllReduce(comm, fn, req->input, req->output, op,
                          &req->ncclDone);
    });
    req->done.store(true, std::memory_order_release);
  }
  *request = req.release();
  return DISTRT_OK;
}

extern "C" distrt_status distrt_wait(distrt_request *request) {
  if (!request)
    return setError(nullptr, DISTRT_ERROR_INVALID_ARGUMENT,
                    "distrt_wait: request is NULL; pass the handle "
                    "distrt_all_reduce_start returned");
  std::unique_ptr<distrt_request> req(request);
  if (!req->done.load(std::memory_order_acquire)) {
    // Only requests on a communicator's queue are pending.
    CommQueue &q = *req->comm->queue;
    if (!q.worker.joinable()) {
      runDeferred(q, req.get());
    } else {
      std::unique_lock<std::mutex> lock(q.mutex);
      q.finished.wait(lock, [&] { return req->done.load(); });
    }
  }
#ifdef DISTRT_HAVE_NCCL
  if (req->ncclDone)
    DISTRT_TRY(cuda::ncclWaitDone(req->ctx, req->ncclDone));
#endif
  if (req->status != DISTRT_OK)
    return setError(req->ctx, req->status, req->message);
  return DISTRT_OK;
}

extern "C" distrt_status distrt_broadcast(distrt_comm *comm,
                                          const distrt_tensor *tensor,
                                          int32_t root) {
  const char *fn = "distrt_broadcast";
  DISTRT_TRY(checkComm(comm, fn));
  Checker c(comm->ctx, fn);
  DISTRT_TRY(c.pointer("tensor", tensor));
  DISTRT_TRY(c.tensor("tensor", tensor, tensor->dtype));
  if (root < 0 || root >= comm->size)
    return c.fail(DISTRT_ERROR_INVALID_ARGUMENT, "root ", root,
                  " is not a rank of this world of ", comm->size);
  DISTRT_TRY(afterStarted(comm));
  DISTRT_TRY(checkAgreement(comm, fn, 1, *tensor, root));
  if (comm->size == 1)
    return DISTRT_OK;
  size_t n = (size_t)distrt_numel(tensor);
#ifdef DISTRT_HAVE_NCCL
  if (comm->nccl)
    return cuda::ncclBcast(comm, tensor->data, n, tensor->dtype, root);
#endif
#ifdef DISTRT_HAVE_MPI
  // A copy of the root's bytes: every dtype travels as MPI_BYTE, the 16-bit
  // floats MPI has no type for included.
  char *p = static_cast<char *>(tensor->data);
  return chunked(n * elementSize(tensor->dtype), [&](size_t off, int cnt) {
    DISTRT_MPI_WAIT(
        comm, fn, "its broadcast", root == comm->rank ? -1 : root,
        MPI_Ibcast(p + off, cnt, MPI_BYTE, root, mpiOf(comm), &request_));
    return DISTRT_OK;
  });
#else
  (void)n;
  return c.fail(DISTRT_ERROR_UNSUPPORTED, "no MPI in this runtime");
#endif
}

namespace {
/// The checks reduce-scatter and all-gather share: tensors of one dtype,
/// `whole` holding size x `part`'s elements, no overlap.
distrt_status checkBlocks(distrt_comm *comm, const char *fn,
                          const distrt_tensor *input,
                          const distrt_tensor *output, bool inputWhole) {
  Checker c(comm->ctx, fn);
  DISTRT_TRY(c.pointer("input", input));
  DISTRT_TRY(c.pointer("output", output));
  DISTRT_TRY(c.tensor("input", input, input->dtype));
  DISTRT_TRY(c.tensor("output", output, output->dtype));
  const distrt_tensor *whole = inputWhole ? input : output;
  const distrt_tensor *part = inputWhole ? output : input;
  if (output->dtype != input->dtype ||
      distrt_numel(whole) != distrt_numel(part) * comm->size)
    return c.fail(DISTRT_ERROR_SHAPE_MISMATCH, "input is ",
                  dtypeName(input->dtype), " ", shapeString(*input),
                  " and output ", dtypeName(output->dtype), " ",
                  shapeString(*output), "; the ", inputWhole ? "input" : "output",
                  " needs ", comm->size, " x the ",
                  inputWhole ? "output" : "input",
                  "'s elements (one block per rank) and both one dtype");
  size_t bytes = (size_t)distrt_numel(whole) * elementSize(input->dtype);
  const char *w = static_cast<const char *>(whole->data);
  const char *p = static_cast<const char *>(part->data);
  size_t partBytes = (size_t)distrt_numel(part) * elementSize(input->dtype);
  if (partBytes && p < w + bytes && w < p + partBytes)
    return c.fail(DISTRT_ERROR_INVALID_ARGUMENT,
                  "input and output overlap; pass disjoint memory");
  return DISTRT_OK;
}
} // namespace

extern "C" distrt_status distrt_reduce_scatter(distrt_comm *comm,
                                               const distrt_tensor *input,
                                               const distrt_tensor *output,
                                               distrt_reduce_op op) {
  const char *fn = "distrt_reduce_scatter";
  DISTRT_TRY(checkComm(comm, fn));
  DISTRT_TRY(checkBlocks(comm, fn, input, output, /*inputWhole=*/true));
  Checker c(comm->ctx, fn);
  DISTRT_TRY(checkReduceOp(c, input->dtype, op));
  DISTRT_TRY(afterStarted(comm));
  DISTRT_TRY(checkAgreement(comm, fn, 2, *input, op));
  size_t n = (size_t)distrt_numel(output);
  size_t esz = elementSize(input->dtype);
  if (comm->size == 1)
    return localCopy(comm, output->data, input->data, n * esz);
#ifdef DISTRT_HAVE_NCCL
  if (comm->nccl)
    return cuda::ncclReduceScatter(comm, input->data, output->data, n,
                                   input->dtype, op);
#endif
#ifdef DISTRT_HAVE_MPI
  MPI_Datatype type;
  if (!isHalfFloat(input->dtype)) // the ring reduces 16-bit floats itself
    DISTRT_TRY(mpiType(comm, fn, input->dtype, type));
  if (n * esz > (size_t)INT32_MAX)
    return c.fail(DISTRT_ERROR_UNSUPPORTED, "blocks of ", n * esz,
                  " bytes; the MPI ring moves blocks below 2 GiB");
  std::vector<char> work(n * esz * (size_t)comm->size);
  std::memcpy(work.data(), input->data, work.size());
  DISTRT_TRY(ringReduceScatter(comm, fn, work.data(), n * comm->size,
                               input->dtype, op));
  std::memcpy(output->data, work.data() + (size_t)comm->rank * n * esz,
              n * esz);
  return DISTRT_OK;
#else
  return c.fail(DISTRT_ERROR_UNSUPPORTED, "no MPI in this runtime");
#endif
}

extern "C" distrt_status distrt_all_gather(distrt_comm *comm,
                                           const distrt_tensor *input,
                                           const distrt_tensor *output) {
  const char *fn = "distrt_all_gather";
  DISTRT_TRY(checkComm(comm, fn));
  DISTRT_TRY(checkBlocks(comm, fn, input, output, /*inputWhole=*/false));
  DISTRT_TRY(afterStarted(comm));
  DISTRT_TRY(checkAgreement(comm, fn, 3, *input, 0));
  size_t n = (size_t)distrt_numel(input);
  size_t esz = elementSize(input->dtype);
  if (comm->size == 1)
    return localCopy(comm, output->data, input->data, n * esz);
#ifdef DISTRT_HAVE_NCCL
  if (comm->nccl)
    return cuda::ncclAllGather(comm, input->data, output->data, n,
                               input->dtype);
#endif
#ifdef DISTRT_HAVE_MPI
  Checker c(comm->ctx, fn);
  if (n * esz > (size_t)INT32_MAX)
    return c.fail(DISTRT_ERROR_UNSUPPORTED, "blocks of ", n * esz,
                  " bytes; the MPI ring moves blocks below 2 GiB");
  char *o = static_cast<char *>(output->data);
  std::memcpy(o + (size_t)comm->rank * n * esz, input->data, n * esz);
  return ringAllGather(comm, fn, o, n * comm->size, input->dtype);
#else
  return setError(comm->ctx, DISTRT_ERROR_UNSUPPORTED,
                  concat(fn, ": no MPI in this runtime"));
#endif
}

namespace {
/// `height` rows of `width` bytes from `src` (rows `srcPitch` apart) to
/// `dst` (rows `dstPitch` apart) on the context's memory.
distrt_status copyRows(distrt_comm *comm, void *dst, size_t dstPitch,
                       const void *src, size_t srcPitch, size_t width,
                       size_t height) {
  if (!width || !height)
    return DISTRT_OK;
#ifdef DISTRT_HAVE_NCCL
  if (comm->ctx->isCuda())
    return cuda::copyRows(comm->ctx, dst, dstPitch, src, srcPitch, width,
                          height);
#endif
  for (size_t i = 0; i < height; ++i)
    std::memcpy(static_cast<char *>(dst) + i * dstPitch,
                static_cast<const char *>(src) + i * srcPitch, width);
  return DISTRT_OK;
}

/// Scratch memory of the communicator's context, released on scope exit
/// (stream-ordered on CUDA).
struct Scratch {
  distrt_context *ctx;
  void *data = nullptr;
  explicit Scratch(distrt_context *ctx) : ctx(ctx) {}
  distrt_status alloc(size_t bytes) { return distrt_alloc(ctx, bytes, &data); }
  ~Scratch() {
    if (data)
      distrt_free(ctx, data);
  }
};

/// The tag of all-to-all blocks: above distrt_send's tags and the ring's.
constexpr int kAllToAllTag = kMaxSendTag + 2;
} // namespace

extern "C" distrt_status distrt_all_to_all(distrt_comm *comm,
                                           const distrt_tensor *input,
                                           const distrt_tensor *output,
                                           int32_t split_axis,
                                           int32_t concat_axis) {
  const char *fn = "distrt_all_to_all";
  DISTRT_TRY(checkComm(comm, fn));
  Checker c(comm->ctx, fn);
  DISTRT_TRY(c.pointer("input", input));
  DISTRT_TRY(c.pointer("output", output));
  DISTRT_TRY(c.tensor("input", input, input->dtype));
  DISTRT_TRY(c.tensor("output", output, input->dtype));
  const int32_t rank = input->rank, n = comm->size;
  if (split_axis < 0 || split_axis >= rank || concat_axis < 0 ||
      concat_axis >= rank)
    return c.fail(DISTRT_ERROR_INVALID_ARGUMENT, "split axis ", split_axis,
                  " and concat axis ", concat_axis, " of a rank-", rank,
                  " input; both must lie in [0, ", rank, ")");
  if (input->dims[split_axis] % n)
    return c.fail(DISTRT_ERROR_SHAPE_MISMATCH, "input ", shapeString(*input),
                  " has ", input->dims[split_axis], " along the split axis ",
                  split_axis, ", which the ", n, " ranks cannot share equally");
  std::vector<int64_t> expect(input->dims, input->dims + rank);
  expect[split_axis] /= n;
  expect[concat_axis] *= n;
  DISTRT_TRY(c.shape("output", output, expect));
  const size_t esz = elementSize(input->dtype);
  const size_t bytes = (size_t)distrt_numel(input) * esz;
  const char *in = static_cast<const char *>(input->data);
  char *out = static_cast<char *>(output->data);
  if (bytes && in < out + bytes && out < in + bytes)
    return c.fail(DISTRT_ERROR_INVALID_ARGUMENT,
                  "input and output overlap; pass disjoint memory");
  DISTRT_TRY(afterStarted(comm));
  DISTRT_TRY(
      checkAgreement(comm, fn, 5, *input,
                     (int64_t)split_axis * DISTRT_MAX_RANK + concat_axis));
  if (n == 1)
    return localCopy(comm, out, in, bytes);
  // Input: outerS rows of n pieces of pieceS bytes (piece j for rank j).
  // Output: outerC rows of n pieces of pieceC bytes (piece j from rank j).
  auto rowsOf = [](const distrt_tensor &t, int32_t axis) {
    size_t outer = 1;
    for (int32_t i = 0; i < axis; ++i)
      outer *= (size_t)t.dims[i];
    return outer;
  };
  const size_t block = bytes / (size_t)n;
  const size_t outerS = rowsOf(*input, split_axis), pieceS = block / outerS;
  const size_t outerC = rowsOf(*output, concat_axis), pieceC = block / outerC;
  Scratch sendBuf(comm->ctx), recvBuf(comm->ctx);
  const char *send = in;
  if (outerS > 1) {
    DISTRT_TRY(sendBuf.alloc(bytes));
    for (int32_t j = 0; j < n; ++j)
      DISTRT_TRY(copyRows(comm, static_cast<char *>(sendBuf.data) + j * block,
                          pieceS, in + j * pieceS, n * pieceS, pieceS, outerS));
    send = static_cast<const char *>(sendBuf.data);
  }
  char *recv = out;
  if (outerC > 1) {
    DISTRT_TRY(recvBuf.alloc(bytes));
    recv = static_cast<char *>(recvBuf.data);
  }
  auto unpack = [&]() -> distrt_status {
    if (recv == out)
      return DISTRT_OK;
    for (int32_t j = 0; j < n; ++j)
      DISTRT_TRY(copyRows(comm, out + j * pieceC, n * pieceC, recv + j * block,
                          pieceC, pieceC, outerC));
    return DISTRT_OK;
  };
#ifdef DISTRT_HAVE_NCCL
  if (comm->nccl) {
    DISTRT_TRY(cuda::ncclAllToAll(comm, send, recv, block));
    return unpack();
  }
#endif
#ifdef DISTRT_HAVE_MPI
  if (block > (size_t)INT32_MAX)
    return c.fail(DISTRT_ERROR_UNSUPPORTED, "blocks of ", block,
                  " bytes; the MPI all-to-all moves blocks below 2 GiB");
  std::memcpy(recv + (size_t)comm->rank * block,
              send + (size_t)comm->rank * block, block);
  // Every peer's block is received and sent without waiting (pairwise).
  std::vector<MPI_Request> reqs(2 * (size_t)(n - 1));
  MPI_Request *req = reqs.data();
  for (int32_t p = 0; p < n; ++p) {
    if (p == comm->rank)
      continue;
    DISTRT_MPI_TRY(comm, fn,
                   MPI_Irecv(recv + (size_t)p * block, (int)block, MPI_BYTE, p,
                             kAllToAllTag, mpiOf(comm), req++));
    DISTRT_MPI_TRY(comm, fn,
                   MPI_Isend(send + (size_t)p * block, (int)block, MPI_BYTE, p,
                             kAllToAllTag, mpiOf(comm), req++));
  }
  DISTRT_TRY(waitUntil(comm, fn, "its all-to-all blocks", -1, [&](int &done) {
    return MPI_Testall((int)reqs.size(), reqs.data(), &done,
                       MPI_STATUSES_IGNORE);
  }));
  return unpack();
#else
  return c.fail(DISTRT_ERROR_UNSUPPORTED, "no MPI in this runtime");
#endif
}

extern "C" distrt_status distrt_barrier(distrt_comm *comm) {
  const char *fn = "distrt_barrier";
  DISTRT_TRY(checkComm(comm, fn));
  DISTRT_TRY(afterStarted(comm));
#ifdef DISTRT_HAVE_MPI
  if (comm->mpi)
    DISTRT_MPI_WAIT(comm, fn, "the barrier", -1,
                    MPI_Ibarrier(mpiOf(comm), &request_));
#endif
  return DISTRT_OK;
}

//===----------------------------------------------------------------------===//
// Point-to-point
//===----------------------------------------------------------------------===//

namespace {

/// Checks what distrt_send and distrt_recv share: communicator, tensor,
/// peer, tag.
distrt_status checkPeer(distrt_comm *comm, const char *fn,
                        const distrt_tensor *t, int32_t peer, int32_t tag) {
  DISTRT_TRY(checkComm(comm, fn));
  Checker c(comm->ctx, fn);
  DISTRT_TRY(c.pointer("tensor", t));
  DISTRT_TRY(c.tensor("tensor", t, t->dtype));
  if (peer < 0 || peer >= comm->size)
    return c.fail(DISTRT_ERROR_INVALID_ARGUMENT, "peer ", peer,
                  " is not a rank of this world of ", comm->size,
                  " (ranks 0..", comm->size - 1,
                  "); launch more ranks with mpirun -np N or fix the peer");
  if (peer == comm->rank)
    return c.fail(DISTRT_ERROR_INVALID_ARGUMENT, "peer ", peer,
                  " is this rank itself; a value that stays on its rank "
                  "needs no transfer (copy it instead)");
  if (tag < 0 || tag > kMaxSendTag)
    return c.fail(DISTRT_ERROR_INVALID_ARGUMENT, "tag ", tag,
                  " is outside [0, ", kMaxSendTag, "]");
  return DISTRT_OK;
}

#ifdef DISTRT_HAVE_MPI
/// Receives `bytes` raw bytes over MPI in chunks of int counts.
distrt_status mpiRecvBytes(distrt_comm *comm, const char *fn, void *p,
                           size_t bytes, int32_t peer, int32_t tag) {
  char *b = static_cast<char *>(p);
  return chunked(bytes, [&](size_t off, int cnt) {
    DISTRT_MPI_WAIT(comm, fn, "a message's bytes", peer,
                    MPI_Irecv(b + off, cnt, MPI_BYTE, peer, tag, mpiOf(comm),
                              &request_));
    return DISTRT_OK;
  });
}
#endif

} // namespace

extern "C" distrt_status distrt_send(distrt_comm *comm,
                                     const distrt_tensor *tensor, int32_t peer,
                                     int32_t tag) {
  const char *fn = "distrt_send";
  DISTRT_TRY(checkPeer(comm, fn, tensor, peer, tag));
#ifdef DISTRT_HAVE_MPI
  if (!comm->mpi)
    return setError(comm->ctx, DISTRT_ERROR_INVALID_ARGUMENT,
                    concat(fn, ": this communicator has no MPI"));
  // The header lets the receiver check dtype and size before it touches
  // its buffer.
  int64_t header[2] = {(int64_t)tensor->dtype, distrt_numel(tensor)};
  size_t bytes = (size_t)header[1] * elementSize(tensor->dtype);
#ifdef DISTRT_HAVE_NCCL
  if (comm->nccl) {
    // NCCL orders one communicator's operations: after the started ones.
    DISTRT_TRY(cuda::ncclAfterStarted(comm));
    DISTRT_MPI_TRY(comm, fn,
                   MPI_Send(header, 2, MPI_INT64_T, peer, tag, mpiOf(comm)));
    return bytes ? cuda::ncclSendBytes(comm, tensor->data, bytes, peer)
                 : DISTRT_OK;
  }
#endif
  // Buffered: a copy goes out in the background (MPI keeps the order of
  // one pair's messages of one tag), so the caller may reuse its tensor
  // and two ranks sending to each other do not deadlock.
  auto send = std::make_unique<PendingSend>();
  send->header[0] = header[0];
  send->header[1] = header[1];
  const char *data = static_cast<const char *>(tensor->data);
  send->payload.assign(data, data + bytes);
  MPI_Request request;
  DISTRT_MPI_TRY(comm, fn,
                 MPI_Isend(send->header, 2, MPI_INT64_T, peer, tag,
                           mpiOf(comm), &request));
  send->requests.push_back(request);
  char *payload = send->payload.data();
  DISTRT_TRY(chunked(bytes, [&](size_t off, int cnt) {
    DISTRT_MPI_TRY(comm, fn,
                   MPI_Isend(payload + off, cnt, MPI_BYTE, peer, tag,
                             mpiOf(comm), &request));
    send->requests.push_back(request);
    return DISTRT_OK;
  }));
  pendingOf(comm).push_back(std::move(send));
  return reapSends(comm, fn, false);
#else
  return setError(comm->ctx, DISTRT_ERROR_UNSUPPORTED,
                  concat(fn, ": no MPI in this runtime"));
#endif
}

extern "C" distrt_status distrt_recv(distrt_comm *comm,
                                     const distrt_tensor *tensor, int32_t peer,
                                     int32_t tag) {
  const char *fn = "distrt_recv";
  DISTRT_TRY(checkPeer(comm, fn, tensor, peer, tag));
#ifdef DISTRT_HAVE_MPI
  if (!comm->mpi)
    return setError(comm->ctx, DISTRT_ERROR_INVALID_ARGUMENT,
                    concat(fn, ": this communicator has no MPI"));
#ifdef DISTRT_HAVE_NCCL
  if (comm->nccl)
    DISTRT_TRY(cuda::ncclAfterStarted(comm));
#endif
  MPI_Status status;
  int count = 0;
  DISTRT_TRY(waitUntil(comm, fn, "a message", peer, [&](int &arrived) {
    return MPI_Iprobe(peer, tag, mpiOf(comm), &arrived, &status);
  }));
  DISTRT_MPI_TRY(comm, fn, MPI_Get_count(&status, MPI_BYTE, &count));
  if (count != 2 * (int)sizeof(int64_t)) {
    // Not a distrt_send header: drain it and report.
    std::vector<char> junk((size_t)count);
    DISTRT_MPI_TRY(comm, fn,
                   MPI_Recv(junk.data(), count, MPI_BYTE, peer, tag,
                            mpiOf(comm), MPI_STATUS_IGNORE));
    return setError(comm->ctx, DISTRT_ERROR_INVALID_ARGUMENT,
                    concat(fn, ": rank ", comm->rank, " got a ", count,
                           "-byte message from rank ", peer, " with tag ",
                           tag, " that distrt_send did not send; pair every "
                           "distrt_recv with a distrt_send"));
  }
  int64_t header[2] = {0, 0};
  DISTRT_MPI_TRY(comm, fn,
                 MPI_Recv(header, 2, MPI_INT64_T, peer, tag, mpiOf(comm),
                          MPI_STATUS_IGNORE));
  distrt_dtype sentType = (distrt_dtype)header[0];
  int64_t sentCount = header[1];
  size_t sentBytes = (size_t)sentCount * distrt_dtype_size(sentType);
  if (sentType != tensor->dtype || sentCount != distrt_numel(tensor)) {
    // Drain the payload into scratch memory so the sender completes and
    // nothing is written past the receiving tensor.
    if (sentBytes) {
#ifdef DISTRT_HAVE_NCCL
      if (comm->nccl) {
        void *scratch = nullptr;
        if (distrt_alloc(comm->ctx, sentBytes, &scratch) == DISTRT_OK) {
          cuda::ncclRecvBytes(comm, scratch, sentBytes, peer);
          distrt_synchronize(comm->ctx);
          distrt_free(comm->ctx, scratch);
        }
      } else
#endif
      {
        std::vector<char> scratch(sentBytes);
        DISTRT_TRY(mpiRecvBytes(comm, fn, scratch.data(), sentBytes, peer,
                            tag));
      }
    }
    return setError(comm->ctx, DISTRT_ERROR_SHAPE_MISMATCH,
                    concat(fn, ": rank ", comm->rank, " receives ",
                           dtypeName(tensor->dtype), " x ",
                           distrt_numel(tensor), " elements from rank ", peer,
                           " (tag ", tag, ") but rank ", peer, " sent ",
                           dtypeName(sentType), " x ", sentCount,
                           " elements; both sides must agree on the dtype "
                           "and size of every message"));
  }
#ifdef DISTRT_HAVE_NCCL
  if (comm->nccl)
    return sentBytes
               ? cuda::ncclRecvBytes(comm, tensor->data, sentBytes, peer)
               : DISTRT_OK;
#endif
  return mpiRecvBytes(comm, fn, tensor->data, sentBytes, peer, tag);
#else
  return setError(comm->ctx, DISTRT_ERROR_UNSUPPORTED,
                  concat(fn, ": no MPI in this runtime"));
#endif
}
