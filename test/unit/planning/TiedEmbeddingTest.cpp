//===- TiedEmbeddingTest.cpp - A tied table under tp vs its costs -*- C++
//-*-===//
//
// Part of DistOpt. dist-modelgen's GPT ties its LM head to the token
// embedding (the head reads the table transposed). The cost model prices
// both uses split by tp, as Megatron runs them: the lookup vocabulary-
// parallel (its rows' share of the table, an all-reduce of its output) and
// the head column-parallel (its columns' share of the FLOPs and of the
// table). These tests compile the planned function with dist-tensor-parallel
// and check that one tensor rank's program does what the costs say. Under
// pp the lookup and the head run on different ranks, which exchange the
// table's gradient part and the updated rows once a step
// (schedule::tiedExchange prices them; dist-partition sends them).
//
//===----------------------------------------------------------------------===//
#include "test/unit/planning/ImportedModel.h"

#include "dialects/Dist/DistDialect.h"
#include "dialects/Dist/DistOps.h"
#include "dialects/Graph/GraphOps.h"
#include "lib/Cost/CostModel.h"
#include "lib/Schedule/TiedExchange.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace distopt;
namespace g = distopt::graph;

namespace {

double elements(Value v) {
  return cast<RankedTensorType>(v.getType()).getNumElements();
}

double bytes(Value v) {
  auto t = cast<RankedTensorType>(v.getType());
  return t.getNumElements() * t.getElementTypeBitWidth() / 8;
}

class TiedEmbedding : public unit::ImportedModel {
public:
  TiedEmbedding() { registerAllPasses(); }

  /// The small GPT of one block and \p rows rows (importSmallGpt).
  cost::ModelDesc importGpt(int64_t rows) { return importSmallGpt(1, rows); }

