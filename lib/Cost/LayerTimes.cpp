//===- LayerTimes.cpp - Per-layer times, computed once ---------*- C++ -*-===//
//
// Part of DistOpt. See LayerTimes.h.
//
//===----------------------------------------------------------------------===//

#include "lib/Cost/LayerTimes.h"

using namespace distopt;
using namespace distopt::cost;

namespace {
/// Appends the bytes of numbers and strings to a key.
struct KeyWriter {
  std::string &k;
  void add(double v) {
    k.append(reinterpret_cast<const char *>(&v), sizeof(v));
  }
  void add(llvm::StringRef s) {
    k += s;
    k += '\0';
  }
  void add(const cluster::LinkSpec &l) {
    add(l.name);
    for (double v : {l.bandwidth, l.latency, l.collectiveEfficiency})
      add(v);
  }
  void add(const GroupShape &g) {
    add(double(g.size));
    add(double(g.perNode));
    add(g.intra);
    add(g.inter);
  }
};
} // namespace

std::string distopt::cost::layerCostKey(const LayerDesc &l) {
  std::string k;
  KeyWriter w{k};
  w.add(l.boundaryBytes);
  w.add(l.checkpoint);
  for (const OpDesc &op : l.ops) {
    w.add(op.signature);
    for (const PhaseCost *c : {&op.fwd, &op.bwdInput, &op.bwdWeight})
      for (double v : {c->flops, c->bytesRead, c->bytesWritten})
        w.add(v);
    for (double v :
         {double(op.cls), double(op.dtype), double(op.perSample), op.params,
          double(op.tiedLayer), op.savedBytes, op.savedReplicatedBytes,
          double(op.selective), double(op.tp), op.tpAllReduceFwdBytes,
          op.tpAllReduceBwdBytes, double(op.kernels), double(op.expert),
          op.epAllToAllBytes, op.cpKvBytes, op.selectiveShare,
          op.selectiveSavedBytes, op.bwdWorkingBytes,
          double(op.keepsPrecision)})
      w.add(v);
  }
  return k;
}

LayerTimesCache::LayerTimesCache(const ModelDesc &model, const CostModel &cm)
    : model(model), cm(cm) {
  std::map<std::string, unsigned> first;
  for (unsigned l = 0; l < model.layers.size(); ++l) {
    layerClass.push_back(
        first.emplace(layerCostKey(model.layers[l]), l).first->second);
    tiedOps.emplace_back();
    for (const OpDesc &op : model.layers[l].ops)
      if (op.tiedLayer >= 0)
        tiedOps.back().push_back(&op);
  }
}

/// The fields of two configurations that entry()'s key holds are equal.
static bool sameLink(const cluster::LinkSpec &a, const cluster::LinkSpec &b) {
  return a.name == b.name && a.bandwidth == b.bandwidth &&
         a.latency == b.latency &&
         a.collectiveEfficiency == b.collectiveEfficiency;
}
static bool sameGroup(const GroupShape &a, const GroupShape &b) {
  return a.size == b.size && a.perNode == b.perNode &&
         sameLink(a.intra, b.intra) && sameLink(a.inter, b.inter);
}
static bool sameKey(const ExecConfig &a, const ExecConfig &b) {
  return sameGroup(a.tp, b.tp) && sameGroup(a.cp, b.cp) &&
         sameGroup(a.ep, b.ep) && a.sp == b.sp && a.mbs == b.mbs &&
         a.recompute == b.recompute && a.expertImbalance == b.expertImbalance &&
         a.tpOverlap == b.tpOverlap && a.gradSumBytes == b.gradSumBytes;
}

LayerTimesCache::Entry &LayerTimesCache::entry(const cluster::DeviceSpec &dev,
                                               const ExecConfig &x) {
  if (lastEntry && lastDev == &dev && sameKey(lastX, x))
    return *lastEntry;
  std::string &key = keyBuffer;
  key.clear();
  KeyWriter w{key};
  const cluster::DeviceSpec *address = &dev;
  key.append(reinterpret_cast<const char *>(&address), sizeof(address));
  w.add(x.tp);
  w.add(x.cp);
  w.add(x.ep);
  for (double v : {double(x.sp), double(x.mbs), double(x.recompute),
                   x.expertImbalance, double(x.tpOverlap), x.gradSumBytes})
    w.add(v);
  Entry &e = entries[key];
  e.resize(model.layers.size());
  lastDev = &dev;
  lastX = x;
  lastEntry = &e;
  return e;
}

const RangeTimes &LayerTimesCache::of(Entry &e, unsigned l,
                                      const cluster::DeviceSpec &dev,
                                      const ExecConfig &x) {
  std::optional<RangeTimes> &t = e[layerClass[l]];
  if (!t)
    t = cm.layerTimes(model.layers[layerClass[l]], dev, x);
  return *t;
}

const RangeTimes &LayerTimesCache::layer(unsigned l,
                                         const cluster::DeviceSpec &dev,
                                         const ExecConfig &x) {
  return of(entry(dev, x), l, dev, x);
}

RangeTimes LayerTimesCache::range(unsigned begin, unsigned end,
                                  const cluster::DeviceSpec &dev,
                                  const ExecConfig &x) {
  RangeTimes r;
  Entry &e = entry(dev, x);
  for (unsigned l = begin; l < end && l < model.layers.size(); ++l)
    r += of(e, l, dev, x);
  return r;
}

ParamSplit LayerTimesCache::params(llvm::ArrayRef<LayerRange> ranges,
                                   unsigned tp, unsigned ep) {
  std::vector<std::optional<ParamSplit>> &perClass = untied[{tp, ep}];
  perClass.resize(model.layers.size());
  ParamSplit n;
  for (const LayerRange &r : ranges)
    for (unsigned l = r.begin; l < r.end && l < model.layers.size(); ++l) {
      std::optional<ParamSplit> &own = perClass[layerClass[l]];
      if (!own)
        own = untiedParams(model.layers[layerClass[l]], tp, ep);
      n += *own;
      for (const OpDesc *op : tiedOps[l])
        if (!holds(ranges, op->tiedLayer))
          n += paramSplit(*op, tp, ep);
    }
  return n;
}
