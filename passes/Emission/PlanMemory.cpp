//===- PlanMemory.cpp - The static memory plan of a body --------*- C++ -*-===//
//
// Part of DistOpt. Every value that owns memory gets a buffer before the
// program runs, instead of an allocation per op per run:
//
// - weights, constants and optimizer state are resident: filled on the
//   first run and kept (a weight is read from its file once);
// - the arguments of a function another function calls (a pipeline stage
//   called by an action list) are the caller's buffers, read in place: no
//   copy per call, no slot, and no kernel writes over them; a value it
//   returns once is computed straight into the caller's buffer for it;
// - everything else (inputs, op results) gets a slot of one arena, which
//   the program allocates on its first run and keeps. A slot's bytes are
//   reused by values whose live ranges (dialects/Emit/MemoryPlan.h: from
//   the defining op to the last reader, views included) do not overlap;
//   an elementwise kernel that reads an operand for the last time writes
//   its result over it (in place), as does a matmul or convolution whose
//   first post-op adds that operand (oneDNN's sum), and a call whose
//   callee returns that argument plus its own result (`dist.accumulates`:
//   the callee adds to the buffer it is given).
//
// Slots are placed greedily, largest first, at the lowest 64-byte-aligned
// offset free over the value's live range (the greedy-by-size heuristic of
// TFLite's arena planner), which keeps the arena close to the peak of live
// bytes.
//
//===----------------------------------------------------------------------===//
#include "passes/Emission/EmissionSteps.h"

#include "dialects/Emit/KernelRules.h"
#include "dialects/Emit/MemoryPlan.h"

#include "dialects/Graph/GraphOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace distopt;
using namespace distopt::emit;
namespace g = distopt::graph;

static constexpr int64_t kAlign = 64;

static int64_t alignUp(int64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

/// The strides a buffer records: none for row-major.
static SmallVector<int64_t> recorded(Value v) {
  BufferAttr b = bufferOf(v);
  return b ? SmallVector<int64_t>(b.getStrides()) : SmallVector<int64_t>();
}

static void setBuffer(Value v, BufferAttr b) {
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    auto fn = cast<FunctionOpInterface>(arg.getOwner()->getParentOp());
    fn.setArgAttr(arg.getArgNumber(), kBufferAttr, b);
    return;
  }
  Operation *def = v.getDefiningOp();
  SmallVector<Attribute> list;
  if (auto old = def->getAttrOfType<ArrayAttr>(kBuffersAttr))
    list.assign(old.begin(), old.end());
  list.resize(def->getNumResults(),
              BufferAttr::get(def->getContext(), BufferKind::arena, 0, 0, {}));
  list[cast<OpResult>(v).getResultNumber()] = b;
  def->setAttr(kBuffersAttr, ArrayAttr::get(def->getContext(), list));
}

namespace {
/// Values sharing one slot: a buffer and the results written over it.
struct Group {
  SmallVector<Value> values;
  int64_t bytes = 0;
  LiveRange live;
  int64_t offset = -1;
};
} // namespace

