//===- EmitData.cpp - Weights, constants and data movement ------*- C++ -*-===//
//
// Part of DistOpt. graph.weight (loaded from its file at run time, or
// initialized by the graph-only rule), graph.constant (a static array in the
// program), views that share their operand's buffer (reshape, flatten,
// inference dropout) and generated gather-style loops for data movement of
// any element type: transpose, slice, split, concat, expand, pad, trilu,
// gather, gather_nd and scatter_elements (these two check their indices'
// range first). Every loop computes one output element from constant strides;
// cumsum's and top_k's compute one line along their axis.
//
//===----------------------------------------------------------------------===//
#include "lib/Codegen/FunctionEmitter.h"

#include "dialects/Dist/DistOps.h"
#include "dialects/Emit/EmitDialect.h"
#include "dialects/Emit/KernelRules.h"
#include "dialects/Emit/MemoryPlan.h"
#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/GraphShapeUtils.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
namespace emit = distopt::emit;
using namespace distopt::codegen;
using namespace distopt::graph;

bool distopt::codegen::isAliasOp(Operation *op) {
  return isa<ReshapeOp, FlattenOp, DropoutOp>(op);
}

bool distopt::codegen::isDataOp(Operation *op) {
  return isAliasOp(op) ||
         isa<WeightOp, ConstantOp, TransposeOp, SliceOp, SplitOp, ConcatOp,
             ExpandOp, PadOp, TriluOp, CumSumOp, TopKOp, GatherOp,
             GatherElementsOp, GatherNDOp, ScatterElementsOp, ScatterNDOp,
             EmbeddingOp, IotaOp>(op);
}

/// `s` as a C string literal body.
static std::string cstr(llvm::StringRef s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (c == '\n')
      out += "\\n";
    else if ((unsigned char)c < 32)
      out += ' ';
    else
      out += c;
  }
  return out;
}

static std::string intLiteral(const APInt &v, Type t) {
  if (t.isInteger(1))
    return v.isZero() ? "0" : "1";
  auto it = cast<IntegerType>(t);
  if (it.isUnsigned())
    return std::to_string(v.getZExtValue()) + "ull";
  int64_t x = v.getSExtValue();
  if (x == INT64_MIN)
    return "(-9223372036854775807ll - 1)";
  return std::to_string(x) + "ll";
}

static LogicalResult emitWeight(FunctionEmitter &e, WeightOp op) {
  Value r = op.getResult();
  auto type = FunctionEmitter::typeOf(r);
  int64_t elem = (int64_t)FunctionEmitter::byteSize(type.getElementType());
  // A rank's part of a weight: its tensor-parallel part (`dist.tp_shard`),
  // its ZeRO-3 block (`dist.zero_shard`) or a block of its part (both);
  // `full` is the shape of the tensor the file holds.
  auto tpShard = op->getAttrOfType<DenseI64ArrayAttr>("dist.tp_shard");
  auto zeroShard = op->getAttrOfType<DictionaryAttr>("dist.zero_shard");
  SmallVector<int64_t> full = distopt::dist::wholeShape(op);
  int64_t bytes = elem;
  for (int64_t d : full)
    bytes *= d;
  if (op.getFile() && op.getSize() && (int64_t)*op.getSize() != bytes)
    return op.emitError() << "graph.weight '" << op.getSymName() << "' of type "
                          << type << " needs " << bytes
                          << " bytes but refers to " << *op.getSize()
                          << "; re-import the model";
  // Weights are loaded on the first run and kept: a training step's in its
  // persistent (saved) state, an inference body's as a resident buffer.
  bool fresh = true;
  if (e.training)
    e.bindPersistent(r, cstr(op.getSymName()), fresh);
  else
    e.bindResident(r, "w." + cstr(op.getSymName()));
  // Inference under --load-state DIR: the weight from the saved state (a
  // training run's), the file or generated values otherwise; the fill
  // statement follows this prefix's `else`.
  auto fromState = [&](llvm::StringRef shard) {
    if (e.training)
      return;
    e.os << "  if (!P.stateDir.empty()) { static const int64_t sdims[] = {";
    for (int64_t d : type.getShape())
      e.os << d << ", ";
    e.os << "0}; if (P.loadStateWeight(\"" << cstr(op.getSymName()) << "\", "
         << FunctionEmitter::dgType(type.getElementType()) << ", "
         << type.getRank() << ", sdims, " << e.name(r)
         << (shard.empty() ? std::string() : ", &" + shard.str())
         << ")) return 1; } else\n";
  };
  if (tpShard || zeroShard) {
    // This rank's runs of the full tensor.
    std::string s = e.shardOf(r);
    e.os << "  if (fresh_" << e.name(r) << ") {\n"
         << "  static const int64_t full[] = {";
    for (int64_t d : full)
      e.os << d << ", ";
    e.os << "0};\n";
    fromState(s);
    if (auto file = op.getFile())
      e.os << "  if (P.loadWeightShard(\"" << cstr(op.getSymName()) << "\", \""
           << cstr(*file) << "\", " << (op.getOffset() ? *op.getOffset() : 0)
           << ", " << FunctionEmitter::dgType(type.getElementType())
           << ", full, " << full.size() << ", " << s << ", " << e.name(r)
           << ")) return 1;\n";
    else
      e.os << "  if (P.initWeightShard(\"" << cstr(op.getSymName()) << "\", "
           << FunctionEmitter::dgType(type.getElementType()) << ", full, "
           << full.size() << ", " << s << ", " << e.name(r)
           << ")) return 1;\n";
    e.os << "  }\n";
    return success();
  }
  e.os << "  if (fresh_" << e.name(r) << ") {\n";
  fromState("");
  if (auto file = op.getFile()) {
    e.os << "  if (P.loadWeight(\"" << cstr(op.getSymName()) << "\", \""
         << cstr(*file) << "\", " << (op.getOffset() ? *op.getOffset() : 0)
         << ", " << bytes << ", " << e.name(r) << ")) return 1;\n";
  } else {
    e.os << "  { static const int64_t dims[] = {";
    for (int64_t d : type.getShape())
      e.os << d << ", ";
    e.os << "0}; if (P.initWeight(\"" << cstr(op.getSymName()) << "\", "
         << FunctionEmitter::dgType(type.getElementType()) << ", dims, "
         << type.getRank() << ", " << e.name(r) << ")) return 1; }\n";
  }
  e.os << "  }\n";
  return success();
}

