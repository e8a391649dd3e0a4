//===- Pipelines.cpp - dist-plan-pipeline and dist-train-pipeline -*- C++ -*-===//
//
// Part of DistOpt. The two pipelines, built from plain options (the C++ API
// and the tools' command-line spellings) or from their textual pipeline
// options (--pass-pipeline='builtin.module(dist-plan-pipeline{...})').
//
//===----------------------------------------------------------------------===//
#include "dist/Pipelines.h"

#include "lib/Schedule/Plan.h"
#include "passes/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace distopt;

bool distopt::parseModeName(StringRef s, schedule::Mode &out) {
  for (schedule::Mode m : {schedule::Mode::Train, schedule::Mode::Infer})
    if (s == schedule::modeName(m)) {
      out = m;
      return true;
    }
  return false;
}

bool distopt::parseObjectiveName(StringRef s, schedule::InferObjective &out) {
  for (schedule::InferObjective o : {schedule::InferObjective::Latency,
                                     schedule::InferObjective::Throughput})
    if (s == schedule::objectiveName(o)) {
      out = o;
      return true;
    }
  return false;
}

bool distopt::parseProgressName(StringRef s, SearchProgress &out) {
  int v = llvm::StringSwitch<int>(s)
              .Case("auto", 0)
              .Case("always", 1)
              .Case("never", 2)
              .Default(-1);
  if (v < 0)
    return false;
  out = static_cast<SearchProgress>(v);
  return true;
}

namespace {
enum class Stages { None, Regions, Functions, Schedule };
} // namespace

LogicalResult distopt::buildPlanPipeline(OpPassManager &pm,
                                         const PlanOptions &o,
                                         std::string &error) {
  schedule::Mode mode;
  schedule::InferObjective objective;
  cluster::DType dtype;
  SearchProgress progress;
  if (!parseModeName(o.mode, mode)) {
    error = "unknown mode '" + o.mode + "': expected train or infer";
    return failure();
  }
  if (!parseObjectiveName(o.objective, objective)) {
    error = "unknown objective '" + o.objective +
            "': expected throughput or latency";
    return failure();
  }
  if (!cluster::parseDType(o.dtype, dtype) || dtype == cluster::DType::I8 ||
      dtype == cluster::DType::I32 || dtype == cluster::DType::I64) {
    error = "unknown dtype '" + o.dtype +
            "': expected fp32, tf32, fp16, bf16 or fp8";
    return failure();
  }
  if (!parseProgressName(o.progress, progress)) {
    error = "unknown progress '" + o.progress +
            "': expected auto, always or never";
    return failure();
  }
  std::optional<Stages> stages =
      llvm::StringSwitch<std::optional<Stages>>(o.stages)
          .Case("none", Stages::None)
          .Case("regions", Stages::Regions)
          .Case("functions", Stages::Functions)
          .Case("schedule", Stages::Schedule)
          .Default(std::nullopt);
  if (!stages) {
    error = "unknown stages '" + o.stages +
            "': expected none, regions, functions or schedule";
    return failure();
  }
  if (!o.plan.empty() && o.explain) {
    error = "explain explains a search; a given plan has nothing to explain";
    return failure();
  }
  if (!o.plan.empty() && o.devices) {
    error = "devices limits a search; a given plan uses dp*tp*cp*pp of the "
            "cluster's devices (the first ones)";
    return failure();
  }

  if (!o.cluster.empty()) {
    AttachClusterPassOptions attach;
    attach.cluster = o.cluster;
    attach.profile = o.profile;
    pm.addPass(createAttachClusterPass(attach));
  } else if (!o.plan.empty()) {
    // A given plan without machines runs here: this machine as one device
    // per rank of the plan (unless the module carries its cluster).
    AttachClusterPassOptions attach;
    attach.cluster = "local";
    if (llvm::Expected<schedule::Plan> p = schedule::parsePlan(o.plan))
      attach.cluster += ":" + std::to_string(p->numDevices());
    else
      llvm::consumeError(p.takeError()); // dist-set-plan reports it
    attach.ifMissing = true;
    attach.profile = o.profile;
    pm.addPass(createAttachClusterPass(attach));
  }
  AnnotateLayersPassOptions annotate;
  annotate.print = o.printLayers;
  pm.addPass(createAnnotateLayersPass(annotate));
  if (o.checkCompilable)
    pm.addPass(createCheckCompilablePass());
  if (!o.plan.empty()) {
    SetPlanPassOptions set;
    set.plan = o.plan;
    set.batch = o.batch;
    set.mode = mode;
    set.objective = objective;
    set.dtype = dtype;
    set.fusedAttention = o.fusedAttention;
    pm.addPass(createSetPlanPass(set));
  } else {
    SearchPlanPassOptions search;
    search.batch = o.batch;
    search.constraints = o.constraints;
    search.memoryLimit = o.memoryLimit;
    search.mode = mode;
    search.objective = objective;
    search.dtype = dtype;
    search.fusedAttention = o.fusedAttention;
    search.allowAsync = o.allowAsync;
    search.alternatives = o.alternatives;
    search.explain = o.explain;
    search.progress = progress;
    search.report = o.report;
    search.summary = o.summary;
    search.devices = o.devices;
    pm.addPass(createSearchPlanPass(search));
  }
  // A given plan is predicted by the simulator; a searched one already has
  // its prediction and report, unless a trace or timeline is wanted.
  bool simulate = !o.plan.empty()
                      ? o.simulate || !o.report.empty() || !o.trace.empty() ||
                            !o.timeline.empty()
                      : !o.trace.empty() || !o.timeline.empty();
  if (simulate) {
    SimulatePassOptions sim;
    sim.report = o.plan.empty() ? "" : o.report;
    sim.trace = o.trace;
    sim.timeline = o.timeline;
    sim.summary = o.summary && !o.plan.empty();
    pm.addPass(createSimulatePass(sim));
  }
  if (*stages >= Stages::Regions)
    pm.addPass(createOutlineStagesPass());
  if (*stages >= Stages::Functions)
    pm.addPass(createOutlineStageFunctionsPass());
  if (*stages >= Stages::Schedule) {
    pm.addPass(createMaterializeSchedulePass());
    VerifySchedulePassOptions verify;
    verify.memoryLimit = o.memoryLimit;
    pm.addPass(createVerifySchedulePass(verify));
  }
  return success();
}

