//===- Models.cpp - Analytic models for the search bench --------*- C++ -*-===//

#include "bench/search/Models.h"

#include "llvm/Support/FormatVariadic.h"

using namespace distopt;
using namespace distopt::cost;

namespace distopt::bench {

namespace {
/// Appends a layer whose output is \p outElems elements per sample.
void push(ModelDesc &m, LayerDesc l, double outElems, DType dt) {
  l.boundaryBytes = outElems * cluster::dtypeBytes(dt);
  l.name = llvm::formatv("layer{0} ({1})", m.layers.size(),
                         l.ops.empty() ? "" : l.ops.front().name)
               .str();
  m.layers.push_back(std::move(l));
}
/// The op builders mark ops splittable under tensor parallelism without
/// communication; Megatron-style TP does not apply to these networks, so
/// every op is replicated (tp > 1 only wastes devices).
ModelDesc replicated(ModelDesc m) {
  for (LayerDesc &l : m.layers)
    for (OpDesc &op : l.ops)
      op.tp = TpMode::Replicated;
  return m;
}
} // namespace

ModelDesc buildVgg16(DType dt) {
  ModelDesc m;
  m.name = "vgg16";
  m.sampleUnit = "image";
  struct Block {
    unsigned convs, channels;
  };
  const Block blocks[] = {{2, 64}, {2, 128}, {3, 256}, {3, 512}, {3, 512}};
  double c = 3, hw = 224;
  unsigned idx = 0;
  for (const Block &b : blocks) {
    for (unsigned i = 0; i < b.convs; ++i) {
      LayerDesc l;
      std::string name = llvm::formatv("conv{0}", ++idx).str();
      l.ops.push_back(convOp(name, dt, c, hw, hw, b.channels, 3, 3, 1, 1));
      double out = b.channels * hw * hw;
      l.ops.push_back(elementwiseOp(name + ".relu", dt, out));
      c = b.channels;
      if (i + 1 == b.convs) {
        l.ops.push_back(reductionOp(name + ".pool", dt, out, out / 4));
        hw /= 2;
      }
      push(m, std::move(l), c * hw * hw, dt);
    }
  }
  const double fc[][2] = {{25088, 4096}, {4096, 4096}, {4096, 1000}};
  for (unsigned i = 0; i < 3; ++i) {
    LayerDesc l;
    std::string name = llvm::formatv("fc{0}", i + 1).str();
    l.ops.push_back(matmulOp(name, dt, 1, 1, fc[i][1], fc[i][0], true, true));
    if (i < 2)
      l.ops.push_back(elementwiseOp(name + ".relu", dt, fc[i][1]));
    else
      l.ops.push_back(lossOp("loss", dt, 1, 1000));
    push(m, std::move(l), fc[i][1], dt);
  }
  m.layers.back().boundaryBytes = 0;
  return replicated(std::move(m));
}

ModelDesc buildResnet50(DType dt) {
  ModelDesc m;
  m.name = "resnet50";
  m.sampleUnit = "image";
  LayerDesc stem;
  stem.ops.push_back(convOp("conv1", dt, 3, 224, 224, 64, 7, 7, 2, 3));
  stem.ops.push_back(normOp("bn1", dt, 112 * 112, 64));
  stem.ops.push_back(elementwiseOp("relu1", dt, 64 * 112 * 112));
  stem.ops.push_back(reductionOp("pool1", dt, 64 * 112 * 112, 64 * 56 * 56));
  push(m, std::move(stem), 64 * 56 * 56, dt);
  const unsigned counts[] = {3, 4, 6, 3}, widths[] = {64, 128, 256, 512};
  double cin = 64, hw = 56;
  for (unsigned s = 0; s < 4; ++s) {
    for (unsigned b = 0; b < counts[s]; ++b) {
      double w = widths[s], cout = 4 * w;
      unsigned stride = (b == 0 && s > 0) ? 2 : 1;
      double out = hw / stride;
      std::string n = llvm::formatv("res{0}.{1}", s + 2, b).str();
      LayerDesc l;
      l.ops.push_back(convOp(n + ".a", dt, cin, hw, hw, w, 1, 1, 1, 0, 1,
                             false));
      l.ops.push_back(normOp(n + ".bn_a", dt, hw * hw, w));
      l.ops.push_back(convOp(n + ".b", dt, w, hw, hw, w, 3, 3, stride, 1, 1,
                             false));
      l.ops.push_back(normOp(n + ".bn_b", dt, out * out, w));
      l.ops.push_back(convOp(n + ".c", dt, w, out, out, cout, 1, 1, 1, 0, 1,
                             false));
      l.ops.push_back(normOp(n + ".bn_c", dt, out * out, cout));
      if (b == 0)
        l.ops.push_back(convOp(n + ".proj", dt, cin, hw, hw, cout, 1, 1,
                               stride, 0, 1, false));
      l.ops.push_back(elementwiseOp(n + ".add_relu", dt, cout * out * out, 2));
      cin = cout;
      hw = out;
      push(m, std::move(l), cout * hw * hw, dt);
    }
  }
  LayerDesc head;
  head.ops.push_back(reductionOp("avgpool", dt, 2048 * 49, 2048));
  head.ops.push_back(matmulOp("fc", dt, 1, 1, 1000, 2048, true, true));
  head.ops.push_back(lossOp("loss", dt, 1, 1000));
  push(m, std::move(head), 0, dt);
  return replicated(std::move(m));
}

ModelDesc buildGnmtLike(DType dt) {
  ModelDesc m;
  m.name = "gnmt-like";
  m.sampleUnit = "sentence";
  const double seq = 50, h = 1024, vocab = 32000;
  LayerDesc emb;
  emb.ops.push_back(embeddingOp("embed", dt, seq, vocab, h));
  push(m, std::move(emb), seq * h, dt);
  for (unsigned i = 0; i < 16; ++i) {
    std::string n =
        llvm::formatv("{0}{1}", i < 8 ? "enc" : "dec", i % 8).str();
    LayerDesc l;
    // Gates: [x_t, h_{t-1}] (2h) times W (2h x 4h), all steps.
    l.ops.push_back(matmulOp(n + ".gates", dt, 1, seq, 4 * h, 2 * h, true,
                             true));
    l.ops.push_back(elementwiseOp(n + ".cell", dt, seq * 4 * h, 2, 4));
    push(m, std::move(l), seq * h, dt);
  }
  LayerDesc out;
  out.ops.push_back(matmulOp("softmax.proj", dt, 1, seq, vocab, h, true));
  out.ops.push_back(lossOp("loss", dt, seq, vocab));
  push(m, std::move(out), 0, dt);
  return replicated(std::move(m));
}

ModelDesc buildBertLarge() {
  GptConfig g;
  g.layers = 24;
  g.hidden = 1024;
  g.heads = 16;
  g.seqLen = 512;
  g.vocab = 30522;
  ModelDesc m = buildGpt(g);
  m.name = "bert-large";
  return m;
}

} // namespace distopt::bench
