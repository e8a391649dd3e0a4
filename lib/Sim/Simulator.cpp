//===- Simulator.cpp - Discrete-event simulation of a schedule --*- C++ -*-===//
//
// Events are action completions, processed in time order. When an action
// completes, the heads of the affected queues are re-examined at that time;
// a ready compute action starts at once (the compute stream is free), a
// ready send or collective joins its egress link's FIFO. Receives sit in the
// compute stream as zero-length waits, as blocking receives would. The
// replicas of a replicated stage start each collective together, when the
// last of them is ready.
//
//===----------------------------------------------------------------------===//

#include "lib/Sim/Simulator.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <queue>

using namespace llvm;
using namespace distopt::schedule;

namespace distopt::sim {

StringRef streamName(Stream s) {
  switch (s) {
  case Stream::Compute:
    return "compute";
  case Stream::SendNext:
    return "send-next";
  case Stream::SendPrev:
    return "send-prev";
  case Stream::Collective:
    return "collective";
  }
  return "compute";
}

namespace {

constexpr unsigned kNumQueues = 4;

struct Pending {
  unsigned rank, queue, index;
  double duration;
};

struct Link {
  bool busy = false;
  std::deque<Pending> waiting;
};

/// An action in a queue: its index in the rank's list and, for collectives,
/// how many compute-queue items precede it in the list; for an optimizer
/// step, how many collectives do. \c gathered: for a compute action, the
/// collectives up to the last parameter all-gather listed before it (an
/// asynchronous schedule under ZeRO gathers each update's weights, which
/// the next forward and backward read).
struct Slot {
  unsigned index, before, gathered = 0;
};

struct Rank {
  std::vector<Slot> queue[kNumQueues];
  unsigned head[kNumQueues] = {0, 0, 0, 0};
  bool computeBusy = false;
  unsigned computeDone = 0, collectivesDone = 0;
  Link links[cluster::kNumLinkLevels];
  double busy = 0;
  /// Start of the first compute action and end of the last action: the
  /// span of this list (post-validated schedules overlap iterations).
  double firstStart = -1, lastEnd = 0;
  std::vector<double> backwardEnds;
  /// Per action: a weight gradient that adds into its chunk's running sum
  /// (one of the chunk's since the list's last optimizer step came first).
  std::vector<bool> accumulates;
  /// Replicated stages: this list's next collective is ready and waits for
  /// the stage's other replicas.
  bool collectiveWaiting = false;
  /// PipelineCosts::updatesWaitForWorld: this list's next optimizer step is
  /// ready and waits for every list's.
  bool updateWaiting = false;
  unsigned updates = 0; ///< optimizer steps in the list
};

/// 16 bytes; ties in time break by (rank, queue, index), so runs are
/// deterministic without a sequence number.
struct QueuedEvent {
  double time;
  uint32_t rankQueue; ///< rank << 2 | queue
  uint32_t index;
  unsigned rank() const { return rankQueue >> 2; }
  unsigned queue() const { return rankQueue & 3; }
  bool operator>(const QueuedEvent &o) const {
    if (time != o.time)
      return time > o.time;
    return rankQueue != o.rankQueue ? rankQueue > o.rankQueue : index > o.index;
  }
};

class Engine {
public:
  Engine(const Schedule &s, const PipelineCosts &c, const SimOptions &o)
      : s(s), c(c), opts(o), V(s.numVirtualStages()), m(s.microbatches) {
    size_t n = static_cast<size_t>(V) * m;
    fEnd.assign(n, -1);
    bEnd.assign(n, -1);
    actArrival.assign(n, -1);
    gradArrival.assign(n, -1);
    bytes.assign(cluster::kNumLinkLevels, 0);
    ranks.resize(s.devices.size());
    for (unsigned r = 0; r < s.devices.size(); ++r) {
      Rank &rk = ranks[r];
      const auto &list = s.devices[r];
      rk.accumulates.assign(list.size(), false);
      std::vector<bool> summed(s.chunks, false);
      unsigned gathered = 0;
      for (unsigned i = 0; i < list.size(); ++i) {
        ActionKind k = list[i].kind;
        if (k == ActionKind::OptimizerStep)
          summed.assign(s.chunks, false);
        if (k == ActionKind::Backward || k == ActionKind::BackwardWeight) {
          unsigned ch = static_cast<unsigned>(list[i].chunk);
          if (ch < summed.size()) {
            rk.accumulates[i] = summed[ch];
            summed[ch] = true;
          }
        }
        if (k == ActionKind::OptimizerStep)
          ++rk.updates;
        unsigned q = queueOf(list[i].kind);
        if (!c.overlapP2P && (q == 1 || q == 2))
          q = 0; // blocking sends occupy the compute stream
        unsigned before = q == 3 ? rk.queue[0].size() : rk.queue[3].size();
        rk.queue[q].push_back({i, before, gathered});
        if (k == ActionKind::AllGather)
          gathered = rk.queue[3].size();
      }
    }
    // The lists' k-th updates meet only where every list updates as often.
    worldUpdates =
        c.updatesWaitForWorld && llvm::all_of(ranks, [&](const Rank &rk) {
          return rk.updates == ranks.front().updates;
        });
  }

