//===- SearchImpl.h - Shared pieces of the plan search ----------*- C++ -*-===//
//
// Part of DistOpt. Per-layer time and memory tables (prefix sums, cached by
// device kind, TP degree, micro-batch size and recomputation) used by the
// training and the inference search. Internal to lib/Search.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_LIB_SEARCH_SEARCHIMPL_H
#define DISTOPT_LIB_SEARCH_SEARCHIMPL_H

#include "lib/Cost/LayerTimes.h"
#include "lib/Search/Search.h"

#include <algorithm>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace distopt::search::detail {

std::string humanBytes(double bytes);

/// What a tensor-parallel degree must divide in \p model
/// (schedule::TpMisfit::Heads, Channels), as the search's errors name it:
/// "the model's attention head count H", "the model's convolution channel
/// count gcd C", or both joined by "and".
std::string tpDivisorNote(const cost::ModelDesc &model);

/// The tensor-parallel degrees a search skipped because they do not fit
/// \p model (schedule::tensorParallelMisfit), for its "no plan" error:
/// those that do not divide the heads or channels (\p divides), those that
/// split no op (\p noSplit), each named with its cause, and what to allow
/// instead: \p fit, the degrees the cluster's nodes take that fit the
/// model. Empty when nothing was skipped.
/// "2, 4, 8".
std::string degreeList(llvm::ArrayRef<unsigned> degrees);

std::string tpMisfitNote(const cost::ModelDesc &model,
                         llvm::ArrayRef<unsigned> divides,
                         llvm::ArrayRef<unsigned> noSplit,
                         llvm::ArrayRef<unsigned> fit);

/// The table partitionLayersWith fills, bounded by an upper bound on the
/// answer: \p ub must exceed it by a rounding margin (see
/// partitionLayersWith). States whose value, or whose completion's lower
/// bound, exceeds \p ub stay infinite and are never scanned. Returns the
/// largest stage cost of the best partition, infinite when none is below
/// \p ub; fills \p from with each state's chosen predecessor.
/// \p least holds prefix sums of each layer's least `lower` over all
/// stages.
template <typename Cost, typename Lower, typename Allowed>
double partitionTable(unsigned n, unsigned stages, Cost &&cost, Lower &&lower,
                      Allowed &&allowed, const std::vector<double> &least,
                      double ub, std::vector<double> &best,
                      std::vector<unsigned> &from) {
  const double inf = std::numeric_limits<double>::infinity();
  const size_t w = n + 1;
  best.assign(static_cast<size_t>(stages) * w, inf);
  from.assign(static_cast<size_t>(stages) * w, 0);
  // State (j, i) (stages 0..j hold layers [0, i)) can lead below ub only
  // if its own stages average at most ub and the stages after it can hold
  // layers [i, n) at most ub each. Both ends of that window only grow
  // with j (least is nondecreasing), so each is found by carrying on from
  // where the previous stage's search stopped: O(n) per table, not per
  // stage.
  unsigned lo = 0, fit = 0; // fit: the last i with least[i] <= ub * (j + 1)
  auto window = [&](unsigned j) {
    unsigned cap = n - (stages - 1 - j);
    lo = std::max(lo, j + 1);
    if (ub == inf)
      return std::make_pair(lo, cap);
    while (lo < cap && j + 1 < stages &&
           least[n] - least[lo] > ub * (stages - 1 - j))
      ++lo;
    while (fit < n && least[fit + 1] <= ub * (j + 1))
      ++fit;
    return std::make_pair(lo, std::max(lo, std::min(cap, fit)));
  };
  auto [lo0, hi0] = window(0);
  for (unsigned i = lo0; i <= hi0; ++i) {
    double v = cost(0, 0, i);
    if (v < ub && allowed(0, 0, i))
      best[i] = v;
  }
  // below[k]: the last state of the previous stage at or before k that is
  // finite, or kNone. The scan below skips the infinite ones (most of them,
  // where the previous stages cannot hold k layers below ub): it would
  // only have compared its lower bound with b there, and that bound only
  // grows as k falls, so a break it would take there it takes at the next
  // finite state.
  constexpr unsigned kNone = ~0u;
  static thread_local std::vector<unsigned> below;
  below.resize(w);
  unsigned prevLo = lo0, prevHi = hi0;
  for (unsigned j = 1; j < stages; ++j) {
    const double *prev = &best[(j - 1) * w];
    for (unsigned k = prevLo, last = kNone; k <= prevHi; ++k)
      below[k] = last = prev[k] < inf ? k : last;
    double *row = &best[j * w];
    unsigned *rowFrom = &from[j * w];
    auto [lo, hi] = window(j);
    for (unsigned i = lo; i <= hi; ++i) {
      // The state's best so far in a local: nothing the scan reads can
      // alias it, so the compiler keeps the scan's operands in registers.
      double b = ub;
      unsigned arg = 0;
      bool found = false;
      // Scanning the last stage's first layer k downwards the stage only
      // grows, so the scan stops once its lower bound reaches b. Whether
      // the stage is allowed (memory, pins) is asked only of a stage that
      // would improve the state: the answer is the same as a cost that is
      // infinite where it is not.
      const unsigned top = std::min(i - 1, prevHi);
      for (unsigned k = top >= prevLo ? below[top] : kNone; k != kNone;
           k = k > prevLo ? below[k - 1] : kNone) {
        if (lower(j, k, i) >= b)
          break;
        if (prev[k] < b) {
          double v = std::max(prev[k], cost(j, k, i));
          if (v < b && allowed(j, k, i)) {
            b = v;
            arg = k;
            found = true;
          }
        }
      }
      row[i] = found ? b : inf;
      if (found)
        rowFrom[i] = arg;
    }
    prevLo = lo;
    prevHi = hi;
  }
  return best[(stages - 1) * w + n];
}

