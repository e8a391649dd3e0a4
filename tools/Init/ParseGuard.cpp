//===- ParseGuard.cpp - MLIR parser vs forward references -------*- C++ -*-===//
//
// Part of DistOpt. Implements ParseGuard.h.
//
//===----------------------------------------------------------------------===//
#include "tools/Init/ParseGuard.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <csignal>
#include <optional>
#include <sys/wait.h>
#include <unistd.h>

using namespace mlir;

static bool isNameChar(char c) {
  return llvm::isAlnum(c) || c == '_' || c == '$' || c == '.' || c == '-';
}

bool distopt::hasBlockHeader(StringRef text) {
  for (size_t i = 0, n = text.size(); i < n; ++i) {
    char c = text[i];
    if (c == '"') { // string literals, escapes included
      for (++i; i < n && text[i] != '"'; ++i)
        if (text[i] == '\\')
          ++i;
      continue;
    }
    if (c == '/' && i + 1 < n && text[i + 1] == '/') { // comments
      while (i < n && text[i] != '\n')
        ++i;
      continue;
    }
    if (c != '^')
      continue;
    size_t j = i + 1;
    while (j < n && isNameChar(text[j]))
      ++j;
    // Any block name: `^bb1(` and `^bb1:` are headers, and a name followed
    // by anything else (`^bb0x-y @`) is one the parser fails on, freeing
    // the region as it does after a bad header. A branch's `^bb1` counts
    // too, which only makes the answer conservative (text with branches
    // has headers).
    if (j > i + 1)
      return true;
    i = j - 1;
  }
  return false;
}

LogicalResult distopt::checkParseInChild(StringRef text, StringRef bufferName,
                                         const DialectRegistry &registry,
                                         bool allowUnregistered, bool quiet) {
  if (!hasBlockHeader(text))
    return success();
  llvm::errs().flush();
  pid_t pid = fork();
  if (pid < 0) // no child to spare: parse here, as mlir-opt would
    return success();
  if (pid == 0) {
    // The child only parses: a crash here is the defect itself, and the
    // parent reports the parse as failed; the tools' crash handlers
    // (dist-fuzz saves crashing inputs) must not see it.
    for (int sig : {SIGSEGV, SIGFPE, SIGABRT, SIGBUS, SIGILL, SIGTRAP})
      signal(sig, SIG_DFL);
    MLIRContext context(registry, MLIRContext::Threading::DISABLED);
    context.allowUnregisteredDialects(allowUnregistered);
    llvm::SourceMgr sourceMgr;
    sourceMgr.AddNewSourceBuffer(
        llvm::MemoryBuffer::getMemBuffer(text, bufferName,
                                         /*RequiresNullTerminator=*/false),
        llvm::SMLoc());
    std::optional<SourceMgrDiagnosticHandler> print;
    std::optional<ScopedDiagnosticHandler> swallow;
    if (quiet)
      swallow.emplace(&context, [](Diagnostic &) { return success(); });
    else
      print.emplace(sourceMgr, &context);
    bool parsed = static_cast<bool>(
        parseSourceFile<ModuleOp>(sourceMgr, ParserConfig(&context)));
    llvm::errs().flush();
    _exit(parsed ? 0 : 1);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      return success();
  if (WIFSIGNALED(status) && !quiet)
    llvm::errs() << bufferName << ": error: MLIR's parser crashed on this "
                 << "text (signal " << WTERMSIG(status) << ", in a process "
                 << "that only parses it); fix the errors above, if any\n";
  return success(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}
