//===- ClusterTest.cpp - Presets, YAML and PRESET:NODES ---------*- C++ -*-===//

#include "lib/Cluster/Cluster.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <thread>

using namespace distopt::cluster;
using llvm::Expected;

namespace {

template <typename T> std::string errorOf(Expected<T> v) {
  EXPECT_FALSE(static_cast<bool>(v));
  return v ? std::string() : llvm::toString(v.takeError());
}

std::string errorOf(llvm::Error e) {
  EXPECT_TRUE(static_cast<bool>(e));
  return llvm::toString(std::move(e));
}

TEST(Cluster, EveryPresetValidates) {
  std::vector<std::string> names = presetNames();
  for (const char *required :
       {"dgx-a100-80gb", "dgx-h100", "dgx-h100-roce", "h100-roce-pods",
        "dgx-h200", "dgx-b200", "dgx-v100", "pcie-v100x4", "mixed-a100-v100",
        "cpu-xeon-2s", "local", "arm-board-ethernet", "arm-board-wifi",
        "edge-cloud-wifi", "edge-cloud-lte"})
    EXPECT_NE(std::find(names.begin(), names.end(), required), names.end())
        << required;
  for (const std::string &n : names) {
    Expected<Cluster> c = getPreset(n, 3);
    ASSERT_TRUE(static_cast<bool>(c)) << llvm::toString(c.takeError());
    // PRESET:N is N nodes, except local:N: this machine as N devices.
    if (n == "local")
      EXPECT_EQ(c->numDevices(), 3u);
    else
      EXPECT_EQ(c->numNodes(), 3u) << n;
    EXPECT_FALSE(static_cast<bool>(validateCluster(*c, n))) << n;
  }
}

TEST(Cluster, PresetFiguresMatchVendorData) {
  Cluster a = llvm::cantFail(getPreset("dgx-a100-80gb", 4));
  EXPECT_EQ(a.numDevices(), 32u);
  EXPECT_DOUBLE_EQ(a.devices[0].peak(DType::BF16), 312e12);
  EXPECT_DOUBLE_EQ(a.devices[0].memoryBytes, 80e9);
  // fp8 is not an A100 dtype: falls back to fp32.
  EXPECT_DOUBLE_EQ(a.devices[0].peak(DType::F8), 19.5e12);
  Cluster h = llvm::cantFail(getPreset("dgx-h200"));
  EXPECT_DOUBLE_EQ(h.devices[0].memoryBytes, 141e9);
  EXPECT_DOUBLE_EQ(h.devices[0].memoryBandwidth, 4.8e12);
  // Dense tensor-core peaks: H100 989 bf16 / 1979 fp8, B200 2250 / 4500.
  Cluster h1 = llvm::cantFail(getPreset("dgx-h100"));
  EXPECT_DOUBLE_EQ(h1.devices[0].peak(DType::BF16), 989e12);
  EXPECT_DOUBLE_EQ(h1.devices[0].peak(DType::F8), 1979e12);
  Cluster b = llvm::cantFail(getPreset("dgx-b200"));
  EXPECT_DOUBLE_EQ(b.devices[0].peak(DType::BF16), 2250e12);
  EXPECT_DOUBLE_EQ(b.devices[0].peak(DType::F8), 4500e12);
  EXPECT_DOUBLE_EQ(b.devices[0].memoryBytes, 180e9);
  EXPECT_DOUBLE_EQ(b.devices[0].memoryBandwidth, 8e12);
  // NVLink5: 900 GB/s each way; 400 Gb/s per GPU to the network.
  EXPECT_DOUBLE_EQ(b.groups[0].intraNode.bandwidth, 900e9);
  EXPECT_DOUBLE_EQ(b.network.bandwidth, 50e9);
  Cluster r = llvm::cantFail(getPreset("dgx-h100-roce", 2));
  EXPECT_EQ(r.levelName(LinkLevel::Network), "roce");
  EXPECT_DOUBLE_EQ(r.network.bandwidth, 50e9);
}

TEST(Cluster, RackOversubscriptionSlowsTrafficBetweenRacks) {
  // Llama 3's cluster: pods of 384 servers, 1:7 between pods.
  Cluster c = llvm::cantFail(getPreset("h100-roce-pods", 768));
  EXPECT_EQ(c.numDevices(), 6144u);
  EXPECT_EQ(c.rackOf(0), 0u);
  EXPECT_EQ(c.rackOf(384 * 8 - 1), 0u);
  EXPECT_EQ(c.rackOf(384 * 8), 1u);
  EXPECT_DOUBLE_EQ(c.linkBetween(0, 1).bandwidth, 450e9);
  EXPECT_DOUBLE_EQ(c.linkBetween(0, 8).bandwidth, 50e9);
  EXPECT_DOUBLE_EQ(c.linkBetween(0, 384 * 8).bandwidth, 50e9 / 7);
  // Without racks every node pair has the full network bandwidth.
  Cluster flat = llvm::cantFail(getPreset("dgx-h100", 4));
  EXPECT_EQ(flat.rackOf(31), 0u);
  EXPECT_DOUBLE_EQ(flat.linkBetween(0, 31).bandwidth, 50e9);
}

TEST(Cluster, RankLayoutIsNodeMajor) {
  Cluster c = llvm::cantFail(getPreset("dgx-a100-80gb", 2));
  EXPECT_EQ(c.nodeOf(7), 0u);
  EXPECT_EQ(c.nodeOf(8), 1u);
  EXPECT_EQ(c.levelBetween(0, 7), LinkLevel::IntraNode);
  EXPECT_EQ(c.levelBetween(7, 8), LinkLevel::Network);
  EXPECT_EQ(c.levelName(LinkLevel::IntraNode), "nvlink");
  EXPECT_EQ(c.levelName(LinkLevel::Network), "infiniband");
}

TEST(Cluster, MixedPresetHasTwoDeviceTypes) {
  Cluster c = llvm::cantFail(getPreset("mixed-a100-v100", 2));
  ASSERT_EQ(c.devices.size(), 2u);
  EXPECT_EQ(c.deviceOf(0).name, "a100-80gb");
  EXPECT_EQ(c.deviceOf(8).name, "v100-sxm2-32gb");
  EXPECT_FALSE(c.isHomogeneous());
}

TEST(Cluster, ResolvePresetColonNodes) {
  Cluster c = llvm::cantFail(resolveCluster("dgx-h100:2"));
  EXPECT_EQ(c.numDevices(), 16u);
  EXPECT_NE(errorOf(resolveCluster("dgx-h100:0")).find("PRESET:NODES"),
            std::string::npos);
  EXPECT_NE(errorOf(resolveCluster("dgx-h100:two")).find("not a positive"),
            std::string::npos);
  std::string unknown = errorOf(resolveCluster("dgx-a900"));
  EXPECT_NE(unknown.find("unknown cluster preset 'dgx-a900'"),
            std::string::npos);
  EXPECT_NE(unknown.find("dgx-h200"), std::string::npos);
  EXPECT_NE(errorOf(resolveCluster("/nonexistent/c.yaml"))
                .find("cannot read cluster file"),
            std::string::npos);
}

TEST(Cluster, ListingNamesEveryPreset) {
  std::string out;
  llvm::raw_string_ostream os(out);
  listClusters(os);
  for (const std::string &n : presetNames())
    EXPECT_NE(out.find(n), std::string::npos) << n;
}

TEST(ClusterPresets, LocalIsThisMachineOneDevicePerCore) {
  Cluster c = llvm::cantFail(getPreset("local", 0));
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  EXPECT_EQ(c.numDevices(), cores);
  ASSERT_EQ(c.devices.size(), 1u);
  // At least one 4-lane FMA unit at 100 MHz, at most 64 lanes at 6 GHz.
  EXPECT_GT(c.devices[0].peak(DType::F32), 1.6e9);
  EXPECT_LT(c.devices[0].peak(DType::F32), 1.6e12);
  EXPECT_GT(c.devices[0].memoryBytes, 0);
  EXPECT_NE(c.description.find("this machine"), std::string::npos);
  // local:N: N devices sharing the machine's cores.
  Cluster two = llvm::cantFail(getPreset("local", 2));
  EXPECT_EQ(two.numDevices(), 2u);
  EXPECT_NEAR(two.devices[0].peak(DType::F32),
              c.devices[0].peak(DType::F32) * cores / 2, 1e3);
}

TEST(ClusterYAML, RoundTripsEveryPreset) {
  for (const std::string &n : presetNames()) {
    Cluster c = llvm::cantFail(getPreset(n, 2));
    std::string text;
    llvm::raw_string_ostream os(text);
    writeClusterYAML(c, os);
    Expected<Cluster> back = parseClusterYAML(text, n + ".yaml");
    ASSERT_TRUE(static_cast<bool>(back))
        << n << ": " << llvm::toString(back.takeError()) << "\n"
        << text;
    EXPECT_EQ(back->numDevices(), c.numDevices());
    ASSERT_EQ(back->devices.size(), c.devices.size());
    for (unsigned i = 0; i < c.devices.size(); ++i) {
      EXPECT_NEAR(back->devices[i].peak(DType::BF16),
                  c.devices[i].peak(DType::BF16), 1e3);
      EXPECT_NEAR(back->devices[i].memoryBandwidth,
                  c.devices[i].memoryBandwidth, 1e3);
      EXPECT_DOUBLE_EQ(back->devices[i].efficiency[0],
                       c.devices[i].efficiency[0]);
    }
    EXPECT_NEAR(back->network.latency, c.network.latency, 1e-12);
  }
}

const char *kGood = R"(name: lab
devices:
  - name: gpu
    peak_tflops: {fp32: 10, bf16: 100}
    memory_GB: 16
    memory_bandwidth_GBps: 900
    efficiency: {matmul: 0.6}
nodes:
  - device: gpu
    count: 2
    devices_per_node: 4
    intra_node: {name: pcie, bandwidth_GBps: 12, latency_us: 5}
network: {name: eth, bandwidth_GBps: 1.25, latency_us: 30}
)";

