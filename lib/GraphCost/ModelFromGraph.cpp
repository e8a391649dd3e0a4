//===- ModelFromGraph.cpp - Cost-level model from graph IR -----*- C++ -*-===//
//
// Part of DistOpt.
//
//===----------------------------------------------------------------------===//
#include "lib/GraphCost/ModelFromGraph.h"
#include "lib/GraphCost/FusedKernels.h"

#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/GraphShapeUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace distopt;
using namespace distopt::cost;
namespace g = distopt::graph;
using graphcost::isScoreShaped;
using graphcost::numElements;

//===----------------------------------------------------------------------===//
// Small helpers
//===----------------------------------------------------------------------===//

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
  // Complex and index elements (any type the verifiers allow) have no
  // cost-model dtype; they count by their storage size.
  return numElements(type) *
         (dt ? cluster::dtypeBytes(*dt) : double(graph::elementBytes(type)));
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

using graphcost::Item;

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
  /// Bytes of a tensor of \p type as the model runs it: floating-point
  /// tensors in dtypeFor (an f32 graph trained in bf16 sends and keeps bf16
  /// activations), others in their own width.
  double bytesFor(Type type) const;
  bool isWeightLike(Value v) const { return !sampleDependent.contains(v); }
  /// Reads every item's `dist.layer` into \p layerOf; false when the
  /// function carries no layer annotations, failure when they are
  /// incomplete or out of program order.
  FailureOr<bool> annotatedLayers(ArrayRef<Item> items,
                                  std::vector<unsigned> &layerOf) const;
  /// Layers between cut points: a stretch ends after an item where one
  /// activation is live; one with nothing heavy (matmul, convolution,
  /// embedding) joins the previous layer, and a light first layer the next.
  void cutLayers(ArrayRef<Item> items, ArrayRef<int64_t> liveMain,
                 std::vector<unsigned> &layerOf) const;

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

double GraphModelBuilder::bytesFor(Type type) const {
  if (isa<FloatType>(getElementTypeOrSelf(type)))
    return numElements(type) * cluster::dtypeBytes(dtypeFor(type));
  return bytesOf(type);
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
                        bytesFor(in) + bytesFor(w), bytesFor(resultType)};
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
            OpDesc e = elementwiseOp(name, dt, outElements,
                                     std::max(1u, o->getNumOperands()));
            // A sum's gradient is the output gradient: nothing to keep.
            if (auto bin = dyn_cast<g::BinaryOp>(o))
              if (bin.getKind() == g::BinaryKind::Add ||
                  bin.getKind() == g::BinaryKind::Sub)
                e.savedBytes = 0;
            return std::optional<OpDesc>(e);
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
          fwd.bytesRead += bytesFor(v.getType());
        for (Value v : o->getResults()) {
          fwd.bytesWritten += bytesFor(v.getType());
          fwd.flops += numElements(v.getType());
        }
        return otherOp(name, dt, fwd);
      });
}

FailureOr<bool>
GraphModelBuilder::annotatedLayers(ArrayRef<Item> items,
                                   std::vector<unsigned> &layerOf) const {
  StringRef name = dist::DistDialect::LayerAttrHelper::getNameStr();
  bool any = llvm::any_of(
      items, [&](const Item &item) { return item.op->hasAttr(name); });
  if (!any)
    return false;
  int64_t expected = 0;
  for (auto [i, item] : llvm::enumerate(items)) {
    auto layer = item.op->getAttrOfType<IntegerAttr>(name);
    if (!layer)
      return item.op->emitOpError("does per-sample work but has no '")
             << name
             << "' while other ops of the function have one; annotate the "
                "layers of the whole function (dist-annotate-layers) or of "
                "none";
    int64_t l = layer.getInt();
    if (l != expected && l != expected + 1)
      return item.op->emitOpError("has '")
             << name << "' = " << l << " after layer " << expected
             << "; layers must be numbered from 0 in program order without "
                "gaps (re-run dist-annotate-layers)";
    if (i == 0 && l != 0)
      return item.op->emitOpError("starts at '")
             << name << "' = " << l << "; the first layer is 0";
    expected = l;
    layerOf[i] = l;
  }
  return true;
}

