//===- ModelScanner.h - Protobuf wire-format scan of ONNX models ----------===//
//
// Part of DistOpt. Reads a serialized ModelProto without parsing weight
// payloads: large initializer data (raw_data, packed float_data/double_data)
// is recorded as (offset, size) in the original buffer and left out of a
// "stripped" copy that protobuf then parses in microseconds. Nothing here
// copies weight bytes.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_LIB_IMPORT_MODELSCANNER_H
#define DIST_LIB_IMPORT_MODELSCANNER_H

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>

namespace distopt {
namespace import {

/// Where a tensor's bytes lie in the scanned buffer.
struct TensorDataRef {
  uint64_t offset = 0;
  uint64_t size = 0;
};

/// The result of scanning a model.
struct ScannedModel {
  /// The ModelProto with large initializer payloads removed.
  std::string stripped;
  /// Top-level graph initializer index -> its payload in the original bytes.
  llvm::DenseMap<unsigned, TensorDataRef> payloads;
  /// Number of top-level graph initializers seen.
  unsigned numInitializers = 0;
  /// Top-level node index -> payload of its large tensor attribute (the
  /// `value` of a large Constant node).
  llvm::DenseMap<unsigned, TensorDataRef> nodePayloads;
  /// Number of top-level nodes seen.
  unsigned numNodes = 0;
};

/// A cursor over protobuf wire format. All reads are bounds-checked; a read
/// past the end reports truncation instead of reading out of bounds.
class WireReader {
public:
  WireReader(llvm::StringRef bytes, uint64_t base = 0)
      : bytes(bytes), base(base) {}

  bool atEnd() const { return pos >= bytes.size(); }
  /// Absolute position (in the outermost buffer) of the cursor.
  uint64_t position() const { return base + pos; }

  /// Reads a base-128 varint (at most 10 bytes).
  llvm::Expected<uint64_t> readVarint();
  /// Reads a field tag and splits it into field number and wire type.
  llvm::Error readTag(uint32_t &field, uint32_t &wireType);
  /// Skips the value of a field of `wireType`; for length-delimited values
  /// returns the payload (bounds-checked) through `payload`.
  llvm::Error skipValue(uint32_t wireType, llvm::StringRef *payload = nullptr);

private:
  llvm::Error truncated(llvm::StringRef what) const;
  llvm::StringRef bytes;
  uint64_t base;
  size_t pos = 0;
};

/// Node attribute tensors are stripped only above this many bytes, so every
/// tensor of at most 64 elements stays inline.
constexpr uint64_t kNodeTensorStripBytes = 512;

/// Scans `bytes` (a serialized ModelProto). Initializer payloads of at least
/// `stripThreshold` bytes, and node attribute tensors of more than
/// kNodeTensorStripBytes, are recorded and stripped. Errors say whether the
/// file is truncated or not protobuf at all, and at which byte.
llvm::Expected<ScannedModel> scanModel(llvm::StringRef bytes,
                                       uint64_t stripThreshold = 1024);

/// Appends `value` as a varint to `out`.
void appendVarint(std::string &out, uint64_t value);

} // namespace import
} // namespace distopt

#endif // DIST_LIB_IMPORT_MODELSCANNER_H
