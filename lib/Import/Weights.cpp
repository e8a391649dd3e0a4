//===- Weights.cpp - Initializers to weight references ----------*- C++ -*-===//
//
// Part of DistOpt. Implements Weights.h. External data follows onnx.proto:
// data_location = EXTERNAL with external_data keys "location", "offset" and
// "length" (offset/length in bytes, as decimal strings).
//
//===----------------------------------------------------------------------===//
#include "Weights.h"

#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/GraphShapeUtils.h"

#include "llvm/Support/CheckedArithmetic.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

using namespace mlir;
using onnx::TensorProto;

namespace distopt {
namespace import {

/// Bytes per element of `dtype`, or 0 for types without a fixed size.
static int64_t elementBytes(int32_t dtype) {
  switch (dtype) {
  case TensorProto::BOOL:
  case TensorProto::INT8:
  case TensorProto::UINT8:
    return 1;
  case TensorProto::INT16:
  case TensorProto::UINT16:
  case TensorProto::FLOAT16:
  case TensorProto::BFLOAT16:
    return 2;
  case TensorProto::INT32:
  case TensorProto::UINT32:
  case TensorProto::FLOAT:
    return 4;
  case TensorProto::INT64:
  case TensorProto::UINT64:
  case TensorProto::DOUBLE:
  case TensorProto::COMPLEX64:
    return 8;
  case TensorProto::COMPLEX128:
    return 16;
  default:
    return 0;
  }
}

/// The element count of `t`; nullopt for a negative dimension or a count
/// that does not fit in int64_t.
static std::optional<int64_t> numElements(const TensorProto &t) {
  SmallVector<int64_t> dims(t.dims().begin(), t.dims().end());
  return graph::numElements(dims);
}

/// True when `t` holds values in a typed (non-raw) field.
static bool hasTypedData(const TensorProto &t) {
  return t.float_data_size() || t.double_data_size() || t.int32_data_size() ||
         t.int64_data_size() || t.uint64_data_size() || t.string_data_size();
}

std::string checkExternalLocation(StringRef location) {
  if (location.empty())
    return "the external data location is empty";
  if (llvm::sys::path::is_absolute(location) ||
      llvm::sys::path::is_absolute(location, llvm::sys::path::Style::windows))
    return "external data location '" + location.str() +
           "' is an absolute path; locations must be relative to the "
           "model's folder";
  for (auto it = llvm::sys::path::begin(location),
            end = llvm::sys::path::end(location);
       it != end; ++it)
    if (*it == "..")
      return "external data location '" + location.str() +
             "' escapes the model's folder ('..'); keep weight files next to "
             "the model";
  return "";
}

void restoreSmallPayloads(onnx::GraphProto &graph, const WeightSource &source) {
  for (const auto &[index, ref] : source.scan->payloads) {
    TensorProto *t = graph.mutable_initializer(index);
    if (numElements(*t).value_or(kMaxInlineElements + 1) > kMaxInlineElements)
      continue;
    // float_data/double_data payloads have the raw_data layout.
    t->clear_float_data();
    t->clear_double_data();
    t->set_raw_data(source.bytes.substr(ref.offset, ref.size).str());
  }
}

/// The number of typed values `t` holds in the field its data type uses,
/// or nullopt for a type without one.
static std::optional<int64_t> typedCount(const TensorProto &t) {
  switch (t.data_type()) {
  case TensorProto::FLOAT:
  case TensorProto::COMPLEX64:
    return t.float_data_size();
  case TensorProto::DOUBLE:
  case TensorProto::COMPLEX128:
    return t.double_data_size();
  case TensorProto::INT64:
    return t.int64_data_size();
  case TensorProto::UINT32:
  case TensorProto::UINT64:
    return t.uint64_data_size();
  case TensorProto::STRING:
    return t.string_data_size();
  case TensorProto::UNDEFINED:
    return std::nullopt;
  default: // the 8, 16 and 32-bit types use int32_data
    return t.int32_data_size();
  }
}

/// The problem with `t`'s inline payload, or "" when it is consistent. An
/// initializer may hold no data at all (the graph-only form, or a payload
/// the scanner stripped); a node's tensor (`inNode`) only when its data
/// needs at least kNodeTensorStripBytes, the least the scanner strips.
static std::string payloadProblem(const TensorProto &t, bool inNode = false) {
  if (t.data_location() == TensorProto::EXTERNAL)
    return ""; // resolveExternal checks the file range
  std::optional<int64_t> count = numElements(t);
  if (!count)
    return "a dimension is negative or the element count does not fit in "
           "int64";
  int64_t perElement = elementBytes(t.data_type());
  if (t.has_raw_data() && perElement > 0) {
    std::optional<int64_t> need = llvm::checkedMul(*count, perElement);
    if (!need || int64_t(t.raw_data().size()) != *need)
      return "holds " + std::to_string(t.raw_data().size()) +
             " bytes of raw_data but its dims and data type need " +
             (need ? std::to_string(*need) : std::string("more than int64"));
    return "";
  }
  std::optional<int64_t> values = typedCount(t);
  if (inNode && !t.has_raw_data() && values && *values == 0 && *count > 0 &&
      perElement > 0 && *count < int64_t(kNodeTensorStripBytes) / perElement)
    return "has no data: no raw_data and no typed values";
  // No data at all is the graph-only form (or a stripped large payload);
  // defineInitializers decides about it.
  if (t.has_raw_data() || !values || *values == 0 || t.dims_size() == 0)
    return "";
  int64_t factor = (t.data_type() == TensorProto::COMPLEX64 ||
                    t.data_type() == TensorProto::COMPLEX128)
                       ? 2
                       : 1;
  std::optional<int64_t> need = llvm::checkedMul(*count, factor);
  if (!need || *values != *need)
    return "holds " + std::to_string(*values) +
           " typed values but its dims need " +
           (need ? std::to_string(*need) : std::string("more than int64"));
  return "";
}

static llvm::Error payloadError(const TensorProto &t, StringRef where,
                                const std::string &problem) {
  SmallVector<int64_t> dims(t.dims().begin(), t.dims().end());
  return llvm::createStringError(
      llvm::inconvertibleErrorCode(),
      llvm::Twine(where) + (t.name().empty() ? "" : " '" + t.name() + "'") +
          " (" +
          (TensorProto::DataType_IsValid(t.data_type())
               ? TensorProto::DataType_Name(t.data_type())
               : "data type " + std::to_string(t.data_type())) +
          ", dims [" + graph::shapeToString(dims) + "]) " + problem +
          "; the model is corrupt: re-export it");
}

llvm::Error checkInlinePayloads(const onnx::GraphProto &graph) {
  for (const TensorProto &init : graph.initializer())
    if (std::string p = payloadProblem(init); !p.empty())
      return payloadError(init, "initializer", p);
  for (const onnx::NodeProto &node : graph.node())
    for (const onnx::AttributeProto &attr : node.attribute()) {
      std::string where = "node '" + node.name() + "' (" + node.op_type() +
                          "), attribute '" + attr.name() + "': tensor";
      if (attr.has_t())
        if (std::string p = payloadProblem(attr.t(), /*inNode=*/true);
            !p.empty())
          return payloadError(attr.t(), where, p);
      for (const TensorProto &t : attr.tensors())
        if (std::string p = payloadProblem(t, /*inNode=*/true); !p.empty())
          return payloadError(t, where, p);
      if (attr.has_sparse_tensor()) {
        const onnx::SparseTensorProto &s = attr.sparse_tensor();
        for (const TensorProto *t : {&s.values(), &s.indices()})
          if (std::string p = payloadProblem(*t); !p.empty())
            return payloadError(*t, where, p);
      }
      if (attr.has_g())
        if (llvm::Error e = checkInlinePayloads(attr.g()))
          return e;
      for (const onnx::GraphProto &g : attr.graphs())
        if (llvm::Error e = checkInlinePayloads(g))
          return e;
    }
  return llvm::Error::success();
}

/// Attributes of one weight reference.
struct Reference {
  std::string file;
  int64_t offset = 0, size = 0;
};

/// Resolves the external data of `t`; returns failure after an error.
static FailureOr<std::optional<Reference>>
resolveExternal(const TensorProto &t, const WeightSource &source, Location loc,
                int64_t expectedBytes) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto &kv : t.external_data()) {
    if (kv.key() == "location")
      location = kv.value();
    else if (kv.key() == "offset" || kv.key() == "length") {
      long long v;
      if (StringRef(kv.value()).getAsInteger(10, v) || v < 0)
        return emitError(loc)
                   << "initializer '" << t.name() << "': external data "
                   << kv.key() << " '" << kv.value() << "' is not a byte count",
               failure();
      (kv.key() == "offset" ? offset : length) = v;
    }
  }
  std::string problem = checkExternalLocation(location);
  if (!problem.empty())
    return emitError(loc) << "initializer '" << t.name() << "': " << problem,
           failure();
  if (length < 0)
    length = expectedBytes;
  if (source.policy == WeightPolicy::Ignore)
    return std::optional<Reference>();
  SmallString<256> path(source.baseDir);
  llvm::sys::path::append(path, location);
  uint64_t fileSize;
  if (llvm::sys::fs::file_size(path, fileSize))
    return emitError(loc) << "initializer '" << t.name()
                          << "': external data file '" << path
                          << "' does not exist; put it next to the model, or "
                             "import without weight data using "
                             "--dist-weights=ignore",
           failure();
  if (length < 0 || uint64_t(offset) + uint64_t(length) > fileSize)
    return emitError(loc) << "initializer '" << t.name() << "' needs bytes "
                          << offset << ".."
                          << uint64_t(offset) + uint64_t(length) << " of '"
                          << path << "', which has only " << fileSize
                          << " bytes; the weight file is truncated or belongs "
                             "to another model (or use --dist-weights=ignore)",
           failure();
  return std::optional<Reference>(Reference{location, offset, length});
}

