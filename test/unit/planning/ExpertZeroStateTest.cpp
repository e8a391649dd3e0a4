//===- ExpertZeroStateTest.cpp - ZeRO state under ep, priced -*- C++ -*-===//
//
// Part of DistOpt. Under expert parallelism the planner prices each
// device's optimizer state as the dense weights' state sharded over the
// stage's dp replicas and the experts' over the dp / ep ranks that hold
// the same experts (cost::staticMemory); the programs shard it so
// (dist-partition's ZeRO, the experts' blocks a third level of parts under
// tensor parallelism: a block of a tensor part of an expert part). These
// tests compile the small MoE LLaMA's training step (run_distributed.py's
// llama_moe fixture) under plans with ZeRO and ep and check that the
// optimizer state one rank allocates is the planner's per-device bytes.
//
//===----------------------------------------------------------------------===//
#include "test/unit/planning/ImportedModel.h"

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

class ExpertZeroState : public unit::ImportedModel {
public:
  ExpertZeroState() { registerAllPasses(); }

  /// Bytes of the momentum buffers the updates of \p fn read: the
  /// optimizer state one rank of its action list holds (the manifest's
  /// `optimizer_state_bytes`).
  static double momentumBytes(func::FuncOp fn) {
    double bytes = 0;
    fn.walk([&](graph::SgdUpdateOp sgd) {
      if (!sgd.getMomentumBuf())
        return;
      auto t = cast<RankedTensorType>(sgd.getMomentumBuf().getType());
      bytes += t.getNumElements() * t.getElementTypeBitWidth() / 8;
    });
    return bytes;
  }
};

/// fp32 SGD with momentum: 4 bytes of state per parameter, the dense
/// weights' over dp (and their tensor parts over tp), the experts' over
/// ep and tp and sharded over dp / ep.
TEST_F(ExpertZeroState, OptimizerStateIsThePlannersPerDeviceBytes) {
  const char *plans[] = {
      "dp=4,tp=2,ep=2,mbs=1,zero=1", "dp=4,tp=2,ep=2,mbs=1,zero=2",
      "dp=4,tp=2,ep=2,mbs=1,zero=3", "dp=4,ep=2,mbs=1,zero=1",
      "dp=2,tp=2,ep=2,mbs=1,zero=1", "dp=4,tp=2,ep=2,mbs=1"};
  llvm::Expected<cluster::Cluster> cl = cluster::getPreset("dgx-h100", 1);
  ASSERT_TRUE(static_cast<bool>(cl)) << llvm::toString(cl.takeError());
  cost::MemoryConfig fp32Momentum;
  fp32Momentum.mixedPrecision = false;
  fp32Momentum.optimizer = cost::Optimizer::SGDMomentum;
  for (const char *spec : plans) {
    SCOPED_TRACE(spec);
    cost::ModelDesc model = imported(unit::tinyMoe());
    schedule::Plan plan = llvm::cantFail(schedule::parsePlan(spec));
    llvm::Expected<sim::PlanSimulation> ps = sim::simulatePlan(
        model, *cl, plan, plan.dp, cost::CostModel(), {}, fp32Momentum);
    ASSERT_TRUE(static_cast<bool>(ps)) << llvm::toString(ps.takeError());
    ASSERT_EQ(ps->costs.devices.size(), 1u);
    const double priced = ps->costs.devices[0].staticMemory.optimizer;

    PassManager pm(ctx.get());
    std::string pipeline = llvm::formatv(
        "dist-attach-cluster{{cluster=dgx-h100:1},dist-annotate-layers,"
        "dist-set-plan{{plan=\"{0}\" batch={1}},dist-tensor-parallel,"
        "dist-expert-parallel,dist-autodiff{{loss=softmax-cross-entropy:"
        "labels optimizer=momentum},dist-partition",
        spec, plan.dp);
    ASSERT_TRUE(succeeded(parsePassPipeline(pipeline, pm))) << pipeline;
    ASSERT_TRUE(succeeded(pm.run(*module))) << pipeline;
    // One action list: every rank runs its program, each on its own
    // blocks of the same sizes.
    unsigned lists = 0;
    module->walk([&](func::FuncOp fn) {
      if (!fn->hasAttr("dist.action_list"))
        return;
      ++lists;
      EXPECT_EQ(momentumBytes(fn), priced) << "@" << fn.getSymName().str();
    });
    EXPECT_EQ(lists, 1u);
    EXPECT_GT(priced, 0);
  }
}

} // namespace
