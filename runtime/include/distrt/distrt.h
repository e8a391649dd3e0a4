/*===- distrt.h - DistOpt kernel runtime C ABI ----------------------*- C -*-===//
 *
 * The stable, C-compatible ABI that generated per-device programs call.
 *
 * Conventions (see docs/runtime-abi.md for the full contract):
 *  - Tensors are dense, row-major, contiguous: {data, dtype, rank, dims}.
 *    `data` lives in the memory of the context's backend (host memory for
 *    the CPU backend, device memory for the CUDA backend).
 *  - Every kernel takes the context first, returns a distrt_status, and
 *    never throws. On failure, distrt_last_error(ctx) says what went wrong,
 *    where (the entry point and argument) and what to do about it.
 *  - Inputs are `const distrt_tensor *`; outputs are also passed as
 *    `const distrt_tensor *` (the descriptor is read-only, the data it points
 *    at is written). Outputs must not alias inputs unless documented.
 *  - Optional arguments are NULL pointers.
 *  - Backward kernels of ops with weights are split into *_bwd_data
 *    (input gradient) and *_bwd_weight (weight gradient) so that zero-bubble
 *    schedules can run them at different times. Weight-gradient kernels take
 *    `accumulate`: 0 overwrites the gradient, 1 adds into it (micro-batch
 *    gradient accumulation).
 *
 *===----------------------------------------------------------------------===*/
#ifndef DISTRT_DISTRT_H
#define DISTRT_DISTRT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Bumped on every incompatible change of this header. */
#define DISTRT_ABI_VERSION 3
/** Highest tensor rank the ABI carries. */
#define DISTRT_MAX_RANK 8

/*===--------------------------- Basic types ----------------------------===*/

typedef enum distrt_status {
  DISTRT_OK = 0,
  DISTRT_ERROR_INVALID_ARGUMENT = 1, /**< null pointer, bad attribute value */
  DISTRT_ERROR_SHAPE_MISMATCH = 2,   /**< shapes that do not fit together */
  DISTRT_ERROR_UNSUPPORTED = 3,      /**< dtype/backend not implemented */
  DISTRT_ERROR_BACKEND = 4,          /**< oneDNN / CUDA library failure */
  DISTRT_ERROR_OUT_OF_MEMORY = 5,
  DISTRT_ERROR_NO_DEVICE = 6, /**< CUDA backend requested, no device */
  DISTRT_ERROR_TIMEOUT = 7,   /**< a peer did not answer in time */
} distrt_status;

typedef enum distrt_dtype {
  DISTRT_F32 = 0,
  DISTRT_F16 = 1,
  DISTRT_BF16 = 2,
  DISTRT_I32 = 3,
  DISTRT_I64 = 4,
  DISTRT_U8 = 5,
} distrt_dtype;

typedef enum distrt_backend {
  DISTRT_BACKEND_CPU = 0,
  DISTRT_BACKEND_CUDA = 1,
} distrt_backend;

typedef struct distrt_tensor {
  void *data;
  distrt_dtype dtype;
  int32_t rank;
  int64_t dims[DISTRT_MAX_RANK];
  /** Element strides per dim; all zero means dense row-major. Only the
   *  entry points documented as taking strided tensors accept others
   *  (distrt_matmul_ex, distrt_conv2d_ex, distrt_pool2d, distrt_unary:
   *  docs/runtime-abi.md); every other one rejects them. */
  int64_t strides[DISTRT_MAX_RANK];
} distrt_tensor;

/** Opaque: engine/stream, library handles, primitive cache, last error. */
typedef struct distrt_context distrt_context;

/** Builds a tensor descriptor (dims beyond `rank` are zeroed). */
static inline distrt_tensor distrt_make_tensor(void *data, distrt_dtype dtype,
                                               int32_t rank,
                                               const int64_t *dims) {
  distrt_tensor t;
  int32_t i;
  t.data = data;
  t.dtype = dtype;
  t.rank = rank;
  for (i = 0; i < DISTRT_MAX_RANK; ++i) {
    t.dims[i] = (i < rank && dims) ? dims[i] : 0;
    t.strides[i] = 0;
  }
  return t;
}

/** A tensor whose dim i is `strides[i]` elements apart in memory. */
static inline distrt_tensor distrt_make_strided_tensor(void *data,
                                                       distrt_dtype dtype,
                                                       int32_t rank,
                                                       const int64_t *dims,
                                                       const int64_t *strides) {
  distrt_tensor t = distrt_make_tensor(data, dtype, rank, dims);
  int32_t i;
  for (i = 0; i < rank && strides; ++i)
    t.strides[i] = strides[i];
  return t;
}

