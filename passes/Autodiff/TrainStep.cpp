//===- TrainStep.cpp - Loss and trainable forms -----------------*- C++ -*-===//
//
// Part of DistOpt. What the forward function needs before it can be
// differentiated: a scalar loss, dropout masks that the backward can reuse,
// and batch norms that normalize with batch statistics.
//
//===----------------------------------------------------------------------===//
#include "passes/Autodiff/TrainStep.h"
#include "passes/Autodiff/GradBuilder.h"

#include "dialects/Graph/GraphOps.h"

using namespace mlir;
using namespace distopt;
namespace g = distopt::graph;

static bool isScalarFloat(Type t) {
  auto r = dyn_cast<RankedTensorType>(t);
  return r && r.getRank() == 0 && isa<FloatType>(r.getElementType());
}

std::string distopt::autodiff::lossSpecError(StringRef spec) {
  auto [kind, name] = spec.split(':');
  if (!name.empty() && (kind == "softmax-cross-entropy" || kind == "mse"))
    return "";
  return ("bad loss '" + spec +
          "': expected softmax-cross-entropy:LABEL_INPUT or mse:TARGET_INPUT")
      .str();
}

FailureOr<Value> distopt::autodiff::addLoss(func::FuncOp func, StringRef spec) {
  Block &body = func.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  if (spec.empty()) {
    Value loss;
    for (Value v : ret.getOperands()) {
      if (!isScalarFloat(v.getType()))
        continue;
      if (loss)
        return func.emitError("'")
               << func.getSymName()
               << "' returns more than one scalar float; keep only the loss "
                  "or add one with loss=softmax-cross-entropy:LABELS";
      loss = v;
    }
    if (!loss)
      return func.emitError("'")
             << func.getSymName()
             << "' returns no scalar loss; add one with the option "
                "loss=softmax-cross-entropy:LABEL_INPUT or mse:TARGET_INPUT "
                "(or --dist-loss=...)";
    ret->setOperands(loss);
    return loss;
  }
  if (std::string error = autodiff::lossSpecError(spec); !error.empty())
    return func.emitError(error);
  auto [kind, name] = spec.split(':');
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    if (auto n = func.getArgAttrOfType<StringAttr>(i, "graph.name"))
      if (n.getValue() == name)
        return func.emitError("the loss input '")
               << name << "' is already an input of '" << func.getSymName()
               << "'; choose another name";
  if (ret.getNumOperands() == 0)
    return func.emitError("'")
           << func.getSymName() << "' returns nothing to put a loss on";
  Value pred = ret.getOperand(0);
  auto pt = dyn_cast<RankedTensorType>(pred.getType());
  if (!pt || !isa<FloatType>(pt.getElementType()) || !pt.hasStaticShape() ||
      (kind == "softmax-cross-entropy" && pt.getRank() < 2))
    return func.emitError("the first result of '")
           << func.getSymName() << "' is " << pred.getType() << "; a " << kind
           << " loss needs a static float tensor"
           << (kind == "mse" ? "" : " of rank >= 2 (classes last)");

  OpBuilder b(ret);
  Location loc = ret.getLoc();
  Type elt = pt.getElementType();
  auto scalarType = RankedTensorType::get({}, elt);
  Value loss;
  Type argType;
  if (kind == "mse") {
    argType = pt;
  } else {
    argType = RankedTensorType::get(pt.getShape().drop_back(), b.getI64Type());
  }
  unsigned index = func.getNumArguments();
  if (failed(func.insertArgument(index, argType,
                                 b.getDictionaryAttr(b.getNamedAttr(
                                     "graph.name", b.getStringAttr(name))),
                                 loc)))
    return failure();
  Value target = func.getArgument(index);
  if (kind == "mse") {
    Value d = g::BinaryOp::create(b, loc, pt, g::BinaryKind::Sub, pred, target);
    Value sq = g::BinaryOp::create(b, loc, pt, g::BinaryKind::Mul, d, d);
    loss = g::ReduceOp::create(b, loc, scalarType, g::ReduceKind::Mean, sq,
                               ArrayRef<int64_t>{}, false);
  } else {
    Value logits = pred, labels = target;
    if (pt.getRank() > 2) {
      int64_t classes = pt.getShape().back();
      int64_t rows = pt.getNumElements() / classes;
      logits = g::ReshapeOp::create(
          b, loc, RankedTensorType::get({rows, classes}, elt), pred);
      labels = g::ReshapeOp::create(
          b, loc, RankedTensorType::get({rows}, b.getI64Type()), target);
    }
    loss = g::SoftmaxCrossEntropyOp::create(b, loc, scalarType,
                                            g::LossReduction::Mean, logits,
                                            labels, IntegerAttr());
  }
  ret->setOperands(loss);
  return loss;
}

