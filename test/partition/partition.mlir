// RUN: dist-opt %s --dist-partition | FileCheck %s --enable-var-scope
// RUN: dist-opt %s --dist-partition | dist-opt | FileCheck %s --enable-var-scope

// The forward stream of a two-stage plan with two micro-batches: list 0
// slices the input, runs stage 0 on each slice and sends the boundary value
// to list 1; list 1 receives, runs stage 1 and joins the results. The
// function argument stage 1 also reads is sliced there. Tags are boundary x
// width + value.
// CHECK-LABEL: func.func @main_rank0
// CHECK-SAME: (%[[X:.*]]: tensor<4x4xf32> {graph.name = "x"}) attributes {dist.action_list = 0 : i64} {
// Each op carries the schedule action it is part of (the executor's trace
// times actions by it).
// CHECK-NEXT: %[[S:.*]]:2 = dist.microbatch_split %[[X]] axis 0 {dist.action = "F0.0"} : tensor<4x4xf32> -> tensor<2x4xf32>, tensor<2x4xf32>
// CHECK-NEXT: %[[A0:.*]] = call @main_stage0(%[[S]]#0) {dist.action = "F0.0"}
// CHECK-NEXT: dist.send %[[A0]] to list 1 tag 0 {dist.action = "sendA0.0>1"} : tensor<2x4xf32>
// CHECK-NEXT: %[[A1:.*]] = call @main_stage0(%[[S]]#1) {dist.action = "F1.0"}
// CHECK-NEXT: dist.send %[[A1]] to list 1 tag 0 {dist.action = "sendA1.0>1"} : tensor<2x4xf32>
// CHECK-NEXT: return
// CHECK-LABEL: func.func @main_rank1
// CHECK-SAME: (%[[X:.*]]: tensor<4x4xf32> {graph.name = "x"}) -> (tensor<4x4xf32> {graph.name = "y"}) attributes {dist.action_list = 1 : i64} {
// CHECK-NEXT: %[[R0:.*]] = dist.recv from list 0 tag 0 {dist.action = "recvA0.0>0"} : tensor<2x4xf32>
// CHECK-NEXT: %[[S:.*]]:2 = dist.microbatch_split %[[X]] axis 0
// CHECK-NEXT: %[[B0:.*]] = call @main_stage1(%[[R0]], %[[S]]#0)
// CHECK-NEXT: %[[R1:.*]] = dist.recv from list 0 tag 0 {{.*}}: tensor<2x4xf32>
// CHECK-NEXT: %[[B1:.*]] = call @main_stage1(%[[R1]], %[[S]]#1)
// CHECK-NEXT: %[[Y:.*]] = dist.microbatch_merge %[[B0]], %[[B1]] axis 0 : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<4x4xf32>
// CHECK-NEXT: return %[[Y]]
// CHECK: dist.schedule for @main kind "forward" microbatches 2
module attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 2, mbs = 2, microbatches = 2, global_batch = 4, schedule = "1f1b", stages = [0, 1]>} {
  func.func @main(%x: tensor<2x4xf32> {graph.name = "x"}) -> (tensor<2x4xf32> {graph.name = "y"}) {
    %a = graph.unary relu %x {dist.virtual_stage = 0 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %b = graph.binary add %a, %x {dist.virtual_stage = 1 : i64} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    return %b : tensor<2x4xf32>
  }
}
