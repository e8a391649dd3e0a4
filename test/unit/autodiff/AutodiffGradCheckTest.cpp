//===- AutodiffGradCheckTest.cpp - Backward IR vs finite differences ------===//
//
// Part of DistOpt. Runs --dist-autodiff (plain SGD, lr = 1, so every new
// weight is `w - dL/dw`) on small graphs, evaluates @train_step with the
// reference interpreter, and compares each weight gradient with central
// finite differences of the loss the same function computes.
//
//===----------------------------------------------------------------------===//
#include "Interpreter.h"

#include "dialects/Graph/GraphOps.h"
#include "dist/InitAll.h"
#include "passes/Passes.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <random>

using namespace mlir;
using namespace distopt;
using namespace distopt::testing;
namespace graph = distopt::graph;

namespace {

Tensor random(RankedTensorType type, std::mt19937 &rng, double scale = 1.0) {
  std::uniform_real_distribution<double> dist(-scale, scale);
  Tensor t;
  {
    auto s_ = type.getShape();
    t.shape.assign(s_.begin(), s_.end());
  }
  t.data.resize(t.size());
  for (double &v : t.data)
    v = dist(rng);
  return t;
}

/// Checks every weight gradient of `source`'s training step, with `labels`
/// as the class labels of the added softmax cross-entropy loss.
void gradCheck(llvm::StringRef source, std::vector<double> labels,
               llvm::StringRef mixedPrecision = "none", double lossScale = 0) {
  DialectRegistry registry;
  registerAllDialects(registry);
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(source, &ctx);
  ASSERT_TRUE(module);
  PassManager pm(&ctx);
  AutodiffPassOptions opts;
  opts.loss = "softmax-cross-entropy:labels";
  opts.lr = 1.0;
  opts.mixedPrecision = mixedPrecision.str();
  opts.lossScale = lossScale;
  opts.dynamicLossScale = false;
  pm.addPass(createAutodiffPass(opts));
  ASSERT_TRUE(succeeded(pm.run(*module)));
  auto train = module->lookupSymbol<func::FuncOp>("train_step");
  ASSERT_TRUE(train);

  std::mt19937 rng(42);
  std::vector<Tensor> args;
  for (BlockArgument a : train.getArguments()) {
    auto t = cast<RankedTensorType>(a.getType());
    auto name =
        train.getArgAttrOfType<StringAttr>(a.getArgNumber(), "graph.name");
    if (t.getElementType().isInteger(64) && name && name.getValue() == "ids") {
      Tensor ids;
      auto s = t.getShape();
      ids.shape.assign(s.begin(), s.end());
      for (int64_t i = 0; i < ids.size(); ++i)
        ids.data.push_back((i * 3) % 5); // repeated ids: gradients add up
      args.push_back(ids);
    } else if (t.getElementType().isInteger(64)) {
      Tensor l;
      {
        auto s_ = t.getShape();
        l.shape.assign(s_.begin(), s_.end());
      }
      l.data = labels;
      ASSERT_EQ(l.size(), (int64_t)labels.size());
      args.push_back(l);
    } else {
      args.push_back(random(t, rng));
    }
  }
  // Every buffer gets a random value; the ones an SGD update writes are
  // the weights whose gradients are checked (not, e.g., running stats).
  llvm::StringMap<Tensor> weights;
  std::vector<std::pair<std::string, unsigned>> checkedWeights;
  Operation *ret = train.getBody().front().getTerminator();
  for (unsigned i = 0; i < train.getNumResults(); ++i)
    if (auto u = train.getResultAttrOfType<StringAttr>(i, "graph.update"))
      if (u.getValue() != "step") {
        weights[u.getValue()] =
            random(cast<RankedTensorType>(train.getResultTypes()[i]), rng, 0.5);
        if (ret->getOperand(i).getDefiningOp<graph::SgdUpdateOp>())
          checkedWeights.push_back({u.getValue().str(), i});
      }
  // Variances must be positive.
  for (auto &entry : weights)
    if (entry.getKey().ends_with("var"))
      for (double &v : entry.getValue().data)
        v = std::fabs(v) + 0.5;

  std::vector<Tensor> out;
  std::string error;
  ASSERT_TRUE(interpret(train, args, weights, out, error)) << error;
  auto lossAt = [&](const llvm::StringMap<Tensor> &w) {
    std::vector<Tensor> r;
    std::string e;
    EXPECT_TRUE(interpret(train, args, w, r, e)) << e;
    return r.empty() ? NAN : r[0].data[0];
  };
  const double eps = 1e-6;
  unsigned checked = 0;
  for (auto &[name, index] : checkedWeights) {
    const Tensor &w = weights[name], &updated = out[index];
    for (int64_t i = 0; i < w.size(); ++i) {
      double analytic = w.data[i] - updated.data[i]; // lr = 1
      llvm::StringMap<Tensor> plus = weights, minus = weights;
      plus[name].data[i] += eps;
      minus[name].data[i] -= eps;
      double numeric = (lossAt(plus) - lossAt(minus)) / (2 * eps);
      EXPECT_NEAR(analytic, numeric, 1e-6 + 1e-4 * std::fabs(numeric))
          << name << "[" << i << "]";
      ++checked;
    }
  }
  EXPECT_GT(checked, 0u);
}

TEST(AutodiffGradCheck, MlpWithGeluLayerNormAndBroadcast) {
  gradCheck(R"mlir(
func.func @main(%x: tensor<3x4xf32>) -> tensor<3x5xf32> {
  %w1 = graph.weight "w1" : tensor<6x4xf32>
  %b1 = graph.weight "b1" : tensor<6xf32>
  %g = graph.weight "ln.g" : tensor<6xf32>
  %b = graph.weight "ln.b" : tensor<6xf32>
  %s = graph.weight "scale" : tensor<6xf32>
  %w2 = graph.weight "w2" : tensor<6x5xf32>
  %h = graph.matmul %x, %w1, %b1 {transpose_rhs = true} : (tensor<3x4xf32>, tensor<6x4xf32>, tensor<6xf32>) -> tensor<3x6xf32>
  %a = graph.unary gelu_tanh %h : (tensor<3x6xf32>) -> tensor<3x6xf32>
  %n = graph.layer_norm %a, %g, %b {axis = -1 : i64, epsilon = 1.0e-05 : f64} : (tensor<3x6xf32>, tensor<6xf32>, tensor<6xf32>) -> tensor<3x6xf32>
  %m = graph.binary mul %n, %s : (tensor<3x6xf32>, tensor<6xf32>) -> tensor<3x6xf32>
  %d = graph.binary div %m, %s : (tensor<3x6xf32>, tensor<6xf32>) -> tensor<3x6xf32>
  %t = graph.unary tanh %d : (tensor<3x6xf32>) -> tensor<3x6xf32>
  %r = graph.binary sub %t, %a : (tensor<3x6xf32>, tensor<3x6xf32>) -> tensor<3x6xf32>
  %y = graph.matmul %r, %w2 : (tensor<3x6xf32>, tensor<6x5xf32>) -> tensor<3x5xf32>
  return %y : tensor<3x5xf32>
}
)mlir",
            {0, 3, 4});
}

