//===- Updates.cpp - When asynchronous schedules update ---------*- C++ -*-===//
//
// Part of DistOpt.
//
//===----------------------------------------------------------------------===//

#include "lib/Schedule/Updates.h"

#include <algorithm>
#include <numeric>

namespace distopt::schedule {

unsigned updateRound(const Schedule &s) {
  if (!updatesEveryMicrobatch(s.kind))
    return 1;
  unsigned round = 1;
  for (unsigned r : s.replicas)
    round = std::lcm(round, r);
  return round;
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
