//===- Tables.cpp - Per-layer time and memory tables ------------*- C++ -*-===//
//
// Part of DistOpt. Prefix sums of per-layer times and memory, cached per
// device kind, TP degree, micro-batch size and recomputation, so that a
// stage's cost is two lookups; and the per-rank memory estimate the search
// prunes with.
//
//===----------------------------------------------------------------------===//

#include "lib/Search/SearchImpl.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace llvm;
using namespace distopt;
using namespace distopt::schedule;
using cost::Recompute;

namespace distopt::search::detail {

std::string tpDivisorNote(const cost::ModelDesc &model) {
  std::string heads = model.attentionHeads
                          ? "the model's attention head count " +
                                std::to_string(model.attentionHeads)
                          : "";
  std::string channels = model.tpChannels
                             ? "the model's convolution channel count gcd " +
                                   std::to_string(model.tpChannels)
                             : "";
  if (!heads.empty() && !channels.empty())
    return heads + " and " + channels;
  return heads + channels;
}

std::string degreeList(ArrayRef<unsigned> degrees) {
  std::string list;
  for (unsigned d : degrees)
    list += (list.empty() ? "" : ", ") + std::to_string(d);
  return list;
}

std::string tpMisfitNote(const cost::ModelDesc &model,
                         ArrayRef<unsigned> divides, ArrayRef<unsigned> noSplit,
                         ArrayRef<unsigned> fit) {
  if (divides.empty() && noSplit.empty())
    return "";
  std::string note;
  if (!divides.empty())
    note += formatv("tp = {0} {1} not divide {2} (each rank holds {3})",
                    degreeList(divides), divides.size() == 1 ? "does" : "do",
                    tpDivisorNote(model),
                    !model.tpChannels ? "whole heads"
                    : !model.attentionHeads
                        ? "an equal share of the split channels"
                        : "whole heads and an equal share of the split "
                          "channels");
  if (!noSplit.empty())
    note += formatv("{0}tp = {1} split{2} no op of the model (a "
                    "tensor-parallel region splits only when tp divides its "
                    "columns: a fused projection's per block, an LM head's "
                    "vocabulary; every region would run whole on every rank)",
                    note.empty() ? "" : "; ", degreeList(noSplit),
                    noSplit.size() == 1 ? "s" : "");
  return note + formatv("; allow {0}{1} (the degrees the cluster's nodes "
                        "take that fit the model)",
                        fit.size() == 1 ? "tp = " : "tp among ",
                        degreeList(fit))
                    .str();
}

std::string humanBytes(double bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  unsigned u = 0;
  while (bytes >= 1024 && u + 1 < std::size(units)) {
    bytes /= 1024;
    ++u;
  }
  return formatv("{0:F1} {1}", bytes, units[u]).str();
}

Tables::Tables(const cost::ModelDesc &model, const cluster::Cluster &c,
               const cost::CostModel &cm, const cost::MemoryConfig &mem,
               double expertImbalance)
    : model(model), c(c), cm(cm), mem(mem), expertImbalance(expertImbalance),
      n(model.layers.size()), layerTimes(model, cm) {
  // Key: the boundary before the layer's block, the classes of the
  // block's layers (which carry their boundaries), the layer's place.
  std::map<std::vector<double>, unsigned> mems;
  for (unsigned l = 0; l < n; ++l) {
    unsigned bb = model.blockBegin(l), be = model.blockEnd(l);
    std::vector<double> key{bb ? model.layers[bb - 1].boundaryBytes : -1,
                            double(l - bb)};
    for (unsigned k = bb; k < be; ++k)
      key.push_back(layerTimes.classOf(k));
    memClass.push_back(mems.emplace(std::move(key), l).first->second);
  }
}

cost::GroupShape Tables::tpShape(unsigned type, unsigned tp) const {
  cost::GroupShape g;
  g.size = tp;
  g.perNode = tp;
  for (const cluster::NodeGroup &ng : c.groups)
    if (ng.deviceIndex == type) {
      g.intra = ng.intraNode;
      break;
    }
  g.inter = c.network.bandwidth > 0 ? c.network : g.intra;
  return g;
}

cost::ExecConfig Tables::exec(unsigned type, const TableKey &k) const {
  cost::ExecConfig x;
  x.tp = tpShape(type, k.tp);
  unsigned perNode = 1;
  for (const cluster::NodeGroup &ng : c.groups)
    if (ng.deviceIndex == type) {
      perNode = ng.devicesPerNode;
      break;
    }
  auto spread = [&](unsigned size, unsigned stride) {
    cost::GroupShape g = x.tp;
    g.size = size;
    g.perNode = std::max(1u, std::min(size, perNode / std::max(1u, stride)));
    return g;
  };
  x.cp = spread(k.cp, k.tp);
  x.ep = spread(k.ep, k.tp * k.cp);
  x.sp = k.sp && k.tp > 1;
  x.mbs = k.mbs;
  x.recompute = k.rec;
  x.expertImbalance = expertImbalance;
  return x;
}

const Tables::Times &Tables::times(unsigned type, unsigned tp, unsigned mbs,
                                   Recompute rec) {
  TableKey k;
  k.tp = tp;
  k.mbs = mbs;
  k.rec = rec;
  return times(type, k);
}

const Tables::Times &Tables::times(unsigned type, const TableKey &k) {
  auto key = std::make_pair(type, k);
  auto it = timeCache.find(key);
  if (it != timeCache.end())
    return it->second;
  Times t;
  t.work.assign(n + 1, 0);
  t.fwd.assign(n + 1, 0);
  layerTimes.forEachLayer(0, n, c.devices[type], exec(type, k),
                          [&](unsigned l, const cost::RangeTimes &r) {
                            t.work[l + 1] =
                                t.work[l] + r.fwd + r.bwdInput + r.bwdWeight;
                            t.fwd[l + 1] = t.fwd[l] + r.fwd;
                          });
  return timeCache.emplace(key, std::move(t)).first->second;
}

double Tables::totalWork(unsigned type, const TableKey &k) {
  auto key = std::make_pair(type, k);
  auto it = timeCache.find(key);
  if (it != timeCache.end())
    return it->second.work[n];
  auto [total, added] = totalCache.try_emplace(key, 0.0);
  if (added)
    layerTimes.forEachLayer(0, n, c.devices[type], exec(type, k),
                            [&](unsigned, const cost::RangeTimes &r) {
                              total->second = total->second + r.fwd +
                                              r.bwdInput + r.bwdWeight;
                            });
  return total->second;
}

const Tables::Memory &Tables::memory(unsigned tp, Recompute rec) {
  TableKey k;
  k.tp = tp;
  k.rec = rec;
  return memory(k);
}

const Tables::Memory &Tables::memory(const TableKey &key0) {
  TableKey key = key0;
  key.mbs = 1;
  if (lastMemory && lastMemoryKey.tie() == key.tie())
    return *lastMemory;
  lastMemoryKey = key;
  auto it = memCache.find(key);
  if (it != memCache.end())
    return *(lastMemory = &it->second);
  Memory m;
  m.params.assign(n + 1, 0);
  m.expertParams.assign(n + 1, 0);
  m.act.assign(n + 1, 0);
  m.stash.assign(n + 1, 0);
  m.work.assign(n, 0);
  cost::MemoryConfig cfg = mem;
  cfg.tp = key.tp;
  cfg.cp = key.cp;
  cfg.ep = key.ep;
  cfg.sp = key.sp && key.tp > 1;
  cfg.expertImbalance = expertImbalance;
  cfg.recompute = key.rec;
  m.firstAct.assign(n + 1, 0);
  m.headWork.assign(n + 1, 0);
  m.blockEnd.resize(n + 1);
  m.blockEnd[n] = n;
  m.model = &model;
  m.cfg = cfg;
  struct PerLayer {
    cost::ParamSplit params;
    double act = 0, stash = 0, work = 0, firstAct = 0, headWork = 0;
  };
  std::vector<PerLayer> per(n);
  bool blocks = key.rec == Recompute::Full;
  for (unsigned l = 0; l < n; ++l) {
    PerLayer &x = per[memClass[l]];
    // A layer inside a checkpointed block: what it adds to a range holding
    // the block's layers before it, and what a range starting at it holds.
    unsigned bb = blocks ? model.blockBegin(l) : l;
    m.blockEnd[l] = bb < l ? model.blockEnd(l) : l;
    if (memClass[l] == l) {
      x.params = cost::paramSplit(model, l, l + 1, key.tp, key.ep);
      x.act = cost::activationBytes(model, l, l + 1, 1, cfg);
      x.stash = cost::weightGradStashBytes(model, l, l + 1, 1, cfg);
      x.work = cost::backwardWorkingBytes(model, l, l + 1, 1, cfg);
      if (bb < l) {
        x.firstAct = x.act;
        x.act = cost::activationBytes(model, bb, l + 1, 1, cfg) -
                cost::activationBytes(model, bb, l, 1, cfg);
        x.firstAct -= x.act;
        x.headWork = cost::backwardWorkingBytes(model, l, m.blockEnd[l], 1,
                                                cfg);
        x.work = cost::backwardWorkingBytes(model, bb, l + 1, 1, cfg);
      }
    }
    m.firstAct[l] = x.firstAct;
    m.headWork[l] = x.headWork;
    for (const cost::OpDesc &op : model.layers[l].ops)
      if (op.tiedLayer >= 0 && op.tiedLayer != int(l))
        m.ties.push_back(
            {unsigned(op.tiedLayer), l, cost::paramSplit(op, key.tp, key.ep)});
    m.params[l + 1] = m.params[l] + x.params.dense;
    m.expertParams[l + 1] = m.expertParams[l] + x.params.expert;
    m.act[l + 1] = m.act[l] + x.act;
    m.stash[l + 1] = m.stash[l] + x.stash;
    m.work[l] = x.work;
  }
  m.maxWork.push_back(m.work);
  for (unsigned k = 1; (1u << k) <= n; ++k) {
    const std::vector<double> &prev = m.maxWork.back();
    std::vector<double> row(n - (1u << k) + 1);
    for (unsigned i = 0; i < row.size(); ++i)
      row[i] = std::max(prev[i], prev[i + (1u << (k - 1))]);
    m.maxWork.push_back(std::move(row));
  }
  return *(lastMemory = &memCache.emplace(key, std::move(m)).first->second);
}

cost::ParamSplit
Tables::Memory::paramsOf(ArrayRef<cost::LayerRange> ranges) const {
  cost::ParamSplit n;
  for (const cost::LayerRange &r : ranges) {
    n.dense += params[r.end] - params[r.begin];
    n.expert += expertParams[r.end] - expertParams[r.begin];
  }
  for (const Tie &t : ties)
    if (cost::holds(ranges, t.owner) && cost::holds(ranges, t.user)) {
      n.dense -= t.params.dense;
      n.expert -= t.params.expert;
    }
  return n;
}

double Tables::Memory::workMax(unsigned b, unsigned e) const {
  if (e <= b)
    return 0;
  unsigned k = 31 - __builtin_clz(e - b);
  return std::max(maxWork[k][b], maxWork[k][e - (1u << k)]);
}

double Tables::Memory::workOf(unsigned b, unsigned e) const {
  if (e <= b || blockEnd[b] <= b)
    return workMax(b, e);
  // The range starts inside a block: its part of the block first.
  if (e < blockEnd[b])
    return cost::backwardWorkingBytes(*model, b, e, 1, cfg);
  return std::max(headWork[b], workMax(blockEnd[b], e));
}

double Tables::message(unsigned layer, unsigned mbs, unsigned tp, bool sg,
                       const cluster::LinkSpec &link,
                       const cost::GroupShape &receiver, unsigned cp,
                       bool sp) const {
  return cost::boundaryMessage(model.layers[layer], mbs, tp, cp, sg, sp)
      .time(link, receiver);
}

/// In-flight micro-batch count of rank \p r (activations held at once), in
/// units of one chunk's activations. The V-shaped counts are the
/// generators' own peaks (VScheduleTest checks the published ones).
double inFlight(ScheduleKind kind, unsigned r, unsigned pp, unsigned chunks,
                unsigned m) {
  return schedule::activationsInFlight(kind, r, pp, chunks, m);
}

double stashesHeld(ScheduleKind kind, unsigned r, unsigned pp, unsigned m) {
  // ZB-H1 forces a W once pp are pending, ZB-H2 once 2 pp are.
  if (kind == ScheduleKind::ZBH2)
    return std::min<double>(m, 2.0 * pp + 1);
  return 0;
}

TableKey keyOf(const Plan &p) {
  TableKey k;
  k.tp = p.tp;
  k.cp = p.cp;
  k.ep = p.ep;
  k.sp = p.sp && p.tp > 1;
  k.mbs = p.mbs;
  k.rec = p.recompute;
  return k;
}

double Tables::memoryEstimate(const Plan &p, unsigned r,
                              unsigned weightVersions) {
  const Memory &m = memory(keyOf(p));
  cost::MemoryConfig cfg = schedule::memoryConfig(p, mem);
  cfg.weightVersions = weightVersions;
  SmallVector<cost::LayerRange> chunks;
  double act = 0, stash = 0, work = 0;
  for (unsigned ch = 0; ch < p.chunks; ++ch) {
    auto [b, e] = p.stageLayers(p.virtualStage(r, ch), n);
    chunks.push_back({b, e});
    act += m.actOf(b, e);
    stash = std::max(stash, m.stash[e] - m.stash[b]);
    work = std::max(work, m.workOf(b, e));
  }
  act /= p.chunks;
  double k = inFlight(p.schedule, r, p.pp, p.chunks, p.numMicrobatches);
  double held = k * act;
  if (p.schedule == ScheduleKind::ZBH1 || isVShape(p.schedule))
    held = k * std::max(act, stash);
  // Offloaded activations leave the device after each layer's forward
  // (the prefetch window of a layer or two is not counted: an estimate
  // below the simulated peak only delays the pruning to the simulation).
  if (p.offload.activations)
    held = p.schedule == ScheduleKind::ZBH1 || isVShape(p.schedule) ? k * stash
                                                                    : 0;
  held += stashesHeld(p.schedule, r, p.pp, p.numMicrobatches) * stash;
  return cost::staticMemory(m.paramsOf(chunks), cfg).staticBytes() +
         p.mbs * (held + work);
}

} // namespace distopt::search::detail
