//===- Passes.td - DistOpt passes ---------------------------*- tablegen -*-===//
//
// Part of DistOpt. Declarative definitions of DistOpt's own passes, grouped
// under banners; one pass per file under passes/<Group>/.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_PASSES_TD
#define DIST_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Import
//===----------------------------------------------------------------------===//

def FuseExporterPatternsPass : Pass<"dist-fuse-exporter-patterns",
                                    "mlir::func::FuncOp"> {
  let summary = "folds exporters' elementwise spellings of LayerNorm, "
                "RMSNorm, GELU and SiLU back into graph ops";
  let description = [{
    Exporters at opset < 17 (and other compilers lowering to elementwise
    ops) spell normalizations and activations as chains of `graph.binary`,
    `graph.unary` and `graph.reduce` ops. The pass recognizes the chains by
    their dataflow and constants, whichever operand order the exporter
    used, and replaces each with one op:

    | chain | op |
    | --- | --- |
    | `d = x - mean(x); d / sqrt(mean(d^2) + eps) * g [+ b]` | `graph.layer_norm` |
    | `x / sqrt(mean(x^2) + eps) * g`, also `x * (1 / sqrt(...))`, `x * reciprocal(sqrt(...))` | `graph.rms_norm` |
    | `0.5 * x * (1 + erf(x / sqrt(2)))` | `graph.unary gelu` |
    | `0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))` | `graph.unary gelu_tanh` |
    | `x * sigmoid(x)` | `graph.unary silu` |

    Means are over the last axis only and constants are matched to 1e-4
    relative; a chain that differs in any of this (another axis, 0.6 for
    0.5, `x * sigmoid(y)`) stays as it is. The ops the chains leave without
    uses, and any other side-effect-free op without uses (an exporter's
    unused constants and shape leftovers), are erased. The ONNX importer
    applies the same rewrite (lib/Import/Fusion.cpp) to every function it
    creates; the pass is for graph IR built or lowered by another compiler.

    Example:

    ```
    dist-opt exported.mlir --dist-fuse-exporter-patterns
    ```
  }];
  let dependentDialects = ["::distopt::graph::GraphDialect"];
}

//===----------------------------------------------------------------------===//
// Training programs
//===----------------------------------------------------------------------===//

