//===- BranchesTest.cpp - Branch placement for inference ------------------===//
//
// searchBranches: the latency of a placement is the trunk, then per device
// its inputs (sent one after the other from the trunk's device), its
// branches and its outputs back, then the tail; the search weighs every
// assignment, so it is never slower than one device; memory and the
// assignment count are enforced.
//
//===----------------------------------------------------------------------===//
#include "lib/Search/Branches.h"

#include "lib/Cluster/Cluster.h"
#include "lib/Cost/CostModel.h"

#include "gtest/gtest.h"

using namespace distopt;
using namespace distopt::search;
using llvm::cantFail;

namespace {
/// A trunk of \p trunkDepth 1024 x 1024 linear layers (4 MiB of f32
/// weights each), \p branches heads of \p depth such layers each, and an empty
/// tail; every branch reads the trunk's output (4 KiB per sample in f32) and
/// returns 40 bytes per sample.
struct Forked {
  cost::ModelDesc model;
  BranchShape shape;
  Forked(unsigned branches, unsigned depth, unsigned trunkDepth = 1) {
    auto layer = [](unsigned n) {
      cost::LayerDesc l;
      for (unsigned i = 0; i < n; ++i)
        l.ops.push_back(cost::matmulOp("linear", cluster::DType::F32, 1, 1,
                                       1024, 1024, /*weightIsParam=*/true));
      return l;
    };
    model.layers.push_back(layer(trunkDepth));
    shape.names.push_back("trunk");
    for (unsigned b = 1; b <= branches; ++b) {
      model.layers.push_back(layer(depth));
      shape.names.push_back("branch " + std::to_string(b));
    }
    model.layers.push_back(layer(0));
    shape.names.push_back("tail");
    shape.branches = branches;
    shape.valueBytes = {4096};
    shape.branchInputs.assign(branches, {0});
    shape.branchOutputBytes.assign(branches, 40);
  }
};

SearchOptions options(unsigned batch) {
  SearchOptions o;
  o.globalBatch = batch;
  o.mode = Mode::Infer;
  o.objective = InferObjective::Latency;
  o.memory.mixedPrecision = false;
  return o;
}
} // namespace

TEST(BranchesTest, LatencyIsTrunkThenTheSlowestDeviceThenTail) {
  Forked f(3, 4);
  cluster::Cluster c = cantFail(cluster::getPreset("arm-board-ethernet"));
  cost::CostModel cm;
  BranchResult r =
      cantFail(searchBranches(f.model, f.shape, c, cm, options(8)));
  // Four identical boards: the groupings of 3 branches, each with every
  // choice of the trunk board's group or none: 1 x 2 + 3 x 3 + 1 x 4.
  EXPECT_TRUE(r.symmetric);
  EXPECT_EQ(r.weighed, 15u);
  // One device: the trunk and three equal branches one after the other.
  double branch = (r.single.latency - r.single.trunk) / 3;
  EXPECT_GT(branch, 0);
  EXPECT_EQ(r.single.perDevice.size(), 1u);
  // Spread over three boards: the trunk's board sends the 8 x 4 KiB input
  // to the second board, then to the third; each returns 8 x 40 bytes.
  const cluster::LinkSpec &link = c.link(c.levelBetween(0, 1), 0);
  double in = cost::CostModel::p2pTime(8 * 4096, link);
  double out = cost::CostModel::p2pTime(8 * 40, link);
  EXPECT_NEAR(r.best.latency, r.best.trunk + 2 * in + branch + out,
              1e-12 * r.best.latency);
  std::vector<unsigned> used;
  for (const BranchPlacement::DeviceTime &d : r.best.perDevice)
    used.push_back(d.device);
  EXPECT_EQ(used.size(), 3u);
  EXPECT_LT(r.best.latency, r.single.latency);
  EXPECT_EQ(r.best.devices.front(), r.best.devices.back()); // tail at home
}

TEST(BranchesTest, SlowLinkKeepsEverythingOnOneDevice) {
  // Short branches on Wi-Fi (3 ms per message): sending costs more than
  // the branch, so the best placement is one device's.
  Forked f(2, 1);
  f.shape.valueBytes = {1 << 20};
  cluster::Cluster c = cantFail(cluster::getPreset("arm-board-wifi"));
  cost::CostModel cm;
  BranchResult r =
      cantFail(searchBranches(f.model, f.shape, c, cm, options(1)));
  EXPECT_EQ(r.best.latency, r.single.latency);
  EXPECT_EQ(r.best.perDevice.size(), 1u);
  EXPECT_EQ(r.best.devices, std::vector<unsigned>(4, 0));
}

