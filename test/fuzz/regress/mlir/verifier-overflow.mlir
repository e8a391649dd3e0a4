// Size arithmetic UBSan reported as signed overflow.
func.func @pad(%a: tensor<4xf32>) {
  %0 = graph.pad constant %a {pads = array<i64: 9223372036854775807, 9223372036854775807>} : (tensor<4xf32>) -> tensor<4xf32>
  return
}
// -----
func.func @slice(%a: tensor<4xf32>) {
  %0 = graph.slice %a {axes = array<i64: 0>, starts = array<i64: 3>, ends = array<i64: -9223372036854775808>, steps = array<i64: -9223372036854775808>} : (tensor<4xf32>) -> tensor<4xf32>
  return
}
// -----
func.func @conv(%x: tensor<1x2x8x8xf32>, %w: tensor<2x2x3x3xf32>) {
  %0 = graph.conv %x, %w {strides = array<i64: 9223372036854775807, 9223372036854775807>, pads = array<i64: 9223372036854775807, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x2x8x8xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x6x6xf32>
  return
}
// -----
func.func @weight() -> tensor<4611686018427387904x4611686018427387904xf32> {
  %0 = graph.weight "w" {file = "w.bin", offset = 0 : i64, size = 16 : i64} : tensor<4611686018427387904x4611686018427387904xf32>
  return %0 : tensor<4611686018427387904x4611686018427387904xf32>
}
