//===- EmitElementwise.cpp - Fused elementwise loops ------------*- C++ -*-===//
//
// Part of DistOpt. graph.unary, graph.binary, graph.where, graph.cast and
// graph.clip become one generated loop per fusion group (see Fusion.cpp):
// inputs are loaded with constant broadcast strides, the group's ops are
// scalar expressions on registers, and only the root's result is stored.
// The loop body is plain C++ compiled for the host (OpenMP) or, unchanged,
// as a CUDA kernel (a `__host__ __device__` lambda), so every element type
// and every kind works on both targets, including those the runtime's f32
// kernels do not cover (comparisons, integer math, erf, rounding, ...).
//
//===----------------------------------------------------------------------===//
#include "lib/Codegen/FunctionEmitter.h"

#include "dialects/Emit/EmitDialect.h"
#include "dialects/Emit/KernelRules.h"
#include "dialects/Graph/GraphOps.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
namespace emit = distopt::emit;
using namespace distopt::codegen;
using namespace distopt::graph;

bool distopt::codegen::isElementwise(Operation *op) {
  return distopt::emit::isElementwiseOp(op);
}

namespace {
/// Builds the scalar code of one fusion group.
class GroupEmitter {
public:
  GroupEmitter(FunctionEmitter &e, ArrayRef<int64_t> outShape,
               ArrayRef<int64_t> outStrides)
      : e(e), outShape(outShape), outStrides(outStrides) {}

  /// Reads operands by row and column (FunctionEmitter::rowOffset), for a
  /// loop over rows `r` and columns `j` with `i = r * D + j`.
  bool byRows = false;
  /// Whether an operand is read at a row offset (else the loop stays flat).
  bool readsByRows = false;

  /// Returns the register holding `v` at element `i`, emitting its code.
  FailureOr<std::string> scalar(Value v) {
    auto it = regs.find(v);
    if (it != regs.end())
      return it->second;
    Operation *def = v.getDefiningOp();
    std::string reg;
    if (def && e.fused.contains(def)) {
      FailureOr<std::string> expr = compute(def);
      if (failed(expr))
        return failure();
      reg = "t" + std::to_string(counter++);
      body += "    const " + regType(v) + " " + reg + " = " + *expr + ";\n";
    } else {
      reg = "t" + std::to_string(counter++);
      auto shape = FunctionEmitter::typeOf(v).getShape();
      std::optional<std::string> row =
          byRows ? FunctionEmitter::rowOffset(outShape, outStrides, shape,
                                              e.layoutOf(v))
                 : std::nullopt;
      readsByRows |= row.has_value();
      body += "    const " + regType(v) + " " + reg + " = " + e.name(v) + "[" +
              (row ? *row
                   : FunctionEmitter::stridedOffset(outShape, outStrides, shape,
                                                    e.layoutOf(v), "i")) +
              "];\n";
    }
    regs[v] = reg;
    return reg;
  }

