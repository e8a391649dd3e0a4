//===- Toolchain.cpp - Compiling generated programs -------------*- C++ -*-===//
//
// Part of DistOpt. Finds the runtime (headers, libDistRuntime.a and what it
// links against, from the `distrt-link.txt` recipe the runtime's CMake writes
// next to the build's or the install's bin/) and runs the host compiler or
// nvcc on a generated program, through the program cache when
// DIST_COMPILE_CACHE names one.
//
//===----------------------------------------------------------------------===//
#include "lib/Codegen/Codegen.h"
#include "lib/Support/StatusLine.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

using namespace llvm;
using namespace distopt::codegen;

static Error makeError(const Twine &msg) {
  return createStringError(inconvertibleErrorCode(), msg);
}

Expected<Toolchain> distopt::codegen::findToolchain(const char *argv0) {
  std::string recipe;
  if (const char *env = getenv("DIST_RUNTIME_LINK")) {
    recipe = env;
  } else {
    std::string exe = sys::fs::getMainExecutable(argv0, (void *)&findToolchain);
    SmallString<256> p(sys::path::parent_path(sys::path::parent_path(exe)));
    sys::path::append(p, "lib", "distrt-link.txt");
    recipe = std::string(p);
  }
  auto buf = MemoryBuffer::getFile(recipe);
  if (!buf)
    return makeError("cannot read the runtime link recipe '" + recipe + "' (" +
                     buf.getError().message() +
                     "); build the DistRuntime target (it writes the file) or "
                     "set DIST_RUNTIME_LINK to its path");
  Toolchain tc;
  SmallVector<StringRef> lines;
  (*buf)->getBuffer().split(lines, '\n', -1, false);
  bool cuda = false;
  for (StringRef line : lines) {
    auto [key, value] = line.split('=');
    if (key == "include")
      tc.includeDir = value.str();
    else if (key == "library")
      tc.library = value.str();
    else if (key == "cpu_library")
      tc.cpuLibrary = value.str();
    else if (key == "link")
      tc.libs.push_back(value.str());
    else if (key == "cuda_link")
      tc.cudaLibs.push_back(value.str());
    else if (key == "cuda")
      cuda = value == "1";
    else if (key == "nvcc" && !value.empty())
      tc.nvcc = value.str();
  }
  if (tc.includeDir.empty() || tc.library.empty() || tc.cpuLibrary.empty())
    return makeError("runtime link recipe '" + recipe +
                     "' lacks include=, library= or cpu_library=; rebuild "
                     "DistRuntime");
  if (!cuda)
    tc.nvcc.clear();
  if (const char *cxx = getenv("DIST_CXX"))
    tc.cxx = cxx;
  if (const char *nvcc = getenv("DIST_NVCC"))
    tc.nvcc = nvcc;
  if (const char *opt = getenv("DIST_OPT_LEVEL"))
    tc.optLevel = opt;
  return tc;
}

/// "NAME (SIZE of C++)" of a generated source file.
static std::string describeSource(StringRef path) {
  uint64_t bytes = 0;
  sys::fs::file_size(path, bytes);
  std::string size = bytes >= (1u << 20)
                         ? formatv("{0:F1} MiB", bytes / 1048576.0).str()
                         : formatv("{0} KiB", (bytes + 1023) / 1024).str();
  return (sys::path::filename(path) + " (" + size + " of C++)").str();
}

