//===- ImportedMoeCostTest.cpp - Imported MoE LLaMAs vs buildLlm -*- C++
//-*-===//
//
// Part of DistOpt. dist-modelgen's LLaMA with --experts writes each
// mixture-of-experts FFN as router GEMM, Softmax, TopK, a gather of each
// expert's tokens, batched expert GEMMs over stacked weights and a
// scatter-add (docs/modelgen.md). The layer analysis recognizes that form
// (passes/Planning/Experts.cpp); these tests import such graphs and check
// that the product path prices them as the analytic model
// (cost::buildLlm) prices the same configuration: parameters, the expert
// ops, and simulated iteration time and peak memory of plans with
// expert parallelism, within 2%.
//
//===----------------------------------------------------------------------===//
#include "test/unit/planning/ImportedModel.h"

#include "lib/Cluster/Cluster.h"
#include "lib/Cost/CostModel.h"
#include "lib/Cost/LlmModels.h"
#include "lib/Schedule/Plan.h"
#include "lib/Sim/Simulator.h"
#include "passes/Passes.h"

#include "dialects/Dist/DistDialect.h"
#include "dialects/Dist/DistOps.h"
#include "dialects/Graph/GraphCost.h"
#include "dialects/Graph/GraphOps.h"

using namespace mlir;
using namespace distopt;
using namespace distopt::cost;

