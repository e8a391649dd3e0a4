//===- TrainingTest.cpp - Losses, dropout, embedding, optimizers -*- C++ -*-===//
#include "TestUtil.h"

#include <cstring>

using namespace distrt_test;

TEST_F(RuntimeTest, CrossEntropyForwardAndGradient) {
  Tensor logits({4, 5}), loss({1}), dloss({1}, 1.0f), dl({4, 5});
  randomize(logits, 111, -2.f, 2.f);
  Index labels({4}, {2, 0, -100, 4});
  ASSERT_OK(distrt_softmax_cross_entropy(ctx, logits.d(), labels.d(), loss.d(),
                                         -100, DISTRT_LOSS_MEAN));
  double want = 0;
  for (int64_t i : {0, 1, 3}) {
    double s = 0;
    for (int64_t j = 0; j < 5; ++j)
      s += std::exp(logits[i * 5 + j]);
    want += std::log(s) - logits[i * 5 + labels.v[i]];
  }
  EXPECT_NEAR(loss[0], want / 3, 1e-5);
  ASSERT_OK(distrt_softmax_cross_entropy_bwd(
      ctx, logits.d(), labels.d(), dloss.d(), dl.d(), -100, DISTRT_LOSS_MEAN));
  auto forward = [&] {
    EXPECT_OK(distrt_softmax_cross_entropy(ctx, logits.d(), labels.d(),
                                           loss.d(), -100, DISTRT_LOSS_MEAN));
    return loss.v;
  };
  checkGradient(logits.v, forward, {1.0f}, dl.v, "cross entropy", 1e-3f);
  Index bad({4}, {2, 0, 7, 4});
  EXPECT_EQ(distrt_softmax_cross_entropy(ctx, logits.d(), bad.d(), loss.d(),
                                         -100, DISTRT_LOSS_MEAN),
            DISTRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err()).find("labels[2] = 7"), std::string::npos)
      << err();
}

TEST_F(RuntimeTest, CrossEntropySumAndRows) {
  Tensor logits({4, 5}), loss({1}), dloss({1}, 1.5f), dl({4, 5});
  randomize(logits, 112, -2.f, 2.f);
  Index labels({4}, {2, 0, -100, 4});
  std::vector<double> want(4, 0.0);
  for (int64_t i : {0, 1, 3}) {
    double s = 0;
    for (int64_t j = 0; j < 5; ++j)
      s += std::exp(logits[i * 5 + j]);
    want[i] = std::log(s) - logits[i * 5 + labels.v[i]];
  }
  // Sum: the rows that count, not divided by their number.
  ASSERT_OK(distrt_softmax_cross_entropy(ctx, logits.d(), labels.d(), loss.d(),
                                         -100, DISTRT_LOSS_SUM));
  EXPECT_NEAR(loss[0], want[0] + want[1] + want[3], 1e-5);
  ASSERT_OK(distrt_softmax_cross_entropy_bwd(
      ctx, logits.d(), labels.d(), dloss.d(), dl.d(), -100, DISTRT_LOSS_SUM));
  checkGradient(
      logits.v,
      [&] {
        EXPECT_OK(distrt_softmax_cross_entropy(
            ctx, logits.d(), labels.d(), loss.d(), -100, DISTRT_LOSS_SUM));
        return loss.v;
      },
      {1.5f}, dl.v, "cross entropy sum", 1e-3f);
  // None: a loss per row (0 for the ignored one), each row's gradient
  // scaled by its own upstream value.
  Tensor rows({4}), drows({4});
  drows.v = {0.5f, -2.0f, 3.0f, 1.25f};
  ASSERT_OK(distrt_softmax_cross_entropy(ctx, logits.d(), labels.d(), rows.d(),
                                         -100, DISTRT_LOSS_NONE));
  for (int64_t i = 0; i < 4; ++i)
    EXPECT_NEAR(rows[i], want[i], 1e-5) << "row " << i;
  ASSERT_OK(distrt_softmax_cross_entropy_bwd(
      ctx, logits.d(), labels.d(), drows.d(), dl.d(), -100, DISTRT_LOSS_NONE));
  checkGradient(
      logits.v,
      [&] {
        EXPECT_OK(distrt_softmax_cross_entropy(
            ctx, logits.d(), labels.d(), rows.d(), -100, DISTRT_LOSS_NONE));
        return rows.v;
      },
      drows.v, dl.v, "cross entropy rows", 1e-3f);
  // A per-row loss must be [N]; a scalar is a shape error.
  EXPECT_EQ(distrt_softmax_cross_entropy(ctx, logits.d(), labels.d(), loss.d(),
                                         -100, DISTRT_LOSS_NONE),
            DISTRT_ERROR_SHAPE_MISMATCH);
  EXPECT_NE(std::string(err()).find("'loss'"), std::string::npos) << err();
  EXPECT_EQ(distrt_softmax_cross_entropy(ctx, logits.d(), labels.d(), loss.d(),
                                         -100,
                                         static_cast<distrt_loss_reduction>(7)),
            DISTRT_ERROR_INVALID_ARGUMENT);
}

