//===- Tables.cpp - Per-layer time and memory tables ------------*- C++ -*-===//
//
// Part of DistOpt. Prefix sums of per-layer times and memory, cached per
// device kind, TP degree, micro-batch size and recomputation, so that a
// stage's cost is two lookups; and the per-rank memory estimate the search
// prunes with.
//
//===----------------------------------------------------------------------===//

#include "lib/Search/SearchImpl.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace llvm;
using namespace distopt;
using namespace distopt::schedule;
using cost::Recompute;

namespace distopt::search::detail {

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
               const cost::CostModel &cm, const cost::MemoryConfig &mem)
    : model(model), c(c), cm(cm), mem(mem), n(model.layers.size()) {}

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

const Tables::Times &Tables::times(unsigned type, unsigned tp, unsigned mbs,
                                   Recompute rec) {
  auto key = std::make_tuple(type, tp, mbs, static_cast<unsigned>(rec));
  auto it = timeCache.find(key);
  if (it != timeCache.end())
    return it->second;
  Times t;
  t.work.assign(n + 1, 0);
  t.fwd.assign(n + 1, 0);
  cost::GroupShape g = tpShape(type, tp);
  for (unsigned l = 0; l < n; ++l) {
    cost::RangeTimes r =
        cm.rangeTimes(model, l, l + 1, c.devices[type], g, mbs, rec);
    t.work[l + 1] = t.work[l] + r.fwd + r.bwdInput + r.bwdWeight;
    t.fwd[l + 1] = t.fwd[l] + r.fwd;
  }
  return timeCache.emplace(key, std::move(t)).first->second;
}

const Tables::Memory &Tables::memory(unsigned tp, Recompute rec) {
  auto key = std::make_pair(tp, static_cast<unsigned>(rec));
  auto it = memCache.find(key);
  if (it != memCache.end())
    return it->second;
  Memory m;
  m.params.assign(n + 1, 0);
  m.act.assign(n + 1, 0);
  m.stash.assign(n + 1, 0);
  m.work.assign(n, 0);
  cost::MemoryConfig cfg = mem;
  cfg.tp = tp;
  cfg.recompute = rec;
  for (unsigned l = 0; l < n; ++l) {
    m.params[l + 1] = m.params[l] + cost::paramsPerDevice(model, l, l + 1, tp);
    m.act[l + 1] = m.act[l] + cost::activationBytes(model, l, l + 1, 1, cfg);
    m.stash[l + 1] =
        m.stash[l] + cost::weightGradStashBytes(model, l, l + 1, 1, cfg);
    m.work[l] = cost::backwardWorkingBytes(model, l, l + 1, 1, cfg);
  }
  m.maxWork.push_back(m.work);
  for (unsigned k = 1; (1u << k) <= n; ++k) {
    const std::vector<double> &prev = m.maxWork.back();
    std::vector<double> row(n - (1u << k) + 1);
    for (unsigned i = 0; i < row.size(); ++i)
      row[i] = std::max(prev[i], prev[i + (1u << (k - 1))]);
    m.maxWork.push_back(std::move(row));
  }
  return memCache.emplace(key, std::move(m)).first->second;
}

double Tables::Memory::workMax(unsigned b, unsigned e) const {
  if (e <= b)
    return 0;
  unsigned k = 31 - __builtin_clz(e - b);
  return std::max(maxWork[k][b], maxWork[k][e - (1u << k)]);
}

double Tables::message(unsigned layer, unsigned mbs, unsigned tp, bool sg,
                       const cluster::LinkSpec &link,
                       const cost::GroupShape &receiver) const {
  double full = model.layers[layer].boundaryBytes * mbs;
  bool split = sg && tp > 1;
  double t = cost::CostModel::p2pTime(split ? full / tp : full, link);
  if (split)
    t += cost::CostModel::collective(cost::Collective::AllGather, full,
                                     receiver)
             .time;
  return t;
}

/// In-flight micro-batch count of rank \p r (activations held at once), in
/// units of one chunk's activations.
double inFlight(ScheduleKind kind, unsigned r, unsigned pp, unsigned chunks,
                unsigned m) {
  switch (kind) {
  case ScheduleKind::GPipe:
    return m;
  case ScheduleKind::Interleaved:
    // Megatron-LM's warm-up count plus the micro-batch in its backward.
    return std::min<double>(double(m) * chunks,
                            (pp - r - 1) * 2.0 + (chunks - 1) * pp + 1);
  default:
    return std::min<double>(m, pp - r);
  }
}

double Tables::memoryEstimate(const Plan &p, unsigned r,
                              unsigned weightVersions) {
  const Memory &m = memory(p.tp, p.recompute);
  cost::MemoryConfig cfg = mem;
  cfg.dp = p.dp;
  cfg.tp = p.tp;
  cfg.zero = p.zero;
  cfg.recompute = p.recompute;
  cfg.weightVersions = weightVersions;
  double params = 0, act = 0, stash = 0, work = 0;
  for (unsigned ch = 0; ch < p.chunks; ++ch) {
    auto [b, e] = p.stageLayers(ch * p.pp + r, n);
    params += m.params[e] - m.params[b];
    act += m.act[e] - m.act[b];
    stash = std::max(stash, m.stash[e] - m.stash[b]);
    work = std::max(work, m.workMax(b, e));
  }
  act /= p.chunks;
  double k = inFlight(p.schedule, r, p.pp, p.chunks, p.numMicrobatches);
  double held = p.schedule == ScheduleKind::ZBH1 ? k * std::max(act, stash)
                                                 : k * act;
  return cost::staticMemory(params, cfg).staticBytes() +
         p.mbs * (held + work);
}

} // namespace distopt::search::detail
