//===- InterpreterData.h - Reductions, slices, pads for tests ---*- C++ -*-===//
//
// Part of DistOpt. The test interpreter's graph.reduce (every kind),
// graph.slice (any step) and constant graph.pad, from the op descriptions.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_TEST_UNIT_AUTODIFF_INTERPRETERDATA_H
#define DIST_TEST_UNIT_AUTODIFF_INTERPRETERDATA_H

#include "Interpreter.h"

#include "dialects/Graph/GraphOps.h"

namespace distopt::testing {

/// y = reduce(x) of `op`'s kind over its axes (all when empty).
Tensor reduceValue(graph::ReduceOp op, const Tensor &x);
/// The strided slice of `x`.
Tensor sliceValue(graph::SliceOp op, const Tensor &x);
/// The inputs joined along the op's axis.
Tensor concatValue(graph::ConcatOp op, const std::vector<Tensor> &inputs);
/// `x` padded in the op's mode (negative pads crop).
Tensor padValue(graph::PadOp op, const Tensor &x);

} // namespace distopt::testing

#endif // DIST_TEST_UNIT_AUTODIFF_INTERPRETERDATA_H