static inline int64_t distrt_numel(const distrt_tensor *t) {
  int64_t n = 1;
  int32_t i;
  for (i = 0; i < t->rank; ++i)
    n *= t->dims[i];
  return n;
}

static inline size_t distrt_dtype_size(distrt_dtype dtype) {
  switch (dtype) {
  case DISTRT_F32:
  case DISTRT_I32:
    return 4;
  case DISTRT_F16:
  case DISTRT_BF16:
    return 2;
  case DISTRT_I64:
    return 8;
  case DISTRT_U8:
    return 1;
  }
  return 0;
}

/*===----------------------- Context and memory -------------------------===*/

int32_t distrt_abi_version(void);
const char *distrt_status_string(distrt_status status);
/** Number of CUDA devices visible (0 when built without CUDA). */
int32_t distrt_cuda_device_count(void);

distrt_status distrt_context_create(distrt_backend backend, int32_t device,
                                    distrt_context **out);
void distrt_context_destroy(distrt_context *ctx);
distrt_backend distrt_context_backend(const distrt_context *ctx);
/** CUDA: run kernels on `stream` (a cudaStream_t). CPU: must be NULL. */
distrt_status distrt_context_set_stream(distrt_context *ctx, void *stream);
/** Waits until every kernel queued on the context has finished. */
distrt_status distrt_synchronize(distrt_context *ctx);
/** Message of the last failure on `ctx`; with NULL, of the calling thread. */
const char *distrt_last_error(const distrt_context *ctx);

typedef enum distrt_copy_kind {
  DISTRT_COPY_HOST_TO_DEVICE = 0,
  DISTRT_COPY_DEVICE_TO_HOST = 1,
  DISTRT_COPY_DEVICE_TO_DEVICE = 2,
} distrt_copy_kind;

/** Allocates backend memory (64-byte aligned host memory on CPU). */
distrt_status distrt_alloc(distrt_context *ctx, size_t bytes, void **out);
distrt_status distrt_free(distrt_context *ctx, void *ptr);
distrt_status distrt_copy(distrt_context *ctx, void *dst, const void *src,
                          size_t bytes, distrt_copy_kind kind);

/*===----------------------------- Matmul -------------------------------===*/

/** C = alpha * op(A) op(B) + bias + beta * C.
 *  A: [batch..., M, K] ([batch..., K, M] when trans_a), B: [batch..., K, N]
 *  ([batch..., N, K] when trans_b); either operand may instead be rank 2
 *  (shared by every batch). C: [batch..., M, N], bias: [N] or NULL.
 *  All operands share one dtype: F32, F16 or BF16 (f32 accumulation). */
typedef struct distrt_matmul_attr {
  int32_t trans_a;
  int32_t trans_b;
  float alpha;
  float beta;
} distrt_matmul_attr;

distrt_status distrt_matmul(distrt_context *ctx, const distrt_tensor *a,
                            const distrt_tensor *b, const distrt_tensor *bias,
                            const distrt_tensor *c,
                            const distrt_matmul_attr *attr);
/** dA = alpha * dC op(B)^T (shaped like A, honouring trans_a; summed over
 *  the batch when A is rank 2 and B is batched). */
distrt_status distrt_matmul_bwd_data(distrt_context *ctx,
                                     const distrt_tensor *dc,
                                     const distrt_tensor *b,
                                     const distrt_tensor *da,
                                     const distrt_matmul_attr *attr);
/** dB = alpha * op(A)^T dC (shaped like B; summed over the batch when B is
 *  rank 2 and A is batched). */
distrt_status distrt_matmul_bwd_weight(distrt_context *ctx,
                                       const distrt_tensor *a,
                                       const distrt_tensor *dc,
                                       const distrt_tensor *db,
                                       const distrt_matmul_attr *attr,
                                       int32_t accumulate);
/** dBias[N] = sum of dC over every dimension but the last. */
distrt_status distrt_matmul_bwd_bias(distrt_context *ctx,
                                     const distrt_tensor *dc,
                                     const distrt_tensor *dbias,
                                     int32_t accumulate);

/*===----------------------- Fused epilogues (CPU) ----------------------===*/

