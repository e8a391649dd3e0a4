//===- SkinnyGemm.cpp - A few rows times constant weights -------*- C++ -*-===//
#include "cpu/SkinnyGemm.h"

#include "ScalarOps.h"
#include "cpu/VecMath.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

using namespace distrt;
using namespace distrt::cpu;

SkinnyWeights cpu::packSkinny(const float *b, int64_t k, int64_t n, int64_t sk,
                              int64_t sn) {
  SkinnyWeights w;
  w.k = k;
  w.n = n;
  w.strideK = sk;
  w.strideN = sn;
  int64_t panels = (n + kSkinnyPanel - 1) / kSkinnyPanel;
  w.panels.assign((size_t)(panels * k * kSkinnyPanel), 0.0f);
  for (int64_t p = 0; p < panels; ++p) {
    float *dst = w.panels.data() + p * k * kSkinnyPanel;
    int64_t cols = std::min(kSkinnyPanel, n - p * kSkinnyPanel);
    for (int64_t j = 0; j < cols; ++j) {
      int64_t col = p * kSkinnyPanel + j;
      for (int64_t kk = 0; kk < k; ++kk)
        dst[kk * kSkinnyPanel + j] = b[kk * sk + col * sn];
    }
  }
  return w;
}

namespace {

/// One panel: out[r][0..16) = sum_k a[r][k] * panel[k][0..16), for R rows,
/// with L-lane vectors.
template <typename V, int R>
inline __attribute__((always_inline)) void
panelRows(const float *a, int64_t lda, const float *panel, int64_t k,
          float *out) {
  constexpr int L = sizeof(V) / sizeof(float);
  constexpr int G = kSkinnyPanel / L;
  V acc[R][G];
  for (int r = 0; r < R; ++r)
    for (int g = 0; g < G; ++g)
      acc[r][g] = V{};
  for (int64_t kk = 0; kk < k; ++kk) {
    V w[G];
    for (int g = 0; g < G; ++g)
      std::memcpy(&w[g], panel + kk * kSkinnyPanel + g * L, sizeof(V));
    // The scalar times a vector compiles to one broadcast from memory; a
    // splat written `V{} + x` costs an add too (-0 + 0 is not -0).
    for (int r = 0; r < R; ++r) {
      float x = a[r * lda + kk];
      for (int g = 0; g < G; ++g)
        acc[r][g] += x * w[g];
    }
  }
  for (int r = 0; r < R; ++r)
    for (int g = 0; g < G; ++g)
      std::memcpy(out + r * kSkinnyPanel + g * L, &acc[r][g], sizeof(V));
}

typedef float V4 __attribute__((vector_size(16)));
typedef float V8 __attribute__((vector_size(32)));

// One panel per call; the panel loop (and its OpenMP region, whose
// outlined body would not inherit a target attribute) is in product().
template <int R>
__attribute__((target("avx2,fma"))) void panelAvx2(const float *a, int64_t lda,
                                                   const float *panel,
                                                   int64_t k, float *out) {
  panelRows<V8, R>(a, lda, panel, k, out);
}
template <int R>
void panelBase(const float *a, int64_t lda, const float *panel, int64_t k,
               float *out) {
  panelRows<V4, R>(a, lda, panel, k, out);
}

using PanelFn = void (*)(const float *, int64_t, const float *, int64_t,
                         float *);

PanelFn panelFor(int64_t m) {
  bool avx2 = vec::useAvx2();
  switch (m) {
  case 1:
    return avx2 ? panelAvx2<1> : panelBase<1>;
  case 2:
    return avx2 ? panelAvx2<2> : panelBase<2>;
  case 3:
    return avx2 ? panelAvx2<3> : panelBase<3>;
  default:
    return avx2 ? panelAvx2<4> : panelBase<4>;
  }
}

/// tmp [m, ldt] (ldt >= n, a multiple of the panel) = a x w.
void product(const float *a, int64_t lda, int64_t m, const SkinnyWeights &w,
             float *tmp, int64_t ldt) {
  PanelFn panel = panelFor(m);
  int64_t panels = (w.n + kSkinnyPanel - 1) / kSkinnyPanel;
  // Threads split the panels when there is a weight stream worth sharing.
#pragma omp parallel for schedule(static) if (panels >= 32)
  for (int64_t p = 0; p < panels; ++p) {
    float out[kSkinnyMaxRows * kSkinnyPanel];
    panel(a, lda, w.panels.data() + p * w.k * kSkinnyPanel, w.k, out);
    for (int64_t r = 0; r < m; ++r)
      std::memcpy(tmp + r * ldt + p * kSkinnyPanel, out + r * kSkinnyPanel,
                  sizeof(float) * kSkinnyPanel);
  }
}

/// The eltwise post-op `p` (oneDNN's formulas; transcendental ones in
/// float through libm: they run on a few rows).
float eltwiseOp(const distrt_post_op &p, float x) {
  switch (p.alg) {
  case DISTRT_ELTWISE_RELU:
    return x > 0.0f ? x : x * p.alpha;
  case DISTRT_ELTWISE_LINEAR:
    return p.alpha * x + p.beta;
  case DISTRT_ELTWISE_CLIP:
    return x <= p.alpha ? p.alpha : x >= p.beta ? p.beta : x;
  case DISTRT_ELTWISE_HARDSWISH: {
    float v = x + 3.0f;
    v = v <= 0.0f ? 0.0f : v >= 6.0f ? 6.0f : v;
    return x * v / 6.0f;
  }
  case DISTRT_ELTWISE_ELU:
    return x > 0.0f ? x : p.alpha * (std::exp(x) - 1.0f);
  case DISTRT_ELTWISE_SOFTPLUS:
    return x > 20.0f ? x : std::log1p(std::exp(x));
  default:
    break;
  }
  // The others are the runtime's unary ops (checkPostOps refused unknown
  // algorithms).
  static constexpr int32_t kUnary[][2] = {
      {DISTRT_ELTWISE_GELU, DISTRT_UNARY_GELU},
      {DISTRT_ELTWISE_GELU_TANH, DISTRT_UNARY_GELU_TANH},
      {DISTRT_ELTWISE_TANH, DISTRT_UNARY_TANH},
      {DISTRT_ELTWISE_SIGMOID, DISTRT_UNARY_SIGMOID},
      {DISTRT_ELTWISE_SILU, DISTRT_UNARY_SILU},
      {DISTRT_ELTWISE_EXP, DISTRT_UNARY_EXP},
      {DISTRT_ELTWISE_LOG, DISTRT_UNARY_LOG},
      {DISTRT_ELTWISE_SQRT, DISTRT_UNARY_SQRT},
      {DISTRT_ELTWISE_ABS, DISTRT_UNARY_ABS}};
  for (const auto &u : kUnary)
    if (u[0] == p.alg)
      return unaryFwd(u[1], x);
  return x;
}

} // namespace

