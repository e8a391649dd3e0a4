//===- EmissionSteps.h - The steps of dist-prepare-for-emission -*- C++ -*-===//
//
// Part of DistOpt. Each step works on one body (a function's, or a pipeline
// stage's) and records its decisions in the IR (dialects/Emit):
//
//   markPrecision   emit.compute_type on ops whose kernel computes in f32
//   formKernels     emit.kernel regions: post-op chains, fused loops,
//                   vectorized eltwise ops
//   assignLayouts   views (reshape, transpose, slice, split read in place)
//                   and emit.copy where a consumer needs row-major memory
//   markAsync       emit.async on all-reduces read some ops later
//   planMemory      arena slots (reused by live range, in place where a
//                   kernel allows), resident buffers, a called function's
//                   arguments read in place, emit.memory_plan
//
//===----------------------------------------------------------------------===//
#ifndef DIST_PASSES_EMISSION_EMISSIONSTEPS_H
#define DIST_PASSES_EMISSION_EMISSIONSTEPS_H

#include "mlir/IR/Block.h"
#include "mlir/IR/Operation.h"

namespace distopt::emission {

struct EmissionOptions {
  bool cpu = true;          ///< oneDNN post-ops and vectorized eltwise kernels
  bool postOps = true;      ///< fold elementwise chains into matmul / conv
  bool views = true;        ///< transposes, slices and splits as strided views
  bool channelsLast = true; ///< convolution chains in NHWC (CPU)
  bool inPlace = true;      ///< kernels write over operands they read last
  bool eltwise = false;     ///< lone transcendental ops on the runtime kernel
  bool async = true;        ///< all-reduces overlap the ops before their reader
};

void markPrecision(mlir::Block &body);
void formKernels(mlir::Block &body, const EmissionOptions &options);
void assignLayouts(mlir::Block &body, const EmissionOptions &options);
/// emit.async on each all-reduce of `body` whose result's first reader is
/// not the next op (with options.async).
void markAsync(mlir::Block &body, const EmissionOptions &options);
/// `holder` owns `body` and receives emit.memory_plan. With `called` (a
/// function another function calls: a pipeline stage) its arguments are
/// the caller's buffers (`argument`), read in place and never written.
void planMemory(mlir::Operation *holder, mlir::Block &body,
                const EmissionOptions &options, bool called = false);

} // namespace distopt::emission

#endif // DIST_PASSES_EMISSION_EMISSIONSTEPS_H
