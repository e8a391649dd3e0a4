//===- CostModel.h - Op, communication and memory costs ---------*- C++ -*-===//
//
// Roofline op times with per-device, per-op-class efficiency and launch
// overhead; latency-bandwidth communication per link level; collectives by
// algorithm with NCCL's bus-bandwidth factors; memory per device. A profile
// database, when given, overrides the analytic op times.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_LIB_COST_COSTMODEL_H
#define DISTOPT_LIB_COST_COSTMODEL_H

#include "lib/Cluster/Cluster.h"
#include "lib/Cost/ModelDesc.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/Hashing.h"

#include <optional>

namespace distopt::cost {

class ProfileDB;

/// A number and the unit text after it, trimmed: "80GB" -> {80, "GB"},
/// "1e9" -> {1e9, ""}, "4.2 ms" -> {4.2, "ms"}; nullopt when \p text does
/// not start with a finite number.
std::optional<std::pair<double, llvm::StringRef>>
splitNumber(llvm::StringRef text);
/// Parses a byte size: "80GB", "40GiB", "512MB", "1e9" (bytes).
llvm::Expected<double> parseByteSize(llvm::StringRef text);

enum class Recompute { None, Selective, Full };
llvm::StringRef recomputeName(Recompute r);

enum class Collective { AllReduce, ReduceScatter, AllGather, AllToAll };
enum class CollectiveAlgo { Auto, Ring, Tree, Hierarchical };
llvm::StringRef collectiveName(Collective c);

/// Where the members of a communication group sit.
struct GroupShape {
  unsigned size = 1;       ///< ranks in the group
  unsigned perNode = 1;    ///< ranks of the group on one node
  cluster::LinkSpec intra; ///< link between members on one node
  cluster::LinkSpec inter; ///< link between nodes
  unsigned nodes() const {
    return perNode ? (size + perNode - 1) / perNode : 1;
  }
};

/// Time and per-level traffic of one collective on one device.
struct CommCost {
  double time = 0;
  /// Bytes this device sends on each link level.
  double bytes[cluster::kNumLinkLevels] = {0, 0};
};

/// How the ops of a pipeline stage run on one device: the groups it
/// communicates over and what is split among them.
struct ExecConfig {
  GroupShape tp; ///< tensor-parallel group (size t)
  GroupShape cp; ///< context-parallel group (size c): ring attention
  GroupShape ep; ///< expert-parallel group (size e): token all-to-all
  /// Megatron sequence parallelism: TP-replicated per-sample ops (norms,
  /// dropout, residuals) split by sequence over the TP group, and each TP
  /// all-reduce becomes a reduce-scatter plus an all-gather.
  bool sp = false;
  unsigned mbs = 1;
  Recompute recompute = Recompute::None;
  /// Tokens routed to the busiest expert rank over the mean (>= 1): the
  /// expert ops of every rank wait for it.
  double expertImbalance = 1;
  /// TP communication overlapped with the GEMM next to it (Transformer
  /// Engine's userbuffers: the all-gather / reduce-scatter of a projection
  /// runs in chunks under the projection's own GEMM), so only what the
  /// GEMM cannot cover shows.
  bool tpOverlap = false;
  /// Bytes per parameter of the running gradient sum that each
  /// micro-batch's weight gradient after the first of a step adds into
  /// (0: no sum is read). The adding GEMM (oneDNN's sum post-op, cuBLAS's
  /// beta = 1, Megatron-LM's fused weight-gradient accumulation) reads it
  /// as well as writing it.
  double gradSumBytes = 0;
};

/// Per-micro-batch times of a range of layers on one device.
struct RangeTimes {
  double fwd = 0;        ///< forward incl. TP/EP/CP communication
  double bwdInput = 0;   ///< input-grad incl. recomputation and comm
  double bwdWeight = 0;  ///< weight-grad
  /// What the weight-grad takes beyond bwdWeight when it adds into the
  /// running sum (ExecConfig::gradSumBytes): every micro-batch of a step
  /// but the first.
  double bwdWeightAccumulate = 0;
  double recompute = 0;  ///< the part of bwdInput that re-runs forward
  double flops = 0;      ///< executed FLOPs per micro-batch (with recompute)
  double modelFlops = 0; ///< FLOPs without recomputation
  double tpBytes = 0;    ///< TP collective bytes sent per micro-batch
  /// Communication time inside fwd / bwdInput that another micro-batch's
  /// compute can hide (expert all-to-alls, the CP all-gathers around
  /// them, the exposed part of ring attention), for schedules that overlap
  /// micro-batches (DualPipe's F&B pairs). TP collectives are on the layer's
  /// own critical path and are not counted here.
  double fwdComm = 0, bwdComm = 0;
  /// All collective bytes this device sends per micro-batch, per link level
  /// (TP, EP and CP groups may sit on different levels).
  double linkBytes[cluster::kNumLinkLevels] = {0, 0};

