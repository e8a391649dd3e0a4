//===- ScheduleCacheTest.cpp - The search's schedule cache ------*- C++ -*-===//
//
// ScheduleCache returns what generateSchedule builds for every argument it
// keys on, and a search that simulates with its caches (schedules, per-layer
// times) chooses, predicts and counts what one without them does.
//
//===----------------------------------------------------------------------===//

#include "SearchTestUtil.h"

#include "lib/Search/SearchImpl.h"

#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

using namespace distopt;
using namespace distopt::search;
using schedule::Plan;
using schedule::ScheduleKind;

namespace {

std::string printed(const schedule::Schedule &s) {
  std::string out;
  llvm::raw_string_ostream os(out);
  s.print(os);
  os << " versions";
  for (unsigned v : s.weightVersions)
    os << " " << v;
  return out;
}

/// Plans that differ in one argument of generateSchedule at a time; one
/// cache serves all of them, so a key that missed an argument would hand
/// one plan another's schedule.
std::vector<Plan> planGrid() {
  std::vector<Plan> plans;
  const ScheduleKind kinds[] = {
      ScheduleKind::GPipe,        ScheduleKind::OneFOneB,
      ScheduleKind::Interleaved,  ScheduleKind::ZBH1,
      ScheduleKind::ZBH2,         ScheduleKind::ZBV,
      ScheduleKind::VHalf,        ScheduleKind::VMin,
      ScheduleKind::DualPipeV,    ScheduleKind::PipeDream,
      ScheduleKind::PipeDream2BW, ScheduleKind::PipeMare};
  for (ScheduleKind k : kinds)
    for (unsigned pp : {2u, 4u})
      for (unsigned m : {8u, 12u}) {
        Plan base;
        base.setSchedule(k);
        base.pp = pp;
        base.chunks =
            schedule::isVShape(k) || k == ScheduleKind::Interleaved ? 2 : 1;
        base.numMicrobatches = m;
        plans.push_back(base);
        // Each schedule option changed alone, then with data parallelism.
        for (unsigned dp : {1u, 2u}) {
          Plan p = base;
          p.dp = dp;
          plans.push_back(p);
          for (unsigned zero : {1u, 3u}) {
            p.zero = zero;
            plans.push_back(p);
          }
          p.zero = 0;
          p.overlapGradSync = !base.overlapGradSync;
          plans.push_back(p);
          p.overlapGradSync = base.overlapGradSync;
          // (The parameter gather exists under ZeRO only.)
          p.zero = 1;
          p.overlapParamGather = !base.overlapParamGather;
          plans.push_back(p);
          p.zero = 0;
          p.overlapParamGather = base.overlapParamGather;
          p.pipemareDecay = 1.0;
          plans.push_back(p);
        }
      }
  // Per-stage replicas (one list per slot).
  for (const char *replicas : {"2/1", "1/2", "3/1"})
    for (ScheduleKind k : {ScheduleKind::GPipe, ScheduleKind::OneFOneB}) {
      Plan p = llvm::cantFail(
          schedule::parsePlan(std::string("replicas=") + replicas));
      p.setSchedule(k);
      p.numMicrobatches = 6;
      plans.push_back(p);
    }
  return plans;
}

TEST(ScheduleCache, GivesWhatTheGeneratorGives) {
  std::vector<Plan> plans = planGrid();
  detail::ScheduleCache cache;
  unsigned generated = 0;
  // Twice over: the second pass reads every schedule from the cache.
  for (unsigned pass = 0; pass < 2; ++pass)
    for (const Plan &p : plans) {
      llvm::Expected<schedule::Schedule> want = schedule::generateSchedule(
          p.schedule, p.pp, p.chunks, p.numMicrobatches,
          schedule::scheduleOptions(p));
      llvm::Expected<const schedule::Schedule *> got = cache.get(p);
      ASSERT_EQ(static_cast<bool>(want), static_cast<bool>(got)) << p.str();
      if (!want) {
        llvm::consumeError(want.takeError());
        llvm::consumeError(got.takeError());
        continue;
      }
      generated += pass == 0;
      EXPECT_EQ(printed(**got), printed(*want)) << p.str();
    }
  EXPECT_GT(generated, 500u);
  // Each distinct schedule once (the grid's arguments that a kind ignores,
  // such as the PipeMare decay elsewhere, still make distinct keys).
  EXPECT_LE(cache.size(), generated);
}

/// The search with and without its simulation caches (schedules, per-layer
/// times): the same plans, figures and counts.
void expectSameSearch(const cost::ModelDesc &model, const cluster::Cluster &c,
                      SearchOptions o) {
  cost::CostModel cm;
  o.simulationCaches = true;
  SearchResult a = llvm::cantFail(searchPlan(model, c, cm, o));
  o.simulationCaches = false;
  SearchResult b = llvm::cantFail(searchPlan(model, c, cm, o));
  EXPECT_EQ(a.best.sim.plan.str(), b.best.sim.plan.str());
  EXPECT_EQ(a.best.sim.result.iterationTime, b.best.sim.result.iterationTime);
  EXPECT_EQ(a.best.sim.result.peakMemoryBytes,
            b.best.sim.result.peakMemoryBytes);
  EXPECT_EQ(printed(a.best.sim.schedule), printed(b.best.sim.schedule));
  ASSERT_EQ(a.alternatives.size(), b.alternatives.size());
  for (unsigned i = 0; i < a.alternatives.size(); ++i) {
    EXPECT_EQ(a.alternatives[i].sim.plan.str(),
              b.alternatives[i].sim.plan.str());
    EXPECT_EQ(a.alternatives[i].sim.result.iterationTime,
              b.alternatives[i].sim.result.iterationTime);
  }
  EXPECT_EQ(a.stats.candidates, b.stats.candidates);
  EXPECT_EQ(a.stats.simulated, b.stats.simulated);
  EXPECT_EQ(a.stats.memoryPruned, b.stats.memoryPruned);
  EXPECT_EQ(a.stats.boundPruned, b.stats.boundPruned);
  EXPECT_EQ(a.stats.exact, b.stats.exact);
  // The winner simulated afresh (its schedule generated and verified, its
  // costs computed without the per-layer cache): the same figures, bit for
  // bit.
  sim::SimOptions so;
  so.recordEvents = false;
  sim::PlanSimulation fresh = llvm::cantFail(sim::simulatePlan(
      model, c, a.best.sim.plan, o.globalBatch, cm, so, o.memory));
  EXPECT_EQ(fresh.result.iterationTime, a.best.sim.result.iterationTime);
  EXPECT_EQ(fresh.result.peakMemoryBytes, a.best.sim.result.peakMemoryBytes);
  ASSERT_EQ(fresh.costs.stages.size(), a.best.sim.costs.stages.size());
  for (unsigned s = 0; s < fresh.costs.stages.size(); ++s) {
    const schedule::StageCost &x = fresh.costs.stages[s],
                              &y = a.best.sim.costs.stages[s];
    EXPECT_EQ(x.fwd, y.fwd) << s;
    EXPECT_EQ(x.bwdInput, y.bwdInput) << s;
    EXPECT_EQ(x.bwdWeight, y.bwdWeight) << s;
    EXPECT_EQ(x.params, y.params) << s;
    EXPECT_EQ(x.gradSyncTime, y.gradSyncTime) << s;
  }
}

TEST(ScheduleCache, SearchChoosesTheSameWithAndWithout) {
  SearchOptions o;
  o.globalBatch = 64;
  // Pipelined plans on two nodes (V-shaped and zero-bubble schedules among
  // the simulated).
  expectSameSearch(test::smallGpt(16, 2048),
                   llvm::cantFail(cluster::getPreset("dgx-a100-80gb", 2)), o);
  // A model that needs pipeline stages to fit, and fewer runners-up.
  o.alternatives = 1;
  o.memoryLimit = 6e9;
  expectSameSearch(test::smallGpt(24, 4096),
                   llvm::cantFail(cluster::getPreset("dgx-a100-80gb", 1)), o);
  // Asynchronous schedules and per-stage replicas on a small cluster.
  SearchOptions a;
  a.globalBatch = 32;
  a.allowAsync = true;
  expectSameSearch(test::smallGpt(8, 1024),
                   llvm::cantFail(cluster::getPreset("dgx-a100-80gb", 1)), a);
}

} // namespace
