//===- distrt/gen/Heap.h - The program's heap policy -------------*- C++
//-*-===//
//
// Part of the support code of programs dist-compile generates
// (distrt_gen.h includes every piece; docs/codegen.md).
//
//===----------------------------------------------------------------------===//
#ifndef DISTRT_GEN_HEAP_H
#define DISTRT_GEN_HEAP_H

namespace dg {

/// Sizes above which glibc's malloc returns memory to the kernel: blocks
/// of at least kMmapThreshold bytes are mapped on their own (and unmapped
/// when freed), and the top of the heap is given back once kTrimThreshold
/// bytes of it are free. 32 MiB is the largest threshold glibc's own
/// dynamic adjustment reaches on 64-bit targets; twice that for the trim
/// is the ratio that adjustment keeps.
constexpr long kMmapThreshold = 32L << 20;
constexpr long kTrimThreshold = 64L << 20;

/// Keeps the memory the program frees during a run for its next
/// allocations instead of returning it to the kernel. oneDNN's GEMM
/// (every `gemm:jit` matmul on a CPU without AVX-512) allocates its
/// packing buffers on each call, 0.3-3 MB, and glibc's defaults trimmed
/// the heap or unmapped them after each: the next call took fresh pages
/// from the kernel, zeroed, one fault per 4 KiB (the Whisper encoder: up
/// to 1290 faults and 2-8 ms of system time per 46 ms run, as many as the
/// heap's layout, which the command line's paths shift, made trim;
/// docs/benchmarks.md). The buffers the program itself allocates live for
/// the whole run, so the peak heap is the same. Leaves glibc's
/// defaults when the environment chooses (GLIBC_TUNABLES naming a
/// glibc.malloc tunable, MALLOC_TRIM_THRESHOLD_, MALLOC_MMAP_THRESHOLD_,
/// MALLOC_TOP_PAD_ or MALLOC_MMAP_MAX_) and on C libraries other than
/// glibc. Returns whether it set the thresholds.
bool keepFreedMemory();

} // namespace dg

#endif // DISTRT_GEN_HEAP_H