  /// The expression of `op`'s result in terms of its operands' registers.
  FailureOr<std::string> compute(Operation *op) {
    SmallVector<std::string> in;
    for (Value v : op->getOperands()) {
      FailureOr<std::string> r = scalar(v);
      if (failed(r))
        return failure();
      in.push_back(*r);
    }
    Type stored = FunctionEmitter::typeOf(op->getResult(0)).getElementType();
    Type et = FunctionEmitter::computeType(stored);
    Type it = FunctionEmitter::computeType(
        FunctionEmitter::typeOf(op->getOperand(0)).getElementType());
    std::string rt = FunctionEmitter::cType(et);
    FailureOr<std::string> expr =
        llvm::TypeSwitch<Operation *, FailureOr<std::string>>(op)
            .Case<UnaryOp>([&](UnaryOp u) { return unary(u, in[0], it); })
            .Case<BinaryOp>(
                [&](BinaryOp b) { return binary(b, in[0], in[1], it); })
            .Case<UnaryGradOp>([&](UnaryGradOp g) -> FailureOr<std::string> {
              UnaryKind k = g.getKind();
              if (k == UnaryKind::Not || k == UnaryKind::IsNaN ||
                  k == UnaryKind::IsInf)
                return failure();
              double alpha = g.getAlpha() ? g.getAlpha()->convertToDouble()
                             : k == UnaryKind::LeakyRelu   ? 0.01
                             : k == UnaryKind::HardSigmoid ? 0.2
                                                           : 1.0;
              double beta = g.getBeta() ? g.getBeta()->convertToDouble() : 0.5;
              return "(" + in[1] + " * dg::dUnary<" +
                     FunctionEmitter::cType(it) + ">(" +
                     std::to_string((int)k) + ", " + in[0] + ", " +
                     FunctionEmitter::literal(
                         alpha, Float64Type::get(g.getContext())) +
                     ", " +
                     FunctionEmitter::literal(
                         beta, Float64Type::get(g.getContext())) +
                     "))";
            })
            .Case<WhereOp>([&](WhereOp) {
              return "(" + in[0] + " ? " + in[1] + " : " + in[2] + ")";
            })
            .Case<CastOp>([&](CastOp) -> FailureOr<std::string> {
              if (et.isInteger(1))
                return "(" + in[0] + " != 0)";
              return in[0];
            })
            .Case<ClipOp>([&](ClipOp c) {
              std::string x = in[0];
              if (auto lo = c.getMin())
                x = "dg::maxOf<" + FunctionEmitter::cType(it) + ">(" + x +
                    ", " + FunctionEmitter::literal(lo->convertToDouble(), it) +
                    ")";
              if (auto hi = c.getMax())
                x = "dg::minOf<" + FunctionEmitter::cType(it) + ">(" + x +
                    ", " + FunctionEmitter::literal(hi->convertToDouble(), it) +
                    ")";
              return x;
            })
            .Default([&](Operation *) -> FailureOr<std::string> {
              return failure();
            });
    if (failed(expr))
      return failure();
    // A 16-bit result is rounded to its type even when it stays in a
    // register (fused), as if stored.
    if (stored != et)
      return "(" + rt + ")(" + FunctionEmitter::cType(stored) + ")(" + *expr +
             ")";
    return "(" + rt + ")(" + *expr + ")";
  }

  std::string body;

private:
  /// Registers hold the compute type (float for f16/bf16).
  static std::string regType(Value v) {
    return FunctionEmitter::cType(FunctionEmitter::computeType(
        FunctionEmitter::typeOf(v).getElementType()));
  }

  /// C math function `name` for element type `t` (expf vs exp).
  static std::string fn(llvm::StringRef name, Type t) {
    return t.isF32() ? (name + "f").str() : name.str();
  }

