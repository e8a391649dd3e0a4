//===- Transformer.cpp - GPT and BERT graphs --------------------*- C++ -*-===//
//
// Part of DistOpt. GPT-2/3 (pre-LN decoder, fused QKV, causal Trilu/Where
// mask, tanh GELU, LM head tied to the token embedding, training-mode
// Dropout where GPT-2 has it with --dropout) and BERT (post-LN
// encoder, token/segment/position embeddings, additive padding mask, erf
// GELU, pooler), written as the PyTorch exporter writes them at opset 17.
//
//===----------------------------------------------------------------------===//

#include "Families.h"

#include <cmath>

using namespace distopt::modelgen;

std::string attention::splitHeads(GraphBuilder &b, const std::string &x,
                                  int64_t heads, int64_t headDim,
                                  bool transposed) {
  // 0 copies batch and sequence, so the graph stays batch-agnostic.
  std::string r = b.node("Reshape", {x, b.constI64({0, 0, heads, headDim})});
  std::vector<int64_t> perm = transposed ? std::vector<int64_t>{0, 2, 3, 1}
                                         : std::vector<int64_t>{0, 2, 1, 3};
  return b.node("Transpose", {r}, {attrInts("perm", perm)});
}

std::string attention::core(GraphBuilder &b, const std::string &q,
                            const std::string &kT, const std::string &v,
                            int64_t headDim, int64_t hidden,
                            const std::string &causal,
                            const std::string &additive) {
  std::string s = b.matmul(q, kT);
  s = b.node("Mul", {s, b.constScalar(1.0 / std::sqrt(double(headDim)))});
  if (!additive.empty())
    s = b.node("Add", {s, additive});
  if (!causal.empty())
    s = b.node("Where", {causal, s, b.constLowest()});
  std::string p = b.dropout(b.node("Softmax", {s}, {attrInt("axis", -1)}));
  std::string c = b.matmul(p, v);
  c = b.node("Transpose", {c}, {attrInts("perm", {0, 2, 1, 3})});
  return b.node("Reshape", {c, b.constI64({0, 0, hidden})});
}

std::string attention::causalMask(GraphBuilder &b, int64_t seq) {
  onnx::TensorProto one;
  one.set_data_type(onnx::TensorProto::BOOL);
  one.add_dims(1);
  one.add_int32_data(1);
  std::string ones = b.node("ConstantOfShape", {b.constI64({seq, seq})},
                            {attrTensor("value", std::move(one))});
  return b.node("Trilu", {ones}, {attrInt("upper", 0)});
}

std::string attention::positions(GraphBuilder &b, int64_t seq) {
  return b.node("Range", {b.constI64({0}, true), b.constI64({seq}, true),
                          b.constI64({1}, true)});
}

/// GELU, tanh approximation (GPT-2's gelu_new) as exported at opset 17.
static std::string geluTanh(GraphBuilder &b, const std::string &x) {
  std::string cube = b.node("Pow", {x, b.constScalar(3.0)});
  std::string t = b.node("Mul", {cube, b.constScalar(0.044715)});
  t = b.node("Add", {x, t});
  t = b.node("Mul", {t, b.constScalar(std::sqrt(2.0 / M_PI))});
  t = b.node("Tanh", {t});
  t = b.node("Add", {t, b.constScalar(1.0)});
  std::string half = b.node("Mul", {x, b.constScalar(0.5)});
  return b.node("Mul", {half, t});
}

/// GELU, exact erf form (BERT) as exported at opset 17.
static std::string geluErf(GraphBuilder &b, const std::string &x) {
  std::string t = b.node("Div", {x, b.constScalar(std::sqrt(2.0))});
  t = b.node("Erf", {t});
  t = b.node("Add", {t, b.constScalar(1.0)});
  t = b.node("Mul", {x, t});
  return b.node("Mul", {t, b.constScalar(0.5)});
}