static LogicalResult emitConstant(FunctionEmitter &e, ConstantOp op) {
  Value r = op.getResult();
  auto type = FunctionEmitter::typeOf(r);
  Type et = type.getElementType();
  auto dense = dyn_cast<DenseElementsAttr>(op.getValue());
  if (!dense)
    return op.emitError()
           << "graph.constant: only dense element values have a lowering (got "
           << op.getValue() << "); store large tensors as graph.weight";
  // Filled on the first run and kept (a resident buffer of the plan).
  e.bindResident(r, "c" + std::to_string(e.positionOf(op)));
  auto valueAt = [&](auto it) -> std::string {
    if (isa<FloatType>(et))
      return FunctionEmitter::literal((*it).convertToDouble(), et);
    return "";
  };
  (void)valueAt;
  std::vector<std::string> values;
  if (isa<FloatType>(et)) {
    for (APFloat v : dense.getValues<APFloat>()) {
      values.push_back(FunctionEmitter::literal(v.convertToDouble(), et));
      if (dense.isSplat())
        break;
    }
  } else {
    for (APInt v : dense.getValues<APInt>()) {
      values.push_back(intLiteral(v, et));
      if (dense.isSplat())
        break;
    }
  }
  std::string ct = FunctionEmitter::cType(et);
  std::string out = e.name(r);
  e.os << "  if (fresh_" << out << ") {\n";
  if (dense.isSplat()) {
    e.openLoop(type.getNumElements());
    e.os << "    " << out << "[i] = (" << ct << ")" << values[0] << ";\n";
    e.closeLoop();
    e.os << "  }\n";
    return success();
  }
  std::string g = e.prefix + "_" + e.name(r);
  e.globals << "static const " << ct << " " << g << "[] = {";
  for (size_t i = 0; i < values.size(); ++i)
    e.globals << (i ? (i % 16 ? ", " : ",\n    ") : "") << values[i];
  e.globals << "};\n";
  e.os << "  if (P.upload(" << e.name(r) << ", " << g << ", sizeof(" << g
       << "))) return 1;\n  }\n";
  return success();
}

/// out[i] = start + i * delta, computed in int64 or double, then cast.
static LogicalResult emitIota(FunctionEmitter &e, IotaOp op) {
  Value r = op.getResult();
  auto type = FunctionEmitter::typeOf(r);
  Type et = type.getElementType();
  std::string start, delta;
  if (auto s = dyn_cast<IntegerAttr>(op.getStart())) {
    start = intLiteral(s.getValue(), et);
    delta = intLiteral(cast<IntegerAttr>(op.getDelta()).getValue(), et);
    start = "(int64_t)" + start;
    delta = "(int64_t)" + delta;
  } else {
    Type f64 = Float64Type::get(op.getContext());
    start = FunctionEmitter::literal(
        cast<FloatAttr>(op.getStart()).getValueAsDouble(), f64);
    delta = FunctionEmitter::literal(
        cast<FloatAttr>(op.getDelta()).getValueAsDouble(), f64);
  }
  std::string idx = isa<IntegerType>(et) ? "(int64_t)i" : "(double)i";
  e.allocate(r);
  std::string out = e.name(r);
  e.openLoop(type.getNumElements());
  e.os << "    " << out << "[i] = (" << FunctionEmitter::cType(et) << ")("
       << start << " + " << idx << " * " << delta << ");\n";
  e.closeLoop();
  return success();
}

/// Where element i (row-major) of `in` is in its memory (its plan's
/// strides: a view or channels-last value is read where it lies).
static std::string readOffset(FunctionEmitter &e, Value in) {
  auto shape = FunctionEmitter::typeOf(in).getShape();
  return FunctionEmitter::stridedOffset(
      shape, FunctionEmitter::stridesOf(shape), shape, e.layoutOf(in), "i");
}

/// out[i] = in[<offset expression of i>], for any element type.
static void emitGather(FunctionEmitter &e, Value out, Value in,
                       const std::string &offset,
                       const std::string &prelude = "") {
  std::string o = e.name(out), src = e.name(in);
  e.openLoop(FunctionEmitter::numel(out));
  e.os << prelude << "    " << o << "[i] = " << src << "[" << offset << "];\n";
  e.closeLoop();
}

static LogicalResult emitTranspose(FunctionEmitter &e, TransposeOp op) {
  Value in = op.getInput(), out = op.getResult();
  auto outShape = FunctionEmitter::typeOf(out).getShape();
  auto inStrides = e.layoutOf(in);
  e.allocate(out);
  std::string off;
  for (unsigned k = 0; k < outShape.size(); ++k) {
    if (outShape[k] == 1)
      continue;
    off += (off.empty() ? "" : " + ") +
           FunctionEmitter::coord(outShape, k, "i") + " * " +
           std::to_string(inStrides[op.getPerm()[k]]);
  }
  emitGather(e, out, in, off.empty() ? "0" : off);
  return success();
}

