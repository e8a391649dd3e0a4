//===- DistAttrs.td - Attributes of the distribution dialect -*- tablegen -*-===//
#ifndef DIST_ATTRS_TD
#define DIST_ATTRS_TD

include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "DistDialect.td"

/// A 64-bit float written as a plain literal (`2.0e+12`).
def Dist_F64Parameter : APFloatParameter<"a 64-bit float"> {
  let parser = [{ [&]() -> ::mlir::FailureOr<::llvm::APFloat> {
      double value;
      if ($_parser.parseFloat(value))
        return ::mlir::failure();
      return ::llvm::APFloat(value);
    }() }];
  let printer = [{ $_printer << $_self.convertToDouble() }];
}

/// A bracketed, possibly empty list `[a, b, ...]`; attributes print in full
/// (`#dist.link<...>`) and parse in either form.
class Dist_ListParameter<string elt> : ArrayRefParameter<elt> {
  let parser = "::distopt::dist::parseBracketList<" # elt # ">($_parser)";
  let printer = "::distopt::dist::printBracketList($_printer, $_self)";
}

class Dist_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Dist_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def Dist_DeviceKindAttr : Dist_Attr<"DeviceKind", "device_kind"> {
  let summary = "One kind of device: memory, bandwidth and peak FLOP/s";
  let description = [{
    Describes a kind of accelerator or CPU. `memory` is in bytes,
    `bandwidth` is memory bandwidth in bytes/s and `flops` maps element type
    names to peak FLOP/s for that type.

    Example:
    ```mlir
    #dist.device_kind<"a100-80gb", memory = 85899345920, bandwidth = 2.039e+12,
                      flops = {bf16 = 3.12e+14 : f64, f32 = 1.95e+13 : f64}>
    ```
  }];
  let parameters = (ins StringRefParameter<"device kind name">:$name,
                        "int64_t":$memory, Dist_F64Parameter:$bandwidth,
                        "::mlir::DictionaryAttr":$flops);
  let assemblyFormat = [{
    `<` $name `,` `memory` `=` $memory `,` `bandwidth` `=` $bandwidth `,`
    `flops` `=` $flops `>`
  }];
  let genVerifyDecl = 1;
}

def Dist_LinkAttr : Dist_Attr<"Link", "link"> {
  let summary = "A level of the interconnect: bandwidth and latency";
  let description = [{
    One level of a cluster's interconnect hierarchy, innermost first (for
    example NVLink inside a node, then InfiniBand between nodes). `bandwidth`
    is per device and direction in bytes/s, `latency` in seconds, `span` the
    number of devices one link domain of this level joins.

    Example:
    ```mlir
    #dist.link<"node", span = 8, bandwidth = 3.0e+11, latency = 2.0e-06>
    ```
  }];
  let parameters = (ins StringRefParameter<"level name">:$name,
                        "int64_t":$span, Dist_F64Parameter:$bandwidth,
                        Dist_F64Parameter:$latency);
  let assemblyFormat = [{
    `<` $name `,` `span` `=` $span `,` `bandwidth` `=` $bandwidth `,`
    `latency` `=` $latency `>`
  }];
  let genVerifyDecl = 1;
}

def Dist_DeviceGroupAttr : Dist_Attr<"DeviceGroup", "device_group"> {
  let summary = "A run of devices of one kind in a cluster";
  let description = [{
    `count` devices of `kind`, numbered consecutively from `first` in the
    cluster's device numbering.

    Example:
    ```mlir
    #dist.device_group<first = 0, count = 16, kind = "a100-80gb">
    ```
  }];
  let parameters = (ins "int64_t":$first, "int64_t":$count,
                        StringRefParameter<"device kind name">:$kind);
  let assemblyFormat = [{
    `<` `first` `=` $first `,` `count` `=` $count `,` `kind` `=` $kind `>`
  }];
  let genVerifyDecl = 1;
}

def Dist_ClusterAttr : Dist_Attr<"Cluster", "cluster"> {
  let summary = "The machines a program runs on";
  let description = [{
    A possibly heterogeneous cluster: the device kinds it has, which devices
    are of which kind (device groups, in device-number order, covering the
    devices without gaps) and the levels of its interconnect, innermost first.
    The planner attaches it to the module as `dist.cluster`.

    Example:
    ```mlir
    module attributes {dist.cluster = #dist.cluster<"mixed",
        kinds = [#dist.device_kind<"a100", memory = 85899345920,
                   bandwidth = 2.0e+12, flops = {bf16 = 3.12e+14 : f64}>,
                 #dist.device_kind<"v100", memory = 34359738368,
                   bandwidth = 9.0e+11, flops = {f16 = 1.25e+14 : f64}>],
        groups = [#dist.device_group<first = 0, count = 8, kind = "a100">,
                  #dist.device_group<first = 8, count = 8, kind = "v100">],
        links = [#dist.link<"node", span = 8, bandwidth = 3.0e+11, latency = 2.0e-06>,
                 #dist.link<"cluster", span = 16, bandwidth = 2.5e+10, latency = 5.0e-06>]>} {}
    ```
  }];
  let parameters = (ins StringRefParameter<"cluster name">:$name,
      Dist_ListParameter<"DeviceKindAttr">:$kinds,
      Dist_ListParameter<"DeviceGroupAttr">:$groups,
      Dist_ListParameter<"LinkAttr">:$links);
  let assemblyFormat = [{
    `<` $name `,` `kinds` `=` $kinds `,` `groups` `=` $groups
    `,` `links` `=` $links `>`
  }];
  let extraClassDeclaration = [{
    /// Total number of devices.
    int64_t getNumDevices() const;
    /// The kind of device `id`, or null when out of range.
    DeviceKindAttr getKindOf(int64_t id) const;
  }];
  let genVerifyDecl = 1;
}

def Dist_MeshAttr : Dist_Attr<"Mesh", "mesh"> {
  let summary = "A group of devices arranged as an N-d mesh";
  let description = [{
    The devices one stage (or one collective) runs on, as an N-d mesh of
    cluster device numbers in row-major order. Axes are typically data and
    tensor parallelism. Devices may be of different kinds.

    Example:
    ```mlir
    #dist.mesh<shape = [2, 4], devices = [0, 1, 2, 3, 4, 5, 6, 7]>
    ```
  }];
  let parameters = (ins Dist_ListParameter<"int64_t">:$shape,
                        Dist_ListParameter<"int64_t">:$devices);
  let assemblyFormat = [{
    `<` `shape` `=` $shape `,` `devices` `=` $devices `>`
  }];
  let genVerifyDecl = 1;
}

#endif // DIST_ATTRS_TD
