//===- Reduce.cpp - Reductions, transpose, embedding -----------*- C++ -*-===//
//
// Reductions run on oneDNN reduction, transposes on oneDNN reorder (a
// permuted-strides source descriptor). Reduction gradients and the
// embedding gather / scatter-add are plain loops.
//
//===----------------------------------------------------------------------===//
#include "Internal.h"
#include "cpu/CpuState.h"
#include "cpu/Loops.h"
#ifdef DISTRT_HAVE_CUDA
#include "cuda/CudaApi.h"
#endif

#include <cstring>

using namespace distrt;
using dnnl::algorithm;
using dnnl::memory;

namespace {

distrt_status checkReduce(Checker &c, int op, const distrt_tensor *x,
                          const distrt_tensor *y, int64_t &count) {
  if (op < DISTRT_REDUCE_SUM || op > DISTRT_REDUCE_MIN)
    return c.fail(DISTRT_ERROR_INVALID_ARGUMENT, "unknown reduce op ", op,
                  "; use a distrt_reduce_op value");
  DISTRT_TRY(c.tensor("x", x, DISTRT_F32));
  DISTRT_TRY(c.tensor("y", y, DISTRT_F32));
  if (y->rank != x->rank)
    return c.fail(DISTRT_ERROR_SHAPE_MISMATCH, "'y' ", shapeString(*y),
                  " must have the rank of 'x' ", shapeString(*x),
                  " (keep-dims form: 1 on reduced axes)");
  count = 1;
  for (int i = 0; i < x->rank; ++i) {
    if (y->dims[i] != x->dims[i] && y->dims[i] != 1)
      return c.fail(DISTRT_ERROR_SHAPE_MISMATCH, "'y' ", shapeString(*y),
                    " dimension ", i, " must be 1 (reduced) or ",
                    x->dims[i], " (kept), as in 'x' ", shapeString(*x));
    if (y->dims[i] == 1)
      count *= x->dims[i];
  }
  if (count == 0 && op >= DISTRT_REDUCE_MAX)
    return c.fail(DISTRT_ERROR_SHAPE_MISMATCH,
                  "max/min over an empty axis has no value");
  return DISTRT_OK;
}

algorithm reduceAlg(int op) {
  switch (op) {
  case DISTRT_REDUCE_SUM:
    return algorithm::reduction_sum;
  case DISTRT_REDUCE_MEAN:
    return algorithm::reduction_mean;
  case DISTRT_REDUCE_MAX:
    return algorithm::reduction_max;
  default:
    return algorithm::reduction_min;
  }
}

#ifdef DISTRT_HAVE_CUDA
cuda::BroadcastDesc reduceDesc(const distrt_tensor *x, const distrt_tensor *y) {
  cuda::BroadcastDesc d;
  d.rank = x->rank;
  std::vector<int64_t> s = broadcastStrides(*y, dimsOf(*x));
  for (int i = 0; i < x->rank; ++i) {
    d.dims[i] = x->dims[i];
    d.strides[0][i] = s[i];
  }
  return d;
}
#endif

} // namespace

extern "C" distrt_status distrt_reduce(distrt_context *ctx,
                                       distrt_reduce_op op,
                                       const distrt_tensor *x,
                                       const distrt_tensor *y) {
  const char *fn = "distrt_reduce";
  Checker c(ctx, fn);
  DISTRT_TRY(c.context());
  int64_t count;
  DISTRT_TRY(checkReduce(c, op, x, y, count));
  DISTRT_ON_CUDA(ctx, cuda::reduce(ctx, op, reduceDesc(x, y), cpu::f32(x),
                                   cpu::f32(y), distrt_numel(y), count));
  int64_t n = distrt_numel(x);
  if (n == 0 || distrt_numel(y) == 0) {
    std::fill(cpu::f32(y), cpu::f32(y) + distrt_numel(y), 0.0f);
    return DISTRT_OK;
  }
  if (n == distrt_numel(y)) {
    std::memmove(y->data, x->data, n * sizeof(float));
    return DISTRT_OK;
  }
  return guardCall(ctx, fn, [&] {
    cpu::CpuState &st = cpu::state(ctx);
    memory::dims xd(x->dims, x->dims + x->rank), yd(y->dims, y->dims + y->rank);
    memory::desc xMd = cpu::plainDesc(xd), yMd = cpu::plainDesc(yd);
    dnnl::primitive &prim = st.primitive(
        "reduce:" + std::to_string(op) + cpu::dimsKey(xd) + "|" +
            cpu::dimsKey(yd),
        [&] {
          dnnl::reduction::desc d(reduceAlg(op), xMd, yMd, 0.f, 0.f);
          return dnnl::reduction(
              dnnl::reduction::primitive_desc(d, st.engine));
        });
    prim.execute(st.stream, {{DNNL_ARG_SRC, cpu::mem(st, xMd, x->data)},
                             {DNNL_ARG_DST, cpu::mem(st, yMd, y->data)}});
    st.stream.wait();
    return DISTRT_OK;
  });
}

