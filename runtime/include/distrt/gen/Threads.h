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
#include <cstdio>
#include <unistd.h>
#include <vector>
#ifdef _OPENMP
#include <omp.h>
#endif

namespace dg {

/// The threads running on the machine now (/proc/stat's procs_running,
/// this one included), or -1.
inline long runningThreads() {
  FILE *f = fopen("/proc/stat", "r");
  if (!f)
    return -1;
  char line[256];
  long running = -1;
  while (running < 0 && fgets(line, sizeof line, f))
    if (!strncmp(line, "procs_running ", 14))
      running = atol(line + 14);
  fclose(f);
  return running;
}

/// Whether each thread of the program's OpenMP team has a core nothing
/// else runs on as it starts: the threads running besides this one plus
/// the team (--threads N in `argv`, else OMP_NUM_THREADS or the CPUs) fit
/// in the CPUs it may use. The fewest of up to 50 counts 2 ms apart,
/// stopping at the first that fits: a thread pool that spins briefly after
/// its work is not a process holding a core. onnxruntime's spins for 20-30
/// ms after a run; a program started within 10 ms of one (bench_ort.py)
/// saw it through the 5 counts this took before, chose passive waits and
/// ran ViT at 2 threads in 9.7 ms instead of 4.3. Counts, not the load
/// average, which still holds the previous program of a benchmark loop
/// for a minute after it ended.
inline bool teamHasIdleCores(char **argv) {
#ifdef _OPENMP
  int team = omp_get_max_threads();
  for (int i = 1; argv[i] && argv[i + 1]; ++i)
    if (!strcmp(argv[i], "--threads") && atoi(argv[i + 1]) > 0)
      team = atoi(argv[i + 1]);
  int cpus = omp_get_num_procs();
  long running = runningThreads();
  for (int k = 1; k < 50 && running > 1 && running - 1 + team > cpus; ++k) {
    usleep(2000);
    long now = runningThreads();
    if (now >= 1 && now < running)
      running = now;
  }
  return running >= 1 && running - 1 + team <= cpus;
#else
  (void)argv;
  return true;
#endif
}

/// Whether this process has a core its OpenMP team of `team` threads (0:
/// the default team) leaves free for its communicator's worker thread, on
/// which started all-reduces overlap the compute; on a core the team uses,
/// the worker takes its time instead (a 2-core machine with 2 ranks of 1
/// thread: docs/benchmarks.md). The cores are those it may run on, shared
/// with the job's other ranks on this machine when that is every core
/// (unbound ranks: OMPI_COMM_WORLD_LOCAL_SIZE, MPI_LOCALNRANKS or
/// LOCAL_WORLD_SIZE).
inline bool coreForCommThread(int team) {
#ifdef _OPENMP
  if (team <= 0)
    team = omp_get_max_threads();
  int cpus = omp_get_num_procs();
#else
  team = 1;
  int cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
#endif
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  int local = 1;
  for (const char *var :
       {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "LOCAL_WORLD_SIZE"})
    if (const char *v = getenv(var); v && atoi(v) > 0) {
      local = atoi(v);
      break;
    }
  if (cpus >= online)
    cpus /= local;
  return cpus >= team + 1;
}

/// How CPU programs wait at OpenMP barriers, unless the environment chooses
/// (OMP_WAIT_POLICY, GOMP_SPINCOUNT). When the team has idle cores
/// (teamHasIdleCores), libgomp's default: spin up to 300000 times, then
/// sleep; a sleeping thread's futex wake made small models 2-6x slower
/// (MobileNetV3 at 2 threads: 6.9 ms a run passive, 2.0 ms spinning).
/// When another process holds a core, passive (OMP_WAIT_POLICY=passive): a
/// spinning thread keeps the core its descheduled partner needs (a 2-thread
/// program ran 25-60x slower under load). libgomp reads the policy once,
/// when it loads, before main() runs, so for passive the program sets it
/// and executes itself again (same process, before any thread or MPI
/// exists); DG_WAIT_POLICY_SET marks the second start. Returns when nothing
/// had to change, or when the exec failed (then the program runs with
/// libgomp's default). Measured in docs/benchmarks.md
/// (bench/codegen/bench_wait_policy.py).
inline void setWaitPolicy(char **argv) {
#ifdef _OPENMP
  if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT") ||
      getenv("DG_WAIT_POLICY_SET") || teamHasIdleCores(argv))
    return;
  setenv("OMP_WAIT_POLICY", "passive", 1);
  setenv("DG_WAIT_POLICY_SET", "1", 1);
  execv("/proc/self/exe", argv);
#else
  (void)argv;
#endif
}

