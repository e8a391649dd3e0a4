//===- Experts.cpp - Mixture-of-experts blocks of a graph -------*- C++ -*-===//
//
// Part of DistOpt. Finds the mixture-of-experts FFNs of an imported graph
// and costs them as cost::llmBlock does (lib/Cost/LlmModels.cpp): the
// router GEMM (replicated over TP, kept at its precision), its top-k and
// capacity selection as one fp32 kernel over the s x E scores, the token
// dispatch and combine as data movement with an all-to-all over the
// expert-parallel group each, the routed experts' GEMMs and activation as
// `expert` ops (sharded over EP, one grouped launch of E GEMMs), and the
// shared experts beside them. Under context parallelism the top-k, the
// dispatch and the combine run whole on every context rank, with the
// gathers over the context group that dist-context-parallel's programs
// run (cost::routeWholeSequence).
//
// The form recognized (what dist-modelgen writes, docs/modelgen.md): stacked
// expert weights [E, in, out] multiplied with dispatched tokens [.., E, C,
// in]; the tokens come through views from a gather of the FFN input x
// [.., S, h]; the expert outputs reach a scatter-add into [.., S, h]
// through elementwise ops (the routing weights) and views; the gather's
// indices and the routing weights come from x through one weighted GEMM
// (the router [h, E]) and weightless ops (softmax, graph.top_k, ...). Anything
// else stays costed op by op as before, with a remark saying why when
// remarks are asked for. Ops that run inside another's kernel (the top-k
// steps, the activation's parts, the merged GEMMs, the combine's weights)
// lose their cost entirely, as views do.
//
//===----------------------------------------------------------------------===//
#include "passes/Planning/FusedKernels.h"

#include "dialects/Graph/GraphCost.h"
#include "dialects/Graph/GraphOps.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/FormatVariadic.h"

#include <numeric>

using namespace mlir;
using namespace distopt;
using namespace distopt::cost;
using namespace distopt::planning;
using graph::tensorElements;
namespace g = distopt::graph;

namespace {

/// A value's definition through views (reshape, flatten).
Value throughViews(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (!isa<g::ReshapeOp, g::FlattenOp>(def))
      break;
    v = def->getOperand(0);
  }
  return v;
}

int64_t dimFromEnd(Type type, unsigned back) {
  auto t = dyn_cast<RankedTensorType>(type);
  if (!t || t.getRank() < static_cast<int64_t>(back))
    return -1;
  return t.getDimSize(t.getRank() - back);
}

class Recognizer {
public:
  Recognizer(std::vector<Item> &items, const DenseMap<Value, int64_t> &defIndex,
             const ValueClasses &values, double samples, bool remarks)
      : items(items), defIndex(defIndex), values(values), samples(samples),
        remarks(remarks) {}

  void run();

private:
  bool dependent(Value v) const { return values.sampleDependent.contains(v); }
  int64_t indexOf(Value v) const {
    auto it = defIndex.find(v);
    return it == defIndex.end() ? -1 : it->second;
  }
  Item *itemOf(Value v) {
    int64_t i = indexOf(v);
    return i < 0 ? nullptr : &items[i];
  }
  /// A weighted GEMM x [.., E, C, in] x W [E, in, out]: its E, or 0.
  int64_t stackedExperts(Operation *op) const;
  /// A weighted GEMM with a 2-D weight reading \p x directly.
  bool denseGemmOf(Operation *op, Value x) const;
  /// Recognizes and costs the block whose tokens \p gather dispatches to
  /// the expert GEMMs \p inputs; a reason on failure.
  std::string block(Operation *gather, ArrayRef<size_t> inputs);
  /// GEMMs reading one input run as one grouped GEMM (the analytic model's
  /// up projection of width 2f): the first takes the others' costs and
  /// parameters, the others leave the ModelDesc.
  OpDesc &mergeGemms(ArrayRef<size_t> gemms) {
    OpDesc &into = *items[gemms.front()].desc;
    for (size_t i : gemms.drop_front()) {
      OpDesc &other = *items[i].desc;
      into.fwd += other.fwd;
      into.bwdInput += other.bwdInput;
      into.bwdWeight += other.bwdWeight;
      into.params += other.params;
      into.signature.clear();
      items[i].desc.reset();
    }
    return into;
  }
  /// The elementwise ops \p ops (program order) run as one activation
  /// kernel over \p n elements, gated (SwiGLU: two inputs kept) or not, as
  /// cost::llmBlock's; the others run inside it.
  void fuseActivation(ArrayRef<size_t> ops, double n, bool gated) {
    OpDesc &first = *items[ops.front()].desc;
    double eb = cluster::dtypeBytes(first.dtype);
    OpDesc act =
        elementwiseOp(first.name, first.dtype, n, gated ? 2 : 1, gated ? 6 : 4);
    act.savedBytes = (gated ? 2 : 1) * n * eb;
    first = act;
    for (size_t i : ops.drop_front())
      items[i].desc.reset();
  }
  void note(Operation *op, const Twine &message) {
    if (remarks)
      mlir::emitRemark(op->getLoc(), message);
  }