def AutodiffPass : Pass<"dist-autodiff", "mlir::ModuleOp"> {
  let summary = "turns a forward graph with a loss into a training step";
  let description = [{
    Keeps the forward function (`func`, default `@main`) and adds the
    training program next to it: the forward ops, the loss (added by the
    `loss` option for a model without one), the backward ops of every
    differentiable graph op, and optimizer updates with their state.

    Input-gradient and weight-gradient work are separate ops (one
    `graph.matmul` for dX, another for dW; `graph.conv_grad_input` and
    `graph.conv_grad_weight`; `graph.norm_grad` and
    `graph.norm_grad_params`), and every op of the training program carries
    `graph.phase` = `forward`, `backward_input`, `backward_weight` or
    `optimizer`, so a zero-bubble schedule can defer the weight gradients.

    With `accumulation-steps=1` the pass adds `@train_step`; with k > 1 it
    adds `@train_microbatch` (forward, backward, gradients added to
    accumulator state) and `@train_apply` (unscale, optimizer, reset of the
    accumulators); the runtime calls the first k times, then the second.
    Weights and state are read with `graph.weight` / `graph.state`; a
    result with `graph.update = "<name>"` is written back to that buffer
    after the call. docs/autodiff.md gives the calling convention.

    Weights the model marks `frozen` (ONNX `Constant` values such as
    causal masks and rotary tables, initializers that the model's
    `training_info` does not update) are never trained, nor is anything
    computed from them and constants alone; `freeze=GLOB,...` freezes more
    weights by name and `train-only=GLOB,...` trains only the weights it
    names. The training function records what it trains in
    `graph.trained = {tensors, parameters, frozen = {name = reason},
    frozen_parameters}`.

    Mixed precision (`mixed-precision=bf16|fp16`) computes forward and
    backward in the low type with f32 master weights (cast after every
    weight read), the loss in f32, and loss scaling (`loss-scale`, dynamic
    for fp16 unless `dynamic-loss-scale=false`).

    Example:

    ```
    dist-opt model.onnx \
      --dist-autodiff="loss=softmax-cross-entropy:labels optimizer=adamw lr=3e-4"
    ```
  }];
  let options = [
    Option<"funcName", "func", "std::string", "\"main\"",
           "Forward function to differentiate">,
    Option<"loss", "loss", "std::string", "\"\"",
           "Loss to add: softmax-cross-entropy:LABEL_INPUT or "
           "mse:TARGET_INPUT (empty: the function returns its scalar loss)">,
    Option<"defaultLoss", "default-loss", "std::string", "\"\"",
           "Loss to add when loss= is empty (the tools' --dist-loss); both "
           "given must agree">,
    Option<"optimizer", "optimizer", "std::string", "\"sgd\"",
           "sgd, momentum, adam or adamw">,
    Option<"lr", "lr", "double", "0.01", "Learning rate">,
    Option<"momentum", "momentum", "double", "0.9",
           "Momentum of optimizer=momentum">,
    Option<"nesterov", "nesterov", "bool", "false",
           "Nesterov momentum (optimizer=momentum)">,
    Option<"weightDecay", "weight-decay", "double", "0.0",
           "Weight decay (L2 for sgd/momentum/adam, decoupled for adamw)">,
    Option<"beta1", "beta1", "double", "0.9", "Adam beta1">,
    Option<"beta2", "beta2", "double", "0.999", "Adam beta2">,
    Option<"epsilon", "epsilon", "double", "1.0e-8", "Adam epsilon">,
    Option<"accumulationSteps", "accumulation-steps", "int64_t", "1",
           "Micro-batches whose gradients add up before one update">,
    Option<"mixedPrecision", "mixed-precision", "std::string", "\"none\"",
           "none, bf16 or fp16">,
    Option<"lossScale", "loss-scale", "double", "0.0",
           "Loss scale (0: 65536 for fp16, 1 otherwise)">,
    Option<"dynamicLossScale", "dynamic-loss-scale", "bool", "true",
           "Adjust the fp16 loss scale on overflow (GradScaler rule)">,
    Option<"seed", "seed", "int64_t", "0",
           "First random stream of the dropout masks">,
    Option<"freeze", "freeze", "std::string", "\"\"",
           "Weights not to train: name globs, comma-separated (*, ?, [abc])">,
    Option<"trainOnly", "train-only", "std::string", "\"\"",
           "Train only the weights these comma-separated name globs match">
  ];
  let dependentDialects = ["distopt::graph::GraphDialect",
                           "mlir::func::FuncDialect"];
}

//===----------------------------------------------------------------------===//
// Planning
//===----------------------------------------------------------------------===//

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
    (docs/report-format.md). The module must carry `dist.cluster`
    (`dist-attach-cluster`). Errors (no plan fits, contradictory
    constraints) say what would fit.

    `devices=N` plans for the cluster's first N devices (whole nodes first,
    then part of the next); the others stay idle and the summary says how
    many. When the best plan is less than half as efficient per device as
    one device, the search also plans for 1, 2, 4, ... devices and says the
    model is too small for the cluster, naming the smallest count within
    10% of the fastest (docs/search.md).

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
    Option<"summary", "summary", "bool", "false",
           "Print the chosen plan and its prediction">,
    Option<"devices", "devices", "unsigned", "0",
           "Plan for the cluster's first N devices only, the others idle "
           "(0: all)">
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

    Example:

    ```
    dist-opt gpt.onnx --pass-pipeline='builtin.module(dist-attach-cluster{cluster=dgx-a100-80gb},dist-set-plan{plan="dp=2,tp=2,pp=2" batch=32})'
    ```
  }];
  let options = [
    Option<"plan", "plan", "std::string", "\"\"",
           "The plan: dp=..,tp=..,pp=..,mbs=..,schedule=..">,
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
           "Cost attention as one fused kernel (FlashAttention)">
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
    docs/report-format.md), a Chrome/Perfetto trace (`trace`) and an SVG
    timeline (`timeline`) to the files named, and (unless `summary=false`)
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
    Option<"summary", "summary", "bool", "true",
           "Print the prediction">
  ];
  let dependentDialects = ["distopt::dist::DistDialect"];
}

