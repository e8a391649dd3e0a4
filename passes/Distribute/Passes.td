//===- Passes.td - Distribute passes -----------------------*- tablegen -*-===//
//
// Part of DistOpt. The distribution passes (passes/Distribute/, one pass per file);
// passes/Passes.h declares and registers every group.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_PASSES_DISTRIBUTE_PASSES_TD
#define DIST_PASSES_DISTRIBUTE_PASSES_TD

include "mlir/Pass/PassBase.td"

def ContextParallelPass : Pass<"dist-context-parallel", "mlir::ModuleOp"> {
  let summary = "rewrites the planned function into one context-parallel "
                "rank's part (the sequence split, ring attention)";
  let description = [{
    For a module whose `#dist.plan` has cp > 1, rewrites the planned forward
    function so that every rank of a context-parallel group runs it on its
    own part of the sequence: with `balance=1` (the default) and a sequence
    S that divides by 2 cp, the load-balanced split Megatron-LM runs under a
    causal mask: the sequence cut into 2 cp chunks, rank c holding chunks c
    and 2 cp - 1 - c (every collective along the sequence, the ring
    attentions included, carries `dist.balanced`); else the contiguous one, rank
    c of cp holding positions [c S/cp, (c+1) S/cp) (`verbose=1` says why).
    Run it before `dist-autodiff` (dist-compile does, for a planned module):
    the gradient rules of the collectives it inserts make the backward.

    Every input of the function is split along its dimension 1 (the
    sequence of `[rows, sequence, ...]`): `dist.all_slice ... over [group]`
    takes the rank's positions (no data moves) and carries
    `dist.context_split = cp`. From there the ops that work token by token
    run on the rank's tokens (the sequence-parallel analysis, TokenSplit):
    lookups of the ids, elementwise ops, norms over the features, views,
    transposes, matmuls with a weight. In attention, a matmul whose left
    operand holds the rank's queries and whose right operand is token-split
    (the keys of Q Kt, the values of P V) gathers the right operand whole
    over the group (`dist.all_gather`) and reads it through `dist.tp_copy`:
    the rank's queries meet every key, as Llama 3's all-gather context
    parallelism does, and the gradient of the keys and values is the sum of
    the ranks' parts (a reduce-scatter). A whole operand that meets the
    rank's tokens along the sequence (the causal mask's rows, the position
    embedding) is sliced; one that broadcasts over the tokens (a weight, a
    norm scale) is read through a `dist.tp_copy`, so every weight's
    gradient is summed over the group and the weights stay equal on its
    ranks. Values that any other op reads (the function's results: the
    logits, so the loss is one process's on every rank) are gathered whole
    before it. Groups are the cp ranks of the op's pipeline stage and data
    replica (RankLayout::contextGroups).

    Ring attention (`ring=1`, the default): each attention in
    that all-gather form, softmax(s Q Kt + mask) V with an optional scale
    by a scalar constant and an optional mask (added, or a `graph.where`
    fill of at most -1e30), becomes one `dist.ring_attention` on the rank's
    own K and V blocks: cp steps, each computing against the block held
    while it moves to the next rank, the scores the mask drops (above a
    causal diagonal) skipped (RingAttention.cpp). Under tp > 1, dist-tensor-parallel (which runs
    after) splits each ring by heads: each tensor rank's ring passes its
    own heads' blocks around its context group. Attentions of another form
    keep the all-gather (`verbose=1` remarks why); so does every attention
    with `ring=0`.

    Errors: an input without a sequence dimension that splits cp ways, or
    behind more than one row (a micro-batch of one row splits contiguously),
    no attention that reads the split sequence, and cp with per-stage
    replicas or under an asynchronous schedule.

    Example:

    ```
    dist-opt gpt2.onnx --input-shape=input_ids:1x32 --dist-plan=cp=2 \
      --dist-batch=4 --pass-pipeline='builtin.module(dist-context-parallel)'
    ```
  }];
  let options = [
    Option<"verbose", "verbose", "bool", "false",
           "remark where the token split first stops (a value gathered "
           "whole before an op that does not work on the rank's tokens) "
           "and why an attention keeps the all-gather form or the split is "
           "contiguous">,
    Option<"ring", "ring", "bool", "true",
           "run the attentions as ring attention (dist.ring_attention); "
           "false keeps the all-gather form">,
    Option<"balance", "balance", "bool", "true",
           "split each sequence into 2 cp chunks, rank c holding chunks c "
           "and 2 cp - 1 - c (Megatron's load-balanced causal split), where "
           "the sequence divides by 2 cp; false splits it contiguously">
  ];
  let dependentDialects = ["distopt::dist::DistDialect",
                           "distopt::graph::GraphDialect"];
}

