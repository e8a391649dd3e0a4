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
#include "lib/Codegen/Codegen.h"
#include "lib/Schedule/Plan.h"
#include "lib/Search/Search.h"
#include "lib/Sim/Report.h"
#include "lib/Sim/Simulator.h"
#include "passes/Partition/OutlineStages.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <chrono>

using namespace mlir;
using namespace distopt;
using llvm::Expected;
using llvm::createStringError;
using llvm::inconvertibleErrorCode;
using llvm::toString;

/// The ops of the planned function the plan is written back onto.
struct PlannedOps {
  /// Sample-dependent ops of each cost-model layer.
  std::vector<std::vector<Operation *>> layers;
  /// Tensor-parallel role of each costed op.
  llvm::DenseMap<Operation *, TensorParallelRole> roles;
};

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

/// Writes the Chrome trace and the SVG timeline `options` ask for.
static LogicalResult writeTraceAndTimeline(ModuleOp module,
                                           const PlanDriverOptions &options,
                                           const sim::PlanSimulation &sim) {
  if (!options.trace.empty() &&
      failed(writeFile(module, options.trace, "trace",
                       [&](llvm::raw_ostream &out) {
                         sim::writeChromeTrace(sim.result, out);
                       })))
    return failure();
  if (!options.timeline.empty() &&
      failed(writeFile(module, options.timeline, "timeline",
                       [&](llvm::raw_ostream &out) {
                         sim::writeSvgTimeline(sim.result,
                                               sim.schedule.devices.size(),
                                               out);
                       })))
    return failure();
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
  const schedule::Plan &p = sim.plan;
  os << "plan: " << p.str() << " on " << cluster.name << " ("
     << cluster.numDevices() << " devices"
     << (p.numDevices() < cluster.numDevices()
             ? ", " + std::to_string(cluster.numDevices() - p.numDevices()) +
                   " of them idle"
             : std::string())
     << "), global batch " << p.globalBatch
     << " = " << p.numMicrobatches << " micro-batches of " << p.mbs
     << (p.replicated() ? " (round-robin over each stage's replicas)\n"
                        : " per replica\n");
  if (p.replicated()) {
    os << "  replicas         ";
    for (unsigned s = 0; s < p.pp; ++s)
      os << (s ? "/" : "") << p.replicas[s];
    os << " (stage " << (p.pp > 1 ? "0.." + std::to_string(p.pp - 1) : "0")
       << ")\n";
  }
  os << llvm::formatv("  iteration time   {0:F4} s\n", r.iterationTime);
  os << llvm::formatv("  throughput       {0:F2} samples/s\n",
                      r.samplesPerSecond);
  os << llvm::formatv("  TFLOP/s/device   {0:F1} (model {1:F1})\n",
                      r.tflopsPerDevice, r.modelTflopsPerDevice);
  os << llvm::formatv("  bubble           {0:F1}%\n", 100 * r.bubbleFraction);
  for (auto [i, peak] : llvm::enumerate(r.peakMemoryBytes)) {
    if (p.replicated()) {
      unsigned st = sim.costs.stageOfList(i);
      os << "  stage " << st << " replica " << i - p.firstSlot(st) << " (slot "
         << i << ", " << sim.schedule.microbatchesOf(i) << " micro-batches)";
    } else {
      os << "  stage " << i;
    }
    os << " peak memory " << humanBytes(peak) << " of "
       << humanBytes(sim.costs.devices[i].memoryCapacity) << " ("
       << sim.costs.devices[i].deviceName << ")\n";
  }
  for (auto [i, bytes] : llvm::enumerate(r.bytesPerLevel))
    os << "  traffic on " << r.levelNames[i] << ": " << humanBytes(bytes)
       << " per iteration\n";
  if (!r.fitsMemory)
    os << "  warning: the plan does not fit in device memory: "
       << r.memoryProblem << "\n";
}

