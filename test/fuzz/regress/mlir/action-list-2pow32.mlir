

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> attributes {dist.action_list = 4294967296 : i64} {
  %y = graph.unary relu %x {dist.action = "F0.0"} : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}


