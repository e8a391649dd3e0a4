//===- PostOps.h - oneDNN post-ops from distrt_compute_ex -------*- C++ -*-===//
//
// The epilogue of a matmul or convolution (activations, binary ops with a
// scalar, per-channel or full second operand, sums) as oneDNN post-ops:
// the checks every entry point runs, the cache key, the attribute and the
// execution arguments, so matmul and convolution share one translation.
//
//===----------------------------------------------------------------------===//
#ifndef DISTRT_LIB_CPU_POSTOPS_H
#define DISTRT_LIB_CPU_POSTOPS_H

#include "cpu/CpuState.h"

#include <unordered_map>

namespace distrt {
namespace cpu {

/// The oneDNN algorithm of a distrt_binary_op; false for pow (no oneDNN
/// binary form).
bool binaryAlgorithm(int op, dnnl::algorithm &alg);

/// Checks `ex` (may be null) against an output of `outDims` laid out with
/// `outStrides`: a binary operand must broadcast to it and be laid out
/// densely in the output's dim order (oneDNN's jit kernels read it at the
/// output's offsets).
distrt_status checkPostOps(Checker &c, const distrt_compute_ex *ex,
                           const std::vector<int64_t> &outDims,
                           const std::vector<int64_t> &outStrides);
/// The part of a primitive-cache key that `ex`'s post-ops from `first` on
/// determine (kinds, algorithms, parameters, operand shapes).
std::string postOpsKey(const distrt_compute_ex *ex, size_t rank);
/// Appends `ex`'s post-ops from `first` on to `ops`, with binary operands
/// aligned to an output of rank `rank`.
void appendPostOps(dnnl::post_ops &ops, const distrt_compute_ex *ex, int first,
                   size_t rank);
/// Adds the binary operands of those post-ops to `args`; `index` is the
/// position of post-op `first` in the oneDNN chain.
void postOpArgs(CpuState &st, std::unordered_map<int, dnnl::memory> &args,
                const distrt_compute_ex *ex, int first, int index, size_t rank);

/// Whether oneDNN dispatching to `isa` (dnnl::get_effective_cpu_isa())
/// runs its slow gelu_tanh: every ISA below AVX-512 (AVX2 with VNNI
/// included).
bool slowGeluTanh(dnnl::cpu_isa isa);

/// oneDNN 2.6's gelu_tanh post-op costs about 5.7 ns an element on AVX2
/// (1 ns for gelu_erf, 0.1 for relu), 4x the runtime's vector GELU-tanh
/// (cpu/VecMath.h). Where oneDNN's effective ISA has it slow (the CPU's,
/// or less under DNNL_MAX_CPU_ISA), a trailing gelu_tanh of a dense output
/// is left out of the primitive's post-ops (`trimmed` receives the rest)
/// and applied after it by applyTrimmedTail. Returns the post-ops the
/// primitive applies: `ex` itself or `&trimmed`.
const distrt_compute_ex *trimSlowTail(const distrt_compute_ex *ex,
                                      const distrt_tensor &out,
                                      distrt_compute_ex &trimmed);
/// Applies what trimSlowTail left out (call when it returned `&trimmed`);
/// counts the call in `st.vectorTails`.
void applyTrimmedTail(CpuState &st, const distrt_tensor &out);

} // namespace cpu
} // namespace distrt

#endif // DISTRT_LIB_CPU_POSTOPS_H
