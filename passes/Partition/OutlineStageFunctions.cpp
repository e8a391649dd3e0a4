//===- OutlineStageFunctions.cpp - dist.stage regions to functions -*- C++ -*-//
//
// Part of DistOpt. Each dist.stage region becomes a private function that
// carries its virtual stage; the region becomes a call, so the pipelined
// function keeps one micro-batch's dataflow between stages.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/Dist/DistOps.h"

#include "mlir/IR/Builders.h"

namespace distopt {
#define GEN_PASS_DEF_OUTLINESTAGEFUNCTIONSPASS
#include "passes/Partition/Passes.h.inc"
} // namespace distopt

using namespace mlir;
using namespace distopt;

/// Outlines the stage regions of \p func; fails before changing anything
/// when a stage function's name is taken.
static LogicalResult outlineFunction(func::FuncOp func, SymbolTable &symbols) {
  SmallVector<dist::StageOp> stages;
  for (Operation &op : func.getBody().front())
    if (auto stage = dyn_cast<dist::StageOp>(op))
      stages.push_back(stage);
  auto nameOf = [&](dist::StageOp stage) {
    return (func.getSymName() + "_stage" + Twine(stage.getIndex())).str();
  };
  for (dist::StageOp stage : stages)
    if (symbols.lookup(nameOf(stage)))
      return stage.emitOpError("would become @")
             << nameOf(stage)
             << ", but the module already has a symbol of that name; rename "
                "it or outline into functions once";

  MLIRContext *ctx = func.getContext();
  auto stageAttr = dist::DistDialect::VirtualStageAttrHelper(ctx);
  OpBuilder b(ctx);
  b.setInsertionPointAfter(func);
  for (dist::StageOp stage : stages) {
    Block &body = stage.getBody().front();
    auto type = FunctionType::get(ctx, body.getArgumentTypes(),
                                  stage.getResultTypes());
    auto fn = func::FuncOp::create(b, stage.getLoc(), nameOf(stage), type);
    fn.setPrivate();
    stageAttr.setAttr(fn, b.getI64IntegerAttr(stage.getIndex()));
    fn.getBody().takeBody(stage.getBody());
    Block &entry = fn.getBody().front();
    auto yield = cast<dist::YieldOp>(entry.getTerminator());
    OpBuilder rb(yield);
    func::ReturnOp::create(rb, yield.getLoc(), yield.getValues());
    yield.erase();
    symbols.insert(fn);
    b.setInsertionPointAfter(fn);

    OpBuilder cb(stage);
    auto call = func::CallOp::create(cb, stage.getLoc(), fn, stage.getInputs());
    stage.replaceAllUsesWith(call.getResults());
    stage.erase();
  }
  return success();
}

namespace {
struct OutlineStageFunctionsPass
    : public distopt::impl::OutlineStageFunctionsPassBase<
          OutlineStageFunctionsPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<func::FuncOp> funcs(module.getOps<func::FuncOp>());
    for (func::FuncOp func : funcs)
      if (!func.isExternal() && failed(outlineFunction(func, symbols)))
        return signalPassFailure();
  }
};
} // namespace
