//===- FunctionEmitter.cpp - Values, buffers, types, index math -*- C++ -*-===//
//
// Part of DistOpt. The bookkeeping every per-family emitter uses.
//
//===----------------------------------------------------------------------===//
#include "lib/Codegen/FunctionEmitter.h"

#include "dialects/Dist/DistOps.h"
#include "dialects/Emit/KernelRules.h"
#include "dialects/Emit/MemoryPlan.h"
#include "dialects/Graph/GraphOps.h"
#include "dist/Diagnostics.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"

#include <cmath>
#include <cstdio>

using namespace mlir;
namespace emit = distopt::emit;
using namespace distopt::codegen;

std::string FunctionEmitter::name(Value v) {
  auto w = wide.find(v);
  if (w != wide.end())
    return w->second;
  auto it = names.find(v);
  if (it != names.end())
    return it->second;
  return "/*unnamed value*/nullptr";
}

std::string FunctionEmitter::shardOf(Value v) {
  Operation *def = v.getDefiningOp();
  auto shard = def ? def->getAttrOfType<DenseI64ArrayAttr>("dist.tp_shard")
                   : DenseI64ArrayAttr();
  auto zero = def ? def->getAttrOfType<DictionaryAttr>("dist.zero_shard")
                  : DictionaryAttr();
  if (!shard && !zero)
    return "";
  if (auto it = shards.find(v); it != shards.end())
    return it->second;
  // A tensor-parallel rank's index is its rank's tensor coordinate (the
  // fastest one, lib/Schedule/RankLayout.h); an expert-parallel rank's,
  // its replica's place in its expert group (stride tp).
  SmallVector<distopt::dist::ShardAxis> axes;
  if (shard)
    axes = distopt::dist::shardAxes(shard.asArrayRef());
  auto part = [](const distopt::dist::ShardAxis &a) {
    std::string index = a.stride == 1 ? "P.rank % " + std::to_string(a.parts)
                                      : "P.rank / " + std::to_string(a.stride) +
                                            " % " + std::to_string(a.parts);
    return std::to_string(a.dim) + ", " + std::to_string(a.blocks) + ", " +
           std::to_string(a.parts) + ", " + index;
  };
  auto list = [](ArrayRef<int64_t> values) {
    std::string s;
    for (auto [k, d] : llvm::enumerate(values))
      s += (k ? ", " : "") + std::to_string(d);
    return s;
  };
  std::string n = "shard" + std::to_string(counter++);
  shards[v] = n;
  if (!zero) {
    // Two axes: the second's part of the first's (an expert rank's
    // tensor-parallel part of its experts), as dg::Shard's outer part.
    os << "  const dg::Shard " << n << " = {" << part(axes.back());
    if (axes.size() == 2)
      os << ", nullptr, 0, " << part(axes.front());
    os << "};\n";
    return n;
  }
  // A ZeRO block (dim -1): block `index` of the flattened tensor of
  // `shape` (a tensor-parallel part when the op is one too), numbered by
  // this rank's place in the group that holds it (dist.groups: one per
  // tensor-parallel part).
  SmallVector<int64_t> whole = distopt::dist::wholeShape(def);
  SmallVector<SmallVector<int64_t>> groups = distopt::dist::runGroups(def);
  size_t size = groups.front().size();
  SmallVector<int64_t> all;
  for (const SmallVector<int64_t> &g : groups)
    all.append(g.begin(), g.end());
  os << "  static const int64_t " << n << "_shape[] = {" << list(whole)
     << "};\n  static const int32_t " << n << "_groups[] = {" << list(all)
     << "};\n  const int32_t *" << n << "_group = P.groupHolding(" << n
     << "_groups, " << groups.size() << ", " << size << ", \"" << where(def)
     << "\");\n  if (!" << n << "_group) return 1;\n  int " << n
     << "_index = 0;\n  while (" << n << "_group[" << n
     << "_index] != P.rank) ++" << n << "_index;\n  const dg::Shard " << n
     << " = {-1, 1, " << size << ", " << n << "_index, " << n << "_shape, "
     << whole.size();
  // Of a tensor-parallel part: the innermost axis, and with two axes the
  // experts' part it is of (dg::Shard's outer part).
  if (shard)
    os << ", " << part(axes.back());
  if (axes.size() == 2)
    os << ", " << part(axes.front());
  os << "};\n";
  return n;
}

