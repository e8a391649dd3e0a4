// A column-parallel LM head whose logits feed the function's own softmax
// cross-entropy (vocabulary-parallel under tp).
func.func @main(%x: tensor<4x8xf32> {graph.name = "x"}, %labels: tensor<4xi64> {graph.name = "labels"}) -> (tensor<f32> {graph.name = "loss"}) {
  %w = graph.weight "head" : tensor<8x16xf32>
  %y = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %l = graph.softmax_cross_entropy mean %y, %labels : (tensor<4x16xf32>, tensor<4xi64>) -> tensor<f32>
  return %l : tensor<f32>
}
