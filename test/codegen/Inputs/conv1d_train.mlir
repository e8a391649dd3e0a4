module {
  func.func @main(%x: tensor<2x3x10xf32> {graph.name = "x"}) -> (tensor<2x4x5xf32> {graph.name = "y"}) {
    %w = graph.weight "w" {file = "conv1d.weights", offset = 0 : i64, size = 144 : i64} : tensor<4x3x3xf32>
    %b = graph.weight "b" {file = "conv1d.weights", offset = 144 : i64, size = 16 : i64} : tensor<4xf32>
    %0 = graph.conv %x, %w, %b {strides = array<i64: 2>, pads = array<i64: 1, 1>, dilations = array<i64: 1>} : (tensor<2x3x10xf32>, tensor<4x3x3xf32>, tensor<4xf32>) -> tensor<2x4x5xf32>
    %1 = graph.unary gelu %0 : (tensor<2x4x5xf32>) -> tensor<2x4x5xf32>
    return %1 : tensor<2x4x5xf32>
  }
}