void FunctionEmitter::bindPersistent(Value v, llvm::StringRef bufferName,
                                     bool &freshVar) {
  std::string shard = shardOf(v);
  std::string n = "v" + std::to_string(counter++);
  names[v] = n;
  auto t = typeOf(v);
  std::string dims = "{";
  for (int64_t d : t.getShape())
    dims += std::to_string(d) + ", ";
  dims += "0}";
  os << "  bool fresh_" << n << " = false;\n  " << cType(v) << " *" << n
     << ";\n  { static const int64_t dims[] = " << dims << ";\n    " << n
     << " = (" << cType(v) << " *)P.persistentBuffer(\"" << bufferName << "\", "
     << dgType(t.getElementType()) << ", " << t.getRank() << ", dims, fresh_"
     << n << (shard.empty() ? "" : ", &" + shard) << "); }\n  if (!" << n
     << ") return 1;\n";
  freshVar = true;
}

void FunctionEmitter::bindInput(Value v, llvm::StringRef expr) {
  std::string n = "v" + std::to_string(counter++);
  names[v] = n;
  os << "  " << cType(v) << " *" << n << " = (" << cType(v) << " *)" << expr
     << ";\n";
}

void FunctionEmitter::bindResident(Value v, llvm::StringRef key) {
  std::string n = "v" + std::to_string(counter++);
  names[v] = n;
  size_t bytes = (size_t)numel(v) * byteSize(typeOf(v).getElementType());
  os << "  bool fresh_" << n << " = false;\n  " << cType(v) << " *" << n
     << " = (" << cType(v) << " *)P.residentBuffer(\"" << prefix << "."
     << key << "\", " << bytes << ", fresh_" << n << ");\n  if (!" << n
     << ") return 1;\n";
}

void FunctionEmitter::bindKernelInput(Value arg, Value value) {
  outer[arg] = value;
  names[arg] = name(value);
}

Value FunctionEmitter::resolve(Value v) const {
  for (auto it = outer.find(v); it != outer.end(); it = outer.find(v))
    v = it->second;
  return v;
}

llvm::SmallVector<int64_t> FunctionEmitter::layoutOf(Value v) const {
  return emit::stridesOf(resolve(v));
}

bool FunctionEmitter::isRowMajor(Value v) const {
  auto t = typeOf(v);
  auto st = layoutOf(v);
  auto rm = emit::rowMajorStrides(t.getShape());
  for (int64_t d = 0; d < t.getRank(); ++d)
    if (t.getShape()[d] != 1 && st[d] != rm[d])
      return false;
  return true;
}

bool FunctionEmitter::isConstant(Value v) const {
  if (training)
    return false;
  v = resolve(v);
  for (emit::BufferAttr b = emit::bufferOf(v); b && b.isView();
       b = emit::bufferOf(v))
    v = v.getDefiningOp()->getOperand(0);
  emit::BufferAttr b = emit::bufferOf(v);
  Operation *def = v.getDefiningOp();
  return b && b.isResident() && def &&
         (isa<distopt::graph::WeightOp>(def) ||
          isa<distopt::graph::ConstantOp>(def));
}

void FunctionEmitter::allocate(Value v) {
  std::string n = "v" + std::to_string(counter++);
  names[v] = n;
  emit::BufferAttr b = emit::bufferOf(v);
  if (auto over = updatesInPlace.find(v); over != updatesInPlace.end()) {
    os << "  " << cType(v) << " *" << n << " = " << name(over->second)
       << "; // updated in place\n";
  } else if (auto slot = resultSlots.find(v); slot != resultSlots.end()) {
    os << "  " << cType(v) << " *" << n << " = (" << cType(v) << " *)out["
       << slot->second << "];\n";
  } else if (b && b.isArena()) {
    os << "  " << cType(v) << " *" << n << " = (" << cType(v)
       << " *)(arena + " << b.getOffset() << ");\n";
  } else if (b && b.isArgument()) {
    // A called function's argument: the caller's buffer (`in`, the stage
    // functions' signature), read in place.
    os << "  " << cType(v) << " *" << n << " = (" << cType(v) << " *)in["
       << cast<BlockArgument>(v).getArgNumber() << "];\n";
  } else {
    size_t bytes = (size_t)numel(v) * byteSize(typeOf(v).getElementType());
    os << "  " << cType(v) << " *" << n << " = (" << cType(v)
       << " *)P.alloc(" << bytes << ");\n  if (!" << n << ") return 1;\n";
  }
  Type et = typeOf(v).getElementType();
  if (widening && (et.isF16() || et.isBF16())) {
    std::string w = "w" + std::to_string(counter++);
    os << "  float *" << w << " = (float *)P.alloc(" << numel(v) * 4
       << ");\n  if (!" << w << ") return 1;\n";
    wide[v] = w;
  }
}

