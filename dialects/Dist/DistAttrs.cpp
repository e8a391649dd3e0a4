//===- DistAttrs.cpp - Attributes of the distribution dialect --*- C++ -*-===//
//
// Part of DistOpt. Verifiers of the cluster, mesh and plan attributes, the
// parameters spelled with the cost core's enums, and the conversions
// between the attributes and the core's cluster::Cluster / schedule::Plan.
//
//===----------------------------------------------------------------------===//
#include "dialects/Dist/DistDialect.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CheckedArithmetic.h"

using namespace mlir;
using namespace distopt;
using namespace distopt::dist;

//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

FailureOr<bool> dist::parseBoolKeyword(AsmParser &parser) {
  if (succeeded(parser.parseOptionalKeyword("true")))
    return true;
  if (succeeded(parser.parseOptionalKeyword("false")))
    return false;
  return parser.emitError(parser.getCurrentLocation(),
                          "expected 'true' or 'false'");
}

FailureOr<schedule::ScheduleKind> dist::parseScheduleKind(AsmParser &parser) {
  SMLoc loc = parser.getCurrentLocation();
  std::string name;
  if (parser.parseString(&name))
    return failure();
  schedule::ScheduleKind kind;
  if (!schedule::parseScheduleKind(name, kind))
    return parser.emitError(loc, "unknown schedule \"")
           << name << "\"; expected one of " << schedule::scheduleNameList();
  return kind;
}

void dist::printScheduleKind(AsmPrinter &printer, schedule::ScheduleKind k) {
  printer << '"' << schedule::scheduleName(k) << '"';
}

FailureOr<cost::Recompute> dist::parseRecompute(AsmParser &parser) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef name;
  if (parser.parseKeyword(&name))
    return failure();
  for (cost::Recompute r : {cost::Recompute::None, cost::Recompute::Selective,
                            cost::Recompute::Full})
    if (name == cost::recomputeName(r))
      return r;
  return parser.emitError(loc, "unknown recompute '")
         << name << "'; expected none, selective or full";
}

void dist::printRecompute(AsmPrinter &printer, cost::Recompute r) {
  printer << cost::recomputeName(r);
}

FailureOr<cost::Optimizer> dist::parseOptimizer(AsmParser &parser) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef name;
  if (parser.parseKeyword(&name))
    return failure();
  if (std::optional<cost::Optimizer> o = cost::parseOptimizer(name))
    return *o;
  return parser.emitError(loc, "unknown optimizer '")
         << name << "'; expected adam, momentum or sgd";
}

void dist::printOptimizer(AsmPrinter &printer, cost::Optimizer o) {
  printer << cost::optimizerName(o);
}

FailureOr<cost::Offload> dist::parseOffload(AsmParser &parser) {
  SMLoc loc = parser.getCurrentLocation();
  std::string text;
  if (parser.parseString(&text))
    return failure();
  llvm::Expected<cost::Offload> o = cost::parseOffload(text);
  if (!o)
    return parser.emitError(loc, llvm::toString(o.takeError()));
  return *o;
}

void dist::printOffload(AsmPrinter &printer, const cost::Offload &o) {
  printer << '"' << o.str() << '"';
}

FailureOr<cluster::DType> dist::parseDType(AsmParser &parser) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef name;
  if (parser.parseKeyword(&name))
    return failure();
  cluster::DType t;
  if (!cluster::parseDType(name, t))
    return parser.emitError(loc, "unknown element type '")
           << name << "'; expected fp32, tf32, fp16, bf16 or fp8";
  return t;
}

void dist::printDType(AsmPrinter &printer, cluster::DType t) {
  printer << cluster::dtypeName(t);
}

FailureOr<schedule::Mode> dist::parseMode(AsmParser &parser) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef name;
  if (parser.parseKeyword(&name))
    return failure();
  for (schedule::Mode m : {schedule::Mode::Train, schedule::Mode::Infer})
    if (name == schedule::modeName(m))
      return m;
  return parser.emitError(loc, "unknown plan mode '")
         << name << "'; expected train or infer";
}

void dist::printMode(AsmPrinter &printer, schedule::Mode m) {
  printer << schedule::modeName(m);
}

