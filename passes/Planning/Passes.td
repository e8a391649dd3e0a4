//===- Passes.td - Planning passes -------------------------*- tablegen -*-===//
//
// Part of DistOpt. The planning passes (passes/Planning/, one pass per file);
// passes/Passes.h declares and registers every group.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_PASSES_PLANNING_PASSES_TD
#define DIST_PASSES_PLANNING_PASSES_TD

include "mlir/Pass/PassBase.td"

def AnnotateLayersPass : Pass<"dist-annotate-layers", "mlir::ModuleOp"> {
  let summary = "marks the cost-model layers and tensor-parallel roles on ops";
  let description = [{
    Finds the layers the cost model plans with and writes them onto the
    planned function (`func`, default `main` or the module's only function
    with a body):

    - every op doing per-sample work gets `dist.layer = N`: layers are the
      stretches of the program between *cut points*, the places where
      exactly one activation is live (masks and ids computed without
      weights travel along); a stretch without a matmul, convolution or
      embedding joins the previous one, so a transformer block is two
      layers (attention, MLP) and a residual block is never cut in two;
    - every costed op gets its Megatron tensor-parallel role
      `dist.tp = #dist.tp<column|row|split|replicated>`, inferred from
      dataflow: a weighted matmul reading a split activation is row-parallel
      (its output is all-reduced), otherwise column-parallel.

    Later planning passes (`dist-set-plan`, `dist-search`, `dist-simulate`)
    read the layers from these annotations; they run this pass's analysis
    themselves when the function has none. `print=true` prints the layers,
    parameters and FLOPs the planner sees.

    Example:

    ```
    dist-opt model.onnx --dist-annotate-layers="print=true"
    ```
  }];
  let options = [
    Option<"funcName", "func", "std::string", "\"\"",
           "Function to plan (default: main, or the only function with a body)">,
    Option<"print", "print", "bool", "false",
           "Print the layers, parameters and FLOPs the planner sees">
  ];
  let dependentDialects = ["distopt::dist::DistDialect"];
}

def AttachClusterPass : Pass<"dist-attach-cluster", "mlir::ModuleOp"> {
  let summary = "attaches the machines to plan for as #dist.cluster";
  let description = [{
    Resolves `cluster` — a preset (`dgx-a100-80gb`, `dgx-h100`, ...; see
    `dist-opt --list-clusters`), a preset with a node count
    (`dgx-a100-80gb:4`) or a cluster YAML file (docs/cost-model.md) — and
    writes it as the module attribute `dist.cluster`: every device kind with
    its peaks, memory and calibrated efficiencies, every node group with its
    link, and the network. `profile` names a profile database (JSON) of
    measured op times that the cost model prefers over its analytic times;
    it is recorded in the attribute, so later passes read it from the module.
    An unknown preset, a malformed file or a bad node count is an error
    naming it. `local` is this machine, one device per core (estimated from
    /proc/cpuinfo). With `if-missing`, a module that already has a cluster
    keeps it (how `--dist-plan` without `--dist-cluster` plans for this
    machine).

    Example:

    ```
    dist-opt model.onnx --dist-attach-cluster="cluster=dgx-h100:8"
    ```
  }];
  let options = [
    Option<"cluster", "cluster", "std::string", "\"\"",
           "PRESET, PRESET:NODES or a cluster YAML file">,
    Option<"ifMissing", "if-missing", "bool", "false",
           "Attach only when the module has no dist.cluster">,
    Option<"profile", "profile", "std::string", "\"\"",
           "Profile database (JSON) of measured op times">
  ];
  let dependentDialects = ["distopt::dist::DistDialect"];
}

