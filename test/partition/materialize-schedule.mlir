// RUN: dist-opt %s -split-input-file --dist-materialize-schedule | FileCheck %s --enable-var-scope
// RUN: dist-opt %s -split-input-file --dist-materialize-schedule | dist-opt -split-input-file --dist-verify-schedule | dist-opt -split-input-file | FileCheck %s --check-prefix=ROUND
// Each written action's location says where it is in the schedule (an error
// on it names that, not the function's line).
// RUN: dist-opt %s -split-input-file --dist-materialize-schedule --mlir-print-debuginfo | FileCheck %s --check-prefix=LOC
// LOC: dist.forward @main_stage0 microbatch 0 loc(#[[F:loc[0-9]+]])
// LOC-DAG: #[[NAME:loc[0-9]+]] = loc("schedule of @main, list 0, action 0 'F0.0'")
// LOC-DAG: #[[F]] = loc(fused<"schedule">[#[[NAME]], #{{loc[0-9]*}}])

// 1F1B on pp = 4 with 8 micro-batches (DAPPLE / PipeDream-Flush): rank r
// runs pp - r forwards before its first backward, then alternates one
// backward and one forward, then drains the backwards. The first rank only
// sends activations and receives gradients; the last only receives
// activations and sends gradients, running each micro-batch's backward right
// after its forward. The planned function is outlined first (the schedule
// calls stage functions).
// CHECK-LABEL: func.func @main
// CHECK: call @main_stage0
// CHECK: call @main_stage3
// CHECK: func.func private @main_stage0({{.*}}) -> tensor<1x4xf32> attributes {dist.virtual_stage = 0 : i64}
// CHECK: dist.schedule for @main kind "1f1b" microbatches 8 {
// CHECK-NEXT: dist.actions 0 on #dist.mesh<shape = [1, 1], devices = [0]> {
// CHECK-NEXT: dist.forward @main_stage0 microbatch 0
// CHECK-NEXT: dist.send_activation microbatch 0 chunk 0 to 1
// CHECK-NEXT: dist.forward @main_stage0 microbatch 1
// CHECK-NEXT: dist.send_activation microbatch 1 chunk 0 to 1
// CHECK-NEXT: dist.forward @main_stage0 microbatch 2
// CHECK-NEXT: dist.send_activation microbatch 2 chunk 0 to 1
// CHECK-NEXT: dist.forward @main_stage0 microbatch 3
// CHECK-NEXT: dist.send_activation microbatch 3 chunk 0 to 1
// CHECK-NEXT: dist.recv_grad microbatch 0 chunk 0 from 1
// CHECK-NEXT: dist.backward @main_stage0 microbatch 0
// CHECK-NEXT: dist.forward @main_stage0 microbatch 4
// CHECK-NEXT: dist.send_activation microbatch 4 chunk 0 to 1
// CHECK-NEXT: dist.recv_grad microbatch 1 chunk 0 from 1
// CHECK-NEXT: dist.backward @main_stage0 microbatch 1
// CHECK-NEXT: dist.forward @main_stage0 microbatch 5
// CHECK-NEXT: dist.send_activation microbatch 5 chunk 0 to 1
// CHECK-NEXT: dist.recv_grad microbatch 2 chunk 0 from 1
// CHECK-NEXT: dist.backward @main_stage0 microbatch 2
// CHECK-NEXT: dist.forward @main_stage0 microbatch 6
// CHECK-NEXT: dist.send_activation microbatch 6 chunk 0 to 1
// CHECK-NEXT: dist.recv_grad microbatch 3 chunk 0 from 1
// CHECK-NEXT: dist.backward @main_stage0 microbatch 3
// CHECK-NEXT: dist.forward @main_stage0 microbatch 7
// CHECK-NEXT: dist.send_activation microbatch 7 chunk 0 to 1
// CHECK-NEXT: dist.recv_grad microbatch 4 chunk 0 from 1
// CHECK-NEXT: dist.backward @main_stage0 microbatch 4
// CHECK-NEXT: dist.recv_grad microbatch 5 chunk 0 from 1
// CHECK-NEXT: dist.backward @main_stage0 microbatch 5
// CHECK-NEXT: dist.recv_grad microbatch 6 chunk 0 from 1
// CHECK-NEXT: dist.backward @main_stage0 microbatch 6
// CHECK-NEXT: dist.recv_grad microbatch 7 chunk 0 from 1
// CHECK-NEXT: dist.backward @main_stage0 microbatch 7
// CHECK-NEXT: dist.optimizer_step
// CHECK-NEXT: }
// Rank 1: three forwards of warm-up.
// CHECK-NEXT: dist.actions 1 on #dist.mesh<shape = [1, 1], devices = [1]> {
// CHECK-NEXT: dist.recv_activation microbatch 0 chunk 0 from 0
// CHECK-NEXT: dist.forward @main_stage1 microbatch 0
// CHECK-NEXT: dist.send_activation microbatch 0 chunk 0 to 2
// CHECK-NEXT: dist.recv_activation microbatch 1 chunk 0 from 0
// CHECK-NEXT: dist.forward @main_stage1 microbatch 1
// CHECK-NEXT: dist.send_activation microbatch 1 chunk 0 to 2
// CHECK-NEXT: dist.recv_activation microbatch 2 chunk 0 from 0
// CHECK-NEXT: dist.forward @main_stage1 microbatch 2
// CHECK-NEXT: dist.send_activation microbatch 2 chunk 0 to 2
// CHECK-NEXT: dist.recv_grad microbatch 0 chunk 0 from 2
// CHECK-NEXT: dist.backward @main_stage1 microbatch 0
// CHECK-NEXT: dist.send_grad microbatch 0 chunk 0 to 0
// CHECK-NEXT: dist.recv_activation microbatch 3 chunk 0 from 0
// CHECK-NEXT: dist.forward @main_stage1 microbatch 3
// CHECK: dist.optimizer_step
// Rank 3 (the last): forward, backward, forward, backward, ...
// CHECK: dist.actions 3 on #dist.mesh<shape = [1, 1], devices = [3]> {
// CHECK-NEXT: dist.recv_activation microbatch 0 chunk 0 from 2
// CHECK-NEXT: dist.forward @main_stage3 microbatch 0
// CHECK-NEXT: dist.backward @main_stage3 microbatch 0
// CHECK-NEXT: dist.send_grad microbatch 0 chunk 0 to 2
// CHECK-NEXT: dist.recv_activation microbatch 1 chunk 0 from 2
// CHECK-NEXT: dist.forward @main_stage3 microbatch 1
// CHECK-NEXT: dist.backward @main_stage3 microbatch 1
// CHECK-NEXT: dist.send_grad microbatch 1 chunk 0 to 2
// CHECK: dist.backward @main_stage3 microbatch 7
// CHECK-NEXT: dist.send_grad microbatch 7 chunk 0 to 2
// CHECK-NEXT: dist.optimizer_step
// CHECK-NEXT: }
// CHECK-NEXT: }
// ROUND: dist.schedule for @main kind "1f1b" microbatches 8
module attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 4, mbs = 1, microbatches = 8, global_batch = 8, schedule = "1f1b", stages = [0, 1, 2, 3]>} {
  func.func @main(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
    %a = graph.unary relu %x {dist.virtual_stage = 0 : i64} : (tensor<1x4xf32>) -> tensor<1x4xf32>
    %b = graph.unary tanh %a {dist.virtual_stage = 1 : i64} : (tensor<1x4xf32>) -> tensor<1x4xf32>
    %c = graph.unary exp %b {dist.virtual_stage = 2 : i64} : (tensor<1x4xf32>) -> tensor<1x4xf32>
    %d = graph.unary neg %c {dist.virtual_stage = 3 : i64} : (tensor<1x4xf32>) -> tensor<1x4xf32>
    return %d : tensor<1x4xf32>
  }
}

