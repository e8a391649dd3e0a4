//===- DistInterfaces.td - Op interfaces of the dist dialect -*- tablegen -*-===//
//
// Part of DistOpt. Collectives share one interface, so passes and code
// generation treat them alike; schedule actions share one, so the IR form of
// a schedule converts to the cost core's action lists one op at a time.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_INTERFACES_TD
#define DIST_INTERFACES_TD

include "mlir/IR/OpBase.td"

def Dist_CollectiveOpInterface : OpInterface<"CollectiveOpInterface"> {
  let cppNamespace = "::distopt::dist";
  let description = [{
    A collective over a device group: every device of the group takes part
    with `input` and gets `result`. The group is a list of cluster device
    numbers, or empty for `world` (every rank of the job).
  }];
  let methods = [
    InterfaceMethod<"The tensor this device contributes", "::mlir::Value",
      "getCollectiveInput", (ins), [{}],
      [{ return $_op.getInput(); }]>,
    InterfaceMethod<"The tensor this device gets", "::mlir::Value",
      "getCollectiveResult", (ins), [{}],
      [{ return $_op.getResult(); }]>,
    InterfaceMethod<"Device numbers of the group (empty: world)",
      "::llvm::ArrayRef<int64_t>", "getGroupDevices", (ins), [{}],
      [{ return $_op.getGroup(); }]>,
    InterfaceMethod<"True for every rank of the job", "bool",
      "isOverWorld", (ins), [{}],
      [{ return $_op.getGroup().empty(); }]>,
    InterfaceMethod<"How values combine, for reducing collectives",
      "std::optional<::distopt::dist::ReductionKind>", "getReduction",
      (ins), [{}], [{ return std::nullopt; }]>
  ];
}

def Dist_ActionOpInterface : OpInterface<"ActionOpInterface"> {
  let cppNamespace = "::distopt::dist";
  let description = [{
    One action of a rank's schedule (`dist.actions`). Each action op mirrors
    one `schedule::ActionKind` of the cost core (lib/Schedule/Schedule.h):
    the simulator, the verifier and the generated programs consume the same
    lists.
  }];
  let methods = [
    InterfaceMethod<"The action in the cost core's form (peers are pipeline "
                    "ranks, or slots of replicated plans)",
      "::distopt::schedule::Action", "getAction">
  ];
}

#endif // DIST_INTERFACES_TD
