//===- SimulatorTest.cpp - Simulator results computable by hand -*- C++ -*-===//

#include "SimTestUtil.h"

#include "lib/Sim/Simulator.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace distopt;
using namespace distopt::schedule;
using namespace distopt::sim;
using distopt::sim::test::gpt;
using distopt::sim::test::uniform;

namespace {

Schedule gen(ScheduleKind k, unsigned pp, unsigned chunks, unsigned m,
             ScheduleOptions o = {}) {
  return llvm::cantFail(generateSchedule(k, pp, chunks, m, o));
}

SimResult run(const Schedule &s, const PipelineCosts &c) {
  auto r = simulate(s, c);
  EXPECT_TRUE(static_cast<bool>(r));
  return r ? std::move(*r) : SimResult();
}

const Event *find(const SimResult &r, unsigned dev, ActionKind k, int mb) {
  for (const Event &e : r.events)
    if (e.device == dev && e.action.kind == k && e.action.mb == mb)
      return &e;
  return nullptr;
}

TEST(Simulator, SingleStageIsTheSumOfItsPasses) {
  SimResult r =
      run(gen(ScheduleKind::GPipe, 1, 1, 2), uniform(1, 1, 2, 1, 1.5, 0.5));
  EXPECT_DOUBLE_EQ(r.iterationTime, 6);
  EXPECT_DOUBLE_EQ(r.bubbleFraction, 0);
  EXPECT_DOUBLE_EQ(r.samplesPerSecond, 2.0 / 6);
}

TEST(Simulator, TwoStagesWithTransfers) {
  // r0 F[0,1] send[1,1.5]; r1 F[1.5,2.5] B[2.5,4.5] send[4.5,5]; r0 B[5,7].
  SimResult r = run(gen(ScheduleKind::GPipe, 2, 1, 1),
                    uniform(2, 1, 1, 1, 1.5, 0.5, 0.5));
  EXPECT_DOUBLE_EQ(r.iterationTime, 7);
  const Event *b0 = find(r, 0, ActionKind::Backward, 0);
  ASSERT_NE(b0, nullptr);
  EXPECT_DOUBLE_EQ(b0->start, 5);
  const Event *send = find(r, 1, ActionKind::SendGrad, 0);
  ASSERT_NE(send, nullptr);
  EXPECT_EQ(send->stream, Stream::SendPrev);
  EXPECT_DOUBLE_EQ(send->start, 4.5);
  EXPECT_NEAR(r.bubbleFraction, 4.0 / 7, 1e-12);
  EXPECT_EQ(r.busyTime, (std::vector<double>{3, 3}));
}

TEST(Simulator, OneFOneBMatchesTheClosedForm) {
  for (unsigned p : {2u, 4u})
    for (unsigned m : {4u, 8u}) {
      SimResult r = run(gen(ScheduleKind::OneFOneB, p, 1, m),
                        uniform(p, 1, m, 1, 1.5, 0.5));
      EXPECT_DOUBLE_EQ(r.iterationTime, (m + p - 1) * 3.0);
      EXPECT_NEAR(r.bubbleFraction, (p - 1.0) / (m + p - 1), 1e-12);
    }
  // Interleaved: (1/v) of the bubble.
  SimResult r = run(gen(ScheduleKind::Interleaved, 4, 2, 8),
                    uniform(4, 2, 8, 0.5, 0.75, 0.25));
  EXPECT_DOUBLE_EQ(r.iterationTime, 8 * 3 + 3 * 3 / 2.0);
}

TEST(Simulator, LinkContentionSerialisesSends) {
  // Two activations ready at 0.1 and 0.2 share rank 0's network link.
  SimResult r =
      run(gen(ScheduleKind::GPipe, 2, 1, 2), uniform(2, 1, 2, 0.1, 0.1, 0, 1));
  const Event *s0 = find(r, 0, ActionKind::SendActivation, 0);
  const Event *s1 = find(r, 0, ActionKind::SendActivation, 1);
  ASSERT_TRUE(s0 && s1);
  EXPECT_DOUBLE_EQ(s0->start, 0.1);
  EXPECT_DOUBLE_EQ(s1->start, 1.1);
  EXPECT_DOUBLE_EQ(find(r, 1, ActionKind::Forward, 1)->start, 2.1);
}

TEST(Simulator, BlockingSendsOccupyTheComputeStream) {
  PipelineCosts c = uniform(2, 1, 2, 1, 1, 0, 0.5);
  SimResult overlap = run(gen(ScheduleKind::GPipe, 2, 1, 2), c);
  EXPECT_DOUBLE_EQ(find(overlap, 0, ActionKind::Forward, 1)->start, 1);
  EXPECT_DOUBLE_EQ(find(overlap, 1, ActionKind::Forward, 1)->start, 2.5);
  c.overlapP2P = false;
  SimResult block = run(gen(ScheduleKind::GPipe, 2, 1, 2), c);
  EXPECT_DOUBLE_EQ(find(block, 0, ActionKind::Forward, 1)->start, 1.5);
  EXPECT_EQ(find(block, 0, ActionKind::SendActivation, 0)->stream,
            Stream::Compute);
  EXPECT_DOUBLE_EQ(find(block, 1, ActionKind::Forward, 1)->start, 3);
  // Sends are not compute: the busy time is unchanged.
  EXPECT_EQ(block.busyTime, overlap.busyTime);
}

TEST(Simulator, GradientSyncAndOptimizer) {
  PipelineCosts c = uniform(1, 1, 2, 1, 1.5, 0.5);
  c.stages[0].gradSyncTime = 3;
  c.stages[0].gradSyncBytes[1] = 10;
  c.devices[0].optimizerTime = 1;
  c.devices[0].devicesInGroup = 4;
  SimResult r = run(gen(ScheduleKind::GPipe, 1, 1, 2, {true, 0, true}), c);
  EXPECT_DOUBLE_EQ(r.iterationTime, 6 + 3 + 1);
  EXPECT_DOUBLE_EQ(find(r, 0, ActionKind::OptimizerStep, -1)->start, 9);
  EXPECT_DOUBLE_EQ(r.bytesPerLevel[1], 40);
  // ZeRO: reduce-scatter before the step, all-gather after it.
  SimResult z = run(gen(ScheduleKind::GPipe, 1, 1, 2, {true, 1, true}), c);
  EXPECT_DOUBLE_EQ(z.iterationTime, 6 + 1.5 + 1 + 1.5);
  EXPECT_DOUBLE_EQ(z.bytesPerLevel[1], 40);
}

TEST(Simulator, OverlappedSyncHidesBehindOtherChunks) {
  // Interleaved on one rank: chunk 1 finishes its backward first, and its
  // sync runs while chunk 0's backward computes.
  PipelineCosts c = uniform(1, 2, 2, 1, 1, 0);
  for (auto &st : c.stages)
    st.gradSyncTime = 1;
  SimResult early =
      run(gen(ScheduleKind::Interleaved, 1, 2, 2, {true, 0, true}), c);
  SimResult late =
      run(gen(ScheduleKind::Interleaved, 1, 2, 2, {true, 0, false}), c);
  EXPECT_DOUBLE_EQ(early.iterationTime, 8 + 1);
  EXPECT_DOUBLE_EQ(late.iterationTime, 8 + 2);
}

TEST(Simulator, ByteAccountingPerLevel) {
  PipelineCosts c = uniform(2, 1, 3, 1, 1, 0, 0.1);
  for (auto &st : c.stages) {
    st.sendNextBytes = st.sendPrevBytes = 100;
    st.mbBytes[0] = 7;
  }
  for (auto &d : c.devices)
    d.devicesInGroup = 4;
  SimResult r = run(gen(ScheduleKind::OneFOneB, 2, 1, 3), c);
  EXPECT_DOUBLE_EQ(r.bytesPerLevel[1], 3 * 2 * 100 * 4);
  EXPECT_DOUBLE_EQ(r.bytesPerLevel[0], 2 * 3 * 7 * 4);
}

TEST(Simulator, TiedExchangeBytesOnceAStep) {
  // The tied weights' messages (DeviceCost::tiedBytes) count once an
  // iteration for every device of a list, whatever the micro-batches.
  PipelineCosts c = uniform(2, 1, 3, 1, 1, 0, 0.1);
  for (auto &d : c.devices)
    d.devicesInGroup = 4;
  SimResult before = run(gen(ScheduleKind::OneFOneB, 2, 1, 3), c);
  c.devices[0].tiedBytes[0] = 50;
  c.devices[1].tiedBytes[0] = 50;
  c.devices[1].tiedBytes[1] = 7;
  SimResult after = run(gen(ScheduleKind::OneFOneB, 2, 1, 3), c);
  EXPECT_DOUBLE_EQ(after.bytesPerLevel[0] - before.bytesPerLevel[0],
                   2 * 50 * 4);
  EXPECT_DOUBLE_EQ(after.bytesPerLevel[1] - before.bytesPerLevel[1], 7 * 4);
  EXPECT_DOUBLE_EQ(after.iterationTime, before.iterationTime);
}

TEST(Simulator, FlopRatesCountRecomputation) {
  PipelineCosts c = uniform(1, 1, 2, 1, 1.5, 0.5);
  c.stages[0].flops = 4e12;      // with recomputation
  c.stages[0].modelFlops = 3e12; // without
  SimResult r = run(gen(ScheduleKind::GPipe, 1, 1, 2), c);
  EXPECT_NEAR(r.tflopsPerDevice, 8.0 / 6, 1e-12);
  EXPECT_NEAR(r.modelTflopsPerDevice, 6.0 / 6, 1e-12);
}

TEST(Simulator, AsynchronousSchedulesReportTheSteadyState) {
  unsigned p = 4, m = 16;
  PipelineCosts c = uniform(p, 1, m, 1, 1.5, 0.5);
  SimResult flush = run(gen(ScheduleKind::OneFOneB, p, 1, m), c);
  SimResult async = run(gen(ScheduleKind::PipeDream2BW, p, 1, m), c);
  EXPECT_FALSE(flush.steadyState);
  EXPECT_TRUE(async.steadyState);
  EXPECT_DOUBLE_EQ(flush.iterationTime, (m + p - 1) * 3.0);
  EXPECT_NEAR(async.iterationTime, m * 3.0, 1e-9);
  EXPECT_NEAR(async.bubbleFraction, 0, 1e-9);
  SimResult pd = run(gen(ScheduleKind::PipeDream, p, 1, m), c);
  EXPECT_NEAR(pd.iterationTime, m * 3.0, 1e-9);
}

TEST(Simulator, LossScaledPerMicrobatchUpdatesWaitForTheWorld) {
  // fp16 PipeDream and PipeMare or the overflow flags over the world
  // before each update: every list's update of micro-batch k starts
  // together, after the first stage's backward of k, so the last stage's
  // next forward waits for k's gradient to reach the first stage.
  unsigned p = 4, m = 16;
  PipelineCosts c = uniform(p, 1, m, 1, 1.5, 0.5);
  for (ScheduleKind k : {ScheduleKind::PipeDream, ScheduleKind::PipeMare}) {
    SCOPED_TRACE(scheduleName(k).str());
    Schedule s = gen(k, p, 1, m);
    SimResult free = run(s, c);
    PipelineCosts waiting = c;
    waiting.updatesWaitForWorld = true;
    SimResult r = run(s, waiting);
    EXPECT_NEAR(free.iterationTime, m * 3.0, 1e-9);
    EXPECT_GT(r.iterationTime, free.iterationTime * 1.5);
    unsigned met = 0;
    for (int mb = 0; mb < static_cast<int>(m); ++mb) {
      const Event *first = find(r, 0, ActionKind::OptimizerStep, mb);
      const Event *back = find(r, 0, ActionKind::Backward, mb);
      ASSERT_TRUE(first && back) << "micro-batch " << mb;
      EXPECT_GE(first->start, back->end);
      for (unsigned d = 1; d < p; ++d) {
        const Event *e = find(r, d, ActionKind::OptimizerStep, mb);
        ASSERT_TRUE(e) << "device " << d << ", micro-batch " << mb;
        EXPECT_DOUBLE_EQ(e->start, first->start);
        ++met;
      }
    }
    EXPECT_EQ(met, (p - 1) * m);
  }
  // A synchronous schedule's lists each step once, at the end of the
  // iteration: meeting there changes nothing (buildPipelineCosts sets the
  // flag for PipeDream and PipeMare only).
  Schedule flush = gen(ScheduleKind::OneFOneB, p, 1, m);
  PipelineCosts waiting = c;
  waiting.updatesWaitForWorld = true;
  EXPECT_DOUBLE_EQ(run(flush, waiting).iterationTime,
                   run(flush, c).iterationTime);
}

TEST(Simulator, AsynchronousZeroWaitsForEachUpdatesGather) {
  // PipeDream and PipeMare under ZeRO-1: micro-batch k's update
  // reduce-scatters its gradient (RS = sync - gather = 0.5), steps on the
  // shard (0.25) and all-gathers the weights (0.5), which the next forward
  // reads: one stage runs F, B, RS, OPT and AG per micro-batch in a row.
  unsigned m = 4;
  PipelineCosts c = uniform(1, 1, m, 1, 1.5, 0.5);
  c.stages[0].gradSyncTime = 1;
  c.stages[0].gradGatherTime = 0.5;
  c.devices[0].optimizerTime = 0.25;
  for (ScheduleKind k : {ScheduleKind::PipeDream, ScheduleKind::PipeMare}) {
    SimResult r = run(gen(k, 1, 1, m, {true, 1, true}), c);
    EXPECT_NEAR(r.iterationTime, m * 4.25, 1e-9) << scheduleName(k).str();
    const Event *gather = find(r, 0, ActionKind::AllGather, 0);
    const Event *next = find(r, 0, ActionKind::Forward, 1);
    ASSERT_TRUE(gather && next);
    EXPECT_DOUBLE_EQ(next->start, gather->end);
  }
}

TEST(Simulator, LaterWeightGradientsAddIntoTheSum) {
  // One stage, m micro-batches: every weight gradient after the first adds
  // into the running sum (W_acc = 0.25 more); PipeDream updates after each
  // micro-batch, so none of its gradients adds into one.
  unsigned m = 4;
  PipelineCosts c = uniform(1, 1, m, 1, 1.5, 0.5);
  c.stages[0].bwdWeightAccumulate = 0.25;
  SimResult sync = run(gen(ScheduleKind::OneFOneB, 1, 1, m), c);
  EXPECT_DOUBLE_EQ(sync.iterationTime, m * 3.0 + (m - 1) * 0.25);
  const Event *first = find(sync, 0, ActionKind::Backward, 0);
  const Event *second = find(sync, 0, ActionKind::Backward, 1);
  ASSERT_TRUE(first && second);
  EXPECT_DOUBLE_EQ(first->end - first->start, 2);
  EXPECT_DOUBLE_EQ(second->end - second->start, 2.25);
  // Split backward: the W actions carry it.
  SimResult zb = run(gen(ScheduleKind::ZBH1, 1, 1, m), c);
  EXPECT_DOUBLE_EQ(zb.iterationTime, m * 3.0 + (m - 1) * 0.25);
  SimResult pd = run(gen(ScheduleKind::PipeDream, 1, 1, m), c);
  EXPECT_NEAR(pd.iterationTime, m * 3.0, 1e-9);
}

TEST(Simulator, ZeroBubbleBeatsOneFOneB) {
  unsigned p = 4, m = 8;
  PipelineCosts c = uniform(p, 1, m, 1, 1, 1);
  double zb = run(gen(ScheduleKind::ZBH1, p, 1, m), c).iterationTime;
  double ofob = run(gen(ScheduleKind::OneFOneB, p, 1, m), c).iterationTime;
  EXPECT_DOUBLE_EQ(ofob, 3.0 * (m + p - 1));
  EXPECT_DOUBLE_EQ(zb, 3.0 * m + (p - 1) * (1 + 1 - 1));
}

TEST(Simulator, Errors) {
  Schedule s = gen(ScheduleKind::GPipe, 2, 1, 2);
  auto bad = simulate(s, uniform(3, 1, 2, 1, 1, 1));
  ASSERT_FALSE(static_cast<bool>(bad));
  EXPECT_NE(llvm::toString(bad.takeError()).find("disagree"),
            std::string::npos);
  // A receive whose send was removed stalls the simulation.
  auto &l = s.devices[0];
  for (auto it = l.begin(); it != l.end(); ++it)
    if (it->kind == ActionKind::SendActivation) {
      l.erase(it);
      break;
    }
  auto stalled = simulate(s, uniform(2, 1, 2, 1, 1, 1));
  ASSERT_FALSE(static_cast<bool>(stalled));
  EXPECT_NE(llvm::toString(stalled.takeError())
                .find("rank 1 waits at "
                      "recvA0.0>0"),
            std::string::npos);
}

TEST(SimulatePlan, EndToEndOnOneDgxNode) {
  cluster::Cluster c = llvm::cantFail(cluster::getPreset("dgx-a100-80gb"));
  cost::CostModel cm;
  cost::ModelDesc m = gpt(8);
  double times[6];
  double peaks[6];
  unsigned i = 0;
  for (const char *spec :
       {"dp=2,tp=2,pp=2,schedule=gpipe", "dp=2,tp=2,pp=2,schedule=1f1b",
        "dp=2,tp=2,pp=2,schedule=interleaved,chunks=2",
        "dp=2,tp=2,pp=2,schedule=zb-h1", "dp=2,tp=2,pp=2,schedule=pipedream",
        "dp=2,tp=2,pp=2,schedule=pipedream-2bw"}) {
    auto ps = simulatePlan(m, c, llvm::cantFail(parsePlan(spec)), 32, cm);
    ASSERT_TRUE(static_cast<bool>(ps)) << llvm::toString(ps.takeError());
    const SimResult &r = ps->result;
    EXPECT_GT(r.iterationTime, 0) << spec;
    EXPECT_GT(r.tflopsPerDevice, 10) << spec;
    EXPECT_LT(r.tflopsPerDevice, 312) << spec;
    EXPECT_LE(r.modelTflopsPerDevice, r.tflopsPerDevice) << spec;
    EXPECT_NEAR(r.samplesPerSecond * r.iterationTime, 32, 1e-6) << spec;
    EXPECT_TRUE(r.fitsMemory) << spec << r.memoryProblem;
    EXPECT_EQ(ps->plan.numMicrobatches, 16u);
    EXPECT_GT(r.bytesPerLevel[0], 0) << spec;
    times[i] = r.iterationTime;
    peaks[i] = r.peakMemoryBytes[0];
    ++i;
  }
  // GPipe keeps every micro-batch: most memory; 1F1B and GPipe take the
  // same time; interleaving and ZB-H1 shrink the bubble.
  EXPECT_GT(peaks[0], peaks[1]);
  EXPECT_NEAR(times[0], times[1], 0.02 * times[1]);
  EXPECT_LT(times[2], times[1]);
  EXPECT_LT(times[3], times[1]);
  // PipeDream's stashed weights cost memory on rank 0.
  EXPECT_GT(peaks[4], peaks[1]);
}

TEST(SimulatePlan, MemoryOverflowIsReportedNotFatal) {
  cluster::Cluster c = llvm::cantFail(cluster::getPreset("dgx-v100"));
  cost::CostModel cm;
  auto ps = simulatePlan(gpt(24), c, llvm::cantFail(parsePlan("dp=8,mbs=16")),
                         128, cm);
  ASSERT_TRUE(static_cast<bool>(ps));
  EXPECT_FALSE(ps->result.fitsMemory);
  EXPECT_NE(ps->result.memoryProblem.find("GB at its peak"), std::string::npos);
  auto bad =
      simulatePlan(gpt(4), c, llvm::cantFail(parsePlan("dp=12")), 12, cm);
  ASSERT_FALSE(static_cast<bool>(bad));
  EXPECT_NE(llvm::toString(bad.takeError()).find("has only 8"),
            std::string::npos);
  // Fewer devices than the cluster has are fine (the rest idle).
  auto fewer =
      simulatePlan(gpt(4), c, llvm::cantFail(parsePlan("dp=3")), 12, cm);
  ASSERT_TRUE(static_cast<bool>(fewer));
  EXPECT_EQ(fewer->plan.numDevices(), 3u);
}

} // namespace