// -----

// Zero-bubble (ZB-H1) splits the backward into its input and weight halves;
// data parallelism inside the stage syncs each stage's gradients before the
// optimizer step. An inference plan gets the forward-only stream.
// CHECK-LABEL: dist.schedule for @main kind "zb-h1" microbatches 2
// CHECK: dist.actions 1 on #dist.mesh<shape = [2, 1], devices = [2, 3]> {
// CHECK: dist.backward_input @main_stage1 microbatch 0
// CHECK: dist.backward_weight @main_stage1 microbatch 0
// CHECK: dist.grad_all_reduce chunk 0
// CHECK-NEXT: dist.optimizer_step
// ROUND: dist.schedule for @main kind "zb-h1" microbatches 2
module attributes {dist.plan = #dist.plan<dp = 2, tp = 1, pp = 2, mbs = 1, microbatches = 2, global_batch = 4, schedule = "zb-h1", stages = [0, 1]>} {
  func.func @main(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
    %a = graph.unary relu %x {dist.virtual_stage = 0 : i64} : (tensor<1x4xf32>) -> tensor<1x4xf32>
    %b = graph.unary tanh %a {dist.virtual_stage = 1 : i64} : (tensor<1x4xf32>) -> tensor<1x4xf32>
    return %b : tensor<1x4xf32>
  }
}

// -----

// CHECK-LABEL: dist.schedule for @main kind "forward" microbatches 2
// CHECK-NEXT: dist.actions 0 on #dist.mesh<shape = [1, 1], devices = [0]> {
// CHECK-NEXT: dist.forward @main_stage0 microbatch 0
// CHECK-NEXT: dist.send_activation microbatch 0 chunk 0 to 1
// CHECK-NEXT: dist.forward @main_stage0 microbatch 1
// CHECK-NEXT: dist.send_activation microbatch 1 chunk 0 to 1
// CHECK-NEXT: }
// CHECK-NEXT: dist.actions 1 on #dist.mesh<shape = [1, 1], devices = [1]> {
// CHECK-NEXT: dist.recv_activation microbatch 0 chunk 0 from 0
// CHECK-NEXT: dist.forward @main_stage1 microbatch 0
// CHECK-NEXT: dist.recv_activation microbatch 1 chunk 0 from 0
// CHECK-NEXT: dist.forward @main_stage1 microbatch 1
// CHECK-NEXT: }
// ROUND: dist.schedule for @main kind "forward" microbatches 2
module attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 2, mbs = 1, microbatches = 2, global_batch = 2, schedule = "gpipe", stages = [0, 1], mode = infer>} {
  func.func @main(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
    %a = graph.unary relu %x {dist.virtual_stage = 0 : i64} : (tensor<1x4xf32>) -> tensor<1x4xf32>
    %b = graph.unary tanh %a {dist.virtual_stage = 1 : i64} : (tensor<1x4xf32>) -> tensor<1x4xf32>
    return %b : tensor<1x4xf32>
  }
}
