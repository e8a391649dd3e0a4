//===- RingAttention.cpp - Ring attention over a communicator --*- C++ -*-===//
//
// Context parallelism's attention (Liu et al., "Ring Attention with
// Blockwise Transformers"; Megatron-LM's context parallelism): each rank
// keeps its queries and passes its key/value block around the ring,
// computing against the block it holds while the next one arrives. The
// forward merges the blocks with the online softmax (a running max and sum
// per query row, as FlashAttention does); the backward recomputes each
// block's probabilities from the forward's log-sum-exp and sends every
// block's gradient sums along with it, so they end on the block's own rank.
// The CPU kernels here, the transfers over MPI (non-blocking, bounded by the
// communicator's timeout); CUDA contexts go to cuda/CudaRing.cu.
//
//===----------------------------------------------------------------------===//
#include "RingAttention.h"

#include "distrt/distrt_comm.h"

#ifdef DISTRT_HAVE_MPI
#include "CommMpi.h"
#endif

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

using namespace distrt;

namespace {

/// The scores the thread's last CPU forward computed (lastRingScores).
thread_local int64_t scoresComputed = 0;

/// Tags of the ring's transfers: above distrt_send's and the ring
/// collectives' (Ring.cpp), so they never match another message.
constexpr int kKvTag = kMaxSendTag + 2;
constexpr int kGradTag = kMaxSendTag + 3;

/// Checks the arguments and fills `shape`: q [..., Sq, D], k [..., Skv, D],
/// v [..., Skv, Dv], `out` [..., Sq, Dv] and `lse` [..., Sq], dense f32,
/// the leading dims of all the same; `mask` (optional) [..., Sq, size Skv]
/// with leading dims all 1 or q's.
distrt_status checkRing(distrt_comm *comm, const char *fn,
                        const distrt_tensor *q, const distrt_tensor *k,
                        const distrt_tensor *v, const distrt_tensor *mask,
                        float scale, int32_t balanced, const distrt_tensor *out,
                        const distrt_tensor *lse, RingShape &shape) {
  if (!comm || !comm->ctx)
    return setError(nullptr, DISTRT_ERROR_INVALID_ARGUMENT,
                    concat(fn, ": null communicator; create one with "
                               "distrt_comm_create"));
  Checker c(comm->ctx, fn);
  const std::pair<const char *, const distrt_tensor *> all[] = {
      {"q", q}, {"k", k}, {"v", v}, {"out", out}, {"lse", lse}};
  for (auto [name, t] : all) {
    DISTRT_TRY(c.pointer(name, t));
    DISTRT_TRY(c.tensor(name, t, DISTRT_F32));
  }
  DISTRT_TRY(c.minRank("q", q, 2));
  const int32_t r = q->rank;
  std::vector<int64_t> lead(q->dims, q->dims + r - 2);
  auto with = [&](std::initializer_list<int64_t> tail) {
    std::vector<int64_t> dims = lead;
    dims.insert(dims.end(), tail);
    return dims;
  };
  shape.sq = q->dims[r - 2];
  shape.d = q->dims[r - 1];
  if (k->rank != r)
    return c.fail(DISTRT_ERROR_SHAPE_MISMATCH, "k ", shapeString(*k), " and q ",
                  shapeString(*q),
                  " differ in rank; both are [..., positions, features] with "
                  "the same leading dims");
  shape.skv = k->dims[r - 2];
  DISTRT_TRY(c.shape("k", k, with({shape.skv, shape.d})));
  shape.dv = v->rank == r ? v->dims[r - 1] : 0;
  DISTRT_TRY(c.shape("v", v, with({shape.skv, shape.dv})));
  DISTRT_TRY(c.shape("out", out, with({shape.sq, shape.dv})));
  DISTRT_TRY(c.shape("lse", lse, with({shape.sq})));
  if (!std::isfinite(scale))
    return c.fail(DISTRT_ERROR_INVALID_ARGUMENT, "scale ", scale,
                  " is not finite");
  if (balanced != 0 && balanced != 1)
    return c.fail(DISTRT_ERROR_INVALID_ARGUMENT, "balanced ", balanced,
                  " is neither 0 (contiguous blocks) nor 1 (the load-balanced "
                  "split)");
  if (balanced && (shape.sq % 2 != 0 || shape.skv % 2 != 0))
    return c.fail(DISTRT_ERROR_SHAPE_MISMATCH, "q ", shapeString(*q), " and k ",
                  shapeString(*k),
                  " hold an odd number of positions; a balanced rank holds "
                  "two equal chunks of the sequence (pass balanced = 0)");
  shape.balanced = balanced != 0;
  shape.batch = 1;
  for (int64_t d : lead)
    shape.batch *= d;
  shape.rank = comm->rank;
  shape.ranks = comm->size;
  shape.scale = scale;
  if (mask) {
    DISTRT_TRY(c.tensor("mask", mask, DISTRT_F32));
    const int64_t seq = shape.skv * comm->size;
    std::vector<int64_t> shared(lead.size(), 1);
    shared.insert(shared.end(), {shape.sq, seq});
    std::vector<int64_t> own = with({shape.sq, seq});
    if (dimsOf(*mask) != shared && dimsOf(*mask) != own)
      return c.fail(DISTRT_ERROR_SHAPE_MISMATCH, "mask ", shapeString(*mask),
                    " is neither ", shapeString(shared),
                    " (one for every "
                    "head) nor ",
                    shapeString(own),
                    ": it holds this rank's query rows against all ", seq,
                    " positions of the ", comm->size, " blocks");
    shape.bias = static_cast<const float *>(mask->data);
    shape.biasStride = dimsOf(*mask) == shared ? 0 : shape.sq * seq;
  }
  return DISTRT_OK;
}

/// One step of the forward on the CPU: this rank's queries against key and
/// value block `block` (`kv`: K then V), merged into the running max `m`,
/// sum `l` and unnormalized output `acc` of every query row. In double, so
/// the blocks' other order of the softmax's sums (and the rescaling of the
/// running ones) costs no f32 rounding: the result is the f32 rounding of
/// one process's attention within the last bits.
void forwardBlock(const RingShape &s, int32_t block, const float *q,
                  const float *kv, double *m, double *l, double *acc) {
  const float *kBase = kv, *vBase = kv + s.batch * s.skv * s.d;
  const double dropped = -std::numeric_limits<double>::infinity();
  std::vector<double> scores(s.skv);
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t i = 0; i < s.sq; ++i) {
      const int64_t row = b * s.sq + i;
      const float *qi = q + row * s.d;
      const float *k = kBase + b * s.skv * s.d;
      const float *v = vBase + b * s.skv * s.dv;
      double blockMax = dropped;
      for (int64_t j = 0; j < s.skv; ++j) {
        const float bias = s.biasAt(b, i, block, j);
        if (bias <= kMaskedBias) {
          scores[j] = dropped;
          continue;
        }
        scores[j] = s.scoreOf<double>(qi, k + j * s.d, bias);
        ++scoresComputed;
        blockMax = std::max(blockMax, scores[j]);
      }
      if (blockMax == dropped)
        continue;
      const double mNew = std::max(m[row], blockMax);
      // exp(-inf) = 0: the first block seen starts the sums.
      const double rescale = std::exp(m[row] - mNew);
      double *a = acc + row * s.dv;
      for (int64_t x = 0; x < s.dv; ++x)
        a[x] *= rescale;
      double sum = l[row] * rescale;
      for (int64_t j = 0; j < s.skv; ++j) {
        if (scores[j] == dropped)
          continue;
        const double p = std::exp(scores[j] - mNew);
        sum += p;
        for (int64_t x = 0; x < s.dv; ++x)
          a[x] += p * v[j * s.dv + x];
      }
      l[row] = sum;
      m[row] = mNew;
    }
}

