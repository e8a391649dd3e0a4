//===- Summary.cpp - Re-read and verify a graph-only model ------*- C++ -*-===//
//
// Part of DistOpt. The verifier behind `dist-modelgen --summary`: it checks
// the graph-only convention on any ONNX file (ours or another exporter's)
// and reports parameter counts, the op histogram and the interface.
//
//===----------------------------------------------------------------------===//

#include "ModelGen.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"

#include <algorithm>

using namespace distopt::modelgen;

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// Bytes per element of an ONNX data type; 0 when unknown or sub-byte.
static unsigned elementBytes(int type) {
  switch (type) {
  case onnx::TensorProto::BOOL:
  case onnx::TensorProto::INT8:
  case onnx::TensorProto::UINT8:
    return 1;
  case onnx::TensorProto::FLOAT16:
  case onnx::TensorProto::BFLOAT16:
  case onnx::TensorProto::INT16:
  case onnx::TensorProto::UINT16:
    return 2;
  case onnx::TensorProto::FLOAT:
  case onnx::TensorProto::INT32:
  case onnx::TensorProto::UINT32:
    return 4;
  case onnx::TensorProto::DOUBLE:
  case onnx::TensorProto::INT64:
  case onnx::TensorProto::UINT64:
    return 8;
  default:
    return 0;
  }
}

static std::string typeName(int type) {
  switch (type) {
  case onnx::TensorProto::FLOAT:
    return "f32";
  case onnx::TensorProto::FLOAT16:
    return "f16";
  case onnx::TensorProto::BFLOAT16:
    return "bf16";
  case onnx::TensorProto::DOUBLE:
    return "f64";
  case onnx::TensorProto::INT64:
    return "i64";
  case onnx::TensorProto::INT32:
    return "i32";
  case onnx::TensorProto::BOOL:
    return "bool";
  default:
    return "type" + std::to_string(type);
  }
}

static std::string describe(const onnx::ValueInfoProto &info) {
  std::string text = info.name() + " ";
  const onnx::TypeProto_Tensor &tensor = info.type().tensor_type();
  text += typeName(tensor.elem_type()) + " [";
  for (int i = 0; i < tensor.shape().dim_size(); ++i) {
    const onnx::TensorShapeProto_Dimension &d = tensor.shape().dim(i);
    text += i ? "," : "";
    text += d.has_dim_param()   ? d.dim_param()
            : d.has_dim_value() ? std::to_string(d.dim_value())
                                : "?";
  }
  return text + "]";
}

static bool hasInlineData(const onnx::TensorProto &t) {
  return !t.raw_data().empty() || t.float_data_size() || t.int32_data_size() ||
         t.int64_data_size() || t.double_data_size() || t.uint64_data_size() ||
         t.string_data_size();
}

/// Checks one graph-only initializer and returns its (offset, length).
static llvm::Expected<std::pair<uint64_t, uint64_t>>
checkExternal(const onnx::TensorProto &t, uint64_t elements,
              std::string &location) {
  auto fail = [&](const llvm::Twine &why) {
    return makeError("initializer '" + t.name() + "': " + why +
                     " (graph-only models keep weights in an external file "
                     "referenced by location/offset/length)");
  };
  if (hasInlineData(t))
    return fail("holds inline data");
  if (t.data_location() != onnx::TensorProto::EXTERNAL)
    return fail("data_location is not EXTERNAL");
  std::string loc;
  uint64_t offset = 0, length = 0;
  bool hasOffset = false, hasLength = false;
  for (const onnx::StringStringEntryProto &e : t.external_data()) {
    if (e.key() == "location")
      loc = e.value();
    else if (e.key() == "offset")
      hasOffset = !llvm::StringRef(e.value()).getAsInteger(10, offset);
    else if (e.key() == "length")
      hasLength = !llvm::StringRef(e.value()).getAsInteger(10, length);
  }
  if (loc.empty())
    return fail("external_data has no location");
  if (!hasOffset || !hasLength)
    return fail("external_data lacks a numeric offset or length");
  if (location.empty())
    location = loc;
  else if (loc != location)
    return fail("location '" + loc + "' differs from '" + location + "'");
  unsigned bytes = elementBytes(t.data_type());
  if (bytes == 0)
    return fail("data type " + llvm::Twine(t.data_type()) + " is unsupported");
  if (length != elements * bytes)
    return fail("length " + llvm::Twine(length) +
                " != " + llvm::Twine(elements) + " elements x " +
                llvm::Twine(bytes) + " bytes");
  return std::make_pair(offset, length);
}

