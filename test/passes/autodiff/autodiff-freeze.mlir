// Which weights a training step updates: a `frozen` weight (an ONNX
// Constant) and everything computed from it alone get no gradient;
// freeze= and train-only= select weights by name glob.
// RUN: dist-opt %s --dist-autodiff="optimizer=sgd" | FileCheck %s
// RUN: dist-opt %s --dist-autodiff="optimizer=sgd freeze=b*" | FileCheck %s --check-prefix=FREEZE
// RUN: dist-opt %s --dist-autodiff="optimizer=sgd train-only=w1,b?" | FileCheck %s --check-prefix=ONLY
// RUN: not dist-opt %s --dist-autodiff="optimizer=sgd freeze=w3" 2>&1 | FileCheck %s --check-prefix=NOMATCH
// RUN: not dist-opt %s --dist-autodiff="optimizer=sgd train-only=[w" 2>&1 | FileCheck %s --check-prefix=BADGLOB
// RUN: not dist-opt %s --dist-autodiff="optimizer=sgd train-only=mask" 2>&1 | FileCheck %s --check-prefix=NOTHING

// The updates are the complete list: no mask, nothing computed from it.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (tensor<f32> {graph.output = "loss"}, tensor<4x2xf32> {graph.update = "w1"}, tensor<4xf32> {graph.update = "b1"}, tensor<2x4xf32> {graph.update = "w2"}, tensor<f32> {graph.update = "step"})
// CHECK-SAME: graph.trained = {frozen = {mask = "constant"}, frozen_parameters = 8 : i64, parameters = 20 : i64, tensors = 3 : i64}

// FREEZE-LABEL: func.func @train_step
// FREEZE-SAME: (tensor<f32> {graph.output = "loss"}, tensor<4x2xf32> {graph.update = "w1"}, tensor<2x4xf32> {graph.update = "w2"}, tensor<f32> {graph.update = "step"})
// FREEZE-SAME: graph.trained = {frozen = {b1 = "freeze", mask = "constant"}, frozen_parameters = 12 : i64, parameters = 16 : i64, tensors = 2 : i64}

// ONLY-LABEL: func.func @train_step
// ONLY-SAME: (tensor<f32> {graph.output = "loss"}, tensor<4x2xf32> {graph.update = "w1"}, tensor<4xf32> {graph.update = "b1"}, tensor<f32> {graph.update = "step"})
// ONLY-SAME: graph.trained = {frozen = {mask = "constant", w2 = "train-only"}, frozen_parameters = 16 : i64, parameters = 12 : i64, tensors = 2 : i64}

// NOMATCH: error: dist-autodiff: freeze=w3 names no float weight of the model; the closest name is 'w1'
// BADGLOB: error: dist-autodiff: train-only=[w is not a valid name pattern ({{.*}}); use * and ? wildcards or [abc]
// NOTHING: error: the loss does not depend on any trainable float graph.weight: nothing to train (every weight it reads is frozen

func.func @main(%x: tensor<2x4xf32>) -> tensor<f32> {
  %w1 = graph.weight "w1" : tensor<4x2xf32>
  %b1 = graph.weight "b1" : tensor<4xf32>
  %w2 = graph.weight "w2" : tensor<2x4xf32>
  %mask = graph.weight "mask" {frozen = "constant"} : tensor<2x4xf32>
  %two = graph.constant dense<2.0> : tensor<f32>
  // Computed from a frozen weight and a constant only: not trained either.
  %scaled = graph.binary mul %mask, %two : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %h = graph.matmul %x, %w1 : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x2xf32>
  %y = graph.matmul %h, %w2 : (tensor<2x2xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %yb = graph.binary add %y, %b1 : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %m = graph.binary add %yb, %scaled : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %l = graph.reduce sum %m {keepdims = false} : (tensor<2x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
