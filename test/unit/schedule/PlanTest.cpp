//===- PlanTest.cpp - Plan parsing, checks and partitioning -----*- C++ -*-===//

#include "lib/Schedule/Plan.h"
#include "lib/Schedule/Schedule.h"
#include "lib/Schedule/TiedExchange.h"

#include "gtest/gtest.h"

using namespace distopt;
using namespace distopt::schedule;

namespace {

std::string planError(llvm::StringRef spec) {
  auto p = parsePlan(spec);
  EXPECT_FALSE(static_cast<bool>(p)) << spec.str();
  return p ? std::string() : llvm::toString(p.takeError());
}

TEST(Plan, ParsesTheIssueExample) {
  Plan p = llvm::cantFail(parsePlan("dp=24,tp=8,pp=8,mbs=1,schedule="
                                    "interleaved,chunks=2,recompute=full,"
                                    "zero=0"));
  EXPECT_EQ(p.dp, 24u);
  EXPECT_EQ(p.tp, 8u);
  EXPECT_EQ(p.pp, 8u);
  EXPECT_EQ(p.schedule, ScheduleKind::Interleaved);
  EXPECT_EQ(p.chunks, 2u);
  EXPECT_EQ(p.recompute, cost::Recompute::Full);
  EXPECT_EQ(p.numDevices(), 1536u);
  // str() round-trips.
  Plan q = llvm::cantFail(parsePlan(p.str()));
  EXPECT_EQ(q.str(), p.str());
  Plan r = llvm::cantFail(
      parsePlan("pp=2,schedule=dapple,stages=5,sg=0,p2p_overlap=0"));
  EXPECT_EQ(r.schedule, ScheduleKind::OneFOneB);
  EXPECT_EQ(r.cuts, std::vector<unsigned>{5});
  EXPECT_FALSE(r.scatterGather);
  EXPECT_FALSE(r.overlapP2P);
  EXPECT_EQ(llvm::cantFail(parsePlan("schedule=zbh1")).schedule,
            ScheduleKind::ZBH1);
  EXPECT_EQ(llvm::cantFail(parsePlan("schedule=2bw")).schedule,
            ScheduleKind::PipeDream2BW);
  // PipeMare's knobs, and a decay printed so that it reads back the same.
  Plan m = llvm::cantFail(parsePlan(
      "pp=4,schedule=pipemare,pipemare_warmup=64,pipemare_decay=0.0125"));
  EXPECT_EQ(m.schedule, ScheduleKind::PipeMare);
  EXPECT_EQ(m.pipemareWarmup, 64u);
  EXPECT_EQ(llvm::cantFail(parsePlan(m.str())).pipemareDecay, 0.0125);
  EXPECT_EQ(llvm::cantFail(parsePlan(m.str())).str(), m.str());
}

TEST(Plan, ParseErrors) {
  EXPECT_NE(planError("dp=0").find("'dp=0' must be an integer >= 1"),
            std::string::npos);
  EXPECT_NE(planError("dp=x").find("must be an integer"), std::string::npos);
  EXPECT_NE(planError("tp=4294967297").find("at most 1000000"),
            std::string::npos);
  EXPECT_NE(planError("dq=2").find("unknown key 'dq'"), std::string::npos);
  EXPECT_NE(planError("dp=2,dp=4").find("given twice"), std::string::npos);
  EXPECT_NE(planError("dp").find("has no value"), std::string::npos);
  EXPECT_NE(planError("schedule=wavy").find("unknown schedule 'wavy'"),
            std::string::npos);
  EXPECT_NE(planError("recompute=some").find("unknown recompute"),
            std::string::npos);
  EXPECT_NE(planError("zero=4").find("zero must be"), std::string::npos);
  EXPECT_NE(planError("stages=3/x").find("not a layer index"),
            std::string::npos);
  // Switches are 0 or 1; any other number was taken as 1.
  for (const char *spec :
       {"tp=2,sp=2", "sg=7", "tp_overlap=yes", "uneven=-1", "p2p_overlap=2",
        "grad_overlap=10", "ag_overlap=01"}) {
    SCOPED_TRACE(spec);
    EXPECT_NE(planError(spec).find("must be 0 or 1"), std::string::npos);
  }
  Plan on = llvm::cantFail(parsePlan("tp=2,sp=1,sg=0,ag_overlap=1"));
  EXPECT_TRUE(on.sp);
  EXPECT_FALSE(on.scatterGather);
  EXPECT_TRUE(on.overlapParamGather);
}

cost::ModelDesc smallModel(unsigned layers = 8) {
  cost::GptConfig g;
  g.layers = layers;
  g.hidden = 512;
  g.heads = 8;
  g.seqLen = 256;
  g.vocab = 1000;
  return cost::buildGpt(g);
}

std::string finalizeError(const char *spec, unsigned batch,
                          const char *clusterSpec = "dgx-a100-80gb:1") {
  Plan p = llvm::cantFail(parsePlan(spec));
  cluster::Cluster c = llvm::cantFail(cluster::resolveCluster(clusterSpec));
  cost::CostModel cm;
  llvm::Error e = finalizePlan(p, smallModel(), c, batch, cm);
  EXPECT_TRUE(static_cast<bool>(e)) << spec;
  return llvm::toString(std::move(e));
}

TEST(Plan, FinalizeChecks) {
  EXPECT_NE(finalizeError("dp=16,tp=1,pp=1", 16)
                .find("= 16 devices, but "
                      "cluster 'dgx-a100-80gb' "
                      "has only 8"),
            std::string::npos);
  // Fewer devices than the cluster has: the plan runs on the first ones.
  {
    Plan p = llvm::cantFail(parsePlan("dp=4,tp=1,pp=1"));
    cluster::Cluster c =
        llvm::cantFail(cluster::resolveCluster("dgx-a100-80gb:1"));
    cost::CostModel cm;
    EXPECT_FALSE(static_cast<bool>(finalizePlan(p, smallModel(), c, 8, cm)));
  }
  EXPECT_NE(finalizeError("dp=8", 12).find("not divisible by dp*mbs = 8"),
            std::string::npos);
  EXPECT_NE(finalizeError("dp=4,pp=2,chunks=2", 8)
                .find("needs "
                      "schedule=interleaved"),
            std::string::npos);
  EXPECT_NE(
      finalizeError("dp=4,pp=2,schedule=interleaved", 8).find("chunks >= 2"),
      std::string::npos);
  EXPECT_NE(finalizeError("dp=2,pp=4,schedule=interleaved,chunks=2", 6)
                .find("multiple of pp"),
            std::string::npos);
  EXPECT_NE(finalizeError("dp=1,pp=8,schedule=interleaved,chunks=2", 8)
                .find("only 10 layers"),
            std::string::npos);
  EXPECT_NE(finalizeError("dp=4,pp=2,stages=3/5", 8).find("lists 2 boundaries"),
            std::string::npos);
  EXPECT_NE(finalizeError("dp=2,pp=4,stages=3/3/5", 8).find("greater than 3"),
            std::string::npos);
  EXPECT_NE(finalizeError("dp=2,pp=4,stages=3/5/10", 8).find("less than 10"),
            std::string::npos);
}

TEST(Plan, FinalizeDerivesMicrobatchesAndBalancedStages) {
  Plan p = llvm::cantFail(parsePlan("dp=2,tp=2,pp=2,mbs=2"));
  cluster::Cluster c = llvm::cantFail(cluster::getPreset("dgx-a100-80gb"));
  cost::CostModel cm;
  cost::ModelDesc m = smallModel();
  ASSERT_FALSE(static_cast<bool>(finalizePlan(p, m, c, 64, cm)));
  EXPECT_EQ(p.numMicrobatches, 16u);
  ASSERT_EQ(p.cuts.size(), 1u);
  // Embedding + 8 blocks + head: the split is near the middle.
  EXPECT_GE(p.cuts[0], 4u);
  EXPECT_LE(p.cuts[0], 6u);
  EXPECT_EQ(p.stageLayers(0, 10), std::make_pair(0u, p.cuts[0]));
  EXPECT_EQ(p.stageLayers(1, 10), std::make_pair(p.cuts[0], 10u));
  EXPECT_EQ(p.globalRank(1, 1, 1), 7u);
}

TEST(Plan, BalancedCutsMinimiseTheLargestStage) {
  EXPECT_EQ(balancedCuts({1, 1, 1, 1, 1, 1}, {1, 1, 1}),
            (std::vector<unsigned>{2, 4}));
  EXPECT_EQ(balancedCuts({5, 1, 1, 1, 1, 1}, {1, 1}),
            (std::vector<unsigned>{1}));
  // A stage twice as slow gets half the layers.
  EXPECT_EQ(balancedCuts({1, 1, 1, 1, 1, 1}, {2, 1}),
            (std::vector<unsigned>{2}));
  EXPECT_TRUE(balancedCuts({1, 2}, {1}).empty());
}

TEST(Plan, HeterogeneousClusterGivesSlowDevicesLessWork) {
  // pp=2 on mixed A100 (node 0) + V100 (node 1): stage 1 runs on V100s.
  Plan p = llvm::cantFail(parsePlan("dp=8,pp=2"));
  cluster::Cluster c = llvm::cantFail(cluster::getPreset("mixed-a100-v100", 2));
  cost::CostModel cm;
  cost::ModelDesc m = smallModel(16);
  ASSERT_FALSE(static_cast<bool>(finalizePlan(p, m, c, 64, cm)));
  EXPECT_GT(p.cuts[0], 18u / 2 + 1);
}

TEST(PipelineCosts, LossScaledPerMicrobatchUpdatesWaitForTheWorld) {
  // The programs or the fp16 overflow flags over the world before each
  // update; only PipeDream and PipeMare update after every micro-batch.
  cluster::Cluster c = llvm::cantFail(cluster::getPreset("dgx-a100-80gb", 1));
  cost::CostModel cm;
  cost::ModelDesc m = smallModel();
  for (llvm::StringRef schedule :
       {"1f1b", "pipedream-2bw", "pipedream", "pipemare"})
    for (cluster::DType dt : {cluster::DType::F16, cluster::DType::BF16}) {
      Plan p =
          llvm::cantFail(parsePlan(("pp=2,mbs=1,schedule=" + schedule).str()));
      p.dtype = dt;
      ASSERT_FALSE(static_cast<bool>(finalizePlan(p, m, c, 8, cm)));
      bool waits = dt == cluster::DType::F16 &&
                   (schedule == "pipedream" || schedule == "pipemare");
      EXPECT_EQ(buildPipelineCosts(p, m, c, cm, {}).updatesWaitForWorld, waits)
          << schedule.str() << " " << cluster::dtypeName(dt).str();
    }
}

TEST(PipelineCosts, StagesLinksAndMemory) {
  Plan p = llvm::cantFail(parsePlan("dp=2,tp=4,pp=2,recompute=full"));
  cluster::Cluster c = llvm::cantFail(cluster::getPreset("dgx-a100-80gb", 2));
  cost::CostModel cm;
  cost::ModelDesc m = smallModel();
  ASSERT_FALSE(static_cast<bool>(finalizePlan(p, m, c, 16, cm)));
  PipelineCosts pc = buildPipelineCosts(p, m, c, cm, {});
  ASSERT_EQ(pc.stages.size(), 2u);
  // Stage 0 is node 0, stage 1 node 1: the boundary crosses InfiniBand,
  // and with scatter/gather each TP rank sends a quarter.
  EXPECT_EQ(pc.stages[0].nextLevel, cluster::LinkLevel::Network);
  EXPECT_DOUBLE_EQ(pc.stages[0].sendNextBytes, 256.0 * 512 * 2 / 4);
  EXPECT_GT(pc.stages[0].sendNextTime, 0);
  EXPECT_DOUBLE_EQ(pc.stages[1].sendNextTime, 0);
  EXPECT_GT(pc.stages[1].sendPrevTime, 0);
  // TP all-reduces stay on NVLink; DP sync crosses nodes? dp ranks 0 and 4
  // share node 0, so the sync is intra-node.
  EXPECT_GT(pc.stages[0].mbBytes[0], 0);
  EXPECT_DOUBLE_EQ(pc.stages[0].mbBytes[1], 0);
  EXPECT_GT(pc.stages[0].gradSyncTime, 0);
  EXPECT_DOUBLE_EQ(pc.stages[0].gradSyncBytes[1], 0);
  EXPECT_EQ(pc.levelNames[1], "infiniband");
  EXPECT_EQ(pc.devices[0].devicesInGroup, 8u);
  EXPECT_GT(pc.devices[0].staticMemory.staticBytes(), 0);
  EXPECT_GT(pc.devices[0].optimizerTime, 0);
  // Full recompute keeps the layer input only.
  double perLayer = 256.0 * 512 * 2;
  unsigned blocks = pc.stages[0].layerEnd - 1; // embedding is not a block
  EXPECT_GT(pc.stages[0].activationBytes, blocks * perLayer);
  // Weight versions add stashed copies.
  PipelineCosts two = buildPipelineCosts(p, m, c, cm, {2, 2});
  EXPECT_NEAR(two.devices[0].staticMemory.weightStash,
              two.devices[0].staticMemory.weights, 1e-6);
}

TEST(PipelineCosts, TheTimesPartGivesTheSameTimes) {
  // The search prices plans with CostParts::Times: every time, the
  // offloaded transfers' included, as the whole costs give it, bit for bit.
  cluster::Cluster c = llvm::cantFail(cluster::getPreset("dgx-a100-80gb", 2));
  c.groups[0].tiers[cluster::Tier::Host] = {1e12, 25e9};
  c.groups[0].tiers[cluster::Tier::NVMe] = {8e12, 6e9};
  cost::CostModel cm;
  cost::ModelDesc m = smallModel(12);
  unsigned moved = 0; // stages with offload transfers
  for (const char *spec :
       {"dp=2,tp=4,pp=2,recompute=full", "dp=2,tp=2,pp=4,zero=1,sp=1",
        "dp=2,tp=2,pp=4,schedule=interleaved,chunks=2,recompute=selective",
        "dp=4,pp=4,schedule=zb-v,chunks=2", "dp=4,tp=2,pp=2,zero=3",
        "dp=8,pp=2,zero=2,offload=opt+act", "dp=16,zero=3,offload=opt+params",
        "dp=4,tp=2,pp=2,schedule=pipedream"}) {
    SCOPED_TRACE(spec);
    Plan p = llvm::cantFail(parsePlan(spec));
    ASSERT_FALSE(static_cast<bool>(finalizePlan(p, m, c, 64, cm)));
    std::vector<unsigned> versions(p.pp, 2);
    PipelineCosts all = buildPipelineCosts(p, m, c, cm, versions);
    PipelineCosts times = buildPipelineCosts(p, m, c, cm, versions, {}, nullptr,
                                             CostParts::Times);
    ASSERT_EQ(all.stages.size(), times.stages.size());
    for (unsigned s = 0; s < all.stages.size(); ++s) {
      const StageCost &a = all.stages[s], &t = times.stages[s];
      for (auto [x, y] :
           {std::pair{a.fwd, t.fwd},
            {a.bwdInput, t.bwdInput},
            {a.bwdWeight, t.bwdWeight},
            {a.bwdWeightAccumulate, t.bwdWeightAccumulate},
            {a.recompute, t.recompute},
            {a.fwdComm, t.fwdComm},
            {a.bwdComm, t.bwdComm},
            {a.sendNextTime, t.sendNextTime},
            {a.sendPrevTime, t.sendPrevTime},
            {a.gradSyncTime, t.gradSyncTime},
            {a.gradGatherTime, t.gradGatherTime},
            {a.offload.forwardTransfer(), t.offload.forwardTransfer()},
            {a.offload.backwardTransfer(), t.offload.backwardTransfer()}})
        EXPECT_EQ(x, y) << "stage " << s;
      EXPECT_EQ(t.stashBytes, 0);
      moved += t.offload.forwardTransfer() > 0;
    }
    ASSERT_EQ(all.devices.size(), times.devices.size());
    for (unsigned d = 0; d < all.devices.size(); ++d) {
      EXPECT_EQ(all.devices[d].optimizerTime, times.devices[d].optimizerTime);
      EXPECT_EQ(all.devices[d].cpuStepTime, times.devices[d].cpuStepTime);
      EXPECT_EQ(all.devices[d].computeScale, times.devices[d].computeScale);
      EXPECT_GT(all.devices[d].workingBytes, 0);
      EXPECT_EQ(times.devices[d].workingBytes, 0);
    }
  }
  EXPECT_EQ(moved, 3u);
}

TEST(PipelineCosts, TiedHeadCopyIsExchangedNotUpdated) {
  // buildGpt's logits read the embedding's table (tiedLayer 0): at pp=2 the
  // last rank holds its tp shard as a copy, without optimizer state or a
  // data-parallel sync of it, and both ranks' optimizer steps carry the
  // once-a-step messages (the part in, the updated weight back).
  cluster::Cluster c = llvm::cantFail(cluster::getPreset("dgx-a100-80gb", 1));
  cost::CostModel cm;
  cost::ModelDesc m = smallModel();
  Plan p = llvm::cantFail(parsePlan("dp=2,tp=2,pp=2,schedule=1f1b"));
  ASSERT_FALSE(static_cast<bool>(finalizePlan(p, m, c, 16, cm)));
  TiedExchange tied = tiedExchange(p, m, c, cm, 4);
  const double shard = 1000.0 * 512 / 2; // the table's rows on a tensor rank
  EXPECT_DOUBLE_EQ(tied.copies[0].total(), 0);
  EXPECT_DOUBLE_EQ(tied.copies[1].total(), shard);
  // One message each way, over NVLink.
  for (unsigned r : {0u, 1u}) {
    EXPECT_DOUBLE_EQ(tied.sentBytes[r][0], shard * 4) << r;
    EXPECT_DOUBLE_EQ(tied.sentBytes[r][1], 0) << r;
  }
  EXPECT_GT(tied.time[0], 0);
  // The head's list also transposes its part to the table's layout once:
  // the shard in f32 read and written.
  const cluster::DeviceSpec &dev = c.deviceOf(p.globalRank(1, 0, 0));
  EXPECT_DOUBLE_EQ(tied.time[1] - tied.time[0],
                   cm.computeTime({0, shard * 4, shard * 4},
                                  cluster::OpClass::DataMovement,
                                  cluster::DType::F32, dev));

  PipelineCosts pc = buildPipelineCosts(p, m, c, cm, {});
  const StageCost &last = pc.stages[1];
  cost::ParamSplit own{last.params - shard, 0};
  cost::MemoryConfig mem = memoryConfig(p, {});
  cost::MemoryBreakdown held = cost::staticMemory(own, mem),
                        copy = cost::staticMemory(shard, mem);
  const cost::MemoryBreakdown &got = pc.devices[1].staticMemory;
  EXPECT_DOUBLE_EQ(got.weights, held.weights + copy.weights);
  EXPECT_DOUBLE_EQ(got.grads, held.grads + copy.grads);
  EXPECT_DOUBLE_EQ(got.optimizer, held.optimizer);
  // The last rank's sync: its own weights only.
  cost::GroupShape dpg = dataGroup(p, c, 1);
  double elem = mem.gradSyncBytes > 0 ? mem.gradSyncBytes
                : mem.mixedPrecision  ? 2
                                      : 4;
  EXPECT_DOUBLE_EQ(last.gradSyncTime,
                   cost::CostModel::collective(cost::Collective::AllReduce,
                                               own.dense * elem, dpg)
                       .time);
  // Asynchronous schedules (whose programs refuse tied weights) keep the
  // copy as the reader's own weight.
  Plan async = llvm::cantFail(parsePlan("dp=2,tp=2,pp=2,schedule=pipedream"));
  ASSERT_FALSE(static_cast<bool>(finalizePlan(async, m, c, 16, cm)));
  EXPECT_DOUBLE_EQ(tiedExchange(async, m, c, cm, 4).copies[1].total(), 0);
}

TEST(PipelineCosts, TiedExchangeWithStageReplicas) {
  // replicas=1/2: the owner's one list (slot 0) receives the part of each
  // of the head's two replicas (slots 1 and 2) and sends each the updated
  // weight, as dist-partition's programs do; every message is one tensor
  // rank's shard over NVLink.
  cluster::Cluster c = llvm::cantFail(cluster::getPreset("dgx-a100-80gb", 1));
  cost::CostModel cm;
  cost::ModelDesc m = smallModel();
  Plan p = llvm::cantFail(parsePlan("tp=2,replicas=1/2,schedule=1f1b"));
  ASSERT_FALSE(static_cast<bool>(finalizePlan(p, m, c, 16, cm)));
  TiedExchange tied = tiedExchange(p, m, c, cm, 4);
  ASSERT_EQ(tied.sentBytes.size(), 3u);
  const double bytes = 1000.0 * 512 / 2 * 4;
  EXPECT_DOUBLE_EQ(tied.sent(0), 2 * bytes);
  EXPECT_DOUBLE_EQ(tied.sent(1), bytes);
  EXPECT_DOUBLE_EQ(tied.sent(2), bytes);
  const double t = cost::CostModel::p2pTime(
      bytes, c.linkBetween(p.globalRank(0, 0, 0), p.globalRank(1, 1, 0)));
  EXPECT_DOUBLE_EQ(tied.time[0], 4 * t);
  EXPECT_GT(tied.time[1], 2 * t); // and the head's transpose
  EXPECT_DOUBLE_EQ(tied.time[1], tied.time[2]);
  // Each slot's list carries its own share.
  PipelineCosts pc = buildPipelineCosts(p, m, c, cm, {});
  ASSERT_EQ(pc.devices.size(), 3u);
  for (unsigned l = 0; l < 3; ++l)
    EXPECT_DOUBLE_EQ(pc.devices[l].tiedBytes[0], tied.sent(l)) << l;
}

TEST(PipelineCosts, AsynchronousSchedulesUnderZeroShardOnlyTheOptimizer) {
  // What dist-partition runs: ZeRO-1 under PipeDream, PipeMare and 2BW
  // shards the optimizer state over the stage's replicas; the weights,
  // the stashed versions (PipeMare's velocity, 2BW's second buffer) and
  // the gradient stay whole. ZeRO-2 shards the gradient too (2BW's sum,
  // PipeDream's and PipeMare's inside the backward call), not the rest.
  cluster::Cluster c = llvm::cantFail(cluster::getPreset("dgx-a100-80gb", 1));
  cost::CostModel cm;
  cost::ModelDesc m = smallModel();
  for (const char *kind : {"pipedream", "pipemare", "2bw"}) {
    SCOPED_TRACE(kind);
    auto costs = [&](unsigned zero) {
      Plan p =
          llvm::cantFail(parsePlan(std::string("dp=4,pp=2,schedule=") + kind +
                                   ",zero=" + std::to_string(zero)));
      EXPECT_FALSE(static_cast<bool>(finalizePlan(p, m, c, 32, cm)));
      Schedule s = llvm::cantFail(generateSchedule(
          p.schedule, p.pp, p.chunks, p.numMicrobatches, scheduleOptions(p)));
      return buildPipelineCosts(p, m, c, cm, s.weightVersions);
    };
    PipelineCosts whole = costs(0), sharded = costs(1);
    const cost::MemoryBreakdown &w = whole.devices[0].staticMemory,
                                &z = sharded.devices[0].staticMemory;
    EXPECT_GT(w.weightStash, 0);
    EXPECT_DOUBLE_EQ(z.weights, w.weights);
    EXPECT_DOUBLE_EQ(z.weightStash, w.weightStash);
    EXPECT_DOUBLE_EQ(z.grads, w.grads);
    EXPECT_DOUBLE_EQ(z.optimizer, w.optimizer / 4);
    PipelineCosts grads = costs(2);
    const cost::MemoryBreakdown &g = grads.devices[0].staticMemory;
    EXPECT_DOUBLE_EQ(g.grads, w.grads / 4);
    EXPECT_DOUBLE_EQ(g.weights, w.weights);
    EXPECT_DOUBLE_EQ(g.weightStash, w.weightStash);
    EXPECT_DOUBLE_EQ(g.optimizer, w.optimizer / 4);
    // Each sync action's time: PipeDream and PipeMare reduce-scatter one
    // micro-batch's gradient per update under ZeRO-1 and ZeRO-2 alike;
    // 2BW's ZeRO-2 reduce-scatters each of the step's micro-batches'
    // where ZeRO-1 reduce-scatters their sum once.
    const StageCost &one = sharded.stages[0], &two = grads.stages[0];
    const double scatter1 = one.gradSyncTime - one.gradGatherTime,
                 scatter2 = two.gradSyncTime - two.gradGatherTime;
    EXPECT_GT(scatter1, 0);
    EXPECT_DOUBLE_EQ(two.gradGatherTime, one.gradGatherTime);
    if (std::string(kind) == "2bw") {
      EXPECT_GT(grads.microbatches, 1u);
      EXPECT_DOUBLE_EQ(scatter2, grads.microbatches * scatter1);
    } else {
      EXPECT_DOUBLE_EQ(scatter2, scatter1);
    }
  }
}

TEST(Plan, ZeroStagesEachScheduleRuns) {
  // One rule for dist-partition and the search: the synchronous schedules
  // run every ZeRO stage, the asynchronous ones (whole weight versions) up
  // to ZeRO-2.
  for (ScheduleKind k :
       {ScheduleKind::GPipe, ScheduleKind::OneFOneB, ScheduleKind::Interleaved,
        ScheduleKind::ZBH1, ScheduleKind::ZBH2, ScheduleKind::ZBV,
        ScheduleKind::VHalf, ScheduleKind::VMin, ScheduleKind::DualPipeV})
    EXPECT_EQ(maxZeroStage(k), 3u) << scheduleName(k).str();
  EXPECT_EQ(maxZeroStage(ScheduleKind::PipeDream2BW), 2u);
  EXPECT_EQ(maxZeroStage(ScheduleKind::PipeDream), 2u);
  EXPECT_EQ(maxZeroStage(ScheduleKind::PipeMare), 2u);
}

} // namespace

