//===- PlanDriver.h - Plan, simulate and report from dist-opt --*- C++ -*-===//
//
// Part of DistOpt. What `dist-opt --dist-cluster=... --dist-plan=...
// --dist-simulate` does after import: build the cost description of the
// module's main function, resolve the cluster, simulate the plan, write the
// report, trace and timeline, and record cluster and plan in the module.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_LIB_DRIVER_PLANDRIVER_H
#define DISTOPT_LIB_DRIVER_PLANDRIVER_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace distopt {

struct PlanDriverOptions {
  /// PRESET[:NODES] or a YAML file.
  std::string cluster;
  /// "dp=..,tp=..,pp=..,mbs=..,schedule=..,chunks=..,recompute=..,zero=..".
  std::string plan;
  /// Global batch in samples (0: not given).
  unsigned batch = 0;
  bool simulate = false;
  /// Output files; empty: not written.
  std::string report, trace, timeline;
  /// Compute element type (mixed precision runs f32 graphs in bf16).
  std::string dtype = "bf16";
  /// Measured op times overriding the analytic ones (JSON profile database).
  std::string profile;
  /// Print the layered cost description the planner sees.
  bool printModel = false;

  bool any() const {
    return !cluster.empty() || !plan.empty() || simulate || printModel ||
           !report.empty() || !trace.empty() || !timeline.empty();
  }
};

/// Runs the planning steps `options` ask for on `module`, printing a readable
/// summary to `os`. Errors are emitted as diagnostics on the module.
mlir::LogicalResult runPlanDriver(mlir::ModuleOp module,
                                  const PlanDriverOptions &options,
                                  llvm::raw_ostream &os);

} // namespace distopt

#endif // DISTOPT_LIB_DRIVER_PLANDRIVER_H
