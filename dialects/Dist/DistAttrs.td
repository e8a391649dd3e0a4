//===- DistAttrs.td - Attributes of the distribution dialect -*- tablegen -*-===//
//
// Part of DistOpt. The cluster a module is planned for, device meshes, and
// the plan itself. Cluster and plan attributes are lossless images of the
// cost core's `cluster::Cluster` and `schedule::Plan` (DistAttrs.cpp
// converts both ways), so a pass can read back exactly what another wrote.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_ATTRS_TD
#define DIST_ATTRS_TD

include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "DistDialect.td"
include "DistEnums.td"

//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

/// A 64-bit float written as a plain literal (`2.0e+12`).
class Dist_F64Base : APFloatParameter<"a 64-bit float"> {
  let parser = [{ [&]() -> ::mlir::FailureOr<::llvm::APFloat> {
      double value;
      if ($_parser.parseFloat(value))
        return ::mlir::failure();
      return ::llvm::APFloat(value);
    }() }];
  let printer = [{ $_printer << $_self.convertToDouble() }];
}
def Dist_F64Parameter : Dist_F64Base;

/// A 64-bit float parameter that may be left out (then `value`).
class Dist_F64DefaultParameter<string value> : Dist_F64Base {
  let defaultValue = "::llvm::APFloat(" # value # ")";
}

/// `true` or `false`, left out when it is `value`.
class Dist_BoolParameter<string value> : AttrParameter<"bool", "a flag"> {
  let parser = "::distopt::dist::parseBoolKeyword($_parser)";
  let printer = "$_printer << ($_self ? \"true\" : \"false\")";
  let defaultValue = value;
}

/// A bracketed, possibly empty list `[a, b, ...]`; attributes print in full
/// (`#dist.link<...>`) and parse in either form.
class Dist_ListParameter<string elt> : ArrayRefParameter<elt> {
  let parser = "::distopt::dist::parseBracketList<" # elt # ">($_parser)";
  let printer = "::distopt::dist::printBracketList($_printer, $_self)";
}

/// A bracketed list that may be left out (empty).
class Dist_OptionalListParameter<string elt>
    : OptionalArrayRefParameter<elt> {
  let parser = "::distopt::dist::parseBracketList<" # elt # ">($_parser)";
  let printer = "::distopt::dist::printBracketList($_printer, $_self)";
}

/// An enum of the MLIR-free cost core, spelled as the command line spells
/// it (`"1f1b"`, `"zb-h1"`, `none`, `bf16`). Keeping the core's own enum as
/// the parameter type means the IR and the planner cannot disagree on the
/// set of values.
class Dist_CoreEnumParameter<string cppType, string fn, string value>
    : AttrParameter<cppType, "an enum of the cost core"> {
  let parser = "::distopt::dist::parse" # fn # "($_parser)";
  let printer = "::distopt::dist::print" # fn # "($_printer, $_self)";
  let defaultValue = value;
}

class Dist_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Dist_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

//===----------------------------------------------------------------------===//
// The machines
//===----------------------------------------------------------------------===//