/// out = in[start_d + c_d * step_d] along every dimension.
static void emitStrided(FunctionEmitter &e, Value out, Value in,
                        ArrayRef<int64_t> starts, ArrayRef<int64_t> steps) {
  auto outShape = FunctionEmitter::typeOf(out).getShape();
  auto inStrides = e.layoutOf(in);
  std::string off;
  for (unsigned d = 0; d < outShape.size(); ++d) {
    std::string c =
        outShape[d] == 1 ? "0" : FunctionEmitter::coord(outShape, d, "i");
    std::string term = "(" + std::to_string(starts[d]) + " + " + c + " * " +
                       std::to_string(steps[d]) + ") * " +
                       std::to_string(inStrides[d]);
    off += (off.empty() ? "" : " + ") + term;
  }
  emitGather(e, out, in, off.empty() ? "0" : off);
}

static LogicalResult emitSlice(FunctionEmitter &e, SliceOp op) {
  Value in = op.getInput(), out = op.getResult();
  auto inShape = FunctionEmitter::typeOf(in).getShape();
  int64_t rank = inShape.size();
  SmallVector<int64_t> starts(rank, 0), steps(rank, 1);
  for (auto [k, axis] : llvm::enumerate(op.getAxes())) {
    int64_t a = axis < 0 ? axis + rank : axis;
    int64_t dim = inShape[a];
    int64_t step = op.getSteps().empty() ? 1 : op.getSteps()[k];
    int64_t s = op.getStarts()[k];
    if (s < 0)
      s += dim;
    s = step > 0 ? std::clamp<int64_t>(s, 0, dim)
                 : std::clamp<int64_t>(s, 0, dim - 1);
    starts[a] = s;
    steps[a] = step;
  }
  e.allocate(out);
  emitStrided(e, out, in, starts, steps);
  return success();
}

static LogicalResult emitSplit(FunctionEmitter &e, SplitOp op) {
  Value in = op.getInput();
  int64_t rank = FunctionEmitter::typeOf(in).getRank();
  int64_t axis = op.getAxisAttr().getInt();
  if (axis < 0)
    axis += rank;
  int64_t offset = 0;
  for (Value r : op.getResults()) {
    SmallVector<int64_t> starts(rank, 0), steps(rank, 1);
    starts[axis] = offset;
    e.allocate(r);
    emitStrided(e, r, in, starts, steps);
    offset += FunctionEmitter::typeOf(r).getShape()[axis];
  }
  return success();
}

static LogicalResult emitConcat(FunctionEmitter &e, ConcatOp op) {
  Value out = op.getResult();
  auto outShape = FunctionEmitter::typeOf(out).getShape();
  auto outStrides = FunctionEmitter::stridesOf(outShape);
  int64_t axis = op.getAxisAttr().getInt();
  if (axis < 0)
    axis += outShape.size();
  e.allocate(out);
  int64_t offset = 0;
  // Along the last axis (rotate-half in rotary embeddings), each input's
  // rows go to the output's rows at a column offset: by rows, the column
  // loop vectorizes.
  bool byRows =
      e.loopsByRows(out) && axis == (int64_t)outShape.size() - 1 &&
      llvm::all_of(op.getInputs(), [](Value in) {
        return FunctionEmitter::typeOf(in).getShape().back() >= 8;
      });
  for (Value in : op.getInputs()) {
    auto inShape = FunctionEmitter::typeOf(in).getShape();
    if (byRows) {
      int64_t cols = inShape.back();
      std::optional<std::string> read =
          FunctionEmitter::rowOffset(inShape, inShape, e.layoutOf(in));
      e.openRowLoop(FunctionEmitter::numel(in) / cols, cols);
      e.os << "      " << e.name(out) << "[r * " << outShape.back() << " + "
           << offset << " + j] = " << e.name(in) << "[" << read.value_or("i")
           << "];\n";
      e.closeRowLoop();
      offset += cols;
      continue;
    }
    std::string off;
    for (unsigned d = 0; d < inShape.size(); ++d) {
      std::string c =
          inShape[d] == 1 ? "0" : FunctionEmitter::coord(inShape, d, "i");
      if ((int64_t)d == axis)
        c = "(" + c + " + " + std::to_string(offset) + ")";
      off += (off.empty() ? "" : " + ") + c + " * " +
             std::to_string(outStrides[d]);
    }
    if (FunctionEmitter::numel(in) > 0) {
      std::string o = e.name(out), src = e.name(in);
      e.openLoop(FunctionEmitter::numel(in));
      e.os << "    " << o << "[" << (off.empty() ? "0" : off) << "] = " << src
           << "[" << readOffset(e, in) << "];\n";
      e.closeLoop();
    }
    offset += inShape[axis];
  }
  return success();
}

