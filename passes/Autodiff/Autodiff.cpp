//===- Autodiff.cpp - The dist-autodiff pass --------------------*- C++ -*-===//
//
// Part of DistOpt. Builds the training program next to the forward function:
// forward + loss + backward + optimizer in @train_step, or split into
// @train_microbatch and @train_apply for gradient accumulation. The calling
// convention is documented in docs/autodiff.md.
//
//===----------------------------------------------------------------------===//
#include "passes/Autodiff/GradBuilder.h"
#include "passes/Autodiff/TrainStep.h"
#include "passes/Autodiff/Trainable.h"
#include "passes/Distribute/VocabParallel.h"
#include "passes/Passes.h"

#include "dialects/Dist/Balanced.h"
#include "dialects/Dist/DistDialect.h"
#include "dialects/Dist/DistOps.h"
#include "dialects/Graph/GraphOps.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringExtras.h"

namespace distopt {
#define GEN_PASS_DEF_AUTODIFFPASS
#include "passes/Autodiff/Passes.h.inc"
} // namespace distopt

using namespace mlir;
using namespace distopt;
using namespace distopt::autodiff;
namespace g = distopt::graph;

namespace {
/// Stamps created ops with a fixed phase.
struct StampListener : public OpBuilder::Listener {
  StringAttr phase;
  void notifyOperationInserted(Operation *op, OpBuilder::InsertPoint) override {
    op->setAttr(kPhaseAttr, phase);
  }
};

/// A weight to update: its name, current value and (f32) gradient.
struct WeightGrad {
  std::string name;
  Value param;
  Value grad;
};

/// A training-function result: a value and the buffer it writes (empty
/// for the loss output).
struct Output {
  Value value;
  std::string update;
};

struct AutodiffPass : public distopt::impl::AutodiffPassBase<AutodiffPass> {
  using Base::Base;
  void runOnOperation() override;

private:
  LogicalResult checkOptions(ModuleOp module);
  bool scaling() const { return scale != 1.0 || dynamic; }
  Value state(OpBuilder &b, Location loc, StringRef name, Type type,
              double init = 0.0) {
    return g::StateOp::create(b, loc, type, b.getStringAttr(name),
                              b.getF64FloatAttr(init));
  }
  /// Optimizer state of weight \p w: its type, and its tensor-parallel
  /// shard when the weight is one (dist-tensor-parallel).
  Value paramState(OpBuilder &b, Location loc, const WeightGrad &w,
                   StringRef suffix) {
    Value s = state(b, loc, w.name + suffix.str(), w.param.getType());
    if (Operation *def = w.param.getDefiningOp())
      if (Attribute shard = def->getAttr(kTpShardAttr))
        s.getDefiningOp()->setAttr(kTpShardAttr, shard);
    return s;
  }
  /// Unscale, step counter, optimizer updates and loss-scale update.
  void emitUpdate(OpBuilder &b, Location loc, ArrayRef<WeightGrad> weights,
                  SmallVectorImpl<Output> &outputs);
  DictionaryAttr configAttr(OpBuilder &b, StringRef role);
  void finish(func::FuncOp func, ArrayRef<Output> outputs, StringRef role);

  double scale = 1.0;
  bool dynamic = false;
  /// The loss to add: `loss=`, else `default-loss=` (`--dist-loss`; empty:
  /// none).
  std::string lossSpec;
};
} // namespace

