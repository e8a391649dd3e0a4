//===- ImportedModel.h - Generated models through the adapter ---*- C++ -*-===//
//
// Part of DistOpt. The product path's costs of a dist-modelgen model for
// the tests that compare them with the analytic builders: generate, import
// (graph-only weights) and run the layer analysis in bf16.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_TEST_UNIT_PLANNING_IMPORTEDMODEL_H
#define DIST_TEST_UNIT_PLANNING_IMPORTEDMODEL_H

#include "dialects/Dist/DistDialect.h"
#include "dialects/Dist/DistOps.h"
#include "dialects/Graph/GraphCost.h"
#include "dialects/Graph/GraphOps.h"
#include "dist/ImportONNX.h"
#include "dist/InitAll.h"
#include "lib/Cluster/Cluster.h"
#include "lib/Cost/CostModel.h"
#include "lib/Cost/LlmModels.h"
#include "lib/ModelGen/ModelGen.h"
#include "lib/Schedule/Plan.h"
#include "lib/Sim/Simulator.h"
#include "passes/Passes.h"
#include "passes/Planning/LayerAnalysis.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

namespace distopt::unit {

/// dist-modelgen's llama options for \p c: widths, experts and latent
/// attention.
inline modelgen::ModelOptions llamaOptions(const cost::LlmConfig &c) {
  modelgen::ModelOptions o = *modelgen::defaultOptions("llama");
  o.layers = c.layers, o.hidden = c.hidden, o.heads = c.heads;
  o.kvHeads = c.kvHeads, o.ffnHidden = c.ffnHidden, o.seq = c.seqLen;
  o.vocab = c.vocab, o.experts = c.experts, o.topK = c.topK;
  o.expertFfn = c.expertFfn, o.sharedExperts = c.sharedExperts;
  o.denseLayers = c.denseLayers, o.headDim = c.headDim;
  if (c.mla()) {
    o.kvHeads = 0;
    o.qLoraRank = c.qLoraRank, o.kvLoraRank = c.kvLoraRank;
    o.qkNopeHeadDim = c.qkNopeDim, o.qkRopeHeadDim = c.qkRopeDim;
    o.vHeadDim = c.vHeadDim;
  }
  return o;
}

/// run_distributed.py's MoE LLaMA with two key/value heads (its tensor-
/// parallel variant): 4 experts of width 16, top-2 (capacity 4 of 8
/// tokens), one shared expert, the second of two blocks.
inline cost::LlmConfig tinyMoe() {
  cost::LlmConfig c;
  c.name = "tiny-moe";
  c.layers = 2, c.hidden = 16, c.heads = 2, c.kvHeads = 2;
  c.ffnHidden = 32, c.seqLen = 8, c.vocab = 64;
  c.experts = 4, c.topK = 2, c.expertFfn = 16;
  c.sharedExperts = 1, c.denseLayers = 1;
  return c;
}

/// An MLIR context with every dialect, and the last module imported.
class ImportedModel : public ::testing::Test {
public:
  ImportedModel() {
    registerAllDialects(registry);
    ctx = std::make_unique<mlir::MLIRContext>(registry);
    ctx->loadAllAvailableDialects();
  }

  /// The graph of \p o (batch pinned to 1; \p edit may change the ONNX
  /// first) costed in bf16, with \p fused attention kernels.
  cost::ModelDesc
  imported(modelgen::ModelOptions o, bool fused,
           llvm::function_ref<void(onnx::ModelProto &)> edit = {}) {
    o.microBatch = 1;
    llvm::Expected<modelgen::GeneratedModel> gen = modelgen::generateModel(o);
    EXPECT_TRUE(static_cast<bool>(gen)) << llvm::toString(gen.takeError());
    if (edit)
      edit(gen->model);
    std::string bytes = gen->model.SerializeAsString();
    ONNXImportOptions io;
    io.weights = WeightPolicy::Ignore;
    module = importONNXBuffer(bytes, o.family, "", ctx.get(), io);
    EXPECT_TRUE(module);
    auto main = module->lookupSymbol<mlir::func::FuncOp>("main");
    planning::LayerAnalysisOptions go;
    go.computeType = cluster::DType::BF16;
    go.fusedAttention = fused;
    mlir::FailureOr<cost::ModelDesc> m = planning::analyzeLayers(main, go);
    EXPECT_TRUE(mlir::succeeded(m));
    return *m;
  }

  /// The graph dist-modelgen writes for the LLaMA \p c (f32, batch 1),
  /// costed in bf16 with fused attention.
  cost::ModelDesc
  imported(const cost::LlmConfig &c,
           llvm::function_ref<void(onnx::ModelProto &)> edit = {}) {
    return imported(llamaOptions(c), /*fused=*/true, edit);
  }

