//===- TuneTest.cpp - Time to accuracy and tuning trials --------*- C++ -*-===//
//
// Part of DistOpt. lib/Search/Tune.cpp: the statistical-efficiency model,
// the batch and trial lists, the time-to-accuracy search over batches and
// the per-trial plans against one fixed plan.
//
//===----------------------------------------------------------------------===//

#include "SearchTestUtil.h"

#include "lib/Search/Tune.h"

#include "gtest/gtest.h"

using namespace distopt;
using namespace distopt::search;
using distopt::search::test::smallGpt;

namespace {

std::string errorOf(llvm::Error e) { return llvm::toString(std::move(e)); }

/// A 4-block GPT (hidden 1024) on one DGX A100 node, searched with the
/// default options.
class TuneOnDgx : public ::testing::Test {
protected:
  cost::ModelDesc model = smallGpt(4, 1024);
  cluster::Cluster c = cantFail(cluster::getPreset("dgx-a100-80gb", 1));
  cost::CostModel cm;
  SearchOptions o;
};

TEST(Tune, StatEfficiencyFollowsMcCandlish) {
  StatEfficiency e = cantFail(makeStatEfficiency(1000, 2e6, 0));
  EXPECT_DOUBLE_EQ(e.minSteps, 2000);
  EXPECT_DOUBLE_EQ(e.minExamples(), 2e6);
  // At B = B_noise both steps and samples are twice their minimum.
  EXPECT_DOUBLE_EQ(e.stepsFor(1000), 4000);
  EXPECT_DOUBLE_EQ(e.examplesFor(1000), 4e6);
  // Small batches approach E_min samples, large ones S_min steps.
  EXPECT_NEAR(e.examplesFor(1) / e.minExamples(), 1.0, 1e-3);
  EXPECT_NEAR(e.stepsFor(1e9) / e.minSteps, 1.0, 1e-5);
  StatEfficiency s = cantFail(makeStatEfficiency(1000, 0, 2000));
  EXPECT_DOUBLE_EQ(s.minExamples(), 2e6);
}

TEST(Tune, StatEfficiencyErrors) {
  auto err = [](double b, double e, double s) {
    llvm::Expected<StatEfficiency> r = makeStatEfficiency(b, e, s);
    return r ? std::string() : errorOf(r.takeError());
  };
  EXPECT_NE(err(0, 1e6, 0).find("--dist-noise-scale must be a positive"),
            std::string::npos);
  EXPECT_NE(err(-5, 1e6, 0).find("--dist-noise-scale"), std::string::npos);
  EXPECT_NE(err(100, 0, 0).find("exactly one of"), std::string::npos);
  EXPECT_NE(err(100, 1e6, 10).find("exactly one of"), std::string::npos);
}

TEST(Tune, BatchLists) {
  EXPECT_EQ(cantFail(parseBatchList("64..512")),
            (std::vector<unsigned>{64, 128, 256, 512}));
  EXPECT_EQ(cantFail(parseBatchList("48..200")),
            (std::vector<unsigned>{48, 96, 192}));
  EXPECT_EQ(cantFail(parseBatchList("512,64, 128,64")),
            (std::vector<unsigned>{64, 128, 512}));
  for (const char *bad : {"", "0,64", "64..32", "a,b", "64..x", "-4"}) {
    llvm::Expected<std::vector<unsigned>> r = parseBatchList(bad);
    ASSERT_FALSE(static_cast<bool>(r)) << bad;
    EXPECT_NE(errorOf(r.takeError()).find("--dist-batches"), std::string::npos);
  }
  // Doubling from the device count (rounded up to a power of two) to the
  // first power of two at least 16 B_noise.
  EXPECT_EQ(defaultBatches(6, 16),
            (std::vector<unsigned>{8, 16, 32, 64, 128, 256}));
  EXPECT_EQ(defaultBatches(64, 1), (std::vector<unsigned>{64}));
}

TEST(Tune, TrialLists) {
  std::vector<Trial> t = cantFail(
      parseTrials("batch=256,lr=1e-3,async=0,steps=1000; batch=512,async=1"));
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].batch, 256u);
  EXPECT_EQ(t[0].learningRate, "1e-3");
  EXPECT_FALSE(t[0].async);
  EXPECT_EQ(t[0].steps, 1000);
  EXPECT_EQ(t[1].batch, 512u);
  EXPECT_TRUE(t[1].async);
  EXPECT_EQ(t[1].steps, 0);
  EXPECT_TRUE(t[1].learningRate.empty());
  struct Bad {
    const char *spec, *message;
  } bad[] = {
      {"", "has no trials"},
      {" ; ", "has no trials"},
      {"lr=1e-3", "bad trial 1 'lr=1e-3' in --dist-tune: it has no batch"},
      {"batch=64;batch=0", "bad trial 2 'batch=0'"},
      {"batch=64,async=2", "async must be 0 or 1"},
      {"batch=64,lr=fast", "lr must be a positive number"},
      {"batch=64,steps=-1", "steps must be a positive number"},
      {"batch=64,momentum=0.9", "unknown key 'momentum'"},
      {"batch=64,lr", "'lr' has no value"},
  };
  for (const Bad &b : bad) {
    llvm::Expected<std::vector<Trial>> r = parseTrials(b.spec);
    ASSERT_FALSE(static_cast<bool>(r)) << b.spec;
    std::string msg = errorOf(r.takeError());
    EXPECT_NE(msg.find(b.message), std::string::npos) << msg;
  }
}

