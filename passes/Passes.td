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
// Distribution
//===----------------------------------------------------------------------===//

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

    Example:

    ```
    dist-opt mlp.onnx --input-shape=x:2x8 \
      --dist-autodiff="loss=mse:target optimizer=adam" --dist-data-parallel
    ```
  }];
  let dependentDialects = ["distopt::dist::DistDialect",
                           "distopt::graph::GraphDialect"];
}

//===----------------------------------------------------------------------===//
// Partitioning
//===----------------------------------------------------------------------===//

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

#endif // DIST_PASSES_TD
