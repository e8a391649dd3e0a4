//===- Search.cpp - Branch-and-bound plan search ----------------*- C++ -*-===//
//
// Part of DistOpt. Enumerates the candidate space, orders it by a cheap
// bound, expands candidates lazily (stage partition, costs, proven lower
// bound, memory estimate) and simulates them best-bound-first until no
// remaining bound can beat the incumbents. See docs/search.md.
//
//===----------------------------------------------------------------------===//

#include "lib/Search/SearchImpl.h"

#include "llvm/ADT/StringExtras.h"
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
  unsigned cp = 1, ep = 1;
  bool sp = false;
  cost::Offload offload;
  /// Writes the layout into \p p (flags such as overlap stay).
  void apply(Plan &p) const {
    p.dp = dp;
    p.tp = tp;
    p.pp = pp;
    p.cp = cp;
    p.ep = ep;
    p.sp = sp;
    p.mbs = mbs;
    p.setSchedule(kind);
    p.chunks = chunks;
    p.recompute = rec;
    p.zero = zero;
    p.offload = offload;
    p.numMicrobatches = m;
  }
  Plan shape() const {
    Plan p;
    apply(p);
    return p;
  }
  TableKey key() const {
    TableKey k;
    k.tp = tp;
    k.cp = cp;
    k.ep = ep;
    k.sp = sp;
    k.mbs = mbs;
    k.rec = rec;
    return k;
  }
};

/// Processing order: cheap bound first, then less sharding, recomputation
/// and offload (a variant that fits makes its hungrier siblings dominated).
bool cheaperFirst(const Light &a, const Light &b) {
  if (a.cheap != b.cheap)
    return a.cheap < b.cheap;
  if (a.zero != b.zero)
    return a.zero < b.zero;
  if (a.rec != b.rec)
    return a.rec < b.rec;
  return a.offload.size() < b.offload.size();
}

/// A pipeline schedule and its chunks per rank.
struct Shape {
  ScheduleKind kind;
  unsigned chunks;
};

/// Position of \p o in cost::allOffloads() (a small key).
unsigned offloadIndex(const cost::Offload &o) {
  return llvm::find(cost::allOffloads(), o) - cost::allOffloads().begin();
}

/// A variant of a layout that fits memory: its ZeRO stage, recomputation
/// and offload.
struct Fitting {
  unsigned zero, rec;
  cost::Offload offload;
};

struct Expanded {
  double lb;
  Plan plan;
  bool operator>(const Expanded &o) const { return lb > o.lb; }
};

/// Whether a stage of layers [b, e) fits its rank's memory (chunks of one
/// rank share it), for the memory-aware partition.
struct StageMemoryCheck {
  const Tables::Memory *mem = nullptr;
  std::vector<double> limit, held; ///< per pipeline rank
  std::vector<unsigned> rank;      ///< per virtual stage
  double perParam = 0, perExpert = 0;
  unsigned chunks = 1, mbs = 1;

  bool fits(unsigned j, unsigned b, unsigned e) const {
    unsigned r = rank[j];
    cost::ParamSplit params = mem->paramsOf(b, e);
    double bytes = perParam * params.dense + perExpert * params.expert +
                   held[r] * mem->actOf(b, e) + mbs * mem->workOf(b, e);
    return bytes <= limit[r] / chunks;
  }
  /// Memory only shrinks with a stage's range, so stretching each stage as
  /// far as it fits decides whether any partition into \p V stages fits
  /// (exchange argument).
  bool anyFits(unsigned n, unsigned V) const {
    unsigned b = 0, j = 0;
    while (b < n && j < V) {
      unsigned e = b;
      while (e < n && fits(j, b, e + 1))
        ++e;
      if (e == b)
        return false;
      b = e;
      ++j;
    }
    return b >= n;
  }
};

/// Why candidates were dropped before any cost was computed.
struct Reasons {
  unsigned long dpBatch = 0, constraint = 0;
  /// The --dist-search keys whose constraints excluded layouts, in the
  /// order met.
  llvm::SmallVector<llvm::StringRef> constraintKeys;
  /// The pipeline degrees above the model's layer count.
  std::vector<unsigned> ppTooDeep;
  /// The tensor degrees that split the experts' hidden features unevenly.
  std::vector<unsigned> tpExpertFeatures;
  /// The tensor-parallel degrees skipped for not fitting the model
  /// (schedule::tensorParallelMisfit): not dividing its heads or channels,
  /// and splitting no op; and those the cluster's nodes take that fit it.
  std::vector<unsigned> tpDivides, tpNoSplit, tpFits;
  /// cp, or cp x tp at ep > 1, does not divide the experts' capacity slots
  /// (expertSlotsSplit).
  unsigned long expertSlots = 0;
  /// tp does not divide the experts' hidden width at ep > 1
  /// (expertFeaturesSplit).
  unsigned long expertFeatures = 0;
  /// Asynchronous schedules with ZeRO-3 or cp > 1, which the programs do
  /// not run (dist-partition, dist-context-parallel refuse them).
  unsigned long asyncUnrun = 0;
  std::vector<unsigned> dpTried;

  /// One layout excluded by the constraint on \p key.
  void excluded(llvm::StringRef key) {
    ++constraint;
    if (!llvm::is_contained(constraintKeys, key))
      constraintKeys.push_back(key);
  }
};

/// \p degree added to \p list once.
static void noteDegree(std::vector<unsigned> &list, unsigned degree) {
  if (!llvm::is_contained(list, degree))
    list.push_back(degree);
}

