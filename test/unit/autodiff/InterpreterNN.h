//===- InterpreterNN.h - Convolution and pooling for tests ------*- C++ -*-===//
//
// Part of DistOpt.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_TEST_UNIT_AUTODIFF_INTERPRETERNN_H
#define DIST_TEST_UNIT_AUTODIFF_INTERPRETERNN_H

#include "Interpreter.h"

#include "mlir/IR/Operation.h"

namespace distopt::testing {

/// graph.conv (first = x, second = w, optional bias), conv_grad_input
/// (first = dy, second = w) or conv_grad_weight (first = x, second = dy),
/// 2-D only; false with `error` otherwise.
bool convValue(mlir::Operation *op, const Tensor &first, const Tensor &second,
               const Tensor *bias, Tensor &out, std::string &error);
/// graph.pool of `x` (`dy` null) or graph.pool_grad of `x` and `dy`.
bool poolValue(mlir::Operation *op, const Tensor &x, const Tensor *dy,
               Tensor &out, std::string &error);

} // namespace distopt::testing

#endif // DIST_TEST_UNIT_AUTODIFF_INTERPRETERNN_H