TEST_F(RuntimeTest, MseForwardAndGradient) {
  Tensor x({3, 2}), t({3, 2}), loss({1}), dloss({1}, 2.0f), dx({3, 2});
  randomize(x, 121);
  randomize(t, 122);
  ASSERT_OK(distrt_mse_loss(ctx, x.d(), t.d(), loss.d()));
  double want = 0;
  for (int64_t i = 0; i < 6; ++i)
    want += (x[i] - t[i]) * (x[i] - t[i]) / 6.0;
  EXPECT_NEAR(loss[0], want, 1e-6);
  ASSERT_OK(distrt_mse_loss_bwd(ctx, x.d(), t.d(), dloss.d(), dx.d()));
  auto forward = [&] {
    EXPECT_OK(distrt_mse_loss(ctx, x.d(), t.d(), loss.d()));
    return loss.v;
  };
  checkGradient(x.v, forward, {2.0f}, dx.v, "mse", 1e-3f);
}

TEST_F(RuntimeTest, DropoutIsDeterministicAndScaled) {
  const float p = 0.25f;
  Tensor x({1000}, 1.0f), y({1000}), y2({1000}), dy({1000}, 2.0f),
      dx({1000});
  std::vector<uint8_t> maskV(1000);
  int64_t n = 1000;
  distrt_tensor mask = distrt_make_tensor(maskV.data(), DISTRT_U8, 1, &n);
  ASSERT_OK(distrt_dropout(ctx, x.d(), y.d(), &mask, p, 42, 7));
  ASSERT_OK(distrt_dropout(ctx, x.d(), y2.d(), nullptr, p, 42, 7));
  EXPECT_EQ(y.v, y2.v) << "same seed and offset must give the same mask";
  int kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_FLOAT_EQ(y[i], maskV[i] ? 1.0f / (1.0f - p) : 0.0f);
    kept += maskV[i];
  }
  EXPECT_GT(kept, 700);
  EXPECT_LT(kept, 800);
  ASSERT_OK(distrt_dropout_bwd(ctx, dy.d(), dx.d(), p, 42, 7));
  for (int64_t i = 0; i < n; ++i)
    EXPECT_FLOAT_EQ(dx[i], maskV[i] ? 2.0f / (1.0f - p) : 0.0f);
  ASSERT_OK(distrt_dropout(ctx, x.d(), y2.d(), nullptr, p, 43, 7));
  EXPECT_NE(y.v, y2.v) << "another seed must give another mask";
  EXPECT_EQ(distrt_dropout(ctx, x.d(), y.d(), nullptr, 1.0f, 1, 0),
            DISTRT_ERROR_INVALID_ARGUMENT);
}

