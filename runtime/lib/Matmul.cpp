//===- Matmul.cpp - Batched matmul forward and backward --------*- C++ -*-===//
//
// One internal gemm (oneDNN matmul on CPU, cuBLAS on CUDA) expresses the
// forward and both gradients by swapping operands and transposes, so the
// transposed, batched and shared-weight cases all meet one tested path.
//
//===----------------------------------------------------------------------===//
#include "Internal.h"
#include "ScalarOps.h"
#include "cpu/CpuState.h"
#include "cpu/PostOps.h"
#ifdef DISTRT_HAVE_CUDA
#include "cuda/CudaApi.h"
#endif

using namespace distrt;
using dnnl::memory;

namespace {

struct MatmulShape {
  int64_t batchA = 1, batchB = 1, batch = 1, m = 0, n = 0, k = 0;
  std::vector<int64_t> batchDims;
};

int64_t product(const std::vector<int64_t> &v) {
  int64_t p = 1;
  for (int64_t x : v)
    p *= x;
  return p;
}

/// Derives M, N, K and the batch from A and B (names for messages).
distrt_status matmulShape(Checker &c, const char *an, const distrt_tensor *a,
                          const char *bn, const distrt_tensor *b, bool ta,
                          bool tb, MatmulShape &s) {
  DISTRT_TRY(c.minRank(an, a, 2));
  DISTRT_TRY(c.minRank(bn, b, 2));
  int ra = a->rank, rb = b->rank;
  s.m = ta ? a->dims[ra - 1] : a->dims[ra - 2];
  s.k = ta ? a->dims[ra - 2] : a->dims[ra - 1];
  int64_t kb = tb ? b->dims[rb - 1] : b->dims[rb - 2];
  s.n = tb ? b->dims[rb - 2] : b->dims[rb - 1];
  if (kb != s.k)
    return c.fail(DISTRT_ERROR_SHAPE_MISMATCH, "contraction sizes differ: '",
                  an, "' ", shapeString(*a), (ta ? " (transposed)" : ""),
                  " has K=", s.k, " but '", bn, "' ", shapeString(*b),
                  (tb ? " (transposed)" : ""), " has K=", kb,
                  "; check trans_a/trans_b");
  std::vector<int64_t> ba(a->dims, a->dims + ra - 2),
      bb(b->dims, b->dims + rb - 2);
  if (!ba.empty() && !bb.empty() && ba != bb)
    return c.fail(DISTRT_ERROR_SHAPE_MISMATCH, "batch dims differ: '", an,
                  "' has ", shapeString(ba), ", '", bn, "' has ",
                  shapeString(bb),
                  "; make them equal or pass one operand as a rank-2 matrix");
  s.batchDims = ba.empty() ? bb : ba;
  s.batchA = product(ba);
  s.batchB = product(bb);
  s.batch = product(s.batchDims);
  return DISTRT_OK;
}

std::vector<int64_t> outDims(const MatmulShape &s, int64_t rows,
                             int64_t cols) {
  std::vector<int64_t> d = s.batchDims;
  d.push_back(rows);
  d.push_back(cols);
  return d;
}

/// The primitive descriptor of matmul `d` (which must outlive the call:
/// oneDNN's iterator reads it). oneDNN 2.6 ranks brgemm ("brg:") first on
/// AVX-512 and its JIT GEMM ("gemm:jit") next; below AVX-512 the JIT GEMM
/// is first. brgemm ran 2.8-3.9x slower whenever B was not transposed and
/// had 3072 columns (a GPT MLP's forward and weight gradient: 47 against
/// 15 ms at 512x768 by 768x3072, one thread) and at most 5% faster on the
/// step's other large products. So a product of at least 2^24
/// multiply-adds whose operands are not both transposed runs on the JIT
/// GEMM; small products (attention's) and both-transposed ones, where
/// brgemm was as fast or faster, keep oneDNN's first (docs/benchmarks.md,
/// "oneDNN's matmul implementations").
dnnl::matmul::primitive_desc matmulDesc(const dnnl::matmul::desc &d,
                                        const dnnl::primitive_attr &attr,
                                        const dnnl::engine &engine, int64_t m,
                                        int64_t n, int64_t k, bool ta,
                                        bool tb) {
  if (m * n * k >= (int64_t{1} << 24) && !(ta && tb)) {
    dnnl::matmul::primitive_desc probe(d, attr, engine);
    do
      if (std::string(probe.impl_info_str()).rfind("gemm:", 0) == 0)
        return probe;
    while (probe.next_impl());
  }
  return dnnl::matmul::primitive_desc(d, attr, engine);
}

/// C[b] = alpha op(A[b]) op(B[b]) + beta C[b] + bias on oneDNN. A batch of 1
/// broadcasts over the other operand's batch.
void cpuGemm(distrt_context *ctx, int64_t batchA, int64_t batchB, int64_t m,
             int64_t n, int64_t k, const float *a, bool ta, const float *b,
             bool tb, float *c, float alpha, float beta, const float *bias) {
  cpu::CpuState &st = cpu::state(ctx);
  int64_t batch = batchA > batchB ? batchA : batchB;
  memory::desc aMd({batchA, m, k}, memory::data_type::f32,
                   ta ? memory::dims{m * k, 1, m} : memory::dims{m * k, k, 1});
  memory::desc bMd({batchB, k, n}, memory::data_type::f32,
                   tb ? memory::dims{k * n, 1, k} : memory::dims{k * n, n, 1});
  memory::desc cMd({batch, m, n}, memory::data_type::f32,
                   memory::dims{m * n, n, 1});
  memory::desc biasMd({1, 1, n}, memory::data_type::f32,
                      memory::dims{n, n, 1});
  std::string key = cpu::dimsKey({batchA, batchB, m, n, k, ta, tb, !!bias}) +
                    std::to_string(alpha) + "," + std::to_string(beta);
  dnnl::primitive &prim = st.primitive("matmul:" + key, [&] {
    dnnl::primitive_attr attr;
    if (alpha != 1.0f)
      attr.set_output_scales(0, {alpha});
    dnnl::post_ops ops;
    if (beta != 0.0f)
      ops.append_sum(beta);
    if (bias)
      ops.append_binary(dnnl::algorithm::binary_add, biasMd);
    attr.set_post_ops(ops);
    dnnl::matmul::desc d(aMd, bMd, cMd);
    return dnnl::matmul(matmulDesc(d, attr, st.engine, m, n, k, ta, tb));
  });
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, cpu::mem(st, aMd, a)},
      {DNNL_ARG_WEIGHTS, cpu::mem(st, bMd, b)},
      {DNNL_ARG_DST, cpu::mem(st, cMd, c)}};
  if (bias)
    args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(beta != 0.0f ? 1 : 0) |
         DNNL_ARG_SRC_1] = cpu::mem(st, biasMd, bias);
  prim.execute(st.stream, args);
  st.stream.wait();
}

