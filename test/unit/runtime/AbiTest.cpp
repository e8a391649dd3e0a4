//===- AbiTest.cpp - Whole-ABI robustness and composition ------*- C++ -*-===//
//
// Every entry point, called with NULL everywhere, must return an error
// status with a message (never crash); the header must work from C; and the
// kernels must compose into a training loop that learns.
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"

#include <cstring>

using namespace distrt_test;

extern "C" int distrt_test_c_relu(void);

TEST(RuntimeAbi, HeaderWorksFromC) { EXPECT_EQ(distrt_test_c_relu(), 0); }

TEST_F(RuntimeTest, EveryEntryPointRejectsNullArguments) {
  const distrt_tensor *n = nullptr;
  struct Call {
    const char *name;
    std::function<distrt_status(distrt_context *)> call;
  };
  std::vector<Call> calls = {
      {"distrt_matmul", [&](distrt_context *c) { return distrt_matmul(c, n, n, n, n, nullptr); }},
      {"distrt_matmul_bwd_data", [&](distrt_context *c) { return distrt_matmul_bwd_data(c, n, n, n, nullptr); }},
      {"distrt_matmul_bwd_weight", [&](distrt_context *c) { return distrt_matmul_bwd_weight(c, n, n, n, nullptr, 0); }},
      {"distrt_matmul_bwd_bias", [&](distrt_context *c) { return distrt_matmul_bwd_bias(c, n, n, 0); }},
      {"distrt_conv2d", [&](distrt_context *c) { return distrt_conv2d(c, n, n, n, n, nullptr); }},
      {"distrt_conv2d_bwd_data", [&](distrt_context *c) { return distrt_conv2d_bwd_data(c, n, n, n, nullptr); }},
      {"distrt_conv2d_bwd_weight", [&](distrt_context *c) { return distrt_conv2d_bwd_weight(c, n, n, n, n, nullptr, 0); }},
      {"distrt_pool2d", [&](distrt_context *c) { return distrt_pool2d(c, n, n, nullptr); }},
      {"distrt_pool2d_bwd", [&](distrt_context *c) { return distrt_pool2d_bwd(c, n, n, n, nullptr); }},
      {"distrt_batchnorm_fwd_training", [&](distrt_context *c) { return distrt_batchnorm_fwd_training(c, n, n, n, n, n, n, n, n, 1e-5f, 0.1f); }},
      {"distrt_batchnorm_fwd_inference", [&](distrt_context *c) { return distrt_batchnorm_fwd_inference(c, n, n, n, n, n, n, 1e-5f); }},
      {"distrt_batchnorm_bwd_data", [&](distrt_context *c) { return distrt_batchnorm_bwd_data(c, n, n, n, n, n, n, 1e-5f); }},
      {"distrt_batchnorm_bwd_weight", [&](distrt_context *c) { return distrt_batchnorm_bwd_weight(c, n, n, n, n, n, n, 1e-5f, 0); }},
      {"distrt_layernorm_fwd", [&](distrt_context *c) { return distrt_layernorm_fwd(c, n, n, n, n, n, n, 1e-5f); }},
      {"distrt_layernorm_bwd_data", [&](distrt_context *c) { return distrt_layernorm_bwd_data(c, n, n, n, n, n, n, 1e-5f); }},
      {"distrt_layernorm_bwd_weight", [&](distrt_context *c) { return distrt_layernorm_bwd_weight(c, n, n, n, n, n, n, 1e-5f, 0); }},
      {"distrt_rmsnorm_fwd", [&](distrt_context *c) { return distrt_rmsnorm_fwd(c, n, n, n, 1e-5f); }},
      {"distrt_rmsnorm_bwd_data", [&](distrt_context *c) { return distrt_rmsnorm_bwd_data(c, n, n, n, n, 1e-5f); }},
      {"distrt_rmsnorm_bwd_weight", [&](distrt_context *c) { return distrt_rmsnorm_bwd_weight(c, n, n, n, 1e-5f, 0); }},
      {"distrt_softmax", [&](distrt_context *c) { return distrt_softmax(c, n, n, -1, 0); }},
      {"distrt_softmax_bwd", [&](distrt_context *c) { return distrt_softmax_bwd(c, n, n, n, -1, 0); }},
      {"distrt_unary", [&](distrt_context *c) { return distrt_unary(c, DISTRT_UNARY_RELU, n, n); }},
      {"distrt_unary_bwd", [&](distrt_context *c) { return distrt_unary_bwd(c, DISTRT_UNARY_RELU, n, n, n); }},
      {"distrt_binary", [&](distrt_context *c) { return distrt_binary(c, DISTRT_BINARY_ADD, n, n, n); }},
      {"distrt_binary_bwd", [&](distrt_context *c) { return distrt_binary_bwd(c, DISTRT_BINARY_ADD, n, n, n, n, n); }},
      {"distrt_reduce_to_shape", [&](distrt_context *c) { return distrt_reduce_to_shape(c, n, n); }},
      {"distrt_fused_elementwise", [&](distrt_context *c) { return distrt_fused_elementwise(c, nullptr); }},
      {"distrt_reduce", [&](distrt_context *c) { return distrt_reduce(c, DISTRT_REDUCE_SUM, n, n); }},
      {"distrt_reduce_bwd", [&](distrt_context *c) { return distrt_reduce_bwd(c, DISTRT_REDUCE_SUM, n, n, n, n); }},
      {"distrt_transpose", [&](distrt_context *c) { return distrt_transpose(c, n, n, nullptr); }},
      {"distrt_embedding", [&](distrt_context *c) { return distrt_embedding(c, n, n, n); }},
      {"distrt_embedding_bwd", [&](distrt_context *c) { return distrt_embedding_bwd(c, n, n, n, 0); }},
      {"distrt_softmax_cross_entropy", [&](distrt_context *c) { return distrt_softmax_cross_entropy(c, n, n, n, -100, DISTRT_LOSS_MEAN); }},
      {"distrt_softmax_cross_entropy_bwd", [&](distrt_context *c) { return distrt_softmax_cross_entropy_bwd(c, n, n, n, n, -100, DISTRT_LOSS_MEAN); }},
      {"distrt_mse_loss", [&](distrt_context *c) { return distrt_mse_loss(c, n, n, n); }},
      {"distrt_mse_loss_bwd", [&](distrt_context *c) { return distrt_mse_loss_bwd(c, n, n, n, n); }},
      {"distrt_dropout", [&](distrt_context *c) { return distrt_dropout(c, n, n, n, 0.5f, 1, 0); }},
      {"distrt_dropout_bwd", [&](distrt_context *c) { return distrt_dropout_bwd(c, n, n, 0.5f, 1, 0); }},
      {"distrt_sgd_step", [&](distrt_context *c) { return distrt_sgd_step(c, n, n, n, nullptr, 1); }},
      {"distrt_adam_step", [&](distrt_context *c) { return distrt_adam_step(c, n, n, n, n, nullptr, 1); }},
      {"distrt_adamw_step", [&](distrt_context *c) { return distrt_adamw_step(c, n, n, n, n, nullptr, 1); }},
      {"distrt_fill", [&](distrt_context *c) { return distrt_fill(c, n, 0.0f); }},
      {"distrt_accumulate", [&](distrt_context *c) { return distrt_accumulate(c, n, n, 1.0f); }},
      {"distrt_cast", [&](distrt_context *c) { return distrt_cast(c, n, n); }},
      {"distrt_unscale_check", [&](distrt_context *c) { return distrt_unscale_check(c, n, 1.0f, n); }},
      {"distrt_alloc", [&](distrt_context *c) { return distrt_alloc(c, 16, nullptr); }},
      {"distrt_copy", [&](distrt_context *c) { return distrt_copy(c, nullptr, nullptr, 16, DISTRT_COPY_HOST_TO_DEVICE); }},
  };
  for (const Call &call : calls) {
    EXPECT_EQ(call.call(nullptr), DISTRT_ERROR_INVALID_ARGUMENT) << call.name;
    EXPECT_EQ(std::string(distrt_last_error(nullptr)).rfind(call.name, 0), 0u)
        << call.name << ": " << distrt_last_error(nullptr);
    EXPECT_EQ(call.call(ctx), DISTRT_ERROR_INVALID_ARGUMENT) << call.name;
    std::string msg = err();
    EXPECT_EQ(msg.rfind(call.name, 0), 0u) << msg;
    EXPECT_NE(msg.find("NULL"), std::string::npos) << msg;
  }
}

