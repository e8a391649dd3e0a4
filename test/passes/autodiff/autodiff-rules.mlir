// RUN: dist-opt %s --split-input-file --dist-autodiff | FileCheck %s --enable-var-scope

// A strided slice, a max reduction and a vector . vector matmul: the
// weight gradient of the rank-1 operand is a backward_weight matmul of the
// matrix forms; max shares dy among the tied positions; the step-3 slice
// interleaves zeros (reshape, pad, reshape), trims the tail and pads.
// CHECK-LABEL: func.func @train_step(
// CHECK: %[[H:.*]] = graph.binary mul %arg0, %[[W:.*]] {graph.phase = "forward"}
// CHECK: %[[S:.*]] = graph.slice %[[H]]
// CHECK: %[[M:.*]] = graph.reduce max %[[S]]
// CHECK: %[[V:.*]] = graph.weight "v"
// CHECK: %[[VM:.*]] = graph.reshape %[[V]] {graph.phase = "backward_input"} : (tensor<2xf32>) -> tensor<2x1xf32>
// CHECK: %[[DM:.*]] = graph.matmul %{{.*}}, %[[VM]] {graph.phase = "backward_input", transpose_rhs = true} : (tensor<1x1xf32>, tensor<2x1xf32>) -> tensor<1x2xf32>
// CHECK: %[[DMV:.*]] = graph.reshape %[[DM]] {graph.phase = "backward_input"} : (tensor<1x2xf32>) -> tensor<2xf32>
// CHECK: %[[MM:.*]] = graph.reshape %[[M]] {graph.phase = "backward_weight"} : (tensor<2xf32>) -> tensor<1x2xf32>
// CHECK: %[[DV:.*]] = graph.matmul %[[MM]], %{{.*}} {graph.phase = "backward_weight", transpose_lhs = true} : (tensor<1x2xf32>, tensor<1x1xf32>) -> tensor<2x1xf32>
// CHECK: %[[DVV:.*]] = graph.reshape %[[DV]] {graph.phase = "backward_weight"} : (tensor<2x1xf32>) -> tensor<2xf32>
// CHECK: %[[HIT:.*]] = graph.binary equal %[[S]], %{{.*}} {graph.phase = "backward_input"} : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xi1>
// CHECK: %[[MASK:.*]] = graph.where %[[HIT]]
// CHECK: %[[CNT:.*]] = graph.reduce sum %[[MASK]] {axes = array<i64: 1>, graph.phase = "backward_input"}
// CHECK: %[[SHARE:.*]] = graph.binary div %[[MASK]], %[[CNT]]
// CHECK: %[[DS:.*]] = graph.binary mul %{{.*}}, %[[SHARE]]
// CHECK: %[[R1:.*]] = graph.reshape %[[DS]] {graph.phase = "backward_input"} : (tensor<2x3xf32>) -> tensor<2x3x1xf32>
// CHECK: %[[P1:.*]] = graph.pad constant %[[R1]] {graph.phase = "backward_input", pads = array<i64: 0, 0, 0, 0, 0, 2>} : (tensor<2x3x1xf32>) -> tensor<2x3x3xf32>
// CHECK: %[[R2:.*]] = graph.reshape %[[P1]] {graph.phase = "backward_input"} : (tensor<2x3x3xf32>) -> tensor<2x9xf32>
// CHECK: %[[T:.*]] = graph.slice %[[R2]] {axes = array<i64: 1>, ends = array<i64: 7>, graph.phase = "backward_input", starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<2x9xf32>) -> tensor<2x7xf32>
// CHECK: %[[DH:.*]] = graph.pad constant %[[T]] {graph.phase = "backward_input", pads = array<i64: 0, 1, 0, 0>} : (tensor<2x7xf32>) -> tensor<2x8xf32>
// CHECK: %[[DW:.*]] = graph.binary mul %[[DH]], %arg0 {graph.phase = "backward_weight"}
// CHECK: graph.sgd_update %[[W]], %[[DW]]
// CHECK: graph.sgd_update %[[V]], %[[DVV]]
func.func @main(%x: tensor<2x8xf32>) -> tensor<f32> {
  %w = graph.weight "w" : tensor<2x8xf32>
  %h = graph.binary mul %x, %w : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %s = graph.slice %h {axes = array<i64: 1>, starts = array<i64: 1>, ends = array<i64: 8>, steps = array<i64: 3>} : (tensor<2x8xf32>) -> tensor<2x3xf32>
  %m = graph.reduce max %s {axes = array<i64: 1>, keepdims = false} : (tensor<2x3xf32>) -> tensor<2xf32>
  %v = graph.weight "v" : tensor<2xf32>
  %l = graph.matmul %m, %v : (tensor<2xf32>, tensor<2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// L2 pooling: dy / y (0 where y = 0) times the window size, spread by an
// average pool gradient over all window positions, times x (input-gradient
// work: x depends on the input); then the mul's weight gradient.
// CHECK-LABEL: func.func @train_step(
// CHECK: %[[X:.*]] = graph.binary mul %arg0, %{{.*}} {graph.phase = "forward"}
// CHECK: %[[Y:.*]] = graph.pool l2 %[[X]]
// CHECK: %[[Z:.*]] = graph.binary equal %[[Y]], %{{.*}} {graph.phase = "backward_input"}
// CHECK: %[[SAFE:.*]] = graph.where %[[Z]], %{{.*}}, %[[Y]]
// CHECK: %[[Q:.*]] = graph.binary div %{{.*}}, %[[SAFE]]
// CHECK: %[[G:.*]] = graph.where %[[Z]], %{{.*}}, %[[Q]]
// CHECK: %[[K:.*]] = graph.constant dense<4.000000e+00> : tensor<f32>
// CHECK-NOT: graph.constant
// CHECK: %[[GK:.*]] = graph.binary mul %[[G]], %[[K]]
// CHECK: %[[S:.*]] = graph.pool_grad avg %[[X]], %[[GK]] {count_include_pad, dilations = array<i64: 1, 1>, graph.phase = "backward_input", kernel = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>}
// CHECK: %[[DX:.*]] = graph.binary mul %[[S]], %[[X]] {graph.phase = "backward_input"}
// CHECK: graph.binary mul %[[DX]], %arg0 {graph.phase = "backward_weight"}
func.func @main(%x: tensor<1x2x4x4xf32>) -> tensor<f32> {
  %w = graph.weight "w" : tensor<1x2x4x4xf32>
  %h = graph.binary mul %x, %w : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = graph.pool l2 %h {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
  %l = graph.reduce sum %p {keepdims = false} : (tensor<1x2x2x2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// An all-to-all (expert parallelism's token exchange): the gradient goes
// back through the all-to-all with the split and concat axes swapped, over
// the same group.
// CHECK-LABEL: func.func @train_step(
// CHECK: %[[T:.*]] = dist.all_to_all %{{.*}} split 1 concat 0 over [0, 1] {graph.phase = "forward"} : tensor<2x4x3xf32> -> tensor<4x2x3xf32>
// CHECK: %[[DT:.*]] = dist.all_to_all %{{.*}} split 0 concat 1 over [0, 1] {graph.phase = "backward_input"} : tensor<4x2x3xf32> -> tensor<2x4x3xf32>
// CHECK: graph.binary mul %[[DT]], %arg0 {graph.phase = "backward_weight"}
func.func @main(%x: tensor<2x4x3xf32>) -> tensor<f32> {
  %w = graph.weight "w" : tensor<2x4x3xf32>
  %h = graph.binary mul %x, %w : (tensor<2x4x3xf32>, tensor<2x4x3xf32>) -> tensor<2x4x3xf32>
  %t = dist.all_to_all %h split 1 concat 0 over [0, 1] : tensor<2x4x3xf32> -> tensor<4x2x3xf32>
  %s = graph.binary mul %t, %t : (tensor<4x2x3xf32>, tensor<4x2x3xf32>) -> tensor<4x2x3xf32>
  %l = graph.reduce sum %s {keepdims = false} : (tensor<4x2x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A scatter max of a weight into an activation: the contributors equal to
// the result share its gradient (count = hits of the data plus those of
// the updates scattered onto them). The counts serve the gradients of both
// operands, so they are input work (the result depends on the input); the
// weight's gradient (the update's hit times its position's share) is
// weight work.
// CHECK-LABEL: func.func @train_step(
// CHECK: %[[W:.*]] = graph.weight "w"
// CHECK: %[[I:.*]] = graph.constant dense<{{\[\[}}1], [-1]]>
// CHECK: %[[Y:.*]] = graph.scatter_elements max %arg0, %[[I]], %[[W]]
// CHECK: %[[DY:.*]] = graph.expand
// CHECK: %[[ONE:.*]] = graph.constant dense<1.000000e+00> : tensor<f32> {graph.phase = "backward_input"}
// CHECK: %[[ZERO:.*]] = graph.constant dense<0.000000e+00> : tensor<f32> {graph.phase = "backward_input"}
// CHECK: %[[DE:.*]] = graph.binary equal %arg0, %[[Y]] {graph.phase = "backward_input"}
// CHECK: %[[DHIT:.*]] = graph.where %[[DE]], %[[ONE]], %[[ZERO]] {graph.phase = "backward_input"}
// CHECK: %[[YU:.*]] = graph.gather_elements %[[Y]], %[[I]] {axis = 1 : i64, graph.phase = "backward_input"}
// CHECK: %[[UE:.*]] = graph.binary equal %[[W]], %[[YU]] {graph.phase = "backward_input"}
// CHECK: %[[UHIT:.*]] = graph.where %[[UE]], %[[ONE]], %[[ZERO]] {graph.phase = "backward_input"}
// CHECK: %[[N:.*]] = graph.scatter_elements add %[[DHIT]], %[[I]], %[[UHIT]] {axis = 1 : i64, graph.phase = "backward_input"}
// CHECK: %[[SHARE:.*]] = graph.binary div %[[DY]], %[[N]] {graph.phase = "backward_input"}
// CHECK: %[[G:.*]] = graph.gather_elements %[[SHARE]], %[[I]] {axis = 1 : i64, graph.phase = "backward_weight"}
// CHECK: %[[DW:.*]] = graph.binary mul %[[UHIT]], %[[G]] {graph.phase = "backward_weight"}
// CHECK: graph.sgd_update %[[W]], %[[DW]]
func.func @main(%x: tensor<2x3xf32>) -> tensor<f32> {
  %w = graph.weight "w" : tensor<2x1xf32>
  %i = graph.constant dense<[[1], [-1]]> : tensor<2x1xi64>
  %s = graph.scatter_elements max %x, %i, %w {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x1xi64>, tensor<2x1xf32>) -> tensor<2x3xf32>
  %l = graph.reduce sum %s {keepdims = false} : (tensor<2x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
