//===- Branches.cpp - The fork of a model and its pieces --------*- C++ -*-===//
//
// Part of DistOpt. See Branches.h.
//
//===----------------------------------------------------------------------===//
#include "passes/Planning/Branches.h"

#include "dialects/Dist/DistDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace distopt;
using namespace distopt::planning;

SmallVector<Operation *> planning::sampleOps(func::FuncOp func) {
  DenseSet<Value> dependent(func.getArguments().begin(),
                            func.getArguments().end());
  SmallVector<Operation *> ops;
  for (Operation &op : func.getBody().front()) {
    if (op.hasTrait<OpTrait::IsTerminator>() ||
        llvm::none_of(op.getOperands(),
                      [&](Value v) { return dependent.contains(v); }))
      continue;
    dependent.insert(op.getResults().begin(), op.getResults().end());
    ops.push_back(&op);
  }
  return ops;
}

FailureOr<BranchSplit> planning::findBranches(func::FuncOp func) {
  SmallVector<Operation *> ops = sampleOps(func);
  int64_t n = ops.size();
  DenseMap<Operation *, int64_t> pos;
  for (auto [i, op] : llvm::enumerate(ops))
    pos[op] = i;
  // Live values after each op (index i + 1; index 0 is the start): a value
  // is live from its definition to its last per-sample use or the return.
  std::vector<int64_t> delta(n + 2, 0);
  auto addValue = [&](Value v, int64_t def) {
    int64_t last = def;
    for (OpOperand &use : v.getUses()) {
      Operation *user =
          func.getBody().front().findAncestorOpInBlock(*use.getOwner());
      if (!user)
        continue;
      if (user->hasTrait<OpTrait::IsTerminator>())
        last = n;
      else if (auto it = pos.find(user); it != pos.end())
        last = std::max(last, it->second);
    }
    if (last > def) {
      ++delta[def + 1];
      --delta[last + 1];
    }
  };
  for (BlockArgument arg : func.getArguments())
    addValue(arg, -1);
  for (auto [i, op] : llvm::enumerate(ops))
    for (Value r : op->getResults())
      addValue(r, i);
  std::vector<int64_t> cuts = {-1};
  int64_t live = delta[0];
  for (int64_t i = 0; i + 1 < n; ++i) {
    live += delta[i + 1];
    if (live == 1)
      cuts.push_back(i);
  }
  if (n > 0)
    cuts.push_back(n - 1);

  // The stretch (a, b] between two cuts: its ops grouped by the values
  // they share, up to the first op that joins two groups (it and what
  // follows go to the tail).
  struct Found {
    int64_t a = 0, b = 0, join = 0;
    SmallVector<SmallVector<int64_t>> groups;
  };
  std::optional<Found> best;
  for (size_t j = 0; j + 1 < cuts.size(); ++j) {
    int64_t a = cuts[j], b = cuts[j + 1];
    llvm::EquivalenceClasses<int64_t> uf;
    int64_t join = b + 1;
    for (int64_t i = a + 1; i <= b && join > b; ++i) {
      uf.insert(i);
      std::optional<int64_t> leader;
      for (Value v : ops[i]->getOperands()) {
        Operation *def = v.getDefiningOp();
        auto it = def ? pos.find(def) : pos.end();
        if (it == pos.end() || it->second <= a)
          continue;
        int64_t l = uf.getLeaderValue(it->second);
        if (leader && *leader != l) {
          join = i;
          break;
        }
        leader = l;
      }
      if (join > b && leader)
        uf.unionSets(*leader, i);
    }
    DenseMap<int64_t, unsigned> groupOf;
    Found f{a, b, join, {}};
    for (int64_t i = a + 1; i < std::min(join, b + 1); ++i) {
      int64_t l = uf.getLeaderValue(i);
      auto [it, fresh] = groupOf.try_emplace(l, f.groups.size());
      if (fresh)
        f.groups.emplace_back();
      f.groups[it->second].push_back(i);
    }
    if (f.groups.size() < 2)
      continue;
    int64_t size = std::min(join, b + 1) - (a + 1);
    if (!best || size > std::min(best->join, best->b + 1) - (best->a + 1))
      best = std::move(f);
  }
  if (!best)
    return emitError(func.getLoc(), "--dist-branches: @")
           << func.getSymName()
           << " does not fork into independent branches: between every two "
              "points where one activation is live its per-sample ops are "
              "connected (a chain of layers). A branch placement needs work "
              "that falls apart after a fork, as a trunk with several heads "
              "has (dist-modelgen trunk-branches); plan this model as a "
              "chain (drop --dist-branches)";
  BranchSplit split;
  split.branches = best->groups.size();
  for (int64_t i = 0; i <= best->a; ++i)
    split.pieceOf[ops[i]] = 0;
  for (auto [g, members] : llvm::enumerate(best->groups))
    for (int64_t i : members)
      split.pieceOf[ops[i]] = g + 1;
  for (int64_t i = std::min(best->join, best->b + 1); i < n; ++i)
    split.pieceOf[ops[i]] = split.branches + 1;
  return split;
}

