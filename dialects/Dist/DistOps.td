//===- DistOps.td - Operations of the distribution dialect --*- tablegen -*-===//
#ifndef DIST_OPS_TD
#define DIST_OPS_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "DistDialect.td"
include "DistAttrs.td"
include "DistEnums.td"
include "DistInterfaces.td"

//===----------------------------------------------------------------------===//
// Pipeline stages
//===----------------------------------------------------------------------===//

def Dist_StageOp : Dist_Op<"stage", [
    SingleBlockImplicitTerminator<"YieldOp">,
    IsolatedFromAbove]> {
  let summary = "A pipeline stage: the ops one device group runs";
  let description = [{
    A region of the program assigned to pipeline stage `index`, run by the
    devices of `mesh`. The stage is isolated from above: values it needs come
    in as `inputs` (block arguments of the same types) and values later
    stages need leave through `dist.yield`. Crossing a stage boundary is where
    the partitioner later puts `dist.send`/`dist.recv`.

    Example:
    ```mlir
    %y = dist.stage 0 on #dist.mesh<shape = [2], devices = [0, 1]>
        (%x) : (tensor<4x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%a: tensor<4x16xf32>):
      %r = graph.unary relu %a : tensor<4x16xf32>
      dist.yield %r : tensor<4x16xf32>
    }
    ```
  }];
  let arguments = (ins I64Attr:$index, Dist_MeshAttr:$mesh,
                       Variadic<AnyType>:$inputs);
  let results = (outs Variadic<AnyType>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $index `on` qualified($mesh) `(` $inputs `)` attr-dict-with-keyword
    `:` functional-type($inputs, $results) $body
  }];
  let hasVerifier = 1;
  let skipDefaultBuilders = 1;
  let builders = [OpBuilder<(ins "::mlir::TypeRange":$results,
      "int64_t":$index, "MeshAttr":$mesh, "::mlir::ValueRange":$inputs)>];
}

