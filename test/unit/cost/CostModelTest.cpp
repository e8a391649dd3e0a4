//===- CostModelTest.cpp - Roofline, collectives, memory, profiles -*- C++ -*-//

#include "lib/Cost/CostModel.h"
#include "lib/Cost/LayerTimes.h"
#include "lib/Cost/ProfileDB.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

using namespace distopt::cost;
using namespace distopt::cluster;

namespace {

/// 100 TFLOP/s bf16, 1 TB/s, matmul efficiency 0.5, everything else 1.
DeviceSpec testDevice() {
  DeviceSpec d;
  d.name = "test";
  d.peakFlops[static_cast<unsigned>(DType::F32)] = 10e12;
  d.peakFlops[static_cast<unsigned>(DType::BF16)] = 100e12;
  d.memoryBytes = 16e9;
  d.memoryBandwidth = 1e12;
  d.memoryEfficiency = 1;
  d.efficiency.fill(1);
  d.efficiency[static_cast<unsigned>(OpClass::MatMul)] = 0.5;
  return d;
}

LinkSpec link(double GBps, double latUs, double eff = 1) {
  LinkSpec l;
  l.name = "l";
  l.bandwidth = GBps * 1e9;
  l.latency = latUs * 1e-6;
  l.collectiveEfficiency = eff;
  return l;
}

TEST(Roofline, ComputeAndMemoryBound) {
  CostModel cm;
  DeviceSpec d = testDevice();
  // 1 TFLOP at 50 TFLOP/s achievable = 20 ms; 1 GB = 1 ms: compute bound.
  EXPECT_NEAR(cm.computeTime({1e12, 5e8, 5e8}, OpClass::MatMul, DType::BF16, d),
              0.02, 1e-12);
  // 1 GFLOP elementwise, 4 GB: memory bound, 4 ms.
  EXPECT_NEAR(
      cm.computeTime({1e9, 2e9, 2e9}, OpClass::Elementwise, DType::BF16, d),
      0.004, 1e-12);
  // fp8 is missing: falls back to the fp32 peak (10 TFLOP/s).
  EXPECT_NEAR(cm.computeTime({1e12, 0, 0}, OpClass::Norm, DType::F8, d), 0.1,
              1e-12);
  // Launch overhead per kernel; the roll-off halves efficiency at the knee.
  d.launchOverhead = 5e-6;
  EXPECT_NEAR(cm.computeTime({0, 1e6, 0}, OpClass::Other, DType::BF16, d, 3),
              1e-6 + 15e-6, 1e-15);
  d.launchOverhead = 0;
  d.halfEfficiencyFlops = 1e12;
  EXPECT_NEAR(cm.computeTime({1e12, 0, 0}, OpClass::MatMul, DType::BF16, d),
              0.04, 1e-12);
  EXPECT_DOUBLE_EQ(cm.computeTime({}, OpClass::MatMul, DType::BF16, d), 0);
}

TEST(Roofline, OpTimeScalesWithBatchAndTensorParallelism) {
  CostModel cm;
  DeviceSpec d = testDevice();
  OpDesc op = matmulOp("fc", DType::BF16, 1, 4096, 4096, 4096, true);
  double one = cm.opTime(op, Phase::Forward, d, 1, 1);
  EXPECT_NEAR(cm.opTime(op, Phase::Forward, d, 1, 4), 4 * one, 1e-12);
  EXPECT_NEAR(cm.opTime(op, Phase::Forward, d, 4, 4), one, 1e-12);
  op.tp = TpMode::Replicated;
  EXPECT_NEAR(cm.opTime(op, Phase::Forward, d, 4, 1), one, 1e-12);
}

TEST(Collectives, RingAndTreeFormulas) {
  LinkSpec l = link(100, 10, 0.8);
  double S = 1e9, busBw = 80e9;
  // Ring all-reduce: 2(n-1) alpha + 2 (n-1)/n S / busbw.
  EXPECT_NEAR(CostModel::flatCollectiveTime(Collective::AllReduce, S, 8, l,
                                            CollectiveAlgo::Ring),
              14 * 10e-6 + 2 * 7.0 / 8 * S / busBw, 1e-12);
  // Reduce-scatter and all-gather move (n-1)/n of the buffer.
  EXPECT_NEAR(CostModel::flatCollectiveTime(Collective::ReduceScatter, S, 8, l,
                                            CollectiveAlgo::Auto),
              7 * 10e-6 + 7.0 / 8 * S / busBw, 1e-12);
  // Tree: 2 log2(n) latencies; wins for small messages only.
  EXPECT_NEAR(CostModel::flatCollectiveTime(Collective::AllReduce, 1e3, 64, l,
                                            CollectiveAlgo::Tree),
              12 * 10e-6 + 2 * 1e3 / busBw, 1e-12);
  EXPECT_LT(CostModel::flatCollectiveTime(Collective::AllReduce, 1e3, 64, l,
                                          CollectiveAlgo::Auto),
            CostModel::flatCollectiveTime(Collective::AllReduce, 1e3, 64, l,
                                          CollectiveAlgo::Ring));
  EXPECT_DOUBLE_EQ(CostModel::flatCollectiveTime(Collective::AllReduce, S, 1, l,
                                                 CollectiveAlgo::Auto),
                   0);
}

TEST(Collectives, HierarchicalAcrossNodes) {
  GroupShape g;
  g.size = 16;
  g.perNode = 8;
  g.intra = link(300, 0);
  g.inter = link(25, 0);
  double S = 8e9;
  CommCost h = CostModel::collective(Collective::AllReduce, S, g,
                                     CollectiveAlgo::Hierarchical);
  // RS and AG over 8 on NVLink, AR over 2 nodes on 1/8 of the data.
  double expect = 2 * (7.0 / 8 * S / 300e9) + 2 * 0.5 * (S / 8) / 25e9;
  EXPECT_NEAR(h.time, expect, 1e-9);
  EXPECT_NEAR(h.bytes[1], 2 * 0.5 * S / 8, 1);
  EXPECT_NEAR(h.bytes[0], 2 * 7.0 / 8 * S, 1);
  CommCost flat =
      CostModel::collective(Collective::AllReduce, S, g, CollectiveAlgo::Ring);
  EXPECT_NEAR(flat.time, 2 * 15.0 / 16 * S / 25e9, 1e-9);
  CommCost best = CostModel::collective(Collective::AllReduce, S, g);
  EXPECT_DOUBLE_EQ(best.time, std::min(h.time, flat.time));
  // One rank per node: a flat ring on the network.
  g.perNode = 1;
  CommCost net = CostModel::collective(Collective::AllGather, S, g);
  EXPECT_NEAR(net.time, 15.0 / 16 * S / 25e9, 1e-9);
  EXPECT_DOUBLE_EQ(net.bytes[0], 0);
  EXPECT_DOUBLE_EQ(CostModel::p2pTime(1e9, link(10, 5)), 5e-6 + 0.1);
  EXPECT_DOUBLE_EQ(CostModel::p2pTime(0, link(10, 5)), 0);
}

TEST(Collectives, AllToAllAcrossNodesCrossesEveryNic) {
  // 32 ranks on 4 nodes: each rank sends 7/32 of its buffer over NVLink
  // and 24/32 over its own NIC, at the same time; nothing aggregates.
  GroupShape g;
  g.size = 32;
  g.perNode = 8;
  g.intra = link(300, 0);
  g.inter = link(25, 0);
  double S = 1e9;
  CommCost a = CostModel::collective(Collective::AllToAll, S, g);
  EXPECT_NEAR(a.time, std::max(7.0 / 32 * S / 300e9, 24.0 / 32 * S / 25e9),
              1e-12);
  EXPECT_NEAR(a.bytes[0], 7.0 / 32 * S, 1);
  EXPECT_NEAR(a.bytes[1], 24.0 / 32 * S, 1);
}

TEST(RangeTimes, TpOverlapHidesCommunicationUnderTheGemm) {
  GptConfig cfg;
  cfg.layers = 1;
  cfg.hidden = 4096;
  cfg.heads = 32;
  cfg.seqLen = 2048;
  ModelDesc m = buildGpt(cfg);
  CostModel cm;
  DeviceSpec d = testDevice();
  ExecConfig x;
  x.tp.size = x.tp.perNode = 4;
  x.tp.intra = link(10, 0);
  x.tp.inter = x.tp.intra;
  RangeTimes exposed = cm.rangeTimes(m, 1, 2, d, x);
  x.tpOverlap = true;
  RangeTimes hidden = cm.rangeTimes(m, 1, 2, d, x);
  // Each collective shows only where it outlasts its GEMM.
  double fwd = 0, bwd = 0, gain = 0;
  for (const OpDesc &op : m.layers[1].ops) {
    double f = cm.opTime(op, Phase::Forward, d, x);
    double bi = cm.opTime(op, Phase::BackwardInput, d, x);
    auto ar = [&](double b) {
      return b > 0 ? CostModel::collective(Collective::AllReduce, b, x.tp).time
                   : 0.0;
    };
    double cf = ar(op.tpAllReduceFwdBytes), cb = ar(op.tpAllReduceBwdBytes);
    if (op.cls == OpClass::MatMul)
      gain += std::min(cf, f) + std::min(cb, bi);
    fwd += f, bwd += bi;
  }
  EXPECT_GT(gain, 0);
  EXPECT_NEAR(exposed.fwd + exposed.bwdInput - hidden.fwd - hidden.bwdInput,
              gain, 1e-9);
  EXPECT_LT(hidden.fwd, exposed.fwd);
  EXPECT_GE(hidden.fwd, fwd - 1e-12);
  EXPECT_DOUBLE_EQ(hidden.tpBytes, exposed.tpBytes);
}

/// Tensor parallelism over 4 ranks of one node (10 GB/s links, 5 us), the
/// rest of the configuration as it defaults.
static ExecConfig tensorParallelFour() {
  ExecConfig x;
  x.tp.size = x.tp.perNode = 4;
  x.tp.intra = x.tp.inter = link(10, 5);
  return x;
}

/// Checks that `layer` under `x` adds the W-pass collective `extra` to the
/// layer as priced without sp (`whole`): to the weight-gradient GEMMs' time,
/// to the TP traffic and to the links' bytes.
static void expectWeightPassAdds(const CostModel &cm, const LayerDesc &layer,
                                 const DeviceSpec &d, const ExecConfig &x,
                                 const RangeTimes &whole,
                                 const CommCost &extra) {
  RangeTimes split = cm.layerTimes(layer, d, x);
  double weightGradients = 0;
  for (const OpDesc &op : layer.ops)
    weightGradients += cm.opTime(op, Phase::BackwardWeight, d, x);
  EXPECT_DOUBLE_EQ(split.bwdWeight, weightGradients + extra.time);
  EXPECT_DOUBLE_EQ(split.tpBytes, whole.tpBytes + extra.bytes[0]);
  EXPECT_DOUBLE_EQ(split.linkBytes[0], whole.linkBytes[0] + extra.bytes[0]);
}

/// Sequence parallelism runs a GPT block's layer norms on the rank's s/t
/// tokens with their scales and biases whole: each micro-batch's backward
/// all-reduces their gradients (2 norms x 2h, bf16) over the tensor group,
/// in the weight-gradient phase, in the TP traffic, not hidden by
/// tp_overlap; a layer that sp leaves whole (no split op) sums nothing.
TEST(RangeTimes, SequenceParallelismSumsTheNormsWeightGradients) {
  GptConfig cfg;
  cfg.layers = 1, cfg.hidden = 4096, cfg.heads = 32, cfg.seqLen = 2048;
  ModelDesc m = buildGpt(cfg);
  const LayerDesc &block = m.layers[1];
  CostModel cm;
  DeviceSpec d = testDevice();
  ExecConfig x = tensorParallelFour();
  RangeTimes whole = cm.layerTimes(block, d, x);
  EXPECT_EQ(CostModel::weightGradSumBytes(block, x), 0);
  x.sp = true;
  const double bytes = 2 * 2 * cfg.hidden * 2;
  EXPECT_DOUBLE_EQ(CostModel::weightGradSumBytes(block, x), bytes);
  // One all-reduce per op whose weights the rank's tokens read (the two
  // norms), so that grouping ops into layers does not change the price.
  CommCost sum;
  unsigned summed = 0;
  for (const OpDesc &op : block.ops)
    if (CostModel::splitsWeightGradient(op, x)) {
      CommCost one =
          CostModel::collective(Collective::AllReduce, op.paramBytes(), x.tp);
      sum.time += one.time;
      sum.bytes[0] += one.bytes[0];
      ++summed;
    }
  EXPECT_EQ(summed, 2u);
  EXPECT_DOUBLE_EQ(
      sum.bytes[0],
      CostModel::collective(Collective::AllReduce, bytes, x.tp).bytes[0]);
  ASSERT_GT(sum.time, 0);
  for (bool overlap : {false, true}) {
    SCOPED_TRACE(overlap);
    x.tpOverlap = overlap;
    // The activations' all-reduces become reduce-scatters and all-gathers
    // of the same ring bytes; the sum adds its own.
    expectWeightPassAdds(cm, block, d, x, whole, sum);
  }
  // The final norm alone: no split op, so sp keeps it whole.
  LayerDesc norm;
  norm.ops = {block.ops.front()};
  ASSERT_GT(norm.ops[0].params, 0);
  EXPECT_EQ(CostModel::weightGradSumBytes(norm, x), 0);
  EXPECT_EQ(cm.layerTimes(norm, d, x).tpBytes, 0);
}

/// A GPT's embedding layer as the product path sees it (the token lookup
/// split by vocabulary, the position table `[s, h]` a weight added to the
/// tokens): sequence parallelism slices the table to the rank's positions,
/// so each micro-batch's backward all-gathers its gradient over the tensor
/// group (in the W pass and the TP traffic), where a weight read through a
/// copy would have its gradient all-reduced.
TEST(RangeTimes, SequenceParallelismGathersAPositionTablesGradient) {
  const double s = 2048, h = 4096, e = 2;
  LayerDesc embedding;
  OpDesc lookup;
  lookup.name = "token_embedding";
  lookup.cls = OpClass::Embedding;
  lookup.dtype = DType::BF16;
  lookup.params = 51200 * h;
  lookup.fwd = {0, s * h * e, s * h * e};
  lookup.tpAllReduceFwdBytes = s * h * e;
  OpDesc add;
  add.name = "add_positions";
  add.cls = OpClass::Elementwise;
  add.dtype = DType::BF16;
  add.tp = TpMode::Replicated;
  add.params = s * h;
  add.positionRowsBytes = s * h * e;
  add.fwd = {s * h, 3 * s * h * e, s * h * e};
  add.bwdWeight = {s * h, s * h * e, s * h * e};
  embedding.ops = {lookup, add};
  CostModel cm;
  DeviceSpec d = testDevice();
  ExecConfig x = tensorParallelFour();
  RangeTimes whole = cm.layerTimes(embedding, d, x);
  EXPECT_EQ(CostModel::weightGradGatherBytes(embedding, x), 0);
  x.sp = true;
  EXPECT_FALSE(CostModel::splitsWeightGradient(add, x));
  EXPECT_EQ(CostModel::weightGradSumBytes(embedding, x), 0);
  EXPECT_DOUBLE_EQ(CostModel::weightGradGatherBytes(embedding, x), s * h * e);
  CommCost gather =
      CostModel::collective(Collective::AllGather, s * h * e, x.tp);
  ASSERT_GT(gather.time, 0);
  // A ring all-gather of the table moves half what an all-reduce would.
  EXPECT_DOUBLE_EQ(
      2 * gather.bytes[0],
      CostModel::collective(Collective::AllReduce, s * h * e, x.tp).bytes[0]);
  expectWeightPassAdds(cm, embedding, d, x, whole, gather);
  // Without the mark the same add reads its weight through a copy: summed.
  embedding.ops[1].positionRowsBytes = 0;
  EXPECT_EQ(CostModel::weightGradGatherBytes(embedding, x), 0);
  EXPECT_DOUBLE_EQ(CostModel::weightGradSumBytes(embedding, x), s * h * e);
}

/// Sequence parallelism splits no lookup by tokens: one tensor parallelism
/// leaves whole (position ids, a shared table) runs on every tensor rank's
/// whole sequence, and is timed so; a vocabulary-parallel one is split as
/// under tensor parallelism alone. The model's FLOPs count one copy.
TEST(ShareOf, SequenceParallelismLeavesAWholeLookupWhole) {
  OpDesc lookup;
  lookup.cls = OpClass::Embedding;
  lookup.tp = TpMode::Replicated;
  lookup.fwd = {0, 1e6, 1e6};
  ExecConfig x;
  x.mbs = 2;
  x.tp.size = 4;
  x.cp.size = 2;
  EXPECT_DOUBLE_EQ(CostModel::shareOf(lookup, x), 1.0);
  x.sp = true;
  EXPECT_DOUBLE_EQ(CostModel::shareOf(lookup, x), 1.0);
  EXPECT_DOUBLE_EQ(CostModel::tokenShare(lookup, x), 0.25);
  lookup.tp = TpMode::Split;
  EXPECT_DOUBLE_EQ(CostModel::shareOf(lookup, x), 0.25);
  CostModel cm;
  DeviceSpec d = testDevice();
  lookup.tp = TpMode::Replicated;
  x.sp = false;
  double alone = cm.opTime(lookup, Phase::Forward, d, x);
  x.sp = true;
  EXPECT_DOUBLE_EQ(cm.opTime(lookup, Phase::Forward, d, x), alone);
}

TEST(Memory, MixedPrecisionAdamAndZero) {
  MemoryConfig cfg;
  cfg.dp = 8;
  double P = 1e9;
  EXPECT_DOUBLE_EQ(staticMemory(P, cfg).staticBytes(), 16 * P);
  cfg.zero = 1;
  EXPECT_DOUBLE_EQ(staticMemory(P, cfg).staticBytes(), (4 + 12.0 / 8) * P);
  cfg.zero = 2;
  EXPECT_DOUBLE_EQ(staticMemory(P, cfg).staticBytes(), (2 + 14.0 / 8) * P);
  cfg.zero = 3;
  EXPECT_DOUBLE_EQ(staticMemory(P, cfg).staticBytes(), 16.0 / 8 * P);
  cfg.zero = 0;
  cfg.mixedPrecision = false;
  EXPECT_DOUBLE_EQ(staticMemory(P, cfg).staticBytes(), 16 * P); // 4+4+8
  cfg.optimizer = Optimizer::SGD;
  EXPECT_DOUBLE_EQ(staticMemory(P, cfg).staticBytes(), 8 * P);
  cfg.mixedPrecision = true;
  cfg.optimizer = Optimizer::Adam;
  cfg.weightVersions = 3; // PipeDream stashes two extra copies
  EXPECT_DOUBLE_EQ(staticMemory(P, cfg).weightStash, 4 * P);
}

TEST(Memory, TensorParallelSplitsParameters) {
  GptConfig g;
  g.layers = 2;
  g.hidden = 512;
  g.heads = 8;
  g.seqLen = 64;
  g.vocab = 1000;
  ModelDesc m = buildGpt(g);
  double h = g.hidden;
  // One block: 12h^2 + 9h split across TP, 4h (the two norms) replicated.
  EXPECT_NEAR(paramsPerDevice(m, 1, 2, 4), (12 * h * h + 9 * h) / 4 + 4 * h,
              1e-6);
  // The tied logits weight takes memory on the head's stage.
  EXPECT_GT(paramsPerDevice(m, 3, 4, 1), g.vocab * h);
}

TEST(Memory, TiedEmbeddingCountsOncePerDevice) {
  GptConfig g;
  g.layers = 2;
  g.hidden = 64;
  g.heads = 4;
  g.seqLen = 16;
  g.vocab = 100;
  ModelDesc m = buildGpt(g); // embedding, two blocks, the tied head
  double table = g.vocab * g.hidden;
  ASSERT_EQ(m.layers.size(), 4u);
  // One device holding the whole model holds the table once.
  EXPECT_DOUBLE_EQ(paramsPerDevice(m, 0, 4, 1), m.paramCount());
  EXPECT_DOUBLE_EQ(paramsPerDevice(m, 0, 4, 2),
                   paramsPerDevice(m, 0, 3, 2) + paramsPerDevice(m, 3, 4, 2) -
                       table / 2);
  // So does a pipeline rank holding the first and the last chunk (V-shaped
  // schedules); the last stage alone holds its copy.
  ParamSplit ends = paramSplit(m, {LayerRange{0, 1}, LayerRange{3, 4}}, 1, 1);
  EXPECT_DOUBLE_EQ(ends.total(), paramsPerDevice(m, 0, 1, 1) +
                                     paramsPerDevice(m, 3, 4, 1) - table);
  EXPECT_GT(paramsPerDevice(m, 3, 4, 1), table);
}

TEST(RangeTimes, RecomputationAndTensorParallelComm) {
  CostModel cm;
  DeviceSpec d = testDevice();
  GptConfig g;
  g.layers = 2;
  g.hidden = 1024;
  g.heads = 16;
  g.seqLen = 512;
  g.vocab = 1000;
  ModelDesc m = buildGpt(g);
  GroupShape one;
  RangeTimes none = cm.rangeTimes(m, 1, 3, d, one, 2, Recompute::None);
  RangeTimes full = cm.rangeTimes(m, 1, 3, d, one, 2, Recompute::Full);
  RangeTimes sel = cm.rangeTimes(m, 1, 3, d, one, 2, Recompute::Selective);
  EXPECT_DOUBLE_EQ(none.recompute, 0);
  EXPECT_NEAR(full.recompute, none.fwd, 1e-12);
  EXPECT_NEAR(full.bwdInput, none.bwdInput + none.fwd, 1e-12);
  EXPECT_GT(sel.recompute, 0);
  EXPECT_LT(sel.recompute, full.recompute);
  EXPECT_NEAR(full.flops - full.modelFlops, none.modelFlops / 3,
              1e-3 * none.modelFlops);
  // The head is not checkpointed: no recomputation there.
  RangeTimes head = cm.rangeTimes(m, 3, 4, d, one, 2, Recompute::Full);
  EXPECT_DOUBLE_EQ(head.recompute, 0);
  // TP=4: four all-reduces of s*b*h*2 bytes per layer (two forward, two
  // backward), each sending 2(n-1)/n of the buffer.
  GroupShape tp;
  tp.size = 4;
  tp.perNode = 4;
  tp.intra = link(100, 0);
  RangeTimes t = cm.rangeTimes(m, 1, 2, d, tp, 1, Recompute::None);
  double buf = g.seqLen * g.hidden * 2;
  EXPECT_NEAR(t.tpBytes, 4 * 2 * 0.75 * buf, 1);
}

TEST(RangeTimes, AddingIntoTheGradientSumReadsIt) {
  // One weight GEMM of k x n = 4096 x 4096 bf16 parameters; the running sum
  // is fp32 (4 bytes a parameter: 67.1 MB, 67.1 us at 1 TB/s).
  DeviceSpec d = testDevice();
  auto oneOp = [](double rows) {
    ModelDesc m;
    LayerDesc l;
    l.ops.push_back(matmulOp("fc", DType::BF16, 1, rows, 4096, 4096, true));
    m.layers.push_back(l);
    return m;
  };
  const double read = 4096.0 * 4096 * 4 / 1e12;
  ExecConfig x;
  x.gradSumBytes = 4;
  CostModel cm;
  // 8 rows: the weight gradient is memory-bound (it writes 33.5 MB and
  // computes 0.27 GFLOP); adding into the sum takes the read on top.
  ModelDesc thin = oneOp(8);
  EXPECT_NEAR(cm.rangeTimes(thin, 0, 1, d, x).bwdWeightAccumulate, read, 1e-12);
  // 4096 rows: 137 GFLOP at 50 TFLOP/s, 2.7 ms; the read hides under it.
  EXPECT_DOUBLE_EQ(cm.rangeTimes(oneOp(4096), 0, 1, d, x).bwdWeightAccumulate,
                   0);
  // Tensor parallelism splits the parameters and with them the sum.
  ExecConfig split = x;
  split.tp.size = 4;
  EXPECT_NEAR(cm.rangeTimes(thin, 0, 1, d, split).bwdWeightAccumulate, read / 4,
              1e-12);
  // No running sum, no read.
  EXPECT_DOUBLE_EQ(
      cm.rangeTimes(thin, 0, 1, d, ExecConfig{}).bwdWeightAccumulate, 0);
  // A profiled time was measured without the read: it is added.
  ProfileDB db = llvm::cantFail(ProfileDB::parse(
      R"({"version": 1, "entries": [{"device": "test", "signature":
          "matmul:bf16:b=1,m=4096,n=4096,k=4096,w", "micro_batch": 1,
          "tp": 1, "bwd_weight_s": 0.003}]})",
      "p.json"));
  CostModel measured(&db);
  RangeTimes t = measured.rangeTimes(oneOp(4096), 0, 1, d, x);
  EXPECT_DOUBLE_EQ(t.bwdWeight, 0.003);
  EXPECT_NEAR(t.bwdWeightAccumulate, read, 1e-12);
}