// The interpreter computes casts exactly, so a mixed-precision program must
// give the f32 gradients: this checks the casts and the loss scaling
// (seed times the scale, graph.unscale before the update) are consistent.
TEST(AutodiffGradCheck, MixedPrecisionWithLossScale) {
  gradCheck(R"mlir(
func.func @main(%x: tensor<3x4xf32>) -> tensor<3x5xf32> {
  %w1 = graph.weight "w1" : tensor<4x6xf32>
  %g = graph.weight "ln.g" : tensor<6xf32>
  %w2 = graph.weight "w2" : tensor<5x6xf32>
  %c = graph.constant dense<2.0> : tensor<f32>
  %h = graph.matmul %x, %w1 : (tensor<3x4xf32>, tensor<4x6xf32>) -> tensor<3x6xf32>
  %s = graph.binary mul %h, %c : (tensor<3x6xf32>, tensor<f32>) -> tensor<3x6xf32>
  %a = graph.unary silu %s : (tensor<3x6xf32>) -> tensor<3x6xf32>
  %n = graph.rms_norm %a, %g {axis = -1 : i64} : (tensor<3x6xf32>, tensor<6xf32>) -> tensor<3x6xf32>
  %y = graph.matmul %n, %w2 {transpose_rhs = true} : (tensor<3x6xf32>, tensor<5x6xf32>) -> tensor<3x5xf32>
  return %y : tensor<3x5xf32>
}
)mlir",
            {4, 1, 0}, "fp16", 1024.0);
}

// Token embedding with repeated ids (scatter_add must add), a learned
// position table, and an output projection tied to the token table by name
// (a second graph.weight "wte"): the two gradients of one weight add up.
TEST(AutodiffGradCheck, TiedEmbeddings) {
  gradCheck(R"mlir(
func.func @main(%ids: tensor<2x3xi64> {graph.name = "ids"}) -> tensor<2x3x5xf32> {
  %wte = graph.weight "wte" : tensor<5x4xf32>
  %wpe = graph.weight "wpe" : tensor<3x4xf32>
  %g = graph.weight "ln.g" : tensor<4xf32>
  %e = graph.embedding %wte, %ids : (tensor<5x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
  %h = graph.binary add %e, %wpe : (tensor<2x3x4xf32>, tensor<3x4xf32>) -> tensor<2x3x4xf32>
  %n = graph.layer_norm %h, %g {axis = -1 : i64} : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
  %head = graph.weight "wte" : tensor<5x4xf32>
  %y = graph.matmul %n, %head {transpose_rhs = true} : (tensor<2x3x4xf32>, tensor<5x4xf32>) -> tensor<2x3x5xf32>
  return %y : tensor<2x3x5xf32>
}
)mlir",
            {1, 4, 0, 2, 2, 3});
}

