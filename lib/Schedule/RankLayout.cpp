//===- RankLayout.cpp - Which device runs which part of a plan --*- C++ -*-===//
//
// Part of DistOpt.
//
//===----------------------------------------------------------------------===//
#include "lib/Schedule/RankLayout.h"

#include <algorithm>

namespace distopt::schedule {

unsigned RankLayout::firstSlot(unsigned s) const {
  if (replicas.empty())
    return dp * s;
  unsigned slot = 0;
  for (unsigned i = 0; i < s && i < replicas.size(); ++i)
    slot += replicas[i];
  return slot;
}

uint64_t RankLayout::numSlots() const {
  if (replicas.empty())
    return static_cast<uint64_t>(dp) * pp;
  uint64_t n = 0;
  for (unsigned r : replicas)
    n += r;
  return n;
}

std::vector<unsigned> RankLayout::stageDevices(unsigned s) const {
  std::vector<unsigned> ids;
  unsigned n = replicasOf(s);
  ids.reserve(static_cast<size_t>(n) * cp * tp);
  for (unsigned d = 0; d < n; ++d)
    for (unsigned c = 0; c < cp; ++c)
      for (unsigned t = 0; t < tp; ++t)
        ids.push_back(globalRank(s, d, t, c));
  return ids;
}

std::vector<std::vector<unsigned>> RankLayout::tensorGroups(unsigned s) const {
  std::vector<std::vector<unsigned>> groups;
  for (unsigned d = 0; d < replicasOf(s); ++d)
    for (unsigned c = 0; c < cp; ++c) {
      std::vector<unsigned> &g = groups.emplace_back();
      for (unsigned t = 0; t < tp; ++t)
        g.push_back(globalRank(s, d, t, c));
    }
  return groups;
}

std::vector<std::vector<unsigned>> RankLayout::contextGroups(unsigned s) const {
  std::vector<std::vector<unsigned>> groups;
  for (unsigned d = 0; d < replicasOf(s); ++d)
    for (unsigned t = 0; t < tp; ++t) {
      std::vector<unsigned> &g = groups.emplace_back();
      for (unsigned c = 0; c < cp; ++c)
        g.push_back(globalRank(s, d, t, c));
    }
  return groups;
}

std::vector<std::vector<unsigned>> RankLayout::replicaGroups(unsigned s) const {
  std::vector<std::vector<unsigned>> groups;
  for (unsigned c = 0; c < cp; ++c)
    for (unsigned t = 0; t < tp; ++t) {
      std::vector<unsigned> &g = groups.emplace_back();
      for (unsigned d = 0; d < replicasOf(s); ++d)
        g.push_back(globalRank(s, d, t, c));
    }
  return groups;
}

std::vector<unsigned> RankLayout::expertGroup(unsigned s, unsigned ep,
                                              unsigned first, unsigned t,
                                              unsigned c) const {
  std::vector<unsigned> g;
  for (unsigned d = first; d < first + ep && d < replicasOf(s); ++d)
    g.push_back(globalRank(s, d, t, c));
  return g;
}

std::vector<std::vector<unsigned>> RankLayout::expertGroups(unsigned s,
                                                            unsigned ep) const {
  std::vector<std::vector<unsigned>> groups;
  for (unsigned first = 0; first < replicasOf(s); first += ep)
    for (unsigned c = 0; c < cp; ++c)
      for (unsigned t = 0; t < tp; ++t)
        groups.push_back(expertGroup(s, ep, first, t, c));
  return groups;
}

std::vector<unsigned> RankLayout::expertDataGroup(unsigned s, unsigned ep,
                                                  unsigned i,
                                                  unsigned t) const {
  std::vector<unsigned> g;
  for (unsigned d = i; d < replicasOf(s); d += std::max(1u, ep))
    for (unsigned c = 0; c < cp; ++c)
      g.push_back(globalRank(s, d, t, c));
  return g;
}

std::vector<std::vector<unsigned>>
RankLayout::expertDataGroups(unsigned s, unsigned ep) const {
  std::vector<std::vector<unsigned>> groups;
  for (unsigned i = 0; i < ep; ++i)
    for (unsigned t = 0; t < tp; ++t)
      groups.push_back(expertDataGroup(s, ep, i, t));
  return groups;
}

std::vector<std::vector<unsigned>>
RankLayout::replicaContextGroups(unsigned s) const {
  std::vector<std::vector<unsigned>> groups;
  for (unsigned t = 0; t < tp; ++t) {
    std::vector<unsigned> &g = groups.emplace_back();
    for (unsigned d = 0; d < replicasOf(s); ++d)
      for (unsigned c = 0; c < cp; ++c)
        g.push_back(globalRank(s, d, t, c));
  }
  return groups;
}

std::optional<RankLayout::Coord> RankLayout::coordOf(unsigned rank) const {
  if (tp == 0 || cp == 0 || rank >= numDevices())
    return std::nullopt;
  unsigned slot = rank / tp / cp;
  Coord c;
  c.tensor = rank % tp;
  c.context = rank / tp % cp;
  for (unsigned s = 0; s < pp; ++s) {
    unsigned first = firstSlot(s), n = replicasOf(s);
    if (slot < first + n) {
      c.stage = s;
      c.replica = slot - first;
      return c;
    }
  }
  return std::nullopt;
}

} // namespace distopt::schedule
