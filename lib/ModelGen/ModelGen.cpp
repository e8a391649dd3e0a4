//===- ModelGen.cpp - Options, dispatch, shape inference, I/O ---*- C++ -*-===//
//
// Part of DistOpt. Family defaults and validation, the model envelope
// (opset 17, graph-only metadata), ONNX shape inference and checker calls
// (they throw, so this library is built with exceptions and catches them
// here), and protobuf file I/O.
//
//===----------------------------------------------------------------------===//

#include "Families.h"
#include "lib/Support/OutputFile.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"

#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include <exception>

using namespace distopt::modelgen;
using llvm::StringRef;

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Expected<DType> distopt::modelgen::parseDType(StringRef text) {
  if (text == "f32")
    return DType::F32;
  if (text == "f16")
    return DType::F16;
  if (text == "bf16")
    return DType::BF16;
  return makeError("unknown dtype '" + text + "'; use f32, f16 or bf16");
}

StringRef distopt::modelgen::dtypeName(DType type) {
  switch (type) {
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::F32:
    break;
  }
  return "f32";
}

unsigned distopt::modelgen::dtypeBytes(DType type) {
  return type == DType::F32 ? 4 : 2;
}

int distopt::modelgen::dtypeOnnx(DType type) {
  switch (type) {
  case DType::F16:
    return onnx::TensorProto::FLOAT16;
  case DType::BF16:
    return onnx::TensorProto::BFLOAT16;
  case DType::F32:
    break;
  }
  return onnx::TensorProto::FLOAT;
}

llvm::ArrayRef<StringRef> distopt::modelgen::knownFamilies() {
  static const StringRef families[] = {
      "gpt", "bert", "llama", "mlp", "resnet", "vgg16", "trunk-branches"};
  return families;
}

llvm::ArrayRef<StringRef> distopt::modelgen::familyOptionNames(StringRef f) {
  static const StringRef gpt[] = {"layers", "hidden", "heads", "seq", "vocab"};
  static const StringRef llama[] = {"layers",
                                    "hidden",
                                    "heads",
                                    "kv-heads",
                                    "seq",
                                    "ffn-hidden",
                                    "head-dim",
                                    "vocab",
                                    "experts",
                                    "top-k",
                                    "expert-ffn",
                                    "shared-experts",
                                    "dense-layers",
                                    "q-lora-rank",
                                    "kv-lora-rank",
                                    "qk-nope-head-dim",
                                    "qk-rope-head-dim",
                                    "v-head-dim"};
  static const StringRef mlp[] = {"layers", "hidden", "input", "classes"};
  static const StringRef resnet[] = {"depth", "image", "classes"};
  static const StringRef vgg[] = {"image", "classes"};
  static const StringRef branches[] = {
      "layers",   "hidden",        "input",        "classes",
      "branches", "branch-layers", "branch-hidden"};
  if (f == "gpt" || f == "bert")
    return gpt;
  if (f == "llama")
    return llama;
  if (f == "mlp")
    return mlp;
  if (f == "resnet")
    return resnet;
  if (f == "vgg16")
    return vgg;
  if (f == "trunk-branches")
    return branches;
  return {};
}

llvm::Expected<ModelOptions> distopt::modelgen::defaultOptions(StringRef f) {
  ModelOptions o;
  o.family = f.str();
  if (f == "gpt") { // GPT-2 small (124M).
    o.layers = 12, o.hidden = 768, o.heads = 12, o.seq = 1024;
    o.vocab = 50257;
  } else if (f == "bert") { // BERT-base (110M).
    o.layers = 12, o.hidden = 768, o.heads = 12, o.seq = 512;
    o.vocab = 30522;
  } else if (f == "llama") { // LLaMA-2-7B; kv-heads and ffn-hidden derived.
    o.layers = 32, o.hidden = 4096, o.heads = 32, o.seq = 4096;
    o.vocab = 32000;
  } else if (f == "mlp") {
    o.layers = 2, o.hidden = 1024, o.input = 784, o.classes = 10;
  } else if (f == "resnet") {
    o.depth = 50, o.image = 224, o.classes = 1000;
  } else if (f == "vgg16") {
    o.image = 224, o.classes = 1000;
  } else if (f == "trunk-branches") { // A shared trunk, three heads.
    o.layers = 2, o.hidden = 1024, o.input = 784, o.classes = 10;
    o.branches = 3, o.branchLayers = 2, o.branchHidden = 1024;
  } else {
    std::string known;
    for (StringRef k : knownFamilies())
      known += (known.empty() ? "" : ", ") + k.str();
    return makeError("unknown model family '" + f +
                     "'; known families: " + known);
  }
  return o;
}

