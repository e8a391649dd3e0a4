//===- SearchTest.cpp - Plan search unit tests ------------------*- C++ -*-===//
//
// The exact pieces of the search checked against brute force: the stage
// partition DP, the iteration lower bound (never above the simulated time),
// constraint parsing, and searched plans where the optimum is known.
//
//===----------------------------------------------------------------------===//

#include "SearchTestUtil.h"

#include "lib/Search/Search.h"
#include "lib/Search/SearchImpl.h"

#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <random>

using namespace distopt;
using namespace distopt::search;
using distopt::search::detail::Tables;
using distopt::search::test::smallGpt;
using schedule::ScheduleKind;

namespace {

/// Smallest largest-part cost over all contiguous partitions (brute force).
double bruteForce(const std::vector<double> &w, unsigned parts,
                  const std::vector<double> &edge) {
  unsigned n = w.size();
  double best = std::numeric_limits<double>::infinity();
  std::vector<unsigned> cuts;
  std::function<void(unsigned, unsigned, double)> rec =
      [&](unsigned start, unsigned left, double worst) {
        if (left == 1) {
          double s = edge[start];
          for (unsigned i = start; i < n; ++i)
            s += w[i];
          best = std::min(best, std::max(worst, s));
          return;
        }
        double s = edge[start];
        for (unsigned e = start + 1; e + left - 1 <= n; ++e) {
          s += w[e - 1];
          rec(e, left - 1, std::max(worst, s + edge[e]));
        }
      };
  rec(0, parts, 0);
  return best;
}

TEST(Partition, MatchesBruteForce) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(0.1, 5.0);
  for (unsigned trial = 0; trial < 60; ++trial) {
    unsigned n = 3 + trial % 9, parts = 1 + trial % std::min(n, 5u);
    std::vector<double> w(n), edge(n + 1, 0);
    for (double &x : w)
      x = u(rng);
    // A boundary cost on each inner cut, paid by both adjacent stages.
    for (unsigned i = 1; i < n; ++i)
      edge[i] = u(rng) * 0.3;
    std::vector<double> prefix(n + 1, 0);
    for (unsigned i = 0; i < n; ++i)
      prefix[i + 1] = prefix[i] + w[i];
    auto cost = [&](unsigned, unsigned b, unsigned e) {
      return prefix[e] - prefix[b] + edge[b] + (e < n ? edge[e] : 0);
    };
    auto lower = [&](unsigned, unsigned b, unsigned e) {
      return prefix[e] - prefix[b];
    };
    double best = 0;
    std::vector<unsigned> cuts = partitionLayers(n, parts, cost, lower, &best);
    ASSERT_EQ(cuts.size(), parts - 1);
    EXPECT_NEAR(best, bruteForce(w, parts, edge), 1e-9) << "trial " << trial;
    // The returned cuts achieve the optimum.
    double worst = 0;
    unsigned b = 0;
    for (unsigned j = 0; j < parts; ++j) {
      unsigned e = j + 1 < parts ? cuts[j] : n;
      ASSERT_LT(b, e);
      worst = std::max(worst, cost(j, b, e));
      b = e;
    }
    EXPECT_NEAR(worst, best, 1e-9);
  }
}

/// The stage partition without bounds: every state, every predecessor,
/// scanned from the largest; the first that attains the minimum wins.
static std::vector<unsigned> unboundedPartition(
    unsigned n, unsigned stages,
    const std::function<double(unsigned, unsigned, unsigned)> &cost,
    double &total) {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> best(stages,
                                        std::vector<double>(n + 1, inf));
  std::vector<std::vector<unsigned>> from(stages,
                                          std::vector<unsigned>(n + 1, 0));
  for (unsigned i = 1; i + stages - 1 <= n; ++i)
    best[0][i] = cost(0, 0, i);
  for (unsigned j = 1; j < stages; ++j)
    for (unsigned i = j + 1; i + (stages - 1 - j) <= n; ++i)
      for (unsigned k = i - 1; k >= j; --k) {
        double v = std::max(best[j - 1][k], cost(j, k, i));
        if (v < best[j][i]) {
          best[j][i] = v;
          from[j][i] = k;
        }
        if (k == j)
          break;
      }
  total = best[stages - 1][n];
  if (total == inf)
    return {};
  std::vector<unsigned> cuts(stages - 1);
  for (unsigned j = stages - 1, i = n; j >= 1; --j)
    cuts[j - 1] = i = from[j][i];
  return cuts;
}