static LogicalResult emitPad(FunctionEmitter &e, PadOp op) {
  Value in = op.getInput(), out = op.getResult();
  auto inShape = FunctionEmitter::typeOf(in).getShape();
  auto outShape = FunctionEmitter::typeOf(out).getShape();
  auto inStrides = e.layoutOf(in);
  unsigned rank = inShape.size();
  e.allocate(out);
  std::string prelude = "    bool inside = true; int64_t off = 0;\n";
  for (unsigned d = 0; d < rank; ++d) {
    std::string c = "(" + FunctionEmitter::coord(outShape, d, "i") + " - " +
                    std::to_string(op.getPads()[d]) + ")";
    std::string D = std::to_string(inShape[d]);
    std::string v = "c" + std::to_string(d);
    prelude += "    int64_t " + v + " = " + c + ";\n";
    switch (op.getMode()) {
    case PadMode::Constant:
      prelude +=
          "    inside = inside && " + v + " >= 0 && " + v + " < " + D + ";\n";
      break;
    case PadMode::Edge:
      prelude += "    " + v + " = " + v + " < 0 ? 0 : (" + v + " >= " + D +
                 " ? " + D + " - 1 : " + v + ");\n";
      break;
    case PadMode::Reflect:
      prelude += "    " + v + " = " + v + " < 0 ? -" + v + " : (" + v +
                 " >= " + D + " ? 2 * (" + D + " - 1) - " + v + " : " + v +
                 ");\n";
      break;
    case PadMode::Wrap:
      prelude += "    " + v + " = ((" + v + " % " + D + ") + " + D + ") % " +
                 D + ";\n";
      break;
    }
    prelude += "    off += " + v + " * " + std::to_string(inStrides[d]) + ";\n";
  }
  Type et = FunctionEmitter::typeOf(out).getElementType();
  // Of the element type, so `?:` has one type (a 16-bit float's literal is
  // a double).
  double v = op.getValue().convertToDouble();
  std::string value = "(" + FunctionEmitter::cType(et) + ")" +
                      (isa<FloatType>(et) ? FunctionEmitter::literal(v, et)
                                          : std::to_string((int64_t)v));
  std::string o = e.name(out), src = e.name(in);
  e.openLoop(FunctionEmitter::numel(out));
  e.os << prelude << "    " << o << "[i] = inside ? " << src
       << "[off] : " << value << ";\n";
  e.closeLoop();
  return success();
}

static LogicalResult emitTrilu(FunctionEmitter &e, TriluOp op) {
  Value in = op.getInput(), out = op.getResult();
  auto shape = FunctionEmitter::typeOf(out).getShape();
  unsigned rank = shape.size();
  e.allocate(out);
  std::string r = FunctionEmitter::coord(shape, rank - 2, "i");
  std::string c = FunctionEmitter::coord(shape, rank - 1, "i");
  // A run-time diagonal is read in the loop, where the tensor is (on a GPU
  // too).
  std::string k = std::to_string(op.getKAttr().getInt()) + "ll";
  if (Value d = op.getDiagonal())
    k = "(" + k + " + (int64_t)" + e.name(d) + "[0])";
  std::string keep =
      "(" + c + " - " + r + (op.getUpper() ? " >= " : " <= ") + k + ")";
  std::string o = e.name(out), src = e.name(in);
  e.openLoop(FunctionEmitter::numel(out));
  e.os << "    " << o << "[i] = " << keep << " ? " << src << "["
       << readOffset(e, in) << "] : (" << FunctionEmitter::cType(out)
       << ")0;\n";
  e.closeLoop();
  return success();
}

/// graph.cumsum: one loop iteration per line along the axis (every other
/// coordinate), which walks the line in order (backwards with reverse)
/// keeping the running sum in the type generated loops compute in.
/// Where line `l` along `axis` starts in memory of `strides`, for lines
/// of `shape` (the line's own dimension is skipped): the offset
/// expression cumsum's and top_k's line loops start from.
static std::string lineBase(ArrayRef<int64_t> shape, int64_t axis,
                            ArrayRef<int64_t> strides) {
  SmallVector<int64_t> lines(shape);
  lines[axis] = 1;
  std::string base = "0";
  for (unsigned d = 0; d < shape.size(); ++d)
    if ((int64_t)d != axis)
      base += " + " + FunctionEmitter::coord(lines, d, "l") + " * " +
              std::to_string(strides[d]) + "ll";
  return base;
}

static LogicalResult emitCumSum(FunctionEmitter &e, CumSumOp op) {
  Value in = op.getInput(), out = op.getResult();
  auto shape = FunctionEmitter::typeOf(out).getShape();
  int64_t axis = *normalizeAxis(op.getAxis(), shape.size());
  auto inStrides = e.layoutOf(in);
  auto outStrides = FunctionEmitter::stridesOf(shape);
  std::string inBase = lineBase(shape, axis, inStrides),
              outBase = lineBase(shape, axis, outStrides);
  Type acc = FunctionEmitter::computeType(
      FunctionEmitter::typeOf(out).getElementType());
  e.allocate(out);
  std::string o = e.name(out), src = e.name(in);
  std::string n = std::to_string(shape[axis]);
  e.openLoop(FunctionEmitter::numel(out) / std::max<int64_t>(shape[axis], 1),
             "l");
  e.os << "    int64_t ib = " << inBase << ", ob = " << outBase << ";\n"
       << "    " << FunctionEmitter::cType(acc) << " s = 0;\n"
       << "    for (int64_t t = 0; t < " << n << "; ++t) {\n"
       << "      int64_t j = " << (op.getReverse() ? n + " - 1 - t" : "t")
       << ";\n";
  std::string read = "(" + FunctionEmitter::cType(acc) + ")" + src +
                     "[ib + j * " + std::to_string(inStrides[axis]) + "ll]";
  std::string write = "      " + o + "[ob + j * " +
                      std::to_string(outStrides[axis]) + "ll] = (" +
                      FunctionEmitter::cType(out) + ")s;\n";
  // Each element is read before its sum is written, so the loop is right
  // even over its own input.
  e.os << "      " << FunctionEmitter::cType(acc) << " v = " << read << ";\n";
  if (op.getExclusive())
    e.os << write << "      s += v;\n";
  else
    e.os << "      s += v;\n" << write;
  e.os << "    }\n";
  e.closeLoop();
  return success();
}