TEST_F(RuntimeTest, EmbeddingGatherAndScatterAdd) {
  Tensor table({5, 3}), y({2, 2, 3}), w({2, 2, 3}), dt({5, 3});
  randomize(table, 131);
  randomize(w, 132);
  Index idx({2, 2}, {4, 1, 4, 0}); // row 4 repeats: its gradient adds up
  ASSERT_OK(distrt_embedding(ctx, table.d(), idx.d(), y.d()));
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 3; ++j)
      ASSERT_EQ(y[i * 3 + j], table[idx.v[i] * 3 + j]);
  ASSERT_OK(distrt_embedding_bwd(ctx, idx.d(), w.d(), dt.d(), 0));
  auto forward = [&] {
    EXPECT_OK(distrt_embedding(ctx, table.d(), idx.d(), y.d()));
    return y.v;
  };
  checkGradient(table.v, forward, w.v, dt.v, "embedding");
  Index oob({1}, {5});
  Tensor y1({1, 3});
  EXPECT_EQ(distrt_embedding(ctx, table.d(), oob.d(), y1.d()),
            DISTRT_ERROR_INVALID_ARGUMENT);
}

TEST_F(RuntimeTest, SgdMomentumMatchesHandComputedSteps) {
  Tensor p({1}, 1.0f), g({1}, 0.5f), buf({1});
  distrt_sgd_attr a{0.1f, 0.9f, 0.0f, 0.0f, 0};
  ASSERT_OK(distrt_sgd_step(ctx, p.d(), g.d(), buf.d(), &a, 1));
  EXPECT_NEAR(buf[0], 0.5f, 1e-7f);
  EXPECT_NEAR(p[0], 0.95f, 1e-7f);
  ASSERT_OK(distrt_sgd_step(ctx, p.d(), g.d(), buf.d(), &a, 2));
  EXPECT_NEAR(buf[0], 0.95f, 1e-7f);
  EXPECT_NEAR(p[0], 0.855f, 1e-6f);
  // Nesterov with weight decay: d = g + wd*p = 0.6, buf = 0.6,
  // update = d + 0.9*buf = 1.14, p = 1 - 0.114.
  Tensor p2({1}, 1.0f), buf2({1});
  distrt_sgd_attr n{0.1f, 0.9f, 0.0f, 0.1f, 1};
  ASSERT_OK(distrt_sgd_step(ctx, p2.d(), g.d(), buf2.d(), &n, 1));
  EXPECT_NEAR(p2[0], 0.886f, 1e-6f);
  distrt_sgd_attr bad{0.1f, 0.9f, 0.0f, 0.0f, 0};
  EXPECT_EQ(distrt_sgd_step(ctx, p.d(), g.d(), nullptr, &bad, 1),
            DISTRT_ERROR_INVALID_ARGUMENT);
}

TEST_F(RuntimeTest, AdamAndAdamWMatchHandComputedSteps) {
  distrt_adam_attr a{0.1f, 0.9f, 0.999f, 1e-8f, 0.0f};
  Tensor p({1}, 1.0f), g({1}, 0.5f), m({1}), v({1});
  ASSERT_OK(distrt_adam_step(ctx, p.d(), g.d(), m.d(), v.d(), &a, 1));
  EXPECT_NEAR(m[0], 0.05f, 1e-7f);
  EXPECT_NEAR(v[0], 0.00025f, 1e-8f);
  EXPECT_NEAR(p[0], 0.9f, 1e-6f);
  ASSERT_OK(distrt_adam_step(ctx, p.d(), g.d(), m.d(), v.d(), &a, 2));
  EXPECT_NEAR(m[0], 0.095f, 1e-7f);
  EXPECT_NEAR(v[0], 0.00049975f, 1e-8f);
  EXPECT_NEAR(p[0], 0.8f, 1e-6f);
  // Adam's L2: g' = 0.5 + 0.1 * 1 = 0.6 enters the moments.
  distrt_adam_attr l2{0.1f, 0.9f, 0.999f, 1e-8f, 0.1f};
  Tensor p2({1}, 1.0f), m2({1}), v2({1});
  ASSERT_OK(distrt_adam_step(ctx, p2.d(), g.d(), m2.d(), v2.d(), &l2, 1));
  EXPECT_NEAR(m2[0], 0.06f, 1e-7f);
  EXPECT_NEAR(p2[0], 0.9f, 1e-6f);
  // AdamW: p *= 1 - lr*wd first (0.99), moments see the raw gradient.
  Tensor p3({1}, 1.0f), m3({1}), v3({1});
  ASSERT_OK(distrt_adamw_step(ctx, p3.d(), g.d(), m3.d(), v3.d(), &l2, 1));
  EXPECT_NEAR(m3[0], 0.05f, 1e-7f);
  EXPECT_NEAR(p3[0], 0.89f, 1e-6f);
  EXPECT_EQ(distrt_adamw_step(ctx, p3.d(), g.d(), m3.d(), v3.d(), &l2, 0),
            DISTRT_ERROR_INVALID_ARGUMENT);
}

