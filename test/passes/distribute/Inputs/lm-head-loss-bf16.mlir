// A column-parallel LM head whose bf16 logits feed a softmax cross-entropy
// computed in bf16 itself (no cast to f32 before it): its logits are
// gathered whole, not vocabulary-parallel.
func.func @main(%x: tensor<4x8xbf16> {graph.name = "x"}, %labels: tensor<4xi64> {graph.name = "labels"}) -> (tensor<bf16> {graph.name = "loss"}) {
  %w = graph.weight "head" : tensor<8x16xbf16>
  %y = graph.matmul %x, %w : (tensor<4x8xbf16>, tensor<8x16xbf16>) -> tensor<4x16xbf16>
  %l = graph.softmax_cross_entropy mean %y, %labels : (tensor<4x16xbf16>, tensor<4xi64>) -> tensor<bf16>
  return %l : tensor<bf16>
}