TEST(BoundaryMessage, ScatterGatherSplitsOnlyWholeFloatTensorsTpDivides) {
  // A [2, 3] f32 hidden state (24 bytes per sample) and a [3] i64 mask
  // leave the layer, per sample.
  LayerDesc l;
  l.boundaryBytes = 48;
  l.boundaryTensors = {{24, 6, true}, {24, 3, false}};
  auto msg = [&](unsigned mbs, unsigned tp, bool sg, bool sp = false) {
    return boundaryMessage(l, mbs, tp, /*cp=*/1, sg, sp);
  };
  // tp = 2 divides the hidden state's 6 elements: 1/2 of it and the
  // gather of the whole; the mask goes whole.
  EXPECT_EQ(msg(1, 2, true).bytes, 12 + 24);
  EXPECT_EQ(msg(1, 2, true).gatherBytes, 24);
  // sg=0: everything whole, no gather.
  EXPECT_EQ(msg(1, 2, false).bytes, 48);
  EXPECT_EQ(msg(1, 2, false).gatherBytes, 0);
  // tp = 4 divides 12 elements (two samples), not 6 (one).
  EXPECT_EQ(msg(1, 4, true).bytes, 48);
  EXPECT_EQ(msg(1, 4, true).gatherBytes, 0);
  EXPECT_EQ(msg(2, 4, true).bytes, 12 + 48);
  EXPECT_EQ(msg(2, 4, true).gatherBytes, 48);
  // Under sequence parallelism a layer that does not split by tokens
  // (no op of a Megatron region) has its output whole on every tensor
  // rank: it goes by scatter/gather as without (with sg=0, whole).
  EXPECT_FALSE(sequenceSplits(l, 2));
  EXPECT_EQ(msg(1, 2, true, true).bytes, 12 + 24);
  EXPECT_EQ(msg(1, 2, true, true).gatherBytes, 24);
  EXPECT_EQ(msg(1, 2, false, true).bytes, 48);
  EXPECT_EQ(msg(1, 2, false, true).gatherBytes, 0);
  // The analytic builders' one tensor: every tp divides it.
  l.boundaryTensors.clear();
  EXPECT_EQ(msg(1, 4, true).bytes, 12);
  EXPECT_EQ(msg(1, 4, true).gatherBytes, 48);
  EXPECT_EQ(boundaryMessage(l, 1, 4, /*cp=*/2, true, false).bytes, 6);
}