TEST(Partition, BoundsKeepTheUnboundedAnswer) {
  // The bounded table must return the unbounded table's cuts, ties
  // included, whether memory makes the cost infinite or is checked on
  // demand (the search's form): integer work (many equal partitions), two
  // device kinds, boundary messages, and memory caps that make the even split,
  // or every split, infeasible.
  std::mt19937 rng(11);
  const double inf = std::numeric_limits<double>::infinity();
  unsigned infeasible = 0, evenUnfit = 0;
  for (unsigned trial = 0; trial < 400; ++trial) {
    unsigned n = 4 + rng() % 60;
    unsigned stages = 2 + rng() % std::min(n - 1, 24u);
    std::vector<double> work[2], edge(n + 1, 0);
    for (auto &w : work) {
      w.assign(n + 1, 0);
      for (unsigned l = 0; l < n; ++l)
        w[l + 1] = w[l] + 1 + rng() % 4 * (&w == &work[1] ? 2 : 1);
    }
    for (unsigned i = 1; i < n; ++i)
      edge[i] = trial % 3 ? rng() % 3 : 0;
    // Memory: stage j holds at most cap[j] layers (none where 0).
    std::vector<unsigned> cap(stages, 0);
    if (trial % 2)
      for (unsigned &c : cap)
        c = rng() % 4 ? 0 : 1 + rng() % (2 * n / stages + 1);
    if (trial % 16 == 5) // too little room for the layers
      for (unsigned &c : cap)
        c = std::max(1u, n / stages - 1);
    auto kind = [&](unsigned j) { return trial % 4 == 3 ? j % 2 : 0u; };
    auto fits = [&](unsigned j, unsigned b, unsigned e) {
      return !cap[j] || e - b <= cap[j];
    };
    auto finite = [&](unsigned j, unsigned b, unsigned e) {
      const std::vector<double> &w = work[kind(j)];
      return w[e] - w[b] + edge[b] + (e < n ? edge[e] : 0);
    };
    std::function<double(unsigned, unsigned, unsigned)> cost =
        [&](unsigned j, unsigned b, unsigned e) {
          return fits(j, b, e) ? finite(j, b, e) : inf;
        };
    auto lower = [&](unsigned j, unsigned b, unsigned e) {
      return work[kind(j)][e] - work[kind(j)][b];
    };
    double want = 0, got = 0;
    std::vector<unsigned> ref = unboundedPartition(n, stages, cost, want);
    std::vector<unsigned> cuts = partitionLayers(n, stages, cost, lower, &got);
    EXPECT_EQ(cuts, ref) << "trial " << trial << " n " << n << " stages "
                         << stages;
    EXPECT_EQ(got, want) << "trial " << trial;
    // The search's form: a finite cost, and the memory check asked only of
    // the stages that would improve a state.
    double lazy = 0;
    EXPECT_EQ(
        detail::partitionLayersWith(n, stages, finite, lower, fits, &lazy), ref)
        << "trial " << trial;
    EXPECT_EQ(lazy, want) << "trial " << trial;
    infeasible += want == inf;
    bool evenFits = true;
    for (unsigned j = 0; j < stages; ++j)
      evenFits &= !cap[j] || cap[j] >= (n + stages - 1) / stages;
    evenUnfit += !evenFits && want < inf;
  }
  // The trials reach the guessed bounds and the fallback.
  EXPECT_GT(infeasible, 0u);
  EXPECT_GT(evenUnfit, 10u);
}

TEST(Partition, InfeasibleStagesAreAvoided) {
  // Stage 0 may hold at most one layer (memory); the rest goes to stage 1.
  std::vector<double> w{1, 1, 1, 1};
  auto cost = [&](unsigned j, unsigned b, unsigned e) {
    if (j == 0 && e - b > 1)
      return std::numeric_limits<double>::infinity();
    return double(e - b);
  };
  auto lower = [](unsigned, unsigned, unsigned) { return 0.0; };
  double best = 0;
  std::vector<unsigned> cuts = partitionLayers(4, 2, cost, lower, &best);
  ASSERT_EQ(cuts.size(), 1u);
  EXPECT_EQ(cuts[0], 1u);
  EXPECT_DOUBLE_EQ(best, 3);
  auto never = [](unsigned, unsigned, unsigned) {
    return std::numeric_limits<double>::infinity();
  };
  EXPECT_TRUE(partitionLayers(4, 2, never, lower, &best).empty());
  EXPECT_EQ(best, std::numeric_limits<double>::infinity());
}