namespace {

class ImportedMoe : public unit::ImportedModel {};

using unit::tinyMoe;
/// Its mixture-of-experts layer: the FFN half of block 1.
constexpr int64_t tinyMoeLayer = 4;

/// A Qwen3-30B-A3B-like model (its widths, 128 experts top-8; head width
/// hidden / heads, as dist-modelgen writes it) with a shared expert and a
/// dense first block, shortened to four blocks.
LlmConfig smallMoe() {
  LlmConfig c;
  c.name = "moe";
  c.layers = 4, c.hidden = 2048, c.heads = 32, c.kvHeads = 4;
  c.ffnHidden = 6144, c.seqLen = 4096, c.vocab = 151936;
  c.experts = 128, c.topK = 8, c.expertFfn = 768;
  c.sharedExperts = 1, c.denseLayers = 1;
  return c;
}

struct ExpertFigures {
  double params = 0, flops = 0, a2a = 0;
  unsigned ops = 0;
};

ExpertFigures expertsOf(const ModelDesc &m) {
  ExpertFigures f;
  for (const LayerDesc &l : m.layers)
    for (const OpDesc &op : l.ops) {
      f.a2a += op.epAllToAllBytes;
      if (!op.expert)
        continue;
      f.params += op.params;
      f.flops += op.fwd.flops + op.bwdInput.flops + op.bwdWeight.flops;
      f.ops += op.kernels > 0;
    }
  return f;
}

TEST_F(ImportedMoe, ExpertOpsAndParametersAsBuildLlm) {
  LlmConfig c = smallMoe();
  ModelDesc graph = imported(c), analytic = buildLlm(c);
  EXPECT_DOUBLE_EQ(graph.paramCount(), analytic.paramCount());
  EXPECT_DOUBLE_EQ(graph.paramCount(), llmParamCount(c));
  ExpertFigures g = expertsOf(graph), a = expertsOf(analytic);
  EXPECT_DOUBLE_EQ(g.params, a.params);
  // Top-k of E experts per token: k * s tokens through the experts.
  EXPECT_NEAR(g.flops, a.flops, 1e-9 * a.flops);
  EXPECT_DOUBLE_EQ(g.a2a, a.a2a);
  EXPECT_GT(g.a2a, 0);
  // Up GEMM, activation, down GEMM per MoE block.
  EXPECT_EQ(g.ops, 3 * (c.layers - c.denseLayers));
  EXPECT_EQ(a.ops, g.ops);
  EXPECT_NEAR(graph.trainingFlopsPerSample(), analytic.trainingFlopsPerSample(),
              0.01 * analytic.trainingFlopsPerSample());
}

/// The ops of analytic block \p b from its FFN norm on (norm, router,
/// dispatch, experts, combine, shared experts, residual).
std::vector<OpDesc> analyticFfn(const LayerDesc &b) {
  auto it = llvm::find_if(
      b.ops, [](const OpDesc &op) { return op.name == "ffn_norm"; });
  return std::vector<OpDesc>(it, b.ops.end());
}

/// One FFN half-block of the graph (layer 2 i + 2: dist-modelgen's blocks
/// cut into attention and FFN halves) on one device, per sample.
struct Figures {
  double time = 0, saved = 0, params = 0, a2a = 0, cpGather = 0;
  unsigned wholeSequence = 0;
};
Figures figuresOf(llvm::ArrayRef<OpDesc> ops, const ExecConfig &x) {
  llvm::Expected<cluster::Cluster> c = cluster::getPreset("dgx-h100", 1);
  EXPECT_TRUE(static_cast<bool>(c));
  CostModel cm;
  Figures f;
  for (const OpDesc &op : ops) {
    for (Phase ph :
         {Phase::Forward, Phase::BackwardInput, Phase::BackwardWeight})
      f.time += cm.opTime(op, ph, c->devices[0], x);
    f.saved += op.savedBytes + op.savedReplicatedBytes;
    f.params += op.params;
    f.a2a += op.epAllToAllBytes;
    f.cpGather += op.cpGatherFwdBytes + op.cpGatherBwdBytes;
    f.wholeSequence += op.wholeSequence;
  }
  return f;
}

TEST_F(ImportedMoe, MoeBlocksCostAsBuildLlmUnderEveryLayout) {
  LlmConfig c = smallMoe();
  ModelDesc graph = imported(c), analytic = buildLlm(c);
  // Embedding, attention and FFN halves of each block, the head.
  ASSERT_EQ(graph.layers.size(), 2 * c.layers + 2);
  std::vector<ExecConfig> layouts(6);
  layouts[1].ep.size = 8;
  layouts[2].ep.size = 16, layouts[2].tp.size = 2;
  layouts[3].ep.size = 32, layouts[3].tp.size = 4, layouts[3].mbs = 2;
  layouts[3].expertImbalance = 1.3;
  // Context parallelism: the routing whole, the experts on C/c slots.
  layouts[4].cp.size = 2;
  layouts[5].cp.size = 4, layouts[5].ep.size = 8, layouts[5].mbs = 2;
  for (unsigned b = c.denseLayers; b < c.layers; ++b) {
    std::vector<OpDesc> ops = analyticFfn(analytic.layers[1 + b]);
    std::vector<OpDesc> mine;
    for (const OpDesc &op : graph.layers[2 + 2 * b].ops)
      if (llvm::StringRef(op.name).starts_with("/model.layers."))
        mine.push_back(op); // not the final norm of the last half
    for (const ExecConfig &x : layouts) {
      SCOPED_TRACE(b * 1000 + x.cp.size * 100 + x.ep.size);
      Figures g = figuresOf(mine, x), a = figuresOf(ops, x);
      EXPECT_NEAR(g.time, a.time, 0.02 * a.time);
      EXPECT_NEAR(g.saved, a.saved, 0.02 * a.saved);
      EXPECT_DOUBLE_EQ(g.params, a.params);
      EXPECT_DOUBLE_EQ(g.a2a, a.a2a);
      // The top-k, dispatch and combine, with the same gathers.
      EXPECT_EQ(g.wholeSequence, 3u);
      EXPECT_EQ(a.wholeSequence, 3u);
      EXPECT_DOUBLE_EQ(g.cpGather, a.cpGather);
    }
  }
}

/// The graph with each MoE FFN half-block's ops replaced by buildLlm's:
/// the attention halves, embedding and head stay the graph's (the
/// dense LLaMA parts, which this test is not about), so the two models
/// differ exactly in how their mixture-of-experts blocks are costed.
ModelDesc withAnalyticMoe(ModelDesc graph, const ModelDesc &analytic,
                          const LlmConfig &c) {
  for (unsigned b = c.denseLayers; b < c.layers; ++b) {
    std::vector<OpDesc> ops = analyticFfn(analytic.layers[1 + b]);
    for (const OpDesc &op : graph.layers[2 + 2 * b].ops)
      if (!llvm::StringRef(op.name).starts_with("/model.layers."))
        ops.push_back(op);
    graph.layers[2 + 2 * b].ops = ops;
  }
  return graph;
}

TEST_F(ImportedMoe, PlansWithExpertParallelismAgreeWithin2Percent) {
  LlmConfig c = smallMoe();
  ModelDesc graph = imported(c);
  ModelDesc reference = withAnalyticMoe(graph, buildLlm(c), c);
  EXPECT_DOUBLE_EQ(graph.paramCount(), reference.paramCount());
  llvm::Expected<cluster::Cluster> cl = cluster::getPreset("dgx-h100", 4);
  ASSERT_TRUE(static_cast<bool>(cl)) << llvm::toString(cl.takeError());
  CostModel cm;
  for (const char *spec :
       {"dp=32,ep=8", "dp=16,tp=2,ep=16,sp=1",
        "dp=32,ep=32,recompute=selective", "dp=8,tp=4,ep=8",
        "dp=8,pp=4,ep=8,schedule=1f1b,mbs=1", "dp=16,cp=2,ep=8",
        "dp=8,cp=4,ep=8,recompute=full"}) {
    SCOPED_TRACE(spec);
    schedule::Plan plan = llvm::cantFail(schedule::parsePlan(spec));
    llvm::Expected<sim::PlanSimulation> g =
        sim::simulatePlan(graph, *cl, plan, 256, cm);
    llvm::Expected<sim::PlanSimulation> a =
        sim::simulatePlan(reference, *cl, plan, 256, cm);
    ASSERT_TRUE(static_cast<bool>(g)) << llvm::toString(g.takeError());
    ASSERT_TRUE(static_cast<bool>(a)) << llvm::toString(a.takeError());
    unit::expectWithin2Percent(g->result, a->result);
  }
}

/// Under context parallelism every context rank routes the whole sequence
/// (dist-context-parallel): the simulated plan's traffic holds the
/// all-gathers over the context group of every MoE block, forward and
/// backward, in every micro-batch on every device.
TEST_F(ImportedMoe, SimulatedTrafficHasTheContextGathersOfEveryMoeBlock) {
  LlmConfig c = smallMoe();
  ModelDesc graph = imported(c);
  ModelDesc without = graph;
  for (LayerDesc &l : without.layers)
    for (OpDesc &op : l.ops)
      op.cpGatherFwdBytes = op.cpGatherBwdBytes = 0;
  llvm::Expected<cluster::Cluster> cl = cluster::getPreset("dgx-h100", 1);
  ASSERT_TRUE(static_cast<bool>(cl)) << llvm::toString(cl.takeError());
  CostModel cm;
  schedule::Plan plan =
      llvm::cantFail(schedule::parsePlan("dp=4,cp=2,ep=2,mbs=1"));
  llvm::Expected<sim::PlanSimulation> with =
      sim::simulatePlan(graph, *cl, plan, 8, cm);
  llvm::Expected<sim::PlanSimulation> none =
      sim::simulatePlan(without, *cl, plan, 8, cm);
  ASSERT_TRUE(static_cast<bool>(with)) << llvm::toString(with.takeError());
  ASSERT_TRUE(static_cast<bool>(none)) << llvm::toString(none.takeError());
  const double s = c.seqLen, h = c.hidden, E = c.experts, k = c.topK;
  const double e = cluster::dtypeBytes(c.dtype);
  // Per block and micro-batch each rank sends half of every whole tensor:
  // forward the scores, the block's input and the experts' outputs (the
  // zeros the top-k weights are scattered into and the combine adds into
  // are made from the gathered scores and input); backward the dispatched
  // tokens' and the combine's gradients.
  const double perBlock =
      ((s * E + s * h + k * s * h) + (k * s * h + s * h)) * e / 2;
  const double blocks = c.layers - c.denseLayers, devices = 8, microbatches = 2;
  EXPECT_NEAR(with->result.bytesPerLevel[0] - none->result.bytesPerLevel[0],
              devices * microbatches * blocks * perBlock, 1e-6 * perBlock);
  EXPECT_DOUBLE_EQ(with->result.bytesPerLevel[1],
                   none->result.bytesPerLevel[1]);
  EXPECT_GT(with->result.iterationTime, none->result.iterationTime);
}

using unit::collectivesOf;
using unit::IrCollectives;

/// The programs of dp x tp x ep (dist-tensor-parallel, then
/// dist-expert-parallel) against the cost model's collectives of the same
/// MoE block, with sequence parallelism or without. Each tensor rank
/// exchanges its C/tp capacity slots of every expert over the expert group,
/// as the cost model prices the dispatch and the combine (divided by tp,
/// CostModel::tokenShare); around the experts the slots are gathered over
/// the tensor group and the partial sums reduce-scattered, and the
/// exchanged outputs gathered whole for the combine: the experts' sum is a
/// reduce-scatter and two all-gathers (CostModel::layerTimes). Routing
/// picks each expert's tokens
/// of the whole sequence, so under sp the block's input is gathered over
/// the tensor group (the shared expert's gather) and every tensor rank
/// routes the whole sequence, as CostModel::shareOf prices it; each
/// tensor-parallel sum is an all-gather and a reduce-scatter under sp, an
/// all-reduce (counted as both) without.
class ExpertBlockAsTheProgramsRunIt
    : public ImportedMoe,
      public ::testing::WithParamInterface<bool> {};

TEST_P(ExpertBlockAsTheProgramsRunIt, UnderTensorAndExpertParallelism) {
  const bool sp = GetParam();
  LlmConfig c = tinyMoe();
  ModelDesc graph = imported(c);
  const LayerDesc &costed = graph.layers[tinyMoeLayer];
  ASSERT_TRUE(succeeded(distribute(
      sp ? "dp=2,tp=2,ep=2,mbs=1,sp=1" : "dp=2,tp=2,ep=2,mbs=1", 2)));
  IrCollectives ir =
      collectivesOf(module->lookupSymbol<func::FuncOp>("main"), tinyMoeLayer);

  ExecConfig x;
  x.tp.size = 2, x.ep.size = 2, x.mbs = 1, x.sp = sp;
  ExecConfig noSp = x;
  noSp.sp = false;
  const double e = cluster::dtypeBytes(c.dtype);
  double allToAll = 0, gathered = 0, scattered = 0;
  unsigned gathers = 0, scatters = 0;
  for (const OpDesc &op : costed.ops) {
    allToAll += op.epAllToAllBytes * CostModel::tokenShare(op, x) / e;
    const unsigned opGathers = op.expert ? 2 : 1;
    if (op.tpAllReduceFwdBytes > 0) {
      gathered += opGathers * op.tpAllReduceFwdBytes * x.mbs / e;
      gathers += opGathers;
      scattered += op.tpAllReduceFwdBytes * x.mbs / e, ++scatters;
    }
    // The routing (top-k) runs whole on every tensor rank.
    if (op.wholeSequence && op.tp == TpMode::Replicated) {
      EXPECT_DOUBLE_EQ(CostModel::shareOf(op, x), CostModel::shareOf(op, noSp));
    }
  }
  // Dispatch and combine: each of the 4 experts' 4 slots of 16 features
  // split over the 2 tensor ranks, each way.
  EXPECT_DOUBLE_EQ(ir.allToAll, 2 * 4 * (4 / 2) * 16);
  EXPECT_DOUBLE_EQ(allToAll, ir.allToAll);
  // The shared expert's sum and the experts' (the gather before the
  // experts, the reduce-scatter after), and the combine's gather; under sp
  // the block input's gather is the shared expert's.
  EXPECT_EQ(gathers, 3u);
  EXPECT_EQ(scatters, 2u);
  EXPECT_EQ(ir.gathers, gathers);
  EXPECT_EQ(ir.scatters, scatters);
  EXPECT_DOUBLE_EQ(ir.gathered, gathered);
  EXPECT_DOUBLE_EQ(ir.scattered, scattered);

  // The cost model's tensor-group bytes hold those gathers: each
  // direction's experts' sum sends one all-gather of the 4 x 4 x 16 routed
  // tokens more than the same sum elsewhere (an all-reduce, or a
  // reduce-scatter and an all-gather under sp: the same bytes), half of
  // it from each of the 2 tensor ranks.
  llvm::Expected<cluster::Cluster> cl = cluster::getPreset("dgx-h100", 1);
  ASSERT_TRUE(static_cast<bool>(cl)) << llvm::toString(cl.takeError());
  x.tp.perNode = x.ep.perNode = 2; // one node's links
  for (GroupShape *g : {&x.tp, &x.ep})
    g->intra = g->inter = cl->groups[0].intraNode;
  ExecConfig noEp = x;
  noEp.ep.size = 1;
  CostModel cm;
  double extra = cm.layerTimes(costed, cl->devices[0], x).tpBytes -
                 cm.layerTimes(costed, cl->devices[0], noEp).tpBytes;
  EXPECT_NEAR(extra, 2 * (4 * 4 * 16 * e) / 2, 1e-9);
}

INSTANTIATE_TEST_SUITE_P(ImportedMoe, ExpertBlockAsTheProgramsRunIt,
                         ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool> &info) {
                           return info.param ? "WithSequenceParallelism"
                                             : "WithoutSequenceParallelism";
                         });

