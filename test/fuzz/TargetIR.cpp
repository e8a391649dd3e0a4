//===- TargetIR.cpp - Fuzz targets: ONNX, .mlir, planning -------*- C++ -*-===//
//
// Part of DistOpt. `onnx` imports the bytes as an ONNX model, `mlir` parses
// and verifies them as graph/dist IR; when that succeeds, both generate its
// program's source (dist-compile --source-only, CPU and CUDA) and plan it
// (the plan and cluster it carries, then dist-plan-pipeline with a
// data-parallel plan and with a search, each planned module generated
// too), and build, as dist-compile would, the programs of tensor-, context-
// and pipeline-parallel plans for inference and for training, so a model
// the importer or parser accepts but a later stage cannot handle shows up
// too. mutateONNX edits the parsed ModelProto: attribute values, arities,
// op types, shapes, element types, initializer payloads, opsets, node
// order.
//
//===----------------------------------------------------------------------===//
#include "FuzzTargets.h"

#include "dist/ImportONNX.h"
#include "dist/InitAll.h"
#include "dist/Pipelines.h"
#include "lib/Codegen/Codegen.h"
#include "lib/Support/MLIRInputCheck.h"
#include "passes/Passes.h"
#include "tools/Init/ParseGuard.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include <onnx/onnx_pb.h>

using namespace mlir;

