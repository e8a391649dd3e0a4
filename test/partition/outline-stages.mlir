// RUN: dist-opt %s -split-input-file --dist-outline-stages | FileCheck %s --enable-var-scope --implicit-check-not="dist.virtual_stage ="
// Round trip and idempotence: the output parses, verifies, and a second run
// changes nothing.
// RUN: dist-opt %s -split-input-file --dist-outline-stages | dist-opt -split-input-file --dist-outline-stages | FileCheck %s --enable-var-scope

// Two pipeline stages of a dp=2, tp=2 plan: stage s runs on the devices
// t + tp * (d + dp * s); dist.tp stays, dist.virtual_stage goes. The argument feeds
// both stages (a residual), so both take it as an input.
// CHECK-LABEL: func.func @two_stages
// CHECK-SAME: (%[[X:.*]]: tensor<2x8xf32>)
// CHECK: %[[S0:.*]] = dist.stage 0 on #dist.mesh<shape = [2, 2], devices = [0, 1, 2, 3]>(%[[X]]) : (tensor<2x8xf32>) -> tensor<2x16xf32> {
// CHECK-NEXT: ^bb0(%[[A0:.*]]: tensor<2x8xf32>):
// CHECK-NEXT: %[[W1:.*]] = graph.weight "w1"
// CHECK-NEXT: %[[H:.*]] = graph.matmul %[[A0]], %[[W1]] {dist.tp = #dist.tp<column>}
// CHECK-NEXT: %[[R:.*]] = graph.unary relu %[[H]] {dist.tp = #dist.tp<split>}
// CHECK-NEXT: dist.yield %[[R]] : tensor<2x16xf32>
// CHECK: %[[S1:.*]] = dist.stage 1 on #dist.mesh<shape = [2, 2], devices = [4, 5, 6, 7]>(%[[S0]], %[[X]]) : (tensor<2x16xf32>, tensor<2x8xf32>) -> tensor<2x8xf32> {
// CHECK-NEXT: ^bb0(%[[B0:.*]]: tensor<2x16xf32>, %[[B1:.*]]: tensor<2x8xf32>):
// CHECK-NEXT: %[[W2:.*]] = graph.weight "w2"
// CHECK-NEXT: %[[Y:.*]] = graph.matmul %[[B0]], %[[W2]] {dist.tp = #dist.tp<row>}
// CHECK-NEXT: %[[Z:.*]] = graph.binary add %[[Y]], %[[B1]]
// CHECK-NEXT: dist.yield %[[Z]] : tensor<2x8xf32>
// CHECK: return %[[S1]] : tensor<2x8xf32>
module attributes {dist.plan = #dist.plan<dp = 2, tp = 2, pp = 2, mbs = 1, microbatches = 1, global_batch = 2, schedule = "1f1b", stages = [0, 1]>} {
  func.func @two_stages(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
    %w1 = graph.weight "w1" : tensor<8x16xf32>
    %w2 = graph.weight "w2" : tensor<16x8xf32>
    %h = graph.matmul %x, %w1 {dist.virtual_stage = 0 : i64, dist.tp = #dist.tp<column>} : (tensor<2x8xf32>, tensor<8x16xf32>) -> tensor<2x16xf32>
    %r = graph.unary relu %h {dist.virtual_stage = 0 : i64, dist.tp = #dist.tp<split>} : (tensor<2x16xf32>) -> tensor<2x16xf32>
    %y = graph.matmul %r, %w2 {dist.virtual_stage = 1 : i64, dist.tp = #dist.tp<row>} : (tensor<2x16xf32>, tensor<16x8xf32>) -> tensor<2x8xf32>
    %z = graph.binary add %y, %x {dist.virtual_stage = 1 : i64} : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
    return %z : tensor<2x8xf32>
  }
}

// -----

// Cloning: a constant and a weight read used by two stages, and a cheap
// transpose of that weight (tied embeddings), are copied into each stage.
// A sample-independent matmul of two weights is not cheap: it runs once, in
// the first stage that uses it, and travels to the second. An unannotated
// op reading stage 0's output goes to its user's stage 1.
// CHECK-LABEL: func.func @cloning
// CHECK: %[[S0:.*]]:2 = dist.stage 0 on #dist.mesh<shape = [1, 1], devices = [0]>(%{{.*}}) : (tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
// CHECK-NEXT: ^bb0(%[[X0:.*]]: tensor<4x4xf32>):
// CHECK-NEXT: %[[C0:.*]] = graph.constant dense<2.000000e+00>
// CHECK-NEXT: %[[E0:.*]] = graph.weight "emb"
// CHECK-NEXT: %[[F:.*]] = graph.weight "f"
// CHECK-NEXT: %[[T0:.*]] = graph.transpose %[[E0]]
// CHECK-NEXT: %[[P:.*]] = graph.matmul %[[E0]], %[[F]] :
// CHECK-NEXT: %[[A:.*]] = graph.binary mul %[[X0]], %[[C0]]
// CHECK-NEXT: %[[B:.*]] = graph.matmul %[[A]], %[[T0]]
// CHECK-NEXT: %[[B2:.*]] = graph.matmul %[[B]], %[[P]]
// CHECK-NEXT: dist.yield %[[B2]], %[[P]] : tensor<4x4xf32>, tensor<4x4xf32>
// CHECK: dist.stage 1 on #dist.mesh<shape = [1, 1], devices = [1]>(%[[S0]]#0, %[[S0]]#1) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> {
// CHECK-NEXT: ^bb0(%[[I0:.*]]: tensor<4x4xf32>, %[[I1:.*]]: tensor<4x4xf32>):
// CHECK-NEXT: %[[C1:.*]] = graph.constant dense<2.000000e+00>
// CHECK-NEXT: %[[E1:.*]] = graph.weight "emb"
// CHECK-NEXT: %[[T1:.*]] = graph.transpose %[[E1]]
// CHECK-NEXT: %[[N:.*]] = graph.unary neg %[[I0]] :
// CHECK-NEXT: %[[D:.*]] = graph.binary mul %[[N]], %[[C1]]
// CHECK-NEXT: %[[G:.*]] = graph.matmul %[[D]], %[[T1]]
// CHECK-NEXT: %[[G2:.*]] = graph.binary add %[[G]], %[[I1]]
// CHECK-NEXT: dist.yield %[[G2]]
// CHECK-NEXT: }
// CHECK-NEXT: return
module attributes {dist.plan = #dist.plan<dp = 1, tp = 1, pp = 2, mbs = 1, microbatches = 1, global_batch = 1, schedule = "1f1b", stages = [0, 1]>} {
  func.func @cloning(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
    %c = graph.constant dense<2.0> : tensor<f32>
    %e = graph.weight "emb" : tensor<4x4xf32>
    %f = graph.weight "f" : tensor<4x4xf32>
    %t = graph.transpose %e {perm = array<i64: 1, 0>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %p = graph.matmul %e, %f : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %a = graph.binary mul %x, %c {dist.virtual_stage = 0 : i64} : (tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
    %b = graph.matmul %a, %t {dist.virtual_stage = 0 : i64} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %b2 = graph.matmul %b, %p {dist.virtual_stage = 0 : i64} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %n = graph.unary neg %b2 : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %d = graph.binary mul %n, %c {dist.virtual_stage = 1 : i64} : (tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
    %g = graph.matmul %d, %t {dist.virtual_stage = 1 : i64} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %g2 = graph.binary add %g, %p {dist.virtual_stage = 1 : i64} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    return %g2 : tensor<4x4xf32>
  }
}

// -----

// Interleaved schedule (pp=2, chunks=2): virtual stages v and v+pp share a
// mesh but are separate regions. Values flow stage to stage: a value of
// stage 0 the function returns passes through stages 1 and 2 (stage 2 has
// no ops of its own and only passes values on); a returned argument is
// read where it is returned.
// CHECK-LABEL: func.func @interleaved
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK: %[[V0:.*]] = dist.stage 0 on #dist.mesh<shape = [2, 1], devices = [0, 1]>(%[[X]])
// CHECK: %[[V1:.*]]:2 = dist.stage 1 on #dist.mesh<shape = [2, 1], devices = [2, 3]>(%[[V0]])
// CHECK-NEXT: ^bb0(%[[A1:.*]]: tensor<4xf32>):
// CHECK-NEXT: %[[B1:.*]] = graph.unary tanh %[[A1]]
// CHECK-NEXT: dist.yield %[[B1]], %[[A1]]
// CHECK: %[[V2:.*]]:2 = dist.stage 2 on #dist.mesh<shape = [2, 1], devices = [0, 1]>(%[[V1]]#0, %[[V1]]#1)
// CHECK-NEXT: ^bb0(%[[B2:.*]]: tensor<4xf32>, %[[A2:.*]]: tensor<4xf32>):
// CHECK-NEXT: dist.yield %[[B2]], %[[A2]]
// CHECK: %[[V3:.*]]:3 = dist.stage 3 on #dist.mesh<shape = [2, 1], devices = [2, 3]>(%[[V2]]#0, %[[V2]]#1, %[[X]])
// CHECK-NEXT: ^bb0(%[[P0:.*]]: tensor<4xf32>, %[[P1:.*]]: tensor<4xf32>, %[[P2:.*]]: tensor<4xf32>):
// CHECK-NEXT: %[[Q:.*]] = graph.unary exp %[[P0]]
// CHECK-NEXT: dist.yield %[[Q]], %[[P1]], %[[P2]]
// CHECK: return %[[V3]]#0, %[[V3]]#1, %[[V3]]#2
module attributes {dist.plan = #dist.plan<dp = 2, tp = 1, pp = 2, mbs = 1, microbatches = 1, global_batch = 2, schedule = "interleaved", chunks = 2, stages = [0, 1, 2, 3]>} {
  func.func @interleaved(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
    %a = graph.unary relu %x {dist.virtual_stage = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    %b = graph.unary tanh %a {dist.virtual_stage = 1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    %c = graph.unary exp %b {dist.virtual_stage = 3 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    return %c, %a, %x : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  }
}

// -----

// Inference plans are outlined the same way; functions without annotations
// are left alone.
// CHECK-LABEL: func.func @helper
// CHECK-NEXT: graph.unary relu
// CHECK-NEXT: return
// CHECK-LABEL: func.func @serve
// CHECK: dist.stage 0 on #dist.mesh<shape = [1, 2], devices = [0, 1]>
// CHECK: graph.unary relu %{{.*}} {dist.tp = #dist.tp<replicated>}
// CHECK: dist.stage 1 on #dist.mesh<shape = [1, 2], devices = [2, 3]>
// CHECK: graph.softmax
module attributes {dist.plan = #dist.plan<dp = 1, tp = 2, pp = 2, mbs = 1, microbatches = 1, global_batch = 1, schedule = "1f1b", stages = [0, 1], mode = infer>} {
  func.func @helper(%x: tensor<4xf32>) -> tensor<4xf32> {
    %a = graph.unary relu %x : (tensor<4xf32>) -> tensor<4xf32>
    return %a : tensor<4xf32>
  }
  func.func @serve(%x: tensor<4xf32>) -> tensor<4xf32> {
    %a = graph.unary relu %x {dist.virtual_stage = 0 : i64, dist.tp = #dist.tp<replicated>} : (tensor<4xf32>) -> tensor<4xf32>
    %b = graph.softmax %a {axis = -1 : i64, dist.virtual_stage = 1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    return %b : tensor<4xf32>
  }
}

// -----

// Nothing annotated and no plan: nothing to do.
// CHECK-LABEL: func.func @unplanned
// CHECK-NOT: dist.stage
// CHECK: return
module {
  func.func @unplanned(%x: tensor<4xf32>) -> tensor<4xf32> {
    %a = graph.unary relu %x : (tensor<4xf32>) -> tensor<4xf32>
    return %a : tensor<4xf32>
  }
}

// -----

// PipeDream-style per-stage replicas ("replicas=3/1", tp=2): stage s has
// its own data-parallel degree r_s; ranks are t + tp * slot with slots
// numbered stage-major, so stage 0 holds slots 0..2 and stage 1 slot 3.
// CHECK-LABEL: func.func @replicas
// CHECK: dist.stage 0 on #dist.mesh<shape = [3, 2], devices = [0, 1, 2, 3, 4, 5]>
// CHECK: dist.stage 1 on #dist.mesh<shape = [1, 2], devices = [6, 7]>
module attributes {dist.plan = #dist.plan<dp = 1, tp = 2, pp = 2, mbs = 1, microbatches = 1, global_batch = 1, schedule = "1f1b", stages = [0, 1], replicas = [3, 1]>} {
  func.func @replicas(%x: tensor<4xf32>) -> tensor<4xf32> {
    %a = graph.unary relu %x {dist.virtual_stage = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    %b = graph.unary tanh %a {dist.virtual_stage = 1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    return %b : tensor<4xf32>
  }
}
