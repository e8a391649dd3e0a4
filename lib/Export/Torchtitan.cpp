//===- Torchtitan.cpp - Plans as torchtitan job files ---------------------===//
//
// Part of DistOpt. A torchtitan job file (TOML, read by `--job.config_file`)
// in the option names of torchtitan 0.2.2, the last release that reads TOML
// (test/fixtures/trainers/torchtitan-options.txt); schedule names are those
// torch.distributed.pipelining's get_schedule_class resolves
// (torch-pipeline-schedules.txt). Stages are written as
// module_fqns_per_model_part in the module names of torchtitan's decoder
// models (tok_embeddings, layers.N, norm, output).
//
//===----------------------------------------------------------------------===//
#include "lib/Export/TrainersImpl.h"

using namespace llvm;
using namespace distopt;
using namespace distopt::exporting;
using schedule::ScheduleKind;

/// torchtitan's schedule for \p plan, with a note when it is not the same.
static std::string scheduleOf(const schedule::Plan &plan,
                              std::vector<std::string> &notes) {
  bool looped = plan.chunks > 1;
  auto instead = [&](StringRef name) {
    notes.push_back(("torchtitan has no '" +
                     schedule::scheduleName(plan.schedule) +
                     "' schedule; written as " + name +
                     ", whose bubble and memory differ from the prediction")
                        .str());
    return name.str();
  };
  switch (plan.schedule) {
  case ScheduleKind::GPipe:
    return looped ? "LoopedBFS" : "GPipe";
  case ScheduleKind::OneFOneB:
    return "1F1B";
  case ScheduleKind::Interleaved:
    return "Interleaved1F1B";
  case ScheduleKind::ZBH1:
  case ScheduleKind::ZBH2:
    return looped ? (plan.schedule == ScheduleKind::ZBH1
                         ? std::string("InterleavedZeroBubble")
                         : instead("InterleavedZeroBubble"))
                  : instead("1F1B");
  case ScheduleKind::ZBV:
    return "ZBVZeroBubble";
  case ScheduleKind::DualPipeV:
    return "DualPipeV";
  case ScheduleKind::VHalf:
  case ScheduleKind::VMin:
    return instead("ZBVZeroBubble");
  case ScheduleKind::PipeDream:
  case ScheduleKind::PipeDream2BW:
  case ScheduleKind::PipeMare:
    return instead(looped ? "Interleaved1F1B" : "1F1B");
  }
  return "1F1B";
}

/// The module names of virtual stage \p v holding blocks [b0, b1).
static std::string stageModules(unsigned v, unsigned stages, unsigned b0,
                                unsigned b1) {
  std::string s = "[";
  auto item = [&](const std::string &name) {
    s += (s.size() > 1 ? ", \"" : "\"") + name + "\"";
  };
  if (v == 0)
    item("tok_embeddings");
  for (unsigned b = b0; b < b1; ++b)
    item("layers." + std::to_string(b));
  if (v + 1 == stages) {
    item("norm");
    item("output");
  }
  return s + "]";
}

