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
#include <cstring>

namespace dg {

/// The file stem of a tensor name: every character outside
/// [A-Za-z0-9_.-] becomes '_' (outputs and saved state, docs/codegen.md).
std::string sanitizeName(const std::string &name);

/// "{rank}" in a folder name becomes this process's rank (--save-state and
/// --load-state DIR{rank}: one folder per data-parallel rank).
std::string expandRank(std::string dir, int rank);

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
/// A ZeRO block of such a part of a part names the outer one in
/// outerDim .. outerIndex (outerParts > 1: an expert rank's tensor part of
/// its experts, sharded over the ranks that hold the same experts).
/// parts = 1: the whole tensor.
struct Shard {
  int dim = 0, blocks = 1, parts = 1, index = 0;
  const int64_t *flatShape = nullptr;
  int flatRank = 0;
  int partDim = 0, partBlocks = 1, partParts = 1, partIndex = 0;
  int outerDim = 0, outerBlocks = 1, outerParts = 1, outerIndex = 0;
  bool flat() const { return dim < 0; }
  /// The tensor-parallel part a ZeRO block is cut from (parts = 1: the
  /// whole tensor), itself a part of the outer part when there is one.
  Shard tensorPart() const {
    Shard p;
    p.dim = partDim;
    p.blocks = partBlocks;
    p.parts = partParts;
    p.index = partIndex;
    p.partDim = outerDim;
    p.partBlocks = outerBlocks;
    p.partParts = outerParts;
    p.partIndex = outerIndex;
    return p;
  }
  /// How many parts of a tensor-parallel part (dim >= 0) make the whole
  /// tensor along dimension \p i.
  int64_t partsAlong(int i) const {
    return (i == dim ? parts : 1) *
           (partParts > 1 && i == partDim ? partParts : 1);
  }
  /// How many shards make the whole tensor, and which one this is.
  int count() const { return parts * partParts * outerParts; }
  int ordinal() const {
    return (outerIndex * partParts + partIndex) * parts + index;
  }
};

//===----------------------------------------------------------------------===//
// Execution state of one model run
//===----------------------------------------------------------------------===//

/// Fault injection for the recovery tests (docs/resilience.md):
/// DISTRT_FAULT=KIND:RANK:STEP kills rank RANK with SIGKILL, as a machine
/// that disappears: KIND `kill` right after its training step STEP,
/// checkpoint included; `kill-saving` in the checkpoint after step STEP,
/// once that counts and its first file has moved into the folder.
void injectFault(const char *kind, int rank, long long step);

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
  /// The clocks before op `id` (zeros when not profiling). CUDA work is
  /// asynchronous: the stream is drained so the time is the op's own.
  ProfClocks profStart() {
    if (!prof)
      return {};
    if (device)
      distrt_synchronize(ctx);
    return profClocksStart();
  }
  void profStop(int id, const ProfClocks &start) {
    if (!prof)
      return;
    if (device)
      distrt_synchronize(ctx);
    prof->add(id, start, profClocksStop());
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
                              const char *where);
  /// The communicator of the `n` ranks `ranks`, this rank among them: the
  /// world's when they are ranks 0..worldSize-1 in order; nullptr with
  /// `err` set when the job's world cannot hold the group.
  distrt_comm *group(const int32_t *ranks, int n, const char *where);
  /// Destroys the group communicators (before the world's).
  void releaseGroups();

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
                         const Shard *shard = nullptr);
  /// An inference weight's resident buffer `dst` (of this rank's `dims`,
  /// its part `shard` of a sharded weight) filled from stateDir instead of
  /// its file or generated values: --load-state DIR runs inference with a
  /// training run's saved weights. 0, or 1 with the error set (the state
  /// has no such tensor).
  int loadStateWeight(const char *name, DType dt, int rank, const int64_t *dims,
                      void *dst, const Shard *shard = nullptr);
  /// Fills `b` from stateDir (a resumed run): from its own file when that
  /// has the buffer's type and shape, else (a checkpoint saved under
  /// another plan) assembled from the checkpoint's folders.
  int loadState(const Persistent &b);

  static bool sameSpec(const TensorSpec &s, DType dt, int rank,
                       const int64_t *dims);

  /// Whether DIR saved the same tensor-parallel part of `stem` as `want`
  /// (or, for a whole tensor, a whole one).
  static bool sameShard(const std::string &dir, const std::string &stem,
                        const Shard &want);

  /// The path of file \p name of checkpoint folder \p dir: DIR.commit's
  /// copy when a save that died while moving its files in left one there
  /// (saveStateAtomically), else DIR's.
  static std::string checkpointFile(std::string dir, const std::string &name);

  /// The folders of a checkpoint: with {rank} in --load-state, those of
  /// ranks 0, 1, ... up to the first that does not exist; else the one.
  std::vector<std::string> checkpointFolders() const;

  /// The entry of tensor file `stem` in DIR/shards.json (as saveState
  /// writes it): which part the folder holds and the full shape.
  static bool savedShard(const std::string &dir, const std::string &stem,
                         Shard &s, std::vector<int64_t> &full);

  /// A checkpoint saved under another plan (pipeline stages on other
  /// ranks, other tensor-parallel parts): the whole tensor of `b` from any
  /// folder of the checkpoint that holds it whole, or from its
  /// tensor-parallel parts, then this rank's part of it. `found` says
  /// whether it was there; `folders`, how many folders were looked at.
  int loadResharded(const Persistent &b, bool &found, size_t &folders);
  /// Writes every persistent buffer as DIR/<name>.npy, and for the
  /// tensor-parallel shards among them DIR/shards.json: per tensor its
  /// full shape and which part this rank holds (docs/distributed.md).
  /// Training steps done when the state is saved, counted from the run's
  /// --first-step (written as DIR/progress.json; -1: not a training run).
  long long stepsDone = -1;
  int saveState(const std::string &dir);
  /// saveState into \p dir so that a job that dies while saving leaves a
  /// whole checkpoint, the previous one or the new one: every file is
  /// written into DIR.partial first; renaming that folder to DIR.commit is
  /// the moment the new checkpoint counts; then its files move into DIR
  /// one by one. Until DIR.commit is gone, a file still in it is newer
  /// than DIR's (checkpointFile): readers take it from there, and the next
  /// save finishes the move before it starts.
  int saveStateAtomically(std::string dir);
  /// Moves every file of DIR.commit (a save that counts) into DIR and
  /// removes the folder; nothing to do without one.
  int finishCommit(const std::string &dir);
  /// Removes the files a save that died while writing left in \p dir.
  int clearFolder(const std::string &dir);
  /// The entries of \p dir but . and ..; none when it does not exist.
  int listFolder(const std::string &dir, std::vector<std::string> &names);
  void releasePersistent();

  /// Buffers of the static memory plan, made on the first run and kept for
  /// the life of the process: each body's arena (one slot per value,
  /// reused by live range) and resident weights and constants (filled
  /// once; not written by --save-state, unlike `persistent`).
  struct Kept {
    std::string name;
    void *ptr;
  };
  std::vector<Kept> kept;
  void *keptBuffer(const char *name, size_t bytes, bool &fresh);
  /// The arena of the body `name` (dist-prepare-for-emission's plan).
  void *arena(const char *name, size_t bytes);
  /// A resident buffer; `fresh` on the run that must fill it.
  void *residentBuffer(const char *name, size_t bytes, bool &fresh);
  /// Fills a buffer of `n` elements of type T with `value`.
  template <typename T> int fillValue(T *dst, int64_t n, T value);

  void *alloc(size_t bytes);
  void release(void *p);
  void releaseAll();
  /// Copies `bytes` of `kind` (memcpy on the CPU backend); a failure is
  /// P.err "WHAT failed: <the runtime's reason>".
  int transfer(void *dst, const void *src, size_t bytes, distrt_copy_kind kind,
               const char *what);
  /// Copies host bytes into a buffer of the backend.
  int upload(void *dst, const void *src, size_t bytes);
  /// Copies bytes of a buffer of the backend to the host.
  int download(void *dst, const void *src, size_t bytes);
  /// Copies between two buffers of the backend.
  int copy(void *dst, const void *src, size_t bytes);
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
                    int64_t size, std::string &path);
  int loadWeight(const char *name, const char *file, int64_t offset,
                 int64_t size, void *dst);
  /// Initializes a weight that has no data (graph-only model) by the rule
  /// in docs/codegen.md: float tensors of rank >= 2 uniform in
  /// [-1/sqrt(fan_in), 1/sqrt(fan_in)] from a hash of (name, index); rank <= 1
  /// floats 1 for scale-like names, else 0; integer tensors 0.
  int initWeight(const char *name, DType dt, const int64_t *dims, int rank,
                 void *dst);
  /// A rank's part of a weight (a tensor-parallel part or a ZeRO-3
  /// block): the runs of the full tensor (dims: its full shape) that
  /// `shard` holds, read from the file one by one, so a rank reads only its
  /// part.
  int loadWeightShard(const char *name, const char *file, int64_t offset,
                      DType dt, const int64_t *dims, int rank,
                      const Shard &shard, void *dst);
  /// initWeight's values of the full tensor (dims), this rank's shard.
  int initWeightShard(const char *name, DType dt, const int64_t *dims, int rank,
                      const Shard &shard, void *dst);
  /// The values initWeight gives a weight of shape dims, into `buf`.
  static void fillWeight(const char *name, DType dt, const int64_t *dims,
                         int rank, std::vector<char> &buf);
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