/// How the threads wait at barriers, for --time: what setWaitPolicy chose,
/// or that the environment chose.
inline const char *waitPolicyNote() {
  const char *set = getenv("DG_WAIT_POLICY_SET");
  const char *policy = getenv("OMP_WAIT_POLICY");
  if (set && policy && !strcmp(policy, "passive"))
    return "passive waits, fewer idle cores than threads at start";
  if (!set && (policy || getenv("GOMP_SPINCOUNT")))
    return "waits as OMP_WAIT_POLICY/GOMP_SPINCOUNT say";
  return "spinning waits";
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
  /// "time: 20 run(s) of model m on 2 thread(s), spinning waits: mean
  /// 3.1 ms, min 3.0 ms; the first (it loads the weights) 9.2 ms" (the wait
  /// policy: waitPolicyNote; `note`, when given, follows it). Later runs
  /// reuse the weights the first loaded, so mean and min leave it out when
  /// there are others.
  void print(const char *what, const char *model, int threads,
             const char *note = nullptr) const {
    if (ms.empty())
      return;
    size_t from = ms.size() > 1 ? 1 : 0;
    double sum = 0, min = ms[from];
    for (size_t i = from; i < ms.size(); ++i) {
      sum += ms[i];
      min = ms[i] < min ? ms[i] : min;
    }
    printf("time: %zu %s(s) of model %s on %d thread(s), %s%s%s: mean "
           "%.3f ms, min %.3f ms",
           ms.size(), what, model, threads, waitPolicyNote(), note ? ", " : "",
           note ? note : "", sum / (double)(ms.size() - from), min);
    if (from)
      printf(" (%ss 2..%zu); the first (it loads the weights) %.3f ms",
             what, ms.size(), ms[0]);
    printf("\n");
  }
};

/// Training progress on stderr (--progress): steps done of all, steps per
/// second and the time left. On a terminal one line, redrawn at most every
/// 0.2 s and cleared before each `step K loss V` line; elsewhere
/// (--progress=always under a launcher or into a log) a line at most every
/// second. The first step (it loads the weights) is left out of the rate.
struct StepProgress {
  using Clock = std::chrono::steady_clock;
  bool on = false, tty = false, shown = false;
  long long total = 0;
  Clock::time_point start, afterFirst, last;

  void begin(bool enabled, bool terminal, long long steps) {
    on = enabled && steps > 1;
    tty = terminal;
    total = steps;
    start = last = Clock::now();
  }
  /// Before other output on the terminal: removes the progress line.
  void clear() {
    if (on && tty && shown) {
      fputs("\r\033[K", stderr);
      shown = false;
    }
  }
  void step(long long done) {
    if (!on)
      return;
    Clock::time_point now = Clock::now();
    if (done == 1)
      afterFirst = now;
    bool final = done == total;
    double since = std::chrono::duration<double>(now - last).count();
    if (!final && done > 1 && since < (tty ? 0.2 : 1.0))
      return;
    last = now;
    double elapsed =
        std::chrono::duration<double>(now - (done > 1 ? afterFirst : start))
            .count();
    double rate =
        elapsed > 0 ? (double)(done > 1 ? done - 1 : done) / elapsed : 0;
    char eta[32] = "-";
    if (rate > 0) {
      long long s = (long long)((double)(total - done) / rate + 0.5);
      if (s >= 3600)
        snprintf(eta, sizeof eta, "%lld h %02lld min", s / 3600, s / 60 % 60);
      else if (s >= 60)
        snprintf(eta, sizeof eta, "%lld min %02lld s", s / 60, s % 60);
      else
        snprintf(eta, sizeof eta, "%lld s", s);
    }
    fprintf(stderr, "%sstep %lld/%lld, %.2f steps/s, %s left%s",
            tty ? "\r\033[K" : "", done, total, rate, eta,
            tty && !final ? "" : "\n");
    fflush(stderr);
    shown = tty && !final;
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
