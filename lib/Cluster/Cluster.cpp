//===- Cluster.cpp - Devices, nodes and link levels -------------*- C++ -*-===//
//
// Queries on a Cluster and its validation.
//
//===----------------------------------------------------------------------===//

#include "lib/Cluster/Cluster.h"
#include "lib/Support/JSONFile.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <cmath>
#include <cstdio>

using namespace llvm;

namespace distopt::cluster {

unsigned dtypeBytes(DType t) {
  switch (t) {
  case DType::F32:
  case DType::TF32:
  case DType::I32:
    return 4;
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::F8:
  case DType::I8:
    return 1;
  case DType::I64:
    return 8;
  }
  return 4;
}

StringRef dtypeName(DType t) {
  static const char *names[] = {"fp32", "tf32", "fp16",  "bf16",
                                "fp8",  "int8", "int32", "int64"};
  return names[static_cast<unsigned>(t)];
}

bool parseDType(StringRef s, DType &out) {
  auto v = StringSwitch<int>(s.lower())
               .Cases({"fp32", "f32", "float32", "float"}, 0)
               .Case("tf32", 1)
               .Cases({"fp16", "f16", "float16", "half"}, 2)
               .Cases({"bf16", "bfloat16"}, 3)
               .Cases({"fp8", "f8", "float8"}, 4)
               .Cases({"int8", "i8"}, 5)
               .Cases({"int32", "i32"}, 6)
               .Cases({"int64", "i64"}, 7)
               .Default(-1);
  if (v < 0)
    return false;
  out = static_cast<DType>(v);
  return true;
}

StringRef opClassName(OpClass c) {
  static const char *names[] = {
      "matmul",    "conv",      "elementwise",   "norm", "softmax",
      "embedding", "reduction", "data_movement", "loss", "other",
      "attention"};
  return names[static_cast<unsigned>(c)];
}

bool parseOpClass(StringRef s, OpClass &out) {
  for (unsigned i = 0; i < kNumOpClasses; ++i) {
    if (s == opClassName(static_cast<OpClass>(i))) {
      out = static_cast<OpClass>(i);
      return true;
    }
  }
  return false;
}

StringRef tierName(Tier t) {
  static const char *names[] = {"host", "nvme", "hdd"};
  return names[static_cast<unsigned>(t)];
}

std::array<double, kNumOpClasses> defaultEfficiencies() {
  std::array<double, kNumOpClasses> e;
  e.fill(0.5);
  e[static_cast<unsigned>(OpClass::MatMul)] = 0.75;
  e[static_cast<unsigned>(OpClass::Conv)] = 0.6;
  return e;
}

double DeviceSpec::peak(DType t) const {
  double p = peakFlops[static_cast<unsigned>(t)];
  if (p > 0)
    return p;
  return peakFlops[static_cast<unsigned>(DType::F32)];
}

unsigned Cluster::numDevices() const {
  unsigned n = 0;
  for (const NodeGroup &g : groups)
    n += g.devicesPerNode * g.nodes;
  return n;
}

unsigned Cluster::numNodes() const {
  unsigned n = 0;
  for (const NodeGroup &g : groups)
    n += g.nodes;
  return n;
}

/// Finds the group of \p rank and the node index within the whole cluster.
static std::pair<const NodeGroup *, unsigned> locate(const Cluster &c,
                                                     unsigned rank) {
  unsigned nodeBase = 0;
  for (const NodeGroup &g : c.groups) {
    unsigned span = g.devicesPerNode * g.nodes;
    if (rank < span)
      return {&g, nodeBase + rank / g.devicesPerNode};
    rank -= span;
    nodeBase += g.nodes;
  }
  // Out-of-range ranks map to the last device; callers validate ranks.
  return {&c.groups.back(), nodeBase ? nodeBase - 1 : 0};
}

unsigned Cluster::nodeOf(unsigned rank) const {
  return locate(*this, rank).second;
}

const NodeGroup &Cluster::groupOf(unsigned rank) const {
  return *locate(*this, rank).first;
}

const DeviceSpec &Cluster::deviceOf(unsigned rank) const {
  return devices[groupOf(rank).deviceIndex];
}

LinkLevel Cluster::levelBetween(unsigned a, unsigned b) const {
  return nodeOf(a) == nodeOf(b) ? LinkLevel::IntraNode : LinkLevel::Network;
}

const LinkSpec &Cluster::link(LinkLevel level, unsigned rank) const {
  if (level == LinkLevel::IntraNode)
    return groupOf(rank).intraNode;
  return network;
}

unsigned Cluster::nicOf(unsigned rank) const {
  unsigned base = 0;
  for (const NodeGroup &g : groups) {
    unsigned span = g.devicesPerNode * g.nodes;
    if (rank < base + span)
      return rank - (rank - base) % g.devicesPerNic();
    base += span;
  }
  return rank;
}

unsigned Cluster::rackOf(unsigned rank) const {
  return nodesPerRack ? nodeOf(rank) / nodesPerRack : 0;
}

LinkSpec Cluster::linkBetween(unsigned a, unsigned b) const {
  LinkLevel level = levelBetween(a, b);
  LinkSpec l = link(level, a);
  if (level == LinkLevel::Network && rackOf(a) != rackOf(b))
    l.bandwidth /= rackOversubscription;
  return l;
}

std::string Cluster::levelName(LinkLevel level) const {
  if (level == LinkLevel::Network)
    return network.name.empty() ? "network" : network.name;
  if (!groups.empty() && !groups.front().intraNode.name.empty())
    return groups.front().intraNode.name;
  return "intra_node";
}

std::optional<FieldRange> physicalRange(StringRef field) {
  // Generous bounds around real hardware: from microcontrollers on Wi-Fi
  // (kB/s, MFLOP/s) to wafer-scale engines (PB/s, EFLOP/s), latencies up to
  // minutes; nodes and devices per node as the 10-million-device limit
  // allows.
  return llvm::StringSwitch<std::optional<FieldRange>>(field)
      .Case("peak_tflops", FieldRange{1e-6, 1e6})
      .Case("memory_GB", FieldRange{1e-6, 1e7})
      .Case("memory_bandwidth_GBps", FieldRange{1e-6, 1e8})
      .Case("bandwidth_GBps", FieldRange{1e-6, 1e8})
      .Case("latency_us", FieldRange{0, 1e8})
      .Case("launch_overhead_us", FieldRange{0, 1e7})
      .Case("half_efficiency_gflops", FieldRange{0, 1e12})
      .Case("count", FieldRange{1, 1e7})
      .Case("devices_per_node", FieldRange{1, 1e6})
      .Case("nics", FieldRange{1, 1e6})
      // Availability: up to one preemption a minute per node, a day to
      // replace one, prices up to $1M per node-hour.
      .Case("preemptions_per_node_hour", FieldRange{0, 60})
      .Case("replacement_s", FieldRange{0, 86400})
      .Case("on_demand_usd_per_node_hour", FieldRange{0, 1e6})
      .Case("preemptible_usd_per_node_hour", FieldRange{0, 1e6})
      .Case("checkpoint_GBps", FieldRange{1e-6, 1e6})
      .Case("relaunch_s", FieldRange{0, 86400})
      // Input side: from an SD card (MB/s) to a parallel file system's
      // share, a page cache up to 100 TB of host memory, a hundredth of a
      // core to 10,000 cores per device.
      .Case("storage_read_GBps", FieldRange{1e-6, 1e5})
      .Case("page_cache_GB", FieldRange{0, 1e5})
      .Case("cpu_cores_per_device", FieldRange{0.01, 1e4})
      // Storage tiers of a node: up to an exabyte (1e9 GB) per node.
      .Case("capacity_GB", FieldRange{1e-6, 1e9})
      .Default(std::nullopt);
}

std::string formatNumber(double v) {
  char buf[32];
  snprintf(buf, sizeof(buf), "%.10g", v);
  return buf;
}

/// Checks that \p value (in SI units; \p scale converts to the YAML field's)
/// lies in the physical range of \p field.
static Error checkRange(double value, double scale, StringRef field,
                        const Twine &what, StringRef where) {
  std::optional<FieldRange> range = physicalRange(field);
  double v = value / scale;
  if (!range || (v >= range->min && v <= range->max))
    return Error::success();
  return createStringError(
      inconvertibleErrorCode(),
      formatv("{0}: {1} {2} = {3} is outside the physical range [{4}, {5}]; "
              "give a value a real machine has",
              where, what.str(), field, formatNumber(v),
              formatNumber(range->min), formatNumber(range->max)));
}

static Error checkLink(const LinkSpec &l, StringRef where, StringRef what) {
  if (!(l.bandwidth > 0))
    return createStringError(
        inconvertibleErrorCode(),
        formatv("{0}: {1} link '{2}' has bandwidth {3}; give a positive "
                "bandwidth_GBps",
                where, what, l.name, l.bandwidth));
  if (l.latency < 0)
    return createStringError(
        inconvertibleErrorCode(),
        formatv("{0}: {1} link '{2}' has a negative latency; give latency_us "
                ">= 0",
                where, what, l.name));
  if (!(l.collectiveEfficiency > 0 && l.collectiveEfficiency <= 1))
    return createStringError(
        inconvertibleErrorCode(),
        formatv("{0}: {1} link '{2}' collective_efficiency {3} is outside "
                "(0, 1]",
                where, what, l.name, l.collectiveEfficiency));
  std::string link = (what + " link '" + l.name + "'").str();
  if (Error e = checkRange(l.bandwidth, 1e9, "bandwidth_GBps", link, where))
    return e;
  return checkRange(l.latency, 1e-6, "latency_us", link, where);
}

/// The physical ranges of a device's values.
static Error checkDeviceRanges(const DeviceSpec &d, StringRef where) {
  std::string dev = "device '" + d.name + "'";
  for (unsigned i = 0; i < kNumDTypes; ++i)
    if (d.peakFlops[i] != 0)
      if (Error e = checkRange(d.peakFlops[i], 1e12, "peak_tflops",
                               dev + " " + dtypeName(DType(i)).str(), where))
        return e;
  if (Error e = checkRange(d.memoryBytes, 1e9, "memory_GB", dev, where))
    return e;
  if (Error e = checkRange(d.memoryBandwidth, 1e9, "memory_bandwidth_GBps",
                           dev, where))
    return e;
  if (Error e = checkRange(d.launchOverhead, 1e-6, "launch_overhead_us", dev,
                           where))
    return e;
  return checkRange(d.halfEfficiencyFlops, 1e9, "half_efficiency_gflops", dev,
                    where);
}

namespace {
/// A cluster value in SI units, \p scale to its YAML field's unit.
struct ScaledField {
  double value, scale;
  const char *field;
};
} // namespace

/// Checks that each of \p fields (of the cluster's \p part, such as
/// "availability") is a finite number >= 0 within its physical range.
static Error checkFields(const Cluster &c, StringRef where, StringRef part,
                         std::initializer_list<ScaledField> fields) {
  for (const ScaledField &f : fields) {
    if (!std::isfinite(f.value) || f.value < 0)
      return createStringError(
          inconvertibleErrorCode(),
          formatv("{0}: cluster '{1}' has {2} {3} = {4}; give a finite "
                  "number >= 0",
                  where, c.name, part, f.field, f.value / f.scale)
              .str());
    if (Error e = checkRange(f.value, f.scale, f.field, part, where))
      return e;
  }
  return Error::success();
}

/// A node group's storage tiers: each present one with a bandwidth, a
/// host tier with its DRAM bandwidth, all inside their physical ranges.
static Error checkTiers(const NodeTiers &t, StringRef group, StringRef where) {
  for (unsigned i = 0; i < kNumTiers; ++i) {
    const StorageTier &st = t.tiers[i];
    std::string what = (group + " tier '" + tierName(Tier(i)) + "'").str();
    if (!st.present() && st.bandwidth == 0)
      continue;
    if (!(st.capacity > 0) || !(st.bandwidth > 0))
      return createStringError(
          inconvertibleErrorCode(),
          formatv("{0}: {1} needs capacity_GB > 0 and bandwidth_GBps > 0, "
                  "got {2} and {3}",
                  where, what, formatNumber(st.capacity / 1e9),
                  formatNumber(st.bandwidth / 1e9)));
    if (Error e = checkRange(st.capacity, 1e9, "capacity_GB", what, where))
      return e;
    if (Error e = checkRange(st.bandwidth, 1e9, "bandwidth_GBps", what, where))
      return e;
  }
  if (t[Tier::Host].present() || t.hostMemoryBandwidth != 0) {
    std::string what = (group + " tier 'host'").str();
    if (!t[Tier::Host].present() || !(t.hostMemoryBandwidth > 0))
      return createStringError(
          inconvertibleErrorCode(),
          formatv("{0}: {1} needs capacity_GB and memory_bandwidth_GBps "
                  "(the CPUs' DRAM bandwidth, which an offloaded optimizer "
                  "step streams at)",
                  where, what));
    if (Error e = checkRange(t.hostMemoryBandwidth, 1e9,
                             "memory_bandwidth_GBps", what, where))
      return e;
  }
  return Error::success();
}

Error validateCluster(const Cluster &c, StringRef where) {
  auto fail = [&](const Twine &msg) {
    return createStringError(inconvertibleErrorCode(),
                             (where + ": " + msg).str());
  };
  if (c.devices.empty())
    return fail("cluster '" + c.name + "' has no devices; add a 'devices' map");
  if (c.groups.empty())
    return fail("cluster '" + c.name + "' has no nodes; add a 'nodes' list");
  for (const DeviceSpec &d : c.devices) {
    if (!(d.peak(DType::F32) > 0))
      return fail("device '" + d.name +
                  "' has no fp32 peak; give peak_tflops.fp32 > 0");
    if (!(d.memoryBytes > 0))
      return fail("device '" + d.name + "' has no memory; give memory_GB > 0");
    if (!(d.memoryBandwidth > 0))
      return fail("device '" + d.name +
                  "' has no memory bandwidth; give memory_bandwidth_GBps > 0");
    for (double e : d.efficiency)
      if (!(e > 0 && e <= 1))
        return fail("device '" + d.name +
                    "' has an efficiency outside (0, 1]; fix 'efficiency'");
    if (!(d.memoryEfficiency > 0 && d.memoryEfficiency <= 1))
      return fail("device '" + d.name +
                  "' memory_efficiency is outside (0, 1]");
    if (!(d.fp8MatmulEfficiency >= 0 && d.fp8MatmulEfficiency <= 1))
      return fail("device '" + d.name +
                  "' fp8_matmul_efficiency is outside [0, 1]");
    if (Error e = checkDeviceRanges(d, where))
      return e;
  }
  for (const NodeGroup &g : c.groups) {
    if (g.deviceIndex >= c.devices.size())
      return fail("a node group names an unknown device");
    if (g.devicesPerNode == 0 || g.nodes == 0)
      return fail("a node group of '" + c.devices[g.deviceIndex].name +
                  "' has zero devices_per_node or count; both must be >= 1");
    std::string group =
        "node group of '" + c.devices[g.deviceIndex].name + "'";
    if (Error e = checkRange(g.nodes, 1, "count", group, where))
      return e;
    if (Error e = checkRange(g.devicesPerNode, 1, "devices_per_node", group,
                             where))
      return e;
    if (g.nics && g.devicesPerNode % g.nics)
      return fail(group + " has " + Twine(g.nics) + " NICs for its " +
                  Twine(g.devicesPerNode) +
                  " devices per node; give a number of NICs that divides "
                  "devices_per_node (each NIC shared by as many devices)");
    if (Error e = checkLink(g.intraNode, where, "intra-node"))
      return e;
    if (Error e = checkTiers(g.tiers, group, where))
      return e;
  }
  uint64_t total = 0;
  for (const NodeGroup &g : c.groups)
    total += static_cast<uint64_t>(g.devicesPerNode) * g.nodes;
  if (total > 10000000)
    return fail("cluster '" + c.name + "' has " + Twine(total) +
                " devices; at most 10 million are supported");
  if (c.numNodes() > 1)
    if (Error e = checkLink(c.network, where, "network"))
      return e;
  if (!(c.rackOversubscription >= 1))
    return fail(formatv("cluster '{0}' has rack oversubscription {1}; give "
                        "oversubscription >= 1 (1 = full bisection)",
                        c.name, c.rackOversubscription)
                    .str());
  if (const std::optional<Availability> &a = c.availability)
    if (Error e = checkFields(
            c, where, "availability",
            {{a->preemptionsPerNodeHour, 1, "preemptions_per_node_hour"},
             {a->replacementSeconds, 1, "replacement_s"},
             {a->onDemandPrice, 1, "on_demand_usd_per_node_hour"},
             {a->preemptiblePrice, 1, "preemptible_usd_per_node_hour"},
             {a->checkpointBandwidth, 1e9, "checkpoint_GBps"},
             {a->relaunchSeconds.value_or(0), 1, "relaunch_s"}}))
      return e;
  if (const std::optional<InputSide> &in = c.input)
    if (Error e =
            checkFields(c, where, "input",
                        {{in->storageBandwidth, 1e9, "storage_read_GBps"},
                         {in->pageCacheBytes, 1e9, "page_cache_GB"},
                         {in->cpuCoresPerDevice, 1, "cpu_cores_per_device"}}))
      return e;
  return Error::success();
}

Expected<double> readRecordedRelaunch(StringRef path) {
  const char *hint = "; give the file dist-run --record-relaunch=FILE wrote "
                     "(docs/resilience.md, \"The relaunch\")";
  auto fail = [&](const Twine &what) {
    return createStringError(inconvertibleErrorCode(),
                             "--dist-relaunch: '" + path + "' " + what + hint);
  };
  Expected<json::Value> v = readJSONFile(path, "--dist-relaunch");
  if (!v)
    return createStringError(inconvertibleErrorCode(),
                             toString(v.takeError()) + hint);
  const json::Object *top = v->getAsObject();
  const json::Value *field = top ? top->get("relaunch_s") : nullptr;
  if (!field)
    return fail("has no field 'relaunch_s'");
  std::optional<double> x = field->getAsNumber();
  if (!x)
    return fail("field 'relaunch_s' is not a number of seconds");
  // The cluster YAML's bounds: a restart of at most a day.
  FieldRange range = *physicalRange("relaunch_s");
  if (!std::isfinite(*x) || *x < range.min || *x > range.max)
    return fail(formatv("field 'relaunch_s' is {0}, outside [{1}, {2}] "
                        "seconds",
                        formatNumber(*x), formatNumber(range.min),
                        formatNumber(range.max)));
  return *x;
}

RelaunchCost relaunchCost(const Cluster &cluster,
                          std::optional<double> recorded,
                          StringRef recordedPath) {
  if (cluster.availability && cluster.availability->relaunchSeconds)
    return {*cluster.availability->relaunchSeconds,
            "availability.relaunch_s of cluster '" + cluster.name + "'", true};
  if (recorded)
    return {*recorded, ("recorded by dist-run in " + recordedPath).str(), true};
  return {0, "none given", false};
}

} // namespace distopt::cluster
