//===- Resilience.h - Plans on preemptible nodes ----------------*- C++ -*-===//
//
// Part of DistOpt. What a training plan delivers when its nodes are
// preempted (docs/resilience.md): with no resilience (on-demand nodes),
// with periodic checkpoints and restarts (the interval from Young/Daly), or
// with Bamboo's redundant computation (Thorpe et al., NSDI'23: each
// pipeline stage also holds its successor's layers and runs their forward
// in the pipeline bubble, so a preempted stage is taken over by its
// predecessor without a restart), or elastically (Asteroid, and
// `dist-run --elastic`: the job resumes at once on the surviving nodes
// under the best plan for them, and moves back when the replacement
// arrives). Closed-form expectations, and a seeded
// Poisson injection of preemptions over a horizon that measures the same
// figures. No MLIR dependency.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_LIB_SIM_RESILIENCE_H
#define DISTOPT_LIB_SIM_RESILIENCE_H

#include "lib/Cluster/Cluster.h"
#include "lib/Sim/Simulator.h"

#include "llvm/Support/JSON.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace distopt::sim {

enum class Resilience { None, Checkpoint, Redundant, Elastic };
llvm::StringRef resilienceName(Resilience r);
/// "none", "checkpoint", "redundant" or "elastic"; nullopt otherwise.
std::optional<Resilience> parseResilience(llvm::StringRef s);

/// What the resilience model needs of a simulated plan.
struct ResilienceInputs {
  /// Failure-free iteration time (s) and samples per iteration.
  double iterationTime = 0, samplesPerIteration = 0;
  /// Nodes the plan uses and devices of the fullest of them.
  unsigned nodes = 1, devicesPerNode = 1;
  /// Checkpoint state (weights and optimizer state; gradients are not
  /// kept) of the device that holds the most, bytes.
  double stateBytesPerDevice = 0;
  /// For each node the plan uses (0..nodes-1), the nodes that hold the
  /// pipeline predecessor or successor of a stage it holds.
  std::vector<std::vector<unsigned>> neighbours;
  /// Redundant computation: the iteration time with each stage also running
  /// its successor's forward (the part that does not fit in its bubble
  /// lengthens the iteration), the mean iteration time while one stage is
  /// run by its predecessor, the extra bytes the fullest device holds for
  /// its successor, and whether a node holds a stage and its backup (its
  /// loss then needs a restart). Unset when the plan cannot be redundant.
  double redundantIterationTime = 0, degradedIterationTime = 0;
  double redundantExtraBytes = 0;
  bool redundantPossible = false;
  /// Why redundancy is impossible for the plan (empty when possible).
  std::string redundantProblem;
  /// Elastic: the iteration time of the best plan on the plan's nodes but
  /// one (the planner searches it; 0 where none runs there).
  double survivorIterationTime = 0;
};

/// Derives the inputs from \p ps (a finalized, simulated training plan) on
/// \p cluster.
/// \p memoryLimit (bytes, 0: each device's memory) bounds what a redundant
/// plan may hold.
ResilienceInputs resilienceInputs(const PlanSimulation &ps,
                                  const cluster::Cluster &cluster,
                                  double memoryLimit = 0);

/// Expected figures of a plan under preemptions.
struct ResilienceEstimate {
  Resilience mode = Resilience::None;
  /// Preemptions per hour of the whole job (rate x nodes; 0 for none,
  /// which runs on on-demand nodes).
  double eventsPerHour = 0;
  /// Seconds to write a checkpoint, to restart (replacement + reload), and
  /// between checkpoints (0: none taken).
  double checkpointSeconds = 0, restartSeconds = 0, intervalSeconds = 0;
  /// Steady iteration time (redundant: with the successor's forwards).
  double iterationTime = 0;
  /// Elastic: the iteration time on the survivors, until the replacement
  /// arrives.
  double survivorIterationTime = 0;
  /// Samples/s without preemptions and expected under them.
  double failureFreeSamplesPerSecond = 0, expectedSamplesPerSecond = 0;
  /// Wall-clock seconds neither making progress nor writing checkpoints,
  /// per preemption.
  double lostSecondsPerEvent = 0;
  /// Redundant: the share of preemptions that also take the stage's backup
  /// (a neighbour preempted before the replacement arrives) and restart
  /// from the last checkpoint.
  double fatalFraction = 0;
  /// Dollars per node-hour paid and per sample delivered.
  double usdPerNodeHour = 0, usdPerSample = 0;
};

/// The closed-form expectation (docs/resilience.md). \p mode Redundant
/// needs inputs.redundantPossible, Elastic inputs.survivorIterationTime.
ResilienceEstimate estimateResilience(const ResilienceInputs &in,
                                      const cluster::Availability &a,
                                      Resilience mode);

/// What a seeded injection of preemptions measured.
struct InjectionResult {
  uint64_t seed = 0;
  double hours = 0;
  unsigned events = 0, restarts = 0;
  double samplesPerSecond = 0, lostSecondsPerEvent = 0, usdPerSample = 0;
};

/// Hours an injection runs (docs/resilience.md).
constexpr double kInjectionHours = 1000;

/// Runs the plan for \p hours of wall clock with preemptions drawn from a
/// Poisson process (rate x nodes per hour, a uniformly chosen node each)
/// seeded by \p seed; deterministic for a seed.
InjectionResult injectPreemptions(const ResilienceInputs &in,
                                  const cluster::Availability &a,
                                  Resilience mode, uint64_t seed,
                                  double hours = kInjectionHours);

/// What the reports show: the plan's expectation under its resilience, the
/// same plan on on-demand nodes for comparison, and the injection when one
/// was asked for.
struct ResilienceReport {
  cluster::Availability availability;
  unsigned nodes = 1;
  ResilienceEstimate estimate, onDemand;
  std::optional<InjectionResult> injection;
};

/// The report of \p mode for \p in; \p seed injects preemptions.
ResilienceReport resilienceReport(const ResilienceInputs &in,
                                  const cluster::Availability &a,
                                  Resilience mode,
                                  std::optional<uint64_t> seed);
/// The text summary's lines (docs/resilience.md).
void printResilience(const ResilienceReport &r, llvm::raw_ostream &os);
/// The report's "resilience" object (docs/report-format.md).
llvm::json::Value toJSON(const ResilienceReport &r);

/// The Young/Daly checkpoint interval (work seconds between checkpoints)
/// for checkpoint cost \p c and mean time between failures \p mtbf (both
/// seconds): Daly's higher-order form, sqrt(2 c M) (1 + sqrt(c / 2M) / 3 +
/// c / 18M) - c, or M when c >= 2M.
double dalyInterval(double c, double mtbf);

} // namespace distopt::sim

#endif // DISTOPT_LIB_SIM_RESILIENCE_H
