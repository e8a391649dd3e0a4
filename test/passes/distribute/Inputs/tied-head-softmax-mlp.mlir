// tied-head-softmax.mlir with an MLP block between the lookup and the head:
// the block splits (a Megatron region), the head's softmax over the
// vocabulary does not, so the tied table, its lookup and the head stay
// whole on every rank.
func.func @main(%ids: tensor<2x4xi64> {graph.name = "ids"}) -> (tensor<2x4x8xf32> {graph.name = "probs"}) {
  %w = graph.weight "wte" : tensor<8x4xf32>
  %w1 = graph.weight "fc1.w" : tensor<4x16xf32>
  %w2 = graph.weight "fc2.w" : tensor<16x4xf32>
  %e = graph.embedding %w, %ids : (tensor<8x4xf32>, tensor<2x4xi64>) -> tensor<2x4x4xf32>
  %h = graph.matmul %e, %w1 : (tensor<2x4x4xf32>, tensor<4x16xf32>) -> tensor<2x4x16xf32>
  %a = graph.unary gelu %h : (tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  %o = graph.matmul %a, %w2 : (tensor<2x4x16xf32>, tensor<16x4xf32>) -> tensor<2x4x4xf32>
  %r = graph.binary add %e, %o : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %t = graph.transpose %w {perm = array<i64: 1, 0>} : (tensor<8x4xf32>) -> tensor<4x8xf32>
  %y = graph.matmul %r, %t : (tensor<2x4x4xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  %p = graph.softmax %y {axis = -1 : i64} : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %p : tensor<2x4x8xf32>
}
