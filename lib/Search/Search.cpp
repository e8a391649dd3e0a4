//===- Search.cpp - Branch-and-bound plan search ----------------*- C++ -*-===//
//
// Part of DistOpt. Enumerates the candidate space, orders it by a cheap
// bound, expands candidates lazily (stage partition, costs, proven lower
// bound, memory estimate) and simulates them best-bound-first until no
// remaining bound can beat the incumbents. See docs/search.md.
//
//===----------------------------------------------------------------------===//

#include "lib/Search/SearchImpl.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <limits>
#include <numeric>
#include <queue>

using namespace llvm;
using namespace distopt;
using namespace distopt::search;
using namespace distopt::schedule;
using cost::Recompute;

namespace distopt::search::detail {

static Error searchError(const Twine &msg) {
  return createStringError(inconvertibleErrorCode(), msg.str());
}

} // namespace distopt::search::detail

using namespace distopt::search::detail;

namespace {

struct Light {
  unsigned tp, pp, dp, mbs, m, chunks, zero;
  ScheduleKind kind;
  Recompute rec;
  double cheap;
};

struct Expanded {
  double lb;
  Plan plan;
  bool operator>(const Expanded &o) const { return lb > o.lb; }
};

/// Why candidates were dropped before any cost was computed.
struct Reasons {
  unsigned long tpTopology = 0, ppLayers = 0, dpBatch = 0, constraint = 0;
  std::vector<unsigned> dpTried;
};

class Searcher {
public:
  Searcher(const cost::ModelDesc &model, const cluster::Cluster &c,
           const cost::CostModel &cm, const SearchOptions &o)
      : model(model), c(c), cm(cm), o(o), t(model, c, cm, o.memory),
        n(model.layers.size()) {}

  Expected<SearchResult> run();

private:
  void enumerate();
  double limitOf(unsigned type) const {
    return o.memoryLimit > 0 ? o.memoryLimit : c.devices[type].memoryBytes;
  }
  std::vector<unsigned> stageTypes(const Plan &p, unsigned s) const;
  std::vector<unsigned> partition(const Light &x, bool memoryAware);
  bool expand(const Light &x, Expanded &out);
  std::vector<std::vector<unsigned>> replicaShares(const Plan &p);
  Error noPlanError() const;

  const cost::ModelDesc &model;
  const cluster::Cluster &c;
  const cost::CostModel &cm;
  const SearchOptions &o;
  Tables t;
  unsigned n;
  std::vector<Light> cands;
  Reasons why;
  SearchStats stats;
  std::map<std::tuple<unsigned, unsigned, unsigned, unsigned>,
           std::vector<unsigned>>
      cutCache;
  /// Per (tp, pp, dp, mbs, schedule, chunks): (zero, recompute) variants
  /// whose memory estimate fits.
  std::map<std::tuple<unsigned, unsigned, unsigned, unsigned, unsigned>,
           std::vector<std::pair<unsigned, unsigned>>>
      fitting;
  double minNeeded = std::numeric_limits<double>::infinity();
  std::string minNeededPlan;
  bool minNeededIsBound = false;
};

} // namespace

std::vector<unsigned> Searcher::stageTypes(const Plan &p, unsigned s) const {
  std::vector<unsigned> types;
  for (unsigned d = 0; d < p.dp; ++d) {
    unsigned ty = c.groupOf(globalRank(p, s, d, 0)).deviceIndex;
    if (!llvm::is_contained(types, ty))
      types.push_back(ty);
  }
  return types;
}