const void *at(const void *p, int64_t elems, distrt_dtype dt) {
  return static_cast<const char *>(p) + elems * distrt_dtype_size(dt);
}

/// `n` elements of dtype `dt` as f32 (a copy unless already f32).
std::vector<float> toF32(const void *p, int64_t n, distrt_dtype dt) {
  std::vector<float> out(n);
  const uint16_t *h = static_cast<const uint16_t *>(p);
  for (int64_t i = 0; i < n; ++i)
    out[i] = dt == DISTRT_BF16 ? bf16ToFloat(h[i]) : halfToFloat(h[i]);
  return out;
}

/// All operands share dtype `dt`; accumulation is f32 everywhere. oneDNN
/// 2.x has no f16/bf16 matmul on CPUs without AVX-512 BF16/FP16, so the CPU
/// backend widens half-precision operands to f32 and rounds the result back
/// (the CUDA backend runs them natively with f32 accumulation).
distrt_status gemm(distrt_context *ctx, distrt_dtype dt, int64_t batchA,
                   int64_t batchB, int64_t m, int64_t n, int64_t k,
                   const void *a, bool ta, const void *b, bool tb, void *c,
                   float alpha, float beta, const void *bias) {
#ifdef DISTRT_HAVE_CUDA
  if (ctx->isCuda())
    return cuda::gemm(ctx, dt, batchA > batchB ? batchA : batchB, m, n, k, a,
                      ta, batchA == 1 ? 0 : m * k, b, tb,
                      batchB == 1 ? 0 : k * n, c, alpha, beta, bias);
#endif
  if (m == 0 || n == 0)
    return DISTRT_OK;
  if (dt == DISTRT_F32) {
    cpuGemm(ctx, batchA, batchB, m, n, k, static_cast<const float *>(a), ta,
            static_cast<const float *>(b), tb, static_cast<float *>(c), alpha,
            beta, static_cast<const float *>(bias));
    return DISTRT_OK;
  }
  int64_t batch = batchA > batchB ? batchA : batchB;
  std::vector<float> fa = toF32(a, batchA * m * k, dt),
                     fb = toF32(b, batchB * k * n, dt),
                     fc = beta != 0.0f ? toF32(c, batch * m * n, dt)
                                       : std::vector<float>(batch * m * n),
                     fbias = bias ? toF32(bias, n, dt) : std::vector<float>();
  cpuGemm(ctx, batchA, batchB, m, n, k, fa.data(), ta, fb.data(), tb,
          fc.data(), alpha, beta, bias ? fbias.data() : nullptr);
  uint16_t *hc = static_cast<uint16_t *>(c);
  for (size_t i = 0; i < fc.size(); ++i)
    hc[i] = dt == DISTRT_BF16 ? floatToBf16(fc[i]) : floatToHalf(fc[i]);
  return DISTRT_OK;
}