  FailureOr<std::string> unary(UnaryOp u, const std::string &x, Type t) {
    std::string ct = FunctionEmitter::cType(t);
    bool isFloat = isa<FloatType>(t);
    auto alpha = [&](double d) {
      return FunctionEmitter::literal(
          u.getAlpha() ? u.getAlpha()->convertToDouble() : d, t);
    };
    auto beta = [&](double d) {
      return FunctionEmitter::literal(
          u.getBeta() ? u.getBeta()->convertToDouble() : d, t);
    };
    auto one = FunctionEmitter::literal(1.0, t);
    auto zero = FunctionEmitter::literal(0.0, t);
    switch (u.getKind()) {
    case UnaryKind::Relu:
      return "(" + x + " > " + zero + " ? " + x + " : " + zero + ")";
    case UnaryKind::Gelu:
      return "dg::gelu<" + ct + ">(" + x + ")";
    case UnaryKind::GeluTanh:
      return "dg::geluTanh<" + ct + ">(" + x + ")";
    case UnaryKind::Erf:
      return "dg::erfOf<" + ct + ">(" + x + ")";
    case UnaryKind::Tanh:
      return fn("tanh", t) + "(" + x + ")";
    case UnaryKind::Sigmoid:
      return "dg::sigmoid<" + ct + ">(" + x + ")";
    case UnaryKind::Silu:
      return "(" + x + " * dg::sigmoid<" + ct + ">(" + x + "))";
    case UnaryKind::Exp:
      return fn("exp", t) + "(" + x + ")";
    case UnaryKind::Log:
      return fn("log", t) + "(" + x + ")";
    case UnaryKind::Sqrt:
      return fn("sqrt", t) + "(" + x + ")";
    case UnaryKind::Rsqrt:
      return "(" + one + " / " + fn("sqrt", t) + "(" + x + "))";
    case UnaryKind::Neg:
      return "(-" + x + ")";
    case UnaryKind::Abs:
      return isFloat ? fn("fabs", t) + "(" + x + ")"
                     : "(" + x + " < 0 ? -" + x + " : " + x + ")";
    case UnaryKind::Reciprocal:
      return "(" + one + " / " + x + ")";
    case UnaryKind::Floor:
      return isFloat ? fn("floor", t) + "(" + x + ")" : x;
    case UnaryKind::Ceil:
      return isFloat ? fn("ceil", t) + "(" + x + ")" : x;
    case UnaryKind::Round:
      return isFloat ? fn("rint", t) + "(" + x + ")" : x;
    case UnaryKind::Sin:
      return fn("sin", t) + "(" + x + ")";
    case UnaryKind::Cos:
      return fn("cos", t) + "(" + x + ")";
    case UnaryKind::Not:
      return "(!" + x + ")";
    case UnaryKind::Sign:
      return "dg::sign<" + ct + ">(" + x + ")";
    case UnaryKind::Softplus:
      return "dg::softplus<" + ct + ">(" + x + ")";
    case UnaryKind::Softsign:
      return "(" + x + " / (" + one + " + " + fn("fabs", t) + "(" + x + ")))";
    case UnaryKind::HardSigmoid:
      return "dg::maxOf<" + ct + ">(" + zero + ", dg::minOf<" + ct + ">(" +
             one + ", " + alpha(0.2) + " * " + x + " + " + beta(0.5) + "))";
    case UnaryKind::HardSwish:
      return "(" + x + " * dg::maxOf<" + ct + ">(" + zero + ", dg::minOf<" +
             ct + ">(" + one + ", " + x + " / " +
             FunctionEmitter::literal(6.0, t) + " + " +
             FunctionEmitter::literal(0.5, t) + ")))";
    case UnaryKind::LeakyRelu:
      return "(" + x + " < " + zero + " ? " + alpha(0.01) + " * " + x + " : " +
             x + ")";
    case UnaryKind::Elu:
      return "(" + x + " < " + zero + " ? " + alpha(1.0) + " * (" +
             fn("exp", t) + "(" + x + ") - " + one + ") : " + x + ")";
    case UnaryKind::Identity:
      return x;
    case UnaryKind::IsNaN:
      return "(" + x + " != " + x + ")";
    case UnaryKind::IsInf:
      return "dg::isInf<" + ct + ">(" + x + ")";
    }
    return failure();
  }

  FailureOr<std::string> binary(BinaryOp b, const std::string &x,
                                const std::string &y, Type t) {
    std::string ct = FunctionEmitter::cType(t);
    switch (b.getKind()) {
    case BinaryKind::Add:
      return "(" + x + " + " + y + ")";
    case BinaryKind::Sub:
      return "(" + x + " - " + y + ")";
    case BinaryKind::Mul:
      return "(" + x + " * " + y + ")";
    case BinaryKind::Div:
      return "(" + x + " / " + y + ")";
    case BinaryKind::Pow:
      return "dg::powOf<" + ct + ">(" + x + ", (double)" + y + ")";
    case BinaryKind::Max:
      return "dg::maxOf<" + ct + ">(" + x + ", " + y + ")";
    case BinaryKind::Min:
      return "dg::minOf<" + ct + ">(" + x + ", " + y + ")";
    case BinaryKind::Mod:
      // fmod: C's fmod / `%` (sign of the dividend); otherwise Python's
      // (sign of the divisor), as the op documents for every type.
      if (b.getFmod())
        return isa<FloatType>(t) ? fn("fmod", t) + "(" + x + ", " + y + ")"
                                 : "(" + x + " % " + y + ")";
      if (isa<FloatType>(t)) {
        std::string w = t.isF64() ? "(double)" : "(float)";
        return "dg::fmodPy(" + w + x + ", " + w + y + ")";
      }
      return "dg::fmodPy<" + ct + ">(" + x + ", " + y + ")";
    case BinaryKind::Equal:
      return "(" + x + " == " + y + ")";
    case BinaryKind::Less:
      return "(" + x + " < " + y + ")";
    case BinaryKind::LessEqual:
      return "(" + x + " <= " + y + ")";
    case BinaryKind::Greater:
      return "(" + x + " > " + y + ")";
    case BinaryKind::GreaterEqual:
      return "(" + x + " >= " + y + ")";
    case BinaryKind::And:
      return "(" + x + " && " + y + ")";
    case BinaryKind::Or:
      return "(" + x + " || " + y + ")";
    case BinaryKind::Xor:
      return "(" + x + " != " + y + ")";
    case BinaryKind::PRelu:
      return "(" + x + " < 0 ? " + x + " * " + y + " : " + x + ")";
    case BinaryKind::BitShiftLeft:
      return "(" + x + " << " + y + ")";
    case BinaryKind::BitShiftRight:
      return "(" + x + " >> " + y + ")";
    }
    return failure();
  }

