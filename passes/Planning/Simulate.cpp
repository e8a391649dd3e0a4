//===- Simulate.cpp - The dist-simulate pass --------------------*- C++ -*-===//
//
// Part of DistOpt. Predicts the plan a module carries from the module alone
// (cluster, plan, layers, and the materialized schedule when there is one)
// with the evaluation the search uses, and writes the report, the Chrome
// trace, the SVG timeline and the HTML page.
//
//===----------------------------------------------------------------------===//
#include "passes/Partition/ScheduleIR.h"
#include "passes/Passes.h"
#include "passes/Planning/Branches.h"
#include "passes/Planning/Planning.h"

#include "lib/Search/Report.h"
#include "lib/Sim/Report.h"

#include "llvm/Support/FormatVariadic.h"

namespace distopt {
#define GEN_PASS_DEF_SIMULATEPASS
#include "passes/Planning/Passes.h.inc"
} // namespace distopt

using namespace mlir;
using namespace distopt;
using namespace distopt::planning;

/// ", 12 of them idle" when \p p uses fewer of \p cluster's devices.
static std::string idleDevices(const schedule::Plan &p,
                               const cluster::Cluster &cluster) {
  if (p.numDevices() >= cluster.numDevices())
    return "";
  return ", " + std::to_string(cluster.numDevices() - p.numDevices()) +
         " of them idle";
}

/// The prediction of a training plan, as `--dist-simulate` prints it.
static void printTraining(const search::Candidate &c,
                          const cluster::Cluster &cluster,
                          llvm::raw_ostream &os) {
  const sim::SimResult &r = c.sim.result;
  const schedule::Plan &p = c.sim.plan;
  os << "plan: " << p.str() << " on " << cluster.name << " ("
     << cluster.numDevices() << " devices" << idleDevices(p, cluster)
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
      unsigned st = c.sim.costs.stageOfList(i);
      os << "  stage " << st << " replica " << i - p.firstSlot(st) << " (slot "
         << i << ", " << c.sim.schedule.microbatchesOf(i) << " micro-batches)";
    } else {
      os << "  stage " << i;
    }
    os << " peak memory " << humanBytes(peak) << " of "
       << humanBytes(c.sim.costs.devices[i].memoryCapacity) << " ("
       << c.sim.costs.devices[i].deviceName << ")\n";
  }
  sim::printOffload(p, c.sim.costs, os);
  for (auto [i, bytes] : llvm::enumerate(r.bytesPerLevel))
    os << "  traffic on " << r.levelNames[i] << ": " << humanBytes(bytes)
       << " per iteration\n";
  if (r.input)
    os << sim::describeInputStall(*r.input);
  if (!r.fitsMemory)
    os << "  warning: the plan does not fit in device memory: "
       << r.memoryProblem << "\n";
}

/// The prediction of an inference plan.
static void printInference(const search::Candidate &c,
                           const cluster::Cluster &cluster,
                           llvm::raw_ostream &os) {
  const schedule::Plan &p = c.sim.plan;
  os << "plan: " << p.str() << " (inference, "
     << schedule::objectiveName(p.objective) << ") on " << cluster.name
     << " (" << cluster.numDevices() << " devices"
     << idleDevices(p, cluster) << "), global batch "
     << p.globalBatch << " = " << p.numMicrobatches << " micro-batches of "
     << p.mbs << " per replica\n";
  os << llvm::formatv("  latency          {0:F5} s per batch of {1}\n",
                      c.latency, p.globalBatch);
  os << llvm::formatv("  stream           {0:F2} samples/s\n",
                      c.streamThroughput);
  os << llvm::formatv("  bubble           {0:F1}%\n",
                      100 * c.sim.result.bubbleFraction);
  for (auto [s, peak] : llvm::enumerate(c.sim.result.peakMemoryBytes))
    os << "  stage " << s << " peak memory " << humanBytes(peak) << " ("
       << (s < c.sim.costs.devices.size() ? c.sim.costs.devices[s].deviceName
                                          : std::string("?"))
       << ")\n";
}

namespace {
struct SimulatePass : public distopt::impl::SimulatePassBase<SimulatePass> {
  using Base::Base;
  void runOnOperation() override {
    if (failed(run(getOperation())))
      signalPassFailure();
  }

