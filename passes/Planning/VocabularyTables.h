//===- VocabularyTables.h - Vocabulary-parallel tables ----------*- C++ -*-===//
//
// Part of DistOpt. Which lookups tensor parallelism splits by vocabulary
// rows, and which embedding tables are tied to an LM head (GPT-2's `wte`),
// which then splits by the same rows for both uses. The one decision both
// the cost model (LayerAnalysis: the lookup's `dist.tp` role) and
// dist-tensor-parallel (splitVocabulary, the head's region) follow.
// docs/distributed.md "Tied embeddings".
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_PASSES_PLANNING_VOCABULARYTABLES_H
#define DISTOPT_PASSES_PLANNING_VOCABULARYTABLES_H

#include "dialects/Graph/GraphOps.h"

namespace distopt::planning {

/// A lookup of data (not of constant positions) in a table of V rows that
/// split `tp` ways: what the vocabulary-parallel embedding splits.
inline bool splitsVocabulary(graph::EmbeddingOp em, int64_t tp) {
  auto table = mlir::dyn_cast<mlir::RankedTensorType>(em.getTable().getType());
  auto ids = mlir::dyn_cast<mlir::RankedTensorType>(em.getIndices().getType());
  return table && table.getRank() == 2 && table.hasStaticShape() &&
         table.getDimSize(0) % tp == 0 && ids && ids.hasStaticShape() &&
         ids.getElementType().isSignlessInteger() &&
         !em.getIndices().getDefiningOp<graph::ConstantOp>();
}

/// The matmul that reads the table `w` transposed as its right operand
/// (an LM head tied to the embedding: GPT-2's `wte`), directly
/// (`transpose_rhs`) or through a `graph.transpose` [1, 0] only it reads,
/// when every other reader of `w` is a lookup that splits by vocabulary;
/// else null. Megatron splits such a table by vocabulary rows for both uses.
inline graph::MatmulOp tiedHead(graph::WeightOp w, int64_t tp) {
  graph::MatmulOp head;
  bool lookups = false;
  for (mlir::OpOperand &use : w.getResult().getUses()) {
    mlir::Operation *user = use.getOwner();
    if (auto em = mlir::dyn_cast<graph::EmbeddingOp>(user)) {
      if (use.getOperandNumber() != 0 || !splitsVocabulary(em, tp))
        return {};
      lookups = true;
      continue;
    }
    graph::MatmulOp m = mlir::dyn_cast<graph::MatmulOp>(user);
    if (auto t = mlir::dyn_cast<graph::TransposeOp>(user)) {
      if (!t.getResult().hasOneUse() ||
          t.getPerm() != llvm::ArrayRef<int64_t>{1, 0})
        return {};
      m = mlir::dyn_cast<graph::MatmulOp>(*t.getResult().getUsers().begin());
      if (!m || m.getRhs() != t.getResult() || m.getTransposeRhs())
        return {};
    } else if (!m || m.getRhs() != w.getResult() || !m.getTransposeRhs()) {
      return {};
    }
    if (head)
      return {};
    head = m;
  }
  return lookups ? head : graph::MatmulOp();
}

} // namespace distopt::planning

#endif // DISTOPT_PASSES_PLANNING_VOCABULARYTABLES_H