/// "1 layout", "3 layouts"; with \p verb, "1 layout splits", "3 layouts
/// split".
static std::string layouts(unsigned long n, StringRef verb = "") {
  std::string s = formatv("{0} layout{1}", n, n == 1 ? "" : "s").str();
  if (!verb.empty())
    s += (" " + verb + (n == 1 ? "s" : "")).str();
  return s;
}

class Searcher {
public:
  Searcher(const cost::ModelDesc &model, const cluster::Cluster &c,
           const cost::CostModel &cm, const SearchOptions &o, PinCheck pins)
      : model(model), c(c), cm(cm), o(o), pins(std::move(pins)),
        t(model, c, cm, o.memory, o.planDefaults.expertImbalance),
        n(model.layers.size()) {}

  Expected<SearchResult> run();

private:
  void enumerate();
  void enumerateLayout(unsigned tp, unsigned cp, unsigned pp, unsigned dp,
                       unsigned ep, bool sp,
                       const std::vector<Recompute> &recs);
  /// The schedules (and chunks) weighed for \p pp stages and \p m
  /// micro-batches.
  std::vector<Shape> shapesOf(unsigned pp, unsigned m) const;
  /// Calls \p keep with each candidate of \p base (a layout, micro-batch
  /// size and recomputation, with its cheap bound) in enumeration order:
  /// its ZeRO stages, \p shapes and offload variants whose average static
  /// memory fits. With \p count, counts every variant into the statistics
  /// and the "no plan" error's reasons, as enumerate() does once.
  template <typename Keep>
  void variants(const Light &base, ArrayRef<Shape> shapes, bool count,
                Keep &&keep);
  double limitOf(unsigned type) const {
    return o.memoryLimit > 0 ? o.memoryLimit : c.devices[type].memoryBytes;
  }
  std::vector<unsigned> stageTypes(const Plan &p, unsigned s) const;
  std::vector<unsigned> partition(const Light &x, bool memoryAware);
  StageMemoryCheck memoryCheck(const Light &x);
  /// Expands \p x; false when it is dominated or does not fit memory
  /// (then \p overMemory is set).
  bool expand(const Light &x, Expanded &out, bool *overMemory = nullptr);
  /// The offload sets the search weighs for \p x (none of them when the
  /// cluster has no tiers, the schedule is asynchronous, or dp * cp > 1
  /// without ZeRO >= 2), fewest parts first, without "none".
  std::vector<cost::Offload> offloadVariants(const Light &x) const;
  Error noPlanError() const;

  const cost::ModelDesc &model;
  const cluster::Cluster &c;
  const cost::CostModel &cm;
  const SearchOptions &o;
  PinCheck pins;
  Tables t;
  unsigned n;
  /// One per (layout, mbs, recompute) with some candidate, with its
  /// cheap bound; run() expands them in order (RunsInOrder).
  std::vector<Light> bases;
  /// How many candidates the bases hold.
  unsigned long kept = 0;
  /// What enumerate() weighs: the schedules, whether the model has
  /// selectively recomputed ops and expert ops, the largest memory limit.
  std::vector<ScheduleKind> kinds;
  bool anySelective = false, anyExpert = false;
  double maxLimit = 0;
  Reasons why;
  SearchStats stats;
  std::map<std::tuple<TableKey, unsigned, unsigned, unsigned, unsigned>,
           std::vector<unsigned>>
      cutCache;
  /// The simulated plans' schedules (SearchOptions::simulationCaches).
  ScheduleCache schedules;
  /// Per layout (degrees, sp, mbs, schedule, chunks): the (zero,
  /// recompute, offload) variants whose memory estimate fits.
  std::map<std::tuple<TableKey, unsigned, unsigned, unsigned>,
           std::vector<Fitting>>
      fitting;
  /// Per layout, recomputation and ZeRO stage: the schedules that fit.
  std::map<std::tuple<TableKey, unsigned, unsigned, unsigned>, unsigned>
      ladder;
  /// The most recomputation the search weighs (enumerate()).
  Recompute lastRecompute = Recompute::Full;
  double minNeeded = std::numeric_limits<double>::infinity();
  std::string minNeededPlan;
  bool minNeededIsBound = false;
};

} // namespace

std::vector<cost::Offload> Searcher::offloadVariants(const Light &x) const {
  std::vector<cost::Offload> out;
  if (isAsync(x.kind) || (x.dp * x.cp > 1 && x.zero < 2))
    return out;
  const std::vector<cost::Offload> &allowed = o.constraints.offload;
  for (const cost::Offload &v : cost::allOffloads()) {
    if (!v.any() || (!allowed.empty() && !llvm::is_contained(allowed, v)))
      continue;
    bool ok = true;
    for (const cluster::NodeGroup &g : c.groups)
      ok &= (v.optimizer || v.params) ? g.tiers[cluster::Tier::Host].present()
                                      : g.tiers.any();
    if (ok)
      out.push_back(v);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const cost::Offload &a, const cost::Offload &b) {
                     return a.size() < b.size();
                   });
  return out;
}

std::vector<unsigned> Searcher::stageTypes(const Plan &p, unsigned s) const {
  return stageKinds(p, c, s);
}

