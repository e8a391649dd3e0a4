//===- TuneReport.cpp - Tables and JSON of batch and trial tuning -*- C++ -*-=//
//
// Part of DistOpt. Prints the per-batch table of a time-to-accuracy search
// and the per-trial table of a tuning run, and writes both as the report's
// `time_to_accuracy` and `tune` objects (docs/report-format.md).
//
//===----------------------------------------------------------------------===//

#include "lib/Search/Tune.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

using namespace llvm;
using namespace distopt;
using namespace distopt::search;

/// "1234.5 s (0.34 h)".
static std::string seconds(double s) {
  if (s < 3600)
    return formatv("{0:F1} s", s).str();
  return formatv("{0:F0} s ({1:F2} h)", s, s / 3600).str();
}

void search::printTimeToAccuracy(const TimeToAccuracyResult &r,
                                 raw_ostream &os) {
  const StatEfficiency &e = r.efficiency;
  os << "time to accuracy: noise scale B_noise " << format("%g", e.noiseScale)
     << " samples, target E_min " << format("%g", e.minExamples())
     << " samples = S_min " << format("%g", e.minSteps)
     << " steps; steps(B) = S_min (1 + B_noise/B) (McCandlish et al. "
        "2018)\n";
  os << formatv("  {0,-8} {1,-36} {2,10} {3,11} {4,12} {5,14}\n", "batch",
                "best plan", "iter s", "samples/s", "steps", "time s");
  const BatchChoice *fastest = nullptr;
  for (auto [i, c] : llvm::enumerate(r.batches)) {
    if (!c.result) {
      os << formatv("  {0,-8} no plan: {1}\n", c.batch, c.problem);
      continue;
    }
    const sim::SimResult &s = c.result->best.sim.result;
    if (!fastest ||
        s.samplesPerSecond > fastest->result->best.sim.result.samplesPerSecond)
      fastest = &c;
    os << formatv("  {0,-8} {1,-36} {2,10:F5} {3,11:F1} {4,12:F1} {5,14:F2}"
                  "{6}\n",
                  c.batch, planLabel(c.result->best.sim.plan), s.iterationTime,
                  s.samplesPerSecond, c.steps, c.seconds,
                  i == r.best ? "  <- best" : "");
  }
  const BatchChoice &w = r.batches[r.best];
  os << formatv("  best: global batch {0}, {1} to the target ({2:F1} steps "
                "of {3:F5} s)\n",
                w.batch, seconds(w.seconds), w.steps,
                w.result->best.sim.result.iterationTime);
  if (fastest && fastest != &w)
    os << formatv("  the highest throughput (batch {0}, {1:F1} samples/s) "
                  "would take {2}: {3:F2}x as long\n",
                  fastest->batch,
                  fastest->result->best.sim.result.samplesPerSecond,
                  seconds(fastest->seconds), fastest->seconds / w.seconds);
}

void search::printTune(const TuneResult &r, raw_ostream &os) {
  os << formatv("tune: {0} trial(s), each with its best plan, against one "
                "fixed plan ({1}: {2})\n",
                r.trials.size(), r.fixedSource, planLabel(r.fixedPlan));
  os << formatv("  {0,-5} {1,-7} {2,-8} {3,-5} {4,10} {5,-34} {6,9} {7,12} "
                "{8,9} {9,12}\n",
                "trial", "batch", "lr", "async", "steps", "best plan", "iter s",
                "time s", "fixed s", "fixed time s");
  for (auto [i, t] : llvm::enumerate(r.trials))
    os << formatv("  {0,-5} {1,-7} {2,-8} {3,-5} {4,10:F1} {5,-34} {6,9:F5} "
                  "{7,12:F2} {8,9:F5} {9,12:F2}\n",
                  i + 1, t.trial.batch,
                  t.trial.learningRate.empty() ? "-" : t.trial.learningRate,
                  t.trial.async ? 1 : 0, t.steps,
                  planLabel(t.best.best.sim.plan),
                  t.best.best.sim.result.iterationTime, t.seconds,
                  t.fixed.sim.result.iterationTime, t.fixedSeconds);
  os << formatv("  total: {0} with each trial's best plan, {1} with the "
                "fixed plan",
                seconds(r.seconds), seconds(r.fixedSeconds));
  if (r.fixedSeconds > 0 && r.seconds > 0)
    os << formatv(" ({0:F1}% less, {1:F2}x)",
                  100 * (1 - r.seconds / r.fixedSeconds),
                  r.fixedSeconds / r.seconds);
  os << "\n  the learning rate does not change the plan; it is carried "
        "into the report as given\n";
}

json::Value search::toJSON(const TimeToAccuracyResult &r) {
  json::Array batches;
  for (const BatchChoice &c : r.batches) {
    json::Object o{{"batch", int64_t(c.batch)}, {"steps", c.steps}};
    if (!c.result) {
      o["error"] = c.problem;
    } else {
      const sim::PlanSimulation &s = c.result->best.sim;
      o["plan"] = s.plan.str();
      o["label"] = planLabel(s.plan);
      o["iteration_time_s"] = s.result.iterationTime;
      o["samples_per_s"] = s.result.samplesPerSecond;
      o["time_s"] = c.seconds;
    }
    batches.push_back(std::move(o));
  }
  const BatchChoice &w = r.batches[r.best];
  return json::Object{{"noise_scale", r.efficiency.noiseScale},
                      {"target_examples", r.efficiency.minExamples()},
                      {"target_steps", r.efficiency.minSteps},
                      {"best_batch", int64_t(w.batch)},
                      {"time_s", w.seconds},
                      {"batches", std::move(batches)}};
}

json::Value search::toJSON(const TuneResult &r) {
  json::Array trials;
  for (const TrialResult &t : r.trials) {
    json::Object o{{"batch", int64_t(t.trial.batch)},
                   {"async", t.trial.async},
                   {"steps", t.steps},
                   {"steps_given", t.trial.steps > 0},
                   {"plan", t.best.best.sim.plan.str()},
                   {"label", planLabel(t.best.best.sim.plan)},
                   {"iteration_time_s", t.best.best.sim.result.iterationTime},
                   {"time_s", t.seconds},
                   {"fixed_plan", t.fixed.sim.plan.str()},
                   {"fixed_iteration_time_s", t.fixed.sim.result.iterationTime},
                   {"fixed_time_s", t.fixedSeconds}};
    double lr;
    if (to_float(t.trial.learningRate, lr))
      o["lr"] = lr;
    trials.push_back(std::move(o));
  }
  return json::Object{{"fixed_plan", r.fixedPlan.str()},
                      {"fixed_source", r.fixedSource},
                      {"time_s", r.seconds},
                      {"fixed_time_s", r.fixedSeconds},
                      {"trials", std::move(trials)}};
}