/// graph.top_k: one loop iteration per line along the axis, which walks
/// the line in index order keeping its best k so far, sorted, in the
/// outputs: an element enters only when strictly better than the k-th, and
/// moves up only past strictly worse ones, so of equal values the lower
/// index stays first (onnxruntime's order). No scratch memory, so the loop
/// is the same on a GPU; insertions cost O(k) each, a few per line on
/// unordered data.
static LogicalResult emitTopK(FunctionEmitter &e, TopKOp op) {
  Value in = op.getInput(), vals = op.getValues(), idx = op.getIndices();
  auto inShape = FunctionEmitter::typeOf(in).getShape();
  auto outShape = FunctionEmitter::typeOf(vals).getShape();
  int64_t axis = *normalizeAxis(op.getAxis(), inShape.size());
  int64_t n = inShape[axis], k = op.getK();
  e.allocate(vals);
  e.allocate(idx);
  if (k == 0 || FunctionEmitter::numel(vals) == 0)
    return success();
  auto inStrides = e.layoutOf(in);
  auto outStrides = FunctionEmitter::stridesOf(outShape);
  std::string is = std::to_string(inStrides[axis]) + "ll",
              os = std::to_string(outStrides[axis]) + "ll";
  std::string ct = FunctionEmitter::cType(FunctionEmitter::computeType(
      FunctionEmitter::typeOf(in).getElementType()));
  std::string v = e.name(vals), ix = e.name(idx), src = e.name(in);
  std::string better = op.getLargest() ? " > " : " < ";
  std::string at = "[ob + p * " + os + "]",
              above = "[ob + (p - 1) * " + os + "]";
  e.openLoop(FunctionEmitter::numel(vals) / k, "l");
  e.os << "    int64_t ib = " << lineBase(inShape, axis, inStrides)
       << ", ob = " << lineBase(outShape, axis, outStrides) << ", n = 0;\n"
       << "    for (int64_t t = 0; t < " << n << "; ++t) {\n"
       << "      " << ct << " x = (" << ct << ")" << src << "[ib + t * " << is
       << "];\n"
       << "      if (n == " << k << " && !(x" << better << "(" << ct << ")" << v
       << "[ob + " << k - 1 << "ll * " << os << "])) continue;\n"
       << "      int64_t p = n < " << k << " ? n++ : " << k - 1 << ";\n"
       << "      for (; p > 0 && x" << better << "(" << ct << ")" << v << above
       << "; --p) {\n"
       << "        " << v << at << " = " << v << above << ";\n"
       << "        " << ix << at << " = " << ix << above << ";\n"
       << "      }\n"
       << "      " << v << at << " = " << src << "[ib + t * " << is << "];\n"
       << "      " << ix << at << " = t;\n"
       << "    }\n";
  e.closeLoop();
  return success();
}

/// Stops the program, naming `op`, unless every element p of `indices`
/// lies in [-bound, bound) for bound = bounds[p % bounds.size()]
/// (Program::checkIndices): the loops below address memory with them.
static void emitIndexCheck(FunctionEmitter &e, Operation *op, Value indices,
                           ArrayRef<int64_t> bounds) {
  e.os << "  {\n    static const int64_t bounds[] = {";
  llvm::interleaveComma(bounds, e.os);
  e.os << "};\n    if (P.checkIndices(" << e.name(indices) << ", "
       << FunctionEmitter::numel(indices) << ", bounds, " << bounds.size()
       << ", \"" << FunctionEmitter::where(op) << "\")) return 1;\n  }\n";
}

static LogicalResult emitGatherOp(FunctionEmitter &e, Operation *op, Value data,
                                  Value indices, int64_t axis) {
  Value out = op->getResult(0);
  auto dShape = FunctionEmitter::typeOf(data).getShape();
  auto iShape = FunctionEmitter::typeOf(indices).getShape();
  auto oShape = FunctionEmitter::typeOf(out).getShape();
  auto dStrides = e.layoutOf(data);
  auto iStrides = e.layoutOf(indices);
  if (axis < 0)
    axis += dShape.size();
  unsigned q = iShape.size();
  e.allocate(out);
  std::string idxOff, outer;
  for (unsigned j = 0; j < q; ++j)
    idxOff += (idxOff.empty() ? "" : " + ") +
              FunctionEmitter::coord(oShape, axis + j, "i") + " * " +
              std::to_string(iStrides[j]);
  for (unsigned d = 0; d < dShape.size(); ++d) {
    if ((int64_t)d == axis)
      continue;
    unsigned od = (int64_t)d < axis ? d : d + q - 1;
    outer += " + " + FunctionEmitter::coord(oShape, od, "i") + " * " +
             std::to_string(dStrides[d]);
  }
  std::string o = e.name(out), src = e.name(data), idx = e.name(indices);
  std::string D = std::to_string(dShape[axis]);
  emitIndexCheck(e, op, indices, {dShape[axis]});
  e.openLoop(FunctionEmitter::numel(out));
  e.os << "    int64_t k = (int64_t)" << idx << "["
       << (idxOff.empty() ? "0" : idxOff) << "];\n    if (k < 0) k += " << D
       << ";\n    " << o << "[i] = " << src << "[k * " << dStrides[axis]
       << outer << "];\n";
  e.closeLoop();
  return success();
}