  std::vector<Item> &items;
  const DenseMap<Value, int64_t> &defIndex;
  const ValueClasses &values;
  double samples;
  bool remarks;
  unsigned recognized = 0;
  std::string summary; // of the last block recognized
};
} // namespace

int64_t planning::stackedExperts(Operation *op,
                                 function_ref<bool(Value)> dependent) {
  auto mm = dyn_cast<g::MatmulOp>(op);
  if (!mm || mm.getBias() || mm.getTransposeLhs() || mm.getTransposeRhs())
    return 0;
  auto x = dyn_cast<RankedTensorType>(mm.getLhs().getType());
  auto w = dyn_cast<RankedTensorType>(mm.getRhs().getType());
  if (!x || !w || w.getRank() != 3 || x.getRank() < 3 ||
      dependent(mm.getRhs()) || !dependent(mm.getLhs()))
    return 0;
  int64_t e = w.getDimSize(0);
  if (e < 2 || x.getDimSize(x.getRank() - 3) != e ||
      x.getDimSize(x.getRank() - 1) != w.getDimSize(1))
    return 0;
  return e;
}

std::string planning::routedExperts(ArrayRef<Operation *> inputs,
                                    function_ref<bool(Value)> dependent,
                                    RoutedExperts &out) {
  const int64_t e = stackedExperts(inputs.front(), dependent);
  out = RoutedExperts();
  out.experts = e;
  DenseSet<Value> inRegion;
  for (Operation *op : inputs) {
    if (stackedExperts(op, dependent) != e)
      return "its expert GEMMs have different expert counts";
    inRegion.insert(op->getResult(0));
    out.inputs.push_back(op);
  }
  // Program order is a topological order: every operand is classified
  // before its users.
  for (Operation *op = inputs.front()->getNextNode(); op;
       op = op->getNextNode()) {
    if (llvm::is_contained(inputs, op) ||
        llvm::none_of(op->getOperands(),
                      [&](Value o) { return inRegion.contains(o); }))
      continue;
    bool inside = llvm::all_of(op->getOperands(), [&](Value o) {
      return !dependent(o) || inRegion.contains(o);
    });
    if (inside && stackedExperts(op, dependent) == e) {
      out.outputs.push_back(op);
      continue;
    }
    if (!inside || !isa<g::UnaryOp, g::BinaryOp, g::ReshapeOp>(op))
      return "an expert GEMM's result is used outside the experts";
    out.between.push_back(op);
    inRegion.insert(op->getResult(0));
  }
  if (out.outputs.empty() || out.between.empty())
    return "no expert GEMM after the experts' activation";
  return "";
}

SmallVector<Operation *>
planning::expertInputs(ArrayRef<Operation *> gemms, Operation *first,
                       const DenseSet<Operation *> &done) {
  SmallVector<Operation *> inputs;
  for (Operation *m : gemms)
    if (!done.contains(m) && m->getOperand(0) == first->getOperand(0))
      inputs.push_back(m);
  return inputs;
}

