//===- Ring.cpp - Ring reduce-scatter and all-gather over MPI --*- C++ -*-===//
//
// Bandwidth-optimal collectives on the MPI backend, as NCCL runs them: the
// n ranks form a ring, the buffer is cut into n blocks, and
//  - reduce-scatter passes partial sums around the ring for n - 1 steps, so
//    block b is reduced in one place, in a fixed order (ranks b + 1, b + 2,
//    ..., b), and ends on rank b;
//  - all-gather passes the finished blocks around for n - 1 more steps.
// Each rank sends and receives 2 (n - 1) / n of the buffer in all, and every
// rank ends with the bits of the block's one reduction: data-parallel
// replicas never drift. Transfers are non-blocking and bounded by the
// communicator's timeout; their tag is above distrt_send's tags.
//
//===----------------------------------------------------------------------===//
#include "Ring.h"

#ifdef DISTRT_HAVE_MPI
#include "CommMpi.h"
#include "ScalarOps.h"

#include <algorithm>
#include <cstring>
#include <vector>

using namespace distrt;
using namespace distrt::mpi;

namespace {

/// The tag of ring transfers: above distrt_send's [0, kMaxSendTag], so a
/// ring on a communicator's worker thread and the caller's point-to-point
/// messages never match each other.
constexpr int kRingTag = kMaxSendTag + 1;

/// `acc[i] = acc[i] op in[i]` for `n` elements of `T`.
template <typename T>
void combine(T *acc, const T *in, size_t n, distrt_reduce_op op) {
  switch (op) {
  case DISTRT_REDUCE_SUM:
  case DISTRT_REDUCE_MEAN:
    for (size_t i = 0; i < n; ++i)
      acc[i] = in[i] + acc[i];
    return;
  case DISTRT_REDUCE_MAX:
    for (size_t i = 0; i < n; ++i)
      acc[i] = std::max(acc[i], in[i]);
    return;
  case DISTRT_REDUCE_MIN:
    for (size_t i = 0; i < n; ++i)
      acc[i] = std::min(acc[i], in[i]);
    return;
  }
}

/// `combine` on 16-bit floats (f16, bf16; MPI has no type for them): each
/// pair in f32, the result rounded back once, as NCCL reduces them.
template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
void combineHalf(uint16_t *acc, const uint16_t *in, size_t n,
                 distrt_reduce_op op) {
  for (size_t i = 0; i < n; ++i) {
    float a = ToFloat(acc[i]), b = ToFloat(in[i]);
    float r = op == DISTRT_REDUCE_MAX   ? std::max(a, b)
              : op == DISTRT_REDUCE_MIN ? std::min(a, b)
                                        : b + a;
    acc[i] = FromFloat(r);
  }
}

void combineAny(distrt_dtype dt, void *acc, const void *in, size_t n,
                distrt_reduce_op op) {
  switch (dt) {
  case DISTRT_F16:
    return combineHalf<halfToFloat, floatToHalf>(
        static_cast<uint16_t *>(acc), static_cast<const uint16_t *>(in), n, op);
  case DISTRT_BF16:
    return combineHalf<bf16ToFloat, floatToBf16>(
        static_cast<uint16_t *>(acc), static_cast<const uint16_t *>(in), n, op);
  case DISTRT_F32:
    return combine(static_cast<float *>(acc), static_cast<const float *>(in),
                   n, op);
  case DISTRT_I32:
    return combine(static_cast<int32_t *>(acc),
                   static_cast<const int32_t *>(in), n, op);
  case DISTRT_I64:
    return combine(static_cast<int64_t *>(acc),
                   static_cast<const int64_t *>(in), n, op);
  default:
    return;
  }
}

/// One ring step: sends `sendBytes` at `send` to the right neighbour while
/// receiving `recvBytes` into `recv` from the left one.
distrt_status exchange(distrt_comm *comm, const char *fn, const char *send,
                       size_t sendBytes, char *recv, size_t recvBytes) {
  int32_t right = (comm->rank + 1) % comm->size;
  int32_t left = (comm->rank + comm->size - 1) % comm->size;
  MPI_Request reqs[2];
  // Byte counts fit an int: callers chunk buffers above 1 GiB per block.
  int code = MPI_Irecv(recv, (int)recvBytes, MPI_BYTE, left, kRingTag,
                       mpiOf(comm), &reqs[0]);
  if (code != MPI_SUCCESS)
    return mpiFail(comm, fn, "MPI_Irecv", code);
  code = MPI_Isend(send, (int)sendBytes, MPI_BYTE, right, kRingTag,
                   mpiOf(comm), &reqs[1]);
  if (code != MPI_SUCCESS)
    return mpiFail(comm, fn, "MPI_Isend", code);
  return waitUntil(comm, fn, "its ring neighbour's block", left,
                   [&](int &done) {
                     return MPI_Testall(2, reqs, &done, MPI_STATUSES_IGNORE);
                   });
}

} // namespace