void Searcher::enumerate() {
  const Constraints &k = o.constraints;
  unsigned N = c.numDevices();
  unsigned perNode = 0;
  for (const cluster::NodeGroup &g : c.groups)
    perNode = std::gcd(perNode, g.devicesPerNode);
  std::vector<ScheduleKind> kinds = k.schedules;
  if (kinds.empty()) {
    kinds = {ScheduleKind::GPipe, ScheduleKind::OneFOneB,
             ScheduleKind::Interleaved, ScheduleKind::ZBH1};
    if (o.allowAsync) {
      kinds.push_back(ScheduleKind::PipeDream);
      kinds.push_back(ScheduleKind::PipeDream2BW);
    }
  }
  std::vector<Recompute> recs = k.recompute;
  if (recs.empty())
    recs = {Recompute::None, Recompute::Selective, Recompute::Full};
  bool anySelective = false;
  for (const cost::LayerDesc &l : model.layers)
    for (const cost::OpDesc &op : l.ops)
      anySelective |= op.selective;
  double maxLimit = 0;
  for (unsigned ty = 0; ty < c.devices.size(); ++ty)
    maxLimit = std::max(maxLimit, limitOf(ty));

  for (unsigned tp = 1; tp <= perNode; ++tp) {
    if (perNode % tp || N % tp)
      continue;
    if (!k.tp.allows(tp)) {
      ++why.constraint;
      continue;
    }
    for (unsigned pp = 1; pp <= N / tp; ++pp) {
      if ((N / tp) % pp)
        continue;
      if (!k.pp.allows(pp)) {
        ++why.constraint;
        continue;
      }
      if (pp > n) {
        ++why.ppLayers;
        continue;
      }
      unsigned dp = N / (tp * pp);
      if (!k.dp.allows(dp)) {
        ++why.constraint;
        continue;
      }
      if (o.globalBatch % dp) {
        ++why.dpBatch;
        if (!llvm::is_contained(why.dpTried, dp))
          why.dpTried.push_back(dp);
        continue;
      }
      unsigned perReplica = o.globalBatch / dp;
      for (unsigned mbs = 1; mbs <= perReplica; ++mbs) {
        if (perReplica % mbs)
          continue;
        if (!k.mbs.allows(mbs)) {
          ++why.constraint;
          continue;
        }
        unsigned m = perReplica / mbs;
        struct Shape {
          ScheduleKind kind;
          unsigned chunks;
        };
        std::vector<Shape> shapes;
        if (pp == 1) {
          // One stage: the schedule is plain gradient accumulation.
          bool ok = k.schedules.empty();
          for (ScheduleKind s : k.schedules)
            ok |= s == ScheduleKind::OneFOneB || s == ScheduleKind::GPipe;
          if (ok && k.chunks.allows(1))
            shapes.push_back({ScheduleKind::OneFOneB, 1});
        } else {
          for (ScheduleKind s : kinds) {
            if (s != ScheduleKind::Interleaved) {
              if (k.chunks.allows(1))
                shapes.push_back({s, 1});
              continue;
            }
            if (m % pp)
              continue;
            for (unsigned ch = std::max(2u, k.chunks.min);
                 ch <= std::min(8u, k.chunks.max) && pp * ch <= n; ++ch)
              if (k.chunks.allows(ch))
                shapes.push_back({s, ch});
          }
        }
        if (shapes.empty())
          ++why.constraint;
        for (Recompute rec : recs) {
          if (rec == Recompute::Selective && !anySelective)
            continue; // the same as none for this model
          // The cheap bound: the busiest rank does at least the average
          // work, on the fastest device kind.
          double total = std::numeric_limits<double>::infinity();
          for (unsigned ty = 0; ty < c.devices.size(); ++ty) {
            double w = t.times(ty, tp, mbs, rec).work[n];
            total = std::min(total, w);
          }
          double cheap = m * total / pp;
          const Tables::Memory &mem = t.memory(tp, rec);
          for (unsigned zero = k.zero.min; zero <= std::min(3u, k.zero.max);
               ++zero) {
            if (!k.zero.allows(zero) || (zero > 0 && dp == 1))
              continue;
            cost::MemoryConfig cfg = o.memory;
            cfg.dp = dp;
            cfg.tp = tp;
            cfg.zero = zero;
            cfg.recompute = rec;
            double avgStatic =
                cost::staticMemory(mem.params[n] / pp, cfg).staticBytes();
            for (const Shape &sh : shapes) {
              ++stats.candidates;
              if (avgStatic > maxLimit) {
                ++stats.memoryPruned;
                if (avgStatic < minNeeded) {
                  minNeeded = avgStatic;
                  minNeededIsBound = true;
                  minNeededPlan = formatv("dp={0},tp={1},pp={2},zero={3}", dp,
                                          tp, pp, zero)
                                      .str();
                }
                continue;
              }
              cands.push_back(
                  {tp, pp, dp, mbs, m, sh.chunks, zero, sh.kind, rec, cheap});
            }
          }
        }
      }
    }
  }
}