Operation *planning::notElementwiseBetween(const RoutedExperts &experts,
                                           std::string &why) {
  DenseSet<Value> region;
  for (Operation *op : experts.inputs)
    region.insert(op->getResult(0));
  for (Operation *op : experts.between) {
    if (!isa<g::UnaryOp, g::BinaryOp>(op)) {
      why = "a view between the expert GEMMs; only elementwise ops may run "
            "between them";
      return op;
    }
    for (Value o : op->getOperands())
      if (!region.contains(o) &&
          llvm::any_of(cast<RankedTensorType>(o.getType()).getShape(),
                       [](int64_t d) { return d != 1; })) {
        llvm::raw_string_ostream os(why);
        os << "an elementwise op between the expert GEMMs reads " << o.getType()
           << ", which is not one value for every expert";
        return op;
      }
    region.insert(op->getResult(0));
  }
  return nullptr;
}

int64_t Recognizer::stackedExperts(Operation *op) const {
  return planning::stackedExperts(op, [&](Value v) { return dependent(v); });
}

bool Recognizer::denseGemmOf(Operation *op, Value x) const {
  auto mm = dyn_cast<g::MatmulOp>(op);
  if (!mm || mm.getLhs() != x || mm.getTransposeLhs())
    return false;
  auto w = dyn_cast<RankedTensorType>(mm.getRhs().getType());
  return w && w.getRank() == 2 && !dependent(mm.getRhs());
}

