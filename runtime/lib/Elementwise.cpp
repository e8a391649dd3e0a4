//===- Elementwise.cpp - Unary and broadcast binary ops --------*- C++ -*-===//
//
// Unary ops and their gradients run on oneDNN eltwise; binary ops on oneDNN
// binary when the first operand already has the output shape (its only
// broadcast form), else on a strided loop. Gradients of broadcast operands
// are summed back to the operand's shape with a oneDNN reduction.
//
//===----------------------------------------------------------------------===//
#include "Internal.h"
#include "ScalarOps.h"
#include "cpu/CpuState.h"
#include "cpu/Loops.h"
#include "cpu/PostOps.h"
#ifdef DISTRT_HAVE_CUDA
#include "cuda/CudaApi.h"
#endif

using namespace distrt;
using dnnl::algorithm;
using dnnl::memory;

namespace {

struct EltwiseAlg {
  algorithm alg;
  float alpha, beta;
};

EltwiseAlg eltwiseAlg(int op) {
  switch (op) {
  case DISTRT_UNARY_RELU:
    return {algorithm::eltwise_relu, 0.f, 0.f};
  case DISTRT_UNARY_GELU:
    return {algorithm::eltwise_gelu_erf, 0.f, 0.f};
  case DISTRT_UNARY_GELU_TANH:
    return {algorithm::eltwise_gelu_tanh, 0.f, 0.f};
  case DISTRT_UNARY_TANH:
    return {algorithm::eltwise_tanh, 0.f, 0.f};
  case DISTRT_UNARY_SIGMOID:
    return {algorithm::eltwise_logistic, 0.f, 0.f};
  case DISTRT_UNARY_SILU:
    return {algorithm::eltwise_swish, 1.f, 0.f};
  case DISTRT_UNARY_EXP:
    return {algorithm::eltwise_exp, 0.f, 0.f};
  case DISTRT_UNARY_LOG:
    return {algorithm::eltwise_log, 0.f, 0.f};
  case DISTRT_UNARY_SQRT:
    return {algorithm::eltwise_sqrt, 0.f, 0.f};
  case DISTRT_UNARY_NEG:
    return {algorithm::eltwise_linear, -1.f, 0.f};
  case DISTRT_UNARY_ABS:
    return {algorithm::eltwise_abs, 0.f, 0.f};
  case DISTRT_UNARY_SQUARE:
    return {algorithm::eltwise_square, 0.f, 0.f};
  case DISTRT_UNARY_RECIPROCAL:
    return {algorithm::eltwise_pow, 1.f, -1.f};
  default:
    return {algorithm::eltwise_soft_relu, 0.f, 0.f};
  }
}

distrt_status checkUnaryOp(Checker &c, int op) {
  if (op < 0 || op >= DISTRT_UNARY_COUNT_)
    return c.fail(DISTRT_ERROR_INVALID_ARGUMENT, "unknown unary op ", op,
                  "; use a distrt_unary_op value");
  return DISTRT_OK;
}

distrt_status checkBinaryOp(Checker &c, int op) {
  if (op < 0 || op >= DISTRT_BINARY_COUNT_)
    return c.fail(DISTRT_ERROR_INVALID_ARGUMENT, "unknown binary op ", op,
                  "; use a distrt_binary_op value");
  return DISTRT_OK;
}

/// b's dims padded with leading ones to `rank`.
memory::dims alignedDims(const distrt_tensor &t, size_t rank) {
  memory::dims d(rank - t.rank, 1);
  d.insert(d.end(), t.dims, t.dims + t.rank);
  return d;
}

#ifdef DISTRT_HAVE_CUDA
cuda::BroadcastDesc makeDesc(const std::vector<int64_t> &dims,
                             const std::vector<const distrt_tensor *> &ops) {
  cuda::BroadcastDesc d;
  d.rank = static_cast<int32_t>(dims.size());
  for (int i = 0; i < d.rank; ++i)
    d.dims[i] = dims[i];
  for (size_t j = 0; j < ops.size(); ++j) {
    std::vector<int64_t> s = broadcastStrides(*ops[j], dims);
    for (int i = 0; i < d.rank; ++i)
      d.strides[j][i] = s[i];
  }
  return d;
}
#endif

} // namespace

