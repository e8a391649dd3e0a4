//===- DistDialect.cpp - The distribution dialect --------------*- C++ -*-===//
//
// Part of DistOpt. Dialect registration.
//
//===----------------------------------------------------------------------===//
#include "dialects/Dist/DistDialect.h"
#include "dialects/Dist/DistOps.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

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

