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
#ifdef DISTRT_HAVE_CUDA
#include "cuda/CudaApi.h"
#endif

using namespace distrt;

namespace {

constexpr int64_t kBlock = 512;

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

void runBlock(const distrt_fused_instr *instrs, int n, float (*regs)[kBlock],
              int64_t len) {
  for (int i = 0; i < n; ++i) {
    const distrt_fused_instr &in = instrs[i];
    float *d = regs[in.dst];
    const float *a = regs[in.src0], *b = regs[in.src1], *e = regs[in.src2];
    switch (in.opcode) {
    case DISTRT_FUSED_UNARY:
      for (int64_t j = 0; j < len; ++j)
        d[j] = unaryFwd(in.op, a[j]);
      break;
    case DISTRT_FUSED_BINARY:
      switch (in.op) { // common ops get branch-free loops
      case DISTRT_BINARY_ADD:
        for (int64_t j = 0; j < len; ++j)
          d[j] = a[j] + b[j];
        break;
      case DISTRT_BINARY_MUL:
        for (int64_t j = 0; j < len; ++j)
          d[j] = a[j] * b[j];
        break;
      default:
        for (int64_t j = 0; j < len; ++j)
          d[j] = binaryFwd(in.op, a[j], b[j]);
      }
      break;
    case DISTRT_FUSED_CONST:
      for (int64_t j = 0; j < len; ++j)
        d[j] = in.imm;
      break;
    case DISTRT_FUSED_FMA:
      for (int64_t j = 0; j < len; ++j)
        d[j] = a[j] * b[j] + e[j];
      break;
    }
  }
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
  int64_t blocks = (total + kBlock - 1) / kBlock;
#pragma omp parallel
  {
    alignas(64) float regs[DISTRT_FUSED_MAX_REGS][kBlock];
#pragma omp for schedule(static)
    for (int64_t blk = 0; blk < blocks; ++blk) {
      int64_t begin = blk * kBlock;
      int64_t len = std::min(kBlock, total - begin);
      for (int i = 0; i < p.num_inputs; ++i) {
        const float *src = cpu::f32(p.inputs[i]);
        if (dense[i]) {
          std::copy(src + begin, src + begin + len, regs[i]);
          continue;
        }
        // Broadcast input: walk the output coordinates of this block.
        int64_t idx[DISTRT_MAX_RANK], rem = begin, off = 0;
        for (int d = rank - 1; d >= 0; --d) {
          idx[d] = rem % outDims[d];
          rem /= outDims[d];
          off += idx[d] * strides[i][d];
        }
        for (int64_t j = 0; j < len; ++j) {
          regs[i][j] = src[off];
          for (int d = rank - 1; d >= 0; --d) {
            off += strides[i][d];
            if (++idx[d] < outDims[d])
              break;
            off -= strides[i][d] * outDims[d];
            idx[d] = 0;
          }
        }
      }
      runBlock(p.instrs, p.num_instrs, regs, len);
      for (int o = 0; o < p.num_outputs; ++o)
        std::copy(regs[p.output_regs[o]], regs[p.output_regs[o]] + len,
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