/// The programs of dp x cp x tp, with ep = 2 or without ep, with sequence
/// parallelism or without, against the cost model's collectives of the
/// same MoE block. Every context rank
/// routes the whole sequence and takes its C/cp capacity slots of every
/// expert. With ep each of its tensor ranks exchanges its C/(cp tp) of
/// them over the expert group, the bytes the cost model prices
/// (CostModel::tokenShare: mbs / cp, and / tp for the split experts), and
/// the tensor group moves the context rank's slots around the experts (a
/// reduce-scatter and two all-gathers of tpAllReduceFwdBytes / cp);
/// without ep every tensor rank runs its features of every expert on
/// those slots and all-reduces the partial sums (the same bytes, one
/// all-gather fewer). The shared expert all-reduces the rank's tokens, and
/// the context group gathers what every context rank routes and combines
/// whole on every tensor rank (cpGatherFwdBytes). Under sp the block's
/// input is gathered over the tensor group (the context rank's positions)
/// before the routing: the shared expert's gather.
class ExpertBlockUnderContextParallelism
    : public ImportedMoe,
      public ::testing::WithParamInterface<std::tuple<unsigned, bool>> {};

TEST_P(ExpertBlockUnderContextParallelism, WithTensorParallelism) {
  const auto [ep, sp] = GetParam();
  LlmConfig c = tinyMoe();
  ModelDesc graph = imported(c);
  const LayerDesc &costed = graph.layers[tinyMoeLayer];
  std::string plan =
      ep > 1 ? "dp=2,cp=2,tp=2,ep=2,mbs=1" : "dp=2,cp=2,tp=2,mbs=1";
  if (sp)
    plan += ",sp=1";
  ASSERT_TRUE(succeeded(distribute(plan, 2)));
  auto main = module->lookupSymbol<func::FuncOp>("main");
  // Rank t + 2 (c + 2 d): rank 0's tensor, context and expert groups.
  IrCollectives tensor = collectivesOf(main, tinyMoeLayer, {0, 1});
  IrCollectives context = collectivesOf(main, tinyMoeLayer, {0, 2});
  IrCollectives expert = collectivesOf(main, tinyMoeLayer, {0, 4});
  IrCollectives all = collectivesOf(main, tinyMoeLayer);

  ExecConfig x;
  x.cp.size = 2, x.tp.size = 2, x.ep.size = ep, x.mbs = 1, x.sp = sp;
  const double e = cluster::dtypeBytes(c.dtype);
  double allToAll = 0, tpGathered = 0, tpScattered = 0, cpGathered = 0;
  unsigned tpGathers = 0, tpScatters = 0;
  for (const OpDesc &op : costed.ops) {
    if (ep > 1)
      allToAll += op.epAllToAllBytes * CostModel::tokenShare(op, x) / e;
    if (op.tpAllReduceFwdBytes > 0) {
      const unsigned opGathers = op.expert && ep > 1 ? 2 : 1;
      const double bytes = op.tpAllReduceFwdBytes * x.mbs / x.cp.size / e;
      tpGathered += opGathers * bytes, tpGathers += opGathers;
      tpScattered += bytes, ++tpScatters;
    }
    cpGathered += op.cpGatherFwdBytes * x.mbs / e;
  }
  // Dispatch and combine: each of the 4 experts' 4 slots of 16 features,
  // 1 per (context rank, tensor rank), each way.
  EXPECT_DOUBLE_EQ(expert.allToAll, ep > 1 ? 2 * 4 * (4 / (2 * 2)) * 16 : 0);
  EXPECT_DOUBLE_EQ(allToAll, expert.allToAll);
  EXPECT_DOUBLE_EQ(all.allToAll, expert.allToAll);
  // The tensor group: the experts' sum (with ep the gather, the
  // reduce-scatter and the combine's gather) and the shared expert's.
  EXPECT_EQ(tensor.gathers, ep > 1 ? 3u : 2u);
  EXPECT_EQ(tensor.scatters, 2u);
  EXPECT_EQ(tensor.gathers, tpGathers);
  EXPECT_EQ(tensor.scatters, tpScatters);
  EXPECT_DOUBLE_EQ(tensor.gathered, tpGathered);
  EXPECT_DOUBLE_EQ(tensor.scattered, tpScattered);
  // The context group: the router's scores, the block's input and the
  // experts' outputs, gathered whole on every tensor rank.
  EXPECT_EQ(context.scatters, 0u);
  EXPECT_GT(context.gathered, 0);
  EXPECT_DOUBLE_EQ(context.gathered, cpGathered);
  EXPECT_DOUBLE_EQ(all.gathered, tensor.gathered + context.gathered);
  EXPECT_DOUBLE_EQ(all.scattered, tensor.scattered);
}

