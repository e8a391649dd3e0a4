//===- Codegen.h - C++ / CUDA C++ code generation from graph IR -*- C++ -*-===//
//
// Part of DistOpt. Turns `func.func`s of graph-dialect ops into the source of
// a program that calls the kernel runtime (runtime/include/distrt/distrt.h)
// plus generated loops for what the runtime lacks, and builds it into an
// executable with the host compiler or nvcc. docs/codegen.md has the design.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_LIB_CODEGEN_CODEGEN_H
#define DIST_LIB_CODEGEN_CODEGEN_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace distopt::codegen {

enum class Target { CPU, CUDA };

struct CodegenOptions {
  Target target = Target::CPU;
};

/// One model of a program: its `main` function and where it came from.
struct ModelUnit {
  std::string name;      ///< selects it at run time (`--model NAME`)
  std::string source;    ///< the file it was compiled from
  std::string modelDir;  ///< weight files are relative to this folder
  mlir::ModuleOp module; ///< holds `func.func @main`
  /// The function to compile (a training step from dist-autodiff is
  /// `train_step`); empty: `main`, or the module's only function.
  std::string funcName;
};

/// Emits the whole program (one `run` per model and `main`). Failures are
/// reported as diagnostics on the offending op. With `skipped`, a model that
/// cannot be lowered is left out (its name recorded) instead of failing the
/// program; it still fails when no model is left.
mlir::LogicalResult emitProgram(llvm::ArrayRef<ModelUnit> models,
                                const CodegenOptions &options,
                                llvm::raw_ostream &os,
                                std::vector<std::string> *skipped = nullptr);

/// Emits one model: namespace `ns` with its specs and `run`.
mlir::LogicalResult emitModel(const ModelUnit &model, llvm::StringRef ns,
                              const CodegenOptions &options,
                              llvm::raw_ostream &os);

/// Why dist-compile cannot build `funcName` of `module` (a dry run of
/// emitModel that writes nothing): the location and message of the first op
/// without a lowering, or nullopt when every op lowers. Diagnostics of the
/// dry run are not reported.
std::optional<std::pair<mlir::Location, std::string>>
findUnsupported(mlir::ModuleOp module, llvm::StringRef funcName);

/// Writes the manifest of a job (`dist-compile -o DIR/`, read by dist-run):
/// the program's file name in the job folder, how many ranks it needs (null:
/// any, a data-parallel program over the launched world), and per model its
/// plan, inputs and, for a planned pipeline, what each rank runs and owns
/// (JobManifest.cpp; docs/cli.md, "Jobs"). \p compileArgs, run in
/// \p compileDir, are the dist-compile arguments that built it without its
/// output, with which dist-run --elastic compiles the job again for fewer
/// ranks.
void writeJobManifest(llvm::ArrayRef<ModelUnit> models, llvm::StringRef program,
                      llvm::ArrayRef<std::string> compileArgs,
                      llvm::StringRef compileDir, llvm::raw_ostream &os);

/// Where the runtime library and headers are, and how to compile.
struct Toolchain {
  std::string cxx = "c++";       ///< host compiler (DIST_CXX overrides)
  std::string nvcc = "nvcc";     ///< CUDA compiler (DIST_NVCC overrides)
  std::string includeDir;        ///< holds distrt/distrt.h
  std::string library;           ///< libDistRuntime.a, every backend
  /// The archive without the CUDA backend, which CPU programs link: the
  /// CUDA libraries cost a program 220 MB of memory as they load.
  std::string cpuLibrary;
  std::vector<std::string> libs;     ///< what either archive links against
  std::vector<std::string> cudaLibs; ///< what the CUDA backend adds
  std::vector<std::string> cudaArchs = {"80", "90"};
  std::string optLevel = "-O2";
  /// Where the runtime's program header, precompiled, lives (the recipe's
  /// `pch=`; empty: none): DIR/distrt/distrt_gen.h.gch beside its stamp.
  std::string headerCacheDir;
};

/// The toolchain dist-compile was built with (build tree), or the install
/// tree next to the executable at `argv0`; DIST_RUNTIME_DIR overrides.
llvm::Expected<Toolchain> findToolchain(const char *argv0);

/// Precompiles the runtime's program header (distrt/distrt_gen.h, which
/// every generated CPU program includes first) into `tc.headerCacheDir`,
/// with the flags CPU programs are compiled with, and stamps it with what
/// it was built from (compiler, flags, the runtime headers). A CPU program
/// then reads it instead of parsing the headers (the build runs this:
/// `dist-compile --precompile-runtime-header`).
llvm::Error precompileRuntimeHeader(const Toolchain &tc, bool verbose);

/// Compiles `sourcePath` into the executable `output`. `compileOnly` stops
/// after the object file (CI check of the CUDA path without linking). With
/// DIST_COMPILE_CACHE=DIR, a build whose source, flags, compiler, runtime
/// archives and runtime headers are all the same as an earlier one's copies
/// that build's result from DIR instead of compiling.
llvm::Error buildExecutable(const Toolchain &tc, const CodegenOptions &options,
                            llvm::StringRef sourcePath, llvm::StringRef output,
                            bool compileOnly, bool verbose);

} // namespace distopt::codegen

#endif // DIST_LIB_CODEGEN_CODEGEN_H
