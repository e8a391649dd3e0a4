//===- PublishedRows.h - Published LLM training throughputs -----*- C++ -*-===//
//
// Training runs published with their whole parallel layout (NeMo 24.07 and
// Megatron-Bridge performance tables on DGX H100, torchtitan's H100
// benchmarks) and how DistOpt plans and simulates each: dist-bench-sim's
// accuracy table and the regression test in test/unit/sim use them. Sources
// and what is assumed where a table is silent: docs/benchmarks.md.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_BENCH_SIM_PUBLISHEDROWS_H
#define DISTOPT_BENCH_SIM_PUBLISHEDROWS_H

#include "lib/Cluster/Cluster.h"
#include "lib/Cost/CostModel.h"
#include "lib/Cost/LlmModels.h"
#include "lib/Schedule/Plan.h"
#include "lib/Sim/Simulator.h"

#include <functional>

namespace distopt::bench {

/// Which published table a row comes from.
enum class Source {
  Nemo2407,   ///< NeMo 24.07 performance summary, DGX H100, FP8
  Dgxc,       ///< NVIDIA DGX Cloud Benchmarking recipes (NeMo 24.09 / 24.11)
  Bridge,     ///< Megatron-Bridge performance summary (archive), DGX H100
  Torchtitan, ///< torchtitan benchmarks/llama3_h100_202412_torchtitan.md
  AutoModel   ///< NeMo AutoModel performance summary, DGX H100, BF16
};

struct LlmRow {
  Source source;
  /// Release (container) the figure is from, as the table names it.
  const char *release;
  /// cost::llmPreset name.
  const char *model;
  unsigned gpus, gbs, mbs, seq;
  unsigned tp, pp, cp, vp, ep;
  /// Megatron-FSDP / PyTorch FSDP2 (ZeRO-3 over the data-parallel group);
  /// otherwise Megatron's distributed optimizer (ZeRO-1).
  bool fsdp;
  bool fp8;
  cost::Recompute recompute;
  /// Published tokens per second per GPU (DGX Cloud rows: computed from
  /// the published step time, GBS * seq / step / GPUs, as their README
  /// does).
  double published;
  /// Published peak memory in GiB (0: not published).
  double memGiB = 0;
};

/// Tokens/s/GPU of a run that took \p step seconds per global batch.
constexpr double tokensPerGpu(double gbs, double seq, double step,
                              double gpus) {
  return gbs * seq / step / gpus;
}

using R = cost::Recompute;
using S = Source;
// NeMo 24.07 (NVIDIA/NeMo docs/source/performance/performance_summary.md,
// commit 9c5c5e9709); Megatron-Bridge docs/performance-summary-archive.md
// (latest release of each distinct layout); torchtitan Tables 1-5 (eager
// FSDP rows without torch.compile are the ones DistOpt's cost model
// describes; compile + Float8 rows use fp8); NeMo AutoModel's
// docs/performance-summary.md (PyTorch FSDP2 + Transformer Engine, BF16).
// clang-format off
#define DGXC(rel, model, gpus, gbs, mbs, seq, tp, pp, cp, vp, ep, fp8, step)  \
  {S::Dgxc, rel, model, gpus, gbs, mbs, seq, tp, pp, cp, vp, ep, false, fp8,   \
   R::None, tokensPerGpu(gbs, seq, step, gpus)}
inline const LlmRow kLlmRows[] = {
    {S::Nemo2407, "24.07", "gpt3-5b", 64, 2048, 4, 2048, 1, 1, 1, 1, 1, false, true, R::None, 23406},
    {S::Nemo2407, "24.07", "gpt3-20b", 64, 256, 2, 2048, 2, 1, 1, 1, 1, false, true, R::None, 5851},
    {S::Nemo2407, "24.07", "gpt3-175b", 128, 256, 1, 2048, 4, 8, 1, 6, 1, false, true, R::None, 716},
    {S::Nemo2407, "24.07", "gpt3-175b", 512, 2048, 2, 2048, 4, 8, 1, 6, 1, false, true, R::None, 825},
    {S::Nemo2407, "24.07", "llama2-7b", 8, 128, 1, 4096, 1, 1, 1, 1, 1, false, true, R::None, 16934},
    {S::Nemo2407, "24.07", "llama2-13b", 16, 128, 1, 4096, 1, 4, 1, 10, 1, false, true, R::None, 8715},
    {S::Nemo2407, "24.07", "llama2-70b", 64, 128, 1, 4096, 4, 4, 1, 20, 1, false, true, R::None, 1728},
    {S::Nemo2407, "24.07", "nemotron3-8b", 64, 256, 4, 4096, 2, 1, 1, 1, 1, false, true, R::None, 12507},
    {S::Nemo2407, "24.07", "nemotron3-22b", 64, 256, 2, 4096, 2, 4, 1, 10, 1, false, true, R::None, 4312},
    {S::Nemo2407, "24.07", "nemotron4-340b", 128, 32, 1, 4096, 8, 8, 1, 12, 1, false, true, R::None, 326},
    {S::Nemo2407, "24.07", "llama3-8b", 8, 128, 1, 8192, 1, 1, 2, 1, 1, false, true, R::None, 12273},
    {S::Nemo2407, "24.07", "llama3-70b", 64, 128, 1, 8192, 4, 4, 2, 5, 1, false, true, R::None, 1524},
    // DGX Cloud Benchmarking (NVIDIA/dgxc-benchmarking: llama3.1/README_8b,
    // _70b, _405b (NeMo 24.09), nemotron/README_15b, _340b,
    // nemo_megatron/README_175b, grok1/README_314b (NeMo 24.11)): the
    // smallest full-size and the largest scale of each, BF16 and FP8.
    DGXC("24.09", "llama3-8b", 8, 128, 1, 8192, 1, 1, 2, 1, 1, false, 12.91),
    DGXC("24.09", "llama3-8b", 128, 2048, 1, 8192, 1, 1, 2, 1, 1, false, 13.10),
    DGXC("24.09", "llama3-8b", 8, 128, 1, 8192, 1, 1, 2, 1, 1, true, 9.67),
    DGXC("24.09", "llama3-8b", 128, 2048, 1, 8192, 1, 1, 2, 1, 1, true, 9.82),
    DGXC("24.09", "llama3-70b", 64, 128, 1, 8192, 4, 4, 2, 5, 1, false, 14.72),
    DGXC("24.09", "llama3-70b", 2048, 4096, 1, 8192, 4, 4, 2, 5, 1, false, 14.98),
    DGXC("24.09", "llama3-70b", 64, 128, 1, 8192, 4, 4, 2, 5, 1, true, 11.01),
    DGXC("24.09", "llama3-70b", 2048, 4096, 1, 8192, 4, 4, 2, 5, 1, true, 11.39),
    DGXC("24.09", "llama3.1-405b", 576, 252, 1, 8192, 8, 9, 2, 7, 1, false, 17.20),
    DGXC("24.09", "llama3.1-405b", 2304, 1008, 1, 8192, 8, 9, 2, 7, 1, false, 17.62),
    DGXC("24.09", "llama3.1-405b", 576, 252, 1, 8192, 8, 9, 2, 7, 1, true, 11.24),
    DGXC("24.09", "llama3.1-405b", 2304, 1008, 1, 8192, 8, 9, 2, 7, 1, true, 12.35),
    DGXC("24.11", "nemotron4-15b", 16, 64, 4, 4096, 4, 1, 1, 1, 1, false, 2.83),
    DGXC("24.11", "nemotron4-15b", 2048, 8192, 4, 4096, 4, 1, 1, 1, 1, false, 2.96),
    DGXC("24.11", "nemotron4-15b", 16, 64, 4, 4096, 4, 1, 1, 1, 1, true, 2.08),
    DGXC("24.11", "nemotron4-15b", 2048, 8192, 4, 4096, 4, 1, 1, 1, 1, true, 2.18),
    DGXC("24.11", "nemotron4-340b", 128, 32, 1, 4096, 8, 8, 1, 12, 1, false, 4.61),
    DGXC("24.11", "nemotron4-340b", 2048, 512, 1, 4096, 8, 8, 1, 12, 1, false, 4.84),
    DGXC("24.11", "nemotron4-340b", 128, 32, 1, 4096, 8, 8, 1, 12, 1, true, 3.16),
    DGXC("24.11", "nemotron4-340b", 2048, 512, 1, 4096, 8, 8, 1, 12, 1, true, 3.49),
    DGXC("24.11", "gpt3-175b", 128, 256, 1, 2048, 4, 8, 1, 12, 1, false, 8.91),
    DGXC("24.11", "gpt3-175b", 2048, 4096, 1, 2048, 4, 8, 1, 12, 1, false, 9.02),
    DGXC("24.11", "gpt3-175b", 128, 256, 1, 2048, 4, 8, 1, 12, 1, true, 5.92),
    DGXC("24.11", "gpt3-175b", 2048, 4096, 1, 2048, 4, 8, 1, 12, 1, true, 6.24),
    DGXC("24.11", "grok1-314b", 512, 1024, 1, 8192, 4, 8, 2, 8, 8, false, 20.83),
    DGXC("24.11", "grok1-314b", 512, 1024, 1, 8192, 4, 8, 2, 8, 8, true, 16.69),
    {S::Bridge, "25.11", "llama3-8b", 8, 128, 1, 8192, 1, 1, 1, 1, 1, true, true, R::None, 14451},
    {S::Bridge, "25.11", "llama3-70b", 64, 128, 1, 8192, 4, 8, 1, 5, 1, false, true, R::None, 1602},
    {S::Bridge, "26.04.01", "llama3-70b", 64, 256, 1, 8192, 4, 8, 1, 5, 1, false, true, R::None, 1664},
    {S::Bridge, "25.11", "llama3.1-405b", 1024, 512, 1, 8192, 8, 8, 2, 8, 1, false, true, R::None, 292},
    {S::Bridge, "26.06", "llama3.1-405b", 1024, 1536, 1, 8192, 8, 8, 2, 8, 1, false, true, R::None, 326},
    {S::Bridge, "25.09", "deepseek-v3", 1024, 8192, 1, 4096, 2, 8, 1, 4, 64, false, true, R::None, 1297},
    {S::Bridge, "26.04.01", "qwen3-30b-a3b", 16, 1024, 1, 4096, 1, 1, 1, 1, 16, false, true, R::None, 8960},
    {S::Bridge, "26.02.01", "qwen3-30b-a3b", 16, 1024, 1, 4096, 1, 2, 1, 12, 8, false, true, R::None, 9058},
    {S::Bridge, "26.04.01", "qwen3-235b-a22b", 256, 8192, 1, 4096, 2, 8, 1, 4, 32, false, true, R::None, 1712},
    {S::Bridge, "25.11", "qwen3-235b-a22b", 256, 2048, 1, 4096, 2, 8, 1, 4, 32, false, true, R::None, 1575},
    {S::Torchtitan, "2024-12", "llama3-8b", 8, 16, 2, 8192, 1, 1, 1, 1, 1, true, false, R::Selective, 5762, 82.4},
    {S::Torchtitan, "2024-12", "llama3-8b", 128, 256, 2, 8192, 1, 1, 1, 1, 1, true, false, R::Selective, 5605, 67.0},
    {S::Torchtitan, "2024-12", "llama3-8b", 8, 16, 2, 8192, 1, 1, 1, 1, 1, true, true, R::Selective, 8532, 76.8},
    {S::Torchtitan, "2024-12", "llama3-8b", 128, 256, 2, 8192, 1, 1, 1, 1, 1, true, true, R::Selective, 8380, 61.8},
    {S::Torchtitan, "2024-12", "llama3-70b", 256, 512, 16, 8192, 8, 1, 1, 1, 1, true, true, R::Full, 829, 71.9},
    // Table 5 states local batch 32 and no micro-batch count: torchtitan's
    // --experimental.pipeline_parallel_microbatches defaults to the number
    // of pipeline stages (8), so 8 micro-batches of 4 (its Interleaved 1F1B
    // row, 128 TPS, is 1.28x faster: (1 + 7/8) / (1 + 7/16) = 1.30).
    {S::Torchtitan, "2024-12", "llama3.1-405b", 512, 256, 4, 8192, 8, 8, 1, 1, 1, true, true, R::Full, 100, 82.5},
    {S::AutoModel, "26.04", "llama3-70b", 64, 128, 1, 8192, 1, 1, 2, 1, 1, true, false, R::None, 866.77},
};
#undef DGXC
// clang-format on

inline const char *sourceName(Source s) {
  switch (s) {
  case Source::Nemo2407:
    return "NeMo";
  case Source::Dgxc:
    return "DGXC";
  case Source::Bridge:
    return "M-Bridge";
  case Source::Torchtitan:
    return "torchtitan";
  case Source::AutoModel:
    return "AutoModel";
  }
  return "?";
}

/// NeMo, DGX Cloud and Megatron-Bridge run Megatron-core with Transformer
/// Engine; torchtitan and AutoModel are PyTorch-native.
inline bool isMegatronCore(Source s) {
  return s == Source::Nemo2407 || s == Source::Dgxc || s == Source::Bridge;
}

/// torchtitan's blocks and loss as its 2024-12 code runs them: selective
/// checkpointing by its per-op policy (the 8B configs'
/// `selective_ac_option = "op"`), the loss on an fp32 copy of the logits,
/// eager elementwise ops where torch.compile was off.
inline cost::LlmConfig llmOf(const LlmRow &r) {
  cost::LlmConfig c = *cost::llmPreset(r.model);
  c.seqLen = r.seq;
  // Their MoE routers (Megatron-Core's) pick each token's top-k experts:
  // under context parallelism each rank routes its own tokens (Grok-1's
  // c2 rows), with no gathers.
  c.sequenceRouting = false;
  if (r.source == Source::Torchtitan) {
    c.sacEveryOtherMatmul = r.recompute == cost::Recompute::Selective;
    c.fp32Loss = true;
    c.vocabParallelLoss = r.tp > 1; // torchtitan's loss_parallel default
    // The BF16 rows are the tables' "FSDP" rows, without torch.compile; the
    // FP8 ones ran with torch.compile (Tables 1-5).
    c.eagerElementwise = !r.fp8;
  }
  return c;
}

/// The cluster a row ran on: DGX H100 nodes (NeMo, Megatron-Bridge) or
/// Meta's Grand Teton hosts (torchtitan: H100 with 96 GB of HBM2e at
/// 2.4 TB/s, 400 Gb/s RDMA per GPU, FlashAttention-2; the 500 W cap's
/// clocks are not published, so the SXM peaks stand).
inline llvm::Expected<cluster::Cluster> clusterOf(const LlmRow &r) {
  llvm::Expected<cluster::Cluster> c =
      cluster::getPreset("dgx-h100", std::max(1u, r.gpus / 8));
  if (c && r.source == Source::Torchtitan)
    for (cluster::DeviceSpec &d : c->devices) {
      d.memoryBytes = 96 * 1073741824.0;
      d.memoryBandwidth = 2.4e12;
      // Its SDPA runs FlashAttention-2 (PyTorch's flash backend; cuDNN's
      // was not preferred in the 2024-12 nightly): "only 35% utilization on
      // H100" (FlashAttention-3, arXiv 2407.08608, abstract), where
      // FlashAttention-3 / cuDNN reach the preset's 0.5.
      d.efficiency[static_cast<unsigned>(cost::OpClass::Attention)] = 0.35;
    }
  return c;
}

/// Megatron-core's layout: blocks split evenly over the pp * vp virtual
/// stages with the embedding on the first and the head on the last, or
/// (account_for_embedding/loss_in_pipeline_split, as the 405B recipes do)
/// the embedding and the loss counted as one block each; where neither
/// divides, DistOpt's cost-balanced split.
inline schedule::Plan planOf(const LlmRow &r) {
  schedule::Plan p;
  p.tp = r.tp, p.pp = r.pp, p.cp = r.cp;
  p.dp = r.gpus / (r.tp * r.pp * r.cp);
  // Megatron folds expert parallelism over TP x DP when EP exceeds DP
  // (expert TP = 1); DistOpt keeps expert TP = TP, which gives each rank the
  // same expert work and weights.
  p.ep = r.ep <= p.dp ? r.ep : r.ep / r.tp;
  p.sp = r.tp > 1;
  // NeMo and Megatron-Bridge run tp_comm_overlap wherever TP > 1 and
  // Megatron's distributed optimizer with overlap_param_gather.
  const bool mcore = isMegatronCore(r.source);
  p.tpOverlap = mcore;
  p.overlapParamGather = mcore;
  p.mbs = r.mbs;
  p.zero = r.fsdp ? 3 : 1;
  p.recompute = r.recompute;
  p.schedule = r.vp > 1 ? schedule::ScheduleKind::Interleaved
                        : schedule::ScheduleKind::OneFOneB;
  p.chunks = r.vp;
  const unsigned V = r.pp * r.vp, L = llmOf(r).layers;
  if (V > 1 && L % V == 0) {
    for (unsigned i = 1; i < V; ++i)
      p.cuts.push_back(1 + i * (L / V));
  } else if (V > 1 && (L + 2) % V == 0) {
    for (unsigned i = 1; i < V; ++i)
      p.cuts.push_back(i * ((L + 2) / V));
  }
  return p;
}

inline cost::CostModel costModelOf(const LlmRow &r) {
  cost::CostModel cm;
  if (r.fp8)
    cm.setMatmulPrecision(cluster::DType::F8);
  return cm;
}

/// torchtitan's FSDP2: gradients reduced in fp32 (its mixed_precision_reduce
/// default), and under PP the stage's weights stay gathered over the step
/// (apply_fsdp's reshard_after_forward=False when PP is on) with the
/// gradient sum unsharded until the last micro-batch; its TP plan's
/// SequenceParallel leaves the projections holding all-gathered inputs.
inline cost::MemoryConfig memoryOf(const LlmRow &r) {
  cost::MemoryConfig m;
  if (r.source == Source::Torchtitan) {
    m.gradSyncBytes = 4;
    m.unshardedAcrossMicrobatches = true;
    m.spKeepsGatheredInputs = true;
  }
  return m;
}

/// Simulates row \p r; \p tune may change the cluster's constants first
/// (the calibration sweep).
inline llvm::Expected<sim::PlanSimulation>
runLlmRow(const LlmRow &r,
          const std::function<void(cluster::Cluster &)> &tune = nullptr) {
  llvm::Expected<cluster::Cluster> c = clusterOf(r);
  if (!c)
    return c.takeError();
  if (tune)
    tune(*c);
  cost::CostModel cm = costModelOf(r);
  return sim::simulatePlan(cost::buildLlm(llmOf(r)), *c, planOf(r), r.gbs, cm,
                           sim::SimOptions{false}, memoryOf(r));
}

/// Predicted tokens per second per GPU.
inline double predictedTokens(const LlmRow &r, const sim::SimResult &res) {
  return r.gbs * static_cast<double>(r.seq) / res.iterationTime / r.gpus;
}

} // namespace distopt::bench

#endif // DISTOPT_BENCH_SIM_PUBLISHEDROWS_H
