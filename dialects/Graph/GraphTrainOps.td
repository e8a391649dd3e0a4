//===- GraphTrainOps.td - Training ops ---------------------*- tablegen -*-===//
//
// Part of DistOpt. What `--dist-autodiff` adds to a forward graph: gradient
// ops (input gradients and weight gradients as separate ops), persistent
// training state, random dropout masks, loss scaling and optimizer updates.
// Every op here is emitted by the pass and lowered by the code generator;
// the semantics in each description are the contract between the two.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_GRAPH_TRAIN_OPS_TD
#define DIST_GRAPH_TRAIN_OPS_TD

include "dialects/Graph/GraphInterfaces.td"

class Graph_TrainOp<string mnemonic, list<Trait> traits = []>
    : Graph_Op<mnemonic, !listconcat(traits,
        [DeclareOpInterfaceMethods<Graph_CostOpInterface>])>;

//===----------------------------------------------------------------------===//
// State and randomness
//===----------------------------------------------------------------------===//

def Graph_StateOp : Graph_Op<"state", [Pure]> {
  let summary = "a persistent training buffer (optimizer state, accumulator)";
  let description = [{
    Reads the current value of a named persistent buffer that is not a model
    weight: optimizer moments, gradient accumulators, the step counter, the
    loss scale. Before the first step every element holds `init`. Like
    `graph.weight`, the op reads the value the buffer had when the function
    was called; a function result with the `graph.update = "<name>"` result
    attribute writes the buffer after the function returns (see
    docs/autodiff.md, calling convention).

    Example:

    ```mlir
    %m = graph.state "fc1.weight.adam_m" : tensor<128x64xf32>
    %s = graph.state "loss_scale" {init = 65536.0 : f64} : tensor<f32>
    ```
  }];
  let arguments = (ins StrAttr:$sym_name,
                       DefaultValuedAttr<F64Attr, "0.0">:$init);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$sym_name attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Graph_DropoutMaskOp : Graph_TrainOp<"dropout_mask",
    [AttrSizedOperandSegments]> {
  let summary = "a random inverted-dropout mask";
  let description = [{
    Each element is independently `0` with probability `ratio` and
    `1 / (1 - ratio)` otherwise. `seed` names the random stream (the
    autodiff pass gives each dropout op its own seed). The lowering draws
    element `i` from a counter-based generator keyed by `(seed, step,
    microbatch, i)`, where `step` is the optimizer's step counter (the
    training state `"step"`, which a skipped fp16 step does not advance)
    and `microbatch` the index of the micro-batch within the step (0 when
    absent). So the forward multiply and its gradient use the same mask,
    every step and micro-batch draws a new one, a retried (skipped) step
    draws the same one, and a run resumed from saved state reproduces the
    masks of an uninterrupted run. Without `step` the mask is keyed by a
    per-op call counter instead. The autodiff pass rewrites a training
    `graph.dropout %x` into `graph.binary mul %x, (graph.dropout_mask)`.
    Not `Pure`: it draws random numbers.

    Example:

    ```mlir
    %s = graph.state "step" {init = 0.0 : f64} : tensor<f32>
    %m = graph.dropout_mask step(%s : tensor<f32>)
        {ratio = 1.0e-01 : f64, seed = 3 : i64} : tensor<2x8x768xf32>
    ```
  }];
  let arguments = (ins Optional<AnyRankedTensor>:$step,
                       Optional<AnyRankedTensor>:$microbatch, F64Attr:$ratio,
                       DefaultValuedAttr<I64Attr, "0">:$seed);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    (`step` `(` $step^ `:` type($step) `)`)?
    (`microbatch` `(` $microbatch^ `:` type($microbatch) `)`)?
    attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Gradients: elementwise, softmax, loss
//===----------------------------------------------------------------------===//

def Graph_UnaryGradOp : Graph_TrainOp<"unary_grad", [Pure]> {
  let summary = "input gradient of `graph.unary`: `dy * f'(x)`";
  let description = [{
    `result = grad * f'(input)` elementwise, where `f` is the unary function
    named by `kind` with the same `alpha`/`beta` as the forward op. `input`
    is the forward op's *input*. Derivatives: relu `x > 0`; gelu (erf form)
    `Phi(x) + x * phi(x)`; gelu_tanh the derivative of the tanh
    approximation; tanh `1 - tanh(x)^2`; sigmoid `s(1 - s)`; silu
    `s(x) (1 + x (1 - s(x)))`; exp `exp(x)`; log `1/x`; sqrt `0.5/sqrt(x)`;
    rsqrt `-0.5 x^-1.5`; neg `-1`; abs `sign(x)`; reciprocal `-1/x^2`; sin
    `cos x`; cos `-sin x`; erf `2/sqrt(pi) exp(-x^2)`; softplus `s(x)`;
    softsign `1/(1+|x|)^2`; hard_sigmoid `alpha` inside `(0, 1)`, else 0;
    hard_swish `x/3 + 0.5` on `(-3, 3)`, 0 below, 1 above; leaky_relu
    `x > 0 ? 1 : alpha`; elu `x > 0 ? 1 : alpha exp(x)`; identity 1; sign,
    floor, ceil, round 0. `not`, `is_nan` and `is_inf` have no gradient.

    Example:

    ```mlir
    %dx = graph.unary_grad gelu %x, %dy
        : (tensor<2x8x3072xf32>, tensor<2x8x3072xf32>) -> tensor<2x8x3072xf32>
    ```
  }];
  let arguments = (ins Graph_UnaryKind:$kind, AnyRankedTensor:$input,
                       AnyRankedTensor:$grad, OptionalAttr<F64Attr>:$alpha,
                       OptionalAttr<F64Attr>:$beta);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $kind $input `,` $grad attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_SoftmaxGradOp : Graph_TrainOp<"softmax_grad", [Pure]> {
  let summary = "input gradient of `graph.softmax` from its output";
  let description = [{
    `output` is the forward op's *result* `y`. Without `log`:
    `result = y * (grad - sum(grad * y, axis))`; with `log` (y is
    log-softmax): `result = grad - exp(y) * sum(grad, axis)`, sums kept
    along `axis`.

    Example:

    ```mlir
    %dx = graph.softmax_grad %y, %dy {axis = -1 : i64}
        : (tensor<2x12x8x8xf32>, tensor<2x12x8x8xf32>) -> tensor<2x12x8x8xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$output, AnyRankedTensor:$grad,
                       DefaultValuedAttr<I64Attr, "-1">:$axis, UnitAttr:$log);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $output `,` $grad attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_SoftmaxCrossEntropyGradOp
    : Graph_TrainOp<"softmax_cross_entropy_grad", [Pure]> {
  let summary = "logits gradient of `graph.softmax_cross_entropy`";
  let description = [{
    `result[n, c, d...] = (softmax(logits)[n, c, d...] - (c == labels[n, d...]))
    * g[n, d...] / count`, where softmax runs over dimension 1, `g` is
    `grad` (a scalar for `mean`/`sum`, the labels' shape for `none`)
    broadcast over positions, `count` is the number of labels not equal to
    `ignore_index` for `mean` and 1 otherwise, and positions whose label is
    `ignore_index` get 0.

    Example:

    ```mlir
    %dl = graph.softmax_cross_entropy_grad mean %logits, %labels, %one
        : (tensor<16x1000xf32>, tensor<16xi64>, tensor<f32>)
        -> tensor<16x1000xf32>
    ```
  }];
  let arguments = (ins Graph_LossReduction:$reduction, AnyRankedTensor:$logits,
                       AnyRankedTensor:$labels, AnyRankedTensor:$grad,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $reduction $logits `,` $labels `,` $grad attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Gradients: normalizations
//===----------------------------------------------------------------------===//

def Graph_NormGradOp : Graph_TrainOp<"norm_grad", [Pure]> {
  let summary = "input gradient of layer_norm, rms_norm or training batch_norm";
  let description = [{
    `input` is the forward input `x`, `scale` the forward scale, `grad` the
    output gradient. The statistics are recomputed from `x`. With
    `kind = "layer"` (or `"rms"`) they run over dimensions `[axis, rank)`,
    with `kind = "batch"` over every dimension except 1 (channels; `axis`
    is ignored). With `xhat = (x - mean) * rstd` (`rms`: `xhat = x * rstd`,
    no mean) and `gs = grad * scale` (broadcast as in the forward op):
    `result = rstd * (gs - mean(gs) - xhat * mean(gs * xhat))`
    (`rms`: `rstd * (gs - xhat * mean(gs * xhat))`), means over the same
    dimensions.

    Example:

    ```mlir
    %dx = graph.norm_grad %x, %g, %dy {kind = "layer", axis = -1 : i64,
                                         epsilon = 1.0e-05 : f64}
        : (tensor<2x8x768xf32>, tensor<768xf32>, tensor<2x8x768xf32>)
        -> tensor<2x8x768xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$scale,
                       AnyRankedTensor:$grad, StrAttr:$kind,
                       DefaultValuedAttr<I64Attr, "-1">:$axis,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale `,` $grad attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_NormGradParamsOp : Graph_TrainOp<"norm_grad_params", [Pure]> {
  let summary = "scale (and bias) gradient of a normalization: weight gradient";
  let description = [{
    A weight-gradient op. `input` is the forward input `x`, `grad` the
    output gradient; `kind`, `axis`, `epsilon` as in `graph.norm_grad`.
    The first result is `dscale = sum(grad * xhat)`, the optional second
    `dbias = sum(grad)`, summed over every dimension the parameter is
    broadcast along: the leading `[0, axis)` for layer/rms (results have the
    shape of `x`'s dimensions `[axis, rank)`), all but dimension 1 for batch
    (results are 1-D of the channel count).

    Example:

    ```mlir
    %dg, %db = graph.norm_grad_params %x, %dy {kind = "layer", axis = -1 : i64,
                                                epsilon = 1.0e-05 : f64}
        : (tensor<2x8x768xf32>, tensor<2x8x768xf32>)
        -> (tensor<768xf32>, tensor<768xf32>)
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$grad,
                       StrAttr:$kind, DefaultValuedAttr<I64Attr, "-1">:$axis,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = [{
    $input `,` $grad attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Gradients: convolution, pooling, lookups
//===----------------------------------------------------------------------===//

def Graph_ConvGradInputOp : Graph_TrainOp<"conv_grad_input", [Pure]> {
  let summary = "input gradient of `graph.conv` (transposed convolution)";
  let description = [{
    `grad` is the output gradient `N x M x P...`, `weight` the forward
    weight `M x C/group x K...`; the result has the forward input's type
    `N x C x D...` (its shape fixes the output size a transposed
    convolution cannot infer). Window attributes are the forward op's.
    `result[n, c, d] = sum over (m, k) with d = p*stride - pad_begin +
    k*dilation of grad[n, m, p] * weight[m, c % (C/group), k]` within each
    group.
    It is also the forward op of an imported ONNX ConvTranspose (`grad` its
    input, `weight` its weight); differentiated there, its operands'
    gradients are a `graph.conv` of the result's gradient and a
    `graph.conv_grad_weight` with that gradient as the input.

    Example:

    ```mlir
    %dx = graph.conv_grad_input %dy, %w {strides = array<i64: 1, 1>,
        pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>,
        group = 1 : i64}
        : (tensor<8x16x32x32xf32>, tensor<16x3x3x3xf32>) -> tensor<8x3x32x32xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$grad, AnyRankedTensor:$weight,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$group);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $grad `,` $weight attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_ConvGradWeightOp : Graph_TrainOp<"conv_grad_weight", [Pure]> {
  let summary = "weight gradient of `graph.conv`";
  let description = [{
    A weight-gradient op. `input` is the forward input `N x C x D...`,
    `grad` the output gradient `N x M x P...`; the result has the forward
    weight's type `M x C/group x K...`:
    `result[m, c, k] = sum over (n, p) of grad[n, m, p] *
    input[n, g*C/group + c, p*stride - pad_begin + k*dilation]` (zero
    outside the input), `g` the group of filter `m`.

    Example:

    ```mlir
    %dw = graph.conv_grad_weight %x, %dy {strides = array<i64: 1, 1>,
        pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>,
        group = 1 : i64}
        : (tensor<8x3x32x32xf32>, tensor<8x16x32x32xf32>) -> tensor<16x3x3x3xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$grad,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$group);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `,` $grad attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_PoolGradOp : Graph_TrainOp<"pool_grad", [Pure]> {
  let summary = "input gradient of max or average `graph.pool`";
  let description = [{
    `input` is the forward input, `grad` the output gradient; window
    attributes are the forward op's. `max`: each output gradient goes to
    the first position (row-major within the window) holding the window's
    maximum. `avg`: each output gradient is spread evenly over the window's
    positions inside the input (over all window positions, padding included,
    with `count_include_pad`). Contributions of overlapping windows add up.
    `l2` pooling has no gradient op.

    Example:

    ```mlir
    %dx = graph.pool_grad max %x, %dy {kernel = array<i64: 2, 2>,
        strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>,
        dilations = array<i64: 1, 1>}
        : (tensor<1x8x4x4xf32>, tensor<1x8x2x2xf32>) -> tensor<1x8x4x4xf32>
    ```
  }];
  let arguments = (ins Graph_PoolKind:$kind, AnyRankedTensor:$input,
                       AnyRankedTensor:$grad, UnitAttr:$global,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$kernel,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$strides,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$pads,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$dilations,
                       UnitAttr:$ceil_mode, UnitAttr:$count_include_pad);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $kind $input `,` $grad attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_ScatterAddOp : Graph_TrainOp<"scatter_add", [Pure]> {
  let summary = "gradient of embedding/gather: zeros plus rows added at indices";
  let description = [{
    The result (the type of the forward op's table/data) starts as zeros;
    for every index position `i` (row-major over `indices`), the slice
    `grad[.., i, ..]` is added to `result` at index `indices[i]` along
    `axis` (negative indices count from the end). For `graph.embedding` the
    pass uses `axis = 0` and `grad` has shape `indices x table[1:]`; for
    `graph.gather` `grad` has the gather's result shape
    `data[:axis] x indices x data[axis+1:]`. A weight gradient when the
    table is a weight. With `elements` (the gradient of
    `graph.gather_elements`) `indices` and `grad` have one shape and
    `grad[c]` is added at `c` with `c[axis] = indices[c]`.

    Example:

    ```mlir
    %dt = graph.scatter_add %ids, %dy {axis = 0 : i64}
        : (tensor<2x8xi64>, tensor<2x8x768xf32>) -> tensor<50257x768xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$indices, AnyRankedTensor:$grad,
                       DefaultValuedAttr<I64Attr, "0">:$axis,
                       UnitAttr:$elements);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $indices `,` $grad attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Loss scaling and optimizer updates
//===----------------------------------------------------------------------===//

def Graph_UnscaleOp : Graph_TrainOp<"unscale", [Pure]> {
  let summary = "divides gradients by the loss scale and checks them";
  let description = [{
    `results[i] = grads[i] * (1 / scale)` (`scale` is an f32 scalar; the
    results are f32 whatever the gradients' float type), and the last
    result, a `tensor<i1>`, is true when any element of any result is not
    finite (inf or NaN). Matches `distrt_unscale_check`.

    Example:

    ```mlir
    %g0, %g1, %inf = graph.unscale %scale, %d0, %d1
        : (tensor<f32>, tensor<64x32xf32>, tensor<64xf32>)
        -> (tensor<64x32xf32>, tensor<64xf32>, tensor<i1>)
    ```
  }];
  let arguments = (ins AnyRankedTensor:$scale,
                       Variadic<AnyRankedTensor>:$grads);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = [{
    $scale `,` $grads attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_LossScaleUpdateOp : Graph_TrainOp<"loss_scale_update", [Pure]> {
  let summary = "dynamic loss-scale update (GradScaler rule)";
  let description = [{
    `scale` (f32 scalar) and `good_steps` (f32 scalar counter) are the
    state, `found_inf` the `graph.unscale` flag. If `found_inf`:
    `new_scale = scale * backoff_factor`, `new_good = 0`. Otherwise
    `new_good = good_steps + 1`, and when `new_good == growth_interval`,
    `new_scale = scale * growth_factor` and `new_good = 0`; else the scale
    is kept. Matches `distrt_loss_scaler_update`.

    Example:

    ```mlir
    %s2, %n2 = graph.loss_scale_update %s, %n, %inf {growth_factor = 2.0 : f64,
        backoff_factor = 0.5 : f64, growth_interval = 2000 : i64}
        : (tensor<f32>, tensor<f32>, tensor<i1>) -> (tensor<f32>, tensor<f32>)
    ```
  }];
  let arguments = (ins AnyRankedTensor:$scale, AnyRankedTensor:$good_steps,
                       AnyRankedTensor:$found_inf,
                       DefaultValuedAttr<F64Attr, "2.0">:$growth_factor,
                       DefaultValuedAttr<F64Attr, "0.5">:$backoff_factor,
                       DefaultValuedAttr<I64Attr, "2000">:$growth_interval);
  let results = (outs AnyRankedTensor:$new_scale,
                      AnyRankedTensor:$new_good_steps);
  let assemblyFormat = [{
    $scale `,` $good_steps `,` $found_inf attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_SgdUpdateOp : Graph_TrainOp<"sgd_update", [Pure, AttrSizedOperandSegments]> {
  let summary = "SGD step with optional momentum (PyTorch semantics)";
  let description = [{
    `g = grad + weight_decay * param`; with a `momentum_buf` operand
    (required when `momentum != 0`): `buf = step == 1 ? g : momentum * buf +
    (1 - dampening) * g`, then `g = nesterov ? g + momentum * buf : buf`;
    `new_param = param - lr * g`. Results: the new parameter, then the new
    buffer when one was given. `step` (f32 scalar, 1 on the first update)
    selects the first-step rule. With `skip` (an i1 scalar) true every
    result equals its input (an overflowed mixed-precision step). Matches
    `distrt_sgd_step`.

    Example:

    ```mlir
    %w2, %b2 = graph.sgd_update %w, %g, %step, %b {lr = 0.1 : f64,
                                                    momentum = 0.9 : f64}
        : (tensor<64x32xf32>, tensor<64x32xf32>, tensor<f32>, tensor<64x32xf32>)
        -> (tensor<64x32xf32>, tensor<64x32xf32>)
    ```
  }];
  let arguments = (ins AnyRankedTensor:$param, AnyRankedTensor:$grad,
                       AnyRankedTensor:$step,
                       Optional<AnyRankedTensor>:$momentum_buf,
                       Optional<AnyRankedTensor>:$skip,
                       F64Attr:$lr,
                       DefaultValuedAttr<F64Attr, "0.0">:$momentum,
                       DefaultValuedAttr<F64Attr, "0.0">:$dampening,
                       DefaultValuedAttr<F64Attr, "0.0">:$weight_decay,
                       UnitAttr:$nesterov);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = [{
    $param `,` $grad `,` $step (`,` $momentum_buf^)? (`skip` $skip^)? attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_AdamUpdateOp : Graph_TrainOp<"adam_update", [Pure]> {
  let summary = "Adam / AdamW step (PyTorch semantics)";
  let description = [{
    With `t = step` (f32 scalar, 1 on the first update):
    Adam (`decoupled` unset): `g = grad + weight_decay * param`;
    AdamW (`decoupled`): `g = grad`, `param = param * (1 - lr *
    weight_decay)` first. Then `m = beta1 * m + (1 - beta1) * g`,
    `v = beta2 * v + (1 - beta2) * g^2`,
    `new_param = param - lr * (m / (1 - beta1^t)) /
    (sqrt(v / (1 - beta2^t)) + epsilon)`. Results: new param, new `m`, new
    `v`. With `skip` true every result equals its input. Matches
    `distrt_adam_step` / `distrt_adamw_step`.

    Example:

    ```mlir
    %w2, %m2, %v2 = graph.adam_update %w, %g, %m, %v, %t {lr = 1.0e-03 : f64}
        : (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>,
           tensor<f32>) -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>)
    ```
  }];
  let arguments = (ins AnyRankedTensor:$param, AnyRankedTensor:$grad,
                       AnyRankedTensor:$exp_avg, AnyRankedTensor:$exp_avg_sq,
                       AnyRankedTensor:$step,
                       Optional<AnyRankedTensor>:$skip,
                       F64Attr:$lr,
                       DefaultValuedAttr<F64Attr, "0.9">:$beta1,
                       DefaultValuedAttr<F64Attr, "0.999">:$beta2,
                       DefaultValuedAttr<F64Attr, "1.0e-8">:$epsilon,
                       DefaultValuedAttr<F64Attr, "0.0">:$weight_decay,
                       UnitAttr:$decoupled);
  let results = (outs AnyRankedTensor:$new_param, AnyRankedTensor:$new_exp_avg,
                      AnyRankedTensor:$new_exp_avg_sq);
  let assemblyFormat = [{
    $param `,` $grad `,` $exp_avg `,` $exp_avg_sq `,` $step (`skip` $skip^)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // DIST_GRAPH_TRAIN_OPS_TD
