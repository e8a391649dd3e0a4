//===- Bounds.cpp - Stage partitioning and iteration lower bounds -*- C++ -*-=//
//
// Part of DistOpt. The two exact pieces of the plan search: the dynamic
// program that splits layers into pipeline stages, and the lower bound on a
// plan's simulated iteration time that lets the search stop early.
//
//===----------------------------------------------------------------------===//

#include "lib/Search/SearchImpl.h"

#include "lib/Schedule/Updates.h"

#include <algorithm>
#include <limits>

using namespace llvm;
using namespace distopt;
using namespace distopt::schedule;

namespace distopt::search {

std::vector<unsigned>
partitionLayers(unsigned n, unsigned stages,
                function_ref<double(unsigned, unsigned, unsigned)> cost,
                function_ref<double(unsigned, unsigned, unsigned)> lower,
                double *bestOut) {
  // The cost is infinite where a stage is not allowed.
  return detail::partitionLayersWith(
      n, stages, cost, lower, [](unsigned, unsigned, unsigned) { return true; },
      bestOut);
}

/// Replicated stages (one list per slot, chunks = 1). List l of stage s runs
/// n_l of the m micro-batches (round-robin), one after another on its
/// compute stream at its own speed (computeScale), none before the first
/// micro-batch has passed stages 0..s-1 (each at its fastest slot), and
/// syncs and steps after its last backward. Asynchronous schedules: the
/// simulator measures, on each stage-0 slot, the spacing of backward ends
/// over the second half of its share and scales it to n_l; that span holds
/// every later backward and all but the in-flight forwards.
static double replicatedLowerBound(const PipelineCosts &c, ScheduleKind kind) {
  const unsigned lists = c.slotStage.size();
  std::vector<unsigned> reps(c.pp, 0), first(c.pp, lists);
  for (unsigned l = 0; l < lists; ++l) {
    unsigned s = c.slotStage[l];
    ++reps[s];
    first[s] = std::min(first[s], l);
  }
  auto share = [&](unsigned l) {
    unsigned s = c.slotStage[l], k = l - first[s];
    return c.microbatches / reps[s] + (k < c.microbatches % reps[s] ? 1 : 0);
  };
  double lb = 0;
  bool steady = isAsync(kind);
  for (unsigned l = 0; l < first[0] + reps[0]; ++l)
    steady &= share(l) >= 4;
  if (steady) {
    // A stage-0 slot holds at most ceil(lists / r_0) micro-batches in
    // flight (the replicated generator's keys), so after the backward of
    // its share's middle micro-batch it still runs every later backward and
    // all but that many forwards.
    unsigned cap = (lists + reps[0] - 1) / reps[0];
    for (unsigned l = 0; l < first[0] + reps[0]; ++l) {
      const StageCost &st = c.stage(l, 0);
      double nl = share(l), from = share(l) / 2;
      double fwds = std::max(0.0, nl - from - cap);
      lb = std::max(lb, c.devices[l].computeScale *
                            (nl * (st.bwdInput + st.bwdWeight) +
                             nl * fwds / (nl - 1 - from) * st.fwd));
    }
    return lb;
  }
  // Syncs a list of a replicated stage makes: PipeDream and PipeMare one
  // per round of lcm(replicas) micro-batches, the others one per step.
  const double syncs =
      updatesEveryMicrobatch(kind)
          ? static_cast<double>(c.microbatches / updateRound(kind, reps))
          : 1;
  std::vector<double> start(c.pp, 0);
  for (unsigned s = 1; s < c.pp; ++s) {
    double fastest = std::numeric_limits<double>::infinity();
    double send = std::numeric_limits<double>::infinity();
    for (unsigned l = first[s - 1]; l < first[s - 1] + reps[s - 1]; ++l) {
      fastest = std::min(fastest, c.devices[l].computeScale);
      send = std::min(send, c.boundary(l, 0).nextTime);
    }
    const StageCost &prev = c.stages[s - 1];
    start[s] = start[s - 1] + prev.fwd * fastest + send;
  }
  for (unsigned l = 0; l < lists; ++l) {
    const StageCost &st = c.stage(l, 0);
    double w = (st.fwd + st.bwdInput + st.bwdWeight) * c.devices[l].computeScale;
    if (!c.overlapP2P)
      w += c.boundary(l, 0).nextTime + c.boundary(l, 0).prevTime;
    // (Asynchronous, not steady: the makespan.)
    double sync = reps[c.slotStage[l]] <= 1 ? 0 : syncs * st.gradSyncTime;
    lb = std::max(lb, start[c.slotStage[l]] + share(l) * w + sync +
                          c.devices[l].optimizerTime);
  }
  return lb;
}

double iterationLowerBound(const PipelineCosts &c, ScheduleKind kind,
                           bool overlapGradSync) {
  if (!c.slotStage.empty())
    return replicatedLowerBound(c, kind);
  const unsigned pp = c.pp, chunks = c.chunks;
  const double m = c.microbatches;
  const bool split = kind == ScheduleKind::ZBH1;
  if (isAsync(kind)) {
    // Steady state: every rank does one micro-batch's work per interval.
    double worst = 0;
    for (unsigned r = 0; r < pp; ++r) {
      double w = 0;
      for (unsigned ch = 0; ch < chunks; ++ch) {
        const StageCost &st = c.stage(r, ch);
        w += st.fwd + st.bwdInput + st.bwdWeight;
      }
      worst = std::max(worst, m * w);
    }
    return worst;
  }
  // What rank r must still do after its last backward: the gradient sync of
  // (at least) the chunk that backward belongs to, then the optimizer step.
  auto post = [&](unsigned r) -> double {
    double minSync = std::numeric_limits<double>::infinity(), allSync = 0;
    for (unsigned ch = 0; ch < chunks; ++ch) {
      // ZeRO: only the reduce-scatter comes before the step.
      const schedule::StageCost &st = c.stage(r, ch);
      double s = st.gradSyncTime - st.gradGatherTime;
      minSync = std::min(minSync, s);
      allSync += s;
    }
    double opt = r < c.devices.size() ? c.devices[r].optimizerTime : 0;
    return (overlapGradSync ? minSync : allSync) + opt;
  };
  if (isPostValidated(kind)) {
    // The iteration is the longest rank span (docs/cost-model.md): at least
    // the rank's own work, then its sync and step. An overlapped F&B pair
    // (DualPipe-V) may hide its communication, so only compute counts.
    const bool pairs = kind == ScheduleKind::DualPipeV;
    const bool vShape = isVShape(kind);
    const unsigned V = pp * chunks;
    double lb = 0;
    for (unsigned r = 0; r < pp; ++r) {
      // Warm-up: rank r's first backward needs micro-batch 0 through every
      // stage from its first one to the end and back to its last one
      // (chain); until then it can only run forwards, at most `cap` (the
      // schedule's in-flight limit), so the rest of the chain is idle.
      unsigned first = virtualStageOf(vShape, pp, r, 0);
      unsigned last = virtualStageOf(vShape, pp, r, chunks - 1);
      double chain = 0, fmax = 0;
      for (unsigned v = first; v < V; ++v)
        chain += c.stages[v].fwd;
      for (unsigned v = last + 1; v < V; ++v)
        chain += c.stages[v].bwdInput;
      for (unsigned ch = 0; ch < chunks; ++ch)
        fmax = std::max(fmax, c.stage(r, ch).fwd);
      // The search's in-flight table: at least the generators' own peaks.
      double cap = detail::inFlight(kind, r, pp, chunks, c.microbatches);
      double idle = std::max(0.0, chain - cap * fmax);
      double work = 0;
      for (unsigned ch = 0; ch < chunks; ++ch) {
        const StageCost &st = c.stage(r, ch);
        double w = st.fwd + st.bwdInput + st.bwdWeight;
        if (pairs)
          w -= st.fwdComm + st.bwdComm;
        if (!c.overlapP2P)
          w += st.sendNextTime + st.sendPrevTime;
        work += m * w;
      }
      lb = std::max(lb, work + idle + post(r));
    }
    return lb;
  }
  double lb = 0, start = 0, endDelay = 0;
  for (unsigned r = 0; r < pp; ++r) {
    double work = 0, compute = 0, chunk0 = 0, beforeLastB = 0;
    for (unsigned ch = 0; ch < chunks; ++ch) {
      const StageCost &st = c.stage(r, ch);
      double w = m * (st.fwd + st.bwdInput + st.bwdWeight);
      compute += w;
      // Blocking sends occupy the compute stream.
      if (!c.overlapP2P)
        w += m * (st.sendNextTime + st.sendPrevTime);
      work += w;
      if (ch == 0) {
        chunk0 = m * (st.fwd + st.bwdInput + st.bwdWeight);
        beforeLastB = m * (st.fwd + st.bwdInput);
      }
    }
    // Nothing on rank r starts before the first micro-batch has passed the
    // earlier stages (chunk 0).
    lb = std::max(lb, start + work + post(r));
    // After rank r's last chunk-0 backward, its gradient still passes
    // ranks r-1..0, and rank 0 syncs and steps.
    double beforeChain = chunks == 1 && !split ? compute
                         : split               ? beforeLastB
                                               : chunk0;
    lb = std::max(lb, start + beforeChain + endDelay + post(0));
    const StageCost &st = c.stage(r, 0);
    start += st.fwd + st.sendNextTime;
    endDelay += st.bwdInput + (r + 1 < pp ? c.stage(r + 1, 0).sendPrevTime : 0);
  }
  return lb;
}

Breakdown breakdownOf(const sim::PlanSimulation &ps) {
  Breakdown b;
  const PipelineCosts &c = ps.costs;
  const sim::SimResult &res = ps.result;
  double m = c.microbatches;
  unsigned worst = 0;
  for (unsigned r = 0; r < res.busyTime.size(); ++r)
    if (res.busyTime[r] > res.busyTime[worst])
      worst = r;
  b.compute = res.busyTime.empty() ? 0 : res.busyTime[worst];
  // Per action list (pipeline rank, or slot of a replicated stage).
  for (unsigned r = 0; r < c.devices.size(); ++r) {
    double p2p = 0, sync = 0;
    double mr = ps.schedule.devices.size() == c.devices.size()
                    ? ps.schedule.microbatchesOf(r)
                    : m;
    for (unsigned ch = 0; ch < c.chunks; ++ch) {
      const StageCost &st = c.stage(r, ch);
      Boundary bd = c.boundary(r, ch);
      p2p += mr * (bd.nextTime + bd.prevTime);
      sync += st.gradSyncTime;
    }
    b.p2p = std::max(b.p2p, p2p);
    b.dpSync = std::max(b.dpSync, sync);
  }
  b.bubble = res.bubbleFraction * res.iterationTime;
  b.dataStall = res.input ? res.input->stall() : 0;
  for (unsigned r = 0; r < res.peakMemoryBytes.size(); ++r) {
    double cap = r < c.devices.size() ? c.devices[r].memoryCapacity : 0;
    if (res.peakMemoryBytes[r] >= b.peakMemory) {
      b.peakMemory = res.peakMemoryBytes[r];
      b.memoryCapacity = cap;
    }
  }
  return b;
}

} // namespace distopt::search
