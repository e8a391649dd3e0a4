// A column-parallel LM head whose logits feed a softmax cross-entropy of
// reduction none (a loss per row, ignore index -100), weighted per row and
// summed: vocabulary-parallel, the per-row losses whole on every rank.
func.func @main(%x: tensor<4x8xf32> {graph.name = "x"}, %labels: tensor<4xi64> {graph.name = "labels"}) -> (tensor<f32> {graph.name = "loss"}) {
  %w = graph.weight "head" : tensor<8x16xf32>
  %y = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %l = graph.softmax_cross_entropy none %y, %labels {ignore_index = -100 : i64} : (tensor<4x16xf32>, tensor<4xi64>) -> tensor<4xf32>
  %c = graph.constant dense<[1.0, 2.0, 0.5, 3.0]> : tensor<4xf32>
  %p = graph.binary mul %l, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %s = graph.reduce sum %p {axes = array<i64>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
  return %s : tensor<f32>
}
