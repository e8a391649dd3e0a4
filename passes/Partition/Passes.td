//===- Passes.td - Partition passes ------------------------*- tablegen -*-===//
//
// Part of DistOpt. The partitioning passes (passes/Partition/, one pass per file);
// passes/Passes.h declares and registers every group.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_PASSES_PARTITION_PASSES_TD
#define DIST_PASSES_PARTITION_PASSES_TD

include "mlir/Pass/PassBase.td"

def MaterializeSchedulePass : Pass<"dist-materialize-schedule",
                                   "mlir::ModuleOp"> {
  let summary = "writes the plan's schedule as per-rank dist.actions lists";
  let description = [{
    Generates the schedule of the module's `dist.plan` (its schedule kind,
    pipeline ranks, chunks, micro-batches, per-stage replicas, data-parallel
    and ZeRO gradient synchronisation; for an inference plan the
    forward-only stream) and writes it into the IR as one `dist.schedule`
    for the planned function: for every pipeline rank (every slot, with
    per-stage replicas) a `dist.actions` list of forward, backward
    (`backward_input` / `backward_weight` for zero-bubble schedules), send,
    receive, gradient-sync and optimizer actions in the order that rank runs
    them. Compute actions call the outlined stage functions; when the
    planned function is not outlined yet, the pass first runs
    `dist-outline-stages` and `dist-outline-stage-functions` on the module.
    An existing schedule of the function is replaced. With `forward=true`
    the forward-only stream is written even for a training plan: the
    schedule of the forward function's pipeline (inference).

    This is the form the simulator (`dist-simulate`), the verifier
    (`dist-verify-schedule`) and `dist-compile` consume, and the form a user
    or another compiler may edit. docs/partition.md.

    Example:

    ```
    dist-opt planned.mlir --dist-materialize-schedule
    ```
  }];
  let options = [
    Option<"forward", "forward", "bool", "false",
           "Write the forward-only stream of the plan's stages (what an "
           "inference program of the forward function runs), whatever the "
           "plan's mode">
  ];
  let dependentDialects = ["distopt::dist::DistDialect",
                           "mlir::func::FuncDialect"];
}

def OutlineStageFunctionsPass : Pass<"dist-outline-stage-functions",
                                     "mlir::ModuleOp"> {
  let summary = "turns each dist.stage region into a stage function";
  let description = [{
    Moves the body of every `dist.stage` region of a function `@f` into a
    private function `@f_stage<v>` (`v` the virtual stage) with the
    attribute `dist.virtual_stage = v`: the region's inputs become the
    function's arguments and its `dist.yield` a `func.return`. The region is
    replaced by a `func.call`, so `@f` keeps the dataflow of one micro-batch
    from stage to stage while the schedule (`dist.schedule`) says when each
    stage runs on which rank. Functions without stage regions are left
    alone; a name that is taken is an error.

    Example:

    ```
    dist-opt staged.mlir --dist-outline-stage-functions
    ```
  }];
  let dependentDialects = ["distopt::dist::DistDialect",
                           "mlir::func::FuncDialect"];
}

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

def PartitionPass : Pass<"dist-partition", "mlir::ModuleOp"> {
  let summary = "per-list programs: the schedule as calls, sends and receives";
  let description = [{
    Turns the module's `dist.schedule` into one function per action list,
    `@<f>_rank<L>` with `dist.action_list = L`, that every device of list L
    (a pipeline stage group, or a slot) runs: its arguments are the planned
    function's inputs for all micro-batches of one iteration (`microbatches`
    of the plan times the micro-batch's rows), split with
    `dist.microbatch_split`; then the list's actions in the schedule's
    order, each a `func.call` of a stage function or the `dist.send` /
    `dist.recv` of the values crossing that stage boundary (`to list` /
    `from list`: the peer list's device with this device's coordinates,
    tag = boundary x values + value); the list that runs the last stage
    returns the outputs, joined with `dist.microbatch_merge`. `dist-compile`
    prints these functions; nothing about the schedule is decided there.

    A forward function runs the forward stream of the plan's stages: when
    the module has no schedule yet, the pass materializes the forward one
    (`dist-materialize-schedule{forward=true}`, outlining first as that pass
    does).

    A module with dist-autodiff's `@train_step` (autodiff run on the
    planned forward function, so its ops carry their stage; gradient ops
    take the stage of the op they differentiate) is pipelined for training:
    the step is outlined into `@train_step_stage<v>_forward`,
    `_backward_input` and `_backward_weight` functions (`dist.virtual_stage`,
    `dist.train_phase`) and becomes their calls followed by the optimizer;
    the plan's training schedule is written when the module has none. Each
    list's program calls the stage functions per micro-batch in the
    schedule's order (a backward reads its forward's values: the stash),
    sends activations forward and gradients back, and at `optimizer_step`
    runs its stages' optimizer ops on the mean gradient over the step's
    micro-batches (with dp replicas or per-stage replicas, averaged over
    them; with ZeRO-1, on this replica's shard). The list of the last
    stage sends the mean loss to list 0, which returns it; each list
    returns its own updates. Asynchronous schedules keep weight versions
    as values: stage functions that read trained weights are cloned with
    them as arguments (`_versioned`), a backward passes the version its
    forward passed; PipeDream updates after every micro-batch, 2BW
    computes with W(t-1) (state `<weight>.last_update`). In mixed
    precision each list unscales its stages' gradients and or-s the
    overflow flags over the world before the step's update (PipeDream and
    PipeMare: before each micro-batch's update). accumulation-steps > 1
    and what docs/partition.md lists are refused with an error.

    Example:

    ```
    dist-opt planned.mlir --dist-partition
    ```
  }];
  let dependentDialects = ["distopt::dist::DistDialect",
                           "distopt::graph::GraphDialect",
                           "mlir::func::FuncDialect"];
}

def VerifySchedulePass : Pass<"dist-verify-schedule", "mlir::ModuleOp"> {
  let summary = "checks that the module's schedule runs";
  let description = [{
    Checks the module's `dist.schedule` against its plan with the schedule
    verifier of the cost core: every forward and backward of every
    micro-batch and chunk appears exactly once, on the rank its stage runs
    on; each runs after its inputs arrived (a receive before it, or the
    previous chunk on the same rank); sends go to and receives come from the
    neighbouring stages; the lists cannot deadlock when sends are eager and
    receives block (collectives of a replicated stage are rendezvous); and,
    when the module carries its cluster, every rank's peak memory (static
    state, activations in flight, stashes) fits its devices or
    `memory-limit`. A failure is reported on the offending action op and
    names the rank, the action and what would fix it. The IR is not
    changed.

    Example:

    ```
    dist-opt scheduled.mlir --dist-verify-schedule
    ```
  }];
  let options = [
    Option<"memoryLimit", "memory-limit", "std::string", "\"\"",
           "Per-device memory limit such as 80GB (default: each device's)">
  ];
  let dependentDialects = ["distopt::dist::DistDialect"];
}

#endif // DIST_PASSES_PARTITION_PASSES_TD