namespace distopt::fuzz {

/// Generates the C++ and CUDA sources dist-compile --source-only would for
/// `module`: dist-prepare-for-emission on a copy for each target, then the
/// printer. Every error is a normal outcome; each program printed counts in
/// programsGenerated.
static void generate(ModuleOp module) {
  for (codegen::Target target : {codegen::Target::CPU, codegen::Target::CUDA}) {
    OwningOpRef<ModuleOp> copy = module.clone();
    PassManager pm(copy->getContext(), ModuleOp::getOperationName());
    PrepareForEmissionPassOptions prepare;
    prepare.target = target == codegen::Target::CUDA ? EmissionTarget::CUDA
                                                     : EmissionTarget::CPU;
    pm.addPass(createPrepareForEmissionPass(prepare));
    if (failed(pm.run(*copy)))
      continue;
    std::string source;
    llvm::raw_string_ostream os(source);
    codegen::CodegenOptions options;
    options.target = target;
    codegen::ModelUnit unit{"fuzz", "fuzz", ".", *copy, ""};
    if (succeeded(codegen::emitProgram({unit}, options, os, nullptr)))
      ++programsGenerated;
  }
}

/// Runs dist-plan-pipeline with `options` on a copy of `module`, then
/// generates the planned copy's program.
static void planCopy(ModuleOp module, const PlanOptions &options) {
  OwningOpRef<ModuleOp> copy = module.clone();
  if (succeeded(distopt::planModule(*copy, options)))
    generate(*copy);
}

/// As dist-compile does with `--dist-plan=plan` (and `--train` when
/// `train`): plans the forward function of a copy of `module`, splits it
/// over the plan's context- and tensor-parallel ranks, differentiates it
/// against an MSE target, partitions it into per-rank programs and
/// generates them. Each pass is a no-op where the plan does not need it.
static void compileCopy(ModuleOp module, llvm::StringRef plan, bool train) {
  OwningOpRef<ModuleOp> copy = module.clone();
  PlanOptions options;
  options.cluster = "cpu-xeon-2s:2";
  options.plan = plan.str();
  options.batch = 2;
  options.stages = "none"; // dist-compile partitions after the rewrites
  if (failed(distopt::planModule(*copy, options)))
    return;
  PassManager pm(copy->getContext(), ModuleOp::getOperationName());
  pm.addPass(createContextParallelPass());
  pm.addPass(createTensorParallelPass());
  if (train) {
    // dist-train-pipeline names dist-autodiff by its registered name.
    static const bool registered = [] {
      registerAllPasses();
      return true;
    }();
    (void)registered;
    TrainOptions t;
    t.autodiff = "optimizer=sgd lr=0.1";
    t.loss = "mse:fuzz_target";
    std::string error;
    if (failed(buildTrainPipeline(pm, t, error)))
      return;
  }
  pm.addPass(createPartitionPass());
  if (succeeded(pm.run(*copy)))
    generate(*copy);
}

/// Everything downstream of an accepted module, on copies of it: its
/// program as written; the plan and cluster it carries (`#dist.plan`,
/// `#dist.cluster`) simulated, staged and scheduled as written; then, as
/// dist-opt --dist-plan and --dist-search would, a data-parallel plan and a
/// search on a small CPU cluster.
static void exercise(ModuleOp module) {
  generate(module);
  {
    OwningOpRef<ModuleOp> copy = module.clone();
    PassManager pm(copy->getContext(), ModuleOp::getOperationName());
    SimulatePassOptions quiet;
    quiet.summary = false;
    pm.addPass(createSimulatePass(quiet));
    pm.addPass(createOutlineStagesPass());
    pm.addPass(createOutlineStageFunctionsPass());
    pm.addPass(createMaterializeSchedulePass());
    pm.addPass(createVerifySchedulePass());
    if (succeeded(pm.run(*copy)))
      generate(*copy);
  }
  PlanOptions simulate;
  simulate.cluster = "cpu-xeon-2s:1";
  simulate.plan = "dp=2";
  simulate.batch = 2;
  simulate.simulate = true;
  planCopy(module, simulate);
  PlanOptions search = simulate;
  search.plan.clear();
  search.simulate = false;
  planCopy(module, search);
  // The rewrites that make a plan's programs: tensor, context and pipeline
  // parallelism, for inference and training.
  for (llvm::StringRef plan : {"tp=2", "cp=2,mbs=1", "dp=2,pp=2,mbs=1"})
    for (bool train : {false, true})
      compileCopy(module, plan, train);
}

/// A context with every DistOpt dialect, diagnostics swallowed.
struct FuzzContext {
  DialectRegistry registry;
  std::unique_ptr<MLIRContext> context;
  std::unique_ptr<ScopedDiagnosticHandler> quiet;
  FuzzContext() {
    registerAllDialects(registry);
    context = std::make_unique<MLIRContext>(registry,
                                            MLIRContext::Threading::DISABLED);
    context->loadAllAvailableDialects();
    context->printOpOnDiagnostic(false);
    quiet = std::make_unique<ScopedDiagnosticHandler>(
        context.get(), [](Diagnostic &) { return success(); });
  }
};

Outcome runONNX(llvm::StringRef input) {
  FuzzContext fc;
  ONNXImportOptions options;
  // External data resolves below a folder that does not exist.
  OwningOpRef<ModuleOp> module = importONNXBuffer(
      input, "fuzz.onnx", "/nonexistent-dist-fuzz", fc.context.get(), options);
  if (!module)
    return Outcome::Refused;
  exercise(*module);
  return Outcome::Accepted;
}

Outcome runMLIR(llvm::StringRef input) {
  // The tools' guard against MLIR's own parser (MLIRInputCheck.h).
  if (!checkMLIRResultNumbers(input, "fuzz.mlir").empty())
    return Outcome::Refused;
  FuzzContext fc;
  if (failed(checkParseInChild(input, "fuzz.mlir", fc.registry,
                               /*allowUnregistered=*/false, /*quiet=*/true)))
    return Outcome::Refused;
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(input, fc.context.get());
  if (!module)
    return Outcome::Refused;
  exercise(*module);
  return Outcome::Accepted;
}

//===----------------------------------------------------------------------===//
// Structured mutation
//===----------------------------------------------------------------------===//

static const int64_t kInts[] = {0,
                                -1,
                                1,
                                2,
                                3,
                                7,
                                -2,
                                64,
                                65536,
                                2147483647,
                                2147483648LL,
                                -2147483648LL,
                                4611686018427387904LL,
                                INT64_MAX,
                                INT64_MIN,
                                1000000000};

static const char *const kOps[] = {"Conv",
                                   "MaxPool",
                                   "AveragePool",
                                   "LpPool",
                                   "Shape",
                                   "Size",
                                   "Reshape",
                                   "Gather",
                                   "GatherElements",
                                   "GatherND",
                                   "ScatterElements",
                                   "ScatterND",
                                   "Split",
                                   "Concat",
                                   "Slice",
                                   "Pad",
                                   "Expand",
                                   "ConstantOfShape",
                                   "Range",
                                   "Tile",
                                   "Transpose",
                                   "MatMul",
                                   "Gemm",
                                   "Softmax",
                                   "BatchNormalization",
                                   "LayerNormalization",
                                   "InstanceNormalization",
                                   "NegativeLogLikelihoodLoss",
                                   "SoftmaxCrossEntropyLoss",
                                   "Upsample",
                                   "Resize",
                                   "Einsum",
                                   "TopK",
                                   "Where",
                                   "Cast",
                                   "Squeeze",
                                   "Unsqueeze",
                                   "Flatten",
                                   "ReduceSum",
                                   "ReduceMean",
                                   "ArgMax",
                                   "CumSum",
                                   "OneHot",
                                   "SpaceToDepth",
                                   "DepthToSpace",
                                   "GlobalAveragePool",
                                   "ConvTranspose",
                                   "Dropout",
                                   "Div",
                                   "Pow",
                                   "Mod",
                                   "PRelu",
                                   "Relu",
                                   "Add",
                                   "Sum",
                                   "Max",
                                   "Identity",
                                   "Constant",
                                   "Trilu",
                                   "Erf",
                                   "If",
                                   "Loop",
                                   "Scan",
                                   "NonZero",
                                   "SplitToSequence",
                                   "SequenceAt",
                                   "Clip",
                                   "LeakyRelu"};

static const char *const kAttrs[] = {
    "strides", "pads", "dilations", "kernel_shape", "axis",  "axes",
    "group",   "perm", "split",     "blocksize",    "to",    "keepdims",
    "start",   "end",  "ceil_mode", "transB",       "alpha", "epsilon"};

template <typename T> static T pick(Rng &rng, llvm::ArrayRef<T> v) {
  return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)];
}
static int64_t anyInt(Rng &rng) {
  return rng() % 3 ? pick<int64_t>(rng, kInts)
                   : int64_t(rng() % 9) - 2; // small, often valid
}

