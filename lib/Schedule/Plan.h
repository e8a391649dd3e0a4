//===- Plan.h - Parallel plans and per-stage costs --------------*- C++ -*-===//
//
// A plan fixes the data-, tensor- and pipeline-parallel degrees, the
// micro-batch size, the pipeline schedule, recomputation and ZeRO stage, and
// (optionally) the layer ranges of the pipeline stages. Ranks are numbered
// tp fastest, then dp, then pp: rank = t + tp * (d + dp * s).
//
// PipeDream-style per-stage replication ("15-1"): `replicas` gives stage s
// its own data-parallel degree r_s (then dp must be 1). The r_s replicas of
// stage s are its *slots*, numbered stage-major: slot(s, k) = sum_{s'<s}
// r_s' + k, rank = t + tp * slot(s, k) (the same numbering as above when
// every r_s = dp). All globalBatch / mbs micro-batches pass every stage;
// global micro-batch m runs on replica m mod r_s of stage s (round-robin).
//
// PipelineCosts turns a plan into the numbers the schedule verifier and the
// simulator need: per virtual stage the F/B/W times and activation bytes,
// per pipeline rank the static memory, p2p links and DP collectives. Because
// the TP and DP replicas of a stage behave alike, everything is per pipeline
// rank (a stage group), not per GPU.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_LIB_SCHEDULE_PLAN_H
#define DISTOPT_LIB_SCHEDULE_PLAN_H

#include "lib/Cluster/Cluster.h"
#include "lib/Cost/CostModel.h"
#include "lib/Cost/ModelDesc.h"
#include "lib/Schedule/RankLayout.h"

#include <cstdint>
#include <string>
#include <vector>

namespace distopt::schedule {

enum class ScheduleKind {
  GPipe,
  OneFOneB, ///< 1F1B with early backward (DAPPLE, PipeDream-Flush)
  Interleaved,
  ZBH1,
  PipeDream,   ///< asynchronous 1F1B with weight stashing
  PipeDream2BW ///< asynchronous, double-buffered weights
};
llvm::StringRef scheduleName(ScheduleKind k);
bool parseScheduleKind(llvm::StringRef s, ScheduleKind &out);
/// True for schedules without a pipeline flush.
bool isAsync(ScheduleKind k);

/// What a plan is for: training steps, or a forward-only stream.
enum class Mode { Train, Infer };
llvm::StringRef modeName(Mode m);
/// What inference minimises: the time of one global batch, or the time per
/// sample of an endless stream of batches.
enum class InferObjective { Latency, Throughput };
llvm::StringRef objectiveName(InferObjective o);

/// A plan: its rank layout (dp, tp, pp, chunks, replicas) and how each
/// stage runs.
struct Plan : RankLayout {
  unsigned mbs = 1;
  ScheduleKind schedule = ScheduleKind::OneFOneB;
  cost::Recompute recompute = cost::Recompute::None;
  unsigned zero = 0;
  /// Megatron's scatter/gather: each TP rank sends 1/tp of the boundary.
  bool scatterGather = true;
  /// Sends overlap compute (false: they block the compute stream, as the
  /// blocking p2p of Megatron-LM 2021 did).
  bool overlapP2P = true;
  /// DP gradient sync of a chunk starts when its gradients are ready (false:
  /// after the whole backward, before the optimizer step).
  bool overlapGradSync = true;
  /// Data-parallel replicas of different device kinds get micro-batch
  /// counts in proportion to their speed (HetPipe/Metis); false: every
  /// replica does the same share and waits for the slowest.
  bool unevenBatch = false;
  /// First layer of virtual stages 1..pp*chunks-1 (empty: balance by cost).
  std::vector<unsigned> cuts;
  /// Filled by finalizePlan.
  unsigned globalBatch = 0;
  unsigned numMicrobatches = 0;
  /// What the plan is for, what inference minimises, and the element type
  /// the costs assume (mixed precision runs f32 graphs in bf16).
  Mode mode = Mode::Train;
  InferObjective objective = InferObjective::Throughput;
  cluster::DType dtype = cluster::DType::BF16;

