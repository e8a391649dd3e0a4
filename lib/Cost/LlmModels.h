//===- LlmModels.h - Analytic LLaMA-style and MoE models --------*- C++ -*-===//
//
// Cost-level descriptions of the decoders trained today: LLaMA-style blocks
// (RMSNorm, grouped-query attention as one fused kernel, SwiGLU MLP),
// optionally with mixture-of-experts FFNs (top-k router, routed and shared
// experts, all-to-all dispatch and combine) and DeepSeek's multi-head latent
// attention. The benchmarks and tests build models from these; the graph
// adapter builds the same ModelDesc from imported graphs.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_LIB_COST_LLMMODELS_H
#define DISTOPT_LIB_COST_LLMMODELS_H

#include "lib/Cost/ModelDesc.h"

#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace distopt::cost {

struct LlmConfig {
  std::string name = "llama";
  unsigned layers = 32;
  double hidden = 4096;
  double heads = 32;
  /// Key/value heads (grouped-query attention; = heads for MHA).
  double kvHeads = 8;
  /// Head width; 0: hidden / heads.
  double headDim = 0;
  /// Width of the dense FFN.
  double ffnHidden = 14336;
  /// Gated (SwiGLU) FFN: two input projections; false: one (GeLU or
  /// squared ReLU, as in GPT and Nemotron).
  bool gatedFfn = true;
  double seqLen = 8192;
  double vocab = 128256;
  /// Output projection shares the embedding table.
  bool tiedEmbeddings = false;
  /// One fused attention kernel (FlashAttention); false: the unfused
  /// scores / softmax / context ops with s^2 activations.
  bool fusedAttention = true;
  DType dtype = DType::BF16;
  /// Selective recomputation by torchtitan's per-op policy (its
  /// `selective_ac_option = "op"`): within each block the outputs of every
  /// other matmul (the 1st, 3rd, ... in forward order) and of the fused
  /// attention are saved, the rest of the block re-runs from its input.
  /// Dense GQA blocks only; false: Megatron's selective recomputation (the
  /// attention core, nothing with fused attention).
  bool sacEveryOtherMatmul = false;
  /// The loss runs on an fp32 copy of the logits (torchtitan:
  /// `cross_entropy(pred.float(), ...)`): the log-softmax output is saved in
  /// fp32, and its backward holds the fp32 gradient of that output and of
  /// its input besides it.
  bool fp32Loss = false;
  /// With fp32Loss under TP: PyTorch's loss_parallel (DTensor's decomposed
  /// vocab-parallel log-softmax and NLL), whose backward computes
  /// (zeros + exp(x)) * grad in fp32: three temporaries, not two.
  bool vocabParallelLoss = false;
  /// Norms, RoPE (with the repeat of the K/V heads) and the gated activation
  /// run as eager PyTorch's unfused kernels, as torchtitan's code writes
  /// them without torch.compile: fp32 round trips and one pass over memory
  /// per op (LlmModels.cpp counts the bytes).
  bool eagerElementwise = false;

  /// Mixture of experts: 0 experts is a dense model.
  unsigned experts = 0;
  unsigned topK = 0;
  /// Width of one routed (and of one shared) expert.
  double expertFfn = 0;
  unsigned sharedExperts = 0;
  /// The first denseLayers blocks keep the dense FFN (DeepSeek-V3: 3).
  unsigned denseLayers = 0;
  /// Each expert takes its top-C tokens of the whole sequence
  /// (dist-modelgen's capacity routing, C = k s / E), so context
  /// parallelism runs the routing, dispatch and combine whole on every
  /// context rank with all-gathers over the context group
  /// (routeWholeSequence), as the generated programs do. False: each token
  /// picks its top-k experts by itself (Megatron-Core's router), so each
  /// context rank routes its own tokens and gathers nothing.
  bool sequenceRouting = true;

  /// Multi-head latent attention (DeepSeek-V2/V3) when kvLoraRank > 0:
  /// low-rank query/key-value projections (qLoraRank 0: one query
  /// projection from the hidden width, as DeepSeek-V2-Lite), Q/K heads of
  /// qkNopeDim + qkRopeDim, V heads of vHeadDim.
  double qLoraRank = 0, kvLoraRank = 0;
  double qkNopeDim = 0, qkRopeDim = 0, vHeadDim = 0;

  double headWidth() const { return headDim > 0 ? headDim : hidden / heads; }
  bool moe() const { return experts > 0 && topK > 0; }
  bool mla() const { return kvLoraRank > 0; }
  /// Whether block \p index has a mixture-of-experts FFN.
  bool moeLayer(unsigned index) const { return moe() && index >= denseLayers; }
};

/// One decoder block: norm, attention, norm, FFN (dense or experts).
LayerDesc llmBlock(const LlmConfig &cfg, unsigned index);
/// Embedding layer, cfg.layers blocks, head (final norm, logits, loss).
ModelDesc buildLlm(const LlmConfig &cfg);

/// Parameters of the model; \p activeOnly counts each token's routed experts
/// (topK of them) instead of all.
double llmParamCount(const LlmConfig &cfg, bool activeOnly = false);
/// Model FLOPs of one training sequence (forward and backward, no
/// recomputation; causal attention counted at half), the convention of
/// NeMo's flops_formulas and MFU.
double llmModelFlopsPerSequence(const LlmConfig &cfg);

/// Published configurations (model cards / technical reports).
LlmConfig llama2_7b();
LlmConfig llama2_13b();
LlmConfig llama2_70b();
LlmConfig llama3_8b();
LlmConfig llama3_70b();
LlmConfig llama3_405b();
LlmConfig mixtral8x7b();
/// DeepSeek-V3 (671B total, 37B active; without multi-token prediction).
LlmConfig deepseekV3();
LlmConfig gpt3_5b();
LlmConfig gpt3_20b();
LlmConfig gpt3_175b();
LlmConfig nemotron3_8b();
LlmConfig nemotron3_22b();
LlmConfig nemotron4_15b();
LlmConfig nemotron4_340b();
LlmConfig qwen3_30b_a3b();
LlmConfig qwen3_235b_a22b();
LlmConfig grok1_314b();
/// The configuration named \p name ("llama3-70b", "deepseek-v3", ...: the
/// `name` of each preset above); nullopt if there is none.
std::optional<LlmConfig> llmPreset(llvm::StringRef name);

} // namespace distopt::cost

#endif // DISTOPT_LIB_COST_LLMMODELS_H
