//===- LlmModelsTest.cpp - Fused attention, LLM builders, SP/CP/EP -*- C++ -*-//

#include "lib/Cost/CostModel.h"
#include "lib/Cost/LlmModels.h"

#include "llvm/ADT/STLExtras.h"
#include "gtest/gtest.h"

using namespace distopt::cost;
using namespace distopt::cluster;

namespace {

/// 1000 TFLOP/s bf16, 2000 fp8, 1 TB/s; every efficiency 0.5.
DeviceSpec device() {
  DeviceSpec d;
  d.name = "dev";
  d.peakFlops[static_cast<unsigned>(DType::F32)] = 50e12;
  d.peakFlops[static_cast<unsigned>(DType::BF16)] = 1000e12;
  d.peakFlops[static_cast<unsigned>(DType::F8)] = 2000e12;
  d.memoryBytes = 80e9;
  d.memoryBandwidth = 1e12;
  d.memoryEfficiency = 1;
  d.efficiency.fill(0.5);
  return d;
}

GroupShape group(unsigned n, double GBps) {
  GroupShape g;
  g.size = g.perNode = n;
  g.intra.bandwidth = GBps * 1e9;
  g.intra.collectiveEfficiency = 1;
  g.inter = g.intra;
  return g;
}

TEST(FusedAttention, FlashAttentionFlopsAndNoQuadraticMemory) {
  AttentionShape a{32, 8, 4096, 4096, 128, 128, true};
  OpDesc op = attentionOp("attn", DType::BF16, a);
  EXPECT_EQ(op.cls, OpClass::Attention);
  // Forward: QK^T and PV, 4 s^2 d per head, half of it under the causal mask.
  double fwd = 4.0 * 32 * 4096 * 4096 * 128 * 0.5;
  EXPECT_DOUBLE_EQ(op.fwd.flops, fwd);
  // Backward: five matmuls (S recomputed), 2.5x the forward.
  EXPECT_DOUBLE_EQ(op.bwdInput.flops, 2.5 * fwd);
  EXPECT_DOUBLE_EQ(op.bwdWeight.flops, 0);
  // Saved: V (grouped: 8 heads) and the fp32 log-sum-exp; nothing s^2.
  EXPECT_DOUBLE_EQ(op.savedBytes, 8.0 * 4096 * 128 * 2 + 32.0 * 4096 * 4);
  EXPECT_DOUBLE_EQ(op.cpKvBytes, 2 * 8.0 * 4096 * 128 * 2);
  // Its own efficiency class: halving it doubles the time.
  CostModel cm;
  DeviceSpec d = device();
  double t = cm.opTime(op, Phase::Forward, d, 1, 1);
  EXPECT_NEAR(t, fwd / (1000e12 * 0.5), 1e-12);
  d.efficiency[static_cast<unsigned>(OpClass::Attention)] = 0.25;
  EXPECT_NEAR(cm.opTime(op, Phase::Forward, d, 1, 1), 2 * t, 1e-12);
}

TEST(FusedAttention, GptBlockDropsTheSquaredTerm) {
  // Korthikanti et al.: sbh(34 + 5as/h) bytes unfused; with the fused
  // kernel only the 34sbh and the log-sum-exp (4as bytes) remain.
  GptConfig g;
  g.layers = 1;
  g.hidden = 2048;
  g.heads = 16;
  g.seqLen = 2048;
  MemoryConfig cfg;
  double s = g.seqLen, h = g.hidden, a = g.heads;
  ModelDesc plain = buildGpt(g);
  EXPECT_NEAR(activationBytes(plain, 1, 2, 1, cfg), s * h * (34 + 5 * a * s / h),
              1);
  g.fusedAttention = true;
  ModelDesc fused = buildGpt(g);
  EXPECT_NEAR(activationBytes(fused, 1, 2, 1, cfg), 34 * s * h + 4 * a * s, 1);
  EXPECT_DOUBLE_EQ(plain.paramCount(), fused.paramCount());
}

TEST(LlmModels, PublishedParameterCounts) {
  // Model cards: LLaMA-3 8.03B / 70.6B / 405.9B, Mixtral 46.7B (12.9B
  // active), DeepSeek-V3 671B (37B active) without its MTP module, Qwen3
  // 30.5B (3.3B active) and 235B (22B active), Nemotron-4 340B, GPT-3
  // 175B.
  struct Case {
    LlmConfig cfg;
    double total, active;
  } cases[] = {
      {llama3_8b(), 8.03e9, 8.03e9},     {llama3_70b(), 70.6e9, 70.6e9},
      {llama3_405b(), 405.9e9, 405.9e9}, {llama2_7b(), 6.74e9, 6.74e9},
      {mixtral8x7b(), 46.7e9, 12.9e9},   {deepseekV3(), 671e9, 37e9},
      {qwen3_30b_a3b(), 30.5e9, 3.3e9},  {qwen3_235b_a22b(), 235e9, 22e9},
      {nemotron4_340b(), 341e9, 341e9},  {gpt3_175b(), 175e9, 175e9},
      {grok1_314b(), 314e9, 86e9}};
  for (const Case &c : cases) {
    EXPECT_NEAR(llmParamCount(c.cfg), c.total, 0.01 * c.total) << c.cfg.name;
    EXPECT_EQ(llmPreset(c.cfg.name)->name, c.cfg.name);
    EXPECT_NEAR(llmParamCount(c.cfg, true), c.active, 0.02 * c.active)
        << c.cfg.name;
    // The analytic count is what the built model holds.
    EXPECT_NEAR(buildLlm(c.cfg).paramCount(), llmParamCount(c.cfg),
                1e-9 * c.total)
        << c.cfg.name;
  }
}

TEST(LlmModels, FlopsMatchNemoFormula) {
  // NeMo's llama3 formula per sequence: s l h^2 (12 + 12 g/a + 18 f/h +
  // 6 s/h + 6 V/(l h)).
  LlmConfig c = llama3_70b();
  double s = c.seqLen, l = c.layers, h = c.hidden;
  double nemo = s * l * h * h *
                (12 + 12 * c.kvHeads / c.heads + 18 * c.ffnHidden / h +
                 12 * s / h * 0.5 + 6 * c.vocab / (l * h));
  EXPECT_NEAR(llmModelFlopsPerSequence(c), nemo, 1e-9 * nemo);
  // The ops carry the same matmul and attention FLOPs (plus a little
  // elementwise work), with FlashAttention's recomputation in backward.
  ModelDesc m = buildLlm(c);
  double ops = m.trainingFlopsPerSample();
  EXPECT_GT(ops, nemo);
  EXPECT_LT(ops, 1.03 * nemo);
}

TEST(LlmModels, MoeLayersRouteTopKTokens) {
  LlmConfig c = mixtral8x7b();
  c.layers = 1;
  ModelDesc m = buildLlm(c);
  const LayerDesc &b = m.layers[1];
  double expertParams = 0, a2a = 0;
  for (const OpDesc &op : b.ops) {
    if (op.expert)
      expertParams += op.params;
    a2a += op.epAllToAllBytes;
  }
  EXPECT_NEAR(expertParams, 8 * 3 * 4096.0 * 14336, 1);
  // Dispatch and combine each move top-k copies of every token.
  EXPECT_DOUBLE_EQ(a2a, 2 * 2 * c.seqLen * 4096 * 2);
  ParamSplit p = paramSplit(m, 1, 2, 1, 4);
  EXPECT_NEAR(p.expert, expertParams / 4, 1);
}

TEST(Fp8, MatmulsRunAtTheFp8PeakAndItsEfficiency) {
  DeviceSpec d = device();
  OpDesc mm = matmulOp("fc", DType::BF16, 1, 8192, 8192, 8192, true);
  OpDesc norm = normOp("ln", DType::BF16, 8192, 8192);
  CostModel bf16, fp8;
  fp8.setMatmulPrecision(DType::F8);
  double t16 = bf16.opTime(mm, Phase::Forward, d, 1, 1);
  // Transformer Engine's cast of the bf16 activation operand: read once,
  // written in two fp8 layouts (the weight is cast once per step).
  double act = 8192.0 * 8192 * 2;
  double cast =
      2 * act / (d.memoryBandwidth * d.memoryEfficiency) + d.launchOverhead;
  // Same efficiency: twice the peak, half the time.
  EXPECT_NEAR(fp8.opTime(mm, Phase::Forward, d, 1, 1), t16 / 2 + cast, 1e-12);
  // The device's own fp8 efficiency (0.35 of 2000 vs 0.5 of 1000).
  d.fp8MatmulEfficiency = 0.35;
  EXPECT_NEAR(fp8.opTime(mm, Phase::Forward, d, 1, 1), t16 * 0.5 / 0.7 + cast,
              1e-12);
  // The weight gradient reuses both casts.
  EXPECT_NEAR(fp8.opTime(mm, Phase::BackwardWeight, d, 1, 1),
              bf16.opTime(mm, Phase::BackwardWeight, d, 1, 1) * 0.5 / 0.7,
              1e-12);
  // The LM head (and the router) stay bf16.
  OpDesc head = matmulOp("lm_head", DType::BF16, 1, 8192, 8192, 8192, true);
  head.keepsPrecision = true;
  EXPECT_DOUBLE_EQ(fp8.opTime(head, Phase::Forward, d, 1, 1), t16);
  // Everything else stays in its own dtype.
  EXPECT_DOUBLE_EQ(fp8.opTime(norm, Phase::Forward, d, 1, 1),
                   bf16.opTime(norm, Phase::Forward, d, 1, 1));
}

TEST(SequenceParallel, KorthikantiActivationsAndSameCommunication) {
  GptConfig g;
  g.layers = 1;
  g.hidden = 4096;
  g.heads = 32;
  g.seqLen = 2048;
  ModelDesc m = buildGpt(g);
  double s = g.seqLen, h = g.hidden, a = g.heads, t = 8;
  MemoryConfig tp;
  tp.tp = 8;
  // Tensor parallel: sbh(10 + 24/t + 5as/(ht)).
  EXPECT_NEAR(activationBytes(m, 1, 2, 1, tp),
              s * h * (10 + 24 / t + 5 * a * s / (h * t)), 1);
  // Tensor + sequence parallel: sbh/t (34 + 5as/h).
  MemoryConfig sp = tp;
  sp.sp = true;
  EXPECT_NEAR(activationBytes(m, 1, 2, 1, sp),
              s * h / t * (34 + 5 * a * s / h), 1);
  // The same activation bytes cross the TP group (RS + AG = AR); the
  // replicated norms and dropouts run on 1/t of the sequence, so the block
  // gets faster, and the norms' weight gradients (each rank's tokens'
  // part: 2 norms x 2h) are all-reduced over the group besides.
  CostModel cm;
  DeviceSpec d = device();
  ExecConfig x;
  x.tp = group(8, 400);
  RangeTimes plain = cm.rangeTimes(m, 1, 2, d, x);
  x.sp = true;
  RangeTimes seq = cm.rangeTimes(m, 1, 2, d, x);
  ASSERT_DOUBLE_EQ(CostModel::weightGradSumBytes(m.layers[1], x),
                   2 * 2 * h * 2);
  CommCost sums =
      CostModel::collective(Collective::AllReduce, 2 * 2 * h * 2, x.tp);
  EXPECT_NEAR(seq.tpBytes, plain.tpBytes + sums.bytes[0] + sums.bytes[1],
              1e-6 * plain.tpBytes);
  EXPECT_LT(seq.fwd, plain.fwd);
  EXPECT_LT(seq.bwdInput, plain.bwdInput);
}

TEST(SequenceParallel, SplitsOnlyLayersWithATensorParallelRegion) {
  // The programs split by tokens only what follows a row-parallel matmul's
  // reduce-scatter. A convolution block whose ops every tensor rank runs
  // whole (TP-replicated, as bench/search's CNNs mark them) has no such
  // region: sp = 1 changes neither its time nor its memory. A transformer
  // block's replicated norms and dropouts do split.
  ModelDesc m;
  LayerDesc conv;
  conv.name = "conv";
  conv.ops.push_back(
      tpReplicated(convOp("conv", DType::F16, 64, 56, 56, 64, 3, 3, 1, 1),
                   64 * 56 * 56 * 2));
  conv.ops.push_back(tpReplicated(
      elementwiseOp("relu", DType::F16, 64 * 56 * 56), 64 * 56 * 56 * 2));
  conv.boundaryBytes = 64 * 56 * 56 * 2;
  m.layers.push_back(conv);
  MemoryConfig tp;
  tp.tp = 8;
  MemoryConfig sp = tp;
  sp.sp = true;
  EXPECT_GT(activationBytes(m, 0, 1, 1, tp), 0);
  EXPECT_DOUBLE_EQ(activationBytes(m, 0, 1, 1, sp),
                   activationBytes(m, 0, 1, 1, tp));
  EXPECT_DOUBLE_EQ(backwardWorkingBytes(m, 0, 1, 1, sp),
                   backwardWorkingBytes(m, 0, 1, 1, tp));
  MemoryConfig fullTp = tp, fullSp = sp;
  fullTp.recompute = fullSp.recompute = Recompute::Full;
  EXPECT_DOUBLE_EQ(activationBytes(m, 0, 1, 1, fullSp),
                   activationBytes(m, 0, 1, 1, fullTp));
  CostModel cm;
  DeviceSpec d = device();
  ExecConfig x;
  x.tp = group(8, 400);
  RangeTimes plain = cm.rangeTimes(m, 0, 1, d, x);
  x.sp = true;
  RangeTimes seq = cm.rangeTimes(m, 0, 1, d, x);
  EXPECT_DOUBLE_EQ(seq.fwd, plain.fwd);
  EXPECT_DOUBLE_EQ(seq.bwdInput, plain.bwdInput);

  GptConfig g;
  g.layers = 1;
  ModelDesc gpt = buildGpt(g);
  EXPECT_LT(activationBytes(gpt, 1, 2, 1, sp),
            activationBytes(gpt, 1, 2, 1, tp));
}

TEST(ContextParallel, SplitsTheSequenceAndPassesKeysAndValues) {
  LlmConfig c = llama3_8b();
  c.layers = 1;
  c.seqLen = 32768;
  ModelDesc m = buildLlm(c);
  MemoryConfig one, four;
  four.cp = 4;
  EXPECT_NEAR(activationBytes(m, 1, 2, 1, four),
              activationBytes(m, 1, 2, 1, one) / 4, 1);
  CostModel cm;
  DeviceSpec d = device();
  ExecConfig x;
  RangeTimes whole = cm.rangeTimes(m, 1, 2, d, x);
  x.cp = group(4, 400);
  RangeTimes ring = cm.rangeTimes(m, 1, 2, d, x);
  // Every op on a quarter of the tokens; on a fast link the K/V ring hides
  // behind the attention kernel.
  EXPECT_NEAR(ring.fwd, whole.fwd / 4, 0.02 * whole.fwd);
  EXPECT_DOUBLE_EQ(ring.fwdComm, 0);
  // 3 steps of a quarter of K and V forward, twice that backward.
  double kv = 2 * 8.0 * 128 * c.seqLen * 2;
  EXPECT_NEAR(ring.linkBytes[0], 3 * 3 * kv / 4, 1);
  // On a slow link the ring is exposed.
  x.cp = group(4, 1);
  RangeTimes slow = cm.rangeTimes(m, 1, 2, d, x);
  EXPECT_GT(slow.fwdComm, 0);
  EXPECT_NEAR(slow.fwd - ring.fwd, slow.fwdComm, 1e-9);
}

TEST(ContextParallel, WithSequenceParallelismAsTheProgramsRun) {
  // tp=2 x cp=2 with sp = 1 as dist-context-parallel and
  // dist-tensor-parallel run it: the tensor ranks split each context
  // rank's positions further, their collectives move the context rank's
  // tokens, and the keys and values gathered over the context group are
  // those of the rank's heads, as without sp.
  LlmConfig c = llama3_8b();
  c.layers = 1;
  c.seqLen = 8192;
  ModelDesc m = buildLlm(c);
  MemoryConfig tpSp;
  tpSp.tp = 2;
  tpSp.sp = true;
  MemoryConfig cpTpSp = tpSp;
  cpTpSp.cp = 2;
  EXPECT_NEAR(activationBytes(m, 1, 2, 1, cpTpSp),
              activationBytes(m, 1, 2, 1, tpSp) / 2, 1);
  // A checkpointed boundary (as a pipeline message): 1/(cp x tp) of it.
  MemoryConfig fullOne, fullCpTpSp = cpTpSp;
  fullOne.recompute = fullCpTpSp.recompute = Recompute::Full;
  EXPECT_NEAR(activationBytes(m, 1, 2, 1, fullCpTpSp),
              activationBytes(m, 1, 2, 1, fullOne) / 4, 1);
  CostModel cm;
  DeviceSpec d = device();
  ExecConfig x;
  x.tp = group(2, 400);
  x.sp = true;
  RangeTimes tpOnly = cm.rangeTimes(m, 1, 2, d, x);
  x.cp = group(2, 400);
  RangeTimes withCp = cm.rangeTimes(m, 1, 2, d, x);
  // Reduce-scatters and all-gathers of the context rank's half; the
  // norms' weight-gradient sums (2 norms x h) are whole weights either way.
  ASSERT_DOUBLE_EQ(CostModel::weightGradSumBytes(m.layers[1], x),
                   2 * c.hidden * 2);
  CommCost sums =
      CostModel::collective(Collective::AllReduce, 2 * c.hidden * 2, x.tp);
  const double summed = sums.bytes[0] + sums.bytes[1];
  EXPECT_NEAR(withCp.tpBytes - summed, (tpOnly.tpBytes - summed) / 2,
              1e-6 * tpOnly.tpBytes);
  // The keys and values crossing the context group: those of the rank's
  // heads, the same with and without sp.
  x.sp = false;
  RangeTimes noSp = cm.rangeTimes(m, 1, 2, d, x);
  double cpBytes = withCp.linkBytes[0] + withCp.linkBytes[1] - withCp.tpBytes;
  EXPECT_GT(cpBytes, 0);
  EXPECT_NEAR(cpBytes, noSp.linkBytes[0] + noSp.linkBytes[1] - noSp.tpBytes,
              1e-6 * cpBytes);
  EXPECT_NEAR(withCp.tpBytes - summed, noSp.tpBytes, 1e-6 * noSp.tpBytes);
}

/// The mixture-of-experts half of a MoE block (from its FFN norm on: the
/// norm, router, top-k, dispatch, experts, combine and residual).
LayerDesc moeFfn(const LlmConfig &c) {
  LayerDesc l = buildLlm(c).layers[1];
  auto it = llvm::find_if(
      l.ops, [](const OpDesc &op) { return op.name == "ffn_norm"; });
  l.ops.erase(l.ops.begin(), it);
  return l;
}

TEST(ContextParallel, MoeRoutesTheWholeSequenceAndGathersItsTokens) {
  // dist-context-parallel runs a MoE block's routing, dispatch and combine
  // whole on every context rank (each expert takes its top-C tokens of the
  // whole sequence) and the experts on the rank's C/c capacity slots.
  LlmConfig c = mixtral8x7b();
  c.layers = 1;
  const double s = c.seqLen, h = c.hidden, E = c.experts, k = c.topK;
  const double e = 2; // bf16
  LayerDesc l = moeFfn(c);
  CostModel cm;
  DeviceSpec d = device();
  ExecConfig one, two;
  two.cp = group(2, 100);
  ExecConfig twoRows = two;
  twoRows.mbs = 2;
  unsigned whole = 0, slots = 0;
  for (const OpDesc &op : l.ops)
    for (Phase ph :
         {Phase::Forward, Phase::BackwardInput, Phase::BackwardWeight}) {
      SCOPED_TRACE(op.name);
      bool routing = op.name == "router_topk" || op.name == "dispatch" ||
                     op.name == "combine";
      EXPECT_EQ(op.wholeSequence, routing);
      if (routing) {
        // The same time as one rank routing the whole sequence.
        EXPECT_DOUBLE_EQ(cm.opTime(op, ph, d, two), cm.opTime(op, ph, d, one));
        whole += ph == Phase::Forward;
      } else if (op.expert) {
        // Half the slots: two rows at cp = 2 take one row's time at cp = 1.
        EXPECT_DOUBLE_EQ(cm.opTime(op, ph, d, twoRows),
                         cm.opTime(op, ph, d, one));
        slots += ph == Phase::Forward;
      }
    }
  EXPECT_EQ(whole, 3u);
  EXPECT_EQ(slots, 3u);

  // The gathers over the context group, each rank sending half of each
  // whole tensor: forward the scores (s E), the block's input (s h) and the
  // experts' outputs (k s h) (the zeros the top-k weights are scattered
  // into and the combine adds into are made from the gathered scores and
  // input); backward the dispatched tokens' gradient (k s h) and the
  // combine's output gradient (s h).
  const double fwd = (s * E + s * h + k * s * h) * e;
  const double bwd = (s * h + k * s * h) * e;
  RangeTimes r1 = cm.layerTimes(l, d, one), r2 = cm.layerTimes(l, d, two);
  EXPECT_DOUBLE_EQ(r1.linkBytes[0], 0);
  EXPECT_NEAR(r2.linkBytes[0], (fwd + bwd) / 2, 1e-9 * fwd);
  EXPECT_NEAR(r2.fwdComm, fwd / 2 / 100e9, 1e-15);
  EXPECT_NEAR(r2.bwdComm, bwd / 2 / 100e9, 1e-15);
  // The model's FLOPs split over the context ranks; the routing top-k
  // each of them runs whole is executed work, not the model's.
  double topk = 0;
  for (const OpDesc &op : l.ops)
    if (op.name == "router_topk")
      topk = op.fwd.flops + op.bwdInput.flops + op.bwdWeight.flops;
  EXPECT_NEAR(r2.modelFlops, r1.modelFlops / 2, 1e-9 * r1.modelFlops);
  EXPECT_NEAR(r2.flops - r2.modelFlops, topk / 2, 1e-9 * topk);
  // Full recomputation re-runs the forward and its gathers.
  ExecConfig full = two;
  full.recompute = Recompute::Full;
  RangeTimes rf = cm.layerTimes(l, d, full);
  EXPECT_NEAR(rf.linkBytes[0], (2 * fwd + bwd) / 2, 1e-9 * fwd);

  // With expert parallelism each context rank exchanges its C/c slots:
  // the all-to-alls carry half of cp = 1's.
  ExecConfig ep = one, cpEp = two;
  ep.ep = cpEp.ep = group(2, 100);
  double a2a1 = cm.layerTimes(l, d, ep).linkBytes[0];
  double a2a2 = cm.layerTimes(l, d, cpEp).linkBytes[0] - (fwd + bwd) / 2;
  EXPECT_GT(a2a1, 0);
  EXPECT_NEAR(a2a2, a2a1 / 2, 1e-9 * a2a1);

  // Memory: the routing's saved scores (fp32, s E) whole on every context
  // rank, the rest halved.
  ModelDesc m;
  m.layers = {l};
  MemoryConfig mem1, mem2;
  mem2.cp = 2;
  double scores = s * E * 4;
  EXPECT_NEAR(activationBytes(m, 0, 1, 1, mem2),
              (activationBytes(m, 0, 1, 1, mem1) - scores) / 2 + scores, 1);

  // A router that picks each token's experts (Megatron-Core's) routes the
  // rank's own tokens: everything halves and nothing is gathered.
  c.sequenceRouting = false;
  LayerDesc perToken = moeFfn(c);
  for (const OpDesc &op : perToken.ops)
    EXPECT_FALSE(op.wholeSequence) << op.name;
  RangeTimes t1 = cm.layerTimes(perToken, d, one),
             t2 = cm.layerTimes(perToken, d, two);
  EXPECT_DOUBLE_EQ(t2.linkBytes[0], 0);
  EXPECT_DOUBLE_EQ(t2.flops, t2.modelFlops);
  EXPECT_NEAR(t2.modelFlops, t1.modelFlops / 2, 1e-9 * t1.modelFlops);
}

TEST(ExpertParallel, AllToAllAndLoadImbalance) {
  LlmConfig c = mixtral8x7b();
  c.layers = 1;
  ModelDesc m = buildLlm(c);
  CostModel cm;
  DeviceSpec d = device();
  ExecConfig x;
  RangeTimes local = cm.rangeTimes(m, 1, 2, d, x);
  EXPECT_DOUBLE_EQ(local.fwdComm, 0);
  x.ep = group(8, 100);
  RangeTimes ep = cm.rangeTimes(m, 1, 2, d, x);
  // Two all-to-alls of k s h bf16 bytes forward (7/8 leave the rank), two
  // backward.
  double tokens = 2 * c.seqLen * 4096 * 2;
  double a2a = 7.0 / 8 * tokens / 100e9;
  EXPECT_NEAR(ep.fwdComm, 2 * a2a, 1e-9);
  EXPECT_NEAR(ep.fwd - local.fwd, 2 * a2a, 1e-9);
  EXPECT_NEAR(ep.linkBytes[0], 4 * 7.0 / 8 * tokens, 1);
  // The busiest rank gets 20% more tokens: the expert ops take 20% longer.
  x.expertImbalance = 1.2;
  RangeTimes skew = cm.rangeTimes(m, 1, 2, d, x);
  double expertFwd = 0;
  for (const OpDesc &op : m.layers[1].ops)
    if (op.expert)
      expertFwd += cm.opTime(op, Phase::Forward, d, 1, 1);
  EXPECT_NEAR(skew.fwd - ep.fwd, 0.2 * expertFwd, 1e-9);
  // One grouped GEMM over the rank's experts: with EP each of its fewer
  // experts gets more tokens, so below the small-kernel knee the same work
  // runs faster and pays one launch.
  d.halfEfficiencyFlops = 1e12;
  d.launchOverhead = 1e-5;
  const OpDesc *up = nullptr;
  for (const OpDesc &op : m.layers[1].ops)
    if (op.name == "expert_up")
      up = &op;
  ASSERT_NE(up, nullptr);
  EXPECT_EQ(up->kernels, 8u);
  ExecConfig one;
  ExecConfig eight;
  eight.ep = group(8, 100);
  double t1 = cm.opTime(*up, Phase::Forward, d, one);
  double t8 = cm.opTime(*up, Phase::Forward, d, eight);
  EXPECT_LT(t8, t1);
  double flops = up->fwd.flops;
  double eff1 = 0.5 * (flops / 8) / (flops / 8 + 1e12);
  EXPECT_NEAR(t1, flops / (1000e12 * eff1) + 1e-5, 1e-9);
  MemoryConfig mem;
  mem.dp = 8;
  mem.ep = 8;
  mem.zero = 1;
  // Expert weights: 1/8 per rank, their optimizer state sharded over dp/ep.
  ParamSplit p = paramSplit(m, 1, 2, 1, 8);
  MemoryBreakdown b = staticMemory(p, mem);
  EXPECT_NEAR(b.optimizer, 12 * (p.dense / 8 + p.expert), 1);
  EXPECT_NEAR(b.weights, 2 * p.total(), 1);
}

} // namespace

