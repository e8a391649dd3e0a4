//===- Toolchain.cpp - Compiling generated programs -------------*- C++ -*-===//
//
// Part of DistOpt. Finds the runtime (headers, libDistRuntime.a and what it
// links against, from the `distrt-link.txt` recipe the runtime's CMake writes
// next to the build's or the install's bin/) and runs the host compiler or
// nvcc on a generated program, through the program cache when
// DIST_COMPILE_CACHE names one, and with the runtime's program header
// precompiled by the build where it fits.
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
    else if (key == "pch")
      tc.headerCacheDir = value.str();
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

/// Adds a file's bytes to a hash; false when it cannot be read.
static bool hashFile(SHA256 &h, StringRef path) {
  auto buf = MemoryBuffer::getFile(path, /*IsText=*/false,
                                   /*RequiresNullTerminator=*/false);
  if (!buf)
    return false;
  h.update((*buf)->getBuffer());
  return true;
}

/// The flags of a CPU program's compile, which its precompiled header must
/// share. No errno from math calls and no floating-point traps: the
/// generated code reads neither errno nor the exception flags. With errno,
/// GCC calls sqrt out of line and vectorizes no loop that has one; with
/// traps, it does not if-convert a select on a float comparison (the float
/// fast paths of distrt/gen/Scalar.h). Neither changes a result.
static std::vector<std::string> cpuFlags(const Toolchain &tc) {
  return {"-std=c++17",      tc.optLevel,          "-fopenmp",
          "-fno-math-errno", "-fno-trapping-math", "-w"};
}

/// "PATH|SIZE|MTIME" of the compiler `compiler` names, or empty when it
/// cannot be found: a rebuilt or replaced compiler is another compiler.
static std::string compilerIdentity(StringRef compiler) {
  auto prog = sys::findProgramByName(compiler);
  sys::fs::file_status st;
  if (!prog || sys::fs::status(*prog, st))
    return "";
  return *prog + "|" + std::to_string(st.getSize()) + "|" +
         std::to_string(
             st.getLastModificationTime().time_since_epoch().count());
}

/// Adds every runtime header, under `includeDir`/distrt (path relative to
/// `includeDir`, and bytes), to `h` in a fixed order; false when one cannot
/// be read. Not the rest of `includeDir`: an installed runtime shares it.
static bool hashRuntimeHeaders(SHA256 &h, StringRef includeDir) {
  std::error_code ec;
  std::vector<std::string> headers;
  SmallString<256> root(includeDir);
  sys::path::append(root, "distrt");
  for (sys::fs::recursive_directory_iterator it(root, ec), end;
       it != end && !ec; it.increment(ec))
    if (it->type() == sys::fs::file_type::regular_file)
      headers.push_back(it->path());
  if (ec)
    return false;
  llvm::sort(headers);
  for (const std::string &path : headers) {
    StringRef rel = path;
    rel.consume_front(includeDir);
    h.update(rel);
    if (!hashFile(h, path))
      return false;
  }
  return true;
}

/// What a precompiled runtime header was built from: the compiler, the CPU
/// flags and the runtime headers' bytes (hex SHA-256); empty when one of
/// them cannot be read.
static std::string headerStamp(const Toolchain &tc) {
  std::string compiler = compilerIdentity(tc.cxx);
  if (compiler.empty())
    return "";
  SHA256 h;
  h.update("distopt runtime header 1\n" + compiler + "\n");
  for (const std::string &flag : cpuFlags(tc))
    h.update(flag + "\n");
  if (!hashRuntimeHeaders(h, tc.includeDir))
    return "";
  return toHex(h.final(), /*LowerCase=*/true);
}

/// The header a generated program includes first, the file GCC reads
/// instead when it is precompiled, and that file's stamp.
static constexpr const char *kProgramHeader = "distrt/distrt_gen.h";

static std::string headerCachePath(const Toolchain &tc, StringRef suffix) {
  SmallString<256> p(tc.headerCacheDir);
  sys::path::append(p, kProgramHeader);
  return (p + suffix).str();
}