/// Sum of x over the dims that broadcasting expanded, into y (CPU).
static void cpuReduceToShape(distrt_context *ctx, const distrt_tensor &x,
                             const distrt_tensor &y) {
  cpu::CpuState &st = cpu::state(ctx);
  int64_t n = distrt_numel(&x);
  if (sameShape(x, y) || distrt_numel(&y) == n) {
    if (x.data != y.data)
      std::copy(cpu::f32(&x), cpu::f32(&x) + n, cpu::f32(&y));
    return;
  }
  if (n == 0) {
    std::fill(cpu::f32(&y), cpu::f32(&y) + distrt_numel(&y), 0.0f);
    return;
  }
  memory::dims xd(x.dims, x.dims + x.rank);
  memory::dims yd = alignedDims(y, x.rank);
  memory::desc xMd = cpu::plainDesc(xd), yMd = cpu::plainDesc(yd);
  dnnl::primitive &prim = st.primitive(
      "reduce_to:" + cpu::dimsKey(xd) + "|" + cpu::dimsKey(yd), [&] {
        dnnl::reduction::desc d(algorithm::reduction_sum, xMd, yMd, 0.f, 0.f);
        return dnnl::reduction(dnnl::reduction::primitive_desc(d, st.engine));
      });
  prim.execute(st.stream, {{DNNL_ARG_SRC, cpu::mem(st, xMd, x.data)},
                           {DNNL_ARG_DST, cpu::mem(st, yMd, y.data)}});
  st.stream.wait();
}

namespace distrt {
/// Shared with other families: reduce an output-shaped buffer to `y`.
distrt_status reduceToShapeImpl(distrt_context *ctx, const distrt_tensor &x,
                                const distrt_tensor &y);
} // namespace distrt

distrt_status distrt::reduceToShapeImpl(distrt_context *ctx,
                                        const distrt_tensor &x,
                                        const distrt_tensor &y) {
#ifdef DISTRT_HAVE_CUDA
  if (ctx->isCuda()) {
    std::vector<int64_t> xd = dimsOf(x);
    cuda::BroadcastDesc d = makeDesc(xd, {&y});
    int64_t yn = distrt_numel(&y);
    return cuda::reduce(ctx, DISTRT_REDUCE_SUM, d, cpu::f32(&x), cpu::f32(&y),
                        yn, yn ? distrt_numel(&x) / yn : 0);
  }
#endif
  cpuReduceToShape(ctx, x, y);
  return DISTRT_OK;
}

extern "C" distrt_status distrt_unary(distrt_context *ctx, distrt_unary_op op,
                                      const distrt_tensor *x,
                                      const distrt_tensor *y) {
  const char *fn = "distrt_unary";
  Checker c(ctx, fn);
  DISTRT_TRY(c.context());
  DISTRT_TRY(checkUnaryOp(c, op));
  DISTRT_TRY(c.tensor("x", x, DISTRT_F32));
  DISTRT_TRY(c.tensor("y", y, DISTRT_F32));
  DISTRT_TRY(c.same("x", x, "y", y));
  int64_t n = distrt_numel(x);
  DISTRT_ON_CUDA(ctx, cuda::unary(ctx, op, cpu::f32(x), cpu::f32(y), n));
  if (n == 0)
    return DISTRT_OK;
  return guardCall(ctx, fn, [&] {
    cpu::CpuState &st = cpu::state(ctx);
    memory::desc md = cpu::plainDesc({n});
    EltwiseAlg a = eltwiseAlg(op);
    dnnl::primitive &prim = st.primitive(
        "eltwise:" + std::to_string(op) + ":" + std::to_string(n), [&] {
          dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_training,
                                        a.alg, md, a.alpha, a.beta);
          return dnnl::eltwise_forward(
              dnnl::eltwise_forward::primitive_desc(d, st.engine));
        });
    prim.execute(st.stream, {{DNNL_ARG_SRC, cpu::mem(st, md, x->data)},
                             {DNNL_ARG_DST, cpu::mem(st, md, y->data)}});
    st.stream.wait();
    return DISTRT_OK;
  });
}

