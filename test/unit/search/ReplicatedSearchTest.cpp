//===- ReplicatedSearchTest.cpp - Per-stage replicas in the search -*- C++ -*-//
//
// The lower bound of replicated layouts never exceeds their simulated time,
// and the search finds a hand-known "3-1" optimum.
//
//===----------------------------------------------------------------------===//

#include "SearchTestUtil.h"

#include "lib/Search/Search.h"

#include <gtest/gtest.h>

using namespace distopt;
using namespace distopt::search;
using distopt::search::test::smallGpt;
using llvm::cantFail;

namespace {

cost::LayerDesc layer(const char *name, double gflops, double params) {
  cost::OpDesc op;
  op.name = name;
  op.signature = name;
  op.cls = cluster::OpClass::MatMul;
  op.dtype = cluster::DType::F16;
  op.fwd = {gflops * 1e9, 1e6, 1e6};
  op.bwdInput = op.fwd;
  op.bwdWeight = op.fwd;
  op.params = params;
  op.savedBytes = 1e5;
  op.tp = cost::TpMode::Replicated;
  cost::LayerDesc l;
  l.name = name;
  l.ops.push_back(op);
  l.boundaryBytes = 1e4;
  return l;
}

/// VGG in miniature: a compute-heavy layer with few parameters, then one
/// with a third of the compute and many parameters.
cost::ModelDesc threeToOne() {
  cost::ModelDesc m;
  m.name = "three-to-one";
  m.layers.push_back(layer("conv", 30, 1e5));
  m.layers.push_back(layer("fc", 10, 1e8));
  return m;
}

TEST(ReplicatedLowerBound, NeverAboveSimulation) {
  cost::ModelDesc model = smallGpt(8, 1024);
  cost::CostModel cm;
  struct Case {
    const char *cluster, *spec;
    unsigned batch;
  };
  const Case cases[] = {
      {"dgx-a100-80gb:2", "replicas=12/4,schedule=1f1b", 48},
      {"dgx-a100-80gb:2", "replicas=3/5/8,schedule=gpipe", 40},
      {"dgx-a100-80gb:2", "replicas=1/7/8,schedule=1f1b,mbs=2", 32},
      {"dgx-a100-80gb:2", "replicas=8/4/4,schedule=pipedream", 64},
      {"dgx-a100-80gb:2", "replicas=2/2/4/8,schedule=pipedream-2bw", 64},
      {"dgx-a100-80gb:1", "replicas=6/2,schedule=pipedream", 6},
      {"dgx-a100-80gb:2", "replicas=10/6,schedule=1f1b,p2p_overlap=0", 60},
      {"mixed-a100-v100:2", "replicas=12/4,schedule=1f1b", 96},
      {"mixed-a100-v100:2", "replicas=4/12,schedule=pipedream", 96},
      // Rounds of lcm(2, 3) = 6: each list syncs once, not once per
      // micro-batch of its share (too few for the steady-state bound).
      {"pcie-v100x4:2", "replicas=2/3,schedule=pipedream", 6},
      {"pcie-v100x4:2", "replicas=2/3,schedule=pipemare", 6},
      {"pcie-v100x4:2", "replicas=3/2,schedule=pipedream-2bw", 6},
      {"pcie-v100x4:1", "replicas=3/1,schedule=1f1b,recompute=full", 24}};
  for (const Case &cs : cases) {
    cluster::Cluster c = cantFail(cluster::resolveCluster(cs.cluster));
    schedule::Plan p = cantFail(schedule::parsePlan(cs.spec));
    sim::SimOptions so;
    so.recordEvents = false;
    auto ps = sim::simulatePlan(model, c, p, cs.batch, cm, so);
    ASSERT_TRUE(static_cast<bool>(ps)) << cs.spec << ": "
                                       << llvm::toString(ps.takeError());
    double lb = iterationLowerBound(ps->costs, ps->plan.schedule,
                                    ps->plan.overlapGradSync);
    EXPECT_LE(lb, ps->result.iterationTime * (1 + 1e-9)) << cs.spec;
    EXPECT_GT(lb, 0) << cs.spec;
    // The synchronous bound is tight enough to prune with.
    if (!schedule::isAsync(ps->plan.schedule)) {
      EXPECT_GT(lb, 0.5 * ps->result.iterationTime) << cs.spec << " (loose)";
    }
  }
}

TEST(ReplicatedSearch, FindsThreeToOne) {
  // Four V100 on PCIe: data parallelism all-reduces fc's 100M parameters
  // over PCIe, two plain stages leave conv's stage 3x busier; three conv
  // replicas and one fc device balance with no fc all-reduce. Micro-batches
  // of 4 (12 of them): with 48 of one sample, the fc device would add each
  // into fc's 100M-parameter gradient sum 47 times, reading the sum each
  // time, and a tp=2 pp=2 plan would win.
  cost::ModelDesc m = threeToOne();
  cluster::Cluster c = cantFail(cluster::resolveCluster("pcie-v100x4:1"));
  cost::CostModel cm;
  SearchOptions o;
  o.globalBatch = 48;
  o.constraints = cantFail(parseConstraints("mbs=4,recompute=none"));
  SearchResult r = cantFail(searchPlan(m, c, cm, o));
  const schedule::Plan &p = r.best.sim.plan;
  EXPECT_EQ(p.replicas, (std::vector<unsigned>{3, 1})) << p.str();
  EXPECT_EQ(p.cuts, (std::vector<unsigned>{1}));
  EXPECT_TRUE(r.stats.exact);
  EXPECT_GT(r.stats.replicated, 0u);
  // It beats every uniform layout the search weighed.
  o.constraints = cantFail(parseConstraints("mbs=4,recompute=none,"
                                            "replicas=uniform"));
  SearchResult u = cantFail(searchPlan(m, c, cm, o));
  EXPECT_FALSE(u.best.sim.plan.replicated());
  EXPECT_EQ(u.stats.replicated, 0u);
  EXPECT_LT(r.best.sim.result.iterationTime,
            u.best.sim.result.iterationTime);
  // Replica layouts have cp = 1: a constraint asking for cp = 2 leaves
  // them out. This model has no attention, so no plan is left (the search
  // used to return the 3/1 layout, without cp).
  o.constraints = cantFail(parseConstraints("mbs=4,recompute=none,cp=2"));
  llvm::Expected<SearchResult> c2 = searchPlan(m, c, cm, o);
  ASSERT_FALSE(static_cast<bool>(c2)) << c2->best.sim.plan.str();
  EXPECT_NE(llvm::toString(c2.takeError()).find("no plan satisfies"),
            std::string::npos);
}

TEST(ReplicatedSearch, ConstraintErrorsAndLargeClusters) {
  auto e = parseConstraints("replicas=2");
  ASSERT_FALSE(static_cast<bool>(e));
  EXPECT_NE(llvm::toString(e.takeError()).find("use replicas=uniform"),
            std::string::npos);
  EXPECT_TRUE(cantFail(parseConstraints("replicas=uniform")).uniformReplicas);
  EXPECT_FALSE(cantFail(parseConstraints("replicas=any")).uniformReplicas);
  // Large clusters keep the uniform search only (its time limits).
  cost::ModelDesc m = smallGpt(8, 1024);
  cluster::Cluster big = cantFail(cluster::resolveCluster("dgx-a100-80gb:8"));
  cost::CostModel cm;
  SearchOptions o;
  o.globalBatch = 128;
  SearchResult r = cantFail(searchPlan(m, big, cm, o));
  EXPECT_EQ(r.stats.replicated, 0u);
}

} // namespace

