//===- Search.h - Automatic plan search -------------------------*- C++ -*-===//
//
// Part of DistOpt. Given a model (cost::ModelDesc), a cluster and a goal,
// finds the plan (data, tensor and pipeline degrees, micro-batch size,
// schedule, chunks, recomputation, ZeRO stage and stage boundaries) with the
// highest simulated throughput. The main path is exact with respect to the
// simulator, up to the documented candidate space:
//
//  1. enumerate every (dp, tp, pp, mbs, schedule, chunks, recompute, zero)
//     that fits the topology (tp divides the devices of a node) and the
//     constraints;
//  2. partition the layers of each candidate by dynamic programming over
//     layer ranges (minimise the slowest stage including its boundary
//     traffic; slower device kinds get fewer layers; memory-aware when the
//     time-optimal partition does not fit);
//  3. prune by a memory estimate and compute a proven lower bound on the
//     simulated iteration time;
//  4. simulate candidates in order of their lower bound and stop when the
//     next bound cannot beat the incumbents (branch and bound).
//
// On small clusters (tp = 1, chunks = 1) it also weighs PipeDream-style
// layouts whose stages have different replica counts: a dynamic program
// over (layer prefix, devices used) picks each stage's layers and replicas
// (lib/Search/Replicated.cpp).
//
// See docs/search.md.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_LIB_SEARCH_SEARCH_H
#define DISTOPT_LIB_SEARCH_SEARCH_H

#include "lib/Cluster/Cluster.h"
#include "lib/Cost/CostModel.h"
#include "lib/Cost/ModelDesc.h"
#include "lib/Schedule/Plan.h"
#include "lib/Sim/Simulator.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <climits>
#include <functional>
#include <string>
#include <vector>

