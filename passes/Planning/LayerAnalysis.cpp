//===- LayerAnalysis.cpp - The layers the planner sees ----------*- C++ -*-===//
//
// Part of DistOpt.
//
//===----------------------------------------------------------------------===//
#include "passes/Planning/LayerAnalysis.h"
#include "passes/Planning/ConvChannels.h"
#include "passes/Planning/FusedKernels.h"
#include "passes/Planning/NormalizedMatmuls.h"
#include "passes/Planning/VocabularyTables.h"

#include "passes/Distribute/SplitValues.h"

#include "dialects/Graph/GraphCost.h"
#include "dialects/Graph/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/FormatVariadic.h"

#include <numeric>

using namespace mlir;
using namespace distopt;
using namespace distopt::cost;
using namespace distopt::planning;
namespace g = distopt::graph;

namespace {

/// The layers, parameters and tensor-parallel roles of one function.
class LayerAnalysis {
public:
  LayerAnalysis(func::FuncOp func, const LayerAnalysisOptions &options)
      : func(func), options(options) {}

  FailureOr<ModelDesc> build();

private:
  /// Classifies values: sample-dependent (derived from the arguments), side
  /// (sample-dependent but computed without any weight: masks, ids).
  void classifyValues();
  /// Root `graph.weight` ops a weight-like value is computed from.
  void collectWeightRoots(Value value, SmallVectorImpl<Operation *> &roots);
  /// The cost of one sample-dependent op (unscaled), or nullopt for views.
  std::optional<OpDesc> costOf(Operation *op) const;
  /// Bytes of a tensor of \p type as the model runs it (CostContext::bytesFor
  /// in the compute type).
  double bytesFor(Type type) const;
  bool isWeightLike(Value v) const { return !sampleDependent.contains(v); }
  /// Bytes of the trainable operands of elementwise \p op that hold one row
  /// per token position of its [samples, tokens, features] result,
  /// broadcast over the samples only (a learned position table): what
  /// split::TokenSplit slices to a rank's tokens (OpDesc::positionRowsBytes).
  double positionRowsBytes(Operation *op);
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
  const LayerAnalysisOptions &options;
  DenseSet<Value> sampleDependent;
  DenseSet<Value> side;
  /// Values holding column-parallel (split) activations under Megatron TP.
  DenseSet<Value> split;
  /// What the tensor-parallel degree must divide for each split value to
  /// split (OpDesc::tpDivisor): the gcd of the columns of the
  /// column-parallel matmuls it is computed from.
  DenseMap<Value, int64_t> splitDivisor;
  /// The gcd of \p columns (a column-parallel matmul's own) and the
  /// divisors of \p op's split operands.
  int64_t divisorOf(Operation *op, int64_t columns = 0) const;
  /// Marks \p op's results split, with divisorOf(op, columns); returns it.
  int64_t splitResults(Operation *op, int64_t columns = 0);
  /// Inputs of column-parallel matmuls whose gradient all-reduce is
  /// counted: dist-tensor-parallel gives the columns of a region that read
  /// one input one dist.tp_copy (Llama's Q, K and V projections, SwiGLU's
  /// gate and up), so the backward sums that gradient once.
  DenseSet<Value> copied;
  /// The item that counted each root weight's parameters first.
  DenseMap<Operation *, size_t> countedWeights;
  /// Channel-parallel convolutions: what dist-tensor-parallel does with
  /// convolutions and the ops their channel splits reach.
  ConvChannels channels;
};
} // namespace

double LayerAnalysis::bytesFor(Type type) const {
  g::CostContext context;
  context.computeType = options.computeType;
  return context.bytesFor(type);
}

