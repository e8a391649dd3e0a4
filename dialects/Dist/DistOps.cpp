//===- DistOps.cpp - Operations of the distribution dialect ----*- C++ -*-===//
//
// Part of DistOpt. Verifiers and builders of `dist` operations.
//
//===----------------------------------------------------------------------===//
#include "dialects/Dist/DistOps.h"

#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace distopt::dist;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// A collective's group: non-empty, non-negative, each device once.
static LogicalResult verifyGroup(Operation *op, ArrayRef<int64_t> group) {
  if (group.empty())
    return op->emitOpError("needs a non-empty device group");
  llvm::DenseSet<int64_t> seen;
  for (int64_t device : group) {
    if (device < 0)
      return op->emitOpError("group device numbers must be non-negative, got ")
             << device;
    if (!seen.insert(device).second)
      return op->emitOpError("group lists device ") << device << " twice";
  }
  return success();
}

static LogicalResult verifyAxis(Operation *op, StringRef what, int64_t axis,
                                int64_t rank) {
  if (axis < 0 || axis >= rank)
    return op->emitOpError() << what << " " << axis
                             << " is out of range for a rank-" << rank
                             << " tensor";
  return success();
}

/// Checks that `result` equals `input` except along `axis`, where
/// `resultDim(inputDim)` gives the expected size. Dynamic sizes match anything.
static LogicalResult
verifyResizedAlong(Operation *op, RankedTensorType input,
                   RankedTensorType result, int64_t axis,
                   function_ref<int64_t(int64_t)> resultDim) {
  if (input.getElementType() != result.getElementType())
    return op->emitOpError("result element type ")
           << result.getElementType() << " differs from input element type "
           << input.getElementType();
  if (input.getRank() != result.getRank())
    return op->emitOpError("result rank ")
           << result.getRank() << " differs from input rank "
           << input.getRank();
  for (int64_t i = 0, e = input.getRank(); i < e; ++i) {
    int64_t in = input.getDimSize(i), out = result.getDimSize(i);
    if (ShapedType::isDynamic(in) || ShapedType::isDynamic(out))
      continue;
    int64_t expected = i == axis ? resultDim(in) : in;
    if (out != expected)
      return op->emitOpError("result dimension ")
             << i << " should be " << expected << ", got " << out;
  }
  return success();
}

static LogicalResult verifyDivisible(Operation *op, RankedTensorType type,
                                     int64_t axis, int64_t parts) {
  int64_t size = type.getDimSize(axis);
  if (!ShapedType::isDynamic(size) && size % parts != 0)
    return op->emitOpError("dimension ")
           << axis << " of size " << size << " does not split into " << parts
           << " equal parts";
  return success();
}

//===----------------------------------------------------------------------===//
// StageOp
//===----------------------------------------------------------------------===//

void StageOp::build(OpBuilder &builder, OperationState &state,
                    TypeRange results, int64_t index, MeshAttr mesh,
                    ValueRange inputs) {
  state.addTypes(results);
  state.addOperands(inputs);
  state.addAttribute(getIndexAttrName(state.name),
                     builder.getI64IntegerAttr(index));
  state.addAttribute(getMeshAttrName(state.name), mesh);
  Region *body = state.addRegion();
  Block *block = new Block();
  for (Value input : inputs)
    block->addArgument(input.getType(), input.getLoc());
  body->push_back(block);
  StageOp::ensureTerminator(*body, builder, state.location);
}

LogicalResult StageOp::verify() {
  if (getIndexAttr().getInt() < 0)
    return emitOpError("stage index must be non-negative, got ")
           << getIndexAttr().getInt();
  Block &block = getBody().front();
  if (block.getNumArguments() != static_cast<unsigned>(getInputs().size()))
    return emitOpError("body has ")
           << block.getNumArguments() << " arguments but the stage has "
           << getInputs().size() << " inputs";
  for (auto [i, arg, input] :
       llvm::enumerate(block.getArguments(), getInputs()))
    if (arg.getType() != input.getType())
      return emitOpError("body argument ")
             << i << " has type " << arg.getType() << " but input " << i
             << " has type " << input.getType();
  auto yield = cast<YieldOp>(block.getTerminator());
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError("yields ")
           << yield.getValues().size()
           << " values whose types differ from the stage's result types";
  return success();
}

