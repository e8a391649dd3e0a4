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
  // the warm-up with forwards up to 2 (pp - r) - 1 in flight and runs a W
  // only when nothing else is ready (the parallelogram of Qi et al.).
  const unsigned wLag = h2 ? never : pp;
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

namespace {

/// V-Half / V-Min (Qi et al., "Pipeline Parallelism with Controllable
/// Memory", arXiv 2405.15362; the reference implementation's steps,
/// reimplemented): the building block of each stage is repeated every six
/// unit slots; weight passes go into free slots; warm-up and cool-down
/// passes move to the earliest free slot their dependencies and the peak
/// memory allow; the result is squeezed (executed eagerly in the same
/// order). Pass types: 0 = F (chunk 0), 1 = f (chunk 1), 2 = B (chunk-1
/// backward, it starts at the loss), 3 = b (chunk 0 backward), then the
/// weight passes: one list (4) or one per chunk (4: of B, 5: of b).
class VPattern {
public:
  using Times = std::vector<std::vector<long>>; // [type][mb] -> slot
  using Stages = std::vector<Times>;

  /// Walks the passes of all stages in slot order (ties: stage, then
  /// type), the order the reference processes them in.
  class SlotOrder {
  public:
    explicit SlotOrder(const Stages &st) : st(st) {
      next.assign(st.size(), std::vector<size_t>(st[0].size(), 0));
      for (unsigned i = 0; i < st.size(); ++i)
        for (unsigned t = 0; t < st[i].size(); ++t)
          push(i, t);
    }
    bool empty() const { return heap.empty(); }
    /// The next pass (stage, type, micro-batch); its slot is read now.
    std::tuple<unsigned, unsigned, size_t> pop() {
      auto [slot, i, t] = heap.top();
      heap.pop();
      size_t j = next[i][t]++;
      push(i, t);
      return {i, t, j};
    }

  private:
    void push(unsigned i, unsigned t) {
      if (next[i][t] < st[i][t].size())
        heap.push({st[i][t][next[i][t]], i, t});
    }
    using Key = std::tuple<long, unsigned, unsigned>;
    const Stages &st;
    std::vector<std::vector<size_t>> next;
    std::priority_queue<Key, std::vector<Key>, std::greater<Key>> heap;
  };

  VPattern(ScheduleKind kind, unsigned pp, unsigned m)
      : kind(kind), p(pp), m(m) {}

  Orders run() {
    Stages st(p);
    for (unsigned i = 0; i < p; ++i) {
      std::array<long, 4> off = offsets(i);
      st[i].resize(4);
      for (unsigned t = 0; t < 4; ++t)
        for (unsigned j = 0; j < m; ++j)
          st[i][t].push_back(off[t] + 6 * static_cast<long>(j));
    }
    Stages r1 = reorder(st, /*considerW=*/true);
    for (Times &t : r1)
      t.resize(4);
    Stages r2 = reorder(r1, /*considerW=*/false);
    Orders out(p);
    for (unsigned i = 0; i < p; ++i) {
      r2[i].resize(4);
      putW(r2[i], /*split=*/true);
      // Execution order: by slot, ties by type.
      std::vector<std::tuple<long, unsigned, unsigned>> nodes;
      for (unsigned t = 0; t < r2[i].size(); ++t)
        for (unsigned j = 0; j < r2[i][t].size(); ++j)
          nodes.push_back({r2[i][t][j], t, j});
      std::sort(nodes.begin(), nodes.end());
      static const ActionKind kinds[6] = {
          ActionKind::Forward,        ActionKind::Forward,
          ActionKind::BackwardInput,  ActionKind::BackwardInput,
          ActionKind::BackwardWeight, ActionKind::BackwardWeight};
      static const int chunks[6] = {0, 1, 1, 0, 1, 0};
      for (auto [time, t, j] : nodes)
        out[i].push_back(compute(kinds[t], j, chunks[t]));
    }
    return out;
  }

private:
  std::array<long, 4> offsets(unsigned i) const {
    long pl = p, s = i;
    if (kind == ScheduleKind::VMin) {
      long gap = p % 3 == 0 ? 2 : 0;
      return {s, 2 * pl - s - 1, 2 * pl + gap + s, 4 * pl + gap - s - 1};
    }
    long gap = p % 2 == 0 ? 3 : 0;
    return {2 * s, 3 * pl - s - 2, 3 * pl + gap + 2 * s - 1,
            6 * pl + gap - s - 2};
  }

