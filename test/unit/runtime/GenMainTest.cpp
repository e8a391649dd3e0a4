//===- GenMainTest.cpp - Flags and files of generated programs -----------===//
//
// Part of DistOpt. The counts of a generated program's flags (--steps,
// --threads; --timeout and --serve-first, where 0 is a value too) are
// whole numbers in a range; anything else is an error naming the flag.
// The one file writer of the support code reports what failed.
//
//===----------------------------------------------------------------------===//
#include "distrt/gen/Main.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <initializer_list>
#include <string>

namespace {

using Parser = bool (*)(const char *, const std::string &, long long,
                        long long &);

/// `parse` refuses each of `bad` (max 100), printing the error that names
/// the range from `min` and leaving its output alone.
void expectRefused(Parser parse, const char *flag, long long min,
                   std::initializer_list<const char *> bad) {
  for (const char *value : bad) {
    testing::internal::CaptureStderr();
    long long out = -7;
    EXPECT_FALSE(parse(flag, value, 100, out)) << value;
    EXPECT_EQ(out, -7) << value;
    EXPECT_EQ(testing::internal::GetCapturedStderr(),
              std::string("error: ") + flag + " needs a whole number from " +
                  std::to_string(min) + " to 100, got '" + value + "'\n");
  }
}

TEST(GenMain, ParseCountTakesOneToMax) {
  long long out = -7;
  EXPECT_TRUE(dg::parseCount("--steps", "12", 100, out));
  EXPECT_EQ(out, 12);
  EXPECT_TRUE(dg::parseCount("--steps", "100", 100, out));
  EXPECT_EQ(out, 100);
  expectRefused(
      dg::parseCount, "--steps", 1,
      {"0", "101", "", "-1", "1e3", "abc", " 1", "00", "99999999999999999999"});
}

TEST(GenMain, ParseCountOrZeroAlsoTakesZero) {
  long long out = -7;
  EXPECT_TRUE(dg::parseCountOrZero("--timeout", "0", 100, out));
  EXPECT_EQ(out, 0);
  EXPECT_TRUE(dg::parseCountOrZero("--timeout", "7", 100, out));
  EXPECT_EQ(out, 7);
  EXPECT_TRUE(dg::parseCountOrZero("--timeout", "00", 100, out));
  EXPECT_EQ(out, 0);
  // The error names the range from 0, which the flag takes.
  expectRefused(dg::parseCountOrZero, "--timeout", 0,
                {"-0", "", "101", "soon", " 0"});
}

TEST(GenCommon, WriteFileWritesTheBytesAndNamesWhatFailed) {
  std::string path = testing::TempDir() + "gen-common-write.bin";
  const char bytes[] = {'a', '\0', 'b'};
  dg::Error err;
  ASSERT_EQ(dg::writeFile(path, bytes, sizeof bytes, "--save-state", err), 0)
      << err.message;
  std::string back;
  ASSERT_TRUE(dg::readText(path, back));
  EXPECT_EQ(back, std::string(bytes, sizeof bytes));
  std::remove(path.c_str());

  // A folder that does not exist, and a device that takes no bytes (the
  // failure shows only when the buffered bytes are flushed at the close).
  EXPECT_EQ(dg::writeFile("/no-such-dir/x", "x", 1, "--redundant", err), 1);
  EXPECT_EQ(err.message, "--redundant: cannot write '/no-such-dir/x' (No "
                         "such file or directory)");
  EXPECT_EQ(dg::writeFile("/dev/full", "x", 1, "--save-state", err), 1);
  EXPECT_EQ(err.message,
            "--save-state: cannot write '/dev/full' (No space left on device)");
}

} // namespace
