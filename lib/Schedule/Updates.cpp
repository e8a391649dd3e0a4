//===- Updates.cpp - When asynchronous schedules update ---------*- C++ -*-===//
//
// Part of DistOpt.
//
//===----------------------------------------------------------------------===//

#include "lib/Schedule/Updates.h"

#include <algorithm>
#include <numeric>

namespace distopt::schedule {

unsigned updateRound(ScheduleKind kind, const std::vector<unsigned> &replicas) {
  if (!updatesEveryMicrobatch(kind))
    return 1;
  unsigned round = 1;
  for (unsigned r : replicas)
    round = std::lcm(round, r);
  return round;
}

unsigned updateRound(const Schedule &s) {
  return updateRound(s.kind, s.replicas);
}

unsigned updateDelay(const Schedule &s, unsigned list) {
  // Updates made so far at each forward, by micro-batch.
  std::vector<int> atForward(s.microbatches, -1);
  unsigned updates = 0, delay = 0;
  for (const Action &a : s.devices[list]) {
    if (a.kind == ActionKind::OptimizerStep)
      ++updates;
    else if (a.kind == ActionKind::Forward && a.mb >= 0)
      atForward[a.mb] = static_cast<int>(updates);
    else if ((a.kind == ActionKind::Backward ||
              a.kind == ActionKind::BackwardInput) &&
             a.mb >= 0 && atForward[a.mb] >= 0)
      delay = std::max(delay, updates - atForward[a.mb]);
  }
  return delay;
}

} // namespace distopt::schedule
