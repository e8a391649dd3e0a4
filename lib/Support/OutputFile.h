//===- OutputFile.h - Checked closing of written files ----------*- C++ -*-===//
//
// Part of DistOpt. A raw_fd_ostream that hit a write error (a full disk,
// /dev/full) aborts the process with "LLVM ERROR: IO failure" when it is
// destroyed unless the error is taken. The tools close every output through
// closeOutput, so a failed write is an error naming the file.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_LIB_SUPPORT_OUTPUTFILE_H
#define DIST_LIB_SUPPORT_OUTPUTFILE_H

#include "llvm/ADT/Twine.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace distopt {

/// Flushes and closes `os`, written to `path`. Returns "" on success, else
/// "cannot write 'PATH': REASON" (and clears the stream's error, so its
/// destructor does not abort).
inline std::string closeOutput(llvm::raw_fd_ostream &os,
                               const llvm::Twine &path) {
  os.close();
  if (!os.has_error())
    return "";
  std::string message =
      "cannot write '" + path.str() + "': " + os.error().message();
  os.clear_error();
  return message;
}

} // namespace distopt

#endif // DIST_LIB_SUPPORT_OUTPUTFILE_H