def Dist_YieldOp : Dist_Op<"yield", [Pure, Terminator,
    HasParent<"StageOp">, ReturnLike]> {
  let summary = "Ends a pipeline stage and names the values it produces";
  let description = [{
    Terminates a `dist.stage` body; its operands become the stage's results
    and must match their types.

    Example:
    ```mlir
    dist.yield %r : tensor<4x16xf32>
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
  let builders = [OpBuilder<(ins), [{ /* nothing to yield */ }]>];
}

//===----------------------------------------------------------------------===//
// Point-to-point transfers
//===----------------------------------------------------------------------===//

def Dist_SendOp : Dist_Op<"send"> {
  let summary = "Sends a tensor to another device";
  let description = [{
    Sends `value` to device `peer` (a cluster device number). `tag` pairs the
    send with the `dist.recv` of the same tag on the peer; tags of one
    (sender, receiver) pair must be issued in the same order on both sides.

    With `list`, `peer` is an action list of the module's plan (a pipeline
    rank, or a slot with per-stage replicas) and the message goes to that
    list's device with this device's data-parallel replica and tensor rank
    (the same coordinates, `lib/Schedule/RankLayout.h`): the form the
    per-list programs of `dist-partition` use, which every device of a
    stage group runs alike.

    Example:
    ```mlir
    dist.send %act to 4 tag 7 : tensor<1x2048x4096xbf16>
    dist.send %act to list 1 tag 7 : tensor<1x2048x4096xbf16>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$value, I64Attr:$peer, I64Attr:$tag,
                       UnitAttr:$list);
  let assemblyFormat = [{
    $value `to` (`list` $list^)? $peer `tag` $tag attr-dict `:` type($value)
  }];
  let hasVerifier = 1;
}

def Dist_RecvOp : Dist_Op<"recv"> {
  let summary = "Receives a tensor from another device";
  let description = [{
    Receives the tensor that device `peer` sends with the same `tag`. With
    `list`, `peer` is an action list of the plan, as for `dist.send`.

    Example:
    ```mlir
    %act = dist.recv from 3 tag 7 : tensor<1x2048x4096xbf16>
    %a = dist.recv from list 0 tag 7 : tensor<1x2048x4096xbf16>
    ```
  }];
  let arguments = (ins I64Attr:$peer, I64Attr:$tag, UnitAttr:$list);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    `from` (`list` $list^)? $peer `tag` $tag attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

/// A collective; \p reducing ones say how they combine values.
class Dist_CollectiveOp<string mnemonic, list<Trait> traits = [],
                        bit reducing = 0>
    : Dist_Op<mnemonic, !listconcat(traits, [
        !if(reducing,
            DeclareOpInterfaceMethods<Dist_CollectiveOpInterface,
                                      ["getReduction"]>,
            Dist_CollectiveOpInterface)])>;

def Dist_AllReduceOp : Dist_CollectiveOp<"all_reduce",
    [AllTypesMatch<["input", "result"]>], 1> {
  let summary = "Combines a tensor across a device group";
  let description = [{
    Every device of `group` contributes `input`; every device gets the
    element-wise combination (`kind`). Used for data-parallel gradients and
    row-parallel tensor-parallel outputs.

    `over world` (stored as an empty `group`) means every rank of the job,
    however many the launcher starts: the form `--dist-data-parallel` emits,
    since a data-parallel program is compiled once for any world size. An
    explicit group must list distinct non-negative device numbers; `over []`
    is rejected (write `over world`).

    Example:
    ```mlir
    %g = dist.all_reduce %grad sum over [0, 1, 2, 3] : tensor<1024x1024xf32>
    %m = dist.all_reduce %grad mean over world : tensor<1024x1024xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, Dist_ReductionKindAttr:$kind,
                       DenseI64ArrayAttr:$group);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input $kind `over` custom<WorldGroup>($group) attr-dict `:` type($input)
  }];
  let extraClassDeclaration = [{
    /// True when the group is every rank of the job (`over world`).
    bool isWorld() { return getGroup().empty(); }
  }];
  let hasVerifier = 1;
}

def Dist_TpCopyOp : Dist_Op<"tp_copy", [Pure,
    AllTypesMatch<["input", "result"]>]> {
  let summary = "Enters a tensor-parallel region: the identity, whose "
                "gradient is all-reduced";
  let description = [{
    Megatron's `f`: `dist-tensor-parallel` puts it on the replicated input
    of a column-parallel matmul. Forward it is the identity; `dist-autodiff`
    gives it the gradient `dist.all_reduce sum over group` of the ranks'
    input gradients (each rank differentiated through its own columns).
    `dist-prepare-for-emission` replaces it by its input once the gradients
    exist. Its partner `g` is the `dist.all_reduce sum` after a row-parallel
    matmul, whose gradient is the identity.

    Example:
    ```mlir
    %x1 = dist.tp_copy %x over [0, 1] : tensor<32x64xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$group);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `over` custom<WorldGroup>($group) attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
}

def Dist_AllGatherOp : Dist_CollectiveOp<"all_gather"> {
  let summary = "Concatenates the shards of a device group on every device";
  let description = [{
    Every device of `group` contributes a shard; every device gets the shards
    concatenated along `axis` in group order, so the result's `axis` is the
    group size times the input's.

    Example:
    ```mlir
    %w = dist.all_gather %shard axis 0 over [0, 1] : tensor<512x1024xf32> -> tensor<1024x1024xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$axis,
                       DenseI64ArrayAttr:$group);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `axis` $axis `over` $group attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Dist_ReduceScatterOp : Dist_CollectiveOp<"reduce_scatter", [], 1> {
  let summary = "Combines a tensor across a group and leaves each device a shard";
  let description = [{
    The element-wise combination (`kind`) of every device's `input`, split
    along `axis` into group-size shards; device i of `group` gets shard i.
    Used by ZeRO to shard gradients.

    Example:
    ```mlir
    %s = dist.reduce_scatter %g sum axis 0 over [0, 1] : tensor<1024x8xf32> -> tensor<512x8xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, Dist_ReductionKindAttr:$kind,
                       I64Attr:$axis, DenseI64ArrayAttr:$group);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input $kind `axis` $axis `over` $group attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Dist_AllSliceOp : Dist_CollectiveOp<"all_slice"> {
  let summary = "Keeps this device's shard of a tensor every device holds";
  let description = [{
    The inverse of `all_gather`: every device of `group` holds the same
    `input`; device i keeps shard i of it along `axis`, so the result's
    `axis` is the input's divided by the group size. No data moves (as
    upstream MLIR's `shard.all_slice`): each device copies its own block.
    Used by ZeRO to pick the part of a replicated parameter that a rank's
    optimizer updates.

    Example:
    ```mlir
    %p = dist.all_slice %w axis 0 over [0, 1] : tensor<1024xf32> -> tensor<512xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$axis,
                       DenseI64ArrayAttr:$group);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `axis` $axis `over` $group attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Dist_AllToAllOp : Dist_CollectiveOp<"all_to_all"> {
  let summary = "Exchanges shards between every pair of a device group";
  let description = [{
    Splits `input` along `split_axis` into group-size pieces, sends piece j to
    device j of `group`, and concatenates the received pieces along
    `concat_axis` (mixture-of-experts dispatch, sequence/head resharding).
    dist-expert-parallel inserts it around a block's experts; its gradient
    is the all-to-all with the axes swapped (dist-autodiff), and it lowers
    to `distrt_all_to_all` (any axes: the runtime packs and unpacks the
    pieces).

    Example:
    ```mlir
    %t = dist.all_to_all %x split 0 concat 1 over [0, 1] : tensor<4x8xf32> -> tensor<2x16xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$split_axis,
                       I64Attr:$concat_axis, DenseI64ArrayAttr:$group);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `split` $split_axis `concat` $concat_axis `over` $group attr-dict
    `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Dist_BroadcastOp : Dist_CollectiveOp<"broadcast",
    [AllTypesMatch<["input", "result"]>]> {
  let summary = "Copies one device's tensor to every device of a group";
  let description = [{
    Every device of `group` gets `root`'s `input`; `root` must belong to the
    group.

    Example:
    ```mlir
    %w = dist.broadcast %w0 root 0 over [0, 1, 2, 3] : tensor<16xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$root,
                       DenseI64ArrayAttr:$group);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `root` $root `over` $group attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Context parallelism
//===----------------------------------------------------------------------===//

def Dist_F32Tensor : RankedTensorOf<[F32]>;

def Dist_RingAttentionOp : Dist_Op<"ring_attention", [
    DeclareOpInterfaceMethods<Dist_CollectiveOpInterface,
                              ["getCollectiveInput", "getCollectiveResult"]>]> {
  let summary = "Attention over a sequence split across a device group (ring)";
  let description = [{
    Device c of `group` holds block c of a sequence cut into group-size
    contiguous blocks: `query` [..., Sq, D] of its positions, `key`
    [..., Skv, D] and `value` [..., Skv, Dv] of its block (the leading dims
    the same in all three). `result` [..., Sq, Dv] is
    softmax(scale query Kᵀ + mask) V over every device's keys and values,
    `lse` [..., Sq] the log-sum-exp of each query row (the backward reads
    it). `mask` (optional) is added to the scores: [..., Sq, group-size
    Skv], the device's query rows against every position, its leading dims
    1 or the query's; an entry at or below -1e30 drops its key.

    The group runs it as ring attention: group-size steps, each computing
    the device's queries against the key/value block it holds (online
    softmax) while that block moves on to the next device, a block the mask
    drops wholly for the device's rows (above a causal diagonal) skipped.
    dist-context-parallel forms it from the all-gather form of a token-split
    attention; dist-autodiff differentiates it into
    `dist.ring_attention_grad`; it lowers to `distrt_ring_attention`.

    Example:
    ```mlir
    %o, %lse = dist.ring_attention %q, %k, %v mask %m scale 2.500000e-01 over [0, 1] : tensor<1x4x16x16xf32>, tensor<1x4x16x16xf32>, tensor<1x4x16x16xf32>, tensor<1x1x16x32xf32> -> tensor<1x4x16x16xf32>, tensor<1x4x16xf32>
    ```
  }];
  let arguments = (ins Dist_F32Tensor:$query, Dist_F32Tensor:$key,
                       Dist_F32Tensor:$value,
                       Optional<Dist_F32Tensor>:$mask, F32Attr:$scale,
                       DenseI64ArrayAttr:$group);
  let results = (outs Dist_F32Tensor:$result, Dist_F32Tensor:$lse);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`mask` $mask^)? `scale` $scale `over` $group
    attr-dict `:` type($query) `,` type($key) `,` type($value)
    (`,` type($mask)^)? `->` type($result) `,` type($lse)
  }];
  let hasVerifier = 1;
}

def Dist_RingAttentionGradOp : Dist_Op<"ring_attention_grad", [
    DeclareOpInterfaceMethods<Dist_CollectiveOpInterface,
                              ["getCollectiveInput", "getCollectiveResult"]>]> {
  let summary = "The gradients of a dist.ring_attention";
  let description = [{
    From a `dist.ring_attention`'s operands, its `result` and `lse` and the
    gradient `result_grad` of its result, the gradients of its query, key
    and value (the mask has none). The key/value blocks travel the ring
    again with their gradient sums, which end on the device that holds the
    block after group-size steps. Lowers to
    `distrt_ring_attention_backward`.

    Example:
    ```mlir
    %dq, %dk, %dv = dist.ring_attention_grad %q, %k, %v, %o, %lse, %do scale 2.500000e-01 over [0, 1] : tensor<1x4x16x16xf32>, tensor<1x4x16x16xf32>, tensor<1x4x16x16xf32>, tensor<1x4x16x16xf32>, tensor<1x4x16xf32>, tensor<1x4x16x16xf32> -> tensor<1x4x16x16xf32>, tensor<1x4x16x16xf32>, tensor<1x4x16x16xf32>
    ```
  }];
  let arguments = (ins Dist_F32Tensor:$query, Dist_F32Tensor:$key,
                       Dist_F32Tensor:$value, Dist_F32Tensor:$result,
                       Dist_F32Tensor:$lse, Dist_F32Tensor:$result_grad,
                       Optional<Dist_F32Tensor>:$mask, F32Attr:$scale,
                       DenseI64ArrayAttr:$group);
  let results = (outs Dist_F32Tensor:$query_grad, Dist_F32Tensor:$key_grad,
                      Dist_F32Tensor:$value_grad);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $result `,` $lse `,` $result_grad
    (`mask` $mask^)? `scale` $scale `over` $group attr-dict `:`
    type($query) `,` type($key) `,` type($value) `,` type($result) `,`
    type($lse) `,` type($result_grad) (`,` type($mask)^)? `->`
    type($query_grad) `,` type($key_grad) `,` type($value_grad)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Micro-batching
//===----------------------------------------------------------------------===//

def Dist_MicrobatchSplitOp : Dist_Op<"microbatch_split", [Pure]> {
  let summary = "Splits a batch into equal micro-batches";
  let description = [{
    Splits `input` along `axis` (the sample dimension) into as many equal
    micro-batches as the op has results.

    Example:
    ```mlir
    %m:4 = dist.microbatch_split %x axis 0 : tensor<8x128xf32> -> tensor<2x128xf32>, tensor<2x128xf32>, tensor<2x128xf32>, tensor<2x128xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$axis);
  let results = (outs Variadic<AnyRankedTensor>:$microbatches);
  let assemblyFormat = [{
    $input `axis` $axis attr-dict `:` type($input) `->` type($microbatches)
  }];
  let hasVerifier = 1;
}

def Dist_MicrobatchMergeOp : Dist_Op<"microbatch_merge", [Pure]> {
  let summary = "Joins micro-batches back into a batch";
  let description = [{
    Concatenates equally shaped micro-batches along `axis`.

    Example:
    ```mlir
    %y = dist.microbatch_merge %a, %b axis 0 : tensor<2x10xf32>, tensor<2x10xf32> -> tensor<4x10xf32>
    ```
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$microbatches, I64Attr:$axis);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $microbatches `axis` $axis attr-dict `:` type($microbatches) `->` type($result)
  }];
  let hasVerifier = 1;
}

include "DistScheduleOps.td"

#endif // DIST_OPS_TD