LogicalResult
FunctionEmitter::emitWidened(Operation *op,
                             llvm::function_ref<LogicalResult()> emit) {
  auto low = [](Type t) {
    Type et = llvm::cast<RankedTensorType>(t).getElementType();
    return et.isF16() || et.isBF16();
  };
  if (llvm::none_of(op->getOperandTypes(), low) &&
      llvm::none_of(op->getResultTypes(), low))
    return emit();
  widening = true;
  for (Value v : op->getOperands()) {
    if (!low(v.getType()) || wide.count(v))
      continue;
    std::string w = "w" + std::to_string(counter++), src = name(v);
    os << "  float *" << w << " = (float *)P.alloc(" << numel(v) * 4
       << ");\n  if (!" << w << ") return 1;\n";
    openLoop(numel(v));
    os << "    " << w << "[i] = (float)" << src << "[i];\n";
    closeLoop();
    wide[v] = w;
  }
  LogicalResult r = emit();
  widening = false;
  llvm::SmallVector<std::pair<Value, std::string>> copies(wide.begin(),
                                                          wide.end());
  wide.clear();
  if (failed(r))
    return failure();
  for (Value v : op->getResults())
    for (auto &[c, w] : copies)
      if (c == v) {
        openLoop(numel(v));
        os << "    " << name(v) << "[i] = " << w << "[i];\n";
        closeLoop();
      }
  for (auto &[c, w] : copies)
    os << "  P.release(" << w << ");\n";
  return success();
}

void FunctionEmitter::alias(Value v, Value of) {
  emit::BufferAttr b = emit::bufferOf(v);
  int64_t offset = b && b.isView() ? b.getOffset() : 0;
  if (!offset) {
    names[v] = name(of);
    return;
  }
  std::string n = "v" + std::to_string(counter++);
  names[v] = n;
  os << "  " << cType(v) << " *" << n << " = " << name(of) << " + " << offset
     << ";\n";
}

void FunctionEmitter::call(llvm::StringRef expr, Operation *op) {
  os << "  if (P.check(" << expr << ", \"" << where(op) << "\")) return 1;\n";
}

unsigned FunctionEmitter::positionOf(Operation *op) {
  return positions.lookup(op);
}

void FunctionEmitter::computeLifetimes(Block &body) {
  unsigned pos = 0;
  for (Operation &op : body)
    positions[&op] = pos++;
  auto plan = body.getParentOp()->getAttrOfType<emit::MemoryPlanAttr>(
      emit::kMemoryPlanAttr);
  // The arena is allocated on the first run and kept (Program::arena).
  os << "  char *arena = (char *)P.arena(\""
     << (arenaName.empty() ? prefix : arenaName) << "\", "
     << (arenaBytes ? *arenaBytes
         : plan     ? plan.getArena()
                    : 0)
     << ");\n  if (!arena) return 1;\n";
}

std::string FunctionEmitter::cType(Type t) {
  if (t.isF32())
    return "float";
  if (t.isF16())
    return "dg::f16";
  if (t.isBF16())
    return "dg::bf16";
  if (t.isF64())
    return "double";
  if (auto it = llvm::dyn_cast<IntegerType>(t)) {
    unsigned w = it.getWidth();
    if (w == 1)
      return "bool";
    if (w != 8 && w != 16 && w != 32 && w != 64)
      return "";
    return (it.isUnsigned() ? "uint" : "int") + std::to_string(w) + "_t";
  }
  return "";
}

std::string FunctionEmitter::dgType(Type t) {
  if (t.isF32())
    return "dg::F32";
  if (t.isF16())
    return "dg::F16";
  if (t.isF64())
    return "dg::F64";
  if (auto it = llvm::dyn_cast<IntegerType>(t)) {
    unsigned w = it.getWidth();
    if (w == 1)
      return "dg::BOOL";
    if (w != 8 && w != 16 && w != 32 && w != 64)
      return "";
    return std::string(it.isUnsigned() ? "dg::U" : "dg::I") + std::to_string(w);
  }
  return "";
}

