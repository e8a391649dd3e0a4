//===- gen/Heap.cpp - The program's heap policy ---------------------------===//
//
// Part of the support code of programs dist-compile generates
// (distrt/gen/Heap.h).
//
//===----------------------------------------------------------------------===//
#include "distrt/gen/Heap.h"

#include <cstdlib>
#include <cstring>
#include <initializer_list>

#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace dg {

/// Whether the environment sets glibc's malloc thresholds itself.
static bool environmentChoosesHeap() {
  for (const char *name : {"MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_",
                           "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_"})
    if (getenv(name))
      return true;
  const char *tunables = getenv("GLIBC_TUNABLES");
  return tunables && strstr(tunables, "glibc.malloc.");
}

bool keepFreedMemory() {
#ifdef __GLIBC__
  if (environmentChoosesHeap())
    return false;
  // Setting either threshold turns glibc's dynamic adjustment off, so both
  // are set: the trim alone would leave blocks over the default 128 KiB
  // mapping threshold mapped and unmapped per call.
  return mallopt(M_MMAP_THRESHOLD, (int)kMmapThreshold) == 1 &&
         mallopt(M_TRIM_THRESHOLD, (int)kTrimThreshold) == 1;
#else
  return false;
#endif
}

} // namespace dg
