//===- PinsTest.cpp - Layers pinned to a device kind ------------*- C++ -*-===//
//
// `pin=FIRST-LAST@KIND` (edge-cloud split training): parsing, every stage
// that holds a pinned layer runs on that kind alone in the winner and the
// runners-up, and the bytes the report says cross the edge link.
//
//===----------------------------------------------------------------------===//

#include "lib/Search/Search.h"

#include <gtest/gtest.h>

using namespace distopt;
using namespace distopt::search;
using llvm::cantFail;

namespace {

/// A CNN in miniature: \p n layers of equal compute whose output halves
/// every other layer (32 KiB per sample first).
cost::ModelDesc shrinkingCnn(unsigned n) {
  cost::ModelDesc m;
  m.name = "shrinking";
  for (unsigned i = 0; i < n; ++i) {
    cost::OpDesc op;
    op.name = op.signature = "conv" + std::to_string(i);
    op.cls = cluster::OpClass::Conv;
    op.dtype = cluster::DType::F32;
    op.fwd = {2e8, 1e6, 1e6};
    op.bwdInput = op.fwd;
    op.bwdWeight = op.fwd;
    op.params = 1e5;
    op.savedBytes = 1e5;
    op.tp = cost::TpMode::Replicated;
    cost::LayerDesc l;
    l.name = op.name;
    l.ops.push_back(op);
    l.boundaryBytes = i + 1 < n ? 32768.0 / (1u << (i / 2)) : 0;
    m.layers.push_back(std::move(l));
  }
  return m;
}

/// Search options for a global batch and constraints, without the
/// device-count advice.
SearchOptions optionsFor(unsigned batch, llvm::StringRef spec) {
  SearchOptions o;
  o.globalBatch = batch;
  o.adviseDevices = false;
  o.constraints = cantFail(parseConstraints(spec));
  return o;
}

std::string errorOf(llvm::StringRef spec) {
  llvm::Expected<Constraints> c = parseConstraints(spec);
  EXPECT_FALSE(static_cast<bool>(c)) << spec.str();
  return c ? "" : llvm::toString(c.takeError());
}

TEST(Pins, Parse) {
  Constraints c = cantFail(parseConstraints("pin=0-3@phone-soc,pp=2,pin=5@x"));
  ASSERT_EQ(c.pins.size(), 2u);
  EXPECT_EQ(c.pins[0].first, 0u);
  EXPECT_EQ(c.pins[0].last, 3u);
  EXPECT_EQ(c.pins[0].kind, "phone-soc");
  EXPECT_EQ(c.pins[1].first, 5u);
  EXPECT_EQ(c.pins[1].last, 5u);
  EXPECT_TRUE(c.pp.allows(2) && !c.pp.allows(3));
  EXPECT_NE(errorOf("pin=3-1@x").find("runs backwards"), std::string::npos);
  EXPECT_NE(errorOf("pin=0-1").find("no device kind after '@'"),
            std::string::npos);
  EXPECT_NE(errorOf("pin=0-1@").find("no device kind"), std::string::npos);
  EXPECT_NE(errorOf("pin>=1@x").find("pin takes '='"), std::string::npos);
  EXPECT_NE(errorOf("pin=-1@x").find("not a layer or a range"),
            std::string::npos);
}

/// Device kind of every stage holding layer \p l of \p p.
std::vector<std::string> kindsHolding(const schedule::Plan &p,
                                      const cluster::Cluster &c, unsigned l,
                                      unsigned n) {
  std::vector<std::string> kinds;
  for (unsigned vs = 0; vs < p.numVirtualStages(); ++vs) {
    auto [b, e] = p.stageLayers(vs, n);
    if (l < b || l >= e)
      continue;
    unsigned s = p.pipelineStage(vs);
    for (unsigned d : p.stageDevices(s))
      kinds.push_back(c.deviceOf(d).name);
  }
  return kinds;
}

TEST(Pins, EveryPlanKeepsThem) {
  // Three phones and the cloud server: 4 devices, so layouts with several
  // phone replicas (dp, per-stage replicas) are weighed too.
  cluster::Cluster c = cantFail(cluster::getPreset("edge-cloud-wifi", 4));
  cost::ModelDesc model = shrinkingCnn(8);
  cost::CostModel cm;
  SearchOptions o = optionsFor(24, "pin=0-2@phone-soc");
  o.alternatives = 5;
  SearchResult r = cantFail(searchPlan(model, c, cm, o));
  std::vector<const Candidate *> all{&r.best};
  for (const Candidate &a : r.alternatives)
    all.push_back(&a);
  for (const Candidate *cand : all)
    for (unsigned l = 0; l <= 2; ++l)
      for (const std::string &k :
           kindsHolding(cand->sim.plan, c, l, model.layers.size()))
        EXPECT_EQ(k, "phone-soc") << cand->sim.plan.str() << " layer " << l;
  EXPECT_GT(r.stats.pinPruned, 0u);
  ASSERT_EQ(r.pinned.size(), 1u);
  EXPECT_EQ(r.pinned[0].kind, "phone-soc");
  ASSERT_FALSE(r.pinned[0].layers.empty());
  EXPECT_EQ(r.pinned[0].layers[0].first, 0u);
  EXPECT_GE(r.pinned[0].layers[0].second, 2u);
}

TEST(Pins, LinkBytesOfOneSplit) {
  cluster::Cluster c = cantFail(cluster::getPreset("edge-cloud-lte"));
  cost::ModelDesc model = shrinkingCnn(8);
  cost::CostModel cm;
  SearchOptions o = optionsFor(16, "pin=0-0@phone-soc,chunks=1");
  SearchResult r = cantFail(searchPlan(model, c, cm, o));
  const schedule::Plan &p = r.best.sim.plan;
  ASSERT_EQ(p.pp, 2u);
  ASSERT_EQ(r.pinned.size(), 1u);
  unsigned split = p.cuts.at(0);
  EXPECT_EQ(r.pinned[0].layers.front().second, split - 1);
  // Each sample's activation goes up and its gradient comes back.
  EXPECT_DOUBLE_EQ(r.pinned[0].linkBytes,
                   2 * model.layers[split - 1].boundaryBytes * o.globalBatch);
  EXPECT_GT(r.pinned[0].peakMemory, 0);
  EXPECT_DOUBLE_EQ(r.pinned[0].memoryCapacity, 8e9);
}

TEST(Pins, ResolveErrors) {
  cluster::Cluster c = cantFail(cluster::getPreset("edge-cloud-wifi"));
  cost::ModelDesc model = shrinkingCnn(4);
  cost::CostModel cm;
  auto fails = [&](llvm::StringRef spec, llvm::StringRef want) {
    SearchOptions o = optionsFor(8, spec);
    llvm::Expected<SearchResult> r = searchPlan(model, c, cm, o);
    ASSERT_FALSE(static_cast<bool>(r)) << spec.str();
    std::string msg = llvm::toString(r.takeError());
    EXPECT_NE(msg.find(want.str()), std::string::npos) << msg;
  };
  fails("pin=0-4@phone-soc", "has 4 layers (0-3)");
  fails("pin=0@v100", "has no device kind 'v100'; its kinds are phone-soc, "
                      "a100-80gb");
  fails("pin=0-1@phone-soc,pin=1@a100-80gb", "layer 1 is pinned to both");
  fails("pin=0@a100-80gb", "no plan keeps layers 0-0 on a100-80gb");
}

} // namespace
