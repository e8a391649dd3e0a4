//===- Replicated.cpp - PipeDream-style per-stage replica layouts -*- C++ -*-=//
//
// Part of DistOpt. PipeDream's planner (Narayanan et al., SOSP 2019): a
// dynamic program over (layer prefix, devices used) that chooses, stage by
// stage, the layers AND the number of replicas, minimising the slowest
// stage. A stage of layers [b, e) on r devices starting at device d costs,
// per iteration of m micro-batches,
//
//   ceil(m / r) * (F + B + W on its slowest device kind + boundary p2p)
//     + all-reduce of its gradients over those r devices,
//
// with the all-reduce priced where the r devices sit (one node or several).
// Each layout the program finds (one per stage count) is then costed,
// scheduled, memory-checked and bounded exactly like the uniform layouts,
// and joins the same branch and bound. Layouts whose replicas are all
// equal are the uniform (dp) layouts and are skipped.
//
//===----------------------------------------------------------------------===//

#include "lib/Search/SearchImpl.h"

#include "lib/Schedule/Schedule.h"

#include <algorithm>
#include <limits>

using namespace llvm;
using namespace distopt;
using namespace distopt::schedule;

namespace distopt::search::detail {

bool replicatedLayoutsApply(const cluster::Cluster &c, unsigned numLayers,
                            const Constraints &k) {
  unsigned N = c.numDevices();
  bool dpFree = k.dp.min <= 1 && k.dp.max == UINT_MAX && k.dp.only.empty();
  return !k.uniformReplicas && N >= 3 && N <= kMaxReplicatedDevices &&
         numLayers >= 2 && N * numLayers <= kMaxReplicatedWork &&
         k.tp.allows(1) && k.cp.allows(1) && k.ep.allows(1) &&
         k.chunks.allows(1) && (k.zero.allows(0) || k.zero.allows(1)) && dpFree;
}

namespace {

/// One layout the dynamic program found: its objective (the slowest
/// stage's time per iteration plus the fill), micro-batch size,
/// recomputation, the first layer of stages 1.. and the replicas of each
/// stage.
struct Layout {
  double objective = 0;
  unsigned mbs = 1;
  cost::Recompute rec = cost::Recompute::None;
  std::vector<unsigned> cuts, replicas;
};

/// The (layers, replicas) dynamic program for one micro-batch size and
/// recomputation choice.
class ReplicaDP {
public:
  ReplicaDP(const cluster::Cluster &c, Tables &t, const SearchOptions &o,
            unsigned n, unsigned mbs, unsigned m, cost::Recompute rec)
      : c(c), t(t), o(o), n(n), N(c.numDevices()), mbs(mbs), m(m) {
    type.resize(N);
    for (unsigned d = 0; d < N; ++d)
      type[d] = c.groupOf(d).deviceIndex;
    for (unsigned ty = 0; ty < c.devices.size(); ++ty)
      times.push_back(&t.times(ty, 1, mbs, rec));
    mem = &t.memory(1, rec);
    double elem = o.memory.mixedPrecision ? 2 : 4;
    syncElem = o.memory.gradSyncBytes > 0 ? o.memory.gradSyncBytes : elem;
    // Slowest device kind and collective shape of devices [d, d + r).
    worst.assign(N, std::vector<unsigned>(N + 1, 0));
    shape.assign(N, std::vector<cost::GroupShape>(N + 1));
    for (unsigned d = 0; d < N; ++d) {
      std::vector<unsigned> ranks;
      for (unsigned r = 1; d + r <= N; ++r) {
        ranks.push_back(d + r - 1);
        unsigned prev = worst[d][r - 1], ty = type[d + r - 1];
        worst[d][r] = r == 1 || times[ty]->work[n] > times[prev]->work[n]
                          ? ty
                          : prev;
        shape[d][r] = shapeOf(c, ranks);
      }
    }
  }

  /// Per-iteration time of stage [b, e) on devices [d, d + r).
  double stageTime(unsigned b, unsigned e, unsigned d, unsigned r) const {
    const Tables::Times &tt = *times[worst[d][r]];
    double per = tt.work[e] - tt.work[b];
    cost::GroupShape one;
    if (e < n && d + r < N) {
      cluster::LinkLevel l = c.levelBetween(d + r - 1, d + r);
      per += t.message(e - 1, mbs, 1, false, c.link(l, d), one);
    }
    if (b > 0 && d > 0) {
      cluster::LinkLevel l = c.levelBetween(d, d - 1);
      per += t.message(b - 1, mbs, 1, false, c.link(l, d), one);
    }
    double time = ((m + r - 1) / r) * per;
    if (r > 1)
      time += cost::CostModel::collective(
                  cost::Collective::AllReduce,
                  mem->paramsOf(cost::LayerRange{b, e}).dense * syncElem,
                  shape[d][r])
                  .time;
    return time;
  }

