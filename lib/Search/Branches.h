//===- Branches.h - Branch-level placement for inference -------*- C++ -*-===//
//
// Part of DistOpt. A model whose work falls apart after a fork into
// independent branches (a trunk shared by several heads: hierarchical DNNs,
// multi-task models) can run those branches on different devices at the
// same time, which a chain of pipeline stages cannot: a chain runs one
// batch's stages one after the other. This places the trunk and each
// branch on a device, weighing every assignment with the cost model and
// the cluster's links, for the latency of one batch:
//
//   latency = trunk(t) + max over devices d of
//               [send of the branch inputs t -> d, serialized on t's link]
//               + sum of d's branches + [their outputs d -> t]
//             + tail(t)
//
// The trunk's device t also runs the tail after the join and gathers the
// outputs. Every assignment on one device is one of those weighed, so the
// best placement is never slower than the best single device.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_LIB_SEARCH_BRANCHES_H
#define DIST_LIB_SEARCH_BRANCHES_H

#include "lib/Search/Search.h"

#include "llvm/Support/JSON.h"

namespace distopt::search {

/// The pieces of a forked model as layers of a cost description: layer 0
/// the trunk (may have no ops), layers 1..branches the branches, the last
/// the tail (may have no ops); and what crosses between them.
struct BranchShape {
  unsigned branches = 0;
  /// Names of the pieces, for the summary ("trunk", "branch 1 (Gemm ..)").
  std::vector<std::string> names;
  /// Per-sample bytes of each value a branch reads from the trunk or the
  /// inputs (indices into valueBytes: a device holding several branches
  /// that read the same value receives it once).
  std::vector<double> valueBytes;
  std::vector<std::vector<unsigned>> branchInputs;
  /// Per-sample bytes each branch sends back (its outputs and what the
  /// tail reads).
  std::vector<double> branchOutputBytes;
};

/// A placement of the pieces and its prediction.
struct BranchPlacement {
  /// Device (rank of the cluster) of each piece: trunk, branches, tail
  /// (the tail's is the trunk's).
  std::vector<unsigned> devices;
  /// Seconds: the whole batch, the trunk, the tail; per device used, when
  /// its branches finish and when their outputs are at the trunk's device.
  double latency = 0, trunk = 0, tail = 0;
  struct DeviceTime {
    unsigned device = 0;
    std::vector<unsigned> branches; // 1-based piece indices
    double start = 0, compute = 0, arrive = 0, weightBytes = 0;
  };
  std::vector<DeviceTime> perDevice;
};

/// What the branch search found beside the chain partition.
struct BranchResult {
  BranchShape shape;
  unsigned batch = 0;
  /// The branches read the model's inputs (the trunk has no ops).
  bool emptyTrunk = false;
  BranchPlacement best;
  /// The best placement on one device (every piece on it).
  BranchPlacement single;
  /// The best chain (pipeline) partition of one batch the plan search
  /// found, when there is one; otherwise why not.
  std::optional<double> chainLatency;
  std::string chainPlan, chainProblem;
  unsigned long weighed = 0, memoryPruned = 0;
  /// The devices were interchangeable: groupings were weighed.
  bool symmetric = false;
  /// Whether the branch placement is recorded (faster than the chain).
  bool recorded = false;
};

/// Weighs every assignment of the trunk and the branches to the first
/// `options.devices` devices (0: all) of \p c for one batch of
/// `options.globalBatch` samples; pieces are the layers of \p pieces (see
/// BranchShape). On interchangeable devices (one kind, one link between
/// any two) every grouping of the branches instead, each group's device
/// by Jackson's rule: the same best latency with far fewer placements
/// (\p exhaustive weighs every assignment anyway: tests compare the two).
/// Errors: too many placements to weigh, none fits memory.
llvm::Expected<BranchResult>
searchBranches(const cost::ModelDesc &pieces, const BranchShape &shape,
               const cluster::Cluster &c, const cost::CostModel &cm,
               const SearchOptions &options, bool exhaustive = false);

/// The summary lines: the placement, per device, against one device and
/// against the chain.
void printBranches(const BranchResult &r, const cluster::Cluster &c,
                   llvm::raw_ostream &os);
/// The report's `branches` object (docs/report-format.md).
llvm::json::Value toJSON(const BranchResult &r, const cluster::Cluster &c);

/// Most placements the search weighs (devices^(branches+1), or the
/// groupings on interchangeable devices).
constexpr unsigned long kMaxBranchAssignments = 1ul << 22;

} // namespace distopt::search

#endif // DIST_LIB_SEARCH_BRANCHES_H
