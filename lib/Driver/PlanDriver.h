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

#include "llvm/Support/Error.h"

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
  /// Search the plan (--dist-search[=CONSTRAINTS]).
  bool search = false;
  std::string searchConstraints;
  /// "train" or "infer"; for inference, "throughput" or "latency".
  std::string mode = "train";
  std::string objective = "throughput";
  /// Per-device memory limit such as "80GB" or "40GiB" (empty: the device's).
  std::string memoryLimit;
  /// Let the search pick PipeDream / PipeDream-2BW (asynchronous updates).
  bool allowAsync = false;
  /// Print the table of the best plans and why the winner wins.
  bool explain = false;
  /// Runner-up plans in the report and the table.
  unsigned alternatives = 3;
  /// Devices the search may use: the cluster's first N (0: all).
  unsigned devices = 0;
  /// Progress line on stderr: "auto" (a terminal, or after 1 s), "always",
  /// "never".
  std::string progress = "auto";
  /// Also wrap each virtual stage's ops in a `dist.stage` region on its
  /// devices (passes/Partition, docs/partition.md).
  bool stageRegions = false;

  bool any() const {
    return !cluster.empty() || !plan.empty() || simulate || printModel ||
           !report.empty() || !trace.empty() || !timeline.empty() || search ||
           explain || stageRegions;
  }
};

/// Runs the planning steps `options` ask for on `module`, printing a readable
/// summary to `os`. Errors are emitted as diagnostics on the module. The
/// chosen or given plan is recorded on the module (`dist.cluster`,
/// `dist.plan`) and on every op of the planned function that belongs to a
/// pipeline stage (`dist.stage`, the virtual stage index).
mlir::LogicalResult runPlanDriver(mlir::ModuleOp module,
                                  const PlanDriverOptions &options,
                                  llvm::raw_ostream &os);

/// Parses a byte size: "80GB", "40GiB", "512MB", "1e9" (bytes).
llvm::Expected<double> parseByteSize(llvm::StringRef text);

} // namespace distopt

#endif // DISTOPT_LIB_DRIVER_PLANDRIVER_H