  /// Best layout of every stage count 2..maxStages (replicas empty when
  /// none).
  std::vector<Layout> solve(unsigned maxStages) {
    const double inf = std::numeric_limits<double>::infinity();
    // best[j][i][d]: stages 0..j hold layers [0, i) on devices [0, d).
    auto idx = [&](unsigned i, unsigned d) { return i * (N + 1) + d; };
    std::vector<std::vector<double>> best(
        maxStages, std::vector<double>((n + 1) * (N + 1), inf));
    std::vector<std::vector<std::pair<unsigned, unsigned>>> from(
        maxStages, std::vector<std::pair<unsigned, unsigned>>(
                       (n + 1) * (N + 1), {0, 0}));
    for (unsigned i = 1; i <= n; ++i)
      for (unsigned d = 1; d <= N && d <= m; ++d)
        best[0][idx(i, d)] = stageTime(0, i, 0, d);
    for (unsigned j = 1; j < maxStages; ++j)
      for (unsigned i = j + 1; i <= n; ++i)
        for (unsigned d = j + 1; d <= N; ++d) {
          double &bst = best[j][idx(i, d)];
          for (unsigned b = j; b < i; ++b)
            for (unsigned r = 1; r + j <= d && r <= m; ++r) {
              double prev = best[j - 1][idx(b, d - r)];
              if (prev >= bst)
                continue;
              double v = std::max(prev, stageTime(b, i, d - r, r));
              if (v < bst) {
                bst = v;
                from[j][idx(i, d)] = {b, r};
              }
            }
        }
    std::vector<Layout> out(maxStages);
    for (unsigned stages = 2; stages <= maxStages; ++stages) {
      if (best[stages - 1][idx(n, N)] == inf)
        continue;
      std::vector<unsigned> cuts(stages - 1), reps(stages);
      unsigned i = n, d = N;
      for (unsigned j = stages - 1; j >= 1; --j) {
        auto [b, r] = from[j][idx(i, d)];
        reps[j] = r;
        cuts[j - 1] = b;
        i = b;
        d -= r;
      }
      reps[0] = d;
      // Rank layouts by the slowest stage plus one micro-batch's trip
      // through every stage (fill and drain), so that micro-batch sizes
      // compare fairly.
      double fill = 0;
      for (unsigned j = 0, dev = 0; j < stages; dev += reps[j], ++j) {
        unsigned b = j ? cuts[j - 1] : 0, e = j + 1 < stages ? cuts[j] : n;
        double per = stageTime(b, e, dev, reps[j]);
        fill += per / ((m + reps[j] - 1) / reps[j]);
      }
      out[stages - 1] = {best[stages - 1][idx(n, N)] + fill, mbs,
                         cost::Recompute(), cuts, reps};
    }
    return out;
  }

private:
  const cluster::Cluster &c;
  Tables &t;
  const SearchOptions &o;
  unsigned n, N, mbs, m;
  std::vector<unsigned> type;
  std::vector<const Tables::Times *> times;
  const Tables::Memory *mem;
  double syncElem;
  std::vector<std::vector<unsigned>> worst;
  std::vector<std::vector<cost::GroupShape>> shape;
};

} // namespace

void replicatedCandidates(const cost::ModelDesc &model,
                          const cluster::Cluster &c, const cost::CostModel &cm,
                          const SearchOptions &o, Tables &t,
                          const PinCheck &pins, SearchStats &stats,
                          std::vector<ReplicatedCandidate> &out) {
  const Constraints &k = o.constraints;
  const unsigned n = model.layers.size(), N = c.numDevices();
  if (!replicatedLayoutsApply(c, n, k))
    return;
  std::vector<ScheduleKind> kinds;
  std::vector<ScheduleKind> allowed = k.schedules;
  if (allowed.empty()) {
    allowed = {ScheduleKind::GPipe, ScheduleKind::OneFOneB};
    if (o.allowAsync)
      allowed.insert(allowed.end(),
                     {ScheduleKind::PipeDream, ScheduleKind::PipeDream2BW,
                      ScheduleKind::PipeMare});
  }
  // PipeDream and PipeMare update every stage once per round of
  // lcm(replicas) micro-batches (schedule::updateRound); a layout whose
  // micro-batches do not split evenly over a stage's replicas fails to
  // generate and is skipped.
  for (ScheduleKind s : allowed)
    if (supportsReplicas(s))
      kinds.push_back(s);
  std::vector<cost::Recompute> recs = k.recompute;
  if (recs.empty())
    recs = {cost::Recompute::None, cost::Recompute::Full};
  unsigned maxStages = std::min({n, N, kMaxReplicatedStages});
  auto limitOf = [&](unsigned slot) {
    return o.memoryLimit > 0 ? o.memoryLimit : c.deviceOf(slot).memoryBytes;
  };
  std::vector<Layout> layouts;
  for (unsigned mbs = 1; mbs <= o.globalBatch; ++mbs) {
    if (o.globalBatch % mbs || !k.mbs.allows(mbs))
      continue;
    unsigned m = o.globalBatch / mbs;
    if (m < N / 2)
      continue; // most replicas would idle
    for (cost::Recompute rec : recs) {
      ReplicaDP dp(c, t, o, n, mbs, m, rec);
      for (Layout &l : dp.solve(maxStages)) {
        unsigned stages = l.replicas.size();
        if (stages < 2 || !k.pp.allows(stages) || llvm::all_equal(l.replicas))
          continue;
        l.rec = rec;
        layouts.push_back(std::move(l));
      }
    }
  }
  // Only the layouts the objective ranks best are costed and simulated: the
  // asynchronous bound below is weak, and hundreds of such candidates would
  // spend the simulation budget before the uniform layouts got a turn.
  std::stable_sort(layouts.begin(), layouts.end(),
                   [](const Layout &a, const Layout &b) {
                     return a.objective < b.objective;
                   });
  // At most two micro-batch sizes / recomputations of one (layers,
  // replicas) split: the rest would differ by little more than the bubble.
  std::vector<Layout> kept;
  for (Layout &l : layouts) {
    if (kept.size() == kReplicatedLayouts)
      break;
    unsigned same = llvm::count_if(kept, [&](const Layout &k) {
      return k.cuts == l.cuts && k.replicas == l.replicas;
    });
    if (same < 2)
      kept.push_back(std::move(l));
  }
  layouts = std::move(kept);
  // ZeRO-1 shards each stage's optimizer state over its replicas (every
  // layout here has a stage of several): no faster (its reduce-scatter and
  // all-gather move what the all-reduce moves), so it is tried only for a
  // layout that does not fit without it.
  // ZeRO-2/3 cannot pair up across replicas that run different
  // micro-batches (checkReplicas); the asynchronous schedules run ZeRO-1
  // (PipeDream and PipeMare reduce-scatter each round's gradient).
  SmallVector<unsigned, 2> zeros;
  for (unsigned z : {0u, 1u})
    if (k.zero.allows(z))
      zeros.push_back(z);
  for (const Layout &l : layouts) {
    unsigned stages = l.replicas.size(), m = o.globalBatch / l.mbs;
    for (ScheduleKind kind : kinds) {
      for (unsigned zero : zeros) {
        ++stats.candidates;
        ++stats.replicated;
        Plan p = o.planDefaults;
        p.unevenBatch = false;
        p.dp = 1;
        p.tp = 1;
        p.pp = stages;
        p.mbs = l.mbs;
        p.setSchedule(kind);
        p.chunks = 1;
        p.recompute = l.rec;
        p.zero = zero;
        p.cuts = l.cuts;
        p.replicas = l.replicas;
        p.globalBatch = o.globalBatch;
        p.numMicrobatches = m;
        // The replica DP does not weigh the pins: layouts that break them
        // are dropped here.
        if (!pins.allows(p, c, n)) {
          ++stats.pinPruned;
          break;
        }
        Expected<Schedule> s =
            generateSchedule(kind, stages, 1, m, scheduleOptions(p));
        if (!s) {
          consumeError(s.takeError()); // e.g. uneven async shares
          break;
        }
        PipelineCosts costs = buildPipelineCosts(
            p, model, c, cm, s->weightVersions, o.memory, &t.layerTimes);
        std::vector<double> peak = peakMemory(*s, costs);
        bool fits = true;
        for (unsigned sl = 0; sl < peak.size(); ++sl)
          fits &= peak[sl] <= limitOf(sl);
        if (!fits) {
          ++stats.memoryPruned;
          continue;
        }
        double lb = iterationLowerBound(costs, kind, p.overlapGradSync);
        out.push_back({std::move(p), lb});
        break;
      }
    }
  }
}

} // namespace distopt::search::detail
