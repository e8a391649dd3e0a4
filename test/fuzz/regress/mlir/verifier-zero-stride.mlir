// Verifiers that divided by a zero stride before checking it (SIGFPE).
func.func @conv_input(%dy: tensor<2x4x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<2x3x8x8xf32> {
  %0 = graph.conv_grad_input %dy, %w {strides = array<i64: 0, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<2x4x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x3x8x8xf32>
  return %0 : tensor<2x3x8x8xf32>
}
// -----
func.func @conv_weight(%x: tensor<2x3x8x8xf32>, %dy: tensor<2x4x8x8xf32>) -> tensor<4x3x3x3xf32> {
  %0 = graph.conv_grad_weight %x, %dy {strides = array<i64: 1, 0>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<2x3x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<4x3x3x3xf32>
  return %0 : tensor<4x3x3x3xf32>
}
// -----
func.func @pool(%x: tensor<1x2x4x4xf32>, %dy: tensor<1x2x2x2xf32>) -> tensor<1x2x4x4xf32> {
  %0 = graph.pool_grad max %x, %dy {kernel = array<i64: 2, 2>, strides = array<i64: 0, 0>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 0, 1>} : (tensor<1x2x4x4xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x4x4xf32>
  return %0 : tensor<1x2x4x4xf32>
}
