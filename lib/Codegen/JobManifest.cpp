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

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

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
    // One program on one rank, or data parallelism over any world.
    bool world = entry && entry->hasAttr("dist.data_parallel");
    o["ranks"] = world ? json::Value(nullptr) : json::Value(1);
    if (entry)
      o["inputs"] = inputsOf(entry, world ? std::nullopt
                                          : std::optional<int64_t>(1));
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
  json::Array ranks;
  for (unsigned r = 0; r < layout.numDevices(); ++r) {
    schedule::RankLayout::Coord c = *layout.coordOf(r);
    unsigned list = layout.replicated() ? r / layout.tp : c.stage;
    json::Array stages, owns;
    for (unsigned v = 0; v < layout.numVirtualStages(); ++v)
      if (layout.pipelineStage(v) == c.stage)
        stages.push_back(static_cast<int64_t>(v));
    func::FuncOp fn = lists[list];
    for (unsigned k = 0; k < fn.getNumResults(); ++k)
      if (auto name = fn.getResultAttrOfType<StringAttr>(k, "graph.update"))
        owns.push_back(name.str());
    ranks.push_back(json::Object{{"rank", static_cast<int64_t>(r)},
                                 {"list", static_cast<int64_t>(list)},
                                 {"stage", static_cast<int64_t>(c.stage)},
                                 {"replica", static_cast<int64_t>(c.replica)},
                                 {"tensor", static_cast<int64_t>(c.tensor)},
                                 {"virtual_stages", std::move(stages)},
                                 {"owns", std::move(owns)}});
  }
  o["layout"] = std::move(ranks);
  return o;
}

void codegen::writeJobManifest(ArrayRef<ModelUnit> models,
                               llvm::StringRef program, llvm::raw_ostream &os) {
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
  json::Object job{{"format", "distopt-job"},
                   {"version", 1},
                   {"program", program.str()},
                   {"ranks", ranks ? json::Value(*ranks) : json::Value(nullptr)},
                   {"models", std::move(all)}};
  os << llvm::formatv("{0:2}", json::Value(std::move(job))) << "\n";
}
