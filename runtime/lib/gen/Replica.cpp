//===- Replica.cpp - Redundant copies of pipeline state -------------------===//
//
// Part of the support code of programs dist-compile generates, compiled
// once into the runtime archives instead of into every program
// (distrt/gen/Replica.h; docs/resilience.md, "Bamboo's runtime").
//
//===----------------------------------------------------------------------===//
#include "distrt/gen/Replica.h"

#include "distrt/gen/Npy.h"

#include <algorithm>
#include <csignal>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace dg {

namespace {

/// The transfer tag of the copies: above the pipeline's, below the
/// profile reports' (32767).
constexpr int32_t kReplicaTag = 32766;

/// The `ended` marker and its text, prepared beforehand so that the
/// SIGTERM handler only writes them (async-signal-safe calls).
char endedPath[4096];
char endedText[256];
size_t endedLength = 0;

void writeEnded() {
  if (!endedPath[0])
    return;
  int fd = open(endedPath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0)
    return;
  ssize_t n = write(fd, endedText, endedLength);
  (void)n;
  close(fd);
}

void onTerminate(int sig) {
  writeEnded();
  _exit(128 + sig);
}

void setEndedText(const Replica &R) {
  int n = snprintf(endedText, sizeof endedText,
                   "{\"steps\": %lld, \"copy_s\": %.6f, \"wait_s\": %.6f, "
                   "\"bytes\": %lld}\n",
                   R.steps, R.seconds, R.waiting, R.bytes);
  endedLength = n > 0 ? std::min((size_t)n, sizeof endedText - 1) : 0;
}

/// Removes `path` and, for a folder, everything in it; a path that does
/// not exist is nothing to do.
int removeTree(const std::string &path, Error &err) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0)
    return errno == ENOENT ? 0
                           : fail(err, "--redundant: cannot read '%s' (%s)",
                                  path.c_str(), strerror(errno));
  if (S_ISDIR(st.st_mode)) {
    DIR *d = opendir(path.c_str());
    if (!d)
      return fail(err, "--redundant: cannot read '%s' (%s)", path.c_str(),
                  strerror(errno));
    std::vector<std::string> names;
    while (struct dirent *e = readdir(d))
      if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
        names.push_back(e->d_name);
    closedir(d);
    for (const std::string &n : names)
      if (removeTree(path + "/" + n, err))
        return 1;
    if (rmdir(path.c_str()) != 0)
      return fail(err, "--redundant: cannot remove '%s' (%s)", path.c_str(),
                  strerror(errno));
    return 0;
  }
  if (unlink(path.c_str()) != 0)
    return fail(err, "--redundant: cannot remove '%s' (%s)", path.c_str(),
                strerror(errno));
  return 0;
}

int readBytes(const std::string &path, std::vector<char> &out, Error &err) {
  FILE *f = fopen(path.c_str(), "rb");
  if (!f)
    return fail(err, "--redundant: cannot read '%s' (%s)", path.c_str(),
                strerror(errno));
  out.clear();
  char buf[1 << 16];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0)
    out.insert(out.end(), buf, buf + n);
  bool bad = ferror(f);
  fclose(f);
  if (bad)
    return fail(err, "--redundant: cannot read '%s'", path.c_str());
  return 0;
}

/// The names in `dir` but . and .., sorted.
int listNames(const std::string &dir, std::vector<std::string> &names,
              Error &err) {
  names.clear();
  DIR *d = opendir(dir.c_str());
  if (!d)
    return fail(err, "--redundant: cannot read '%s' (%s)", dir.c_str(),
                strerror(errno));
  while (struct dirent *e = readdir(d))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
      names.push_back(e->d_name);
  closedir(d);
  std::sort(names.begin(), names.end());
  return 0;
}

/// The step of a folder named step-<k> (or step-<k>.partial); -1 else.
long long slotStep(const std::string &name, bool &partial) {
  partial = false;
  if (name.rfind("step-", 0) != 0)
    return -1;
  std::string rest = name.substr(5);
  const std::string suffix = ".partial";
  if (rest.size() > suffix.size() &&
      rest.compare(rest.size() - suffix.size(), suffix.size(), suffix) == 0) {
    partial = true;
    rest.resize(rest.size() - suffix.size());
  }
  if (rest.empty() || rest.size() > 18 ||
      rest.find_first_not_of("0123456789") != std::string::npos)
    return -1;
  return strtoll(rest.c_str(), nullptr, 10);
}

} // namespace

int Replica::begin(Program &P, bool training, bool pipeline, bool cuda,
                   const std::string &who) {
  if (!training) {
    fprintf(stderr,
            "error: %s--redundant keeps copies of a training run's state "
            "after every step; give --steps N (a program compiled with "
            "--train)\n",
            who.c_str());
    return 2;
  }
  if (!pipeline || P.worldSize < 2) {
    fprintf(stderr,
            "error: %s--redundant copies each pipeline rank's state to the "
            "rank before it, but this program runs %d rank(s) without "
            "pipeline stages; compile the model with a pipeline plan "
            "(--dist-plan=pp=2,...), or use dist-run --elastic\n",
            who.c_str(), P.worldSize);
    return 2;
  }
  if (cuda) {
    fprintf(stderr,
            "error: %s--redundant runs CPU programs (the copies go through "
            "MPI between host buffers); compile with --target=cpu, or use "
            "dist-run --elastic\n",
            who.c_str());
    return 2;
  }
  mine = dir + "/" + std::to_string(P.rank);
  successor = (P.rank + 1) % P.worldSize;
  predecessor = (P.rank + P.worldSize - 1) % P.worldSize;
  Error err;
  std::string ended = mine + "/ended";
  if (makeParentDirs(ended, err) ||
      (unlink(ended.c_str()) != 0 && errno != ENOENT)) {
    fprintf(stderr,
            "error: %s--redundant '%s': cannot use '%s' (%s); give a folder "
            "this process can write\n",
            who.c_str(), dir.c_str(), mine.c_str(),
            err.message.empty() ? strerror(errno) : err.message.c_str());
    return 2;
  }
  if (ended.size() >= sizeof endedPath) {
    fprintf(stderr,
            "error: %s--redundant '%s': the path is too long; give a "
            "shorter folder\n",
            who.c_str(), dir.c_str());
    return 2;
  }
  snprintf(endedPath, sizeof endedPath, "%s", ended.c_str());
  setEndedText(*this);
  atexit(writeEnded);
  std::signal(SIGTERM, onTerminate);
  return 0;
}