/// The stamp's text: what the header was built from (headerStamp) and the
/// precompiled file's size, so that a cut file is not read (GCC stops
/// with "cannot read PCH file" on one).
static std::string stampText(StringRef built, uint64_t size) {
  return (built + " " + Twine(size) + "\n").str();
}

/// True when `tc.headerCacheDir` holds the program header precompiled from
/// these headers with this compiler and these flags, whole. GCC looks for
/// DIR/distrt/distrt_gen.h.gch in each include folder before the header
/// itself, so -I DIR ahead of the runtime's headers makes it read that.
static bool precompiledHeaderFits(const Toolchain &tc) {
  uint64_t size = 0;
  if (tc.headerCacheDir.empty() ||
      sys::fs::file_size(headerCachePath(tc, ".gch"), size))
    return false;
  auto stamp = MemoryBuffer::getFile(headerCachePath(tc, ".stamp"));
  if (!stamp)
    return false;
  std::string built = headerStamp(tc);
  return !built.empty() && (*stamp)->getBuffer() == stampText(built, size);
}

/// Writes `text` to `path` through a temporary file and a rename, so that
/// a concurrent reader sees the old file or the new one.
static Error writeAtomically(StringRef path, StringRef text) {
  std::string tmp = (path + ".tmp" + Twine(sys::Process::getProcessId())).str();
  std::error_code ec;
  {
    raw_fd_ostream os(tmp, ec);
    if (!ec)
      os << text;
  }
  if (!ec)
    ec = sys::fs::rename(tmp, path);
  if (ec) {
    sys::fs::remove(tmp);
    return makeError("cannot write '" + path + "': " + ec.message());
  }
  return Error::success();
}

/// Runs the compiler `prog` with `args` (its own path first), printing the
/// command under -v, with a status line saying what it is `doing`; returns
/// its exit code, `errMsg` set where it could not run.
static int runCompiler(StringRef prog, ArrayRef<std::string> args, bool verbose,
                       const Twine &doing, std::string &errMsg) {
  if (verbose) {
    for (const std::string &a : args)
      errs() << a << " ";
    errs() << "\n";
  }
  SmallVector<StringRef> refs(args.begin(), args.end());
  return distopt::runShowing(prog, refs, {}, "dist-compile", doing, errMsg);
}

