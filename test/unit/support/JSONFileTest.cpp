//===- JSONFileTest.cpp - readJSONFile ------------------------------------===//
//
// Part of DistOpt. A JSON file is read whole and parsed; a file that
// cannot be read, or is not JSON, is an error naming the file, what it
// was read for and, for a parse error, where it is.
//
//===----------------------------------------------------------------------===//
#include "lib/Support/JSONFile.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

using namespace distopt;

namespace {

/// Writes \p text to a fresh file and returns its path.
std::string fileWith(llvm::StringRef text) {
  llvm::SmallString<128> path;
  int fd;
  EXPECT_FALSE(llvm::sys::fs::createTemporaryFile("json", "json", fd, path));
  llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
  os << text;
  return std::string(path);
}

std::string errorOf(llvm::Expected<llvm::json::Value> v) {
  EXPECT_FALSE(static_cast<bool>(v));
  return v ? std::string() : llvm::toString(v.takeError());
}

TEST(JSONFile, ReadsAndParses) {
  std::string path = fileWith(R"({"steps": 3, "plan": "dp=2"})");
  llvm::Expected<llvm::json::Value> v = readJSONFile(path, "the checkpoint");
  ASSERT_TRUE(static_cast<bool>(v)) << llvm::toString(v.takeError());
  const llvm::json::Object *o = v->getAsObject();
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(o->getInteger("steps"), 3);
  EXPECT_EQ(o->getString("plan"), "dp=2");
  llvm::sys::fs::remove(path);
}

TEST(JSONFile, UnreadableNamesTheFileAndWhatFor) {
  std::string path = fileWith("{}") + ".missing";
  std::string e = errorOf(readJSONFile(path, "--dist-replan"));
  EXPECT_EQ(e.find("--dist-replan: '" + path + "' cannot be read: "), 0u) << e;
  // The reason is the system's (no such file).
  EXPECT_GT(e.size(), e.find("cannot be read: ") + 16) << e;
  llvm::sys::fs::remove(path.substr(0, path.size() - 8));
}

TEST(JSONFile, ParseErrorSaysWhere) {
  std::string path = fileWith("{\"a\": 1,\n \"b\": [1, 2,]}");
  std::string e = errorOf(readJSONFile(path, "the job folder"));
  // Line 2, column 13, byte 22: just past the ']' where a value should be.
  EXPECT_EQ(e, "the job folder: '" + path +
                   "' is not JSON: [2:13, byte=22]: Invalid JSON value");
  llvm::sys::fs::remove(path);
  path = fileWith("");
  e = errorOf(readJSONFile(path, "--trace of rank 1"));
  EXPECT_EQ(e.find("--trace of rank 1: '" + path + "' is not JSON: [1:0"), 0u)
      << e;
  llvm::sys::fs::remove(path);
}

} // namespace
