//===- Report.h - What the reports of a plan show ---------------*- C++ -*-===//
//
// Part of DistOpt. The figures of a predicted or searched plan, gathered
// once (Report), and the two files written from them: the JSON report
// (docs/report-format.md) and the self-contained HTML page
// (--dist-report-html).
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_LIB_SEARCH_REPORT_H
#define DISTOPT_LIB_SEARCH_REPORT_H

#include "lib/Search/Search.h"
#include "lib/Sim/Migration.h"
#include "lib/Sim/Report.h"
#include "lib/Sim/Resilience.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace distopt::search {

/// One evaluated plan as the reports show it: the simulated plan's report
/// and what evaluation adds (its label, where the time goes, inference
/// figures, the device kind of each pipeline rank, the batch split).
struct CandidateReport {
  sim::PlanReport sim;
  Mode mode = Mode::Train;
  /// Short label, as --dist-explain's table shows it (planLabel).
  std::string label;
  Breakdown breakdown;
  double lowerBound = 0;
  /// Inference: seconds per global batch and samples/s of a stream.
  double latency = 0, streamThroughput = 0;
  /// Device kind per pipeline rank (replicated plans: its first slot's).
  std::vector<std::string> stageDeviceKinds;
  /// Micro-batches per data-parallel replica of each pipeline rank, when
  /// the replicas of a rank split the batch unevenly (faster device kinds
  /// take more); empty otherwise.
  std::vector<std::vector<unsigned>> replicaMicrobatches;
};

/// Everything a report shows: the chosen plan and, after a search, the
/// search's figures, the runners-up, why the winner wins and the baseline.
struct Report {
  std::string model;
  /// The model's parameters (tied copies once): --dist-replan checks that a
  /// running plan's report is of the same model.
  double modelParams = 0;
  /// The cluster's name and device count.
  std::string cluster;
  unsigned clusterDevices = 0;
  /// The device kind of each global rank the plan uses.
  std::vector<std::string> deviceKinds;
  CandidateReport chosen;
  /// False for a given plan (--dist-plan), which has nothing below.
  bool searched = false;
  Mode mode = Mode::Train;
  InferObjective objective = InferObjective::Throughput;
  SearchStats stats;
  unsigned devicesUsed = 0, devicesTotal = 0;
  /// SearchResult's device advice (set when the model is too small).
  unsigned suggestedDevices = 0;
  double efficiency = 0;
  std::vector<std::pair<unsigned, double>> scaling;
  std::vector<CandidateReport> alternatives;
  /// What the explanation ranks by, and why the winner beats the first
  /// runner-up (--dist-explain's "why").
  std::string rankedBy, why;
  /// A trainer's configuration predicted beside the search
  /// (--dist-plan-from with --dist-search) and where it was read from.
  std::optional<CandidateReport> baseline;
  std::string baselineSource;
  /// The chosen plan under preemptions (--dist-resilience).
  std::optional<sim::ResilienceReport> resilience;
  /// The migration from the running plan (--dist-replan).
  std::optional<sim::MigrationReport> replan;
  /// The chosen plan's pinned sides (`pin=...`).
  std::vector<PinnedSide> pinned;
};

CandidateReport candidateReport(const Candidate &c,
                                const cost::ModelDesc &model);
/// The report of a given plan, evaluated as \p c.
Report planReport(const Candidate &c, const cost::ModelDesc &model,
                  const cluster::Cluster &cluster);
/// The report of a search.
Report searchReport(const SearchResult &r, const cost::ModelDesc &model,
                    const cluster::Cluster &cluster);

/// {"plan", "estimate", "breakdown"} (docs/report-format.md).
llvm::json::Value toJSON(const CandidateReport &r);
/// A given plan's report is its candidate's; a search's adds "model",
/// "mode", "search", "devices", "alternatives" and "baseline".
llvm::json::Value toJSON(const Report &r);

/// One self-contained HTML page (inline CSS and SVG, no scripts, nothing
/// fetched): the plan, its prediction, the timeline of \p timeline (a
/// simulation of the chosen plan that recorded its events; none for
/// inference), memory per stage by what holds it, the device kinds, and
/// after a search the runners-up and why the winner wins.
void writeHtmlReport(const Report &r, const sim::SimResult *timeline,
                     llvm::raw_ostream &os);

/// \p text with &, <, >, " and ' as HTML character references.
std::string escapeHtml(llvm::StringRef text);

} // namespace distopt::search

#endif // DISTOPT_LIB_SEARCH_REPORT_H
