//===- OffloadSearchTest.cpp - Offload in costs, simulation, search -*- C++
//-*-//
//
// ZeRO-Offload / ZeRO-Infinity plans: the per-stage transfer terms and the
// CPU optimizer step against closed forms, the memory a device keeps, the
// simulated iteration, and the search choosing offload only where nothing
// fits without it.
//
//===----------------------------------------------------------------------===//

#include "lib/Search/Search.h"
#include "lib/Sim/Report.h"

#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

using namespace distopt;
using namespace distopt::schedule;
using cluster::Tier;

namespace {

constexpr double kPcie = 12e9, kDram = 90e9, kNvme = 3e9;

/// One 32 GB V100-like device whose node has 512 GB of host memory over a
/// 12 GB/s PCIe link (90 GB/s DRAM) and 4 TB of NVMe at 3 GB/s.
cluster::Cluster oneGpu(double hostGB = 512) {
  cluster::Cluster c = llvm::cantFail(cluster::getPreset("dgx-v100", 1));
  c.groups[0].devicesPerNode = 1;
  c.groups[0].tiers = {};
  c.groups[0].tiers[Tier::Host] = {hostGB * 1e9, kPcie};
  c.groups[0].tiers.hostMemoryBandwidth = kDram;
  c.groups[0].tiers[Tier::NVMe] = {4000e9, kNvme};
  return c;
}

/// A GPT of \p layers blocks of width \p hidden (sequence 1024, vocab
/// 51200, fused attention).
cost::ModelDesc gpt(unsigned layers, double hidden, double heads) {
  cost::GptConfig g;
  g.layers = layers;
  g.hidden = hidden;
  g.heads = heads;
  g.seqLen = 1024;
  g.vocab = 51200;
  g.fusedAttention = true;
  return cost::buildGpt(g);
}

/// About 2.9B parameters: 46 GB of mixed-precision Adam state.
cost::ModelDesc gpt3b() { return gpt(24, 3072, 24); }

sim::PlanSimulation simulate(const cost::ModelDesc &m,
                             const cluster::Cluster &c, llvm::StringRef plan,
                             unsigned batch = 8) {
  cost::CostModel cm;
  return llvm::cantFail(
      sim::simulatePlan(m, c, llvm::cantFail(parsePlan(plan)), batch, cm));
}

TEST(OffloadCosts, OptimizerToHostClosedForm) {
  cost::ModelDesc m = gpt3b();
  cluster::Cluster c = oneGpu();
  const double P = cost::paramSplit(m, 0, m.layers.size(), 1, 1, 1).total();
  sim::PlanSimulation base = simulate(m, c, "dp=1,mbs=1,recompute=full");
  EXPECT_FALSE(base.result.fitsMemory); // 16 bytes per parameter > 32 GB
  sim::PlanSimulation off =
      simulate(m, c, "dp=1,mbs=1,recompute=full,offload=opt");
  ASSERT_TRUE(off.result.fitsMemory) << off.result.memoryProblem;
  const DeviceCost &dc = off.costs.devices[0];
  // The device keeps the fp16 weights only.
  EXPECT_DOUBLE_EQ(dc.staticMemory.weights, 2 * P);
  EXPECT_EQ(dc.staticMemory.grads, 0);
  EXPECT_EQ(dc.staticMemory.optimizer, 0);
  // The CPU updates 28 bytes per parameter at the DRAM bandwidth, then the
  // fp16 weights go up over PCIe.
  EXPECT_NEAR(dc.optimizerTime, P * 28 / kDram + 2 * P / kPcie,
              1e-12 * dc.optimizerTime);
  // Each backward sends its fp16 gradient down, under the compute.
  const StageCost &s0 = base.costs.stages[0], &s1 = off.costs.stages[0];
  EXPECT_DOUBLE_EQ(s1.fwd, s0.fwd);
  EXPECT_NEAR(s1.bwdInput + s1.bwdWeight,
              std::max(s0.bwdInput + s0.bwdWeight, 2 * P / kPcie),
              1e-12 * s1.bwdInput);
  // Host memory holds 16 bytes per parameter.
  ASSERT_EQ(dc.offloadItems.size(), 1u);
  EXPECT_DOUBLE_EQ(dc.placement.bytes[0][0], 16 * P);
  // One stage, no sync: m forward-backward pairs and the CPU step.
  double m8 = off.plan.numMicrobatches;
  EXPECT_NEAR(off.result.iterationTime,
              m8 * (s1.fwd + s1.bwdInput + s1.bwdWeight) + dc.optimizerTime,
              1e-9 * off.result.iterationTime);
  EXPECT_GT(off.result.iterationTime, base.result.iterationTime);
}

TEST(OffloadCosts, ParamsAndActivationsClosedForm) {
  cost::ModelDesc m = gpt3b();
  cluster::Cluster c = oneGpu();
  const double P = cost::paramSplit(m, 0, m.layers.size(), 1, 1, 1).total();
  sim::PlanSimulation base = simulate(m, c, "dp=1,mbs=2");
  sim::PlanSimulation off = simulate(m, c, "dp=1,mbs=2,offload=opt+params+act");
  ASSERT_TRUE(off.result.fitsMemory) << off.result.memoryProblem;
  const StageCost &s0 = base.costs.stages[0], &s1 = off.costs.stages[0];
  const DeviceCost &dc = off.costs.devices[0];
  // Nothing static stays on the device; activations leave it.
  EXPECT_EQ(dc.staticMemory.staticBytes(), 0);
  EXPECT_EQ(s1.activationBytes, 0);
  // Weights (2P, densest: read 2m + 1 times) and activations (A per
  // micro-batch in flight, read and written m times) fill host memory
  // first; 512 GB holds everything here, so every byte moves at PCIe.
  double A = s0.activationBytes;
  EXPECT_NEAR(s1.fwd, std::max(s0.fwd, (2 * P + A) / kPcie), 1e-9 * s1.fwd);
  EXPECT_NEAR(s1.bwdInput + s1.bwdWeight,
              std::max(s0.bwdInput + s0.bwdWeight, (2 * P + A + 2 * P) / kPcie),
              1e-9 * s1.bwdInput);
  // The step writes the weights in host memory: no upload.
  EXPECT_NEAR(dc.optimizerTime, P * 28 / kDram, 1e-12 * dc.optimizerTime);
  ASSERT_EQ(dc.offloadItems.size(), 3u);
  EXPECT_DOUBLE_EQ(dc.offloadItems[1].bytes, 2 * P);
  EXPECT_DOUBLE_EQ(dc.offloadItems[2].bytes, A); // 1F1B on one stage: one
}

TEST(OffloadCosts, SmallHostMemorySpillsTheLeastDenseToNvme) {
  cost::ModelDesc m = gpt3b();
  const double P = cost::paramSplit(m, 0, m.layers.size(), 1, 1, 1).total();
  // 20 GB of host memory: the weights (2P, about 5.8 GB) stay there, the
  // optimizer state (16P) goes to NVMe beyond what is left.
  cluster::Cluster c = oneGpu(20);
  sim::PlanSimulation off = simulate(m, c, "dp=1,mbs=1,offload=opt+params");
  ASSERT_TRUE(off.result.fitsMemory) << off.result.memoryProblem;
  const DeviceCost &dc = off.costs.devices[0];
  EXPECT_DOUBLE_EQ(dc.placement.bytes[1][0], 2 * P);
  EXPECT_NEAR(dc.placement.bytes[0][0], 20e9 - 2 * P, 1);
  EXPECT_NEAR(dc.placement.bytes[0][1], 16 * P - (20e9 - 2 * P), 1);
  // The state in NVMe is read and written once a step at 3 GB/s, longer
  // than the CPU's pass over it.
  double io = 2 * dc.placement.bytes[0][1] / kNvme;
  EXPECT_NEAR(dc.optimizerTime, std::max(P * 28 / kDram, io),
              1e-9 * dc.optimizerTime);
  // 5 GB of host memory and no NVMe: the state fits nowhere.
  cluster::Cluster tiny = oneGpu(5);
  tiny.groups[0].tiers[Tier::NVMe] = {};
  sim::PlanSimulation over = simulate(m, tiny, "dp=1,mbs=1,offload=opt");
  EXPECT_FALSE(over.result.fitsMemory);
  EXPECT_NE(over.result.memoryProblem.find(
                "offloads 46.07 GB per device but its node's storage tiers "
                "give each device 5.00 GB"),
            std::string::npos)
      << over.result.memoryProblem;
}

TEST(OffloadCosts, IdleDevicesLeaveTheirShareOfTheNode) {
  // One of a DGX-1's eight V100s: its plan has the node's 512 GB of host
  // memory to itself; on all eight each gets 64 GB.
  cost::ModelDesc m = gpt3b();
  cluster::Cluster dgx = llvm::cantFail(cluster::getPreset("dgx-v100", 1));
  sim::PlanSimulation one = simulate(m, dgx, "dp=1,mbs=1,offload=opt");
  EXPECT_DOUBLE_EQ(one.costs.devices[0].tiers.capacity[0], 512e9);
  EXPECT_DOUBLE_EQ(one.costs.devices[0].tiers.hostBandwidth[0], 92e9);
  sim::PlanSimulation all =
      simulate(m, dgx, "dp=8,mbs=1,zero=2,offload=opt", 64);
  EXPECT_DOUBLE_EQ(all.costs.devices[0].tiers.capacity[0], 64e9);
  EXPECT_DOUBLE_EQ(all.costs.devices[0].tiers.hostBandwidth[0], 92e9 / 8);
}

TEST(OffloadCosts, ReportShowsBytesPerTier) {
  cost::ModelDesc m = gpt3b();
  const double P = cost::paramSplit(m, 0, m.layers.size(), 1, 1, 1).total();
  sim::PlanSimulation off = simulate(m, oneGpu(), "dp=1,mbs=1,offload=opt");
  std::string json;
  llvm::raw_string_ostream os(json);
  sim::writeReport(off.plan, m, off.costs, off.result, os);
  llvm::json::Value v = llvm::cantFail(llvm::json::parse(json));
  const llvm::json::Object *e = v.getAsObject()->getObject("estimate");
  ASSERT_TRUE(e);
  const llvm::json::Array *o = e->getArray("offload");
  ASSERT_TRUE(o);
  const llvm::json::Object *tiers =
      (*o)[0].getAsObject()->getObject("tier_bytes");
  EXPECT_DOUBLE_EQ(*tiers->getNumber("host"), 16 * P);
  EXPECT_EQ(*tiers->getNumber("nvme"), 0);
  EXPECT_EQ(*v.getAsObject()->getObject("plan")->getString("offload"), "opt");
  std::string text;
  llvm::raw_string_ostream ts(text);
  sim::printOffload(off.plan, off.costs, ts);
  EXPECT_NE(text.find("stage 0 offload opt: optimizer 46.07 GB in host; per "
                      "device host 46.07 GB, nvme 0.00 GB, hdd 0.00 GB; CPU "
                      "optimizer step"),
            std::string::npos)
      << text;
}

TEST(OffloadCosts, PlansThatCannotOffload) {
  cost::ModelDesc m = gpt3b();
  cost::CostModel cm;
  auto err = [&](const cluster::Cluster &c, llvm::StringRef plan) {
    llvm::Expected<sim::PlanSimulation> ps =
        sim::simulatePlan(m, c, llvm::cantFail(parsePlan(plan)), 16, cm);
    EXPECT_FALSE(static_cast<bool>(ps)) << plan.str();
    return ps ? std::string() : llvm::toString(ps.takeError());
  };
  cluster::Cluster local = llvm::cantFail(cluster::getPreset("local"));
  EXPECT_NE(err(local, "dp=1,offload=opt")
                .find("offload=opt needs the host memory of the nodes, but "
                      "node group of 'local-core' in cluster 'local' has no "
                      "storage tiers; add tiers:"),
            std::string::npos);
  cluster::Cluster dgx = llvm::cantFail(cluster::getPreset("dgx-v100", 1));
  EXPECT_NE(err(dgx, "dp=8,zero=1,offload=opt")
                .find("offload=opt with dp*cp = 8 needs zero=2 or 3"),
            std::string::npos);
  EXPECT_NE(err(dgx, "dp=4,pp=2,zero=2,schedule=pipedream,offload=opt")
                .find("with the asynchronous schedule pipedream is not "
                      "modelled"),
            std::string::npos);
}

TEST(OffloadSearch, ChosenOnlyWhenNothingFitsWithout) {
  cost::CostModel cm;
  search::SearchOptions o;
  o.globalBatch = 8;
  // Too large for the device without offload: the search offloads.
  llvm::Expected<search::SearchResult> big =
      search::searchPlan(gpt3b(), oneGpu(), cm, o);
  ASSERT_TRUE(static_cast<bool>(big)) << llvm::toString(big.takeError());
  EXPECT_TRUE(big->best.sim.plan.offload.optimizer) << big->best.sim.plan.str();
  // Forbidding offload leaves no plan.
  search::SearchOptions none = o;
  none.constraints = llvm::cantFail(search::parseConstraints("offload=none"));
  llvm::Expected<search::SearchResult> no =
      search::searchPlan(gpt3b(), oneGpu(), cm, none);
  ASSERT_FALSE(static_cast<bool>(no));
  EXPECT_NE(llvm::toString(no.takeError()).find("no plan fits in memory"),
            std::string::npos);
  // A model that fits trains without offload (offload only adds time).
  cost::ModelDesc small100m = gpt(4, 1024, 16);
  llvm::Expected<search::SearchResult> small =
      search::searchPlan(small100m, oneGpu(), cm, o);
  ASSERT_TRUE(static_cast<bool>(small));
  EXPECT_FALSE(small->best.sim.plan.offload.any())
      << small->best.sim.plan.str();
  // Asked to offload, it still can, and is slower.
  search::SearchOptions forced = o;
  forced.constraints = llvm::cantFail(search::parseConstraints("offload=opt"));
  llvm::Expected<search::SearchResult> f =
      search::searchPlan(small100m, oneGpu(), cm, forced);
  ASSERT_TRUE(static_cast<bool>(f));
  EXPECT_TRUE(f->best.sim.plan.offload.optimizer);
  EXPECT_GT(f->best.sim.result.iterationTime,
            small->best.sim.result.iterationTime);
}

TEST(OffloadSearch, ConstraintErrors) {
  auto err = [](llvm::StringRef s) {
    llvm::Expected<search::Constraints> c = search::parseConstraints(s);
    EXPECT_FALSE(static_cast<bool>(c)) << s.str();
    return c ? std::string() : llvm::toString(c.takeError());
  };
  EXPECT_EQ(err("offload<=opt"),
            "--dist-search='offload<=opt': 'offload<=opt': offload takes '=' "
            "with values joined by '|' (e.g. offload=none|opt|opt+params)");
  EXPECT_NE(err("offload=opt|params").find("params without opt"),
            std::string::npos);
  search::Constraints any =
      llvm::cantFail(search::parseConstraints("offload=any"));
  EXPECT_EQ(any.offload.size(), 6u);
}

} // namespace