//===----------------------------------------------------------------------===//
// Point-to-point
//===----------------------------------------------------------------------===//

static LogicalResult verifyPeerAndTag(Operation *op, int64_t peer,
                                      int64_t tag, bool list) {
  if (peer < 0)
    return op->emitOpError(list ? "peer list must be non-negative, got "
                                : "peer device number must be non-negative, "
                                  "got ")
           << peer;
  if (tag < 0 || tag > 32767)
    return op->emitOpError("tag must be in [0, 32767] (what the runtime's "
                           "transfers carry), got ")
           << tag;
  if (!list)
    return success();
  auto module = op->getParentOfType<ModuleOp>();
  PlanAttr plan = module ? DistDialect::PlanAttrHelper(op->getContext())
                               .getAttr(module)
                         : PlanAttr();
  if (!plan)
    return op->emitOpError("names its peer by action list, which needs the "
                           "module's plan ('dist.plan')");
  distopt::schedule::RankLayout layout = plan.getLayout();
  int64_t lists = layout.replicated() ? static_cast<int64_t>(layout.numSlots())
                                      : layout.pp;
  if (peer >= lists)
    return op->emitOpError("peer list ")
           << peer << " is out of range: the plan has " << lists
           << " action lists";
  return success();
}

LogicalResult SendOp::verify() {
  return verifyPeerAndTag(getOperation(), getPeerAttr().getInt(),
                          getTagAttr().getInt(), getList());
}