  Expected<SimResult> run();

private:
  static unsigned queueOf(ActionKind k) {
    switch (k) {
    case ActionKind::SendActivation:
      return 1;
    case ActionKind::SendGrad:
      return 2;
    case ActionKind::AllReduce:
    case ActionKind::ReduceScatter:
    case ActionKind::AllGather:
      return 3;
    default:
      return 0; // compute and blocking receives
    }
  }
  // Micro-batch major: events close in time touch neighbouring slots.
  size_t key(unsigned vs, int mb) const {
    return static_cast<size_t>(mb) * V + vs;
  }
  const StageCost &stageOf(unsigned r, const Action &a) const {
    return c.stage(r, a.chunk);
  }
  /// What action \p idx of list \p r takes on its stream.
  double computeDuration(unsigned r, unsigned idx) const;
  /// The weight gradient of action \p idx: with the read of the running
  /// sum when it adds into one.
  double weightGradient(unsigned r, unsigned idx) const {
    const StageCost &st = stageOf(r, s.devices[r][idx]);
    return st.bwdWeight +
           (ranks[r].accumulates[idx] ? st.bwdWeightAccumulate : 0);
  }
  /// A forward overlapped with the backward after it (F&B pair): what the
  /// pair takes beyond that backward, with each side's communication hidden
  /// behind the other's compute: max(Fc + Bc, Fm + Bm) - (Bc + Bm).
  double pairedForward(unsigned r, unsigned idx) const;
  unsigned linkOf(unsigned r, const Action &a) const;
  void push(double t, unsigned r, unsigned q, unsigned idx) {
    events.push({t, r << 2 | q, idx});
  }
  void advance(unsigned r);
  /// A send completed now: the data is at the peer.
  void deliver(unsigned r, const Action &a) {
    unsigned vs = s.stageOf(r, a.chunk);
    const Boundary bd = c.boundary(r, a.chunk);
    double groups = c.devices[r].devicesInGroup;
    if (a.kind == ActionKind::SendActivation) {
      actArrival[key(vs + 1, a.mb)] = now;
      bytes[static_cast<unsigned>(bd.nextLevel)] += bd.nextBytes * groups;
    } else {
      gradArrival[key(vs - 1, a.mb)] = now;
      bytes[static_cast<unsigned>(bd.prevLevel)] += bd.prevBytes * groups;
    }
  }
  void startOnLink(unsigned r, unsigned q, unsigned idx);
  void record(unsigned r, unsigned q, unsigned idx, double start, double end) {
    if (opts.recordEvents)
      result.events.push_back(
          {r, static_cast<Stream>(q), s.devices[r][idx], start, end});
  }

