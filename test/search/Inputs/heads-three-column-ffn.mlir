// heads-fused-gate-up-ffn.mlir with a gated FFN of two 3-column blocks
// (one 6-column matmul cut in two): tp must divide the 4 heads, and only
// a tp dividing 3 splits an op, so no tp > 1 fits (tp-split-reasons.test).
module {
  func.func @main(%arg0: tensor<2x4x8xf32> {graph.name = "x"}) -> (tensor<2x4x8xf32> {graph.name = "y"}) {
    %0 = graph.reshape %arg0 : (tensor<2x4x8xf32>) -> tensor<2x4x4x2xf32>
    %1 = graph.transpose %0 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x4x2xf32>) -> tensor<2x4x4x2xf32>
    %2 = graph.transpose %1 {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x4x4x2xf32>) -> tensor<2x4x2x4xf32>
    %3 = graph.matmul %1, %2 : (tensor<2x4x4x2xf32>, tensor<2x4x2x4xf32>) -> tensor<2x4x4x4xf32>
    %4 = graph.softmax %3 {axis = -1 : i64} : (tensor<2x4x4x4xf32>) -> tensor<2x4x4x4xf32>
    %5 = graph.matmul %4, %1 : (tensor<2x4x4x4xf32>, tensor<2x4x4x2xf32>) -> tensor<2x4x4x2xf32>
    %6 = graph.transpose %5 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x4x2xf32>) -> tensor<2x4x4x2xf32>
    %7 = graph.reshape %6 : (tensor<2x4x4x2xf32>) -> tensor<2x4x8xf32>
    %8 = graph.binary add %arg0, %7 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %9 = graph.weight "w_gu" : tensor<8x6xf32>
    %10 = graph.weight "w_down" : tensor<3x8xf32>
    %11 = graph.matmul %8, %9 : (tensor<2x4x8xf32>, tensor<8x6xf32>) -> tensor<2x4x6xf32>
    %12:2 = graph.split %11 {axis = -1 : i64} : (tensor<2x4x6xf32>) -> (tensor<2x4x3xf32>, tensor<2x4x3xf32>)
    %13 = graph.unary silu %12#0 : (tensor<2x4x3xf32>) -> tensor<2x4x3xf32>
    %14 = graph.binary mul %13, %12#1 : (tensor<2x4x3xf32>, tensor<2x4x3xf32>) -> tensor<2x4x3xf32>
    %15 = graph.matmul %14, %10 : (tensor<2x4x3xf32>, tensor<3x8xf32>) -> tensor<2x4x8xf32>
    %16 = graph.binary add %8, %15 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    return %16 : tensor<2x4x8xf32>
  }
}