/// One step of the backward on the CPU: the probabilities of this rank's
/// queries against block `block` (`kv`), recomputed from `lse`, add to
/// `dq` and to the block's gradient sums `dkv` (dK then dV). `delta` holds
/// each query row's dout . out. In double, as the forward; the block's
/// sums travel the ring in f32.
void backwardBlock(const RingShape &s, int32_t block, const float *q,
                   const float *kv, const float *lse, const float *dout,
                   const double *delta, double *dq, float *dkv) {
  const int64_t kOff = s.batch * s.skv * s.d;
  std::vector<double> dk(s.skv * s.d), dv(s.skv * s.dv);
  for (int64_t b = 0; b < s.batch; ++b) {
    const float *k = kv + b * s.skv * s.d;
    const float *v = kv + kOff + b * s.skv * s.dv;
    std::fill(dk.begin(), dk.end(), 0.0);
    std::fill(dv.begin(), dv.end(), 0.0);
    for (int64_t i = 0; i < s.sq; ++i) {
      const int64_t row = b * s.sq + i;
      const float *qi = q + row * s.d, *gi = dout + row * s.dv;
      double *dqi = dq + row * s.d;
      for (int64_t j = 0; j < s.skv; ++j) {
        const float bias = s.biasAt(b, i, block, j);
        if (bias <= kMaskedBias)
          continue;
        double dp = 0;
        for (int64_t x = 0; x < s.dv; ++x)
          dp += double(gi[x]) * v[j * s.dv + x];
        const double p =
            std::exp(s.scoreOf<double>(qi, k + j * s.d, bias) - lse[row]);
        const double ds = p * (dp - delta[row]) * s.scale;
        for (int64_t x = 0; x < s.d; ++x) {
          dqi[x] += ds * k[j * s.d + x];
          dk[j * s.d + x] += ds * qi[x];
        }
        for (int64_t x = 0; x < s.dv; ++x)
          dv[j * s.dv + x] += p * gi[x];
      }
    }
    float *dkOut = dkv + b * s.skv * s.d;
    float *dvOut = dkv + kOff + b * s.skv * s.dv;
    for (int64_t x = 0; x < s.skv * s.d; ++x)
      dkOut[x] += float(dk[x]);
    for (int64_t x = 0; x < s.skv * s.dv; ++x)
      dvOut[x] += float(dv[x]);
  }
}