TEST(Tables, ParametersAgreeWithTheCostModel) {
  // The prefix sums count the tied head's table in the last layer; a device
  // holding the embedding too counts it once, as cost::paramSplit does.
  cost::ModelDesc model = smallGpt(3, 256);
  cluster::Cluster c = cantFail(cluster::getPreset("dgx-a100-80gb", 1));
  cost::CostModel cm;
  Tables t(model, c, cm, cost::MemoryConfig{});
  unsigned n = model.layers.size();
  for (unsigned tp : {1u, 2u}) {
    const Tables::Memory &mem = t.memory(tp, cost::Recompute::None);
    ASSERT_EQ(mem.ties.size(), 1u);
    for (unsigned b = 0; b < n; ++b)
      for (unsigned e = b + 1; e <= n; ++e)
        EXPECT_NEAR(mem.paramsOf(cost::LayerRange{b, e}).dense,
                    cost::paramSplit(model, b, e, tp, 1).dense, 1e-6)
            << "layers " << b << ".." << e << " tp " << tp;
    cost::LayerRange ends[] = {{0, 1}, {n - 1, n}};
    EXPECT_NEAR(mem.paramsOf(ends).dense,
                cost::paramSplit(model, ends, tp, 1).dense, 1e-6);
  }
  EXPECT_NEAR(t.memory(1, cost::Recompute::None)
                  .paramsOf(cost::LayerRange{0, n})
                  .dense,
              model.paramCount(), 1e-6);
}

TEST(Tables, TotalWorkIsTheTimeTablesTotal) {
  // The cheap bound's total is the prefix sums' last entry, bit for bit,
  // whether or not the tables were built first.
  cost::ModelDesc model = smallGpt(4, 512);
  cluster::Cluster c = cantFail(cluster::getPreset("dgx-a100-80gb", 2));
  cost::CostModel cm;
  Tables totals(model, c, cm, cost::MemoryConfig{}),
      tables(model, c, cm, cost::MemoryConfig{});
  unsigned n = model.layers.size();
  for (unsigned tp : {1u, 4u})
    for (unsigned cp : {1u, 2u})
      for (unsigned mbs : {1u, 3u})
        for (cost::Recompute rec :
             {cost::Recompute::None, cost::Recompute::Full}) {
          detail::TableKey k;
          k.tp = tp;
          k.cp = cp;
          k.mbs = mbs;
          k.rec = rec;
          k.sp = tp > 1;
          double total = totals.totalWork(0, k);
          const Tables::Times &tt = tables.times(0, k);
          EXPECT_EQ(total, tt.work[n]);
          EXPECT_EQ(tables.totalWork(0, k), tt.work[n]);
          EXPECT_EQ(totals.times(0, k).work[n], total);
          EXPECT_GT(total, 0);
        }
}

TEST(Tables, MemoryTablesFollowTheirKey) {
  // memory() remembers the last tables it returned: asked for another
  // key in between, it gives each key's own (the micro-batch is no part
  // of the key).
  cost::ModelDesc model = smallGpt(4, 512);
  cluster::Cluster c = cantFail(cluster::getPreset("dgx-a100-80gb", 1));
  cost::CostModel cm;
  Tables t(model, c, cm, cost::MemoryConfig{});
  detail::TableKey a, b;
  b.tp = 2;
  const Tables::Memory *ma = &t.memory(a), *mb = &t.memory(b);
  EXPECT_NE(ma, mb);
  EXPECT_EQ(ma->cfg.tp, 1u);
  EXPECT_EQ(mb->cfg.tp, 2u);
  EXPECT_EQ(&t.memory(a), ma);
  a.mbs = 4;
  EXPECT_EQ(&t.memory(a), ma);
  EXPECT_EQ(&t.memory(b), mb);
  b.rec = cost::Recompute::Full;
  EXPECT_NE(&t.memory(b), mb);
  EXPECT_EQ(t.memory(b).cfg.recompute, cost::Recompute::Full);
}

