//===- Plan.cpp - Parallel plans and per-stage costs ------------*- C++ -*-===//

#include "lib/Schedule/Plan.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
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

static const char *kScheduleNames[] = {
    "gpipe", "1f1b", "interleaved", "zb-h1", "pipedream",  "pipedream-2bw",
    "zb-h2", "zb-v", "v-half",      "v-min", "dualpipe-v", "pipemare"};

StringRef scheduleName(ScheduleKind k) {
  return kScheduleNames[static_cast<unsigned>(k)];
}

bool parseScheduleKind(StringRef s, ScheduleKind &out) {
  std::string l = s.lower();
  if (l == "dapple" || l == "pipedream-flush")
    l = "1f1b";
  if (l == "zbh1" || l == "zb1p")
    l = "zb-h1";
  if (l == "zbh2" || l == "zb2p")
    l = "zb-h2";
  if (l == "zbv" || l == "v-zb")
    l = "zb-v";
  if (l == "vhalf")
    l = "v-half";
  if (l == "vmin")
    l = "v-min";
  if (l == "dualpipev")
    l = "dualpipe-v";
  if (l == "2bw")
    l = "pipedream-2bw";
  for (unsigned i = 0; i < std::size(kScheduleNames); ++i)
    if (l == kScheduleNames[i]) {
      out = static_cast<ScheduleKind>(i);
      return true;
    }
  return false;
}

StringRef scheduleNameList() {
  return "gpipe, 1f1b, interleaved, zb-h1, zb-h2, zb-v, v-half, v-min, "
         "dualpipe-v, pipedream, pipedream-2bw or pipemare";
}

StringRef modeName(Mode m) { return m == Mode::Infer ? "infer" : "train"; }

StringRef objectiveName(InferObjective o) {
  return o == InferObjective::Latency ? "latency" : "throughput";
}

bool isAsync(ScheduleKind k) {
  return k == ScheduleKind::PipeDream || k == ScheduleKind::PipeDream2BW ||
         k == ScheduleKind::PipeMare;
}

bool updatesEveryMicrobatch(ScheduleKind k) {
  return k == ScheduleKind::PipeDream || k == ScheduleKind::PipeMare;
}

unsigned maxZeroStage(ScheduleKind k) { return isAsync(k) ? 2 : 3; }

unsigned pipelineDelay(unsigned pp, unsigned r, unsigned m) {
  return r + 1 >= pp ? 0 : std::min(pp - r - 1, m);
}

unsigned weightVersionsOf(ScheduleKind k, unsigned pp, unsigned r, unsigned m,
                          bool pipemareCorrection) {
  switch (k) {
  case ScheduleKind::PipeDream:
    return std::min(pp - r, m);
  case ScheduleKind::PipeDream2BW:
    return 2;
  case ScheduleKind::PipeMare:
    return pipemareCorrection && pipelineDelay(pp, r, m) > 0 ? 2 : 1;
  default:
    return 1;
  }
}

bool splitsBackward(ScheduleKind k) {
  return k == ScheduleKind::ZBH1 || k == ScheduleKind::ZBH2 || isVShape(k);
}

bool isPostValidated(ScheduleKind k) {
  return k == ScheduleKind::ZBH2 || isVShape(k);
}

bool supportsReplicas(ScheduleKind k) {
  return k == ScheduleKind::GPipe || k == ScheduleKind::OneFOneB || isAsync(k);
}

std::pair<unsigned, unsigned> Plan::stageLayers(unsigned vs,
                                                unsigned numLayers) const {
  // Before finalizePlan (no cuts) every stage spans the whole model.
  unsigned b = vs == 0 || vs > cuts.size() ? 0 : cuts[vs - 1];
  unsigned e = vs >= cuts.size() ? numLayers : cuts[vs];
  return {b, e};
}