  /// Adds \p o field by field: a range's times are its layers' times
  /// added in layer order (CostModel::rangeTimes, LayerTimesCache).
  RangeTimes &operator+=(const RangeTimes &o);
};

class CostModel {
public:
  explicit CostModel(const ProfileDB *profile = nullptr) : profile(profile) {}

  /// Runs every matmul in \p dt (`--dist-dtype=fp8`: FP8 GEMMs, BF16
  /// elsewhere): matmuls are costed at \p dt's peak, fp8 ones at the
  /// device's fp8 matmul efficiency; every other op (and the matmuls marked
  /// keepsPrecision: LM head, router) keeps its own dtype.
  void setMatmulPrecision(DType dt) { matmulDType = dt; }
  std::optional<DType> matmulPrecision() const { return matmulDType; }

  /// Roofline time of \p cost on \p dev: max(compute, memory) + launches.
  double computeTime(const PhaseCost &cost, OpClass cls, DType dt,
                     const cluster::DeviceSpec &dev,
                     unsigned kernels = 1) const;
  /// Time of one phase of \p op for a micro-batch of \p mbs samples with
  /// tensor parallelism \p tp (profile first, analytic otherwise).
  double opTime(const OpDesc &op, Phase phase, const cluster::DeviceSpec &dev,
                unsigned tp, unsigned mbs) const;
  /// The same under \p x (sequence/context split, expert imbalance); no
  /// communication. \p extraRead bytes more are read: in the roofline's
  /// memory term, or after a profiled time, which was measured without
  /// them.
  double opTime(const OpDesc &op, Phase phase, const cluster::DeviceSpec &dev,
                const ExecConfig &x, double extraRead = 0) const;
  /// Fraction of \p op's per-sample cost one device does under \p x: the
  /// micro-batch, divided by t (split ops, or per-sample ops under sequence
  /// parallelism) and by c (per-sample ops under context parallelism), but
  /// for OpDesc::wholeSequence ones, which every context rank runs whole,
  /// and, when replicated over TP (the routing, and the router GEMM that
  /// reads its gathered input: OpDesc::sequenceGathered, routed experts,
  /// and lookups), under sequence parallelism every tensor rank.
  static double shareOf(const OpDesc &op, const ExecConfig &x);
  /// The same for the device's own tokens: divided by c for every
  /// per-sample op. What a whole-sequence op's expert all-to-all carries
  /// (the rank's C/c capacity slots) and the model FLOPs it counts (the
  /// context and tensor ranks' copies of the routing are not the model's
  /// work).
  static double tokenShare(const OpDesc &op, const ExecConfig &x);
  /// Whether \p op, in a layer that sequence parallelism splits by tokens
  /// (sequenceSplits), runs on the tensor rank's part of the tokens with
  /// its weights whole: an op tensor parallelism leaves whole (the norms'
  /// scales and biases, a row-parallel matmul's bias after its sum, latent
  /// attention's down-projections, planning::normalizedOverFeatures), not
  /// the whole-sequence ones every tensor rank runs whole, nor a lookup
  /// (sequence parallelism splits none by tokens), nor one whose weight is
  /// a position table (OpDesc::positionRowsBytes: sliced). Each rank's
  /// weight gradient is then its tokens' part: the programs read such a
  /// weight through a dist.tp_copy, whose backward all-reduces its
  /// gradient over the tensor group.
  static bool splitsWeightGradient(const OpDesc &op, const ExecConfig &x);
  /// Bytes of the weight gradients of \p layer (splitsWeightGradient's
  /// weights, in their dtype) that are all-reduced over the tensor group
  /// in each micro-batch's backward under \p x; 0 without sequence
  /// parallelism or where it does not split the layer.
  static double weightGradSumBytes(const LayerDesc &layer, const ExecConfig &x);
  /// Bytes of the position tables of \p layer (OpDesc::positionRowsBytes)
  /// whose gradients are all-gathered over the tensor group in each
  /// micro-batch's backward under \p x: sequence parallelism slices them to
  /// the rank's positions; 0 without it or where it does not split the
  /// layer.
  static double weightGradGatherBytes(const LayerDesc &layer,
                                      const ExecConfig &x);

  /// The optimizer step over \p params local parameters, each read and
  /// written with \p bytesPerParam bytes in all: the profile's measured
  /// time per parameter when it has one for \p dev, else a memory-bound
  /// elementwise pass (10 FLOPs per parameter).
  double optimizerTime(double params, double bytesPerParam,
                       const cluster::DeviceSpec &dev) const;

