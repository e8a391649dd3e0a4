//===- Launcher.h - Starting ranks on this machine --------------*- C++ -*-===//
//
// Part of DistOpt. The mpirun command line dist-run and dist-profile start
// ranks with: `mpirun [--allow-run-as-root] --oversubscribe -np N -x
// OMP_NUM_THREADS`, the program and its arguments to follow.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_LIB_SUPPORT_LAUNCHER_H
#define DIST_LIB_SUPPORT_LAUNCHER_H

#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/Program.h"

#include <string>
#include <unistd.h>
#include <vector>

namespace distopt {

/// The launcher's part of a command that starts \p ranks ranks here:
/// \p mpirun (empty: mpirun on PATH) with the options every local job
/// needs. An error says how to install or name the launcher.
inline llvm::Expected<std::vector<std::string>>
mpirunCommand(const std::string &mpirun, unsigned ranks) {
  std::string path = mpirun;
  if (path.empty()) {
    llvm::ErrorOr<std::string> found = llvm::sys::findProgramByName("mpirun");
    if (!found)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "mpirun was not found on PATH; install Open MPI (openmpi-bin, "
          "scripts/install-deps.sh) or pass --mpirun=PATH");
    path = *found;
  }
  std::vector<std::string> cmd = {path};
  if (geteuid() == 0)
    cmd.push_back("--allow-run-as-root");
  cmd.insert(cmd.end(), {"--oversubscribe", "-np", std::to_string(ranks), "-x",
                         "OMP_NUM_THREADS"});
  return cmd;
}

} // namespace distopt

#endif // DIST_LIB_SUPPORT_LAUNCHER_H