std::string Plan::str() const {
  std::string s = formatv("dp={0},tp={1},pp={2},mbs={3},schedule={4},"
                          "chunks={5},recompute={6},zero={7}",
                          dp, tp, pp, mbs, scheduleName(schedule), chunks,
                          recomputeName(recompute), zero)
                      .str();
  if (offload.any())
    s += ",offload=" + offload.str();
  if (cp != 1)
    s += formatv(",cp={0}", cp).str();
  if (ep != 1)
    s += formatv(",ep={0}", ep).str();
  if (sp)
    s += ",sp=1";
  if (tpOverlap)
    s += ",tp_overlap=1";
  if (expertImbalance != 1)
    s += formatv(",expert_imbalance={0}", expertImbalance).str();
  if (pipemareWarmup)
    s += formatv(",pipemare_warmup={0}", pipemareWarmup).str();
  if (pipemareDecay != 0.1)
    s += formatv(",pipemare_decay={0}", format("%g", pipemareDecay)).str();
  if (!scatterGather)
    s += ",sg=0";
  if (!overlapP2P)
    s += ",p2p_overlap=0";
  if (!overlapGradSync)
    s += ",grad_overlap=0";
  if (overlapParamGather)
    s += ",ag_overlap=1";
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
    // A switch is 0 or 1: "sp=2" is a typo (for a degree, perhaps), not on.
    auto flag = [&](bool &out) -> Error {
      if (value != "0" && value != "1")
        return planError(spec, "'" + key + "=" + value + "' must be 0 or 1");
      out = value == "1";
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
    else if (key == "cp")
      e = number(p.cp, 1);
    else if (key == "ep")
      e = number(p.ep, 1);
    else if (key == "sp" || key == "tp_overlap")
      e = flag(key == "sp" ? p.sp : p.tpOverlap);
    else if (key == "expert_imbalance") {
      if (value.getAsDouble(p.expertImbalance) || !(p.expertImbalance >= 1) ||
          p.expertImbalance > 1000)
        return planError(spec, "'expert_imbalance=" + value +
                                   "' must be a number >= 1 (the busiest "
                                   "expert rank's tokens over the mean)");
    } else if (key == "pipemare_warmup") {
      e = number(p.pipemareWarmup, 0);
    } else if (key == "pipemare_decay") {
      if (value.getAsDouble(p.pipemareDecay) || !(p.pipemareDecay >= 0) ||
          p.pipemareDecay > 1)
        return planError(spec, "'pipemare_decay=" + value +
                                   "' must be a number in [0, 1] (the "
                                   "moving average's decay over a stage's "
                                   "delay; 1 turns the correction off)");
    } else if (key == "chunks")
      e = number(p.chunks, 1);
    else if (key == "zero") {
      e = number(p.zero, 0);
      if (!e && p.zero > 3)
        return planError(spec, "zero must be 0, 1, 2 or 3");
    } else if (key == "sg")
      e = flag(p.scatterGather);
    else if (key == "uneven")
      e = flag(p.unevenBatch);
    else if (key == "p2p_overlap" || key == "grad_overlap" ||
             key == "ag_overlap")
      e = flag(key == "p2p_overlap"    ? p.overlapP2P
               : key == "grad_overlap" ? p.overlapGradSync
                                       : p.overlapParamGather);
    else if (key == "schedule") {
      if (!parseScheduleKind(value, p.schedule))
        return planError(spec, "unknown schedule '" + value + "'; use " +
                                   scheduleNameList());
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
    } else if (key == "offload") {
      Expected<Offload> o = parseOffload(value);
      if (!o)
        return planError(spec, toString(o.takeError()));
      p.offload = *o;
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
      e = planError(spec,
                    "unknown key '" + key +
                        "'; known: dp, tp, pp, cp, ep, sp, tp_overlap, mbs, "
                        "schedule, chunks, recompute, zero, offload, sg, "
                        "p2p_overlap, grad_overlap, ag_overlap, uneven, "
                        "expert_imbalance, pipemare_warmup, pipemare_decay, "
                        "stages, replicas");
    }
    if (e)
      return std::move(e);
  }
  if ((seen.count("pipemare_warmup") || seen.count("pipemare_decay")) &&
      p.schedule != ScheduleKind::PipeMare)
    return planError(spec, "pipemare_warmup and pipemare_decay tune "
                           "schedule=pipemare, but the schedule is " +
                               scheduleName(p.schedule) +
                               "; add schedule=pipemare or drop them");
  // V-shaped schedules run two chunks per rank, the second folded back.
  p.setSchedule(p.schedule);
  if (p.vShape && !seen.count("chunks"))
    p.chunks = 2;
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
    if (p.cp != 1 || p.ep != 1)
      return planError(spec, "replicas needs cp=1 and ep=1: context and "
                             "expert parallelism over uneven replica groups "
                             "are not modelled");
  }
  if (p.dp % p.ep != 0)
    return planError(spec, formatv("ep={0} must divide dp={1}: the expert-"
                                   "parallel group is ep of the data-parallel "
                                   "replicas",
                                   p.ep, p.dp)
                               .str());
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
  // A group spanning racks crosses the oversubscribed uplinks.
  for (unsigned r : ranks)
    if (c.rackOf(r) != c.rackOf(ranks.front())) {
      g.inter.bandwidth /= c.rackOversubscription;
      break;
    }
  return g;
}

