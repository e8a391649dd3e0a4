//===- StageSendsTest.cpp - Stage sends vs the priced messages --*- C++ -*-===//
//
// Part of DistOpt. The cost model prices a pipeline boundary message with
// cost::boundaryMessage; the programs send what dist-tensor-parallel,
// dist-autodiff and dist-partition leave at the stage boundary. These tests
// compile a generated GPT's training step for a pipeline cut after each
// layer and check that the bytes each rank sends per micro-batch, forward
// (the activation) and backward (its gradient), and the bytes the
// receiver all-gathers over its tensor group, are the priced bytes: under
// sequence parallelism each tensor rank's tokens (1/tp, after the embedding
// and every block layer, no gather); without it, by Megatron's
// scatter/gather (`sg=1`), each tensor rank's 1/tp and the receiver's
// gather of the whole, and with `sg=0` the whole tensor from every tensor
// rank. A boundary whole on every tensor rank under sequence parallelism
// (a CNN's, whose convolutions split by channels; a GPT's embedding whose
// vocabulary tp does not divide) goes by scatter/gather as without it.
//
//===----------------------------------------------------------------------===//
#include "test/unit/planning/ImportedModel.h"

#include "dialects/Dist/DistOps.h"
#include "dialects/Graph/GraphOps.h"
#include "lib/Cost/CostModel.h"
#include "lib/Schedule/Plan.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace distopt;

namespace {

class StageSends : public unit::ImportedModel {
public:
  StageSends() { registerAllPasses(); }

  /// The small GPT of two blocks, \p rows rows and \p vocab words
  /// (importSmallGpt).
  cost::ModelDesc importGpt(int64_t rows, int64_t vocab = 256) {
    return importSmallGpt(2, rows, vocab);
  }

  /// Whether \p op is part of action \p action of action list \p list.
  static bool runs(Operation *op, unsigned list, llvm::StringRef action) {
    auto f = op->getParentOfType<func::FuncOp>();
    auto l = f->getAttrOfType<IntegerAttr>("dist.action_list");
    auto a = op->getAttrOfType<StringAttr>("dist.action");
    return l && l.getInt() == list && a && a.getValue() == action;
  }

  /// Bytes of the activations (or their gradients) that action list
  /// \p list sends for micro-batch 0 to the neighbouring stage
  /// (`sendA0.0>1`, `sendG0.0>0`). A tied weight's gradient travels once a
  /// step, in the optimizer's actions (TiedEmbeddingTest), so everything
  /// sent here is the boundary's.
  static double sentBytes(ModuleOp m, unsigned list, llvm::StringRef action) {
    double bytes = 0;
    unsigned sends = 0;
    m.walk([&](dist::SendOp send) {
      if (!runs(send, list, action))
        return;
      auto t = cast<RankedTensorType>(send.getValue().getType());
      bytes += t.getNumElements() * t.getElementTypeBitWidth() / 8;
      ++sends;
    });
    EXPECT_GT(sends, 0u) << "list " << list << " sends no " << action.str();
    return bytes;
  }

  /// Bytes that action list \p list all-gathers while it receives
  /// micro-batch 0's activations (or gradients) from its neighbour
  /// (actions `recvA0.0>0`, `recvG0.0>1`: \p action).
  static double gatheredBytes(ModuleOp m, unsigned list,
                              llvm::StringRef action) {
    double bytes = 0;
    m.walk([&](dist::AllGatherOp gather) {
      if (!runs(gather, list, action))
        return;
      auto t = cast<RankedTensorType>(gather.getResult().getType());
      bytes += t.getNumElements() * t.getElementTypeBitWidth() / 8;
    });
    return bytes;
  }

  /// Compiles a clone of the imported module's training step under
  /// \p spec (global batch two micro-batches) and checks the sends of
  /// the boundary after layer \p last on both sides.
  void expectPricedSends(const cost::ModelDesc &model, llvm::StringRef spec,
                         unsigned last) {
    SCOPED_TRACE(llvm::formatv("{0}, cut after layer {1}", spec, last).str());
    schedule::Plan plan = llvm::cantFail(schedule::parsePlan(spec));
    OwningOpRef<ModuleOp> m = module->clone();
    PassManager pm(ctx.get());
    std::string pipeline = llvm::formatv(
        "dist-attach-cluster{{cluster=dgx-a100-80gb:1},dist-annotate-layers,"
        "dist-set-plan{{plan=\"{0},stages={1}\" batch={2}},"
        "dist-tensor-parallel,dist-autodiff{{loss=softmax-cross-entropy:"
        "labels},dist-partition",
        spec, last + 1, 2 * plan.mbs);
    ASSERT_TRUE(succeeded(parsePassPipeline(pipeline, pm))) << pipeline;
    ASSERT_TRUE(succeeded(pm.run(*m))) << pipeline;
    cost::BoundaryMessage msg =
        cost::boundaryMessage(model.layers[last], plan.mbs, plan.tp, plan.cp,
                              plan.scatterGather, plan.sp);
    EXPECT_EQ(sentBytes(*m, 0, "sendA0.0>1"), msg.bytes);
    EXPECT_EQ(gatheredBytes(*m, 1, "recvA0.0>0"), msg.gatherBytes);
    EXPECT_EQ(sentBytes(*m, 1, "sendG0.0>0"), msg.bytes);
    EXPECT_EQ(gatheredBytes(*m, 0, "recvG0.0>1"), msg.gatherBytes);
    lastMessage = msg;
  }
  /// The priced message of the last expectPricedSends.
  cost::BoundaryMessage lastMessage;

