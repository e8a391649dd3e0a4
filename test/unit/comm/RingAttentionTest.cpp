//===- RingAttentionTest.cpp - Ring attention on CPU contexts --*- C++ -*-===//
//
// distrt_ring_attention and its backward in any world: every rank builds
// the same whole sequence, takes its block (contiguous, or the balanced
// pair of chunks) and checks its part of the result against attention over
// the whole sequence computed here in double precision (the forward's
// output and log-sum-exp, the backward's query gradients of its rows and
// key/value gradients of its block). Alone it is one block; under
// `mpirun -np N` a ring of N. And the balance itself: the scores each rank
// of a causal ring computes (lastRingScores), the same on every rank of the
// balanced split.
//
//===----------------------------------------------------------------------===//
#include "RingAttention.h"
#include "CommFixture.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

namespace {

/// Attention over the whole sequence: `heads` x `seq` queries of `d`
/// features against as many keys, values of `dv`.
struct Whole {
  int64_t heads, seq, d, dv;
  bool causal;
  std::vector<double> q, k, v, dout;
  std::vector<double> out, lse, dq, dk, dv_;

  Whole(int64_t heads, int64_t seq, int64_t d, int64_t dv, bool causal)
      : heads(heads), seq(seq), d(d), dv(dv), causal(causal) {
    // A fixed pseudo-random sequence, the same on every rank.
    uint64_t state = 0x9e3779b97f4a7c15ull;
    auto next = [&]() {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      return double((state >> 40) % 2001) / 1000.0 - 1.0;
    };
    auto fill = [&](std::vector<double> &x, int64_t n) {
      x.resize((size_t)n);
      for (double &e : x)
        e = next();
    };
    fill(q, heads * seq * d);
    fill(k, heads * seq * d);
    fill(v, heads * seq * dv);
    fill(dout, heads * seq * dv);
  }

  void compute(double scale) {
    out.assign((size_t)(heads * seq * dv), 0);
    lse.assign((size_t)(heads * seq), 0);
    dq.assign(q.size(), 0);
    dk.assign(k.size(), 0);
    dv_.assign(v.size(), 0);
    std::vector<double> p((size_t)seq), dp((size_t)seq);
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < seq; ++i) {
        const int64_t n = causal ? i + 1 : seq;
        double mx = -INFINITY;
        for (int64_t j = 0; j < n; ++j) {
          double s = 0;
          for (int64_t x = 0; x < d; ++x)
            s += q[(h * seq + i) * d + x] * k[(h * seq + j) * d + x];
          p[j] = s * scale;
          mx = std::max(mx, p[j]);
        }
        double sum = 0;
        for (int64_t j = 0; j < n; ++j)
          sum += (p[j] = std::exp(p[j] - mx));
        lse[h * seq + i] = mx + std::log(sum);
        double delta = 0;
        for (int64_t j = 0; j < n; ++j) {
          p[j] /= sum;
          for (int64_t x = 0; x < dv; ++x)
            out[(h * seq + i) * dv + x] += p[j] * v[(h * seq + j) * dv + x];
        }
        for (int64_t x = 0; x < dv; ++x)
          delta += dout[(h * seq + i) * dv + x] * out[(h * seq + i) * dv + x];
        for (int64_t j = 0; j < n; ++j) {
          double g = 0;
          for (int64_t x = 0; x < dv; ++x) {
            g += dout[(h * seq + i) * dv + x] * v[(h * seq + j) * dv + x];
            dv_[(h * seq + j) * dv + x] += p[j] * dout[(h * seq + i) * dv + x];
          }
          const double ds = p[j] * (g - delta) * scale;
          for (int64_t x = 0; x < d; ++x) {
            dq[(h * seq + i) * d + x] += ds * k[(h * seq + j) * d + x];
            dk[(h * seq + j) * d + x] += ds * q[(h * seq + i) * d + x];
          }
        }
      }
  }

  /// Positions [c * block, (c + 1) * block) of every head of `x` (`width`
  /// features per position), as floats.
  std::vector<float> blockOf(const std::vector<double> &x, int64_t width,
                             int32_t c, int64_t block,
                             bool balanced = false) const {
    std::vector<float> part;
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i : positions(c, block, balanced))
        for (int64_t f = 0; f < width; ++f)
          part.push_back(float(x[(h * seq + i) * width + f]));
    return part;
  }
  /// The positions block `c` of `block` holds: [c block, (c+1) block), or
  /// balanced, chunks c and 2 ranks - 1 - c of half a block.
  std::vector<int64_t> positions(int32_t c, int64_t block,
                                 bool balanced) const {
    std::vector<int64_t> at;
    if (!balanced) {
      for (int64_t i = c * block; i < (c + 1) * block; ++i)
        at.push_back(i);
      return at;
    }
    const int64_t half = block / 2, chunks = seq / half;
    for (int64_t chunk : {int64_t(c), chunks - 1 - c})
      for (int64_t i = chunk * half; i < (chunk + 1) * half; ++i)
        at.push_back(i);
    return at;
  }
};

