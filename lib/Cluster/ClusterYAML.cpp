//===- ClusterYAML.cpp - Reading and writing cluster YAML -------*- C++ -*-===//
//
// The YAML is walked node by node (not through yaml::IO) so that every error
// names the file, line, column and field. The format is documented in
// docs/cost-model.md.
//
//===----------------------------------------------------------------------===//

#include "lib/Cluster/Cluster.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/YAMLParser.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>

using namespace llvm;

namespace distopt::cluster {

namespace {

/// Walks a YAML document and produces located errors.
class Reader {
public:
  Reader(SourceMgr &sm, StringRef file) : sm(sm), file(file) {}

  /// True when `n` has a position in the file (the parser gives the
  /// missing value of `{key}` a node without one).
  bool located(yaml::Node *n) {
    return n && n->getSourceRange().Start.isValid() &&
           sm.FindBufferContainingLoc(n->getSourceRange().Start) != 0;
  }

  Error error(yaml::Node *n, StringRef field, const Twine &msg) {
    if (!located(n)) // a syntax error left no node, or one without a place
      return createStringError(
          inconvertibleErrorCode(),
          formatv("{0}: field '{1}': {2}", file, field, msg.str()).str());
    auto [line, col] = sm.getLineAndColumn(n->getSourceRange().Start);
    return createStringError(inconvertibleErrorCode(),
                             formatv("{0}:{1}:{2}: field '{3}': {4}", file,
                                     line, col, field, msg.str())
                                 .str());
  }

  /// An error at a position saved with where().
  Error errorAt(std::pair<unsigned, unsigned> pos, StringRef field,
                const Twine &msg) {
    return createStringError(inconvertibleErrorCode(),
                             formatv("{0}:{1}:{2}: field '{3}': {4}", file,
                                     pos.first, pos.second, field, msg.str())
                                 .str());
  }
  std::pair<unsigned, unsigned> where(yaml::Node *n) {
    if (!located(n))
      return {0, 0};
    return sm.getLineAndColumn(n->getSourceRange().Start);
  }

  Expected<std::string> str(yaml::Node *n, StringRef field) {
    auto *s = dyn_cast_or_null<yaml::ScalarNode>(n);
    if (!s)
      return error(n, field, "expected a string");
    SmallString<64> buf;
    return s->getValue(buf).str();
  }

  /// A finite number (> 0 when `positive`, else >= 0) inside the physical
  /// range of `rangeField` (default: `field`), when it has one.
  Expected<double> number(yaml::Node *n, StringRef field, bool positive,
                          StringRef rangeField = "") {
    Expected<std::string> s = str(n, field);
    if (!s)
      return error(n, field, "expected a number");
    double v;
    if (StringRef(*s).getAsDouble(v) || !std::isfinite(v))
      return error(n, field, "'" + *s + "' is not a finite number");
    if (positive ? !(v > 0) : v < 0)
      return error(n, field,
                   "'" + *s + "' must be " +
                       (positive ? "greater than 0" : "at least 0"));
    StringRef rf = rangeField.empty() ? field : rangeField;
    if (std::optional<FieldRange> range = physicalRange(rf))
      if (v < range->min || v > range->max)
        return error(n, field,
                     formatv("'{0}' is outside the physical range [{1}, {2}] "
                             "of {3}; give a value a real machine has",
                             *s, formatNumber(range->min),
                             formatNumber(range->max), rf)
                         .str());
    return v;
  }

  Expected<unsigned> count(yaml::Node *n, StringRef field) {
    Expected<double> v = number(n, field, /*positive=*/true);
    if (!v)
      return v.takeError();
    // The range check above keeps *v below 2^32 before the cast.
    if (*v != std::floor(*v))
      return error(n, field, "expected a whole number");
    return static_cast<unsigned>(*v);
  }

