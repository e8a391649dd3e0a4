//===- GraphCost.h - What a graph op costs ----------------------*- C++ -*-===//
//
// Part of DistOpt. The context CostOpInterface costs an op in, and the rules
// shared by the interface's implementations: the cost of an op the dialect
// has no rule for, tensor sizes, element types. The numbers are the cost
// core's (`lib/Cost/ModelDesc.h`): the forward ops' models call its
// builders, so the planner, the autodiff FLOP checks and the search see one
// definition per op.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_DIALECTS_GRAPH_GRAPHCOST_H
#define DIST_DIALECTS_GRAPH_GRAPHCOST_H

#include "lib/Cost/ModelDesc.h"

#include "mlir/IR/Operation.h"
#include "mlir/IR/Types.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <optional>
#include <string>

namespace distopt::graph {

enum class UnaryKind : uint32_t;

/// How CostOpInterface::getCost costs one execution of an op.
struct CostContext {
  /// Element type the op computes in (mixed precision runs an f32 graph in
  /// bf16). Unset: the op's own result type (f32 for integer results).
  std::optional<cluster::DType> computeType;
  /// True for an operand shared by the whole batch (a weight, a constant, or
  /// what is computed from them alone) rather than a per-sample activation:
  /// it makes a matmul a linear layer with a weight gradient. Unset: a value
  /// read by `graph.weight`, `graph.constant` or `graph.state`, directly or
  /// through single-operand ops (casts, transposes, reshapes).
  llvm::function_ref<bool(mlir::Value)> isWeightLike;

  /// The element type to cost an op whose first result has type \p type in.
  cluster::DType dtypeFor(mlir::Type type) const;
  /// Bytes of a tensor of \p type as the model runs it: floating-point
  /// tensors in dtypeFor (an f32 graph trained in bf16 sends and keeps bf16
  /// activations), others in their own width (tensorCostBytes).
  double bytesFor(mlir::Type type) const;
  /// `isWeightLike(value)`, or its default.
  bool weightLike(mlir::Value value) const;
};

/// Elements of a ranked tensor type (dynamic dimensions count as 1); 1 for
/// any other type.
double tensorElements(mlir::Type type);
/// Bytes of a tensor type in its own element type; complex and index
/// elements (no cost-core type) by their storage size.
double tensorCostBytes(mlir::Type type);
/// The cost core's element type of \p type's elements, if it has one.
std::optional<cluster::DType> costDType(mlir::Type type);

/// The name an op's cost carries: the ONNX node name it was imported from
/// (its NameLoc), else its op name.
std::string costName(mlir::Operation *op);

/// FLOPs per element of a unary op of \p kind (8 for GELU, 4 for the other
/// transcendentals, 1 otherwise): forward once, backward twice.
double unaryFlopsPerElement(UnaryKind kind);

/// The cost of an op no rule knows (an opaque op, another dialect's op): one
/// FLOP per result element, every operand read and every result written
/// once, backward twice the forward. None for an op without results. An
/// opaque If whose branches the importer kept as functions costs its more
/// expensive branch instead, that branch's ops costed by their own rules.
std::optional<cost::OpDesc> genericCost(mlir::Operation *op,
                                        const CostContext &context);

/// The cost of an op that runs once as it is (a gradient or optimizer op of
/// a training program): \p flops, every operand read and every result
/// written once; it has no backward of its own.
cost::OpDesc executedCost(mlir::Operation *op, const CostContext &context,
                          double flops);

} // namespace distopt::graph

#endif // DIST_DIALECTS_GRAPH_GRAPHCOST_H
