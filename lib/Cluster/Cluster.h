//===- Cluster.h - Devices, nodes and link levels ---------------*- C++ -*-===//
//
// A cluster is a list of node groups (each: a device type, devices per node,
// node count, intra-node link) joined by one network level, optionally with
// racks of nodes whose uplinks are oversubscribed. Devices are
// numbered node-major: all devices of node 0, then node 1, ... in the order the
// node groups are listed. Clusters come from YAML files or from presets
// ("dgx-a100-80gb:4" = four DGX A100 nodes). No MLIR dependency.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_LIB_CLUSTER_CLUSTER_H
#define DISTOPT_LIB_CLUSTER_CLUSTER_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace llvm {
class raw_ostream;
} // namespace llvm

namespace distopt::cluster {

/// Element types the cost model knows a peak rate for.
enum class DType { F32, TF32, F16, BF16, F8, I8, I32, I64 };
constexpr unsigned kNumDTypes = 8;

/// Bytes per element of \p t.
unsigned dtypeBytes(DType t);
llvm::StringRef dtypeName(DType t);
/// Parses "fp32", "f32", "bf16", ...; returns false if unknown.
bool parseDType(llvm::StringRef s, DType &out);

/// Operation classes with their own achievable efficiency per device.
enum class OpClass {
  MatMul,
  Conv,
  Elementwise,
  Norm,
  Softmax,
  Embedding,
  Reduction,
  DataMovement,
  Loss,
  Other,
  /// Fused attention (FlashAttention-style): one kernel, no s^2 tensors.
  Attention
};
constexpr unsigned kNumOpClasses = 11;
llvm::StringRef opClassName(OpClass c);
bool parseOpClass(llvm::StringRef s, OpClass &out);

/// The achievable fractions of peak a device description that gives none
/// gets: matmul 0.75, convolution 0.6, every other op class 0.5.
std::array<double, kNumOpClasses> defaultEfficiencies();

/// One kind of accelerator or CPU.
struct DeviceSpec {
  std::string name;
  /// Peak FLOP/s per dtype; 0 means "not supported" (falls back to F32).
  std::array<double, kNumDTypes> peakFlops{};
  double memoryBytes = 0;
  /// Main-memory bandwidth, bytes/s.
  double memoryBandwidth = 0;
  /// Achievable fraction of peak FLOP/s per op class (compute-bound ops).
  std::array<double, kNumOpClasses> efficiency{};
  /// Achievable fraction of memory bandwidth (memory-bound ops).
  double memoryEfficiency = 0.8;
  /// Fixed cost per kernel launch, seconds.
  double launchOverhead = 0;
  /// FLOPs of one kernel at which a compute-bound op reaches half of its
  /// achievable efficiency (small kernels do not fill the device).
  double halfEfficiencyFlops = 0;
  /// Achievable fraction of the fp8 peak for matmuls run in fp8 (0: the
  /// matmul efficiency). FP8 GEMMs reach a lower fraction of their peak
  /// than BF16 ones and pay for scaling/casting kernels.
  double fp8MatmulEfficiency = 0;

