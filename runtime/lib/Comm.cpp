//===- Comm.cpp - Communicators and collectives (MPI, NCCL) ----*- C++ -*-===//
//
// The distrt_comm ABI (distrt_comm.h). A world of one needs nothing: its
// collectives are local copies. Larger worlds use MPI on CPU contexts and
// NCCL (bootstrapped over MPI) on CUDA contexts. Sum and mean on MPI reduce
// to rank 0 and broadcast, so every rank ends with the same bits: data-
// parallel replicas then apply identical optimizer updates and never drift.
//
//===----------------------------------------------------------------------===//
#include "CommInternal.h"

#ifdef DISTRT_HAVE_MPI
// The C API only: the deprecated C++ bindings would need libmpi_cxx.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <thread>
#include <vector>

using namespace distrt;

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

MPI_Comm &mpiOf(const distrt_comm *comm) {
  return *static_cast<MPI_Comm *>(comm->mpi);
}

std::string mpiMessage(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS)
    return "MPI error " + std::to_string(code);
  return std::string(text, len);
}

distrt_status mpiFail(distrt_comm *comm, const char *fn, const char *call,
                      int code) {
  return setError(comm ? comm->ctx : nullptr, DISTRT_ERROR_BACKEND,
                  concat(fn, ": ", call, " failed on rank ",
                         comm ? comm->rank : 0, ": ", mpiMessage(code),
                         "; is every rank running the same program?"));
}