FailureOr<schedule::InferObjective> dist::parseObjective(AsmParser &parser) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef name;
  if (parser.parseKeyword(&name))
    return failure();
  for (schedule::InferObjective o : {schedule::InferObjective::Latency,
                                     schedule::InferObjective::Throughput})
    if (name == schedule::objectiveName(o))
      return o;
  return parser.emitError(loc, "unknown objective '")
         << name << "'; expected throughput or latency";
}

void dist::printObjective(AsmPrinter &printer, schedule::InferObjective o) {
  printer << schedule::objectiveName(o);
}

//===----------------------------------------------------------------------===//
// Cluster
//===----------------------------------------------------------------------===//

LogicalResult DeviceKindAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, StringRef name,
    int64_t memory, APFloat bandwidthF, DictionaryAttr flops,
    DictionaryAttr efficiency, APFloat memoryEfficiency, APFloat launchOverhead,
    APFloat halfEfficiencyFlops, APFloat fp8MatmulEfficiency) {
  double bandwidth = bandwidthF.convertToDouble();
  if (name.empty())
    return emitError() << "device kind needs a non-empty name";
  if (memory <= 0)
    return emitError() << "device kind '" << name
                       << "' needs a positive memory size, got " << memory;
  if (!(bandwidth > 0))
    return emitError() << "device kind '" << name
                       << "' needs a positive memory bandwidth";
  if (flops.empty())
    return emitError() << "device kind '" << name
                       << "' needs peak FLOP/s for at least one element type";
  for (NamedAttribute entry : flops) {
    cluster::DType t;
    if (!cluster::parseDType(entry.getName().getValue(), t))
      return emitError() << "device kind '" << name
                         << "' gives peak FLOP/s for unknown element type '"
                         << entry.getName().getValue()
                         << "'; use fp32, tf32, fp16, bf16, fp8, int8, "
                            "int32 or int64";
    auto value = dyn_cast<FloatAttr>(entry.getValue());
    if (!value || !(value.getValueAsDouble() > 0))
      return emitError() << "device kind '" << name << "' peak FLOP/s for '"
                         << entry.getName().getValue()
                         << "' must be a positive float";
  }
  if (efficiency) {
    for (NamedAttribute entry : efficiency) {
      cluster::OpClass cls;
      if (!cluster::parseOpClass(entry.getName().getValue(), cls))
        return emitError() << "device kind '" << name
                           << "' gives an efficiency for unknown op class '"
                           << entry.getName().getValue()
                           << "'; use matmul, conv, elementwise, norm, "
                              "softmax, embedding, reduction, data_movement, "
                              "loss or other";
      auto value = dyn_cast<FloatAttr>(entry.getValue());
      double v = value ? value.getValueAsDouble() : -1;
      if (!(v > 0 && v <= 1))
        return emitError() << "device kind '" << name << "' efficiency of '"
                           << entry.getName().getValue()
                           << "' must be a float in (0, 1]";
    }
  }
  double memEff = memoryEfficiency.convertToDouble();
  if (!(memEff > 0 && memEff <= 1))
    return emitError() << "device kind '" << name
                       << "' memory_efficiency must be in (0, 1]";
  if (!(launchOverhead.convertToDouble() >= 0) ||
      !(halfEfficiencyFlops.convertToDouble() >= 0))
    return emitError() << "device kind '" << name
                       << "' launch_overhead and half_efficiency_flops "
                          "cannot be negative";
  double fp8 = fp8MatmulEfficiency.convertToDouble();
  if (!(fp8 >= 0 && fp8 <= 1))
    return emitError() << "device kind '" << name
                       << "' fp8_matmul_efficiency must be in [0, 1] (0: "
                          "the matmul efficiency)";
  return success();
}

LogicalResult LinkAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               StringRef name, APFloat bandwidthF,
                               APFloat latencyF, APFloat efficiencyF) {
  double bandwidth = bandwidthF.convertToDouble();
  double latency = latencyF.convertToDouble();
  double efficiency = efficiencyF.convertToDouble();
  if (!(bandwidth > 0))
    return emitError() << "link '" << name << "' needs a positive bandwidth";
  if (!(latency >= 0))
    return emitError() << "link '" << name
                       << "' cannot have a negative latency";
  if (!(efficiency > 0 && efficiency <= 2))
    return emitError() << "link '" << name
                       << "' collective_efficiency must be in (0, 2]";
  return success();
}