  static long lastSlot(const Times &t) {
    long b = 0;
    for (const std::vector<long> &v : t)
      if (!v.empty())
        b = std::max(b, v.back());
    return b;
  }

  /// Weight passes in the free slots after their backward (one list, or
  /// one per chunk with chunk 1's first), the rest after the end.
  static void putW(Times &t, bool split) {
    long bound = lastSlot(t);
    t.resize(split ? 6 : 5);
    unsigned cnt[2] = {0, 0};
    std::array<size_t, 4> next{};
    long i = 0;
    for (; i <= bound; ++i) {
      int k = -1;
      for (int x = 0; x < 4; ++x)
        if (next[x] < t[x].size() && t[x][next[x]] == i)
          k = x;
      if (k >= 0) {
        ++next[k];
        if (k >= 2)
          ++cnt[split ? k - 2 : 0];
        continue;
      }
      for (int w = 0; w < 2; ++w)
        if (cnt[w]) {
          t[4 + w].push_back(i);
          --cnt[w];
          break;
        }
    }
    long tail = bound;
    for (int w = 0; w < 2; ++w)
      for (; cnt[w]; --cnt[w])
        t[4 + w].push_back(++tail);
  }

  /// Start slots after eager execution in slot order with unit costs
  /// ("squeeze"): each pass as early as its dependencies and its stage
  /// allow.
  Stages squeeze(const Stages &st) const {
    const unsigned types = st[0].size();
    Stages start(p, Times(types));
    std::vector<std::vector<std::vector<long>>> end(
        p, std::vector<std::vector<long>>(types));
    for (unsigned i = 0; i < p; ++i)
      for (unsigned t = 0; t < types; ++t) {
        start[i][t].assign(st[i][t].size(), 0);
        end[i][t].assign(st[i][t].size(), -1);
      }
    std::vector<long> stageEnd(p, 0);
    for (SlotOrder order(st); !order.empty();) {
      auto [bi, bt, j] = order.pop();
      long dep = stageEnd[bi];
      if ((bt == 0 || bt == 2) && bi > 0)
        dep = std::max(dep, end[bi - 1][bt][j]);
      if ((bt == 1 || bt == 3) && bi + 1 < p)
        dep = std::max(dep, end[bi + 1][bt][j]);
      if (bt > 0 && bt < 4)
        dep = std::max(dep, end[bi][bt - 1][j]);
      if (j > 0)
        dep = std::max(dep, end[bi][bt][j - 1]);
      start[bi][bt][j] = dep;
      end[bi][bt][j] = stageEnd[bi] = dep + 1;
    }
    return start;
  }

  /// One stage's slots with the memory walk of peakMemory after each slot,
  /// so that moving one pass earlier is checked without a full walk.
  struct Timeline {
    std::vector<int> type; ///< pass type in each slot, or -1
    bool explicitW = false;
    std::vector<long> mem, pend, prefixPeak; ///< after each slot

