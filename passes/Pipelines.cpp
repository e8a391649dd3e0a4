//===- Pipelines.cpp - dist-plan-pipeline and dist-train-pipeline -*- C++ -*-===//
//
// Part of DistOpt. The two pipelines, built from plain options (the C++ API
// and the tools' command-line spellings) or from their textual pipeline
// options (--pass-pipeline='builtin.module(dist-plan-pipeline{...})').
//
//===----------------------------------------------------------------------===//
#include "dist/Pipelines.h"

#include "lib/Schedule/Plan.h"
#include "lib/Sim/InputPipeline.h"
#include "lib/Sim/Resilience.h"
#include "passes/Passes.h"
#include "passes/PlanOptionTable.h"

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

ArrayRef<PlanOptionSpec> distopt::planOptionSpecs() {
  using O = PlanOptions;
  static const PlanOptionSpec specs[] = {
      {"cluster", "dist-cluster",
       "The machines: PRESET[:NODES] (see --list-clusters) or a cluster YAML "
       "file (dist-attach-cluster); empty: the module's dist.cluster",
       &O::cluster},
      {"profile", "dist-profile",
       "Profile database (JSON) of measured op times", &O::profile},
      {"plan", "dist-plan",
       "A hand-written plan: dp=..,tp=..,pp=..,mbs=..,schedule="
       "gpipe|1f1b|interleaved|zb-h1|pipedream|2bw,chunks=..,"
       "recompute=none|selective|full,zero=0..3[,stages=A/B/..]"
       "[,replicas=R0/R1/..][,uneven=1] (dist-set-plan); empty: search",
       &O::plan},
      {"plan-from", "dist-plan-from",
       "Read the plan from a trainer's configuration: megatron:ARGS_FILE "
       "(Megatron-LM arguments or launch script; with --dist-search it is "
       "predicted beside the best plan)",
       &O::planFrom},
      {"batch", "dist-batch", "Global batch in samples per iteration",
       &O::batch},
      {"constraints", "dist-search",
       "Search the best plan, within constraints such as "
       "\"tp<=8,pp>=2,mbs=1|2,schedule=1f1b|interleaved,recompute=any,"
       "zero<=1\" (dist-search-plan)",
       &O::constraints},
      {"memory-limit", "dist-memory-limit",
       "Per-device memory limit for the search, e.g. 80GB or 40GiB "
       "(default: each device's memory)",
       &O::memoryLimit},
      {"allow-async", "dist-allow-async",
       "Let the search choose PipeDream / PipeDream-2BW (asynchronous "
       "weight updates)",
       &O::allowAsync},
      {"branches", "dist-branches",
       "Inference: place the trunk and the independent branches after the "
       "model's fork on devices (one batch's latency), compared with one "
       "device and the best chain partition; the faster is recorded",
       &O::branches},
      {"alternatives", "dist-alternatives",
       "Runner-up plans to report (default 3)", &O::alternatives},
      {"devices", "dist-devices",
       "Let the search use only the cluster's first N devices (the others "
       "stay idle and are reported)",
       &O::devices},
      {"noise-scale", "dist-noise-scale",
       "Gradient noise scale B_noise in samples (McCandlish et al. 2018), "
       "for --dist-objective=time-to-accuracy and --dist-tune",
       &O::noiseScale},
      {"target-examples", "dist-target-examples",
       "Training target as E_min: samples it needs with a tiny batch "
       "(steps(B) = E_min/B_noise * (1 + B_noise/B))",
       &O::targetExamples},
      {"target-steps", "dist-target-steps",
       "Training target as S_min: steps it needs with an unbounded batch "
       "(steps(B) = S_min * (1 + B_noise/B))",
       &O::targetSteps},
      {"batches", "dist-batches",
       "Global batches time-to-accuracy tries: 64,128,256 or 64..4096 "
       "(doubling; default: from the device count to 16 B_noise)",
       &O::batches},
      {"tune", "dist-tune",
       "Hyper-parameter trials, each planned on its own and against one "
       "fixed plan: \"batch=256,lr=1e-3,async=0,steps=1000;batch=512,...\"",
       &O::tune},
      {"tune-fixed", "dist-tune-fixed",
       "The fixed plan --dist-tune compares with (dp=..,tp=..,...; default: "
       "the best plan of the first trial)",
       &O::tuneFixed},
      {"resilience", "dist-resilience",
       "Plan for preemptible nodes: none (on-demand nodes, default), "
       "checkpoint (periodic checkpoints, Young/Daly interval), redundant "
       "(Bamboo's redundant computation, pp>=2) or elastic (restart on the "
       "survivors at once); needs the cluster's "
       "availability (docs/resilience.md)",
       &O::resilience},
      {"preemptions", "dist-preemptions",
       "Inject preemptions into the plan: a seeded Poisson process over "
       "1000 hours (SEED: a whole number); needs --dist-resilience",
       &O::preemptions},
      {"replan", "dist-replan",
       "The running plan's JSON report (--dist-report): plan the migration "
       "from it to the new plan on this (changed) cluster: what moves where, "
       "the downtime of pause-and-resume and of preparing the new partition "
       "beside the running one, and whether re-planning pays",
       &O::replan},
      {"relaunch", "dist-relaunch",
       "The job start measured by dist-run --record-relaunch=FILE (JSON): "
       "what --dist-replan's pause-and-resume pays to start the new job, and "
       "each restart after a preemption, where the cluster's availability "
       "gives no relaunch_s",
       &O::relaunch},
      {"input", "dist-input",
       "The model's input per sample: bytes=SIZE,preprocess=TIME,"
       "dataset=COUNT (stored bytes, CPU time on one core, samples in the "
       "dataset); training iterations then wait on fetch and preprocessing "
       "as the cluster's input side allows (data stalls, docs/cost-model.md)",
       &O::input},
      {"baseline", "",
       "Also predict a trainer's configuration (megatron:ARGS_FILE) and "
       "print it beside the best plan (dist-search-plan)",
       &O::baseline},
      {"check-compilable", "",
       "Warn first when dist-compile could not build the planned function "
       "(dist-check-compilable)",
       &O::checkCompilable},
      {"mode", "dist-mode",
       "What the plan is for: train (default) or infer (forward only)",
       &O::mode},
      {"objective", "dist-objective",
       "Inference goal: throughput (a stream of batches, default) or "
       "latency (one global batch); training: time-to-accuracy (choose the "
       "global batch too, with --dist-noise-scale and a target)",
       &O::objective},
      {"dtype", "dist-dtype",
       "Compute element type the plan assumes: bf16 (default: mixed "
       "precision), fp32, tf32, fp16 or fp8 (fp8 matmuls, bf16 elsewhere)",
       &O::dtype},
      {"optimizer", "dist-optimizer",
       "Optimizer whose state the memory model holds: adam (default; also "
       "AdamW), momentum or sgd",
       &O::optimizer},
      {"fused-attention", "dist-fused-attention",
       "Cost each attention softmax(Q K^T) V of the model as one fused "
       "kernel (FlashAttention, cuDNN): no s^2 score tensors",
       &O::fusedAttention},
      {"print-layers", "dist-print-model",
       "Print the layers, parameters and FLOPs the planner sees "
       "(dist-annotate-layers)",
       &O::printLayers},
      {"summary", "", "Print the plan and its prediction", &O::summary},
      {"explain", "dist-explain",
       "Print compute, communication, bubble and memory of the best plans "
       "and why the winner wins",
       &O::explain},
      {"progress", "dist-progress",
       "Search progress on stderr: auto (on a terminal, or after 1 s), "
       "always, never",
       &O::progress},
      {"simulate", "", "Simulate the plan and print its prediction",
       &O::simulate},
      {"report", "dist-report", "Write the plan and its estimate as JSON",
       &O::report},
      {"trace", "dist-trace", "Write a Chrome/Perfetto trace of the schedule",
       &O::trace},
      {"timeline", "dist-timeline", "Draw the schedule as an SVG timeline",
       &O::timeline},
      {"report-html", "dist-report-html",
       "Write the plan, its prediction, timeline and memory per stage (and "
       "a search's runners-up and explanation) as one self-contained HTML "
       "page",
       &O::reportHtml},
      {"export", "dist-export",
       "Write the plan as another trainer's configuration: "
       "megatron|torchtitan|deepspeed[:FILE] (dist-export-plan)",
       &O::exportTo},
      {"stages", "",
       "How far partitioning goes: none (annotated ops), regions (dist.stage "
       "regions), functions (stage functions) or schedule (also the "
       "materialized, verified schedule)",
       &O::stages},
  };
  return specs;
}