  /// Peak for \p t, falling back to F32 when the device lacks it.
  double peak(DType t) const;
};

/// A point-to-point / collective link level.
struct LinkSpec {
  std::string name;
  /// Per-device bandwidth in each direction, bytes/s.
  double bandwidth = 0;
  /// Per-message latency, seconds.
  double latency = 0;
  /// Fraction of `bandwidth` that collectives reach as NCCL bus bandwidth.
  double collectiveEfficiency = 1.0;
};

/// Storage below a device's own memory, per node: host DRAM, NVMe SSDs,
/// hard disks (ZeRO-Offload / ZeRO-Infinity place model state there).
enum class Tier : unsigned { Host = 0, NVMe = 1, HDD = 2 };
constexpr unsigned kNumTiers = 3;
/// "host", "nvme", "hdd" (the YAML keys).
llvm::StringRef tierName(Tier t);

/// One storage tier of a node. Capacity 0: the node has none.
struct StorageTier {
  /// Bytes per node, shared by the node's devices.
  double capacity = 0;
  /// Bytes/s each direction: for host memory per device (its PCIe link to
  /// the host), for NVMe and disks per node (shared by its devices).
  double bandwidth = 0;
  bool present() const { return capacity > 0; }
};

/// The tiers of one node (docs/cost-model.md, "Storage tiers").
struct NodeTiers {
  std::array<StorageTier, kNumTiers> tiers{};
  /// Achievable DRAM bandwidth of the node's CPUs, bytes/s: the optimizer
  /// step offloaded to the CPU (ZeRO-Offload) streams its state at it,
  /// shared by the node's devices. Required with a host tier.
  double hostMemoryBandwidth = 0;
  const StorageTier &operator[](Tier t) const {
    return tiers[static_cast<unsigned>(t)];
  }
  StorageTier &operator[](Tier t) { return tiers[static_cast<unsigned>(t)]; }
  bool any() const {
    for (const StorageTier &t : tiers)
      if (t.present())
        return true;
    return false;
  }
};

/// Nodes of one kind.
struct NodeGroup {
  unsigned deviceIndex = 0; ///< into Cluster::devices
  unsigned devicesPerNode = 1;
  unsigned nodes = 1;
  LinkSpec intraNode;
  /// Host memory, NVMe and disks of each node (none given: nothing can be
  /// offloaded).
  NodeTiers tiers;
  /// NICs per node for the network, each shared by devicesPerNode / nics
  /// consecutive devices; 0: one per device. The network's bandwidth is a
  /// device's share of its NIC when all of them send; a device that sends
  /// alone gets the whole NIC (the migration model, docs/resilience.md).
  unsigned nics = 0;
  unsigned devicesPerNic() const { return nics ? devicesPerNode / nics : 1; }
};

/// Link levels, innermost first.
enum class LinkLevel : unsigned { IntraNode = 0, Network = 1 };
constexpr unsigned kNumLinkLevels = 2;

/// How often nodes are taken away (spot / preemptible instances), how long
/// a replacement takes, what a node costs and how fast a node writes its
/// checkpoint to storage (docs/resilience.md). The rate holds for every
/// node of the cluster.
struct Availability {
  /// Preemptions per node-hour of a preemptible node (>= 0).
  double preemptionsPerNodeHour = 0;
  /// Seconds from a preemption until a replacement node runs.
  double replacementSeconds = 0;
  /// Dollars per node-hour, on demand and preemptible.
  double onDemandPrice = 0, preemptiblePrice = 0;
  /// Bytes/s one node writes (and reads back) checkpoint state to storage;
  /// the documented default is 1 GB/s.
  double checkpointBandwidth = 1e9;
  /// Seconds a restart takes besides reading the state: the job's
  /// processes starting, setting up their communicators and loading their
  /// program. Unset when the YAML gives none: the planner then takes the
  /// one dist-run recorded (--dist-relaunch), else 0 (relaunchCost).
  std::optional<double> relaunchSeconds;
};

/// The process restart the planner prices (a pause-and-resume switch, a
/// restart after a preemption) and where the figure comes from, for the
/// reports (docs/resilience.md, "The relaunch").
struct RelaunchCost {
  double seconds = 0;
  /// "availability.relaunch_s of cluster 'NAME'", "recorded by dist-run in
  /// FILE" or "none given".
  std::string source;
  bool given = false;
};

/// The input side of every node (docs/cost-model.md, "Data stalls"): the
/// storage the training samples are read from, the host memory that caches
/// them and the CPU cores that preprocess them. The same for every node.
struct InputSide {
  /// Bytes/s one node reads from the dataset's storage (local NVMe, or its
  /// share of a network file system); the node's devices share it.
  double storageBandwidth = 0;
  /// Bytes of host memory per node that cache the dataset (the OS page
  /// cache); 0: nothing is cached.
  double pageCacheBytes = 0;
  /// CPU cores per device that read and preprocess samples (> 0; may be
  /// fractional).
  double cpuCoresPerDevice = 0;
};

struct Cluster {
  std::string name;
  std::string description;
  std::vector<DeviceSpec> devices;
  std::vector<NodeGroup> groups;
  LinkSpec network;
  /// Nodes that share one rack (or pod) switch with full bisection inside
  /// it; 0: the whole network has full bisection.
  unsigned nodesPerRack = 0;
  /// Oversubscription of the links that leave a rack: traffic between racks
  /// gets network.bandwidth / rackOversubscription per device (>= 1).
  double rackOversubscription = 1;
  /// Preemption rate, replacement time and prices; unset: the cluster says
  /// nothing about availability (no resilience planning).
  std::optional<Availability> availability;
  /// Storage, page cache and CPU cores that feed the devices; unset: the
  /// cluster says nothing about its input side (no data-stall model).
  std::optional<InputSide> input;

