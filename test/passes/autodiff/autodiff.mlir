// RUN: dist-opt %s --split-input-file --dist-autodiff="loss=softmax-cross-entropy:labels" | FileCheck %s --enable-var-scope

// An MLP: one matmul for dX and one for dW per layer, bias gradients by
// reduction, no input gradient for the function's own input.

// CHECK-LABEL: func.func @main(
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[X:[^:]*]]: tensor<4x8xf32> {graph.name = "x"}, %[[L:[^:]*]]: tensor<4xi64> {graph.name = "labels"})
// CHECK-SAME: -> (tensor<f32> {graph.output = "loss"}, tensor<16x8xf32> {graph.update = "fc1.w"}, tensor<16xf32> {graph.update = "fc1.b"}, tensor<3x16xf32> {graph.update = "fc2.w"}, tensor<f32> {graph.update = "step"})
// CHECK-SAME: graph.train = {{{.*}}optimizer = "sgd", role = "step"}
// CHECK: %[[W1:.*]] = graph.weight "fc1.w" {graph.phase = "forward"}
// CHECK: %[[B1:.*]] = graph.weight "fc1.b"
// CHECK: %[[W2:.*]] = graph.weight "fc2.w"
// CHECK: %[[H:.*]] = graph.matmul %[[X]], %[[W1]], %[[B1]]
// CHECK: %[[A:.*]] = graph.unary relu %[[H]]
// CHECK: %[[Y:.*]] = graph.matmul %[[A]], %[[W2]] {graph.phase = "forward", transpose_rhs = true}
// CHECK: %[[LOSS:.*]] = graph.softmax_cross_entropy mean %[[Y]], %[[L]] {graph.phase = "forward"}
// CHECK: %[[SEED:.*]] = graph.constant dense<1.000000e+00> : tensor<f32> {graph.phase = "backward_input"}
// CHECK: %[[DY:.*]] = graph.softmax_cross_entropy_grad mean %[[Y]], %[[L]], %[[SEED]] {graph.phase = "backward_input"}
// CHECK: %[[DA:.*]] = graph.matmul %[[DY]], %[[W2]] {graph.phase = "backward_input"} : (tensor<4x3xf32>, tensor<3x16xf32>) -> tensor<4x16xf32>
// CHECK: %[[DW2:.*]] = graph.matmul %[[DY]], %[[A]] {graph.phase = "backward_weight", transpose_lhs = true} : (tensor<4x3xf32>, tensor<4x16xf32>) -> tensor<3x16xf32>
// CHECK: %[[DH:.*]] = graph.unary_grad relu %[[H]], %[[DA]] {graph.phase = "backward_input"}
// CHECK-NOT: graph.matmul %[[DH]], %[[W1]]
// CHECK: %[[DW1:.*]] = graph.matmul %[[DH]], %[[X]] {graph.phase = "backward_weight", transpose_lhs = true}
// CHECK: %[[DB1S:.*]] = graph.reduce sum %[[DH]] {axes = array<i64: 0>, graph.phase = "backward_weight"}
// CHECK: %[[DB1:.*]] = graph.reshape %[[DB1S]] {graph.phase = "backward_weight"}
// CHECK: %[[STEP:.*]] = graph.state "step" {graph.phase = "optimizer"} : tensor<f32>
// CHECK: %[[NEXT:.*]] = graph.binary add %[[STEP]]
// CHECK: %[[NW1:.*]] = graph.sgd_update %[[W1]], %[[DW1]], %[[NEXT]] {graph.phase = "optimizer", lr = 1.000000e-02 : f64}
// CHECK: %[[NB1:.*]] = graph.sgd_update %[[B1]], %[[DB1]], %[[NEXT]]
// CHECK: %[[NW2:.*]] = graph.sgd_update %[[W2]], %[[DW2]], %[[NEXT]]
// CHECK: return %[[LOSS]], %[[NW1]], %[[NB1]], %[[NW2]], %[[NEXT]]
func.func @main(%x: tensor<4x8xf32> {graph.name = "x"}) -> tensor<4x3xf32> {
  %w1 = graph.weight "fc1.w" : tensor<16x8xf32>
  %b1 = graph.weight "fc1.b" : tensor<16xf32>
  %w2 = graph.weight "fc2.w" : tensor<3x16xf32>
  %h = graph.matmul %x, %w1, %b1 {transpose_rhs = true} : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %a = graph.unary relu %h : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %y = graph.matmul %a, %w2 {transpose_rhs = true} : (tensor<4x16xf32>, tensor<3x16xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

// -----

// A conv net: conv_grad_input / conv_grad_weight stay separate, the bias
// gradient is a reduction over batch and space, pooling and batch norm have
// their gradient ops, and the inference-form batch norm trains with batch
// statistics whose running values are written back.

// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: tensor<8xf32> {graph.update = "bn.mean"}, tensor<8xf32> {graph.update = "bn.var"})
// CHECK: %[[X:.*]] = graph.weight "conv.w"
// CHECK: %[[C:.*]] = graph.conv %{{.*}}, %[[X]], %[[CB:[^ ]*]]
// CHECK: %[[BN:.*]], %[[RS:.*]]:2 = graph.batch_norm %[[C]], {{.*}} {graph.phase = "forward", training}
// CHECK: %[[R:.*]] = graph.unary relu %[[BN]]
// CHECK: %[[P:.*]] = graph.pool max %[[R]]
// CHECK: graph.pool_grad max %[[R]], %{{.*}} {{{.*}}graph.phase = "backward_input"
// CHECK: graph.unary_grad relu
// CHECK: %[[DC:.*]] = graph.norm_grad %[[C]], %{{.*}}, %{{.*}} {axis = 1 : i64, graph.phase = "backward_input", kind = "batch"}
// CHECK: graph.norm_grad_params %[[C]], %{{.*}} {{{.*}}graph.phase = "backward_weight", kind = "batch"} : {{.*}} -> (tensor<8xf32>, tensor<8xf32>)
// CHECK-NOT: graph.conv_grad_input
// CHECK: graph.conv_grad_weight %{{.*}}, %[[DC]] {dilations = array<i64: 1, 1>, graph.phase = "backward_weight", {{.*}}} : (tensor<2x3x8x8xf32>, tensor<2x8x8x8xf32>) -> tensor<8x3x3x3xf32>
// CHECK: graph.reduce sum %[[DC]] {axes = array<i64: 0, 2, 3>, graph.phase = "backward_weight", keepdims = false} : (tensor<2x8x8x8xf32>) -> tensor<8xf32>
// CHECK: return {{.*}}, %[[RS]]#0, %[[RS]]#1 :
func.func @main(%img: tensor<2x3x8x8xf32>) -> tensor<2x10xf32> {
  %w = graph.weight "conv.w" : tensor<8x3x3x3xf32>
  %b = graph.weight "conv.b" : tensor<8xf32>
  %s = graph.weight "bn.scale" : tensor<8xf32>
  %t = graph.weight "bn.bias" : tensor<8xf32>
  %m = graph.weight "bn.mean" : tensor<8xf32>
  %v = graph.weight "bn.var" : tensor<8xf32>
  %fc = graph.weight "fc.w" : tensor<128x10xf32>
  %c = graph.conv %img, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<2x3x8x8xf32>, tensor<8x3x3x3xf32>, tensor<8xf32>) -> tensor<2x8x8x8xf32>
  %n = graph.batch_norm %c, %s, %t, %m, %v : (tensor<2x8x8x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8x8x8xf32>
  %r = graph.unary relu %n : (tensor<2x8x8x8xf32>) -> tensor<2x8x8x8xf32>
  %p = graph.pool max %r {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<2x8x8x8xf32>) -> tensor<2x8x4x4xf32>
  %f = graph.flatten %p {axis = 1 : i64} : (tensor<2x8x4x4xf32>) -> tensor<2x128xf32>
  %y = graph.matmul %f, %fc : (tensor<2x128xf32>, tensor<128x10xf32>) -> tensor<2x10xf32>
  return %y : tensor<2x10xf32>
}

// -----

// An attention block: layer norm, Q/K/V projections of a 3-D activation
// (weight gradients fold the batch into rows), score matmuls whose two
// operand gradients are both input gradients, a causal mask, softmax.

// CHECK-LABEL: func.func @train_step(
// CHECK: %[[LN:.*]] = graph.layer_norm
// CHECK: %[[Q:.*]] = graph.matmul %[[LN]], %[[WQ:[^ ]*]] {graph.phase = "forward"}
// CHECK: %[[S:.*]] = graph.matmul %[[Q]], %[[K:[^ ]*]] {graph.phase = "forward", transpose_rhs = true}
// CHECK: %[[P:.*]] = graph.softmax %{{.*}} {graph.phase = "forward"}
// CHECK: graph.softmax_grad %[[P]], %{{.*}} {graph.phase = "backward_input"}
// CHECK: graph.matmul %{{.*}}, %[[K]] {graph.phase = "backward_input"} : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
// CHECK: graph.matmul %{{.*}}, %[[Q]] {graph.phase = "backward_input", transpose_lhs = true} : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
// CHECK: graph.reshape %[[LN]] {graph.phase = "backward_weight"} : (tensor<2x4x8xf32>) -> tensor<8x8xf32>
// CHECK: graph.matmul %{{.*}}, %{{.*}} {graph.phase = "backward_weight", transpose_lhs = true} : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
// CHECK: graph.norm_grad %{{.*}} {graph.phase = "backward_input", kind = "layer"}
// CHECK: graph.norm_grad_params %{{.*}} {graph.phase = "backward_weight", kind = "layer"} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
func.func @main(%in: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %win = graph.weight "win" : tensor<8x8xf32>
  %x = graph.matmul %in, %win : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %g = graph.weight "ln.g" : tensor<8xf32>
  %b = graph.weight "ln.b" : tensor<8xf32>
  %wq = graph.weight "wq" : tensor<8x8xf32>
  %wk = graph.weight "wk" : tensor<8x8xf32>
  %wv = graph.weight "wv" : tensor<8x8xf32>
  %mask = graph.constant dense<true> : tensor<4x4xi1>
  %ninf = graph.constant dense<-1.0e+09> : tensor<f32>
  %ln = graph.layer_norm %x, %g, %b {axis = -1 : i64, epsilon = 1.0e-05 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %q = graph.matmul %ln, %wq : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %k = graph.matmul %ln, %wk : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %v = graph.matmul %ln, %wv : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %s = graph.matmul %q, %k {transpose_rhs = true} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x4xf32>
  %tri = graph.trilu %mask {upper = false} : (tensor<4x4xi1>) -> tensor<4x4xi1>
  %sm = graph.where %tri, %s, %ninf : (tensor<4x4xi1>, tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32>
  %p = graph.softmax %sm {axis = -1 : i64} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %o = graph.matmul %p, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %y = graph.binary add %o, %x : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// -----

// A running sum's gradient is the running sum of dy along the same axis
// the other way, with the same exclusive flag.
// CHECK-LABEL: func.func @train_step(
// CHECK: %[[W:.*]] = graph.weight "w"
// CHECK: %[[C:.*]] = graph.cumsum %[[W]] {axis = -1 : i64, exclusive = true, graph.phase = "forward"}
// CHECK: %[[DC:.*]] = graph.matmul %{{.*}}, %{{.*}} {graph.phase = "backward_weight"} : (tensor<4x3xf32>, tensor<3x8xf32>) -> tensor<4x8xf32>
// CHECK: %[[DW:.*]] = graph.cumsum %[[DC]] {axis = -1 : i64, exclusive = true, graph.phase = "backward_weight", reverse = true} : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK: graph.sgd_update %[[W]], %[[DW]]
func.func @main(%x: tensor<4x3xf32> {graph.name = "x"}) -> tensor<4x3xf32> {
  %w = graph.weight "w" : tensor<4x8xf32>
  %w2 = graph.weight "w2" : tensor<3x8xf32>
  %c = graph.cumsum %w {axis = -1 : i64, exclusive = true} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = graph.matmul %c, %w2 {transpose_rhs = true} : (tensor<4x8xf32>, tensor<3x8xf32>) -> tensor<4x3xf32>
  %z = graph.binary add %y, %x : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  return %z : tensor<4x3xf32>
}

// -----

// top_k's values are its input read at the indices: their gradient is
// scatter-added there (elements, along the op's axis); the indices carry
// none, and the scatter reuses the forward's.
// CHECK-LABEL: func.func @train_step(
// CHECK: %[[W:.*]] = graph.weight "w"
// CHECK: %[[V:.*]], %[[I:.*]] = graph.top_k %[[W]] {graph.phase = "forward", k = 3 : i64}
// CHECK: %[[DV:.*]] = graph.matmul %{{.*}}, %{{.*}} {graph.phase = "backward_weight"} : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32>
// CHECK: %[[DW:.*]] = graph.scatter_add %[[I]], %[[DV]] {axis = -1 : i64, elements, graph.phase = "backward_weight"} : (tensor<4x3xi64>, tensor<4x3xf32>) -> tensor<4x8xf32>
// CHECK: graph.sgd_update %[[W]], %[[DW]]
func.func @main(%x: tensor<4x3xf32> {graph.name = "x"}) -> tensor<4x3xf32> {
  %w = graph.weight "w" : tensor<4x8xf32>
  %w2 = graph.weight "w2" : tensor<3x3xf32>
  %v, %i = graph.top_k %w {k = 3 : i64} : (tensor<4x8xf32>) -> (tensor<4x3xf32>, tensor<4x3xi64>)
  %y = graph.matmul %v, %w2 {transpose_rhs = true} : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32>
  %z = graph.binary add %y, %x : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  return %z : tensor<4x3xf32>
}