std::string Recognizer::block(Operation *gather, ArrayRef<size_t> inputs) {
  Value x = gather->getOperand(0);
  Operation *first = items[inputs.front()].op;
  const int64_t e = stackedExperts(first);
  const int64_t cap = dimFromEnd(first->getOperand(0).getType(), 2);
  const int64_t h = dimFromEnd(first->getOperand(0).getType(), 1);
  auto xt = dyn_cast<RankedTensorType>(x.getType());
  if (!dependent(x) || !xt || xt.getRank() != 3 || xt.getDimSize(2) != h ||
      indexOf(x) < 0)
    return "the dispatched tokens do not come from one [batch, tokens, "
           "hidden] activation";
  const double tokens = xt.getDimSize(1);
  const int64_t xIndex = indexOf(x);

  // The routed experts: from the input GEMMs through elementwise ops to
  // output GEMMs with the same stacked weights.
  SmallVector<Operation *> inputOps;
  for (size_t i : inputs)
    inputOps.push_back(items[i].op);
  RoutedExperts experts;
  if (std::string why = routedExperts(
          inputOps, [&](Value v) { return dependent(v); }, experts);
      !why.empty())
    return why;
  SetVector<size_t> region; // elementwise ops between the GEMMs
  SmallVector<size_t> outputs;
  for (Operation *op : experts.outputs)
    outputs.push_back(indexOf(op->getResult(0)));
  for (Operation *op : experts.between)
    if (Item *item = itemOf(op->getResult(0)); item && item->desc)
      region.insert(indexOf(op->getResult(0)));
  if (region.empty())
    return "no expert GEMM after the experts' activation";

  // The combine: from the expert outputs through elementwise ops (the
  // routing weights) and views to one scatter-add into [.., S, h].
  Operation *combine = nullptr;
  SetVector<Operation *> combineChain;
  SmallVector<Value> side; // the chain's other operands (router values)
  for (size_t o : outputs) {
    Value v = items[o].op->getResult(0);
    while (true) {
      if (!v.hasOneUse())
        return "an expert output has several uses before the combine";
      Operation *user = *v.getUsers().begin();
      if (isa<g::ScatterElementsOp, g::ScatterNDOp>(user)) {
        auto se = dyn_cast<g::ScatterElementsOp>(user);
        auto nd = dyn_cast<g::ScatterNDOp>(user);
        bool add = (se && se.getReduction() == g::ScatterReduction::Add) ||
                   (nd && nd.getReduction() == g::ScatterReduction::Add);
        if (!add || user->getOperand(2) != v ||
            user->getResult(0).getType() != x.getType())
          return "the experts' outputs do not scatter-add into the tokens";
        if (combine && combine != user)
          return "the expert outputs reach different combines";
        combine = user;
        side.push_back(user->getOperand(0));
        side.push_back(user->getOperand(1));
        break;
      }
      if (!isa<g::ReshapeOp, g::FlattenOp, g::BinaryOp>(user))
        return "an expert output goes through an op other than views and "
               "the routing weights before the combine";
      combineChain.insert(user);
      for (Value operand : user->getOperands())
        if (operand != v)
          side.push_back(operand);
      v = user->getResult(0);
    }
  }
  if (!combine || indexOf(combine->getResult(0)) < 0)
    return "no scatter-add combines the experts' outputs";

  // The router: every op the dispatch indices and routing weights are
  // computed from, back to x; one weighted GEMM among them.
  side.push_back(gather->getOperand(1));
  SetVector<size_t> router;
  Operation *gate = nullptr;
  std::optional<int64_t> topK;
  while (!side.empty()) {
    Value v = side.pop_back_val();
    if (v == x || !dependent(v))
      continue;
    int64_t i = indexOf(v);
    if (i < 0 || i <= xIndex)
      return "the routing does not come from the experts' input alone";
    if (!router.insert(i))
      continue;
    Operation *op = items[i].op;
    bool weighted = llvm::any_of(op->getOperands(), [&](Value o) {
      return !dependent(o) && isa<RankedTensorType>(o.getType()) &&
             tensorElements(o.getType()) > 1;
    });
    if (weighted) {
      if (gate || !denseGemmOf(op, x) ||
          dimFromEnd(op->getResult(0).getType(), 1) != e)
        return "the routing reads weights other than one [hidden, experts] "
               "gate";
      gate = op;
      continue; // it reads x
    }
    if (auto top = dyn_cast<g::TopKOp>(op);
        top && dimFromEnd(top.getInput().getType(), 1) == e)
      topK = dimFromEnd(top.getValues().getType(), 1);
    for (Value operand : op->getOperands())
      side.push_back(operand);
  }
  if (!gate)
    return "no router GEMM [hidden, experts] computes the routing";
  router.remove(indexOf(gate->getResult(0)));
  if (!topK)
    return "the routing has no TopK over the router's experts";
  if (llvm::none_of(router,
                    [&](size_t i) { return items[i].desc.has_value(); }))
    return "the routing has no op besides the router GEMM to run its top-k";

  // Cost it all as cost::llmBlock does.
  OpDesc &dispatch = *items[indexOf(gather->getResult(0))].desc;
  const DType dt = dispatch.dtype;
  const double eb = cluster::dtypeBytes(dt);
  const double routed = double(e) * cap; // tokens through the experts
  const double k = *topK;
  const double xBytes = tokens * h * eb;
  auto replicated = [](OpDesc &op, double saved) {
    op.tp = TpMode::Replicated;
    op.savedBytes = 0;
    op.savedReplicatedBytes = saved;
    op.tpAllReduceFwdBytes = op.tpAllReduceBwdBytes = 0;
  };

  OpDesc &gateDesc = *items[indexOf(gate->getResult(0))].desc;
  replicated(gateDesc, xBytes);
  gateDesc.keepsPrecision = true;
  // It reads the block input the routing needs whole: under sequence
  // parallelism dist-tensor-parallel gathers x over the tensor group first.
  gateDesc.sequenceGathered = true;
  OpDesc *route = nullptr;
  for (size_t i : router) {
    if (!items[i].desc)
      continue;
    if (!route) {
      OpDesc sel = elementwiseOp("router_topk", DType::F32, tokens * e, 1, 8);
      replicated(sel, tokens * e * 4);
      sel.name = items[i].desc->name;
      *items[i].desc = sel;
      route = &*items[i].desc;
    } else {
      items[i].desc.reset(); // runs inside router_topk
    }
  }

  OpDesc moved = dataMovementOp(dispatch.name, dt, routed * h);
  moved.epAllToAllBytes = routed * h * eb;
  dispatch = moved;
  OpDesc &combineDesc = *items[indexOf(combine->getResult(0))].desc;
  moved.name = combineDesc.name;
  combineDesc = moved;
  // Under context parallelism each context rank routes the whole
  // sequence: the scores (the router's dtype), the input and the experts'
  // outputs gathered over the context group.
  const double scoreBytes = tokens * e * cluster::dtypeBytes(gateDesc.dtype);
  routeWholeSequence(*route, dispatch, combineDesc, scoreBytes, xBytes,
                     routed * h * eb);
  for (Operation *op : combineChain)
    if (Item *item = itemOf(op->getResult(0)))
      item->desc.reset(); // inside the combine

  // The input GEMMs run as one grouped GEMM over their shared input (the
  // analytic model's up projection of width 2f), kept once for the
  // backward, its gradient all-reduced once under TP.
  OpDesc &up = mergeGemms(inputs);
  up.savedBytes = routed * h * eb;
  up.savedReplicatedBytes = 0;
  up.tpAllReduceBwdBytes = routed * h * eb;
  up.tpAllReduceFwdBytes = 0;
  up.tp = TpMode::Split;
  for (size_t i : outputs) {
    OpDesc &down = *items[i].desc;
    down.tp = TpMode::Split;
    down.tpAllReduceFwdBytes = routed * h * eb;
    down.tpAllReduceBwdBytes = 0;
  }
  // The activation: one elementwise kernel over the expert width.
  const double f =
      dimFromEnd(items[region.front()].op->getResult(0).getType(), 1);
  fuseActivation(region.getArrayRef(), routed * f, inputs.size() > 1);
  for (size_t i :
       llvm::concat<const size_t>(inputs, outputs, region.getArrayRef())) {
    if (!items[i].desc)
      continue;
    items[i].desc->expert = true;
    items[i].desc->kernels = static_cast<unsigned>(e);
  }

  // Shared experts: other GEMMs reading x, up to the add into the combine.
  SmallVector<size_t> sharedUps;
  for (Operation *user : x.getUsers())
    if (user != gate && denseGemmOf(user, x))
      if (int64_t i = indexOf(user->getResult(0)); i >= 0 && items[i].desc)
        sharedUps.push_back(i);
  if (!sharedUps.empty()) {
    llvm::sort(sharedUps);
    OpDesc &sup = mergeGemms(sharedUps);
    // The router keeps x for the backward already.
    sup.savedBytes = sup.savedReplicatedBytes = 0;
    sup.tpAllReduceBwdBytes = xBytes;
    // Its activation: the elementwise ops on the up GEMMs' results.
    SmallVector<size_t> sharedAct;
    DenseSet<Value> from;
    for (size_t i : sharedUps)
      from.insert(items[i].op->getResult(0));
    for (size_t i = sharedUps.front() + 1; i < items.size(); ++i) {
      Operation *op = items[i].op;
      if (!isa<g::UnaryOp, g::BinaryOp>(op) || !items[i].desc ||
          !llvm::all_of(op->getOperands(), [&](Value o) {
            return !dependent(o) || from.contains(o);
          }))
        continue;
      sharedAct.push_back(i);
      from.insert(op->getResult(0));
    }
    if (sharedAct.size() > 1)
      fuseActivation(
          sharedAct,
          tensorElements(items[sharedAct.front()].op->getResult(0).getType()) /
              samples,
          sharedUps.size() > 1);
    // The shared output added to the combine's: the down GEMM's epilogue.
    for (Operation *user : combine->getResult(0).getUsers())
      if (auto add = dyn_cast<g::BinaryOp>(user);
          add && add.getKind() == g::BinaryKind::Add)
        for (Value o : user->getOperands())
          if (Operation *def = o.getDefiningOp();
              def && def != combine && denseGemmOf(def, def->getOperand(0)) &&
              from.contains(def->getOperand(0)))
            if (Item *item = itemOf(user->getResult(0))) {
              item->desc.reset();
              break;
            }
  }
  ++recognized;
  summary = llvm::formatv("{0} routed experts, top-{1}, {2} tokens each per "
                          "sample, {3} shared-expert input GEMM(s)",
                          e, static_cast<int64_t>(k), cap, sharedUps.size())
                .str();
  return "";
}

