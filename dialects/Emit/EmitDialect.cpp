//===- EmitDialect.cpp - The emission dialect -------------------*- C++ -*-===//
//
// Part of DistOpt. Registration, the buffer attribute's syntax, and the
// verifiers of the discardable attributes the printer reads.
//
//===----------------------------------------------------------------------===//
#include "dialects/Emit/EmitDialect.h"
#include "dialects/Emit/MemoryPlan.h"

#include "dialects/Graph/GraphDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace distopt::emit;

#include "dialects/Emit/EmitDialect.cpp.inc"
#include "dialects/Emit/EmitEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Emit/EmitAttrs.cpp.inc"

void EmitDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/Emit/EmitOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/Emit/EmitAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// #emit.buffer
//===----------------------------------------------------------------------===//

Attribute BufferAttr::parse(AsmParser &p, Type) {
  StringRef kindName;
  if (p.parseLess() || p.parseKeyword(&kindName))
    return {};
  std::optional<BufferKind> kind = symbolizeBufferKind(kindName);
  if (!kind) {
    p.emitError(p.getCurrentLocation())
        << "unknown buffer kind '" << kindName
        << "'; expected arena, view, resident, argument or result";
    return {};
  }
  int64_t offset = 0, bytes = 0;
  SmallVector<int64_t> strides;
  while (succeeded(p.parseOptionalComma())) {
    StringRef key;
    if (p.parseKeyword(&key) || p.parseEqual())
      return {};
    if (key == "offset") {
      if (p.parseInteger(offset))
        return {};
    } else if (key == "bytes") {
      if (p.parseInteger(bytes))
        return {};
    } else if (key == "strides") {
      if (p.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&] {
            int64_t s;
            if (p.parseInteger(s))
              return failure();
            strides.push_back(s);
            return success();
          }))
        return {};
    } else {
      p.emitError(p.getCurrentLocation())
          << "unknown #emit.buffer field '" << key
          << "'; expected offset, bytes or strides";
      return {};
    }
  }
  if (p.parseGreater())
    return {};
  return BufferAttr::getChecked([&] { return p.emitError(p.getNameLoc()); },
                                p.getContext(), *kind, offset, bytes, strides);
}

void BufferAttr::print(AsmPrinter &p) const {
  p << '<' << stringifyBufferKind(getKind());
  if (getOffset() || isArena())
    p << ", offset = " << getOffset();
  if (isArena())
    p << ", bytes = " << getBytes();
  if (!getStrides().empty()) {
    p << ", strides = [";
    llvm::interleaveComma(getStrides(), p);
    p << ']';
  }
  p << '>';
}

LogicalResult BufferAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 BufferKind kind, int64_t offset, int64_t bytes,
                                 ArrayRef<int64_t> strides) {
  switch (kind) {
  case BufferKind::arena:
    if (offset < 0 || offset % 64)
      return emitError() << "arena offset " << offset
                         << " must be a non-negative multiple of 64";
    if (bytes < 0)
      return emitError() << "arena bytes must be non-negative, got " << bytes;
    break;
  case BufferKind::view:
    if (bytes)
      return emitError() << "a view owns no bytes (got bytes = " << bytes
                         << ")";
    break;
  case BufferKind::resident:
  case BufferKind::argument:
  case BufferKind::result:
    if (offset || bytes || !strides.empty())
      return emitError() << "a" << (kind == BufferKind::argument ? "n " : " ")
                         << stringifyBufferKind(kind)
                         << " buffer is row-major and takes no offset or bytes";
    break;
  }
  return success();
}

LogicalResult
MemoryPlanAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                       int64_t arena, int64_t unshared) {
  if (arena < 0 || unshared < 0)
    return emitError() << "memory plan sizes must be non-negative";
  return success();
}

//===----------------------------------------------------------------------===//
// Discardable attributes
//===----------------------------------------------------------------------===//

static bool isHalf(Type t) {
  Type e = getElementTypeOrSelf(t);
  return e.isF16() || e.isBF16();
}

LogicalResult EmitDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == kBuffersAttr) {
    auto list = dyn_cast<ArrayAttr>(attr.getValue());
    if (!list || list.size() != op->getNumResults() ||
        !llvm::all_of(list, [](Attribute a) { return isa<BufferAttr>(a); }))
      return op->emitOpError()
             << "emit.buffers must list one #emit.buffer per result ("
             << op->getNumResults() << ")";
    return success();
  }
  if (name == kMemoryPlanAttr) {
    auto plan = dyn_cast<MemoryPlanAttr>(attr.getValue());
    if (!plan)
      return op->emitOpError() << "emit.memory_plan must be an "
                                  "#emit.memory_plan";
    return verifyMemoryPlan(op, plan);
  }
  if (name == kComputeTypeAttr) {
    auto t = dyn_cast<TypeAttr>(attr.getValue());
    if (!t || !t.getValue().isF32())
      return op->emitOpError() << "emit.compute_type must be f32 (the type "
                                  "the runtime's kernels compute in)";
    if (llvm::none_of(op->getOperandTypes(), isHalf) &&
        llvm::none_of(op->getResultTypes(), isHalf))
      return op->emitOpError() << "emit.compute_type = f32 widens 16-bit "
                                  "tensors, but this op has none";
    return success();
  }
  if (name == kCostSignatureAttr) {
    if (!isa<StringAttr>(attr.getValue()))
      return op->emitOpError() << "emit.cost_signature must be a string";
    return success();
  }
  if (name == kAsyncAttr) {
    // Only the all-reduce has a started form in the runtime
    // (distrt_all_reduce_start).
    if (!isa<UnitAttr>(attr.getValue()) ||
        op->getName().getStringRef() != "dist.all_reduce")
      return op->emitOpError() << "emit.async is a unit attribute of "
                                  "dist.all_reduce (the collective the "
                                  "runtime can start and wait for)";
    return success();
  }
  if (name == kCostInstanceAttr) {
    auto n = dyn_cast<IntegerAttr>(attr.getValue());
    if (!n || n.getInt() < 0)
      return op->emitOpError()
             << "emit.cost_instance must be a non-negative integer";
    return success();
  }
  return op->emitOpError() << "unknown emit dialect attribute '" << name << "'";
}

LogicalResult EmitDialect::verifyRegionArgAttribute(Operation *op,
                                                    unsigned region,
                                                    unsigned arg,
                                                    NamedAttribute attr) {
  if (attr.getName().getValue() != kBufferAttr)
    return op->emitOpError() << "unknown emit dialect argument attribute '"
                             << attr.getName().getValue() << "'";
  auto b = dyn_cast<BufferAttr>(attr.getValue());
  if (!b || !(b.isArena() || b.isArgument()) || !isa<FunctionOpInterface>(op))
    return op->emitOpError() << "argument #" << arg
                             << ": emit.buffer on a function argument must "
                                "be an arena or argument #emit.buffer";
  return success();
}