/// partitionLayers with the cost callbacks inlined (the search's hot loop).
/// best[j][i]: smallest achievable largest stage cost when stages 0..j hold
/// layers [0, i); every stage keeps at least one layer. `lower` must be
/// additive over layers (a difference of prefix sums of nonnegative
/// terms: it grows as a stage's first layer falls). A stage for which
/// \p allowed(j, b, e) is false (it does not fit memory, it breaks a pin)
/// costs infinity; elsewhere it costs \p cost(j, b, e), which must be
/// finite. The table is first
/// bounded by the cost of an even split of the least work (or, where that
/// split does not fit, guesses from its largest share of work), which
/// keeps only states that can still beat it; where no guess is beaten,
/// the unbounded table decides.
/// Bounding leaves the answer and its cuts, ties included, as the
/// unbounded table gives them: a state on the chosen path has a completion
/// below the bound. \p least, when given, holds prefix sums of each
/// layer's least `lower` over the stages.
template <typename Cost, typename Lower, typename Allowed>
std::vector<unsigned>
partitionLayersWith(unsigned n, unsigned stages, Cost &&cost, Lower &&lower,
                    Allowed &&allowed, double *bestOut = nullptr,
                    const std::vector<double> *least = nullptr) {
  const double inf = std::numeric_limits<double>::infinity();
  if (stages == 0 || stages > n) {
    if (bestOut)
      *bestOut = inf;
    return {};
  }
  const size_t w = n + 1;
  // Reused between calls: the search runs thousands of partitions.
  static thread_local std::vector<double> best, ownLeast;
  static thread_local std::vector<unsigned> from;
  if (!least) {
    ownLeast.assign(w, 0);
    for (unsigned l = 0; l < n; ++l) {
      double m = inf;
      for (unsigned j = 0; j < stages; ++j)
        m = std::min(m, lower(j, l, l + 1));
      ownLeast[l + 1] = ownLeast[l] + m;
    }
    least = &ownLeast;
  }
  const std::vector<double> &sum = *least;
  // The even split of the least work; its largest stage cost bounds the
  // answer from above.
  double even = 0, share = 0;
  for (unsigned j = 0, b = 0; j < stages; ++j) {
    unsigned e = n;
    if (j + 1 < stages) {
      double target = sum[n] * (j + 1) / stages;
      e = b + 1;
      while (e < n - (stages - 1 - j) && sum[e] < target)
        ++e;
    }
    even = std::max(even, allowed(j, b, e) ? cost(j, b, e) : inf);
    share = std::max(share, lower(j, b, e));
    b = e;
  }
  // A margin over rounding: the bounds compare sums of per-layer terms
  // with prefix differences.
  auto above = [inf](double x) {
    return x == inf ? inf : x * (1 + 1e-9) + 1e-300;
  };
  // Where the even split does not fit, the bound is guessed from its
  // largest share of work, growing until some partition comes below it.
  double total = inf;
  if (even < inf) {
    total = partitionTable(n, stages, cost, lower, allowed, sum, above(even),
                           best, from);
  } else {
    for (double bound : {above(1.25 * share), above(2.5 * share), inf}) {
      total = partitionTable(n, stages, cost, lower, allowed, sum, bound, best,
                             from);
      if (total < inf)
        break;
    }
  }
  if (bestOut)
    *bestOut = total;
  if (total == inf)
    return {};
  std::vector<unsigned> cuts(stages - 1);
  unsigned i = n;
  for (unsigned j = stages - 1; j >= 1; --j) {
    i = from[j * w + i];
    cuts[j - 1] = i;
  }
  return cuts;
}

