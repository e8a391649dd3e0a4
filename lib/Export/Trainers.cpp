//===- Trainers.cpp - Plans as the configurations of other trainers -------===//
//
// Part of DistOpt.
//
//===----------------------------------------------------------------------===//
#include "lib/Export/TrainersImpl.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace llvm;
using namespace distopt;
using namespace distopt::exporting;

StringRef exporting::trainerName(Trainer t) {
  switch (t) {
  case Trainer::Megatron:
    return "megatron";
  case Trainer::Torchtitan:
    return "torchtitan";
  case Trainer::DeepSpeed:
    return "deepspeed";
  }
  return "?";
}

bool exporting::parseTrainer(StringRef name, Trainer &out) {
  std::optional<Trainer> t = StringSwitch<std::optional<Trainer>>(name)
                                 .Case("megatron", Trainer::Megatron)
                                 .Case("torchtitan", Trainer::Torchtitan)
                                 .Case("deepspeed", Trainer::DeepSpeed)
                                 .Default(std::nullopt);
  if (!t)
    return false;
  out = *t;
  return true;
}

Expected<TrainerSpec> exporting::parseTrainerSpec(StringRef spec) {
  auto [name, file] = spec.split(':');
  TrainerSpec out{Trainer::Megatron, file.str()};
  if (!parseTrainer(name, out.trainer))
    return createStringError(inconvertibleErrorCode(),
                             "unknown trainer '" + name +
                                 "': expected megatron, torchtitan or "
                                 "deepspeed (TRAINER[:FILE])");
  if (spec.contains(':') && file.empty())
    return createStringError(inconvertibleErrorCode(),
                             "'" + spec + "' names no file after ':'");
  return out;
}

StringRef exporting::defaultExportFile(Trainer t) {
  switch (t) {
  case Trainer::Megatron:
    return "megatron-args.sh";
  case Trainer::Torchtitan:
    return "torchtitan.toml";
  case Trainer::DeepSpeed:
    return "ds_config.json";
  }
  return "plan.txt";
}

TrainerSpace exporting::trainerSpace(Trainer t) {
  using K = schedule::ScheduleKind;
  switch (t) {
  case Trainer::Megatron:
    return {{K::OneFOneB, K::Interleaved}, 0, 0, {0, 1}};
  case Trainer::Torchtitan:
    return {
        {K::GPipe, K::OneFOneB, K::Interleaved, K::ZBH1, K::ZBV, K::DualPipeV},
        0,
        0,
        {0, 2, 3}};
  case Trainer::DeepSpeed:
    return {{K::OneFOneB, K::GPipe}, 1, 1, {}};
  }
  return {};
}

Blocks Blocks::of(const cost::ModelDesc &model) {
  Blocks b;
  b.numLayers = model.layers.size();
  b.first = cost::transformerBlocks(model, b.headBegin);
  return b;
}

unsigned Blocks::blocksIn(unsigned begin, unsigned end) const {
  return llvm::count_if(first,
                        [&](unsigned l) { return l >= begin && l < end; });
}

bool Blocks::isBoundary(unsigned layer) const {
  return layer == headBegin || llvm::is_contained(first, layer);
}

unsigned Blocks::layerOfBlock(unsigned b) const {
  return b < first.size() ? first[b] : headBegin;
}

cost::ModelDesc exporting::modelByBlocks(const cost::ModelDesc &model,
                                         const Blocks &blocks,
                                         std::vector<unsigned> &firstLayer) {
  firstLayer.clear();
  if (blocks.first.empty() || blocks.first.front() > 0)
    firstLayer.push_back(0);
  for (unsigned b = 0; b < blocks.size(); ++b)
    firstLayer.push_back(blocks.first[b]);
  if (blocks.headBegin < blocks.numLayers && blocks.size())
    firstLayer.push_back(blocks.headBegin);
  cost::ModelDesc out = model;
  out.layers.clear();
  for (unsigned i = 0; i < firstLayer.size(); ++i) {
    unsigned end =
        i + 1 < firstLayer.size() ? firstLayer[i + 1] : blocks.numLayers;
    cost::LayerDesc merged;
    merged.name = model.layers[firstLayer[i]].name;
    merged.checkpoint = false;
    for (unsigned l = firstLayer[i]; l < end; ++l) {
      const cost::LayerDesc &layer = model.layers[l];
      llvm::append_range(merged.ops, layer.ops);
      merged.boundaryBytes = layer.boundaryBytes;
      merged.checkpoint |= layer.checkpoint;
    }
    out.layers.push_back(std::move(merged));
  }
  firstLayer.push_back(blocks.numLayers);
  return out;
}

