//===- RankLayout.h - Which device runs which part of a plan ----*- C++ -*-===//
//
// Part of DistOpt. The rank math of a parallel plan, in one place: the
// planner, the schedule generators, the simulator, the partitioner and the
// generated programs all number devices this way. No MLIR dependency.
//
// Ranks are numbered tensor rank fastest, then data-parallel replica, then
// pipeline stage: rank = t + tp * (d + dp * s). With PipeDream-style
// per-stage replicas (`replicas`, one count r_s per pipeline stage; dp = 1
// and chunks = 1) the r_s replicas of stage s are its *slots*, numbered
// stage-major: slot(s, d) = r_0 + ... + r_{s-1} + d and
// rank = t + tp * slot(s, d), which is the same numbering when every
// r_s = dp. Virtual stage v (interleaved chunks: v = chunk * pp + s) runs on
// pipeline stage s = v mod pp.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_LIB_SCHEDULE_RANKLAYOUT_H
#define DISTOPT_LIB_SCHEDULE_RANKLAYOUT_H

#include <cstdint>
#include <optional>
#include <vector>

namespace distopt::schedule {

/// The parallel degrees that fix where every piece of a plan runs.
struct RankLayout {
  unsigned dp = 1, tp = 1, pp = 1;
  /// Model chunks per pipeline stage (interleaved schedules).
  unsigned chunks = 1;
  /// Replicas (data-parallel degree) per pipeline stage; empty: dp for
  /// every stage. Needs dp = 1 and chunks = 1.
  std::vector<unsigned> replicas;

  unsigned numVirtualStages() const { return pp * chunks; }
  /// Pipeline stage (device group) that runs virtual stage \p vs.
  unsigned pipelineStage(unsigned vs) const { return vs % pp; }
  bool replicated() const { return !replicas.empty(); }
  /// Data-parallel replicas of pipeline stage \p s (0 outside the plan).
  unsigned replicasOf(unsigned s) const {
    return replicas.empty() ? dp : s < replicas.size() ? replicas[s] : 0;
  }
  /// Slot of replica 0 of pipeline stage \p s (slots are stage-major).
  unsigned firstSlot(unsigned s) const;
  /// Stage replicas over all stages: dp * pp, or the sum of `replicas`.
  uint64_t numSlots() const;
  /// Devices the plan runs on: tp times the slots.
  uint64_t numDevices() const { return static_cast<uint64_t>(tp) * numSlots(); }
  /// Global rank of tensor rank \p t of replica \p d of pipeline stage \p s.
  unsigned globalRank(unsigned s, unsigned d, unsigned t) const {
    return t + tp * (d + firstSlot(s));
  }
  /// The devices of pipeline stage \p s as a row-major [replicas, tp] mesh.
  std::vector<unsigned> stageDevices(unsigned s) const;

  /// Where a global rank sits in the plan.
  struct Coord {
    unsigned stage = 0, replica = 0, tensor = 0;
  };
  /// The (stage, replica, tensor rank) of \p rank; nullopt outside the plan.
  std::optional<Coord> coordOf(unsigned rank) const;
};

} // namespace distopt::schedule

#endif // DISTOPT_LIB_SCHEDULE_RANKLAYOUT_H