/// Bytes per sample of \p v (its leading dimension is the batch of
/// \p samples) when its elements are \p elem bytes.
static double bytesPerSample(Value v, double samples, double elem) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t || !t.hasStaticShape())
    return 0;
  return t.getNumElements() * elem / samples;
}

FailureOr<std::pair<cost::ModelDesc, search::BranchShape>>
planning::branchModel(func::FuncOp func, const BranchSplit &split,
                      const Costing &costing) {
  unsigned k = split.branches;
  // A copy in a scratch module, each piece's ops made contiguous: an op
  // that does no per-sample work goes with its first user's piece.
  OwningOpRef<ModuleOp> scratch = ModuleOp::create(func.getLoc());
  auto copy = cast<func::FuncOp>(func->clone());
  scratch->getBody()->push_back(copy);
  Block &body = copy.getBody().front();
  SmallVector<Operation *> original, copied;
  for (Operation &op : func.getBody().front())
    original.push_back(&op);
  for (Operation &op : body)
    copied.push_back(&op);
  DenseMap<Operation *, unsigned> key;
  auto *dialect = func.getContext()->getOrLoadDialect<dist::DistDialect>();
  auto layer = dialect->getLayerAttrHelper();
  for (Operation *op : copied)
    op->walk([&](Operation *nested) {
      nested->removeAttr(layer.getName());
      nested->removeAttr(dialect->getVirtualStageAttrHelper().getName());
      nested->removeAttr(dialect->getTpAttrHelper().getName());
    });
  std::vector<bool> nonEmpty(k + 2, false);
  for (auto [orig, op] : llvm::reverse(llvm::zip(original, copied))) {
    if (op->hasTrait<OpTrait::IsTerminator>())
      continue;
    if (auto it = split.pieceOf.find(orig); it != split.pieceOf.end()) {
      key[op] = it->second;
      nonEmpty[it->second] = true;
      continue;
    }
    unsigned first = k + 1;
    bool used = false;
    for (Value r : op->getResults())
      for (Operation *user : r.getUsers()) {
        Operation *top = body.findAncestorOpInBlock(*user);
        if (!top || top->hasTrait<OpTrait::IsTerminator>())
          continue;
        used = true;
        first = std::min(first, key.lookup(top));
      }
    key[op] = used ? first : 0;
  }
  SmallVector<Operation *> order(copied.begin(), copied.end() - 1);
  llvm::stable_sort(
      order, [&](Operation *x, Operation *y) { return key[x] < key[y]; });
  for (Operation *op : order)
    op->moveBefore(body.getTerminator());
  // Layers numbered over the pieces that have ops.
  std::vector<int64_t> layerOf(k + 2, -1);
  int64_t next = 0;
  for (unsigned p = 0; p < k + 2; ++p)
    if (nonEmpty[p])
      layerOf[p] = next++;
  Builder b(func.getContext());
  for (auto [orig, op] : llvm::zip(original, copied))
    if (auto it = split.pieceOf.find(orig); it != split.pieceOf.end())
      layer.setAttr(op, b.getI64IntegerAttr(layerOf[it->second]));
  FailureOr<cost::ModelDesc> costed = modelOf(copy, costing);
  if (failed(costed))
    return failure();
  if (static_cast<int64_t>(costed->layers.size()) != next)
    return emitError(func.getLoc(),
                     "--dist-branches: the cost description of @")
           << func.getSymName() << " has " << costed->layers.size()
           << " layers for its " << next << " pieces";
  cost::ModelDesc model = *costed;
  model.layers.clear();
  search::BranchShape shape;
  shape.branches = k;
  for (unsigned p = 0; p < k + 2; ++p) {
    model.layers.push_back(layerOf[p] >= 0 ? costed->layers[layerOf[p]]
                                           : cost::LayerDesc{});
    std::string name = p == 0       ? "trunk"
                       : p == k + 1 ? "tail"
                                    : "branch " + std::to_string(p);
    model.layers.back().name = name;
    shape.names.push_back(name);
  }

  // What crosses: the values each branch reads from outside it, and what
  // it gives the tail or returns.
  double samples =
      cast<RankedTensorType>(func.getArgument(0).getType()).getDimSize(0);
  double elem = cluster::dtypeBytes(costing.dtype == cluster::DType::F8
                                        ? cluster::DType::BF16
                                        : costing.dtype);
  llvm::MapVector<Value, unsigned> crossing;
  shape.branchInputs.resize(k);
  shape.branchOutputBytes.assign(k, 0);
  auto pieceOfValue = [&](Value v) -> int {
    Operation *def = v.getDefiningOp();
    if (!def)
      return 0; // an input: at the trunk's device
    auto it = split.pieceOf.find(def);
    return it == split.pieceOf.end() ? -1 : int(it->second);
  };
  for (Operation &op : func.getBody().front()) {
    auto it = split.pieceOf.find(&op);
    int user = it == split.pieceOf.end()
                   ? (op.hasTrait<OpTrait::IsTerminator>() ? int(k + 1) : -1)
                   : int(it->second);
    if (user < 0)
      continue;
    for (Value v : op.getOperands()) {
      int from = pieceOfValue(v);
      if (from < 0 || from == user)
        continue;
      if (user >= 1 && user <= int(k)) {
        auto [c, fresh] = crossing.try_emplace(v, crossing.size());
        if (fresh)
          shape.valueBytes.push_back(bytesPerSample(v, samples, elem));
        if (!llvm::is_contained(shape.branchInputs[user - 1], c->second))
          shape.branchInputs[user - 1].push_back(c->second);
      } else if (from >= 1 && from <= int(k)) {
        shape.branchOutputBytes[from - 1] += bytesPerSample(v, samples, elem);
      }
    }
  }
  return std::make_pair(std::move(model), std::move(shape));
}

