//===- VGenerators.cpp - Zero-bubble and V-shaped compute orders -*- C++ -*-===//
//
// Unit-time constructions: every F, BI and W of one chunk takes one unit,
// communication none; the orders they produce are then run with real costs
// by the simulator. The bubble formulas they reproduce are checked in
// test/unit/sim/VScheduleTest.cpp.
//
//===----------------------------------------------------------------------===//

#include "lib/Schedule/VGenerators.h"

#include <algorithm>
#include <array>
#include <deque>
#include <limits>
#include <queue>
#include <tuple>

namespace distopt::schedule::detail {

Orders zeroBubbleOrder(unsigned pp, unsigned m, bool h2) {
  Orders out(pp);
  // Unit times at which activations / gradients become available.
  const unsigned never = ~0u;
  std::vector<std::vector<unsigned>> actAt(pp, std::vector<unsigned>(m, never));
  std::vector<std::vector<unsigned>> gradAt(pp,
                                            std::vector<unsigned>(m, never));
  for (unsigned mb = 0; mb < m; ++mb)
    actAt[0][mb] = 0;
  std::vector<unsigned> nextF(pp, 0), nextB(pp, 0), nextW(pp, 0);
  // ZB-H1 keeps 1F1B's in-flight count and forces a W once more than pp
  // are pending (which reproduces the analytic ZB-H1 bubble); ZB-H2 fills
  // the warm-up with forwards up to 2 (pp - r) - 1 in flight (the
  // parallelogram of Qi et al.) and forces a W once more than 2 pp are
  // pending: that bounds the weight-gradient stashes and still gives the
  // exact (p-1)(T_F + T_B - 2 T_W) (smaller lags do not).
  const unsigned wLag = h2 ? 2 * pp : pp;
  auto cap = [&](unsigned r) { return h2 ? 2 * (pp - r) - 1 : pp - r; };
  unsigned remaining = 3 * pp * m;
  for (unsigned t = 0; remaining > 0; ++t) {
    // Decide every rank's pass at time t from state before t, then publish.
    std::vector<std::pair<unsigned, ActionKind>> done;
    for (unsigned r = 0; r < pp; ++r) {
      unsigned f = nextF[r], b = nextB[r], w = nextW[r];
      bool canB = b < f && (r + 1 == pp ? true : gradAt[r][b] <= t);
      bool canF = f < m && actAt[r][f] <= t && f - b < cap(r);
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

namespace {

/// The ZB-V greedy of Qi et al. (reference scheduler zbv.py, reimplemented):
/// warm-up forwards as memory allows, then rounds of backwards and forwards
/// in which a deferred W fills any wait, retried with the stage bubbles of
/// the previous attempt as a budget until the largest bubble stops
/// shrinking. Passes are categories F = 0, B (input grad) = 1, W = 2; the
/// forward chunk c flows from rank 0 up (c = 0) or back down (c = 1); for
/// backward passes "chunk" is the direction, so backward chunk 0 is the
/// gradient of forward chunk 1 (it starts at the loss on rank 0).
class ZbvGreedy {
public:
  ZbvGreedy(unsigned pp, unsigned m) : p(pp), m(m) {}

  /// Runs the four variants of the reference and keeps the best.
  Orders run() {
    Attempt best;
    bool have = false;
    for (bool fillB : {true, false})
      for (bool fillF : {true, false}) {
        Attempt a = attempt(fillF, fillB, {});
        if (!have || a.maxBubble < best.maxBubble) {
          best = std::move(a);
          have = true;
        }
      }
    return toOrders(best);
  }

private:
  struct Pass {
    unsigned cat, chunk, mb;
  };
  struct Attempt {
    std::vector<std::vector<Pass>> order;
    double maxBubble = std::numeric_limits<double>::infinity();
    std::vector<double> stageBubble;
  };

  // Unit costs and memory (F holds two units, its B and W release one each;
  // 4 pp units = 2 pp chunk activations, 1F1B's peak).
  static constexpr double kCost[3] = {1, 1, 1};
  static constexpr int kMem[3] = {2, -1, -1};

  size_t id(unsigned cat, unsigned chunk, unsigned stage, unsigned mb) const {
    return ((static_cast<size_t>(cat) * 2 + chunk) * p + stage) * m + mb;
  }

  Attempt attempt(bool fillF, bool fillB, const std::vector<double> &approved);
  Orders toOrders(const Attempt &a) const;

  unsigned p, m;
};

constexpr double ZbvGreedy::kCost[3];
constexpr int ZbvGreedy::kMem[3];

ZbvGreedy::Attempt ZbvGreedy::attempt(bool fillF, bool fillB,
                                      const std::vector<double> &approved) {
  const int maxMem = kMem[0] * 2 * static_cast<int>(p);
  std::vector<std::array<unsigned, 6>> count(p, std::array<unsigned, 6>{});
  std::vector<double> end(6 * static_cast<size_t>(p) * m, -1), cur(p, 0),
      bubble(p, 0);
  std::vector<int> mem(p, 0);
  std::vector<std::deque<unsigned>> pendingW(p);
  std::vector<std::vector<Pass>> order(p);
  double maxApproved = -1;
  for (double b : approved)
    maxApproved = std::max(maxApproved, b);
  auto maxStageBubble = [&](int stage) {
    double b = 0;
    for (double x : bubble)
      b = std::max(b, x);
    if (stage >= 0 && !approved.empty())
      b = std::max(b, maxApproved - approved[stage]);
    return b;
  };
  auto put = [&](unsigned cat, unsigned chunk, unsigned stage) {
    unsigned k = count[stage][cat * 2 + chunk];
    if (k >= m)
      return;
    double noBubble = cur[stage] + kCost[cat];
    double t = noBubble;
    // F and B of a chunk wait for the neighbour they come from.
    if (cat < 2 && chunk == 1 && stage + 1 < p)
      t = std::max(t, end[id(cat, 1, stage + 1, k)] + kCost[cat]);
    if (cat < 2 && chunk == 0 && stage > 0)
      t = std::max(t, end[id(cat, 0, stage - 1, k)] + kCost[cat]);
    if (count[stage][0] > 0)
      bubble[stage] += t - noBubble;
    end[id(cat, chunk, stage, k)] = t;
    cur[stage] = t;
    mem[stage] += kMem[cat];
    order[stage].push_back({cat, chunk, k});
    if (cat == 1)
      pendingW[stage].push_back(chunk);
    ++count[stage][cat * 2 + chunk];
  };
  auto putW = [&](unsigned stage) {
    unsigned chunk = pendingW[stage].front();
    pendingW[stage].pop_front();
    put(2, chunk, stage);
  };
  auto ended = [&](size_t i) { return end[i] >= 0; };
  // Fill the wait for the pass that \p dep feeds with deferred Ws; spend
  // the bubble budget on one more when the wait exceeds it.
  auto fillWait = [&](unsigned i, long dep, bool allow) {
    while (!pendingW[i].empty() && dep >= 0 &&
           end[dep] >= cur[i] + kCost[2])
      putW(i);
    if (!pendingW[i].empty() && dep >= 0 &&
        end[dep] - cur[i] > maxStageBubble(i) - bubble[i] && allow)
      putW(i);
  };

  // Warm-up: one chunk-0 forward everywhere, then chunk-1 forwards from the
  // last rank down, more chunk-0 forwards while memory allows and the
  // chunk-1 activation has not arrived.
  for (unsigned i = 0; i < p; ++i)
    put(0, 0, i);
  for (unsigned i = p; i-- > 0;) {
    if (i == p - 1) {
      put(0, 1, i);
      continue;
    }
    double arrive = end[id(0, 1, i + 1, 0)];
    while (mem[i] + kMem[0] * (2 + 2 * static_cast<int>(i)) <= maxMem &&
           cur[i] + kCost[0] <= arrive && count[i][0] < m)
      for (unsigned j = 0; j <= i; ++j)
        put(0, 0, j);
    put(0, 1, i);
  }
  unsigned chunk = 0;
  for (unsigned i = 1; i < p; ++i)
    for (unsigned guard = 0;
         guard < 4 * m &&
         (count[i][0] + count[i][1] < count[i - 1][0] + count[i - 1][1] ||
          (count[i][1] <= count[i - 1][1] && count[i - 1][1] < m));
         ++guard) {
      for (unsigned j = p; j-- > i;)
        put(0, chunk, j);
      chunk = 1 - chunk;
    }

  for (unsigned round = 0; round < 2 * m; ++round) {
    // Backwards: direction 1 (towards rank 0's loss... the reference's
    // "b1" ranks) from the last rank down, then direction 0 ranks.
    std::vector<unsigned> b0, b1;
    for (unsigned i = 0; i < p; ++i) {
      if (count[i][3] >= count[i][2])
        b0.push_back(i);
      else if (i == p - 1)
        b1.push_back(i);
      else if (ended(id(1, 1, i + 1, count[i][3])) || count[i][2] >= m)
        b1.push_back(i);
      else
        b0.push_back(i);
    }
    std::vector<std::pair<unsigned, unsigned>> bs;
    for (unsigned k = b1.size(); k-- > 0;)
      bs.push_back({b1[k], 1});
    for (unsigned i : b0)
      bs.push_back({i, 0});
    for (auto [i, c] : bs) {
      long dep = -1;
      if (c == 1 && i + 1 < p)
        dep = id(1, 1, i + 1, count[i][3]);
      if (c == 0 && i > 0)
        dep = id(1, 0, i - 1, count[i][2]);
      fillWait(i, dep, c == 1 || fillB);
      put(1, c, i);
    }
    // Forwards.
    for (unsigned i = 0; i < p; ++i) {
      if (count[i][1] >= m)
        continue;
      int item = -1;
      if (count[i][1] >= count[i][0])
        item = 0;
      else if (i == p - 1)
        item = 1;
      else if (ended(id(0, 1, i + 1, count[i][1])))
        item = 1;
      else if (count[i][0] < m &&
               (i == 0 || ended(id(0, 0, i - 1, count[i][0]))))
        item = 0;
      if (item < 0)
        continue;
      while (mem[i] + kMem[0] > maxMem && !pendingW[i].empty())
        putW(i);
      long dep = -1;
      if (item == 0 && i > 0)
        dep = id(0, 0, i - 1, count[i][0]);
      if (item == 1 && i + 1 < p)
        dep = id(0, 1, i + 1, count[i][1]);
      fillWait(i, dep, fillF);
      put(0, item, i);
    }
  }
  for (unsigned i = 0; i < p; ++i)
    while (!pendingW[i].empty())
      putW(i);

  Attempt a;
  a.order = std::move(order);
  a.maxBubble = maxStageBubble(-1);
  a.stageBubble = bubble;
  if (maxApproved < 0 || a.maxBubble < maxApproved) {
    Attempt again = attempt(fillF, fillB, a.stageBubble);
    if (again.maxBubble < a.maxBubble)
      return again;
  }
  return a;
}

Orders ZbvGreedy::toOrders(const Attempt &a) const {
  Orders out(p);
  for (unsigned r = 0; r < p; ++r)
    for (const Pass &x : a.order[r]) {
      // Backward "chunk" is the direction: chunk 0 is the gradient of the
      // chunk-1 forward.
      int chunk = x.cat == 0 ? x.chunk : 1 - x.chunk;
      ActionKind k = x.cat == 0   ? ActionKind::Forward
                     : x.cat == 1 ? ActionKind::BackwardInput
                                  : ActionKind::BackwardWeight;
      out[r].push_back(compute(k, x.mb, chunk));
    }
  return out;
}

} // namespace

Orders zbvOrder(unsigned pp, unsigned m) { return ZbvGreedy(pp, m).run(); }

Orders dualPipeVOrder(unsigned pp, unsigned m) {
  Orders out(pp);
  for (unsigned r = 0; r < pp; ++r) {
    std::vector<Action> &o = out[r];
    unsigned nF[2] = {0, 0}, nB[2] = {0, 0};
    std::deque<std::pair<unsigned, int>> weights; // deferred W, FIFO
    auto F = [&](int c, bool overlapped = false) {
      Action a = compute(ActionKind::Forward, nF[c]++, c);
      if (overlapped)
        a.peer = kOverlappedWithNext;
      o.push_back(a);
    };
    // A backward; zero-bubble ones defer their weight gradient.
    auto B = [&](int c, bool zb) {
      unsigned mb = nB[c]++;
      o.push_back(compute(zb ? ActionKind::BackwardInput : ActionKind::Backward,
                          mb, c));
      if (zb)
        weights.push_back({mb, c});
    };
    auto W = [&] {
      o.push_back(compute(ActionKind::BackwardWeight, weights.front().first,
                          weights.front().second));
      weights.pop_front();
    };
    const unsigned d = pp;
    // 1: chunk-0 warm-up forwards.
    for (unsigned i = 0; i < 2 * (d - r - 1); ++i)
      F(0);
    // 2: F0 F1 pairs.
    for (unsigned i = 0; i < r + 1; ++i) {
      F(0);
      F(1);
    }
    // 3: B1 W F1 (zero bubble).
    for (unsigned i = 0; i < d - r - 1; ++i) {
      B(1, true);
      W();
      F(1);
    }
    // 4: the main step, F0&B1 then F1&B0 (the last rank runs its first F0
    // and B1 apart).
    for (unsigned i = 0; i < m - 2 * d + r + 1; ++i) {
      F(0, !(i == 0 && r == d - 1));
      B(1, false);
      F(1, true);
      B(0, false);
    }
    // 5: B1, F1&B0.
    for (unsigned i = 0; i < d - r - 1; ++i) {
      B(1, false);
      F(1, true);
      B(0, false);
    }
    // 6: B1 B0, the second half with deferred weight gradients.
    bool zb = false;
    for (unsigned i = 0; i < r + 1; ++i) {
      if (i == (r + 1) / 2 && r % 2 == 1)
        zb = true;
      B(1, zb);
      if (i == (r + 1) / 2 && r % 2 == 0)
        zb = true;
      B(0, zb);
    }
    // 7: W B0 (zero bubble). 8: the remaining Ws.
    for (unsigned i = 0; i < d - r - 1; ++i) {
      W();
      B(0, true);
    }
    while (!weights.empty())
      W();
  }
  return out;
}

} // namespace distopt::schedule::detail