TEST(TensorParallel, ARegionTheDegreeDoesNotDivideIsPricedWhole) {
  // An LM head of 255 columns (the vocabulary), its input gradient summed
  // over the tensor group: tp = 5 splits it, tp = 2 keeps it whole on
  // every rank (dist-tensor-parallel cannot split 255 columns two ways).
  OpDesc head = matmulOp("head", DType::F32, 1, 32, 255, 64, true);
  head.tpAllReduceBwdBytes = 32 * 64 * 4;
  head.tpDivisor = 255;
  EXPECT_EQ(head.tpMode(1), TpMode::Split);
  EXPECT_EQ(head.tpMode(5), TpMode::Split);
  EXPECT_EQ(head.tpMode(2), TpMode::Replicated);
  EXPECT_EQ(paramSplit(head, 5, 1).total(), head.params / 5);
  EXPECT_EQ(paramSplit(head, 2, 1).total(), head.params);
  LayerDesc l;
  l.ops = {head};
  EXPECT_TRUE(sequenceSplits(l, 5));
  EXPECT_FALSE(sequenceSplits(l, 2));
  Cluster c = llvm::cantFail(getPreset("dgx-a100-80gb", 1));
  CostModel cm;
  for (unsigned tp : {2u, 5u}) {
    SCOPED_TRACE(tp);
    ExecConfig x;
    x.tp.size = x.tp.perNode = tp;
    x.tp.intra = c.linkBetween(0, 1);
    bool split = tp == 5;
    EXPECT_EQ(CostModel::shareOf(head, x), split ? 1.0 / tp : 1.0);
    EXPECT_EQ(cm.layerTimes(l, c.devices[0], x).tpBytes > 0, split);
  }
}

