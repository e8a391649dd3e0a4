//===- ResilienceTest.cpp - Plans under preemptions -------------*- C++ -*-===//

#include "lib/Sim/Resilience.h"

#include "SimTestUtil.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace distopt;
using namespace distopt::sim;

namespace {

cluster::Availability spot(double rate) {
  cluster::Availability a;
  a.preemptionsPerNodeHour = rate;
  a.replacementSeconds = 300;
  a.onDemandPrice = 3;
  a.preemptiblePrice = 1;
  a.checkpointBandwidth = 1e9;
  return a;
}

/// Eight nodes in a pipeline ring; redundancy costs 10% per iteration and
/// running two stages on one node doubles the iteration.
ResilienceInputs ring() {
  ResilienceInputs in;
  in.iterationTime = 1;
  in.samplesPerIteration = 64;
  in.nodes = 8;
  in.devicesPerNode = 1;
  in.stateBytesPerDevice = 40e9;
  in.redundantIterationTime = 1.1;
  in.degradedIterationTime = 2;
  in.redundantPossible = true;
  // Seven nodes run the same work 8/7 as long.
  in.survivorIterationTime = 8.0 / 7;
  for (unsigned n = 0; n < 8; ++n)
    in.neighbours.push_back({(n + 7) % 8, (n + 1) % 8});
  return in;
}

/// A GPT on p3-like nodes (one device each), simulated.
PlanSimulation simulated(llvm::StringRef plan) {
  cluster::Cluster c = llvm::cantFail(cluster::getPreset("aws-p3-spot", 4));
  cost::CostModel cm;
  return llvm::cantFail(simulatePlan(
      test::gpt(8), c, llvm::cantFail(schedule::parsePlan(plan)), 32, cm));
}

} // namespace

TEST(Resilience, DalyIntervalIsYoungsForCheapCheckpoints) {
  // C << M: Daly's form approaches Young's sqrt(2 C M).
  EXPECT_NEAR(dalyInterval(1, 1e6), std::sqrt(2e6), 0.01 * std::sqrt(2e6));
  // A checkpoint as long as two MTBFs: checkpoint every MTBF.
  EXPECT_EQ(dalyInterval(300, 100), 100);
  EXPECT_EQ(dalyInterval(0, 100), 0);
}

TEST(Resilience, NoPreemptionsLoseNothing) {
  ResilienceEstimate e =
      estimateResilience(ring(), spot(0), Resilience::Checkpoint);
  EXPECT_EQ(e.eventsPerHour, 0);
  EXPECT_EQ(e.intervalSeconds, 0);
  EXPECT_DOUBLE_EQ(e.expectedSamplesPerSecond, 64);
  // Preemptible at a third of the on-demand price.
  ResilienceEstimate none =
      estimateResilience(ring(), spot(0), Resilience::None);
  EXPECT_DOUBLE_EQ(none.usdPerSample / e.usdPerSample, 3);
}

TEST(Resilience, CheckpointFollowsYoungDaly) {
  ResilienceEstimate e =
      estimateResilience(ring(), spot(0.1), Resilience::Checkpoint);
  EXPECT_DOUBLE_EQ(e.eventsPerHour, 0.8);
  // 40 GB at 1 GB/s; the restart waits for the replacement and reads back.
  EXPECT_DOUBLE_EQ(e.checkpointSeconds, 40);
  EXPECT_DOUBLE_EQ(e.restartSeconds, 340);
  EXPECT_DOUBLE_EQ(e.intervalSeconds, dalyInterval(40, 3600 / 0.8));
  EXPECT_LT(e.expectedSamplesPerSecond, 64);
  // Each preemption costs the restart and about half an interval.
  EXPECT_NEAR(e.lostSecondsPerEvent,
              340 + (e.intervalSeconds + e.checkpointSeconds) / 2,
              0.15 * e.lostSecondsPerEvent);
  // More preemptions, less progress.
  EXPECT_LT(estimateResilience(ring(), spot(0.5), Resilience::Checkpoint)
                .expectedSamplesPerSecond,
            e.expectedSamplesPerSecond);
}