std::string FunctionEmitter::rtType(Type t) {
  if (t.isF32())
    return "DISTRT_F32";
  if (t.isF16())
    return "DISTRT_F16";
  if (t.isBF16())
    return "DISTRT_BF16";
  if (t.isSignlessInteger(32) || t.isSignedInteger(32))
    return "DISTRT_I32";
  if (t.isSignlessInteger(64) || t.isSignedInteger(64))
    return "DISTRT_I64";
  if (t.isUnsignedInteger(8) || t.isInteger(1))
    return "DISTRT_U8";
  return "";
}

size_t FunctionEmitter::byteSize(Type t) {
  return (size_t)emit::elementBytes(t);
}

std::string FunctionEmitter::desc(Value v) {
  return desc(v, typeOf(v).getShape());
}

std::string FunctionEmitter::desc(Value v, llvm::ArrayRef<int64_t> dims) {
  bool strided = !wide.count(v) && dims == typeOf(v).getShape() && !isRowMajor(v);
  std::string s = std::string(strided ? "dg::TS(" : "dg::T(") + name(v) + ", " +
                  (wide.count(v) ? std::string("DISTRT_F32")
                                 : rtType(typeOf(v).getElementType())) +
                  ", {";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? ", " : "") + std::to_string(dims[i]);
  s += "}";
  if (strided) {
    s += ", {";
    auto st = layoutOf(v);
    for (size_t i = 0; i < st.size(); ++i)
      s += (i ? ", " : "") + std::to_string(st[i]);
    s += "}";
  }
  return s + ")";
}

std::string FunctionEmitter::descWithUnitHeight(Value v) {
  SmallVector<int64_t> dims(typeOf(v).getShape());
  if (wide.count(v) || isRowMajor(v)) {
    dims.insert(dims.end() - 1, 1);
    return desc(v, dims);
  }
  // The unit dim's stride is what a dense one would have (NWC becomes
  // NHWC's strides), so the runtime sees the layout it knows.
  SmallVector<int64_t> st = layoutOf(v);
  st.insert(st.end() - 1, st.back() * dims.back());
  dims.insert(dims.end() - 1, 1);
  std::string s =
      "dg::TS(" + name(v) + ", " + rtType(typeOf(v).getElementType()) + ", {";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? ", " : "") + std::to_string(dims[i]);
  s += "}, {";
  for (size_t i = 0; i < st.size(); ++i)
    s += (i ? ", " : "") + std::to_string(st[i]);
  return s + "})";
}

std::string FunctionEmitter::where(Operation *op) {
  std::string s = op->getName().getStringRef().str();
  if (StringRef schedule = scheduleDescription(op->getLoc());
      !schedule.empty()) {
    s += " (" + schedule.str() + ")";
  } else if (auto loc = llvm::dyn_cast<FileLineColLoc>(op->getLoc())) {
    s += " at " + loc.getFilename().str() + ":" +
         std::to_string(loc.getLine()) + ":" + std::to_string(loc.getColumn());
  } else if (auto nl = llvm::dyn_cast<NameLoc>(op->getLoc())) {
    s += " (node '" + nl.getName().str() + "')";
  } else if (auto fl = llvm::dyn_cast<FusedLoc>(op->getLoc())) {
    for (Location l : fl.getLocations())
      if (auto nl = llvm::dyn_cast<NameLoc>(l)) {
        s += " (node '" + nl.getName().str() + "')";
        break;
      }
  }
  // The string goes into a C string literal.
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += (c == '\n' ? ' ' : c);
  }
  return out;
}

LogicalResult FunctionEmitter::checkTypes(Operation *op) {
  for (Type t :
       llvm::concat<Type>(op->getOperandTypes(), op->getResultTypes())) {
    auto rt = llvm::dyn_cast<RankedTensorType>(t);
    if (!rt)
      return op->emitError()
             << op->getName() << " has a non-tensor operand or result " << t
             << "; dist-compile lowers ranked tensors only";
    if (!rt.hasStaticShape())
      return op->emitError() << op->getName() << ": dynamic shape " << t
                             << " has no lowering; pin the shapes "
                                "(--input-shape=NAME:D0xD1...)";
    if (cType(rt.getElementType()).empty())
      return op->emitError()
             << op->getName() << ": element type " << rt.getElementType()
             << " has no lowering (supported: f32, f64, f16, bf16, i1, i8-i64, ui8-ui64)";
    if (rt.getRank() > 8)
      return op->emitError() << op->getName() << ": rank " << rt.getRank()
                             << " above 8 has no lowering";
  }
  return success();
}

