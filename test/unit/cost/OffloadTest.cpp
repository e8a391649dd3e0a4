//===- OffloadTest.cpp - Storage tiers, placement, CPU step -----*- C++ -*-===//
//
// The offload cost terms against hand-computed closed forms.
//
//===----------------------------------------------------------------------===//

#include "lib/Cost/Offload.h"

#include "gtest/gtest.h"

using namespace distopt::cost;
using namespace distopt::cluster;

namespace {

TEST(Offload, ParsesAndPrintsSets) {
  for (const Offload &o : allOffloads()) {
    Offload back = llvm::cantFail(parseOffload(o.str()));
    EXPECT_TRUE(back == o) << o.str();
  }
  EXPECT_EQ(allOffloads().size(), 6u);
  Offload o = llvm::cantFail(parseOffload("act+params+opt"));
  EXPECT_EQ(o.str(), "opt+params+act");
  EXPECT_TRUE(o.includes(llvm::cantFail(parseOffload("opt+act"))));
  EXPECT_FALSE(llvm::cantFail(parseOffload("opt")).includes(o));
  EXPECT_FALSE(llvm::cantFail(parseOffload("none")).any());
  auto err = [](llvm::StringRef s) {
    llvm::Expected<Offload> o = parseOffload(s);
    EXPECT_FALSE(static_cast<bool>(o)) << s.str();
    return o ? std::string() : llvm::toString(o.takeError());
  };
  EXPECT_EQ(err("params"), "offload 'params': params without opt; the "
                           "optimizer step updates the offloaded parameters "
                           "on the CPU, so write opt+params");
  EXPECT_EQ(err("opt+ssd"),
            "offload 'opt+ssd': unknown part 'ssd'; use none or parts opt, "
            "params, act joined by '+' (e.g. opt+params)");
  EXPECT_EQ(err("opt+opt"), "offload 'opt+opt' names 'opt' twice");
}

TEST(Offload, DeviceKeepsOnlyWhatIsNotOffloaded) {
  const double P = 1e9;
  MemoryConfig cfg; // mixed-precision Adam: 2 + 2 + 12 bytes per parameter
  EXPECT_DOUBLE_EQ(staticMemory(P, cfg).staticBytes(), 16 * P);
  cfg.offload.optimizer = true;
  MemoryBreakdown m = staticMemory(P, cfg);
  EXPECT_DOUBLE_EQ(m.weights, 2 * P);
  EXPECT_DOUBLE_EQ(m.grads, 0);
  EXPECT_DOUBLE_EQ(m.optimizer, 0);
  cfg.offload.params = true;
  EXPECT_DOUBLE_EQ(staticMemory(P, cfg).staticBytes(), 0);
  // ZeRO-3 with dp = 4 shards the weights the device keeps under "opt".
  cfg.offload.params = false;
  cfg.zero = 3;
  cfg.dp = 4;
  EXPECT_DOUBLE_EQ(staticMemory(P, cfg).staticBytes(), 2 * P / 4);
}

TEST(Offload, HostStatePerParameter) {
  MemoryConfig cfg;
  // fp32 master, momentum, variance (12) + the fp32 gradient (4).
  EXPECT_DOUBLE_EQ(offloadedOptimizerBytesPerParam(cfg), 16);
  cfg.mixedPrecision = false; // momentum, variance (8) + weights + gradient
  EXPECT_DOUBLE_EQ(offloadedOptimizerBytesPerParam(cfg), 16);
  cfg.optimizer = Optimizer::SGD; // no state: the weights and the gradient
  EXPECT_DOUBLE_EQ(offloadedOptimizerBytesPerParam(cfg), 8);
  cfg.mixedPrecision = true; // fp32 master (4) + gradient (4)
  EXPECT_DOUBLE_EQ(offloadedOptimizerBytesPerParam(cfg), 8);
}

NodeGroup dgxLikeNode() {
  NodeGroup g;
  g.devicesPerNode = 8;
  g.tiers[Tier::Host] = {2048e9, 25e9};
  g.tiers.hostMemoryBandwidth = 240e9;
  g.tiers[Tier::NVMe] = {30720e9, 24e9};
  return g;
}

TEST(Offload, DeviceShareOfTheNodesTiers) {
  DeviceTiers d = deviceTiers(dgxLikeNode());
  const unsigned host = 0, nvme = 1, hdd = 2;
  EXPECT_DOUBLE_EQ(d.capacity[host], 256e9);
  EXPECT_DOUBLE_EQ(d.bandwidth[host], 25e9);     // its own PCIe link
  EXPECT_DOUBLE_EQ(d.hostBandwidth[host], 30e9); // 240 GB/s over 8
  EXPECT_DOUBLE_EQ(d.capacity[nvme], 3840e9);
  EXPECT_DOUBLE_EQ(d.bandwidth[nvme], 3e9); // 24 GB/s over 8, under PCIe
  EXPECT_DOUBLE_EQ(d.hostBandwidth[nvme], 3e9);
  EXPECT_EQ(d.capacity[hdd], 0);
  // One device per node: NVMe faster than PCIe is capped by PCIe.
  NodeGroup one = dgxLikeNode();
  one.devicesPerNode = 1;
  EXPECT_DOUBLE_EQ(deviceTiers(one).bandwidth[nvme], 24e9);
  one.tiers[Tier::NVMe].bandwidth = 40e9;
  EXPECT_DOUBLE_EQ(deviceTiers(one).bandwidth[nvme], 25e9);
  EXPECT_DOUBLE_EQ(deviceTiers(one).hostBandwidth[nvme], 40e9);
}

DeviceTiers twoTiers() {
  DeviceTiers t;
  t.capacity = {100, 1000, 0};
  t.bandwidth = {10, 1, 0};
  t.hostBandwidth = {50, 2, 0};
  return t;
}

TEST(Offload, PlacementFillsTheFastTierByIoDensity) {
  DeviceTiers t = twoTiers();
  std::vector<OffloadItem> items = {
      {OffloadKind::Optimizer, 80, 160, true}, // density 2
      {OffloadKind::Params, 50, 500, false},   // density 10
      {OffloadKind::Activations, 10, 40, false}};
  Placement p = placeByIoDensity(items, t);
  ASSERT_TRUE(p.fits);
  // Params (densest), then activations into host memory; the optimizer
  // state gets the 40 bytes left there and 40 in NVMe.
  EXPECT_DOUBLE_EQ(p.bytes[1][0], 50);
  EXPECT_DOUBLE_EQ(p.bytes[2][0], 10);
  EXPECT_DOUBLE_EQ(p.bytes[0][0], 40);
  EXPECT_DOUBLE_EQ(p.bytes[0][1], 40);
  EXPECT_DOUBLE_EQ(p.perTier()[0], 100);
  EXPECT_DOUBLE_EQ(p.perTier()[1], 40);
  // A byte of params crosses PCIe at 10 B/s; half the optimizer state is
  // in host memory (free for the CPU), half in NVMe at its 2 B/s.
  EXPECT_DOUBLE_EQ(p.secondsPerByte(1, items[1], t), 0.1);
  EXPECT_DOUBLE_EQ(p.secondsPerByte(0, items[0], t), 0.5 / 2);
  // More than both tiers hold.
  items[0].bytes = 2000;
  EXPECT_FALSE(placeByIoDensity(items, t).fits);
}

TEST(Offload, PlacementMinimisesTransferTime) {
  // Two device-side items compete for 100 bytes of the fast tier: every
  // split of the fast tier between them takes at least the greedy's time.
  DeviceTiers t = twoTiers();
  for (double da : {1.0, 3.0, 7.0})
    for (double db : {2.0, 5.0}) {
      std::vector<OffloadItem> items = {
          {OffloadKind::Params, 80, 80 * da, false},
          {OffloadKind::Activations, 60, 60 * db, false}};
      Placement p = placeByIoDensity(items, t);
      double greedy = 0;
      for (unsigned i = 0; i < 2; ++i)
        greedy += items[i].traffic * p.secondsPerByte(i, items[i], t);
      for (double a = 0; a <= 80; a += 5) {
        double b = std::min(60.0, 100 - a);
        double time = 80 * da * (a / 80 / 10 + (80 - a) / 80 / 1) +
                      60 * db * (b / 60 / 10 + (60 - b) / 60 / 1);
        EXPECT_LE(greedy, time + 1e-9) << da << " " << db << " " << a;
      }
    }
}

TEST(Offload, CpuStepClosedForm) {
  // 1e9 parameters, 28 bytes each, at 100 GB/s: 0.28 s; the weights'
  // upload (2e9 bytes at 25 GB/s) follows.
  EXPECT_DOUBLE_EQ(cpuOptimizerStepTime(1e9, 28, 100e9, 0, 0.08), 0.36);
  // State streamed from NVMe for longer than the update: the stream counts.
  EXPECT_DOUBLE_EQ(cpuOptimizerStepTime(1e9, 28, 100e9, 0.5, 0.08), 0.58);
}

TEST(Offload, StageTransfersPerPass) {
  StageOffload s;
  s.paramBytes = 10;
  s.activationBytes = 4;
  s.gradBytes = 6;
  s.paramSecondsPerByte = 0.1;
  s.activationSecondsPerByte = 0.5;
  s.gradSecondsPerByte = 0.25;
  EXPECT_DOUBLE_EQ(s.forwardTransfer(), 1 + 2);
  EXPECT_DOUBLE_EQ(s.backwardTransfer(), 1 + 2 + 1.5);
}

} // namespace