TEST(Resilience, RedundancyWinsAtHighRatesAndCheckpointsAtLowOnes) {
  auto ratio = [](double rate) {
    return estimateResilience(ring(), spot(rate), Resilience::Redundant)
               .expectedSamplesPerSecond /
           estimateResilience(ring(), spot(rate), Resilience::Checkpoint)
               .expectedSamplesPerSecond;
  };
  // Rare preemptions: the 10% redundancy overhead is not worth it.
  EXPECT_LT(ratio(0.001), 1);
  // Frequent ones: no restarts pays.
  EXPECT_GT(ratio(0.5), 1.3);
  ResilienceEstimate r =
      estimateResilience(ring(), spot(0.33), Resilience::Redundant);
  EXPECT_GT(r.fatalFraction, 0);
  EXPECT_LT(r.fatalFraction, 0.1);
  EXPECT_DOUBLE_EQ(r.iterationTime, 1.1);
}

TEST(Resilience, InjectionIsDeterministicForASeed) {
  for (Resilience mode :
       {Resilience::Checkpoint, Resilience::Redundant, Resilience::Elastic}) {
    InjectionResult a = injectPreemptions(ring(), spot(0.2), mode, 7, 200);
    InjectionResult b = injectPreemptions(ring(), spot(0.2), mode, 7, 200);
    InjectionResult c = injectPreemptions(ring(), spot(0.2), mode, 8, 200);
    EXPECT_EQ(a.events, b.events);
    EXPECT_EQ(a.restarts, b.restarts);
    EXPECT_EQ(a.samplesPerSecond, b.samplesPerSecond);
    EXPECT_EQ(a.lostSecondsPerEvent, b.lostSecondsPerEvent);
    EXPECT_NE(a.samplesPerSecond, c.samplesPerSecond);
    // About 0.2 x 8 x 200 = 320 preemptions.
    EXPECT_GT(a.events, 250u);
    EXPECT_LT(a.events, 400u);
  }
}

TEST(Resilience, InjectionMeasuresTheExpectation) {
  for (Resilience mode :
       {Resilience::Checkpoint, Resilience::Redundant, Resilience::Elastic}) {
    SCOPED_TRACE(resilienceName(mode).str());
    ResilienceEstimate e = estimateResilience(ring(), spot(0.2), mode);
    InjectionResult i = injectPreemptions(ring(), spot(0.2), mode, 1, 20000);
    EXPECT_NEAR(i.samplesPerSecond / e.expectedSamplesPerSecond, 1, 0.03);
    EXPECT_NEAR(i.lostSecondsPerEvent / e.lostSecondsPerEvent, 1, 0.1);
    EXPECT_NEAR(i.usdPerSample / e.usdPerSample, 1, 0.03);
    if (mode == Resilience::Redundant)
      EXPECT_LT(i.restarts, i.events / 10);
    else
      EXPECT_EQ(i.restarts, i.events);
  }
}

TEST(Resilience, RelaunchCountsInEveryRestart) {
  // Starting the processes again costs every restart: checkpointing pays
  // it once per preemption, elastic twice (onto the survivors and back).
  cluster::Availability a = spot(0.2);
  auto lost = [&](Resilience mode) {
    return estimateResilience(ring(), a, mode).lostSecondsPerEvent;
  };
  double ck = lost(Resilience::Checkpoint), el = lost(Resilience::Elastic);
  a.relaunchSeconds = 60;
  EXPECT_DOUBLE_EQ(
      estimateResilience(ring(), a, Resilience::Checkpoint).restartSeconds,
      400);
  EXPECT_DOUBLE_EQ(
      estimateResilience(ring(), a, Resilience::Elastic).restartSeconds, 100);
  EXPECT_NEAR((lost(Resilience::Checkpoint) - ck) / 60, 1, 0.25);
  EXPECT_NEAR((lost(Resilience::Elastic) - el) / 120, 1, 0.25);
  InjectionResult i =
      injectPreemptions(ring(), a, Resilience::Elastic, 1, 20000);
  EXPECT_NEAR(i.lostSecondsPerEvent / lost(Resilience::Elastic), 1, 0.1);
}

