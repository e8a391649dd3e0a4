// RUN: not dist-opt %s --dist-outline-stages --mlir-print-ir-after-failure 2>&1 | FileCheck %s
// A failure leaves the IR as it was: @good, checked first and valid, is not
// outlined either, because every function is checked before any rewrite.

// CHECK: error: 'graph.unary' op in pipeline stage 0 uses a value that stage 1 produces
// CHECK: IR Dump After OutlineStagesPass Failed
// CHECK-LABEL: func.func @good
// CHECK-NOT: dist.stage {{[0-9]}}
// CHECK: graph.unary relu %{{.*}} {dist.stage = 0 : i64}
// CHECK: graph.unary tanh %{{.*}} {dist.stage = 1 : i64}
// CHECK-LABEL: func.func @bad
// CHECK-NOT: dist.stage {{[0-9]}}
// CHECK: graph.unary relu %{{.*}} {dist.stage = 1 : i64}
// CHECK: graph.unary tanh %{{.*}} {dist.stage = 0 : i64}
module attributes {dist.plan = {dp = 1 : i64, tp = 1 : i64, pp = 2 : i64}} {
  func.func @good(%x: tensor<4xf32>) -> tensor<4xf32> {
    %a = graph.unary relu %x {dist.stage = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    %b = graph.unary tanh %a {dist.stage = 1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    return %b : tensor<4xf32>
  }
  func.func @bad(%x: tensor<4xf32>) -> tensor<4xf32> {
    %a = graph.unary relu %x {dist.stage = 1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    %b = graph.unary tanh %a {dist.stage = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    return %b : tensor<4xf32>
  }
}
