//===- AsyncZeroGradientsTest.cpp - ZeRO gradients, async, priced -*- C++ -*-//
//
// Part of DistOpt. PipeDream and PipeMare update after every micro-batch,
// so a stage's gradient lives from its backward to its update. The
// planner prices it whole without ZeRO and with ZeRO-1 (the list's
// reduce-scatter takes the backward's whole gradient) and as the shard
// under ZeRO-2, where dist-partition moves each reduce-scatter into the
// backward call (its `_shard` variant), so the call returns the shard.
// Under the schedules that sum the step's gradients ZeRO-2's backward
// calls return blocks the same way. These tests compile a small MLP's
// training step under dp=2 x pp=2 and check that the gradients a backward
// call hands a list are the planner's per-device gradient bytes.
//
//===----------------------------------------------------------------------===//
#include "test/unit/planning/ImportedModel.h"

#include "dialects/Dist/DistOps.h"
#include "dialects/Graph/GraphOps.h"
#include "lib/Cost/CostModel.h"
#include "lib/Schedule/Plan.h"
#include "lib/Sim/Simulator.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace distopt;

namespace {

class AsyncZeroGradients : public unit::ImportedModel {
public:
  AsyncZeroGradients() { registerAllPasses(); }

  /// Bytes of the stage-call results of micro-batch 0 the updates of \p fn
  /// read as their gradients (through the list's reduce-scatter or
  /// all-reduce and their flatten and pad, and a running sum's first
  /// operand and its scale to the mean, where there are such): the
  /// gradients the list holds between a backward and its update.
  static double gradientBytes(func::FuncOp fn) {
    double bytes = 0;
    fn.walk([&](graph::AdamUpdateOp adam) {
      Value g = adam.getGrad();
      while (Operation *def = g.getDefiningOp()) {
        if (!isa<dist::ReduceScatterOp, dist::AllReduceOp, graph::ReshapeOp,
                 graph::PadOp, graph::BinaryOp>(def))
          break;
        g = def->getOperand(0);
      }
      auto call = g.getDefiningOp<func::CallOp>();
      ASSERT_TRUE(call) << "an update's gradient comes from no stage call";
      auto mb = call->getAttrOfType<IntegerAttr>("dist.microbatch");
      ASSERT_TRUE(mb);
      if (mb.getInt() != 0)
        return;
      auto t = cast<RankedTensorType>(g.getType());
      bytes += t.getNumElements() * t.getElementTypeBitWidth() / 8;
    });
    return bytes;
  }
};

/// fp32 Adam: 4 bytes of gradient per parameter, over dp under ZeRO-2.
/// Under 1F1B and 2BW, which sum the step's gradients, ZeRO-2's backward
/// calls return blocks too (the list sums them).
TEST_F(AsyncZeroGradients, ListsHoldThePlannersGradientBytes) {
  modelgen::ModelOptions o = *modelgen::defaultOptions("mlp");
  o.layers = 4, o.hidden = 16, o.input = 8, o.classes = 4, o.microBatch = 2;
  cost::ModelDesc model = importedAsIs(o);
  llvm::Expected<cluster::Cluster> cl = cluster::getPreset("cpu-xeon-2s", 2);
  ASSERT_TRUE(static_cast<bool>(cl)) << llvm::toString(cl.takeError());
  cost::MemoryConfig fp32Adam;
  fp32Adam.mixedPrecision = false;
  fp32Adam.optimizer = cost::Optimizer::Adam;
  std::vector<std::string> specs;
  for (const char *kind : {"pipedream", "pipemare"})
    for (unsigned zero : {0u, 1u, 2u})
      specs.push_back(
          llvm::formatv("dp=2,pp=2,mbs=2,schedule={0},zero={1}", kind, zero));
  for (const char *kind : {"1f1b", "2bw"})
    specs.push_back(llvm::formatv("dp=2,pp=2,mbs=2,schedule={0},zero=2", kind));
  for (const std::string &spec : specs) {
    SCOPED_TRACE(spec);
    schedule::Plan plan = llvm::cantFail(schedule::parsePlan(spec));
    llvm::Expected<sim::PlanSimulation> ps = sim::simulatePlan(
        model, *cl, plan, 16, cost::CostModel(), {}, fp32Adam);
    ASSERT_TRUE(static_cast<bool>(ps)) << llvm::toString(ps.takeError());
    ASSERT_EQ(ps->costs.devices.size(), 2u);

    importedAsIs(o);
    PassManager pm(ctx.get());
    std::string pipeline = llvm::formatv(
        "dist-attach-cluster{{cluster=cpu-xeon-2s:2},dist-annotate-layers,"
        "dist-set-plan{{plan=\"{0}\" batch=16},dist-autodiff{{loss=mse:t "
        "optimizer=adam},dist-partition",
        spec);
    ASSERT_TRUE(succeeded(parsePassPipeline(pipeline, pm))) << pipeline;
    ASSERT_TRUE(succeeded(pm.run(*module))) << pipeline;
    unsigned lists = 0;
    module->walk([&](func::FuncOp fn) {
      auto list = fn->getAttrOfType<IntegerAttr>("dist.action_list");
      if (!list)
        return;
      ++lists;
      const cost::MemoryBreakdown &priced =
          ps->costs.devices[list.getInt()].staticMemory;
      EXPECT_GT(priced.grads, 0);
      EXPECT_EQ(gradientBytes(fn), priced.grads)
          << "@" << fn.getSymName().str();
    });
    EXPECT_EQ(lists, 2u);
  }
}

} // namespace
