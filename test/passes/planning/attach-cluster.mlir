// RUN: dist-opt %s --dist-attach-cluster="cluster=dgx-a100-80gb:2" | FileCheck %s
// RUN: dist-opt %s --dist-attach-cluster="cluster=dgx-a100-80gb:2" | dist-opt | FileCheck %s
// RUN: dist-opt %s --dist-attach-cluster="cluster=%S/Inputs/lab.yaml" | FileCheck %s --check-prefix=YAML
// RUN: not dist-opt %s --dist-attach-cluster="cluster=no-such-machine" 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not dist-opt %s --dist-attach-cluster 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: not dist-opt %s --dist-attach-cluster="cluster=dgx-a100-80gb profile=%t.missing.json" 2>&1 | FileCheck %s --check-prefix=PROFILE
// `local` is this machine, one device per core; if-missing keeps a
// module's own cluster (a plan without --dist-cluster plans for local).
// RUN: dist-opt %s --dist-attach-cluster="cluster=local" | FileCheck %s --check-prefix=LOCAL
// RUN: dist-opt %s --dist-attach-cluster="cluster=dgx-a100-80gb:2" | dist-opt --dist-attach-cluster="cluster=local if-missing=true" | FileCheck %s
// RUN: dist-opt %fixtures/small/mlp.onnx --input-shape=x:2x8 --dist-plan=dp=1,mbs=2 --dist-batch=2 -o %t.local.mlir | FileCheck %s --check-prefix=PLANLOCAL
// RUN: FileCheck %s --check-prefix=LOCAL < %t.local.mlir

// The preset, every field the cost model uses: peaks, memory, calibrated
// efficiencies, node groups with their link, the network.
// CHECK: module attributes {dist.cluster = #dist.cluster<"dgx-a100-80gb", kinds = [#dist.device_kind<"a100-80gb", memory = 80000000000, bandwidth = 2.039000e+12, flops = {bf16 = 3.120000e+14 : f64
// CHECK-SAME: efficiency = {attention = 5.000000e-01 : f64, conv = 6.000000e-01 : f64
// CHECK-SAME: nodes = [#dist.node_group<kind = "a100-80gb", nodes = 2, devices = 8, link = <"nvlink", bandwidth = 3.000000e+11
// CHECK-SAME: network = <"infiniband", bandwidth = 2.500000e+10

// YAML: dist.cluster = #dist.cluster<"lab", kinds = [#dist.device_kind<"card", memory = 16000000000
// YAML-SAME: nodes = [#dist.node_group<kind = "card", nodes = 3, devices = 2, link = <"pcie", bandwidth = 1.600000e+10
// YAML-SAME: network = <"eth", bandwidth = 1.250000e+09

// LOCAL: dist.cluster = #dist.cluster<"local", kinds = [#dist.device_kind<"local-{{core|share}}",
// LOCAL-SAME: nodes = [#dist.node_group<kind = "local-{{core|share}}", nodes = 1, devices = {{[1-9][0-9]*}}, link = <"shared-memory"
// PLANLOCAL: plan: dp=1,tp=1,pp=1,mbs=2,{{.*}} on local (1 devices)
// UNKNOWN: error: unknown cluster preset 'no-such-machine'; known presets:
// NONE: error: dist-attach-cluster needs cluster=PRESET[:NODES] or cluster=FILE.yaml (see dist-opt --list-clusters)
// PROFILE: error: {{.*}}missing.json
module {
  func.func @main(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
    return %x : tensor<2x4xf32>
  }
}
