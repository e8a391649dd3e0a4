//===- Plan.h - Parallel plans and per-stage costs --------------*- C++ -*-===//
//
// A plan fixes the data-, tensor-, context-, expert- and pipeline-parallel
// degrees, sequence parallelism, the micro-batch size, the pipeline
// schedule, recomputation and ZeRO stage, and (optionally) the layer ranges
// of the pipeline stages. Ranks are numbered tp fastest, then cp, then dp,
// then pp: rank = t + tp * (c + cp * (d + dp * s)) (Megatron's order). The
// expert-parallel group is ep consecutive data-parallel replicas (ep
// divides dp); expert weights are replicated over the dp * cp / ep ranks
// that hold the same experts.
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
#include "lib/Cost/Offload.h"
#include "lib/Schedule/RankLayout.h"

#include <cstdint>
#include <string>
#include <vector>

namespace distopt::cost {
class LayerTimesCache;
} // namespace distopt::cost

namespace distopt::schedule {

enum class ScheduleKind {
  GPipe,
  OneFOneB, ///< 1F1B with early backward (DAPPLE, PipeDream-Flush)
  Interleaved,
  ZBH1,
  PipeDream,    ///< asynchronous 1F1B with weight stashing
  PipeDream2BW, ///< asynchronous, double-buffered weights
  ZBH2,         ///< zero bubble at 2p-1 micro-batches (Qi et al.)
  ZBV,          ///< V-shaped zero bubble at 1F1B's memory (Qi et al.)
  VHalf,        ///< V-shaped, half of 1F1B's activations (Qi et al. 2024)
  VMin,         ///< V-shaped, a third of 1F1B's activations
  DualPipeV,    ///< DeepSeek's DualPipe cut in half (V-shaped)
  PipeMare      ///< asynchronous 1F1B, one weight version (Yang et al.)
};
llvm::StringRef scheduleName(ScheduleKind k);
bool parseScheduleKind(llvm::StringRef s, ScheduleKind &out);
/// The accepted schedule names, for messages.
llvm::StringRef scheduleNameList();
/// True for schedules without a pipeline flush.
bool isAsync(ScheduleKind k);
/// True for the schedules that update a stage's weights after every
/// micro-batch's backward (PipeDream, PipeMare), not once per iteration.
bool updatesEveryMicrobatch(ScheduleKind k);
/// The highest ZeRO stage the training programs run under schedule \p k:
/// 3 under the synchronous schedules; 2 under the asynchronous ones, which
/// keep whole weight versions (2BW shards its step's gradient sum,
/// PipeDream and PipeMare each micro-batch's gradient inside its
/// backward). dist-partition refuses more and the search skips it.
unsigned maxZeroStage(ScheduleKind k);
/// Updates between the forward and the backward of a micro-batch on
/// pipeline rank \p r of \p pp in the steady state of 1F1B with \p m
/// micro-batches (the warm-up forwards: min(pp - r - 1, m)), the delay an
/// asynchronous schedule's weights see there.
unsigned pipelineDelay(unsigned pp, unsigned r, unsigned m);
/// Copies of its weights pipeline rank \p r keeps under schedule \p k (the
/// memory model adds the copies beyond the first): PipeDream one per
/// micro-batch in flight, 2BW two, PipeMare a velocity buffer where it
/// corrects a delay (\p pipemareCorrection), the others one.
unsigned weightVersionsOf(ScheduleKind k, unsigned pp, unsigned r, unsigned m,
                          bool pipemareCorrection);
/// Two chunks per rank with the second folded back: rank r runs virtual
/// stages r and 2 pp - 1 - r (the "V"), so the loss sits on rank 0.
inline bool isVShape(ScheduleKind k) {
  return k == ScheduleKind::ZBV || k == ScheduleKind::VHalf ||
         k == ScheduleKind::VMin || k == ScheduleKind::DualPipeV;
}
/// The schedules that split the backward into input- and weight-gradient
/// passes (BI and W).
bool splitsBackward(ScheduleKind k);
/// Schedules that assume the optimizer step is validated after the fact
/// (Qi et al., "optimizer post-validation"): no cross-stage sync ends the
/// iteration, so consecutive iterations overlap and an iteration takes the
/// longest rank's span (first compute start to last action end), not the
/// makespan.
bool isPostValidated(ScheduleKind k);
/// The schedules that run per-stage replicas (Plan::replicas).
bool supportsReplicas(ScheduleKind k);

/// What a plan is for: training steps, or a forward-only stream.
enum class Mode { Train, Infer };
llvm::StringRef modeName(Mode m);
/// What inference minimises: the time of one global batch, or the time per
/// sample of an endless stream of batches.
enum class InferObjective { Latency, Throughput };
llvm::StringRef objectiveName(InferObjective o);

/// A plan: its rank layout (dp, tp, pp, cp, chunks, replicas, V shape) and
/// how each stage runs.
struct Plan : RankLayout {
  unsigned mbs = 1;
  /// Expert parallelism: the routed experts split over ep of the dp
  /// replicas, tokens exchanged by all-to-all (needs ep | dp).
  unsigned ep = 1;
  /// Megatron sequence parallelism over each TP group.
  bool sp = false;
  /// TP collectives overlapped with their projections' GEMMs (Transformer
  /// Engine's tp_comm_overlap; see cost::ExecConfig::tpOverlap).
  bool tpOverlap = false;
  /// Tokens the busiest expert rank gets over the mean (load imbalance of
  /// the router, >= 1; 1 = perfectly balanced, as the NeMo benchmarks force).
  double expertImbalance = 1;
  ScheduleKind schedule = ScheduleKind::OneFOneB;
  cost::Recompute recompute = cost::Recompute::None;
  unsigned zero = 0;
  /// What lives off the device (ZeRO-Offload / ZeRO-Infinity), in the
  /// node's storage tiers (`offload=opt+params`).
  cost::Offload offload;
  /// Megatron's scatter/gather: each TP rank sends 1/tp of the boundary.
  bool scatterGather = true;
  /// Sends overlap compute (false: they block the compute stream, as the
  /// blocking p2p of Megatron-LM 2021 did).
  bool overlapP2P = true;
  /// DP gradient sync of a chunk starts when its gradients are ready (false:
  /// after the whole backward, before the optimizer step).
  bool overlapGradSync = true;
  /// With ZeRO >= 1: the updated parameters' all-gather overlaps the next
  /// iteration's forward passes (Megatron's overlap_param_gather) instead
  /// of ending the iteration.
  bool overlapParamGather = false;
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
  /// The model's attention runs as one fused kernel (FlashAttention, cuDNN):
  /// an imported graph's softmax(Q K^T) V is costed as such, without the
  /// s^2 score tensors (see planning::analyzeLayers).
  bool fusedAttention = false;
  /// The optimizer whose state the memory model holds.
  cost::Optimizer optimizer = cost::Optimizer::Adam;
  /// PipeMare's learning-rate rescheduling: over the first `pipemareWarmup`
  /// updates the learning rate of a stage with delay tau rises from
  /// lr / (tau + 1) to lr (0: none).
  unsigned pipemareWarmup = 0;
  /// PipeMare's discrepancy correction: the backward computes with the
  /// newest weights less the updates since its forward, extrapolated from
  /// a moving average of the updates of decay D^(1/tau); 1 turns it off
  /// (and with it the velocity buffer).
  double pipemareDecay = 0.1;

