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
// parallelism, recomputation and experts, within 2% (issue 11).
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

} // namespace