namespace {

TEST(SimulatePlan, HeterogeneousStagesRunAtTheirDevice) {
  cluster::Cluster c = llvm::cantFail(cluster::getPreset("mixed-a100-v100", 2));
  cost::CostModel cm;
  auto ps =
      simulatePlan(gpt(16), c, llvm::cantFail(parsePlan("dp=8,pp=2")), 64, cm);
  ASSERT_TRUE(static_cast<bool>(ps)) << llvm::toString(ps.takeError());
  // Rank 1 is the V100 node: fewer layers, its memory capacity.
  const auto &st = ps->costs.stages;
  EXPECT_LT(st[1].layerEnd - st[1].layerBegin,
            st[0].layerEnd - st[0].layerBegin);
  EXPECT_EQ(ps->costs.devices[1].deviceName, "v100-sxm2-32gb");
  EXPECT_DOUBLE_EQ(ps->costs.devices[1].memoryCapacity, 32e9);
  // Balanced: the per-micro-batch work differs by less than a layer.
  double t0 = st[0].fwd + st[0].bwdInput + st[0].bwdWeight;
  double t1 = st[1].fwd + st[1].bwdInput + st[1].bwdWeight;
  EXPECT_LT(std::fabs(t0 - t1), 0.5 * std::max(t0, t1));
}

TEST(SimulatePlan, EdgeBoardsAreNetworkBound) {
  // A four-layer fp32 MLP pipelined over four ARM boards.
  cost::ModelDesc m;
  m.name = "mlp";
  for (unsigned i = 0; i < 4; ++i) {
    cost::LayerDesc l;
    l.name = "fc" + std::to_string(i);
    l.ops.push_back(
        cost::matmulOp("fc", cluster::DType::F32, 1, 1, 1024, 1024, true));
    l.boundaryBytes = 1024 * 4;
    m.layers.push_back(l);
  }
  cost::CostModel cm;
  for (const char *preset : {"arm-board-ethernet:4", "arm-board-wifi:4"}) {
    cluster::Cluster c = llvm::cantFail(cluster::resolveCluster(preset));
    auto ps = simulatePlan(m, c, llvm::cantFail(parsePlan("pp=4")), 32, cm);
    ASSERT_TRUE(static_cast<bool>(ps)) << llvm::toString(ps.takeError());
    const SimResult &r = ps->result;
    EXPECT_EQ(r.levelNames[1],
              std::string(preset).find("wifi") != std::string::npos
                  ? "wifi"
                  : "ethernet");
    // 32 micro-batches x 3 boundaries x 2 directions x 4 KB.
    EXPECT_DOUBLE_EQ(r.bytesPerLevel[1], 32 * 3 * 2 * 4096.0);
    EXPECT_GT(r.iterationTime, 32 * ps->costs.stages[0].sendNextTime);
    EXPECT_TRUE(r.fitsMemory);
  }
}

TEST(Simulator, CostsMustMatchTheSchedule) {
  Schedule s = gen(ScheduleKind::OneFOneB, 2, 1, 2);
  PipelineCosts c = uniform(2, 1, 2, 1, 1, 1);
  c.stages.pop_back();
  EXPECT_FALSE(static_cast<bool>(simulate(s, c)));
  llvm::Error e = verifySchedule(s, &c);
  ASSERT_TRUE(static_cast<bool>(e));
  EXPECT_NE(llvm::toString(std::move(e)).find("disagree"), std::string::npos);
}

} // namespace