std::vector<unsigned> Searcher::partition(const Light &x, bool memoryAware) {
  unsigned V = x.pp * x.chunks;
  if (V <= 1)
    return {};
  auto key = std::make_tuple(x.tp, x.pp * 1000 + x.chunks, x.mbs,
                             static_cast<unsigned>(x.rec) + 4 * x.dp);
  if (!memoryAware) {
    auto it = cutCache.find(key);
    if (it != cutCache.end())
      return it->second;
  }
  Plan shape;
  shape.tp = x.tp;
  shape.pp = x.pp;
  shape.dp = x.dp;
  // Per pipeline rank: the slowest device kind of its stage group, its
  // memory limit, and the boundary message times to the next rank and from
  // the previous one per layer (shared between ranks with equal links).
  std::vector<const Tables::Times *> tm(x.pp);
  std::vector<double> limit(x.pp);
  std::vector<const std::vector<double> *> outMsg(x.pp), inMsg(x.pp);
  std::map<std::tuple<unsigned, unsigned, unsigned>, std::vector<double>>
      msgCache;
  bool sg = o.planDefaults.scatterGather;
  std::vector<unsigned> type(x.pp);
  for (unsigned r = 0; r < x.pp; ++r) {
    double worst = -1;
    limit[r] = std::numeric_limits<double>::infinity();
    for (unsigned ty : stageTypes(shape, r)) {
      const Tables::Times &tt = t.times(ty, x.tp, x.mbs, x.rec);
      if (tt.work[n] > worst) {
        worst = tt.work[n];
        tm[r] = &tt;
        type[r] = ty;
      }
      limit[r] = std::min(limit[r], limitOf(ty));
    }
  }
  auto messages = [&](unsigned from, unsigned to) {
    unsigned a = globalRank(shape, from, 0, 0), b = globalRank(shape, to, 0, 0);
    cluster::LinkLevel level = c.levelBetween(a, b);
    auto k = std::make_tuple(static_cast<unsigned>(level), type[from],
                             type[to]);
    auto it = msgCache.find(k);
    if (it != msgCache.end())
      return &it->second;
    std::vector<double> v(n, 0);
    cluster::LinkSpec link = c.link(level, a);
    cost::GroupShape recv = tensorGroup(shape, c, to);
    for (unsigned l = 0; l + 1 < n; ++l)
      v[l] = t.message(l, x.mbs, x.tp, sg, link, recv);
    return &msgCache.emplace(k, std::move(v)).first->second;
  };
  for (unsigned r = 0; r < x.pp; ++r) {
    outMsg[r] = messages(r, (r + 1) % x.pp);
    inMsg[r] = messages(r, (r + x.pp - 1) % x.pp);
  }
  const Tables::Memory &mem = t.memory(x.tp, x.rec);
  cost::MemoryConfig cfg = o.memory;
  cfg.dp = x.dp;
  cfg.tp = x.tp;
  cfg.zero = x.zero;
  cfg.recompute = x.rec;
  double perParam = cost::staticMemory(1, cfg).staticBytes();
  std::vector<double> held(x.pp);
  for (unsigned r = 0; r < x.pp; ++r) {
    held[r] = inFlight(x.kind, r, x.pp, x.chunks, x.m) * x.mbs;
    if (x.kind == ScheduleKind::Interleaved)
      held[r] /= x.chunks;
  }
  // Chunks of one rank share its memory.
  auto fitsMemory = [&](unsigned j, unsigned b, unsigned e) {
    unsigned r = j % x.pp;
    double bytes = perParam * (mem.params[e] - mem.params[b]) +
                   held[r] * (mem.act[e] - mem.act[b]) +
                   x.mbs * mem.workMax(b, e);
    return bytes <= limit[r] / x.chunks;
  };
  if (memoryAware) {
    // Memory only shrinks with a stage's range, so stretching each stage as
    // far as it fits decides whether any partition fits (exchange argument).
    unsigned b = 0, j = 0;
    while (b < n && j < V) {
      unsigned e = b;
      while (e < n && fitsMemory(j, b, e + 1))
        ++e;
      if (e == b)
        return {};
      b = e;
      ++j;
    }
    if (b < n)
      return {};
  }
  ++stats.partitions;
  auto lower = [&](unsigned j, unsigned b, unsigned e) {
    const Tables::Times &tt = *tm[j % x.pp];
    return tt.work[e] - tt.work[b];
  };
  auto cost = [&](unsigned j, unsigned b, unsigned e) {
    unsigned r = j % x.pp;
    const Tables::Times &tt = *tm[r];
    double v = tt.work[e] - tt.work[b];
    // Boundary traffic: activation out, gradient in, both per micro-batch.
    if (e < n)
      v += (*outMsg[r])[e - 1];
    if (b > 0)
      v += (*inMsg[r])[b - 1];
    if (memoryAware && !fitsMemory(j, b, e))
      return std::numeric_limits<double>::infinity();
    return v;
  };
  std::vector<unsigned> cuts = partitionLayers(n, V, cost, lower);
  if (!memoryAware)
    cutCache[key] = cuts;
  return cuts;
}

