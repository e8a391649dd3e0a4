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
#include <vector>

namespace dg {

/// The threads running on the machine now (/proc/stat's procs_running,
/// this one included), or -1.
long runningThreads();

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
bool teamHasIdleCores(char **argv);

/// Whether this process has a core its OpenMP team of `team` threads (0:
/// the default team) leaves free for its communicator's worker thread, on
/// which started all-reduces overlap the compute; on a core the team uses,
/// the worker takes its time instead (a 2-core machine with 2 ranks of 1
/// thread: docs/benchmarks.md). The cores are those it may run on, shared
/// with the job's other ranks on this machine when that is every core
/// (unbound ranks: OMPI_COMM_WORLD_LOCAL_SIZE, MPI_LOCALNRANKS or
/// LOCAL_WORLD_SIZE).
bool coreForCommThread(int team);

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
void setWaitPolicy(char **argv);

/// How the threads wait at barriers, for --time: what setWaitPolicy chose,
/// or that the environment chose.
const char *waitPolicyNote();

/// --threads N: the size of the OpenMP team (generated loops and oneDNN).
void setThreads(int n);

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
             const char *note = nullptr) const;
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

  void begin(bool enabled, bool terminal, long long steps);
  /// Before other output on the terminal: removes the progress line.
  void clear();
  void step(long long done);
};

/// The OpenMP team size the program runs with.
int threadCount();

} // namespace dg

#endif // DISTRT_GEN_THREADS_H
