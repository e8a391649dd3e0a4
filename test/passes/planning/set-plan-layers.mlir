// Layer annotations another tool wrote must cover the function in program
// order; a gap is an error on the op.
// RUN: not dist-opt %s --dist-attach-cluster="cluster=dgx-a100-80gb" --dist-set-plan="plan=dp=8 batch=8" 2>&1 | FileCheck %s --check-prefix=GAP
// GAP: error: 'graph.unary' op has 'dist.layer' = 2 after layer 0; layers must be numbered from 0 in program order without gaps (re-run dist-annotate-layers)
module {
  func.func @main(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
    %w1 = graph.weight "w1" : tensor<16x16xf32>
    %h = graph.matmul %x, %w1 {dist.layer = 0 : i64} : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
    %r = graph.unary relu %h {dist.layer = 2 : i64} : (tensor<4x16xf32>) -> tensor<4x16xf32>
    return %r : tensor<4x16xf32>
  }
}