namespace {
TEST(Plan, GroupShapesFollowTheRankLayout) {
  Plan p = llvm::cantFail(parsePlan("dp=4,tp=4,pp=2"));
  cluster::Cluster c = llvm::cantFail(cluster::getPreset("dgx-a100-80gb", 4));
  // Stage 0 spans ranks 0-15: TP groups of 4 inside a node; the DP group
  // {0, 4, 8, 12} has two ranks on each of two nodes.
  cost::GroupShape tp = tensorGroup(p, c, 0);
  EXPECT_EQ(tp.size, 4u);
  EXPECT_EQ(tp.perNode, 4u);
  EXPECT_EQ(tp.nodes(), 1u);
  EXPECT_EQ(tp.intra.name, "nvlink");
  cost::GroupShape dp = dataGroup(p, c, 1);
  EXPECT_EQ(dp.size, 4u);
  EXPECT_EQ(dp.perNode, 2u);
  EXPECT_EQ(dp.nodes(), 2u);
  EXPECT_EQ(dp.inter.name, "infiniband");
}

TEST(Plan, ExpertGroupShapesAreTheLayoutsFirstGroups) {
  // expertGroup / expertDataGroup build the first group alone: the shape
  // of RankLayout's first expert (data) group of the stage.
  cluster::Cluster c = llvm::cantFail(cluster::getPreset("dgx-h100", 32));
  for (const char *spec : {"dp=32,pp=4,cp=2,ep=4", "dp=8,tp=2,pp=2,ep=8",
                           "dp=16,tp=8,ep=16", "dp=6,tp=4,cp=2,pp=2,ep=2"}) {
    SCOPED_TRACE(spec);
    Plan p = llvm::cantFail(parsePlan(spec));
    for (unsigned s = 0; s < p.pp; ++s) {
      for (auto [got, want] :
           {std::pair{expertGroup(p, c, s),
                      shapeOf(c, p.expertGroups(s, p.ep).front())},
            std::pair{expertDataGroup(p, c, s),
                      shapeOf(c, p.expertDataGroups(s, p.ep).front())}}) {
        EXPECT_EQ(got.size, want.size);
        EXPECT_EQ(got.perNode, want.perNode);
        EXPECT_EQ(got.intra.name, want.intra.name);
        EXPECT_EQ(got.inter.bandwidth, want.inter.bandwidth);
      }
    }
  }
}
} // namespace
