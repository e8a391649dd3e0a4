//===- EmitComm.cpp - dist ops to runtime calls -----------------*- C++ -*-===//
//
// Part of DistOpt. Lowers the `dist` ops that move data to the communicator
// ABI (distrt_comm.h) on the program's world communicator `P.comm`:
// collectives through their common interface, point-to-point transfers
// (absolute peers, or an action list's device with this device's
// coordinates through the program's `peers` table), and the micro-batch
// split and merge of per-list programs (docs/distributed.md).
//
//===----------------------------------------------------------------------===//
#include "lib/Codegen/FunctionEmitter.h"

#include "dialects/Dist/Balanced.h"
#include "dialects/Dist/DistOps.h"
#include "dialects/Emit/EmitDialect.h"

using namespace mlir;
using namespace distopt::codegen;
namespace dist = distopt::dist;

bool distopt::codegen::isCommOp(Operation *op) {
  return isa<dist::CollectiveOpInterface, dist::SendOp, dist::RecvOp,
             dist::MicrobatchSplitOp, dist::MicrobatchMergeOp>(op);
}

bool distopt::codegen::hasCollectives(Operation *root) {
  bool found = false;
  root->walk([&](Operation *op) {
    if (isa<dist::CollectiveOpInterface, dist::SendOp, dist::RecvOp>(op))
      found = true;
  });
  return found;
}

static const char *runtimeOp(dist::ReductionKind kind) {
  switch (kind) {
  case dist::ReductionKind::sum:
    return "DISTRT_REDUCE_SUM";
  case dist::ReductionKind::mean:
    return "DISTRT_REDUCE_MEAN";
  case dist::ReductionKind::max:
    return "DISTRT_REDUCE_MAX";
  case dist::ReductionKind::min:
    return "DISTRT_REDUCE_MIN";
  case dist::ReductionKind::prod:
    return nullptr;
  }
  return nullptr;
}

/// Checks what every collective needs: a tensor the ABI carries.
static LogicalResult checkCollective(FunctionEmitter &e,
                                     dist::CollectiveOpInterface op) {
  Operation *raw = op.getOperation();
  Value in = op.getCollectiveInput();
  if (!FunctionEmitter::typeOf(in).hasStaticShape() ||
      FunctionEmitter::rtType(FunctionEmitter::typeOf(in).getElementType())
          .empty())
    return raw->emitError()
           << "dist-compile: " << raw->getName() << " of " << in.getType()
           << " has no runtime lowering; collectives carry statically "
              "shaped f32, f16, bf16, i32, i64 or i1 tensors";
  return success();
}

/// Emits what the collective's communicator needs and returns its C++
/// expression: the world's for `over world`, else the communicator of the
/// group's ranks (Program::group: the world's when the group is every rank
/// of the job, else made by the group's ranks on first use).
static std::string communicator(FunctionEmitter &e,
                                dist::CollectiveOpInterface op) {
  if (op.isOverWorld())
    return "P.comm";
  SmallVector<SmallVector<int64_t>> groups = dist::runGroups(op);
  size_t n = groups.front().size();
  std::string where = FunctionEmitter::where(op);
  auto list = [&](ArrayRef<int64_t> g) {
    for (auto [k, d] : llvm::enumerate(g))
      e.os << (k ? ", " : "") << d;
  };
  if (groups.size() == 1) {
    e.os << "    static const int32_t group[] = {";
    list(groups.front());
    e.os << "};\n";
  } else {
    // Several groups run the program (dist.groups): each rank takes the
    // one that holds it.
    e.os << "    static const int32_t groups[" << groups.size() << "][" << n
         << "] = {";
    for (auto [i, g] : llvm::enumerate(groups)) {
      e.os << (i ? ", {" : "{");
      list(g);
      e.os << "}";
    }
    e.os << "};\n    const int32_t *group = P.groupHolding(&groups[0][0], "
         << groups.size() << ", " << n << ", \"" << where
         << "\");\n    if (!group) return 1;\n";
  }
  e.os << "    distrt_comm *comm = P.group(group, " << n << ", \"" << where
       << "\");\n    if (!comm) return 1;\n";
  return "comm";
}

