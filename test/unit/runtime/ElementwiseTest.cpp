//===- ElementwiseTest.cpp - Unary, binary, fused, reductions --*- C++ -*-===//
#include "TestUtil.h"
#include "distrt/gen/Scalar.h"

#include <algorithm>

using namespace distrt_test;

namespace {

/// Independent reference (std:: math, written out again here).
float refUnary(int op, float x) {
  switch (op) {
  case DISTRT_UNARY_RELU:
    return std::max(x, 0.0f);
  case DISTRT_UNARY_GELU:
    return 0.5f * x * (1.0f + std::erf(x / std::sqrt(2.0f)));
  case DISTRT_UNARY_GELU_TANH:
    return 0.5f * x *
           (1.0f + std::tanh(std::sqrt(2.0f / float(M_PI)) *
                             (x + 0.044715f * x * x * x)));
  case DISTRT_UNARY_TANH:
    return std::tanh(x);
  case DISTRT_UNARY_SIGMOID:
    return 1.0f / (1.0f + std::exp(-x));
  case DISTRT_UNARY_SILU:
    return x / (1.0f + std::exp(-x));
  case DISTRT_UNARY_EXP:
    return std::exp(x);
  case DISTRT_UNARY_LOG:
    return std::log(x);
  case DISTRT_UNARY_SQRT:
    return std::sqrt(x);
  case DISTRT_UNARY_NEG:
    return -x;
  case DISTRT_UNARY_ABS:
    return std::fabs(x);
  case DISTRT_UNARY_SQUARE:
    return x * x;
  case DISTRT_UNARY_RECIPROCAL:
    return 1.0f / x;
  case DISTRT_UNARY_SOFTPLUS: // exp overflows past 88; softplus(x) ~ x there
    return x > 20.0f ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
  }
  return 0;
}

bool positiveDomain(int op) {
  return op == DISTRT_UNARY_LOG || op == DISTRT_UNARY_SQRT ||
         op == DISTRT_UNARY_RECIPROCAL;
}

class UnaryTest : public RuntimeTest,
                  public ::testing::WithParamInterface<int> {};

} // namespace

TEST_P(UnaryTest, ForwardAndGradient) {
  int op = GetParam();
  Tensor x({3, 5}), y({3, 5}), w({3, 5}), dx({3, 5});
  // Keep away from kinks (relu/abs at 0) and domain edges.
  if (positiveDomain(op))
    randomize(x, 11, 0.5f, 2.0f);
  else
    randomize(x, 11, -2.0f, 2.0f);
  for (float &v : x.v)
    if (std::fabs(v) < 0.1f)
      v += 0.3f;
  randomize(w, 12);
  ASSERT_OK(distrt_unary(ctx, distrt_unary_op(op), x.d(), y.d()));
  for (int64_t i = 0; i < x.n(); ++i)
    ASSERT_NEAR(y[i], refUnary(op, x[i]), 1e-4f * std::max(1.0f, y[i]))
        << "op " << op << " x=" << x[i];
  ASSERT_OK(distrt_unary_bwd(ctx, distrt_unary_op(op), x.d(), w.d(), dx.d()));
  auto forward = [&] {
    EXPECT_OK(distrt_unary(ctx, distrt_unary_op(op), x.d(), y.d()));
    return y.v;
  };
  checkGradient(x.v, forward, w.v, dx.v, "unary", 1e-3f, 2e-2f);
}

INSTANTIATE_TEST_SUITE_P(AllOps, UnaryTest,
                         ::testing::Range(0, int(DISTRT_UNARY_COUNT_)));

class BinaryTest : public RuntimeTest,
                   public ::testing::WithParamInterface<int> {};