TEST_F(RuntimeTest, AccumulateAndFill) {
  Tensor acc({3}, 1.0f), x({3});
  x.v = {1.0f, 2.0f, 3.0f};
  ASSERT_OK(distrt_accumulate(ctx, acc.d(), x.d(), 0.5f));
  EXPECT_EQ(acc.v, (std::vector<float>{1.5f, 2.0f, 2.5f}));
  ASSERT_OK(distrt_fill(ctx, acc.d(), 0.0f));
  EXPECT_EQ(acc.v, (std::vector<float>{0.0f, 0.0f, 0.0f}));
}

TEST_F(RuntimeTest, CastsRoundToNearestEven) {
  int64_t n = 5;
  Tensor x({5});
  x.v = {1.0f, 1.00390625f, 1.01171875f, 0.1f, 65520.0f};
  std::vector<uint16_t> bf(5), hf(5);
  distrt_tensor bt = distrt_make_tensor(bf.data(), DISTRT_BF16, 1, &n);
  distrt_tensor ht = distrt_make_tensor(hf.data(), DISTRT_F16, 1, &n);
  ASSERT_OK(distrt_cast(ctx, x.d(), &bt));
  ASSERT_OK(distrt_cast(ctx, x.d(), &ht));
  EXPECT_EQ(bf[0], 0x3F80);
  EXPECT_EQ(bf[1], 0x3F80); // tie -> even
  EXPECT_EQ(bf[2], 0x3F82); // tie -> even (up)
  EXPECT_EQ(hf[0], 0x3C00);
  EXPECT_EQ(hf[3], 0x2E66);
  EXPECT_EQ(hf[4], 0x7C00); // overflows to +inf
  Tensor back({5});
  ASSERT_OK(distrt_cast(ctx, &ht, back.d()));
  EXPECT_FLOAT_EQ(back[3], 0.0999755859375f);
  // Subnormal half: 1e-7 is 1.68 ulps of 2^-24 -> 2 ulps.
  Tensor tiny({1}, 1e-7f), tinyBack({1});
  uint16_t th;
  int64_t one = 1;
  distrt_tensor tht = distrt_make_tensor(&th, DISTRT_F16, 1, &one);
  ASSERT_OK(distrt_cast(ctx, tiny.d(), &tht));
  ASSERT_OK(distrt_cast(ctx, &tht, tinyBack.d()));
  EXPECT_EQ(th, 2);
  EXPECT_FLOAT_EQ(tinyBack[0], 2.0f * 5.9604644775390625e-8f);
}

TEST_F(RuntimeTest, UnscaleCheckAndLossScaler) {
  Tensor g({3});
  g.v = {1024.0f, -512.0f, 8.0f};
  int32_t found = 0;
  int64_t one = 1;
  distrt_tensor f = distrt_make_tensor(&found, DISTRT_I32, 1, &one);
  ASSERT_OK(distrt_unscale_check(ctx, g.d(), 1.0f / 1024.0f, &f));
  EXPECT_EQ(found, 0);
  EXPECT_EQ(g.v, (std::vector<float>{1.0f, -0.5f, 0.0078125f}));
  g.v[1] = INFINITY;
  ASSERT_OK(distrt_unscale_check(ctx, g.d(), 0.5f, &f));
  EXPECT_EQ(found, 1);

  distrt_loss_scaler s = distrt_loss_scaler_init(65536.0f);
  s.growth_interval = 2;
  EXPECT_EQ(distrt_loss_scaler_update(&s, 1), 0);
  EXPECT_EQ(s.scale, 32768.0f);
  EXPECT_EQ(distrt_loss_scaler_update(&s, 0), 1);
  EXPECT_EQ(distrt_loss_scaler_update(&s, 0), 1);
  EXPECT_EQ(s.scale, 65536.0f);
}