GroupShape tensorGroup(const Plan &p, const Cluster &c, unsigned s) {
  std::vector<unsigned> ranks;
  for (unsigned t = 0; t < p.tp; ++t)
    ranks.push_back(p.globalRank(s, 0, t));
  return shapeOf(c, ranks);
}

GroupShape contextGroup(const Plan &p, const Cluster &c, unsigned s) {
  std::vector<unsigned> ranks;
  for (unsigned k = 0; k < p.cp; ++k)
    ranks.push_back(p.globalRank(s, 0, 0, k));
  return shapeOf(c, ranks);
}

GroupShape dataGroup(const Plan &p, const Cluster &c, unsigned s) {
  std::vector<unsigned> ranks;
  for (unsigned d = 0; d < p.replicasOf(s); ++d)
    for (unsigned k = 0; k < p.cp; ++k)
      ranks.push_back(p.globalRank(s, d, 0, k));
  return shapeOf(c, ranks);
}

// The first of RankLayout::expertGroups / expertDataGroups, built alone
// (the search costs stages of 2048-device plans, whose every group the
// lists would build: dp / ep * cp * tp of them).
GroupShape expertGroup(const Plan &p, const Cluster &c, unsigned s) {
  return shapeOf(c, p.expertGroup(s, p.ep, 0, 0, 0));
}

GroupShape expertDataGroup(const Plan &p, const Cluster &c, unsigned s) {
  return shapeOf(c, p.expertDataGroup(s, p.ep, 0, 0));
}

ExecConfig execConfig(const Plan &p, const Cluster &c, unsigned s) {
  ExecConfig x;
  x.tp = tensorGroup(p, c, s);
  x.cp = contextGroup(p, c, s);
  x.ep = expertGroup(p, c, s);
  x.sp = p.sp && p.tp > 1;
  x.tpOverlap = p.tpOverlap && p.tp > 1;
  x.mbs = p.mbs;
  x.recompute = p.recompute;
  x.expertImbalance = p.expertImbalance;
  return x;
}

MemoryConfig memoryConfig(const Plan &p, const MemoryConfig &base) {
  MemoryConfig m = base;
  m.dp = p.dp;
  m.tp = p.tp;
  m.cp = p.cp;
  m.ep = p.ep;
  m.sp = p.sp && p.tp > 1;
  m.zero = p.zero;
  m.recompute = p.recompute;
  m.offload = p.offload;
  m.expertImbalance = p.expertImbalance;
  return m;
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
    type[d] = c.groupOf(p.globalRank(s, d, 0)).deviceIndex;
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
  // One device kind: every group's (the search asks per stage and plan).
  if (c.devices.size() == 1 && p.replicasOf(s) > 0)
    return {c.groupOf(p.globalRank(s, 0, 0)).deviceIndex};
  std::set<unsigned> types;
  for (unsigned d = 0; d < p.replicasOf(s); ++d)
    types.insert(c.groupOf(p.globalRank(s, d, 0)).deviceIndex);
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
  if (!supportsReplicas(p.schedule))
    return planError(spec, "replicas works with schedule gpipe, 1f1b, "
                           "pipedream, pipedream-2bw or pipemare, not " +
                               scheduleName(p.schedule));
  // A stage's replicas run different micro-batches at different times:
  // there is no micro-batch they could each shard a gradient of, nor a
  // forward or backward all of them could gather a weight for.
  if (p.zero == 2)
    return planError(spec,
                     "ZeRO-2 with per-stage replicas would reduce-scatter "
                     "each micro-batch's gradient over the stage's "
                     "replicas, but a stage's replicas run different "
                     "micro-batches (replica d those with m mod R_s = "
                     "d), so no two hold a gradient of the same one; "
                     "use zero=1 (the optimizer state sharded over each "
                     "stage's replicas) or zero=0");
  if (p.zero >= 3)
    return planError(spec, "ZeRO-3 with per-stage replicas would all-gather "
                           "each weight over the stage's replicas before "
                           "every forward and backward, but a stage's "
                           "replicas run different micro-batches at different "
                           "times; use zero=1 (the optimizer state sharded "
                           "over each stage's replicas) or zero=0");
  if (p.unevenBatch)
    return planError(spec, "uneven=1 does not apply to replicas (micro-batches "
                           "go round-robin); drop uneven");
  return Error::success();
}