std::vector<std::vector<unsigned>> Searcher::replicaShares(const Plan &p) {
  std::vector<std::vector<unsigned>> out;
  for (unsigned r = 0; r < p.pp; ++r) {
    std::vector<double> mbTime(c.devices.size(), 0);
    for (unsigned ty = 0; ty < c.devices.size(); ++ty)
      for (unsigned ch = 0; ch < p.chunks; ++ch) {
        auto [b, e] = p.stageLayers(ch * p.pp + r, n);
        const Tables::Times &tt = t.times(ty, p.tp, p.mbs, p.recompute);
        mbTime[ty] += tt.work[e] - tt.work[b];
      }
    out.push_back(replicaMicrobatches(p, c, r, mbTime));
  }
  return out;
}

bool Searcher::expand(const Light &x, Expanded &out) {
  auto group = std::make_tuple(x.tp, x.pp, x.dp, x.mbs,
                               static_cast<unsigned>(x.kind) * 100 + x.chunks);
  for (auto [z, r] : fitting[group])
    if (z <= x.zero && r <= static_cast<unsigned>(x.rec)) {
      ++stats.dominated;
      return false;
    }
  Plan p = o.planDefaults;
  if (c.devices.size() > 1)
    p.unevenBatch = true;
  p.dp = x.dp;
  p.tp = x.tp;
  p.pp = x.pp;
  p.mbs = x.mbs;
  p.schedule = x.kind;
  p.chunks = x.chunks;
  p.recompute = x.rec;
  p.zero = x.zero;
  p.globalBatch = o.globalBatch;
  p.numMicrobatches = x.m;
  std::vector<unsigned> versions(x.pp, 1);
  for (unsigned r = 0; r < x.pp; ++r)
    versions[r] = x.kind == ScheduleKind::PipeDream      ? std::min(x.pp - r, x.m)
                  : x.kind == ScheduleKind::PipeDream2BW ? 2
                                                         : 1;
  auto fits = [&](double &worst) {
    bool ok = true;
    worst = 0;
    for (unsigned r = 0; r < x.pp; ++r) {
      double lim = std::numeric_limits<double>::infinity();
      for (unsigned ty : stageTypes(p, r))
        lim = std::min(lim, limitOf(ty));
      double est = t.memoryEstimate(p, r, versions[r]);
      ok &= est <= lim;
      worst = std::max(worst, est);
    }
    return ok;
  };
  p.cuts = partition(x, false);
  if (x.pp * x.chunks > 1 && p.cuts.empty())
    return false;
  double worst = 0;
  if (!fits(worst)) {
    std::vector<unsigned> cuts = partition(x, true);
    bool ok = false;
    if (!cuts.empty()) {
      p.cuts = cuts;
      double w2 = 0;
      ok = fits(w2);
      worst = std::min(worst, w2);
    }
    if (!ok) {
      ++stats.memoryPruned;
      if (minNeededIsBound || worst < minNeeded) {
        minNeeded = worst;
        minNeededIsBound = false;
        minNeededPlan = p.str();
      }
      return false;
    }
  }
  PipelineCosts costs = buildPipelineCosts(p, model, c, cm, versions, o.memory);
  fitting[group].push_back({x.zero, static_cast<unsigned>(x.rec)});
  out.plan = std::move(p);
  out.lb =
      iterationLowerBound(costs, x.kind, out.plan.overlapGradSync, x.zero);
  return true;
}

