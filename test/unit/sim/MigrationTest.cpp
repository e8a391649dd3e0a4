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

namespace {
/// A two-stage inference pipeline's costs by hand: stage 0 computes for
/// 0.3 s and sends 1 MB (0.08 s at Wi-Fi's 12.5 MB/s) in 0.1 s with the
/// latency; stage 1 computes for 0.35 s. The slowest stage takes 0.4 s a
/// micro-batch: 2.5 samples/s at mbs = 1.
schedule::PipelineCosts twoStageCosts(const schedule::Plan &p,
                                      unsigned numLayers) {
  schedule::PipelineCosts c;
  c.pp = 2;
  c.microbatches = p.numMicrobatches;
  c.stages.resize(2);
  c.stages[0].device = 0;
  c.stages[0].fwd = 0.3;
  c.stages[0].sendNextTime = 0.1;
  c.stages[0].sendNextBytes = 1e6;
  c.stages[0].nextLevel = cluster::LinkLevel::Network;
  c.stages[1].device = 1;
  c.stages[1].fwd = 0.35;
  for (unsigned vs = 0; vs < 2; ++vs)
    std::tie(c.stages[vs].layerBegin, c.stages[vs].layerEnd) =
        p.stageLayers(vs, numLayers);
  return c;
}
} // namespace

TEST(Migration, ALinkOnlyTheMoveUsesSlowsNothing) {
  cost::ModelDesc m = test::gpt(8);
  unsigned n = m.layers.size();
  cluster::Cluster c = boards();
  // The running plan sends from rank 0 to rank 1; the move sends rank 1's
  // last layers to rank 2: rank 1's sending port and rank 2's receiving
  // one carry nothing of the running plan.
  schedule::Plan running = plan("dp=1,pp=2,stages=4", m);
  MigrationInputs in = inputs(running, plan("dp=1,pp=3,stages=4/6", m));
  in.runningCosts = twoStageCosts(running, m.layers.size());
  in.runningSamplesPerSecond = 2.5;
  MigrationReport r = llvm::cantFail(planMigration(in, m, c));
  ASSERT_EQ(r.transfers.size(), 1u);
  EXPECT_EQ(r.transfers[0].from, 1u);
  EXPECT_EQ(r.transfers[0].to, 2u);
  EXPECT_TRUE(r.contentionPriced);
  EXPECT_EQ(r.sharedPorts, 0u);
  EXPECT_EQ(r.preparingSamplesPerSecond, 2.5);
  EXPECT_EQ(r.besideMoveSeconds, r.moveSeconds);
  EXPECT_EQ(r.slowdownSamplesLost, 0);
  EXPECT_EQ(r.pauseSooner, 0);
  EXPECT_DOUBLE_EQ(r.moveSeconds, c.network.latency + 2 * params(m, 6, n) /
                                                          c.network.bandwidth);
  EXPECT_TRUE(r.chosenBeside);
  EXPECT_DOUBLE_EQ(r.samplesLost, 0.9 * 2.5);
  std::string text;
  llvm::raw_string_ostream os(text);
  printMigration(r, os);
  EXPECT_NE(text.find("contention       none: no link carries both"),
            std::string::npos)
      << text;
}