/// Whether tensor parallelism of degree \p tp splits some op of \p model:
/// an op the analysis splits whose region's divisor tp divides
/// (OpDesc::tpMode).
static bool splitsSomeOp(unsigned tp, const ModelDesc &model) {
  return tp <= 1 || llvm::any_of(model.layers, [&](const cost::LayerDesc &l) {
           return llvm::any_of(l.ops, [&](const cost::OpDesc &op) {
             return op.tpMode(tp) == cost::TpMode::Split;
           });
         });
}

TpMisfit tensorParallelMisfit(unsigned tp, const ModelDesc &model) {
  if (model.attentionHeads != 0 && model.attentionHeads % tp != 0)
    return TpMisfit::Heads;
  if (model.tpChannels != 0 && model.tpChannels % tp != 0)
    return TpMisfit::Channels;
  return splitsSomeOp(tp, model) ? TpMisfit::None : TpMisfit::NoSplit;
}

/// The degrees > 1 that divide a split op's region (OpDesc::tpDivisor) of
/// \p model: those that split some op, when no op splits at every degree.
static std::set<int64_t> splittingDegrees(const ModelDesc &model) {
  std::set<int64_t> divisors, splitting;
  for (const cost::LayerDesc &l : model.layers)
    for (const cost::OpDesc &op : l.ops)
      if (op.tp == cost::TpMode::Split)
        divisors.insert(op.tpDivisor);
  for (int64_t n : divisors)
    for (int64_t d = 2; d <= n; ++d)
      if (n % d == 0)
        splitting.insert(d);
  return splitting;
}

/// The degrees that fit \p model (tensorParallelFits), as "tp among 1, 2,
/// 4", or "tp = 1" when no other does: the divisors of its head count,
/// else of its channel gcd, else those that split some op, that pass every
/// check, so that a plan the error points to is not refused for another
/// cause.
static std::string fittingDegrees(const ModelDesc &model) {
  std::set<int64_t> candidates;
  if (int64_t n = model.attentionHeads ? int64_t(model.attentionHeads)
                                       : model.tpChannels) {
    for (int64_t d = 2; d <= n; ++d)
      if (n % d == 0)
        candidates.insert(d);
  } else {
    candidates = splittingDegrees(model);
  }
  std::string degrees = "1";
  for (int64_t d : candidates)
    if (tensorParallelFits(static_cast<unsigned>(d), model))
      degrees += ", " + std::to_string(d);
  return degrees == "1" ? "tp = 1" : "tp among " + degrees;
}

Error checkTensorParallel(const Plan &p, const ModelDesc &model) {
  TpMisfit misfit = tensorParallelMisfit(p.tp, model);
  if (misfit == TpMisfit::None)
    return Error::success();
  if (misfit == TpMisfit::Heads)
    return planError(
        p.str(), formatv("tp = {0} does not divide the model's attention "
                         "head count {1} (the gcd of its query and "
                         "key/value heads); tensor parallelism gives each "
                         "rank whole heads: choose {2}",
                         p.tp, model.attentionHeads, fittingDegrees(model)));
  if (misfit == TpMisfit::Channels)
    return planError(
        p.str(),
        formatv("tp = {0} does not divide the channel counts tensor "
                "parallelism splits (their gcd is {1}: convolution channels, "
                "groups of grouped convolutions); each rank holds an equal "
                "share of them: choose {2}",
                p.tp, model.tpChannels, fittingDegrees(model)));
  // No op splits: every region's divisor is one tp does not divide.
  return planError(
      p.str(),
      formatv("tp = {0} splits no op of the model: each tensor-parallel "
              "region splits only when tp divides its columns (a fused "
              "projection's per block; an LM head's vocabulary), and every "
              "region would run whole on every rank; {1}",
              p.tp,
              splittingDegrees(model).empty()
                  ? std::string("no tp > 1 splits one (a softmax over the "
                                "columns, or no region at all): plan tp = 1")
                  : "choose " + fittingDegrees(model)));
}

