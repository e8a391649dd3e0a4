//===- GraphCost.cpp - What a graph op costs --------------------*- C++ -*-===//
//
// Part of DistOpt. CostOpInterface for the forward ops, as external models
// that read the op's shapes and call the cost core's builders
// (`lib/Cost/ModelDesc.h`); their FLOP count is their cost's forward FLOPs.
// The training ops implement the interface themselves (GraphTrainOps.cpp).
//
//===----------------------------------------------------------------------===//
#include "dialects/Graph/GraphCost.h"
#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/GraphShapeUtils.h"

#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

using namespace mlir;
using namespace distopt;
using namespace distopt::graph;
using cost::OpDesc;
using cost::PhaseCost;

#include "dialects/Graph/GraphInterfaces.cpp.inc"

//===----------------------------------------------------------------------===//
// Shared rules
//===----------------------------------------------------------------------===//

double graph::tensorElements(Type type) {
  auto shaped = dyn_cast<RankedTensorType>(type);
  if (!shaped)
    return 1;
  double n = 1;
  for (int64_t d : shaped.getShape())
    n *= ShapedType::isDynamic(d) ? 1 : d;
  return n;
}

std::optional<cluster::DType> graph::costDType(Type type) {
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

double graph::tensorCostBytes(Type type) {
  std::optional<cluster::DType> dt = costDType(type);
  return tensorElements(type) *
         (dt ? cluster::dtypeBytes(*dt) : double(elementBytes(type)));
}

cluster::DType CostContext::dtypeFor(Type type) const {
  if (computeType)
    return *computeType;
  std::optional<cluster::DType> dt = type ? costDType(type) : std::nullopt;
  return dt && (*dt == cluster::DType::F32 || *dt == cluster::DType::F16 ||
                *dt == cluster::DType::BF16)
             ? *dt
             : cluster::DType::F32;
}

double CostContext::bytesFor(Type type) const {
  if (isa<FloatType>(getElementTypeOrSelf(type)))
    return tensorElements(type) * cluster::dtypeBytes(dtypeFor(type));
  return tensorCostBytes(type);
}

bool CostContext::weightLike(Value value) const {
  if (isWeightLike)
    return isWeightLike(value);
  for (Operation *def = value.getDefiningOp(); def;) {
    if (isa<WeightOp, ConstantOp, StateOp>(def))
      return true;
    if (def->getNumOperands() != 1)
      return false;
    def = def->getOperand(0).getDefiningOp();
  }
  return false;
}

std::string graph::costName(Operation *op) {
  std::string name;
  FileLineColLoc file;
  op->getLoc()->walk([&](Location loc) {
    if (auto named = dyn_cast<NameLoc>(loc)) {
      name = named.getName().str();
      return WalkResult::interrupt();
    }
    if (auto position = dyn_cast<FileLineColLoc>(loc); position && !file)
      file = position;
    return WalkResult::advance();
  });
  if (!name.empty())
    return name;
  // No node name (IR printed without debug info, or written by hand): the
  // op kind and where it is, so a report's op range still points at ops.
  name = op->getName().getStringRef().str();
  if (file && file.getLine() > 0)
    name += llvm::formatv(" at {0}:{1}:{2}",
                          llvm::sys::path::filename(file.getFilename()),
                          file.getLine(), file.getColumn())
                .str();
  return name;
}

double graph::unaryFlopsPerElement(UnaryKind kind) {
  switch (kind) {
  case UnaryKind::Gelu:
  case UnaryKind::GeluTanh:
    return 8;
  case UnaryKind::Silu:
  case UnaryKind::Sigmoid:
  case UnaryKind::Tanh:
  case UnaryKind::Erf:
  case UnaryKind::Exp:
  case UnaryKind::Log:
    return 4;
  default:
    return 1;
  }
}

/// Every operand read once, every result written once, in the context's
/// widths.
static PhaseCost traffic(Operation *op, const CostContext &context) {
  PhaseCost c;
  for (Value v : op->getOperands())
    c.bytesRead += context.bytesFor(v.getType());
  for (Value v : op->getResults())
    c.bytesWritten += context.bytesFor(v.getType());
  return c;
}

/// The type the op's cost is computed in: its first result's.
static Type resultType(Operation *op) {
  return op->getNumResults() ? op->getResult(0).getType() : Type();
}

/// One execution of the body of the function `symbol` names (looked up from
/// `op`): its ops costed by their own rules and added up, phase by phase.
/// The sum takes the class of its op with the most forward FLOPs (a branch
/// of matrix products runs at their efficiency); its signature is an "other"
/// one, which no profile holds, so the roofline prices it. None when the
/// symbol names no body.
static std::optional<OpDesc> bodyCost(Operation *op, SymbolRefAttr symbol,
                                      const CostContext &context) {
  Operation *callee = SymbolTable::lookupNearestSymbolFrom(op, symbol);
  if (!callee || callee->getNumRegions() != 1 ||
      !callee->getRegion(0).hasOneBlock())
    return std::nullopt;
  OpDesc sum;
  double heaviest = -1;
  for (Operation &inner : callee->getRegion(0).front()) {
    if (inner.hasTrait<OpTrait::IsTerminator>())
      continue;
    auto costed = dyn_cast<CostOpInterface>(&inner);
    std::optional<OpDesc> c =
        costed ? costed.getCost(context) : genericCost(&inner, context);
    if (!c)
      continue;
    if (c->fwd.flops > heaviest) {
      heaviest = c->fwd.flops;
      sum.cls = c->cls;
      sum.dtype = c->dtype;
    }
    sum.fwd += c->fwd;
    sum.bwdInput += c->bwdInput;
    sum.bwdWeight += c->bwdWeight;
    sum.savedBytes += c->savedBytes;
    sum.savedReplicatedBytes += c->savedReplicatedBytes;
  }
  OpDesc o = cost::otherOp(costName(op), sum.dtype, sum.fwd);
  o.cls = sum.cls;
  o.bwdInput = sum.bwdInput;
  o.bwdWeight = sum.bwdWeight;
  o.savedBytes = sum.savedBytes;
  o.savedReplicatedBytes = sum.savedReplicatedBytes;
  return o;
}

/// An If whose condition is known only at run time (`graph.opaque "If"`
/// whose `then_branch` and `else_branch` name the branches' functions, as
/// the importer writes them): its more expensive branch, by forward FLOPs
/// and then bytes, since the plan must fit the run that takes it. None when
/// either branch is not there (the importer could not translate it).
static std::optional<OpDesc> ifCost(OpaqueOp op, const CostContext &context) {
  if (op.getOpType() != "If" || !op.getDomain().empty())
    return std::nullopt;
  DictionaryAttr attrs = op.getAttrsAttr();
  auto thenRef = attrs.getAs<SymbolRefAttr>("then_branch");
  auto elseRef = attrs.getAs<SymbolRefAttr>("else_branch");
  if (!thenRef || !elseRef)
    return std::nullopt;
  std::optional<OpDesc> a = bodyCost(op, thenRef, context),
                        b = bodyCost(op, elseRef, context);
  if (!a || !b)
    return std::nullopt;
  auto key = [](const OpDesc &d) {
    return std::make_pair(d.fwd.flops, d.fwd.bytes());
  };
  return key(*b) > key(*a) ? b : a;
}

std::optional<OpDesc> graph::genericCost(Operation *op,
                                         const CostContext &context) {
  if (op->getNumResults() == 0)
    return std::nullopt;
  if (auto opaque = dyn_cast<OpaqueOp>(op))
    if (std::optional<OpDesc> branch = ifCost(opaque, context))
      return branch;
  PhaseCost fwd = traffic(op, context);
  for (Value v : op->getResults())
    fwd.flops += tensorElements(v.getType());
  return cost::otherOp(costName(op), context.dtypeFor(resultType(op)), fwd);
}

OpDesc graph::executedCost(Operation *op, const CostContext &context,
                           double flops) {
  PhaseCost fwd = traffic(op, context);
  fwd.flops = flops;
  OpDesc o = cost::otherOp(costName(op), context.dtypeFor(resultType(op)), fwd);
  o.bwdInput = {};
  o.savedBytes = 0;
  return o;
}

static double shapeProduct(ArrayRef<int64_t> dims) {
  double n = 1;
  for (int64_t d : dims)
    n *= ShapedType::isDynamic(d) ? 1 : d;
  return n;
}

//===----------------------------------------------------------------------===//
// Forward ops
//===----------------------------------------------------------------------===//

namespace {
/// What every forward op's rule reads: its name, element type and result
/// size.
struct OpFacts {
  OpFacts(Operation *op, const CostContext &context)
      : name(costName(op)), dt(context.dtypeFor(resultType(op))),
        outElements(op->getNumResults()
                        ? tensorElements(op->getResult(0).getType())
                        : 0) {}
  std::string name;
  cluster::DType dt;
  double outElements;
};
} // namespace

static std::optional<OpDesc> costOf(MatmulOp mm, const CostContext &context) {
  OpFacts f(mm, context);
  auto lhs = cast<RankedTensorType>(mm.getLhs().getType());
  auto rhs = cast<RankedTensorType>(mm.getRhs().getType());
  ArrayRef<int64_t> l = lhs.getShape(), r = rhs.getShape();
  double m = l.size() >= 2 ? l[l.size() - (mm.getTransposeLhs() ? 1 : 2)] : 1;
  double k = l.back() == ShapedType::kDynamic ? 1 : l.back();
  if (mm.getTransposeLhs() && l.size() >= 2)
    k = l[l.size() - 2];
  double n =
      r.size() >= 2 ? (mm.getTransposeRhs() ? r[r.size() - 2] : r.back()) : 1;
  double batch = f.outElements / std::max(1.0, m * n);
  bool weight =
      context.weightLike(mm.getRhs()) || context.weightLike(mm.getLhs());
  return cost::matmulOp(f.name, f.dt, weight ? 1 : batch,
                        weight ? batch * m : m, n, k, weight,
                        static_cast<bool>(mm.getBias()));
}

static std::optional<OpDesc> costOf(ConvOp conv, const CostContext &context) {
  OpFacts f(conv, context);
  auto in = cast<RankedTensorType>(conv.getInput().getType());
  auto w = cast<RankedTensorType>(conv.getWeight().getType());
  if (in.getRank() != 4 || w.getRank() != 4) {
    PhaseCost fwd{2 * f.outElements * shapeProduct(w.getShape()) /
                      std::max<int64_t>(1, w.getDimSize(0)),
                  context.bytesFor(in) + context.bytesFor(w),
                  context.bytesFor(conv.getResult().getType())};
    OpDesc o = cost::otherOp(f.name, f.dt, fwd);
    o.cls = cluster::OpClass::Conv;
    return o;
  }
  ArrayRef<int64_t> strides = conv.getStrides(), pads = conv.getPads();
  OpDesc o = cost::convOp(f.name, f.dt, in.getDimSize(1), in.getDimSize(2),
                          in.getDimSize(3), w.getDimSize(0), w.getDimSize(2),
                          w.getDimSize(3), strides.empty() ? 1 : strides[0],
                          pads.empty() ? 0 : pads[0], conv.getGroup(),
                          static_cast<bool>(conv.getBias()));
  // convOp is per image: scale to the op's batch like every other op.
  double images = std::max<int64_t>(1, in.getDimSize(0));
  o.fwd = o.fwd.scaled(images);
  o.bwdInput = o.bwdInput.scaled(images);
  o.bwdWeight = o.bwdWeight.scaled(images);
  o.savedBytes *= images;
  return o;
}

static std::optional<OpDesc> costOf(EmbeddingOp emb,
                                    const CostContext &context) {
  OpFacts f(emb, context);
  auto table = cast<RankedTensorType>(emb.getTable().getType());
  return cost::embeddingOp(
      f.name, f.dt, tensorElements(emb.getIndices().getType()),
      table.getDimSize(0), shapeProduct(table.getShape().drop_front()));
}

/// Layer and RMS norms: rows of the dimensions from `axis` on.
template <typename NormOpT>
static std::optional<OpDesc> normCost(NormOpT norm,
                                      const CostContext &context) {
  OpFacts f(norm, context);
  auto in = cast<RankedTensorType>(norm.getInput().getType());
  int64_t axis = static_cast<int64_t>(norm.getAxis());
  if (axis < 0)
    axis += in.getRank();
  double cols = shapeProduct(in.getShape().drop_front(axis));
  return cost::normOp(f.name, f.dt, f.outElements / std::max(1.0, cols), cols);
}
static std::optional<OpDesc> costOf(LayerNormOp op, const CostContext &c) {
  return normCost(op, c);
}
static std::optional<OpDesc> costOf(RMSNormOp op, const CostContext &c) {
  return normCost(op, c);
}

static std::optional<OpDesc> costOf(BatchNormOp bn,
                                    const CostContext &context) {
  OpFacts f(bn, context);
  auto in = cast<RankedTensorType>(bn.getInput().getType());
  double channels = in.getRank() > 1 ? in.getDimSize(1) : 1;
  return cost::normOp(f.name, f.dt, f.outElements / channels, channels);
}

static std::optional<OpDesc> costOf(SoftmaxOp sm, const CostContext &context) {
  OpFacts f(sm, context);
  auto in = cast<RankedTensorType>(sm.getInput().getType());
  int64_t axis = static_cast<int64_t>(sm.getAxis());
  if (axis < 0)
    axis += in.getRank();
  double cols = in.getDimSize(axis);
  return cost::softmaxOp(f.name, f.dt, f.outElements / std::max(1.0, cols),
                         cols);
}

static std::optional<OpDesc> costOf(SoftmaxCrossEntropyOp loss,
                                    const CostContext &context) {
  OpFacts f(loss, context);
  auto logits = cast<RankedTensorType>(loss.getLogits().getType());
  double classes = logits.getRank() > 1 ? logits.getDimSize(1) : 1;
  return cost::lossOp(f.name, f.dt, tensorElements(logits) / classes, classes);
}

static std::optional<OpDesc> costOf(ReduceOp red, const CostContext &context) {
  OpFacts f(red, context);
  return cost::reductionOp(
      f.name, f.dt, tensorElements(red.getInput().getType()), f.outElements);
}

static std::optional<OpDesc> costOf(PoolOp pool, const CostContext &context) {
  OpFacts f(pool, context);
  double window = pool.getGlobal() ? tensorElements(pool.getInput().getType()) /
                                         std::max(1.0, f.outElements)
                                   : shapeProduct(pool.getKernel());
  return cost::reductionOp(f.name, f.dt, f.outElements * window, f.outElements);
}

static std::optional<OpDesc> costOf(UnaryOp u, const CostContext &context) {
  OpFacts f(u, context);
  return cost::elementwiseOp(f.name, f.dt, f.outElements, 1,
                             unaryFlopsPerElement(u.getKind()));
}

/// Elementwise ops of several operands: one FLOP per element.
static std::optional<OpDesc> elementwiseCost(Operation *op,
                                             const CostContext &context) {
  OpFacts f(op, context);
  return cost::elementwiseOp(f.name, f.dt, f.outElements,
                             std::max(1u, op->getNumOperands()));
}

static std::optional<OpDesc> costOf(BinaryOp bin, const CostContext &context) {
  std::optional<OpDesc> e = elementwiseCost(bin, context);
  // A sum's gradient is the output gradient: nothing to keep.
  if (bin.getKind() == BinaryKind::Add || bin.getKind() == BinaryKind::Sub)
    e->savedBytes = 0;
  return e;
}

/// Training dropout keeps its mask for the backward, one byte per element
/// as PyTorch and Megatron-LM keep it (Korthikanti et al.'s as^2 of the
/// attention probabilities, sh of a residual), not its input.
static std::optional<OpDesc> costOf(DropoutOp op, const CostContext &context) {
  std::optional<OpDesc> e = elementwiseCost(op, context);
  e->savedBytes = tensorElements(op.getType());
  return e;
}

/// A running sum: one add per element, read once and written once; its
/// gradient (the sum the other way) needs nothing kept.
static std::optional<OpDesc> costOf(CumSumOp op, const CostContext &context) {
  std::optional<OpDesc> e = elementwiseCost(op, context);
  e->savedBytes = 0;
  return e;
}

/// A selection: every input element compared once and k values written
/// (a reduction's traffic), plus their i64 indices; the gradient (dy
/// scattered at the indices) keeps the indices only.
static std::optional<OpDesc> costOf(TopKOp op, const CostContext &context) {
  OpFacts f(op, context);
  OpDesc d = cost::reductionOp(
      f.name, f.dt, tensorElements(op.getInput().getType()), f.outElements);
  double indexBytes = tensorCostBytes(op.getIndices().getType());
  d.fwd.bytesWritten += indexBytes;
  d.bwdInput.bytesRead += indexBytes;
  d.savedBytes = indexBytes;
  return d;
}

/// Copies: transpose, split, slice, concat, expand, pad, gather, iota.
static std::optional<OpDesc> dataMovementCost(Operation *op,
                                              const CostContext &context) {
  OpFacts f(op, context);
  double elements = 0;
  for (Value r : op->getResults())
    elements += tensorElements(r.getType());
  return cost::dataMovementOp(f.name, f.dt, elements);
}

/// Views (reshape, flatten) and reads of stored data (weights, constants,
/// state): no per-sample work, no data moved.
template <typename OpT>
static std::optional<OpDesc> noCost(OpT, const CostContext &) {
  return std::nullopt;
}

/// A family's rule, for one op of the family.
template <std::optional<OpDesc> (*Rule)(Operation *, const CostContext &),
          typename OpT>
static std::optional<OpDesc> familyCost(OpT op, const CostContext &context) {
  return Rule(op, context);
}

namespace {
/// The interface's methods from a rule: the FLOP count is the cost's
/// forward FLOPs (0 for an op that moves nothing), so the two never differ.
template <typename OpT, std::optional<OpDesc> (*Rule)(OpT, const CostContext &)>
struct RuleCostModel
    : public CostOpInterface::ExternalModel<RuleCostModel<OpT, Rule>, OpT> {
  std::optional<OpDesc> getCost(Operation *op,
                                const CostContext &context) const {
    return Rule(cast<OpT>(op), context);
  }
  double getFlopCount(Operation *op) const {
    std::optional<OpDesc> c = getCost(op, CostContext());
    return c ? c->fwd.flops : 0;
  }
};
} // namespace

/// Ops with a `costOf` rule of their own.
template <typename... OpTs> static void attachOwnRules(MLIRContext *ctx) {
  (OpTs::template attachInterface<RuleCostModel<OpTs, &costOf>>(*ctx), ...);
}

template <std::optional<OpDesc> (*Rule)(Operation *, const CostContext &),
          typename... OpTs>
static void attachFamily(MLIRContext *ctx) {
  (OpTs::template attachInterface<RuleCostModel<OpTs, &familyCost<Rule, OpTs>>>(
       *ctx),
   ...);
}

template <typename... OpTs> static void attachNoCost(MLIRContext *ctx) {
  (OpTs::template attachInterface<RuleCostModel<OpTs, &noCost<OpTs>>>(*ctx),
   ...);
}

void graph::registerCostModels(MLIRContext *ctx) {
  attachOwnRules<MatmulOp, ConvOp, EmbeddingOp, LayerNormOp, RMSNormOp,
                 BatchNormOp, SoftmaxOp, SoftmaxCrossEntropyOp, ReduceOp,
                 PoolOp, UnaryOp, BinaryOp, CumSumOp, DropoutOp, TopKOp>(ctx);
  attachFamily<elementwiseCost, WhereOp, ClipOp, CastOp>(ctx);
  attachFamily<dataMovementCost, TransposeOp, SplitOp, SliceOp, ConcatOp,
               ExpandOp, PadOp, TriluOp, GatherOp, GatherElementsOp, GatherNDOp,
               ScatterElementsOp, ScatterNDOp, IotaOp>(ctx);
  attachNoCost<ReshapeOp, FlattenOp, WeightOp, ConstantOp, StateOp>(ctx);
}
