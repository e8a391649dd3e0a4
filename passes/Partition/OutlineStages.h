//===- OutlineStages.h - Wrap planned stages into regions -------*- C++ -*-===//
//
// Part of DistOpt. The entry point of --dist-outline-stages for callers that
// do not run a pass manager (the plan driver).
//
//===----------------------------------------------------------------------===//
#ifndef DIST_PASSES_PARTITION_OUTLINESTAGES_H
#define DIST_PASSES_PARTITION_OUTLINESTAGES_H

#include "mlir/IR/BuiltinOps.h"

namespace distopt {

/// Wraps the ops of every function annotated with `dist.stage` into one
/// `dist.stage` region per virtual pipeline stage of the module's
/// `dist.plan` (docs/partition.md). Functions without annotations, and
/// functions already outlined, are left alone. On inconsistent annotations
/// emits an error on the offending op and fails with the IR unchanged.
mlir::LogicalResult outlineStages(mlir::ModuleOp module);

} // namespace distopt

#endif // DIST_PASSES_PARTITION_OUTLINESTAGES_H
