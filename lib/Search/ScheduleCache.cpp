//===- ScheduleCache.cpp - Generated schedules, built once ------*- C++ -*-===//
//
// Part of DistOpt. The search's simulations share schedules; see
// ScheduleCache in SearchImpl.h.
//
//===----------------------------------------------------------------------===//

#include "lib/Search/SearchImpl.h"

using namespace llvm;
using namespace distopt;

namespace distopt::search::detail {

Expected<const schedule::Schedule *>
ScheduleCache::get(const schedule::Plan &p) {
  schedule::ScheduleOptions so = schedule::scheduleOptions(p);
  Key key{static_cast<unsigned>(p.schedule),
          p.pp,
          p.chunks,
          p.numMicrobatches,
          so.dataParallel,
          so.zero,
          so.overlapGradSync,
          so.overlapParamGather,
          so.pipemareCorrection,
          so.replicas};
  auto it = built.find(key);
  if (it != built.end())
    return &it->second;
  Expected<schedule::Schedule> s = schedule::generateSchedule(
      p.schedule, p.pp, p.chunks, p.numMicrobatches, so);
  if (!s)
    return s.takeError();
  if (Error e = schedule::verifySchedule(*s))
    return std::move(e);
  return &built.emplace(std::move(key), std::move(*s)).first->second;
}

} // namespace distopt::search::detail