/// The entries of a node group's `tiers`: the YAML's tiers in bytes and
/// bytes/s, with the YAML's physical ranges (capacity_GB up to 1e9,
/// bandwidths up to 1e8 GB/s).
static const struct TierKey {
  const char *name;
  cluster::Tier tier;
  enum { Capacity, Bandwidth, MemoryBandwidth } what;
  double max;
} kTierKeys[] = {
    {"host_capacity", cluster::Tier::Host, TierKey::Capacity, 1e18},
    {"host_bandwidth", cluster::Tier::Host, TierKey::Bandwidth, 1e17},
    {"host_memory_bandwidth", cluster::Tier::Host, TierKey::MemoryBandwidth,
     1e17},
    {"nvme_capacity", cluster::Tier::NVMe, TierKey::Capacity, 1e18},
    {"nvme_bandwidth", cluster::Tier::NVMe, TierKey::Bandwidth, 1e17},
    {"hdd_capacity", cluster::Tier::HDD, TierKey::Capacity, 1e18},
    {"hdd_bandwidth", cluster::Tier::HDD, TierKey::Bandwidth, 1e17},
};

LogicalResult
NodeGroupAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                      StringRef kind, int64_t nodes, int64_t devices,
                      LinkAttr link, DictionaryAttr tiers, int64_t nics) {
  if (nodes < 1)
    return emitError() << "node group of '" << kind
                       << "' needs at least one node, got " << nodes;
  if (devices < 1)
    return emitError() << "node group of '" << kind
                       << "' needs at least one device per node, got "
                       << devices;
  if (!link)
    return emitError() << "node group of '" << kind
                       << "' needs the link inside its nodes";
  if (nics < 0 || (nics > 0 && devices % nics))
    return emitError() << "node group of '" << kind << "' has nics = " << nics
                       << " for " << devices
                       << " devices per node; give a number of NICs that "
                          "divides devices (or none: one per device)";
  if (!tiers)
    return success();
  for (NamedAttribute entry : tiers) {
    const TierKey *key = llvm::find_if(kTierKeys, [&](const TierKey &k) {
      return entry.getName().getValue() == k.name;
    });
    if (key == std::end(kTierKeys))
      return emitError() << "node group of '" << kind << "' tiers has unknown "
                         << "entry '" << entry.getName().getValue()
                         << "'; use host_capacity, host_bandwidth, "
                            "host_memory_bandwidth, nvme_capacity, "
                            "nvme_bandwidth, hdd_capacity or hdd_bandwidth";
    auto value = dyn_cast<FloatAttr>(entry.getValue());
    double v = value ? value.getValueAsDouble() : -1;
    if (!(v > 0 && v <= key->max))
      return emitError() << "node group of '" << kind << "' tiers entry '"
                         << key->name << "' must be a float in (0, " << key->max
                         << "], got " << entry.getValue();
  }
  // Each tier comes whole: capacity with bandwidth, host with its DRAM.
  for (const char *tier : {"host", "nvme", "hdd"}) {
    std::string c = std::string(tier) + "_capacity",
                b = std::string(tier) + "_bandwidth";
    bool hasC = static_cast<bool>(tiers.get(c)),
         hasB = static_cast<bool>(tiers.get(b));
    bool hasM = std::string(tier) == "host"
                    ? static_cast<bool>(tiers.get("host_memory_bandwidth"))
                    : hasC;
    if (hasC != hasB || hasC != hasM)
      return emitError() << "node group of '" << kind << "' tiers gives "
                         << "part of tier '" << tier << "'; give "
                         << (std::string(tier) == "host"
                                 ? "host_capacity, host_bandwidth and "
                                   "host_memory_bandwidth"
                                 : c + " and " + b)
                         << " together";
  }
  return success();
}

