//===- PlanDriver.cpp - Plan, simulate and report from dist-opt -*- C++ -*-===//
//
// Part of DistOpt.
//
//===----------------------------------------------------------------------===//
#include "lib/Driver/PlanDriver.h"

#include "lib/Cluster/Cluster.h"
#include "lib/Cost/CostModel.h"
#include "lib/Cost/ProfileDB.h"
#include "lib/Driver/ClusterAttr.h"
#include "lib/GraphCost/ModelFromGraph.h"
#include "lib/Schedule/Plan.h"
#include "lib/Sim/Report.h"
#include "lib/Sim/Simulator.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace distopt;

/// The function to plan: `main`, else the only function with a body.
static func::FuncOp findEntry(ModuleOp module) {
  if (auto main = module.lookupSymbol<func::FuncOp>("main"))
    if (!main.isExternal())
      return main;
  func::FuncOp found;
  for (auto f : module.getOps<func::FuncOp>()) {
    if (f.isExternal())
      continue;
    if (found)
      return {};
    found = f;
  }
  return found;
}

/// Writes `write`'s output to `path`; reports failure on `module`.
static LogicalResult
writeFile(ModuleOp module, StringRef path, StringRef what,
          llvm::function_ref<void(llvm::raw_ostream &)> write) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_Text);
  if (ec)
    return module.emitError("cannot write the ")
           << what << " to '" << path << "': " << ec.message();
  write(os);
  return success();
}

static std::string humanBytes(double bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  unsigned u = 0;
  while (bytes >= 1024 && u + 1 < std::size(units)) {
    bytes /= 1024;
    ++u;
  }
  return llvm::formatv("{0:F1} {1}", bytes, units[u]).str();
}

static void printModel(const cost::ModelDesc &model, llvm::raw_ostream &os) {
  os << "model '" << model.name << "': " << model.layers.size()
     << " layers, "
     << llvm::formatv("{0:F3}", model.paramCount() / 1e9)
     << "B parameters, "
     << llvm::formatv("{0:F3}", model.trainingFlopsPerSample() / 1e12)
     << " TFLOP per sample (training, no recomputation)\n";
  for (const cost::LayerDesc &layer : model.layers) {
    cost::PhaseCost f = layer.total(cost::Phase::Forward);
    os << llvm::formatv("  {0,-60} ops {1,4}  params {2,12:F0}  fwd GFLOP "
                        "{3,10:F3}  boundary {4}\n",
                        layer.name.substr(0, 60), layer.ops.size(),
                        layer.params(), f.flops / 1e9,
                        humanBytes(layer.boundaryBytes));
  }
}

static void printSummary(const sim::PlanSimulation &sim,
                         const cluster::Cluster &cluster,
                         llvm::raw_ostream &os) {
  const sim::SimResult &r = sim.result;
  os << "plan: " << sim.plan.str() << " on " << cluster.name << " ("
     << cluster.numDevices() << " devices), global batch "
     << sim.plan.globalBatch << " = " << sim.plan.numMicrobatches
     << " micro-batches of " << sim.plan.mbs << " per replica\n";
  os << llvm::formatv("  iteration time   {0:F4} s\n", r.iterationTime);
  os << llvm::formatv("  throughput       {0:F2} samples/s\n",
                      r.samplesPerSecond);
  os << llvm::formatv("  TFLOP/s/device   {0:F1} (model {1:F1})\n",
                      r.tflopsPerDevice, r.modelTflopsPerDevice);
  os << llvm::formatv("  bubble           {0:F1}%\n", 100 * r.bubbleFraction);
  for (auto [i, peak] : llvm::enumerate(r.peakMemoryBytes))
    os << "  stage " << i << " peak memory " << humanBytes(peak) << " of "
       << humanBytes(sim.costs.devices[i].memoryCapacity) << " ("
       << sim.costs.devices[i].deviceName << ")\n";
  for (auto [i, bytes] : llvm::enumerate(r.bytesPerLevel))
    os << "  traffic on " << r.levelNames[i] << ": " << humanBytes(bytes)
       << " per iteration\n";
  if (!r.fitsMemory)
    os << "  warning: the plan does not fit in device memory: "
       << r.memoryProblem << "\n";
}

