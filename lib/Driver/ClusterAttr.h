//===- ClusterAttr.h - Cluster model to #dist.cluster -----------*- C++ -*-===//
//
// Part of DistOpt.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_LIB_DRIVER_CLUSTERATTR_H
#define DISTOPT_LIB_DRIVER_CLUSTERATTR_H

#include "dialects/Dist/DistDialect.h"
#include "lib/Cluster/Cluster.h"

namespace distopt {

/// The `#dist.cluster` attribute describing `cluster`: one device kind per
/// device spec, one device group per node group, and the intra-node and
/// network link levels.
dist::ClusterAttr toClusterAttr(mlir::MLIRContext *context,
                                const cluster::Cluster &cluster);

} // namespace distopt

#endif // DISTOPT_LIB_DRIVER_CLUSTERATTR_H
