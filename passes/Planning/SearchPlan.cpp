//===- SearchPlan.cpp - The dist-search-plan pass ---------------*- C++ -*-===//
//
// Part of DistOpt. Searches the best plan for the module's function on its
// cluster and records it; prints the summary and the explanation on request
// and writes the JSON report.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/Planning/Planning.h"

#include "lib/Search/Search.h"

#include "llvm/Support/FormatVariadic.h"

#include <chrono>

namespace distopt {
#define GEN_PASS_DEF_SEARCHPLANPASS
#include "passes/Planning/Passes.h.inc"
} // namespace distopt

using namespace mlir;
using namespace distopt;
using namespace distopt::planning;

/// A progress callback: a live line on a terminal; in a log one line per
/// second once the search has run for a second. \p shown tells whether it
/// printed anything.
static std::function<void(double, unsigned long)>
progressLine(SearchProgress when, bool &shown) {
  if (when == SearchProgress::Never)
    return {};
  auto start = std::chrono::steady_clock::now();
  bool tty = llvm::errs().is_displayed();
  bool always = when == SearchProgress::Always;
  auto last = std::make_shared<double>(-1);
  return [=, &shown](double fraction, unsigned long candidates) {
    double t = std::chrono::duration<double>(
                   std::chrono::steady_clock::now() - start)
                   .count();
    if (!always && !tty && t < 1.0)
      return;
    if (!always && t - *last < (tty ? 0.1 : 1.0) && fraction < 1.0)
      return;
    *last = t;
    shown = true;
    llvm::errs() << (tty ? "\r" : "")
                 << llvm::formatv("search: {0,3:F0}% of the ordered "
                                  "candidates, {1} weighed, {2:F1} s",
                                  100 * fraction, candidates, t)
                 << (tty ? "" : "\n");
  };
}

namespace {
struct SearchPlanPass
    : public distopt::impl::SearchPlanPassBase<SearchPlanPass> {
  using Base::Base;
  void runOnOperation() override {
    if (failed(run(getOperation())))
      signalPassFailure();
  }

  LogicalResult run(ModuleOp module) {
    if (batch == 0)
      return emitError(module.getLoc())
             << "--dist-search needs the global batch in samples: pass "
                "--dist-batch=N (batch=N)";
    search::SearchOptions so;
    so.globalBatch = batch;
    so.allowAsync = allowAsync;
    so.alternatives = alternatives;
    so.devices = devices;
    so.mode = mode;
    so.objective = objective;
    Costing costing{dtype, fusedAttention};
    costing.applyTo(so.planDefaults);
    if (!memoryLimit.empty()) {
      llvm::Expected<double> limit = cost::parseByteSize(memoryLimit);
      if (!limit)
        return emitError(module.getLoc())
               << "bad --dist-memory-limit='" << memoryLimit
               << "': " << llvm::toString(limit.takeError());
      so.memoryLimit = *limit;
    }
    llvm::Expected<search::Constraints> parsed =
        search::parseConstraints(constraints);
    if (!parsed)
      return emitError(module.getLoc()) << llvm::toString(parsed.takeError());
    so.constraints = std::move(*parsed);

    FailureOr<PlanningInputs> in =
        planningInputs(module, costing, "dist-search-plan");
    if (failed(in))
      return failure();
    cost::CostModel cm = in->machine.costModel(costing);

    bool shown = false;
    so.progress = progressLine(progress, shown);
    llvm::Expected<search::SearchResult> result =
        search::searchPlan(in->model, in->machine.cluster, cm, so);
    if (shown && llvm::errs().is_displayed())
      llvm::errs() << "\n";
    if (!result)
      return emitError(module.getLoc()) << llvm::toString(result.takeError());

    if (summary)
      search::printSearchSummary(*result, in->machine.cluster, llvm::outs());
    if (explain)
      search::printExplain(*result, llvm::outs());
    schedule::Plan best = result->best.sim.plan;
    best.mode = mode;
    best.objective = objective;
    costing.applyTo(best);
    recordPlan(module, best, in->ops);
    if (!report.empty() &&
        failed(writeFile(module, report, "report", [&](llvm::raw_ostream &os) {
          os << llvm::formatv("{0:2}",
                              search::searchReportJSON(*result, in->model))
             << "\n";
        })))
      return failure();
    return success();
  }
};
} // namespace
