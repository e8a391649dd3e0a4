// A context rank's attention at tp=2, cp=2 as dist-context-parallel leaves
// it (tensor-parallel.test): separate Q, K and V projections of 2 heads,
// one dist.ring_attention over the context group [0, 2], a row-parallel
// output projection. The mask differs from head to head ([1, 2, 8, 16]:
// each tensor rank slices its head's part), or with the RUN line's sed
// ([1, 1, 8, 16]) is shared by the heads (read whole).
module attributes {dist.plan = #dist.plan<dp = 1, tp = 2, pp = 1, mbs = 1, microbatches = 1, global_batch = 1, schedule = "1f1b", cp = 2, stages = [0]>} {
  func.func @main(%x: tensor<1x8x8xf32> {graph.name = "x"}) -> (tensor<1x8x8xf32> {graph.name = "y"}) {
    %wq = graph.weight "wq" : tensor<8x8xf32>
    %wk = graph.weight "wk" : tensor<8x8xf32>
    %wv = graph.weight "wv" : tensor<8x8xf32>
    %wo = graph.weight "wo" : tensor<8x8xf32>
    %q2 = graph.matmul %x, %wq : (tensor<1x8x8xf32>, tensor<8x8xf32>) -> tensor<1x8x8xf32>
    %q3 = graph.reshape %q2 : (tensor<1x8x8xf32>) -> tensor<1x8x2x4xf32>
    %q = graph.transpose %q3 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x4xf32>) -> tensor<1x2x8x4xf32>
    %k2 = graph.matmul %x, %wk : (tensor<1x8x8xf32>, tensor<8x8xf32>) -> tensor<1x8x8xf32>
    %k3 = graph.reshape %k2 : (tensor<1x8x8xf32>) -> tensor<1x8x2x4xf32>
    %k = graph.transpose %k3 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x4xf32>) -> tensor<1x2x8x4xf32>
    %v2 = graph.matmul %x, %wv : (tensor<1x8x8xf32>, tensor<8x8xf32>) -> tensor<1x8x8xf32>
    %v3 = graph.reshape %v2 : (tensor<1x8x8xf32>) -> tensor<1x8x2x4xf32>
    %v = graph.transpose %v3 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x4xf32>) -> tensor<1x2x8x4xf32>
    %mask = graph.constant dense<0.0> : tensor<1x2x8x16xf32>
    %o, %lse = dist.ring_attention %q, %k, %v mask %mask scale 5.000000e-01 over [0, 2] : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x4xf32>, tensor<1x2x8xf32>
    %o3 = graph.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x8x4xf32>) -> tensor<1x8x2x4xf32>
    %o2 = graph.reshape %o3 : (tensor<1x8x2x4xf32>) -> tensor<1x8x8xf32>
    %y = graph.matmul %o2, %wo : (tensor<1x8x8xf32>, tensor<8x8xf32>) -> tensor<1x8x8xf32>
    return %y : tensor<1x8x8xf32>
  }
}
