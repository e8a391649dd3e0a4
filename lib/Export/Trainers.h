//===- Trainers.h - Plans as the configurations of other trainers ---------===//
//
// Part of DistOpt. A plan written as the configuration of the trainers
// people run -- Megatron-LM's command-line arguments, a torchtitan TOML job
// file, a DeepSpeed JSON config -- and a Megatron-LM configuration read back
// as a plan. The option names are those of each project's source (the
// versions `test/fixtures/trainers/` pins). What a plan holds that a trainer
// cannot express (PipeDream's weight stashing, per-stage replicas, a stage
// boundary inside a transformer block) is never written as something the
// trainer would misread: it is a note, in the file as a comment where the
// format has comments, and on stderr.
//
// Trainers count transformer blocks, the planner counts cost-model layers
// (half blocks: attention, then the MLP). Blocks maps one onto the other.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_LIB_EXPORT_TRAINERS_H
#define DISTOPT_LIB_EXPORT_TRAINERS_H

#include "lib/Cost/ModelDesc.h"
#include "lib/Schedule/Plan.h"

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace distopt::exporting {

enum class Trainer { Megatron, Torchtitan, DeepSpeed };

llvm::StringRef trainerName(Trainer t);
/// "megatron", "torchtitan" or "deepspeed".
bool parseTrainer(llvm::StringRef name, Trainer &out);

/// "TRAINER[:FILE]": the trainer and the file (empty when not given).
struct TrainerSpec {
  Trainer trainer;
  std::string file;
};
llvm::Expected<TrainerSpec> parseTrainerSpec(llvm::StringRef spec);

/// The file an export goes to when the spec names none.
llvm::StringRef defaultExportFile(Trainer t);

/// The transformer blocks among a model's cost-model layers
/// (cost::transformerBlocks, which the layer analysis checkpoints). A block
/// starts at a layer with attention (a softmax, or a fused attention); it
/// runs up to the next such layer, and the last one for as many layers as
/// the blocks before it have (the layers after it are the head). Layers
/// before the first block are the embedding.
struct Blocks {
  /// First layer of every block.
  std::vector<unsigned> first;
  /// First layer after the last block (the head); numLayers without one.
  unsigned headBegin = 0;
  unsigned numLayers = 0;

  static Blocks of(const cost::ModelDesc &model);
  unsigned size() const { return first.size(); }
  /// The blocks that start in layers [begin, end).
  unsigned blocksIn(unsigned begin, unsigned end) const;
  /// Whether a stage may start at \p layer in a trainer's terms: the first
  /// layer of a block, or the head.
  bool isBoundary(unsigned layer) const;
  /// The first layer of block \p b (headBegin for b == size()).
  unsigned layerOfBlock(unsigned b) const;
};

/// The plans a trainer runs as DistOpt plans them, for a search whose plan
/// will be exported: its pipeline schedules, and the most model chunks per
/// rank and context-parallel ranks it runs (0: no limit). Per-stage
/// replicas no trainer here runs.
struct TrainerSpace {
  std::vector<schedule::ScheduleKind> schedules;
  unsigned maxChunks = 0;
  unsigned maxCp = 0;
  /// The ZeRO stages it runs as planned (empty: all). Megatron-LM's
  /// distributed optimizer is ZeRO-1 (ZeRO-2/3 are Megatron-FSDP, which
  /// pipelines may not run); torchtitan's FSDP2 has no ZeRO-1.
  std::vector<unsigned> zero;
};
TrainerSpace trainerSpace(Trainer t);

/// \p model with each of \p blocks' blocks one layer (and the embedding
/// and the head one layer each), so that a search on it starts stages only
/// where a trainer can; \p firstLayer receives each new layer's first
/// layer of \p model, and then the layer count of \p model.
cost::ModelDesc modelByBlocks(const cost::ModelDesc &model,
                              const Blocks &blocks,
                              std::vector<unsigned> &firstLayer);

/// A configuration file's text and what it could not say.
struct Export {
  std::string text;
  /// One sentence each: what of the plan the trainer does not run as
  /// DistOpt planned it.
  std::vector<std::string> notes;
};

/// \p plan (finalized) as \p trainer's configuration for \p model, whose
/// name and parameter count head the file. Fails when the trainer cannot
/// run the plan at all (an inference plan, a pipeline over a model without
/// transformer blocks for Megatron-LM and torchtitan).
llvm::Expected<Export> exportPlan(Trainer trainer, const schedule::Plan &plan,
                                  const cost::ModelDesc &model);

/// A trainer's configuration read as a plan (not finalized): degrees,
/// micro-batch, schedule, stages, recomputation, sharding, dtype.
struct ImportedPlan {
  schedule::Plan plan;
  /// The global batch the configuration trains with (0 when it gives none).
  unsigned globalBatch = 0;
  /// What the configuration sets that the plan approximates.
  std::vector<std::string> notes;
};

/// Reads \p trainer's configuration \p text (named \p file in messages) as
/// a plan for \p model on \p devices devices (the data-parallel degree is
/// what the other degrees leave of them).
llvm::Expected<ImportedPlan> importPlan(Trainer trainer, llvm::StringRef text,
                                        llvm::StringRef file,
                                        const cost::ModelDesc &model,
                                        unsigned devices);

} // namespace distopt::exporting

#endif // DISTOPT_LIB_EXPORT_TRAINERS_H
