//===- Ring.h - Ring collectives on the MPI backend ------------*- C++ -*-===//
//
// Ring reduce-scatter and all-gather in place on one buffer (Ring.cpp),
// which Comm.cpp's all-reduce, reduce-scatter and all-gather run on CPU
// contexts.
//
//===----------------------------------------------------------------------===//
#ifndef DISTRT_LIB_RING_H
#define DISTRT_LIB_RING_H

#include "CommInternal.h"

#include <cstddef>

namespace distrt {

/// The first element of block `block` when `n` elements are cut into
/// `size` blocks (the first n % size blocks one element longer).
size_t ringBlockBegin(size_t n, int32_t size, int32_t block);

/// f16 and bf16, which the ring reduces (in f32, rounded once per step)
/// and MPI's own collectives do not carry.
inline bool isHalfFloat(distrt_dtype dtype) {
  return dtype == DISTRT_F16 || dtype == DISTRT_BF16;
}

#ifdef DISTRT_HAVE_MPI
/// After it, block `comm->rank` of the `n` elements of `dtype` at `buffer`
/// holds the reduction (`op`; mean divided by the rank count) of every
/// rank's block; the other blocks hold partial results. Reduces f32, i32,
/// i64, f16 and bf16.
distrt_status ringReduceScatter(distrt_comm *comm, const char *fn,
                                void *buffer, size_t n, distrt_dtype dtype,
                                distrt_reduce_op op);
/// Block `comm->rank` of `buffer` is this rank's; after it, every block is
/// every rank's.
distrt_status ringAllGather(distrt_comm *comm, const char *fn, void *buffer,
                            size_t n, distrt_dtype dtype);
#endif

} // namespace distrt

#endif // DISTRT_LIB_RING_H