/// Records cluster and plan on the module for later passes and tools, and
/// each op's virtual pipeline stage (`dist.stage`) on the planned function.
/// With tensor parallelism each costed op also gets its role
/// (`dist.tp = "column" | "row" | "split" | "replicated"`).
static void annotate(ModuleOp module, const cluster::Cluster &cluster,
                     const schedule::Plan *plan,
                     const schedule::PipelineCosts *costs,
                     const PlannedOps *plannedOps,
                     StringRef mode = "train") {
  MLIRContext *ctx = module.getContext();
  ctx->getOrLoadDialect<dist::DistDialect>();
  Builder b(ctx);
  module->setAttr("dist.cluster", toClusterAttr(ctx, cluster));
  if (!plan || !costs)
    return;
  const schedule::Plan &p = *plan;
  bool infer = mode == "infer";
  SmallVector<NamedAttribute> fields = {
      b.getNamedAttr("dp", b.getI64IntegerAttr(p.dp)),
      b.getNamedAttr("tp", b.getI64IntegerAttr(p.tp)),
      b.getNamedAttr("pp", b.getI64IntegerAttr(p.pp)),
      b.getNamedAttr("mbs", b.getI64IntegerAttr(p.mbs)),
      b.getNamedAttr("num_microbatches",
                     b.getI64IntegerAttr(p.numMicrobatches)),
      b.getNamedAttr("schedule",
                     b.getStringAttr(infer ? StringRef("forward-stream")
                                           : scheduleName(p.schedule))),
      b.getNamedAttr("chunks", b.getI64IntegerAttr(p.chunks)),
      b.getNamedAttr("recompute",
                     b.getStringAttr(cost::recomputeName(p.recompute))),
      b.getNamedAttr("zero", b.getI64IntegerAttr(p.zero)),
      b.getNamedAttr("global_batch", b.getI64IntegerAttr(p.globalBatch))};
  SmallVector<int64_t> firstLayers;
  for (const schedule::StageCost &s : costs->stages)
    firstLayers.push_back(s.layerBegin);
  fields.push_back(
      b.getNamedAttr("stage_first_layers", b.getDenseI64ArrayAttr(firstLayers)));
  // Training plans carry no mode field (the format --dist-plan has always
  // written); inference plans say so.
  if (infer)
    fields.push_back(b.getNamedAttr("mode", b.getStringAttr(mode)));
  // Replicated stages: replicas per stage (ranks t + tp * slot, slots
  // stage-major; micro-batch m on replica m mod r_s).
  if (p.replicated()) {
    SmallVector<int64_t> reps(p.replicas.begin(), p.replicas.end());
    fields.push_back(
        b.getNamedAttr("replicas", b.getDenseI64ArrayAttr(reps)));
  }
  module->setAttr("dist.plan", b.getDictionaryAttr(fields));
  // Which device kind runs each pipeline rank (mixed clusters).
  // (Replicated plans: per stage its first slot's kind, and every slot's
  // kind in dist.slot_device_kinds.)
  SmallVector<Attribute> kinds, slotKinds;
  for (auto [l, d] : llvm::enumerate(costs->devices)) {
    slotKinds.push_back(b.getStringAttr(d.deviceName));
    if (!p.replicated() || l == p.firstSlot(costs->stageOfList(l)))
      kinds.push_back(b.getStringAttr(d.deviceName));
  }
  module->setAttr("dist.stage_device_kinds", b.getArrayAttr(kinds));
  if (p.replicated())
    module->setAttr("dist.slot_device_kinds", b.getArrayAttr(slotKinds));
  if (!plannedOps)
    return;
  const auto &layerOps = plannedOps->layers;
  for (auto [vs, st] : llvm::enumerate(costs->stages))
    for (unsigned l = st.layerBegin; l < st.layerEnd && l < layerOps.size();
         ++l)
      for (Operation *op : layerOps[l])
        op->setAttr("dist.stage", b.getI64IntegerAttr(vs));
  if (p.tp > 1)
    for (auto &[op, role] : plannedOps->roles)
      op->setAttr("dist.tp", b.getStringAttr(tensorParallelRoleName(role)));
}

