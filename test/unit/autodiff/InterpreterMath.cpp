//===- InterpreterMath.cpp - Scalar math of the test interpreter ----------===//
//
// Part of DistOpt. The elementwise functions of graph.unary / graph.binary
// and the unary derivatives, in double precision, from the op descriptions.
//
//===----------------------------------------------------------------------===//
#include "InterpreterMath.h"

#include <algorithm>
#include <cmath>

namespace g = distopt::graph;

static double gelu(double x) {
  return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
}
static const double kC = std::sqrt(2.0 / M_PI);

double distopt::testing::unaryValue(g::UnaryKind k, double x, double alpha) {
  using K = g::UnaryKind;
  switch (k) {
  case K::Relu:
    return x > 0 ? x : 0;
  case K::Gelu:
    return gelu(x);
  case K::GeluTanh:
    return 0.5 * x * (1 + std::tanh(kC * (x + 0.044715 * x * x * x)));
  case K::Tanh:
    return std::tanh(x);
  case K::Sigmoid:
    return 1 / (1 + std::exp(-x));
  case K::Silu:
    return x / (1 + std::exp(-x));
  case K::Exp:
    return std::exp(x);
  case K::Log:
    return std::log(x);
  case K::Neg:
    return -x;
  case K::Sqrt:
    return std::sqrt(x);
  case K::Identity:
    return x;
  case K::LeakyRelu:
    return x > 0 ? x : alpha * x;
  case K::Abs:
    return std::fabs(x);
  case K::Sign:
    return x > 0 ? 1 : x < 0 ? -1 : 0;
  case K::Floor:
    return std::floor(x);
  case K::Ceil:
    return std::ceil(x);
  default:
    return NAN;
  }
}

double distopt::testing::unaryDerivative(g::UnaryKind k, double x,
                                         double alpha) {
  using K = g::UnaryKind;
  switch (k) {
  case K::Relu:
    return x > 0 ? 1 : 0;
  case K::Gelu:
    return 0.5 * (1 + std::erf(x / std::sqrt(2.0))) +
           x * std::exp(-x * x / 2) / std::sqrt(2 * M_PI);
  case K::GeluTanh: {
    double u = kC * (x + 0.044715 * x * x * x), t = std::tanh(u);
    return 0.5 * (1 + t) +
           0.5 * x * (1 - t * t) * kC * (1 + 3 * 0.044715 * x * x);
  }
  case K::Tanh:
    return 1 - std::tanh(x) * std::tanh(x);
  case K::Sigmoid: {
    double s = 1 / (1 + std::exp(-x));
    return s * (1 - s);
  }
  case K::Silu: {
    double s = 1 / (1 + std::exp(-x));
    return s * (1 + x * (1 - s));
  }
  case K::Exp:
    return std::exp(x);
  case K::Log:
    return 1 / x;
  case K::Neg:
    return -1;
  case K::Sqrt:
    return 0.5 / std::sqrt(x);
  case K::Identity:
    return 1;
  case K::LeakyRelu:
    return x > 0 ? 1 : alpha;
  default:
    return NAN;
  }
}

double distopt::testing::binaryValue(g::BinaryKind k, double a, double b) {
  using K = g::BinaryKind;
  switch (k) {
  case K::Add:
    return a + b;
  case K::Sub:
    return a - b;
  case K::Mul:
    return a * b;
  case K::Div:
    return a / b;
  case K::Pow:
    return std::pow(a, b);
  case K::Max:
    return std::max(a, b);
  case K::Min:
    return std::min(a, b);
  case K::Less:
    return a < b;
  case K::Greater:
    return a > b;
  case K::LessEqual:
    return a <= b;
  case K::GreaterEqual:
    return a >= b;
  case K::Equal:
    return a == b;
  case K::PRelu:
    return a < 0 ? b * a : a;
  default:
    return NAN;
  }
}