  /// Calls \p fn(key, value) for each entry of mapping \p n; rejects keys
  /// not in \p known and missing \p required keys.
  Error mapping(yaml::Node *n, StringRef field, ArrayRef<StringRef> known,
                ArrayRef<StringRef> required,
                function_ref<Error(StringRef, yaml::Node *)> fn) {
    auto *m = dyn_cast_or_null<yaml::MappingNode>(n);
    if (!m)
      return error(n, field, "expected a mapping");
    StringSet<> seen;
    for (yaml::KeyValueNode &kv : *m) {
      Expected<std::string> key = str(kv.getKey(), field);
      if (!key)
        return key.takeError();
      if (!is_contained(known, StringRef(*key))) {
        std::string list;
        for (StringRef k : known)
          list += (list.empty() ? "" : ", ") + k.str();
        return error(kv.getKey(), *key,
                     "unknown field in '" + field +
                         "'; expected one of: " + list);
      }
      if (!seen.insert(*key).second)
        return error(kv.getKey(), *key, "given twice");
      if (Error e = fn(*key, kv.getValue()))
        return e;
    }
    for (StringRef r : required)
      if (!seen.contains(r))
        return error(n, r, "missing in '" + field + "'; add it");
    return Error::success();
  }

private:
  SourceMgr &sm;
  StringRef file;
};

} // namespace

/// Rack fields of the network link (nodes_per_rack, oversubscription).
struct RackSpec {
  unsigned nodesPerRack = 0;
  double oversubscription = 1;
};

/// Reads a link; \p rack, when given, also accepts the network's rack
/// fields.
static Expected<LinkSpec> readLink(Reader &r, yaml::Node *n, StringRef field,
                                   RackSpec *rack = nullptr) {
  LinkSpec l;
  std::vector<StringRef> known = {"name", "bandwidth_GBps", "latency_us",
                                  "collective_efficiency"};
  if (rack) {
    known.push_back("nodes_per_rack");
    known.push_back("oversubscription");
  }
  Error e = r.mapping(
      n, field, known, {"bandwidth_GBps"},
      [&](StringRef key, yaml::Node *v) -> Error {
        if (key == "name") {
          auto s = r.str(v, key);
          if (!s)
            return s.takeError();
          l.name = *s;
          return Error::success();
        }
        if (key == "nodes_per_rack") {
          auto k = r.count(v, key);
          if (!k)
            return k.takeError();
          rack->nodesPerRack = *k;
          return Error::success();
        }
        auto x = r.number(v, key, key != "latency_us");
        if (!x)
          return x.takeError();
        if (key == "bandwidth_GBps")
          l.bandwidth = *x * 1e9;
        else if (key == "latency_us")
          l.latency = *x * 1e-6;
        else if (key == "oversubscription") {
          if (*x < 1)
            return r.error(v, key,
                           "must be at least 1 (1 = full bisection, 7 = 1:7)");
          rack->oversubscription = *x;
        } else if (*x > 1)
          return r.error(v, key, "must be at most 1");
        else
          l.collectiveEfficiency = *x;
        return Error::success();
      });
  if (e)
    return std::move(e);
  return l;
}

/// Efficiencies used when a device file does not give one.
static Expected<DeviceSpec> readDevice(Reader &r, yaml::Node *n) {
  DeviceSpec d;
  d.efficiency = defaultEfficiencies();
  Error e = r.mapping(
      n, "devices",
      {"name", "peak_tflops", "memory_GB", "memory_bandwidth_GBps",
       "memory_efficiency", "launch_overhead_us", "half_efficiency_gflops",
       "fp8_matmul_efficiency", "efficiency"},
      {"name", "peak_tflops", "memory_GB", "memory_bandwidth_GBps"},
      [&](StringRef key, yaml::Node *v) -> Error {
        if (key == "name") {
          auto s = r.str(v, key);
          if (!s)
            return s.takeError();
          d.name = *s;
          return Error::success();
        }
        if (key == "peak_tflops")
          return r.mapping(
              v, key,
              {"fp32", "tf32", "fp16", "bf16", "fp8", "int8", "int32", "int64"},
              {"fp32"}, [&](StringRef k, yaml::Node *x) -> Error {
                DType t;
                parseDType(k, t);
                auto val = r.number(x, k, true, "peak_tflops");
                if (!val)
                  return val.takeError();
                d.peakFlops[static_cast<unsigned>(t)] = *val * 1e12;
                return Error::success();
              });
        if (key == "efficiency") {
          std::vector<StringRef> names;
          for (unsigned i = 0; i < kNumOpClasses; ++i)
            names.push_back(opClassName(static_cast<OpClass>(i)));
          return r.mapping(v, key, names, {},
                           [&](StringRef k, yaml::Node *x) -> Error {
                             OpClass c;
                             parseOpClass(k, c);
                             auto val = r.number(x, k, true);
                             if (!val)
                               return val.takeError();
                             if (*val > 1)
                               return r.error(x, k, "must be at most 1");
                             d.efficiency[static_cast<unsigned>(c)] = *val;
                             return Error::success();
                           });
        }
        auto x = r.number(v, key,
                          key != "launch_overhead_us" &&
                              key != "half_efficiency_gflops" &&
                              key != "fp8_matmul_efficiency");
        if (!x)
          return x.takeError();
        if (key == "memory_GB")
          d.memoryBytes = *x * 1e9;
        else if (key == "memory_bandwidth_GBps")
          d.memoryBandwidth = *x * 1e9;
        else if (key == "memory_efficiency" ||
                 key == "fp8_matmul_efficiency") {
          if (*x > 1)
            return r.error(v, key, "must be at most 1");
          (key == "memory_efficiency" ? d.memoryEfficiency
                                      : d.fp8MatmulEfficiency) = *x;
        } else if (key == "launch_overhead_us")
          d.launchOverhead = *x * 1e-6;
        else
          d.halfEfficiencyFlops = *x * 1e9;
        return Error::success();
      });
  if (e)
    return std::move(e);
  return d;
}

/// Reads the availability of the cluster's nodes (docs/resilience.md).
static Expected<Availability> readAvailability(Reader &r, yaml::Node *n) {
  Availability a;
  Error e = r.mapping(
      n, "availability",
      {"preemptions_per_node_hour", "replacement_s",
       "on_demand_usd_per_node_hour", "preemptible_usd_per_node_hour",
       "checkpoint_GBps", "relaunch_s"},
      {"preemptions_per_node_hour", "replacement_s",
       "on_demand_usd_per_node_hour", "preemptible_usd_per_node_hour"},
      [&](StringRef key, yaml::Node *v) -> Error {
        auto x = r.number(v, key, /*positive=*/key == "checkpoint_GBps");
        if (!x)
          return x.takeError();
        if (key == "preemptions_per_node_hour")
          a.preemptionsPerNodeHour = *x;
        else if (key == "replacement_s")
          a.replacementSeconds = *x;
        else if (key == "on_demand_usd_per_node_hour")
          a.onDemandPrice = *x;
        else if (key == "preemptible_usd_per_node_hour")
          a.preemptiblePrice = *x;
        else if (key == "relaunch_s")
          a.relaunchSeconds = *x;
        else
          a.checkpointBandwidth = *x * 1e9;
        return Error::success();
      });
  if (e)
    return std::move(e);
  return a;
}

/// Reads the input side of the cluster's nodes: storage, page cache and
/// CPU cores per device (docs/cost-model.md, "Data stalls").
static Expected<InputSide> readInput(Reader &r, yaml::Node *n) {
  InputSide in;
  Error e =
      r.mapping(n, "input",
                {"storage_read_GBps", "page_cache_GB", "cpu_cores_per_device"},
                {"storage_read_GBps", "page_cache_GB", "cpu_cores_per_device"},
                [&](StringRef key, yaml::Node *v) -> Error {
                  auto x =
                      r.number(v, key, /*positive=*/key != "page_cache_GB");
                  if (!x)
                    return x.takeError();
                  if (key == "storage_read_GBps")
                    in.storageBandwidth = *x * 1e9;
                  else if (key == "page_cache_GB")
                    in.pageCacheBytes = *x * 1e9;
                  else
                    in.cpuCoresPerDevice = *x;
                  return Error::success();
                });
  if (e)
    return std::move(e);
  return in;
}

namespace {
/// A node group read before all devices are known: the YAML stream is read
/// once, so it keeps the device name and its position for the error.
struct PendingGroup {
  NodeGroup group;
  std::string device;
  std::pair<unsigned, unsigned> pos;
};
} // namespace

/// Reads a node group's storage tiers (docs/cost-model.md, "Storage
/// tiers"): host memory, NVMe and disks, each with its capacity and
/// bandwidth; host memory also with the CPUs' DRAM bandwidth.
static Expected<NodeTiers> readTiers(Reader &r, yaml::Node *n) {
  NodeTiers t;
  Error e = r.mapping(
      n, "tiers", {"host", "nvme", "hdd"}, {},
      [&](StringRef name, yaml::Node *v) -> Error {
        Tier tier = name == "host"   ? Tier::Host
                    : name == "nvme" ? Tier::NVMe
                                     : Tier::HDD;
        std::vector<StringRef> known = {"capacity_GB", "bandwidth_GBps"};
        if (tier == Tier::Host)
          known.push_back("memory_bandwidth_GBps");
        return r.mapping(v, name, known, known,
                         [&](StringRef key, yaml::Node *x) -> Error {
                           auto val = r.number(x, key, /*positive=*/true);
                           if (!val)
                             return val.takeError();
                           if (key == "capacity_GB")
                             t[tier].capacity = *val * 1e9;
                           else if (key == "bandwidth_GBps")
                             t[tier].bandwidth = *val * 1e9;
                           else
                             t.hostMemoryBandwidth = *val * 1e9;
                           return Error::success();
                         });
      });
  if (e)
    return std::move(e);
  return t;
}

static Expected<PendingGroup> readGroup(Reader &r, yaml::Node *item) {
  PendingGroup pg;
  pg.pos = r.where(item);
  std::pair<unsigned, unsigned> nicsPos;
  const StringRef fields[] = {"device",     "count", "devices_per_node",
                              "intra_node", "tiers", "nics"};
  Error e = r.mapping(
      item, "nodes", fields, {"device", "devices_per_node", "intra_node"},
      [&](StringRef key, yaml::Node *v) -> Error {
        if (key == "device") {
          auto s = r.str(v, key);
          if (!s)
            return s.takeError();
          pg.device = *s;
          pg.pos = r.where(v);
          return Error::success();
        }
        if (key == "intra_node") {
          auto l = readLink(r, v, key);
          if (!l)
            return l.takeError();
          pg.group.intraNode = *l;
          return Error::success();
        }
        if (key == "tiers") {
          auto t = readTiers(r, v);
          if (!t)
            return t.takeError();
          pg.group.tiers = *t;
          return Error::success();
        }
        auto x = r.count(v, key);
        if (!x)
          return x.takeError();
        if (key == "nics") {
          pg.group.nics = *x;
          nicsPos = r.where(v);
          return Error::success();
        }
        (key == "count" ? pg.group.nodes : pg.group.devicesPerNode) = *x;
        return Error::success();
      });
  if (e)
    return std::move(e);
  const NodeGroup &g = pg.group;
  if (g.nics && g.devicesPerNode % g.nics)
    return r.errorAt(nicsPos, "nics",
                     formatv("{0} NICs for {1} devices per node; give a "
                             "number that divides devices_per_node (each NIC "
                             "is shared by as many devices)",
                             g.nics, g.devicesPerNode)
                         .str());
  return pg;
}

Expected<Cluster> parseClusterYAML(StringRef text, StringRef fileName) {
  SourceMgr sm;
  std::string diag;
  sm.setDiagHandler(
      [](const SMDiagnostic &d, void *ctx) {
        auto *out = static_cast<std::string *>(ctx);
        if (out->empty())
          *out = formatv("{0}:{1}:{2}: {3}", d.getFilename(), d.getLineNo(),
                         d.getColumnNo() + 1, d.getMessage())
                     .str();
      },
      &diag);
  yaml::Stream stream(MemoryBufferRef(text, fileName), sm,
                      /*ShowColors=*/false);
  Reader r(sm, fileName);
  Cluster c;
  auto docIt = stream.begin();
  if (docIt == stream.end() || !docIt->getRoot() ||
      isa<yaml::NullNode>(docIt->getRoot()))
    return createStringError(inconvertibleErrorCode(),
                             fileName + ": empty cluster file; expected a "
                                        "mapping with name, devices, nodes");
  yaml::Node *root = docIt->getRoot();
  std::pair<unsigned, unsigned> rootPos = r.where(root);
  std::vector<PendingGroup> pending;
  // The top-level sections.
  const StringRef sections[] = {"name",    "description",  "devices", "nodes",
                                "network", "availability", "input"};
  Error e = r.mapping(root, "cluster", sections, {"name", "devices", "nodes"},
                      [&](StringRef key, yaml::Node *v) -> Error {
                        if (key == "input") {
                          auto in = readInput(r, v);
                          if (!in)
                            return in.takeError();
                          c.input = *in;
                          return Error::success();
                        }
                        if (key == "availability") {
                          auto a = readAvailability(r, v);
                          if (!a)
                            return a.takeError();
                          c.availability = *a;
                          return Error::success();
                        }
                        if (key == "name" || key == "description") {
                          auto s = r.str(v, key);
                          if (!s)
                            return s.takeError();
                          (key == "name" ? c.name : c.description) = *s;
                          return Error::success();
                        }
                        if (key == "network") {
                          RackSpec rack;
                          auto l = readLink(r, v, key, &rack);
                          if (!l)
                            return l.takeError();
                          c.network = *l;
                          c.nodesPerRack = rack.nodesPerRack;
                          c.rackOversubscription = rack.oversubscription;
                          return Error::success();
                        }
                        auto *seq = dyn_cast_or_null<yaml::SequenceNode>(v);
                        if (!seq)
                          return r.error(v, key, "expected a list");
                        for (yaml::Node &item : *seq) {
                          if (key == "devices") {
                            auto d = readDevice(r, &item);
                            if (!d)
                              return d.takeError();
                            c.devices.push_back(*d);
                          } else {
                            auto g = readGroup(r, &item);
                            if (!g)
                              return g.takeError();
                            pending.push_back(*g);
                          }
                        }
                        return Error::success();
                      });
  if (!diag.empty()) {
    consumeError(std::move(e));
    return createStringError(inconvertibleErrorCode(),
                             diag + "; fix the YAML syntax");
  }
  if (e)
    return std::move(e);
  for (PendingGroup &pg : pending) {
    auto it = llvm::find_if(
        c.devices, [&](const DeviceSpec &d) { return d.name == pg.device; });
    if (it == c.devices.end())
      return r.errorAt(pg.pos, "device",
                       "unknown device '" + pg.device +
                           "'; define it under 'devices'");
    pg.group.deviceIndex = it - c.devices.begin();
    c.groups.push_back(pg.group);
  }
  if (c.numNodes() > 1 && c.network.bandwidth == 0)
    return r.errorAt(rootPos, "network",
                     "the cluster has several nodes but no 'network' link; "
                     "add network: {bandwidth_GBps: ..., latency_us: ...}");
  if (Error ve = validateCluster(c, fileName))
    return std::move(ve);
  return c;
}

Expected<Cluster> loadClusterFile(StringRef path) {
  // A device or FIFO (/dev/zero) would be read until memory runs out, and
  // no cluster description is megabytes long.
  constexpr uint64_t kMaxBytes = 16 << 20;
  sys::fs::file_status st;
  if (!sys::fs::status(path, st) && sys::fs::exists(st)) {
    if (!sys::fs::is_regular_file(st))
      return createStringError(inconvertibleErrorCode(),
                               "cluster file '" + path +
                                   "' is not a regular file; give a preset "
                                   "name (see --list-clusters) or a YAML file");
    if (st.getSize() > kMaxBytes)
      return createStringError(
          inconvertibleErrorCode(),
          formatv("cluster file '{0}' has {1} bytes; a cluster description "
                  "is at most {2} (is it the right file?)",
                  path, st.getSize(), kMaxBytes)
              .str());
  }
  auto buf = MemoryBuffer::getFile(path);
  if (!buf)
    return createStringError(buf.getError(),
                             "cannot read cluster file '" + path +
                                 "': " + buf.getError().message() +
                                 "; give a preset name (see --list-clusters) "
                                 "or an existing YAML file");
  return parseClusterYAML((*buf)->getBuffer(), path);
}

static std::string num(double v) { return formatNumber(v); }

/// `s` as a YAML double-quoted scalar, so any name or description reads
/// back as written.
static std::string quoted(StringRef s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c < 0x20 || c == 0x7f) {
      out += formatv("\\x{0:x-2}", unsigned(c)).str();
    } else {
      out += char(c);
    }
  }
  return out + "\"";
}

