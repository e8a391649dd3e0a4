//===- ClusterAttr.cpp - Cluster model to #dist.cluster ---------*- C++ -*-===//
//
// Part of DistOpt.
//
//===----------------------------------------------------------------------===//
#include "lib/Driver/ClusterAttr.h"

#include "mlir/IR/Builders.h"
#include <numeric>

using namespace mlir;
using namespace distopt;

dist::ClusterAttr distopt::toClusterAttr(MLIRContext *context,
                                         const cluster::Cluster &c) {
  Builder b(context);
  SmallVector<dist::DeviceKindAttr> kinds;
  for (const cluster::DeviceSpec &dev : c.devices) {
    SmallVector<NamedAttribute> flops;
    for (unsigned t = 0; t < cluster::kNumDTypes; ++t)
      if (dev.peakFlops[t] > 0)
        flops.push_back(b.getNamedAttr(
            cluster::dtypeName(static_cast<cluster::DType>(t)),
            b.getF64FloatAttr(dev.peakFlops[t])));
    kinds.push_back(dist::DeviceKindAttr::get(
        context, dev.name, static_cast<int64_t>(dev.memoryBytes),
        APFloat(dev.memoryBandwidth), b.getDictionaryAttr(flops)));
  }
  SmallVector<dist::DeviceGroupAttr> groups;
  int64_t first = 0;
  unsigned perNode = 0;
  double intraBandwidth = 0, intraLatency = 0;
  for (const cluster::NodeGroup &g : c.groups) {
    int64_t count = static_cast<int64_t>(g.devicesPerNode) * g.nodes;
    groups.push_back(dist::DeviceGroupAttr::get(
        context, first, count, c.devices[g.deviceIndex].name));
    first += count;
    perNode = std::gcd(perNode, g.devicesPerNode);
    intraBandwidth = intraBandwidth == 0
                         ? g.intraNode.bandwidth
                         : std::min(intraBandwidth, g.intraNode.bandwidth);
    intraLatency = std::max(intraLatency, g.intraNode.latency);
  }
  SmallVector<dist::LinkAttr> links;
  if (perNode > 0 && intraBandwidth > 0)
    links.push_back(dist::LinkAttr::get(context, c.levelName(
                                                     cluster::LinkLevel::IntraNode),
                                        perNode, APFloat(intraBandwidth),
                                        APFloat(intraLatency)));
  if (c.network.bandwidth > 0 && first > perNode)
    links.push_back(dist::LinkAttr::get(
        context, c.levelName(cluster::LinkLevel::Network), first,
        APFloat(c.network.bandwidth), APFloat(c.network.latency)));
  return dist::ClusterAttr::get(context, c.name, kinds, groups, links);
}