TEST(Units, NumbersAndTheirUnits) {
  auto split = [](llvm::StringRef t) { return splitNumber(t); };
  ASSERT_TRUE(split("80GB"));
  EXPECT_EQ(*split("80GB"), std::make_pair(80.0, llvm::StringRef("GB")));
  EXPECT_EQ(*split(" 1e9 "), std::make_pair(1e9, llvm::StringRef("")));
  EXPECT_EQ(*split("4.2 ms"), std::make_pair(4.2, llvm::StringRef("ms")));
  EXPECT_EQ(*split("1.28M"), std::make_pair(1.28, llvm::StringRef("M")));
  // The 'e' of a unit is no exponent.
  EXPECT_EQ(*split("5eb"), std::make_pair(5.0, llvm::StringRef("eb")));
  EXPECT_FALSE(split("GB"));
  EXPECT_FALSE(split("1e999"));
  EXPECT_DOUBLE_EQ(llvm::cantFail(parseByteSize("40GiB")), 40.0 * (1 << 30));
  EXPECT_DOUBLE_EQ(llvm::cantFail(parseByteSize("512mb")), 512e6);
  EXPECT_TRUE(llvm::errorToBool(parseByteSize("-5GB").takeError()));
  EXPECT_TRUE(llvm::errorToBool(parseByteSize("5furlongs").takeError()));
}