LogicalResult RecvOp::verify() {
  return verifyPeerAndTag(getOperation(), getPeerAttr().getInt(),
                          getTagAttr().getInt(), getList());
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

LogicalResult AllReduceOp::verify() {
  if (isWorld())
    return success();
  return verifyGroup(getOperation(), getGroup());
}

LogicalResult TpCopyOp::verify() {
  if (getGroup().empty())
    return success();
  return verifyGroup(getOperation(), getGroup());
}

/// `world` (every rank: an empty group) or `[d0, d1, ...]`.
ParseResult distopt::dist::parseWorldGroup(OpAsmParser &parser,
                                           DenseI64ArrayAttr &group) {
  if (succeeded(parser.parseOptionalKeyword("world"))) {
    group = DenseI64ArrayAttr::get(parser.getContext(), {});
    return success();
  }
  SMLoc loc = parser.getCurrentLocation();
  Attribute attr = DenseI64ArrayAttr::parse(parser, Type());
  group = llvm::dyn_cast_or_null<DenseI64ArrayAttr>(attr);
  if (!group)
    return failure();
  if (group.empty())
    return parser.emitError(loc, "an empty device group is written `world` "
                                 "(every rank of the job)");
  return success();
}

void distopt::dist::printWorldGroup(OpAsmPrinter &printer, Operation *,
                                    DenseI64ArrayAttr group) {
  if (group.empty()) {
    printer << "world";
    return;
  }
  printer << '[';
  llvm::interleaveComma(group.asArrayRef(), printer);
  printer << ']';
}

DenseI64ArrayAttr distopt::dist::deviceGroup(MLIRContext *ctx,
                                             ArrayRef<unsigned> devices) {
  SmallVector<int64_t> ids(devices.begin(), devices.end());
  return DenseI64ArrayAttr::get(ctx, ids);
}

void distopt::dist::setRunGroups(Operation *op,
                                 ArrayRef<std::vector<unsigned>> groups) {
  if (groups.size() < 2)
    return;
  SmallVector<Attribute> attrs;
  for (const std::vector<unsigned> &g : groups)
    attrs.push_back(deviceGroup(op->getContext(), g));
  DistDialect::GroupsAttrHelper(op->getContext())
      .setAttr(op, ArrayAttr::get(op->getContext(), attrs));
}

SmallVector<int64_t> distopt::dist::wholeShape(Operation *op) {
  SmallVector<int64_t> whole(
      cast<ShapedType>(op->getResult(0).getType()).getShape());
  if (auto block = DistDialect::ZeroShardAttrHelper(op->getContext())
                       .getAttr(op))
    whole.assign(block.getAs<DenseI64ArrayAttr>("shape").asArrayRef());
  if (auto part = DistDialect::TpShardAttrHelper(op->getContext()).getAttr(op))
    for (const ShardAxis &axis : shardAxes(part.asArrayRef()))
      whole[axis.dim] *= axis.parts;
  return whole;
}

SmallVector<distopt::dist::ShardAxis>
distopt::dist::shardAxes(ArrayRef<int64_t> shard) {
  SmallVector<ShardAxis> axes;
  if (shard.size() == 3) {
    axes.push_back({shard[0], shard[1], shard[2], 1});
    return axes;
  }
  if (shard.empty() || shard.size() % 4 != 0)
    return axes;
  for (size_t i = 0; i < shard.size(); i += 4)
    axes.push_back({shard[i], shard[i + 1], shard[i + 2], shard[i + 3]});
  return axes;
}

SmallVector<SmallVector<int64_t>> distopt::dist::runGroups(Operation *op) {
  SmallVector<SmallVector<int64_t>> groups;
  if (auto attr = DistDialect::GroupsAttrHelper(op->getContext()).getAttr(op)) {
    for (auto g : attr.getAsRange<DenseI64ArrayAttr>())
      groups.emplace_back(g.asArrayRef());
    return groups;
  }
  if (std::optional<ArrayRef<int64_t>> own = groupOf(op))
    groups.emplace_back(own->begin(), own->end());
  return groups;
}

std::optional<ArrayRef<int64_t>> distopt::dist::groupOf(Operation *op) {
  if (auto c = dyn_cast<CollectiveOpInterface>(op))
    return c.getGroupDevices();
  if (auto copy = dyn_cast<TpCopyOp>(op))
    return copy.getGroup();
  if (auto block =
          DistDialect::ZeroShardAttrHelper(op->getContext()).getAttr(op))
    if (auto group = block.getAs<DenseI64ArrayAttr>("group"))
      return group.asArrayRef();
  return std::nullopt;
}

LogicalResult AllGatherOp::verify() {
  if (failed(verifyGroup(getOperation(), getGroup())))
    return failure();
  auto input = cast<RankedTensorType>(getInput().getType());
  if (failed(verifyAxis(getOperation(), "axis", getAxis(), input.getRank())))
    return failure();
  int64_t n = getGroup().size();
  return verifyResizedAlong(getOperation(), input,
                            cast<RankedTensorType>(getResult().getType()),
                            getAxis(), [n](int64_t d) { return d * n; });
}

/// A collective that leaves each device of `group` one shard of `input`
/// along `axis` (reduce_scatter, all_slice).
static LogicalResult verifyShardedAlong(Operation *op, Value input,
                                        Value result, int64_t axis,
                                        ArrayRef<int64_t> group) {
  if (failed(verifyGroup(op, group)))
    return failure();
  auto in = cast<RankedTensorType>(input.getType());
  if (failed(verifyAxis(op, "axis", axis, in.getRank())))
    return failure();
  int64_t n = group.size();
  if (failed(verifyDivisible(op, in, axis, n)))
    return failure();
  return verifyResizedAlong(op, in, cast<RankedTensorType>(result.getType()),
                            axis, [n](int64_t d) { return d / n; });
}

LogicalResult ReduceScatterOp::verify() {
  return verifyShardedAlong(getOperation(), getInput(), getResult(),
                            getAxis(), getGroup());
}

LogicalResult AllSliceOp::verify() {
  return verifyShardedAlong(getOperation(), getInput(), getResult(),
                            getAxis(), getGroup());
}

LogicalResult AllToAllOp::verify() {
  if (failed(verifyGroup(getOperation(), getGroup())))
    return failure();
  auto input = cast<RankedTensorType>(getInput().getType());
  auto result = cast<RankedTensorType>(getResult().getType());
  int64_t split = getSplitAxis(), concat = getConcatAxis();
  if (failed(verifyAxis(getOperation(), "split axis", split, input.getRank())) ||
      failed(verifyAxis(getOperation(), "concat axis", concat,
                        input.getRank())))
    return failure();
  int64_t n = getGroup().size();
  if (failed(verifyDivisible(getOperation(), input, split, n)))
    return failure();
  if (split == concat)
    return verifyResizedAlong(getOperation(), input, result, split,
                              [](int64_t d) { return d; });
  // Shrinks along the split axis, grows along the concat axis.
  SmallVector<int64_t> expected(input.getShape());
  if (!ShapedType::isDynamic(expected[split]))
    expected[split] /= n;
  if (!ShapedType::isDynamic(expected[concat]))
    expected[concat] *= n;
  auto expectedType = RankedTensorType::get(expected, input.getElementType());
  return verifyResizedAlong(getOperation(), expectedType, result, split,
                            [](int64_t d) { return d; });
}

LogicalResult BroadcastOp::verify() {
  if (failed(verifyGroup(getOperation(), getGroup())))
    return failure();
  int64_t root = getRootAttr().getInt();
  if (!llvm::is_contained(getGroup(), root))
    return emitOpError("root device ")
           << root << " is not a member of the group";
  return success();
}

//===----------------------------------------------------------------------===//
// Context parallelism
//===----------------------------------------------------------------------===//

/// The shapes a ring attention over `group` relates: query [..., Sq, D],
/// key [..., Skv, D], value [..., Skv, Dv] with the same leading dims;
/// `result` [..., Sq, Dv], `lse` [..., Sq]; `mask` [..., Sq, n Skv] with
/// leading dims 1 or the query's. Static shapes (the runtime's buffers).
static LogicalResult verifyRing(Operation *op, ArrayRef<int64_t> group,
                                Value query, Value key, Value value, Value mask,
                                Value result, Value lse) {
  if (failed(verifyGroup(op, group)))
    return failure();
  auto q = cast<RankedTensorType>(query.getType()),
       k = cast<RankedTensorType>(key.getType()),
       v = cast<RankedTensorType>(value.getType());
  for (Value x : {query, key, value, mask, result, lse})
    if (x && !cast<RankedTensorType>(x.getType()).hasStaticShape())
      return op->emitOpError("needs statically shaped tensors, got ")
             << x.getType();
  const int64_t r = q.getRank();
  if (r < 2)
    return op->emitOpError("query ")
           << q << " needs [..., positions, features]";
  ArrayRef<int64_t> lead = q.getShape().drop_back(2);
  // Whether `x` is [lead..., tail...] (leading dims all 1 with
  // `sharedLead`).
  auto shaped = [&](Value x, ArrayRef<int64_t> tail, bool sharedLead = false) {
    SmallVector<int64_t> dims(lead);
    if (sharedLead)
      llvm::fill(dims, 1);
    dims.append(tail.begin(), tail.end());
    return cast<RankedTensorType>(x.getType()).getShape() ==
           ArrayRef<int64_t>(dims);
  };
  const int64_t sq = q.getDimSize(r - 2), d = q.getDimSize(r - 1);
  if (k.getRank() != r || !shaped(key, {k.getDimSize(r - 2), d}))
    return op->emitOpError("key ") << k << " must be [..., positions, " << d
                                   << "] with the query's leading dims";
  const int64_t skv = k.getDimSize(r - 2);
  if (v.getRank() != r || !shaped(value, {skv, v.getDimSize(r - 1)}))
    return op->emitOpError("value ")
           << v << " must be [..., " << skv
           << ", features] with the query's leading dims";
  const int64_t dv = v.getDimSize(r - 1);
  if (!shaped(result, {sq, dv}))
    return op->emitOpError("result ")
           << result.getType() << " must be the query's leading dims x " << sq
           << " x " << dv;
  if (lse && !shaped(lse, {sq}))
    return op->emitOpError("lse ")
           << lse.getType() << " must be the query's leading dims x " << sq;
  const int64_t seq = skv * static_cast<int64_t>(group.size());
  if (mask && !shaped(mask, {sq, seq}) &&
      !shaped(mask, {sq, seq}, /*sharedLead=*/true))
    return op->emitOpError("mask ")
           << mask.getType() << " must hold the " << sq
           << " query rows against all " << seq
           << " positions of the group, its leading dims all 1 or the "
              "query's";
  return success();
}

Value RingAttentionOp::getCollectiveInput() { return getQuery(); }
Value RingAttentionOp::getCollectiveResult() { return getResult(); }

LogicalResult RingAttentionOp::verify() {
  return verifyRing(getOperation(), getGroup(), getQuery(), getKey(),
                    getValue(), getMask(), getResult(), getLse());
}

Value RingAttentionGradOp::getCollectiveInput() { return getQuery(); }
Value RingAttentionGradOp::getCollectiveResult() { return getQueryGrad(); }

LogicalResult RingAttentionGradOp::verify() {
  if (failed(verifyRing(getOperation(), getGroup(), getQuery(), getKey(),
                        getValue(), getMask(), getResult(), getLse())))
    return failure();
  if (getResultGrad().getType() != getResult().getType() ||
      getQueryGrad().getType() != getQuery().getType() ||
      getKeyGrad().getType() != getKey().getType() ||
      getValueGrad().getType() != getValue().getType())
    return emitOpError("the gradients must have the types of the result, "
                       "query, key and value");
  return success();
}

//===----------------------------------------------------------------------===//
// Micro-batching
//===----------------------------------------------------------------------===//

/// The whole batch `whole` must be `parts` equal micro-batches along `axis`.
/// `mergeResult` says which side is the op's result, so that messages speak
/// of the result.
static LogicalResult verifyMicrobatches(Operation *op, RankedTensorType whole,
                                        TypeRange parts, int64_t axis,
                                        bool mergeResult) {
  if (parts.empty())
    return op->emitOpError("needs at least one micro-batch");
  if (failed(verifyAxis(op, "axis", axis, whole.getRank())))
    return failure();
  Type first = parts.front();
  for (Type part : parts)
    if (part != first)
      return op->emitOpError("micro-batches must all have the same type, got ")
             << first << " and " << part;
  int64_t n = parts.size();
  auto part = cast<RankedTensorType>(first);
  if (mergeResult)
    return verifyResizedAlong(op, part, whole, axis,
                              [n](int64_t d) { return d * n; });
  if (failed(verifyDivisible(op, whole, axis, n)))
    return failure();
  return verifyResizedAlong(op, whole, part, axis,
                            [n](int64_t d) { return d / n; });
}

LogicalResult MicrobatchSplitOp::verify() {
  return verifyMicrobatches(getOperation(),
                            cast<RankedTensorType>(getInput().getType()),
                            getMicrobatches().getTypes(), getAxis(),
                            /*mergeResult=*/false);
}

LogicalResult MicrobatchMergeOp::verify() {
  return verifyMicrobatches(getOperation(),
                            cast<RankedTensorType>(getResult().getType()),
                            getMicrobatches().getTypes(), getAxis(),
                            /*mergeResult=*/true);
}

std::optional<ReductionKind> AllReduceOp::getReduction() { return getKind(); }
std::optional<ReductionKind> ReduceScatterOp::getReduction() {
  return getKind();
}

#include "dialects/Dist/DistInterfaces.cpp.inc"

#define GET_OP_CLASSES
#include "dialects/Dist/DistOps.cpp.inc"
