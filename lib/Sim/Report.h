//===- Report.h - Report JSON, Chrome trace and SVG timeline ----*- C++ -*-===//
//
// Writers for a simulated plan. The report format is documented in
// docs/report-format.md; the Chrome trace loads in Perfetto and
// chrome://tracing; the SVG draws one lane per pipeline rank (stage group).
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_LIB_SIM_REPORT_H
#define DISTOPT_LIB_SIM_REPORT_H

#include "lib/Cost/ModelDesc.h"
#include "lib/Sim/Simulator.h"

#include "llvm/Support/JSON.h"

namespace distopt::sim {

/// {"plan": {...}, "estimate": {...}} for \p plan (finalized).
llvm::json::Value reportJSON(const schedule::Plan &plan,
                             const cost::ModelDesc &model,
                             const schedule::PipelineCosts &costs,
                             const SimResult &result);
void writeReport(const schedule::Plan &plan, const cost::ModelDesc &model,
                 const schedule::PipelineCosts &costs, const SimResult &result,
                 llvm::raw_ostream &os);

/// Chrome trace-event JSON: one process per pipeline rank, one thread per
/// stream, complete ("X") events in microseconds.
void writeChromeTrace(const SimResult &result, llvm::raw_ostream &os);

/// SVG timeline: one lane per rank, F/B/W/optimizer coloured by kind with
/// the shade cycling by micro-batch, communication in a thin strip under each
/// lane, idle time (the bubble) left light grey.
void writeSvgTimeline(const SimResult &result, unsigned numRanks,
                      llvm::raw_ostream &os, unsigned width = 1400);

} // namespace distopt::sim

#endif // DISTOPT_LIB_SIM_REPORT_H
