//===- DiagnosticsTest.cpp - Messages that name the ONNX node ---*- C++ -*-===//

#include "dist/Diagnostics.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"

#include "gtest/gtest.h"

using namespace mlir;

namespace {

Location nodeLoc(MLIRContext &ctx, StringRef node) {
  return NameLoc::get(StringAttr::get(&ctx, node),
                      FileLineColLoc::get(&ctx, "model.onnx", 0, 0));
}

TEST(Diagnostics, NameTheNodeNotLineZero) {
  MLIRContext ctx;
  Location loc = nodeLoc(ctx, "/model/decoder/Tile");
  EXPECT_TRUE(distopt::isNodeLocation(loc));
  EXPECT_EQ(distopt::describeLocation(loc),
            "model.onnx: node '/model/decoder/Tile'");
  // A real line is kept: the location is in a text file, not a node.
  Location text = FileLineColLoc::get(&ctx, "m.mlir", 3, 5);
  EXPECT_FALSE(distopt::isNodeLocation(text));
  EXPECT_EQ(distopt::describeLocation(text), "m.mlir:3:5");
}

TEST(Diagnostics, GradientOpsNameTheirForwardNode) {
  MLIRContext ctx;
  Location grad =
      distopt::gradientLocation(nodeLoc(ctx, "/model/decoder/Tile"));
  EXPECT_TRUE(distopt::isGradientLocation(grad));
  // Marking twice keeps one mark.
  EXPECT_EQ(distopt::gradientLocation(grad), grad);
  EXPECT_EQ(distopt::describeLocation(grad),
            "model.onnx: node '/model/decoder/Tile' (in its gradient, built "
            "by dist-autodiff)");
  Diagnostic diag(grad, DiagnosticSeverity::Error);
  diag << "no lowering";
  std::string text;
  llvm::raw_string_ostream os(text);
  distopt::printDiagnostic(diag, os);
  EXPECT_EQ(text, "model.onnx: node '/model/decoder/Tile' (in its gradient, "
                  "built by dist-autodiff): error: no lowering\n");
}

TEST(Diagnostics, WrittenScheduleOpsSayWhereInTheSchedule) {
  MLIRContext ctx;
  // The function's location is the model file at line 0 (the importer's).
  Location fn = FileLineColLoc::get(&ctx, "gpt2.onnx", 0, 0);
  Location loc = distopt::scheduleLocation(
      fn, "schedule of @train_step, list 1, action 7 'OPT'");
  EXPECT_EQ(distopt::scheduleDescription(loc),
            "schedule of @train_step, list 1, action 7 'OPT'");
  EXPECT_TRUE(distopt::isNodeLocation(loc));
  EXPECT_EQ(distopt::describeLocation(loc),
            "gpt2.onnx: schedule of @train_step, list 1, action 7 'OPT'");
  // Neither a node nor a gradient location is a schedule location.
  EXPECT_TRUE(distopt::scheduleDescription(nodeLoc(ctx, "n")).empty());
  EXPECT_TRUE(distopt::scheduleDescription(
                  distopt::gradientLocation(nodeLoc(ctx, "n")))
                  .empty());
}

} // namespace
