//===- ShapeInference.h - ONNX shape inference, exception-safe --*- C++ -*-===//
//
// Part of DistOpt. The only importer code built with C++ exceptions: ONNX's
// shape inference throws, and every throw is turned into an llvm::Error.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_LIB_IMPORT_SHAPEINFERENCE_H
#define DIST_LIB_IMPORT_SHAPEINFERENCE_H

#include "llvm/Support/Error.h"

namespace onnx {
class ModelProto;
} // namespace onnx

namespace distopt {
namespace import {

/// Runs ONNX shape inference with data propagation on `model`, in place
/// (results land in graph.value_info and graph.output). Never throws.
llvm::Error inferShapes(onnx::ModelProto &model);

} // namespace import
} // namespace distopt

#endif // DIST_LIB_IMPORT_SHAPEINFERENCE_H
