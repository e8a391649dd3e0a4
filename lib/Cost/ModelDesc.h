//===- ModelDesc.h - Cost-level description of a model ----------*- C++ -*-===//
//
// What the cost model, the planner and the simulator know about a network:
// an ordered list of layers, each a list of ops with FLOPs and bytes for the
// forward, backward-input-grad and backward-weight-grad phases separately,
// parameters, activations saved for backward, and the size of the tensor
// that crosses a layer boundary. Costs are given per sample (one element of
// the batch dimension) so they scale with the micro-batch size. The graph-IR
// adapter produces this structure; the builders below produce it from shapes.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_LIB_COST_MODELDESC_H
#define DISTOPT_LIB_COST_MODELDESC_H

#include "lib/Cluster/Cluster.h"

#include <string>
#include <vector>

namespace distopt::cost {

using cluster::DType;
using cluster::OpClass;

/// FLOPs and memory traffic of one phase of one op.
struct PhaseCost {
  double flops = 0;
  double bytesRead = 0;
  double bytesWritten = 0;

  double bytes() const { return bytesRead + bytesWritten; }
  PhaseCost &operator+=(const PhaseCost &o);
  PhaseCost scaled(double k) const;
};

enum class Phase { Forward, BackwardInput, BackwardWeight };

/// How an op divides under Megatron-style tensor parallelism of degree t.
enum class TpMode {
  Replicated, ///< every TP rank does the whole op (norms, dropout)
  Split       ///< FLOPs, bytes, params and saved bytes divide by t
};

struct OpDesc {
  std::string name;
  /// Op class, dtype and per-sample shape: the profile-database key.
  std::string signature;
  OpClass cls = OpClass::Other;
  DType dtype = DType::F32;
  PhaseCost fwd, bwdInput, bwdWeight;
  /// True: costs are per sample and scale with the micro-batch size.
  bool perSample = true;
  /// Trainable parameters (never per sample).
  double params = 0;
  /// Parameters shared with an op of an earlier layer (tied embeddings): the
  /// index of that layer, or -1 when the parameters are this op's own. Tied
  /// parameters take memory on this op's stage unless the stage holds that
  /// layer too, and never add to the model's parameter count.
  int tiedLayer = -1;
  /// Activation bytes saved for backward (per sample): the part divided by
  /// TP, and the part every TP rank keeps whole.
  double savedBytes = 0;
  double savedReplicatedBytes = 0;
  /// Under selective recomputation the op's saved bytes are dropped and its
  /// forward is re-run during backward (attention core, Korthikanti et al.).
  bool selective = false;
  /// What a selective policy that keeps some outputs instead (torchtitan's
  /// per-op one) re-runs and keeps: the share of the forward re-run during
  /// backward (1: all of it) and the bytes per sample still saved (split
  /// over TP like savedBytes for split ops, like savedReplicatedBytes for
  /// replicated ones).
  double selectiveShare = 1;
  double selectiveSavedBytes = 0;
  /// Bytes per sample the backward holds besides the saved bytes while it
  /// runs (an fp32 loss: the gradient of its log-softmax and its input).
  double bwdWorkingBytes = 0;
  TpMode tp = TpMode::Split;
  /// What the tensor-parallel degree must divide for the op's Megatron
  /// region to split: the columns of its column-parallel matmuls (an LM
  /// head's vocabulary, a projection's output features) or a
  /// vocabulary-parallel lookup's table rows; 0: any degree.
  /// dist-tensor-parallel keeps a region or lookup whose dimension the
  /// degree does not divide whole on every tensor rank: a split op runs
  /// whole (tpMode) and no op has the region's TP collectives (tpDivides).
  int64_t tpDivisor = 0;
  /// Split by channels in a channel-parallel convolution region
  /// (planning::ConvChannels): dist-tensor-parallel all-reduces the region's
  /// sums and never splits its values by tokens, so sequence parallelism
  /// leaves such ops (and a layer of nothing else) whole on every tensor
  /// rank (sequenceSplits).
  bool channelSplit = false;
  /// Bytes of a weight the op reads one row per token position of, broadcast
  /// only over the samples: a learned position table added to the tokens
  /// (GPT-2's `wpe` rows, ViT's position embedding). Sequence and context
  /// parallelism slice it to the rank's positions (split::TokenSplit's
  /// dist.all_slice) rather than read it through a copy, so under SP its
  /// gradient is all-gathered whole over the tensor group in each
  /// micro-batch's backward, not summed. 0: the op's weights broadcast over
  /// the tokens.
  double positionRowsBytes = 0;
  /// Bytes all-reduced over the TP group after the forward / backward-input
  /// phase, per sample (Megatron's g and f operators). Under sequence
  /// parallelism each becomes a reduce-scatter plus an all-gather of the
  /// same bytes (Korthikanti et al.: the same volume).
  double tpAllReduceFwdBytes = 0;
  double tpAllReduceBwdBytes = 0;
  /// Routed-expert op of a mixture-of-experts layer: its parameters are
  /// sharded over the expert-parallel group and its time scales with the
  /// load imbalance (the busiest expert rank sets the pace).
  bool expert = false;
  /// Bytes per sample each rank sends in one all-to-all over the
  /// expert-parallel group in the forward and one in the backward (token
  /// dispatch before the experts, or the combine after them).
  double epAllToAllBytes = 0;
  /// Attention: bytes per sample of K and V over the whole sequence, which
  /// ring attention passes around the context-parallel group.
  double cpKvBytes = 0;
  /// Mixture-of-experts routing, dispatch and combine: routing picks each
  /// expert's top-C tokens of the whole sequence, so under context
  /// parallelism every context rank runs the op on the whole sequence
  /// (dist-context-parallel, docs/distributed.md "Expert parallelism"):
  /// its time and saved bytes do not divide by c. Its expert all-to-all
  /// still carries the rank's C/c capacity slots of every expert.
  bool wholeSequence = false;
  /// Reads the block input that sequence parallelism all-gathers over the
  /// tensor group for a whole-sequence routing (a mixture-of-experts
  /// router GEMM beside wholeSequence ops): under SP every tensor rank runs
  /// it on its context rank's whole sequence, while context parallelism
  /// still splits it (its scores are gathered over the context group).
  bool sequenceGathered = false;
  /// Bytes per sample of the whole tensors that context parallelism
  /// all-gathers over the context-parallel group for this op, in the
  /// forward and in the backward (a mixture-of-experts block's routing
  /// input, its experts' outputs, and their gradients).
  double cpGatherFwdBytes = 0;
  double cpGatherBwdBytes = 0;
  /// Kernel launches per phase (routed experts: the number of experts, one
  /// GEMM each, run as one grouped launch; see CostModel::opTime). 0: the
  /// op runs inside a neighbouring kernel (a fused epilogue): no launch, no
  /// small-kernel roll-off.
  unsigned kernels = 1;
  /// Stays at its dtype under a lower matmul precision (Transformer Engine
  /// runs FP8 in the blocks' linear layers only: the LM head and the MoE
  /// router stay BF16).
  bool keepsPrecision = false;

