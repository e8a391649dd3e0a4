//===- MemoryPlan.cpp - Live ranges and the arena check ---------*- C++ -*-===//
//
// Part of DistOpt.
//
//===----------------------------------------------------------------------===//
#include "dialects/Emit/MemoryPlan.h"
#include "dialects/Emit/KernelRules.h"

#include "dialects/Graph/GraphOps.h"

#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace distopt::emit;

BufferAttr distopt::emit::bufferOf(Value v) {
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    auto fn =
        dyn_cast_or_null<FunctionOpInterface>(arg.getOwner()->getParentOp());
    if (!fn || arg.getOwner() != &fn.getFunctionBody().front())
      return {};
    return fn.getArgAttrOfType<BufferAttr>(arg.getArgNumber(), kBufferAttr);
  }
  Operation *def = v.getDefiningOp();
  auto list = def ? def->getAttrOfType<ArrayAttr>(kBuffersAttr) : ArrayAttr();
  unsigned idx = cast<OpResult>(v).getResultNumber();
  if (!list || idx >= list.size())
    return {};
  return dyn_cast<BufferAttr>(list[idx]);
}

SmallVector<int64_t> distopt::emit::stridesOf(Value v) {
  BufferAttr b = bufferOf(v);
  if (b && !b.getStrides().empty())
    return SmallVector<int64_t>(b.getStrides());
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t ? rowMajorStrides(t.getShape()) : SmallVector<int64_t>();
}

int64_t distopt::emit::viewOffset(Value v) {
  int64_t offset = 0;
  for (BufferAttr b = bufferOf(v); b && b.isView(); b = bufferOf(v)) {
    offset += b.getOffset();
    v = v.getDefiningOp()->getOperand(0);
  }
  return offset;
}

std::optional<int64_t> distopt::emit::arenaOffset(Value v) {
  int64_t elements = viewOffset(v);
  auto t = cast<RankedTensorType>(v.getType());
  for (BufferAttr b = bufferOf(v); b && b.isView(); b = bufferOf(v))
    v = v.getDefiningOp()->getOperand(0);
  BufferAttr b = bufferOf(v);
  if (!b || !b.isArena())
    return std::nullopt;
  return b.getOffset() + elements * elementBytes(t.getElementType());
}

int64_t distopt::emit::spanBytes(RankedTensorType t,
                                 ArrayRef<int64_t> strides) {
  if (t.getNumElements() == 0)
    return 0;
  int64_t last = 0;
  for (auto [d, s] : llvm::zip(t.getShape(), strides))
    last += (d - 1) * std::abs(s);
  return (last + 1) * elementBytes(t.getElementType());
}

BlockLiveness::BlockLiveness(Block &block) {
  int64_t pos = 0;
  for (Operation &op : block)
    position[&op] = pos++;
  end = pos;
  for (Operation &op : block)
    for (auto [k, r] : llvm::enumerate(op.getResults())) {
      BufferAttr b = bufferOf(r);
      if (b && b.isView() && op.getNumOperands() > 0)
        viewOf[r] = op.getOperand(0);
    }
  for (BlockArgument arg : block.getArguments())
    ranges[root(arg)] = {-1, -1};
  for (Operation &op : block)
    for (Value r : op.getResults()) {
      Value rt = root(r);
      if (!ranges.count(rt))
        ranges[rt] = {position[&op], position[&op]};
    }
  auto readUntil = [&](Value v, int64_t at) {
    auto it = ranges.find(root(v));
    if (it != ranges.end() && it->second.last < at)
      it->second.last = at;
  };
  for (Operation &op : block) {
    int64_t at = op.hasTrait<OpTrait::IsTerminator>() ? end : position[&op];
    op.walk([&](Operation *inner) {
      for (Value v : inner->getOperands())
        readUntil(v, at);
    });
  }
  // A started collective (emit.async) reads its operands until it is
  // waited for: before the first op that reads a result, or at the end.
  // An operand that dies at it is written over by it instead (planMemory
  // always does so), which the result's own range covers.
  for (Operation &op : block) {
    if (!op.hasAttr(kAsyncAttr))
      continue;
    int64_t wait = end;
    for (Value r : op.getResults())
      for (Operation *user : r.getUsers())
        if (Operation *in = block.findAncestorOpInBlock(*user))
          wait = std::min(
              wait, in->hasTrait<OpTrait::IsTerminator>() ? end : position[in]);
    for (auto [k, v] : llvm::enumerate(op.getOperands()))
      if (!writtenOverWhenStarted(op, k))
        readUntil(v, wait);
  }
}

