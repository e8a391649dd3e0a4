//===- Context.cpp - Contexts, memory, errors, argument checks --*- C++ -*-===//
//
// The backend-neutral part of the ABI: creating contexts, allocating and
// copying memory, recording errors, and the argument checker every entry
// point runs before it dispatches.
//
//===----------------------------------------------------------------------===//
#include "Internal.h"
#include "cpu/CpuState.h"
#ifdef DISTRT_HAVE_CUDA
#include "cuda/CudaApi.h"
#endif

#include <cstdlib>
#include <cstring>
#include <new>

using namespace distrt;

namespace {
thread_local std::string threadLastError;
/// The innermost ErrorCapture of this thread, if any.
thread_local std::string *threadErrorSink = nullptr;
} // namespace

distrt_status distrt::setError(distrt_context *ctx, distrt_status status,
                               const std::string &message) {
  threadLastError = message;
  if (threadErrorSink)
    *threadErrorSink = message;
  else if (ctx)
    ctx->lastError = message;
  return status;
}

distrt::ErrorCapture::ErrorCapture(std::string &sink)
    : previous_(threadErrorSink) {
  threadErrorSink = &sink;
}

distrt::ErrorCapture::~ErrorCapture() { threadErrorSink = previous_; }

std::string distrt::shapeString(const std::vector<int64_t> &dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

std::string distrt::shapeString(const distrt_tensor &t) {
  if (t.rank < 0 || t.rank > DISTRT_MAX_RANK)
    return "<rank " + std::to_string(t.rank) + ">";
  return shapeString(dimsOf(t));
}

const char *distrt::dtypeName(distrt_dtype dtype) {
  switch (dtype) {
  case DISTRT_F32:
    return "f32";
  case DISTRT_F16:
    return "f16";
  case DISTRT_BF16:
    return "bf16";
  case DISTRT_I32:
    return "i32";
  case DISTRT_I64:
    return "i64";
  case DISTRT_U8:
    return "u8";
  }
  return "<unknown dtype>";
}

bool distrt::broadcastDims(const distrt_tensor &a, const distrt_tensor &b,
                           std::vector<int64_t> &out) {
  int rank = a.rank > b.rank ? a.rank : b.rank;
  out.assign(rank, 1);
  for (int i = 0; i < rank; ++i) {
    int ia = a.rank - rank + i, ib = b.rank - rank + i;
    int64_t da = ia >= 0 ? a.dims[ia] : 1, db = ib >= 0 ? b.dims[ib] : 1;
    if (da != db && da != 1 && db != 1)
      return false;
    out[i] = da == 1 ? db : da;
  }
  return true;
}

bool distrt::broadcastsTo(const distrt_tensor &in,
                          const std::vector<int64_t> &outDims) {
  int rank = static_cast<int>(outDims.size());
  if (in.rank > rank)
    return false;
  for (int i = 0; i < in.rank; ++i) {
    int64_t d = in.dims[i], o = outDims[rank - in.rank + i];
    if (d != o && d != 1)
      return false;
  }
  return true;
}

std::vector<int64_t>
distrt::broadcastStrides(const distrt_tensor &in,
                         const std::vector<int64_t> &outDims) {
  int rank = static_cast<int>(outDims.size());
  std::vector<int64_t> strides(rank, 0);
  int64_t s = 1;
  for (int i = in.rank - 1; i >= 0; --i) {
    int o = rank - in.rank + i;
    strides[o] = in.dims[i] == 1 ? 0 : s;
    s *= in.dims[i];
  }
  return strides;
}

//===----------------------------------------------------------------------===//
// Checker
//===----------------------------------------------------------------------===//

distrt_status Checker::context() {
  if (!ctx_)
    return setError(nullptr, DISTRT_ERROR_INVALID_ARGUMENT,
                    concat(fn_, ": context is NULL; create one with "
                                "distrt_context_create()"));
  return DISTRT_OK;
}

distrt_status Checker::pointer(const char *name, const void *p) {
  if (!p)
    return fail(DISTRT_ERROR_INVALID_ARGUMENT, "argument '", name,
                "' is NULL; pass a valid pointer");
  return DISTRT_OK;
}

std::vector<int64_t> distrt::stridesOf(const distrt_tensor &t) {
  std::vector<int64_t> s((size_t)t.rank, 1);
  bool any = false;
  for (int i = 0; i < t.rank; ++i)
    any |= t.strides[i] != 0;
  if (any) {
    for (int i = 0; i < t.rank; ++i)
      s[(size_t)i] = t.strides[i];
    return s;
  }
  for (int i = t.rank - 2; i >= 0; --i)
    s[(size_t)i] = s[(size_t)i + 1] * t.dims[i + 1];
  return s;
}

bool distrt::isDense(const distrt_tensor &t) {
  std::vector<int64_t> s = stridesOf(t);
  int64_t want = 1;
  for (int i = t.rank - 1; i >= 0; --i) {
    if (t.dims[i] != 1 && s[(size_t)i] != want)
      return false;
    want *= t.dims[i];
  }
  return true;
}

static distrt_status checkLayout(Checker &c, const char *name,
                                 const distrt_tensor *t) {
  if (!t)
    return c.fail(DISTRT_ERROR_INVALID_ARGUMENT, "tensor '", name,
                  "' is NULL; pass a tensor descriptor");
  if (t->rank < 0 || t->rank > DISTRT_MAX_RANK)
    return c.fail(DISTRT_ERROR_INVALID_ARGUMENT, "tensor '", name,
                  "' has rank ", t->rank, "; the ABI carries ranks 0..",
                  DISTRT_MAX_RANK);
  for (int i = 0; i < t->rank; ++i)
    if (t->dims[i] < 0)
      return c.fail(DISTRT_ERROR_INVALID_ARGUMENT, "tensor '", name,
                    "' has negative dimension ", i, " in ", shapeString(*t));
  if (!t->data && distrt_numel(t) != 0)
    return c.fail(DISTRT_ERROR_INVALID_ARGUMENT, "tensor '", name,
                  "' has a NULL data pointer but ", distrt_numel(t),
                  " elements; allocate it (distrt_alloc) first");
  if (!c.stridedAllowed() && !isDense(*t))
    return c.fail(DISTRT_ERROR_UNSUPPORTED, "tensor '", name, "' ",
                  shapeString(*t), " is strided (",
                  shapeString(stridesOf(*t)),
                  "); this entry point takes dense row-major tensors (copy "
                  "it first)");
  return DISTRT_OK;
}

distrt_status Checker::tensor(const char *name, const distrt_tensor *t,
                              distrt_dtype dtype) {
  DISTRT_TRY(checkLayout(*this, name, t));
  if (t->dtype != dtype)
    return fail(DISTRT_ERROR_UNSUPPORTED, "tensor '", name, "' has dtype ",
                dtypeName(t->dtype), "; this kernel takes ", dtypeName(dtype),
                " (cast it with distrt_cast)");
  return DISTRT_OK;
}

distrt_status Checker::floatTensor(const char *name, const distrt_tensor *t) {
  DISTRT_TRY(checkLayout(*this, name, t));
  if (t->dtype != DISTRT_F32 && t->dtype != DISTRT_F16 &&
      t->dtype != DISTRT_BF16)
    return fail(DISTRT_ERROR_UNSUPPORTED, "tensor '", name, "' has dtype ",
                dtypeName(t->dtype), "; expected f32, f16 or bf16");
  return DISTRT_OK;
}

distrt_status Checker::indexTensor(const char *name, const distrt_tensor *t) {
  DISTRT_TRY(checkLayout(*this, name, t));
  if (t->dtype != DISTRT_I32 && t->dtype != DISTRT_I64)
    return fail(DISTRT_ERROR_UNSUPPORTED, "tensor '", name, "' has dtype ",
                dtypeName(t->dtype), "; indices must be i32 or i64");
  return DISTRT_OK;
}

distrt_status Checker::same(const char *nameA, const distrt_tensor *a,
                            const char *nameB, const distrt_tensor *b) {
  if (!sameShape(*a, *b))
    return fail(DISTRT_ERROR_SHAPE_MISMATCH, "'", nameA, "' has shape ",
                shapeString(*a), " but '", nameB, "' has shape ",
                shapeString(*b), "; they must be equal");
  return DISTRT_OK;
}

distrt_status Checker::shape(const char *name, const distrt_tensor *t,
                             const std::vector<int64_t> &dims) {
  if (dimsOf(*t) != dims)
    return fail(DISTRT_ERROR_SHAPE_MISMATCH, "'", name, "' has shape ",
                shapeString(*t), "; expected ", shapeString(dims));
  return DISTRT_OK;
}

distrt_status Checker::minRank(const char *name, const distrt_tensor *t,
                               int32_t rank) {
  if (t->rank < rank)
    return fail(DISTRT_ERROR_SHAPE_MISMATCH, "'", name, "' has rank ",
                t->rank, " (shape ", shapeString(*t), "); expected rank >= ",
                rank);
  return DISTRT_OK;
}

distrt_status Checker::scalar(const char *name, const distrt_tensor *t) {
  if (distrt_numel(t) != 1)
    return fail(DISTRT_ERROR_SHAPE_MISMATCH, "'", name, "' has shape ",
                shapeString(*t), "; expected exactly one element");
  return DISTRT_OK;
}

distrt_status distrt::guardException(distrt_context *ctx, const char *fn) {
  try {
    throw;
  } catch (const dnnl::error &e) {
    return setError(ctx, DISTRT_ERROR_BACKEND,
                    concat(fn, ": oneDNN failed: ", e.what(), " (dnnl status ",
                           static_cast<int>(e.status),
                           "); check shapes and attributes"));
  } catch (const std::bad_alloc &) {
    return setError(ctx, DISTRT_ERROR_OUT_OF_MEMORY,
                    concat(fn, ": out of host memory; reduce the batch size"));
  } catch (const std::exception &e) {
    return setError(ctx, DISTRT_ERROR_BACKEND,
                    concat(fn, ": internal error: ", e.what()));
  } catch (...) {
    return setError(ctx, DISTRT_ERROR_BACKEND,
                    concat(fn, ": unknown internal error"));
  }
}

//===----------------------------------------------------------------------===//
// Context and memory entry points
//===----------------------------------------------------------------------===//

int64_t distrt::cpu::replayedCalls(const distrt_context *ctx) {
  return ctx && ctx->cpu ? ctx->cpu->replayed : 0;
}

int64_t distrt::cpu::skinnyCalls(const distrt_context *ctx) {
  return ctx && ctx->cpu ? ctx->cpu->skinnyCalls : 0;
}

int64_t distrt::cpu::vectorTails(const distrt_context *ctx) {
  return ctx && ctx->cpu ? ctx->cpu->vectorTails : 0;
}

extern "C" {

int32_t distrt_abi_version(void) { return DISTRT_ABI_VERSION; }

const char *distrt_status_string(distrt_status status) {
  switch (status) {
  case DISTRT_OK:
    return "ok";
  case DISTRT_ERROR_INVALID_ARGUMENT:
    return "invalid argument";
  case DISTRT_ERROR_SHAPE_MISMATCH:
    return "shape mismatch";
  case DISTRT_ERROR_UNSUPPORTED:
    return "unsupported";
  case DISTRT_ERROR_BACKEND:
    return "backend failure";
  case DISTRT_ERROR_OUT_OF_MEMORY:
    return "out of memory";
  case DISTRT_ERROR_NO_DEVICE:
    return "no device";
  case DISTRT_ERROR_TIMEOUT:
    return "timeout";
  }
  return "unknown status";
}

int32_t distrt_cuda_device_count(void) {
#ifdef DISTRT_HAVE_CUDA
  return cuda::deviceCount();
#else
  return 0;
#endif
}

distrt_status distrt_context_create(distrt_backend backend, int32_t device,
                                    distrt_context **out) {
  const char *fn = "distrt_context_create";
  if (!out)
    return setError(nullptr, DISTRT_ERROR_INVALID_ARGUMENT,
                    concat(fn, ": 'out' is NULL; pass the address of a "
                               "distrt_context pointer"));
  *out = nullptr;
  auto *ctx = new (std::nothrow) distrt_context();
  if (!ctx)
    return setError(nullptr, DISTRT_ERROR_OUT_OF_MEMORY,
                    concat(fn, ": out of host memory"));
  ctx->backend = backend;
  ctx->device = device;
  distrt_status st = DISTRT_OK;
  if (backend == DISTRT_BACKEND_CPU) {
    if (device != 0)
      st = setError(nullptr, DISTRT_ERROR_INVALID_ARGUMENT,
                    concat(fn, ": CPU device index must be 0, got ", device));
    else
      st = guardCall(nullptr, fn, [&] {
        ctx->cpu = new cpu::CpuState();
        return DISTRT_OK;
      });
  } else if (backend == DISTRT_BACKEND_CUDA) {
#ifdef DISTRT_HAVE_CUDA
    st = cuda::createState(ctx, device);
    if (st != DISTRT_OK)
      setError(nullptr, st, ctx->lastError);
#else
    st = setError(nullptr, DISTRT_ERROR_UNSUPPORTED,
                  concat(fn, ": this runtime was built without CUDA; "
                             "reconfigure with -DDIST_ENABLE_CUDA=ON and "
                             "nvcc on PATH, or use DISTRT_BACKEND_CPU"));
#endif
  } else {
    st = setError(nullptr, DISTRT_ERROR_INVALID_ARGUMENT,
                  concat(fn, ": unknown backend ", static_cast<int>(backend),
                         "; use DISTRT_BACKEND_CPU or DISTRT_BACKEND_CUDA"));
  }
  if (st != DISTRT_OK) {
    distrt_context_destroy(ctx);
    return st;
  }
  *out = ctx;
  return DISTRT_OK;
}

void distrt_context_destroy(distrt_context *ctx) {
  if (!ctx)
    return;
  delete ctx->cpu;
#ifdef DISTRT_HAVE_CUDA
  if (ctx->cuda)
    cuda::destroyState(ctx);
#endif
  delete ctx;
}

distrt_backend distrt_context_backend(const distrt_context *ctx) {
  return ctx ? ctx->backend : DISTRT_BACKEND_CPU;
}

const char *distrt_last_error(const distrt_context *ctx) {
  return ctx ? ctx->lastError.c_str() : threadLastError.c_str();
}

distrt_status distrt_context_set_stream(distrt_context *ctx, void *stream) {
  const char *fn = "distrt_context_set_stream";
  Checker c(ctx, fn);
  DISTRT_TRY(c.context());
  DISTRT_ON_CUDA(ctx, cuda::setStream(ctx, stream));
  if (stream)
    return c.fail(DISTRT_ERROR_INVALID_ARGUMENT,
                  "a CPU context has no streams; pass NULL");
  return DISTRT_OK;
}

distrt_status distrt_synchronize(distrt_context *ctx) {
  const char *fn = "distrt_synchronize";
  Checker c(ctx, fn);
  DISTRT_TRY(c.context());
  DISTRT_ON_CUDA(ctx, cuda::synchronize(ctx));
  return guardCall(ctx, fn, [&] {
    ctx->cpu->stream.wait();
    return DISTRT_OK;
  });
}

distrt_status distrt_alloc(distrt_context *ctx, size_t bytes, void **out) {
  const char *fn = "distrt_alloc";
  Checker c(ctx, fn);
  DISTRT_TRY(c.context());
  DISTRT_TRY(c.pointer("out", out));
  *out = nullptr;
  DISTRT_ON_CUDA(ctx, cuda::alloc(ctx, bytes, out));
  size_t rounded = (bytes + 63) / 64 * 64;
  *out = std::aligned_alloc(64, rounded ? rounded : 64);
  if (!*out)
    return c.fail(DISTRT_ERROR_OUT_OF_MEMORY, "could not allocate ", bytes,
                  " bytes of host memory");
  return DISTRT_OK;
}

distrt_status distrt_free(distrt_context *ctx, void *ptr) {
  const char *fn = "distrt_free";
  Checker c(ctx, fn);
  DISTRT_TRY(c.context());
  DISTRT_ON_CUDA(ctx, cuda::release(ctx, ptr));
  std::free(ptr);
  return DISTRT_OK;
}

distrt_status distrt_copy(distrt_context *ctx, void *dst, const void *src,
                          size_t bytes, distrt_copy_kind kind) {
  const char *fn = "distrt_copy";
  Checker c(ctx, fn);
  DISTRT_TRY(c.context());
  if (bytes == 0)
    return DISTRT_OK;
  DISTRT_TRY(c.pointer("dst", dst));
  DISTRT_TRY(c.pointer("src", src));
  DISTRT_ON_CUDA(ctx, cuda::copy(ctx, dst, src, bytes, kind));
  std::memmove(dst, src, bytes);
  return DISTRT_OK;
}

distrt_loss_scaler distrt_loss_scaler_init(float initial_scale) {
  distrt_loss_scaler s;
  s.scale = initial_scale;
  s.growth_factor = 2.0f;
  s.backoff_factor = 0.5f;
  s.growth_interval = 2000;
  s.good_steps = 0;
  return s;
}

int32_t distrt_loss_scaler_update(distrt_loss_scaler *scaler,
                                  int32_t found_inf) {
  if (!scaler)
    return 0;
  if (found_inf) {
    scaler->scale *= scaler->backoff_factor;
    scaler->good_steps = 0;
    return 0;
  }
  if (++scaler->good_steps >= scaler->growth_interval) {
    scaler->scale *= scaler->growth_factor;
    scaler->good_steps = 0;
  }
  return 1;
}

} // extern "C"
