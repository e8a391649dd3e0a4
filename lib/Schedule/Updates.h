//===- Updates.h - When asynchronous schedules update -----------*- C++ -*-===//
//
// Part of DistOpt. PipeDream and PipeMare update after every micro-batch;
// with per-stage replicas every stage updates once per round of
// micro-batches. What the generator, the programs and the references
// share about those updates.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_LIB_SCHEDULE_UPDATES_H
#define DISTOPT_LIB_SCHEDULE_UPDATES_H

#include "lib/Schedule/Schedule.h"

namespace distopt::schedule {

/// Micro-batches one update of PipeDream or PipeMare covers: with
/// per-stage replicas a round of lcm(replicas) consecutive micro-batches,
/// every stage updating once per round with the round's mean gradient (a
/// stage's replicas each hold a share); 1 otherwise.
unsigned updateRound(const Schedule &s);
/// The same for schedule \p kind over stages of \p replicas replicas each
/// (empty: no per-stage replicas).
unsigned updateRound(ScheduleKind kind, const std::vector<unsigned> &replicas);

/// The most optimizer steps list \p list runs between a micro-batch's
/// forward and its backward: the delay of an asynchronous schedule's stage
/// in updates (without replicas min(pp - s - 1, m - 1) under PipeDream's
/// 1F1B order).
unsigned updateDelay(const Schedule &s, unsigned list);

} // namespace distopt::schedule

#endif // DISTOPT_LIB_SCHEDULE_UPDATES_H
