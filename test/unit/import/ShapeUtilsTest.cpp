//===- ShapeUtilsTest.cpp - Shape rules of the graph dialect ----*- C++ -*-===//
//
// Part of DistOpt.
//
//===----------------------------------------------------------------------===//
#include "dialects/Graph/GraphShapeUtils.h"

#include "mlir/IR/BuiltinTypes.h"

#include <gtest/gtest.h>

using namespace distopt::graph;
using llvm::SmallVector;
constexpr int64_t kDyn = mlir::ShapedType::kDynamic;

namespace {

TEST(Broadcast, NumpyRules) {
  EXPECT_EQ(*broadcastShapes({2, 1, 4}, {3, 1}),
            (SmallVector<int64_t>{2, 3, 4}));
  EXPECT_EQ(*broadcastShapes({}, {5}), (SmallVector<int64_t>{5}));
  EXPECT_EQ(*broadcastShapes({kDyn, 4}, {3, 4}), (SmallVector<int64_t>{3, 4}));
  EXPECT_FALSE(broadcastShapes({2, 3}, {4}));
}

TEST(Matmul, ShapesAndErrors) {
  std::string error;
  EXPECT_EQ(*inferMatmulShape({2, 8, 64}, {64, 16}, false, false, error),
            (SmallVector<int64_t>{2, 8, 16}));
  EXPECT_EQ(*inferMatmulShape({64}, {64, 16}, false, false, error),
            (SmallVector<int64_t>{16}));
  EXPECT_EQ(*inferMatmulShape({8, 64}, {64}, false, false, error),
            (SmallVector<int64_t>{8}));
  EXPECT_EQ(*inferMatmulShape({64, 8}, {16, 64}, true, true, error),
            (SmallVector<int64_t>{8, 16}));
  EXPECT_FALSE(inferMatmulShape({8, 3}, {4, 2}, false, false, error));
  EXPECT_NE(error.find("contraction"), std::string::npos);
  EXPECT_FALSE(inferMatmulShape({2, 8, 3}, {5, 3, 2}, false, false, error));
  EXPECT_NE(error.find("batch"), std::string::npos);
}

TEST(Window, OutputSizes) {
  EXPECT_EQ(windowOutputSize(224, 7, 2, 3, 3, 1, false), 112);
  EXPECT_EQ(windowOutputSize(112, 3, 2, 1, 1, 1, false), 56);
  EXPECT_EQ(windowOutputSize(5, 2, 2, 0, 0, 1, false), 2);
  EXPECT_EQ(windowOutputSize(5, 2, 2, 0, 0, 1, true), 3);
  EXPECT_EQ(windowOutputSize(kDyn, 3, 1, 1, 1, 1, false), kDyn);
}

TEST(Axis, Normalization) {
  EXPECT_EQ(*normalizeAxis(-1, 3), 2);
  EXPECT_EQ(*normalizeAxis(0, 3), 0);
  EXPECT_FALSE(normalizeAxis(3, 3));
  EXPECT_FALSE(normalizeAxis(-4, 3));
  EXPECT_EQ(shapeToString({2, kDyn, 768}), "2x?x768");
  EXPECT_EQ(shapeToString({}), "scalar");
}

} // namespace
