//===- Schedule.h - Pipeline schedules as data ------------------*- C++ -*-===//
//
// A schedule is, for each pipeline rank, an ordered list of actions: forward
// F(mb, chunk), backward B (input and weight grad together) or its halves
// BackwardInput / BackwardWeight, sends and receives of activations and
// gradients, DP collectives and the optimizer step. The simulator and the
// runtime executor consume the same lists. Virtual stage of (rank r, chunk c)
// is c * pp + r; activations flow from virtual stage v to v + 1.
//
// A replicated schedule (Plan::replicas) has one list per slot instead: the
// r_s slots of stage s are lists firstList[s] .. firstList[s] + r_s - 1, and
// slot k of stage s runs the micro-batches m = k (mod r_s). Send and receive
// peers are then list (slot) indices.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_LIB_SCHEDULE_SCHEDULE_H
#define DISTOPT_LIB_SCHEDULE_SCHEDULE_H

#include "lib/Schedule/Plan.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace llvm {
class raw_ostream;
} // namespace llvm

namespace distopt::schedule {

enum class ActionKind : uint8_t {
  Forward,
  Backward,       ///< input and weight gradient together
  BackwardInput,  ///< "B" of the zero-bubble papers
  BackwardWeight, ///< "W"
  SendActivation, ///< to the next virtual stage
  RecvActivation, ///< from the previous virtual stage
  SendGrad,       ///< to the previous virtual stage
  RecvGrad,       ///< from the next virtual stage
  AllReduce,      ///< DP gradient sync of one chunk
  ReduceScatter,  ///< ZeRO gradient sync of one chunk
  AllGather,      ///< ZeRO parameter gather of one chunk
  OptimizerStep
};
llvm::StringRef actionName(ActionKind k);
bool isCompute(ActionKind k);
bool isCollective(ActionKind k);

/// Peer value of a Forward that runs overlapped with the backward after it
/// (DualPipe's F&B pair: both inputs are received before it, both outputs
/// sent after the backward, and each hides its communication behind the
/// other's compute).
constexpr int kOverlappedWithNext = -2;

/// Eight bytes, so that the lists of a 3072-GPU plan stay in cache.
struct Action {
  ActionKind kind = ActionKind::Forward;
  int8_t chunk = 0;  ///< local chunk; for collectives the chunk synced
  int16_t peer = -1; ///< pipeline rank for sends and receives
  int32_t mb = -1;   ///< micro-batch, -1 for per-iteration actions

  Action() = default;
  Action(ActionKind kind, int mb, int chunk = 0, int peer = -1)
      : kind(kind), chunk(static_cast<int8_t>(chunk)),
        peer(static_cast<int16_t>(peer)), mb(mb) {}

  bool operator==(const Action &o) const {
    return kind == o.kind && mb == o.mb && chunk == o.chunk && peer == o.peer;
  }
  /// "F3.0", "B1.1", "sendA3.0>2", "AR.0", "OPT"; "F3.0&" for a forward
  /// overlapped with the next backward.
  std::string str() const;
  bool overlappedWithNext() const {
    return kind == ActionKind::Forward && peer == kOverlappedWithNext;
  }
};

struct Schedule {
  ScheduleKind kind = ScheduleKind::OneFOneB;
  unsigned pp = 1, chunks = 1, microbatches = 1;
  /// Weight versions each list keeps (asynchronous schedules stash).
  std::vector<unsigned> weightVersions;
  /// One action list per pipeline rank, or per slot when replicated.
  std::vector<std::vector<Action>> devices;
  /// Replicas per pipeline stage (empty: one list per stage).
  std::vector<unsigned> replicas;
  /// Forward actions and their transfers only: an inference stream.
  bool forwardOnly = false;
  /// Replicated: first list of each stage (pp + 1 entries) and the stage of
  /// each list.
  std::vector<unsigned> firstList, listStage;