void GraphModelBuilder::cutLayers(ArrayRef<Item> items,
                                  ArrayRef<int64_t> liveMain,
                                  std::vector<unsigned> &layerOf) const {
  auto isHeavy = [](const Item &item) {
    return item.desc && (item.desc->cls == OpClass::MatMul ||
                         item.desc->cls == OpClass::Conv ||
                         item.desc->cls == OpClass::Embedding);
  };
  // Stretches [begin, end) between cut points, light ones merged backwards.
  std::vector<std::pair<size_t, bool>> stretchEnds; // (end, heavy)
  size_t begin = 0;
  bool heavy = false, costed = false;
  for (size_t i = 0; i < items.size(); ++i) {
    heavy |= isHeavy(items[i]);
    costed |= items[i].desc.has_value();
    bool last = i + 1 == items.size();
    if (!last && !(liveMain[i] == 1 && costed))
      continue;
    if (!heavy && !stretchEnds.empty())
      stretchEnds.back().first = i + 1;
    else
      stretchEnds.push_back({i + 1, heavy});
    begin = i + 1;
    heavy = costed = false;
  }
  (void)begin;
  // A light first layer (before any heavy op) joins the next one.
  if (stretchEnds.size() > 1 && !stretchEnds.front().second)
    stretchEnds.erase(stretchEnds.begin());
  size_t i = 0;
  for (auto [l, end] : llvm::enumerate(stretchEnds))
    for (; i < end.first; ++i)
      layerOf[i] = l;
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
        outBytes += bytesFor(r.getType());
      for (Value v : op.getOperands())
        if (sampleDependent.contains(v))
          inBytes += bytesFor(v.getType());
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
            fullBytes += bytesFor(v.getType());
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
  graphcost::fuseKernels(items, defIndex, {sampleDependent, side}, samples,
                         options.fusedAttention);

  // Last use of every sample-dependent value, in item positions.
  DenseMap<Value, int64_t> lastUse;
  for (auto [i, item] : llvm::enumerate(items))
    for (Value operand : item.op->getOperands())
      if (sampleDependent.contains(operand))
        lastUse[operand] = i;

  // After item i, which values are live? A cut point is where exactly one
  // non-side activation is (side values such as masks travel along).
  std::vector<int64_t> liveMain(items.size() + 1, 0);
  std::vector<double> liveBytes(items.size() + 1, 0);
  for (auto &[value, last] : lastUse) {
    int64_t def = defIndex.lookup(value);
    double bytes = bytesFor(value.getType()) / samples;
    bool isMain = !side.contains(value);
    for (int64_t i = std::max<int64_t>(def, 0); i < last; ++i) {
      liveBytes[i] += bytes;
      if (isMain)
        ++liveMain[i];
    }
  }

  // The layer of every item: from the annotations, or from the cut points.
  std::vector<unsigned> layerOf(items.size(), 0);
  if (FailureOr<bool> annotated = annotatedLayers(items, layerOf);
      failed(annotated))
    return failure();
  else if (!*annotated)
    cutLayers(items, liveMain, layerOf);

  ModelDesc model;
  model.name = func.getSymName().str();
  std::vector<std::vector<Operation *>> opsOf;
  for (auto [i, item] : llvm::enumerate(items)) {
    if (layerOf[i] == model.layers.size()) {
      model.layers.emplace_back();
      opsOf.emplace_back();
    }
    LayerDesc &layer = model.layers.back();
    opsOf.back().push_back(item.op);
    if (item.desc)
      layer.ops.push_back(*item.desc);
    // The boundary after a layer: what is live past its last item.
    bool last = i + 1 == items.size();
    layer.boundaryBytes = last ? 0 : liveBytes[i];
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
FailureOr<ModelDesc> buildModelDesc(func::FuncOp func,
                                    const GraphModelOptions &options) {
  FailureOr<ModelDesc> model = GraphModelBuilder(func, options).build();
  if (succeeded(model))
    model->attentionHeads = attentionHeadCount(func);
  return model;
}
} // namespace distopt
