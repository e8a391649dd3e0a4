// Graphs of element types without a cost-model dtype (complex, index): the
// planner counts them by storage size (issue 12: it once crashed on them).
func.func @complex(%a: tensor<4x8xcomplex<f32>>, %w: tensor<8x8xcomplex<f32>>) -> tensor<4x8xcomplex<f32>> {
  %0 = graph.matmul %a, %w : (tensor<4x8xcomplex<f32>>, tensor<8x8xcomplex<f32>>) -> tensor<4x8xcomplex<f32>>
  return %0 : tensor<4x8xcomplex<f32>>
}
