//===- CudaTest.cpp - CUDA backend against the CPU backend -----*- C++ -*-===//
//
// Every CUDA kernel runs on the same inputs as its CPU twin (which the other
// tests hold against naive references and finite differences) and must
// agree. Without a device every test skips and says so.
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"

#include <memory>

using namespace distrt_test;

namespace {

class CudaTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (distrt_cuda_device_count() == 0)
      GTEST_SKIP() << "no CUDA device (built "
#ifdef DISTRT_TEST_HAVE_CUDA
                      "with"
#else
                      "without"
#endif
                      " the CUDA backend)";
    ASSERT_EQ(distrt_context_create(DISTRT_BACKEND_CPU, 0, &cpu), DISTRT_OK);
    ASSERT_EQ(distrt_context_create(DISTRT_BACKEND_CUDA, 0, &gpu), DISTRT_OK)
        << distrt_last_error(nullptr);
  }
  void TearDown() override {
    for (void *p : allocs)
      distrt_free(gpu, p);
    distrt_context_destroy(gpu);
    distrt_context_destroy(cpu);
  }

  /// Device copy of a host tensor (same dims and dtype).
  distrt_tensor up(const distrt_tensor *h) {
    distrt_tensor d = *h;
    size_t bytes = distrt_numel(h) * distrt_dtype_size(h->dtype);
    EXPECT_EQ(distrt_alloc(gpu, bytes, &d.data), DISTRT_OK);
    allocs.push_back(d.data);
    EXPECT_EQ(distrt_copy(gpu, d.data, h->data, bytes,
                          DISTRT_COPY_HOST_TO_DEVICE),
              DISTRT_OK);
    return d;
  }
  std::vector<float> down(const distrt_tensor &d) {
    std::vector<float> v(distrt_numel(&d));
    EXPECT_EQ(distrt_synchronize(gpu), DISTRT_OK) << distrt_last_error(gpu);
    EXPECT_EQ(distrt_copy(gpu, v.data(), d.data, v.size() * sizeof(float),
                          DISTRT_COPY_DEVICE_TO_HOST),
              DISTRT_OK);
    return v;
  }

  distrt_context *cpu = nullptr, *gpu = nullptr;
  std::vector<void *> allocs;
};

#define GPU_OK(expr) ASSERT_EQ((expr), DISTRT_OK) << distrt_last_error(gpu)
#define CPU_OK(expr) ASSERT_EQ((expr), DISTRT_OK) << distrt_last_error(cpu)

} // namespace

TEST_F(CudaTest, MatmulForwardAndGradients) {
  Tensor a({2, 6, 5}), b({7, 5}), bias({7}), c({2, 6, 7}), da({2, 6, 5}),
      db({7, 5});
  randomize(a, 1);
  randomize(b, 2);
  randomize(bias, 3);
  distrt_matmul_attr attr{0, 1, 1.0f, 0.0f};
  distrt_tensor ga = up(a.d()), gb = up(b.d()), gbias = up(bias.d()),
                gc = up(c.d()), gda = up(da.d()), gdb = up(db.d());
  CPU_OK(distrt_matmul(cpu, a.d(), b.d(), bias.d(), c.d(), &attr));
  GPU_OK(distrt_matmul(gpu, &ga, &gb, &gbias, &gc, &attr));
  expectClose(down(gc), c.v, 1e-4f, "cuda matmul");
  CPU_OK(distrt_matmul_bwd_data(cpu, c.d(), b.d(), da.d(), &attr));
  GPU_OK(distrt_matmul_bwd_data(gpu, &gc, &gb, &gda, &attr));
  expectClose(down(gda), da.v, 1e-4f, "cuda matmul dA");
  CPU_OK(distrt_matmul_bwd_weight(cpu, a.d(), c.d(), db.d(), &attr, 0));
  GPU_OK(distrt_matmul_bwd_weight(gpu, &ga, &gc, &gdb, &attr, 0));
  expectClose(down(gdb), db.v, 1e-4f, "cuda matmul dB");
  CPU_OK(distrt_matmul_bwd_bias(cpu, c.d(), bias.d(), 0));
  GPU_OK(distrt_matmul_bwd_bias(gpu, &gc, &gbias, 0));
  expectClose(down(gbias), bias.v, 1e-4f, "cuda matmul dbias");
}

