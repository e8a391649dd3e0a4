//===- DistScheduleOps.td - Pipeline schedules as IR -------*- tablegen -*-===//
//
// Part of DistOpt. The schedule of a plan as data in the IR: for every
// pipeline rank (a stage group of dp x tp devices, or one slot of a
// replicated stage) the ordered list of its actions. Compute actions name
// the outlined stage function they run; sends and receives name the peer
// rank; gradient synchronisation and the optimizer step close the list.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_SCHEDULE_OPS_TD
#define DIST_SCHEDULE_OPS_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "DistDialect.td"
include "DistAttrs.td"
include "DistInterfaces.td"

def Dist_ScheduleOp : Dist_Op<"schedule", [
    IsolatedFromAbove, NoTerminator, SingleBlock,
    HasParent<"::mlir::ModuleOp">,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "The per-rank action lists that run a pipelined function";
  let description = [{
    The schedule of the module's plan for the pipelined function `function`
    (whose stage bodies are the functions its compute actions call): one
    `dist.actions` list per pipeline rank, in rank order (per slot, for
    plans with per-stage replicas). `kind` is the schedule that generated
    the lists (`"1f1b"`, `"gpipe"`, ...; `"forward"` for the forward-only
    stream of an inference plan) and `microbatches` the micro-batches of one
    iteration. `dist-materialize-schedule` writes it, `dist-verify-schedule`
    checks it, `dist-simulate` and `dist-compile` consume it. The lists may
    be edited by hand or by another compiler: the verifier then decides
    whether they still run.

    Example:
    ```mlir
    dist.schedule for @main kind "gpipe" microbatches 2 {
      dist.actions 0 on #dist.mesh<shape = [1, 1], devices = [0]> {
        dist.forward @main_stage0 microbatch 0
        dist.send_activation microbatch 0 chunk 0 to 1
        dist.forward @main_stage0 microbatch 1
        dist.send_activation microbatch 1 chunk 0 to 1
      }
      dist.actions 1 on #dist.mesh<shape = [1, 1], devices = [1]> {
        dist.recv_activation microbatch 0 chunk 0 from 0
        dist.forward @main_stage1 microbatch 0
        dist.recv_activation microbatch 1 chunk 0 from 0
        dist.forward @main_stage1 microbatch 1
      }
    }
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$function, StrAttr:$kind,
                       I64Attr:$microbatches);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    `for` $function `kind` $kind `microbatches` $microbatches
    attr-dict-with-keyword $body
  }];
  let hasVerifier = 1;
}

def Dist_ActionsOp : Dist_Op<"actions", [
    NoTerminator, SingleBlock, HasParent<"ScheduleOp">]> {
  let summary = "The ordered actions of one pipeline rank";
  let description = [{
    What the devices of `mesh` do in one iteration, in order. `rank` is the
    pipeline rank (the list index; with per-stage replicas, the slot). Every
    device of the mesh runs the same list on its own data-parallel and
    tensor-parallel shard.

    Example:
    ```mlir
    dist.actions 1 on #dist.mesh<shape = [2, 1], devices = [2, 3]> {
      dist.recv_activation microbatch 0 chunk 0 from 0
      dist.forward @main_stage1 microbatch 0
    }
    ```
  }];
  let arguments = (ins I64Attr:$rank, Dist_MeshAttr:$mesh);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $rank `on` qualified($mesh) attr-dict-with-keyword $body
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Compute actions
//===----------------------------------------------------------------------===//

class Dist_ComputeActionOp<string mnemonic, string what>
    : Dist_Op<mnemonic, [HasParent<"ActionsOp">,
                         DeclareOpInterfaceMethods<Dist_ActionOpInterface>,
                         DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Runs the " # what # " of a stage for one micro-batch";
  let description = [{
    Runs the }] # what # [{ of the stage function `stage` (a function with
    `dist.virtual_stage = v`; its chunk is `v div pp`) for micro-batch
    `microbatch`.

    Example:
    ```mlir
    dist.}] # mnemonic # [{ @main_stage1 microbatch 3
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$stage, I64Attr:$microbatch);
  let assemblyFormat = "$stage `microbatch` $microbatch attr-dict";
}

