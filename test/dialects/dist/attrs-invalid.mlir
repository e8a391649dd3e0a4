// RUN: dist-opt %s -split-input-file -verify-diagnostics
// One case per verifier message of the dist attributes (DistAttrs.cpp) and
// of the discardable dist.* attributes the planner writes (DistVerify.cpp).

// expected-error @+1 {{device kind needs a non-empty name}}
module attributes {x = #dist.device_kind<"", memory = 1, bandwidth = 1.0, flops = {fp32 = 1.0 : f64}>} {}

// -----

// expected-error @+1 {{device kind 'a' needs a positive memory size, got 0}}
module attributes {x = #dist.device_kind<"a", memory = 0, bandwidth = 1.0, flops = {fp32 = 1.0 : f64}>} {}

// -----

// expected-error @+1 {{device kind 'a' needs a positive memory bandwidth}}
module attributes {x = #dist.device_kind<"a", memory = 1, bandwidth = 0.0, flops = {fp32 = 1.0 : f64}>} {}

// -----

// expected-error @+1 {{device kind 'a' needs peak FLOP/s for at least one element type}}
module attributes {x = #dist.device_kind<"a", memory = 1, bandwidth = 1.0, flops = {}>} {}

// -----

// expected-error @+1 {{device kind 'a' gives peak FLOP/s for unknown element type 'f33'; use fp32, tf32, fp16, bf16, fp8, int8, int32 or int64}}
module attributes {x = #dist.device_kind<"a", memory = 1, bandwidth = 1.0, flops = {f33 = 1.0 : f64}>} {}

// -----

// expected-error @+1 {{device kind 'a' peak FLOP/s for 'fp32' must be a positive float}}
module attributes {x = #dist.device_kind<"a", memory = 1, bandwidth = 1.0, flops = {fp32 = -1.0 : f64}>} {}

// -----

// expected-error @+1 {{device kind 'a' gives an efficiency for unknown op class 'gemm'; use matmul, conv, elementwise, norm, softmax, embedding, reduction, data_movement, loss or other}}
module attributes {x = #dist.device_kind<"a", memory = 1, bandwidth = 1.0, flops = {fp32 = 1.0 : f64}, efficiency = {gemm = 0.5 : f64}>} {}

// -----

// expected-error @+1 {{device kind 'a' efficiency of 'matmul' must be a float in (0, 1]}}
module attributes {x = #dist.device_kind<"a", memory = 1, bandwidth = 1.0, flops = {fp32 = 1.0 : f64}, efficiency = {matmul = 1.5 : f64}>} {}

// -----

// expected-error @+1 {{device kind 'a' memory_efficiency must be in (0, 1]}}
module attributes {x = #dist.device_kind<"a", memory = 1, bandwidth = 1.0, flops = {fp32 = 1.0 : f64}, memory_efficiency = 0.0>} {}

// -----

// expected-error @+1 {{device kind 'a' launch_overhead and half_efficiency_flops cannot be negative}}
module attributes {x = #dist.device_kind<"a", memory = 1, bandwidth = 1.0, flops = {fp32 = 1.0 : f64}, launch_overhead = -1.0>} {}

// -----

// expected-error @+1 {{link 'l' needs a positive bandwidth}}
module attributes {x = #dist.link<"l", bandwidth = -1.0, latency = 0.0>} {}

// -----

// expected-error @+1 {{link 'l' cannot have a negative latency}}
module attributes {x = #dist.link<"l", bandwidth = 1.0, latency = -1.0>} {}

// -----

// expected-error @+1 {{link 'l' collective_efficiency must be in (0, 2]}}
module attributes {x = #dist.link<"l", bandwidth = 1.0, latency = 0.0, collective_efficiency = 0.0>} {}

// -----

// expected-error @+1 {{node group of 'a' needs at least one node, got 0}}
module attributes {x = #dist.node_group<kind = "a", nodes = 0, devices = 2, link = #dist.link<"l", bandwidth = 1.0, latency = 0.0>>} {}

// -----

// expected-error @+1 {{node group of 'a' needs at least one device per node, got 0}}
module attributes {x = #dist.node_group<kind = "a", nodes = 1, devices = 0, link = #dist.link<"l", bandwidth = 1.0, latency = 0.0>>} {}

// -----

// expected-error @+1 {{node group of 'a' has nics = 3 for 4 devices per node; give a number of NICs that divides devices (or none: one per device)}}
module attributes {x = #dist.node_group<kind = "a", nodes = 1, devices = 4, link = #dist.link<"l", bandwidth = 1.0, latency = 0.0>, nics = 3>} {}

// -----

// expected-error @+1 {{cluster 'c' names device kind 'a' twice}}
module attributes {x = #dist.cluster<"c", kinds = [#dist.device_kind<"a", memory = 1, bandwidth = 1.0, flops = {fp32 = 1.0 : f64}>, #dist.device_kind<"a", memory = 1, bandwidth = 1.0, flops = {fp32 = 1.0 : f64}>], nodes = [#dist.node_group<kind = "a", nodes = 1, devices = 2, link = #dist.link<"l", bandwidth = 1.0, latency = 0.0>>]>} {}

// -----

// expected-error @+1 {{cluster 'c' has no devices}}
module attributes {x = #dist.cluster<"c", kinds = [#dist.device_kind<"a", memory = 1, bandwidth = 1.0, flops = {fp32 = 1.0 : f64}>], nodes = []>} {}

// -----

// expected-error @+1 {{cluster 'c' node group uses unknown device kind 'b'}}
module attributes {x = #dist.cluster<"c", kinds = [#dist.device_kind<"a", memory = 1, bandwidth = 1.0, flops = {fp32 = 1.0 : f64}>], nodes = [#dist.node_group<kind = "b", nodes = 1, devices = 2, link = #dist.link<"l", bandwidth = 1.0, latency = 0.0>>]>} {}

// -----

// expected-error @+1 {{cluster 'c' has 2 nodes but no network joining them}}
module attributes {x = #dist.cluster<"c", kinds = [#dist.device_kind<"a", memory = 1, bandwidth = 1.0, flops = {fp32 = 1.0 : f64}>], nodes = [#dist.node_group<kind = "a", nodes = 2, devices = 2, link = #dist.link<"l", bandwidth = 1.0, latency = 0.0>>]>} {}

// -----

// expected-error @+1 {{cluster 'c' needs nodes_per_rack >= 0 and rack_oversubscription >= 1, got 4 and 5.000000e-01}}
module attributes {x = #dist.cluster<"c", kinds = [#dist.device_kind<"a", memory = 1, bandwidth = 1.0, flops = {fp32 = 1.0 : f64}>], nodes = [#dist.node_group<kind = "a", nodes = 1, devices = 2, link = #dist.link<"l", bandwidth = 1.0, latency = 0.0>>], nodes_per_rack = 4, rack_oversubscription = 0.5>} {}

// -----

// expected-error @+1 {{cluster 'c' input needs 'cpu_cores_per_device' as a float in [0.01, 10000]}}
module attributes {x = #dist.cluster<"c", kinds = [#dist.device_kind<"a", memory = 1, bandwidth = 1.0, flops = {fp32 = 1.0 : f64}>], nodes = [#dist.node_group<kind = "a", nodes = 1, devices = 2, link = #dist.link<"l", bandwidth = 1.0, latency = 0.0>>], input = {storage_read_GBps = 2.0 : f64, page_cache_GB = 10.0 : f64, cpu_cores_per_device = 0.0 : f64}>} {}

// -----

// expected-error @+1 {{cluster 'c' input needs 'page_cache_GB' as a float in [0, 100000]}}
module attributes {x = #dist.cluster<"c", kinds = [#dist.device_kind<"a", memory = 1, bandwidth = 1.0, flops = {fp32 = 1.0 : f64}>], nodes = [#dist.node_group<kind = "a", nodes = 1, devices = 2, link = #dist.link<"l", bandwidth = 1.0, latency = 0.0>>], input = {storage_read_GBps = 2.0 : f64, cpu_cores_per_device = 3.0 : f64}>} {}

// -----

// expected-error @+1 {{cluster 'c' input has an unknown entry; it holds exactly storage_read_GBps, page_cache_GB and cpu_cores_per_device}}
module attributes {x = #dist.cluster<"c", kinds = [#dist.device_kind<"a", memory = 1, bandwidth = 1.0, flops = {fp32 = 1.0 : f64}>], nodes = [#dist.node_group<kind = "a", nodes = 1, devices = 2, link = #dist.link<"l", bandwidth = 1.0, latency = 0.0>>], input = {storage_read_GBps = 2.0 : f64, page_cache_GB = 10.0 : f64, cpu_cores_per_device = 3.0 : f64, gpus = 8.0 : f64}>} {}

// -----

// expected-error @+1 {{cluster 'c' availability needs 'relaunch_s', where given, as a float >= 0}}
module attributes {x = #dist.cluster<"c", kinds = [#dist.device_kind<"a", memory = 1, bandwidth = 1.0, flops = {fp32 = 1.0 : f64}>], nodes = [#dist.node_group<kind = "a", nodes = 1, devices = 2, link = #dist.link<"l", bandwidth = 1.0, latency = 0.0>>], availability = {preemptions_per_node_hour = 0.1 : f64, replacement_s = 300.0 : f64, on_demand_usd_per_node_hour = 3.0 : f64, preemptible_usd_per_node_hour = 1.0 : f64, checkpoint_GBps = 1.0 : f64, relaunch_s = -5.0 : f64}>} {}

// -----

// expected-error @+1 {{cluster 'c' availability has an unknown entry; it holds exactly preemptions_per_node_hour, replacement_s, on_demand_usd_per_node_hour, preemptible_usd_per_node_hour and checkpoint_GBps, and optionally relaunch_s}}
module attributes {x = #dist.cluster<"c", kinds = [#dist.device_kind<"a", memory = 1, bandwidth = 1.0, flops = {fp32 = 1.0 : f64}>], nodes = [#dist.node_group<kind = "a", nodes = 1, devices = 2, link = #dist.link<"l", bandwidth = 1.0, latency = 0.0>>], availability = {preemptions_per_node_hour = 0.1 : f64, replacement_s = 300.0 : f64, on_demand_usd_per_node_hour = 3.0 : f64, preemptible_usd_per_node_hour = 1.0 : f64, checkpoint_GBps = 1.0 : f64, restart = 5.0 : f64}>} {}

// -----

// expected-error @+1 {{device kind 'a' fp8_matmul_efficiency must be in [0, 1] (0: the matmul efficiency)}}
module attributes {x = #dist.device_kind<"a", memory = 1, bandwidth = 1.0, flops = {fp32 = 1.0 : f64}, fp8_matmul_efficiency = 1.5>} {}

// -----

// expected-error @+1 {{node group of 'a' tiers has unknown entry 'ssd_capacity'; use host_capacity, host_bandwidth, host_memory_bandwidth, nvme_capacity, nvme_bandwidth, hdd_capacity or hdd_bandwidth}}
module attributes {x = #dist.node_group<kind = "a", nodes = 1, devices = 2, link = #dist.link<"l", bandwidth = 1.0, latency = 0.0>, tiers = {ssd_capacity = 1.0e+12 : f64}>} {}

// -----

// expected-error @+1 {{node group of 'a' tiers entry 'nvme_bandwidth' must be a float in (0, }}
module attributes {x = #dist.node_group<kind = "a", nodes = 1, devices = 2, link = #dist.link<"l", bandwidth = 1.0, latency = 0.0>, tiers = {nvme_capacity = 1.0e+12 : f64, nvme_bandwidth = -3.0 : f64}>} {}

// -----

// expected-error @+1 {{node group of 'a' tiers entry 'hdd_capacity' must be a float in (0, }}
module attributes {x = #dist.node_group<kind = "a", nodes = 1, devices = 2, link = #dist.link<"l", bandwidth = 1.0, latency = 0.0>, tiers = {hdd_capacity = 1.0e+30 : f64, hdd_bandwidth = 1.0e+9 : f64}>} {}

// -----

// expected-error @+1 {{node group of 'a' tiers gives part of tier 'host'; give host_capacity, host_bandwidth and host_memory_bandwidth together}}
module attributes {x = #dist.node_group<kind = "a", nodes = 1, devices = 2, link = #dist.link<"l", bandwidth = 1.0, latency = 0.0>, tiers = {host_capacity = 1.0e+12 : f64, host_bandwidth = 1.2e+10 : f64}>} {}

// -----

// expected-error @+1 {{node group of 'a' tiers gives part of tier 'nvme'; give nvme_capacity and nvme_bandwidth together}}
module attributes {x = #dist.node_group<kind = "a", nodes = 1, devices = 2, link = #dist.link<"l", bandwidth = 1.0, latency = 0.0>, tiers = {nvme_capacity = 1.0e+12 : f64}>} {}

// -----

// expected-error @+1 {{plan offloads "opt" in an inference plan; offload moves training state off the device, drop it}}
module attributes {x = #dist.plan<dp = 1, tp = 1, pp = 1, mbs = 1, microbatches = 1, global_batch = 1, schedule = "1f1b", stages = [0], mode = infer, offload = "opt">} {}

// -----

// expected-error @+2 {{offload 'params': params without opt}}
// expected-error @+1 {{failed to parse Dist_PlanAttr parameter 'offload'}}
module attributes {x = #dist.plan<dp = 1, tp = 1, pp = 1, mbs = 1, microbatches = 1, global_batch = 1, schedule = "1f1b", stages = [0], offload = "params">} {}

// -----

// expected-error @+1 {{mesh needs at least one axis}}
module attributes {x = #dist.mesh<shape = [], devices = []>} {}

// -----

// expected-error @+1 {{mesh axes must have at least one device, got 0}}
module attributes {x = #dist.mesh<shape = [0], devices = []>} {}

// -----

// expected-error @+1 {{mesh of shape with 4 positions lists 3 devices}}
module attributes {x = #dist.mesh<shape = [2, 2], devices = [0, 1, 2]>} {}

// -----

// expected-error @+1 {{mesh of shape with more positions than int64 holds}}
module attributes {x = #dist.mesh<shape = [4294967296, 4294967296], devices = [0]>} {}

// -----

// expected-error @+1 {{mesh device numbers must be non-negative, got -2}}
module attributes {x = #dist.mesh<shape = [2], devices = [0, -2]>} {}

// -----

// expected-error @+1 {{mesh lists device 1 twice}}
module attributes {x = #dist.mesh<shape = [2], devices = [1, 1]>} {}

// -----

// expected-error @+1 {{plan dp must be in [1, 16777216], got 0}}
module attributes {x = #dist.plan<dp = 0, tp = 1, pp = 1, mbs = 1, microbatches = 1, global_batch = 1, schedule = "1f1b", stages = [0]>} {}

// -----

// expected-error @+1 {{plan tp must be in [1, 16777216], got 33554432}}
module attributes {x = #dist.plan<dp = 1, tp = 33554432, pp = 1, mbs = 1, microbatches = 1, global_batch = 1, schedule = "1f1b", stages = [0]>} {}

// -----

// expected-error @+1 {{plan zero must be a ZeRO stage 0-3, got 4}}
module attributes {x = #dist.plan<dp = 1, tp = 1, pp = 1, mbs = 1, microbatches = 1, global_batch = 1, schedule = "1f1b", stages = [0], zero = 4>} {}

// -----

// expected-error @+1 {{plan has chunks = 2 with schedule "1f1b"; only "interleaved" (and the V-shaped schedules, with 2) runs several chunks per stage}}
module attributes {x = #dist.plan<dp = 1, tp = 1, pp = 1, mbs = 1, microbatches = 1, global_batch = 1, schedule = "1f1b", stages = [0, 1], chunks = 2>} {}

// -----

// expected-error @+1 {{plan stages must list the first layer of each of the pp * chunks = 2 virtual stages, got 1}}
module attributes {x = #dist.plan<dp = 1, tp = 1, pp = 2, mbs = 1, microbatches = 1, global_batch = 1, schedule = "1f1b", stages = [0]>} {}

// -----

// expected-error @+1 {{plan stages must start at layer 0 and not decrease, got [0, 5, 3]}}
module attributes {x = #dist.plan<dp = 1, tp = 1, pp = 3, mbs = 1, microbatches = 1, global_batch = 1, schedule = "1f1b", stages = [0, 5, 3]>} {}

// -----

// expected-error @+1 {{plan replicas must give one count per pipeline stage (pp = 2), got 1}}
module attributes {x = #dist.plan<dp = 1, tp = 1, pp = 2, mbs = 1, microbatches = 1, global_batch = 1, schedule = "1f1b", stages = [0, 1], replicas = [3]>} {}

// -----

// expected-error @+1 {{plan replicas need dp = 1, chunks = 1 and cp = 1, got dp = 2, chunks = 1 and cp = 1}}
module attributes {x = #dist.plan<dp = 2, tp = 1, pp = 2, mbs = 1, microbatches = 1, global_batch = 1, schedule = "1f1b", stages = [0, 1], replicas = [3, 1]>} {}

// -----

// expected-error @+1 {{plan replica counts must be in [1, 16777216], got 0}}
module attributes {x = #dist.plan<dp = 1, tp = 1, pp = 2, mbs = 1, microbatches = 1, global_batch = 1, schedule = "1f1b", stages = [0, 1], replicas = [3, 0]>} {}

// -----

// expected-error @+1 {{plan global_batch 7 is not mbs * microbatches * dp = 8}}
module attributes {x = #dist.plan<dp = 2, tp = 1, pp = 1, mbs = 2, microbatches = 2, global_batch = 7, schedule = "1f1b", stages = [0]>} {}

// -----

// expected-error @+2 {{unknown schedule "2f2b"; expected one of gpipe, 1f1b, interleaved, zb-h1, zb-h2, zb-v, v-half, v-min, dualpipe-v, pipedream, pipedream-2bw or pipemare}}
// expected-error @+1 {{failed to parse Dist_PlanAttr parameter 'schedule'}}
module attributes {x = #dist.plan<dp = 1, tp = 1, pp = 1, mbs = 1, microbatches = 1, global_batch = 1, schedule = "2f2b", stages = [0]>} {}

// -----

// expected-error @+2 {{unknown recompute 'most'; expected none, selective or full}}
// expected-error @+1 {{failed to parse Dist_PlanAttr parameter 'recompute'}}
module attributes {x = #dist.plan<dp = 1, tp = 1, pp = 1, mbs = 1, microbatches = 1, global_batch = 1, schedule = "1f1b", stages = [0], recompute = most>} {}

// -----

// expected-error @+2 {{unknown element type 'fp4'; expected fp32, tf32, fp16, bf16 or fp8}}
// expected-error @+1 {{failed to parse Dist_PlanAttr parameter 'dtype'}}
module attributes {x = #dist.plan<dp = 1, tp = 1, pp = 1, mbs = 1, microbatches = 1, global_batch = 1, schedule = "1f1b", stages = [0], dtype = fp4>} {}

// -----

// expected-error @+2 {{unknown optimizer 'lamb'; expected adam, momentum or sgd}}
// expected-error @+1 {{failed to parse Dist_PlanAttr parameter 'optimizer'}}
module attributes {x = #dist.plan<dp = 1, tp = 1, pp = 1, mbs = 1, microbatches = 1, global_batch = 1, schedule = "1f1b", stages = [0], optimizer = lamb>} {}

// -----

// expected-error @+2 {{unknown plan mode 'serve'; expected train or infer}}
// expected-error @+1 {{failed to parse Dist_PlanAttr parameter 'mode'}}
module attributes {x = #dist.plan<dp = 1, tp = 1, pp = 1, mbs = 1, microbatches = 1, global_batch = 1, schedule = "1f1b", stages = [0], mode = serve>} {}

// -----

// expected-error @+2 {{unknown objective 'speed'; expected throughput or latency}}
// expected-error @+1 {{failed to parse Dist_PlanAttr parameter 'objective'}}
module attributes {x = #dist.plan<dp = 1, tp = 1, pp = 1, mbs = 1, microbatches = 1, global_batch = 1, schedule = "1f1b", stages = [0], mode = infer, objective = speed>} {}

// -----

// expected-error @+2 {{expected 'true' or 'false'}}
// expected-error @+1 {{failed to parse Dist_PlanAttr parameter 'overlap_p2p'}}
module attributes {x = #dist.plan<dp = 1, tp = 1, pp = 1, mbs = 1, microbatches = 1, global_batch = 1, schedule = "1f1b", stages = [0], overlap_p2p = yes>} {}

// -----

// expected-error @+1 {{'dist.cluster' must be a #dist.cluster, got "dgx"}}
module attributes {dist.cluster = "dgx"} {}

// -----

// expected-error @+1 {{'dist.plan' must be a #dist.plan, got {dp = 2 : i64}}}
module attributes {dist.plan = {dp = 2 : i64}} {}

// -----

// expected-error @+1 {{'dist.plan' needs 2 devices but 'dist.cluster' 'c' has 1}}
module attributes {dist.cluster = #dist.cluster<"c", kinds = [#dist.device_kind<"a", memory = 1, bandwidth = 1.0, flops = {fp32 = 1.0 : f64}>], nodes = [#dist.node_group<kind = "a", nodes = 1, devices = 1, link = #dist.link<"l", bandwidth = 1.0, latency = 0.0>>]>, dist.plan = #dist.plan<dp = 1, tp = 1, pp = 2, mbs = 1, microbatches = 1, global_batch = 1, schedule = "1f1b", stages = [0, 1]>} {}

// -----

// expected-error @+1 {{'dist.plan' belongs on the module, not on an op; the planner writes it on builtin.module}}
func.func @f() attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 2, mbs = 1, microbatches = 1, global_batch = 1, schedule = "1f1b", stages = [0, 1]>} {
  return
}

// -----

module attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 2, mbs = 1, microbatches = 1, global_batch = 1, schedule = "1f1b", stages = [0, 1]>} {
  func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{'dist.virtual_stage' is 2 but the module's plan has 2 virtual stages (pp = 2, chunks = 1)}}
    %a = graph.unary relu %x {dist.virtual_stage = 2 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    return %a : tensor<4xf32>
  }
}

// -----

// A plan's stage list and the ops' stages must agree: layer 1 starts
// virtual stage 1.
module attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 2, mbs = 1, microbatches = 1, global_batch = 1, schedule = "1f1b", stages = [0, 1]>} {
  func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
    %a = graph.unary relu %x {dist.layer = 0 : i64, dist.virtual_stage = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    // expected-error @+1 {{'dist.virtual_stage' is 0 but the module's plan puts layer 1 ('dist.layer') in virtual stage 1 (stages = [0, 1]); plan the module again (dist-set-plan or dist-search-plan) instead of editing either}}
    %b = graph.unary relu %a {dist.layer = 1 : i64, dist.virtual_stage = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    return %b : tensor<4xf32>
  }
}

// -----

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dist.virtual_stage' must be a non-negative i64 virtual stage index, got "first"}}
  %a = graph.unary relu %x {dist.virtual_stage = "first"} : (tensor<4xf32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}

// -----

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dist.layer' must be a non-negative i64 layer index, got -1}}
  %a = graph.unary relu %x {dist.layer = -1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}

// -----

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dist.tp' must be a tensor-parallel role #dist.tp<column|row|split|replicated>, got "column"}}
  %a = graph.unary relu %x {dist.tp = "column"} : (tensor<4xf32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}

// -----

// expected-error @+1 {{'dist.data_parallel' is a unit attribute of a func.func (set by dist-data-parallel)}}
module attributes {dist.data_parallel} {}

// -----

// expected-error @+1 {{'dist.zero' is {stage = S, replicas = N} on a func.func (ZeRO stage 1-3 over N >= 2 data-parallel replicas; set by dist-data-parallel), got {replicas = 1 : i64, stage = 1 : i64}}}
func.func @f() attributes {dist.zero = {stage = 1 : i64, replicas = 1 : i64}} {
  return
}

// -----

// expected-error @+1 {{'dist.zero' is {stage = S, replicas = N} on a func.func}}
module attributes {dist.zero = {stage = 1 : i64, replicas = 2 : i64}} {}

// -----

// A ZeRO block of an 8x16 state over 2 ranks holds 64 elements, not 60.
func.func @f() {
  // expected-error @+1 {{'dist.zero_shard' is {shape = array<i64: ...>, group = array<i64: ...>} on an op whose 1-D result is one of the group's equal blocks of the flattened tensor of that shape (ZeRO; set by dist-data-parallel and dist-partition), got {group = array<i64: 0, 1>, shape = array<i64: 8, 16>}}}
  %m = graph.state "w1.exp_avg" {dist.zero_shard = {shape = array<i64: 8, 16>, group = array<i64: 0, 1>}} : tensor<60xf32>
  return
}

// -----

// A ZeRO block of a tensor-parallel part: the part's shape (8x7) must fit
// the tensor-parallel split, as a part of its own would.
func.func @f() {
  // expected-error @+1 {{'dist.tp_shard' axis [1, 2, 2, 1] does not fit 'tensor<8x7xf32>'}}
  %w = graph.weight "w" {dist.tp_shard = array<i64: 1, 2, 2>, dist.zero_shard = {shape = array<i64: 8, 7>, group = array<i64: 0, 2>}} : tensor<28xf32>
  return
}

// -----

// The replicas that hold a part's blocks are one of the groups that hold
// blocks alike.
func.func @f() {
  // expected-error @+1 {{'dist.groups' does not list the op's own group}}
  %w = graph.weight "w" {dist.groups = [array<i64: 0, 1>, array<i64: 2, 3>], dist.tp_shard = array<i64: 1, 1, 2>, dist.zero_shard = {shape = array<i64: 8, 8>, group = array<i64: 0, 2>}} : tensor<32xf32>
  return
}

// -----

// expected-error @+1 {{'dist.zero_shard' is {shape = array<i64: ...>, group = array<i64: ...>}}}
func.func @f() attributes {dist.zero_shard = {shape = array<i64: 4>, group = array<i64: 0>}} {
  return
}

// -----

// expected-error @+1 {{'dist.batch_shard' marks function arguments; put it in the argument's attribute dictionary}}
func.func @f() attributes {dist.batch_shard} {
  return
}

// -----

// expected-error @+1 {{'dist.batch_shard' on argument #0 must be a unit attribute}}
func.func @f(%x: tensor<4xf32> {dist.batch_shard = 1 : i64}) {
  return
}

// -----

// expected-error @+1 {{'dist.accumulates' marks function arguments; put it in the argument's attribute dictionary}}
func.func @f() attributes {dist.accumulates = 0 : i64} {
  return
}

// -----

// expected-error @+1 {{'dist.accumulates' on argument #1 must be the i64 index of a result of the function with the argument's type, got 1 : i64}}
func.func @f(%x: tensor<4xf32>, %s: tensor<4xf32> {dist.accumulates = 1 : i64}) -> tensor<4xf32> {
  %r = graph.binary add %s, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// expected-error @+1 {{'dist.accumulates' on argument #1 must be the i64 index of a result of the function with the argument's type, got 0 : i64}}
func.func @f(%x: tensor<4xf32>, %s: tensor<2xf32> {dist.accumulates = 0 : i64}) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// The sum is read by something else than the op that makes the result.
// expected-error @+1 {{argument #1 ('dist.accumulates' = 0) must be read once, by the op that computes result #0}}
func.func @f(%x: tensor<4xf32>, %s: tensor<4xf32> {dist.accumulates = 0 : i64}) -> (tensor<4xf32>, tensor<4xf32>) {
  %r = graph.binary add %s, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %t = graph.binary mul %s, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %r, %t : tensor<4xf32>, tensor<4xf32>
}

// -----

// expected-error @+1 {{argument #1 ('dist.accumulates' = 0) must be read once, by the op that computes result #0}}
func.func @f(%x: tensor<4xf32>, %s: tensor<4xf32> {dist.accumulates = 0 : i64}) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{unknown argument attribute 'dist.shard' of the dist dialect on argument #0}}
func.func @f(%x: tensor<4xf32> {dist.shard}) {
  return
}

// -----

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{unknown attribute 'dist.stage' of the dist dialect}}
  %a = graph.unary relu %x {dist.stage = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}

// -----

// expected-error @+1 {{plan has chunks = 1 with schedule "zb-v"; a V-shaped schedule runs two chunks per stage}}
module attributes {x = #dist.plan<dp = 1, tp = 1, pp = 2, mbs = 1, microbatches = 4, global_batch = 4, schedule = "zb-v", stages = [0, 1]>} {}

// -----

// expected-error @+1 {{plan ep = 3 must divide dp = 4 (the expert-parallel group is ep of the dp replicas)}}
module attributes {x = #dist.plan<dp = 4, tp = 1, pp = 1, mbs = 1, microbatches = 1, global_batch = 4, schedule = "1f1b", ep = 3, stages = [0]>} {}

// -----

// expected-error @+1 {{plan cp must be in [1, 16777216], got 0}}
module attributes {x = #dist.plan<dp = 1, tp = 1, pp = 1, mbs = 1, microbatches = 1, global_batch = 1, schedule = "1f1b", cp = 0, stages = [0]>} {}

// -----

// expected-error @+1 {{plan expert_imbalance must be in [1, 1000] (the busiest expert rank's tokens over the mean), got 5.000000e-01}}
module attributes {x = #dist.plan<dp = 1, tp = 1, pp = 1, mbs = 1, microbatches = 1, global_batch = 1, schedule = "1f1b", expert_imbalance = 0.5, stages = [0]>} {}

// -----

// expected-error @+1 {{plan pipemare_warmup must be in [0, 16777216] and pipemare_decay in [0, 1], got 0 and 1.5}}
module attributes {x = #dist.plan<dp = 1, tp = 1, pp = 2, mbs = 1, microbatches = 2, global_batch = 2, schedule = "pipemare", pipemare_decay = 1.5, stages = [0, 1]>} {}

// -----

// expected-error @+1 {{plan replicas need dp = 1, chunks = 1 and cp = 1, got dp = 1, chunks = 1 and cp = 2}}
module attributes {x = #dist.plan<dp = 1, tp = 1, pp = 2, mbs = 1, microbatches = 3, global_batch = 3, schedule = "1f1b", cp = 2, stages = [0, 1], replicas = [3, 1]>} {}

// -----

func.func @f() {
  // expected-error @+1 {{'dist.tp_shard' is [dim, blocks, parts], or [dim, blocks, parts, stride] for each of one or two axes, on a graph.weight, graph.state or dropout (written by dist-tensor-parallel and dist-expert-parallel), got array<i64: 1, 2>}}
  %w = graph.weight "w" {dist.tp_shard = array<i64: 1, 2>} : tensor<8x8xf32>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{'dist.tp_shard' axis [1, 3, 2, 1] does not fit 'tensor<8x8xf32>': dim must index the tensor, blocks divide its size there, parts be at least 2 and stride at least 1}}
  %w = graph.weight "w" {dist.tp_shard = array<i64: 1, 3, 2>} : tensor<8x8xf32>
  return
}

// -----

// Axes of [dim, blocks, parts, stride] (an expert-parallel rank's
// tensor-parallel part): one axis's stride must not be 0.
func.func @f() {
  // expected-error @+1 {{'dist.tp_shard' axis [2, 1, 2, 0] does not fit 'tensor<2x8x8xf32>': dim must index the tensor, blocks divide its size there, parts be at least 2 and stride at least 1}}
  %w = graph.weight "w" {dist.tp_shard = array<i64: 0, 1, 2, 2, 2, 1, 2, 0>} : tensor<2x8x8xf32>
  return
}

// -----

// Neither three numbers nor whole axes of four.
func.func @f() {
  // expected-error @+1 {{'dist.tp_shard' is [dim, blocks, parts], or [dim, blocks, parts, stride] for each of one or two axes, on a graph.weight, graph.state or dropout (written by dist-tensor-parallel and dist-expert-parallel), got array<i64: 0, 1, 2, 2, 2>}}
  %w = graph.weight "w" {dist.tp_shard = array<i64: 0, 1, 2, 2, 2>} : tensor<2x8x8xf32>
  return
}

// -----

// Three axes: the runtime reads parts along at most two.
func.func @f() {
  // expected-error @+1 {{'dist.tp_shard' is [dim, blocks, parts], or [dim, blocks, parts, stride] for each of one or two axes}}
  %w = graph.weight "w" {dist.tp_shard = array<i64: 0, 1, 2, 4, 1, 1, 2, 2, 2, 1, 2, 1>} : tensor<2x8x8xf32>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{'dist.tp_shard' splits dimension 1 twice; the two axes must split different dimensions}}
  %w = graph.weight "w" {dist.tp_shard = array<i64: 1, 1, 2, 2, 1, 1, 2, 1>} : tensor<2x8x8xf32>
  return
}

// -----

// Experts by the rank's tensor coordinate (stride 1) and features by it
// too: ranks 0 and 3 would hold the same block, none the others.
func.func @f() {
  // expected-error @+1 {{'dist.tp_shard' axes of 2 parts by stride 1 and 2 parts by stride 1 read overlapping digits of the rank; one axis's stride must be at least the other's stride times its parts}}
  %w = graph.weight "w" {dist.tp_shard = array<i64: 0, 1, 2, 1, 2, 1, 2, 1>} : tensor<2x8x8xf32>
  return
}

// -----

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dist.groups' is a list of device groups ([array<i64: ...>, ...]) on a collective, dist.tp_copy or ZeRO block over an explicit group (written by the partitioner for a program several groups run), got [array<i64: 0, 1>]}}
  %y = dist.all_reduce %x sum over world {dist.groups = [array<i64: 0, 1>]} : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dist.groups' lists a group of 3 device(s), but the op's group has 2; every group runs the op alike}}
  %y = dist.all_reduce %x sum over [0, 1] {dist.groups = [array<i64: 0, 1>, array<i64: 2, 3, 4>]} : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dist.groups' lists device 1 twice; the groups are disjoint sets of device numbers}}
  %y = dist.tp_copy %x over [0, 1] {dist.groups = [array<i64: 0, 1>, array<i64: 1, 2>]} : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dist.groups' does not list the op's own group; the op's group is one of the groups that run it}}
  %y = dist.all_reduce %x sum over [0, 1] {dist.groups = [array<i64: 0, 2>, array<i64: 1, 3>]} : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dist.action' names the schedule action ("F3.0", "OPT", ...) an op of an action list's program carries out (dist-partition writes it), got "F0.0"}}
  %y = graph.unary relu %x {dist.action = "F0.0"} : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

module attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 2, mbs = 1, microbatches = 1, global_batch = 1, schedule = "gpipe", stages = [0, 1]>} {
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> attributes {dist.action_list = 0 : i64} {
  // expected-error @+1 {{'dist.action' names the schedule action ("F3.0", "OPT", ...) an op of an action list's program carries out (dist-partition writes it), got 3 : i64}}
  %y = graph.unary relu %x {dist.action = 3 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
}

// -----

module attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 2, mbs = 1, microbatches = 1, global_batch = 1, schedule = "gpipe", stages = [0, 1]>} {
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> attributes {dist.action_list = 0 : i64} {
  %y = graph.unary relu %x {dist.action = "F0.0"} : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
}

// -----

// An action list index bounds the tables codegen builds: without a plan
// there is no bound (dist-fuzz: 2^32 asked for a 2^32-entry table).
// expected-error @+1 {{'dist.action_list' is 4294967296, the index of one of the action lists of the module's plan, but the module has no 'dist.plan'; run dist-partition on a planned module}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> attributes {dist.action_list = 4294967296 : i64} {
  %y = graph.unary relu %x {dist.action = "F0.0"} : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dist.batch_block' is a unit attribute of a graph.dropout_mask (set by dist-data-parallel and dist-partition), got unit}}
  %y = graph.unary relu %x {dist.batch_block} : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

module {
  func.func private @f() -> ()
  func.func @g() {
    // expected-error @+1 {{'dist.microbatch' must be a non-negative i64 micro-batch index, got -1 : i64}}
    call @f() {dist.microbatch = -1 : i64} : () -> ()
    return
  }
}

// -----

module attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 1, mbs = 1, microbatches = 2, global_batch = 2, schedule = "1f1b", stages = [0]>} {
  func.func private @f() -> ()
  func.func @g() {
    // expected-error @+1 {{'dist.microbatch' is 2 but the module's plan runs 2 micro-batches per step}}
    call @f() {dist.microbatch = 2 : i64} : () -> ()
    return
  }
}

// -----

// expected-error @+1 {{'dist.microbatch' marks the micro-batch of a stage call, a func.call (dist-partition writes it)}}
func.func @h() attributes {dist.microbatch = 0 : i64} {
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{'dist.context_split' is the context-parallel degree (an i64 >= 2) on a dist.all_slice of a function input (set by dist-context-parallel), got 2 : i64}}
  %w = graph.weight "w" {dist.context_split = 2 : i64} : tensor<8x8xf32>
  return
}

// -----

func.func @f(%x: tensor<1x8xi64>) -> tensor<1x4xi64> {
  // expected-error @+1 {{'dist.context_split' is the context-parallel degree (an i64 >= 2) on a dist.all_slice of a function input (set by dist-context-parallel), got 1 : i64}}
  %0 = dist.all_slice %x axis 1 over [0, 1] {dist.context_split = 1 : i64} : tensor<1x8xi64> -> tensor<1x4xi64>
  return %0 : tensor<1x4xi64>
}

// -----

func.func @f(%x: tensor<4x1xf32>) -> tensor<4x1xf32> {
  // expected-error @+1 {{'dist.shift' marks a dist.all_reduce max whose result only shifts values (a unit attribute, set by dist-tensor-parallel), got unit}}
  %0 = dist.all_reduce %x sum over [0, 1] {dist.shift} : tensor<4x1xf32>
  return %0 : tensor<4x1xf32>
}

// -----

func.func @f(%x: tensor<4x1xf32>) -> tensor<4x1xf32> {
  // expected-error @+1 {{'dist.shift' marks a dist.all_reduce max whose result only shifts values (a unit attribute, set by dist-tensor-parallel), got 1 : i64}}
  %0 = dist.all_reduce %x max over [0, 1] {dist.shift = 1 : i64} : tensor<4x1xf32>
  return %0 : tensor<4x1xf32>
}