/// Records cluster and plan on the module for later passes and tools.
static void annotate(ModuleOp module, const cluster::Cluster &cluster,
                     const sim::PlanSimulation *sim) {
  MLIRContext *ctx = module.getContext();
  ctx->getOrLoadDialect<dist::DistDialect>();
  Builder b(ctx);
  module->setAttr("dist.cluster", toClusterAttr(ctx, cluster));
  if (!sim)
    return;
  const schedule::Plan &p = sim->plan;
  SmallVector<NamedAttribute> fields = {
      b.getNamedAttr("dp", b.getI64IntegerAttr(p.dp)),
      b.getNamedAttr("tp", b.getI64IntegerAttr(p.tp)),
      b.getNamedAttr("pp", b.getI64IntegerAttr(p.pp)),
      b.getNamedAttr("mbs", b.getI64IntegerAttr(p.mbs)),
      b.getNamedAttr("num_microbatches",
                     b.getI64IntegerAttr(p.numMicrobatches)),
      b.getNamedAttr("schedule", b.getStringAttr(scheduleName(p.schedule))),
      b.getNamedAttr("chunks", b.getI64IntegerAttr(p.chunks)),
      b.getNamedAttr("recompute",
                     b.getStringAttr(cost::recomputeName(p.recompute))),
      b.getNamedAttr("zero", b.getI64IntegerAttr(p.zero)),
      b.getNamedAttr("global_batch", b.getI64IntegerAttr(p.globalBatch))};
  SmallVector<int64_t> firstLayers;
  for (const schedule::StageCost &s : sim->costs.stages)
    firstLayers.push_back(s.layerBegin);
  fields.push_back(
      b.getNamedAttr("stage_first_layers", b.getDenseI64ArrayAttr(firstLayers)));
  module->setAttr("dist.plan", b.getDictionaryAttr(fields));
}

LogicalResult distopt::runPlanDriver(ModuleOp module,
                                     const PlanDriverOptions &options,
                                     llvm::raw_ostream &os) {
  func::FuncOp entry = findEntry(module);
  if (!entry)
    return module.emitError(
        "cannot plan: expected a function named 'main' or exactly one "
        "function with a body");

  GraphModelOptions modelOptions;
  if (!options.dtype.empty()) {
    cluster::DType dt;
    if (!cluster::parseDType(options.dtype, dt))
      return module.emitError("unknown --dist-dtype='")
             << options.dtype << "': expected f32, tf32, f16, bf16 or f8";
    modelOptions.computeType = dt;
  }
  FailureOr<cost::ModelDesc> model = buildModelDesc(entry, modelOptions);
  if (failed(model))
    return failure();
  if (options.printModel)
    printModel(*model, os);

  bool wantsPlan = options.simulate || !options.report.empty() ||
                   !options.trace.empty() || !options.timeline.empty() ||
                   !options.plan.empty();
  if (options.cluster.empty()) {
    if (wantsPlan)
      return module.emitError("planning needs a cluster: pass "
                              "--dist-cluster=PRESET:NODES or "
                              "--dist-cluster=FILE.yaml (see "
                              "--list-clusters)");
    return success();
  }
  llvm::Expected<cluster::Cluster> cluster =
      cluster::resolveCluster(options.cluster);
  if (!cluster)
    return module.emitError(llvm::toString(cluster.takeError()));
  if (!wantsPlan) {
    annotate(module, *cluster, nullptr);
    return success();
  }
  if (options.plan.empty())
    return module.emitError("--dist-simulate needs a plan: pass "
                            "--dist-plan=\"dp=..,tp=..,pp=..,mbs=..,"
                            "schedule=..\"");
  if (options.batch == 0)
    return module.emitError("--dist-simulate needs the global batch in "
                            "samples: pass --dist-batch=N");
  llvm::Expected<schedule::Plan> plan = schedule::parsePlan(options.plan);
  if (!plan)
    return module.emitError("bad --dist-plan: ")
           << llvm::toString(plan.takeError());

  std::optional<cost::ProfileDB> profile;
  if (!options.profile.empty()) {
    llvm::Expected<cost::ProfileDB> db = cost::ProfileDB::load(options.profile);
    if (!db)
      return module.emitError(llvm::toString(db.takeError()));
    profile = std::move(*db);
  }
  cost::CostModel cm(profile ? &*profile : nullptr);
  sim::SimOptions simOptions;
  simOptions.recordEvents = !options.trace.empty() || !options.timeline.empty();
  llvm::Expected<sim::PlanSimulation> sim = sim::simulatePlan(
      *model, *cluster, *plan, options.batch, cm, simOptions);
  if (!sim)
    return module.emitError(llvm::toString(sim.takeError()));

  printSummary(*sim, *cluster, os);
  annotate(module, *cluster, &*sim);

  if (!options.report.empty() &&
      failed(writeFile(module, options.report, "report",
                       [&](llvm::raw_ostream &out) {
                         sim::writeReport(sim->plan, *model, sim->costs,
                                          sim->result, out);
                       })))
    return failure();
  if (!options.trace.empty() &&
      failed(writeFile(module, options.trace, "trace",
                       [&](llvm::raw_ostream &out) {
                         sim::writeChromeTrace(sim->result, out);
                       })))
    return failure();
  if (!options.timeline.empty() &&
      failed(writeFile(module, options.timeline, "timeline",
                       [&](llvm::raw_ostream &out) {
                         sim::writeSvgTimeline(sim->result, sim->plan.pp, out);
                       })))
    return failure();
  return success();
}
