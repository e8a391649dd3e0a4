//===- ReplicatedSimTest.cpp - Simulating per-stage replicas ----*- C++ -*-===//

#include "SimTestUtil.h"

#include "lib/Sim/Report.h"
#include "lib/Sim/Simulator.h"

#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

using namespace distopt;
using namespace distopt::schedule;
using namespace distopt::sim;
using distopt::sim::test::gpt;

namespace {

/// Uniform costs for a replicated pipeline: every slot of stage s takes
/// \p f[s] and \p b[s] per micro-batch, sends are free.
PipelineCosts replicatedUniform(const std::vector<unsigned> &reps, unsigned m,
                                const std::vector<double> &f,
                                const std::vector<double> &b) {
  PipelineCosts c = test::uniform(reps.size(), 1, m, 1, 1, 0);
  for (unsigned s = 0; s < reps.size(); ++s) {
    c.stages[s].fwd = f[s];
    c.stages[s].bwdInput = b[s];
    c.slotStage.insert(c.slotStage.end(), reps[s], s);
  }
  c.devices.resize(c.slotStage.size());
  return c;
}

Schedule genRep(ScheduleKind k, const std::vector<unsigned> &reps,
                unsigned m) {
  ScheduleOptions o;
  o.replicas = reps;
  return llvm::cantFail(generateSchedule(k, reps.size(), 1, m, o));
}

double simTime(const Schedule &s, const PipelineCosts &c) {
  auto r = simulate(s, c);
  EXPECT_TRUE(static_cast<bool>(r)) << llvm::toString(r.takeError());
  return r ? r->iterationTime : -1;
}

TEST(ReplicatedSim, EqualReplicasAreIndependentPipelines) {
  // r replicas of every stage, m micro-batches in all: each replica chain is
  // a plain 1F1B pipeline of m / r micro-batches, (m / r + pp - 1) (F + B).
  for (unsigned r : {1u, 2u, 3u}) {
    unsigned m = 12;
    Schedule s = genRep(ScheduleKind::OneFOneB, {r, r, r}, m);
    PipelineCosts c = replicatedUniform({r, r, r}, m, {1, 1, 1}, {2, 2, 2});
    EXPECT_DOUBLE_EQ(simTime(s, c), (m / r + 3 - 1) * 3.0) << r;
  }
}

TEST(ReplicatedSim, FifteenOneSteadyStateMatchesTheAnalyticThroughput) {
  // Stage 0 is 15x stage 1 and has 15 replicas: each stage finishes one
  // micro-batch per 3 s in the steady state, so an iteration of m
  // micro-batches takes 3 m (PipeDream's balanced "15-1").
  unsigned m = 150;
  Schedule s = genRep(ScheduleKind::PipeDream, {15, 1}, m);
  PipelineCosts c = replicatedUniform({15, 1}, m, {15, 1}, {30, 2});
  auto r = simulate(s, c);
  ASSERT_TRUE(static_cast<bool>(r));
  EXPECT_TRUE(r->steadyState);
  EXPECT_NEAR(r->iterationTime, 3.0 * m, 0.01 * 3.0 * m);
  // Without the replicas stage 0 alone needs 45 s per micro-batch.
  Schedule one = llvm::cantFail(
      generateSchedule(ScheduleKind::PipeDream, 2, 1, m));
  PipelineCosts c1 = test::uniform(2, 1, m, 1, 1, 0);
  c1.stages[0].fwd = 15;
  c1.stages[0].bwdInput = 30;
  c1.stages[1].fwd = 1;
  c1.stages[1].bwdInput = 2;
  EXPECT_NEAR(simTime(one, c1), 45.0 * m, 0.01 * 45.0 * m);
  // Synchronous 1F1B: the same rate plus one fill and drain; GPipe too.
  for (ScheduleKind k : {ScheduleKind::OneFOneB, ScheduleKind::GPipe}) {
    double t = simTime(genRep(k, {15, 1}, m), c);
    EXPECT_GE(t, 3.0 * m) << scheduleName(k).str();
    EXPECT_LE(t, 3.0 * m + 2 * 48) << scheduleName(k).str();
  }
}

TEST(ReplicatedSim, AsyncUpdatesArePricedOncePerRound) {
  // PipeDream and PipeMare at replicas=2/1 over 8 micro-batches update
  // every list once per round of 2: stage 0's replicas after each of
  // their 4 backwards, the lone stage-1 list after every second of its 8.
  for (ScheduleKind k : {ScheduleKind::PipeDream, ScheduleKind::PipeMare}) {
    Schedule s = genRep(k, {2, 1}, 8);
    PipelineCosts c = replicatedUniform({2, 1}, 8, {1, 1}, {2, 2});
    for (DeviceCost &d : c.devices)
      d.optimizerTime = 5;
    auto r = simulate(s, c);
    ASSERT_TRUE(static_cast<bool>(r)) << llvm::toString(r.takeError());
    ASSERT_EQ(r->busyTime.size(), 3u);
    EXPECT_DOUBLE_EQ(r->busyTime[0], 4 * 3 + 4 * 5.0) << scheduleName(k).str();
    EXPECT_DOUBLE_EQ(r->busyTime[1], 4 * 3 + 4 * 5.0) << scheduleName(k).str();
    EXPECT_DOUBLE_EQ(r->busyTime[2], 8 * 3 + 4 * 5.0) << scheduleName(k).str();
  }
}

TEST(ReplicatedSim, UnevenSharesWaitForTheBusiestReplica) {
  // 7 micro-batches over 2 replicas of a lone stage: 4 and 3 of them.
  Schedule s = genRep(ScheduleKind::OneFOneB, {2}, 7);
  PipelineCosts c = replicatedUniform({2}, 7, {1}, {1});
  auto r = simulate(s, c);
  ASSERT_TRUE(static_cast<bool>(r));
  EXPECT_DOUBLE_EQ(r->iterationTime, 8);
  EXPECT_EQ(r->listMicrobatches, (std::vector<unsigned>{4, 3}));
  EXPECT_DOUBLE_EQ(r->busyTime[1], 6);
}

TEST(ReplicatedSim, LockstepCollectivesNeverStall) {
  // The replicas of a stage start each all-reduce together; with a sync
  // and an optimizer step after every round of micro-batches (PipeDream,
  // PipeMare) that couples the replicas, and no shape may stall.
  std::vector<std::vector<unsigned>> shapes = {
      {2, 1}, {1, 2}, {3, 1}, {15, 1}, {2, 3, 1}, {4, 2, 2, 1}, {3, 2, 3}};
  for (ScheduleKind k :
       {ScheduleKind::GPipe, ScheduleKind::OneFOneB, ScheduleKind::PipeDream,
        ScheduleKind::PipeDream2BW, ScheduleKind::PipeMare})
    for (const auto &reps : shapes)
      for (unsigned m : {30u, 60u, 31u}) {
        ScheduleOptions o;
        o.replicas = reps;
        auto s = generateSchedule(k, reps.size(), 1, m, o);
        if (!s) { // uneven asynchronous shares are refused
          llvm::consumeError(s.takeError());
          continue;
        }
        std::vector<double> f(reps.size()), b(reps.size());
        for (unsigned i = 0; i < reps.size(); ++i) {
          f[i] = 1 + i % 2;
          b[i] = 2 + (i * 7) % 3;
        }
        PipelineCosts c = replicatedUniform(reps, m, f, b);
        for (StageCost &st : c.stages) {
          st.gradSyncTime = 0.5;
          st.gradSyncBytes[1] = 1;
          st.sendNextTime = st.sendPrevTime = 0.25;
        }
        for (unsigned l = 0; l < c.devices.size(); ++l) {
          c.devices[l].optimizerTime = 0.1;
          c.devices[l].computeScale = l % 3 ? 1.0 : 0.5; // mixed speeds
        }
        auto r = simulate(*s, c);
        EXPECT_TRUE(static_cast<bool>(r))
            << scheduleName(k).str() << " m=" << m << " stages "
            << reps.size() << ": " << llvm::toString(r.takeError());
      }
}

TEST(ReplicatedSimulatePlan, ReplicasEqualToDpMatchTheDpPlan) {
  cluster::Cluster c = llvm::cantFail(cluster::getPreset("dgx-a100-80gb", 2));
  cost::CostModel cm;
  cost::ModelDesc m = gpt(8);
  // With its head untied: a tied table's exchange is the one place the two
  // layouts' programs differ (under replicas the owner's first replica
  // receives every reading replica's part and sends each the update;
  // PlanTest's TiedExchangeWithStageReplicas).
  for (cost::LayerDesc &layer : m.layers)
    for (cost::OpDesc &op : layer.ops)
      op.tiedLayer = -1;
  for (const char *kind : {"gpipe", "1f1b", "pipedream", "pipedream-2bw"}) {
    std::string k = kind;
    auto dp = simulatePlan(
        m, c, llvm::cantFail(parsePlan("dp=4,tp=2,pp=2,schedule=" + k)), 64,
        cm);
    auto rep = simulatePlan(
        m, c, llvm::cantFail(parsePlan("tp=2,replicas=4/4,schedule=" + k)),
        64, cm);
    ASSERT_TRUE(static_cast<bool>(dp)) << llvm::toString(dp.takeError());
    ASSERT_TRUE(static_cast<bool>(rep)) << llvm::toString(rep.takeError());
    EXPECT_EQ(dp->plan.cuts, rep->plan.cuts) << k;
    EXPECT_NEAR(rep->result.iterationTime, dp->result.iterationTime,
                1e-9 * dp->result.iterationTime)
        << k;
    EXPECT_NEAR(rep->result.tflopsPerDevice, dp->result.tflopsPerDevice,
                1e-6 * dp->result.tflopsPerDevice)
        << k;
    EXPECT_NEAR(rep->result.bytesPerLevel[1], dp->result.bytesPerLevel[1],
                1e-6 * (1 + dp->result.bytesPerLevel[1]))
        << k;
    // Slot 4 (stage 1, replica 0) peaks like pipeline rank 1.
    EXPECT_DOUBLE_EQ(rep->result.peakMemoryBytes[4],
                     dp->result.peakMemoryBytes[1])
        << k;
  }
}

TEST(ReplicatedSimulatePlan, SlotsOnMixedDevicesAndTheReport) {
  // Two nodes: 8 A100 then 8 V100. Stage 0 has 12 replicas (8 A100 + 4
  // V100), stage 1 the other 4 V100.
  cluster::Cluster c = llvm::cantFail(cluster::getPreset("mixed-a100-v100", 2));
  cost::CostModel cm;
  auto ps = simulatePlan(gpt(8), c,
                         llvm::cantFail(parsePlan("replicas=12/4,schedule=1f1b")),
                         96, cm);
  ASSERT_TRUE(static_cast<bool>(ps)) << llvm::toString(ps.takeError());
  const PipelineCosts &pc = ps->costs;
  ASSERT_EQ(pc.devices.size(), 16u);
  EXPECT_EQ(pc.devices[0].deviceName, c.deviceOf(0).name);
  EXPECT_EQ(pc.devices[11].deviceName, c.deviceOf(11).name);
  EXPECT_NE(pc.devices[0].deviceName, pc.devices[11].deviceName);
  // The A100 slots of stage 0 run faster than the stage's (V100) times.
  EXPECT_LT(pc.devices[0].computeScale, 1.0);
  EXPECT_DOUBLE_EQ(pc.devices[11].computeScale, 1.0);
  EXPECT_EQ(pc.devices[0].devicesInGroup, 1u);
  // Stage 0 (12 replicas) gets more layers than stage 1 (4).
  EXPECT_GT(pc.stages[0].layerEnd - pc.stages[0].layerBegin,
            pc.stages[1].layerEnd - pc.stages[1].layerBegin);
  // Its gradient all-reduce spans both nodes.
  EXPECT_GT(pc.stages[0].gradSyncBytes[1], 0);
  EXPECT_EQ(ps->result.peakMemoryBytes.size(), 16u);
  std::string text;
  llvm::raw_string_ostream os(text);
  writeReport(ps->plan, gpt(8), pc, ps->result, os);
  EXPECT_NE(text.find("\"replicas\": [\n      12,\n      4\n    ]"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\"slots\": ["), std::string::npos);
  EXPECT_NE(text.find("\"microbatches\": 8"), std::string::npos);
  EXPECT_NE(text.find("\"microbatches\": 24"), std::string::npos);
}

TEST(ReplicatedSimulatePlan, EachSlotSendsOverItsOwnLinks) {
  // Two servers of four: stage 0 on ranks 0-5, stage 1 on ranks 6-7 (the
  // second server). Slot k of stage 0 talks to stage-1 replica k mod 2:
  // slots 0-3 over Ethernet, slots 4-5 over PCIe.
  cluster::Cluster c = llvm::cantFail(cluster::resolveCluster("pcie-v100x4:2"));
  cost::CostModel cm;
  auto ps = simulatePlan(gpt(8), c,
                         llvm::cantFail(parsePlan("replicas=6/2,schedule=1f1b")),
                         48, cm);
  ASSERT_TRUE(static_cast<bool>(ps)) << llvm::toString(ps.takeError());
  const PipelineCosts &pc = ps->costs;
  ASSERT_EQ(pc.slotSends.size(), 8u);
  EXPECT_EQ(pc.boundary(0, 0).nextLevel, cluster::LinkLevel::Network);
  EXPECT_EQ(pc.boundary(4, 0).nextLevel, cluster::LinkLevel::IntraNode);
  EXPECT_LT(pc.boundary(4, 0).nextTime, pc.boundary(0, 0).nextTime);
  // The stage's own fields keep its slowest pair.
  EXPECT_EQ(pc.stages[0].nextLevel, cluster::LinkLevel::Network);
  EXPECT_DOUBLE_EQ(pc.stages[0].sendNextTime, pc.boundary(0, 0).nextTime);
  // Stage-1 replica 0 (rank 6) hears from slots 0, 2, 4: its gradients go
  // back over the slowest of those, the network.
  EXPECT_EQ(pc.boundary(6, 0).prevLevel, cluster::LinkLevel::Network);
  // The simulated send events take each slot's own time.
  for (const Event &e : ps->result.events)
    if (e.action.kind == ActionKind::SendActivation) {
      EXPECT_NEAR(e.end - e.start, pc.boundary(e.device, 0).nextTime,
                  1e-9 * pc.boundary(0, 0).nextTime);
    }
}

TEST(ReplicatedSimulatePlan, ZeroOneShardsOverEachStagesReplicas) {
  // ZeRO-1 with replicas=6/2: stage 0's slots hold a sixth of its optimizer
  // state, stage 1's a half; weights and gradients stay whole; the update
  // touches the shard only.
  cluster::Cluster c = llvm::cantFail(cluster::getPreset("dgx-a100-80gb"));
  cost::CostModel cm;
  auto sim = [&](const char *spec) {
    auto ps = simulatePlan(gpt(8), c, llvm::cantFail(parsePlan(spec)), 48, cm);
    EXPECT_TRUE(static_cast<bool>(ps)) << llvm::toString(ps.takeError());
    return std::move(*ps);
  };
  PlanSimulation whole = sim("replicas=6/2,schedule=1f1b");
  PlanSimulation sharded = sim("replicas=6/2,schedule=1f1b,zero=1");
  for (unsigned slot : {0u, 5u, 6u, 7u}) {
    unsigned r = slot < 6 ? 6 : 2;
    const cost::MemoryBreakdown &a = whole.costs.devices[slot].staticMemory;
    const cost::MemoryBreakdown &b = sharded.costs.devices[slot].staticMemory;
    EXPECT_GT(a.optimizer, 0) << slot;
    EXPECT_DOUBLE_EQ(b.optimizer, a.optimizer / r) << slot;
    EXPECT_DOUBLE_EQ(b.weights, a.weights) << slot;
    EXPECT_DOUBLE_EQ(b.grads, a.grads) << slot;
    EXPECT_LT(sharded.costs.devices[slot].optimizerTime,
              whole.costs.devices[slot].optimizerTime)
        << slot;
  }
}

TEST(ReplicatedSimulatePlan, FinalizeErrors) {
  cluster::Cluster c = llvm::cantFail(cluster::getPreset("dgx-a100-80gb"));
  cost::CostModel cm;
  auto err = [&](const char *spec, unsigned batch) {
    auto ps = simulatePlan(gpt(4), c, llvm::cantFail(parsePlan(spec)), batch,
                           cm);
    EXPECT_FALSE(static_cast<bool>(ps)) << spec;
    return ps ? std::string() : llvm::toString(ps.takeError());
  };
  EXPECT_NE(err("replicas=6/4", 16).find("tp*sum(replicas) = 1*(6+4) = 10 "
                                         "devices, but cluster "
                                         "'dgx-a100-80gb' has 8; choose "
                                         "replica counts that add up to at "
                                         "most 8"),
            std::string::npos);
  EXPECT_NE(err("replicas=6/2,schedule=interleaved", 16)
                .find("not interleaved"),
            std::string::npos);
  EXPECT_NE(err("replicas=6/2,zero=2", 16)
                .find("ZeRO-2 with per-stage replicas would reduce-scatter "
                      "each micro-batch's gradient"),
            std::string::npos);
  EXPECT_NE(err("replicas=6/2", 4).find("stage 0 has 6 replicas but there "
                                        "are only 4 micro-batches"),
            std::string::npos);
  EXPECT_NE(err("replicas=6/2,schedule=pipedream", 16)
                .find("do not split evenly"),
            std::string::npos);
}

} // namespace
