//===- distrt_gen.h - Support code for programs dist-compile emits -*- C++
//-*-===//
//
// Header-only glue shared by every program that dist-compile generates, for
// both targets (compiled by the host C++ compiler for --target=cpu, by nvcc
// for --target=cuda): command line, .npy input/output, weight loading,
// buffer bookkeeping, error reporting, and `parallel_for`, the loop the
// generated elementwise / data-movement kernels run in (an OpenMP loop on
// the CPU, a grid-stride CUDA kernel on the GPU).
//
// The generated program holds one or more models (`Model`); each has a
// `run` function that calls the distrt ABI (distrt.h) and generated loops.
// File formats and the command line are documented in docs/codegen.md.
//
//===----------------------------------------------------------------------===//
#ifndef DISTRT_DISTRT_GEN_H
#define DISTRT_DISTRT_GEN_H

#include "distrt/distrt.h"

#include <cerrno>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#ifdef __CUDACC__
#include <cuda_runtime.h>
#define DG_HD __host__ __device__
#else
#define DG_HD
#endif

namespace dg {

/// Element types of generated programs; `npy` is the NumPy descr.
enum DType { F32, F64, F16, I8, I16, I32, I64, U8, U16, U32, U64, BOOL };

struct DTypeInfo {
  const char *name;
  const char *npy;
  size_t size;
};

inline DTypeInfo dtypeInfo(DType t) {
  static const DTypeInfo infos[] = {
      {"float32", "<f4", 4}, {"float64", "<f8", 8}, {"float16", "<f2", 2},
      {"int8", "|i1", 1},    {"int16", "<i2", 2},   {"int32", "<i4", 4},
      {"int64", "<i8", 8},   {"uint8", "|u1", 1},   {"uint16", "<u2", 2},
      {"uint32", "<u4", 4},  {"uint64", "<u8", 8},  {"bool", "|b1", 1}};
  return infos[t];
}

/// A graph input or output of a model: name, element type and shape.
struct TensorSpec {
  const char *name;
  DType dtype;
  int rank;
  int64_t dims[8];
  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < rank; ++i)
      n *= dims[i];
    return n;
  }
  size_t bytes() const { return (size_t)numel() * dtypeInfo(dtype).size; }
};