void emission::planMemory(Operation *holder, Block &body,
                          const EmissionOptions &options, bool called) {
  MLIRContext *ctx = holder->getContext();
  bool isFunc = isa<FunctionOpInterface>(holder);
  // Provisional buffers: resident for weights, constants and state; views
  // as assignLayouts decided; an arena slot (offset unknown) otherwise.
  auto arena = [&](Value v) {
    auto t = cast<RankedTensorType>(v.getType());
    SmallVector<int64_t> strides = recorded(v);
    int64_t bytes =
        spanBytes(t, strides.empty() ? rowMajorStrides(t.getShape()) : strides);
    return BufferAttr::get(ctx, BufferKind::arena, 0, alignUp(bytes), strides);
  };
  if (isFunc)
    for (BlockArgument arg : body.getArguments())
      setBuffer(arg, called
                         ? BufferAttr::get(ctx, BufferKind::argument, 0, 0, {})
                         : arena(arg));
  llvm::DenseMap<Value, unsigned> returned;
  if (called && isFunc)
    for (Value v : body.getTerminator()->getOperands())
      ++returned[v];
  for (Operation &op : body) {
    if (op.hasTrait<OpTrait::IsTerminator>())
      continue;
    for (Value r : op.getResults()) {
      BufferAttr b = bufferOf(r);
      if (b && b.isView())
        continue;
      if (isa<g::WeightOp, g::ConstantOp, g::StateOp>(op))
        setBuffer(r, BufferAttr::get(ctx, BufferKind::resident, 0, 0, {}));
      else if (returned.lookup(r) == 1 && recorded(r).empty())
        setBuffer(r, BufferAttr::get(ctx, BufferKind::result, 0, 0, {}));
      else
        setBuffer(r, arena(r));
    }
  }

  // Groups: one per arena buffer, merged where a kernel writes in place.
  BlockLiveness live(body);
  SmallVector<Value> roots;
  for (BlockArgument arg : body.getArguments())
    roots.push_back(arg);
  for (Operation &op : body)
    for (Value r : op.getResults())
      if (live.root(r) == r)
        roots.push_back(r);
  std::vector<Group> groups;
  llvm::DenseMap<Value, size_t> groupOf;
  for (Value v : roots) {
    BufferAttr b = bufferOf(v);
    if (!b || !b.isArena())
      continue;
    LiveRange range = live.ranges.lookup(v);
    // In place: the defining kernel reads an operand for the last time. A
    // started all-reduce always does (BlockLiveness ended that operand's
    // range there).
    Operation *def = v.getDefiningOp();
    if (def && (options.inPlace || def->hasAttr(kAsyncAttr)))
      for (auto [k, operand] : llvm::enumerate(def->getOperands())) {
        Value src = live.root(operand);
        auto it = groupOf.find(src);
        if (it == groupOf.end())
          continue;
        Group &gsrc = groups[it->second];
        if (gsrc.live.last != range.def || gsrc.bytes != b.getBytes() ||
            viewOffset(operand) != 0 ||
            !mayWriteInPlace(def, k, stridesOf(operand), stridesOf(v),
                             cast<OpResult>(v).getResultNumber()))
          continue;
        gsrc.values.push_back(v);
        gsrc.live.last = range.last;
        groupOf[v] = it->second;
        break;
      }
    if (groupOf.count(v))
      continue;
    groupOf[v] = groups.size();
    groups.push_back({{v}, b.getBytes(), range, -1});
  }

  // Greedy by size: the largest group first, at the lowest free offset.
  SmallVector<size_t> order;
  for (size_t i = 0; i < groups.size(); ++i)
    order.push_back(i);
  llvm::stable_sort(order, [&](size_t a, size_t b) {
    return groups[a].bytes > groups[b].bytes;
  });
  SmallVector<size_t> placed;
  int64_t arenaBytes = 0, unshared = 0;
  for (size_t i : order) {
    Group &gr = groups[i];
    SmallVector<std::pair<int64_t, int64_t>> busy;
    for (size_t j : placed) {
      const Group &o = groups[j];
      if (o.live.last < gr.live.def || gr.live.last < o.live.def)
        continue;
      busy.push_back({o.offset, o.offset + o.bytes});
    }
    llvm::sort(busy);
    int64_t at = 0;
    for (auto [lo, hi] : busy) {
      if (at + gr.bytes <= lo)
        break;
      at = std::max(at, alignUp(hi));
    }
    gr.offset = at;
    placed.push_back(i);
    arenaBytes = std::max(arenaBytes, at + gr.bytes);
  }
  for (Group &gr : groups)
    for (Value v : gr.values) {
      BufferAttr b = bufferOf(v);
      unshared += b.getBytes();
      setBuffer(v, BufferAttr::get(ctx, BufferKind::arena, gr.offset,
                                   b.getBytes(), b.getStrides()));
    }
  holder->setAttr(kMemoryPlanAttr,
                  MemoryPlanAttr::get(ctx, arenaBytes, unshared));
}
