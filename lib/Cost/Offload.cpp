//===- Offload.cpp - Storage tiers and offloaded model state ----*- C++ -*-===//
//
// A device's share of its node's tiers, placement by I/O density and the
// CPU optimizer step (docs/cost-model.md, "Offload").
//
//===----------------------------------------------------------------------===//

#include "lib/Cost/Offload.h"

#include <algorithm>
#include <numeric>

using namespace llvm;

namespace distopt::cost {

DeviceTiers deviceTiers(const cluster::NodeGroup &g) {
  DeviceTiers d;
  const cluster::NodeTiers &n = g.tiers;
  double perNode = std::max(1u, g.devicesPerNode);
  // Data between NVMe or disk and the device crosses the device's PCIe
  // link, which the host tier's bandwidth describes.
  double pcie = n[Tier::Host].bandwidth;
  for (unsigned i = 0; i < kNumTiers; ++i) {
    const cluster::StorageTier &t = n.tiers[i];
    if (!t.present())
      continue;
    d.capacity[i] = t.capacity / perNode;
    if (Tier(i) == Tier::Host) {
      d.bandwidth[i] = t.bandwidth;
      d.hostBandwidth[i] = n.hostMemoryBandwidth / perNode;
      continue;
    }
    double share = t.bandwidth / perNode;
    d.bandwidth[i] = pcie > 0 ? std::min(pcie, share) : share;
    d.hostBandwidth[i] = share;
  }
  return d;
}

StringRef offloadKindName(OffloadKind k) {
  static const char *names[] = {"optimizer", "params", "activations"};
  return names[static_cast<unsigned>(k)];
}

std::array<double, kNumTiers> Placement::perTier() const {
  std::array<double, kNumTiers> sum{};
  for (const auto &item : bytes)
    for (unsigned t = 0; t < kNumTiers; ++t)
      sum[t] += item[t];
  return sum;
}

double Placement::secondsPerByte(unsigned i, const OffloadItem &item,
                                 const DeviceTiers &t) const {
  if (i >= bytes.size() || item.bytes <= 0)
    return 0;
  double s = 0;
  for (unsigned k = 0; k < kNumTiers; ++k) {
    if (bytes[i][k] <= 0)
      continue;
    if (item.onHost && Tier(k) == Tier::Host)
      continue; // the CPU step reads host memory itself
    double bw = item.onHost ? t.hostBandwidth[k] : t.bandwidth[k];
    s += bytes[i][k] / item.bytes / bw;
  }
  return s;
}

Placement placeByIoDensity(ArrayRef<OffloadItem> items, const DeviceTiers &t) {
  Placement p;
  p.bytes.assign(items.size(), {});
  // Tiers fastest first (as the device sees them), items densest first;
  // ties keep the given order.
  std::vector<unsigned> tiers, order(items.size());
  for (unsigned k = 0; k < kNumTiers; ++k)
    if (t.capacity[k] > 0)
      tiers.push_back(k);
  std::stable_sort(tiers.begin(), tiers.end(), [&](unsigned a, unsigned b) {
    return t.bandwidth[a] > t.bandwidth[b];
  });
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](unsigned a, unsigned b) {
    return items[a].density() > items[b].density();
  });
  std::array<double, kNumTiers> left = t.capacity;
  for (unsigned i : order) {
    double rest = items[i].bytes;
    for (unsigned k : tiers) {
      double put = std::min(rest, left[k]);
      p.bytes[i][k] += put;
      left[k] -= put;
      rest -= put;
      if (rest <= 0)
        break;
    }
    if (rest > 1e-9 * items[i].bytes)
      p.fits = false;
  }
  return p;
}

double offloadedOptimizerBytesPerParam(const MemoryConfig &cfg) {
  MemoryConfig plain = cfg;
  plain.offload = {};
  plain.zero = 0;
  plain.weightVersions = 1;
  MemoryBreakdown one = staticMemory(1, plain);
  // The fp32 gradient the CPU accumulates into, and without mixed
  // precision a host copy of the fp32 weights the CPU updates.
  return one.optimizer + 4 + (cfg.mixedPrecision ? 0 : 4);
}

double cpuOptimizerStepTime(double shard, double bytesPerParam,
                            double hostMemoryBandwidth, double stateIoSeconds,
                            double uploadSeconds) {
  double update =
      hostMemoryBandwidth > 0 ? shard * bytesPerParam / hostMemoryBandwidth : 0;
  return std::max(update, stateIoSeconds) + uploadSeconds;
}

} // namespace distopt::cost
