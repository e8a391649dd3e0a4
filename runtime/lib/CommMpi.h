//===- CommMpi.h - MPI helpers of the communicator -------------*- C++ -*-===//
//
// What Comm.cpp and Ring.cpp share on the MPI backend: the communicator's
// MPI_Comm, error messages, waits bounded by the communicator's timeout,
// dtype mapping and int-count chunking. Only included where MPI is used.
//
//===----------------------------------------------------------------------===//
#ifndef DISTRT_LIB_COMMMPI_H
#define DISTRT_LIB_COMMMPI_H

#include "CommInternal.h"

#ifdef DISTRT_HAVE_MPI
// The C API only: the deprecated C++ bindings would need libmpi_cxx.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <chrono>
#include <string>
#include <thread>

namespace distrt {
namespace mpi {

inline MPI_Comm &mpiOf(const distrt_comm *comm) {
  return *static_cast<MPI_Comm *>(comm->mpi);
}

inline std::string mpiMessage(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS)
    return "MPI error " + std::to_string(code);
  return std::string(text, len);
}

inline distrt_status mpiFail(distrt_comm *comm, const char *fn, const char *call,
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
  const double timeout = comm->timeout;
  for (;;) {
    int done = 0;
    int code = test(done);
    if (code != MPI_SUCCESS)
      return mpiFail(comm, fn, what, code);
    if (done)
      return DISTRT_OK;
    double waited =
        std::chrono::duration<double>(Clock::now() - start).count();
    if (timeout > 0 && waited > timeout)
      return setError(
          comm->ctx, DISTRT_ERROR_TIMEOUT,
          concat(fn, ": rank ", comm->rank, " waited ", timeout, " s for ",
                 what,
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
inline distrt_status waitFor(distrt_comm *comm, const char *fn, MPI_Request &request,
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

inline distrt_status mpiType(distrt_comm *comm, const char *fn, distrt_dtype dt,
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

} // namespace mpi
} // namespace distrt

#endif // DISTRT_HAVE_MPI

#endif // DISTRT_LIB_COMMMPI_H
