// RUN: dist-opt %s --split-input-file --dist-data-parallel --verify-diagnostics | FileCheck %s

// A hand-written training step: the gradient and the loss are averaged,
// the batch input is marked, the rank-0 input is not.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %{{.*}}: tensor<2x3xf32> {dist.batch_shard}, %{{.*}}: tensor<f32>)
// CHECK-SAME: attributes {dist.data_parallel
// CHECK: %[[G:.*]] = dist.all_reduce %{{.*}} mean over world {graph.phase = "optimizer"} : tensor<3xf32>
// CHECK-NEXT: %[[W:.*]] = graph.sgd_update %{{.*}}, %[[G]], %{{.*}}
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