std::string distopt::spellPlanOption(PlanOptionField field,
                                     PlanOptionSpelling spelling) {
  for (const PlanOptionSpec &spec : planOptionSpecs())
    if (spec.field == field)
      return spelling == PlanOptionSpelling::Flag && !spec.flag.empty()
                 ? ("--" + spec.flag).str()
                 : spec.name.str();
  llvm_unreachable("every field of PlanOptions is in the table");
}

namespace {
enum class Stages { None, Regions, Functions, Schedule };

/// The enum-valued options, parsed.
struct PlanEnums {
  schedule::Mode mode;
  schedule::InferObjective objective;
  /// objective=time-to-accuracy (training; the inference objective stays
  /// at its default).
  bool timeToAccuracy = false;
  cluster::DType dtype;
  cost::Optimizer optimizer;
  SearchProgress progress;
  Stages stages;
  sim::Resilience resilience;
  std::optional<uint64_t> seed;
};
} // namespace

static bool parsePlanEnums(const PlanOptions &o, PlanOptionSpelling spelling,
                           PlanEnums &out, std::string &error) {
  auto unknown = [&](PlanOptionField field, const std::string &value,
                     StringRef expected) {
    error = "unknown " + spellPlanOption(field, spelling) + "='" + value +
            "': expected " + expected.str();
    return false;
  };
  if (!parseModeName(o.mode, out.mode))
    return unknown(&PlanOptions::mode, o.mode, "train or infer");
  out.timeToAccuracy = o.objective == "time-to-accuracy";
  out.objective = schedule::InferObjective::Throughput;
  if (!out.timeToAccuracy && !parseObjectiveName(o.objective, out.objective))
    return unknown(&PlanOptions::objective, o.objective,
                   "throughput or latency (inference) or time-to-accuracy "
                   "(training)");
  if (!cluster::parseDType(o.dtype, out.dtype) ||
      out.dtype == cluster::DType::I8 || out.dtype == cluster::DType::I32 ||
      out.dtype == cluster::DType::I64)
    return unknown(&PlanOptions::dtype, o.dtype,
                   "fp32, tf32, fp16, bf16 or fp8");
  if (std::optional<cost::Optimizer> optimizer =
          cost::parseOptimizer(o.optimizer))
    out.optimizer = *optimizer;
  else
    return unknown(&PlanOptions::optimizer, o.optimizer,
                   "adam, adamw, momentum or sgd");
  if (!parseProgressName(o.progress, out.progress))
    return unknown(&PlanOptions::progress, o.progress, "auto, always or never");
  std::optional<Stages> stages =
      llvm::StringSwitch<std::optional<Stages>>(o.stages)
          .Case("none", Stages::None)
          .Case("regions", Stages::Regions)
          .Case("functions", Stages::Functions)
          .Case("schedule", Stages::Schedule)
          .Default(std::nullopt);
  if (!stages)
    return unknown(&PlanOptions::stages, o.stages,
                   "none, regions, functions or schedule");
  out.stages = *stages;
  if (std::optional<sim::Resilience> r = sim::parseResilience(o.resilience))
    out.resilience = *r;
  else
    return unknown(&PlanOptions::resilience, o.resilience,
                   "none, checkpoint, redundant or elastic");
  // A recorded relaunch priced nowhere would be ignored without a word.
  if (!o.relaunch.empty() && o.replan.empty() &&
      out.resilience == sim::Resilience::None) {
    error = spellPlanOption(&PlanOptions::relaunch, spelling) +
            " prices the job start of a pause (" +
            spellPlanOption(&PlanOptions::replan, spelling) +
            ") or of a restart after a preemption (" +
            spellPlanOption(&PlanOptions::resilience, spelling) +
            "); add one of them, or drop it";
    return false;
  }
  out.seed.reset();
  if (!o.preemptions.empty()) {
    uint64_t seed;
    if (StringRef(o.preemptions).getAsInteger(10, seed)) {
      error = "bad " + spellPlanOption(&PlanOptions::preemptions, spelling) +
              "='" + o.preemptions +
              "': expected a seed, a whole number such as 1";
      return false;
    }
    out.seed = seed;
    if (out.resilience == sim::Resilience::None) {
      error = spellPlanOption(&PlanOptions::preemptions, spelling) +
              " injects preemptions into a plan that survives them: add " +
              spellPlanOption(&PlanOptions::resilience, spelling) +
              "=checkpoint, =redundant or =elastic (with none the plan runs on "
              "on-demand nodes, which are not preempted)";
      return false;
    }
  }
  if (!o.input.empty()) {
    llvm::Expected<sim::InputSpec> spec = sim::parseInputSpec(o.input);
    if (!spec) {
      error = "bad " + spellPlanOption(&PlanOptions::input, spelling) + "='" +
              o.input + "': " + llvm::toString(spec.takeError());
      return false;
    }
    if (out.mode != schedule::Mode::Train) {
      error = spellPlanOption(&PlanOptions::input, spelling) +
              " models the input pipeline of training iterations; drop it "
              "for an inference plan (" +
              spellPlanOption(&PlanOptions::mode, spelling) + "=infer)";
      return false;
    }
  }
  if (out.resilience != sim::Resilience::None &&
      out.mode != schedule::Mode::Train) {
    error = spellPlanOption(&PlanOptions::resilience, spelling) + "=" +
            o.resilience +
            " plans training on preemptible nodes; an inference plan (" +
            spellPlanOption(&PlanOptions::mode, spelling) +
            "=infer) has no training state to protect: drop it";
    return false;
  }
  return true;
}

