//===- Migration.h - Moving a running plan to a new one ---------*- C++ -*-===//
//
// Part of DistOpt. Re-partitioning a running job (NEUKONFIG, IC2E 2021):
// which weights move from which device to which when a running plan is
// replaced by a new one on the same devices, what the move costs on the
// cluster's links, and the service downtime of two ways to switch: pause
// the service, move, resume; or prepare the new partition beside the
// running one while it serves and switch at a batch boundary
// (docs/resilience.md, "Re-planning"). No MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_LIB_SIM_MIGRATION_H
#define DISTOPT_LIB_SIM_MIGRATION_H

#include "lib/Cluster/Cluster.h"
#include "lib/Cost/ModelDesc.h"
#include "lib/Schedule/Plan.h"
#include "lib/Sim/Contention.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>
#include <vector>

namespace distopt::sim {

/// The part of one layer a device holds under a plan: the slice
/// [begin, end) of its tensor-parallel (split) parameters, as fractions of
/// them, and all of its replicated ones (norms, biases every TP rank keeps).
struct LayerSlice {
  unsigned layer = 0;
  double begin = 0, end = 1;
};

/// What each global rank of \p plan (finalized) holds, indexed by rank: one
/// slice per layer of its stages. TP rank t of tp holds [t/tp, (t+1)/tp);
/// data-parallel and context-parallel replicas hold the same slices.
std::vector<std::vector<LayerSlice>> heldSlices(const schedule::Plan &plan,
                                                unsigned numLayers);

/// Why \p plan's state cannot be migrated slice by slice (expert
/// parallelism, ZeRO-sharded training state, offload), or empty.
std::string migrationProblem(const schedule::Plan &plan);

/// Weights (and, in training, optimizer state) sent from one device to
/// another for one virtual stage of the new plan.
struct Transfer {
  unsigned stage = 0, from = 0, to = 0;
  /// The layers (some only in part) whose slices it carries, increasing.
  std::vector<unsigned> layers;
  double bytes = 0;
  /// The link's level name and the transfer's time alone on it.
  std::string link;
  double seconds = 0;
};

/// What the new plan's virtual stage needs and where it comes from.
struct StageMigration {
  unsigned stage = 0;
  std::vector<unsigned> devices;
  unsigned layerBegin = 0, layerEnd = 0;
  /// Bytes its devices already hold (kept) and receive.
  double keptBytes = 0, receivedBytes = 0;
};

/// How the running plan is replaced.
struct MigrationInputs {
  /// The running and the new plan, finalized on the (changed) cluster.
  schedule::Plan running, next;
  /// Bytes per parameter that move: the weights (inference), or the
  /// weights and the optimizer state with its master copy (training).
  double bytesPerParam = 2;
  bool training = false;
  /// The running plan's peak memory per global rank on the cluster
  /// (shorter than the cluster: the ranks it does not use hold nothing).
  std::vector<double> runningPeakPerDevice;
  /// Per-device memory limit (0: each device's memory).
  double memoryLimit = 0;
  /// Inference: seconds for one global batch of each plan (the drain of
  /// the running pipeline and the fill of the new one).
  double runningLatency = 0, nextLatency = 0;
  /// Samples/s each plan delivers on the cluster: the running plan kept,
  /// and the new plan.
  double runningSamplesPerSecond = 0, nextSamplesPerSecond = 0;
  /// The new plan's job start (processes, communicators, program and
  /// weights loaded, its first run): paid in the downtime by a pause,
  /// hidden by preparing beside (docs/resilience.md, "The relaunch").
  cluster::RelaunchCost relaunch;
  /// Inference: the running plan's costs on the cluster, whose messages
  /// share the links with a preparation beside it (Contention.h). None:
  /// the contention is not priced, and the report says so.
  std::optional<schedule::PipelineCosts> runningCosts;
};

/// The migration and its downtimes.
struct MigrationReport {
  std::string runningSpec, nextSpec;
  bool samePlan = false, training = false;
  std::vector<Transfer> transfers;
  std::vector<StageMigration> stages;
  double bytesMoved = 0, bytesKept = 0;
  /// Bytes moved per link level, by the level's name.
  std::vector<std::pair<std::string, double>> bytesPerLevel;
  /// All transfers at once: the busiest device's (or shared NIC's) sends
  /// or receives (the preemptive open-shop bound, which a schedule of the
  /// transfers reaches).
  double moveSeconds = 0;
  unsigned busiestDevice = 0;
  bool busiestNic = false;

