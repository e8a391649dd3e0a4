module {
  func.func private @stage_acc(%x: tensor<4x8xf32>, %y: tensor<4x16xf32>, %s: tensor<8x16xf32> {dist.accumulates = 0 : i64}) -> tensor<8x16xf32> {
    %g = graph.matmul %x, %y {transpose_lhs = true} : (tensor<4x8xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
    %r = graph.binary add %s, %g : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
    return %r : tensor<8x16xf32>
  }
  func.func @main(%x: tensor<4x8xf32> {graph.name = "x"}, %y: tensor<4x16xf32> {graph.name = "y"}, %s: tensor<8x16xf32> {graph.name = "s"}) -> (tensor<8x16xf32> {graph.name = "r"}) {
    %r = call @stage_acc(%x, %y, %s) : (tensor<4x8xf32>, tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
    return %r : tensor<8x16xf32>
  }
}
