//===- CpuState.h - oneDNN engine, stream and primitive cache --*- C++ -*-===//
//
// The CPU backend's part of a context and the small helpers every oneDNN
// kernel uses: plain row-major memory descriptors and a primitive cache
// keyed by a shape string (creating a primitive costs far more than running
// a small one, and generated programs call the same shapes every step), and
// a replay cache: a generated program makes the same call (same buffers,
// shapes, attributes and post-ops) every run, so a call seen before runs
// its primitive on the arguments prepared then, without rebuilding the
// string keys, memory objects and checks (about 3 us a call, which is a
// tenth of a small network's run: MobileNetV3 makes some 70 such calls).
//
//===----------------------------------------------------------------------===//
#ifndef DISTRT_LIB_CPU_CPUSTATE_H
#define DISTRT_LIB_CPU_CPUSTATE_H

#include "Internal.h"
#include "cpu/SkinnyGemm.h"

#include <dnnl.hpp>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <unordered_map>

namespace distrt {
namespace cpu {

struct CpuState {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::unordered_map<std::string, dnnl::primitive> cache;

  /// A primitive with the layout it wants its weights in (any-format
  /// convolutions pick the kernel's blocked layout).
  struct Layered {
    dnnl::primitive prim;
    dnnl::memory::desc weights;
  };
  std::unordered_map<std::string, Layered> layered;
  /// Constant weights already reordered to a primitive's layout, keyed by
  /// the primitive's key and the weights' address.
  std::unordered_map<std::string, dnnl::memory> constantWeights;

  /// The weights `plain` (at `data`) in the layout the primitive `key`
  /// wants (`entry.weights`): reordered on every call, or once per address
  /// when they are `constant` (kept in constantWeights).
  dnnl::memory weightsFor(const std::string &key, const Layered &entry,
                          dnnl::memory plain, const void *data,
                          bool constant) {
    if (entry.weights == plain.get_desc())
      return plain;
    std::string wkey =
        key + "@" + std::to_string(reinterpret_cast<uintptr_t>(data));
    if (constant)
      if (auto it = constantWeights.find(wkey); it != constantWeights.end())
        return it->second;
    dnnl::memory blocked(entry.weights, engine);
    dnnl::reorder(plain, blocked).execute(stream, plain, blocked);
    if (constant)
      constantWeights.emplace(wkey, blocked);
    return blocked;
  }

  /// Constant weights of skinny matmuls (cpu/SkinnyGemm.h), packed once
  /// per address.
  std::unordered_map<const void *, SkinnyWeights> skinny;

  /// A call as it ran: its primitive and the arguments (memory objects over
  /// the caller's buffers, weights already in the primitive's layout).
  struct Replay {
    dnnl::primitive prim;
    std::unordered_map<int, dnnl::memory> args;
  };
  /// Keyed by CallKey bytes; cleared when it reaches kMaxReplays entries (a
  /// program whose temporaries move between runs would otherwise grow it).
  std::unordered_map<std::string, Replay> replays;
  static constexpr size_t kMaxReplays = 4096;
  /// DISTRT_NO_REPLAY=1 turns replays off (for measuring them).
  bool replayOff = [] {
    const char *e = std::getenv("DISTRT_NO_REPLAY");
    return e && *e && std::strcmp(e, "0") != 0;
  }();
  /// Calls served from `replays`, and matmuls run by skinnyMatmul (tests
  /// check that they are).
  int64_t replayed = 0, skinnyCalls = 0;
  /// Trailing post-ops applied by the runtime (cpu/PostOps.h trimSlowTail).
  int64_t vectorTails = 0;

  /// The replay of the call `key`, or null (first call, or replays off).
  const Replay *replay(const std::string &key) {
    if (replayOff || key.empty())
      return nullptr;
    auto it = replays.find(key);
    if (it == replays.end())
      return nullptr;
    ++replayed;
    return &it->second;
  }
  /// Records the call `key` (ignored when `key` is empty or replays are
  /// off). Only calls whose arguments stay valid may be recorded: buffers
  /// the call names, and no per-call work besides the primitive (weights
  /// read as they are, or their constant packed copy).
  void remember(const std::string &key, const dnnl::primitive &prim,
                const std::unordered_map<int, dnnl::memory> &args) {
    if (replayOff || key.empty())
      return;
    if (replays.size() >= kMaxReplays)
      replays.clear();
    replays[key] = Replay{prim, args};
  }
  /// Runs a replay and waits for it.
  void run(const Replay &r) {
    r.prim.execute(stream, r.args);
    stream.wait();
  }

