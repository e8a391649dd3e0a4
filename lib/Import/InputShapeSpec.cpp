//===- InputShapeSpec.cpp - --input-shape parsing and file sniffing -------===//
//
// Part of DistOpt. Helpers of the public importer API that need no IR:
// parsing "NAME:D0xD1x..." and telling ONNX files from MLIR text.
//
//===----------------------------------------------------------------------===//
#include "dist/ImportONNX.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Path.h"

using namespace llvm;

bool distopt::parseInputShapeSpec(StringRef spec, ONNXImportOptions &options,
                                  std::string &error) {
  // Names may themselves contain ':' (TensorFlow's "x:0"), so split at the
  // last one.
  size_t colon = spec.rfind(':');
  if (colon == StringRef::npos) {
    error = "expected NAME:D0xD1x... (e.g. input_ids:2x1024), found no ':'";
    return false;
  }
  StringRef name = spec.take_front(colon), dims = spec.drop_front(colon + 1);
  if (name.empty()) {
    error = "the input name before ':' is empty";
    return false;
  }
  if (dims.empty()) {
    error = "no dimensions after '" + name.str() +
            ":'; write them as D0xD1x... (e.g. 2x1024)";
    return false;
  }
  SmallVector<StringRef> parts;
  dims.split(parts, 'x');
  SmallVector<int64_t> shape;
  for (StringRef part : parts) {
    int64_t value;
    if (part.empty() || part.getAsInteger(10, value) || value <= 0) {
      error = "dimension '" + part.str() + "' of '" + name.str() +
              "' is not a positive integer";
      return false;
    }
    shape.push_back(value);
  }
  if (options.inputShapes.count(name)) {
    error = "input '" + name.str() + "' is given twice";
    return false;
  }
  options.inputShapes[name] = std::move(shape);
  return true;
}

bool distopt::parseInputDimSpec(StringRef spec, ONNXImportOptions &options,
                                std::string &error) {
  SmallVector<StringRef> entries;
  spec.split(entries, ',');
  for (StringRef entry : entries) {
    if (entry.empty()) {
      error = "an entry of the comma list is empty; write "
              "NAME=VALUE,NAME=VALUE";
      return false;
    }
    // Split at the last '=': the value is a number, the name anything.
    size_t eq = entry.rfind('=');
    if (eq == StringRef::npos) {
      error = "expected NAME=VALUE (e.g. sequence=128), found no '=' in '" +
              entry.str() + "'";
      return false;
    }
    StringRef name = entry.take_front(eq), text = entry.drop_front(eq + 1);
    if (name.empty()) {
      error = "the dimension name before '=' is empty in '" + entry.str() + "'";
      return false;
    }
    int64_t value;
    if (text.empty() || text.getAsInteger(10, value) || value <= 0) {
      error = "the value '" + text.str() + "' of '" + name.str() +
              "' is not a positive integer";
      return false;
    }
    if (options.inputDims.count(name)) {
      error = "dimension '" + name.str() + "' is given twice";
      return false;
    }
    options.inputDims[name] = value;
  }
  return true;
}

bool distopt::parseInputValueSpec(StringRef spec, ONNXImportOptions &options,
                                  std::string &error) {
  size_t colon = spec.rfind(':');
  if (colon == StringRef::npos || colon == 0) {
    error = "expected NAME:VALUE (e.g. sr:16000) for a scalar input";
    return false;
  }
  StringRef name = spec.take_front(colon), text = spec.drop_front(colon + 1);
  double value;
  if (text.empty() || text.getAsDouble(value)) {
    error = "the value '" + text.str() + "' of '" + name.str() +
            "' is not a number";
    return false;
  }
  if (options.inputValues.count(name)) {
    error = "input '" + name.str() + "' is given twice";
    return false;
  }
  options.inputValues[name] = value;
  return true;
}

bool distopt::looksLikeONNX(StringRef path, StringRef bytes) {
  StringRef ext = sys::path::extension(path);
  if (ext.equals_insensitive(".onnx") || ext.equals_insensitive(".pb"))
    return true;
  if (ext.equals_insensitive(".mlir") || ext.equals_insensitive(".mlirbc"))
    return false;
  // A serialized ModelProto starts with a field tag; ir_version (field 1,
  // varint) comes first in every exporter's output. MLIR text starts with
  // printable characters, MLIR bytecode with "ML\xefR".
  if (bytes.empty() || bytes.starts_with("ML\xef"
                                         "R"))
    return false;
  unsigned char first = bytes[0];
  return first == 0x08 ||
         (first < 0x20 && first != '\n' && first != '\r' && first != '\t');
}
