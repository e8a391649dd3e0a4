// RUN: dist-opt %s -split-input-file --dist-partition | FileCheck %s --enable-var-scope

// CHECK-LABEL: func.func @train_step_rank0(
// CHECK-SAME: -> (tensor<f32> {graph.output = "loss"}, tensor<4x4xf32> {graph.update = "w"})
// CHECK: %[[W:.*]] = graph.sgd_update
// CHECK: dist.send %[[W]] to list 1 tag [[$BACK:[0-9]+]] : tensor<4x4xf32>
// CHECK: return %{{.*}}, %[[W]]
// CHECK-LABEL: func.func @train_step_rank1(
// CHECK-SAME: -> (tensor<4x4xf32> {graph.update = "w"})
// CHECK-NOT: graph.sgd_update
// CHECK: %[[R:.*]] = dist.recv from list 0 tag [[$BACK]] : tensor<4x4xf32>
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


// -----

// CHECK-LABEL: func.func @train_step_rank0(
// CHECK: %[[OWN:.*]] = call @train_step_stage0_backward_weight_accumulate_0({{.*}}dist.microbatch = 1
// CHECK: %[[PART:.*]] = dist.recv from list 1 tag [[$TAG:[0-9]+]] {dist.action = "OPT"} : tensor<4x4xf32>
// CHECK: %[[MEAN:.*]] = graph.binary mul %[[OWN]],
// CHECK: %[[SUM:.*]] = graph.binary add %[[PART]], %[[MEAN]]
// CHECK: %[[W:.*]] = graph.sgd_update %{{.*}}, %[[SUM]]
// CHECK: dist.send %[[W]] to list 1
// CHECK-LABEL: func.func @train_step_rank1(
// CHECK-NOT: dist.send {{.*}} : tensor<4x4xf32>
// CHECK: %[[D1:.*]] = call @train_step_stage1_backward_weight_accumulate_0({{.*}}dist.microbatch = 1
// CHECK: %[[M1:.*]] = graph.binary mul %[[D1]],
// CHECK-NEXT: dist.send %[[M1]] to list 0 tag [[$TAG]] {dist.action = "OPT"} : tensor<4x4xf32>
// CHECK-NOT: dist.send {{.*}} : tensor<4x4xf32>
// A tied weight's parts summed once a step (a backward add of two stages'
// gradients that only the optimizer reads): stage 1's part goes to list 0
// once, at its optimizer step, not with each micro-batch's gradient.
module attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 2, mbs = 1, microbatches = 2, global_batch = 2, schedule = "gpipe", stages = [0, 1]>} {
  func.func @train_step(%x: tensor<1x4xf32>) -> (tensor<f32> {graph.output = "loss"}, tensor<4x4xf32> {graph.update = "w"}) attributes {graph.train = {accumulation_steps = 1 : i64, mixed_precision = "none", optimizer = "sgd", role = "step"}} {
    %w = graph.weight "w" : tensor<4x4xf32>
    %h = graph.matmul %x, %w {dist.virtual_stage = 0 : i64, graph.phase = "forward"} : (tensor<1x4xf32>, tensor<4x4xf32>) -> tensor<1x4xf32>
    %y = graph.matmul %h, %w {dist.virtual_stage = 1 : i64, graph.phase = "forward"} : (tensor<1x4xf32>, tensor<4x4xf32>) -> tensor<1x4xf32>
    %l = graph.reduce mean %y {dist.virtual_stage = 1 : i64, graph.phase = "forward", keepdims = false} : (tensor<1x4xf32>) -> tensor<f32>
    %d0 = graph.matmul %x, %h {dist.virtual_stage = 0 : i64, graph.phase = "backward_weight", transpose_lhs = true} : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<4x4xf32>
    %d1 = graph.matmul %h, %y {dist.virtual_stage = 1 : i64, graph.phase = "backward_weight", transpose_lhs = true} : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<4x4xf32>
    %dw = graph.binary add %d1, %d0 {dist.virtual_stage = 0 : i64, graph.phase = "backward_weight"} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %s = graph.state "step" {graph.phase = "optimizer"} : tensor<f32>
    %nw = graph.sgd_update %w, %dw, %s {graph.phase = "optimizer", lr = 1.000000e-01 : f64} : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
    return %l, %nw : tensor<f32>, tensor<4x4xf32>
  }
}

