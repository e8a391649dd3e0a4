// One matmul whose columns meet a softmax over them: nothing to split.
func.func @main(%x: tensor<4x8xf32> {graph.name = "x"}) -> (tensor<4x16xf32> {graph.name = "y"}) {
  %w = graph.weight "w" : tensor<8x16xf32>
  %y = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %p = graph.softmax %y {axis = -1 : i64} : (tensor<4x16xf32>) -> tensor<4x16xf32>
  return %p : tensor<4x16xf32>
}