INSTANTIATE_TEST_SUITE_P(
    ImportedMoe, ExpertBlockUnderContextParallelism,
    ::testing::Combine(::testing::Values(2u, 1u), ::testing::Bool()),
    [](const ::testing::TestParamInfo<std::tuple<unsigned, bool>> &info) {
      return std::string(std::get<0>(info.param) > 1 ? "WithEp" : "WithoutEp") +
             (std::get<1>(info.param) ? "WithSp" : "WithoutSp");
    });

using unit::rankOps;
using unit::RankOps;

/// Ring attention in the programs against the cost model's CP ring
/// (docs/cost-model.md, "CP ring attention"): at cp = 2 each attention is
/// one dist.ring_attention, whose key and value blocks are the rank's
/// share of the K and V bytes the model passes around the ring
/// (OpDesc::cpKvBytes, of the whole sequence and every head per sample,
/// times CostModel::shareOf: 1/cp of the sequence, and under tp = 2 the
/// tensor rank's half of the heads; the ring moves cp - 1 of the cp
/// blocks), and no attention layer gathers anything over the context group
/// any more, with or without tensor parallelism.
TEST_F(ImportedMoe, AttentionUnderContextParallelismRunsTheRing) {
  for (unsigned tp : {1u, 2u}) {
    SCOPED_TRACE("tp = " + std::to_string(tp));
    LlmConfig c = tinyMoe();
    ModelDesc graph = imported(c);
    ASSERT_TRUE(
        succeeded(distribute(tp == 1 ? "cp=2,mbs=1" : "cp=2,tp=2,mbs=1", 1)));
    auto main = module->lookupSymbol<func::FuncOp>("main");
    dist::DistDialect::LayerAttrHelper layerOf(ctx.get());
    auto elements = [](Value v) {
      return double(cast<RankedTensorType>(v.getType()).getNumElements());
    };
    const double e = cluster::dtypeBytes(c.dtype);
    ExecConfig x;
    x.cp.size = 2, x.tp.size = tp, x.mbs = 1;
    unsigned attentions = 0;
    for (auto [index, layer] : llvm::enumerate(graph.layers)) {
      double priced = 0;
      for (const OpDesc &op : layer.ops)
        priced += op.cpKvBytes * CostModel::shareOf(op, x);
      if (priced == 0)
        continue;
      ++attentions;
      double blocks = 0;
      unsigned rings = 0;
      main.walk([&](dist::RingAttentionOp ring) {
        IntegerAttr l = layerOf.getAttr(ring);
        if (!l || l.getInt() != static_cast<int64_t>(index))
          return;
        ++rings;
        blocks += elements(ring.getKey()) + elements(ring.getValue());
      });
      EXPECT_EQ(rings, 1u) << "layer " << index;
      EXPECT_DOUBLE_EQ(blocks * e, priced) << "layer " << index;
      // Over rank 0's context group (0, 1 at tp = 1; 0, 2 at tp = 2).
      const int64_t group[] = {0, static_cast<int64_t>(tp)};
      EXPECT_EQ(collectivesOf(main, index, group).gathers, 0u)
          << "layer " << index;
    }
    EXPECT_EQ(attentions, 2u);
  }
}