//===----------------------------------------------------------------------===//
// Distribution
//===----------------------------------------------------------------------===//

def TensorParallelPass : Pass<"dist-tensor-parallel", "mlir::ModuleOp"> {
  let summary = "rewrites the planned function into one tensor-parallel "
                "rank's part (Megatron column/row splits)";
  let description = [{
    For a module whose `#dist.plan` has tp > 1, rewrites the planned forward
    function so that every rank of a tensor-parallel group runs it on its
    own part of the weights, as Megatron-LM does. Run it before
    `dist-autodiff` (dist-compile does, for a planned module): the gradient
    rules of the ops it inserts make the backward Megatron's.

    A region starts at a *column-parallel* matmul: a `graph.matmul` whose
    right operand is a weight only it reads and whose left operand is
    replicated. Its output's last dimension is split over the tp ranks,
    blockwise when the output is cut into k equal pieces along it (a fused
    Q|K|V projection: each rank keeps its part of each piece). The split
    follows the ops that work on split activations: bias adds and other
    elementwise ops (a weight of the split dimension's size is sharded
    alike), views that keep, cut or merge the split dimension (the head
    dimension of attention), transposes, equal splits, softmax along
    another dimension, matmuls of two activations split along a shared
    batch dimension (attention scores), and further column matmuls met by
    an elementwise op (SwiGLU). It ends at *row-parallel* matmuls, which
    contract the split dimension against a weight's matching rows: their
    partial sums get `dist.all_reduce sum` over the group, and a bias joins
    after the sum. A region whose split would reach anything else (a
    residual add, a norm, a function result) is left replicated: it is
    computed whole on every rank, which is correct, only not parallel
    (`verbose` says why for each).

    The rewrite gives split values and sharded weights their local types,
    puts `dist.tp_copy` (forward the identity; gradient the group's
    all-reduce) on each column matmul's input, marks weights with
    `dist.tp_shard = [dim, blocks, parts]` (which part of the file a rank
    reads: dimension `dim` viewed as [blocks][parts][n], the rank's part of
    each block) and ops with the `dist.tp` role they run. Groups are the tp
    ranks of the op's pipeline stage (`dist.virtual_stage`), so tp x pp
    works; tp with dp, cp or per-stage replicas is an error, as is
    dropout with a non-zero ratio and a plan under which no region can be
    split. Replicated parts (embeddings, norms, the LM head) compute the
    same bits on every rank, so their weights stay equal without
    communication.

    Example:

    ```
    dist-opt mlp.onnx --input-shape=x:4x8 --dist-plan=tp=2 \
      --pass-pipeline='builtin.module(dist-tensor-parallel)'
    ```
  }];
  let options = [
    Option<"verbose", "verbose", "bool", "false",
           "remark, for each matmul left replicated, why">
  ];
  let dependentDialects = ["distopt::dist::DistDialect",
                           "distopt::graph::GraphDialect"];
}