llvm::Expected<ModelSummary>
distopt::modelgen::summarizeModel(const onnx::ModelProto &model) {
  ModelSummary s;
  uint64_t declared = 0;
  for (const onnx::StringStringEntryProto &e : model.metadata_props()) {
    if (e.key() == "distopt.graph_only")
      s.graphOnly = e.value() == "true";
    else if (e.key() == "distopt.family")
      s.family = e.value();
    else if (e.key() == "distopt.parameters" &&
             llvm::StringRef(e.value()).getAsInteger(10, declared))
      return makeError("metadata distopt.parameters = '" + e.value() +
                       "' is not a number");
  }
  const onnx::GraphProto &g = model.graph();

  // Initializers fed to BatchNormalization as mean/var are statistics.
  llvm::StringSet<> buffers;
  for (const onnx::NodeProto &n : g.node())
    if (n.op_type() == "BatchNormalization")
      for (int i = 3; i < std::min(n.input_size(), 5); ++i)
        buffers.insert(n.input(i));

  llvm::StringSet<> defined;
  std::vector<std::pair<uint64_t, uint64_t>> extents;
  for (const onnx::TensorProto &t : g.initializer()) {
    uint64_t elements = 1;
    for (int64_t d : t.dims()) {
      if (d < 0)
        return makeError("initializer '" + t.name() + "' has dimension " +
                         llvm::Twine(d) + "; dimensions must be >= 0");
      elements *= static_cast<uint64_t>(d);
    }
    if (!defined.insert(t.name()).second)
      return makeError("initializer '" + t.name() + "' is defined twice");
    (buffers.contains(t.name()) ? s.buffers : s.parameters) += elements;
    ++s.initializers;
    if (!s.graphOnly) {
      s.weightBytes += elements * elementBytes(t.data_type());
      continue;
    }
    auto extent = checkExternal(t, elements, s.weightsLocation);
    if (!extent)
      return extent.takeError();
    extents.push_back(*extent);
  }
  std::sort(extents.begin(), extents.end());
  for (size_t i = 0; i < extents.size(); ++i) {
    uint64_t end = extents[i].first + extents[i].second;
    if (i + 1 < extents.size() && end > extents[i + 1].first)
      return makeError("external data ranges overlap at offset " +
                       llvm::Twine(extents[i + 1].first) + " of '" +
                       s.weightsLocation + "'");
    s.weightBytes = std::max(s.weightBytes, end);
  }

  if (declared && declared != s.parameters)
    return makeError("metadata distopt.parameters = " + llvm::Twine(declared) +
                     " but the initializers hold " + llvm::Twine(s.parameters) +
                     " parameters; the file was edited or truncated");

  for (const onnx::ValueInfoProto &in : g.input()) {
    defined.insert(in.name());
    s.inputs.push_back(describe(in));
  }
  for (const onnx::NodeProto &n : g.node()) {
    for (const std::string &in : n.input())
      if (!in.empty() && !defined.contains(in))
        return makeError("node '" + n.name() + "' (" + n.op_type() +
                         ") uses '" + in +
                         "' before it is defined; nodes must be in "
                         "topological order");
    for (const std::string &out : n.output())
      defined.insert(out);
    ++s.opHistogram[n.op_type()];
    ++s.nodes;
  }
  for (const onnx::ValueInfoProto &out : g.output()) {
    if (!defined.contains(out.name()))
      return makeError("graph output '" + out.name() +
                       "' is produced by no node, input or initializer");
    s.outputs.push_back(describe(out));
  }
  return std::move(s);
}

void distopt::modelgen::printSummary(const ModelSummary &s,
                                     llvm::raw_ostream &os) {
  os << "family: " << (s.family.empty() ? "unknown" : s.family) << "\n";
  os << "graph-only: " << (s.graphOnly ? "true" : "false") << "\n";
  os << "parameters: " << s.parameters << "\n";
  os << "buffers: " << s.buffers << "\n";
  os << "initializers: " << s.initializers << "\n";
  os << "weight-bytes: " << s.weightBytes << "\n";
  if (!s.weightsLocation.empty())
    os << "weights-file: " << s.weightsLocation << "\n";
  os << "nodes: " << s.nodes << "\n";
  for (const std::string &in : s.inputs)
    os << "input: " << in << "\n";
  for (const std::string &out : s.outputs)
    os << "output: " << out << "\n";
  for (const auto &[op, count] : s.opHistogram)
    os << "op: " << op << " " << count << "\n";
}
