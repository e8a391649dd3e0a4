//===- Passes.td - Autodiff passes -------------------------*- tablegen -*-===//
//
// Part of DistOpt. The training programs passes (passes/Autodiff/, one pass per file);
// passes/Passes.h declares and registers every group.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_PASSES_AUTODIFF_PASSES_TD
#define DIST_PASSES_AUTODIFF_PASSES_TD

include "mlir/Pass/PassBase.td"

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

#endif // DIST_PASSES_AUTODIFF_PASSES_TD
