//===- GraphBuilder.h - Appends ONNX nodes and graph-only weights ---------===//
//
// Part of DistOpt. A thin layer over onnx::GraphProto that the family
// generators share: it names values and nodes by scope, adds weights as
// external-data initializers without bytes (tracking offsets into the weights
// file that is never written), and deduplicates small constants.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_LIB_MODELGEN_GRAPHBUILDER_H
#define DISTOPT_LIB_MODELGEN_GRAPHBUILDER_H

#include "ModelGen.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/StringMap.h"

#include <initializer_list>

namespace distopt {
namespace modelgen {

/// One dimension of a graph input/output: fixed (`param` empty) or symbolic.
struct Dim {
  int64_t value = 0;
  std::string param;
  Dim(int64_t v) : value(v) {}
  Dim(const char *p) : param(p) {}
  Dim(std::string p) : param(std::move(p)) {}
};

/// Attribute constructors for `GraphBuilder::node`.
onnx::AttributeProto attrInt(llvm::StringRef name, int64_t value);
onnx::AttributeProto attrInts(llvm::StringRef name,
                              llvm::ArrayRef<int64_t> values);
onnx::AttributeProto attrFloat(llvm::StringRef name, float value);
onnx::AttributeProto attrString(llvm::StringRef name, llvm::StringRef value);
onnx::AttributeProto attrTensor(llvm::StringRef name, onnx::TensorProto value);

class GraphBuilder {
public:
  GraphBuilder(onnx::GraphProto &graph, const ModelOptions &options);

  /// Sets the prefix of node, value and weight names ("h.3.attn").
  void setScope(llvm::StringRef scope) { this->scope = scope.str(); }

  /// Adds a weight of activation dtype with shape `dims` as an initializer
  /// referencing the next bytes of the weights file. `trainable` weights
  /// count as parameters; others (BatchNorm statistics) as buffers.
  std::string weight(llvm::StringRef name, llvm::ArrayRef<int64_t> dims,
                     bool trainable = true);

  /// Appends a node with one output and returns the output's name.
  std::string node(llvm::StringRef opType, llvm::ArrayRef<std::string> inputs,
                   std::initializer_list<onnx::AttributeProto> attrs = {});
  /// Appends a node with `numOutputs` outputs.
  std::vector<std::string>
  nodeN(llvm::StringRef opType, llvm::ArrayRef<std::string> inputs,
        unsigned numOutputs,
        std::initializer_list<onnx::AttributeProto> attrs = {});

  /// An int64 constant (1-D, or scalar when `scalar`), shared by content.
  std::string constI64(llvm::ArrayRef<int64_t> values, bool scalar = false);
  /// A scalar of the activation dtype, shared by value.
  std::string constScalar(double value);
  /// The most negative finite value of the activation dtype (masking).
  std::string constLowest();
  /// A float32 constant of shape `dims`.
  std::string constF32(llvm::ArrayRef<float> values,
                       llvm::ArrayRef<int64_t> dims);

  /// Renames `value` (its producer and every consumer) to `newName`, so a
  /// graph output gets a stable name like "logits".
  std::string rename(const std::string &value, llvm::StringRef newName);

  /// Declares a graph input / output.
  void input(llvm::StringRef name, int elemType, llvm::ArrayRef<Dim> dims);
  void output(llvm::StringRef name, int elemType, llvm::ArrayRef<Dim> dims);

  /// The batch dimension: symbolic "batch" or the pinned micro-batch.
  Dim batch() const;
  /// Element type of activations/weights as onnx::TensorProto::DataType.
  int elemType() const { return dtypeOnnx(options.dtype); }
  const ModelOptions &opts() const { return options; }

  /// Common compositions.
  std::string matmul(const std::string &x, const std::string &w) {
    return node("MatMul", {x, w});
  }
  /// x @ W + b with W [in, out] and b [out] named `<name>.weight/.bias`.
  std::string linear(const std::string &x, llvm::StringRef name, int64_t in,
                     int64_t out, bool bias = true);
  /// `x` through training-mode Dropout of the options' probability, as the
  /// PyTorch exporter writes it in training mode (ratio and training_mode
  /// as constant inputs); `x` itself when the probability is 0.
  std::string dropout(const std::string &x);
  /// LayerNormalization over the last axis with `<name>.weight/.bias`.
  std::string layerNorm(const std::string &x, llvm::StringRef name,
                        int64_t width, float eps);

  uint64_t parameters() const { return numParameters; }
  uint64_t buffers() const { return numBuffers; }
  uint64_t weightBytes() const { return nextOffset; }

private:
  std::string fresh(llvm::StringRef opType);
  std::string scalarNode(const std::string &key, const llvm::APFloat &value);

  onnx::GraphProto &graph;
  const ModelOptions &options;
  std::string scope;
  uint64_t counter = 0;
  uint64_t nextOffset = 0;
  uint64_t numParameters = 0;
  uint64_t numBuffers = 0;
  llvm::StringMap<std::string> constants;
};

} // namespace modelgen
} // namespace distopt

#endif // DISTOPT_LIB_MODELGEN_GRAPHBUILDER_H
