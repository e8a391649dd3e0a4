//===- JobManifest.cpp - What a compiled job runs on which rank -*- C++ -*-===//
//
// Part of DistOpt. `dist-compile -o job/` writes the program and
// `job/manifest.json`: the plan, how many ranks the job needs, and per rank
// its action list, stage, replica and tensor coordinates, the virtual
// stages it runs and the weights and state it owns. `dist-run` reads it to
// launch the job with the right number of ranks (docs/cli.md, "Jobs").
//
//===----------------------------------------------------------------------===//
#include "lib/Codegen/Codegen.h"

#include "dialects/Dist/DistDialect.h"
#include "dialects/Dist/DistOps.h"
#include "dialects/Graph/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <functional>

using namespace mlir;
using namespace distopt;
namespace json = llvm::json;

/// The compiled function of \p u: its funcName, else `main`, else the
/// module's only function.
static func::FuncOp entryOf(const codegen::ModelUnit &u) {
  ModuleOp m = u.module;
  if (!u.funcName.empty())
    return m.lookupSymbol<func::FuncOp>(u.funcName);
  if (auto f = m.lookupSymbol<func::FuncOp>("main"))
    return f;
  auto funcs = m.getOps<func::FuncOp>();
  return std::distance(funcs.begin(), funcs.end()) == 1 ? *funcs.begin()
                                                        : func::FuncOp();
}

/// "f32", "i64", ... of \p t's element type.
static std::string dtypeOf(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  cast<ShapedType>(t).getElementType().print(os);
  return s;
}

static json::Array shapeOf(Type t, int64_t rowsFactor) {
  json::Array dims;
  auto r = cast<RankedTensorType>(t);
  for (auto [k, d] : llvm::enumerate(r.getShape()))
    dims.push_back(k == 0 ? d * rowsFactor : d);
  return dims;
}

/// The inputs the job reads: name, dtype and the shape of the file every
/// rank is given (a sharded input holds every replica's rows; `null` rows
/// when the replica count is the launched world's).
static json::Array inputsOf(func::FuncOp f, std::optional<int64_t> replicas) {
  json::Array out;
  for (BlockArgument arg : f.getArguments()) {
    auto r = dyn_cast<RankedTensorType>(arg.getType());
    if (!r)
      continue;
    auto name = f.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "graph.name");
    bool sharded =
        static_cast<bool>(f.getArgAttr(arg.getArgNumber(), "dist.batch_shard"));
    json::Object in{{"name", name ? name.str()
                                  : "arg" + std::to_string(arg.getArgNumber())},
                    {"dtype", dtypeOf(r)}};
    if (sharded && !replicas) {
      json::Array dims = shapeOf(r, 1);
      dims[0] = nullptr; // world size x the per-rank rows
      in["shape"] = std::move(dims);
      in["rows_per_rank"] = r.getRank() ? r.getDimSize(0) : 1;
    } else {
      in["shape"] = shapeOf(r, sharded ? *replicas : 1);
    }
    in["sharded"] = sharded;
    out.push_back(std::move(in));
  }
  return out;
}

/// Bytes of the optimizer state (momentum buffers, Adam moments) that the
/// updates of \p fn and of the functions it calls read: what one rank holds
/// (with ZeRO, its shards).
static int64_t optimizerStateBytes(func::FuncOp fn) {
  int64_t bytes = 0;
  auto add = [&](Value v) {
    auto t = cast<RankedTensorType>(v.getType());
    bytes += t.getNumElements() *
             static_cast<int64_t>(
                 llvm::divideCeil(t.getElementTypeBitWidth(), 8));
  };
  auto module = fn->getParentOfType<ModuleOp>();
  llvm::SmallPtrSet<Operation *, 4> seen;
  std::function<void(func::FuncOp)> walk = [&](func::FuncOp f) {
    if (!f || !seen.insert(f).second)
      return;
    f.walk([&](Operation *op) {
      if (auto adam = dyn_cast<graph::AdamUpdateOp>(op)) {
        add(adam.getExpAvg());
        add(adam.getExpAvgSq());
      } else if (auto sgd = dyn_cast<graph::SgdUpdateOp>(op)) {
        if (sgd.getMomentumBuf())
          add(sgd.getMomentumBuf());
      } else if (auto call = dyn_cast<func::CallOp>(op)) {
        walk(module.lookupSymbol<func::FuncOp>(call.getCallee()));
      }
    });
  };
  walk(fn);
  // Gradient accumulation: the optimizer runs in @train_apply.
  if (fn.getSymName() == "train_microbatch")
    walk(module.lookupSymbol<func::FuncOp>("train_apply"));
  return bytes;
}

