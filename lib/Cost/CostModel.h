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

#include <optional>

namespace distopt::cost {

class ProfileDB;

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

/// Per-micro-batch times of a range of layers on one device.
struct RangeTimes {
  double fwd = 0;        ///< forward incl. TP all-reduces
  double bwdInput = 0;   ///< input-grad incl. recomputation and TP comm
  double bwdWeight = 0;  ///< weight-grad
  double recompute = 0;  ///< the part of bwdInput that re-runs forward
  double flops = 0;      ///< executed FLOPs per micro-batch (with recompute)
  double modelFlops = 0; ///< FLOPs without recomputation
  double tpBytes = 0;    ///< TP all-reduce bytes sent per micro-batch
};

class CostModel {
public:
  explicit CostModel(const ProfileDB *profile = nullptr) : profile(profile) {}

  /// Roofline time of \p cost on \p dev: max(compute, memory) + launches.
  double computeTime(const PhaseCost &cost, OpClass cls, DType dt,
                     const cluster::DeviceSpec &dev,
                     unsigned kernels = 1) const;
  /// Time of one phase of \p op for a micro-batch of \p mbs samples with
  /// tensor parallelism \p tp (profile first, analytic otherwise).
  double opTime(const OpDesc &op, Phase phase, const cluster::DeviceSpec &dev,
                unsigned tp, unsigned mbs) const;

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

private:
  const ProfileDB *profile;
};

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

enum class Optimizer { Adam, SGD, SGDMomentum };

struct MemoryConfig {
  bool mixedPrecision = true;
  Optimizer optimizer = Optimizer::Adam;
  unsigned zero = 0; ///< ZeRO stage 0-3
  unsigned dp = 1;
  unsigned tp = 1;
  Recompute recompute = Recompute::None;
  /// Weight copies kept for asynchronous schedules (1 = none extra).
  unsigned weightVersions = 1;
  /// Bytes per gradient element in the DP sync (0: the gradient dtype;
  /// Megatron-LM all-reduces fp32 main gradients, 4).
  double gradSyncBytes = 0;
};

struct MemoryBreakdown {
  double weights = 0;
  double grads = 0;
  double optimizer = 0;
  double weightStash = 0; ///< extra weight versions
  double staticBytes() const {
    return weights + grads + optimizer + weightStash;
  }
};

/// Parameters of layers [begin, end) held by one TP rank (tied copies too).
double paramsPerDevice(const ModelDesc &model, unsigned begin, unsigned end,
                       unsigned tp);
/// Weights, gradients, optimizer state and stashed versions per device for
/// \p params parameters: mixed-precision Adam keeps 2 + 2 + 12 bytes per
/// parameter (ZeRO paper); ZeRO-1/2/3 divide optimizer / +grads / +weights
/// by dp.
MemoryBreakdown staticMemory(double params, const MemoryConfig &cfg);
/// Activation bytes one micro-batch of \p mbs samples leaves saved on a
/// device for layers [begin, end), under \p cfg.recompute.
double activationBytes(const ModelDesc &model, unsigned begin, unsigned end,
                       unsigned mbs, const MemoryConfig &cfg);
/// Part of the activations that a zero-bubble W pass still needs after the
/// B pass (inputs of the weight-grad matmuls).
double weightGradStashBytes(const ModelDesc &model, unsigned begin,
                            unsigned end, unsigned mbs,
                            const MemoryConfig &cfg);
/// Transient bytes while one layer's backward runs (the recomputed layer
/// under full recomputation, otherwise the largest gradient buffer).
double backwardWorkingBytes(const ModelDesc &model, unsigned begin,
                            unsigned end, unsigned mbs,
                            const MemoryConfig &cfg);

} // namespace distopt::cost

#endif // DISTOPT_LIB_COST_COSTMODEL_H
