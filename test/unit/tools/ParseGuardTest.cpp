//===- ParseGuardTest.cpp - MLIR parser vs forward references ---*- C++ -*-===//
//
// Part of DistOpt. The tools' guard against MLIR 22's parser freeing a value
// that an earlier use refers to (tools/Init/ParseGuard.h): which
// text it sends to a child process, and what the child's parse decides.
//
//===----------------------------------------------------------------------===//
#include "tools/Init/ParseGuard.h"

#include "dist/InitAll.h"

#include "mlir/IR/DialectRegistry.h"

#include <gtest/gtest.h>

using namespace distopt;

namespace {

/// Two stages: the first uses %a before the second's block header names
/// it; the second then fails to parse (a block defined twice). dist-fuzz
/// found this: the parse corrupts the heap in the process that runs it.
constexpr const char *kForwardThenError = R"(
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = dist.stage 0 on #dist.mesh<shape = [1], devices = [0]> (%x) : (tensor<4xf32>) -> tensor<4xf32> {
    dist.yield %a : tensor<4xf32>
  }
  %1 = dist.stage 1 on #dist.mesh<shape = [1], devices = [1]> (%0) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    dist.yield %a : tensor<4xf32>
  ^bb0(%b: tensor<4xf32>):
  }
  return %1 : tensor<4xf32>
}
)";

/// A use at the top level resolved by an op result inside an emit.kernel
/// (isolated from above), whose second block's header does not parse.
/// dist-fuzz found this too: no block argument is named twice.
constexpr const char *kResultThenError = R"(
%m = graph.unary neg %n : (tensor<4xf32>) -> tensor<4xf32>
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = emit.kernel loop(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %n = graph.unary neg %a : (tensor<4xf32>) -> tensor<4xf32>
  ^bb1(%b tensor<4xf32>):
    emit.yield %n : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}
)";

/// The same names, each block argument defined before its uses.
constexpr const char *kStages = R"(
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = dist.stage 0 on #dist.mesh<shape = [1], devices = [0]> (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    dist.yield %a : tensor<4xf32>
  }
  %1 = dist.stage 1 on #dist.mesh<shape = [1], devices = [1]> (%0) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    dist.yield %a : tensor<4xf32>
  }
  return %1 : tensor<4xf32>
}
)";

mlir::DialectRegistry registry() {
  mlir::DialectRegistry r;
  registerAllDialects(r);
  return r;
}

TEST(ParseGuard, FindsBlockHeaders) {
  EXPECT_TRUE(hasBlockHeader(kForwardThenError));
  EXPECT_TRUE(hasBlockHeader(kResultThenError));
  // Every header is enough (the check is a superset); the child's parse
  // tells the good text from the bad.
  EXPECT_TRUE(hasBlockHeader(kStages));
  EXPECT_TRUE(hasBlockHeader("%f = x\n^bb1:\n  return"));
  // Headers only in comments and strings are not.
  EXPECT_FALSE(hasBlockHeader("// ^bb0(%a: i32):\n\"^bb0(%a: i32):\""));
  EXPECT_FALSE(hasBlockHeader("func.func @f(%x: i32) {\n  return %x : i32\n}"));
  // Any block name counts: a name the parser takes for a header and then
  // fails on (the fuzzer's third form, regress/mlir/caret-name.mlir), and
  // a branch's reference (conservative: text with branches has headers).
  EXPECT_TRUE(hasBlockHeader("%m = x %n\n^bb0cted-error @+1 {{is}}"));
  EXPECT_TRUE(hasBlockHeader("%a = x\ncf.br ^bb1\n%b = y %a"));
  // A caret alone is no name.
  EXPECT_FALSE(hasBlockHeader("%a = x ^ %b"));
}

TEST(ParseGuard, RefusesWhatFailsToParseInTheChild) {
  mlir::DialectRegistry r = registry();
  EXPECT_TRUE(mlir::failed(checkParseInChild(kForwardThenError, "bad.mlir", r,
                                             /*allowUnregistered=*/false,
                                             /*quiet=*/true)));
  EXPECT_TRUE(mlir::failed(checkParseInChild(kResultThenError, "bad.mlir", r,
                                             /*allowUnregistered=*/false,
                                             /*quiet=*/true)));
  EXPECT_TRUE(mlir::succeeded(checkParseInChild(kStages, "good.mlir", r,
                                                /*allowUnregistered=*/false,
                                                /*quiet=*/true)));
  // Unregistered ops parse in the child only where the tool allows them.
  const char *unregistered = "\"x.z\"() ({\n  %a = \"x.y\"() : () -> i32\n"
                             "}) : () -> ()\n"
                             "\"x.z\"() ({\n^bb0(%a: i32):\n}) : () -> ()";
  EXPECT_TRUE(mlir::failed(checkParseInChild(unregistered, "u.mlir", r,
                                             /*allowUnregistered=*/false,
                                             /*quiet=*/true)));
  EXPECT_TRUE(mlir::succeeded(checkParseInChild(unregistered, "u.mlir", r,
                                                /*allowUnregistered=*/true,
                                                /*quiet=*/true)));
}

} // namespace