  /// Layer range [begin, end) of virtual stage \p vs (after finalizePlan).
  std::pair<unsigned, unsigned> stageLayers(unsigned vs,
                                            unsigned numLayers) const;
  /// "dp=..,tp=..,..." in the form parsePlan reads.
  std::string str() const;
};

/// Parses "dp=24,tp=8,pp=8,mbs=1,schedule=interleaved,chunks=2,
/// recompute=full,zero=0[,sg=1][,stages=13/26/39][,replicas=15/1]" (missing
/// keys keep their defaults; `stages` lists the first layer of each stage
/// after the first; `replicas` one replica count per stage, and sets pp when
/// pp is not given).
llvm::Expected<Plan> parsePlan(llvm::StringRef spec);

/// Checks \p plan against the model and cluster, derives the number of
/// micro-batches from \p globalBatch, and partitions the layers (balanced by
/// cost) when no cuts are given.
llvm::Error finalizePlan(Plan &plan, const cost::ModelDesc &model,
                         const cluster::Cluster &cluster, unsigned globalBatch,
                         const cost::CostModel &cm);

/// Balanced contiguous partition of \p layerCost into \p parts ranges; part
/// i's cost is scaled by \p partScale[i] (slower devices get less work).
/// Returns the first layer of parts 1..parts-1.
std::vector<unsigned> balancedCuts(const std::vector<double> &layerCost,
                                   const std::vector<double> &partScale);

/// Micro-batches per data-parallel replica of pipeline stage \p s when
/// plan.unevenBatch splits numMicrobatches * dp of them by speed:
/// \p perSampleTime[ty] is the time of one micro-batch on device kind ty;
/// the split minimises the slowest replica's total (water-filling). Returns
/// one count per replica d; all equal to numMicrobatches without
/// unevenBatch or with one device kind.
std::vector<unsigned> replicaMicrobatches(const Plan &plan,
                                          const cluster::Cluster &c,
                                          unsigned s,
                                          const std::vector<double> &mbTime);

/// Distinct device kinds (cluster device indices) among the replicas of
/// pipeline stage \p s.
std::vector<unsigned> stageDeviceTypes(const Plan &plan,
                                       const cluster::Cluster &c, unsigned s);

/// Shape of the group of global \p ranks on \p c, for collective costs
/// (the first rank's node counts as "one node").
cost::GroupShape shapeOf(const cluster::Cluster &c,
                         const std::vector<unsigned> &ranks);
/// Where the TP group (replica 0) and the DP group (tensor rank 0) of
/// pipeline stage \p s sit on \p cluster, for collective costs.
cost::GroupShape tensorGroup(const Plan &plan, const cluster::Cluster &c,
                             unsigned s);
cost::GroupShape dataGroup(const Plan &plan, const cluster::Cluster &c,
                           unsigned s);

/// Per-micro-batch costs of one virtual stage on one device of its group.
struct StageCost {
  unsigned device = 0; ///< pipeline rank
  unsigned chunk = 0;
  unsigned layerBegin = 0, layerEnd = 0;
  double fwd = 0, bwdInput = 0, bwdWeight = 0, recompute = 0;
  double flops = 0, modelFlops = 0;
  /// Activations kept from F to B, and from B to W (split backward).
  double activationBytes = 0, stashBytes = 0;
  /// Time and bytes (per device) of the activation message to the next
  /// virtual stage and of the gradient message to the previous one.
  double sendNextTime = 0, sendNextBytes = 0;
  double sendPrevTime = 0, sendPrevBytes = 0;
  cluster::LinkLevel nextLevel = cluster::LinkLevel::IntraNode;
  cluster::LinkLevel prevLevel = cluster::LinkLevel::IntraNode;
  /// DP gradient synchronisation of this chunk's parameters.
  double gradSyncTime = 0;
  double gradSyncBytes[cluster::kNumLinkLevels] = {0, 0};
  /// Bytes sent per device per micro-batch by TP all-reduces (and ZeRO-3
  /// weight gathers), per link level.
  double mbBytes[cluster::kNumLinkLevels] = {0, 0};
  double params = 0; ///< per device
};

/// The boundary messages of one action list, per micro-batch and device.
struct Boundary {
  double nextTime = 0, nextBytes = 0, prevTime = 0, prevBytes = 0;
  cluster::LinkLevel nextLevel = cluster::LinkLevel::IntraNode;
  cluster::LinkLevel prevLevel = cluster::LinkLevel::IntraNode;
};

/// Per pipeline rank.
struct DeviceCost {
  std::string deviceName;
  double memoryCapacity = 0;
  cost::MemoryBreakdown staticMemory;
  double workingBytes = 0;
  double optimizerTime = 0;
  unsigned devicesInGroup = 1; ///< tp * dp devices that behave alike
  /// Compute time of this list relative to its stage's StageCost (a slot
  /// on a faster device kind than its stage's slowest one has < 1).
  double computeScale = 1;
};

struct PipelineCosts {
  unsigned pp = 1, chunks = 1, microbatches = 1, mbs = 1;
  unsigned globalBatch = 0;
  std::vector<StageCost> stages; ///< virtual stages in pipeline order
  /// One per action list: per pipeline rank, or per slot when replicated.
  std::vector<DeviceCost> devices;
  /// Replicated plans: the pipeline stage of each slot (empty: list r is
  /// pipeline rank r).
  std::vector<unsigned> slotStage;
  /// Replicated plans: each slot's boundary messages, the slowest over the
  /// peer slots it talks to (StageCost's send fields are then the stage's
  /// slowest pair). Empty: the stage's.
  std::vector<Boundary> slotSends;
  std::vector<std::string> levelNames{"intra_node", "network"};
  bool overlapP2P = true;