llvm::SmallVector<int64_t> FunctionEmitter::stridesOf(ArrayRef<int64_t> shape) {
  llvm::SmallVector<int64_t> s(shape.size(), 1);
  for (int i = (int)shape.size() - 2; i >= 0; --i)
    s[i] = s[i + 1] * shape[i + 1];
  return s;
}

std::string FunctionEmitter::coord(ArrayRef<int64_t> shape, unsigned dim,
                                   llvm::StringRef idx) {
  auto st = stridesOf(shape);
  std::string e = idx.str();
  if (st[dim] != 1)
    e = "(" + e + " / " + std::to_string(st[dim]) + ")";
  if (dim != 0)
    e = "(" + e + " % " + std::to_string(shape[dim]) + ")";
  return e;
}

std::string FunctionEmitter::broadcastOffset(ArrayRef<int64_t> out,
                                             ArrayRef<int64_t> in,
                                             llvm::StringRef idx) {
  if (out == in)
    return idx.str();
  int64_t n = 1;
  for (int64_t d : in)
    n *= d;
  if (n == 1)
    return "0";
  auto inStrides = stridesOf(in);
  unsigned lead = out.size() - in.size();
  std::string e;
  for (unsigned k = 0; k < in.size(); ++k) {
    if (in[k] == 1)
      continue;
    std::string c = coord(out, lead + k, idx);
    if (!e.empty())
      e += " + ";
    e += inStrides[k] == 1 ? c : c + " * " + std::to_string(inStrides[k]);
  }
  return e.empty() ? "0" : "(" + e + ")";
}

std::string FunctionEmitter::stridedOffset(ArrayRef<int64_t> out,
                                           ArrayRef<int64_t> outStrides,
                                           ArrayRef<int64_t> in,
                                           ArrayRef<int64_t> inStrides,
                                           llvm::StringRef idx) {
  if (out == in && outStrides == inStrides)
    return idx.str();
  auto rowMajor = emit::rowMajorStrides(out);
  if (outStrides == ArrayRef<int64_t>(rowMajor) &&
      ArrayRef<int64_t>(emit::rowMajorStrides(in)) == inStrides)
    return broadcastOffset(out, in, idx);
  int64_t total = 1;
  for (int64_t d : out)
    total *= d;
  unsigned lead = out.size() - in.size();
  std::string e;
  for (unsigned k = 0; k < in.size(); ++k) {
    if (in[k] == 1)
      continue;
    unsigned d = lead + k;
    // Coordinate d of the dense output position idx.
    std::string c = idx.str();
    if (outStrides[d] != 1)
      c = "(" + c + " / " + std::to_string(outStrides[d]) + ")";
    if (outStrides[d] * out[d] != total)
      c = "(" + c + " % " + std::to_string(out[d]) + ")";
    if (!e.empty())
      e += " + ";
    e += inStrides[k] == 1 ? c : c + " * " + std::to_string(inStrides[k]);
  }
  return e.empty() ? "0" : "(" + e + ")";
}

std::optional<std::string>
FunctionEmitter::rowOffset(ArrayRef<int64_t> out, ArrayRef<int64_t> in,
                           ArrayRef<int64_t> inStrides) {
  if (out == in && ArrayRef<int64_t>(emit::rowMajorStrides(in)) == inStrides)
    return std::nullopt;
  if (in.empty())
    return std::string("0");
  auto outer = out.drop_back();
  std::string row = stridedOffset(outer, emit::rowMajorStrides(outer),
                                  in.drop_back(), inStrides.drop_back(), "r");
  if (in.back() == 1)
    return row;
  return "(" + row + " + j * " + std::to_string(inStrides.back()) + ")";
}

/// The dimensions of a dense layout in memory order (outermost first), or
/// empty when `strides` is not a dense layout of `shape`.
static SmallVector<unsigned> memoryOrder(ArrayRef<int64_t> shape,
                                         ArrayRef<int64_t> strides) {
  SmallVector<unsigned> order;
  for (unsigned d = 0; d < shape.size(); ++d)
    order.push_back(d);
  llvm::stable_sort(
      order, [&](unsigned a, unsigned b) { return strides[a] > strides[b]; });
  int64_t expect = 1;
  for (unsigned k = order.size(); k-- > 0;) {
    if (strides[order[k]] != expect)
      return {};
    expect *= shape[order[k]];
  }
  return order;
}

