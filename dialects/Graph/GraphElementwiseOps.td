//===- GraphElementwiseOps.td - Elementwise ops ------------*- tablegen -*-===//
//
// Part of DistOpt. Elementwise math: unary with a kind, clip, binary with a
// kind and numpy broadcasting, where, cast, dropout.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_GRAPH_ELEMENTWISE_OPS_TD
#define DIST_GRAPH_ELEMENTWISE_OPS_TD

def Graph_UnaryOp : Graph_Op<"unary", [Pure]> {
  let summary = "elementwise unary function selected by `kind`";
  let description = [{
    Applies the function named by `kind` to every element. The result has
    the operand's type. `alpha` and `beta` parametrize the kinds that take
    parameters (`leaky_relu` and `elu` use `alpha`; `hard_sigmoid` uses
    `alpha` and `beta`).

    Example:

    ```mlir
    %y = graph.unary gelu %x : (tensor<2x8x3072xf32>) -> tensor<2x8x3072xf32>
    ```
  }];
  let arguments = (ins Graph_UnaryKind:$kind, AnyRankedTensor:$input,
                       OptionalAttr<F64Attr>:$alpha,
                       OptionalAttr<F64Attr>:$beta);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $kind $input attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_ClipOp : Graph_Op<"clip", [Pure]> {
  let summary = "clamps every element to [min, max]";
  let description = [{
    Clamps each element to `[min, max]`; a missing bound is unbounded.

    Example:

    ```mlir
    %y = graph.clip %x {min = 0.0 : f64, max = 6.0 : f64}
        : (tensor<1x32x112x112xf32>) -> tensor<1x32x112x112xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, OptionalAttr<F64Attr>:$min,
                       OptionalAttr<F64Attr>:$max);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_BinaryOp : Graph_Op<"binary", [Pure]> {
  let summary = "elementwise binary function with numpy broadcasting";
  let description = [{
    Applies the function named by `kind` elementwise after numpy-style
    broadcasting of both operands. Comparisons (`equal`, `less`, ...) yield
    `i1`; logical kinds take and yield `i1`; the others yield the element
    type of `lhs`. Operand element types must match, except for `pow`, whose
    exponent may have another type.

    `mod` follows Python (the result takes the sign of the divisor); with
    the `fmod` unit attribute (ONNX `Mod` with `fmod = 1`, allowed only on
    `mod`) it follows C `fmod` / integer `%` (the sign of the dividend).

    Example:

    ```mlir
    %r = graph.binary mod %a, %b {fmod}
        : (tensor<6xi64>, tensor<6xi64>) -> tensor<6xi64>
    %y = graph.binary add %a, %b
        : (tensor<2x8x768xf32>, tensor<768xf32>) -> tensor<2x8x768xf32>
    ```
  }];
  let arguments = (ins Graph_BinaryKind:$kind, AnyRankedTensor:$lhs,
                       AnyRankedTensor:$rhs, UnitAttr:$fmod);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $kind $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_WhereOp : Graph_Op<"where", [Pure]> {
  let summary = "elementwise select with three-way broadcasting";
  let description = [{
    `result[i] = condition[i] ? lhs[i] : rhs[i]` after broadcasting all
    three operands. `condition` has element type `i1`.

    Example:

    ```mlir
    %y = graph.where %mask, %scores, %ninf
        : (tensor<1x1x8x8xi1>, tensor<2x12x8x8xf32>, tensor<f32>)
        -> tensor<2x12x8x8xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$condition, AnyRankedTensor:$lhs,
                       AnyRankedTensor:$rhs);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $condition `,` $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_CastOp : Graph_Op<"cast", [Pure]> {
  let summary = "elementwise conversion to another element type";
  let description = [{
    Converts every element to the result's element type; shapes match.

    Example:

    ```mlir
    %y = graph.cast %x : (tensor<2x8xi64>) -> tensor<2x8xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_DropoutOp : Graph_Op<"dropout"> {
  let summary = "randomly zeroes elements with probability `ratio` in training";
  let description = [{
    In training, zeroes each element with probability `ratio` and scales the
    rest by `1 / (1 - ratio)`; in inference it is the identity. Not `Pure`:
    it draws random numbers.

    Example:

    ```mlir
    %y = graph.dropout %x {ratio = 1.000000e-01 : f64}
        : (tensor<2x8x768xf32>) -> tensor<2x8x768xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input,
                       DefaultValuedAttr<F64Attr, "0.5">:$ratio);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

#endif // DIST_GRAPH_ELEMENTWISE_OPS_TD