TEST(Tables, BlockCheckpointsAgreeWithTheCostModel) {
  // Blocks of two layers (attention half, MLP half, as the imported graph
  // has them) under full recomputation: the tables' saved activations and
  // working sets of every range, one starting inside a block included,
  // are the cost model's.
  cost::ModelDesc gpt = smallGpt(3, 256), model = gpt;
  model.layers.clear();
  for (unsigned l = 0; l < gpt.layers.size(); ++l) {
    const cost::LayerDesc &layer = gpt.layers[l];
    if (!layer.checkpoint) {
      model.layers.push_back(layer);
      continue;
    }
    cost::LayerDesc first = layer, second = layer;
    unsigned half = layer.ops.size() / 2;
    first.ops.assign(layer.ops.begin(), layer.ops.begin() + half);
    second.ops.assign(layer.ops.begin() + half, layer.ops.end());
    second.continuesBlock = true;
    model.layers.push_back(first);
    model.layers.push_back(second);
  }
  cluster::Cluster c = cantFail(cluster::getPreset("dgx-a100-80gb", 1));
  cost::CostModel cm;
  Tables t(model, c, cm, cost::MemoryConfig{});
  unsigned n = model.layers.size();
  ASSERT_EQ(n, 2 * 3 + 2u);
  for (unsigned tp : {1u, 2u}) {
    const Tables::Memory &mem = t.memory(tp, cost::Recompute::Full);
    cost::MemoryConfig cfg;
    cfg.tp = tp;
    cfg.recompute = cost::Recompute::Full;
    for (unsigned b = 0; b < n; ++b)
      for (unsigned e = b + 1; e <= n; ++e) {
        double act = cost::activationBytes(model, b, e, 1, cfg),
               work = cost::backwardWorkingBytes(model, b, e, 1, cfg);
        EXPECT_NEAR(mem.actOf(b, e), act, 1e-9 * act)
            << "layers " << b << ".." << e << " tp " << tp;
        EXPECT_NEAR(mem.workOf(b, e), work, 1e-9 * work)
            << "layers " << b << ".." << e << " tp " << tp;
      }
    // One checkpoint per block: a range of whole blocks keeps as many
    // inputs as it has blocks; one starting inside a block, one more.
    double one = cost::activationBytes(model, 1, 3, 1, cfg);
    EXPECT_DOUBLE_EQ(mem.actOf(1, 7), 3 * one);
    EXPECT_DOUBLE_EQ(mem.actOf(2, 7), 3 * one);
    EXPECT_DOUBLE_EQ(mem.actOf(2, 5), 2 * one);
  }
}

TEST(Tables, MessagesAgreeWithThePipelineCosts) {
  // The search's message tables and the simulator's stage costs price every
  // boundary alike: under sequence parallelism (its 1/tp where the layer
  // splits by tokens, whole where it has no op of a Megatron region), with
  // and without scatter/gather, under cp, inside a node and across nodes.
  cost::ModelDesc model = smallGpt(6, 1024);
  // Layer 3's split ops are split by channels (a channel-parallel
  // convolution block's, whose sums stay all-reduces): sequence
  // parallelism does not split its output.
  for (cost::OpDesc &op : model.layers[3].ops)
    op.channelSplit = op.tp == cost::TpMode::Split;
  ASSERT_FALSE(cost::sequenceSplits(model.layers[3], 4));
  ASSERT_TRUE(cost::sequenceSplits(model.layers[2], 4));
  cluster::Cluster c = cantFail(cluster::getPreset("dgx-a100-80gb", 2));
  cost::CostModel cm;
  Tables t(model, c, cm, cost::MemoryConfig{});
  unsigned checked = 0, gathered = 0, split = 0;
  for (const char *spec :
       {"tp=4,pp=4,mbs=2,sp=1,stages=2/4/5", "tp=4,pp=4,mbs=2,stages=2/4/5",
        "tp=4,pp=4,mbs=2,sg=0,stages=2/4/5",
        "tp=4,pp=4,mbs=2,sp=1,sg=0,stages=3/4/6",
        "tp=2,cp=2,pp=4,mbs=1,sp=1,stages=2/4/5",
        "dp=2,tp=2,pp=4,mbs=1,schedule=interleaved,chunks=2,sp=1"}) {
    SCOPED_TRACE(spec);
    sim::SimOptions so;
    so.recordEvents = false;
    sim::PlanSimulation ps = cantFail(sim::simulatePlan(
        model, c, cantFail(schedule::parsePlan(spec)), 32, cm, so));
    const schedule::Plan &p = ps.plan;
    unsigned n = model.layers.size();
    for (unsigned vs = 0; vs + 1 < p.numVirtualStages(); ++vs) {
      unsigned from = p.rankOf(vs), to = p.rankOf(vs + 1);
      unsigned last = p.stageLayers(vs, n).second - 1;
      cluster::LinkSpec link =
          c.linkBetween(p.globalRank(from, 0, 0), p.globalRank(to, 0, 0));
      cost::BoundaryMessage msg = cost::boundaryMessage(
          model.layers[last], p.mbs, p.tp, p.cp, p.scatterGather, p.sp);
      // Forward: the activation after layer `last`; backward: its gradient
      // from stage vs + 1 back over the reverse link.
      EXPECT_DOUBLE_EQ(ps.costs.stages[vs].sendNextTime,
                       t.message(last, p.mbs, p.tp, p.scatterGather, link,
                                 schedule::tensorGroup(p, c, to), p.cp, p.sp))
          << "stage " << vs << " after layer " << last;
      EXPECT_DOUBLE_EQ(ps.costs.stages[vs].sendNextBytes, msg.bytes);
      cluster::LinkSpec back =
          c.linkBetween(p.globalRank(to, 0, 0), p.globalRank(from, 0, 0));
      EXPECT_DOUBLE_EQ(ps.costs.stages[vs + 1].sendPrevTime,
                       t.message(last, p.mbs, p.tp, p.scatterGather, back,
                                 schedule::tensorGroup(p, c, from), p.cp, p.sp))
          << "stage " << vs + 1 << " before layer " << last + 1;
      double whole = model.layers[last].boundaryBytes * p.mbs / p.cp;
      gathered += msg.gatherBytes > 0;
      split += msg.bytes < whole;
      ++checked;
    }
  }
  // Every kind of message came up: split and gathered, split and kept
  // split, and whole.
  EXPECT_EQ(checked, 5u * 3 + 7);
  EXPECT_GT(gathered, 0u);
  EXPECT_GT(split, gathered);
  EXPECT_LT(split, checked);
}