TEST(Resilience, ElasticWinsWhileReplacementsAreSlow) {
  // Per preemption, checkpointing waits for the replacement (300 s) and
  // then reads the state (40 s); elastic reads it at once, runs at 7/8
  // speed for 300 s, and pays a checkpoint and a restart (2 x 40 s) to
  // move back. It wins by less than 300 - 300/8 - 80 s per event: the
  // longer restart of checkpointing also meets more preemptions (Daly's
  // e^{R/M}).
  cluster::Availability a = spot(0.2);
  ResilienceEstimate ck = estimateResilience(ring(), a, Resilience::Checkpoint);
  ResilienceEstimate el = estimateResilience(ring(), a, Resilience::Elastic);
  EXPECT_DOUBLE_EQ(el.restartSeconds, 40);
  EXPECT_DOUBLE_EQ(ck.restartSeconds, 340);
  EXPECT_DOUBLE_EQ(el.survivorIterationTime, 8.0 / 7);
  EXPECT_GT(ck.lostSecondsPerEvent - el.lostSecondsPerEvent, 100);
  EXPECT_LT(ck.lostSecondsPerEvent - el.lostSecondsPerEvent,
            300 - 300.0 / 8 - 80);
  EXPECT_GT(el.expectedSamplesPerSecond, ck.expectedSamplesPerSecond);
  // An instant replacement leaves elastic only the extra move back.
  a.replacementSeconds = 0;
  EXPECT_LT(estimateResilience(ring(), a, Resilience::Elastic)
                .expectedSamplesPerSecond,
            estimateResilience(ring(), a, Resilience::Checkpoint)
                .expectedSamplesPerSecond);
  // Survivors faster than the plan (a plan the search would not pick)
  // count at the plan's own speed: only the restarts are lost.
  ResilienceInputs fast = ring();
  fast.survivorIterationTime = 0.5;
  a.replacementSeconds = 300;
  double saved =
      el.lostSecondsPerEvent -
      estimateResilience(fast, a, Resilience::Elastic).lostSecondsPerEvent;
  EXPECT_NEAR(saved / (300.0 / 8), 1, 0.15);
}

TEST(Resilience, RedundancyNeedsAPipeline) {
  ResilienceInputs one =
      resilienceInputs(simulated("dp=4,pp=1"),
                       llvm::cantFail(cluster::getPreset("aws-p3-spot", 4)));
  EXPECT_FALSE(one.redundantPossible);
  EXPECT_NE(one.redundantProblem.find("pp=1"), std::string::npos);
  EXPECT_EQ(one.nodes, 4u);
}

TEST(Resilience, RedundancyCostsTheForwardsOutsideTheBubble) {
  PlanSimulation ps = simulated("dp=1,pp=4,mbs=1,schedule=1f1b");
  ResilienceInputs in = resilienceInputs(
      ps, llvm::cantFail(cluster::getPreset("aws-p3-spot", 4)));
  ASSERT_TRUE(in.redundantPossible) << in.redundantProblem;
  EXPECT_EQ(in.nodes, 4u);
  // Each node neighbours the two next to it in the ring of stages.
  for (const std::vector<unsigned> &n : in.neighbours)
    EXPECT_EQ(n.size(), 2u);
  // 32 micro-batches: the successor's forwards do not fit the bubble.
  EXPECT_GT(in.redundantIterationTime, in.iterationTime);
  EXPECT_GT(in.degradedIterationTime, in.redundantIterationTime);
  EXPECT_GT(in.redundantExtraBytes, 0);
  // Without a memory limit that fits, it does not.
  ResilienceInputs tight = resilienceInputs(
      ps, llvm::cantFail(cluster::getPreset("aws-p3-spot", 4)), 1e6);
  EXPECT_FALSE(tight.redundantPossible);
  EXPECT_NE(tight.redundantProblem.find("memory"), std::string::npos);
}
