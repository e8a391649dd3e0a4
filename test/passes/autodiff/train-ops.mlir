// RUN: dist-opt %s --split-input-file | dist-opt --split-input-file | FileCheck %s --enable-var-scope
// RUN: dist-opt %s --split-input-file --mlir-print-op-generic | dist-opt --split-input-file | FileCheck %s --enable-var-scope

// Round trip of the training ops (dialects/Graph/GraphTrainOps.td).

// CHECK-LABEL: func.func @grads
func.func @grads(%x: tensor<2x8xf32>, %dy: tensor<2x8xf32>, %g: tensor<8xf32>,
                 %logits: tensor<2x8xf32>, %labels: tensor<2xi64>,
                 %one: tensor<f32>) -> tensor<2x8xf32> {
  // CHECK: graph.unary_grad gelu %{{.*}}, %{{.*}} :
  %0 = graph.unary_grad gelu %x, %dy : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK: graph.unary_grad leaky_relu {{.*}} {alpha = 1.000000e-01 : f64}
  %1 = graph.unary_grad leaky_relu %x, %0 {alpha = 0.1 : f64} : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK: graph.softmax_grad {{.*}} {axis = 1 : i64, log}
  %2 = graph.softmax_grad %x, %1 {axis = 1 : i64, log} : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK: graph.softmax_cross_entropy_grad mean
  %3 = graph.softmax_cross_entropy_grad mean %logits, %labels, %one {ignore_index = -100 : i64} : (tensor<2x8xf32>, tensor<2xi64>, tensor<f32>) -> tensor<2x8xf32>
  // CHECK: graph.norm_grad {{.*}} {kind = "layer"}
  %4 = graph.norm_grad %x, %g, %3 {kind = "layer", axis = -1 : i64, epsilon = 1.0e-5 : f64} : (tensor<2x8xf32>, tensor<8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK: graph.norm_grad_params {{.*}} -> (tensor<8xf32>, tensor<8xf32>)
  %5:2 = graph.norm_grad_params %x, %4 {kind = "layer", axis = -1 : i64} : (tensor<2x8xf32>, tensor<2x8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
  return %4 : tensor<2x8xf32>
}

// -----

// CHECK-LABEL: func.func @conv_pool
func.func @conv_pool(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>,
                     %dy: tensor<2x4x8x8xf32>, %dp: tensor<2x4x4x4xf32>,
                     %bn: tensor<4xf32>, %dp2: tensor<2x4x1x1xf32>) -> tensor<2x3x8x8xf32> {
  // CHECK: graph.conv_grad_input
  %0 = graph.conv_grad_input %dy, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<2x4x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x3x8x8xf32>
  // CHECK: graph.conv_grad_weight
  %1 = graph.conv_grad_weight %x, %dy {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<2x3x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<4x3x3x3xf32>
  // CHECK: graph.pool_grad max
  %2 = graph.pool_grad max %dy, %dp {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<2x4x8x8xf32>, tensor<2x4x4x4xf32>) -> tensor<2x4x8x8xf32>
  // CHECK: graph.pool_grad avg {{.*}} {global}
  %g = graph.pool_grad avg %dy, %dp2 {global} : (tensor<2x4x8x8xf32>, tensor<2x4x1x1xf32>) -> tensor<2x4x8x8xf32>
  // CHECK: graph.norm_grad {{.*}} {kind = "batch"}
  %3 = graph.norm_grad %dy, %bn, %2 {kind = "batch"} : (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  return %0 : tensor<2x3x8x8xf32>
}

// -----

// CHECK-LABEL: func.func @update
func.func @update(%w: tensor<4x8xf32>, %g: tensor<4x8xf32>, %ids: tensor<2x3xi64>,
                  %de: tensor<2x3x8xf32>, %h: tensor<4x8xbf16>)
    -> (tensor<4x8xf32>, tensor<f32>) {
  // CHECK: graph.state "w.m" : tensor<4x8xf32>
  %m = graph.state "w.m" : tensor<4x8xf32>
  %v = graph.state "w.v" : tensor<4x8xf32>
  // CHECK: graph.state "loss_scale" {init = 6.553600e+04 : f64}
  %s = graph.state "loss_scale" {init = 65536.0 : f64} : tensor<f32>
  %n = graph.state "good_steps" : tensor<f32>
  %t = graph.state "step" : tensor<f32>
  // CHECK: graph.dropout_mask {ratio = 1.000000e-01 : f64, seed = 7 : i64} : tensor<4x8xf32>
  %mask = graph.dropout_mask {ratio = 0.1 : f64, seed = 7 : i64} : tensor<4x8xf32>
  // CHECK: %[[STEP:.*]] = graph.state "step" : tensor<f32>
  // CHECK: %[[MB:.*]] = graph.state "microbatch" : tensor<f32>
  // CHECK: graph.dropout_mask step(%[[STEP]] : tensor<f32>) {ratio = 2.500000e-01 : f64, seed = 3 : i64} : tensor<4x8xf32>
  // CHECK: graph.dropout_mask step(%[[STEP]] : tensor<f32>) microbatch(%[[MB]] : tensor<f32>) {ratio = 2.500000e-01 : f64} : tensor<4x8xf16>
  %ks = graph.state "step" : tensor<f32>
  %kmb = graph.state "microbatch" : tensor<f32>
  %mask1 = graph.dropout_mask step(%ks : tensor<f32>) {ratio = 0.25 : f64, seed = 3 : i64} : tensor<4x8xf32>
  %mask2 = graph.dropout_mask step(%ks : tensor<f32>) microbatch(%kmb : tensor<f32>) {ratio = 0.25 : f64} : tensor<4x8xf16>
  // CHECK: graph.scatter_add
  %e = graph.scatter_add %ids, %de {axis = 0 : i64} : (tensor<2x3xi64>, tensor<2x3x8xf32>) -> tensor<4x8xf32>
  // CHECK: graph.unscale {{.*}} -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<i1>)
  %u:3 = graph.unscale %s, %h, %e : (tensor<f32>, tensor<4x8xbf16>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<i1>)
  // CHECK: graph.loss_scale_update
  %s2:2 = graph.loss_scale_update %s, %n, %u#2 : (tensor<f32>, tensor<f32>, tensor<i1>) -> (tensor<f32>, tensor<f32>)
  // CHECK: graph.sgd_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} skip %{{.*}} {lr = 1.000000e-01 : f64, momentum = 9.000000e-01 : f64, nesterov}
  %w1:2 = graph.sgd_update %w, %u#0, %t, %m skip %u#2 {lr = 0.1 : f64, momentum = 0.9 : f64, nesterov} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>, tensor<4x8xf32>, tensor<i1>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  // CHECK: graph.sgd_update %{{[^,]*}}, %{{[^,]*}}, %{{[^ ]*}} {lr
  %w2 = graph.sgd_update %w1#0, %g, %t {lr = 0.1 : f64} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  // CHECK: graph.adam_update {{.*}} {decoupled, lr = 1.000000e-03 : f64, weight_decay = 1.000000e-02 : f64}
  %w3:3 = graph.adam_update %w2, %g, %m, %v, %t {lr = 1.0e-3 : f64, weight_decay = 0.01 : f64, decoupled} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  return %w3#0, %s2#0 : tensor<4x8xf32>, tensor<f32>
}
