//===- GraphDataOps.td - Data movement ops -----------------*- tablegen -*-===//
//
// Part of DistOpt. Ops that move or select data without arithmetic:
// reshape, transpose, split, slice, concat, expand, pad, trilu, gather,
// gather_nd, scatter_elements, embedding, flatten, iota; cumsum, a scan, and
// top_k, a selection, lowered to loops as they are. Shape operands of ONNX are folded into
// attributes or into the result type by the importer.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_GRAPH_DATA_OPS_TD
#define DIST_GRAPH_DATA_OPS_TD

def Graph_ReshapeOp : Graph_Op<"reshape", [Pure]> {
  let summary = "reinterprets a tensor with the result's shape";
  let description = [{
    Same elements in row-major order, new shape (the result type). Element
    types match and, where both shapes are static, element counts match.

    Example:

    ```mlir
    %y = graph.reshape %x : (tensor<2x8x768xf32>) -> tensor<2x8x12x64xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_FlattenOp : Graph_Op<"flatten", [Pure]> {
  let summary = "collapses dimensions before and after `axis` into a matrix";
  let description = [{
    The result is 2-D: the product of the dimensions before `axis`, and the
    product of those from `axis` on.

    Example:

    ```mlir
    %y = graph.flatten %x {axis = 1 : i64}
        : (tensor<1x512x7x7xf32>) -> tensor<1x25088xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input,
                       DefaultValuedAttr<I64Attr, "1">:$axis);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_TransposeOp : Graph_Op<"transpose", [Pure]> {
  let summary = "permutes dimensions";
  let description = [{
    `result.shape[i] = input.shape[perm[i]]`; `perm` is a permutation of
    `[0, rank)`.

    Example:

    ```mlir
    %y = graph.transpose %x {perm = array<i64: 0, 2, 1, 3>}
        : (tensor<2x8x12x64xf32>) -> tensor<2x12x8x64xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_SplitOp : Graph_Op<"split", [Pure]> {
  let summary = "splits a tensor into pieces along `axis`";
  let description = [{
    The results are consecutive pieces along `axis`; their sizes along
    `axis` add up to the input's, all other dimensions match.

    Example:

    ```mlir
    %q, %k, %v = graph.split %qkv {axis = 2 : i64}
        : (tensor<2x8x2304xf32>)
        -> (tensor<2x8x768xf32>, tensor<2x8x768xf32>, tensor<2x8x768xf32>)
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$axis);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_SliceOp : Graph_Op<"slice", [Pure]> {
  let summary = "static strided slice along the listed axes";
  let description = [{
    For each listed axis, takes `starts[i]`, `starts[i] + steps[i]`, ...
    up to (excluding) `ends[i]`, with ONNX clamping rules. The importer
    normalizes negative and out-of-range starts/ends, so `0 <= starts <=
    ends <= dim` for positive steps. Unlisted axes are kept whole.

    Example:

    ```mlir
    %y = graph.slice %x {axes = array<i64: 2>, starts = array<i64: 0>,
                         ends = array<i64: 768>, steps = array<i64: 1>}
        : (tensor<2x8x2304xf32>) -> tensor<2x8x768xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$ends, DenseI64ArrayAttr:$axes,
                       DenseI64ArrayAttr:$steps);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_ConcatOp : Graph_Op<"concat", [Pure]> {
  let summary = "joins tensors along `axis`";
  let description = [{
    All inputs have the same rank and element type and agree on every
    dimension except `axis`, whose sizes add up in the result.

    Example:

    ```mlir
    %y = graph.concat %a, %b {axis = 1 : i64}
        : (tensor<1x64x56x56xf32>, tensor<1x32x56x56xf32>)
        -> tensor<1x96x56x56xf32>
    ```
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$inputs, I64Attr:$axis);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_ExpandOp : Graph_Op<"expand", [Pure]> {
  let summary = "broadcasts a tensor to the result's shape";
  let description = [{
    numpy broadcasting of `input` against the result shape; the result shape
    is the broadcast of both (ONNX Expand).

    Example:

    ```mlir
    %y = graph.expand %x : (tensor<1x1x8x8xi1>) -> tensor<2x12x8x8xi1>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_PadOp : Graph_Op<"pad", [Pure]> {
  let summary = "pads every dimension at both ends";
  let description = [{
    `pads` holds all begins, then all ends: `[b0, ..., b(r-1), e0, ..., e(r-1)]` (ONNX
    order); negative pads crop. `mode` chooses what fills the border;
    `value` is used by `constant` mode.

    Example:

    ```mlir
    %y = graph.pad constant %x {pads = array<i64: 0, 0, 1, 1, 0, 0, 1, 1>}
        : (tensor<1x3x224x224xf32>) -> tensor<1x3x226x226xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$pads,
                       Graph_PadMode:$mode,
                       DefaultValuedAttr<F64Attr, "0.0">:$value);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $mode $input attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_TriluOp : Graph_Op<"trilu", [Pure]> {
  let summary = "keeps the upper or lower triangle of the last two dims";
  let description = [{
    Zeroes the elements below (`upper = true`) or above (`upper = false`)
    the `k`-th diagonal of every matrix in the last two dimensions; used for
    causal masks. The optional `diagonal` (a one-element integer tensor,
    ONNX Trilu's `k` input when it is known only at run time) adds its value
    to `k`.

    Example:

    ```mlir
    %y = graph.trilu %x {upper = false, k = 0 : i64}
        : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %z = graph.trilu %x, %k {upper = true}
        : (tensor<8x8xf32>, tensor<i64>) -> tensor<8x8xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input,
                       Optional<AnyRankedTensor>:$diagonal,
                       DefaultValuedAttr<BoolAttr, "true">:$upper,
                       DefaultValuedAttr<I64Attr, "0">:$k);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input (`,` $diagonal^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_CumSumOp : Graph_Op<"cumsum", [Pure]> {
  let summary = "running sum along `axis` (ONNX CumSum)";
  let description = [{
    `result[..., j, ...] = sum of input[..., i, ...]` along `axis` over
    `i <= j` (`i >= j` with `reverse`); `exclusive` leaves element `j`
    itself out, so the first sum is 0. A negative `axis` counts from the
    end. ONNX CumSum's `axis` input must be a constant by import.

    Example:

    ```mlir
    %y = graph.cumsum %x {axis = 1 : i64, exclusive = true}
        : (tensor<2x8xf32>) -> tensor<2x8xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input,
                       DefaultValuedAttr<I64Attr, "0">:$axis,
                       DefaultValuedAttr<BoolAttr, "false">:$exclusive,
                       DefaultValuedAttr<BoolAttr, "false">:$reverse);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_TopKOp : Graph_Op<"top_k", [Pure]> {
  let summary = "the `k` largest (or smallest) elements along `axis` and their indices (ONNX TopK)";
  let description = [{
    ONNX TopK: along `axis`, every line of `input` gives its `k` largest
    elements (smallest with `largest = false`) as `values` and their
    positions in the line as `indices` (`i64`); both have `input`'s shape
    with `k` along `axis`. Elements are ordered best first, and of equal
    values the one at the lower index comes first, as onnxruntime orders
    them. With `sorted = false` ONNX leaves the order open; the kernels
    still emit it sorted (the same set of elements). `k` may be 0.

    Example:

    ```mlir
    %v, %i = graph.top_k %probs {axis = -1 : i64, k = 2 : i64}
        : (tensor<2x8x4xf32>) -> (tensor<2x8x2xf32>, tensor<2x8x2xi64>)
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$k,
                       DefaultValuedAttr<I64Attr, "-1">:$axis,
                       DefaultValuedAttr<BoolAttr, "true">:$largest,
                       DefaultValuedAttr<BoolAttr, "true">:$sorted);
  let results = (outs AnyRankedTensor:$values, AnyRankedTensor:$indices);
  let assemblyFormat = [{
    $input attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_GatherOp : Graph_Op<"gather", [Pure]> {
  let summary = "selects slices along `axis` by integer indices";
  let description = [{
    ONNX Gather: `result.shape = data.shape[:axis] + indices.shape +
    data.shape[axis+1:]`.

    Example:

    ```mlir
    %y = graph.gather %x, %i {axis = 1 : i64}
        : (tensor<2x8x768xf32>, tensor<i64>) -> tensor<2x768xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$data, AnyRankedTensor:$indices,
                       DefaultValuedAttr<I64Attr, "0">:$axis);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $data `,` $indices attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_GatherElementsOp : Graph_Op<"gather_elements", [Pure]> {
  let summary = "picks elements along `axis` by an index tensor of the same rank";
  let description = [{
    ONNX GatherElements: `result[c] = data[c with c[axis] = indices[c]]`
    for every coordinate `c` of `indices` (whose shape the result has; along
    the other dimensions it is at most `data`'s). Negative indices count
    from the end of `axis`; an index outside `data` reads 0, as in
    `graph.gather`.

    Example:

    ```mlir
    %y = graph.gather_elements %logp, %labels {axis = 1 : i64}
        : (tensor<4x10xf32>, tensor<4x1xi64>) -> tensor<4x1xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$data, AnyRankedTensor:$indices,
                       DefaultValuedAttr<I64Attr, "0">:$axis);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $data `,` $indices attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_GatherNDOp : Graph_Op<"gather_nd", [Pure]> {
  let summary = "picks slices by index tuples in the last dimension of `indices` (ONNX GatherND)";
  let description = [{
    ONNX GatherND. With `b = batch_dims` and `k = indices.shape[-1]`, every
    tuple `indices[c, :]` (c over `indices.shape[:-1]`, whose first `b`
    dimensions are the data's) addresses dimensions `b .. b+k-1` of
    `data[c[:b]]`, and the result holds the slices it selects:
    `result.shape = indices.shape[:-1] + data.shape[b+k:]`. Negative
    indices count from the end of their dimension; the compiled program
    stops with an error naming the op when an index is outside
    `[-dim, dim)`.

    Example:

    ```mlir
    %y = graph.gather_nd %x, %i {batch_dims = 1 : i64}
        : (tensor<2x5x8xf32>, tensor<2x3x1xi64>) -> tensor<2x3x8xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$data, AnyRankedTensor:$indices,
                       DefaultValuedAttr<I64Attr, "0">:$batch_dims);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $data `,` $indices attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_ScatterElementsOp : Graph_Op<"scatter_elements", [Pure]> {
  let summary = "writes `updates` into a copy of `data` along `axis` (ONNX ScatterElements)";
  let description = [{
    ONNX ScatterElements: the result is `data` with, for every coordinate
    `c` of `indices` (whose shape `updates` has; along the other dimensions
    at most `data`'s), the element at `c` with `c[axis] = indices[c]`
    combined with `updates[c]` by `reduction`: `none` replaces it (the last
    update in row-major order wins), `add`, `mul`, `max` and `min` combine
    it with the element. Negative indices count from the end of `axis`; the
    compiled program stops with an error naming the op when an index is
    outside `[-dim, dim)`.

    Example:

    ```mlir
    %y = graph.scatter_elements add %x, %i, %u {axis = 1 : i64}
        : (tensor<4x10xf32>, tensor<4x2xi64>, tensor<4x2xf32>) -> tensor<4x10xf32>
    ```
  }];
  let arguments = (ins Graph_ScatterReduction:$reduction,
                       AnyRankedTensor:$data, AnyRankedTensor:$indices,
                       AnyRankedTensor:$updates,
                       DefaultValuedAttr<I64Attr, "0">:$axis);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $reduction $data `,` $indices `,` $updates attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_ScatterNDOp : Graph_Op<"scatter_nd", [Pure]> {
  let summary = "writes slices of `updates` into a copy of `data` at index tuples (ONNX ScatterND)";
  let description = [{
    ONNX ScatterND. With `k = indices.shape[-1]`, every tuple
    `indices[c, :]` (c over `indices.shape[:-1]`) addresses the slice
    `data[indices[c, 0], ..., indices[c, k-1]]` (the data's dimensions from
    `k` on), and the result is `data` with that slice combined with
    `updates[c]` by `reduction`: `none` replaces it (the last tuple in
    row-major order wins), `add`, `mul`, `max` and `min` combine it with
    the element. `updates.shape = indices.shape[:-1] + data.shape[k:]`.
    Negative indices count from the end of their dimension; the compiled
    program stops with an error naming the op when an index is outside
    `[-dim, dim)`.

    Example:

    ```mlir
    %y = graph.scatter_nd none %cache, %pos, %kv
        : (tensor<16x64xf32>, tensor<2x1xi64>, tensor<2x64xf32>) -> tensor<16x64xf32>
    ```
  }];
  let arguments = (ins Graph_ScatterReduction:$reduction,
                       AnyRankedTensor:$data, AnyRankedTensor:$indices,
                       AnyRankedTensor:$updates);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $reduction $data `,` $indices `,` $updates attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_EmbeddingOp : Graph_Op<"embedding", [Pure]> {
  let summary = "looks rows of a weight table up by token id";
  let description = [{
    A gather on axis 0 of a 2-D table (usually a `graph.weight`):
    `result.shape = indices.shape + [table.shape[1]]`. Kept apart from
    `graph.gather` because its cost (a lookup, sparse gradient) and its
    sharding (vocabulary-parallel) differ.

    Example:

    ```mlir
    %e = graph.embedding %wte, %ids
        : (tensor<50257x768xf32>, tensor<2x8xi64>) -> tensor<2x8x768xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$table, AnyRankedTensor:$indices);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $table `,` $indices attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_IotaOp : Graph_Op<"iota", [Pure]> {
  let summary = "an arithmetic sequence `start + i * delta` (ONNX Range)";
  let description = [{
    A 1-D tensor whose element `i` is `start + i * delta`; its length is
    the result type's only dimension. The importer emits it for an ONNX
    `Range` whose `start`, `limit` and `delta` fold to constants but whose
    result is too long to inline as a `graph.constant` (e.g. position ids),
    so that no large constant ever appears as IR text. It depends on no
    operand: it has no gradient and costs no FLOPs. `start` and `delta` are
    integer attributes for an integer result and float attributes for a
    float result; `delta` is nonzero.

    Example:

    ```mlir
    %pos = graph.iota {start = 0 : i64, delta = 1 : i64} : tensor<1024xi64>
    ```
  }];
  let arguments = (ins AnyAttr:$start, AnyAttr:$delta);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

#endif // DIST_GRAPH_DATA_OPS_TD