  /// The new job's start and where the figure comes from.
  cluster::RelaunchCost relaunch;

  /// Pause-and-resume: drain the running pipeline, start the new job, move,
  /// fill the new one.
  double drainSeconds = 0, fillSeconds = 0, pauseDowntime = 0;

  /// Prepare-beside-and-switch: the new job starts and receives its slices
  /// while the running plan serves (prepareSeconds: relaunch + the move
  /// beside it); the switch waits for the drain and the fill only.
  bool besidePossible = false;
  std::string besideProblem;
  double prepareSeconds = 0, besideDowntime = 0;
  /// The running plan's messages and the move beside it on shared links
  /// (fair share, Contention.h): whether it was priced, the ports both
  /// use, the running plan's samples/s while every shared port carries
  /// transfers, the move's time and busiest device beside it, how long
  /// the plan runs slowed (until its last shared port has carried its
  /// transfers) and the samples the slowdown costs (SharedLinks).
  bool contentionPriced = false;
  unsigned sharedPorts = 0;
  double preparingSamplesPerSecond = 0, besideMoveSeconds = 0;
  unsigned besideBusiestDevice = 0;
  bool besideBusiestNic = false;
  double slowedSeconds = 0, slowdownSamplesLost = 0;
  /// The most memory one device needs during the preparation: its running
  /// peak plus the slices it receives, the device, and its capacity.
  double besidePeak = 0, besideCapacity = 0;
  unsigned besideDevice = 0;

  /// Samples each strategy serves fewer than the running plan kept would:
  /// a pause its downtime's; preparing beside its downtime's and the
  /// slowdown's. A pause switches besideMoveSeconds - moveSeconds sooner
  /// (pauseSooner) and serves the new plan meanwhile, so compared at the
  /// later switch's end it loses pauseSamplesLostCompared.
  double pauseSamplesLost = 0, besideSamplesLost = 0;
  double pauseSooner = 0, pauseSamplesLostCompared = 0;

  /// The strategy chosen (prepare-beside when possible and it loses no
  /// more samples than a pause compared at the same moment) and its
  /// downtime and samples lost.
  bool chosenBeside = false;
  double downtime = 0, samplesLost = 0;

  /// Whether re-planning pays: the running plan's and the new plan's
  /// samples/s on the cluster, and the time after the switch at which the
  /// samples gained make up for those the chosen strategy lost (infinite
  /// when the new plan is not faster).
  double runningSamplesPerSecond = 0, nextSamplesPerSecond = 0;
  double runningLatency = 0, nextLatency = 0;
  bool worthIt = false;
  double breakEvenSeconds = 0;
};

/// Plans the migration from \p in.running to \p in.next on \p cluster
/// (same global ranks in both). Errors when a plan's state cannot be
/// migrated (migrationProblem) or a plan uses more devices than \p cluster.
llvm::Expected<MigrationReport> planMigration(const MigrationInputs &in,
                                              const cost::ModelDesc &model,
                                              const cluster::Cluster &cluster);

/// The summary's lines (`replan: ...`).
void printMigration(const MigrationReport &r, llvm::raw_ostream &os);

/// The report's "replan" object (docs/report-format.md).
llvm::json::Value toJSON(const MigrationReport &r);

} // namespace distopt::sim

#endif // DISTOPT_LIB_SIM_MIGRATION_H