void distopt::modelgen::buildGpt(GraphBuilder &b) {
  const ModelOptions &o = b.opts();
  int64_t h = o.hidden, s = o.seq, headDim = o.hidden / o.heads;
  b.input("input_ids", onnx::TensorProto::INT64, {b.batch(), s});

  b.setScope("transformer");
  std::string wte = b.weight("wte.weight", {o.vocab, h});
  std::string wpe = b.weight("wpe.weight", {s, h});
  std::string x = b.node("Gather", {wte, "input_ids"}, {attrInt("axis", 0)});
  std::string pos =
      b.node("Gather", {wpe, attention::positions(b, s)}, {attrInt("axis", 0)});
  x = b.dropout(b.node("Add", {x, pos}));
  std::string mask = attention::causalMask(b, s);

  for (int64_t i = 0; i < o.layers; ++i) {
    b.setScope("transformer.h." + std::to_string(i));
    std::string a = b.layerNorm(x, "ln_1", h, 1e-5f);
    std::string qkv = b.linear(a, "attn.c_attn", h, 3 * h);
    std::vector<std::string> parts = b.nodeN(
        "Split", {qkv, b.constI64({h, h, h})}, 3, {attrInt("axis", -1)});
    std::string q = attention::splitHeads(b, parts[0], o.heads, headDim);
    std::string kT = attention::splitHeads(b, parts[1], o.heads, headDim,
                                           /*transposed=*/true);
    std::string v = attention::splitHeads(b, parts[2], o.heads, headDim);
    std::string c = attention::core(b, q, kT, v, headDim, h, mask, "");
    x = b.node("Add", {x, b.dropout(b.linear(c, "attn.c_proj", h, h))});

    std::string m = b.layerNorm(x, "ln_2", h, 1e-5f);
    m = geluTanh(b, b.linear(m, "mlp.c_fc", h, 4 * h));
    x = b.node("Add", {x, b.dropout(b.linear(m, "mlp.c_proj", 4 * h, h))});
  }

  b.setScope("transformer");
  x = b.layerNorm(x, "ln_f", h, 1e-5f);
  // The LM head shares the token embedding (GPT-2/3 tie them).
  b.setScope("lm_head");
  std::string wteT = b.node("Transpose", {wte}, {attrInts("perm", {1, 0})});
  b.rename(b.matmul(x, wteT), "logits");
  b.output("logits", b.elemType(), {b.batch(), s, o.vocab});
}

void distopt::modelgen::buildBert(GraphBuilder &b) {
  const ModelOptions &o = b.opts();
  int64_t h = o.hidden, s = o.seq, headDim = o.hidden / o.heads;
  const float eps = 1e-12f;
  for (const char *name : {"input_ids", "token_type_ids", "attention_mask"})
    b.input(name, onnx::TensorProto::INT64, {b.batch(), s});

  b.setScope("embeddings");
  std::string words = b.weight("word_embeddings.weight", {o.vocab, h});
  std::string posTable = b.weight("position_embeddings.weight", {s, h});
  std::string types = b.weight("token_type_embeddings.weight", {2, h});
  std::string x = b.node("Gather", {words, "input_ids"}, {attrInt("axis", 0)});
  x = b.node("Add", {x, b.node("Gather", {types, "token_type_ids"},
                               {attrInt("axis", 0)})});
  x = b.node("Add", {x, b.node("Gather", {posTable, attention::positions(b, s)},
                               {attrInt("axis", 0)})});
  x = b.layerNorm(x, "LayerNorm", h, eps);

  // (1 - mask) * lowest, broadcast over heads and query positions.
  b.setScope("extended_attention_mask");
  std::string m =
      b.node("Cast", {"attention_mask"}, {attrInt("to", b.elemType())});
  m = b.node("Sub", {b.constScalar(1.0), m});
  m = b.node("Mul", {m, b.constLowest()});
  std::string additive = b.node("Unsqueeze", {m, b.constI64({1, 2})});

  for (int64_t i = 0; i < o.layers; ++i) {
    b.setScope("encoder.layer." + std::to_string(i));
    std::string q = attention::splitHeads(
        b, b.linear(x, "attention.self.query", h, h), o.heads, headDim);
    std::string kT = attention::splitHeads(
        b, b.linear(x, "attention.self.key", h, h), o.heads, headDim, true);
    std::string v = attention::splitHeads(
        b, b.linear(x, "attention.self.value", h, h), o.heads, headDim);
    std::string c = attention::core(b, q, kT, v, headDim, h, "", additive);
    std::string a = b.linear(c, "attention.output.dense", h, h);
    x = b.layerNorm(b.node("Add", {a, x}), "attention.output.LayerNorm", h,
                    eps);
    std::string f = geluErf(b, b.linear(x, "intermediate.dense", h, 4 * h));
    f = b.linear(f, "output.dense", 4 * h, h);
    x = b.layerNorm(b.node("Add", {f, x}), "output.LayerNorm", h, eps);
  }
  x = b.rename(x, "last_hidden_state");
  b.output("last_hidden_state", b.elemType(), {b.batch(), s, h});

  // Pooler: tanh(W x[:, 0] + b).
  b.setScope("pooler");
  std::string first =
      b.node("Gather", {x, b.constI64({0}, true)}, {attrInt("axis", 1)});
  std::string pooled = b.node("Tanh", {b.linear(first, "dense", h, h)});
  b.rename(pooled, "pooler_output");
  b.output("pooler_output", b.elemType(), {b.batch(), h});
}