TEST(ProfileDB, OverridesAnalyticTimes) {
  const char *json = R"({"version": 1, "entries": [
    {"device": "test", "signature": "matmul:bf16:b=1,m=8,n=8,k=8,w",
     "micro_batch": 2, "tp": 1, "fwd_s": 0.5, "bwd_weight_s": 0.25}]})";
  ProfileDB db = llvm::cantFail(ProfileDB::parse(json, "p.json"));
  EXPECT_EQ(db.size(), 1u);
  CostModel cm(&db);
  DeviceSpec d = testDevice();
  OpDesc op = matmulOp("fc", DType::BF16, 1, 8, 8, 8, true);
  EXPECT_DOUBLE_EQ(cm.opTime(op, Phase::Forward, d, 1, 2), 0.5);
  EXPECT_DOUBLE_EQ(cm.opTime(op, Phase::BackwardWeight, d, 1, 2), 0.25);
  // Missing phase, batch or TP degree: analytic.
  CostModel analytic;
  EXPECT_DOUBLE_EQ(cm.opTime(op, Phase::BackwardInput, d, 1, 2),
                   analytic.opTime(op, Phase::BackwardInput, d, 1, 2));
  EXPECT_DOUBLE_EQ(cm.opTime(op, Phase::Forward, d, 1, 1),
                   analytic.opTime(op, Phase::Forward, d, 1, 1));
  // Written and read back unchanged.
  std::string out;
  llvm::raw_string_ostream os(out);
  db.write(os);
  ProfileDB back = llvm::cantFail(ProfileDB::parse(out, "back.json"));
  std::optional<double> f =
      back.lookup("test", op.signature, 2, 1, Phase::Forward);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(*f, 0.5);
}