bool BlockLiveness::writtenOverWhenStarted(Operation &op, unsigned k) const {
  // Both in arena slots: a result computed into the caller's buffer
  // (`result`) is not written over anything.
  Value v = op.getOperand(k);
  auto it = ranges.find(v);
  BufferAttr b = bufferOf(v), rb = bufferOf(op.getResult(0));
  return op.hasAttr(kAsyncAttr) && root(v) == v && b && b.isArena() && rb &&
         rb.isArena() && it != ranges.end() &&
         it->second.last == position.lookup(&op) &&
         mayWriteInPlace(&op, k, stridesOf(v), stridesOf(op.getResult(0)));
}

Value BlockLiveness::root(Value v) const {
  for (auto it = viewOf.find(v); it != viewOf.end(); it = viewOf.find(v))
    v = it->second;
  return v;
}

namespace {
struct Slot {
  Value value;
  int64_t begin, end;
  LiveRange live;
};
} // namespace

/// Names `v` in a message: "%arg N" or the op and result number.
static std::string describe(Value v) {
  if (auto arg = dyn_cast<BlockArgument>(v))
    return "argument #" + std::to_string(arg.getArgNumber());
  auto r = cast<OpResult>(v);
  return "result #" + std::to_string(r.getResultNumber()) + " of '" +
         r.getOwner()->getName().getStringRef().str() + "'";
}

static Location locOf(Value v, Operation *holder) {
  if (Operation *def = v.getDefiningOp())
    return def->getLoc();
  return holder->getLoc();
}

/// Whether `b` is written over `a` legally: `a` dies where `b` is made by a
/// kernel that may write in place over it.
static bool inPlace(const Slot &a, const Slot &b, const BlockLiveness &live) {
  if (a.begin != b.begin || a.end != b.end || a.live.last != b.live.def)
    return false;
  Operation *def = b.value.getDefiningOp();
  if (!def)
    return false;
  for (auto [k, operand] : llvm::enumerate(def->getOperands()))
    if (live.root(operand) == a.value && viewOffset(operand) == 0 &&
        mayWriteInPlace(def, k, stridesOf(operand), stridesOf(b.value),
                        cast<OpResult>(b.value).getResultNumber()))
      return true;
  return false;
}