TEST_P(BinaryTest, BroadcastForwardAndGradient) {
  int op = GetParam();
  // a [2,1,4] with b [3,1]: both sides broadcast to [2,3,4]; also a full
  // left operand ([2,3,4] with b [4]) for the oneDNN path.
  struct Shapes {
    std::vector<int64_t> a, b, out;
  } cases[] = {{{2, 1, 4}, {3, 1}, {2, 3, 4}}, {{2, 3, 4}, {4}, {2, 3, 4}}};
  for (auto &s : cases) {
    Tensor a(s.a), b(s.b), y(s.out), w(s.out);
    randomize(a, 21, 0.5f, 2.0f);
    randomize(b, 22, 0.5f, 2.0f);
    randomize(w, 23);
    ASSERT_OK(distrt_binary(ctx, distrt_binary_op(op), a.d(), b.d(), y.d()));
    // Reference with explicit index arithmetic.
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 3; ++j)
        for (int64_t k = 0; k < 4; ++k) {
          float av = s.a[1] == 1 ? a[i * 4 + k] : a[(i * 3 + j) * 4 + k];
          float bv = s.b.size() == 2 ? b[j] : b[k];
          float want = 0;
          switch (op) {
          case DISTRT_BINARY_ADD: want = av + bv; break;
          case DISTRT_BINARY_SUB: want = av - bv; break;
          case DISTRT_BINARY_MUL: want = av * bv; break;
          case DISTRT_BINARY_DIV: want = av / bv; break;
          case DISTRT_BINARY_MAX: want = std::max(av, bv); break;
          case DISTRT_BINARY_MIN: want = std::min(av, bv); break;
          case DISTRT_BINARY_POW: want = std::pow(av, bv); break;
          }
          ASSERT_NEAR(y[(i * 3 + j) * 4 + k], want, 1e-5f * std::max(1.f, want));
        }
    Tensor da(s.a), db(s.b);
    ASSERT_OK(distrt_binary_bwd(ctx, distrt_binary_op(op), a.d(), b.d(), w.d(),
                                da.d(), db.d()));
    auto forward = [&] {
      EXPECT_OK(distrt_binary(ctx, distrt_binary_op(op), a.d(), b.d(), y.d()));
      return y.v;
    };
    checkGradient(a.v, forward, w.v, da.v, "da", 1e-3f);
    checkGradient(b.v, forward, w.v, db.v, "db", 1e-3f);
  }
}

INSTANTIATE_TEST_SUITE_P(AllOps, BinaryTest,
                         ::testing::Range(0, int(DISTRT_BINARY_COUNT_)));

TEST_F(RuntimeTest, BinaryRejectsIncompatibleShapes) {
  Tensor a({2, 3}), b({4}), y({2, 3});
  EXPECT_EQ(distrt_binary(ctx, DISTRT_BINARY_ADD, a.d(), b.d(), y.d()),
            DISTRT_ERROR_SHAPE_MISMATCH);
  EXPECT_NE(std::string(err()).find("do not broadcast"), std::string::npos);
}

TEST_F(RuntimeTest, FusedChainMatchesOpByOp) {
  // out0 = gelu(x * s + b) ; out1 = out0 * 0.5 - x, with s [4] and b [3,1].
  Tensor x({3, 4}), s({4}), b({3, 1}), o0({3, 4}), o1({3, 4});
  randomize(x, 31);
  randomize(s, 32);
  randomize(b, 33);
  distrt_fused_instr prog[] = {
      {DISTRT_FUSED_FMA, 0, 3, 0, 1, 2, 0.0f},
      {DISTRT_FUSED_UNARY, DISTRT_UNARY_GELU, 4, 3, 0, 0, 0.0f},
      {DISTRT_FUSED_CONST, 0, 5, 0, 0, 0, 0.5f},
      {DISTRT_FUSED_BINARY, DISTRT_BINARY_MUL, 6, 4, 5, 0, 0.0f},
      {DISTRT_FUSED_BINARY, DISTRT_BINARY_SUB, 6, 6, 0, 0, 0.0f},
  };
  const distrt_tensor *ins[] = {x.d(), s.d(), b.d()};
  const distrt_tensor *outs[] = {o0.d(), o1.d()};
  uint8_t regs[] = {4, 6};
  distrt_fused_program p{5, prog, 3, ins, 2, outs, regs};
  ASSERT_OK(distrt_fused_elementwise(ctx, &p));
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j) {
      float t = refUnary(DISTRT_UNARY_GELU, x[i * 4 + j] * s[j] + b[i]);
      ASSERT_NEAR(o0[i * 4 + j], t, 1e-5f);
      ASSERT_NEAR(o1[i * 4 + j], t * 0.5f - x[i * 4 + j], 1e-5f);
    }
}

TEST_F(RuntimeTest, FusedLargeInputCoversManyBlocks) {
  Tensor x({3001}), y({3001});
  randomize(x, 34);
  distrt_fused_instr prog[] = {{DISTRT_FUSED_UNARY, DISTRT_UNARY_TANH, 1, 0,
                                0, 0, 0.0f}};
  const distrt_tensor *ins[] = {x.d()};
  const distrt_tensor *outs[] = {y.d()};
  uint8_t regs[] = {1};
  distrt_fused_program p{1, prog, 1, ins, 1, outs, regs};
  ASSERT_OK(distrt_fused_elementwise(ctx, &p));
  for (int64_t i = 0; i < x.n(); ++i)
    ASSERT_NEAR(y[i], std::tanh(x[i]), 1e-6f);
}

