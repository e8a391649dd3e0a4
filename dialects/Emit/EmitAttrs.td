//===- EmitAttrs.td - Attributes of the emission dialect ----*- tablegen -*-===//
#ifndef EMIT_ATTRS_TD
#define EMIT_ATTRS_TD

include "mlir/IR/AttrTypeBase.td"
include "EmitDialect.td"
include "EmitEnums.td"

class Emit_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Emit_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def Emit_BufferAttr : Emit_Attr<"Buffer", "buffer"> {
  let summary = "Where one value lives and how it is laid out";
  let description = [{
    - `arena`: bytes `[offset, offset + bytes)` of its function's arena
      (one allocation made on the first run and kept, see
      `emit.memory_plan`);
    - `view`: the memory of the op's first operand, `offset` elements in
      (reshape, flatten, inference dropout, a transpose or slice read in
      place);
    - `resident`: its own buffer, filled on the first run and kept (weights,
      constants, optimizer state);
    - `argument`: an argument of a function another function calls (a
      pipeline stage called by an action list), read where the caller holds
      it: no copy into the callee's arena, and no kernel writes over it;
    - `result`: a value such a function returns once, computed straight
      into the caller's buffer for that result.

    `strides` are the element strides of each dimension in memory; absent
    means row-major. A channels-last 4-D slot has strides
    `[H*W*C, 1, W*C, C]`.

    Example:
    ```mlir
    #emit.buffer<arena, offset = 4096, bytes = 65536>
    #emit.buffer<arena, offset = 0, bytes = 65536, strides = [16384, 1, 1024, 64]>
    #emit.buffer<view, offset = 64, strides = [24576, 192, 1]>
    #emit.buffer<resident>
    #emit.buffer<argument>
    #emit.buffer<result>
    ```
  }];
  let parameters = (ins "BufferKind":$kind, "int64_t":$offset,
                        "int64_t":$bytes,
                        OptionalArrayRefParameter<"int64_t">:$strides);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    bool isArena() const { return getKind() == BufferKind::arena; }
    bool isView() const { return getKind() == BufferKind::view; }
    bool isResident() const { return getKind() == BufferKind::resident; }
    bool isArgument() const { return getKind() == BufferKind::argument; }
    bool isResult() const { return getKind() == BufferKind::result; }
  }];
}

def Emit_MemoryPlanAttr : Emit_Attr<"MemoryPlan", "memory_plan"> {
  let summary = "The static memory plan of a function or pipeline stage";
  let description = [{
    `arena` bytes hold every `arena` buffer of the body; buffers whose live
    ranges do not overlap share bytes, and an elementwise kernel may write
    its result over an operand it reads for the last time. `unshared` is
    the sum of the buffers' sizes (what one allocation per value would
    hold), kept to report the saving. The verifier recomputes the live
    ranges of the body and rejects two live buffers sharing bytes.

    Example:
    ```mlir
    func.func @main(...) attributes {emit.memory_plan =
        #emit.memory_plan<arena = 131072, unshared = 458752>}
    ```
  }];
  let parameters = (ins "int64_t":$arena, "int64_t":$unshared);
  let assemblyFormat = [{
    `<` `arena` `=` $arena `,` `unshared` `=` $unshared `>`
  }];
  let genVerifyDecl = 1;
}

#endif // EMIT_ATTRS_TD
