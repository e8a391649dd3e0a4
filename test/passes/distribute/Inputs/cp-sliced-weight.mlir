// cp=2 (context-parallel.test): a [1, 8, 4] weight added to the tokens is
// sliced along them, so its gradient would be whole on every context rank
// (refused).
module attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 1, mbs = 1, microbatches = 1, global_batch = 1, schedule = "1f1b", cp = 2, stages = [0]>} {
  func.func @main(%ids: tensor<1x8xi64> {graph.name = "ids"}) -> (tensor<1x8x8xf32> {graph.name = "scores"}) {
    %wte = graph.weight "wte" : tensor<16x4xf32>
    %pos = graph.weight "pos" : tensor<1x8x4xf32>
    %x = graph.embedding %wte, %ids : (tensor<16x4xf32>, tensor<1x8xi64>) -> tensor<1x8x4xf32>
    %y = graph.binary add %x, %pos : (tensor<1x8x4xf32>, tensor<1x8x4xf32>) -> tensor<1x8x4xf32>
    %kt = graph.transpose %y {perm = array<i64: 0, 2, 1>} : (tensor<1x8x4xf32>) -> tensor<1x4x8xf32>
    %s = graph.matmul %y, %kt : (tensor<1x8x4xf32>, tensor<1x4x8xf32>) -> tensor<1x8x8xf32>
    return %s : tensor<1x8x8xf32>
  }
}