/// Runs the compiler: the program, or with `compileOnly` its object file.
static Error compileProgram(const Toolchain &tc, const CodegenOptions &options,
                            StringRef sourcePath, StringRef output,
                            bool compileOnly, bool verbose) {
  bool cuda = options.target == Target::CUDA;
  std::string compiler = cuda ? tc.nvcc : tc.cxx;
  if (compiler.empty())
    return makeError("--target=cuda needs a runtime built with the CUDA "
                     "backend (nvcc found at configure time); this runtime is "
                     "CPU-only. Reconfigure with nvcc on PATH and "
                     "-DDIST_ENABLE_CUDA=ON");
  auto prog = sys::findProgramByName(compiler);
  if (!prog)
    return makeError("cannot find the compiler '" + compiler + "'; set " +
                     (cuda ? "DIST_NVCC" : "DIST_CXX") + " to its path");
  // nvcc applies `-x cu` to every later file, the library too: compile the
  // CUDA source to an object first, then link that.
  if (cuda && !compileOnly) {
    SmallString<128> obj;
    if (auto ec = sys::fs::createTemporaryFile("dist-compile", "o", obj))
      return makeError("cannot create a temporary object file: " +
                       ec.message());
    if (Error e = compileProgram(tc, options, sourcePath, obj, true, verbose))
      return e;
    std::vector<std::string> link = {*prog, std::string(obj)};
    for (const std::string &arch : tc.cudaArchs)
      link.push_back("-gencode=arch=compute_" + arch + ",code=[sm_" + arch +
                     ",compute_" + arch + "]");
    link.push_back(tc.library);
    std::vector<std::string> libs = tc.cudaLibs;
    libs.insert(libs.end(), tc.libs.begin(), tc.libs.end());
    for (const std::string &l : libs) {
      if (StringRef(l).starts_with("-Wl,"))
        link.push_back("-Xlinker=" + l.substr(4));
      else if (l == "-fopenmp")
        link.push_back("-lgomp");
      else
        link.push_back(l);
    }
    link.insert(link.end(), {"-o", output.str()});
    if (verbose) {
      for (const std::string &a : link)
        errs() << a << " ";
      errs() << "\n";
    }
    SmallVector<StringRef> refs(link.begin(), link.end());
    std::string errMsg;
    int rc = distopt::runShowing(*prog, refs, {}, "dist-compile",
                                 "linking the CUDA program with " + compiler,
                                 errMsg);
    sys::fs::remove(obj);
    if (rc != 0)
      return makeError("linking the generated CUDA program with " + compiler +
                       " failed (exit " + Twine(rc) +
                       "); rerun with -v to "
                       "see the command");
    return Error::success();
  }
  std::vector<std::string> args = {*prog, "-std=c++17", tc.optLevel,
                                   "-I" + tc.includeDir};
  if (cuda) {
    args.insert(args.end(), {"--extended-lambda", "-x", "cu", "-w"});
    for (const std::string &arch : tc.cudaArchs)
      args.push_back("-gencode=arch=compute_" + arch + ",code=[sm_" + arch +
                     ",compute_" + arch + "]");
    args.push_back("-Xcompiler=-fopenmp");
  } else {
    // No errno from math calls and no floating-point traps: the generated
    // code reads neither errno nor the exception flags. With errno, GCC
    // calls sqrt out of line and vectorizes no loop that has one; with
    // traps, it does not if-convert a select on a float comparison (the
    // float fast paths of distrt/gen/Scalar.h). Neither changes a result.
    args.insert(args.end(),
                {"-fopenmp", "-fno-math-errno", "-fno-trapping-math", "-w"});
  }
  args.push_back(sourcePath.str());
  if (compileOnly) {
    args.insert(args.end(), {"-c", "-o", output.str()});
  } else {
    args.push_back(tc.cpuLibrary);
    args.insert(args.end(), tc.libs.begin(), tc.libs.end());
    args.insert(args.end(), {"-o", output.str()});
  }
  if (verbose) {
    for (const std::string &a : args)
      errs() << a << " ";
    errs() << "\n";
  }
  SmallVector<StringRef> refs(args.begin(), args.end());
  std::string errMsg;
  int rc = distopt::runShowing(
      *prog, refs, {}, "dist-compile",
      "compiling " + describeSource(sourcePath) + " with " + compiler, errMsg);
  if (rc != 0)
    return makeError("compiling the generated program '" + sourcePath +
                     "' with " + compiler + " failed (exit " + Twine(rc) +
                     (errMsg.empty() ? "" : ", " + errMsg) +
                     "); rerun with -v to see the command, --emit-source to "
                     "keep the source");
  return Error::success();
}

