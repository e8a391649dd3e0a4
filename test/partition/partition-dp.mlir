// RUN: dist-opt %s --dist-partition | FileCheck %s --enable-var-scope
// RUN: dist-opt %s --dist-partition | dist-opt | FileCheck %s --enable-var-scope

// A forward stream with two replicas of a two-stage pipeline (dp = 2): each
// replica streams its own rows (the inputs are dist.batch_shard: 4 of the
// global batch of 8 rows, two micro-batches of 2), and the last stage's
// replicas gather every replica's results in replica order, so the list
// returns the whole batch.
// CHECK-LABEL: func.func @main_rank0
// CHECK-SAME: (%{{.*}}: tensor<4x4xf32> {dist.batch_shard, graph.name = "x"})
// CHECK: dist.send
// CHECK-NOT: dist.all_gather
// CHECK-LABEL: func.func @main_rank1
// CHECK-SAME: (%{{.*}}: tensor<4x4xf32> {dist.batch_shard, graph.name = "x"}) -> (tensor<8x4xf32> {graph.name = "y"})
// CHECK: %[[Y:.*]] = dist.microbatch_merge %{{.*}}, %{{.*}} axis 0 : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<4x4xf32>
// CHECK-NEXT: %[[ALL:.*]] = dist.all_gather %[[Y]] axis 0 over [2, 3] : tensor<4x4xf32> -> tensor<8x4xf32>
// CHECK-NEXT: return %[[ALL]]
module attributes {dist.plan = #dist.plan<dp = 2, tp = 1, pp = 2, mbs = 2, microbatches = 2, global_batch = 8, schedule = "1f1b", stages = [0, 1]>} {
  func.func @main(%x: tensor<2x4xf32> {graph.name = "x"}) -> (tensor<2x4xf32> {graph.name = "y"}) {
    %a = graph.unary relu %x {dist.virtual_stage = 0 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %b = graph.binary add %a, %x {dist.virtual_stage = 1 : i64} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    return %b : tensor<2x4xf32>
  }
}