  /// Pipeline rank of virtual stage \p vs (RankLayout::pipelineStage).
  unsigned rankOf(unsigned vs) const { return pipelineStage(vs); }
  /// Sets the schedule and the V-shaped layout it runs.
  void setSchedule(ScheduleKind k) {
    schedule = k;
    vShape = isVShape(k);
  }
  /// Layer range [begin, end) of virtual stage \p vs (after finalizePlan).
  std::pair<unsigned, unsigned> stageLayers(unsigned vs,
                                            unsigned numLayers) const;
  /// "dp=..,tp=..,..." in the form parsePlan reads.
  std::string str() const;
};

/// Parses "dp=24,tp=8,pp=8,mbs=1,schedule=interleaved,chunks=2,
/// recompute=full,zero=0[,offload=opt+params][,sg=1][,sp=1][,cp=2][,ep=8][,expert_imbalance=1.1]
/// [,pipemare_warmup=K][,pipemare_decay=D][,stages=13/26/39][,replicas=15/1]"
/// (missing keys keep their defaults; `stages` lists the first layer of each
/// stage after the first; `replicas` one replica count per stage, and sets pp
/// when pp is not given).
llvm::Expected<Plan> parsePlan(llvm::StringRef spec);

/// Why tensor parallelism of some degree does not fit a model
/// (tensorParallelMisfit), the first that holds in this order.
enum class TpMisfit {
  None,
  /// It does not divide ModelDesc::attentionHeads: a rank would hold part
  /// of a head.
  Heads,
  /// It does not divide ModelDesc::tpChannels: the ranks would hold
  /// unequal shares of the split channels.
  Channels,
  /// It splits no op: every tensor-parallel region's divisor
  /// (OpDesc::tpDivisor) is one it does not divide, so every region would
  /// run whole on every rank, which dist-tensor-parallel does not run.
  NoSplit,
};
TpMisfit tensorParallelMisfit(unsigned tp, const cost::ModelDesc &model);
/// True when tensor parallelism of degree \p tp gives every rank whole
/// attention heads of \p model and an equal share of the channels it
/// splits (tp divides ModelDesc::attentionHeads and tpChannels), and splits
/// some op (tp divides some split op's region: OpDesc::tpMode; a plan where
/// every region runs whole is not run by dist-tensor-parallel).
inline bool tensorParallelFits(unsigned tp, const cost::ModelDesc &model) {
  return tensorParallelMisfit(tp, model) == TpMisfit::None;
}
/// The error finalizePlan gives when tensorParallelFits fails: names the
/// head or channel count, or the regions, and the degrees that fit.
llvm::Error checkTensorParallel(const Plan &plan, const cost::ModelDesc &model);
/// Checks the plan's stage boundaries (cuts), when it has any, against a
/// model of \p numLayers layers: one per virtual stage boundary, strictly
/// increasing, each stage with a layer. finalizePlan applies it.
llvm::Error checkCuts(const Plan &plan, unsigned numLayers);

/// Activations pipeline rank \p r of a \p kind schedule holds at once, in
/// units of one chunk's activations of one micro-batch (the generators'
/// measured peaks; between F and B, or until W for the V-shaped schedules,
/// which run their Ws promptly).
double activationsInFlight(ScheduleKind kind, unsigned r, unsigned pp,
                           unsigned chunks, unsigned m);

/// Why \p plan cannot offload on \p c (offload needs storage tiers on every
/// node, a synchronous schedule without per-stage replicas, training, and
/// with dp * cp > 1 ZeRO >= 2, whose partitions ZeRO-Offload keeps on the
/// host); success when it can or offloads nothing. finalizePlan applies it.
llvm::Error checkOffload(const Plan &plan, const cluster::Cluster &c);

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
/// Where the groups of pipeline stage \p s sit on \p cluster, for
/// collective costs: TP (replica 0), CP (tensor rank 0), the gradient group
/// of the dense weights (every (d, c) of tensor rank 0: dp * cp ranks), the
/// EP group (ep consecutive replicas) and the gradient group of the expert
/// weights (every ep-th replica, every c: dp * cp / ep ranks).
cost::GroupShape tensorGroup(const Plan &plan, const cluster::Cluster &c,
                             unsigned s);
cost::GroupShape contextGroup(const Plan &plan, const cluster::Cluster &c,
                              unsigned s);
cost::GroupShape dataGroup(const Plan &plan, const cluster::Cluster &c,
                           unsigned s);
cost::GroupShape expertGroup(const Plan &plan, const cluster::Cluster &c,
                             unsigned s);
cost::GroupShape expertDataGroup(const Plan &plan, const cluster::Cluster &c,
                                 unsigned s);
/// How pipeline stage \p s runs its ops under \p plan (groups, sequence
/// parallelism, micro-batch, recomputation, expert imbalance).
cost::ExecConfig execConfig(const Plan &plan, const cluster::Cluster &c,
                            unsigned s);
/// The memory settings of \p plan on top of \p base (dp, tp, cp, ep, sp,
/// ZeRO, recomputation, expert imbalance).
cost::MemoryConfig memoryConfig(const Plan &plan,
                                const cost::MemoryConfig &base);

/// Per-micro-batch costs of one virtual stage on one device of its group.
struct StageCost {
  unsigned device = 0; ///< pipeline rank
  unsigned chunk = 0;
  unsigned layerBegin = 0, layerEnd = 0;
  double fwd = 0, bwdInput = 0, bwdWeight = 0, recompute = 0;
  /// Added to bwdWeight when the weight gradient adds into the step's
  /// running sum (every weight gradient of the chunk after its first since
  /// the last optimizer step; RangeTimes::bwdWeightAccumulate).
  double bwdWeightAccumulate = 0;
  double flops = 0, modelFlops = 0;
  /// Communication inside fwd and bwdInput that DualPipe's overlapped
  /// forward-backward pairs hide behind compute (expert all-to-alls, the
  /// exposed CP ring).
  double fwdComm = 0, bwdComm = 0;
  /// Activations kept from F to B, and from B to W (split backward).
  double activationBytes = 0, stashBytes = 0;
  /// Time and bytes (per device) of the activation message to the next
  /// virtual stage and of the gradient message to the previous one.
  double sendNextTime = 0, sendNextBytes = 0;
  double sendPrevTime = 0, sendPrevBytes = 0;
  cluster::LinkLevel nextLevel = cluster::LinkLevel::IntraNode;
  cluster::LinkLevel prevLevel = cluster::LinkLevel::IntraNode;
  /// DP gradient synchronisation of this chunk's parameters, and (ZeRO) of
  /// it the all-gather of the updated parameters; the rest is the
  /// reduce-scatter of the gradients, once per step, or with ZeRO-2/3 once
  /// per micro-batch (each micro-batch's gradient is sharded as soon as its
  /// backward computed it).
  double gradSyncTime = 0;
  double gradSyncBytes[cluster::kNumLinkLevels] = {0, 0};
  double gradGatherTime = 0;
  double gradGatherBytes[cluster::kNumLinkLevels] = {0, 0};
  /// Bytes sent per device per micro-batch by TP all-reduces (and ZeRO-3
  /// weight gathers), per link level.
  double mbBytes[cluster::kNumLinkLevels] = {0, 0};
  double params = 0; ///< per device (dense + experts)
  double expertParams = 0; ///< of which routed experts
  /// Offloaded plans: this stage's per-micro-batch transfers between the
  /// device and the tiers (included in fwd and bwdInput where the compute
  /// does not hide them).
  cost::StageOffload offload;
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
  /// Bytes one device of this list sends once a step, per link level, in
  /// the exchange of weights read on several pipeline ranks (a tied
  /// embedding's gradient part one way, the updated weight the other;
  /// TiedExchange). Their time is in optimizerTime.
  double tiedBytes[cluster::kNumLinkLevels] = {0, 0};
  unsigned devicesInGroup = 1; ///< tp * cp * dp devices that behave alike
  /// Compute time of this list relative to its stage's StageCost (a slot
  /// on a faster device kind than its stage's slowest one has < 1).
  double computeScale = 1;
  /// Offloaded plans: what one device of this list keeps in its node's
  /// tiers (optimizer state, weights, activations, in that order), where
  /// they are placed, the tiers it sees and the CPU optimizer step (part
  /// of optimizerTime).
  std::vector<cost::OffloadItem> offloadItems;
  cost::Placement placement;
  cost::DeviceTiers tiers;
  double cpuStepTime = 0;
};

struct PipelineCosts {
  unsigned pp = 1, chunks = 1, microbatches = 1, mbs = 1;
  /// Chunk 1 of rank r is virtual stage 2 pp - 1 - r (V-shaped schedules).
  bool vShape = false;
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
  /// Matmul precision the costs assume ("fp8"; empty: the model's dtypes).
  std::string matmulPrecision;
  /// Each list's k-th optimizer step waits for every list's k-th: the
  /// programs or the overflow flags over the world before each update of a
  /// loss-scaled fp16 schedule that updates after every micro-batch
  /// (PipeDream, PipeMare; docs/partition.md "Asynchronous schedules"), so
  /// the last stage's update of micro-batch k waits for the first stage's
  /// backward of k.
  bool updatesWaitForWorld = false;

