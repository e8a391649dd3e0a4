//===- CostModel.cpp - Op, communication and memory costs -------*- C++ -*-===//
//
// Formulas are in docs/cost-model.md; gtests in test/unit/cost check them.
//
//===----------------------------------------------------------------------===//

#include "lib/Cost/CostModel.h"
#include "lib/Cost/ProfileDB.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"

#include <algorithm>
#include <cmath>

using namespace llvm;
using distopt::cluster::DeviceSpec;
using distopt::cluster::LinkSpec;

namespace distopt::cost {

std::optional<std::pair<double, StringRef>> splitNumber(StringRef text) {
  StringRef t = text.trim();
  size_t i = 0;
  // An exponent's 'e' only before its digits: "2e3" is a number, the 'e'
  // of "5eb" starts the unit.
  while (i < t.size() &&
         (isDigit(t[i]) || t[i] == '.' || t[i] == '+' || t[i] == '-' ||
          ((t[i] == 'e' || t[i] == 'E') && i + 1 < t.size() &&
           (isDigit(t[i + 1]) || t[i + 1] == '-' || t[i + 1] == '+'))))
    ++i;
  double value;
  if (i == 0 || t.take_front(i).getAsDouble(value) || !std::isfinite(value))
    return std::nullopt;
  return std::make_pair(value, t.drop_front(i).trim());
}

Expected<double> parseByteSize(StringRef text) {
  std::optional<std::pair<double, StringRef>> n = splitNumber(text);
  if (!n || n->first <= 0)
    return createStringError(inconvertibleErrorCode(),
                             "expected a positive size such as 80GB, 40GiB "
                             "or 512MB");
  double value = n->first;
  std::string unit = n->second.lower();
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

std::string Offload::str() const {
  if (!any())
    return "none";
  std::string s;
  for (auto [on, name] : {std::pair<bool, const char *>{optimizer, "opt"},
                          {params, "params"},
                          {activations, "act"}})
    if (on)
      s += (s.empty() ? "" : "+") + std::string(name);
  return s;
}

Expected<Offload> parseOffload(StringRef text) {
  Offload o;
  if (text == "none" || text == "0")
    return o;
  SmallVector<StringRef> parts;
  text.split(parts, '+');
  for (StringRef part : parts) {
    bool *flag = part == "opt"      ? &o.optimizer
                 : part == "params" ? &o.params
                 : part == "act"    ? &o.activations
                                    : nullptr;
    if (!flag)
      return createStringError(
          inconvertibleErrorCode(),
          "offload '" + text + "': unknown part '" + part +
              "'; use none or parts opt, params, act joined by '+' (e.g. "
              "opt+params)");
    if (*flag)
      return createStringError(inconvertibleErrorCode(), "offload '" + text +
                                                             "' names '" +
                                                             part + "' twice");
    *flag = true;
  }
  if (o.params && !o.optimizer)
    return createStringError(
        inconvertibleErrorCode(),
        "offload '" + text +
            "': params without opt; the optimizer step updates the offloaded "
            "parameters on the CPU, so write opt+params");
  return o;
}

ArrayRef<Offload> allOffloads() {
  static const Offload all[] = {{false, false, false}, {true, false, false},
                                {false, false, true},  {true, false, true},
                                {true, true, false},   {true, true, true}};
  return all;
}

StringRef optimizerName(Optimizer o) {
  switch (o) {
  case Optimizer::Adam:
    return "adam";
  case Optimizer::SGD:
    return "sgd";
  case Optimizer::SGDMomentum:
    return "momentum";
  }
  return "adam";
}

std::optional<Optimizer> parseOptimizer(StringRef name) {
  return StringSwitch<std::optional<Optimizer>>(name)
      .Case("adam", Optimizer::Adam)
      .Case("adamw", Optimizer::Adam)
      .Case("momentum", Optimizer::SGDMomentum)
      .Case("sgd", Optimizer::SGD)
      .Default(std::nullopt);
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

double CostModel::roofline(const PhaseCost &cost, double peak, double eff,
                           const DeviceSpec &dev, unsigned kernels,
                           unsigned launches) const {
  if (cost.flops <= 0 && cost.bytes() <= 0)
    return 0;
  double perKernel = cost.flops / std::max(1u, kernels);
  // Small kernels leave SMs idle: efficiency rolls off below the knee (an
  // op of no kernel of its own runs inside its neighbour's).
  if (kernels > 0 && dev.halfEfficiencyFlops > 0 && perKernel > 0)
    eff *= perKernel / (perKernel + dev.halfEfficiencyFlops);
  double tCompute = cost.flops > 0 ? cost.flops / (peak * eff) : 0;
  double tMemory = cost.bytes() / (dev.memoryBandwidth * dev.memoryEfficiency);
  return std::max(tCompute, tMemory) + launches * dev.launchOverhead;
}

double CostModel::computeTime(const PhaseCost &cost, OpClass cls, DType dt,
                              const DeviceSpec &dev, unsigned kernels) const {
  return roofline(cost, dev.peak(dt), dev.efficiency[static_cast<unsigned>(cls)],
                  dev, kernels, kernels);
}

double CostModel::tokenShare(const OpDesc &op, const ExecConfig &x) {
  bool split = op.tpMode(x.tp.size) == TpMode::Split;
  if (!op.perSample)
    return split ? 1.0 / std::max(1u, x.tp.size) : 1.0;
  double k = x.mbs / static_cast<double>(std::max(1u, x.cp.size));
  if (split || x.sp)
    k /= std::max(1u, x.tp.size);
  return k;
}

/// A whole-sequence op replicated over TP (mixture-of-experts routing, the
/// router GEMM that reads its gathered input, and routed experts that
/// tensor parallelism leaves whole) under sequence parallelism:
/// dist-tensor-parallel gathers the block's input over the tensor group
/// before the routing, so every tensor rank runs it on the whole sequence
/// (of its context rank), or the experts on all its capacity slots. So does
/// a lookup tensor parallelism leaves whole (of position ids, or of a
/// shared table): sequence parallelism splits no lookup by tokens
/// (split::TokenSplit), it slices the lookup's rows where the rank's
/// tokens read them.
static bool wholeOnTensorRanks(const OpDesc &op, const ExecConfig &x) {
  return x.sp && op.perSample &&
         (op.wholeSequence || op.sequenceGathered || op.expert ||
          op.cls == OpClass::Embedding) &&
         op.tpMode(x.tp.size) != TpMode::Split;
}

double CostModel::shareOf(const OpDesc &op, const ExecConfig &x) {
  double k = tokenShare(op, x);
  if (op.perSample && op.wholeSequence)
    k *= std::max(1u, x.cp.size);
  if (wholeOnTensorRanks(op, x))
    k *= std::max(1u, x.tp.size);
  return k;
}

bool CostModel::splitsWeightGradient(const OpDesc &op, const ExecConfig &x) {
  // The weighted ops shareOf divides by t under sequence parallelism that
  // tensor parallelism does not split (so not the lookups), but those
  // whose weight is a position table: the rank's rows of it are sliced,
  // not copied (weightGradGatherBytes).
  return x.sp && x.tp.size > 1 && op.perSample && op.params > 0 &&
         op.positionRowsBytes == 0 && op.tpMode(x.tp.size) != TpMode::Split &&
         !wholeOnTensorRanks(op, x);
}

double CostModel::weightGradSumBytes(const LayerDesc &layer,
                                     const ExecConfig &x) {
  if (!x.sp || !sequenceSplits(layer, x.tp.size))
    return 0;
  double bytes = 0;
  for (const OpDesc &op : layer.ops)
    if (splitsWeightGradient(op, x))
      bytes += op.paramBytes();
  return bytes;
}

double CostModel::weightGradGatherBytes(const LayerDesc &layer,
                                        const ExecConfig &x) {
  if (!x.sp || x.tp.size <= 1 || !sequenceSplits(layer, x.tp.size))
    return 0;
  double bytes = 0;
  for (const OpDesc &op : layer.ops)
    if (op.perSample)
      bytes += op.positionRowsBytes;
  return bytes;
}

double CostModel::opTime(const OpDesc &op, Phase phase, const DeviceSpec &dev,
                         const ExecConfig &x, double extraRead) const {
  unsigned tp = std::max(1u, x.tp.size);
  bool lowered = op.cls == OpClass::MatMul && matmulDType &&
                 *matmulDType != op.dtype && !op.keepsPrecision;
  // A measurement holds for the op as profiled: its dtype, TP split, no
  // sequence split beyond it.
  bool asProfiled = !lowered && (x.cp.size <= 1 || op.wholeSequence) &&
                    (!x.sp || op.tpMode(tp) == TpMode::Split || !op.perSample ||
                     wholeOnTensorRanks(op, x));
  double imbalance = op.expert ? std::max(1.0, x.expertImbalance) : 1.0;
  if (profile && asProfiled)
    if (std::optional<double> t =
            profile->lookup(dev.name, op.signature, x.mbs, tp, phase))
      return (*t + extraRead / (dev.memoryBandwidth * dev.memoryEfficiency)) *
             imbalance;
  PhaseCost c = op.phase(phase).scaled(shareOf(op, x));
  c.bytesRead += extraRead;
  // Routed experts run as one grouped GEMM over the rank's experts (E /
  // ep of them, each on its own tokens); ring attention as c - 1 block
  // steps plus the local one. Both make smaller kernels, not more work.
  unsigned kernels = op.kernels, launches = op.kernels;
  if (op.expert) {
    kernels = std::max(1u, op.kernels / std::max(1u, x.ep.size));
    launches = 1;
  }
  if (op.cpKvBytes > 0 && x.cp.size > 1) {
    kernels *= x.cp.size;
    launches *= x.cp.size;
  }
  double t;
  double eff = dev.efficiency[static_cast<unsigned>(op.cls)];
  double peak = dev.peak(op.dtype);
  if (lowered) {
    peak = dev.peak(*matmulDType);
    if (*matmulDType == DType::F8 && dev.fp8MatmulEfficiency > 0)
      eff = dev.fp8MatmulEfficiency;
  }
  t = roofline(c, peak, eff, dev, kernels, launches);
  // Transformer Engine quantizes a linear layer's bf16 activation operand
  // (the input forward, the output gradient backward) in its own kernel:
  // it reads it and writes an fp8 copy in each of the two layouts the
  // GEMMs need. Weights are cast once per step, the weight gradient reuses
  // both copies.
  if (lowered && op.params > 0 && phase != Phase::BackwardWeight) {
    double act =
        op.phase(phase).bytesRead - op.params * cluster::dtypeBytes(op.dtype);
    if (act > 0)
      t += 2 * act * shareOf(op, x) /
               (dev.memoryBandwidth * dev.memoryEfficiency) +
           launches * dev.launchOverhead;
  }
  return t * imbalance;
}

double CostModel::opTime(const OpDesc &op, Phase phase, const DeviceSpec &dev,
                         unsigned tp, unsigned mbs) const {
  ExecConfig x;
  x.tp.size = tp;
  x.mbs = mbs;
  return opTime(op, phase, dev, x);
}

double CostModel::optimizerTime(double params, double bytesPerParam,
                                const DeviceSpec &dev) const {
  if (profile)
    if (std::optional<double> s = profile->optimizerPerParameter(dev.name))
      return *s * params;
  PhaseCost upd{params * 10, params * bytesPerParam * 0.5,
                params * bytesPerParam * 0.5};
  return computeTime(upd, OpClass::Elementwise, cluster::DType::F32, dev, 1);
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
  case Collective::AllToAll: {
    // No reduction to shrink it: each rank's (n - perNode) / n off-node
    // share crosses its own NIC while the on-node share crosses NVLink.
    double onNode = bytes * (g.perNode - 1) / g.size;
    double offNode = bytes * (g.size - g.perNode) / g.size;
    double t1 = (g.perNode - 1) * g.intra.latency +
                onNode / (g.intra.bandwidth * g.intra.collectiveEfficiency);
    double t2 = (nodes - 1) * g.inter.latency +
                offNode / (g.inter.bandwidth * g.inter.collectiveEfficiency);
    hier.time = std::max(t1, t2);
    hier.bytes[intra] = onNode;
    hier.bytes[inter] = offNode;
    // Every rank talks to every other: there is no flat ring to prefer.
    return hier;
  }
  case Collective::ReduceScatter:
  case Collective::AllGather:
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
  ExecConfig x;
  x.tp = tpGroup;
  x.mbs = mbs;
  x.recompute = recompute;
  return rangeTimes(model, begin, end, dev, x);
}

/// Link level a group's traffic crosses (the network once it spans nodes).
static unsigned levelOf(const GroupShape &g) {
  return static_cast<unsigned>(g.nodes() > 1 ? cluster::LinkLevel::Network
                                             : cluster::LinkLevel::IntraNode);
}

RangeTimes &RangeTimes::operator+=(const RangeTimes &o) {
  fwd += o.fwd;
  bwdInput += o.bwdInput;
  bwdWeight += o.bwdWeight;
  bwdWeightAccumulate += o.bwdWeightAccumulate;
  recompute += o.recompute;
  flops += o.flops;
  modelFlops += o.modelFlops;
  tpBytes += o.tpBytes;
  fwdComm += o.fwdComm;
  bwdComm += o.bwdComm;
  for (unsigned l = 0; l < cluster::kNumLinkLevels; ++l)
    linkBytes[l] += o.linkBytes[l];
  return *this;
}

RangeTimes CostModel::rangeTimes(const ModelDesc &model, unsigned begin,
                                 unsigned end, const DeviceSpec &dev,
                                 const ExecConfig &x) const {
  RangeTimes r;
  for (unsigned l = begin; l < end && l < model.layers.size(); ++l)
    r += layerTimes(model.layers[l], dev, x);
  return r;
}

bool sequenceSplits(const LayerDesc &layer, unsigned tp) {
  return llvm::any_of(layer.ops, [&](const OpDesc &op) {
    return op.perSample && op.tpMode(tp) == TpMode::Split && !op.channelSplit;
  });
}

bool scatterGathers(double elements, bool floating, unsigned tp,
                    bool scatterGather) {
  return tp > 1 && scatterGather && floating && std::fmod(elements, tp) == 0;
}

BoundaryMessage boundaryMessage(const LayerDesc &layer, unsigned mbs,
                                unsigned tp, unsigned cp, bool scatterGather,
                                bool sp) {
  cp = std::max(1u, cp);
  double whole = layer.boundaryBytes * mbs / cp;
  if (tp <= 1)
    return {whole, 0};
  if (sp && sequenceSplits(layer, tp))
    return {whole / tp, 0};
  // The analytic builders' boundary: one floating-point tensor whose
  // context ranks' parts tp divides.
  LayerDesc::BoundaryTensor analytic{layer.boundaryBytes, double(tp) * cp, true,
                                     false};
  llvm::ArrayRef<LayerDesc::BoundaryTensor> tensors =
      layer.boundaryTensors.empty()
          ? llvm::ArrayRef<LayerDesc::BoundaryTensor>(analytic)
          : llvm::ArrayRef<LayerDesc::BoundaryTensor>(layer.boundaryTensors);
  BoundaryMessage msg;
  for (const LayerDesc::BoundaryTensor &t : tensors) {
    double bytes = t.bytes * mbs / cp;
    if (t.splitOver(tp)) {
      msg.bytes += bytes / tp;
    } else if (scatterGathers(t.elements * mbs / cp, t.floating, tp,
                              scatterGather)) {
      msg.bytes += bytes / tp;
      msg.gatherBytes += bytes;
    } else {
      msg.bytes += bytes;
    }
  }
  return msg;
}

double BoundaryMessage::time(const cluster::LinkSpec &link,
                             const GroupShape &receiverTp) const {
  double t = CostModel::p2pTime(bytes, link);
  if (gatherBytes > 0)
    t += CostModel::collective(Collective::AllGather, gatherBytes, receiverTp)
             .time;
  return t;
}

RangeTimes CostModel::layerTimes(const LayerDesc &layer, const DeviceSpec &dev,
                                 const ExecConfig &x) const {
  if (x.sp && !sequenceSplits(layer, x.tp.size)) {
    ExecConfig whole = x;
    whole.sp = false;
    return layerTimes(layer, dev, whole);
  }
  RangeTimes r;
  const unsigned tp = std::max(1u, x.tp.size), cp = std::max(1u, x.cp.size),
                 ep = std::max(1u, x.ep.size);
  // Routed experts of a block that routes whole sequences under ep x tp
  // (dist-expert-parallel): each tensor rank exchanges its C/t capacity
  // slots over the expert group, so each of the experts' tensor-parallel
  // sums is a reduce-scatter onto the rank's slots and two all-gathers:
  // the slots of the tensor group before the experts and the exchanged
  // tokens gathered whole for the combine, which every tensor rank runs
  // (backward: the gradient's gather before the down GEMM, the sum before
  // the dispatch, the dispatched tokens' gradient gathered).
  const bool slotGathers =
      ep > 1 && tp > 1 && llvm::any_of(layer.ops, [](const OpDesc &op) {
        return op.wholeSequence && op.epAllToAllBytes > 0;
      });
  // One TP collective after an op: an all-reduce, or under sequence
  // parallelism a reduce-scatter and an all-gather of the same bytes.
  auto tpComm = [&](double perSample, bool expert) {
    CommCost c;
    if (tp <= 1 || perSample <= 0)
      return c;
    double bytes = perSample * x.mbs / cp;
    if (!x.sp && !(expert && slotGathers))
      return collective(Collective::AllReduce, bytes, x.tp);
    CommCost rs = collective(Collective::ReduceScatter, bytes, x.tp);
    CommCost ag = collective(Collective::AllGather, bytes, x.tp);
    const double gathers = expert && slotGathers ? 2 : 1;
    c.time = rs.time + gathers * ag.time;
    for (unsigned l = 0; l < cluster::kNumLinkLevels; ++l)
      c.bytes[l] = rs.bytes[l] + gathers * ag.bytes[l];
    return c;
  };
  auto sent = [](const CommCost &c) { return c.bytes[0] + c.bytes[1]; };
  const cluster::LinkSpec &cpLink = x.cp.nodes() > 1 ? x.cp.inter : x.cp.intra;
  // Full recomputation re-runs every checkpointed layer's forward: a
  // block of several layers (LayerDesc::continuesBlock) re-runs whole, and
  // a stage holding part of a block re-runs its part.
  bool full = x.recompute == Recompute::Full && layer.checkpoint;
  for (const OpDesc &op : layer.ops) {
    double f = opTime(op, Phase::Forward, dev, x);
    double bi = opTime(op, Phase::BackwardInput, dev, x);
    double bw = opTime(op, Phase::BackwardWeight, dev, x);
    if (x.gradSumBytes > 0 && op.params > 0) {
      ParamSplit held = paramSplit(op, tp, ep);
      double read = held.total() * x.gradSumBytes;
      r.bwdWeightAccumulate +=
          opTime(op, Phase::BackwardWeight, dev, x, read) - bw;
    }
    // A region the degree does not divide runs whole: no sums, no gathers.
    bool sums = op.tpDivides(tp);
    CommCost arF = tpComm(sums ? op.tpAllReduceFwdBytes : 0, op.expert);
    CommCost arB = tpComm(sums ? op.tpAllReduceBwdBytes : 0, op.expert);
    double tpSent = sent(arF) + sent(arB);
    double commF = arF.time, commB = arB.time;
    if (x.tpOverlap && op.cls == OpClass::MatMul) {
      commF = std::max(0.0, commF - f);
      commB = std::max(0.0, commB - bi);
    }
    // The part another micro-batch's compute can hide (expert
    // all-to-alls and the exposed ring); TP collectives sit on the
    // layer's own critical path.
    double hideF = 0, hideB = 0;
    // Bytes the forward sends, sent again when full recomputation re-runs it.
    double fwdBytes[cluster::kNumLinkLevels] = {0, 0};
    for (unsigned l = 0; l < cluster::kNumLinkLevels; ++l) {
      r.linkBytes[l] += arF.bytes[l] + arB.bytes[l];
      fwdBytes[l] += arF.bytes[l];
    }
    // Expert all-to-all (dispatch or combine), once in each direction, of
    // the rank's tokens (under CP its C/c capacity slots of every expert).
    if (ep > 1 && op.epAllToAllBytes > 0) {
      CommCost a2a = collective(Collective::AllToAll,
                                op.epAllToAllBytes * tokenShare(op, x), x.ep);
      commF += a2a.time;
      commB += a2a.time;
      hideF += a2a.time;
      hideB += a2a.time;
      for (unsigned l = 0; l < cluster::kNumLinkLevels; ++l) {
        r.linkBytes[l] += 2 * a2a.bytes[l];
        fwdBytes[l] += a2a.bytes[l];
      }
    }
    // Context parallelism around a mixture-of-experts block: the whole
    // tensors every context rank routes, dispatches and combines are
    // all-gathered from the ranks' parts, forward and backward. They sit
    // where the expert all-to-alls do, so the same overlap hides them.
    if (cp > 1 && (op.cpGatherFwdBytes > 0 || op.cpGatherBwdBytes > 0)) {
      CommCost gF =
          collective(Collective::AllGather, op.cpGatherFwdBytes * x.mbs, x.cp);
      CommCost gB =
          collective(Collective::AllGather, op.cpGatherBwdBytes * x.mbs, x.cp);
      commF += gF.time;
      commB += gB.time;
      hideF += gF.time;
      hideB += gB.time;
      for (unsigned l = 0; l < cluster::kNumLinkLevels; ++l) {
        r.linkBytes[l] += gF.bytes[l] + gB.bytes[l];
        fwdBytes[l] += gF.bytes[l];
      }
    }
    // Ring attention: c - 1 steps pass this rank's K/V block on; they
    // overlap the block-wise attention, so the slower of the two counts.
    if (cp > 1 && op.cpKvBytes > 0) {
      double block = op.cpKvBytes * shareOf(op, x);
      double ringF = (cp - 1) * p2pTime(block, cpLink);
      double ringB = (cp - 1) * p2pTime(2 * block, cpLink);
      commF += std::max(0.0, ringF - f);
      commB += std::max(0.0, ringB - bi);
      hideF += std::max(0.0, ringF - f);
      hideB += std::max(0.0, ringB - bi);
      r.linkBytes[levelOf(x.cp)] += 3 * (cp - 1) * block;
      fwdBytes[levelOf(x.cp)] += (cp - 1) * block;
    }
    r.fwd += f + commF;
    r.bwdInput += bi + commB;
    r.bwdWeight += bw;
    r.fwdComm += hideF;
    r.bwdComm += hideB;
    double scale = shareOf(op, x);
    double allFlops = op.fwd.flops + op.bwdInput.flops + op.bwdWeight.flops;
    r.modelFlops += allFlops * tokenShare(op, x);
    r.flops += allFlops * scale;
    bool again = full || (x.recompute == Recompute::Selective && op.selective);
    if (again) {
      double fc = full ? commF : 0;
      double share = full ? 1 : op.selectiveShare;
      r.recompute += f * share + fc;
      r.bwdComm += full ? hideF : 0;
      r.flops += op.fwd.flops * scale * share;
      if (full) {
        tpSent += sent(arF);
        for (unsigned l = 0; l < cluster::kNumLinkLevels; ++l)
          r.linkBytes[l] += fwdBytes[l];
      }
    }
    r.tpBytes += tpSent;
  }
  // A collective of the W pass: the weight-gradient GEMMs make what it
  // moves. Like the other TP collectives it sits on the layer's own
  // critical path, and no GEMM runs it in chunks (tpOverlap covers a
  // projection's activation collectives only); recomputation does not
  // repeat it.
  auto weightPassCollective = [&](Collective kind, double bytes) {
    CommCost c = collective(kind, bytes, x.tp);
    r.bwdWeight += c.time;
    r.tpBytes += sent(c);
    for (unsigned l = 0; l < cluster::kNumLinkLevels; ++l)
      r.linkBytes[l] += c.bytes[l];
  };
  // Sequence parallelism: the weights the rank's tokens read have their
  // gradients all-reduced over the tensor group in each micro-batch's
  // backward. One all-reduce per op (the programs run one per weight it
  // reads through a copy), so the price does not depend on how ops are
  // grouped into layers (the search's whole blocks and the simulator's
  // layers agree).
  if (x.sp && sequenceSplits(layer, x.tp.size))
    for (const OpDesc &op : layer.ops)
      if (splitsWeightGradient(op, x))
        weightPassCollective(Collective::AllReduce, op.paramBytes());
  // A position table added to the tokens is sliced to the rank's
  // positions, not copied: the backward all-gathers each rank's rows of its
  // gradient (dist.all_slice's rule), once per micro-batch, whole tables
  // only.
  if (double gathered = weightGradGatherBytes(layer, x); gathered > 0)
    weightPassCollective(Collective::AllGather, gathered);
  r.bwdInput += r.recompute;
  return r;
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

double paramsPerDevice(const ModelDesc &model, unsigned begin, unsigned end,
                       unsigned tp) {
  return paramSplit(model, begin, end, tp, 1).total();
}

ParamSplit paramSplit(const ModelDesc &model, unsigned begin, unsigned end,
                      unsigned tp, unsigned ep) {
  return paramSplit(model, LayerRange{begin, end}, tp, ep);
}

ParamSplit untiedParams(const LayerDesc &layer, unsigned tp, unsigned ep) {
  ParamSplit n;
  for (const OpDesc &op : layer.ops)
    if (op.tiedLayer < 0)
      n += paramSplit(op, tp, ep);
  return n;
}

ParamSplit paramSplit(const ModelDesc &model, ArrayRef<LayerRange> ranges,
                      unsigned tp, unsigned ep) {
  ParamSplit n;
  for (const LayerRange &r : ranges)
    for (unsigned li = r.begin; li < r.end && li < model.layers.size(); ++li) {
      n += untiedParams(model.layers[li], tp, ep);
      for (const OpDesc &op : model.layers[li].ops)
        if (op.tiedLayer >= 0 && !holds(ranges, op.tiedLayer))
          n += paramSplit(op, tp, ep);
    }
  return n;
}

ParamSplit paramSplit(const OpDesc &op, unsigned tp, unsigned ep) {
  double p = op.tpMode(tp) == TpMode::Split ? op.params / tp : op.params;
  if (op.expert)
    return {0, p / std::max(1u, ep)};
  return {p, 0};
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
  // ZeRO shards over every rank that holds the same weights.
  double dp = static_cast<double>(std::max(1u, cfg.dp)) * std::max(1u, cfg.cp);
  MemoryBreakdown m;
  m.weights = params * w / (cfg.zero >= 3 ? dp : 1);
  m.grads = params * g / (cfg.zero >= 2 ? dp : 1);
  m.optimizer = params * opt / (cfg.zero >= 1 ? dp : 1);
  m.weightStash =
      cfg.weightVersions > 1 ? (cfg.weightVersions - 1) * params * w : 0;
  if (cfg.offload.optimizer)
    m.optimizer = m.grads = 0;
  if (cfg.offload.params)
    m.weights = 0;
  return m;
}

MemoryBreakdown staticMemory(const ParamSplit &params,
                             const MemoryConfig &cfg) {
  MemoryBreakdown m = staticMemory(params.dense, cfg);
  if (params.expert <= 0)
    return m;
  // Expert weights are replicated over dp * cp / ep ranks only.
  MemoryConfig ec = cfg;
  unsigned group = std::max(1u, cfg.dp) * std::max(1u, cfg.cp);
  ec.dp = std::max(1u, group / std::max(1u, cfg.ep));
  ec.cp = 1;
  MemoryBreakdown e = staticMemory(params.expert, ec);
  m.weights += e.weights;
  m.grads += e.grads;
  m.optimizer += e.optimizer;
  m.weightStash += e.weightStash;
  return m;
}

/// What a per-sample activation of a TP-\p split op costs one device.
static double savedShare(const OpDesc &op, const MemoryConfig &cfg,
                         bool replicatedPart) {
  unsigned tp = std::max(1u, cfg.tp);
  double k = op.wholeSequence ? 1.0 : 1.0 / std::max(1u, cfg.cp);
  if (op.expert)
    k *= std::max(1.0, cfg.expertImbalance);
  // Under SP whole-sequence ops run whole on every tensor rank
  // (wholeOnTensorRanks).
  bool splitOp = op.tpMode(tp) == TpMode::Split;
  bool split = replicatedPart ? cfg.sp && !op.wholeSequence : splitOp;
  if (replicatedPart && splitOp && cfg.spKeepsGatheredInputs)
    split = false;
  return split ? k / tp : k;
}

/// Saved bytes of one layer per sample under no recomputation, optionally
/// without the selective ops.
static double layerSaved(const LayerDesc &l, const MemoryConfig &cfg,
                         bool skipSelective, bool onlyWeighted) {
  double b = 0;
  for (const OpDesc &op : l.ops) {
    if (skipSelective && op.selective) {
      b += op.selectiveSavedBytes *
           savedShare(op, cfg, op.tpMode(cfg.tp) != TpMode::Split);
      continue;
    }
    if (onlyWeighted && op.params <= 0)
      continue;
    b += op.savedBytes * savedShare(op, cfg, false) +
         op.savedReplicatedBytes * savedShare(op, cfg, true);
  }
  return b;
}

/// A boundary tensor (the pipeline message, a full-recomputation
/// checkpoint, a layer gradient) on one device: split by sequence under
/// CP, and over TP under SP.
static double boundaryShare(double bytes, const MemoryConfig &cfg) {
  return bytes / std::max(1u, cfg.cp) / (cfg.sp ? std::max(1u, cfg.tp) : 1);
}

/// \p cfg for layer \p l: without sequence parallelism where the layer has
/// no op of a Megatron region (sequenceSplits), so its activations and its
/// output stay whole on every tensor rank.
static MemoryConfig forLayer(const LayerDesc &l, const MemoryConfig &cfg) {
  MemoryConfig c = cfg;
  c.sp = cfg.sp && sequenceSplits(l, cfg.tp);
  return c;
}

double activationBytes(const ModelDesc &model, unsigned begin, unsigned end,
                       unsigned mbs, const MemoryConfig &cfg) {
  double b = 0;
  for (unsigned li = begin; li < end && li < model.layers.size(); ++li) {
    const LayerDesc &l = model.layers[li];
    MemoryConfig c = forLayer(l, cfg);
    if (cfg.recompute == Recompute::Full && l.checkpoint) {
      // One input per block; a range starting inside a block keeps its
      // own input (the pipeline message) to re-run its part from.
      if (li == begin || model.blockBegin(li) == li) {
        const LayerDesc &from = li > 0 ? model.layers[li - 1] : l;
        b += boundaryShare(from.boundaryBytes, forLayer(from, cfg));
      }
    } else
      b += layerSaved(l, c, cfg.recompute == Recompute::Selective, false);
  }
  return b * mbs;
}

double weightGradStashBytes(const ModelDesc &model, unsigned begin,
                            unsigned end, unsigned mbs,
                            const MemoryConfig &cfg) {
  double b = 0;
  for (unsigned li = begin; li < end && li < model.layers.size(); ++li) {
    const LayerDesc &l = model.layers[li];
    MemoryConfig c = forLayer(l, cfg);
    b += layerSaved(l, c, false, true);
    // The output gradient of each weighted op, produced by B, kept for W.
    for (const OpDesc &op : l.ops)
      if (op.params > 0)
        b += op.fwd.bytesWritten * savedShare(op, c, false);
  }
  return b * mbs;
}

double backwardWorkingBytes(const ModelDesc &model, unsigned begin,
                            unsigned end, unsigned mbs,
                            const MemoryConfig &cfg) {
  double work = 0;
  // Under full recomputation: the recomputed activations of the block's
  // layers in the range so far. The block's forward re-runs whole before
  // its backward, which frees a layer's activations once it has passed it
  // (backward runs last layer first): the block's last layer sees them all.
  double block = 0;
  for (unsigned li = begin; li < end && li < model.layers.size(); ++li) {
    const LayerDesc &l = model.layers[li];
    MemoryConfig c = forLayer(l, cfg);
    // Incoming and outgoing gradient.
    double w = 2 * boundaryShare(l.boundaryBytes, c);
    if (cfg.recompute == Recompute::Full && l.checkpoint) {
      if (li == begin || model.blockBegin(li) == li)
        block = 0;
      block += layerSaved(l, c, false, false);
      w += block;
    } else if (cfg.recompute == Recompute::Selective)
      w += layerSaved(l, c, false, false) - layerSaved(l, c, true, false);
    double opWork = 0;
    for (const OpDesc &op : l.ops)
      opWork = std::max(
          opWork, op.bwdWorkingBytes *
                      savedShare(op, c, op.tpMode(c.tp) != TpMode::Split));
    work = std::max(work, w + opWork);
  }
  return work * mbs;
}

} // namespace distopt::cost