/// The weight of \p m when it is one: its shape's rank, else 0.
int64_t weightRank(graph::MatmulOp m) {
  auto w = m.getRhs().getDefiningOp<graph::WeightOp>();
  return w ? cast<RankedTensorType>(w.getType()).getRank() : 0;
}

using unit::expectPricedAsRun;

/// The router GEMM [h, E] under sequence parallelism reads the block's
/// input that dist-tensor-parallel gathers over the tensor group for the
/// routing: every tensor rank runs it on its context rank's whole sequence
/// (OpDesc::sequenceGathered), as the cost model prices it, in time too.
/// Context parallelism still splits it (its scores are gathered after it).
TEST_F(ImportedMoe, RouterUnderSequenceParallelismAsTheProgramsRunIt) {
  llvm::Expected<cluster::Cluster> cl = cluster::getPreset("dgx-h100", 1);
  ASSERT_TRUE(static_cast<bool>(cl)) << llvm::toString(cl.takeError());
  CostModel cm;
  for (auto [plan, cp] :
       {std::pair<const char *, unsigned>{"tp=2,mbs=1,sp=1", 1},
        {"cp=2,tp=2,mbs=1,sp=1", 2},
        {"tp=2,mbs=1", 1}}) {
    SCOPED_TRACE(plan);
    ModelDesc graph = imported(tinyMoe());
    auto router =
        llvm::find_if(graph.layers[tinyMoeLayer].ops, [](const OpDesc &op) {
          return op.cls == OpClass::MatMul && op.keepsPrecision;
        });
    ASSERT_NE(router, graph.layers[tinyMoeLayer].ops.end());
    EXPECT_TRUE(router->sequenceGathered);
    ASSERT_TRUE(succeeded(distribute(plan, 1)));
    // The router: the layer's GEMM with a [hidden, experts] weight.
    RankOps ir = rankOps(
        module->lookupSymbol<func::FuncOp>("main"), tinyMoeLayer,
        [](graph::MatmulOp m) {
          return weightRank(m) == 2 &&
                 cast<RankedTensorType>(m.getRhs().getType()).getDimSize(1) ==
                     4;
        });
    ASSERT_EQ(ir.ops, 1u);
    ExecConfig x;
    x.tp.size = 2, x.cp.size = cp, x.mbs = 1;
    x.sp = llvm::StringRef(plan).contains("sp=1");
    // The tensor rank's program reads the context rank's 8 / c tokens.
    EXPECT_DOUBLE_EQ(ir.fwd.flops, 2.0 * (8 / cp) * 16 * 4);
    // One whole sample on the device but under cp: its time too.
    expectPricedAsRun(*router, x, ir, cp == 1);
    for (Phase ph :
         {Phase::Forward, Phase::BackwardInput, Phase::BackwardWeight}) {
      if (cp == 1) {
        EXPECT_DOUBLE_EQ(
            cm.opTime(*router, ph, cl->devices[0], x),
            cm.opTime(ir.descs.front(), ph, cl->devices[0], ExecConfig()));
      }
    }
  }
}

