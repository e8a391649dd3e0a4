//===- ReportTest.cpp - Report JSON, Chrome trace, SVG ----------*- C++ -*-===//

#include "lib/Sim/Report.h"

#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

using namespace distopt;
using namespace distopt::sim;

namespace {

PlanSimulation simulated() {
  cluster::Cluster c = llvm::cantFail(cluster::getPreset("dgx-a100-80gb", 2));
  cost::GptConfig g;
  g.layers = 8;
  g.hidden = 1024;
  g.heads = 16;
  g.seqLen = 512;
  g.vocab = 32000;
  cost::CostModel cm;
  return llvm::cantFail(simulatePlan(
      cost::buildGpt(g), c,
      llvm::cantFail(schedule::parsePlan(
          "dp=2,tp=4,pp=2,schedule=interleaved,chunks=2,recompute=full")),
      16, cm));
}

/// The parts of each rank's peak add up to it, and a split backward keeps
/// activations from B to W (a part of its own).
TEST(Report, PeakMemoryPartsAddUpToThePeak) {
  cluster::Cluster c = llvm::cantFail(cluster::getPreset("dgx-a100-80gb", 1));
  cost::GptConfig g;
  g.layers = 4;
  g.hidden = 512;
  g.heads = 8;
  g.seqLen = 256;
  g.vocab = 8000;
  cost::CostModel cm;
  PlanSimulation ps =
      llvm::cantFail(simulatePlan(cost::buildGpt(g), c,
                                  llvm::cantFail(schedule::parsePlan(
                                      "dp=2,tp=2,pp=2,schedule=zb-h1,zero=1")),
                                  16, cm));
  const SimResult &r = ps.result;
  ASSERT_EQ(r.peakMemoryParts.size(), r.peakMemoryBytes.size());
  bool stash = false;
  for (auto [parts, peak] : llvm::zip(r.peakMemoryParts, r.peakMemoryBytes)) {
    EXPECT_EQ(parts.total(), peak);
    EXPECT_NEAR(parts.activations + parts.activationStash + parts.working,
                parts.dynamicBytes, 1e-9 * peak);
    EXPECT_GT(parts.fixed.weights, 0);
    EXPECT_GT(parts.fixed.optimizer, 0);
    EXPECT_GT(parts.activations, 0);
    stash |= parts.activationStash > 0;
  }
  EXPECT_TRUE(stash);
}

TEST(Report, JsonHasThePlanAndTheEstimate) {
  PlanSimulation ps = simulated();
  std::string text;
  llvm::raw_string_ostream os(text);
  cost::GptConfig g8;
  g8.layers = 8;
  g8.hidden = 1024;
  g8.heads = 16;
  g8.seqLen = 512;
  g8.vocab = 32000;
  cost::ModelDesc model = cost::buildGpt(g8);
  writeReport(ps.plan, model, ps.costs, ps.result, os);
  llvm::Expected<llvm::json::Value> v = llvm::json::parse(text);
  ASSERT_TRUE(static_cast<bool>(v)) << llvm::toString(v.takeError());
  const llvm::json::Object *root = v->getAsObject();
  const llvm::json::Object *plan = root->getObject("plan");
  const llvm::json::Object *est = root->getObject("estimate");
  ASSERT_TRUE(plan && est);
  EXPECT_EQ(plan->getInteger("dp"), 2);
  EXPECT_EQ(plan->getInteger("tp"), 4);
  EXPECT_EQ(plan->getInteger("pp"), 2);
  EXPECT_EQ(plan->getInteger("num_microbatches"), 8);
  EXPECT_EQ(plan->getString("schedule"), "interleaved");
  EXPECT_EQ(plan->getString("recompute"), "full");
  const llvm::json::Array *stages = plan->getArray("stages");
  ASSERT_EQ(stages->size(), 4u);
  const llvm::json::Object *s1 = (*stages)[1].getAsObject();
  EXPECT_EQ(s1->getInteger("pipeline_rank"), 1);
  EXPECT_EQ(s1->getArray("devices")->size(), 8u);
  EXPECT_EQ((*s1->getArray("devices"))[0].getAsInteger(), 8);
  const llvm::json::Array *ops = s1->getArray("op_range");
  ASSERT_TRUE(ops);
  EXPECT_EQ((*ops)[0].getAsString(), "ln1");
  EXPECT_EQ((*ops)[1].getAsString(), "dropout_residual2");
  EXPECT_EQ(est->getNumber("iteration_time_s"), ps.result.iterationTime);
  for (const char *k : {"samples_per_s", "tflops_per_device",
                        "model_tflops_per_device", "bubble_fraction"})
    EXPECT_TRUE(est->getNumber(k).has_value()) << k;
  EXPECT_EQ(est->getArray("peak_memory_bytes")->size(), 16u);
  const llvm::json::Object *links = est->getObject("bytes_per_link_level");
  ASSERT_TRUE(links);
  EXPECT_GT(*links->getNumber("nvlink"), 0);
  EXPECT_GT(*links->getNumber("infiniband"), 0);
}

TEST(Report, ChromeTraceLoads) {
  PlanSimulation ps = simulated();
  std::string text;
  llvm::raw_string_ostream os(text);
  writeChromeTrace(ps.result, os);
  llvm::Expected<llvm::json::Value> v = llvm::json::parse(text);
  ASSERT_TRUE(static_cast<bool>(v)) << llvm::toString(v.takeError());
  const llvm::json::Array *events = v->getAsObject()->getArray("traceEvents");
  ASSERT_TRUE(events);
  unsigned complete = 0, names = 0;
  for (const llvm::json::Value &e : *events) {
    const llvm::json::Object *o = e.getAsObject();
    if (o->getString("ph") == "X") {
      ++complete;
      EXPECT_GE(*o->getNumber("dur"), 0);
      EXPECT_TRUE(o->getInteger("pid").has_value());
    } else if (o->getString("ph") == "M") {
      ++names;
    }
  }
  EXPECT_EQ(complete, ps.result.events.size());
  EXPECT_EQ(names, 2u * (1 + 4));
}

TEST(Report, SvgTimelineHasALanePerRank) {
  PlanSimulation ps = simulated();
  std::string svg;
  llvm::raw_string_ostream os(svg);
  writeSvgTimeline(ps.result, 2, os);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("rank 0"), std::string::npos);
  EXPECT_NE(svg.find("rank 1"), std::string::npos);
  EXPECT_NE(svg.find("idle (bubble)"), std::string::npos);
  EXPECT_NE(svg.find("fill=\"#2261a0\""), std::string::npos); // forward mb 0
  EXPECT_NE(svg.find("fill=\"#22a037\""), std::string::npos); // backward mb 0
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
}

} // namespace