TEST_F(TuneOnDgx, TimeToAccuracyPicksTheLeastStepsTimesIterationTime) {
  StatEfficiency e = cantFail(makeStatEfficiency(256, 0, 1000));
  std::vector<unsigned> batches = {8, 32, 128, 512, 2048};
  TimeToAccuracyResult r =
      cantFail(searchTimeToAccuracy(model, c, cm, o, e, batches));
  ASSERT_EQ(r.batches.size(), batches.size());
  double least = 1e300;
  for (const BatchChoice &b : r.batches) {
    ASSERT_TRUE(b.result.has_value()) << b.batch << ": " << b.problem;
    EXPECT_EQ(b.result->best.sim.plan.globalBatch, b.batch);
    // Each batch's plan is the search's best for that batch alone.
    o.globalBatch = b.batch;
    SearchResult alone = cantFail(searchPlan(model, c, cm, o));
    EXPECT_NEAR(b.result->best.sim.result.iterationTime,
                alone.best.sim.result.iterationTime, 1e-12);
    EXPECT_DOUBLE_EQ(b.steps, e.stepsFor(b.batch));
    EXPECT_DOUBLE_EQ(b.seconds,
                     b.steps * b.result->best.sim.result.iterationTime);
    least = std::min(least, b.seconds);
  }
  EXPECT_EQ(r.batches[r.best].seconds, least);
  // Neither end wins: tiny batches need too many steps, huge ones too
  // long an iteration for what they save.
  EXPECT_NE(r.best, 0u);
  EXPECT_NE(r.best, batches.size() - 1);
  // A noise scale far larger moves the optimum to a larger batch.
  StatEfficiency noisy = cantFail(makeStatEfficiency(1 << 20, 0, 1000));
  TimeToAccuracyResult n =
      cantFail(searchTimeToAccuracy(model, c, cm, o, noisy, batches));
  EXPECT_GT(n.batches[n.best].batch, r.batches[r.best].batch);
}

TEST_F(TuneOnDgx, TimeToAccuracyErrors) {
  StatEfficiency e = cantFail(makeStatEfficiency(256, 0, 1000));
  llvm::Expected<TimeToAccuracyResult> none =
      searchTimeToAccuracy(model, c, cm, o, e, {});
  ASSERT_FALSE(static_cast<bool>(none));
  EXPECT_NE(errorOf(none.takeError()).find("no candidate batches"),
            std::string::npos);
  o.mode = Mode::Infer;
  llvm::Expected<TimeToAccuracyResult> infer =
      searchTimeToAccuracy(model, c, cm, o, e, {64});
  ASSERT_FALSE(static_cast<bool>(infer));
  EXPECT_NE(errorOf(infer.takeError()).find("inference has no steps"),
            std::string::npos);
  // Under dp=8 batch 3 has no plan: it is kept with its problem, and when
  // every batch fails the error lists them all.
  o.mode = Mode::Train;
  o.constraints = cantFail(parseConstraints("dp=8"));
  llvm::Expected<TimeToAccuracyResult> some =
      searchTimeToAccuracy(model, c, cm, o, e, {3, 64});
  ASSERT_TRUE(static_cast<bool>(some));
  ASSERT_EQ(some->batches.size(), 2u);
  EXPECT_FALSE(some->batches[0].result.has_value());
  EXPECT_FALSE(some->batches[0].problem.empty());
  EXPECT_EQ(some->best, 1u);
  llvm::Expected<TimeToAccuracyResult> all =
      searchTimeToAccuracy(model, c, cm, o, e, {3, 5});
  ASSERT_FALSE(static_cast<bool>(all));
  std::string msg = errorOf(all.takeError());
  EXPECT_NE(msg.find("no candidate batch has a plan"), std::string::npos);
  EXPECT_NE(msg.find("batch 3:"), std::string::npos);
  EXPECT_NE(msg.find("batch 5:"), std::string::npos);
}

