//===- SearchPlan.cpp - The dist-search-plan pass ---------------*- C++ -*-===//
//
// Part of DistOpt. Searches the best plan for the module's function on its
// cluster and records it; prints the summary and the explanation on request
// and writes the JSON report and the HTML page.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/Planning/Planning.h"

#include "lib/Search/Report.h"
#include "lib/Search/Tune.h"
#include "passes/Planning/Branches.h"
#include "passes/Planning/FusedKernels.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <chrono>

namespace distopt {
#define GEN_PASS_DEF_SEARCHPLANPASS
#include "passes/Planning/Passes.h.inc"
} // namespace distopt

using namespace mlir;
using namespace distopt;
using namespace distopt::planning;

/// A progress callback: a live line on a terminal; in a log one line per
/// second once the search has run for a second. \p shown tells whether it
/// printed anything.
static std::function<void(double, unsigned long)>
progressLine(SearchProgress when, llvm::StringRef of, bool &shown) {
  if (when == SearchProgress::Never)
    return {};
  auto start = std::chrono::steady_clock::now();
  bool tty = llvm::errs().is_displayed();
  bool always = when == SearchProgress::Always;
  auto last = std::make_shared<double>(-1);
  std::string what = of.str();
  return [=, &shown](double fraction, unsigned long candidates) {
    double t = std::chrono::duration<double>(
                   std::chrono::steady_clock::now() - start)
                   .count();
    if (!always && !tty && t < 1.0)
      return;
    if (!always && t - *last < (tty ? 0.1 : 1.0) && fraction < 1.0)
      return;
    *last = t;
    shown = true;
    llvm::errs() << (tty ? "\r" : "")
                 << llvm::formatv("search: {0,3:F0}% of the {1}, {2} "
                                  "weighed, {3:F1} s",
                                  100 * fraction, what, candidates, t)
                 << (tty ? "" : "\n");
  };
}

/// The baseline's (read from \p spec) prediction beside the best plan's.
static void printBaseline(llvm::StringRef spec, schedule::Mode mode,
                          schedule::InferObjective objective,
                          const search::Candidate &base,
                          const search::Candidate &best,
                          llvm::raw_ostream &os) {
  const sim::SimResult &b = base.sim.result, &w = best.sim.result;
  bool infer = mode == schedule::Mode::Infer;
  double tb = search::objectiveTime(base, mode, objective);
  double tw = search::objectiveTime(best, mode, objective);
  double peak = 0;
  for (double m : b.peakMemoryBytes)
    peak = std::max(peak, m);
  os << "baseline (" << spec << "): " << base.sim.plan.str() << "\n";
  if (infer)
    os << llvm::formatv("  {0:F5} s per batch, {1:F2} samples/s\n",
                        base.latency, base.streamThroughput);
  else
    os << llvm::formatv("  iteration time   {0:F4} s (best plan {1:F4} "
                        "s)\n  throughput       {2:F2} samples/s (best "
                        "plan {3:F2})\n  bubble           {4:F1}%\n",
                        b.iterationTime, w.iterationTime, b.samplesPerSecond,
                        w.samplesPerSecond, 100 * b.bubbleFraction);
  os << "  peak memory      " << humanBytes(peak) << "\n";
  if (!b.fitsMemory)
    os << "  the baseline does not fit in device memory: " << b.memoryProblem
       << "\n";
  if (tw < tb)
    os << llvm::formatv("  the best plan is {0:F2}x as fast as the "
                        "baseline\n",
                        tb / tw);
  else
    os << "  the baseline is as fast as the best plan the search found\n";
}

/// How many of the search's best plans are ranked under preemptions.
static constexpr unsigned kResiliencePool = 16;

