//===- ImportedMlaCostTest.cpp - Imported latent attention vs buildLlm ----===//
//
// Part of DistOpt. dist-modelgen's LLaMA with --kv-lora-rank writes
// DeepSeek's multi-head latent attention as Hugging Face's
// DeepseekV3Attention exports it: low-rank query and key/value
// projections with their RMSNorms, splits of the heads into the parts
// without and with rotary embedding, one rotary key expanded to every head,
// concatenated Q and K (docs/modelgen.md). These tests import such graphs
// and check that the product path prices them as the analytic model
// (cost::buildLlm) prices the same configuration: the down-projections
// replicated over tensor parallelism, the up- and output projections split
// by heads, one RoPE kernel, fused attention with Q/K heads of
// nope + rope and V heads of their own width; simulated iteration time and
// peak memory of plans with data, tensor, sequence, pipeline and context
// parallelism, recomputation and experts, within 2% (issue 11); and that
// the programs dist-tensor-parallel writes at tp = 2, with sequence
// parallelism and without, run the collectives and the down-projections'
// FLOPs the cost model prices.
//
//===----------------------------------------------------------------------===//
#include "test/unit/planning/ImportedModel.h"

using namespace mlir;
using namespace distopt;
using namespace distopt::cost;

namespace {

class ImportedMla : public unit::ImportedModel {};

/// DeepSeek-V3's widths (128 heads, query rank 1536, key/value rank 512,
/// heads of 128 + 64 and 128) in four dense blocks.
LlmConfig mlaShaped() {
  LlmConfig c = deepseekV3();
  c.layers = 4;
  c.experts = c.topK = c.sharedExperts = c.denseLayers = 0;
  c.expertFfn = 0;
  return c;
}

/// DeepSeek-V3's widths in four blocks, the first dense, the others with
/// 256 routed experts (top 8) and the shared one.
LlmConfig mlaMoeShaped() {
  LlmConfig c = deepseekV3();
  c.layers = 4, c.denseLayers = 1;
  return c;
}

/// A small latent attention: 2 blocks of hidden 32, 4 heads of 8 + 4 for
/// queries and keys and 6 for values, query rank 8, key/value rank 12
/// (latents of 8 + 12 + 4 features a token, fewer than the hidden 32), 8
/// tokens.
LlmConfig tinyMla() {
  LlmConfig c;
  c.name = "tiny-mla";
  c.layers = 2, c.hidden = 32, c.heads = 4, c.kvHeads = 4;
  c.ffnHidden = 64, c.seqLen = 8, c.vocab = 64;
  c.qLoraRank = 8, c.kvLoraRank = 12;
  c.qkNopeDim = 8, c.qkRopeDim = 4, c.vHeadDim = 6;
  return c;
}
/// Its first attention half: layer 1 (after the embedding).
constexpr int64_t tinyMlaAttention = 1;

TEST_F(ImportedMla, ParametersAsLlmParamCount) {
  // DeepSeek-V3 itself: dist-modelgen's count is llmParamCount's.
  modelgen::ModelOptions o = unit::llamaOptions(deepseekV3());
  llvm::Expected<modelgen::GeneratedModel> ds =
      modelgen::generateModel(o, /*inferShapes=*/false);
  ASSERT_TRUE(static_cast<bool>(ds)) << llvm::toString(ds.takeError());
  EXPECT_EQ(double(ds->parameters), llmParamCount(deepseekV3()));
  EXPECT_EQ(ds->parameters, 671026404352u);
  LlmConfig lite = mlaShaped();
  lite.qLoraRank = 0;
  for (const LlmConfig &c : {mlaShaped(), mlaMoeShaped(), lite}) {
    ModelDesc graph = imported(c);
    EXPECT_DOUBLE_EQ(graph.paramCount(), llmParamCount(c));
  }
}

TEST_F(ImportedMla, DenseMlaPlansAgreeWithin2Percent) {
  LlmConfig c = mlaShaped();
  unit::expectPlansAgree(imported(c), c, 2, unit::kTwoNodePlans, 64);
}

/// Without a query rank (DeepSeek-V2-Lite's form): one q_proj,
/// column-parallel, reading the norm output with kv_a_proj_with_mqa.
TEST_F(ImportedMla, NoQueryRankPlansAgreeWithin2Percent) {
  LlmConfig c = mlaShaped();
  c.qLoraRank = 0;
  unit::expectPlansAgree(
      imported(c), c, 1,
      {"dp=8", "dp=2,tp=4", "dp=2,tp=4,sp=1,recompute=full", "dp=4,cp=2"}, 32);
}

TEST_F(ImportedMla, MoeMlaPlansAgreeWithin2Percent) {
  LlmConfig c = mlaMoeShaped();
  unit::expectPlansAgree(imported(c), c, 4,
                         {"dp=32,ep=8", "dp=16,tp=2,ep=16,sp=1",
                          "dp=32,ep=32,recompute=selective", "dp=8,tp=4,ep=8",
                          "dp=8,pp=4,ep=8,schedule=1f1b,mbs=1"},
                         256);
}

/// The attention half of a block op by op: the down-projections replicated
/// over TP (no all-reduce; kv_a_proj_with_mqa keeps no second copy of the
/// norm output), the up-projections column-parallel keeping their inputs
/// whole with one all-reduce of each input's gradient, one RoPE kernel
/// (its FLOPs on each rank's heads), the fused attention with Q/K heads of
/// 192 and V heads of 128 keeping Q and K (buildLlm: the RoPE op does), V
/// and the log-sum-exp.
TEST_F(ImportedMla, AttentionOpsAsBuildLlm) {
  LlmConfig c = mlaShaped();
  c.layers = 1;
  ModelDesc graph = imported(c), analytic = buildLlm(c);
  auto op = [&](llvm::StringRef name) -> const OpDesc & {
    return unit::opNamed(analytic.layers[1], name);
  };
  std::vector<const OpDesc *> gemms, attention, elementwise;
  double flops = 0, saved = 0;
  for (const OpDesc &o : graph.layers[1].ops) {
    flops += o.fwd.flops;
    saved += o.savedBytes + o.savedReplicatedBytes;
    if (o.kernels == 0)
      continue;
    if (o.cls == cluster::OpClass::MatMul && o.params > 0)
      gemms.push_back(&o);
    if (o.cls == cluster::OpClass::Attention)
      attention.push_back(&o);
    if (o.cls == cluster::OpClass::Elementwise)
      elementwise.push_back(&o);
  }
  // q_a, q_b, kv_a, kv_b, o in the graph's order.
  ASSERT_EQ(gemms.size(), 5u);
  ASSERT_EQ(attention.size(), 1u);
  const OpDesc *qa = gemms[0], *qb = gemms[1], *kva = gemms[2], *kvb = gemms[3],
               *o = gemms[4];
  for (auto [g, name] : {std::pair{qa, "q_down"}, std::pair{kva, "kv_down"},
                         std::pair{qb, "q_up"}, std::pair{kvb, "kv_up"},
                         std::pair{o, "o_proj"}}) {
    SCOPED_TRACE(name);
    const OpDesc &a = op(name);
    EXPECT_EQ(g->tp, a.tp);
    EXPECT_DOUBLE_EQ(g->fwd.flops, a.fwd.flops);
    EXPECT_DOUBLE_EQ(g->savedBytes, a.savedBytes);
    EXPECT_DOUBLE_EQ(g->savedReplicatedBytes, a.savedReplicatedBytes);
    EXPECT_DOUBLE_EQ(g->tpAllReduceBwdBytes, a.tpAllReduceBwdBytes);
    EXPECT_DOUBLE_EQ(g->tpAllReduceFwdBytes, a.tpAllReduceFwdBytes);
  }
  const OpDesc &attn = op("attention");
  EXPECT_EQ(attention[0]->signature, attn.signature);
  EXPECT_DOUBLE_EQ(attention[0]->fwd.flops, attn.fwd.flops);
  EXPECT_DOUBLE_EQ(attention[0]->cpKvBytes, attn.cpKvBytes);
  // RoPE and the residual add: the only elementwise kernels, neither
  // gathering over TP. The RoPE kernel's backward sums the gradient of the
  // one rotary key over TP (each rank expands it to its own heads), as
  // buildLlm's RoPE does.
  const double s = c.seqLen, a = c.heads, n = c.qkNopeDim, r = c.qkRopeDim,
               d = c.vHeadDim, e = 2;
  ASSERT_EQ(elementwise.size(), 2u);
  for (const OpDesc *e : elementwise)
    EXPECT_EQ(e->tpAllReduceFwdBytes, 0);
  EXPECT_DOUBLE_EQ(elementwise[0]->tpAllReduceBwdBytes, s * r * e);
  EXPECT_DOUBLE_EQ(op("rope").tpAllReduceBwdBytes, s * r * e);
  EXPECT_EQ(elementwise[1]->tpAllReduceBwdBytes, 0);
  EXPECT_EQ(elementwise[0]->tp, op("rope").tp);
  // The RoPE kernel reads q_b_proj's and kv_b_proj's outputs whole and the
  // shared rotary key, and writes Q and K (buildLlm's reads Q and K).
  EXPECT_DOUBLE_EQ(elementwise[0]->fwd.bytesRead,
                   (s * a * (2 * n + r + d) + s * r) * e);
  EXPECT_DOUBLE_EQ(elementwise[0]->fwd.bytesWritten, op("rope").fwd.bytesWritten);
  // Everything the half keeps, as buildLlm's attention ops and norm.
  double aSaved = 0;
  for (const OpDesc &a : analytic.layers[1].ops) {
    if (a.name == "residual1")
      break;
    aSaved += a.savedBytes + a.savedReplicatedBytes;
  }
  EXPECT_NEAR(saved, aSaved, 0.01 * aSaved);
  // The FLOPs of the half (buildLlm's RoPE counts 3 per element of Q and
  // K, the graph's ops their own few).
  double aFlops = 0;
  for (const OpDesc &a : analytic.layers[1].ops) {
    aFlops += a.fwd.flops;
    if (a.name == "residual1")
      break;
  }
  EXPECT_NEAR(flops, aFlops, 0.01 * aFlops);
}

/// The programs of tp = 2 (dist-tensor-parallel; inside cp = 2 after
/// dist-context-parallel) against the cost model's collectives and FLOPs
/// of the same attention half, with sequence parallelism or without. The
/// cost model prices o_proj's sum (tpAllReduceFwdBytes, s·h) and the sums
/// of the gradients of the up-projections' inputs and the rotary key
/// (tpAllReduceBwdBytes, s·(Q + C + R)), of the context rank's s/c tokens;
/// each is an all-reduce, or under sp a reduce-scatter and an all-gather.
/// Under sp the programs run the down-projections and their norms on the
/// rank's tokens and gather the three latents (the normed query and
/// key/value latents, the rotated key) where the column-parallel
/// up-projections and the heads' expansion read them through their
/// copies: the forward gathers s·(Q + C + R) and reduce-scatters o_proj's
/// s·h, the backward reduce-scatters the latents' gradients and gathers
/// o_proj's. Without sp the latents are whole on every tensor rank and
/// their copies all-reduce their gradients. Without a query rank the
/// column-parallel q_proj reads the block's norm output: under sp it is
/// gathered (s·h) in place of the query latent. Under sp the weights the
/// rank's tokens read (the block's norm, the down-projections and their
/// norms) have their gradients all-reduced over the group in each
/// micro-batch's backward, h·(Q + C + R) + h + Q + C elements, which the
/// cost model prices in the layer's weight-gradient phase and traffic.
class MlaBlockAsTheProgramsRunIt
    : public ImportedMla,
      public ::testing::WithParamInterface<std::tuple<unsigned, bool, bool>> {};

TEST_P(MlaBlockAsTheProgramsRunIt, UnderTensorParallelism) {
  const auto [cp, sp, queryRank] = GetParam();
  LlmConfig c = tinyMla();
  if (!queryRank)
    c.qLoraRank = 0;
  ModelDesc graph = imported(c);
  const LayerDesc &costed = graph.layers[tinyMlaAttention];
  std::string plan = cp > 1 ? "cp=2,tp=2,mbs=1" : "tp=2,mbs=1";
  if (sp)
    plan += ",sp=1";
  ASSERT_TRUE(succeeded(distribute(plan, 1)));
  auto main = module->lookupSymbol<func::FuncOp>("main");
  // Rank 0's tensor group (rank t + 2 c).
  unit::IrCollectives ir = unit::collectivesOf(main, tinyMlaAttention, {0, 1});

  ExecConfig x;
  x.tp.size = 2, x.cp.size = cp, x.mbs = 1, x.sp = sp;
  const double e = cluster::dtypeBytes(c.dtype);
  const double s = c.seqLen, h = c.hidden, q = c.qLoraRank, kv = c.kvLoraRank,
               r = c.qkRopeDim;
  // What the query's up-projection (or q_proj) reads.
  const double qIn = queryRank ? q : h;
  double fwdSums = 0, bwdSums = 0;
  std::vector<OpDesc> down;
  for (const OpDesc &op : costed.ops) {
    fwdSums += op.tpAllReduceFwdBytes * x.mbs / cp / e;
    bwdSums += op.tpAllReduceBwdBytes * x.mbs / cp / e;
    if (op.cls == cluster::OpClass::MatMul && op.params > 0 &&
        op.tp == TpMode::Replicated)
      down.push_back(op);
  }
  EXPECT_DOUBLE_EQ(fwdSums, s / cp * h);
  EXPECT_DOUBLE_EQ(bwdSums, s / cp * (qIn + kv + r));
  // The latents read through copies: their gradients summed over the group
  // (under sp by the reduce-scatter the copy and the gather fold into).
  EXPECT_DOUBLE_EQ(ir.copied, bwdSums);
  if (sp) {
    EXPECT_EQ(ir.gathers, 3u);
    EXPECT_EQ(ir.scatters, 1u);
    EXPECT_DOUBLE_EQ(ir.gathered, bwdSums);
    EXPECT_DOUBLE_EQ(ir.scattered, fwdSums);
    // The weights the rank's tokens read (the block's norm, the
    // down-projections and their norms): each rank's gradient is its
    // tokens' part, summed over the group in each micro-batch's backward.
    EXPECT_DOUBLE_EQ(ir.weightsCopied, h + h * q + q + h * (kv + r) + kv);
  } else {
    EXPECT_EQ(ir.gathers, 1u); // o_proj's all-reduce
    EXPECT_DOUBLE_EQ(ir.gathered, fwdSums);
    EXPECT_DOUBLE_EQ(ir.scattered, fwdSums);
    EXPECT_EQ(ir.weightsCopied, 0);
  }

  // The price of the layer's collectives on a DGX H100's NVLink. The
  // weight-gradient sums: one all-reduce over the tensor group of what
  // the programs read through copies, in the backward's weight-gradient
  // phase. The bytes each rank sends per micro-batch, as the IR's
  // collectives send them on a ring of two (each gather, reduce-scatter
  // and its backward mirror half the whole tensor; an all-reduce the
  // whole; under sp the activations' copies fold into reduce-scatters).
  EXPECT_DOUBLE_EQ(CostModel::weightGradSumBytes(costed, x),
                   ir.weightsCopied * e);
  cluster::Cluster h100 = llvm::cantFail(cluster::getPreset("dgx-h100", 1));
  x.tp.perNode = 2, x.cp.perNode = cp;
  x.tp.intra = x.cp.intra = h100.linkBetween(0, 1);
  CostModel cm;
  RangeTimes priced = cm.layerTimes(costed, h100.devices[0], x);
  const double sent =
      sp ? ir.gathered + ir.scattered + ir.weightsCopied
         : (ir.gathered + ir.scattered) / 2 + ir.copied + ir.weightsCopied;
  EXPECT_DOUBLE_EQ(priced.tpBytes, sent * e);
  // One all-reduce per op whose weights the rank's tokens read.
  double weightGradients = 0, sums = 0, summed = 0;
  for (const OpDesc &op : costed.ops) {
    weightGradients += cm.opTime(op, Phase::BackwardWeight, h100.devices[0], x);
    if (CostModel::splitsWeightGradient(op, x)) {
      sums +=
          CostModel::collective(Collective::AllReduce, op.paramBytes(), x.tp)
              .time;
      summed += op.paramBytes();
    }
  }
  EXPECT_DOUBLE_EQ(summed, ir.weightsCopied * e);
  EXPECT_DOUBLE_EQ(priced.bwdWeight, weightGradients + sums);

  // q_a_proj and kv_a_proj_with_mqa: replicated over TP, on the context
  // rank's s / c tokens, and under sp the tensor rank's s / (c t), as
  // priced (CostModel::shareOf).
  const unsigned downs = queryRank ? 2 : 1;
  ASSERT_EQ(down.size(), downs);
  unit::RankOps run =
      unit::rankOps(main, tinyMlaAttention, [](graph::MatmulOp m) {
        Value w = m.getRhs();
        if (auto copy = w.getDefiningOp<dist::TpCopyOp>())
          w = copy.getInput();
        auto weight = w.getDefiningOp<graph::WeightOp>();
        return weight && weight.getSymName().contains("_a_proj");
      });
  ASSERT_EQ(run.ops, downs);
  EXPECT_DOUBLE_EQ(run.fwd.flops,
                   2 * (s / cp / (sp ? 2 : 1)) * h * (q + kv + r));
  unit::expectPricedAsRun(down, x, run, /*bytes=*/!sp && cp == 1);
}

INSTANTIATE_TEST_SUITE_P(
    ImportedMla, MlaBlockAsTheProgramsRunIt,
    ::testing::Combine(::testing::Values(1u, 2u), ::testing::Bool(),
                       ::testing::Bool()),
    [](const ::testing::TestParamInfo<std::tuple<unsigned, bool, bool>> &info) {
      return std::string(std::get<0>(info.param) > 1 ? "WithCp" : "WithoutCp") +
             (std::get<1>(info.param) ? "WithSp" : "WithoutSp") +
             (std::get<2>(info.param) ? "" : "NoQueryRank");
    });

} // namespace