void Searcher::enumerate() {
  const Constraints &k = o.constraints;
  unsigned N = c.numDevices();
  unsigned perNode = 0;
  for (const cluster::NodeGroup &g : c.groups)
    perNode = std::gcd(perNode, g.devicesPerNode);
  kinds = k.schedules;
  if (kinds.empty()) {
    // Within a memory ladder the hungrier schedule comes first (expand()).
    kinds = {ScheduleKind::GPipe,     ScheduleKind::OneFOneB,
             ScheduleKind::Interleaved, ScheduleKind::ZBH2,
             ScheduleKind::ZBH1,      ScheduleKind::ZBV,
             ScheduleKind::VHalf,     ScheduleKind::VMin,
             ScheduleKind::DualPipeV};
    if (o.allowAsync) {
      kinds.push_back(ScheduleKind::PipeDream);
      kinds.push_back(ScheduleKind::PipeDream2BW);
      kinds.push_back(ScheduleKind::PipeMare);
    }
  }
  std::vector<Recompute> recs = k.recompute;
  if (recs.empty())
    recs = {Recompute::None, Recompute::Selective, Recompute::Full};
  lastRecompute = *std::max_element(recs.begin(), recs.end());
  bool anyRing = false;
  // What ep must divide: each rank holds whole experts.
  unsigned experts = 0;
  for (const cost::LayerDesc &l : model.layers)
    for (const cost::OpDesc &op : l.ops) {
      anySelective |= op.selective;
      anyExpert |= op.expert;
      if (op.expert && op.kernels > 0)
        experts = std::gcd(experts, op.kernels);
      anyRing |= op.cpKvBytes > 0;
    }
  for (unsigned ty = 0; ty < c.devices.size(); ++ty)
    maxLimit = std::max(maxLimit, limitOf(ty));

  for (unsigned tp = 1; tp <= perNode; ++tp) {
    if (perNode % tp || N % tp)
      continue;
    TpMisfit misfit = tensorParallelMisfit(tp, model);
    if (misfit == TpMisfit::None)
      why.tpFits.push_back(tp);
    if (!k.tp.allows(tp)) {
      why.excluded("tp");
      continue;
    }
    // Only plans the partitioner can realize: whole heads and equal
    // channel shares per rank, and some op split.
    if (misfit != TpMisfit::None) {
      (misfit == TpMisfit::NoSplit ? why.tpNoSplit : why.tpDivides)
          .push_back(tp);
      continue;
    }
    // Context parallelism splits sequences over powers of two up to
    // kMaxContextParallel, for models with attention to pass K/V around.
    for (unsigned cp = 1; cp <= kMaxContextParallel && cp <= N / tp;
         cp *= 2) {
      if ((N / tp) % cp || (cp > 1 && !anyRing))
        continue;
      if (!k.cp.allows(cp) || (cp > 1 && tp > 1 && k.cpAlone)) {
        why.excluded(k.cp.allows(cp) ? "cp-alone" : "cp");
        continue;
      }
      for (unsigned pp = 1; pp <= N / (tp * cp); ++pp) {
        if ((N / (tp * cp)) % pp)
          continue;
        if (!k.pp.allows(pp)) {
          why.excluded("pp");
          continue;
        }
        if (pp > n) {
          noteDegree(why.ppTooDeep, pp);
          continue;
        }
        unsigned dp = N / (tp * cp * pp);
        if (!k.dp.allows(dp)) {
          why.excluded("dp");
          continue;
        }
        if (o.globalBatch % dp) {
          ++why.dpBatch;
          noteDegree(why.dpTried, dp);
          continue;
        }
        for (unsigned ep = 1; ep <= dp; ++ep) {
          if (dp % ep || (ep > 1 && (!anyExpert || experts % ep)))
            continue;
          if (!k.ep.allows(ep) || (ep > 1 && k.epAlone && tp * cp > 1)) {
            why.excluded(k.ep.allows(ep) ? "ep-alone" : "ep");
            continue;
          }
          if (!expertSlotsSplit(o.expertSlots, tp, cp, ep)) {
            ++why.expertSlots;
            continue;
          }
          if (!expertFeaturesSplit(o.expertFeatures, tp, ep)) {
            ++why.expertFeatures;
            noteDegree(why.tpExpertFeatures, tp);
            continue;
          }
          for (unsigned sp = 0; sp <= (tp > 1 ? 1u : 0u); ++sp) {
            if ((!k.sp.allows(sp) && tp > 1) || (sp && cp > 1 && k.cpNoSp)) {
              why.excluded(!k.sp.allows(sp) && tp > 1 ? "sp" : "cp-sp");
              continue;
            }
            enumerateLayout(tp, cp, pp, dp, ep, sp, recs);
          }
        }
      }
    }
  }
}