TEST(AutodiffGradCheck, CausalAttentionBlock) {
  gradCheck(R"mlir(
func.func @main(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %wq = graph.weight "wq" : tensor<4x4xf32>
  %wk = graph.weight "wk" : tensor<4x4xf32>
  %wv = graph.weight "wv" : tensor<4x4xf32>
  %g = graph.weight "rms.g" : tensor<4xf32>
  %mask = graph.constant dense<true> : tensor<3x3xi1>
  %ninf = graph.constant dense<-1.0e+09> : tensor<f32>
  %c = graph.constant dense<5.000000e-01> : tensor<f32>
  %q = graph.matmul %x, %wq : (tensor<2x3x4xf32>, tensor<4x4xf32>) -> tensor<2x3x4xf32>
  %k = graph.matmul %x, %wk : (tensor<2x3x4xf32>, tensor<4x4xf32>) -> tensor<2x3x4xf32>
  %v = graph.matmul %x, %wv : (tensor<2x3x4xf32>, tensor<4x4xf32>) -> tensor<2x3x4xf32>
  %kt = graph.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  %s = graph.matmul %q, %kt : (tensor<2x3x4xf32>, tensor<2x4x3xf32>) -> tensor<2x3x3xf32>
  %ss = graph.binary mul %s, %c : (tensor<2x3x3xf32>, tensor<f32>) -> tensor<2x3x3xf32>
  %tri = graph.trilu %mask {upper = false} : (tensor<3x3xi1>) -> tensor<3x3xi1>
  %sm = graph.where %tri, %ss, %ninf : (tensor<3x3xi1>, tensor<2x3x3xf32>, tensor<f32>) -> tensor<2x3x3xf32>
  %p = graph.softmax %sm {axis = -1 : i64} : (tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
  %o = graph.matmul %p, %v : (tensor<2x3x3xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %r = graph.binary add %o, %q : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %n = graph.rms_norm %r, %g {axis = -1 : i64, epsilon = 1.0e-06 : f64} : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
  %m = graph.reduce mean %n {axes = array<i64: 1>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
  %y = graph.binary sub %n, %m : (tensor<2x3x4xf32>, tensor<2x1x4xf32>) -> tensor<2x3x4xf32>
  return %y : tensor<2x3x4xf32>
}
)mlir",
            {1, 0, 2, 3, 3, 1});
}

TEST(AutodiffGradCheck, ConvNet) {
  gradCheck(R"mlir(
func.func @main(%img: tensor<2x2x5x5xf32>) -> tensor<2x3xf32> {
  %w = graph.weight "conv.w" : tensor<4x2x3x3xf32>
  %b = graph.weight "conv.b" : tensor<4xf32>
  %s = graph.weight "bn.scale" : tensor<4xf32>
  %t = graph.weight "bn.bias" : tensor<4xf32>
  %m = graph.weight "bn.mean" : tensor<4xf32>
  %v = graph.weight "bn.var" : tensor<4xf32>
  %w2 = graph.weight "conv2.w" : tensor<4x2x2x2xf32>
  %fc = graph.weight "fc.w" : tensor<3x4xf32>
  %c = graph.conv %img, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<2x2x5x5xf32>, tensor<4x2x3x3xf32>, tensor<4xf32>) -> tensor<2x4x5x5xf32>
  %n = graph.batch_norm %c, %s, %t, %m, %v : (tensor<2x4x5x5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x5x5xf32>
  %r = graph.unary tanh %n : (tensor<2x4x5x5xf32>) -> tensor<2x4x5x5xf32>
  %p = graph.pool max %r {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<2x4x5x5xf32>) -> tensor<2x4x3x3xf32>
  %c2 = graph.conv %p, %w2 {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 0, 0>, dilations = array<i64: 1, 1>, group = 2 : i64} : (tensor<2x4x3x3xf32>, tensor<4x2x2x2xf32>) -> tensor<2x4x2x2xf32>
  %g = graph.pool avg %c2 {global} : (tensor<2x4x2x2xf32>) -> tensor<2x4x1x1xf32>
  %f = graph.flatten %g {axis = 1 : i64} : (tensor<2x4x1x1xf32>) -> tensor<2x4xf32>
  %y = graph.matmul %f, %fc {transpose_rhs = true} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}
)mlir",
            {2, 0});
}

} // namespace

// Every reduction kind with a gradient rule: max/min (ties share the
// gradient: "tied" reduces a weight broadcast along the reduced axis),
// l1, l2, log_sum, log_sum_exp.
TEST(AutodiffGradCheck, Reductions) {
  gradCheck(R"mlir(
func.func @main(%x: tensor<3x4xf32>) -> tensor<3x5xf32> {
  %w1 = graph.weight "w1" : tensor<4x6xf32>
  %w2 = graph.weight "w2" : tensor<14x5xf32>
  %t = graph.weight "tied" : tensor<3x1xf32>
  %h = graph.matmul %x, %w1 : (tensor<3x4xf32>, tensor<4x6xf32>) -> tensor<3x6xf32>
  %r = graph.reshape %h : (tensor<3x6xf32>) -> tensor<3x2x3xf32>
  %mx = graph.reduce max %r {axes = array<i64: 2>, keepdims = false} : (tensor<3x2x3xf32>) -> tensor<3x2xf32>
  %mn = graph.reduce min %r {axes = array<i64: -1>, keepdims = false} : (tensor<3x2x3xf32>) -> tensor<3x2xf32>
  %l1 = graph.reduce l1 %r {axes = array<i64: 2>, keepdims = false} : (tensor<3x2x3xf32>) -> tensor<3x2xf32>
  %l2 = graph.reduce l2 %r {axes = array<i64: 2>, keepdims = false} : (tensor<3x2x3xf32>) -> tensor<3x2xf32>
  %e = graph.unary exp %r : (tensor<3x2x3xf32>) -> tensor<3x2x3xf32>
  %ls = graph.reduce log_sum %e {axes = array<i64: 2>, keepdims = false} : (tensor<3x2x3xf32>) -> tensor<3x2xf32>
  %lse = graph.reduce log_sum_exp %r {axes = array<i64: 1, 2>} : (tensor<3x2x3xf32>) -> tensor<3x1x1xf32>
  %lse2 = graph.reshape %lse : (tensor<3x1x1xf32>) -> tensor<3x1xf32>
  %te = graph.expand %t : (tensor<3x1xf32>) -> tensor<3x4xf32>
  %tm = graph.reduce max %te {axes = array<i64: 1>} : (tensor<3x4xf32>) -> tensor<3x1xf32>
  %c = graph.concat %mx, %mn, %l1, %l2, %ls, %lse2, %tm {axis = 1 : i64} : (tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x1xf32>, tensor<3x1xf32>) -> tensor<3x12xf32>
  %c2 = graph.concat %c, %lse2, %tm {axis = 1 : i64} : (tensor<3x12xf32>, tensor<3x1xf32>, tensor<3x1xf32>) -> tensor<3x14xf32>
  %y = graph.matmul %c2, %w2 : (tensor<3x14xf32>, tensor<14x5xf32>) -> tensor<3x5xf32>
  return %y : tensor<3x5xf32>
}
)mlir",
            {0, 3, 4});
}