/// sum_b op(X[b]) op(Y[b]) into one [m, n] output (gradient of an operand
/// that was broadcast over the batch).
distrt_status gemmSumBatches(distrt_context *ctx, distrt_dtype dt,
                             int64_t batch, int64_t m, int64_t n, int64_t k,
                             const void *x, bool tx, int64_t strideX,
                             const void *y, bool ty, int64_t strideY,
                             void *out, float alpha, float beta) {
  for (int64_t i = 0; i < batch; ++i)
    DISTRT_TRY(gemm(ctx, dt, 1, 1, m, n, k, at(x, i * strideX, dt), tx,
                    at(y, i * strideY, dt), ty, out, alpha,
                    i == 0 ? beta : 1.0f, nullptr));
  return DISTRT_OK;
}

/// a, b and c (or their gradients) must share one float dtype.
distrt_status checkDtypes(Checker &c, const char *an, const distrt_tensor *a,
                          const char *bn, const distrt_tensor *b,
                          const char *cn, const distrt_tensor *cc,
                          const char *biasName, const distrt_tensor *bias) {
  DISTRT_TRY(c.floatTensor(an, a));
  DISTRT_TRY(c.floatTensor(bn, b));
  DISTRT_TRY(c.floatTensor(cn, cc));
  if (bias)
    DISTRT_TRY(c.floatTensor(biasName, bias));
  if (b->dtype != a->dtype || cc->dtype != a->dtype ||
      (bias && bias->dtype != a->dtype))
    return c.fail(DISTRT_ERROR_UNSUPPORTED, "operands have dtypes ",
                  dtypeName(a->dtype), ", ", dtypeName(b->dtype), ", ",
                  dtypeName(cc->dtype),
                  (bias ? std::string(", ") + dtypeName(bias->dtype) : ""),
                  "; matmul takes one dtype (f32, f16 or bf16) for all of "
                  "them (cast with distrt_cast)");
  return DISTRT_OK;
}

distrt_status checkAttr(Checker &c, const distrt_matmul_attr *attr) {
  return c.pointer("attr", attr);
}