/// The masks the test runs under: none, a causal one of -inf (Llama's
/// additive form) and one of finfo.min (GPT-2's where-form fill).
enum class Mask { None, CausalInf, CausalMin };

/// A mask, and whether the blocks are the balanced split's.
using Layout = std::tuple<Mask, bool>;

class RingAttentionTest : public WithWorld<::testing::TestWithParam<Layout>> {
protected:
  /// [2 heads, positions, width] of `x`.
  static distrt_tensor tensor(std::vector<float> &x, int64_t positions,
                              int64_t width) {
    const int64_t dims[3] = {2, positions, width};
    return distrt_make_tensor(x.data(), DISTRT_F32, 3, dims);
  }
  /// Every element of `got` within 1e-5 of the largest of `want`.
  static void expectNear(const std::vector<float> &got,
                         const std::vector<float> &want, const char *what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    float largest = 0;
    for (float w : want)
      largest = std::max(largest, std::fabs(w));
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], want[i], 1e-5f * largest) << what << " [" << i << "]";
  }
};

TEST_P(RingAttentionTest, MatchesAttentionOverTheWholeSequence) {
  const auto [kind, balanced] = GetParam();
  const bool causal = kind != Mask::None;
  const int64_t block = 6, d = 4, dv = 3, seq = block * size;
  const double scale = 0.5;
  Whole whole(2, seq, d, dv, causal);
  whole.compute(scale);
  // This rank's query rows of the mask, shared by both heads.
  std::vector<float> mask((size_t)(block * seq));
  const float fill =
      kind == Mask::CausalInf ? -INFINITY : -3.4028234663852886e38f;
  const std::vector<int64_t> mine = whole.positions(rank, block, balanced);
  for (int64_t i = 0; i < block; ++i)
    for (int64_t p = 0; p < seq; ++p)
      mask[(size_t)(i * seq + p)] = p <= mine[i] ? 0.f : fill;
  const int64_t maskDims[3] = {1, block, seq};
  distrt_tensor tm = distrt_make_tensor(mask.data(), DISTRT_F32, 3, maskDims);
  const distrt_tensor *maskArg = causal ? &tm : nullptr;
  std::vector<float> q = whole.blockOf(whole.q, d, rank, block, balanced);
  std::vector<float> k = whole.blockOf(whole.k, d, rank, block, balanced);
  std::vector<float> v = whole.blockOf(whole.v, dv, rank, block, balanced);
  std::vector<float> dout =
      whole.blockOf(whole.dout, dv, rank, block, balanced);
  std::vector<float> out(v.size(), -1), lse((size_t)(2 * block), -1);
  distrt_tensor tq = tensor(q, block, d), tk = tensor(k, block, d),
                tv = tensor(v, block, dv), to = tensor(out, block, dv);
  const int64_t lseDims[2] = {2, block};
  distrt_tensor tl = distrt_make_tensor(lse.data(), DISTRT_F32, 2, lseDims);
  ASSERT_EQ(distrt_ring_attention(comm, &tq, &tk, &tv, maskArg, float(scale),
                                  balanced, &to, &tl),
            DISTRT_OK)
      << distrt_last_error(ctx);
  // The ring's work: every kept (query, key) pair of each head scored
  // once, the dropped ones not at all. A causal row at position p keeps
  // p + 1 keys: the balanced split (chunks c and 2 size - 1 - c of half a
  // block) gives every rank a 1/size share of the seq (seq + 1) / 2 pairs,
  // the contiguous one rank c its c blocks below the diagonal and half the
  // diagonal one.
  if (causal) {
    int64_t kept = 0;
    for (int64_t p : mine)
      kept += 2 * (p + 1);
    EXPECT_EQ(distrt::lastRingScores(), kept);
    const int64_t share = 2 * seq * (seq + 1) / 2 / size;
    if (balanced)
      EXPECT_EQ(distrt::lastRingScores(), share) << "rank " << rank;
    else
      EXPECT_EQ(distrt::lastRingScores(),
                2 * (rank * block * block + block * (block + 1) / 2))
          << "rank " << rank;
  } else {
    EXPECT_EQ(distrt::lastRingScores(), 2 * block * seq);
  }
  expectNear(out, whole.blockOf(whole.out, dv, rank, block, balanced), "out");
  expectNear(lse, whole.blockOf(whole.lse, 1, rank, block, balanced), "lse");

  std::vector<float> dq(q.size(), -1), dk(k.size(), -1), dvg(v.size(), -1);
  distrt_tensor tdo = tensor(dout, block, dv), tdq = tensor(dq, block, d),
                tdk = tensor(dk, block, d), tdv = tensor(dvg, block, dv);
  ASSERT_EQ(distrt_ring_attention_backward(comm, &tq, &tk, &tv, maskArg,
                                           float(scale), balanced, &to, &tl,
                                           &tdo, &tdq, &tdk, &tdv),
            DISTRT_OK)
      << distrt_last_error(ctx);
  expectNear(dq, whole.blockOf(whole.dq, d, rank, block, balanced), "dq");
  expectNear(dk, whole.blockOf(whole.dk, d, rank, block, balanced), "dk");
  expectNear(dvg, whole.blockOf(whole.dv_, dv, rank, block, balanced), "dv");

  // The same bits again: the sums run in one order.
  std::vector<float> again(out.size());
  distrt_tensor ta = tensor(again, block, dv);
  ASSERT_EQ(distrt_ring_attention(comm, &tq, &tk, &tv, maskArg, float(scale),
                                  balanced, &ta, &tl),
            DISTRT_OK);
  EXPECT_EQ(again, out);
}

