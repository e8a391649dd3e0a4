// RUN: dist-opt %s --dist-partition | FileCheck %s

// CHECK-LABEL: func.func @train_step_rank0(
// CHECK-SAME: -> (tensor<f32> {graph.output = "loss"}, tensor<4x4xf32> {graph.update = "w"})
// CHECK: %[[W:.*]] = graph.sgd_update
// CHECK: dist.send %[[W]] to list 1 tag [[TAG:[0-9]+]] : tensor<4x4xf32>
// CHECK: return %{{.*}}, %[[W]]
// CHECK-LABEL: func.func @train_step_rank1(
// CHECK-SAME: -> (tensor<4x4xf32> {graph.update = "w"})
// CHECK-NOT: graph.sgd_update
// CHECK: %[[R:.*]] = dist.recv from list 0 tag [[TAG]] : tensor<4x4xf32>
// CHECK: return %[[R]]
// A weight one stage updates and another reads (a tied embedding): the
// list that updates it sends the new value to the reader after the step.
module attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 2, mbs = 1, microbatches = 2, global_batch = 2, schedule = "gpipe", stages = [0, 1]>} {
  func.func @train_step(%x: tensor<1x4xf32>) -> (tensor<f32> {graph.output = "loss"}, tensor<4x4xf32> {graph.update = "w"}) attributes {graph.train = {accumulation_steps = 1 : i64, mixed_precision = "none", optimizer = "sgd", role = "step"}} {
    %w = graph.weight "w" : tensor<4x4xf32>
    %h = graph.matmul %x, %w {dist.virtual_stage = 0 : i64, graph.phase = "forward"} : (tensor<1x4xf32>, tensor<4x4xf32>) -> tensor<1x4xf32>
    %y = graph.matmul %h, %w {dist.virtual_stage = 1 : i64, graph.phase = "forward"} : (tensor<1x4xf32>, tensor<4x4xf32>) -> tensor<1x4xf32>
    %l = graph.reduce mean %y {graph.phase = "forward", keepdims = false} : (tensor<1x4xf32>) -> tensor<f32>
    %dw = graph.matmul %x, %h {dist.virtual_stage = 0 : i64, graph.phase = "backward_weight", transpose_lhs = true} : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<4x4xf32>
    %s = graph.state "step" {graph.phase = "optimizer"} : tensor<f32>
    %nw = graph.sgd_update %w, %dw, %s {graph.phase = "optimizer", lr = 1.000000e-01 : f64} : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
    return %l, %nw : tensor<f32>, tensor<4x4xf32>
  }
}