#define DISTRT_MPI_TRY(comm, fn, call)                                        \
  do {                                                                        \
    int mpiCode_ = (call);                                                    \
    if (mpiCode_ != MPI_SUCCESS)                                              \
      return mpiFail((comm), (fn), #call, mpiCode_);                          \
  } while (0)

/// Polls `test(done)` (an MPI_Test-like call) until it sets `done`, for at
/// most the communicator's timeout: a peer that stopped or died makes the
/// call fail instead of hanging. It spins (yielding the core) for the first
/// millisecond, then sleeps 100 us between polls. `what` says what this
/// rank waits for, `peer` from whom (-1: the communicator's other ranks).
template <typename Test>
distrt_status waitUntil(distrt_comm *comm, const char *fn, const char *what,
                        int32_t peer, Test test) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  for (;;) {
    int done = 0;
    int code = test(done);
    if (code != MPI_SUCCESS)
      return mpiFail(comm, fn, what, code);
    if (done)
      return DISTRT_OK;
    double waited =
        std::chrono::duration<double>(Clock::now() - start).count();
    if (comm->timeout > 0 && waited > comm->timeout)
      return setError(
          comm->ctx, DISTRT_ERROR_TIMEOUT,
          concat(fn, ": rank ", comm->rank, " waited ", comm->timeout,
                 " s for ", what,
                 peer >= 0 ? concat(" from rank ", peer)
                           : concat(" from the other ", comm->size - 1,
                                    " rank(s) of its group"),
                 " and got nothing; ",
                 peer >= 0 ? concat("rank ", peer, " has") : "one has",
                 " stopped, died or fallen behind. Raise the limit with "
                 "--timeout SECONDS (DISTRT_TIMEOUT; 0 waits forever)"));
    if (waited < 1e-3)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

/// Waits for one request within the timeout.
distrt_status waitFor(distrt_comm *comm, const char *fn, MPI_Request &request,
                      const char *what, int32_t peer) {
  return waitUntil(comm, fn, what, peer, [&](int &done) {
    return MPI_Test(&request, &done, MPI_STATUS_IGNORE);
  });
}

/// `call` with a request argument appended, then waits for it: the
/// non-blocking form of a blocking MPI call, bounded by the timeout.
#define DISTRT_MPI_WAIT(comm, fn, what, peer, icall)                          \
  do {                                                                        \
    MPI_Request request_;                                                     \
    int mpiCode_ = (icall);                                                   \
    if (mpiCode_ != MPI_SUCCESS)                                              \
      return mpiFail((comm), (fn), #icall, mpiCode_);                         \
    DISTRT_TRY(waitFor((comm), (fn), request_, (what), (peer)));              \
  } while (0)

distrt_status mpiType(distrt_comm *comm, const char *fn, distrt_dtype dt,
                      MPI_Datatype &out) {
  switch (dt) {
  case DISTRT_F32:
    out = MPI_FLOAT;
    return DISTRT_OK;
  case DISTRT_I32:
    out = MPI_INT32_T;
    return DISTRT_OK;
  case DISTRT_I64:
    out = MPI_INT64_T;
    return DISTRT_OK;
  case DISTRT_U8:
    out = MPI_UINT8_T;
    return DISTRT_OK;
  default:
    return setError(comm->ctx, DISTRT_ERROR_UNSUPPORTED,
                    concat(fn, ": dtype ", dtypeName(dt),
                           " is not carried by the MPI backend; cast to f32 "
                           "first (distrt_cast)"));
  }
}

/// Runs `body(offset, count)` over [0, n) in chunks MPI's int counts hold.
template <typename F> distrt_status chunked(size_t n, F body) {
  const size_t kChunk = size_t(1) << 30;
  for (size_t off = 0; off < n; off += kChunk) {
    size_t cnt = n - off < kChunk ? n - off : kChunk;
    DISTRT_TRY(body(off, (int)cnt));
  }
  return DISTRT_OK;
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
    return setError(
        comm->ctx, DISTRT_ERROR_SHAPE_MISMATCH,
        concat(fn, ": mismatched arguments across ranks: rank ", comm->rank,
               " passes ", dtypeName(t.dtype), " x ", mine[2],
               " elements (", kind == 0 ? "op " : "root ",
               kind == 0 ? opName((distrt_reduce_op)mine[3])
                         : std::to_string(mine[3]).c_str(),
               ") but rank ", r, " passes ", dtypeName((distrt_dtype)o[1]),
               " x ", o[2], " elements (", kind == 0 ? "op " : "root ",
               kind == 0 ? opName((distrt_reduce_op)o[3])
                         : std::to_string(o[3]).c_str(),
               "); every rank must pass the same dtype, size and ",
               kind == 0 ? "op" : "root"));
  }
#else
  (void)comm, (void)fn, (void)kind, (void)t, (void)extra;
#endif
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
#endif

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
    int code = MPI_Init(nullptr, nullptr);
    if (code != MPI_SUCCESS) {
      delete comm;
      return c.fail(DISTRT_ERROR_BACKEND, "MPI_Init failed: ",
                    mpiMessage(code),
                    "; launch the program with mpirun (Open MPI)");
    }
    std::atexit(finalizeMpi);
  }
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
  MPI_Comm_set_errhandler(mpiOf(comm), MPI_ERRORS_RETURN);
  comm->backend = "mpi";
  if (ctx->isCuda()) {
    distrt_status st = joinNccl(comm, fn);
    if (st != DISTRT_OK) {
      distrt_comm_destroy(comm);
      return st;
    }
  }
  *out = comm;
  return DISTRT_OK;
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
  distrt_comm *g = new (std::nothrow) distrt_comm;
  if (!g)
    return c.fail(DISTRT_ERROR_OUT_OF_MEMORY, "cannot allocate a communicator");
  g->ctx = comm->ctx;
  g->rank = mine;
  g->size = n;
  g->checkArgs = comm->checkArgs;
  g->timeout = comm->timeout;
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
  MPI_Comm_set_errhandler(mpiOf(g), MPI_ERRORS_RETURN);
  g->backend = "mpi";
  if (g->ctx->isCuda()) {
    distrt_status st = joinNccl(g, fn);
    if (st != DISTRT_OK) {
      distrt_comm_destroy(g);
      return st;
    }
  }
  *out = g;
  return DISTRT_OK;
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

extern "C" distrt_status distrt_comm_destroy(distrt_comm *comm) {
  if (!comm)
    return DISTRT_OK;
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
  if (op < DISTRT_REDUCE_SUM || op > DISTRT_REDUCE_MIN)
    return c.fail(DISTRT_ERROR_INVALID_ARGUMENT, "op ", (int)op,
                  " is not a distrt_reduce_op (SUM, MEAN, MAX, MIN)");
  bool isFloat = input->dtype == DISTRT_F32 || input->dtype == DISTRT_F16 ||
                 input->dtype == DISTRT_BF16;
  if (op == DISTRT_REDUCE_MEAN && !isFloat)
    return c.fail(DISTRT_ERROR_UNSUPPORTED, "mean of ",
                  dtypeName(input->dtype),
                  " values; use sum and divide, or a floating dtype");
  size_t n = (size_t)distrt_numel(input);
  size_t bytes = n * elementSize(input->dtype);
  void *out = output ? output->data : input->data;
  const void *in = input->data;
  if (out != in && n && (char *)out < (const char *)in + bytes &&
      (const char *)in < (char *)out + bytes)
    return c.fail(DISTRT_ERROR_INVALID_ARGUMENT,
                  "output overlaps input without being the same buffer; "
                  "pass the same tensor (in place) or disjoint memory");
  DISTRT_TRY(checkAgreement(comm, fn, 0, *input, op));
  if (comm->size == 1)
    return localCopy(comm, out, in, bytes);
#ifdef DISTRT_HAVE_NCCL
  if (comm->nccl)
    return cuda::ncclAllReduce(comm, in, out, n, input->dtype, op);
#endif
#ifdef DISTRT_HAVE_MPI
  MPI_Datatype type;
  DISTRT_TRY(mpiType(comm, fn, input->dtype, type));
  MPI_Comm mc = mpiOf(comm);
  char *o = static_cast<char *>(out);
  const char *i = static_cast<const char *>(in);
  size_t esz = elementSize(input->dtype);
  if (op == DISTRT_REDUCE_MAX || op == DISTRT_REDUCE_MIN)
    return chunked(n, [&](size_t off, int cnt) {
      DISTRT_MPI_WAIT(comm, fn, "its all-reduce", -1,
                      MPI_Iallreduce(out == in ? MPI_IN_PLACE : i + off * esz,
                                     o + off * esz, cnt, type,
                                     op == DISTRT_REDUCE_MAX ? MPI_MAX
                                                             : MPI_MIN,
                                     mc, &request_));
      return DISTRT_OK;
    });
  // Sum and mean: reduce to rank 0, which divides, then broadcast: every
  // rank gets the root's bits.
  return chunked(n, [&](size_t off, int cnt) {
    if (comm->rank == 0) {
      if (out != in)
        std::memcpy(o + off * esz, i + off * esz, (size_t)cnt * esz);
      DISTRT_MPI_WAIT(comm, fn, "its all-reduce", -1,
                      MPI_Ireduce(MPI_IN_PLACE, o + off * esz, cnt, type,
                                  MPI_SUM, 0, mc, &request_));
      if (op == DISTRT_REDUCE_MEAN) {
        float *f = reinterpret_cast<float *>(o + off * esz);
        float inv = (float)comm->size;
        for (int k = 0; k < cnt; ++k)
          f[k] /= inv;
      }
    } else {
      DISTRT_MPI_WAIT(comm, fn, "its all-reduce", -1,
                      MPI_Ireduce(i + off * esz, nullptr, cnt, type, MPI_SUM,
                                  0, mc, &request_));
    }
    DISTRT_MPI_WAIT(comm, fn, "its all-reduce", -1,
                    MPI_Ibcast(o + off * esz, cnt, type, 0, mc, &request_));
    return DISTRT_OK;
  });
#else
  return c.fail(DISTRT_ERROR_UNSUPPORTED, "no MPI in this runtime");
#endif
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
  DISTRT_TRY(checkAgreement(comm, fn, 1, *tensor, root));
  if (comm->size == 1)
    return DISTRT_OK;
  size_t n = (size_t)distrt_numel(tensor);
#ifdef DISTRT_HAVE_NCCL
  if (comm->nccl)
    return cuda::ncclBcast(comm, tensor->data, n, tensor->dtype, root);
#endif
#ifdef DISTRT_HAVE_MPI
  MPI_Datatype type;
  DISTRT_TRY(mpiType(comm, fn, tensor->dtype, type));
  size_t esz = elementSize(tensor->dtype);
  char *p = static_cast<char *>(tensor->data);
  return chunked(n, [&](size_t off, int cnt) {
    DISTRT_MPI_WAIT(comm, fn, "its broadcast", root == comm->rank ? -1 : root,
                    MPI_Ibcast(p + off * esz, cnt, type, root, mpiOf(comm),
                               &request_));
    return DISTRT_OK;
  });
#else
  (void)n;
  return c.fail(DISTRT_ERROR_UNSUPPORTED, "no MPI in this runtime");
#endif
}

extern "C" distrt_status distrt_barrier(distrt_comm *comm) {
  const char *fn = "distrt_barrier";
  DISTRT_TRY(checkComm(comm, fn));
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

/// The largest tag distrt_send/recv accept (MPI guarantees at least 32767).
constexpr int32_t kMaxTag = 32767;

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
  if (tag < 0 || tag > kMaxTag)
    return c.fail(DISTRT_ERROR_INVALID_ARGUMENT, "tag ", tag,
                  " is outside [0, ", kMaxTag, "]");
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
