//===- GraphOps.td - Ops of the graph dialect --------------*- tablegen -*-===//
//
// Part of DistOpt. Entry point of the op definitions; the ops themselves are
// split by family into the files included below.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_GRAPH_OPS_TD
#define DIST_GRAPH_OPS_TD

include "dialects/Graph/GraphDialect.td"
include "dialects/Graph/GraphEnums.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Data: weights, constants and the opaque fallback
//===----------------------------------------------------------------------===//

def Graph_WeightOp : Graph_Op<"weight", [Pure]> {
  let summary = "a reference to a model weight (bytes stay in their file)";
  let description = [{
    A trained parameter or other large initializer. The op carries the
    tensor type and *where* its bytes live, never the bytes: `file` is the
    path of the file that holds them (the model file itself or an external
    data file, as written in the model, relative to the model's folder),
    `offset` and `size` locate them in bytes. A weight without `file` has no
    data attached: its bytes were not checked (`--dist-weights=ignore`) or
    the model is graph-only.

    `frozen` marks a tensor that training never updates and says why:
    `"constant"` for the value of an ONNX `Constant` node (a causal mask, a
    rotary table), `"training_info"` for an initializer that the model's
    training info does not update. `dist-autodiff` treats it as a constant;
    its `freeze=` / `train-only=` options freeze more weights by name.

    Example:

    ```mlir
    %w = graph.weight "wte" {file = "gpt2.onnx", offset = 1024 : i64,
                             size = 154389504 : i64} : tensor<50257x768xf32>
    %g = graph.weight "h.0.ln_1.weight" : tensor<768xf32>
    %m = graph.weight "/model/Constant_1_output_0" {frozen = "constant"}
        : tensor<16x17xf32>
    ```
  }];
  let arguments = (ins StrAttr:$sym_name, OptionalAttr<StrAttr>:$file,
                       OptionalAttr<I64Attr>:$offset,
                       OptionalAttr<I64Attr>:$size,
                       OptionalAttr<StrAttr>:$frozen);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$sym_name attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Graph_ConstantOp : Graph_Op<"constant",
    [ConstantLike, Pure,
     DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "a small inline tensor (shapes, scalars)";
  let description = [{
    A small constant kept inline, e.g. an int64 shape tensor or a scalar.
    The importer inlines at most 64 elements; anything larger is a
    `graph.weight`.

    Example:

    ```mlir
    %s = graph.constant dense<[2, 1024, 12, 64]> : tensor<4xi64>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$value attr-dict";
  let hasFolder = 1;
}

def Graph_OpaqueOp : Graph_Op<"opaque"> {
  let summary = "an ONNX operator the dialect does not model";
  let description = [{
    Keeps any operator the dialect does not model so that every model can
    still be planned: the ONNX `op_type`, its `domain` (empty for the default
    domain), its attributes as a dictionary and its inferred result types.
    Passes treat it conservatively (unknown cost, not shardable).
    When the ONNX node leaves optional inputs or outputs out in the middle
    (an empty name), `input_indices` / `output_indices` give the ONNX
    position of each operand / result.

    Example:

    ```mlir
    %y = graph.opaque "NonMaxSuppression"(%boxes, %scores)
        {domain = "", attrs = {center_point_box = 0 : i64}}
        : (tensor<1x100x4xf32>, tensor<1x1x100xf32>) -> tensor<10x3xi64>
    ```
  }];
  let arguments = (ins StrAttr:$op_type, DefaultValuedStrAttr<StrAttr, "">:$domain,
                       DefaultValuedAttr<DictionaryAttr, "{}">:$attrs,
                       OptionalAttr<DenseI64ArrayAttr>:$input_indices,
                       OptionalAttr<DenseI64ArrayAttr>:$output_indices,
                       Variadic<AnyType>:$inputs);
  let results = (outs Variadic<AnyType>:$outputs);
  let assemblyFormat = [{
    $op_type `(` $inputs `)` attr-dict `:` functional-type($inputs, $outputs)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

def Graph_MatmulOp : Graph_Op<"matmul", [Pure]> {
  let summary = "batched, broadcasting matrix product (ONNX MatMul and Gemm)";
  let description = [{
    `result = alpha * op(lhs) x op(rhs) + beta * bias`, where `op` transposes
    the last two dimensions when `transpose_lhs` / `transpose_rhs` is set.
    Follows numpy `matmul`: leading (batch) dimensions broadcast, a rank-1
    `lhs` gains a leading 1 and a rank-1 `rhs` a trailing 1, both removed
    from the result. The optional `bias` broadcasts to the result.

    Example:

    ```mlir
    %y = graph.matmul %x, %w, %b {transpose_rhs = true}
        : (tensor<8x768xf32>, tensor<3072x768xf32>, tensor<3072xf32>)
        -> tensor<8x3072xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$lhs, AnyRankedTensor:$rhs,
                       Optional<AnyRankedTensor>:$bias,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_lhs,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_rhs,
                       DefaultValuedAttr<F64Attr, "1.0">:$alpha,
                       DefaultValuedAttr<F64Attr, "1.0">:$beta);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

include "dialects/Graph/GraphElementwiseOps.td"
include "dialects/Graph/GraphDataOps.td"
include "dialects/Graph/GraphNNOps.td"
include "dialects/Graph/GraphTrainOps.td"

#endif // DIST_GRAPH_OPS_TD