//===----------------------------------------------------------------------===//
// Error paths of the ABI
//===----------------------------------------------------------------------===//

TEST_F(RuntimeTest, NullContextIsRejected) {
  Tensor x({2}), y({2});
  EXPECT_EQ(distrt_unary(nullptr, DISTRT_UNARY_RELU, x.d(), y.d()),
            DISTRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(distrt_last_error(nullptr)).find("context is NULL"),
            std::string::npos);
}

TEST_F(RuntimeTest, NullTensorAndNullDataAreRejected) {
  Tensor x({2}), y({2});
  EXPECT_EQ(distrt_unary(ctx, DISTRT_UNARY_RELU, nullptr, y.d()),
            DISTRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err()).find("tensor 'x' is NULL"), std::string::npos)
      << err();
  distrt_tensor nodata = *x.d();
  nodata.data = nullptr;
  EXPECT_EQ(distrt_unary(ctx, DISTRT_UNARY_RELU, &nodata, y.d()),
            DISTRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err()).find("NULL data pointer"), std::string::npos)
      << err();
  distrt_matmul_attr attr{0, 0, 1.0f, 0.0f};
  Tensor a({2, 2});
  EXPECT_EQ(distrt_matmul(ctx, a.d(), a.d(), nullptr, a.d(), nullptr),
            DISTRT_ERROR_INVALID_ARGUMENT);
  Tensor c({2, 2});
  EXPECT_OK(distrt_matmul(ctx, a.d(), a.d(), nullptr, c.d(), &attr));
}

TEST_F(RuntimeTest, ShapeAndDtypeMismatchesAreRejected) {
  Tensor x({2, 3}), y({3, 2});
  EXPECT_EQ(distrt_unary(ctx, DISTRT_UNARY_TANH, x.d(), y.d()),
            DISTRT_ERROR_SHAPE_MISMATCH);
  EXPECT_NE(std::string(err()).find("'x' has shape [2, 3] but 'y' has shape "
                                    "[3, 2]"),
            std::string::npos)
      << err();
  distrt_tensor wrong = *x.d();
  wrong.dtype = DISTRT_I32;
  EXPECT_EQ(distrt_unary(ctx, DISTRT_UNARY_TANH, &wrong, x.d()),
            DISTRT_ERROR_UNSUPPORTED);
  EXPECT_NE(std::string(err()).find("distrt_cast"), std::string::npos);
  distrt_tensor badRank = *x.d();
  badRank.rank = 12;
  EXPECT_EQ(distrt_unary(ctx, DISTRT_UNARY_TANH, &badRank, x.d()),
            DISTRT_ERROR_INVALID_ARGUMENT);
  Tensor big({2, 3, 4}), stats({5});
  EXPECT_EQ(distrt_layernorm_fwd(ctx, big.d(), nullptr, nullptr, big.d(),
                                 stats.d(), nullptr, 1e-5f),
            DISTRT_ERROR_SHAPE_MISMATCH);
  EXPECT_NE(std::string(err()).find("one value per row"), std::string::npos);
}

TEST(RuntimeContext, BackendsAndVersion) {
  EXPECT_EQ(distrt_abi_version(), DISTRT_ABI_VERSION);
  distrt_context *ctx = nullptr;
  EXPECT_EQ(distrt_context_create(DISTRT_BACKEND_CPU, 3, &ctx),
            DISTRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ctx, nullptr);
  distrt_status st = distrt_context_create(DISTRT_BACKEND_CUDA, 0, &ctx);
  if (distrt_cuda_device_count() == 0) {
    EXPECT_TRUE(st == DISTRT_ERROR_UNSUPPORTED || st == DISTRT_ERROR_NO_DEVICE)
        << distrt_status_string(st);
    EXPECT_EQ(ctx, nullptr);
    EXPECT_GT(std::strlen(distrt_last_error(nullptr)), 20u);
  } else {
    EXPECT_EQ(st, DISTRT_OK) << distrt_last_error(nullptr);
    distrt_context_destroy(ctx);
  }
}