  /// The cached primitive for `key`, created by `make` on first use.
  dnnl::primitive &primitive(const std::string &key,
                             const std::function<dnnl::primitive()> &make) {
    auto it = cache.find(key);
    if (it != cache.end())
      return it->second;
    return cache.emplace(key, make()).first->second;
  }
};

inline CpuState &state(distrt_context *ctx) { return *ctx->cpu; }

/// Calls of a CPU context served from its replays so far (0 for others);
/// for tests, which declare it themselves (no oneDNN header there).
int64_t replayedCalls(const distrt_context *ctx);
/// Matmuls of a CPU context run by skinnyMatmul so far (likewise).
int64_t skinnyCalls(const distrt_context *ctx);
/// Trailing post-ops the runtime applied after a primitive (likewise).
int64_t vectorTails(const distrt_context *ctx);

/// The identity of a call as bytes, for CpuState::replays: the entry point,
/// every tensor descriptor (data address, dtype, dims, strides), the
/// attribute fields and the post-ops, so two calls with equal keys do the
/// same work on the same buffers.
class CallKey {
public:
  explicit CallKey(const char *fn) : bytes(fn) { bytes.push_back('\0'); }
  CallKey &tensor(const distrt_tensor *t) {
    if (!t)
      return pod(int32_t(-1));
    pod(t->data).pod(t->dtype).pod(t->rank);
    if (t->rank < 0 || t->rank > DISTRT_MAX_RANK)
      return *this;
    bytes.append(reinterpret_cast<const char *>(t->dims),
                 sizeof(int64_t) * (size_t)t->rank);
    bytes.append(reinterpret_cast<const char *>(t->strides),
                 sizeof(int64_t) * (size_t)t->rank);
    return *this;
  }
  CallKey &ex(const distrt_compute_ex *e) {
    if (!e)
      return pod(int32_t(-1));
    pod(e->count).pod(e->constant_weights);
    for (int i = 0; i >= 0 && i < e->count && i < DISTRT_MAX_POST_OPS; ++i) {
      const distrt_post_op &p = e->post[i];
      pod(p.kind).pod(p.alg).pod(p.alpha).pod(p.beta);
      if (p.kind == DISTRT_POST_BINARY)
        tensor(&p.src1);
    }
    return *this;
  }
  template <typename T> CallKey &pod(const T &v) {
    bytes.append(reinterpret_cast<const char *>(&v), sizeof(T));
    return *this;
  }
  std::string bytes;
};

/// Row-major strides of `dims`.
inline dnnl::memory::dims rowMajorStrides(const dnnl::memory::dims &dims) {
  dnnl::memory::dims strides(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * dims[i + 1];
  return strides;
}

/// Plain f32 row-major descriptor (a scalar becomes [1]).
inline dnnl::memory::desc plainDesc(const dnnl::memory::dims &dims,
                                    dnnl::memory::data_type dt =
                                        dnnl::memory::data_type::f32) {
  dnnl::memory::dims d = dims.empty() ? dnnl::memory::dims{1} : dims;
  return dnnl::memory::desc(d, dt, rowMajorStrides(d));
}
inline dnnl::memory::desc plainDesc(const distrt_tensor &t) {
  return plainDesc(dnnl::memory::dims(t.dims, t.dims + t.rank));
}

inline dnnl::memory mem(CpuState &s, const dnnl::memory::desc &md,
                        const void *data) {
  return dnnl::memory(md, s.engine, const_cast<void *>(data));
}

inline std::string dimsKey(const dnnl::memory::dims &d) {
  std::string k;
  for (auto v : d)
    k += std::to_string(v) + ",";
  return k;
}

inline float *f32(const distrt_tensor *t) {
  return static_cast<float *>(t->data);
}

/// Reads index `i` of an I32 or I64 tensor.
inline int64_t indexAt(const distrt_tensor *t, int64_t i) {
  return t->dtype == DISTRT_I64 ? static_cast<const int64_t *>(t->data)[i]
                                : static_cast<const int32_t *>(t->data)[i];
}

} // namespace cpu
} // namespace distrt

#endif // DISTRT_LIB_CPU_CPUSTATE_H
