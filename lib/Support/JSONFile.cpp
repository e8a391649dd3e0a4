//===- JSONFile.cpp - Reading a file as JSON ------------------------------===//
//
// Part of DistOpt (JSONFile.h).
//
//===----------------------------------------------------------------------===//
#include "lib/Support/JSONFile.h"

#include "llvm/Support/MemoryBuffer.h"

using namespace llvm;

Expected<json::Value> distopt::readJSONFile(const Twine &path,
                                            const Twine &what) {
  ErrorOr<std::unique_ptr<MemoryBuffer>> buf = MemoryBuffer::getFile(path);
  if (!buf)
    return createStringError(
        buf.getError(),
        what + ": '" + path + "' cannot be read: " + buf.getError().message());
  Expected<json::Value> v = json::parse((*buf)->getBuffer());
  if (!v)
    return createStringError(inconvertibleErrorCode(),
                             what + ": '" + path +
                                 "' is not JSON: " + toString(v.takeError()));
  return v;
}