void Recognizer::run() {
  // Group the expert GEMMs by the gather that dispatches their tokens.
  SmallVector<std::pair<Operation *, SmallVector<size_t>>> blocks;
  for (auto [i, item] : llvm::enumerate(items)) {
    if (!item.desc || !stackedExperts(item.op))
      continue;
    Operation *src = throughViews(item.op->getOperand(0)).getDefiningOp();
    // Output GEMMs are found from their block's inputs.
    if (!src || !isa<g::GatherElementsOp, g::GatherOp, g::GatherNDOp>(src))
      continue;
    auto it = llvm::find_if(blocks, [&](auto &b) { return b.first == src; });
    if (it == blocks.end())
      blocks.push_back({src, {i}});
    else
      it->second.push_back(i);
  }
  for (auto &[gather, inputs] : blocks) {
    if (indexOf(gather->getResult(0)) < 0 ||
        !items[indexOf(gather->getResult(0))].desc)
      continue;
    // block() changes no cost before the whole pattern is checked.
    std::string why = block(gather, inputs);
    if (!why.empty())
      note(gather, "not costed as a mixture of experts (its ops stay dense "
                   "ops): " +
                       why);
  }
  if (recognized && !items.empty())
    note(items.front().op->getParentOp(),
         llvm::formatv("{0} mixture-of-experts block(s) costed with expert "
                       "ops (the last: {1})",
                       recognized, summary));
  for (Item &item : items)
    if (item.desc && !item.desc->expert && stackedExperts(item.op))
      note(item.op, "a GEMM with stacked [experts, in, out] weights outside "
                    "a recognized mixture-of-experts block: costed as a "
                    "dense GEMM");
}

