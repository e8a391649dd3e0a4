// RUN: not dist-opt %s --dist-outline-stages --mlir-print-ir-after-failure 2>&1 | FileCheck %s
// A failure leaves the IR as it was: @good, checked first and valid, is not
// outlined either, because every function is checked before any rewrite.

// CHECK: error: 'graph.unary' op in pipeline stage 0 uses a value that stage 1 produces
// CHECK: IR Dump After OutlineStagesPass Failed
// CHECK-LABEL: func.func @good
// CHECK-NOT: dist.stage {{[0-9]}}
// CHECK: graph.unary relu %{{.*}} {dist.virtual_stage = 0 : i64}
// CHECK: graph.unary tanh %{{.*}} {dist.virtual_stage = 1 : i64}
// CHECK-LABEL: func.func @bad
// CHECK-NOT: dist.stage {{[0-9]}}
// CHECK: graph.unary relu %{{.*}} {dist.virtual_stage = 1 : i64}
// CHECK: graph.unary tanh %{{.*}} {dist.virtual_stage = 0 : i64}
module attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 2, mbs = 1, microbatches = 1, global_batch = 1, schedule = "1f1b", stages = [0, 1]>} {
  func.func @good(%x: tensor<4xf32>) -> tensor<4xf32> {
    %a = graph.unary relu %x {dist.virtual_stage = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    %b = graph.unary tanh %a {dist.virtual_stage = 1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    return %b : tensor<4xf32>
  }
  func.func @bad(%x: tensor<4xf32>) -> tensor<4xf32> {
    %a = graph.unary relu %x {dist.virtual_stage = 1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    %b = graph.unary tanh %a {dist.virtual_stage = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    return %b : tensor<4xf32>
  }
}
