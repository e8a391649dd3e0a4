//===- DistAttrsTest.cpp - Cluster and plan attributes round-trip -*- C++ -*-===//
//
// Part of DistOpt. The planning passes hand the cluster and the plan to each
// other through #dist.cluster and #dist.plan; these tests check that every
// preset cluster and a spread of plans survive attribute -> core -> attribute
// and printing -> parsing unchanged, so a pass that reads them back predicts
// exactly what the pass that wrote them predicted.
//
//===----------------------------------------------------------------------===//
#include "dialects/Dist/DistDialect.h"
#include "lib/Sim/Simulator.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/AsmParser/AsmParser.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace distopt;

namespace {

/// Prints \p attr and parses it back.
Attribute reparse(Attribute attr) {
  std::string text;
  llvm::raw_string_ostream os(text);
  attr.print(os);
  return parseAttribute(text, attr.getContext());
}

void expectSameLink(const cluster::LinkSpec &a, const cluster::LinkSpec &b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.bandwidth, b.bandwidth);
  EXPECT_EQ(a.latency, b.latency);
  EXPECT_EQ(a.collectiveEfficiency, b.collectiveEfficiency);
}

void expectSameCluster(const cluster::Cluster &a, const cluster::Cluster &b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.description, b.description);
  ASSERT_EQ(a.devices.size(), b.devices.size());
  for (size_t i = 0; i < a.devices.size(); ++i) {
    const cluster::DeviceSpec &x = a.devices[i], &y = b.devices[i];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.peakFlops, y.peakFlops);
    EXPECT_EQ(x.memoryBytes, y.memoryBytes);
    EXPECT_EQ(x.memoryBandwidth, y.memoryBandwidth);
    EXPECT_EQ(x.efficiency, y.efficiency);
    EXPECT_EQ(x.memoryEfficiency, y.memoryEfficiency);
    EXPECT_EQ(x.launchOverhead, y.launchOverhead);
    EXPECT_EQ(x.halfEfficiencyFlops, y.halfEfficiencyFlops);
    EXPECT_EQ(x.fp8MatmulEfficiency, y.fp8MatmulEfficiency);
  }
  ASSERT_EQ(a.groups.size(), b.groups.size());
  for (size_t i = 0; i < a.groups.size(); ++i) {
    EXPECT_EQ(a.groups[i].deviceIndex, b.groups[i].deviceIndex);
    EXPECT_EQ(a.groups[i].devicesPerNode, b.groups[i].devicesPerNode);
    EXPECT_EQ(a.groups[i].nodes, b.groups[i].nodes);
    expectSameLink(a.groups[i].intraNode, b.groups[i].intraNode);
    for (unsigned t = 0; t < cluster::kNumTiers; ++t) {
      EXPECT_EQ(a.groups[i].tiers.tiers[t].capacity,
                b.groups[i].tiers.tiers[t].capacity);
      EXPECT_EQ(a.groups[i].tiers.tiers[t].bandwidth,
                b.groups[i].tiers.tiers[t].bandwidth);
    }
    EXPECT_EQ(a.groups[i].tiers.hostMemoryBandwidth,
              b.groups[i].tiers.hostMemoryBandwidth);
  }
  expectSameLink(a.network, b.network);
  EXPECT_EQ(a.nodesPerRack, b.nodesPerRack);
  EXPECT_EQ(a.rackOversubscription, b.rackOversubscription);
  ASSERT_EQ(a.input.has_value(), b.input.has_value());
  if (a.input) {
    EXPECT_DOUBLE_EQ(a.input->storageBandwidth, b.input->storageBandwidth);
    EXPECT_DOUBLE_EQ(a.input->pageCacheBytes, b.input->pageCacheBytes);
    EXPECT_EQ(a.input->cpuCoresPerDevice, b.input->cpuCoresPerDevice);
  }
  ASSERT_EQ(a.availability.has_value(), b.availability.has_value());
  if (a.availability) {
    EXPECT_EQ(a.availability->preemptionsPerNodeHour,
              b.availability->preemptionsPerNodeHour);
    EXPECT_EQ(a.availability->replacementSeconds,
              b.availability->replacementSeconds);
    EXPECT_EQ(a.availability->onDemandPrice, b.availability->onDemandPrice);
    EXPECT_EQ(a.availability->preemptiblePrice,
              b.availability->preemptiblePrice);
    EXPECT_DOUBLE_EQ(a.availability->checkpointBandwidth,
                     b.availability->checkpointBandwidth);
  }
}

