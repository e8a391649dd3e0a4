// RUN: dist-opt %s --dist-annotate-layers | FileCheck %s --enable-var-scope
// RUN: dist-opt %s --dist-annotate-layers --dist-annotate-layers | FileCheck %s --enable-var-scope
// RUN: dist-opt %s --dist-annotate-layers="print=true" -o /dev/null | FileCheck %s --check-prefix=PRINT

// Two matmul blocks: the cut points are where one activation is live, so
// each matmul starts a layer and its bias and activation belong to it. The
// first matmul of a block is column-parallel (split output), the second
// row-parallel (it reads the split activation); the ops between them work
// on split values. Running the pass twice gives the same annotations.
// CHECK-LABEL: func.func @main
// CHECK: graph.weight "w1"
// CHECK-NOT: dist.layer
// CHECK: graph.matmul {{.*}}{dist.layer = 0 : i64, dist.tp = #dist.tp<column>}
// CHECK-NEXT: graph.unary relu {{.*}}{dist.layer = 0 : i64, dist.tp = #dist.tp<split>}
// CHECK-NEXT: graph.matmul {{.*}}{dist.layer = 1 : i64, dist.tp = #dist.tp<row>}
// CHECK-NEXT: graph.unary tanh {{.*}}{dist.layer = 1 : i64, dist.tp = #dist.tp<replicated>}
// CHECK-NEXT: return

// PRINT: model 'main': 2 layers, 0.000B parameters
// PRINT-NEXT: layer0 (
// PRINT-NEXT: layer1 (
module {
  func.func @main(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
    %w1 = graph.weight "w1" : tensor<16x64xf32>
    %w2 = graph.weight "w2" : tensor<64x16xf32>
    %h = graph.matmul %x, %w1 : (tensor<4x16xf32>, tensor<16x64xf32>) -> tensor<4x64xf32>
    %r = graph.unary relu %h : (tensor<4x64xf32>) -> tensor<4x64xf32>
    %y = graph.matmul %r, %w2 : (tensor<4x64xf32>, tensor<64x16xf32>) -> tensor<4x16xf32>
    %t = graph.unary tanh %y : (tensor<4x16xf32>) -> tensor<4x16xf32>
    return %t : tensor<4x16xf32>
  }
}
