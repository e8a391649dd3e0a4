//===- MigrationTest.cpp - Moving a running plan to a new one ---*- C++ -*-===//

#include "lib/Sim/Migration.h"
#include "lib/Cost/CostModel.h"

#include "SimTestUtil.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace distopt;
using namespace distopt::sim;

namespace {

/// Four ARM boards, one per node, on Wi-Fi.
cluster::Cluster boards() {
  return llvm::cantFail(cluster::getPreset("arm-board-wifi", 4));
}

schedule::Plan plan(llvm::StringRef spec, const cost::ModelDesc &model,
                    schedule::Mode mode = schedule::Mode::Infer) {
  schedule::Plan p = llvm::cantFail(schedule::parsePlan(spec));
  p.mode = mode;
  cost::CostModel cm;
  llvm::cantFail(schedule::finalizePlan(p, model, boards(), 8, cm));
  return p;
}

/// Parameters of layers [begin, end), and of their TP-split ops only.
double params(const cost::ModelDesc &m, unsigned begin, unsigned end,
              bool splitOnly = false) {
  double n = 0;
  for (unsigned l = begin; l < end; ++l)
    for (const cost::OpDesc &op : m.layers[l].ops)
      if (!splitOnly || op.tp == cost::TpMode::Split)
        n += op.params;
  return n;
}

MigrationInputs inputs(schedule::Plan running, schedule::Plan next) {
  MigrationInputs in;
  in.running = std::move(running);
  in.next = std::move(next);
  in.bytesPerParam = 2;
  in.runningLatency = 0.5;
  in.nextLatency = 0.4;
  in.runningSamplesPerSecond = 10;
  in.nextSamplesPerSecond = 15;
  return in;
}

} // namespace

TEST(Migration, HeldSlicesFollowTheRankLayout) {
  cost::ModelDesc m = test::gpt(8);
  unsigned n = m.layers.size();
  schedule::Plan p = plan("dp=1,tp=2,pp=2,stages=4", m);
  std::vector<std::vector<LayerSlice>> held = heldSlices(p, n);
  ASSERT_EQ(held.size(), 4u);
  // Ranks 0 and 1 are stage 0's TP pair, ranks 2 and 3 stage 1's.
  ASSERT_EQ(held[1].size(), 4u);
  EXPECT_EQ(held[1].front().layer, 0u);
  EXPECT_EQ(held[1].front().begin, 0.5);
  EXPECT_EQ(held[1].front().end, 1.0);
  EXPECT_EQ(held[2].size(), n - 4);
  EXPECT_EQ(held[2].front().layer, 4u);
  EXPECT_EQ(held[2].front().end, 0.5);
}

TEST(Migration, TheSamePlanMovesNothing) {
  cost::ModelDesc m = test::gpt(8);
  schedule::Plan p = plan("dp=1,pp=4", m);
  MigrationInputs in = inputs(p, p);
  in.nextSamplesPerSecond = in.runningSamplesPerSecond;
  MigrationReport r = llvm::cantFail(planMigration(in, m, boards()));
  EXPECT_TRUE(r.samePlan);
  EXPECT_EQ(r.bytesMoved, 0);
  EXPECT_TRUE(r.transfers.empty());
  EXPECT_DOUBLE_EQ(r.bytesKept, 2 * params(m, 0, m.layers.size()));
  EXPECT_EQ(r.moveSeconds, 0);
  EXPECT_FALSE(r.worthIt);
  EXPECT_TRUE(std::isinf(r.breakEvenSeconds));
}