TEST_F(CudaTest, UnaryBinaryReduceTranspose) {
  Tensor x({3, 4}, 0.0f), y({3, 4}), dx({3, 4}), b({4});
  randomize(x, 4, 0.5f, 2.0f);
  randomize(b, 5, 0.5f, 2.0f);
  distrt_tensor gx = up(x.d()), gy = up(y.d()), gdx = up(dx.d()),
                gb = up(b.d());
  for (int op = 0; op < DISTRT_UNARY_COUNT_; ++op) {
    CPU_OK(distrt_unary(cpu, distrt_unary_op(op), x.d(), y.d()));
    GPU_OK(distrt_unary(gpu, distrt_unary_op(op), &gx, &gy));
    expectClose(down(gy), y.v, 1e-5f, "cuda unary");
    CPU_OK(distrt_unary_bwd(cpu, distrt_unary_op(op), x.d(), x.d(), dx.d()));
    GPU_OK(distrt_unary_bwd(gpu, distrt_unary_op(op), &gx, &gx, &gdx));
    expectClose(down(gdx), dx.v, 1e-5f, "cuda unary bwd");
  }
  Tensor db({4});
  distrt_tensor gdb = up(db.d());
  for (int op = 0; op < DISTRT_BINARY_COUNT_; ++op) {
    CPU_OK(distrt_binary(cpu, distrt_binary_op(op), x.d(), b.d(), y.d()));
    GPU_OK(distrt_binary(gpu, distrt_binary_op(op), &gx, &gb, &gy));
    expectClose(down(gy), y.v, 1e-5f, "cuda binary");
    CPU_OK(distrt_binary_bwd(cpu, distrt_binary_op(op), x.d(), b.d(), x.d(),
                             dx.d(), db.d()));
    GPU_OK(distrt_binary_bwd(gpu, distrt_binary_op(op), &gx, &gb, &gx, &gdx,
                             &gdb));
    expectClose(down(gdx), dx.v, 1e-5f, "cuda binary da");
    expectClose(down(gdb), db.v, 1e-4f, "cuda binary db");
  }
  Tensor r({3, 1});
  distrt_tensor gr = up(r.d());
  for (int op = 0; op <= DISTRT_REDUCE_MIN; ++op) {
    CPU_OK(distrt_reduce(cpu, distrt_reduce_op(op), x.d(), r.d()));
    GPU_OK(distrt_reduce(gpu, distrt_reduce_op(op), &gx, &gr));
    expectClose(down(gr), r.v, 1e-5f, "cuda reduce");
    CPU_OK(distrt_reduce_bwd(cpu, distrt_reduce_op(op), x.d(), r.d(), r.d(),
                             dx.d()));
    GPU_OK(distrt_reduce_bwd(gpu, distrt_reduce_op(op), &gx, &gr, &gr, &gdx));
    expectClose(down(gdx), dx.v, 1e-5f, "cuda reduce bwd");
  }
  Tensor t({4, 3});
  distrt_tensor gt = up(t.d());
  int32_t perm[] = {1, 0};
  CPU_OK(distrt_transpose(cpu, x.d(), t.d(), perm));
  GPU_OK(distrt_transpose(gpu, &gx, &gt, perm));
  expectClose(down(gt), t.v, 0.0f, "cuda transpose");
}

TEST_F(CudaTest, FusedChain) {
  Tensor x({5, 300}), s({300}), o({5, 300});
  randomize(x, 6);
  randomize(s, 7);
  distrt_fused_instr prog[] = {
      {DISTRT_FUSED_BINARY, DISTRT_BINARY_MUL, 2, 0, 1, 0, 0.0f},
      {DISTRT_FUSED_UNARY, DISTRT_UNARY_SILU, 3, 2, 0, 0, 0.0f}};
  uint8_t regs[] = {3};
  const distrt_tensor *ins[] = {x.d(), s.d()};
  const distrt_tensor *outs[] = {o.d()};
  distrt_fused_program p{2, prog, 2, ins, 1, outs, regs};
  CPU_OK(distrt_fused_elementwise(cpu, &p));
  distrt_tensor gx = up(x.d()), gs = up(s.d()), go = up(o.d());
  const distrt_tensor *gins[] = {&gx, &gs};
  const distrt_tensor *gouts[] = {&go};
  distrt_fused_program gp{2, prog, 2, gins, 1, gouts, regs};
  GPU_OK(distrt_fused_elementwise(gpu, &gp));
  expectClose(down(go), o.v, 1e-5f, "cuda fused");
}

