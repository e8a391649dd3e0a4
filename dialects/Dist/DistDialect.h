//===- DistDialect.h - The distribution dialect -----------------*- C++ -*-===//
//
// Part of DistOpt. The dialect, its enums and attributes. The attribute
// parameters reuse the MLIR-free cost core's own types (cluster::DType,
// schedule::ScheduleKind, cost::Recompute, schedule::Plan), so IR and
// planner share one definition of each.
//
//===----------------------------------------------------------------------===//
#ifndef DIALECTS_DIST_DISTDIALECT_H
#define DIALECTS_DIST_DISTDIALECT_H

#include "lib/Cluster/Cluster.h"
#include "lib/Cost/CostModel.h"
#include "lib/Schedule/Plan.h"
#include "lib/Schedule/RankLayout.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/DialectImplementation.h"

#include "dialects/Dist/DistEnums.h.inc"

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

/// `true` or `false`.
mlir::FailureOr<bool> parseBoolKeyword(mlir::AsmParser &parser);

/// The cost core's enums in the IR: a schedule as the string the command
/// line uses (`"1f1b"`, `"zb-h1"`), the others as keywords (`selective`,
/// `bf16`, `infer`).
mlir::FailureOr<schedule::ScheduleKind>
parseScheduleKind(mlir::AsmParser &parser);
void printScheduleKind(mlir::AsmPrinter &printer, schedule::ScheduleKind k);
mlir::FailureOr<cost::Recompute> parseRecompute(mlir::AsmParser &parser);
void printRecompute(mlir::AsmPrinter &printer, cost::Recompute r);
mlir::FailureOr<cost::Optimizer> parseOptimizer(mlir::AsmParser &parser);
void printOptimizer(mlir::AsmPrinter &printer, cost::Optimizer o);
/// An offload set as a string ("opt+params"; cost::parseOffload's form).
mlir::FailureOr<cost::Offload> parseOffload(mlir::AsmParser &parser);
void printOffload(mlir::AsmPrinter &printer, const cost::Offload &o);
mlir::FailureOr<cluster::DType> parseDType(mlir::AsmParser &parser);
void printDType(mlir::AsmPrinter &printer, cluster::DType t);
mlir::FailureOr<schedule::Mode> parseMode(mlir::AsmParser &parser);
void printMode(mlir::AsmPrinter &printer, schedule::Mode m);
mlir::FailureOr<schedule::InferObjective>
parseObjective(mlir::AsmParser &parser);
void printObjective(mlir::AsmPrinter &printer, schedule::InferObjective o);
} // namespace distopt::dist

#define GET_ATTRDEF_CLASSES
#include "dialects/Dist/DistAttrs.h.inc"

#include "dialects/Dist/DistDialect.h.inc"

#endif // DIALECTS_DIST_DISTDIALECT_H
