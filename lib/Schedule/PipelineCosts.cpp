//===- PipelineCosts.cpp - Per-stage and per-list costs of a plan -*- C++ -*-===//
//
// buildPipelineCosts turns a finalized plan into StageCost per virtual stage
// and DeviceCost per action list (pipeline rank, or slot of a replicated
// plan); uniformPipelineCosts is the synthetic uniform model.
//
//===----------------------------------------------------------------------===//

#include "lib/Schedule/Plan.h"

#include "lib/Cost/LayerTimes.h"
#include "lib/Schedule/TiedExchange.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <numeric>
#include <optional>

using namespace llvm;
using namespace distopt::cost;
using distopt::cluster::Cluster;
using distopt::cluster::LinkLevel;
using distopt::cluster::Tier;

namespace distopt::schedule {

namespace {
/// What one pipeline rank of an offloaded plan keeps in its node's tiers
/// and what moving a byte of each costs.
struct RankOffload {
  std::vector<OffloadItem> items;
  Placement placement;
  DeviceTiers tiers;
  /// Parameters of the rank's ZeRO partition (all of them with dp*cp = 1).
  double shard = 0;
  /// Seconds per byte of the optimizer state (on the CPU's side), the
  /// weights, the activations and the gradients (to host memory).
  double optimizerSpb = 0, paramSpb = 0, activationSpb = 0, gradSpb = 0;
};
} // namespace

/// The parameters of \p params one device of \p p holds of a ZeRO
/// partition: dense ones over dp * cp, routed experts over dp * cp / ep.
static double zeroShard(const ParamSplit &params, const Plan &p) {
  return params.dense / (p.dp * p.cp) + params.expert * p.ep / (p.dp * p.cp);
}

/// The weights one device of \p p holds of \p params: sharded under ZeRO-3.
static double devicePart(const ParamSplit &params, const Plan &p) {
  return p.zero >= 3 ? zeroShard(params, p) : params.total();
}

/// What an offloaded device holds besides its static state while a layer
/// runs: one layer's gradient before it leaves ("opt"), the weights of the
/// layer running and of the next one, prefetched ("params"), and the saved
/// activations of the layer being written out and of the one being
/// fetched back ("act").
static double offloadWindow(const Plan &p, const ModelDesc &model,
                            ArrayRef<LayerRange> chunks,
                            const MemoryConfig &mem) {
  double elem = mem.mixedPrecision ? 2 : 4;
  double layerParams = 0, layerGrads = 0, layerAct = 0;
  for (const LayerRange &range : chunks)
    for (unsigned l = range.begin; l < range.end; ++l) {
      ParamSplit layer = paramSplit(model, l, l + 1, p.tp, p.ep);
      layerParams = std::max(layerParams, devicePart(layer, p));
      layerGrads = std::max(layerGrads, layer.total());
      layerAct =
          std::max(layerAct, activationBytes(model, l, l + 1, p.mbs, mem));
    }
  return (p.offload.optimizer ? elem * layerGrads : 0) +
         (p.offload.params ? 2 * elem * layerParams : 0) +
         (p.offload.activations ? 2 * layerAct : 0);
}

/// The offloaded items of each pipeline rank (optimizer state, weights,
/// activations in flight), placed by I/O density in the tiers of the node
/// of its first device. \p paramsOf gives the parameters of a rank's
/// layer ranges.
static std::vector<RankOffload>
placeOffload(const Plan &p, const ModelDesc &model, const Cluster &c,
             const MemoryConfig &mem,
             function_ref<ParamSplit(ArrayRef<LayerRange>)> paramsOf) {
  std::vector<RankOffload> out(p.pp);
  unsigned n = model.layers.size();
  double elem = mem.mixedPrecision ? 2 : 4;
  for (unsigned r = 0; r < p.pp; ++r) {
    RankOffload &ro = out[r];
    SmallVector<LayerRange> chunks;
    double act = 0;
    for (unsigned ch = 0; ch < p.chunks; ++ch) {
      auto [b, e] = p.stageLayers(p.virtualStage(r, ch), n);
      chunks.push_back({b, e});
      if (p.offload.activations)
        act += activationBytes(model, b, e, p.mbs, mem);
    }
    ParamSplit params = paramsOf(chunks);
    ro.shard = zeroShard(params, p);
    const double m = p.numMicrobatches;
    if (p.offload.optimizer) {
      // Read and written once per step where it is not host memory.
      double bytes = ro.shard * offloadedOptimizerBytesPerParam(mem);
      ro.items.push_back({OffloadKind::Optimizer, bytes, 2 * bytes, true});
    }
    if (p.offload.params) {
      // Fetched for every forward and backward, written by the step.
      double bytes = elem * devicePart(params, p);
      ro.items.push_back(
          {OffloadKind::Params, bytes, (2 * m + 1) * bytes, false});
    }
    if (p.offload.activations) {
      // The micro-batches in flight; each written once and read once.
      double held = activationsInFlight(p.schedule, r, p.pp, p.chunks,
                                        p.numMicrobatches) *
                    act / p.chunks;
      ro.items.push_back({OffloadKind::Activations, held, 2 * m * act, false});
    }
    // The node's tiers are shared by the devices of the plan on it (a
    // plan on fewer devices than a node has leaves the rest idle).
    unsigned rank0 = p.globalRank(r, 0, 0), first = rank0;
    while (first > 0 && c.nodeOf(first - 1) == c.nodeOf(rank0))
      --first;
    cluster::NodeGroup node = c.groupOf(rank0);
    node.devicesPerNode =
        std::min<uint64_t>(node.devicesPerNode, p.numDevices() - first);
    ro.tiers = deviceTiers(node);
    ro.placement = placeByIoDensity(ro.items, ro.tiers);
    for (unsigned i = 0; i < ro.items.size(); ++i) {
      double spb = ro.placement.secondsPerByte(i, ro.items[i], ro.tiers);
      (ro.items[i].kind == OffloadKind::Optimizer ? ro.optimizerSpb
       : ro.items[i].kind == OffloadKind::Params  ? ro.paramSpb
                                                  : ro.activationSpb) = spb;
    }
    double host = ro.tiers.bandwidth[static_cast<unsigned>(Tier::Host)];
    ro.gradSpb = host > 0 ? 1 / host : 0;
  }
  return out;
}

PipelineCosts buildPipelineCosts(const Plan &p, const ModelDesc &model,
                                 const Cluster &c, const CostModel &cm,
                                 const std::vector<unsigned> &weightVersions,
                                 const MemoryConfig &memoryBase,
                                 LayerTimesCache *layerTimes, CostParts parts) {
  // The memory figures, skipped where only the times are asked for (the
  // offloaded activations' bytes are times too: their transfers).
  const bool memory = parts == CostParts::All;
  auto rangeTimes = [&](unsigned begin, unsigned end,
                        const cluster::DeviceSpec &dev, const ExecConfig &x) {
    return layerTimes ? layerTimes->range(begin, end, dev, x)
                      : cm.rangeTimes(model, begin, end, dev, x);
  };
  auto paramsOf = [&](ArrayRef<LayerRange> ranges) {
    return layerTimes ? layerTimes->params(ranges, p.tp, p.ep)
                      : paramSplit(model, ranges, p.tp, p.ep);
  };
  PipelineCosts pc;
  pc.pp = p.pp;
  pc.chunks = p.chunks;
  pc.microbatches = p.numMicrobatches;
  pc.mbs = p.mbs;
  pc.vShape = isVShape(p.schedule);
  pc.globalBatch = p.globalBatch;
  pc.overlapP2P = p.overlapP2P;
  pc.updatesWaitForWorld = p.mode == Mode::Train &&
                           p.dtype == cluster::DType::F16 &&
                           updatesEveryMicrobatch(p.schedule);
  pc.levelNames = {c.levelName(LinkLevel::IntraNode),
                   c.levelName(LinkLevel::Network)};
  if (std::optional<cluster::DType> dt = cm.matmulPrecision())
    pc.matmulPrecision = cluster::dtypeName(*dt).str();
  unsigned numLayers = model.layers.size();
  unsigned V = p.numVirtualStages();
  MemoryConfig mem = memoryConfig(p, memoryBase);
  double elem = mem.mixedPrecision ? 2 : 4;
  double syncElem = mem.gradSyncBytes > 0 ? mem.gradSyncBytes : elem;
  // Weights read on several pipeline ranks (a tied embedding): the
  // programs exchange their gradient parts and the updated weights in the
  // master type once a step.
  const TiedExchange tied = tiedExchange(p, model, c, cm, 4);
  // ZeRO-3 under PP that keeps the unsharded weights and gradient sum
  // over the step (MemoryConfig::unshardedAcrossMicrobatches).
  const bool keepUnsharded = p.zero >= 3 && p.pp > 1 &&
                             mem.unshardedAcrossMicrobatches &&
                             !p.offload.any();
  std::vector<RankOffload> offload;
  if (p.offload.any() && !p.replicated())
    offload = placeOffload(p, model, c, mem, paramsOf);

  // The groups of each pipeline rank, shared by its chunks.
  struct RankGroups {
    ExecConfig x;
    GroupShape dp, expertDp;
  };
  std::vector<std::optional<RankGroups>> groups(p.pp);
  auto groupsOf = [&](unsigned rank) -> const RankGroups & {
    if (!groups[rank])
      groups[rank] = RankGroups{execConfig(p, c, rank), dataGroup(p, c, rank),
                                expertDataGroup(p, c, rank)};
    return *groups[rank];
  };

  pc.stages.resize(V);
  for (unsigned vs = 0; vs < V; ++vs) {
    StageCost &st = pc.stages[vs];
    st.device = p.rankOf(vs);
    st.chunk = vs / p.pp;
    std::tie(st.layerBegin, st.layerEnd) = p.stageLayers(vs, numLayers);
    const RankGroups &rg = groupsOf(st.device);
    ExecConfig x = rg.x;
    // The running gradient sum: in the DP sync's element type; under
    // ZeRO-2/3 each micro-batch's gradient is reduce-scattered first, and
    // only this rank's shard of the sum is added to. With the optimizer
    // offloaded the sum lives in host memory (ZeRO-Offload accumulates
    // each micro-batch's gradient there, after its copy down).
    const bool sumSharded = p.zero >= 2 && !keepUnsharded;
    x.gradSumBytes =
        p.offload.optimizer
            ? 0
            : syncElem / (sumSharded ? static_cast<double>(p.dp) * p.cp : 1.0);
    RangeTimes worst;
    for (unsigned ty : stageDeviceTypes(p, c, st.device)) {
      RangeTimes t = rangeTimes(st.layerBegin, st.layerEnd, c.devices[ty], x);
      if (t.fwd + t.bwdInput + t.bwdWeight >=
          worst.fwd + worst.bwdInput + worst.bwdWeight)
        worst = t;
    }
    st.fwd = worst.fwd;
    st.bwdInput = worst.bwdInput;
    st.bwdWeight = worst.bwdWeight;
    st.bwdWeightAccumulate = worst.bwdWeightAccumulate;
    st.recompute = worst.recompute;
    st.fwdComm = worst.fwdComm;
    st.bwdComm = worst.bwdComm;
    if (p.unevenBatch && stageDeviceTypes(p, c, st.device).size() > 1) {
      // Replicas of several kinds split the micro-batches by speed; the
      // stage group then behaves like one that does numMicrobatches of the
      // slowest replica's (shorter) total time.
      std::vector<double> mbTime(c.devices.size(), 0);
      for (unsigned ty : stageDeviceTypes(p, c, st.device)) {
        RangeTimes t = rangeTimes(st.layerBegin, st.layerEnd, c.devices[ty], x);
        mbTime[ty] = t.fwd + t.bwdInput + t.bwdWeight;
      }
      std::vector<unsigned> share =
          replicaMicrobatches(p, c, st.device, mbTime);
      double slowest = 0;
      for (unsigned d = 0; d < p.dp; ++d)
        slowest = std::max(
            slowest,
            share[d] * mbTime[c.groupOf(p.globalRank(st.device, d, 0))
                                  .deviceIndex]);
      double full = worst.fwd + worst.bwdInput + worst.bwdWeight;
      double k = full > 0 ? slowest / (p.numMicrobatches * full) : 1;
      st.fwd *= k;
      st.bwdInput *= k;
      st.bwdWeight *= k;
      st.bwdWeightAccumulate *= k;
      st.recompute *= k;
    }
    st.flops = worst.flops;
    st.modelFlops = worst.modelFlops;
    for (unsigned l = 0; l < cluster::kNumLinkLevels; ++l)
      st.mbBytes[l] += worst.linkBytes[l];
    ParamSplit params = paramsOf(LayerRange{st.layerBegin, st.layerEnd});
    st.params = params.total();
    st.expertParams = params.expert;
    if (memory || p.offload.activations)
      st.activationBytes =
          activationBytes(model, st.layerBegin, st.layerEnd, p.mbs, mem);
    if (memory)
      st.stashBytes =
          weightGradStashBytes(model, st.layerBegin, st.layerEnd, p.mbs, mem);

    // Boundary messages (cost::boundaryMessage: what each rank sends, and
    // the receiver's gather) over the link between the two stages.
    auto message = [&](unsigned layer, unsigned from, unsigned to, double &time,
                       double &bytes, LinkLevel &level) {
      cost::BoundaryMessage msg = cost::boundaryMessage(
          model.layers[layer], p.mbs, p.tp, p.cp, p.scatterGather, p.sp);
      cost::GroupShape receiver = tensorGroup(p, c, to);
      bytes = msg.bytes;
      unsigned a = p.globalRank(from, 0, 0), b = p.globalRank(to, 0, 0);
      level = c.levelBetween(a, b);
      time = msg.time(c.linkBetween(a, b), receiver);
      // Replicated stages: replica k talks to replica k' of the neighbour
      // when some micro-batch m has m = k (mod r_from) and m = k' (mod
      // r_to); the stage's message costs what its slowest such pair does.
      unsigned rf = p.replicasOf(from), rt = p.replicasOf(to);
      unsigned g = std::gcd(rf, rt);
      for (unsigned k = 0; p.replicated() && k < rf; ++k)
        for (unsigned k2 = k % g; k2 < rt; k2 += g) {
          unsigned a2 = p.globalRank(from, k, 0),
                   b2 = p.globalRank(to, k2, 0);
          double t2 = msg.time(c.linkBetween(a2, b2), receiver);
          if (t2 > time) {
            time = t2;
            level = c.levelBetween(a2, b2);
          }
        }
    };
    if (vs + 1 < V)
      message(st.layerEnd - 1, st.device, p.rankOf(vs + 1), st.sendNextTime,
              st.sendNextBytes, st.nextLevel);
    if (vs > 0)
      message(st.layerBegin - 1, st.device, p.rankOf(vs - 1), st.sendPrevTime,
              st.sendPrevBytes, st.prevLevel);

    // Gradient sync: the dense weights over the dp * cp ranks that hold
    // them, the experts over the dp * cp / ep ranks that hold theirs.
    const GroupShape &dpg = rg.dp, &edpg = rg.expertDp;
    // ZeRO-2/3 reduce-scatter every micro-batch's gradient (DeepSpeed's
    // stages 2 and 3 under gradient accumulation, and dist-partition's
    // programs), ZeRO-1 the step's sum once. The times are those of one
    // sync action: PipeDream and PipeMare sync after every micro-batch's
    // backward (one reduce-scatter each, whatever the ZeRO stage).
    const double scatters =
        p.zero >= 2 && !keepUnsharded && !updatesEveryMicrobatch(p.schedule)
            ? p.numMicrobatches
            : 1;
    auto addSync = [&](double gradBytes, const GroupShape &g) {
      if (p.zero == 0) {
        CommCost ar = CostModel::collective(Collective::AllReduce, gradBytes, g);
        st.gradSyncTime += ar.time;
        for (unsigned l = 0; l < cluster::kNumLinkLevels; ++l)
          st.gradSyncBytes[l] += ar.bytes[l];
        return;
      }
      CommCost rs =
          CostModel::collective(Collective::ReduceScatter, gradBytes, g);
      CommCost ag = CostModel::collective(Collective::AllGather, gradBytes, g);
      st.gradSyncTime += scatters * rs.time + ag.time;
      st.gradGatherTime += ag.time;
      for (unsigned l = 0; l < cluster::kNumLinkLevels; ++l) {
        st.gradSyncBytes[l] += scatters * rs.bytes[l] + ag.bytes[l];
        st.gradGatherBytes[l] += ag.bytes[l];
      }
    };
    // A tied copy's part is synced in its owner's sum (tiedExchange).
    addSync((params.dense - tied.copies[vs].dense) * syncElem, dpg);
    addSync((params.expert - tied.copies[vs].expert) * syncElem, edpg);
    double gather = 0;
    if (p.zero >= 3) {
      // Weights are gathered before each forward and each backward, layer
      // by layer, prefetched under the previous layer's compute (FSDP,
      // Megatron-FSDP): only a gather longer than the compute shows.
      CommCost g = CostModel::collective(Collective::AllGather,
                                         params.dense * elem, dpg);
      CommCost ge = CostModel::collective(Collective::AllGather,
                                          params.expert * elem, edpg);
      gather = g.time + ge.time;
      for (unsigned l = 0; l < cluster::kNumLinkLevels; ++l)
        st.mbBytes[l] += 2 * (g.bytes[l] + ge.bytes[l]);
    }
    // Offloaded state moves over the device's PCIe link, prefetched (and
    // written back) layer by layer under the compute as the ZeRO-3 gather
    // is: weights in for each pass, activations out after the forward and
    // in before the backward, this micro-batch's gradient partition out
    // after the backward (ZeRO-Offload accumulates it on the CPU).
    if (!offload.empty()) {
      const RankOffload &ro = offload[st.device];
      StageOffload &so = st.offload;
      so.paramBytes = p.offload.params ? elem * devicePart(params, p) : 0;
      so.activationBytes = p.offload.activations ? st.activationBytes : 0;
      so.gradBytes = p.offload.optimizer ? elem * zeroShard(params, p) : 0;
      so.paramSecondsPerByte = ro.paramSpb;
      so.activationSecondsPerByte = ro.activationSpb;
      so.gradSecondsPerByte = ro.gradSpb;
      // The device keeps a layer's window of its activations, not the
      // micro-batches in flight (backwardWorkingBytes' part, below).
      if (p.offload.activations)
        st.activationBytes = 0;
    }
    // Each pass takes the slowest of its compute, its PCIe transfers and
    // its gather (ZeRO-Infinity's overlap-centric design).
    st.fwd +=
        std::max(0.0, std::max(st.offload.forwardTransfer(), gather) - st.fwd);
    st.bwdInput +=
        std::max(0.0, std::max(st.offload.backwardTransfer(), gather) -
                          st.bwdInput - st.bwdWeight);
  }

  // Replicated plans: each slot's own messages, over the links to the peer
  // slots that handle its micro-batches.
  for (unsigned s = 0; s < p.pp && p.replicated(); ++s) {
    const StageCost &st = pc.stages[s];
    auto pairTime = [&](unsigned layer, unsigned k, unsigned to, unsigned k2,
                        double &time, double &bytes, LinkLevel &level) {
      cost::BoundaryMessage msg = cost::boundaryMessage(
          model.layers[layer], p.mbs, p.tp, p.cp, p.scatterGather, p.sp);
      bytes = msg.bytes;
      unsigned a = p.globalRank(s, k, 0), b = p.globalRank(to, k2, 0);
      LinkLevel l = c.levelBetween(a, b);
      double t = msg.time(c.linkBetween(a, b), tensorGroup(p, c, to));
      if (t >= time) {
        time = t;
        level = l;
      }
    };
    for (unsigned k = 0; k < p.replicasOf(s); ++k) {
      Boundary bd;
      if (s + 1 < p.pp) {
        unsigned g = std::gcd(p.replicasOf(s), p.replicasOf(s + 1));
        for (unsigned k2 = k % g; k2 < p.replicasOf(s + 1); k2 += g)
          pairTime(st.layerEnd - 1, k, s + 1, k2, bd.nextTime, bd.nextBytes,
                   bd.nextLevel);
      }
      if (s > 0) {
        unsigned g = std::gcd(p.replicasOf(s), p.replicasOf(s - 1));
        for (unsigned k2 = k % g; k2 < p.replicasOf(s - 1); k2 += g)
          pairTime(st.layerBegin - 1, k, s - 1, k2, bd.prevTime, bd.prevBytes,
                   bd.prevLevel);
      }
      pc.slotSends.push_back(bd);
    }
  }

  // One action list per pipeline rank, or per slot of a replicated plan.
  const unsigned lists = p.replicated() ? p.numSlots() : p.pp;
  pc.devices.resize(lists);
  for (unsigned r = 0; r < p.pp && p.replicated(); ++r)
    pc.slotStage.insert(pc.slotStage.end(), p.replicasOf(r), r);
  for (unsigned l = 0; l < lists; ++l) {
    DeviceCost &dc = pc.devices[l];
    unsigned r = pc.stageOfList(l);
    unsigned rank0 = p.replicated() ? p.tp * l : p.globalRank(r, 0, 0);
    const cluster::DeviceSpec &dev = c.deviceOf(rank0);
    dc.deviceName = dev.name;
    dc.memoryCapacity = dev.memoryBytes;
    if (!p.replicated())
      for (unsigned ty : stageDeviceTypes(p, c, r))
        dc.memoryCapacity =
            std::min(dc.memoryCapacity, c.devices[ty].memoryBytes);
    dc.devicesInGroup = p.replicated() ? p.tp : p.tp * p.cp * p.dp;
    double work = 0;
    SmallVector<LayerRange> chunks;
    for (unsigned ch = 0; ch < p.chunks; ++ch) {
      const StageCost &st = pc.stage(l, ch);
      chunks.push_back({st.layerBegin, st.layerEnd});
      if (memory)
        work = std::max(work, backwardWorkingBytes(model, st.layerBegin,
                                                   st.layerEnd, p.mbs, mem));
    }
    ParamSplit params = paramsOf(chunks);
    // Tied copies whose owner is another rank: held with their gradient
    // sum, updated there (tiedExchange).
    ParamSplit copies;
    for (unsigned ch = 0; ch < p.chunks; ++ch)
      copies += tied.copies[virtualStageOf(pc.vShape, p.pp, r, ch)];
    if (p.replicated()) {
      // The stage's times are those of its slowest slot; this slot runs at
      // its own device kind's speed.
      const StageCost &st = pc.stage(l, 0);
      RangeTimes t =
          rangeTimes(st.layerBegin, st.layerEnd, dev, execConfig(p, c, r));
      double mine = t.fwd + t.bwdInput + t.bwdWeight;
      double stage = st.fwd + st.bwdInput + st.bwdWeight;
      if (stage > 0 && mine < stage)
        dc.computeScale = mine / stage;
    }
    MemoryConfig m = mem;
    // ZeRO shards over the stage's replicas (r_s of them, or dp).
    if (p.replicated())
      m.dp = p.replicasOf(r);
    m.weightVersions = l < weightVersions.size() ? weightVersions[l] : 1;
    ParamSplit updated = params;
    updated.dense -= copies.dense;
    updated.expert -= copies.expert;
    dc.staticMemory = staticMemory(updated, m);
    MemoryBreakdown copy = staticMemory(copies, m);
    dc.staticMemory.weights += copy.weights;
    dc.staticMemory.grads += copy.grads;
    if (memory && p.zero >= 3 && !p.offload.params) {
      // FSDP's unsharded buffers. Layer by layer: the weights of the layer
      // running and of the next one, gathered ahead (forward and backward
      // prefetch), and in the backward the layer's unsharded gradient and
      // the reduce-scatter input in the sync dtype (FSDP2's foreach_reduce
      // copies the gradients into it, cast to reduce_dtype). Kept over the
      // step: the stage's weights and its gradient sum, unsharded.
      double largest = 0;
      for (const LayerRange &range : chunks)
        for (unsigned li = range.begin; li < range.end; ++li)
          largest = std::max(largest,
                             paramSplit(model, li, li + 1, p.tp, p.ep).total());
      dc.staticMemory.gatherBuffers = keepUnsharded
                                          ? params.total() * (elem + syncElem)
                                          : largest * (3 * elem + syncElem);
    }
    if (memory && !offload.empty())
      work += offloadWindow(p, model, chunks, mem);
    dc.workingBytes = work;
    // The update streams weights, grads and optimizer state once.
    double touched = mem.optimizer == Optimizer::Adam          ? 28
                     : mem.optimizer == Optimizer::SGDMomentum ? 20
                                                               : 12;
    double shard = updated.total();
    if (p.zero >= 1)
      shard =
          updated.dense / (m.dp * p.cp) + updated.expert * p.ep / (m.dp * p.cp);
    dc.optimizerTime = cm.optimizerTime(shard, touched, dev);
    if (!offload.empty()) {
      const RankOffload &ro = offload[r];
      dc.offloadItems = ro.items;
      dc.placement = ro.placement;
      dc.tiers = ro.tiers;
    }
    if (!offload.empty() && p.offload.optimizer) {
      // The step runs on the CPU over this device's partition; the
      // updated fp16 weights go back over PCIe unless they live off the
      // device too.
      const RankOffload &ro = offload[r];
      double state = 0;
      for (const OffloadItem &it : ro.items)
        if (it.kind == OffloadKind::Optimizer)
          state = it.traffic * ro.optimizerSpb;
      double upload = p.offload.params ? 0 : elem * ro.shard * ro.gradSpb;
      dc.cpuStepTime = cpuOptimizerStepTime(
          ro.shard, touched,
          ro.tiers.hostBandwidth[static_cast<unsigned>(Tier::Host)], state,
          upload);
      dc.optimizerTime = dc.cpuStepTime;
    }
    // The tied weights' messages run in the list's optimizer step: the
    // parts in before the update, the updated weights out after it.
    dc.optimizerTime += tied.time[l];
    for (unsigned lvl = 0; lvl < cluster::kNumLinkLevels; ++lvl)
      dc.tiedBytes[lvl] = tied.sentBytes[l][lvl];
  }
  return pc;
}

} // namespace distopt::schedule

distopt::schedule::PipelineCosts distopt::schedule::uniformPipelineCosts(
    unsigned pp, unsigned chunks, unsigned microbatches, double f, double bi,
    double bw, double send, bool vShape) {
  PipelineCosts c;
  c.pp = pp;
  c.chunks = chunks;
  c.microbatches = microbatches;
  c.globalBatch = microbatches;
  c.vShape = vShape;
  c.stages.resize(pp * chunks);
  for (unsigned vs = 0; vs < pp * chunks; ++vs) {
    StageCost &st = c.stages[vs];
    st.device = rankOfStage(vShape, pp, vs);
    st.chunk = vs / pp;
    st.fwd = f;
    st.bwdInput = bi;
    st.bwdWeight = bw;
    st.activationBytes = 1;
    st.nextLevel = st.prevLevel = cluster::LinkLevel::Network;
    if (vs + 1 < pp * chunks)
      st.sendNextTime = send;
    if (vs > 0)
      st.sendPrevTime = send;
  }
  c.devices.resize(pp);
  return c;
}