/// graph.gather_elements: a loop over the result (the indices' shape), each
/// element read from `data` at its own coordinates with the axis one
/// replaced by its index.
static LogicalResult emitGatherElements(FunctionEmitter &e,
                                        GatherElementsOp op) {
  Value data = op.getData(), indices = op.getIndices(), out = op.getResult();
  auto dShape = FunctionEmitter::typeOf(data).getShape();
  auto oShape = FunctionEmitter::typeOf(out).getShape();
  auto dStrides = e.layoutOf(data);
  auto iStrides = e.layoutOf(indices);
  int64_t axis = op.getAxis();
  if (axis < 0)
    axis += dShape.size();
  std::string idxOff = "0", outer;
  for (unsigned d = 0; d < oShape.size(); ++d) {
    std::string c = FunctionEmitter::coord(oShape, d, "i");
    idxOff += " + " + c + " * " + std::to_string(iStrides[d]);
    if ((int64_t)d != axis)
      outer += " + " + c + " * " + std::to_string(dStrides[d]);
  }
  std::string D = std::to_string(dShape[axis]);
  emitIndexCheck(e, op, indices, {dShape[axis]});
  e.allocate(out);
  e.openLoop(FunctionEmitter::numel(out));
  e.os << "    int64_t k = (int64_t)" << e.name(indices) << "[" << idxOff
       << "];\n    if (k < 0) k += " << D << ";\n    " << e.name(out)
       << "[i] = " << e.name(data) << "[k * " << dStrides[axis] << outer
       << "];\n";
  e.closeLoop();
  return success();
}

/// Fails unless the plan gave `op`'s operands row-major memory (the loops
/// below index them so; Layouts asks for it).
static LogicalResult requireRowMajor(FunctionEmitter &e, Operation *op) {
  for (Value v : op->getOperands())
    if (!e.isRowMajor(v))
      return op->emitError() << op->getName()
                             << ": an operand is not row-major in the memory "
                                "plan; run dist-prepare-for-emission";
  return success();
}

/// graph.gather_nd: after the indices' range check, a loop over the result
/// (row-major), each element read from the data at its tuple's offset.
static LogicalResult emitGatherND(FunctionEmitter &e, GatherNDOp op) {
  if (failed(requireRowMajor(e, op)))
    return failure();
  Value data = op.getData(), indices = op.getIndices(), out = op.getResult();
  auto dShape = FunctionEmitter::typeOf(data).getShape();
  auto iShape = FunctionEmitter::typeOf(indices).getShape();
  auto dStrides = FunctionEmitter::stridesOf(dShape);
  int64_t b = static_cast<int64_t>(op.getBatchDims()), k = iShape.back();
  int64_t inner = 1, perBatch = 1;
  for (int64_t d = b + k; d < (int64_t)dShape.size(); ++d)
    inner *= dShape[d];
  for (int64_t d = b; d + 1 < (int64_t)iShape.size(); ++d)
    perBatch *= iShape[d];
  int64_t batchStride = b ? dStrides[b - 1] : 0;
  emitIndexCheck(e, op, indices, dShape.slice(b, k));
  e.allocate(out);
  e.openLoop(FunctionEmitter::numel(out));
  e.os << "    const int64_t q = i / " << inner << ";\n    int64_t off = q / "
       << perBatch << " * " << batchStride << " + i % " << inner << ";\n";
  for (int64_t j = 0; j < k; ++j)
    e.os << "    { int64_t v = (int64_t)" << e.name(indices) << "[q * " << k
         << " + " << j << "]; if (v < 0) v += " << dShape[b + j]
         << "; off += v * " << dStrides[b + j] << "; }\n";
  e.os << "    " << e.name(out) << "[i] = " << e.name(data) << "[off];\n";
  e.closeLoop();
  return success();
}

/// The C expression a scatter writes: the element `x` combined with the
/// update `u` by `reduction`.
static std::string scatterCombine(ScatterReduction reduction) {
  switch (reduction) {
  case ScatterReduction::None:
    return "u";
  case ScatterReduction::Add:
    return "x + u";
  case ScatterReduction::Mul:
    return "x * u";
  case ScatterReduction::Max: // NaN wins, as in numpy.maximum
    return "(x != x || x > u) ? x : u";
  case ScatterReduction::Min:
    return "(x != x || x < u) ? x : u";
  }
  llvm_unreachable("scatter reduction");
}