//===----------------------------------------------------------------------===//
// The program cache (DIST_COMPILE_CACHE)
//===----------------------------------------------------------------------===//

/// Adds a file's bytes to the key; false when it cannot be read.
static bool hashFile(SHA256 &h, StringRef path) {
  auto buf = MemoryBuffer::getFile(path, /*IsText=*/false,
                                   /*RequiresNullTerminator=*/false);
  if (!buf)
    return false;
  h.update((*buf)->getBuffer());
  return true;
}

/// The cache key of a build: everything its result depends on. The source,
/// the target and the flags; the bytes of the runtime archives and of every
/// runtime header; the compiler's path, size and time. Empty when one of
/// them cannot be read (then nothing is cached).
static std::string cacheKey(const Toolchain &tc, const CodegenOptions &options,
                            StringRef sourcePath, bool compileOnly) {
  bool cuda = options.target == Target::CUDA;
  SHA256 h;
  h.update("distopt program cache 1");
  h.update(cuda ? "cuda" : "cpu");
  h.update(compileOnly ? "object" : "program");
  // Not the source's path: dist-compile writes it to a fresh temporary file.
  std::string compiler = cuda ? tc.nvcc : tc.cxx;
  auto prog = sys::findProgramByName(compiler);
  sys::fs::file_status st;
  if (!prog || sys::fs::status(*prog, st))
    return "";
  h.update(
      *prog + "|" + std::to_string(st.getSize()) + "|" +
      std::to_string(st.getLastModificationTime().time_since_epoch().count()));
  for (const std::string *s : {&tc.optLevel, &tc.includeDir})
    h.update(*s + "\n");
  for (const auto *list : {&tc.libs, &tc.cudaLibs, &tc.cudaArchs})
    for (const std::string &s : *list)
      h.update(s + "\n");
  if (!hashFile(h, sourcePath) || !hashFile(h, tc.cpuLibrary) ||
      (cuda && !hashFile(h, tc.library)))
    return "";
  std::error_code ec;
  std::vector<std::string> headers;
  for (sys::fs::recursive_directory_iterator it(tc.includeDir, ec), end;
       it != end && !ec; it.increment(ec))
    if (it->type() == sys::fs::file_type::regular_file)
      headers.push_back(it->path());
  if (ec)
    return "";
  llvm::sort(headers);
  for (const std::string &path : headers) {
    h.update(path);
    if (!hashFile(h, path))
      return "";
  }
  return toHex(h.final(), /*LowerCase=*/true);
}

Error distopt::codegen::buildExecutable(const Toolchain &tc,
                                        const CodegenOptions &options,
                                        StringRef sourcePath, StringRef output,
                                        bool compileOnly, bool verbose) {
  const char *dir = getenv("DIST_COMPILE_CACHE");
  std::string key =
      dir && *dir ? cacheKey(tc, options, sourcePath, compileOnly) : "";
  if (key.empty())
    return compileProgram(tc, options, sourcePath, output, compileOnly,
                          verbose);
  SmallString<256> entry(dir);
  sys::path::append(entry, key);
  // A hit: the bytes an identical build wrote before.
  if (!sys::fs::copy_file(entry, output)) {
    sys::fs::setPermissions(output, sys::fs::all_read | sys::fs::all_write |
                                        sys::fs::all_exe);
    if (verbose)
      errs() << "dist-compile: the program cache holds this build (" << entry
             << ")\n";
    return Error::success();
  }
  if (Error e =
          compileProgram(tc, options, sourcePath, output, compileOnly, verbose))
    return e;
  // Stored under a temporary name and renamed, so that concurrent builds
  // never read half an entry. A cache that cannot be written only costs
  // the next build its time.
  if (sys::fs::create_directories(dir))
    return Error::success();
  SmallString<256> tmp(entry);
  tmp += ".tmp" + std::to_string(sys::Process::getProcessId());
  if (!sys::fs::copy_file(output, tmp) && sys::fs::rename(tmp, entry))
    sys::fs::remove(tmp);
  return Error::success();
}