TEST(ClusterYAML, ParsesUnitsAndDefaults) {
  Cluster c = llvm::cantFail(parseClusterYAML(kGood, "lab.yaml"));
  EXPECT_EQ(c.numDevices(), 8u);
  EXPECT_DOUBLE_EQ(c.devices[0].peak(DType::BF16), 100e12);
  EXPECT_DOUBLE_EQ(c.devices[0].memoryBytes, 16e9);
  EXPECT_DOUBLE_EQ(c.devices[0].efficiency[0], 0.6);
  EXPECT_DOUBLE_EQ(c.groups[0].intraNode.latency, 5e-6);
  EXPECT_DOUBLE_EQ(c.network.bandwidth, 1.25e9);
  EXPECT_DOUBLE_EQ(c.network.collectiveEfficiency, 1.0);
}

/// Replaces the first \p from in kGood by \p to and returns the error.
std::string badYaml(const std::string &from, const std::string &to) {
  std::string text = kGood;
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  text.replace(at, from.size(), to);
  return errorOf(parseClusterYAML(text, "lab.yaml"));
}

TEST(ClusterYAML, ErrorsNameFileLineAndField) {
  std::string e = badYaml("memory_GB: 16", "memory_gb: 16");
  EXPECT_NE(e.find("lab.yaml:5:5: field 'memory_gb': unknown field"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("memory_GB"), std::string::npos) << e;

  e = badYaml("memory_bandwidth_GBps: 900", "memory_bandwidth_GBps: fast");
  EXPECT_NE(e.find("lab.yaml:6:"), std::string::npos) << e;
  EXPECT_NE(e.find("'fast' is not a finite number"), std::string::npos) << e;

  e = badYaml("memory_GB: 16", "memory_GB: -1");
  EXPECT_NE(e.find("must be greater than 0"), std::string::npos) << e;

  e = badYaml("efficiency: {matmul: 0.6}", "efficiency: {matmul: 1.6}");
  EXPECT_NE(e.find("field 'matmul': must be at most 1"), std::string::npos)
      << e;

  e = badYaml("efficiency: {matmul: 0.6}", "efficiency: {gemm: 0.6}");
  EXPECT_NE(e.find("field 'gemm': unknown field"), std::string::npos) << e;

  e = badYaml("  - device: gpu", "  - device: tpu");
  EXPECT_NE(e.find("lab.yaml:9:13:"), std::string::npos) << e;
  EXPECT_NE(e.find("unknown device 'tpu'"), std::string::npos) << e;

  e = badYaml("    count: 2\n", "    count: 2.5\n");
  EXPECT_NE(e.find("field 'count': expected a whole number"), std::string::npos)
      << e;

  e = badYaml("    memory_GB: 16\n", "");
  EXPECT_NE(e.find("field 'memory_GB': missing"), std::string::npos) << e;

  e = badYaml("network: {name: eth, bandwidth_GBps: 1.25, latency_us: 30}\n",
              "");
  EXPECT_NE(e.find("no 'network' link"), std::string::npos) << e;

  e = badYaml("name: lab", "name: \"lab");
  EXPECT_NE(e.find("lab.yaml:"), std::string::npos) << e;
  EXPECT_NE(e.find("fix the YAML syntax"), std::string::npos) << e;

  EXPECT_NE(errorOf(parseClusterYAML("", "empty.yaml")).find("empty"),
            std::string::npos);
}

TEST(ClusterYAML, RacksAndFp8Efficiency) {
  std::string text = kGood;
  text.replace(text.find("latency_us: 30}"), 15,
               "latency_us: 30, nodes_per_rack: 1, oversubscription: 4}");
  text.replace(text.find("    efficiency:"), 0,
               "    fp8_matmul_efficiency: 0.45\n");
  Cluster c = llvm::cantFail(parseClusterYAML(text, "lab.yaml"));
  EXPECT_EQ(c.nodesPerRack, 1u);
  EXPECT_DOUBLE_EQ(c.rackOversubscription, 4);
  EXPECT_DOUBLE_EQ(c.devices[0].fp8MatmulEfficiency, 0.45);
  EXPECT_DOUBLE_EQ(c.linkBetween(0, 4).bandwidth, 1.25e9 / 4);
  // Written and read back.
  std::string out;
  llvm::raw_string_ostream os(out);
  writeClusterYAML(c, os);
  Cluster back = llvm::cantFail(parseClusterYAML(out, "back.yaml"));
  EXPECT_EQ(back.nodesPerRack, 1u);
  EXPECT_DOUBLE_EQ(back.rackOversubscription, 4);
  EXPECT_DOUBLE_EQ(back.devices[0].fp8MatmulEfficiency, 0.45);
  // Errors: below full bisection, racks on an intra-node link, fp8 > 1.
  std::string e = badYaml("latency_us: 30}", "latency_us: 30, "
                                             "oversubscription: 0.5}");
  EXPECT_NE(e.find("field 'oversubscription': must be at least 1"),
            std::string::npos)
      << e;
  e = badYaml("latency_us: 5}", "latency_us: 5, nodes_per_rack: 2}");
  EXPECT_NE(e.find("field 'nodes_per_rack': unknown field in 'intra_node'"),
            std::string::npos)
      << e;
  e = badYaml("    efficiency:", "    fp8_matmul_efficiency: 1.5\n"
                                 "    efficiency:");
  EXPECT_NE(e.find("field 'fp8_matmul_efficiency': must be at most 1"),
            std::string::npos)
      << e;
}

TEST(ClusterYAML, NicsSharedByANodesDevices) {
  // Without `nics` every device has its own NIC.
  Cluster own = llvm::cantFail(parseClusterYAML(kGood, "lab.yaml"));
  EXPECT_EQ(own.groups[0].devicesPerNic(), 1u);
  EXPECT_EQ(own.nicOf(6), 6u);
  // Two NICs per node of four devices: ranks 0-1, 2-3, 4-5, 6-7 share one.
  std::string text = kGood;
  text.replace(text.find("    intra_node:"), 0, "    nics: 2\n");
  Cluster c = llvm::cantFail(parseClusterYAML(text, "lab.yaml"));
  EXPECT_EQ(c.groups[0].nics, 2u);
  EXPECT_EQ(c.groups[0].devicesPerNic(), 2u);
  EXPECT_EQ(c.nicOf(0), 0u);
  EXPECT_EQ(c.nicOf(1), 0u);
  EXPECT_EQ(c.nicOf(3), 2u);
  EXPECT_EQ(c.nicOf(5), 4u);
  std::string out;
  llvm::raw_string_ostream os(out);
  writeClusterYAML(c, os);
  EXPECT_NE(out.find("    nics: 2\n"), std::string::npos) << out;
  EXPECT_EQ(llvm::cantFail(parseClusterYAML(out, "back.yaml")).groups[0].nics,
            2u);
  // A count that does not divide the node's devices, or none at all.
  std::string e = badYaml("    intra_node:", "    nics: 3\n    intra_node:");
  EXPECT_NE(e.find("lab.yaml:12:11: field 'nics': 3 NICs for 4 devices per "
                   "node; give a number that divides devices_per_node"),
            std::string::npos)
      << e;
  e = badYaml("    intra_node:", "    nics: 0\n    intra_node:");
  EXPECT_NE(e.find("lab.yaml:12:11: field 'nics': '0' must be greater than 0"),
            std::string::npos)
      << e;
  // Clusters built in code are checked the same way.
  c.groups[0].nics = 3;
  e = errorOf(validateCluster(c, "code"));
  EXPECT_NE(e.find("has 3 NICs for its 4 devices per node"), std::string::npos)
      << e;
}

TEST(ClusterYAML, RejectsValuesOutsidePhysicalRanges) {
  // Finite but absurd values once gave "iteration time INF s" and
  // "bubble nan%" with exit 0 (issue 12).
  std::string e = badYaml("network: {name: eth, bandwidth_GBps: 1.25",
                          "network: {name: eth, bandwidth_GBps: 1e-300");
  EXPECT_NE(e.find("lab.yaml:13:"), std::string::npos) << e;
  EXPECT_NE(e.find("field 'bandwidth_GBps': '1e-300' is outside the physical "
                   "range [1e-06, 100000000] of bandwidth_GBps"),
            std::string::npos)
      << e;
  e = badYaml("bandwidth_GBps: 12", "bandwidth_GBps: 1e300");
  EXPECT_NE(e.find("'1e300' is outside the physical range"), std::string::npos)
      << e;
  e = badYaml("memory_GB: 16", "memory_GB: 1e-300");
  EXPECT_NE(e.find("field 'memory_GB': '1e-300' is outside"),
            std::string::npos)
      << e;
  e = badYaml("fp32: 10", "fp32: 1e30");
  EXPECT_NE(e.find("field 'fp32': '1e30' is outside the physical range "
                   "[1e-06, 1000000] of peak_tflops"),
            std::string::npos)
      << e;
  e = badYaml("latency_us: 30", "latency_us: inf");
  EXPECT_NE(e.find("'inf' is not a finite number"), std::string::npos) << e;
  e = badYaml("latency_us: 30", "latency_us: nan");
  EXPECT_NE(e.find("'nan' is not a finite number"), std::string::npos) << e;
  e = badYaml("    count: 2\n", "    count: 1e300\n");
  EXPECT_NE(e.find("field 'count': '1e300' is outside"), std::string::npos)
      << e;

  // The same ranges hold for clusters built in code (and from IR).
  Cluster c = llvm::cantFail(parseClusterYAML(kGood, "lab.yaml"));
  c.network.bandwidth = 1e300;
  e = errorOf(validateCluster(c, "ir"));
  EXPECT_NE(e.find("ir: network link 'eth' bandwidth_GBps = 1e+291 is outside "
                   "the physical range"),
            std::string::npos)
      << e;
}

TEST(ClusterYAML, NamesWithYAMLCharactersRoundTrip) {
  // dist-fuzz found both: a description with quotes did not read back after
  // writing, and `{fp32 19.5}` (a key without a value) crashed the reader.
  Cluster c = llvm::cantFail(parseClusterYAML(kGood, "lab.yaml"));
  c.description = "4-core \"boards\": #1, {a: b}\\";
  c.devices[0].name = "gpu: v2";
  c.groups[0].deviceIndex = 0;
  std::string text;
  llvm::raw_string_ostream os(text);
  writeClusterYAML(c, os);
  Cluster back = llvm::cantFail(parseClusterYAML(text, "written.yaml"));
  EXPECT_EQ(back.description, c.description);
  EXPECT_EQ(back.devices[0].name, "gpu: v2");
  std::string e =
      badYaml("peak_tflops: {fp32: 10, bf16: 100}", "peak_tflops: {fp32 10}");
  EXPECT_NE(e.find("lab.yaml"), std::string::npos) << e;
}

TEST(ClusterYAML, RefusesDevicesAndHugeFiles) {
  std::string e = errorOf(loadClusterFile("/dev/zero"));
  EXPECT_NE(e.find("cluster file '/dev/zero' is not a regular file"),
            std::string::npos)
      << e;
  e = errorOf(loadClusterFile("/no/such/cluster.yaml"));
  EXPECT_NE(e.find("cannot read cluster file '/no/such/cluster.yaml'"),
            std::string::npos)
      << e;
}

} // namespace

