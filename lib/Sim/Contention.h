//===- Contention.h - The running plan and a migration on one set of links ===//
//
// Part of DistOpt. While the new partition is prepared beside a running
// inference plan (NEUKONFIG), the running plan's messages (pipeline
// activations, tensor-parallel collectives) and the preparation's transfers
// use the same links. Each direction of a device's link of one level is a
// port; on a port that both use, the bandwidth is shared fairly between
// the two (docs/resilience.md, "Contention"). No MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_LIB_SIM_CONTENTION_H
#define DISTOPT_LIB_SIM_CONTENTION_H

#include "lib/Cluster/Cluster.h"
#include "lib/Cost/ModelDesc.h"
#include "lib/Schedule/Plan.h"

#include "llvm/ADT/ArrayRef.h"

#include <vector>

namespace distopt::sim {

/// One transfer of a migration: \p bytes from device \p from to \p to.
struct LinkTransfer {
  unsigned from = 0, to = 0;
  double bytes = 0;
};

/// Bytes/s a transfer from device \p from to \p to gets alone: the link
/// between them, and on the network the whole NIC where a node's devices
/// share one (the network's bandwidth is a device's share of it:
/// NodeGroup::nics).
double aloneBandwidth(const cluster::Cluster &cluster, unsigned from,
                      unsigned to);

/// The busiest sender or receiver of a set of transfers: a device, or a
/// NIC its node's devices share (named by its lowest rank).
struct Busiest {
  double seconds = 0;
  unsigned device = 0;
  bool nic = false;
};

/// The busiest device's or shared NIC's sends or receives when
/// \p transfers take \p seconds each and all run at once (the preemptive
/// open-shop bound, which a schedule of the transfers reaches).
Busiest busiest(const cluster::Cluster &cluster,
                llvm::ArrayRef<LinkTransfer> transfers,
                llvm::ArrayRef<double> seconds);

/// How the running plan and the migration's transfers share the links.
struct SharedLinks {
  /// Ports (one direction of a device's intra-node link, or of the NIC
  /// its network traffic goes through) that carry both the running plan's
  /// messages and the migration's transfers.
  unsigned sharedPorts = 0;
  /// The running plan's samples/s while every shared port carries
  /// transfers (the move's start).
  double runningSamplesPerSecond = 0;
  /// Each transfer's time with the share of its ports left to it, in the
  /// order given, and the move they make up (busiest).
  std::vector<double> transferSeconds;
  Busiest move;
  /// Each port carries its transfers back to back from the start, so the
  /// plan runs slowed until the last shared port has carried its own
  /// (slowedSeconds, at most the move's time), and less slowed as ports
  /// free up: the samples it serves fewer than alone, span by span, at
  /// the rate of the ports still carrying transfers.
  double slowedSeconds = 0, samplesLost = 0;
};

/// The running inference plan \p running (finalized, with its \p costs on
/// \p cluster, delivering \p runningSamplesPerSecond) and \p transfers
/// sharing the links: on a port both use, each running message's bytes
/// take twice as long (half the bandwidth, fair share between the two),
/// which slows the stages they belong to and so the plan; each transfer
/// gets what the plan slowed by every shared port leaves of its ports,
/// never less than half.
SharedLinks shareLinks(const schedule::Plan &running,
                       const schedule::PipelineCosts &costs,
                       const cost::ModelDesc &model,
                       const cluster::Cluster &cluster,
                       double runningSamplesPerSecond,
                       llvm::ArrayRef<LinkTransfer> transfers);

} // namespace distopt::sim

#endif // DISTOPT_LIB_SIM_CONTENTION_H