void LayerAnalysis::classifyValues() {
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

/// True when \p v (a matmul's output, split by its columns under Megatron
/// TP), through ops that keep its shape element by element, reaches a
/// softmax along its last dimension (the probabilities over an LM head's
/// vocabulary): dist-tensor-parallel cannot split that region (a softmax
/// along the split dimension) and runs it whole on every rank.
static bool softmaxOverColumns(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || type.getRank() == 0)
    return false;
  return llvm::any_of(v.getUsers(), [&](Operation *user) {
    if (auto sm = dyn_cast<g::SoftmaxOp>(user)) {
      int64_t axis = sm.getAxis();
      return (axis < 0 ? axis + type.getRank() : axis) == type.getRank() - 1;
    }
    if (isa<g::UnaryOp, g::CastOp, g::DropoutOp>(user) ||
        (isa<g::BinaryOp>(user) && user->getResult(0).getType() == type))
      return softmaxOverColumns(user->getResult(0));
    return false;
  });
}

/// Whether dist-tensor-parallel splits lookup \p lookup by vocabulary rows
/// (its splitVocabulary): a table only it reads, or one tied to an LM head
/// (tiedHead) whose region splits; softmaxOverColumns keeps such a head,
/// and so its table, whole. The tensor-parallel degree's divisibility is
/// the plan's, not asked here.
static bool splitsByVocabulary(g::EmbeddingOp lookup) {
  auto table = lookup.getTable().getDefiningOp<g::WeightOp>();
  if (!table || !splitsVocabulary(lookup, /*tp=*/1))
    return false;
  if (table.getResult().hasOneUse())
    return true;
  g::MatmulOp head = tiedHead(table, /*tp=*/1);
  return head && !softmaxOverColumns(head.getResult());
}

int64_t LayerAnalysis::divisorOf(Operation *op, int64_t columns) const {
  int64_t divisor = columns;
  for (Value v : op->getOperands())
    if (split.contains(v))
      divisor = std::gcd(divisor, splitDivisor.lookup(v));
  return divisor;
}

int64_t LayerAnalysis::splitResults(Operation *op, int64_t columns) {
  int64_t divisor = divisorOf(op, columns);
  for (Value r : op->getResults()) {
    split.insert(r);
    splitDivisor[r] = divisor;
  }
  if (options.tpDivisors && divisor)
    (*options.tpDivisors)[op] = divisor;
  return divisor;
}

void LayerAnalysis::collectWeightRoots(Value value,
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

double LayerAnalysis::positionRowsBytes(Operation *op) {
  auto result = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!isa<g::BinaryOp>(op) || !result || result.getRank() != 3 ||
      result.getDimSize(1) <= 1 || result.getDimSize(2) <= 1)
    return 0;
  double bytes = 0;
  for (Value v : op->getOperands()) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!isWeightLike(v) || !t || t.getRank() < 2 ||
        (t.getRank() == 3 && t.getDimSize(0) != 1) ||
        t.getShape().take_back(2) != result.getShape().take_back(2))
      continue;
    SmallVector<Operation *> roots;
    collectWeightRoots(v, roots);
    if (!roots.empty())
      bytes += bytesFor(t);
  }
  return bytes;
}

std::optional<OpDesc> LayerAnalysis::costOf(Operation *op) const {
  g::CostContext context;
  context.computeType = options.computeType;
  auto weightLike = [&](Value v) { return isWeightLike(v); };
  context.isWeightLike = weightLike;
  if (auto costed = dyn_cast<g::CostOpInterface>(op))
    return costed.getCost(context);
  return g::genericCost(op, context);
}

