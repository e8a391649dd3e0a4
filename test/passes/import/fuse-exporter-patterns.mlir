// RUN: dist-opt %s --split-input-file --dist-fuse-exporter-patterns | FileCheck %s --enable-var-scope

// LayerNorm with its bias add: one graph.layer_norm; the chain and its
// constants are gone.
// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME: (%[[X:.*]]: tensor<2x8xf32>, %[[G:.*]]: tensor<8xf32>, %[[B:.*]]: tensor<8xf32>)
// CHECK-NEXT: %[[LN:.*]] = graph.layer_norm %[[X]], %[[G]], %[[B]] {epsilon = 9.9999997473787516E-6 : f64}
// CHECK-NEXT: return %[[LN]]
func.func @layer_norm(%x: tensor<2x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<2x8xf32> {
  %two = graph.constant dense<2.0> : tensor<f32>
  %eps = graph.constant dense<1.0e-5> : tensor<f32>
  %m = graph.reduce mean %x {axes = array<i64: -1>} : (tensor<2x8xf32>) -> tensor<2x1xf32>
  %d = graph.binary sub %x, %m : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  %sq = graph.binary pow %d, %two : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %v = graph.reduce mean %sq {axes = array<i64: -1>} : (tensor<2x8xf32>) -> tensor<2x1xf32>
  %ve = graph.binary add %v, %eps : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %s = graph.unary sqrt %ve : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %n = graph.binary div %d, %s : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  %y = graph.binary mul %n, %g : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %z = graph.binary add %y, %b : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return %z : tensor<2x8xf32>
}

// -----

// RMSNorm spelled x * (1 / sqrt(mean(x*x) + eps)) * g.
// CHECK-LABEL: func.func @rms_norm
// CHECK-SAME: (%[[X:.*]]: tensor<2x8xf32>, %[[G:.*]]: tensor<8xf32>)
// CHECK-NEXT: %[[R:.*]] = graph.rms_norm %[[X]], %[[G]] {epsilon = 9.9999999747524271E-7 : f64}
// CHECK-NEXT: return %[[R]]
func.func @rms_norm(%x: tensor<2x8xf32>, %g: tensor<8xf32>) -> tensor<2x8xf32> {
  %one = graph.constant dense<1.0> : tensor<f32>
  %eps = graph.constant dense<1.0e-6> : tensor<f32>
  %sq = graph.binary mul %x, %x : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %v = graph.reduce mean %sq {axes = array<i64: 1>} : (tensor<2x8xf32>) -> tensor<2x1xf32>
  %ve = graph.binary add %eps, %v : (tensor<f32>, tensor<2x1xf32>) -> tensor<2x1xf32>
  %s = graph.unary sqrt %ve : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %r = graph.binary div %one, %s : (tensor<f32>, tensor<2x1xf32>) -> tensor<2x1xf32>
  %n = graph.binary mul %x, %r : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  %y = graph.binary mul %g, %n : (tensor<8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// GELU (erf), its tanh approximation, and SiLU, each in one operand order.
// CHECK-LABEL: func.func @activations
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT: %[[A:.*]] = graph.unary gelu %[[X]]
// CHECK-NEXT: %[[B:.*]] = graph.unary gelu_tanh %[[A]]
// CHECK-NEXT: %[[C:.*]] = graph.unary silu %[[B]]
// CHECK-NEXT: return %[[C]]
func.func @activations(%x: tensor<4xf32>) -> tensor<4xf32> {
  %half = graph.constant dense<0.5> : tensor<f32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %sqrt2 = graph.constant dense<1.41421354> : tensor<f32>
  %d = graph.binary div %x, %sqrt2 : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %e = graph.unary erf %d : (tensor<4xf32>) -> tensor<4xf32>
  %e1 = graph.binary add %e, %one : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %xe = graph.binary mul %x, %e1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %a = graph.binary mul %xe, %half : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>

  %three = graph.constant dense<3.0> : tensor<f32>
  %c = graph.constant dense<0.044715> : tensor<f32>
  %k = graph.constant dense<0.797884583> : tensor<f32>
  %cube = graph.binary pow %a, %three : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %cc = graph.binary mul %c, %cube : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  %in = graph.binary add %a, %cc : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %kin = graph.binary mul %in, %k : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %t = graph.unary tanh %kin : (tensor<4xf32>) -> tensor<4xf32>
  %t1 = graph.binary add %one, %t : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  %ha = graph.binary mul %half, %a : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  %b = graph.binary mul %ha, %t1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>

  %sg = graph.unary sigmoid %b : (tensor<4xf32>) -> tensor<4xf32>
  %s = graph.binary mul %sg, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

// Near misses stay as they are: GELU with 0.6 instead of 0.5, x * sigmoid(y)
// of another value, and a mean over the first axis (not a LayerNorm).
// CHECK-LABEL: func.func @near_misses
// CHECK-NOT: graph.unary gelu
// CHECK-NOT: graph.unary silu
// CHECK-NOT: graph.layer_norm
// CHECK-NOT: graph.rms_norm
// CHECK: graph.unary erf
// CHECK: graph.unary sigmoid
// CHECK: graph.reduce mean
// CHECK: return
func.func @near_misses(%x: tensor<4xf32>, %y: tensor<4xf32>, %m: tensor<2x8xf32>, %g: tensor<8xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<2x8xf32>) {
  %h = graph.constant dense<0.6> : tensor<f32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %sqrt2 = graph.constant dense<1.41421354> : tensor<f32>
  %d = graph.binary div %x, %sqrt2 : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %e = graph.unary erf %d : (tensor<4xf32>) -> tensor<4xf32>
  %e1 = graph.binary add %e, %one : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %xe = graph.binary mul %x, %e1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %a = graph.binary mul %xe, %h : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>

  %sg = graph.unary sigmoid %y : (tensor<4xf32>) -> tensor<4xf32>
  %s = graph.binary mul %x, %sg : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>

  %two = graph.constant dense<2.0> : tensor<f32>
  %eps = graph.constant dense<1.0e-5> : tensor<f32>
  %mu = graph.reduce mean %m {axes = array<i64: 0>} : (tensor<2x8xf32>) -> tensor<1x8xf32>
  %c = graph.binary sub %m, %mu : (tensor<2x8xf32>, tensor<1x8xf32>) -> tensor<2x8xf32>
  %sq = graph.binary pow %c, %two : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %v = graph.reduce mean %sq {axes = array<i64: 0>} : (tensor<2x8xf32>) -> tensor<1x8xf32>
  %ve = graph.binary add %v, %eps : (tensor<1x8xf32>, tensor<f32>) -> tensor<1x8xf32>
  %st = graph.unary sqrt %ve : (tensor<1x8xf32>) -> tensor<1x8xf32>
  %n = graph.binary div %c, %st : (tensor<2x8xf32>, tensor<1x8xf32>) -> tensor<2x8xf32>
  %ln = graph.binary mul %n, %g : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return %a, %s, %ln : tensor<4xf32>, tensor<4xf32>, tensor<2x8xf32>
}

// -----

// What an exporter leaves dead goes: an unused weight read and a chain
// nobody reads. An op with side effects stays although unused.
// CHECK-LABEL: func.func @dead
// CHECK-NOT: graph.weight
// CHECK-NOT: graph.unary
// CHECK: graph.opaque "Print"
// CHECK-NOT: graph.unary
// CHECK: return
func.func @dead(%x: tensor<4xf32>) -> tensor<4xf32> {
  %w = graph.weight "unused" : tensor<4xf32>
  %r = graph.unary relu %w : (tensor<4xf32>) -> tensor<4xf32>
  %e = graph.unary exp %r : (tensor<4xf32>) -> tensor<4xf32>
  %p = graph.opaque "Print"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %x : tensor<4xf32>
}