void distopt::autodiff::makeTrainable(
    func::FuncOp func, int64_t seed,
    SmallVectorImpl<std::pair<std::string, Value>> &runningStats) {
  SmallVector<Operation *> ops;
  for (Operation &op : func.getBody().front())
    ops.push_back(&op);
  OpBuilder b(func.getContext());
  for (Operation *op : ops) {
    if (auto drop = dyn_cast<g::DropoutOp>(op)) {
      if (drop.getRatio().convertToDouble() == 0)
        continue;
      b.setInsertionPoint(drop);
      auto mask = g::DropoutMaskOp::create(
          b, drop.getLoc(), drop.getType(), /*step=*/Value(),
          /*microbatch=*/Value(), drop.getRatioAttr(),
          b.getI64IntegerAttr(seed++));
      // Both run where the dropout did: its layer, stage and
      // tensor-parallel role, and a tensor-parallel rank's part of the mask
      // (dist-tensor-parallel's dist.tp_shard).
      DictionaryAttr placement = drop->getDiscardableAttrDictionary();
      mask->setDiscardableAttrs(placement);
      auto y = g::BinaryOp::create(b, drop.getLoc(), drop.getType(),
                                   g::BinaryKind::Mul, drop.getInput(), mask);
      y->setDiscardableAttrs(placement);
      y->removeAttr(autodiff::kTpShardAttr);
      drop.getResult().replaceAllUsesWith(y.getResult());
      drop.erase();
      continue;
    }
    auto bn = dyn_cast<g::BatchNormOp>(op);
    if (!bn)
      continue;
    g::BatchNormOp train = bn;
    if (!bn.getTraining() || bn.getRunningStats().empty()) {
      b.setInsertionPoint(bn);
      SmallVector<NamedAttribute> attrs;
      for (NamedAttribute a : bn->getAttrs())
        if (a.getName() != "training")
          attrs.push_back(a);
      attrs.push_back(b.getNamedAttr("training", b.getUnitAttr()));
      SmallVector<Type> types = {bn.getResult().getType(),
                                 bn.getMean().getType(),
                                 bn.getVariance().getType()};
      train = g::BatchNormOp::create(b, bn.getLoc(), types, bn->getOperands(),
                                     attrs);
      bn.getResult().replaceAllUsesWith(train.getResult());
      for (auto [from, to] :
           llvm::zip(bn.getRunningStats(), train.getRunningStats()))
        from.replaceAllUsesWith(to);
      bn.erase();
    }
    SmallVector<Value> sources = {train.getMean(), train.getVariance()};
    for (auto [stat, source] : llvm::zip(train.getRunningStats(), sources))
      if (auto w = source.getDefiningOp<g::WeightOp>())
        runningStats.push_back({w.getSymName().str(), stat});
  }
}

Value distopt::autodiff::keyDropoutMasks(func::FuncOp func,
                                         bool withMicrobatch) {
  SmallVector<g::DropoutMaskOp> masks;
  func.walk([&](g::DropoutMaskOp m) { masks.push_back(m); });
  if (masks.empty())
    return Value();
  Block &body = func.getBody().front();
  OpBuilder b = OpBuilder::atBlockBegin(&body);
  Location loc = func.getLoc();
  auto f32Scalar = RankedTensorType::get({}, b.getF32Type());
  auto state = [&](StringRef name) -> Value {
    return g::StateOp::create(b, loc, f32Scalar, b.getStringAttr(name),
                              b.getF64FloatAttr(0.0));
  };
  Value step = state("step");
  Value microbatch = withMicrobatch ? state(kMicrobatchState) : Value();
  for (g::DropoutMaskOp m : masks) {
    b.setInsertionPoint(m);
    auto keyed =
        g::DropoutMaskOp::create(b, m.getLoc(), m.getType(), step, microbatch,
                                 m.getRatioAttr(), m.getSeedAttr());
    keyed->setDiscardableAttrs(m->getDiscardableAttrDictionary());
    m.getResult().replaceAllUsesWith(keyed.getResult());
    m.erase();
  }
  return microbatch;
}