/// Dims and strides of matrix operand `t` as the [batch..., rows, cols]
/// operand of a rank-`rank` matmul (op(t) when `trans`); a rank-2 operand
/// is shared by every batch (unit batch dims).
void matmulOperand(const distrt_tensor &t, bool trans, size_t rank,
                   memory::dims &dims, memory::dims &strides) {
  std::vector<int64_t> st = stridesOf(t);
  dims.assign(rank, 1);
  strides.assign(rank, 0);
  size_t lead = rank - (size_t)t.rank;
  for (int i = 0; i < t.rank; ++i) {
    dims[lead + (size_t)i] = t.dims[i];
    strides[lead + (size_t)i] = st[(size_t)i];
  }
  if (trans) {
    std::swap(dims[rank - 1], dims[rank - 2]);
    std::swap(strides[rank - 1], strides[rank - 2]);
  }
  // Unit dims may take any stride; oneDNN wants one it can check, the
  // dense one (filled from the innermost dim outwards, so that the leading
  // unit dims of a shared 2-D operand aligned to rank 4 are not left at 0:
  // oneDNN then saw a `bcda` layout and ran its reference matmul).
  for (size_t i = rank; i-- > 0;)
    if (dims[i] == 1 && strides[i] == 0)
      strides[i] = i + 1 < rank ? strides[i + 1] * dims[i + 1] : 1;
}

/// The layout of a constant copy of plain row-major weights `dims` whose
/// rows are a whole, even number of 64-byte lines (a multiple of 128
/// bytes: 256, 768, 1024, 4096 floats): each row padded by one line.
/// oneDNN's gemm:jit packs the weights on every call, reading a column
/// down the rows; rows 4 KiB apart (1024 floats) all fall into the same
/// sets of the L1 cache and evict each other, and GPT-2's c_fc
/// (256 x 256 x 1024) took 3.0 ms against 1.5 with the padding (a
/// standalone oneDNN matmul, 1 thread, AVX2), its 4096-wide LM head 19.6
/// against 6.3. An odd number of lines per row starts consecutive rows in
/// different sets. Other widths are left dense.
memory::desc staggeredWeights(const memory::dims &dims) {
  memory::dims strides = cpu::rowMajorStrides(dims);
  constexpr int64_t lineFloats = 64 / sizeof(float);
  int64_t n = dims.back();
  if (dims.size() < 2 || n % (2 * lineFloats) != 0)
    return cpu::plainDesc(dims);
  int64_t ld = n + lineFloats;
  strides[dims.size() - 2] = ld;
  for (size_t i = dims.size() - 2; i-- > 0;)
    strides[i] = strides[i + 1] * dims[i + 1];
  return memory::desc(dims, memory::data_type::f32, strides);
}