namespace {
TEST(ClusterYAML, MalformedInputNeverCrashes) {
  // Truncations and mangled copies of a good file must all give an error
  // or a cluster, never a crash.
  std::string good = kGood;
  for (size_t cut = 0; cut < good.size(); cut += 7) {
    Expected<Cluster> c = parseClusterYAML(good.substr(0, cut), "cut.yaml");
    if (!c) {
      EXPECT_FALSE(llvm::toString(c.takeError()).empty());
    }
  }
  for (const char *bad : {"devices:", "devices: [1, 2]", "nodes: {a: 1}",
                          "name: [", "- a\n- b", "name: x\ndevices:\n  -\n"}) {
    Expected<Cluster> c = parseClusterYAML(bad, "bad.yaml");
    ASSERT_FALSE(static_cast<bool>(c)) << bad;
    EXPECT_NE(llvm::toString(c.takeError()).find("bad.yaml"),
              std::string::npos);
  }
}
} // namespace

namespace {
TEST(Cluster, ListingShowsMixedDevices) {
  std::string out;
  llvm::raw_string_ostream os(out);
  listClusters(os);
  EXPECT_NE(out.find("a100-80gb + v100-sxm2-32gb"), std::string::npos) << out;
  EXPECT_NE(out.find("PRESET:NODES"), std::string::npos);
}
} // namespace