namespace {

TEST(TorchtitanBlocks, EveryOtherMatmulSacRecomputesWkWoW3) {
  // torchtitan's per-op policy on a LLaMA-3 8B block: of wq, wk, wv, wo,
  // w1, w3, w2 the even ones (wk, wo, w3) re-run in the backward; the
  // outputs of wq, wv, w1, w2 and the attention stay, with the block's
  // input.
  LlmConfig c = llama3_8b();
  c.sacEveryOtherMatmul = true;
  LayerDesc l = llmBlock(c, 0);
  const double s = c.seqLen, h = c.hidden, d = c.headWidth(), f = c.ffnHidden;
  const double a = c.heads, kv = c.kvHeads;
  double mmAgain = 0, mmAll = 0, kept = 0;
  for (const OpDesc &op : l.ops) {
    if (op.cls == OpClass::MatMul) {
      mmAll += op.fwd.flops;
      mmAgain += op.fwd.flops * op.selectiveShare;
    }
    if (op.selective)
      kept += op.selectiveSavedBytes;
  }
  double wk = 2 * s * h * kv * d, wo = 2 * s * a * d * h, w3 = 2 * s * h * f;
  EXPECT_NEAR(mmAgain, wk + wo + w3, 1e-9 * mmAll);
  // x, wq, wv, attention output (+ fp32 log-sum-exp), w1, w2: bf16.
  double bytes = 2 * s * (h + a * d + kv * d + a * d + f + h) + 4 * a * s;
  EXPECT_NEAR(kept, bytes, 1e-9 * bytes);
  // Under selective recomputation the block keeps those bytes and re-runs
  // the rest: less memory than keeping everything, more than full.
  ModelDesc m;
  m.layers.push_back(l);
  MemoryConfig none, sel, full;
  sel.recompute = Recompute::Selective;
  full.recompute = Recompute::Full;
  EXPECT_NEAR(activationBytes(m, 0, 1, 1, sel), bytes, 1e-9 * bytes);
  EXPECT_LT(activationBytes(m, 0, 1, 1, sel),
            activationBytes(m, 0, 1, 1, none));
  CostModel cm;
  ExecConfig x;
  x.recompute = Recompute::Selective;
  RangeTimes t = cm.rangeTimes(m, 0, 1, device(), x);
  EXPECT_GT(t.recompute, 0);
  EXPECT_NEAR(
      t.flops - t.modelFlops,
      mmAgain +
          [&] {
            double other = 0;
            for (const OpDesc &op : l.ops)
              if (op.cls != OpClass::MatMul && op.selective)
                other += op.fwd.flops * op.selectiveShare;
            return other;
          }(),
      1e-9 * t.flops);
  // Megatron's selective recomputation has nothing to drop with fused
  // attention.
  LayerDesc plain = llmBlock(llama3_8b(), 0);
  for (const OpDesc &op : plain.ops)
    EXPECT_FALSE(op.selective) << op.name;
}

TEST(TorchtitanBlocks, Fp32LossKeepsFp32LogSoftmaxAndItsGradients) {
  LlmConfig c = llama3_8b();
  c.fp32Loss = true;
  ModelDesc m = buildLlm(c);
  const OpDesc &loss = m.layers.back().ops.back();
  double n = c.seqLen * c.vocab;
  EXPECT_DOUBLE_EQ(loss.savedBytes, 4 * n);
  EXPECT_DOUBLE_EQ(loss.bwdWorkingBytes, 8 * n);
  MemoryConfig mem;
  unsigned head = m.layers.size() - 1;
  EXPECT_GE(backwardWorkingBytes(m, head, head + 1, 1, mem), 8 * n);
  c.vocabParallelLoss = true;
  EXPECT_DOUBLE_EQ(buildLlm(c).layers.back().ops.back().bwdWorkingBytes,
                   12 * n);
}

TEST(TorchtitanBlocks, EagerElementwiseMovesMoreBytes) {
  // Eager RMSNorm: x.float(), pow, mean, mul, type_as, * weight: 20 bytes
  // read and 16 written per bf16 element (a fused kernel: 2 and 2).
  LlmConfig c = llama3_8b();
  LayerDesc fused = llmBlock(c, 0);
  c.eagerElementwise = true;
  LayerDesc eager = llmBlock(c, 0);
  ASSERT_EQ(fused.ops.size(), eager.ops.size());
  double n = c.seqLen * c.hidden;
  for (unsigned i = 0; i < eager.ops.size(); ++i) {
    const OpDesc &a = fused.ops[i], &b = eager.ops[i];
    EXPECT_EQ(a.fwd.flops, b.fwd.flops) << a.name;
    if (b.name == "attn_norm") {
      EXPECT_DOUBLE_EQ(b.fwd.bytesRead, 20 * n);
      EXPECT_DOUBLE_EQ(b.fwd.bytesWritten, 16 * n);
    }
    if (b.name == "attn_norm" || b.name == "ffn_norm" || b.name == "rope" ||
        b.name == "ffn_act")
      EXPECT_GT(b.bwdInput.bytesRead, a.bwdInput.bytesRead) << a.name;
    else
      EXPECT_EQ(a.bwdInput.bytesRead, b.bwdInput.bytesRead) << a.name;
  }
}

} // namespace
