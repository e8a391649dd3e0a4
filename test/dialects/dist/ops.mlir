// RUN: dist-opt %s | FileCheck %s
// RUN: dist-opt %s | dist-opt | FileCheck %s
// RUN: dist-opt -mlir-print-op-generic %s | dist-opt | FileCheck %s

// Cluster and plan round-trip exactly (floats print in their shortest exact
// form); parameters left at their default are not printed.
// CHECK: module attributes {dist.cluster = #dist.cluster<"mixed", kinds = [#dist.device_kind<"a100", memory = 85899345920, bandwidth = 2.{{0+}}e+12, flops = {bf16 = 3.120000e+14 : f64}, efficiency = {matmul = 0.69999999999999996 : f64}, launch_overhead = 4.{{0+}}e-06>, #dist.device_kind<"v100", memory = 34359738368, bandwidth = 9.{{0+}}e+11, flops = {fp16 = 1.250000e+14 : f64}>]
// CHECK-SAME: nodes = [#dist.node_group<kind = "a100", nodes = 1, devices = 8, link = <"nvlink", bandwidth = 3.{{0+}}e+11, latency = 2.{{0+}}e-06, collective_efficiency = 7.7{{0+}}e-01>>, #dist.node_group<kind = "v100", nodes = 1, devices = 8, link = <"nvlink", bandwidth = 1.5{{0+}}e+11, latency = 2.{{0+}}e-06>>]
// CHECK-SAME: network = <"infiniband", bandwidth = 2.5{{0+}}e+10, latency = 5.{{0+}}e-06>, description = "two nodes of different GPUs", profile = "prof.json">
// CHECK-SAME: dist.plan = #dist.plan<dp = 2, tp = 4, pp = 2, mbs = 1, microbatches = 4, global_batch = 8, schedule = "interleaved", chunks = 2, recompute = selective, zero = 1, stages = [0, 3, 6, 9], dtype = fp8, optimizer = momentum, overlap_p2p = false>
module attributes {dist.cluster = #dist.cluster<"mixed",
    kinds = [#dist.device_kind<"a100", memory = 85899345920, bandwidth = 2.0e+12,
                               flops = {bf16 = 3.12e+14 : f64},
                               efficiency = {matmul = 0.7 : f64},
                               launch_overhead = 4.0e-06>,
             #dist.device_kind<"v100", memory = 34359738368, bandwidth = 9.0e+11,
                               flops = {fp16 = 1.25e+14 : f64}>],
    nodes = [#dist.node_group<kind = "a100", nodes = 1, devices = 8,
               link = #dist.link<"nvlink", bandwidth = 3.0e+11, latency = 2.0e-06,
                                 collective_efficiency = 0.77>>,
             #dist.node_group<kind = "v100", nodes = 1, devices = 8,
               link = #dist.link<"nvlink", bandwidth = 1.5e+11, latency = 2.0e-06>>],
    network = #dist.link<"infiniband", bandwidth = 2.5e+10, latency = 5.0e-06>,
    description = "two nodes of different GPUs", profile = "prof.json">,
  dist.plan = #dist.plan<dp = 2, tp = 4, pp = 2, mbs = 1, microbatches = 4,
                         global_batch = 8, schedule = "interleaved", chunks = 2,
                         recompute = selective, zero = 1, stages = [0, 3, 6, 9],
                         dtype = fp8, optimizer = momentum,
                         overlap_p2p = false>} {

// CHECK-LABEL: func.func @annotations
// CHECK: graph.unary relu %{{.*}} {dist.layer = 3 : i64, dist.tp = #dist.tp<column>, dist.virtual_stage = 1 : i64}
// CHECK: func.func @sharded(%{{.*}}: tensor<4xf32> {dist.batch_shard}) attributes {dist.data_parallel}
// CHECK: func.func @zero() attributes {dist.data_parallel, dist.zero = {replicas = 2 : i64, stage = 1 : i64}}
func.func @annotations(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = graph.unary relu %x {dist.layer = 3 : i64, dist.virtual_stage = 1 : i64, dist.tp = #dist.tp<column>} : (tensor<4xf32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}
func.func @sharded(%x: tensor<4xf32> {dist.batch_shard}) attributes {dist.data_parallel} {
  return
}
func.func @zero() attributes {dist.data_parallel, dist.zero = {stage = 1 : i64, replicas = 2 : i64}} {
  return
}
// CHECK: func.func @accumulating(%{{.*}}: tensor<4xf32>, %{{.*}}: tensor<4xf32> {dist.accumulates = 0 : i64}) -> tensor<4xf32>
func.func @accumulating(%x: tensor<4xf32>, %s: tensor<4xf32> {dist.accumulates = 0 : i64}) -> tensor<4xf32> {
  %r = graph.binary add %s, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// CHECK-LABEL: func.func @stages
func.func @stages(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  // CHECK: %[[S0:.*]] = dist.stage 0 on #dist.mesh<shape = [2], devices = [0, 1]>(%{{.*}}) : (tensor<4x16xf32>) -> tensor<4x16xf32> {
  // CHECK: ^bb0(%[[A:.*]]: tensor<4x16xf32>):
  // CHECK:   dist.yield %[[A]] : tensor<4x16xf32>
  %0 = dist.stage 0 on #dist.mesh<shape = [2], devices = [0, 1]> (%x) : (tensor<4x16xf32>) -> tensor<4x16xf32> {
  ^bb0(%a: tensor<4x16xf32>):
    dist.yield %a : tensor<4x16xf32>
  }
  // CHECK: dist.stage 1 on #dist.mesh<shape = [1, 2], devices = [8, 9]>(%[[S0]])
  %1 = dist.stage 1 on #dist.mesh<shape = [1, 2], devices = [8, 9]> (%0) : (tensor<4x16xf32>) -> tensor<4x16xf32> {
  ^bb0(%a: tensor<4x16xf32>):
    dist.yield %a : tensor<4x16xf32>
  }
  return %1 : tensor<4x16xf32>
}

// CHECK-LABEL: func.func @p2p
func.func @p2p(%x: tensor<2x8xbf16>) -> tensor<2x8xbf16> {
  // CHECK: dist.send %{{.*}} to 4 tag 7 : tensor<2x8xbf16>
  dist.send %x to 4 tag 7 : tensor<2x8xbf16>
  // CHECK: %[[R:.*]] = dist.recv from 3 tag 7 : tensor<2x8xbf16>
  %r = dist.recv from 3 tag 7 : tensor<2x8xbf16>
  return %r : tensor<2x8xbf16>
}

// CHECK-LABEL: func.func @collectives
func.func @collectives(%g: tensor<8x4xf32>) {
  // CHECK: dist.all_reduce %{{.*}} sum over [0, 1, 2, 3] : tensor<8x4xf32>
  %0 = dist.all_reduce %g sum over [0, 1, 2, 3] : tensor<8x4xf32>
  // CHECK: dist.all_reduce %{{.*}} mean over world : tensor<8x4xf32>
  %w = dist.all_reduce %g mean over world : tensor<8x4xf32>
  // CHECK: dist.tp_copy %{{.*}} over [0, 1] : tensor<8x4xf32>
  %c = dist.tp_copy %g over [0, 1] : tensor<8x4xf32>
  // CHECK: dist.all_gather %{{.*}} axis 0 over [0, 1] : tensor<8x4xf32> -> tensor<16x4xf32>
  %1 = dist.all_gather %g axis 0 over [0, 1] : tensor<8x4xf32> -> tensor<16x4xf32>
  // CHECK: dist.reduce_scatter %{{.*}} mean axis 0 over [0, 1] : tensor<8x4xf32> -> tensor<4x4xf32>
  %2 = dist.reduce_scatter %g mean axis 0 over [0, 1] : tensor<8x4xf32> -> tensor<4x4xf32>
  // CHECK: dist.all_slice %{{.*}} axis 0 over [2, 3] : tensor<8x4xf32> -> tensor<4x4xf32>
  %s = dist.all_slice %g axis 0 over [2, 3] : tensor<8x4xf32> -> tensor<4x4xf32>
  // CHECK: dist.all_to_all %{{.*}} split 0 concat 1 over [0, 1] : tensor<8x4xf32> -> tensor<4x8xf32>
  %3 = dist.all_to_all %g split 0 concat 1 over [0, 1] : tensor<8x4xf32> -> tensor<4x8xf32>
  // CHECK: dist.all_to_all %{{.*}} split 1 concat 1 over [0, 1] : tensor<8x4xf32> -> tensor<8x4xf32>
  %4 = dist.all_to_all %g split 1 concat 1 over [0, 1] : tensor<8x4xf32> -> tensor<8x4xf32>
  // CHECK: dist.broadcast %{{.*}} root 2 over [0, 2] : tensor<8x4xf32>
  %5 = dist.broadcast %g root 2 over [0, 2] : tensor<8x4xf32>
  return
}

// Context parallelism's load-balanced split: the whole side's axis in
// 2 x group-size chunks, each device's part its chunks i and 2n-1-i.
// CHECK-LABEL: func.func @balanced_collectives
func.func @balanced_collectives(%x: tensor<1x8x4xf32>, %p: tensor<1x4x4xf32>) {
  // CHECK: dist.all_slice %{{.*}} axis 1 over [0, 1] {dist.balanced} : tensor<1x8x4xf32> -> tensor<1x4x4xf32>
  %0 = dist.all_slice %x axis 1 over [0, 1] {dist.balanced} : tensor<1x8x4xf32> -> tensor<1x4x4xf32>
  // CHECK: dist.all_gather %{{.*}} axis 1 over [0, 1] {dist.balanced} : tensor<1x4x4xf32> -> tensor<1x8x4xf32>
  %1 = dist.all_gather %p axis 1 over [0, 1] {dist.balanced} : tensor<1x4x4xf32> -> tensor<1x8x4xf32>
  // CHECK: dist.reduce_scatter %{{.*}} sum axis 1 over [0, 1] {dist.balanced} : tensor<1x8x4xf32> -> tensor<1x4x4xf32>
  %2 = dist.reduce_scatter %x sum axis 1 over [0, 1] {dist.balanced} : tensor<1x8x4xf32> -> tensor<1x4x4xf32>
  return
}

// Ring attention (context parallelism) and its backward, with and without
// a mask shared by the heads.
// CHECK-LABEL: func.func @ring_attention
func.func @ring_attention(%q: tensor<1x4x8x16xf32>, %k: tensor<1x4x8x16xf32>, %v: tensor<1x4x8x12xf32>, %m: tensor<1x1x8x16xf32>, %do: tensor<1x4x8x12xf32>) {
  // CHECK: %[[O:.*]], %[[L:.*]] = dist.ring_attention %{{.*}}, %{{.*}}, %{{.*}} mask %{{.*}} scale 2.500000e-01 over [0, 1] : tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x12xf32>, tensor<1x1x8x16xf32> -> tensor<1x4x8x12xf32>, tensor<1x4x8xf32>
  %o, %lse = dist.ring_attention %q, %k, %v mask %m scale 0.25 over [0, 1] : tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x12xf32>, tensor<1x1x8x16xf32> -> tensor<1x4x8x12xf32>, tensor<1x4x8xf32>
  // CHECK: dist.ring_attention %{{.*}}, %{{.*}}, %{{.*}} scale 1.000000e+00 over [2, 3] : tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x12xf32> -> tensor<1x4x8x12xf32>, tensor<1x4x8xf32>
  %o2, %lse2 = dist.ring_attention %q, %k, %v scale 1.0 over [2, 3] : tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x12xf32> -> tensor<1x4x8x12xf32>, tensor<1x4x8xf32>
  // CHECK: dist.ring_attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %[[O]], %[[L]], %{{.*}} mask %{{.*}} scale 2.500000e-01 over [0, 1]
  %dq, %dk, %dv = dist.ring_attention_grad %q, %k, %v, %o, %lse, %do mask %m scale 0.25 over [0, 1] : tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x12xf32>, tensor<1x4x8x12xf32>, tensor<1x4x8xf32>, tensor<1x4x8x12xf32>, tensor<1x1x8x16xf32> -> tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x12xf32>
  // CHECK: %[[BO:.*]], %[[BL:.*]] = dist.ring_attention %{{.*}}, %{{.*}}, %{{.*}} mask %{{.*}} scale 2.500000e-01 over [0, 1] {dist.balanced} :
  %bo, %bl = dist.ring_attention %q, %k, %v mask %m scale 0.25 over [0, 1] {dist.balanced} : tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x12xf32>, tensor<1x1x8x16xf32> -> tensor<1x4x8x12xf32>, tensor<1x4x8xf32>
  // CHECK: dist.ring_attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %[[BO]], %[[BL]], %{{.*}} mask %{{.*}} scale 2.500000e-01 over [0, 1] {dist.balanced} :
  %bq, %bk, %bv = dist.ring_attention_grad %q, %k, %v, %bo, %bl, %do mask %m scale 0.25 over [0, 1] {dist.balanced} : tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x12xf32>, tensor<1x4x8x12xf32>, tensor<1x4x8xf32>, tensor<1x4x8x12xf32>, tensor<1x1x8x16xf32> -> tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x12xf32>
  return
}

// CHECK-LABEL: func.func @microbatches
func.func @microbatches(%x: tensor<8x3xf32>) -> tensor<8x3xf32> {
  // CHECK: %[[M:.*]]:4 = dist.microbatch_split %{{.*}} axis 0 : tensor<8x3xf32> -> tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
  %m:4 = dist.microbatch_split %x axis 0 : tensor<8x3xf32> -> tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
  // CHECK: dist.microbatch_merge %[[M]]#0, %[[M]]#1, %[[M]]#2, %[[M]]#3 axis 0
  %y = dist.microbatch_merge %m#0, %m#1, %m#2, %m#3 axis 0 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32> -> tensor<8x3xf32>
  return %y : tensor<8x3xf32>
}
}
