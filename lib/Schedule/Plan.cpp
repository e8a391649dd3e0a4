//===- Plan.cpp - Parallel plans and per-stage costs ------------*- C++ -*-===//

#include "lib/Schedule/Plan.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <set>

using namespace llvm;
using namespace distopt::cost;
using distopt::cluster::Cluster;
using distopt::cluster::LinkLevel;

namespace distopt::schedule {

static const char *kScheduleNames[] = {"gpipe", "1f1b",      "interleaved",
                                       "zb-h1", "pipedream", "pipedream-2bw"};

StringRef scheduleName(ScheduleKind k) {
  return kScheduleNames[static_cast<unsigned>(k)];
}

bool parseScheduleKind(StringRef s, ScheduleKind &out) {
  std::string l = s.lower();
  if (l == "dapple" || l == "pipedream-flush")
    l = "1f1b";
  if (l == "zbh1")
    l = "zb-h1";
  if (l == "2bw")
    l = "pipedream-2bw";
  for (unsigned i = 0; i < std::size(kScheduleNames); ++i)
    if (l == kScheduleNames[i]) {
      out = static_cast<ScheduleKind>(i);
      return true;
    }
  return false;
}

bool isAsync(ScheduleKind k) {
  return k == ScheduleKind::PipeDream || k == ScheduleKind::PipeDream2BW;
}

std::pair<unsigned, unsigned> Plan::stageLayers(unsigned vs,
                                                unsigned numLayers) const {
  // Before finalizePlan (no cuts) every stage spans the whole model.
  unsigned b = vs == 0 || vs > cuts.size() ? 0 : cuts[vs - 1];
  unsigned e = vs >= cuts.size() ? numLayers : cuts[vs];
  return {b, e};
}

unsigned Plan::firstSlot(unsigned s) const {
  if (replicas.empty())
    return dp * s;
  unsigned slot = 0;
  for (unsigned i = 0; i < s && i < replicas.size(); ++i)
    slot += replicas[i];
  return slot;
}

uint64_t Plan::numSlots() const {
  if (replicas.empty())
    return static_cast<uint64_t>(dp) * pp;
  uint64_t n = 0;
  for (unsigned r : replicas)
    n += r;
  return n;
}

std::string Plan::str() const {
  std::string s = formatv("dp={0},tp={1},pp={2},mbs={3},schedule={4},"
                          "chunks={5},recompute={6},zero={7}",
                          dp, tp, pp, mbs, scheduleName(schedule), chunks,
                          recomputeName(recompute), zero)
                      .str();
  if (!scatterGather)
    s += ",sg=0";
  if (!overlapP2P)
    s += ",p2p_overlap=0";
  if (!overlapGradSync)
    s += ",grad_overlap=0";
  if (unevenBatch)
    s += ",uneven=1";
  if (!cuts.empty()) {
    s += ",stages=";
    for (unsigned i = 0; i < cuts.size(); ++i)
      s += (i ? "/" : "") + std::to_string(cuts[i]);
  }
  if (!replicas.empty()) {
    s += ",replicas=";
    for (unsigned i = 0; i < replicas.size(); ++i)
      s += (i ? "/" : "") + std::to_string(replicas[i]);
  }
  return s;
}

static Error planError(StringRef spec, const Twine &msg) {
  return createStringError(inconvertibleErrorCode(),
                           ("plan '" + spec + "': " + msg).str());
}

Expected<Plan> parsePlan(StringRef spec) {
  Plan p;
  SmallVector<StringRef> items;
  spec.split(items, ',', -1, /*KeepEmpty=*/false);
  std::set<std::string> seen;
  for (StringRef item : items) {
    auto [key, value] = item.trim().split('=');
    key = key.trim();
    value = value.trim();
    if (value.empty())
      return planError(spec, "'" + item + "' has no value; write key=value");
    if (!seen.insert(key.str()).second)
      return planError(spec, "'" + key + "' is given twice");
    auto number = [&](unsigned &out, unsigned min) -> Error {
      if (value.getAsInteger(10, out) || out < min || out > 1000000)
        return planError(spec, "'" + key + "=" + value +
                                   "' must be an integer >= " + Twine(min) +
                                   " (and at most 1000000)");
      return Error::success();
    };
    Error e = Error::success();
    if (key == "dp")
      e = number(p.dp, 1);
    else if (key == "tp")
      e = number(p.tp, 1);
    else if (key == "pp")
      e = number(p.pp, 1);
    else if (key == "mbs")
      e = number(p.mbs, 1);
    else if (key == "chunks")
      e = number(p.chunks, 1);
    else if (key == "zero") {
      e = number(p.zero, 0);
      if (!e && p.zero > 3)
        return planError(spec, "zero must be 0, 1, 2 or 3");
    } else if (key == "sg") {
      unsigned v = 1;
      e = number(v, 0);
      p.scatterGather = v != 0;
    } else if (key == "uneven") {
      unsigned v = 0;
      e = number(v, 0);
      p.unevenBatch = v != 0;
    } else if (key == "p2p_overlap" || key == "grad_overlap") {
      unsigned v = 1;
      e = number(v, 0);
      (key == "p2p_overlap" ? p.overlapP2P : p.overlapGradSync) = v != 0;
    } else if (key == "schedule") {
      if (!parseScheduleKind(value, p.schedule))
        return planError(spec, "unknown schedule '" + value +
                                   "'; use gpipe, 1f1b, interleaved, zb-h1, "
                                   "pipedream or pipedream-2bw");
    } else if (key == "recompute") {
      if (value == "none" || value == "0")
        p.recompute = Recompute::None;
      else if (value == "selective")
        p.recompute = Recompute::Selective;
      else if (value == "full" || value == "1")
        p.recompute = Recompute::Full;
      else
        return planError(spec, "unknown recompute '" + value +
                                   "'; use none, selective or full");
    } else if (key == "stages") {
      SmallVector<StringRef> cuts;
      value.split(cuts, '/');
      for (StringRef c : cuts) {
        unsigned v;
        if (c.trim().getAsInteger(10, v))
          return planError(spec, "stage boundary '" + c +
                                     "' is not a layer index; write "
                                     "stages=L1/L2/...");
        p.cuts.push_back(v);
      }
    } else if (key == "replicas") {
      SmallVector<StringRef> counts;
      value.split(counts, '/');
      for (StringRef c : counts) {
        unsigned v;
        if (c.trim().getAsInteger(10, v) || v == 0 || v > 32767)
          return planError(spec, "replica count '" + c +
                                     "' must be an integer from 1 to 32767; "
                                     "write replicas=R0/R1/... (one count "
                                     "per pipeline stage)");
        p.replicas.push_back(v);
      }
    } else {
      e = planError(spec, "unknown key '" + key +
                              "'; known: dp, tp, pp, mbs, schedule, chunks, "
                              "recompute, zero, sg, p2p_overlap, grad_overlap, uneven, "
                              "stages, replicas");
    }
    if (e)
      return std::move(e);
  }
  if (!p.replicas.empty()) {
    if (!seen.count("pp"))
      p.pp = p.replicas.size();
    if (p.replicas.size() != p.pp)
      return planError(spec, formatv("'replicas' lists {0} counts but pp={1}; "
                                     "give one replica count per pipeline "
                                     "stage",
                                     p.replicas.size(), p.pp)
                                 .str());
    if (p.dp != 1)
      return planError(spec, "dp and replicas both given; replicas sets the "
                             "data-parallel degree of each stage, so drop dp "
                             "(or write dp=1)");
    if (p.chunks != 1)
      return planError(spec, "replicas needs chunks=1: a replicated stage "
                             "cannot also be an interleaved chunk");
  }
  return p;
}

std::vector<unsigned> balancedCuts(const std::vector<double> &cost,
                                   const std::vector<double> &scale) {
  unsigned n = cost.size(), parts = scale.size();
  if (parts <= 1 || n == 0)
    return {};
  std::vector<double> prefix(n + 1, 0);
  for (unsigned i = 0; i < n; ++i)
    prefix[i + 1] = prefix[i] + cost[i];
  const double inf = std::numeric_limits<double>::infinity();
  // best[j][i]: min over partitions of layers [0, i) into j+1 parts of the
  // largest part; every part keeps at least one layer.
  std::vector<std::vector<double>> best(parts, std::vector<double>(n + 1, inf));
  std::vector<std::vector<unsigned>> from(parts,
                                          std::vector<unsigned>(n + 1, 0));
  for (unsigned i = 1; i <= n; ++i)
    best[0][i] = prefix[i] * scale[0];
  for (unsigned j = 1; j < parts; ++j)
    for (unsigned i = j + 1; i <= n; ++i)
      for (unsigned k = j; k < i; ++k) {
        double v = std::max(best[j - 1][k], (prefix[i] - prefix[k]) * scale[j]);
        if (v < best[j][i]) {
          best[j][i] = v;
          from[j][i] = k;
        }
      }
  std::vector<unsigned> cuts(parts - 1);
  unsigned i = n;
  for (unsigned j = parts - 1; j >= 1; --j) {
    i = from[j][i];
    cuts[j - 1] = i;
  }
  return cuts;
}

unsigned globalRank(const Plan &plan, unsigned s, unsigned d, unsigned t) {
  return t + plan.tp * (d + plan.firstSlot(s));
}

GroupShape shapeOf(const Cluster &c, const std::vector<unsigned> &ranks) {
  GroupShape g;
  g.size = ranks.size();
  unsigned node = c.nodeOf(ranks.front());
  g.perNode = 0;
  for (unsigned r : ranks)
    g.perNode += c.nodeOf(r) == node;
  g.intra = c.link(LinkLevel::IntraNode, ranks.front());
  g.inter = c.network;
  if (g.inter.bandwidth <= 0)
    g.inter = g.intra;
  return g;
}

GroupShape tensorGroup(const Plan &p, const Cluster &c, unsigned s) {
  std::vector<unsigned> ranks;
  for (unsigned t = 0; t < p.tp; ++t)
    ranks.push_back(globalRank(p, s, 0, t));
  return shapeOf(c, ranks);
}

GroupShape dataGroup(const Plan &p, const Cluster &c, unsigned s) {
  std::vector<unsigned> ranks;
  for (unsigned d = 0; d < p.replicasOf(s); ++d)
    ranks.push_back(globalRank(p, s, d, 0));
  return shapeOf(c, ranks);
}

std::vector<unsigned> replicaMicrobatches(const Plan &p, const Cluster &c,
                                          unsigned s,
                                          const std::vector<double> &mbTime) {
  if (p.replicated()) {
    // Round-robin: replica k of stage s runs micro-batches m = k (mod r_s).
    unsigned r = p.replicasOf(s);
    std::vector<unsigned> out(r, 0);
    for (unsigned k = 0; k < r; ++k)
      out[k] = p.numMicrobatches / r + (k < p.numMicrobatches % r ? 1 : 0);
    return out;
  }
  std::vector<unsigned> type(p.dp);
  bool mixed = false;
  for (unsigned d = 0; d < p.dp; ++d) {
    type[d] = c.groupOf(globalRank(p, s, d, 0)).deviceIndex;
    mixed |= type[d] != type[0];
  }
  std::vector<unsigned> out(p.dp, p.numMicrobatches);
  if (!p.unevenBatch || !mixed)
    return out;
  // Water-filling: the smallest finishing time T at which the replicas can
  // do all dp * m micro-batches (replica d does floor(T / t_d) of them) is
  // one of the values k * t_d; take candidates in increasing order.
  unsigned long total = static_cast<unsigned long>(p.dp) * p.numMicrobatches;
  auto capacity = [&](double T) {
    unsigned long n = 0;
    for (unsigned d = 0; d < p.dp; ++d)
      n += static_cast<unsigned long>(T / mbTime[type[d]] * (1 + 1e-12));
    return n;
  };
  double lo = 0, hi = 0;
  for (unsigned d = 0; d < p.dp; ++d)
    hi = std::max(hi, mbTime[type[d]] * p.numMicrobatches);
  for (unsigned it = 0; it < 100 && hi - lo > 1e-12 * hi; ++it) {
    double mid = (lo + hi) / 2;
    (capacity(mid) >= total ? hi : lo) = mid;
  }
  unsigned long left = total;
  for (unsigned d = 0; d < p.dp; ++d) {
    unsigned long k = std::min<unsigned long>(
        left, static_cast<unsigned long>(hi / mbTime[type[d]] * (1 + 1e-12)));
    out[d] = static_cast<unsigned>(k);
    left -= k;
  }
  // Rounding leftovers go to the replicas that finish first.
  while (left > 0) {
    unsigned best = 0;
    for (unsigned d = 1; d < p.dp; ++d)
      if ((out[d] + 1) * mbTime[type[d]] < (out[best] + 1) * mbTime[type[best]])
        best = d;
    ++out[best];
    --left;
  }
  return out;
}

std::vector<unsigned> stageDeviceTypes(const Plan &p, const Cluster &c,
                                       unsigned s) {
  std::set<unsigned> types;
  for (unsigned d = 0; d < p.replicasOf(s); ++d)
    types.insert(c.groupOf(globalRank(p, s, d, 0)).deviceIndex);
  return {types.begin(), types.end()};
}

/// The checks only replicated plans need.
static Error checkReplicas(const Plan &p, StringRef spec, const Cluster &c) {
  std::string sum;
  for (unsigned r : p.replicas)
    sum += (sum.empty() ? "" : "+") + std::to_string(r);
  if (p.replicas.size() != p.pp)
    return planError(spec, formatv("'replicas' lists {0} counts but pp={1}; "
                                   "give one per pipeline stage",
                                   p.replicas.size(), p.pp));
  if (p.numDevices() > c.numDevices())
    return planError(spec, formatv("tp*sum(replicas) = {0}*({1}) = {2} "
                                   "devices, but cluster '{3}' has {4}; "
                                   "choose replica counts that add up to at "
                                   "most {5}",
                                   p.tp, sum, p.numDevices(), c.name,
                                   c.numDevices(), c.numDevices() / p.tp));
  if (p.dp != 1 || p.chunks != 1)
    return planError(spec, "replicas needs dp=1 and chunks=1");
  if (p.schedule == ScheduleKind::Interleaved ||
      p.schedule == ScheduleKind::ZBH1)
    return planError(spec, "replicas works with schedule gpipe, 1f1b, "
                           "pipedream or pipedream-2bw, not " +
                               scheduleName(p.schedule));
  if (p.zero != 0)
    return planError(spec, "ZeRO over per-stage replicas is not modelled; "
                           "use zero=0 with replicas");
  if (p.unevenBatch)
    return planError(spec, "uneven=1 does not apply to replicas (micro-batches "
                           "go round-robin); drop uneven");
  return Error::success();
}

Error finalizePlan(Plan &p, const ModelDesc &model, const Cluster &c,
                   unsigned globalBatch, const CostModel &cm) {
  std::string spec = p.str();
  unsigned numLayers = model.layers.size();
  if (p.replicated()) {
    if (Error e = checkReplicas(p, spec, c))
      return e;
  } else if (p.numDevices() > c.numDevices())
    return planError(spec, formatv("dp*tp*pp = {0}*{1}*{2} = {3} devices, but "
                                   "cluster '{4}' has only {5}; choose degrees "
                                   "whose product is at most {5} (the plan "
                                   "runs on the first dp*tp*pp devices, the "
                                   "others stay idle)",
                                   p.dp, p.tp, p.pp, p.numDevices(), c.name,
                                   c.numDevices()));
  if (globalBatch == 0 || globalBatch % (p.dp * p.mbs) != 0)
    return planError(spec, formatv("global batch {0} is not divisible by "
                                   "dp*mbs = {1}; change the batch, dp or mbs",
                                   globalBatch, p.dp * p.mbs));
  p.globalBatch = globalBatch;
  p.numMicrobatches = globalBatch / (p.dp * p.mbs);
  for (unsigned s = 0; s < p.replicas.size(); ++s)
    if (p.replicas[s] > p.numMicrobatches)
      return planError(spec, formatv("stage {0} has {1} replicas but there "
                                     "are only {2} micro-batches (batch {3} / "
                                     "mbs {4}); every replica needs one: "
                                     "raise the batch or lower mbs",
                                     s, p.replicas[s], p.numMicrobatches,
                                     globalBatch, p.mbs));
  if (p.chunks > 1 && p.schedule != ScheduleKind::Interleaved)
    return planError(spec, "chunks > 1 needs schedule=interleaved");
  if (p.schedule == ScheduleKind::Interleaved) {
    if (p.chunks < 2)
      return planError(spec, "schedule=interleaved needs chunks >= 2");
    if (p.numMicrobatches % p.pp != 0)
      return planError(spec, formatv("interleaved 1F1B needs the number of "
                                     "micro-batches ({0}) to be a multiple of "
                                     "pp ({1}); change the batch or mbs",
                                     p.numMicrobatches, p.pp));
  }
  if (p.numVirtualStages() > numLayers)
    return planError(spec, formatv("pp*chunks = {0} stages but the model has "
                                   "only {1} layers",
                                   p.numVirtualStages(), numLayers));
  if (!p.cuts.empty()) {
    if (p.cuts.size() + 1 != p.numVirtualStages())
      return planError(spec, formatv("'stages' lists {0} boundaries; pp*chunks "
                                     "= {1} stages need {2}",
                                     p.cuts.size(), p.numVirtualStages(),
                                     p.numVirtualStages() - 1));
    unsigned prev = 0;
    for (unsigned cut : p.cuts) {
      if (cut <= prev || cut >= numLayers)
        return planError(spec, formatv("stage boundary {0} must be greater "
                                       "than {1} and less than {2} (the layer "
                                       "count); every stage needs a layer",
                                       cut, prev, numLayers));
      prev = cut;
    }
    return Error::success();
  }
  // Balance by F+B+W time on each stage's device; slower devices get a
  // proportionally larger scale so they receive fewer layers.
  std::vector<double> layerCost(numLayers), scale(p.numVirtualStages());
  std::vector<double> totalByType(c.devices.size(), 0);
  std::vector<std::vector<double>> costByType(c.devices.size());
  GroupShape tpg = tensorGroup(p, c, 0);
  for (unsigned ty = 0; ty < c.devices.size(); ++ty) {
    for (unsigned l = 0; l < numLayers; ++l) {
      RangeTimes t = cm.rangeTimes(model, l, l + 1, c.devices[ty], tpg, p.mbs,
                                   p.recompute);
      costByType[ty].push_back(t.fwd + t.bwdInput + t.bwdWeight);
      totalByType[ty] += costByType[ty].back();
    }
  }
  unsigned ref = c.groupOf(0).deviceIndex;
  layerCost = costByType[ref];
  for (unsigned vs = 0; vs < p.numVirtualStages(); ++vs) {
    double worst = 0;
    for (unsigned ty : stageDeviceTypes(p, c, vs % p.pp))
      worst = std::max(worst, totalByType[ty] / totalByType[ref]);
    scale[vs] = worst;
    if (p.replicated()) // r_s replicas share a stage's micro-batches
      scale[vs] /= p.replicasOf(vs % p.pp);
  }
  p.cuts = balancedCuts(layerCost, scale);
  return Error::success();
}

} // namespace distopt::schedule