Expected<double> distopt::parseByteSize(StringRef text) {
  StringRef t = text.trim();
  size_t i = 0;
  while (i < t.size() && (llvm::isDigit(t[i]) || t[i] == '.' || t[i] == 'e' ||
                          t[i] == 'E' || t[i] == '+' || t[i] == '-'))
    ++i;
  // "1e9" has no unit; "80GB" stops at 'G'. An 'e' followed by a letter
  // other than a digit belongs to no unit we know, so it fails below.
  double value;
  if (i == 0 || t.take_front(i).getAsDouble(value) || value <= 0)
    return createStringError(inconvertibleErrorCode(),
                             "bad --dist-memory-limit='" + text +
                                 "': expected a positive size such as 80GB, "
                                 "40GiB or 512MB");
  std::string unit = t.drop_front(i).trim().lower();
  const std::pair<const char *, double> units[] = {
      {"", 1},         {"b", 1},          {"kb", 1e3},       {"mb", 1e6},
      {"gb", 1e9},     {"tb", 1e12},      {"kib", 1024.0},   {"mib", 1 << 20},
      {"gib", 1 << 30}, {"tib", 1099511627776.0}, {"k", 1e3}, {"m", 1e6},
      {"g", 1e9},      {"t", 1e12}};
  for (auto [name, scale] : units)
    if (unit == name)
      return value * scale;
  return createStringError(inconvertibleErrorCode(),
                           "bad --dist-memory-limit='" + text +
                               "': unknown unit '" + unit +
                               "'; use B, KB, MB, GB, TB, KiB, MiB, GiB or "
                               "TiB");
}

