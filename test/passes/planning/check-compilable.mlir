// RUN: dist-opt %s -split-input-file -verify-diagnostics --dist-check-compilable | FileCheck %s

// An op without a lowering: the warning, at that op, says the plan that
// follows is a prediction only and why. The module is left as it is.
// CHECK-LABEL: func.func @main
// CHECK: graph.opaque "NonMaxSuppression"
func.func @main(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
  // expected-warning @+1 {{dist-compile cannot build programs for this model yet, so the plan below is a prediction only: dist-compile: graph.opaque 'NonMaxSuppression' has no lowering: ONNX 'NonMaxSuppression' is not supported yet}}
  %0 = graph.opaque "NonMaxSuppression"(%x) : (tensor<1x4xf32>) -> tensor<1x4xf32>
  return %0 : tensor<1x4xf32>
}

// -----

// Every op lowers: no warning (-verify-diagnostics fails on an unexpected
// one).
// CHECK-LABEL: func.func @main
// CHECK-NEXT: graph.unary relu
func.func @main(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
  %0 = graph.unary relu %x : (tensor<1x4xf32>) -> tensor<1x4xf32>
  return %0 : tensor<1x4xf32>
}
