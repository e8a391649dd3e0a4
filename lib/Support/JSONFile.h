//===- JSONFile.h - Reading a file as JSON ----------------------*- C++ -*-===//
//
// Part of DistOpt. Every tool and library that reads a JSON file (a plan
// report, a job manifest, a profile database, a trace) reads it through
// readJSONFile, so a missing file or a parse error says the same thing
// everywhere: the file, what it was read for, and where parsing failed.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_LIB_SUPPORT_JSONFILE_H
#define DIST_LIB_SUPPORT_JSONFILE_H

#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

namespace distopt {

/// Reads `path` and parses it as JSON. `what` says what the file was read
/// for (an option, "the job's manifest") and starts the error, which is
///   WHAT: 'PATH' cannot be read: REASON
///   WHAT: 'PATH' is not JSON: [LINE:COLUMN, byte=OFFSET]: PROBLEM
/// Callers append what to do about it.
llvm::Expected<llvm::json::Value> readJSONFile(const llvm::Twine &path,
                                               const llvm::Twine &what);

} // namespace distopt

#endif // DIST_LIB_SUPPORT_JSONFILE_H
