//===- Interpreter.h - Reference interpreter for graph IR tests -*- C++ -*-===//
//
// Part of DistOpt. A tiny, slow, double-precision interpreter of the graph
// ops that small training programs use, written from the op descriptions
// (not from the code generator), so tests can check a generated backward
// graph against finite differences of its forward graph.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_TEST_UNIT_AUTODIFF_INTERPRETER_H
#define DIST_TEST_UNIT_AUTODIFF_INTERPRETER_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringMap.h"

#include <string>
#include <vector>

namespace distopt::testing {

struct Tensor {
  std::vector<int64_t> shape;
  std::vector<double> data;

  int64_t size() const;
};

/// A zero tensor of `shape`, or of the shape of ranked tensor type `type`.
Tensor zerosOf(llvm::ArrayRef<int64_t> shape);
Tensor zerosOf(mlir::Type type);
/// The multi-index of row-major flat index `i` in `shape`, and back.
std::vector<int64_t> unravelIndex(int64_t i, const std::vector<int64_t> &shape);
int64_t ravelIndex(const std::vector<int64_t> &idx,
                   const std::vector<int64_t> &shape);

/// Runs `func` on `args`; `weights` supplies every `graph.weight` and
/// `graph.state` by name (a missing state reads its `init`). Returns the
/// results, or fails with `error` naming an op it cannot run.
bool interpret(mlir::func::FuncOp func, const std::vector<Tensor> &args,
               const llvm::StringMap<Tensor> &weights,
               std::vector<Tensor> &results, std::string &error);

} // namespace distopt::testing

#endif // DIST_TEST_UNIT_AUTODIFF_INTERPRETER_H