TEST(ClusterYAML, Availability) {
  std::string text = std::string(kGood) +
                     "availability: {preemptions_per_node_hour: 0.25, "
                     "replacement_s: 120, on_demand_usd_per_node_hour: 3, "
                     "preemptible_usd_per_node_hour: 0.9}\n";
  Cluster c = llvm::cantFail(parseClusterYAML(text, "lab.yaml"));
  ASSERT_TRUE(c.availability.has_value());
  EXPECT_DOUBLE_EQ(c.availability->preemptionsPerNodeHour, 0.25);
  EXPECT_DOUBLE_EQ(c.availability->replacementSeconds, 120);
  EXPECT_DOUBLE_EQ(c.availability->onDemandPrice, 3);
  EXPECT_DOUBLE_EQ(c.availability->preemptiblePrice, 0.9);
  // The documented default: 1 GB/s of checkpoint writes per node.
  EXPECT_DOUBLE_EQ(c.availability->checkpointBandwidth, 1e9);
  EXPECT_FALSE(llvm::cantFail(parseClusterYAML(kGood, "lab.yaml"))
                   .availability.has_value());
  // Written and read back.
  std::string out;
  llvm::raw_string_ostream os(out);
  writeClusterYAML(c, os);
  Cluster back = llvm::cantFail(parseClusterYAML(out, "back.yaml"));
  ASSERT_TRUE(back.availability.has_value());
  EXPECT_DOUBLE_EQ(back.availability->preemptionsPerNodeHour, 0.25);
  EXPECT_DOUBLE_EQ(back.availability->checkpointBandwidth, 1e9);
  // The spot preset has it.
  EXPECT_TRUE(
      llvm::cantFail(getPreset("aws-p3-spot", 2)).availability.has_value());

  auto bad = [&](const std::string &from, const std::string &to) {
    std::string t = text;
    t.replace(t.find(from), from.size(), to);
    return errorOf(parseClusterYAML(t, "lab.yaml"));
  };
  std::string e =
      bad("preemptions_per_node_hour: 0.25", "preemptions_per_node_hour: -1");
  EXPECT_NE(e.find("lab.yaml:14:"), std::string::npos) << e;
  EXPECT_NE(e.find("field 'preemptions_per_node_hour': '-1' must be at least "
                   "0"),
            std::string::npos)
      << e;
  e = bad("replacement_s: 120, ", "");
  EXPECT_NE(e.find("field 'replacement_s': missing in 'availability'"),
            std::string::npos)
      << e;
  e = bad("replacement_s: 120", "replacement_s: 120, spot: 1");
  EXPECT_NE(e.find("field 'spot': unknown field in 'availability'"),
            std::string::npos)
      << e;
  e = bad("preemptible_usd_per_node_hour: 0.9}",
          "preemptible_usd_per_node_hour: 0.9, checkpoint_GBps: 0}");
  EXPECT_NE(e.find("field 'checkpoint_GBps': '0' must be greater than 0"),
            std::string::npos)
      << e;
  e = bad("preemptions_per_node_hour: 0.25", "preemptions_per_node_hour: 1000");
  EXPECT_NE(e.find("outside the physical range"), std::string::npos) << e;
  // Clusters built in code are checked too.
  c.availability->replacementSeconds = -5;
  e = errorOf(validateCluster(c, "ir"));
  EXPECT_NE(e.find("availability replacement_s = -5"), std::string::npos) << e;
}

