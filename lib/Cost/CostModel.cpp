//===- CostModel.cpp - Op, communication and memory costs -------*- C++ -*-===//
//
// Formulas are in docs/cost-model.md; gtests in test/unit/cost check them.
//
//===----------------------------------------------------------------------===//

#include "lib/Cost/CostModel.h"
#include "lib/Cost/ProfileDB.h"

#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <cmath>

using namespace llvm;
using distopt::cluster::DeviceSpec;
using distopt::cluster::LinkSpec;

namespace distopt::cost {

Expected<double> parseByteSize(StringRef text) {
  StringRef t = text.trim();
  size_t i = 0;
  while (i < t.size() && (isDigit(t[i]) || t[i] == '.' || t[i] == 'e' ||
                          t[i] == 'E' || t[i] == '+' || t[i] == '-'))
    ++i;
  // "1e9" has no unit; "80GB" stops at 'G'. An 'e' followed by a letter
  // other than a digit belongs to no unit we know, so it fails below.
  double value;
  if (i == 0 || t.take_front(i).getAsDouble(value) || value <= 0)
    return createStringError(inconvertibleErrorCode(),
                             "expected a positive size such as 80GB, 40GiB "
                             "or 512MB");
  std::string unit = t.drop_front(i).trim().lower();
  const std::pair<const char *, double> units[] = {
      {"", 1},          {"b", 1},          {"kb", 1e3},       {"mb", 1e6},
      {"gb", 1e9},      {"tb", 1e12},      {"kib", 1024.0},   {"mib", 1 << 20},
      {"gib", 1 << 30}, {"tib", 1099511627776.0}, {"k", 1e3}, {"m", 1e6},
      {"g", 1e9},       {"t", 1e12}};
  for (auto [name, scale] : units)
    if (unit == name)
      return value * scale;
  return createStringError(inconvertibleErrorCode(),
                           "unknown unit '" + unit +
                               "'; use B, KB, MB, GB, TB, KiB, MiB, GiB or "
                               "TiB");
}

StringRef recomputeName(Recompute r) {
  switch (r) {
  case Recompute::None:
    return "none";
  case Recompute::Selective:
    return "selective";
  case Recompute::Full:
    return "full";
  }
  return "none";
}

StringRef collectiveName(Collective c) {
  switch (c) {
  case Collective::AllReduce:
    return "all_reduce";
  case Collective::ReduceScatter:
    return "reduce_scatter";
  case Collective::AllGather:
    return "all_gather";
  case Collective::AllToAll:
    return "all_to_all";
  }
  return "all_reduce";
}

double CostModel::computeTime(const PhaseCost &cost, OpClass cls, DType dt,
                              const DeviceSpec &dev, unsigned kernels) const {
  if (cost.flops <= 0 && cost.bytes() <= 0)
    return 0;
  double eff = dev.efficiency[static_cast<unsigned>(cls)];
  double perKernel = cost.flops / std::max(1u, kernels);
  // Small kernels leave SMs idle: efficiency rolls off below the knee.
  if (dev.halfEfficiencyFlops > 0 && perKernel > 0)
    eff *= perKernel / (perKernel + dev.halfEfficiencyFlops);
  double tCompute = cost.flops > 0 ? cost.flops / (dev.peak(dt) * eff) : 0;
  double tMemory = cost.bytes() / (dev.memoryBandwidth * dev.memoryEfficiency);
  return std::max(tCompute, tMemory) + kernels * dev.launchOverhead;
}

double CostModel::opTime(const OpDesc &op, Phase phase, const DeviceSpec &dev,
                         unsigned tp, unsigned mbs) const {
  if (profile)
    if (std::optional<double> t =
            profile->lookup(dev.name, op.signature, mbs, tp, phase))
      return *t;
  const PhaseCost &base = op.phase(phase);
  double scale = (op.perSample ? mbs : 1.0) /
                 (op.tp == TpMode::Split ? static_cast<double>(tp) : 1.0);
  return computeTime(base.scaled(scale), op.cls, op.dtype, dev, op.kernels);
}

double CostModel::p2pTime(double bytes, const LinkSpec &link) {
  if (bytes <= 0)
    return 0;
  return link.latency + bytes / link.bandwidth;
}

double CostModel::flatCollectiveTime(Collective kind, double bytes, unsigned n,
                                     const LinkSpec &link,
                                     CollectiveAlgo algo) {
  if (n <= 1 || bytes <= 0)
    return 0;
  double busBw = link.bandwidth * link.collectiveEfficiency;
  double frac = static_cast<double>(n - 1) / n;
  bool allReduce = kind == Collective::AllReduce;
  double ring =
      (allReduce ? 2 : 1) * ((n - 1) * link.latency + frac * bytes / busBw);
  if (!allReduce || algo == CollectiveAlgo::Ring)
    return ring;
  // Double binary tree: log-depth latency, the whole buffer up and down.
  double tree = 2 * std::ceil(std::log2(n)) * link.latency + 2 * bytes / busBw;
  if (algo == CollectiveAlgo::Tree)
    return tree;
  return std::min(ring, tree);
}

/// Bytes one rank sends in a ring collective of \p bytes over \p n ranks.
static double ringBytes(Collective kind, double bytes, unsigned n) {
  if (n <= 1)
    return 0;
  double frac = static_cast<double>(n - 1) / n;
  return (kind == Collective::AllReduce ? 2 : 1) * frac * bytes;
}

CommCost CostModel::collective(Collective kind, double bytes,
                               const GroupShape &g, CollectiveAlgo algo) {
  CommCost out;
  if (g.size <= 1 || bytes <= 0)
    return out;
  const unsigned intra = static_cast<unsigned>(cluster::LinkLevel::IntraNode);
  const unsigned inter = static_cast<unsigned>(cluster::LinkLevel::Network);
  unsigned nodes = g.nodes();
  if (nodes <= 1) {
    out.time = flatCollectiveTime(kind, bytes, g.size, g.intra, algo);
    out.bytes[intra] = ringBytes(kind, bytes, g.size);
    return out;
  }
  if (g.perNode <= 1) {
    out.time = flatCollectiveTime(kind, bytes, g.size, g.inter, algo);
    out.bytes[inter] = ringBytes(kind, bytes, g.size);
    return out;
  }
  // Flat ring over all members: the inter-node hops set the pace.
  CommCost flat;
  flat.time =
      flatCollectiveTime(kind, bytes, g.size, g.inter,
                         algo == CollectiveAlgo::Tree ? CollectiveAlgo::Tree
                                                      : CollectiveAlgo::Ring);
  flat.bytes[inter] = ringBytes(kind, bytes, g.size) / g.perNode;
  flat.bytes[intra] = ringBytes(kind, bytes, g.size) - flat.bytes[inter];
  // Hierarchical: intra-node reduce-scatter / all-gather around an
  // inter-node collective on each rank's shard.
  CommCost hier;
  double shard = bytes / g.perNode;
  auto rs = Collective::ReduceScatter, ag = Collective::AllGather;
  switch (kind) {
  case Collective::AllReduce:
    hier.time =
        flatCollectiveTime(rs, bytes, g.perNode, g.intra, algo) +
        flatCollectiveTime(kind, shard, nodes, g.inter, CollectiveAlgo::Auto) +
        flatCollectiveTime(ag, bytes, g.perNode, g.intra, algo);
    hier.bytes[intra] = 2 * ringBytes(rs, bytes, g.perNode);
    hier.bytes[inter] = ringBytes(kind, shard, nodes);
    break;
  case Collective::ReduceScatter:
  case Collective::AllGather:
  case Collective::AllToAll:
    hier.time = flatCollectiveTime(kind, bytes, g.perNode, g.intra, algo) +
                flatCollectiveTime(kind, shard, nodes, g.inter, algo);
    hier.bytes[intra] = ringBytes(kind, bytes, g.perNode);
    hier.bytes[inter] = ringBytes(kind, shard, nodes);
    break;
  }
  if (algo == CollectiveAlgo::Hierarchical)
    return hier;
  if (algo == CollectiveAlgo::Ring || algo == CollectiveAlgo::Tree)
    return flat;
  return hier.time <= flat.time ? hier : flat;
}

RangeTimes CostModel::rangeTimes(const ModelDesc &model, unsigned begin,
                                 unsigned end, const DeviceSpec &dev,
                                 const GroupShape &tpGroup, unsigned mbs,
                                 Recompute recompute) const {
  RangeTimes r;
  unsigned tp = std::max(1u, tpGroup.size);
  auto allReduce = [&](double perSample) {
    if (tp <= 1 || perSample <= 0)
      return CommCost();
    return collective(Collective::AllReduce, perSample * mbs, tpGroup);
  };
  for (unsigned li = begin; li < end && li < model.layers.size(); ++li) {
    const LayerDesc &layer = model.layers[li];
    bool full = recompute == Recompute::Full && layer.checkpoint;
    for (const OpDesc &op : layer.ops) {
      double f = opTime(op, Phase::Forward, dev, tp, mbs);
      double bi = opTime(op, Phase::BackwardInput, dev, tp, mbs);
      double bw = opTime(op, Phase::BackwardWeight, dev, tp, mbs);
      CommCost arF = allReduce(op.tpAllReduceFwdBytes);
      CommCost arB = allReduce(op.tpAllReduceBwdBytes);
      r.fwd += f + arF.time;
      r.bwdInput += bi + arB.time;
      r.bwdWeight += bw;
      double scale = (op.perSample ? mbs : 1.0) /
                     (op.tp == TpMode::Split ? static_cast<double>(tp) : 1.0);
      double opFlops =
          (op.fwd.flops + op.bwdInput.flops + op.bwdWeight.flops) * scale;
      r.modelFlops += opFlops;
      r.flops += opFlops;
      double sent = arF.bytes[0] + arF.bytes[1] + arB.bytes[0] + arB.bytes[1];
      bool again = full || (recompute == Recompute::Selective && op.selective);
      if (again) {
        r.recompute += f + (full ? arF.time : 0);
        r.flops += op.fwd.flops * scale;
        if (full)
          sent += arF.bytes[0] + arF.bytes[1];
      }
      r.tpBytes += sent;
    }
  }
  r.bwdInput += r.recompute;
  return r;
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

double paramsPerDevice(const ModelDesc &model, unsigned begin, unsigned end,
                       unsigned tp) {
  double n = 0;
  for (unsigned li = begin; li < end && li < model.layers.size(); ++li)
    for (const OpDesc &op : model.layers[li].ops)
      n += op.tp == TpMode::Split ? op.params / tp : op.params;
  return n;
}

MemoryBreakdown staticMemory(double params, const MemoryConfig &cfg) {
  double w = cfg.mixedPrecision ? 2 : 4, g = w, opt = 0;
  switch (cfg.optimizer) {
  case Optimizer::Adam: // fp32 master (if mixed), momentum, variance
    opt = cfg.mixedPrecision ? 12 : 8;
    break;
  case Optimizer::SGDMomentum:
    opt = cfg.mixedPrecision ? 8 : 4;
    break;
  case Optimizer::SGD:
    opt = cfg.mixedPrecision ? 4 : 0;
    break;
  }
  double dp = std::max(1u, cfg.dp);
  MemoryBreakdown m;
  m.weights = params * w / (cfg.zero >= 3 ? dp : 1);
  m.grads = params * g / (cfg.zero >= 2 ? dp : 1);
  m.optimizer = params * opt / (cfg.zero >= 1 ? dp : 1);
  m.weightStash =
      cfg.weightVersions > 1 ? (cfg.weightVersions - 1) * params * w : 0;
  return m;
}

/// Saved bytes of one layer per sample under no recomputation, optionally
/// without the selective ops.
static double layerSaved(const LayerDesc &l, unsigned tp, bool skipSelective,
                         bool onlyWeighted) {
  double b = 0;
  for (const OpDesc &op : l.ops) {
    if (skipSelective && op.selective)
      continue;
    if (onlyWeighted && op.params <= 0)
      continue;
    double split = op.tp == TpMode::Split ? op.savedBytes / tp : op.savedBytes;
    b += split + op.savedReplicatedBytes;
  }
  return b;
}

double activationBytes(const ModelDesc &model, unsigned begin, unsigned end,
                       unsigned mbs, const MemoryConfig &cfg) {
  unsigned tp = std::max(1u, cfg.tp);
  double b = 0;
  for (unsigned li = begin; li < end && li < model.layers.size(); ++li) {
    const LayerDesc &l = model.layers[li];
    if (cfg.recompute == Recompute::Full && l.checkpoint)
      b += li > 0 ? model.layers[li - 1].boundaryBytes : l.boundaryBytes;
    else
      b += layerSaved(l, tp, cfg.recompute == Recompute::Selective, false);
  }
  return b * mbs;
}

double weightGradStashBytes(const ModelDesc &model, unsigned begin,
                            unsigned end, unsigned mbs,
                            const MemoryConfig &cfg) {
  unsigned tp = std::max(1u, cfg.tp);
  double b = 0;
  for (unsigned li = begin; li < end && li < model.layers.size(); ++li) {
    const LayerDesc &l = model.layers[li];
    b += layerSaved(l, tp, false, true);
    // The output gradient of each weighted op, produced by B, kept for W.
    for (const OpDesc &op : l.ops)
      if (op.params > 0)
        b += op.fwd.bytesWritten / (op.tp == TpMode::Split ? tp : 1);
  }
  return b * mbs;
}

double backwardWorkingBytes(const ModelDesc &model, unsigned begin,
                            unsigned end, unsigned mbs,
                            const MemoryConfig &cfg) {
  unsigned tp = std::max(1u, cfg.tp);
  double work = 0;
  for (unsigned li = begin; li < end && li < model.layers.size(); ++li) {
    const LayerDesc &l = model.layers[li];
    double w = 2 * l.boundaryBytes; // incoming and outgoing gradient
    if (cfg.recompute == Recompute::Full && l.checkpoint)
      w += layerSaved(l, tp, false, false);
    else if (cfg.recompute == Recompute::Selective)
      w += layerSaved(l, tp, false, false) - layerSaved(l, tp, true, false);
    work = std::max(work, w);
  }
  return work * mbs;
}

} // namespace distopt::cost