Expected<Export> exporting::exportTorchtitan(const schedule::Plan &plan,
                                             const cost::ModelDesc &model) {
  Export out;
  out.notes = unsupportedCommon(plan, "torchtitan");
  Expected<Blocks> found = pipelinedBlocks(plan, model, "torchtitan");
  if (!found)
    return found.takeError();
  Blocks blocks = std::move(*found);

  std::string par, ac, train;
  raw_string_ostream p(par), a(ac), t(train);
  // FSDP2 is torchtitan's data parallelism; ZeRO-0 replicates (DDP).
  if (plan.zero == 0) {
    p << "data_parallel_replicate_degree = " << plan.dp << "\n"
      << "data_parallel_shard_degree = 1\n";
  } else {
    p << "data_parallel_replicate_degree = 1\n"
      << "data_parallel_shard_degree = " << plan.dp << "\n";
    if (plan.zero < 3)
      p << "fsdp_reshard_after_forward = \"never\"\n";
    if (plan.zero == 1)
      out.notes.push_back("torchtitan shards with FSDP2: ZeRO-1 is written as "
                          "FSDP without resharding after the forward "
                          "(ZeRO-2: gradients sharded too)");
  }
  p << "tensor_parallel_degree = " << plan.tp << "\n";
  if (plan.tp > 1 && !plan.sp)
    out.notes.push_back("torchtitan's tensor parallelism always runs "
                        "sequence parallel (the plan does not: sp=0)");
  if (plan.tpOverlap)
    p << "enable_async_tensor_parallel = true\n";
  p << "context_parallel_degree = " << plan.cp << "\n"
    << "expert_parallel_degree = " << plan.ep << "\n"
    << "pipeline_parallel_degree = " << plan.pp << "\n";
  if (plan.pp > 1) {
    p << "pipeline_parallel_schedule = \"" << scheduleOf(plan, out.notes)
      << "\"\n"
      << "pipeline_parallel_microbatch_size = " << plan.mbs << "\n";
    std::vector<unsigned> counts = blocksPerStage(plan, blocks, out.notes);
    p << "module_fqns_per_model_part = [\n";
    unsigned b = 0;
    for (unsigned v = 0; v < counts.size(); ++v) {
      p << "    " << stageModules(v, counts.size(), b, b + counts[v]) << ",\n";
      b += counts[v];
    }
    p << "]\n";
  } else if (plan.schedule != ScheduleKind::OneFOneB &&
             plan.schedule != ScheduleKind::GPipe) {
    (void)scheduleOf(plan, out.notes);
  }

  switch (plan.recompute) {
  case cost::Recompute::None:
    a << "mode = \"none\"\n";
    break;
  case cost::Recompute::Selective:
    a << "mode = \"selective\"\nselective_ac_option = \"op\"\n";
    break;
  case cost::Recompute::Full:
    a << "mode = \"full\"\n";
    break;
  }

  // Without a pipeline a replica's micro-batches are gradient
  // accumulation steps of local_batch_size each; with one, local_batch_size
  // is the replica's share, cut into pipeline micro-batches.
  unsigned local = plan.pp > 1 ? plan.mbs * plan.numMicrobatches : plan.mbs;
  t << "local_batch_size = " << local << "\n"
    << "global_batch_size = " << plan.globalBatch << "\n";
  switch (plan.dtype) {
  case cluster::DType::BF16:
    t << "mixed_precision_param = \"bfloat16\"\n";
    break;
  case cluster::DType::F8:
    t << "mixed_precision_param = \"bfloat16\"\n";
    out.notes.push_back("fp8 matmuls: enable torchtitan's float8 model "
                        "converter for the linear layers (not written here)");
    break;
  case cluster::DType::F16:
    t << "mixed_precision_param = \"bfloat16\"\n";
    out.notes.push_back("torchtitan trains in bfloat16 or float32, not "
                        "float16: written as bfloat16");
    break;
  default:
    t << "mixed_precision_param = \"float32\"\n";
    break;
  }
  if (!plan.overlapGradSync && plan.dp > 1)
    out.notes.push_back("torchtitan always overlaps the gradient reduction "
                        "with the backward (the plan does not)");

  std::string &s = out.text;
  s = header(plan, model, "#");
  s += "# torchtitan 0.2.2 job file: torchrun ... -m torchtitan.train "
       "--job.config_file THIS.toml\n"
       "# (merge it with your model's [model] and [optimizer] sections). "
       "Launch on " +
       std::to_string(plan.numDevices()) + " GPUs.\n";
  if (plan.pp > 1)
    s += "# Stages name the modules of torchtitan's decoder models "
         "(tok_embeddings, layers.N, norm, output).\n";
  appendNotes(s, out.notes, "#");
  s += "\n[parallelism]\n" + par + "\n[activation_checkpoint]\n" + ac +
       "\n[training]\n" + train;
  return out;
}
