//===- Tune.h - Global batch and hyper-parameter trials ---------*- C++ -*-===//
//
// Part of DistOpt. Planning beyond one iteration (PipeTune, Rocha et al.,
// Middleware'20): the global batch changes how many steps training needs,
// so the plan that minimises the time to a target loss is found over
// several batches, and a list of hyper-parameter trials gets, per trial,
// the plan that suits its batch and schedule.
//
//  - Statistical efficiency follows McCandlish et al. 2018 ("An Empirical
//    Model of Large-Batch Training"): with the gradient noise scale B_noise,
//    a target needs S(B) = S_min (1 + B_noise / B) steps, or E(B) = E_min
//    (1 + B / B_noise) samples, at global batch B (E_min = S_min B_noise).
//  - searchTimeToAccuracy runs the plan search for each candidate batch and
//    picks the batch whose best plan reaches the target first: S(B) times
//    the plan's iteration time.
//  - tuneTrials plans every trial (batch, learning rate, asynchronous
//    updates on or off) on its own and, beside it, runs every trial with
//    one fixed plan: the best plan of the first trial or a given one.
//
// See docs/search.md, "Time to accuracy and tuning".
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_LIB_SEARCH_TUNE_H
#define DISTOPT_LIB_SEARCH_TUNE_H

#include "lib/Search/Search.h"

#include <optional>
#include <string>
#include <vector>

namespace distopt::search {

/// Steps and samples a target needs as the global batch changes
/// (McCandlish et al. 2018, eq. 2.11 and 2.12).
struct StatEfficiency {
  /// The gradient noise scale B_noise, in samples.
  double noiseScale = 0;
  /// S_min: steps the target needs with an unbounded batch.
  double minSteps = 0;

  /// E_min = S_min B_noise: samples the target needs with a tiny batch.
  double minExamples() const { return minSteps * noiseScale; }
  /// S(B) = S_min (1 + B_noise / B).
  double stepsFor(double batch) const {
    return minSteps * (1 + noiseScale / batch);
  }
  /// E(B) = B S(B) = E_min (1 + B / B_noise).
  double examplesFor(double batch) const { return batch * stepsFor(batch); }
};

/// The model from the noise scale and one of the two targets (the other
/// is 0): samples at a tiny batch (E_min) or steps at an unbounded one
/// (S_min). Errors name the flag (--dist-noise-scale, --dist-target-*) and
/// say what is accepted.
llvm::Expected<StatEfficiency>
makeStatEfficiency(double noiseScale, double minExamples, double minSteps);

/// Candidate global batches: "64,128,512" (those, sorted, duplicates
/// dropped) or "64..4096" (64, 128, ... up to 4096: doubling from the
/// first). Errors say which item is wrong.
llvm::Expected<std::vector<unsigned>> parseBatchList(llvm::StringRef spec);

/// The batches tried when none are given: doubling from the smallest power
/// of two at least \p devices up to the first power of two at least 16
/// B_noise (where S(B) is within 7% of S_min), at least one batch.
std::vector<unsigned> defaultBatches(unsigned devices, double noiseScale);

/// One candidate batch of a time-to-accuracy search.
struct BatchChoice {
  unsigned batch = 0;
  /// The search's result for this batch (absent when no plan was found:
  /// then `problem` says why).
  std::optional<SearchResult> result;
  std::string problem;
  /// S(B), and S(B) times the best plan's iteration time.
  double steps = 0, seconds = 0;
};

struct TimeToAccuracyResult {
  StatEfficiency efficiency;
  /// Every batch tried, in increasing order.
  std::vector<BatchChoice> batches;
  /// Index of the batch that reaches the target first.
  unsigned best = 0;
  const SearchResult &winner() const { return *batches[best].result; }
};

/// Searches the best plan for each of \p batches (options.globalBatch is
/// replaced) and picks the one with the least S(B) x iteration time.
/// Batches without a plan are kept with their problem; an error when no
/// batch has one (the problems of all of them), for inference, or for an
/// empty list.
llvm::Expected<TimeToAccuracyResult> searchTimeToAccuracy(
    const cost::ModelDesc &model, const cluster::Cluster &cluster,
    const cost::CostModel &cm, const SearchOptions &options,
    const StatEfficiency &efficiency, llvm::ArrayRef<unsigned> batches);

/// One hyper-parameter trial of a tuning run.
struct Trial {
  unsigned batch = 0;
  /// The learning rate as written (empty: not given). It does not change
  /// the plan; it is carried into the report so that a trial reads whole.
  std::string learningRate;
  /// Asynchronous weight updates allowed (PipeDream, 2BW).
  bool async = false;
  /// Steps the trial runs (0: from the statistical-efficiency model).
  double steps = 0;
};

/// "batch=256,lr=1e-3,async=0,steps=1000;batch=512,async=1" (`;` between
/// trials, `,` between keys; batch is required, lr is any number, async 0 or
/// 1, steps a positive number). Errors name the trial and the item.
llvm::Expected<std::vector<Trial>> parseTrials(llvm::StringRef spec);

/// One trial, planned on its own and with the fixed plan.
struct TrialResult {
  Trial trial;
  /// The steps it runs (given, or S(batch)).
  double steps = 0;
  /// Its best plan and what the trial takes with it.
  SearchResult best;
  double seconds = 0;
  /// The fixed plan run at this trial's batch, and what it takes.
  Candidate fixed;
  double fixedSeconds = 0;
};

struct TuneResult {
  std::vector<TrialResult> trials;
  /// The fixed plan (before each trial's batch was applied) and where it
  /// came from ("the best plan of trial 1" or "--dist-tune-fixed").
  schedule::Plan fixedPlan;
  std::string fixedSource;
  double seconds = 0, fixedSeconds = 0;
};

/// Plans every trial and runs every trial with one fixed plan: \p fixed
/// when given, otherwise the first trial's best plan. The fixed plan keeps
/// its degrees, stages, schedule, recomputation and ZeRO stage; only the
/// number of micro-batches follows a trial's batch (and the micro-batch
/// size shrinks to the largest divisor of the per-replica batch when it no
/// longer divides it); an asynchronous fixed schedule runs 1F1B for trials
/// that do not allow asynchronous updates. Errors name the trial.
llvm::Expected<TuneResult>
tuneTrials(const cost::ModelDesc &model, const cluster::Cluster &cluster,
           const cost::CostModel &cm, const SearchOptions &options,
           llvm::ArrayRef<Trial> trials,
           const std::optional<StatEfficiency> &efficiency,
           const std::optional<schedule::Plan> &fixed);

/// The per-batch table of a time-to-accuracy search and the winner.
void printTimeToAccuracy(const TimeToAccuracyResult &r, llvm::raw_ostream &os);
/// The per-trial table of a tuning run, its total, and the fixed plan's.
void printTune(const TuneResult &r, llvm::raw_ostream &os);

/// The report's `time_to_accuracy` and `tune` objects
/// (docs/report-format.md).
llvm::json::Value toJSON(const TimeToAccuracyResult &r);
llvm::json::Value toJSON(const TuneResult &r);

} // namespace distopt::search

#endif // DISTOPT_LIB_SEARCH_TUNE_H
