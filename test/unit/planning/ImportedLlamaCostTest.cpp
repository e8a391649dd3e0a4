//===- ImportedLlamaCostTest.cpp - Imported LLaMAs vs buildLlm --*- C++ -*-===//
//
// Part of DistOpt. dist-modelgen's dense LLaMA writes rotary embedding as
// slices, neg, concat and products with cos/sin tables, grouped K/V heads
// repeated by an Expand, head transposes, and SwiGLU as silu and mul
// (docs/modelgen.md). Trainers run those inside few kernels: one RoPE
// kernel, the repeat never materialized under fused attention, one gated
// activation (passes/Planning/FusedKernels.cpp). These tests import such
// graphs and check that the product path prices them as the analytic model
// (cost::buildLlm) prices the same configuration: simulated iteration time
// and peak memory of plans with data, tensor, pipeline and context
// parallelism and recomputation, within 2% (issue 11, "one path").
//
//===----------------------------------------------------------------------===//
#include "test/unit/planning/ImportedModel.h"

#include "lib/Cluster/Cluster.h"
#include "lib/Cost/CostModel.h"
#include "lib/Cost/LlmModels.h"
#include "lib/Schedule/Plan.h"
#include "lib/Sim/Simulator.h"

using namespace mlir;
using namespace distopt;
using namespace distopt::cost;

