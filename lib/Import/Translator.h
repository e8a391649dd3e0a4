//===- Translator.h - ONNX nodes to graph ops -------------------*- C++ -*-===//
//
// Part of DistOpt. The state shared by the per-family translation files
// (TranslateMath.cpp, TranslateNN.cpp, TranslateData.cpp,
// TranslateControl.cpp): value and constant maps, inferred types, attribute
// helpers and the opaque fallback.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_LIB_IMPORT_TRANSLATOR_H
#define DIST_LIB_IMPORT_TRANSLATOR_H

#include "ModelScanner.h"
#include "SmallTensor.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <onnx/onnx_pb.h>

namespace distopt {
namespace import {

class Translator;

/// Translates one ONNX node; emits a diagnostic and fails on error. A
/// translation that cannot express a node calls Translator::emitOpaque.
using TranslateFn = mlir::LogicalResult (*)(Translator &,
                                            const onnx::NodeProto &);
using TranslateTable = llvm::StringMap<TranslateFn>;

void registerMathTranslations(TranslateTable &table);
void registerNNTranslations(TranslateTable &table);
void registerDataTranslations(TranslateTable &table);
void registerControlTranslations(TranslateTable &table);
/// ONNX Einsum (TranslateEinsum.cpp), registered with the math family.
mlir::LogicalResult translateEinsum(Translator &t, const onnx::NodeProto &node);
/// Translates `node` by its op type's entry of the families' table; a node
/// of another domain, an unknown op type or one without output 0 stays
/// `graph.opaque`.
mlir::LogicalResult translateNode(Translator &t, const onnx::NodeProto &node);

class Translator {
public:
  Translator(mlir::OpBuilder &builder, llvm::StringRef fileName, int64_t opset,
             const onnx::GraphProto &graph);

  mlir::OpBuilder &builder;
  int64_t opset;

  //===--------------------------------------------------------------------===//
  // Values
  //===--------------------------------------------------------------------===//

  /// The value named `name`, materializing a `graph.constant` for a known
  /// small constant. Null when unknown.
  mlir::Value lookup(llvm::StringRef name);
  /// Input `index` of `node`; emits an error naming it when missing.
  mlir::Value operand(const onnx::NodeProto &node, int index);
  /// True when input `index` is present (not absent, not "").
  static bool hasInput(const onnx::NodeProto &node, int index) {
    return index < node.input_size() && !node.input(index).empty();
  }
  /// The small constant named `name`, if it is one.
  const SmallTensor *constant(llvm::StringRef name) const;
  /// Input `index` of `node` as a small constant, or null.
  const SmallTensor *constantInput(const onnx::NodeProto &node,
                                   int index) const {
    return hasInput(node, index) ? constant(node.input(index)) : nullptr;
  }
  void define(llvm::StringRef name, mlir::Value value);
  void defineConstant(llvm::StringRef name, SmallTensor value);

  /// The inferred type of output `index` of `node` as a static ranked
  /// tensor; emits an error (suggesting --input-shape) when unknown.
  mlir::RankedTensorType resultType(const onnx::NodeProto &node, int index);
  /// The inferred type of a value, or null when unknown or not static.
  mlir::RankedTensorType inferredType(llvm::StringRef name) const;
  /// The MLIR element type of an ONNX data type, or null.
  mlir::Type elementType(int32_t dtype) const;
  /// Static ranked tensor type of `type`, or null.
  mlir::RankedTensorType convertType(const onnx::TypeProto &type) const;

  //===--------------------------------------------------------------------===//
  // Nodes
  //===--------------------------------------------------------------------===//

  mlir::Location loc(const onnx::NodeProto &node);
  /// The model file the locations name.
  llvm::StringRef file() const { return fileName; }
  mlir::InFlightDiagnostic emitError(const onnx::NodeProto &node);
  /// Keeps `node` as `graph.opaque`; `reads` (the outer values an If's
  /// branches read) follow the ONNX inputs as operands.
  mlir::LogicalResult emitOpaque(const onnx::NodeProto &node,
                                 mlir::ValueRange reads = {});
  /// Defines output 0 of `node` as `value`.
  mlir::LogicalResult setResult(const onnx::NodeProto &node,
                                mlir::Value value) {
    define(node.output(0), value);
    return mlir::success();
  }
  /// Where the bytes of the current node's large tensor attribute lie in
  /// `modelFile` (set by the driver per node; unset under
  /// --dist-weights=ignore).
  std::optional<TensorDataRef> nodeData;
  std::string modelFile;

  /// The initializers the model's `training_info` updates (its
  /// `update_binding` keys), when it carries any: every other float
  /// initializer is imported `frozen`. Unset for models without it.
  std::optional<llvm::StringSet<>> trainedByModel;
  /// Whether an `Identity` of a weight is a weight of its own (named after
  /// the Identity's output, reading the same bytes): exporters write
  /// parameters with equal values once and the others as Identity of it.
  /// Off when `training_info` says what is trained.
  bool untieIdentityWeights = true;

  /// Op types that went opaque, with counts, in first-seen order.
  llvm::MapVector<llvm::StringRef, unsigned> opaqueCounts;

  //===--------------------------------------------------------------------===//
  // Attributes
  //===--------------------------------------------------------------------===//

  static const onnx::AttributeProto *attr(const onnx::NodeProto &node,
                                          llvm::StringRef name);
  static int64_t attrInt(const onnx::NodeProto &node, llvm::StringRef name,
                         int64_t def);
  static double attrFloat(const onnx::NodeProto &node, llvm::StringRef name,
                          double def);
  static std::string attrString(const onnx::NodeProto &node,
                                llvm::StringRef name, llvm::StringRef def);
  static std::optional<llvm::SmallVector<int64_t>>
  attrInts(const onnx::NodeProto &node, llvm::StringRef name);
  /// Converts every attribute of `node` for `graph.opaque`.
  mlir::DictionaryAttr attrDictionary(const onnx::NodeProto &node);
  /// The graph inputs of one element, comma-separated, for --input-value
  /// hints (empty when there are none).
  const std::string &scalarInputNames() const { return scalarInputs; }

private:
  std::string fileName;
  /// Graph inputs of one element (candidates for --input-value) and whether
  /// any If/Loop node is left, for the unknown-shape error.
  std::string scalarInputs;
  bool hasBranches = false;
  llvm::StringMap<mlir::Value> values;
  llvm::StringMap<SmallTensor> constants;
  TypeMap types;
};

/// Builds a DenseElementsAttr of the small tensor `value` with element type
/// `type`'s.
mlir::DenseElementsAttr toElementsAttr(const SmallTensor &value,
                                       mlir::RankedTensorType type);

} // namespace import
} // namespace distopt

#endif // DIST_LIB_IMPORT_TRANSLATOR_H
