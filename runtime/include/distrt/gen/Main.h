//===- distrt/gen/Main.h - Model table and main() ---------------*- C++ -*-===//
//
// Part of the support code of programs dist-compile generates
// (distrt_gen.h includes every piece; docs/codegen.md).
//
//===----------------------------------------------------------------------===//
#ifndef DISTRT_GEN_MAIN_H
#define DISTRT_GEN_MAIN_H

#include "distrt/gen/NoiseScale.h"
#include "distrt/gen/Program.h"
#include "distrt/gen/Serve.h"
#include "distrt/gen/Threads.h"

namespace dg {

//===----------------------------------------------------------------------===//
// The model table and main()
//===----------------------------------------------------------------------===//

struct Model {
  const char *name;
  const char *source;   ///< the file it was compiled from
  const char *modelDir; ///< weight files are relative to this folder
  int numInputs;
  const TensorSpec *inputs;
  int numOutputs;
  const TensorSpec *outputs;
  int (*run)(Program &);
  /// Gradient accumulation: `run` (a micro-batch) runs `accumulation`
  /// times per step, then `apply` (the optimizer); nullptr / 1 otherwise.
  int (*apply)(Program &);
  int accumulation;
  /// The model holds collectives: main joins the launcher's world
  /// (distrt_comm_create), shards inputs, and only rank 0 prints and saves.
  bool collectives;
  /// Per input: 1 when its dim 0 is the batch split across ranks (the file
  /// holds world-size times the compiled rows; rank r keeps block r).
  const int *shards;
  /// Per rank: the data-parallel replica whose rows of a sharded input it
  /// keeps, and how many replicas split the batch (pipelines with dp > 1:
  /// the replicas of a stage share rows). nullptr and 0: rank r of the
  /// world keeps block r.
  const int *replicaOf;
  int replicas;
  /// Pipeline programs (dist.stage regions) and ZeRO data parallelism: the
  /// ranks the job must run (the plan's devices; ZeRO's replicas), whose
  /// weights or state differ, and the rank that computes, prints and writes
  /// the outputs (the last stage's; 0 for ZeRO). 0, 0 otherwise.
  int pipelineRanks;
  int outputRank;
  /// A hash of the compiled IR (dist-compile): ranks of one job compare it
  /// at start, so a job never mixes programs (Adam on one rank, SGD on
  /// another).
  unsigned long long fingerprint;
  /// The emitted ops --profile reports on (nullptr, 0 when not recorded).
  const OpInfo *ops;
  int numOps;
  /// A pipeline program of one stage and one micro-batch over tensor-
  /// parallel ranks (dp = 1): each op runs once per step, so every rank's
  /// `--profile-json` is a profile database, filed under this tp. 0
  /// otherwise (pipelines refuse --profile-json).
  int profileTp;
  /// A training step: it updates the weights (`--serve` refuses it, as it
  /// would train on the requests).
  bool trains;
};

/// Parses a positive count of at most `max` from a flag's value: digits
/// only, so "abc", "-1", "0", "1e3" and values past `max` are errors
/// (printed, naming the flag) instead of a silent default.
bool parseCount(const char *flag, const std::string &value, long long max,
                long long &out);

/// parseCount, but "0" is a value too (--timeout 0: wait forever,
/// --serve-first 0: the first request); the error names the range from 0.
bool parseCountOrZero(const char *flag, const std::string &value, long long max,
                      long long &out);

/// What every rank of a job must agree on before the first step: the
/// program and the run options that decide how many collectives and
/// transfers each rank makes. Different --steps once hung a job forever.
struct RunRecord {
  enum { Program, Steps, LoadState, Count };
  long long values[Count];
  static const char *name(int i) {
    static const char *names[] = {
        "the program (dist-compile output; fingerprint)", "--steps/--repeat",
        "--load-state (given or not)"};
    return names[i];
  }
};

/// Rank 0 broadcasts its record; every rank compares it with its own and a
/// max-reduction of the verdicts makes every rank fail together, each
/// naming what differs. Returns 0 when all agree.
int agreeOnRun(Program &P, const RunRecord &mine, const char *who);

/// Keeps rank `rank`'s block of `world` equal blocks along dim 0 of `t`,
/// which must hold `world` times `perRank` rows.
int takeShard(HostTensor &t, int rank, int world);

/// --list: the model's inputs and outputs, on stdout.
void printSpecs(const Model &m);

/// Writes this rank's `--trace` as a Chrome / Perfetto trace: one process
/// per rank, one event per schedule action run, named as the schedule and
/// `dist-opt --dist-trace` name it (ts: this machine's monotonic clock in
/// microseconds, the same for every rank on it).
int writeTrace(const std::string &path,
               const std::vector<Program::TraceEvent> &events, int rank,
               const char *model, Error &err);

/// The command line, on stderr; returns 2 (the exit code of a bad one).
int usage(const char *argv0);

/// A pipeline job's --profile on CPU: every rank formats its report, the
/// others send theirs to rank 0 (its length, then the text, on the last
/// transfer tag), and rank 0 prints them all in rank order.
int printRankProfiles(Program &P, const Profiler &prof);

/// printf into a string.
std::string formatted(const char *fmt, ...);

/// Reads input `idx` of `model` from `file` into P.inputs[idx] and checks
/// its dtype and shape against the compiled ones: 0, or 1 with `message`
/// (what is wrong and what to do). A data-parallel input keeps this rank's
/// rows; `microbatched`: the file holds every micro-batch of an
/// accumulation step (the caller keeps the whole and runs block k).
int loadInput(const Model &model, Program &P, int idx, const std::string &file,
              const std::string &who, bool &microbatched, std::string &message);

/// --serve (Serve.h): loads the weights with a batch of zeros, then answers
/// requests until rank 0 decides to stop. 0, or 1 with P.err on a failure
/// that ends the job (a request with wrong inputs is answered with
/// DIR/<k>.err instead, and the job goes on).
int serveRequests(Program &P, const Model &model, Serve &S, bool root,
                  const std::string &who);

/// The generated program's main(): parses the command line, runs the
/// chosen model of `models` on the CPU or (`cuda`) the GPU, and returns the
/// exit code (docs/codegen.md, "Running a program").
int runMain(int argc, char **argv, const Model *models, int numModels,
            bool cuda);

} // namespace dg

#endif // DISTRT_GEN_MAIN_H