/// The f32 matmul with strided operands and post-ops (cached per shape,
/// strides and post-op list), recorded under `replayKey`.
distrt_status cpuMatmulEx(distrt_context *ctx, const distrt_tensor *a, bool ta,
                          const distrt_tensor *b, bool tb,
                          const distrt_tensor *bias, const distrt_tensor *c,
                          float alpha, float beta, const distrt_compute_ex *ex,
                          const std::string &replayKey) {
  cpu::CpuState &st = cpu::state(ctx);
  size_t rank = (size_t)c->rank;
  memory::dims ad, as, bd, bs, cd(c->dims, c->dims + rank);
  matmulOperand(*a, ta, rank, ad, as);
  matmulOperand(*b, tb, rank, bd, bs);
  std::vector<int64_t> cs = stridesOf(*c);
  // A few rows by constant weights: one pass over the packed weights
  // (cpu/SkinnyGemm.h) instead of oneDNN's GEMM, which repacks them.
  if (ex && ex->constant_weights && rank == 2 && ad[0] >= 1 &&
      ad[0] <= cpu::kSkinnyMaxRows && as[1] == 1 && cs[1] == 1 &&
      alpha == 1.0f && beta == 0.0f) {
    auto it = st.skinny.find(b->data);
    if (it == st.skinny.end() || it->second.k != bd[0] ||
        it->second.n != bd[1] || it->second.strideK != bs[0] ||
        it->second.strideN != bs[1])
      it = st.skinny
               .insert_or_assign(b->data, cpu::packSkinny(cpu::f32(b), bd[0],
                                                          bd[1], bs[0], bs[1]))
               .first;
    ++st.skinnyCalls;
    cpu::skinnyMatmul(cpu::f32(a), as[0], ad[0], it->second,
                      bias ? cpu::f32(bias) : nullptr, cpu::f32(c), cs[0], ex);
    return DISTRT_OK;
  }
  memory::desc aMd(ad, memory::data_type::f32, as),
      bMd(bd, memory::data_type::f32, bs),
      cMd(cd, memory::data_type::f32, memory::dims(cs.begin(), cs.end()));
  memory::dims biasDims(rank, 1);
  biasDims[rank - 1] = cd[rank - 1];
  memory::desc biasMd = cpu::plainDesc(biasDims);
  bool userSum = ex && ex->count > 0 && ex->post[0].kind == DISTRT_POST_SUM;
  std::string key = "matmul_ex:" + cpu::dimsKey(ad) + cpu::dimsKey(as) + "|" +
                    cpu::dimsKey(bd) + cpu::dimsKey(bs) + "|" +
                    cpu::dimsKey(cd) + cpu::dimsKey(memory::dims(cs.begin(), cs.end())) +
                    "|" + std::to_string(alpha) + "," + std::to_string(beta) +
                    (bias ? ",bias" : "") + cpu::postOpsKey(ex, rank);
  // oneDNN applies a sum first: the user's leading sum joins beta's.
  auto primitiveDesc = [&](const memory::desc &weights, bool packed) {
    dnnl::primitive_attr attr;
    if (alpha != 1.0f)
      attr.set_output_scales(0, {alpha});
    dnnl::post_ops ops;
    if (beta != 0.0f || userSum)
      ops.append_sum(beta + (userSum ? 1.0f : 0.0f));
    if (bias)
      ops.append_binary(dnnl::algorithm::binary_add, biasMd);
    cpu::appendPostOps(ops, ex, userSum ? 1 : 0, rank);
    attr.set_post_ops(ops);
    dnnl::matmul::desc d(aMd, weights, cMd);
    if (packed)
      return dnnl::matmul::primitive_desc(d, attr, st.engine);
    return matmulDesc(d, attr, st.engine, ad[rank - 2], bd[rank - 1],
                      ad[rank - 1], as[rank - 1] != 1, bs[rank - 1] != 1);
  };
  memory weights = cpu::mem(st, bMd, b->data);
  dnnl::primitive *prim;
  if (ex && ex->constant_weights) {
    // Constant weights (an inference program's): the kernel picks their
    // layout and they are reordered into it once per address, as the
    // convolutions' are (onnxruntime packs its GEMM weights alike).
    key += "|packed";
    auto it = st.layered.find(key);
    if (it == st.layered.end()) {
      auto pd = primitiveDesc(
          memory::desc(bd, memory::data_type::f32, memory::format_tag::any),
          true);
      // A kernel that reads its weights plain (gemm:jit, every matmul on
      // AVX2) gets the copy with rows padded apart (staggeredWeights).
      if (pd.weights_desc() == cpu::plainDesc(bd))
        pd = primitiveDesc(staggeredWeights(bd), true);
      it = st.layered
               .emplace(key, cpu::CpuState::Layered{dnnl::matmul(pd),
                                                    pd.weights_desc()})
               .first;
    }
    prim = &it->second.prim;
    weights = st.weightsFor(key, it->second, weights, b->data, true);
  } else {
    prim = &st.primitive(
        key, [&] { return dnnl::matmul(primitiveDesc(bMd, false)); });
  }
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, cpu::mem(st, aMd, a->data)},
      {DNNL_ARG_WEIGHTS, weights},
      {DNNL_ARG_DST, cpu::mem(st, cMd, c->data)}};
  int index = (beta != 0.0f || userSum) ? 1 : 0;
  if (bias)
    args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(index++) | DNNL_ARG_SRC_1] =
        cpu::mem(st, biasMd, bias->data);
  cpu::postOpArgs(st, args, ex, userSum ? 1 : 0, index, rank);
  prim->execute(st.stream, args);
  st.stream.wait();
  // The weights are read as they are or from their packed constant copy.
  st.remember(replayKey, *prim, args);
  return DISTRT_OK;
}

} // namespace