// The loops of generated kernels take their item count as a template
// argument (a generated program's shapes are static): parallelFor<N>,
// parallelChunks<N>, parallelRows<Rows, Cols>.
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
template <int64_t N, typename F> inline int parallelFor(Program &P, F f) {
  return parallelFor(P, N, f);
}
/// Runs f(lo, hi) over [0, N): on the GPU one item per thread, so a body's
/// prologue costs what it did inside parallelFor.
template <int64_t N, typename F> inline int parallelChunks(Program &P, F f) {
  return parallelFor(P, N, [=] DG_HD(int64_t i) { f(i, i + 1); });
}
#else
/// OpenMP threads run a loop of more items than this; a smaller one runs
/// on the calling thread.
constexpr int64_t kSerialItems = 32768;

/// Runs task(t) for t in [0, tasks), the tasks of a loop of `Items` items:
/// on OpenMP threads above kSerialItems items, else a plain loop with no
/// parallel region (nothing for the compiler to outline: a generated
/// program of small loops compiles in about a quarter less time).
template <int64_t Items, typename F>
inline void runTasks(int64_t tasks, F task) {
  if constexpr (Items > kSerialItems) {
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < tasks; ++t)
      task(t);
  } else {
    for (int64_t t = 0; t < tasks; ++t)
      task(t);
  }
}
/// Runs f(lo, hi) over [0, N) in chunks of 4096 items: a body whose
/// prologue reads scalars from tensors (a step counter, a skip flag) runs
/// it once a chunk, and its inner loop vectorizes.
template <int64_t N, typename F> inline int parallelChunks(Program &, F f) {
  constexpr int64_t chunk = 4096;
  runTasks<N>((N + chunk - 1) / chunk, [&](int64_t c) {
    f(c * chunk, c * chunk + chunk < N ? c * chunk + chunk : N);
  });
  return 0;
}
/// Runs f(lo, hi) over rows [0, Rows) of `Cols` items each, in chunks of
/// about 4096 items: a generated loop over rows whose column loop
/// vectorizes (CPU programs only).
template <int64_t Rows, int64_t Cols, typename F>
inline int parallelRows(Program &, F f) {
  constexpr int64_t per = Cols < 4096 ? 4096 / Cols : 1;
  runTasks<Rows * Cols>((Rows + per - 1) / per, [&](int64_t c) {
    f(c * per, c * per + per < Rows ? c * per + per : Rows);
  });
  return 0;
}
/// Runs f(i) for i in [0, N) (OpenMP threads above kSerialItems items).
template <int64_t N, typename F> inline int parallelFor(Program &, F f) {
  runTasks<N>(N, f);
  return 0;
}
/// Runs f(i) for i in [0, n), n known only when it runs.
template <typename F> inline int parallelFor(Program &, int64_t n, F f) {
#pragma omp parallel for if (n > kSerialItems) schedule(static)
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