TEST(ProfileDB, HoldsUnderContextParallelismForWholeSequenceOps) {
  // A measurement is of the whole sequence: under cp it still holds for an
  // op every context rank runs whole (a MoE block's routing), not for one
  // that runs on the rank's part of the tokens.
  const char *json = R"({"version": 1, "entries": [
    {"device": "test", "signature": "data_movement:bf16:n=4096",
     "micro_batch": 1, "tp": 1, "fwd_s": 0.5}]})";
  ProfileDB db = llvm::cantFail(ProfileDB::parse(json, "p.json"));
  CostModel cm(&db), analytic;
  DeviceSpec d = testDevice();
  OpDesc split = dataMovementOp("dispatch", DType::BF16, 4096);
  ASSERT_EQ(split.signature, "data_movement:bf16:n=4096");
  OpDesc whole = split;
  whole.wholeSequence = true;
  ExecConfig cp;
  cp.cp.size = 2;
  EXPECT_DOUBLE_EQ(cm.opTime(whole, Phase::Forward, d, cp), 0.5);
  EXPECT_DOUBLE_EQ(cm.opTime(split, Phase::Forward, d, cp),
                   analytic.opTime(split, Phase::Forward, d, cp));
  EXPECT_NE(cm.opTime(split, Phase::Forward, d, cp), 0.5);
}

TEST(ProfileDB, OptimizerStepPerParameter) {
  const char *json = R"({"version": 1, "entries": [],
    "optimizer": [{"device": "test", "seconds_per_parameter": 2e-9}]})";
  ProfileDB db = llvm::cantFail(ProfileDB::parse(json, "p.json"));
  CostModel cm(&db), analytic;
  DeviceSpec d = testDevice();
  EXPECT_DOUBLE_EQ(cm.optimizerTime(1e6, 28, d), 2e-3);
  // Another device kind: the analytic memory-bound pass.
  DeviceSpec other = d;
  other.name = "other";
  EXPECT_DOUBLE_EQ(cm.optimizerTime(1e6, 28, other),
                   analytic.optimizerTime(1e6, 28, other));
  EXPECT_GT(analytic.optimizerTime(1e6, 28, d), 0);
  std::string out;
  llvm::raw_string_ostream os(out);
  db.write(os);
  ProfileDB back = llvm::cantFail(ProfileDB::parse(out, "back.json"));
  EXPECT_EQ(back.optimizerPerParameter("test"), 2e-9);
  auto bad = ProfileDB::parse(R"({"version": 1, "entries": [],
    "optimizer": [{"device": "x", "seconds_per_parameter": -1}]})",
                              "p.json");
  ASSERT_FALSE(static_cast<bool>(bad));
  EXPECT_NE(llvm::toString(bad.takeError()).find("optimizer[0]"),
            std::string::npos);
}

TEST(ProfileDB, MeanOfRuns) {
  ProfileDB a, b;
  a.add("d", "s", 2, 1, {1.0, -1, 4.0});
  b.add("d", "s", 2, 1, {3.0, 2.0, -1});
  b.add("d", "s", 4, 1, {5.0, -1, -1});
  a.setOptimizerPerParameter("d", 1e-9);
  b.setOptimizerPerParameter("d", 3e-9);
  ProfileDB m = ProfileDB::mean({a, b});
  EXPECT_EQ(m.size(), 2u);
  EXPECT_EQ(m.lookup("d", "s", 2, 1, Phase::Forward), 2.0);
  EXPECT_EQ(m.lookup("d", "s", 2, 1, Phase::BackwardInput), 2.0);
  EXPECT_EQ(m.lookup("d", "s", 2, 1, Phase::BackwardWeight), 4.0);
  EXPECT_EQ(m.lookup("d", "s", 4, 1, Phase::Forward), 5.0);
  EXPECT_DOUBLE_EQ(*m.optimizerPerParameter("d"), 2e-9);
}