/// At ep = 1 under context parallelism dist-expert-parallel splits the
/// routed experts over the tensor ranks as at cp = 1: each tensor rank runs
/// its features of every expert on its context rank's C/c capacity slots.
/// The cost model prices them so (OpDesc::tpMode): their FLOPs, their
/// parameters on the device; with sequence parallelism too.
TEST_F(ImportedMoe, ExpertsSplitOverTensorRanksUnderContextParallelismAtEp1) {
  for (bool sp : {false, true}) {
    SCOPED_TRACE(sp);
    ModelDesc graph = imported(tinyMoe());
    std::vector<OpDesc> experts;
    for (const OpDesc &op : graph.layers[tinyMoeLayer].ops)
      if (op.expert && op.params > 0)
        experts.push_back(op); // the gate/up GEMM and the down GEMM
    ASSERT_EQ(experts.size(), 2u);
    ASSERT_TRUE(succeeded(
        distribute(sp ? "cp=2,tp=2,mbs=1,sp=1" : "cp=2,tp=2,mbs=1", 1)));
    func::FuncOp main = module->lookupSymbol<func::FuncOp>("main");
    RankOps ir = rankOps(main, tinyMoeLayer,
                         [](graph::MatmulOp m) { return weightRank(m) == 3; });
    ASSERT_EQ(ir.ops, 3u);
    // Half of each of the 4 experts' weights, on 8 * 2 / 4 / 2 = 2 slots
    // each.
    EXPECT_DOUBLE_EQ(ir.params, 3 * 4 * 16 * 16 / 2);
    EXPECT_DOUBLE_EQ(ir.fwd.flops, 3 * 2.0 * 4 * 2 * 16 * 16 / 2);
    ExecConfig x;
    x.tp.size = 2, x.cp.size = 2, x.mbs = 1, x.sp = sp;
    expectPricedAsRun(experts, x, ir, /*bytes=*/false);
    double params = 0;
    for (const OpDesc &op : experts)
      params += paramSplit(op, 2, 1).total();
    EXPECT_DOUBLE_EQ(params, ir.params);
  }
}