LogicalResult defineInitializers(Translator &t, const onnx::GraphProto &graph,
                                 const WeightSource &source, Location loc) {
  OpBuilder &b = t.builder;
  // Float operands that parameterize an op rather than enter it as a
  // tensor: a Resize's roi, scales and sizes, an Upsample's scales.
  StringSet<> parameters;
  for (const onnx::NodeProto &node : graph.node()) {
    int first = node.op_type() == "Resize" || node.op_type() == "Upsample"
                    ? 1
                    : node.input_size();
    for (int k = first; k < node.input_size(); ++k)
      parameters.insert(node.input(k));
  }
  for (int i = 0; i < graph.initializer_size(); ++i) {
    const TensorProto &init = graph.initializer(i);
    // Integer tensors (shapes, indices), scalars and op parameters are
    // data of the computation; every other float tensor is a trainable
    // weight, however small (a bias counts for parameters and gradients).
    if (auto small = readSmallTensor(init)) {
      if (!small->isFloat() || small->numElements() == 1 ||
          parameters.contains(init.name())) {
        t.defineConstant(init.name(), std::move(*small));
        continue;
      }
    }
    Type elem = t.elementType(init.data_type());
    if (!elem)
      return emitError(loc)
             << "initializer '" << init.name() << "' has unsupported data type "
             << init.data_type() << "; only numeric tensors are supported";
    SmallVector<int64_t> dims(init.dims().begin(), init.dims().end());
    std::optional<int64_t> count = numElements(init), bytes;
    if (count)
      bytes = llvm::checkedMul(*count, elementBytes(init.data_type()));
    if (!bytes)
      return emitError(loc)
             << "initializer '" << init.name() << "' has dims "
             << graph::shapeToString(dims)
             << (count ? ", whose size in bytes does not fit in int64"
                       : ": a dimension is negative or the element count "
                         "does not fit in int64")
             << "; the model is corrupt";
    auto type = RankedTensorType::get(dims, elem);
    std::optional<Reference> ref;
    if (init.data_location() == TensorProto::EXTERNAL) {
      auto r = resolveExternal(init, source, loc, *bytes);
      if (failed(r))
        return failure();
      ref = *r;
    } else if (auto it = source.scan->payloads.find(i);
               it != source.scan->payloads.end()) {
      if (int64_t(it->second.size) != *bytes)
        return emitError(loc)
               << "initializer '" << init.name() << "' holds "
               << it->second.size << " bytes but its type " << type << " needs "
               << *bytes << "; the model is corrupt";
      if (source.policy == WeightPolicy::Reference)
        ref = Reference{source.modelFile, int64_t(it->second.offset),
                        int64_t(it->second.size)};
    } else if (*count > 0 && source.policy == WeightPolicy::Reference) {
      // A program compiled from a weight without bytes would run on the
      // graph-only initialization rule: refuse instead of computing garbage.
      const char *problem =
          hasTypedData(init)
              ? "stores its data as varints (int32_data/int64_data), which "
                "has no byte range to reference; re-save the model with "
                "raw_data (onnx.numpy_helper.from_array writes it)"
              : "has no data: no raw_data, no typed values and no external "
                "data (onnxruntime rejects the model too); re-export the "
                "model";
      return emitError(loc) << "initializer '" << init.name() << "' (" << type
                            << ") " << problem
                            << ", or plan it without weight data using "
                               "--dist-weights=ignore",
             failure();
    }
    Location wloc = NameLoc::get(b.getStringAttr(init.name()), loc);
    bool frozen = t.trainedByModel && !t.trainedByModel->contains(init.name());
    Value w = graph::WeightOp::create(
        b, wloc, type, b.getStringAttr(init.name()),
        ref ? b.getStringAttr(ref->file) : StringAttr(),
        ref ? b.getI64IntegerAttr(ref->offset) : IntegerAttr(),
        ref ? b.getI64IntegerAttr(ref->size) : IntegerAttr(),
        frozen ? b.getStringAttr("training_info") : StringAttr());
    t.define(init.name(), w);
  }
  return success();
}

} // namespace import
} // namespace distopt
