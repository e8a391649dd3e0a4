//===- Planning.h - What the planning passes share ---------------*- C++ -*-===//
//
// Part of DistOpt. The planning passes read their inputs from the module
// (the cluster, the layers, the plan) and write their results back into
// it; these helpers do the reading and writing, so every pass sees the
// same function, the same cost-model description and the same cluster.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_PASSES_PLANNING_PLANNING_H
#define DIST_PASSES_PLANNING_PLANNING_H

#include "dialects/Dist/DistDialect.h"
#include "lib/Cost/CostModel.h"
#include "lib/Cost/ModelDesc.h"
#include "lib/Cost/ProfileDB.h"
#include "lib/Export/Trainers.h"
#include "lib/Schedule/Plan.h"
#include "lib/Search/Search.h"
#include "lib/Sim/Migration.h"
#include "lib/Sim/Resilience.h"
#include "passes/Planning/LayerAnalysis.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>

namespace distopt::planning {

/// The rows of one micro-batch of \p func: the leading dimension of its
/// first input that has one (a planned function is one micro-batch).
std::optional<int64_t> microbatchRows(mlir::func::FuncOp func);

/// Every input of \p func is one micro-batch: its leading dimension must
/// be \p plan's `mbs`, or the job would run another global batch than the
/// plan's. The error names \p pass.
mlir::LogicalResult checkMicrobatchRows(mlir::func::FuncOp func,
                                        dist::PlanAttr plan,
                                        llvm::StringRef pass);

/// The function a module plans when no name is given: `main`, else the
/// only function with a body (stage functions and per-list programs left
/// out); null when there is none or several.
mlir::func::FuncOp findPlannedFunction(mlir::ModuleOp module);

/// The function a module plans: \p name when given, else
/// findPlannedFunction's. Emits an error naming \p pass otherwise.
mlir::FailureOr<mlir::func::FuncOp> plannedFunction(mlir::ModuleOp module,
                                                    llvm::StringRef name,
                                                    llvm::StringRef pass);

/// How the planned function is costed (what a plan records next to its
/// degrees): the compute element type, where `fp8` means fp8 matmuls and
/// bf16 elsewhere (Transformer Engine), and whether attention is one fused
/// kernel.
struct Costing {
  cluster::DType dtype = cluster::DType::BF16;
  bool fusedAttention = false;
  cost::Optimizer optimizer = cost::Optimizer::Adam;
  /// Remark on the mixture-of-experts blocks the layer analysis recognizes
  /// and on MoE-like patterns it leaves dense (LayerAnalysisOptions).
  bool remarkExperts = false;