namespace {

class ImportedLlama : public unit::ImportedModel {};

/// Llama-3-70B's widths (64 query heads, 8 K/V heads) in four blocks.
LlmConfig llama70bShaped() {
  LlmConfig c = llama3_70b();
  c.layers = 4;
  return c;
}

/// Llama-3-8B's widths (32 query heads, 8 K/V heads) in four blocks.
LlmConfig llama8bShaped() {
  LlmConfig c = llama3_8b();
  c.layers = 4;
  return c;
}

TEST_F(ImportedLlama, Llama70bShapedPlansAgreeWithin2Percent) {
  LlmConfig c = llama70bShaped();
  unit::expectPlansAgree(imported(c), c, 2, unit::kTwoNodePlans, 64);
}

TEST_F(ImportedLlama, Llama3_8bShapedPlansAgreeWithin2Percent) {
  LlmConfig c = llama8bShaped();
  unit::expectPlansAgree(imported(c), c, 1,
                         {"dp=8", "dp=2,tp=4", "dp=4,tp=2,recompute=full",
                          "dp=8,recompute=selective",
                          "dp=2,pp=4,schedule=1f1b,mbs=1", "dp=4,cp=2"},
                         32);
}

/// Megatron's sequence parallelism at tp = 2 in the programs
/// dist-tensor-parallel writes for a small LLaMA: each RMSNorm runs on the
/// rank's tokens, its scale read through a copy whose backward all-reduces
/// each rank's tokens' part of the gradient over the tensor group. The
/// cost model sums, layer by layer, what the programs sum: per block the
/// two norms' scales (2h), and the final norm's (h); nothing at sp = 0.
TEST_F(ImportedLlama, WeightSumsUnderSequenceParallelismAsTheProgramsRunThem) {
  LlmConfig c;
  c.name = "tiny-llama";
  c.layers = 2, c.hidden = 32, c.heads = 4, c.kvHeads = 2;
  c.ffnHidden = 64, c.seqLen = 8, c.vocab = 64;
  for (bool sp : {true, false}) {
    SCOPED_TRACE(sp);
    ModelDesc graph = imported(c);
    ASSERT_TRUE(
        succeeded(distribute(sp ? "tp=2,sp=1,mbs=1" : "tp=2,mbs=1", 1)));
    ExecConfig x;
    x.tp.size = 2, x.sp = sp;
    double summed = unit::expectWeightSumsAsRun(
        graph, module->lookupSymbol<func::FuncOp>("main"), x, {0, 1},
        cluster::dtypeBytes(c.dtype));
    EXPECT_DOUBLE_EQ(summed, sp ? c.hidden * (2 * c.layers + 1) : 0);
  }
}

/// One RoPE kernel over Q and K, the repeat of the K/V heads and the head
/// transposes never materialized, one gated activation: as many launches
/// per block as buildLlm's block, which has one per op.
TEST_F(ImportedLlama, BlockKernelsAsBuildLlm) {
  LlmConfig c = llama8bShaped();
  c.layers = 1;
  ModelDesc graph = imported(c), analytic = buildLlm(c);
  unsigned g = 0, a = 0;
  double gSaved = 0, aSaved = 0;
  // The graph's block: its attention and FFN halves (the final norm ends
  // the second); the analytic block and its final norm.
  for (unsigned l : {1u, 2u})
    for (const OpDesc &op : graph.layers[l].ops) {
      g += op.kernels;
      gSaved += op.savedBytes + op.savedReplicatedBytes;
    }
  for (const OpDesc &op : analytic.layers[1].ops) {
    a += op.kernels;
    aSaved += op.savedBytes + op.savedReplicatedBytes;
  }
  const OpDesc &finalNorm = analytic.layers.back().ops.front();
  a += finalNorm.kernels;
  aSaved += finalNorm.savedBytes + finalNorm.savedReplicatedBytes;
  // buildLlm's qkv and ffn_up are one GEMM each where the graph has three
  // and two: three launches more.
  EXPECT_EQ(g, a + 3);
  EXPECT_NEAR(gSaved, aSaved, 0.01 * aSaved);
}

/// Each fused form against buildLlm's op: RoPE (one kernel reading Q and K
/// once), fused GQA attention reading K and V once per K/V head (the
/// repeat never materialized), the Q/K/V projections keeping their input
/// once, whole on every TP rank, with one all-reduce of its gradient, the
/// gated activation, and full recomputation leaving the embedding and the
/// output layer alone.
TEST_F(ImportedLlama, FusedFormsAsBuildLlmOps) {
  LlmConfig c = llama70bShaped();
  c.layers = 2;
  ModelDesc graph = imported(c), analytic = buildLlm(c);
  auto op = [&](llvm::StringRef name) -> const OpDesc & {
    return unit::opNamed(analytic.layers[1], name);
  };
  // The attention half of block 0: norm, Q/K/V GEMMs, RoPE, attention, ...
  std::vector<const OpDesc *> gemms, elementwise, attention;
  for (const OpDesc &o : graph.layers[1].ops) {
    if (o.kernels == 0)
      continue;
    if (o.cls == cluster::OpClass::MatMul && o.params > 0)
      gemms.push_back(&o);
    if (o.cls == cluster::OpClass::Elementwise)
      elementwise.push_back(&o);
    if (o.cls == cluster::OpClass::Attention)
      attention.push_back(&o);
  }
  ASSERT_EQ(gemms.size(), 4u); // q, k, v, o
  ASSERT_EQ(attention.size(), 1u);
  const OpDesc &rope = op("rope"), &attn = op("attention"), &qkv = op("qkv");
  // RoPE and the first residual add: the only elementwise kernels.
  ASSERT_EQ(elementwise.size(), 2u);
  EXPECT_DOUBLE_EQ(elementwise[0]->fwd.bytesRead, rope.fwd.bytesRead);
  EXPECT_DOUBLE_EQ(elementwise[0]->fwd.bytesWritten, rope.fwd.bytesWritten);
  EXPECT_DOUBLE_EQ(elementwise[0]->bwdInput.bytesRead, rope.bwdInput.bytesRead);
  EXPECT_DOUBLE_EQ(attention[0]->fwd.bytesRead, attn.fwd.bytesRead);
  EXPECT_DOUBLE_EQ(attention[0]->bwdInput.bytesWritten,
                   attn.bwdInput.bytesWritten);
  // The attention keeps Q and K (buildLlm: the RoPE op does), V and lse.
  EXPECT_DOUBLE_EQ(attention[0]->savedBytes + elementwise[0]->savedBytes,
                   attn.savedBytes + rope.savedBytes);
  double kept = 0, split = 0, allReduced = 0;
  for (const OpDesc *g : llvm::ArrayRef(gemms).drop_back()) {
    kept += g->savedReplicatedBytes;
    split += g->savedBytes;
    allReduced += g->tpAllReduceBwdBytes;
  }
  EXPECT_DOUBLE_EQ(kept, qkv.savedReplicatedBytes);
  EXPECT_DOUBLE_EQ(split, qkv.savedBytes);
  EXPECT_DOUBLE_EQ(allReduced, qkv.tpAllReduceBwdBytes);
  // The FFN half: silu(gate) * up as one kernel keeping both inputs.
  std::vector<const OpDesc *> act;
  for (const OpDesc &o : graph.layers[2].ops)
    if (o.kernels > 0 && o.cls == cluster::OpClass::Elementwise &&
        o.fwd.bytesRead > 2 * op("residual2").fwd.bytesRead)
      act.push_back(&o);
  ASSERT_EQ(act.size(), 1u);
  const OpDesc &ffnAct = op("ffn_act");
  EXPECT_DOUBLE_EQ(act[0]->fwd.bytesRead, ffnAct.fwd.bytesRead);
  EXPECT_DOUBLE_EQ(act[0]->bwdInput.bytesWritten, ffnAct.bwdInput.bytesWritten);
  EXPECT_DOUBLE_EQ(act[0]->savedBytes, ffnAct.savedBytes);
  // Checkpoints: the blocks' layers, not the embedding or the head.
  EXPECT_FALSE(graph.layers.front().checkpoint);
  EXPECT_FALSE(graph.layers.back().checkpoint);
  for (unsigned l = 1; l + 1 < graph.layers.size(); ++l)
    EXPECT_TRUE(graph.layers[l].checkpoint) << l;
}

} // namespace