TEST(Constraints, Parse) {
  Constraints c = cantFail(parseConstraints(
      "tp<=8,pp>=2,mbs=1|2|4,schedule=1f1b|interleaved,recompute=any,zero<2"));
  EXPECT_EQ(c.tp.max, 8u);
  EXPECT_EQ(c.pp.min, 2u);
  EXPECT_TRUE(c.mbs.allows(2));
  EXPECT_FALSE(c.mbs.allows(3));
  ASSERT_EQ(c.schedules.size(), 2u);
  EXPECT_EQ(c.schedules[1], ScheduleKind::Interleaved);
  EXPECT_TRUE(c.recompute.empty());
  EXPECT_TRUE(c.zero.allows(1));
  EXPECT_FALSE(c.zero.allows(2));
  EXPECT_TRUE(cantFail(parseConstraints("")).schedules.empty());
}

TEST(Constraints, DefaultsHoldWhereTheSpecIsSilent) {
  llvm::StringRef runnable = "cp=1,ep=1,sp=0,zero<=2";
  Constraints c = cantFail(parseConstraints("tp<=4", runnable));
  EXPECT_EQ(c.tp.max, 4u);
  EXPECT_FALSE(c.zero.allows(3));
  EXPECT_FALSE(c.cp.allows(2));
  EXPECT_FALSE(c.sp.allows(1));
  // Naming a key replaces its default, in any spelling of the operator.
  Constraints z3 = cantFail(parseConstraints("ZERO=3", runnable));
  EXPECT_TRUE(z3.zero.allows(3));
  EXPECT_FALSE(z3.zero.allows(2));
  EXPECT_TRUE(cantFail(parseConstraints("cp<=2", runnable)).cp.allows(2));
  EXPECT_FALSE(cantFail(parseConstraints("cp<=2", runnable)).ep.allows(2));
  // A bad default is reported against the defaults, not the user's spec.
  llvm::Expected<Constraints> bad = parseConstraints("tp<=4", "zero<=x");
  ASSERT_FALSE(static_cast<bool>(bad));
  EXPECT_NE(llvm::toString(bad.takeError()).find("'zero<=x'"),
            std::string::npos);
}

TEST(Constraints, Errors) {
  auto msg = [](llvm::StringRef s) {
    llvm::Expected<Constraints> c = parseConstraints(s);
    EXPECT_FALSE(static_cast<bool>(c)) << s.str();
    return c ? std::string() : llvm::toString(c.takeError());
  };
  EXPECT_NE(msg("tp<=2,tp>=4").find("contradictory"), std::string::npos);
  EXPECT_NE(msg("dp=2,dp=4").find("contradictory"), std::string::npos);
  EXPECT_NE(msg("foo=1").find("unknown key 'foo'"), std::string::npos);
  EXPECT_NE(msg("schedule=fast").find("unknown schedule"), std::string::npos);
  EXPECT_NE(msg("recompute=some").find("unknown recompute"),
            std::string::npos);
  EXPECT_NE(msg("tp").find("KEY=VALUE"), std::string::npos);
  EXPECT_NE(msg("tp<=x").find("not a non-negative integer"),
            std::string::npos);
}