/// A ring attention or its backward (context parallelism): the runtime
/// runs the ring over the group's communicator.
static LogicalResult emitRing(FunctionEmitter &e,
                              dist::CollectiveOpInterface op) {
  Operation *raw = op.getOperation();
  auto forward = dyn_cast<dist::RingAttentionOp>(raw);
  auto backward = dyn_cast<dist::RingAttentionGradOp>(raw);
  // Operands in the runtime's order (q, k, v, mask), then the results.
  SmallVector<std::pair<std::string, Value>> in, out;
  Value mask;
  float scale;
  bool balanced;
  if (forward) {
    in = {{"q", forward.getQuery()},
          {"k", forward.getKey()},
          {"v", forward.getValue()}};
    out = {{"out", forward.getResult()}, {"lse", forward.getLse()}};
    mask = forward.getMask();
    scale = forward.getScale().convertToFloat();
    balanced = dist::isBalanced(forward);
  } else {
    in = {{"q", backward.getQuery()}, {"k", backward.getKey()},
          {"v", backward.getValue()}, {"out", backward.getResult()},
          {"lse", backward.getLse()}, {"dout", backward.getResultGrad()}};
    out = {{"dq", backward.getQueryGrad()},
           {"dk", backward.getKeyGrad()},
           {"dv", backward.getValueGrad()}};
    mask = backward.getMask();
    scale = backward.getScale().convertToFloat();
    balanced = dist::isBalanced(backward);
  }
  for (auto &[name, v] : out)
    e.allocate(v);
  e.os << "  {\n";
  std::string comm = communicator(e, op);
  auto args = [&](ArrayRef<std::pair<std::string, Value>> list) {
    std::string text;
    for (auto &[name, v] : list) {
      e.os << "    distrt_tensor " << name << " = " << e.desc(v) << ";\n";
      text += ", &" + name;
    }
    return text;
  };
  if (mask)
    e.os << "    distrt_tensor mask = " << e.desc(mask) << ";\n";
  // distrt_ring_attention(comm, q, k, v, mask, scale, balanced, out, lse)
  // and distrt_ring_attention_backward(comm, q, k, v, mask, scale,
  // balanced, out, lse, dout, dq, dk, dv).
  std::string qkv = args(ArrayRef(in).take_front(3));
  std::string rest = args(ArrayRef(in).drop_front(3));
  std::string results = args(out);
  e.os << "  ";
  e.call(
      std::string(forward ? "distrt_ring_attention("
                          : "distrt_ring_attention_backward(") +
          comm + qkv + (mask ? ", &mask, " : ", NULL, ") +
          FunctionEmitter::literal(scale, Float32Type::get(raw->getContext())) +
          (balanced ? ", 1" : ", 0") + rest + results + ")",
      raw);
  e.os << "  }\n";
  return success();
}

/// Emits the copies between a balanced collective's whole value in natural
/// order (`natural`: 2 n chunks of `chunk` bytes) and its rank-major order
/// (`ranked`: device k's chunks k and 2 n - 1 - k, then device k + 1's),
/// from `ranked` into `natural` when `toNatural`, else back. Context
/// parallelism's load-balanced split (the ops' `balanced`).
static void emitBalancedOrder(FunctionEmitter &e, const std::string &natural,
                              const std::string &ranked, int64_t chunk,
                              int64_t n, bool toNatural) {
  e.os << "    for (int64_t k = 0; k < " << n << "; ++k) {\n"
       << "      const int64_t at[2] = {k, " << 2 * n - 1 << " - k};\n"
       << "      for (int64_t h = 0; h < 2; ++h) {\n"
       << "        char *n_ = (char *)" << natural << " + at[h] * " << chunk
       << ";\n        char *r_ = (char *)" << ranked << " + (2 * k + h) * "
       << chunk << ";\n        if (P.copy(" << (toNatural ? "n_, r_" : "r_, n_")
       << ", " << chunk << ")) return 1;\n      }\n    }\n";
}