extern "C" distrt_status distrt_unary_bwd(distrt_context *ctx,
                                          distrt_unary_op op,
                                          const distrt_tensor *x,
                                          const distrt_tensor *dy,
                                          const distrt_tensor *dx) {
  const char *fn = "distrt_unary_bwd";
  Checker c(ctx, fn);
  DISTRT_TRY(c.context());
  DISTRT_TRY(checkUnaryOp(c, op));
  DISTRT_TRY(c.tensor("x", x, DISTRT_F32));
  DISTRT_TRY(c.tensor("dy", dy, DISTRT_F32));
  DISTRT_TRY(c.tensor("dx", dx, DISTRT_F32));
  DISTRT_TRY(c.same("x", x, "dy", dy));
  DISTRT_TRY(c.same("x", x, "dx", dx));
  int64_t n = distrt_numel(x);
  DISTRT_ON_CUDA(ctx, cuda::unaryBwd(ctx, op, cpu::f32(x), cpu::f32(dy),
                                     cpu::f32(dx), n));
  if (n == 0)
    return DISTRT_OK;
  return guardCall(ctx, fn, [&] {
    cpu::CpuState &st = cpu::state(ctx);
    memory::desc md = cpu::plainDesc({n});
    EltwiseAlg a = eltwiseAlg(op);
    dnnl::primitive &prim = st.primitive(
        "eltwise_bwd:" + std::to_string(op) + ":" + std::to_string(n), [&] {
          dnnl::eltwise_forward::desc fd(dnnl::prop_kind::forward_training,
                                         a.alg, md, a.alpha, a.beta);
          dnnl::eltwise_forward::primitive_desc fpd(fd, st.engine);
          dnnl::eltwise_backward::desc d(a.alg, md, md, a.alpha, a.beta);
          return dnnl::eltwise_backward(
              dnnl::eltwise_backward::primitive_desc(d, st.engine, fpd));
        });
    prim.execute(st.stream, {{DNNL_ARG_SRC, cpu::mem(st, md, x->data)},
                             {DNNL_ARG_DIFF_DST, cpu::mem(st, md, dy->data)},
                             {DNNL_ARG_DIFF_SRC, cpu::mem(st, md, dx->data)}});
    st.stream.wait();
    return DISTRT_OK;
  });
}

static distrt_status checkBinary(Checker &c, int op, const distrt_tensor *a,
                                 const distrt_tensor *b,
                                 std::vector<int64_t> &out) {
  DISTRT_TRY(checkBinaryOp(c, op));
  DISTRT_TRY(c.tensor("a", a, DISTRT_F32));
  DISTRT_TRY(c.tensor("b", b, DISTRT_F32));
  if (!broadcastDims(*a, *b, out))
    return c.fail(DISTRT_ERROR_SHAPE_MISMATCH, "operands ", shapeString(*a),
                  " and ", shapeString(*b),
                  " do not broadcast (NumPy rules: trailing dims must be "
                  "equal or 1)");
  return DISTRT_OK;
}

extern "C" distrt_status distrt_binary(distrt_context *ctx,
                                       distrt_binary_op op,
                                       const distrt_tensor *a,
                                       const distrt_tensor *b,
                                       const distrt_tensor *y) {
  const char *fn = "distrt_binary";
  Checker c(ctx, fn);
  DISTRT_TRY(c.context());
  std::vector<int64_t> out;
  DISTRT_TRY(checkBinary(c, op, a, b, out));
  DISTRT_TRY(c.tensor("y", y, DISTRT_F32));
  DISTRT_TRY(c.shape("y", y, out));
  DISTRT_ON_CUDA(ctx, cuda::binary(ctx, op, makeDesc(out, {a, b}),
                                   cpu::f32(a), cpu::f32(b), cpu::f32(y)));
  if (distrt_numel(y) == 0)
    return DISTRT_OK;
  return guardCall(ctx, fn, [&] {
    algorithm alg;
    if (dimsOf(*a) == out && cpu::binaryAlgorithm(op, alg)) {
      cpu::CpuState &st = cpu::state(ctx);
      memory::dims od = out.empty() ? memory::dims{1}
                                    : memory::dims(out.begin(), out.end());
      memory::dims bd = alignedDims(*b, od.size());
      memory::desc aMd = cpu::plainDesc(od), bMd = cpu::plainDesc(bd);
      dnnl::primitive &prim = st.primitive(
          "binary:" + std::to_string(op) + ":" + cpu::dimsKey(od) + "|" +
              cpu::dimsKey(bd),
          [&] {
            dnnl::binary::desc d(alg, aMd, bMd, aMd);
            return dnnl::binary(dnnl::binary::primitive_desc(d, st.engine));
          });
      prim.execute(st.stream, {{DNNL_ARG_SRC_0, cpu::mem(st, aMd, a->data)},
                               {DNNL_ARG_SRC_1, cpu::mem(st, bMd, b->data)},
                               {DNNL_ARG_DST, cpu::mem(st, aMd, y->data)}});
      st.stream.wait();
      return DISTRT_OK;
    }
    const float *pa = cpu::f32(a), *pb = cpu::f32(b);
    float *py = cpu::f32(y);
    std::vector<int64_t> strides[2] = {broadcastStrides(*a, out),
                                       broadcastStrides(*b, out)};
    cpu::stridedLoop<2>(out, strides, [&](int64_t i, const int64_t *off) {
      py[i] = binaryFwd(op, pa[off[0]], pb[off[1]]);
    });
    return DISTRT_OK;
  });
}

