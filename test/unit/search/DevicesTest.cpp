//===- DevicesTest.cpp - Device counts, idle devices, ranking ---*- C++ -*-===//
//
// Part of DistOpt. lib/Search/Devices.cpp (plans on fewer devices than the
// cluster has, the too-small-for-the-cluster advice) and the inference
// ranking (the objective first, the other one on ties).
//
//===----------------------------------------------------------------------===//

#include "SearchTestUtil.h"

#include "lib/Search/Search.h"

#include "gtest/gtest.h"

using namespace distopt;
using namespace distopt::search;
using distopt::search::test::smallGpt;

namespace {

TEST(Devices, FirstDevicesKeepsWholeNodesThenAPartialOne) {
  cluster::Cluster c = cantFail(cluster::getPreset("dgx-a100-80gb", 2));
  cluster::Cluster d = firstDevices(c, 12);
  EXPECT_EQ(d.numDevices(), 12u);
  ASSERT_EQ(d.groups.size(), 2u);
  EXPECT_EQ(d.groups[0].devicesPerNode, 8u);
  EXPECT_EQ(d.groups[0].nodes, 1u);
  EXPECT_EQ(d.groups[1].devicesPerNode, 4u);
  EXPECT_EQ(d.groups[1].nodes, 1u);
  EXPECT_EQ(firstDevices(c, 16).numDevices(), 16u);
  EXPECT_EQ(firstDevices(c, 1).numDevices(), 1u);
}

TEST(Devices, SearchUsesTheGivenNumberOfDevices) {
  cost::ModelDesc model = smallGpt(4, 1024);
  cluster::Cluster c = cantFail(cluster::getPreset("dgx-a100-80gb", 2));
  cost::CostModel cm;
  SearchOptions o;
  o.globalBatch = 64;
  o.devices = 4;
  SearchResult r = cantFail(searchPlan(model, c, cm, o));
  EXPECT_EQ(r.devicesUsed, 4u);
  EXPECT_EQ(r.devicesTotal, 16u);
  EXPECT_EQ(r.best.sim.plan.numDevices(), 4u);
  o.devices = 17;
  llvm::Expected<SearchResult> bad = searchPlan(model, c, cm, o);
  ASSERT_FALSE(static_cast<bool>(bad));
  EXPECT_NE(llvm::toString(bad.takeError()).find("give at most 16"),
            std::string::npos);
}

TEST(Devices, TooSmallModelGetsAdvice) {
  // Two layers of width 64 over 32 tokens of a 512-word vocabulary (about
  // 100K parameters): far too little work for 16 A100s.
  cost::GptConfig g;
  g.layers = 2;
  g.hidden = 64;
  g.heads = 4;
  g.seqLen = 32;
  g.vocab = 512;
  cost::ModelDesc tiny = cost::buildGpt(g);
  cluster::Cluster c = cantFail(cluster::getPreset("dgx-a100-80gb", 2));
  cost::CostModel cm;
  SearchOptions o;
  o.globalBatch = 16;
  SearchResult r = cantFail(searchPlan(tiny, c, cm, o));
  ASSERT_GT(r.suggestedDevices, 0u);
  EXPECT_LT(r.suggestedDevices, 16u);
  EXPECT_LT(r.efficiency, 0.5);
  ASSERT_GE(r.scaling.size(), 2u);
  EXPECT_EQ(r.scaling.front().first, 1u);
  EXPECT_EQ(r.scaling.back().first, 16u);
  // The suggested count is within 10% of the fastest tried.
  double fastest = r.scaling.front().second, suggested = 0;
  for (auto &[k, t] : r.scaling) {
    fastest = std::min(fastest, t);
    if (k == r.suggestedDevices)
      suggested = t;
  }
  EXPECT_LE(suggested, 1.1 * fastest);
  // A model that needs the cluster gets none.
  cost::ModelDesc big = smallGpt(16, 4096);
  o.globalBatch = 256;
  SearchResult b = cantFail(searchPlan(big, c, cm, o));
  EXPECT_EQ(b.suggestedDevices, 0u);
}

TEST(Devices, InferenceRanksByTheObjectiveThenTheOther) {
  cost::ModelDesc model = smallGpt(8, 1024);
  cluster::Cluster c = cantFail(cluster::getPreset("dgx-a100-80gb", 1));
  cost::CostModel cm;
  SearchOptions o;
  o.globalBatch = 32;
  o.mode = Mode::Infer;
  o.alternatives = 1000;
  for (InferObjective obj :
       {InferObjective::Throughput, InferObjective::Latency}) {
    o.objective = obj;
    SearchResult r = cantFail(searchPlan(model, c, cm, o));
    std::vector<const Candidate *> rows{&r.best};
    for (const Candidate &a : r.alternatives)
      rows.push_back(&a);
    ASSERT_GT(rows.size(), 2u);
    auto other = [&](const Candidate *x) {
      return obj == InferObjective::Latency ? 1 / x->streamThroughput
                                            : x->latency;
    };
    for (size_t i = 1; i < rows.size(); ++i) {
      double a = objectiveTime(*rows[i - 1], r.mode, obj),
             b = objectiveTime(*rows[i], r.mode, obj);
      if (std::fabs(a - b) <= 1e-9 * std::max(a, b))
        EXPECT_LE(other(rows[i - 1]), other(rows[i])) << "tie at rank " << i;
      else
        EXPECT_LT(a, b) << "rank " << i;
    }
  }
}

} // namespace
