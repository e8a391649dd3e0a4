//===- VPattern.cpp - V-Half and V-Min building blocks -----------*- C++ -*-===//
//
// The controllable-memory schedules of Qi et al. (arXiv 2405.15362): the
// V-shaped building block repeated every six unit slots, weight passes in
// the free slots, warm-up and cool-down passes compacted under the peak
// memory, squeezed. Checked in test/unit/sim/VScheduleTest.cpp.
//
//===----------------------------------------------------------------------===//

#include "lib/Schedule/VGenerators.h"

#include <algorithm>
#include <array>
#include <limits>
#include <queue>
#include <tuple>

namespace distopt::schedule::detail {

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

} // namespace distopt::schedule::detail