  const Schedule &s;
  const PipelineCosts &c;
  const SimOptions &opts;
  const unsigned V, m;
  std::vector<double> fEnd, bEnd, actArrival, gradArrival, bytes;
  std::vector<Rank> ranks;
  std::priority_queue<QueuedEvent, std::vector<QueuedEvent>,
                      std::greater<QueuedEvent>>
      events;
  double now = 0;
  /// PipelineCosts::updatesWaitForWorld, where the lists' updates pair up.
  bool worldUpdates = false;
  SimResult result;
};

} // namespace

double Engine::computeDuration(unsigned r, unsigned idx) const {
  const double scale = c.devices[r].computeScale;
  const Action &a = s.devices[r][idx];
  switch (a.kind) {
  case ActionKind::Forward:
    return stageOf(r, a).fwd * scale;
  case ActionKind::Backward:
    return (stageOf(r, a).bwdInput + weightGradient(r, idx)) * scale;
  case ActionKind::BackwardInput:
    return stageOf(r, a).bwdInput * scale;
  case ActionKind::BackwardWeight:
    return weightGradient(r, idx) * scale;
  case ActionKind::OptimizerStep:
    return c.devices[r].optimizerTime;
  case ActionKind::SendActivation:
    return c.boundary(r, a.chunk).nextTime;
  case ActionKind::SendGrad:
    return c.boundary(r, a.chunk).prevTime;
  case ActionKind::AllReduce:
    return stageOf(r, a).gradSyncTime;
  case ActionKind::ReduceScatter:
    return stageOf(r, a).gradSyncTime - stageOf(r, a).gradGatherTime;
  case ActionKind::AllGather:
    return stageOf(r, a).gradGatherTime;
  default:
    return 0;
  }
}

double Engine::pairedForward(unsigned r, unsigned idx) const {
  const auto &list = s.devices[r];
  const Action &f = list[idx];
  unsigned j = idx + 1;
  while (j < list.size() && !isCompute(list[j].kind))
    ++j;
  if (j == list.size() || (list[j].kind != ActionKind::Backward &&
                           list[j].kind != ActionKind::BackwardInput))
    return computeDuration(r, idx);
  const Action &b = list[j];
  const StageCost &fs = stageOf(r, f), &bs = stageOf(r, b);
  double fm = fs.fwdComm, fc = fs.fwd - fm;
  double bm = bs.bwdComm;
  double bc = bs.bwdInput - bm +
              (b.kind == ActionKind::Backward ? weightGradient(r, j) : 0);
  double pair = std::max(fc + bc, fm + bm);
  return std::max(0.0, pair - (bc + bm)) * c.devices[r].computeScale;
}

unsigned Engine::linkOf(unsigned r, const Action &a) const {
  const StageCost &st = stageOf(r, a);
  switch (a.kind) {
  case ActionKind::SendActivation:
    return static_cast<unsigned>(c.boundary(r, a.chunk).nextLevel);
  case ActionKind::SendGrad:
    return static_cast<unsigned>(c.boundary(r, a.chunk).prevLevel);
  default:
    return st.gradSyncBytes[1] > 0 ? 1 : 0;
  }
}

void Engine::startOnLink(unsigned r, unsigned q, unsigned idx) {
  const Action &a = s.devices[r][idx];
  Link &link = ranks[r].links[linkOf(r, a)];
  double d = computeDuration(r, idx);
  if (link.busy) {
    link.waiting.push_back({r, q, idx, d});
    return;
  }
  link.busy = true;
  record(r, q, idx, now, now + d);
  push(now + d, r, q, idx);
}

void Engine::advance(unsigned r) {
  Rank &rk = ranks[r];
  const auto &list = s.devices[r];
  // Compute stream (with blocking receives).
  while (!rk.computeBusy && rk.head[0] < rk.queue[0].size()) {
    const Slot &slot = rk.queue[0][rk.head[0]];
    unsigned idx = slot.index;
    const Action &a = list[idx];
    unsigned vs = s.stageOf(r, a.chunk);
    if (a.kind == ActionKind::RecvActivation) {
      if (actArrival[key(vs, a.mb)] < 0)
        break;
      ++rk.head[0];
      ++rk.computeDone;
      continue;
    }
    if (a.kind == ActionKind::RecvGrad) {
      if (gradArrival[key(vs, a.mb)] < 0)
        break;
      ++rk.head[0];
      ++rk.computeDone;
      continue;
    }
    if (a.kind == ActionKind::Forward && vs > 0 && s.listOf(vs - 1, a.mb) == r &&
        fEnd[key(vs - 1, a.mb)] < 0)
      break;
    if ((a.kind == ActionKind::Backward ||
         a.kind == ActionKind::BackwardInput) &&
        vs + 1 < V && s.listOf(vs + 1, a.mb) == r &&
        bEnd[key(vs + 1, a.mb)] < 0)
      break;
    if (a.kind == ActionKind::OptimizerStep && rk.collectivesDone < slot.before)
      break;
    if (a.kind == ActionKind::OptimizerStep && worldUpdates) {
      // The world's overflow flag: every list's update of this number
      // starts when the last list is ready for its own.
      rk.updateWaiting = true;
      if (!llvm::all_of(ranks, [](const Rank &q) { return q.updateWaiting; }))
        break;
      for (unsigned q = 0; q < ranks.size(); ++q) {
        Rank &other = ranks[q];
        other.updateWaiting = false;
        if (q == r)
          continue;
        unsigned oidx = other.queue[0][other.head[0]].index;
        double d = computeDuration(q, oidx);
        other.computeBusy = true;
        record(q, 0, oidx, now, now + d);
        push(now + d, q, 0, oidx);
      }
    }
    if (isCompute(a.kind) && rk.collectivesDone < slot.gathered)
      break;
    double d = a.overlappedWithNext() ? pairedForward(r, idx)
                                      : computeDuration(r, idx);
    rk.computeBusy = true;
    if (isCompute(a.kind)) {
      rk.busy += d;
      if (rk.firstStart < 0)
        rk.firstStart = now;
    }
    record(r, 0, idx, now, now + d);
    push(now + d, r, 0, idx);
  }
  // Sends: ready once their data is produced.
  for (unsigned q = 1; q <= 2; ++q) {
    while (rk.head[q] < rk.queue[q].size()) {
      unsigned idx = rk.queue[q][rk.head[q]].index;
      const Action &a = list[idx];
      unsigned vs = s.stageOf(r, a.chunk);
      double ready = q == 1 ? fEnd[key(vs, a.mb)] : bEnd[key(vs, a.mb)];
      if (ready < 0)
        break;
      ++rk.head[q];
      startOnLink(r, q, idx);
    }
  }
  // Collectives: ready once every compute action listed before is done;
  // among the replicas of a replicated stage, once all of them are ready.
  while (rk.head[3] < rk.queue[3].size()) {
    const Slot &slot = rk.queue[3][rk.head[3]];
    unsigned idx = slot.index;
    if (rk.computeDone < slot.before)
      break;
    if (s.replicated() && s.replicas[s.stageOfList(r)] > 1) {
      rk.collectiveWaiting = true;
      unsigned st = s.stageOfList(r);
      unsigned first = s.firstList[st], last = s.firstList[st + 1];
      for (unsigned q = first; q < last; ++q)
        if (!ranks[q].collectiveWaiting)
          return;
      for (unsigned q = first; q < last; ++q) {
        Rank &sib = ranks[q];
        sib.collectiveWaiting = false;
        unsigned sidx = sib.queue[3][sib.head[3]].index;
        ++sib.head[3];
        startOnLink(q, 3, sidx);
      }
      continue;
    }
    ++rk.head[3];
    startOnLink(r, 3, idx);
  }
}

Expected<SimResult> Engine::run() {
  for (unsigned r = 0; r < s.devices.size(); ++r)
    advance(r);
  while (!events.empty()) {
    QueuedEvent top = events.top();
    events.pop();
    struct {
      unsigned rank, queue, index;
    } e{top.rank(), top.queue(), top.index};
    now = top.time;
    Rank &rk = ranks[e.rank];
    rk.lastEnd = std::max(rk.lastEnd, now);
    const Action &a = s.devices[e.rank][e.index];
    unsigned vs = s.stageOf(e.rank, a.chunk);
    const DeviceCost &dc = c.devices[e.rank];
    if (e.queue == 0) {
      rk.computeBusy = false;
      ++rk.head[0];
      ++rk.computeDone;
      if (a.kind == ActionKind::Forward)
        fEnd[key(vs, a.mb)] = now;
      if (a.kind == ActionKind::Backward ||
          a.kind == ActionKind::BackwardInput) {
        bEnd[key(vs, a.mb)] = now;
        if (s.stageOfList(e.rank) == 0) // rank 0, or a replica of stage 0
          rk.backwardEnds.push_back(now);
      }
      if (a.kind == ActionKind::SendActivation ||
          a.kind == ActionKind::SendGrad) {
        deliver(e.rank, a);
        advance(a.peer);
      }
      advance(e.rank);
      continue;
    }
    // A link action finished: deliver, account bytes, start the next one.
    const StageCost &st = stageOf(e.rank, a);
    unsigned level = linkOf(e.rank, a);
    unsigned peer = e.rank;
    if (a.kind == ActionKind::SendActivation ||
        a.kind == ActionKind::SendGrad) {
      deliver(e.rank, a);
      peer = a.peer;
    } else {
      ++rk.collectivesDone;
      for (unsigned l = 0; l < cluster::kNumLinkLevels; ++l) {
        double b = a.kind == ActionKind::AllReduce ? st.gradSyncBytes[l]
                   : a.kind == ActionKind::AllGather
                       ? st.gradGatherBytes[l]
                       : st.gradSyncBytes[l] - st.gradGatherBytes[l];
        bytes[l] += b * dc.devicesInGroup;
      }
    }
    Link &link = rk.links[level];
    link.busy = false;
    if (!link.waiting.empty()) {
      Pending p = link.waiting.front();
      link.waiting.pop_front();
      link.busy = true;
      record(p.rank, p.queue, p.index, now, now + p.duration);
      push(now + p.duration, p.rank, p.queue, p.index);
    }
    advance(e.rank);
    if (peer != e.rank)
      advance(peer);
  }
  // Everything must have run.
  std::string stalled;
  for (unsigned r = 0; r < s.devices.size(); ++r)
    for (unsigned q = 0; q < kNumQueues; ++q)
      if (ranks[r].head[q] < ranks[r].queue[q].size())
        stalled +=
            formatv(
                "{0}rank {1} waits at {2}", stalled.empty() ? "" : "; ", r,
                s.devices[r][ranks[r].queue[q][ranks[r].head[q]].index].str())
                .str();
  if (!stalled.empty())
    return createStringError(inconvertibleErrorCode(),
                             "simulation stalled: " + stalled +
                                 "; verify the schedule (verifySchedule) to "
                                 "find the missing send");

  SimResult &res = result;
  double makespan = now;
  res.iterationTime = makespan;
  // Post-validated schedules: no sync across pipeline ranks ends the
  // iteration, so the next one starts on each rank when this one ends
  // there; the period is the longest rank's span.
  if (isPostValidated(s.kind)) {
    double span = 0;
    for (const Rank &rk : ranks)
      span = std::max(span, rk.lastEnd - std::max(0.0, rk.firstStart));
    res.iterationTime = span;
  }
  // Replicated stage 0: each replica paces its own share of the
  // micro-batches; the iteration ends with the slowest replica.
  if (isAsync(s.kind)) {
    double T = 0;
    bool steady = true;
    for (unsigned r = 0; r < s.devices.size() && s.stageOfList(r) == 0; ++r) {
      const auto &ends = ranks[r].backwardEnds;
      unsigned mr = s.microbatchesOf(r);
      steady &= mr >= 4 && ends.size() == mr;
      if (!steady)
        break;
      unsigned from = mr / 2;
      double interval = (ends[mr - 1] - ends[from]) / (mr - 1 - from);
      T = std::max(T, interval * mr);
    }
    if (steady) {
      res.iterationTime = T;
      res.steadyState = true;
    }
  }
  double T = res.iterationTime;
  // Means over devices; every device of a list behaves alike (without
  // replication all lists have equally many, so these are list means).
  double flops = 0, modelFlops = 0, bubble = 0, devices = 0;
  for (unsigned r = 0; r < s.devices.size(); ++r) {
    double f = 0, mf = 0;
    const double mr = s.microbatchesOf(r);
    const double w = s.replicated() ? c.devices[r].devicesInGroup : 1;
    for (unsigned ch = 0; ch < s.chunks; ++ch) {
      const StageCost &st = c.stage(r, ch);
      f += st.flops * mr;
      mf += st.modelFlops * mr;
      for (unsigned l = 0; l < cluster::kNumLinkLevels; ++l)
        bytes[l] += st.mbBytes[l] * mr * c.devices[r].devicesInGroup;
    }
    // The tied weights' exchange, once a step in the list's optimizer step
    // (its time is in the OPT action's).
    for (unsigned l = 0; l < cluster::kNumLinkLevels; ++l)
      bytes[l] += c.devices[r].tiedBytes[l] * c.devices[r].devicesInGroup;
    // A plan with no work has no rate (not an infinite one).
    flops += T > 0 ? w * f / T : 0;
    modelFlops += T > 0 ? w * mf / T : 0;
    res.busyTime.push_back(ranks[r].busy);
    res.listMicrobatches.push_back(s.microbatchesOf(r));
    double busyInIteration =
        res.steadyState ? std::min(T, ranks[r].busy) : ranks[r].busy;
    bubble += T > 0 ? w * (1 - busyInIteration / T) : 0;
    devices += w;
  }
  res.tflopsPerDevice = flops / devices / 1e12;
  res.modelTflopsPerDevice = modelFlops / devices / 1e12;
  res.bubbleFraction = bubble / devices;
  res.samplesPerSecond = T > 0 ? c.globalBatch / T : 0;
  res.peakMemoryParts = peakMemoryParts(s, c);
  for (const PeakMemory &m : res.peakMemoryParts)
    res.peakMemoryBytes.push_back(m.total());
  res.inFlight = maxInFlight(s);
  res.bytesPerLevel = bytes;
  res.levelNames = c.levelNames;
  return std::move(res);
}

Expected<SimResult> simulate(const Schedule &s, const PipelineCosts &costs,
                             const SimOptions &opts) {
  if (costs.pp != s.pp || costs.chunks != s.chunks ||
      costs.microbatches != s.microbatches ||
      costs.devices.size() != s.devices.size() ||
      costs.slotStage != s.listStage ||
      costs.stages.size() != s.numVirtualStages() ||
      (!s.replicated() && s.devices.size() != s.pp))
    return createStringError(
        inconvertibleErrorCode(),
        formatv("simulate: schedule (pp={0}, chunks={1}, micro-batches={2}) "
                "and costs (pp={3}, chunks={4}, micro-batches={5}) disagree; "
                "build both from the same plan",
                s.pp, s.chunks, s.microbatches, costs.pp, costs.chunks,
                costs.microbatches)
            .str());
  Engine e(s, costs, opts);
  Expected<SimResult> r = e.run();
  if (!r)
    return r.takeError();
  // Results are printed and compared: a non-finite one must never get out
  // (inputs are range-checked; this is the last guard).
  auto finite = [](ArrayRef<double> v) {
    return llvm::all_of(v, [](double x) { return std::isfinite(x); });
  };
  if (!finite({r->iterationTime, r->samplesPerSecond, r->tflopsPerDevice,
               r->modelTflopsPerDevice, r->bubbleFraction}) ||
      !finite(r->peakMemoryBytes) || !finite(r->busyTime) ||
      !finite(r->bytesPerLevel))
    return createStringError(
        inconvertibleErrorCode(),
        formatv("simulate: the plan's predicted figures are not finite "
                "(iteration time {0} s); the cluster or model values are "
                "outside what the cost model can compute with: check the "
                "cluster's bandwidths, FLOP/s and memory sizes",
                r->iterationTime)
            .str());
  return r;
}

ScheduleOptions scheduleOptions(const Plan &plan) {
  return schedule::scheduleOptions(plan);
}

Expected<PlanSimulation>
simulatePlan(const cost::ModelDesc &model, const cluster::Cluster &cluster,
             const Plan &plan, unsigned globalBatch, const cost::CostModel &cm,
             const SimOptions &opts, const cost::MemoryConfig &memory,
             const Schedule *given) {
  PlanSimulation ps;
  ps.plan = plan;
  if (Error e = finalizePlan(ps.plan, model, cluster, globalBatch, cm))
    return std::move(e);
  if (given) {
    const Plan &p = ps.plan;
    if (given->kind != p.schedule || given->pp != p.pp ||
        given->chunks != p.chunks ||
        given->microbatches != p.numMicrobatches ||
        given->replicas != p.replicas)
      return createStringError(
          inconvertibleErrorCode(),
          formatv("the schedule is {0} for pp={1}, chunks={2}, {3} "
                  "micro-batches but the plan has {4}, pp={5}, chunks={6}, "
                  "{7} micro-batches; materialize the schedule of this plan "
                  "again",
                  scheduleName(given->kind), given->pp, given->chunks,
                  given->microbatches, scheduleName(p.schedule), p.pp,
                  p.chunks, p.numMicrobatches)
              .str());
    ps.schedule = *given;
  } else {
    Expected<Schedule> s =
        generateSchedule(ps.plan.schedule, ps.plan.pp, ps.plan.chunks,
                         ps.plan.numMicrobatches,
                         schedule::scheduleOptions(ps.plan));
    if (!s)
      return s.takeError();
    ps.schedule = std::move(*s);
  }
  ps.costs =
      buildPipelineCosts(ps.plan, model, cluster, cm,
                         ps.schedule.weightVersions, memory, opts.layerTimes);
  if (!(given && opts.givenVerified))
    if (Error e = verifySchedule(ps.schedule))
      return std::move(e);
  Expected<SimResult> r = simulate(ps.schedule, ps.costs, opts);
  if (!r)
    return r.takeError();
  ps.result = std::move(*r);
  if (Error e = checkMemory(ps.result.peakMemoryBytes, ps.costs)) {
    ps.result.fitsMemory = false;
    ps.result.memoryProblem = toString(std::move(e));
  }
  if (opts.input)
    applyInputStall(ps, cluster, *opts.input);
  return std::move(ps);
}

void applyInputStall(PlanSimulation &ps, const cluster::Cluster &cluster,
                     const InputSpec &spec) {
  if (!cluster.input || ps.plan.mode != Mode::Train)
    return;
  SimResult &res = ps.result;
  // The devices of the first pipeline stage take the samples in.
  InputStall in = inputStall(
      *cluster.input, spec, res.iterationTime,
      samplesPerNode(cluster, ps.plan.stageDevices(0), ps.costs.globalBatch),
      devicesPerNode(cluster));
  double T = in.iterationTime();
  if (T > res.iterationTime && res.iterationTime > 0) {
    double keep = res.iterationTime / T;
    res.tflopsPerDevice *= keep;
    res.modelTflopsPerDevice *= keep;
    res.bubbleFraction *= keep;
    res.iterationTime = T;
    res.samplesPerSecond = ps.costs.globalBatch / T;
  }
  res.input = in;
}

} // namespace distopt::sim
