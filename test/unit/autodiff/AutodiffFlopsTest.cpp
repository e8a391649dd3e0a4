//===- AutodiffFlopsTest.cpp - Explicit vs analytic backward FLOPs --------===//
//
// Part of DistOpt. Runs --dist-autodiff on small GPT, BERT and ResNet graphs
// (generated in memory by the dist-modelgen library) and checks that the
// FLOPs of the explicit backward ops, counted by CostOpInterface, agree
// with the analytic backward costs (bwdInput + bwdWeight) that the layer
// analysis gives the cost model.
//
//===----------------------------------------------------------------------===//
#include "dialects/Graph/GraphOps.h"
#include "dist/ImportONNX.h"
#include "dist/InitAll.h"
#include "lib/ModelGen/ModelGen.h"
#include "passes/Passes.h"
#include "passes/Planning/LayerAnalysis.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace distopt;
using namespace distopt::modelgen;
using distopt::cluster::OpClass;
namespace g = distopt::graph;

namespace {

struct Flops {
  double contraction = 0; ///< matmul and convolution work
  double other = 0;
  double contractionBytes = 0; ///< bytes read + written by contractions
  double total() const { return contraction + other; }
};

/// Imports a generated model of `family` with the given sizes.
OwningOpRef<ModuleOp> generate(MLIRContext &ctx, ModelOptions opts) {
  opts.microBatch = 2;
  llvm::Expected<GeneratedModel> model = generateModel(opts);
  if (!model) {
    ADD_FAILURE() << llvm::toString(model.takeError());
    return {};
  }
  std::string bytes = model->model.SerializeAsString();
  ONNXImportOptions io;
  io.weights = WeightPolicy::Ignore;
  return importONNXBuffer(bytes, opts.family, "", &ctx, io);
}

double bytesOf(Type type) {
  auto t = cast<RankedTensorType>(type);
  return t.getNumElements() * t.getElementTypeBitWidth() / 8.0;
}

/// Bytes a contraction reads and writes (operands and result).
double trafficOf(Operation *op) {
  double b = 0;
  for (Type t : llvm::concat<Type>(op->getOperandTypes(), op->getResultTypes()))
    b += bytesOf(t);
  return b;
}

bool isContraction(Operation *op) {
  return isa<g::MatmulOp, g::ConvOp, g::ConvGradInputOp, g::ConvGradWeightOp>(
      op);
}

/// The analytic backward FLOPs of the forward function @main, restricted to
/// what its first result (the one the loss is put on) depends on: BERT's
/// pooler output gets no gradient.
Flops analytic(ModuleOp module) {
  auto original = module.lookupSymbol<func::FuncOp>("main");
  OwningOpRef<func::FuncOp> main = cast<func::FuncOp>(original->clone());
  Operation *ret = main->getBody().front().getTerminator();
  ret->setOperands(ret->getOperand(0));
  main->setType(FunctionType::get(main->getContext(), main->getArgumentTypes(),
                                  ret->getOperandTypes()));
  for (Operation &op :
       llvm::make_early_inc_range(llvm::reverse(main->getBody().front())))
    if (&op != ret && op.use_empty())
      op.erase();
  FailureOr<cost::ModelDesc> desc = planning::analyzeLayers(*main, {});
  EXPECT_TRUE(succeeded(desc));
  double samples =
      cast<RankedTensorType>(main->getArgument(0).getType()).getDimSize(0);
  Flops f;
  for (const cost::LayerDesc &layer : desc->layers)
    for (const cost::OpDesc &op : layer.ops) {
      double bwd = (op.bwdInput.flops + op.bwdWeight.flops) * samples;
      if (op.cls == OpClass::MatMul || op.cls == OpClass::Conv)
        f.contractionBytes +=
            (op.bwdInput.bytes() + op.bwdWeight.bytes()) * samples;
      (op.cls == OpClass::MatMul || op.cls == OpClass::Conv ? f.contraction
                                                            : f.other) += bwd;
    }
  return f;
}

/// Input gradients the analytic model counts but autodiff never builds:
/// those of contractions reading a function argument (the model input).
/// Their traffic: read the output gradient and the weight, write dX.
double skippedInputGrads(ModuleOp module, double &bytes) {
  double f = 0;
  bytes = 0;
  module.lookupSymbol<func::FuncOp>("main").walk([&](Operation *op) {
    if (isContraction(op) && isa<BlockArgument>(op->getOperand(0))) {
      f += cast<g::CostOpInterface>(op).getFlopCount();
      bytes += trafficOf(op);
    }
  });
  return f;
}

/// FLOPs of the backward ops of @train_step, except the gradient of the
/// loss the pass added (the forward model has no loss to compare with).
Flops explicitBackward(ModuleOp module, unsigned &weightGradOps) {
  Flops f;
  weightGradOps = 0;
  module.lookupSymbol<func::FuncOp>("train_step").walk([&](Operation *op) {
    auto phase = op->getAttrOfType<StringAttr>("graph.phase");
    if (!phase || !phase.getValue().starts_with("backward") ||
        isa<g::SoftmaxCrossEntropyGradOp>(op))
      return;
    weightGradOps += phase.getValue() == "backward_weight";
    // Separability: input-gradient work never waits for weight gradients.
    if (phase.getValue() == "backward_input")
      for (Value operand : op->getOperands())
        if (Operation *def = operand.getDefiningOp())
          if (auto p = def->getAttrOfType<StringAttr>("graph.phase")) {
            EXPECT_NE(p.getValue(), "backward_weight")
                << op->getName().getStringRef().str()
                << " (backward_input) reads a backward_weight result";
          }
    auto counted = dyn_cast<g::CostOpInterface>(op);
    ASSERT_TRUE(counted) << "backward op without a FLOP count: "
                         << op->getName().getStringRef().str();
    (isContraction(op) ? f.contraction : f.other) += counted.getFlopCount();
    if (isContraction(op))
      f.contractionBytes += trafficOf(op);
  });
  return f;
}

void check(ModelOptions opts, double otherTolerance) {
  DialectRegistry registry;
  registerAllDialects(registry);
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  OwningOpRef<ModuleOp> module = generate(ctx, opts);
  ASSERT_TRUE(module);
  Flops want = analytic(*module);
  double skippedBytes = 0;
  double skipped = skippedInputGrads(*module, skippedBytes);

  PassManager pm(&ctx);
  AutodiffPassOptions ao;
  ao.loss = "softmax-cross-entropy:labels";
  pm.addPass(createAutodiffPass(ao));
  ASSERT_TRUE(succeeded(pm.run(*module)));
  unsigned weightGradOps = 0;
  Flops got = explicitBackward(*module, weightGradOps);
  EXPECT_GT(weightGradOps, 0u);

  // Contractions carry nearly all the work: they agree exactly.
  EXPECT_NEAR(got.contraction + skipped, want.contraction,
              1e-9 * want.contraction)
      << opts.family << ": explicit " << got.contraction << " + skipped "
      << skipped << " vs analytic " << want.contraction;
  // Their memory traffic too (operands and results of each backward op).
  // The analytic conv builder is per image and the conv's cost scales it by
  // the batch, so it charges each conv's weight read (dX) and weight write
  // (dW) once per image; the explicit ops move the weight once per batch.
  double perImageWeights = 0;
  module->lookupSymbol<func::FuncOp>("main").walk([&](g::ConvOp conv) {
    double images = conv.getInput().getType().getDimSize(0);
    perImageWeights += 2 * (images - 1) * bytesOf(conv.getWeight().getType());
  });
  EXPECT_NEAR(got.contractionBytes + skippedBytes + perImageWeights,
              want.contractionBytes, 1e-9 * want.contractionBytes)
      << opts.family << ": explicit " << got.contractionBytes << " + skipped "
      << skippedBytes << " vs analytic " << want.contractionBytes << " bytes";
  // Elementwise/norm/softmax/data ops: the analytic rules charge every
  // elementwise backward 2 FLOPs per element where e.g. an addition's
  // gradient is a copy; the totals stay close.
  double total = got.total() + skipped;
  EXPECT_NEAR(total, want.total(), otherTolerance * want.total())
      << opts.family << ": explicit " << total << " (other " << got.other
      << ") vs analytic " << want.total() << " (other " << want.other << ")";
}

TEST(AutodiffFlops, Gpt) {
  ModelOptions o = *defaultOptions("gpt");
  o.layers = 2, o.hidden = 64, o.heads = 4, o.seq = 16, o.vocab = 128;
  check(o, 0.01);
}

TEST(AutodiffFlops, Bert) {
  ModelOptions o = *defaultOptions("bert");
  o.layers = 2, o.hidden = 64, o.heads = 4, o.seq = 16, o.vocab = 128;
  check(o, 0.01);
}

TEST(AutodiffFlops, ResNet) {
  ModelOptions o = *defaultOptions("resnet");
  o.depth = 18, o.image = 32, o.classes = 10;
  check(o, 0.01);
}

} // namespace
