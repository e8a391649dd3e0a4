//===- EmitComm.cpp - Collectives to runtime calls --------------*- C++ -*-===//
//
// Part of DistOpt. Lowers `dist` collectives to the communicator ABI
// (distrt_comm.h) on the program's world communicator `P.comm`, which the
// generated main creates when a model contains collectives
// (docs/distributed.md). Only world-wide groups are lowered: a program is
// compiled once for every rank, and sub-communicators are the next slice.
//
//===----------------------------------------------------------------------===//
#include "lib/Codegen/FunctionEmitter.h"

#include "dialects/Dist/DistOps.h"

using namespace mlir;
using namespace distopt::codegen;
namespace dist = distopt::dist;

bool distopt::codegen::isCommOp(Operation *op) {
  return isa<dist::AllReduceOp>(op);
}

bool distopt::codegen::hasCollectives(Operation *root) {
  bool found = false;
  root->walk([&](Operation *op) {
    if (isCommOp(op))
      found = true;
  });
  return found;
}

static const char *runtimeOp(dist::ReductionKind kind) {
  switch (kind) {
  case dist::ReductionKind::sum:
    return "DISTRT_REDUCE_SUM";
  case dist::ReductionKind::mean:
    return "DISTRT_REDUCE_MEAN";
  case dist::ReductionKind::max:
    return "DISTRT_REDUCE_MAX";
  case dist::ReductionKind::min:
    return "DISTRT_REDUCE_MIN";
  case dist::ReductionKind::prod:
    return nullptr;
  }
  return nullptr;
}

static LogicalResult emitAllReduce(FunctionEmitter &e, dist::AllReduceOp op) {
  const char *rop = runtimeOp(op.getKind());
  if (!rop)
    return op.emitError()
           << "dist-compile: dist.all_reduce "
           << dist::stringifyReductionKind(op.getKind())
           << " has no runtime lowering; the runtime reduces with sum, mean, "
              "max and min";
  Value in = op.getInput(), out = op.getResult();
  if (!FunctionEmitter::typeOf(in).hasStaticShape() ||
      FunctionEmitter::rtType(FunctionEmitter::typeOf(in).getElementType())
          .empty())
    return op.emitError() << "dist-compile: dist.all_reduce of " << in.getType()
                          << " has no runtime lowering; collectives carry "
                             "statically shaped f32, f16, bf16, i32, i64 or "
                             "i1 tensors";
  // A program runs on every rank, so a group must be the whole world: `over
  // world`, or [0, ..., N-1] checked against the launched world at run time.
  ArrayRef<int64_t> group = op.getGroup();
  for (auto [k, d] : llvm::enumerate(group))
    if (d != (int64_t)k)
      return op.emitError()
             << "dist-compile: dist.all_reduce over a device subset has no "
                "lowering yet (sub-communicators are not built); use `over "
                "world` or the full group [0, ..., N-1]";
  e.allocate(out);
  e.os << "  {\n";
  if (!group.empty())
    e.os << "    if (P.requireWorld(" << group.size() << ", \""
         << FunctionEmitter::where(op) << "\")) return 1;\n";
  e.os << "    distrt_tensor in = " << e.desc(in)
       << ";\n    distrt_tensor out = " << e.desc(out) << ";\n  ";
  e.call(std::string("distrt_all_reduce(P.comm, &in, &out, ") + rop + ")", op);
  e.os << "  }\n";
  return success();
}

LogicalResult distopt::codegen::emitCommOp(FunctionEmitter &e, Operation *op) {
  if (auto ar = dyn_cast<dist::AllReduceOp>(op))
    return emitAllReduce(e, ar);
  return op->emitError() << "dist-compile: collective '" << op->getName()
                         << "' has no lowering to the runtime";
}
