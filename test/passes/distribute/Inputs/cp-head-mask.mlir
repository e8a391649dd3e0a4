// An attention of 2 heads whose additive mask differs from head to head
// (ALiBi's biases, [1, 2, 8, 8]), at cp=2 (context-parallel.test): each
// context rank takes its 4 query rows of every head's mask, and its
// attention runs as ring attention; at tp=2 (the RUN line's sed) each
// tensor rank then takes its head's part of those.
module attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 1, mbs = 1, microbatches = 1, global_batch = 1, schedule = "1f1b", cp = 2, stages = [0]>} {
  func.func @main(%ids: tensor<1x8xi64> {graph.name = "ids"}) -> (tensor<1x8x16xf32> {graph.name = "logits"}) {
    %wte = graph.weight "wte" : tensor<16x8xf32>
    %wq = graph.weight "wq" : tensor<8x8xf32>
    %wk = graph.weight "wk" : tensor<8x8xf32>
    %wv = graph.weight "wv" : tensor<8x8xf32>
    %wo = graph.weight "wo" : tensor<8x16xf32>
    %x = graph.embedding %wte, %ids : (tensor<16x8xf32>, tensor<1x8xi64>) -> tensor<1x8x8xf32>
    %q2 = graph.matmul %x, %wq : (tensor<1x8x8xf32>, tensor<8x8xf32>) -> tensor<1x8x8xf32>
    %q3 = graph.reshape %q2 : (tensor<1x8x8xf32>) -> tensor<1x8x2x4xf32>
    %q = graph.transpose %q3 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x4xf32>) -> tensor<1x2x8x4xf32>
    %k2 = graph.matmul %x, %wk : (tensor<1x8x8xf32>, tensor<8x8xf32>) -> tensor<1x8x8xf32>
    %k3 = graph.reshape %k2 : (tensor<1x8x8xf32>) -> tensor<1x8x2x4xf32>
    %kt = graph.transpose %k3 {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x8x2x4xf32>) -> tensor<1x2x4x8xf32>
    %v2 = graph.matmul %x, %wv : (tensor<1x8x8xf32>, tensor<8x8xf32>) -> tensor<1x8x8xf32>
    %v3 = graph.reshape %v2 : (tensor<1x8x8xf32>) -> tensor<1x8x2x4xf32>
    %v = graph.transpose %v3 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x4xf32>) -> tensor<1x2x8x4xf32>
    %s = graph.matmul %q, %kt : (tensor<1x2x8x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x8x8xf32>
    %alibi = graph.constant dense<-1.0> : tensor<1x2x8x8xf32>
    %biased = graph.binary add %s, %alibi : (tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
    %p = graph.softmax %biased : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
    %o4 = graph.matmul %p, %v : (tensor<1x2x8x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32>
    %o3 = graph.transpose %o4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x8x4xf32>) -> tensor<1x8x2x4xf32>
    %o = graph.reshape %o3 : (tensor<1x8x2x4xf32>) -> tensor<1x8x8xf32>
    %logits = graph.matmul %o, %wo : (tensor<1x8x8xf32>, tensor<8x16xf32>) -> tensor<1x8x16xf32>
    return %logits : tensor<1x8x16xf32>
  }
}