static LogicalResult emitCollective(FunctionEmitter &e,
                                    dist::CollectiveOpInterface op) {
  Operation *raw = op.getOperation();
  if (failed(checkCollective(e, op)))
    return failure();
  if (isa<dist::RingAttentionOp, dist::RingAttentionGradOp>(raw))
    return emitRing(e, op);
  Value in = op.getCollectiveInput(), out = op.getCollectiveResult();
  if (auto ar = dyn_cast<dist::AllReduceOp>(raw)) {
    const char *rop = runtimeOp(ar.getKind());
    if (!rop)
      return ar.emitError()
             << "dist-compile: dist.all_reduce "
             << dist::stringifyReductionKind(ar.getKind())
             << " has no runtime lowering; the runtime reduces with sum, "
                "mean, max and min";
    e.allocate(out);
    // Started here and waited for before its first reader (emit.async).
    std::string request =
        raw->hasAttr(distopt::emit::kAsyncAttr) ? e.startRequest(raw) : "";
    e.os << "  {\n";
    std::string comm = communicator(e, op);
    e.os << "    distrt_tensor in = " << e.desc(in)
         << ";\n    distrt_tensor out = " << e.desc(out) << ";\n  ";
    if (request.empty())
      e.call("distrt_all_reduce(" + comm + ", &in, &out, " + rop + ")", raw);
    else
      e.call("distrt_all_reduce_start(" + comm + ", &in, &out, " + rop + ", &" +
                 request + ")",
             raw);
    e.os << "  }\n";
    return success();
  }
  if (auto bc = dyn_cast<dist::BroadcastOp>(raw)) {
    // Every rank gets root's tensor: copy the input, broadcast in place.
    e.allocate(out);
    e.os << "  {\n";
    std::string comm = communicator(e, op);
    e.os << "    if (P.copy(" << e.name(out) << ", " << e.name(in) << ", "
         << FunctionEmitter::numel(in) *
                FunctionEmitter::byteSize(
                    FunctionEmitter::typeOf(in).getElementType())
         << ")) return 1;\n    distrt_tensor t = " << e.desc(out) << ";\n  ";
    // The root is a device number; its rank in the group is its position.
    ArrayRef<int64_t> devices = op.getGroupDevices();
    int64_t root = bc.getRoot();
    if (!op.isOverWorld())
      root = llvm::find(devices, root) - devices.begin();
    e.call("distrt_broadcast(" + comm + ", &t, " + std::to_string(root) + ")",
           raw);
    e.os << "  }\n";
    return success();
  }
  // Reduce-scatter and all-gather: the runtime's blocks are runs of the
  // flattened elements, which are shards along `axis` when every dimension
  // before it is 1.
  auto contiguousAlong = [&](Value v, int64_t axis) {
    auto shape = FunctionEmitter::typeOf(v).getShape();
    return llvm::all_of(shape.take_front(axis),
                        [](int64_t d) { return d == 1; });
  };
  if (auto rs = dyn_cast<dist::ReduceScatterOp>(raw)) {
    const char *rop = runtimeOp(rs.getKind());
    if (!rop || !contiguousAlong(in, rs.getAxis()))
      return rs.emitError()
             << "dist-compile: dist.reduce_scatter "
             << dist::stringifyReductionKind(rs.getKind()) << " along axis "
             << rs.getAxis() << " of " << in.getType()
             << " has no runtime lowering; the runtime reduces with sum, "
                "mean, max and min into shards of the leading dimension (the "
                "dimensions before the axis must be 1)";
    e.allocate(out);
    e.os << "  {\n";
    std::string comm = communicator(e, op);
    e.os << "    distrt_tensor in = " << e.desc(in)
         << ";\n    distrt_tensor out = " << e.desc(out) << ";\n";
    if (dist::isBalanced(rs)) {
      // The partial sums put in rank-major order first: each device's
      // shard is then its run, its chunks k and 2 n - 1 - k.
      int64_t bytes = FunctionEmitter::bytesOf(in);
      int64_t n = op.getGroupDevices().size();
      e.os << "    void *ranked = P.alloc(" << bytes
           << ");\n    if (!ranked) return 1;\n";
      emitBalancedOrder(e, e.name(in), "ranked", bytes / (2 * n), n,
                        /*toNatural=*/false);
      e.os << "    in.data = ranked;\n";
    }
    e.os << "  ";
    e.call("distrt_reduce_scatter(" + comm + ", &in, &out, " + rop + ")", raw);
    if (dist::isBalanced(rs))
      e.os << "    P.release(ranked);\n";
    e.os << "  }\n";
    return success();
  }
  if (auto ag = dyn_cast<dist::AllGatherOp>(raw)) {
    if (!contiguousAlong(out, ag.getAxis()))
      return ag.emitError()
             << "dist-compile: dist.all_gather along axis " << ag.getAxis()
             << " of " << in.getType()
             << " has no runtime lowering; the runtime gathers shards of the "
                "leading dimension (the dimensions before the axis must be 1)";
    e.allocate(out);
    e.os << "  {\n";
    std::string comm = communicator(e, op);
    e.os << "    distrt_tensor in = " << e.desc(in)
         << ";\n    distrt_tensor out = " << e.desc(out) << ";\n";
    int64_t bytes = FunctionEmitter::bytesOf(out);
    if (dist::isBalanced(ag))
      e.os << "    void *ranked = P.alloc(" << bytes
           << ");\n    if (!ranked) return 1;\n    out.data = ranked;\n";
    e.os << "  ";
    e.call("distrt_all_gather(" + comm + ", &in, &out)", raw);
    if (dist::isBalanced(ag)) {
      // Gathered in rank-major order: each device's chunks put back in
      // place.
      int64_t n = op.getGroupDevices().size();
      emitBalancedOrder(e, e.name(out), "ranked", bytes / (2 * n), n,
                        /*toNatural=*/true);
      e.os << "    P.release(ranked);\n";
    }
    e.os << "  }\n";
    return success();
  }
  if (auto as = dyn_cast<dist::AllSliceOp>(raw)) {
    // No data moves: this rank copies its block, found by its place in the
    // group's communicator.
    if (!contiguousAlong(in, as.getAxis()))
      return as.emitError()
             << "dist-compile: dist.all_slice along axis " << as.getAxis()
             << " of " << in.getType()
             << " has no runtime lowering; shards are blocks of the leading "
                "dimension (the dimensions before the axis must be 1)";
    e.allocate(out);
    e.os << "  {\n";
    std::string comm = communicator(e, op);
    e.os << "    int32_t at = 0;\n  ";
    e.call("distrt_comm_rank(" + comm + ", &at)", raw);
    int64_t bytes = FunctionEmitter::bytesOf(out);
    if (dist::isBalanced(as)) {
      // Chunks at and 2 n - 1 - at of 2 n.
      int64_t n = op.getGroupDevices().size(), chunk = bytes / 2;
      e.os << "    if (P.copy(" << e.name(out) << ", (const char *)"
           << e.name(in) << " + (size_t)at * " << chunk << ", " << chunk
           << ")) return 1;\n    if (P.copy((char *)" << e.name(out) << " + "
           << chunk << ", (const char *)" << e.name(in) << " + (size_t)("
           << 2 * n - 1 << " - at) * " << chunk << ", " << chunk
           << ")) return 1;\n  }\n";
      return success();
    }
    e.os << "    if (P.copy(" << e.name(out) << ", (const char *)" << e.name(in)
         << " + (size_t)at * " << bytes << ", " << bytes
         << ")) return 1;\n  }\n";
    return success();
  }
  if (auto a2a = dyn_cast<dist::AllToAllOp>(raw)) {
    // The runtime packs pieces of a non-leading split axis into blocks and
    // unpacks the received ones along the concat axis.
    e.allocate(out);
    e.os << "  {\n";
    std::string comm = communicator(e, op);
    e.os << "    distrt_tensor in = " << e.desc(in)
         << ";\n    distrt_tensor out = " << e.desc(out) << ";\n  ";
    e.call("distrt_all_to_all(" + comm + ", &in, &out, " +
               std::to_string(a2a.getSplitAxis()) + ", " +
               std::to_string(a2a.getConcatAxis()) + ")",
           raw);
    e.os << "  }\n";
    return success();
  }
  return raw->emitError() << "dist-compile: " << raw->getName()
                          << " has no runtime lowering yet (the runtime has "
                             "all-reduce, reduce-scatter, all-gather, "
                             "all-slice, all-to-all and broadcast)";
}

