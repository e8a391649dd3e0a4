//===- ParallelismTest.cpp - Sequence, context, expert parallel plans -*- C++ -*-//

#include "lib/Cost/LlmModels.h"
#include "lib/Schedule/Schedule.h"

#include "gtest/gtest.h"

using namespace distopt;
using namespace distopt::schedule;

namespace {

std::string parseError(llvm::StringRef spec) {
  auto p = parsePlan(spec);
  EXPECT_FALSE(static_cast<bool>(p)) << spec.str();
  return p ? std::string() : llvm::toString(p.takeError());
}

/// The finalized plan \p spec's pipeline costs.
PipelineCosts costsOf(const cost::ModelDesc &m, const cluster::Cluster &c,
                      llvm::StringRef spec, unsigned batch) {
  cost::CostModel cm;
  Plan p = llvm::cantFail(parsePlan(spec));
  llvm::Error e = finalizePlan(p, m, c, batch, cm);
  EXPECT_FALSE(static_cast<bool>(e)) << spec.str();
  llvm::consumeError(std::move(e));
  return buildPipelineCosts(p, m, c, cm, {});
}

cost::LlmConfig smallMoe() {
  cost::LlmConfig c = cost::mixtral8x7b();
  c.layers = 4;
  c.seqLen = 2048;
  return c;
}

TEST(ParallelPlan, ParsesAndPrintsSpCpEp) {
  Plan p = llvm::cantFail(
      parsePlan("dp=8,tp=2,cp=2,ep=4,sp=1,pp=2,expert_imbalance=1.25"));
  EXPECT_EQ(p.cp, 2u);
  EXPECT_EQ(p.ep, 4u);
  EXPECT_TRUE(p.sp);
  EXPECT_DOUBLE_EQ(p.expertImbalance, 1.25);
  EXPECT_EQ(p.numDevices(), 8u * 2 * 2 * 2);
  Plan q = llvm::cantFail(parsePlan(p.str()));
  EXPECT_EQ(q.str(), p.str());
  EXPECT_NE(p.str().find(",cp=2,ep=4,sp=1,expert_imbalance=1.25"),
            std::string::npos)
      << p.str();
  // Defaults print nothing new.
  EXPECT_EQ(llvm::cantFail(parsePlan("dp=2")).str().find("cp="),
            std::string::npos);
  // Megatron's communication overlaps.
  Plan o =
      llvm::cantFail(parsePlan("dp=2,tp=2,zero=1,tp_overlap=1,ag_overlap=1"));
  EXPECT_TRUE(o.tpOverlap);
  EXPECT_TRUE(o.overlapParamGather);
  EXPECT_EQ(llvm::cantFail(parsePlan(o.str())).str(), o.str());
  EXPECT_NE(o.str().find("tp_overlap=1"), std::string::npos);
  EXPECT_NE(o.str().find("ag_overlap=1"), std::string::npos);
  // The parameter all-gather no longer ends the iteration.
  ScheduleOptions so = scheduleOptions(o);
  Schedule s = llvm::cantFail(generateSchedule(o.schedule, 1, 1, 4, so));
  EXPECT_EQ(s.devices[0].back().kind, ActionKind::OptimizerStep);
  so.overlapParamGather = false;
  Schedule t = llvm::cantFail(generateSchedule(o.schedule, 1, 1, 4, so));
  EXPECT_EQ(t.devices[0].back().kind, ActionKind::AllGather);
}

TEST(ParallelPlan, Errors) {
  EXPECT_NE(parseError("dp=6,ep=4").find("ep=4 must divide dp=6"),
            std::string::npos);
  EXPECT_NE(parseError("expert_imbalance=0.5").find("must be a number >= 1"),
            std::string::npos);
  EXPECT_NE(parseError("cp=0").find("'cp=0' must be an integer >= 1"),
            std::string::npos);
  EXPECT_NE(parseError("replicas=3/1,cp=2").find("cp=1 and ep=1"),
            std::string::npos);
  // A dense model has no experts to split.
  Plan p = llvm::cantFail(parsePlan("dp=8,ep=8"));
  cluster::Cluster c = llvm::cantFail(cluster::getPreset("dgx-h100"));
  cost::CostModel cm;
  cost::LlmConfig dense = cost::llama3_8b();
  dense.layers = 2;
  llvm::Error e = finalizePlan(p, cost::buildLlm(dense), c, 8, cm);
  ASSERT_TRUE(static_cast<bool>(e));
  EXPECT_NE(llvm::toString(std::move(e)).find("has no expert"),
            std::string::npos);
  // cp counts in the device product.
  Plan q = llvm::cantFail(parsePlan("dp=8,cp=2"));
  llvm::Error e2 = finalizePlan(q, cost::buildLlm(dense), c, 8, cm);
  ASSERT_TRUE(static_cast<bool>(e2));
  EXPECT_NE(llvm::toString(std::move(e2)).find("dp*tp*cp*pp = 8*1*2*1 = 16"),
            std::string::npos);
}

TEST(ParallelPlan, RankLayoutIsTpCpDpPp) {
  Plan p = llvm::cantFail(parsePlan("dp=4,tp=2,cp=2,ep=2,pp=2"));
  EXPECT_EQ(p.globalRank(0, 0, 1, 0), 1u);
  EXPECT_EQ(p.globalRank(0, 0, 0, 1), 2u);
  EXPECT_EQ(p.globalRank(0, 1, 0, 0), 4u);
  EXPECT_EQ(p.globalRank(1, 0, 0, 0), 16u);
  cluster::Cluster c = llvm::cantFail(cluster::getPreset("dgx-h100", 4));
  cost::GroupShape cpg = contextGroup(p, c, 0);
  EXPECT_EQ(cpg.size, 2u);
  EXPECT_EQ(cpg.nodes(), 1u);
  // Dense gradients over every (d, c): 8 ranks, 2 per node.
  cost::GroupShape dpg = dataGroup(p, c, 0);
  EXPECT_EQ(dpg.size, 8u);
  EXPECT_EQ(dpg.perNode, 4u);
  // EP: replicas 0 and 1 (ranks 0 and 4); expert gradients over replicas
  // 0 and 2, every c: 4 ranks.
  EXPECT_EQ(expertGroup(p, c, 0).size, 2u);
  EXPECT_EQ(expertDataGroup(p, c, 0).size, 4u);
  // The per-device program: rank 6 is (t=0, c=1, d=1, stage 0); its peer in
  // stage 1 is rank 22.
  Schedule s = llvm::cantFail(generateSchedule(ScheduleKind::OneFOneB, 2, 1, 4));
  bool sendsTo22 = false;
  for (const RankAction &a : actionsForRank(s, p, 6))
    sendsTo22 |= a.action.kind == ActionKind::SendActivation &&
                 a.peerRank == 22;
  EXPECT_TRUE(sendsTo22);
}

TEST(ParallelPlan, ContextParallelCostsAndMemory) {
  cost::LlmConfig cfg = cost::llama3_8b();
  cfg.layers = 4;
  cfg.seqLen = 16384;
  cost::ModelDesc m = cost::buildLlm(cfg);
  cluster::Cluster c = llvm::cantFail(cluster::getPreset("dgx-h100", 1));
  auto costs = [&](const char *spec) { return costsOf(m, c, spec, 8); };
  PipelineCosts one = costs("dp=8");
  PipelineCosts two = costs("dp=4,cp=2");
  // Half the tokens per device (the K/V ring hides on NVLink): about half
  // the time and half the activations; the weights are the same.
  EXPECT_NEAR(two.stages[0].fwd, one.stages[0].fwd / 2,
              0.05 * one.stages[0].fwd);
  EXPECT_NEAR(two.stages[0].activationBytes, one.stages[0].activationBytes / 2,
              1e-6 * one.stages[0].activationBytes);
  EXPECT_DOUBLE_EQ(two.stages[0].params, one.stages[0].params);
  EXPECT_EQ(two.devices[0].devicesInGroup, 8u);
  // Gradients are reduced over all 8 ranks either way.
  EXPECT_NEAR(two.stages[0].gradSyncTime, one.stages[0].gradSyncTime,
              1e-12 + 1e-9 * one.stages[0].gradSyncTime);
}

TEST(ParallelPlan, ExpertParallelShardsExpertsAndSyncsThemApart) {
  cost::ModelDesc m = cost::buildLlm(smallMoe());
  cluster::Cluster c = llvm::cantFail(cluster::getPreset("dgx-h100", 2));
  auto costs = [&](const char *spec) { return costsOf(m, c, spec, 16); };
  PipelineCosts dp = costs("dp=16");
  PipelineCosts ep = costs("dp=16,ep=8");
  const StageCost &a = dp.stages[0], &b = ep.stages[0];
  EXPECT_NEAR(b.expertParams, a.expertParams / 8, 1);
  EXPECT_NEAR(b.params - b.expertParams, a.params - a.expertParams, 1);
  // The all-to-alls cost time; the expert gradients move over a group of
  // 2 instead of 16 and are 8x smaller: the sync gets cheaper.
  EXPECT_GT(b.fwdComm, 0);
  EXPECT_DOUBLE_EQ(a.fwdComm, 0);
  EXPECT_LT(b.gradSyncTime, a.gradSyncTime);
  EXPECT_LT(ep.devices[0].staticMemory.staticBytes(),
            dp.devices[0].staticMemory.staticBytes() / 4);
  // Imbalance slows the expert ops.
  PipelineCosts skew = costs("dp=16,ep=8,expert_imbalance=1.5");
  EXPECT_GT(skew.stages[0].fwd, b.fwd);
}

TEST(ParallelPlan, SequenceParallelKeepsBoundariesSplit) {
  cost::GptConfig g;
  g.layers = 4;
  g.hidden = 1024;
  g.heads = 16;
  g.seqLen = 1024;
  cost::ModelDesc m = cost::buildGpt(g);
  cluster::Cluster c = llvm::cantFail(cluster::getPreset("dgx-h100", 2));
  auto costs = [&](const char *spec) { return costsOf(m, c, spec, 8); };
  PipelineCosts tp = costs("tp=8,pp=2,sg=0");
  PipelineCosts sp = costs("tp=8,pp=2,sp=1,sg=0");
  // 1/t of the boundary per TP rank with no all-gather at the receiver.
  EXPECT_DOUBLE_EQ(sp.stages[0].sendNextBytes, tp.stages[0].sendNextBytes / 8);
  EXPECT_LT(sp.stages[0].sendNextTime, tp.stages[0].sendNextTime);
  EXPECT_LT(sp.stages[0].activationBytes, tp.stages[0].activationBytes);
  // Norms and residuals on 1/t of the sequence: less work per device.
  // (The collectives are latency-bound at this size, where an all-reduce
  // may take the tree and RS + AG cannot, so the time need not drop.)
  EXPECT_LT(sp.stages[0].flops, tp.stages[0].flops);
}

TEST(ParallelPlan, OversubscribedRacksSlowCrossRackGroups) {
  cluster::Cluster c = llvm::cantFail(cluster::getPreset("dgx-h100", 4));
  c.nodesPerRack = 2;
  c.rackOversubscription = 4;
  Plan p = llvm::cantFail(parsePlan("dp=4,tp=8"));
  // dp ranks 0, 8, 16, 24: nodes 0-3, two racks.
  EXPECT_DOUBLE_EQ(dataGroup(p, c, 0).inter.bandwidth, 50e9 / 4);
  Plan q = llvm::cantFail(parsePlan("dp=2,tp=8,pp=2"));
  // Stage 0 on nodes 0-1 (one rack).
  EXPECT_DOUBLE_EQ(dataGroup(q, c, 0).inter.bandwidth, 50e9);
}

} // namespace
