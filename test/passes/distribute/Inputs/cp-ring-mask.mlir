// An attention at cp=2 (context-parallel.test) whose mask fills masked
// scores with -1e4: the ring would drop those keys (it drops mask entries
// at or below -1e30), so the attention keeps the all-gather form; with a
// fill of finfo.min (the RUN line's sed) it runs as ring attention.
module attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 1, mbs = 1, microbatches = 1, global_batch = 1, schedule = "1f1b", cp = 2, stages = [0]>} {
  func.func @main(%ids: tensor<1x8xi64> {graph.name = "ids"}) -> (tensor<1x8x16xf32> {graph.name = "logits"}) {
    %wte = graph.weight "wte" : tensor<16x4xf32>
    %x = graph.embedding %wte, %ids : (tensor<16x4xf32>, tensor<1x8xi64>) -> tensor<1x8x4xf32>
    %kt = graph.transpose %x {perm = array<i64: 0, 2, 1>} : (tensor<1x8x4xf32>) -> tensor<1x4x8xf32>
    %s = graph.matmul %x, %kt : (tensor<1x8x4xf32>, tensor<1x4x8xf32>) -> tensor<1x8x8xf32>
    %keep = graph.constant dense<true> : tensor<8x8xi1>
    %fill = graph.constant dense<-1.0e+04> : tensor<f32>
    %masked = graph.where %keep, %s, %fill : (tensor<8x8xi1>, tensor<1x8x8xf32>, tensor<f32>) -> tensor<1x8x8xf32>
    %p = graph.softmax %masked : (tensor<1x8x8xf32>) -> tensor<1x8x8xf32>
    %v = graph.matmul %p, %x : (tensor<1x8x8xf32>, tensor<1x8x4xf32>) -> tensor<1x8x4xf32>
    %head = graph.transpose %wte {perm = array<i64: 1, 0>} : (tensor<16x4xf32>) -> tensor<4x16xf32>
    %logits = graph.matmul %v, %head : (tensor<1x8x4xf32>, tensor<4x16xf32>) -> tensor<1x8x16xf32>
    return %logits : tensor<1x8x16xf32>
  }
}
