//===- Internal.h - Context, errors and argument checks --------*- C++ -*-===//
//
// Shared by every entry point. Argument checking happens once, here, before
// the backend is chosen, so the CPU and CUDA backends reject the same inputs
// with the same messages. No oneDNN or CUDA header is included: the backend
// states hide behind opaque pointers.
//
//===----------------------------------------------------------------------===//
#ifndef DISTRT_LIB_INTERNAL_H
#define DISTRT_LIB_INTERNAL_H

#include "distrt/distrt.h"

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace distrt {
namespace cpu {
struct CpuState;
} // namespace cpu
namespace cuda {
struct CudaState;
} // namespace cuda
} // namespace distrt

struct distrt_context {
  distrt_backend backend = DISTRT_BACKEND_CPU;
  int32_t device = 0;
  std::string lastError;
  distrt::cpu::CpuState *cpu = nullptr;
  distrt::cuda::CudaState *cuda = nullptr;
  bool isCuda() const { return backend == DISTRT_BACKEND_CUDA; }
};

namespace distrt {

/// Records `message` as the last error of `ctx` (when not null) and of the
/// calling thread, and returns `status`. Under an ErrorCapture the message
/// goes to the capture instead of `ctx`.
distrt_status setError(distrt_context *ctx, distrt_status status,
                       const std::string &message);

/// While alive, setError on this thread records its message in `sink` and
/// leaves every context alone: a communicator's worker thread fails into
/// the request, which distrt_wait reports on the caller's thread (a
/// context's last error is not synchronised).
class ErrorCapture {
public:
  explicit ErrorCapture(std::string &sink);
  ~ErrorCapture();
  ErrorCapture(const ErrorCapture &) = delete;
  ErrorCapture &operator=(const ErrorCapture &) = delete;

private:
  std::string *previous_;
};

std::string shapeString(const distrt_tensor &t);
std::string shapeString(const std::vector<int64_t> &dims);
const char *dtypeName(distrt_dtype dtype);

template <typename... Args> std::string concat(const Args &...args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

inline std::vector<int64_t> dimsOf(const distrt_tensor &t) {
  return std::vector<int64_t>(t.dims, t.dims + t.rank);
}
inline bool sameShape(const distrt_tensor &a, const distrt_tensor &b) {
  if (a.rank != b.rank)
    return false;
  for (int i = 0; i < a.rank; ++i)
    if (a.dims[i] != b.dims[i])
      return false;
  return true;
}

/// NumPy broadcast of `a` and `b`; false when they are incompatible.
bool broadcastDims(const distrt_tensor &a, const distrt_tensor &b,
                   std::vector<int64_t> &out);
/// Element strides of `in` read at the coordinates of `outDims` (aligned
/// from the right; 0 on broadcast dims). `in` must broadcast to `outDims`.
std::vector<int64_t> broadcastStrides(const distrt_tensor &in,
                                      const std::vector<int64_t> &outDims);
/// True when `in` broadcasts to `outDims` under NumPy rules.
bool broadcastsTo(const distrt_tensor &in, const std::vector<int64_t> &outDims);

/// Argument checker bound to one entry point: every failure names the entry
/// point, the argument and the expectation.
class Checker {
public:
  Checker(distrt_context *ctx, const char *fn) : ctx_(ctx), fn_(fn) {}

  /// Fails when the context is null.
  distrt_status context();
  /// Non-null descriptor, valid rank/dims, data set unless empty, dtype.
  distrt_status tensor(const char *name, const distrt_tensor *t,
                       distrt_dtype dtype);
  /// Like tensor() but accepts any of the floating dtypes.
  distrt_status floatTensor(const char *name, const distrt_tensor *t);
  /// Indices: I32 or I64.
  distrt_status indexTensor(const char *name, const distrt_tensor *t);
  /// A null pointer is fine; otherwise as tensor().
  distrt_status optTensor(const char *name, const distrt_tensor *t,
                          distrt_dtype dtype) {
    return t ? tensor(name, t, dtype) : DISTRT_OK;
  }
  distrt_status same(const char *nameA, const distrt_tensor *a,
                     const char *nameB, const distrt_tensor *b);
  distrt_status shape(const char *name, const distrt_tensor *t,
                      const std::vector<int64_t> &dims);
  distrt_status minRank(const char *name, const distrt_tensor *t,
                        int32_t rank);
  distrt_status scalar(const char *name, const distrt_tensor *t);
  distrt_status pointer(const char *name, const void *p);
  /// Lets the following checks accept strided tensors (entry points that
  /// read and write them: distrt_tensor's `strides`).
  Checker &allowStrided(bool allow = true) {
    strided_ = allow;
    return *this;
  }
  bool stridedAllowed() const { return strided_; }

  template <typename... Args>
  distrt_status fail(distrt_status status, const Args &...args) {
    return setError(ctx_, status, concat(fn_, ": ", args...));
  }
private:
  distrt_context *ctx_;
  const char *fn_;
  bool strided_ = false;
};

/// True when `t` is dense row-major (no strides, or the row-major ones).
bool isDense(const distrt_tensor &t);
/// Element strides of `t` (row-major when it records none).
std::vector<int64_t> stridesOf(const distrt_tensor &t);

#define DISTRT_TRY(expr)                                                      \
  do {                                                                        \
    distrt_status distrtTryStatus_ = (expr);                                  \
    if (distrtTryStatus_ != DISTRT_OK)                                        \
      return distrtTryStatus_;                                                \
  } while (0)

#ifdef DISTRT_HAVE_CUDA
/// Returns from the enclosing entry point with the CUDA implementation.
#define DISTRT_ON_CUDA(ctx, expr)                                             \
  if ((ctx)->isCuda())                                                        \
    return guardCall((ctx), fn, [&] { return (expr); });
#else
#define DISTRT_ON_CUDA(ctx, expr)
#endif

/// Fails with UNSUPPORTED on a CUDA context (op not yet on the GPU).
#define DISTRT_CPU_ONLY(ctx, check)                                           \
  if ((ctx)->isCuda())                                                        \
    return (check).fail(DISTRT_ERROR_UNSUPPORTED,                             \
                        "not implemented on the CUDA backend yet; run this "  \
                        "op on a CPU context (docs/runtime-abi.md lists "     \
                        "backend coverage)");

/// Dispatches to the cuDNN-backed CUDA implementation when cuDNN was found,
/// else fails on CUDA contexts like DISTRT_CPU_ONLY.
#ifdef DISTRT_HAVE_CUDNN
#define DISTRT_ON_CUDNN(ctx, check, expr) DISTRT_ON_CUDA(ctx, expr)
#else
#define DISTRT_ON_CUDNN(ctx, check, expr) DISTRT_CPU_ONLY(ctx, check)
#endif

/// Runs `body`, turning any C++ exception (oneDNN, bad_alloc) into a status:
/// nothing is thrown across the ABI.
template <typename F>
distrt_status guardCall(distrt_context *ctx, const char *fn, F &&body);

distrt_status guardException(distrt_context *ctx, const char *fn);

template <typename F>
distrt_status guardCall(distrt_context *ctx, const char *fn, F &&body) {
  try {
    return body();
  } catch (...) {
    return guardException(ctx, fn);
  }
}

} // namespace distrt

#endif // DISTRT_LIB_INTERNAL_H