inline std::string shapeStr(const int64_t *dims, int rank) {
  std::string s = "[";
  for (int i = 0; i < rank; ++i)
    s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

/// Thrown nowhere: failures are recorded here and unwound by return codes.
struct Error {
  std::string message;
};

inline int fail(Error &err, const char *fmt, ...) {
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  err.message = buf;
  return 1;
}

/// Host bytes with their spec (inputs read from .npy, outputs to write).
struct HostTensor {
  TensorSpec spec;
  std::vector<char> data;
};

//===----------------------------------------------------------------------===//
// .npy files (format 1.0/2.0, little-endian, C order)
//===----------------------------------------------------------------------===//

inline bool parseNpyDescr(const std::string &d, DType &out) {
  static const struct {
    const char *descr;
    DType t;
  } table[] = {{"<f4", F32}, {"<f8", F64}, {"<f2", F16}, {"|i1", I8},
               {"<i2", I16}, {"<i4", I32}, {"<i8", I64}, {"|u1", U8},
               {"<u2", U16}, {"<u4", U32}, {"<u8", U64}, {"|b1", BOOL},
               {"i1", I8},   {"u1", U8},   {"b1", BOOL}};
  for (auto &e : table)
    if (d == e.descr) {
      out = e.t;
      return true;
    }
  return false;
}

/// Reads `path` into `out`; on failure fills `err` and returns 1.
inline int readNpy(const std::string &path, HostTensor &out, Error &err) {
  FILE *f = fopen(path.c_str(), "rb");
  if (!f)
    return fail(err, "cannot open input file '%s': %s", path.c_str(),
                strerror(errno));
  char magic[8];
  if (fread(magic, 1, 8, f) != 8 || memcmp(magic, "\x93NUMPY", 6) != 0) {
    fclose(f);
    return fail(err,
                "'%s' is not a .npy file (no \\x93NUMPY magic); write inputs "
                "with numpy.save",
                path.c_str());
  }
  uint32_t hlen = 0;
  if (magic[6] == 1) {
    unsigned char l[2];
    if (fread(l, 1, 2, f) != 2) {
      fclose(f);
      return fail(err, "'%s': truncated .npy header", path.c_str());
    }
    hlen = l[0] | (l[1] << 8);
  } else {
    unsigned char l[4];
    if (fread(l, 1, 4, f) != 4) {
      fclose(f);
      return fail(err, "'%s': truncated .npy header", path.c_str());
    }
    hlen = l[0] | (l[1] << 8) | (l[2] << 16) | ((uint32_t)l[3] << 24);
  }
  std::string header(hlen, '\0');
  if (fread(&header[0], 1, hlen, f) != hlen) {
    fclose(f);
    return fail(err, "'%s': truncated .npy header", path.c_str());
  }
  auto field = [&](const char *key) -> std::string {
    size_t p = header.find(std::string("'") + key + "'");
    if (p == std::string::npos)
      return "";
    p = header.find(':', p);
    return p == std::string::npos ? "" : header.substr(p + 1);
  };
  std::string descr = field("descr");
  size_t q1 = descr.find('\''), q2 = descr.find('\'', q1 + 1);
  DType dt;
  if (q1 == std::string::npos || q2 == std::string::npos ||
      !parseNpyDescr(descr.substr(q1 + 1, q2 - q1 - 1), dt)) {
    fclose(f);
    return fail(err, "'%s': unsupported .npy dtype in header %s", path.c_str(),
                header.c_str());
  }
  std::string fo = field("fortran_order");
  if (fo.find("True") < fo.find(',')) {
    fclose(f);
    return fail(err,
                "'%s': Fortran-ordered arrays are not supported; save "
                "numpy.ascontiguousarray(x)",
                path.c_str());
  }
  std::string shape = field("shape");
  size_t lp = shape.find('('), rp = shape.find(')');
  out.spec.rank = 0;
  out.spec.dtype = dt;
  out.spec.name = "";
  if (lp != std::string::npos && rp != std::string::npos) {
    std::string inner = shape.substr(lp + 1, rp - lp - 1);
    const char *s = inner.c_str();
    while (*s) {
      while (*s == ' ' || *s == ',')
        ++s;
      if (!*s)
        break;
      if (out.spec.rank == 8) {
        fclose(f);
        return fail(err, "'%s': rank above 8 is not supported", path.c_str());
      }
      char *end;
      out.spec.dims[out.spec.rank++] = strtoll(s, &end, 10);
      s = end;
    }
  }
  out.data.resize(out.spec.bytes());
  size_t got =
      out.data.empty() ? 0 : fread(out.data.data(), 1, out.data.size(), f);
  fclose(f);
  if (got != out.data.size())
    return fail(err, "'%s': expected %zu data bytes, file holds %zu",
                path.c_str(), out.data.size(), got);
  return 0;
}

inline int writeNpy(const std::string &path, const TensorSpec &spec,
                    const void *data, Error &err) {
  std::string shape = "(";
  for (int i = 0; i < spec.rank; ++i)
    shape += std::to_string(spec.dims[i]) +
             (spec.rank == 1 ? "," : (i + 1 < spec.rank ? ", " : ""));
  shape += ")";
  std::string header = std::string("{'descr': '") + dtypeInfo(spec.dtype).npy +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  FILE *f = fopen(path.c_str(), "wb");
  if (!f)
    return fail(err, "cannot write output file '%s': %s", path.c_str(),
                strerror(errno));
  unsigned char pre[10] = {0x93,
                           'N',
                           'U',
                           'M',
                           'P',
                           'Y',
                           1,
                           0,
                           (unsigned char)(header.size() & 0xff),
                           (unsigned char)(header.size() >> 8)};
  bool ok = fwrite(pre, 1, 10, f) == 10 &&
            fwrite(header.data(), 1, header.size(), f) == header.size() &&
            fwrite(data, 1, spec.bytes(), f) == spec.bytes();
  ok = (fclose(f) == 0) && ok;
  if (!ok)
    return fail(err, "short write to '%s'", path.c_str());
  return 0;
}

//===----------------------------------------------------------------------===//
// Execution state of one model run
//===----------------------------------------------------------------------===//

struct Program {
  distrt_context *ctx = nullptr;
  bool device = false;    ///< buffers live in CUDA device memory
  void *stream = nullptr; ///< CUDA stream shared with the runtime
  std::string weightsDir; ///< overrides the model's folder when set
  std::string modelDir;   ///< folder the weight references are relative to
  std::vector<HostTensor> inputs;
  std::vector<HostTensor> outputs;
  std::vector<void *> live; ///< every allocation not yet freed
  Error err;

  /// Buffers that outlive one call of a training step: weights (loaded on
  /// first use) and optimizer state (filled with its init on first use);
  /// results marked `graph.update` are copied into them after each step.
  struct Persistent {
    std::string name;
    DType dtype;
    int rank;
    int64_t dims[8];
    void *ptr;
  };
  std::vector<Persistent> persistent;

  /// The persistent buffer `name`, created on first use (`fresh` set).
  void *persistentBuffer(const char *name, DType dt, int rank,
                         const int64_t *dims, bool &fresh) {
    fresh = false;
    for (Persistent &b : persistent)
      if (b.name == name)
        return b.ptr;
    Persistent b;
    b.name = name;
    b.dtype = dt;
    b.rank = rank;
    size_t bytes = dtypeInfo(dt).size;
    for (int i = 0; i < rank; ++i) {
      b.dims[i] = dims[i];
      bytes *= (size_t)dims[i];
    }
    if (distrt_alloc(ctx, bytes ? bytes : 1, &b.ptr) != DISTRT_OK) {
      fail(err, "out of memory allocating persistent buffer '%s' (%zu bytes)",
           name, bytes);
      return nullptr;
    }
    fresh = true;
    persistent.push_back(b);
    return b.ptr;
  }
  /// Writes every persistent buffer as DIR/<name>.npy.
  int saveState(const std::string &dir) {
    for (Persistent &b : persistent) {
      TensorSpec spec;
      spec.name = b.name.c_str();
      spec.dtype = b.dtype;
      spec.rank = b.rank;
      for (int i = 0; i < b.rank; ++i)
        spec.dims[i] = b.dims[i];
      std::vector<char> host(spec.bytes());
      if (download(host.data(), b.ptr, host.size()) ||
          writeNpy(dir + "/" + sanitizeName(b.name) + ".npy", spec, host.data(),
                   err))
        return 1;
    }
    return 0;
  }
  void releasePersistent() {
    for (Persistent &b : persistent)
      distrt_free(ctx, b.ptr);
    persistent.clear();
  }
  static std::string sanitizeName(const std::string &name) {
    std::string s(name);
    for (char &c : s)
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
            (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.'))
        c = '_';
    return s.empty() ? std::string("_") : s;
  }
  /// Fills a buffer of `n` elements of type T with `value`.
  template <typename T> int fillValue(T *dst, int64_t n, T value);

  void *alloc(size_t bytes) {
    void *p = nullptr;
    if (distrt_alloc(ctx, bytes ? bytes : 1, &p) != DISTRT_OK) {
      fail(err, "out of memory allocating %zu bytes: %s", bytes,
           distrt_last_error(ctx));
      return nullptr;
    }
    live.push_back(p);
    return p;
  }
  void release(void *p) {
    for (size_t i = 0; i < live.size(); ++i)
      if (live[i] == p) {
        distrt_free(ctx, p);
        live[i] = live.back();
        live.pop_back();
        return;
      }
  }
  void releaseAll() {
    for (void *p : live)
      distrt_free(ctx, p);
    live.clear();
  }
  /// Copies host bytes into a buffer of the backend.
  int upload(void *dst, const void *src, size_t bytes) {
    if (!bytes)
      return 0;
    if (!device) {
      memcpy(dst, src, bytes);
      return 0;
    }
    if (distrt_copy(ctx, dst, src, bytes, DISTRT_COPY_HOST_TO_DEVICE) !=
        DISTRT_OK)
      return fail(err, "host-to-device copy failed: %s",
                  distrt_last_error(ctx));
    return 0;
  }
  int download(void *dst, const void *src, size_t bytes) {
    if (!bytes)
      return 0;
    if (!device) {
      memcpy(dst, src, bytes);
      return 0;
    }
    if (distrt_copy(ctx, dst, src, bytes, DISTRT_COPY_DEVICE_TO_HOST) !=
        DISTRT_OK)
      return fail(err, "device-to-host copy failed: %s",
                  distrt_last_error(ctx));
    return 0;
  }
  /// Copies between two buffers of the backend.
  int copy(void *dst, const void *src, size_t bytes) {
    if (!bytes || dst == src)
      return 0;
    if (!device) {
      memcpy(dst, src, bytes);
      return 0;
    }
    if (distrt_copy(ctx, dst, src, bytes, DISTRT_COPY_DEVICE_TO_DEVICE) !=
        DISTRT_OK)
      return fail(err, "device copy failed: %s", distrt_last_error(ctx));
    return 0;
  }
  /// Checks a runtime call; `what` names the op and its location.
  int check(distrt_status s, const char *what) {
    if (s == DISTRT_OK)
      return 0;
    return fail(err, "%s failed (%s): %s", what, distrt_status_string(s),
                distrt_last_error(ctx));
  }
  /// Reads `size` bytes of weight `name` from `file` (relative to the
  /// model's folder, or to --weights-dir) at `offset` into `dst`.
  int loadWeight(const char *name, const char *file, int64_t offset,
                 int64_t size, void *dst) {
    std::string dir = weightsDir.empty() ? modelDir : weightsDir;
    std::string path = (dir.empty() ? std::string() : dir + "/") + file;
    FILE *f = fopen(path.c_str(), "rb");
    if (!f)
      return fail(err,
                  "weight '%s': cannot open weights file '%s' (%s); it must "
                  "hold %lld bytes at offset %lld. Put the file there or pass "
                  "--weights-dir DIR naming the folder that holds '%s'",
                  name, path.c_str(), strerror(errno), (long long)size,
                  (long long)offset, file);
    std::vector<char> buf((size_t)size);
    bool ok =
        fseek(f, (long)offset, SEEK_SET) == 0 &&
        (size == 0 || fread(buf.data(), 1, (size_t)size, f) == (size_t)size);
    fclose(f);
    if (!ok)
      return fail(err,
                  "weight '%s': weights file '%s' is too short: %lld bytes "
                  "needed at offset %lld; is it the file the model was "
                  "exported with?",
                  name, path.c_str(), (long long)size, (long long)offset);
    return upload(dst, buf.data(), (size_t)size);
  }
  /// Initializes a weight that has no data (graph-only model) by the rule
  /// in docs/codegen.md: float tensors of rank >= 2 uniform in
  /// [-1/sqrt(fan_in), 1/sqrt(fan_in)] from a hash of (name, index); rank <= 1
  /// floats 1 for scale-like names, else 0; integer tensors 0.
  int initWeight(const char *name, DType dt, const int64_t *dims, int rank,
                 void *dst) {
    int64_t n = 1;
    for (int i = 0; i < rank; ++i)
      n *= dims[i];
    std::vector<char> buf((size_t)n * dtypeInfo(dt).size, 0);
    uint64_t seed = 1469598103934665603ull;
    for (const char *c = name; *c; ++c)
      seed = (seed ^ (unsigned char)*c) * 1099511628211ull;
    std::string nm(name);
    auto ends = [&](const char *s) {
      size_t l = strlen(s);
      return nm.size() >= l && nm.compare(nm.size() - l, l, s) == 0;
    };
    bool scaleLike = ends("weight") || ends("scale") || ends("gamma") ||
                     ends("var") || ends("running_var");
    for (int64_t i = 0; i < n; ++i) {
      double v;
      if (rank >= 2) {
        uint64_t z = seed + (uint64_t)i * 0x9E3779B97F4A7C15ull;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        double u = (double)(z >> 11) * (1.0 / 9007199254740992.0);
        double bound = 1.0 / std::sqrt((double)(n / dims[0]));
        v = (2 * u - 1) * bound;
      } else {
        v = scaleLike ? 1.0 : 0.0;
      }
      if (dt == F32)
        ((float *)buf.data())[i] = (float)v;
      else if (dt == F64)
        ((double *)buf.data())[i] = v;
    }
    return upload(dst, buf.data(), buf.size());
  }
};

//===----------------------------------------------------------------------===//
// Tensor descriptors and loops
//===----------------------------------------------------------------------===//

inline distrt_tensor T(void *data, distrt_dtype dtype,
                       std::initializer_list<int64_t> dims) {
  return distrt_make_tensor(data, dtype, (int32_t)dims.size(), dims.begin());
}

#ifdef __CUDACC__
template <typename F> __global__ void parallelForKernel(int64_t n, F f) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    f(i);
}
/// Runs f(i) for i in [0, n) on the GPU (the runtime's stream).
template <typename F> inline int parallelFor(Program &P, int64_t n, F f) {
  if (n <= 0)
    return 0;
  int64_t blocks = (n + 255) / 256;
  if (blocks > 65535)
    blocks = 65535;
  parallelForKernel<<<(unsigned)blocks, 256, 0, (cudaStream_t)P.stream>>>(n, f);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    return fail(P.err, "generated kernel launch failed: %s",
                cudaGetErrorString(e));
  return 0;
}
#else
/// Runs f(i) for i in [0, n) on the CPU (OpenMP threads above 32K items).
template <typename F> inline int parallelFor(Program &, int64_t n, F f) {
#pragma omp parallel for if (n > 32768) schedule(static)
  for (int64_t i = 0; i < n; ++i)
    f(i);
  return 0;
}
#endif

template <typename T> int Program::fillValue(T *dst, int64_t n, T value) {
  return parallelFor(*this, n, [=] DG_HD(int64_t i) { dst[i] = value; });
}

//===----------------------------------------------------------------------===//
// Scalar functions used by generated kernels (host and device)
//===----------------------------------------------------------------------===//

template <typename T> DG_HD inline T gelu(T x) {
  return (T)(0.5 * (double)x * (1.0 + erf((double)x * 0.70710678118654752)));
}
template <typename T> DG_HD inline T geluTanh(T x) {
  double d = x;
  return (T)(0.5 * d *
             (1.0 + tanh(0.7978845608028654 * (d + 0.044715 * d * d * d))));
}
template <typename T> DG_HD inline T sigmoid(T x) {
  return (T)(1.0 / (1.0 + exp(-(double)x)));
}
template <typename T> DG_HD inline T softplus(T x) {
  double d = x;
  return (T)(d > 20 ? d : log1p(exp(d)));
}
template <typename T> DG_HD inline T sign(T x) {
  return (T)((x > T(0)) - (x < T(0)));
}
template <typename T> DG_HD inline T fmodPy(T a, T b) {
  // Integer Mod in ONNX (fmod = 0) takes the divisor's sign.
  T r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
DG_HD inline float fmodPy(float a, float b) {
  float r = fmodf(a, b);
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
DG_HD inline double fmodPy(double a, double b) {
  double r = fmod(a, b);
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
template <typename T> DG_HD inline T maxOf(T a, T b) {
  return (a != a) ? a : (b != b) ? b : (a > b ? a : b);
}
template <typename T> DG_HD inline T minOf(T a, T b) {
  return (a != a) ? a : (b != b) ? b : (a < b ? a : b);
}
template <typename T> DG_HD inline T powOf(T a, double b) {
  return (T)pow((double)a, b);
}
template <typename T> DG_HD inline bool isInf(T x) {
  return x == (T)INFINITY || x == (T)-INFINITY;
}

/// Derivative factor f'(x) of graph.unary kind `k` (the UnaryKind values of
/// the graph dialect; docs of graph.unary_grad): unary_grad = dy * dUnary.
template <typename T>
DG_HD inline T dUnary(int k, T xv, double alpha, double beta) {
  double x = xv;
  const double kPi = 3.14159265358979323846;
  switch (k) {
  case 0:
    return (T)(x > 0 ? 1 : 0); // relu
  case 1:
    return (T)(0.5 * (1 + erf(x / 1.4142135623730951)) + // gelu
               x * exp(-0.5 * x * x) / sqrt(2 * kPi));
  case 2: { // gelu_tanh
    double c = 0.7978845608028654, u = c * (x + 0.044715 * x * x * x);
    double t = tanh(u);
    return (T)(0.5 * (1 + t) +
               0.5 * x * (1 - t * t) * c * (1 + 3 * 0.044715 * x * x));
  }
  case 3:
    return (T)(2 / sqrt(kPi) * exp(-x * x)); // erf
  case 4: {
    double t = tanh(x);
    return (T)(1 - t * t);
  } // tanh
  case 5: {
    double s = 1 / (1 + exp(-x));
    return (T)(s * (1 - s));
  } // sigmoid
  case 6: {
    double s = 1 / (1 + exp(-x));
    return (T)(s * (1 + x * (1 - s)));
  }
  case 7:
    return (T)exp(x);
  case 8:
    return (T)(1 / x);
  case 9:
    return (T)(0.5 / sqrt(x));
  case 10:
    return (T)(-0.5 * pow(x, -1.5));
  case 11:
    return (T)-1;
  case 12:
    return (T)((x > 0) - (x < 0));
  case 13:
    return (T)(-1 / (x * x));
  case 17:
    return (T)cos(x);
  case 18:
    return (T)-sin(x);
  case 21:
    return (T)(1 / (1 + exp(-x))); // softplus
  case 22: {
    double d = 1 + fabs(x);
    return (T)(1 / (d * d));
  } // softsign
  case 23: {
    double y = alpha * x + beta;
    return (T)(y > 0 && y < 1 ? alpha : 0);
  }
  case 24:
    return (T)(x < -3 ? 0 : (x > 3 ? 1 : x / 3 + 0.5)); // hard_swish
  case 25:
    return (T)(x > 0 ? 1 : alpha); // leaky_relu
  case 26:
    return (T)(x > 0 ? 1 : alpha * exp(x)); // elu
  case 27:
    return (T)1; // identity
  default:
    return (T)0; // sign, floor, ceil, round
  }
}

//===----------------------------------------------------------------------===//
// The model table and main()
//===----------------------------------------------------------------------===//

struct Model {
  const char *name;
  const char *source;   ///< the file it was compiled from
  const char *modelDir; ///< weight files are relative to this folder
  int numInputs;
  const TensorSpec *inputs;
  int numOutputs;
  const TensorSpec *outputs;
  int (*run)(Program &);
  /// Gradient accumulation: `run` (a micro-batch) runs `accumulation`
  /// times per step, then `apply` (the optimizer); nullptr / 1 otherwise.
  int (*apply)(Program &);
  int accumulation;
};

inline std::string sanitize(const char *name) {
  std::string s(name);
  for (char &c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
          (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.'))
      c = '_';
  return s.empty() ? std::string("_") : s;
}

inline void printSpecs(const Model &m) {
  printf("model %s (from %s)\n", m.name, m.source);
  for (int i = 0; i < m.numInputs; ++i)
    printf("  input  %s: %s %s\n", m.inputs[i].name,
           dtypeInfo(m.inputs[i].dtype).name,
           shapeStr(m.inputs[i].dims, m.inputs[i].rank).c_str());
  for (int i = 0; i < m.numOutputs; ++i)
    printf("  output %s: %s %s -> %s.npy\n", m.outputs[i].name,
           dtypeInfo(m.outputs[i].dtype).name,
           shapeStr(m.outputs[i].dims, m.outputs[i].rank).c_str(),
           sanitize(m.outputs[i].name).c_str());
}

inline int usage(const char *argv0) {
  fprintf(stderr,
          "usage: %s [--model NAME] [--list] [--weights-dir DIR] "
          "[--output-dir DIR] [--repeat N] [--steps N] [--save-state DIR] "
          "[NAME=]INPUT.npy...\n"
          "Inputs are .npy files, by name (NAME=FILE) or in order; each "
          "output is written as OUTPUT_DIR/<name>.npy.\n",
          argv0);
  return 2;
}

inline int runMain(int argc, char **argv, const Model *models, int numModels,
                   bool cuda) {
  std::string modelName, weightsDir, outDir = ".";
  std::vector<std::string> args;
  bool list = false, printSteps = false;
  int repeat = 1;
  std::string saveDir;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](std::string &dst) {
      if (i + 1 >= argc) {
        fprintf(stderr, "error: %s needs a value\n", a.c_str());
        return false;
      }
      dst = argv[++i];
      return true;
    };
    if (a == "--model") {
      if (!value(modelName))
        return 2;
    } else if (a == "--weights-dir") {
      if (!value(weightsDir))
        return 2;
    } else if (a == "--output-dir" || a == "-o") {
      if (!value(outDir))
        return 2;
    } else if (a == "--repeat") {
      std::string r;
      if (!value(r))
        return 2;
      repeat = atoi(r.c_str()) > 0 ? atoi(r.c_str()) : 1;
    } else if (a == "--steps") {
      std::string r;
      if (!value(r))
        return 2;
      repeat = atoi(r.c_str()) > 0 ? atoi(r.c_str()) : 1;
      printSteps = true;
    } else if (a == "--save-state") {
      if (!value(saveDir))
        return 2;
    } else if (a == "--list") {
      list = true;
    } else if (a == "--help" || a == "-h") {
      return usage(argv[0]);
    } else if (a.size() > 1 && a[0] == '-') {
      fprintf(stderr, "error: unknown option '%s'\n", a.c_str());
      return usage(argv[0]);
    } else {
      args.push_back(a);
    }
  }
  if (list) {
    for (int m = 0; m < numModels; ++m)
      printSpecs(models[m]);
    return 0;
  }
  const Model *model =
      numModels == 1 && modelName.empty() ? &models[0] : nullptr;
  for (int m = 0; m < numModels && !model; ++m)
    if (modelName == models[m].name)
      model = &models[m];
  if (!model) {
    fprintf(stderr, "error: %s; this program holds:",
            modelName.empty() ? "several models: choose one with --model NAME"
                              : ("no model named '" + modelName + "'").c_str());
    for (int m = 0; m < numModels; ++m)
      fprintf(stderr, " %s", models[m].name);
    fprintf(stderr, "\n");
    return 2;
  }
  Program P;
  P.device = cuda;
  P.weightsDir = weightsDir;
  P.modelDir = model->modelDir;
  P.inputs.resize(model->numInputs);
  std::vector<bool> given(model->numInputs, false);
  int next = 0;
  for (const std::string &a : args) {
    size_t eq = a.find('=');
    int idx = -1;
    std::string file = a;
    if (eq != std::string::npos) {
      std::string name = a.substr(0, eq);
      for (int k = 0; k < model->numInputs; ++k)
        if (name == model->inputs[k].name)
          idx = k;
      if (idx < 0) {
        fprintf(stderr, "error: model %s has no input named '%s'\n",
                model->name, name.c_str());
        printSpecs(*model);
        return 2;
      }
      file = a.substr(eq + 1);
    } else {
      while (next < model->numInputs && given[next])
        ++next;
      idx = next;
      if (idx >= model->numInputs) {
        fprintf(stderr,
                "error: model %s takes %d inputs; '%s' is one too many\n",
                model->name, model->numInputs, a.c_str());
        return 2;
      }
    }
    given[idx] = true;
    if (readNpy(file, P.inputs[idx], P.err)) {
      fprintf(stderr, "error: input '%s': %s\n", model->inputs[idx].name,
              P.err.message.c_str());
      return 1;
    }
    const TensorSpec &want = model->inputs[idx];
    HostTensor &got = P.inputs[idx];
    got.spec.name = want.name;
    bool same = got.spec.dtype == want.dtype && got.spec.rank == want.rank;
    for (int d = 0; same && d < want.rank; ++d)
      same = got.spec.dims[d] == want.dims[d];
    // A one-element array stands for a scalar input (rank 0) and back.
    if (!same && got.spec.dtype == want.dtype && got.spec.numel() == 1 &&
        want.numel() == 1 && (got.spec.rank == 0 || want.rank == 0))
      same = true;
    if (!same) {
      std::string dims;
      for (int d = 0; d < want.rank; ++d)
        dims += (d ? "x" : "") + std::to_string(want.dims[d]);
      fprintf(stderr,
              "error: input '%s' from '%s': expected %s %s, got %s %s. The "
              "program was compiled for fixed shapes; recompile with "
              "dist-compile --input-shape=%s:%s... to change them\n",
              want.name, file.c_str(), dtypeInfo(want.dtype).name,
              shapeStr(want.dims, want.rank).c_str(),
              dtypeInfo(got.spec.dtype).name,
              shapeStr(got.spec.dims, got.spec.rank).c_str(), want.name,
              "D0xD1");
      return 1;
    }
  }
  for (int k = 0; k < model->numInputs; ++k)
    if (!given[k]) {
      fprintf(stderr,
              "error: input '%s' (%s %s) was not given; pass %s=FILE.npy\n",
              model->inputs[k].name, dtypeInfo(model->inputs[k].dtype).name,
              shapeStr(model->inputs[k].dims, model->inputs[k].rank).c_str(),
              model->inputs[k].name);
      return 2;
    }
  distrt_status st = distrt_context_create(
      cuda ? DISTRT_BACKEND_CUDA : DISTRT_BACKEND_CPU, 0, &P.ctx);
  if (st != DISTRT_OK) {
    fprintf(stderr, "error: cannot create the %s runtime context: %s\n",
            cuda ? "CUDA" : "CPU", distrt_last_error(nullptr));
    return st == DISTRT_ERROR_NO_DEVICE ? 3 : 1;
  }
#ifdef __CUDACC__
  cudaStream_t stream;
  if (cudaStreamCreate(&stream) != cudaSuccess ||
      distrt_context_set_stream(P.ctx, stream) != DISTRT_OK) {
    fprintf(stderr, "error: cannot create a CUDA stream for the program\n");
    return 1;
  }
  P.stream = stream;
#endif
  P.outputs.resize(model->numOutputs);
  for (int k = 0; k < model->numOutputs; ++k) {
    P.outputs[k].spec = model->outputs[k];
    P.outputs[k].data.resize(model->outputs[k].bytes());
  }
  int rc = 0;
  for (int r = 0; r < repeat && !rc; ++r) {
    std::vector<double> sums(model->numOutputs, 0.0);
    for (int k = 0; k < model->accumulation && !rc; ++k) {
      rc = model->run(P);
      for (int o = 0; o < model->numOutputs && !rc; ++o)
        if (P.outputs[o].spec.numel() == 1 && P.outputs[o].spec.dtype == F32)
          sums[o] += *(const float *)P.outputs[o].data.data();
    }
    if (!rc && model->apply)
      rc = model->apply(P);
    if (rc || !printSteps)
      continue;
    // Training: one line per step with every scalar f32 output (the loss;
    // the mean over the micro-batches of a step).
    printf("step %d", r + 1);
    for (int k = 0; k < model->numOutputs; ++k)
      if (P.outputs[k].spec.numel() == 1 && P.outputs[k].spec.dtype == F32)
        printf(" %s %.9g", model->outputs[k].name,
               sums[k] / model->accumulation);
    printf("\n");
  }
  if (!rc && P.check(distrt_synchronize(P.ctx), "synchronize"))
    rc = 1;
  if (!rc && !saveDir.empty() && P.saveState(saveDir))
    rc = 1;
  P.releaseAll();
  P.releasePersistent();
  distrt_context_destroy(P.ctx);
  if (rc) {
    fprintf(stderr, "error: model %s: %s\n", model->name,
            P.err.message.c_str());
    return 1;
  }
  for (int k = 0; k < model->numOutputs; ++k) {
    std::string path = outDir + "/" + sanitize(model->outputs[k].name) + ".npy";
    if (writeNpy(path, P.outputs[k].spec, P.outputs[k].data.data(), P.err)) {
      fprintf(stderr, "error: %s\n", P.err.message.c_str());
      return 1;
    }
  }
  return 0;
}

} // namespace dg

#endif // DISTRT_DISTRT_GEN_H