/// The peer of a transfer: a device number, or the device of an action list
/// with this device's coordinates (the program's `peers` table).
template <typename Transfer> static std::string peerOf(Transfer op) {
  if (op.getList())
    return "peers[P.rank][" + std::to_string(op.getPeer()) + "]";
  return std::to_string(op.getPeer());
}

/// A descriptor of \p v for distrt_send/recv: its runtime dtype, or its bytes
/// as u8 when the ABI has no such dtype (f64, i8, i16, ...).
static std::string transferDesc(FunctionEmitter &e, Value v) {
  auto t = FunctionEmitter::typeOf(v);
  if (!FunctionEmitter::rtType(t.getElementType()).empty())
    return e.desc(v);
  int64_t bytes = t.getNumElements() *
                  (int64_t)FunctionEmitter::byteSize(t.getElementType());
  return "dg::T(" + e.name(v) + ", DISTRT_U8, {" + std::to_string(bytes) +
         "})";
}

static LogicalResult checkTransferType(Operation *op, Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t || !t.hasStaticShape() || FunctionEmitter::cType(v).empty())
    return op->emitError() << "dist-compile: " << op->getName() << " of "
                           << v.getType()
                           << "; transfers carry statically shaped tensors";
  return success();
}

static LogicalResult emitSend(FunctionEmitter &e, dist::SendOp op) {
  if (failed(checkTransferType(op, op.getValue())))
    return failure();
  e.os << "  { distrt_tensor t = " << transferDesc(e, op.getValue()) << ";\n  ";
  e.call("distrt_send(P.comm, &t, " + peerOf(op) + ", " +
             std::to_string(op.getTag()) + ")",
         op);
  e.os << "  }\n";
  return success();
}

