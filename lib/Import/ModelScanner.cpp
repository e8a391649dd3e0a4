//===- ModelScanner.cpp - Protobuf wire-format scan of ONNX models --------===//
//
// Part of DistOpt. Implements ModelScanner.h. Field numbers are those of
// onnx.proto (ModelProto.graph = 7, GraphProto.initializer = 5,
// TensorProto.float_data = 4, raw_data = 9, double_data = 10).
//
//===----------------------------------------------------------------------===//
#include "ModelScanner.h"

#include "llvm/Support/FormatVariadic.h"

using namespace llvm;

namespace distopt {
namespace import {

namespace {
enum WireType : uint32_t {
  Varint = 0,
  Fixed64 = 1,
  Length = 2,
  StartGroup = 3,
  EndGroup = 4,
  Fixed32 = 5
};
constexpr uint32_t kModelGraph = 7;
constexpr uint32_t kGraphNode = 1;
constexpr uint32_t kGraphInitializer = 5;
constexpr uint32_t kNodeAttribute = 5;
constexpr uint32_t kAttributeTensor = 5;
constexpr uint32_t kTensorFloatData = 4;
constexpr uint32_t kTensorRawData = 9;
constexpr uint32_t kTensorDoubleData = 10;
} // namespace

Error WireReader::truncated(StringRef what) const {
  return createStringError(
      inconvertibleErrorCode(),
      formatv("file is truncated or corrupt: {0} at byte {1} runs past the "
              "end of its enclosing message",
              what, position())
          .str());
}

Expected<uint64_t> WireReader::readVarint() {
  uint64_t value = 0;
  for (unsigned shift = 0; shift < 70; shift += 7) {
    if (pos >= bytes.size())
      return truncated("a varint");
    uint8_t byte = bytes[pos++];
    value |= uint64_t(byte & 0x7f) << shift;
    if (!(byte & 0x80))
      return value;
  }
  return createStringError(inconvertibleErrorCode(),
                           formatv("not protobuf: varint longer than 10 bytes "
                                   "at byte {0}",
                                   position())
                               .str());
}

Error WireReader::readTag(uint32_t &field, uint32_t &wireType) {
  uint64_t at = position();
  Expected<uint64_t> tag = readVarint();
  if (!tag)
    return tag.takeError();
  field = uint32_t(*tag >> 3);
  wireType = uint32_t(*tag & 7);
  if (field == 0 || *tag >> 32 || wireType == StartGroup ||
      wireType == EndGroup || wireType > Fixed32)
    return createStringError(
        inconvertibleErrorCode(),
        formatv("not protobuf: invalid field tag {0:x} at byte {1}", *tag, at)
            .str());
  return Error::success();
}

Error WireReader::skipValue(uint32_t wireType, StringRef *payload) {
  switch (wireType) {
  case Varint:
    return readVarint().takeError();
  case Fixed64:
  case Fixed32: {
    size_t n = wireType == Fixed64 ? 8 : 4;
    if (bytes.size() - pos < n)
      return truncated("a fixed-width value");
    pos += n;
    return Error::success();
  }
  case Length: {
    Expected<uint64_t> len = readVarint();
    if (!len)
      return len.takeError();
    if (*len > bytes.size() - pos)
      return truncated(formatv("a {0}-byte field", *len).str());
    if (payload)
      *payload = bytes.substr(pos, *len);
    pos += *len;
    return Error::success();
  }
  default:
    return createStringError(inconvertibleErrorCode(),
                             "not protobuf: unsupported wire type");
  }
}

void appendVarint(std::string &out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(char(value | 0x80));
    value >>= 7;
  }
  out.push_back(char(value));
}

/// Copies `record` (tag + value) verbatim.
static void appendRecord(std::string &out, StringRef record) {
  out.append(record.data(), record.size());
}

/// Appends field `field` as a length-delimited record holding `payload`.
static void appendLengthField(std::string &out, uint32_t field,
                              StringRef payload) {
  appendVarint(out, (uint64_t(field) << 3) | Length);
  appendVarint(out, payload.size());
  out.append(payload.data(), payload.size());
}

namespace {
/// Walks one message, calling `onField(field, wireType, record, payload,
/// payloadOffset)` for every field; `record` spans tag and value.
template <typename Fn>
Error forEachField(StringRef bytes, uint64_t base, Fn onField) {
  WireReader reader(bytes, base);
  while (!reader.atEnd()) {
    uint64_t start = reader.position();
    uint32_t field, wireType;
    if (Error e = reader.readTag(field, wireType))
      return e;
    StringRef payload;
    uint64_t payloadEnd;
    if (Error e = reader.skipValue(wireType, &payload))
      return e;
    payloadEnd = reader.position();
    StringRef record = bytes.substr(start - base, payloadEnd - start);
    uint64_t payloadOffset = payloadEnd - payload.size();
    if (Error e = onField(field, wireType, record, payload, payloadOffset))
      return e;
  }
  return Error::success();
}
} // namespace

/// Strips a TensorProto's large payload; returns the rewritten message.
static Expected<std::string> stripTensor(StringRef bytes, uint64_t base,
                                         uint64_t threshold,
                                         std::optional<TensorDataRef> &ref) {
  std::string out;
  out.reserve(std::min<size_t>(bytes.size(), 256));
  Error e =
      forEachField(bytes, base,
                   [&](uint32_t field, uint32_t wireType, StringRef record,
                       StringRef payload, uint64_t payloadOffset) -> Error {
                     bool isPayload =
                         wireType == Length && (field == kTensorRawData ||
                                                field == kTensorFloatData ||
                                                field == kTensorDoubleData);
                     if (isPayload && payload.size() >= threshold) {
                       ref = TensorDataRef{payloadOffset, payload.size()};
                       return Error::success();
                     }
                     appendRecord(out, record);
                     return Error::success();
                   });
  if (e)
    return std::move(e);
  return out;
}

/// Strips the large tensor of a NodeProto's attributes (Constant's value).
static Expected<std::string> stripNode(StringRef bytes, uint64_t base,
                                       std::optional<TensorDataRef> &ref) {
  std::string out;
  Error e =
      forEachField(bytes, base,
                   [&](uint32_t field, uint32_t wireType, StringRef record,
                       StringRef payload, uint64_t payloadOffset) -> Error {
                     if (field != kNodeAttribute || wireType != Length ||
                         payload.size() <= kNodeTensorStripBytes) {
                       appendRecord(out, record);
                       return Error::success();
                     }
                     std::string attr;
                     Error inner = forEachField(
                         payload, payloadOffset,
                         [&](uint32_t f, uint32_t w, StringRef rec,
                             StringRef pay, uint64_t payOffset) -> Error {
                           if (f != kAttributeTensor || w != Length) {
                             appendRecord(attr, rec);
                             return Error::success();
                           }
                           Expected<std::string> tensor = stripTensor(
                               pay, payOffset, kNodeTensorStripBytes + 1, ref);
                           if (!tensor)
                             return tensor.takeError();
                           appendLengthField(attr, f, *tensor);
                           return Error::success();
                         });
                     if (inner)
                       return inner;
                     appendLengthField(out, field, attr);
                     return Error::success();
                   });
  if (e)
    return std::move(e);
  return out;
}

static Expected<std::string> stripGraph(StringRef bytes, uint64_t base,
                                        uint64_t threshold,
                                        ScannedModel &model) {
  std::string out;
  Error e =
      forEachField(bytes, base,
                   [&](uint32_t field, uint32_t wireType, StringRef record,
                       StringRef payload, uint64_t payloadOffset) -> Error {
                     if (field == kGraphNode && wireType == Length) {
                       std::optional<TensorDataRef> ref;
                       Expected<std::string> node =
                           stripNode(payload, payloadOffset, ref);
                       if (!node)
                         return node.takeError();
                       if (ref)
                         model.nodePayloads[model.numNodes] = *ref;
                       ++model.numNodes;
                       appendLengthField(out, field, *node);
                       return Error::success();
                     }
                     if (field != kGraphInitializer || wireType != Length) {
                       appendRecord(out, record);
                       return Error::success();
                     }
                     std::optional<TensorDataRef> ref;
                     Expected<std::string> tensor =
                         stripTensor(payload, payloadOffset, threshold, ref);
                     if (!tensor)
                       return tensor.takeError();
                     if (ref)
                       model.payloads[model.numInitializers] = *ref;
                     ++model.numInitializers;
                     appendLengthField(out, field, *tensor);
                     return Error::success();
                   });
  if (e)
    return std::move(e);
  return out;
}

Expected<ScannedModel> scanModel(StringRef bytes, uint64_t stripThreshold) {
  ScannedModel model;
  bool sawGraph = false;
  Error e =
      forEachField(bytes, 0,
                   [&](uint32_t field, uint32_t wireType, StringRef record,
                       StringRef payload, uint64_t payloadOffset) -> Error {
                     if (field != kModelGraph || wireType != Length) {
                       appendRecord(model.stripped, record);
                       return Error::success();
                     }
                     sawGraph = true;
                     Expected<std::string> graph = stripGraph(
                         payload, payloadOffset, stripThreshold, model);
                     if (!graph)
                       return graph.takeError();
                     appendLengthField(model.stripped, field, *graph);
                     return Error::success();
                   });
  if (e)
    return std::move(e);
  if (!sawGraph)
    return createStringError(inconvertibleErrorCode(),
                             "the file holds no ONNX graph");
  return std::move(model);
}

} // namespace import
} // namespace distopt
