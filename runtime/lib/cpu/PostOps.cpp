//===- PostOps.cpp - oneDNN post-ops from distrt_compute_ex -----*- C++ -*-===//
#include "cpu/PostOps.h"
#include "cpu/VecMath.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

using namespace distrt;
using dnnl::algorithm;
using dnnl::memory;

namespace {

struct Eltwise {
  algorithm alg;
  float alpha, beta;
};

Eltwise eltwiseOf(const distrt_post_op &p) {
  switch (p.alg) {
  case DISTRT_ELTWISE_RELU:
    return {algorithm::eltwise_relu, p.alpha, 0.f};
  case DISTRT_ELTWISE_GELU:
    return {algorithm::eltwise_gelu_erf, 0.f, 0.f};
  case DISTRT_ELTWISE_GELU_TANH:
    return {algorithm::eltwise_gelu_tanh, 0.f, 0.f};
  case DISTRT_ELTWISE_TANH:
    return {algorithm::eltwise_tanh, 0.f, 0.f};
  case DISTRT_ELTWISE_SIGMOID:
    return {algorithm::eltwise_logistic, 0.f, 0.f};
  case DISTRT_ELTWISE_SILU:
    return {algorithm::eltwise_swish, 1.f, 0.f};
  case DISTRT_ELTWISE_EXP:
    return {algorithm::eltwise_exp, 0.f, 0.f};
  case DISTRT_ELTWISE_LOG:
    return {algorithm::eltwise_log, 0.f, 0.f};
  case DISTRT_ELTWISE_SQRT:
    return {algorithm::eltwise_sqrt, 0.f, 0.f};
  case DISTRT_ELTWISE_ABS:
    return {algorithm::eltwise_abs, 0.f, 0.f};
  case DISTRT_ELTWISE_LINEAR:
    return {algorithm::eltwise_linear, p.alpha, p.beta};
  case DISTRT_ELTWISE_CLIP:
    return {algorithm::eltwise_clip_v2, p.alpha, p.beta};
  case DISTRT_ELTWISE_HARDSWISH:
    return {algorithm::eltwise_hardswish, 0.f, 0.f};
  case DISTRT_ELTWISE_ELU:
    return {algorithm::eltwise_elu, p.alpha, 0.f};
  default:
    return {algorithm::eltwise_soft_relu, 0.f, 0.f};
  }
}

/// src1's dims with leading ones to `rank`.
memory::dims src1Dims(const distrt_tensor &t, size_t rank) {
  memory::dims d(rank - (size_t)t.rank, 1);
  d.insert(d.end(), t.dims, t.dims + t.rank);
  return d;
}

/// src1's descriptor aligned to `rank`, with its strides (a channels-last
/// residual is read as it lies).
memory::desc src1Desc(const distrt_tensor &t, size_t rank) {
  memory::dims d = src1Dims(t, rank);
  std::vector<int64_t> st = stridesOf(t);
  memory::dims s(rank - (size_t)t.rank, 0);
  s.insert(s.end(), st.begin(), st.end());
  for (size_t i = rank; i-- > 0;)
    if (s[i] == 0)
      s[i] = i + 1 < rank ? s[i + 1] * d[i + 1] : 1;
  return memory::desc(d, memory::data_type::f32, s);
}

/// Whether `t` (aligned to the trailing dims of an output with strides
/// `out`) is dense in the output's dim order on its non-unit dims: a
/// row-major operand of a row-major output, a channels-last residual of a
/// channels-last one, a per-channel vector of either.
bool inOutputOrder(const distrt_tensor &t, const std::vector<int64_t> &out) {
  size_t r = (size_t)t.rank, lead = out.size() - r;
  std::vector<size_t> order(r);
  for (size_t d = 0; d < r; ++d)
    order[d] = d;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return out[lead + a] > out[lead + b];
  });
  std::vector<int64_t> s = stridesOf(t);
  int64_t inner = 1;
  for (size_t k = r; k-- > 0;) {
    size_t d = order[k];
    if (t.dims[d] != 1 && s[d] != inner)
      return false;
    inner *= t.dims[d];
  }
  return true;
}

} // namespace