/** Activations a post-op applies to every element of a result. */
typedef enum distrt_eltwise_alg {
  DISTRT_ELTWISE_RELU = 0,      /**< x > 0 ? x : alpha * x */
  DISTRT_ELTWISE_GELU = 1,      /**< exact (erf) GELU */
  DISTRT_ELTWISE_GELU_TANH = 2, /**< tanh approximation */
  DISTRT_ELTWISE_TANH = 3,
  DISTRT_ELTWISE_SIGMOID = 4,
  DISTRT_ELTWISE_SILU = 5, /**< x * sigmoid(x) */
  DISTRT_ELTWISE_EXP = 6,
  DISTRT_ELTWISE_LOG = 7,
  DISTRT_ELTWISE_SQRT = 8,
  DISTRT_ELTWISE_ABS = 9,
  DISTRT_ELTWISE_LINEAR = 10,   /**< alpha * x + beta */
  DISTRT_ELTWISE_CLIP = 11,     /**< min(max(x, alpha), beta) */
  DISTRT_ELTWISE_HARDSWISH = 12, /**< x * min(max(x + 3, 0), 6) / 6 */
  DISTRT_ELTWISE_ELU = 13,      /**< x > 0 ? x : alpha * (exp(x) - 1) */
  DISTRT_ELTWISE_SOFTPLUS = 14, /**< log(1 + exp(x)) */
  DISTRT_ELTWISE_COUNT_ = 15
} distrt_eltwise_alg;

typedef enum distrt_post_op_kind {
  DISTRT_POST_ELTWISE = 0, /**< y = alg(y; alpha, beta) */
  DISTRT_POST_BINARY = 1,  /**< y = y op src1 (a distrt_binary_op: add, sub,
                                mul, div, max or min); src1 is a scalar, a
                                per-channel vector or a tensor of y's shape,
                                its dims aligned to y's from the right */
  DISTRT_POST_SUM = 2,     /**< y = y + what the output buffer held before
                                the call */
} distrt_post_op_kind;

typedef struct distrt_post_op {
  int32_t kind; /**< distrt_post_op_kind */
  int32_t alg;  /**< distrt_eltwise_alg or distrt_binary_op */
  float alpha, beta;
  distrt_tensor src1; /**< DISTRT_POST_BINARY: the second operand */
} distrt_post_op;

#define DISTRT_MAX_POST_OPS 8

/** What a compute call does besides its op: elementwise post-ops applied,
 *  in order, to the result before it is stored (oneDNN post-ops: one pass
 *  over memory), and whether the weights operand is constant while the
 *  context lives (then the runtime keeps its own copy in the kernel's
 *  preferred layout, made on the first call). */
typedef struct distrt_compute_ex {
  int32_t count;
  distrt_post_op post[DISTRT_MAX_POST_OPS];
  int32_t constant_weights;
} distrt_compute_ex;

/** distrt_matmul, then `ex`'s post-ops (F32 only, CPU only with post-ops).
 *  a, b and c may be strided (a transposed or sliced view read in place):
 *  each matrix needs a unit stride in one of its last two dims; batch dims
 *  take any strides. bias is dense. */
distrt_status distrt_matmul_ex(distrt_context *ctx, const distrt_tensor *a,
                               const distrt_tensor *b,
                               const distrt_tensor *bias,
                               const distrt_tensor *c,
                               const distrt_matmul_attr *attr,
                               const distrt_compute_ex *ex);

/*===------------------------ Convolution, pooling ----------------------===*/

/** NCHW data, OIHW weights ([O, C/groups, KH, KW]); dilation 1 = dense. */
typedef struct distrt_conv2d_attr {
  int32_t stride[2];
  int32_t pad_begin[2];
  int32_t pad_end[2];
  int32_t dilation[2];
  int32_t groups;
} distrt_conv2d_attr;

distrt_status distrt_conv2d(distrt_context *ctx, const distrt_tensor *x,
                            const distrt_tensor *w, const distrt_tensor *bias,
                            const distrt_tensor *y,
                            const distrt_conv2d_attr *attr);
distrt_status distrt_conv2d_bwd_data(distrt_context *ctx,
                                     const distrt_tensor *dy,
                                     const distrt_tensor *w,
                                     const distrt_tensor *dx,
                                     const distrt_conv2d_attr *attr);