TEST(Migration, DeeperPipelineMovesTheLayersThatChangeDevice) {
  cost::ModelDesc m = test::gpt(8);
  unsigned n = m.layers.size();
  cluster::Cluster c = boards();
  // Rank 0 keeps [0, 2) and sends [2, 4) to rank 1, which sends its
  // [4, n) on to ranks 2 and 3.
  MigrationInputs in =
      inputs(plan("dp=1,pp=2,stages=4", m), plan("dp=1,pp=4,stages=2/4/6", m));
  MigrationReport r = llvm::cantFail(planMigration(in, m, c));
  EXPECT_DOUBLE_EQ(r.bytesKept, 2 * params(m, 0, 2));
  EXPECT_DOUBLE_EQ(r.bytesMoved, 2 * params(m, 2, n));
  ASSERT_EQ(r.transfers.size(), 3u);
  EXPECT_EQ(r.transfers[0].from, 0u);
  EXPECT_EQ(r.transfers[0].to, 1u);
  EXPECT_EQ(r.transfers[0].layers, (std::vector<unsigned>{2, 3}));
  EXPECT_EQ(r.transfers[2].from, 1u);
  EXPECT_EQ(r.transfers[2].to, 3u);
  EXPECT_EQ(r.transfers[2].link, "wifi");
  ASSERT_EQ(r.bytesPerLevel.size(), 1u);
  EXPECT_EQ(r.bytesPerLevel[0].first, "wifi");
  // Rank 1 sends two transfers, each latency + bytes / bandwidth, and
  // that is the busiest device.
  const cluster::LinkSpec &wifi = c.network;
  double send1 = 2 * wifi.latency + 2 * params(m, 4, n) / wifi.bandwidth;
  EXPECT_NEAR(r.moveSeconds, send1, 1e-9 * send1);
  EXPECT_EQ(r.busiestDevice, 1u);
  // Pause-and-resume pays the move; preparing beside does not.
  EXPECT_DOUBLE_EQ(r.pauseDowntime, 0.5 + r.moveSeconds + 0.4);
  ASSERT_TRUE(r.besidePossible);
  EXPECT_DOUBLE_EQ(r.besideDowntime, 0.9);
  EXPECT_DOUBLE_EQ(r.prepareSeconds, r.moveSeconds);
  EXPECT_TRUE(r.chosenBeside);
  // 0.9 s without 10 samples/s, made up at 5 samples/s more.
  EXPECT_TRUE(r.worthIt);
  EXPECT_DOUBLE_EQ(r.breakEvenSeconds, 0.9 * 10 / 5);
}

