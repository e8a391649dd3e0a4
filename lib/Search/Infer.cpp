//===- Infer.cpp - Plan search for inference --------------------*- C++ -*-===//
//
// Part of DistOpt. Forward-only plans (EdgePipe-style): the global batch is
// split into micro-batches that stream through pp stages; each stage group
// is tp devices, replicated dp times. Exact over the same layout space as
// training: every (dp, tp, pp, mbs) is partitioned by the dynamic program
// (slowest stage incl. its boundary transfer) and evaluated in closed form:
//
//   stage time  t_j = F_j(mbs) + send_j
//   latency     = sum_j t_j + (m - 1) max_j t_j   (one global batch)
//   throughput  = dp * mbs / max_j t_j            (a stream of batches)
//
// Memory per device: weights (no gradients or optimizer state) plus two
// micro-batches' largest activation (one computing, one arriving).
//
//===----------------------------------------------------------------------===//

#include "lib/Search/SearchImpl.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <chrono>
#include <ctime>
#include <limits>
#include <numeric>

using namespace llvm;
using namespace distopt;
using namespace distopt::schedule;

namespace distopt::search::detail {

namespace {
/// The per-stage times, memory limits and links of one inference layout
/// (dp, tp, pp, mbs), for partitioning and for the closed-form estimate.
struct InferLayout {
  InferLayout(Tables &t, const cluster::Cluster &c, const Plan &p,
              const SearchOptions &o, unsigned n)
      : t(t), c(c), p(p), n(n), mem(t.memory(p.tp, cost::Recompute::None)),
        elem(o.memory.mixedPrecision ? 2 : 4), tm(p.pp), limit(p.pp),
        link(p.pp) {
    for (unsigned r = 0; r < p.pp; ++r) {
      double worst = -1;
      limit[r] = std::numeric_limits<double>::infinity();
      for (unsigned d = 0; d < p.dp; ++d) {
        unsigned ty = c.groupOf(p.globalRank(r, d, 0)).deviceIndex;
        const Tables::Times &tt =
            t.times(ty, p.tp, p.mbs, cost::Recompute::None);
        if (tt.fwd[n] > worst) {
          worst = tt.fwd[n];
          tm[r] = &tt;
        }
        limit[r] = std::min(limit[r], o.memoryLimit > 0
                                          ? o.memoryLimit
                                          : c.devices[ty].memoryBytes);
      }
      unsigned a = p.globalRank(r, 0, 0);
      link[r] = c.link(
          c.levelBetween(a, p.globalRank((r + 1) % p.pp, 0, 0)), a);
    }
  }

  /// Weights plus two micro-batches' largest activation of layers [b, e).
  schedule::PeakMemory memoryOf(unsigned b, unsigned e) const {
    double act = 0;
    for (unsigned l = b; l < e; ++l)
      act = std::max(act, mem.act[l + 1] - mem.act[l]);
    schedule::PeakMemory m;
    m.fixed.weights = mem.paramsOf(cost::LayerRange{b, e}).dense * elem;
    m.activations = m.dynamicBytes = 2 * p.mbs * act;
    return m;
  }
  double bytesOf(unsigned b, unsigned e) const {
    return memoryOf(b, e).total();
  }
  /// Forward of layers [b, e) on stage j and its boundary message.
  double stageTime(unsigned j, unsigned b, unsigned e) const {
    double v = tm[j]->fwd[e] - tm[j]->fwd[b];
    if (e < n)
      v += t.message(e - 1, p.mbs, p.tp, p.scatterGather, link[j],
                     tensorGroup(p, c, j + 1));
    return v;
  }

  /// The estimate of \p plan (this layout, cuts set): latency of one global
  /// batch, stream throughput, per-stage memory and the bubble.
  Candidate candidate(Plan plan, InferObjective objective) const {
    unsigned m = plan.numMicrobatches;
    Candidate cand;
    double sum = 0, peak = 0;
    cand.sim.result.peakMemoryBytes.assign(plan.pp, 0);
    cand.sim.result.peakMemoryParts.assign(plan.pp, {});
    for (unsigned j = 0; j < plan.pp; ++j) {
      auto [b, e] = plan.stageLayers(j, n);
      double tj = stageTime(j, b, e);
      sum += tj;
      peak = std::max(peak, tj);
      cand.sim.result.peakMemoryParts[j] = memoryOf(b, e);
      cand.sim.result.peakMemoryBytes[j] =
          cand.sim.result.peakMemoryParts[j].total();
    }
    cand.latency = sum + (m - 1) * peak;
    cand.streamThroughput = plan.dp * plan.mbs / peak;
    cand.lowerBound = objective == InferObjective::Latency
                          ? cand.latency
                          : 1 / cand.streamThroughput;
    cand.sim.result.iterationTime = cand.latency;
    cand.sim.result.samplesPerSecond = objective == InferObjective::Latency
                                           ? plan.globalBatch / cand.latency
                                           : cand.streamThroughput;
    cand.sim.result.bubbleFraction =
        plan.pp > 1 ? 1 - sum / (plan.pp * peak) : 0;
    cand.breakdown.compute = peak;
    cand.breakdown.bubble = cand.sim.result.bubbleFraction * peak;
    plan.mode = Mode::Infer;
    plan.objective = objective;
    cand.sim.plan = std::move(plan);
    return cand;
  }