void cpu::skinnyMatmul(const float *a, int64_t lda, int64_t m,
                       const SkinnyWeights &w, const float *bias, float *c,
                       int64_t ldc, const distrt_compute_ex *ex) {
  int64_t n = w.n;
  int64_t ldt = (n + kSkinnyPanel - 1) / kSkinnyPanel * kSkinnyPanel;
  std::vector<float> tmp((size_t)(m * ldt));
  product(a, lda, m, w, tmp.data(), ldt);
  // Binary operands aligned to [m, n]: broadcast dims read with stride 0.
  struct Src1 {
    const float *data;
    int64_t rowStride, colStride;
  };
  Src1 src1[DISTRT_MAX_POST_OPS] = {};
  int count = ex ? ex->count : 0;
  for (int i = 0; i < count; ++i) {
    const distrt_tensor &t = ex->post[i].src1;
    if (ex->post[i].kind != DISTRT_POST_BINARY)
      continue;
    std::vector<int64_t> st = stridesOf(t);
    int64_t d0 = t.rank >= 2 ? t.dims[t.rank - 2] : 1;
    int64_t d1 = t.rank >= 1 ? t.dims[t.rank - 1] : 1;
    int64_t s0 = t.rank >= 2 ? st[(size_t)t.rank - 2] : 0;
    int64_t s1 = t.rank >= 1 ? st[(size_t)t.rank - 1] : 0;
    src1[i] = {static_cast<const float *>(t.data), d0 == 1 ? 0 : s0,
               d1 == 1 ? 0 : s1};
  }
  for (int64_t r = 0; r < m; ++r) {
    const float *row = tmp.data() + r * ldt;
    float *out = c + r * ldc;
    for (int64_t j = 0; j < n; ++j) {
      float v = row[j];
      int first = 0;
      if (count > 0 && ex->post[0].kind == DISTRT_POST_SUM) {
        v += out[j];
        first = 1;
      }
      if (bias)
        v += bias[j];
      for (int i = first; i < count; ++i) {
        const distrt_post_op &p = ex->post[i];
        if (p.kind == DISTRT_POST_BINARY)
          v = binaryFwd(
              p.alg, v,
              src1[i].data[r * src1[i].rowStride + j * src1[i].colStride]);
        else
          v = eltwiseOp(p, v);
      }
      out[j] = v;
    }
  }
}