extern "C" distrt_status distrt_reduce_bwd(distrt_context *ctx,
                                           distrt_reduce_op op,
                                           const distrt_tensor *x,
                                           const distrt_tensor *y,
                                           const distrt_tensor *dy,
                                           const distrt_tensor *dx) {
  const char *fn = "distrt_reduce_bwd";
  Checker c(ctx, fn);
  DISTRT_TRY(c.context());
  int64_t count;
  DISTRT_TRY(checkReduce(c, op, x, y, count));
  DISTRT_TRY(c.tensor("dy", dy, DISTRT_F32));
  DISTRT_TRY(c.same("y", y, "dy", dy));
  DISTRT_TRY(c.tensor("dx", dx, DISTRT_F32));
  DISTRT_TRY(c.same("x", x, "dx", dx));
  DISTRT_ON_CUDA(ctx, cuda::reduceBwd(ctx, op, reduceDesc(x, y), cpu::f32(x),
                                      cpu::f32(y), cpu::f32(dy), cpu::f32(dx),
                                      count));
  std::vector<int64_t> dims = dimsOf(*x);
  std::vector<int64_t> strides[1] = {broadcastStrides(*y, dims)};
  const float *px = cpu::f32(x), *py = cpu::f32(y), *pdy = cpu::f32(dy);
  float *pdx = cpu::f32(dx);
  float inv = count ? 1.0f / float(count) : 0.0f;
  cpu::stridedLoop<1>(dims, strides, [&](int64_t i, const int64_t *off) {
    float g = pdy[off[0]];
    switch (op) {
    case DISTRT_REDUCE_SUM:
      pdx[i] = g;
      break;
    case DISTRT_REDUCE_MEAN:
      pdx[i] = g * inv;
      break;
    default:
      pdx[i] = px[i] == py[off[0]] ? g : 0.0f;
    }
  });
  return DISTRT_OK;
}

extern "C" distrt_status distrt_transpose(distrt_context *ctx,
                                          const distrt_tensor *x,
                                          const distrt_tensor *y,
                                          const int32_t *perm) {
  const char *fn = "distrt_transpose";
  Checker c(ctx, fn);
  DISTRT_TRY(c.context());
  DISTRT_TRY(c.floatTensor("x", x));
  DISTRT_TRY(c.floatTensor("y", y));
  if (x->dtype != y->dtype)
    return c.fail(DISTRT_ERROR_UNSUPPORTED, "x is ", dtypeName(x->dtype),
                  " but y is ", dtypeName(y->dtype),
                  "; transpose does not convert (use distrt_cast)");
  if (x->rank > 0)
    DISTRT_TRY(c.pointer("perm", perm));
  if (y->rank != x->rank)
    return c.fail(DISTRT_ERROR_SHAPE_MISMATCH, "'y' ", shapeString(*y),
                  " and 'x' ", shapeString(*x), " differ in rank");
  std::vector<int64_t> xStrides(x->rank, 1);
  for (int i = x->rank - 2; i >= 0; --i)
    xStrides[i] = xStrides[i + 1] * x->dims[i + 1];
  std::vector<bool> seen(x->rank, false);
  std::vector<int64_t> srcStrides(x->rank), expect(x->rank);
  for (int i = 0; i < x->rank; ++i) {
    if (perm[i] < 0 || perm[i] >= x->rank || seen[perm[i]])
      return c.fail(DISTRT_ERROR_INVALID_ARGUMENT,
                    "perm is not a permutation of 0..", x->rank - 1,
                    " (bad entry at ", i, ")");
    seen[perm[i]] = true;
    expect[i] = x->dims[perm[i]];
    srcStrides[i] = xStrides[perm[i]];
  }
  DISTRT_TRY(c.shape("y", y, expect));
  size_t elem = distrt_dtype_size(x->dtype);
  DISTRT_ON_CUDA(ctx, cuda::transpose(ctx, cpu::f32(x), cpu::f32(y), x->rank,
                                      y->dims, srcStrides.data(), elem));
  int64_t n = distrt_numel(x);
  if (n == 0)
    return DISTRT_OK;
  if (x->rank <= 1) {
    std::memmove(y->data, x->data, n * elem);
    return DISTRT_OK;
  }
  return guardCall(ctx, fn, [&] {
    cpu::CpuState &st = cpu::state(ctx);
    memory::data_type dt = x->dtype == DISTRT_F32  ? memory::data_type::f32
                           : x->dtype == DISTRT_F16 ? memory::data_type::f16
                                                    : memory::data_type::bf16;
    memory::dims yd(y->dims, y->dims + y->rank);
    memory::desc srcMd(yd, dt, memory::dims(srcStrides.begin(),
                                            srcStrides.end()));
    memory::desc dstMd = cpu::plainDesc(yd, dt);
    memory src = cpu::mem(st, srcMd, x->data), dst = cpu::mem(st, dstMd, y->data);
    dnnl::reorder(src, dst).execute(st.stream, src, dst);
    st.stream.wait();
    return DISTRT_OK;
  });
}