class DistAttrsTest : public ::testing::Test {
protected:
  DistAttrsTest() { context.getOrLoadDialect<dist::DistDialect>(); }
  MLIRContext context;
};

TEST_F(DistAttrsTest, EveryPresetRoundTrips) {
  for (const std::string &name : cluster::presetNames()) {
    SCOPED_TRACE(name);
    llvm::Expected<cluster::Cluster> preset = cluster::getPreset(name, 2);
    ASSERT_TRUE(static_cast<bool>(preset)) << toString(preset.takeError());
    auto attr = dist::ClusterAttr::get(&context, *preset, "p.json");
    expectSameCluster(*preset, attr.toCluster());
    EXPECT_EQ(attr.getNumDevices(),
              static_cast<int64_t>(preset->numDevices()));
    EXPECT_EQ(attr.getProfile(), "p.json");
    EXPECT_EQ(reparse(attr), attr);
  }
}

TEST_F(DistAttrsTest, PlansRoundTrip) {
  const char *specs[] = {
      "dp=2,tp=4,pp=2,mbs=1,schedule=1f1b",
      "dp=1,tp=8,pp=4,mbs=2,schedule=interleaved,chunks=2,recompute=full,"
      "zero=1,sg=0,p2p_overlap=0",
      "pp=2,replicas=3/1,mbs=1,schedule=gpipe",
      "dp=4,pp=1,schedule=zb-h1,recompute=selective,zero=2,grad_overlap=0",
      "dp=2,pp=2,schedule=pipedream-2bw,uneven=1",
      // PipeMare with its learning-rate warm-up and without its correction.
      "pp=4,schedule=pipemare,pipemare_warmup=16,pipemare_decay=1",
      "pp=2,schedule=pipemare",
      // Context, expert and sequence parallelism with Megatron's overlaps.
      "dp=4,tp=2,pp=2,cp=2,ep=2,sp=1,tp_overlap=1,expert_imbalance=1.25,"
      "zero=1,ag_overlap=1,schedule=interleaved,chunks=2",
      // V-shaped schedules fold the second chunk back.
      "dp=2,tp=2,pp=4,schedule=zb-v", "pp=3,cp=2,schedule=dualpipe-v",
      "pp=2,schedule=v-half", "pp=2,schedule=v-min", "pp=4,schedule=zb-h2",
      // Offload (ZeRO-Offload, ZeRO-Infinity).
      "dp=1,offload=opt", "dp=2,pp=2,zero=3,offload=opt+params+act",
      "dp=1,recompute=full,offload=act"};
  for (const char *spec : specs) {
    SCOPED_TRACE(spec);
    llvm::Expected<schedule::Plan> parsed = schedule::parsePlan(spec);
    ASSERT_TRUE(static_cast<bool>(parsed)) << toString(parsed.takeError());
    schedule::Plan p = *parsed;
    // What finalizePlan fills in.
    p.numMicrobatches = 4;
    p.globalBatch = p.mbs * 4 * (p.replicated() ? 1 : p.dp);
    p.cuts.clear();
    for (unsigned v = 1; v < p.numVirtualStages(); ++v)
      p.cuts.push_back(3 * v);
    auto attr = dist::PlanAttr::get(&context, p);
    schedule::Plan back = attr.toPlan();
    EXPECT_EQ(back.str(), p.str());
    EXPECT_EQ(back.numMicrobatches, p.numMicrobatches);
    EXPECT_EQ(back.globalBatch, p.globalBatch);
    EXPECT_EQ(back.cp, p.cp);
    EXPECT_EQ(back.ep, p.ep);
    EXPECT_EQ(back.sp, p.sp);
    EXPECT_EQ(back.tpOverlap, p.tpOverlap);
    EXPECT_EQ(back.pipemareWarmup, p.pipemareWarmup);
    EXPECT_EQ(back.pipemareDecay, p.pipemareDecay);
    EXPECT_EQ(back.expertImbalance, p.expertImbalance);
    EXPECT_EQ(back.overlapParamGather, p.overlapParamGather);
    EXPECT_TRUE(back.offload == p.offload);
    EXPECT_EQ(back.vShape, p.vShape);
    EXPECT_EQ(attr.getNumDevices(), static_cast<int64_t>(p.numDevices()));
    EXPECT_EQ(reparse(attr), attr);
    for (unsigned v = 0; v < p.numVirtualStages(); ++v) {
      dist::MeshAttr mesh = attr.getStageMesh(v);
      std::vector<unsigned> ids = p.stageDevices(p.pipelineStage(v));
      EXPECT_EQ(mesh.getShape().size(), p.cp > 1 ? 3u : 2u);
      ASSERT_EQ(mesh.getDevices().size(), ids.size());
      for (size_t i = 0; i < ids.size(); ++i)
        EXPECT_EQ(mesh.getDevices()[i], ids[i]);
    }
  }
}

