// RUN: dist-opt %s -split-input-file | FileCheck %s
// RUN: dist-opt %s -split-input-file | dist-opt -split-input-file | FileCheck %s
// RUN: dist-opt %s -split-input-file -mlir-print-op-generic | dist-opt -split-input-file | FileCheck %s

// Every action op once, and the list form of dist.send / dist.recv.
// CHECK-LABEL: func.func @transfers
// CHECK: dist.send %{{.*}} to list 1 tag 3 : tensor<4xf32>
// CHECK: dist.recv from list 0 tag 3 : tensor<4xf32>
// CHECK-LABEL: dist.schedule for @main kind "zb-h1" microbatches 1 {
// CHECK-NEXT: dist.actions 0 on #dist.mesh<shape = [2, 1], devices = [0, 1]> {
// CHECK-NEXT: dist.forward @main_stage0 microbatch 0
// CHECK-NEXT: dist.send_activation microbatch 0 chunk 0 to 1
// CHECK-NEXT: dist.recv_grad microbatch 0 chunk 0 from 1
// CHECK-NEXT: dist.backward_input @main_stage0 microbatch 0
// CHECK-NEXT: dist.backward_weight @main_stage0 microbatch 0
// CHECK-NEXT: dist.grad_reduce_scatter chunk 0
// CHECK-NEXT: dist.optimizer_step
// CHECK-NEXT: dist.param_all_gather chunk 0
// CHECK-NEXT: }
// CHECK: dist.recv_activation microbatch 0 chunk 0 from 0
// CHECK: dist.backward @main_stage1 microbatch 0
// CHECK: dist.send_grad microbatch 0 chunk 0 to 0
// CHECK: dist.grad_all_reduce chunk 0
module attributes {dist.plan = #dist.plan<dp = 2, tp = 1, pp = 2, mbs = 1, microbatches = 1, global_batch = 2, schedule = "zb-h1", zero = 1, stages = [0, 1]>} {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %0 = call @main_stage0(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %1 = call @main_stage1(%0) : (tensor<4xf32>) -> tensor<4xf32>
    return %1 : tensor<4xf32>
  }
  func.func private @main_stage0(%a: tensor<4xf32>) -> tensor<4xf32> attributes {dist.virtual_stage = 0 : i64} {
    return %a : tensor<4xf32>
  }
  func.func private @main_stage1(%a: tensor<4xf32>) -> tensor<4xf32> attributes {dist.virtual_stage = 1 : i64} {
    return %a : tensor<4xf32>
  }
  func.func @transfers(%v: tensor<4xf32>) -> tensor<4xf32> {
    dist.send %v to list 1 tag 3 : tensor<4xf32>
    %r = dist.recv from list 0 tag 3 : tensor<4xf32>
    return %r : tensor<4xf32>
  }
  dist.schedule for @main kind "zb-h1" microbatches 1 {
    dist.actions 0 on #dist.mesh<shape = [2, 1], devices = [0, 1]> {
      dist.forward @main_stage0 microbatch 0
      dist.send_activation microbatch 0 chunk 0 to 1
      dist.recv_grad microbatch 0 chunk 0 from 1
      dist.backward_input @main_stage0 microbatch 0
      dist.backward_weight @main_stage0 microbatch 0
      dist.grad_reduce_scatter chunk 0
      dist.optimizer_step
      dist.param_all_gather chunk 0
    }
    dist.actions 1 on #dist.mesh<shape = [2, 1], devices = [2, 3]> {
      dist.recv_activation microbatch 0 chunk 0 from 0
      dist.forward @main_stage1 microbatch 0
      dist.backward @main_stage1 microbatch 0
      dist.send_grad microbatch 0 chunk 0 to 0
      dist.grad_all_reduce chunk 0
      dist.optimizer_step
    }
  }
}

// -----

// PipeDream's per-micro-batch sync and update name their micro-batch.
// CHECK-LABEL: dist.schedule for @main kind "pipedream" microbatches 2 {
// CHECK: dist.backward @main_stage0 microbatch 0
// CHECK-NEXT: dist.grad_all_reduce microbatch 0 chunk 0
// CHECK-NEXT: dist.optimizer_step microbatch 0
module attributes {dist.plan = #dist.plan<dp = 2, tp = 1, pp = 1, mbs = 1, microbatches = 2, global_batch = 4, schedule = "pipedream", stages = [0]>} {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %0 = call @main_stage0(%x) : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
  func.func private @main_stage0(%a: tensor<4xf32>) -> tensor<4xf32> attributes {dist.virtual_stage = 0 : i64} {
    return %a : tensor<4xf32>
  }
  dist.schedule for @main kind "pipedream" microbatches 2 {
    dist.actions 0 on #dist.mesh<shape = [2, 1], devices = [0, 1]> {
      dist.forward @main_stage0 microbatch 0
      dist.backward @main_stage0 microbatch 0
      dist.grad_all_reduce microbatch 0 chunk 0
      dist.optimizer_step microbatch 0
      dist.forward @main_stage0 microbatch 1
      dist.backward @main_stage0 microbatch 1
      dist.grad_all_reduce microbatch 1 chunk 0
      dist.optimizer_step microbatch 1
    }
  }
}
