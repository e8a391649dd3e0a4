//===- EmitReduce.cpp - Reductions as generated loops -----------*- C++ -*-===//
//
// Part of DistOpt. graph.reduce of every kind and element type becomes one
// generated loop over the output elements, each summing (or maximizing, ...)
// over the reduced index space with constant strides. Float sums accumulate
// in double, so a long reduction matches NumPy's pairwise sum closely.
//
//===----------------------------------------------------------------------===//
#include "lib/Codegen/FunctionEmitter.h"

#include "dialects/Graph/GraphOps.h"

using namespace mlir;
using namespace distopt::codegen;
using namespace distopt::graph;

/// The number of kept elements before the reduced axes when `op` reduces
/// by rows (emitReduce), else 0: a CPU program's float reduction that
/// starts from zero and adds a term per item, over axes with no kept axis
/// among them (unit axes aside) and at least 8 kept elements after them,
/// so that the input is [outer, R, K] and the output [outer, K].
static int64_t rowsOuter(FunctionEmitter &e, ReduceOp op, ArrayRef<int64_t> in,
                         ArrayRef<bool> reduced, int64_t &K) {
  switch (op.getKind()) {
  case ReduceKind::Sum:
  case ReduceKind::Mean:
  case ReduceKind::L1:
  case ReduceKind::L2:
  case ReduceKind::SumSquare:
  case ReduceKind::LogSum:
    break;
  default:
    return 0;
  }
  if (e.options.target != Target::CPU ||
      !isa<FloatType>(FunctionEmitter::typeOf(op.getInput()).getElementType()))
    return 0;
  // 0: kept axes before the reduced ones; 1: the reduced ones; 2: after.
  int part = 0;
  int64_t outer = 1;
  K = 1;
  for (unsigned d = 0; d < in.size(); ++d) {
    if (in[d] == 1)
      continue;
    if (reduced[d]) {
      if (part == 2)
        return 0;
      part = 1;
    } else if (part == 0) {
      outer *= in[d];
    } else {
      part = 2;
      K *= in[d];
    }
  }
  return part == 2 && K >= 8 ? outer : 0;
}

