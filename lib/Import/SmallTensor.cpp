//===- SmallTensor.cpp - Small constant tensors of the importer -*- C++ -*-===//
//
// Part of DistOpt. Reading and writing SmallTensor from ONNX TensorProtos.
//
//===----------------------------------------------------------------------===//
#include "SmallTensor.h"

#include "dialects/Graph/GraphShapeUtils.h"

#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <limits>

using namespace llvm;
using onnx::TensorProto;

namespace distopt {
namespace import {

bool SmallTensor::isFloat() const {
  return dtype == TensorProto::FLOAT || dtype == TensorProto::DOUBLE;
}

int64_t SmallTensor::numElements() const {
  // Saturates: a shape whose count overflows is never small.
  return graph::numElements(shape).value_or(
      std::numeric_limits<int64_t>::max());
}

double SmallTensor::getDouble(int64_t i) const {
  return isFloat() ? floats[i] : double(ints[i]);
}

int64_t toInt64(double v) {
  if (std::isnan(v))
    return 0;
  if (v >= 9.223372036854775807e18)
    return std::numeric_limits<int64_t>::max();
  if (v <= -9.223372036854775808e18)
    return std::numeric_limits<int64_t>::min();
  return int64_t(v);
}

int64_t SmallTensor::getInt(int64_t i) const {
  return isFloat() ? toInt64(floats[i]) : ints[i];
}

bool isFoldableType(int32_t dtype) {
  switch (dtype) {
  case TensorProto::FLOAT:
  case TensorProto::DOUBLE:
  case TensorProto::INT64:
  case TensorProto::INT32:
  case TensorProto::INT16:
  case TensorProto::INT8:
  case TensorProto::UINT8:
  case TensorProto::BOOL:
    return true;
  default:
    return false;
  }
}

/// Copies `n` little-endian values of type T out of `raw`.
template <typename T>
static bool readRaw(const std::string &raw, int64_t n,
                    SmallVectorImpl<T> &out) {
  if (int64_t(raw.size()) != n * int64_t(sizeof(T)))
    return false;
  out.resize(n);
  std::memcpy(out.data(), raw.data(), raw.size());
  return true;
}

std::optional<SmallTensor> readSmallTensor(const TensorProto &tensor,
                                           int64_t maxElements) {
  if (!isFoldableType(tensor.data_type()) ||
      tensor.data_location() == TensorProto::EXTERNAL)
    return std::nullopt;
  SmallTensor out;
  out.dtype = tensor.data_type();
  for (int64_t d : tensor.dims()) {
    if (d < 0)
      return std::nullopt;
    out.shape.push_back(d);
  }
  int64_t n = out.numElements();
  if (n > maxElements)
    return std::nullopt;
  const std::string &raw = tensor.raw_data();
  bool hasRaw = tensor.has_raw_data();
  bool ok = true;
  switch (tensor.data_type()) {
  case TensorProto::FLOAT: {
    SmallVector<float> v;
    if (hasRaw) {
      ok = readRaw(raw, n, v);
    } else {
      ok = tensor.float_data_size() == n;
      v.assign(tensor.float_data().begin(), tensor.float_data().end());
    }
    out.floats.assign(v.begin(), v.end());
    break;
  }
  case TensorProto::DOUBLE:
    if (hasRaw) {
      ok = readRaw(raw, n, out.floats);
    } else {
      ok = tensor.double_data_size() == n;
      out.floats.assign(tensor.double_data().begin(),
                        tensor.double_data().end());
    }
    break;
  case TensorProto::INT64:
    if (hasRaw) {
      ok = readRaw(raw, n, out.ints);
    } else {
      ok = tensor.int64_data_size() == n;
      out.ints.assign(tensor.int64_data().begin(), tensor.int64_data().end());
    }
    break;
  case TensorProto::INT32: {
    SmallVector<int32_t> v;
    if (hasRaw) {
      ok = readRaw(raw, n, v);
      out.ints.assign(v.begin(), v.end());
    } else {
      ok = tensor.int32_data_size() == n;
      out.ints.assign(tensor.int32_data().begin(), tensor.int32_data().end());
    }
    break;
  }
  default: { // 1- and 2-byte integers and bool: int32_data or raw bytes.
    if (hasRaw) {
      if (tensor.data_type() == TensorProto::INT16) {
        SmallVector<int16_t> v;
        ok = readRaw(raw, n, v);
        out.ints.assign(v.begin(), v.end());
      } else if (tensor.data_type() == TensorProto::INT8) {
        SmallVector<int8_t> v;
        ok = readRaw(raw, n, v);
        out.ints.assign(v.begin(), v.end());
      } else {
        SmallVector<uint8_t> v;
        ok = readRaw(raw, n, v);
        out.ints.assign(v.begin(), v.end());
      }
    } else {
      ok = tensor.int32_data_size() == n;
      out.ints.assign(tensor.int32_data().begin(), tensor.int32_data().end());
    }
    break;
  }
  }
  if (!ok)
    return std::nullopt;
  if (out.dtype == TensorProto::BOOL)
    for (int64_t &v : out.ints)
      v = v != 0;
  return out;
}

void writeSmallTensor(const SmallTensor &value, TensorProto &tensor) {
  tensor.Clear();
  tensor.set_data_type(value.dtype);
  for (int64_t d : value.shape)
    tensor.add_dims(d);
  switch (value.dtype) {
  case TensorProto::FLOAT:
    for (double v : value.floats)
      tensor.add_float_data(float(v));
    break;
  case TensorProto::DOUBLE:
    for (double v : value.floats)
      tensor.add_double_data(v);
    break;
  case TensorProto::INT64:
    for (int64_t v : value.ints)
      tensor.add_int64_data(v);
    break;
  default:
    for (int64_t v : value.ints)
      tensor.add_int32_data(int32_t(v));
    break;
  }
}

/// The static shape of `type`, if it is a tensor type with every dim known.
static std::optional<SmallVector<int64_t>>
staticShape(const onnx::TypeProto &type) {
  if (!type.has_tensor_type() || !type.tensor_type().has_shape())
    return std::nullopt;
  SmallVector<int64_t> shape;
  for (const auto &dim : type.tensor_type().shape().dim()) {
    if (!dim.has_dim_value() || dim.dim_value() < 0)
      return std::nullopt;
    shape.push_back(dim.dim_value());
  }
  return shape;
}

TypeMap collectValueTypes(const onnx::GraphProto &graph) {
  TypeMap types;
  for (const auto &v : graph.input())
    types[v.name()] = &v.type();
  for (const auto &v : graph.value_info())
    types[v.name()] = &v.type();
  for (const auto &v : graph.output())
    types[v.name()] = &v.type();
  return types;
}

ShapeMap collectStaticShapes(const onnx::GraphProto &graph) {
  ShapeMap shapes;
  for (const auto &[name, type] : collectValueTypes(graph))
    if (auto s = staticShape(*type))
      shapes[name] = *s;
  for (const auto &t : graph.initializer())
    shapes[t.name()] = SmallVector<int64_t>(t.dims().begin(), t.dims().end());
  return shapes;
}

} // namespace import
} // namespace distopt
