//===- ModernSearchTest.cpp - SP, CP, EP and the new schedules -*- C++ -*-===//

#include "SearchTestUtil.h"

#include "lib/Cost/LlmModels.h"
#include "lib/Search/Search.h"

#include "gtest/gtest.h"

using namespace distopt;
using namespace distopt::search;
using distopt::search::test::smallGpt;
using llvm::cantFail;

namespace {

/// A LLaMA-3-style model of \p layers blocks at sequence \p seq.
cost::ModelDesc llama(unsigned layers, double seq) {
  cost::LlmConfig c = cost::llama3_8b();
  c.layers = layers;
  c.seqLen = seq;
  return cost::buildLlm(c);
}

/// A small Mixtral-style MoE.
cost::ModelDesc moe(unsigned layers) {
  cost::LlmConfig c = cost::mixtral8x7b();
  c.layers = layers;
  c.seqLen = 2048;
  return cost::buildLlm(c);
}

TEST(ModernLowerBound, NeverAboveSimulation) {
  cluster::Cluster c = cantFail(cluster::getPreset("dgx-h100", 2));
  struct Case {
    const char *spec;
    unsigned batch;
    bool moeModel;
  };
  const Case cases[] = {
      {"dp=4,tp=2,pp=2,mbs=1,schedule=zb-h2", 32, false},
      {"dp=2,tp=2,pp=4,mbs=1,schedule=zb-v", 32, false},
      {"dp=2,tp=2,pp=4,mbs=1,schedule=v-half", 32, false},
      {"dp=2,tp=2,pp=4,mbs=1,schedule=v-min,sp=1", 32, false},
      {"dp=2,tp=2,pp=4,mbs=1,schedule=dualpipe-v,zero=1", 32, false},
      {"dp=2,tp=2,cp=2,pp=2,mbs=1,schedule=1f1b,sp=1", 16, false},
      {"dp=2,tp=1,cp=4,pp=2,mbs=1,schedule=zb-v,p2p_overlap=0", 16, false},
      {"dp=8,tp=1,pp=2,ep=8,mbs=1,schedule=dualpipe-v", 32, true},
      {"dp=4,tp=2,pp=2,ep=4,mbs=1,schedule=interleaved,chunks=2,sp=1,"
       "expert_imbalance=1.3",
       32, true}};
  for (const Case &cs : cases)
    test::expectBoundBelowSimulation(cs.moeModel ? moe(8) : llama(8, 4096), c,
                                     cs.spec, cs.batch);
}

TEST(ModernConstraints, ParseAndErrors) {
  Constraints k = cantFail(parseConstraints("cp<=4,ep=1|8,sp=1"));
  EXPECT_TRUE(k.cp.allows(4));
  EXPECT_FALSE(k.cp.allows(8));
  EXPECT_TRUE(k.ep.allows(8));
  EXPECT_FALSE(k.ep.allows(2));
  EXPECT_FALSE(k.sp.allows(0));
  auto err = [](const char *spec) {
    auto r = parseConstraints(spec);
    EXPECT_FALSE(static_cast<bool>(r)) << spec;
    return r ? std::string() : llvm::toString(r.takeError());
  };
  EXPECT_NE(err("sp=2").find("sp is 0"), std::string::npos);
  EXPECT_NE(err("xp=2").find("known: dp, tp, pp, cp, ep, sp"),
            std::string::npos);
  EXPECT_NE(err("schedule=zig").find("zb-v, v-half, v-min, dualpipe-v"),
            std::string::npos);
  Constraints s = cantFail(parseConstraints("schedule=zbv|dualpipev|zb2p"));
  EXPECT_EQ(s.schedules.size(), 3u);
}

TEST(ModernSearch, LongSequencesGetContextParallelism) {
  // 64k tokens of a LLaMA-8B-shaped model on one DGX H100, no TP: a
  // sequence's activations do not fit one GPU, so the plan splits it.
  cost::ModelDesc model = llama(8, 65536);
  cluster::Cluster c = cantFail(cluster::getPreset("dgx-h100", 1));
  cost::CostModel cm;
  SearchOptions o;
  o.globalBatch = 8;
  o.constraints = cantFail(parseConstraints("tp=1,pp=1,recompute=none"));
  SearchResult r = cantFail(searchPlan(model, c, cm, o));
  EXPECT_GT(r.best.sim.plan.cp, 1u) << r.best.sim.plan.str();
  EXPECT_TRUE(r.best.sim.result.fitsMemory);
  // Without CP nothing fits under these constraints (unless the
  // activations go to the node's host memory: offload=act).
  o.constraints =
      cantFail(parseConstraints("tp=1,pp=1,recompute=none,cp=1,offload=none"));
  EXPECT_FALSE(static_cast<bool>(searchPlan(model, c, cm, o)));
  o.constraints = cantFail(parseConstraints("tp=1,pp=1,recompute=none,cp=1"));
  SearchResult off = cantFail(searchPlan(model, c, cm, o));
  EXPECT_TRUE(off.best.sim.plan.offload.activations) << off.best.sim.plan.str();
}

/// A 0/1 constraint: `key`=on and =off set `field` as named, another value
/// is an error that says `use`.
void expectSwitch(const char *on, const char *off, bool Constraints::*field,
                  const char *bad, const char *use) {
  EXPECT_TRUE(cantFail(parseConstraints(on)).*field);
  EXPECT_FALSE(cantFail(parseConstraints(off)).*field);
  auto e = parseConstraints(bad);
  ASSERT_FALSE(static_cast<bool>(e));
  EXPECT_NE(llvm::toString(e.takeError()).find(use), std::string::npos);
}

/// Llama's long sequences (65536 positions, 8 layers, a global batch of 8)
/// on 8 H100s under `constraints`: weighs context parallelism.
SearchResult searchLongContext(const char *constraints) {
  cost::ModelDesc model = llama(8, 65536);
  cluster::Cluster c = cantFail(cluster::getPreset("dgx-h100", 1));
  cost::CostModel cm;
  SearchOptions o;
  o.globalBatch = 8;
  o.constraints = cantFail(parseConstraints(constraints));
  return cantFail(searchPlan(model, c, cm, o));
}

TEST(ModernSearch, CpAloneKeepsContextParallelismWithoutTp) {
  // cp-alone=1: a plan with cp > 1 has tp = 1; tp is still weighed
  // without cp, ZeRO with and without it.
  expectSwitch("cp-alone=1", "cp-alone=0", &Constraints::cpAlone,
               "cp-alone=yes", "use cp-alone=1");
  SearchResult r = searchLongContext("cp>=2,zero<=1,cp-alone=1");
  EXPECT_GT(r.best.sim.plan.cp, 1u) << r.best.sim.plan.str();
  EXPECT_EQ(r.best.sim.plan.tp, 1u) << r.best.sim.plan.str();
  bool zeroWithCp = r.best.sim.plan.zero > 0;
  for (const auto &alt : r.alternatives) {
    EXPECT_EQ(alt.sim.plan.tp, 1u) << alt.sim.plan.str();
    zeroWithCp |= alt.sim.plan.zero > 0;
  }
  // ZeRO is weighed with cp (sharded over dp x cp).
  EXPECT_TRUE(zeroWithCp);
  // Without it the best cp plan of this model uses tp or ZeRO.
  SearchResult free = searchLongContext("cp>=2,zero<=1");
  EXPECT_TRUE(free.best.sim.plan.tp > 1 || free.best.sim.plan.zero > 0)
      << free.best.sim.plan.str();
}

TEST(ModernSearch, CpSpKeepsContextParallelismWithoutSequenceParallelism) {
  // cp-sp=0 (what dist-compile's search asks for: the plans
  // dist-context-parallel's programs run, tp inside cp included): a plan
  // with cp > 1 has sp = 0, tp > 1 still weighed with cp.
  expectSwitch("cp-sp=0", "cp-sp=1", &Constraints::cpNoSp, "cp-sp<=0",
               "use cp-sp=0");
  // Without it sequence parallelism is weighed with cp.
  SearchResult free = searchLongContext("cp>=2,tp>=2");
  bool spWithCp = free.best.sim.plan.sp;
  for (const auto &alt : free.alternatives)
    spWithCp |= alt.sim.plan.sp;
  EXPECT_TRUE(spWithCp) << free.best.sim.plan.str();
  SearchResult r = searchLongContext("cp>=2,tp>=2,cp-sp=0");
  EXPECT_GT(r.best.sim.plan.cp, 1u) << r.best.sim.plan.str();
  EXPECT_GT(r.best.sim.plan.tp, 1u) << r.best.sim.plan.str();
  EXPECT_FALSE(r.best.sim.plan.sp) << r.best.sim.plan.str();
  for (const auto &alt : r.alternatives)
    EXPECT_FALSE(alt.sim.plan.sp) << alt.sim.plan.str();
}

TEST(ModernSearch, MixtureOfExpertsGetsExpertParallelism) {
  // Eight 14k-wide experts per layer on 16 H100s: replicating every expert
  // on every GPU does not fit; the search shards them.
  cost::ModelDesc model = moe(16);
  cluster::Cluster c = cantFail(cluster::getPreset("dgx-h100", 2));
  cost::CostModel cm;
  SearchOptions o;
  o.globalBatch = 64;
  o.constraints = cantFail(parseConstraints("tp=1,pp=1,zero=0"));
  SearchResult r = cantFail(searchPlan(model, c, cm, o));
  EXPECT_GT(r.best.sim.plan.ep, 1u) << r.best.sim.plan.str();
  EXPECT_NE(planLabel(r.best.sim.plan).find(" ep="), std::string::npos);
  // A dense model never gets ep.
  SearchOptions d;
  d.globalBatch = 64;
  SearchResult dense = cantFail(searchPlan(smallGpt(8, 1024), c, cm, d));
  EXPECT_EQ(dense.best.sim.plan.ep, 1u);
}

/// The mixture of experts of 16 layers on 16 H100s, a global batch of 64,
/// under `constraints`, told of \p slots capacity slots per expert (0: not
/// told).
llvm::Expected<SearchResult>
searchMoe(const char *constraints, int64_t slots = 0, bool allowAsync = false) {
  static const cost::ModelDesc model = moe(16);
  static const cluster::Cluster c = cantFail(cluster::getPreset("dgx-h100", 2));
  static const cost::CostModel cm;
  SearchOptions o;
  o.globalBatch = 64;
  o.expertSlots = slots;
  o.allowAsync = allowAsync;
  o.constraints = cantFail(parseConstraints(constraints));
  return searchPlan(model, c, cm, o);
}

/// The best plan of a search and its alternatives.
std::vector<const Candidate *> candidates(const SearchResult &r) {
  std::vector<const Candidate *> all = {&r.best};
  for (const auto &alt : r.alternatives)
    all.push_back(&alt);
  return all;
}

TEST(ModernSearch, EpAloneKeepsExpertParallelismWithoutTpOrCp) {
  // ep-alone=1: a plan with ep > 1 has tp = 1 and cp = 1, ZeRO still
  // weighed with it.
  expectSwitch("ep-alone=1", "ep-alone=0", &Constraints::epAlone, "ep-alone<=1",
               "use ep-alone=1");
  auto search = [&](const char *constraints) {
    return cantFail(searchMoe(constraints));
  };
  SearchResult r = search("pp=1,ep-alone=1");
  EXPECT_GT(r.best.sim.plan.ep, 1u) << r.best.sim.plan.str();
  bool zeroWithEp = false;
  for (const Candidate *p : candidates(r)) {
    const schedule::Plan &plan = p->sim.plan;
    if (plan.ep > 1) {
      EXPECT_EQ(plan.tp, 1u) << plan.str();
      EXPECT_EQ(plan.cp, 1u) << plan.str();
      zeroWithEp |= plan.zero > 0;
    }
  }
  // ZeRO is weighed with ep (the experts' state over the expert data
  // group).
  EXPECT_TRUE(zeroWithEp);
  // ep with tp is weighed without it, and left no plan with it.
  SearchResult free = search("pp=1,ep>=2,tp>=2");
  EXPECT_GT(free.best.sim.plan.ep, 1u) << free.best.sim.plan.str();
  EXPECT_GT(free.best.sim.plan.tp, 1u) << free.best.sim.plan.str();
  auto none = searchMoe("pp=1,ep>=2,tp>=2,ep-alone=1");
  EXPECT_FALSE(static_cast<bool>(none));
  if (!none)
    llvm::consumeError(none.takeError());
}

TEST(ModernSearch, EpRunsKeepsTheExpertPlansTheProgramsRun) {
  // ep-runs=1 (dist-compile's search): ep > 1 with tp > 1 (and sequence
  // parallelism and ZeRO), never under an asynchronous schedule.
  expectSwitch("ep-runs=1", "ep-runs=0", &Constraints::epRuns, "ep-runs<=1",
               "use ep-runs=1");
  auto r = searchMoe("pp=1,ep>=2,tp>=2,ep-runs=1");
  ASSERT_TRUE(static_cast<bool>(r)) << llvm::toString(r.takeError());
  for (const Candidate *p : candidates(*r)) {
    const schedule::Plan &plan = p->sim.plan;
    EXPECT_GT(plan.ep, 1u) << plan.str();
    EXPECT_GT(plan.tp, 1u) << plan.str();
  }
  // dist-partition refuses ep under the asynchronous schedules (the
  // experts' gradients would sync per update): ep-runs leaves them out,
  // with the reason in the error.
  auto async = searchMoe("pp=2,ep>=2,schedule=pipedream-2bw,ep-runs=1", 0,
                         /*allowAsync=*/true);
  ASSERT_FALSE(static_cast<bool>(async)) << async->best.sim.plan.str();
  EXPECT_NE(llvm::toString(async.takeError()).find("(under ep-runs) ep > 1"),
            std::string::npos);
  auto asyncFree =
      searchMoe("pp=2,ep>=2,schedule=pipedream-2bw", 0, /*allowAsync=*/true);
  ASSERT_TRUE(static_cast<bool>(asyncFree))
      << llvm::toString(asyncFree.takeError());
  EXPECT_GT(asyncFree->best.sim.plan.ep, 1u);
  // dist-tensor-parallel gathers the tokens before each MoE block's
  // routing under sp, so ep-runs=1 weighs sp with ep and tp too.
  auto sp = searchMoe("pp=1,ep>=2,tp>=2,sp=1,ep-runs=1");
  ASSERT_TRUE(static_cast<bool>(sp)) << llvm::toString(sp.takeError());
  EXPECT_TRUE(sp->best.sim.plan.sp);
  EXPECT_GT(sp->best.sim.plan.ep, 1u);
  // ZeRO with ep and tp also where other ranks hold the same experts
  // (dp > ep: their state sharded over the dp / ep holders, the runtime's
  // third level of parts), as DeepSeek-V3's dp=64 tp=2 ep=4 ZeRO-1 plan.
  auto zero = searchMoe("pp=1,ep=2,tp>=2,dp>=4,zero=1,ep-runs=1");
  ASSERT_TRUE(static_cast<bool>(zero)) << llvm::toString(zero.takeError());
  for (const Candidate *p : candidates(*zero)) {
    EXPECT_EQ(p->sim.plan.zero, 1u) << p->sim.plan.str();
    EXPECT_GT(p->sim.plan.dp, p->sim.plan.ep) << p->sim.plan.str();
    EXPECT_GT(p->sim.plan.tp, 1u) << p->sim.plan.str();
  }
}

TEST(ModernSearch, EpRunsWeighsExpertParallelismWithContextParallelism) {
  // dist-context-parallel runs the experts on each context rank's capacity
  // slots and dist-expert-parallel exchanges them (each tensor rank its
  // part of them under tp): ep-runs=1 weighs ep with cp, at tp = 1 and
  // with tp.
  for (const char *constraints : {"pp=1,ep>=2,cp>=2,tp=1,ep-runs=1",
                                  "pp=1,ep>=2,cp>=2,tp>=2,ep-runs=1"}) {
    auto r = searchMoe(constraints);
    ASSERT_TRUE(static_cast<bool>(r))
        << constraints << ": " << llvm::toString(r.takeError());
    for (const Candidate *p : candidates(*r)) {
      const schedule::Plan &plan = p->sim.plan;
      EXPECT_GT(plan.ep, 1u) << plan.str();
      EXPECT_GT(plan.cp, 1u) << plan.str();
    }
  }
  auto withTp = searchMoe("pp=1,ep>=2,cp>=2,tp>=2,ep-runs=1");
  ASSERT_TRUE(static_cast<bool>(withTp));
  EXPECT_GT(withTp->best.sim.plan.tp, 1u) << withTp->best.sim.plan.str();
}

TEST(ModernSearch, ExpertSlotsKeepTheSplitsTheProgramsRun) {
  // cp divides the slots, and at ep > 1 so does cp x tp (each tensor rank
  // exchanges its part of its context rank's slots); at ep = 1 tensor
  // parallelism splits the experts' features, not their slots.
  EXPECT_TRUE(expertSlotsSplit(0, 8, 16, 8)); // not known
  EXPECT_TRUE(expertSlotsSplit(6, 2, 1, 2));
  EXPECT_FALSE(expertSlotsSplit(6, 4, 1, 2));
  EXPECT_TRUE(expertSlotsSplit(6, 4, 1, 1));
  EXPECT_FALSE(expertSlotsSplit(6, 1, 4, 1));
  EXPECT_TRUE(expertSlotsSplit(12, 2, 2, 2));
  EXPECT_FALSE(expertSlotsSplit(6, 2, 2, 2));
  EXPECT_TRUE(expertSlotsSplit(6, 2, 2, 1));

  // Nine slots per expert: no tp > 1 with ep > 1 and no cp > 1 at all.
  auto none = searchMoe("pp=1,ep>=2,tp>=2", 9);
  ASSERT_FALSE(static_cast<bool>(none));
  std::string why = llvm::toString(none.takeError());
  EXPECT_NE(why.find("split each expert's 9 capacity slots (top-k x sequence "
                     "/ experts) unevenly"),
            std::string::npos)
      << why;
  auto nine = searchMoe("pp=1,ep>=2", 9);
  ASSERT_TRUE(static_cast<bool>(nine)) << llvm::toString(nine.takeError());
  for (const Candidate *p : candidates(*nine)) {
    const schedule::Plan &plan = p->sim.plan;
    EXPECT_EQ(plan.cp, 1u) << plan.str();
    if (plan.ep > 1) {
      EXPECT_EQ(plan.tp, 1u) << plan.str();
    }
  }
  // Ten: tp = 2 with ep, not 4 or 8.
  auto ten = searchMoe("pp=1,ep>=2,tp>=2", 10);
  ASSERT_TRUE(static_cast<bool>(ten)) << llvm::toString(ten.takeError());
  for (const Candidate *p : candidates(*ten))
    EXPECT_EQ(p->sim.plan.tp, 2u) << p->sim.plan.str();
}

TEST(ModernSearch, SearchedBeatsExhaustiveSimulationOfTheNewSpace) {
  // Every layout of a small space with SP, CP and the new schedules,
  // simulated: none beats the search's answer.
  cost::ModelDesc model = llama(8, 4096);
  cluster::Cluster c = cantFail(cluster::getPreset("dgx-h100", 1));
  cost::CostModel cm;
  SearchOptions o;
  o.globalBatch = 16;
  o.constraints = cantFail(
      parseConstraints("recompute=none,zero=0,mbs=1,chunks<=2,tp<=2"));
  SearchResult r = cantFail(searchPlan(model, c, cm, o));
  EXPECT_TRUE(r.stats.exact);
  EXPECT_LE(r.stats.gap, 0);
  double best = r.best.sim.result.iterationTime;
  unsigned tried = 0;
  for (unsigned tp : {1u, 2u})
    for (unsigned cp : {1u, 2u, 4u, 8u})
      for (unsigned pp : {1u, 2u, 4u, 8u}) {
        if (tp * cp * pp > 8)
          continue;
        unsigned dp = 8 / (tp * cp * pp);
        for (unsigned sp : {0u, 1u})
          for (const char *s : {"1f1b", "zb-h1", "zb-h2", "zb-v", "v-half",
                                "v-min", "dualpipe-v", "interleaved"}) {
            if (sp && tp == 1)
              continue;
            std::string spec =
                "dp=" + std::to_string(dp) + ",tp=" + std::to_string(tp) +
                ",cp=" + std::to_string(cp) + ",pp=" + std::to_string(pp) +
                ",sp=" + std::to_string(sp) + ",mbs=1,schedule=" + s;
            if (std::string(s) == "interleaved")
              spec += ",chunks=2";
            auto p = schedule::parsePlan(spec);
            if (!p) {
              llvm::consumeError(p.takeError());
              continue;
            }
            auto ps = sim::simulatePlan(model, c, *p, 16, cm);
            if (!ps) {
              llvm::consumeError(ps.takeError());
              continue;
            }
            if (!ps->result.fitsMemory)
              continue;
            ++tried;
            EXPECT_GE(ps->result.iterationTime, best * (1 - 1e-9))
                << spec << " beats " << r.best.sim.plan.str();
          }
      }
  EXPECT_GT(tried, 20u);
}

} // namespace
