//===- distrt/gen/Threads.h - Threads, wait policy, run timing --*- C++ -*-===//
//
// Part of the support code of programs dist-compile generates
// (distrt_gen.h includes every piece; docs/codegen.md). Generated loops and
// the oneDNN kernels share one OpenMP (libgomp) thread team.
//
//===----------------------------------------------------------------------===//
#ifndef DISTRT_GEN_THREADS_H
#define DISTRT_GEN_THREADS_H

#include "distrt/gen/Common.h"

#include <chrono>
#include <unistd.h>
#include <vector>
#ifdef _OPENMP
#include <omp.h>
#endif

namespace dg {

/// CPU programs wait passively at OpenMP barriers (OMP_WAIT_POLICY=passive)
/// unless the environment chooses: libgomp's default spins up to 300000
/// times per barrier, and when another process holds one of the cores the
/// spinning thread keeps the core its descheduled partner needs (a 2-thread
/// program ran 25-60x slower). libgomp reads the policy once, when it loads,
/// before main() runs, so a program started without OMP_WAIT_POLICY or
/// GOMP_SPINCOUNT sets the policy and executes itself again (same process,
/// before any thread or MPI exists); DG_WAIT_POLICY_SET marks the second
/// start. Returns when nothing had to change, or when the exec failed (then
/// the program runs with libgomp's default). Measured in docs/benchmarks.md
/// (bench/codegen/bench_wait_policy.py).
inline void setWaitPolicy(char **argv) {
#ifdef _OPENMP
  if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT") ||
      getenv("DG_WAIT_POLICY_SET"))
    return;
  setenv("OMP_WAIT_POLICY", "passive", 1);
  setenv("DG_WAIT_POLICY_SET", "1", 1);
  execv("/proc/self/exe", argv);
#else
  (void)argv;
#endif
}

/// --threads N: the size of the OpenMP team (generated loops and oneDNN).
inline void setThreads(int n) {
#ifdef _OPENMP
  if (n > 0)
    omp_set_num_threads(n);
#else
  (void)n;
#endif
}

/// Wall time of each run (or training step) for --time.
struct RunTimer {
  std::vector<double> ms;
  std::chrono::steady_clock::time_point start;
  void begin() { start = std::chrono::steady_clock::now(); }
  void end() {
    ms.push_back(std::chrono::duration<double, std::milli>(
                     std::chrono::steady_clock::now() - start)
                     .count());
  }
  /// "time: 20 run(s) of model m on 2 thread(s): mean 3.1 ms, min 3.0 ms;
  /// the first (it loads the weights) 9.2 ms". Later runs reuse the
  /// weights the first loaded, so mean and min leave it out when there are
  /// others.
  void print(const char *what, const char *model, int threads) const {
    if (ms.empty())
      return;
    size_t from = ms.size() > 1 ? 1 : 0;
    double sum = 0, min = ms[from];
    for (size_t i = from; i < ms.size(); ++i) {
      sum += ms[i];
      min = ms[i] < min ? ms[i] : min;
    }
    printf("time: %zu %s(s) of model %s on %d thread(s): mean %.3f ms, min "
           "%.3f ms",
           ms.size(), what, model, threads, sum / (double)(ms.size() - from),
           min);
    if (from)
      printf(" (%ss 2..%zu); the first (it loads the weights) %.3f ms",
             what, ms.size(), ms[0]);
    printf("\n");
  }
};

/// The OpenMP team size the program runs with.
inline int threadCount() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

} // namespace dg

#endif // DISTRT_GEN_THREADS_H