/// A two-layer MLP trained with the runtime's kernels only: matmul + bias,
/// gelu, matmul, softmax cross-entropy, backward through all of them, AdamW.
/// The loss on a fixed batch must fall well below its starting value.
TEST_F(RuntimeTest, MlpTrainingStepsReduceTheLoss) {
  const int64_t batch = 16, in = 8, hidden = 32, classes = 4;
  Tensor x({batch, in}), w1({in, hidden}), b1({hidden}), w2({hidden, classes}),
      h({batch, hidden}), a({batch, hidden}), logits({batch, classes}),
      loss({1}), dloss({1}, 1.0f), dlogits({batch, classes}),
      da({batch, hidden}), dh({batch, hidden}), dw1({in, hidden}),
      db1({hidden}), dw2({hidden, classes});
  randomize(x, 201);
  randomize(w1, 202, -0.5f, 0.5f);
  randomize(w2, 203, -0.5f, 0.5f);
  std::vector<int64_t> lab(batch);
  for (int64_t i = 0; i < batch; ++i)
    lab[i] = (x[i * in] > 0) * 2 + (x[i * in + 1] > 0);
  Index labels({batch}, lab);
  struct Param {
    Tensor *p, *g;
    std::unique_ptr<Tensor> m, v;
  };
  std::vector<Param> params;
  for (auto pg : {std::make_pair(&w1, &dw1), std::make_pair(&b1, &db1),
                  std::make_pair(&w2, &dw2)})
    params.push_back({pg.first, pg.second,
                      std::make_unique<Tensor>(pg.first->dims),
                      std::make_unique<Tensor>(pg.first->dims)});
  distrt_matmul_attr plain{0, 0, 1.0f, 0.0f};
  distrt_adam_attr adam{0.05f, 0.9f, 0.999f, 1e-8f, 0.01f};
  float first = 0.0f;
  for (int64_t step = 1; step <= 60; ++step) {
    ASSERT_OK(distrt_matmul(ctx, x.d(), w1.d(), b1.d(), h.d(), &plain));
    ASSERT_OK(distrt_unary(ctx, DISTRT_UNARY_GELU, h.d(), a.d()));
    ASSERT_OK(distrt_matmul(ctx, a.d(), w2.d(), nullptr, logits.d(), &plain));
    ASSERT_OK(distrt_softmax_cross_entropy(ctx, logits.d(), labels.d(),
                                           loss.d(), -100, DISTRT_LOSS_MEAN));
    if (step == 1)
      first = loss[0];
    ASSERT_OK(distrt_softmax_cross_entropy_bwd(ctx, logits.d(), labels.d(),
                                               dloss.d(), dlogits.d(), -100,
                                               DISTRT_LOSS_MEAN));
    ASSERT_OK(distrt_matmul_bwd_weight(ctx, a.d(), dlogits.d(), dw2.d(),
                                       &plain, 0));
    ASSERT_OK(distrt_matmul_bwd_data(ctx, dlogits.d(), w2.d(), da.d(),
                                     &plain));
    ASSERT_OK(distrt_unary_bwd(ctx, DISTRT_UNARY_GELU, h.d(), da.d(), dh.d()));
    ASSERT_OK(distrt_matmul_bwd_weight(ctx, x.d(), dh.d(), dw1.d(), &plain,
                                       0));
    ASSERT_OK(distrt_matmul_bwd_bias(ctx, dh.d(), db1.d(), 0));
    for (Param &p : params)
      ASSERT_OK(distrt_adamw_step(ctx, p.p->d(), p.g->d(), p.m->d(),
                                  p.v->d(), &adam, step));
  }
  EXPECT_GT(first, 1.0f);
  EXPECT_LT(loss[0], 0.2f * first) << "first loss " << first;
}