/// graph.scatter_elements: the data copied, the indices' range checked,
/// then one loop iteration per line of `updates` along the axis (in
/// parallel: each writes one line of the result), walking it in order so
/// that with `none` the last update wins.
static LogicalResult emitScatterElements(FunctionEmitter &e,
                                         ScatterElementsOp op) {
  if (failed(requireRowMajor(e, op)))
    return failure();
  Value data = op.getData(), indices = op.getIndices(),
        updates = op.getUpdates(), out = op.getResult();
  auto dShape = FunctionEmitter::typeOf(data).getShape();
  auto uShape = FunctionEmitter::typeOf(updates).getShape();
  auto dStrides = FunctionEmitter::stridesOf(dShape);
  int64_t rank = dShape.size();
  int64_t axis = *normalizeAxis(static_cast<int64_t>(op.getAxis()), rank);
  emitIndexCheck(e, op, indices, dShape[axis]);
  e.allocate(out);
  std::string o = e.name(out);
  e.openLoop(FunctionEmitter::numel(out));
  e.os << "    " << o << "[i] = " << e.name(data) << "[i];\n";
  e.closeLoop();
  // The lines: the updates' shape without the axis.
  SmallVector<int64_t> lines(uShape);
  lines.erase(lines.begin() + axis);
  int64_t innerU = 1;
  for (int64_t d = axis + 1; d < rank; ++d)
    innerU *= uShape[d];
  std::string base = "0";
  for (int64_t d = 0, l = 0; d < rank; ++d) {
    if (d == axis)
      continue;
    base += " + " + FunctionEmitter::coord(lines, l++, "l") + " * " +
            std::to_string(dStrides[d]);
  }
  Type ct = FunctionEmitter::computeType(
      FunctionEmitter::typeOf(out).getElementType());
  std::string c = FunctionEmitter::cType(ct), t = FunctionEmitter::cType(out);
  std::string combine = scatterCombine(op.getReduction());
  int64_t numLines = 1;
  for (int64_t n : lines)
    numLines *= n;
  e.openLoop(numLines, "l");
  e.os << "    const int64_t base = " << base << ", first = l / " << innerU
       << " * " << uShape[axis] * innerU << " + l % " << innerU
       << ";\n    for (int64_t p = 0; p < " << uShape[axis]
       << "; ++p) {\n      const int64_t at = first + p * " << innerU
       << ";\n      int64_t k = (int64_t)" << e.name(indices)
       << "[at];\n      if (k < 0) k += " << dShape[axis]
       << ";\n      const int64_t dst = base + k * " << dStrides[axis]
       << ";\n      const " << c << " x = " << o
       << "[dst], u = " << e.name(updates) << "[at];\n      (void)x;\n      "
       << o << "[dst] = (" << t << ")(" << combine << ");\n    }\n";
  e.closeLoop();
  return success();
}

/// graph.scatter_nd: the data copied, the indices' range checked, then one
/// loop iteration per element of a slice (in parallel: each writes its own
/// column of the result) walking the tuples in order, so that with `none`
/// the last tuple wins.
static LogicalResult emitScatterND(FunctionEmitter &e, ScatterNDOp op) {
  if (failed(requireRowMajor(e, op)))
    return failure();
  Value data = op.getData(), indices = op.getIndices(),
        updates = op.getUpdates(), out = op.getResult();
  auto dShape = FunctionEmitter::typeOf(data).getShape();
  auto iShape = FunctionEmitter::typeOf(indices).getShape();
  auto dStrides = FunctionEmitter::stridesOf(dShape);
  int64_t k = iShape.back();
  int64_t inner = 1, tuples = 1;
  for (int64_t d = k; d < (int64_t)dShape.size(); ++d)
    inner *= dShape[d];
  for (int64_t n : iShape.drop_back())
    tuples *= n;
  emitIndexCheck(e, op, indices, dShape.take_front(k));
  e.allocate(out);
  std::string o = e.name(out);
  e.openLoop(FunctionEmitter::numel(out));
  e.os << "    " << o << "[i] = " << e.name(data) << "[i];\n";
  e.closeLoop();
  Type ct = FunctionEmitter::computeType(
      FunctionEmitter::typeOf(out).getElementType());
  std::string c = FunctionEmitter::cType(ct), t = FunctionEmitter::cType(out);
  e.openLoop(inner, "r");
  e.os << "    for (int64_t q = 0; q < " << tuples
       << "; ++q) {\n      int64_t dst = r;\n";
  for (int64_t j = 0; j < k; ++j)
    e.os << "      { int64_t v = (int64_t)" << e.name(indices) << "[q * " << k
         << " + " << j << "]; if (v < 0) v += " << dShape[j] << "; dst += v * "
         << dStrides[j] << "; }\n";
  e.os << "      const " << c << " x = " << o
       << "[dst], u = " << e.name(updates) << "[q * " << inner
       << " + r];\n      (void)x;\n      " << o << "[dst] = (" << t << ")("
       << scatterCombine(op.getReduction()) << ");\n    }\n";
  e.closeLoop();
  return success();
}

/// A copy between two layouts of one shape on the CPU (NCHW to channels-last
/// and back) as a loop over rows whose column loop walks one dimension with
/// a fixed stride on both sides: the output's innermost dimension when it
/// has 8 or more elements (stores in order), else the input's (loads in
/// order). The rows run in the output's memory order, so consecutive rows
/// write nearby, and their offsets are computed once a row rather than
/// once an element. False (nothing emitted) when neither dimension is long
/// enough or the target is not the CPU.
static bool emitCopyByRows(FunctionEmitter &e, Value in, Value out) {
  auto shape = FunctionEmitter::typeOf(out).getShape();
  SmallVector<int64_t> inS(e.layoutOf(in)), outS(e.layoutOf(out));
  if (e.options.target != Target::CPU || shape.size() < 2)
    return false;
  auto unitDim = [&](ArrayRef<int64_t> strides) -> std::optional<unsigned> {
    for (unsigned d = 0; d < shape.size(); ++d)
      if (strides[d] == 1 && shape[d] >= 8)
        return d;
    return std::nullopt;
  };
  std::optional<unsigned> col = unitDim(outS);
  if (!col)
    col = unitDim(inS);
  if (!col)
    return false;
  // The other dimensions, the output's outermost first.
  SmallVector<unsigned> rows;
  for (unsigned d = 0; d < shape.size(); ++d)
    if (d != *col)
      rows.push_back(d);
  llvm::stable_sort(rows,
                    [&](unsigned a, unsigned b) { return outS[a] > outS[b]; });
  SmallVector<int64_t> rowShape, rowIn, rowOut;
  for (unsigned d : rows) {
    rowShape.push_back(shape[d]);
    rowIn.push_back(inS[d]);
    rowOut.push_back(outS[d]);
  }
  auto dense = emit::rowMajorStrides(rowShape);
  std::string inRow =
      FunctionEmitter::stridedOffset(rowShape, dense, rowShape, rowIn, "r");
  std::string outRow =
      FunctionEmitter::stridedOffset(rowShape, dense, rowShape, rowOut, "r");
  auto at = [](const std::string &row, int64_t stride) {
    return row + " + j" +
           (stride == 1 ? std::string() : " * " + std::to_string(stride));
  };
  e.openRowLoop(FunctionEmitter::numel(out) / shape[*col], shape[*col]);
  e.os << "      " << e.name(out) << "[" << at(outRow, outS[*col])
       << "] = " << e.name(in) << "[" << at(inRow, inS[*col]) << "];\n";
  e.closeRowLoop();
  return true;
}