LogicalResult AutodiffPass::checkOptions(ModuleOp module) {
  auto bad = [&](const Twine &msg) {
    return module.emitError("dist-autodiff: ") << msg;
  };
  if (optimizer != "sgd" && optimizer != "momentum" && optimizer != "adam" &&
      optimizer != "adamw")
    return bad("unknown optimizer '" + optimizer +
               "'; use sgd, momentum, adam or adamw");
  if (mixedPrecision != "none" && mixedPrecision != "bf16" &&
      mixedPrecision != "fp16")
    return bad("unknown mixed-precision '" + mixedPrecision +
               "'; use none, bf16 or fp16");
  if (accumulationSteps < 1)
    return bad("accumulation-steps must be at least 1, got " +
               Twine(accumulationSteps.getValue()));
  if (!(lr >= 0) || !(lossScale >= 0))
    return bad("lr and loss-scale must be non-negative");
  if (!loss.empty() && !defaultLoss.empty() && loss != defaultLoss)
    return bad("the pass option loss=" + loss + " and --dist-loss=" +
               defaultLoss +
               " name different losses; give the loss once (or the same "
               "value in both)");
  lossSpec = loss.empty() ? defaultLoss.getValue() : loss.getValue();
  if (!lossSpec.empty())
    if (std::string error = lossSpecError(lossSpec); !error.empty())
      return bad(error + " (given by " +
                 (loss.empty() ? "--dist-loss" : "the pass option loss=") +
                 ")");
  scale = lossScale > 0 ? lossScale.getValue()
                        : (mixedPrecision == "fp16" ? 65536.0 : 1.0);
  dynamic = mixedPrecision == "fp16" && dynamicLossScale;
  return success();
}

DictionaryAttr AutodiffPass::configAttr(OpBuilder &b, StringRef role) {
  SmallVector<NamedAttribute> attrs = {
      b.getNamedAttr("role", b.getStringAttr(role)),
      b.getNamedAttr("optimizer", b.getStringAttr(optimizer)),
      b.getNamedAttr("lr", b.getF64FloatAttr(lr)),
      b.getNamedAttr("accumulation_steps",
                     b.getI64IntegerAttr(accumulationSteps)),
      b.getNamedAttr("mixed_precision", b.getStringAttr(mixedPrecision)),
      b.getNamedAttr("loss_scale", b.getF64FloatAttr(scale)),
      b.getNamedAttr("dynamic_loss_scale", b.getBoolAttr(dynamic))};
  return b.getDictionaryAttr(attrs);
}