TEST(ClusterYAML, InputSide) {
  std::string text = std::string(kGood) +
                     "input: {storage_read_GBps: 2.5, page_cache_GB: 384, "
                     "cpu_cores_per_device: 3}\n";
  Cluster c = llvm::cantFail(parseClusterYAML(text, "lab.yaml"));
  ASSERT_TRUE(c.input.has_value());
  EXPECT_DOUBLE_EQ(c.input->storageBandwidth, 2.5e9);
  EXPECT_DOUBLE_EQ(c.input->pageCacheBytes, 384e9);
  EXPECT_DOUBLE_EQ(c.input->cpuCoresPerDevice, 3);
  EXPECT_FALSE(
      llvm::cantFail(parseClusterYAML(kGood, "lab.yaml")).input.has_value());
  // Written and read back.
  std::string out;
  llvm::raw_string_ostream os(out);
  writeClusterYAML(c, os);
  Cluster back = llvm::cantFail(parseClusterYAML(out, "back.yaml"));
  ASSERT_TRUE(back.input.has_value());
  EXPECT_DOUBLE_EQ(back.input->storageBandwidth, 2.5e9);
  EXPECT_DOUBLE_EQ(back.input->pageCacheBytes, 384e9);
  EXPECT_DOUBLE_EQ(back.input->cpuCoresPerDevice, 3);
  // The DGX presets have one: the datasheets' cores over 8 GPUs.
  EXPECT_DOUBLE_EQ(
      llvm::cantFail(getPreset("dgx-v100")).input->cpuCoresPerDevice, 5);
  EXPECT_DOUBLE_EQ(
      llvm::cantFail(getPreset("dgx-a100-80gb")).input->cpuCoresPerDevice, 16);
  EXPECT_DOUBLE_EQ(
      llvm::cantFail(getPreset("dgx-h100")).input->cpuCoresPerDevice, 14);

  auto bad = [&](const std::string &from, const std::string &to) {
    std::string t = text;
    t.replace(t.find(from), from.size(), to);
    return errorOf(parseClusterYAML(t, "lab.yaml"));
  };
  std::string e = bad("cpu_cores_per_device: 3", "cpu_cores_per_device: 0");
  EXPECT_NE(e.find("lab.yaml:14:"), std::string::npos) << e;
  EXPECT_NE(e.find("field 'cpu_cores_per_device': '0' must be greater than 0"),
            std::string::npos)
      << e;
  e = bad("page_cache_GB: 384, ", "");
  EXPECT_NE(e.find("field 'page_cache_GB': missing in 'input'"),
            std::string::npos)
      << e;
  e = bad("cpu_cores_per_device: 3", "cpu_cores_per_device: 3, gpus: 8");
  EXPECT_NE(e.find("field 'gpus': unknown field in 'input'"), std::string::npos)
      << e;
  e = bad("storage_read_GBps: 2.5", "storage_read_GBps: 1e9");
  EXPECT_NE(e.find("outside the physical range"), std::string::npos) << e;
  // No page cache at all is a machine that exists.
  std::string noCache = text;
  noCache.replace(noCache.find("page_cache_GB: 384"), 18, "page_cache_GB: 0");
  EXPECT_EQ(llvm::cantFail(parseClusterYAML(noCache, "lab.yaml"))
                .input->pageCacheBytes,
            0);
  // Clusters built in code are checked too.
  c.input->cpuCoresPerDevice = -2;
  e = errorOf(validateCluster(c, "ir"));
  EXPECT_NE(e.find("input cpu_cores_per_device = -2"), std::string::npos) << e;
}