extern "C" distrt_status distrt_matmul(distrt_context *ctx,
                                       const distrt_tensor *a,
                                       const distrt_tensor *b,
                                       const distrt_tensor *bias,
                                       const distrt_tensor *c,
                                       const distrt_matmul_attr *attr) {
  const char *fn = "distrt_matmul";
  Checker ck(ctx, fn);
  DISTRT_TRY(ck.context());
  DISTRT_TRY(checkAttr(ck, attr));
  DISTRT_TRY(checkDtypes(ck, "a", a, "b", b, "c", c, "bias", bias));
  MatmulShape s;
  DISTRT_TRY(matmulShape(ck, "a", a, "b", b, attr->trans_a, attr->trans_b, s));
  DISTRT_TRY(ck.shape("c", c, outDims(s, s.m, s.n)));
  if (bias)
    DISTRT_TRY(ck.shape("bias", bias, {s.n}));
  return guardCall(ctx, fn, [&] {
    return gemm(ctx, a->dtype, s.batchA, s.batchB, s.m, s.n, s.k, a->data,
                attr->trans_a, b->data, attr->trans_b, c->data, attr->alpha,
                attr->beta, bias ? bias->data : nullptr);
  });
}

extern "C" distrt_status distrt_matmul_bwd_data(distrt_context *ctx,
                                                const distrt_tensor *dc,
                                                const distrt_tensor *b,
                                                const distrt_tensor *da,
                                                const distrt_matmul_attr *attr) {
  const char *fn = "distrt_matmul_bwd_data";
  Checker ck(ctx, fn);
  DISTRT_TRY(ck.context());
  DISTRT_TRY(checkAttr(ck, attr));
  DISTRT_TRY(checkDtypes(ck, "dc", dc, "b", b, "da", da, "", nullptr));
  MatmulShape s;
  bool ta = attr->trans_a, tb = attr->trans_b;
  DISTRT_TRY(matmulShape(ck, "da", da, "b", b, ta, tb, s));
  DISTRT_TRY(ck.shape("dc", dc, outDims(s, s.m, s.n)));
  float alpha = attr->alpha;
  const void *pdc = dc->data, *pb = b->data;
  void *pda = da->data;
  distrt_dtype dt = dc->dtype;
  return guardCall(ctx, fn, [&]() -> distrt_status {
    if (s.batchA == 1 && s.batch > 1) {
      // A was shared by every batch: its gradient sums over the batch.
      if (!ta)
        return gemmSumBatches(ctx, dt, s.batch, s.m, s.k, s.n, pdc, false,
                              s.m * s.n, pb, !tb, s.k * s.n, pda, alpha, 0.f);
      return gemmSumBatches(ctx, dt, s.batch, s.k, s.m, s.n, pb, tb, s.k * s.n,
                            pdc, true, s.m * s.n, pda, alpha, 0.f);
    }
    if (!ta) // dA = dC op(B)^T
      return gemm(ctx, dt, s.batch, s.batchB, s.m, s.k, s.n, pdc, false, pb, !tb,
                  pda, alpha, 0.f, nullptr);
    // dA (stored [K, M]) = op(B) dC^T
    return gemm(ctx, dt, s.batchB, s.batch, s.k, s.m, s.n, pb, tb, pdc, true, pda,
                alpha, 0.f, nullptr);
  });
}