bool cpu::binaryAlgorithm(int op, algorithm &alg) {
  switch (op) {
  case DISTRT_BINARY_ADD:
    alg = algorithm::binary_add;
    return true;
  case DISTRT_BINARY_SUB:
    alg = algorithm::binary_sub;
    return true;
  case DISTRT_BINARY_MUL:
    alg = algorithm::binary_mul;
    return true;
  case DISTRT_BINARY_DIV:
    alg = algorithm::binary_div;
    return true;
  case DISTRT_BINARY_MAX:
    alg = algorithm::binary_max;
    return true;
  case DISTRT_BINARY_MIN:
    alg = algorithm::binary_min;
    return true;
  }
  return false;
}

distrt_status cpu::checkPostOps(Checker &c, const distrt_compute_ex *ex,
                                const std::vector<int64_t> &outDims,
                                const std::vector<int64_t> &outStrides) {
  if (!ex)
    return DISTRT_OK;
  if (ex->count < 0 || ex->count > DISTRT_MAX_POST_OPS)
    return c.fail(DISTRT_ERROR_INVALID_ARGUMENT, "ex->count = ", ex->count,
                  " post-ops; at most ", DISTRT_MAX_POST_OPS);
  for (int i = 0; i < ex->count; ++i) {
    const distrt_post_op &p = ex->post[i];
    switch (p.kind) {
    case DISTRT_POST_ELTWISE:
      if (p.alg < 0 || p.alg >= DISTRT_ELTWISE_COUNT_)
        return c.fail(DISTRT_ERROR_INVALID_ARGUMENT, "post-op ", i,
                      ": unknown eltwise algorithm ", p.alg,
                      "; use a distrt_eltwise_alg value");
      break;
    case DISTRT_POST_SUM:
      if (i != 0)
        return c.fail(DISTRT_ERROR_UNSUPPORTED, "post-op ", i,
                      ": a sum must be the first post-op");
      break;
    case DISTRT_POST_BINARY: {
      if (p.alg < DISTRT_BINARY_ADD || p.alg > DISTRT_BINARY_MIN ||
          p.alg == DISTRT_BINARY_POW)
        return c.fail(DISTRT_ERROR_INVALID_ARGUMENT, "post-op ", i,
                      ": binary post-ops are add, sub, mul, div, max or min");
      bool strided = c.stridedAllowed();
      c.allowStrided();
      distrt_status st = c.tensor("post-op src1", &p.src1, DISTRT_F32);
      c.allowStrided(strided);
      DISTRT_TRY(st);
      bool fits = p.src1.rank <= (int)outDims.size();
      for (int d = 0; fits && d < p.src1.rank; ++d) {
        int64_t o = outDims[outDims.size() - (size_t)p.src1.rank + (size_t)d];
        fits = p.src1.dims[d] == 1 || p.src1.dims[d] == o;
      }
      if (!fits)
        return c.fail(DISTRT_ERROR_SHAPE_MISMATCH, "post-op ", i, ": src1 ",
                      shapeString(p.src1), " does not broadcast to the output ",
                      shapeString(outDims));
      if (!inOutputOrder(p.src1, outStrides))
        return c.fail(DISTRT_ERROR_UNSUPPORTED, "post-op ", i, ": src1 ",
                      shapeString(p.src1), " with strides ",
                      shapeString(stridesOf(p.src1)),
                      " is not laid out in the output's dim order (output "
                      "strides ",
                      shapeString(outStrides), "); copy it into that layout");
      break;
    }
    default:
      return c.fail(DISTRT_ERROR_INVALID_ARGUMENT, "post-op ", i,
                    ": unknown kind ", p.kind,
                    "; use a distrt_post_op_kind value");
    }
  }
  return DISTRT_OK;
}

std::string cpu::postOpsKey(const distrt_compute_ex *ex, size_t rank) {
  if (!ex)
    return "";
  std::string k = "|post";
  for (int i = 0; i < ex->count; ++i) {
    const distrt_post_op &p = ex->post[i];
    k += ":" + std::to_string(p.kind) + "," + std::to_string(p.alg) + "," +
         std::to_string(p.alpha) + "," + std::to_string(p.beta);
    if (p.kind == DISTRT_POST_BINARY) {
      std::vector<int64_t> st = stridesOf(p.src1);
      k += "," + dimsKey(src1Dims(p.src1, rank)) + "/" +
           dimsKey(memory::dims(st.begin(), st.end()));
    }
  }
  return k;
}