static void mutateAttribute(onnx::NodeProto &node, Rng &rng) {
  if (node.attribute_size() == 0 || rng() % 3 == 0) {
    onnx::AttributeProto *a = node.add_attribute();
    a->set_name(pick<const char *>(rng, kAttrs));
    if (rng() % 2) {
      a->set_type(onnx::AttributeProto::INTS);
      for (int i = 0, n = rng() % 5; i < n; ++i)
        a->add_ints(anyInt(rng));
    } else {
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(anyInt(rng));
    }
    return;
  }
  onnx::AttributeProto *a =
      node.mutable_attribute(rng() % node.attribute_size());
  switch (rng() % 5) {
  case 0:
    a->set_i(anyInt(rng));
    break;
  case 1:
    if (a->ints_size())
      a->set_ints(rng() % a->ints_size(), anyInt(rng));
    else
      a->add_ints(anyInt(rng));
    break;
  case 2:
    a->set_f(rng() % 2 ? 0.0f : -1e30f);
    break;
  case 3:
    a->set_type(onnx::AttributeProto::AttributeType(rng() % 15));
    break;
  default:
    if (a->has_t()) {
      onnx::TensorProto *t = a->mutable_t();
      if (t->dims_size())
        t->set_dims(rng() % t->dims_size(), anyInt(rng));
      else
        t->add_dims(anyInt(rng));
    } else {
      a->add_ints(anyInt(rng));
    }
  }
}

static std::string someValue(const onnx::GraphProto &g, Rng &rng) {
  std::vector<std::string> names = {""};
  for (const auto &v : g.input())
    names.push_back(v.name());
  for (const auto &t : g.initializer())
    names.push_back(t.name());
  for (const auto &n : g.node())
    for (const auto &o : n.output())
      names.push_back(o);
  return pick<std::string>(rng, names);
}