//===----------------------------------------------------------------------===//
// Embedding
//===----------------------------------------------------------------------===//

namespace {

distrt_status checkIndices(Checker &c, const distrt_tensor *indices,
                           int64_t vocab) {
  int64_t n = distrt_numel(indices);
  for (int64_t i = 0; i < n; ++i) {
    int64_t v = cpu::indexAt(indices, i);
    if (v < 0 || v >= vocab)
      return c.fail(DISTRT_ERROR_INVALID_ARGUMENT, "indices[", i, "] = ", v,
                    " is outside the table's [0, ", vocab, ") rows");
  }
  return DISTRT_OK;
}

distrt_status checkEmbedding(Checker &c, const char *tableName,
                             const distrt_tensor *table,
                             const distrt_tensor *indices,
                             const char *yName, const distrt_tensor *y) {
  DISTRT_TRY(c.tensor(tableName, table, DISTRT_F32));
  DISTRT_TRY(c.indexTensor("indices", indices));
  DISTRT_TRY(c.tensor(yName, y, DISTRT_F32));
  if (table->rank != 2)
    return c.fail(DISTRT_ERROR_SHAPE_MISMATCH, "'", tableName, "' has shape ",
                  shapeString(*table), "; expected [V, D]");
  if (indices->rank >= DISTRT_MAX_RANK)
    return c.fail(DISTRT_ERROR_SHAPE_MISMATCH, "indices rank ",
                  indices->rank, " leaves no room for the embedding dim");
  std::vector<int64_t> expect = dimsOf(*indices);
  expect.push_back(table->dims[1]);
  return c.shape(yName, y, expect);
}

} // namespace

extern "C" distrt_status distrt_embedding(distrt_context *ctx,
                                          const distrt_tensor *table,
                                          const distrt_tensor *indices,
                                          const distrt_tensor *y) {
  const char *fn = "distrt_embedding";
  Checker c(ctx, fn);
  DISTRT_TRY(c.context());
  DISTRT_TRY(checkEmbedding(c, "table", table, indices, "y", y));
  int64_t n = distrt_numel(indices), v = table->dims[0], d = table->dims[1];
  DISTRT_ON_CUDA(ctx, cuda::embedding(ctx, cpu::f32(table), indices->data,
                                      indices->dtype == DISTRT_I64,
                                      cpu::f32(y), n, v, d));
  DISTRT_TRY(checkIndices(c, indices, v));
  const float *pt = cpu::f32(table);
  float *py = cpu::f32(y);
  cpu::parallelFor(n, [&](int64_t i) {
    const float *row = pt + cpu::indexAt(indices, i) * d;
    std::copy(row, row + d, py + i * d);
  });
  return DISTRT_OK;
}

extern "C" distrt_status distrt_embedding_bwd(distrt_context *ctx,
                                              const distrt_tensor *indices,
                                              const distrt_tensor *dy,
                                              const distrt_tensor *dtable,
                                              int32_t accumulate) {
  const char *fn = "distrt_embedding_bwd";
  Checker c(ctx, fn);
  DISTRT_TRY(c.context());
  DISTRT_TRY(checkEmbedding(c, "dtable", dtable, indices, "dy", dy));
  int64_t n = distrt_numel(indices), v = dtable->dims[0], d = dtable->dims[1];
  DISTRT_ON_CUDA(ctx, cuda::embeddingBwd(ctx, indices->data,
                                         indices->dtype == DISTRT_I64,
                                         cpu::f32(dy), cpu::f32(dtable), n, v,
                                         d, accumulate));
  DISTRT_TRY(checkIndices(c, indices, v));
  float *pt = cpu::f32(dtable);
  const float *pdy = cpu::f32(dy);
  if (!accumulate)
    std::fill(pt, pt + v * d, 0.0f);
  // Rows may repeat: parallelize over the embedding dim, not the indices,
  // so no two threads add into the same element.
  cpu::parallelFor(d, [&](int64_t j) {
    for (int64_t i = 0; i < n; ++i)
      pt[cpu::indexAt(indices, i) * d + j] += pdy[i * d + j];
  });
  return DISTRT_OK;
}