void planning::markExperts(std::vector<Item> &items,
                           const DenseMap<Value, int64_t> &defIndex,
                           const ValueClasses &values, double samples,
                           bool remarks) {
  Recognizer(items, defIndex, values, samples, remarks).run();
}

planning::ExpertDims planning::expertDims(func::FuncOp func) {
  DenseSet<Value> dependent(func.getArguments().begin(),
                            func.getArguments().end());
  auto isDep = [&](Value v) { return dependent.contains(v); };
  SmallVector<Operation *> gemms;
  ExpertDims dims;
  // Program order is a topological order: an op's operands are classified
  // before it.
  func.walk([&](Operation *op) {
    if (llvm::any_of(op->getOperands(), isDep))
      dependent.insert(op->result_begin(), op->result_end());
    if (!stackedExperts(op, isDep))
      return;
    gemms.push_back(op);
    // The expert GEMMs' tokens [.., E, C, in]: C slots per expert.
    auto tokens = cast<RankedTensorType>(op->getOperand(0).getType());
    if (int64_t c = tokens.getDimSize(tokens.getRank() - 2); c > 0)
      dims.slots = std::gcd(dims.slots, c);
  });
  // The blocks as dist-expert-parallel finds them: the input GEMMs read one
  // tokens value, the outputs are grown from them.
  DenseSet<Operation *> done;
  for (Operation *first : gemms) {
    if (done.contains(first))
      continue;
    RoutedExperts experts;
    if (!routedExperts(expertInputs(gemms, first, done), isDep, experts)
             .empty()) {
      done.insert(first);
      continue;
    }
    for (auto [k, op] : llvm::enumerate(
             llvm::concat<Operation *const>(experts.inputs, experts.outputs))) {
      done.insert(op);
      // Stacked weights [E, in, out]: the inputs' out, the outputs' in.
      auto w = cast<RankedTensorType>(op->getOperand(1).getType());
      int64_t f = w.getDimSize(k < experts.inputs.size() ? 2 : 1);
      if (f > 0)
        dims.features = std::gcd(dims.features, f);
    }
  }
  return dims;
}