LogicalResult
ClusterAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                    StringRef name, ArrayRef<DeviceKindAttr> kinds,
                    ArrayRef<NodeGroupAttr> nodes, LinkAttr network,
                    StringRef description, StringRef profile,
                    DictionaryAttr availability, int64_t nodesPerRack,
                    APFloat rackOversubscription, DictionaryAttr input) {
  llvm::StringSet<> kindNames;
  for (DeviceKindAttr kind : kinds)
    if (!kindNames.insert(kind.getName()).second)
      return emitError() << "cluster '" << name << "' names device kind '"
                         << kind.getName() << "' twice";
  if (nodes.empty())
    return emitError() << "cluster '" << name << "' has no devices";
  int64_t numNodes = 0;
  for (NodeGroupAttr group : nodes) {
    if (!kindNames.contains(group.getKind()))
      return emitError() << "cluster '" << name << "' node group uses "
                         << "unknown device kind '" << group.getKind() << "'";
    numNodes += group.getNodes();
  }
  if (numNodes > 1 && !network)
    return emitError() << "cluster '" << name << "' has " << numNodes
                       << " nodes but no network joining them";
  if (nodesPerRack < 0 || !(rackOversubscription.convertToDouble() >= 1))
    return emitError() << "cluster '" << name
                       << "' needs nodes_per_rack >= 0 and "
                          "rack_oversubscription >= 1, got "
                       << nodesPerRack << " and "
                       << rackOversubscription.convertToDouble();
  if (availability) {
    static const char *const keys[] = {
        "preemptions_per_node_hour", "replacement_s",
        "on_demand_usd_per_node_hour", "preemptible_usd_per_node_hour",
        "checkpoint_GBps"};
    for (const char *key : keys) {
      auto value = dyn_cast_or_null<FloatAttr>(availability.get(key));
      if (!value || !(value.getValueAsDouble() >= 0))
        return emitError() << "cluster '" << name << "' availability needs '"
                           << key << "' as a float >= 0";
    }
    // relaunch_s is optional (absent: not given; the planner then takes
    // the one dist-run recorded, or 0).
    Attribute relaunch = availability.get("relaunch_s");
    if (relaunch && !(isa<FloatAttr>(relaunch) &&
                      cast<FloatAttr>(relaunch).getValueAsDouble() >= 0))
      return emitError() << "cluster '" << name
                         << "' availability needs 'relaunch_s', where "
                            "given, as a float >= 0";
    if (availability.size() != std::size(keys) + (relaunch ? 1 : 0))
      return emitError() << "cluster '" << name
                         << "' availability has an unknown entry; it holds "
                            "exactly preemptions_per_node_hour, "
                            "replacement_s, on_demand_usd_per_node_hour, "
                            "preemptible_usd_per_node_hour and "
                            "checkpoint_GBps, and optionally relaunch_s";
  }
  if (input) {
    static const char *const keys[] = {"storage_read_GBps", "page_cache_GB",
                                       "cpu_cores_per_device"};
    for (const char *key : keys) {
      auto value = dyn_cast_or_null<FloatAttr>(input.get(key));
      std::optional<cluster::FieldRange> range = cluster::physicalRange(key);
      double v = value ? value.getValueAsDouble() : -1;
      if (!value || !(v >= range->min && v <= range->max))
        return emitError() << "cluster '" << name << "' input needs '" << key
                           << "' as a float in ["
                           << cluster::formatNumber(range->min) << ", "
                           << cluster::formatNumber(range->max) << "]";
    }
    if (input.size() != std::size(keys))
      return emitError() << "cluster '" << name
                         << "' input has an unknown entry; it holds exactly "
                            "storage_read_GBps, page_cache_GB and "
                            "cpu_cores_per_device";
  }
  return success();
}

int64_t ClusterAttr::getNumDevices() const {
  int64_t total = 0;
  for (NodeGroupAttr group : getNodes())
    total += group.getNodes() * group.getDevices();
  return total;
}

DeviceKindAttr ClusterAttr::getKindOf(int64_t id) const {
  int64_t first = 0;
  for (NodeGroupAttr group : getNodes()) {
    int64_t count = group.getNodes() * group.getDevices();
    if (id >= first && id < first + count) {
      for (DeviceKindAttr kind : getKinds())
        if (kind.getName() == group.getKind())
          return kind;
      return {};
    }
    first += count;
  }
  return {};
}

static LinkAttr linkAttr(MLIRContext *ctx, const cluster::LinkSpec &l) {
  return LinkAttr::get(ctx, l.name, APFloat(l.bandwidth), APFloat(l.latency),
                       APFloat(l.collectiveEfficiency));
}

static cluster::LinkSpec linkSpec(LinkAttr l) {
  cluster::LinkSpec spec;
  spec.name = l.getName().str();
  spec.bandwidth = l.getBandwidth().convertToDouble();
  spec.latency = l.getLatency().convertToDouble();
  spec.collectiveEfficiency = l.getCollectiveEfficiency().convertToDouble();
  return spec;
}