bool distopt::checkPlanOptions(const PlanOptions &options,
                               PlanOptionSpelling spelling,
                               std::string &error) {
  PlanEnums parsed;
  return parsePlanEnums(options, spelling, parsed, error);
}

/// The options of time to accuracy and tuning go together: false with
/// \p error when one is given without what it needs or with what it
/// replaces.
static bool checkTuning(const PlanOptions &o, const PlanEnums &e, bool given,
                        function_ref<std::string(PlanOptionField)> spell,
                        std::string &error) {
  bool tune = !o.tune.empty();
  std::string tta = spell(&PlanOptions::objective) + "=time-to-accuracy";
  if (e.timeToAccuracy && e.mode == schedule::Mode::Infer) {
    error = tta +
            " plans training (steps to a target loss); inference "
            "has no steps: use throughput or latency with " +
            spell(&PlanOptions::mode) + "=infer";
    return false;
  }
  if (tune && e.mode == schedule::Mode::Infer) {
    error = spell(&PlanOptions::tune) + " plans training trials; drop " +
            spell(&PlanOptions::mode) + "=infer";
    return false;
  }
  if (e.timeToAccuracy && tune) {
    error = "give " + tta + " (choose the batch) or " +
            spell(&PlanOptions::tune) +
            " (plan given trials), not both; trials without steps= take "
            "theirs from " +
            spell(&PlanOptions::noiseScale) + " and the target";
    return false;
  }
  if ((e.timeToAccuracy || tune) && given) {
    error = (e.timeToAccuracy ? tta : spell(&PlanOptions::tune)) +
            " searches the plan (for each batch or trial); drop the given "
            "plan (" +
            spell(&PlanOptions::tuneFixed) +
            " names the fixed plan trials are compared with)";
    return false;
  }
  if ((e.timeToAccuracy || tune) && o.batch) {
    error = spell(&PlanOptions::batch) + " fixes the global batch, but " +
            (e.timeToAccuracy
                 ? tta +
                       " chooses it (list the candidates "
                       "with " +
                       spell(&PlanOptions::batches) + ")"
                 : spell(&PlanOptions::tune) + " takes each trial's batch=");
    return false;
  }
  if ((e.timeToAccuracy || tune) && !o.baseline.empty()) {
    error = spell(&PlanOptions::baseline) +
            " is compared with one search, "
            "not with " +
            (e.timeToAccuracy ? tta : spell(&PlanOptions::tune));
    return false;
  }
  if (e.timeToAccuracy && o.noiseScale.empty()) {
    error = tta + " needs the gradient noise scale: pass " +
            spell(&PlanOptions::noiseScale) + "=B (samples) and the target " +
            spell(&PlanOptions::targetExamples) + "=E_min or " +
            spell(&PlanOptions::targetSteps) + "=S_min";
    return false;
  }
  bool statistical = !o.noiseScale.empty() || !o.targetExamples.empty() ||
                     !o.targetSteps.empty();
  if (statistical && !e.timeToAccuracy && !tune) {
    error = spell(&PlanOptions::noiseScale) + ", " +
            spell(&PlanOptions::targetExamples) + " and " +
            spell(&PlanOptions::targetSteps) +
            " model steps to a target: "
            "use them with " +
            tta + " or " + spell(&PlanOptions::tune);
    return false;
  }
  if (!o.batches.empty() && !e.timeToAccuracy) {
    error = spell(&PlanOptions::batches) + " lists the batches " + tta +
            " tries; add it";
    return false;
  }
  if (!o.tuneFixed.empty() && !tune) {
    error = spell(&PlanOptions::tuneFixed) + " names the fixed plan of " +
            spell(&PlanOptions::tune) + "; add the trials";
    return false;
  }
  return true;
}