TEST(Migration, ASharedLinkSlowsTheRunningPlanAndTheMove) {
  cost::ModelDesc m = test::gpt(8);
  cluster::Cluster c = boards();
  // The cut moves from layer 4 to 3: rank 0 sends layer 3 to rank 1, on
  // the ports of the running plan's boundary message (rank 0 out, rank 1
  // in). By hand: the message's 0.08 s of bytes take 0.16 s at half the
  // port, so stage 0 takes 0.3 + 0.1 + 0.08 = 0.48 s and the plan serves
  // 2.5 x 0.4 / 0.48 = 2.0833 samples/s, i.e. 2.0833 micro-batches of
  // 1 MB a second: 1/6 of the 12.5 MB/s ports. The move gets the other
  // 5/6: latency + bytes / (5/6 x bandwidth).
  schedule::Plan running = plan("dp=1,pp=2,stages=4", m);
  MigrationInputs in = inputs(running, plan("dp=1,pp=2,stages=3", m));
  in.runningCosts = twoStageCosts(running, m.layers.size());
  in.runningSamplesPerSecond = 2.5;
  in.nextSamplesPerSecond = 3;
  MigrationReport r = llvm::cantFail(planMigration(in, m, c));
  ASSERT_EQ(r.transfers.size(), 1u);
  EXPECT_EQ(r.transfers[0].from, 0u);
  EXPECT_EQ(r.transfers[0].to, 1u);
  double bytes = 2 * params(m, 3, 4);
  EXPECT_EQ(r.sharedPorts, 2u);
  EXPECT_DOUBLE_EQ(r.preparingSamplesPerSecond, 2.5 * 0.4 / 0.48);
  double beside = c.network.latency + bytes / (c.network.bandwidth * 5 / 6);
  EXPECT_NEAR(r.besideMoveSeconds, beside, 1e-12 * beside);
  EXPECT_DOUBLE_EQ(r.moveSeconds,
                   c.network.latency + bytes / c.network.bandwidth);
  EXPECT_DOUBLE_EQ(r.prepareSeconds, r.besideMoveSeconds);
  double slow = (2.5 - 2.5 * 0.4 / 0.48) * r.besideMoveSeconds;
  EXPECT_NEAR(r.slowdownSamplesLost, slow, 1e-12 * slow);
  // The downtime is the drain and the fill's, as without contention.
  EXPECT_DOUBLE_EQ(r.besideDowntime, 0.9);
  EXPECT_NEAR(r.besideSamplesLost, 0.9 * 2.5 + slow, 1e-12);
  // A pause loses its downtime's samples, and ends the slowed part of the
  // move sooner, serving the new plan's 0.5 samples/s more meanwhile.
  double pause = (0.9 + r.moveSeconds) * 2.5;
  EXPECT_DOUBLE_EQ(r.pauseSamplesLost, pause);
  EXPECT_DOUBLE_EQ(r.pauseSooner, r.besideMoveSeconds - r.moveSeconds);
  EXPECT_NEAR(r.pauseSamplesLostCompared, pause - 0.5 * r.pauseSooner, 1e-12);
  EXPECT_TRUE(r.chosenBeside);
  EXPECT_DOUBLE_EQ(r.breakEvenSeconds, r.besideSamplesLost / 0.5);

  std::string text;
  llvm::raw_string_ostream os(text);
  printMigration(r, os);
  EXPECT_NE(text.find("contention       2 link ports carry the running "
                      "plan's messages and the move (fair share): running "
                      "plan 2.0833 samples/s while preparing (-16.7%)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("samples lost     prepare-beside "), std::string::npos)
      << text;
  llvm::json::Value v = toJSON(r);
  const llvm::json::Object *besideJson =
      v.getAsObject()->getObject("prepare_beside");
  EXPECT_EQ(besideJson->getObject("contention")->getString("rule"),
            "fair-share");
  EXPECT_EQ(besideJson->getObject("contention")->getInteger("shared_ports"), 2);
  EXPECT_EQ(besideJson->getNumber("move_s"), r.besideMoveSeconds);

  // A new plan six times faster: the pause's sooner end serves 12.5
  // samples/s more for pauseSooner seconds, which outweighs the slowdown.
  in.nextSamplesPerSecond = 15;
  r = llvm::cantFail(planMigration(in, m, c));
  EXPECT_GT(r.besideSamplesLost, r.pauseSamplesLostCompared);
  EXPECT_FALSE(r.chosenBeside);
  EXPECT_DOUBLE_EQ(r.downtime, r.pauseDowntime);
  EXPECT_DOUBLE_EQ(r.samplesLost, r.pauseSamplesLost);
}

TEST(Migration, ThePlanRunsSlowedOnlyWhileItsSharedPortsCarryTransfers) {
  cost::ModelDesc m = test::gpt(8);
  cluster::Cluster c = boards();
  // Cuts at 3 and 6: rank 0 sends layer 3 to rank 1 on the running plan's
  // boundary ports (rank 0 out, rank 1 in: shared, as in the test above,
  // so the plan serves 2.0833 samples/s and the transfer gets 5/6 of its
  // ports), and rank 1 sends layers 6-9 to rank 2 on ports the plan does
  // not use (at the whole bandwidth). The second transfer, of more
  // bytes, is the move; the plan is slowed only until the first is done
  // rather than for the whole move.
  schedule::Plan running = plan("dp=1,pp=2,stages=4", m);
  MigrationInputs in = inputs(running, plan("dp=1,pp=3,stages=3/6", m));
  in.runningCosts = twoStageCosts(running, m.layers.size());
  in.runningSamplesPerSecond = 2.5;
  in.nextSamplesPerSecond = 3;
  MigrationReport r = llvm::cantFail(planMigration(in, m, c));
  ASSERT_EQ(r.transfers.size(), 2u);
  double shared =
      c.network.latency + 2 * params(m, 3, 4) / (c.network.bandwidth * 5 / 6);
  double alone = c.network.latency +
                 2 * params(m, 6, m.layers.size()) / c.network.bandwidth;
  ASSERT_GT(alone, shared);
  EXPECT_EQ(r.sharedPorts, 2u);
  EXPECT_DOUBLE_EQ(r.preparingSamplesPerSecond, 2.5 * 0.4 / 0.48);
  EXPECT_NEAR(r.besideMoveSeconds, alone, 1e-12 * alone);
  EXPECT_NEAR(r.slowedSeconds, shared, 1e-12 * shared);
  double slow = (2.5 - 2.5 * 0.4 / 0.48) * shared;
  EXPECT_NEAR(r.slowdownSamplesLost, slow, 1e-12 * slow);
  EXPECT_NEAR(r.besideSamplesLost, 0.9 * 2.5 + slow, 1e-12);
  llvm::json::Value v = toJSON(r);
  const llvm::json::Object *contention =
      v.getAsObject()->getObject("prepare_beside")->getObject("contention");
  EXPECT_EQ(contention->getNumber("slowed_s"), r.slowedSeconds);
  EXPECT_EQ(contention->getNumber("samples_lost"), r.slowdownSamplesLost);
  std::string text;
  llvm::raw_string_ostream os(text);
  printMigration(r, os);
  EXPECT_NE(text.find(llvm::formatv("slowed for {0:F3} s", shared).str()),
            std::string::npos)
      << text;
}

namespace {
/// Two nodes of two devices on a 12.5 MB/s network without latency; with
/// \p nics, the NICs per node its devices share.
cluster::Cluster twoByTwo(unsigned nics) {
  std::string text = R"(name: pairs
devices:
  - name: board
    peak_tflops: {fp32: 1}
    memory_GB: 4
    memory_bandwidth_GBps: 10
nodes:
  - device: board
    count: 2
    devices_per_node: 2
)";
  if (nics)
    text += "    nics: " + std::to_string(nics) + "\n";
  text += "    intra_node: {name: bus, bandwidth_GBps: 1, latency_us: 0}\n"
          "network: {name: eth, bandwidth_GBps: 0.0125, latency_us: 0}\n";
  return llvm::cantFail(cluster::parseClusterYAML(text, "pairs.yaml"));
}
} // namespace

TEST(Migration, ANodesDevicesShareItsNic) {
  cost::ModelDesc m = test::gpt(8);
  unsigned n = m.layers.size();
  // Rank 0 holds everything and the new plan wants it all on rank 1 (its
  // node) and on rank 2 (the other node): one NIC per node lets rank 0's
  // network transfer use all of it, twice the network's per-device share.
  cluster::Cluster shared = twoByTwo(1);
  cost::CostModel cm;
  auto planOn = [&](llvm::StringRef spec, const cluster::Cluster &c) {
    schedule::Plan p = llvm::cantFail(schedule::parsePlan(spec));
    p.mode = schedule::Mode::Infer;
    llvm::cantFail(schedule::finalizePlan(p, m, c, 12, cm));
    return p;
  };
  MigrationReport r = llvm::cantFail(planMigration(
      inputs(planOn("dp=1,pp=1", shared), planOn("dp=3,pp=1", shared)), m,
      shared));
  double bytes = 2 * params(m, 0, n);
  ASSERT_EQ(r.transfers.size(), 2u);
  EXPECT_EQ(r.transfers[1].to, 2u);
  EXPECT_EQ(r.transfers[1].link, "eth");
  EXPECT_DOUBLE_EQ(r.transfers[1].seconds, bytes / (2 * 0.0125e9));

  // Both devices of node 0 send over the network to node 1: they take
  // turns on its NIC, which is then the busiest.
  r = llvm::cantFail(planMigration(
      inputs(planOn("dp=2,pp=1", shared), planOn("dp=4,pp=1", shared)), m,
      shared));
  double all = 0;
  for (const Transfer &t : r.transfers) {
    EXPECT_EQ(t.link, "eth");
    all += t.seconds;
  }
  EXPECT_NEAR(all, 2 * bytes / (2 * 0.0125e9), 1e-12 * all);
  EXPECT_NEAR(r.moveSeconds, all, 1e-12 * all);
  EXPECT_TRUE(r.busiestNic);
  EXPECT_EQ(r.busiestDevice, 0u);
  std::string text;
  llvm::raw_string_ostream os(text);
  printMigration(r, os);
  EXPECT_NE(text.find("(the NIC of rank 0 busiest)"), std::string::npos)
      << text;
}

TEST(Migration, ASharedNicCarriesAnotherDevicesMessages) {
  cost::ModelDesc m = test::gpt(8);
  unsigned n = m.layers.size();
  cost::CostModel cm;
  // The running pipeline on ranks 0, 1, 2: stage 1 (rank 1) sends 1 MB a
  // micro-batch over the network to stage 2 (rank 2). The move sends from
  // rank 0 to rank 3, whose own ports the running plan does not use.
  for (unsigned nics : {0u, 1u}) {
    cluster::Cluster c = twoByTwo(nics);
    schedule::Plan running = llvm::cantFail(schedule::parsePlan("dp=1,pp=3"));
    running.mode = schedule::Mode::Infer;
    llvm::cantFail(schedule::finalizePlan(running, m, c, 8, cm));
    schedule::PipelineCosts costs;
    costs.pp = 3;
    costs.microbatches = running.numMicrobatches;
    costs.stages.resize(3);
    for (unsigned vs = 0; vs < 3; ++vs) {
      costs.stages[vs].device = vs;
      std::tie(costs.stages[vs].layerBegin, costs.stages[vs].layerEnd) =
          running.stageLayers(vs, n);
      costs.stages[vs].fwd = 0.3;
    }
    costs.stages[1].sendNextTime = 0.1;
    costs.stages[1].sendNextBytes = 1e6;
    costs.stages[2].fwd = 0.35;
    const double bytes = 5e6;
    SharedLinks s = shareLinks(running, costs, m, c, 2.5, {{0, 3, bytes}});
    if (!nics) {
      // Its own NIC each: nothing shared, nothing slower.
      EXPECT_EQ(s.sharedPorts, 0u);
      EXPECT_EQ(s.runningSamplesPerSecond, 2.5);
      EXPECT_DOUBLE_EQ(s.move.seconds, bytes / 0.0125e9);
      continue;
    }
    // One NIC per node: node 0's sending NIC and node 1's receiving one
    // carry the message and the move. By hand: the message's 0.08 s take
    // 0.16 s, stage 1 takes 0.48 s instead of 0.4 s, the plan serves
    // 2.5 x 0.4 / 0.48 samples/s, micro-batches of 1 MB at that rate use
    // 1/12 of the 25 MB/s NIC, and the move gets the other 11/12.
    EXPECT_EQ(s.sharedPorts, 2u);
    EXPECT_DOUBLE_EQ(s.runningSamplesPerSecond, 2.5 * 0.4 / 0.48);
    EXPECT_NEAR(s.move.seconds, bytes / (0.025e9 * 11 / 12), 1e-12);
  }
}
