//===- Llama.cpp - LLaMA graphs ---------------------------------*- C++ -*-===//
//
// Part of DistOpt. LLaMA-style decoder: RMSNorm (emitted as the exporter's
// Pow/ReduceMean/Add/Sqrt/Div/Mul pattern, since opset 17 has no RMSNorm op),
// rotary position embedding computed in the graph, grouped-query attention
// (keys/values repeated with Unsqueeze/Expand/Reshape), SwiGLU MLP, no
// biases, an untied LM head.
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

void distopt::modelgen::buildLlama(GraphBuilder &b) {
  const ModelOptions &o = b.opts();
  int64_t h = o.hidden, s = o.seq, headDim = o.hidden / o.heads;
  int64_t kvDim = o.kvHeads * headDim, rep = o.heads / o.kvHeads;
  b.input("input_ids", onnx::TensorProto::INT64, {b.batch(), s});

  b.setScope("model");
  std::string table = b.weight("embed_tokens.weight", {o.vocab, h});
  std::string x = b.node("Gather", {table, "input_ids"}, {attrInt("axis", 0)});

  // cos/sin [S, d], computed once in float32 (opset 17 Cos/Sin have no
  // bf16) and cast to the activation type.
  b.setScope("model.rotary_emb");
  std::vector<float> invFreq;
  for (int64_t i = 0; i < headDim / 2; ++i)
    invFreq.push_back(
        static_cast<float>(1.0 / std::pow(10000.0, 2.0 * i / headDim)));
  std::string pos = b.node("Cast", {attention::positions(b, s)},
                           {attrInt("to", onnx::TensorProto::FLOAT)});
  pos = b.node("Unsqueeze", {pos, b.constI64({1})});
  std::string freqs =
      b.node("Mul", {pos, b.constF32(invFreq, {1, headDim / 2})});
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
    std::string q = attention::splitHeads(
        b, b.linear(a, "self_attn.q_proj", h, h, false), o.heads, headDim);
    std::string k = attention::splitHeads(
        b, b.linear(a, "self_attn.k_proj", h, kvDim, false), o.kvHeads,
        headDim);
    std::string v = attention::splitHeads(
        b, b.linear(a, "self_attn.v_proj", h, kvDim, false), o.kvHeads,
        headDim);
    q = rotary(b, q, cos, sin, headDim);
    k = rotary(b, k, cos, sin, headDim);
    if (rep > 1) {
      k = repeatKv(b, k, o.kvHeads, rep, headDim);
      v = repeatKv(b, v, o.kvHeads, rep, headDim);
    }
    std::string kT = b.node("Transpose", {k}, {attrInts("perm", {0, 1, 3, 2})});
    std::string c = attention::core(b, q, kT, v, headDim, h, mask, "");
    x = b.node("Add", {x, b.linear(c, "self_attn.o_proj", h, h, false)});

    std::string m = rmsNorm(b, x, "post_attention_layernorm", h);
    std::string gate = b.linear(m, "mlp.gate_proj", h, o.ffnHidden, false);
    gate = b.node("Mul", {gate, b.node("Sigmoid", {gate})});
    std::string up = b.linear(m, "mlp.up_proj", h, o.ffnHidden, false);
    std::string down = b.linear(b.node("Mul", {gate, up}), "mlp.down_proj",
                                o.ffnHidden, h, false);
    x = b.node("Add", {x, down});
  }

  b.setScope("model");
  x = rmsNorm(b, x, "norm", h);
  b.setScope("lm_head");
  b.rename(b.linear(x, "", h, o.vocab, false), "logits");
  b.output("logits", b.elemType(), {b.batch(), s, o.vocab});
}
