//===- IndexMathTest.cpp - Generated index arithmetic -----------*- C++ -*-===//
//
// Part of DistOpt. The index expressions the emitter writes into generated
// loops are evaluated here by a tiny interpreter and compared with the
// offsets NumPy broadcasting defines; literals must round-trip.
//
//===----------------------------------------------------------------------===//
#include "lib/Codegen/FunctionEmitter.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

using namespace distopt::codegen;

namespace {
/// Evaluates an emitted expression of `i` with + * / % and parentheses.
struct Eval {
  const std::string &s;
  size_t p = 0;
  int64_t i;
  int64_t atom() {
    if (s[p] == ' ')
      return ++p, atom();
    if (s[p] == '(') {
      ++p;
      int64_t v = sum();
      while (s[p] == ' ')
        ++p;
      ++p; // ')'
      return v;
    }
    if (s[p] == 'i')
      return ++p, i;
    char *end;
    int64_t v = strtoll(s.c_str() + p, &end, 10);
    p = end - s.c_str();
    return v;
  }
  int64_t product() {
    int64_t v = atom();
    for (;;) {
      while (p < s.size() && s[p] == ' ')
        ++p;
      if (p >= s.size() || (s[p] != '*' && s[p] != '/' && s[p] != '%'))
        return v;
      char op = s[p++];
      int64_t r = atom();
      v = op == '*' ? v * r : op == '/' ? v / r : v % r;
    }
  }
  int64_t sum() {
    int64_t v = product();
    for (;;) {
      while (p < s.size() && s[p] == ' ')
        ++p;
      if (p >= s.size() || s[p] != '+')
        return v;
      ++p;
      v += product();
    }
  }
};

int64_t eval(const std::string &expr, int64_t i) {
  Eval e{expr, 0, i};
  return e.sum();
}

/// NumPy: the offset into `in` (right-aligned, size-1 dims broadcast) of
/// output element `i`.
int64_t reference(llvm::ArrayRef<int64_t> out, llvm::ArrayRef<int64_t> in,
                  int64_t i) {
  auto os = FunctionEmitter::stridesOf(out),
       is = FunctionEmitter::stridesOf(in);
  int64_t off = 0;
  size_t lead = out.size() - in.size();
  for (size_t k = 0; k < in.size(); ++k) {
    int64_t c = (i / os[lead + k]) % out[lead + k];
    off += (in[k] == 1 ? 0 : c) * is[k];
  }
  return off;
}
} // namespace

TEST(IndexMath, Strides) {
  EXPECT_EQ(FunctionEmitter::stridesOf({2, 3, 4}),
            (llvm::SmallVector<int64_t>{12, 4, 1}));
  EXPECT_TRUE(FunctionEmitter::stridesOf({}).empty());
}

TEST(IndexMath, BroadcastOffsetsMatchNumPy) {
  struct Case {
    llvm::SmallVector<int64_t> out, in;
  } cases[] = {{{2, 3, 4}, {2, 3, 4}}, {{2, 3, 4}, {4}},
               {{2, 3, 4}, {3, 1}},    {{2, 3, 4}, {2, 1, 4}},
               {{2, 3, 4}, {1, 1, 1}}, {{2, 3, 4}, {}},
               {{5, 1, 7}, {5, 1, 1}}, {{4, 2, 3, 5}, {2, 1, 5}}};
  for (const Case &c : cases) {
    std::string expr = FunctionEmitter::broadcastOffset(c.out, c.in, "i");
    int64_t n = 1;
    for (int64_t d : c.out)
      n *= d;
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(eval(expr, i), reference(c.out, c.in, i))
          << "expression " << expr << " at i=" << i;
  }
}

TEST(IndexMath, Coordinates) {
  llvm::SmallVector<int64_t> shape{3, 4, 5};
  for (int64_t i = 0; i < 60; ++i) {
    EXPECT_EQ(eval(FunctionEmitter::coord(shape, 0, "i"), i), i / 20);
    EXPECT_EQ(eval(FunctionEmitter::coord(shape, 1, "i"), i), (i / 5) % 4);
    EXPECT_EQ(eval(FunctionEmitter::coord(shape, 2, "i"), i), i % 5);
  }
}

TEST(IndexMath, Literals) {
  mlir::MLIRContext ctx;
  mlir::Builder b(&ctx);
  EXPECT_EQ(FunctionEmitter::literal(1.0, b.getF32Type()), "1.0f");
  EXPECT_EQ(FunctionEmitter::literal(0.1, b.getF32Type()), "0.1f");
  EXPECT_EQ(FunctionEmitter::literal((double)0.1f, b.getF32Type()),
            "0.100000001f");
  EXPECT_EQ(FunctionEmitter::literal(0.1, b.getF64Type()),
            "0.10000000000000001");
  EXPECT_EQ(FunctionEmitter::literal(-INFINITY, b.getF32Type()), "-INFINITY");
  EXPECT_EQ(FunctionEmitter::literal(NAN, b.getF32Type()), "NAN");
  EXPECT_EQ(FunctionEmitter::literal(1e30, b.getF32Type()), "1e+30f");
  EXPECT_EQ(FunctionEmitter::literal(1, b.getI1Type()), "true");
  EXPECT_EQ(FunctionEmitter::cType(b.getIntegerType(64)), "int64_t");
  EXPECT_EQ(FunctionEmitter::cType(b.getIntegerType(8, false)), "uint8_t");
  // 16-bit floats are stored as the generated-code types of distrt_gen.h;
  // types without a storage type have none.
  EXPECT_EQ(FunctionEmitter::cType(b.getF16Type()), "dg::f16");
  EXPECT_EQ(FunctionEmitter::cType(b.getBF16Type()), "dg::bf16");
  EXPECT_EQ(FunctionEmitter::cType(b.getType<mlir::Float8E4M3FNType>()), "");
}
