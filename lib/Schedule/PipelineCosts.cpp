//===- PipelineCosts.cpp - Per-stage and per-list costs of a plan -*- C++ -*-===//
//
// buildPipelineCosts turns a finalized plan into StageCost per virtual stage
// and DeviceCost per action list (pipeline rank, or slot of a replicated
// plan); uniformPipelineCosts is the synthetic uniform model.
//
//===----------------------------------------------------------------------===//

#include "lib/Schedule/Plan.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <numeric>

using namespace llvm;
using namespace distopt::cost;
using distopt::cluster::Cluster;
using distopt::cluster::LinkLevel;

namespace distopt::schedule {

PipelineCosts buildPipelineCosts(const Plan &p, const ModelDesc &model,
                                 const Cluster &c, const CostModel &cm,
                                 const std::vector<unsigned> &weightVersions,
                                 const MemoryConfig &memoryBase) {
  PipelineCosts pc;
  pc.pp = p.pp;
  pc.chunks = p.chunks;
  pc.microbatches = p.numMicrobatches;
  pc.mbs = p.mbs;
  pc.vShape = isVShape(p.schedule);
  pc.globalBatch = p.globalBatch;
  pc.overlapP2P = p.overlapP2P;
  pc.levelNames = {c.levelName(LinkLevel::IntraNode),
                   c.levelName(LinkLevel::Network)};
  if (std::optional<cluster::DType> dt = cm.matmulPrecision())
    pc.matmulPrecision = cluster::dtypeName(*dt).str();
  unsigned numLayers = model.layers.size();
  unsigned V = p.numVirtualStages();
  MemoryConfig mem = memoryConfig(p, memoryBase);
  double elem = mem.mixedPrecision ? 2 : 4;
  double syncElem = mem.gradSyncBytes > 0 ? mem.gradSyncBytes : elem;

  pc.stages.resize(V);
  for (unsigned vs = 0; vs < V; ++vs) {
    StageCost &st = pc.stages[vs];
    st.device = p.rankOf(vs);
    st.chunk = vs / p.pp;
    std::tie(st.layerBegin, st.layerEnd) = p.stageLayers(vs, numLayers);
    ExecConfig x = execConfig(p, c, st.device);
    // The running gradient sum: in the DP sync's element type; under
    // ZeRO-2/3 each micro-batch's gradient is reduce-scattered first, and
    // only this rank's shard of the sum is added to.
    x.gradSumBytes =
        syncElem / (p.zero >= 2 ? static_cast<double>(p.dp) * p.cp : 1.0);
    RangeTimes worst;
    for (unsigned ty : stageDeviceTypes(p, c, st.device)) {
      RangeTimes t =
          cm.rangeTimes(model, st.layerBegin, st.layerEnd, c.devices[ty], x);
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
        RangeTimes t =
            cm.rangeTimes(model, st.layerBegin, st.layerEnd, c.devices[ty], x);
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
    ParamSplit params =
        paramSplit(model, st.layerBegin, st.layerEnd, p.tp, p.ep);
    st.params = params.total();
    st.expertParams = params.expert;
    st.activationBytes =
        activationBytes(model, st.layerBegin, st.layerEnd, p.mbs, mem);
    st.stashBytes =
        weightGradStashBytes(model, st.layerBegin, st.layerEnd, p.mbs, mem);

    // Boundary messages (each CP rank sends its part of the sequence); with
    // scatter/gather each TP rank sends 1/tp and the receiver all-gathers
    // over its TP group; under sequence parallelism the tensor is already
    // split by sequence and stays so.
    auto message = [&](unsigned layer, unsigned from, unsigned to, double &time,
                       double &bytes, LinkLevel &level) {
      double full = model.layers[layer].boundaryBytes * p.mbs / p.cp;
      bool sg = (p.scatterGather || p.sp) && p.tp > 1;
      bytes = sg ? full / p.tp : full;
      unsigned a = p.globalRank(from, 0, 0), b = p.globalRank(to, 0, 0);
      level = c.levelBetween(a, b);
      time = CostModel::p2pTime(bytes, c.linkBetween(a, b));
      // Replicated stages: replica k talks to replica k' of the neighbour
      // when some micro-batch m has m = k (mod r_from) and m = k' (mod
      // r_to); the stage's message costs what its slowest such pair does.
      unsigned rf = p.replicasOf(from), rt = p.replicasOf(to);
      unsigned g = std::gcd(rf, rt);
      for (unsigned k = 0; p.replicated() && k < rf; ++k)
        for (unsigned k2 = k % g; k2 < rt; k2 += g) {
          unsigned a2 = p.globalRank(from, k, 0),
                   b2 = p.globalRank(to, k2, 0);
          LinkLevel l2 = c.levelBetween(a2, b2);
          double t2 = CostModel::p2pTime(bytes, c.linkBetween(a2, b2));
          if (t2 > time) {
            time = t2;
            level = l2;
          }
        }
      if (sg && !p.sp)
        time += CostModel::collective(Collective::AllGather, full,
                                      tensorGroup(p, c, to))
                    .time;
    };
    if (vs + 1 < V)
      message(st.layerEnd - 1, st.device, p.rankOf(vs + 1), st.sendNextTime,
              st.sendNextBytes, st.nextLevel);
    if (vs > 0)
      message(st.layerBegin - 1, st.device, p.rankOf(vs - 1), st.sendPrevTime,
              st.sendPrevBytes, st.prevLevel);

    // Gradient sync: the dense weights over the dp * cp ranks that hold
    // them, the experts over the dp * cp / ep ranks that hold theirs.
    GroupShape dpg = dataGroup(p, c, st.device);
    GroupShape edpg = expertDataGroup(p, c, st.device);
    // ZeRO-2/3 reduce-scatter every micro-batch's gradient (DeepSpeed's
    // stages 2 and 3 under gradient accumulation, and dist-partition's
    // programs), ZeRO-1 the step's sum once.
    const double scatters = p.zero >= 2 ? p.numMicrobatches : 1;
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
    addSync(params.dense * syncElem, dpg);
    addSync(params.expert * syncElem, edpg);
    if (p.zero >= 3) {
      // Weights are gathered before each forward and each backward, layer
      // by layer, prefetched under the previous layer's compute (FSDP,
      // Megatron-FSDP): only a gather longer than the compute shows.
      CommCost g = CostModel::collective(Collective::AllGather,
                                         params.dense * elem, dpg);
      CommCost ge = CostModel::collective(Collective::AllGather,
                                          params.expert * elem, edpg);
      double gather = g.time + ge.time;
      st.fwd += std::max(0.0, gather - st.fwd);
      st.bwdInput += std::max(0.0, gather - st.bwdInput - st.bwdWeight);
      for (unsigned l = 0; l < cluster::kNumLinkLevels; ++l)
        st.mbBytes[l] += 2 * (g.bytes[l] + ge.bytes[l]);
    }
  }

  // Replicated plans: each slot's own messages, over the links to the peer
  // slots that handle its micro-batches.
  for (unsigned s = 0; s < p.pp && p.replicated(); ++s) {
    const StageCost &st = pc.stages[s];
    auto pairTime = [&](unsigned layer, unsigned k, unsigned to, unsigned k2,
                        double &time, double &bytes, LinkLevel &level) {
      double full = model.layers[layer].boundaryBytes * p.mbs;
      bool sg = p.scatterGather && p.tp > 1;
      bytes = sg ? full / p.tp : full;
      unsigned a = p.globalRank(s, k, 0), b = p.globalRank(to, k2, 0);
      LinkLevel l = c.levelBetween(a, b);
      double t = CostModel::p2pTime(bytes, c.linkBetween(a, b));
      if (sg)
        t += CostModel::collective(Collective::AllGather, full,
                                   tensorGroup(p, c, to))
                 .time;
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
      work = std::max(work, backwardWorkingBytes(model, st.layerBegin,
                                                 st.layerEnd, p.mbs, mem));
    }
    ParamSplit params = paramSplit(model, chunks, p.tp, p.ep);
    if (p.replicated()) {
      // The stage's times are those of its slowest slot; this slot runs at
      // its own device kind's speed.
      const StageCost &st = pc.stage(l, 0);
      RangeTimes t = cm.rangeTimes(model, st.layerBegin, st.layerEnd, dev,
                                   execConfig(p, c, r));
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
    dc.staticMemory = staticMemory(params, m);
    dc.workingBytes = work;
    // The update streams weights, grads and optimizer state once.
    double touched = mem.optimizer == Optimizer::Adam          ? 28
                     : mem.optimizer == Optimizer::SGDMomentum ? 20
                                                               : 12;
    double shard = params.total();
    if (p.zero >= 1)
      shard =
          params.dense / (m.dp * p.cp) + params.expert * p.ep / (m.dp * p.cp);
    dc.optimizerTime = cm.optimizerTime(shard, touched, dev);
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