std::vector<Shape> Searcher::shapesOf(unsigned pp, unsigned m) const {
  const Constraints &k = o.constraints;
  std::vector<Shape> shapes;
  if (pp == 1) {
    // One stage: the schedule is plain gradient accumulation.
    bool ok = k.schedules.empty();
    for (ScheduleKind s : k.schedules)
      ok |= s == ScheduleKind::OneFOneB || s == ScheduleKind::GPipe;
    if (ok && k.chunks.allows(1))
      shapes.push_back({ScheduleKind::OneFOneB, 1});
    return shapes;
  }
  for (ScheduleKind s : kinds) {
    if (isVShape(s)) {
      // Two chunks per rank; ZB-V needs pp micro-batches, DualPipe-V 2 pp.
      unsigned need = s == ScheduleKind::DualPipeV ? 2 * pp
                      : s == ScheduleKind::ZBV     ? pp
                                                   : 1;
      if (k.chunks.allows(2) && 2 * pp <= n && m >= need)
        shapes.push_back({s, 2});
      continue;
    }
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
  return shapes;
}

void Searcher::enumerateLayout(unsigned tp, unsigned cp, unsigned pp,
                               unsigned dp, unsigned ep, bool sp,
                               const std::vector<Recompute> &recs) {
  const Constraints &k = o.constraints;
  if (pp == 1 && !pins.empty()) {
    // One stage holds every layer: its replicas must all be of the pinned
    // kind (then nothing is left for the other devices; such a layout
    // only keeps the pins on a cluster of that kind alone).
    Plan one;
    one.dp = dp;
    one.tp = tp;
    one.cp = cp;
    if (!pins.allows(one, c, n)) {
      ++stats.pinPruned;
      return;
    }
  }
  unsigned perReplica = o.globalBatch / dp;
  for (unsigned mbs = 1; mbs <= perReplica; ++mbs) {
    if (perReplica % mbs)
      continue;
    if (!k.mbs.allows(mbs)) {
      why.excluded("mbs");
      continue;
    }
    // (dp, cp, mbs) with cp | mbs runs each rank's tokens exactly as
    // (dp * cp, 1, mbs / cp) does (same ranks in the gradient group, same
    // micro-batches, same memory) plus the K/V ring: dominated. Expert
    // groups differ between the two, so MoE models keep both.
    if (cp > 1 && mbs % cp == 0 && !anyExpert && k.cp.allows(1)) {
      ++stats.dominated;
      continue;
    }
    unsigned m = perReplica / mbs;
    std::vector<Shape> shapes = shapesOf(pp, m);
    if (shapes.empty())
      why.excluded("schedule, chunks");
    for (Recompute rec : recs) {
      if (rec == Recompute::Selective && !anySelective)
        continue; // the same as none for this model
      Light base{tp, pp, dp, mbs, m, 1, 0, ScheduleKind::OneFOneB, rec, 0};
      base.cp = cp;
      base.ep = ep;
      base.sp = sp;
      // The cheap bound: the busiest rank does at least the average work,
      // on the fastest device kind.
      double total = std::numeric_limits<double>::infinity();
      for (unsigned ty = 0; ty < c.devices.size(); ++ty)
        total = std::min(total, t.totalWork(ty, base.key()));
      base.cheap = m * total / pp;
      unsigned long before = kept;
      variants(base, shapes, true, [&](const Light &) { ++kept; });
      if (kept > before)
        bases.push_back(base);
    }
  }
}

template <typename Keep>
void Searcher::variants(const Light &base, ArrayRef<Shape> shapes, bool count,
                        Keep &&keep) {
  const Constraints &k = o.constraints;
  const unsigned tp = base.tp, cp = base.cp, pp = base.pp, dp = base.dp,
                 ep = base.ep;
  const Tables::Memory &mem = t.memory(base.key());
  for (unsigned zero = k.zero.min; zero <= std::min(3u, k.zero.max); ++zero) {
    if (!k.zero.allows(zero) || (zero > 0 && dp * cp == 1))
      continue;
    Light z = base;
    z.zero = zero;
    cost::MemoryConfig cfg = memoryConfig(z.shape(), o.memory);
    cost::ParamSplit all = mem.paramsOf(cost::LayerRange{0, n});
    cost::ParamSplit avg{all.dense / pp, all.expert / pp};
    double avgStatic = cost::staticMemory(avg, cfg).staticBytes();
    // Without an offload constraint, offload variants are weighed
    // where a layout does not fit without them: here when its static
    // state alone is too large, in run() when its partition is.
    bool noneAllowed =
        k.offload.empty() || llvm::is_contained(k.offload, cost::Offload{});
    for (const Shape &sh : shapes) {
      // The asynchronous schedules keep whole weight versions per
      // stage (tensor-parallel parts with tp > 1): not under context
      // parallelism, and ZeRO only up to maxZeroStage (dist-partition
      // refuses the rest); under ep-runs not with expert parallelism,
      // whose experts' gradients would sync per update.
      if (zero > maxZeroStage(sh.kind) ||
          (isAsync(sh.kind) && (cp > 1 || (k.epRuns && ep > 1)))) {
        if (count)
          ++why.asyncUnrun;
        continue;
      }
      Light x = base;
      x.chunks = sh.chunks;
      x.zero = zero;
      x.kind = sh.kind;
      if (!k.offload.empty() || avgStatic > maxLimit)
        for (const cost::Offload &off : offloadVariants(x)) {
          Light v = x;
          v.offload = off;
          cost::MemoryConfig vc = memoryConfig(v.shape(), o.memory);
          bool fits = cost::staticMemory(avg, vc).staticBytes() <= maxLimit;
          if (count) {
            ++stats.candidates;
            if (!fits)
              ++stats.memoryPruned;
          }
          if (fits)
            keep(v);
        }
      if (!noneAllowed)
        continue;
      if (count)
        ++stats.candidates;
      if (avgStatic > maxLimit) {
        if (!count)
          continue;
        ++stats.memoryPruned;
        if (avgStatic < minNeeded) {
          minNeeded = avgStatic;
          minNeededIsBound = true;
          minNeededPlan =
              formatv("dp={0},tp={1},pp={2},zero={3}", dp, tp, pp, zero).str();
          if (cp > 1)
            minNeededPlan += formatv(",cp={0}", cp).str();
          if (ep > 1)
            minNeededPlan += formatv(",ep={0}", ep).str();
        }
        continue;
      }
      keep(x);
    }
  }
}

std::vector<unsigned> Searcher::partition(const Light &x, bool memoryAware) {
  unsigned V = x.pp * x.chunks;
  if (V <= 1)
    return {};
  const bool vShape = isVShape(x.kind);
  // The replicas only matter through where stages sit: on one kind of
  // node without racks, consecutive stages a node or more apart partition
  // alike whatever dp is.
  unsigned placement = x.dp;
  if (c.devices.size() == 1 && c.groups.size() == 1 && c.nodesPerRack == 0) {
    unsigned perNode = c.groups[0].devicesPerNode;
    unsigned stride = x.tp * x.cp * x.dp;
    if (stride >= perNode && stride % perNode == 0)
      placement = 0;
  }
  auto key = std::make_tuple(x.key(), x.pp, x.chunks + (vShape ? 100 : 0),
                             placement, 0u);
  if (!memoryAware) {
    auto it = cutCache.find(key);
    if (it != cutCache.end())
      return it->second;
  }
  Plan shape = x.shape();
  // Per pipeline rank: the slowest device kind of its stage group and its
  // memory limit; per virtual stage the boundary message times to the next
  // stage and from the previous one per layer (shared between stages with
  // equal links; none between two chunks of one rank).
  std::vector<const Tables::Times *> tm(x.pp);
  std::vector<double> limit(x.pp);
  std::vector<const std::vector<double> *> outMsg(V), inMsg(V);
  std::map<std::tuple<unsigned, unsigned, unsigned>, std::vector<double>>
      msgCache;
  bool sg = o.planDefaults.scatterGather;
  std::vector<unsigned> type(x.pp);
  std::vector<std::vector<unsigned>> kinds(x.pp);
  for (unsigned r = 0; r < x.pp; ++r) {
    double worst = -1;
    limit[r] = std::numeric_limits<double>::infinity();
    kinds[r] = stageTypes(shape, r);
    for (unsigned ty : kinds[r]) {
      const Tables::Times &tt = t.times(ty, x.key());
      if (tt.work[n] > worst) {
        worst = tt.work[n];
        tm[r] = &tt;
        type[r] = ty;
      }
      limit[r] = std::min(limit[r], limitOf(ty));
    }
  }
  static const std::vector<double> none;
  auto messages = [&](unsigned from, unsigned to) -> const std::vector<double> * {
    if (from == to)
      return &none;
    unsigned a = shape.globalRank(from, 0, 0), b = shape.globalRank(to, 0, 0);
    cluster::LinkLevel level = c.levelBetween(a, b);
    cluster::LinkSpec link = c.linkBetween(a, b);
    auto k = std::make_tuple(static_cast<unsigned>(level) +
                                 (link.bandwidth < c.network.bandwidth ? 2 : 0),
                             type[from], type[to]);
    auto it = msgCache.find(k);
    if (it != msgCache.end())
      return &it->second;
    std::vector<double> v(n, 0);
    cost::GroupShape recv = tensorGroup(shape, c, to);
    for (unsigned l = 0; l + 1 < n; ++l)
      v[l] = t.message(l, x.mbs, x.tp, sg, link, recv, x.cp, x.sp);
    return &msgCache.emplace(k, std::move(v)).first->second;
  };
  auto rankOf = [&](unsigned j) { return rankOfStage(vShape, x.pp, j); };
  for (unsigned j = 0; j < V; ++j) {
    outMsg[j] = j + 1 < V ? messages(rankOf(j), rankOf(j + 1)) : &none;
    inMsg[j] = j > 0 ? messages(rankOf(j), rankOf(j - 1)) : &none;
  }
  StageMemoryCheck check;
  if (memoryAware)
    check = memoryCheck(x); // expand() has checked that some cut fits
  ++stats.partitions;
  // Per stage: its rank's work prefix sums and its message tables (null
  // where the neighbour is the same rank or there is none).
  std::vector<const double *> work(V), out(V), in(V);
  for (unsigned j = 0; j < V; ++j) {
    work[j] = tm[rankOf(j)]->work.data();
    out[j] = outMsg[j]->empty() ? nullptr : outMsg[j]->data();
    in[j] = inMsg[j]->empty() ? nullptr : inMsg[j]->data();
  }
  auto lower = [&](unsigned j, unsigned b, unsigned e) {
    return work[j][e] - work[j][b];
  };
  auto cost = [&](unsigned j, unsigned b, unsigned e) {
    double v = work[j][e] - work[j][b];
    // Boundary traffic: activation out, gradient in, both per micro-batch.
    if (e < n && out[j])
      v += out[j][e - 1];
    if (b > 0 && in[j])
      v += in[j][b - 1];
    return v;
  };
  // Asked only of stages that would improve the table (partitionTable).
  auto allowed = [&](unsigned j, unsigned b, unsigned e) {
    return (!memoryAware || check.fits(j, b, e)) &&
           pins.allows(kinds[rankOf(j)], b, e);
  };
  // Each layer's least work over the stages' device kinds, for the
  // partition's bounds: the one table itself when every rank has it.
  std::vector<const Tables::Times *> kindsUsed(tm.begin(), tm.end());
  llvm::sort(kindsUsed);
  kindsUsed.erase(llvm::unique(kindsUsed), kindsUsed.end());
  std::vector<double> leastOwn;
  const std::vector<double> *least = &kindsUsed.front()->work;
  if (kindsUsed.size() > 1) {
    leastOwn.assign(n + 1, 0);
    for (unsigned l = 0; l < n; ++l) {
      double m = std::numeric_limits<double>::infinity();
      for (const Tables::Times *k : kindsUsed)
        m = std::min(m, k->work[l + 1] - k->work[l]);
      leastOwn[l + 1] = leastOwn[l] + m;
    }
    least = &leastOwn;
  }
  std::vector<unsigned> cuts =
      partitionLayersWith(n, V, cost, lower, allowed, nullptr, least);
  if (!memoryAware)
    cutCache[key] = cuts;
  return cuts;
}

StageMemoryCheck Searcher::memoryCheck(const Light &x) {
  StageMemoryCheck k;
  k.mem = &t.memory(x.key());
  k.chunks = x.chunks;
  k.mbs = x.mbs;
  for (unsigned j = 0; j < x.pp * x.chunks; ++j)
    k.rank.push_back(rankOfStage(isVShape(x.kind), x.pp, j));
  Plan shape = x.shape();
  cost::MemoryConfig cfg = memoryConfig(shape, o.memory);
  k.perParam = cost::staticMemory(1, cfg).staticBytes();
  k.perExpert = cost::staticMemory(cost::ParamSplit{0, 1}, cfg).staticBytes();
  k.limit.assign(x.pp, std::numeric_limits<double>::infinity());
  k.held.resize(x.pp);
  for (unsigned r = 0; r < x.pp; ++r) {
    for (unsigned ty : stageTypes(shape, r))
      k.limit[r] = std::min(k.limit[r], limitOf(ty));
    // Offloaded activations leave the device (Tables::memoryEstimate).
    k.held[r] =
        x.offload.activations
            ? 0
            : inFlight(x.kind, r, x.pp, x.chunks, x.m) * x.mbs / x.chunks;
  }
  return k;
}

std::vector<std::vector<unsigned>>
distopt::search::detail::replicaShares(Tables &t, const Plan &p, const cluster::Cluster &c,
                      unsigned n) {
  std::vector<std::vector<unsigned>> out;
  for (unsigned r = 0; r < p.pp; ++r) {
    std::vector<double> mbTime(c.devices.size(), 0);
    for (unsigned ty = 0; ty < c.devices.size(); ++ty)
      for (unsigned ch = 0; ch < p.chunks; ++ch) {
        auto [b, e] = p.stageLayers(p.virtualStage(r, ch), n);
        const Tables::Times &tt = t.times(ty, keyOf(p));
        mbTime[ty] += tt.work[e] - tt.work[b];
      }
    out.push_back(replicaMicrobatches(p, c, r, mbTime));
  }
  return out;
}

bool Searcher::expand(const Light &x, Expanded &out, bool *overMemory) {
  if (overMemory)
    *overMemory = false;
  TableKey layout = x.key();
  layout.rec = Recompute::None; // variants of one layout differ in it
  auto group = std::make_tuple(layout, x.pp, x.dp,
                               static_cast<unsigned>(x.kind) * 100 + x.chunks);
  // More recomputation, sharding or offload never makes a step faster.
  for (const Fitting &f : fitting[group])
    if (f.zero <= x.zero && f.rec <= static_cast<unsigned>(x.rec) &&
        x.offload.includes(f.offload)) {
      ++stats.dominated;
      return false;
    }
  // Memory ladders: ZB-H1, V-Half and V-Min trade bubble for activation
  // memory against ZB-H2 and ZB-V; they are weighed only where the
  // hungrier schedule of their family does not fit.
  auto rung = std::make_tuple(x.key(), x.pp, x.dp,
                              x.zero * 8 + offloadIndex(x.offload));
  auto rungFits = [&](ScheduleKind k) {
    return ladder[rung] & (1u << static_cast<unsigned>(k));
  };
  if ((x.kind == ScheduleKind::ZBH1 && rungFits(ScheduleKind::ZBH2)) ||
      ((x.kind == ScheduleKind::VHalf || x.kind == ScheduleKind::VMin) &&
       rungFits(ScheduleKind::ZBV)) ||
      (x.kind == ScheduleKind::VMin && rungFits(ScheduleKind::VHalf))) {
    ++stats.dominated;
    return false;
  }
  Plan p = o.planDefaults;
  if (c.devices.size() > 1)
    p.unevenBatch = true;
  x.apply(p);
  p.globalBatch = o.globalBatch;
  std::vector<unsigned> versions(x.pp, 1);
  for (unsigned r = 0; r < x.pp; ++r)
    versions[r] =
        schedule::weightVersionsOf(x.kind, x.pp, r, x.m, p.pipemareDecay < 1);
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
  // No contiguous cut fits memory: pruned before any partition is costed
  // (the estimate of an even split is what the error message reports).
  const unsigned V = x.pp * x.chunks;
  // Plans that break a pin are dropped before memory is weighed, so that a
  // memory error names a plan that keeps the pins.
  if (!pins.empty() && ((V > 1 && partition(x, false).empty()) ||
                        (V <= 1 && !pins.allows(p, c, n)))) {
    ++stats.pinPruned;
    return false;
  }
  if (V > 1 && !memoryCheck(x).anyFits(n, V)) {
    ++stats.memoryPruned;
    if (overMemory)
      *overMemory = true;
    if (!pins.empty())
      p.cuts = partition(x, false);
    for (unsigned i = 1; i < V && pins.empty(); ++i)
      p.cuts.push_back(std::max(i, std::min(n - V + i, i * n / V)));
    double even = 0;
    fits(even);
    if (minNeededIsBound || even < minNeeded) {
      minNeeded = even;
      minNeededIsBound = false;
      minNeededPlan = p.str();
    }
    return false;
  }
  p.cuts = partition(x, false);
  if (V > 1 && p.cuts.empty())
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
      if (overMemory)
        *overMemory = true;
      if (minNeededIsBound || worst < minNeeded) {
        minNeeded = worst;
        minNeededIsBound = false;
        minNeededPlan = p.str();
      }
      return false;
    }
  }
  PipelineCosts costs = buildPipelineCosts(p, model, c, cm, versions, o.memory,
                                           &t.layerTimes, CostParts::Times);
  fitting[group].push_back({x.zero, static_cast<unsigned>(x.rec), x.offload});
  ladder[rung] |= 1u << static_cast<unsigned>(x.kind);
  out.plan = std::move(p);
  out.lb =
      iterationLowerBound(costs, x.kind, out.plan.overlapGradSync);
  return true;
}

