// A column-parallel LM head on one token: its logits [1, 1, 16] are
// gathered along their last dimension itself (every one before it is 1).
func.func @main(%x: tensor<1x1x8xf32> {graph.name = "x"}) -> (tensor<1x1x16xf32> {graph.name = "logits"}) {
  %w = graph.weight "head" : tensor<8x16xf32>
  %y = graph.matmul %x, %w : (tensor<1x1x8xf32>, tensor<8x16xf32>) -> tensor<1x1x16xf32>
  return %y : tensor<1x1x16xf32>
}