extern "C" distrt_status
distrt_binary_bwd(distrt_context *ctx, distrt_binary_op op,
                  const distrt_tensor *a, const distrt_tensor *b,
                  const distrt_tensor *dy, const distrt_tensor *da,
                  const distrt_tensor *db) {
  const char *fn = "distrt_binary_bwd";
  Checker c(ctx, fn);
  DISTRT_TRY(c.context());
  std::vector<int64_t> out;
  DISTRT_TRY(checkBinary(c, op, a, b, out));
  DISTRT_TRY(c.tensor("dy", dy, DISTRT_F32));
  DISTRT_TRY(c.shape("dy", dy, out));
  DISTRT_TRY(c.optTensor("da", da, DISTRT_F32));
  DISTRT_TRY(c.optTensor("db", db, DISTRT_F32));
  if (da)
    DISTRT_TRY(c.same("da", da, "a", a));
  if (db)
    DISTRT_TRY(c.same("db", db, "b", b));
  int64_t n = distrt_numel(dy);
  return guardCall(ctx, fn, [&]() -> distrt_status {
    // Output-shaped partial gradients, then summed back to operand shapes.
    void *ga = nullptr, *gb = nullptr;
    size_t bytes = sizeof(float) * (n ? n : 1);
    distrt_status st = DISTRT_OK;
    if (da)
      st = distrt_alloc(ctx, bytes, &ga);
    if (db && st == DISTRT_OK)
      st = distrt_alloc(ctx, bytes, &gb);
    if (st == DISTRT_OK) {
#ifdef DISTRT_HAVE_CUDA
      if (ctx->isCuda())
        st = cuda::binaryBwd(ctx, op, makeDesc(out, {a, b}), cpu::f32(a),
                             cpu::f32(b), cpu::f32(dy),
                             static_cast<float *>(ga),
                             static_cast<float *>(gb));
      else
#endif
      {
        const float *pa = cpu::f32(a), *pb = cpu::f32(b), *pdy = cpu::f32(dy);
        float *fa = static_cast<float *>(ga), *fb = static_cast<float *>(gb);
        std::vector<int64_t> strides[2] = {broadcastStrides(*a, out),
                                           broadcastStrides(*b, out)};
        cpu::stridedLoop<2>(out, strides, [&](int64_t i, const int64_t *off) {
          float va = pa[off[0]], vb = pb[off[1]];
          if (fa)
            fa[i] = pdy[i] * binaryDerivA(op, va, vb);
          if (fb)
            fb[i] = pdy[i] * binaryDerivB(op, va, vb);
        });
      }
    }
    distrt_tensor full = *dy;
    if (st == DISTRT_OK && da) {
      full.data = ga;
      st = reduceToShapeImpl(ctx, full, *da);
    }
    if (st == DISTRT_OK && db) {
      full.data = gb;
      st = reduceToShapeImpl(ctx, full, *db);
    }
    if (ga)
      distrt_free(ctx, ga);
    if (gb)
      distrt_free(ctx, gb);
    return st;
  });
}

extern "C" distrt_status distrt_reduce_to_shape(distrt_context *ctx,
                                                const distrt_tensor *x,
                                                const distrt_tensor *y) {
  const char *fn = "distrt_reduce_to_shape";
  Checker c(ctx, fn);
  DISTRT_TRY(c.context());
  DISTRT_TRY(c.tensor("x", x, DISTRT_F32));
  DISTRT_TRY(c.tensor("y", y, DISTRT_F32));
  if (!broadcastsTo(*y, dimsOf(*x)))
    return c.fail(DISTRT_ERROR_SHAPE_MISMATCH, "'y' ", shapeString(*y),
                  " does not broadcast to 'x' ", shapeString(*x),
                  "; y must be the shape x was broadcast from");
  return guardCall(ctx, fn, [&] { return reduceToShapeImpl(ctx, *x, *y); });
}