static void mutateNode(onnx::GraphProto &g, onnx::NodeProto &node, Rng &rng) {
  switch (rng() % 7) {
  case 0:
  case 1:
    mutateAttribute(node, rng);
    break;
  case 2:
    if (node.input_size() && rng() % 2)
      node.mutable_input()->RemoveLast();
    else
      node.add_input(someValue(g, rng));
    break;
  case 3:
    if (node.input_size())
      node.set_input(rng() % node.input_size(), someValue(g, rng));
    break;
  case 4:
    node.set_op_type(pick<const char *>(rng, kOps));
    break;
  case 5:
    if (node.output_size() && rng() % 2)
      node.set_output(rng() % node.output_size(), someValue(g, rng));
    else
      node.add_output(rng() % 2 ? "" : "extra" + std::to_string(rng() % 4));
    break;
  default:
    node.set_domain(rng() % 2 ? "ai.onnx.ml" : "");
  }
}

static void mutateTensor(onnx::TensorProto &t, Rng &rng) {
  switch (rng() % 5) {
  case 0:
    if (t.dims_size())
      t.set_dims(rng() % t.dims_size(), anyInt(rng));
    else
      t.add_dims(anyInt(rng));
    break;
  case 1:
    t.set_data_type(int32_t(rng() % 18));
    break;
  case 2:
    t.clear_raw_data();
    break;
  case 3:
    if (t.has_raw_data())
      t.mutable_raw_data()->resize(rng() % (t.raw_data().size() + 9));
    break;
  default:
    t.set_data_location(onnx::TensorProto::EXTERNAL);
    t.add_external_data()->set_key("location");
    t.mutable_external_data(t.external_data_size() - 1)
        ->set_value(rng() % 2 ? "w.bin" : "../w.bin");
  }
}

static void mutateShape(onnx::ValueInfoProto &v, Rng &rng) {
  auto *tt = v.mutable_type()->mutable_tensor_type();
  if (rng() % 4 == 0) {
    tt->set_elem_type(int32_t(rng() % 18));
    return;
  }
  auto *shape = tt->mutable_shape();
  if (shape->dim_size() == 0 || rng() % 4 == 0) {
    shape->add_dim()->set_dim_value(anyInt(rng));
    return;
  }
  auto *d = shape->mutable_dim(rng() % shape->dim_size());
  if (rng() % 4 == 0)
    d->set_dim_param("n");
  else
    d->set_dim_value(anyInt(rng));
}

void mutateONNX(std::string &input, Rng &rng) {
  onnx::ModelProto m;
  if (!m.ParseFromString(input))
    return;
  onnx::GraphProto &g = *m.mutable_graph();
  for (int k = 0, n = 1 + rng() % 3; k < n; ++k) {
    unsigned what = rng() % 10;
    if (what < 5 && g.node_size()) {
      mutateNode(g, *g.mutable_node(rng() % g.node_size()), rng);
    } else if (what == 5 && g.input_size()) {
      mutateShape(*g.mutable_input(rng() % g.input_size()), rng);
    } else if (what == 6 && g.initializer_size()) {
      mutateTensor(*g.mutable_initializer(rng() % g.initializer_size()), rng);
    } else if (what == 7 && m.opset_import_size()) {
      m.mutable_opset_import(0)->set_version(int64_t(rng() % 20));
    } else if (what == 8 && g.node_size() > 1) {
      g.mutable_node()->SwapElements(rng() % g.node_size(),
                                     rng() % g.node_size());
    } else if (g.node_size()) {
      *g.add_node() = g.node(rng() % g.node_size());
      onnx::NodeProto &copy = *g.mutable_node(g.node_size() - 1);
      for (int i = 0; i < copy.output_size(); ++i)
        copy.set_output(i, copy.output(i) + "_copy");
      if (rng() % 2 && copy.output_size()) {
        auto *out = g.add_output();
        out->set_name(copy.output(0));
      }
    }
  }
  input = m.SerializeAsString();
}

} // namespace distopt::fuzz
