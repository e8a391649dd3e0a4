//===- InterpreterMath.h - Scalar math of the test interpreter --*- C++ -*-===//
//
// Part of DistOpt.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_TEST_UNIT_AUTODIFF_INTERPRETERMATH_H
#define DIST_TEST_UNIT_AUTODIFF_INTERPRETERMATH_H

#include "dialects/Graph/GraphOps.h"

namespace distopt::testing {

/// f(x) of a unary kind (`alpha` for leaky_relu); NaN for kinds the
/// interpreter does not know.
double unaryValue(graph::UnaryKind kind, double x, double alpha);
/// f'(x) of a unary kind, as graph.unary_grad documents it.
double unaryDerivative(graph::UnaryKind kind, double x, double alpha);
/// a (op) b of a binary kind; comparisons yield 0 or 1.
double binaryValue(graph::BinaryKind kind, double a, double b);

} // namespace distopt::testing

#endif // DIST_TEST_UNIT_AUTODIFF_INTERPRETERMATH_H