void cpu::appendPostOps(dnnl::post_ops &ops, const distrt_compute_ex *ex,
                        int first, size_t rank) {
  if (!ex)
    return;
  for (int i = first; i < ex->count; ++i) {
    const distrt_post_op &p = ex->post[i];
    if (p.kind == DISTRT_POST_SUM) {
      ops.append_sum(1.0f);
    } else if (p.kind == DISTRT_POST_ELTWISE) {
      Eltwise e = eltwiseOf(p);
      ops.append_eltwise(1.0f, e.alg, e.alpha, e.beta);
    } else {
      algorithm alg = algorithm::binary_add;
      binaryAlgorithm(p.alg, alg);
      ops.append_binary(alg, src1Desc(p.src1, rank));
    }
  }
}

void cpu::postOpArgs(CpuState &st, std::unordered_map<int, memory> &args,
                     const distrt_compute_ex *ex, int first, int index,
                     size_t rank) {
  if (!ex)
    return;
  for (int i = first; i < ex->count; ++i, ++index) {
    const distrt_post_op &p = ex->post[i];
    if (p.kind == DISTRT_POST_BINARY)
      args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(index) | DNNL_ARG_SRC_1] =
          mem(st, src1Desc(p.src1, rank), p.src1.data);
  }
}

namespace {

template <typename V>
inline __attribute__((always_inline)) void geluTanhBlock(float *x, int64_t n) {
  constexpr int64_t L = sizeof(V) / sizeof(float);
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    V v;
    std::memcpy(&v, x + i, sizeof(V));
    v = vec::unary<DISTRT_UNARY_GELU_TANH, V>(v);
    std::memcpy(x + i, &v, sizeof(V));
  }
  if (i < n) { // the tail through a zero-padded vector
    V v = {};
    std::memcpy(&v, x + i, sizeof(float) * (size_t)(n - i));
    v = vec::unary<DISTRT_UNARY_GELU_TANH, V>(v);
    std::memcpy(x + i, &v, sizeof(float) * (size_t)(n - i));
  }
}

__attribute__((target("avx2,fma"))) void geluTanhAvx2(float *x, int64_t n) {
  geluTanhBlock<vec::V8>(x, n);
}
void geluTanhBase(float *x, int64_t n) { geluTanhBlock<vec::V4>(x, n); }

} // namespace

bool cpu::slowGeluTanh(dnnl::cpu_isa isa) {
  switch (isa) {
  case dnnl::cpu_isa::avx512_mic:
  case dnnl::cpu_isa::avx512_mic_4ops:
  case dnnl::cpu_isa::avx512_core:
  case dnnl::cpu_isa::avx512_core_vnni:
  case dnnl::cpu_isa::avx512_core_bf16:
  case dnnl::cpu_isa::avx512_core_amx:
    return false;
  default:
    return true;
  }
}

const distrt_compute_ex *cpu::trimSlowTail(const distrt_compute_ex *ex,
                                           const distrt_tensor &out,
                                           distrt_compute_ex &trimmed) {
  // What oneDNN dispatches to, not what the CPU has: DNNL_MAX_CPU_ISA=AVX2
  // on an AVX-512 CPU runs the AVX2 gelu_tanh. Fixed for the process.
  static const bool slow = slowGeluTanh(dnnl::get_effective_cpu_isa());
  if (!slow || !ex || ex->count < 1 || !isDense(out))
    return ex;
  const distrt_post_op &last = ex->post[ex->count - 1];
  if (last.kind != DISTRT_POST_ELTWISE || last.alg != DISTRT_ELTWISE_GELU_TANH)
    return ex;
  trimmed = *ex;
  --trimmed.count;
  return &trimmed;
}

void cpu::applyTrimmedTail(CpuState &st, const distrt_tensor &out) {
  ++st.vectorTails;
  auto run = vec::useAvx2() ? geluTanhAvx2 : geluTanhBase;
  float *x = static_cast<float *>(out.data);
  int64_t n = distrt_numel(&out);
  constexpr int64_t kChunk = 16384;
  int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (int64_t c = 0; c < chunks; ++c)
    run(x + c * kChunk, std::min(kChunk, n - c * kChunk));
}
