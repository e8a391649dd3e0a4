//===- Program.cpp - Run state, buffers, weights and checkpoints ----------===//
//
// Part of the support code of programs dist-compile generates, compiled
// once into the runtime archives instead of into every program
// (distrt/gen/Program.h; docs/codegen.md, docs/distributed.md).
//
//===----------------------------------------------------------------------===//
#include "distrt/gen/Program.h"

#include <algorithm>
#include <csignal>
#include <cstring>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

namespace dg {

std::string sanitizeName(const std::string &name) {
  std::string s(name);
  for (char &c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
          (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.'))
      c = '_';
  return s.empty() ? std::string("_") : s;
}

std::string expandRank(std::string dir, int rank) {
  for (size_t at = dir.find("{rank}"); at != std::string::npos;
       at = dir.find("{rank}", at))
    dir.replace(at, 6, std::to_string(rank));
  return dir;
}

void injectFault(const char *kind, int rank, long long step) {
  static const char *spec = getenv("DISTRT_FAULT");
  char faultKind[16];
  int faultRank = -1;
  long long faultStep = -1;
  if (!spec ||
      sscanf(spec, "%15[a-z-]:%d:%lld", faultKind, &faultRank, &faultStep) !=
          3 ||
      strcmp(faultKind, kind) || faultRank != rank || faultStep != step)
    return;
  fprintf(stderr, "note: DISTRT_FAULT: killing rank %d %s step %lld\n", rank,
          strcmp(kind, "kill") ? "while saving the checkpoint of" : "after",
          step);
  fflush(stderr);
  raise(SIGKILL);
}

/// The elements shard `s` of the full tensor (dims, rank) holds: a ZeRO
/// block rounds up (its tail past the tensor or part is padding).
static int64_t shardElements(const int64_t *dims, int rank, const Shard &s) {
  if (s.flat()) {
    int64_t n = shardElements(dims, rank, s.tensorPart());
    return (n + s.parts - 1) / s.parts;
  }
  int64_t n = 1;
  for (int i = 0; i < rank; ++i)
    n *= dims[i];
  return n / s.parts / s.partParts;
}

/// The runs of one axis's part (dim >= 0; its outer part ignored), as
/// forEachShardRun.
template <class F>
static void forEachAxisRun(const int64_t *dims, int rank, const Shard &s,
                           F fn) {
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < s.dim; ++i)
    outer *= dims[i];
  for (int i = s.dim + 1; i < rank; ++i)
    inner *= dims[i];
  int64_t n = dims[s.dim], part = n / ((int64_t)s.blocks * s.parts);
  int64_t at = 0;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t b = 0; b < s.blocks; ++b) {
      fn((o * n + (b * s.parts + s.index) * part) * inner, at, part * inner);
      at += part * inner;
    }
}

/// The runs of a tensor-parallel part (dim >= 0), as forEachShardRun.
template <class F>
static void forEachPartRun(const int64_t *dims, int rank, const Shard &s,
                           F fn) {
  if (s.partParts < 2)
    return forEachAxisRun(dims, rank, s, fn);
  // A part of a part: its runs in the outer part, each mapped to the
  // whole tensor through the outer part's runs, which are all of one
  // length and may cut an inner run.
  Shard outer = s.tensorPart();
  int64_t partDims[8], length = 0;
  for (int i = 0; i < rank; ++i)
    partDims[i] = dims[i] / (i == outer.dim ? outer.parts : 1);
  std::vector<int64_t> starts;
  forEachAxisRun(dims, rank, outer, [&](int64_t full, int64_t, int64_t n) {
    starts.push_back(full);
    length = n;
  });
  forEachAxisRun(partDims, rank, s, [&](int64_t at, int64_t to, int64_t n) {
    while (n > 0) {
      int64_t run = at / length, off = at % length;
      int64_t count = std::min(n, length - off);
      fn(starts[run] + off, to, count);
      at += count;
      to += count;
      n -= count;
    }
  });
}

/// Calls fn(fullElement, shardElement, count) for each contiguous run of
/// the full tensor (dims, rank) that shard `s` holds, in the shard's order.
/// A ZeRO block of the whole tensor is one run, short of the block (or
/// empty) where the padding begins; a ZeRO block of a tensor-parallel part
/// is the part's runs clipped to the block.
template <class F>
static void forEachShardRun(const int64_t *dims, int rank, const Shard &s,
                            F fn) {
  if (!s.flat())
    return forEachPartRun(dims, rank, s, fn);
  Shard part = s.tensorPart();
  int64_t n = shardElements(dims, rank, part);
  int64_t block = (n + s.parts - 1) / s.parts, lo = s.index * block;
  int64_t hi = std::min(lo + block, n);
  if (lo >= n)
    return;
  if (part.parts < 2)
    return fn(lo, (int64_t)0, hi - lo);
  forEachPartRun(
      dims, rank, part, [&](int64_t full, int64_t at, int64_t count) {
        int64_t from = std::max(at, lo), to = std::min(at + count, hi);
        if (from < to)
          fn(full + (from - at), from - lo, to - from);
      });
}

const int32_t *Program::groupHolding(const int32_t *groups, int count, int n,
                                     const char *where) {
  for (int g = 0; g < count; ++g)
    for (int k = 0; k < n; ++k)
      if (groups[g * n + k] == rank)
        return groups + g * n;
  fail(err,
       "%s: rank %d is in none of the %d device group(s) that run this "
       "collective; launch the job with the ranks its plan has",
       where, rank, count);
  return nullptr;
}

distrt_comm *Program::group(const int32_t *ranks, int n, const char *where) {
  std::vector<int32_t> want(ranks, ranks + n);
  bool world = n == worldSize;
  for (int k = 0; world && k < n; ++k)
    world = ranks[k] == k;
  if (world)
    return comm;
  for (const Group &g : groups)
    if (g.ranks == want)
      return g.comm;
  for (int32_t r : want)
    if (r >= worldSize) {
      fail(err,
           "%s: its group lists rank %d but the job runs %d rank(s); "
           "launch it with as many ranks as its plan has devices, or "
           "compile the collective `over world`",
           where, (int)r, worldSize);
      return nullptr;
    }
  distrt_comm *g = nullptr;
  if (distrt_comm_group(comm, ranks, n, &g) != DISTRT_OK) {
    fail(err, "%s: %s", where, distrt_last_error(ctx));
    return nullptr;
  }
  groups.push_back({std::move(want), g});
  return g;
}

void Program::releaseGroups() {
  for (Group &g : groups)
    distrt_comm_destroy(g.comm);
  groups.clear();
}

void *Program::persistentBuffer(const char *name, DType dt, int rank,
                                const int64_t *dims, bool &fresh,
                                const Shard *shard) {
  fresh = false;
  for (Persistent &b : persistent)
    if (b.name == name)
      return b.ptr;
  Persistent b;
  b.name = name;
  if (shard)
    b.shard = *shard;
  b.dtype = dt;
  b.rank = rank;
  size_t bytes = dtypeInfo(dt).size;
  for (int i = 0; i < rank; ++i) {
    b.dims[i] = dims[i];
    bytes *= (size_t)dims[i];
  }
  if (distrt_alloc(ctx, bytes ? bytes : 1, &b.ptr) != DISTRT_OK) {
    fail(err, "out of memory allocating persistent buffer '%s' (%zu bytes)",
         name, bytes);
    return nullptr;
  }
  fresh = true;
  persistent.push_back(b);
  if (!stateDir.empty() && loadState(persistent.back()))
    return nullptr;
  fresh = stateDir.empty();
  return b.ptr;
}

int Program::loadStateWeight(const char *name, DType dt, int rank,
                             const int64_t *dims, void *dst,
                             const Shard *shard) {
  Persistent b;
  b.name = name;
  b.dtype = dt;
  b.rank = rank;
  for (int i = 0; i < rank; ++i)
    b.dims[i] = dims[i];
  b.ptr = dst;
  if (shard)
    b.shard = *shard;
  return loadState(b);
}

int Program::loadState(const Persistent &b) {
  std::string path = checkpointFile(stateDir, sanitizeName(b.name) + ".npy");
  HostTensor t;
  Error own;
  bool read = !readNpy(path, t, own);
  if (read && sameSpec(t.spec, b.dtype, b.rank, b.dims) &&
      sameShard(stateDir, sanitizeName(b.name), b.shard))
    return upload(b.ptr, t.data.data(), t.data.size());
  bool found = false;
  size_t folders = 0;
  if (loadResharded(b, found, folders))
    return 1;
  if (found)
    return 0;
  std::string also =
      folders > 1
          ? " (nor is it whole or in all its tensor-parallel parts "
            "in the checkpoint's " +
                std::to_string(folders) + " folders '" + statePattern + "')"
          : std::string();
  if (!read)
    return fail(err,
                "--load-state: state '%s' cannot be read from '%s' (%s)%s; "
                "pass the folder --save-state wrote for this program",
                b.name.c_str(), path.c_str(), own.message.c_str(),
                also.c_str());
  return fail(err,
              "--load-state: '%s' holds %s %s but state '%s' is %s %s; it "
              "was saved by another program%s",
              path.c_str(), dtypeInfo(t.spec.dtype).name,
              shapeStr(t.spec.dims, t.spec.rank).c_str(), b.name.c_str(),
              dtypeInfo(b.dtype).name, shapeStr(b.dims, b.rank).c_str(),
              also.c_str());
}

bool Program::sameSpec(const TensorSpec &s, DType dt, int rank,
                       const int64_t *dims) {
  bool same = s.dtype == dt && s.rank == rank;
  for (int i = 0; same && i < rank; ++i)
    same = s.dims[i] == dims[i];
  return same;
}

bool Program::sameShard(const std::string &dir, const std::string &stem,
                        const Shard &want) {
  Shard s;
  std::vector<int64_t> full;
  bool entry = savedShard(dir, stem, s, full);
  bool part = entry && s.parts > 1;
  if (want.parts < 2)
    return !part;
  // A ZeRO block saved before blocks were described has no entry.
  bool same =
      part && s.dim == want.dim && s.blocks == want.blocks &&
      s.parts == want.parts && s.index == want.index &&
      s.partDim == want.partDim && s.partBlocks == want.partBlocks &&
      s.partParts == want.partParts && s.partIndex == want.partIndex &&
      s.outerDim == want.outerDim && s.outerBlocks == want.outerBlocks &&
      s.outerParts == want.outerParts && s.outerIndex == want.outerIndex;
  // A ZeRO block saved before blocks were described has no entry.
  return same || (want.flat() && want.partParts < 2 && !entry);
}

std::string Program::checkpointFile(std::string dir, const std::string &name) {
  while (dir.size() > 1 && dir.back() == '/')
    dir.pop_back();
  std::string moving = dir + ".commit/" + name;
  return access(moving.c_str(), F_OK) == 0 ? moving : dir + "/" + name;
}

std::vector<std::string> Program::checkpointFolders() const {
  if (statePattern.find("{rank}") == std::string::npos)
    return {stateDir};
  std::vector<std::string> dirs;
  for (int r = 0; r < (1 << 20); ++r) {
    std::string d = expandRank(statePattern, r);
    if (!isDirectory(d))
      break;
    dirs.push_back(d);
  }
  return dirs;
}

bool Program::savedShard(const std::string &dir, const std::string &stem,
                         Shard &s, std::vector<int64_t> &full) {
  std::string text;
  if (!readText(checkpointFile(dir, "shards.json"), text))
    return false;
  size_t at = text.find("\"" + stem + "\": {");
  if (at == std::string::npos)
    return false;
  const char *p = text.c_str() + at + stem.size() + 5; // "stem": {
  int used = 0;
  if (sscanf(p,
             "\"dim\": %d, \"blocks\": %d, \"parts\": %d, \"index\": "
             "%d, \"shape\": [%n",
             &s.dim, &s.blocks, &s.parts, &s.index, &used) != 4 ||
      !used)
    return false;
  full.clear();
  for (p += used; *p && *p != ']';) {
    char *end = nullptr;
    long long v = strtoll(p, &end, 10);
    if (end == p)
      return false;
    full.push_back(v);
    p = end;
    while (*p == ',' || *p == ' ')
      ++p;
  }
  if (*p != ']')
    return false;
  // A tensor-parallel part divides its dimension evenly (blocks x parts).
  auto divides = [&](int dim, int blocks, int parts) {
    return dim >= 0 && dim < (int)full.size() && blocks >= 1 && parts >= 1 &&
           full[dim] >= 0 && full[dim] % ((int64_t)blocks * parts) == 0;
  };
  // A ZeRO block of a tensor-parallel part names the part, in full, and
  // the outer part that part is of, if any (an expert rank's tensor part
  // of its experts).
  auto axis = [&](const char *key, int &dim, int &blocks, int &parts,
                  int &index) {
    std::string format = std::string(", \"") + key + "\": [%d, %d, %d, %d]%n";
    used = 0;
    if (sscanf(p, format.c_str(), &dim, &blocks, &parts, &index, &used) != 4 ||
        !used || parts < 2 || index < 0 || index >= parts ||
        !divides(dim, blocks, parts))
      return false;
    p += used;
    return true;
  };
  ++p; // past the shape's ']'
  if (!strncmp(p, ", \"part\"", 8) &&
      (!axis("part", s.partDim, s.partBlocks, s.partParts, s.partIndex) ||
       s.partDim == s.dim))
    return false;
  if (!strncmp(p, ", \"outer\"", 9) &&
      (s.partParts < 2 || !s.flat() ||
       !axis("outer", s.outerDim, s.outerBlocks, s.outerParts, s.outerIndex) ||
       s.outerDim == s.partDim))
    return false;
  return s.parts >= 1 && s.index >= 0 && s.index < s.parts &&
         s.dim < (int)full.size() &&
         (s.flat() || divides(s.dim, s.blocks, s.parts));
}

int Program::loadResharded(const Persistent &b, bool &found, size_t &folders) {
  int64_t full[8];
  int64_t elems = 1;
  const int fullRank = b.shard.flat() ? b.shard.flatRank : b.rank;
  for (int i = 0; i < fullRank; ++i) {
    full[i] = b.shard.flat() ? b.shard.flatShape[i]
                             : b.dims[i] * b.shard.partsAlong(i);
    elems *= full[i];
  }
  size_t esize = dtypeInfo(b.dtype).size;
  std::string stem = sanitizeName(b.name);
  std::vector<std::string> dirs = checkpointFolders();
  folders = dirs.size();
  std::vector<char> whole;
  std::vector<bool> got;
  for (const std::string &dir : dirs) {
    std::string path = checkpointFile(dir, stem + ".npy");
    HostTensor t;
    Error e;
    if (readNpy(path, t, e))
      continue;
    Shard s;
    std::vector<int64_t> shape;
    bool part = savedShard(dir, stem, s, shape) && s.parts > 1;
    if (!part) {
      if (!sameSpec(t.spec, b.dtype, fullRank, full))
        continue;
      whole = std::move(t.data);
      got.assign(1, true);
      break;
    }
    bool fits = t.spec.dtype == b.dtype && (int)shape.size() == fullRank;
    for (int i = 0; fits && i < fullRank; ++i)
      fits = shape[i] == full[i];
    if (!fits || t.spec.numel() != shardElements(full, fullRank, s))
      continue;
    if (got.size() != (size_t)s.count()) {
      got.assign(s.count(), false);
      whole.assign((size_t)elems * esize, 0);
    }
    if (got[s.ordinal()])
      continue; // another replica's copy of the same part
    // A tensor-parallel part's runs, or a ZeRO block up to its padding.
    forEachShardRun(full, fullRank, s,
                    [&](int64_t at, int64_t from, int64_t n) {
                      memcpy(whole.data() + at * esize,
                             t.data.data() + from * esize, n * esize);
                    });
    got[s.ordinal()] = true;
  }
  found = !got.empty();
  for (bool g : got)
    found = found && g;
  if (!found)
    return 0;
  if (!reshardNoted && rank == 0)
    fprintf(stderr,
            "note: --load-state: '%s' was saved under another plan; each "
            "tensor is read from the checkpoint's folders that hold it\n",
            statePattern.c_str());
  reshardNoted = true;
  if (b.shard.parts < 2)
    return upload(b.ptr, whole.data(), whole.size());
  // This rank's part (a ZeRO block: zero past the tensor's end).
  std::vector<char> mine(
      (size_t)(shardElements(full, fullRank, b.shard) * esize), 0);
  forEachShardRun(
      full, fullRank, b.shard, [&](int64_t at, int64_t to, int64_t n) {
        memcpy(mine.data() + to * esize, whole.data() + at * esize, n * esize);
      });
  return upload(b.ptr, mine.data(), mine.size());
}

int Program::saveState(const std::string &dir) {
  std::string shards;
  for (Persistent &b : persistent) {
    if (b.shard.parts < 2)
      continue;
    std::string full;
    if (b.shard.flat())
      for (int i = 0; i < b.shard.flatRank; ++i)
        full += (i ? ", " : "") + std::to_string(b.shard.flatShape[i]);
    else
      for (int i = 0; i < b.rank; ++i)
        full +=
            (i ? ", " : "") + std::to_string(b.dims[i] * b.shard.partsAlong(i));
    shards += std::string(shards.empty() ? "" : ",\n") + "  \"" +
              sanitizeName(b.name) +
              "\": {\"dim\": " + std::to_string(b.shard.dim) +
              ", \"blocks\": " + std::to_string(b.shard.blocks) +
              ", \"parts\": " + std::to_string(b.shard.parts) +
              ", \"index\": " + std::to_string(b.shard.index) +
              ", \"shape\": [" + full + "]" +
              (b.shard.partParts < 2
                   ? std::string()
                   : ", \"part\": [" + std::to_string(b.shard.partDim) + ", " +
                         std::to_string(b.shard.partBlocks) + ", " +
                         std::to_string(b.shard.partParts) + ", " +
                         std::to_string(b.shard.partIndex) + "]") +
              (b.shard.outerParts < 2
                   ? std::string()
                   : ", \"outer\": [" + std::to_string(b.shard.outerDim) +
                         ", " + std::to_string(b.shard.outerBlocks) + ", " +
                         std::to_string(b.shard.outerParts) + ", " +
                         std::to_string(b.shard.outerIndex) + "]") +
              "}";
  }
  for (Persistent &b : persistent) {
    TensorSpec spec;
    spec.name = b.name.c_str();
    spec.dtype = b.dtype;
    spec.rank = b.rank;
    for (int i = 0; i < b.rank; ++i)
      spec.dims[i] = b.dims[i];
    std::vector<char> host(spec.bytes());
    std::string file = sanitizeName(b.name) + ".npy";
    if (download(host.data(), b.ptr, host.size()) ||
        writeNpy(dir + "/" + file, spec, host.data(), err))
      return 1;
  }
  // Beside the tensors: the shards' layout, and the steps done (what
  // dist-run --elastic resumes from).
  auto writeText = [&](const char *name, const std::string &text) {
    return writeFile(dir + "/" + name, text.data(), text.size(), "--save-state",
                     err);
  };
  if (!shards.empty() && writeText("shards.json", "{\n" + shards + "\n}\n"))
    return 1;
  if (stepsDone >= 0 &&
      writeText("progress.json",
                "{\"steps\": " + std::to_string(stepsDone) + "}\n"))
    return 1;
  return 0;
}

int Program::saveStateAtomically(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/')
    dir.pop_back();
  std::string partial = dir + ".partial", commit = dir + ".commit";
  if (finishCommit(dir) || makeParentDirs(partial + "/x", err) ||
      makeParentDirs(dir + "/x", err) || clearFolder(partial) ||
      saveState(partial))
    return 1;
  if (rename(partial.c_str(), commit.c_str()) != 0)
    return fail(err, "--save-state: cannot rename '%s' to '%s' (%s)",
                partial.c_str(), commit.c_str(), strerror(errno));
  return finishCommit(dir);
}

int Program::finishCommit(const std::string &dir) {
  std::string commit = dir + ".commit";
  std::vector<std::string> names;
  if (listFolder(commit, names))
    return 1;
  for (const std::string &f : names) {
    if (rename((commit + "/" + f).c_str(), (dir + "/" + f).c_str()) != 0)
      return fail(err, "--save-state: cannot move '%s/%s' into '%s' (%s)",
                  commit.c_str(), f.c_str(), dir.c_str(), strerror(errno));
    injectFault("kill-saving", rank, stepsDone);
  }
  if (!names.empty() || access(commit.c_str(), F_OK) == 0)
    if (rmdir(commit.c_str()) != 0)
      return fail(err, "--save-state: cannot remove '%s' (%s)", commit.c_str(),
                  strerror(errno));
  return 0;
}

int Program::clearFolder(const std::string &dir) {
  std::vector<std::string> names;
  if (listFolder(dir, names))
    return 1;
  for (const std::string &f : names)
    if (unlink((dir + "/" + f).c_str()) != 0)
      return fail(err,
                  "--save-state: cannot remove '%s/%s' (%s), left by a "
                  "save that did not finish",
                  dir.c_str(), f.c_str(), strerror(errno));
  return 0;
}

int Program::listFolder(const std::string &dir,
                        std::vector<std::string> &names) {
  names.clear();
  DIR *d = opendir(dir.c_str());
  if (!d)
    return errno == ENOENT ? 0
                           : fail(err, "--save-state: cannot read '%s' (%s)",
                                  dir.c_str(), strerror(errno));
  while (struct dirent *e = readdir(d))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
      names.push_back(e->d_name);
  closedir(d);
  return 0;
}

void Program::releasePersistent() {
  for (Persistent &b : persistent)
    distrt_free(ctx, b.ptr);
  persistent.clear();
  for (Kept &k : kept)
    distrt_free(ctx, k.ptr);
  kept.clear();
}

void *Program::keptBuffer(const char *name, size_t bytes, bool &fresh) {
  fresh = false;
  for (Kept &k : kept)
    if (k.name == name)
      return k.ptr;
  void *p = nullptr;
  if (distrt_alloc(ctx, bytes ? bytes : 1, &p) != DISTRT_OK) {
    fail(err, "out of memory allocating '%s' (%zu bytes): %s", name, bytes,
         distrt_last_error(ctx));
    return nullptr;
  }
  kept.push_back({name, p});
  fresh = true;
  return p;
}

void *Program::arena(const char *name, size_t bytes) {
  bool fresh = false;
  return keptBuffer((std::string("arena.") + name).c_str(), bytes, fresh);
}

void *Program::residentBuffer(const char *name, size_t bytes, bool &fresh) {
  return keptBuffer(name, bytes, fresh);
}

void *Program::alloc(size_t bytes) {
  void *p = nullptr;
  if (distrt_alloc(ctx, bytes ? bytes : 1, &p) != DISTRT_OK) {
    fail(err, "out of memory allocating %zu bytes: %s", bytes,
         distrt_last_error(ctx));
    return nullptr;
  }
  live.push_back(p);
  return p;
}

void Program::release(void *p) {
  for (size_t i = 0; i < live.size(); ++i)
    if (live[i] == p) {
      distrt_free(ctx, p);
      live[i] = live.back();
      live.pop_back();
      return;
    }
}

void Program::releaseAll() {
  for (void *p : live)
    distrt_free(ctx, p);
  live.clear();
}

int Program::transfer(void *dst, const void *src, size_t bytes,
                      distrt_copy_kind kind, const char *what) {
  if (!bytes)
    return 0;
  if (!device) {
    memcpy(dst, src, bytes);
    return 0;
  }
  if (distrt_copy(ctx, dst, src, bytes, kind) != DISTRT_OK)
    return fail(err, "%s failed: %s", what, distrt_last_error(ctx));
  return 0;
}

int Program::upload(void *dst, const void *src, size_t bytes) {
  return transfer(dst, src, bytes, DISTRT_COPY_HOST_TO_DEVICE,
                  "host-to-device copy");
}

int Program::download(void *dst, const void *src, size_t bytes) {
  return transfer(dst, src, bytes, DISTRT_COPY_DEVICE_TO_HOST,
                  "device-to-host copy");
}

int Program::copy(void *dst, const void *src, size_t bytes) {
  if (dst == src)
    return 0;
  return transfer(dst, src, bytes, DISTRT_COPY_DEVICE_TO_DEVICE, "device copy");
}

FILE *Program::openWeights(const char *name, const char *file, int64_t offset,
                           int64_t size, std::string &path) {
  std::string dir = weightsDir.empty() ? modelDir : weightsDir;
  path = (dir.empty() ? std::string() : dir + "/") + file;
  FILE *f = fopen(path.c_str(), "rb");
  if (!f)
    fail(err,
         "weight '%s': cannot open weights file '%s' (%s); it must hold "
         "%lld bytes at offset %lld. Put the file there or pass "
         "--weights-dir DIR naming the folder that holds '%s'",
         name, path.c_str(), strerror(errno), (long long)size,
         (long long)offset, file);
  return f;
}

int Program::loadWeight(const char *name, const char *file, int64_t offset,
                        int64_t size, void *dst) {
  std::string path;
  FILE *f = openWeights(name, file, offset, size, path);
  if (!f)
    return 1;
  std::vector<char> buf((size_t)size);
  bool ok =
      fseek(f, (long)offset, SEEK_SET) == 0 &&
      (size == 0 || fread(buf.data(), 1, (size_t)size, f) == (size_t)size);
  fclose(f);
  if (!ok)
    return fail(err,
                "weight '%s': weights file '%s' is too short: %lld bytes "
                "needed at offset %lld; is it the file the model was "
                "exported with?",
                name, path.c_str(), (long long)size, (long long)offset);
  return upload(dst, buf.data(), (size_t)size);
}

int Program::initWeight(const char *name, DType dt, const int64_t *dims,
                        int rank, void *dst) {
  std::vector<char> buf;
  fillWeight(name, dt, dims, rank, buf);
  return upload(dst, buf.data(), buf.size());
}

int Program::loadWeightShard(const char *name, const char *file, int64_t offset,
                             DType dt, const int64_t *dims, int rank,
                             const Shard &shard, void *dst) {
  int64_t n = 1, elem = (int64_t)dtypeInfo(dt).size;
  for (int i = 0; i < rank; ++i)
    n *= dims[i];
  std::string path;
  FILE *f = openWeights(name, file, offset, n * elem, path);
  if (!f)
    return 1;
  std::vector<char> buf((size_t)(shardElements(dims, rank, shard) * elem));
  bool ok = true;
  forEachShardRun(
      dims, rank, shard, [&](int64_t from, int64_t to, int64_t count) {
        ok = ok && fseek(f, (long)(offset + from * elem), SEEK_SET) == 0 &&
             fread(buf.data() + to * elem, 1, (size_t)(count * elem), f) ==
                 (size_t)(count * elem);
      });
  fclose(f);
  if (!ok)
    return fail(err,
                "weight '%s': weights file '%s' is too short for its "
                "%lld bytes at offset %lld; is it the file the model was "
                "exported with?",
                name, path.c_str(), (long long)(n * elem), (long long)offset);
  return upload(dst, buf.data(), buf.size());
}

int Program::initWeightShard(const char *name, DType dt, const int64_t *dims,
                             int rank, const Shard &shard, void *dst) {
  std::vector<char> full;
  fillWeight(name, dt, dims, rank, full);
  int64_t elem = (int64_t)dtypeInfo(dt).size;
  std::vector<char> buf((size_t)(shardElements(dims, rank, shard) * elem));
  forEachShardRun(dims, rank, shard,
                  [&](int64_t from, int64_t to, int64_t count) {
                    memcpy(buf.data() + to * elem, full.data() + from * elem,
                           (size_t)(count * elem));
                  });
  return upload(dst, buf.data(), buf.size());
}

void Program::fillWeight(const char *name, DType dt, const int64_t *dims,
                         int rank, std::vector<char> &buf) {
  int64_t n = 1;
  for (int i = 0; i < rank; ++i)
    n *= dims[i];
  buf.assign((size_t)n * dtypeInfo(dt).size, 0);
  uint64_t seed = 1469598103934665603ull;
  for (const char *c = name; *c; ++c)
    seed = (seed ^ (unsigned char)*c) * 1099511628211ull;
  std::string nm(name);
  auto ends = [&](const char *s) {
    size_t l = strlen(s);
    return nm.size() >= l && nm.compare(nm.size() - l, l, s) == 0;
  };
  bool scaleLike = ends("weight") || ends("scale") || ends("gamma") ||
                   ends("var") || ends("running_var");
  for (int64_t i = 0; i < n; ++i) {
    double v;
    if (rank >= 2) {
      uint64_t z = seed + (uint64_t)i * 0x9E3779B97F4A7C15ull;
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
      z ^= z >> 31;
      double u = (double)(z >> 11) * (1.0 / 9007199254740992.0);
      double bound = 1.0 / std::sqrt((double)(n / dims[0]));
      v = (2 * u - 1) * bound;
    } else {
      v = scaleLike ? 1.0 : 0.0;
    }
    if (dt == F32)
      ((float *)buf.data())[i] = (float)v;
    else if (dt == F64)
      ((double *)buf.data())[i] = v;
  }
}

} // namespace dg