  unsigned numVirtualStages() const { return stages.size(); }
  unsigned stageOfList(unsigned list) const {
    return slotStage.empty() ? list : slotStage[list];
  }
  const StageCost &stage(unsigned list, unsigned chunk) const {
    return stages[virtualStageOf(vShape, pp, stageOfList(list), chunk)];
  }
  Boundary boundary(unsigned list, unsigned chunk) const {
    if (!slotSends.empty())
      return slotSends[list];
    const StageCost &st = stage(list, chunk);
    return {st.sendNextTime, st.sendNextBytes, st.sendPrevTime,
            st.sendPrevBytes, st.nextLevel,      st.prevLevel};
  }
};

/// What buildPipelineCosts fills in.
enum class CostParts {
  All,
  /// The times only: each stage's activation and stash bytes (but those of
  /// offloaded activations, which take transfer time) and each list's
  /// working set and FSDP buffers stay zero. For the search's lower bound,
  /// which reads times, of plans it may never simulate.
  Times,
};

/// Costs of \p plan (finalized) for \p model on \p cluster. \p weightVersions
/// per pipeline rank comes from the schedule (asynchronous schedules stash
/// weights); pass {} for one version everywhere. With \p layerTimes (a cache
/// of \p model's per-layer times under \p cm, on \p cluster's devices) the
/// stage times come from it: the same numbers, computed once per layer
/// kind and configuration (the search costs thousands of plans).
PipelineCosts buildPipelineCosts(const Plan &plan, const cost::ModelDesc &model,
                                 const cluster::Cluster &cluster,
                                 const cost::CostModel &cm,
                                 const std::vector<unsigned> &weightVersions,
                                 const cost::MemoryConfig &memoryBase = {},
                                 cost::LayerTimesCache *layerTimes = nullptr,
                                 CostParts parts = CostParts::All);

/// Synthetic costs: every virtual stage of a pp x chunks pipeline takes \p f,
/// \p bi and \p bw seconds for F, B and W of a micro-batch, holds one byte
/// of activations, and sends to its neighbours over the network in \p send
/// seconds; no optimizer, no DP sync. The uniform model the analytic bubble
/// formulas describe (tests and the bubble benchmark).
PipelineCosts uniformPipelineCosts(unsigned pp, unsigned chunks,
                                   unsigned microbatches, double f, double bi,
                                   double bw, double send = 0,
                                   bool vShape = false);

} // namespace distopt::schedule

#endif // DISTOPT_LIB_SCHEDULE_PLAN_H
