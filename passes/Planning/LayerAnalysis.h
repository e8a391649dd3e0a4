//===- LayerAnalysis.h - The layers the planner sees -----------*- C++ -*-===//
//
// Part of DistOpt. The planning passes' analysis: turns a function of
// graph-dialect ops into the layered cost description (cost::ModelDesc) that
// the cost model, the search and the simulator work on. What each op costs
// is the op's own CostOpInterface; this finds the layers (cut points, light
// stretches merged, or the `dist.layer` annotations), the parameters each
// op reads, and the Megatron tensor-parallel roles.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_PASSES_PLANNING_LAYERANALYSIS_H
#define DIST_PASSES_PLANNING_LAYERANALYSIS_H

#include "dialects/Dist/DistDialect.h"
#include "lib/Cost/ModelDesc.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/LogicalResult.h"
#include <optional>
#include <vector>

namespace mlir {
class ModuleOp;
class Operation;
namespace func {
class FuncOp;
} // namespace func
} // namespace mlir

namespace distopt::planning {

using dist::TensorParallelRole;

struct LayerAnalysisOptions {
  /// Element type the model trains or runs in (mixed precision runs an f32
  /// graph in bf16). Unset: each op's own element type.
  std::optional<cluster::DType> computeType;
  /// Cost each attention core -- scores Q K^T, their scale and mask, the
  /// softmax (and its dropout), the product with V -- as one fused kernel
  /// (cost::attentionOp: FlashAttention's FLOPs, no s^2 tensor kept).
  bool fusedAttention = false;
  /// When set, receives the sample-dependent ops of each layer in program
  /// order (ops that only compute weights belong to no layer), so a plan's
  /// stages can be written back onto the IR.
  std::vector<std::vector<mlir::Operation *>> *layerOps = nullptr;
  /// When set, receives the tensor-parallel role of every costed op, so a
  /// plan's shardings can be written back onto the IR.
  llvm::DenseMap<mlir::Operation *, TensorParallelRole> *tpRoles = nullptr;
  /// When set, receives what the tensor-parallel degree must divide for
  /// each op of a Megatron region or vocabulary-parallel lookup to split
  /// (cost::OpDesc::tpDivisor; ops of any degree are left out).
  llvm::DenseMap<mlir::Operation *, int64_t> *tpDivisors = nullptr;
  /// When set, receives the profile-database signature of every costed op
  /// (what a measured time is filed under: dist-compile --profile-json).
  llvm::DenseMap<mlir::Operation *, std::string> *signatures = nullptr;
  /// Remark on each mixture-of-experts block recognized, and on each
  /// MoE-like pattern left as dense ops with the reason.
  bool remarkExperts = false;
};

/// Builds the cost description of `func`.
///
/// Layers are the stretches of the program between *cut points*: places in
/// program order where exactly one activation tensor is live (the tensor a
/// pipeline stage boundary would send). A stretch without a matmul,
/// convolution or embedding joins the one before it, so a layer is some
/// compute-heavy work and what follows it; in a transformer that is half a
/// block (attention, then MLP), in a plain CNN a convolution with its
/// activation and pooling, and a residual block is never cut in two.
///
/// Costs are per sample: the leading dimension of the first argument is the
/// sample dimension, and ops that depend on the arguments are divided by it.
/// Weight operands (through casts and transposes) make an op's parameters;
/// a weight used again later (tied embeddings) counts once.
///
/// Kernels the trainers fuse are costed fused: a bias add after a matmul is
/// its GEMM's epilogue, and elementwise ops on attention scores (scale,
/// mask) run inside the softmax they feed (Megatron's fused bias-GeLU and
/// FusedScaleMaskSoftmax); such an op adds its FLOPs to that kernel and
/// moves no bytes of its own. With `fusedAttention` the whole attention core
/// is one kernel. Emits an error
/// on `func` and fails when it has no sample dimension to divide by.
llvm::FailureOr<cost::ModelDesc>
analyzeLayers(mlir::func::FuncOp func, const LayerAnalysisOptions &options);

/// The number tensor parallelism must divide to split `func`'s attention by
/// heads: the gcd of the head counts of its head-batched matmuls and of the
/// key/value head counts of grouped-query attention; 0 without attention.
/// analyzeLayers records it as ModelDesc::attentionHeads.
unsigned attentionHeadCount(mlir::func::FuncOp func);

/// Records on every op the cost model prices its profile-database
/// signature (`emit.cost_signature`), under which the program's
/// `--profile-json` files the op's measured time; functions the cost model
/// cannot price (no sample dimension) are left alone. Names given earlier
/// are kept: a function named before tensor parallelism split it keeps the
/// whole ops' signatures (the profile files the shards' times under them
/// and the plan's tp), and its gradient ops added since are filed under
/// them.
void annotateCostSignatures(mlir::ModuleOp module);

} // namespace distopt::planning

#endif // DIST_PASSES_PLANNING_LAYERANALYSIS_H
