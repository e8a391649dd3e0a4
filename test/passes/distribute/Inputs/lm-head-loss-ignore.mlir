// A column-parallel LM head whose logits feed a softmax cross-entropy with
// an ignore index: vocabulary-parallel, the ignored rows masked out of the
// sum and the count.
func.func @main(%x: tensor<4x8xf32> {graph.name = "x"}, %labels: tensor<4xi64> {graph.name = "labels"}) -> (tensor<f32> {graph.name = "loss"}) {
  %w = graph.weight "head" : tensor<8x16xf32>
  %y = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %l = graph.softmax_cross_entropy mean %y, %labels {ignore_index = -100 : i64} : (tensor<4x16xf32>, tensor<4xi64>) -> tensor<f32>
  return %l : tensor<f32>
}
