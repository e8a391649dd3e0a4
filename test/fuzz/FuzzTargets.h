//===- FuzzTargets.h - The inputs DistOpt fuzzes ----------------*- C++ -*-===//
//
// Part of DistOpt. One entry per reader of hostile input: the ONNX importer
// (and the planner on what it imports), the .mlir parser and verifiers (and
// the planner), the cluster YAML reader and the .npy reader of generated
// programs. Each target runs one input and returns normally whatever the
// input is (an error is a normal outcome); a crash, hang or sanitizer
// report is a defect. docs/reliability.md describes the campaign.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_TEST_FUZZ_FUZZTARGETS_H
#define DIST_TEST_FUZZ_FUZZTARGETS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace distopt::fuzz {

using Rng = std::mt19937_64;

/// Whether an input was accepted or refused with an error (both fine).
enum class Outcome { Accepted, Refused };

struct Target {
  const char *name;
  /// File name suffix of its inputs (".onnx", ".mlir", ".yaml", ".npy").
  const char *suffix;
  Outcome (*run)(llvm::StringRef input);
  /// Structure-aware mutation of `input` in place (the driver adds byte
  /// and text mutations around it).
  void (*mutate)(std::string &input, Rng &rng);
  /// Seeds of its own when the seed folders give none of this type.
  std::vector<std::string> (*builtinSeeds)();
};

Outcome runONNX(llvm::StringRef input);
void mutateONNX(std::string &input, Rng &rng);
Outcome runMLIR(llvm::StringRef input);
Outcome runCluster(llvm::StringRef input);
Outcome runNpy(llvm::StringRef input);
/// Megatron-LM arguments read as a plan (lib/Export), exported back.
Outcome runMegatron(llvm::StringRef input);
std::vector<std::string> clusterSeeds();
std::vector<std::string> npySeeds();

/// Text mutations shared by the text formats: a number replaced by an
/// extreme one, a line duplicated, deleted or swapped, a token repeated.
void mutateText(std::string &input, Rng &rng);

/// Values that break size arithmetic, as text.
llvm::ArrayRef<const char *> interestingNumbers();

/// Every target, by name.
llvm::ArrayRef<Target> targets();

/// --max-memory: the address space the inputs may use, in MiB.
extern unsigned long long maxMemoryMiB;

/// Programs (C++ or CUDA sources) the onnx and mlir targets printed so far:
/// the summary reports it, so a stage that stops reaching the printer shows.
extern unsigned long long programsGenerated;

} // namespace distopt::fuzz

#endif // DIST_TEST_FUZZ_FUZZTARGETS_H
