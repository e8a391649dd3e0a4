//===- VGenerators.h - Zero-bubble and V-shaped compute orders --*- C++ -*-===//
//
// Internal to lib/Schedule: the compute order (no communication) of each
// rank for ZB-H1/ZB-H2 (list scheduling of unit passes), ZB-V (the greedy
// of Qi et al.'s reference scheduler), V-Half / V-Min (the repeated V-shaped
// building blocks of "Pipeline Parallelism with Controllable Memory") and
// DualPipe-V (DeepSeek's eight-step order). Generators.cpp adds the
// communication.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_LIB_SCHEDULE_VGENERATORS_H
#define DISTOPT_LIB_SCHEDULE_VGENERATORS_H

#include "lib/Schedule/Schedule.h"

#include <vector>

namespace distopt::schedule::detail {

using Orders = std::vector<std::vector<Action>>;

inline Action compute(ActionKind k, int mb, int chunk = 0) {
  return Action{k, mb, chunk, -1};
}

/// Zero-bubble list scheduling of unit-time F, BI and W on pp ranks: an idle
/// rank runs a BI whose gradient has arrived, else a forward while fewer
/// than \p cap(r) micro-batches are in flight, else a deferred W (forced
/// before the next forward once more than \p wLag are pending).
/// ZB-H1: cap pp - r, wLag pp. ZB-H2: cap 2 (pp - r) - 1, wLag 2 pp.
Orders zeroBubbleOrder(unsigned pp, unsigned m, bool h2);

/// ZB-V: rank r runs chunk 0 (virtual stage r) and chunk 1 (stage
/// 2 pp - 1 - r) at 1F1B's activation memory (2 pp chunk activations).
Orders zbvOrder(unsigned pp, unsigned m);

/// V-Half or V-Min: the building block repeated every six unit passes,
/// weight passes in the free slots.
Orders vPatternOrder(ScheduleKind kind, unsigned pp, unsigned m);

/// DualPipe-V (m >= 2 pp): forwards marked kOverlappedWithNext run as one
/// F&B pair with the backward after them.
Orders dualPipeVOrder(unsigned pp, unsigned m);

} // namespace distopt::schedule::detail

#endif // DISTOPT_LIB_SCHEDULE_VGENERATORS_H