  unsigned numVirtualStages() const { return pp * chunks; }
  bool replicated() const { return !replicas.empty(); }
  unsigned stageOfList(unsigned list) const {
    return listStage.empty() ? list : listStage[list];
  }
  unsigned stageOf(unsigned list, int chunk) const {
    return virtualStageOf(isVShape(kind), pp, stageOfList(list), chunk);
  }
  /// The list that runs virtual stage \p vs for micro-batch \p mb.
  unsigned listOf(unsigned vs, int mb) const {
    unsigned r = rankOfStage(isVShape(kind), pp, vs);
    return replicas.empty() ? r : firstList[r] + mb % replicas[r];
  }
  /// Micro-batches list \p list runs (of each of its chunks).
  unsigned microbatchesOf(unsigned list) const {
    if (replicas.empty())
      return microbatches;
    unsigned s = listStage[list], r = replicas[s], k = list - firstList[s];
    return microbatches / r + (k < microbatches % r ? 1 : 0);
  }
  void print(llvm::raw_ostream &os) const;
};

struct ScheduleOptions {
  /// Emit DP gradient collectives (dp > 1).
  bool dataParallel = false;
  /// ZeRO stage: >= 1 syncs by reduce-scatter and re-gathers parameters.
  unsigned zero = 0;
  /// Sync each chunk as soon as its gradients are complete (false: all
  /// syncs after the last backward).
  bool overlapGradSync = true;
  /// ZeRO's parameter all-gather runs under the next iteration's forward
  /// passes (Megatron's overlap_param_gather): no AllGather ends the
  /// steady-state iteration.
  bool overlapParamGather = false;
  /// Replicas per pipeline stage (Plan::replicas): one list per slot, DP
  /// collectives among the replicas of each stage with more than one
  /// (dataParallel is then ignored). Needs chunks = 1 and gpipe, 1f1b,
  /// pipedream or pipedream-2bw.
  std::vector<unsigned> replicas;
  /// PipeMare's discrepancy correction is on (Plan::pipemareDecay < 1): the
  /// stages with a delay keep a velocity buffer beside their weights.
  bool pipemareCorrection = true;
};

/// The schedule options \p plan asks for: DP collectives when its weights
/// are replicated (dp * cp > 1), its ZeRO stage, gradient-sync overlap and
/// per-stage replicas.
ScheduleOptions scheduleOptions(const Plan &plan);

/// Builds the action lists of \p kind for \p pp ranks, \p chunks chunks per
/// rank and \p microbatches micro-batches; errors for impossible shapes.
llvm::Expected<Schedule> generateSchedule(ScheduleKind kind, unsigned pp,
                                          unsigned chunks,
                                          unsigned microbatches,
                                          const ScheduleOptions &opts = {});

/// The forward-only stream of an inference pipeline of \p pp ranks: every
/// micro-batch is received from the previous rank, run, and sent to the
/// next, in order (GPipe's forward half, with no flush to wait for).
llvm::Expected<Schedule> generateForwardSchedule(unsigned pp,
                                                 unsigned microbatches);

/// An action of one global rank; peerRank is the global rank a send or
/// receive talks to (-1 otherwise).
struct RankAction {
  Action action;
  int32_t peerRank = -1;
};

/// The action list of global rank \p rank under \p plan (ranks are
/// t + tp * (d + dp * s)): its stage's list, each send/receive peer turned
/// into the global rank of the same (d, t) in the peer stage. Replicated
/// plans: rank t + tp * slot runs the list of its slot, and a peer slot q
/// becomes rank t + tp * q. This is what a per-device program executes.
/// Empty for a rank outside the plan.
std::vector<RankAction> actionsForRank(const Schedule &s, const Plan &plan,
                                       unsigned rank);

/// Most micro-batches whose activations a rank holds at once (F done, B not).
std::vector<unsigned> maxInFlight(const Schedule &s);

/// What one rank holds at its peak: its static memory and, at the moment
/// of the peak in the in-order walk of its list, the saved activations of
/// the micro-batches in flight, the activations kept from B to W (split
/// backward) and the backward working set (when the peak is in a backward).
struct PeakMemory {
  /// Weights, gradients, optimizer state, extra weight versions.
  cost::MemoryBreakdown fixed;
  double activations = 0, activationStash = 0, working = 0;
  /// activations + activationStash + working, as the walk summed them.
  double dynamicBytes = 0;
  double total() const { return fixed.staticBytes() + dynamicBytes; }
};

/// peakMemory's figures, by what holds the bytes.
std::vector<PeakMemory> peakMemoryParts(const Schedule &s,
                                        const PipelineCosts &costs);

/// Peak bytes per rank when the action lists run in order: static memory,
/// activations in flight, W stashes, the backward working set (the totals
/// of peakMemoryParts).
std::vector<double> peakMemory(const Schedule &s, const PipelineCosts &costs);

/// Errors for the first rank whose \p peak bytes exceed its device memory
/// (or \p memoryLimit if > 0).
llvm::Error checkMemory(const std::vector<double> &peak,
                        const PipelineCosts &costs, double memoryLimit = 0);

/// A schedule the verifier rejects: the message, and where the problem is
/// (the list and the index of the action in it; -1 for a whole list or the
/// whole schedule), so that a caller holding the IR form can point at the
/// op.
class ScheduleError : public llvm::ErrorInfo<ScheduleError> {
public:
  static char ID;
  ScheduleError(std::string message, int list = -1, int action = -1)
      : message(std::move(message)), list(list), action(action) {}
  void log(llvm::raw_ostream &os) const override;
  std::error_code convertToErrorCode() const override;

  std::string message;
  int list, action;
};

/// Checks that every compute action appears exactly once, dependencies are
/// met in each list, each send has its receive, the lists cannot deadlock
/// (sends are eager, receives block), and, when \p costs is given, memory
/// stays within each device's capacity (or \p memoryLimit if > 0).
llvm::Error verifySchedule(const Schedule &s,
                           const PipelineCosts *costs = nullptr,
                           double memoryLimit = 0);

} // namespace distopt::schedule

#endif // DISTOPT_LIB_SCHEDULE_SCHEDULE_H