TEST_F(DistAttrsTest, NewPlanFieldsPrintOnlyWhenSet) {
  schedule::Plan p = llvm::cantFail(schedule::parsePlan("dp=2,pp=2"));
  p.numMicrobatches = 2;
  p.globalBatch = 4;
  p.cuts = {5};
  std::string plain;
  llvm::raw_string_ostream(plain) << dist::PlanAttr::get(&context, p);
  for (const char *key : {"cp", "ep", "sp", "tp_overlap", "expert_imbalance",
                          "overlap_param_gather"})
    EXPECT_EQ(plain.find(key), std::string::npos) << key << " in " << plain;
  p.cp = 2;
  p.ep = 2;
  p.sp = p.tpOverlap = p.overlapParamGather = true;
  p.expertImbalance = 1.5;
  std::string set;
  llvm::raw_string_ostream(set) << dist::PlanAttr::get(&context, p);
  for (const char *key :
       {"cp = 2", "ep = 2", "sp = true", "tp_overlap = true",
        "expert_imbalance = 1.5", "overlap_param_gather = true"})
    EXPECT_NE(set.find(key), std::string::npos) << key << " not in " << set;
}

TEST(RankLayoutTest, TensorAndReplicaGroupsPartitionAStage) {
  // dp=2 x tp=2 x pp=2: stage 1 is devices 4..7.
  schedule::RankLayout l;
  l.dp = 2;
  l.tp = 2;
  l.pp = 2;
  using Groups = std::vector<std::vector<unsigned>>;
  EXPECT_EQ(l.tensorGroups(1), (Groups{{4, 5}, {6, 7}}));
  EXPECT_EQ(l.replicaGroups(1), (Groups{{4, 6}, {5, 7}}));
  // With context ranks, one group per (replica, context rank) and per
  // (context rank, tensor rank).
  l.cp = 2;
  l.pp = 1;
  EXPECT_EQ(l.tensorGroups(0), (Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
  EXPECT_EQ(l.replicaGroups(0), (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  // And one context group per (replica, tensor rank).
  EXPECT_EQ(l.contextGroups(0), (Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}}));
  // The gradient sync (and ZeRO) groups: every replica's context ranks,
  // one group per tensor rank, in rank order.
  EXPECT_EQ(l.replicaContextGroups(0), (Groups{{0, 2, 4, 6}, {1, 3, 5, 7}}));
  l.tp = 1;
  l.pp = 2;
  EXPECT_EQ(l.contextGroups(1), (Groups{{4, 5}, {6, 7}}));
  EXPECT_EQ(l.replicaContextGroups(1), (Groups{{4, 5, 6, 7}}));
  // Without context ranks they are the replica groups.
  l.cp = 1;
  l.tp = 2;
  EXPECT_EQ(l.replicaContextGroups(1), l.replicaGroups(1));
}

TEST(RankLayoutTest, ExpertGroupsAreConsecutiveReplicas) {
  using Groups = std::vector<std::vector<unsigned>>;
  // dp = 4, ep = 2, two stages: the expert groups are replicas {0, 1} and
  // {2, 3} of each stage; the ranks holding the same experts are every
  // second replica.
  schedule::RankLayout l;
  l.dp = 4;
  l.pp = 2;
  EXPECT_EQ(l.expertGroups(0, 2), (Groups{{0, 1}, {2, 3}}));
  EXPECT_EQ(l.expertGroups(1, 2), (Groups{{4, 5}, {6, 7}}));
  EXPECT_EQ(l.expertDataGroups(0, 2), (Groups{{0, 2}, {1, 3}}));
  EXPECT_EQ(l.expertDataGroups(1, 4), (Groups{{4}, {5}, {6}, {7}}));
  // ep = 1: one group per replica, and the data groups are every replica.
  EXPECT_EQ(l.expertDataGroups(0, 1), l.replicaGroups(0));
  // With context ranks (the cost model's groups): per context rank, and
  // the data groups take every context rank of their replicas.
  l.pp = 1;
  l.cp = 2;
  EXPECT_EQ(l.expertGroups(0, 2), (Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}}));
  EXPECT_EQ(l.expertDataGroups(0, 2), (Groups{{0, 1, 4, 5}, {2, 3, 6, 7}}));
}