// prod with no zero, one zero and two zeros per group (a constant mask
// zeroes some inputs); the product is a polynomial, so finite differences
// are exact at zeros too.
TEST(AutodiffGradCheck, ProdWithZeros) {
  gradCheck(R"mlir(
func.func @main(%x: tensor<3x4xf32>) -> tensor<3x5xf32> {
  %w1 = graph.weight "w1" : tensor<4x6xf32>
  %w2 = graph.weight "w2" : tensor<2x5xf32>
  %z = graph.constant dense<[[[1.0, 1.0, 1.0], [1.0, 0.0, 1.0]], [[0.0, 0.0, 1.0], [1.0, 1.0, 1.0]], [[1.0, 1.0, 1.0], [0.0, 1.0, 1.0]]]> : tensor<3x2x3xf32>
  %h = graph.matmul %x, %w1 : (tensor<3x4xf32>, tensor<4x6xf32>) -> tensor<3x6xf32>
  %r = graph.reshape %h : (tensor<3x6xf32>) -> tensor<3x2x3xf32>
  %two = graph.constant dense<2.0> : tensor<f32>
  %s = graph.binary mul %r, %two : (tensor<3x2x3xf32>, tensor<f32>) -> tensor<3x2x3xf32>
  %m = graph.binary mul %s, %z : (tensor<3x2x3xf32>, tensor<3x2x3xf32>) -> tensor<3x2x3xf32>
  %p = graph.reduce prod %m {axes = array<i64: 2>} : (tensor<3x2x3xf32>) -> tensor<3x2x1xf32>
  %p2 = graph.reshape %p : (tensor<3x2x1xf32>) -> tensor<3x2xf32>
  %y = graph.matmul %p2, %w2 : (tensor<3x2xf32>, tensor<2x5xf32>) -> tensor<3x5xf32>
  return %y : tensor<3x5xf32>
}
)mlir",
            {1, 2, 4});
}

// pow with respect to both operands (a positive base from exp, a weight
// exponent broadcast over rows), prelu with a learned slope, and Python
// and C remainders with respect to both operands.
TEST(AutodiffGradCheck, PowPreluMod) {
  gradCheck(R"mlir(
func.func @main(%x: tensor<3x4xf32>) -> tensor<3x5xf32> {
  %w1 = graph.weight "w1" : tensor<4x6xf32>
  %e = graph.weight "exponent" : tensor<6xf32>
  %a = graph.weight "slope" : tensor<6xf32>
  %d = graph.weight "divisor" : tensor<6xf32>
  %w2 = graph.weight "w2" : tensor<6x5xf32>
  %two = graph.constant dense<2.0> : tensor<f32>
  %h = graph.matmul %x, %w1 : (tensor<3x4xf32>, tensor<4x6xf32>) -> tensor<3x6xf32>
  %b = graph.unary exp %h : (tensor<3x6xf32>) -> tensor<3x6xf32>
  %p = graph.binary pow %b, %e : (tensor<3x6xf32>, tensor<6xf32>) -> tensor<3x6xf32>
  %q = graph.binary prelu %h, %a : (tensor<3x6xf32>, tensor<6xf32>) -> tensor<3x6xf32>
  %dd = graph.binary add %d, %two : (tensor<6xf32>, tensor<f32>) -> tensor<6xf32>
  %h3 = graph.binary mul %h, %two : (tensor<3x6xf32>, tensor<f32>) -> tensor<3x6xf32>
  %m = graph.binary mod %h3, %dd : (tensor<3x6xf32>, tensor<6xf32>) -> tensor<3x6xf32>
  %f = graph.binary mod %h3, %dd {fmod} : (tensor<3x6xf32>, tensor<6xf32>) -> tensor<3x6xf32>
  %s1 = graph.binary add %p, %q : (tensor<3x6xf32>, tensor<3x6xf32>) -> tensor<3x6xf32>
  %s2 = graph.binary add %m, %f : (tensor<3x6xf32>, tensor<3x6xf32>) -> tensor<3x6xf32>
  %s = graph.binary add %s1, %s2 : (tensor<3x6xf32>, tensor<3x6xf32>) -> tensor<3x6xf32>
  %y = graph.matmul %s, %w2 : (tensor<3x6xf32>, tensor<6x5xf32>) -> tensor<3x5xf32>
  return %y : tensor<3x5xf32>
}
)mlir",
            {2, 0, 1});
}

