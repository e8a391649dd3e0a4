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

#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace distopt::search::detail {

std::string humanBytes(double bytes);

/// Held activations of pipeline rank \p r, in units of one chunk's
/// activations for one micro-batch.
double inFlight(schedule::ScheduleKind kind, unsigned r, unsigned pp,
                unsigned chunks, unsigned m);

class Tables {
public:
  /// Prefix sums over layers: work = F + B + W, fwd = F (one micro-batch).
  struct Times {
    std::vector<double> work, fwd;
  };
  /// Per device: params prefix, saved activations per sample prefix, and
  /// the backward working set per sample of each layer.
  struct Memory {
    std::vector<double> params, act, stash, work;
    /// Sparse table over `work`: maxWork[k][i] = max of work[i, i + 2^k).
    std::vector<std::vector<double>> maxWork;
    /// Largest working set per sample over layers [b, e), O(1).
    double workMax(unsigned b, unsigned e) const;
  };

  Tables(const cost::ModelDesc &model, const cluster::Cluster &c,
         const cost::CostModel &cm, const cost::MemoryConfig &mem);

  const Times &times(unsigned type, unsigned tp, unsigned mbs,
                     cost::Recompute rec);
  const Memory &memory(unsigned tp, cost::Recompute rec);
  /// A TP group of \p tp devices of kind \p type inside one node.
  cost::GroupShape tpShape(unsigned type, unsigned tp) const;
  /// Time of the boundary message after \p layer (as buildPipelineCosts
  /// computes it).
  double message(unsigned layer, unsigned mbs, unsigned tp, bool sg,
                 const cluster::LinkSpec &link,
                 const cost::GroupShape &receiver) const;
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
  unsigned n;
  std::map<std::tuple<unsigned, unsigned, unsigned, unsigned>, Times>
      timeCache;
  std::map<std::pair<unsigned, unsigned>, Memory> memCache;
};

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

/// Whether the search weighs per-stage replica layouts on \p c.
bool replicatedLayoutsApply(const cluster::Cluster &c, unsigned numLayers,
                            const Constraints &k);

/// A plan with per-stage replicas and its proven lower bound.
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
                          const SearchOptions &o, Tables &t, SearchStats &stats,
                          std::vector<ReplicatedCandidate> &out);

/// The search on all of `c`'s devices (searchPlan adds --dist-devices and
/// the device-count advice around it, Devices.cpp).
llvm::Expected<SearchResult> searchAll(const cost::ModelDesc &model,
                                       const cluster::Cluster &c,
                                       const cost::CostModel &cm,
                                       const SearchOptions &o);

/// The inference search (forward only; latency or stream throughput).
llvm::Expected<SearchResult> searchInference(const cost::ModelDesc &model,
                                             const cluster::Cluster &c,
                                             const cost::CostModel &cm,
                                             const SearchOptions &o);

} // namespace distopt::search::detail

#endif // DISTOPT_LIB_SEARCH_SEARCHIMPL_H