/** dW (and dBias when not NULL) from x and dy. */
distrt_status distrt_conv2d_bwd_weight(distrt_context *ctx,
                                       const distrt_tensor *x,
                                       const distrt_tensor *dy,
                                       const distrt_tensor *dw,
                                       const distrt_tensor *dbias,
                                       const distrt_conv2d_attr *attr,
                                       int32_t accumulate);

typedef enum distrt_pool_kind {
  DISTRT_POOL_MAX = 0,
  DISTRT_POOL_AVG_INCLUDE_PAD = 1,
  DISTRT_POOL_AVG_EXCLUDE_PAD = 2,
} distrt_pool_kind;

typedef struct distrt_pool2d_attr {
  distrt_pool_kind kind;
  int32_t kernel[2];
  int32_t stride[2];
  int32_t pad_begin[2];
  int32_t pad_end[2];
} distrt_pool2d_attr;

distrt_status distrt_pool2d(distrt_context *ctx, const distrt_tensor *x,
                            const distrt_tensor *y,
                            const distrt_pool2d_attr *attr);
/** distrt_conv2d, then `ex`'s post-ops (CPU only with post-ops). x and y
 *  may be channels-last (strides [H*W*C, 1, W*C, C]) as well as NCHW. */
distrt_status distrt_conv2d_ex(distrt_context *ctx, const distrt_tensor *x,
                               const distrt_tensor *w,
                               const distrt_tensor *bias,
                               const distrt_tensor *y,
                               const distrt_conv2d_attr *attr,
                               const distrt_compute_ex *ex);

/** Needs the forward input x (max pooling recomputes its argmax). */
distrt_status distrt_pool2d_bwd(distrt_context *ctx, const distrt_tensor *x,
                                const distrt_tensor *dy,
                                const distrt_tensor *dx,
                                const distrt_pool2d_attr *attr);

/*===--------------------------- Normalization --------------------------===*/

/** Batch norm over x: [N, C, spatial...] (rank 2-5); per-channel scale,
 *  shift, statistics [C]. Training computes batch statistics into
 *  save_mean/save_var (biased variance) and, when given, updates
 *  running = (1 - momentum) * running + momentum * batch (unbiased var). */
distrt_status distrt_batchnorm_fwd_training(
    distrt_context *ctx, const distrt_tensor *x, const distrt_tensor *scale,
    const distrt_tensor *shift, const distrt_tensor *y,
    const distrt_tensor *save_mean, const distrt_tensor *save_var,
    const distrt_tensor *running_mean, const distrt_tensor *running_var,
    float epsilon, float momentum);
distrt_status distrt_batchnorm_fwd_inference(
    distrt_context *ctx, const distrt_tensor *x, const distrt_tensor *scale,
    const distrt_tensor *shift, const distrt_tensor *mean,
    const distrt_tensor *var, const distrt_tensor *y, float epsilon);
distrt_status distrt_batchnorm_bwd_data(
    distrt_context *ctx, const distrt_tensor *x, const distrt_tensor *dy,
    const distrt_tensor *scale, const distrt_tensor *save_mean,
    const distrt_tensor *save_var, const distrt_tensor *dx, float epsilon);
distrt_status distrt_batchnorm_bwd_weight(
    distrt_context *ctx, const distrt_tensor *x, const distrt_tensor *dy,
    const distrt_tensor *save_mean, const distrt_tensor *save_var,
    const distrt_tensor *dscale, const distrt_tensor *dshift, float epsilon,
    int32_t accumulate);

/** Layer norm over the last dimension D of x: [rows..., D]; scale/shift
 *  [D] or NULL; mean/var [rows...] outputs (NULL for inference). */
distrt_status distrt_layernorm_fwd(distrt_context *ctx, const distrt_tensor *x,
                                   const distrt_tensor *scale,
                                   const distrt_tensor *shift,
                                   const distrt_tensor *y,
                                   const distrt_tensor *mean,
                                   const distrt_tensor *var, float epsilon);
distrt_status distrt_layernorm_bwd_data(
    distrt_context *ctx, const distrt_tensor *x, const distrt_tensor *dy,
    const distrt_tensor *scale, const distrt_tensor *mean,
    const distrt_tensor *var, const distrt_tensor *dx, float epsilon);
/** dscale (and dshift when not NULL). */
distrt_status distrt_layernorm_bwd_weight(
    distrt_context *ctx, const distrt_tensor *x, const distrt_tensor *dy,
    const distrt_tensor *mean, const distrt_tensor *var,
    const distrt_tensor *dscale, const distrt_tensor *dshift, float epsilon,
    int32_t accumulate);

