// A column-parallel LM head whose logits feed a softmax cross-entropy of
// reduction none (a loss per row): not done vocabulary-parallel, the logits
// stay gathered.
func.func @main(%x: tensor<4x8xf32> {graph.name = "x"}, %labels: tensor<4xi64> {graph.name = "labels"}) -> (tensor<4xf32> {graph.name = "loss"}) {
  %w = graph.weight "head" : tensor<8x16xf32>
  %y = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %l = graph.softmax_cross_entropy none %y, %labels : (tensor<4x16xf32>, tensor<4xi64>) -> tensor<4xf32>
  return %l : tensor<4xf32>
}
