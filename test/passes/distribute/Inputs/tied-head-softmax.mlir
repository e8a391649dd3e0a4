// A head tied to the embedding whose logits meet a softmax over the
// vocabulary: its region cannot be split, so the table stays whole.
func.func @main(%ids: tensor<2x4xi64> {graph.name = "ids"}) -> (tensor<2x4x8xf32> {graph.name = "probs"}) {
  %w = graph.weight "wte" : tensor<8x4xf32>
  %e = graph.embedding %w, %ids : (tensor<8x4xf32>, tensor<2x4xi64>) -> tensor<2x4x4xf32>
  %t = graph.transpose %w {perm = array<i64: 1, 0>} : (tensor<8x4xf32>) -> tensor<4x8xf32>
  %y = graph.matmul %e, %t : (tensor<2x4x4xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  %p = graph.softmax %y {axis = -1 : i64} : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %p : tensor<2x4x8xf32>
}
