//===- distrt_gen.h - Support code of dist-compile programs ----*- C++ -*-===//
//
// Glue shared by every program that dist-compile generates, for both
// targets (compiled by the host C++ compiler for --target=cpu, by nvcc for
// --target=cuda): command line, .npy input/output, weight loading, buffer
// bookkeeping, error reporting, and `parallel_for`, the loop the generated
// elementwise / data-movement kernels run in (an OpenMP loop on the CPU, a
// grid-stride CUDA kernel on the GPU). The headers hold the declarations,
// the templates and the small functions the generated code calls in its
// loops; the rest is compiled once into the runtime archives
// (runtime/lib/gen/), so that each program compiles only its own code.
//
// The generated program holds one or more models (`Model`); each has a
// `run` function that calls the distrt ABI (distrt.h) and generated loops.
// File formats and the command line are documented in docs/codegen.md.
//
//===----------------------------------------------------------------------===//
#ifndef DISTRT_DISTRT_GEN_H
#define DISTRT_DISTRT_GEN_H

#include "distrt/gen/Common.h"
#include "distrt/gen/Half.h"
#include "distrt/gen/Npy.h"
#include "distrt/gen/Profile.h"
#include "distrt/gen/Program.h"
#include "distrt/gen/Scalar.h"
#include "distrt/gen/Threads.h"
#include "distrt/gen/Main.h"

#include "distrt/gen/Heap.h"
#include "distrt/gen/Replica.h"

#endif // DISTRT_DISTRT_GEN_H