void planning::recordBranches(ModuleOp module, func::FuncOp func,
                              const BranchSplit &split,
                              const search::BranchPlacement &placement,
                              schedule::Plan plan) {
  MLIRContext *ctx = module.getContext();
  auto *dialect = ctx->getOrLoadDialect<dist::DistDialect>();
  Builder b(ctx);
  for (auto [op, piece] : split.pieceOf)
    dialect->getBranchAttrHelper().setAttr(op, b.getI64IntegerAttr(piece));
  SmallVector<int64_t> devices(placement.devices.begin(),
                               placement.devices.end());
  dialect->getBranchDevicesAttrHelper().setAttr(
      module, b.getDenseI64ArrayAttr(devices));
  unsigned lists = 1;
  for (int64_t d : devices)
    lists = std::max<unsigned>(lists, d + 1);
  plan.dp = plan.tp = 1;
  plan.pp = lists;
  plan.chunks = 1;
  plan.cuts.clear();
  plan.mbs = plan.globalBatch;
  plan.numMicrobatches = 1;
  plan.mode = schedule::Mode::Infer;
  plan.objective = schedule::InferObjective::Latency;
  plan.setSchedule(schedule::ScheduleKind::GPipe);
  dialect->getPlanAttrHelper().setAttr(module, dist::PlanAttr::get(ctx, plan));
}

LogicalResult planning::rejectBranchPlacement(ModuleOp module, StringRef pass) {
  if (!dist::DistDialect::BranchDevicesAttrHelper(module.getContext())
           .isAttrPresent(module))
    return success();
  return emitError(module.getLoc())
         << pass
         << ": the module holds a branch placement ('dist.branch_devices', "
            "dist-opt --dist-branches), not a chain of stages; its "
            "prediction is the planner's (the summary and the report's "
            "'branches'), and dist-partition (dist-compile) builds its "
            "programs";
}
