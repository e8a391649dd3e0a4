//===- GraphNNOps.td - Neural-network ops ------------------*- tablegen -*-===//
//
// Part of DistOpt. Ops with neural-network structure: convolution, pooling,
// normalizations, softmax, reductions and losses.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_GRAPH_NN_OPS_TD
#define DIST_GRAPH_NN_OPS_TD

def Graph_ConvOp : Graph_Op<"conv", [Pure]> {
  let summary = "N-d grouped convolution (NCHW, weights OIHW)";
  let description = [{
    ONNX Conv. `input` is `N x C x D1 x ... x Dn`, `weight` is
    `M x C/group x K1 x ... x Kn`, the optional `bias` is `M`. `pads` holds
    `[begin_1, ..., begin_n, end_1, ..., end_n]`. Output spatial size is
    `floor((D + begin + end - dilation * (K - 1) - 1) / stride) + 1`.

    Example:

    ```mlir
    %y = graph.conv %x, %w, %b {strides = array<i64: 2, 2>,
                                pads = array<i64: 3, 3, 3, 3>,
                                dilations = array<i64: 1, 1>, group = 1 : i64}
        : (tensor<1x3x224x224xf32>, tensor<64x3x7x7xf32>, tensor<64xf32>)
        -> tensor<1x64x112x112xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$weight,
                       Optional<AnyRankedTensor>:$bias,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$group);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_PoolOp : Graph_Op<"pool", [Pure]> {
  let summary = "max / average / Lp pooling, windowed or global";
  let description = [{
    Windowed pooling over the spatial dimensions of an `N x C x D1...Dn`
    input with `kernel`, `strides`, `pads` (`[begins..., ends...]`) and
    `dilations`; `ceil_mode` rounds the output size up. With `global` set
    the window covers all spatial dimensions, the window attributes are
    empty and every spatial output dimension is 1. `count_include_pad`
    applies to `avg`.

    Example:

    ```mlir
    %y = graph.pool max %x {kernel = array<i64: 3, 3>,
                            strides = array<i64: 2, 2>,
                            pads = array<i64: 1, 1, 1, 1>,
                            dilations = array<i64: 1, 1>}
        : (tensor<1x64x112x112xf32>) -> tensor<1x64x56x56xf32>
    %g = graph.pool avg %y {global}
        : (tensor<1x64x56x56xf32>) -> tensor<1x64x1x1xf32>
    ```
  }];
  let arguments = (ins Graph_PoolKind:$kind, AnyRankedTensor:$input,
                       UnitAttr:$global,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$kernel,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$strides,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$pads,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$dilations,
                       UnitAttr:$ceil_mode, UnitAttr:$count_include_pad);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $kind $input attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_SoftmaxOp : Graph_Op<"softmax", [Pure]> {
  let summary = "softmax (or log-softmax) along `axis`";
  let description = [{
    Normalizes along one axis (opset-13 semantics). With `log` set, it is
    `log(softmax(x))`.

    Example:

    ```mlir
    %p = graph.softmax %s {axis = -1 : i64}
        : (tensor<2x12x8x8xf32>) -> tensor<2x12x8x8xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input,
                       DefaultValuedAttr<I64Attr, "-1">:$axis, UnitAttr:$log);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_LayerNormOp : Graph_Op<"layer_norm", [Pure]> {
  let summary = "layer normalization over the dimensions from `axis` on";
  let description = [{
    `(x - mean) / sqrt(var + epsilon) * scale + bias`, with mean and
    variance over dimensions `[axis, rank)`. `scale` and the optional `bias`
    broadcast to those trailing dimensions. The importer also recognises
    the ReduceMean/Sub/Pow/Sqrt/Div pattern of opset < 17 exporters.

    Example:

    ```mlir
    %y = graph.layer_norm %x, %g, %b {axis = -1 : i64, epsilon = 1.0e-05 : f64}
        : (tensor<2x8x768xf32>, tensor<768xf32>, tensor<768xf32>)
        -> tensor<2x8x768xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$scale,
                       Optional<AnyRankedTensor>:$bias,
                       DefaultValuedAttr<I64Attr, "-1">:$axis,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_RMSNormOp : Graph_Op<"rms_norm", [Pure]> {
  let summary = "root-mean-square normalization over dimensions from `axis`";
  let description = [{
    `x / sqrt(mean(x^2) + epsilon) * scale (+ bias)`, with the mean over
    dimensions `[axis, rank)` (LLaMA's RMSNorm). The importer recognises
    the Pow/ReduceMean/Add/Sqrt/Div (or Reciprocal/Mul) pattern.

    Example:

    ```mlir
    %y = graph.rms_norm %x, %g {axis = -1 : i64, epsilon = 1.0e-06 : f64}
        : (tensor<1x8x4096xf32>, tensor<4096xf32>) -> tensor<1x8x4096xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$scale,
                       Optional<AnyRankedTensor>:$bias,
                       DefaultValuedAttr<I64Attr, "-1">:$axis,
                       DefaultValuedAttr<F64Attr, "1.0e-6">:$epsilon);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_BatchNormOp : Graph_Op<"batch_norm", [Pure]> {
  let summary = "batch normalization (inference, or training with statistics)";
  let description = [{
    `(x - mean) / sqrt(var + epsilon) * scale + bias` per channel (dimension
    1). `scale`, `bias`, `mean` and `var` are 1-D of the channel count.

    Without `training` the given running statistics normalize (inference
    form). With `training` the batch's own statistics normalize and the op
    may also yield the updated running mean and variance
    (`running = momentum * running + (1 - momentum) * batch`) as two more
    1-D results, as ONNX BatchNormalization with `training_mode = 1` does.

    Example:

    ```mlir
    %y = graph.batch_norm %x, %s, %b, %m, %v {epsilon = 1.0e-05 : f64}
        : (tensor<1x64x56x56xf32>, tensor<64xf32>, tensor<64xf32>,
           tensor<64xf32>, tensor<64xf32>) -> tensor<1x64x56x56xf32>
    %t, %rm, %rv = graph.batch_norm %x, %s, %b, %m, %v {training}
        : (tensor<8x64x56x56xf32>, tensor<64xf32>, tensor<64xf32>,
           tensor<64xf32>, tensor<64xf32>)
        -> (tensor<8x64x56x56xf32>, tensor<64xf32>, tensor<64xf32>)
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$scale,
                       AnyRankedTensor:$bias, AnyRankedTensor:$mean,
                       AnyRankedTensor:$variance,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon,
                       DefaultValuedAttr<F64Attr, "0.9">:$momentum,
                       UnitAttr:$training);
  let results = (outs AnyRankedTensor:$result,
                      Variadic<AnyRankedTensor>:$running_stats);
  let assemblyFormat = [{
    $input `,` $scale `,` $bias `,` $mean `,` $variance attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_ReduceOp : Graph_Op<"reduce", [Pure]> {
  let summary = "reduction over `axes` selected by `kind`";
  let description = [{
    Reduces the listed `axes` (all axes when empty) with the function named
    by `kind`; `keepdims` keeps them as size-1 dimensions. `arg_max` and
    `arg_min` take exactly one axis and yield `i64` indices: of the first
    extreme along it, or of the last with `select_last_index` (which other
    kinds do not take).

    Example:

    ```mlir
    %m = graph.reduce mean %x {axes = array<i64: -1>, keepdims = true}
        : (tensor<2x8x768xf32>) -> tensor<2x8x1xf32>
    ```
  }];
  let arguments = (ins Graph_ReduceKind:$kind, AnyRankedTensor:$input,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$axes,
                       DefaultValuedAttr<BoolAttr, "true">:$keepdims,
                       DefaultValuedAttr<BoolAttr, "false">:$select_last_index);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $kind $input attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_SoftmaxCrossEntropyOp : Graph_Op<"softmax_cross_entropy", [Pure]> {
  let summary = "softmax cross-entropy loss of logits against class labels";
  let description = [{
    `logits` is `N x C` (or `N x C x D1...`), `labels` holds class indices
    of shape `N` (or `N x D1...`). `reduction = none` yields the per-sample
    loss (the labels' shape); `mean` and `sum` yield a scalar. Labels equal
    to `ignore_index` contribute nothing.

    Example:

    ```mlir
    %l = graph.softmax_cross_entropy mean %logits, %labels
        : (tensor<16x50257xf32>, tensor<16xi64>) -> tensor<f32>
    ```
  }];
  let arguments = (ins Graph_LossReduction:$reduction, AnyRankedTensor:$logits,
                       AnyRankedTensor:$labels,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $reduction $logits `,` $labels attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // DIST_GRAPH_NN_OPS_TD
