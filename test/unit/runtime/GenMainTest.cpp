//===- GenMainTest.cpp - Command-line counts of generated programs -------===//
//
// Part of DistOpt. The counts of a generated program's flags (--steps,
// --threads; --timeout and --serve-first, where 0 is a value too) are
// whole numbers in a range; anything else is an error naming the flag.
//
//===----------------------------------------------------------------------===//
#include "distrt/gen/Main.h"

#include <gtest/gtest.h>

#include <initializer_list>

namespace {

using Parser = bool (*)(const char *, const std::string &, long long,
                        long long &);

/// `parse` refuses each of `bad` (max 100), printing parseCount's error
/// and leaving its output alone.
void expectRefused(Parser parse, const char *flag,
                   std::initializer_list<const char *> bad) {
  for (const char *value : bad) {
    testing::internal::CaptureStderr();
    long long out = -7;
    EXPECT_FALSE(parse(flag, value, 100, out)) << value;
    EXPECT_EQ(out, -7) << value;
    EXPECT_EQ(testing::internal::GetCapturedStderr(),
              std::string("error: ") + flag +
                  " needs a whole number from 1 to 100, got '" + value + "'\n");
  }
}

TEST(GenMain, ParseCountTakesOneToMax) {
  long long out = -7;
  EXPECT_TRUE(dg::parseCount("--steps", "12", 100, out));
  EXPECT_EQ(out, 12);
  EXPECT_TRUE(dg::parseCount("--steps", "100", 100, out));
  EXPECT_EQ(out, 100);
  expectRefused(
      dg::parseCount, "--steps",
      {"0", "101", "", "-1", "1e3", "abc", " 1", "00", "99999999999999999999"});
}

TEST(GenMain, ParseCountOrZeroAlsoTakesZero) {
  long long out = -7;
  EXPECT_TRUE(dg::parseCountOrZero("--timeout", "0", 100, out));
  EXPECT_EQ(out, 0);
  EXPECT_TRUE(dg::parseCountOrZero("--timeout", "7", 100, out));
  EXPECT_EQ(out, 7);
  // Only "0" itself: the other errors are parseCount's.
  expectRefused(dg::parseCountOrZero, "--timeout",
                {"00", "-0", "", "101", "soon"});
}

} // namespace
