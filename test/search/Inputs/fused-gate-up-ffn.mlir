// One gated FFN whose gate and up projections are one 12-column matmul cut
// into two 6-column blocks (tp-heads.test NOSPLIT): only a tp dividing 6
// splits it.
module {
  func.func @main(%arg0: tensor<2x4x8xf32> {graph.name = "x"}) -> (tensor<2x4x8xf32> {graph.name = "y"}) {
    %0 = graph.weight "w_gu" : tensor<8x12xf32>
    %1 = graph.weight "w_down" : tensor<6x8xf32>
    %2 = graph.matmul %arg0, %0 : (tensor<2x4x8xf32>, tensor<8x12xf32>) -> tensor<2x4x12xf32>
    %3:2 = graph.split %2 {axis = -1 : i64} : (tensor<2x4x12xf32>) -> (tensor<2x4x6xf32>, tensor<2x4x6xf32>)
    %4 = graph.unary silu %3#0 : (tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
    %5 = graph.binary mul %4, %3#1 : (tensor<2x4x6xf32>, tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
    %6 = graph.matmul %5, %1 : (tensor<2x4x6xf32>, tensor<6x8xf32>) -> tensor<2x4x8xf32>
    %7 = graph.binary add %arg0, %6 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    return %7 : tensor<2x4x8xf32>
  }
}