TEST_F(RuntimeTest, FusedRejectsUndefinedRegister) {
  Tensor x({4}), y({4});
  distrt_fused_instr prog[] = {
      {DISTRT_FUSED_BINARY, DISTRT_BINARY_ADD, 2, 0, 1, 0, 0.0f}};
  const distrt_tensor *ins[] = {x.d()};
  const distrt_tensor *outs[] = {y.d()};
  uint8_t regs[] = {2};
  distrt_fused_program p{1, prog, 1, ins, 1, outs, regs};
  EXPECT_EQ(distrt_fused_elementwise(ctx, &p), DISTRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err()).find("reads register 1"), std::string::npos)
      << err();
}

TEST_F(RuntimeTest, ReduceForwardAndGradient) {
  Tensor x({2, 3, 4}), w({2, 1, 4}), y({2, 1, 4}), dx({2, 3, 4});
  randomize(x, 41);
  randomize(w, 42);
  for (int op = DISTRT_REDUCE_SUM; op <= DISTRT_REDUCE_MIN; ++op) {
    ASSERT_OK(distrt_reduce(ctx, distrt_reduce_op(op), x.d(), y.d()));
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t k = 0; k < 4; ++k) {
        float acc = op >= DISTRT_REDUCE_MAX ? x[i * 12 + k] : 0.0f;
        for (int64_t j = 0; j < 3; ++j) {
          float v = x[i * 12 + j * 4 + k];
          acc = op == DISTRT_REDUCE_MAX   ? std::max(acc, v)
                : op == DISTRT_REDUCE_MIN ? std::min(acc, v)
                                          : acc + v;
        }
        if (op == DISTRT_REDUCE_MEAN)
          acc /= 3;
        ASSERT_NEAR(y[i * 4 + k], acc, 1e-5f) << "op " << op;
      }
    ASSERT_OK(distrt_reduce_bwd(ctx, distrt_reduce_op(op), x.d(), y.d(), w.d(),
                                dx.d()));
    auto forward = [&] {
      EXPECT_OK(distrt_reduce(ctx, distrt_reduce_op(op), x.d(), y.d()));
      return y.v;
    };
    checkGradient(x.v, forward, w.v, dx.v, "reduce", 1e-3f);
  }
}

TEST_F(RuntimeTest, ReduceToShapeSumsBroadcastDims) {
  Tensor x({2, 3, 4}), y({3, 1});
  randomize(x, 43);
  ASSERT_OK(distrt_reduce_to_shape(ctx, x.d(), y.d()));
  for (int64_t j = 0; j < 3; ++j) {
    float s = 0;
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t k = 0; k < 4; ++k)
        s += x[i * 12 + j * 4 + k];
    ASSERT_NEAR(y[j], s, 1e-5f);
  }
}

TEST_F(RuntimeTest, TransposeAndInverse) {
  Tensor x({2, 3, 4}), y({4, 2, 3}), back({2, 3, 4});
  randomize(x, 44);
  int32_t perm[] = {2, 0, 1}, inv[] = {1, 2, 0};
  ASSERT_OK(distrt_transpose(ctx, x.d(), y.d(), perm));
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t k = 0; k < 4; ++k)
        ASSERT_EQ(y[(k * 2 + i) * 3 + j], x[(i * 3 + j) * 4 + k]);
  ASSERT_OK(distrt_transpose(ctx, y.d(), back.d(), inv));
  EXPECT_EQ(back.v, x.v);
  int32_t bad[] = {0, 0, 1};
  EXPECT_EQ(distrt_transpose(ctx, x.d(), y.d(), bad),
            DISTRT_ERROR_INVALID_ARGUMENT);
}

