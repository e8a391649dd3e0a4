//===- InputShapeSpecTest.cpp - --input-shape parsing and sniffing --------===//
//
// Part of DistOpt.
//
//===----------------------------------------------------------------------===//
#include "dist/ImportONNX.h"
#include "lib/Import/Weights.h"

#include <gtest/gtest.h>

using namespace distopt;

namespace {

TEST(InputShapeSpec, ParsesNameAndDims) {
  ONNXImportOptions options;
  std::string error;
  ASSERT_TRUE(parseInputShapeSpec("input_ids:2x1024", options, error)) << error;
  ASSERT_EQ(options.inputShapes.count("input_ids"), 1u);
  EXPECT_EQ(options.inputShapes["input_ids"],
            (llvm::SmallVector<int64_t>{2, 1024}));
}

TEST(InputShapeSpec, NameMayContainColons) {
  ONNXImportOptions options;
  std::string error;
  ASSERT_TRUE(parseInputShapeSpec("x:0:8", options, error)) << error;
  EXPECT_EQ(options.inputShapes["x:0"], (llvm::SmallVector<int64_t>{8}));
}

TEST(InputShapeSpec, RejectsMalformedSpecs) {
  for (const char *spec :
       {"x", ":2x3", "x:", "x:2x", "x:2xa", "x:0", "x:-1", "x:2xx3"}) {
    ONNXImportOptions options;
    std::string error;
    EXPECT_FALSE(parseInputShapeSpec(spec, options, error)) << spec;
    EXPECT_FALSE(error.empty()) << spec;
    EXPECT_TRUE(options.inputShapes.empty()) << spec;
  }
}

TEST(InputShapeSpec, RejectsDuplicates) {
  ONNXImportOptions options;
  std::string error;
  ASSERT_TRUE(parseInputShapeSpec("x:2", options, error));
  EXPECT_FALSE(parseInputShapeSpec("x:3", options, error));
  EXPECT_NE(error.find("twice"), std::string::npos) << error;
}

TEST(InputDimSpec, ParsesOneOrAList) {
  ONNXImportOptions options;
  std::string error;
  ASSERT_TRUE(parseInputDimSpec("batch=2", options, error)) << error;
  ASSERT_TRUE(parseInputDimSpec("sequence=128,past=7", options, error))
      << error;
  EXPECT_EQ(options.inputDims.size(), 3u);
  EXPECT_EQ(options.inputDims["batch"], 2);
  EXPECT_EQ(options.inputDims["sequence"], 128);
  EXPECT_EQ(options.inputDims["past"], 7);
}

TEST(InputDimSpec, RejectsMalformedSpecs) {
  for (const char *spec : {"batch", "=2", "batch=", "batch=0", "batch=-2",
                           "batch=2.5", "batch=two", "batch=2,", "a=1,,b=2"}) {
    ONNXImportOptions options;
    std::string error;
    EXPECT_FALSE(parseInputDimSpec(spec, options, error)) << spec;
    EXPECT_FALSE(error.empty()) << spec;
  }
  ONNXImportOptions options;
  std::string error;
  EXPECT_FALSE(parseInputDimSpec("batch=0x10", options, error));
  EXPECT_EQ(error, "the value '0x10' of 'batch' is not a positive integer");
}

TEST(InputDimSpec, RejectsDuplicates) {
  ONNXImportOptions options;
  std::string error;
  ASSERT_TRUE(parseInputDimSpec("seq=2", options, error));
  EXPECT_FALSE(parseInputDimSpec("seq=2", options, error));
  EXPECT_EQ(error, "dimension 'seq' is given twice");
  EXPECT_FALSE(parseInputDimSpec("a=1,a=3", options, error));
}

TEST(LooksLikeONNX, UsesExtensionThenBytes) {
  EXPECT_TRUE(looksLikeONNX("m.onnx", "module {}"));
  EXPECT_FALSE(looksLikeONNX("m.mlir", "\x08\x08"));
  EXPECT_TRUE(looksLikeONNX("-", llvm::StringRef("\x08\x08\x12", 3)));
  EXPECT_FALSE(looksLikeONNX("-", "module {}"));
  EXPECT_FALSE(looksLikeONNX("-", "// comment\nfunc.func"));
  EXPECT_FALSE(looksLikeONNX("-", ""));
}

TEST(ExternalLocation, RefusesEscapes) {
  EXPECT_EQ(import::checkExternalLocation("model.weights"), "");
  EXPECT_EQ(import::checkExternalLocation("sub/model.weights"), "");
  EXPECT_NE(import::checkExternalLocation("../x.weights"), "");
  EXPECT_NE(import::checkExternalLocation("a/../../x"), "");
  EXPECT_NE(import::checkExternalLocation("/etc/passwd"), "");
  EXPECT_NE(import::checkExternalLocation(""), "");
}

} // namespace