/// The lower bound never exceeds the simulated time, for every schedule.
TEST(LowerBound, NeverAboveSimulation) {
  cost::ModelDesc model = smallGpt(8, 1024);
  cluster::Cluster c = cantFail(cluster::getPreset("dgx-a100-80gb", 2));
  struct Case {
    const char *spec;
    unsigned batch;
  };
  const Case cases[] = {
      {"dp=4,tp=1,pp=4,mbs=2,schedule=1f1b", 64},
      {"dp=2,tp=2,pp=4,mbs=1,schedule=gpipe", 32},
      {"dp=2,tp=2,pp=4,mbs=1,schedule=interleaved,chunks=2", 32},
      {"dp=4,tp=2,pp=2,mbs=2,schedule=zb-h1", 64},
      {"dp=8,tp=2,pp=1,mbs=4,schedule=1f1b,zero=1", 64},
      {"dp=4,tp=1,pp=2,mbs=1,schedule=1f1b,zero=2", 32},
      {"dp=2,tp=1,pp=8,mbs=1,schedule=1f1b,p2p_overlap=0,grad_overlap=0",
       32},
      {"dp=4,tp=1,pp=4,mbs=1,schedule=pipedream", 32},
      {"dp=2,tp=4,pp=2,mbs=1,schedule=1f1b,recompute=full,zero=3", 16}};
  for (const Case &cs : cases)
    distopt::search::test::expectBoundBelowSimulation(model, c, cs.spec,
                                                      cs.batch);
}

SearchOptions options(unsigned batch) {
  SearchOptions o;
  o.globalBatch = batch;
  return o;
}

TEST(Search, TinyModelOnOneDeviceIsDataParallelOne) {
  cost::ModelDesc model = smallGpt(2, 256);
  cluster::Cluster c = cantFail(cluster::getPreset("dgx-a100-80gb", 1));
  c.groups[0].devicesPerNode = 1;
  cost::CostModel cm;
  SearchResult r = cantFail(searchPlan(model, c, cm, options(8)));
  EXPECT_EQ(r.best.sim.plan.dp, 1u);
  EXPECT_EQ(r.best.sim.plan.pp, 1u);
  EXPECT_EQ(r.best.sim.plan.tp, 1u);
  // No recompute or ZeRO when everything fits.
  EXPECT_EQ(r.best.sim.plan.recompute, cost::Recompute::None);
  EXPECT_GT(r.stats.candidates, 0u);
}

TEST(Search, SmallModelOnFastNodeIsDataParallel) {
  cost::ModelDesc model = smallGpt(4, 512);
  cluster::Cluster c = cantFail(cluster::getPreset("dgx-a100-80gb", 1));
  cost::CostModel cm;
  SearchResult r = cantFail(searchPlan(model, c, cm, options(64)));
  EXPECT_EQ(r.best.sim.plan.dp, 8u) << r.best.sim.plan.str();
  EXPECT_TRUE(r.stats.exact);
  // Alternatives are sorted and no better than the winner.
  for (const Candidate &a : r.alternatives)
    EXPECT_GE(a.sim.result.iterationTime, r.best.sim.result.iterationTime);
}

TEST(Search, ModelTooLargeForOneDeviceIsSplit) {
  cost::ModelDesc model = smallGpt(8, 1024);
  cluster::Cluster c = cantFail(cluster::getPreset("dgx-a100-80gb", 1));
  cost::CostModel cm;
  SearchOptions o = options(16);
  // ~0.1B parameters = 1.6 GB of static state; allow 1 GB per device.
  o.memoryLimit = 1e9;
  SearchResult r = cantFail(searchPlan(model, c, cm, o));
  const schedule::Plan &p = r.best.sim.plan;
  EXPECT_TRUE(p.pp > 1 || p.tp > 1 || p.zero > 0) << p.str();
  for (double b : r.best.sim.result.peakMemoryBytes)
    EXPECT_LE(b, 1e9);
}

TEST(Search, SearchedBeatsExhaustiveSimulation) {
  // Exhaustive check on a small space: simulate every layout the search
  // enumerates and confirm none beats the search's answer.
  cost::ModelDesc model = smallGpt(6, 768);
  cluster::Cluster c = cantFail(cluster::getPreset("dgx-a100-80gb", 1));
  cost::CostModel cm;
  SearchOptions o = options(32);
  o.constraints = cantFail(parseConstraints("recompute=none,zero=0,mbs<=4"));
  SearchResult r = cantFail(searchPlan(model, c, cm, o));
  double best = r.best.sim.result.iterationTime;
  for (unsigned tp : {1u, 2u, 4u, 8u})
    for (unsigned pp : {1u, 2u, 4u, 8u}) {
      if (tp * pp > 8)
        continue;
      unsigned dp = 8 / (tp * pp);
      for (unsigned mbs : {1u, 2u, 4u})
        for (const char *s : {"1f1b", "gpipe", "zb-h1"}) {
          if (32 % (dp * mbs))
            continue;
          std::string spec = "dp=" + std::to_string(dp) +
                             ",tp=" + std::to_string(tp) +
                             ",pp=" + std::to_string(pp) +
                             ",mbs=" + std::to_string(mbs) + ",schedule=" + s;
          schedule::Plan p = cantFail(schedule::parsePlan(spec));
          auto ps = sim::simulatePlan(model, c, p, 32, cm);
          if (!ps) {
            llvm::consumeError(ps.takeError());
            continue;
          }
          if (!ps->result.fitsMemory)
            continue;
          EXPECT_GE(ps->result.iterationTime, best * (1 - 1e-9))
              << spec << " beats " << r.best.sim.plan.str();
        }
    }
}

