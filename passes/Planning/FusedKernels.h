//===- FusedKernels.h - Ops that run inside their neighbours ----*- C++ -*-===//
//
// Part of DistOpt. An exported graph writes each bias add, attention scale
// and mask as its own op; trainers run them inside a neighbouring kernel
// (GEMM epilogues, Megatron's FusedScaleMaskSoftmax) and often the whole
// attention core as one kernel (FlashAttention). fuseKernels makes the
// costs of the layer analysis' items say so. Internal to passes/ (the
// partition's selective recomputation shares isScoreShaped).
//
//===----------------------------------------------------------------------===//
#ifndef DIST_PASSES_PLANNING_FUSEDKERNELS_H
#define DIST_PASSES_PLANNING_FUSEDKERNELS_H

#include "lib/Cost/ModelDesc.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <optional>
#include <vector>

namespace distopt::planning {

/// A sample-dependent op of the function and its cost (none for views).
struct Item {
  mlir::Operation *op;
  std::optional<cost::OpDesc> desc;
};

/// The adapter's classes of values: sample-dependent (derived from the
/// arguments) and, among those, side values (masks, ids: no weight met).
struct ValueClasses {
  const llvm::DenseSet<mlir::Value> &sampleDependent;
  const llvm::DenseSet<mlir::Value> &side;
  /// The one operand of \p op that carries the activation (sample-dependent,
  /// not a side value), or null when there are none or several.
  mlir::Value mainOperandOf(mlir::Operation *op) const;
};

/// True for a rank >= 3 tensor whose last two dims are equal and > 1: the
/// shape of attention scores.
inline bool isScoreShaped(mlir::Type type) {
  auto t = llvm::dyn_cast<mlir::RankedTensorType>(type);
  if (!t || t.getRank() < 3)
    return false;
  int64_t a = t.getDimSize(t.getRank() - 1), b = t.getDimSize(t.getRank() - 2);
  return a == b && a > 1;
}

/// Costs the ops of \p items (per sample, \p samples per imported batch;
/// \p defIndex: the item defining each value) that run inside a
/// neighbouring kernel as such: bias adds of a matmul's single-use result,
/// and single-use elementwise ops between attention scores and their
/// softmax, keep their FLOPs but move no bytes, launch nothing and save
/// nothing. With \p fusedAttention each Q K^T -> scale/mask -> softmax ->
/// [dropout] -> V chain becomes one cost::attentionOp.
void fuseKernels(std::vector<Item> &items,
                 const llvm::DenseMap<mlir::Value, int64_t> &defIndex,
                 const ValueClasses &values, double samples,
                 bool fusedAttention);

/// The routed experts of a mixture-of-experts block (the form of
/// docs/modelgen.md): GEMMs of dispatched tokens [.., E, C, in] with stacked
/// expert weights [E, in, out] (the inputs, one tokens value), the
/// elementwise ops and views after them (the activation), and the GEMMs
/// with stacked weights of the same E they reach (the outputs). Found by
/// the cost model (markExperts) and by dist-expert-parallel.
struct RoutedExperts {
  int64_t experts = 0;
  llvm::SmallVector<mlir::Operation *> inputs, outputs;
  /// The ops between, in program order.
  llvm::SmallVector<mlir::Operation *> between;
};

/// E of a GEMM x [.., E, C, in] x W [E, in, out], x sample-dependent
/// (\p dependent) and W not, without bias or transposes; 0 for other ops.
int64_t stackedExperts(mlir::Operation *op,
                       llvm::function_ref<bool(mlir::Value)> dependent);

/// What the plan's degrees must divide in \p func's mixture-of-experts
/// blocks, each a gcd over the blocks and 0 when there is none.
struct ExpertDims {
  /// Each expert's capacity slots C (the stacked-expert GEMMs' tokens [..,
  /// E, C, in]; C = top-k x sequence / experts in dist-modelgen's form):
  /// what cp, and at ep > 1 cp x tp, must divide
  /// (search::expertSlotsSplit).
  int64_t slots = 0;
  /// The routed experts' hidden width, the features dist-expert-parallel
  /// splits over the tensor ranks (the input GEMMs' output features, the
  /// output GEMMs' input features) in the blocks it recognizes: what tp
  /// must divide at ep > 1 (search::expertFeaturesSplit).
  int64_t features = 0;
};
ExpertDims expertDims(mlir::func::FuncOp func);

/// Grows the routed experts from the input GEMMs \p inputs (of one block,
/// in program order): every op that reads their results up to GEMMs of
/// the same stacked weight count. Returns why not, or "" and fills \p out.
std::string routedExperts(llvm::ArrayRef<mlir::Operation *> inputs,
                          llvm::function_ref<bool(mlir::Value)> dependent,
                          RoutedExperts &out);

/// The input GEMMs of one block among stacked-expert GEMMs \p gemms (in
/// program order): those not in \p done that read \p first's tokens.
llvm::SmallVector<mlir::Operation *>
expertInputs(llvm::ArrayRef<mlir::Operation *> gemms, mlir::Operation *first,
             const llvm::DenseSet<mlir::Operation *> &done);

/// The first op between the GEMMs of \p experts that is not elementwise
/// on their [.., E, C, f] (a view, or an op that reads another operand
/// than a scalar), with why in \p why; nullptr when every one is (the
/// passes that split the experts' or the capacity slots' dimension need
/// that).
mlir::Operation *notElementwiseBetween(const RoutedExperts &experts,
                                       std::string &why);

/// Costs the mixture-of-experts FFNs among \p items as cost::llmBlock does
/// (Experts.cpp: the form recognized, docs/modelgen.md): the routed experts'
/// ops become OpDesc::expert ops of one grouped launch of E GEMMs, the
/// token gather and scatter-add the dispatch and combine with their
/// expert-parallel all-to-alls, the router one replicated GEMM and one fp32
/// top-k kernel. Patterns that do not match stay as they are; with
/// \p remarks each match, and each near miss with the reason, is remarked
/// on its gather.
void markExperts(std::vector<Item> &items,
                 const llvm::DenseMap<mlir::Value, int64_t> &defIndex,
                 const ValueClasses &values, double samples, bool remarks);

} // namespace distopt::planning

#endif // DIST_PASSES_PLANNING_FUSEDKERNELS_H