ClusterAttr ClusterAttr::get(MLIRContext *ctx, const cluster::Cluster &c,
                             StringRef profile) {
  Builder b(ctx);
  SmallVector<DeviceKindAttr> kinds;
  for (const cluster::DeviceSpec &dev : c.devices) {
    SmallVector<NamedAttribute> flops, efficiency;
    for (unsigned t = 0; t < cluster::kNumDTypes; ++t)
      if (dev.peakFlops[t] > 0)
        flops.push_back(b.getNamedAttr(
            cluster::dtypeName(static_cast<cluster::DType>(t)),
            b.getF64FloatAttr(dev.peakFlops[t])));
    for (unsigned k = 0; k < cluster::kNumOpClasses; ++k)
      if (dev.efficiency[k] > 0)
        efficiency.push_back(b.getNamedAttr(
            cluster::opClassName(static_cast<cluster::OpClass>(k)),
            b.getF64FloatAttr(dev.efficiency[k])));
    kinds.push_back(DeviceKindAttr::get(
        ctx, dev.name, static_cast<int64_t>(dev.memoryBytes),
        APFloat(dev.memoryBandwidth), b.getDictionaryAttr(flops),
        efficiency.empty() ? DictionaryAttr() : b.getDictionaryAttr(efficiency),
        APFloat(dev.memoryEfficiency), APFloat(dev.launchOverhead),
        APFloat(dev.halfEfficiencyFlops), APFloat(dev.fp8MatmulEfficiency)));
  }
  SmallVector<NodeGroupAttr> nodes;
  for (const cluster::NodeGroup &g : c.groups) {
    SmallVector<NamedAttribute> tiers;
    for (const TierKey &k : kTierKeys) {
      const cluster::StorageTier &t = g.tiers[k.tier];
      if (!t.present())
        continue;
      double v = k.what == TierKey::Capacity    ? t.capacity
                 : k.what == TierKey::Bandwidth ? t.bandwidth
                                                : g.tiers.hostMemoryBandwidth;
      tiers.push_back(b.getNamedAttr(k.name, b.getF64FloatAttr(v)));
    }
    nodes.push_back(NodeGroupAttr::get(
        ctx, c.devices[g.deviceIndex].name, g.nodes, g.devicesPerNode,
        linkAttr(ctx, g.intraNode),
        tiers.empty() ? DictionaryAttr() : b.getDictionaryAttr(tiers), g.nics));
  }
  LinkAttr network =
      c.network.bandwidth > 0 ? linkAttr(ctx, c.network) : LinkAttr();
  DictionaryAttr availability;
  if (const std::optional<cluster::Availability> &a = c.availability) {
    SmallVector<NamedAttribute> entries{
        b.getNamedAttr("preemptions_per_node_hour",
                       b.getF64FloatAttr(a->preemptionsPerNodeHour)),
        b.getNamedAttr("replacement_s",
                       b.getF64FloatAttr(a->replacementSeconds)),
        b.getNamedAttr("on_demand_usd_per_node_hour",
                       b.getF64FloatAttr(a->onDemandPrice)),
        b.getNamedAttr("preemptible_usd_per_node_hour",
                       b.getF64FloatAttr(a->preemptiblePrice)),
        b.getNamedAttr("checkpoint_GBps",
                       b.getF64FloatAttr(a->checkpointBandwidth / 1e9))};
    if (a->relaunchSeconds)
      entries.push_back(
          b.getNamedAttr("relaunch_s", b.getF64FloatAttr(*a->relaunchSeconds)));
    availability = b.getDictionaryAttr(entries);
  }
  DictionaryAttr input;
  if (const std::optional<cluster::InputSide> &in = c.input)
    input = b.getDictionaryAttr(
        {b.getNamedAttr("storage_read_GBps",
                        b.getF64FloatAttr(in->storageBandwidth / 1e9)),
         b.getNamedAttr("page_cache_GB",
                        b.getF64FloatAttr(in->pageCacheBytes / 1e9)),
         b.getNamedAttr("cpu_cores_per_device",
                        b.getF64FloatAttr(in->cpuCoresPerDevice))});
  return ClusterAttr::get(ctx, c.name, kinds, nodes, network, c.description,
                          profile, availability, c.nodesPerRack,
                          APFloat(c.rackOversubscription), input);
}