  const PhaseCost &phase(Phase p) const;
  double paramBytes() const;
  /// How tensor parallelism of degree \p degree runs the op: `tp`, but a
  /// split op whose tpDivisor \p degree does not divide runs whole on every
  /// rank.
  TpMode tpMode(unsigned degree) const;
  /// Whether tensor parallelism of degree \p degree splits the op's region.
  bool tpDivides(unsigned degree) const {
    return tpDivisor == 0 || degree <= 1 || tpDivisor % degree == 0;
  }
};

struct LayerDesc {
  std::string name;
  std::vector<OpDesc> ops;
  /// Bytes per sample of the tensor leaving this layer (sent between
  /// pipeline stages; kept as the checkpoint under full recomputation).
  double boundaryBytes = 0;
  /// One tensor leaving the layer, per sample.
  struct BoundaryTensor {
    double bytes = 0;
    double elements = 0;
    /// Floating point: only such tensors go by scatter/gather
    /// (cost::scatterGathers); token ids and masks are sent whole.
    bool floating = true;
    /// Split by tensor parallelism (a cut inside a Megatron region: the
    /// columns of a column-parallel matmul, or channel-split convolution
    /// outputs): each tensor rank holds and sends its 1/tp.
    bool tpSplit = false;
    /// What the tensor-parallel degree must divide for a tpSplit tensor to
    /// be split (its region's OpDesc::tpDivisor); 0: any degree. Under a
    /// degree that does not divide it the tensor is whole on every rank.
    int64_t tpDivisor = 0;
    /// Whether tensor parallelism of degree \p tp splits the tensor.
    bool splitOver(unsigned tp) const {
      return tpSplit && (tpDivisor == 0 || tpDivisor % tp == 0);
    }
  };
  /// The tensors whose bytes boundaryBytes sums, as the imported graph
  /// has them. Empty (the analytic builders): one floating-point tensor
  /// that every tensor-parallel degree divides.
  std::vector<BoundaryTensor> boundaryTensors;
  /// Under full recomputation the layer keeps only its input and re-runs
  /// its forward during backward (Megatron checkpoints transformer blocks,
  /// not the embedding or the head).
  bool checkpoint = true;
  /// The layer is the rest of the previous layer's block (the imported
  /// graph's layers are half-blocks: attention, then the MLP). Under full
  /// recomputation the block keeps one checkpoint, its first layer's input,
  /// and while its backward runs the whole block's recomputed activations
  /// are live at once, as Megatron keeps one input per transformer block.
  /// The analytic builders' layers are whole blocks and never set it.
  bool continuesBlock = false;