Error distopt::codegen::precompileRuntimeHeader(const Toolchain &tc,
                                                bool verbose) {
  if (tc.headerCacheDir.empty())
    return makeError("the runtime link recipe names no folder for the "
                     "precompiled header (pch=); rebuild DistRuntime");
  std::string stamp = headerStamp(tc);
  if (stamp.empty())
    return makeError("cannot read the compiler '" + tc.cxx +
                     "' or the runtime headers under '" + tc.includeDir + "'");
  auto prog = sys::findProgramByName(tc.cxx);
  std::string gch = headerCachePath(tc, ".gch");
  if (std::error_code ec =
          sys::fs::create_directories(sys::path::parent_path(gch)))
    return makeError("cannot create '" + sys::path::parent_path(gch) +
                     "': " + ec.message());
  // The old stamp goes first: a header half replaced is never stamped.
  sys::fs::remove(headerCachePath(tc, ".stamp"));
  std::string tmp = (gch + ".tmp" + Twine(sys::Process::getProcessId())).str();
  SmallString<256> header(tc.includeDir);
  sys::path::append(header, kProgramHeader);
  std::vector<std::string> args = {*prog, "-I" + tc.includeDir};
  for (std::string &flag : cpuFlags(tc))
    args.push_back(std::move(flag));
  args.insert(args.end(), {"-x", "c++-header", std::string(header), "-o", tmp});
  std::string errMsg;
  int rc = runCompiler(*prog, args, verbose,
                       "precompiling " + Twine(kProgramHeader), errMsg);
  if (rc != 0) {
    sys::fs::remove(tmp);
    return makeError("precompiling '" + header + "' with " + tc.cxx +
                     " failed (exit " + Twine(rc) +
                     (errMsg.empty() ? "" : ", " + errMsg) + ")");
  }
  uint64_t size = 0;
  if (std::error_code ec = sys::fs::file_size(tmp, size))
    return makeError("cannot read '" + tmp + "': " + ec.message());
  if (std::error_code ec = sys::fs::rename(tmp, gch)) {
    sys::fs::remove(tmp);
    return makeError("cannot write '" + gch + "': " + ec.message());
  }
  return writeAtomically(headerCachePath(tc, ".stamp"), stampText(stamp, size));
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
      else if (StringRef(l).starts_with("-fuse-ld="))
        link.push_back("-Xcompiler=" + l); // the host compiler links
      else
        link.push_back(l);
    }
    link.insert(link.end(), {"-o", output.str()});
    std::string errMsg;
    int rc = runCompiler(*prog, link, verbose,
                         "linking the CUDA program with " + compiler, errMsg);
    sys::fs::remove(obj);
    if (rc != 0)
      return makeError("linking the generated CUDA program with " + compiler +
                       " failed (exit " + Twine(rc) +
                       "); rerun with -v to "
                       "see the command");
    return Error::success();
  }
  std::vector<std::string> args = {*prog};
  if (cuda) {
    args.insert(args.end(), {"-std=c++17", tc.optLevel, "-I" + tc.includeDir,
                             "--extended-lambda", "-x", "cu", "-w"});
    for (const std::string &arch : tc.cudaArchs)
      args.push_back("-gencode=arch=compute_" + arch + ",code=[sm_" + arch +
                     ",compute_" + arch + "]");
    args.push_back("-Xcompiler=-fopenmp");
  } else {
    // The program header precompiled, where it fits, is read in place of
    // the runtime's headers (the same bytes, parsed once by the build).
    if (precompiledHeaderFits(tc)) {
      args.push_back("-I" + tc.headerCacheDir);
      if (verbose)
        errs() << "dist-compile: reading " << kProgramHeader << " precompiled ("
               << headerCachePath(tc, ".gch") << ")\n";
    }
    args.push_back("-I" + tc.includeDir);
    for (std::string &flag : cpuFlags(tc))
      args.push_back(std::move(flag));
  }
  args.push_back(sourcePath.str());
  if (compileOnly) {
    args.insert(args.end(), {"-c", "-o", output.str()});
  } else {
    args.push_back(tc.cpuLibrary);
    args.insert(args.end(), tc.libs.begin(), tc.libs.end());
    args.insert(args.end(), {"-o", output.str()});
  }
  std::string errMsg;
  int rc = runCompiler(
      *prog, args, verbose,
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

/// The cache key of a build: everything its result depends on. The source,
/// the target and the flags; the bytes of the runtime archives and of every
/// runtime header; the compiler's path, size and time. Empty when one of
/// them cannot be read (then nothing is cached).
static std::string cacheKey(const Toolchain &tc, const CodegenOptions &options,
                            StringRef sourcePath, bool compileOnly) {
  bool cuda = options.target == Target::CUDA;
  SHA256 h;
  h.update("distopt program cache 2");
  h.update(cuda ? "cuda" : "cpu");
  h.update(compileOnly ? "object" : "program");
  // Not the source's path: dist-compile writes it to a fresh temporary file.
  std::string compiler = compilerIdentity(cuda ? tc.nvcc : tc.cxx);
  if (compiler.empty())
    return "";
  h.update(compiler);
  for (const std::string *s : {&tc.optLevel, &tc.includeDir})
    h.update(*s + "\n");
  for (const auto *list : {&tc.libs, &tc.cudaLibs, &tc.cudaArchs})
    for (const std::string &s : *list)
      h.update(s + "\n");
  if (!hashFile(h, sourcePath) || !hashFile(h, tc.cpuLibrary) ||
      (cuda && !hashFile(h, tc.library)) ||
      !hashRuntimeHeaders(h, tc.includeDir))
    return "";
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
