//===- DistDialect.td - The distribution dialect -----------*- tablegen -*-===//
//
// Part of DistOpt.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_DIALECT_TD
#define DIST_DIALECT_TD

include "mlir/IR/OpBase.td"

def Dist_Dialect : Dialect {
  let name = "dist";
  let cppNamespace = "::distopt::dist";
  let summary = "How a DNN program is spread over many devices";
  let description = [{
    The `dist` dialect says where and in what order the work of a `graph`
    program runs: the cluster it runs on (devices of possibly different kinds,
    grouped by node, rack and site, joined by links of different speed),
    device groups (meshes), pipeline stage regions, point-to-point transfers,
    collectives and micro-batch split/merge.

    Unlike upstream MLIR's `shard` dialect, which describes a single SPMD
    program over one homogeneous grid, `dist` describes MPMD pipelines over
    heterogeneous device groups: every stage names its own group, and groups
    may be of different sizes and device kinds. See docs/design.md.

    A collective names the devices that combine (`over [0, 1]`). When one
    program is run by several such groups (a pipeline stage's program under
    data and tensor parallelism: each replica's tp ranks sum their partial
    results), the op also carries `dist.groups`, the list of those groups
    (StableHLO's replica groups): each device combines with the group that
    holds it. The op's own group is one of them, all have its size and no
    device is in two. A ZeRO block (`dist.zero_shard = {shape, group}` on a
    `graph.weight` or `graph.state`) carries them the same way when it is a
    block of a tensor-parallel part (`dist.tp_shard` too): each tensor
    rank's replicas hold the blocks of its part.

    A branch-level placement (`--dist-branches`, docs/search.md) marks every
    op of the planned function that does per-sample work with its piece,
    `dist.branch = p` (0 the trunk before the fork, 1..k the independent
    branches, k+1 the tail after their join), and the module with
    `dist.branch_devices = array<i64: d0, ..., d(k+1)>`, the device of each
    piece; dist-partition then builds one program per device.

    `dist.tp_shard = [dim, blocks, parts]` on a `graph.weight` (and the
    states and dropouts that follow it) says that the op holds one of
    `parts` parts of the whole tensor along `dim`, part `rank mod parts`:
    a tensor-parallel rank's part (dist-tensor-parallel) or, without tensor
    parallelism, an expert-parallel rank's experts of stacked expert
    weights (dist-expert-parallel, `[0, 1, ep]`: the rank's place in its
    expert group of ep consecutive replicas). The general form is one
    `[dim, blocks, parts, stride]` per axis, at most two axes on different
    dimensions: along each, part `(rank / stride) mod parts`, the strides
    reading independent digits of the rank. With tensor parallelism an
    expert rank's weights are `[0, 1, ep, tp, d, 1, tp, 1]`: its experts
    by its replica coordinate, its tensor part of their features (d) by
    its tensor coordinate.

    `dist.context_split = cp` on a `dist.all_slice` of a function input says
    that the function runs on one context-parallel rank's part of the
    sequence from there (set by dist-context-parallel).

    `dist.accumulates = k` on a function argument says that the function
    returns that argument plus the value it computes, as its result `k`
    (a running sum over micro-batches, set by dist-partition): the emission
    computes result `k` in the argument's buffer.

    `dist.shift` on a `dist.all_reduce max` says that its result only
    shifts values whose use cancels the shift (the row maximum of a
    vocabulary-parallel cross-entropy, subtracted before the exponentials
    and added back with the log-sum-exp; set by dist-tensor-parallel):
    dist-autodiff treats it as a constant, so its gradient, zero over the
    group, is neither computed nor communicated.
  }];
  let useDefaultAttributePrinterParser = 1;
  // Verified by verifyOperationAttribute / verifyRegionArgAttribute
  // (DistVerify.cpp); the helpers read and write them typed.
  let discardableAttrs = (ins
    "ClusterAttr":$cluster,
    "PlanAttr":$plan,
    "::mlir::IntegerAttr":$layer,
    "::mlir::IntegerAttr":$virtual_stage,
    "::mlir::IntegerAttr":$action_list,
    "::mlir::StringAttr":$action,
    "::mlir::StringAttr":$train_phase,
    "TensorParallelRoleAttr":$tp,
    "::mlir::DenseI64ArrayAttr":$tp_shard,
    "::mlir::IntegerAttr":$context_split,
    "::mlir::UnitAttr":$shift,
    "::mlir::UnitAttr":$batch_shard,
    "::mlir::IntegerAttr":$accumulates,
    "::mlir::UnitAttr":$batch_block,
    "::mlir::IntegerAttr":$microbatch,
    "::mlir::UnitAttr":$data_parallel,
    "::mlir::DictionaryAttr":$zero,
    "::mlir::DictionaryAttr":$zero_shard,
    "::mlir::ArrayAttr":$groups,
    "::mlir::IntegerAttr":$branch,
    "::mlir::DenseI64ArrayAttr":$branch_devices
  );
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
}

class Dist_Op<string mnemonic, list<Trait> traits = []>
    : Op<Dist_Dialect, mnemonic, traits>;

#endif // DIST_DIALECT_TD