TEST(ProfileDB, ErrorsSayWhatAndWhere) {
  auto err = [](const char *text) {
    auto db = ProfileDB::parse(text, "p.json");
    EXPECT_FALSE(static_cast<bool>(db)) << text;
    return db ? std::string() : llvm::toString(db.takeError());
  };
  EXPECT_NE(err("{").find("p.json: invalid JSON"), std::string::npos);
  EXPECT_NE(err("[]").find("top level"), std::string::npos);
  EXPECT_NE(err(R"({"version": 2, "entries": []})").find("'version'"),
            std::string::npos);
  EXPECT_NE(err(R"({"version": 1})").find("'entries'"), std::string::npos);
  EXPECT_NE(
      err(R"({"version": 1, "entries": [{"device": "x"}]})").find("entries[0]"),
      std::string::npos);
  EXPECT_NE(err(R"({"version": 1, "entries": [{"device": "x",
      "signature": "s", "micro_batch": 1}]})")
                .find("at least one of"),
            std::string::npos);
  EXPECT_NE(err(R"({"version": 1, "entries": [{"device": "x",
      "signature": "s", "micro_batch": 0, "fwd_s": 1}]})")
                .find("micro_batch"),
            std::string::npos);
  EXPECT_NE(err(R"({"version": 1, "entries": [{"device": "x",
      "signature": "s", "micro_batch": 1, "fwd_s": -1}]})")
                .find("'fwd_s' must be"),
            std::string::npos);
  EXPECT_NE(llvm::toString(ProfileDB::load("/nonexistent.json").takeError())
                .find("profile database: '/nonexistent.json' cannot be read"),
            std::string::npos);
}

TEST(ProfileDB, LoadReadsTheFileAndSaysWhereItIsNotJSON) {
  auto file = [](const char *text) {
    llvm::SmallString<128> path;
    EXPECT_FALSE(llvm::sys::fs::createTemporaryFile("profile", "json", path));
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    os << text;
    return std::string(path);
  };
  std::string good = file(R"({"version": 1, "entries": [{"device": "d",
      "signature": "s", "micro_batch": 2, "fwd_s": 3}]})");
  llvm::Expected<ProfileDB> db = ProfileDB::load(good);
  ASSERT_TRUE(static_cast<bool>(db)) << llvm::toString(db.takeError());
  EXPECT_EQ(db->lookup("d", "s", 2, 1, Phase::Forward), 3.0);
  // The structure's errors still name the file.
  std::string old = file(R"({"version": 2, "entries": []})");
  EXPECT_EQ(llvm::toString(ProfileDB::load(old).takeError()),
            old + ": 'version' must be 1");
  // Not JSON: the position of the problem, and what a database is.
  std::string bad = file("{\"version\": 1,\n  \"entries\": [}");
  std::string e = llvm::toString(ProfileDB::load(bad).takeError());
  EXPECT_EQ(e.find("profile database: '" + bad + "' is not JSON: [2:"), 0u)
      << e;
  EXPECT_NE(e.find("; a profile database is {\"version\": 1"),
            std::string::npos)
      << e;
  for (const std::string &p : {good, old, bad})
    llvm::sys::fs::remove(p);
}

} // namespace

namespace {
/// nccl-tests bus bandwidth of an all-reduce: S * 2(n-1)/n / time.
double busBandwidth(const GroupShape &g, double S) {
  double t = CostModel::collective(Collective::AllReduce, S, g).time;
  return S * 2 * (g.size - 1) / g.size / t;
}

TEST(Collectives, ReproducePublishedNcclBusBandwidth) {
  Cluster a = llvm::cantFail(getPreset("dgx-a100-80gb", 3));
  GroupShape node;
  node.size = node.perNode = 8;
  node.intra = a.groups[0].intraNode;
  node.inter = a.network;
  // One DGX A100: ~230 GB/s.
  EXPECT_NEAR(busBandwidth(node, 1e9) / 1e9, 230, 5);
  // Three DGX A100 nodes with 4 HDR NICs each (12.5 GB/s per GPU):
  // nccl-tests measured ~85-96 GB/s.
  GroupShape three = node;
  three.size = 24;
  three.inter.bandwidth = 12.5e9;
  double bw = busBandwidth(three, 1e9) / 1e9;
  EXPECT_GE(bw, 85);
  EXPECT_LE(bw, 96);
  // One H100 node, ring: ~365-370 GB/s; H200 with NVLS: ~450-475.
  Cluster h = llvm::cantFail(getPreset("dgx-h100"));
  node.intra = h.groups[0].intraNode;
  EXPECT_NEAR(busBandwidth(node, 1e9) / 1e9, 369, 5);
  Cluster h2 = llvm::cantFail(getPreset("dgx-h200"));
  node.intra = h2.groups[0].intraNode;
  EXPECT_NEAR(busBandwidth(node, 1e9) / 1e9, 450, 25);
}
} // namespace

namespace {
/// Every field of two RangeTimes, bit for bit.
void expectSameTimes(const RangeTimes &a, const RangeTimes &b) {
  EXPECT_EQ(a.fwd, b.fwd);
  EXPECT_EQ(a.bwdInput, b.bwdInput);
  EXPECT_EQ(a.bwdWeight, b.bwdWeight);
  EXPECT_EQ(a.bwdWeightAccumulate, b.bwdWeightAccumulate);
  EXPECT_EQ(a.recompute, b.recompute);
  EXPECT_EQ(a.flops, b.flops);
  EXPECT_EQ(a.modelFlops, b.modelFlops);
  EXPECT_EQ(a.tpBytes, b.tpBytes);
  EXPECT_EQ(a.fwdComm, b.fwdComm);
  EXPECT_EQ(a.bwdComm, b.bwdComm);
  EXPECT_EQ(a.linkBytes[0], b.linkBytes[0]);
  EXPECT_EQ(a.linkBytes[1], b.linkBytes[1]);
}
} // namespace