TEST(ReplicatedSearch, ShardsReplicasOptimizerStateWhenItDoesNotFitOtherwise) {
  // The three-to-one model with a conv layer of 2e8 parameters: its three
  // replicas hold 16 bytes per parameter (fp16 weights and gradients, fp32
  // master weights and Adam moments), 3.2 GB, without ZeRO; ZeRO-1 shards
  // the 12 bytes of fp32 state over them. Under a limit between the two,
  // the 3/1 layout is weighed with zero=1 (and only so), under 1F1B and
  // under 2BW.
  cost::ModelDesc m = threeToOne();
  m.layers[0].ops[0].params = 2e8;
  for (cost::LayerDesc &l : m.layers) { // compute-bound: 3/1 stays best
    cost::OpDesc &op = l.ops[0];
    op.fwd.flops *= 10;
    op.bwdInput = op.bwdWeight = op.fwd;
  }
  cluster::Cluster c = cantFail(cluster::resolveCluster("pcie-v100x4:1"));
  cost::CostModel cm;
  auto peakOf = [&](const std::string &spec) {
    schedule::Plan p = cantFail(schedule::parsePlan(spec));
    sim::SimOptions so;
    so.recordEvents = false;
    auto ps = cantFail(sim::simulatePlan(m, c, p, 48, cm, so));
    return *std::max_element(ps.result.peakMemoryBytes.begin(),
                             ps.result.peakMemoryBytes.end());
  };
  auto replicatedWith = [](const SearchResult &r, unsigned zero) {
    std::vector<const Candidate *> all = {&r.best};
    for (const Candidate &a : r.alternatives)
      all.push_back(&a);
    return llvm::any_of(all, [&](const Candidate *x) {
      return x->sim.plan.replicated() && x->sim.plan.zero == zero;
    });
  };
  // 1F1B, and 2BW (which runs per-stage replicas with ZeRO-1 too).
  for (std::string kind : {"1f1b", "2bw"}) {
    SCOPED_TRACE(kind);
    std::string layout =
        "replicas=3/1,schedule=" + kind + ",mbs=1,recompute=none";
    double whole = peakOf(layout);
    double sharded = peakOf(layout + ",zero=1");
    ASSERT_LT(sharded, whole);
    SearchOptions o;
    o.globalBatch = 48;
    o.memoryLimit = (whole + sharded) / 2;
    o.alternatives = 20;
    o.allowAsync = kind == "2bw";
    std::string constraints = "mbs=1,recompute=none,schedule=" + kind;
    o.constraints = cantFail(parseConstraints(constraints));
    SearchResult r = cantFail(searchPlan(m, c, cm, o));
    EXPECT_TRUE(replicatedWith(r, 1)) << r.best.sim.plan.str();
    EXPECT_FALSE(replicatedWith(r, 0));
    for (const Candidate &a : r.alternatives)
      EXPECT_LE(*std::max_element(a.sim.result.peakMemoryBytes.begin(),
                                  a.sim.result.peakMemoryBytes.end()),
                o.memoryLimit)
          << a.sim.plan.str();
    // Without ZeRO the replicated layouts do not fit.
    o.constraints = cantFail(parseConstraints(constraints + ",zero=0"));
    auto z0 = searchPlan(m, c, cm, o);
    if (z0)
      EXPECT_FALSE(replicatedWith(*z0, 0)) << z0->best.sim.plan.str();
    else
      llvm::consumeError(z0.takeError());
  }
}