static void writeLink(const LinkSpec &l, raw_ostream &os,
                      const Cluster *rack = nullptr) {
  os << "{name: " << quoted(l.name.empty() ? "link" : l.name)
     << ", bandwidth_GBps: " << num(l.bandwidth / 1e9)
     << ", latency_us: " << num(l.latency * 1e6)
     << ", collective_efficiency: " << num(l.collectiveEfficiency);
  if (rack && rack->nodesPerRack)
    os << ", nodes_per_rack: " << rack->nodesPerRack
       << ", oversubscription: " << num(rack->rackOversubscription);
  os << "}";
}

void writeClusterYAML(const Cluster &c, raw_ostream &os) {
  os << "name: " << quoted(c.name) << "\n";
  if (!c.description.empty())
    os << "description: " << quoted(c.description) << "\n";
  os << "devices:\n";
  for (const DeviceSpec &d : c.devices) {
    os << "  - name: " << quoted(d.name) << "\n    peak_tflops: {";
    bool first = true;
    for (unsigned i = 0; i < kNumDTypes; ++i) {
      if (d.peakFlops[i] <= 0)
        continue;
      os << (first ? "" : ", ") << dtypeName(static_cast<DType>(i)) << ": "
         << num(d.peakFlops[i] / 1e12);
      first = false;
    }
    os << "}\n";
    os << "    memory_GB: " << num(d.memoryBytes / 1e9)
       << "\n    memory_bandwidth_GBps: " << num(d.memoryBandwidth / 1e9)
       << "\n    memory_efficiency: " << num(d.memoryEfficiency)
       << "\n    launch_overhead_us: " << num(d.launchOverhead * 1e6)
       << "\n    half_efficiency_gflops: " << num(d.halfEfficiencyFlops / 1e9);
    if (d.fp8MatmulEfficiency > 0)
      os << "\n    fp8_matmul_efficiency: " << num(d.fp8MatmulEfficiency);
    os << "\n    efficiency: {";
    for (unsigned i = 0; i < kNumOpClasses; ++i)
      os << (i ? ", " : "") << opClassName(static_cast<OpClass>(i)) << ": "
         << num(d.efficiency[i]);
    os << "}\n";
  }
  os << "nodes:\n";
  for (const NodeGroup &g : c.groups) {
    os << "  - device: " << quoted(c.devices[g.deviceIndex].name)
       << "\n    count: " << g.nodes
       << "\n    devices_per_node: " << g.devicesPerNode;
    if (g.nics)
      os << "\n    nics: " << g.nics;
    os << "\n    intra_node: ";
    writeLink(g.intraNode, os);
    os << "\n";
    if (g.tiers.any()) {
      os << "    tiers:\n";
      for (unsigned i = 0; i < kNumTiers; ++i) {
        const StorageTier &t = g.tiers.tiers[i];
        if (!t.present())
          continue;
        os << "      " << tierName(Tier(i))
           << ": {capacity_GB: " << num(t.capacity / 1e9)
           << ", bandwidth_GBps: " << num(t.bandwidth / 1e9);
        if (Tier(i) == Tier::Host)
          os << ", memory_bandwidth_GBps: "
             << num(g.tiers.hostMemoryBandwidth / 1e9);
        os << "}\n";
      }
    }
  }
  if (c.network.bandwidth > 0) {
    os << "network: ";
    writeLink(c.network, os, &c);
    os << "\n";
  }
  if (const std::optional<Availability> &a = c.availability)
    os << "availability: {preemptions_per_node_hour: "
       << num(a->preemptionsPerNodeHour)
       << ", replacement_s: " << num(a->replacementSeconds)
       << ", on_demand_usd_per_node_hour: " << num(a->onDemandPrice)
       << ", preemptible_usd_per_node_hour: " << num(a->preemptiblePrice)
       << ", checkpoint_GBps: " << num(a->checkpointBandwidth / 1e9)
       << (a->relaunchSeconds ? ", relaunch_s: " + num(*a->relaunchSeconds)
                              : std::string())
       << "}\n";
  if (const std::optional<InputSide> &in = c.input)
    os << "input: {storage_read_GBps: " << num(in->storageBandwidth / 1e9)
       << ", page_cache_GB: " << num(in->pageCacheBytes / 1e9)
       << ", cpu_cores_per_device: " << num(in->cpuCoresPerDevice) << "}\n";
}

} // namespace distopt::cluster