/** RMS norm over the last dim: y = x / sqrt(mean(x^2) + eps) * scale. */
distrt_status distrt_rmsnorm_fwd(distrt_context *ctx, const distrt_tensor *x,
                                 const distrt_tensor *scale,
                                 const distrt_tensor *y, float epsilon);
distrt_status distrt_rmsnorm_bwd_data(distrt_context *ctx,
                                      const distrt_tensor *x,
                                      const distrt_tensor *dy,
                                      const distrt_tensor *scale,
                                      const distrt_tensor *dx, float epsilon);
distrt_status distrt_rmsnorm_bwd_weight(distrt_context *ctx,
                                        const distrt_tensor *x,
                                        const distrt_tensor *dy,
                                        const distrt_tensor *dscale,
                                        float epsilon, int32_t accumulate);

/** Softmax (log_softmax when `log` != 0) along `axis` (negative counts from
 *  the back). The backward takes the forward *output* y. */
distrt_status distrt_softmax(distrt_context *ctx, const distrt_tensor *x,
                             const distrt_tensor *y, int32_t axis,
                             int32_t log);
distrt_status distrt_softmax_bwd(distrt_context *ctx, const distrt_tensor *y,
                                 const distrt_tensor *dy,
                                 const distrt_tensor *dx, int32_t axis,
                                 int32_t log);

/*===--------------------------- Elementwise ----------------------------===*/

typedef enum distrt_unary_op {
  DISTRT_UNARY_RELU = 0,
  DISTRT_UNARY_GELU = 1,      /**< exact (erf) GELU */
  DISTRT_UNARY_GELU_TANH = 2, /**< tanh approximation */
  DISTRT_UNARY_TANH = 3,
  DISTRT_UNARY_SIGMOID = 4,
  DISTRT_UNARY_SILU = 5,
  DISTRT_UNARY_EXP = 6,
  DISTRT_UNARY_LOG = 7,
  DISTRT_UNARY_SQRT = 8,
  DISTRT_UNARY_NEG = 9,
  DISTRT_UNARY_ABS = 10,
  DISTRT_UNARY_SQUARE = 11,
  DISTRT_UNARY_RECIPROCAL = 12,
  DISTRT_UNARY_SOFTPLUS = 13,
  DISTRT_UNARY_COUNT_ = 14
} distrt_unary_op;

typedef enum distrt_binary_op {
  DISTRT_BINARY_ADD = 0,
  DISTRT_BINARY_SUB = 1,
  DISTRT_BINARY_MUL = 2,
  DISTRT_BINARY_DIV = 3,
  DISTRT_BINARY_MAX = 4,
  DISTRT_BINARY_MIN = 5,
  DISTRT_BINARY_POW = 6,
  DISTRT_BINARY_COUNT_ = 7
} distrt_binary_op;

distrt_status distrt_unary(distrt_context *ctx, distrt_unary_op op,
                           const distrt_tensor *x, const distrt_tensor *y);
/** dx = dy * op'(x). */
distrt_status distrt_unary_bwd(distrt_context *ctx, distrt_unary_op op,
                               const distrt_tensor *x, const distrt_tensor *dy,
                               const distrt_tensor *dx);
/** y = a op b with NumPy broadcasting (y has the broadcast shape). */
distrt_status distrt_binary(distrt_context *ctx, distrt_binary_op op,
                            const distrt_tensor *a, const distrt_tensor *b,
                            const distrt_tensor *y);
/** Gradients of both operands (either may be NULL), each reduced back to
 *  its operand's shape. */
distrt_status distrt_binary_bwd(distrt_context *ctx, distrt_binary_op op,
                                const distrt_tensor *a, const distrt_tensor *b,
                                const distrt_tensor *dy,
                                const distrt_tensor *da,
                                const distrt_tensor *db);
/** y = sum of x over the dimensions NumPy broadcasting expanded (y's shape
 *  broadcasts to x's): the gradient of a broadcast. */
distrt_status distrt_reduce_to_shape(distrt_context *ctx,
                                     const distrt_tensor *x,
                                     const distrt_tensor *y);

/** Fused elementwise chain: a register program evaluated in one pass over
 *  memory. Registers 0..num_inputs-1 hold the inputs (NumPy-broadcast to the
 *  output shape); every instruction writes `dst`. */
