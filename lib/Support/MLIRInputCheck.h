//===- MLIRInputCheck.h - MLIR's parser and huge numbers --------*- C++ -*-===//
//
// Part of DistOpt. MLIR 22's parser sizes its table of an SSA name's results
// by the result number a use names before it checks the number: `%0#N`
// with N around 2^31 asks for tens of GiB and ends in "LLVM ERROR: out of
// memory" (mlir-opt does the same). The tools scan .mlir text for such
// uses first and report them as an ordinary error. Header-only, so every
// tool that parses .mlir can include it.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_LIB_SUPPORT_MLIRINPUTCHECK_H
#define DIST_LIB_SUPPORT_MLIRINPUTCHECK_H

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace distopt {

/// The largest result number a use may name (`%x#N`); no op has more
/// results.
constexpr unsigned long long kMaxMLIRResultNumber = 1u << 16;

/// "" when every `%name#N` in `text` has N <= kMaxMLIRResultNumber, else
/// "NAME:LINE:COL: result number N in '%x#N' ..." for the first one.
inline std::string checkMLIRResultNumbers(llvm::StringRef text,
                                          llvm::StringRef name) {
  unsigned line = 1;
  size_t lineStart = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\n') {
      ++line;
      lineStart = i + 1;
      continue;
    }
    if (c == '"') { // skip string literals, escapes included
      for (++i; i < text.size() && text[i] != '"' && text[i] != '\n'; ++i)
        if (text[i] == '\\')
          ++i;
      continue;
    }
    if (c != '%')
      continue;
    size_t j = i + 1;
    while (j < text.size() &&
           (llvm::isAlnum(text[j]) || text[j] == '_' || text[j] == '$' ||
            text[j] == '.' || text[j] == '-'))
      ++j;
    if (j == i + 1 || j >= text.size() || text[j] != '#')
      continue;
    size_t k = j + 1;
    while (k < text.size() && llvm::isDigit(text[k]))
      ++k;
    llvm::StringRef digits = text.slice(j + 1, k);
    unsigned long long n = 0;
    if (!digits.empty() && (digits.size() > 18 || digits.getAsInteger(10, n) ||
                            n > kMaxMLIRResultNumber))
      return (name + ":" + llvm::Twine(line) + ":" +
              llvm::Twine(i - lineStart + 1) + ": result number " + digits +
              " in '" + text.slice(i, k) + "' is beyond any operation's " +
              "results (at most " + llvm::Twine(kMaxMLIRResultNumber) +
              "); fix the use")
          .str();
    i = k - 1;
  }
  return "";
}

} // namespace distopt

#endif // DIST_LIB_SUPPORT_MLIRINPUTCHECK_H
