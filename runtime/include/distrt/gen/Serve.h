//===- distrt/gen/Serve.h - Serving requests from a folder ------*- C++ -*-===//
//
// Part of the support code of programs dist-compile generates
// (distrt_gen.h includes every piece; docs/codegen.md, "Serving").
//
// `--serve=DIR`: the program answers a stream of requests, each one global
// batch in a folder DIR/<k>/ (one NAME.npy per input), in order k = first,
// first + 1, ...; the rank that holds the outputs writes DIR/<k>.out/ (beside,
// then renamed in). Rank 0 decides, at each batch boundary, which request is
// next or that the job stops (a stop file, SIGUSR1), and every rank takes
// that decision from one all-reduce, so no rank takes a request another
// does not. `--serve-control=CTRL` is dist-run's handle on a running job
// (its live switch between partitions, docs/resilience.md): the job writes
// CTRL/ready once its weights are loaded, takes its first request index
// from CTRL/start, stops when CTRL/stop appears and writes the last request
// it took to CTRL/last.
//
//===----------------------------------------------------------------------===//
#ifndef DISTRT_GEN_SERVE_H
#define DISTRT_GEN_SERVE_H

#include "distrt/gen/Program.h"

namespace dg {

/// SIGUSR1 to a serving rank 0: stop at the next batch boundary.
void onServeStopSignal(int);

/// The --serve options and rank 0's position in the stream.
struct Serve {
  std::string dir;      ///< --serve: the request folder
  std::string control;  ///< --serve-control: dist-run's files; "" none
  long long first = -1; ///< --serve-first (-1: not given)
  /// Rank 0: the next request to take, once known (CTRL/start or first).
  long long next = -1;
  long long answered = 0; ///< requests taken (each answered or refused)

  bool enabled() const { return !dir.empty(); }
  std::string request(long long k) const {
    return dir + "/" + std::to_string(k);
  }
  std::string controlFile(const char *name) const {
    return control + "/" + name;
  }
};

/// Writes `text` to `path` atomically (a file beside it, renamed in).
int writeTextAtomically(const std::string &path, const std::string &text,
                        Error &err);

/// A stop or start file's request index: digits, around white space. An
/// empty stop file (or "now") stops at the next batch boundary: -1.
bool parseIndex(const std::string &text, bool emptyIsNow, long long &out);

/// Rank 0's decision at a batch boundary, waiting up to `patience` seconds
/// (polling every 2 ms): the next request's index (>= 0), kServeStop, or
/// kServeIdle when none came in that time. 1 and P.err on a bad stop or
/// start file.
enum : long long { kServeStop = -1, kServeIdle = -2, kServeNone = -3 };
int serveDecide(Serve &S, double patience, long long &decision, Error &err);

/// Every rank's all-reduce (max) of `values` (one job-wide decision: rank 0
/// gives it, the others kServeNone; and any rank's failure flag).
int serveAgree(Program &P, long long *values, int64_t n);

/// Writes one answer folder atomically: `files` (name, spec, data) into
/// DIR/.<k>.out.<pid>, renamed to DIR/<k>.out. An answer that is already
/// there is an error: a request is answered once.
struct AnswerFile {
  std::string name;
  const TensorSpec *spec; ///< nullptr: `text` is the file's bytes
  const void *data;
  std::string text;
};
int writeAnswer(const Serve &S, long long k, const char *suffix,
                const std::vector<AnswerFile> &files, Error &err);

} // namespace dg

#endif // DISTRT_GEN_SERVE_H
