// dist.all_reduce to the runtime: `over world` lowers to distrt_all_reduce
// on the program's communicator; an explicit group to the communicator of
// its ranks (Program::group: the world's when the group is every rank of
// the job, checked at run time, else made by its ranks on first use); prod
// is a compile error. Reduce-scatter, all-gather and all-slice (a copy of
// the block at this rank's place in the group) along the leading dimension.
// An all-reduce whose result is read later than the next op is started
// (emit.async) and waited for before that reader (here: the outputs), its
// wait timed under its own profile row.
// RUN: split-file %s %t
// RUN: dist-compile %t/ok.mlir --source-only -o %t/ok.cpp
// RUN: FileCheck %s --check-prefix=OK < %t/ok.cpp
// RUN: dist-compile %t/subset.mlir --source-only -o %t/subset.cpp
// RUN: FileCheck %s --check-prefix=SUBSET < %t/subset.cpp
// RUN: not dist-compile %t/prod.mlir --source-only -o %t/prod.cpp 2>&1 | FileCheck %s --check-prefix=PROD
// RUN: dist-compile %t/shards.mlir --source-only -o %t/shards.cpp
// RUN: FileCheck %s --check-prefix=SHARDS < %t/shards.cpp
// RUN: not dist-compile %t/strided.mlir --source-only -o %t/strided.cpp 2>&1 | FileCheck %s --check-prefix=STRIDED
// RUN: not dist-compile %t/sliced.mlir --source-only -o %t/sliced.cpp 2>&1 | FileCheck %s --check-prefix=SLICED

// OK: static const int shards[] = {0, 0};
// OK: distrt_tensor in = dg::T({{.*}}, DISTRT_F32, {4});
// OK: distrt_all_reduce_start(P.comm, &in, &out, DISTRT_REDUCE_SUM, &[[RQ0:rq[0-9]+]])
// OK: static const int32_t group[] = {0, 1};
// OK-NEXT: distrt_comm *comm = P.group(group, 2, "dist.all_reduce at {{.*}}");
// OK: distrt_all_reduce_start(comm, &in, &out, DISTRT_REDUCE_MAX, &[[RQ1:rq[0-9]+]])
// OK: distrt_tensor in = dg::T({{.*}}, DISTRT_U8, {});
// OK: distrt_all_reduce(P.comm, &in, &out, DISTRT_REDUCE_MAX)
// OK: if (P.check(distrt_wait([[RQ0]]), "dist.all_reduce at {{.*}}:2:8")) return 1;
// OK-NEXT: P.profStop(0, pt);
// OK: distrt_wait([[RQ1]])
// OK: P.download(P.outputs[0]
// OK: static const dg::Model model = {{.*}}, true, shards, nullptr, 0, 0, 0, 0x{{[0-9a-f]+}}ull, ops, 3, 0, false};

// SUBSET: static const int32_t group[] = {1, 0};
// SUBSET-NEXT: distrt_comm *comm = P.group(group, 2, "dist.all_reduce at {{.*}}");
// SUBSET-NEXT: if (!comm) return 1;
// SUBSET: distrt_all_reduce_start(comm, &in, &out, DISTRT_REDUCE_SUM, &{{rq[0-9]+}})
// SUBSET: static const int32_t group[] = {2, 3};
// SUBSET: distrt_broadcast(comm, &t, 1)
// SHARDS: static const int32_t group[] = {0, 1};
// SHARDS: distrt_reduce_scatter(comm, &in, &out, DISTRT_REDUCE_MEAN)
// SHARDS: static const int32_t group[] = {2, 3};
// SHARDS: distrt_all_gather(comm, &in, &out)
// SHARDS: static const int32_t group[] = {0, 1};
// SHARDS: int32_t at = 0;
// SHARDS-NEXT: if (P.check(distrt_comm_rank(comm, &at), "dist.all_slice at {{.*}}")) return 1;
// SHARDS-NEXT: if (P.copy({{v[0-9]+}}, (const char *){{v[0-9]+}} + (size_t)at * 8, 8)) return 1;
// SLICED: error: dist-compile: dist.all_slice along axis 1 of 'tensor<4x2xf32>' has no runtime lowering; shards are blocks of the leading dimension (the dimensions before the axis must be 1)
// STRIDED: error: dist-compile: dist.reduce_scatter sum along axis 1 of 'tensor<4x2xf32>' has no runtime lowering; the runtime reduces with sum, mean, max and min into shards of the leading dimension (the dimensions before the axis must be 1)
// PROD: error: dist-compile: dist.all_reduce prod has no runtime lowering; the runtime reduces with sum, mean, max and min

//--- ok.mlir
func.func @main(%x: tensor<4xf32>, %f: tensor<i1>) -> (tensor<4xf32>, tensor<4xf32>, tensor<i1>) {
  %0 = dist.all_reduce %x sum over world : tensor<4xf32>
  %1 = dist.all_reduce %x max over [0, 1] : tensor<4xf32>
  %2 = dist.all_reduce %f max over world : tensor<i1>
  return %0, %1, %2 : tensor<4xf32>, tensor<4xf32>, tensor<i1>
}

//--- subset.mlir
func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = dist.all_reduce %x sum over [1, 0] : tensor<4xf32>
  %1 = dist.broadcast %x root 3 over [2, 3] : tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

//--- shards.mlir
func.func @main(%x: tensor<4x2xf32>, %s: tensor<1x2x3xf32>) -> (tensor<2x2xf32>, tensor<1x4x3xf32>, tensor<1x2xf32>) {
  %0 = dist.reduce_scatter %x mean axis 0 over [0, 1] : tensor<4x2xf32> -> tensor<2x2xf32>
  %1 = dist.all_gather %s axis 1 over [2, 3] : tensor<1x2x3xf32> -> tensor<1x4x3xf32>
  %2 = dist.all_slice %0 axis 0 over [0, 1] : tensor<2x2xf32> -> tensor<1x2xf32>
  return %0, %1, %2 : tensor<2x2xf32>, tensor<1x4x3xf32>, tensor<1x2xf32>
}

//--- strided.mlir
func.func @main(%x: tensor<4x2xf32>) -> tensor<4x1xf32> {
  %0 = dist.reduce_scatter %x sum axis 1 over [0, 1] : tensor<4x2xf32> -> tensor<4x1xf32>
  return %0 : tensor<4x1xf32>
}

//--- sliced.mlir
func.func @main(%x: tensor<4x2xf32>) -> tensor<4x1xf32> {
  %0 = dist.all_slice %x axis 1 over [0, 1] : tensor<4x2xf32> -> tensor<4x1xf32>
  return %0 : tensor<4x1xf32>
}

//--- prod.mlir
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = dist.all_reduce %x prod over world : tensor<4xf32>
  return %0 : tensor<4xf32>
}