// -----

// CHECK-LABEL: func.func @train_step_rank1(
// CHECK: call @train_step_stage1_backward_weight_untransposed_0({{.*}}dist.microbatch = 0
// CHECK: %[[D1:.*]] = call @train_step_stage1_backward_weight_untransposed_0_accumulate_0({{.*}}dist.microbatch = 1{{.*}} -> tensor<2x4xf32>
// CHECK: %[[M1:.*]] = graph.binary mul %[[D1]],
// CHECK-NEXT: %[[T:.*]] = graph.transpose %[[M1]] {dist.action = "OPT", perm = array<i64: 1, 0>} : (tensor<2x4xf32>) -> tensor<4x2xf32>
// CHECK-NEXT: dist.send %[[T]] to list 0 tag {{[0-9]+}} {dist.action = "OPT"} : tensor<4x2xf32>
// CHECK-NOT: graph.transpose {{.*}} -> tensor<4x2xf32>
// CHECK-LABEL: func.func private @train_step_stage1_backward_weight_untransposed_0_accumulate_0(
// CHECK-NOT: graph.transpose {{.*}} -> tensor<4x2xf32>
// CHECK: return {{.*}} : tensor<2x4xf32>
// CHECK-LABEL: func.func private @train_step_stage1_backward_weight_untransposed_0(
// CHECK-NOT: graph.transpose {{.*}} -> tensor<4x2xf32>
// CHECK: return {{.*}} : tensor<2x4xf32>
// A part that stage 1 computes in the layout of its transposed read (an
// LM head's): summed over the micro-batches in that layout, transposed to
// the weight's once a step before it is sent.
module attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 2, mbs = 1, microbatches = 2, global_batch = 2, schedule = "gpipe", stages = [0, 1]>} {
  func.func @train_step(%x: tensor<1x4xf32>) -> (tensor<f32> {graph.output = "loss"}, tensor<4x2xf32> {graph.update = "w"}) attributes {graph.train = {accumulation_steps = 1 : i64, mixed_precision = "none", optimizer = "sgd", role = "step"}} {
    %w = graph.weight "w" : tensor<4x2xf32>
    %h = graph.matmul %x, %w {dist.virtual_stage = 0 : i64, graph.phase = "forward"} : (tensor<1x4xf32>, tensor<4x2xf32>) -> tensor<1x2xf32>
    %wt = graph.transpose %w {dist.virtual_stage = 1 : i64, graph.phase = "forward", perm = array<i64: 1, 0>} : (tensor<4x2xf32>) -> tensor<2x4xf32>
    %y = graph.matmul %h, %wt {dist.virtual_stage = 1 : i64, graph.phase = "forward"} : (tensor<1x2xf32>, tensor<2x4xf32>) -> tensor<1x4xf32>
    %l = graph.reduce mean %y {dist.virtual_stage = 1 : i64, graph.phase = "forward", keepdims = false} : (tensor<1x4xf32>) -> tensor<f32>
    %d0 = graph.matmul %x, %h {dist.virtual_stage = 0 : i64, graph.phase = "backward_weight", transpose_lhs = true} : (tensor<1x4xf32>, tensor<1x2xf32>) -> tensor<4x2xf32>
    %g1 = graph.matmul %h, %y {dist.virtual_stage = 1 : i64, graph.phase = "backward_weight", transpose_lhs = true} : (tensor<1x2xf32>, tensor<1x4xf32>) -> tensor<2x4xf32>
    %d1 = graph.transpose %g1 {dist.virtual_stage = 1 : i64, graph.phase = "backward_weight", perm = array<i64: 1, 0>} : (tensor<2x4xf32>) -> tensor<4x2xf32>
    %dw = graph.binary add %d1, %d0 {dist.virtual_stage = 0 : i64, graph.phase = "backward_weight"} : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
    %s = graph.state "step" {graph.phase = "optimizer"} : tensor<f32>
    %nw = graph.sgd_update %w, %dw, %s {graph.phase = "optimizer", lr = 1.000000e-01 : f64} : (tensor<4x2xf32>, tensor<4x2xf32>, tensor<f32>) -> tensor<4x2xf32>
    return %l, %nw : tensor<f32>, tensor<4x2xf32>
  }
}
