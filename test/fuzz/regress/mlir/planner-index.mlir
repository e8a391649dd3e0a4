func.func @index(%a: tensor<4x8xindex>, %w: tensor<8x8xindex>) -> tensor<4x8xindex> {
  %0 = graph.matmul %a, %w : (tensor<4x8xindex>, tensor<8x8xindex>) -> tensor<4x8xindex>
  return %0 : tensor<4x8xindex>
}