/// Packs a rank's key and value blocks into one buffer (K then V).
void pack(const RingShape &s, const float *k, const float *v, float *kv) {
  const int64_t kFloats = s.batch * s.skv * s.d;
  std::memcpy(kv, k, kFloats * sizeof(float));
  std::memcpy(kv + kFloats, v, s.batch * s.skv * s.dv * sizeof(float));
}

/// A ring transfer in flight: `send` to rank + 1 and `recv` from rank - 1.
/// Without MPI (a world of one) there is nothing to move.
class Transfer {
public:
  Transfer(distrt_comm *comm, const char *fn) : comm_(comm), fn_(fn) {}

  distrt_status start(const float *send, float *recv, int64_t floats, int tag) {
#ifdef DISTRT_HAVE_MPI
    using namespace distrt::mpi;
    const int32_t n = comm_->size;
    const int32_t right = (comm_->rank + 1) % n;
    left_ = (comm_->rank + n - 1) % n;
    // Counts fit an int: blocks below 8 GiB of floats.
    DISTRT_MPI_TRY(comm_, fn_,
                   MPI_Irecv(recv, (int)floats, MPI_FLOAT, left_, tag,
                             mpiOf(comm_), &reqs_[0]));
    DISTRT_MPI_TRY(comm_, fn_,
                   MPI_Isend(send, (int)floats, MPI_FLOAT, right, tag,
                             mpiOf(comm_), &reqs_[1]));
    pending_ = true;
    return DISTRT_OK;
#else
    (void)send, (void)recv, (void)floats, (void)tag;
    return setError(comm_->ctx, DISTRT_ERROR_UNSUPPORTED,
                    concat(fn_,
                           ": this runtime was built without MPI; ring "
                           "attention over ",
                           comm_->size, " ranks needs it (libopenmpi-dev)"));
#endif
  }

  distrt_status wait(const char *what) {
#ifdef DISTRT_HAVE_MPI
    if (!pending_)
      return DISTRT_OK;
    pending_ = false;
    return mpi::waitUntil(comm_, fn_, what, left_, [&](int &done) {
      return MPI_Testall(2, reqs_, &done, MPI_STATUSES_IGNORE);
    });
#else
    (void)what;
    return DISTRT_OK;
#endif
  }

private:
  distrt_comm *comm_;
  const char *fn_;
#ifdef DISTRT_HAVE_MPI
  MPI_Request reqs_[2];
  int32_t left_ = 0;
  bool pending_ = false;
#endif
};

