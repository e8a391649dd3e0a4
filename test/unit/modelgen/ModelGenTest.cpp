//===- ModelGenTest.cpp - dist-modelgen library tests -----------*- C++ -*-===//
//
// Part of DistOpt. Checks generated models with the ONNX checker, parameter
// counts against closed-form formulas and published figures, the graph-only
// convention, and that the verifier behind --summary rejects broken files.
//
//===----------------------------------------------------------------------===//

#include "lib/ModelGen/ModelGen.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"

#include "gtest/gtest.h"

using namespace distopt::modelgen;

namespace {

ModelOptions options(llvm::StringRef family) {
  llvm::Expected<ModelOptions> o = defaultOptions(family);
  EXPECT_TRUE(static_cast<bool>(o)) << llvm::toString(o.takeError());
  return *o;
}

GeneratedModel generate(const ModelOptions &o, bool shapes = true) {
  llvm::Expected<GeneratedModel> m = generateModel(o, shapes);
  if (!m) {
    ADD_FAILURE() << llvm::toString(m.takeError());
    return {};
  }
  return std::move(*m);
}

ModelSummary summarize(const onnx::ModelProto &model) {
  llvm::Expected<ModelSummary> s = summarizeModel(model);
  if (!s) {
    ADD_FAILURE() << llvm::toString(s.takeError());
    return {};
  }
  return std::move(*s);
}

std::string errorOf(const ModelOptions &o) {
  llvm::Error err = validateOptions(o);
  return err ? llvm::toString(std::move(err)) : "";
}

/// GPT (Megatron): 12 l h^2 (1 + 13/(12h) + (V+s)/(12lh)) plus the final
/// LayerNorm's 2h (which Megatron's formula leaves out).
uint64_t gptParams(uint64_t l, uint64_t h, uint64_t V, uint64_t s) {
  return 12 * l * h * h + 13 * l * h + (V + s) * h + 2 * h;
}

/// BERT: embeddings (V + s + 2 segments) h + LN 2h, 12h^2 + 13h per layer,
/// pooler h^2 + h.
uint64_t bertParams(uint64_t l, uint64_t h, uint64_t V, uint64_t s) {
  return (V + s + 2) * h + 2 * h + l * (12 * h * h + 13 * h) + h * h + h;
}

/// LLaMA: untied embedding and head 2Vh, final norm h; per layer q/o 2h^2,
/// k/v 2 h (kv * h/heads), SwiGLU 3hf, two norms 2h.
uint64_t llamaParams(uint64_t l, uint64_t h, uint64_t heads, uint64_t kv,
                     uint64_t f, uint64_t V) {
  uint64_t kvDim = kv * (h / heads);
  return 2 * V * h + h + l * (2 * h * h + 2 * h * kvDim + 3 * h * f + 2 * h);
}

TEST(ModelGen, GptMatchesMegatronFormula) {
  struct {
    int64_t l, h, a, V, s;
  } configs[] = {{12, 768, 12, 50257, 1024},
                 {2, 64, 4, 1000, 32},
                 {24, 2048, 16, 50257, 2048},
                 {96, 12288, 96, 51200, 2048}};
  for (auto c : configs) {
    ModelOptions o = options("gpt");
    o.layers = c.l, o.hidden = c.h, o.heads = c.a, o.vocab = c.V, o.seq = c.s;
    GeneratedModel m = generate(o, /*shapes=*/c.l < 50);
    uint64_t expected = gptParams(c.l, c.h, c.V, c.s);
    EXPECT_EQ(m.parameters, expected) << "layers " << c.l;
    EXPECT_EQ(summarize(m.model).parameters, expected);
    EXPECT_EQ(m.weightBytes, expected * 4);
  }
  // GPT-2 small as published by OpenAI/HF: 124,439,808.
  EXPECT_EQ(generate(options("gpt")).parameters, 124439808u);
}

TEST(ModelGen, PublishedCounts) {
  EXPECT_EQ(generate(options("bert")).parameters, 109482240u);   // bert-base
  EXPECT_EQ(generate(options("llama")).parameters, 6738415616u); // Llama-2-7B
  EXPECT_EQ(generate(options("resnet")).parameters, 25557032u);  // ResNet-50
  EXPECT_EQ(generate(options("vgg16")).parameters, 138357544u);  // VGG-16
  ModelOptions r18 = options("resnet");
  r18.depth = 18;
  EXPECT_EQ(generate(r18).parameters, 11689512u);
  ModelOptions r101 = options("resnet");
  r101.depth = 101;
  EXPECT_EQ(generate(r101).parameters, 44549160u);
  // BatchNorm running mean/var are buffers: 2 x (sum of BN widths).
  GeneratedModel r50 = generate(options("resnet"));
  EXPECT_EQ(r50.buffers, 53120u);
  EXPECT_EQ(summarize(r50.model).buffers, 53120u);
}

TEST(ModelGen, FamilyFormulas) {
  ModelOptions b = options("bert");
  b.layers = 24, b.hidden = 1024, b.heads = 16;
  EXPECT_EQ(generate(b).parameters, bertParams(24, 1024, 30522, 512));
  EXPECT_EQ(bertParams(24, 1024, 30522, 512), 335141888u); // bert-large

  ModelOptions l = options("llama");
  l.layers = 4, l.hidden = 512, l.heads = 8, l.kvHeads = 2, l.vocab = 1000;
  l.seq = 64;
  // ffn-hidden derived: 8 * 512 / 3 = 1365 -> rounded up to 1536.
  EXPECT_EQ(generate(l).parameters, llamaParams(4, 512, 8, 2, 1536, 1000));
  l.ffnHidden = 1000;
  EXPECT_EQ(generate(l).parameters, llamaParams(4, 512, 8, 2, 1000, 1000));

  ModelOptions m = options("mlp");
  m.layers = 3, m.hidden = 100, m.input = 20, m.classes = 7;
  EXPECT_EQ(generate(m).parameters,
            20u * 100 + 100 + 2 * (100u * 100 + 100) + 100 * 7 + 7);
}

TEST(ModelGen, CheckerAcceptsEveryFamily) {
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("modelgen", dir));
  struct Case {
    const char *family;
    DType dtype;
    int64_t kvHeads, microBatch;
    /// LLaMA with latent attention of this key/value rank (the other
    /// widths DeepseekV3Config's defaults).
    int64_t kvLoraRank = 0;
  } cases[] = {{"gpt", DType::F32, 0, 0},    {"gpt", DType::BF16, 0, 4},
               {"bert", DType::F16, 0, 0},   {"llama", DType::F32, 2, 0},
               {"llama", DType::BF16, 0, 1}, {"llama", DType::BF16, 0, 2, 64},
               {"mlp", DType::F32, 0, 0},    {"resnet", DType::F16, 0, 0},
               {"vgg16", DType::F32, 0, 8}};
  int index = 0;
  for (const Case &c : cases) {
    ModelOptions o = options(c.family);
    // Small transformers keep the test fast; topology is what is checked.
    if (o.heads) {
      o.layers = 2, o.hidden = 128, o.heads = 8, o.seq = 64, o.vocab = 500;
      o.kvHeads = c.kvHeads;
      o.kvLoraRank = c.kvLoraRank;
    }
    o.dtype = c.dtype;
    o.microBatch = c.microBatch;
    std::string stem = std::string(c.family) + std::to_string(index++);
    o.weightsLocation = stem + ".weights";
    GeneratedModel m = generate(o);
    llvm::SmallString<128> path(dir);
    llvm::sys::path::append(path, stem + ".onnx");
    ASSERT_FALSE(static_cast<bool>(writeModel(m.model, path)));
    // The checker stats external files; an empty placeholder stands in for
    // the weights file the generator deliberately does not write.
    llvm::SmallString<128> weights(dir);
    llvm::sys::path::append(weights, o.weightsLocation);
    int fd;
    ASSERT_FALSE(llvm::sys::fs::openFileForWrite(weights, fd));
    llvm::sys::Process::SafelyCloseFileDescriptor(fd);
    llvm::Error err = checkModelFile(path);
    EXPECT_FALSE(static_cast<bool>(err))
        << c.family << ": " << llvm::toString(std::move(err));

    llvm::Expected<onnx::ModelProto> back = readModel(path);
    ASSERT_TRUE(static_cast<bool>(back)) << llvm::toString(back.takeError());
    ModelSummary s = summarize(*back);
    EXPECT_TRUE(s.graphOnly);
    EXPECT_EQ(s.parameters, m.parameters);
    EXPECT_EQ(s.weightBytes, (m.parameters + m.buffers) * dtypeBytes(c.dtype));
    // Batch is symbolic unless pinned; activations carry the dtype.
    const onnx::ValueInfoProto &out = back->graph().output(0);
    const onnx::TensorShapeProto_Dimension &batch =
        out.type().tensor_type().shape().dim(0);
    if (c.microBatch)
      EXPECT_EQ(batch.dim_value(), c.microBatch) << c.family;
    else
      EXPECT_EQ(batch.dim_param(), "batch") << c.family;
    EXPECT_EQ(out.type().tensor_type().elem_type(), dtypeOnnx(c.dtype));
    // Shape inference filled intermediate value_info.
    EXPECT_GT(back->graph().value_info_size(), 0) << c.family;
  }
  llvm::sys::fs::remove_directories(dir);
}