/// Which part of its tensor rank \p rank holds of the weight or state
/// \p op reads, as `shards.json` says it
/// (runtime/include/distrt/gen/Program.h, Shard): a tensor-parallel part
/// (`dim`, `blocks`, `parts`, `index`), or a ZeRO block (`dim` -1, `parts`
/// replicas, `index` its place in the group that holds it, `shape` the
/// whole tensor's) of the whole tensor or of the rank's part (`part`;
/// with an expert rank's tensor part, that part is of its experts' part,
/// `outer`).
static json::Object shardOf(Operation *op, unsigned rank) {
  MLIRContext *ctx = op->getContext();
  DenseI64ArrayAttr tp = dist::DistDialect::TpShardAttrHelper(ctx).getAttr(op);
  DictionaryAttr zero = dist::DistDialect::ZeroShardAttrHelper(ctx).getAttr(op);
  // A part's index is (rank / stride) mod parts, as the program computes
  // it: the tensor rank of a tensor-parallel part, the replica in its
  // expert group of an expert-parallel one, also for the part a ZeRO block
  // is of. An expert rank's tensor-parallel part (two axes) is the part
  // (`part`: [dim, blocks, parts, index]) of its experts' part that the
  // entry's `dim` .. `index` name, as the program's dg::Shard.
  SmallVector<dist::ShardAxis> axes;
  if (tp)
    axes = dist::shardAxes(tp.asArrayRef());
  auto partIndex = [&](const dist::ShardAxis &a) { return a.indexOf(rank); };
  if (!zero) {
    const dist::ShardAxis &in = axes.back();
    json::Object o{{"dim", in.dim},
                   {"blocks", in.blocks},
                   {"parts", in.parts},
                   {"index", partIndex(in)}};
    if (axes.size() == 2) {
      const dist::ShardAxis &out = axes.front();
      o["shape"] = json::Array(dist::wholeShape(op));
      o["part"] = json::Array{out.dim, out.blocks, out.parts, partIndex(out)};
    }
    return o;
  }
  SmallVector<int64_t> whole = dist::wholeShape(op);
  int64_t parts = 1, index = 0;
  for (const SmallVector<int64_t> &group : dist::runGroups(op))
    if (const auto *at = llvm::find(group, static_cast<int64_t>(rank));
        at != group.end()) {
      parts = static_cast<int64_t>(group.size());
      index = at - group.begin();
    }
  json::Object o{{"dim", -1},
                 {"blocks", 1},
                 {"parts", parts},
                 {"index", index},
                 {"shape", json::Array(whole)}};
  // The part a block is of is the innermost axis's; with two axes that
  // part is of the experts' (`outer`), as the program's dg::Shard.
  auto axis = [&](const dist::ShardAxis &a) {
    return json::Array{a.dim, a.blocks, a.parts, partIndex(a)};
  };
  if (tp)
    o["part"] = axis(axes.back());
  if (axes.size() == 2)
    o["outer"] = axis(axes.front());
  return o;
}

