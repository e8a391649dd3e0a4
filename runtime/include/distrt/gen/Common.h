//===- distrt/gen/Common.h - Types, specs and errors ------------*- C++ -*-===//
//
// Part of the support code of programs dist-compile generates
// (distrt_gen.h includes every piece; docs/codegen.md).
//
//===----------------------------------------------------------------------===//
#ifndef DISTRT_GEN_COMMON_H
#define DISTRT_GEN_COMMON_H

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
#include <sys/stat.h>
#include <vector>

#ifdef __CUDACC__
#include <cuda_runtime.h>
#define DG_HD __host__ __device__
#define DG_SIMD
#else
#define DG_HD
/// Before the inner loop of a chunked body (dg::parallelChunks): its items
/// are independent, so the host compiler vectorizes it without the alias
/// checks -O2 does not make.
#define DG_SIMD _Pragma("omp simd")
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
    // An empty tensor may have other extents whose product overflows
    // (2^32 x 2^32 x 0; readers check sizes of non-empty ones).
    for (int i = 0; i < rank; ++i)
      if (dims[i] == 0)
        return 0;
    int64_t n = 1;
    for (int i = 0; i < rank; ++i)
      n *= dims[i];
    return n;
  }
  size_t bytes() const { return (size_t)numel() * dtypeInfo(dtype).size; }
};

/// "[d0, d1, ...]" of a shape, for messages.
std::string shapeStr(const int64_t *dims, int rank);

/// Thrown nowhere: failures are recorded here and unwound by return codes.
struct Error {
  std::string message;
};

/// Records the printf-style message in `err`; returns 1.
int fail(Error &err, const char *fmt, ...);

/// Host bytes with their spec (inputs read from .npy, outputs to write).
struct HostTensor {
  TensorSpec spec;
  std::vector<char> data;
};

/// Whether `path` is a folder.
bool isDirectory(const std::string &path);

/// The whole text of `path`; false when it cannot be read.
bool readText(const std::string &path, std::string &out);

/// Writes `size` bytes to `path` (created or truncated). On failure records
/// "WHAT: cannot write 'PATH' (REASON)" in `err` and returns 1.
int writeFile(const std::string &path, const void *data, size_t size,
              const char *what, Error &err);

} // namespace dg

#endif // DISTRT_GEN_COMMON_H