def DataParallelPass : Pass<"dist-data-parallel", "mlir::ModuleOp"> {
  let summary = "averages gradients and the loss over every rank of the job";
  let description = [{
    Makes the training functions dist-autodiff built (`@train_step`, or
    `@train_microbatch` and `@train_apply` with gradient accumulation) data
    parallel. Every rank runs the same program on its own rows of the
    global batch:

    - the gradient operand of every `graph.sgd_update` / `graph.adam_update`
      becomes `dist.all_reduce mean over world` of it, inserted right before
      the update (in `@train_apply` with accumulation, so ranks exchange the
      accumulated gradient once per step);
    - a mixed-precision overflow flag (the updates' `skip`) is reduced with
      `max` right after it is computed, so every rank skips the same steps;
    - every scalar floating result marked `graph.output` (the loss) of
      `@train_step` / `@train_microbatch` is averaged, so every rank
      returns the global loss;
    - their inputs of rank >= 1 get `dist.batch_shard`: dim 0 is the
      per-rank batch (dist-compile's programs split the file given, which
      holds world-size times that many rows).

    `over world` is the group of every rank however many are launched, so
    one compiled program serves any world size. Mean of per-rank means
    equals the single-process mean over the whole batch when ranks hold
    equally many rows (losses that average over the batch). Functions
    already marked `dist.data_parallel` are left alone (idempotent); a
    module without a `graph.train` function is an error.

    **ZeRO-1** (`zero=1`, or a module plan of data parallelism alone, `pp =
    tp = 1`, with `zero = 1`): the optimizer state is sharded over the `dp`
    replicas, which must be known (`dp=N`, or the plan's `dp`), since the
    shards' shapes depend on it. Each parameter is flattened and padded with
    zeros to a multiple of `dp` elements; rank r owns block r. Instead of
    the all-reduce, each update becomes: `dist.reduce_scatter mean` of the
    flat gradient, `dist.all_slice` of the flat parameter, the update on the
    shard (its `graph.state` moments or momentum buffer read with the
    shard's shape: each rank's persistent buffer is its shard), and
    `dist.all_gather` of the new shards, unpadded and reshaped. Collectives
    name the devices `[0, ..., dp - 1]`; the function gets `dist.zero =
    {stage = 1, replicas = dp}`, and dist-compile's program runs on exactly
    `dp` ranks, each saving its own shard (`--save-state 'DIR/{rank}'`).
    ZeRO-2 and 3 are refused.

    Example:

    ```
    dist-opt mlp.onnx --input-shape=x:2x8 \
      --dist-autodiff="loss=mse:target optimizer=adam" --dist-data-parallel
    dist-opt mlp.onnx --input-shape=x:2x8 \
      --dist-autodiff="loss=mse:target optimizer=adam" \
      --dist-data-parallel="zero=1 dp=2"
    ```
  }];
  let options = [
    Option<"zeroStage", "zero", "int", "-1",
           "ZeRO stage: 0 replicates the optimizer state, 1 shards it over "
           "the dp replicas; -1: the module plan's (0 without one)">,
    Option<"replicas", "dp", "unsigned", "0",
           "Data-parallel replicas ZeRO shards over (the ranks the program "
           "runs on); 0: the module plan's dp">
  ];
  let dependentDialects = ["distopt::dist::DistDialect",
                           "distopt::graph::GraphDialect"];
}

//===----------------------------------------------------------------------===//
// Emission
//===----------------------------------------------------------------------===//

def PrepareForEmissionPass : Pass<"dist-prepare-for-emission",
                                  "mlir::ModuleOp"> {
  let summary = "records the program printer's decisions in the IR";
  let description = [{
    Makes every decision the C++/CUDA printer of `dist-compile` needs and
    writes it into the IR with the `emit` dialect, so the printer prints
    what the IR says (the split CIRCT's ExportVerilog makes between its
    PrepareForEmission pass and its emitter). On every function body, and
    on every `dist.stage` body of a pipelined function:

    0. tensor-parallel region entries (`dist.tp_copy`, the identity once
       dist-autodiff gave it its gradient) are replaced by their input;

    1. precision: ops whose runtime kernel computes in f32 only and that
       have a 16-bit float operand or result get `emit.compute_type = f32`;
    2. kernels (`emit.kernel`): on the CPU a matmul or 2-D convolution takes
       the chain of elementwise ops after it as oneDNN post-ops (bias,
       activation, residual add, scaling); the other elementwise ops fuse
       into generated loops (an op whose one use is an elementwise op of the
       same result shape is computed in its user's loop); with
       `eltwise-kernels` a lone f32 transcendental op (gelu, tanh, exp, ...)
       runs on the runtime's vectorized eltwise kernel;
    3. layouts: reshape, flatten, inference dropout, transpose, slice and
       split results are views of their operand's memory with the strides
       they are read with (`#emit.buffer<view, offset, strides>`); on the
       CPU a 2-D convolution writes channels-last (NHWC) and pooling and
       elementwise loops keep their input's layout, so a convolution chain
       is not reordered per op; where a reader needs another layout
       (row-major for most runtime kernels and for returned values, the
       output's for a convolution's input) `emit.copy` makes it, once per
       value;
    4. memory: weights, constants and optimizer state are resident (filled
       on the first run and kept); inputs and every other result get a slot
       of the body's arena, reused by values whose live ranges do not
       overlap and written in place over an operand a kernel reads for the
       last time; the body's owner gets `emit.memory_plan`.

    The emit dialect verifies the result: kernel legality, view strides,
    and that no two live values share arena bytes. Functions that already
    have a plan are left alone.

    Example:

    ```
    dist-opt model.mlir --dist-prepare-for-emission
    dist-opt model.mlir --dist-prepare-for-emission="target=cuda"
    ```
  }];
  let options = [
    Option<"target", "target", "::distopt::EmissionTarget",
           "::distopt::EmissionTarget::CPU",
           "What the printed program runs on (post-ops and eltwise kernels "
           "are the CPU runtime's)",
           [{::llvm::cl::values(
               clEnumValN(::distopt::EmissionTarget::CPU, "cpu",
                          "host C++ against the oneDNN runtime"),
               clEnumValN(::distopt::EmissionTarget::CUDA, "cuda",
                          "CUDA C++ against the cuBLAS/cuDNN runtime"))}]>,
    Option<"postOps", "post-ops", "bool", "true",
           "Fold elementwise chains into the matmul or convolution before "
           "them (CPU)">,
    Option<"inPlace", "in-place", "bool", "true",
           "Let kernels write their result over an operand they read last">,
    Option<"views", "views", "bool", "true",
           "Read transposes, slices and splits in place (strided views) "
           "where their readers take strides">,
    Option<"channelsLast", "channels-last", "bool", "true",
           "Keep chains of 2-D convolutions, pooling and their elementwise "
           "ops in NHWC (CPU)">,
    Option<"eltwiseKernels", "eltwise-kernels", "bool", "false",
           "Run a lone f32 transcendental op (gelu, tanh, exp, ...) on the "
           "runtime's vectorized kernel (CPU); off by default because its "
           "results differ in the last bits from the generated loop's, so a "
           "function cut into pipeline stages (where such an op may stand "
           "alone) would not compute the unstaged program's bits">
  ];
  let dependentDialects = ["distopt::emit::EmitDialect",
                           "distopt::graph::GraphDialect"];
}

//===----------------------------------------------------------------------===//
// Partitioning
//===----------------------------------------------------------------------===//

def MaterializeSchedulePass : Pass<"dist-materialize-schedule",
                                   "mlir::ModuleOp"> {
  let summary = "writes the plan's schedule as per-rank dist.actions lists";
  let description = [{
    Generates the schedule of the module's `dist.plan` (its schedule kind,
    pipeline ranks, chunks, micro-batches, per-stage replicas, data-parallel
    and ZeRO gradient synchronisation; for an inference plan the
    forward-only stream) and writes it into the IR as one `dist.schedule`
    for the planned function: for every pipeline rank (every slot, with
    per-stage replicas) a `dist.actions` list of forward, backward
    (`backward_input` / `backward_weight` for zero-bubble schedules), send,
    receive, gradient-sync and optimizer actions in the order that rank runs
    them. Compute actions call the outlined stage functions; when the
    planned function is not outlined yet, the pass first runs
    `dist-outline-stages` and `dist-outline-stage-functions` on the module.
    An existing schedule of the function is replaced. With `forward=true`
    the forward-only stream is written even for a training plan: the
    schedule of the forward function's pipeline (inference).

    This is the form the simulator (`dist-simulate`), the verifier
    (`dist-verify-schedule`) and `dist-compile` consume, and the form a user
    or another compiler may edit. docs/partition.md.

    Example:

    ```
    dist-opt planned.mlir --dist-materialize-schedule
    ```
  }];
  let options = [
    Option<"forward", "forward", "bool", "false",
           "Write the forward-only stream of the plan's stages (what an "
           "inference program of the forward function runs), whatever the "
           "plan's mode">
  ];
  let dependentDialects = ["distopt::dist::DistDialect",
                           "mlir::func::FuncDialect"];
}

def OutlineStageFunctionsPass : Pass<"dist-outline-stage-functions",
                                     "mlir::ModuleOp"> {
  let summary = "turns each dist.stage region into a stage function";
  let description = [{
    Moves the body of every `dist.stage` region of a function `@f` into a
    private function `@f_stage<v>` (`v` the virtual stage) with the
    attribute `dist.virtual_stage = v`: the region's inputs become the
    function's arguments and its `dist.yield` a `func.return`. The region is
    replaced by a `func.call`, so `@f` keeps the dataflow of one micro-batch
    from stage to stage while the schedule (`dist.schedule`) says when each
    stage runs on which rank. Functions without stage regions are left
    alone; a name that is taken is an error.

    Example:

    ```
    dist-opt staged.mlir --dist-outline-stage-functions
    ```
  }];
  let dependentDialects = ["distopt::dist::DistDialect",
                           "mlir::func::FuncDialect"];
}

def OutlineStagesPass : Pass<"dist-outline-stages", "mlir::ModuleOp"> {
  let summary = "wraps the planned pipeline stages into dist.stage regions";
  let description = [{
    Writes the plan's pipeline stages into the IR. On every function whose
    ops the planner annotated with `dist.stage = <virtual stage>`, the pass
    builds one `dist.stage` region per virtual stage of the module's
    `dist.plan` (pp * chunks of them, in stage order, empty ones included)
    and moves each op into the region of its stage:

    - values one stage computes and a later one reads become results of
      the first (`dist.yield`) and inputs of the second; function arguments
      enter as inputs; the function returns the last stage's results;
    - an op without `dist.stage` goes to the first stage that uses it,
      except cheap, pure, sample-independent ops (constants, `graph.weight`
      and `graph.state` reads, `graph.iota`, and ops of at most one FLOP per
      result element whose operands are all such ops), which are cloned
      into every stage that uses them; unused ops go to the last stage;
    - virtual stage v runs on pipeline rank s = v % pp, as the mesh
      `[dp, tp]` (size-1 axes kept) of the devices t + tp * (d + dp * s), so
      interleaved chunks v and v + pp are separate regions on one mesh;
      with per-stage `replicas` (PipeDream) the mesh is `[r_s, tp]` on the
      devices t + tp * (r_0 + ... + r_{s-1} + d).

    `dist.tp` stays on the moved ops; `dist.stage` is dropped from them (the
    region's index replaces it). Functions without annotations and already
    outlined functions are left alone, so the pass is idempotent. When a
    value would flow from a later stage to an earlier one, a stage index is
    out of range, or `dist.plan` is missing, the pass reports the op and
    fails without changing the IR. docs/partition.md has an example.

    Example:

    ```
    dist-opt model.onnx --dist-cluster=dgx-a100-80gb:1 \
      --dist-plan="dp=2,pp=4,schedule=1f1b" --dist-batch=8 -o planned.mlir
    dist-opt planned.mlir --dist-outline-stages
    ```
  }];
  let dependentDialects = ["distopt::dist::DistDialect"];
}

def PartitionPass : Pass<"dist-partition", "mlir::ModuleOp"> {
  let summary = "per-list programs: the schedule as calls, sends and receives";
  let description = [{
    Turns the module's `dist.schedule` into one function per action list,
    `@<f>_rank<L>` with `dist.action_list = L`, that every device of list L
    (a pipeline stage group, or a slot) runs: its arguments are the planned
    function's inputs for all micro-batches of one iteration (`microbatches`
    of the plan times the micro-batch's rows), split with
    `dist.microbatch_split`; then the list's actions in the schedule's
    order, each a `func.call` of a stage function or the `dist.send` /
    `dist.recv` of the values crossing that stage boundary (`to list` /
    `from list`: the peer list's device with this device's coordinates,
    tag = boundary x values + value); the list that runs the last stage
    returns the outputs, joined with `dist.microbatch_merge`. `dist-compile`
    prints these functions; nothing about the schedule is decided there.

    A forward function runs the forward stream of the plan's stages: when
    the module has no schedule yet, the pass materializes the forward one
    (`dist-materialize-schedule{forward=true}`, outlining first as that pass
    does).

    A module with dist-autodiff's `@train_step` (autodiff run on the
    planned forward function, so its ops carry their stage; gradient ops
    take the stage of the op they differentiate) is pipelined for training:
    the step is outlined into `@train_step_stage<v>_forward`,
    `_backward_input` and `_backward_weight` functions (`dist.virtual_stage`,
    `dist.train_phase`) and becomes their calls followed by the optimizer;
    the plan's training schedule is written when the module has none. Each
    list's program calls the stage functions per micro-batch in the
    schedule's order (a backward reads its forward's values: the stash),
    sends activations forward and gradients back, and at `optimizer_step`
    runs its stages' optimizer ops on the mean gradient over the step's
    micro-batches. The list of the last stage sends the mean loss to list
    0, which returns it; each list returns its own updates. Tied weights
    across stages, mixed precision, accumulation-steps > 1, and data or
    tensor parallelism inside a pipeline are refused with an error.

    Example:

    ```
    dist-opt planned.mlir --dist-partition
    ```
  }];
  let dependentDialects = ["distopt::dist::DistDialect",
                           "distopt::graph::GraphDialect",
                           "mlir::func::FuncDialect"];
}

def VerifySchedulePass : Pass<"dist-verify-schedule", "mlir::ModuleOp"> {
  let summary = "checks that the module's schedule runs";
  let description = [{
    Checks the module's `dist.schedule` against its plan with the schedule
    verifier of the cost core: every forward and backward of every
    micro-batch and chunk appears exactly once, on the rank its stage runs
    on; each runs after its inputs arrived (a receive before it, or the
    previous chunk on the same rank); sends go to and receives come from the
    neighbouring stages; the lists cannot deadlock when sends are eager and
    receives block (collectives of a replicated stage are rendezvous); and,
    when the module carries its cluster, every rank's peak memory (static
    state, activations in flight, stashes) fits its devices or
    `memory-limit`. A failure is reported on the offending action op and
    names the rank, the action and what would fix it. The IR is not
    changed.

    Example:

    ```
    dist-opt scheduled.mlir --dist-verify-schedule
    ```
  }];
  let options = [
    Option<"memoryLimit", "memory-limit", "std::string", "\"\"",
           "Per-device memory limit such as 80GB (default: each device's)">
  ];
  let dependentDialects = ["distopt::dist::DistDialect"];
}

#endif // DIST_PASSES_TD