extern "C" distrt_status
distrt_matmul_bwd_weight(distrt_context *ctx, const distrt_tensor *a,
                         const distrt_tensor *dc, const distrt_tensor *db,
                         const distrt_matmul_attr *attr, int32_t accumulate) {
  const char *fn = "distrt_matmul_bwd_weight";
  Checker ck(ctx, fn);
  DISTRT_TRY(ck.context());
  DISTRT_TRY(checkAttr(ck, attr));
  DISTRT_TRY(checkDtypes(ck, "a", a, "dc", dc, "db", db, "", nullptr));
  MatmulShape s;
  bool ta = attr->trans_a, tb = attr->trans_b;
  DISTRT_TRY(matmulShape(ck, "a", a, "db", db, ta, tb, s));
  DISTRT_TRY(ck.shape("dc", dc, outDims(s, s.m, s.n)));
  float alpha = attr->alpha, beta = accumulate ? 1.0f : 0.0f;
  const void *pa = a->data, *pdc = dc->data;
  void *pdb = db->data;
  distrt_dtype dt = a->dtype;
  return guardCall(ctx, fn, [&]() -> distrt_status {
    if (s.batchB == 1 && s.batch > 1) {
      // B was shared by every batch: its gradient sums over the batch. With
      // A untransposed the batch folds into the contraction (one gemm).
      int64_t rows = s.batch * s.m;
      if (!ta && !tb)
        return gemm(ctx, dt, 1, 1, s.k, s.n, rows, pa, true, pdc, false, pdb,
                    alpha, beta, nullptr);
      if (!ta && tb)
        return gemm(ctx, dt, 1, 1, s.n, s.k, rows, pdc, true, pa, false, pdb,
                    alpha, beta, nullptr);
      if (!tb)
        return gemmSumBatches(ctx, dt, s.batch, s.k, s.n, s.m, pa, !ta, s.m * s.k,
                              pdc, false, s.m * s.n, pdb, alpha, beta);
      return gemmSumBatches(ctx, dt, s.batch, s.n, s.k, s.m, pdc, true, s.m * s.n,
                            pa, ta, s.m * s.k, pdb, alpha, beta);
    }
    if (!tb) // dB = op(A)^T dC
      return gemm(ctx, dt, s.batchA, s.batch, s.k, s.n, s.m, pa, !ta, pdc, false,
                  pdb, alpha, beta, nullptr);
    // dB (stored [N, K]) = dC^T op(A)
    return gemm(ctx, dt, s.batch, s.batchA, s.n, s.k, s.m, pdc, true, pa, ta, pdb,
                alpha, beta, nullptr);
  });
}

extern "C" distrt_status distrt_matmul_bwd_bias(distrt_context *ctx,
                                                const distrt_tensor *dc,
                                                const distrt_tensor *dbias,
                                                int32_t accumulate) {
  const char *fn = "distrt_matmul_bwd_bias";
  Checker ck(ctx, fn);
  DISTRT_TRY(ck.context());
  DISTRT_TRY(ck.tensor("dc", dc, DISTRT_F32));
  DISTRT_TRY(ck.tensor("dbias", dbias, DISTRT_F32));
  DISTRT_TRY(ck.minRank("dc", dc, 1));
  int64_t n = dc->dims[dc->rank - 1];
  DISTRT_TRY(ck.shape("dbias", dbias, {n}));
  int64_t rows = n ? distrt_numel(dc) / n : 0;
  // dbias = 1^T dC: a [1, rows] x [rows, n] gemm against a ones vector.
  return guardCall(ctx, fn, [&]() -> distrt_status {
    void *ones = nullptr;
    DISTRT_TRY(distrt_alloc(ctx, sizeof(float) * (rows ? rows : 1), &ones));
    distrt_tensor onesT = distrt_make_tensor(ones, DISTRT_F32, 1, &rows);
    distrt_status st = distrt_fill(ctx, &onesT, 1.0f);
    if (st == DISTRT_OK)
      st = gemm(ctx, DISTRT_F32, 1, 1, 1, n, rows, ones, false, dc->data,
                false, dbias->data, 1.0f,
                accumulate ? 1.0f : 0.0f, nullptr);
    distrt_free(ctx, ones);
    return st;
  });
}

