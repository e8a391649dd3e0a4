//===- RankLayout.h - Which device runs which part of a plan ----*- C++ -*-===//
//
// Part of DistOpt. The rank math of a parallel plan, in one place: the
// planner, the schedule generators, the simulator, the partitioner and the
// generated programs all number devices this way. No MLIR dependency.
//
// Ranks are numbered tensor rank fastest, then context-parallel rank, then
// data-parallel replica, then pipeline stage:
// rank = t + tp * (c + cp * (d + dp * s)). With PipeDream-style
// per-stage replicas (`replicas`, one count r_s per pipeline stage; dp = 1
// and chunks = 1) the r_s replicas of stage s are its *slots*, numbered
// stage-major: slot(s, d) = r_0 + ... + r_{s-1} + d and
// rank = t + tp * slot(s, d) (cp = 1), which is the same numbering when
// every r_s = dp. Virtual stage v (interleaved chunks: v = chunk * pp + s)
// runs on pipeline stage s = v mod pp; V-shaped layouts (two chunks, the
// second folded back: ZB-V, V-Half, V-Min, DualPipe-V) run virtual stages s
// and 2 pp - 1 - s on stage s, so the first and the last share a device.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_LIB_SCHEDULE_RANKLAYOUT_H
#define DISTOPT_LIB_SCHEDULE_RANKLAYOUT_H

#include <cstdint>
#include <optional>
#include <vector>

namespace distopt::schedule {

/// Virtual stage that pipeline rank \p r runs as chunk \p ch: ch * pp + r,
/// or for V-shaped layouts r (chunk 0) and 2 pp - 1 - r (chunk 1).
inline unsigned virtualStageOf(bool vShape, unsigned pp, unsigned r,
                               unsigned ch) {
  return vShape && ch == 1 ? 2 * pp - 1 - r : ch * pp + r;
}
/// Pipeline rank of virtual stage \p vs (the inverse).
inline unsigned rankOfStage(bool vShape, unsigned pp, unsigned vs) {
  return vShape && vs >= pp ? 2 * pp - 1 - vs : vs % pp;
}

/// The parallel degrees that fix where every piece of a plan runs.
struct RankLayout {
  unsigned dp = 1, tp = 1, pp = 1;
  /// Context parallelism: each sequence split over cp ranks (ring
  /// attention); the cp ranks of a replica hold the same weights.
  unsigned cp = 1;
  /// Model chunks per pipeline stage (interleaved schedules).
  unsigned chunks = 1;
  /// Two chunks with the second folded back (the V-shaped schedules; see
  /// the file comment). Plans keep it equal to isVShape(schedule).
  bool vShape = false;
  /// Replicas (data-parallel degree) per pipeline stage; empty: dp for
  /// every stage. Needs dp = 1 and chunks = 1.
  std::vector<unsigned> replicas;

  unsigned numVirtualStages() const { return pp * chunks; }
  /// Pipeline stage (device group) that runs virtual stage \p vs.
  unsigned pipelineStage(unsigned vs) const {
    return rankOfStage(vShape, pp, vs);
  }
  /// Virtual stage that pipeline stage \p s runs as chunk \p ch (the
  /// inverse of pipelineStage).
  unsigned virtualStage(unsigned s, unsigned ch) const {
    return virtualStageOf(vShape, pp, s, ch);
  }
  bool replicated() const { return !replicas.empty(); }
  /// Data-parallel replicas of pipeline stage \p s (0 outside the plan).
  unsigned replicasOf(unsigned s) const {
    return replicas.empty() ? dp : s < replicas.size() ? replicas[s] : 0;
  }
  /// Slot of replica 0 of pipeline stage \p s (slots are stage-major).
  unsigned firstSlot(unsigned s) const;
  /// Stage replicas over all stages: dp * pp, or the sum of `replicas`.
  uint64_t numSlots() const;
  /// Devices the plan runs on: tp * cp times the slots.
  uint64_t numDevices() const {
    return static_cast<uint64_t>(tp) * cp * numSlots();
  }
  /// Global rank of tensor rank \p t of context rank \p c of replica \p d
  /// of pipeline stage \p s.
  unsigned globalRank(unsigned s, unsigned d, unsigned t,
                      unsigned c = 0) const {
    return t + tp * (c + cp * (d + firstSlot(s)));
  }
  /// The devices of pipeline stage \p s as a row-major [replicas, cp, tp]
  /// mesh.
  std::vector<unsigned> stageDevices(unsigned s) const;
  /// The tensor-parallel groups of pipeline stage \p s: one per (replica,
  /// context rank), in that order, each its tp devices in tensor order.
  std::vector<std::vector<unsigned>> tensorGroups(unsigned s) const;
  /// The context-parallel groups of pipeline stage \p s: one per (replica,
  /// tensor rank), in that order, each its cp devices in context order
  /// (the devices that hold the parts of the same sequences).
  std::vector<std::vector<unsigned>> contextGroups(unsigned s) const;
  /// The data-parallel groups of pipeline stage \p s: one per (context
  /// rank, tensor rank), in that order, each its replicas' devices in
  /// replica order (the devices that hold the same part of the weights).
  std::vector<std::vector<unsigned>> replicaGroups(unsigned s) const;
  /// The data-parallel groups with context parallelism (Megatron's
  /// data-parallel group "with cp") of pipeline stage \p s: one per tensor
  /// rank, each its replicas' context ranks, replica-major (in rank
  /// order). The weight gradients of a context rank are its tokens' part:
  /// summed over cp and averaged over dp in one sync over such a group,
  /// over which ZeRO also shards. With cp = 1 these are replicaGroups.
  std::vector<std::vector<unsigned>> replicaContextGroups(unsigned s) const;

  /// The expert-parallel groups of pipeline stage \p s with \p ep experts
  /// groups (ep | replicas): each ep consecutive replicas (per context and
  /// tensor rank), which exchange their tokens and hold the experts'
  /// parts, in replica order.
  std::vector<std::vector<unsigned>> expertGroups(unsigned s,
                                                  unsigned ep) const;
  /// One of them: replicas [first, first + ep) at tensor rank \p t and
  /// context rank \p c (the search's costs ask for one per stage).
  std::vector<unsigned> expertGroup(unsigned s, unsigned ep, unsigned first,
                                    unsigned t, unsigned c) const;
  /// The devices of stage \p s that hold the same experts (every ep-th
  /// replica, and the context ranks of those, replica-major; one group per
  /// (first replica mod ep, tensor rank)): over them the experts'
  /// gradients are synced.
  std::vector<std::vector<unsigned>> expertDataGroups(unsigned s,
                                                      unsigned ep) const;
  /// One of them: replicas i, i + ep, ... at tensor rank \p t.
  std::vector<unsigned> expertDataGroup(unsigned s, unsigned ep, unsigned i,
                                        unsigned t) const;
  /// Where a global rank sits in the plan.
  struct Coord {
    unsigned stage = 0, replica = 0, tensor = 0, context = 0;
  };
  /// The (stage, replica, context, tensor rank) of \p rank; nullopt outside
  /// the plan.
  std::optional<Coord> coordOf(unsigned rank) const;
};

} // namespace distopt::schedule

#endif // DISTOPT_LIB_SCHEDULE_RANKLAYOUT_H