Error Searcher::noPlanError() const {
  if (!pins.empty() && stats.pinPruned &&
      minNeeded == std::numeric_limits<double>::infinity()) {
    std::string order;
    for (const cluster::NodeGroup &g : c.groups)
      order += (order.empty() ? "" : ", ") + c.devices[g.deviceIndex].name;
    return searchError(formatv(
        "no plan keeps {0} on cluster '{1}': every layout weighed runs a "
        "stage that holds a pinned layer on other devices ({2} dropped; "
        "stage 0 runs on device 0; the node groups are {3}, in device "
        "order). Pin to the kind that comes first (list the edge device's "
        "node group first in the cluster YAML), pin fewer layers so that "
        "another kind can hold the rest, or plan for the pinned kind "
        "alone (--dist-devices)",
        pins.describe(), c.name, stats.pinPruned + stats.memoryPruned, order));
  }
  if (stats.candidates == 0) {
    if (why.dpBatch) {
      unsigned dp = why.dpTried.empty() ? 1 : why.dpTried.front();
      unsigned next = (o.globalBatch / dp + 1) * dp;
      return searchError(formatv(
          "no plan: global batch {0} is not divisible by the data-parallel "
          "degree (dp = {1}) of any allowed layout of {2} devices; use a "
          "batch that is a multiple of {3} (e.g. {4}){5}",
          o.globalBatch, degreeList(why.dpTried), c.numDevices(), dp, next,
          why.constraint ? " or relax the constraints, which exclude other "
                           "layouts"
                         : ""));
    }
    std::string detail;
    if (why.constraint)
      detail += formatv(" {0} excluded by the constraints on {1};",
                        layouts(why.constraint),
                        llvm::join(why.constraintKeys, ", "));
    if (!why.ppTooDeep.empty())
      detail += formatv(" pp = {0} exceed{1} the model's {2} layers (a "
                        "stage holds at least one: allow pp <= {2});",
                        degreeList(why.ppTooDeep),
                        why.ppTooDeep.size() == 1 ? "s" : "", n);
    if (std::string note =
            tpMisfitNote(model, why.tpDivides, why.tpNoSplit, why.tpFits);
        !note.empty())
      detail += " " + note + ";";
    if (why.expertSlots)
      detail += formatv(" {0} each expert's {1} capacity slots "
                        "(top-k x sequence / experts) unevenly: the programs "
                        "need cp, and at ep > 1 cp x tp, to divide them "
                        "(allow tp=1 and cp=1, or ep=1);",
                        layouts(why.expertSlots, "split"), o.expertSlots);
    if (why.expertFeatures)
      detail += formatv(" {0} the experts' {1} hidden features "
                        "unevenly over tp = {2} at ep > 1, which the "
                        "programs refuse (allow a tp that divides them, or "
                        "ep=1);",
                        layouts(why.expertFeatures, "split"), o.expertFeatures,
                        degreeList(why.tpExpertFeatures));
    if (why.asyncUnrun)
      detail += formatv(" {0} an asynchronous schedule with "
                        "ZeRO-3, cp > 1 or (under ep-runs) ep > 1, which "
                        "is not run (its weight versions are whole per "
                        "stage; allow zero=2 or lower, cp=1 and ep=1);",
                        layouts(why.asyncUnrun, "pair"));
    return searchError(
        "no plan satisfies the constraints on cluster '" + c.name + "' (" +
        Twine(c.numDevices()) + " devices):" + detail +
        " tp must divide the devices per node and dp*tp*cp*pp must equal "
        "the device count; relax --dist-search");
  }
  double limit = 0;
  for (unsigned ty = 0; ty < c.devices.size(); ++ty)
    limit = std::max(limit, limitOf(ty));
  unsigned devices = static_cast<unsigned>(
      std::ceil(c.numDevices() * minNeeded / std::max(limit, 1.0)));
  return searchError(formatv(
      "no plan fits in memory: the model needs {0} {1} per device "
      "({2}) with {3} devices, but a device has {4}; use devices with at "
      "least {1} (--dist-memory-limit) or about {5} devices{6}{7}",
      minNeededIsBound ? "at least" : "", humanBytes(minNeeded), minNeededPlan,
      c.numDevices(), humanBytes(limit), std::max(devices, c.numDevices() + 1),
      o.constraints.recompute.empty() ? "" : ", or allow recompute=full",
      pins.empty() ? ""
                   : "; the pins keep " + pins.describe() +
                         " (pin fewer layers if those devices run out)"));
}