  /// The graph of \p o imported as it is (f32, its batch as \p o pins
  /// it) and its layers as dist-compile's planner sees them.
  cost::ModelDesc importedAsIs(const modelgen::ModelOptions &o) {
    llvm::Expected<modelgen::GeneratedModel> gen = modelgen::generateModel(o);
    EXPECT_TRUE(static_cast<bool>(gen)) << llvm::toString(gen.takeError());
    std::string bytes = gen->model.SerializeAsString();
    module = importONNXBuffer(bytes, o.family, "", ctx.get(), {});
    EXPECT_TRUE(module);
    mlir::FailureOr<cost::ModelDesc> m = planning::analyzeLayers(
        module->lookupSymbol<mlir::func::FuncOp>("main"), {});
    EXPECT_TRUE(mlir::succeeded(m));
    return *m;
  }

  /// A small dist-modelgen GPT (hidden 64, 4 heads, 32 tokens, \p vocab
  /// words; its head tied to the embedding) of \p layers blocks and \p rows
  /// rows, imported as it is (importedAsIs).
  cost::ModelDesc importSmallGpt(unsigned layers, int64_t rows,
                                 int64_t vocab = 256) {
    modelgen::ModelOptions o = *modelgen::defaultOptions("gpt");
    o.layers = layers, o.hidden = 64, o.heads = 4, o.seq = 32, o.vocab = vocab;
    o.microBatch = rows;
    return importedAsIs(o);
  }

protected:
  /// Runs what dist-compile runs to distribute the imported module under
  /// \p plan (a batch of \p batch): the context, tensor and expert
  /// parallelism passes.
  mlir::LogicalResult distribute(llvm::StringRef plan, unsigned batch) {
    mlir::PassManager pm(ctx.get());
    pm.addPass(createAnnotateLayersPass());
    AttachClusterPassOptions cluster;
    cluster.cluster = "dgx-h100";
    pm.addPass(createAttachClusterPass(cluster));
    SetPlanPassOptions set;
    set.plan = plan.str();
    set.batch = batch;
    pm.addPass(createSetPlanPass(set));
    pm.addPass(createContextParallelPass());
    pm.addPass(createTensorParallelPass());
    pm.addPass(createExpertParallelPass());
    return pm.run(*module);
  }

