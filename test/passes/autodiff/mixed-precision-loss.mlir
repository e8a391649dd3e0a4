// RUN: dist-opt %s --split-input-file --dist-autodiff="optimizer=sgd lr=0.1 mixed-precision=bf16" | FileCheck %s --enable-var-scope

// A loss in the model under mixed precision computes in f32, as the loss
// that loss= adds: a softmax cross-entropy reads the f32 weight itself
// (its 16-bit cast, read by nothing else, is not left behind) and its f32
// gradient goes to the update with no rounding.
// CHECK-LABEL: func.func @train_step(
// CHECK: %[[W:.*]] = graph.weight "table" {{.*}} : tensor<4x16xf32>
// CHECK-NOT: graph.cast %[[W]]
// CHECK: %[[LOSS:.*]] = graph.softmax_cross_entropy mean %[[W]], %{{.*}} : (tensor<4x16xf32>, tensor<4xi64>) -> tensor<f32>
// CHECK: %[[G:.*]] = graph.softmax_cross_entropy_grad mean %[[W]], {{.*}} -> tensor<4x16xf32>
// CHECK-NOT: bf16
// CHECK: graph.sgd_update %[[W]], %[[G]], {{.*}} : (tensor<4x16xf32>, tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
// CHECK: return %[[LOSS]],
func.func @main(%labels: tensor<4xi64> {graph.name = "labels"}) -> (tensor<f32> {graph.name = "loss"}) {
  %w = graph.weight "table" : tensor<4x16xf32>
  %l = graph.softmax_cross_entropy mean %w, %labels : (tensor<4x16xf32>, tensor<4xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Ops marked graph.keep_f32 (as dist-tensor-parallel marks the
// vocabulary-parallel loss it builds) stay f32 and read one f32 cast of a
// 16-bit value; an op outside them reads one 16-bit cast of their result.
// CHECK-LABEL: func.func @train_step(
// CHECK: %[[Y:.*]] = graph.matmul {{.*}} -> tensor<4x16xbf16>
// CHECK-NEXT: %[[WIDE:.*]] = graph.cast %[[Y]] {{.*}} : (tensor<4x16xbf16>) -> tensor<4x16xf32>
// CHECK-NEXT: %[[E:.*]] = graph.unary exp %[[WIDE]] {{{.*}}graph.keep_f32{{.*}}} : (tensor<4x16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT: %[[HALF:.*]] = graph.cast %[[E]] {{.*}} : (tensor<4x16xf32>) -> tensor<4x16xbf16>
// CHECK-NEXT: %[[S:.*]] = graph.binary sub %[[WIDE]], %[[E]] {{{.*}}graph.keep_f32{{.*}}} : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
// CHECK: graph.binary mul %[[HALF]], %[[HALF]] {{.*}} : (tensor<4x16xbf16>, tensor<4x16xbf16>) -> tensor<4x16xbf16>
// CHECK: graph.reduce mean %[[S]] {{{.*}}graph.keep_f32{{.*}}} : (tensor<4x16xf32>) -> tensor<f32>
func.func @main(%x: tensor<4x8xf32> {graph.name = "x"}) -> (tensor<f32> {graph.name = "loss"}, tensor<4x16xf32> {graph.name = "square"}) {
  %w = graph.weight "head" : tensor<8x16xf32>
  %y = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %e = graph.unary exp %y {graph.keep_f32} : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %s = graph.binary sub %y, %e {graph.keep_f32} : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %q = graph.binary mul %e, %e : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %l = graph.reduce mean %s {axes = array<i64>, keepdims = false, graph.keep_f32} : (tensor<4x16xf32>) -> tensor<f32>
  return %l, %q : tensor<f32>, tensor<4x16xf32>
}