  Tables &t;
  const cluster::Cluster &c;
  const Plan &p;
  unsigned n;
  const Tables::Memory &mem;
  double elem;
  std::vector<const Tables::Times *> tm;
  std::vector<double> limit;
  std::vector<cluster::LinkSpec> link;
};
} // namespace

Expected<Candidate> evaluateInference(const cost::ModelDesc &model,
                                      const cluster::Cluster &c,
                                      const cost::CostModel &cm,
                                      const Plan &plan,
                                      const SearchOptions &o) {
  const unsigned n = model.layers.size();
  // A plan on fewer devices than the cluster has leaves the others idle
  // (as a training plan does); the first ones run it.
  if (plan.numDevices() > c.numDevices())
    return createStringError(
        inconvertibleErrorCode(),
        formatv("inference plan '{0}' runs on {1} devices but cluster '{2}' "
                "has only {3}",
                plan.str(), plan.numDevices(), c.name, c.numDevices())
            .str());
  if (plan.chunks != 1 || plan.replicated() ||
      plan.numVirtualStages() > std::max(1u, n))
    return createStringError(
        inconvertibleErrorCode(),
        formatv("inference plan '{0}' must have one chunk per stage, no "
                "per-stage replicas and at most {1} stages",
                plan.str(), n)
            .str());
  // What finalizePlan checks of a training plan: whole heads per
  // tensor-parallel rank, stage boundaries inside the model.
  if (Error e = checkTensorParallel(plan, model))
    return std::move(e);
  if (Error e = checkCuts(plan, n))
    return std::move(e);
  Tables t(model, c, cm, o.memory);
  InferLayout layout(t, c, plan, o, n);
  Candidate cand = layout.candidate(plan, o.objective);
  cand.sim.costs = buildPipelineCosts(cand.sim.plan, model, c, cm, {},
                                      o.memory);
  return cand;
}

Expected<SearchResult> searchInference(const cost::ModelDesc &model,
                                       const cluster::Cluster &c,
                                       const cost::CostModel &cm,
                                       const SearchOptions &o) {
  auto t0 = std::chrono::steady_clock::now();
  std::clock_t c0 = std::clock();
  const Constraints &k = o.constraints;
  // dp x tp x pp only: a constraint that rules out cp = 1 or ep = 1 would
  // otherwise be dropped without a word.
  for (auto [key, range] :
       {std::pair<const char *, const IntRange *>{"cp", &k.cp}, {"ep", &k.ep}})
    if (!range->allows(1))
      return createStringError(
          inconvertibleErrorCode(),
          Twine("the inference search weighs data, tensor and pipeline "
                "parallelism (dp x tp x pp) only, but the constraints rule "
                "out ") +
              key + " = 1; give the plan itself (--dist-plan=" + key +
              "=2,...) or train (the training search weighs " + key + ")");
  const unsigned n = model.layers.size(), N = c.numDevices();
  Tables t(model, c, cm, o.memory);
  unsigned perNode = 0;
  for (const cluster::NodeGroup &g : c.groups)
    perNode = std::gcd(perNode, g.devicesPerNode);
  SearchStats stats;
  std::vector<Candidate> all;
  double minNeeded = std::numeric_limits<double>::infinity();
  bool anyLayout = false;
  // The degrees skipped for not fitting the model, by cause, and those
  // the nodes take that fit it (tpMisfitNote).
  std::vector<unsigned> tpDivides, tpNoSplit, tpFits;
  for (unsigned tp = 1; tp <= perNode; ++tp) {
    if (perNode % tp || N % tp)
      continue;
    TpMisfit misfit = tensorParallelMisfit(tp, model);
    if (misfit == TpMisfit::None)
      tpFits.push_back(tp);
    if (!k.tp.allows(tp))
      continue;
    // Only plans the partitioner can realize: whole heads and equal
    // channel shares per rank, and some op split.
    if (misfit != TpMisfit::None) {
      (misfit == TpMisfit::NoSplit ? tpNoSplit : tpDivides).push_back(tp);
      continue;
    }
    for (unsigned pp = 1; pp <= std::min(n, N / tp); ++pp) {
      if ((N / tp) % pp || !k.pp.allows(pp))
        continue;
      unsigned dp = N / (tp * pp);
      if (!k.dp.allows(dp) || o.globalBatch % dp)
        continue;
      unsigned perReplica = o.globalBatch / dp;
      for (unsigned mbs = 1; mbs <= perReplica; ++mbs) {
        if (perReplica % mbs || !k.mbs.allows(mbs))
          continue;
        anyLayout = true;
        ++stats.candidates;
        unsigned m = perReplica / mbs;
        Plan p = o.planDefaults;
        p.dp = dp;
        p.tp = tp;
        p.pp = pp;
        p.mbs = mbs;
        p.setSchedule(ScheduleKind::GPipe);
        p.globalBatch = o.globalBatch;
        p.numMicrobatches = m;
        InferLayout layout(t, c, p, o, n);
        auto cost = [&](unsigned j, unsigned b, unsigned e) {
          if (layout.bytesOf(b, e) > layout.limit[j])
            return std::numeric_limits<double>::infinity();
          return layout.stageTime(j, b, e);
        };
        auto lower = [&](unsigned j, unsigned b, unsigned e) {
          return layout.tm[j]->fwd[e] - layout.tm[j]->fwd[b];
        };
        ++stats.partitions;
        double slowest = 0;
        p.cuts = pp > 1 ? partitionLayers(n, pp, cost, lower, &slowest)
                        : std::vector<unsigned>{};
        if (pp == 1)
          slowest = cost(0, 0, n);
        if (slowest == std::numeric_limits<double>::infinity()) {
          ++stats.memoryPruned;
          // Smallest memory this layout would need with an even split.
          double need = 0;
          for (unsigned j = 0; j < pp; ++j) {
            auto [b, e] = p.stageLayers(j, n);
            if (pp > 1 && p.cuts.empty()) {
              b = j * n / pp;
              e = (j + 1) * n / pp;
            }
            need = std::max(need, layout.bytesOf(b, e));
          }
          minNeeded = std::min(minNeeded, need);
          continue;
        }
        Candidate cand = layout.candidate(p, o.objective);
        all.push_back(std::move(cand));
      }
    }
  }
  if (all.empty()) {
    std::string headsNote =
        tpDivides.empty() ? "" : " and " + tpDivisorNote(model);
    std::string splitNote =
        tpNoSplit.empty() ? "" : " and split some op of the model";
    std::string misfitNote = tpMisfitNote(model, tpDivides, tpNoSplit, tpFits);
    if (!anyLayout)
      return createStringError(
          inconvertibleErrorCode(),
          "no inference plan satisfies the constraints on cluster '" + c.name +
              "' (" + Twine(N) +
              " devices): dp*tp*pp must equal the device count, tp must "
              "divide the devices per node" +
              headsNote + splitNote + ", pp must not exceed the " + Twine(n) +
              " layers and dp must divide the batch " + Twine(o.globalBatch) +
              (misfitNote.empty() ? "" : "; " + misfitNote) +
              "; relax --dist-search or the batch");
    double limit = o.memoryLimit;
    for (const cluster::DeviceSpec &d : c.devices)
      limit = std::max(limit, o.memoryLimit > 0 ? o.memoryLimit
                                                : d.memoryBytes);
    return createStringError(
        inconvertibleErrorCode(),
        formatv("no inference plan fits in memory: the model needs at least "
                "{0} per device on {1} devices, but a device has {2}; use "
                "devices with at least {0} (--dist-memory-limit) or about "
                "{3} devices",
                humanBytes(minNeeded), N, humanBytes(limit),
                std::max<unsigned>(N + 1, std::ceil(N * minNeeded / limit)))
            .str());
  }
  // Rank by the objective; plans within 1e-9 of each other on it (equal
  // slowest stages) are ranked by the other one: the lower latency among
  // equal streams, the higher stream among equal latencies.
  auto secondary = [&](const Candidate &x) {
    return o.objective == InferObjective::Latency ? 1 / x.streamThroughput
                                                  : x.latency;
  };
  std::stable_sort(all.begin(), all.end(),
                   [&](const Candidate &a, const Candidate &b) {
                     double tie = 1e-9 * std::max(a.lowerBound, b.lowerBound);
                     if (std::fabs(a.lowerBound - b.lowerBound) > tie)
                       return a.lowerBound < b.lowerBound;
                     return secondary(a) < secondary(b);
                   });
  SearchResult res;
  res.mode = Mode::Infer;
  res.objective = o.objective;
  for (unsigned i = 0; i < all.size() && i <= o.alternatives; ++i) {
    Candidate &cd = all[i];
    cd.sim.costs = buildPipelineCosts(cd.sim.plan, model, c, cm, {}, o.memory);
    if (i == 0)
      res.best = std::move(cd);
    else
      res.alternatives.push_back(std::move(cd));
  }
  stats.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  stats.cpuSeconds = double(std::clock() - c0) / CLOCKS_PER_SEC;
  res.stats = stats;
  return res;
}

} // namespace distopt::search::detail