namespace distopt::search {

using schedule::InferObjective;
using schedule::Mode;

/// Allowed values of one integer plan field.
struct IntRange {
  unsigned min = 1, max = UINT_MAX;
  /// Non-empty: only these values (within [min, max]).
  std::vector<unsigned> only;
  bool allows(unsigned v) const;
  bool empty() const;
};

/// Layers [first, last] (both inclusive) and with them the model's input
/// when first is 0 must run on devices of one kind (`pin=0-3@KIND`): split
/// training between an edge device and the cloud, where the raw input and
/// the first layers stay on the edge for privacy.
struct Pin {
  unsigned first = 0, last = 0;
  /// A device kind of the cluster (DeviceSpec::name).
  std::string kind;
};

/// The space the user lets the search explore (`--dist-search=...`).
struct Constraints {
  IntRange dp, tp, pp, mbs, chunks;
  /// Context- and expert-parallel degrees (ep: MoE models only).
  IntRange cp, ep;
  /// Sequence parallelism: 0, 1 or both (only with tp > 1).
  IntRange sp{0, 1, {}};
  IntRange zero{0, 3, {}};
  /// Empty: every synchronous schedule (asynchronous ones with allowAsync).
  std::vector<schedule::ScheduleKind> schedules;
  /// Empty: none, selective and full.
  std::vector<cost::Recompute> recompute;
  /// Empty: no offload, and where nothing fits without it, every offload
  /// set the cluster's storage tiers allow (`offload=opt|opt+params`).
  std::vector<cost::Offload> offload;
  /// Only layouts whose stages all have the same data-parallel degree (no
  /// PipeDream-style per-stage replicas; `replicas=uniform`).
  bool uniformReplicas = false;
  /// Context parallelism (cp > 1) only with tp = 1 (`cp-alone=1`).
  bool cpAlone = false;
  /// Context parallelism (cp > 1) only without sequence parallelism
  /// (`cp-sp=0`; dist-context-parallel's programs run cp with and without
  /// it).
  bool cpNoSp = false;
  /// Expert parallelism (ep > 1) only with tp = 1 and cp = 1
  /// (`ep-alone=1`).
  bool epAlone = false;
  /// Expert parallelism (ep > 1) only in the plans dist-expert-parallel's
  /// programs run (`ep-runs=1`, dist-compile's search asks for it): with
  /// dp, tp, cp and pp (sequence parallelism and ZeRO included), not
  /// under an asynchronous schedule.
  bool epRuns = false;
  /// Layer ranges that must stay on one device kind (training only). A
  /// stage holding a pinned layer runs on that kind's devices alone.
  std::vector<Pin> pins;
};

/// Parses "tp<=8,pp>=2,mbs=1|2|4,schedule=1f1b|interleaved,recompute=any,
/// zero=0|1,chunks<=4,cp<=4,ep=8,sp=1,replicas=uniform,offload=none|opt,
/// pin=0-3@KIND" (also
/// "dp=4", "tp<4", "tp>1"). An empty string allows everything. \p defaults
/// holds limits in the same form for every key \p spec does not name ("zero<=2"
/// with spec "zero=3" allows ZeRO-3). Errors name the item and say what is
/// accepted; bounds that leave no value are reported as contradictory.
llvm::Expected<Constraints> parseConstraints(llvm::StringRef spec,
                                             llvm::StringRef defaults = {});

struct SearchOptions {
  unsigned globalBatch = 0;
  Mode mode = Mode::Train;
  InferObjective objective = InferObjective::Throughput;
  /// Per-device memory limit in bytes (0: each device's capacity).
  double memoryLimit = 0;
  Constraints constraints;
  /// Also consider PipeDream and PipeDream-2BW (asynchronous weight updates).
  bool allowAsync = false;
  /// How many runner-up plans to report.
  unsigned alternatives = 3;
  /// Upper limit on simulations; when reached before the winner is proven
  /// the result says the search was bounded (with its optimality gap).
  unsigned maxSimulations = 128;
  /// Simulate with the search's caches: one generated and verified copy of
  /// each schedule for the plans that share it (detail::ScheduleCache) and
  /// the per-layer times its bounds computed (cost::LayerTimesCache). Off
  /// only to check that they change nothing.
  bool simulationCaches = true;
  /// Flags copied into every candidate (overlap, scatter/gather). On a
  /// cluster with several device kinds the search sets unevenBatch (faster
  /// replicas take more micro-batches; never slower than an even split).
  schedule::Plan planDefaults;
  cost::MemoryConfig memory;
  /// Called now and then with the fraction done and candidates so far.
  std::function<void(double, unsigned long)> progress;
  /// Devices the plan uses: the cluster's first N (whole nodes first; 0:
  /// all). The others stay idle and are reported.
  unsigned devices = 0;
  /// When the best plan is less than half as efficient as one device, also
  /// search 1, 2, 4, ... devices and say how many the model can use
  /// (SearchResult::suggestedDevices).
  bool adviseDevices = true;
  /// The model's input per sample (--dist-input): every training plan's
  /// iteration waits on its input pipeline (sim::applyInputStall).
  std::optional<sim::InputSpec> input;
  /// Each mixture-of-experts block's capacity slots per expert (top-k x
  /// sequence / experts), their gcd over the blocks; 0 without routed
  /// experts, or when the caller does not know them (the analytic models).
  /// The graph's, planning::expertDims (slots), which the planning passes
  /// set. Only the cp and tp that split them as the programs do are
  /// weighed (expertSlotsSplit).
  int64_t expertSlots = 0;
  /// The routed experts' hidden width (the features dist-expert-parallel
  /// splits over the tensor ranks), its gcd over the blocks; 0 when none
  /// or unknown. planning::expertDims (features). At ep > 1 only a tp that
  /// divides it is weighed (expertFeaturesSplit).
  int64_t expertFeatures = 0;
};

/// Whether a plan of these degrees splits every expert's \p slots capacity
/// slots evenly, as the programs need: dist-context-parallel runs each
/// context rank's C/cp of them, and at ep > 1 dist-expert-parallel has each
/// tensor rank exchange its part of those, so cp, and at ep > 1 cp x tp,
/// must divide them. True when \p slots is 0 (unknown or none).
bool expertSlotsSplit(int64_t slots, unsigned tp, unsigned cp, unsigned ep);

/// Whether tensor parallelism of degree \p tp splits the experts' \p
/// features as dist-expert-parallel needs at ep > 1 (it refuses a width tp
/// does not divide; at ep = 1 it keeps such experts whole). True when \p
/// features is 0 (unknown or none).
bool expertFeaturesSplit(int64_t features, unsigned tp, unsigned ep);

/// Where the time of a plan goes, per iteration, on its slowest rank.
struct Breakdown {
  double compute = 0;   ///< busy compute time (incl. TP collectives)
  double p2p = 0;       ///< stage-boundary transfers
  double dpSync = 0;    ///< data-parallel gradient synchronisation
  double bubble = 0;    ///< idle time (mean over ranks)
  double dataStall = 0; ///< waiting for the input pipeline (--dist-input)
  double peakMemory = 0, memoryCapacity = 0; ///< worst rank
};

/// One evaluated plan.
struct Candidate {
  sim::PlanSimulation sim;
  /// Lower bound the search ordered it by.
  double lowerBound = 0;
  Breakdown breakdown;
  /// Inference: seconds for one global batch and samples/s for a stream.
  double latency = 0, streamThroughput = 0;
  /// Per pipeline rank, micro-batches of each data-parallel replica (uneven
  /// when replicas of different device kinds split the batch by speed).
  std::vector<std::vector<unsigned>> replicaMicrobatches;
};

struct SearchStats {
  unsigned long candidates = 0;   ///< plans weighed (enumerated)
  unsigned long dominated = 0;    ///< skipped: a cheaper variant fits
  unsigned long memoryPruned = 0; ///< no partition fits memory
  unsigned long boundPruned = 0;  ///< lower bound >= incumbents
  unsigned long partitions = 0;   ///< DP partitions computed
  unsigned long replicated = 0;   ///< per-stage-replica layouts weighed
  unsigned long pinPruned = 0;    ///< no partition keeps the pins
  unsigned simulated = 0;
  /// The winner is proven the simulator's best over the space (false when
  /// maxSimulations stopped the search before that; see gap).
  bool exact = true;
  /// Proven optimality gap: (best time - smallest lower bound left
  /// unexplored) / best time; <= 0 when exact.
  double gap = 0;
  double seconds = 0;    ///< wall clock
  double cpuSeconds = 0; ///< processor time of the (single) search thread
};

/// What a plan puts on the devices of a pinned kind (`pin=...@KIND`): the
/// edge side of an edge-cloud split.
struct PinnedSide {
  std::string kind;
  /// The pinned layer ranges, [first, last] inclusive, as given.
  std::vector<std::pair<unsigned, unsigned>> pinned;
  /// The layers the plan runs on the kind's devices, as [first, last]
  /// ranges (a pipeline's prefix up to its split point, or more).
  std::vector<std::pair<unsigned, unsigned>> layers;
  /// Bytes per iteration crossing between the kind's devices and the
  /// others: stage-boundary activations forward, their gradients back.
  double linkBytes = 0;
  /// The simulated peak of the kind's busiest device and its capacity.
  double peakMemory = 0, memoryCapacity = 0;
};

/// The pinned sides of a simulated training plan, one per kind pinned in
/// \p pins (in the order the pins name them).
std::vector<PinnedSide> pinnedSides(const Candidate &c,
                                    llvm::ArrayRef<Pin> pins,
                                    const cost::ModelDesc &model,
                                    const cluster::Cluster &cluster);

struct SearchResult {
  Candidate best;
  std::vector<Candidate> alternatives;
  SearchStats stats;
  Mode mode = Mode::Train;
  InferObjective objective = InferObjective::Throughput;
  /// Devices the plans use, of the cluster's.
  unsigned devicesUsed = 0, devicesTotal = 0;
  /// Set when the model is too small for the devices (parallel efficiency
  /// below 50%): the best objective time (seconds) per device count tried,
  /// the efficiency against one device, and the smallest count within 10%
  /// of the fastest.
  std::vector<std::pair<unsigned, double>> scaling;
  double efficiency = 0;
  unsigned suggestedDevices = 0;
  /// Set when the plans were ranked under preemptions (--dist-resilience):
  /// what they were ranked by, and each plan's expected samples/s (best
  /// first, then the alternatives).
  std::string rankedByOverride;
  std::vector<double> expectedSamplesPerSecond;
  /// The winner's pinned sides (`pin=...`); empty without pins.
  std::vector<PinnedSide> pinned;
};

/// Searches the best plan. Errors (each saying what would fit) when the
/// cluster has no devices, the batch cannot be divided, the constraints
/// admit no plan, or no plan fits memory.
llvm::Expected<SearchResult> searchPlan(const cost::ModelDesc &model,
                                        const cluster::Cluster &cluster,
                                        const cost::CostModel &cm,
                                        const SearchOptions &options);

//===----------------------------------------------------------------------===//
// Building blocks (exposed for tests)
//===----------------------------------------------------------------------===//

/// Contiguous partition of n layers into `stageCost.size()`-independent
/// stages: `cost(j, b, e)` is stage j's cost for layers [b, e) (infinite when
/// it does not fit); `lower(j, b, e)` a cheap lower bound of it that grows
/// as b falls. Minimises the largest stage cost; returns the first layer of
/// stages 1..stages-1, or an empty vector with *best = inf if none fits.
std::vector<unsigned>
partitionLayers(unsigned numLayers, unsigned stages,
                llvm::function_ref<double(unsigned, unsigned, unsigned)> cost,
                llvm::function_ref<double(unsigned, unsigned, unsigned)> lower,
                double *best = nullptr);

/// Proven lower bound on the simulated iteration time of \p costs under
/// \p kind (see docs/search.md for the argument).
double iterationLowerBound(const schedule::PipelineCosts &costs,
                           schedule::ScheduleKind kind, bool overlapGradSync);

/// Breakdown of a simulated plan.
Breakdown breakdownOf(const sim::PlanSimulation &ps);

/// The cluster's first `n` devices: whole nodes of its groups in order,
/// then part of the next node.
cluster::Cluster firstDevices(const cluster::Cluster &c, unsigned n);

/// The time the search minimises for a plan: the iteration time (training),
/// one batch's latency, or seconds per sample of a stream (inference).
double objectiveTime(const Candidate &c, Mode mode, InferObjective objective);

/// "devices N of the cluster's M (K idle)" when the plans use fewer.
void printDevicesUsed(const SearchResult &r, llvm::raw_ostream &os);
/// The too-small-for-the-cluster note (SearchResult::suggestedDevices).
void printDeviceAdvice(const SearchResult &r, llvm::raw_ostream &os);

/// Evaluates one finalized plan the way the search evaluates its
/// candidates: a simulation of its schedule (\p given when not null, the
/// one its schedule kind generates otherwise) for training, the closed form
/// for inference (plan.mode); with the breakdown, the replicas' micro-batch
/// shares and the proven lower bound. What `dist-simulate` reports.
llvm::Expected<Candidate> evaluatePlan(const cost::ModelDesc &model,
                                       const cluster::Cluster &cluster,
                                       const cost::CostModel &cm,
                                       const schedule::Plan &plan,
                                       const SearchOptions &options,
                                       const schedule::Schedule *given =
                                           nullptr);

/// Short one-line label of a plan ("replicas=8/4/4 tp=1 pp=3 mbs=4 gpipe",
/// "dp=8 tp=1 pp=2 mbs=32 2bw"); inference plans show only the degrees.
std::string planLabel(const schedule::Plan &p, bool training = true);
/// The --dist-explain table and the reason the winner wins.
void printExplain(const SearchResult &r, llvm::raw_ostream &os);
/// What the search ranked plans by ("iteration time", ...).
std::string rankedBy(const SearchResult &r);
/// Why the best plan wins: how it compares with the first runner-up and
/// the largest differences in where the time goes.
std::string whyBest(const SearchResult &r);
/// "layers 0-3 run there (pinned 0-0); 4.0 MiB cross its link per
/// iteration; peak memory 88.7 MiB of 7.5 GiB".
std::string describePinnedSide(const PinnedSide &s);
/// One line per pinned side: its layers, the bytes crossing its link per
/// iteration and its peak memory (printSearchSummary prints them).
void printPinnedSides(llvm::ArrayRef<PinnedSide> sides, llvm::raw_ostream &os);
/// One-paragraph summary of the chosen plan and the search.
void printSearchSummary(const SearchResult &r, const cluster::Cluster &c,
                        llvm::raw_ostream &os);

} // namespace distopt::search

#endif // DISTOPT_LIB_SEARCH_SEARCH_H