typedef enum distrt_fused_opcode {
  DISTRT_FUSED_UNARY = 0,  /**< dst = unary[op](src0) */
  DISTRT_FUSED_BINARY = 1, /**< dst = binary[op](src0, src1) */
  DISTRT_FUSED_CONST = 2,  /**< dst = imm */
  DISTRT_FUSED_FMA = 3,    /**< dst = src0 * src1 + src2 */
} distrt_fused_opcode;

typedef struct distrt_fused_instr {
  uint8_t opcode; /**< distrt_fused_opcode */
  uint8_t op;     /**< distrt_unary_op or distrt_binary_op */
  uint8_t dst;
  uint8_t src0;
  uint8_t src1;
  uint8_t src2;
  float imm;
} distrt_fused_instr;

#define DISTRT_FUSED_MAX_REGS 16

typedef struct distrt_fused_program {
  int32_t num_instrs;
  const distrt_fused_instr *instrs;
  int32_t num_inputs;
  const distrt_tensor *const *inputs;
  int32_t num_outputs;
  const distrt_tensor *const *outputs; /**< all of the same shape */
  const uint8_t *output_regs;          /**< register stored to each output */
} distrt_fused_program;

distrt_status distrt_fused_elementwise(distrt_context *ctx,
                                       const distrt_fused_program *program);

/*===---------------------- Reductions, data movement -------------------===*/

typedef enum distrt_reduce_op {
  DISTRT_REDUCE_SUM = 0,
  DISTRT_REDUCE_MEAN = 1,
  DISTRT_REDUCE_MAX = 2,
  DISTRT_REDUCE_MIN = 3,
} distrt_reduce_op;

/** y has x's rank; y.dims[i] is 1 on reduced axes and x.dims[i] elsewhere
 *  (keep-dims form: a squeezed result is the same buffer). */
distrt_status distrt_reduce(distrt_context *ctx, distrt_reduce_op op,
                            const distrt_tensor *x, const distrt_tensor *y);
/** dx from dy (max/min: to every position equal to the extreme). */
distrt_status distrt_reduce_bwd(distrt_context *ctx, distrt_reduce_op op,
                                const distrt_tensor *x, const distrt_tensor *y,
                                const distrt_tensor *dy,
                                const distrt_tensor *dx);
/** y.dims[i] = x.dims[perm[i]]; the gradient is the inverse permutation. */
distrt_status distrt_transpose(distrt_context *ctx, const distrt_tensor *x,
                               const distrt_tensor *y, const int32_t *perm);

/** y[..., :] = table[indices[...], :]; table [V, D], indices I32 or I64. */
distrt_status distrt_embedding(distrt_context *ctx, const distrt_tensor *table,
                               const distrt_tensor *indices,
                               const distrt_tensor *y);
/** dtable[indices[i], :] += dy[i, :] (scatter-add). */
distrt_status distrt_embedding_bwd(distrt_context *ctx,
                                   const distrt_tensor *indices,
                                   const distrt_tensor *dy,
                                   const distrt_tensor *dtable,
                                   int32_t accumulate);

/*===------------------------------ Losses ------------------------------===*/

/** How a loss reduces its rows: the mean over the rows that count (labels
 *  not equal to the ignore index), their sum, or none (a loss per row, 0
 *  for an ignored row). */
typedef enum distrt_loss_reduction {
  DISTRT_LOSS_MEAN = 0,
  DISTRT_LOSS_SUM = 1,
  DISTRT_LOSS_NONE = 2,
} distrt_loss_reduction;

/** Per row i whose label != ignore_index, -log_softmax(logits)[i, label],
 *  reduced as \p reduction says: loss is one element (mean, sum) or [N]
 *  (none); logits [N, C], labels [N] (I32/I64). */
distrt_status distrt_softmax_cross_entropy(distrt_context *ctx,
                                           const distrt_tensor *logits,
                                           const distrt_tensor *labels,
                                           const distrt_tensor *loss,
                                           int64_t ignore_index,
                                           distrt_loss_reduction reduction);
/** dlogits[i] = g_i * (softmax(logits[i]) - onehot(labels[i])), g_i =
 *  dloss / count (mean), dloss (sum) or dloss[i] (none); 0 for an ignored
 *  row. */
distrt_status distrt_softmax_cross_entropy_bwd(distrt_context *ctx,
                                               const distrt_tensor *logits,
                                               const distrt_tensor *labels,
                                               const distrt_tensor *dloss,
                                               const distrt_tensor *dlogits,
                                               int64_t ignore_index,
                                               distrt_loss_reduction reduction);