def Dist_DeviceKindAttr : Dist_Attr<"DeviceKind", "device_kind"> {
  let summary = "One kind of device: memory, bandwidth, peaks and efficiency";
  let description = [{
    Describes a kind of accelerator or CPU as the cost model sees it.
    `memory` is in bytes, `bandwidth` is memory bandwidth in bytes/s and
    `flops` maps element type names (`fp32`, `tf32`, `fp16`, `bf16`, `fp8`,
    `int8`, ...) to peak FLOP/s. The optional fields are the calibrated
    constants of the device: `efficiency` the achievable fraction of peak per
    op class (`matmul`, `conv`, `elementwise`, `norm`, `softmax`,
    `embedding`, `reduction`, `data_movement`, `loss`, `other`; a class it
    leaves out gets the default: matmul 0.75, conv 0.6, others 0.5),
    `memory_efficiency` the achievable fraction of memory bandwidth (default
    0.8), `launch_overhead` seconds per kernel, `half_efficiency_flops`
    the kernel size at which a compute-bound op reaches half of its
    efficiency and `fp8_matmul_efficiency` the achievable fraction of the
    fp8 peak for matmuls run in fp8 (default 0: the matmul efficiency).

    Example:
    ```mlir
    #dist.device_kind<"a100-80gb", memory = 80000000000, bandwidth = 2.039e+12,
                      flops = {bf16 = 3.12e+14 : f64, fp32 = 1.95e+13 : f64},
                      efficiency = {matmul = 7.0e-01 : f64, conv = 6.0e-01 : f64},
                      launch_overhead = 4.0e-06>
    ```
  }];
  let parameters = (ins StringRefParameter<"device kind name">:$name,
      "int64_t":$memory, Dist_F64Parameter:$bandwidth,
      "::mlir::DictionaryAttr":$flops,
      OptionalParameter<"::mlir::DictionaryAttr">:$efficiency,
      Dist_F64DefaultParameter<"0.8">:$memory_efficiency,
      Dist_F64DefaultParameter<"0.0">:$launch_overhead,
      Dist_F64DefaultParameter<"0.0">:$half_efficiency_flops,
      Dist_F64DefaultParameter<"0.0">:$fp8_matmul_efficiency);
  let assemblyFormat = [{
    `<` $name `,` struct($memory, $bandwidth, $flops, $efficiency,
                         $memory_efficiency, $launch_overhead,
                         $half_efficiency_flops, $fp8_matmul_efficiency) `>`
  }];
  let genVerifyDecl = 1;
}

def Dist_LinkAttr : Dist_Attr<"Link", "link"> {
  let summary = "A link: bandwidth, latency and collective efficiency";
  let description = [{
    The link inside a node (NVLink, PCIe) or between nodes (InfiniBand,
    Ethernet). `bandwidth` is per device and direction in bytes/s, `latency`
    in seconds per message, and `collective_efficiency` the fraction of the
    bandwidth collectives reach as NCCL bus bandwidth (default 1).

    Example:
    ```mlir
    #dist.link<"nvlink", bandwidth = 3.0e+11, latency = 3.0e-06,
               collective_efficiency = 7.7e-01>
    ```
  }];
  let parameters = (ins StringRefParameter<"link name">:$name,
                        Dist_F64Parameter:$bandwidth,
                        Dist_F64Parameter:$latency,
                        Dist_F64DefaultParameter<"1.0">:$collective_efficiency);
  let assemblyFormat = [{
    `<` $name `,` struct($bandwidth, $latency, $collective_efficiency) `>`
  }];
  let genVerifyDecl = 1;
}