FailureOr<bool>
LayerAnalysis::annotatedLayers(ArrayRef<Item> items,
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

void LayerAnalysis::cutLayers(ArrayRef<Item> items, ArrayRef<int64_t> liveMain,
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

FailureOr<ModelDesc> LayerAnalysis::build() {
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
  channels = analyzeConvChannels(func);

  // Cost every sample-dependent op, in program order.
  std::vector<Item> items;
  // Items reading only weights an earlier item counted: the earlier item.
  DenseMap<size_t, size_t> tiedOwner;
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
      std::optional<size_t> owner;
      for (Operation *root : roots) {
        double n = g::tensorElements(root->getResult(0).getType());
        auto [it, first] = countedWeights.try_emplace(root, items.size());
        if (first) {
          params += n;
        } else {
          tied += n;
          owner = it->second;
        }
      }
      if (!roots.empty()) {
        desc->params = params ? params : tied;
        if (!params)
          tiedOwner[items.size()] = *owner;
      } else if (isa<g::MatmulOp, g::ConvOp>(op)) {
        desc->params = 0;
      }
      desc->positionRowsBytes = positionRowsBytes(&op);
      // Megatron tensor parallelism: a weighted matmul reading a split
      // activation is row-parallel (all-reduce its output), otherwise
      // column-parallel (split output, all-reduce the input gradient).
      bool anySplit = llvm::any_of(op.getOperands(),
                                   [&](Value v) { return split.contains(v); });
      bool weighted = !roots.empty();
      double outBytes = 0;
      for (Value r : op.getResults())
        outBytes += bytesFor(r.getType());
      auto record = [&](TensorParallelRole role) {
        if (options.tpRoles)
          (*options.tpRoles)[&op] = role;
      };
      if (std::optional<ChannelRole> c = channels.roleOf(&op)) {
        switch (*c) {
        case ChannelRole::Column:
          record(TensorParallelRole::Column);
          for (Value v : op.getOperands())
            if (sampleDependent.contains(v) && copied.insert(v).second)
              desc->tpAllReduceBwdBytes += bytesFor(v.getType());
          desc->tp = TpMode::Split;
          break;
        case ChannelRole::Row:
          record(TensorParallelRole::Row);
          desc->tpAllReduceFwdBytes = outBytes;
          desc->tp = TpMode::Split;
          break;
        case ChannelRole::Split:
          record(TensorParallelRole::Split);
          desc->tp = TpMode::Split;
          break;
        case ChannelRole::Gather:
          // Each split operand is all-gathered: a ring all-gather of S
          // bytes moves what an all-reduce of S / 2 does.
          for (Value v : op.getOperands())
            if (channels.split.contains(v))
              desc->tpAllReduceFwdBytes += bytesFor(v.getType()) / 2;
          [[fallthrough]];
        case ChannelRole::Whole:
          record(TensorParallelRole::Replicated);
          desc->tp = TpMode::Replicated;
          desc->savedReplicatedBytes = desc->savedBytes;
          desc->savedBytes = 0;
          break;
        }
        // Its sums stay all-reduces: sequence parallelism leaves it whole.
        desc->channelSplit = desc->tp == TpMode::Split;
      } else if (isa<g::MatmulOp>(op) && weighted && !anySplit &&
                 (normalizedOverFeatures(op.getResult(0)) ||
                  softmaxOverColumns(op.getResult(0)))) {
        // Normalized over its features (latent attention's down
        // projections and their RMSNorms: Megatron keeps them whole), or
        // reaching a softmax over its columns (an LM head's probabilities,
        // a MoE router's): dist-tensor-parallel runs it replicated.
        record(TensorParallelRole::Replicated);
        desc->tp = TpMode::Replicated;
        desc->savedReplicatedBytes = desc->savedBytes;
        desc->savedBytes = 0;
      } else if (isa<g::MatmulOp>(op) && weighted) {
        record(anySplit ? TensorParallelRole::Row : TensorParallelRole::Column);
        if (anySplit) {
          desc->tpAllReduceFwdBytes = outBytes;
          desc->tpDivisor = divisorOf(&op);
        } else {
          for (Value v : op.getOperands())
            if (sampleDependent.contains(v) && copied.insert(v).second)
              desc->tpAllReduceBwdBytes += bytesFor(v.getType());
          // dist-tensor-parallel splits the columns (an LM head's: the
          // vocabulary), each block of a fused projection's over the ranks,
          // or keeps the region whole.
          auto out = dyn_cast<RankedTensorType>(op.getResult(0).getType());
          int64_t columns = out && out.getRank() ? out.getShape().back() : 0;
          desc->tpDivisor = splitResults(
              &op, columns / split::fusedBlocks(cast<g::MatmulOp>(op)));
        }
        desc->tp = TpMode::Split;
      } else if (auto lookup = dyn_cast<g::EmbeddingOp>(op);
                 lookup && !splitsByVocabulary(lookup)) {
        // A lookup of a shared table, or of one tied to a head that stays
        // whole: every rank looks up the whole table.
        record(TensorParallelRole::Replicated);
        desc->tp = TpMode::Replicated;
        desc->savedReplicatedBytes = desc->savedBytes;
        desc->savedBytes = 0;
      } else if (auto lookup = dyn_cast<g::EmbeddingOp>(op)) {
        // Vocabulary-parallel: splitsVocabulary, when tp divides the rows.
        record(TensorParallelRole::Row);
        desc->tpAllReduceFwdBytes = outBytes;
        desc->tp = TpMode::Split;
        desc->tpDivisor =
            cast<RankedTensorType>(lookup.getTable().getType()).getDimSize(0);
      } else if (anySplit && !isa<g::LayerNormOp, g::RMSNormOp>(op)) {
        // A full-size activation meeting a split one must gather the split
        // operand first. A broadcast (Expand: latent attention's one
        // rotary key for every head) is made where it is read, each rank
        // its own part.
        double fullBytes = 0;
        for (Value v : op.getOperands())
          if (sampleDependent.contains(v) && !split.contains(v) &&
              !side.contains(v) &&
              !isa_and_nonnull<g::ExpandOp>(v.getDefiningOp()))
            fullBytes += bytesFor(v.getType());
        if (fullBytes > 0) {
          record(TensorParallelRole::Replicated);
          desc->tp = TpMode::Replicated;
          desc->tpAllReduceFwdBytes = outBytes;
          desc->tpDivisor = divisorOf(&op);
          desc->savedReplicatedBytes = desc->savedBytes;
          desc->savedBytes = 0;
        } else {
          record(TensorParallelRole::Split);
          desc->tp = TpMode::Split;
          desc->tpDivisor = splitResults(&op);
          // A broadcast only this concat reads (latent attention's keys) is
          // each rank's heads (dist-tensor-parallel's splitBroadcast); its
          // input is read through a copy whose backward all-reduces the
          // input's gradient.
          for (Value v : op.getOperands())
            if (auto e = v.getDefiningOp<g::ExpandOp>();
                e && isa<g::ConcatOp>(op) && v.hasOneUse() &&
                sampleDependent.contains(v) && !split.contains(v) &&
                !side.contains(v)) {
              if (options.tpRoles)
                (*options.tpRoles)[e] = TensorParallelRole::Split;
              if (copied.insert(e.getInput()).second)
                desc->tpAllReduceBwdBytes += bytesFor(e.getInput().getType());
            }
        }
      } else {
        record(TensorParallelRole::Replicated);
        desc->tp = TpMode::Replicated;
        desc->savedReplicatedBytes = desc->savedBytes;
        desc->savedBytes = 0;
      }
      if (options.tpDivisors && desc->tpDivisor)
        (*options.tpDivisors)[&op] = desc->tpDivisor;
      // Attention core: what selective recomputation drops (Korthikanti).
      if (!weighted &&
          (isa<g::MatmulOp, g::SoftmaxOp, g::DropoutOp>(op) ||
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
    } else if (std::optional<ChannelRole> c = channels.roleOf(&op)) {
      // A view of channel-split values keeps them split, or (a result of
      // the function) gathers them.
      if (options.tpRoles)
        (*options.tpRoles)[&op] = *c == ChannelRole::Split
                                      ? TensorParallelRole::Split
                                      : TensorParallelRole::Replicated;
    } else if (llvm::any_of(op.getOperands(),
                            [&](Value v) { return split.contains(v); })) {
      // Views (reshape, flatten) cost nothing but keep a split activation
      // split.
      splitResults(&op);
      if (options.tpRoles)
        (*options.tpRoles)[&op] = TensorParallelRole::Split;
    }
    for (Value r : op.getResults())
      defIndex[r] = items.size();
    items.push_back({&op, std::move(desc)});
  }
  if (items.empty())
    return func.emitError("'")
           << func.getSymName() << "' computes nothing from its inputs";
  fuseKernels(items, defIndex, {sampleDependent, side}, samples,
                         options.fusedAttention);
  markExperts(items, defIndex, {sampleDependent, side}, samples,
              options.remarkExperts);

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
  std::vector<std::vector<LayerDesc::BoundaryTensor>> liveTensors(items.size() +
                                                                  1);
  for (auto &[value, last] : lastUse) {
    int64_t def = defIndex.lookup(value);
    double bytes = bytesFor(value.getType()) / samples;
    bool isMain = !side.contains(value);
    // An input of the function (labels, a mask; a side value, so no cut
    // point counts it either) is no message: every pipeline list reads the
    // step's inputs itself (docs/partition.md, "Boundaries").
    if (isa<BlockArgument>(value))
      continue;
    auto type = dyn_cast<ShapedType>(value.getType());
    bool shaped = type && type.hasStaticShape();
    LayerDesc::BoundaryTensor tensor{
        bytes, shaped ? double(type.getNumElements()) / samples : 0,
        shaped && isa<FloatType>(type.getElementType()),
        split.contains(value) || channels.split.contains(value),
        splitDivisor.lookup(value)};
    for (int64_t i = std::max<int64_t>(def, 0); i < last; ++i) {
      liveBytes[i] += bytes;
      liveTensors[i].push_back(tensor);
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

  for (auto [i, owner] : tiedOwner)
    if (items[i].desc)
      items[i].desc->tiedLayer = layerOf[owner];

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
    layer.boundaryTensors =
        last ? std::vector<LayerDesc::BoundaryTensor>{} : liveTensors[i];
  }
  // Full recomputation checkpoints the blocks between the token embedding
  // and the output layer (Megatron, torchtitan; cost::tokenEmbeddingLayer
  // and lmHeadLayer): neither re-runs its forward.
  const LayerDesc &front = model.layers.front();
  if (model.layers.size() > 2 &&
      llvm::any_of(
          front.ops,
          [](const OpDesc &op) { return op.cls == OpClass::Embedding; }) &&
      llvm::none_of(front.ops,
                    [](const OpDesc &op) { return op.cls == OpClass::MatMul; }))
    model.layers.front().checkpoint = model.layers.back().checkpoint = false;
  // The layers are half-blocks (a cut where one activation is live falls
  // after each residual add): full recomputation checkpoints each
  // transformer block (the blocks trainers place), one input per block.
  unsigned headBegin = 0;
  std::vector<unsigned> blocks = transformerBlocks(model, headBegin);
  for (auto [b, begin] : llvm::enumerate(blocks)) {
    unsigned end = b + 1 < blocks.size() ? blocks[b + 1] : headBegin;
    for (unsigned l = begin + 1; l < end; ++l)
      model.layers[l].continuesBlock = true;
  }
  model.tpChannels = channels.divisor();
  if (options.layerOps)
    *options.layerOps = std::move(opsOf);
  for (auto [i, layer] : llvm::enumerate(model.layers)) {
    layer.name = llvm::formatv("layer{0}", i).str();
    if (!layer.ops.empty())
      layer.name +=
          " (" + layer.ops.front().name + " .. " + layer.ops.back().name + ")";
  }
  return model;
}

FailureOr<ModelDesc>
planning::analyzeLayers(func::FuncOp func,
                        const LayerAnalysisOptions &options) {
  FailureOr<ModelDesc> model = LayerAnalysis(func, options).build();
  if (succeeded(model))
    model->attentionHeads = attentionHeadCount(func);
  return model;
}
