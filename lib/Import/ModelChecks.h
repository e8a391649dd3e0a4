//===- ModelChecks.h - Structural checks of an ONNX model -------*- C++ -*-===//
//
// Part of DistOpt. Checks that run before shape inference: supported opsets
// and domains, definition-before-use (topological order, cycles), and the
// pinning of graph input shapes.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_LIB_IMPORT_MODELCHECKS_H
#define DIST_LIB_IMPORT_MODELCHECKS_H

#include "dist/ImportONNX.h"

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace onnx {
class ModelProto;
class GraphProto;
} // namespace onnx

namespace distopt {
namespace import {

/// Lowest and highest supported default-domain opset.
constexpr int64_t kMinOpset = 7, kMaxOpset = 17;

/// Checks the opset imports and node domains; returns the default-domain
/// opset.
llvm::Expected<int64_t> checkOpsets(const onnx::ModelProto &model);

/// Checks that every node input is defined (graph input, initializer or an
/// earlier node's output); tells cycles from mere misordering.
llvm::Error checkDefinitions(const onnx::GraphProto &graph);

/// Pins the shapes of graph inputs: `--input-shape` entries first (each
/// must agree with the `--input-dim` of its symbolic dimensions), then the
/// symbolic dimensions `--input-dim` names, then a dynamic leading dimension
/// to `defaultBatch` (reported in `remarks`). Any other dynamic dimension,
/// and an `--input-dim` name no input uses, is an error; a suggested
/// `--input-shape` shows a placeholder for each open dimension.
llvm::Error pinInputShapes(onnx::GraphProto &graph,
                           const ONNXImportOptions &options,
                           std::vector<std::string> &remarks);

/// Replaces each graph input named by `--input-value` (a scalar: one
/// element, after pinning) by a Constant node holding the value, so that
/// folding sees it (an `If` on it keeps one branch). Errors name the input.
llvm::Error bindInputValues(onnx::GraphProto &graph,
                            const ONNXImportOptions &options);

} // namespace import
} // namespace distopt

#endif // DIST_LIB_IMPORT_MODELCHECKS_H
