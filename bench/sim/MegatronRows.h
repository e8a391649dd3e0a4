//===- MegatronRows.h - Megatron-LM Table 1 setups --------------*- C++ -*-===//
//
// The ten GPT rows of Narayanan et al. (SC'21) Table 1 and how DistOpt
// plans and simulates each, shared by dist-bench-sim and the regression
// gtest in test/unit/sim.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_BENCH_SIM_MEGATRONROWS_H
#define DISTOPT_BENCH_SIM_MEGATRONROWS_H

#include "lib/Cluster/Cluster.h"
#include "lib/Cost/CostModel.h"
#include "lib/Schedule/Plan.h"
#include "lib/Sim/Simulator.h"

namespace distopt::bench {

struct Row {
  double paramsB;
  unsigned heads, hidden, layers, t, p, d, gpus, batch;
  double published;
};
// Narayanan et al., SC'21, Table 1 (see /work/shared/brief/REFERENCES.md).
inline constexpr Row kRows[] = {
    {1.7, 24, 2304, 24, 1, 1, 32, 32, 512, 137},
    {3.6, 32, 3072, 30, 2, 1, 32, 64, 512, 138},
    {7.5, 32, 4096, 36, 4, 1, 32, 128, 512, 142},
    {18.4, 48, 6144, 40, 8, 1, 32, 256, 1024, 135},
    {39.1, 64, 8192, 48, 8, 2, 32, 512, 1536, 138},
    {76.1, 80, 10240, 60, 8, 4, 32, 1024, 1792, 140},
    {145.6, 96, 12288, 80, 8, 8, 24, 1536, 2304, 148},
    {310.1, 128, 16384, 96, 8, 16, 15, 1920, 2160, 155},
    {529.6, 128, 20480, 105, 8, 35, 9, 2520, 2520, 163},
    {1008.0, 160, 25600, 128, 8, 64, 6, 3072, 3072, 163},
};

inline cost::GptConfig gptOf(const Row &r) {
  cost::GptConfig g;
  g.layers = r.layers;
  g.hidden = r.hidden;
  g.heads = r.heads;
  g.seqLen = 2048;
  g.vocab = 51200;
  return g;
}

/// Megatron's setup: interleaved schedule (2 chunks, or 3 where the layers
/// per stage are odd), micro-batch 1, full recomputation, blocks split
/// evenly with the embedding on the first and the head on the last stage.
/// Megatron-LM (2021) blocked on its p2p transfers and all-reduced fp32
/// gradients after the whole backward pass.
inline schedule::Plan planOf(const Row &r) {
  schedule::Plan p;
  p.dp = r.d;
  p.tp = r.t;
  p.pp = r.p;
  p.mbs = 1;
  p.recompute = cost::Recompute::Full;
  p.overlapP2P = false;
  p.overlapGradSync = false;
  p.schedule = schedule::ScheduleKind::OneFOneB;
  if (r.p > 1) {
    unsigned perStage = r.layers / r.p;
    for (unsigned v : {2u, 3u})
      if (perStage % v == 0 && p.chunks == 1)
        p.chunks = v;
    if (p.chunks > 1)
      p.schedule = schedule::ScheduleKind::Interleaved;
  }
  unsigned V = p.pp * p.chunks;
  for (unsigned i = 1; i < V; ++i)
    p.cuts.push_back(1 + i * (r.layers / V));
  return p;
}

inline cost::MemoryConfig megatronMemory() {
  cost::MemoryConfig m;
  m.gradSyncBytes = 4;
  return m;
}

inline llvm::Expected<sim::PlanSimulation> runRow(const Row &r, bool record) {
  llvm::Expected<cluster::Cluster> c =
      cluster::getPreset("dgx-a100-80gb", r.gpus / 8);
  if (!c)
    return c.takeError();
  cost::ModelDesc model = cost::buildGpt(gptOf(r));
  cost::CostModel cm;
  sim::SimOptions opts;
  opts.recordEvents = record;
  return sim::simulatePlan(model, *c, planOf(r), r.batch, cm, opts,
                           megatronMemory());
}

/// Megatron's FLOP formula over the simulated time, per GPU, in TFLOP/s.
inline double predictedTflops(const Row &r, const sim::SimResult &res) {
  return cost::gptFlopsPerIteration(gptOf(r), r.batch, true) /
         res.iterationTime / r.gpus / 1e12;
}

} // namespace distopt::bench

#endif // DISTOPT_BENCH_SIM_MEGATRONROWS_H