  /// Point-to-point message: latency + bytes / bandwidth.
  static double p2pTime(double bytes, const cluster::LinkSpec &link);
  /// Flat collective of \p bytes (the full buffer per rank) over \p n ranks
  /// on one link: ring 2(n-1)/n (all-reduce) or (n-1)/n of bytes over the
  /// bus bandwidth, tree 2 log2(n) latencies.
  static double flatCollectiveTime(Collective kind, double bytes, unsigned n,
                                   const cluster::LinkSpec &link,
                                   CollectiveAlgo algo);
  /// Collective over a group that may span nodes. Hierarchical: intra-node
  /// reduce-scatter, inter-node collective on 1/perNode of the data (each
  /// rank on its own NIC), intra-node all-gather. Auto takes the fastest.
  static CommCost collective(Collective kind, double bytes,
                             const GroupShape &group,
                             CollectiveAlgo algo = CollectiveAlgo::Auto);

  /// Times of layers [begin, end) of \p model for one micro-batch.
  RangeTimes rangeTimes(const ModelDesc &model, unsigned begin, unsigned end,
                        const cluster::DeviceSpec &dev,
                        const GroupShape &tpGroup, unsigned mbs,
                        Recompute recompute) const;
  /// The same under \p x: TP collectives (reduce-scatter + all-gather under
  /// sequence parallelism), an all-to-all over the EP group before and after
  /// the experts in each direction, ring attention over the CP group
  /// (c - 1 steps, each passing 1/c of K and V, overlapped with the
  /// attention kernel; twice the bytes in the backward: K, V and their
  /// gradients), and the all-gathers over the CP group that run a
  /// mixture-of-experts block's routing whole on every context rank
  /// (OpDesc::cpGatherFwdBytes, cpGatherBwdBytes).
  RangeTimes rangeTimes(const ModelDesc &model, unsigned begin, unsigned end,
                        const cluster::DeviceSpec &dev,
                        const ExecConfig &x) const;
  /// Times of one layer under \p x; rangeTimes adds these up.
  RangeTimes layerTimes(const LayerDesc &layer, const cluster::DeviceSpec &dev,
                        const ExecConfig &x) const;

private:
  /// \p kernels set the small-kernel roll-off (FLOPs per kernel),
  /// \p launches the launch overhead.
  double roofline(const PhaseCost &cost, double peak, double eff,
                  const cluster::DeviceSpec &dev, unsigned kernels,
                  unsigned launches) const;