/// The items of many groups, visited in the order a stable sort of all of
/// them (each group's items in turn, groups in the given order) by \p less
/// gives, building a group's items only when its turn comes. The search
/// enumerates millions of candidates of which it looks at a few percent
/// before its bound stops it; it keeps one group per (layout, micro-batch
/// size, recomputation) instead, and expands the groups of one cheap bound
/// at a time.
///
/// Every item must be equivalent under \p primary to its group (neither
/// orders before the other), and \p less must order items by \p primary
/// first. Then the sorted sequence is the groups' runs of equivalent
/// primaries in order; within a run, the items of its groups in group
/// order, stably sorted by \p less: what visiting does.
template <typename T, typename Primary, typename Less, typename Expand>
class RunsInOrder {
public:
  RunsInOrder(std::vector<T> groups, Primary primary, Less less, Expand expand)
      : groups(std::move(groups)), primary(primary), less(less),
        expand(expand) {
    std::stable_sort(this->groups.begin(), this->groups.end(), primary);
  }
  /// The next item, or null when all are visited.
  const T *peek() {
    if (at == run.size())
      fill();
    return at < run.size() ? &run[at] : nullptr;
  }
  /// Moves past the item peek() returned.
  void pop() {
    ++at;
    ++visited;
  }
  /// How many items have been popped.
  unsigned long count() const { return visited; }

private:
  /// The next run of groups with equivalent primaries, expanded and sorted.
  void fill() {
    run.clear();
    at = 0;
    while (run.empty() && next < groups.size()) {
      size_t end = next + 1;
      while (end < groups.size() && !primary(groups[next], groups[end]))
        ++end;
      for (; next < end; ++next)
        expand(groups[next], run);
      std::stable_sort(run.begin(), run.end(), less);
    }
  }

  std::vector<T> groups;
  Primary primary;
  Less less;
  Expand expand;
  std::vector<T> run;
  size_t next = 0, at = 0;
  unsigned long visited = 0;
};
template <typename T, typename Primary, typename Less, typename Expand>
RunsInOrder(std::vector<T>, Primary, Less, Expand)
    -> RunsInOrder<T, Primary, Less, Expand>;

/// Held activations of pipeline rank \p r, in units of one chunk's
/// activations for one micro-batch (between F and B, or until W for the
/// V-shaped schedules, which run their Ws promptly).
double inFlight(schedule::ScheduleKind kind, unsigned r, unsigned pp,
                unsigned chunks, unsigned m);
/// Weight-gradient stashes (B done, W not) rank \p r may hold besides.
double stashesHeld(schedule::ScheduleKind kind, unsigned r, unsigned pp,
                   unsigned m);

