// dist.all_reduce to the runtime: world and full groups lower to
// distrt_all_reduce on the program's communicator (a full group checks the
// world size at run time); subsets and prod are compile errors.
// RUN: split-file %s %t
// RUN: dist-compile %t/ok.mlir --source-only -o %t/ok.cpp
// RUN: FileCheck %s --check-prefix=OK < %t/ok.cpp
// RUN: not dist-compile %t/subset.mlir --source-only -o %t/subset.cpp 2>&1 | FileCheck %s --check-prefix=SUBSET
// RUN: not dist-compile %t/prod.mlir --source-only -o %t/prod.cpp 2>&1 | FileCheck %s --check-prefix=PROD

// OK: static const int shards[] = {0, 0};
// OK: distrt_tensor in = dg::T({{.*}}, DISTRT_F32, {4});
// OK: distrt_all_reduce(P.comm, &in, &out, DISTRT_REDUCE_SUM)
// OK: if (P.requireWorld(2, "dist.all_reduce at {{.*}}")) return 1;
// OK: distrt_all_reduce(P.comm, &in, &out, DISTRT_REDUCE_MAX)
// OK: distrt_tensor in = dg::T({{.*}}, DISTRT_U8, {});
// OK: distrt_all_reduce(P.comm, &in, &out, DISTRT_REDUCE_MAX)
// OK: static const dg::Model model = {{.*}}, true, shards, 0, 0, 0x{{[0-9a-f]+}}ull};

// SUBSET: error: dist-compile: dist.all_reduce over a device subset has no lowering yet (sub-communicators are not built); use `over world` or the full group [0, ..., N-1]
// PROD: error: dist-compile: dist.all_reduce prod has no runtime lowering; the runtime reduces with sum, mean, max and min

//--- ok.mlir
func.func @main(%x: tensor<4xf32>, %f: tensor<i1>) -> (tensor<4xf32>, tensor<4xf32>, tensor<i1>) {
  %0 = dist.all_reduce %x sum over world : tensor<4xf32>
  %1 = dist.all_reduce %x max over [0, 1] : tensor<4xf32>
  %2 = dist.all_reduce %f max over world : tensor<i1>
  return %0, %1, %2 : tensor<4xf32>, tensor<4xf32>, tensor<i1>
}

//--- subset.mlir
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = dist.all_reduce %x sum over [1, 0] : tensor<4xf32>
  return %0 : tensor<4xf32>
}

//--- prod.mlir
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = dist.all_reduce %x prod over world : tensor<4xf32>
  return %0 : tensor<4xf32>
}