  unsigned numVirtualStages() const { return stages.size(); }
  unsigned stageOfList(unsigned list) const {
    return slotStage.empty() ? list : slotStage[list];
  }
  const StageCost &stage(unsigned list, unsigned chunk) const {
    return stages[chunk * pp + stageOfList(list)];
  }
  Boundary boundary(unsigned list, unsigned chunk) const {
    if (!slotSends.empty())
      return slotSends[list];
    const StageCost &st = stage(list, chunk);
    return {st.sendNextTime, st.sendNextBytes, st.sendPrevTime,
            st.sendPrevBytes, st.nextLevel,      st.prevLevel};
  }
};

/// Costs of \p plan (finalized) for \p model on \p cluster. \p weightVersions
/// per pipeline rank comes from the schedule (asynchronous schedules stash
/// weights); pass {} for one version everywhere.
PipelineCosts buildPipelineCosts(const Plan &plan, const cost::ModelDesc &model,
                                 const cluster::Cluster &cluster,
                                 const cost::CostModel &cm,
                                 const std::vector<unsigned> &weightVersions,
                                 const cost::MemoryConfig &memoryBase = {});

/// Synthetic costs: every virtual stage of a pp x chunks pipeline takes \p f,
/// \p bi and \p bw seconds for F, B and W of a micro-batch, holds one byte
/// of activations, and sends to its neighbours over the network in \p send
/// seconds; no optimizer, no DP sync. The uniform model the analytic bubble
/// formulas describe (tests and the bubble benchmark).
PipelineCosts uniformPipelineCosts(unsigned pp, unsigned chunks,
                                   unsigned microbatches, double f, double bi,
                                   double bw, double send = 0);

} // namespace distopt::schedule

#endif // DISTOPT_LIB_SCHEDULE_PLAN_H
