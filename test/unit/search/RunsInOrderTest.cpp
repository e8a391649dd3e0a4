//===- RunsInOrderTest.cpp - Lazy candidate order ----------------*- C++
//-*-===//
//
// The search visits its candidates group by group (RunsInOrder): the order
// must be the stable sort of all of them, ties included, which decides
// which variants of a layout dominate the others.
//
//===----------------------------------------------------------------------===//

#include "lib/Search/SearchImpl.h"

#include <gtest/gtest.h>

#include <random>

using distopt::search::detail::RunsInOrder;

namespace {

/// A candidate: its group's bound, its own secondary key, and where the
/// eager enumeration put it.
struct Item {
  double bound;
  unsigned group, secondary, index, count;
};

bool boundFirst(const Item &a, const Item &b) { return a.bound < b.bound; }
bool boundThenSecondary(const Item &a, const Item &b) {
  if (a.bound != b.bound)
    return a.bound < b.bound;
  return a.secondary < b.secondary;
}

} // namespace

TEST(RunsInOrder, VisitsTheStableSortOfAllItems) {
  std::mt19937 rng(11);
  for (unsigned trial = 0; trial < 200; ++trial) {
    SCOPED_TRACE(trial);
    // Few distinct bounds and secondary keys, so that runs of equal
    // bounds span groups and items tie within and across groups; some
    // groups are empty.
    unsigned groups = 1 + rng() % 30, bounds = 1 + rng() % 6;
    std::vector<Item> heads, eager;
    for (unsigned g = 0; g < groups; ++g) {
      Item head{double(rng() % bounds), g, 0, 0, unsigned(rng() % 5)};
      heads.push_back(head);
    }
    std::vector<std::vector<unsigned>> secondary(groups);
    for (unsigned g = 0; g < groups; ++g)
      for (unsigned i = 0; i < heads[g].count; ++i) {
        secondary[g].push_back(rng() % 3);
        eager.push_back({heads[g].bound, g, secondary[g].back(),
                         unsigned(eager.size()), 0});
      }
    std::vector<Item> expected = eager;
    std::stable_sort(expected.begin(), expected.end(), boundThenSecondary);

    unsigned long expanded = 0;
    std::vector<unsigned> firstIndex(groups);
    for (unsigned g = 0, at = 0; g < groups; at += heads[g].count, ++g)
      firstIndex[g] = at;
    RunsInOrder order(heads, boundFirst, boundThenSecondary,
                      [&](const Item &head, std::vector<Item> &out) {
                        ++expanded;
                        for (unsigned i = 0; i < head.count; ++i)
                          out.push_back({head.bound, head.group,
                                         secondary[head.group][i],
                                         firstIndex[head.group] + i, 0});
                      });
    std::vector<unsigned> visited;
    // Stop halfway: the groups of bounds beyond it are never built.
    unsigned stop = expected.size() / 2;
    while (visited.size() < stop) {
      const Item *x = order.peek();
      ASSERT_NE(x, nullptr);
      visited.push_back(x->index);
      order.pop();
    }
    EXPECT_EQ(order.count(), stop);
    for (unsigned i = 0; i < stop; ++i)
      EXPECT_EQ(visited[i], expected[i].index) << "position " << i;
    // Exactly the groups of the runs visited (bounds up to the last
    // item's) are built.
    unsigned long needed = 0;
    double reached = stop ? expected[stop - 1].bound : -1;
    for (const Item &h : heads)
      needed += h.bound <= reached;
    EXPECT_EQ(expanded, needed);
    // The rest, then nothing.
    while (const Item *x = order.peek()) {
      visited.push_back(x->index);
      order.pop();
    }
    ASSERT_EQ(visited.size(), expected.size());
    for (unsigned i = stop; i < expected.size(); ++i)
      EXPECT_EQ(visited[i], expected[i].index) << "position " << i;
    EXPECT_EQ(order.count(), expected.size());
    EXPECT_EQ(expanded, groups);
  }
}
