//===- Verifier.cpp - Checking schedules ------------------------*- C++ -*-===//
//
// Four checks, each with its own error: completeness (every F, B, W exactly
// once), per-list dependencies (F before B before W, receive before use, send
// after produce, right peers), deadlock freedom (execute the lists with eager
// sends and blocking receives), and memory (the in-order walk of each list).
//
//===----------------------------------------------------------------------===//

#include "lib/Schedule/Schedule.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace llvm;

namespace distopt::schedule {

std::vector<unsigned> maxInFlight(const Schedule &s) {
  std::vector<unsigned> out(s.devices.size(), 0);
  for (unsigned r = 0; r < s.devices.size(); ++r) {
    int cur = 0;
    for (const Action &a : s.devices[r]) {
      if (a.kind == ActionKind::Forward)
        out[r] = std::max<unsigned>(out[r], ++cur);
      else if (a.kind == ActionKind::Backward ||
               a.kind == ActionKind::BackwardInput)
        --cur;
    }
  }
  return out;
}

std::vector<PeakMemory> peakMemoryParts(const Schedule &s,
                                        const PipelineCosts &c) {
  std::vector<PeakMemory> out(s.devices.size());
  for (unsigned r = 0; r < s.devices.size() && r < c.devices.size(); ++r) {
    // cur is what the walk holds; act and stash split it (the split is
    // kept beside cur, not summed into it, so the total stays the same).
    double cur = 0, act = 0, stash = 0;
    const double work = c.devices[r].workingBytes;
    PeakMemory &peak = out[r];
    auto reach = [&](double bytes, double working) {
      if (bytes < peak.dynamicBytes)
        return;
      peak.dynamicBytes = bytes;
      peak.activations = act;
      peak.activationStash = stash;
      peak.working = working;
    };
    for (const Action &a : s.devices[r]) {
      if (a.chunk < 0 || static_cast<unsigned>(a.chunk) >= c.chunks)
        continue;
      const StageCost &st = c.stage(r, a.chunk);
      switch (a.kind) {
      case ActionKind::Forward:
        cur += st.activationBytes;
        act += st.activationBytes;
        reach(cur, 0);
        break;
      case ActionKind::Backward:
        reach(cur + work, work);
        cur -= st.activationBytes;
        act -= st.activationBytes;
        break;
      case ActionKind::BackwardInput:
        reach(cur + work, work);
        cur += st.stashBytes - st.activationBytes;
        act -= st.activationBytes;
        stash += st.stashBytes;
        break;
      case ActionKind::BackwardWeight:
        cur -= st.stashBytes;
        stash -= st.stashBytes;
        break;
      default:
        break;
      }
    }
    peak.fixed = c.devices[r].staticMemory;
  }
  return out;
}

std::vector<double> peakMemory(const Schedule &s, const PipelineCosts &c) {
  std::vector<double> out;
  for (const PeakMemory &m : peakMemoryParts(s, c))
    out.push_back(m.total());
  return out;
}

char ScheduleError::ID = 0;

void ScheduleError::log(raw_ostream &os) const { os << message; }

std::error_code ScheduleError::convertToErrorCode() const {
  return inconvertibleErrorCode();
}

static Error fail(unsigned r, size_t idx, const Action &a, const Twine &msg) {
  return make_error<ScheduleError>(
      formatv("schedule rank {0}, action {1} ({2}): ", r, idx, a.str()).str() +
          msg.str(),
      static_cast<int>(r), static_cast<int>(idx));
}

/// Index of (mb, chunk) in flat per-rank tables.
static size_t slot(const Schedule &s, int mb, int chunk) {
  return static_cast<size_t>(chunk) * s.microbatches + mb;
}

/// The list count and, for replicated schedules, the slot tables.
static Error checkShape(const Schedule &s) {
  auto err = [](const Twine &msg) {
    return createStringError(inconvertibleErrorCode(), msg.str());
  };
  if (!s.replicated()) {
    if (s.devices.size() != s.pp)
      return err(formatv("schedule has {0} rank lists for pp={1}",
                         s.devices.size(), s.pp));
    return Error::success();
  }
  if (s.replicas.size() != s.pp || s.firstList.size() != s.pp + 1 ||
      s.chunks != 1)
    return err(formatv("replicated schedule needs one replica count and one "
                       "first list per stage and chunks=1 (pp={0}, {1} "
                       "counts, {2} first lists, chunks={3})",
                       s.pp, s.replicas.size(), s.firstList.size(), s.chunks));
  unsigned lists = 0;
  for (unsigned st = 0; st < s.pp; ++st) {
    if (s.firstList[st] != lists || s.replicas[st] == 0)
      return err(formatv("replicated schedule: stage {0} must start at list "
                         "{1} with at least one replica",
                         st, lists));
    lists += s.replicas[st];
  }
  if (s.firstList[s.pp] != lists || s.devices.size() != lists ||
      s.listStage.size() != lists)
    return err(formatv("replicated schedule has {0} lists for {1} slots",
                       s.devices.size(), lists));
  for (unsigned l = 0; l < lists; ++l)
    if (s.listStage[l] >= s.pp || l < s.firstList[s.listStage[l]] ||
        l >= s.firstList[s.listStage[l] + 1])
      return err(formatv("replicated schedule: list {0} is given the wrong "
                         "stage",
                         l));
  return Error::success();
}

/// Whether list \p r runs micro-batch \p mb (replicas: round-robin).
static bool owns(const Schedule &s, unsigned r, int mb) {
  return !s.replicated() ||
         s.listOf(s.stageOfList(r), mb) == r;
}

static Error checkLists(const Schedule &s) {
  const unsigned V = s.numVirtualStages();
  const size_t n = static_cast<size_t>(s.chunks) * s.microbatches;
  if (Error e = checkShape(s))
    return e;
  for (unsigned r = 0; r < s.devices.size(); ++r) {
    // Counts and positions of compute actions and receives per (mb, chunk).
    std::vector<unsigned> nF(n), nB(n), nBI(n), nW(n), nRA(n), nRG(n);
    const auto &list = s.devices[r];
    for (size_t i = 0; i < list.size(); ++i) {
      const Action &a = list[i];
      if (s.forwardOnly &&
          (isCollective(a.kind) || a.kind == ActionKind::OptimizerStep ||
           a.kind == ActionKind::Backward ||
           a.kind == ActionKind::BackwardInput ||
           a.kind == ActionKind::BackwardWeight ||
           a.kind == ActionKind::SendGrad || a.kind == ActionKind::RecvGrad))
        return fail(r, i, a,
                    "a forward-only (inference) schedule has no backward, "
                    "gradient or optimizer actions");
      if (isCollective(a.kind) || a.kind == ActionKind::OptimizerStep) {
        if (a.chunk < 0 || static_cast<unsigned>(a.chunk) >= s.chunks)
          return fail(r, i, a, "chunk out of range");
        continue;
      }
      if (a.mb < 0 || static_cast<unsigned>(a.mb) >= s.microbatches ||
          a.chunk < 0 || static_cast<unsigned>(a.chunk) >= s.chunks)
        return fail(r, i, a,
                    formatv("micro-batch or chunk out of range (micro-batches "
                            "{0}, chunks {1})",
                            s.microbatches, s.chunks));
      size_t k = slot(s, a.mb, a.chunk);
      unsigned vs = s.stageOf(r, a.chunk);
      if (!owns(s, r, a.mb))
        return fail(r, i, a,
                    formatv("micro-batch {0} belongs to list {1} of stage {2} "
                            "(round-robin over its replicas)",
                            a.mb, s.listOf(vs, a.mb), s.stageOfList(r)));
      int prev = vs > 0 ? static_cast<int>(s.listOf(vs - 1, a.mb)) : -1;
      int next = vs + 1 < V ? static_cast<int>(s.listOf(vs + 1, a.mb)) : -1;
      bool prevRemote = prev >= 0 && prev != static_cast<int>(r);
      bool nextRemote = next >= 0 && next != static_cast<int>(r);
      auto localDone = [&](ActionKind kind, int chunk) {
        for (size_t j = 0; j < i; ++j)
          if (list[j].kind == kind && list[j].mb == a.mb &&
              list[j].chunk == chunk)
            return true;
        return false;
      };
      switch (a.kind) {
      case ActionKind::Forward:
        if (nF[k]++)
          return fail(r, i, a, "forward appears twice");
        if (prevRemote && !nRA[k])
          return fail(r, i, a,
                      formatv("input activation not received; put recvA{0}.{1}"
                              ">{2} before it",
                              a.mb, static_cast<int>(a.chunk), prev));
        if (prev == static_cast<int>(r) &&
            !localDone(ActionKind::Forward, a.chunk - 1))
          return fail(r, i, a,
                      "runs before the forward of the previous "
                      "chunk on this rank");
        break;
      case ActionKind::Backward:
      case ActionKind::BackwardInput:
        if ((a.kind == ActionKind::Backward ? nB[k] : nBI[k])++)
          return fail(r, i, a, "backward appears twice");
        if (!nF[k])
          return fail(r, i, a, "backward before its forward");
        if (nextRemote && !nRG[k])
          return fail(r, i, a,
                      formatv("output gradient not received; put recvG{0}.{1}"
                              ">{2} before it",
                              a.mb, static_cast<int>(a.chunk), next));
        if (next == static_cast<int>(r) &&
            !localDone(ActionKind::Backward, a.chunk + 1) &&
            !localDone(ActionKind::BackwardInput, a.chunk + 1))
          return fail(r, i, a,
                      "runs before the backward of the next chunk "
                      "on this rank");
        break;
      case ActionKind::BackwardWeight:
        if (nW[k]++)
          return fail(r, i, a, "weight gradient appears twice");
        if (!nBI[k])
          return fail(r, i, a, "weight gradient before its input gradient");
        break;
      case ActionKind::RecvActivation:
        if (!prevRemote || a.peer != prev)
          return fail(r, i, a,
                      formatv("activation must come from rank {0}", prev));
        ++nRA[k];
        break;
      case ActionKind::RecvGrad:
        if (!nextRemote || a.peer != next)
          return fail(r, i, a,
                      formatv("gradient must come from rank {0}", next));
        ++nRG[k];
        break;
      case ActionKind::SendActivation:
        if (!nextRemote || a.peer != next)
          return fail(r, i, a, formatv("activation must go to rank {0}", next));
        if (!nF[k])
          return fail(r, i, a, "sends an activation before its forward");
        break;
      case ActionKind::SendGrad:
        if (!prevRemote || a.peer != prev)
          return fail(r, i, a, formatv("gradient must go to rank {0}", prev));
        if (!nB[k] && !nBI[k])
          return fail(r, i, a, "sends a gradient before its backward");
        break;
      default:
        break;
      }
    }
    for (unsigned c = 0; c < s.chunks; ++c)
      for (unsigned mb = 0; mb < s.microbatches; ++mb) {
        if (!owns(s, r, mb))
          continue;
        size_t k = slot(s, mb, c);
        bool split = nBI[k] == 1 && nW[k] == 1 && nB[k] == 0;
        bool whole = nB[k] == 1 && nBI[k] == 0 && nW[k] == 0;
        bool none = nB[k] == 0 && nBI[k] == 0 && nW[k] == 0;
        if (s.forwardOnly && nF[k] != 1)
          return make_error<ScheduleError>(
              formatv("schedule rank {0}: micro-batch {1} needs one forward "
                      "(has {2})",
                      r, mb, nF[k])
                  .str(),
              static_cast<int>(r));
        if (s.forwardOnly ? !none : nF[k] != 1 || !(split || whole))
          return make_error<ScheduleError>(
              formatv("schedule rank {0}: micro-batch {1} chunk {2} needs one "
                      "F and either one B or one BI and one W (has F={3}, "
                      "B={4}, BI={5}, W={6})",
                      r, mb, c, nF[k], nB[k], nBI[k], nW[k])
                  .str(),
              static_cast<int>(r));
      }
  }
  // A collective among a stage's replicas needs every replica to call it
  // equally often.
  for (unsigned st = 0; st < s.pp && s.replicated(); ++st) {
    auto count = [&](unsigned l) {
      return llvm::count_if(s.devices[l],
                            [](const Action &a) { return isCollective(a.kind); });
    };
    unsigned first = s.firstList[st];
    for (unsigned l = first + 1; l < s.firstList[st + 1]; ++l)
      if (count(l) != count(first))
        return make_error<ScheduleError>(
            formatv("schedule stage {0}: list {1} has {2} collectives but "
                    "list {3} has {4}; the replicas of a stage must sync "
                    "equally often (give every replica as many micro-batches)",
                    st, l, count(l), first, count(first))
                .str(),
            static_cast<int>(l));
  }
  return Error::success();
}

/// Executes the lists with eager sends and blocking receives.
static Error checkDeadlock(const Schedule &s) {
  const unsigned pp = s.devices.size();
  const size_t n = static_cast<size_t>(s.numVirtualStages()) * s.microbatches;
  // Messages delivered into virtual stage v for micro-batch mb.
  std::vector<char> actSent(n, 0), gradSent(n, 0);
  std::vector<size_t> pos(pp, 0);
  auto key = [&](unsigned vs, int mb) {
    return static_cast<size_t>(vs) * s.microbatches + mb;
  };
  // Replicated stages: a collective is a rendezvous of the stage's
  // replicas (each blocks until all have called their c-th one).
  std::vector<unsigned> collDone(pp, 0);
  auto rendezvous = [&](unsigned r) {
    if (!s.replicated())
      return true;
    unsigned st = s.stageOfList(r), c = collDone[r];
    for (unsigned q = s.firstList[st]; q < s.firstList[st + 1]; ++q) {
      bool past = collDone[q] > c;
      bool here = collDone[q] == c && pos[q] < s.devices[q].size() &&
                  isCollective(s.devices[q][pos[q]].kind);
      if (!past && !here)
        return false;
    }
    return true;
  };
  bool progress = true;
  while (progress) {
    progress = false;
    for (unsigned r = 0; r < pp; ++r) {
      const auto &list = s.devices[r];
      while (pos[r] < list.size()) {
        const Action &a = list[pos[r]];
        unsigned vs = s.stageOf(r, a.chunk);
        if (a.kind == ActionKind::RecvActivation && !actSent[key(vs, a.mb)])
          break;
        if (a.kind == ActionKind::RecvGrad && !gradSent[key(vs, a.mb)])
          break;
        if (isCollective(a.kind)) {
          if (!rendezvous(r))
            break;
          ++collDone[r];
        }
        if (a.kind == ActionKind::SendActivation)
          actSent[key(vs + 1, a.mb)] = 1;
        if (a.kind == ActionKind::SendGrad)
          gradSent[key(vs - 1, a.mb)] = 1;
        ++pos[r];
        progress = true;
      }
    }
  }
  std::string blocked;
  int firstList = -1, firstAction = -1;
  for (unsigned r = 0; r < pp; ++r)
    if (pos[r] < s.devices[r].size()) {
      blocked += formatv("{0}rank {1} waits at action {2} ({3})",
                         blocked.empty() ? "" : "; ", r, pos[r],
                         s.devices[r][pos[r]].str())
                     .str();
      if (firstList < 0) {
        firstList = static_cast<int>(r);
        firstAction = static_cast<int>(pos[r]);
      }
    }
  if (!blocked.empty())
    return make_error<ScheduleError>("schedule deadlocks: " + blocked +
                                         "; each receive needs a matching "
                                         "send that is not itself behind a "
                                         "receive (and each collective of a "
                                         "replicated stage all of its "
                                         "replicas)",
                                     firstList, firstAction);
  return Error::success();
}

Error checkMemory(const std::vector<double> &peak, const PipelineCosts &costs,
                  double memoryLimit) {
  for (unsigned r = 0; r < peak.size() && r < costs.devices.size(); ++r) {
    double limit =
        memoryLimit > 0 ? memoryLimit : costs.devices[r].memoryCapacity;
    if (peak[r] > limit)
      return make_error<ScheduleError>(
          formatv("schedule rank {0} ({1}) needs {2:F2} GB at its peak but "
                  "has {3:F2} GB; use recomputation, a smaller micro-batch, "
                  "ZeRO, more pipeline stages or a schedule with fewer "
                  "micro-batches in flight",
                  r, costs.devices[r].deviceName, peak[r] / 1e9, limit / 1e9)
              .str(),
          static_cast<int>(r));
  }
  for (unsigned r = 0; r < costs.devices.size(); ++r) {
    const DeviceCost &dc = costs.devices[r];
    if (dc.placement.fits)
      continue;
    double need = 0, have = 0;
    for (const cost::OffloadItem &it : dc.offloadItems)
      need += it.bytes;
    for (double cap : dc.tiers.capacity)
      have += cap;
    return make_error<ScheduleError>(
        formatv("schedule rank {0} ({1}) offloads {2:F2} GB per device but "
                "its node's storage tiers give each device {3:F2} GB; offload "
                "less, shard more (ZeRO, more devices) or give the nodes "
                "larger tiers",
                r, dc.deviceName, need / 1e9, have / 1e9)
            .str(),
        static_cast<int>(r));
  }
  return Error::success();
}

Error verifySchedule(const Schedule &s, const PipelineCosts *costs,
                     double memoryLimit) {
  if (Error e = checkLists(s))
    return e;
  if (Error e = checkDeadlock(s))
    return e;
  if (!costs)
    return Error::success();
  if (costs->pp != s.pp || costs->chunks != s.chunks ||
      costs->stages.size() != s.numVirtualStages() ||
      costs->devices.size() != s.devices.size() ||
      costs->slotStage != s.listStage)
    return createStringError(
        inconvertibleErrorCode(),
        formatv("schedule (pp={0}, chunks={1}) and costs (pp={2}, chunks={3}, "
                "{4} stages) disagree; build both from the same plan",
                s.pp, s.chunks, costs->pp, costs->chunks,
                costs->stages.size()));
  return checkMemory(peakMemory(s, *costs), *costs, memoryLimit);
}

} // namespace distopt::schedule
