// RUN: dist-opt %s -split-input-file --dist-attach-cluster="cluster=dgx-a100-80gb" --dist-annotate-layers --dist-set-plan="plan=dp=2,tp=2,pp=2,mbs=1,schedule=1f1b batch=8" | FileCheck %s --enable-var-scope
// RUN: dist-opt %s -split-input-file --dist-attach-cluster="cluster=dgx-a100-80gb" --dist-set-plan="plan=dp=2,tp=2,pp=2 batch=8 mode=infer" | FileCheck %s --check-prefix=INFER
// RUN: not dist-opt %s -split-input-file --dist-attach-cluster="cluster=dgx-a100-80gb" --dist-set-plan="plan=dp=2,tp=2,pp=2" 2>&1 | FileCheck %s --check-prefix=NOBATCH
// RUN: not dist-opt %s -split-input-file --dist-attach-cluster="cluster=dgx-a100-80gb" --dist-set-plan="batch=8" 2>&1 | FileCheck %s --check-prefix=NOPLAN
// RUN: not dist-opt %s -split-input-file --dist-attach-cluster="cluster=dgx-a100-80gb" --dist-set-plan="plan=dp=16 batch=16" 2>&1 | FileCheck %s --check-prefix=DEVICES
// RUN: dist-opt %s -split-input-file --dist-attach-cluster="cluster=dgx-a100-80gb" --dist-set-plan="plan=dp=2,pp=2 batch=8" | FileCheck %s --check-prefix=FEWER
// RUN: not dist-opt %s -split-input-file --dist-set-plan="plan=dp=2 batch=8" 2>&1 | FileCheck %s --check-prefix=NOCLUSTER
// RUN: not dist-opt %s -split-input-file --dist-attach-cluster="cluster=dgx-a100-80gb" --dist-set-plan="plan=dp=2,tp=2,pp=2,schedule=2f2b batch=8" 2>&1 | FileCheck %s --check-prefix=BAD

// The plan, finalized (4 micro-batches of 1 per replica, stages balanced by
// cost), and every op's virtual stage; with tp = 2 each costed op keeps its
// tensor-parallel role.
// CHECK: dist.plan = #dist.plan<dp = 2, tp = 2, pp = 2, mbs = 1, microbatches = 4, global_batch = 8, schedule = "1f1b", stages = [0, 1]>
// CHECK-LABEL: func.func @main
// CHECK: graph.matmul {{.*}}{dist.layer = 0 : i64, dist.tp = #dist.tp<column>, dist.virtual_stage = 0 : i64}
// CHECK: graph.matmul {{.*}}{dist.layer = 1 : i64, dist.tp = #dist.tp<row>, dist.virtual_stage = 1 : i64}

// INFER: dist.plan = #dist.plan<dp = 2, tp = 2, pp = 2, mbs = 1, microbatches = 4, global_batch = 8, schedule = "gpipe", stages = [0, 1], mode = infer>

// NOBATCH: error: --dist-plan needs the global batch in samples: pass --dist-batch=N (dist-set-plan's batch=N)
// NOPLAN: error: dist-set-plan needs a plan: --dist-plan="dp=..,tp=..,pp=..,mbs=..,schedule=.." (plan=...), --dist-plan-from=megatron:ARGS_FILE (from=...), or --dist-search to find one
// DEVICES: error: plan 'dp=16,{{.*}}': dp*tp*pp = 16*1*1 = 16 devices, but cluster 'dgx-a100-80gb' has only 8; choose degrees whose product is at most 8 (the plan runs on the first dp*tp*pp devices, the others stay idle)
// A plan may use fewer devices than the cluster has (here 4 of 8).
// FEWER: dist.plan = #dist.plan<dp = 2, tp = 1, pp = 2,
// NOCLUSTER: error: planning needs a cluster
// BAD: error: bad --dist-plan: {{.*}}unknown schedule '2f2b'
module {
  func.func @main(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
    %w1 = graph.weight "w1" : tensor<16x64xf32>
    %w2 = graph.weight "w2" : tensor<64x16xf32>
    %h = graph.matmul %x, %w1 : (tensor<4x16xf32>, tensor<16x64xf32>) -> tensor<4x64xf32>
    %r = graph.unary relu %h : (tensor<4x64xf32>) -> tensor<4x64xf32>
    %y = graph.matmul %r, %w2 : (tensor<4x64xf32>, tensor<64x16xf32>) -> tensor<4x16xf32>
    return %y : tensor<4x16xf32>
  }
}