Error checkCuts(const Plan &p, unsigned numLayers) {
  if (p.cuts.empty())
    return Error::success();
  std::string spec = p.str();
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

double activationsInFlight(ScheduleKind kind, unsigned r, unsigned pp,
                           unsigned chunks, unsigned m) {
  double both = 2.0 * m; // every micro-batch through both chunks
  switch (kind) {
  case ScheduleKind::GPipe:
    return m;
  case ScheduleKind::Interleaved:
    // Megatron-LM's warm-up count plus the micro-batch in its backward.
    return std::min<double>(double(m) * chunks,
                            (pp - r - 1) * 2.0 + (chunks - 1) * pp + 1);
  case ScheduleKind::ZBH2:
    return std::min<double>(m, 2.0 * (pp - r) - 1);
  case ScheduleKind::ZBV:
    return std::min(both, 2.0 * pp);
  case ScheduleKind::VHalf:
    return std::min(both, 2.0 * ((pp + 2) / 2));
  case ScheduleKind::VMin:
    return std::min(both, 2.0 * ((pp + 4) / 3));
  case ScheduleKind::DualPipeV:
    return std::min(both, 2.0 * pp + 1);
  default:
    return std::min<double>(m, pp - r);
  }
}

Error checkOffload(const Plan &p, const Cluster &c) {
  if (!p.offload.any())
    return Error::success();
  std::string spec = p.str();
  std::string what = "offload=" + p.offload.str();
  if (p.mode != Mode::Train)
    return planError(spec, what + " moves training state off the device; "
                                  "inference plans keep it (drop offload)");
  if (isAsync(p.schedule))
    return planError(spec, what + " with the asynchronous schedule " +
                               scheduleName(p.schedule) +
                               " is not modelled (its stashed weight versions "
                               "stay on the device); use a synchronous one");
  if (p.replicated())
    return planError(spec, what + " with per-stage replicas is not modelled; "
                                  "drop replicas or offload");
  if (p.dp * p.cp > 1 && p.zero < 2)
    return planError(
        spec, formatv("{0} with dp*cp = {1} needs zero=2 or 3: ZeRO-Offload "
                      "keeps each rank's ZeRO-2 partition of the optimizer "
                      "state and gradients on the host",
                      what, p.dp * p.cp)
                  .str());
  for (const cluster::NodeGroup &g : c.groups) {
    const cluster::NodeTiers &t = g.tiers;
    if (!t.any() || ((p.offload.optimizer || p.offload.params) &&
                     !t[cluster::Tier::Host].present()))
      return planError(
          spec, formatv("{0} needs the host memory of the nodes, but node "
                        "group of '{1}' in cluster '{2}' has {3}; add "
                        "tiers: {{host: {{capacity_GB: ..., bandwidth_GBps: "
                        "..., memory_bandwidth_GBps: ...}} to its nodes in "
                        "the cluster YAML (docs/cost-model.md, \"Storage "
                        "tiers\")",
                        what, c.devices[g.deviceIndex].name, c.name,
                        t.any() ? "no host tier" : "no storage tiers")
                    .str());
  }
  return Error::success();
}

Error finalizePlan(Plan &p, const ModelDesc &model, const Cluster &c,
                   unsigned globalBatch, const CostModel &cm) {
  p.setSchedule(p.schedule);
  std::string spec = p.str();
  unsigned numLayers = model.layers.size();
  if (p.replicated()) {
    if (Error e = checkReplicas(p, spec, c))
      return e;
  } else if (p.numDevices() > c.numDevices())
    return planError(
        spec, formatv("{0} = {1} devices, but cluster '{2}' has only {3}; "
                      "choose degrees whose product is at most {3} (the plan "
                      "runs on the first {4} devices, the others stay idle)",
                      p.cp == 1 ? formatv("dp*tp*pp = {0}*{1}*{2}", p.dp,
                                          p.tp, p.pp)
                                      .str()
                                : formatv("dp*tp*cp*pp = {0}*{1}*{2}*{3}",
                                          p.dp, p.tp, p.cp, p.pp)
                                      .str(),
                      p.numDevices(), c.name, c.numDevices(),
                      p.cp == 1 ? "dp*tp*pp" : "dp*tp*cp*pp"));
  if (p.ep > 1) {
    bool experts = false;
    for (const LayerDesc &l : model.layers)
      for (const OpDesc &op : l.ops)
        experts |= op.expert;
    if (!experts)
      return planError(spec, formatv("ep={0} but model '{1}' has no expert "
                                     "(mixture-of-experts) ops; use ep=1",
                                     p.ep, model.name));
    // Every rank of the expert-parallel group holds E / ep whole experts.
    for (const LayerDesc &l : model.layers)
      for (const OpDesc &op : l.ops)
        if (op.expert && op.kernels > 0 && op.kernels % p.ep != 0)
          return planError(
              spec, formatv("ep={0} does not divide the {1} routed experts "
                            "of op '{2}' in layer '{3}'; choose an ep that "
                            "divides the expert count",
                            p.ep, op.kernels, op.name, l.name));
    if (p.dp % p.ep != 0)
      return planError(spec, formatv("ep={0} must divide dp={1}", p.ep, p.dp));
  }
  if (Error e = checkTensorParallel(p, model))
    return e;
  if (Error e = checkOffload(p, c))
    return e;
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
  if (isVShape(p.schedule)) {
    if (p.chunks != 2)
      return planError(spec, scheduleName(p.schedule) +
                                 " runs two chunks per rank (a V); write "
                                 "chunks=2");
    if (p.schedule == ScheduleKind::DualPipeV &&
        p.numMicrobatches < 2 * p.pp)
      return planError(spec, formatv("dualpipe-v needs at least 2*pp = {0} "
                                     "micro-batches, has {1}; raise the "
                                     "batch or lower mbs",
                                     2 * p.pp, p.numMicrobatches));
  } else if (p.chunks > 1 && p.schedule != ScheduleKind::Interleaved) {
    return planError(spec, "chunks > 1 needs schedule=interleaved (or a "
                           "V-shaped schedule with chunks=2)");
  }
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
  if (!p.cuts.empty())
    return checkCuts(p, numLayers);
  // Balance by F+B+W time on each stage's device; slower devices get a
  // proportionally larger scale so they receive fewer layers.
  std::vector<double> layerCost(numLayers), scale(p.numVirtualStages());
  std::vector<double> totalByType(c.devices.size(), 0);
  std::vector<std::vector<double>> costByType(c.devices.size());
  ExecConfig x = execConfig(p, c, 0);
  for (unsigned ty = 0; ty < c.devices.size(); ++ty) {
    for (unsigned l = 0; l < numLayers; ++l) {
      RangeTimes t = cm.rangeTimes(model, l, l + 1, c.devices[ty], x);
      costByType[ty].push_back(t.fwd + t.bwdInput + t.bwdWeight);
      totalByType[ty] += costByType[ty].back();
    }
  }
  unsigned ref = c.groupOf(0).deviceIndex;
  layerCost = costByType[ref];
  for (unsigned vs = 0; vs < p.numVirtualStages(); ++vs) {
    double worst = 0;
    for (unsigned ty : stageDeviceTypes(p, c, p.rankOf(vs)))
      worst = std::max(worst, totalByType[ty] / totalByType[ref]);
    scale[vs] = worst;
    if (p.replicated()) // r_s replicas share a stage's micro-batches
      scale[vs] /= p.replicasOf(p.rankOf(vs));
  }
  p.cuts = balancedCuts(layerCost, scale);
  return Error::success();
}

} // namespace distopt::schedule