Error Searcher::noPlanError() const {
  if (stats.candidates == 0) {
    if (why.dpBatch) {
      unsigned dp = why.dpTried.empty() ? 1 : why.dpTried.front();
      std::string list;
      for (unsigned d : why.dpTried)
        list += (list.empty() ? "" : ", ") + std::to_string(d);
      unsigned next = (o.globalBatch / dp + 1) * dp;
      return searchError(formatv(
          "no plan: global batch {0} is not divisible by the data-parallel "
          "degree (dp = {1}) of any allowed layout of {2} devices; use a "
          "batch that is a multiple of {3} (e.g. {4}){5}",
          o.globalBatch, list, c.numDevices(), dp, next,
          why.constraint ? " or relax the constraints, which exclude other "
                           "layouts"
                         : ""));
    }
    std::string detail;
    if (why.constraint)
      detail += formatv(" {0} layouts excluded by the constraints;",
                        why.constraint);
    if (why.ppLayers)
      detail += formatv(" {0} layouts need more pipeline stages than the "
                        "model's {1} layers;",
                        why.ppLayers, n);
    if (why.dpBatch)
      detail += formatv(" {0} layouts have a dp that does not divide the "
                        "batch {1};",
                        why.dpBatch, o.globalBatch);
    return searchError(
        "no plan satisfies the constraints on cluster '" + c.name + "' (" +
        Twine(c.numDevices()) + " devices):" + detail +
        " tp must divide the devices per node and dp*tp*pp must equal the "
        "device count; relax --dist-search");
  }
  double limit = 0;
  for (unsigned ty = 0; ty < c.devices.size(); ++ty)
    limit = std::max(limit, limitOf(ty));
  unsigned devices = static_cast<unsigned>(
      std::ceil(c.numDevices() * minNeeded / std::max(limit, 1.0)));
  return searchError(formatv(
      "no plan fits in memory: the model needs {0} {1} per device "
      "({2}) with {3} devices, but a device has {4}; use devices with at "
      "least {1} (--dist-memory-limit) or about {5} devices{6}",
      minNeededIsBound ? "at least" : "", humanBytes(minNeeded), minNeededPlan,
      c.numDevices(), humanBytes(limit), std::max(devices, c.numDevices() + 1),
      o.constraints.recompute.empty() ? ""
                                      : ", or allow recompute=full"));
}

/// Orders plans by iteration time; equal times (within rounding) prefer the
/// simpler plan: fewer stages, less TP, fewer chunks, less recomputation
/// and sharding, fewer micro-batches.
static bool better(const Candidate &a, const Candidate &b) {
  double ta = a.sim.result.iterationTime, tb = b.sim.result.iterationTime;
  if (std::fabs(ta - tb) > 1e-9 * std::max(ta, tb))
    return ta < tb;
  const Plan &p = a.sim.plan, &q = b.sim.plan;
  return std::make_tuple(p.replicated(), p.pp, p.tp, p.chunks, static_cast<unsigned>(p.recompute),
                         p.zero, p.numMicrobatches) <
         std::make_tuple(q.replicated(), q.pp, q.tp, q.chunks, static_cast<unsigned>(q.recompute),
                         q.zero, q.numMicrobatches);
}

static bool sameLayout(const Plan &a, const Plan &b) {
  return a.dp == b.dp && a.tp == b.tp && a.pp == b.pp &&
         a.replicas == b.replicas &&
         a.schedule == b.schedule && a.chunks == b.chunks;
}