TEST(Search, Errors) {
  cost::ModelDesc model = smallGpt(2, 256);
  cost::CostModel cm;
  cluster::Cluster c = cantFail(cluster::getPreset("dgx-a100-80gb", 1));
  auto err = [&](const cluster::Cluster &cl, SearchOptions o) {
    llvm::Expected<SearchResult> r = searchPlan(model, cl, cm, o);
    EXPECT_FALSE(static_cast<bool>(r));
    return r ? std::string() : llvm::toString(r.takeError());
  };
  cluster::Cluster empty = c;
  empty.groups.clear();
  EXPECT_NE(err(empty, options(8)).find("has no devices"), std::string::npos);
  SearchOptions o = options(12);
  // (cp=2 or 4 would make dp divide 12.)
  o.constraints = cantFail(parseConstraints("tp=1,pp=1,cp=1"));
  EXPECT_NE(err(c, o).find("not divisible"), std::string::npos);
  o = options(8);
  o.constraints = cantFail(parseConstraints("tp=3"));
  EXPECT_NE(err(c, o).find("no plan satisfies the constraints"),
            std::string::npos);
  o = options(8);
  o.memoryLimit = 1e6;
  std::string mem = err(c, o);
  EXPECT_NE(mem.find("no plan fits in memory"), std::string::npos) << mem;
  EXPECT_NE(mem.find("per device"), std::string::npos) << mem;
  o = options(8);
  o.constraints = cantFail(parseConstraints("schedule=pipedream"));
  EXPECT_NE(err(c, o).find("--dist-allow-async"), std::string::npos);
}

TEST(Search, AsynchronousSchedulesOnlyAsTheProgramsRunThem) {
  // PipeDream, 2BW and PipeMare run at any tp and with ZeRO-1 and ZeRO-2,
  // but not with ZeRO-3 or cp > 1 (their weight versions are whole per
  // stage): the search weighs what runs and says why it skipped the rest.
  cost::ModelDesc model = smallGpt(4, 1024);
  cost::CostModel cm;
  cluster::Cluster c = cantFail(cluster::getPreset("dgx-a100-80gb", 1));
  for (const char *kind : {"pipedream", "2bw", "pipemare"}) {
    SCOPED_TRACE(kind);
    SearchOptions o = options(16);
    o.allowAsync = true;
    o.constraints = cantFail(
        parseConstraints(std::string("schedule=") + kind + ",tp=2,pp=2"));
    SearchResult r = cantFail(searchPlan(model, c, cm, o));
    EXPECT_EQ(r.best.sim.plan.tp, 2u) << r.best.sim.plan.str();
    for (const auto &cand : r.alternatives) {
      EXPECT_LE(cand.sim.plan.zero, 2u) << cand.sim.plan.str();
      EXPECT_EQ(cand.sim.plan.cp, 1u) << cand.sim.plan.str();
    }
    // ZeRO-1 and ZeRO-2 with dp replicas of each stage: chosen when the
    // plan asks for it, its optimizer state (and gradients) sharded.
    for (unsigned zero : {1u, 2u}) {
      o.constraints =
          cantFail(parseConstraints(std::string("schedule=") + kind +
                                    ",pp=2,dp=4,zero=" + std::to_string(zero)));
      SearchResult z = cantFail(searchPlan(model, c, cm, o));
      EXPECT_EQ(z.best.sim.plan.zero, zero) << z.best.sim.plan.str();
      EXPECT_EQ(z.best.sim.plan.schedule, o.constraints.schedules.front())
          << z.best.sim.plan.str();
    }
    for (const std::string constraint : {",zero=3", ",cp=2"}) {
      o.constraints = cantFail(parseConstraints(std::string("schedule=") +
                                                kind + ",pp=2" + constraint));
      llvm::Expected<SearchResult> bad = searchPlan(model, c, cm, o);
      ASSERT_FALSE(static_cast<bool>(bad)) << constraint;
      std::string msg = llvm::toString(bad.takeError());
      EXPECT_NE(msg.find("pair an asynchronous schedule with ZeRO-3, cp > 1"),
                std::string::npos)
          << msg;
    }
  }
}

