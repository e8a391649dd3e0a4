//===- dist-modelgen.cpp - Write graph-only ONNX models ---------*- C++ -*-===//
//
// Part of DistOpt.
//
//   dist-modelgen FAMILY [options] -o out.onnx   generate a model
//   dist-modelgen --summary model.onnx           verify and describe one
//
// Models are graph-only: weights are external-data initializers whose file
// (<out-stem>.weights) is never written. See docs/modelgen.md.
//
//===----------------------------------------------------------------------===//

#include "lib/ModelGen/ModelGen.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/WithColor.h"

#include <chrono>

using namespace distopt::modelgen;
namespace cl = llvm::cl;

static cl::OptionCategory category("dist-modelgen options");

static cl::opt<std::string> familyArg(
    cl::Positional,
    cl::desc("<family: gpt|bert|llama|mlp|resnet|vgg16|trunk-branches>"),
    cl::cat(category));
static cl::opt<std::string> outputArg("o", cl::desc("Output .onnx file"),
                                      cl::value_desc("file"),
                                      cl::cat(category));
static cl::opt<std::string>
    summaryArg("summary",
               cl::desc("Verify the graph-only convention of an ONNX file and "
                        "print parameters, op histogram, inputs and outputs"),
               cl::value_desc("file"), cl::cat(category));
static cl::opt<std::string> dtypeArg("dtype",
                                     cl::desc("f32 (default), f16 or bf16"),
                                     cl::init("f32"), cl::cat(category));
static cl::opt<double> dropoutArg(
    "dropout",
    cl::desc("GPT: training-mode Dropout of this probability where GPT-2 "
             "has it (embeddings, attention probabilities, both residual "
             "branches; default 0: none)"),
    cl::init(0.0), cl::cat(category));
static cl::opt<bool> noShapesArg(
    "no-shape-inference",
    cl::desc("Skip ONNX shape inference (no value_info for intermediates)"),
    cl::cat(category));

/// A size option, and where it goes in ModelOptions.
struct SizeOption {
  cl::opt<long long> opt;
  int64_t ModelOptions::*field;
  SizeOption(llvm::StringRef name, const char *desc,
             int64_t ModelOptions::*field)
      : opt(name, cl::desc(desc), cl::cat(category)), field(field) {}
};

static SizeOption sizeOptions[] = {
    {"layers", "Transformer blocks / hidden layers", &ModelOptions::layers},
    {"hidden", "Hidden (model) width", &ModelOptions::hidden},
    {"heads", "Attention heads", &ModelOptions::heads},
    {"kv-heads", "LLaMA key/value heads (grouped-query attention)",
     &ModelOptions::kvHeads},
    {"seq", "Sequence length (and position table size)", &ModelOptions::seq},
    {"vocab", "Vocabulary size", &ModelOptions::vocab},
    {"ffn-hidden", "LLaMA SwiGLU width", &ModelOptions::ffnHidden},
    {"head-dim", "LLaMA attention head width (default hidden / heads)",
     &ModelOptions::headDim},
    {"experts", "LLaMA mixture of experts: routed experts per MoE block",
     &ModelOptions::experts},
    {"top-k", "LLaMA MoE: experts each token is routed to",
     &ModelOptions::topK},
    {"expert-ffn", "LLaMA MoE: SwiGLU width of one expert (default ffn-hidden)",
     &ModelOptions::expertFfn},
    {"shared-experts", "LLaMA MoE: shared experts every token passes (0-N)",
     &ModelOptions::sharedExperts},
    {"dense-layers",
     "LLaMA MoE: the first blocks keep the dense MLP (0-N, default 0)",
     &ModelOptions::denseLayers},
    {"q-lora-rank",
     "LLaMA latent attention: rank of the query's low-rank projection, "
     "below --hidden (default 0: one q_proj)",
     &ModelOptions::qLoraRank},
    {"kv-lora-rank",
     "LLaMA: multi-head latent attention (DeepSeek-V2/V3) with compressed "
     "keys and values of this rank",
     &ModelOptions::kvLoraRank},
    {"qk-nope-head-dim",
     "LLaMA latent attention: query/key head width without rotary embedding "
     "(default 128)",
     &ModelOptions::qkNopeHeadDim},
    {"qk-rope-head-dim",
     "LLaMA latent attention: query/key head width with rotary embedding "
     "(default 64)",
     &ModelOptions::qkRopeHeadDim},
    {"v-head-dim", "LLaMA latent attention: value head width (default 128)",
     &ModelOptions::vHeadDim},
    {"input", "MLP input features", &ModelOptions::input},
    {"classes", "Output classes", &ModelOptions::classes},
    {"depth", "ResNet depth: 18, 34, 50, 101 or 152", &ModelOptions::depth},
    {"image", "Input image side (pixels)", &ModelOptions::image},
    {"branches", "trunk-branches: heads after the trunk",
     &ModelOptions::branches},
    {"branch-layers", "trunk-branches: hidden layers of each head",
     &ModelOptions::branchLayers},
    {"branch-hidden", "trunk-branches: width of each head's layers",
     &ModelOptions::branchHidden},
    {"micro-batch", "Pin the batch dimension (default: symbolic 'batch')",
     &ModelOptions::microBatch},
};