TEST_F(RuntimeTest, EmptyAndScalarTensors) {
  // K = 0: C = beta * C + bias.
  Tensor a({2, 0}), b({0, 3}), c({2, 3}, 2.0f), bias({3}, 1.0f);
  distrt_matmul_attr attr{0, 0, 1.0f, 0.5f};
  ASSERT_OK(distrt_matmul(ctx, a.d(), b.d(), bias.d(), c.d(), &attr));
  for (float v : c.v)
    EXPECT_FLOAT_EQ(v, 2.0f);
  // M = 0 and zero-row reductions.
  Tensor e({0, 3}), ey({0, 3}), db({3}, 7.0f);
  ASSERT_OK(distrt_unary(ctx, DISTRT_UNARY_EXP, e.d(), ey.d()));
  ASSERT_OK(distrt_softmax(ctx, e.d(), ey.d(), -1, 0));
  ASSERT_OK(distrt_matmul_bwd_bias(ctx, e.d(), db.d(), 0));
  for (float v : db.v)
    EXPECT_EQ(v, 0.0f);
  Tensor r({1, 3});
  ASSERT_OK(distrt_reduce(ctx, DISTRT_REDUCE_SUM, e.d(), r.d()));
  for (float v : r.v)
    EXPECT_EQ(v, 0.0f);
  // Rank-0 operands broadcast like NumPy scalars.
  Tensor s({}, 3.0f), t({2, 2}, 2.0f), st({2, 2});
  ASSERT_OK(distrt_binary(ctx, DISTRT_BINARY_MUL, t.d(), s.d(), st.d()));
  for (float v : st.v)
    EXPECT_EQ(v, 6.0f);
  ASSERT_OK(distrt_binary(ctx, DISTRT_BINARY_SUB, s.d(), t.d(), st.d()));
  for (float v : st.v)
    EXPECT_EQ(v, 1.0f);
  Tensor ds({});
  ASSERT_OK(distrt_binary_bwd(ctx, DISTRT_BINARY_MUL, t.d(), s.d(), t.d(),
                              nullptr, ds.d()));
  EXPECT_EQ(ds[0], 16.0f); // sum(dy * a) = 4 * 2 * 2
}
