//===- Threads.cpp - Threads, wait policy, run timing of programs ---------===//
//
// Part of the support code of programs dist-compile generates, compiled
// once into the runtime archives instead of into every program
// (distrt/gen/Threads.h; docs/codegen.md). The archives are built with
// OpenMP, as CPU programs are, so _OPENMP holds here.
//
//===----------------------------------------------------------------------===//
#include "distrt/gen/Threads.h"

#include <cstdio>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

namespace dg {

long runningThreads() {
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

bool teamHasIdleCores(char **argv) {
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

bool coreForCommThread(int team) {
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

void setWaitPolicy(char **argv) {
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

const char *waitPolicyNote() {
  const char *set = getenv("DG_WAIT_POLICY_SET");
  const char *policy = getenv("OMP_WAIT_POLICY");
  if (set && policy && !strcmp(policy, "passive"))
    return "passive waits, fewer idle cores than threads at start";
  if (!set && (policy || getenv("GOMP_SPINCOUNT")))
    return "waits as OMP_WAIT_POLICY/GOMP_SPINCOUNT say";
  return "spinning waits";
}

void setThreads(int n) {
#ifdef _OPENMP
  if (n > 0)
    omp_set_num_threads(n);
#else
  (void)n;
#endif
}

void RunTimer::print(const char *what, const char *model, int threads,
                     const char *note) const {
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
    printf(" (%ss 2..%zu); the first (it loads the weights) %.3f ms", what,
           ms.size(), ms[0]);
  printf("\n");
}

void StepProgress::begin(bool enabled, bool terminal, long long steps) {
  on = enabled && steps > 1;
  tty = terminal;
  total = steps;
  start = last = Clock::now();
}

void StepProgress::clear() {
  if (on && tty && shown) {
    fputs("\r\033[K", stderr);
    shown = false;
  }
}

void StepProgress::step(long long done) {
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

int threadCount() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

} // namespace dg