static int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "dist-modelgen") << message << "\n";
  return 1;
}

static std::string human(uint64_t n, llvm::StringRef unit, double base) {
  // Decimal prefixes for counts, binary (Ki, Mi, ...) for bytes.
  const char *binary[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi"};
  const char *decimal[] = {"", "K", "M", "B", "T", "Q"};
  const char **prefixes = base == 1024 ? binary : decimal;
  double value = static_cast<double>(n);
  unsigned i = 0;
  while (value >= base && i + 1 < std::size(binary)) {
    value /= base;
    ++i;
  }
  return llvm::formatv("{0:f2}{1}{2}", value, prefixes[i], unit).str();
}

static int summarize(llvm::StringRef path) {
  llvm::Expected<onnx::ModelProto> model = readModel(path);
  if (!model)
    return fail(llvm::toString(model.takeError()));
  llvm::Expected<ModelSummary> summary = summarizeModel(*model);
  if (!summary)
    return fail(path + ": " + llvm::toString(summary.takeError()));
  printSummary(*summary, llvm::outs());
  return 0;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "dist-modelgen: graph-only ONNX models (GPT, BERT, LLaMA, MLP, ResNet, "
      "VGG-16, trunk-branches)\n");

  if (!summaryArg.empty()) {
    if (!familyArg.empty() || !outputArg.empty())
      return fail("--summary reads a model; do not also give a family or -o");
    return summarize(summaryArg);
  }
  if (familyArg.empty())
    return fail("no model family given; use one of gpt, bert, llama, mlp, "
                "resnet, vgg16, trunk-branches (or --summary FILE)");
  llvm::Expected<ModelOptions> options = defaultOptions(familyArg);
  if (!options)
    return fail(llvm::toString(options.takeError()));

  llvm::ArrayRef<llvm::StringRef> accepted = familyOptionNames(familyArg);
  for (SizeOption &s : sizeOptions) {
    if (s.opt.getNumOccurrences() == 0)
      continue;
    llvm::StringRef name = s.opt.ArgStr;
    if (name != "micro-batch" && !llvm::is_contained(accepted, name))
      return fail("--" + name + " does not apply to family '" + familyArg +
                  "'; it takes --" + llvm::join(accepted, ", --") +
                  ", --micro-batch and --dtype");
    bool zeroOk = name == "shared-experts" || name == "dense-layers" ||
                  name == "q-lora-rank";
    if (s.opt < 0 || (s.opt == 0 && !zeroOk))
      return fail("--" + name +
                  (zeroOk ? " must not be negative" : " must be positive") +
                  " (got " + llvm::Twine(static_cast<long long>(s.opt)) + ")");
    (*options).*(s.field) = s.opt;
  }
  // LLaMA derives kv-heads (= heads) and ffn-hidden unless given.
  llvm::Expected<DType> dtype = parseDType(dtypeArg);
  if (!dtype)
    return fail(llvm::toString(dtype.takeError()));
  options->dtype = *dtype;
  options->dropout = dropoutArg;
  if (outputArg.empty())
    return fail("no output file; pass -o <file>.onnx");
  options->weightsLocation =
      (llvm::sys::path::stem(outputArg) + ".weights").str();

  auto start = std::chrono::steady_clock::now();
  llvm::Expected<GeneratedModel> model =
      generateModel(*options, /*inferShapes=*/!noShapesArg);
  if (!model)
    return fail(llvm::toString(model.takeError()));
  if (llvm::Error err = writeModel(model->model, outputArg))
    return fail(llvm::toString(std::move(err)));
  double ms = std::chrono::duration<double, std::milli>(
                  std::chrono::steady_clock::now() - start)
                  .count();
  uint64_t fileBytes = 0;
  llvm::sys::fs::file_size(outputArg, fileBytes);
  llvm::outs() << familyArg << ": " << human(model->parameters, "", 1000)
               << " parameters (" << model->parameters << "), "
               << model->model.graph().node_size() << " ops, file "
               << human(fileBytes, "B", 1024) << ", weights "
               << human(model->weightBytes, "B", 1024) << " in "
               << options->weightsLocation << " (not written), "
               << llvm::formatv("{0:f0}", ms) << " ms -> " << outputArg << "\n";
  return 0;
}