def Dist_NodeGroupAttr : Dist_Attr<"NodeGroup", "node_group"> {
  let summary = "Nodes of one kind: their devices and the link inside them";
  let description = [{
    `nodes` nodes of `devices` devices of kind `kind` each, joined inside a
    node by `link`. Devices are numbered node-major in the order the groups
    are listed. `tiers` (absent when the nodes have none) holds each node's
    storage below device memory, as the YAML's `tiers`, in bytes and
    bytes/s: `host_capacity`, `host_bandwidth` (per device, its PCIe link),
    `host_memory_bandwidth` (the CPUs' DRAM), `nvme_capacity`,
    `nvme_bandwidth`, `hdd_capacity`, `hdd_bandwidth` (per node); each tier
    is given with both its capacity and bandwidth, or not at all. `nics`
    (absent: one per device) is the NICs per node that its devices share
    for the network, as the YAML's `nics`; it divides `devices`.

    Example:
    ```mlir
    #dist.node_group<kind = "a100-80gb", nodes = 2, devices = 8,
        link = #dist.link<"nvlink", bandwidth = 3.0e+11, latency = 3.0e-06>>
    ```
  }];
  let parameters = (ins StringRefParameter<"device kind name">:$kind,
                        "int64_t":$nodes, "int64_t":$devices,
                        "LinkAttr":$link,
                        OptionalParameter<"::mlir::DictionaryAttr">:$tiers,
                        DefaultValuedParameter<"int64_t", "0">:$nics);
  let assemblyFormat = [{
    `<` struct($kind, $nodes, $devices, $link, $tiers, $nics) `>`
  }];
  let genVerifyDecl = 1;
}

def Dist_ClusterAttr : Dist_Attr<"Cluster", "cluster"> {
  let summary = "The machines a program runs on";
  let description = [{
    A possibly heterogeneous cluster, exactly as the cost model sees it: the
    device kinds it has, its node groups (devices numbered node-major in
    group order) and the `network` joining the nodes (absent for one node).
    `profile` names a profile database (JSON) whose measured op times
    override the analytic ones. `availability` (absent when the cluster
    says nothing about it) holds the nodes' preemption rate, replacement
    time, prices and checkpoint bandwidth as f64 entries named like the
    YAML fields (docs/resilience.md). `nodes_per_rack` (default 0: one
    network with full bisection) and `rack_oversubscription` (default 1)
    describe racks whose uplinks are oversubscribed, as the YAML's
    `nodes_per_rack` and `oversubscription`. `input` (absent when the
    cluster says nothing about it) holds the nodes' input side as f64
    entries named like the YAML fields: `storage_read_GBps`,
    `page_cache_GB` and `cpu_cores_per_device` (docs/cost-model.md, "Data
    stalls"). `dist-attach-cluster` attaches it to the
    module as `dist.cluster`; every later planning pass reads it back.

    Example:
    ```mlir
    module attributes {dist.cluster = #dist.cluster<"mixed",
        kinds = [#dist.device_kind<"a100", memory = 85899345920,
                   bandwidth = 2.0e+12, flops = {bf16 = 3.12e+14 : f64}>,
                 #dist.device_kind<"v100", memory = 34359738368,
                   bandwidth = 9.0e+11, flops = {fp16 = 1.25e+14 : f64}>],
        nodes = [#dist.node_group<kind = "a100", nodes = 1, devices = 8,
                   link = #dist.link<"nvlink", bandwidth = 3.0e+11, latency = 2.0e-06>>,
                 #dist.node_group<kind = "v100", nodes = 1, devices = 8,
                   link = #dist.link<"nvlink", bandwidth = 1.5e+11, latency = 2.0e-06>>],
        network = #dist.link<"infiniband", bandwidth = 2.5e+10, latency = 5.0e-06>>} {}
    ```
  }];
  let parameters = (ins StringRefParameter<"cluster name">:$name,
      Dist_ListParameter<"DeviceKindAttr">:$kinds,
      Dist_ListParameter<"NodeGroupAttr">:$nodes,
      OptionalParameter<"LinkAttr">:$network,
      StringRefParameter<"what the cluster is", "\"\"">:$description,
      StringRefParameter<"profile database path", "\"\"">:$profile,
      OptionalParameter<"::mlir::DictionaryAttr">:$availability,
      DefaultValuedParameter<"int64_t", "0">:$nodes_per_rack,
      Dist_F64DefaultParameter<"1.0">:$rack_oversubscription,
      OptionalParameter<"::mlir::DictionaryAttr">:$input);
  let assemblyFormat = [{
    `<` $name `,` struct($kinds, $nodes, $network, $description, $profile,
                         $availability, $nodes_per_rack,
                         $rack_oversubscription, $input) `>`
  }];
  let builders = [
    AttrBuilder<(ins "const ::distopt::cluster::Cluster &":$cluster,
                     CArg<"::llvm::StringRef", "{}">:$profile)>
  ];
  let extraClassDeclaration = [{
    /// Total number of devices.
    int64_t getNumDevices() const;
    /// The kind of device `id`, or null when out of range.
    DeviceKindAttr getKindOf(int64_t id) const;
    /// The cluster the cost model works on.
    ::distopt::cluster::Cluster toCluster() const;
  }];
  let genVerifyDecl = 1;
}

def Dist_MeshAttr : Dist_Attr<"Mesh", "mesh"> {
  let summary = "A group of devices arranged as an N-d mesh";
  let description = [{
    The devices one stage (or one collective) runs on, as an N-d mesh of
    cluster device numbers in row-major order. Axes are typically data and
    tensor parallelism. Devices may be of different kinds.

    Example:
    ```mlir
    #dist.mesh<shape = [2, 4], devices = [0, 1, 2, 3, 4, 5, 6, 7]>
    ```
  }];
  let parameters = (ins Dist_ListParameter<"int64_t">:$shape,
                        Dist_ListParameter<"int64_t">:$devices);
  let assemblyFormat = [{
    `<` `shape` `=` $shape `,` `devices` `=` $devices `>`
  }];
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// The plan
//===----------------------------------------------------------------------===//

def Dist_PlanAttr : Dist_Attr<"Plan", "plan"> {
  let summary = "How the work is spread: degrees, stages, schedule";
  let description = [{
    The parallel plan of a module, written by `dist-set-plan` or
    `dist-search` as the module attribute `dist.plan` and read by every later
    pass (simulation, stage outlining, schedule materialization, code
    generation):

    - `dp`, `tp`, `pp`: data-, tensor- and pipeline-parallel degrees;
      `chunks` model chunks per pipeline stage (interleaved schedules, and
      2 for the V-shaped ones);
    - `cp`: context-parallel degree (each sequence split over `cp` ranks,
      ring attention; default 1); `ep`: expert-parallel degree (the routed
      experts split over `ep` of the `dp` replicas, which it divides;
      default 1); `sp`: Megatron sequence parallelism over each TP group;
      `tp_overlap`: TP collectives hidden under their GEMMs (Transformer
      Engine's tp_comm_overlap); `expert_imbalance`: tokens of the busiest
      expert rank over the mean (>= 1, default 1.0);
    - `mbs` samples per micro-batch, `microbatches` micro-batches per
      iteration and data-parallel replica, `global_batch` samples per
      iteration;
    - `schedule`: `"gpipe"`, `"1f1b"`, `"interleaved"`, `"zb-h1"`,
      `"zb-h2"`, `"zb-v"`, `"v-half"`, `"v-min"`, `"dualpipe-v"`,
      `"pipedream"`, `"pipedream-2bw"` or `"pipemare"`; `pipemare_warmup`
      (default 0) and `pipemare_decay` (default 0.1) tune `"pipemare"`: the
      updates over which a delayed stage's learning rate rises to the full
      rate, and the decay of the update average its backward's weights are
      corrected with (1: no correction); `recompute`: `none`, `selective`
      or `full`; `zero`: the ZeRO stage (0-3);
    - `stages`: the first cost-model layer of every virtual stage
      (`pp * chunks` entries, ascending, the first 0); virtual stage `v` runs
      on pipeline stage `v mod pp`, or for the V-shaped schedules (`zb-v`,
      `v-half`, `v-min`, `dualpipe-v`) on `v` and `2 pp - 1 - v`;
    - `replicas`: PipeDream-style replicas per pipeline stage (needs `dp = 1`
      and `chunks = 1`); left out when every stage has `dp` replicas;
    - `mode`: `train` (default) or `infer` (forward only), and for
      inference the `objective` it minimises: `throughput` (a stream of
      batches, default) or `latency` (one global batch); `dtype` the compute
      element type the costs assume (default `bf16`; `fp8`: fp8 matmuls,
      bf16 elsewhere); `fused_attention` (default false): the costs take
      attention as one fused kernel (FlashAttention); `optimizer` the
      optimizer whose state the memory model holds: `adam` (default; also
      AdamW), `momentum` or `sgd`;
    - the flags `scatter_gather`, `overlap_p2p`, `overlap_grad_sync`
      (default true), `uneven_batch` and `overlap_param_gather` (ZeRO's
      parameter all-gather under the next forward; default false), as in
      `--dist-plan` (`sg`, `p2p_overlap`, `grad_overlap`, `uneven`,
      `ag_overlap`);
    - `offload`: what lives in the nodes' storage tiers instead of device
      memory, as `--dist-plan`'s `offload`: `"opt"` (optimizer state, master
      weights and gradients, the step on the CPU: ZeRO-Offload),
      `"opt+params"` (the weights too: ZeRO-Infinity), `"act"` (saved
      activations), or a `+`-joined mix; default `"none"`.

    Devices are numbered `t + tp * (c + cp * (d + dp * s))` (tensor rank
    fastest, then context rank); with `replicas` (cp = 1),
    `t + tp * (r_0 + ... + r_{s-1} + d)`
    (`lib/Schedule/RankLayout.h`).

    Example:
    ```mlir
    module attributes {dist.plan = #dist.plan<dp = 2, tp = 2, pp = 2, mbs = 1,
        microbatches = 4, global_batch = 8, schedule = "1f1b",
        stages = [0, 12]>} {}
    ```
  }];
  let parameters = (ins "int64_t":$dp, "int64_t":$tp, "int64_t":$pp,
      "int64_t":$mbs, "int64_t":$microbatches, "int64_t":$global_batch,
      Dist_CoreEnumParameter<"::distopt::schedule::ScheduleKind",
                             "ScheduleKind", "">:$schedule,
      DefaultValuedParameter<"int64_t", "1">:$chunks,
      DefaultValuedParameter<"int64_t", "1">:$cp,
      DefaultValuedParameter<"int64_t", "1">:$ep,
      Dist_BoolParameter<"false">:$sp,
      Dist_BoolParameter<"false">:$tp_overlap,
      Dist_F64DefaultParameter<"1.0">:$expert_imbalance,
      DefaultValuedParameter<"int64_t", "0">:$pipemare_warmup,
      Dist_F64DefaultParameter<"0.1">:$pipemare_decay,
      Dist_CoreEnumParameter<"::distopt::cost::Recompute", "Recompute",
                             "::distopt::cost::Recompute::None">:$recompute,
      DefaultValuedParameter<"int64_t", "0">:$zero,
      Dist_ListParameter<"int64_t">:$stages,
      Dist_OptionalListParameter<"int64_t">:$replicas,
      Dist_CoreEnumParameter<"::distopt::schedule::Mode", "Mode",
                             "::distopt::schedule::Mode::Train">:$mode,
      Dist_CoreEnumParameter<"::distopt::schedule::InferObjective",
                             "Objective",
                             "::distopt::schedule::InferObjective::Throughput">:$objective,
      Dist_CoreEnumParameter<"::distopt::cluster::DType", "DType",
                             "::distopt::cluster::DType::BF16">:$dtype,
      Dist_BoolParameter<"false">:$fused_attention,
      Dist_CoreEnumParameter<"::distopt::cost::Optimizer", "Optimizer",
                             "::distopt::cost::Optimizer::Adam">:$optimizer,
      Dist_BoolParameter<"true">:$scatter_gather,
      Dist_BoolParameter<"true">:$overlap_p2p,
      Dist_BoolParameter<"true">:$overlap_grad_sync,
      Dist_BoolParameter<"false">:$uneven_batch,
      Dist_BoolParameter<"false">:$overlap_param_gather,
      Dist_CoreEnumParameter<"::distopt::cost::Offload", "Offload",
                             "::distopt::cost::Offload{}">:$offload);
  let assemblyFormat = "`<` struct(params) `>`";
  let builders = [
    AttrBuilder<(ins "const ::distopt::schedule::Plan &":$plan)>
  ];
  let extraClassDeclaration = [{
    /// The plan the cost core works on (finalized: cuts, micro-batches and
    /// global batch set).
    ::distopt::schedule::Plan toPlan() const;
    /// Where every part of the plan runs.
    ::distopt::schedule::RankLayout getLayout() const;
    int64_t getNumVirtualStages() const { return getPp() * getChunks(); }
    /// Devices the plan runs on.
    int64_t getNumDevices() const;
    /// Cluster device numbers of virtual stage `v` as a row-major
    /// [replicas, tp] mesh, or [replicas, cp, tp] with cp > 1.
    MeshAttr getStageMesh(int64_t v) const;
  }];
  let genVerifyDecl = 1;
}

#endif // DIST_ATTRS_TD
