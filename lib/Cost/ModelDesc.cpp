//===- ModelDesc.cpp - Op builders and the GPT model ------------*- C++ -*-===//
//
// Analytic per-sample costs from shapes. Backward rules: a linear layer's
// input gradient and weight gradient each cost one forward's FLOPs; an
// activation-activation matmul has two input gradients; elementwise, norm and
// softmax backward read the output gradient plus what the forward saved.
//
//===----------------------------------------------------------------------===//

#include "lib/Cost/ModelDesc.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

using namespace llvm;

namespace distopt::cost {

PhaseCost &PhaseCost::operator+=(const PhaseCost &o) {
  flops += o.flops;
  bytesRead += o.bytesRead;
  bytesWritten += o.bytesWritten;
  return *this;
}

PhaseCost PhaseCost::scaled(double k) const {
  return {flops * k, bytesRead * k, bytesWritten * k};
}

const PhaseCost &OpDesc::phase(Phase p) const {
  switch (p) {
  case Phase::Forward:
    return fwd;
  case Phase::BackwardInput:
    return bwdInput;
  case Phase::BackwardWeight:
    return bwdWeight;
  }
  return fwd;
}

double OpDesc::paramBytes() const {
  return params * cluster::dtypeBytes(dtype);
}

TpMode OpDesc::tpMode(unsigned degree) const {
  return tpDivides(degree) ? tp : TpMode::Replicated;
}

PhaseCost LayerDesc::total(Phase p) const {
  PhaseCost c;
  for (const OpDesc &op : ops)
    c += op.phase(p);
  return c;
}

double LayerDesc::params() const {
  double n = 0;
  for (const OpDesc &op : ops)
    if (op.tiedLayer < 0)
      n += op.params;
  return n;
}

double ModelDesc::paramCount() const {
  double n = 0;
  for (const LayerDesc &l : layers)
    n += l.params();
  return n;
}

double ModelDesc::trainingFlopsPerSample() const {
  double f = 0;
  for (const LayerDesc &l : layers)
    f += l.total(Phase::Forward).flops + l.total(Phase::BackwardInput).flops +
         l.total(Phase::BackwardWeight).flops;
  return f;
}

double ModelDesc::forwardFlopsPerSample(unsigned begin, unsigned end) const {
  double f = 0;
  for (unsigned i = begin; i < end && i < layers.size(); ++i)
    f += layers[i].total(Phase::Forward).flops;
  return f;
}

/// Whether layer \p li shares the checkpoint of the layer before it.
static bool sharesCheckpoint(const ModelDesc &m, unsigned li) {
  return li > 0 && li < m.layers.size() && m.layers[li].continuesBlock &&
         m.layers[li].checkpoint && m.layers[li - 1].checkpoint;
}

unsigned ModelDesc::blockBegin(unsigned li) const {
  while (sharesCheckpoint(*this, li))
    --li;
  return li;
}

unsigned ModelDesc::blockEnd(unsigned li) const {
  ++li;
  while (sharesCheckpoint(*this, li))
    ++li;
  return li;
}

/// A layer with attention (a softmax or one fused attention kernel).
static bool hasAttention(const LayerDesc &layer) {
  return llvm::any_of(layer.ops, [](const OpDesc &op) {
    return op.cls == OpClass::Softmax || op.cls == OpClass::Attention;
  });
}

std::vector<unsigned> transformerBlocks(const ModelDesc &model,
                                        unsigned &headBegin) {
  std::vector<unsigned> first;
  unsigned n = model.layers.size();
  for (unsigned i = 0; i < n; ++i)
    if (hasAttention(model.layers[i]))
      first.push_back(i);
  if (first.empty()) {
    headBegin = n;
    return first;
  }
  // The last block is as long as the ones before it (the shortest of them,
  // so a longer first block -- an embedding that computes -- does not
  // stretch it).
  unsigned span = 2;
  if (first.size() > 1) {
    span = ~0u;
    for (unsigned i = 1; i < first.size(); ++i)
      span = std::min(span, first[i] - first[i - 1]);
  }
  headBegin = std::min(n, first.back() + span);
  return first;
}

/// "kind:dtype:k1=v1,k2=v2": numbers in their shortest exact form, so the
/// profile database can be written by hand.
static std::string
sig(StringRef kind, DType dt,
    std::initializer_list<std::pair<const char *, double>> fields,
    StringRef suffix = "") {
  std::string out = (kind + ":" + dtypeName(dt) + ":").str();
  bool first = true;
  for (auto [name, v] : fields) {
    char buf[32];
    snprintf(buf, sizeof(buf), "%.10g", v);
    out += (first ? "" : ",") + std::string(name) + "=" + buf;
    first = false;
  }
  return out + suffix.str();
}

OpDesc matmulOp(StringRef name, DType dt, double batch, double m, double n,
                double k, bool weightIsParam, bool bias) {
  double e = cluster::dtypeBytes(dt);
  OpDesc op;
  op.name = name.str();
  op.cls = OpClass::MatMul;
  op.dtype = dt;
  op.signature = sig("matmul", dt, {{"b", batch}, {"m", m}, {"n", n}, {"k", k}},
                     weightIsParam ? ",w" : "");
  double f = 2 * batch * m * n * k;
  double x = batch * m * k * e, y = batch * m * n * e;
  double w = (weightIsParam ? 1 : batch) * k * n * e;
  op.fwd = {f, x + w, y};
  if (weightIsParam) {
    op.bwdInput = {f, y + w, x};
    op.bwdWeight = {f, y + x, w};
    op.params = k * n + (bias ? n : 0);
    op.savedBytes = x;
  } else {
    // dX = dY W^T and dW = X^T dY are both activation gradients.
    op.bwdInput = {2 * f, 2 * y + x + w, x + w};
    op.savedBytes = x + w;
  }
  return op;
}

OpDesc convOp(StringRef name, DType dt, double c, double h, double w, double k,
              double r, double s, double stride, double pad, double groups,
              bool bias) {
  double e = cluster::dtypeBytes(dt);
  double p = std::floor((h + 2 * pad - r) / stride) + 1;
  double q = std::floor((w + 2 * pad - s) / stride) + 1;
  OpDesc op;
  op.name = name.str();
  op.cls = OpClass::Conv;
  op.dtype = dt;
  op.signature = sig("conv", dt,
                     {{"c", c},
                      {"h", h},
                      {"w", w},
                      {"k", k},
                      {"r", r},
                      {"s", s},
                      {"stride", stride},
                      {"pad", pad},
                      {"g", groups}});
  double f = 2 * k * p * q * (c / groups) * r * s;
  double x = c * h * w * e, y = k * p * q * e;
  double wt = k * (c / groups) * r * s * e;
  op.fwd = {f, x + wt, y};
  op.bwdInput = {f, y + wt, x};
  op.bwdWeight = {f, y + x, wt};
  op.params = k * (c / groups) * r * s + (bias ? k : 0);
  op.savedBytes = x;
  return op;
}

OpDesc elementwiseOp(StringRef name, DType dt, double elements, unsigned inputs,
                     double flopsPerElement) {
  double e = cluster::dtypeBytes(dt);
  OpDesc op;
  op.name = name.str();
  op.cls = OpClass::Elementwise;
  op.dtype = dt;
  op.signature =
      sig("elementwise", dt,
          {{"n", elements}, {"in", double(inputs)}, {"f", flopsPerElement}});
  op.fwd = {elements * flopsPerElement, inputs * elements * e, elements * e};
  // Read the output gradient and the saved input; write input gradients.
  op.bwdInput = {2 * elements * flopsPerElement, 2 * elements * e,
                 inputs * elements * e};
  op.savedBytes = elements * e;
  return op;
}

OpDesc normOp(StringRef name, DType dt, double rows, double cols) {
  double e = cluster::dtypeBytes(dt);
  double n = rows * cols;
  OpDesc op;
  op.name = name.str();
  op.cls = OpClass::Norm;
  op.dtype = dt;
  op.signature = sig("norm", dt, {{"rows", rows}, {"cols", cols}});
  op.fwd = {8 * n, n * e + 2 * cols * e, n * e};
  op.bwdInput = {10 * n, 2 * n * e + 2 * cols * e, n * e};
  op.bwdWeight = {2 * n, 2 * n * e, 2 * cols * e};
  op.params = 2 * cols;
  op.savedBytes = n * e;
  return op;
}

OpDesc softmaxOp(StringRef name, DType dt, double rows, double cols) {
  double e = cluster::dtypeBytes(dt);
  double n = rows * cols;
  OpDesc op;
  op.name = name.str();
  op.cls = OpClass::Softmax;
  op.dtype = dt;
  op.signature = sig("softmax", dt, {{"rows", rows}, {"cols", cols}});
  op.fwd = {5 * n, n * e, n * e};
  op.bwdInput = {4 * n, 2 * n * e, n * e};
  op.savedBytes = n * e;
  return op;
}

OpDesc embeddingOp(StringRef name, DType dt, double tokens, double rows,
                   double cols) {
  double e = cluster::dtypeBytes(dt);
  OpDesc op;
  op.name = name.str();
  op.cls = OpClass::Embedding;
  op.dtype = dt;
  op.signature = sig("embedding", dt,
                     {{"tokens", tokens}, {"rows", rows}, {"cols", cols}});
  op.fwd = {0, tokens * cols * e + tokens * 8, tokens * cols * e};
  // Scatter-add of the output gradient into the table gradient.
  op.bwdWeight = {tokens * cols, 2 * tokens * cols * e, tokens * cols * e};
  op.params = rows * cols;
  op.savedBytes = tokens * 8;
  return op;
}

OpDesc reductionOp(StringRef name, DType dt, double inElements,
                   double outElements) {
  double e = cluster::dtypeBytes(dt);
  OpDesc op;
  op.name = name.str();
  op.cls = OpClass::Reduction;
  op.dtype = dt;
  op.signature =
      sig("reduction", dt, {{"in", inElements}, {"out", outElements}});
  op.fwd = {inElements, inElements * e, outElements * e};
  op.bwdInput = {inElements, outElements * e, inElements * e};
  return op;
}

OpDesc dataMovementOp(StringRef name, DType dt, double elements) {
  double e = cluster::dtypeBytes(dt);
  OpDesc op;
  op.name = name.str();
  op.cls = OpClass::DataMovement;
  op.dtype = dt;
  op.signature = sig("data_movement", dt, {{"n", elements}});
  op.fwd = {0, elements * e, elements * e};
  op.bwdInput = {0, elements * e, elements * e};
  return op;
}

OpDesc lossOp(StringRef name, DType dt, double rows, double classes) {
  double e = cluster::dtypeBytes(dt);
  double n = rows * classes;
  OpDesc op;
  op.name = name.str();
  op.cls = OpClass::Loss;
  op.dtype = dt;
  op.signature = sig("loss", dt, {{"rows", rows}, {"classes", classes}});
  op.fwd = {6 * n, n * e + rows * 8, rows * 4 + n * e};
  op.bwdInput = {2 * n, n * e + rows * 8, n * e};
  op.savedBytes = n * e;
  return op;
}

OpDesc otherOp(StringRef name, DType dt, PhaseCost fwd) {
  OpDesc op;
  op.name = name.str();
  op.cls = OpClass::Other;
  op.dtype = dt;
  op.signature =
      sig("other", dt,
          {{"f", fwd.flops}, {"r", fwd.bytesRead}, {"w", fwd.bytesWritten}},
          (":" + name).str());
  op.fwd = fwd;
  op.bwdInput = fwd.scaled(2);
  op.savedBytes = fwd.bytesRead;
  return op;
}

OpDesc tpReplicated(OpDesc op, double savedBytes) {
  op.tp = TpMode::Replicated;
  op.savedBytes = 0;
  op.savedReplicatedBytes = savedBytes;
  return op;
}

void routeWholeSequence(OpDesc &route, OpDesc &dispatch, OpDesc &combine,
                        double scoreBytes, double inputBytes,
                        double routedBytes) {
  for (OpDesc *op : {&route, &dispatch, &combine})
    op->wholeSequence = true;
  route.cpGatherFwdBytes = scoreBytes;
  dispatch.cpGatherFwdBytes = inputBytes;
  dispatch.cpGatherBwdBytes = routedBytes;
  combine.cpGatherFwdBytes = routedBytes;
  combine.cpGatherBwdBytes = inputBytes;
}

OpDesc attentionOp(StringRef name, DType dt, const AttentionShape &a) {
  double e = cluster::dtypeBytes(dt);
  double mask = a.causal ? 0.5 : 1.0;
  double pairs = a.heads * a.seqQ * a.seqKV * mask;
  double q = a.heads * a.seqQ * a.headDimQK * e;
  double k = a.kvHeads * a.seqKV * a.headDimQK * e;
  double v = a.kvHeads * a.seqKV * a.headDimV * e;
  double o = a.heads * a.seqQ * a.headDimV * e;
  double lse = a.heads * a.seqQ * 4; // fp32 log-sum-exp per query row
  OpDesc op;
  op.name = name.str();
  op.cls = OpClass::Attention;
  op.dtype = dt;
  op.signature = sig("attention", dt,
                     {{"h", a.heads},
                      {"kvh", a.kvHeads},
                      {"sq", a.seqQ},
                      {"skv", a.seqKV},
                      {"dqk", a.headDimQK},
                      {"dv", a.headDimV}},
                     a.causal ? ",causal" : "");
  op.fwd = {2 * pairs * (a.headDimQK + a.headDimV), q + k + v, o + lse};
  // Recompute S = QK^T, then dV = P^T dO, dP = dO V^T, dQ = dS K, dK = dS^T Q.
  op.bwdInput = {2 * pairs * (3 * a.headDimQK + 2 * a.headDimV),
                 q + k + v + 2 * o + lse, q + k + v};
  op.savedBytes = v + lse;
  op.cpKvBytes = k + v;
  return op;
}

LayerDesc gptBlock(const GptConfig &cfg, unsigned index) {
  const double s = cfg.seqLen, h = cfg.hidden, a = cfg.heads;
  const double f = cfg.ffnMult * h;
  const DType dt = cfg.dtype;
  const double e = cluster::dtypeBytes(dt);
  const double sh = s * h * e; // one hidden-state tensor, bytes
  LayerDesc l;
  l.name = formatv("block{0}", index).str();
  l.boundaryBytes = sh;

  // Korthikanti et al. Sec. 4.1: LN inputs 2sh each, QKV and FC1 inputs 2sh
  // (replicated under TP), Q and K 4sh, V 2sh, projection input 2sh, GeLU
  // input 8sh, FC2 input 8sh, two dropout masks sh each; softmax output
  // 2as^2, its dropout mask as^2 and dropout output 2as^2.
  l.ops.push_back(tpReplicated(normOp("ln1", dt, s, h), sh));
  OpDesc qkv = matmulOp("qkv", dt, 1, s, 3 * h, h, true, true);
  qkv.savedReplicatedBytes = sh;
  qkv.savedBytes = 2 * sh; // Q and K, kept for the scores' backward
  qkv.tpAllReduceBwdBytes = sh;
  l.ops.push_back(qkv);
  if (cfg.fusedAttention) {
    // GPT-2/3 attention is not causal-skipping in Megatron 2021, but a fused
    // kernel skips the masked half.
    AttentionShape as{a, a, s, s, h / a, h / a, true};
    l.ops.push_back(attentionOp("attention", dt, as));
  } else {
    OpDesc scores = matmulOp("scores", dt, a, s, s, h / a, false);
    scores.savedBytes = 0; // counted on qkv
    scores.selective = true;
    l.ops.push_back(scores);
    OpDesc sm = softmaxOp("softmax", dt, a * s, s);
    sm.selective = true;
    l.ops.push_back(sm);
    OpDesc drop = elementwiseOp("attn_dropout", dt, a * s * s, 1, 2);
    drop.savedBytes = a * s * s * (1 + e); // mask + output
    drop.selective = true;
    l.ops.push_back(drop);
    OpDesc ctx = matmulOp("context", dt, a, s, h / a, s, false);
    ctx.savedBytes = sh; // V; the probabilities are counted on the dropout
    ctx.cpKvBytes = 2 * sh; // K and V for ring attention
    l.ops.push_back(ctx);
  }
  OpDesc proj = matmulOp("proj", dt, 1, s, h, h, true, true);
  proj.tpAllReduceFwdBytes = sh;
  l.ops.push_back(proj);
  l.ops.push_back(
      tpReplicated(elementwiseOp("dropout_residual1", dt, s * h, 2, 3), s * h));
  l.ops.push_back(tpReplicated(normOp("ln2", dt, s, h), sh));
  OpDesc fc1 = matmulOp("fc1", dt, 1, s, f, h, true, true);
  fc1.savedBytes = 0;
  fc1.savedReplicatedBytes = sh;
  fc1.tpAllReduceBwdBytes = sh;
  l.ops.push_back(fc1);
  l.ops.push_back(elementwiseOp("gelu", dt, s * f, 1, 8));
  OpDesc fc2 = matmulOp("fc2", dt, 1, s, h, f, true, true);
  fc2.tpAllReduceFwdBytes = sh;
  l.ops.push_back(fc2);
  l.ops.push_back(
      tpReplicated(elementwiseOp("dropout_residual2", dt, s * h, 2, 3), s * h));
  return l;
}

ModelDesc buildGpt(const GptConfig &cfg) {
  const double s = cfg.seqLen, h = cfg.hidden, v = cfg.vocab;
  const DType dt = cfg.dtype;
  const double sh = s * h * cluster::dtypeBytes(dt);
  ModelDesc m;
  m.name = formatv("gpt-l{0}-h{1}", cfg.layers, static_cast<unsigned>(h)).str();
  m.sampleUnit = "sequence";
  m.attentionHeads = static_cast<unsigned>(cfg.heads);

  LayerDesc emb = tokenEmbeddingLayer("word_embedding", dt, s, v, h);
  OpDesc pos = embeddingOp("position_embedding", dt, s, s, h);
  pos.tp = TpMode::Replicated;
  emb.ops.push_back(pos);
  OpDesc drop = elementwiseOp("embedding_dropout", dt, s * h, 2, 2);
  drop.tp = TpMode::Replicated;
  drop.savedBytes = 0;
  drop.savedReplicatedBytes = s * h;
  emb.ops.push_back(drop);
  m.layers.push_back(std::move(emb));

  for (unsigned i = 0; i < cfg.layers; ++i)
    m.layers.push_back(gptBlock(cfg, i));

  // The logits share the word embedding.
  m.layers.push_back(lmHeadLayer(tpReplicated(normOp("final_ln", dt, s, h), sh),
                                 "logits", dt, s, v, h, /*tiedLayer=*/0));
  return m;
}

LayerDesc tokenEmbeddingLayer(StringRef opName, DType dt, double s, double v,
                              double h) {
  LayerDesc emb;
  emb.name = "embedding";
  emb.boundaryBytes = s * h * cluster::dtypeBytes(dt);
  emb.checkpoint = false;
  OpDesc word = embeddingOp(opName, dt, s, v, h);
  word.tpAllReduceFwdBytes = emb.boundaryBytes; // vocab-parallel lookup
  word.tpDivisor = static_cast<int64_t>(v);
  emb.ops.push_back(word);
  return emb;
}

LayerDesc lmHeadLayer(OpDesc norm, StringRef logitsName, DType dt, double s,
                      double v, double h, int tiedLayer) {
  const double sh = s * h * cluster::dtypeBytes(dt);
  LayerDesc head;
  head.name = "head";
  head.boundaryBytes = 4; // the loss
  head.checkpoint = false;
  head.ops.push_back(std::move(norm));
  OpDesc logits = matmulOp(logitsName, dt, 1, s, v, h, true);
  logits.tiedLayer = tiedLayer;
  logits.keepsPrecision = true;
  logits.tpAllReduceBwdBytes = sh;
  logits.savedBytes = 0;
  logits.savedReplicatedBytes = sh;
  // A vocabulary tp does not divide stays whole (dist-tensor-parallel).
  logits.tpDivisor = static_cast<int64_t>(v);
  head.ops.push_back(logits);
  OpDesc loss = lossOp("cross_entropy", dt, s, v);
  loss.tpDivisor = logits.tpDivisor;
  head.ops.push_back(loss);
  return head;
}

double gptParamCount(const GptConfig &cfg) {
  double l = cfg.layers, h = cfg.hidden;
  return 12 * l * h * h *
         (1 + 13 / (12 * h) + (cfg.vocab + cfg.seqLen) / (12 * l * h));
}

double gptFlopsPerIteration(const GptConfig &cfg, double globalBatch,
                            bool fullRecompute) {
  double l = cfg.layers, h = cfg.hidden, s = cfg.seqLen;
  double blocks = 24 * globalBatch * s * l * h * h * (1 + s / (6 * h));
  double logits = 2 * globalBatch * s * h * cfg.vocab;
  return (fullRecompute ? 4 : 3) * blocks + 3 * logits;
}

} // namespace distopt::cost
