//===- Llama.cpp - LLaMA graphs ---------------------------------*- C++ -*-===//
//
// Part of DistOpt. LLaMA-style decoder: RMSNorm (emitted as the exporter's
// Pow/ReduceMean/Add/Sqrt/Div/Mul pattern, since opset 17 has no RMSNorm op),
// rotary position embedding computed in the graph, grouped-query attention
// (keys/values repeated with Unsqueeze/Expand/Reshape), SwiGLU MLP, no
// biases, an untied LM head. With --experts the MLP of every block from
// --dense-layers on is a mixture of experts (moeMlp below); with
// --kv-lora-rank the attention is DeepSeek's multi-head latent attention
// (mlaAttention below). docs/modelgen.md gives both forms.
//
//===----------------------------------------------------------------------===//

#include "Families.h"

#include <cmath>

using namespace distopt::modelgen;

/// weight * x / sqrt(mean(x^2) + eps) over the last axis.
static std::string rmsNorm(GraphBuilder &b, const std::string &x,
                           llvm::StringRef name, int64_t width) {
  std::string sq = b.node("Pow", {x, b.constScalar(2.0)});
  std::string mean = b.node("ReduceMean", {sq},
                            {attrInts("axes", {-1}), attrInt("keepdims", 1)});
  std::string rms =
      b.node("Sqrt", {b.node("Add", {mean, b.constScalar(1e-5)})});
  std::string y = b.node("Div", {x, rms});
  return b.node("Mul", {b.weight((name + ".weight").str(), {width}), y});
}

/// Rotary embedding of x [B, H, S, d]: x * cos + rotate_half(x) * sin.
static std::string rotary(GraphBuilder &b, const std::string &x,
                          const std::string &cos, const std::string &sin,
                          int64_t headDim) {
  int64_t half = headDim / 2;
  std::string axes = b.constI64({-1});
  std::string x1 =
      b.node("Slice", {x, b.constI64({0}), b.constI64({half}), axes});
  std::string x2 =
      b.node("Slice", {x, b.constI64({half}), b.constI64({headDim}), axes});
  std::string rot =
      b.node("Concat", {b.node("Neg", {x2}), x1}, {attrInt("axis", -1)});
  return b.node("Add", {b.node("Mul", {x, cos}), b.node("Mul", {rot, sin})});
}

/// [B, KV, S, d] -> [B, KV * rep, S, d], the exporter's repeat_kv.
static std::string repeatKv(GraphBuilder &b, const std::string &x,
                            int64_t kvHeads, int64_t rep, int64_t headDim) {
  std::string u = b.node("Unsqueeze", {x, b.constI64({2})});
  std::string e = b.node("Expand", {u, b.constI64({1, 1, rep, 1, 1})});
  return b.node("Reshape", {e, b.constI64({0, kvHeads * rep, -1, headDim})});
}

/// SwiGLU MLP of width \p f: down(silu(gate(x)) * up(x)), names as HF's.
static std::string swiGlu(GraphBuilder &b, const std::string &x,
                          llvm::StringRef prefix, int64_t h, int64_t f) {
  std::string gate = b.linear(x, (prefix + ".gate_proj").str(), h, f, false);
  gate = b.node("Mul", {gate, b.node("Sigmoid", {gate})});
  std::string up = b.linear(x, (prefix + ".up_proj").str(), h, f, false);
  return b.linear(b.node("Mul", {gate, up}), (prefix + ".down_proj").str(), f,
                  h, false);
}