def CheckCompilablePass : Pass<"dist-check-compilable", "mlir::ModuleOp"> {
  let summary = "warns when dist-compile could not build the planned function";
  let description = [{
    A dry run of dist-compile's code generation on the planned function
    (`func`, default `main` or the module's only function with a body):
    when an op has no lowering (an ONNX op kept opaque, a dynamic shape),
    a warning at that op says that dist-compile cannot build programs for
    the model yet, so a plan printed after it is a prediction only, and why
    (with what the user can do). The module is left as it is. The planning
    flags of dist-opt run it before they plan.

    Example:

    ```
    dist-opt t5.onnx --pass-pipeline='builtin.module(dist-check-compilable)'
    ```
  }];
  let options = [
    Option<"funcName", "func", "std::string", "\"\"",
           "The function to check (default: main or the only one)">
  ];
  // The probe prepares a copy for emission (dist-prepare-for-emission).
  let dependentDialects = ["distopt::emit::EmitDialect"];
}

def SearchPlanPass : Pass<"dist-search-plan", "mlir::ModuleOp"> {
  let summary = "searches the best plan and records it as #dist.plan";
  let description = [{
    Searches the plan (data-, tensor- and pipeline-parallel degrees,
    micro-batch size, schedule, chunks, recomputation, ZeRO stage, stage
    boundaries, per-stage replicas) that minimises the predicted iteration
    time of the planned function on the module's `dist.cluster`, for a
    global batch of `batch` samples, under the `constraints`
    (`"tp<=8,pp>=2,mbs=1|2,schedule=1f1b|interleaved,recompute=any,zero<=1"`,
    docs/search.md). Inference (`mode=infer`) minimises the `objective`:
    `throughput` of a stream of batches or `latency` of one batch.

    The winner is written as the module attribute `dist.plan`, and every op
    of the function gets its virtual stage (`dist.virtual_stage`) and, with
    tensor parallelism, its role (`dist.tp`). Layers come from the
    `dist.layer` annotations when present (`dist-annotate-layers`).
    `summary=true` prints the plan and its prediction, `explain=true` the
    best plans and why the winner wins; `report` writes the JSON report
    (docs/report-format.md) and `report-html` the same as one
    self-contained HTML page with the timeline, memory per stage, the
    runners-up and why the winner wins. The module must carry `dist.cluster`
    (`dist-attach-cluster`). Errors (no plan fits, contradictory
    constraints) say what would fit.

    `baseline=megatron:ARGS_FILE` also predicts the plan a Megatron-LM
    configuration runs (docs/cli.md, "Plans for other trainers") and prints
    it beside the best plan; the search then costs the model in that
    configuration's precision and attention kernel, takes its global batch
    when `batch` is not given, and plans for as many devices as it runs on
    when `devices` is not given. The report gains `baseline`.

    `trainer=megatron|torchtitan|deepspeed` (set by `--dist-export` with
    `--dist-search`) searches only the plans that trainer runs as planned:
    its pipeline schedules (Megatron-LM: 1F1B and interleaved), no
    per-stage replicas, for DeepSpeed one chunk per rank and no context
    parallelism, and stages that start at whole transformer blocks (the
    search runs on one layer per block; the cuts it records are mapped
    back to the function's layers).

    `devices=N` plans for the cluster's first N devices (whole nodes first,
    then part of the next); the others stay idle and the summary says how
    many. When the best plan is less than half as efficient per device as
    one device, the search also plans for 1, 2, 4, ... devices and says the
    model is too small for the cluster, naming the smallest count within
    10% of the fastest (docs/search.md).

    `time-to-accuracy=true` (`--dist-objective=time-to-accuracy`) also
    chooses the global batch: for each of `batches` (default: doubling
    from the device count to 16 `noise-scale`) it searches the best plan
    and predicts the time to the target, steps(B) x iteration time with
    steps(B) = S_min (1 + B_noise / B) (McCandlish et al. 2018; the target
    is `target-examples` = E_min or `target-steps` = S_min), and records
    the batch and plan that reach it first. `tune` plans each
    hyper-parameter trial (`batch=N,lr=X,async=0|1,steps=S;...`) on its own
    and runs every trial with one fixed plan (`tune-fixed`, default the
    first trial's best), and records the first trial's plan. The report
    gains `time_to_accuracy` or `tune` (docs/search.md).

    Example:

    ```
    dist-opt gpt.onnx --pass-pipeline='builtin.module(dist-attach-cluster{cluster=dgx-a100-80gb:2},dist-annotate-layers,dist-search-plan{batch=64 report=plan.json})'
    dist-opt gpt.onnx --dist-cluster=dgx-a100-80gb:2 --dist-batch=64 --dist-search --dist-report=plan.json
    ```
  }];
  let options = [
    Option<"batch", "batch", "unsigned", "0",
           "Global batch in samples per iteration">,
    Option<"constraints", "constraints", "std::string", "\"\"",
           "Limits on the plan, e.g. \"tp<=8,pp>=2,schedule=1f1b\"">,
    Option<"baseConstraints", "base-constraints", "std::string", "\"\"",
           "Limits in the same form that hold for each key `constraints` "
           "does not name (dist-compile: the plans its programs run)">,
    Option<"memoryLimit", "memory-limit", "std::string", "\"\"",
           "Per-device memory limit such as 80GB or 40GiB (default: each "
           "device's memory)">,
    Option<"mode", "mode", "::distopt::schedule::Mode",
           "::distopt::schedule::Mode::Train", "What the plan is for",
           [{::llvm::cl::values(
             clEnumValN(::distopt::schedule::Mode::Train, "train",
                        "training steps"),
             clEnumValN(::distopt::schedule::Mode::Infer, "infer",
                        "forward only"))}]>,
    Option<"objective", "objective", "::distopt::schedule::InferObjective",
           "::distopt::schedule::InferObjective::Throughput",
           "What inference minimises",
           [{::llvm::cl::values(
             clEnumValN(::distopt::schedule::InferObjective::Throughput,
                        "throughput", "samples/s of a stream of batches"),
             clEnumValN(::distopt::schedule::InferObjective::Latency,
                        "latency", "time of one global batch"))}]>,
    Option<"dtype", "dtype", "::distopt::cluster::DType",
           "::distopt::cluster::DType::BF16",
           "Compute element type the costs assume",
           [{::llvm::cl::values(
             clEnumValN(::distopt::cluster::DType::F32, "fp32", "32-bit float"),
             clEnumValN(::distopt::cluster::DType::TF32, "tf32", "TF32 matmuls"),
             clEnumValN(::distopt::cluster::DType::F16, "fp16", "16-bit float"),
             clEnumValN(::distopt::cluster::DType::BF16, "bf16", "bfloat16"),
             clEnumValN(::distopt::cluster::DType::F8, "fp8",
                        "fp8 matmuls, bf16 elsewhere"))}]>,
    Option<"fusedAttention", "fused-attention", "bool", "false",
           "Cost attention as one fused kernel (FlashAttention)">,
    Option<"optimizer", "optimizer", "::distopt::cost::Optimizer",
           "::distopt::cost::Optimizer::Adam",
           "Optimizer whose state the memory model holds",
           [{::llvm::cl::values(
             clEnumValN(::distopt::cost::Optimizer::Adam, "adam",
                        "two moments (AdamW too)"),
             clEnumValN(::distopt::cost::Optimizer::SGDMomentum, "momentum",
                        "one momentum buffer"),
             clEnumValN(::distopt::cost::Optimizer::SGD, "sgd", "no state"))}]>,
    Option<"allowAsync", "allow-async", "bool", "false",
           "Also consider PipeDream and PipeDream-2BW (asynchronous updates)">,
    Option<"alternatives", "alternatives", "unsigned", "3",
           "Runner-up plans to report">,
    Option<"explain", "explain", "bool", "false",
           "Print the best plans and why the winner wins">,
    Option<"progress", "progress", "::distopt::SearchProgress",
           "::distopt::SearchProgress::Auto", "Progress line on stderr",
           [{::llvm::cl::values(
             clEnumValN(::distopt::SearchProgress::Auto, "auto",
                        "on a terminal, or after 1 s"),
             clEnumValN(::distopt::SearchProgress::Always, "always",
                        "always"),
             clEnumValN(::distopt::SearchProgress::Never, "never", "never"))}]>,
    Option<"report", "report", "std::string", "\"\"",
           "Write the JSON report to this file">,
    Option<"reportHtml", "report-html", "std::string", "\"\"",
           "Write the report as one self-contained HTML page to this file">,
    Option<"summary", "summary", "bool", "false",
           "Print the chosen plan and its prediction">,
    Option<"devices", "devices", "unsigned", "0",
           "Plan for the cluster's first N devices only, the others idle "
           "(0: all)">,
    Option<"replan", "replan", "std::string", "\"\"",
           "The running plan's JSON report: also plan the migration from it "
           "to this plan and its downtime (docs/resilience.md)">,
    Option<"relaunch", "relaunch", "std::string", "\"\"",
           "The job start dist-run --record-relaunch measured (JSON): priced "
           "in a pause's downtime and in restarts where the cluster gives no "
           "relaunch_s (docs/resilience.md)">,
    Option<"resilience", "resilience", "std::string", "\"none\"",
           "Plan for preemptible nodes: none, checkpoint, redundant or elastic "
           "(docs/resilience.md)">,
    Option<"input", "input", "std::string", "\"\"",
           "The model's input per sample (bytes=SIZE,preprocess=TIME,"
           "dataset=COUNT): iterations wait on the input pipeline">,
    Option<"preemptions", "preemptions", "std::string", "\"\"",
           "Seed of the injected preemptions (empty: none injected)">,
    Option<"trainer", "trainer", "std::string", "\"\"",
           "Search only the plans this trainer runs as planned (megatron, "
           "torchtitan, deepspeed; what --dist-export will write)">,
    Option<"branches", "branches", "bool", "false",
           "Inference: place the independent branches after the model's "
           "fork on devices for one batch's latency; record it when faster "
           "than the best chain partition">,
    Option<"baseline", "baseline", "std::string", "\"\"",
           "A trainer's configuration (megatron:ARGS_FILE) to predict and "
           "compare with the best plan">,
    Option<"timeToAccuracy", "time-to-accuracy", "bool", "false",
           "Choose the global batch too: the least predicted time to the "
           "target (steps from the noise scale times the iteration time)">,
    Option<"noiseScale", "noise-scale", "std::string", "\"\"",
           "Gradient noise scale B_noise in samples">,
    Option<"targetExamples", "target-examples", "std::string", "\"\"",
           "The target as E_min, samples it needs with a tiny batch">,
    Option<"targetSteps", "target-steps", "std::string", "\"\"",
           "The target as S_min, steps it needs with an unbounded batch">,
    Option<"batches", "batches", "std::string", "\"\"",
           "Candidate global batches: 64,128,256 or 64..4096 (doubling)">,
    Option<"tune", "tune", "std::string", "\"\"",
           "Hyper-parameter trials: batch=N,lr=X,async=0|1,steps=S;...">,
    Option<"tuneFixed", "tune-fixed", "std::string", "\"\"",
           "The fixed plan the trials are compared with (default: the best "
           "plan of the first trial)">
  ];
  let dependentDialects = ["distopt::dist::DistDialect"];
}

def SetPlanPass : Pass<"dist-set-plan", "mlir::ModuleOp"> {
  let summary = "records a hand-written plan as #dist.plan";
  let description = [{
    Checks `plan` (`"dp=..,tp=..,pp=..,mbs=..,schedule=gpipe|1f1b|
    interleaved|zb-h1|zb-h2|zb-v|v-half|v-min|dualpipe-v|pipedream|2bw,
    chunks=..,recompute=none|selective|full,zero=0..3[,cp=..][,ep=..]
    [,sp=1][,tp_overlap=1][,ag_overlap=1][,expert_imbalance=..]
    [,stages=A/B/..][,replicas=R0/R1/..][,uneven=1]"`,
    docs/cli.md) against the planned function and the module's
    `dist.cluster`, derives the micro-batch count from the global `batch`,
    balances the stages by cost when `stages` is not given, and writes the
    result as `dist.plan`, `dist.virtual_stage` on every op and, with tensor
    parallelism, `dist.tp`. Layers come from `dist.layer` when present.
    A plan that does not fit the cluster or the model is an error saying
    why.

    `from=megatron:ARGS_FILE` reads the plan from a Megatron-LM
    configuration instead (its parallel sizes, micro and global batch,
    virtual stages or pipeline layout, recomputation, distributed optimizer
    or FSDP, sequence parallelism, overlaps, precision and attention
    backend; docs/cli.md): the data-parallel degree is what the other sizes
    leave of the devices torchrun starts, or of the cluster. What the plan
    can only approximate is printed as a note.

    Example:

    ```
    dist-opt gpt.onnx --pass-pipeline='builtin.module(dist-attach-cluster{cluster=dgx-a100-80gb},dist-set-plan{plan="dp=2,tp=2,pp=2" batch=32})'
    ```
  }];
  let options = [
    Option<"plan", "plan", "std::string", "\"\"",
           "The plan: dp=..,tp=..,pp=..,mbs=..,schedule=..">,
    Option<"from", "from", "std::string", "\"\"",
           "Read the plan from a trainer's configuration: megatron:ARGS_FILE">,
    Option<"batch", "batch", "unsigned", "0",
           "Global batch in samples per iteration">,
    Option<"mode", "mode", "::distopt::schedule::Mode",
           "::distopt::schedule::Mode::Train", "What the plan is for",
           [{::llvm::cl::values(
             clEnumValN(::distopt::schedule::Mode::Train, "train",
                        "training steps"),
             clEnumValN(::distopt::schedule::Mode::Infer, "infer",
                        "forward only"))}]>,
    Option<"objective", "objective", "::distopt::schedule::InferObjective",
           "::distopt::schedule::InferObjective::Throughput",
           "What inference minimises",
           [{::llvm::cl::values(
             clEnumValN(::distopt::schedule::InferObjective::Throughput,
                        "throughput", "samples/s of a stream of batches"),
             clEnumValN(::distopt::schedule::InferObjective::Latency,
                        "latency", "time of one global batch"))}]>,
    Option<"dtype", "dtype", "::distopt::cluster::DType",
           "::distopt::cluster::DType::BF16",
           "Compute element type the costs assume",
           [{::llvm::cl::values(
             clEnumValN(::distopt::cluster::DType::F32, "fp32", "32-bit float"),
             clEnumValN(::distopt::cluster::DType::TF32, "tf32", "TF32 matmuls"),
             clEnumValN(::distopt::cluster::DType::F16, "fp16", "16-bit float"),
             clEnumValN(::distopt::cluster::DType::BF16, "bf16", "bfloat16"),
             clEnumValN(::distopt::cluster::DType::F8, "fp8",
                        "fp8 matmuls, bf16 elsewhere"))}]>,
    Option<"fusedAttention", "fused-attention", "bool", "false",
           "Cost attention as one fused kernel (FlashAttention)">,
    Option<"optimizer", "optimizer", "::distopt::cost::Optimizer",
           "::distopt::cost::Optimizer::Adam",
           "Optimizer whose state the memory model holds",
           [{::llvm::cl::values(
             clEnumValN(::distopt::cost::Optimizer::Adam, "adam",
                        "two moments (AdamW too)"),
             clEnumValN(::distopt::cost::Optimizer::SGDMomentum, "momentum",
                        "one momentum buffer"),
             clEnumValN(::distopt::cost::Optimizer::SGD, "sgd", "no state"))}]>
  ];
  let dependentDialects = ["distopt::dist::DistDialect"];
}

def ExportPlanPass : Pass<"dist-export-plan", "mlir::ModuleOp"> {
  let summary = "writes the module's plan as another trainer's configuration";
  let description = [{
    Writes the plan the module carries (`dist.plan`) as the configuration of
    `trainer`: `megatron` (a bash array of Megatron-LM arguments),
    `torchtitan` (a torchtitan 0.2.2 TOML job file) or `deepspeed` (a
    DeepSpeed JSON config), to the file after the colon or to
    megatron-args.sh, torchtitan.toml or ds_config.json. The option names
    are each project's own (the versions test/fixtures/trainers/ pins).
    What the trainer cannot run as planned (a schedule it lacks, per-stage
    replicas, a stage boundary inside a transformer block) is written as a
    note in the file and printed as a warning, never as an option the
    trainer would read otherwise. Inference plans have no export. The IR is
    not changed.

    Example:

    ```
    dist-opt gpt.onnx --dist-cluster=dgx-a100-80gb:4 --dist-batch=512 --dist-search --dist-export=megatron:run.sh
    dist-opt planned.mlir --pass-pipeline='builtin.module(dist-export-plan{trainer=torchtitan:job.toml})'
    ```
  }];
  let options = [
    Option<"trainer", "trainer", "std::string", "\"\"",
           "TRAINER[:FILE]: megatron, torchtitan or deepspeed">
  ];
  let dependentDialects = ["distopt::dist::DistDialect"];
}

def SimulatePass : Pass<"dist-simulate", "mlir::ModuleOp"> {
  let summary = "predicts the module's plan: summary, report, trace, timeline";
  let description = [{
    Simulates the plan the module carries, reading only the module: the
    cluster (`dist.cluster`, with its profile database), the plan
    (`dist.plan`), the layers of the planned function (`dist.layer`, or its
    analysis when absent) and, when present, the materialized schedule
    (`dist.schedule`, whose action lists then replace the ones the plan's
    schedule kind would generate). Writes the JSON report (`report`,
    docs/report-format.md), a Chrome/Perfetto trace (`trace`), an SVG
    timeline (`timeline`) and one HTML page of the plan, its prediction and
    timeline (`report-html`) to
    the files named, and (unless `summary=false`)
    prints the prediction: iteration time, throughput, FLOP/s per device,
    bubble, peak memory per stage and traffic per link level. Inference
    plans report latency and stream throughput. The IR is not changed.

    Example:

    ```
    dist-opt planned.mlir --dist-simulate --dist-report=b.json
    dist-opt planned.mlir --pass-pipeline='builtin.module(dist-simulate{report=b.json timeline=t.svg})'
    ```
  }];
  let options = [
    Option<"report", "report", "std::string", "\"\"",
           "Write the JSON report to this file">,
    Option<"trace", "trace", "std::string", "\"\"",
           "Write a Chrome/Perfetto trace to this file">,
    Option<"timeline", "timeline", "std::string", "\"\"",
           "Draw the schedule as an SVG timeline in this file">,
    Option<"reportHtml", "report-html", "std::string", "\"\"",
           "Write the report as one self-contained HTML page to this file">,
    Option<"summary", "summary", "bool", "true",
           "Print the prediction">,
    Option<"replan", "replan", "std::string", "\"\"",
           "The running plan's JSON report: also plan the migration from it "
           "to this plan and its downtime (docs/resilience.md)">,
    Option<"relaunch", "relaunch", "std::string", "\"\"",
           "The job start dist-run --record-relaunch measured (JSON): priced "
           "in a pause's downtime and in restarts where the cluster gives no "
           "relaunch_s (docs/resilience.md)">,
    Option<"resilience", "resilience", "std::string", "\"none\"",
           "Plan for preemptible nodes: none, checkpoint, redundant or elastic "
           "(docs/resilience.md)">,
    Option<"preemptions", "preemptions", "std::string", "\"\"",
           "Seed of the injected preemptions (empty: none injected)">,
    Option<"input", "input", "std::string", "\"\"",
           "The model's input per sample (bytes=SIZE,preprocess=TIME,"
           "dataset=COUNT): iterations wait on the input pipeline">
  ];
  let dependentDialects = ["distopt::dist::DistDialect"];
}

#endif // DIST_PASSES_PLANNING_PASSES_TD
