//===- Replan.cpp - Re-planning a running job -------------------*- C++ -*-===//
//
// Part of DistOpt. --dist-replan of dist-set-plan's simulation and
// dist-search-plan: the running plan read back from its JSON report and
// checked against the model and the (changed) cluster, and the migration
// from it to the new plan (docs/resilience.md, "Re-planning").
//
//===----------------------------------------------------------------------===//
#include "passes/Planning/Planning.h"

#include "lib/Sim/Report.h"
#include "lib/Support/JSONFile.h"

#include <cmath>

using namespace mlir;
using namespace distopt;
using namespace distopt::planning;

static const char *const kReportHint =
    "give the JSON report dist-opt wrote for the running plan "
    "(--dist-report=FILE)";

FailureOr<schedule::Plan> planning::readRunningPlan(
    ModuleOp module, StringRef path, const cost::ModelDesc &model,
    const cluster::Cluster &cluster, const cost::CostModel &cm,
    const Costing &costing, schedule::Mode mode,
    schedule::InferObjective objective) {
  auto fail = [&]() {
    return emitError(module.getLoc()) << "--dist-replan: '" << path << "' ";
  };
  llvm::Expected<llvm::json::Value> parsed =
      readJSONFile(path, "--dist-replan");
  if (!parsed)
    return emitError(module.getLoc())
           << llvm::toString(parsed.takeError()) << "; " << kReportHint;
  const llvm::json::Object *root = parsed->getAsObject();
  const llvm::json::Object *plan = root ? root->getObject("plan") : nullptr;
  std::optional<StringRef> spec = plan ? plan->getString("spec") : std::nullopt;
  std::optional<int64_t> batch =
      plan ? plan->getInteger("global_batch") : std::nullopt;
  const llvm::json::Array *stages = plan ? plan->getArray("stages") : nullptr;
  if (!spec || !batch || *batch <= 0 || !stages)
    return fail() << "is not a dist-opt plan report: it lacks plan.spec, "
                     "plan.global_batch or plan.stages "
                     "(docs/report-format.md); "
                  << kReportHint;

  // The running plan must be of this model: same layers (count and
  // names), same parameters.
  unsigned numLayers = model.layers.size();
  int64_t maxEnd = 0;
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (const llvm::json::Value &v : *stages) {
    const llvm::json::Object *st = v.getAsObject();
    const llvm::json::Array *layers = st ? st->getArray("layers") : nullptr;
    std::optional<int64_t> b = layers && layers->size() == 2
                                   ? (*layers)[0].getAsInteger()
                                   : std::nullopt;
    std::optional<int64_t> e = layers && layers->size() == 2
                                   ? (*layers)[1].getAsInteger()
                                   : std::nullopt;
    if (!b || !e || *b < 0 || *e < *b)
      return fail() << "has a plan.stages entry without a layer range "
                       "[begin, end); "
                    << kReportHint;
    maxEnd = std::max(maxEnd, *e);
    ranges.push_back({*b, *e});
  }
  if (maxEnd != int64_t(numLayers))
    return fail() << "plans a model of " << maxEnd
                  << " layers, and this one has " << numLayers
                  << ": it is the report of another model; give the running "
                     "plan's report for this model";
  for (auto [v, range] : llvm::zip(*stages, ranges)) {
    auto [b, e] = range;
    const llvm::json::Array *names = v.getAsObject()->getArray("layer_names");
    if (e == b || !names || names->size() != 2)
      continue;
    std::optional<StringRef> first = (*names)[0].getAsString();
    std::optional<StringRef> last = (*names)[1].getAsString();
    if (first != StringRef(model.layers[b].name) ||
        last != StringRef(model.layers[e - 1].name))
      return fail() << "names layers " << b << ".." << e - 1 << " '"
                    << first.value_or("?") << "'..'" << last.value_or("?")
                    << "', and this model's are '" << model.layers[b].name
                    << "'..'" << model.layers[e - 1].name
                    << "': it is the report of another model; give the "
                       "running plan's report for this model";
  }
  if (std::optional<double> params = root->getNumber("model_params")) {
    double have = model.paramCount();
    if (std::abs(*params - have) > 1e-9 * std::max(have, 1.0))
      return fail() << "was planned for a model of " << *params
                    << " parameters, and this one has " << have
                    << ": give the running plan's report for this model";
  }
  std::optional<StringRef> kind = plan->getString("schedule");
  std::optional<StringRef> modeName = root->getString("mode");
  bool runningInfers =
      modeName ? *modeName == "infer" : kind && *kind == "forward-stream";
  if (runningInfers != (mode == schedule::Mode::Infer))
    return fail() << "holds " << (runningInfers ? "an inference" : "a training")
                  << " plan, and this run plans "
                  << (runningInfers ? "training" : "inference") << ": "
                  << (runningInfers ? "add" : "drop") << " --dist-mode=infer";

  llvm::Expected<schedule::Plan> p = schedule::parsePlan(*spec);
  if (!p)
    return fail() << "has plan.spec '" << *spec
                  << "' that does not parse: " << llvm::toString(p.takeError());
  if (p->numDevices() > cluster.numDevices())
    return fail() << "runs " << *spec << " on " << p->numDevices()
                  << " devices, and cluster '" << cluster.name << "' has "
                  << cluster.numDevices()
                  << ": --dist-replan moves a running plan to a new one on "
                     "the same devices; give the changed cluster with all of "
                     "the running plan's devices";
  p->mode = mode;
  p->objective = objective;
  costing.applyTo(*p);
  if (llvm::Error err =
          schedule::finalizePlan(*p, model, cluster, unsigned(*batch), cm))
    return fail() << "runs " << *spec << ", which cluster '" << cluster.name
                  << "' cannot place: " << llvm::toString(std::move(err));
  std::string problem = sim::migrationProblem(*p);
  if (!problem.empty())
    return fail() << "runs " << *spec
                  << ", which cannot be migrated: " << problem;
  return *p;
}