  mlir::DialectRegistry registry;
  std::unique_ptr<mlir::MLIRContext> ctx;
  mlir::OwningOpRef<mlir::ModuleOp> module;
};

/// The collectives one rank's forward runs in cost-model layer \p layer of
/// \p func, in elements: what it sends through all-to-alls, and the whole
/// tensors it all-gathers and reduce-scatters (an all-reduce is both); the
/// activations and the weights it reads through a dist.tp_copy (their
/// gradients are all-reduced in the backward), and the weights (or a
/// weight's rows looked up) it slices to its tokens (their gradients are
/// all-gathered in the backward). With
/// \p over only those over that group of ranks (rank 0's).
struct IrCollectives {
  double allToAll = 0, gathered = 0, scattered = 0;
  double copied = 0, weightsCopied = 0, weightsSliced = 0;
  unsigned gathers = 0, scatters = 0;
};
inline IrCollectives collectivesOf(mlir::func::FuncOp func, int64_t layer,
                                   llvm::ArrayRef<int64_t> over = {}) {
  using namespace mlir;
  IrCollectives c;
  dist::DistDialect::LayerAttrHelper layerOf(func.getContext());
  auto elements = [](Value v) {
    return double(cast<RankedTensorType>(v.getType()).getNumElements());
  };
  func.walk([&](Operation *op) {
    IntegerAttr l = layerOf.getAttr(op);
    if (!l || l.getInt() != layer)
      return;
    auto group = op->getAttrOfType<DenseI64ArrayAttr>("group");
    if (!over.empty() && (!group || group.asArrayRef() != over))
      return;
    if (auto a = dyn_cast<dist::AllToAllOp>(op)) {
      c.allToAll += elements(a.getInput());
    } else if (auto g = dyn_cast<dist::AllGatherOp>(op)) {
      c.gathered += elements(g.getResult()), ++c.gathers;
    } else if (auto r = dyn_cast<dist::ReduceScatterOp>(op)) {
      c.scattered += elements(r.getInput()), ++c.scatters;
    } else if (auto r = dyn_cast<dist::AllReduceOp>(op)) {
      c.gathered += elements(r.getInput()), ++c.gathers;
      c.scattered += elements(r.getInput()), ++c.scatters;
    } else if (auto t = dyn_cast<dist::TpCopyOp>(op)) {
      (t.getInput().getDefiningOp<graph::WeightOp>() ? c.weightsCopied
                                                     : c.copied) +=
          elements(t.getInput());
    } else if (auto s = dyn_cast<dist::AllSliceOp>(op)) {
      // A weight, or the rows a lookup of constant ids reads from one (a
      // position table).
      Value in = s.getInput();
      if (auto rows = in.getDefiningOp<graph::EmbeddingOp>())
        in = rows.getTable();
      if (in.getDefiningOp<graph::WeightOp>())
        c.weightsSliced += elements(s.getInput());
    }
  });
  return c;
}

/// Expects each layer of \p graph, whose distributed form under \p x is
/// \p func, to sum over the tensor group the weight gradients the programs
/// sum: CostModel::weightGradSumBytes of the layer is the elements of the
/// weights it reads through a dist.tp_copy over rank 0's tensor group
/// \p group, \p elementBytes each (the graph's cost dtype), and
/// CostModel::weightGradGatherBytes those of the weights it slices to the
/// rank's tokens (a position table). Returns the elements summed over all
/// layers.
inline double expectWeightSumsAsRun(const cost::ModelDesc &graph,
                                    mlir::func::FuncOp func,
                                    const cost::ExecConfig &x,
                                    llvm::ArrayRef<int64_t> group,
                                    double elementBytes) {
  double all = 0;
  for (unsigned l = 0; l < graph.layers.size(); ++l) {
    IrCollectives c = collectivesOf(func, l, group);
    EXPECT_DOUBLE_EQ(cost::CostModel::weightGradSumBytes(graph.layers[l], x),
                     c.weightsCopied * elementBytes)
        << "layer " << l;
    EXPECT_DOUBLE_EQ(cost::CostModel::weightGradGatherBytes(graph.layers[l], x),
                     c.weightsSliced * elementBytes)
        << "layer " << l;
    all += c.weightsCopied;
  }
  return all;
}

/// One rank's cost of each op of \p func's layer \p layer that \p pick
/// selects, as the cost model's op interface costs it (bf16, as
/// ImportedModel's analysis), and the parameters of its weights.
struct RankOps {
  cost::PhaseCost fwd, bwdInput, bwdWeight;
  double params = 0;
  unsigned ops = 0;
  std::vector<cost::OpDesc> descs;
};
inline RankOps rankOps(mlir::func::FuncOp func, int64_t layer,
                       llvm::function_ref<bool(graph::MatmulOp)> pick) {
  using namespace mlir;
  RankOps r;
  dist::DistDialect::LayerAttrHelper layerOf(func.getContext());
  graph::CostContext context;
  context.computeType = cluster::DType::BF16;
  func.walk([&](graph::MatmulOp m) {
    IntegerAttr l = layerOf.getAttr(m);
    if (!l || l.getInt() != layer || !pick(m))
      return;
    std::optional<cost::OpDesc> d =
        cast<graph::CostOpInterface>(m.getOperation()).getCost(context);
    ASSERT_TRUE(d.has_value());
    r.fwd += d->fwd, r.bwdInput += d->bwdInput, r.bwdWeight += d->bwdWeight;
    r.params += graph::tensorElements(m.getRhs().getType());
    ++r.ops;
    r.descs.push_back(*d);
  });
  return r;
}

/// Expects the priced FLOPs of \p ops in each phase (each scaled by its
/// share of the device under \p x) to be \p ir's, and their bytes when
/// \p bytes: the cost model scales an op's weight bytes with its tokens
/// (costs are per sample), so they match the program's where the device
/// runs one whole sample.
inline void expectPricedAsRun(llvm::ArrayRef<cost::OpDesc> ops,
                              const cost::ExecConfig &x, const RankOps &ir,
                              bool bytes) {
  using cost::Phase;
  for (Phase ph :
       {Phase::Forward, Phase::BackwardInput, Phase::BackwardWeight}) {
    SCOPED_TRACE(static_cast<int>(ph));
    cost::PhaseCost priced;
    for (const cost::OpDesc &op : ops)
      priced += op.phase(ph).scaled(cost::CostModel::shareOf(op, x));
    const cost::PhaseCost &run = ph == Phase::Forward         ? ir.fwd
                                 : ph == Phase::BackwardInput ? ir.bwdInput
                                                              : ir.bwdWeight;
    EXPECT_DOUBLE_EQ(priced.flops, run.flops);
    if (!bytes)
      continue;
    EXPECT_DOUBLE_EQ(priced.bytesRead, run.bytesRead);
    EXPECT_DOUBLE_EQ(priced.bytesWritten, run.bytesWritten);
  }
}

/// The imported graph's simulation \p g agrees with the analytic model's
/// \p a within 2% in iteration time and every list's peak memory.
inline void expectWithin2Percent(const sim::SimResult &g,
                                 const sim::SimResult &a) {
  double gt = g.iterationTime, at = a.iterationTime;
  EXPECT_NEAR(gt, at, 0.02 * at) << "graph " << gt << " s, analytic " << at;
  ASSERT_EQ(g.peakMemoryBytes.size(), a.peakMemoryBytes.size());
  for (unsigned s = 0; s < g.peakMemoryBytes.size(); ++s) {
    double gm = g.peakMemoryBytes[s], am = a.peakMemoryBytes[s];
    EXPECT_NEAR(gm, am, 0.02 * am)
        << "list " << s << ": graph " << gm << " B, analytic " << am;
  }
}

/// buildLlm of \p c without its loss: dist-modelgen's graph ends at the
/// logits.
inline cost::ModelDesc analyticWithoutLoss(const cost::LlmConfig &c) {
  cost::ModelDesc m = cost::buildLlm(c);
  std::vector<cost::OpDesc> &head = m.layers.back().ops;
  EXPECT_EQ(head.back().cls, cluster::OpClass::Loss);
  head.pop_back();
  return m;
}

/// \p spec with pipeline stages cut at block boundaries of a model of
/// \p blocks blocks of \p perBlock layers each after the embedding layer.
inline std::string withStages(llvm::StringRef spec, unsigned blocks,
                              unsigned perBlock) {
  schedule::Plan plan = llvm::cantFail(schedule::parsePlan(spec));
  std::string s = spec.str();
  if (plan.pp <= 1)
    return s;
  s += ",stages=";
  for (unsigned i = 1; i < plan.pp; ++i)
    s += (i > 1 ? "/" : "") +
         std::to_string(1 + perBlock * i * (blocks / plan.pp));
  return s;
}

/// Plans of a dense LLaMA on two DGX H100 nodes: dp, tp with and without
/// sp, selective and full recomputation, pp, cp.
inline constexpr const char *kTwoNodePlans[] = {
    "dp=16",
    "dp=2,tp=8",
    "dp=4,tp=4,sp=1",
    "dp=2,tp=8,recompute=selective",
    "dp=2,tp=8,recompute=full",
    "dp=4,tp=2,pp=2,schedule=1f1b,mbs=1",
    "dp=2,tp=4,cp=2"};

/// Simulates \p specs for the graph and buildLlm of \p c (no loss) on
/// \p nodes DGX H100 nodes (pipeline stages cut at the same blocks) and
/// checks the parameters, iteration time and every stage's peak memory.
inline void expectPlansAgree(const cost::ModelDesc &graph,
                             const cost::LlmConfig &c, unsigned nodes,
                             llvm::ArrayRef<const char *> specs, double batch) {
  cost::ModelDesc analytic = analyticWithoutLoss(c);
  EXPECT_NEAR(graph.paramCount(), analytic.paramCount(),
              1e-6 * analytic.paramCount());
  llvm::Expected<cluster::Cluster> cl = cluster::getPreset("dgx-h100", nodes);
  ASSERT_TRUE(static_cast<bool>(cl)) << llvm::toString(cl.takeError());
  cost::CostModel cm;
  for (const char *spec : specs) {
    SCOPED_TRACE(spec);
    // dist-modelgen's blocks are two layers each (attention and FFN).
    schedule::Plan gp =
        llvm::cantFail(schedule::parsePlan(withStages(spec, c.layers, 2)));
    schedule::Plan ap =
        llvm::cantFail(schedule::parsePlan(withStages(spec, c.layers, 1)));
    llvm::Expected<sim::PlanSimulation> g =
        sim::simulatePlan(graph, *cl, gp, batch, cm);
    llvm::Expected<sim::PlanSimulation> a =
        sim::simulatePlan(analytic, *cl, ap, batch, cm);
    ASSERT_TRUE(static_cast<bool>(g)) << llvm::toString(g.takeError());
    ASSERT_TRUE(static_cast<bool>(a)) << llvm::toString(a.takeError());
    expectWithin2Percent(g->result, a->result);
  }
}

/// The op of \p layer named \p name (a failure, and the layer's first op,
/// when there is none).
inline const cost::OpDesc &opNamed(const cost::LayerDesc &layer,
                                   llvm::StringRef name) {
  for (const cost::OpDesc &o : layer.ops)
    if (o.name == name)
      return o;
  ADD_FAILURE() << "no op " << name.str();
  return layer.ops.front();
}

} // namespace distopt::unit

#endif // DIST_TEST_UNIT_PLANNING_IMPORTEDMODEL_H
