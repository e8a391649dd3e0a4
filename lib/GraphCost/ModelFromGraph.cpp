//===- ModelFromGraph.cpp - Cost-level model from graph IR -----*- C++ -*-===//
//
// Part of DistOpt.
//
//===----------------------------------------------------------------------===//
#include "lib/GraphCost/ModelFromGraph.h"

#include "dialects/Graph/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace distopt;
using namespace distopt::cost;
namespace g = distopt::graph;

//===----------------------------------------------------------------------===//
// Small helpers
//===----------------------------------------------------------------------===//

static double numElements(Type type) {
  auto shaped = dyn_cast<RankedTensorType>(type);
  if (!shaped)
    return 1;
  double n = 1;
  for (int64_t d : shaped.getShape())
    n *= ShapedType::isDynamic(d) ? 1 : d;
  return n;
}

static std::optional<cluster::DType> dtypeOf(Type type) {
  Type elt = getElementTypeOrSelf(type);
  if (elt.isF32())
    return cluster::DType::F32;
  if (elt.isF16())
    return cluster::DType::F16;
  if (elt.isBF16())
    return cluster::DType::BF16;
  if (elt.isInteger(64))
    return cluster::DType::I64;
  if (elt.isInteger(32))
    return cluster::DType::I32;
  if (elt.isInteger(8))
    return cluster::DType::I8;
  return std::nullopt;
}

static double bytesOf(Type type) {
  std::optional<cluster::DType> dt = dtypeOf(type);
  unsigned width = getElementTypeOrSelf(type).getIntOrFloatBitWidth();
  return numElements(type) * (dt ? cluster::dtypeBytes(*dt) : (width + 7) / 8);
}