/// LLaMA's defaults for options left at 0: kv-heads = heads (plain MHA),
/// ffn-hidden = 8h/3 rounded up to a multiple of 256 (11008 for h = 4096).
static ModelOptions resolve(ModelOptions o) {
  if (o.family == "llama") {
    if (o.kvHeads == 0)
      o.kvHeads = o.heads;
    if (o.ffnHidden == 0)
      o.ffnHidden = (8 * o.hidden / 3 + 255) / 256 * 256;
    if (o.headDim == 0 && o.heads > 0)
      o.headDim = o.hidden / o.heads;
    if (o.experts > 0 && o.expertFfn == 0)
      o.expertFfn = o.ffnHidden;
    // Latent attention: Hugging Face DeepseekV3Config's head widths; the
    // query is compressed only when --q-lora-rank asks (ModelOptions).
    if (o.qLoraRank == -1)
      o.qLoraRank = 0;
    if (o.kvLoraRank > 0) {
      if (o.qkNopeHeadDim == 0)
        o.qkNopeHeadDim = 128;
      if (o.qkRopeHeadDim == 0)
        o.qkRopeHeadDim = 64;
      if (o.vHeadDim == 0)
        o.vHeadDim = 128;
    }
  }
  return o;
}

/// Options that may be 0: none negative, none above 2^24.
static llvm::Error
checkCounts(llvm::ArrayRef<std::pair<StringRef, int64_t>> options) {
  for (const auto &[option, value] : options) {
    if (value < 0)
      return makeError("--" + option + " must not be negative (got " +
                       llvm::Twine(value) + ")");
    if (value > (int64_t(1) << 24))
      return makeError("--" + option + " " + llvm::Twine(value) +
                       " is too large (at most 2^24)");
  }
  return llvm::Error::success();
}

/// The multi-head latent attention options of a LLaMA model as \p given
/// and after resolve (\p o).
static llvm::Error validateMla(const ModelOptions &given,
                               const ModelOptions &o) {
  const std::pair<StringRef, int64_t> mla[] = {
      {"kv-lora-rank", o.kvLoraRank},
      {"q-lora-rank", o.qLoraRank},
      {"qk-nope-head-dim", o.qkNopeHeadDim},
      {"qk-rope-head-dim", o.qkRopeHeadDim},
      {"v-head-dim", o.vHeadDim}};
  if (llvm::Error err = checkCounts(mla))
    return err;
  if (o.kvLoraRank == 0) {
    for (const auto &[option, value] : llvm::ArrayRef(mla).drop_front())
      if (value != 0 || (option == "q-lora-rank" && given.qLoraRank == 0))
        return makeError("--" + option +
                         " configures multi-head latent attention; give "
                         "--kv-lora-rank too, or leave it out for "
                         "grouped-query attention");
    return llvm::Error::success();
  }
  if (given.kvHeads != 0 && given.kvHeads != o.heads)
    return makeError("--kv-heads " + llvm::Twine(given.kvHeads) +
                     " does not apply to latent attention (--kv-lora-rank): "
                     "every one of the --heads " +
                     llvm::Twine(o.heads) +
                     " query heads has its own key and value");
  if (given.headDim != 0)
    return makeError("--head-dim does not apply to latent attention "
                     "(--kv-lora-rank): its heads are --qk-nope-head-dim + "
                     "--qk-rope-head-dim wide (queries, keys) and "
                     "--v-head-dim (values)");
  if (o.qkRopeHeadDim % 2 != 0)
    return makeError("--qk-rope-head-dim " + llvm::Twine(o.qkRopeHeadDim) +
                     " is odd; rotary embedding needs an even width");
  // A low-rank projection compresses the hidden state; one at least as
  // wide costs more than the full projection it replaces.
  for (const auto &[option, rank] :
       {std::pair<StringRef, int64_t>{"q-lora-rank", o.qLoraRank},
        {"kv-lora-rank", o.kvLoraRank}})
    if (rank >= o.hidden)
      return makeError(
          "--" + option + " " + llvm::Twine(rank) + " is not below --hidden " +
          llvm::Twine(o.hidden) +
          ": latent attention's low-rank projections compress the hidden "
          "state; give a rank below " +
          llvm::Twine(o.hidden) + " (DeepSeek-V3: 1536 and 512 of 7168)" +
          (option == "q-lora-rank"
               ? ", or leave --q-lora-rank out for one q_proj"
               : ""));
  return llvm::Error::success();
}

