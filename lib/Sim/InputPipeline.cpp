//===- InputPipeline.cpp - Data stalls: fetch and preprocessing -*- C++ -*-===//
//
// Part of DistOpt. The closed forms of docs/cost-model.md, "Data stalls".
//
//===----------------------------------------------------------------------===//

#include "lib/Sim/InputPipeline.h"

#include "lib/Cost/CostModel.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>

using namespace llvm;

namespace distopt::sim {

/// A number followed by one of \p units (name, scale); "" accepts a bare
/// number.
static std::optional<double>
scaledNumber(StringRef text, ArrayRef<std::pair<StringRef, double>> units) {
  std::optional<std::pair<double, StringRef>> n = cost::splitNumber(text);
  if (!n)
    return std::nullopt;
  for (auto [name, scale] : units)
    if (n->second == name)
      return n->first * scale;
  return std::nullopt;
}

Expected<InputSpec> parseInputSpec(StringRef text) {
  auto fail = [&](const Twine &msg) {
    return createStringError(inconvertibleErrorCode(), msg);
  };
  InputSpec spec;
  SmallVector<StringRef> items;
  text.split(items, ',', -1, /*KeepEmpty=*/false);
  StringSet<> seen;
  for (StringRef item : items) {
    auto [key, value] = item.split('=');
    key = key.trim();
    value = value.trim();
    if (!seen.insert(key).second)
      return fail("'" + key + "' is given twice");
    if (key == "bytes") {
      Expected<double> b = cost::parseByteSize(value);
      if (!b)
        return fail("bytes='" + value + "': " + toString(b.takeError()) +
                    " (bytes of one stored sample, e.g. bytes=110KiB)");
      spec.bytesPerSample = *b;
    } else if (key == "preprocess") {
      std::optional<double> s =
          scaledNumber(value, {{"s", 1}, {"ms", 1e-3}, {"us", 1e-6}});
      if (!s || *s < 0 || *s > 3600)
        return fail("preprocess='" + value +
                    "': expected the CPU time of one sample on one core, "
                    "from 0 to 1 hour, with a unit: s, ms or us (e.g. "
                    "preprocess=4.2ms)");
      spec.preprocessSeconds = *s;
    } else if (key == "dataset") {
      std::optional<double> n =
          scaledNumber(value, {{"", 1}, {"K", 1e3}, {"M", 1e6}, {"G", 1e9}});
      if (!n || !(*n >= 1) || *n > 1e15)
        return fail("dataset='" + value +
                    "': expected the samples in the dataset, at least 1, "
                    "plain or with K, M or G (e.g. dataset=1.28M)");
      spec.datasetSamples = *n;
    } else {
      return fail("unknown key '" + key +
                  "'; expected bytes=SIZE,preprocess=TIME,dataset=COUNT");
    }
  }
  for (StringRef key : {"bytes", "preprocess", "dataset"})
    if (!seen.contains(key))
      return fail("'" + key +
                  "' is missing; give bytes=SIZE,preprocess=TIME,"
                  "dataset=COUNT, e.g. bytes=110KiB,preprocess=4.2ms,"
                  "dataset=1.28M");
  return spec;
}

std::string formatInputSpec(const InputSpec &spec) {
  return formatv("bytes={0}B,preprocess={1}us,dataset={2}",
                 cluster::formatNumber(spec.bytesPerSample),
                 cluster::formatNumber(spec.preprocessSeconds * 1e6),
                 cluster::formatNumber(spec.datasetSamples))
      .str();
}

StringRef InputStall::bound() const {
  if (!stalled())
    return "none";
  return fetchStall > preprocessStall ? "fetch" : "preprocessing";
}

InputStall inputStall(const cluster::InputSide &side, const InputSpec &spec,
                      double deviceTime, const std::vector<double> &nodeSamples,
                      const std::vector<unsigned> &devicesPerNode) {
  InputStall s;
  s.side = side;
  s.spec = spec;
  s.deviceTime = deviceTime;
  double datasetBytes = spec.datasetSamples * spec.bytesPerSample;
  s.cacheHitRate =
      datasetBytes > 0 ? std::min(1.0, side.pageCacheBytes / datasetBytes) : 1;
  // The node that is slowest to preprocess its samples need not be the one
  // that reads the most (nodes of different sizes): both maxima are kept,
  // and so are the largest per-device load and per-node read they need.
  double maxPerDevice = 0;
  for (unsigned n = 0; n < nodeSamples.size(); ++n) {
    double samples = nodeSamples[n];
    if (samples <= 0)
      continue;
    ++s.readerNodes;
    s.maxNodeSamples = std::max(s.maxNodeSamples, samples);
    double perDevice = samples / devicesPerNode[n];
    maxPerDevice = std::max(maxPerDevice, perDevice);
    double prep = perDevice * spec.preprocessSeconds / side.cpuCoresPerDevice;
    double fetch = (1 - s.cacheHitRate) * samples * spec.bytesPerSample /
                   side.storageBandwidth;
    if (prep > s.preprocessTime) {
      s.preprocessTime = prep;
      s.preprocessNode = n;
    }
    if (fetch > s.fetchTime) {
      s.fetchTime = fetch;
      s.fetchNode = n;
    }
  }
  s.preprocessStall = std::max(0.0, s.preprocessTime - deviceTime);
  s.fetchStall =
      std::max(0.0, s.fetchTime - std::max(s.preprocessTime, deviceTime));
  if (deviceTime > 0) {
    if (s.preprocessTime > deviceTime)
      s.coresPerDeviceNeeded =
          maxPerDevice * spec.preprocessSeconds / deviceTime;
    if (s.fetchTime > deviceTime) {
      double readBytes = s.maxNodeSamples * spec.bytesPerSample;
      // Misses may move at most deviceTime * bandwidth bytes.
      double hitNeeded =
          std::max(0.0, 1 - deviceTime * side.storageBandwidth / readBytes);
      s.cacheBytesNeeded = hitNeeded * datasetBytes;
      s.storageBandwidthNeeded = (1 - s.cacheHitRate) * readBytes / deviceTime;
    }
  }
  return s;
}

std::vector<unsigned> devicesPerNode(const cluster::Cluster &cluster) {
  std::vector<unsigned> out;
  for (const cluster::NodeGroup &g : cluster.groups)
    out.insert(out.end(), g.nodes, g.devicesPerNode);
  return out;
}

std::vector<double> samplesPerNode(const cluster::Cluster &cluster,
                                   const std::vector<unsigned> &readers,
                                   double globalBatch) {
  std::vector<double> out(cluster.numNodes(), 0);
  if (readers.empty())
    return out;
  double each = globalBatch / readers.size();
  for (unsigned rank : readers)
    out[cluster.nodeOf(rank)] += each;
  return out;
}

json::Value toJSON(const InputStall &s) {
  return json::Object{
      {"stalled", s.stalled()},
      {"bound", s.bound()},
      {"device_time_s", s.deviceTime},
      {"preprocess_time_s", s.preprocessTime},
      {"fetch_time_s", s.fetchTime},
      {"preprocess_stall_s", s.preprocessStall},
      {"fetch_stall_s", s.fetchStall},
      {"stall_s", s.stall()},
      {"cache_hit_rate", s.cacheHitRate},
      {"reader_nodes", int64_t(s.readerNodes)},
      {"max_node_samples", s.maxNodeSamples},
      {"input",
       json::Object{{"bytes_per_sample", s.spec.bytesPerSample},
                    {"preprocess_s_per_sample", s.spec.preprocessSeconds},
                    {"dataset_samples", s.spec.datasetSamples}}},
      {"cluster",
       json::Object{{"storage_read_GBps", s.side.storageBandwidth / 1e9},
                    {"page_cache_GB", s.side.pageCacheBytes / 1e9},
                    {"cpu_cores_per_device", s.side.cpuCoresPerDevice}}},
      {"remedy",
       json::Object{{"cpu_cores_per_device", s.coresPerDeviceNeeded},
                    {"page_cache_GB", s.cacheBytesNeeded / 1e9},
                    {"storage_read_GBps", s.storageBandwidthNeeded / 1e9}}}};
}

static std::string ms(double seconds) {
  return formatv("{0:F1} ms", seconds * 1e3).str();
}

std::string describeInputStall(const InputStall &s) {
  const cluster::InputSide &side = s.side;
  std::string out;
  raw_string_ostream os(out);
  os << formatv("  input:       {0} per iteration on the devices; "
                "preprocessing {1}, fetch {2} (slowest node; page cache holds "
                "{3:F0}% of the {4:F1} GB dataset)\n",
                ms(s.deviceTime), ms(s.preprocessTime), ms(s.fetchTime),
                s.cacheHitRate * 100,
                s.spec.datasetSamples * s.spec.bytesPerSample / 1e9);
  if (!s.stalled()) {
    os << "  data stall:  none (the input pipeline keeps pace)\n";
    return out;
  }
  os << formatv("  data stall:  {0} per iteration ({1:F0}% of it): "
                "preprocessing {2}, fetch {3}\n",
                ms(s.stall()), 100 * s.stall() / s.iterationTime(),
                ms(s.preprocessStall), ms(s.fetchStall));
  if (s.coresPerDeviceNeeded > 0)
    os << formatv("  to remove:   preprocessing needs {0:F1} CPU cores per "
                  "device (has {1})\n",
                  s.coresPerDeviceNeeded,
                  cluster::formatNumber(side.cpuCoresPerDevice));
  if (s.storageBandwidthNeeded > 0)
    os << formatv("  to remove:   fetch needs a page cache of {0:F0} GB per "
                  "node (has {1:F0} GB) or {2:F2} GB/s of storage reads "
                  "(has {3})\n",
                  s.cacheBytesNeeded / 1e9, side.pageCacheBytes / 1e9,
                  s.storageBandwidthNeeded / 1e9,
                  cluster::formatNumber(side.storageBandwidth / 1e9));
  os << "               (a larger batch does not help: the input's time "
        "grows with it)\n";
  return out;
}

} // namespace distopt::sim
