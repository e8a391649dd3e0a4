//===- Generators.cpp - GPipe, 1F1B, interleaved, ZB-H1, PipeDream -*- C++ -*-//
//
// Each generator fixes the order of compute actions on every rank; one shared
// pass then inserts the receives before, and the sends after, each compute
// action whose neighbour stage lives on another rank, and the DP collectives
// and optimizer step.
//
//===----------------------------------------------------------------------===//

#include "lib/Schedule/Schedule.h"

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
  return s;
}

void Schedule::print(raw_ostream &os) const {
  for (unsigned r = 0; r < devices.size(); ++r) {
    os << "rank " << r << ":";
    for (const Action &a : devices[r])
      os << " " << a.str();
    os << "\n";
  }
}

static Action compute(ActionKind k, int mb, int chunk = 0) {
  return Action{k, mb, chunk, -1};
}

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

/// ZB-H1 (Qi et al., arXiv 2401.10241): the backward is split into B and W.
/// The order comes from list-scheduling unit-time passes, as the paper's
/// heuristic does: an idle rank runs a B whose gradient has arrived, else a
/// forward while fewer than pp - r micro-batches are in flight (1F1B's
/// activation memory), else a deferred W. A rank runs a deferred W before
/// its next forward once more than \p wLag are pending, which bounds the W
/// stashes (pp, the value used, reproduces the analytic ZB-H1 bubble;
/// per-rank lags of pp - r - 1 or pp - r leave 3-8% more bubble).
static std::vector<std::vector<Action>> zbH1(unsigned pp, unsigned m,
                                             unsigned wLag) {
  std::vector<std::vector<Action>> out(pp);
  // Unit times at which activations / gradients become available.
  const unsigned never = ~0u;
  std::vector<std::vector<unsigned>> actAt(pp, std::vector<unsigned>(m, never));
  std::vector<std::vector<unsigned>> gradAt(pp,
                                            std::vector<unsigned>(m, never));
  for (unsigned mb = 0; mb < m; ++mb)
    actAt[0][mb] = 0;
  std::vector<unsigned> nextF(pp, 0), nextB(pp, 0), nextW(pp, 0);
  unsigned remaining = 3 * pp * m;
  for (unsigned t = 0; remaining > 0; ++t) {
    // Decide every rank's pass at time t from state before t, then publish.
    std::vector<std::pair<unsigned, ActionKind>> done;
    for (unsigned r = 0; r < pp; ++r) {
      unsigned f = nextF[r], b = nextB[r], w = nextW[r];
      bool canB = b < f && (r + 1 == pp ? true : gradAt[r][b] <= t);
      bool canF = f < m && actAt[r][f] <= t && f - b < pp - r;
      bool canW = w < b;
      ActionKind k;
      if (canB)
        k = ActionKind::BackwardInput;
      else if (canW && (b - w > wLag || !canF))
        k = ActionKind::BackwardWeight;
      else if (canF)
        k = ActionKind::Forward;
      else
        continue;
      unsigned mb = k == ActionKind::Forward         ? nextF[r]++
                    : k == ActionKind::BackwardInput ? nextB[r]++
                                                     : nextW[r]++;
      out[r].push_back(compute(k, mb));
      done.push_back({r, k});
      --remaining;
    }
    for (auto [r, k] : done) {
      if (k == ActionKind::Forward && r + 1 < pp)
        actAt[r + 1][nextF[r] - 1] = t + 1;
      if (k == ActionKind::BackwardInput && r > 0)
        gradAt[r - 1][nextB[r] - 1] = t + 1;
    }
  }
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
  const unsigned V = s.numVirtualStages(), pp = s.pp;
  const bool async = s.kind == ScheduleKind::PipeDream;
  std::vector<unsigned> gradsLeft(s.chunks, s.microbatches);
  std::vector<Action> out;
  ActionKind syncKind =
      opts.zero >= 1 ? ActionKind::ReduceScatter : ActionKind::AllReduce;
  for (const Action &a : order) {
    unsigned vs = s.stageOf(r, a.chunk);
    int prev = vs > 0 ? static_cast<int>((vs - 1) % pp) : -1;
    int next = vs + 1 < V ? static_cast<int>((vs + 1) % pp) : -1;
    bool prevRemote = prev >= 0 && prev != static_cast<int>(r);
    bool nextRemote = next >= 0 && next != static_cast<int>(r);
    switch (a.kind) {
    case ActionKind::Forward:
      if (prevRemote)
        out.push_back({ActionKind::RecvActivation, a.mb, a.chunk, prev});
      out.push_back(a);
      if (nextRemote)
        out.push_back({ActionKind::SendActivation, a.mb, a.chunk, next});
      break;
    case ActionKind::Backward:
    case ActionKind::BackwardInput:
      if (nextRemote)
        out.push_back({ActionKind::RecvGrad, a.mb, a.chunk, next});
      out.push_back(a);
      if (prevRemote)
        out.push_back({ActionKind::SendGrad, a.mb, a.chunk, prev});
      break;
    default:
      out.push_back(a);
      break;
    }
    bool gradDone =
        a.kind == ActionKind::Backward || a.kind == ActionKind::BackwardWeight;
    if (!gradDone)
      continue;
    if (async) {
      // PipeDream updates after every micro-batch's backward.
      if (opts.dataParallel)
        out.push_back({ActionKind::AllReduce, a.mb, a.chunk, -1});
      out.push_back({ActionKind::OptimizerStep, a.mb, a.chunk, -1});
      continue;
    }
    if (--gradsLeft[a.chunk] == 0 && opts.dataParallel && opts.overlapGradSync)
      out.push_back({syncKind, -1, a.chunk, -1});
  }
  if (!async && opts.dataParallel && !opts.overlapGradSync)
    for (unsigned c = 0; c < s.chunks; ++c)
      out.push_back({syncKind, -1, static_cast<int>(c), -1});
  if (!async) {
    out.push_back({ActionKind::OptimizerStep, -1, 0, -1});
    if (opts.dataParallel && opts.zero >= 1)
      for (unsigned c = 0; c < s.chunks; ++c)
        out.push_back({ActionKind::AllGather, -1, static_cast<int>(c), -1});
  }
  return out;
}

