//===- VocabularySplitTest.cpp - Vocabulary splits --------------*- C++ -*-===//
//
// Part of DistOpt. dist-tensor-parallel splits an embedding table by
// vocabulary rows, and the LM head tied to it by the same rows, only where
// tp divides the vocabulary (planning::splitsVocabulary, tiedHead); else
// both stay whole on every tensor rank. The cost model follows through
// OpDesc::tpDivisor. These tests run dist-tensor-parallel at tp = 2 on a
// small GPT of 256 words and of 255 and check that one tensor rank's
// lookup table and LM head, their parameters and FLOPs, and whether the
// lookup sums over the tensor group are what the cost model prices.
//
//===----------------------------------------------------------------------===//
#include "test/unit/planning/ImportedModel.h"

#include "dialects/Dist/DistOps.h"
#include "dialects/Graph/GraphCost.h"
#include "dialects/Graph/GraphOps.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace distopt;

namespace {

class VocabularySplit : public unit::ImportedModel {
public:
  VocabularySplit() { registerAllPasses(); }

  /// One tensor rank's token lookup and LM head after dist-tensor-parallel
  /// at \p tp: the table's parameters, the head's forward FLOPs and the
  /// sums of the lookup's output over the tensor group.
  struct RankProgram {
    double tableParams = 0, headFlops = 0;
    unsigned lookupSums = 0;
  };
  RankProgram runTensorParallel(unsigned tp) {
    OwningOpRef<ModuleOp> m = module->clone();
    PassManager pm(ctx.get());
    std::string pipeline = llvm::formatv(
        "dist-attach-cluster{{cluster=dgx-a100-80gb:1},"
        "dist-set-plan{{plan=\"tp={0}\" batch=1},dist-tensor-parallel",
        tp);
    EXPECT_TRUE(succeeded(parsePassPipeline(pipeline, pm))) << pipeline;
    EXPECT_TRUE(succeeded(pm.run(*m))) << pipeline;
    RankProgram r;
    unsigned tables = 0;
    // The tied table: the one weight both a lookup and the LM head (through
    // a transpose) read.
    m->walk([&](graph::WeightOp table) {
      graph::EmbeddingOp lookup;
      graph::MatmulOp head;
      for (Operation *user : table->getUsers()) {
        if (auto em = dyn_cast<graph::EmbeddingOp>(user))
          lookup = em;
        if (auto t = dyn_cast<graph::TransposeOp>(user))
          for (Operation *next : t->getUsers())
            head = dyn_cast<graph::MatmulOp>(next);
      }
      if (!lookup || !head)
        return;
      ++tables;
      r.tableParams = graph::tensorElements(table.getType());
      graph::CostContext context;
      r.headFlops = cast<graph::CostOpInterface>(head.getOperation())
                        .getCost(context)
                        ->fwd.flops;
      // The vocabulary-parallel lookup's rows are summed over the group
      // (after its out-of-range ids are zeroed).
      for (Operation *user : lookup->getUsers())
        for (Operation *next : user->getUsers())
          r.lookupSums += isa<dist::AllReduceOp>(next);
    });
    EXPECT_EQ(tables, 1u);
    return r;
  }

  /// Checks the priced lookup and head of a GPT of \p vocab words at
  /// \p tp against the program's, and whether the vocabulary \p splits.
  void expectPricedAsRun(int64_t vocab, unsigned tp, bool splits) {
    SCOPED_TRACE(llvm::formatv("vocab {0}, tp={1}", vocab, tp).str());
    cost::ModelDesc model = importSmallGpt(1, 1, vocab);
    // The token lookup (the position table's rows are looked up at
    // constant positions: no per-sample op) and the head tied to it.
    auto lookup = llvm::find_if(model.layers.front().ops, [](const auto &op) {
      return op.cls == cluster::OpClass::Embedding && op.params > 0;
    });
    auto head = llvm::find_if(model.layers.back().ops,
                              [](const auto &op) { return op.tiedLayer == 0; });
    ASSERT_NE(lookup, model.layers.front().ops.end());
    ASSERT_NE(head, model.layers.back().ops.end());
    ASSERT_EQ(lookup->params, vocab * 64.0);
    RankProgram run = runTensorParallel(tp);
    // The table is the lookup's parameters (the head's are its tied copy).
    EXPECT_EQ(cost::paramSplit(*lookup, tp, 1, 1).total(), run.tableParams);
    EXPECT_EQ(run.tableParams, (splits ? vocab / tp : vocab) * 64.0);
    cost::ExecConfig x;
    x.tp.size = tp;
    EXPECT_EQ(head->fwd.flops * cost::CostModel::shareOf(*head, x),
              run.headFlops);
    EXPECT_EQ(run.headFlops, 2.0 * 32 * 64 * (splits ? vocab / tp : vocab));
    // The lookup's sum over the tensor group: priced where it runs.
    cluster::Cluster c = llvm::cantFail(cluster::getPreset("dgx-a100-80gb", 1));
    x.tp.perNode = tp;
    x.tp.intra = c.linkBetween(0, 1);
    cost::CostModel cm;
    cost::LayerDesc alone;
    alone.ops = {*lookup};
    EXPECT_EQ(cm.layerTimes(alone, c.devices[0], x).tpBytes > 0, splits);
    EXPECT_EQ(run.lookupSums, splits ? 1u : 0u);
  }
};

TEST_F(VocabularySplit, HeadAndLookupSplitWhereTpDividesTheVocabulary) {
  expectPricedAsRun(256, 2, /*splits=*/true);
}

TEST_F(VocabularySplit, HeadAndLookupStayWholeWhereTpDoesNotDivide) {
  // 255 words: the tied table, its lookup and the head run whole on both
  // tensor ranks, with no sum; the blocks still split.
  expectPricedAsRun(255, 2, /*splits=*/false);
}

} // namespace