/// Orders plans by iteration time; equal times (within rounding) prefer the
/// simpler plan: fewer stages, less TP, fewer chunks, less recomputation
/// and sharding, fewer micro-batches.
static bool better(const Candidate &a, const Candidate &b) {
  double ta = a.sim.result.iterationTime, tb = b.sim.result.iterationTime;
  if (std::fabs(ta - tb) > 1e-9 * std::max(ta, tb))
    return ta < tb;
  const Plan &p = a.sim.plan, &q = b.sim.plan;
  return std::make_tuple(p.replicated(), p.pp, p.tp, p.cp, p.ep, p.chunks,
                         static_cast<unsigned>(p.recompute), p.zero,
                         p.offload.size(), p.sp, p.numMicrobatches) <
         std::make_tuple(q.replicated(), q.pp, q.tp, q.cp, q.ep, q.chunks,
                         static_cast<unsigned>(q.recompute), q.zero,
                         q.offload.size(), q.sp, q.numMicrobatches);
}

static bool sameLayout(const Plan &a, const Plan &b) {
  return a.dp == b.dp && a.tp == b.tp && a.pp == b.pp && a.cp == b.cp &&
         a.ep == b.ep && a.replicas == b.replicas &&
         a.schedule == b.schedule && a.chunks == b.chunks;
}