LogicalResult distopt::emit::verifyMemoryPlan(Operation *holder,
                                              MemoryPlanAttr plan) {
  if (holder->getNumRegions() != 1 || !holder->getRegion(0).hasOneBlock())
    return holder->emitOpError()
           << "carries emit.memory_plan but has no single-block body";
  Block &block = holder->getRegion(0).front();
  bool isFunc = isa<FunctionOpInterface>(holder);
  // Every value has a buffer of a kind its op allows.
  for (BlockArgument arg : block.getArguments()) {
    BufferAttr b = bufferOf(arg);
    if (isFunc && (!b || !(b.isArena() || b.isArgument())))
      return holder->emitOpError()
             << "argument #" << arg.getArgNumber()
             << " needs an arena or argument emit.buffer; run "
                "dist-prepare-for-emission";
  }
  for (Operation &op : block) {
    if (op.hasTrait<OpTrait::IsTerminator>() || op.getNumResults() == 0)
      continue;
    auto list = op.getAttrOfType<ArrayAttr>(kBuffersAttr);
    if (!list || list.size() != op.getNumResults())
      return op.emitOpError()
             << "needs emit.buffers with one entry per result ("
             << op.getNumResults()
             << ") in a body with emit.memory_plan; run "
                "dist-prepare-for-emission";
    for (auto [k, r] : llvm::enumerate(op.getResults())) {
      BufferAttr b = bufferOf(r);
      auto t = dyn_cast<RankedTensorType>(r.getType());
      if (!b || !t)
        return op.emitOpError() << "emit.buffers[" << k
                                << "] must be an #emit.buffer of a ranked "
                                   "tensor result";
      if (!b.getStrides().empty() &&
          b.getStrides().size() != (size_t)t.getRank())
        return op.emitOpError()
               << "emit.buffers[" << k << "] has " << b.getStrides().size()
               << " strides for a rank-" << t.getRank() << " result";
      if (b.isArgument())
        return op.emitOpError() << "emit.buffers[" << k
                                << "] is an argument buffer; only a "
                                   "function's arguments are";
      Operation *ret =
          block.mightHaveTerminator() ? block.getTerminator() : nullptr;
      if (b.isResult() &&
          (!isFunc || !ret || llvm::count(ret->getOperands(), r) != 1))
        return op.emitOpError()
               << "emit.buffers[" << k
               << "] is a result buffer, but the result is not returned "
                  "exactly once by its function";
      if (b.isResident() &&
          !isa<graph::WeightOp, graph::ConstantOp, graph::StateOp>(op))
        return op.emitOpError()
               << "only graph.weight, graph.constant and graph.state results "
                  "can be resident";
      if (b.isView()) {
        // This verifier runs before the body's ops are; a view's layout
        // needs the op's own invariants (a transpose's permutation, a
        // slice's axes), so they are checked first, with their message.
        if (failed(op.getName().verifyInvariants(&op)))
          return failure();
        std::optional<ViewLayout> v =
            viewLayout(&op, k, stridesOf(op.getOperand(0)));
        if (!v)
          return op.emitOpError()
                 << "result #" << k << " cannot be a view of its operand";
        if (v->offset != b.getOffset() ||
            !sameLayout(t.getShape(), v->strides, stridesOf(r)))
          return op.emitOpError()
                 << "view result #" << k << " is recorded at offset "
                 << b.getOffset() << " but the op reads its operand at offset "
                 << v->offset << " with other strides";
      }
      if (b.isArena() && b.getBytes() < spanBytes(t, stridesOf(r)))
        return op.emitOpError()
               << "arena slot of result #" << k << " holds " << b.getBytes()
               << " bytes but " << t << " needs " << spanBytes(t, stridesOf(r));
    }
  }
  // Arena slots: inside the arena, and no two live buffers share bytes.
  BlockLiveness live(block);
  SmallVector<Slot> slots;
  for (auto &[value, range] : live.ranges) {
    BufferAttr b = bufferOf(value);
    if (!b || !b.isArena())
      continue;
    if (b.getOffset() < 0 || b.getOffset() + b.getBytes() > plan.getArena())
      return emitError(locOf(value, holder))
             << describe(value) << " has arena bytes [" << b.getOffset() << ", "
             << b.getOffset() + b.getBytes() << ") outside the arena of "
             << plan.getArena() << " bytes";
    slots.push_back(
        {value, b.getOffset(), b.getOffset() + b.getBytes(), range});
  }
  llvm::sort(slots, [](const Slot &a, const Slot &b) {
    return a.begin != b.begin ? a.begin < b.begin : a.live.def < b.live.def;
  });
  for (size_t i = 0; i < slots.size(); ++i)
    for (size_t j = i + 1; j < slots.size() && slots[j].begin < slots[i].end;
         ++j) {
      const Slot &a = slots[i], &b = slots[j];
      if (a.end <= b.begin || b.end <= a.begin)
        continue;
      if (a.live.last < b.live.def || b.live.last < a.live.def)
        continue;
      if (inPlace(a, b, live) || inPlace(b, a, live))
        continue;
      const Slot &later = a.live.def > b.live.def ? a : b;
      const Slot &earlier = &later == &a ? b : a;
      return emitError(locOf(later.value, holder))
             << describe(later.value) << " (live from op " << later.live.def
             << " to " << later.live.last << ") shares arena bytes ["
             << std::max(a.begin, b.begin) << ", " << std::min(a.end, b.end)
             << ") with " << describe(earlier.value) << " (live from op "
             << earlier.live.def << " to " << earlier.live.last << ")";
    }
  return success();
}
