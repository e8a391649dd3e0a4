//===- distrt/gen/Profile.h - Per-op timing of generated programs ---------===//
//
// Part of the support code of programs dist-compile generates
// (distrt_gen.h includes every piece; docs/codegen.md, "Profiling").
//
// `--profile` times every emitted kernel (one runtime call, one generated
// loop or one fused kernel) and every run, by the wall clock and by the
// process's CPU time; the report gives both per op kind and per op.
// `--profile-json FILE` writes the wall times as the cost model's profile
// database (lib/Cost/ProfileDB.h): one entry per cost signature the
// compiler attached to the op, with the mean forward time of the ops that
// share it.
//
//===----------------------------------------------------------------------===//
#ifndef DISTRT_GEN_PROFILE_H
#define DISTRT_GEN_PROFILE_H

#include "distrt/gen/Common.h"

#include <chrono>
#include <ctime>

namespace dg {

/// What the compiler knows about one emitted op: its kind (the graph op, or
/// the fused kernel's anchor), where it came from, its cost-model signature
/// ("" when the cost model has none), its training phase ("" outside
/// training programs), the forward op whose profile entry it belongs to
/// (-1: its own; the backward ops of a forward op carry its number) and
/// the parameters it updates.
struct OpInfo {
  const char *kind;
  const char *where;
  const char *signature;
  const char *phase;
  int instance;
  /// Parameters a parameter update (sgd, adam) writes; 0 for other ops.
  long long updated;
};

inline double wallSeconds() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// The CPU time of the whole process, user + system, all threads: the
/// OpenMP team's workers run the kernels beside the calling thread (the
/// calling thread's own clock would miss their work). While an op runs,
/// workers that spin at a barrier waiting for work count too.
inline double cpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/// Both clocks as an op (or a run) starts.
struct ProfClocks {
  double wall = 0, cpu = 0;
};

/// Both clocks, the CPU time read within the wall-clock interval: a span
/// from one start() to a stop() has its CPU time measured over a
/// sub-interval of its wall time.
inline ProfClocks profClocksStart() {
  ProfClocks c;
  c.wall = wallSeconds();
  c.cpu = cpuSeconds();
  return c;
}
inline ProfClocks profClocksStop() {
  ProfClocks c;
  c.cpu = cpuSeconds();
  c.wall = wallSeconds();
  return c;
}

/// Accumulates per-op and per-run times, wall and CPU. The first run is
/// kept apart when there are several (it loads weights and creates
/// kernels).
struct Profiler {
  const OpInfo *ops = nullptr;
  int numOps = 0;
  std::vector<double> first, steady, firstCpu, steadyCpu;
  /// Whether each op ran (a pipeline rank runs only its stages' ops).
  std::vector<char> ran;
  std::vector<double> runs, cpuRuns;
  ProfClocks runStart;
  bool inFirst = true;
  /// Whether the report ranks ops by CPU time (host programs) or by wall
  /// time (device programs, whose kernels the host's CPU clock does not
  /// see: the host waits for them).
  bool byCpu = true;

  void init(const OpInfo *o, int n, bool rankByCpu) {
    ops = o;
    numOps = n;
    byCpu = rankByCpu;
    for (std::vector<double> *v : {&first, &steady, &firstCpu, &steadyCpu})
      v->assign((size_t)n, 0.0);
    ran.assign((size_t)n, 0);
  }
  void beginRun() { runStart = profClocksStart(); }
  void endRun() {
    ProfClocks end = profClocksStop();
    runs.push_back(end.wall - runStart.wall);
    cpuRuns.push_back(end.cpu - runStart.cpu);
    inFirst = false;
  }
  void add(int id, const ProfClocks &start, const ProfClocks &end) {
    if (id >= 0 && id < numOps) {
      (inFirst ? first : steady)[(size_t)id] += end.wall - start.wall;
      (inFirst ? firstCpu : steadyCpu)[(size_t)id] += end.cpu - start.cpu;
      ran[(size_t)id] = 1;
    }
  }
  /// Per-op seconds per run (CPU or wall): steady runs when there are any,
  /// else the first.
  std::vector<double> perRun(bool cpu = false) const;
  double medianRun(bool cpu = false) const;

  /// The report: runs, then time per op kind, then per op (slowest first),
  /// wall and CPU time side by side.
  void print(FILE *out) const;

  /// Writes the profile database (docs/cost-model.md): per signature and
  /// phase, the mean over the op instances that carry it of each
  /// instance's time (the ops of one instance, such as the dX and dW
  /// matmuls and the bias reduction of one linear layer's backward, add
  /// up; an op without an instance is one of its own). `tp`: the
  /// tensor-parallel degree the ops ran split by (their signatures are the
  /// whole ops').
  int writeJson(const std::string &path, const std::string &device,
                int64_t microBatch, int tp, Error &err) const;
};

} // namespace dg

#endif // DISTRT_GEN_PROFILE_H