TEST(Migration, PauseRestartsTheJobAndBesideHidesTheStart) {
  cost::ModelDesc m = test::gpt(8);
  MigrationInputs in =
      inputs(plan("dp=1,pp=2,stages=4", m), plan("dp=1,pp=4,stages=2/4/6", m));
  in.relaunch = {1.25, "recorded by dist-run in r.json", true};
  MigrationReport r = llvm::cantFail(planMigration(in, m, boards()));
  // A pause stops the running job, then starts the new one: its start is
  // downtime, between the drain and the move.
  EXPECT_DOUBLE_EQ(r.pauseDowntime, 0.5 + 1.25 + r.moveSeconds + 0.4);
  // Beside, the new job starts and receives its weights while the running
  // one serves: the start lengthens the preparation, not the downtime.
  ASSERT_TRUE(r.besidePossible);
  EXPECT_DOUBLE_EQ(r.besideDowntime, 0.9);
  EXPECT_DOUBLE_EQ(r.prepareSeconds, 1.25 + r.moveSeconds);
  EXPECT_DOUBLE_EQ(r.downtime, 0.9);
  // The report shows the term and where it comes from.
  std::string text;
  llvm::raw_string_ostream os(text);
  printMigration(r, os);
  EXPECT_NE(text.find("relaunch         1.250 s to start the new job "
                      "(recorded by dist-run in r.json)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("+ relaunch 1.250 + move"), std::string::npos) << text;
  llvm::json::Value v = toJSON(r);
  const llvm::json::Object *o = v.getAsObject();
  EXPECT_EQ(o->getObject("pause_resume")->getNumber("relaunch_s"), 1.25);
  EXPECT_EQ(o->getObject("relaunch")->getString("source"),
            "recorded by dist-run in r.json");
  EXPECT_EQ(o->getObject("prepare_beside")->getNumber("relaunch_s"), 1.25);
}

TEST(Migration, WithoutARelaunchThePauseSaysItIsLeftOut) {
  cost::ModelDesc m = test::gpt(8);
  MigrationInputs in =
      inputs(plan("dp=1,pp=2,stages=4", m), plan("dp=1,pp=4,stages=2/4/6", m));
  in.relaunch = {0, "none given", false};
  MigrationReport r = llvm::cantFail(planMigration(in, m, boards()));
  EXPECT_DOUBLE_EQ(r.pauseDowntime, 0.5 + r.moveSeconds + 0.4);
  std::string text;
  llvm::raw_string_ostream os(text);
  printMigration(r, os);
  EXPECT_NE(text.find("relaunch         not priced: none given"),
            std::string::npos)
      << text;
}

TEST(Migration, TensorParallelReshardFetchesTheMissingHalf) {
  cost::ModelDesc m = test::gpt(8);
  unsigned n = m.layers.size();
  // tp=2 -> dp=2: each rank keeps its half of the split weights and all
  // replicated ones, and receives the other half from its TP partner.
  MigrationInputs in =
      inputs(plan("dp=1,tp=2,pp=1", m), plan("dp=2,tp=1,pp=1", m));
  MigrationReport r = llvm::cantFail(planMigration(in, m, boards()));
  double split = params(m, 0, n, /*splitOnly=*/true);
  double replicated = params(m, 0, n) - split;
  EXPECT_NEAR(r.bytesMoved, 2 * split, 1e-6 * split);
  EXPECT_NEAR(r.bytesKept, 2 * (split + 2 * replicated), 1e-6 * split);
  ASSERT_EQ(r.transfers.size(), 2u);
  EXPECT_EQ(r.transfers[0].from, 0u);
  EXPECT_EQ(r.transfers[0].to, 1u);
  EXPECT_EQ(r.transfers[1].from, 1u);
  EXPECT_EQ(r.transfers[1].to, 0u);
}

/// A vocabulary of 32001 words, which tp = 2 does not divide: the word
/// table and the head stay whole on both tensor ranks (dist-tensor-parallel
/// keeps them whole, the cost model prices them so: OpDesc::tpMode), so a
/// re-plan between tp = 2 and one rank moves only the split weights' halves.
TEST(Migration, AVocabularyTpDoesNotDivideMovesWhole) {
  cost::GptConfig g;
  g.layers = 4, g.hidden = 1024, g.heads = 16, g.seqLen = 1024;
  g.vocab = 32001;
  cost::ModelDesc m = cost::buildGpt(g);
  double split = 0, whole = 0, vocabulary = 0;
  for (const cost::LayerDesc &l : m.layers)
    for (const cost::OpDesc &op : l.ops) {
      bool splits = op.tpMode(2) == cost::TpMode::Split;
      (splits ? split : whole) += op.params;
      vocabulary += op.tpDivisor == g.vocab ? op.params : 0;
    }
  // The table and the head tied to it.
  EXPECT_DOUBLE_EQ(vocabulary, 2.0 * g.vocab * g.hidden);
  EXPECT_GE(whole, vocabulary);
  // tp=2 -> dp=2: each rank fetches the other half of the split weights
  // and keeps the rest, the vocabulary's whole.
  MigrationReport down = llvm::cantFail(planMigration(
      inputs(plan("dp=1,tp=2,pp=1", m), plan("dp=2,tp=1,pp=1", m)), m,
      boards()));
  EXPECT_NEAR(down.bytesMoved, 2 * split, 1e-6 * split);
  EXPECT_NEAR(down.bytesKept, 2 * (split + 2 * whole), 1e-6 * split);
  // One rank -> tp=2: the new rank fetches its half of the split weights
  // and the whole vocabulary and replicated weights.
  MigrationReport up = llvm::cantFail(planMigration(
      inputs(plan("dp=1,pp=1", m), plan("dp=1,tp=2,pp=1", m)), m, boards()));
  EXPECT_NEAR(up.bytesMoved, 2 * (split / 2 + whole), 1e-6 * split);
  EXPECT_NEAR(up.bytesKept, 2 * (split / 2 + whole), 1e-6 * split);
  ASSERT_EQ(up.transfers.size(), 1u);
  EXPECT_EQ(up.transfers[0].from, 0u);
  EXPECT_EQ(up.transfers[0].to, 1u);
}

TEST(Migration, NewDeviceFetchesFromTheLeastLoadedHolder) {
  cost::ModelDesc m = test::gpt(8);
  // Two replicas hold everything; the two new ranks spread their fetches
  // over both (layer by layer) instead of draining one.
  MigrationInputs in = inputs(plan("dp=2,pp=1", m), plan("dp=4,pp=1", m));
  MigrationReport r = llvm::cantFail(planMigration(in, m, boards()));
  double total = 2 * 2 * params(m, 0, m.layers.size());
  EXPECT_DOUBLE_EQ(r.bytesMoved, total);
  double fromZero = 0;
  for (const Transfer &t : r.transfers) {
    EXPECT_LT(t.from, 2u);
    EXPECT_GE(t.to, 2u);
    fromZero += t.from == 0 ? t.bytes : 0;
  }
  EXPECT_GT(fromZero, total / 4);
  EXPECT_LT(fromZero, 3 * total / 4);
}

TEST(Migration, PreparingBesideNeedsTheMemory) {
  cost::ModelDesc m = test::gpt(8);
  MigrationInputs in =
      inputs(plan("dp=1,pp=2,stages=4", m), plan("dp=1,pp=4,stages=2/4/6", m));
  in.runningPeakPerDevice = {1e9, 1e9};
  // Rank 1 receives layers 2-3 on top of its running peak.
  in.memoryLimit = 1e9 + 1e3;
  MigrationReport r = llvm::cantFail(planMigration(in, m, boards()));
  EXPECT_FALSE(r.besidePossible);
  EXPECT_NE(r.besideProblem.find("rank 1 would hold 1000.0 MB for the "
                                 "running plan"),
            std::string::npos)
      << r.besideProblem;
  EXPECT_FALSE(r.chosenBeside);
  EXPECT_DOUBLE_EQ(r.downtime, r.pauseDowntime);
  in.memoryLimit = 0; // 4 GB boards
  r = llvm::cantFail(planMigration(in, m, boards()));
  EXPECT_TRUE(r.besidePossible);
  EXPECT_EQ(r.besideDevice, 1u);
  EXPECT_DOUBLE_EQ(r.besidePeak, 1e9 + 2 * params(m, 2, 4));
}

TEST(Migration, TrainingMovesOptimizerStateAndCannotPrepareBeside) {
  cost::ModelDesc m = test::gpt(8);
  MigrationInputs in =
      inputs(plan("dp=1,pp=2,stages=4", m, schedule::Mode::Train),
             plan("dp=1,pp=4,stages=2/4/6", m, schedule::Mode::Train));
  in.training = true;
  in.bytesPerParam = 14; // bf16 weights + Adam's fp32 master and moments
  MigrationReport r = llvm::cantFail(planMigration(in, m, boards()));
  EXPECT_DOUBLE_EQ(r.bytesMoved, 14 * params(m, 2, m.layers.size()));
  EXPECT_FALSE(r.besidePossible);
  EXPECT_EQ(r.drainSeconds, 0);
  EXPECT_DOUBLE_EQ(r.downtime, r.moveSeconds);
  // A training job restarted under the new plan pays its start too.
  in.relaunch = {30, "availability.relaunch_s of cluster 'boards'", true};
  r = llvm::cantFail(planMigration(in, m, boards()));
  EXPECT_DOUBLE_EQ(r.downtime, 30 + r.moveSeconds);
}

TEST(Migration, UnsupportedStateIsAnError) {
  cost::ModelDesc m = test::gpt(8);
  schedule::Plan zero = plan("dp=2,pp=1,zero=1", m, schedule::Mode::Train);
  EXPECT_NE(migrationProblem(zero).find("ZeRO-1"), std::string::npos);
  MigrationInputs in = inputs(zero, zero);
  in.training = true;
  llvm::Expected<MigrationReport> r = planMigration(in, m, boards());
  ASSERT_FALSE(r);
  EXPECT_NE(llvm::toString(r.takeError()).find("from the running plan"),
            std::string::npos);
  // The same layout for inference has no optimizer state to shard.
  EXPECT_EQ(migrationProblem(plan("dp=2,pp=1,zero=1", m)), "");
}