namespace {
struct SearchPlanPass
    : public distopt::impl::SearchPlanPassBase<SearchPlanPass> {
  using Base::Base;
  void runOnOperation() override {
    if (failed(run(getOperation())))
      signalPassFailure();
  }

  /// Limits \p c to what `trainer` runs as planned.
  LogicalResult restrictToTrainer(ModuleOp module, search::Constraints &c) {
    llvm::Expected<exporting::TrainerSpec> spec =
        exporting::parseTrainerSpec(trainer);
    if (!spec)
      return emitError(module.getLoc())
             << "bad --dist-export='" << trainer
             << "': " << llvm::toString(spec.takeError());
    exporting::TrainerSpace space = exporting::trainerSpace(spec->trainer);
    std::string runs;
    for (schedule::ScheduleKind k : space.schedules)
      runs += (runs.empty() ? "" : "|") + schedule::scheduleName(k).str();
    if (c.schedules.empty()) {
      c.schedules = space.schedules;
    } else {
      llvm::erase_if(c.schedules, [&](schedule::ScheduleKind k) {
        return !llvm::is_contained(space.schedules, k);
      });
      if (c.schedules.empty())
        return emitError(module.getLoc())
               << "--dist-search allows no schedule "
               << exporting::trainerName(spec->trainer)
               << " runs (--dist-export): it runs schedule=" << runs;
    }
    c.uniformReplicas = true;
    // The exported configurations keep every state on the device.
    c.offload = {cost::Offload{}};
    if (space.maxChunks)
      c.chunks.max = std::min(c.chunks.max, space.maxChunks);
    if (space.maxCp)
      c.cp.max = std::min(c.cp.max, space.maxCp);
    std::string zero;
    if (!space.zero.empty()) {
      std::vector<unsigned> allowed;
      for (unsigned z : space.zero)
        if (c.zero.allows(z))
          allowed.push_back(z);
      if (allowed.empty())
        return emitError(module.getLoc())
               << "--dist-search allows no ZeRO stage "
               << exporting::trainerName(spec->trainer)
               << " runs as planned (--dist-export)";
      c.zero.only = allowed;
      for (unsigned z : allowed)
        zero += (zero.empty() ? ", zero=" : "|") + std::to_string(z);
    }
    if (summary)
      llvm::outs() << "search: only plans "
                   << exporting::trainerName(spec->trainer)
                   << " runs as planned (--dist-export): schedule=" << runs
                   << ", replicas=uniform, offload=none"
                   << (space.maxChunks
                           ? ", chunks<=" + std::to_string(space.maxChunks)
                           : std::string())
                   << (space.maxCp ? ", cp<=" + std::to_string(space.maxCp)
                                   : std::string())
                   << zero << "\n";
    return success();
  }

  /// Time to accuracy (the best global batch) or a tuning run (the best
  /// plan of every trial), by the options; the errors name the flags.
  llvm::Error runTuning(const cost::ModelDesc &model,
                        const cluster::Cluster &cluster,
                        const cost::CostModel &cm,
                        const search::SearchOptions &so, const Costing &costing,
                        std::optional<search::TimeToAccuracyResult> &tta,
                        std::optional<search::TuneResult> &tuned) {
    auto number = [](llvm::StringRef flag,
                     llvm::StringRef text) -> llvm::Expected<double> {
      double v = 0;
      if (text.empty())
        return 0.0;
      if (!llvm::to_float(text, v))
        return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                       "bad " + flag + "='" + text +
                                           "': expected a number");
      return v;
    };
    std::optional<search::StatEfficiency> eff;
    if (timeToAccuracy || !noiseScale.empty() || !targetExamples.empty() ||
        !targetSteps.empty()) {
      llvm::Expected<double> b = number("--dist-noise-scale", noiseScale);
      if (!b)
        return b.takeError();
      llvm::Expected<double> e =
          number("--dist-target-examples", targetExamples);
      if (!e)
        return e.takeError();
      llvm::Expected<double> st = number("--dist-target-steps", targetSteps);
      if (!st)
        return st.takeError();
      llvm::Expected<search::StatEfficiency> made =
          search::makeStatEfficiency(*b, *e, *st);
      if (!made)
        return made.takeError();
      eff = *made;
    }
    if (timeToAccuracy) {
      std::vector<unsigned> list;
      if (batches.empty()) {
        unsigned devices = so.devices ? so.devices : cluster.numDevices();
        list = search::defaultBatches(devices, eff->noiseScale);
      } else {
        llvm::Expected<std::vector<unsigned>> parsed =
            search::parseBatchList(batches);
        if (!parsed)
          return parsed.takeError();
        list = std::move(*parsed);
      }
      llvm::Expected<search::TimeToAccuracyResult> r =
          search::searchTimeToAccuracy(model, cluster, cm, so, *eff, list);
      if (!r)
        return r.takeError();
      tta = std::move(*r);
      return llvm::Error::success();
    }
    llvm::Expected<std::vector<search::Trial>> trials =
        search::parseTrials(tune);
    if (!trials)
      return trials.takeError();
    std::optional<schedule::Plan> fixed;
    if (!tuneFixed.empty()) {
      llvm::Expected<schedule::Plan> p = schedule::parsePlan(tuneFixed);
      if (!p)
        return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                       "bad --dist-tune-fixed='" + tuneFixed +
                                           "': " + toString(p.takeError()));
      p->mode = schedule::Mode::Train;
      costing.applyTo(*p);
      fixed = std::move(*p);
    }
    llvm::Expected<search::TuneResult> r =
        search::tuneTrials(model, cluster, cm, so, *trials, eff, fixed);
    if (!r)
      return r.takeError();
    tuned = std::move(*r);
    return llvm::Error::success();
  }

  /// Under preemptions the search keeps a wider field of plans to rank by
  /// their expected throughput; redundant computation needs uniform plans
  /// with pp >= 2.
  LogicalResult constrainForResilience(ModuleOp module,
                                       const ResilienceChoice &choice,
                                       search::SearchOptions &so) {
    if (!choice.enabled())
      return success();
    if (mode != schedule::Mode::Train)
      return emitError(module.getLoc())
             << "--dist-resilience plans training on preemptible nodes; an "
                "inference plan has no training state to protect: drop it";
    so.alternatives = std::max(so.alternatives, kResiliencePool - 1);
    if (choice.mode != sim::Resilience::Redundant)
      return success();
    search::IntRange &pp = so.constraints.pp;
    pp.min = std::max(pp.min, 2u);
    if (pp.empty())
      return emitError(module.getLoc())
             << "--dist-resilience=redundant needs pipeline parallelism (each "
                "stage keeps its successor's layers), and --dist-search "
                "allows no pp >= 2: allow pp>=2";
    so.constraints.uniformReplicas = true;
    return success();
  }

  /// Ranks the search's best plans by their expected throughput under
  /// preemptions: the best becomes result.best, the next ones its
  /// alternatives. The report of the new best (with the injection).
  /// Elastic plans resume on the survivors: \p survivors gives the
  /// iteration time there.
  FailureOr<sim::ResilienceReport> rankByResilience(
      ModuleOp module, const ResilienceChoice &choice,
      const cluster::Cluster &cluster, double memoryLimit,
      search::SearchResult &result,
      llvm::function_ref<FailureOr<double>(const schedule::Plan &)> survivors) {
    std::vector<search::Candidate> pool;
    pool.push_back(std::move(result.best));
    for (search::Candidate &c : result.alternatives)
      pool.push_back(std::move(c));
    std::vector<std::pair<double, unsigned>> ranked;
    std::vector<double> survivorTimes(pool.size(), 0);
    std::string problem;
    for (auto [i, c] : llvm::enumerate(pool)) {
      sim::ResilienceInputs in =
          sim::resilienceInputs(c.sim, cluster, memoryLimit);
      if (choice.mode == sim::Resilience::Redundant && !in.redundantPossible) {
        if (problem.empty())
          problem = c.sim.plan.str() + ": " + in.redundantProblem;
        continue;
      }
      if (choice.mode == sim::Resilience::Elastic) {
        FailureOr<double> t = survivors(c.sim.plan);
        if (failed(t))
          return failure();
        in.survivorIterationTime = survivorTimes[i] = *t;
      }
      sim::ResilienceEstimate e =
          sim::estimateResilience(in, *cluster.availability, choice.mode);
      ranked.push_back({e.expectedSamplesPerSecond, unsigned(i)});
    }
    if (ranked.empty())
      return emitError(module.getLoc())
             << "--dist-resilience=redundant: none of the " << pool.size()
             << " best plans of the search can keep a copy of its "
                "successor's stage; the first: "
             << problem;
    llvm::stable_sort(ranked,
                      [](auto &a, auto &b) { return a.first > b.first; });
    rankedNote = llvm::formatv(
        "resilience: the search's {0} best plans ranked by expected "
        "samples/s under preemptions ({1}); {2} could run so\n",
        pool.size(), sim::resilienceName(choice.mode), ranked.size());
    result.best = std::move(pool[ranked.front().second]);
    result.alternatives.clear();
    result.rankedByOverride = ("expected samples/s under preemptions (" +
                               sim::resilienceName(choice.mode) + ")")
                                  .str();
    result.expectedSamplesPerSecond = {ranked.front().first};
    for (unsigned k = 1; k < ranked.size() && k <= alternatives; ++k) {
      result.alternatives.push_back(std::move(pool[ranked[k].second]));
      result.expectedSamplesPerSecond.push_back(ranked[k].first);
    }
    return planResilience(module, result.best, cluster, choice, memoryLimit,
                          survivorTimes[ranked.front().second]);
  }

  /// What rankByResilience did, for the summary.
  std::string rankedNote;

  /// --dist-branches: the placement of the model's branches for one
  /// batch's latency against one device and the best chain partition (the
  /// plan search under the latency objective); records the faster.
  LogicalResult planBranches(ModuleOp module, PlanningInputs &in,
                             const cost::CostModel &cm,
                             search::SearchOptions so, const Costing &costing) {
    const cluster::Cluster &cluster = in.machine.cluster;
    so.objective = schedule::InferObjective::Latency;
    if (!reportHtml.empty())
      return emitError(module.getLoc())
             << "--dist-report-html draws a chain plan's schedule; a branch "
                "placement is reported in the JSON report (--dist-report)";
    FailureOr<BranchSplit> split = findBranches(in.func);
    if (failed(split))
      return failure();
    auto pieces = branchModel(in.func, *split, costing);
    if (failed(pieces))
      return failure();
    llvm::Expected<search::BranchResult> br =
        search::searchBranches(pieces->first, pieces->second, cluster, cm, so);
    if (!br)
      return emitError(module.getLoc())
             << "--dist-branches: " << llvm::toString(br.takeError());
    llvm::Expected<search::SearchResult> chain =
        search::searchPlan(in.model, cluster, cm, so);
    if (chain) {
      br->chainLatency = chain->best.latency;
      br->chainPlan = chain->best.sim.plan.str();
    } else {
      br->chainProblem = llvm::toString(chain.takeError());
    }
    br->recorded = !chain || br->best.latency < chain->best.latency;
    if (summary)
      search::printBranches(*br, cluster, llvm::outs());
    if (explain && chain)
      search::printExplain(*chain, llvm::outs());
    if (br->recorded) {
      schedule::Plan p = so.planDefaults;
      p.globalBatch = so.globalBatch;
      costing.applyTo(p);
      recordBranches(module, in.func, *split, br->best, p);
    } else {
      schedule::Plan best = chain->best.sim.plan;
      best.mode = schedule::Mode::Infer;
      best.objective = schedule::InferObjective::Latency;
      costing.applyTo(best);
      recordPlan(module, best, in.ops);
    }
    if (report.empty())
      return success();
    return writeFile(module, report, "report", [&](llvm::raw_ostream &os) {
      llvm::json::Value v =
          chain
              ? search::toJSON(search::searchReport(*chain, in.model, cluster))
              : llvm::json::Value(llvm::json::Object{});
      (*v.getAsObject())["branches"] = search::toJSON(*br, cluster);
      os << llvm::formatv("{0:2}", v) << "\n";
    });
  }

  LogicalResult run(ModuleOp module) {
    Costing costing{dtype, fusedAttention, optimizer};
    std::optional<exporting::ImportedPlan> base;
    unsigned globalBatch = batch;
    if (!baseline.empty()) {
      // The search costs the model as the baseline runs it (precision,
      // attention kernel) and takes its global batch.
      FailureOr<exporting::ImportedPlan> imported =
          readTrainerPlan(module, baseline, costing, batch, "dist-search-plan");
      if (failed(imported))
        return failure();
      base = std::move(*imported);
      costing = Costing::of(base->plan);
      globalBatch = base->globalBatch;
    }
    bool tuning = timeToAccuracy || !tune.empty();
    if (globalBatch == 0 && !tuning)
      return emitError(module.getLoc())
             << "--dist-search needs the global batch in samples: pass "
                "--dist-batch=N (batch=N)";
    search::SearchOptions so;
    so.globalBatch = globalBatch;
    so.allowAsync = allowAsync;
    so.alternatives = alternatives;
    so.devices = devices;
    // Better on the same machines: the search gets the devices the
    // baseline runs on (unless devices= says otherwise).
    if (base && !devices)
      so.devices = static_cast<unsigned>(base->plan.numDevices());
    so.mode = mode;
    so.objective = objective;
    costing.applyTo(so.planDefaults);
    so.memory = costing.memory();
    if (!memoryLimit.empty()) {
      llvm::Expected<double> limit = cost::parseByteSize(memoryLimit);
      if (!limit)
        return emitError(module.getLoc())
               << "bad --dist-memory-limit='" << memoryLimit
               << "': " << llvm::toString(limit.takeError());
      so.memoryLimit = *limit;
    }
    llvm::Expected<search::Constraints> parsed =
        search::parseConstraints(constraints, baseConstraints);
    if (!parsed)
      return emitError(module.getLoc()) << llvm::toString(parsed.takeError());
    so.constraints = std::move(*parsed);
    if (!trainer.empty() && failed(restrictToTrainer(module, so.constraints)))
      return failure();

    FailureOr<PlanningInputs> in =
        planningInputs(module, costing, "dist-search-plan");
    if (failed(in))
      return failure();
    planning::ExpertDims experts = planning::expertDims(in->func);
    so.expertSlots = experts.slots;
    so.expertFeatures = experts.features;
    cost::CostModel cm = in->machine.costModel(costing);
    if (branches)
      return planBranches(module, *in, cm, so, costing);
    FailureOr<cluster::RelaunchCost> relaunchCost =
        relaunchChoice(module, in->machine.cluster, relaunch);
    if (failed(relaunchCost))
      return failure();
    FailureOr<ResilienceChoice> choice =
        resilienceChoice(module, in->machine.cluster, resilience, preemptions);
    if (failed(choice) || failed(constrainForResilience(module, *choice, so)))
      return failure();
    FailureOr<std::optional<sim::InputSpec>> inputSpec =
        inputChoice(module, in->machine.cluster, input, mode);
    if (failed(inputSpec))
      return failure();
    so.input = *inputSpec;
    std::optional<schedule::Plan> running;
    if (!replan.empty()) {
      FailureOr<schedule::Plan> p =
          readRunningPlan(module, replan, in->model, in->machine.cluster, cm,
                          costing, mode, objective);
      if (failed(p))
        return failure();
      running = std::move(*p);
    }

    bool shown = false;
    so.progress = progressLine(progress,
                               timeToAccuracy ? "batches"
                               : tune.empty() ? "ordered candidates"
                                              : "trials",
                               shown);
    // A plan for a trainer starts its stages at whole transformer blocks:
    // the search sees one layer per block, and its cuts are mapped back.
    std::vector<unsigned> firstLayer;
    std::optional<cost::ModelDesc> byBlocks;
    if (!trainer.empty()) {
      exporting::Blocks blocks = exporting::Blocks::of(in->model);
      if (blocks.size())
        byBlocks = exporting::modelByBlocks(in->model, blocks, firstLayer);
    }
    const cost::ModelDesc &planned = byBlocks ? *byBlocks : in->model;
    std::optional<search::TimeToAccuracyResult> tta;
    std::optional<search::TuneResult> tuned;
    llvm::Expected<search::SearchResult> result =
        [&]() -> llvm::Expected<search::SearchResult> {
      if (!tuning)
        return search::searchPlan(planned, in->machine.cluster, cm, so);
      llvm::Error err =
          runTuning(planned, in->machine.cluster, cm, so, costing, tta, tuned);
      if (err)
        return std::move(err);
      return tta ? tta->winner() : tuned->trials.front().best;
    }();
    if (result && byBlocks) {
      auto remap = [&](search::Candidate &c) {
        for (unsigned &cut : c.sim.plan.cuts)
          cut = firstLayer[cut];
        for (schedule::StageCost &st : c.sim.costs.stages) {
          st.layerBegin = firstLayer[st.layerBegin];
          st.layerEnd = firstLayer[st.layerEnd];
        }
      };
      remap(result->best);
      for (search::Candidate &c : result->alternatives)
        remap(c);
    }
    if (shown && llvm::errs().is_displayed())
      llvm::errs() << "\n";
    if (!result)
      return emitError(module.getLoc()) << llvm::toString(result.takeError());
    std::optional<sim::ResilienceReport> resilient;
    if (choice->enabled()) {
      // The survivors' best plan, once per device count.
      std::map<unsigned, double> survivorTimes;
      auto survivors = [&](const schedule::Plan &p) -> FailureOr<double> {
        auto [it, fresh] = survivorTimes.try_emplace(p.numDevices(), 0.0);
        if (fresh) {
          FailureOr<double> t = survivorIterationTime(
              module, planned, in->machine.cluster, cm, so, p);
          if (failed(t))
            return failure();
          it->second = *t;
        }
        return it->second;
      };
      FailureOr<sim::ResilienceReport> r =
          rankByResilience(module, *choice, in->machine.cluster, so.memoryLimit,
                           *result, survivors);
      if (failed(r))
        return failure();
      resilient = std::move(*r);
    } else if (in->machine.cluster.availability &&
               mode == schedule::Mode::Train) {
      // On a cluster with prices, the on-demand cost per sample.
      FailureOr<sim::ResilienceReport> r = planResilience(
          module, result->best, in->machine.cluster, *choice, so.memoryLimit);
      if (failed(r))
        return failure();
      resilient = std::move(*r);
    }

    std::optional<sim::MigrationReport> migration;
    if (running) {
      search::Candidate next = result->best;
      next.sim.plan.mode = mode;
      next.sim.plan.objective = objective;
      FailureOr<sim::MigrationReport> m =
          planReplan(module, *running, next, in->model, in->machine.cluster, cm,
                     so, *relaunchCost);
      if (failed(m))
        return failure();
      migration = std::move(*m);
    }

    std::optional<search::Candidate> baseCand;
    if (base) {
      schedule::Plan p = base->plan;
      p.mode = mode;
      p.objective = objective;
      if (llvm::Error err = schedule::finalizePlan(
              p, in->model, in->machine.cluster, globalBatch, cm))
        return emitError(module.getLoc())
               << baseline << ": " << llvm::toString(std::move(err));
      llvm::Expected<search::Candidate> c =
          search::evaluatePlan(in->model, in->machine.cluster, cm, p, so);
      if (!c)
        return emitError(module.getLoc())
               << baseline << ": " << llvm::toString(c.takeError());
      baseCand = std::move(*c);
    }
    if (summary && tta)
      search::printTimeToAccuracy(*tta, llvm::outs());
    if (summary && tuned) {
      search::printTune(*tuned, llvm::outs());
      llvm::outs() << "recorded: the best plan of trial 1 (batch "
                   << tuned->trials.front().trial.batch << ")\n";
    }
    if (summary) {
      search::printSearchSummary(*result, in->machine.cluster, llvm::outs());
      if (resilient) {
        llvm::outs() << rankedNote;
        sim::printResilience(*resilient, llvm::outs());
      }
      if (migration)
        sim::printMigration(*migration, llvm::outs());
    }
    if (baseCand)
      printBaseline(baseline, mode, objective, *baseCand, result->best,
                    llvm::outs());
    if (explain)
      search::printExplain(*result, llvm::outs());
    schedule::Plan best = result->best.sim.plan;
    best.mode = mode;
    best.objective = objective;
    costing.applyTo(best);
    recordPlan(module, best, in->ops);
    search::Report data =
        search::searchReport(*result, in->model, in->machine.cluster);
    if (baseCand) {
      data.baseline = search::candidateReport(*baseCand, in->model);
      data.baselineSource = baseline;
    }
    data.resilience = resilient;
    data.replan = migration;
    if (!report.empty() &&
        failed(writeFile(module, report, "report", [&](llvm::raw_ostream &os) {
          llvm::json::Value v = search::toJSON(data);
          if (tta)
            (*v.getAsObject())["time_to_accuracy"] = search::toJSON(*tta);
          if (tuned)
            (*v.getAsObject())["tune"] = search::toJSON(*tuned);
          os << llvm::formatv("{0:2}", v) << "\n";
        })))
      return failure();
    if (!reportHtml.empty()) {
      // The search simulates without recording events: the timeline is
      // the same simulation of the winner's schedule and costs, recorded.
      std::optional<sim::SimResult> timeline;
      if (mode == schedule::Mode::Train) {
        llvm::Expected<sim::SimResult> r =
            sim::simulate(result->best.sim.schedule, result->best.sim.costs);
        if (!r)
          return emitError(module.getLoc()) << llvm::toString(r.takeError());
        timeline = std::move(*r);
      }
      if (failed(writeFile(module, reportHtml, "HTML report",
                           [&](llvm::raw_ostream &os) {
                             search::writeHtmlReport(
                                 data, timeline ? &*timeline : nullptr, os);
                           })))
        return failure();
    }
    return success();
  }
};
} // namespace
