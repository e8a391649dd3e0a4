//===- CostInterfaceTest.cpp - One definition of per-op costs ---*- C++ -*-===//
//
// Part of DistOpt. What the planner predicts rests on CostOpInterface: each
// forward op's cost must be exactly the cost core's builder for the op's
// shapes (bit for bit: search and simulation results are pinned by tests
// and benchmarks), its FLOP count the forward FLOPs of that cost, and the
// layer analysis must add up what the ops say. A rule that drifts from the
// builders, or a FLOP count that leaves the cost, fails here.
//
//===----------------------------------------------------------------------===//
#include "dialects/Graph/GraphOps.h"
#include "dist/ImportONNX.h"
#include "dist/InitAll.h"
#include "lib/ModelGen/ModelGen.h"
#include "passes/Planning/LayerAnalysis.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace distopt;
using cluster::DType;
using cost::OpDesc;
namespace g = distopt::graph;

namespace {

/// One context with every DistOpt dialect loaded.
struct Context {
  Context() : ctx(registry()) { ctx.loadAllAvailableDialects(); }
  static DialectRegistry registry() {
    DialectRegistry r;
    registerAllDialects(r);
    return r;
  }
  MLIRContext ctx;
};

/// The op of \p func whose location is named \p name.
Operation *named(func::FuncOp func, StringRef name) {
  Operation *found = nullptr;
  func.walk([&](Operation *op) {
    if (auto loc = dyn_cast<NameLoc>(op->getLoc()))
      if (loc.getName() == name)
        found = op;
  });
  EXPECT_TRUE(found) << "no op named " << name.str();
  return found;
}

void expectSamePhase(const cost::PhaseCost &got, const cost::PhaseCost &want,
                     const char *phase, const std::string &op) {
  EXPECT_EQ(got.flops, want.flops) << op << " " << phase << " flops";
  EXPECT_EQ(got.bytesRead, want.bytesRead) << op << " " << phase << " read";
  EXPECT_EQ(got.bytesWritten, want.bytesWritten)
      << op << " " << phase << " written";
}

/// Every field the cost model reads, compared exactly.
void expectSameCost(const std::optional<OpDesc> &got, const OpDesc &want) {
  ASSERT_TRUE(got) << want.name << " has no cost";
  EXPECT_EQ(got->name, want.name);
  EXPECT_EQ(got->signature, want.signature);
  EXPECT_EQ(got->cls, want.cls) << want.name;
  EXPECT_EQ(got->dtype, want.dtype) << want.name;
  expectSamePhase(got->fwd, want.fwd, "forward", want.name);
  expectSamePhase(got->bwdInput, want.bwdInput, "backward-input", want.name);
  expectSamePhase(got->bwdWeight, want.bwdWeight, "backward-weight", want.name);
  EXPECT_EQ(got->params, want.params) << want.name;
  EXPECT_EQ(got->savedBytes, want.savedBytes) << want.name;
  EXPECT_EQ(got->savedReplicatedBytes, want.savedReplicatedBytes) << want.name;
  EXPECT_EQ(got->tp, want.tp) << want.name;
  EXPECT_EQ(got->kernels, want.kernels) << want.name;
}

const char *kOps = R"mlir(
func.func @main(%x: tensor<4x16x32xf32>, %ids: tensor<4x16xi64>,
                %img: tensor<2x3x8x8xf32>) -> () {
  %w = graph.weight "w" : tensor<32x64xf32> loc("w")
  %t = graph.weight "table" : tensor<100x64xf32> loc("table")
  %g = graph.weight "g" : tensor<64xf32> loc("g")
  %k = graph.weight "k" : tensor<4x3x3x3xf32> loc("k")
  %fc = graph.matmul %x, %w : (tensor<4x16x32xf32>, tensor<32x64xf32>) -> tensor<4x16x64xf32> loc("fc")
  %s = graph.matmul %x, %x {transpose_rhs = true} : (tensor<4x16x32xf32>, tensor<4x16x32xf32>) -> tensor<4x16x16xf32> loc("scores")
  %p = graph.softmax %s {axis = -1 : i64} : (tensor<4x16x16xf32>) -> tensor<4x16x16xf32> loc("probs")
  %e = graph.embedding %t, %ids : (tensor<100x64xf32>, tensor<4x16xi64>) -> tensor<4x16x64xf32> loc("lookup")
  %n = graph.layer_norm %fc, %g, %g : (tensor<4x16x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<4x16x64xf32> loc("ln")
  %a = graph.unary gelu %n : (tensor<4x16x64xf32>) -> tensor<4x16x64xf32> loc("act")
  %b = graph.binary add %a, %e : (tensor<4x16x64xf32>, tensor<4x16x64xf32>) -> tensor<4x16x64xf32> loc("res")
  %tr = graph.transpose %b {perm = array<i64: 1, 0, 2>} : (tensor<4x16x64xf32>) -> tensor<16x4x64xf32> loc("tr")
  %r = graph.reshape %b : (tensor<4x16x64xf32>) -> tensor<64x64xf32> loc("view")
  %c = graph.conv %img, %k {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x8x8xf32> loc("conv")
  %o = graph.opaque "Custom"(%b) : (tensor<4x16x64xf32>) -> tensor<4x16x64xf32> loc("custom")
  %dg = graph.unary_grad gelu %n, %a : (tensor<4x16x64xf32>, tensor<4x16x64xf32>) -> tensor<4x16x64xf32> loc("dgelu")
  return
}
)mlir";

TEST(CostInterface, ForwardOpsCostWhatTheBuildersSay) {
  Context c;
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(kOps, &c.ctx);
  ASSERT_TRUE(module);
  auto func = module->lookupSymbol<func::FuncOp>("main");
  g::CostContext bf16;
  bf16.computeType = DType::BF16;
  auto costOf = [&](StringRef name, const g::CostContext &context) {
    return cast<g::CostOpInterface>(named(func, name)).getCost(context);
  };

  // A linear layer: the weight is shared by the 4 x 16 rows.
  expectSameCost(costOf("fc", bf16),
                 cost::matmulOp("fc", DType::BF16, 1, 64, 64, 32, true));
  // Two activations: a batch of 4 products, both gradients input gradients.
  expectSameCost(costOf("scores", bf16),
                 cost::matmulOp("scores", DType::BF16, 4, 16, 16, 32, false));
  expectSameCost(costOf("probs", bf16),
                 cost::softmaxOp("probs", DType::BF16, 64, 16));
  expectSameCost(costOf("lookup", bf16),
                 cost::embeddingOp("lookup", DType::BF16, 64, 100, 64));
  expectSameCost(costOf("ln", bf16), cost::normOp("ln", DType::BF16, 64, 64));
  expectSameCost(costOf("act", bf16),
                 cost::elementwiseOp("act", DType::BF16, 4096, 1, 8));
  // A sum's gradient is the output gradient: it keeps nothing.
  OpDesc sum = cost::elementwiseOp("res", DType::BF16, 4096, 2);
  sum.savedBytes = 0;
  expectSameCost(costOf("res", bf16), sum);
  expectSameCost(costOf("tr", bf16),
                 cost::dataMovementOp("tr", DType::BF16, 4096));
  EXPECT_FALSE(costOf("view", bf16)) << "a reshape moves no data";

  // The convolution builder is per image; the op's cost is for its batch.
  OpDesc conv =
      cost::convOp("conv", DType::F32, 3, 8, 8, 4, 3, 3, 1, 1, 1, false);
  conv.fwd = conv.fwd.scaled(2);
  conv.bwdInput = conv.bwdInput.scaled(2);
  conv.bwdWeight = conv.bwdWeight.scaled(2);
  conv.savedBytes *= 2;
  expectSameCost(costOf("conv", g::CostContext()), conv);

  // Without a compute type, an op is costed in its own element type; the
  // analysis' notion of a weight overrides the default one.
  g::CostContext noWeights;
  auto never = [](Value) { return false; };
  noWeights.isWeightLike = never;
  expectSameCost(costOf("fc", noWeights),
                 cost::matmulOp("fc", DType::F32, 4, 16, 64, 32, false));

  // An op without a rule of its own: one FLOP per result element.
  Operation *custom = named(func, "custom");
  EXPECT_FALSE(isa<g::CostOpInterface>(custom));
  double bytes = 4 * 16 * 64 * 4;
  expectSameCost(g::genericCost(custom, g::CostContext()),
                 cost::otherOp("custom", DType::F32, {4096, bytes, bytes}));
  // In a compute type its f32 tensors move as bf16 (mixed precision).
  expectSameCost(
      g::genericCost(custom, bf16),
      cost::otherOp("custom", DType::BF16, {4096, bytes / 2, bytes / 2}));
  // A training op runs once as it is: its FLOP count, no backward.
  auto grad = cast<g::CostOpInterface>(named(func, "dgelu"));
  std::optional<OpDesc> dgelu = grad.getCost(g::CostContext());
  ASSERT_TRUE(dgelu);
  EXPECT_EQ(dgelu->fwd.flops, 2 * 4096 * 8.0);
  EXPECT_EQ(dgelu->fwd.flops, grad.getFlopCount());
  EXPECT_EQ(dgelu->fwd.bytesRead, 2 * bytes);
  EXPECT_EQ(dgelu->fwd.bytesWritten, bytes);
  EXPECT_EQ(dgelu->bwdInput.flops + dgelu->bwdWeight.flops, 0);
}

/// The batch the generated models are imported with.
constexpr int64_t kBatch = 2;

/// Imports a generated model with a batch of kBatch.
OwningOpRef<ModuleOp> generate(MLIRContext &ctx, modelgen::ModelOptions opts,
                               uint64_t *parameters = nullptr) {
  opts.microBatch = kBatch;
  llvm::Expected<modelgen::GeneratedModel> model =
      modelgen::generateModel(opts);
  if (!model) {
    ADD_FAILURE() << llvm::toString(model.takeError());
    return {};
  }
  if (parameters)
    *parameters = model->parameters;
  std::string bytes = model->model.SerializeAsString();
  ONNXImportOptions io;
  io.weights = WeightPolicy::Ignore;
  return importONNXBuffer(bytes, opts.family, "", &ctx, io);
}

/// For every op the layer analysis costs: the FLOP count is the forward
/// FLOPs of the op's cost, and the analysis' per-sample forward FLOPs are
/// the ops' counts divided by the batch.
void checkAgreement(modelgen::ModelOptions opts) {
  Context c;
  OwningOpRef<ModuleOp> module = generate(c.ctx, opts);
  ASSERT_TRUE(module);
  auto func = module->lookupSymbol<func::FuncOp>("main");
  std::vector<std::vector<Operation *>> layers;
  planning::LayerAnalysisOptions options;
  options.layerOps = &layers;
  FailureOr<cost::ModelDesc> model = planning::analyzeLayers(func, options);
  ASSERT_TRUE(succeeded(model));
  ASSERT_EQ(layers.size(), model->layers.size());
  for (auto [l, ops] : llvm::enumerate(layers)) {
    double counted = 0;
    for (Operation *op : ops) {
      auto costed = dyn_cast<g::CostOpInterface>(op);
      ASSERT_TRUE(costed) << opts.family << ": "
                          << op->getName().getStringRef().str()
                          << " has no cost interface";
      std::optional<OpDesc> cost = costed.getCost(g::CostContext());
      EXPECT_EQ(costed.getFlopCount(), cost ? cost->fwd.flops : 0)
          << op->getName().getStringRef().str();
      counted += costed.getFlopCount();
    }
    double perSample = model->layers[l].total(cost::Phase::Forward).flops;
    EXPECT_NEAR(counted / kBatch, perSample, 1e-12 * counted)
        << opts.family << " layer " << l;
  }
}

TEST(CostInterface, FlopCountIsTheForwardCost) {
  modelgen::ModelOptions gpt = *modelgen::defaultOptions("gpt");
  gpt.layers = 2, gpt.hidden = 64, gpt.heads = 4, gpt.seq = 16;
  gpt.vocab = 128;
  checkAgreement(gpt);
  modelgen::ModelOptions llama = *modelgen::defaultOptions("llama");
  llama.layers = 2, llama.hidden = 64, llama.heads = 4, llama.kvHeads = 2;
  llama.ffnHidden = 172, llama.seq = 16, llama.vocab = 128;
  checkAgreement(llama);
  modelgen::ModelOptions resnet = *modelgen::defaultOptions("resnet");
  resnet.depth = 18, resnet.image = 32, resnet.classes = 10;
  checkAgreement(resnet);
}

/// A GPT's contractions by the shapes alone (Megatron-LM's count, per
/// sequence): QKV, scores, context, projection and the 4h MLP per block,
/// 24 s h^2 + 4 s^2 h, and the logits, 2 s h V. Its parameters are the
/// generator's, the tied embedding once.
TEST(LayerAnalysis, GptContractionsAndParameters) {
  Context c;
  modelgen::ModelOptions o = *modelgen::defaultOptions("gpt");
  o.layers = 3, o.hidden = 64, o.heads = 4, o.seq = 32, o.vocab = 256;
  uint64_t parameters = 0;
  OwningOpRef<ModuleOp> module = generate(c.ctx, o, &parameters);
  ASSERT_TRUE(module);
  FailureOr<cost::ModelDesc> model = planning::analyzeLayers(
      module->lookupSymbol<func::FuncOp>("main"), {DType::BF16});
  ASSERT_TRUE(succeeded(model));
  double matmul = 0;
  for (const cost::LayerDesc &layer : model->layers)
    for (const OpDesc &op : layer.ops)
      if (op.cls == cluster::OpClass::MatMul)
        matmul += op.fwd.flops;
  double s = o.seq, h = o.hidden, l = o.layers, v = o.vocab;
  double want = l * (24 * s * h * h + 4 * s * s * h) + 2 * s * h * v;
  EXPECT_NEAR(matmul, want, 1e-12 * want);
  EXPECT_EQ(model->paramCount(), double(parameters));
  // The logits read the embedding table: tied to its layer, so one device
  // holding the whole model holds the table once and the last layer alone
  // holds its own copy.
  unsigned n = model->layers.size(), tied = 0;
  for (const OpDesc &op : model->layers.back().ops)
    if (op.tiedLayer >= 0) {
      EXPECT_EQ(op.tiedLayer, 0);
      EXPECT_EQ(op.params, v * h);
      ++tied;
    }
  EXPECT_EQ(tied, 1u);
  EXPECT_EQ(cost::paramSplit(*model, 0, n, 1, 1, 1).total(),
            double(parameters));
  EXPECT_EQ(cost::paramSplit(*model, n - 1, n, 1, 1, 1).total(),
            model->layers.back().params() + v * h);
}

TEST(LayerAnalysis, InputsCrossNoStageBoundary) {
  // The labels live until the loss, past every cut, but each pipeline list
  // reads the step's inputs itself: the boundary messages carry the
  // activations alone.
  Context c;
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(R"mlir(
    func.func @main(%x: tensor<4x8xf32>, %labels: tensor<4xi64>) -> tensor<f32> {
      %w1 = graph.weight "w1" : tensor<8x8xf32>
      %h = graph.matmul %x, %w1 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
      %w2 = graph.weight "w2" : tensor<8x16xf32>
      %y = graph.matmul %h, %w2 : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
      %l = graph.softmax_cross_entropy mean %y, %labels : (tensor<4x16xf32>, tensor<4xi64>) -> tensor<f32>
      return %l : tensor<f32>
    })mlir",
                                                             &c.ctx);
  ASSERT_TRUE(module);
  FailureOr<cost::ModelDesc> model = planning::analyzeLayers(
      module->lookupSymbol<func::FuncOp>("main"), {DType::F32});
  ASSERT_TRUE(succeeded(model));
  ASSERT_GE(model->layers.size(), 2u);
  // After the first matmul: its [8] f32 row per sample.
  const cost::LayerDesc &first = model->layers.front();
  EXPECT_EQ(first.boundaryBytes, 8 * 4);
  ASSERT_EQ(first.boundaryTensors.size(), 1u);
  EXPECT_TRUE(first.boundaryTensors[0].floating);
  for (const cost::LayerDesc &layer : model->layers)
    for (const cost::LayerDesc::BoundaryTensor &t : layer.boundaryTensors)
      EXPECT_TRUE(t.floating) << "an integer input priced as a message";
}

} // namespace