/// Samples/s of \p c as its objective counts them.
static double deliveredRate(const search::Candidate &c) {
  const schedule::Plan &p = c.sim.plan;
  if (p.mode == schedule::Mode::Train)
    return c.sim.result.samplesPerSecond;
  if (p.objective == schedule::InferObjective::Latency)
    return c.latency > 0 ? p.globalBatch / c.latency : 0;
  return c.streamThroughput;
}

FailureOr<sim::MigrationReport> planning::planReplan(
    ModuleOp module, const schedule::Plan &running,
    const search::Candidate &next, const cost::ModelDesc &model,
    const cluster::Cluster &cluster, const cost::CostModel &cm,
    const search::SearchOptions &so, const cluster::RelaunchCost &relaunch) {
  llvm::Expected<search::Candidate> kept =
      search::evaluatePlan(model, cluster, cm, running, so);
  if (!kept)
    return emitError(module.getLoc())
           << "--dist-replan: the running plan " << running.str()
           << " on cluster '" << cluster.name
           << "': " << llvm::toString(kept.takeError());
  sim::MigrationInputs in;
  in.running = running;
  in.next = next.sim.plan;
  in.training = running.mode == schedule::Mode::Train;
  cost::MemoryBreakdown perParam = cost::staticMemory(1, so.memory);
  in.bytesPerParam = perParam.weights + (in.training ? perParam.optimizer : 0);
  in.runningPeakPerDevice =
      sim::planReport(kept->sim.plan, model, kept->sim.costs, kept->sim.result)
          .peakMemoryPerDevice;
  in.memoryLimit = so.memoryLimit;
  in.runningLatency = kept->latency;
  in.nextLatency = next.latency;
  in.runningSamplesPerSecond = deliveredRate(*kept);
  in.nextSamplesPerSecond = deliveredRate(next);
  in.relaunch = relaunch;
  if (!in.training)
    in.runningCosts = kept->sim.costs;
  llvm::Expected<sim::MigrationReport> r =
      sim::planMigration(in, model, cluster);
  if (!r)
    return emitError(module.getLoc())
           << "--dist-replan: " << llvm::toString(r.takeError())
           << "; give a plan that can be (--dist-plan, or --dist-search with "
              "zero=0 and ep=1)";
  return std::move(*r);
}

FailureOr<cluster::RelaunchCost>
planning::relaunchChoice(ModuleOp module, cluster::Cluster &cluster,
                         StringRef path) {
  std::optional<double> recorded;
  if (!path.empty()) {
    llvm::Expected<double> r = cluster::readRecordedRelaunch(path);
    if (!r)
      return emitError(module.getLoc()) << llvm::toString(r.takeError());
    recorded = *r;
  }
  cluster::RelaunchCost cost = cluster::relaunchCost(cluster, recorded, path);
  if (recorded && cluster.availability &&
      !cluster.availability->relaunchSeconds)
    cluster.availability->relaunchSeconds = *recorded;
  return cost;
}
