//===- Pipelines.h - Planning and training pipelines ------------*- C++ -*-===//
//
// Part of DistOpt. The two registered pipelines, as a client compiler builds
// them from C++:
//
//   dist-plan-pipeline   cluster -> layers -> search or plan -> stages
//                        -> stage functions -> schedule -> verify
//                        (-> simulate, when a report, trace or timeline is
//                        asked for)
//   dist-train-pipeline  autodiff (loss, optimizer) -> data parallel
//
// and one call that plans a module the client built itself. Options are
// plain values; each has the spelling of the pipeline option of the same
// name (`dist-opt --help`, docs/cli.md).
//
//===----------------------------------------------------------------------===//
#ifndef DIST_PIPELINES_H
#define DIST_PIPELINES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include <string>

namespace distopt {

/// Options of dist-plan-pipeline.
struct PlanOptions {
  /// The machines: PRESET, PRESET:NODES or a cluster YAML file (empty: the
  /// module's `dist.cluster`).
  std::string cluster;
  /// Profile database (JSON) of measured op times.
  std::string profile;
  /// A hand-written plan ("dp=..,tp=..,pp=..,mbs=..,schedule=.."); empty:
  /// search for the best one.
  std::string plan;
  /// The plan of a trainer's configuration ("megatron:ARGS_FILE"), instead
  /// of `plan`.
  std::string planFrom;
  /// Global batch in samples per iteration.
  unsigned batch = 0;
  /// Search: constraints ("tp<=8,pp>=2"), memory limit ("80GB"), whether
  /// asynchronous schedules are allowed, runner-ups to report.
  std::string constraints, memoryLimit;
  /// Search: limits for each key `constraints` does not name (dist-compile
  /// restricts the search to the plans its programs run).
  std::string baseConstraints;
  bool allowAsync = false;
  /// Inference: also place the independent branches after the model's
  /// fork on devices (one batch's latency) and record that placement when
  /// it beats the best chain partition (docs/search.md).
  bool branches = false;
  unsigned alternatives = 3;
  /// Search: plan for the cluster's first N devices only (0: all).
  unsigned devices = 0;
  /// Time to accuracy (objective "time-to-accuracy") and tuning: the
  /// gradient noise scale B_noise in samples, the target as samples at a
  /// tiny batch (E_min) or steps at an unbounded one (S_min), the candidate
  /// global batches ("64,128,256" or "64..4096"), the hyper-parameter trials
  /// ("batch=256,lr=1e-3,async=0,steps=1000;batch=512,...") and the fixed
  /// plan the trials are compared with (empty: the first trial's best).
  std::string noiseScale, targetExamples, targetSteps, batches, tune, tuneFixed;
  /// Surviving preemptions (docs/resilience.md): "none" (on-demand nodes),
  /// "checkpoint" (periodic checkpoints, restarts) or "redundant" (Bamboo's
  /// redundant computation). A search then ranks plans by their expected
  /// throughput under preemptions.
  std::string resilience = "none";
  /// A seed: also inject preemptions (a seeded Poisson process) into the
  /// plan and report what they cost; empty: none injected.
  std::string preemptions;
  /// The JSON report of the running plan (--dist-report): also plan the
  /// migration from it to the new plan, its downtime and whether it pays
  /// (docs/resilience.md, "Re-planning"); empty: none.
  std::string replan;
  /// The file `dist-run --record-relaunch` wrote: the job start a pause (and
  /// a restart after a preemption) pays, where the cluster's availability
  /// gives no relaunch_s (docs/resilience.md, "The relaunch"); empty: none.
  std::string relaunch;
  /// The model's input per sample ("bytes=110KiB,preprocess=4.2ms,
  /// dataset=1.28M"): training iterations wait on the input pipeline the
  /// cluster's input side gives them (data stalls); empty: not modelled.
  std::string input;
  /// Search: also predict a trainer's configuration ("megatron:ARGS_FILE")
  /// and print it beside the best plan.
  std::string baseline;
  /// Warn first when dist-compile could not build the planned function
  /// (dist-check-compilable).
  bool checkCompilable = false;
  /// "train" or "infer"; for inference "throughput" or "latency", for
  /// training "time-to-accuracy" (with noiseScale and a target); the
  /// compute element type ("bf16", "fp16", "fp32", "tf32", "fp8"); the
  /// optimizer whose state the memory model holds ("adam", "adamw",
  /// "momentum", "sgd").
  std::string mode = "train", objective = "throughput", dtype = "bf16",
              optimizer = "adam";
  /// Cost attention as one fused kernel (FlashAttention).
  bool fusedAttention = false;
  /// Print the layers the planner sees; the plan and its prediction; the
  /// explanation of the search. Search progress on stderr: "auto",
  /// "always" or "never".
  bool printLayers = false, summary = false, explain = false;
  std::string progress = "never";
  /// Simulate the plan and write its report, Chrome trace and SVG timeline
  /// (each when named); `simulate` alone prints the prediction with
  /// `summary`.
  bool simulate = false;
  std::string report, trace, timeline;
  /// Write the plan, its prediction, timeline and memory (and after a
  /// search the runners-up and why the winner wins) as one self-contained
  /// HTML page.
  std::string reportHtml;
  /// Write the plan as another trainer's configuration:
  /// "megatron|torchtitan|deepspeed[:FILE]".
  std::string exportTo;
  /// How far partitioning goes: "none" (annotated ops), "regions"
  /// (dist.stage regions), "functions" (stage functions), "schedule" (also
  /// the materialized, verified schedule; default).
  std::string stages = "schedule";
};

/// Adds dist-plan-pipeline to \p pm (a pass manager on builtin.module).
/// Fails with \p error set when an option has no meaning (an unknown mode,
/// a search option without a search, ...).
mlir::LogicalResult buildPlanPipeline(mlir::OpPassManager &pm,
                                      const PlanOptions &options,
                                      std::string &error);

/// Options of dist-train-pipeline.
struct TrainOptions {
  /// The options of dist-autodiff ("loss=mse:target optimizer=adam lr=0.01").
  std::string autodiff;
  /// The loss for a forward-only model (softmax-cross-entropy:LABEL or
  /// mse:TARGET), when `autodiff` names none.
  std::string loss;
  /// Average gradients and the loss over the ranks (dist-data-parallel).
  bool dataParallel = false;
};

/// Adds dist-train-pipeline to \p pm.
mlir::LogicalResult buildTrainPipeline(mlir::OpPassManager &pm,
                                       const TrainOptions &options,
                                       std::string &error);

/// Registers dist-plan-pipeline and dist-train-pipeline for --pass-pipeline.
void registerPipelines();

/// Plans \p module (a module of graph-dialect functions that the client
/// built): runs dist-plan-pipeline with \p options on it. Errors are emitted
/// as diagnostics on the module's context.
mlir::LogicalResult planModule(mlir::ModuleOp module,
                               const PlanOptions &options);

} // namespace distopt

#endif // DIST_PIPELINES_H
