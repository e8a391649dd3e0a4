// A gated FFN whose gate and up projections are one matmul cut in two
// (Phi-3's gate_up_proj): dist-tensor-parallel splits each 6-column block
// over the tensor ranks (planned-roles.test FGU); a plain FFN after it splits
// at any tp dividing 16.
module {
  func.func @main(%arg0: tensor<2x4x8xf32> {graph.name = "x"}) -> (tensor<2x4x8xf32> {graph.name = "y"}) {
    %0 = graph.weight "w_gu" : tensor<8x12xf32>
    %1 = graph.weight "w_down" : tensor<6x8xf32>
    %8 = graph.weight "w_fc" : tensor<8x16xf32>
    %9 = graph.weight "w_proj" : tensor<16x8xf32>
    %2 = graph.matmul %arg0, %0 : (tensor<2x4x8xf32>, tensor<8x12xf32>) -> tensor<2x4x12xf32>
    %3:2 = graph.split %2 {axis = -1 : i64} : (tensor<2x4x12xf32>) -> (tensor<2x4x6xf32>, tensor<2x4x6xf32>)
    %4 = graph.unary silu %3#0 : (tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
    %5 = graph.binary mul %4, %3#1 : (tensor<2x4x6xf32>, tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
    %6 = graph.matmul %5, %1 : (tensor<2x4x6xf32>, tensor<6x8xf32>) -> tensor<2x4x8xf32>
    %7 = graph.binary add %arg0, %6 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %10 = graph.matmul %7, %8 : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
    %11 = graph.unary relu %10 : (tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
    %12 = graph.matmul %11, %9 : (tensor<2x4x16xf32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
    %13 = graph.binary add %7, %12 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    return %13 : tensor<2x4x8xf32>
  }
}

