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
  for (const std::string &spec : inputDims) {
    std::string problem;
    if (!parseInputDimSpec(spec, options, problem)) {
      error = "malformed --input-dim='" + spec + "': " + problem;
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

PlanFlags::PlanFlags()
    : options(/*flagsOnly=*/true,
              [this](const PlanOptionSpec &spec, auto init) {
                return std::make_unique<Flag<decltype(init)>>(
                    llvm::StringRef(spec.flag), llvm::cl::desc(spec.help),
                    llvm::cl::init(init), llvm::cl::cat(category));
              }) {
  // A bare --dist-search searches without constraints.
  options.find(&PlanOptions::constraints)
      ->setValueExpectedFlag(llvm::cl::ValueOptional);
  options.find(&PlanOptions::constraints)->setValueStr("constraints");
  // On a terminal, the search shows its progress.
  options.find(&PlanOptions::progress)->setInitialValue("auto");
}

PlanOptions PlanFlags::values() const {
  PlanOptions o;
  options.get(o);
  o.checkCompilable = checkCompilable;
  o.baseConstraints = baseConstraints;
  return o;
}

bool PlanFlags::searching() const {
  return options.find(&PlanOptions::constraints)->getNumOccurrences() > 0;
}

bool PlanFlags::any() const {
  PlanOptions o = values();
  return !o.cluster.empty() || !o.plan.empty() || !o.planFrom.empty() ||
         !o.exportTo.empty() || o.printLayers || !o.report.empty() ||
         !o.reportHtml.empty() || !o.trace.empty() || !o.timeline.empty() ||
         searching() || o.explain || stageRegions || o.devices ||
         !o.replan.empty() || !o.relaunch.empty();
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

bool distopt::initializePassOptions(Pass &pass, StringRef text,
                                    std::string &error) {
  return succeeded(pass.initializeOptions(text, [&](const Twine &msg) {
    error = msg.str();
    return failure();
  }));
}

/// `key="value"` for a pass's option string.
static std::string quoted(StringRef key, StringRef value) {
  return (key + "=\"" + value + "\"").str();
}

bool PlanFlags::addPasses(OpPassManager &pm, bool simulatorNamed,
                          std::string &error) const {
  PlanOptions o = values();
  if (!checkPlanOptions(o, PlanOptionSpelling::Flag, error))
    return false;
  bool search = searching();
  // With a search, a trainer's configuration is the baseline it is
  // compared with.
  if (search && !o.planFrom.empty()) {
    o.baseline = o.planFrom;
    o.planFrom.clear();
  }
  bool given = !o.plan.empty() || !o.planFrom.empty();
  if (search && !o.plan.empty()) {
    error = "give either --dist-plan (simulate that plan) or --dist-search "
            "(find one), not both";
    return false;
  }
  if (o.explain && !search) {
    error = "--dist-explain explains a search; add --dist-search";
    return false;
  }
  if (o.devices && !search) {
    error = "--dist-devices limits the search; add --dist-search (a "
            "--dist-plan uses its dp*tp*cp*pp devices, the first ones)";
    return false;
  }
  if (!o.input.empty() && !search && !given && !simulatorNamed) {
    error = "--dist-input predicts the data stall of a training plan: add "
            "--dist-plan=... or --dist-search (or --dist-simulate on a "
            "planned module)";
    return false;
  }
  if (stageRegions && !search && !given) {
    error = "--dist-stage-regions writes the stages of a plan: add "
            "--dist-plan=... or --dist-search";
    return false;
  }
  if (o.mode == "infer" && (!o.trace.empty() || !o.timeline.empty())) {
    error = "--dist-trace and --dist-timeline draw training schedules; an "
            "inference plan (--dist-mode=infer, or dist-compile without "
            "--train) has none: drop them";
    return false;
  }
  bool tuningFlags = o.objective == "time-to-accuracy" || !o.tune.empty() ||
                     !o.noiseScale.empty() || !o.targetExamples.empty() ||
                     !o.targetSteps.empty() || !o.batches.empty() ||
                     !o.tuneFixed.empty();
  if (tuningFlags && !search && !given) {
    error = o.tune.empty()
                ? "--dist-objective=time-to-accuracy and its options choose "
                  "the global batch by search: add --dist-search"
                : "--dist-tune plans each trial by search: add --dist-search";
    return false;
  }
  if (search || given) {
    bool tuning = o.objective == "time-to-accuracy" || !o.tune.empty();
    if (search && o.batch == 0 && o.baseline.empty() && !tuning) {
      error = "--dist-search needs the global batch in samples: pass "
              "--dist-batch=N";
      return false;
    }
    o.summary = true;
    // --dist-plan has always printed its prediction; a --dist-simulate on
    // the command line does it (with the report, trace and timeline) then.
    if (!simulatorNamed) {
      o.simulate = given;
    } else {
      o.trace.clear();
      o.timeline.clear();
      // A search writes its own page (with the runners-up).
      if (given) {
        o.report.clear();
        o.reportHtml.clear();
      }
    }
    o.stages = stageRegions ? "regions" : "none";
    return succeeded(buildPlanPipeline(pm, o, PlanOptionSpelling::Flag, error));
  }
  if (!o.cluster.empty()) {
    AttachClusterPassOptions attach;
    attach.cluster = o.cluster;
    attach.profile = o.profile;
    pm.addPass(createAttachClusterPass(attach));
  }
  if (o.printLayers) {
    AnnotateLayersPassOptions annotate;
    annotate.print = true;
    pm.addPass(createAnnotateLayersPass(annotate));
  }
  if (!simulatorNamed && (!o.report.empty() || !o.trace.empty() ||
                          !o.timeline.empty() || !o.reportHtml.empty())) {
    SimulatePassOptions sim;
    sim.report = o.report;
    sim.reportHtml = o.reportHtml;
    sim.trace = o.trace;
    sim.timeline = o.timeline;
    sim.input = o.input;
    pm.addPass(createSimulatePass(sim));
  }
  // A planned module's plan, exported.
  if (!o.exportTo.empty()) {
    ExportPlanPassOptions exportPlan;
    exportPlan.trainer = o.exportTo;
    pm.addPass(createExportPlanPass(exportPlan));
  }
  return true;
}

bool PlanFlags::configure(OpPassManager &pm, std::string &error) const {
  PlanOptions o = values();
  std::string text;
  // After a search the search's JSON report and page stand (they have the
  // runners-up and the search's figures); a named dist-simulate would
  // rewrite them without.
  if (!o.report.empty() && !searching())
    text += quoted("report", o.report) + " ";
  if (!o.trace.empty())
    text += quoted("trace", o.trace) + " ";
  if (!o.timeline.empty())
    text += quoted("timeline", o.timeline) + " ";
  if (!o.reportHtml.empty() && !searching())
    text += quoted("report-html", o.reportHtml) + " ";
  // A named dist-simulate of a given plan reports it under preemptions too.
  if (!searching() && o.resilience != "none")
    text += quoted("resilience", o.resilience) + " ";
  if (!searching() && !o.preemptions.empty())
    text += quoted("preemptions", o.preemptions) + " ";
  // The searched plan was ranked with its data stall; its simulation too.
  if (!o.input.empty())
    text += quoted("input", o.input);
  if (text.empty())
    return true;
  for (Pass *pass : passesNamed(pm, "dist-simulate"))
    if (!initializePassOptions(*pass, text, error))
      return false;
  return true;
}

bool TrainFlags::apply(OpPassManager &pm, std::string &error) const {
  if (loss.empty())
    return true;
  std::string options = quoted("default-loss", loss);
  for (Pass *pass : passesNamed(pm, "dist-autodiff"))
    if (!initializePassOptions(*pass, options, error))
      return false;
  return true;
}
