//===- SkinnyGemm.h - A few rows times constant weights ---------*- C++ -*-===//
//
// An inference matmul of a few rows (a classifier head on a batch of 2,
// a squeeze-excitation layer) by constant weights reads every weight once
// for a handful of multiply-adds: its time is the time to stream the
// weights. oneDNN's jit GEMM (the AVX2 path; AVX-512 machines run brgemm)
// copies the weight panels into its own buffers on every call first, which
// took MobileNetV3's 1024 x 1000 classifier on 2 rows to 0.5 ms where one
// pass over the 4 MB is about 0.2 ms. Here the weights are packed once
// (per address, like the runtime's other constant weights) into panels of
// 16 columns, K-major, and each panel is one streaming pass of fused
// multiply-adds with every row's accumulators in registers. The bias and
// the post-ops (any distrt_post_op: they run on a few rows) are applied
// after.
//
//===----------------------------------------------------------------------===//
#ifndef DISTRT_LIB_CPU_SKINNYGEMM_H
#define DISTRT_LIB_CPU_SKINNYGEMM_H

#include "Internal.h"

#include <cstdint>
#include <vector>

namespace distrt {
namespace cpu {

/// Rows (M) up to this many take the skinny path.
constexpr int64_t kSkinnyMaxRows = 4;
/// Columns per packed panel.
constexpr int64_t kSkinnyPanel = 16;

/// Weights op(B) = [K, N] in panels: panel p holds, for k = 0..K-1, columns
/// 16p..16p+15 (zeros past N).
struct SkinnyWeights {
  int64_t k = 0, n = 0, strideK = 0, strideN = 0;
  std::vector<float> panels;
};

/// Packs op(B) = [K, N] whose element (k, n) is `b[k * sk + n * sn]`.
SkinnyWeights packSkinny(const float *b, int64_t k, int64_t n, int64_t sk,
                         int64_t sn);

/// c = a (m rows, row stride lda) x w [+ bias (n values)], then `ex`'s
/// post-ops, for m <= kSkinnyMaxRows; c has row stride ldc and unit column
/// stride.
void skinnyMatmul(const float *a, int64_t lda, int64_t m,
                  const SkinnyWeights &w, const float *bias, float *c,
                  int64_t ldc, const distrt_compute_ex *ex);

} // namespace cpu
} // namespace distrt

#endif // DISTRT_LIB_CPU_SKINNYGEMM_H