size_t distrt::ringBlockBegin(size_t n, int32_t size, int32_t block) {
  return n / (size_t)size * (size_t)block +
         std::min<size_t>((size_t)block, n % (size_t)size);
}

distrt_status distrt::ringReduceScatter(distrt_comm *comm, const char *fn,
                                        void *buffer, size_t n,
                                        distrt_dtype dtype,
                                        distrt_reduce_op op) {
  const int32_t size = comm->size, r = comm->rank;
  const size_t esz = distrt_dtype_size(dtype);
  char *buf = static_cast<char *>(buffer);
  auto begin = [&](int32_t b) {
    return ringBlockBegin(n, size, ((b % size) + size) % size);
  };
  auto count = [&](int32_t b) {
    int32_t k = ((b % size) + size) % size;
    return ringBlockBegin(n, size, k + 1) - ringBlockBegin(n, size, k);
  };
  std::vector<char> incoming(count(0) * esz);
  // Step s: send block r - s - 1 (this rank's partial of it), receive the
  // left neighbour's partial of block r - s - 2 and add this rank's own.
  for (int32_t s = 0; s + 1 < size; ++s) {
    int32_t out = r - s - 1, in = r - s - 2;
    DISTRT_TRY(exchange(comm, fn, buf + begin(out) * esz, count(out) * esz,
                        incoming.data(), count(in) * esz));
    combineAny(dtype, buf + begin(in) * esz, incoming.data(), count(in), op);
  }
  if (op == DISTRT_REDUCE_MEAN && dtype == DISTRT_F32) {
    float *f = reinterpret_cast<float *>(buf + begin(r) * esz);
    float inv = (float)size;
    for (size_t k = 0; k < count(r); ++k)
      f[k] /= inv;
  }
  if (op == DISTRT_REDUCE_MEAN && isHalfFloat(dtype)) {
    uint16_t *h = reinterpret_cast<uint16_t *>(buf + begin(r) * esz);
    const bool bf16 = dtype == DISTRT_BF16;
    for (size_t k = 0; k < count(r); ++k) {
      float mean = (bf16 ? bf16ToFloat(h[k]) : halfToFloat(h[k])) / (float)size;
      h[k] = bf16 ? floatToBf16(mean) : floatToHalf(mean);
    }
  }
  return DISTRT_OK;
}

distrt_status distrt::ringAllGather(distrt_comm *comm, const char *fn,
                                    void *buffer, size_t n,
                                    distrt_dtype dtype) {
  const int32_t size = comm->size, r = comm->rank;
  const size_t esz = distrt_dtype_size(dtype);
  char *buf = static_cast<char *>(buffer);
  auto at = [&](int32_t b) {
    return buf + ringBlockBegin(n, size, ((b % size) + size) % size) * esz;
  };
  auto bytes = [&](int32_t b) {
    int32_t k = ((b % size) + size) % size;
    return (ringBlockBegin(n, size, k + 1) - ringBlockBegin(n, size, k)) * esz;
  };
  // Step s: pass on block r - s, receive block r - s - 1.
  for (int32_t s = 0; s + 1 < size; ++s)
    DISTRT_TRY(exchange(comm, fn, at(r - s), bytes(r - s), at(r - s - 1),
                        bytes(r - s - 1)));
  return DISTRT_OK;
}

#endif // DISTRT_HAVE_MPI