LogicalResult distopt::buildTrainPipeline(OpPassManager &pm,
                                          const TrainOptions &o,
                                          std::string &error) {
  std::string options = o.autodiff;
  if (!o.loss.empty())
    options += (options.empty() ? "" : " ") + ("default-loss=\"" + o.loss + "\"");
  if (failed(parsePassPipeline("dist-autodiff{" + options + "}", pm))) {
    error = "bad dist-autodiff options '" + o.autodiff + "'";
    return failure();
  }
  if (o.dataParallel)
    pm.addPass(createDataParallelPass());
  return success();
}

LogicalResult distopt::planModule(ModuleOp module, const PlanOptions &options) {
  PassManager pm(module.getContext(), ModuleOp::getOperationName());
  std::string error;
  if (failed(buildPlanPipeline(pm, options, error)))
    return emitError(module.getLoc()) << "dist-plan-pipeline: " << error;
  return pm.run(module);
}

namespace {
/// dist-plan-pipeline's textual options: those of PlanOptions.
struct PlanPipelineOptions : public PassPipelineOptions<PlanPipelineOptions> {
  Option<std::string> cluster{*this, "cluster",
                              llvm::cl::desc("PRESET[:NODES] or a YAML file")};
  Option<std::string> profile{*this, "profile",
                              llvm::cl::desc("Profile database (JSON)")};
  Option<std::string> plan{*this, "plan",
                           llvm::cl::desc("A hand-written plan (empty: "
                                          "search)")};
  Option<unsigned> batch{*this, "batch",
                         llvm::cl::desc("Global batch in samples")};
  Option<std::string> constraints{*this, "constraints",
                                  llvm::cl::desc("Search constraints")};
  Option<std::string> memoryLimit{*this, "memory-limit",
                                  llvm::cl::desc("Per-device memory limit")};
  Option<bool> allowAsync{*this, "allow-async",
                          llvm::cl::desc("Allow PipeDream / 2BW")};
  Option<unsigned> alternatives{*this, "alternatives",
                                llvm::cl::desc("Runner-up plans"),
                                llvm::cl::init(3)};
  Option<unsigned> devices{*this, "devices",
                           llvm::cl::desc("Search on the first N devices")};
  Option<bool> checkCompilable{
      *this, "check-compilable",
      llvm::cl::desc("Warn when dist-compile could not build the model")};
  Option<std::string> mode{*this, "mode", llvm::cl::desc("train or infer"),
                           llvm::cl::init("train")};
  Option<std::string> objective{*this, "objective",
                                llvm::cl::desc("throughput or latency"),
                                llvm::cl::init("throughput")};
  Option<std::string> dtype{*this, "dtype",
                            llvm::cl::desc("Compute element type"),
                            llvm::cl::init("bf16")};
  Option<bool> fusedAttention{
      *this, "fused-attention",
      llvm::cl::desc("Cost attention as one fused kernel")};
  Option<bool> printLayers{*this, "print-layers",
                           llvm::cl::desc("Print the layers the planner "
                                          "sees")};
  Option<bool> summary{*this, "summary",
                       llvm::cl::desc("Print the plan and its prediction")};
  Option<bool> explain{*this, "explain",
                       llvm::cl::desc("Explain the search's choice")};
  Option<std::string> progress{*this, "progress",
                               llvm::cl::desc("auto, always or never"),
                               llvm::cl::init("never")};
  Option<bool> simulate{*this, "simulate",
                        llvm::cl::desc("Simulate the plan")};
  Option<std::string> report{*this, "report",
                             llvm::cl::desc("JSON report file")};
  Option<std::string> trace{*this, "trace",
                            llvm::cl::desc("Chrome trace file")};
  Option<std::string> timeline{*this, "timeline",
                               llvm::cl::desc("SVG timeline file")};
  Option<std::string> stages{*this, "stages",
                             llvm::cl::desc("none, regions, functions or "
                                            "schedule"),
                             llvm::cl::init("schedule")};