/** loss (one element) = mean((x - target)^2). */
distrt_status distrt_mse_loss(distrt_context *ctx, const distrt_tensor *x,
                              const distrt_tensor *target,
                              const distrt_tensor *loss);
distrt_status distrt_mse_loss_bwd(distrt_context *ctx, const distrt_tensor *x,
                                  const distrt_tensor *target,
                                  const distrt_tensor *dloss,
                                  const distrt_tensor *dx);

/** Dropout with a counter-based hash of (seed, offset + i): the same mask on
 *  every backend and run; the backward regenerates it. mask (U8) optional. */
distrt_status distrt_dropout(distrt_context *ctx, const distrt_tensor *x,
                             const distrt_tensor *y, const distrt_tensor *mask,
                             float p, uint64_t seed, uint64_t offset);
distrt_status distrt_dropout_bwd(distrt_context *ctx, const distrt_tensor *dy,
                                 const distrt_tensor *dx, float p,
                                 uint64_t seed, uint64_t offset);

/*===--------------------------- Optimizers -----------------------------===*/

/** PyTorch semantics. momentum_buf may be NULL only when momentum == 0. */
typedef struct distrt_sgd_attr {
  float lr;
  float momentum;
  float dampening;
  float weight_decay;
  int32_t nesterov;
} distrt_sgd_attr;

typedef struct distrt_adam_attr {
  float lr;
  float beta1;
  float beta2;
  float eps;
  float weight_decay;
} distrt_adam_attr;

/** `step` counts from 1 (first update). */
distrt_status distrt_sgd_step(distrt_context *ctx, const distrt_tensor *param,
                              const distrt_tensor *grad,
                              const distrt_tensor *momentum_buf,
                              const distrt_sgd_attr *attr, int64_t step);
/** Adam: weight decay as L2 added to the gradient. */
distrt_status distrt_adam_step(distrt_context *ctx, const distrt_tensor *param,
                               const distrt_tensor *grad,
                               const distrt_tensor *exp_avg,
                               const distrt_tensor *exp_avg_sq,
                               const distrt_adam_attr *attr, int64_t step);
/** AdamW: decoupled weight decay (param *= 1 - lr * weight_decay). */
distrt_status distrt_adamw_step(distrt_context *ctx, const distrt_tensor *param,
                                const distrt_tensor *grad,
                                const distrt_tensor *exp_avg,
                                const distrt_tensor *exp_avg_sq,
                                const distrt_adam_attr *attr, int64_t step);

/*===---------------- Accumulation and mixed precision ------------------===*/

distrt_status distrt_fill(distrt_context *ctx, const distrt_tensor *x,
                          float value);
/** acc += scale * x (gradient accumulation; F32 acc, F32/F16/BF16 x). */
distrt_status distrt_accumulate(distrt_context *ctx, const distrt_tensor *acc,
                                const distrt_tensor *x, float scale);
/** y = cast(x) between F32, F16 and BF16 (round to nearest even). */
distrt_status distrt_cast(distrt_context *ctx, const distrt_tensor *x,
                          const distrt_tensor *y);
/** grad *= inv_scale in place; sets found_inf (I32, one element) to 1 when
 *  any element is inf or NaN (never clears it: zero it once per step). */
distrt_status distrt_unscale_check(distrt_context *ctx,
                                   const distrt_tensor *grad, float inv_scale,
                                   const distrt_tensor *found_inf);

/** Dynamic loss scaling (host-side state). */
typedef struct distrt_loss_scaler {
  float scale;
  float growth_factor;   /**< e.g. 2 */
  float backoff_factor;  /**< e.g. 0.5 */
  int32_t growth_interval; /**< good steps before growing, e.g. 2000 */
  int32_t good_steps;
} distrt_loss_scaler;

distrt_loss_scaler distrt_loss_scaler_init(float initial_scale);
/** Updates the scale after a step; returns 1 when the optimizer step should
 *  be applied (no overflow), 0 when it must be skipped. */
int32_t distrt_loss_scaler_update(distrt_loss_scaler *scaler,
                                  int32_t found_inf);

#ifdef __cplusplus
} /* extern "C" */
#endif

/* Communicators and collectives (data-parallel training). */
#include "distrt/distrt_comm.h"

#endif /* DISTRT_DISTRT_H */
