//===- EmitDialect.h - What the program printer is told ---------*- C++ -*-===//
//
// Part of DistOpt. The `emit` dialect: kernels, buffers, layouts and
// precision decided by dist-prepare-for-emission (passes/Emission) and read
// by the C++/CUDA printer (lib/Codegen). EmitDialect.td has the overview.
//
//===----------------------------------------------------------------------===//
#ifndef DIALECTS_EMIT_EMITDIALECT_H
#define DIALECTS_EMIT_EMITDIALECT_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/Emit/EmitDialect.h.inc"
#include "dialects/Emit/EmitEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Emit/EmitAttrs.h.inc"

#define GET_OP_CLASSES
#include "dialects/Emit/EmitOps.h.inc"

namespace distopt::emit {

/// Names of the discardable attributes the dialect verifies.
inline constexpr llvm::StringLiteral kBuffersAttr = "emit.buffers";
inline constexpr llvm::StringLiteral kBufferAttr = "emit.buffer";
inline constexpr llvm::StringLiteral kMemoryPlanAttr = "emit.memory_plan";
inline constexpr llvm::StringLiteral kComputeTypeAttr = "emit.compute_type";
inline constexpr llvm::StringLiteral kCostSignatureAttr = "emit.cost_signature";
/// On the ops of a training step: which forward op's profile entry the op's
/// time belongs to (the ops of one instance add up; instances of one
/// signature are averaged). A backward op carries its forward op's number
/// and signature (passes/Planning/CostSignatures.cpp).
inline constexpr llvm::StringLiteral kCostInstanceAttr = "emit.cost_instance";
/// On a collective of one result: the printer starts it where it stands and
/// waits for it right before the first op that reads its result (or the
/// body's end), so the ops between run while it moves data. Its operand's
/// buffer lives until that wait (BlockLiveness), so nothing is written over
/// what it still reads.
inline constexpr llvm::StringLiteral kAsyncAttr = "emit.async";

} // namespace distopt::emit

#endif // DIALECTS_EMIT_EMITDIALECT_H
