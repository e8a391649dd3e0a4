//===- GraphEnums.td - Enums of the graph dialect ----------*- tablegen -*-===//
//
// Part of DistOpt. The kind enums that let one op stand for a family of ONNX
// operators (elementwise math, reductions, pooling, loss reductions).
//
//===----------------------------------------------------------------------===//
#ifndef DIST_GRAPH_ENUMS_TD
#define DIST_GRAPH_ENUMS_TD

include "mlir/IR/EnumAttr.td"

def Graph_UnaryKind : I32EnumAttr<"UnaryKind", "elementwise unary function", [
    I32EnumAttrCase<"Relu", 0, "relu">,
    I32EnumAttrCase<"Gelu", 1, "gelu">,
    I32EnumAttrCase<"GeluTanh", 2, "gelu_tanh">,
    I32EnumAttrCase<"Erf", 3, "erf">,
    I32EnumAttrCase<"Tanh", 4, "tanh">,
    I32EnumAttrCase<"Sigmoid", 5, "sigmoid">,
    I32EnumAttrCase<"Silu", 6, "silu">,
    I32EnumAttrCase<"Exp", 7, "exp">,
    I32EnumAttrCase<"Log", 8, "log">,
    I32EnumAttrCase<"Sqrt", 9, "sqrt">,
    I32EnumAttrCase<"Rsqrt", 10, "rsqrt">,
    I32EnumAttrCase<"Neg", 11, "neg">,
    I32EnumAttrCase<"Abs", 12, "abs">,
    I32EnumAttrCase<"Reciprocal", 13, "reciprocal">,
    I32EnumAttrCase<"Floor", 14, "floor">,
    I32EnumAttrCase<"Ceil", 15, "ceil">,
    I32EnumAttrCase<"Round", 16, "round">,
    I32EnumAttrCase<"Sin", 17, "sin">,
    I32EnumAttrCase<"Cos", 18, "cos">,
    I32EnumAttrCase<"Not", 19, "not">,
    I32EnumAttrCase<"Sign", 20, "sign">,
    I32EnumAttrCase<"Softplus", 21, "softplus">,
    I32EnumAttrCase<"Softsign", 22, "softsign">,
    I32EnumAttrCase<"HardSigmoid", 23, "hard_sigmoid">,
    I32EnumAttrCase<"HardSwish", 24, "hard_swish">,
    I32EnumAttrCase<"LeakyRelu", 25, "leaky_relu">,
    I32EnumAttrCase<"Elu", 26, "elu">,
    I32EnumAttrCase<"Identity", 27, "identity">,
    I32EnumAttrCase<"IsNaN", 28, "is_nan">,
    I32EnumAttrCase<"IsInf", 29, "is_inf">
  ]> {
  let cppNamespace = "::distopt::graph";
}

def Graph_BinaryKind : I32EnumAttr<"BinaryKind", "elementwise binary function", [
    I32EnumAttrCase<"Add", 0, "add">,
    I32EnumAttrCase<"Sub", 1, "sub">,
    I32EnumAttrCase<"Mul", 2, "mul">,
    I32EnumAttrCase<"Div", 3, "div">,
    I32EnumAttrCase<"Pow", 4, "pow">,
    I32EnumAttrCase<"Max", 5, "max">,
    I32EnumAttrCase<"Min", 6, "min">,
    I32EnumAttrCase<"Mod", 7, "mod">,
    I32EnumAttrCase<"Equal", 8, "equal">,
    I32EnumAttrCase<"Less", 9, "less">,
    I32EnumAttrCase<"LessEqual", 10, "less_equal">,
    I32EnumAttrCase<"Greater", 11, "greater">,
    I32EnumAttrCase<"GreaterEqual", 12, "greater_equal">,
    I32EnumAttrCase<"And", 13, "and">,
    I32EnumAttrCase<"Or", 14, "or">,
    I32EnumAttrCase<"Xor", 15, "xor">,
    I32EnumAttrCase<"PRelu", 16, "prelu">,
    I32EnumAttrCase<"BitShiftLeft", 17, "shl">,
    I32EnumAttrCase<"BitShiftRight", 18, "shr">
  ]> {
  let cppNamespace = "::distopt::graph";
}

def Graph_ReduceKind : I32EnumAttr<"ReduceKind", "reduction function", [
    I32EnumAttrCase<"Sum", 0, "sum">,
    I32EnumAttrCase<"Mean", 1, "mean">,
    I32EnumAttrCase<"Max", 2, "max">,
    I32EnumAttrCase<"Min", 3, "min">,
    I32EnumAttrCase<"Prod", 4, "prod">,
    I32EnumAttrCase<"L1", 5, "l1">,
    I32EnumAttrCase<"L2", 6, "l2">,
    I32EnumAttrCase<"SumSquare", 7, "sum_square">,
    I32EnumAttrCase<"LogSum", 8, "log_sum">,
    I32EnumAttrCase<"LogSumExp", 9, "log_sum_exp">,
    I32EnumAttrCase<"ArgMax", 10, "arg_max">,
    I32EnumAttrCase<"ArgMin", 11, "arg_min">
  ]> {
  let cppNamespace = "::distopt::graph";
}

def Graph_PoolKind : I32EnumAttr<"PoolKind", "pooling function", [
    I32EnumAttrCase<"Max", 0, "max">,
    I32EnumAttrCase<"Avg", 1, "avg">,
    I32EnumAttrCase<"L2", 2, "l2">
  ]> {
  let cppNamespace = "::distopt::graph";
}

def Graph_LossReduction : I32EnumAttr<"LossReduction", "loss reduction", [
    I32EnumAttrCase<"None", 0, "none">,
    I32EnumAttrCase<"Mean", 1, "mean">,
    I32EnumAttrCase<"Sum", 2, "sum">
  ]> {
  let cppNamespace = "::distopt::graph";
}

def Graph_PadMode : I32EnumAttr<"PadMode", "padding mode", [
    I32EnumAttrCase<"Constant", 0, "constant">,
    I32EnumAttrCase<"Reflect", 1, "reflect">,
    I32EnumAttrCase<"Edge", 2, "edge">,
    I32EnumAttrCase<"Wrap", 3, "wrap">
  ]> {
  let cppNamespace = "::distopt::graph";
}

def Graph_ScatterReduction : I32EnumAttr<"ScatterReduction",
    "how graph.scatter_elements combines an update with the data", [
    I32EnumAttrCase<"None", 0, "none">,
    I32EnumAttrCase<"Add", 1, "add">,
    I32EnumAttrCase<"Mul", 2, "mul">,
    I32EnumAttrCase<"Max", 3, "max">,
    I32EnumAttrCase<"Min", 4, "min">
  ]> {
  let cppNamespace = "::distopt::graph";
}

#endif // DIST_GRAPH_ENUMS_TD