TEST_F(TuneOnDgx, TrialsGetTheirOwnPlansAndTheFixedPlanIsNeverFaster) {
  std::vector<Trial> trials =
      cantFail(parseTrials("batch=16,lr=1e-3,steps=100;batch=256,steps=50;"
                           "batch=2048,async=1,steps=10"));
  TuneResult r = cantFail(tuneTrials(model, c, cm, o, trials, {}, {}));
  ASSERT_EQ(r.trials.size(), 3u);
  EXPECT_EQ(r.fixedSource, "the best plan of trial 1");
  EXPECT_EQ(r.fixedPlan.str(), r.trials[0].best.best.sim.plan.str());
  double total = 0, fixedTotal = 0;
  for (const TrialResult &t : r.trials) {
    EXPECT_EQ(t.best.best.sim.plan.globalBatch, t.trial.batch);
    EXPECT_EQ(t.fixed.sim.plan.globalBatch, t.trial.batch);
    EXPECT_EQ(t.fixed.sim.plan.dp, r.fixedPlan.dp);
    EXPECT_EQ(t.fixed.sim.plan.pp, r.fixedPlan.pp);
    EXPECT_EQ(t.fixed.sim.plan.tp, r.fixedPlan.tp);
    EXPECT_DOUBLE_EQ(t.seconds, t.steps * t.best.best.sim.result.iterationTime);
    EXPECT_LE(t.seconds, t.fixedSeconds * (1 + 1e-9));
    total += t.seconds;
    fixedTotal += t.fixedSeconds;
  }
  EXPECT_DOUBLE_EQ(r.seconds, total);
  EXPECT_DOUBLE_EQ(r.fixedSeconds, fixedTotal);
  // The first trial's plan is its own fixed plan; the largest batch gains
  // from a plan of its own.
  EXPECT_NEAR(r.trials[0].seconds, r.trials[0].fixedSeconds, 1e-12);
  EXPECT_LT(r.trials[2].seconds, r.trials[2].fixedSeconds);
}

TEST_F(TuneOnDgx, TrialStepsFromTheNoiseScaleAndAGivenFixedPlan) {
  std::vector<Trial> trials =
      cantFail(parseTrials("batch=64;batch=512,steps=7"));
  llvm::Expected<TuneResult> noSteps =
      tuneTrials(model, c, cm, o, trials, {}, {});
  ASSERT_FALSE(static_cast<bool>(noSteps));
  EXPECT_NE(
      errorOf(noSteps.takeError()).find("trial 1 (batch=64) has no steps=N"),
      std::string::npos);
  StatEfficiency e = cantFail(makeStatEfficiency(128, 0, 100));
  schedule::Plan fixed = cantFail(schedule::parsePlan("dp=2,pp=4,mbs=4"));
  TuneResult r = cantFail(tuneTrials(model, c, cm, o, trials, e, fixed));
  EXPECT_DOUBLE_EQ(r.trials[0].steps, e.stepsFor(64));
  EXPECT_DOUBLE_EQ(r.trials[1].steps, 7);
  EXPECT_EQ(r.fixedSource, "--dist-tune-fixed");
  EXPECT_EQ(r.trials[0].fixed.sim.plan.pp, 4u);
  EXPECT_EQ(r.trials[0].fixed.sim.plan.numMicrobatches, 8u);
  EXPECT_EQ(r.trials[1].fixed.sim.plan.numMicrobatches, 64u);
  // A fixed plan that cannot run a trial's batch names the trial.
  std::vector<Trial> odd = cantFail(parseTrials("batch=64,steps=1;batch=3,"
                                                "steps=1"));
  llvm::Expected<TuneResult> bad = tuneTrials(model, c, cm, o, odd, e, fixed);
  ASSERT_FALSE(static_cast<bool>(bad));
  std::string msg = errorOf(bad.takeError());
  EXPECT_NE(msg.find("cannot run trial 2 (batch=3)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--dist-tune-fixed=PLAN"), std::string::npos) << msg;
}

TEST_F(TuneOnDgx, AnAsynchronousFixedPlanRunsSynchronousTrialsWith1F1B) {
  std::vector<Trial> trials =
      cantFail(parseTrials("batch=64,async=1,steps=1;batch=64,steps=1"));
  schedule::Plan fixed =
      cantFail(schedule::parsePlan("dp=2,pp=4,mbs=4,schedule=2bw"));
  TuneResult r = cantFail(tuneTrials(model, c, cm, o, trials, {}, fixed));
  EXPECT_EQ(r.trials[0].fixed.sim.plan.schedule,
            schedule::ScheduleKind::PipeDream2BW);
  EXPECT_EQ(r.trials[1].fixed.sim.plan.schedule,
            schedule::ScheduleKind::OneFOneB);
  // A trial without async=1 never gets an asynchronous plan of its own.
  EXPECT_FALSE(schedule::isAsync(r.trials[1].best.best.sim.plan.schedule));
}

TEST_F(TuneOnDgx, FixedMicroBatchShrinksToDivideASmallerBatch) {
  std::vector<Trial> trials =
      cantFail(parseTrials("batch=1024,steps=1;batch=48,steps=1"));
  schedule::Plan fixed = cantFail(schedule::parsePlan("dp=8,mbs=32"));
  TuneResult r = cantFail(tuneTrials(model, c, cm, o, trials, {}, fixed));
  EXPECT_EQ(r.trials[0].fixed.sim.plan.mbs, 32u);
  // 48 / dp 8 = 6 samples per replica: the largest divisor below 32.
  EXPECT_EQ(r.trials[1].fixed.sim.plan.mbs, 6u);
  EXPECT_EQ(r.trials[1].fixed.sim.plan.numMicrobatches, 1u);
}

} // namespace
