//===- Presets.cpp - Built-in clusters --------------------------*- C++ -*-===//
//
// Real hardware with its public figures (see docs/cost-model.md for the
// sources). Achievable efficiencies are one set of constants per device,
// calibrated once against Megatron-LM Table 1 for the A100 and carried over
// to the other NVIDIA GPUs; they are never fitted per workload.
//
//===----------------------------------------------------------------------===//

#include "lib/Cluster/Cluster.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <thread>
#include <unistd.h>

using namespace llvm;

namespace distopt::cluster {

namespace {
struct PeakList {
  double fp32, tf32, fp16, bf16, fp8, int8;
};
} // namespace

static DeviceSpec makeDevice(StringRef name, PeakList tflops, double memGB,
                             double bwGBps, double matmulEff, double convEff,
                             double otherEff, double memEff, double launchUs,
                             double halfGflops) {
  DeviceSpec d;
  d.name = name.str();
  auto set = [&](DType t, double v) {
    d.peakFlops[static_cast<unsigned>(t)] = v * 1e12;
  };
  set(DType::F32, tflops.fp32);
  set(DType::TF32, tflops.tf32);
  set(DType::F16, tflops.fp16);
  set(DType::BF16, tflops.bf16);
  set(DType::F8, tflops.fp8);
  set(DType::I8, tflops.int8);
  d.memoryBytes = memGB * 1e9;
  d.memoryBandwidth = bwGBps * 1e9;
  d.efficiency.fill(otherEff);
  d.efficiency[static_cast<unsigned>(OpClass::MatMul)] = matmulEff;
  d.efficiency[static_cast<unsigned>(OpClass::Conv)] = convEff;
  d.memoryEfficiency = memEff;
  d.launchOverhead = launchUs * 1e-6;
  d.halfEfficiencyFlops = halfGflops * 1e9;
  return d;
}

static LinkSpec makeLink(StringRef name, double GBps, double latUs,
                         double collEff) {
  LinkSpec l;
  l.name = name.str();
  l.bandwidth = GBps * 1e9;
  l.latency = latUs * 1e-6;
  l.collectiveEfficiency = collEff;
  return l;
}

// NVIDIA data-center GPUs share one calibration (matmul efficiency, size
// roll-off, memory efficiency, launch cost); only the public peaks differ.
static constexpr double kGpuMatmulEff = 0.70, kGpuConvEff = 0.60,
                        kGpuOtherEff = 0.5, kGpuMemEff = 0.80,
                        kGpuLaunchUs = 4.0, kGpuHalfGflops = 0.5;
// Fused attention (FlashAttention-3 / cuDNN on Hopper): about 0.6-0.75 of
// the bf16 peak forward and 0.45-0.55 backward (Shah et al., arXiv
// 2407.08608), 0.5 over forward plus backward. A public figure, not fitted.
static constexpr double kHopperAttentionEff = 0.5;
// GEMMs through Transformer Engine on H100: the two constants fitted to the
// published NeMo / DGX Cloud / Megatron-Bridge H100 runs, bf16 on the BF16
// rows and fp8 on the FP8 rows (`dist-bench-sim --held-out`, leave-one-out
// in docs/cost-model.md). The H100 reaches a smaller share of its bf16 peak
// than the A100 (power-limited clocks under dense GEMMs; Megatron-core
// reports 41-48% MFU on H100 against 52% on A100). H200 runs the same
// chip; B200 carries them over (no layout-stated B200 tables were used).
static constexpr double kHopperMatmulEff = 0.57, kHopperFp8MatmulEff = 0.48;

static DeviceSpec hopper(DeviceSpec d) {
  d.efficiency[static_cast<unsigned>(OpClass::MatMul)] = kHopperMatmulEff;
  d.efficiency[static_cast<unsigned>(OpClass::Attention)] = kHopperAttentionEff;
  d.fp8MatmulEfficiency = kHopperFp8MatmulEff;
  return d;
}

static DeviceSpec a100() {
  return makeDevice("a100-80gb", {19.5, 156, 312, 312, 0, 624}, 80, 2039,
                    kGpuMatmulEff, kGpuConvEff, kGpuOtherEff, kGpuMemEff,
                    kGpuLaunchUs, kGpuHalfGflops);
}
static DeviceSpec h100() {
  return hopper(makeDevice("h100-sxm", {67, 494.7, 989, 989, 1979, 1979}, 80,
                           3350, kGpuMatmulEff, kGpuConvEff, kGpuOtherEff,
                           kGpuMemEff, kGpuLaunchUs, kGpuHalfGflops));
}
static DeviceSpec h200() {
  return hopper(makeDevice("h200-sxm", {67, 494.7, 989, 989, 1979, 1979}, 141,
                           4800, kGpuMatmulEff, kGpuConvEff, kGpuOtherEff,
                           kGpuMemEff, kGpuLaunchUs, kGpuHalfGflops));
}
/// HGX B200 (1000 W): dense 2250 TF bf16, 4500 TF fp8, 180 GB HBM3e at
/// 8 TB/s (NVIDIA HGX B200 datasheet).
static DeviceSpec b200() {
  return hopper(makeDevice("b200", {80, 1100, 2250, 2250, 4500, 4500}, 180,
                           8000, kGpuMatmulEff, kGpuConvEff, kGpuOtherEff,
                           kGpuMemEff, kGpuLaunchUs, kGpuHalfGflops));
}
static DeviceSpec v100(StringRef name, double memGB) {
  return makeDevice(name, {15.7, 0, 125, 0, 0, 0}, memGB, 900, kGpuMatmulEff,
                    kGpuConvEff, kGpuOtherEff, kGpuMemEff, kGpuLaunchUs,
                    kGpuHalfGflops);
}

/// The input side of a node: \p storageGBps read from the dataset's
/// storage, \p cacheGB of page cache, \p cores CPU cores per device.
static InputSide inputSide(double storageGBps, double cacheGB, double cores) {
  return {storageGBps * 1e9, cacheGB * 1e9, cores};
}

// Input sides of the DGX nodes (docs/cost-model.md, "Data stalls"). CPU
// cores per GPU are the datasheets' physical cores over 8 GPUs; the page
// cache is three quarters of the host memory (the rest: the training
// processes and pinned buffers; an assumption); storage is the node's
// RAID 0 of NVMe data drives at about 3 GB/s each for reads of ~100 KB
// files (an assumption, not a measurement).
// DGX A100 640GB: 2x AMD EPYC 7742 (128 cores), 2 TB, 8x 3.84 TB U.2 NVMe.
static InputSide dgxA100Input() { return inputSide(24, 1500, 16); }
// DGX H100 / H200 and B200: 2x Xeon Platinum 8480C / 8570 (112 cores),
// 2 TB, 8x 3.84 TB U.2 NVMe.
static InputSide dgxHopperInput() { return inputSide(24, 1500, 14); }

/// A node's storage tiers (docs/cost-model.md, "Storage tiers"): host DRAM
/// of \p dramGB with achievable bandwidth \p dramGBps, reached by each
/// device over its PCIe link at \p pcieGBps; \p nvmeGB of NVMe (RAID 0 of
/// the node's drives) at \p nvmeGBps for the node. The achievable DRAM
/// bandwidth is taken as 60% of the theoretical DDR peak (STREAM-class
/// figures on two-socket servers), and a device-to-host copy as about 75%
/// of the PCIe x16 link (NVIDIA's bandwidthTest on Gen3 12 of 16 GB/s, on
/// Gen4 25 of 32 GB/s, on Gen5 50 of 64 GB/s): assumptions from the
/// datasheets, not measured.
static NodeTiers nodeTiers(double dramGB, double dramGBps, double pcieGBps,
                           double nvmeGB, double nvmeGBps) {
  NodeTiers t;
  t[Tier::Host] = {dramGB * 1e9, pcieGBps * 1e9};
  t.hostMemoryBandwidth = dramGBps * 1e9;
  if (nvmeGB > 0)
    t[Tier::NVMe] = {nvmeGB * 1e9, nvmeGBps * 1e9};
  return t;
}

// DGX A100 80GB (DGX A100 user guide): 2 TB DDR4 on 2x EPYC 7742 (16
// channels of DDR4-3200, 409.6 GB/s peak), GPUs on PCIe Gen4, 30.72 TB of
// NVMe (8x 3.84 TB U.2 in RAID 0, about 25 GB/s for the node).
static NodeTiers dgxA100Tiers() { return nodeTiers(2048, 245, 25, 30720, 25); }
// DGX H100 / H200 (DGX H100 user guide): 2 TB DDR5 on 2x Xeon 8480C (16
// channels of DDR5-4800, 614 GB/s peak), GPUs on PCIe Gen5, 30.72 TB of
// NVMe (8x 3.84 TB U.2).
static NodeTiers dgxH100Tiers() { return nodeTiers(2048, 370, 50, 30720, 25); }
// DGX B200 (DGX B200 datasheet): 4 TB on 2x Xeon 8570 (DDR5-5600, 717 GB/s
// peak), PCIe Gen5, 30.72 TB of NVMe (8x 3.84 TB).
static NodeTiers dgxB200Tiers() { return nodeTiers(4096, 430, 50, 30720, 25); }
// DGX-1 V100 (DGX-1 datasheet): 512 GB DDR4 on 2x Xeon E5-2698 v4 (8
// channels of DDR4-2400, 153.6 GB/s peak); two GPUs share each PCIe Gen3
// x16 switch uplink to the CPUs (6 GB/s per GPU when all copy); 7.68 TB of
// SATA SSDs (4x 1.92 TB in RAID 0, about 2 GB/s), given as the NVMe tier.
static NodeTiers dgxV100Tiers() { return nodeTiers(512, 92, 6, 7680, 2); }

static Cluster homogeneous(StringRef name, StringRef description,
                           DeviceSpec dev, unsigned perNode, unsigned nodes,
                           LinkSpec intra, LinkSpec network,
                           std::optional<InputSide> input = std::nullopt,
                           NodeTiers tiers = {}) {
  Cluster c;
  c.name = name.str();
  c.description = description.str();
  c.devices.push_back(std::move(dev));
  NodeGroup g;
  g.deviceIndex = 0;
  g.devicesPerNode = perNode;
  g.nodes = nodes;
  g.intraNode = std::move(intra);
  g.tiers = tiers;
  c.groups.push_back(g);
  c.network = std::move(network);
  c.input = input;
  return c;
}

/// This machine (`local`): one device per core, or with `local:N` N
/// devices that share its cores and memory (N ranks on this machine, each
/// with cores / N of it). The core count, clock and vector width come from
/// /proc/cpuinfo, the memory from sysconf: estimates of what the kernels
/// reach, not measurements.
static Cluster localMachine(unsigned devices) {
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  std::string model = "x86-64";
  double mhz = 2000;
  bool avx512 = false, avx2 = false;
  if (auto file = MemoryBuffer::getFileAsStream("/proc/cpuinfo")) {
    SmallVector<StringRef> lines;
    (*file)->getBuffer().split(lines, '\n');
    for (StringRef line : lines) {
      auto [key, value] = line.split(':');
      key = key.trim();
      value = value.trim();
      if (key == "model name" && model == "x86-64" && !value.empty())
        model = value.str();
      else if (key == "cpu MHz")
        (void)value.getAsDouble(mhz);
      else if (key == "flags") {
        SmallVector<StringRef> flags;
        value.split(flags, ' ');
        avx512 |= llvm::is_contained(flags, "avx512f");
        avx2 |= llvm::is_contained(flags, "avx2");
      }
    }
  }
  if (!(mhz > 100))
    mhz = 2000;
  // f32 FLOPs per cycle: two FMA units of 16 (AVX-512), 8 (AVX2) or 4 lanes.
  double perCycle = 2 * 2 * (avx512 ? 16 : avx2 ? 8 : 4);
  if (!devices)
    devices = cores;
  double share = double(cores) / devices;
  double fp32 = perCycle * mhz * 1e6 * share / 1e12;
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  double memGB = pages > 0 && page > 0 ? double(pages) * page / 1e9 : 8;
  DeviceSpec dev = makeDevice(devices == cores ? "local-core" : "local-share",
                              {fp32, 0, 0, fp32, 0, 0}, memGB / devices,
                              10 * share, 0.6, 0.4, 0.3, 0.6, 5.0, 0.002);
  std::string description =
      formatv("this machine: {0}, {1} core(s) at {2:F0} MHz ({3}), {4:F1} GB, "
              "as {5} device(s) (local:N for N); estimated from /proc/cpuinfo",
              model, cores, mhz, avx512 ? "AVX-512" : avx2 ? "AVX2" : "SSE",
              memGB, devices)
          .str();
  return homogeneous("local", description, std::move(dev), devices, 1,
                     makeLink("shared-memory", 5, 2, 0.8),
                     makeLink("ethernet", 1.25, 20, 0.9));
}

/// Phone-class SoC (Snapdragon 8 Gen 2 class): 8 ARM cores with NEON,
/// about 0.2 TFLOP/s fp32 and 0.4 fp16 peak over all cores, 8 GB LPDDR5 at
/// 51 GB/s; the efficiencies are the ARM board's. Training on the phone
/// runs on its CPU cores (the rates are our estimate from the cores'
/// vector units, not a measurement).
static DeviceSpec phoneSoC() {
  return makeDevice("phone-soc", {0.2, 0, 0.4, 0, 0, 0}, 8, 51.2, 0.6, 0.4, 0.4,
                    0.5, 5.0, 0.05);
}

/// \p nodes - 1 phones on a wide-area link to one cloud server with one
/// A100 (edge-cloud split training, docs/search.md; one node: a phone
/// alone). The phones come first in device order, so the first pipeline
/// stage runs on a phone. The WAN is the phone's uplink, taken for both
/// directions (the downlink is faster).
static Cluster edgeCloud(StringRef name, StringRef network, unsigned nodes,
                         LinkSpec wan) {
  Cluster c;
  c.name = name.str();
  c.description =
      ("phones on " + network + " to one cloud A100 server (split training)")
          .str();
  c.devices = {phoneSoC(), a100()};
  c.groups.push_back(NodeGroup{0, 1, std::max(1u, nodes - 1),
                               makeLink("memory", 10, 1, 1), NodeTiers{}});
  if (nodes > 1)
    c.groups.push_back(
        NodeGroup{1, 1, 1, makeLink("none", 300, 3, 0.77), NodeTiers{}});
  c.network = std::move(wan);
  return c;
}

namespace {
struct Preset {
  const char *name;
  unsigned defaultNodes;
  Cluster (*build)(unsigned nodes);
};
} // namespace

static const Preset kPresets[] = {
    {"dgx-a100-80gb", 1,
     [](unsigned n) {
       // NVLink3 600 GB/s bidirectional; nccl busbw ~230 GB/s of 300 GB/s.
       // One 200 Gb/s HDR NIC per GPU.
       return homogeneous("dgx-a100-80gb",
                          "DGX A100 80GB nodes: 8 GPUs on NVSwitch, 8x HDR "
                          "InfiniBand per node",
                          a100(), 8, n, makeLink("nvlink", 300, 3, 0.77),
                          makeLink("infiniband", 25, 5, 0.9), dgxA100Input(),
                          dgxA100Tiers());
     }},
    {"dgx-h100", 1,
     [](unsigned n) {
       return homogeneous("dgx-h100",
                          "DGX H100 nodes: 8 GPUs on NVSwitch (NVLink4), 8x "
                          "NDR 400 Gb/s per node",
                          h100(), 8, n, makeLink("nvlink", 450, 3, 0.82),
                          makeLink("infiniband", 50, 5, 0.9), dgxHopperInput(),
                          dgxH100Tiers());
     }},
    {"dgx-h100-roce", 1,
     [](unsigned n) {
       // The same nodes on 400 Gb/s RoCE v2 (one NIC per GPU). Meta trained
       // Llama 3 on both a RoCE and an InfiniBand 400 Gb/s fabric and tuned
       // them to the same performance (Llama 3 paper, Sec. 3.3), so the
       // figures are the InfiniBand ones.
       return homogeneous("dgx-h100-roce",
                          "DGX H100 nodes: 8 GPUs on NVSwitch (NVLink4), 8x "
                          "400 Gb/s RoCE per node",
                          h100(), 8, n, makeLink("nvlink", 450, 3, 0.82),
                          makeLink("roce", 50, 5, 0.9), dgxHopperInput(),
                          dgxH100Tiers());
     }},
    {"h100-roce-pods", 384,
     [](unsigned n) {
       // Meta's Llama 3 cluster (Llama 3 paper, Sec. 3.3.1): H100 servers
       // on 400 Gb/s RoCE in a three-layer Clos; 3072 GPUs (384 servers)
       // per pod with full bisection, 1:7 oversubscription between pods.
       Cluster c = homogeneous("h100-roce-pods",
                               "H100 servers on 400 Gb/s RoCE, pods of 384 "
                               "nodes, 1:7 oversubscribed between pods",
                               h100(), 8, n, makeLink("nvlink", 450, 3, 0.82),
                               makeLink("roce", 50, 5, 0.9), dgxHopperInput(),
                               dgxH100Tiers());
       c.nodesPerRack = 384;
       c.rackOversubscription = 7;
       return c;
     }},
    {"dgx-h200", 1,
     [](unsigned n) {
       // NVLS reductions reach ~475 GB/s busbw, above the 450 GB/s link.
       return homogeneous("dgx-h200",
                          "DGX H200 nodes: 8 GPUs on NVSwitch (NVLink4, NVLS), "
                          "8x NDR 400 Gb/s per node",
                          h200(), 8, n, makeLink("nvlink", 450, 3, 1.0),
                          makeLink("infiniband", 50, 5, 0.9), dgxHopperInput(),
                          dgxH100Tiers());
     }},
    {"dgx-b200", 1,
     [](unsigned n) {
       // NVLink5: 1.8 TB/s bidirectional per GPU. The collective efficiency
       // is the H100 ring figure carried over (no published B200 nccl-tests
       // figure is used). 8x 400 Gb/s ConnectX-7 per node.
       return homogeneous("dgx-b200",
                          "DGX B200 nodes: 8 GPUs on NVSwitch (NVLink5), 8x "
                          "400 Gb/s InfiniBand per node",
                          b200(), 8, n, makeLink("nvlink", 900, 3, 0.82),
                          makeLink("infiniband", 50, 5, 0.9), dgxHopperInput(),
                          dgxB200Tiers());
     }},
    {"dgx-v100", 1,
     [](unsigned n) {
       // DGX-1: NVLink2 hybrid cube mesh, 4x 100 Gb/s EDR per node. Input:
       // 2x Xeon E5-2698 v4 (40 cores, 5 per GPU), 512 GB, 4x 1.92 TB SATA
       // SSD in RAID 0 at about 0.5 GB/s each (datasheet; the per-drive
       // rate an assumption); the page cache three quarters of the memory.
       return homogeneous("dgx-v100",
                          "DGX-1 V100 32GB nodes: 8 GPUs on NVLink2, 4x EDR "
                          "InfiniBand per node",
                          v100("v100-sxm2-32gb", 32), 8, n,
                          makeLink("nvlink", 150, 4, 0.8),
                          makeLink("infiniband", 6.25, 6, 0.9),
                          inputSide(2, 384, 5), dgxV100Tiers());
     }},
    {"pcie-v100x4", 4,
     [](unsigned n) {
       // PipeDream cluster A: 4 V100 PCIe per server, 10 Gb/s Ethernet
       // shared by the four GPUs of a server.
       return homogeneous("pcie-v100x4",
                          "servers of 4 V100 16GB on PCIe 3.0, 10 Gb/s "
                          "Ethernet between servers",
                          v100("v100-pcie-16gb", 16), 4, n,
                          makeLink("pcie", 12, 8, 0.8),
                          makeLink("ethernet", 1.25 / 4, 30, 0.9));
     }},
    {"mixed-a100-v100", 2,
     [](unsigned n) {
       // First half of the nodes DGX A100, second half DGX-1 V100; the
       // network is the slower of the two (EDR, 4 NICs per 8 GPUs).
       Cluster c;
       c.name = "mixed-a100-v100";
       c.description = "mixed generations: DGX A100 and DGX-1 V100 nodes on "
                       "one EDR InfiniBand fabric";
       c.devices = {a100(), v100("v100-sxm2-32gb", 32)};
       unsigned aNodes = (n + 1) / 2, vNodes = n - aNodes;
       NodeGroup ga{0, 8, aNodes, makeLink("nvlink", 300, 3, 0.77),
                    dgxA100Tiers()};
       c.groups.push_back(ga);
       if (vNodes) {
         NodeGroup gv{1, 8, vNodes, makeLink("nvlink", 150, 4, 0.8),
                      dgxV100Tiers()};
         c.groups.push_back(gv);
       }
       c.network = makeLink("infiniband", 6.25, 6, 0.9);
       return c;
     }},
    {"aws-p3-spot", 16,
     [](unsigned n) {
       // AWS p3.2xlarge: one V100 16GB per instance, "up to 10 Gb/s"
       // networking; the instances Bamboo (NSDI'23) trained on. On-demand
       // $3.06 per hour (us-east-1 list price), spot about 30% of it; 0.1
       // preemptions per node-hour (10% per hour, the lowest of the rates
       // Bamboo simulates as we recall them, not verified against the
       // paper's text), a replacement in 5 minutes and 1 GB/s checkpoint
       // writes per node are assumptions (docs/resilience.md). Input: 8
       // vCPUs (4 cores), 61 GiB, the dataset on EBS at the instance's 1.75
       // Gb/s EBS bandwidth (AWS instance-type table); page cache three
       // quarters of the memory.
       Cluster c = homogeneous(
           "aws-p3-spot",
           "p3.2xlarge spot instances: one V100 16GB "
           "each, 10 Gb/s Ethernet, 0.1 preemptions per "
           "node-hour",
           v100("v100-sxm2-16gb", 16), 1, n, makeLink("none", 150, 4, 0.8),
           makeLink("ethernet", 1.25, 30, 0.9), inputSide(0.2, 45, 4));
       Availability a;
       a.preemptionsPerNodeHour = 0.1;
       a.replacementSeconds = 300;
       a.onDemandPrice = 3.06;
       a.preemptiblePrice = 0.918;
       c.availability = a;
       return c;
     }},
    {"cpu-xeon-2s", 1,
     [](unsigned n) {
       // Two-socket Xeon (Ice Lake, 2x32 cores, AVX-512, 2 FMA units at
       // ~2 GHz): each socket is one device; UPI between sockets.
       DeviceSpec cpu = makeDevice("xeon-32c-socket", {2.0, 0, 0, 4.0, 0, 8.0},
                                   256, 200, 0.7, 0.5, 0.4, 0.7, 10.0, 0.5);
       return homogeneous("cpu-xeon-2s",
                          "two-socket 64-core x86 servers (one device per "
                          "socket), 25 Gb/s Ethernet",
                          std::move(cpu), 2, n, makeLink("upi", 40, 1, 0.8),
                          makeLink("ethernet", 3.125 / 2, 20, 0.9));
     }},
    {"local", 0, localMachine},
    {"arm-board-ethernet", 4,
     [](unsigned n) {
       // Raspberry-Pi-4-class board: 4x Cortex-A72 at 1.5 GHz with NEON.
       DeviceSpec arm = makeDevice("cortex-a72x4", {0.048, 0, 0.048, 0, 0, 0},
                                   4, 12.8, 0.6, 0.4, 0.4, 0.5, 5.0, 0.05);
       return homogeneous("arm-board-ethernet",
                          "4-core ARM boards (4 GB) on 1 Gb/s Ethernet",
                          std::move(arm), 1, n, makeLink("memory", 10, 1, 1),
                          makeLink("ethernet", 0.125, 100, 0.9));
     }},
    {"arm-board-wifi", 4,
     [](unsigned n) {
       DeviceSpec arm = makeDevice("cortex-a72x4", {0.048, 0, 0.048, 0, 0, 0},
                                   4, 12.8, 0.6, 0.4, 0.4, 0.5, 5.0, 0.05);
       // 802.11ac in practice: ~100 Mb/s shared, a few ms per message.
       return homogeneous("arm-board-wifi",
                          "4-core ARM boards (4 GB) on shared Wi-Fi",
                          std::move(arm), 1, n, makeLink("memory", 10, 1, 1),
                          makeLink("wifi", 0.0125, 3000, 0.7));
     }},
    // Home Wi-Fi to a cloud region: ~50 Mb/s uplink, ~20 ms one way; LTE:
    // ~10 Mb/s uplink, ~50 ms.
    {"edge-cloud-wifi", 2,
     [](unsigned n) {
       return edgeCloud("edge-cloud-wifi", "Wi-Fi (50 Mb/s uplink)", n,
                        makeLink("wan-wifi", 0.00625, 20000, 0.7));
     }},
    {"edge-cloud-lte", 2,
     [](unsigned n) {
       return edgeCloud("edge-cloud-lte", "LTE (10 Mb/s uplink)", n,
                        makeLink("wan-lte", 0.00125, 50000, 0.7));
     }},
};

std::vector<std::string> presetNames() {
  std::vector<std::string> names;
  for (const Preset &p : kPresets)
    names.push_back(p.name);
  return names;
}

Expected<Cluster> getPreset(StringRef name, unsigned nodes) {
  for (const Preset &p : kPresets) {
    if (name != p.name)
      continue;
    Cluster c = p.build(nodes ? nodes : p.defaultNodes);
    if (Error e = validateCluster(c, "preset " + name.str()))
      return std::move(e);
    return c;
  }
  std::string list;
  for (const Preset &p : kPresets)
    list += (list.empty() ? "" : ", ") + std::string(p.name);
  return createStringError(inconvertibleErrorCode(),
                           "unknown cluster preset '" + name +
                               "'; known presets: " + list);
}

Expected<Cluster> resolveCluster(StringRef spec) {
  if (spec.ends_with(".yaml") || spec.ends_with(".yml") || spec.contains('/'))
    return loadClusterFile(spec);
  auto [name, count] = spec.split(':');
  unsigned nodes = 0;
  if (!count.empty() && (count.getAsInteger(10, nodes) || nodes == 0))
    return createStringError(inconvertibleErrorCode(),
                             "cluster '" + spec + "': node count '" + count +
                                 "' is not a positive integer; write "
                                 "PRESET:NODES, e.g. dgx-a100-80gb:4");
  return getPreset(name, nodes);
}

void listClusters(raw_ostream &os) {
  os << formatv("{0,-20} {1,-14} {2,-28} {3}\n", "preset", "default size",
                "devices", "description");
  for (const Preset &p : kPresets) {
    Cluster c = p.build(p.defaultNodes);
    std::string devices;
    for (const DeviceSpec &d : c.devices)
      devices += (devices.empty() ? "" : " + ") + d.name;
    std::string size =
        formatv("{0} x {1}", c.numNodes(), c.groups.front().devicesPerNode)
            .str();
    os << formatv("{0,-20} {1,-14} {2,-28} {3}\n", p.name, size, devices,
                  c.description);
  }
  os << "Use PRESET:NODES for another node count, or a YAML file "
        "(docs/cost-model.md).\n";
}

} // namespace distopt::cluster