/// Mixture-of-experts MLP of x [B, S, h] with static shapes (GShard-style
/// capacity routing, capacity factor 1): the router (x @ gate [h, E],
/// Softmax, TopK k) scatters each token's k weights into gates [B, S, E];
/// every expert takes the C = k S / E tokens with its highest weights
/// (TopK C over the sequence: overflowing tokens are dropped, free slots
/// carry weight 0), GatherElements dispatches them into [B, E, C, h], the
/// experts run as batched MatMuls with stacked weights [E, h, f] /
/// [E, f, h] (k S tokens per sequence: top-k of E experts' FLOPs), the
/// outputs are weighted and ScatterElements(add) combines them into
/// [B, S, h]. Shared experts run as one SwiGLU of width shared * f beside.
static std::string moeMlp(GraphBuilder &b, const std::string &x) {
  const ModelOptions &o = b.opts();
  int64_t h = o.hidden, s = o.seq, e = o.experts, k = o.topK;
  int64_t f = o.expertFfn, c = k * s / e;
  std::string logits = b.linear(x, "mlp.gate", h, e, false);
  std::string probs = b.node("Softmax", {logits}, {attrInt("axis", -1)});
  std::vector<std::string> top =
      b.nodeN("TopK", {probs, b.constI64({k})}, 2, {attrInt("axis", -1)});
  std::string zeros = b.node("Mul", {probs, b.constScalar(0.0)});
  std::string gates =
      b.node("ScatterElements", {zeros, top[1], top[0]}, {attrInt("axis", -1)});
  std::string byExpert =
      b.node("Transpose", {gates}, {attrInts("perm", {0, 2, 1})});
  std::vector<std::string> slots =
      b.nodeN("TopK", {byExpert, b.constI64({c})}, 2, {attrInt("axis", -1)});
  std::string index = b.node(
      "Expand", {b.node("Reshape", {slots[1], b.constI64({0, e * c, 1})}),
                 b.constI64({1, 1, h})});
  std::string tokens =
      b.node("GatherElements", {x, index}, {attrInt("axis", 1)});
  tokens = b.node("Reshape", {tokens, b.constI64({0, e, c, h})});
  std::string gate =
      b.matmul(tokens, b.weight("mlp.experts.gate_proj", {e, h, f}));
  gate = b.node("Mul", {gate, b.node("Sigmoid", {gate})});
  std::string up = b.matmul(tokens, b.weight("mlp.experts.up_proj", {e, h, f}));
  std::string down = b.matmul(b.node("Mul", {gate, up}),
                              b.weight("mlp.experts.down_proj", {e, f, h}));
  std::string weighted =
      b.node("Mul", {down, b.node("Unsqueeze", {slots[0], b.constI64({-1})})});
  weighted = b.node("Reshape", {weighted, b.constI64({0, e * c, h})});
  std::string out =
      b.node("ScatterElements",
             {b.node("Mul", {x, b.constScalar(0.0)}), index, weighted},
             {attrInt("axis", 1), attrString("reduction", "add")});
  if (o.sharedExperts > 0)
    out = b.node("Add", {out, swiGlu(b, x, "mlp.shared_experts", h,
                                     o.sharedExperts * f)});
  return out;
}

/// Grouped-query attention of the normed x [B, S, h]: Q, K, V projections,
/// rotary embedding of Q and K, K/V heads repeated to every query head,
/// the attention core and o_proj.
static std::string gqaAttention(GraphBuilder &b, const std::string &x,
                                const std::string &cos, const std::string &sin,
                                const std::string &mask) {
  const ModelOptions &o = b.opts();
  int64_t h = o.hidden, headDim = o.headDim;
  int64_t qDim = o.heads * headDim;
  int64_t kvDim = o.kvHeads * headDim, rep = o.heads / o.kvHeads;
  std::string q = attention::splitHeads(
      b, b.linear(x, "self_attn.q_proj", h, qDim, false), o.heads, headDim);
  std::string k = attention::splitHeads(
      b, b.linear(x, "self_attn.k_proj", h, kvDim, false), o.kvHeads, headDim);
  std::string v = attention::splitHeads(
      b, b.linear(x, "self_attn.v_proj", h, kvDim, false), o.kvHeads, headDim);
  q = rotary(b, q, cos, sin, headDim);
  k = rotary(b, k, cos, sin, headDim);
  if (rep > 1) {
    k = repeatKv(b, k, o.kvHeads, rep, headDim);
    v = repeatKv(b, v, o.kvHeads, rep, headDim);
  }
  std::string kT = b.node("Transpose", {k}, {attrInts("perm", {0, 1, 3, 2})});
  std::string c = attention::core(b, q, kT, v, headDim, qDim, mask, "");
  return b.linear(c, "self_attn.o_proj", qDim, h, false);
}