Expected<SearchResult> Searcher::run() {
  auto t0 = std::chrono::steady_clock::now();
  std::clock_t c0 = std::clock();
  enumerate();
  std::vector<ReplicatedCandidate> replicated;
  replicatedCandidates(model, c, cm, o, t, stats, replicated);
  if (cands.empty() && replicated.empty())
    return noPlanError();
  std::stable_sort(cands.begin(), cands.end(),
                   [](const Light &a, const Light &b) {
                     if (a.cheap != b.cheap)
                       return a.cheap < b.cheap;
                     if (a.zero != b.zero)
                       return a.zero < b.zero;
                     return a.rec < b.rec;
                   });
  const unsigned K = 1 + o.alternatives;
  std::vector<Candidate> top; // sorted by iteration time
  auto threshold = [&] {
    return top.size() >= K ? top.back().sim.result.iterationTime
                           : std::numeric_limits<double>::infinity();
  };
  std::priority_queue<Expanded, std::vector<Expanded>, std::greater<>> heap;
  // Per-stage replica layouts come fully expanded, with their bounds.
  for (ReplicatedCandidate &rc : replicated)
    heap.push({rc.lowerBound, std::move(rc.plan)});
  size_t next = 0;
  unsigned long steps = 0;
  while (true) {
    if (o.progress && (++steps & 255) == 0)
      o.progress(double(next) / cands.size(), stats.candidates);
    double nextCheap = next < cands.size()
                           ? cands[next].cheap
                           : std::numeric_limits<double>::infinity();
    if (!heap.empty() && heap.top().lb <= nextCheap) {
      if (heap.top().lb >= threshold())
        break;
      if (stats.simulated >= o.maxSimulations) {
        stats.exact = false;
        break;
      }
      Expanded e = heap.top();
      heap.pop();
      sim::SimOptions so;
      so.recordEvents = false;
      ++stats.simulated;
      Expected<sim::PlanSimulation> ps = sim::simulatePlan(
          model, c, e.plan, o.globalBatch, cm, so, o.memory);
      if (!ps) {
        consumeError(ps.takeError());
        continue;
      }
      bool fits = true;
      for (unsigned r = 0; r < ps->result.peakMemoryBytes.size(); ++r) {
        double lim = std::numeric_limits<double>::infinity();
        if (ps->plan.replicated()) // one list per slot of tp devices
          lim = limitOf(c.groupOf(r * ps->plan.tp).deviceIndex);
        for (unsigned ty : ps->plan.replicated() ? std::vector<unsigned>{}
                                                 : stageTypes(ps->plan, r))
          lim = std::min(lim, limitOf(ty));
        fits &= ps->result.peakMemoryBytes[r] <= lim;
      }
      if (!fits) {
        ++stats.memoryPruned;
        continue;
      }
      Candidate cand;
      cand.lowerBound = e.lb;
      cand.sim = std::move(*ps);
      cand.breakdown = breakdownOf(cand.sim);
      cand.replicaMicrobatches = replicaShares(cand.sim.plan);
      // Alternatives are distinct layouts: keep the best plan of each
      // (dp, tp, pp, schedule, chunks); mbs, recompute and ZeRO variants of
      // one layout are not worth a row of their own.
      auto same = llvm::find_if(top, [&](const Candidate &t) {
        return sameLayout(t.sim.plan, cand.sim.plan);
      });
      if (same != top.end()) {
        if (!better(cand, *same))
          continue;
        top.erase(same);
      }
      auto pos = std::upper_bound(top.begin(), top.end(), cand, better);
      top.insert(pos, std::move(cand));
      if (top.size() > K)
        top.pop_back();
      continue;
    }
    if (next >= cands.size() || nextCheap >= threshold())
      break;
    Expanded e;
    if (expand(cands[next++], e)) {
      if (e.lb < threshold())
        heap.push(std::move(e));
      else
        ++stats.boundPruned;
    }
  }
  stats.boundPruned += heap.size() + (cands.size() - next);
  if (top.empty()) {
    if (minNeeded == std::numeric_limits<double>::infinity())
      return searchError("no plan could be simulated for cluster '" + c.name +
                         "'; check the model and the constraints");
    return noPlanError();
  }
  SearchResult res;
  res.mode = Mode::Train;
  res.best = std::move(top.front());
  for (unsigned i = 1; i < top.size(); ++i)
    res.alternatives.push_back(std::move(top[i]));
  stats.seconds = std::chrono::duration<double>(
                      std::chrono::steady_clock::now() - t0)
                      .count();
  stats.cpuSeconds = double(std::clock() - c0) / CLOCKS_PER_SEC;
  res.stats = stats;
  if (o.progress)
    o.progress(1.0, stats.candidates);
  return res;
}

Expected<SearchResult>
distopt::search::detail::searchAll(const cost::ModelDesc &model,
                                   const cluster::Cluster &c,
                                   const cost::CostModel &cm,
                                   const SearchOptions &o) {
  if (c.numDevices() == 0)
    return searchError("cluster '" + c.name +
                       "' has no devices; give at least one node group with "
                       "nodes >= 1 and devices_per_node >= 1");
  if (model.layers.empty())
    return searchError("model '" + model.name +
                       "' has no layers to plan; check the import");
  if (o.globalBatch == 0)
    return searchError("the search needs the global batch in samples; pass "
                       "--dist-batch=N");
  for (ScheduleKind k : o.constraints.schedules)
    if (isAsync(k) && !o.allowAsync)
      return searchError(
          "--dist-search allows schedule '" + scheduleName(k) +
          "', which updates weights asynchronously; pass --dist-allow-async "
          "to accept that, or drop it from the constraints");
  if (o.mode == Mode::Infer)
    return detail::searchInference(model, c, cm, o);
  return Searcher(model, c, cm, o).run();
}