TEST(BranchesTest, SharedInputIsSentOnceToADevice) {
  // Two boards that hold 8.4 MB each: the trunk (two layers, 8.39 MB)
  // fills the first, so the second runs both branches (one layer each) and
  // receives the trunk's output they share once.
  Forked f(2, 1, 2);
  cluster::Cluster c = cantFail(cluster::getPreset("arm-board-ethernet"));
  cost::CostModel cm;
  SearchOptions o = options(4);
  o.devices = 2;
  o.memoryLimit = 8.4e6;
  BranchResult r = cantFail(searchBranches(f.model, f.shape, c, cm, o));
  ASSERT_EQ(r.best.perDevice.size(), 2u);
  const BranchPlacement::DeviceTime &remote = r.best.perDevice[1];
  EXPECT_NE(remote.device, r.best.devices.front());
  EXPECT_EQ(remote.branches.size(), 2u);
  EXPECT_NEAR(remote.start - r.best.trunk,
              cost::CostModel::p2pTime(
                  4 * 4096, c.link(c.levelBetween(0, remote.device), 0)),
              1e-12);
}

TEST(BranchesTest, MemoryAndAssignmentLimits) {
  Forked f(3, 1);
  cluster::Cluster c = cantFail(cluster::getPreset("arm-board-ethernet"));
  cost::CostModel cm;
  SearchOptions o = options(1);
  o.memoryLimit = 1e6; // a 4 MiB layer fits nowhere
  llvm::Expected<BranchResult> r = searchBranches(f.model, f.shape, c, cm, o);
  ASSERT_FALSE(static_cast<bool>(r));
  EXPECT_NE(llvm::toString(r.takeError())
                .find("no branch placement fits in "
                      "memory"),
            std::string::npos);
  Forked many(12, 1);
  r = searchBranches(many.model, many.shape, c, cm, options(1),
                     /*exhaustive=*/true);
  ASSERT_FALSE(static_cast<bool>(r));
  EXPECT_NE(llvm::toString(r.takeError()).find("--dist-devices=N"),
            std::string::npos);
  o = options(1);
  o.devices = 2;
  r = searchBranches(many.model, many.shape, c, cm, o, /*exhaustive=*/true);
  ASSERT_TRUE(static_cast<bool>(r)) << llvm::toString(r.takeError());
  EXPECT_EQ(r->weighed, 8192u); // 2^13
  // Interchangeable boards: the groupings of 10 branches into at most 4
  // (4^11 assignments would be 4.2M).
  Forked ten(10, 1);
  r = searchBranches(ten.model, ten.shape, c, cm, options(1));
  ASSERT_TRUE(static_cast<bool>(r)) << llvm::toString(r.takeError());
  EXPECT_TRUE(r->symmetric);
  // 1 x 2 + 511 x 3 + 9330 x 4 + 34105 x 4 (S(10, j) for j = 1..4).
  EXPECT_EQ(r->weighed, 175275u);
  Forked huge(20, 1);
  r = searchBranches(huge.model, huge.shape, c, cm, options(1));
  ASSERT_FALSE(static_cast<bool>(r));
  EXPECT_NE(llvm::toString(r.takeError()).find("interchangeable devices"),
            std::string::npos);
}

TEST(BranchesTest, GroupingsFindTheBestAssignment) {
  // On interchangeable boards the groupings (Jackson's rule for the order
  // of the sends) give the latency of weighing every assignment, for
  // branches of different depths, both links and several batches.
  for (const char *preset : {"arm-board-ethernet", "arm-board-wifi"})
    for (unsigned batch : {1u, 8u, 64u})
      for (std::vector<unsigned> depths : {std::vector<unsigned>{1, 2, 3},
                                           {4, 1, 1, 2},
                                           {1, 1, 1, 1, 6},
                                           {2, 8}}) {
        Forked f(depths.size(), 1);
        for (auto [i, d] : llvm::enumerate(depths))
          f.model.layers[i + 1].ops.resize(d,
                                           f.model.layers[i + 1].ops.front());
        f.shape.branchOutputBytes[0] = 1 << 16;
        cluster::Cluster c = cantFail(cluster::getPreset(preset));
        cost::CostModel cm;
        BranchResult sym =
            cantFail(searchBranches(f.model, f.shape, c, cm, options(batch)));
        BranchResult all = cantFail(searchBranches(
            f.model, f.shape, c, cm, options(batch), /*exhaustive=*/true));
        ASSERT_TRUE(sym.symmetric);
        ASSERT_FALSE(all.symmetric);
        EXPECT_LT(sym.weighed, all.weighed);
        EXPECT_NEAR(sym.best.latency, all.best.latency,
                    1e-12 * all.best.latency)
            << preset << " batch " << batch << " branches " << depths.size();
        EXPECT_EQ(sym.single.latency, all.single.latency);
      }
}

TEST(BranchesTest, MixedDevicesWeighEveryAssignment) {
  // Phones and a cloud A100: not interchangeable.
  Forked f(3, 2);
  cluster::Cluster c = cantFail(cluster::getPreset("edge-cloud-wifi", 3));
  cost::CostModel cm;
  BranchResult r =
      cantFail(searchBranches(f.model, f.shape, c, cm, options(8)));
  EXPECT_FALSE(r.symmetric);
  EXPECT_EQ(r.weighed, 81u); // 3 devices ^ 4
}
