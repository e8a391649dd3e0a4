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

#include <chrono>
#include <climits>
#include <csignal>
#include <cstdio>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace dg {

/// SIGUSR1 to a serving rank 0: stop at the next batch boundary.
inline volatile sig_atomic_t serveStopSignalled = 0;
inline void onServeStopSignal(int) { serveStopSignalled = 1; }

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
inline int writeTextAtomically(const std::string &path, const std::string &text,
                               Error &err) {
  std::string tmp = path + ".tmp" + std::to_string(getpid());
  FILE *f = fopen(tmp.c_str(), "w");
  bool ok = f && fputs(text.c_str(), f) >= 0;
  ok = f && fclose(f) == 0 && ok;
  if (!ok || rename(tmp.c_str(), path.c_str()) != 0)
    return fail(err, "--serve: cannot write '%s': %s", path.c_str(),
                strerror(errno));
  return 0;
}

/// A stop or start file's request index: digits, around white space. An
/// empty stop file (or "now") stops at the next batch boundary: -1.
inline bool parseIndex(const std::string &text, bool emptyIsNow,
                       long long &out) {
  size_t b = text.find_first_not_of(" \t\r\n"),
         e = text.find_last_not_of(" \t\r\n");
  std::string t = b == std::string::npos ? "" : text.substr(b, e - b + 1);
  if (emptyIsNow && (t.empty() || t == "now")) {
    out = -1;
    return true;
  }
  bool digits = !t.empty() && t.size() <= 18;
  for (char c : t)
    digits = digits && c >= '0' && c <= '9';
  if (!digits)
    return false;
  out = strtoll(t.c_str(), nullptr, 10);
  return true;
}

/// Rank 0's decision at a batch boundary, waiting up to `patience` seconds
/// (polling every 2 ms): the next request's index (>= 0), kServeStop, or
/// kServeIdle when none came in that time. 1 and P.err on a bad stop or
/// start file.
enum : long long { kServeStop = -1, kServeIdle = -2, kServeNone = -3 };
inline int serveDecide(Serve &S, double patience, long long &decision,
                       Error &err) {
  auto start = std::chrono::steady_clock::now();
  for (;;) {
    if (serveStopSignalled) {
      decision = kServeStop;
      return 0;
    }
    // A stop file: DIR/stop (the service's end) or CTRL/stop (dist-run's
    // switch), holding the last request the job may take, or nothing.
    for (const std::string &stop :
         {S.dir + "/stop",
          S.control.empty() ? std::string() : S.controlFile("stop")}) {
      std::string text;
      if (stop.empty() || !readText(stop, text))
        continue;
      long long last = 0;
      if (!parseIndex(text, true, last)) {
        text.erase(text.find_last_not_of(" \t\r\n") + 1);
        return fail(err,
                    "--serve: the stop file '%s' holds '%s'; write the last "
                    "request to answer (a whole number), or nothing to stop "
                    "at the next batch",
                    stop.c_str(), text.c_str());
      }
      if (last < 0 || (S.next >= 0 && S.next > last) ||
          (S.next < 0 && S.first >= 0 && S.first > last)) {
        decision = kServeStop;
        return 0;
      }
    }
    if (S.next < 0 && !S.control.empty()) {
      std::string text;
      if (readText(S.controlFile("start"), text)) {
        if (!parseIndex(text, false, S.next))
          return fail(err, "--serve: '%s' holds '%s', not a request index",
                      S.controlFile("start").c_str(), text.c_str());
      }
    } else if (S.next < 0) {
      S.next = S.first >= 0 ? S.first : 0;
    }
    // A request is ready when its name exists (a file in its place is
    // taken too, and refused for its missing inputs).
    struct stat st;
    if (S.next >= 0 && stat(S.request(S.next).c_str(), &st) == 0) {
      decision = S.next;
      return 0;
    }
    double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (waited >= patience) {
      decision = kServeIdle;
      return 0;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

/// Every rank's all-reduce (max) of `values` (one job-wide decision: rank 0
/// gives it, the others kServeNone; and any rank's failure flag).
inline int serveAgree(Program &P, long long *values, int64_t n) {
  if (!P.comm || P.worldSize == 1)
    return 0;
  void *buf = P.alloc(n * sizeof(long long));
  if (!buf || P.upload(buf, values, n * sizeof(long long)))
    return 1;
  distrt_tensor t = distrt_make_tensor(buf, DISTRT_I64, 1, &n);
  int rc = P.check(distrt_all_reduce(P.comm, &t, nullptr, DISTRT_REDUCE_MAX),
                   "--serve: agreeing on the next request") ||
           P.download(values, buf, n * sizeof(long long));
  P.release(buf);
  return rc;
}

/// Writes one answer folder atomically: `files` (name, spec, data) into
/// DIR/.<k>.out.<pid>, renamed to DIR/<k>.out. An answer that is already
/// there is an error: a request is answered once.
struct AnswerFile {
  std::string name;
  const TensorSpec *spec; ///< nullptr: `text` is the file's bytes
  const void *data;
  std::string text;
};
inline int writeAnswer(const Serve &S, long long k, const char *suffix,
                       const std::vector<AnswerFile> &files, Error &err) {
  std::string final = S.request(k) + suffix;
  std::string tmp = S.dir + "/." + std::to_string(k) + suffix + "." +
                    std::to_string(getpid());
  if (isDirectory(final))
    return fail(err,
                "--serve: request %lld is already answered ('%s' exists); "
                "each request is answered once: clear the folder or start "
                "with --serve-first past it",
                k, final.c_str());
  if (mkdir(tmp.c_str(), 0777) != 0 && errno != EEXIST)
    return fail(err, "--serve: cannot create '%s': %s", tmp.c_str(),
                strerror(errno));
  for (const AnswerFile &f : files) {
    std::string path = tmp + "/" + f.name;
    if (f.spec) {
      if (writeNpy(path, *f.spec, f.data, err))
        return 1;
    } else if (writeTextAtomically(path, f.text, err)) {
      return 1;
    }
  }
  if (rename(tmp.c_str(), final.c_str()) != 0)
    return fail(err,
                "--serve: cannot move the answer of request %lld into "
                "'%s': %s",
                k, final.c_str(), strerror(errno));
  return 0;
}

} // namespace dg

#endif // DISTRT_GEN_SERVE_H