/// What the per-layer tables depend on besides the device kind.
struct TableKey {
  unsigned tp = 1, cp = 1, ep = 1, mbs = 1;
  bool sp = false;
  cost::Recompute rec = cost::Recompute::None;
  auto tie() const {
    return std::make_tuple(tp, cp, ep, mbs, sp, static_cast<unsigned>(rec));
  }
  bool operator<(const TableKey &o) const { return tie() < o.tie(); }
};

/// The table key of a plan.
TableKey keyOf(const schedule::Plan &p);

class Tables {
public:
  /// Prefix sums over layers: work = F + B + W, fwd = F (one micro-batch).
  struct Times {
    std::vector<double> work, fwd;
  };
  /// Per device: params prefix (dense and routed experts), saved
  /// activations per sample prefix, and the backward working set per sample
  /// of each layer.
  struct Memory {
    std::vector<double> params, expertParams, act, stash, work;
    /// Parameters a layer reads from an earlier one (tied embeddings): the
    /// prefix sums count them in the user layer.
    struct Tie {
      unsigned owner, user;
      cost::ParamSplit params;
    };
    std::vector<Tie> ties;
    /// Parameters of a device holding the layers of \p ranges, a tie's once
    /// when it holds both layers (cost::paramSplit from the prefix sums).
    cost::ParamSplit paramsOf(llvm::ArrayRef<cost::LayerRange> ranges) const;
    /// paramsOf of the one range [b, e), the same bits, inline: the
    /// memory-aware partition asks it of every stage it would take.
    cost::ParamSplit paramsOf(unsigned b, unsigned e) const {
      cost::ParamSplit n{params[e] - params[b],
                         expertParams[e] - expertParams[b]};
      for (const Tie &t : ties)
        if (t.owner >= b && t.owner < e && t.user >= b && t.user < e) {
          n.dense -= t.params.dense;
          n.expert -= t.params.expert;
        }
      return n;
    }
    /// Sparse table over `work`: maxWork[k][i] = max of work[i, i + 2^k).
    std::vector<std::vector<double>> maxWork;
    /// Largest working set per sample over layers [b, e), O(1), for ranges
    /// that start at a block's first layer.
    double workMax(unsigned b, unsigned e) const;
    /// Under full recomputation `act` counts one checkpoint per block
    /// (cost::activationBytes) and `work` a layer's block from its first
    /// layer on; a range that starts inside a block (at a layer with
    /// blockEnd[l] > l) also keeps its input, firstAct[l], and recomputes
    /// only its part of the block: headWork[l] over layers [l,
    /// blockEnd[l]). Elsewhere blockEnd[l] = l and firstAct[l] = 0.
    std::vector<double> firstAct, headWork;
    std::vector<unsigned> blockEnd;
    /// For a range inside one block (cost::backwardWorkingBytes).
    const cost::ModelDesc *model = nullptr;
    cost::MemoryConfig cfg;
    /// Saved activations per sample of a device holding layers [b, e).
    double actOf(unsigned b, unsigned e) const {
      return e > b ? act[e] - act[b] + firstAct[b] : 0;
    }
    /// Largest backward working set per sample over layers [b, e).
    double workOf(unsigned b, unsigned e) const;
  };

  Tables(const cost::ModelDesc &model, const cluster::Cluster &c,
         const cost::CostModel &cm, const cost::MemoryConfig &mem,
         double expertImbalance = 1);