TEST(ClusterYAML, StorageTiers) {
  std::string text = kGood;
  text.replace(text.find("network:"), 0,
               "    tiers:\n"
               "      host: {capacity_GB: 512, bandwidth_GBps: 12, "
               "memory_bandwidth_GBps: 90}\n"
               "      nvme: {capacity_GB: 4000, bandwidth_GBps: 6}\n"
               "      hdd: {capacity_GB: 20000, bandwidth_GBps: 0.5}\n");
  Cluster c = llvm::cantFail(parseClusterYAML(text, "lab.yaml"));
  const NodeTiers &t = c.groups[0].tiers;
  EXPECT_DOUBLE_EQ(t[Tier::Host].capacity, 512e9);
  EXPECT_DOUBLE_EQ(t[Tier::Host].bandwidth, 12e9);
  EXPECT_DOUBLE_EQ(t.hostMemoryBandwidth, 90e9);
  EXPECT_DOUBLE_EQ(t[Tier::NVMe].capacity, 4000e9);
  EXPECT_DOUBLE_EQ(t[Tier::HDD].bandwidth, 0.5e9);
  // Written and read back.
  std::string out;
  llvm::raw_string_ostream os(out);
  writeClusterYAML(c, os);
  Cluster back = llvm::cantFail(parseClusterYAML(out, "back.yaml"));
  for (unsigned i = 0; i < kNumTiers; ++i) {
    EXPECT_DOUBLE_EQ(back.groups[0].tiers.tiers[i].capacity,
                     t.tiers[i].capacity);
    EXPECT_DOUBLE_EQ(back.groups[0].tiers.tiers[i].bandwidth,
                     t.tiers[i].bandwidth);
  }
  EXPECT_DOUBLE_EQ(back.groups[0].tiers.hostMemoryBandwidth, 90e9);
  // Errors: located, naming the field and what to do.
  auto bad = [&](const std::string &tiers) {
    std::string b = kGood;
    b.replace(b.find("network:"), 0, "    tiers:\n" + tiers);
    return errorOf(parseClusterYAML(b, "lab.yaml"));
  };
  std::string e = bad("      host: {capacity_GB: 512, bandwidth_GBps: 12}\n");
  EXPECT_NE(e.find("lab.yaml:14:14: field 'memory_bandwidth_GBps': missing "
                   "in 'host'; add it"),
            std::string::npos)
      << e;
  e = bad("      nvme: {capacity_GB: -1, bandwidth_GBps: 6}\n");
  EXPECT_NE(e.find("lab.yaml:14:27: field 'capacity_GB': '-1' must be "
                   "greater than 0"),
            std::string::npos)
      << e;
  e = bad("      nvme: {capacity_GB: 1e12, bandwidth_GBps: 6}\n");
  EXPECT_NE(e.find("field 'capacity_GB': '1e12' is outside the physical "
                   "range [1e-06, 1000000000]"),
            std::string::npos)
      << e;
  e = bad("      ssd: {capacity_GB: 1, bandwidth_GBps: 6}\n");
  EXPECT_NE(e.find("field 'ssd': unknown field in 'tiers'; expected one of: "
                   "host, nvme, hdd"),
            std::string::npos)
      << e;
  e = bad("      hdd: {capacity_GB: 1, bandwidth_GBps: 6, "
          "memory_bandwidth_GBps: 9}\n");
  EXPECT_NE(e.find("field 'memory_bandwidth_GBps': unknown field in 'hdd'"),
            std::string::npos)
      << e;
  // Built in code: a tier needs both figures, host memory its DRAM.
  Cluster half = c;
  half.groups[0].tiers[Tier::NVMe].bandwidth = 0;
  e = errorOf(validateCluster(half, "code"));
  EXPECT_NE(e.find("code: node group of 'gpu' tier 'nvme' needs capacity_GB "
                   "> 0 and bandwidth_GBps > 0, got 4000 and 0"),
            std::string::npos)
      << e;
  half = c;
  half.groups[0].tiers.hostMemoryBandwidth = 0;
  e = errorOf(validateCluster(half, "code"));
  EXPECT_NE(e.find("tier 'host' needs capacity_GB and memory_bandwidth_GBps"),
            std::string::npos)
      << e;
}