/// The block rank `rank` of `ranks` holds at step `step`: its own first,
/// then its left neighbour's, and so on.
int32_t blockAt(const RingShape &s, int32_t step) {
  return (s.rank - step % s.ranks + s.ranks) % s.ranks;
}

distrt_status forwardCpu(distrt_comm *comm, const char *fn, const RingShape &s,
                         const float *q, const float *k, const float *v,
                         float *out, float *lse) {
  const int64_t rows = s.batch * s.sq;
  scoresComputed = 0;
  std::vector<double> m(rows, -std::numeric_limits<double>::infinity());
  std::vector<double> l(rows, 0), acc(rows * s.dv, 0);
  std::vector<float> cur(s.kvFloats()), next(s.kvFloats());
  pack(s, k, v, cur.data());
  const std::vector<bool> live = liveBlocks(s, s.bias);
  Transfer ring(comm, fn);
  for (int32_t step = 0; step < s.ranks; ++step) {
    // The next block arrives while this one is computed.
    if (step + 1 < s.ranks)
      DISTRT_TRY(ring.start(cur.data(), next.data(), s.kvFloats(), kKvTag));
    if (live[blockAt(s, step)])
      forwardBlock(s, blockAt(s, step), q, cur.data(), m.data(), l.data(),
                   acc.data());
    DISTRT_TRY(ring.wait("the previous rank's key/value block"));
    std::swap(cur, next);
  }
  for (int64_t row = 0; row < rows; ++row) {
    // A row whose every key the mask drops gets zeros and lse = -inf.
    const double inv = l[row] > 0 ? 1 / l[row] : 0;
    for (int64_t x = 0; x < s.dv; ++x)
      out[row * s.dv + x] = float(acc[row * s.dv + x] * inv);
    lse[row] = float(m[row] + std::log(l[row]));
  }
  return DISTRT_OK;
}

distrt_status backwardCpu(distrt_comm *comm, const char *fn, const RingShape &s,
                          const float *q, const float *k, const float *v,
                          const float *out, const float *lse, const float *dout,
                          float *dq, float *dk, float *dv) {
  const int64_t rows = s.batch * s.sq;
  std::vector<double> delta(rows), dqSum(rows * s.d, 0);
  for (int64_t row = 0; row < rows; ++row) {
    double sum = 0;
    for (int64_t x = 0; x < s.dv; ++x)
      sum += double(dout[row * s.dv + x]) * out[row * s.dv + x];
    delta[row] = sum;
  }
  std::vector<float> cur(s.kvFloats()), next(s.kvFloats());
  std::vector<float> grad(s.kvFloats(), 0), gradNext(s.kvFloats());
  pack(s, k, v, cur.data());
  const std::vector<bool> live = liveBlocks(s, s.bias);
  Transfer kvRing(comm, fn), gradRing(comm, fn);
  for (int32_t step = 0; step < s.ranks; ++step) {
    if (step + 1 < s.ranks)
      DISTRT_TRY(kvRing.start(cur.data(), next.data(), s.kvFloats(), kKvTag));
    if (live[blockAt(s, step)])
      backwardBlock(s, blockAt(s, step), q, cur.data(), lse, dout, delta.data(),
                    dqSum.data(), grad.data());
    // The block's gradient sums follow it; after the last step they are
    // back on their own rank.
    if (s.ranks > 1) {
      DISTRT_TRY(
          gradRing.start(grad.data(), gradNext.data(), s.kvFloats(), kGradTag));
      DISTRT_TRY(gradRing.wait("the previous rank's key/value gradients"));
      std::swap(grad, gradNext);
    }
    DISTRT_TRY(kvRing.wait("the previous rank's key/value block"));
    std::swap(cur, next);
  }
  for (int64_t x = 0; x < rows * s.d; ++x)
    dq[x] = float(dqSum[x]);
  const int64_t kFloats = s.batch * s.skv * s.d;
  std::memcpy(dk, grad.data(), kFloats * sizeof(float));
  std::memcpy(dv, grad.data() + kFloats,
              s.batch * s.skv * s.dv * sizeof(float));
  return DISTRT_OK;
}

} // namespace