def Dist_ForwardOp : Dist_ComputeActionOp<"forward", "forward">;
def Dist_BackwardOp : Dist_ComputeActionOp<"backward",
    "backward (input and weight gradients)">;
def Dist_BackwardInputOp : Dist_ComputeActionOp<"backward_input",
    "input-gradient half of the backward">;
def Dist_BackwardWeightOp : Dist_ComputeActionOp<"backward_weight",
    "weight-gradient half of the backward">;

//===----------------------------------------------------------------------===//
// Transfers between stages
//===----------------------------------------------------------------------===//

class Dist_TransferActionOp<string mnemonic, string what, string dir>
    : Dist_Op<mnemonic, [HasParent<"ActionsOp">,
                         DeclareOpInterfaceMethods<Dist_ActionOpInterface>]> {
  let summary = what;
  let description = what # [{ of micro-batch `microbatch` of this rank's
    chunk `chunk`, }] # dir # [{ pipeline rank `peer`.

    Example:
    ```mlir
    dist.}] # mnemonic # [{ microbatch 3 chunk 0 }] #
    !if(!eq(dir, "to"), "to", "from") # [{ 1
    ```
  }];
  let arguments = (ins I64Attr:$microbatch, I64Attr:$chunk, I64Attr:$peer);
  let assemblyFormat = "`microbatch` $microbatch `chunk` $chunk `" # dir #
                       "` $peer attr-dict";
  let hasVerifier = 1;
}

def Dist_SendActivationOp : Dist_TransferActionOp<"send_activation",
    "Sends the activations to the next virtual stage", "to">;
def Dist_RecvActivationOp : Dist_TransferActionOp<"recv_activation",
    "Receives the activations from the previous virtual stage", "from">;
def Dist_SendGradOp : Dist_TransferActionOp<"send_grad",
    "Sends the input gradients to the previous virtual stage", "to">;
def Dist_RecvGradOp : Dist_TransferActionOp<"recv_grad",
    "Receives the output gradients from the next virtual stage", "from">;

//===----------------------------------------------------------------------===//
// Per-iteration actions
//===----------------------------------------------------------------------===//

class Dist_ChunkActionOp<string mnemonic, string what>
    : Dist_Op<mnemonic, [HasParent<"ActionsOp">,
                         DeclareOpInterfaceMethods<Dist_ActionOpInterface>]> {
  let summary = what;
  let description = what # [{ of chunk `chunk` of this rank over its
    data-parallel group: of the whole iteration, or with `microbatch` of
    that micro-batch only (PipeDream syncs and updates after each).

    Example:
    ```mlir
    dist.}] # mnemonic # [{ chunk 0
    dist.}] # mnemonic # [{ microbatch 3 chunk 0
    ```
  }];
  let arguments = (ins OptionalAttr<I64Attr>:$microbatch, I64Attr:$chunk);
  let assemblyFormat = "(`microbatch` $microbatch^)? `chunk` $chunk attr-dict";
  let hasVerifier = 1;
}

def Dist_GradAllReduceOp : Dist_ChunkActionOp<"grad_all_reduce",
    "All-reduces the weight gradients">;
def Dist_GradReduceScatterOp : Dist_ChunkActionOp<"grad_reduce_scatter",
    "Reduce-scatters the weight gradients (ZeRO)">;
def Dist_ParamAllGatherOp : Dist_ChunkActionOp<"param_all_gather",
    "All-gathers the updated parameter shards (ZeRO)">;

def Dist_OptimizerStepOp : Dist_Op<"optimizer_step", [
    HasParent<"ActionsOp">,
    DeclareOpInterfaceMethods<Dist_ActionOpInterface>]> {
  let summary = "Applies the optimizer to this rank's weights";
  let description = [{
    Updates every weight of this rank's stages with its (synchronised)
    gradients; ends the iteration. With `microbatch` (PipeDream: one update
    after each micro-batch's backward) it updates with that micro-batch's
    gradients only.

    Example:
    ```mlir
    dist.optimizer_step
    dist.optimizer_step microbatch 2
    ```
  }];
  let arguments = (ins OptionalAttr<I64Attr>:$microbatch);
  let assemblyFormat = "(`microbatch` $microbatch^)? attr-dict";
  let hasVerifier = 1;
}

#endif // DIST_SCHEDULE_OPS_TD