static LogicalResult emitRecv(FunctionEmitter &e, dist::RecvOp op) {
  if (failed(checkTransferType(op, op.getResult())))
    return failure();
  e.allocate(op.getResult());
  e.os << "  { distrt_tensor t = " << transferDesc(e, op.getResult())
       << ";\n  ";
  e.call("distrt_recv(P.comm, &t, " + peerOf(op) + ", " +
             std::to_string(op.getTag()) + ")",
         op);
  e.os << "  }\n";
  return success();
}

/// Micro-batches are row blocks of the leading dimension: each piece is a
/// contiguous run of bytes of the whole.
static LogicalResult emitMicrobatches(FunctionEmitter &e, Operation *op,
                                      Value whole, ValueRange pieces,
                                      int64_t axis, bool merge) {
  if (axis != 0)
    return op->emitError() << "dist-compile: " << op->getName()
                           << " along axis " << axis
                           << " has no lowering; micro-batches split the "
                              "leading dimension (axis 0)";
  if (merge)
    e.allocate(whole);
  for (auto [k, piece] : llvm::enumerate(pieces)) {
    if (!merge)
      e.allocate(piece);
    int64_t bytes = FunctionEmitter::bytesOf(piece);
    std::string at = "(char *)" + e.name(whole) + " + " +
                     std::to_string(k * bytes);
    e.os << "  if (P.copy(" << (merge ? at : e.name(piece)) << ", "
         << (merge ? e.name(piece) : at) << ", " << bytes
         << ")) return 1;\n";
  }
  return success();
}

LogicalResult distopt::codegen::emitCommOp(FunctionEmitter &e, Operation *op) {
  if (auto collective = dyn_cast<dist::CollectiveOpInterface>(op))
    return emitCollective(e, collective);
  if (auto send = dyn_cast<dist::SendOp>(op))
    return emitSend(e, send);
  if (auto recv = dyn_cast<dist::RecvOp>(op))
    return emitRecv(e, recv);
  if (auto split = dyn_cast<dist::MicrobatchSplitOp>(op))
    return emitMicrobatches(e, op, split.getInput(), split.getMicrobatches(),
                            split.getAxis(), /*merge=*/false);
  if (auto merge = dyn_cast<dist::MicrobatchMergeOp>(op))
    return emitMicrobatches(e, op, merge.getResult(), merge.getMicrobatches(),
                            merge.getAxis(), /*merge=*/true);
  return op->emitError() << "dist-compile: '" << op->getName()
                         << "' has no lowering to the runtime";
}
