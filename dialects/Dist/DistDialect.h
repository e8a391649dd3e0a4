//===- DistDialect.h - The distribution dialect -----------------*- C++ -*-===//
//
// Part of DistOpt.
//
//===----------------------------------------------------------------------===//
#ifndef DIALECTS_DIST_DISTDIALECT_H
#define DIALECTS_DIST_DISTDIALECT_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"

#include "mlir/IR/DialectImplementation.h"

namespace distopt::dist {
/// Parses `[e, e, ...]` (possibly empty) of attribute or integer elements.
template <typename T>
mlir::FailureOr<llvm::SmallVector<T>> parseBracketList(mlir::AsmParser &parser) {
  llvm::SmallVector<T> elements;
  if (parser.parseCommaSeparatedList(
          mlir::AsmParser::Delimiter::Square, [&]() -> mlir::ParseResult {
            mlir::FailureOr<T> element = mlir::FieldParser<T>::parse(parser);
            if (mlir::failed(element))
              return mlir::failure();
            elements.push_back(*element);
            return mlir::success();
          }))
    return mlir::failure();
  return elements;
}

/// Prints `[e, e, ...]`; attributes in their full `#dist.x<...>` form.
template <typename T>
void printBracketList(mlir::AsmPrinter &printer, llvm::ArrayRef<T> elements) {
  printer << '[';
  llvm::interleaveComma(elements, printer, [&](const T &element) {
    if constexpr (std::is_base_of_v<mlir::Attribute, T>)
      printer.printAttribute(element);
    else
      printer << element;
  });
  printer << ']';
}
} // namespace distopt::dist

#include "dialects/Dist/DistDialect.h.inc"
#include "dialects/Dist/DistEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Dist/DistAttrs.h.inc"

#endif // DIALECTS_DIST_DISTDIALECT_H