LogicalResult distopt::codegen::emitDataOp(FunctionEmitter &e, Operation *op) {
  if (failed(e.checkTypes(op)))
    return failure();
  // Views (the plan's): the result points into its operand's memory.
  if (auto b = emit::bufferOf(op->getResult(0)); b && b.isView()) {
    for (Value r : op->getResults())
      e.alias(r, op->getOperand(0));
    return success();
  }
  if (auto copy = dyn_cast<emit::CopyOp>(op)) {
    // A strided value into a buffer of the layout the plan gave the copy.
    Value in = copy.getInput(), out = copy.getResult();
    auto shape = FunctionEmitter::typeOf(out).getShape();
    e.allocate(out);
    std::string dst = e.name(out), src = e.name(in);
    if (emitCopyByRows(e, in, out))
      return success();
    e.openLoop(FunctionEmitter::numel(out));
    e.os << "    " << dst << "[i] = " << src << "["
         << FunctionEmitter::stridedOffset(shape, e.layoutOf(out), shape,
                                           e.layoutOf(in), "i")
         << "];\n";
    e.closeLoop();
    return success();
  }
  if (isAliasOp(op))
    return op->emitError() << "dist-compile: " << op->getName()
                           << " is not a view in the memory plan; run "
                              "dist-prepare-for-emission";
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case<WeightOp>([&](auto o) { return emitWeight(e, o); })
      .Case<ConstantOp>([&](auto o) { return emitConstant(e, o); })
      .Case<IotaOp>([&](auto o) { return emitIota(e, o); })
      .Case<TransposeOp>([&](auto o) { return emitTranspose(e, o); })
      .Case<SliceOp>([&](auto o) { return emitSlice(e, o); })
      .Case<SplitOp>([&](auto o) { return emitSplit(e, o); })
      .Case<ConcatOp>([&](auto o) { return emitConcat(e, o); })
      .Case<ExpandOp>([&](ExpandOp o) {
        Value out = o.getResult(), in = o.getInput();
        e.allocate(out);
        auto shape = FunctionEmitter::typeOf(out).getShape();
        auto inShape = FunctionEmitter::typeOf(in).getShape();
        // A broadcast copy: by rows, its column loop vectorizes.
        std::optional<std::string> row =
            e.loopsByRows(out)
                ? FunctionEmitter::rowOffset(shape, inShape, e.layoutOf(in))
                : std::nullopt;
        if (row) {
          e.openRowLoop(out);
          e.os << "      " << e.name(out) << "[i] = " << e.name(in) << "["
               << *row << "];\n";
          e.closeRowLoop();
          return success();
        }
        emitGather(e, out, in,
                   FunctionEmitter::stridedOffset(
                       shape, FunctionEmitter::stridesOf(shape), inShape,
                       e.layoutOf(in), "i"));
        return success();
      })
      .Case<PadOp>([&](auto o) { return emitPad(e, o); })
      .Case<TriluOp>([&](auto o) { return emitTrilu(e, o); })
      .Case<CumSumOp>([&](auto o) { return emitCumSum(e, o); })
      .Case<TopKOp>([&](auto o) { return emitTopK(e, o); })
      .Case<GatherOp>([&](GatherOp o) {
        return emitGatherOp(e, o, o.getData(), o.getIndices(),
                            o.getAxisAttr().getInt());
      })
      .Case<GatherElementsOp>(
          [&](GatherElementsOp o) { return emitGatherElements(e, o); })
      .Case<GatherNDOp>([&](GatherNDOp o) { return emitGatherND(e, o); })
      .Case<ScatterElementsOp>(
          [&](ScatterElementsOp o) { return emitScatterElements(e, o); })
      .Case<ScatterNDOp>([&](ScatterNDOp o) { return emitScatterND(e, o); })
      .Case<EmbeddingOp>([&](EmbeddingOp o) -> LogicalResult {
        Type it = FunctionEmitter::typeOf(o.getIndices()).getElementType();
        bool rt =
            FunctionEmitter::typeOf(o.getTable()).getElementType().isF32() &&
            (it.isInteger(32) || it.isInteger(64)) &&
            FunctionEmitter::typeOf(o.getTable()).getRank() == 2;
        if (!rt)
          return emitGatherOp(e, o, o.getTable(), o.getIndices(), 0);
        e.allocate(o.getResult());
        e.os << "  { distrt_tensor t = " << e.desc(o.getTable())
             << ", x = " << e.desc(o.getIndices())
             << ", y = " << e.desc(o.getResult()) << ";\n  ";
        e.call("distrt_embedding(P.ctx, &t, &x, &y)", o);
        e.os << "  }\n";
        return success();
      })
      .Default([&](Operation *) {
        return op->emitError() << op->getName() << " has no lowering";
      });
}