TEST_F(CudaTest, SoftmaxNormsAndLosses) {
  Tensor x({4, 33}), y({4, 33}), dx({4, 33}), g({33}), bsh({33}), m({4}),
      v({4}), dg({33}), dbs({33});
  randomize(x, 8);
  randomize(g, 9);
  randomize(bsh, 10);
  distrt_tensor gx = up(x.d()), gy = up(y.d()), gdx = up(dx.d()),
                gg = up(g.d()), gbs = up(bsh.d()), gm = up(m.d()),
                gv = up(v.d()), gdg = up(dg.d()), gdbs = up(dbs.d());
  for (int axis : {-1, 0})
    for (int log = 0; log <= 1; ++log) {
      CPU_OK(distrt_softmax(cpu, x.d(), y.d(), axis, log));
      GPU_OK(distrt_softmax(gpu, &gx, &gy, axis, log));
      expectClose(down(gy), y.v, 1e-5f, "cuda softmax");
      CPU_OK(distrt_softmax_bwd(cpu, y.d(), x.d(), dx.d(), axis, log));
      GPU_OK(distrt_softmax_bwd(gpu, &gy, &gx, &gdx, axis, log));
      expectClose(down(gdx), dx.v, 1e-4f, "cuda softmax bwd");
    }
  CPU_OK(distrt_layernorm_fwd(cpu, x.d(), g.d(), bsh.d(), y.d(), m.d(), v.d(),
                              1e-5f));
  GPU_OK(distrt_layernorm_fwd(gpu, &gx, &gg, &gbs, &gy, &gm, &gv, 1e-5f));
  expectClose(down(gy), y.v, 1e-4f, "cuda layernorm");
  CPU_OK(distrt_layernorm_bwd_data(cpu, x.d(), y.d(), g.d(), m.d(), v.d(),
                                   dx.d(), 1e-5f));
  GPU_OK(distrt_layernorm_bwd_data(gpu, &gx, &gy, &gg, &gm, &gv, &gdx, 1e-5f));
  expectClose(down(gdx), dx.v, 1e-3f, "cuda layernorm dx");
  CPU_OK(distrt_layernorm_bwd_weight(cpu, x.d(), y.d(), m.d(), v.d(), dg.d(),
                                     dbs.d(), 1e-5f, 0));
  GPU_OK(distrt_layernorm_bwd_weight(gpu, &gx, &gy, &gm, &gv, &gdg, &gdbs,
                                     1e-5f, 0));
  expectClose(down(gdg), dg.v, 1e-3f, "cuda layernorm dscale");
  expectClose(down(gdbs), dbs.v, 1e-3f, "cuda layernorm dshift");
  CPU_OK(distrt_rmsnorm_fwd(cpu, x.d(), g.d(), y.d(), 1e-6f));
  GPU_OK(distrt_rmsnorm_fwd(gpu, &gx, &gg, &gy, 1e-6f));
  expectClose(down(gy), y.v, 1e-4f, "cuda rmsnorm");
  CPU_OK(distrt_rmsnorm_bwd_data(cpu, x.d(), y.d(), g.d(), dx.d(), 1e-6f));
  GPU_OK(distrt_rmsnorm_bwd_data(gpu, &gx, &gy, &gg, &gdx, 1e-6f));
  expectClose(down(gdx), dx.v, 1e-3f, "cuda rmsnorm dx");
  CPU_OK(distrt_rmsnorm_bwd_weight(cpu, x.d(), y.d(), dg.d(), 1e-6f, 0));
  GPU_OK(distrt_rmsnorm_bwd_weight(gpu, &gx, &gy, &gdg, 1e-6f, 0));
  expectClose(down(gdg), dg.v, 1e-3f, "cuda rmsnorm dscale");

  Index labels({4}, {3, -100, 32, 0});
  Tensor loss({1}), dloss({1}, 1.0f);
  distrt_tensor gl = up(labels.d()), gloss = up(loss.d()),
                gdloss = up(dloss.d());
  CPU_OK(distrt_softmax_cross_entropy(cpu, x.d(), labels.d(), loss.d(), -100,
                                      DISTRT_LOSS_MEAN));
  GPU_OK(distrt_softmax_cross_entropy(gpu, &gx, &gl, &gloss, -100,
                                      DISTRT_LOSS_MEAN));
  expectClose(down(gloss), loss.v, 1e-5f, "cuda cross entropy");
  CPU_OK(distrt_softmax_cross_entropy_bwd(cpu, x.d(), labels.d(), dloss.d(),
                                          dx.d(), -100, DISTRT_LOSS_MEAN));
  GPU_OK(distrt_softmax_cross_entropy_bwd(gpu, &gx, &gl, &gdloss, &gdx, -100,
                                          DISTRT_LOSS_MEAN));
  expectClose(down(gdx), dx.v, 1e-5f, "cuda cross entropy bwd");
  // The sum and the per-row losses (reduction none).
  Index rowLabels({4}, {3, -100, 5, 0});
  Tensor rows({4}), drows({4}, 0.5f);
  drows.v[2] = -2.0f;
  distrt_tensor grl = up(rowLabels.d()), grows = up(rows.d()),
                gdrows = up(drows.d());
  CPU_OK(distrt_softmax_cross_entropy(cpu, x.d(), rowLabels.d(), loss.d(), -100,
                                      DISTRT_LOSS_SUM));
  GPU_OK(distrt_softmax_cross_entropy(gpu, &gx, &grl, &gloss, -100,
                                      DISTRT_LOSS_SUM));
  expectClose(down(gloss), loss.v, 1e-5f, "cuda cross entropy sum");
  CPU_OK(distrt_softmax_cross_entropy(cpu, x.d(), rowLabels.d(), rows.d(), -100,
                                      DISTRT_LOSS_NONE));
  GPU_OK(distrt_softmax_cross_entropy(gpu, &gx, &grl, &grows, -100,
                                      DISTRT_LOSS_NONE));
  expectClose(down(grows), rows.v, 1e-5f, "cuda cross entropy rows");
  CPU_OK(distrt_softmax_cross_entropy_bwd(cpu, x.d(), rowLabels.d(), drows.d(),
                                          dx.d(), -100, DISTRT_LOSS_NONE));
  GPU_OK(distrt_softmax_cross_entropy_bwd(gpu, &gx, &grl, &gdrows, &gdx, -100,
                                          DISTRT_LOSS_NONE));
  expectClose(down(gdx), dx.v, 1e-5f, "cuda cross entropy rows bwd");
  CPU_OK(distrt_mse_loss(cpu, x.d(), y.d(), loss.d()));
  GPU_OK(distrt_mse_loss(gpu, &gx, &gy, &gloss));
  expectClose(down(gloss), loss.v, 1e-4f, "cuda mse");
}

