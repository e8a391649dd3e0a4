//===- Serve.cpp - Serving requests from a folder -------------------------===//
//
// Part of the support code of programs dist-compile generates, compiled
// once into the runtime archives instead of into every program
// (distrt/gen/Serve.h; docs/codegen.md, "Serving").
//
//===----------------------------------------------------------------------===//
#include "distrt/gen/Serve.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace dg {

/// Set by onServeStopSignal, read by serveDecide.
static volatile sig_atomic_t serveStopSignalled = 0;

void onServeStopSignal(int) { serveStopSignalled = 1; }

int writeTextAtomically(const std::string &path, const std::string &text,
                        Error &err) {
  std::string tmp = path + ".tmp" + std::to_string(getpid());
  if (writeFile(tmp, text.data(), text.size(), "--serve", err))
    return 1;
  if (rename(tmp.c_str(), path.c_str()) != 0)
    return fail(err, "--serve: cannot write '%s' (%s)", path.c_str(),
                strerror(errno));
  return 0;
}

bool parseIndex(const std::string &text, bool emptyIsNow, long long &out) {
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

int serveDecide(Serve &S, double patience, long long &decision, Error &err) {
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

int serveAgree(Program &P, long long *values, int64_t n) {
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

int writeAnswer(const Serve &S, long long k, const char *suffix,
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