LogicalResult distopt::buildPlanPipeline(OpPassManager &pm,
                                         const PlanOptions &o,
                                         std::string &error) {
  return buildPlanPipeline(pm, o, PlanOptionSpelling::Pipeline, error);
}

LogicalResult distopt::buildPlanPipeline(OpPassManager &pm,
                                         const PlanOptions &o,
                                         PlanOptionSpelling spelling,
                                         std::string &error) {
  PlanEnums e;
  if (!parsePlanEnums(o, spelling, e, error))
    return failure();
  auto spell = [&](PlanOptionField field) {
    return spellPlanOption(field, spelling);
  };
  bool given = !o.plan.empty() || !o.planFrom.empty();
  if (!o.plan.empty() && !o.planFrom.empty()) {
    error = "give " + spell(&PlanOptions::plan) + " or " +
            spell(&PlanOptions::planFrom) + ", not both";
    return failure();
  }
  if (given && !o.baseline.empty()) {
    error = spell(&PlanOptions::baseline) +
            " is compared with a search; a given plan is predicted alone";
    return failure();
  }
  if (given && o.explain) {
    error = spell(&PlanOptions::explain) +
            " explains a search; a given plan has nothing to explain";
    return failure();
  }
  if (o.branches && given) {
    error = spell(&PlanOptions::branches) +
            " searches a placement of the model's branches; drop the given "
            "plan";
    return failure();
  }
  if (o.branches && e.mode != schedule::Mode::Infer) {
    error = spell(&PlanOptions::branches) +
            " places an inference model's branches for one batch's "
            "latency; add " +
            spell(&PlanOptions::mode) +
            "=infer (dist-compile plans for inference without --train)";
    return failure();
  }
  if (o.branches && e.stages != Stages::None) {
    error = (spelling == PlanOptionSpelling::Flag
                 ? std::string("--dist-stage-regions")
                 : spell(&PlanOptions::stages) + "=" + o.stages) +
            " outlines the stages of a chain plan, but " +
            spell(&PlanOptions::branches) +
            " may record a branch placement, which has none "
            "(dist-partition builds its programs)" +
            (spelling == PlanOptionSpelling::Flag ? ": drop it"
                                                  : ": add stages=none");
    return failure();
  }
  if (given && o.devices) {
    error = spell(&PlanOptions::devices) +
            " limits a search; a given plan uses dp*tp*cp*pp of the "
            "cluster's devices (the first ones)";
    return failure();
  }

  if (!checkTuning(o, e, given, spell, error))
    return failure();

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
  if (given) {
    SetPlanPassOptions set;
    set.plan = o.plan;
    set.from = o.planFrom;
    set.batch = o.batch;
    set.mode = e.mode;
    set.objective = e.objective;
    set.dtype = e.dtype;
    set.fusedAttention = o.fusedAttention;
    set.optimizer = e.optimizer;
    pm.addPass(createSetPlanPass(set));
  } else {
    SearchPlanPassOptions search;
    search.batch = o.batch;
    search.constraints = o.constraints;
    search.baseConstraints = o.baseConstraints;
    search.memoryLimit = o.memoryLimit;
    search.mode = e.mode;
    search.objective = e.objective;
    search.dtype = e.dtype;
    search.fusedAttention = o.fusedAttention;
    search.optimizer = e.optimizer;
    search.allowAsync = o.allowAsync;
    search.branches = o.branches;
    search.alternatives = o.alternatives;
    search.explain = o.explain;
    search.progress = e.progress;
    search.report = o.report;
    search.reportHtml = o.reportHtml;
    search.summary = o.summary;
    search.devices = o.devices;
    search.baseline = o.baseline;
    search.timeToAccuracy = e.timeToAccuracy;
    search.noiseScale = o.noiseScale;
    search.targetExamples = o.targetExamples;
    search.targetSteps = o.targetSteps;
    search.batches = o.batches;
    search.tune = o.tune;
    search.tuneFixed = o.tuneFixed;
    search.resilience = o.resilience;
    search.preemptions = o.preemptions;
    search.replan = o.replan;
    search.relaunch = o.relaunch;
    search.input = o.input;
    if (!o.exportTo.empty())
      search.trainer = o.exportTo;
    pm.addPass(createSearchPlanPass(search));
  }
  // A given plan is predicted by the simulator; a searched one already has
  // its prediction and reports, unless a trace or timeline is wanted.
  bool simulate = given ? o.simulate || !o.report.empty() || !o.trace.empty() ||
                              !o.timeline.empty() || !o.reportHtml.empty() ||
                              !o.replan.empty()
                        : !o.trace.empty() || !o.timeline.empty();
  if (simulate) {
    SimulatePassOptions sim;
    sim.report = given ? o.report : "";
    sim.reportHtml = given ? o.reportHtml : "";
    sim.trace = o.trace;
    sim.timeline = o.timeline;
    sim.summary = o.summary && given;
    sim.input = o.input;
    if (given) {
      sim.resilience = o.resilience;
      sim.preemptions = o.preemptions;
      sim.replan = o.replan;
      sim.relaunch = o.relaunch;
    }
    pm.addPass(createSimulatePass(sim));
  }
  if (!o.exportTo.empty()) {
    ExportPlanPassOptions exportPlan;
    exportPlan.trainer = o.exportTo;
    pm.addPass(createExportPlanPass(exportPlan));
  }
  if (e.stages >= Stages::Regions)
    pm.addPass(createOutlineStagesPass());
  if (e.stages >= Stages::Functions)
    pm.addPass(createOutlineStageFunctionsPass());
  if (e.stages >= Stages::Schedule) {
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
template <typename T> using PassOption = detail::PassOptions::Option<T>;

/// dist-plan-pipeline's textual options: one per row of the table.
struct PlanPipelineOptions : public PassPipelineOptions<PlanPipelineOptions> {
  PlanOptionSet<PassOption> options{
      /*flagsOnly=*/false, [this](const PlanOptionSpec &spec, auto init) {
        return std::make_unique<PassOption<decltype(init)>>(
            *this, spec.name, llvm::cl::desc(spec.help), llvm::cl::init(init));
      }};

  PlanOptions get() const {
    PlanOptions o;
    options.get(o);
    return o;
  }
};

} // namespace

bool distopt::parsePlanPipelineOptions(StringRef text, PlanOptions &out) {
  PlanPipelineOptions options;
  if (failed(options.parseFromString(text)))
    return false;
  out = options.get();
  return true;
}

namespace {
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
