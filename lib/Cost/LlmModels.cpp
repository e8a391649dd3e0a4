//===- LlmModels.cpp - Analytic LLaMA-style and MoE models ------*- C++ -*-===//
//
// Saved activations follow Korthikanti et al. (arXiv 2205.05198) adapted to
// these blocks: every linear layer keeps its input, the fused attention
// keeps V and the log-sum-exp (Q and K on the QKV projection, O on the
// output projection), the gated activation keeps both of its inputs. Under
// tensor parallelism norms and residual adds are replicated, projections
// split Megatron-style (column then row parallel with one all-reduce after
// each row-parallel layer); the routed experts split the same way over
// their routed tokens (expert TP = TP) and shard over the expert-parallel
// group.
//
//===----------------------------------------------------------------------===//

#include "lib/Cost/LlmModels.h"

#include "llvm/Support/FormatVariadic.h"

using namespace llvm;

namespace distopt::cost {

/// RMSNorm: the layer norm's traffic and FLOPs, one scale vector.
static OpDesc rmsNorm(StringRef name, DType dt, double rows, double cols,
                      double saved) {
  OpDesc op = tpReplicated(normOp(name, dt, rows, cols), saved);
  op.params = cols;
  return op;
}

/// How an FFN's input is kept for its backward.
enum class FfnInput {
  Whole,      ///< the norm output, whole on every TP rank
  Dispatched, ///< routed tokens, split like the experts
  Shared      ///< kept by another op already (shared experts: the router)
};

/// A (gated) MLP of width \p f over \p tokens tokens: up-projection(s),
/// activation, down-projection. Routed experts (\p input = Dispatched) have
/// \p copies times the parameters, sharded over EP.
static void addFfn(LayerDesc &l, StringRef prefix, const LlmConfig &cfg,
                   double tokens, double f, FfnInput input, double copies) {
  const bool expert = input == FfnInput::Dispatched;
  const DType dt = cfg.dtype;
  const double e = cluster::dtypeBytes(dt), h = cfg.hidden;
  const double in = tokens * h * e;
  const double up = cfg.gatedFfn ? 2 : 1;
  OpDesc w1 = matmulOp((prefix + "_up").str(), dt, 1, tokens, up * f, h, true);
  w1.savedBytes = expert ? in : 0;
  w1.savedReplicatedBytes = input == FfnInput::Whole ? in : 0;
  w1.tpAllReduceBwdBytes = in;
  OpDesc act = elementwiseOp((prefix + "_act").str(), dt, tokens * f,
                             cfg.gatedFfn ? 2 : 1, cfg.gatedFfn ? 6 : 4);
  act.savedBytes = up * tokens * f * e;
  OpDesc w2 = matmulOp((prefix + "_down").str(), dt, 1, tokens, h, f, true);
  w2.tpAllReduceFwdBytes = in;
  for (OpDesc *op : {&w1, &act, &w2}) {
    op->expert = expert;
    op->params *= copies;
    // One GEMM per expert (grouped): each gets 1/E of the tokens.
    if (expert)
      op->kernels = static_cast<unsigned>(copies);
  }
  l.ops.push_back(w1);
  l.ops.push_back(act);
  l.ops.push_back(w2);
}

/// Grouped-query or latent attention with its projections.
static void addAttention(LayerDesc &l, const LlmConfig &cfg) {
  const DType dt = cfg.dtype;
  const double e = cluster::dtypeBytes(dt);
  const double s = cfg.seqLen, h = cfg.hidden, a = cfg.heads;
  const double sh = s * h * e;
  AttentionShape as;
  as.heads = a;
  as.seqQ = as.seqKV = s;
  as.causal = true;
  double qkBytes = 0, oWidth = 0;
  if (cfg.mla()) {
    const double dqk = cfg.qkNopeDim + cfg.qkRopeDim;
    as.kvHeads = a;
    as.headDimQK = dqk;
    as.headDimV = cfg.vHeadDim;
    // Down projections are small and replicated over TP; the up
    // projections are column-parallel over heads. Without a query rank
    // one column-parallel q_proj reads the norm output.
    const bool qLora = cfg.qLoraRank > 0;
    if (qLora) {
      l.ops.push_back(tpReplicated(
          matmulOp("q_down", dt, 1, s, cfg.qLoraRank, h, true), sh));
      l.ops.push_back(
          rmsNorm("q_norm", dt, s, cfg.qLoraRank, s * cfg.qLoraRank * e));
    }
    const double qIn = qLora ? cfg.qLoraRank : h;
    OpDesc qu =
        matmulOp(qLora ? "q_up" : "q_proj", dt, 1, s, a * dqk, qIn, true);
    qu.savedBytes = 0;
    qu.savedReplicatedBytes = s * qIn * e;
    qu.tpAllReduceBwdBytes = s * qIn * e;
    if (!qLora)
      l.ops.push_back(qu);
    OpDesc kvd = tpReplicated(
        matmulOp("kv_down", dt, 1, s, cfg.kvLoraRank + cfg.qkRopeDim, h, true),
        0); // shares the input with q_down (q_proj)
    l.ops.push_back(kvd);
    l.ops.push_back(
        rmsNorm("kv_norm", dt, s, cfg.kvLoraRank, s * cfg.kvLoraRank * e));
    OpDesc kvu = matmulOp("kv_up", dt, 1, s, a * (cfg.qkNopeDim + cfg.vHeadDim),
                          cfg.kvLoraRank, true);
    kvu.savedBytes = 0;
    kvu.savedReplicatedBytes = s * cfg.kvLoraRank * e;
    kvu.tpAllReduceBwdBytes = s * cfg.kvLoraRank * e;
    if (qLora)
      l.ops.push_back(qu);
    l.ops.push_back(kvu);
    qkBytes = 2 * s * a * dqk * e;
    oWidth = a * cfg.vHeadDim;
  } else {
    const double d = cfg.headWidth(), kv = cfg.kvHeads;
    as.kvHeads = kv;
    as.headDimQK = as.headDimV = d;
    OpDesc qkv = matmulOp("qkv", dt, 1, s, (a + 2 * kv) * d, h, true);
    qkv.savedReplicatedBytes = sh;
    qkv.savedBytes = 0;
    qkv.tpAllReduceBwdBytes = sh;
    l.ops.push_back(qkv);
    qkBytes = s * (a + kv) * d * e;
    oWidth = a * d;
  }
  OpDesc rope = elementwiseOp("rope", dt, qkBytes / e, 1, 3);
  rope.savedBytes = qkBytes; // the rotated Q and K the kernel reads
  // Latent attention's one rotary key serves every head: each TP rank
  // expands it to its own heads, so its gradient (the rank's sum over
  // them) is summed over the group.
  if (cfg.mla())
    rope.tpAllReduceBwdBytes = s * cfg.qkRopeDim * e;
  l.ops.push_back(rope);
  if (cfg.fusedAttention) {
    l.ops.push_back(attentionOp("attention", dt, as));
  } else {
    // Unfused: scores, softmax (saved s^2), context; selective
    // recomputation drops the s^2 part.
    OpDesc scores = matmulOp("scores", dt, a, s, s, as.headDimQK, false);
    scores.savedBytes = 0;
    scores.selective = true;
    OpDesc sm = softmaxOp("softmax", dt, a * s, s);
    sm.selective = true;
    OpDesc ctx = matmulOp("context", dt, a, s, as.headDimV, s, false);
    ctx.savedBytes = as.kvHeads * s * as.headDimV * e;
    ctx.cpKvBytes = s * as.kvHeads * (as.headDimQK + as.headDimV) * e;
    l.ops.push_back(scores);
    l.ops.push_back(sm);
    l.ops.push_back(ctx);
  }
  OpDesc o = matmulOp("o_proj", dt, 1, s, h, oWidth, true);
  o.tpAllReduceFwdBytes = sh;
  l.ops.push_back(o);
}

/// torchtitan's per-op selective checkpointing of one dense block
/// (torchtitan/parallelisms/parallelize_llama.py, `_save_list` and
/// `_custom_policy`): the matmuls count 1, 2, 3, ... in forward order (wq,
/// wk, wv, wo, w1, w3, w2) and the odd ones keep their outputs; the fused
/// attention keeps its output and log-sum-exp; every other op is
/// recomputed from the block's input, which the checkpoint keeps. Here:
/// wk (of the qkv op), wo, w3 (half of the gated up op) and the norms,
/// RoPE, the first residual and the activation re-run; the second residual
/// does not (non-reentrant checkpointing stops once the tensors the
/// backward needs are recomputed).
static void applyEveryOtherMatmulSac(LayerDesc &l, const LlmConfig &cfg) {
  const double e = cluster::dtypeBytes(cfg.dtype);
  const double s = cfg.seqLen, h = cfg.hidden, d = cfg.headWidth();
  const double a = cfg.heads, kv = cfg.kvHeads, f = cfg.ffnHidden;
  // Forward-order matmul widths; odd positions (1-based) are saved.
  struct Mm {
    const char *op;
    double width;
  };
  SmallVector<Mm, 8> mms = {
      {"qkv", a * d}, {"qkv", kv * d}, {"qkv", kv * d}, {"o_proj", h}};
  mms.push_back({"ffn_up", f});
  if (cfg.gatedFfn)
    mms.push_back({"ffn_up", f});
  mms.push_back({"ffn_down", h});
  for (OpDesc &op : l.ops) {
    if (op.name == "residual2")
      continue;
    op.selective = true;
    op.selectiveShare = 1;
    op.selectiveSavedBytes = 0;
    if (op.name == "attn_norm") // its input: the block's, kept
      op.selectiveSavedBytes = s * h * e;
    if (op.name == "attention") { // output and log-sum-exp
      op.selectiveShare = 0;
      op.selectiveSavedBytes = s * a * d * e + a * s * 4;
    }
    double total = 0, again = 0, kept = 0;
    for (unsigned i = 0; i < mms.size(); ++i) {
      if (op.name != mms[i].op)
        continue;
      total += mms[i].width;
      (i % 2 == 0 ? kept : again) += mms[i].width;
    }
    if (total > 0) {
      op.selectiveShare = again / total;
      op.selectiveSavedBytes = s * kept * e;
    }
  }
}

/// Memory traffic of torchtitan's eager ops (torchtitan/models/llama/
/// model.py, 2024-12), per element, with storage in \p e bytes and the math
/// in fp32. RMSNorm: x.float(), pow, mean, x * rsqrt, type_as, * weight
/// (reads 2e + 16, writes 2e + 12); its autograd backward re-reads and
/// writes each fp32 intermediate (reads 4e + 36, writes 2e + 28).
static void eagerNorm(OpDesc &op, double n, double e) {
  op.fwd.bytesRead = (2 * e + 16) * n;
  op.fwd.bytesWritten = (2 * e + 12) * n;
  op.bwdInput.bytesRead = (4 * e + 36) * n;
  op.bwdInput.bytesWritten = (2 * e + 28) * n;
}

/// The eager forms of a block's elementwise ops (LlmConfig::eagerElementwise).
static void applyEagerElementwise(LayerDesc &l, const LlmConfig &cfg) {
  const double e = cluster::dtypeBytes(cfg.dtype);
  const double s = cfg.seqLen, h = cfg.hidden, d = cfg.headWidth();
  const double a = cfg.heads, kv = cfg.kvHeads, f = cfg.ffnHidden;
  for (OpDesc &op : l.ops) {
    if (op.name == "attn_norm" || op.name == "ffn_norm") {
      eagerNorm(op, s * h, e);
    } else if (op.name == "rope") {
      // view_as_complex(x.float()) * freqs, view_as_real, type_as: reads
      // e + 8, writes 8 + e per element of Q and K, the same backward; then
      // repeat_kv copies K and V to every query head (a backward sums them).
      double n = s * (a + kv) * d, rep = 2 * s * d * e;
      op.fwd.bytesRead = (e + 8) * n + rep * kv;
      op.fwd.bytesWritten = (e + 8) * n + rep * a;
      op.bwdInput.bytesRead = (e + 8) * n + rep * a;
      op.bwdInput.bytesWritten = (e + 8) * n + rep * kv;
    } else if (op.name == "ffn_act" && cfg.gatedFfn) {
      // silu(w1 x) * w3 x: silu, then mul (reads 3e, writes 2e); backward:
      // the mul's two products and silu's backward (reads 6e, writes 3e).
      double n = s * f;
      op.fwd.bytesRead = 3 * e * n;
      op.fwd.bytesWritten = 2 * e * n;
      op.bwdInput.bytesRead = 6 * e * n;
      op.bwdInput.bytesWritten = 3 * e * n;
    }
  }
}

LayerDesc llmBlock(const LlmConfig &cfg, unsigned index) {
  const DType dt = cfg.dtype;
  const double e = cluster::dtypeBytes(dt);
  const double s = cfg.seqLen, h = cfg.hidden;
  const double sh = s * h * e;
  LayerDesc l;
  l.name = formatv("block{0}", index).str();
  l.boundaryBytes = sh;
  l.ops.push_back(rmsNorm("attn_norm", dt, s, h, sh));
  addAttention(l, cfg);
  l.ops.push_back(tpReplicated(elementwiseOp("residual1", dt, s * h, 2, 1), 0));
  l.ops.push_back(rmsNorm("ffn_norm", dt, s, h, sh));
  if (!cfg.moeLayer(index)) {
    addFfn(l, "ffn", cfg, s, cfg.ffnHidden, FfnInput::Whole, 1);
  } else {
    const double E = cfg.experts, k = cfg.topK;
    // The router is replicated over TP; its scores stay for the backward.
    OpDesc router = tpReplicated(matmulOp("router", dt, 1, s, E, h, true), sh);
    router.keepsPrecision = true;
    OpDesc gate = tpReplicated(
        elementwiseOp("router_topk", cluster::DType::F32, s * E, 1, 8),
        s * E * 4);
    // Token permutation; with expert parallelism an all-to-all sends each
    // token's k copies to the ranks that own their experts.
    OpDesc dispatch = dataMovementOp("dispatch", dt, k * s * h);
    dispatch.epAllToAllBytes = k * s * h * e;
    OpDesc combine = dataMovementOp("combine", dt, k * s * h);
    combine.epAllToAllBytes = k * s * h * e;
    if (cfg.sequenceRouting) {
      routeWholeSequence(gate, dispatch, combine, s * E * e, s * h * e,
                         k * s * h * e);
      // Under SP the router reads the block input gathered for the routing.
      router.sequenceGathered = true;
    }
    l.ops.push_back(router);
    l.ops.push_back(gate);
    l.ops.push_back(dispatch);
    addFfn(l, "expert", cfg, k * s, cfg.expertFfn, FfnInput::Dispatched, E);
    l.ops.push_back(combine);
    if (cfg.sharedExperts)
      addFfn(l, "shared", cfg, s, cfg.sharedExperts * cfg.expertFfn,
             FfnInput::Shared, 1);
  }
  l.ops.push_back(tpReplicated(elementwiseOp("residual2", dt, s * h, 2, 1), 0));
  if (cfg.sacEveryOtherMatmul && !cfg.mla() && !cfg.moeLayer(index))
    applyEveryOtherMatmulSac(l, cfg);
  if (cfg.eagerElementwise && !cfg.mla() && !cfg.moeLayer(index))
    applyEagerElementwise(l, cfg);
  return l;
}

ModelDesc buildLlm(const LlmConfig &cfg) {
  const double s = cfg.seqLen, h = cfg.hidden, v = cfg.vocab;
  const DType dt = cfg.dtype;
  const double sh = s * h * cluster::dtypeBytes(dt);
  ModelDesc m;
  m.name = cfg.name;
  m.sampleUnit = "sequence";

  m.layers.push_back(tokenEmbeddingLayer("embed_tokens", dt, s, v, h));

  for (unsigned i = 0; i < cfg.layers; ++i)
    m.layers.push_back(llmBlock(cfg, i));

  m.layers.push_back(lmHeadLayer(rmsNorm("final_norm", dt, s, h, sh),
                                 "lm_head", dt, s, v, h,
                                 cfg.tiedEmbeddings ? 0 : -1));
  if (cfg.eagerElementwise)
    eagerNorm(m.layers.back().ops.front(), s * h, cluster::dtypeBytes(dt));
  if (cfg.fp32Loss) {
    // cast to fp32 (read e, write 4), log-softmax (two reads, one write),
    // NLL; backward: the NLL gradient (written), log-softmax's backward
    // (reads it and the saved output, writes its input's gradient), the
    // cast back (reads 4, writes e). Per logit.
    OpDesc &loss = m.layers.back().ops.back();
    const double n = s * v, e = cluster::dtypeBytes(dt);
    loss.fwd = {6 * n, (e + 12) * n, 8 * n};
    loss.bwdInput = {2 * n, 12 * n, (8 + e) * n};
    loss.savedBytes = 4 * n;
    loss.bwdWorkingBytes = (cfg.vocabParallelLoss ? 12 : 8) * n;
  }
  return m;
}

/// Parameters of one block's attention.
static double attentionParams(const LlmConfig &c) {
  const double h = c.hidden, a = c.heads;
  if (c.mla())
    return (c.qLoraRank > 0 ? h * c.qLoraRank + c.qLoraRank +
                                  c.qLoraRank * a * (c.qkNopeDim + c.qkRopeDim)
                            : h * a * (c.qkNopeDim + c.qkRopeDim)) +
           h * (c.kvLoraRank + c.qkRopeDim) + c.kvLoraRank +
           c.kvLoraRank * a * (c.qkNopeDim + c.vHeadDim) + a * c.vHeadDim * h;
  const double d = c.headWidth();
  return h * (a + 2 * c.kvHeads) * d + a * d * h;
}

double llmParamCount(const LlmConfig &c, bool activeOnly) {
  const double h = c.hidden, mats = c.gatedFfn ? 3 : 2;
  double n = c.vocab * h * (c.tiedEmbeddings ? 1 : 2) + h;
  for (unsigned i = 0; i < c.layers; ++i) {
    n += 2 * h + attentionParams(c);
    if (!c.moeLayer(i)) {
      n += mats * h * c.ffnHidden;
      continue;
    }
    double routed = activeOnly ? c.topK : c.experts;
    n += h * c.experts + (routed + c.sharedExperts) * mats * h * c.expertFfn;
  }
  return n;
}

double llmModelFlopsPerSequence(const LlmConfig &c) {
  const double s = c.seqLen, h = c.hidden, mats = c.gatedFfn ? 3 : 2;
  double perToken = c.vocab * h; // LM head (the lookup is not a matmul)
  double attn = 0;                // per token, forward
  for (unsigned i = 0; i < c.layers; ++i) {
    perToken += attentionParams(c);
    if (c.moeLayer(i))
      perToken += h * c.experts +
                  (c.topK + c.sharedExperts) * mats * h * c.expertFfn;
    else
      perToken += mats * h * c.ffnHidden;
    double dqk = c.mla() ? c.qkNopeDim + c.qkRopeDim : c.headWidth();
    double dv = c.mla() ? c.vHeadDim : c.headWidth();
    attn += 2 * c.heads * s * (dqk + dv) * 0.5; // causal
  }
  return 3 * s * (2 * perToken + attn);
}

LlmConfig llama2_7b() {
  LlmConfig c;
  c.name = "llama2-7b";
  c.layers = 32, c.hidden = 4096, c.heads = 32, c.kvHeads = 32;
  c.ffnHidden = 11008, c.seqLen = 4096, c.vocab = 32000;
  return c;
}

LlmConfig llama2_13b() {
  LlmConfig c = llama2_7b();
  c.name = "llama2-13b";
  c.layers = 40, c.hidden = 5120, c.heads = 40, c.kvHeads = 40;
  c.ffnHidden = 13824;
  return c;
}

LlmConfig llama2_70b() {
  LlmConfig c = llama2_7b();
  c.name = "llama2-70b";
  c.layers = 80, c.hidden = 8192, c.heads = 64, c.kvHeads = 8;
  c.ffnHidden = 28672;
  return c;
}

LlmConfig llama3_8b() {
  LlmConfig c;
  c.name = "llama3-8b";
  c.layers = 32, c.hidden = 4096, c.heads = 32, c.kvHeads = 8;
  c.ffnHidden = 14336, c.seqLen = 8192, c.vocab = 128256;
  return c;
}

LlmConfig llama3_70b() {
  LlmConfig c = llama3_8b();
  c.name = "llama3-70b";
  c.layers = 80, c.hidden = 8192, c.heads = 64, c.kvHeads = 8;
  c.ffnHidden = 28672;
  return c;
}

LlmConfig llama3_405b() {
  LlmConfig c = llama3_8b();
  c.name = "llama3.1-405b";
  c.layers = 126, c.hidden = 16384, c.heads = 128, c.kvHeads = 8;
  c.ffnHidden = 53248;
  return c;
}

LlmConfig mixtral8x7b() {
  LlmConfig c;
  c.name = "mixtral-8x7b";
  c.layers = 32, c.hidden = 4096, c.heads = 32, c.kvHeads = 8;
  c.ffnHidden = 14336, c.seqLen = 4096, c.vocab = 32000;
  c.experts = 8, c.topK = 2, c.expertFfn = 14336;
  return c;
}

LlmConfig deepseekV3() {
  LlmConfig c;
  c.name = "deepseek-v3";
  c.layers = 61, c.hidden = 7168, c.heads = 128, c.kvHeads = 128;
  c.ffnHidden = 18432, c.seqLen = 4096, c.vocab = 129280;
  c.experts = 256, c.topK = 8, c.expertFfn = 2048, c.sharedExperts = 1;
  c.denseLayers = 3;
  c.qLoraRank = 1536, c.kvLoraRank = 512;
  c.qkNopeDim = 128, c.qkRopeDim = 64, c.vHeadDim = 128;
  return c;
}

/// NeMo's GPT-3 configurations (GeLU MLP of 4h, MHA, vocabulary 50257
/// padded to 51200, sequence 2048).
static LlmConfig gpt3(StringRef name, unsigned layers, double hidden,
                      double heads) {
  LlmConfig c;
  c.name = name.str();
  c.layers = layers, c.hidden = hidden, c.heads = heads, c.kvHeads = heads;
  c.ffnHidden = 4 * hidden, c.gatedFfn = false;
  c.seqLen = 2048, c.vocab = 51200;
  return c;
}
LlmConfig gpt3_5b() { return gpt3("gpt3-5b", 24, 4096, 32); }
LlmConfig gpt3_20b() { return gpt3("gpt3-20b", 44, 6144, 48); }
LlmConfig gpt3_175b() { return gpt3("gpt3-175b", 96, 12288, 96); }

/// Nemotron (NeMo's NemotronConfig): squared-ReLU MLP, vocabulary 256000,
/// sequence 4096.
static LlmConfig nemotron(StringRef name, unsigned layers, double hidden,
                          double ffn, double heads, double kvHeads) {
  LlmConfig c;
  c.name = name.str();
  c.layers = layers, c.hidden = hidden, c.heads = heads, c.kvHeads = kvHeads;
  c.ffnHidden = ffn, c.gatedFfn = false;
  c.seqLen = 4096, c.vocab = 256000;
  return c;
}
LlmConfig nemotron3_8b() {
  return nemotron("nemotron3-8b", 32, 4096, 16384, 32, 32);
}
LlmConfig nemotron3_22b() {
  return nemotron("nemotron3-22b", 40, 6144, 24576, 48, 48);
}
LlmConfig nemotron4_15b() {
  return nemotron("nemotron4-15b", 32, 6144, 24576, 48, 8);
}
LlmConfig nemotron4_340b() {
  return nemotron("nemotron4-340b", 96, 18432, 73728, 96, 8);
}

/// Qwen3 MoE (model cards): every block has 128 routed experts, top 8, no
/// shared expert; head width 128.
LlmConfig qwen3_30b_a3b() {
  LlmConfig c;
  c.name = "qwen3-30b-a3b";
  c.layers = 48, c.hidden = 2048, c.heads = 32, c.kvHeads = 4;
  c.headDim = 128, c.ffnHidden = 6144, c.seqLen = 4096, c.vocab = 151936;
  c.experts = 128, c.topK = 8, c.expertFfn = 768;
  return c;
}
LlmConfig qwen3_235b_a22b() {
  LlmConfig c = qwen3_30b_a3b();
  c.name = "qwen3-235b-a22b";
  c.layers = 94, c.hidden = 4096, c.heads = 64, c.kvHeads = 4;
  c.ffnHidden = 12288, c.expertFfn = 1536;
  return c;
}

/// Grok-1 (xAI's released checkpoint): 8 experts of width 32768, top 2,
/// every block.
LlmConfig grok1_314b() {
  LlmConfig c;
  c.name = "grok1-314b";
  c.layers = 64, c.hidden = 6144, c.heads = 48, c.kvHeads = 8;
  c.ffnHidden = 32768, c.seqLen = 8192, c.vocab = 131072;
  c.experts = 8, c.topK = 2, c.expertFfn = 32768;
  return c;
}

std::optional<LlmConfig> llmPreset(StringRef name) {
  using Maker = LlmConfig (*)();
  static const std::pair<const char *, Maker> kPresets[] = {
      {"gpt3-5b", gpt3_5b},
      {"gpt3-20b", gpt3_20b},
      {"gpt3-175b", gpt3_175b},
      {"llama2-7b", llama2_7b},
      {"llama2-13b", llama2_13b},
      {"llama2-70b", llama2_70b},
      {"llama3-8b", llama3_8b},
      {"llama3-70b", llama3_70b},
      {"llama3.1-405b", llama3_405b},
      {"nemotron3-8b", nemotron3_8b},
      {"nemotron3-22b", nemotron3_22b},
      {"nemotron4-15b", nemotron4_15b},
      {"nemotron4-340b", nemotron4_340b},
      {"mixtral-8x7b", mixtral8x7b},
      {"grok1-314b", grok1_314b},
      {"qwen3-30b-a3b", qwen3_30b_a3b},
      {"qwen3-235b-a22b", qwen3_235b_a22b},
      {"deepseek-v3", deepseekV3}};
  for (const auto &[n, make] : kPresets)
    if (name == n)
      return make();
  return std::nullopt;
}

} // namespace distopt::cost