void AutodiffPass::emitUpdate(OpBuilder &b, Location loc,
                              ArrayRef<WeightGrad> weights,
                              SmallVectorImpl<Output> &outputs) {
  StampListener listener;
  listener.phase = b.getStringAttr("optimizer");
  OpBuilder::Listener *previous = b.getListener();
  b.setListener(&listener);
  auto f32Scalar = RankedTensorType::get({}, b.getF32Type());
  auto f32Const = [&](double v) -> Value {
    return g::ConstantOp::create(
        b, loc, f32Scalar,
        DenseElementsAttr::get(f32Scalar, b.getF32FloatAttr(v)));
  };

  SmallVector<Value> grads;
  for (const WeightGrad &w : weights)
    grads.push_back(w.grad);
  Value skip, scaleValue;
  if (scaling()) {
    scaleValue = dynamic ? state(b, loc, "loss_scale", f32Scalar, scale)
                         : f32Const(scale);
    SmallVector<Type> types;
    for (Value gr : grads)
      types.push_back(
          cast<RankedTensorType>(gr.getType()).clone(b.getF32Type()));
    types.push_back(RankedTensorType::get({}, b.getI1Type()));
    SmallVector<Value> operands = {scaleValue};
    llvm::append_range(operands, grads);
    auto unscale = g::UnscaleOp::create(b, loc, types, operands,
                                        ArrayRef<NamedAttribute>{});
    for (unsigned i = 0; i < grads.size(); ++i)
      grads[i] = unscale.getResult(i);
    skip = unscale.getResults().back();
  }
  Value step = state(b, loc, "step", f32Scalar);
  Value next = g::BinaryOp::create(b, loc, f32Scalar, g::BinaryKind::Add, step,
                                   f32Const(1.0));
  if (skip)
    next = g::WhereOp::create(b, loc, f32Scalar, skip, step, next);

  for (auto [w, grad] : llvm::zip(weights, grads)) {
    Type type = w.param.getType();
    if (optimizer == "adam" || optimizer == "adamw") {
      Value m = paramState(b, loc, w, ".exp_avg");
      Value v = paramState(b, loc, w, ".exp_avg_sq");
      SmallVector<Value> operands = {w.param, grad, m, v, next};
      if (skip)
        operands.push_back(skip);
      SmallVector<NamedAttribute> attrs = {
          b.getNamedAttr("lr", b.getF64FloatAttr(lr)),
          b.getNamedAttr("beta1", b.getF64FloatAttr(beta1)),
          b.getNamedAttr("beta2", b.getF64FloatAttr(beta2)),
          b.getNamedAttr("epsilon", b.getF64FloatAttr(epsilon)),
          b.getNamedAttr("weight_decay", b.getF64FloatAttr(weightDecay))};
      if (optimizer == "adamw")
        attrs.push_back(b.getNamedAttr("decoupled", b.getUnitAttr()));
      auto up = g::AdamUpdateOp::create(b, loc, TypeRange{type, type, type},
                                        operands, attrs);
      outputs.push_back({up.getNewParam(), w.name});
      outputs.push_back({up.getNewExpAvg(), w.name + ".exp_avg"});
      outputs.push_back({up.getNewExpAvgSq(), w.name + ".exp_avg_sq"});
      continue;
    }
    bool withMomentum = optimizer == "momentum";
    SmallVector<Value> operands = {w.param, grad, next};
    if (withMomentum)
      operands.push_back(paramState(b, loc, w, ".momentum"));
    if (skip)
      operands.push_back(skip);
    SmallVector<NamedAttribute> attrs = {
        b.getNamedAttr("lr", b.getF64FloatAttr(lr)),
        b.getNamedAttr("weight_decay", b.getF64FloatAttr(weightDecay)),
        b.getNamedAttr("operandSegmentSizes",
                       b.getDenseI32ArrayAttr(
                           {1, 1, 1, withMomentum ? 1 : 0, skip ? 1 : 0}))};
    if (withMomentum) {
      attrs.push_back(b.getNamedAttr("momentum", b.getF64FloatAttr(momentum)));
      if (nesterov)
        attrs.push_back(b.getNamedAttr("nesterov", b.getUnitAttr()));
    }
    SmallVector<Type> types(withMomentum ? 2 : 1, type);
    auto up = g::SgdUpdateOp::create(b, loc, types, operands, attrs);
    outputs.push_back({up.getResult(0), w.name});
    if (withMomentum)
      outputs.push_back({up.getResult(1), w.name + ".momentum"});
  }
  outputs.push_back({next, "step"});
  if (dynamic) {
    Value good = state(b, loc, "loss_scale.good_steps", f32Scalar);
    auto upd = g::LossScaleUpdateOp::create(
        b, loc, TypeRange{f32Scalar, f32Scalar},
        ValueRange{scaleValue, good, skip}, ArrayRef<NamedAttribute>{});
    outputs.push_back({upd.getNewScale(), "loss_scale"});
    outputs.push_back({upd.getNewGoodSteps(), "loss_scale.good_steps"});
  }
  b.setListener(previous);
}

/// `graph.trained`: what the training function updates and what it
/// leaves frozen (and why), for tools to report.
static DictionaryAttr trainedAttr(OpBuilder &b, ArrayRef<WeightGrad> weights,
                                  const WeightSelection &selection) {
  int64_t parameters = 0, frozenParameters = 0;
  for (const WeightGrad &w : weights)
    parameters += cast<RankedTensorType>(w.param.getType()).getNumElements();
  SmallVector<NamedAttribute> frozen;
  for (const WeightSelection::Frozen &f : selection.frozen) {
    frozenParameters += f.parameters;
    frozen.push_back(b.getNamedAttr(f.name, b.getStringAttr(f.reason)));
  }
  return b.getDictionaryAttr(
      {b.getNamedAttr("tensors", b.getI64IntegerAttr(weights.size())),
       b.getNamedAttr("parameters", b.getI64IntegerAttr(parameters)),
       b.getNamedAttr("frozen", b.getDictionaryAttr(frozen)),
       b.getNamedAttr("frozen_parameters",
                      b.getI64IntegerAttr(frozenParameters))});
}