  LogicalResult run(ModuleOp module) {
    if (failed(rejectBranchPlacement(module, "dist-simulate")))
      return failure();
    FailureOr<ModuleMachine> machine = moduleMachine(module, "dist-simulate");
    if (failed(machine))
      return failure();
    auto planAttr = dist::DistDialect::PlanAttrHelper(&getContext())
                        .getAttr(module);
    if (!planAttr)
      return emitError(module.getLoc())
             << "--dist-simulate needs a plan: pass --dist-plan=\"dp=..,tp=..,"
                "pp=..,mbs=..,schedule=..\" with --dist-batch=N, or "
                "--dist-search (the dist-set-plan and dist-search-plan passes)";
    schedule::Plan plan = planAttr.toPlan();
    FailureOr<cost::ModelDesc> model = planningModel(module, Costing::of(plan));
    if (failed(model))
      return failure();
    if (plan.mode == schedule::Mode::Infer &&
        (!trace.empty() || !timeline.empty()))
      return emitError(module.getLoc())
             << "--dist-trace and --dist-timeline draw training schedules; "
                "drop them for an inference plan";
    FailureOr<std::optional<schedule::Schedule>> given =
        partition::readSchedule(module, planAttr);
    if (failed(given))
      return failure();
    FailureOr<cluster::RelaunchCost> relaunchCost =
        relaunchChoice(module, machine->cluster, relaunch);
    if (failed(relaunchCost))
      return failure();
    FailureOr<ResilienceChoice> choice =
        resilienceChoice(module, machine->cluster, resilience, preemptions);
    if (failed(choice))
      return failure();
    if (choice->enabled() && plan.mode == schedule::Mode::Infer)
      return emitError(module.getLoc())
             << "--dist-resilience plans training on preemptible nodes; an "
                "inference plan has no training state to protect: drop it";
    FailureOr<std::optional<sim::InputSpec>> inputSpec =
        inputChoice(module, machine->cluster, input, plan.mode);
    if (failed(inputSpec))
      return failure();
    cost::CostModel cm = machine->costModel(Costing::of(plan));
    search::SearchOptions so;
    so.memory = Costing::of(plan).memory();
    so.input = *inputSpec;
    // A training plan is simulated with its materialized schedule; the
    // forward stream of its stages (an inference program) predicts nothing
    // about training, and inference is estimated in closed form.
    std::optional<schedule::Plan> running;
    if (!replan.empty()) {
      FailureOr<schedule::Plan> p =
          readRunningPlan(module, replan, *model, machine->cluster, cm,
                          Costing::of(plan), plan.mode, plan.objective);
      if (failed(p))
        return failure();
      running = std::move(*p);
    }
    const schedule::Schedule *lists =
        *given && !(*given)->forwardOnly ? &**given : nullptr;
    llvm::Expected<search::Candidate> cand = search::evaluatePlan(
        *model, machine->cluster, cm, plan, so, lists);
    if (!cand)
      return emitError(module.getLoc()) << llvm::toString(cand.takeError());

    // On a cluster with prices a plan without resilience is priced on
    // on-demand nodes.
    std::optional<sim::ResilienceReport> resilient;
    if (choice->enabled() ||
        (machine->cluster.availability && plan.mode == schedule::Mode::Train)) {
      double survivors = 0;
      if (choice->mode == sim::Resilience::Elastic) {
        FailureOr<double> t = survivorIterationTime(
            module, *model, machine->cluster, cm, so, cand->sim.plan);
        if (failed(t))
          return failure();
        survivors = *t;
      }
      FailureOr<sim::ResilienceReport> r = planResilience(
          module, *cand, machine->cluster, *choice, 0, survivors);
      if (failed(r))
        return failure();
      resilient = std::move(*r);
    }
    std::optional<sim::MigrationReport> migration;
    if (running) {
      FailureOr<sim::MigrationReport> m =
          planReplan(module, *running, *cand, *model, machine->cluster, cm, so,
                     *relaunchCost);
      if (failed(m))
        return failure();
      migration = std::move(*m);
    }
    if (summary) {
      if (plan.mode == schedule::Mode::Infer)
        printInference(*cand, machine->cluster, llvm::outs());
      else
        printTraining(*cand, machine->cluster, llvm::outs());
      if (resilient)
        sim::printResilience(*resilient, llvm::outs());
      if (migration)
        sim::printMigration(*migration, llvm::outs());
    }
    search::Report data = search::planReport(*cand, *model, machine->cluster);
    data.resilience = resilient;
    data.replan = migration;
    if (!report.empty() &&
        failed(writeFile(module, report, "report", [&](llvm::raw_ostream &os) {
          os << llvm::formatv("{0:2}", search::toJSON(data)) << "\n";
        })))
      return failure();
    const sim::SimResult &r = cand->sim.result;
    if (!reportHtml.empty() &&
        failed(writeFile(
            module, reportHtml, "HTML report", [&](llvm::raw_ostream &os) {
              search::writeHtmlReport(
                  data, plan.mode == schedule::Mode::Infer ? nullptr : &r, os);
            })))
      return failure();
    if (!trace.empty() &&
        failed(writeFile(module, trace, "trace", [&](llvm::raw_ostream &os) {
          sim::writeChromeTrace(r, os);
        })))
      return failure();
    if (!timeline.empty() &&
        failed(writeFile(module, timeline, "timeline",
                         [&](llvm::raw_ostream &os) {
                           sim::writeSvgTimeline(
                               r, cand->sim.schedule.devices.size(), os);
                         })))
      return failure();
    markAllAnalysesPreserved();
    return success();
  }
};
} // namespace
