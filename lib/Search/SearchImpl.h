//===- SearchImpl.h - Shared pieces of the plan search ----------*- C++ -*-===//
//
// Part of DistOpt. Per-layer time and memory tables (prefix sums, cached by
// device kind, TP degree, micro-batch size and recomputation) used by the
// training and the inference search. Internal to lib/Search.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_LIB_SEARCH_SEARCHIMPL_H
#define DISTOPT_LIB_SEARCH_SEARCHIMPL_H

#include "lib/Search/Search.h"

#include <algorithm>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace distopt::search::detail {

std::string humanBytes(double bytes);

/// partitionLayers with the cost callbacks inlined (the search's hot loop).
/// best[j][i]: smallest achievable largest stage cost when stages 0..j hold
/// layers [0, i); every stage keeps at least one layer. Scanning the last
/// stage's first layer k downwards, the stage only grows, so the scan stops
/// once its lower bound reaches the best value found for (j, i).
template <typename Cost, typename Lower>
std::vector<unsigned> partitionLayersWith(unsigned n, unsigned stages,
                                          Cost &&cost, Lower &&lower,
                                          double *bestOut = nullptr) {
  const double inf = std::numeric_limits<double>::infinity();
  if (stages == 0 || stages > n) {
    if (bestOut)
      *bestOut = inf;
    return {};
  }
  const size_t w = n + 1;
  // Reused between calls: the search runs thousands of partitions.
  static thread_local std::vector<double> best;
  static thread_local std::vector<unsigned> from;
  best.assign(static_cast<size_t>(stages) * w, inf);
  from.assign(static_cast<size_t>(stages) * w, 0);
  for (unsigned i = 1; i + stages - 1 <= n; ++i)
    best[i] = cost(0, 0, i);
  for (unsigned j = 1; j < stages; ++j) {
    const double *prev = &best[(j - 1) * w];
    // Stages j+1.. need at least one layer each.
    unsigned iMax = n - (stages - 1 - j);
    for (unsigned i = j + 1; i <= iMax; ++i) {
      double &b = best[j * w + i];
      for (unsigned k = i - 1; k >= j; --k) {
        if (lower(j, k, i) >= b)
          break;
        if (prev[k] < b) {
          double v = std::max(prev[k], cost(j, k, i));
          if (v < b) {
            b = v;
            from[j * w + i] = k;
          }
        }
        if (k == j)
          break;
      }
    }
  }
  double total = best[(stages - 1) * w + n];
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
    /// Sparse table over `work`: maxWork[k][i] = max of work[i, i + 2^k).
    std::vector<std::vector<double>> maxWork;
    /// Largest working set per sample over layers [b, e), O(1).
    double workMax(unsigned b, unsigned e) const;
  };

  Tables(const cost::ModelDesc &model, const cluster::Cluster &c,
         const cost::CostModel &cm, const cost::MemoryConfig &mem,
         double expertImbalance = 1);

  const Times &times(unsigned type, const TableKey &k);
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
  /// Time of the boundary message after \p layer (as buildPipelineCosts
  /// computes it: 1/cp of it per CP rank; 1/tp per TP rank with
  /// scatter/gather or sequence parallelism, all-gathered at the receiver
  /// only without sequence parallelism).
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
  std::map<TableKey, Memory> memCache;
  /// First layer with the same costs (a transformer's blocks are alike):
  /// tables cost each distinct layer once. Memory also depends on the
  /// previous layer's boundary (the full-recomputation checkpoint).
  std::vector<unsigned> timeClass, memClass;
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