std::vector<RankAction> actionsForRank(const Schedule &s, const Plan &plan,
                                       unsigned rank) {
  unsigned t = rank % plan.tp, d = (rank / plan.tp) % plan.dp;
  unsigned stage = rank / (plan.tp * plan.dp);
  if (stage >= s.devices.size() || stage >= plan.pp)
    return {};
  std::vector<RankAction> out;
  out.reserve(s.devices[stage].size());
  for (const Action &a : s.devices[stage])
    out.push_back({a, a.peer >= 0
                          ? static_cast<int32_t>(globalRank(plan, a.peer, d, t))
                          : -1});
  return out;
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
  if (kind == ScheduleKind::Interleaved) {
    if (m % pp != 0)
      return fail("interleaved needs micro-batches to be a multiple of pp");
  } else if (chunks != 1) {
    return fail("only the interleaved schedule runs several chunks per rank; "
                "use chunks=1");
  }
  Schedule s;
  s.kind = kind;
  s.pp = pp;
  s.chunks = chunks;
  s.microbatches = m;
  s.devices.resize(pp);
  s.weightVersions.assign(pp, 1);
  std::vector<std::vector<Action>> zb;
  for (unsigned r = 0; r < pp; ++r) {
    std::vector<Action> order;
    switch (kind) {
    case ScheduleKind::GPipe:
      order = gpipe(m);
      break;
    case ScheduleKind::OneFOneB:
    case ScheduleKind::PipeDream:
    case ScheduleKind::PipeDream2BW:
      order = oneFOneB(r, pp, m);
      break;
    case ScheduleKind::Interleaved:
      order = interleaved(r, pp, chunks, m);
      break;
    case ScheduleKind::ZBH1:
      if (r == 0)
        zb = zbH1(pp, m, pp);
      order = zb[r];
      break;
    }
    s.devices[r] = addCommunication(s, r, order, opts);
    if (kind == ScheduleKind::PipeDream)
      s.weightVersions[r] = std::min(pp - r, m); // one per in-flight batch
    else if (kind == ScheduleKind::PipeDream2BW)
      s.weightVersions[r] = 2;
  }
  return s;
}

} // namespace distopt::schedule
