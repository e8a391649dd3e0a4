//===- CpuState.h - oneDNN engine, stream and primitive cache --*- C++ -*-===//
//
// The CPU backend's part of a context and the small helpers every oneDNN
// kernel uses: plain row-major memory descriptors and a primitive cache
// keyed by a shape string (creating a primitive costs far more than running
// a small one, and generated programs call the same shapes every step).
//
//===----------------------------------------------------------------------===//
#ifndef DISTRT_LIB_CPU_CPUSTATE_H
#define DISTRT_LIB_CPU_CPUSTATE_H

#include "Internal.h"

#include <dnnl.hpp>

#include <cstdint>
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
