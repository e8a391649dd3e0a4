//===- distrt/gen/Replica.h - Copies of pipeline state ----------*- C++ -*-===//
//
// Part of the support code of programs dist-compile generates
// (distrt_gen.h includes every piece; docs/resilience.md, "Bamboo's
// runtime").
//
// `--redundant=DIR` (a pipeline training job on CPU, what `dist-run
// --redundant` passes): after every training step each rank r saves its
// own state (weights and optimizer state, what --save-state writes) and
// sends it to rank r-1 (rank 0's to the last rank), which keeps it as the
// redundant copy of its successor's stage. Both go into one folder per
// step, DIR/<r>/step-<k>/{own,copy}/, written as step-<k>.partial and
// renamed in when whole; a rank keeps its newest two steps (a rank may
// have committed step k while a peer, ended mid-exchange, has only k-1,
// and both hold k-1). A rank that ends itself, or that the launcher ends
// (SIGTERM), writes DIR/<r>/ended; one that vanishes (SIGKILL, a machine
// gone) does not, which is how dist-run tells the lost rank from the
// survivors.
//
//===----------------------------------------------------------------------===//
#ifndef DISTRT_GEN_REPLICA_H
#define DISTRT_GEN_REPLICA_H

#include "distrt/gen/Program.h"

namespace dg {

struct Replica {
  std::string dir; ///< --redundant: the job's folder; "" when off
  /// This rank's folder (DIR/<rank>) and its neighbours in the ring.
  std::string mine;
  int successor = 0, predecessor = 0;
  /// What the copies cost this run: steps, seconds (of them, waiting for
  /// the successor's state to arrive) and bytes sent.
  long long steps = 0;
  double seconds = 0, waiting = 0;
  long long bytes = 0;

  bool enabled() const { return !dir.empty(); }

  /// Checks that the run can keep copies (a training run, `--steps`, of a
  /// pipeline program on CPU over its ranks) and sets up DIR/<rank>: its
  /// `ended` marker is written at exit and on SIGTERM. 0, or the exit code
  /// (2) after printing what is wrong and what to do.
  int begin(Program &P, bool training, bool pipeline, bool cuda,
            const std::string &who);

  /// After training step `step`: commits DIR/<rank>/step-<step>/ with this
  /// rank's state (own/) and its successor's (copy/, received), then drops
  /// the steps before step-1. 0, or 1 with P.err set.
  int afterStep(Program &P, long long step);
};

} // namespace dg

#endif // DISTRT_GEN_REPLICA_H