// Strided slices: step 3 (the interleaved tail is trimmed), step -2
// (reversed), and two axes at once with steps 2 and -3.
TEST(AutodiffGradCheck, StridedSlices) {
  gradCheck(R"mlir(
func.func @main(%x: tensor<4x4xf32>) -> tensor<4x5xf32> {
  %w1 = graph.weight "w1" : tensor<4x8xf32>
  %w2 = graph.weight "w2" : tensor<7x5xf32>
  %h = graph.matmul %x, %w1 : (tensor<4x4xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %s1 = graph.slice %h {axes = array<i64: 1>, starts = array<i64: 1>, ends = array<i64: 8>, steps = array<i64: 3>} : (tensor<4x8xf32>) -> tensor<4x3xf32>
  %s2 = graph.slice %h {axes = array<i64: -1>, starts = array<i64: 6>, ends = array<i64: -10>, steps = array<i64: -2>} : (tensor<4x8xf32>) -> tensor<4x4xf32>
  %s3 = graph.slice %h {axes = array<i64: 0, 1>, starts = array<i64: 0, 7>, ends = array<i64: 4, 0>, steps = array<i64: 2, -3>} : (tensor<4x8xf32>) -> tensor<2x3xf32>
  %c = graph.concat %s1, %s2 {axis = 1 : i64} : (tensor<4x3xf32>, tensor<4x4xf32>) -> tensor<4x7xf32>
  %y0 = graph.matmul %c, %w2 : (tensor<4x7xf32>, tensor<7x5xf32>) -> tensor<4x5xf32>
  %t = graph.reduce sum %s3 {keepdims = false} : (tensor<2x3xf32>) -> tensor<f32>
  %y = graph.binary mul %y0, %t : (tensor<4x5xf32>, tensor<f32>) -> tensor<4x5xf32>
  return %y : tensor<4x5xf32>
}
)mlir",
            {1, 4, 0, 2});
}

// L2 pooling, windowed (asymmetric padding, overlapping windows) and
// global.
TEST(AutodiffGradCheck, L2Pool) {
  gradCheck(R"mlir(
func.func @main(%x: tensor<1x2x4x4xf32>) -> tensor<8x5xf32> {
  %w = graph.weight "w" : tensor<1x2x4x4xf32>
  %w2 = graph.weight "w2" : tensor<4x5xf32>
  %h = graph.binary mul %x, %w : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = graph.pool l2 %h {kernel = array<i64: 2, 2>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %g = graph.pool l2 %h {global} : (tensor<1x2x4x4xf32>) -> tensor<1x2x1x1xf32>
  %s = graph.binary add %p, %g : (tensor<1x2x4x4xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x4x4xf32>
  %r = graph.reshape %s : (tensor<1x2x4x4xf32>) -> tensor<8x4xf32>
  %y = graph.matmul %r, %w2 : (tensor<8x4xf32>, tensor<4x5xf32>) -> tensor<8x5xf32>
  return %y : tensor<8x5xf32>
}
)mlir",
            {0, 1, 2, 3, 4, 0, 1, 2});
}

// Rank-1 matmul operands: vector x matrix, matrix x vector, and
// vector . vector (a scalar), all with weights on both sides.
TEST(AutodiffGradCheck, RankOneMatmul) {
  gradCheck(R"mlir(
func.func @main(%x: tensor<3x4xf32>) -> tensor<3x5xf32> {
  %w1 = graph.weight "w1" : tensor<4x6xf32>
  %v = graph.weight "v" : tensor<6xf32>
  %u = graph.weight "u" : tensor<3xf32>
  %w2 = graph.weight "w2" : tensor<3x5xf32>
  %h = graph.matmul %x, %w1 : (tensor<3x4xf32>, tensor<4x6xf32>) -> tensor<3x6xf32>
  %hv = graph.matmul %h, %v : (tensor<3x6xf32>, tensor<6xf32>) -> tensor<3xf32>
  %uw = graph.matmul %u, %w2 : (tensor<3xf32>, tensor<3x5xf32>) -> tensor<5xf32>
  %d = graph.matmul %hv, %u : (tensor<3xf32>, tensor<3xf32>) -> tensor<f32>
  %o = graph.reshape %hv : (tensor<3xf32>) -> tensor<3x1xf32>
  %y0 = graph.binary mul %o, %uw : (tensor<3x1xf32>, tensor<5xf32>) -> tensor<3x5xf32>
  %y = graph.binary add %y0, %d : (tensor<3x5xf32>, tensor<f32>) -> tensor<3x5xf32>
  return %y : tensor<3x5xf32>
}
)mlir",
            {4, 0, 2});
}

// Constant padding that pads some ends and crops others.
TEST(AutodiffGradCheck, PadAndCrop) {
  gradCheck(R"mlir(
func.func @main(%x: tensor<3x4xf32>) -> tensor<4x5xf32> {
  %w1 = graph.weight "w1" : tensor<4x8xf32>
  %w2 = graph.weight "w2" : tensor<7x5xf32>
  %h = graph.matmul %x, %w1 : (tensor<3x4xf32>, tensor<4x8xf32>) -> tensor<3x8xf32>
  %p = graph.pad constant %h {pads = array<i64: 1, -2, 0, 1>, value = 0.5 : f64} : (tensor<3x8xf32>) -> tensor<4x7xf32>
  %y = graph.matmul %p, %w2 : (tensor<4x7xf32>, tensor<7x5xf32>) -> tensor<4x5xf32>
  return %y : tensor<4x5xf32>
}
)mlir",
            {1, 4, 0, 2});
}