/// The mixture-of-experts options of a LLaMA model (after resolve).
static llvm::Error validateMoe(const ModelOptions &o) {
  const std::pair<StringRef, int64_t> moe[] = {
      {"experts", o.experts},
      {"top-k", o.topK},
      {"expert-ffn", o.expertFfn},
      {"shared-experts", o.sharedExperts},
      {"dense-layers", o.denseLayers}};
  if (llvm::Error err = checkCounts(moe))
    return err;
  if (o.experts == 0) {
    for (const auto &[option, value] : llvm::ArrayRef(moe).drop_front())
      if (value != 0)
        return makeError("--" + option +
                         " configures a mixture of experts; give --experts "
                         "too (and --top-k), or leave it out for a dense "
                         "model");
    return llvm::Error::success();
  }
  if (o.experts < 2)
    return makeError("--experts " + llvm::Twine(o.experts) +
                     ": a mixture of experts needs at least 2 routed experts");
  if (o.topK == 0)
    return makeError("--experts " + llvm::Twine(o.experts) +
                     " needs --top-k: the experts each token is routed to");
  if (o.topK > o.experts)
    return makeError("--top-k " + llvm::Twine(o.topK) +
                     " is larger than --experts " + llvm::Twine(o.experts) +
                     "; each token picks top-k of the routed experts");
  if (o.denseLayers >= o.layers)
    return makeError("--dense-layers " + llvm::Twine(o.denseLayers) +
                     " leaves no mixture-of-experts block among --layers " +
                     llvm::Twine(o.layers) +
                     "; give fewer dense layers (or no --experts)");
  // Every expert takes top-k * seq / experts tokens of each sequence (the
  // capacity at factor 1.0); the graph's shapes need it whole.
  if ((o.topK * o.seq) % o.experts != 0)
    return makeError(
        "--top-k " + llvm::Twine(o.topK) + " x --seq " + llvm::Twine(o.seq) +
        " = " + llvm::Twine(o.topK * o.seq) +
        " routed tokens per sequence is not divisible by --experts " +
        llvm::Twine(o.experts) +
        ": each expert's capacity (top-k * seq / experts tokens) must be "
        "whole; change --seq, --top-k or --experts");
  return llvm::Error::success();
}

llvm::Error distopt::modelgen::validateOptions(const ModelOptions &given) {
  ModelOptions o = resolve(given);
  if (familyOptionNames(o.family).empty())
    return defaultOptions(o.family).takeError();
  // Bounds keep every count and byte offset far from int64 overflow and the
  // node count sane; they are orders of magnitude above any real model.
  const std::pair<StringRef, int64_t> sizes[] = {
      {"layers", o.layers},
      {"hidden", o.hidden},
      {"heads", o.heads},
      {"kv-heads", o.kvHeads},
      {"seq", o.seq},
      {"vocab", o.vocab},
      {"ffn-hidden", o.ffnHidden},
      {"head-dim", given.headDim > 0 ? o.headDim : 1},
      {"input", o.input},
      {"classes", o.classes},
      {"depth", o.depth},
      {"image", o.image},
      {"branches", o.branches},
      {"branch-layers", o.branchLayers},
      {"branch-hidden", o.branchHidden}};
  for (StringRef name : familyOptionNames(o.family)) {
    for (const auto &[option, value] : sizes) {
      if (option != name)
        continue;
      int64_t limit = option == "layers" || option == "branch-layers" ? 10000
                      : option == "branches"                          ? 64
                                             : (int64_t(1) << 24);
      if (value <= 0)
        return makeError("--" + option + " must be positive (got " +
                         llvm::Twine(value) + ")");
      if (value > limit)
        return makeError("--" + option + " " + llvm::Twine(value) +
                         " is too large (at most " + llvm::Twine(limit) + ")");
    }
  }
  if (o.dropout != 0 && o.family != "gpt")
    return makeError("--dropout applies to family gpt, not '" + o.family + "'");
  if (!(o.dropout >= 0 && o.dropout < 1))
    return makeError("--dropout must be a probability in [0, 1) (got " +
                     llvm::formatv("{0}", o.dropout).str() + ")");
  if (o.microBatch < 0 || o.microBatch > (int64_t(1) << 24))
    return makeError("--micro-batch must be between 1 and 2^24, or omitted "
                     "for a symbolic batch (got " +
                     llvm::Twine(o.microBatch) + ")");
  // A LLaMA with --head-dim needs no relation of heads to hidden.
  // Nor does one with latent attention (its own head widths).
  bool ownHeadDim =
      o.family == "llama" && (given.headDim > 0 || o.kvLoraRank > 0);
  if (o.family == "gpt" || o.family == "bert" ||
      (o.family == "llama" && !ownHeadDim)) {
    if (o.hidden % o.heads != 0)
      return makeError("--heads " + llvm::Twine(o.heads) +
                       " does not divide --hidden " + llvm::Twine(o.hidden) +
                       "; pick heads so that hidden / heads is an integer");
  }
  if (o.family == "llama") {
    if (llvm::Error err = validateMla(given, o))
      return err;
    if (o.heads % o.kvHeads != 0)
      return makeError("--kv-heads " + llvm::Twine(o.kvHeads) +
                       " does not divide --heads " + llvm::Twine(o.heads) +
                       "; grouped-query attention needs heads = k * kv-heads");
    if (o.kvLoraRank == 0 && o.headDim % 2 != 0)
      return makeError(
          (ownHeadDim ? "--head-dim " : "head dimension hidden/heads = ") +
          llvm::Twine(o.headDim) +
          " is odd; rotary embedding needs an even head size");
    if (llvm::Error err = validateMoe(o))
      return err;
  }
  if (o.family == "resnet" && o.depth != 18 && o.depth != 34 && o.depth != 50 &&
      o.depth != 101 && o.depth != 152)
    return makeError("--depth " + llvm::Twine(o.depth) +
                     " is not a ResNet depth; use 18, 34, 50, 101 or 152");
  if ((o.family == "resnet" || o.family == "vgg16") && o.image % 32 != 0)
    return makeError("--image " + llvm::Twine(o.image) +
                     " must be a multiple of 32 (five stride-2 stages)");
  return llvm::Error::success();
}

