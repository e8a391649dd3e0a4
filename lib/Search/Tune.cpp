//===- Tune.cpp - Global batch and hyper-parameter trials -------*- C++ -*-===//
//
// Part of DistOpt. The time-to-accuracy search over global batches and the
// per-trial planning of a tuning run (lib/Search/Tune.h); TuneReport.cpp
// prints and writes them.
//
//===----------------------------------------------------------------------===//

#include "lib/Search/Tune.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <cstdio>

using namespace llvm;
using namespace distopt;
using namespace distopt::search;

static Error failure(const Twine &msg) {
  return createStringError(inconvertibleErrorCode(), msg);
}

/// "-5", "0.001", "1e+20".
static std::string shortest(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

Expected<StatEfficiency> search::makeStatEfficiency(double noiseScale,
                                                    double minExamples,
                                                    double minSteps) {
  if (!(noiseScale > 0) || !std::isfinite(noiseScale))
    return failure("--dist-noise-scale must be a positive number of "
                   "samples (the gradient noise scale B_noise), got " +
                   shortest(noiseScale) +
                   "; measure it (McCandlish et al. 2018, appendix A) or "
                   "take it from a similar model");
  if ((minExamples > 0) == (minSteps > 0))
    return failure("give the target as exactly one of "
                   "--dist-target-examples=E_min (samples a tiny batch "
                   "needs) or --dist-target-steps=S_min (steps an unbounded "
                   "batch needs)");
  StatEfficiency e;
  e.noiseScale = noiseScale;
  e.minSteps = minSteps > 0 ? minSteps : minExamples / noiseScale;
  if (!std::isfinite(e.minSteps))
    return failure("the target (--dist-target-examples or "
                   "--dist-target-steps) must be a finite number");
  return e;
}

/// A positive integer of a batch list.
static Expected<unsigned> batchItem(StringRef item, StringRef spec) {
  unsigned v = 0;
  if (item.trim().getAsInteger(10, v) || v == 0)
    return failure(formatv("bad --dist-batches='{0}': '{1}' is not a "
                           "positive whole number of samples; write "
                           "64,128,256 or 64..4096",
                           spec, item));
  return v;
}

Expected<std::vector<unsigned>> search::parseBatchList(StringRef spec) {
  std::vector<unsigned> out;
  if (spec.trim().empty())
    return failure("--dist-batches is empty: write candidate global "
                   "batches as 64,128,256 or 64..4096");
  if (spec.contains("..")) {
    auto [lo, hi] = spec.split("..");
    Expected<unsigned> a = batchItem(lo, spec);
    if (!a)
      return a.takeError();
    Expected<unsigned> b = batchItem(hi, spec);
    if (!b)
      return b.takeError();
    if (*a > *b)
      return failure(formatv("bad --dist-batches='{0}': the range runs "
                             "from the smaller batch to the larger",
                             spec));
    for (uint64_t v = *a; v <= *b; v *= 2)
      out.push_back(static_cast<unsigned>(v));
    return out;
  }
  SmallVector<StringRef> items;
  spec.split(items, ',');
  for (StringRef item : items) {
    Expected<unsigned> v = batchItem(item, spec);
    if (!v)
      return v.takeError();
    out.push_back(*v);
  }
  llvm::sort(out);
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<unsigned> search::defaultBatches(unsigned devices,
                                             double noiseScale) {
  uint64_t lo = 1;
  while (lo < std::max(devices, 1u))
    lo *= 2;
  std::vector<unsigned> out;
  for (uint64_t b = lo; b <= UINT_MAX; b *= 2) {
    out.push_back(static_cast<unsigned>(b));
    if (b >= 16 * noiseScale)
      break;
  }
  return out;
}

/// The per-batch (per-trial) searches run quietly: no progress line of
/// their own (the caller's reports the batches or trials done), no device
/// advice.
static SearchOptions quiet(const SearchOptions &o, unsigned batch) {
  SearchOptions q = o;
  q.globalBatch = batch;
  q.progress = nullptr;
  q.adviseDevices = false;
  return q;
}

Expected<TimeToAccuracyResult> search::searchTimeToAccuracy(
    const cost::ModelDesc &model, const cluster::Cluster &cluster,
    const cost::CostModel &cm, const SearchOptions &options,
    const StatEfficiency &efficiency, ArrayRef<unsigned> batches) {
  if (options.mode != Mode::Train)
    return failure("--dist-objective=time-to-accuracy plans training (steps "
                   "to a target loss); inference has no steps: drop "
                   "--dist-mode=infer or choose throughput or latency");
  if (batches.empty())
    return failure("--dist-objective=time-to-accuracy has no candidate "
                   "batches: give --dist-batches");
  TimeToAccuracyResult r;
  r.efficiency = efficiency;
  std::string problems;
  bool any = false;
  unsigned long weighed = 0;
  for (unsigned b : batches) {
    BatchChoice c;
    c.batch = b;
    c.steps = efficiency.stepsFor(b);
    Expected<SearchResult> s =
        searchPlan(model, cluster, cm, quiet(options, b));
    if (!s) {
      c.problem = toString(s.takeError());
      problems += formatv("\n  batch {0}: {1}", b, c.problem).str();
    } else {
      c.seconds = c.steps * s->best.sim.result.iterationTime;
      c.result = std::move(*s);
      if (!any || c.seconds < r.batches[r.best].seconds)
        r.best = r.batches.size();
      any = true;
    }
    if (c.result)
      weighed += c.result->stats.candidates;
    r.batches.push_back(std::move(c));
    if (options.progress)
      options.progress(double(r.batches.size()) / batches.size(), weighed);
  }
  if (!any)
    return failure("no candidate batch has a plan:" + problems);
  return r;
}

/// "key=value" items of one trial.
static Error trialError(unsigned index, StringRef text, const Twine &what) {
  return failure(
      formatv("bad trial {0} '{1}' in --dist-tune: ", index + 1, text) + what +
      "; write trials as "
      "batch=256,lr=1e-3,async=0,steps=1000;batch=512,...");
}

Expected<std::vector<Trial>> search::parseTrials(StringRef spec) {
  SmallVector<StringRef> texts;
  spec.split(texts, ';', -1, /*KeepEmpty=*/false);
  std::vector<Trial> out;
  for (StringRef raw : texts) {
    StringRef text = raw.trim();
    if (text.empty())
      continue;
    unsigned index = out.size();
    Trial t;
    bool hasBatch = false;
    SmallVector<StringRef> items;
    text.split(items, ',');
    for (StringRef item : items) {
      auto [key, value] = item.trim().split('=');
      key = key.trim();
      value = value.trim();
      if (value.empty())
        return trialError(index, text, "'" + item.trim() + "' has no value");
      if (key == "batch") {
        if (value.getAsInteger(10, t.batch) || t.batch == 0)
          return trialError(index, text,
                            "batch must be a positive whole number, got '" +
                                value + "'");
        hasBatch = true;
      } else if (key == "lr") {
        double lr;
        if (!to_float(value, lr) || !(lr > 0))
          return trialError(
              index, text, "lr must be a positive number, got '" + value + "'");
        t.learningRate = value.str();
      } else if (key == "async") {
        if (value != "0" && value != "1")
          return trialError(index, text,
                            "async must be 0 or 1, got '" + value + "'");
        t.async = value == "1";
      } else if (key == "steps") {
        if (!to_float(value, t.steps) || !(t.steps > 0) ||
            !std::isfinite(t.steps))
          return trialError(index, text,
                            "steps must be a positive number, got '" + value +
                                "'");
      } else {
        return trialError(index, text,
                          "unknown key '" + key +
                              "' (keys: batch, lr, async, steps)");
      }
    }
    if (!hasBatch)
      return trialError(index, text, "it has no batch=N");
    out.push_back(std::move(t));
  }
  if (out.empty())
    return failure("--dist-tune has no trials: write them as "
                   "batch=256,lr=1e-3,async=0,steps=1000;batch=512,...");
  return out;
}

/// The fixed plan \p fixed at \p batch, for a trial that does (not) allow
/// asynchronous updates.
static Expected<Candidate> runFixed(const cost::ModelDesc &model,
                                    const cluster::Cluster &cluster,
                                    const cost::CostModel &cm,
                                    const SearchOptions &o, schedule::Plan p,
                                    unsigned batch, bool async) {
  p.globalBatch = p.numMicrobatches = 0;
  if (!async && schedule::isAsync(p.schedule)) {
    p.setSchedule(schedule::ScheduleKind::OneFOneB);
    p.chunks = 1;
  }
  if (!p.replicated() && batch % p.dp == 0 && (batch / p.dp) % p.mbs != 0) {
    unsigned perReplica = batch / p.dp;
    unsigned mbs = p.mbs;
    while (perReplica % mbs != 0)
      --mbs;
    p.mbs = mbs;
  }
  if (Error e = schedule::finalizePlan(p, model, cluster, batch, cm))
    return std::move(e);
  return evaluatePlan(model, cluster, cm, p, o);
}

Expected<TuneResult>
search::tuneTrials(const cost::ModelDesc &model,
                   const cluster::Cluster &cluster, const cost::CostModel &cm,
                   const SearchOptions &options, ArrayRef<Trial> trials,
                   const std::optional<StatEfficiency> &efficiency,
                   const std::optional<schedule::Plan> &fixed) {
  if (options.mode != Mode::Train)
    return failure("--dist-tune plans training trials; drop "
                   "--dist-mode=infer");
  if (trials.empty())
    return failure("--dist-tune has no trials");
  TuneResult r;
  unsigned long weighed = 0;
  for (auto [i, t] : llvm::enumerate(trials)) {
    auto where = [&, i = i, &t = t]() {
      return formatv("trial {0} (batch={1}{2})", i + 1, t.batch,
                     t.async ? ",async=1" : "")
          .str();
    };
    TrialResult tr;
    tr.trial = t;
    if (t.steps > 0)
      tr.steps = t.steps;
    else if (efficiency)
      tr.steps = efficiency->stepsFor(t.batch);
    else
      return failure(where() +
                     " has no steps=N, and without --dist-noise-scale and a "
                     "target (--dist-target-examples or --dist-target-steps) "
                     "its steps cannot be derived: give one or the other");
    SearchOptions so = quiet(options, t.batch);
    so.allowAsync = t.async;
    Expected<SearchResult> s = searchPlan(model, cluster, cm, so);
    if (!s)
      return failure(where() + ": " + toString(s.takeError()));
    tr.best = std::move(*s);
    tr.seconds = tr.steps * tr.best.best.sim.result.iterationTime;
    if (i == 0) {
      r.fixedPlan = fixed ? *fixed : tr.best.best.sim.plan;
      r.fixedSource = fixed ? "--dist-tune-fixed" : "the best plan of trial 1";
    }
    Expected<Candidate> f =
        runFixed(model, cluster, cm, so, r.fixedPlan, t.batch, t.async);
    if (!f)
      return failure(formatv("the fixed plan ({0}, {1}) cannot run {2}: ",
                             r.fixedSource, r.fixedPlan.str(), where())
                         .str() +
                     toString(f.takeError()) +
                     "; name a plan that runs every trial with "
                     "--dist-tune-fixed=PLAN");
    tr.fixed = std::move(*f);
    if (!tr.fixed.sim.result.fitsMemory)
      return failure(formatv("the fixed plan ({0}, {1}) does not fit in "
                             "memory for {2}: ",
                             r.fixedSource, r.fixedPlan.str(), where())
                         .str() +
                     tr.fixed.sim.result.memoryProblem +
                     "; name a plan that runs every trial with "
                     "--dist-tune-fixed=PLAN");
    tr.fixedSeconds = tr.steps * tr.fixed.sim.result.iterationTime;
    r.seconds += tr.seconds;
    r.fixedSeconds += tr.fixedSeconds;
    weighed += tr.best.stats.candidates;
    r.trials.push_back(std::move(tr));
    if (options.progress)
      options.progress(double(r.trials.size()) / trials.size(), weighed);
  }
  return r;
}