void AutodiffPass::finish(func::FuncOp func, ArrayRef<Output> outputs,
                          StringRef role) {
  Block &body = func.getBody().front();
  Operation *ret = body.getTerminator();
  OpBuilder b(ret);
  SmallVector<Value> values;
  SmallVector<Type> types;
  SmallVector<DictionaryAttr> attrs;
  for (const Output &o : outputs) {
    values.push_back(o.value);
    types.push_back(o.value.getType());
    attrs.push_back(b.getDictionaryAttr(
        b.getNamedAttr(o.update.empty() ? kOutputAttr : kUpdateAttr,
                       b.getStringAttr(o.update.empty() ? "loss" : o.update))));
  }
  func::ReturnOp::create(b, ret->getLoc(), values);
  ret->erase();
  func.setFunctionType(b.getFunctionType(func.getArgumentTypes(), types));
  func.setAllResultAttrs(attrs);
  func->setAttr("graph.train", configAttr(b, role));
}

/// Megatron's reduce-scatter in the backward of sequence parallelism: the
/// input gradient of a column-parallel region, summed by its dist.tp_copy
/// and then sliced by the all-gather before the copy, is one
/// reduce-scatter (each element summed once, half the traffic).
static void foldSlicedSums(func::FuncOp func) {
  SmallVector<dist::AllSliceOp> slices;
  func.walk([&](dist::AllSliceOp s) { slices.push_back(s); });
  dist::DistDialect::GroupsAttrHelper groups(func.getContext());
  for (dist::AllSliceOp slice : slices) {
    auto sum = slice.getInput().getDefiningOp<dist::AllReduceOp>();
    if (!sum || sum.getKind() != dist::ReductionKind::sum ||
        !sum->hasOneUse() || sum.getGroup() != slice.getGroup() ||
        groups.getAttr(sum) != groups.getAttr(slice))
      continue;
    OpBuilder b(slice);
    auto scatter = dist::ReduceScatterOp::create(
        b, slice.getLoc(), slice.getType(), sum.getInput(), sum.getKindAttr(),
        slice.getAxisAttr(), slice.getGroupAttr());
    scatter->setDiscardableAttrs(sum->getDiscardableAttrDictionary());
    dist::setBalanced(scatter, dist::isBalanced(slice));
    slice.getResult().replaceAllUsesWith(scatter.getResult());
    slice.erase();
    sum.erase();
  }
}