  const Times &times(unsigned type, const TableKey &k);
  /// times(type, k).work[n], the same bits, without the tables: the cheap
  /// bound of every enumerated configuration needs only the total.
  double totalWork(unsigned type, const TableKey &k);
  const Times &times(unsigned type, unsigned tp, unsigned mbs,
                     cost::Recompute rec);
  /// The memory tables of \p k (its micro-batch does not matter).
  const Memory &memory(const TableKey &k);
  const Memory &memory(unsigned tp, cost::Recompute rec);
  /// A TP group of \p tp devices of kind \p type inside one node.
  cost::GroupShape tpShape(unsigned type, unsigned tp) const;
  /// The groups of a layout under the standard rank order (tp, cp, dp):
  /// TP inside a node, CP groups tp apart, EP groups of consecutive
  /// replicas; each spans nodes once it outgrows one.
  cost::ExecConfig exec(unsigned type, const TableKey &k) const;
  /// Time of the boundary message after \p layer over \p link, the
  /// receiver's TP gather included (cost::boundaryMessage, as
  /// buildPipelineCosts prices it).
  double message(unsigned layer, unsigned mbs, unsigned tp, bool sg,
                 const cluster::LinkSpec &link,
                 const cost::GroupShape &receiver, unsigned cp = 1,
                 bool sp = false) const;
  /// Estimated peak bytes of pipeline rank \p r of \p p (cuts set): static
  /// state, the activations its schedule holds at once, the backward
  /// working set.
  double memoryEstimate(const schedule::Plan &p, unsigned r,
                        unsigned weightVersions);

private:
  const cost::ModelDesc &model;
  const cluster::Cluster &c;
  const cost::CostModel &cm;
  cost::MemoryConfig mem;
  double expertImbalance;
  unsigned n;
  std::map<std::pair<unsigned, TableKey>, Times> timeCache;
  std::map<std::pair<unsigned, TableKey>, double> totalCache;
  std::map<TableKey, Memory> memCache;
  /// The last tables memory() returned and their key: the search asks for
  /// one configuration's many times in a row (each rank's estimate).
  TableKey lastMemoryKey;
  const Memory *lastMemory = nullptr;
  /// First layer with the same memory (LayerTimesCache's classes, which
  /// cost each distinct layer once, split by the previous layer's
  /// boundary: the full-recomputation checkpoint, and by the classes of
  /// the layers of its checkpointed block and its place in it).
  std::vector<unsigned> memClass;

public:
  /// Each distinct layer's times per configuration: the tables' and the
  /// expanded plans' (buildPipelineCosts).
  cost::LayerTimesCache layerTimes;
};

/// Generated schedules, each distinct one built once. The search simulates
/// a hundred plans whose schedules repeat (the same kind, stage count,
/// chunks and micro-batches under other degrees or recomputation), and a
/// zero-bubble or V-shaped generator costs more than the simulation
/// itself. generateSchedule is a function of its arguments alone, so the
/// key is exactly those: the schedule, pp, chunks, micro-batches and every
/// field of schedule::scheduleOptions(plan) (a field added there must be
/// added to the key).
class ScheduleCache {
public:
  /// generateSchedule(p.schedule, p.pp, p.chunks, p.numMicrobatches,
  /// scheduleOptions(p)), built and checked by verifySchedule on the first
  /// call with these arguments (simulatePlan need not check it again:
  /// sim::SimOptions::givenVerified). Errors are not kept: the next call
  /// with the same arguments retries.
  llvm::Expected<const schedule::Schedule *> get(const schedule::Plan &p);
  /// How many distinct schedules were built.
  size_t size() const { return built.size(); }

private:
  using Key = std::tuple<unsigned, unsigned, unsigned, unsigned, bool, unsigned,
                         bool, bool, bool, std::vector<unsigned>>;
  std::map<Key, schedule::Schedule> built;
};

/// Context-parallel degrees the search weighs: powers of two up to this
/// (Megatron and NeMo use 2-16 for 8k-1M token sequences).
constexpr unsigned kMaxContextParallel = 16;

/// Per-stage replica layouts (Replicated.cpp) are weighed on clusters of
/// at most this many devices, when devices * layers is at most
/// kMaxReplicatedWork, with at most kMaxReplicatedStages stages: the
/// dynamic program is O(stages * layers^2 * devices^2) per micro-batch size
/// and recomputation, and these limits keep it within milliseconds.
constexpr unsigned kMaxReplicatedDevices = 32;
constexpr unsigned kMaxReplicatedWork = 512;
constexpr unsigned kMaxReplicatedStages = 8;
/// How many of the layouts the dynamic program finds (over micro-batch
/// sizes, recomputation and stage counts) are costed and simulated, best
/// objective first.
constexpr unsigned kReplicatedLayouts = 8;

