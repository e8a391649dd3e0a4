module {
  func.func @main(%x: tensor<3x4x70xf32> {graph.name = "x"}) -> (tensor<70xf32> {graph.name = "sum"}, tensor<1x1x70xf32> {graph.name = "l2"}, tensor<3x70xf32> {graph.name = "mean"}, tensor<3x4xf32> {graph.name = "last"}, tensor<3x70xi64> {graph.name = "argmax_last"}) {
    %0 = graph.reduce sum %x {axes = array<i64: 0, 1>, keepdims = false} : (tensor<3x4x70xf32>) -> tensor<70xf32>
    %1 = graph.reduce l2 %x {axes = array<i64: 0, 1>, keepdims = true} : (tensor<3x4x70xf32>) -> tensor<1x1x70xf32>
    %2 = graph.reduce mean %x {axes = array<i64: 1>, keepdims = false} : (tensor<3x4x70xf32>) -> tensor<3x70xf32>
    %3 = graph.reduce sum %x {axes = array<i64: 2>, keepdims = false} : (tensor<3x4x70xf32>) -> tensor<3x4xf32>
    %4 = graph.reduce arg_max %x {axes = array<i64: 1>, keepdims = false, select_last_index = true} : (tensor<3x4x70xf32>) -> tensor<3x70xi64>
    return %0, %1, %2, %3, %4 : tensor<70xf32>, tensor<1x1x70xf32>, tensor<3x70xf32>, tensor<3x4xf32>, tensor<3x70xi64>
  }
}
