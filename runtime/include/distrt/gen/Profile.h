//===- distrt/gen/Profile.h - Per-op timing of generated programs ---------===//
//
// Part of the support code of programs dist-compile generates
// (distrt_gen.h includes every piece; docs/codegen.md, "Profiling").
//
// `--profile` times every emitted kernel (one runtime call, one generated
// loop or one fused kernel) and every run; the report gives the time per
// op kind and per op. `--profile-json FILE` writes the same measurements as
// the cost model's profile database (lib/Cost/ProfileDB.h): one entry per
// cost signature the compiler attached to the op, with the mean forward
// time of the ops that share it.
//
//===----------------------------------------------------------------------===//
#ifndef DISTRT_GEN_PROFILE_H
#define DISTRT_GEN_PROFILE_H

#include "distrt/gen/Common.h"

#include <chrono>

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

/// Accumulates per-op and per-run times. The first run is kept apart when
/// there are several (it loads weights and creates kernels).
struct Profiler {
  const OpInfo *ops = nullptr;
  int numOps = 0;
  std::vector<double> first, steady;
  /// Whether each op ran (a pipeline rank runs only its stages' ops).
  std::vector<char> ran;
  std::vector<double> runs;
  double runStart = 0;
  bool inFirst = true;

  void init(const OpInfo *o, int n) {
    ops = o;
    numOps = n;
    first.assign((size_t)n, 0.0);
    steady.assign((size_t)n, 0.0);
    ran.assign((size_t)n, 0);
  }
  void beginRun() { runStart = wallSeconds(); }
  void endRun() {
    runs.push_back(wallSeconds() - runStart);
    inFirst = false;
  }
  void add(int id, double seconds) {
    if (id >= 0 && id < numOps) {
      (inFirst ? first : steady)[(size_t)id] += seconds;
      ran[(size_t)id] = 1;
    }
  }
  /// Per-op seconds per run: steady runs when there are any, else the first.
  std::vector<double> perRun() const;
  double medianRun() const;

  /// The report: runs, then time per op kind, then per op (slowest first).
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
