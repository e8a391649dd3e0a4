//===- InputPipeline.h - Data stalls: fetch and preprocessing ---*- C++ -*-===//
//
// The input pipeline as a producer the training iteration waits on
// (docs/cost-model.md, "Data stalls"). Each node fetches the samples its
// devices consume from the dataset's storage, or from its page cache for
// the cached fraction of the dataset, and preprocesses them on its CPU
// cores; the devices consume them. With prefetching (a buffer of at least
// one iteration, as data loaders keep) the two sides run concurrently, so
// in the steady state an iteration takes the longest of the devices'
// time, the slowest node's fetch and the slowest node's preprocessing.
// The stall is split as DS-Analyzer (Mohan et al., VLDB 2021) splits it:
// the preprocessing stall is what preprocessing adds over the devices'
// time with every sample cached; the fetch stall is what fetching adds on
// top of that.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_LIB_SIM_INPUTPIPELINE_H
#define DISTOPT_LIB_SIM_INPUTPIPELINE_H

#include "lib/Cluster/Cluster.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <string>
#include <vector>

namespace distopt::sim {

/// What one training sample of the model costs the input pipeline: given by
/// `--dist-input=bytes=SIZE,preprocess=TIME,dataset=COUNT`.
struct InputSpec {
  /// Bytes of one sample as stored (an encoded JPEG: ~110 KB for ImageNet).
  double bytesPerSample = 0;
  /// CPU seconds to decode and augment one sample on one core.
  double preprocessSeconds = 0;
  /// Samples in the dataset (with bytesPerSample: the dataset's size, which
  /// sets the page cache's hit rate).
  double datasetSamples = 0;
};

/// Parses "bytes=110KiB,preprocess=4.2ms,dataset=1.28M": sizes in B, KB,
/// KiB, MB, MiB, GB, GiB; times in s, ms, us; counts plain or with K, M, G
/// (10^3, 10^6, 10^9). Every key is needed; errors name the key and the
/// form it takes (callers prefix the option's spelling).
llvm::Expected<InputSpec> parseInputSpec(llvm::StringRef text);
/// The spec in the form parseInputSpec reads.
std::string formatInputSpec(const InputSpec &spec);

/// The input pipeline of one iteration, per node and overall.
struct InputStall {
  /// What it was computed from: the cluster's input side and the model's
  /// input per sample.
  cluster::InputSide side;
  InputSpec spec;
  /// Device time of the iteration (the simulated iteration without input).
  double deviceTime = 0;
  /// Slowest node's fetch and preprocessing time per iteration, seconds,
  /// and the node each is on.
  double fetchTime = 0, preprocessTime = 0;
  unsigned fetchNode = 0, preprocessNode = 0;
  /// What the iteration waits for on top of deviceTime: preprocessing
  /// (with every sample cached) and fetching beyond that.
  double preprocessStall = 0, fetchStall = 0;
  /// Fraction of the dataset each node's page cache holds (its hit rate).
  double cacheHitRate = 0;
  /// Nodes that read input (those of the plan's first pipeline stage) and
  /// the most samples one of them reads per iteration.
  unsigned readerNodes = 0;
  double maxNodeSamples = 0;
  /// Remedies: CPU cores per device at which preprocessing keeps pace with
  /// the devices; page cache per node (bytes) and storage bandwidth per node
  /// (bytes/s) at which fetching does. Zero where that side does not stall.
  double coresPerDeviceNeeded = 0, cacheBytesNeeded = 0,
         storageBandwidthNeeded = 0;
  /// The iteration as the devices wait for their input.
  double iterationTime() const {
    return deviceTime + preprocessStall + fetchStall;
  }
  double stall() const { return preprocessStall + fetchStall; }
  bool stalled() const { return stall() > 0; }
  /// "preprocessing", "fetch" or "none": the larger part of the stall.
  llvm::StringRef bound() const;
};

/// The input pipeline of an iteration of \p deviceTime seconds in which
/// \p nodeSamples[n] samples enter through node n (zero for nodes without
/// first-stage devices) of \p cluster, whose input side \p side and
/// \p devicesPerNode[n] devices give each node its cores and storage.
InputStall inputStall(const cluster::InputSide &side, const InputSpec &spec,
                      double deviceTime, const std::vector<double> &nodeSamples,
                      const std::vector<unsigned> &devicesPerNode);

/// Samples per iteration entering through each node of \p cluster when
/// \p globalBatch samples split evenly over \p readers (global ranks of the
/// devices that consume input: the first pipeline stage's).
std::vector<double> samplesPerNode(const cluster::Cluster &cluster,
                                   const std::vector<unsigned> &readers,
                                   double globalBatch);

/// Devices per node of \p cluster, node-major.
std::vector<unsigned> devicesPerNode(const cluster::Cluster &cluster);

/// The report's "data_stall" object (docs/report-format.md).
llvm::json::Value toJSON(const InputStall &s);

/// Lines for the text summary: whether the plan is data-stalled, by how
/// much (fetch against preprocessing, ms per iteration) and what would
/// remove it.
std::string describeInputStall(const InputStall &s);

} // namespace distopt::sim

#endif // DISTOPT_LIB_SIM_INPUTPIPELINE_H