TEST(Cluster, MainPresetsHaveHostAndNvmeTiers) {
  for (const char *name :
       {"dgx-a100-80gb", "dgx-h100", "dgx-h100-roce", "h100-roce-pods",
        "dgx-h200", "dgx-b200", "dgx-v100", "mixed-a100-v100"}) {
    Cluster c = llvm::cantFail(getPreset(name, 2));
    for (const NodeGroup &g : c.groups) {
      EXPECT_TRUE(g.tiers[Tier::Host].present()) << name;
      EXPECT_TRUE(g.tiers[Tier::NVMe].present()) << name;
      EXPECT_GT(g.tiers.hostMemoryBandwidth, 0) << name;
      // Host memory holds more than the node's devices do.
      EXPECT_GT(g.tiers[Tier::Host].capacity,
                g.devicesPerNode * c.devices[g.deviceIndex].memoryBytes)
          << name;
    }
  }
  // DGX A100: 2 TB of host memory, PCIe Gen4 to each GPU.
  Cluster a = llvm::cantFail(getPreset("dgx-a100-80gb"));
  EXPECT_DOUBLE_EQ(a.groups[0].tiers[Tier::Host].capacity, 2048e9);
  EXPECT_DOUBLE_EQ(a.groups[0].tiers[Tier::Host].bandwidth, 25e9);
  // A preset without tiers offloads nothing.
  EXPECT_FALSE(llvm::cantFail(getPreset("local")).groups[0].tiers.any());
}