/// The ONNX node name an op was imported from, or its op name.
static std::string opName(Operation *op) {
  std::string name;
  op->getLoc()->walk([&](Location loc) {
    if (auto named = dyn_cast<NameLoc>(loc)) {
      name = named.getName().str();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return name.empty() ? op->getName().getStringRef().str() : name;
}

static double shapeProduct(ArrayRef<int64_t> dims) {
  double n = 1;
  for (int64_t d : dims)
    n *= ShapedType::isDynamic(d) ? 1 : d;
  return n;
}

/// True for a rank >= 3 tensor whose last two dims are equal and > 1: the
/// shape of attention scores.
static bool isScoreShaped(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  if (!t || t.getRank() < 3)
    return false;
  int64_t a = t.getDimSize(t.getRank() - 1), b = t.getDimSize(t.getRank() - 2);
  return a == b && a > 1;
}

namespace {
/// What the adapter learns about the function before costing ops.
class GraphModelBuilder {
public:
  GraphModelBuilder(func::FuncOp func, const GraphModelOptions &options)
      : func(func), options(options) {}

  FailureOr<ModelDesc> build();

private:
  /// Classifies values: sample-dependent (derived from the arguments), side
  /// (sample-dependent but computed without any weight: masks, ids).
  void classifyValues();
  /// Root `graph.weight` ops a weight-like value is computed from.
  void collectWeightRoots(Value value, SmallVectorImpl<Operation *> &roots);
  /// The cost of one sample-dependent op (unscaled), or nullopt for views.
  std::optional<OpDesc> costOf(Operation *op);
  cluster::DType dtypeFor(Type type) const;
  bool isWeightLike(Value v) const { return !sampleDependent.contains(v); }

  func::FuncOp func;
  const GraphModelOptions &options;
  DenseSet<Value> sampleDependent;
  DenseSet<Value> side;
  /// Values holding column-parallel (split) activations under Megatron TP.
  DenseSet<Value> split;
  DenseSet<Operation *> countedWeights;
};
} // namespace

cluster::DType GraphModelBuilder::dtypeFor(Type type) const {
  if (options.computeType)
    return *options.computeType;
  std::optional<cluster::DType> dt = dtypeOf(type);
  return dt && (*dt == cluster::DType::F32 || *dt == cluster::DType::F16 ||
                *dt == cluster::DType::BF16)
             ? *dt
             : cluster::DType::F32;
}

void GraphModelBuilder::classifyValues() {
  DenseSet<Value> touchesWeight;
  for (BlockArgument arg : func.getArguments()) {
    sampleDependent.insert(arg);
    side.insert(arg);
  }
  for (Operation &op : func.getBody().front()) {
    bool dependent = false, weighted = isa<g::WeightOp>(op), allSide = true;
    for (Value operand : op.getOperands()) {
      dependent |= sampleDependent.contains(operand);
      weighted |= touchesWeight.contains(operand);
      if (sampleDependent.contains(operand) && !side.contains(operand))
        allSide = false;
    }
    for (Value result : op.getResults()) {
      if (weighted)
        touchesWeight.insert(result);
      if (!dependent)
        continue;
      sampleDependent.insert(result);
      // A side value never met a weight: masks, position ids, raw inputs.
      if (allSide && !llvm::any_of(op.getOperands(), [&](Value v) {
            return sampleDependent.contains(v) ? false
                                               : touchesWeight.contains(v);
          }))
        side.insert(result);
    }
  }
}

void GraphModelBuilder::collectWeightRoots(Value value,
                                           SmallVectorImpl<Operation *> &roots) {
  Operation *def = value.getDefiningOp();
  if (!def)
    return;
  if (isa<g::WeightOp>(def)) {
    roots.push_back(def);
    return;
  }
  for (Value operand : def->getOperands())
    if (isWeightLike(operand))
      collectWeightRoots(operand, roots);
}

std::optional<OpDesc> GraphModelBuilder::costOf(Operation *op) {
  std::string name = opName(op);
  Type resultType =
      op->getNumResults() ? op->getResult(0).getType() : Type();
  cluster::DType dt = dtypeFor(resultType ? resultType : Type());
  double outElements = resultType ? numElements(resultType) : 0;

  return TypeSwitch<Operation *, std::optional<OpDesc>>(op)
      .Case<g::MatmulOp>([&](g::MatmulOp mm) -> std::optional<OpDesc> {
        auto lhs = cast<RankedTensorType>(mm.getLhs().getType());
        auto rhs = cast<RankedTensorType>(mm.getRhs().getType());
        ArrayRef<int64_t> l = lhs.getShape(), r = rhs.getShape();
        double m = l.size() >= 2 ? l[l.size() - (mm.getTransposeLhs() ? 1 : 2)]
                                 : 1;
        double k = l.back() == ShapedType::kDynamic ? 1 : l.back();
        if (mm.getTransposeLhs() && l.size() >= 2)
          k = l[l.size() - 2];
        double n = r.size() >= 2
                       ? (mm.getTransposeRhs() ? r[r.size() - 2] : r.back())
                       : 1;
        double batch = outElements / std::max(1.0, m * n);
        bool weight = isWeightLike(mm.getRhs()) || isWeightLike(mm.getLhs());
        return matmulOp(name, dt, weight ? 1 : batch,
                        weight ? batch * m : m, n, k, weight,
                        static_cast<bool>(mm.getBias()));
      })
      .Case<g::ConvOp>([&](g::ConvOp conv) -> std::optional<OpDesc> {
        auto in = cast<RankedTensorType>(conv.getInput().getType());
        auto w = cast<RankedTensorType>(conv.getWeight().getType());
        if (in.getRank() != 4 || w.getRank() != 4) {
          PhaseCost fwd{2 * outElements * shapeProduct(w.getShape()) /
                            std::max<int64_t>(1, w.getDimSize(0)),
                        bytesOf(in) + bytesOf(w), bytesOf(resultType)};
          OpDesc o = otherOp(name, dt, fwd);
          o.cls = OpClass::Conv;
          return o;
        }
        ArrayRef<int64_t> strides = conv.getStrides(), pads = conv.getPads();
        OpDesc o = convOp(name, dt, in.getDimSize(1), in.getDimSize(2),
                          in.getDimSize(3), w.getDimSize(0), w.getDimSize(2),
                          w.getDimSize(3), strides.empty() ? 1 : strides[0],
                          pads.empty() ? 0 : pads[0], conv.getGroup(),
                          static_cast<bool>(conv.getBias()));
        // convOp is per image: scale to the imported batch like other ops.
        double images = std::max<int64_t>(1, in.getDimSize(0));
        o.fwd = o.fwd.scaled(images);
        o.bwdInput = o.bwdInput.scaled(images);
        o.bwdWeight = o.bwdWeight.scaled(images);
        o.savedBytes *= images;
        return o;
      })
      .Case<g::EmbeddingOp>([&](g::EmbeddingOp emb) -> std::optional<OpDesc> {
        auto table = cast<RankedTensorType>(emb.getTable().getType());
        return embeddingOp(name, dt, numElements(emb.getIndices().getType()),
                           table.getDimSize(0),
                           shapeProduct(table.getShape().drop_front()));
      })
      .Case<g::LayerNormOp, g::RMSNormOp>([&](auto norm) {
        auto in = cast<RankedTensorType>(norm.getInput().getType());
        int64_t axis = static_cast<int64_t>(norm.getAxis());
        if (axis < 0)
          axis += in.getRank();
        double cols = shapeProduct(in.getShape().drop_front(axis));
        return std::optional<OpDesc>(
            normOp(name, dt, outElements / std::max(1.0, cols), cols));
      })
      .Case<g::BatchNormOp>([&](g::BatchNormOp bn) {
        auto in = cast<RankedTensorType>(bn.getInput().getType());
        double channels = in.getRank() > 1 ? in.getDimSize(1) : 1;
        return std::optional<OpDesc>(
            normOp(name, dt, outElements / channels, channels));
      })
      .Case<g::SoftmaxOp>([&](g::SoftmaxOp sm) {
        auto in = cast<RankedTensorType>(sm.getInput().getType());
        int64_t axis = static_cast<int64_t>(sm.getAxis());
        if (axis < 0)
          axis += in.getRank();
        double cols = in.getDimSize(axis);
        return std::optional<OpDesc>(
            softmaxOp(name, dt, outElements / std::max(1.0, cols), cols));
      })
      .Case<g::SoftmaxCrossEntropyOp>([&](g::SoftmaxCrossEntropyOp loss) {
        auto logits = cast<RankedTensorType>(loss.getLogits().getType());
        double classes = logits.getRank() > 1 ? logits.getDimSize(1) : 1;
        return std::optional<OpDesc>(
            lossOp(name, dt, numElements(logits) / classes, classes));
      })
      .Case<g::ReduceOp>([&](g::ReduceOp red) {
        return std::optional<OpDesc>(reductionOp(
            name, dt, numElements(red.getInput().getType()), outElements));
      })
      .Case<g::PoolOp>([&](g::PoolOp pool) {
        double window = pool.getGlobal()
                            ? numElements(pool.getInput().getType()) /
                                  std::max(1.0, outElements)
                            : shapeProduct(pool.getKernel());
        return std::optional<OpDesc>(
            reductionOp(name, dt, outElements * window, outElements));
      })
      .Case<g::UnaryOp>([&](g::UnaryOp u) {
        // Transcendental activations cost several FLOPs per element.
        double f = 1;
        switch (u.getKind()) {
        case g::UnaryKind::Gelu:
        case g::UnaryKind::GeluTanh:
          f = 8;
          break;
        case g::UnaryKind::Silu:
        case g::UnaryKind::Sigmoid:
        case g::UnaryKind::Tanh:
        case g::UnaryKind::Erf:
        case g::UnaryKind::Exp:
        case g::UnaryKind::Log:
          f = 4;
          break;
        default:
          break;
        }
        return std::optional<OpDesc>(elementwiseOp(name, dt, outElements, 1, f));
      })
      .Case<g::BinaryOp, g::WhereOp, g::ClipOp, g::CastOp, g::DropoutOp>(
          [&](Operation *o) {
            return std::optional<OpDesc>(elementwiseOp(
                name, dt, outElements, std::max(1u, o->getNumOperands())));
          })
      // Views: no data moves.
      .Case<g::ReshapeOp, g::FlattenOp>(
          [](Operation *) { return std::optional<OpDesc>(); })
      .Case<g::TransposeOp, g::SplitOp, g::SliceOp, g::ConcatOp, g::ExpandOp,
            g::PadOp, g::TriluOp, g::GatherOp, g::IotaOp>([&](Operation *o) {
        double elements = 0;
        for (Value r : o->getResults())
          elements += numElements(r.getType());
        return std::optional<OpDesc>(dataMovementOp(name, dt, elements));
      })
      .Default([&](Operation *o) -> std::optional<OpDesc> {
        if (o->getNumResults() == 0)
          return std::nullopt;
        PhaseCost fwd;
        for (Value v : o->getOperands())
          fwd.bytesRead += bytesOf(v.getType());
        for (Value v : o->getResults()) {
          fwd.bytesWritten += bytesOf(v.getType());
          fwd.flops += numElements(v.getType());
        }
        return otherOp(name, dt, fwd);
      });
}

FailureOr<ModelDesc> GraphModelBuilder::build() {
  if (func.getBody().empty())
    return func.emitError("cannot cost a function without a body");
  if (func.getNumArguments() == 0)
    return func.emitError("cannot cost '")
           << func.getSymName()
           << "': it has no inputs, so there is no sample dimension";
  auto first = dyn_cast<RankedTensorType>(func.getArgument(0).getType());
  if (!first || first.getRank() == 0 || first.isDynamicDim(0))
    return func.emitError("the first input of '")
           << func.getSymName()
           << "' needs a static leading (sample) dimension; pin it with "
              "--input-shape";
  double samples = first.getDimSize(0);
  classifyValues();

  // Cost every sample-dependent op, in program order.
  struct Item {
    Operation *op;
    std::optional<OpDesc> desc;
  };
  std::vector<Item> items;
  DenseMap<Value, int64_t> defIndex;
  for (BlockArgument arg : func.getArguments())
    defIndex[arg] = -1;
  for (Operation &op : func.getBody().front()) {
    if (op.hasTrait<OpTrait::IsTerminator>() ||
        !llvm::any_of(op.getResults(),
                      [&](Value r) { return sampleDependent.contains(r); }))
      continue;
    std::optional<OpDesc> desc = costOf(&op);
    if (desc && options.signatures)
      (*options.signatures)[&op] = desc->signature;
    if (desc) {
      // Parameters: the weights this op reads, counted once across the model.
      SmallVector<Operation *> roots;
      for (Value operand : op.getOperands())
        if (isWeightLike(operand))
          collectWeightRoots(operand, roots);
      double params = 0, tied = 0;
      for (Operation *root : roots) {
        double n = numElements(root->getResult(0).getType());
        if (countedWeights.insert(root).second)
          params += n;
        else
          tied += n;
      }
      if (!roots.empty()) {
        desc->params = params ? params : tied;
        desc->tiedParams = params == 0;
      } else if (isa<g::MatmulOp, g::ConvOp>(op)) {
        desc->params = 0;
      }
      // Megatron tensor parallelism: a weighted matmul reading a split
      // activation is row-parallel (all-reduce its output), otherwise
      // column-parallel (split output, all-reduce the input gradient).
      bool anySplit = llvm::any_of(op.getOperands(),
                                   [&](Value v) { return split.contains(v); });
      bool weighted = !roots.empty();
      double outBytes = 0, inBytes = 0;
      for (Value r : op.getResults())
        outBytes += bytesOf(r.getType());
      for (Value v : op.getOperands())
        if (sampleDependent.contains(v))
          inBytes += bytesOf(v.getType());
      auto record = [&](TensorParallelRole role) {
        if (options.tpRoles)
          (*options.tpRoles)[&op] = role;
      };
      if (isa<g::MatmulOp, g::ConvOp>(op) && weighted) {
        record(anySplit ? TensorParallelRole::Row : TensorParallelRole::Column);
        if (anySplit) {
          desc->tpAllReduceFwdBytes = outBytes;
        } else {
          desc->tpAllReduceBwdBytes = inBytes;
          for (Value r : op.getResults())
            split.insert(r);
        }
        desc->tp = TpMode::Split;
      } else if (isa<g::EmbeddingOp>(op)) {
        record(TensorParallelRole::Row); // vocabulary-parallel lookup
        desc->tpAllReduceFwdBytes = outBytes;
        desc->tp = TpMode::Split;
      } else if (anySplit && !isa<g::LayerNormOp, g::RMSNormOp>(op)) {
        // A full-size activation meeting a split one (a residual add after a
        // column-parallel convolution) must gather the split operand first.
        // Batch norm is per channel, so a channel split passes through it.
        double fullBytes = 0;
        for (Value v : op.getOperands())
          if (sampleDependent.contains(v) && !split.contains(v) &&
              !side.contains(v))
            fullBytes += bytesOf(v.getType());
        if (fullBytes > 0 && !isa<g::BatchNormOp>(op)) {
          record(TensorParallelRole::Replicated);
          desc->tp = TpMode::Replicated;
          desc->tpAllReduceFwdBytes = outBytes;
          desc->savedReplicatedBytes = desc->savedBytes;
          desc->savedBytes = 0;
        } else {
          record(TensorParallelRole::Split);
          desc->tp = TpMode::Split;
          for (Value r : op.getResults())
            split.insert(r);
        }
      } else {
        record(TensorParallelRole::Replicated);
        desc->tp = TpMode::Replicated;
        desc->savedReplicatedBytes = desc->savedBytes;
        desc->savedBytes = 0;
      }
      // Attention core: what selective recomputation drops (Korthikanti).
      if (!weighted && (isa<g::MatmulOp, g::SoftmaxOp, g::DropoutOp>(op) ||
                        desc->cls == OpClass::Elementwise) &&
          llvm::any_of(op.getOperandTypes(), isScoreShaped))
        desc->selective = true;
      if (!weighted && isa<g::MatmulOp>(op) &&
          llvm::any_of(op.getResultTypes(), isScoreShaped))
        desc->selective = true;
      // Per sample.
      double k = 1.0 / samples;
      desc->fwd = desc->fwd.scaled(k);
      desc->bwdInput = desc->bwdInput.scaled(k);
      desc->bwdWeight = desc->bwdWeight.scaled(k);
      desc->savedBytes *= k;
      desc->savedReplicatedBytes *= k;
      desc->tpAllReduceFwdBytes *= k;
      desc->tpAllReduceBwdBytes *= k;
      desc->perSample = true;
    } else if (llvm::any_of(op.getOperands(),
                            [&](Value v) { return split.contains(v); })) {
      // Views (reshape, flatten) cost nothing but keep a split activation
      // split.
      for (Value r : op.getResults())
        split.insert(r);
      if (options.tpRoles)
        (*options.tpRoles)[&op] = TensorParallelRole::Split;
    }
    for (Value r : op.getResults())
      defIndex[r] = items.size();
    items.push_back({&op, std::move(desc)});
  }
  if (items.empty())
    return func.emitError("'") << func.getSymName()
                               << "' computes nothing from its inputs";

  // Last use of every sample-dependent value, in item positions.
  DenseMap<Value, int64_t> lastUse;
  for (auto [i, item] : llvm::enumerate(items))
    for (Value operand : item.op->getOperands())
      if (sampleDependent.contains(operand))
        lastUse[operand] = i;

  // Sweep: after item i, which values are live? Cut where exactly one
  // non-side activation is (side values such as masks travel along).
  std::vector<std::pair<int64_t, int64_t>> events; // (def, lastUse)
  for (auto &[value, last] : lastUse)
    events.push_back({defIndex.lookup(value), last});
  std::vector<int64_t> liveMain(items.size() + 1, 0);
  std::vector<double> liveBytes(items.size() + 1, 0);
  for (auto &[value, last] : lastUse) {
    int64_t def = defIndex.lookup(value);
    double bytes = bytesOf(value.getType()) / samples;
    bool isMain = !side.contains(value);
    for (int64_t i = std::max<int64_t>(def, 0); i < last; ++i) {
      liveBytes[i] += bytes;
      if (isMain)
        ++liveMain[i];
    }
  }

  ModelDesc model;
  model.name = func.getSymName().str();
  LayerDesc current;
  std::vector<std::vector<Operation *>> opsOf;
  std::vector<Operation *> currentOps;
  bool heavy = false;
  auto isHeavy = [](const OpDesc &d) {
    return d.cls == OpClass::MatMul || d.cls == OpClass::Conv ||
           d.cls == OpClass::Embedding;
  };
  auto finish = [&](size_t end, double boundary) {
    current.boundaryBytes = boundary;
    current.name = llvm::formatv("layer{0}", model.layers.size()).str();
    // A stretch with nothing heavy joins the previous layer.
    if (!heavy && !model.layers.empty()) {
      LayerDesc &prev = model.layers.back();
      for (OpDesc &d : current.ops)
        prev.ops.push_back(std::move(d));
      prev.boundaryBytes = boundary;
      opsOf.back().insert(opsOf.back().end(), currentOps.begin(),
                          currentOps.end());
    } else {
      model.layers.push_back(std::move(current));
      opsOf.push_back(std::move(currentOps));
    }
    current = LayerDesc();
    currentOps.clear();
    heavy = false;
    (void)end;
  };
  for (size_t i = 0; i < items.size(); ++i) {
    currentOps.push_back(items[i].op);
    if (items[i].desc) {
      heavy |= isHeavy(*items[i].desc);
      current.ops.push_back(*items[i].desc);
    }
    bool last = i + 1 == items.size();
    if (last || (liveMain[i] == 1 && !current.ops.empty()))
      finish(i, last ? 0 : liveBytes[i]);
  }
  // A light first layer (before any heavy op) joins the next one.
  if (model.layers.size() > 1) {
    bool firstHeavy = llvm::any_of(model.layers.front().ops, isHeavy);
    if (!firstHeavy) {
      LayerDesc &next = model.layers[1];
      next.ops.insert(next.ops.begin(), model.layers.front().ops.begin(),
                      model.layers.front().ops.end());
      model.layers.erase(model.layers.begin());
      opsOf[1].insert(opsOf[1].begin(), opsOf[0].begin(), opsOf[0].end());
      opsOf.erase(opsOf.begin());
    }
  }
  if (options.layerOps)
    *options.layerOps = std::move(opsOf);
  for (auto [i, layer] : llvm::enumerate(model.layers)) {
    layer.name = llvm::formatv("layer{0}", i).str();
    if (!layer.ops.empty())
      layer.name += " (" + layer.ops.front().name + " .. " +
                    layer.ops.back().name + ")";
  }
  return model;
}

namespace distopt {
StringRef tensorParallelRoleName(TensorParallelRole role) {
  switch (role) {
  case TensorParallelRole::Column:
    return "column";
  case TensorParallelRole::Row:
    return "row";
  case TensorParallelRole::Split:
    return "split";
  case TensorParallelRole::Replicated:
    return "replicated";
  }
  return "replicated";
}

FailureOr<ModelDesc> buildModelDesc(func::FuncOp func,
                                    const GraphModelOptions &options) {
  return GraphModelBuilder(func, options).build();
}
} // namespace distopt
