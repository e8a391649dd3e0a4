//===- SchemaChecks.h - Nodes against their ONNX schemas --------*- C++ -*-===//
//
// Part of DistOpt. What onnxruntime rejects, the importer rejects too: node
// arity and attributes against the ONNX operator schema of the model's
// opset, attribute values that ONNX's own shape inference would divide by
// (a zero stride), and input element types outside the schema's type
// constraints. Built with exceptions (OpSchema::Verify throws); nothing
// here throws out.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_LIB_IMPORT_SCHEMACHECKS_H
#define DIST_LIB_IMPORT_SCHEMACHECKS_H

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

namespace onnx {
class ModelProto;
class TypeProto;
} // namespace onnx

namespace distopt {
namespace import {

/// Before shape inference: every node of a known op type has the inputs,
/// outputs and attributes its schema allows (OpSchema::Verify), and the
/// stride, dilation, kernel, padding, group and block-size attributes of
/// convolutions, pools and depth/space rearrangements are in range.
llvm::Error checkNodeSchemas(const onnx::ModelProto &model);

/// After shape inference: every input whose element type is known is of a
/// type the node's schema accepts (a complex64 Gemm bias is not).
/// `types` maps value names to their ONNX types (collectValueTypes).
llvm::Error
checkNodeTypes(const onnx::ModelProto &model,
               const llvm::StringMap<const onnx::TypeProto *> &types);

} // namespace import
} // namespace distopt

#endif // DIST_LIB_IMPORT_SCHEMACHECKS_H