namespace {
/// Writes \p text to a fresh file and returns its path.
std::string relaunchFile(llvm::StringRef text) {
  llvm::SmallString<128> path;
  int fd;
  EXPECT_FALSE(
      llvm::sys::fs::createTemporaryFile("relaunch", "json", fd, path));
  llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
  os << text;
  return std::string(path);
}
} // namespace

TEST(Relaunch, RecordedFileIsReadAndChecked) {
  std::string good = relaunchFile(R"({"relaunch_s": 1.25, "job": "new/"})");
  EXPECT_DOUBLE_EQ(llvm::cantFail(readRecordedRelaunch(good)), 1.25);
  // Each bad value names the file and the field.
  for (const char *text :
       {R"({"relaunch_s": -0.5})", R"({"relaunch_s": "NaN"})",
        R"({"relaunch_s": 1e9})", R"({"relaunch_s": null})"}) {
    std::string path = relaunchFile(text);
    std::string e = errorOf(readRecordedRelaunch(path));
    EXPECT_NE(e.find("'" + path + "'"), std::string::npos) << e;
    EXPECT_NE(e.find("field 'relaunch_s'"), std::string::npos) << e;
    EXPECT_NE(e.find("dist-run --record-relaunch"), std::string::npos) << e;
    llvm::sys::fs::remove(path);
  }
  std::string none = relaunchFile(R"({"seconds": 1})");
  EXPECT_NE(errorOf(readRecordedRelaunch(none)).find("no field 'relaunch_s'"),
            std::string::npos);
  std::string junk = relaunchFile("relaunch_s: 1");
  EXPECT_NE(errorOf(readRecordedRelaunch(junk)).find("is not JSON"),
            std::string::npos);
  EXPECT_NE(
      errorOf(readRecordedRelaunch(good + ".missing")).find("cannot be read"),
      std::string::npos);
  for (const std::string &p : {good, none, junk})
    llvm::sys::fs::remove(p);
}

TEST(Relaunch, TheClusterWinsThenTheRecordThenNone) {
  Cluster c = llvm::cantFail(getPreset("aws-p3-spot", 2));
  c.availability->relaunchSeconds.reset();
  RelaunchCost none = relaunchCost(c, std::nullopt, "");
  EXPECT_FALSE(none.given);
  EXPECT_EQ(none.seconds, 0);
  RelaunchCost recorded = relaunchCost(c, 1.5, "r.json");
  EXPECT_TRUE(recorded.given);
  EXPECT_EQ(recorded.seconds, 1.5);
  EXPECT_EQ(recorded.source, "recorded by dist-run in r.json");
  c.availability->relaunchSeconds = 40;
  RelaunchCost own = relaunchCost(c, 1.5, "r.json");
  EXPECT_EQ(own.seconds, 40);
  EXPECT_EQ(own.source, "availability.relaunch_s of cluster 'aws-p3-spot'");
  // A cluster without availability takes the record.
  c.availability.reset();
  EXPECT_EQ(relaunchCost(c, 1.5, "r.json").seconds, 1.5);
}