  PhaseCost total(Phase p) const;
  double params() const;
};

struct ModelDesc {
  std::string name;
  std::vector<LayerDesc> layers;
  /// Name of the sample dimension ("sequence", "image").
  std::string sampleUnit = "sample";
  /// What the tensor-parallel degree must divide to split the attention by
  /// heads: the gcd of every attention's head count (query and, for
  /// grouped-query attention, key/value heads); 0 when there is none.
  unsigned attentionHeads = 0;
  /// What the tensor-parallel degree must divide to split the convolutions
  /// by channels: the gcd of every channel count tensor parallelism splits
  /// (planning::ConvChannels); 0 when there is none.
  int64_t tpChannels = 0;

  /// Parameter count without tied copies.
  double paramCount() const;
  /// Forward + both backward phases, per sample, without recomputation.
  double trainingFlopsPerSample() const;
  /// Forward FLOPs of layers [begin, end) per sample.
  double forwardFlopsPerSample(unsigned begin, unsigned end) const;
  /// The first layer of layer \p li's checkpointed block: \p li, or the
  /// layer its continuesBlock chain (over checkpointed layers) starts at.
  unsigned blockBegin(unsigned li) const;
  /// The first layer after layer \p li's checkpointed block.
  unsigned blockEnd(unsigned li) const;
};

/// The transformer blocks among a model's layers: a block starts at a
/// layer with attention (a softmax or a fused attention) and runs up to
/// the next such layer; the last one for as many layers as the shortest
/// block before it (a model of one block: two layers, attention and MLP).
/// Returns the first layer of every block and sets \p headBegin to the
/// first layer after the last block (the number of layers without one).
/// Layers before the first block are the embedding.
std::vector<unsigned> transformerBlocks(const ModelDesc &model,
                                        unsigned &headBegin);

//===----------------------------------------------------------------------===//
// Op builders. Each returns per-sample costs with an analytic backward.
//===----------------------------------------------------------------------===//

/// Y[batch, m, n] = X[batch, m, k] * W[k, n] (+ bias). With \p weightIsParam
/// W is a parameter shared across the batch (a linear layer); otherwise it is
/// an activation and both operand gradients are input gradients.
OpDesc matmulOp(llvm::StringRef name, DType dt, double batch, double m,
                double n, double k, bool weightIsParam, bool bias = false);
/// 2-D convolution of one image: C x H x W input, K filters of R x S.
OpDesc convOp(llvm::StringRef name, DType dt, double c, double h, double w,
              double k, double r, double s, double stride = 1, double pad = 0,
              double groups = 1, bool bias = true);
/// Elementwise op over \p elements with \p inputs operands.
OpDesc elementwiseOp(llvm::StringRef name, DType dt, double elements,
                     unsigned inputs = 1, double flopsPerElement = 1);
/// Layer/RMS norm over \p rows rows of \p cols (scale and bias params).
OpDesc normOp(llvm::StringRef name, DType dt, double rows, double cols);
OpDesc softmaxOp(llvm::StringRef name, DType dt, double rows, double cols);
/// Table lookup of \p tokens rows of a \p rows x \p cols table.
OpDesc embeddingOp(llvm::StringRef name, DType dt, double tokens, double rows,
                   double cols);
OpDesc reductionOp(llvm::StringRef name, DType dt, double inElements,
                   double outElements);
/// Copy-like ops: transpose, concat, slice, gather, pad.
OpDesc dataMovementOp(llvm::StringRef name, DType dt, double elements);
/// Softmax cross-entropy over \p rows rows of \p classes logits.
OpDesc lossOp(llvm::StringRef name, DType dt, double rows, double classes);
/// Any other op given by its forward cost (backward assumed 2x).
OpDesc otherOp(llvm::StringRef name, DType dt, PhaseCost fwd);
/// \p op made TP-replicated (every TP rank runs it whole: norms, dropout,
/// residuals) keeping \p savedBytes on every rank.
OpDesc tpReplicated(OpDesc op, double savedBytes);

/// Marks a mixture-of-experts block's routing (\p route: the top-k and
/// capacity selection), \p dispatch and \p combine as context parallelism
/// runs them (dist-context-parallel, docs/distributed.md "Expert
/// parallelism"): whole on every context rank (OpDesc::wholeSequence),
/// with the tensors they read from the token-split ops around them
/// all-gathered over the context-parallel group. Per sample, with the
/// router's scores \p scoreBytes, the block's input \p inputBytes and the
/// routed tokens (every expert's capacity slots) \p routedBytes: forward,
/// the scores, the input and the experts' outputs (the zeros the top-k
/// weights are scattered into and the combine adds into are made from the
/// gathered scores and input, split::TokenSplit); backward, the dispatched
/// tokens' gradient and the combine's output gradient. The gathers' own
/// gradients are slices and move nothing.
void routeWholeSequence(OpDesc &route, OpDesc &dispatch, OpDesc &combine,
                        double scoreBytes, double inputBytes,
                        double routedBytes);

/// Shape of one attention (per sample): query heads and key/value heads
/// (grouped-query when fewer), query and key sequence lengths, head widths
/// of Q/K and of V (they differ in DeepSeek's MLA), causal masking.
struct AttentionShape {
  double heads = 1, kvHeads = 1;
  double seqQ = 1, seqKV = 1;
  double headDimQK = 64, headDimV = 64;
  bool causal = true;
};
/// Fused attention softmax(Q K^T * scale + mask) V as one kernel
/// (FlashAttention): forward 2 * heads * sq * skv * (dqk + dv) FLOPs (half
/// when causal), backward 2 * heads * sq * skv * (3 dqk + 2 dv) (the
/// score matrix is recomputed, five matmuls), no s^2 tensor in memory: it
/// saves only V (Q, K and O are saved by the projections around it, as in
/// Korthikanti et al.) and the log-sum-exp per row.
OpDesc attentionOp(llvm::StringRef name, DType dt, const AttentionShape &a);

//===----------------------------------------------------------------------===//
// GPT (Megatron-LM style) builder.
//===----------------------------------------------------------------------===//

struct GptConfig {
  unsigned layers = 24;
  double hidden = 2304;
  double heads = 24;
  double seqLen = 2048;
  double vocab = 51200;
  /// FFN width as a multiple of hidden.
  double ffnMult = 4;
  DType dtype = DType::BF16;
  /// One fused attention op (FlashAttention) instead of scores, softmax,
  /// dropout and context matmuls with s^2 activations.
  bool fusedAttention = false;
};

/// The first layer of a language model: a vocab-parallel lookup of \p s
/// tokens in a \p v x \p h table (all-reduced over TP in the forward).
LayerDesc tokenEmbeddingLayer(llvm::StringRef opName, DType dt, double s,
                              double v, double h);
/// The last layer: \p norm, the vocab-parallel logits and the cross-entropy.
/// The logits' weights are tied to layer \p tiedLayer's embedding table, or
/// their own when it is -1.
LayerDesc lmHeadLayer(OpDesc norm, llvm::StringRef logitsName, DType dt,
                      double s, double v, double h, int tiedLayer);

/// One transformer block: LN, QKV, attention core, projection, dropout,
/// LN, MLP. Saved bytes follow Korthikanti et al. (34sh + 5as^2 per sample).
LayerDesc gptBlock(const GptConfig &cfg, unsigned index);
/// Embedding layer, cfg.layers blocks, and the head (final norm, logits with
/// tied embedding weights, loss): cfg.layers + 2 layers.
ModelDesc buildGpt(const GptConfig &cfg);
/// Megatron's analytic counts, for tests and the benchmark:
/// P = 12lh^2(1 + 13/(12h) + (V+s)/(12lh)),
/// F = 96Bslh^2(1 + s/(6h) + V/(16lh)) with full recomputation.
double gptParamCount(const GptConfig &cfg);
double gptFlopsPerIteration(const GptConfig &cfg, double globalBatch,
                            bool fullRecompute);

} // namespace distopt::cost

#endif // DISTOPT_LIB_COST_MODELDESC_H