TEST(ModelGen, GraphOnlyInitializers) {
  GeneratedModel m = generate(options("gpt"));
  uint64_t expectedOffset = 0;
  for (const onnx::TensorProto &t : m.model.graph().initializer()) {
    EXPECT_TRUE(t.raw_data().empty() && t.float_data_size() == 0) << t.name();
    EXPECT_EQ(t.data_location(), onnx::TensorProto::EXTERNAL);
    ASSERT_EQ(t.external_data_size(), 3);
    EXPECT_EQ(t.external_data(0).value(), "model.weights");
    EXPECT_EQ(t.external_data(1).value(), std::to_string(expectedOffset));
    uint64_t length = std::stoull(t.external_data(2).value());
    expectedOffset += length;
  }
  EXPECT_EQ(expectedOffset, m.weightBytes);
}

TEST(ModelGen, TrillionParametersStaySmall) {
  // 128 x 25600 GPT: ~1T parameters; the file holds only the graph.
  ModelOptions o = options("gpt");
  o.layers = 128, o.hidden = 25600, o.heads = 160, o.seq = 2048;
  o.vocab = 51200;
  GeneratedModel m = generate(o);
  EXPECT_EQ(m.parameters, gptParams(128, 25600, 51200, 2048));
  EXPECT_GT(m.parameters, 1000000000000u);
  EXPECT_LT(m.model.ByteSizeLong(), 4u << 20);
}