  /// expectPricedSends under \p spec and under \p spec with `sg=0`, for a
  /// boundary of \p whole bytes that is whole on every tensor rank: by
  /// scatter/gather each tensor rank sends its half and the receiver
  /// gathers the whole; with sg=0 each sends the whole tensor.
  void expectScatterGathered(const cost::ModelDesc &model, llvm::StringRef spec,
                             unsigned last, double whole) {
    expectPricedSends(model, spec, last);
    EXPECT_EQ(lastMessage.bytes, whole / 2);
    EXPECT_EQ(lastMessage.gatherBytes, whole);
    expectPricedSends(model, (spec + ",sg=0").str(), last);
    EXPECT_EQ(lastMessage.bytes, whole);
    EXPECT_EQ(lastMessage.gatherBytes, 0);
  }
};

TEST_F(StageSends, SequenceParallelStagesSendTheirTokens) {
  for (int64_t rows : {1, 2}) {
    cost::ModelDesc model = importGpt(rows);
    // The embedding, two blocks of two layers and the head.
    ASSERT_EQ(model.layers.size(), 6u);
    std::string spec =
        llvm::formatv("tp=2,pp=2,mbs={0},sp=1,schedule=1f1b", rows).str();
    // After layer 0 too: the embedding's table, tied to the head, splits
    // by vocabulary rows, so its lookup's sum is a reduce-scatter.
    for (unsigned last = 0; last + 1 < model.layers.size(); ++last) {
      ASSERT_TRUE(cost::sequenceSplits(model.layers[last], 2));
      expectPricedSends(model, spec, last);
      EXPECT_EQ(lastMessage.gatherBytes, 0);
    }
  }
}

TEST_F(StageSends, TensorParallelStagesScatterAndGather) {
  // Megatron's scatter/gather (sg=1, the default): each tensor rank sends
  // its half of the f32 [1, 32, 64] hidden state, and the receiver
  // gathers the whole; with sg=0 each sends the whole tensor.
  cost::ModelDesc model = importGpt(1);
  const double whole = 32 * 64 * 4;
  for (unsigned last = 0; last + 1 < model.layers.size(); ++last)
    expectScatterGathered(model, "tp=2,pp=2,mbs=1,schedule=1f1b", last, whole);
}

TEST_F(StageSends, SequenceParallelCnnStagesScatterAndGather) {
  // A ResNet-18's convolutions split by channels, whose sums stay
  // all-reduces: under sp no layer splits by tokens, and a boundary after a
  // block (its residual add, whole on every tensor rank) goes by
  // scatter/gather as without sp; with sg=0 whole from every tensor rank.
  modelgen::ModelOptions o = *modelgen::defaultOptions("resnet");
  o.depth = 18, o.image = 32, o.classes = 10, o.microBatch = 2;
  cost::ModelDesc model = importedAsIs(o);
  unsigned whole = 0;
  for (unsigned last = 0; last + 1 < model.layers.size(); ++last) {
    const cost::LayerDesc &layer = model.layers[last];
    ASSERT_FALSE(cost::sequenceSplits(layer, 2));
    if (llvm::any_of(layer.boundaryTensors,
                     [](const auto &t) { return t.tpSplit; }))
      continue;
    expectScatterGathered(model, "tp=2,pp=2,mbs=2,sp=1,schedule=1f1b", last,
                          layer.boundaryBytes * 2);
    ++whole;
  }
  EXPECT_GT(whole, 2u);
}

TEST_F(StageSends, SequenceParallelWholeEmbeddingScatterGathers) {
  // tp = 2 does not divide a vocabulary of 255 words: the tied table and
  // its lookup stay whole on every tensor rank (planning::splitsVocabulary),
  // so the embedding's output is whole and goes by scatter/gather; the
  // blocks' outputs split by tokens as with 256 words.
  cost::ModelDesc model = importGpt(1, 255);
  ASSERT_EQ(model.layers.size(), 6u);
  const std::string spec = "tp=2,pp=2,mbs=1,sp=1,schedule=1f1b";
  const double whole = 32 * 64 * 4;
  ASSERT_FALSE(cost::sequenceSplits(model.layers[0], 2));
  expectScatterGathered(model, spec, 0, whole);
  for (unsigned last = 1; last + 1 < model.layers.size(); ++last) {
    ASSERT_TRUE(cost::sequenceSplits(model.layers[last], 2));
    expectPricedSends(model, spec, last);
    EXPECT_EQ(lastMessage.bytes, whole / 2);
    EXPECT_EQ(lastMessage.gatherBytes, 0);
  }
}

} // namespace