cluster::Cluster ClusterAttr::toCluster() const {
  cluster::Cluster c;
  c.name = getName().str();
  c.description = getDescription().str();
  for (DeviceKindAttr kind : getKinds()) {
    cluster::DeviceSpec dev;
    dev.name = kind.getName().str();
    dev.efficiency = cluster::defaultEfficiencies();
    dev.memoryBytes = static_cast<double>(kind.getMemory());
    dev.memoryBandwidth = kind.getBandwidth().convertToDouble();
    for (NamedAttribute entry : kind.getFlops()) {
      cluster::DType t;
      if (cluster::parseDType(entry.getName().getValue(), t))
        dev.peakFlops[static_cast<unsigned>(t)] =
            cast<FloatAttr>(entry.getValue()).getValueAsDouble();
    }
    if (DictionaryAttr efficiency = kind.getEfficiency())
      for (NamedAttribute entry : efficiency) {
        cluster::OpClass cls;
        if (cluster::parseOpClass(entry.getName().getValue(), cls))
          dev.efficiency[static_cast<unsigned>(cls)] =
              cast<FloatAttr>(entry.getValue()).getValueAsDouble();
      }
    dev.memoryEfficiency = kind.getMemoryEfficiency().convertToDouble();
    dev.launchOverhead = kind.getLaunchOverhead().convertToDouble();
    dev.halfEfficiencyFlops = kind.getHalfEfficiencyFlops().convertToDouble();
    dev.fp8MatmulEfficiency = kind.getFp8MatmulEfficiency().convertToDouble();
    c.devices.push_back(std::move(dev));
  }
  for (NodeGroupAttr group : getNodes()) {
    cluster::NodeGroup g;
    for (auto [i, kind] : llvm::enumerate(getKinds()))
      if (kind.getName() == group.getKind())
        g.deviceIndex = i;
    g.nodes = group.getNodes();
    g.devicesPerNode = group.getDevices();
    g.intraNode = linkSpec(group.getLink());
    g.nics = group.getNics();
    if (DictionaryAttr tiers = group.getTiers())
      for (const TierKey &k : kTierKeys) // the verifier checked the entries
        if (auto v = dyn_cast_or_null<FloatAttr>(tiers.get(k.name)))
          (k.what == TierKey::Capacity    ? g.tiers[k.tier].capacity
           : k.what == TierKey::Bandwidth ? g.tiers[k.tier].bandwidth
                                          : g.tiers.hostMemoryBandwidth) =
              v.getValueAsDouble();
    c.groups.push_back(std::move(g));
  }
  if (LinkAttr network = getNetwork())
    c.network = linkSpec(network);
  c.nodesPerRack = static_cast<unsigned>(getNodesPerRack());
  c.rackOversubscription = getRackOversubscription().convertToDouble();
  if (DictionaryAttr availability = getAvailability()) {
    // The verifier checked that every entry is there and a float.
    auto get = [&](StringRef key) {
      return cast<FloatAttr>(availability.get(key)).getValueAsDouble();
    };
    cluster::Availability a;
    a.preemptionsPerNodeHour = get("preemptions_per_node_hour");
    a.replacementSeconds = get("replacement_s");
    a.onDemandPrice = get("on_demand_usd_per_node_hour");
    a.preemptiblePrice = get("preemptible_usd_per_node_hour");
    a.checkpointBandwidth = get("checkpoint_GBps") * 1e9;
    if (availability.get("relaunch_s"))
      a.relaunchSeconds = get("relaunch_s");
    c.availability = a;
  }
  if (DictionaryAttr input = getInput()) {
    // The verifier checked that every entry is there and a float.
    auto get = [&](StringRef key) {
      return cast<FloatAttr>(input.get(key)).getValueAsDouble();
    };
    c.input = cluster::InputSide{get("storage_read_GBps") * 1e9,
                                 get("page_cache_GB") * 1e9,
                                 get("cpu_cores_per_device")};
  }
  return c;
}

//===----------------------------------------------------------------------===//
// Mesh
//===----------------------------------------------------------------------===//