/// Multi-head latent attention of the normed x [B, S, h] as Hugging Face's
/// DeepseekV3Attention writes it: q = q_b_proj(q_a_layernorm(q_a_proj(x)))
/// (or q_proj(x) without a query rank) split per head into the parts
/// without and with rotary embedding; kv_a_proj_with_mqa(x) split into the
/// compressed keys/values and one rotary key k_pe shared by every head;
/// kv_b_proj(kv_a_layernorm(compressed)) split per head into k_nope and v;
/// q = [q_nope, rope(q_pe)], k = [k_nope, rope(k_pe) expanded to every
/// head]; attention with scale 1/sqrt(nope + rope) over values of their own
/// width; o_proj from heads * v-head-dim.
static std::string mlaAttention(GraphBuilder &b, const std::string &x,
                                const std::string &cos, const std::string &sin,
                                const std::string &mask) {
  const ModelOptions &o = b.opts();
  int64_t h = o.hidden, s = o.seq, heads = o.heads;
  int64_t nope = o.qkNopeHeadDim, rope = o.qkRopeHeadDim, dv = o.vHeadDim;
  int64_t dqk = nope + rope, kvRank = o.kvLoraRank;
  std::string q;
  if (o.qLoraRank > 0) {
    q = b.linear(x, "self_attn.q_a_proj", h, o.qLoraRank, false);
    q = rmsNorm(b, q, "self_attn.q_a_layernorm", o.qLoraRank);
    q = b.linear(q, "self_attn.q_b_proj", o.qLoraRank, heads * dqk, false);
  } else {
    q = b.linear(x, "self_attn.q_proj", h, heads * dqk, false);
  }
  std::vector<std::string> qParts = b.nodeN(
      "Split",
      {attention::splitHeads(b, q, heads, dqk), b.constI64({nope, rope})}, 2,
      {attrInt("axis", -1)});
  std::vector<std::string> kvParts = b.nodeN(
      "Split",
      {b.linear(x, "self_attn.kv_a_proj_with_mqa", h, kvRank + rope, false),
       b.constI64({kvRank, rope})},
      2, {attrInt("axis", -1)});
  std::string kv =
      b.linear(rmsNorm(b, kvParts[0], "self_attn.kv_a_layernorm", kvRank),
               "self_attn.kv_b_proj", kvRank, heads * (nope + dv), false);
  std::vector<std::string> kParts = b.nodeN(
      "Split",
      {attention::splitHeads(b, kv, heads, nope + dv), b.constI64({nope, dv})},
      2, {attrInt("axis", -1)});
  std::string kPe =
      b.node("Reshape", {kvParts[1], b.constI64({0, 1, s, rope})});
  std::string qPe = rotary(b, qParts[1], cos, sin, rope);
  kPe = rotary(b, kPe, cos, sin, rope);
  kPe = b.node("Expand", {kPe, b.constI64({1, heads, 1, 1})});
  q = b.node("Concat", {qParts[0], qPe}, {attrInt("axis", -1)});
  std::string k = b.node("Concat", {kParts[0], kPe}, {attrInt("axis", -1)});
  std::string kT = b.node("Transpose", {k}, {attrInts("perm", {0, 1, 3, 2})});
  std::string c =
      attention::core(b, q, kT, kParts[1], dqk, heads * dv, mask, "");
  return b.linear(c, "self_attn.o_proj", heads * dv, h, false);
}

void distopt::modelgen::buildLlama(GraphBuilder &b) {
  const ModelOptions &o = b.opts();
  int64_t h = o.hidden, s = o.seq;
  // Rotary width: the whole head, or latent attention's rotary part.
  int64_t rotaryDim = o.kvLoraRank > 0 ? o.qkRopeHeadDim : o.headDim;
  b.input("input_ids", onnx::TensorProto::INT64, {b.batch(), s});

  b.setScope("model");
  std::string table = b.weight("embed_tokens.weight", {o.vocab, h});
  std::string x = b.node("Gather", {table, "input_ids"}, {attrInt("axis", 0)});

  // cos/sin [S, d], computed once in float32 (opset 17 Cos/Sin have no
  // bf16) and cast to the activation type.
  b.setScope("model.rotary_emb");
  std::vector<float> invFreq;
  for (int64_t i = 0; i < rotaryDim / 2; ++i)
    invFreq.push_back(
        static_cast<float>(1.0 / std::pow(10000.0, 2.0 * i / rotaryDim)));
  std::string pos = b.node("Cast", {attention::positions(b, s)},
                           {attrInt("to", onnx::TensorProto::FLOAT)});
  pos = b.node("Unsqueeze", {pos, b.constI64({1})});
  std::string freqs =
      b.node("Mul", {pos, b.constF32(invFreq, {1, rotaryDim / 2})});
  std::string emb = b.node("Concat", {freqs, freqs}, {attrInt("axis", -1)});
  std::string cos = b.node("Cos", {emb}), sin = b.node("Sin", {emb});
  if (o.dtype != DType::F32) {
    cos = b.node("Cast", {cos}, {attrInt("to", b.elemType())});
    sin = b.node("Cast", {sin}, {attrInt("to", b.elemType())});
  }
  std::string mask = attention::causalMask(b, s);

  for (int64_t i = 0; i < o.layers; ++i) {
    b.setScope("model.layers." + std::to_string(i));
    std::string a = rmsNorm(b, x, "input_layernorm", h);
    x = b.node("Add",
               {x, o.kvLoraRank > 0 ? mlaAttention(b, a, cos, sin, mask)
                                    : gqaAttention(b, a, cos, sin, mask)});

    std::string m = rmsNorm(b, x, "post_attention_layernorm", h);
    bool moe = o.experts > 0 && i >= o.denseLayers;
    x = b.node("Add",
               {x, moe ? moeMlp(b, m) : swiGlu(b, m, "mlp", h, o.ffnHidden)});
  }

  b.setScope("model");
  x = rmsNorm(b, x, "norm", h);
  b.setScope("lm_head");
  b.rename(b.linear(x, "", h, o.vocab, false), "logits");
  b.output("logits", b.elemType(), {b.batch(), s, o.vocab});
}