TEST(RankLayoutTest, ContextRanksSitInsideEachReplica) {
  // tp-cp-dp-pp: rank = t + tp * (c + cp * (d + dp * s)).
  schedule::RankLayout l;
  l.dp = 2;
  l.tp = 2;
  l.cp = 2;
  l.pp = 2;
  EXPECT_EQ(l.numDevices(), 16u);
  EXPECT_EQ(l.globalRank(1, 1, 1, 1), 1u + 2 * (1 + 2 * (1 + 2 * 1)));
  EXPECT_EQ(l.stageDevices(0),
            (std::vector<unsigned>{0, 1, 2, 3, 4, 5, 6, 7}));
  for (unsigned rank = 0; rank < l.numDevices(); ++rank) {
    std::optional<schedule::RankLayout::Coord> c = l.coordOf(rank);
    ASSERT_TRUE(c.has_value());
    EXPECT_EQ(l.globalRank(c->stage, c->replica, c->tensor, c->context), rank);
  }
  // The V: virtual stages 0..3 on stages 0 1 1 0.
  l.chunks = 2;
  l.vShape = true;
  EXPECT_EQ(l.pipelineStage(2), 1u);
  EXPECT_EQ(l.pipelineStage(3), 0u);
  EXPECT_EQ(l.virtualStage(0, 1), 3u);
  EXPECT_EQ(l.virtualStage(1, 1), 2u);
}

TEST(RankLayoutTest, CoordinatesInvertGlobalRanks) {
  schedule::RankLayout uniform;
  uniform.dp = 3;
  uniform.tp = 2;
  uniform.pp = 4;
  schedule::RankLayout replicated;
  replicated.tp = 2;
  replicated.pp = 3;
  replicated.replicas = {4, 1, 2};
  for (const schedule::RankLayout &l : {uniform, replicated}) {
    unsigned seen = 0;
    for (unsigned s = 0; s < l.pp; ++s)
      for (unsigned d = 0; d < l.replicasOf(s); ++d)
        for (unsigned t = 0; t < l.tp; ++t) {
          unsigned rank = l.globalRank(s, d, t);
          std::optional<schedule::RankLayout::Coord> c = l.coordOf(rank);
          ASSERT_TRUE(c.has_value());
          EXPECT_EQ(c->stage, s);
          EXPECT_EQ(c->replica, d);
          EXPECT_EQ(c->tensor, t);
          ++seen;
        }
    EXPECT_EQ(seen, l.numDevices());
    EXPECT_FALSE(l.coordOf(l.numDevices()).has_value());
  }
  EXPECT_EQ(uniform.stageDevices(1),
            (std::vector<unsigned>{6, 7, 8, 9, 10, 11}));
  EXPECT_EQ(replicated.stageDevices(2), (std::vector<unsigned>{10, 11, 12, 13}));
}

} // namespace
