//===- ModelGen.h - Graph-only ONNX model generator -------------*- C++ -*-===//
//
// Part of DistOpt. Generates ONNX models of common families (GPT, BERT,
// LLaMA, MLP, ResNet, VGG-16, a trunk with branch heads) as *graphs only*:
// every weight is an initializer with dims and data type whose bytes live in an
// external file that is never written. Planning needs shapes, not values, so a
// 1T-parameter model can be generated, stored and imported in milliseconds.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_LIB_MODELGEN_MODELGEN_H
#define DISTOPT_LIB_MODELGEN_MODELGEN_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace distopt {
namespace modelgen {

/// Element type of weights and activations.
enum class DType { F32, F16, BF16 };

/// Parses "f32", "f16" or "bf16".
llvm::Expected<DType> parseDType(llvm::StringRef text);
llvm::StringRef dtypeName(DType type);
/// Bytes per element of `type`.
unsigned dtypeBytes(DType type);
/// The onnx::TensorProto::DataType of `type`.
int dtypeOnnx(DType type);

/// Everything a family may be configured with. Fields a family does not use
/// are ignored by it; the tool rejects options that do not apply.
struct ModelOptions {
  std::string family;
  int64_t layers = 0;
  int64_t hidden = 0;
  int64_t heads = 0;
  /// LLaMA: key/value heads of grouped-query attention (== heads: MHA).
  int64_t kvHeads = 0;
  int64_t seq = 0;
  int64_t vocab = 0;
  /// LLaMA: width of the SwiGLU MLP.
  int64_t ffnHidden = 0;
  /// LLaMA: width of one attention head (0: hidden / heads; Qwen3 sets
  /// 128 where hidden / heads is 64).
  int64_t headDim = 0;
  /// LLaMA mixture of experts (0 experts: dense): routed experts, the
  /// experts each token is sent to, the SwiGLU width of one expert (0:
  /// ffnHidden), shared experts every token passes (one SwiGLU of
  /// sharedExperts * expertFfn), and the first blocks that keep the dense
  /// MLP. docs/modelgen.md gives the ONNX form.
  int64_t experts = 0;
  int64_t topK = 0;
  int64_t expertFfn = 0;
  int64_t sharedExperts = 0;
  int64_t denseLayers = 0;
  /// LLaMA multi-head latent attention (DeepSeek-V2/V3) when kvLoraRank > 0,
  /// named after Hugging Face's DeepseekV3Config: the rank of the query's
  /// low-rank projection (0: one q_proj, as DeepSeek-V2-Lite; -1: not
  /// given, which is 0: the query is compressed only when asked, since the
  /// config's 1536 is DeepSeek-V3's and would widen a smaller model's
  /// hidden state), of the compressed keys and values (each rank below
  /// the hidden width: a compression), and the per-head widths of the
  /// query/key part without and with rotary embedding and of the values
  /// (0: 128, 64 and 128, the config's defaults). docs/modelgen.md gives
  /// the ONNX form.
  int64_t qLoraRank = -1;
  int64_t kvLoraRank = 0;
  int64_t qkNopeHeadDim = 0;
  int64_t qkRopeHeadDim = 0;
  int64_t vHeadDim = 0;
  /// MLP: input features.
  int64_t input = 0;
  /// MLP, ResNet, VGG: output classes.
  int64_t classes = 0;
  /// ResNet: 18 or 50.
  int64_t depth = 0;
  /// ResNet, VGG: square input image side in pixels.
  int64_t image = 0;
  /// trunk-branches: the heads after the trunk, the hidden layers of each
  /// head and their width.
  int64_t branches = 0;
  int64_t branchLayers = 0;
  int64_t branchHidden = 0;
  /// 0 keeps the batch dimension symbolic ("batch"); N > 0 pins it.
  int64_t microBatch = 0;
  /// GPT: the probability of training-mode Dropout where GPT-2 has it
  /// (embeddings, attention probabilities, both residual branches); 0
  /// writes none.
  double dropout = 0;
  DType dtype = DType::F32;
  /// `location` written into every initializer's external_data.
  std::string weightsLocation = "model.weights";
};

/// The families `generateModel` knows, in the order the help text lists them.
llvm::ArrayRef<llvm::StringRef> knownFamilies();

/// Default options of `family` (GPT-2 small, BERT-base, LLaMA-2-7B, ...), or
/// an error naming the known families.
llvm::Expected<ModelOptions> defaultOptions(llvm::StringRef family);

/// Long option names (without dashes) that `family` reads. `micro-batch` and
/// `dtype` apply to every family and are not listed.
llvm::ArrayRef<llvm::StringRef> familyOptionNames(llvm::StringRef family);

/// Checks that `options` describe a well-formed model (positive sizes, heads
/// dividing hidden, ...). The error says which option is wrong and why.
llvm::Error validateOptions(const ModelOptions &options);

/// A generated model and what it holds.
struct GeneratedModel {
  onnx::ModelProto model;
  /// Trainable parameters (elements).
  uint64_t parameters = 0;
  /// Non-trainable initializer elements (BatchNormalization statistics).
  uint64_t buffers = 0;
  /// Size the external weights file would have.
  uint64_t weightBytes = 0;
};

/// Builds the model. `inferShapes` runs ONNX shape inference to fill
/// value_info (strict: an inconsistent graph is an error).
llvm::Expected<GeneratedModel> generateModel(const ModelOptions &options,
                                             bool inferShapes = true);

/// Runs ONNX shape inference (strict, type-checked) on `model` in place.
llvm::Error inferModelShapes(onnx::ModelProto &model);

/// Runs the ONNX checker on a saved model file. External data files must
/// exist next to the model (the checker stats them).
llvm::Error checkModelFile(llvm::StringRef path);

/// Writes `model` to `path` in binary protobuf form.
llvm::Error writeModel(const onnx::ModelProto &model, llvm::StringRef path);
/// Reads a binary ONNX model.
llvm::Expected<onnx::ModelProto> readModel(llvm::StringRef path);

/// What `summarizeModel` finds in a model.
struct ModelSummary {
  std::string family;
  bool graphOnly = false;
  uint64_t parameters = 0;
  uint64_t buffers = 0;
  uint64_t initializers = 0;
  uint64_t weightBytes = 0;
  std::string weightsLocation;
  uint64_t nodes = 0;
  std::map<std::string, uint64_t> opHistogram;
  /// "name type [d0,d1,...]" for each graph input and output.
  std::vector<std::string> inputs, outputs;
};

/// Re-reads a model and verifies the graph-only convention: every
/// initializer has dims and type but no data, one external location,
/// offsets/lengths that tile the file without overlap, every node input
/// defined before use, every output produced. Counts parameters (inputs 3
/// and 4 of BatchNormalization are buffers, the rest parameters).
llvm::Expected<ModelSummary> summarizeModel(const onnx::ModelProto &model);
void printSummary(const ModelSummary &summary, llvm::raw_ostream &os);

} // namespace modelgen
} // namespace distopt

#endif // DISTOPT_LIB_MODELGEN_MODELGEN_H
