// RUN: dist-opt %s -split-input-file --dist-outline-stage-functions -verify-diagnostics | FileCheck %s --enable-var-scope
// RUN: dist-opt %s -split-input-file --dist-outline-stage-functions | dist-opt -split-input-file | FileCheck %s --enable-var-scope

// Each region becomes a private function carrying its virtual stage; the
// region becomes a call, so @main keeps one micro-batch's dataflow.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT: %[[A:.*]]:2 = call @main_stage0(%[[X]]) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
// CHECK-NEXT: %[[B:.*]] = call @main_stage1(%[[A]]#0, %[[A]]#1) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: return %[[B]]
// CHECK: func.func private @main_stage0(%[[P:.*]]: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) attributes {dist.virtual_stage = 0 : i64} {
// CHECK-NEXT: %[[R:.*]] = graph.unary relu %[[P]]
// CHECK-NEXT: return %[[R]], %[[P]]
// CHECK: func.func private @main_stage1(%[[Q0:.*]]: tensor<4xf32>, %[[Q1:.*]]: tensor<4xf32>) -> tensor<4xf32> attributes {dist.virtual_stage = 1 : i64} {
// CHECK-NEXT: %[[S:.*]] = graph.binary add %[[Q0]], %[[Q1]]
// CHECK-NEXT: return %[[S]]
module attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 2, mbs = 1, microbatches = 1, global_batch = 1, schedule = "gpipe", stages = [0, 1]>} {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %0:2 = dist.stage 0 on #dist.mesh<shape = [1, 1], devices = [0]> (%x) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
    ^bb0(%a: tensor<4xf32>):
      %r = graph.unary relu %a : (tensor<4xf32>) -> tensor<4xf32>
      dist.yield %r, %a : tensor<4xf32>, tensor<4xf32>
    }
    %1 = dist.stage 1 on #dist.mesh<shape = [1, 1], devices = [1]> (%0#0, %0#1) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> {
    ^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>):
      %s = graph.binary add %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      dist.yield %s : tensor<4xf32>
    }
    return %1 : tensor<4xf32>
  }
}
