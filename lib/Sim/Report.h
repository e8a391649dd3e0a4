//===- Report.h - Report JSON, Chrome trace and SVG timeline ----*- C++ -*-===//
//
// Writers for a simulated plan. The report format is documented in
// docs/report-format.md; the Chrome trace loads in Perfetto and
// chrome://tracing; the SVG draws one lane per pipeline rank (stage group).
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_LIB_SIM_REPORT_H
#define DISTOPT_LIB_SIM_REPORT_H

#include "lib/Cost/ModelDesc.h"
#include "lib/Sim/Simulator.h"

#include "llvm/Support/JSON.h"

#include <array>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace distopt::sim {

/// One virtual stage of a plan, as the reports show it.
struct StageReport {
  unsigned stage = 0, pipelineRank = 0, chunk = 0;
  /// Data-parallel replicas of the stage (dp, or its `replicas` count).
  unsigned replicas = 1;
  /// Global ranks of its stage group.
  std::vector<unsigned> devices;
  /// Half-open range of ModelDesc layers, and the names of its first and
  /// last layer and of their first and last op (unset for an empty range).
  unsigned layerBegin = 0, layerEnd = 0;
  std::optional<std::pair<std::string, std::string>> layerNames, opRange;
};

/// One action list of the simulation: a pipeline rank's stage group, or
/// one slot (replica) of a replicated stage.
struct ListReport {
  /// The pipeline stage it runs; its replica index (replicated plans).
  unsigned stage = 0, replica = 0;
  /// Micro-batches it runs.
  unsigned microbatches = 0;
  std::string deviceKind;
  double memoryCapacity = 0;
  /// Its peak memory (each device of it), by what holds it.
  schedule::PeakMemory memory;
  double peakMemory = 0;
  /// Offloaded plans: bytes of each offloaded item (optimizer state,
  /// weights, activations) in each storage tier, per device, and the CPU
  /// optimizer step.
  std::array<std::array<double, cluster::kNumTiers>, cost::kNumOffloadKinds>
      offloadBytes{};
  double cpuStepTime = 0;
  /// Bytes per tier over the items.
  std::array<double, cluster::kNumTiers> tierBytes() const;
  /// Fills offloadBytes and cpuStepTime from \p dc.
  void setOffload(const schedule::DeviceCost &dc);
};

/// What the reports of a simulated plan show, gathered once from the plan,
/// its costs and the simulation: the JSON report and the HTML page are both
/// written from it.
struct PlanReport {
  std::string model;
  schedule::Plan plan;
  /// "model" or the matmul precision the costs assume ("fp8").
  std::string matmulDtype;
  std::vector<StageReport> stages;
  std::vector<ListReport> lists;
  /// Peak memory per global device, indexed by rank.
  std::vector<double> peakMemoryPerDevice;
  double maxPeakMemory = 0;
  double iterationTime = 0, samplesPerSecond = 0, tflopsPerDevice = 0,
         modelTflopsPerDevice = 0, bubbleFraction = 0;
  std::vector<unsigned> inFlight;
  /// Bytes per iteration per link level, by the level's name.
  std::vector<std::pair<std::string, double>> bytesPerLevel;
  bool steadyState = false, fitsMemory = true;
  std::string memoryProblem;
  /// The input pipeline and its stall (--dist-input).
  std::optional<InputStall> input;
};

/// "0-3" / "0-3, 8-11": \p numbers (ranks, layers) as runs of consecutive
/// numbers, in increasing order.
std::string numberRuns(llvm::ArrayRef<unsigned> numbers);

/// Gathers the report of \p plan (finalized).
PlanReport planReport(const schedule::Plan &plan, const cost::ModelDesc &model,
                      const schedule::PipelineCosts &costs,
                      const SimResult &result);

/// {"model", "plan": {...}, "estimate": {...}} (docs/report-format.md).
llvm::json::Value toJSON(const PlanReport &report);

/// {"plan": {...}, "estimate": {...}} for \p plan (finalized).
llvm::json::Value reportJSON(const schedule::Plan &plan,
                             const cost::ModelDesc &model,
                             const schedule::PipelineCosts &costs,
                             const SimResult &result);
void writeReport(const schedule::Plan &plan, const cost::ModelDesc &model,
                 const schedule::PipelineCosts &costs, const SimResult &result,
                 llvm::raw_ostream &os);

/// Chrome trace-event JSON: one process per pipeline rank, one thread per
/// stream, complete ("X") events in microseconds.
/// The text summary's lines for an offloaded plan (nothing otherwise): per
/// pipeline rank, what lives in which tier and the CPU optimizer step.
void printOffload(const schedule::Plan &plan,
                  const schedule::PipelineCosts &costs, llvm::raw_ostream &os);

void writeChromeTrace(const SimResult &result, llvm::raw_ostream &os);

/// SVG timeline: one lane per rank, F/B/W/optimizer coloured by kind with
/// the shade cycling by micro-batch, communication in a thin strip under each
/// lane, idle time (the bubble) left light grey.
void writeSvgTimeline(const SimResult &result, unsigned numRanks,
                      llvm::raw_ostream &os, unsigned width = 1400);

} // namespace distopt::sim

#endif // DISTOPT_LIB_SIM_REPORT_H