namespace {

class FusedUnaryTest : public RuntimeTest,
                       public ::testing::WithParamInterface<std::tuple<int, bool>> {};

/// Runs unary op \p op over \p xs in the fused executor (a one-instruction
/// program), on the SSE2 baseline path when \p baseline, else the AVX2 one.
std::vector<float> runFusedUnary(distrt_context *ctx, int op,
                                 const std::vector<float> &xs, bool baseline) {
  setenv("DISTRT_FUSED_BASELINE", baseline ? "1" : "0", 1);
  Tensor x({static_cast<int64_t>(xs.size())}),
      y({static_cast<int64_t>(xs.size())});
  x.v = xs;
  distrt_fused_instr prog[] = {
      {DISTRT_FUSED_UNARY, uint8_t(op), 1, 0, 0, 0, 0.0f}};
  const distrt_tensor *ins[] = {x.d()};
  const distrt_tensor *outs[] = {y.d()};
  uint8_t regs[] = {1};
  distrt_fused_program p{1, prog, 1, ins, 1, outs, regs};
  distrt_status st = distrt_fused_elementwise(ctx, &p);
  unsetenv("DISTRT_FUSED_BASELINE");
  EXPECT_EQ(st, DISTRT_OK) << distrt_last_error(ctx);
  return y.v;
}

} // namespace

/// The fused executor has its own vectorized math (exp, log, erf, tanh
/// polynomials); hold every op to the libm reference over a wide range, on
/// both the AVX2 and the SSE2 code paths.
TEST_P(FusedUnaryTest, MatchesLibmOverWideRange) {
  int op = std::get<0>(GetParam());
  bool baseline = std::get<1>(GetParam());
  std::vector<float> xs;
  for (float v = -30.0f; v <= 30.0f; v += 0.37f)
    xs.push_back(v);
  for (float v : {0.0f, 1e-6f, -1e-6f, 1e-3f, 0.02f, -0.02f, 88.0f, -88.0f,
                  90.0f, -100.0f, 1e-30f, 1e-40f})
    xs.push_back(v);
  std::vector<float> y = runFusedUnary(ctx, op, xs, baseline);
  for (size_t i = 0; i < xs.size(); ++i) {
    float want = refUnary(op, xs[i]);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(y[i])) << "op " << op << " x=" << xs[i];
      continue;
    }
    if (std::isinf(want)) {
      EXPECT_EQ(y[i], want) << "op " << op << " x=" << xs[i];
      continue;
    }
    EXPECT_NEAR(y[i], want, 2e-6f * std::max(1.0f, std::fabs(want)))
        << "op " << op << " x=" << xs[i];
  }
}

/// The fused executor's GELU is the generated loops' (dg::gelu<float>):
/// the same polynomials and selects, so a GELU gives the same values
/// whether a program runs it in a loop or in the fused executor (up to
/// FMA contraction), on both code paths. Where erf(u) is near -1 the
/// selects matter: 0.5 x (1 + erf(u)) would cancel there.
TEST_F(RuntimeTest, FusedGeluIsTheGeneratedLoopsGelu) {
  std::vector<float> xs;
  for (float v = -12.0f; v <= 12.0f; v += 0.013f)
    xs.push_back(v);
  for (bool baseline : {false, true}) {
    std::vector<float> y = runFusedUnary(ctx, DISTRT_UNARY_GELU, xs, baseline);
    for (size_t i = 0; i < xs.size(); ++i) {
      float want = dg::gelu<float>(xs[i]);
      EXPECT_NEAR(y[i], want, 4e-7f * std::fabs(want) + 1e-30f)
          << "x=" << xs[i] << (baseline ? " (SSE2)" : " (AVX2)");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllOps, FusedUnaryTest,
    ::testing::Combine(::testing::Range(0, int(DISTRT_UNARY_COUNT_)),
                       ::testing::Bool()));

TEST_F(RuntimeTest, FusedOverwritingAnInputRegisterLeavesTheInputAlone) {
  Tensor x({1030}), y({1030}), z({1030});
  randomize(x, 35);
  std::vector<float> before = x.v;
  // r0 = r0 * r0 (overwrites the input's register); out0 = r0, out1 = r0+r0.
  distrt_fused_instr prog[] = {
      {DISTRT_FUSED_BINARY, DISTRT_BINARY_MUL, 0, 0, 0, 0, 0.0f},
      {DISTRT_FUSED_BINARY, DISTRT_BINARY_ADD, 1, 0, 0, 0, 0.0f}};
  const distrt_tensor *ins[] = {x.d()};
  const distrt_tensor *outs[] = {y.d(), z.d()};
  uint8_t regs[] = {0, 1};
  distrt_fused_program p{2, prog, 1, ins, 2, outs, regs};
  ASSERT_OK(distrt_fused_elementwise(ctx, &p));
  EXPECT_EQ(x.v, before);
  for (int64_t i = 0; i < x.n(); ++i) {
    ASSERT_EQ(y[i], x[i] * x[i]);
    ASSERT_EQ(z[i], 2 * x[i] * x[i]);
  }
}
