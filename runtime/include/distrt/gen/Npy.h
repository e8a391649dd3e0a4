//===- distrt/gen/Npy.h - .npy input and output -----------------*- C++ -*-===//
//
// Part of the support code of programs dist-compile generates
// (distrt_gen.h includes every piece; docs/codegen.md).
//
//===----------------------------------------------------------------------===//
#ifndef DISTRT_GEN_NPY_H
#define DISTRT_GEN_NPY_H

#include "distrt/gen/Common.h"

namespace dg {

//===----------------------------------------------------------------------===//
// .npy files (format 1.0/2.0, little-endian, C order)
//===----------------------------------------------------------------------===//

/// The DType of .npy descr `d` ("<f4"); false for one programs do not
/// read.
bool parseNpyDescr(const std::string &d, DType &out);

/// Reads a .npy of `size` bytes from `f` (named `path` in messages) into
/// `out`; on failure fills `err` and returns 1. Every size in the header is
/// checked against the file before anything is allocated, so a hostile
/// header (a 4 GiB header length, a 10^9 x 8 shape in a small file, negative
/// or overflowing dimensions) is an error, not an allocation failure.
int readNpyStream(FILE *f, uint64_t size, const std::string &path,
                  HostTensor &out, Error &err);

/// Reads `path` into `out`; on failure fills `err` and returns 1.
int readNpy(const std::string &path, HostTensor &out, Error &err);

/// Creates the directories above `path` that do not exist yet (mkdir -p of
/// its parent), so `-o out/` and `--save-state ckpt/` need no prior mkdir.
int makeParentDirs(const std::string &path, Error &err);

/// Writes `data` (`spec`) as the .npy `path`, creating its folders; on
/// failure fills `err` and returns 1.
int writeNpy(const std::string &path, const TensorSpec &spec, const void *data,
             Error &err);

} // namespace dg

#endif // DISTRT_GEN_NPY_H