// A triangle whose diagonal is an operand (ONNX Trilu's k known at run
// time): the gradient keeps the same triangle.
TEST(AutodiffGradCheck, TriluWithDiagonalOperand) {
  gradCheck(R"mlir(
func.func @main(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %w1 = graph.weight "w1" : tensor<4x4xf32>
  %w2 = graph.weight "w2" : tensor<4x4xf32>
  %k = graph.constant dense<-1> : tensor<i64>
  %h = graph.matmul %x, %w1 : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
  %t = graph.trilu %h, %k {upper = true, k = 1 : i64} : (tensor<3x4xf32>, tensor<i64>) -> tensor<3x4xf32>
  %y = graph.matmul %t, %w2 : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
  return %y : tensor<3x4xf32>
}
)mlir",
            {1, 3, 0});
}

// Running sums on both axes, one exclusive and reversed: the gradient is
// the running sum of dy the other way.
TEST(AutodiffGradCheck, CumSum) {
  gradCheck(R"mlir(
func.func @main(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %w1 = graph.weight "w1" : tensor<4x4xf32>
  %w2 = graph.weight "w2" : tensor<4x4xf32>
  %h = graph.matmul %x, %w1 : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
  %c = graph.cumsum %h {axis = -1 : i64} : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %r = graph.cumsum %c {axis = 0 : i64, exclusive = true, reverse = true} : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %s = graph.binary add %c, %r : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %y = graph.matmul %s, %w2 : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
  return %y : tensor<3x4xf32>
}
)mlir",
            {1, 3, 0});
}

// GatherND without and with batch_dims, negative and repeated index
// tuples: the gradient scatter-adds dy at the rows they read.
TEST(AutodiffGradCheck, GatherND) {
  gradCheck(R"mlir(
func.func @main(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %w1 = graph.weight "w1" : tensor<4x8xf32>
  %w2 = graph.weight "w2" : tensor<4x4xf32>
  %h = graph.matmul %x, %w1 : (tensor<3x4xf32>, tensor<4x8xf32>) -> tensor<3x8xf32>
  %t = graph.reshape %h : (tensor<3x8xf32>) -> tensor<3x2x4xf32>
  %i = graph.constant dense<[[0, 1], [-1, 0], [0, 1]]> : tensor<3x2xi64>
  %g = graph.gather_nd %t, %i : (tensor<3x2x4xf32>, tensor<3x2xi64>) -> tensor<3x4xf32>
  %j = graph.constant dense<[[[1], [-2]], [[0], [0]], [[2], [3]]]> : tensor<3x2x1xi64>
  %u = graph.gather_nd %h, %j {batch_dims = 1 : i64} : (tensor<3x8xf32>, tensor<3x2x1xi64>) -> tensor<3x2xf32>
  %w3 = graph.weight "w3" : tensor<2x4xf32>
  %v = graph.matmul %u, %w3 : (tensor<3x2xf32>, tensor<2x4xf32>) -> tensor<3x4xf32>
  %y = graph.matmul %g, %w2 : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
  %s = graph.binary add %y, %v : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  return %s : tensor<3x4xf32>
}
)mlir",
            {1, 3, 0});
}

// TopK, largest along the last axis and smallest along the first: the
// selected values' gradients go back to where they were read, the others
// get none (fails when the scatter misses the axis or the indices).
TEST(AutodiffGradCheck, TopK) {
  gradCheck(R"mlir(
func.func @main(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %w1 = graph.weight "w1" : tensor<4x6xf32>
  %w2 = graph.weight "w2" : tensor<2x6xf32>
  %w3 = graph.weight "w3" : tensor<3x2xf32>
  %w4 = graph.weight "w4" : tensor<6x4xf32>
  %h = graph.matmul %x, %w1 : (tensor<3x4xf32>, tensor<4x6xf32>) -> tensor<3x6xf32>
  %v, %i = graph.top_k %h {k = 2 : i64} : (tensor<3x6xf32>) -> (tensor<3x2xf32>, tensor<3x2xi64>)
  %m, %j = graph.top_k %h {axis = 0 : i64, k = 2 : i64, largest = false} : (tensor<3x6xf32>) -> (tensor<2x6xf32>, tensor<2x6xi64>)
  %a = graph.matmul %v, %w2 : (tensor<3x2xf32>, tensor<2x6xf32>) -> tensor<3x6xf32>
  %b = graph.matmul %w3, %m : (tensor<3x2xf32>, tensor<2x6xf32>) -> tensor<3x6xf32>
  %s = graph.binary add %a, %b : (tensor<3x6xf32>, tensor<3x6xf32>) -> tensor<3x6xf32>
  %y = graph.matmul %s, %w4 : (tensor<3x6xf32>, tensor<6x4xf32>) -> tensor<3x4xf32>
  return %y : tensor<3x4xf32>
}
)mlir",
            {1, 3, 0});
}

// ScatterElements with none (the overwritten data gets no gradient, each
// update its position's) and add (data and updates both pass dy), with a
// negative index.
TEST(AutodiffGradCheck, ScatterElements) {
  gradCheck(R"mlir(
func.func @main(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %w1 = graph.weight "w1" : tensor<4x4xf32>
  %w2 = graph.weight "w2" : tensor<4x2xf32>
  %w3 = graph.weight "w3" : tensor<4x4xf32>
  %h = graph.matmul %x, %w1 : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
  %u = graph.matmul %x, %w2 : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  %i = graph.constant dense<[[1, -1], [0, 2], [3, 1]]> : tensor<3x2xi64>
  %s = graph.scatter_elements none %h, %i, %u {axis = 1 : i64} : (tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf32>) -> tensor<3x4xf32>
  %j = graph.constant dense<[[0, 2], [0, 0]]> : tensor<2x2xi64>
  %v = graph.slice %u {axes = array<i64: 0>, starts = array<i64: 0>, ends = array<i64: 2>, steps = array<i64: 1>} : (tensor<3x2xf32>) -> tensor<2x2xf32>
  %a = graph.scatter_elements add %s, %j, %v : (tensor<3x4xf32>, tensor<2x2xi64>, tensor<2x2xf32>) -> tensor<3x4xf32>
  %y = graph.matmul %a, %w3 : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
  return %y : tensor<3x4xf32>
}
)mlir",
            {1, 3, 0});
}

