//===- Fused.cpp - Fused elementwise-chain executor ------------*- C++ -*-===//
//
// Evaluates a register program of unary/binary steps in one pass over
// memory: the flat index space is cut into blocks of kBlock elements; for
// each block every input is loaded once, every instruction runs over the
// block's registers (tight, vectorizable loops), and the outputs are stored
// once. Intermediates never touch main memory.
//
//===----------------------------------------------------------------------===//
#include "Internal.h"
#include "ScalarOps.h"
#include "cpu/CpuState.h"
#include "cpu/VecMath.h"
#ifdef DISTRT_HAVE_CUDA
#include "cuda/CudaApi.h"
#endif

#include <cstdlib>

using namespace distrt;

namespace {

constexpr int64_t kBlock = 512; // a multiple of vec::kLanes

distrt_status checkProgram(Checker &c, const distrt_fused_program *p,
                           std::vector<int64_t> &outDims) {
  DISTRT_TRY(c.pointer("program", p));
  if (p->num_inputs < 0 || p->num_inputs > DISTRT_FUSED_MAX_REGS)
    return c.fail(DISTRT_ERROR_INVALID_ARGUMENT, "num_inputs is ",
                  p->num_inputs, "; expected 0..", DISTRT_FUSED_MAX_REGS);
  if (p->num_outputs < 1)
    return c.fail(DISTRT_ERROR_INVALID_ARGUMENT, "num_outputs is ",
                  p->num_outputs, "; a program needs at least one output");
  if (p->num_instrs < 0 || (p->num_instrs > 0 && !p->instrs))
    return c.fail(DISTRT_ERROR_INVALID_ARGUMENT,
                  "instrs is NULL or num_instrs negative");
  if ((p->num_inputs > 0 && !p->inputs) || !p->outputs || !p->output_regs)
    return c.fail(DISTRT_ERROR_INVALID_ARGUMENT,
                  "inputs, outputs or output_regs is NULL");
  for (int i = 0; i < p->num_outputs; ++i) {
    std::string name = "outputs[" + std::to_string(i) + "]";
    DISTRT_TRY(c.tensor(name.c_str(), p->outputs[i], DISTRT_F32));
    DISTRT_TRY(c.same("outputs[0]", p->outputs[0], name.c_str(),
                      p->outputs[i]));
  }
  outDims = dimsOf(*p->outputs[0]);
  for (int i = 0; i < p->num_inputs; ++i) {
    std::string name = "inputs[" + std::to_string(i) + "]";
    DISTRT_TRY(c.tensor(name.c_str(), p->inputs[i], DISTRT_F32));
    if (!broadcastsTo(*p->inputs[i], outDims))
      return c.fail(DISTRT_ERROR_SHAPE_MISMATCH, name, " ",
                    shapeString(*p->inputs[i]),
                    " does not broadcast to the output shape ",
                    shapeString(outDims));
  }
  // Registers must be written before they are read.
  bool defined[DISTRT_FUSED_MAX_REGS] = {};
  for (int i = 0; i < p->num_inputs; ++i)
    defined[i] = true;
  auto readable = [&](int r) { return r < DISTRT_FUSED_MAX_REGS && defined[r]; };
  for (int i = 0; i < p->num_instrs; ++i) {
    const distrt_fused_instr &in = p->instrs[i];
    int nsrc = 0;
    switch (in.opcode) {
    case DISTRT_FUSED_UNARY:
      nsrc = 1;
      if (in.op >= DISTRT_UNARY_COUNT_)
        return c.fail(DISTRT_ERROR_INVALID_ARGUMENT, "instr ", i,
                      ": unknown unary op ", int(in.op));
      break;
    case DISTRT_FUSED_BINARY:
      nsrc = 2;
      if (in.op >= DISTRT_BINARY_COUNT_)
        return c.fail(DISTRT_ERROR_INVALID_ARGUMENT, "instr ", i,
                      ": unknown binary op ", int(in.op));
      break;
    case DISTRT_FUSED_CONST:
      break;
    case DISTRT_FUSED_FMA:
      nsrc = 3;
      break;
    default:
      return c.fail(DISTRT_ERROR_INVALID_ARGUMENT, "instr ", i,
                    ": unknown opcode ", int(in.opcode));
    }
    int srcs[3] = {in.src0, in.src1, in.src2};
    for (int s = 0; s < nsrc; ++s)
      if (!readable(srcs[s]))
        return c.fail(DISTRT_ERROR_INVALID_ARGUMENT, "instr ", i,
                      " reads register ", srcs[s],
                      " before any instruction or input defines it");
    if (in.dst >= DISTRT_FUSED_MAX_REGS)
      return c.fail(DISTRT_ERROR_INVALID_ARGUMENT, "instr ", i,
                    " writes register ", int(in.dst), "; registers are 0..",
                    DISTRT_FUSED_MAX_REGS - 1);
    defined[in.dst] = true;
  }
  for (int i = 0; i < p->num_outputs; ++i)
    if (!readable(p->output_regs[i]))
      return c.fail(DISTRT_ERROR_INVALID_ARGUMENT, "output ", i,
                    " stores register ", int(p->output_regs[i]),
                    " which is never defined");
  return DISTRT_OK;
}

template <typename F>
inline __attribute__((always_inline)) void map1(float *d, const float *a, int64_t n, F f) {
#pragma omp simd
  for (int64_t j = 0; j < n; ++j)
    d[j] = f(a[j]);
}

template <typename F>
inline __attribute__((always_inline)) void map2(float *d, const float *a, const float *b, int64_t n, F f) {
#pragma omp simd
  for (int64_t j = 0; j < n; ++j)
    d[j] = f(a[j], b[j]);
}

/// One unary op over a register block, 8 lanes at a time. Registers are
/// whole kBlock rows, so the rounded-up tail stays inside them (its lanes are
/// computed and never stored).
template <typename V, int Op>
inline __attribute__((always_inline)) void unaryLanes(float *d, const float *a,
                                                      int64_t n) {
  for (int64_t j = 0; j < n; j += vec::Lanes<V>::count) {
    V x;
    __builtin_memcpy(&x, a + j, sizeof(x));
    V y = vec::unary<Op, V>(x);
    __builtin_memcpy(d + j, &y, sizeof(y));
  }
}

template <typename V>
inline __attribute__((always_inline)) void unaryBlock(int op, float *d,
                                                      const float *a,
                                                      int64_t n) {
  switch (op) {
#define DISTRT_UNARY_CASE(OP)                                                 \
  case OP:                                                                    \
    return unaryLanes<V, OP>(d, a, n);
    DISTRT_UNARY_CASE(DISTRT_UNARY_RELU)
    DISTRT_UNARY_CASE(DISTRT_UNARY_GELU)
    DISTRT_UNARY_CASE(DISTRT_UNARY_GELU_TANH)
    DISTRT_UNARY_CASE(DISTRT_UNARY_TANH)
    DISTRT_UNARY_CASE(DISTRT_UNARY_SIGMOID)
    DISTRT_UNARY_CASE(DISTRT_UNARY_SILU)
    DISTRT_UNARY_CASE(DISTRT_UNARY_EXP)
    DISTRT_UNARY_CASE(DISTRT_UNARY_LOG)
    DISTRT_UNARY_CASE(DISTRT_UNARY_SQRT)
    DISTRT_UNARY_CASE(DISTRT_UNARY_NEG)
    DISTRT_UNARY_CASE(DISTRT_UNARY_ABS)
    DISTRT_UNARY_CASE(DISTRT_UNARY_SQUARE)
    DISTRT_UNARY_CASE(DISTRT_UNARY_RECIPROCAL)
    DISTRT_UNARY_CASE(DISTRT_UNARY_SOFTPLUS)
#undef DISTRT_UNARY_CASE
  }
}

inline __attribute__((always_inline)) void binaryBlock(int op, float *d, const float *a, const float *b,
                 int64_t n) {
  switch (op) {
  case DISTRT_BINARY_ADD:
    return map2(d, a, b, n, [](float x, float y) { return x + y; });
  case DISTRT_BINARY_SUB:
    return map2(d, a, b, n, [](float x, float y) { return x - y; });
  case DISTRT_BINARY_MUL:
    return map2(d, a, b, n, [](float x, float y) { return x * y; });
  case DISTRT_BINARY_DIV:
    return map2(d, a, b, n, [](float x, float y) { return x / y; });
  case DISTRT_BINARY_MAX:
    return map2(d, a, b, n, [](float x, float y) { return x >= y ? x : y; });
  case DISTRT_BINARY_MIN:
    return map2(d, a, b, n, [](float x, float y) { return x <= y ? x : y; });
  default: // pow keeps libm semantics (negative bases, integer exponents)
    for (int64_t j = 0; j < n; ++j)
      d[j] = binaryFwd(op, a[j], b[j]);
  }
}

template <typename V>
inline __attribute__((always_inline)) void
runBlockT(const distrt_fused_instr *instrs, int n, float *const *regs,
          int64_t len) {
  for (int i = 0; i < n; ++i) {
    const distrt_fused_instr &in = instrs[i];
    float *d = regs[in.dst];
    const float *a = regs[in.src0], *b = regs[in.src1], *e = regs[in.src2];
    switch (in.opcode) {
    case DISTRT_FUSED_UNARY:
      unaryBlock<V>(in.op, d, a, (len + 7) / 8 * 8);
      break;
    case DISTRT_FUSED_BINARY:
      binaryBlock(in.op, d, a, b, len);
      break;
    case DISTRT_FUSED_CONST:
      for (int64_t j = 0; j < len; ++j)
        d[j] = in.imm;
      break;
    case DISTRT_FUSED_FMA:
#pragma omp simd
      for (int64_t j = 0; j < len; ++j)
        d[j] = a[j] * b[j] + e[j];
      break;
    }
  }
}

/// The same block loop for AVX2+FMA (8 lanes) and baseline x86-64 (4 lanes,
/// SSE2), chosen once by CPU: GCC's 8-lane vectors emulated on SSE2 are
/// several times slower than native 4-lane code.
__attribute__((target("avx2,fma"))) void
runBlockAvx2(const distrt_fused_instr *instrs, int n, float *const *regs,
             int64_t len) {
  runBlockT<vec::V8>(instrs, n, regs, len);
}
void runBlockBase(const distrt_fused_instr *instrs, int n,
                  float *const *regs, int64_t len) {
  runBlockT<vec::V4>(instrs, n, regs, len);
}

void cpuFused(const distrt_fused_program &p,
              const std::vector<int64_t> &outDims) {
  int64_t total = distrt_numel(p.outputs[0]);
  int rank = static_cast<int>(outDims.size());
  std::vector<std::vector<int64_t>> strides(p.num_inputs);
  std::vector<bool> dense(p.num_inputs);
  for (int i = 0; i < p.num_inputs; ++i) {
    strides[i] = broadcastStrides(*p.inputs[i], outDims);
    dense[i] = distrt_numel(p.inputs[i]) == total;
  }
  // Dense inputs no instruction overwrites are read in place (full blocks
  // only: the vector loops round the tail up past the tensor's end).
  bool written[DISTRT_FUSED_MAX_REGS] = {};
  for (int i = 0; i < p.num_instrs; ++i)
    written[p.instrs[i].dst] = true;
  int64_t blocks = (total + kBlock - 1) / kBlock;
  // DISTRT_FUSED_BASELINE=1 forces the SSE2 path (tests cover both).
  const char *forceBase = std::getenv("DISTRT_FUSED_BASELINE");
  bool avx2 = !(forceBase && *forceBase == '1') &&
              __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  auto runBlock = avx2 ? runBlockAvx2 : runBlockBase;
#pragma omp parallel
  {
    alignas(64) float regs[DISTRT_FUSED_MAX_REGS][kBlock] = {};
    float *rp[DISTRT_FUSED_MAX_REGS];
    for (int r = 0; r < DISTRT_FUSED_MAX_REGS; ++r)
      rp[r] = regs[r];
#pragma omp for schedule(static)
    for (int64_t blk = 0; blk < blocks; ++blk) {
      int64_t begin = blk * kBlock;
      int64_t len = std::min(kBlock, total - begin);
      for (int i = 0; i < p.num_inputs; ++i) {
        const float *src = cpu::f32(p.inputs[i]);
        rp[i] = regs[i];
        if (dense[i] && !written[i] && len == kBlock) {
          rp[i] = const_cast<float *>(src + begin); // only ever read
          continue;
        }
        if (dense[i]) {
          std::copy(src + begin, src + begin + len, regs[i]);
          continue;
        }
        // Broadcast input: walk the output coordinates of this block in runs
        // along the innermost dimension (contiguous, constant or strided).
        int64_t idx[DISTRT_MAX_RANK], rem = begin, off = 0;
        for (int d = rank - 1; d >= 0; --d) {
          idx[d] = rem % outDims[d];
          rem /= outDims[d];
          off += idx[d] * strides[i][d];
        }
        int last = rank - 1;
        int64_t inner = strides[i][last];
        for (int64_t j = 0; j < len;) {
          int64_t run = std::min(len - j, outDims[last] - idx[last]);
          float *dst = regs[i] + j;
          if (inner == 1)
            std::copy(src + off, src + off + run, dst);
          else if (inner == 0)
            std::fill(dst, dst + run, src[off]);
          else
            for (int64_t r = 0; r < run; ++r)
              dst[r] = src[off + r * inner];
          j += run;
          // Advance by `run` along the innermost dim, carrying outwards.
          off += run * inner;
          idx[last] += run;
          for (int d = last; d > 0 && idx[d] == outDims[d]; --d) {
            off -= strides[i][d] * outDims[d];
            idx[d] = 0;
            ++idx[d - 1];
            off += strides[i][d - 1];
          }
        }
      }
      runBlock(p.instrs, p.num_instrs, rp, len);
      for (int o = 0; o < p.num_outputs; ++o)
        std::copy(rp[p.output_regs[o]], rp[p.output_regs[o]] + len,
                  cpu::f32(p.outputs[o]) + begin);
    }
  }
}

} // namespace

