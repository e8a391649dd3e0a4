//===- InputPipelineTest.cpp - Data stalls against closed forms -*- C++ -*-===//

#include "lib/Sim/InputPipeline.h"
#include "lib/Sim/Simulator.h"

#include "SimTestUtil.h"

#include "gtest/gtest.h"

using namespace distopt;
using namespace distopt::sim;

namespace {

cluster::InputSide side(double storageGBps, double cacheGB, double cores) {
  return {storageGBps * 1e9, cacheGB * 1e9, cores};
}

/// ImageNet-like: 100 KB per sample, 4 ms of one core, 1 M samples
/// (a 100 GB dataset).
InputSpec imagenet() { return {100e3, 4e-3, 1e6}; }

/// One node of 8 devices reading a global batch of 2048 (256 per device).
const std::vector<double> kOneNode = {2048};
const std::vector<unsigned> kEight = {8};

TEST(InputSpec, ParsesUnits) {
  InputSpec s = llvm::cantFail(
      parseInputSpec("bytes=110KiB,preprocess=4.2ms,dataset=1.28M"));
  EXPECT_DOUBLE_EQ(s.bytesPerSample, 110 * 1024.0);
  EXPECT_DOUBLE_EQ(s.preprocessSeconds, 4.2e-3);
  EXPECT_DOUBLE_EQ(s.datasetSamples, 1.28e6);
  s = llvm::cantFail(parseInputSpec(" dataset=50000 , bytes=3KB, "
                                    "preprocess=250us"));
  EXPECT_DOUBLE_EQ(s.bytesPerSample, 3e3);
  EXPECT_DOUBLE_EQ(s.preprocessSeconds, 250e-6);
  EXPECT_DOUBLE_EQ(s.datasetSamples, 5e4);
  // Already-preprocessed data: no CPU time.
  EXPECT_EQ(llvm::cantFail(parseInputSpec("bytes=1MB,preprocess=0s,dataset=1K"))
                .preprocessSeconds,
            0);
  // What formatInputSpec writes reads back.
  InputSpec back = llvm::cantFail(parseInputSpec(formatInputSpec(s)));
  EXPECT_DOUBLE_EQ(back.bytesPerSample, s.bytesPerSample);
  EXPECT_DOUBLE_EQ(back.preprocessSeconds, s.preprocessSeconds);
  EXPECT_DOUBLE_EQ(back.datasetSamples, s.datasetSamples);
}

TEST(InputSpec, ErrorsNameTheKeyAndTheForm) {
  auto error = [](llvm::StringRef text) {
    llvm::Expected<InputSpec> s = parseInputSpec(text);
    EXPECT_FALSE(static_cast<bool>(s)) << text.str();
    return s ? std::string() : llvm::toString(s.takeError());
  };
  EXPECT_NE(error("bytes=110KiB,preprocess=4ms").find("'dataset' is missing"),
            std::string::npos);
  EXPECT_NE(error("bytes=1KB,preprocess=4,dataset=1M").find("preprocess='4'"),
            std::string::npos);
  EXPECT_NE(error("bytes=1KB,preprocess=-1ms,dataset=1M").find("from 0"),
            std::string::npos);
  EXPECT_NE(error("bytes=-1KB,preprocess=1ms,dataset=1M").find("bytes='-1KB'"),
            std::string::npos);
  EXPECT_NE(error("bytes=1KB,preprocess=1ms,dataset=0").find("at least 1"),
            std::string::npos);
  EXPECT_NE(error("bytes=1KB,preprocess=1ms,dataset=1MB").find("dataset="),
            std::string::npos);
  EXPECT_NE(error("bytes=1KB,bytes=2KB").find("given twice"),
            std::string::npos);
  EXPECT_NE(error("bytes=1KB,cores=4").find("unknown key 'cores'"),
            std::string::npos);
}

TEST(InputStall, PreprocessingBoundWithFewCores) {
  // Everything cached; 256 samples x 4 ms per device on 1 core = 1.024 s
  // against 0.5 s of device time.
  InputStall s =
      inputStall(side(2, 1000, 1), imagenet(), 0.5, kOneNode, kEight);
  EXPECT_DOUBLE_EQ(s.cacheHitRate, 1);
  EXPECT_DOUBLE_EQ(s.fetchTime, 0);
  EXPECT_DOUBLE_EQ(s.preprocessTime, 256 * 4e-3);
  EXPECT_DOUBLE_EQ(s.preprocessStall, 1.024 - 0.5);
  EXPECT_DOUBLE_EQ(s.fetchStall, 0);
  EXPECT_DOUBLE_EQ(s.iterationTime(), 1.024);
  EXPECT_EQ(s.bound(), "preprocessing");
  // Cores at which 256 x 4 ms fit in 0.5 s.
  EXPECT_DOUBLE_EQ(s.coresPerDeviceNeeded, 256 * 4e-3 / 0.5);
  EXPECT_EQ(s.cacheBytesNeeded, 0);
  // With those cores the stall is gone; with 3 times as many too.
  for (double cores : {s.coresPerDeviceNeeded, 3 * s.coresPerDeviceNeeded}) {
    InputStall t =
        inputStall(side(2, 1000, cores), imagenet(), 0.5, kOneNode, kEight);
    EXPECT_NEAR(t.stall(), 0, 1e-12);
    EXPECT_FALSE(t.stall() > 1e-12);
  }
}

TEST(InputStall, FetchBoundWithASmallCache) {
  // A 50 GB cache of the 100 GB dataset: half the samples come from a
  // 0.1 GB/s disk: 0.5 x 2048 x 100 KB / 0.1 GB/s = 1.024 s.
  InputStall s =
      inputStall(side(0.1, 50, 24), imagenet(), 0.5, kOneNode, kEight);
  EXPECT_DOUBLE_EQ(s.cacheHitRate, 0.5);
  EXPECT_DOUBLE_EQ(s.fetchTime, 0.5 * 2048 * 100e3 / 0.1e9);
  EXPECT_DOUBLE_EQ(s.preprocessTime, 256 * 4e-3 / 24);
  EXPECT_DOUBLE_EQ(s.preprocessStall, 0);
  EXPECT_DOUBLE_EQ(s.fetchStall, 1.024 - 0.5);
  EXPECT_EQ(s.bound(), "fetch");
  EXPECT_EQ(s.coresPerDeviceNeeded, 0);
  // Misses may move 0.5 s x 0.1 GB/s = 50 MB of the 204.8 MB read.
  double hit = 1 - 0.5 * 0.1e9 / (2048 * 100e3);
  EXPECT_DOUBLE_EQ(s.cacheBytesNeeded, hit * 100e9);
  EXPECT_DOUBLE_EQ(s.storageBandwidthNeeded, 0.5 * 2048 * 100e3 / 0.5);
  InputStall fixed = inputStall(side(0.1, s.cacheBytesNeeded / 1e9, 24),
                                imagenet(), 0.5, kOneNode, kEight);
  EXPECT_NEAR(fixed.stall(), 0, 1e-9);
  InputStall faster = inputStall(side(s.storageBandwidthNeeded / 1e9, 50, 24),
                                 imagenet(), 0.5, kOneNode, kEight);
  EXPECT_NEAR(faster.stall(), 0, 1e-9);
  // The dataset in the cache: no fetch at all.
  EXPECT_EQ(inputStall(side(0.1, 100, 24), imagenet(), 0.5, kOneNode, kEight)
                .fetchTime,
            0);
}

TEST(InputStall, FetchStallIsWhatFetchAddsOverPreprocessing) {
  // Preprocessing 1.024 s (1 core), fetch 1.536 s (75% misses): the
  // preprocessing stall 0.524 s, the fetch stall the 0.512 s beyond it.
  InputStall s =
      inputStall(side(0.1, 25, 1), imagenet(), 0.5, kOneNode, kEight);
  EXPECT_DOUBLE_EQ(s.fetchTime, 0.75 * 2048 * 100e3 / 0.1e9);
  EXPECT_DOUBLE_EQ(s.preprocessStall, 1.024 - 0.5);
  EXPECT_DOUBLE_EQ(s.fetchStall, 1.536 - 1.024);
  EXPECT_DOUBLE_EQ(s.iterationTime(), 1.536);
  EXPECT_EQ(s.bound(), "preprocessing");
  // Both remedies are named: cores alone would leave the fetch stall.
  EXPECT_GT(s.coresPerDeviceNeeded, 1);
  EXPECT_GT(s.cacheBytesNeeded, 25e9);
  // A fetch hidden behind a longer preprocessing adds nothing.
  InputStall hidden =
      inputStall(side(0.1, 50, 0.5), imagenet(), 0.5, kOneNode, kEight);
  EXPECT_DOUBLE_EQ(hidden.fetchStall, 0);
  EXPECT_GT(hidden.fetchTime, 0.5);
  EXPECT_GT(hidden.cacheBytesNeeded, 0);
}

TEST(InputStall, TheSlowestNodeSetsThePace) {
  // Two nodes: one reads 3072 samples, the other 1024; each has 8 devices.
  InputStall s =
      inputStall(side(0.1, 0, 1), imagenet(), 0.5, {3072, 1024}, {8, 8});
  EXPECT_EQ(s.readerNodes, 2u);
  EXPECT_DOUBLE_EQ(s.maxNodeSamples, 3072);
  EXPECT_DOUBLE_EQ(s.preprocessTime, 3072.0 / 8 * 4e-3);
  EXPECT_DOUBLE_EQ(s.fetchTime, 3072 * 100e3 / 0.1e9);
  EXPECT_EQ(s.preprocessNode, 0u);
  EXPECT_EQ(s.fetchNode, 0u);
  // Nodes that read nothing count for nothing.
  EXPECT_EQ(inputStall(side(0.1, 0, 1), imagenet(), 0.5, {0, 1024}, {8, 8})
                .readerNodes,
            1u);
}

TEST(InputStall, SamplesEnterThroughTheFirstStagesNodes) {
  cluster::Cluster c = llvm::cantFail(cluster::getPreset("dgx-v100", 2));
  std::vector<unsigned> firstNode = {0, 1, 2, 3, 4, 5, 6, 7};
  EXPECT_EQ(samplesPerNode(c, firstNode, 512), (std::vector<double>{512, 0}));
  std::vector<unsigned> spread = {0, 1, 2, 3, 8, 9, 10, 11};
  EXPECT_EQ(samplesPerNode(c, spread, 512), (std::vector<double>{256, 256}));
  EXPECT_EQ(devicesPerNode(c), (std::vector<unsigned>{8, 8}));
}

TEST(InputStall, SimulatePlanWaitsOnTheInput) {
  cluster::Cluster c = llvm::cantFail(cluster::getPreset("dgx-v100"));
  ASSERT_TRUE(c.input.has_value());
  cost::CostModel cm;
  cost::ModelDesc m = test::gpt(4);
  schedule::Plan plan = llvm::cantFail(schedule::parsePlan("dp=8"));
  PlanSimulation plain = llvm::cantFail(simulatePlan(m, c, plan, 64, cm));
  EXPECT_FALSE(plain.result.input.has_value());
  double T = plain.result.iterationTime;

  // An input pipeline far faster than the devices changes nothing.
  SimOptions fast;
  fast.input = InputSpec{1e3, 1e-9, 1e3};
  PlanSimulation kept = llvm::cantFail(simulatePlan(m, c, plan, 64, cm, fast));
  ASSERT_TRUE(kept.result.input.has_value());
  EXPECT_FALSE(kept.result.input->stalled());
  EXPECT_DOUBLE_EQ(kept.result.iterationTime, T);
  EXPECT_DOUBLE_EQ(kept.result.input->deviceTime, T);

  // 8 samples per device at 5 cores: preprocessing takes 8 p / 5 s. Make
  // it 3 T: the iteration takes 3 T, throughput and FLOP/s fall to a
  // third, the bubble's seconds stay.
  SimOptions slow;
  slow.input = InputSpec{1e3, 3 * T * 5 / 8, 1e3};
  PlanSimulation stalled =
      llvm::cantFail(simulatePlan(m, c, plan, 64, cm, slow));
  const SimResult &r = stalled.result;
  ASSERT_TRUE(r.input.has_value());
  EXPECT_NEAR(r.iterationTime, 3 * T, 1e-12 * T);
  EXPECT_NEAR(r.input->preprocessStall, 2 * T, 1e-12 * T);
  EXPECT_NEAR(r.samplesPerSecond, plain.result.samplesPerSecond / 3,
              1e-9 * plain.result.samplesPerSecond);
  EXPECT_NEAR(r.tflopsPerDevice, plain.result.tflopsPerDevice / 3,
              1e-9 * plain.result.tflopsPerDevice);
  EXPECT_NEAR(r.bubbleFraction * r.iterationTime,
              plain.result.bubbleFraction * T, 1e-12);

  // With pp=2 on two nodes the first stage's node reads everything: the
  // second node's cores cannot help.
  cluster::Cluster two = llvm::cantFail(cluster::getPreset("dgx-v100", 2));
  PlanSimulation pp = llvm::cantFail(simulatePlan(
      m, two, llvm::cantFail(schedule::parsePlan("dp=8,pp=2")), 64, cm, slow));
  ASSERT_TRUE(pp.result.input.has_value());
  EXPECT_EQ(pp.result.input->readerNodes, 1u);
  EXPECT_DOUBLE_EQ(pp.result.input->maxNodeSamples, 64);

  // Clusters without an input side are not modelled.
  cluster::Cluster bare = c;
  bare.input.reset();
  EXPECT_FALSE(llvm::cantFail(simulatePlan(m, bare, plan, 64, cm, slow))
                   .result.input.has_value());
}

} // namespace