Expected<Blocks> exporting::pipelinedBlocks(const schedule::Plan &plan,
                                            const cost::ModelDesc &model,
                                            StringRef trainer) {
  Blocks blocks = Blocks::of(model);
  if (plan.pp > 1 && blocks.size() == 0)
    return createStringError(
        inconvertibleErrorCode(),
        trainer + " pipelines transformer layers, and the model has no "
                  "attention layer: export this plan with "
                  "--dist-export=deepspeed, or plan without pipeline "
                  "parallelism");
  return blocks;
}

std::vector<unsigned>
exporting::blocksPerStage(const schedule::Plan &plan, const Blocks &blocks,
                          std::vector<std::string> &notes) {
  unsigned stages = plan.pp * plan.chunks;
  std::vector<unsigned> counts;
  bool rounded = false;
  for (unsigned v = 0; v < stages; ++v) {
    auto [begin, end] = plan.stageLayers(v, blocks.numLayers);
    rounded |= v > 0 && !blocks.isBoundary(begin);
    counts.push_back(blocks.blocksIn(begin, end));
  }
  if (rounded)
    notes.push_back(
        "the plan starts a stage inside a transformer block (between its "
        "attention and its MLP); the trainer places whole blocks, so each "
        "such stage starts at the block that begins in it");
  return counts;
}

std::vector<std::string>
exporting::unsupportedCommon(const schedule::Plan &plan, StringRef trainer) {
  std::vector<std::string> notes;
  if (plan.replicated())
    notes.push_back(("per-stage replicas (replicas=...) have no " + trainer +
                     " equivalent: every stage gets dp replicas")
                        .str());
  if (plan.unevenBatch)
    notes.push_back(("uneven micro-batch counts per replica (uneven=1) have "
                     "no " +
                     trainer + " equivalent: every replica gets the same share")
                        .str());
  if (plan.offload.any())
    notes.push_back(
        ("offload=" + plan.offload.str() +
         " (ZeRO-Offload / ZeRO-Infinity) is not written into the " + trainer +
         " configuration, which keeps every state on the device; "
         "set the trainer's offload options by hand")
            .str());
  return notes;
}

Expected<Export> exporting::exportPlan(Trainer trainer,
                                       const schedule::Plan &plan,
                                       const cost::ModelDesc &model) {
  if (plan.mode != schedule::Mode::Train)
    return createStringError(inconvertibleErrorCode(),
                             "an inference plan has no " +
                                 trainerName(trainer) +
                                 " configuration: export a training plan "
                                 "(--dist-mode=train)");
  switch (trainer) {
  case Trainer::Megatron:
    return exportMegatron(plan, model);
  case Trainer::Torchtitan:
    return exportTorchtitan(plan, model);
  case Trainer::DeepSpeed:
    return exportDeepSpeed(plan, model);
  }
  llvm_unreachable("every trainer is handled");
}

Expected<ImportedPlan> exporting::importPlan(Trainer trainer, StringRef text,
                                             StringRef file,
                                             const cost::ModelDesc &model,
                                             unsigned devices) {
  switch (trainer) {
  case Trainer::Megatron:
    return importMegatron(text, file, model, devices);
  case Trainer::Torchtitan:
  case Trainer::DeepSpeed:
    break;
  }
  return createStringError(inconvertibleErrorCode(),
                           "reading a " + trainerName(trainer) +
                               " configuration as a plan is not supported; "
                               "--dist-plan-from reads megatron:ARGS_FILE");
}

std::string exporting::header(const schedule::Plan &plan,
                              const cost::ModelDesc &model, StringRef comment) {
  std::string s;
  raw_string_ostream os(s);
  os << comment << " Written by DistOpt (--dist-export) for model '"
     << model.name << "' (" << formatv("{0:F1}", model.paramCount() / 1e6)
     << "M parameters, " << model.layers.size() << " cost-model layers).\n"
     << comment << " DistOpt plan: " << plan.str() << ", global batch "
     << plan.globalBatch << " (" << plan.numMicrobatches << " micro-batches of "
     << plan.mbs << " per data-parallel replica).\n";
  return s;
}

void exporting::appendNotes(std::string &text,
                            const std::vector<std::string> &notes,
                            StringRef comment) {
  for (const std::string &n : notes)
    text += (comment + " not as planned: " + n + "\n").str();
}
