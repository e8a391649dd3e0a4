//===- LayerTimes.cpp - Per-layer times, computed once ---------*- C++ -*-===//
//
// Part of DistOpt. See LayerTimes.h.
//
//===----------------------------------------------------------------------===//

#include "lib/Cost/LayerTimes.h"

#include <tuple>
#include <type_traits>

using namespace distopt;
using namespace distopt::cost;

namespace {
/// The fields of a link, a group and a configuration that the per-layer
/// costs depend on: what entry()'s key holds and its last-entry check
/// compares.
auto linkFields(const cluster::LinkSpec &l) {
  return std::tie(l.name, l.bandwidth, l.latency, l.collectiveEfficiency);
}
auto groupFields(const GroupShape &g) {
  return std::make_tuple(g.size, g.perNode, linkFields(g.intra),
                         linkFields(g.inter));
}
auto configFields(const ExecConfig &x) {
  return std::make_tuple(groupFields(x.tp), groupFields(x.cp),
                         groupFields(x.ep), x.sp, x.mbs, x.recompute,
                         x.expertImbalance, x.tpOverlap, x.gradSumBytes);
}

/// Appends the bytes of numbers, strings and tuples of them to a key.
struct KeyWriter {
  std::string &k;
  void add(double v) {
    k.append(reinterpret_cast<const char *>(&v), sizeof(v));
  }
  template <typename T, typename = std::enable_if_t<std::is_arithmetic_v<T> ||
                                                    std::is_enum_v<T>>>
  void add(T v) {
    add(static_cast<double>(v));
  }
  void add(llvm::StringRef s) {
    k += s;
    k += '\0';
  }
  template <typename... T> void add(const std::tuple<T...> &t) {
    std::apply([&](const auto &...v) { (add(v), ...); }, t);
  }
  void add(const cluster::LinkSpec &l) { add(linkFields(l)); }
  void add(const GroupShape &g) { add(groupFields(g)); }
};
} // namespace

std::string distopt::cost::layerCostKey(const LayerDesc &l) {
  std::string k;
  KeyWriter w{k};
  w.add(l.boundaryBytes);
  w.add(l.checkpoint);
  w.add(l.continuesBlock);
  for (const OpDesc &op : l.ops) {
    w.add(op.signature);
    for (const PhaseCost *c : {&op.fwd, &op.bwdInput, &op.bwdWeight})
      for (double v : {c->flops, c->bytesRead, c->bytesWritten})
        w.add(v);
    for (double v : {double(op.cls),
                     double(op.dtype),
                     double(op.perSample),
                     op.params,
                     double(op.tiedLayer),
                     op.savedBytes,
                     op.savedReplicatedBytes,
                     double(op.selective),
                     double(op.tp),
                     double(op.tpDivisor),
                     op.tpAllReduceFwdBytes,
                     op.tpAllReduceBwdBytes,
                     double(op.kernels),
                     double(op.expert),
                     op.epAllToAllBytes,
                     op.cpKvBytes,
                     op.selectiveShare,
                     op.selectiveSavedBytes,
                     op.bwdWorkingBytes,
                     double(op.keepsPrecision),
                     double(op.channelSplit),
                     op.positionRowsBytes,
                     double(op.wholeSequence),
                     double(op.sequenceGathered),
                     op.cpGatherFwdBytes,
                     op.cpGatherBwdBytes})
      w.add(v);
  }
  return k;
}

LayerTimesCache::LayerTimesCache(const ModelDesc &model, const CostModel &cm)
    : model(model), cm(cm) {
  std::map<std::string, unsigned> first;
  for (unsigned l = 0; l < model.layers.size(); ++l) {
    auto [it, added] = first.emplace(layerCostKey(model.layers[l]), l);
    layerClass.push_back(it->second);
    denseClass.push_back(added ? numClasses++ : denseClass[it->second]);
    tiedOps.emplace_back();
    for (const OpDesc &op : model.layers[l].ops)
      if (op.tiedLayer >= 0)
        tiedOps.back().push_back(&op);
  }
}

LayerTimesCache::Entry &LayerTimesCache::entry(const cluster::DeviceSpec &dev,
                                               const ExecConfig &x) {
  if (lastEntry && lastDev == &dev && configFields(lastX) == configFields(x))
    return *lastEntry;
  std::string &key = keyBuffer;
  key.clear();
  KeyWriter w{key};
  const cluster::DeviceSpec *address = &dev;
  key.append(reinterpret_cast<const char *>(&address), sizeof(address));
  w.add(configFields(x));
  Entry &e = entries[key];
  e.resize(numClasses);
  lastDev = &dev;
  lastX = x;
  lastEntry = &e;
  return e;
}

const RangeTimes &LayerTimesCache::of(Entry &e, unsigned l,
                                      const cluster::DeviceSpec &dev,
                                      const ExecConfig &x) {
  std::optional<RangeTimes> &t = e[denseClass[l]];
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
  forEachLayer(begin, end, dev, x,
               [&](unsigned, const RangeTimes &t) { r += t; });
  return r;
}

ParamSplit LayerTimesCache::params(llvm::ArrayRef<LayerRange> ranges,
                                   unsigned tp, unsigned ep) {
  std::vector<std::optional<ParamSplit>> &perClass = untied[{tp, ep}];
  perClass.resize(numClasses);
  ParamSplit n;
  for (const LayerRange &r : ranges)
    for (unsigned l = r.begin; l < r.end && l < model.layers.size(); ++l) {
      std::optional<ParamSplit> &own = perClass[denseClass[l]];
      if (!own)
        own = untiedParams(model.layers[layerClass[l]], tp, ep);
      n += *own;
      for (const OpDesc *op : tiedOps[l])
        if (!holds(ranges, op->tiedLayer))
          n += paramSplit(*op, tp, ep);
    }
  return n;
}
