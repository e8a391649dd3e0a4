func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = dist.stage 0 on #dist.mesh<shape = [1], devices = [0]> (%x) : (tensor<4xf32>) -> tensor<4xf32> {
    dist.yield %a : tensor<4xf32>
  }
  %1 = dist.stage 1 on #dist.mesh<shape = [1], devices = [1]> (%0) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    dist.yield %a : tensor<4xf32>
  ^bb0(%b: tensor<4xf32>):
  }
  return %1 : tensor<4xf32>
}