LogicalResult MeshAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               ArrayRef<int64_t> shape,
                               ArrayRef<int64_t> devices) {
  if (shape.empty())
    return emitError() << "mesh needs at least one axis";
  int64_t size = 1;
  for (int64_t dim : shape) {
    if (dim < 1)
      return emitError() << "mesh axes must have at least one device, got "
                         << dim;
    std::optional<int64_t> next = llvm::checkedMul(size, dim);
    if (!next)
      return emitError() << "mesh of shape with more positions than int64 "
                            "holds";
    size = *next;
  }
  if (size != static_cast<int64_t>(devices.size()))
    return emitError() << "mesh of shape with " << size
                       << " positions lists " << devices.size() << " devices";
  llvm::DenseSet<int64_t> seen;
  for (int64_t device : devices) {
    if (device < 0)
      return emitError() << "mesh device numbers must be non-negative, got "
                         << device;
    if (!seen.insert(device).second)
      return emitError() << "mesh lists device " << device << " twice";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Plan
//===----------------------------------------------------------------------===//

LogicalResult PlanAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, int64_t dp, int64_t tp,
    int64_t pp, int64_t mbs, int64_t microbatches, int64_t globalBatch,
    schedule::ScheduleKind kind, int64_t chunks, int64_t cp, int64_t ep,
    bool sp, bool tpOverlap, APFloat expertImbalance, int64_t pipemareWarmup,
    APFloat pipemareDecay, cost::Recompute recompute, int64_t zero,
    ArrayRef<int64_t> stages, ArrayRef<int64_t> replicas, schedule::Mode mode,
    schedule::InferObjective objective, cluster::DType dtype,
    bool fusedAttention, cost::Optimizer optimizer, bool scatterGather,
    bool overlapP2P, bool overlapGradSync, bool unevenBatch,
    bool overlapParamGather, cost::Offload offload) {
  // Degrees stay within what the cost core and the runtime count in 32 bits.
  constexpr int64_t kMax = 1 << 24;
  for (auto [name, value] :
       {std::pair<const char *, int64_t>{"dp", dp}, {"tp", tp}, {"pp", pp},
        {"mbs", mbs}, {"microbatches", microbatches},
        {"global_batch", globalBatch}, {"chunks", chunks}, {"cp", cp},
        {"ep", ep}})
    if (value < 1 || value > kMax)
      return emitError() << "plan " << name << " must be in [1, " << kMax
                         << "], got " << value;
  if (zero < 0 || zero > 3)
    return emitError() << "plan zero must be a ZeRO stage 0-3, got " << zero;
  if (offload.any() && mode != schedule::Mode::Train)
    return emitError() << "plan offloads \"" << offload.str()
                       << "\" in an inference plan; offload moves training "
                          "state off the device, drop it";
  if (schedule::isVShape(kind) && chunks != 2)
    return emitError() << "plan has chunks = " << chunks << " with schedule \""
                       << schedule::scheduleName(kind)
                       << "\"; a V-shaped schedule runs two chunks per stage";
  if (!schedule::isVShape(kind) && chunks > 1 &&
      kind != schedule::ScheduleKind::Interleaved)
    return emitError() << "plan has chunks = " << chunks << " with schedule \""
                       << schedule::scheduleName(kind)
                       << "\"; only \"interleaved\" (and the V-shaped "
                          "schedules, with 2) runs several chunks per stage";
  if (dp % ep != 0)
    return emitError() << "plan ep = " << ep << " must divide dp = " << dp
                       << " (the expert-parallel group is ep of the dp "
                          "replicas)";
  double imbalance = expertImbalance.convertToDouble();
  if (!(imbalance >= 1) || imbalance > 1000)
    return emitError() << "plan expert_imbalance must be in [1, 1000] (the "
                          "busiest expert rank's tokens over the mean), got "
                       << imbalance;
  double decay = pipemareDecay.convertToDouble();
  if (pipemareWarmup < 0 || pipemareWarmup > kMax || !(decay >= 0) || decay > 1)
    return emitError() << "plan pipemare_warmup must be in [0, " << kMax
                       << "] and pipemare_decay in [0, 1], got "
                       << pipemareWarmup << " and " << decay;
  if (static_cast<int64_t>(stages.size()) != pp * chunks)
    return emitError() << "plan stages must list the first layer of each of "
                          "the pp * chunks = "
                       << pp * chunks << " virtual stages, got "
                       << stages.size();
  for (size_t i = 0; i < stages.size(); ++i)
    if (i == 0 ? stages[i] != 0 : stages[i] < stages[i - 1])
      return emitError() << "plan stages must start at layer 0 and not "
                            "decrease, got ["
                         << llvm::make_range(stages.begin(), stages.end())
                         << "]";
  if (!replicas.empty()) {
    if (static_cast<int64_t>(replicas.size()) != pp)
      return emitError() << "plan replicas must give one count per pipeline "
                            "stage (pp = "
                         << pp << "), got " << replicas.size();
    if (dp != 1 || chunks != 1 || cp != 1)
      return emitError() << "plan replicas need dp = 1, chunks = 1 and cp = "
                            "1, got dp = "
                         << dp << ", chunks = " << chunks << " and cp = "
                         << cp;
    for (int64_t r : replicas)
      if (r < 1 || r > kMax)
        return emitError() << "plan replica counts must be in [1, " << kMax
                           << "], got " << r;
  }
  int64_t perIteration = mbs * microbatches;
  int64_t replicasPerIteration = replicas.empty() ? dp : 1;
  if (perIteration * replicasPerIteration != globalBatch)
    return emitError() << "plan global_batch " << globalBatch
                       << " is not mbs * microbatches"
                       << (replicas.empty() ? " * dp" : "") << " = "
                       << perIteration * replicasPerIteration;
  return success();
}

PlanAttr PlanAttr::get(MLIRContext *ctx, const schedule::Plan &p) {
  SmallVector<int64_t> stages = {0};
  for (unsigned cut : p.cuts)
    stages.push_back(cut);
  // An unpartitioned plan of one virtual stage has no cuts.
  stages.resize(std::max<size_t>(p.numVirtualStages(), 1), stages.back());
  SmallVector<int64_t> replicas(p.replicas.begin(), p.replicas.end());
  return PlanAttr::get(
      ctx, p.dp, p.tp, p.pp, p.mbs, p.numMicrobatches, p.globalBatch,
      p.schedule, p.chunks, p.cp, p.ep, p.sp, p.tpOverlap,
      APFloat(p.expertImbalance), p.pipemareWarmup, APFloat(p.pipemareDecay),
      p.recompute, p.zero, stages, replicas, p.mode, p.objective, p.dtype,
      p.fusedAttention, p.optimizer, p.scatterGather, p.overlapP2P,
      p.overlapGradSync, p.unevenBatch, p.overlapParamGather, p.offload);
}

schedule::Plan PlanAttr::toPlan() const {
  schedule::Plan p;
  p.dp = getDp();
  p.tp = getTp();
  p.pp = getPp();
  p.chunks = getChunks();
  p.cp = getCp();
  p.replicas.assign(getReplicas().begin(), getReplicas().end());
  p.mbs = getMbs();
  p.setSchedule(getSchedule());
  p.ep = getEp();
  p.sp = getSp();
  p.tpOverlap = getTpOverlap();
  p.expertImbalance = getExpertImbalance().convertToDouble();
  p.pipemareWarmup = static_cast<unsigned>(getPipemareWarmup());
  p.pipemareDecay = getPipemareDecay().convertToDouble();
  p.recompute = getRecompute();
  p.zero = getZero();
  p.scatterGather = getScatterGather();
  p.overlapP2P = getOverlapP2p();
  p.overlapGradSync = getOverlapGradSync();
  p.unevenBatch = getUnevenBatch();
  p.overlapParamGather = getOverlapParamGather();
  p.offload = getOffload();
  p.cuts.assign(getStages().begin() + 1, getStages().end());
  p.globalBatch = getGlobalBatch();
  p.numMicrobatches = getMicrobatches();
  p.mode = getMode();
  p.objective = getObjective();
  p.dtype = getDtype();
  p.fusedAttention = getFusedAttention();
  p.optimizer = getOptimizer();
  return p;
}

schedule::RankLayout PlanAttr::getLayout() const {
  return static_cast<schedule::RankLayout>(toPlan());
}

int64_t PlanAttr::getNumDevices() const {
  return static_cast<int64_t>(getLayout().numDevices());
}

MeshAttr PlanAttr::getStageMesh(int64_t v) const {
  schedule::RankLayout layout = getLayout();
  unsigned s = layout.pipelineStage(v);
  SmallVector<int64_t> shape = {layout.replicasOf(s), layout.tp};
  if (layout.cp > 1)
    shape.insert(shape.begin() + 1, layout.cp);
  std::vector<unsigned> ids = layout.stageDevices(s);
  SmallVector<int64_t> devices(ids.begin(), ids.end());
  return MeshAttr::get(getContext(), shape, devices);
}
