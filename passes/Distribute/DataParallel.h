//===- DataParallel.h - What dist-data-parallel carries out -----*- C++ -*-===//
//
// Part of DistOpt. The plans dist-data-parallel carries out, for the tools
// that choose between it and dist-partition (dist-compile).
//
//===----------------------------------------------------------------------===//
#ifndef DIST_PASSES_DISTRIBUTE_DATAPARALLEL_H
#define DIST_PASSES_DISTRIBUTE_DATAPARALLEL_H

#include "dialects/Dist/DistDialect.h"

#include "mlir/IR/BuiltinOps.h"

namespace distopt {

/// The module's plan when it is one of data parallelism alone (one
/// pipeline stage, no tensor or context parallelism, no per-stage
/// replicas), whose dp, ZeRO stage and global batch dist-data-parallel
/// follows; null otherwise (pipelines run through dist-partition).
dist::PlanAttr dataParallelPlan(mlir::ModuleOp module);

} // namespace distopt

#endif // DIST_PASSES_DISTRIBUTE_DATAPARALLEL_H
