// RUN: dist-opt %s --split-input-file --dist-data-parallel --verify-diagnostics | FileCheck %s

// A hand-written training step: the gradient and the loss are averaged,
// the batch input is marked, the rank-0 input is not. The gradient is
// reduced right after the op that made it (no plan: grad_overlap's default),
// so the printer can start it there.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %{{.*}}: tensor<2x3xf32> {dist.batch_shard}, %{{.*}}: tensor<f32>)
// CHECK-SAME: attributes {dist.data_parallel
// CHECK: %[[GL:.*]] = graph.reduce sum
// CHECK-NEXT: %[[G:.*]] = dist.all_reduce %[[GL]] mean over world {graph.phase = "backward"} : tensor<3xf32>
// CHECK: %[[W:.*]] = graph.sgd_update %{{.*}}, %[[G]], %{{.*}}
// CHECK: %[[L:.*]] = dist.all_reduce %{{.*}} mean over world {graph.phase = "forward"} : tensor<f32>
// CHECK-NEXT: return %[[L]], %[[W]]
func.func @train_step(%x: tensor<2x3xf32>, %s: tensor<f32>) -> (tensor<f32> {graph.output = "loss"}, tensor<3xf32> {graph.update = "w"}) attributes {graph.train = {role = "step"}} {
  %w = graph.weight "w" : tensor<3xf32>
  %g = graph.reduce sum %x {axes = array<i64: 0>, keepdims = false} : (tensor<2x3xf32>) -> tensor<3xf32>
  %l = graph.reduce mean %x {keepdims = false} : (tensor<2x3xf32>) -> tensor<f32>
  %n = graph.sgd_update %w, %g, %s {lr = 1.0e-01 : f64} : (tensor<3xf32>, tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  return %l, %n : tensor<f32>, tensor<3xf32>
}

// -----

// A plan with grad_overlap=0: the gradient is reduced right before the
// update reads it.
// CHECK-LABEL: func.func @train_step(
// CHECK: %[[GL:.*]] = graph.reduce sum
// CHECK-NEXT: graph.reduce mean
// CHECK-NEXT: %[[G:.*]] = dist.all_reduce %[[GL]] mean over world {graph.phase = "optimizer"} : tensor<3xf32>
// CHECK-NEXT: graph.sgd_update %{{.*}}, %[[G]], %{{.*}}
module attributes {dist.plan = #dist.plan<dp = 2, tp = 1, pp = 1, mbs = 2, microbatches = 1, global_batch = 4, schedule = "1f1b", stages = [0], overlap_grad_sync = false>} {
func.func @train_step(%x: tensor<2x3xf32>, %s: tensor<f32>) -> (tensor<f32> {graph.output = "loss"}, tensor<3xf32> {graph.update = "w"}) attributes {graph.train = {role = "step"}} {
  %w = graph.weight "w" : tensor<3xf32>
  %g = graph.reduce sum %x {axes = array<i64: 0>, keepdims = false} : (tensor<2x3xf32>) -> tensor<3xf32>
  %l = graph.reduce mean %x {keepdims = false} : (tensor<2x3xf32>) -> tensor<f32>
  %n = graph.sgd_update %w, %g, %s {lr = 1.0e-01 : f64} : (tensor<3xf32>, tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  return %l, %n : tensor<f32>, tensor<3xf32>
}
}

// -----

// expected-error @+1 {{dist-data-parallel: @train_odd has graph.train role 'forward'; expected step, microbatch or apply (rerun --dist-autodiff)}}
func.func @train_odd(%x: tensor<2xf32>) -> tensor<2xf32> attributes {graph.train = {role = "forward"}} {
  return %x : tensor<2xf32>
}

// -----

// expected-error @+1 {{dist-data-parallel: no training function (@train_step, or @train_microbatch and @train_apply, marked graph.train); run --dist-autodiff first}}
module {
  func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    return %x : tensor<2xf32>
  }
}