/// One model of the job.
static json::Object modelOf(const codegen::ModelUnit &u) {
  ModuleOp m = u.module;
  MLIRContext *ctx = m.getContext();
  json::Object o{{"name", u.name}, {"source", u.source}};
  func::FuncOp entry = entryOf(u);
  o["function"] = entry ? entry.getSymName().str() : "";
  o["training"] = entry && entry->hasAttr("graph.train");
  dist::PlanAttr plan = dist::DistDialect::PlanAttrHelper(ctx).getAttr(m);
  o["plan"] = plan ? json::Value(plan.toPlan().str()) : json::Value(nullptr);

  // Per-list programs (dist-partition), by list.
  auto listHelper = dist::DistDialect::ActionListAttrHelper(ctx);
  SmallVector<func::FuncOp> lists;
  for (auto f : m.getOps<func::FuncOp>())
    if (IntegerAttr l = listHelper.getAttr(f)) {
      if (lists.size() <= static_cast<size_t>(l.getInt()))
        lists.resize(l.getInt() + 1);
      lists[l.getInt()] = f;
    }
  if (!plan || lists.empty() || llvm::is_contained(lists, func::FuncOp())) {
    // One program on one rank, data parallelism over any world
    // (--data-parallel), or over the replicas a plan fixes (its dp, or
    // ZeRO's: each holding its state's shards).
    bool world = entry && entry->hasAttr("dist.data_parallel");
    DictionaryAttr zero =
        entry ? dist::DistDialect::ZeroAttrHelper(ctx).getAttr(entry)
              : DictionaryAttr();
    std::optional<int64_t> replicas;
    if (zero) {
      replicas = zero.getAs<IntegerAttr>("replicas").getInt();
      o["zero"] = json::Object{
          {"stage", zero.getAs<IntegerAttr>("stage").getInt()},
          {"replicas", *replicas}};
    } else if (!world) {
      replicas = 1;
    } else if (plan && plan.getDp() > 1) {
      replicas = plan.getDp();
    }
    o["ranks"] = replicas ? json::Value(*replicas) : json::Value(nullptr);
    if (entry)
      o["inputs"] = inputsOf(entry, replicas);
    if (entry && o.getBoolean("training").value_or(false))
      o["optimizer_state_bytes"] = optimizerStateBytes(entry);
    return o;
  }

  schedule::RankLayout layout = plan.getLayout();
  auto schedules = m.getOps<dist::ScheduleOp>();
  if (!schedules.empty()) {
    dist::ScheduleOp s = *schedules.begin();
    o["schedule"] = s.getKind().str();
    o["microbatches"] = s.getMicrobatches();
  }
  o["ranks"] = static_cast<int64_t>(layout.numDevices());
  o["inputs"] = inputsOf(lists.front(), layout.dp);
  // ZeRO-1 inside the stages: each rank's optimizer state is the block
  // `replica` of its stage's dp replicas (docs/distributed.md).
  if (plan.getZero() >= 1)
    o["zero"] = json::Object{{"stage", plan.getZero()},
                             {"replicas", static_cast<int64_t>(layout.dp)}};
  // The weights and states each list holds in part, by list and name: a
  // tensor-parallel part (dist-tensor-parallel), a ZeRO block (dist-zero)
  // or a ZeRO block of a part.
  std::vector<llvm::StringMap<Operation *>> partsOf(lists.size());
  for (auto [l, fn] : llvm::enumerate(lists))
    fn.walk([&, l = l](Operation *op) {
      auto name = op->getAttrOfType<StringAttr>("sym_name");
      if (name &&
          (op->hasAttr(dist::DistDialect::TpShardAttrHelper::getNameStr()) ||
           op->hasAttr(dist::DistDialect::ZeroShardAttrHelper::getNameStr())))
        partsOf[l][name.getValue()] = op;
    });
  json::Array ranks;
  for (unsigned r = 0; r < layout.numDevices(); ++r) {
    schedule::RankLayout::Coord c = *layout.coordOf(r);
    unsigned list = layout.replicated() ? r / layout.tp : c.stage;
    json::Array stages, owns;
    for (unsigned v = 0; v < layout.numVirtualStages(); ++v)
      if (layout.pipelineStage(v) == c.stage)
        stages.push_back(static_cast<int64_t>(v));
    func::FuncOp fn = lists[list];
    json::Object shards;
    for (unsigned k = 0; k < fn.getNumResults(); ++k)
      if (auto name = fn.getResultAttrOfType<StringAttr>(k, "graph.update")) {
        owns.push_back(name.str());
        if (Operation *op = partsOf[list].lookup(name.getValue()))
          shards[name.getValue()] = shardOf(op, r);
      }
    ranks.push_back(json::Object{{"rank", static_cast<int64_t>(r)},
                                 {"list", static_cast<int64_t>(list)},
                                 {"stage", static_cast<int64_t>(c.stage)},
                                 {"replica", static_cast<int64_t>(c.replica)},
                                 {"tensor", static_cast<int64_t>(c.tensor)},
                                 {"virtual_stages", std::move(stages)},
                                 {"owns", std::move(owns)},
                                 {"shards", std::move(shards)},
                                 {"optimizer_state_bytes",
                                  optimizerStateBytes(fn)}});
  }
  o["layout"] = std::move(ranks);
  return o;
}

void codegen::writeJobManifest(ArrayRef<ModelUnit> models,
                               llvm::StringRef program,
                               ArrayRef<std::string> compileArgs,
                               llvm::StringRef compileDir,
                               llvm::raw_ostream &os) {
  json::Array all;
  std::optional<int64_t> ranks = 1;
  for (const ModelUnit &u : models) {
    json::Object o = modelOf(u);
    // The job's rank count: the models' (one program holds them all).
    if (const json::Value *r = o.get("ranks")) {
      if (auto n = r->getAsInteger())
        ranks = std::max<int64_t>(ranks.value_or(1), *n);
      else
        ranks = std::nullopt;
    }
    all.push_back(std::move(o));
  }
  json::Object job{
      {"format", "distopt-job"},
      {"version", 1},
      {"program", program.str()},
      {"ranks", ranks ? json::Value(*ranks) : json::Value(nullptr)},
      {"models", std::move(all)},
      {"compile", json::Object{{"dir", compileDir.str()},
                               {"args", json::Array(compileArgs)}}}};
  os << llvm::formatv("{0:2}", json::Value(std::move(job))) << "\n";
}