/// The --dist-search path: search, print, explain, report, annotate.
static LogicalResult
runSearch(ModuleOp module, const cost::ModelDesc &model,
          const PlannedOps &plannedOps,
          const cluster::Cluster &cluster, const cost::CostModel &cm,
          const PlanDriverOptions &options, llvm::raw_ostream &os) {
  search::SearchOptions so;
  so.globalBatch = options.batch;
  so.allowAsync = options.allowAsync;
  so.alternatives = options.alternatives;
  so.devices = options.devices;
  if (options.mode == "infer")
    so.mode = search::Mode::Infer;
  else if (options.mode != "train")
    return module.emitError("unknown --dist-mode='")
           << options.mode << "': expected train or infer";
  if (options.objective == "latency")
    so.objective = search::InferObjective::Latency;
  else if (options.objective != "throughput")
    return module.emitError("unknown --dist-objective='")
           << options.objective << "': expected throughput or latency";
  if (so.mode == search::Mode::Infer &&
      (!options.trace.empty() || !options.timeline.empty()))
    return module.emitError("--dist-trace and --dist-timeline draw training "
                            "schedules; drop them with --dist-mode=infer");
  if (!options.memoryLimit.empty()) {
    Expected<double> limit = parseByteSize(options.memoryLimit);
    if (!limit)
      return module.emitError(toString(limit.takeError()));
    so.memoryLimit = *limit;
  }
  Expected<search::Constraints> constraints =
      search::parseConstraints(options.searchConstraints);
  if (!constraints)
    return module.emitError(toString(constraints.takeError()));
  so.constraints = std::move(*constraints);

  // Progress: a terminal sees a live line; a log sees one line per second
  // once the search has run for a second.
  auto start = std::chrono::steady_clock::now();
  bool tty = llvm::errs().is_displayed();
  bool always = options.progress == "always";
  bool shown = false;
  double last = -1;
  if (options.progress != "never" && options.progress != "auto" && !always)
    return module.emitError("unknown --dist-progress='")
           << options.progress << "': expected auto, always or never";
  if (options.progress != "never")
    so.progress = [&](double fraction, unsigned long candidates) {
      double t = std::chrono::duration<double>(
                     std::chrono::steady_clock::now() - start)
                     .count();
      if (!always && !tty && t < 1.0)
        return;
      if (!always && t - last < (tty ? 0.1 : 1.0) && fraction < 1.0)
        return;
      last = t;
      shown = true;
      llvm::errs() << (tty ? "\r" : "")
                   << llvm::formatv("search: {0,3:F0}% of the ordered "
                                    "candidates, {1} weighed, {2:F1} s",
                                    100 * fraction, candidates, t)
                   << (tty ? "" : "\n");
    };
  Expected<search::SearchResult> result =
      search::searchPlan(model, cluster, cm, so);
  if (shown && tty)
    llvm::errs() << "\n";
  if (!result)
    return module.emitError(toString(result.takeError()));

  search::printSearchSummary(*result, cluster, os);
  if (options.explain)
    search::printExplain(*result, os);
  const search::Candidate &best = result->best;
  annotate(module, cluster, &best.sim.plan, &best.sim.costs, &plannedOps,
           options.mode);
  // Outlining erases the annotated ops; nothing below reads plannedOps.
  if (options.stageRegions && failed(outlineStages(module)))
    return failure();
  if (!options.report.empty() &&
      failed(writeFile(module, options.report, "report",
                       [&](llvm::raw_ostream &out) {
                         out << llvm::formatv(
                                    "{0:2}",
                                    search::searchReportJSON(*result, model))
                             << "\n";
                       })))
    return failure();
  if (options.trace.empty() && options.timeline.empty())
    return success();
  // Simulate the winner once more, keeping its events.
  sim::SimOptions simOptions;
  Expected<sim::PlanSimulation> sim =
      sim::simulatePlan(model, cluster, best.sim.plan, options.batch, cm,
                        simOptions, so.memory);
  if (!sim)
    return module.emitError(toString(sim.takeError()));
  return writeTraceAndTimeline(module, options, *sim);
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
  PlannedOps plannedOps;
  modelOptions.layerOps = &plannedOps.layers;
  modelOptions.tpRoles = &plannedOps.roles;
  FailureOr<cost::ModelDesc> model = buildModelDesc(entry, modelOptions);
  if (failed(model))
    return failure();
  if (options.printModel)
    printModel(*model, os);

  bool wantsPlan = options.simulate || !options.report.empty() ||
                   !options.trace.empty() || !options.timeline.empty() ||
                   !options.plan.empty() || options.search || options.explain;
  if (options.search && !options.plan.empty())
    return module.emitError("give either --dist-plan (simulate that plan) or "
                            "--dist-search (find one), not both");
  if (options.explain && !options.search)
    return module.emitError("--dist-explain explains a search; add "
                            "--dist-search");
  if (options.stageRegions && !options.search && options.plan.empty())
    return module.emitError("--dist-stage-regions writes the stages of a "
                            "plan: add --dist-plan=... or --dist-search");
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
    annotate(module, *cluster, nullptr, nullptr, nullptr);
    return success();
  }
  // Say before any plan is printed when no program could be built for it.
  if (auto why = codegen::findUnsupported(module, entry.getSymName()))
    mlir::emitWarning(why->first)
        << "dist-compile cannot build programs for this model yet, so the "
           "plan below is a prediction only: "
        << why->second;
  if (options.search && options.batch == 0)
    return module.emitError("--dist-search needs the global batch in "
                            "samples: pass --dist-batch=N");
  std::optional<cost::ProfileDB> profile;
  if (!options.profile.empty()) {
    llvm::Expected<cost::ProfileDB> db = cost::ProfileDB::load(options.profile);
    if (!db)
      return module.emitError(llvm::toString(db.takeError()));
    profile = std::move(*db);
  }
  cost::CostModel cm(profile ? &*profile : nullptr);
  if (options.search)
    return runSearch(module, *model, plannedOps, *cluster, cm, options, os);
  if (options.mode != "train")
    return module.emitError("--dist-mode=") << options.mode
           << " works with --dist-search; --dist-plan simulates training";
  if (options.plan.empty())
    return module.emitError("--dist-simulate needs a plan: pass "
                            "--dist-plan=\"dp=..,tp=..,pp=..,mbs=..,"
                            "schedule=..\" (or --dist-search to find one)");
  if (options.batch == 0)
    return module.emitError("--dist-simulate needs the global batch in "
                            "samples: pass --dist-batch=N");
  llvm::Expected<schedule::Plan> plan = schedule::parsePlan(options.plan);
  if (!plan)
    return module.emitError("bad --dist-plan: ")
           << llvm::toString(plan.takeError());

  sim::SimOptions simOptions;
  simOptions.recordEvents = !options.trace.empty() || !options.timeline.empty();
  llvm::Expected<sim::PlanSimulation> sim = sim::simulatePlan(
      *model, *cluster, *plan, options.batch, cm, simOptions);
  if (!sim)
    return module.emitError(llvm::toString(sim.takeError()));

  printSummary(*sim, *cluster, os);
  annotate(module, *cluster, &sim->plan, &sim->costs, &plannedOps);
  if (options.stageRegions && failed(outlineStages(module)))
    return failure();

  if (!options.report.empty() &&
      failed(writeFile(module, options.report, "report",
                       [&](llvm::raw_ostream &out) {
                         sim::writeReport(sim->plan, *model, sim->costs,
                                          sim->result, out);
                       })))
    return failure();
  return writeTraceAndTimeline(module, options, *sim);
}
