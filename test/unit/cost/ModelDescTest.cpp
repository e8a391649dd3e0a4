//===- ModelDescTest.cpp - FLOP, parameter and activation formulas -*- C++ -*-//

#include "lib/Cost/ModelDesc.h"
#include "lib/Cost/CostModel.h"

#include "gtest/gtest.h"

using namespace distopt::cost;
using distopt::cluster::DType;
using distopt::cluster::OpClass;

namespace {

TEST(OpBuilders, LinearLayerBackwardIsTwiceForward) {
  OpDesc op = matmulOp("fc", DType::BF16, 1, 128, 256, 64, true, true);
  EXPECT_DOUBLE_EQ(op.fwd.flops, 2.0 * 128 * 256 * 64);
  EXPECT_DOUBLE_EQ(op.bwdInput.flops, op.fwd.flops);
  EXPECT_DOUBLE_EQ(op.bwdWeight.flops, op.fwd.flops);
  EXPECT_DOUBLE_EQ(op.params, 64.0 * 256 + 256);
  EXPECT_DOUBLE_EQ(op.paramBytes(), (64.0 * 256 + 256) * 2);
  // Reads X and W, writes Y.
  EXPECT_DOUBLE_EQ(op.fwd.bytesRead, (128.0 * 64 + 64 * 256) * 2);
  EXPECT_DOUBLE_EQ(op.fwd.bytesWritten, 128.0 * 256 * 2);
  EXPECT_DOUBLE_EQ(op.savedBytes, 128.0 * 64 * 2);
  EXPECT_EQ(op.cls, OpClass::MatMul);
  EXPECT_EQ(op.signature, "matmul:bf16:b=1,m=128,n=256,k=64,w");
}

TEST(OpBuilders, ActivationMatmulHasOnlyInputGradients) {
  OpDesc op = matmulOp("scores", DType::F32, 4, 16, 16, 8, false);
  EXPECT_DOUBLE_EQ(op.fwd.flops, 2.0 * 4 * 16 * 16 * 8);
  EXPECT_DOUBLE_EQ(op.bwdInput.flops, 2 * op.fwd.flops);
  EXPECT_DOUBLE_EQ(op.bwdWeight.flops, 0);
  EXPECT_DOUBLE_EQ(op.params, 0);
}

TEST(OpBuilders, ConvolutionShapes) {
  // 3x3 stride 1 pad 1 keeps 32x32; 64 -> 128 channels.
  OpDesc op = convOp("conv", DType::F32, 64, 32, 32, 128, 3, 3, 1, 1);
  EXPECT_DOUBLE_EQ(op.fwd.flops, 2.0 * 128 * 32 * 32 * 64 * 9);
  EXPECT_DOUBLE_EQ(op.params, 128.0 * 64 * 9 + 128);
  EXPECT_DOUBLE_EQ(op.fwd.bytesWritten, 128.0 * 32 * 32 * 4);
  // Stride 2 halves the output; groups divide FLOPs and weights.
  OpDesc dw = convOp("dw", DType::F32, 64, 32, 32, 64, 3, 3, 2, 1, 64, false);
  EXPECT_DOUBLE_EQ(dw.fwd.bytesWritten, 64.0 * 16 * 16 * 4);
  EXPECT_DOUBLE_EQ(dw.params, 64.0 * 9);
}

TEST(OpBuilders, MemoryBoundOps) {
  OpDesc n = normOp("ln", DType::BF16, 10, 100);
  EXPECT_DOUBLE_EQ(n.params, 200);
  EXPECT_DOUBLE_EQ(n.fwd.bytesWritten, 1000.0 * 2);
  OpDesc s = softmaxOp("sm", DType::F32, 10, 100);
  EXPECT_DOUBLE_EQ(s.fwd.bytesRead + s.fwd.bytesWritten, 2 * 1000.0 * 4);
  OpDesc e = embeddingOp("emb", DType::BF16, 16, 1000, 64);
  EXPECT_DOUBLE_EQ(e.params, 64000);
  EXPECT_DOUBLE_EQ(e.fwd.flops, 0);
  EXPECT_GT(e.bwdWeight.bytes(), 0);
  OpDesc d = dataMovementOp("t", DType::F32, 50);
  EXPECT_DOUBLE_EQ(d.fwd.bytes(), 400);
  OpDesc l = lossOp("ce", DType::F32, 8, 10);
  EXPECT_EQ(l.cls, OpClass::Loss);
  OpDesc r = reductionOp("sum", DType::F32, 100, 1);
  EXPECT_DOUBLE_EQ(r.fwd.bytesRead, 400);
}

GptConfig smallGpt() {
  GptConfig g;
  g.layers = 4;
  g.hidden = 256;
  g.heads = 4;
  g.seqLen = 128;
  g.vocab = 1000;
  return g;
}

TEST(Gpt, ParameterCountMatchesMegatronFormula) {
  for (GptConfig g : {smallGpt(), GptConfig()}) {
    ModelDesc m = buildGpt(g);
    EXPECT_EQ(m.layers.size(), g.layers + 2);
    // The formula leaves out the final layer norm (2h).
    EXPECT_NEAR(m.paramCount(), gptParamCount(g) + 2 * g.hidden,
                1e-9 * m.paramCount());
  }
  // 1T row of Megatron Table 1: 1008.0 B.
  GptConfig t;
  t.layers = 128;
  t.hidden = 25600;
  t.heads = 160;
  EXPECT_NEAR(gptParamCount(t) / 1e9, 1008.0, 1.0);
}

TEST(Gpt, MatmulFlopsMatchMegatronFormula) {
  GptConfig g = smallGpt();
  ModelDesc m = buildGpt(g);
  double mm = 0;
  for (const LayerDesc &l : m.layers)
    for (const OpDesc &op : l.ops)
      if (op.cls == OpClass::MatMul)
        mm += op.fwd.flops + op.bwdInput.flops + op.bwdWeight.flops;
  // Per sample, without recomputation: 72 s l h^2 (1 + s/6h) + 6 s h V.
  EXPECT_NEAR(mm, gptFlopsPerIteration(g, 1, false), 1e-9 * mm);
  double s = g.seqLen, h = g.hidden, l = g.layers, v = g.vocab;
  EXPECT_NEAR(gptFlopsPerIteration(g, 1, true),
              96 * s * l * h * h * (1 + s / (6 * h) + v / (16 * l * h)),
              1e-6 * mm);
}

TEST(Gpt, ActivationBytesMatchKorthikanti) {
  GptConfig g = smallGpt();
  ModelDesc m = buildGpt(g);
  const double s = g.seqLen, h = g.hidden, a = g.heads;
  for (unsigned t : {1u, 2u, 4u}) {
    for (unsigned b : {1u, 3u}) {
      MemoryConfig cfg;
      cfg.tp = t;
      double none = activationBytes(m, 1, 2, b, cfg);
      EXPECT_NEAR(none, s * b * h * (10 + 24.0 / t + 5 * a * s / (h * t)),
                  1e-6 * none)
          << "t=" << t;
      cfg.recompute = Recompute::Selective;
      EXPECT_NEAR(activationBytes(m, 1, 2, b, cfg), s * b * h * (10 + 24.0 / t),
                  1e-6 * none);
      cfg.recompute = Recompute::Full;
      EXPECT_NEAR(activationBytes(m, 1, 2, b, cfg), 2 * s * b * h, 1e-6);
    }
  }
  // No parallelism: s b h (34 + 5 a s / h).
  MemoryConfig one;
  EXPECT_NEAR(activationBytes(m, 1, 2, 1, one), s * h * (34 + 5 * a * s / h),
              1e-3);
}

} // namespace