TEST_F(CudaTest, TrainingKernelsMatchCpu) {
  Tensor p({257}), g({257}), m({257}), v({257}), y({257});
  randomize(p, 11);
  randomize(g, 12);
  distrt_tensor gp = up(p.d()), gg = up(g.d()), gm = up(m.d()),
                gv = up(v.d()), gy = up(y.d());
  distrt_adam_attr a{0.01f, 0.9f, 0.999f, 1e-8f, 0.1f};
  for (int64_t step = 1; step <= 3; ++step) {
    CPU_OK(distrt_adamw_step(cpu, p.d(), g.d(), m.d(), v.d(), &a, step));
    GPU_OK(distrt_adamw_step(gpu, &gp, &gg, &gm, &gv, &a, step));
  }
  expectClose(down(gp), p.v, 1e-5f, "cuda adamw");
  distrt_sgd_attr s{0.1f, 0.9f, 0.0f, 0.01f, 1};
  for (int64_t step = 1; step <= 3; ++step) {
    CPU_OK(distrt_sgd_step(cpu, p.d(), g.d(), m.d(), &s, step));
    GPU_OK(distrt_sgd_step(gpu, &gp, &gg, &gm, &s, step));
  }
  expectClose(down(gp), p.v, 1e-5f, "cuda sgd");
  CPU_OK(distrt_dropout(cpu, g.d(), y.d(), nullptr, 0.3f, 99, 1000));
  GPU_OK(distrt_dropout(gpu, &gg, &gy, nullptr, 0.3f, 99, 1000));
  expectClose(down(gy), y.v, 0.0f, "cuda dropout mask equals the CPU mask");
  Tensor table({10, 4}), e({2, 4}), dt({10, 4});
  randomize(table, 13);
  Index idx({2}, {7, 7});
  distrt_tensor gt = up(table.d()), gi = up(idx.d()), ge = up(e.d()),
                gdt = up(dt.d());
  CPU_OK(distrt_embedding(cpu, table.d(), idx.d(), e.d()));
  GPU_OK(distrt_embedding(gpu, &gt, &gi, &ge));
  expectClose(down(ge), e.v, 0.0f, "cuda embedding");
  CPU_OK(distrt_embedding_bwd(cpu, idx.d(), e.d(), dt.d(), 0));
  GPU_OK(distrt_embedding_bwd(gpu, &gi, &ge, &gdt, 0));
  expectClose(down(gdt), dt.v, 1e-6f, "cuda embedding bwd");
}

