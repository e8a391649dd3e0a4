// An MLP with training dropout between its layers.
func.func @main(%x: tensor<4x8xf32> {graph.name = "x"}) -> (tensor<4x4xf32> {graph.name = "y"}) {
  %w1 = graph.weight "w1" : tensor<8x16xf32>
  %w2 = graph.weight "w2" : tensor<16x4xf32>
  %h = graph.matmul %x, %w1 : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %d = graph.dropout %h {ratio = 0.1 : f64} : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %y = graph.matmul %d, %w2 : (tensor<4x16xf32>, tensor<16x4xf32>) -> tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}