  unsigned numDevices() const;
  unsigned numNodes() const;
  /// Node index and group of global device \p rank.
  unsigned nodeOf(unsigned rank) const;
  const NodeGroup &groupOf(unsigned rank) const;
  const DeviceSpec &deviceOf(unsigned rank) const;
  /// Link between two ranks (intra-node if they share a node).
  LinkLevel levelBetween(unsigned a, unsigned b) const;
  const LinkSpec &link(LinkLevel level, unsigned rank) const;
  /// The NIC global device \p rank sends to and receives from the
  /// network through, as the lowest rank of the devices that share it.
  unsigned nicOf(unsigned rank) const;
  /// Rack of global device \p rank (0 when the network is not split).
  unsigned rackOf(unsigned rank) const;
  /// The link a message from \p a to \p b uses: intra-node, the network,
  /// or the network at 1/rackOversubscription of its bandwidth between
  /// racks.
  LinkSpec linkBetween(unsigned a, unsigned b) const;
  /// Name of a level for reports ("nvlink", "infiniband", ...).
  std::string levelName(LinkLevel level) const;
  bool isHomogeneous() const { return devices.size() == 1; }
};

/// Reads the relaunch time `dist-run --record-relaunch=FILE` wrote (a JSON
/// object whose `relaunch_s` is a number of seconds, 0 to a day). Errors
/// name the file and the field and say how to write one.
llvm::Expected<double> readRecordedRelaunch(llvm::StringRef path);

/// What a restart costs on \p cluster: its availability's relaunch_s when
/// given, else \p recorded (read from \p recordedPath), else 0.
RelaunchCost relaunchCost(const Cluster &cluster,
                          std::optional<double> recorded,
                          llvm::StringRef recordedPath);

/// Checks the internal consistency of \p c (positive rates, known device
/// indices); \p where prefixes messages.
llvm::Error validateCluster(const Cluster &c, llvm::StringRef where);

/// The physical range of a cluster value, both ends inclusive, in the units
/// of its YAML field (docs/cost-model.md lists them). A value outside it
/// describes no machine that exists and would over- or underflow the cost
/// model (a 1e-300 GB/s link makes every iteration infinite).
struct FieldRange {
  double min, max;
};
/// The range of YAML field \p field ("peak_tflops" for its per-dtype
/// entries); nullopt for fields without one (names, efficiencies, which are
/// checked against (0, 1]).
std::optional<FieldRange> physicalRange(llvm::StringRef field);

/// Shortest exact-enough decimal form of \p v (printf "%.10g").
std::string formatNumber(double v);

/// Parses a cluster from YAML text. \p fileName is used in messages, which
/// have the form "file:line:col: field 'x': problem; fix".
llvm::Expected<Cluster> parseClusterYAML(llvm::StringRef text,
                                         llvm::StringRef fileName);
llvm::Expected<Cluster> loadClusterFile(llvm::StringRef path);
/// Writes \p c in the YAML format parseClusterYAML reads.
void writeClusterYAML(const Cluster &c, llvm::raw_ostream &os);

/// Names of the built-in presets.
std::vector<std::string> presetNames();
/// Builds preset \p name with \p nodes nodes (0 = the preset's default).
llvm::Expected<Cluster> getPreset(llvm::StringRef name, unsigned nodes = 0);
/// Resolves "PRESET", "PRESET:NODES" or a path to a YAML file.
llvm::Expected<Cluster> resolveCluster(llvm::StringRef spec);
/// One line per preset: name, devices, summary (for --list-clusters).
void listClusters(llvm::raw_ostream &os);

} // namespace distopt::cluster

#endif // DISTOPT_LIB_CLUSTER_CLUSTER_H