/// Whether the search weighs per-stage replica layouts on \p c (their
/// stages have one device per replica: tp = cp = ep = 1, so constraints
/// that rule those out rule them out).
bool replicatedLayoutsApply(const cluster::Cluster &c, unsigned numLayers,
                            const Constraints &k);

/// A plan with per-stage replicas and its proven lower bound.
/// The pins of a search (Constraints::pins) resolved against the model and
/// the cluster: which device kind each layer must run on (Pins.cpp).
class PinCheck {
public:
  /// Errors (what, where, what to write) when a pin names a kind the
  /// cluster lacks, layers beyond the model's, or one layer twice with
  /// different kinds, or when the search plans inference.
  static llvm::Expected<PinCheck> resolve(llvm::ArrayRef<Pin> pins,
                                          const cost::ModelDesc &model,
                                          const cluster::Cluster &c,
                                          schedule::Mode mode);
  bool empty() const { return kinds.empty(); }
  /// Whether a stage running on devices of the kinds \p types (indices
  /// into Cluster::devices) may hold layers [b, e): a pinned layer needs
  /// its kind alone.
  bool allows(llvm::ArrayRef<unsigned> types, unsigned b, unsigned e) const;
  /// Whether every virtual stage of \p p (cuts set) keeps its pins.
  bool allows(const schedule::Plan &p, const cluster::Cluster &c,
              unsigned numLayers) const;
  /// "layers 0-3 on cortex-a72x4 and ..." for messages.
  std::string describe() const { return text; }

private:
  /// Pinned kinds and, per kind, the prefix count of its pinned layers.
  std::vector<unsigned> kinds;
  std::vector<std::vector<unsigned>> count;
  std::string text;
};

/// The device kinds (indices into Cluster::devices) of pipeline stage \p s
/// of \p p: all its replicas' devices.
std::vector<unsigned> stageKinds(const schedule::Plan &p,
                                 const cluster::Cluster &c, unsigned s);

struct ReplicatedCandidate {
  schedule::Plan plan;
  double lowerBound;
};

/// PipeDream's planner: for each micro-batch size, recomputation and stage
/// count, the layers and replicas of every stage by dynamic programming;
/// each layout that fits memory becomes one candidate per allowed
/// gpipe/1f1b/pipedream/pipedream-2bw schedule. Counts into \p stats.
void replicatedCandidates(const cost::ModelDesc &model,
                          const cluster::Cluster &c, const cost::CostModel &cm,
                          const SearchOptions &o, Tables &t,
                          const PinCheck &pins, SearchStats &stats,
                          std::vector<ReplicatedCandidate> &out);

/// The search on all of `c`'s devices (searchPlan adds --dist-devices and
/// the device-count advice around it, Devices.cpp).
llvm::Expected<SearchResult> searchAll(const cost::ModelDesc &model,
                                       const cluster::Cluster &c,
                                       const cost::CostModel &cm,
                                       const SearchOptions &o);

/// Micro-batches of each data-parallel replica of every pipeline stage of
/// \p p (uneven when replicas of different kinds split them by speed).
std::vector<std::vector<unsigned>> replicaShares(Tables &t,
                                                 const schedule::Plan &p,
                                                 const cluster::Cluster &c,
                                                 unsigned numLayers);

/// The closed-form estimate of one inference plan (cuts set), as the
/// inference search evaluates its candidates.
llvm::Expected<Candidate> evaluateInference(const cost::ModelDesc &model,
                                            const cluster::Cluster &c,
                                            const cost::CostModel &cm,
                                            const schedule::Plan &plan,
                                            const SearchOptions &o);

/// The inference search (forward only; latency or stream throughput).
llvm::Expected<SearchResult> searchInference(const cost::ModelDesc &model,
                                             const cluster::Cluster &c,
                                             const cost::CostModel &cm,
                                             const SearchOptions &o);

} // namespace distopt::search::detail

#endif // DISTOPT_LIB_SEARCH_SEARCHIMPL_H