void AutodiffPass::runOnOperation() {
  ModuleOp module = getOperation();
  if (failed(checkOptions(module)))
    return signalPassFailure();
  auto forward = module.lookupSymbol<func::FuncOp>(funcName);
  if (!forward || forward.isExternal()) {
    module.emitError("dist-autodiff: no function '@")
        << funcName << "' with a body to differentiate; name it with func=";
    return signalPassFailure();
  }
  // Gradient shapes come from the forward types: they must all be known.
  WalkResult dynamicShapes = forward.walk([&](Operation *op) {
    for (Type t :
         llvm::concat<Type>(op->getOperandTypes(), op->getResultTypes()))
      if (auto r = dyn_cast<RankedTensorType>(t); r && !r.hasStaticShape()) {
        op->emitOpError("has the dynamic type ")
            << t << "; dist-autodiff needs static shapes: pin the inputs "
            << "with --input-shape=NAME:D0xD1... (or --default-batch)";
        return WalkResult::interrupt();
      }
    return WalkResult::advance();
  });
  if (dynamicShapes.wasInterrupted())
    return signalPassFailure();
  int64_t k = accumulationSteps;
  StringRef trainName = k == 1 ? "train_step" : "train_microbatch";
  for (StringRef name : {trainName, StringRef("train_apply")})
    if (module.lookupSymbol(name)) {
      module.emitError("dist-autodiff: the module already has '@")
          << name << "'; was the pass run twice?";
      return signalPassFailure();
    }

  // The clone keeps the forward name until the loss is added, so errors
  // name the function the user wrote.
  auto train = cast<func::FuncOp>(forward->clone());
  module.getBody()->getOperations().insertAfter(forward->getIterator(), train);

  SmallVector<std::pair<std::string, Value>> runningStats;
  makeTrainable(train, seed, runningStats);
  if (mixedPrecision != "none") {
    OpBuilder b(train);
    Type low =
        mixedPrecision == "bf16" ? Type(b.getBF16Type()) : Type(b.getF16Type());
    if (failed(lowerPrecision(train, low)))
      return signalPassFailure();
  }
  FailureOr<Value> loss = addLoss(train, lossSpec);
  if (failed(loss))
    return signalPassFailure();
  // A softmax cross-entropy of column-parallel logits that
  // dist-tensor-parallel gathered whole runs on the rank's columns
  // (Megatron's vocabulary-parallel cross-entropy).
  if (split::vocabParallelCrossEntropy(train, /*verbose=*/false))
    loss = train.getBody().front().getTerminator()->getOperand(0);
  train.setSymName(trainName);
  // After lowerPrecision: the counters stay f32.
  Value microbatch = keyDropoutMasks(train, k > 1);

  Block &body = train.getBody().front();
  SmallVector<Operation *> forwardOps;
  OpBuilder b(body.getTerminator());
  for (Operation &op : body.without_terminator()) {
    op.setAttr(kPhaseAttr, b.getStringAttr("forward"));
    forwardOps.push_back(&op);
  }

  // Seed: d(loss)/d(loss) times the loss scale, over k micro-batches.
  Location loc = train.getLoc();
  auto lossType = cast<RankedTensorType>((*loss).getType());
  Value seed;
  {
    StampListener listener;
    listener.phase = b.getStringAttr("backward_input");
    b.setListener(&listener);
    auto f32Scalar = RankedTensorType::get({}, b.getF32Type());
    if (dynamic) {
      Value s = state(b, loc, "loss_scale", f32Scalar, scale);
      Value inv = g::ConstantOp::create(
          b, loc, f32Scalar,
          DenseElementsAttr::get(f32Scalar, b.getF32FloatAttr(1.0 / k)));
      seed = g::BinaryOp::create(b, loc, f32Scalar, g::BinaryKind::Mul, s, inv);
      if (lossType != f32Scalar)
        seed = g::CastOp::create(b, loc, lossType, seed);
    } else {
      seed = g::ConstantOp::create(
          b, loc, lossType,
          DenseElementsAttr::get(
              lossType, b.getFloatAttr(lossType.getElementType(), scale / k)));
    }
    b.setListener(nullptr);
  }

  auto globs = [](StringRef list) {
    SmallVector<std::string> out;
    for (StringRef g : llvm::split(list, ','))
      if (!g.trim().empty())
        out.push_back(g.trim().str());
    return out;
  };
  FailureOr<WeightSelection> selection =
      selectTrainable(train, globs(freeze), globs(trainOnly));
  if (failed(selection))
    return signalPassFailure();
  DenseMap<Value, Value> grads;
  if (failed(buildBackward(b, forwardOps, *loss, seed, selection->frozenOps,
                           grads)))
    return signalPassFailure();
  foldSlicedSums(train);

  // Weight gradients by name (a weight read twice has one gradient).
  llvm::MapVector<StringRef, WeightGrad> byName;
  for (Operation *op : forwardOps) {
    auto w = dyn_cast<g::WeightOp>(op);
    Value grad = w ? grads.lookup(w.getResult()) : Value();
    if (!grad)
      continue;
    auto [it, inserted] =
        byName.insert({w.getSymName(), {w.getSymName().str(), w, grad}});
    if (!inserted)
      it->second.grad = g::BinaryOp::create(
          b, loc, grad.getType(), g::BinaryKind::Add, it->second.grad, grad);
  }
  SmallVector<WeightGrad> weights;
  for (auto &entry : byName)
    weights.push_back(entry.second);
  train->setAttr("graph.trained", trainedAttr(b, weights, *selection));

  SmallVector<Output> outputs = {{*loss, ""}};
  auto statOutputs = [&](OpBuilder &ob, SmallVectorImpl<Output> &out) {
    for (auto &[name, value] : runningStats) {
      Value v = value;
      auto t = cast<RankedTensorType>(v.getType());
      if (!t.getElementType().isF32())
        v = g::CastOp::create(ob, loc, t.clone(ob.getF32Type()), v);
      out.push_back({v, name});
    }
  };
  if (k == 1) {
    emitUpdate(b, loc, weights, outputs);
    statOutputs(b, outputs);
    finish(train, outputs, "step");
    return;
  }

  // Micro-batch: add the gradients to the accumulators.
  for (WeightGrad &w : weights) {
    Type type = w.param.getType();
    Value acc = paramState(b, loc, w, ".grad_acc");
    acc.getDefiningOp()->setAttr(kPhaseAttr,
                                 b.getStringAttr("backward_weight"));
    auto add =
        g::BinaryOp::create(b, loc, type, g::BinaryKind::Add, acc, w.grad);
    add->setAttr(kPhaseAttr, b.getStringAttr("backward_weight"));
    outputs.push_back({add, w.name + ".grad_acc"});
  }
  statOutputs(b, outputs);
  if (microbatch) {
    auto f32Scalar = RankedTensorType::get({}, b.getF32Type());
    Value one = g::ConstantOp::create(
        b, loc, f32Scalar,
        DenseElementsAttr::get(f32Scalar, b.getF32FloatAttr(1.0)));
    auto next = g::BinaryOp::create(b, loc, f32Scalar, g::BinaryKind::Add,
                                    microbatch, one);
    one.getDefiningOp()->setAttr(kPhaseAttr, b.getStringAttr("forward"));
    next->setAttr(kPhaseAttr, b.getStringAttr("forward"));
    outputs.push_back({next, kMicrobatchState.str()});
  }
  finish(train, outputs, "microbatch");

  // Apply: read weights and accumulators, update, reset accumulators.
  OpBuilder mb(module.getContext());
  mb.setInsertionPointAfter(train);
  auto apply =
      func::FuncOp::create(mb, loc, "train_apply", mb.getFunctionType({}, {}));
  OpBuilder ab(apply.getContext());
  ab.setInsertionPointToStart(apply.addEntryBlock());
  func::ReturnOp::create(ab, loc);
  ab.setInsertionPointToStart(&apply.getBody().front());
  SmallVector<WeightGrad> applied;
  SmallVector<Output> applyOutputs;
  for (WeightGrad &w : weights) {
    Operation *param = ab.clone(*w.param.getDefiningOp());
    param->setAttr(kPhaseAttr, ab.getStringAttr("optimizer"));
    Value acc = state(ab, loc, w.name + ".grad_acc", w.param.getType());
    acc.getDefiningOp()->setAttr(kPhaseAttr, ab.getStringAttr("optimizer"));
    applied.push_back({w.name, param->getResult(0), acc});
  }
  emitUpdate(ab, loc, applied, applyOutputs);
  for (WeightGrad &w : applied) {
    auto t = cast<RankedTensorType>(w.param.getType());
    auto zero = g::ConstantOp::create(
        ab, loc, t,
        DenseElementsAttr::get(t, ab.getFloatAttr(t.getElementType(), 0.0)));
    zero->setAttr(kPhaseAttr, ab.getStringAttr("optimizer"));
    applyOutputs.push_back({zero, w.name + ".grad_acc"});
  }
  if (microbatch) {
    auto f32Scalar = RankedTensorType::get({}, ab.getF32Type());
    auto zero = g::ConstantOp::create(
        ab, loc, f32Scalar,
        DenseElementsAttr::get(f32Scalar, ab.getF32FloatAttr(0.0)));
    zero->setAttr(kPhaseAttr, ab.getStringAttr("optimizer"));
    applyOutputs.push_back({zero, kMicrobatchState.str()});
  }
  finish(apply, applyOutputs, "apply");
}
