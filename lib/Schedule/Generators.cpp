//===- Generators.cpp - GPipe, 1F1B, interleaved, ZB-H1, PipeDream -*- C++ -*-//
//
// Each generator fixes the order of compute actions on every rank; one shared
// pass then inserts the receives before, and the sends after, each compute
// action whose neighbour stage lives on another rank, and the DP collectives
// and optimizer step.
//
//===----------------------------------------------------------------------===//

#include "lib/Schedule/Schedule.h"
#include "lib/Schedule/Updates.h"
#include "lib/Schedule/VGenerators.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace llvm;

namespace distopt::schedule {

StringRef actionName(ActionKind k) {
  static const char *names[] = {"F",     "B",     "BI", "W",  "sendA", "recvA",
                                "sendG", "recvG", "AR", "RS", "AG",    "OPT"};
  return names[static_cast<unsigned>(k)];
}

bool isCompute(ActionKind k) {
  return k == ActionKind::Forward || k == ActionKind::Backward ||
         k == ActionKind::BackwardInput || k == ActionKind::BackwardWeight ||
         k == ActionKind::OptimizerStep;
}

bool isCollective(ActionKind k) {
  return k == ActionKind::AllReduce || k == ActionKind::ReduceScatter ||
         k == ActionKind::AllGather;
}

std::string Action::str() const {
  std::string s = actionName(kind).str();
  int c = chunk, p = peer; // int8_t/int16_t would print as characters
  if (mb >= 0)
    s += formatv("{0}.{1}", mb, c).str();
  else if (isCollective(kind))
    s += formatv(".{0}", c).str();
  if (p >= 0)
    s += formatv(">{0}", p).str();
  if (overlappedWithNext())
    s += "&";
  return s;
}

void Schedule::print(raw_ostream &os) const {
  for (unsigned r = 0; r < devices.size(); ++r) {
    if (replicated())
      os << "slot " << r << " (stage " << stageOfList(r) << " replica "
         << r - firstList[stageOfList(r)] << "):";
    else
      os << "rank " << r << ":";
    for (const Action &a : devices[r])
      os << " " << a.str();
    os << "\n";
  }
}

using detail::compute;

/// 1F1B order (DAPPLE early backward): pp - r - 1 warm-up forwards, then
/// alternate one forward and one backward, then drain the backwards.
static std::vector<Action> oneFOneB(unsigned r, unsigned pp, unsigned m) {
  std::vector<Action> out;
  unsigned warm = std::min(pp - r - 1, m);
  for (unsigned i = 0; i < warm; ++i)
    out.push_back(compute(ActionKind::Forward, i));
  for (unsigned i = 0; i + warm < m; ++i) {
    out.push_back(compute(ActionKind::Forward, warm + i));
    out.push_back(compute(ActionKind::Backward, i));
  }
  for (unsigned i = m - warm; i < m; ++i)
    out.push_back(compute(ActionKind::Backward, i));
  return out;
}

/// Megatron-LM's interleaved 1F1B: micro-batches go through the chunks in
/// groups of pp; (pp - r - 1) * 2 + (v - 1) * pp warm-up forwards.
static std::vector<Action> interleaved(unsigned r, unsigned pp, unsigned v,
                                       unsigned m) {
  unsigned total = m * v;
  auto fwdAt = [&](unsigned k) {
    unsigned group = k / (pp * v), within = k % (pp * v);
    return compute(ActionKind::Forward, group * pp + within % pp, within / pp);
  };
  auto bwdAt = [&](unsigned k) {
    unsigned group = k / (pp * v), within = k % (pp * v);
    return compute(ActionKind::Backward, group * pp + within % pp,
                   v - 1 - within / pp);
  };
  std::vector<Action> out;
  unsigned warm = std::min((pp - r - 1) * 2 + (v - 1) * pp, total);
  for (unsigned k = 0; k < warm; ++k)
    out.push_back(fwdAt(k));
  for (unsigned k = 0; k + warm < total; ++k) {
    out.push_back(fwdAt(warm + k));
    out.push_back(bwdAt(k));
  }
  for (unsigned k = total - warm; k < total; ++k)
    out.push_back(bwdAt(k));
  return out;
}

static std::vector<Action> gpipe(unsigned m) {
  std::vector<Action> out;
  for (unsigned i = 0; i < m; ++i)
    out.push_back(compute(ActionKind::Forward, i));
  for (unsigned i = 0; i < m; ++i)
    out.push_back(compute(ActionKind::Backward, i));
  return out;
}

/// Adds receives, sends, DP collectives and optimizer steps around the
/// compute order of rank \p r.
static std::vector<Action> addCommunication(const Schedule &s, unsigned r,
                                            const std::vector<Action> &order,
                                            const ScheduleOptions &opts) {
  const unsigned V = s.numVirtualStages();
  const bool async = updatesEveryMicrobatch(s.kind);
  std::vector<unsigned> gradsLeft(s.chunks, s.microbatchesOf(r));
  std::vector<Action> out;
  ActionKind syncKind =
      opts.zero >= 1 ? ActionKind::ReduceScatter : ActionKind::AllReduce;
  const bool dataParallel = s.replicated()
                                ? s.replicas[s.stageOfList(r)] > 1
                                : opts.dataParallel;
  // An overlapped F&B pair receives both inputs first and sends both
  // outputs after the backward.
  std::vector<Action> pendingSends;
  for (size_t i = 0; i < order.size(); ++i) {
    const Action &a = order[i];
    unsigned vs = s.stageOf(r, a.chunk);
    int prev = vs > 0 ? static_cast<int>(s.listOf(vs - 1, a.mb)) : -1;
    int next = vs + 1 < V ? static_cast<int>(s.listOf(vs + 1, a.mb)) : -1;
    bool prevRemote = prev >= 0 && prev != static_cast<int>(r);
    bool nextRemote = next >= 0 && next != static_cast<int>(r);
    switch (a.kind) {
    case ActionKind::Forward:
      if (prevRemote)
        out.push_back({ActionKind::RecvActivation, a.mb, a.chunk, prev});
      if (a.overlappedWithNext() && i + 1 < order.size()) {
        const Action &b = order[i + 1];
        unsigned bvs = s.stageOf(r, b.chunk);
        int bnext = bvs + 1 < V ? static_cast<int>(s.listOf(bvs + 1, b.mb)) : -1;
        if (bnext >= 0 && bnext != static_cast<int>(r))
          out.push_back({ActionKind::RecvGrad, b.mb, b.chunk, bnext});
        out.push_back(a);
        if (nextRemote)
          pendingSends.push_back(
              {ActionKind::SendActivation, a.mb, a.chunk, next});
        break;
      }
      out.push_back(a);
      if (nextRemote)
        out.push_back({ActionKind::SendActivation, a.mb, a.chunk, next});
      break;
    case ActionKind::Backward:
    case ActionKind::BackwardInput: {
      bool paired = i > 0 && order[i - 1].overlappedWithNext();
      if (nextRemote && !paired)
        out.push_back({ActionKind::RecvGrad, a.mb, a.chunk, next});
      out.push_back(a);
      out.insert(out.end(), pendingSends.begin(), pendingSends.end());
      pendingSends.clear();
      if (prevRemote)
        out.push_back({ActionKind::SendGrad, a.mb, a.chunk, prev});
      break;
    }
    default:
      out.push_back(a);
      break;
    }
    bool gradDone =
        a.kind == ActionKind::Backward || a.kind == ActionKind::BackwardWeight;
    if (!gradDone)
      continue;
    if (async) {
      // PipeDream and PipeMare update after every micro-batch's backward;
      // under ZeRO each update reduce-scatters that micro-batch's gradient,
      // updates the replica's shard and gathers the weights the next
      // forward reads. With per-stage replicas every list updates once per
      // round of updateRound(s) micro-batches, after its last backward of
      // the round (the replicas' k-th syncs meet).
      const unsigned round = updateRound(s);
      if (s.replicated() && static_cast<unsigned>(a.mb) % round <
                                round - s.replicas[s.stageOfList(r)])
        continue;
      if (dataParallel)
        out.push_back({syncKind, a.mb, a.chunk, -1});
      out.push_back({ActionKind::OptimizerStep, a.mb, a.chunk, -1});
      if (dataParallel && opts.zero >= 1)
        out.push_back({ActionKind::AllGather, a.mb, a.chunk, -1});
      continue;
    }
    if (--gradsLeft[a.chunk] == 0 && dataParallel && opts.overlapGradSync)
      out.push_back({syncKind, -1, a.chunk, -1});
  }
  if (!async && dataParallel && !opts.overlapGradSync)
    for (unsigned c = 0; c < s.chunks; ++c)
      out.push_back({syncKind, -1, static_cast<int>(c), -1});
  if (!async) {
    out.push_back({ActionKind::OptimizerStep, -1, 0, -1});
    if (dataParallel && opts.zero >= 1 && !opts.overlapParamGather)
      for (unsigned c = 0; c < s.chunks; ++c)
        out.push_back({ActionKind::AllGather, -1, static_cast<int>(c), -1});
  }
  return out;
}

std::vector<RankAction> actionsForRank(const Schedule &s, const Plan &plan,
                                       unsigned rank) {
  if (s.replicated()) {
    unsigned t = rank % plan.tp, slot = rank / plan.tp;
    if (slot >= s.devices.size())
      return {};
    std::vector<RankAction> out;
    out.reserve(s.devices[slot].size());
    for (const Action &a : s.devices[slot])
      out.push_back(
          {a, a.peer >= 0 ? static_cast<int32_t>(t + plan.tp * a.peer) : -1});
    return out;
  }
  unsigned t = rank % plan.tp, c = (rank / plan.tp) % plan.cp;
  unsigned d = (rank / (plan.tp * plan.cp)) % plan.dp;
  unsigned stage = rank / (plan.tp * plan.cp * plan.dp);
  if (stage >= s.devices.size() || stage >= plan.pp)
    return {};
  std::vector<RankAction> out;
  out.reserve(s.devices[stage].size());
  for (const Action &a : s.devices[stage])
    out.push_back(
        {a, a.peer >= 0
                ? static_cast<int32_t>(plan.globalRank(a.peer, d, t, c))
                : -1});
  return out;
}

/// Compute order of slot \p list of a replicated schedule. Every compute
/// action gets a global key; each list runs its actions in key order, and
/// every dependency (F at s before F at s+1, B at s+1 before B at s, F
/// before B at the last stage) goes to a strictly larger key (GPipe: ties
/// between stages break by stage), so the action with the least key not yet
/// run is always at the head of its list with its inputs sent: the lists
/// cannot deadlock. 1F1B keys: F(s, m) = 2m + a_s and B(s, m) = 2m + b_s
/// with a_s = sum_{s'<s} r_s' and b_s = 2 * sum r - a_s - 1. Without
/// replication that is exactly 1F1B's pp - s warm-up; with it a slot of
/// stage s keeps about sum_{s'>=s} r_s' / r_s micro-batches in flight,
/// PipeDream's NOAM (ceil(workers / input-stage replicas) at the input).
static std::vector<Action> replicatedOrder(const Schedule &s, unsigned list) {
  const unsigned st = s.listStage[list], r = s.replicas[st];
  const unsigned k = list - s.firstList[st], m = s.microbatches;
  const uint64_t total = s.firstList[s.pp], a = s.firstList[st];
  const uint64_t b = 2 * total - a - 1;
  const bool gpipe = s.kind == ScheduleKind::GPipe;
  std::vector<std::pair<uint64_t, Action>> keyed;
  for (unsigned mb = k; mb < m; mb += r) {
    keyed.push_back({gpipe ? mb : 2 * uint64_t(mb) + a,
                     compute(ActionKind::Forward, mb)});
    keyed.push_back({gpipe ? uint64_t(m) + mb : 2 * uint64_t(mb) + b,
                     compute(ActionKind::Backward, mb)});
  }
  std::stable_sort(keyed.begin(), keyed.end(),
                   [](const auto &x, const auto &y) { return x.first < y.first; });
  std::vector<Action> out;
  for (const auto &kv : keyed)
    out.push_back(kv.second);
  return out;
}

static Expected<Schedule> generateReplicated(ScheduleKind kind, unsigned pp,
                                             unsigned chunks, unsigned m,
                                             const ScheduleOptions &opts) {
  const std::vector<unsigned> &rep = opts.replicas;
  std::string shape;
  for (unsigned r : rep)
    shape += (shape.empty() ? "" : "/") + std::to_string(r);
  auto fail = [&](const Twine &msg) {
    return createStringError(
        inconvertibleErrorCode(),
        formatv("schedule {0} (replicas={1}, micro-batches={2}): ",
                scheduleName(kind), shape, m)
                .str() +
            msg.str());
  };
  if (rep.size() != pp)
    return fail(formatv("{0} replica counts for pp={1}; give one per stage",
                        rep.size(), pp)
                    .str());
  if (chunks != 1)
    return fail("replicated stages need chunks=1");
  if (!supportsReplicas(kind))
    return fail("replicated stages run gpipe, 1f1b, pipedream, "
                "pipedream-2bw or pipemare");
  Schedule s;
  s.kind = kind;
  s.pp = pp;
  s.chunks = 1;
  s.microbatches = m;
  s.replicas = rep;
  s.firstList.push_back(0);
  for (unsigned st = 0; st < pp; ++st) {
    if (rep[st] == 0 || rep[st] > m)
      return fail(formatv("stage {0} has {1} replicas; each needs at least "
                          "one of the {2} micro-batches",
                          st, rep[st], m)
                      .str());
    // Every replica count dividing m, so does their lcm: PipeDream's and
    // PipeMare's rounds (updateRound) are whole.
    if (isAsync(kind) && m % rep[st] != 0)
      return fail(formatv("stage {0}: {1} micro-batches do not split evenly "
                          "over its {2} replicas, but {3} {4}; use a "
                          "multiple of {2}",
                          st, m, rep[st], scheduleName(kind),
                          updatesEveryMicrobatch(kind)
                              ? "updates every stage once per round of "
                                "lcm(replicas) micro-batches, an equal "
                                "share of each replica's"
                              : "syncs the replicas after every micro-batch")
                      .str());
    s.firstList.push_back(s.firstList.back() + rep[st]);
    s.listStage.insert(s.listStage.end(), rep[st], st);
  }
  if (s.firstList.back() > 32767)
    return fail("at most 32767 slots");
  unsigned lists = s.firstList.back();
  s.devices.resize(lists);
  s.weightVersions.assign(lists, 1);
  for (unsigned l = 0; l < lists; ++l) {
    s.devices[l] = addCommunication(s, l, replicatedOrder(s, l), opts);
    if (kind == ScheduleKind::PipeDream2BW)
      s.weightVersions[l] = 2;
  }
  if (kind == ScheduleKind::PipeDream)
    s.weightVersions = maxInFlight(s); // one per in-flight micro-batch
  if (kind == ScheduleKind::PipeMare && opts.pipemareCorrection)
    for (unsigned l = 0; l < lists; ++l) // the velocity beside the weights
      s.weightVersions[l] = updateDelay(s, l) > 0 ? 2 : 1;
  return s;
}

ScheduleOptions scheduleOptions(const Plan &p) {
  ScheduleOptions so;
  so.dataParallel = p.dp * p.cp > 1;
  so.zero = p.zero;
  so.overlapGradSync = p.overlapGradSync;
  so.overlapParamGather = p.overlapParamGather;
  so.replicas = p.replicas;
  so.pipemareCorrection = p.pipemareDecay < 1;
  return so;
}

Expected<Schedule> generateSchedule(ScheduleKind kind, unsigned pp,
                                    unsigned chunks, unsigned m,
                                    const ScheduleOptions &opts) {
  auto fail = [&](const Twine &msg) {
    return createStringError(inconvertibleErrorCode(),
                             formatv("schedule {0} (pp={1}, chunks={2}, "
                                     "micro-batches={3}): ",
                                     scheduleName(kind), pp, chunks, m)
                                     .str() +
                                 msg.str());
  };
  if (pp == 0 || m == 0 || chunks == 0)
    return fail("pp, chunks and micro-batches must all be >= 1");
  if (pp > 32767 || chunks > 127)
    return fail("at most 32767 pipeline ranks and 127 chunks per rank");
  if (!opts.replicas.empty())
    return generateReplicated(kind, pp, chunks, m, opts);
  if (kind == ScheduleKind::Interleaved) {
    if (m % pp != 0)
      return fail("interleaved needs micro-batches to be a multiple of pp");
  } else if (isVShape(kind)) {
    if (chunks != 2)
      return fail("V-shaped schedules run two chunks per rank; use chunks=2");
    if (kind == ScheduleKind::DualPipeV && m < 2 * pp)
      return fail(formatv("dualpipe-v needs at least 2*pp = {0} "
                          "micro-batches",
                          2 * pp)
                      .str());
    if (kind == ScheduleKind::ZBV && m < pp)
      return fail(formatv("zb-v needs at least pp = {0} micro-batches", pp)
                      .str());
  } else if (chunks != 1) {
    return fail("only the interleaved and V-shaped schedules run several "
                "chunks per rank; use chunks=1");
  }
  Schedule s;
  s.kind = kind;
  s.pp = pp;
  s.chunks = chunks;
  s.microbatches = m;
  s.devices.resize(pp);
  s.weightVersions.assign(pp, 1);
  detail::Orders precomputed;
  switch (kind) {
  case ScheduleKind::ZBH1:
  case ScheduleKind::ZBH2:
    precomputed = detail::zeroBubbleOrder(pp, m, kind == ScheduleKind::ZBH2);
    break;
  case ScheduleKind::ZBV:
    precomputed = detail::zbvOrder(pp, m);
    break;
  case ScheduleKind::VHalf:
  case ScheduleKind::VMin:
    precomputed = detail::vPatternOrder(kind, pp, m);
    break;
  case ScheduleKind::DualPipeV:
    precomputed = detail::dualPipeVOrder(pp, m);
    break;
  default:
    break;
  }
  for (unsigned r = 0; r < pp; ++r) {
    std::vector<Action> order;
    switch (kind) {
    case ScheduleKind::GPipe:
      order = gpipe(m);
      break;
    case ScheduleKind::OneFOneB:
    case ScheduleKind::PipeDream:
    case ScheduleKind::PipeDream2BW:
    case ScheduleKind::PipeMare:
      order = oneFOneB(r, pp, m);
      break;
    case ScheduleKind::Interleaved:
      order = interleaved(r, pp, chunks, m);
      break;
    default:
      order = std::move(precomputed[r]);
      break;
    }
    s.devices[r] = addCommunication(s, r, order, opts);
    s.weightVersions[r] =
        weightVersionsOf(kind, pp, r, m, opts.pipemareCorrection);
  }
  return s;
}

Expected<Schedule> generateForwardSchedule(unsigned pp, unsigned m) {
  if (pp == 0 || m == 0 || pp > 32767)
    return createStringError(
        inconvertibleErrorCode(),
        formatv("forward schedule (pp={0}, micro-batches={1}): pp must be in "
                "[1, 32767] and micro-batches at least 1",
                pp, m)
            .str());
  Schedule s;
  s.kind = ScheduleKind::GPipe;
  s.forwardOnly = true;
  s.pp = pp;
  s.microbatches = m;
  s.devices.resize(pp);
  s.weightVersions.assign(pp, 1);
  for (unsigned r = 0; r < pp; ++r)
    for (unsigned i = 0; i < m; ++i) {
      if (r > 0)
        s.devices[r].push_back(Action(ActionKind::RecvActivation, i, 0, r - 1));
      s.devices[r].push_back(Action(ActionKind::Forward, i));
      if (r + 1 < pp)
        s.devices[r].push_back(Action(ActionKind::SendActivation, i, 0, r + 1));
    }
  return s;
}

} // namespace distopt::schedule
