//===- HeapTest.cpp - The heap policy of generated programs --------------===//
//
// Part of DistOpt. A generated program keeps the memory it frees for its
// next allocations (dg::keepFreedMemory): a buffer of a few MB allocated,
// written and freed again, as oneDNN's GEMM does on each call, takes no
// new pages from the kernel the second time. The environment's own
// malloc settings win.
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"

#include "distrt/gen/Heap.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <sys/resource.h>

namespace {

long minorFaults() {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_minflt;
}

/// The minor page faults of allocating `bytes`, writing every byte and
/// freeing it.
long faultsOfScratch(size_t bytes) {
  long before = minorFaults();
  auto *p = static_cast<volatile char *>(malloc(bytes));
  EXPECT_NE(p, nullptr);
  for (size_t i = 0; i < bytes; i += 512)
    p[i] = (char)i;
  free(const_cast<char *>(p));
  return minorFaults() - before;
}

#ifdef __GLIBC__
TEST(GenHeap, EnvironmentChooses) {
  for (const char *name : {"MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_",
                           "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_"}) {
    distrt_test::ScopedEnv env(name, "131072");
    EXPECT_FALSE(dg::keepFreedMemory()) << name;
  }
  {
    distrt_test::ScopedEnv env("GLIBC_TUNABLES",
                               "glibc.malloc.trim_threshold=131072");
    EXPECT_FALSE(dg::keepFreedMemory());
  }
}

TEST(GenHeap, FreedScratchIsReusedWithoutFaults) {
  // Other tunables than malloc's leave the choice to the program.
  distrt_test::ScopedEnv env("GLIBC_TUNABLES", "glibc.cpu.hwcaps=-AVX512F");
  ASSERT_TRUE(dg::keepFreedMemory());
  const size_t bytes = 3 << 20; // oneDNN's GEMM packs up to a few MB
  faultsOfScratch(bytes);       // the first time takes the pages
  // 768 pages of 4 KiB if they came fresh from the kernel again; a few
  // faults of the test's own bookkeeping are allowed.
  EXPECT_LT(faultsOfScratch(bytes), 16);
  EXPECT_LT(faultsOfScratch(bytes), 16);
}
#endif

} // namespace