  PlanOptions get() const {
    PlanOptions o;
    o.cluster = cluster;
    o.profile = profile;
    o.plan = plan;
    o.batch = batch;
    o.constraints = constraints;
    o.memoryLimit = memoryLimit;
    o.allowAsync = allowAsync;
    o.alternatives = alternatives;
    o.devices = devices;
    o.checkCompilable = checkCompilable;
    o.mode = mode;
    o.objective = objective;
    o.dtype = dtype;
    o.fusedAttention = fusedAttention;
    o.printLayers = printLayers;
    o.summary = summary;
    o.explain = explain;
    o.progress = progress;
    o.simulate = simulate;
    o.report = report;
    o.trace = trace;
    o.timeline = timeline;
    o.stages = stages;
    return o;
  }
};

struct TrainPipelineOptions
    : public PassPipelineOptions<TrainPipelineOptions> {
  Option<std::string> autodiff{*this, "autodiff",
                               llvm::cl::desc("dist-autodiff's options")};
  Option<std::string> loss{*this, "loss",
                           llvm::cl::desc("softmax-cross-entropy:LABEL or "
                                          "mse:TARGET")};
  Option<bool> dataParallel{*this, "data-parallel",
                            llvm::cl::desc("Average over the ranks")};
};
} // namespace

/// Registers \p name, built from its textual options by \p build; an
/// option that has no meaning is reported, not fatal.
template <typename Options, typename Plain>
static void registerPipeline(
    StringRef name, StringRef description, Plain (*get)(const Options &),
    LogicalResult (*build)(OpPassManager &, const Plain &, std::string &)) {
  registerPassPipeline(
      name, description,
      [=](OpPassManager &pm, StringRef text,
          function_ref<LogicalResult(const Twine &)> errorHandler) {
        Options options;
        if (failed(options.parseFromString(text)))
          return failure();
        std::string error;
        if (failed(build(pm, get(options), error)))
          return errorHandler(name + ": " + error);
        return success();
      },
      [](function_ref<void(const detail::PassOptions &)> handler) {
        handler(Options());
      });
}

void distopt::registerPipelines() {
  registerPipeline<PlanPipelineOptions, PlanOptions>(
      "dist-plan-pipeline",
      "Plans a module: cluster, layers, search or plan, stages, stage "
      "functions, schedule, verification (and simulation when asked)",
      [](const PlanPipelineOptions &o) { return o.get(); }, buildPlanPipeline);
  registerPipeline<TrainPipelineOptions, TrainOptions>(
      "dist-train-pipeline",
      "Makes a training program: autodiff (loss, optimizer), data parallel",
      [](const TrainPipelineOptions &o) {
        TrainOptions t;
        t.autodiff = o.autodiff;
        t.loss = o.loss;
        t.dataParallel = o.dataParallel;
        return t;
      },
      buildTrainPipeline);
}