int Replica::afterStep(Program &P, long long step) {
  double t0 = wallSeconds();
  std::string slot = mine + "/step-" + std::to_string(step);
  std::string partial = slot + ".partial";
  std::string own = partial + "/own", copy = partial + "/copy";
  if (removeTree(partial, P.err) || makeParentDirs(own + "/x", P.err) ||
      makeParentDirs(copy + "/x", P.err))
    return 1;
  P.stepsDone = step;
  if (P.saveState(own))
    return fail(P.err, "--redundant: %s", P.err.message.c_str());
  // This rank's state, as its files, to the rank before it: a header of
  // names and sizes, then every file's bytes in one buffer (few messages:
  // each costs a round of the MPI progress, whatever its size).
  std::vector<std::string> names;
  if (listNames(own, names, P.err))
    return 1;
  std::vector<char> blob, file;
  std::string header;
  for (const std::string &n : names) {
    if (readBytes(own + "/" + n, file, P.err))
      return 1;
    header += n + " " + std::to_string(file.size()) + "\n";
    blob.insert(blob.end(), file.begin(), file.end());
  }
  auto send = [&](void *data, distrt_dtype dt, int64_t n) {
    distrt_tensor t = T(data, dt, {n});
    return P.check(distrt_send(P.comm, &t, predecessor, kReplicaTag),
                   "--redundant: sending this rank's state to its "
                   "predecessor");
  };
  auto recv = [&](void *data, distrt_dtype dt, int64_t n) {
    distrt_tensor t = T(data, dt, {n});
    return P.check(distrt_recv(P.comm, &t, successor, kReplicaTag),
                   "--redundant: receiving the successor's state");
  };
  // The bytes go in pieces below 1 GiB (MPI counts are ints).
  const int64_t piece = (int64_t)1 << 30;
  auto pieces = [&](char *data, int64_t n, bool out) {
    for (int64_t at = 0; at < n; at += piece) {
      int64_t k = std::min(piece, n - at);
      if (out ? send(data + at, DISTRT_U8, k) : recv(data + at, DISTRT_U8, k))
        return 1;
    }
    return 0;
  };
  int64_t length = (int64_t)header.size();
  if (send(&length, DISTRT_I64, 1) || send(&header[0], DISTRT_U8, length) ||
      pieces(blob.data(), (int64_t)blob.size(), true))
    return 1;
  long long sent = length + (long long)blob.size();
  // The successor's, into copy/.
  int64_t theirs = 0;
  double waitFrom = wallSeconds();
  if (recv(&theirs, DISTRT_I64, 1))
    return 1;
  double waited = wallSeconds() - waitFrom;
  if (theirs <= 0 || theirs > (1 << 24))
    return fail(P.err,
                "--redundant: rank %d announced a state header of %lld bytes",
                successor, (long long)theirs);
  std::string text((size_t)theirs, '\0');
  if (recv(&text[0], DISTRT_U8, theirs))
    return 1;
  std::vector<std::pair<std::string, int64_t>> files;
  int64_t total = 0;
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    size_t space = text.find(' ', at);
    if (end == std::string::npos || space == std::string::npos || space > end)
      return fail(P.err, "--redundant: rank %d sent a malformed state header",
                  successor);
    std::string name = text.substr(at, space - at);
    long long size = strtoll(text.c_str() + space + 1, nullptr, 10);
    if (name.empty() || name.find('/') != std::string::npos || size < 0)
      return fail(P.err, "--redundant: rank %d sent a malformed state header",
                  successor);
    files.push_back({name, size});
    total += size;
    at = end + 1;
  }
  blob.resize((size_t)total);
  if (pieces(blob.data(), total, false))
    return 1;
  int64_t at = 0;
  for (const auto &[name, size] : files) {
    if (writeFile(copy + "/" + name, blob.data() + at, (size_t)size,
                  "--redundant", P.err))
      return 1;
    at += size;
  }
  // Whole: the step counts from here on.
  if (rename(partial.c_str(), slot.c_str()) != 0)
    return fail(P.err, "--redundant: cannot rename '%s' to '%s' (%s)",
                partial.c_str(), slot.c_str(), strerror(errno));
  // Keep this step and the one before; drop older ones and partials.
  std::vector<std::string> entries;
  if (listNames(mine, entries, P.err))
    return 1;
  for (const std::string &e : entries) {
    bool isPartial = false;
    long long k = slotStep(e, isPartial);
    if (k >= 0 && (isPartial || k < step - 1) &&
        removeTree(mine + "/" + e, P.err))
      return 1;
  }
  ++steps;
  seconds += wallSeconds() - t0;
  waiting += waited;
  bytes += sent;
  setEndedText(*this);
  return 0;
}

} // namespace dg