  static Costing of(const schedule::Plan &p) {
    return {p.dtype, p.fusedAttention, p.optimizer};
  }
  void applyTo(schedule::Plan &p) const {
    p.dtype = dtype;
    p.fusedAttention = fusedAttention;
    p.optimizer = optimizer;
  }
  /// What the memory model assumes a parameter costs: a 16-bit or fp8
  /// compute type trains in mixed precision (2-byte weights and gradients,
  /// fp32 master weights beside the optimizer state), fp32 and tf32 hold
  /// fp32 weights and gradients only; the optimizer's state comes on top
  /// (Adam: two moments, momentum: one, SGD: none).
  cost::MemoryConfig memory() const {
    cost::MemoryConfig m;
    m.mixedPrecision = dtype == cluster::DType::BF16 ||
                       dtype == cluster::DType::F16 ||
                       dtype == cluster::DType::F8;
    m.optimizer = optimizer;
    return m;
  }
};

/// The cost-model description of \p func costed as \p costing says: layers
/// from its `dist.layer` annotations when it has them, from its cut points
/// otherwise.
/// \p ops, when given, receives each layer's ops and each costed op's
/// tensor-parallel role, and what the degree must divide for it to split.
struct PlannedOps {
  std::vector<std::vector<mlir::Operation *>> layers;
  llvm::DenseMap<mlir::Operation *, dist::TensorParallelRole> roles;
  llvm::DenseMap<mlir::Operation *, int64_t> tpDivisors;
};
mlir::FailureOr<cost::ModelDesc> modelOf(mlir::func::FuncOp func,
                                         const Costing &costing,
                                         PlannedOps *ops = nullptr);

/// The cost-model description of the module's planned function in whatever
/// form it is in: annotated ops, `dist.stage` regions, or calls to stage
/// functions (whose bodies are read back in program order, with the weight
/// reads outlining cloned into several stages counted once).
mlir::FailureOr<cost::ModelDesc> planningModel(mlir::ModuleOp module,
                                               const Costing &costing);
/// The same with unfused attention, for callers that know only the dtype.
inline mlir::FailureOr<cost::ModelDesc> planningModel(mlir::ModuleOp module,
                                                      cluster::DType dtype) {
  return planningModel(module, Costing{dtype, false});
}

/// What the cost model needs from the module: its cluster and, when the
/// cluster names one, the profile database. Errors name \p pass.
struct ModuleMachine {
  cluster::Cluster cluster;
  std::optional<cost::ProfileDB> profile;
  /// The cost model for \p costing: under fp8 the matmuls run at the fp8
  /// peak (cost::CostModel::setMatmulPrecision).
  cost::CostModel costModel() const { return costModel(Costing{}); }
  cost::CostModel costModel(const Costing &costing) const {
    cost::CostModel cm(profile ? &*profile : nullptr);
    if (costing.dtype == cluster::DType::F8)
      cm.setMatmulPrecision(cluster::DType::F8);
    return cm;
  }
};
mlir::FailureOr<ModuleMachine> moduleMachine(mlir::ModuleOp module,
                                             llvm::StringRef pass);

/// What set-plan and search start from: the planned function, the
/// machines, and the function's cost-model description and ops.
struct PlanningInputs {
  mlir::func::FuncOp func;
  ModuleMachine machine;
  cost::ModelDesc model;
  PlannedOps ops;
};
mlir::FailureOr<PlanningInputs> planningInputs(mlir::ModuleOp module,
                                               const Costing &costing,
                                               llvm::StringRef pass);

/// Writes \p plan (finalized) as `dist.plan` on \p module, and on every op
/// of \p ops its virtual stage (`dist.virtual_stage`) and, when the plan has
/// tensor parallelism, its role (`dist.tp`).
void recordPlan(mlir::ModuleOp module, const schedule::Plan &plan,
                const PlannedOps &ops);

/// Writes \p write's output to \p path; an error on \p module naming the
/// file when it cannot be written completely.
mlir::LogicalResult
writeFile(mlir::ModuleOp module, llvm::StringRef path, llvm::StringRef what,
          llvm::function_ref<void(llvm::raw_ostream &)> write);

/// The plan of the trainer configuration \p spec ("megatron:ARGS_FILE")
/// for the module's planned function and cluster (costed as \p costing to
/// find its blocks), not finalized; what it only approximates is printed
/// as warnings. Its globalBatch is the configuration's, or \p batch when it
/// gives none; both given and different is an error. Errors name \p pass.
mlir::FailureOr<exporting::ImportedPlan>
readTrainerPlan(mlir::ModuleOp module, llvm::StringRef spec,
                const Costing &costing, unsigned batch, llvm::StringRef pass);

/// Prints \p notes of \p what ("megatron:args.sh") as warnings on stderr.
void warnNotes(llvm::StringRef what, const std::vector<std::string> &notes);

/// "80.0 GiB".
std::string humanBytes(double bytes);

/// The resilience options of a planning pass, checked: --dist-resilience's
/// mode and --dist-preemptions' seed. Errors (on \p module) name the flag
/// and the value; resilience needs the cluster's availability.
struct ResilienceChoice {
  sim::Resilience mode = sim::Resilience::None;
  std::optional<uint64_t> seed;
  bool enabled() const { return mode != sim::Resilience::None; }
};
mlir::FailureOr<ResilienceChoice>
resilienceChoice(mlir::ModuleOp module, const cluster::Cluster &cluster,
                 llvm::StringRef resilience, llvm::StringRef preemptions);

/// The report of \p c under \p choice (enabled) on \p cluster; an error
/// on \p module when the plan cannot be run so (redundant without
/// pp >= 2 or without the memory for the extra copy). Elastic needs
/// \p survivorIterationTime (survivorIterationTime below).
mlir::FailureOr<sim::ResilienceReport>
planResilience(mlir::ModuleOp module, const search::Candidate &c,
               const cluster::Cluster &cluster, const ResilienceChoice &choice,
               double memoryLimit, double survivorIterationTime = 0);

/// Elastic resilience: the iteration time of the best plan for \p model on
/// the devices \p plan uses but those of its last node (a search with the
/// plan's global batch and \p so's memory, input and flags). An error on
/// \p module when the plan has one node or no plan runs on the others.
mlir::FailureOr<double> survivorIterationTime(mlir::ModuleOp module,
                                              const cost::ModelDesc &model,
                                              const cluster::Cluster &cluster,
                                              const cost::CostModel &cm,
                                              const search::SearchOptions &so,
                                              const schedule::Plan &plan);

/// The running plan of --dist-replan, read from the JSON report at \p path
/// (docs/report-format.md) and finalized on \p cluster for \p mode and
/// \p objective, costed as \p costing. Errors (on \p module) name the file
/// and say what to do: unreadable, not JSON, not a plan report, the report
/// of another model (layer count, layer names, parameters), another mode,
/// a plan the cluster cannot place or whose state cannot be migrated.
mlir::FailureOr<schedule::Plan>
readRunningPlan(mlir::ModuleOp module, llvm::StringRef path,
                const cost::ModelDesc &model, const cluster::Cluster &cluster,
                const cost::CostModel &cm, const Costing &costing,
                schedule::Mode mode, schedule::InferObjective objective);

/// The migration from \p running to \p next on \p cluster, with the
/// running plan predicted on the cluster as \p so says (docs/resilience.md,
/// "Re-planning").
/// \p relaunch is the new job's start, which a pause pays.
mlir::FailureOr<sim::MigrationReport>
planReplan(mlir::ModuleOp module, const schedule::Plan &running,
           const search::Candidate &next, const cost::ModelDesc &model,
           const cluster::Cluster &cluster, const cost::CostModel &cm,
           const search::SearchOptions &so,
           const cluster::RelaunchCost &relaunch);

/// The --dist-relaunch option of a planning pass: the job start dist-run
/// recorded in the file \p path (empty: none). Where \p cluster's
/// availability gives no relaunch_s, the recorded one is put there, so
/// restarts after preemptions pay it too. Returns what a restart costs
/// (cluster::relaunchCost); errors (on \p module) name the file and the
/// field.
mlir::FailureOr<cluster::RelaunchCost> relaunchChoice(mlir::ModuleOp module,
                                                      cluster::Cluster &cluster,
                                                      llvm::StringRef path);

/// The --dist-input option of a planning pass, checked: the model's input
/// per sample, or nullopt when \p input is empty. Errors (on \p module)
/// name the flag and the value; the input pipeline needs the cluster's
/// input side and a training plan.
mlir::FailureOr<std::optional<sim::InputSpec>>
inputChoice(mlir::ModuleOp module, const cluster::Cluster &cluster,
            llvm::StringRef input, schedule::Mode mode);

} // namespace distopt::planning

#endif // DIST_PASSES_PLANNING_PLANNING_H