/// A block the recognizer does not know (the combine replaces instead of
/// adding) stays costed op by op: no expert ops, the same parameters.
TEST_F(ImportedMoe, UnknownRoutingStaysDense) {
  LlmConfig c = smallMoe();
  unsigned edited = 0;
  ModelDesc graph = imported(c, [&](onnx::ModelProto &m) {
    for (onnx::NodeProto &n : *m.mutable_graph()->mutable_node())
      for (onnx::AttributeProto &a : *n.mutable_attribute())
        if (n.op_type() == "ScatterElements" && a.name() == "reduction") {
          a.set_s("none");
          ++edited;
        }
  });
  EXPECT_EQ(edited, c.layers - c.denseLayers);
  ExpertFigures g = expertsOf(graph);
  EXPECT_EQ(g.ops, 0u);
  EXPECT_EQ(g.a2a, 0);
  EXPECT_DOUBLE_EQ(graph.paramCount(), llmParamCount(c));
}

TEST_F(ImportedMoe, EpMustDivideTheExperts) {
  LlmConfig c = smallMoe();
  ModelDesc graph = imported(c);
  llvm::Expected<cluster::Cluster> cl = cluster::getPreset("dgx-h100", 4);
  ASSERT_TRUE(static_cast<bool>(cl));
  schedule::Plan plan = llvm::cantFail(schedule::parsePlan("dp=32,ep=32"));
  c.experts = 16; // 16 experts do not split over 32 ranks
  c.topK = 2;
  ModelDesc few = imported(c);
  CostModel cm;
  EXPECT_TRUE(static_cast<bool>(sim::simulatePlan(graph, *cl, plan, 256, cm)));
  llvm::Expected<sim::PlanSimulation> bad =
      sim::simulatePlan(few, *cl, plan, 256, cm);
  ASSERT_FALSE(static_cast<bool>(bad));
  EXPECT_NE(llvm::toString(bad.takeError()).find("does not divide the 16"),
            std::string::npos);
}

} // namespace