TEST(LayerTimesCache, GivesTheCostModelsRangeTimesBitForBit) {
  GptConfig cfg;
  cfg.layers = 6;
  cfg.hidden = 1024;
  cfg.heads = 16;
  cfg.seqLen = 512;
  ModelDesc m = buildGpt(cfg);
  CostModel cm;
  DeviceSpec d = testDevice(), other = testDevice();
  other.peakFlops[static_cast<unsigned>(DType::BF16)] = 50e12;
  LayerTimesCache cache(m, cm);
  // The transformer blocks are one class; the embedding and the head are
  // their own.
  unsigned n = m.layers.size();
  EXPECT_EQ(cache.classOf(2), cache.classOf(1));
  EXPECT_EQ(cache.classOf(cfg.layers), cache.classOf(1));
  EXPECT_NE(cache.classOf(0), cache.classOf(1));
  EXPECT_NE(cache.classOf(n - 1), cache.classOf(1));
  EXPECT_EQ(cache.classCount(), 3u);
  for (unsigned tp : {1u, 4u})
    for (Recompute rec : {Recompute::None, Recompute::Full})
      for (double sum : {0.0, 4.0}) {
        ExecConfig x;
        x.tp.size = x.tp.perNode = tp;
        x.tp.intra = x.tp.inter = link(100, 5);
        x.recompute = rec;
        x.mbs = 2;
        x.gradSumBytes = sum;
        for (const DeviceSpec *dev : {&d, &other})
          for (auto [b, e] : {std::pair{0u, n}, {1u, 4u}, {3u, n}, {2u, 3u}}) {
            SCOPED_TRACE(testing::Message() << "tp " << tp << " layers [" << b
                                            << ", " << e << ")");
            expectSameTimes(cache.range(b, e, *dev, x),
                            cm.rangeTimes(m, b, e, *dev, x));
          }
      }
  // Another device and another configuration give other times.
  ExecConfig x;
  EXPECT_NE(cache.range(0, n, d, x).fwd, cache.range(0, n, other, x).fwd);
  x.mbs = 4;
  EXPECT_NE(cache.range(0, n, d, x).fwd, cm.rangeTimes(m, 0, n, d, {}).fwd);
}

TEST(LayerTimesCache, ALayerThatKeepsItsPrecisionIsItsOwnClass) {
  GptConfig cfg;
  cfg.layers = 2;
  ModelDesc m = buildGpt(cfg);
  ASSERT_EQ(layerCostKey(m.layers[1]), layerCostKey(m.layers[2]));
  m.layers[2].ops[0].keepsPrecision = !m.layers[2].ops[0].keepsPrecision;
  EXPECT_NE(layerCostKey(m.layers[1]), layerCostKey(m.layers[2]));
  CostModel cm;
  LayerTimesCache cache(m, cm);
  EXPECT_NE(cache.classOf(2), cache.classOf(1));
}

/// A layer split by channels is one sequence parallelism leaves whole
/// (sequenceSplits), so it costs otherwise under sp than a layer the same
/// but for that mark.
TEST(LayerTimesCache, ALayerSplitByChannelsIsItsOwnClass) {
  GptConfig cfg;
  cfg.layers = 2;
  ModelDesc m = buildGpt(cfg);
  ASSERT_EQ(layerCostKey(m.layers[1]), layerCostKey(m.layers[2]));
  for (OpDesc &op : m.layers[2].ops)
    op.channelSplit = true;
  EXPECT_NE(layerCostKey(m.layers[1]), layerCostKey(m.layers[2]));
  CostModel cm;
  LayerTimesCache cache(m, cm);
  EXPECT_NE(cache.classOf(2), cache.classOf(1));
  ExecConfig x;
  x.tp.size = x.tp.perNode = 2;
  x.tp.intra = x.tp.inter = link(100, 1);
  x.sp = true;
  DeviceSpec d = testDevice();
  EXPECT_NE(cache.range(2, 3, d, x).fwd, cache.range(1, 2, d, x).fwd);
  expectSameTimes(cache.range(2, 3, d, x), cm.rangeTimes(m, 2, 3, d, x));
}

TEST(LayerTimesCache, GivesParamSplitBitForBit) {
  GptConfig cfg;
  cfg.layers = 4;
  cfg.hidden = 512;
  cfg.heads = 8;
  ModelDesc m = buildGpt(cfg);
  unsigned n = m.layers.size();
  // The head reads the embedding's table: counted once where a device
  // holds both layers.
  OpDesc tied = m.layers[0].ops[0];
  tied.tiedLayer = 0;
  tied.params = 1234567;
  m.layers[n - 1].ops.push_back(tied);
  CostModel cm;
  LayerTimesCache cache(m, cm);
  using Ranges = std::vector<LayerRange>;
  for (unsigned tp : {1u, 2u, 8u})
    for (const Ranges &r :
         {Ranges{{0, n}}, Ranges{{1, 3}}, Ranges{{n - 1, n}},
          Ranges{{0, 1}, {n - 1, n}}, Ranges{{2, 4}, {4, n}}}) {
      ParamSplit a = cache.params(r, tp, 1), b = paramSplit(m, r, tp, 1);
      EXPECT_EQ(a.dense, b.dense);
      EXPECT_EQ(a.expert, b.expert);
    }
  ParamSplit both = cache.params(Ranges{{0, 1}, {n - 1, n}}, 1, 1);
  ParamSplit head = cache.params(Ranges{{n - 1, n}}, 1, 1);
  ParamSplit embedding = cache.params(Ranges{{0, 1}}, 1, 1);
  double tiedParams = 0;
  for (const OpDesc &op : m.layers[n - 1].ops)
    if (op.tiedLayer == 0)
      tiedParams += op.params;
  EXPECT_GE(tiedParams, tied.params);
  EXPECT_DOUBLE_EQ(both.total(), head.total() + embedding.total() - tiedParams);
}
