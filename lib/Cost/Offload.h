//===- Offload.h - Storage tiers and offloaded model state ------*- C++ -*-===//
//
// What ZeRO-Offload and ZeRO-Infinity keep off the device and what moving
// it costs: a device's share of its node's tiers (host memory over PCIe,
// NVMe, disks), the placement of offloaded data by I/O density, and the
// time terms the pipeline costs add (docs/cost-model.md, "Offload").
// No MLIR dependency.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_LIB_COST_OFFLOAD_H
#define DISTOPT_LIB_COST_OFFLOAD_H

#include "lib/Cluster/Cluster.h"
#include "lib/Cost/CostModel.h"

#include <algorithm>
#include <array>
#include <vector>

namespace distopt::cost {

using cluster::kNumTiers;
using cluster::Tier;

/// One device's share of its node's storage tiers: capacity split evenly
/// among the node's devices, bandwidths as each device sees them.
struct DeviceTiers {
  /// Bytes of each tier this device may fill.
  std::array<double, kNumTiers> capacity{};
  /// Bytes/s between the device and each tier: host memory at its PCIe
  /// link; NVMe and disks at the node's bandwidth over its devices, and no
  /// faster than the PCIe link the data crosses.
  std::array<double, kNumTiers> bandwidth{};
  /// Bytes/s between the CPU and each tier (the optimizer state the CPU
  /// updates in place): host memory at its DRAM bandwidth, NVMe and disks
  /// at their share of the node's.
  std::array<double, kNumTiers> hostBandwidth{};
  bool any() const {
    for (double c : capacity)
      if (c > 0)
        return true;
    return false;
  }
};

/// The tiers a device of node group \p g sees.
DeviceTiers deviceTiers(const cluster::NodeGroup &g);

/// Offloaded data of one device.
enum class OffloadKind : unsigned {
  Optimizer = 0,
  Params = 1,
  Activations = 2
};
constexpr unsigned kNumOffloadKinds = 3;
llvm::StringRef offloadKindName(OffloadKind k);

struct OffloadItem {
  OffloadKind kind = OffloadKind::Optimizer;
  /// Bytes kept in the tiers.
  double bytes = 0;
  /// Bytes moved between the tiers and where the data is used, per
  /// iteration (reads and writes).
  double traffic = 0;
  /// Used by the CPU (the optimizer state): host memory costs it nothing
  /// beyond the CPU step, the other tiers hostBandwidth; otherwise the data
  /// crosses to the device at DeviceTiers::bandwidth.
  bool onHost = false;
  /// I/O density: bytes moved per byte kept.
  double density() const { return bytes > 0 ? traffic / bytes : 0; }
};

/// Where the offloaded items of one device live.
struct Placement {
  /// bytes[item][tier], in the order of the items given.
  std::vector<std::array<double, kNumTiers>> bytes;
  /// Whether the tiers hold everything (otherwise the rest is in no tier).
  bool fits = true;
  /// Bytes in each tier over all items.
  std::array<double, kNumTiers> perTier() const;
  /// Seconds to move one byte of item \p i: its share in each tier over
  /// that tier's bandwidth (host memory is free for data used on the host).
  double secondsPerByte(unsigned i, const OffloadItem &item,
                        const DeviceTiers &t) const;
};

/// Places \p items by I/O density: the densest first into the fastest
/// tier, each split at a tier's end (the fractional knapsack that minimises
/// the total transfer time within the capacities when a tier's time is its
/// traffic over its bandwidth).
Placement placeByIoDensity(llvm::ArrayRef<OffloadItem> items,
                           const DeviceTiers &t);

/// Bytes of host state per parameter under "opt": the fp32 master weights
/// (a copy of the fp32 weights without mixed precision), the optimizer's
/// state and the fp32 gradient the CPU accumulates into (16 for Adam
/// either way; ZeRO-Offload, Sec. 4).
double offloadedOptimizerBytesPerParam(const MemoryConfig &cfg);

/// Per-micro-batch transfers of one virtual stage on one device.
struct StageOffload {
  /// Bytes per pass (forward and backward each) of the fetched weights,
  /// per micro-batch of the saved activations (written after the forward,
  /// read before the backward) and of the gradient shard sent to the host
  /// after each backward (the CPU accumulates it).
  double paramBytes = 0, activationBytes = 0, gradBytes = 0;
  /// Seconds per byte of the weights and activations (their placement) and
  /// of the gradients (host memory over PCIe).
  double paramSecondsPerByte = 0, activationSecondsPerByte = 0,
         gradSecondsPerByte = 0;
  /// Device-link time of the forward: weights in, activations out.
  double forwardTransfer() const {
    return paramBytes * paramSecondsPerByte +
           activationBytes * activationSecondsPerByte;
  }
  /// Of the backward: weights and activations in, gradients out.
  double backwardTransfer() const {
    return forwardTransfer() + gradBytes * gradSecondsPerByte;
  }
};

/// The optimizer step on the CPU (ZeRO-Offload's CPU-Adam) over \p shard
/// parameters, each read and written with \p bytesPerParam bytes at the
/// device's share of the node's DRAM bandwidth; the state's part in NVMe or
/// on disk streams in and out meanwhile (\p stateIoSeconds, ZeRO-Infinity
/// overlaps it with the update), then the updated fp16 weights go to the
/// device (\p uploadSeconds; 0 when they live off the device):
/// max(shard * bytesPerParam / bandwidth, stateIoSeconds) + uploadSeconds.
double cpuOptimizerStepTime(double shard, double bytesPerParam,
                            double hostMemoryBandwidth, double stateIoSeconds,
                            double uploadSeconds);

} // namespace distopt::cost

#endif // DISTOPT_LIB_COST_OFFLOAD_H