Expected<SearchResult> Searcher::run() {
  auto t0 = std::chrono::steady_clock::now();
  std::clock_t c0 = std::clock();
  enumerate();
  std::vector<ReplicatedCandidate> replicated;
  replicatedCandidates(model, c, cm, o, t, pins, stats, replicated);
  if (kept == 0 && replicated.empty())
    return noPlanError();
  // The candidates by cheap bound, a base's variants built when its bound
  // comes up: the bound stops the search after a few percent of them.
  RunsInOrder cands(
      std::move(bases),
      [](const Light &a, const Light &b) { return a.cheap < b.cheap; },
      cheaperFirst,
      [&](const Light &base, std::vector<Light> &out) {
        variants(base, shapesOf(base.pp, base.m), false,
                 [&](const Light &x) { out.push_back(x); });
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
  unsigned long steps = 0;
  while (true) {
    if (o.progress && (++steps & 255) == 0)
      o.progress(double(cands.count()) / kept, stats.candidates);
    const Light *nextCand = cands.peek();
    double nextCheap =
        nextCand ? nextCand->cheap : std::numeric_limits<double>::infinity();
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
      so.input = o.input;
      ++stats.simulated;
      // The schedule from the cache: the simulator checks that it is the
      // plan's (kind, pp, chunks, micro-batches, replicas).
      const Schedule *given = nullptr;
      if (o.simulationCaches) {
        so.layerTimes = &t.layerTimes;
        so.givenVerified = true;
        Expected<const Schedule *> s = schedules.get(e.plan);
        if (!s) {
          consumeError(s.takeError());
          continue;
        }
        given = *s;
      }
      Expected<sim::PlanSimulation> ps = sim::simulatePlan(
          model, c, e.plan, o.globalBatch, cm, so, o.memory, given);
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
      for (const DeviceCost &dc : ps->costs.devices)
        fits &= dc.placement.fits; // the offloaded state fits the tiers
      if (!fits) {
        ++stats.memoryPruned;
        continue;
      }
      Candidate cand;
      cand.lowerBound = e.lb;
      cand.sim = std::move(*ps);
      cand.breakdown = breakdownOf(cand.sim);
      cand.replicaMicrobatches = replicaShares(t, cand.sim.plan, c, n);
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
    if (!nextCand || nextCheap >= threshold())
      break;
    Expanded e;
    const Light x = *nextCand;
    cands.pop();
    bool overMemory = false;
    if (expand(x, e, &overMemory)) {
      if (e.lb < threshold())
        heap.push(std::move(e));
      else
        ++stats.boundPruned;
    } else if (overMemory && !x.offload.any() &&
               o.constraints.offload.empty() && x.rec == lastRecompute) {
      // Recomputation does not make the layout fit: weigh its offload
      // variants now (they have the same cheap bound). Weighing them at
      // every recomputation level made a 175B search on 1024 GPUs 4.5x
      // slower (a memory-aware partition per variant) for the rare plan
      // where offloading beats recomputing.
      for (const cost::Offload &off : offloadVariants(x)) {
        Light v = x;
        v.offload = off;
        ++stats.candidates;
        if (!expand(v, e))
          continue;
        if (e.lb < threshold())
          heap.push(std::move(e));
        else
          ++stats.boundPruned;
      }
    }
  }
  // What the unexplored candidates could still reach.
  double openBound = std::numeric_limits<double>::infinity();
  if (!heap.empty())
    openBound = heap.top().lb;
  if (const Light *left = cands.peek())
    openBound = std::min(openBound, left->cheap);
  stats.boundPruned += heap.size() + (kept - cands.count());
  if (top.empty()) {
    if (minNeeded == std::numeric_limits<double>::infinity() &&
        !stats.pinPruned)
      return searchError("no plan could be simulated for cluster '" + c.name +
                         "'; check the model and the constraints");
    return noPlanError();
  }
  SearchResult res;
  res.mode = Mode::Train;
  {
    // The winner is proven optimal when nothing left can beat it, even if
    // the simulation cap cut the search for runners-up.
    double best = top.front().sim.result.iterationTime;
    stats.gap = best > 0 && openBound < best ? (best - openBound) / best : 0;
    stats.exact = stats.gap <= 0;
  }
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

bool distopt::search::expertFeaturesSplit(int64_t features, unsigned tp,
                                          unsigned ep) {
  return features == 0 || ep <= 1 || features % tp == 0;
}

bool distopt::search::expertSlotsSplit(int64_t slots, unsigned tp, unsigned cp,
                                       unsigned ep) {
  const int64_t parts = int64_t(cp) * (ep > 1 ? tp : 1);
  return slots == 0 || slots % parts == 0;
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
  Expected<PinCheck> pins =
      PinCheck::resolve(o.constraints.pins, model, c, o.mode);
  if (!pins)
    return pins.takeError();
  if (o.mode == Mode::Infer)
    return detail::searchInference(model, c, cm, o);
  Expected<SearchResult> res = Searcher(model, c, cm, o, *pins).run();
  if (res)
    res->pinned = pinnedSides(res->best, o.constraints.pins, model, c);
  return res;
}
