//===- InputChoice.cpp - The model's input per sample -----------*- C++ -*-===//
//
// Part of DistOpt. --dist-input of dist-search-plan and dist-simulate,
// checked once against the cluster (docs/cost-model.md, "Data stalls").
//
//===----------------------------------------------------------------------===//
#include "passes/Planning/Planning.h"

using namespace mlir;
using namespace distopt;
using namespace distopt::planning;

FailureOr<std::optional<sim::InputSpec>>
planning::inputChoice(ModuleOp module, const cluster::Cluster &cluster,
                      StringRef input, schedule::Mode mode) {
  if (input.empty())
    return std::optional<sim::InputSpec>();
  llvm::Expected<sim::InputSpec> spec = sim::parseInputSpec(input);
  if (!spec)
    return emitError(module.getLoc())
           << "bad --dist-input='" << input
           << "': " << llvm::toString(spec.takeError());
  if (mode != schedule::Mode::Train)
    return emitError(module.getLoc())
           << "--dist-input models the input pipeline of training "
              "iterations; drop it for an inference plan";
  if (!cluster.input)
    return emitError(module.getLoc())
           << "--dist-input needs the nodes' input side, and cluster '"
           << cluster.name
           << "' has none: add an 'input:' section (storage_read_GBps, "
              "page_cache_GB, cpu_cores_per_device) to its YAML, or use a "
              "preset that has one (dgx-a100-80gb, dgx-h100, dgx-v100, "
              "aws-p3-spot, ...); see docs/cost-model.md, \"Data stalls\"";
  return std::optional<sim::InputSpec>(*spec);
}