std::optional<std::string>
FunctionEmitter::rowOffset(ArrayRef<int64_t> out, ArrayRef<int64_t> outStrides,
                           ArrayRef<int64_t> in, ArrayRef<int64_t> inStrides) {
  SmallVector<unsigned> order = memoryOrder(out, outStrides);
  assert(!order.empty() && "a row loop over a dense output");
  // The output as the row-major tensor of its memory; the operand,
  // broadcast to it, permuted alike.
  unsigned lead = out.size() - in.size();
  SmallVector<int64_t> pOut, pIn, pInStrides;
  for (unsigned d : order) {
    pOut.push_back(out[d]);
    pIn.push_back(d < lead ? 1 : in[d - lead]);
    pInStrides.push_back(d < lead ? 0 : inStrides[d - lead]);
  }
  return rowOffset(pOut, pIn, pInStrides);
}

bool FunctionEmitter::loopsByRows(Value result, bool anyOrder) {
  auto shape = typeOf(result).getShape();
  if (options.target != Target::CPU || shape.size() < 2)
    return false;
  if (!anyOrder)
    return shape.back() >= 8 &&
           ArrayRef<int64_t>(emit::rowMajorStrides(shape)) ==
               ArrayRef<int64_t>(layoutOf(result));
  return !memoryOrder(shape, layoutOf(result)).empty() &&
         rowLength(result) >= 8;
}

int64_t FunctionEmitter::rowLength(Value result) {
  auto shape = typeOf(result).getShape();
  auto strides = layoutOf(result);
  for (unsigned d = shape.size(); d-- > 0;)
    if (strides[d] == 1)
      return shape[d];
  return shape.back();
}

std::string FunctionEmitter::broadcastTemp(Value v, ArrayRef<int64_t> shape) {
  std::string t = "bcast" + std::to_string(counter++);
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  os << "  float *" << t << " = (float *)P.alloc(" << n * 4 << ");\n  if (!"
     << t << ") return 1;\n";
  std::string src = name(v);
  openLoop(n);
  os << "    " << t << "[i] = " << src << "["
     << broadcastOffset(shape, typeOf(v).getShape(), "i") << "];\n";
  closeLoop();
  return t;
}

void FunctionEmitter::openRowLoop(Value result) {
  int64_t cols = rowLength(result);
  openRowLoop(numel(result) / cols, cols);
}

void FunctionEmitter::openRowLoop(int64_t rows, int64_t cols) {
  os << "  if (dg::parallelRows<" << rows << ", " << cols
     << ">(P, [=] (int64_t lo, int64_t hi) {\n"
     << "    for (int64_t r = lo; r < hi; ++r) {\n"
     << "    DG_SIMD\n    for (int64_t j = 0; j < " << cols
     << "; ++j) {\n      const int64_t i = r * " << cols << " + j;\n";
}

void FunctionEmitter::closeRowLoop() {
  os << "    }\n    }\n";
  closeLoop();
}

void FunctionEmitter::openLoop(int64_t n, llvm::StringRef idx) {
  os << "  if (dg::parallelFor<" << n << ">(P, [=] DG_HD (int64_t " << idx
     << ") {\n";
}

void FunctionEmitter::closeLoop() { os << "  })) return 1;\n"; }

void FunctionEmitter::openChunkLoop(int64_t n) {
  os << "  if (dg::parallelChunks<" << n
     << ">(P, [=] DG_HD (int64_t lo, int64_t hi) {\n";
}

void FunctionEmitter::openChunkItems() {
  os << "    DG_SIMD\n    for (int64_t i = lo; i < hi; ++i) {\n";
}

void FunctionEmitter::closeChunkLoop() {
  os << "    }\n";
  closeLoop();
}

std::string FunctionEmitter::literal(double v, Type t) {
  bool f32 = t.isF32();
  if (std::isnan(v))
    return f32 ? "NAN" : "(double)NAN";
  if (std::isinf(v))
    return std::string(v < 0 ? "-" : "") +
           (f32 ? "INFINITY" : "(double)INFINITY");
  if (llvm::isa<FloatType>(t)) {
    char buf[64];
    snprintf(buf, sizeof buf, f32 ? "%.9g" : "%.17g", v);
    std::string s = buf;
    if (s.find_first_of(".en") == std::string::npos)
      s += ".0";
    return f32 ? s + "f" : s;
  }
  if (t.isInteger(1))
    return v != 0 ? "true" : "false";
  char buf[64];
  snprintf(buf, sizeof buf, "(%s)%.0f", cType(t).c_str(), v);
  return buf;
}
