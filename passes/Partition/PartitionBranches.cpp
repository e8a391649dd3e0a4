//===- PartitionBranches.cpp - Programs of a branch placement ---*- C++ -*-===//
//
// Part of DistOpt. See PartitionBranches.h. The pieces form a DAG (the
// trunk feeds every branch, every branch the tail), not a chain of stages:
// a value goes straight from the list that computes it to each list that
// reads it.
//
//===----------------------------------------------------------------------===//
#include "passes/Partition/PartitionBranches.h"

#include "passes/Planning/Branches.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace distopt;

namespace {
/// One piece: its ops in program order, what it reads from other pieces
/// or the inputs, and what other pieces or the return read of it.
struct Piece {
  SmallVector<Operation *> ops;
  llvm::SetVector<Value> inputs, outputs;
  func::FuncOp fn;
};
} // namespace

/// The values \p op reads, its regions' reads from above included.
static SmallVector<Value> readsOf(Operation *op) {
  SmallVector<Value> reads(op->getOperands().begin(), op->getOperands().end());
  llvm::SetVector<Value> above;
  getUsedValuesDefinedAbove(op->getRegions(), above);
  reads.append(above.begin(), above.end());
  return reads;
}

/// `@<f>_piece<p>`: the piece's ops, with the ops that do no per-sample
/// work (weights, constants, weight transforms) it reads cloned in.
static func::FuncOp outlinePiece(func::FuncOp func, unsigned p, Piece &piece,
                                 const DenseSet<Operation *> &placed,
                                 OpBuilder &b) {
  MLIRContext *ctx = func.getContext();
  SmallVector<Type> in, out;
  for (Value v : piece.inputs)
    in.push_back(v.getType());
  for (Value v : piece.outputs)
    out.push_back(v.getType());
  auto fn = func::FuncOp::create(
      b, func.getLoc(), (func.getSymName() + "_piece" + Twine(p)).str(),
      FunctionType::get(ctx, in, out));
  fn.setPrivate();
  dist::DistDialect::BranchAttrHelper(ctx).setAttr(fn, b.getI64IntegerAttr(p));
  Block *entry = fn.addEntryBlock();
  OpBuilder ib = OpBuilder::atBlockEnd(entry);
  IRMapping map;
  for (auto [v, arg] : llvm::zip(piece.inputs, entry->getArguments()))
    map.map(v, arg);
  std::function<void(Value)> source = [&](Value v) {
    Operation *def = v.getDefiningOp();
    if (map.contains(v) || !def || placed.contains(def))
      return;
    for (Value r : readsOf(def))
      source(r);
    ib.clone(*def, map);
  };
  for (Operation *op : piece.ops) {
    for (Value r : readsOf(op))
      source(r);
    ib.clone(*op, map);
  }
  SmallVector<Value> results;
  for (Value v : piece.outputs)
    results.push_back(map.lookup(v));
  func::ReturnOp::create(ib, func.getLoc(), results);
  piece.fn = fn;
  return fn;
}