  const ProfileDB *profile;
  std::optional<DType> matmulDType;
};

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

/// The optimizer whose state the memory model holds (AdamW's is Adam's).
enum class Optimizer { Adam, SGD, SGDMomentum };
/// "adam", "sgd" or "momentum" (dist-autodiff's names).
llvm::StringRef optimizerName(Optimizer o);
/// The optimizer of a dist-autodiff name ("adamw" holds Adam's state).
std::optional<Optimizer> parseOptimizer(llvm::StringRef name);

/// What a plan keeps off the device (ZeRO-Offload, ZeRO-Infinity): a set
/// of "opt" (fp32 master weights, optimizer state and gradients live in
/// host memory; the optimizer step runs on the CPU), "params" (the
/// device's fp16 weights too, fetched layer by layer for each forward and
/// backward; needs "opt") and "act" (saved activations and checkpoints,
/// written after the forward and fetched back for the backward). Which
/// tier (host memory, NVMe, disk) holds them is placed by I/O density
/// (lib/Cost/Offload.h).
struct Offload {
  bool optimizer = false, params = false, activations = false;
  bool any() const { return optimizer || params || activations; }
  /// Every part of \p o is offloaded here too.
  bool includes(const Offload &o) const {
    return (optimizer || !o.optimizer) && (params || !o.params) &&
           (activations || !o.activations);
  }
  bool operator==(const Offload &o) const {
    return optimizer == o.optimizer && params == o.params &&
           activations == o.activations;
  }
  bool operator!=(const Offload &o) const { return !(*this == o); }
  /// How many parts (the search tries fewer first).
  unsigned size() const { return optimizer + params + activations; }
  /// "none", "opt", "act", "opt+act", "opt+params", "opt+params+act".
  std::string str() const;
};
/// For attributes that hold an Offload (#dist.plan).
inline llvm::hash_code hash_value(const Offload &o) {
  return llvm::hash_combine(o.optimizer, o.params, o.activations);
}
/// Parses "none" or '+'-joined parts "opt", "params", "act" in any order;
/// the message says what is wrong (unknown part, params without opt).
llvm::Expected<Offload> parseOffload(llvm::StringRef text);
/// Every offload set parseOffload accepts, fewest parts first.
llvm::ArrayRef<Offload> allOffloads();

struct MemoryConfig {
  bool mixedPrecision = true;
  Optimizer optimizer = Optimizer::Adam;
  unsigned zero = 0; ///< ZeRO stage 0-3
  unsigned dp = 1;
  unsigned tp = 1;
  /// Context parallelism: activations split by sequence; ZeRO shards over
  /// the dp * cp ranks that hold the same weights.
  unsigned cp = 1;
  /// Expert parallelism: expert weights split over ep ranks, sharded by ZeRO
  /// over dp * cp / ep.
  unsigned ep = 1;
  /// Sequence parallelism: TP-replicated activations split over t.
  bool sp = false;
  /// Busiest expert rank's tokens over the mean (its activations too).
  double expertImbalance = 1;
  Recompute recompute = Recompute::None;
  /// Weight copies kept for asynchronous schedules (1 = none extra).
  unsigned weightVersions = 1;
  /// Bytes per gradient element in the DP sync (0: the gradient dtype;
  /// Megatron-LM all-reduces fp32 main gradients, 4).
  double gradSyncBytes = 0;
  /// ZeRO-3 under pipeline parallelism keeps a stage's gathered weights and
  /// its unsharded gradient sum (in the gradient-sync dtype) from the first
  /// micro-batch to the last, and reduce-scatters once (torchtitan: FSDP2
  /// with reshard_after_forward=False under PP, and PyTorch's pipeline
  /// stages turn gradient sync off for all but the last micro-batch).
  bool unshardedAcrossMicrobatches = false;
  /// Sequence parallelism whose column-parallel matmuls keep the input they
  /// were given, all-gathered over TP (PyTorch's SequenceParallel plans in
  /// torchtitan), instead of the sequence shard (Megatron re-gathers it in
  /// the backward).
  bool spKeepsGatheredInputs = false;
  /// What lives off the device: staticMemory then holds only what stays.
  Offload offload;
};

struct MemoryBreakdown {
  double weights = 0;
  double grads = 0;
  double optimizer = 0;
  double weightStash = 0; ///< extra weight versions
  /// ZeRO-3's unsharded buffers: gathered weights, unsharded gradients and
  /// the reduce-scatter input (PipelineCosts sets them).
  double gatherBuffers = 0;
  double staticBytes() const {
    return weights + grads + optimizer + weightStash + gatherBuffers;
  }
};

/// Whether sequence parallelism splits layer \p layer's TP-replicated ops
/// and its output by tokens under tensor parallelism of degree \p tp: only
/// a layer with an op of a Megatron region that \p tp splits (an op whose
/// tpMode(tp) is split, not split by channels) has the region after a
/// row-parallel reduce-scatter that the programs split (docs/distributed.md,
/// "Sequence parallelism"). The sums of channel-parallel convolutions stay
/// all-reduces, so a convolution block keeps its activations and its
/// output whole on every tensor rank, as does a lookup whose vocabulary
/// \p tp does not divide.
bool sequenceSplits(const LayerDesc &layer, unsigned tp);

/// Whether a pipeline boundary tensor of \p elements elements (one
/// micro-batch's, as one context rank holds it) goes by Megatron's
/// scatter/gather: each of the \p tp tensor ranks sends its 1/tp of the
/// flattened tensor to the same tensor rank of the next stage, which
/// all-gathers the whole over its tensor group. Only for a tensor every
/// tensor rank holds whole (the caller's to know: with or without
/// sequence parallelism, whose tokens split by rank are sent as they are),
/// tp > 1, only when the plan asks for it (\p scatterGather, `sg=1`), only
/// floating-point values (token ids and masks are sent whole) and only
/// when tp divides \p elements. The one rule of what dist-partition's
/// programs send and of boundaryMessage.
bool scatterGathers(double elements, bool floating, unsigned tp,
                    bool scatterGather);

/// The message that carries the tensor leaving \p layer to the next
/// pipeline stage (or its gradient back), per micro-batch of \p mbs
/// samples, for the pipeline messages of PipelineCosts and of the search's
/// tables alike. Each CP rank sends its 1/cp of the sequence. Split over
/// the tp ranks: under sequence parallelism, where the layer's output is
/// split by tokens (sequenceSplits), each tensor rank sends its tokens to
/// the same tensor rank of the next stage, which keeps them split; else,
/// with or without sequence parallelism, a tensor of the boundary that
/// tensor parallelism splits (a cut inside a Megatron region) goes as each
/// rank's 1/tp, a whole one that scatterGathers as 1/tp which the receiver
/// all-gathers whole, and the others whole from every tensor rank (what
/// dist-partition's programs send).
struct BoundaryMessage {
  /// Bytes each sending rank puts on its link.
  double bytes = 0;
  /// Bytes the receiving stage all-gathers over its TP group (0: none).
  double gatherBytes = 0;
  /// Time over \p link, and of the gather over the receiver's TP group.
  double time(const cluster::LinkSpec &link,
              const GroupShape &receiverTp) const;
};
BoundaryMessage boundaryMessage(const LayerDesc &layer, unsigned mbs,
                                unsigned tp, unsigned cp, bool scatterGather,
                                bool sp);

/// Parameters of layers [begin, end) held by one TP rank (tied copies too,
/// unless their owner layer is in the range).
double paramsPerDevice(const ModelDesc &model, unsigned begin, unsigned end,
                       unsigned tp);
/// Parameters of one device, split into those every data-parallel replica
/// holds (dense) and the routed experts (divided by \p ep as well).
struct ParamSplit {
  double dense = 0, expert = 0;
  double total() const { return dense + expert; }
  ParamSplit &operator+=(const ParamSplit &o) {
    dense += o.dense;
    expert += o.expert;
    return *this;
  }
};
ParamSplit paramSplit(const ModelDesc &model, unsigned begin, unsigned end,
                      unsigned tp, unsigned ep);
/// One op's parameters on one device (split as OpDesc::tpMode says).
ParamSplit paramSplit(const OpDesc &op, unsigned tp, unsigned ep);
/// Layers [begin, end) of a model.
struct LayerRange {
  unsigned begin = 0, end = 0;
  bool contains(int layer) const {
    return layer >= int(begin) && layer < int(end);
  }
};
/// Whether one of \p ranges holds \p layer.
inline bool holds(llvm::ArrayRef<LayerRange> ranges, int layer) {
  for (const LayerRange &r : ranges)
    if (r.contains(layer))
      return true;
  return false;
}
/// The parameters of one layer's ops that are not tied to another layer's
/// (ops with a tiedLayer count where paramSplit says).
ParamSplit untiedParams(const LayerDesc &layer, unsigned tp, unsigned ep);
/// The parameters of one device holding the layers of \p ranges (the chunks
/// of a pipeline rank), layer by layer: its untied parameters, then its
/// tied ones unless the device holds their owner layer too (then they
/// count there once).
ParamSplit paramSplit(const ModelDesc &model, llvm::ArrayRef<LayerRange> ranges,
                      unsigned tp, unsigned ep);
/// Weights, gradients, optimizer state and stashed versions per device for
/// \p params parameters: mixed-precision Adam keeps 2 + 2 + 12 bytes per
/// parameter (ZeRO paper); ZeRO-1/2/3 divide optimizer / +grads / +weights
/// by dp (times cp). Under cfg.offload the device keeps only what is not
/// offloaded: no optimizer state or gradients with "opt" (gradients leave
/// layer by layer, backwardWorkingBytes holds one layer's), no weights
/// with "params".
MemoryBreakdown staticMemory(double params, const MemoryConfig &cfg);
/// The same with experts, sharded by ZeRO over dp * cp / ep instead.
MemoryBreakdown staticMemory(const ParamSplit &params, const MemoryConfig &cfg);
/// Activation bytes one micro-batch of \p mbs samples leaves saved on a
/// device for layers [begin, end), under \p cfg.recompute. Full
/// recomputation keeps the input of every checkpointed block
/// (LayerDesc::continuesBlock) and of the range's first layer: a pipeline
/// stage that starts inside a block re-runs its part of the block from the
/// tensor it received, which it keeps as that part's checkpoint.
double activationBytes(const ModelDesc &model, unsigned begin, unsigned end,
                       unsigned mbs, const MemoryConfig &cfg);
/// Part of the activations that a zero-bubble W pass still needs after the
/// B pass (inputs of the weight-grad matmuls).
double weightGradStashBytes(const ModelDesc &model, unsigned begin,
                            unsigned end, unsigned mbs,
                            const MemoryConfig &cfg);
/// Transient bytes while one layer's backward runs (under full
/// recomputation the recomputed activations of its block's layers in
/// [begin, end) up to it, otherwise the largest gradient buffer).
double backwardWorkingBytes(const ModelDesc &model, unsigned begin,
                            unsigned end, unsigned mbs,
                            const MemoryConfig &cfg);

} // namespace distopt::cost

#endif // DISTOPT_LIB_COST_COSTMODEL_H