TEST_F(CudaTest, ConvPoolBatchNormOnCudnn) {
#ifndef DISTRT_TEST_HAVE_CUDNN
  GTEST_SKIP() << "built without cuDNN";
#endif
  Tensor x({2, 4, 6, 6}), w({6, 2, 3, 3}), bias({6}), y({2, 6, 3, 3}),
      dx({2, 4, 6, 6}), dw({6, 2, 3, 3}), db({6});
  randomize(x, 21);
  randomize(w, 22);
  randomize(bias, 23);
  distrt_conv2d_attr a{{2, 2}, {1, 1}, {1, 1}, {1, 1}, 2};
  distrt_tensor gx = up(x.d()), gw = up(w.d()), gbias = up(bias.d()),
                gy = up(y.d()), gdx = up(dx.d()), gdw = up(dw.d()),
                gdb = up(db.d());
  CPU_OK(distrt_conv2d(cpu, x.d(), w.d(), bias.d(), y.d(), &a));
  GPU_OK(distrt_conv2d(gpu, &gx, &gw, &gbias, &gy, &a));
  expectClose(down(gy), y.v, 1e-4f, "cuda conv");
  CPU_OK(distrt_conv2d_bwd_data(cpu, y.d(), w.d(), dx.d(), &a));
  GPU_OK(distrt_conv2d_bwd_data(gpu, &gy, &gw, &gdx, &a));
  expectClose(down(gdx), dx.v, 1e-4f, "cuda conv dx");
  CPU_OK(distrt_conv2d_bwd_weight(cpu, x.d(), y.d(), dw.d(), db.d(), &a, 0));
  GPU_OK(distrt_conv2d_bwd_weight(gpu, &gx, &gy, &gdw, &gdb, &a, 0));
  expectClose(down(gdw), dw.v, 1e-4f, "cuda conv dw");
  expectClose(down(gdb), db.v, 1e-4f, "cuda conv dbias");

  for (int kind = DISTRT_POOL_MAX; kind <= DISTRT_POOL_AVG_EXCLUDE_PAD;
       ++kind) {
    distrt_pool2d_attr p{distrt_pool_kind(kind), {3, 3}, {2, 2}, {1, 1},
                         {1, 1}};
    Tensor py({2, 4, 3, 3});
    distrt_tensor gpy = up(py.d());
    CPU_OK(distrt_pool2d(cpu, x.d(), py.d(), &p));
    GPU_OK(distrt_pool2d(gpu, &gx, &gpy, &p));
    expectClose(down(gpy), py.v, 1e-5f, "cuda pool");
    CPU_OK(distrt_pool2d_bwd(cpu, x.d(), py.d(), dx.d(), &p));
    GPU_OK(distrt_pool2d_bwd(gpu, &gx, &gpy, &gdx, &p));
    expectClose(down(gdx), dx.v, 1e-5f, "cuda pool bwd");
  }

  Tensor g({4}), b({4}), m({4}), v({4}), rm({4}), rv({4}, 1.0f), bn({2, 4, 6, 6}),
      dg({4}), dsh({4});
  randomize(g, 24);
  randomize(b, 25);
  distrt_tensor gg = up(g.d()), gb = up(b.d()), gm = up(m.d()), gv = up(v.d()),
                grm = up(rm.d()), grv = up(rv.d()), gbn = up(bn.d()),
                gdg = up(dg.d()), gdsh = up(dsh.d());
  CPU_OK(distrt_batchnorm_fwd_training(cpu, x.d(), g.d(), b.d(), bn.d(), m.d(),
                                       v.d(), rm.d(), rv.d(), 1e-5f, 0.1f));
  GPU_OK(distrt_batchnorm_fwd_training(gpu, &gx, &gg, &gb, &gbn, &gm, &gv,
                                       &grm, &grv, 1e-5f, 0.1f));
  expectClose(down(gbn), bn.v, 1e-4f, "cuda batchnorm");
  expectClose(down(gm), m.v, 1e-5f, "cuda batchnorm mean");
  expectClose(down(gv), v.v, 1e-4f, "cuda batchnorm var");
  expectClose(down(grv), rv.v, 1e-4f, "cuda batchnorm running var");
  CPU_OK(distrt_batchnorm_fwd_inference(cpu, x.d(), g.d(), b.d(), rm.d(),
                                        rv.d(), bn.d(), 1e-5f));
  GPU_OK(distrt_batchnorm_fwd_inference(gpu, &gx, &gg, &gb, &grm, &grv, &gbn,
                                        1e-5f));
  expectClose(down(gbn), bn.v, 1e-4f, "cuda batchnorm inference");
  CPU_OK(distrt_batchnorm_bwd_data(cpu, x.d(), x.d(), g.d(), m.d(), v.d(),
                                   dx.d(), 1e-5f));
  GPU_OK(distrt_batchnorm_bwd_data(gpu, &gx, &gx, &gg, &gm, &gv, &gdx, 1e-5f));
  expectClose(down(gdx), dx.v, 1e-3f, "cuda batchnorm dx");
  CPU_OK(distrt_batchnorm_bwd_weight(cpu, x.d(), x.d(), m.d(), v.d(), dg.d(),
                                     dsh.d(), 1e-5f, 0));
  GPU_OK(distrt_batchnorm_bwd_weight(gpu, &gx, &gx, &gm, &gv, &gdg, &gdsh,
                                     1e-5f, 0));
  expectClose(down(gdg), dg.v, 1e-3f, "cuda batchnorm dscale");
  expectClose(down(gdsh), dsh.v, 1e-3f, "cuda batchnorm dshift");
}

