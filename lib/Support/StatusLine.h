//===- StatusLine.h - What a tool waits for, on a terminal ------*- C++ -*-===//
//
// Part of DistOpt. Long steps of dist-compile (the host compiler) and
// dist-profile (compiling and timing the model, measuring links) run other
// programs. On a terminal the tool shows what it waits for and for how
// long, `tool: what, N s`, one line redrawn each second and cleared when
// the program ends; elsewhere (logs, tests) nothing.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_LIB_SUPPORT_STATUSLINE_H
#define DIST_LIB_SUPPORT_STATUSLINE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <optional>
#include <string>
#include <thread>

namespace distopt {

/// Waits for \p pi (from ExecuteNoWait) and returns its exit status (-2 when
/// it crashed); \p err gets the reason when the wait failed. On a terminal
/// shows `tool: what, N s` meanwhile.
inline int waitShowing(const llvm::sys::ProcessInfo &pi, llvm::StringRef tool,
                       const llvm::Twine &what, std::string &err) {
  if (!llvm::errs().is_displayed())
    return llvm::sys::Wait(pi, std::nullopt, &err).ReturnCode;
  std::string line = (tool + ": " + what).str();
  auto start = std::chrono::steady_clock::now();
  for (long shown = -1;;) {
    long seconds = static_cast<long>(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count());
    if (seconds != shown) {
      llvm::errs() << "\r\033[K" << line << ", " << seconds << " s";
      llvm::errs().flush();
      shown = seconds;
    }
    // A non-blocking wait, every 0.1 s.
    llvm::sys::ProcessInfo done = llvm::sys::Wait(pi, 0, &err);
    if (done.Pid != 0) {
      llvm::errs() << "\r\033[K";
      llvm::errs().flush();
      return done.ReturnCode;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

/// llvm::sys::ExecuteAndWait with waitShowing's line: the exit status, or
/// -1 (and \p err) when \p prog could not start.
inline int runShowing(llvm::StringRef prog,
                      llvm::ArrayRef<llvm::StringRef> args,
                      llvm::ArrayRef<std::optional<llvm::StringRef>> redirects,
                      llvm::StringRef tool, const llvm::Twine &what,
                      std::string &err) {
  bool failed = false;
  llvm::sys::ProcessInfo pi = llvm::sys::ExecuteNoWait(
      prog, args, std::nullopt, redirects, 0, &err, &failed);
  if (failed)
    return -1;
  return waitShowing(pi, tool, what, err);
}

} // namespace distopt

#endif // DIST_LIB_SUPPORT_STATUSLINE_H