extern "C" distrt_status distrt_matmul_ex(distrt_context *ctx,
                                          const distrt_tensor *a,
                                          const distrt_tensor *b,
                                          const distrt_tensor *bias,
                                          const distrt_tensor *c,
                                          const distrt_matmul_attr *attr,
                                          const distrt_compute_ex *ex) {
  const char *fn = "distrt_matmul_ex";
  Checker ck(ctx, fn);
  DISTRT_TRY(ck.context());
  // The same call as one that ran before: the checks passed then. (Calls
  // without `ex` mostly take the plain path below, which is not recorded.)
  std::string key;
  if (ex && !ctx->isCuda() && !cpu::state(ctx).replayOff) {
    cpu::CallKey k(fn);
    k.tensor(a).tensor(b).tensor(bias).tensor(c).ex(ex);
    if (attr)
      k.pod(*attr);
    key = std::move(k.bytes);
    if (const cpu::CpuState::Replay *r = cpu::state(ctx).replay(key))
      return guardCall(ctx, fn, [&] {
        cpu::state(ctx).run(*r);
        distrt_compute_ex trimmed;
        if (cpu::trimSlowTail(ex, *c, trimmed) != ex)
          cpu::applyTrimmedTail(cpu::state(ctx), *c);
        return DISTRT_OK;
      });
  }
  DISTRT_TRY(checkAttr(ck, attr));
  ck.allowStrided();
  DISTRT_TRY(checkDtypes(ck, "a", a, "b", b, "c", c, "", nullptr));
  ck.allowStrided(false);
  if (bias)
    DISTRT_TRY(ck.floatTensor("bias", bias));
  MatmulShape s;
  DISTRT_TRY(matmulShape(ck, "a", a, "b", b, attr->trans_a, attr->trans_b, s));
  DISTRT_TRY(ck.shape("c", c, outDims(s, s.m, s.n)));
  if (bias)
    DISTRT_TRY(ck.shape("bias", bias, {s.n}));
  bool dense = isDense(*a) && isDense(*b) && isDense(*c);
  bool post = ex && ex->count > 0;
  bool packed = ex && ex->constant_weights && !ctx->isCuda() &&
                b->dtype == DISTRT_F32 && a->dtype == DISTRT_F32;
  if (!post && dense && !packed)
    return distrt_matmul(ctx, a, b, bias, c, attr);
  if (ctx->isCuda())
    return ck.fail(DISTRT_ERROR_UNSUPPORTED,
                   "post-ops and strided operands run on the CPU backend "
                   "only; pass dense tensors and no post-ops on CUDA");
  if (a->dtype != DISTRT_F32 || b->dtype != DISTRT_F32 ||
      c->dtype != DISTRT_F32 || (bias && bias->dtype != DISTRT_F32))
    return ck.fail(DISTRT_ERROR_UNSUPPORTED,
                   "post-ops and strided operands take f32 tensors");
  for (const distrt_tensor *t : {a, b, c}) {
    std::vector<int64_t> st = stridesOf(*t);
    if (st[(size_t)t->rank - 1] != 1 && st[(size_t)t->rank - 2] != 1)
      return ck.fail(DISTRT_ERROR_UNSUPPORTED, "a matrix operand ",
                     shapeString(*t), " with strides ", shapeString(st),
                     " has no unit stride in its last two dims");
  }
  DISTRT_TRY(cpu::checkPostOps(ck, ex, dimsOf(*c), stridesOf(*c)));
  return guardCall(ctx, fn, [&] {
    distrt_compute_ex trimmed;
    const distrt_compute_ex *run = cpu::trimSlowTail(ex, *c, trimmed);
    DISTRT_TRY(cpuMatmulEx(ctx, a, attr->trans_a, b, attr->trans_b, bias, c,
                           attr->alpha, attr->beta, run, key));
    if (run != ex)
      cpu::applyTrimmedTail(cpu::state(ctx), *c);
    return DISTRT_OK;
  });
}
