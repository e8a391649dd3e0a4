//===- Simulator.h - Discrete-event simulation of a schedule ----*- C++ -*-===//
//
// Runs a Schedule's action lists against PipelineCosts. Each action list (a
// pipeline rank: a stage group of tp*dp devices that behave alike, or one
// slot of tp devices of a replicated stage) has a compute stream, two
// send queues (towards the next and the previous stage) and a collective
// queue; sends and collectives contend for the rank's egress link of their
// level, first come first served in simulated time.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_LIB_SIM_SIMULATOR_H
#define DISTOPT_LIB_SIM_SIMULATOR_H

#include "lib/Schedule/Plan.h"
#include "lib/Schedule/Schedule.h"
#include "lib/Sim/InputPipeline.h"

#include <optional>
#include <vector>

namespace distopt::sim {

enum class Stream { Compute, SendNext, SendPrev, Collective };
llvm::StringRef streamName(Stream s);

struct Event {
  unsigned device;
  Stream stream;
  schedule::Action action;
  double start, end;
};

struct SimOptions {
  /// Keep every event (for traces and timelines).
  bool recordEvents = true;
  /// The model's input per sample (--dist-input): simulatePlan makes a
  /// training iteration wait on its input pipeline where the cluster has an
  /// input side (InputPipeline.h).
  std::optional<InputSpec> input;
  /// The schedule given to simulatePlan has passed verifySchedule already
  /// (the search's cache of generated schedules verifies each once);
  /// without a given schedule this is ignored.
  bool givenVerified = false;
  /// Per-layer times of the model under the cost model simulatePlan gets
  /// (the search's, which has costed most stages already): the same bits
  /// as computing them afresh (cost::LayerTimesCache).
  cost::LayerTimesCache *layerTimes = nullptr;
};

struct SimResult {
  double iterationTime = 0;
  double samplesPerSecond = 0;
  /// Executed FLOP/s per device, counting recomputation (Megatron's figure).
  double tflopsPerDevice = 0;
  /// Model FLOP/s per device, without recomputation.
  double modelTflopsPerDevice = 0;
  /// Mean over ranks of idle compute time / iteration time.
  double bubbleFraction = 0;
  std::vector<double> busyTime;        ///< compute busy seconds per list
  std::vector<double> peakMemoryBytes; ///< per list (each device of it)
  /// The same peaks by what holds them (weights, gradients, optimizer
  /// state, activations, stashes; schedule::peakMemoryParts).
  std::vector<schedule::PeakMemory> peakMemoryParts;
  std::vector<unsigned> inFlight;      ///< max micro-batches in flight
  /// Micro-batches each list runs (all of them, or a slot's round-robin
  /// share).
  std::vector<unsigned> listMicrobatches;
  /// Bytes per iteration over all devices, per link level.
  std::vector<double> bytesPerLevel;
  std::vector<std::string> levelNames;
  std::vector<Event> events;
  /// Whether every rank's peak fits its device memory (simulatePlan).
  bool fitsMemory = true;
  std::string memoryProblem;
  /// Asynchronous schedules: iteration time is micro-batches x the steady
  /// interval between backward completions on rank 0.
  bool steadyState = false;
  /// Set by simulatePlan when SimOptions::input is given and the cluster
  /// has an input side: the input pipeline and the stall it adds.
  /// iterationTime, samplesPerSecond and the FLOP/s include the stall;
  /// bubbleFraction is of the devices' own iteration scaled to the longer
  /// one (the bubble's seconds are unchanged).
  std::optional<InputStall> input;
};

/// Simulates \p s with \p costs; errors if the lists cannot complete.
llvm::Expected<SimResult> simulate(const schedule::Schedule &s,
                                   const schedule::PipelineCosts &costs,
                                   const SimOptions &opts = {});

/// Everything simulatePlan derives from a plan.
struct PlanSimulation {
  schedule::Plan plan;
  schedule::Schedule schedule;
  schedule::PipelineCosts costs;
  SimResult result;
};

/// Makes the training iteration of \p ps (a simulated plan) wait on its
/// input pipeline: sets ps.result.input and stretches the iteration by
/// the stall. Inference plans and clusters without an input side are left
/// as they are.
void applyInputStall(PlanSimulation &ps, const cluster::Cluster &cluster,
                     const InputSpec &spec);

/// The whole path the CLI takes: finalize \p plan for \p model, \p cluster
/// and \p globalBatch, generate (or take \p given, which must have the
/// plan's shape) and verify its schedule, build the costs and simulate.
/// Memory overflow does not fail; it sets result.fitsMemory.
llvm::Expected<PlanSimulation>
simulatePlan(const cost::ModelDesc &model, const cluster::Cluster &cluster,
             const schedule::Plan &plan, unsigned globalBatch,
             const cost::CostModel &cm, const SimOptions &opts = {},
             const cost::MemoryConfig &memory = {},
             const schedule::Schedule *given = nullptr);

/// The options generateSchedule takes for \p plan (finalized):
/// schedule::scheduleOptions.
schedule::ScheduleOptions scheduleOptions(const schedule::Plan &plan);

} // namespace distopt::sim

#endif // DISTOPT_LIB_SIM_SIMULATOR_H
