// A head tied to the embedding that reads the table through the matmul's
// transpose_rhs (no graph.transpose): [rows, h] x [V, h]^T.
func.func @main(%ids: tensor<2x4xi64> {graph.name = "ids"}) -> (tensor<2x4x8xf32> {graph.name = "logits"}) {
  %w = graph.weight "wte" : tensor<8x4xf32>
  %e = graph.embedding %w, %ids : (tensor<8x4xf32>, tensor<2x4xi64>) -> tensor<2x4x4xf32>
  %h = graph.unary tanh %e : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %y = graph.matmul %h, %w {transpose_rhs = true} : (tensor<2x4x4xf32>, tensor<8x4xf32>) -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}