TEST(Search, MixedClusterSplitsBySpeed) {
  cluster::Cluster c = cantFail(cluster::getPreset("mixed-a100-v100"));
  cost::ModelDesc model = smallGpt(16, 2048);
  cost::CostModel cm;
  SearchOptions o = options(256);
  o.constraints = cantFail(parseConstraints("pp=2,tp=8"));
  SearchResult r = cantFail(searchPlan(model, c, cm, o));
  const schedule::PipelineCosts &pc = r.best.sim.costs;
  ASSERT_EQ(pc.devices.size(), 2u);
  EXPECT_NE(pc.devices[0].deviceName, pc.devices[1].deviceName);
  // The faster kind gets more layers.
  unsigned l0 = pc.stages[0].layerEnd - pc.stages[0].layerBegin;
  unsigned l1 = pc.stages[1].layerEnd - pc.stages[1].layerBegin;
  bool aFirst = llvm::StringRef(pc.devices[0].deviceName).contains("a100");
  EXPECT_GT(aFirst ? l0 : l1, aFirst ? l1 : l0);
}

TEST(Search, InferenceLatencyAndThroughput) {
  cost::ModelDesc model = smallGpt(8, 1024);
  cluster::Cluster c = cantFail(cluster::getPreset("dgx-a100-80gb", 1));
  cost::CostModel cm;
  SearchOptions o = options(8);
  o.mode = Mode::Infer;
  o.objective = InferObjective::Throughput;
  SearchResult thr = cantFail(searchPlan(model, c, cm, o));
  o.objective = InferObjective::Latency;
  SearchResult lat = cantFail(searchPlan(model, c, cm, o));
  EXPECT_LE(lat.best.latency, thr.best.latency * (1 + 1e-12));
  EXPECT_GE(thr.best.streamThroughput,
            lat.best.streamThroughput * (1 - 1e-12));
}

} // namespace

namespace {

TEST(UnevenBatch, ReplicasSplitBySpeed) {
  cluster::Cluster c = cantFail(cluster::getPreset("mixed-a100-v100", 2));
  schedule::Plan p = cantFail(schedule::parsePlan("dp=16,tp=1,pp=1,uneven=1"));
  p.numMicrobatches = 8;
  // Kind 0 twice as fast as kind 1: 128 micro-batches split 2:1 per replica.
  std::vector<unsigned> share =
      schedule::replicaMicrobatches(p, c, 0, {1.0, 2.0});
  ASSERT_EQ(share.size(), 16u);
  unsigned total = 0;
  for (unsigned k : share)
    total += k;
  EXPECT_EQ(total, 128u);
  EXPECT_GE(share.front(), 10u);
  EXPECT_LE(share.back(), 6u);
  // The slowest replica finishes no later than with an even split.
  double worst = 0;
  for (unsigned d = 0; d < 16; ++d)
    worst = std::max(worst, share[d] * (d < 8 ? 1.0 : 2.0));
  EXPECT_LE(worst, 8 * 2.0);
  EXPECT_NEAR(worst, 11, 1.0);
  p.unevenBatch = false;
  for (unsigned k : schedule::replicaMicrobatches(p, c, 0, {1.0, 2.0}))
    EXPECT_EQ(k, 8u);
}

TEST(UnevenBatch, NeverSlowerInSimulation) {
  cluster::Cluster c = cantFail(cluster::getPreset("mixed-a100-v100", 2));
  cost::GptConfig g;
  g.layers = 4;
  g.hidden = 1024;
  g.heads = 16;
  g.seqLen = 512;
  g.dtype = cluster::DType::F16;
  cost::ModelDesc m = cost::buildGpt(g);
  cost::CostModel cm;
  sim::SimOptions so;
  so.recordEvents = false;
  auto even = cantFail(sim::simulatePlan(
      m, c, cantFail(schedule::parsePlan("dp=16,tp=1,pp=1,mbs=1")), 128, cm,
      so));
  auto uneven = cantFail(sim::simulatePlan(
      m, c, cantFail(schedule::parsePlan("dp=16,tp=1,pp=1,mbs=1,uneven=1")),
      128, cm, so));
  EXPECT_LT(uneven.result.iterationTime, even.result.iterationTime);
  EXPECT_NE(uneven.plan.str().find("uneven=1"), std::string::npos);
}

} // namespace