def ExpertParallelPass : Pass<"dist-expert-parallel", "mlir::ModuleOp"> {
  let summary = "rewrites the planned function into one expert-parallel "
                "rank's part (its experts, tokens exchanged by all-to-all)";
  let description = [{
    For a module whose `#dist.plan` has ep > 1, rewrites the planned forward
    function so that each rank of an expert group (ep consecutive
    data-parallel replicas) runs E/ep of every mixture-of-experts block's
    routed experts for the tokens of the whole group, as GShard does. Run
    it before `dist-autodiff` (dist-compile does, for a planned module):
    the gradient of an all-to-all is the inverse all-to-all.

    The block is the cost model's (passes/Planning/Experts.cpp,
    docs/modelgen.md): GEMMs of dispatched tokens [B, E, C, h] with stacked
    weights [E, h, f], elementwise ops, GEMMs with stacked weights
    [E, f, h]. The tokens go through `dist.all_to_all ... split 1 concat 0`
    over the expert group ([ep B, E/ep, C, h]), the GEMMs read the rank's
    part of their weights ([E/ep, .., ..], `dist.tp_shard = [0, 1, ep]`:
    the rank reads only that part of the weight file, and its optimizer
    state is of the part), and `dist.all_to_all ... split 0 concat 1`
    brings the outputs back before the routing weights and the combine.
    dist-partition then averages the experts' gradients over the ranks
    that hold the same experts (dp / ep replicas) rather than over every
    replica. With tp > 1 each expert's GEMMs are also split over the
    tensor ranks (gate and up column-parallel, down row-parallel) and each
    tensor rank exchanges only its C/tp of every expert's capacity slots:
    the slots are gathered over the tensor group before the experts
    (behind a `dist.tp_copy`), the down GEMM's partial sums
    reduce-scattered onto the rank's slots after them, and the exchanged
    outputs gathered whole for the combine; the weights' shard then has
    two axes, `[0, 1, ep, tp, feature, 1, tp, 1]`. Under ZeRO
    dist-partition shards the experts' optimizer state (ZeRO-3: their
    weights) over the dp / ep ranks that hold the same part: with tp a
    block of the tensor part of the expert part, which the runtime reads
    as a third level of parts. With ep = 1 and tp > 1 (cp = 1) the pass
    splits the experts over the tensor ranks alone (`dist.tp_copy` before,
    an all-reduce after; shards `[feature, 1, tp]`), leaving a block it
    cannot split whole.

    Errors (ep > 1): a GEMM with stacked expert weights outside such a
    block (it would run on the wrong experts), experts that ep does not
    divide, capacity slots that tp does not divide, and plans with
    per-stage replicas, or cp and tp together (not executed yet).
  }];
  let dependentDialects = ["distopt::dist::DistDialect"];
}

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
    batch dimension (attention scores), ring attentions of a query, key
    and value split alike along a head dimension (after
    `dist-context-parallel`: each rank's ring runs on its own heads, over
    the same context group; the mask split alike, broadcast over the
    heads, or, where it differs from head to head, sliced to the rank's
    heads), and further column matmuls met by an elementwise op (SwiGLU).
    Attention whose keys and values another
    projection computes (Llama's separate Q, K and V; DeepSeek's latent
    attention, whose `kv_b_proj` reads the normed compressed keys and
    values) is one region: such projections join as columns when their
    output is viewed as heads, and a broadcast over the heads (latent
    attention's one rotary key) is expanded by each rank to its own heads,
    its input read through a `dist.tp_copy`. It ends at *row-parallel*
    matmuls, which
    contract the split dimension against a weight's matching rows: their
    partial sums get `dist.all_reduce sum` over the group, and a bias joins
    after the sum. A region whose split would reach anything else (a
    residual add, a norm, a function result) is left replicated: it is
    computed whole on every rank, which is correct, only not parallel
    (`verbose` says why for each).

    Convolutions split by channels first, as the cost model decided
    (`planning::analyzeConvChannels`, the same decision LayerAnalysis
    prices): a convolution of a whole input keeps its rank's output
    channels (column), one of a channel-split input its input channels
    with the partial sums all-reduced (row, as does a matmul contracting
    the split features); batch norm, activations, pooling, per-channel
    adds and products, views and grouped convolutions (their groups split)
    carry the split; anything else all-gathers it first. A channel or
    group count the tp does not divide is an error naming the op.

    The rewrite gives split values and sharded weights their local types,
    puts `dist.tp_copy` (forward the identity; gradient the group's
    all-reduce) on each column matmul's input, marks weights with
    `dist.tp_shard = [dim, blocks, parts]` (which part of the file a rank
    reads: dimension `dim` viewed as [blocks][parts][n], the rank's part of
    each block) and ops with the `dist.tp` role they run. Groups are the tp
    ranks of the op's pipeline stage (`dist.virtual_stage`) and data
    replica, so dp x cp x tp x pp works; tp with per-stage replicas is an
    error, as is a plan under which no region can be split. Replicated parts (embeddings, norms, the LM head) compute the
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
      becomes `dist.all_reduce mean over world` of it, inserted right after
      the op that made the gradient (`graph.phase = "backward"`), where the
      printer starts it so it runs under the rest of the backward
      (`emit.async`). Gradients made one after another share one
      all-reduce of their flattened concatenation up to `bucket-bytes` (4
      MiB; PyTorch DDP's buckets), placed after the last of them, and each
      update reads its part back through a slice. With a module plan of
      `grad_overlap=0` (`overlap_grad_sync = false`), one all-reduce per
      gradient right before its update. In
      `@train_apply` with accumulation ranks exchange the accumulated
      gradient once per step;
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

    **ZeRO-2** (`zero=2`): the same, but each gradient is reduce-scattered
    right after the op that computes it (its ops in the backward phase), so
    the whole gradient dies during the backward and only its shard lives
    until the update. Refused with accumulation-steps > 1 (the program
    would sum whole gradients first). ZeRO-3 is refused.

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
           "the dp replicas, 2 shards the gradients too; -1: the module "
           "plan's (0 without one)">,
    Option<"replicas", "dp", "unsigned", "0",
           "Data-parallel replicas ZeRO shards over (the ranks the program "
           "runs on); 0: the module plan's dp">,
    Option<"bucketBytes", "bucket-bytes", "int64_t", "4194304",
           "With grad_overlap: gradients made one after another are "
           "all-reduced together up to this many bytes (one larger is "
           "reduced alone; 0: every gradient alone)">
  ];
  let dependentDialects = ["distopt::dist::DistDialect",
                           "distopt::graph::GraphDialect"];
}

#endif // DIST_PASSES_DISTRIBUTE_PASSES_TD