    Timeline(const Times &t, bool explicitW) : explicitW(explicitW) {
      type.assign(lastSlot(t) + 1, -1);
      for (unsigned x = 0; x < t.size(); ++x)
        for (long v : t[x])
          type[v] = x;
      mem.assign(type.size(), 0);
      pend = prefixPeak = mem;
      rewalk(0);
    }
    /// One slot of the walk from (cur, pending).
    void step(int x, long &cur, long &pending) const {
      if (x >= 0) {
        cur += x < 2 ? 1 : x >= 4 ? -1 : 0;
        if (x == 2 || x == 3)
          ++pending;
      } else if (!explicitW && pending) {
        --cur;
        --pending;
      }
    }
    void rewalk(long from) {
      long cur = from ? mem[from - 1] : 0, pending = from ? pend[from - 1] : 0;
      long peak = from ? prefixPeak[from - 1] : 0;
      for (size_t i = from; i < type.size(); ++i) {
        step(type[i], cur, pending);
        mem[i] = cur;
        pend[i] = pending;
        prefixPeak[i] = peak = std::max(peak, cur);
      }
    }
    /// Whether the pass in slot \p from may move to the free slot \p to
    /// (< from) without the stage's memory exceeding \p limit.
    bool fits(long from, long to, long limit) const {
      int x = type[from];
      if (explicitW) {
        // Prefix sums: only a forward raises [to, from) by one.
        if (x >= 2)
          return true;
        for (long i = to; i < from; ++i)
          if (mem[i] + 1 > limit)
            return false;
        return true;
      }
      long cur = to ? mem[to - 1] : 0, pending = to ? pend[to - 1] : 0;
      if (to && prefixPeak[to - 1] > limit)
        return false;
      for (size_t i = to; i < type.size(); ++i) {
        int y = static_cast<long>(i) == to     ? x
                : static_cast<long>(i) == from ? -1
                                               : type[i];
        step(y, cur, pending);
        if (cur > limit)
          return false;
      }
      return true;
    }
    void move(long from, long to) {
      int x = type[from];
      type[to] = x;
      type[from] = -1;
      if (!explicitW) {
        rewalk(to);
        return;
      }
      // Prefix sums (prefixPeak is only read without explicit Ws).
      long delta = x < 2 ? 1 : x >= 4 ? -1 : 0;
      for (long i = to; i < from; ++i)
        mem[i] += delta;
    }
  };

  /// Moves warm-up (with explicit W passes) and cool-down passes to the
  /// earliest free slot after their dependencies that keeps the peak
  /// memory, then squeezes.
  Stages reorder(Stages st, bool considerW) const {
    if (considerW)
      for (Times &t : st)
        putW(t, /*split=*/false);
    long peak = 0;
    std::vector<Timeline> line;
    for (const Times &t : st) {
      line.emplace_back(t, considerW);
      peak = std::max(peak, line.back().prefixPeak.back());
    }
    std::vector<std::vector<char>> occupied(p);
    for (unsigned i = 0; i < p; ++i)
      occupied[i].assign(line[i].type.size(), 0);
    int phase = 0;
    for (SlotOrder order(st); !order.empty();) {
      auto [i, t, j] = order.pop();
      long at = st[i][t][j];
      if (t == 3 && i == 0 && phase == 0)
        phase = 1;
      if (phase == 1 || (phase == 0 && !considerW)) {
        if (phase == 1 && t == 0 && j + 1 == st[0][0].size())
          phase = 2;
        occupied[i][at] = 1;
        continue;
      }
      long dep = -1;
      if ((t == 0 || t == 2) && i > 0)
        dep = std::max(dep, st[i - 1][t][j]);
      if ((t == 1 || t == 3) && i + 1 < p)
        dep = std::max(dep, st[i + 1][t][j]);
      if (t > 0 && t < 4)
        dep = std::max(dep, st[i][t - 1][j]);
      if (t == 4) {
        std::vector<long> bs(st[i][2]);
        bs.insert(bs.end(), st[i][3].begin(), st[i][3].end());
        std::nth_element(bs.begin(), bs.begin() + j, bs.end());
        dep = std::max(dep, bs[j]);
      }
      if (j > 0)
        dep = std::max(dep, st[i][t][j - 1]);
      // A forward with explicit Ws raises [slot, at) by one: the suffix
      // maxima of the memory decide every slot at once.
      std::vector<long> above;
      if (considerW && t < 2 && at > dep + 1) {
        above.assign(at - dep - 1, 0);
        long run = std::numeric_limits<long>::min();
        for (long k = at - 1; k > dep; --k)
          above[k - dep - 1] = run = std::max(run, line[i].mem[k]);
      }
      for (long slot = dep + 1; slot < at; ++slot) {
        if (occupied[i][slot])
          continue;
        if (!above.empty() ? above[slot - dep - 1] + 1 > peak
                           : !line[i].fits(at, slot, peak))
          continue;
        st[i][t][j] = slot;
        line[i].move(at, slot);
        break;
      }
      occupied[i][st[i][t][j]] = 1;
    }
    if (!considerW)
      for (Times &t : st)
        putW(t, /*split=*/false);
    return squeeze(st);
  }

  ScheduleKind kind;
  unsigned p, m;
};

} // namespace

Orders vPatternOrder(ScheduleKind kind, unsigned pp, unsigned m) {
  return VPattern(kind, pp, m).run();
}

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
