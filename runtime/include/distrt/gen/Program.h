//===- distrt/gen/Program.h - Run state, buffers, weights, loops ----------===//
//
// Part of the support code of programs dist-compile generates
// (distrt_gen.h includes every piece; docs/codegen.md).
//
//===----------------------------------------------------------------------===//
#ifndef DISTRT_GEN_PROGRAM_H
#define DISTRT_GEN_PROGRAM_H

#include "distrt/gen/Npy.h"
#include "distrt/gen/Profile.h"

#include <algorithm>
#include <csignal>
#include <cstring>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

namespace dg {

/// The file stem of a tensor name: every character outside
/// [A-Za-z0-9_.-] becomes '_' (outputs and saved state, docs/codegen.md).
inline std::string sanitizeName(const std::string &name) {
  std::string s(name);
  for (char &c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
          (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.'))
      c = '_';
  return s.empty() ? std::string("_") : s;
}

/// "{rank}" in a folder name becomes this process's rank (--save-state and
/// --load-state DIR{rank}: one folder per data-parallel rank).
inline std::string expandRank(std::string dir, int rank) {
  for (size_t at = dir.find("{rank}"); at != std::string::npos;
       at = dir.find("{rank}", at))
    dir.replace(at, 6, std::to_string(rank));
  return dir;
}

/// Which part of a tensor a rank holds. A tensor-parallel part
/// (`dist.tp_shard`): dimension `dim` of the full tensor viewed as
/// [blocks][parts][n], rank `index` on the parts axis keeping its n of every
/// block. A ZeRO block (`dist.zero_shard`, dim = -1): block `index` of the
/// `parts` equal blocks of the flattened tensor of `flatShape`, zero-padded
/// at the end; with partParts > 1 the blocks are of the tensor-parallel
/// part (partDim, partBlocks, partParts, partIndex) of that tensor, in the
/// part's order, rather than of the whole tensor (ZeRO under tensor
/// parallelism). A tensor-parallel part with partParts > 1 is likewise a
/// part of that part (an expert-parallel rank's experts, partDim 0, split
/// over the tensor ranks along a feature axis, `dim` another dimension).
/// parts = 1: the whole tensor.
struct Shard {
  int dim = 0, blocks = 1, parts = 1, index = 0;
  const int64_t *flatShape = nullptr;
  int flatRank = 0;
  int partDim = 0, partBlocks = 1, partParts = 1, partIndex = 0;
  bool flat() const { return dim < 0; }
  /// The tensor-parallel part a ZeRO block is cut from (parts = 1: the
  /// whole tensor).
  Shard tensorPart() const {
    Shard p;
    p.dim = partDim;
    p.blocks = partBlocks;
    p.parts = partParts;
    p.index = partIndex;
    return p;
  }
  /// How many parts of a tensor-parallel part (dim >= 0) make the whole
  /// tensor along dimension \p i.
  int64_t partsAlong(int i) const {
    return (i == dim ? parts : 1) *
           (partParts > 1 && i == partDim ? partParts : 1);
  }
  /// How many shards make the whole tensor, and which one this is.
  int count() const { return parts * partParts; }
  int ordinal() const { return partIndex * parts + index; }
};

/// The elements shard `s` of the full tensor (dims, rank) holds: a ZeRO
/// block rounds up (its tail past the tensor or part is padding).
inline int64_t shardElements(const int64_t *dims, int rank, const Shard &s) {
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
inline void forEachAxisRun(const int64_t *dims, int rank, const Shard &s,
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
inline void forEachPartRun(const int64_t *dims, int rank, const Shard &s,
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
inline void forEachShardRun(const int64_t *dims, int rank, const Shard &s,
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

//===----------------------------------------------------------------------===//
// Execution state of one model run
//===----------------------------------------------------------------------===//

/// Fault injection for the recovery tests (docs/resilience.md):
/// DISTRT_FAULT=KIND:RANK:STEP kills rank RANK with SIGKILL, as a machine
/// that disappears: KIND `kill` right after its training step STEP,
/// checkpoint included; `kill-saving` in the checkpoint after step STEP,
/// once that counts and its first file has moved into the folder.
inline void injectFault(const char *kind, int rank, long long step) {
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

struct Program {
  distrt_context *ctx = nullptr;
  bool device = false;    ///< buffers live in CUDA device memory
  void *stream = nullptr; ///< CUDA stream shared with the runtime
  std::string weightsDir; ///< overrides the model's folder when set
  std::string modelDir;   ///< folder the weight references are relative to
  /// When set (--load-state), every persistent buffer starts from
  /// DIR/<name>.npy as --save-state wrote it instead of its weights or init.
  std::string stateDir;
  /// --load-state as given: with {rank}, the folders of every rank of the
  /// job that saved the checkpoint (re-sharding, loadResharded).
  std::string statePattern;
  bool reshardNoted = false;
  std::vector<HostTensor> inputs;
  std::vector<HostTensor> outputs;
  std::vector<void *> live; ///< every allocation not yet freed
  Error err;
  /// The world communicator: created by main when the model holds
  /// collectives (data parallelism), else null.
  distrt_comm *comm = nullptr;
  int rank = 0;      ///< this process's rank in the job
  int worldSize = 1; ///< ranks in the job
  /// The data-parallel replica whose rows of the batch-sharded inputs this
  /// rank keeps, of `replicas` (the model table's replicaOf; else rank of
  /// worldSize).
  int replica = 0, replicas = 1;
  /// The block of the whole batch the running function computes, of
  /// batchBlocks equal, contiguous ones: the replica's rows, or in a
  /// pipeline the micro-batch of the stage call (replica * microbatches +
  /// micro-batch). Dropout masks marked `dist.batch_block` draw that block
  /// of one process's masks.
  uint64_t batchBlock = 0, batchBlocks = 1;

  /// Set by --profile: every emitted op is timed into it.
  Profiler *prof = nullptr;

  /// Set by --trace: the executor's timeline. A pipeline rank's program
  /// calls traceAction at the first op of each schedule action it runs
  /// (and with nullptr after the last): an event spans from one call to the
  /// next, named as the schedule names the action ("F3.0", "OPT").
  struct TraceEvent {
    const char *name;
    long long step;
    double start, end;
  };
  std::vector<TraceEvent> *trace = nullptr;
  long long traceStep = 0;
  const char *traceOpen = nullptr;
  double traceOpenedAt = 0;
  void traceAction(const char *name) {
    if (!trace)
      return;
    if (device)
      distrt_synchronize(ctx);
    double now = wallSeconds();
    if (traceOpen)
      trace->push_back({traceOpen, traceStep, traceOpenedAt, now});
    traceOpen = name;
    traceOpenedAt = now;
  }
  /// The clock before op `id` (0 when not profiling). CUDA work is
  /// asynchronous: the stream is drained so the time is the op's own.
  double profStart() {
    if (!prof)
      return 0;
    if (device)
      distrt_synchronize(ctx);
    return wallSeconds();
  }
  void profStop(int id, double start) {
    if (!prof)
      return;
    if (device)
      distrt_synchronize(ctx);
    prof->add(id, wallSeconds() - start);
  }

  /// Communicators of collectives over a subset of the ranks (the
  /// data-parallel replicas of one pipeline stage): made by the group's
  /// ranks when they first need it (distrt_comm_group), kept for the run.
  struct Group {
    std::vector<int32_t> ranks;
    distrt_comm *comm;
  };
  std::vector<Group> groups;

  /// The row of `groups` (`count` rows of `n` ranks) that holds this rank;
  /// nullptr with `err` set when none does (a program launched with a
  /// layout other than its plan's).
  const int32_t *groupHolding(const int32_t *groups, int count, int n,
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
  /// The communicator of the `n` ranks `ranks`, this rank among them: the
  /// world's when they are ranks 0..worldSize-1 in order; nullptr with
  /// `err` set when the job's world cannot hold the group.
  distrt_comm *group(const int32_t *ranks, int n, const char *where) {
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
  /// Destroys the group communicators (before the world's).
  void releaseGroups() {
    for (Group &g : groups)
      distrt_comm_destroy(g.comm);
    groups.clear();
  }

  /// Buffers that outlive one call of a training step: weights (loaded on
  /// first use) and optimizer state (filled with its init on first use);
  /// results marked `graph.update` are copied into them after each step.
  struct Persistent {
    std::string name;
    DType dtype;
    int rank;
    int64_t dims[8];
    void *ptr;
    Shard shard; ///< this rank's part of a tensor-parallel tensor
  };
  std::vector<Persistent> persistent;

  /// The persistent buffer `name`, created on first use (`fresh` set).
  void *persistentBuffer(const char *name, DType dt, int rank,
                         const int64_t *dims, bool &fresh,
                         const Shard *shard = nullptr) {
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
  /// Fills `b` from stateDir (a resumed run): from its own file when that
  /// has the buffer's type and shape, else (a checkpoint saved under
  /// another plan) assembled from the checkpoint's folders.
  int loadState(const Persistent &b) {
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

  static bool sameSpec(const TensorSpec &s, DType dt, int rank,
                       const int64_t *dims) {
    bool same = s.dtype == dt && s.rank == rank;
    for (int i = 0; same && i < rank; ++i)
      same = s.dims[i] == dims[i];
    return same;
  }

  /// Whether DIR saved the same tensor-parallel part of `stem` as `want`
  /// (or, for a whole tensor, a whole one).
  static bool sameShard(const std::string &dir, const std::string &stem,
                        const Shard &want) {
    Shard s;
    std::vector<int64_t> full;
    bool entry = savedShard(dir, stem, s, full);
    bool part = entry && s.parts > 1;
    if (want.parts < 2)
      return !part;
    // A ZeRO block saved before blocks were described has no entry.
    bool same = part && s.dim == want.dim && s.blocks == want.blocks &&
                s.parts == want.parts && s.index == want.index &&
                s.partDim == want.partDim && s.partBlocks == want.partBlocks &&
                s.partParts == want.partParts && s.partIndex == want.partIndex;
    // A ZeRO block saved before blocks were described has no entry.
    return same || (want.flat() && want.partParts < 2 && !entry);
  }

  /// The path of file \p name of checkpoint folder \p dir: DIR.commit's
  /// copy when a save that died while moving its files in left one there
  /// (saveStateAtomically), else DIR's.
  static std::string checkpointFile(std::string dir, const std::string &name) {
    while (dir.size() > 1 && dir.back() == '/')
      dir.pop_back();
    std::string moving = dir + ".commit/" + name;
    return access(moving.c_str(), F_OK) == 0 ? moving : dir + "/" + name;
  }

  /// The folders of a checkpoint: with {rank} in --load-state, those of
  /// ranks 0, 1, ... up to the first that does not exist; else the one.
  std::vector<std::string> checkpointFolders() const {
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

  /// The entry of tensor file `stem` in DIR/shards.json (as saveState
  /// writes it): which part the folder holds and the full shape.
  static bool savedShard(const std::string &dir, const std::string &stem,
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
      return dim >= 0 && dim < (int)full.size() && blocks >= 1 &&
             parts >= 1 && full[dim] >= 0 &&
             full[dim] % ((int64_t)blocks * parts) == 0;
    };
    // A ZeRO block of a tensor-parallel part names the part, in full.
    if (!strncmp(p + 1, ", \"part\"", 8)) {
      used = 0;
      if (sscanf(p + 1, ", \"part\": [%d, %d, %d, %d]%n", &s.partDim,
                 &s.partBlocks, &s.partParts, &s.partIndex, &used) != 4 ||
          !used || s.partDim == s.dim || s.partParts < 2 || s.partIndex < 0 ||
          s.partIndex >= s.partParts ||
          !divides(s.partDim, s.partBlocks, s.partParts))
        return false;
    }
    return s.parts >= 1 && s.index >= 0 && s.index < s.parts &&
           s.dim < (int)full.size() &&
           (s.flat() || divides(s.dim, s.blocks, s.parts));
  }

  /// A checkpoint saved under another plan (pipeline stages on other
  /// ranks, other tensor-parallel parts): the whole tensor of `b` from any
  /// folder of the checkpoint that holds it whole, or from its
  /// tensor-parallel parts, then this rank's part of it. `found` says
  /// whether it was there; `folders`, how many folders were looked at.
  int loadResharded(const Persistent &b, bool &found, size_t &folders) {
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
    forEachShardRun(full, fullRank, b.shard,
                    [&](int64_t at, int64_t to, int64_t n) {
                      memcpy(mine.data() + to * esize,
                             whole.data() + at * esize, n * esize);
                    });
    return upload(b.ptr, mine.data(), mine.size());
  }
  /// Writes every persistent buffer as DIR/<name>.npy, and for the
  /// tensor-parallel shards among them DIR/shards.json: per tensor its
  /// full shape and which part this rank holds (docs/distributed.md).
  /// Training steps done when the state is saved, counted from the run's
  /// --first-step (written as DIR/progress.json; -1: not a training run).
  long long stepsDone = -1;
  int saveState(const std::string &dir) {
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
          full += (i ? ", " : "") +
                  std::to_string(b.dims[i] * b.shard.partsAlong(i));
      shards += std::string(shards.empty() ? "" : ",\n") + "  \"" +
                sanitizeName(b.name) + "\": {\"dim\": " +
                std::to_string(b.shard.dim) +
                ", \"blocks\": " + std::to_string(b.shard.blocks) +
                ", \"parts\": " + std::to_string(b.shard.parts) +
                ", \"index\": " + std::to_string(b.shard.index) +
                ", \"shape\": [" + full + "]" +
                (b.shard.partParts < 2
                     ? std::string()
                     : ", \"part\": [" + std::to_string(b.shard.partDim) +
                           ", " + std::to_string(b.shard.partBlocks) + ", " +
                           std::to_string(b.shard.partParts) + ", " +
                           std::to_string(b.shard.partIndex) + "]") +
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
      std::string path = dir + "/" + name;
      FILE *f = fopen(path.c_str(), "w");
      bool ok = f && fputs(text.c_str(), f) >= 0;
      if (f)
        ok = fclose(f) == 0 && ok;
      if (!ok)
        return fail(err, "--save-state: cannot write '%s' (%s)", path.c_str(),
                    strerror(errno));
      return 0;
    };
    if (!shards.empty() && writeText("shards.json", "{\n" + shards + "\n}\n"))
      return 1;
    if (stepsDone >= 0 &&
        writeText("progress.json",
                  "{\"steps\": " + std::to_string(stepsDone) + "}\n"))
      return 1;
    return 0;
  }
  /// saveState into \p dir so that a job that dies while saving leaves a
  /// whole checkpoint, the previous one or the new one: every file is
  /// written into DIR.partial first; renaming that folder to DIR.commit is
  /// the moment the new checkpoint counts; then its files move into DIR
  /// one by one. Until DIR.commit is gone, a file still in it is newer
  /// than DIR's (checkpointFile): readers take it from there, and the next
  /// save finishes the move before it starts.
  int saveStateAtomically(std::string dir) {
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
  /// Moves every file of DIR.commit (a save that counts) into DIR and
  /// removes the folder; nothing to do without one.
  int finishCommit(const std::string &dir) {
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
        return fail(err, "--save-state: cannot remove '%s' (%s)",
                    commit.c_str(), strerror(errno));
    return 0;
  }
  /// Removes the files a save that died while writing left in \p dir.
  int clearFolder(const std::string &dir) {
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
  /// The entries of \p dir but . and ..; none when it does not exist.
  int listFolder(const std::string &dir, std::vector<std::string> &names) {
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
  void releasePersistent() {
    for (Persistent &b : persistent)
      distrt_free(ctx, b.ptr);
    persistent.clear();
    for (Kept &k : kept)
      distrt_free(ctx, k.ptr);
    kept.clear();
  }

  /// Buffers of the static memory plan, made on the first run and kept for
  /// the life of the process: each body's arena (one slot per value,
  /// reused by live range) and resident weights and constants (filled
  /// once; not written by --save-state, unlike `persistent`).
  struct Kept {
    std::string name;
    void *ptr;
  };
  std::vector<Kept> kept;
  void *keptBuffer(const char *name, size_t bytes, bool &fresh) {
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
  /// The arena of the body `name` (dist-prepare-for-emission's plan).
  void *arena(const char *name, size_t bytes) {
    bool fresh = false;
    return keptBuffer((std::string("arena.") + name).c_str(), bytes, fresh);
  }
  /// A resident buffer; `fresh` on the run that must fill it.
  void *residentBuffer(const char *name, size_t bytes, bool &fresh) {
    return keptBuffer(name, bytes, fresh);
  }
  /// Fills a buffer of `n` elements of type T with `value`.
  template <typename T> int fillValue(T *dst, int64_t n, T value);

  void *alloc(size_t bytes) {
    void *p = nullptr;
    if (distrt_alloc(ctx, bytes ? bytes : 1, &p) != DISTRT_OK) {
      fail(err, "out of memory allocating %zu bytes: %s", bytes,
           distrt_last_error(ctx));
      return nullptr;
    }
    live.push_back(p);
    return p;
  }
  void release(void *p) {
    for (size_t i = 0; i < live.size(); ++i)
      if (live[i] == p) {
        distrt_free(ctx, p);
        live[i] = live.back();
        live.pop_back();
        return;
      }
  }
  void releaseAll() {
    for (void *p : live)
      distrt_free(ctx, p);
    live.clear();
  }
  /// Copies host bytes into a buffer of the backend.
  int upload(void *dst, const void *src, size_t bytes) {
    if (!bytes)
      return 0;
    if (!device) {
      memcpy(dst, src, bytes);
      return 0;
    }
    if (distrt_copy(ctx, dst, src, bytes, DISTRT_COPY_HOST_TO_DEVICE) !=
        DISTRT_OK)
      return fail(err, "host-to-device copy failed: %s",
                  distrt_last_error(ctx));
    return 0;
  }
  int download(void *dst, const void *src, size_t bytes) {
    if (!bytes)
      return 0;
    if (!device) {
      memcpy(dst, src, bytes);
      return 0;
    }
    if (distrt_copy(ctx, dst, src, bytes, DISTRT_COPY_DEVICE_TO_HOST) !=
        DISTRT_OK)
      return fail(err, "device-to-host copy failed: %s",
                  distrt_last_error(ctx));
    return 0;
  }
  /// Copies between two buffers of the backend.
  int copy(void *dst, const void *src, size_t bytes) {
    if (!bytes || dst == src)
      return 0;
    if (!device) {
      memcpy(dst, src, bytes);
      return 0;
    }
    if (distrt_copy(ctx, dst, src, bytes, DISTRT_COPY_DEVICE_TO_DEVICE) !=
        DISTRT_OK)
      return fail(err, "device copy failed: %s", distrt_last_error(ctx));
    return 0;
  }
  /// Fails, naming `what` (the op and its location), unless each of the
  /// `n` indices at `ix` (row-major, in this backend's memory) lies in
  /// [-bound, bound) for its bound `bounds[p % k]` (p its position): the
  /// generated gather_nd and scatter_elements loops address memory with
  /// them.
  template <typename T>
  int checkIndices(const T *ix, int64_t n, const int64_t *bounds, int64_t k,
                   const char *what) {
    std::vector<T> host;
    if (device) {
      host.resize(n);
      if (download(host.data(), ix, n * sizeof(T)))
        return 1;
      ix = host.data();
    }
    for (int64_t p = 0; p < n; ++p) {
      int64_t v = (int64_t)ix[p], bound = bounds[p % k];
      if (v < -bound || v >= bound)
        return fail(err,
                    "%s: index %lld (element %lld of the indices) is outside "
                    "[%lld, %lld), the size of the dimension it addresses; "
                    "fix the indices the model is given",
                    what, (long long)v, (long long)p, (long long)-bound,
                    (long long)bound);
    }
    return 0;
  }
  /// Checks a runtime call; `what` names the op and its location.
  int check(distrt_status s, const char *what) {
    if (s == DISTRT_OK)
      return 0;
    return fail(err, "%s failed (%s): %s", what, distrt_status_string(s),
                distrt_last_error(ctx));
  }
  /// Reads `size` bytes of weight `name` from `file` (relative to the
  /// model's folder, or to --weights-dir) at `offset` into `dst`.
  /// Opens the file of weight `name` (`size` bytes at `offset`, for the
  /// message), setting `path`; null with the error set when it cannot.
  FILE *openWeights(const char *name, const char *file, int64_t offset,
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
  int loadWeight(const char *name, const char *file, int64_t offset,
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
  /// Initializes a weight that has no data (graph-only model) by the rule
  /// in docs/codegen.md: float tensors of rank >= 2 uniform in
  /// [-1/sqrt(fan_in), 1/sqrt(fan_in)] from a hash of (name, index); rank <= 1
  /// floats 1 for scale-like names, else 0; integer tensors 0.
  int initWeight(const char *name, DType dt, const int64_t *dims, int rank,
                 void *dst) {
    std::vector<char> buf;
    fillWeight(name, dt, dims, rank, buf);
    return upload(dst, buf.data(), buf.size());
  }
  /// A rank's part of a weight (a tensor-parallel part or a ZeRO-3
  /// block): the runs of the full tensor (dims: its full shape) that
  /// `shard` holds, read from the file one by one, so a rank reads only its
  /// part.
  int loadWeightShard(const char *name, const char *file, int64_t offset,
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
    forEachShardRun(dims, rank, shard, [&](int64_t from, int64_t to,
                                           int64_t count) {
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
  /// initWeight's values of the full tensor (dims), this rank's shard.
  int initWeightShard(const char *name, DType dt, const int64_t *dims,
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
  /// The values initWeight gives a weight of shape dims, into `buf`.
  static void fillWeight(const char *name, DType dt, const int64_t *dims,
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
};

//===----------------------------------------------------------------------===//
// Tensor descriptors and loops
//===----------------------------------------------------------------------===//

inline distrt_tensor T(void *data, distrt_dtype dtype,
                       std::initializer_list<int64_t> dims) {
  return distrt_make_tensor(data, dtype, (int32_t)dims.size(), dims.begin());
}
/// A strided tensor (a view or a channels-last buffer of the memory plan).
inline distrt_tensor TS(void *data, distrt_dtype dtype,
                        std::initializer_list<int64_t> dims,
                        std::initializer_list<int64_t> strides) {
  return distrt_make_strided_tensor(data, dtype, (int32_t)dims.size(),
                                    dims.begin(), strides.begin());
}

#ifdef __CUDACC__
template <typename F> __global__ void parallelForKernel(int64_t n, F f) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    f(i);
}
/// Runs f(i) for i in [0, n) on the GPU (the runtime's stream).
template <typename F> inline int parallelFor(Program &P, int64_t n, F f) {
  if (n <= 0)
    return 0;
  int64_t blocks = (n + 255) / 256;
  if (blocks > 65535)
    blocks = 65535;
  parallelForKernel<<<(unsigned)blocks, 256, 0, (cudaStream_t)P.stream>>>(n, f);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    return fail(P.err, "generated kernel launch failed: %s",
                cudaGetErrorString(e));
  return 0;
}
/// Runs f(lo, hi) over [0, n): on the GPU one item per thread, so a body's
/// prologue costs what it did inside parallelFor.
template <typename F> inline int parallelChunks(Program &P, int64_t n, F f) {
  return parallelFor(P, n, [=] DG_HD(int64_t i) { f(i, i + 1); });
}
#else
/// Runs f(lo, hi) over [0, n) in chunks of 4096 items (OpenMP threads above
/// 32K items): a body whose prologue reads scalars from tensors (a step
/// counter, a skip flag) runs it once a chunk, and its inner loop
/// vectorizes.
template <typename F> inline int parallelChunks(Program &, int64_t n, F f) {
  constexpr int64_t chunk = 4096;
  int64_t chunks = (n + chunk - 1) / chunk;
#pragma omp parallel for if (n > 32768) schedule(static)
  for (int64_t c = 0; c < chunks; ++c)
    f(c * chunk, c * chunk + chunk < n ? c * chunk + chunk : n);
  return 0;
}
/// Runs f(lo, hi) over rows [0, rows) of `cols` items each, in chunks of
/// about 4096 items (OpenMP threads above 32K items): a generated loop
/// over rows whose column loop vectorizes (CPU programs only).
template <typename F>
inline int parallelRows(Program &, int64_t rows, int64_t cols, F f) {
  int64_t per = cols < 4096 ? 4096 / cols : 1;
  int64_t chunks = (rows + per - 1) / per;
#pragma omp parallel for if (rows * cols > 32768) schedule(static)
  for (int64_t c = 0; c < chunks; ++c)
    f(c * per, c * per + per < rows ? c * per + per : rows);
  return 0;
}
/// Runs f(i) for i in [0, n) on the CPU (OpenMP threads above 32K items).
template <typename F> inline int parallelFor(Program &, int64_t n, F f) {
#pragma omp parallel for if (n > 32768) schedule(static)
  for (int64_t i = 0; i < n; ++i)
    f(i);
  return 0;
}
#endif

template <typename T> int Program::fillValue(T *dst, int64_t n, T value) {
  return parallelFor(*this, n, [=] DG_HD(int64_t i) { dst[i] = value; });
}

} // namespace dg

#endif // DISTRT_GEN_PROGRAM_H