llvm::Expected<GeneratedModel>
distopt::modelgen::generateModel(const ModelOptions &given, bool inferShapes) {
  if (llvm::Error err = validateOptions(given))
    return std::move(err);
  ModelOptions o = resolve(given);

  GeneratedModel result;
  onnx::ModelProto &model = result.model;
  model.set_ir_version(8);
  model.set_producer_name("dist-modelgen");
  model.set_producer_version("0.1");
  model.set_domain("distopt");
  onnx::OperatorSetIdProto *opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(17);
  onnx::GraphProto *graph = model.mutable_graph();
  graph->set_name(o.family);

  GraphBuilder b(*graph, o);
  using Builder = void (*)(GraphBuilder &);
  Builder build = llvm::StringSwitch<Builder>(o.family)
                      .Case("gpt", buildGpt)
                      .Case("bert", buildBert)
                      .Case("llama", buildLlama)
                      .Case("mlp", buildMlp)
                      .Case("resnet", buildResNet)
                      .Case("trunk-branches", buildTrunkBranches)
                      .Default(buildVgg16);
  build(b);

  auto meta = [&](const char *key, const std::string &value) {
    onnx::StringStringEntryProto *entry = model.add_metadata_props();
    entry->set_key(key);
    entry->set_value(value);
  };
  meta("distopt.graph_only", "true");
  meta("distopt.family", o.family);
  meta("distopt.parameters", std::to_string(b.parameters()));
  meta("distopt.dtype", dtypeName(o.dtype).str());
  result.parameters = b.parameters();
  result.buffers = b.buffers();
  result.weightBytes = b.weightBytes();

  if (inferShapes)
    if (llvm::Error err = inferModelShapes(model))
      return std::move(err);
  return std::move(result);
}

llvm::Error distopt::modelgen::inferModelShapes(onnx::ModelProto &model) {
  try {
    onnx::ShapeInferenceOptions options(/*check_type_val=*/true,
                                        /*strict_mode_val=*/1);
    onnx::shape_inference::InferShapes(
        model, onnx::OpSchemaRegistry::Instance(), options);
  } catch (const std::exception &e) {
    return makeError("ONNX shape inference failed on graph '" +
                     model.graph().name() + "': " + e.what() +
                     " (this is a dist-modelgen bug; please report it with "
                     "the command line)");
  }
  return llvm::Error::success();
}

llvm::Error distopt::modelgen::checkModelFile(StringRef path) {
  try {
    onnx::checker::check_model(path.str());
  } catch (const std::exception &e) {
    return makeError("ONNX checker rejected '" + path + "': " + e.what());
  }
  return llvm::Error::success();
}

llvm::Error distopt::modelgen::writeModel(const onnx::ModelProto &model,
                                          StringRef path) {
  std::string bytes;
  if (!model.SerializeToString(&bytes))
    return makeError("cannot serialize the model for '" + path +
                     "' (protobuf refused it; is it over 2 GiB?)");
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return makeError("cannot open '" + path + "' for writing: " + ec.message());
  os << bytes;
  std::string problem = distopt::closeOutput(os, path);
  if (!problem.empty())
    return makeError(problem);
  return llvm::Error::success();
}

llvm::Expected<onnx::ModelProto> distopt::modelgen::readModel(StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false);
  if (!buffer)
    return makeError("cannot read '" + path +
                     "': " + buffer.getError().message());
  onnx::ModelProto model;
  if (!model.ParseFromArray((*buffer)->getBufferStart(),
                            static_cast<int>((*buffer)->getBufferSize())))
    return makeError("'" + path +
                     "' is not a binary ONNX model (protobuf "
                     "parse failed); pass a .onnx file");
  return std::move(model);
}