LogicalResult distopt::codegen::emitReduce(FunctionEmitter &e, Operation *o) {
  auto op = cast<ReduceOp>(o);
  auto inType = FunctionEmitter::typeOf(op.getInput());
  auto in = inType.getShape();
  unsigned rank = in.size();
  SmallVector<bool> reduced(rank, op.getAxes().empty());
  for (int64_t a : op.getAxes())
    reduced[a < 0 ? a + rank : a] = true;
  // Keep-dims output shape and the reduced index space.
  SmallVector<int64_t> kept, red;
  SmallVector<unsigned> redAxes, keptAxes;
  for (unsigned d = 0; d < rank; ++d) {
    kept.push_back(reduced[d] ? 1 : in[d]);
    if (reduced[d]) {
      red.push_back(in[d]);
      redAxes.push_back(d);
    } else {
      keptAxes.push_back(d);
    }
  }
  auto inStrides = FunctionEmitter::stridesOf(in);
  int64_t R = 1;
  for (int64_t d : red)
    R *= d;
  std::string base, inner;
  for (unsigned d : keptAxes)
    if (in[d] != 1)
      base += " + " + FunctionEmitter::coord(kept, d, "o") + " * " +
              std::to_string(inStrides[d]);
  for (unsigned k = 0; k < redAxes.size(); ++k)
    if (red[k] != 1)
      inner += " + " + FunctionEmitter::coord(red, k, "r") + " * " +
               std::to_string(inStrides[redAxes[k]]);
  Type et = inType.getElementType();
  bool isFloat = isa<FloatType>(et);
  std::string ct = FunctionEmitter::cType(et);
  std::string acc = isFloat ? "double" : ct;
  std::string x = "x[base" + inner + "]";
  std::string outT = FunctionEmitter::cType(op.getResult());
  std::string init, step, fin;
  switch (op.getKind()) {
  case ReduceKind::Sum:
    init = "0";
    step = "a += v;";
    fin = "a";
    break;
  case ReduceKind::Mean:
    init = "0";
    step = "a += v;";
    fin = "a / " + std::to_string(R);
    break;
  case ReduceKind::Max:
    init = "x[base]";
    step = "a = dg::maxOf<" + acc + ">(a, v);";
    fin = "a";
    break;
  case ReduceKind::Min:
    init = "x[base]";
    step = "a = dg::minOf<" + acc + ">(a, v);";
    fin = "a";
    break;
  case ReduceKind::Prod:
    init = "1";
    step = "a *= v;";
    fin = "a";
    break;
  case ReduceKind::L1:
    init = "0";
    step = "a += v < 0 ? -v : v;";
    fin = "a";
    break;
  case ReduceKind::L2:
    init = "0";
    step = "a += v * v;";
    fin = "sqrt((double)a)";
    break;
  case ReduceKind::SumSquare:
    init = "0";
    step = "a += v * v;";
    fin = "a";
    break;
  case ReduceKind::LogSum:
    init = "0";
    step = "a += v;";
    fin = "log((double)a)";
    break;
  case ReduceKind::LogSumExp:
    init = "0";
    step = "a += exp((double)v - m);";
    fin = "m + log((double)a)";
    break;
  case ReduceKind::ArgMax:
  case ReduceKind::ArgMin: {
    if (redAxes.size() != 1)
      return op.emitError()
             << "graph.reduce arg_max/arg_min needs exactly one axis";
    // The first extreme wins a tie, or with select_last_index the last.
    bool last = op.getSelectLastIndex();
    const char *cmp = op.getKind() == ReduceKind::ArgMax ? (last ? ">=" : ">")
                                                         : (last ? "<=" : "<");
    e.allocate(op.getResult());
    std::string out = e.name(op.getResult()), src = e.name(op.getInput());
    e.openLoop(FunctionEmitter::numel(op.getResult()), "o");
    e.os << "    const " << ct << " *x = " << src << ";\n    int64_t base = 0"
         << base << ";\n    " << ct << " best = x[base]; int64_t at = 0;\n"
         << "    for (int64_t r = 1; r < " << R << "; ++r) {\n      " << ct
         << " v = " << x << ";\n      if (v " << cmp
         << " best) { best = v; at = r; }\n    }\n    " << out << "[o] = ("
         << outT << ")at;\n";
    e.closeLoop();
    return success();
  }
  }
  e.allocate(op.getResult());
  std::string out = e.name(op.getResult()), src = e.name(op.getInput());
  int64_t K = 0;
  if (int64_t outer = rowsOuter(e, op, in, reduced, K)) {
    // By rows: each task adds the input's rows into a tile of per-column
    // accumulators, in the order of r as below, so the result has the same
    // bits. A loop that reads memory in order and vectorizes, where one
    // output's strided walk down its column did neither (the GPT training
    // step's bias gradients, [512, 3072] summed over rows: 79 ms a step).
    constexpr int64_t tile = 64;
    int64_t tiles = (K + tile - 1) / tile;
    e.os << "  if (dg::parallelRows<" << outer * tiles << ", " << R * tile
         << ">(P, [=] (int64_t lo, int64_t hi) {\n"
         << "    for (int64_t t = lo; t < hi; ++t) {\n"
         << "    const int64_t o = t / " << tiles << ", c0 = t % " << tiles
         << " * " << tile << ", n = c0 + " << tile << " < " << K << " ? "
         << tile << " : " << K << " - c0;\n"
         << "    " << acc << " tile[" << tile << "];\n"
         << "    for (int64_t j = 0; j < n; ++j) tile[j] = (" << acc << ")("
         << init << ");\n"
         << "    for (int64_t r = 0; r < " << R << "; ++r) {\n"
         << "      const " << ct << " *x = " << src << " + (o * " << R
         << " + r) * " << K << " + c0;\n      DG_SIMD\n"
         << "      for (int64_t j = 0; j < n; ++j) {\n        " << acc
         << " a = tile[j], v = (" << acc << ")x[j];\n        " << step
         << "\n        tile[j] = a;\n      }\n    }\n"
         << "    for (int64_t j = 0; j < n; ++j) { " << acc << " a = tile[j]; "
         << out << "[o * " << K << " + c0 + j] = (" << outT << ")(" << fin
         << "); }\n    }\n";
    e.closeLoop();
    return success();
  }
  K = FunctionEmitter::numel(op.getResult());
  e.openLoop(K, "o");
  e.os << "    const " << ct << " *x = " << src << ";\n    int64_t base = 0"
       << base << ";\n";
  if (op.getKind() == ReduceKind::LogSumExp)
    e.os << "    double m = -INFINITY;\n    for (int64_t r = 0; r < " << R
         << "; ++r) { double v = " << x << "; m = v > m ? v : m; }\n"
         << "    if (m == -INFINITY) m = 0;\n";
  e.os << "    " << acc << " a = (" << acc << ")(" << init << ");\n"
       << "    for (int64_t r = 0; r < " << R << "; ++r) {\n      " << acc
       << " v = (" << acc << ")" << x << ";\n      " << step << "\n    }\n    "
       << out << "[o] = (" << outT << ")(" << fin << ");\n";
  e.closeLoop();
  return success();
}