// ScatterND with none (a row of the data overwritten by an update slice,
// a negative index) and add (single elements, a repeated tuple).
TEST(AutodiffGradCheck, ScatterND) {
  gradCheck(R"mlir(
func.func @main(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %w1 = graph.weight "w1" : tensor<4x4xf32>
  %w2 = graph.weight "w2" : tensor<4x4xf32>
  %w3 = graph.weight "w3" : tensor<4x4xf32>
  %h = graph.matmul %x, %w1 : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
  %u = graph.matmul %x, %w2 : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
  %r = graph.slice %u {axes = array<i64: 0>, starts = array<i64: 0>, ends = array<i64: 2>, steps = array<i64: 1>} : (tensor<3x4xf32>) -> tensor<2x4xf32>
  %i = graph.constant dense<[[-1], [0]]> : tensor<2x1xi64>
  %s = graph.scatter_nd none %h, %i, %r : (tensor<3x4xf32>, tensor<2x1xi64>, tensor<2x4xf32>) -> tensor<3x4xf32>
  %j = graph.constant dense<[[1, 3], [0, 0], [1, 3]]> : tensor<3x2xi64>
  %v = graph.slice %u {axes = array<i64: 1>, starts = array<i64: 1>, ends = array<i64: 2>, steps = array<i64: 1>} : (tensor<3x4xf32>) -> tensor<3x1xf32>
  %v1 = graph.reshape %v : (tensor<3x1xf32>) -> tensor<3xf32>
  %a = graph.scatter_nd add %s, %j, %v1 : (tensor<3x4xf32>, tensor<3x2xi64>, tensor<3xf32>) -> tensor<3x4xf32>
  %y = graph.matmul %a, %w3 : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
  return %y : tensor<3x4xf32>
}
)mlir",
            {1, 3, 0});
}

// ScatterElements with max, min and mul (PyTorch's scatter_reduce with
// include_self): repeated and negative indices along both axes, so a
// position combines its data element with one or two updates, and the
// extreme may be either. A constant mask zeroes some factors of the
// products: no zero, one zero in an update, one in the data element and
// two at the written positions; a product is a polynomial, so finite
// differences are exact at zeros too.
TEST(AutodiffGradCheck, ScatterElementsReductions) {
  gradCheck(R"mlir(
func.func @main(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %w1 = graph.weight "w1" : tensor<4x4xf32>
  %w2 = graph.weight "w2" : tensor<4x2xf32>
  %w3 = graph.weight "w3" : tensor<4x4xf32>
  %w4 = graph.weight "w4" : tensor<4x4xf32>
  %h = graph.matmul %x, %w1 : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
  %u = graph.matmul %x, %w2 : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  %i = graph.constant dense<[[1, 1], [-1, 2], [0, -4]]> : tensor<3x2xi64>
  %mx = graph.scatter_elements max %h, %i, %u {axis = 1 : i64} : (tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf32>) -> tensor<3x4xf32>
  %v = graph.matmul %x, %w3 : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
  %v2 = graph.slice %v {axes = array<i64: 0>, starts = array<i64: 0>, ends = array<i64: 2>, steps = array<i64: 1>} : (tensor<3x4xf32>) -> tensor<2x4xf32>
  %j = graph.constant dense<[[0, 2, -1, 1], [0, -3, 2, 1]]> : tensor<2x4xi64>
  %mn = graph.scatter_elements min %mx, %j, %v2 : (tensor<3x4xf32>, tensor<2x4xi64>, tensor<2x4xf32>) -> tensor<3x4xf32>
  %dm = graph.constant dense<[[1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 0.0], [0.0, 1.0, 1.0, 1.0]]> : tensor<3x4xf32>
  %um = graph.constant dense<[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]> : tensor<3x2xf32>
  %d = graph.binary mul %mn, %dm : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %two = graph.constant dense<2.0> : tensor<f32>
  %u2 = graph.binary mul %u, %two : (tensor<3x2xf32>, tensor<f32>) -> tensor<3x2xf32>
  %u3 = graph.binary mul %u2, %um : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  %p = graph.scatter_elements mul %d, %i, %u3 {axis = 1 : i64} : (tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf32>) -> tensor<3x4xf32>
  %y = graph.matmul %p, %w4 : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
  return %y : tensor<3x4xf32>
}
)mlir",
            {1, 3, 0});
}

