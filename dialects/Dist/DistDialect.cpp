//===- DistDialect.cpp - The distribution dialect --------------*- C++ -*-===//
//
// Part of DistOpt. Dialect registration and attribute verifiers.
//
//===----------------------------------------------------------------------===//
#include "dialects/Dist/DistDialect.h"
#include "dialects/Dist/DistOps.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/CheckedArithmetic.h"

using namespace mlir;
using namespace distopt::dist;

#include "dialects/Dist/DistDialect.cpp.inc"
#include "dialects/Dist/DistEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Dist/DistAttrs.cpp.inc"

void DistDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/Dist/DistOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/Dist/DistAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// Attribute verifiers
//===----------------------------------------------------------------------===//

LogicalResult
DeviceKindAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                       StringRef name, int64_t memory, APFloat bandwidthF,
                       DictionaryAttr flops) {
  double bandwidth = bandwidthF.convertToDouble();
  if (name.empty())
    return emitError() << "device kind needs a non-empty name";
  if (memory <= 0)
    return emitError() << "device kind '" << name
                       << "' needs a positive memory size, got " << memory;
  if (!(bandwidth > 0))
    return emitError() << "device kind '" << name
                       << "' needs a positive memory bandwidth";
  if (flops.empty())
    return emitError() << "device kind '" << name
                       << "' needs peak FLOP/s for at least one element type";
  for (NamedAttribute entry : flops) {
    auto value = dyn_cast<FloatAttr>(entry.getValue());
    if (!value || !(value.getValueAsDouble() > 0))
      return emitError() << "device kind '" << name << "' peak FLOP/s for '"
                         << entry.getName().getValue()
                         << "' must be a positive float";
  }
  return success();
}

LogicalResult LinkAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               StringRef name, int64_t span, APFloat bandwidthF,
                               APFloat latencyF) {
  double bandwidth = bandwidthF.convertToDouble();
  double latency = latencyF.convertToDouble();
  if (span < 1)
    return emitError() << "link level '" << name
                       << "' must span at least one device, got " << span;
  if (!(bandwidth > 0))
    return emitError() << "link level '" << name
                       << "' needs a positive bandwidth";
  if (latency < 0)
    return emitError() << "link level '" << name
                       << "' cannot have a negative latency";
  return success();
}

LogicalResult
DeviceGroupAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                        int64_t first, int64_t count, StringRef kind) {
  if (first < 0)
    return emitError() << "device group cannot start at a negative device "
                       << "number, got " << first;
  if (count < 1)
    return emitError() << "device group needs at least one device, got "
                       << count;
  return success();
}

LogicalResult ClusterAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                  StringRef name,
                                  ArrayRef<DeviceKindAttr> kinds,
                                  ArrayRef<DeviceGroupAttr> groups,
                                  ArrayRef<LinkAttr> links) {
  llvm::StringSet<> kindNames;
  for (DeviceKindAttr kind : kinds)
    if (!kindNames.insert(kind.getName()).second)
      return emitError() << "cluster '" << name << "' names device kind '"
                         << kind.getName() << "' twice";
  if (groups.empty())
    return emitError() << "cluster '" << name << "' has no devices";
  int64_t next = 0;
  for (DeviceGroupAttr group : groups) {
    if (group.getFirst() != next)
      return emitError() << "cluster '" << name
                         << "' device groups must number devices "
                            "consecutively: expected a group starting at "
                         << next << ", got " << group.getFirst();
    if (!kindNames.contains(group.getKind()))
      return emitError() << "cluster '" << name << "' device group uses "
                         << "unknown device kind '" << group.getKind() << "'";
    next += group.getCount();
  }
  for (size_t i = 1; i < links.size(); ++i)
    if (links[i].getSpan() % links[i - 1].getSpan() != 0)
      return emitError() << "cluster '" << name << "' link level '"
                         << links[i].getName() << "' must span a multiple of "
                         << "the devices of level '" << links[i - 1].getName()
                         << "'";
  return success();
}

int64_t ClusterAttr::getNumDevices() const {
  int64_t total = 0;
  for (DeviceGroupAttr group : getGroups())
    total += group.getCount();
  return total;
}

DeviceKindAttr ClusterAttr::getKindOf(int64_t id) const {
  for (DeviceGroupAttr group : getGroups()) {
    if (id < group.getFirst() || id >= group.getFirst() + group.getCount())
      continue;
    for (DeviceKindAttr kind : getKinds())
      if (kind.getName() == group.getKind())
        return kind;
  }
  return {};
}

LogicalResult MeshAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               ArrayRef<int64_t> shape,
                               ArrayRef<int64_t> devices) {
  if (shape.empty())
    return emitError() << "mesh needs at least one axis";
  int64_t size = 1;
  for (int64_t dim : shape) {
    if (dim < 1)
      return emitError() << "mesh axes must have at least one device, got "
                         << dim;
    std::optional<int64_t> next = llvm::checkedMul(size, dim);
    if (!next)
      return emitError() << "mesh of shape with more positions than int64 "
                            "holds";
    size = *next;
  }
  if (size != static_cast<int64_t>(devices.size()))
    return emitError() << "mesh of shape with " << size << " positions lists "
                       << devices.size() << " devices";
  llvm::DenseSet<int64_t> seen;
  for (int64_t device : devices) {
    if (device < 0)
      return emitError() << "mesh device numbers must be non-negative, got "
                         << device;
    if (!seen.insert(device).second)
      return emitError() << "mesh lists device " << device << " twice";
  }
  return success();
}