TEST(SimulatePlan, ZeroTwoReduceScattersEveryMicrobatch) {
  // dp=4 x pp=2 with 8 micro-batches per step: ZeRO-2 reduce-scatters each
  // micro-batch's gradient (8 reduce-scatters of the chunk's gradients),
  // ZeRO-1 the step's mean once; both gather the parameters once, and
  // ZeRO-2 holds a quarter of the gradients.
  cluster::Cluster c = llvm::cantFail(cluster::getPreset("dgx-a100-80gb", 1));
  cost::CostModel cm;
  auto simulateZero = [&](const char *spec) {
    auto ps = simulatePlan(gpt(8), c, llvm::cantFail(parsePlan(spec)), 32, cm);
    EXPECT_TRUE(static_cast<bool>(ps)) << llvm::toString(ps.takeError());
    return std::move(*ps);
  };
  PlanSimulation z1 = simulateZero("dp=4,pp=2,mbs=1,schedule=1f1b,zero=1");
  PlanSimulation z2 = simulateZero("dp=4,pp=2,mbs=1,schedule=1f1b,zero=2");
  ASSERT_EQ(z2.plan.numMicrobatches, 8u);
  const StageCost &s1 = z1.costs.stages[0], &s2 = z2.costs.stages[0];
  EXPECT_GT(s1.gradGatherTime, 0);
  EXPECT_DOUBLE_EQ(s2.gradGatherTime, s1.gradGatherTime);
  EXPECT_NEAR(s2.gradSyncTime - s2.gradGatherTime,
              8 * (s1.gradSyncTime - s1.gradGatherTime), 1e-12);
  // The simulator's RS action takes the reduce-scatters, AG the gather.
  const Event *rs = nullptr, *ag = nullptr;
  for (const Event &e : z2.result.events) {
    if (e.device == 0 && e.action.kind == ActionKind::ReduceScatter)
      rs = &e;
    if (e.device == 0 && e.action.kind == ActionKind::AllGather)
      ag = &e;
  }
  ASSERT_TRUE(rs && ag);
  EXPECT_NEAR(rs->end - rs->start, s2.gradSyncTime - s2.gradGatherTime,
              1e-12);
  EXPECT_NEAR(ag->end - ag->start, s2.gradGatherTime, 1e-12);
  EXPECT_GT(z2.result.iterationTime, z1.result.iterationTime);
  EXPECT_LT(z2.result.peakMemoryBytes[0], z1.result.peakMemoryBytes[0]);
}