LogicalResult partition::partitionBranches(ModuleOp module, func::FuncOp func,
                                           dist::PlanAttr plan,
                                           ArrayRef<int64_t> devices) {
  MLIRContext *ctx = module.getContext();
  unsigned numPieces = devices.size();
  schedule::RankLayout layout = plan.getLayout();
  unsigned lists = layout.pp;
  if (layout.dp != 1 || layout.tp != 1 || layout.replicated() ||
      plan.getMicrobatches() != 1 || plan.getChunks() != 1)
    return emitError(module.getLoc())
           << "dist-partition: a branch placement ('dist.branch_devices') "
              "runs one batch with one device per action list, but the plan "
              "is "
           << plan.toPlan().str()
           << "; plan the module again (--dist-branches)";
  for (int64_t d : devices)
    if (d >= static_cast<int64_t>(lists))
      return emitError(module.getLoc())
             << "dist-partition: 'dist.branch_devices' places a piece on "
                "device "
             << d << " but the plan has " << lists
             << " action lists; plan the module again (--dist-branches)";
  unsigned home = devices.front();
  if (devices.back() != devices.front())
    return emitError(module.getLoc())
           << "dist-partition: 'dist.branch_devices' puts the tail on device "
           << devices.back() << " and the trunk on device " << home
           << "; the trunk's device runs the tail and gathers the outputs";

  // The pieces and the device of every per-sample value (an input is the
  // trunk's device's).
  auto branchOf = dist::DistDialect::BranchAttrHelper(ctx);
  SmallVector<Piece> pieces(numPieces);
  DenseMap<Operation *, unsigned> pieceOf;
  DenseSet<Operation *> placed;
  for (Operation *op : planning::sampleOps(func)) {
    IntegerAttr p = branchOf.getAttr(op);
    if (!p)
      return op->emitOpError("does per-sample work but has no '")
             << dist::DistDialect::BranchAttrHelper::getNameStr()
             << "' while the module has a branch placement; plan the module "
                "again (--dist-branches)";
    if (p.getInt() >= numPieces)
      return op->emitOpError("is in piece ")
             << p.getInt() << " but 'dist.branch_devices' places " << numPieces
             << " pieces";
    pieceOf[op] = p.getInt();
    placed.insert(op);
    pieces[p.getInt()].ops.push_back(op);
  }
  auto pieceOfValue = [&](Value v) -> std::optional<unsigned> {
    if (isa<BlockArgument>(v))
      return std::nullopt;
    return pieceOf.lookup(v.getDefiningOp());
  };
  auto deviceOf = [&](Value v) -> unsigned {
    std::optional<unsigned> p = pieceOfValue(v);
    return p ? devices[*p] : home;
  };
  auto isPerSample = [&](Value v) {
    return isa<BlockArgument>(v) || placed.contains(v.getDefiningOp());
  };
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  // Who reads each per-sample value: lists, in first-read order.
  llvm::MapVector<Value, llvm::SetVector<unsigned>> readers;
  for (auto [p, piece] : llvm::enumerate(pieces))
    for (Operation *op : piece.ops)
      for (Value v : readsOf(op)) {
        if (!isPerSample(v) || pieceOfValue(v) == std::optional<unsigned>(p))
          continue;
        if (p < numPieces && pieceOfValue(v) && *pieceOfValue(v) > p)
          return op->emitOpError("in piece ")
                 << p << " reads a value of the later piece "
                 << *pieceOfValue(v)
                 << "; pieces run in order (plan the module again)";
        piece.inputs.insert(v);
        if (std::optional<unsigned> from = pieceOfValue(v))
          pieces[*from].outputs.insert(v);
        if (devices[p] != deviceOf(v))
          readers[v].insert(devices[p]);
      }
  for (Value v : ret.getOperands()) {
    if (!isPerSample(v))
      return ret.emitOpError("returns a value that does not depend on the "
                             "inputs; a branch placement returns per-sample "
                             "results");
    if (std::optional<unsigned> from = pieceOfValue(v))
      pieces[*from].outputs.insert(v);
    if (deviceOf(v) != home)
      readers[v].insert(home);
  }
  if (readers.size() > 32768)
    return func.emitError("dist-partition: ")
           << readers.size()
           << " values cross between the devices of the branch placement, "
              "more than the 32768 tags the runtime's transfers carry";
  DenseMap<Value, int64_t> tagOf;
  for (auto [i, entry] : llvm::enumerate(readers))
    tagOf[entry.first] = i;

  // Programs built again replace the old ones.
  for (auto f : llvm::make_early_inc_range(module.getOps<func::FuncOp>()))
    if (dist::DistDialect::ActionListAttrHelper(ctx).isAttrPresent(f) ||
        (f != func && branchOf.isAttrPresent(f)))
      f.erase();
  OpBuilder b(ctx);
  b.setInsertionPointAfter(func);
  for (auto [p, piece] : llvm::enumerate(pieces)) {
    if (piece.ops.empty())
      continue;
    std::string name = (func.getSymName() + "_piece" + Twine(p)).str();
    if (module.lookupSymbol(name))
      return func.emitError("dist-partition: @")
             << name << " is taken; rename it before partitioning";
    outlinePiece(func, p, piece, placed, b);
  }

  auto sendTo = [&](OpBuilder &ib, Value v, Value local, unsigned list) {
    for (unsigned peer : readers.lookup(v))
      if (peer != list)
        dist::SendOp::create(ib, v.getLoc(), local, ib.getI64IntegerAttr(peer),
                             ib.getI64IntegerAttr(tagOf.lookup(v)),
                             ib.getUnitAttr());
  };
  for (unsigned list = 0; list < lists; ++list) {
    bool holds = list == home;
    SmallVector<Type> outputs;
    if (holds)
      outputs.assign(func.getResultTypes().begin(),
                     func.getResultTypes().end());
    auto fn = func::FuncOp::create(
        b, func.getLoc(), (func.getSymName() + "_rank" + Twine(list)).str(),
        FunctionType::get(ctx, func.getArgumentTypes(), outputs));
    fn.setAllArgAttrs(func.getAllArgAttrs());
    if (holds)
      fn.setAllResultAttrs(func.getAllResultAttrs());
    dist::DistDialect::ActionListAttrHelper(ctx).setAttr(
        fn, b.getI64IntegerAttr(list));
    Block *entry = fn.addEntryBlock();
    OpBuilder ib = OpBuilder::atBlockEnd(entry);
    DenseMap<Value, Value> local;
    auto localOf = [&](Value v) -> Value {
      if (Value l = local.lookup(v))
        return l;
      auto recv = dist::RecvOp::create(
          ib, v.getLoc(), v.getType(), ib.getI64IntegerAttr(deviceOf(v)),
          ib.getI64IntegerAttr(tagOf.lookup(v)), ib.getUnitAttr());
      local[v] = recv.getResult();
      return recv.getResult();
    };
    if (holds)
      for (auto [arg, mine] :
           llvm::zip(func.getArguments(), entry->getArguments())) {
        local[arg] = mine;
        sendTo(ib, arg, mine, list);
      }
    for (auto [p, piece] : llvm::enumerate(pieces)) {
      if (piece.ops.empty() || devices[p] != list)
        continue;
      SmallVector<Value> operands;
      for (Value v : piece.inputs)
        operands.push_back(localOf(v));
      auto call = func::CallOp::create(ib, piece.ops.front()->getLoc(),
                                       piece.fn, operands);
      for (auto [v, r] : llvm::zip(piece.outputs, call.getResults())) {
        local[v] = r;
        sendTo(ib, v, r, list);
      }
    }
    SmallVector<Value> results;
    if (holds)
      for (Value v : ret.getOperands())
        results.push_back(localOf(v));
    func::ReturnOp::create(ib, func.getLoc(), results);
  }
  return success();
}