  FunctionEmitter &e;
  ArrayRef<int64_t> outShape;
  SmallVector<int64_t> outStrides;
  llvm::DenseMap<Value, std::string> regs;
  unsigned counter = 0;
};
} // namespace

/// One generated loop computing `root` (and the ops fused into it) into
/// `result`'s buffer.
static LogicalResult emitLoop(FunctionEmitter &e, Operation *root,
                              Value result) {
  if (failed(e.checkTypes(root)))
    return failure();
  auto shape = FunctionEmitter::typeOf(result).getShape();
  GroupEmitter group(e, shape, e.layoutOf(result));
  // On the CPU, a dense output whose operands are read through broadcast
  // or strided index arithmetic (an attention mask, a sliced table, a
  // squeeze-excitation scale over a channels-last map) loops over the rows
  // and columns of its memory: the column loop reads each operand at a row
  // offset plus a constant stride, which vectorizes, where the divisions
  // of a flat index do not.
  group.byRows = e.loopsByRows(result, /*anyOrder=*/true);
  FailureOr<std::string> expr = group.compute(root);
  if (failed(expr))
    return root->emitError() << root->getName()
                             << ": this kind has no generated-loop lowering";
  e.allocate(result);
  std::string out = e.name(result);
  // Item i writes element i alone: the items are independent, and the
  // chunked loop (DG_SIMD) vectorizes without alias checks.
  bool byRows = group.byRows && group.readsByRows;
  if (byRows) {
    e.openRowLoop(result);
  } else {
    e.openChunkLoop(FunctionEmitter::numel(result));
    e.openChunkItems();
  }
  llvm::SmallVector<llvm::StringRef> lines;
  llvm::StringRef(group.body).split(lines, '\n', -1, false);
  for (llvm::StringRef line : lines)
    e.os << "  " << line << "\n";
  e.os << "      " << out << "[i] = " << *expr << ";\n";
  if (byRows)
    e.closeRowLoop();
  else
    e.closeChunkLoop();
  return success();
}

LogicalResult distopt::codegen::emitElementwise(FunctionEmitter &e,
                                                Operation *op) {
  if (e.fused.contains(op))
    return success(); // emitted inside its user's loop
  return emitLoop(e, op, op->getResult(0));
}

LogicalResult distopt::codegen::emitLoopKernel(FunctionEmitter &e,
                                               Operation *op) {
  auto kernel = cast<emit::KernelOp>(op);
  Block &body = kernel.getBody().front();
  for (auto [arg, in] : llvm::zip(body.getArguments(), kernel.getInputs()))
    e.bindKernelInput(arg, in);
  for (Operation &inner : body.without_terminator())
    if (failed(e.checkTypes(&inner)))
      return failure();
  return emitLoop(e, kernel.getRoot(), kernel.getResult());
}

LogicalResult distopt::codegen::emitEltwiseKernel(FunctionEmitter &e,
                                                  Operation *op) {
  auto kernel = cast<emit::KernelOp>(op);
  Operation *unary = kernel.getRoot();
  std::optional<std::string> alg = emit::standaloneEltwise(unary);
  if (!alg)
    return op->emitError() << "dist-compile: emit.kernel eltwise holds an op "
                              "the runtime's eltwise kernel lacks";
  e.allocate(kernel.getResult());
  e.os << "  { distrt_tensor x = " << e.desc(kernel.getInputs()[0])
       << ", y = " << e.desc(kernel.getResult()) << ";\n  ";
  e.call("distrt_unary(P.ctx, DISTRT_UNARY_" + *alg + ", &x, &y)", op);
  e.os << "  }\n";
  return success();
}