  /// A clone of the imported module as one tensor rank of \p spec runs
  /// its planned function (a global batch of one micro-batch).
  OwningOpRef<ModuleOp> tensorParallel(llvm::StringRef spec, int64_t batch) {
    OwningOpRef<ModuleOp> m = module->clone();
    PassManager pm(ctx.get());
    std::string pipeline = llvm::formatv(
        "dist-attach-cluster{{cluster=dgx-a100-80gb:1},dist-annotate-layers,"
        "dist-set-plan{{plan=\"{0}\" batch={1}},dist-tensor-parallel",
        spec, batch);
    EXPECT_TRUE(succeeded(parsePassPipeline(pipeline, pm))) << pipeline;
    EXPECT_TRUE(succeeded(pm.run(*m))) << pipeline;
    return m;
  }
};

TEST_F(TiedEmbedding, BothUsesRunSplitAsPriced) {
  const unsigned tp = 2, rows = 2;
  cost::ModelDesc model = importGpt(rows);
  // The lookup (layer 0) owns the table; the head (last layer) is tied
  // to it.
  const cost::OpDesc *lookup = nullptr, *head = nullptr;
  for (const cost::OpDesc &op : model.layers.front().ops)
    if (op.cls == cluster::OpClass::Embedding && op.params > 0)
      lookup = &op;
  for (const cost::OpDesc &op : model.layers.back().ops)
    if (op.tiedLayer == 0)
      head = &op;
  ASSERT_TRUE(lookup && head);
  ASSERT_EQ(lookup->params, 256 * 64);
  EXPECT_EQ(lookup->tp, cost::TpMode::Split);
  EXPECT_EQ(head->tp, cost::TpMode::Split);

  OwningOpRef<ModuleOp> m =
      tensorParallel(llvm::formatv("tp={0},mbs={1}", tp, rows).str(), rows);
  auto main = (*m).lookupSymbol<func::FuncOp>("main");
  dist::DistDialect::TpAttrHelper role(ctx.get());
  auto layerOf = [](Operation *op) {
    auto l = op->getAttrOfType<IntegerAttr>("dist.layer");
    return l ? l.getInt() : -1;
  };
  g::EmbeddingOp em;
  g::MatmulOp logits;
  double lookupSums = 0;
  main.walk([&](Operation *op) {
    if (auto e = dyn_cast<g::EmbeddingOp>(op); e && layerOf(op) == 0)
      em = e;
    if (auto mm = dyn_cast<g::MatmulOp>(op);
        mm && layerOf(op) == int64_t(model.layers.size()) - 1)
      logits = mm;
    if (auto sum = dyn_cast<dist::AllReduceOp>(op); sum && layerOf(op) == 0)
      lookupSums += bytes(sum.getResult());
  });
  ASSERT_TRUE(em && logits);
  EXPECT_EQ(role.getAttr(em).getValue(), dist::TensorParallelRole::Row);
  EXPECT_EQ(role.getAttr(logits).getValue(), dist::TensorParallelRole::Column);

  cost::ExecConfig x;
  x.tp.size = tp, x.mbs = rows;
  // Parameters: each use reads the rank's share of the one table.
  EXPECT_EQ(elements(em.getTable()), cost::paramSplit(*lookup, tp, 1).total());
  EXPECT_EQ(elements(logits.getRhs()), cost::paramSplit(*head, tp, 1).total());
  // The head's FLOPs: the rank's columns of the logits.
  auto out = cast<RankedTensorType>(logits.getType());
  double k =
      cast<RankedTensorType>(logits.getLhs().getType()).getShape().back();
  EXPECT_EQ(2 * out.getNumElements() * k,
            head->fwd.flops * cost::CostModel::shareOf(*head, x));
  // The lookup's all-reduce: the rows of the micro-batch, once.
  EXPECT_EQ(lookupSums, lookup->tpAllReduceFwdBytes * rows);
}

TEST_F(TiedEmbedding, ExchangedOnceAStepAsPriced) {
  // Two blocks (layers 1-4), cut before the second: the lookup on rank 0,
  // the head on rank 1; four micro-batches of one row.
  const unsigned rows = 1, microbatches = 4;
  cost::ModelDesc model = importSmallGpt(2, rows);
  ASSERT_EQ(model.layers.size(), 6u);
  for (const char *spec : {"tp=2,pp=2,mbs=1,schedule=1f1b,stages=3",
                           "pp=2,mbs=1,schedule=gpipe,stages=3",
                           "dp=2,tp=2,pp=2,mbs=1,zero=1,schedule=1f1b,"
                           "stages=3"}) {
    SCOPED_TRACE(spec);
    schedule::Plan plan = llvm::cantFail(schedule::parsePlan(spec));
    cluster::Cluster c = llvm::cantFail(cluster::getPreset("dgx-a100-80gb", 1));
    const unsigned batch = microbatches * rows * plan.dp;
    ASSERT_FALSE(static_cast<bool>(
        schedule::finalizePlan(plan, model, c, batch, cost::CostModel())));
    OwningOpRef<ModuleOp> m = module->clone();
    PassManager pm(ctx.get());
    std::string pipeline = llvm::formatv(
        "dist-attach-cluster{{cluster=dgx-a100-80gb:1},dist-annotate-layers,"
        "dist-set-plan{{plan=\"{0}\" batch={1}},dist-tensor-parallel,"
        "dist-autodiff{{loss=softmax-cross-entropy:labels},dist-partition",
        spec, batch);
    ASSERT_TRUE(succeeded(parsePassPipeline(pipeline, pm))) << pipeline;
    ASSERT_TRUE(succeeded(pm.run(*m))) << pipeline;

    // What each list sends once a step outside the pipeline's boundary
    // actions: the table's gradient part (rank 1) and its updated rows
    // (rank 0), the loss (a scalar) aside.
    double sent[2] = {0, 0};
    unsigned sends[2] = {0, 0};
    (*m).walk([&](dist::SendOp send) {
      auto f = send->getParentOfType<func::FuncOp>();
      auto list = f->getAttrOfType<IntegerAttr>("dist.action_list");
      auto action = send->getAttrOfType<StringAttr>("dist.action");
      auto t = cast<RankedTensorType>(send.getValue().getType());
      if (!list || t.getRank() == 0 ||
          (action && action.getValue().starts_with("send")))
        return;
      sent[list.getInt()] += bytes(send.getValue());
      ++sends[list.getInt()];
    });
    schedule::TiedExchange priced = schedule::tiedExchange(
        plan, model, c, cost::CostModel(), /*elemBytes=*/4);
    // The head's stage holds the rank's rows of the table, which it reads
    // and does not update.
    const double shard = 256.0 * 64 / plan.tp;
    EXPECT_EQ(priced.copies[0].total(), 0);
    EXPECT_EQ(priced.copies[1].total(), shard);
    for (unsigned r : {0u, 1u}) {
      EXPECT_EQ(sends[r], 1u) << "rank " << r;
      EXPECT_EQ(sent[r], shard * 4) << "rank " << r;
      EXPECT_EQ(priced.sent(r), sent[r]) << "rank " << r;
      EXPECT_GT(priced.time[r], 0) << "rank " << r;
    }
  }
}

TEST_F(TiedEmbedding, SimulatedTrafficHasTheExchange) {
  // The tied GPT at tp=2 x pp=2 (dp=1: no data-parallel sync, which the
  // copy would change) against the same model with the head's table its
  // own: the iteration's traffic differs by the two once-a-step messages
  // of every tensor rank, the head's part and the updated rows, each the
  // rank's 128 x 64 rows in f32, over NVLink.
  cost::ModelDesc tied = importSmallGpt(2, 1);
  cost::ModelDesc untied = tied;
  unsigned heads = 0;
  for (cost::LayerDesc &layer : untied.layers)
    for (cost::OpDesc &op : layer.ops)
      if (op.tiedLayer >= 0) {
        op.tiedLayer = -1;
        ++heads;
      }
  ASSERT_EQ(heads, 1u);
  cluster::Cluster c = llvm::cantFail(cluster::getPreset("dgx-a100-80gb", 1));
  cost::CostModel cm;
  schedule::Plan plan = llvm::cantFail(
      schedule::parsePlan("tp=2,pp=2,mbs=1,schedule=1f1b,stages=3"));
  llvm::Expected<sim::PlanSimulation> with =
      sim::simulatePlan(tied, c, plan, 4, cm);
  llvm::Expected<sim::PlanSimulation> without =
      sim::simulatePlan(untied, c, plan, 4, cm);
  ASSERT_TRUE(static_cast<bool>(with)) << llvm::toString(with.takeError());
  ASSERT_TRUE(static_cast<bool>(without))
      << llvm::toString(without.takeError());
  const double shard = 256.0 * 64 / plan.tp;
  const double exchange = 2 /*messages*/ * plan.tp * shard * 4;
  const std::vector<double> &a = with->result.bytesPerLevel,
                            &b = without->result.bytesPerLevel;
  ASSERT_EQ(a.size(), 2u);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_GT(b[0], 0); // the boundaries and tensor-parallel sums
  EXPECT_DOUBLE_EQ(a[0] - b[0], exchange);
  EXPECT_DOUBLE_EQ(a[1], b[1]);
  // Each list's share: one message of its tensor ranks' rows.
  for (const schedule::DeviceCost &dc : with->costs.devices)
    EXPECT_DOUBLE_EQ(dc.tiedBytes[0] * dc.devicesInGroup, exchange / 2);
}

} // namespace