TEST(ModelGen, ValidationErrors) {
  ModelOptions o = options("gpt");
  o.heads = 7;
  EXPECT_NE(errorOf(o).find("does not divide --hidden"), std::string::npos);
  o = options("gpt");
  o.layers = 0;
  EXPECT_NE(errorOf(o).find("--layers must be positive"), std::string::npos);
  o = options("llama");
  o.kvHeads = 5;
  EXPECT_NE(errorOf(o).find("--kv-heads 5 does not divide --heads 32"),
            std::string::npos);
  o = options("resnet");
  o.depth = 20;
  EXPECT_NE(errorOf(o).find("not a ResNet depth"), std::string::npos);
  o = options("vgg16");
  o.image = 100;
  EXPECT_NE(errorOf(o).find("multiple of 32"), std::string::npos);
  o.family = "transformer";
  EXPECT_NE(errorOf(o).find("unknown model family 'transformer'"),
            std::string::npos);
  EXPECT_FALSE(static_cast<bool>(generateModel(o)));
  EXPECT_EQ(errorOf(options("llama")), "");
}

TEST(ModelGen, VerifierRejectsBrokenModels) {
  ModelOptions o = options("mlp");
  auto fresh = [&] { return generate(o, /*shapes=*/false).model; };
  auto errorText = [](const onnx::ModelProto &model) {
    llvm::Expected<ModelSummary> s = summarizeModel(model);
    return s ? std::string() : llvm::toString(s.takeError());
  };
  EXPECT_EQ(errorText(fresh()), "");

  onnx::ModelProto inlineData = fresh();
  inlineData.mutable_graph()->mutable_initializer(0)->add_float_data(1.0f);
  EXPECT_NE(errorText(inlineData).find("holds inline data"), std::string::npos);

  onnx::ModelProto overlap = fresh();
  overlap.mutable_graph()
      ->mutable_initializer(1)
      ->mutable_external_data(1)
      ->set_value("0");
  EXPECT_NE(errorText(overlap).find("overlap"), std::string::npos);

  onnx::ModelProto badLength = fresh();
  badLength.mutable_graph()
      ->mutable_initializer(0)
      ->mutable_external_data(2)
      ->set_value("12");
  EXPECT_NE(errorText(badLength).find("length 12"), std::string::npos);

  onnx::ModelProto unordered = fresh();
  unordered.mutable_graph()->mutable_node()->SwapElements(0, 1);
  EXPECT_NE(errorText(unordered).find("before it is defined"),
            std::string::npos);

  onnx::ModelProto dropped = fresh();
  dropped.mutable_graph()->mutable_initializer()->RemoveLast();
  EXPECT_NE(errorText(dropped).find("metadata distopt.parameters = 1863690"),
            std::string::npos);

  onnx::ModelProto noOutput = fresh();
  noOutput.mutable_graph()->mutable_output(0)->set_name("nowhere");
  EXPECT_NE(errorText(noOutput).find("'nowhere' is produced by no node"),
            std::string::npos);
}

} // namespace