INSTANTIATE_TEST_SUITE_P(
    Masks, RingAttentionTest,
    ::testing::Combine(::testing::Values(Mask::None, Mask::CausalInf,
                                         Mask::CausalMin),
                       ::testing::Bool()),
    [](const ::testing::TestParamInfo<Layout> &info) {
      const Mask m = std::get<0>(info.param);
      return std::string(m == Mask::None        ? "NoMask"
                         : m == Mask::CausalInf ? "CausalInf"
                                                : "CausalMin") +
             (std::get<1>(info.param) ? "Balanced" : "Contiguous");
    });

TEST_F(RingAttentionTest, ArgumentErrorsNameTheTensor) {
  std::vector<float> q(2 * 5 * 4), k(2 * 6 * 4), v(2 * 5 * 3), out(2 * 5 * 3),
      lse(2 * 5);
  distrt_tensor tq = tensor(q, 5, 4), tk = tensor(k, 6, 4),
                tv = tensor(v, 5, 3), to = tensor(out, 5, 3);
  const int64_t lseDims[2] = {2, 5};
  distrt_tensor tl = distrt_make_tensor(lse.data(), DISTRT_F32, 2, lseDims);
  // v's positions must be k's.
  EXPECT_EQ(
      distrt_ring_attention(comm, &tq, &tk, &tv, nullptr, 1.f, 0, &to, &tl),
      DISTRT_ERROR_SHAPE_MISMATCH);
  std::string error = distrt_last_error(ctx);
  EXPECT_NE(error.find("distrt_ring_attention: 'v' has shape"),
            std::string::npos)
      << error;
  EXPECT_EQ(
      distrt_ring_attention(nullptr, &tq, &tq, &tv, nullptr, 1.f, 0, &to, &tl),
      DISTRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(distrt_last_error(nullptr)).find("null communicator"),
            std::string::npos);
  EXPECT_EQ(
      distrt_ring_attention(comm, &tq, &tq, &tv, nullptr, NAN, 0, &to, &tl),
      DISTRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(distrt_last_error(ctx)).find("not finite"),
            std::string::npos);
  // The mask holds the rank's rows against every position of the ring.
  const int64_t maskDims[3] = {1, 5, 5 * size + 1};
  std::vector<float> mask((size_t)(5 * maskDims[2]));
  distrt_tensor tm = distrt_make_tensor(mask.data(), DISTRT_F32, 3, maskDims);
  EXPECT_EQ(distrt_ring_attention(comm, &tq, &tq, &tv, &tm, 1.f, 0, &to, &tl),
            DISTRT_ERROR_SHAPE_MISMATCH);
  error = distrt_last_error(ctx);
  EXPECT_NE(error.find("is neither"), std::string::npos) << error;
  EXPECT_NE(error.find("positions of the " + std::to_string(size) + " blocks"),
            std::string::npos)
      << error;
  // A balanced rank holds two equal chunks: an odd block is refused.
  EXPECT_EQ(
      distrt_ring_attention(comm, &tq, &tq, &tv, nullptr, 1.f, 1, &to, &tl),
      DISTRT_ERROR_SHAPE_MISMATCH);
  error = distrt_last_error(ctx);
  EXPECT_NE(error.find("odd number of positions"), std::string::npos) << error;
}

} // namespace