extern "C" distrt_status
distrt_fused_elementwise(distrt_context *ctx,
                         const distrt_fused_program *program) {
  const char *fn = "distrt_fused_elementwise";
  Checker c(ctx, fn);
  DISTRT_TRY(c.context());
  std::vector<int64_t> outDims;
  DISTRT_TRY(checkProgram(c, program, outDims));
#ifdef DISTRT_HAVE_CUDA
  if (ctx->isCuda()) {
    std::vector<const float *> ins(program->num_inputs);
    std::vector<int64_t> strides(program->num_inputs * DISTRT_MAX_RANK, 0);
    for (int i = 0; i < program->num_inputs; ++i) {
      ins[i] = cpu::f32(program->inputs[i]);
      std::vector<int64_t> s = broadcastStrides(*program->inputs[i], outDims);
      std::copy(s.begin(), s.end(), strides.begin() + i * DISTRT_MAX_RANK);
    }
    std::vector<float *> outs(program->num_outputs);
    for (int i = 0; i < program->num_outputs; ++i)
      outs[i] = cpu::f32(program->outputs[i]);
    return guardCall(ctx, fn, [&] {
      return cuda::fused(ctx, program->instrs, program->num_instrs,
                         program->num_inputs, ins.data(), strides.data(),
                         static_cast<int32_t>(outDims.size()), outDims.data(),
                         program->num_outputs, outs.data(),
                         program->output_regs);
    });
  }
#endif
  return guardCall(ctx, fn, [&] {
    cpuFused(*program, outDims);
    return DISTRT_OK;
  });
}
