//===- ToolFlags.cpp - The command-line spellings of the pipelines -*- C++ -*-//
//
// Part of DistOpt.
//
//===----------------------------------------------------------------------===//
#include "tools/Init/ToolFlags.h"

#include "lib/Cluster/Cluster.h"
#include "passes/Passes.h"

using namespace mlir;
using namespace distopt;

bool ImportFlags::get(ONNXImportOptions &options, std::string &error) const {
  for (const std::string &spec : inputShapes) {
    std::string problem;
    if (!parseInputShapeSpec(spec, options, problem)) {
      error = "malformed --input-shape='" + spec + "': " + problem;
      return false;
    }
  }
  for (const std::string &spec : inputValues) {
    std::string problem;
    if (!parseInputValueSpec(spec, options, problem)) {
      error = "malformed --input-value='" + spec + "': " + problem;
      return false;
    }
  }
  if (weights == "reference") {
    options.weights = WeightPolicy::Reference;
  } else if (weights == "ignore") {
    options.weights = WeightPolicy::Ignore;
  } else {
    error = "unknown --dist-weights='" + weights +
            "': expected 'reference' or 'ignore'";
    return false;
  }
  if (defaultBatch < 1) {
    error = "--default-batch must be at least 1, got " +
            std::to_string(defaultBatch);
    return false;
  }
  options.defaultBatch = defaultBatch;
  return true;
}

bool PlanFlags::any() const {
  return !cluster.empty() || !plan.empty() || printModel ||
         !report.empty() || !trace.empty() || !timeline.empty() ||
         search.getNumOccurrences() > 0 || explain || stageRegions ||
         devices;
}

/// The passes of \p pm named \p argument (top level: the planning passes
/// run on the module).
SmallVector<Pass *> distopt::passesNamed(OpPassManager &pm,
                                         StringRef argument) {
  SmallVector<Pass *> found;
  for (Pass &pass : pm.getPasses())
    if (pass.getArgument() == argument)
      found.push_back(&pass);
  return found;
}

/// `key="value"` for a pass's option string.
static std::string quoted(StringRef key, StringRef value) {
  return (key + "=\"" + value + "\"").str();
}

bool PlanFlags::addPasses(OpPassManager &pm, bool simulatorNamed,
                          std::string &error) const {
  schedule::Mode m;
  schedule::InferObjective o;
  SearchProgress p;
  cluster::DType t;
  if (!parseModeName(mode, m)) {
    error = "unknown --dist-mode='" + mode + "': expected train or infer";
    return false;
  }
  if (!parseObjectiveName(objective, o)) {
    error = "unknown --dist-objective='" + objective +
            "': expected throughput or latency";
    return false;
  }
  if (!parseProgressName(progress, p)) {
    error = "unknown --dist-progress='" + progress +
            "': expected auto, always or never";
    return false;
  }
  if (!cluster::parseDType(dtype, t)) {
    error = "unknown --dist-dtype='" + dtype +
            "': expected f32, tf32, f16, bf16 or f8";
    return false;
  }
  bool searching = search.getNumOccurrences() > 0;
  if (searching && !plan.empty()) {
    error = "give either --dist-plan (simulate that plan) or --dist-search "
            "(find one), not both";
    return false;
  }
  if (explain && !searching) {
    error = "--dist-explain explains a search; add --dist-search";
    return false;
  }
  if (devices && !searching) {
    error = "--dist-devices limits the search; add --dist-search (a "
            "--dist-plan uses its dp*tp*cp*pp devices, the first ones)";
    return false;
  }
  if (stageRegions && !searching && plan.empty()) {
    error = "--dist-stage-regions writes the stages of a plan: add "
            "--dist-plan=... or --dist-search";
    return false;
  }
  if (m == schedule::Mode::Infer && (!trace.empty() || !timeline.empty())) {
    error = "--dist-trace and --dist-timeline draw training schedules; drop "
            "them with --dist-mode=infer";
    return false;
  }
  if (searching || !plan.empty()) {
    if (plan.empty() && batch == 0) {
      error = "--dist-search needs the global batch in samples: pass "
              "--dist-batch=N";
      return false;
    }
    PlanOptions options;
    options.cluster = cluster;
    options.profile = profile;
    options.plan = plan;
    options.batch = batch;
    options.constraints = search;
    options.memoryLimit = memoryLimit;
    options.allowAsync = allowAsync;
    options.alternatives = alternatives;
    options.devices = devices;
    options.checkCompilable = checkCompilable;
    options.mode = mode;
    options.objective = objective;
    options.dtype = dtype;
    options.fusedAttention = fusedAttention;
    options.printLayers = printModel;
    options.summary = true;
    options.explain = explain;
    options.progress = progress;
    // --dist-plan has always printed its prediction; a --dist-simulate on
    // the command line does it (with the report, trace and timeline) then.
    if (!simulatorNamed) {
      options.simulate = !plan.empty();
      options.report = report;
      options.trace = trace;
      options.timeline = timeline;
    } else if (plan.empty()) {
      options.report = report;
    }
    options.stages = stageRegions ? "regions" : "none";
    return succeeded(buildPlanPipeline(pm, options, error));
  }
  if (!cluster.empty()) {
    AttachClusterPassOptions attach;
    attach.cluster = cluster;
    attach.profile = profile;
    pm.addPass(createAttachClusterPass(attach));
  }
  if (printModel) {
    AnnotateLayersPassOptions annotate;
    annotate.print = true;
    pm.addPass(createAnnotateLayersPass(annotate));
  }
  if (!simulatorNamed &&
      (!report.empty() || !trace.empty() || !timeline.empty())) {
    SimulatePassOptions sim;
    sim.report = report;
    sim.trace = trace;
    sim.timeline = timeline;
    pm.addPass(createSimulatePass(sim));
  }
  return true;
}

bool PlanFlags::configure(OpPassManager &pm, std::string &error) const {
  std::string options;
  if (!report.empty())
    options += quoted("report", report) + " ";
  if (!trace.empty())
    options += quoted("trace", trace) + " ";
  if (!timeline.empty())
    options += quoted("timeline", timeline);
  if (options.empty())
    return true;
  for (Pass *pass : passesNamed(pm, "dist-simulate"))
    if (failed(pass->initializeOptions(options, [&](const Twine &msg) {
          error = msg.str();
          return failure();
        })))
      return false;
  return true;
}

bool TrainFlags::apply(OpPassManager &pm, std::string &error) const {
  if (loss.empty())
    return true;
  std::string options = quoted("default-loss", loss);
  for (Pass *pass : passesNamed(pm, "dist-autodiff"))
    if (failed(pass->initializeOptions(options, [&](const Twine &msg) {
          error = msg.str();
          return failure();
        })))
      return false;
  return true;
}