// ScatterND with max and mul of row slices (a repeated and a negative
// tuple) and min of single elements (a repeated tuple), a constant mask
// zeroing some factors of the products.
TEST(AutodiffGradCheck, ScatterNDReductions) {
  gradCheck(R"mlir(
func.func @main(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %w1 = graph.weight "w1" : tensor<4x4xf32>
  %w2 = graph.weight "w2" : tensor<4x4xf32>
  %w3 = graph.weight "w3" : tensor<4x4xf32>
  %h = graph.matmul %x, %w1 : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
  %u = graph.matmul %x, %w2 : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
  %i = graph.constant dense<[[-1], [0], [2]]> : tensor<3x1xi64>
  %mx = graph.scatter_nd max %h, %i, %u : (tensor<3x4xf32>, tensor<3x1xi64>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %j = graph.constant dense<[[1, 3], [0, -4], [1, 3]]> : tensor<3x2xi64>
  %v = graph.slice %u {axes = array<i64: 1>, starts = array<i64: 1>, ends = array<i64: 2>, steps = array<i64: 1>} : (tensor<3x4xf32>) -> tensor<3x1xf32>
  %v1 = graph.reshape %v : (tensor<3x1xf32>) -> tensor<3xf32>
  %mn = graph.scatter_nd min %mx, %j, %v1 : (tensor<3x4xf32>, tensor<3x2xi64>, tensor<3xf32>) -> tensor<3x4xf32>
  %dm = graph.constant dense<[[1.0, 0.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0], [0.0, 1.0, 1.0, 1.0]]> : tensor<3x4xf32>
  %um = graph.constant dense<[[1.0, 1.0, 0.0, 1.0], [1.0, 0.0, 1.0, 1.0], [0.0, 1.0, 1.0, 1.0]]> : tensor<3x4xf32>
  %d = graph.binary mul %mn, %dm : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %u2 = graph.binary mul %u, %um : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %k = graph.constant dense<[[2], [-1], [2]]> : tensor<3x1xi64>
  %p = graph.scatter_nd mul %d, %k, %u2 : (tensor<3x4xf32>, tensor<3x1xi64>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %y = graph.matmul %p, %w3 : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
  return %y : tensor<3x4xf32>
}
)mlir",
            {1, 3, 0});
}

// Edge, reflect and wrap padding: each folds its border back into the
// input; reflect and edge on two axes at once, wrap up to the full axis.
TEST(AutodiffGradCheck, BorderPads) {
  gradCheck(R"mlir(
func.func @main(%x: tensor<3x4xf32>) -> tensor<5x5xf32> {
  %w1 = graph.weight "w1" : tensor<4x8xf32>
  %w2 = graph.weight "w2" : tensor<11x5xf32>
  %w3 = graph.weight "w3" : tensor<13x5xf32>
  %w4 = graph.weight "w4" : tensor<10x5xf32>
  %h = graph.matmul %x, %w1 : (tensor<3x4xf32>, tensor<4x8xf32>) -> tensor<3x8xf32>
  %r = graph.pad reflect %h {pads = array<i64: 1, 2, 1, 1>} : (tensor<3x8xf32>) -> tensor<5x11xf32>
  %e = graph.pad edge %h {pads = array<i64: 2, 4, 0, 1>} : (tensor<3x8xf32>) -> tensor<5x13xf32>
  %h5 = graph.slice %h {axes = array<i64: 1>, starts = array<i64: 0>, ends = array<i64: 5>, steps = array<i64: 1>} : (tensor<3x8xf32>) -> tensor<3x5xf32>
  %wr = graph.pad wrap %h5 {pads = array<i64: 1, 5, 1, 0>} : (tensor<3x5xf32>) -> tensor<5x10xf32>
  %y1 = graph.matmul %r, %w2 : (tensor<5x11xf32>, tensor<11x5xf32>) -> tensor<5x5xf32>
  %y2 = graph.matmul %e, %w3 : (tensor<5x13xf32>, tensor<13x5xf32>) -> tensor<5x5xf32>
  %y3 = graph.matmul %wr, %w4 : (tensor<5x10xf32>, tensor<10x5xf32>) -> tensor<5x5xf32>
  %s = graph.binary add %y1, %y2 : (tensor<5x5xf32>, tensor<5x5xf32>) -> tensor<5x5xf32>
  %y = graph.binary add %s, %y3 : (tensor<5x5xf32>, tensor<5x5xf32>) -> tensor<5x5xf32>
  return %y : tensor<5x5xf32>
}
)mlir",
            {1, 4, 0, 2, 3});
}

// The new rules under fp16 with a static loss scale: their constants and
// comparisons take the low type, and the unscaled gradients must equal the
// f32 ones (the interpreter evaluates every type in double).
TEST(AutodiffGradCheck, NewRulesMixedPrecision) {
  gradCheck(R"mlir(
func.func @main(%x: tensor<3x4xf32>) -> tensor<3x5xf32> {
  %w1 = graph.weight "w1" : tensor<4x6xf32>
  %e = graph.weight "exponent" : tensor<3xf32>
  %w2 = graph.weight "w2" : tensor<2x5xf32>
  %h = graph.matmul %x, %w1 : (tensor<3x4xf32>, tensor<4x6xf32>) -> tensor<3x6xf32>
  %r = graph.reshape %h : (tensor<3x6xf32>) -> tensor<3x2x3xf32>
  %b = graph.unary exp %r : (tensor<3x2x3xf32>) -> tensor<3x2x3xf32>
  %p = graph.binary pow %b, %e : (tensor<3x2x3xf32>, tensor<3xf32>) -> tensor<3x2x3xf32>
  %m = graph.reduce max %p {axes = array<i64: 2>, keepdims = false} : (tensor<3x2x3xf32>) -> tensor<3x2xf32>
  %n = graph.reduce l2 %r {axes = array<i64: 2>, keepdims = false} : (tensor<3x2x3xf32>) -> tensor<3x2xf32>
  %s = graph.binary add %m, %n : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  %y = graph.matmul %s, %w2 : (tensor<3x2xf32>, tensor<2x5xf32>) -> tensor<3x5xf32>
  return %y : tensor<3x5xf32>
}
)mlir",
            {4, 1, 0}, "fp16", 1024.0);
}