TEST_F(CudaTest, AsymmetricPaddingSaysWhatToDo) {
  Tensor x({1, 1, 4, 4}), w({1, 1, 3, 3}), y({1, 1, 3, 3});
  distrt_tensor gx = up(x.d()), gw = up(w.d()), gy = up(y.d());
  distrt_conv2d_attr a{{1, 1}, {0, 0}, {1, 1}, {1, 1}, 1};
  EXPECT_EQ(distrt_conv2d(gpu, &gx, &gw, nullptr, &gy, &a),
            DISTRT_ERROR_UNSUPPORTED);
  EXPECT_NE(std::string(distrt_last_error(gpu)).find("CPU context"),
            std::string::npos);
}

TEST_F(CudaTest, HalfPrecisionMatmulMatchesCpu) {
  for (distrt_dtype dt : {DISTRT_BF16, DISTRT_F16}) {
    Tensor a({3, 16, 24}), b({24, 8});
    randomize(a, 31);
    randomize(b, 32);
    int64_t an = a.n(), bn = b.n(), cn = 3 * 16 * 8;
    std::vector<uint16_t> ha(an), hb(bn), hc(cn), gc(cn);
    distrt_tensor ta = *a.d(), tb = *b.d();
    ta.dtype = tb.dtype = dt;
    ta.data = ha.data();
    tb.data = hb.data();
    CPU_OK(distrt_cast(cpu, a.d(), &ta));
    CPU_OK(distrt_cast(cpu, b.d(), &tb));
    int64_t cd[] = {3, 16, 8};
    distrt_tensor tc = distrt_make_tensor(hc.data(), dt, 3, cd);
    distrt_matmul_attr attr{0, 0, 1.0f, 0.0f};
    CPU_OK(distrt_matmul(cpu, &ta, &tb, nullptr, &tc, &attr));
    distrt_tensor ga = up(&ta), gb = up(&tb), gct = up(&tc);
    GPU_OK(distrt_matmul(gpu, &ga, &gb, nullptr, &gct, &attr));
    GPU_OK(distrt_synchronize(gpu));
    GPU_OK(distrt_copy(gpu, gc.data(), gct.data, cn * 2,
                       DISTRT_COPY_DEVICE_TO_HOST));
    Tensor cpuF({cn}), gpuF({cn});
    distrt_tensor hcT = distrt_make_tensor(hc.data(), dt, 1, &cn),
                  gcT = distrt_make_tensor(gc.data(), dt, 1, &cn);
    CPU_OK(distrt_cast(cpu, &hcT, cpuF.d()));
    CPU_OK(distrt_cast(cpu, &gcT, gpuF.d()));
    expectClose(gpuF.v, cpuF.v, dt == DISTRT_BF16 ? 1.0f / 64 : 1.0f / 512,
                "cuda half matmul");
  }
}
