//===- RingAttention.h - Ring attention shared by backends -----*- C++ -*-===//
//
// The shapes distrt_ring_attention and its backward work on, the mask
// and which blocks it leaves visible, and the CUDA entry points
// (cuda/CudaRing.cu; compiled with NCCL) that RingAttention.cpp dispatches to
// on CUDA contexts.
//
//===----------------------------------------------------------------------===//
#ifndef DISTRT_LIB_RINGATTENTION_H
#define DISTRT_LIB_RINGATTENTION_H

#include "CommInternal.h"

#include <cstdint>
#include <vector>

namespace distrt {

#ifdef __CUDACC__
#define DISTRT_HOST_DEVICE __host__ __device__
#else
#define DISTRT_HOST_DEVICE
#endif

/// A mask entry at or below this drops its key: exp of a score this far
/// below the row's maximum is 0 in f32 (a -inf mask, or the finfo.min that
/// exporters fill masked scores with), so leaving the key out gives the
/// same result whenever the row sees some key.
constexpr float kMaskedBias = -1e30f;

/// One rank's attention problem: `batch` independent (row, head) pairs,
/// each of `sq` queries of `d` features against a ring of `ranks` blocks of
/// `skv` keys (`d` features) and values (`dv`), with an optional additive
/// mask `bias` [sq, ranks * skv] per pair (`biasStride` floats apart; 0
/// when every pair shares one), its columns the positions in natural
/// order. `balanced`: the sequence is cut into 2 ranks chunks and block k
/// is chunks k and 2 ranks - 1 - k (context parallelism's load-balanced
/// split), else block k is positions [k skv, (k+1) skv).
struct RingShape {
  int64_t batch = 1, sq = 0, skv = 0, d = 0, dv = 0;
  int32_t rank = 0, ranks = 1;
  float scale = 1;
  const float *bias = nullptr;
  int64_t biasStride = 0;
  bool balanced = false;

  /// The position of key `j` of block `block`.
  DISTRT_HOST_DEVICE int64_t positionOf(int32_t block, int64_t j) const {
    if (!balanced)
      return block * skv + j;
    const int64_t half = skv / 2;
    return j < half ? block * half + j
                    : (2 * int64_t(ranks) - 1 - block) * half + (j - half);
  }
  /// The mask of query `i` of pair `b` against key `j` of block `block`.
  DISTRT_HOST_DEVICE float biasAt(int64_t b, int64_t i, int32_t block,
                                  int64_t j) const {
    if (!bias)
      return 0;
    return bias[b * biasStride + i * ranks * skv + positionOf(block, j)];
  }
  /// The score scale q . k + mask of query `qi` and key `kj`, computed in
  /// `T`.
  template <typename T = float>
  DISTRT_HOST_DEVICE T scoreOf(const float *qi, const float *kj,
                               float mask) const {
    T dot = 0;
    for (int64_t x = 0; x < d; ++x)
      dot += T(qi[x]) * T(kj[x]);
    return dot * T(scale) + T(mask);
  }
  /// Floats of one key and value block (K then V).
  DISTRT_HOST_DEVICE int64_t kvFloats() const { return batch * skv * (d + dv); }
};

/// Whether any query of this rank sees a key of each block under the mask
/// `hostBias` (`shape.bias`'s values, readable here): a block wholly above
/// a causal mask's diagonal is not computed.
std::vector<bool> liveBlocks(const RingShape &shape, const float *hostBias);

/// The scores (query, key pairs the mask keeps) the calling thread's last
/// CPU ring forward computed over every block: the ring's work on this
/// rank. A dropped entry's score is not computed, so under a causal mask
/// the balanced split gives every rank the same count and the contiguous
/// one rank c about (2c + 1) times rank 0's (RingAttentionTest).
int64_t lastRingScores();

#if defined(DISTRT_HAVE_CUDA)
namespace cuda {
/// distrt_ring_attention on a CUDA context: `q`, `k`, `v`, `out`, `lse`
/// are device pointers of `shape`'s layout.
distrt_status ringAttention(distrt_comm *comm, const RingShape &shape,
                            const float *q, const float *k, const float *v,
                            float *out, float *lse);
distrt_status ringAttentionBackward(distrt_comm *comm, const RingShape &shape,
                                    const float *q, const float *k,
                                    const float *v, const float *out,
                                    const float *lse, const float *dout,
                                    float *dq, float *dk, float *dv);
} // namespace cuda
#endif

} // namespace distrt

#endif // DISTRT_LIB_RINGATTENTION_H