std::vector<bool> distrt::liveBlocks(const RingShape &s, const float *bias) {
  std::vector<bool> live((size_t)s.ranks, true);
  if (!bias)
    return live;
  const int64_t pairs = s.biasStride ? s.batch : 1;
  RingShape host = s;
  host.bias = bias;
  for (int32_t block = 0; block < s.ranks; ++block) {
    bool any = false;
    for (int64_t b = 0; b < pairs && !any; ++b)
      for (int64_t i = 0; i < s.sq && !any; ++i)
        for (int64_t j = 0; j < s.skv && !any; ++j)
          any = host.biasAt(b, i, block, j) > kMaskedBias;
    live[(size_t)block] = any;
  }
  return live;
}

int64_t distrt::lastRingScores() { return scoresComputed; }

extern "C" distrt_status
distrt_ring_attention(distrt_comm *comm, const distrt_tensor *q,
                      const distrt_tensor *k, const distrt_tensor *v,
                      const distrt_tensor *mask, float scale, int32_t balanced,
                      const distrt_tensor *out, const distrt_tensor *lse) {
  const char *fn = "distrt_ring_attention";
  RingShape s;
  DISTRT_TRY(checkRing(comm, fn, q, k, v, mask, scale, balanced, out, lse, s));
  auto *o = static_cast<float *>(out->data);
  auto *l = static_cast<float *>(lse->data);
  auto *qp = static_cast<const float *>(q->data);
  auto *kp = static_cast<const float *>(k->data);
  auto *vp = static_cast<const float *>(v->data);
#ifdef DISTRT_HAVE_CUDA
  if (comm->ctx->isCuda())
    return guardCall(comm->ctx, fn, [&] {
      return cuda::ringAttention(comm, s, qp, kp, vp, o, l);
    });
#endif
  return guardCall(comm->ctx, fn,
                   [&] { return forwardCpu(comm, fn, s, qp, kp, vp, o, l); });
}

extern "C" distrt_status distrt_ring_attention_backward(
    distrt_comm *comm, const distrt_tensor *q, const distrt_tensor *k,
    const distrt_tensor *v, const distrt_tensor *mask, float scale,
    int32_t balanced, const distrt_tensor *out, const distrt_tensor *lse,
    const distrt_tensor *dout, const distrt_tensor *dq, const distrt_tensor *dk,
    const distrt_tensor *dv) {
  const char *fn = "distrt_ring_attention_backward";
  RingShape s;
  DISTRT_TRY(checkRing(comm, fn, q, k, v, mask, scale, balanced, out, lse, s));
  Checker c(comm->ctx, fn);
  DISTRT_TRY(c.pointer("dout", dout));
  DISTRT_TRY(c.pointer("dq", dq));
  DISTRT_TRY(c.pointer("dk", dk));
  DISTRT_TRY(c.pointer("dv", dv));
  DISTRT_TRY(c.tensor("dout", dout, DISTRT_F32));
  DISTRT_TRY(c.same("dout", dout, "out", out));
  DISTRT_TRY(c.tensor("dq", dq, DISTRT_F32));
  DISTRT_TRY(c.same("dq", dq, "q", q));
  DISTRT_TRY(c.tensor("dk", dk, DISTRT_F32));
  DISTRT_TRY(c.same("dk", dk, "k", k));
  DISTRT_TRY(c.tensor("dv", dv, DISTRT_F32));
  DISTRT_TRY(c.same("dv", dv, "v", v));
  auto f = [](const distrt_tensor *t) {
    return static_cast<const float *>(t->data);
  };
  auto w = [](const distrt_tensor *t) { return static_cast<float *>(t->data); };
#ifdef DISTRT_HAVE_CUDA
  if (comm->ctx->isCuda())
    return guardCall(comm->ctx, fn, [&] {
      return cuda::ringAttentionBackward(comm, s, f(q), f(k), f(v), f(out),
                                         f(lse), f(dout), w(dq), w(dk), w(dv));
    });
#endif
  return guardCall(comm->ctx, fn, [&] {
    return backwardCpu(comm, fn, s, f(q), f(k), f(v), f(out), f(lse), f(dout),
                       w(dq), w(dk), w(dv));
  });
}
