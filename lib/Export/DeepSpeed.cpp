//===- DeepSpeed.cpp - Plans as DeepSpeed configs -------------------------===//
//
// Part of DistOpt. A DeepSpeed JSON config in the keys of DeepSpeed 0.19.8
// (test/fixtures/trainers/deepspeed-keys.txt). What DeepSpeed takes in
// Python rather than in its config -- the pipeline's stage count and
// partition (PipelineModule), activation checkpointing of each block -- is
// written under the top-level key "distopt", which DeepSpeed ignores, with
// the plan and the notes: JSON has no comments.
//
//===----------------------------------------------------------------------===//
#include "lib/Export/TrainersImpl.h"

#include "llvm/Support/JSON.h"

using namespace llvm;
using namespace distopt;
using namespace distopt::exporting;
using schedule::ScheduleKind;

Expected<Export> exporting::exportDeepSpeed(const schedule::Plan &plan,
                                            const cost::ModelDesc &model) {
  Export out;
  out.notes = unsupportedCommon(plan, "DeepSpeed");
  json::Object cfg;
  cfg["train_batch_size"] = plan.globalBatch;
  cfg["train_micro_batch_size_per_gpu"] = plan.mbs;
  cfg["gradient_accumulation_steps"] = plan.numMicrobatches;

  json::Object zero{{"stage", plan.zero}};
  if (plan.zero >= 1)
    zero["overlap_comm"] = plan.overlapGradSync;
  if (plan.pp > 1 && plan.zero >= 2)
    out.notes.push_back("DeepSpeed's pipeline engine runs ZeRO stage 0 or 1 "
                        "only: ZeRO-" +
                        std::to_string(plan.zero) +
                        " with pp > 1 fails there; plan with zero<=1");
  cfg["zero_optimization"] = std::move(zero);
  switch (plan.dtype) {
  case cluster::DType::BF16:
    cfg["bf16"] = json::Object{{"enabled", true}};
    break;
  case cluster::DType::F16:
    cfg["fp16"] = json::Object{{"enabled", true}};
    break;
  case cluster::DType::F8:
    cfg["bf16"] = json::Object{{"enabled", true}};
    out.notes.push_back("fp8 matmuls are not a DeepSpeed config setting "
                        "(Transformer Engine layers in the model): written "
                        "as bf16");
    break;
  default:
    break;
  }
  if (plan.tp > 1) {
    json::Object tp{{"autotp_size", plan.tp}};
    if (plan.tpOverlap)
      tp["tp_overlap_comm"] = true;
    cfg["tensor_parallel"] = std::move(tp);
    if (plan.sp)
      out.notes.push_back("Megatron sequence parallelism (sp=1) has no "
                          "DeepSpeed AutoTP setting");
  }
  if (plan.cp > 1)
    out.notes.push_back("context parallelism (cp=" + std::to_string(plan.cp) +
                        ") has no DeepSpeed config setting");
  if (plan.ep > 1)
    out.notes.push_back("expert parallelism (ep=" + std::to_string(plan.ep) +
                        ") is set where the MoE layers are built "
                        "(deepspeed.moe.layer.MoE(ep_size=...)), not in the "
                        "config");
  if (plan.recompute != cost::Recompute::None)
    cfg["activation_checkpointing"] =
        json::Object{{"partition_activations", false},
                     {"contiguous_memory_optimization", false},
                     {"cpu_checkpointing", false}};

  // What DeepSpeed takes in Python.
  json::Object dist;
  dist["plan"] = plan.str();
  dist["devices"] = static_cast<int64_t>(plan.numDevices());
  if (plan.pp > 1) {
    Blocks blocks = Blocks::of(model);
    json::Array layers;
    // DeepSpeed's stages are contiguous, one per rank.
    if (blocks.size() && plan.chunks == 1)
      for (unsigned c : blocksPerStage(plan, blocks, out.notes))
        layers.push_back(c);
    bool asPlanned =
        plan.chunks == 1 && (plan.schedule == ScheduleKind::OneFOneB ||
                             plan.schedule == ScheduleKind::GPipe);
    if (!asPlanned)
      out.notes.push_back(
          ("DeepSpeed's pipeline runs 1F1B with one stage per rank; the '" +
           schedule::scheduleName(plan.schedule) + "' schedule" +
           (plan.chunks > 1
                ? " and its " + std::to_string(plan.chunks) + " chunks per rank"
                : std::string()) +
           " are not run as planned")
              .str());
    json::Object pipe{{"num_stages", plan.pp},
                      {"python", "PipelineModule(layers=..., num_stages=" +
                                     std::to_string(plan.pp) +
                                     ", partition_method=...)"}};
    if (!layers.empty())
      pipe["transformer_layers_per_stage"] = std::move(layers);
    if (plan.recompute == cost::Recompute::Full)
      pipe["activation_checkpoint_interval"] = 1;
    dist["pipeline"] = std::move(pipe);
  }
  if (plan.recompute == cost::Recompute::Full)
    dist["recompute"] = "wrap each transformer layer's forward in "
                        "deepspeed.checkpointing.checkpoint";
  else if (plan.recompute == cost::Recompute::Selective)
    dist["recompute"] = "checkpoint the attention core of each layer "
                        "(deepspeed.checkpointing.checkpoint)";
  json::Array notes;
  for (const std::string &n : out.notes)
    notes.push_back("not as planned: " + n);
  dist["notes"] = std::move(notes);
  dist["model"] = model.name;
  cfg["distopt"] = std::move(dist);
  out.text = formatv("{0:2}", json::Value(std::move(cfg))).str() + "\n";
  return out;
}
