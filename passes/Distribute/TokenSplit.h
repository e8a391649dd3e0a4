//===- TokenSplit.h - Ops that run on a rank's part of the tokens -*- C++
//-*-===//
//
// Part of DistOpt. The analysis and rewrite that Megatron's sequence
// parallelism (dist-tensor-parallel with sp = 1) and context parallelism
// (dist-context-parallel) share: from seed values that hold a rank's part
// of the tokens, the ops that work token by token run on that part; a
// whole operand they meet is sliced (dist.all_slice, no data moves) or,
// broadcast over the tokens, read through a dist.tp_copy (its gradient is
// the sum of the ranks' parts); under context parallelism the rows of a
// lookup of whole ids (the position embedding) are the lookup of the
// rank's ids; a token-split value any other op reads is gathered whole
// before it. dist-autodiff's rules for the collectives make
// the backward (whole values have the same gradient on every rank of the
// group; partial ones are summed where they become whole, at a
// dist.tp_copy). docs/distributed.md "Sequence parallelism" and "Context
// parallelism".
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_PASSES_DISTRIBUTE_TOKENSPLIT_H
#define DISTOPT_PASSES_DISTRIBUTE_TOKENSPLIT_H

#include "passes/Distribute/SplitValues.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

#include <functional>
#include <string>

namespace distopt::split {

class TokenSplit {
public:
  using Groups = std::vector<std::vector<unsigned>>;
  /// The groups a collective placed like an op runs over.
  using GroupsOf = std::function<Groups(mlir::Operation *)>;

  /// `attention`: also split matmuls (an operand that is a token-split
  /// right-hand side is gathered whole and read through a dist.tp_copy:
  /// each rank's queries against every key and value), softmax, views,
  /// transposes and lookups of token-split ids, and values not contiguous
  /// along the split (context parallelism). Without it (Megatron's
  /// sequence parallelism) only ops whose result is a run of the
  /// flattened elements per rank, and of the weighted matmuls only those
  /// tensor parallelism keeps whole because their output is normalized
  /// over its features (planning::normalizedOverFeatures: latent
  /// attention's down-projections).
  TokenSplit(mlir::func::FuncOp func, int64_t parts, GroupsOf groupsOf,
             bool attention, bool balanced = false)
      : func(func), parts(parts), groupsOf(std::move(groupsOf)),
        attention(attention), balanced(balanced) {}

  /// `v` holds the rank's part `s` of the tokens; `op` (when given) made
  /// it and is taken as token-split.
  void seed(mlir::Value v, Split s, mlir::Operation *op = nullptr);
  /// One sweep in order from the seeds.
  void analyze();
  /// Gathers, slices and copies at the domain's edges, then `localize`
  /// for each token-split value (its type, the op that makes it).
  void rewrite(llvm::function_ref<void(mlir::Value, Split)> localize);

  const llvm::MapVector<mlir::Value, Split> &values() const { return split; }
  bool contains(mlir::Operation *op) const { return ops.contains(op); }
  /// Matmuls of token-split queries against gathered keys or values.
  unsigned attentions() const { return numAttentions; }
  /// Why the first op that reads a token-split value does not split (it
  /// reads it gathered whole); empty when every one does.
  const std::string &firstWhole() const { return whole; }

private:
  /// A whole operand of a token-split op: its rank's part along `axis`
  /// (Slice), the whole value read through a dist.tp_copy (Copy), or a
  /// token-split operand gathered whole along `axis` and read through a
  /// dist.tp_copy (Gather).
  enum class How { Slice, Copy, Gather };
  struct Whole {
    mlir::Operation *user;
    unsigned operand;
    How how;
    int64_t axis = 0;
  };
  std::optional<Split> visit(mlir::Operation *op,
                             llvm::SmallVectorImpl<Whole> &wholes);
  std::optional<Split> visitElementwise(mlir::Operation *op,
                                        llvm::SmallVectorImpl<Whole> &wholes);
  std::optional<Split> visitMatmul(mlir::Operation *op,
                                   llvm::SmallVectorImpl<Whole> &wholes);
  std::optional<Split>
  visitPieces(mlir::Operation *op,
              llvm::function_ref<bool(int64_t)> notSplitAxis);
  /// A whole operand `use` broadcast over the tokens: read through a copy
  /// when it has a gradient.
  void broadcast(mlir::OpOperand &use, llvm::SmallVectorImpl<Whole> &wholes);
  /// Where a collective for `user`'s operand `v` runs: `user`'s stage,
  /// or `v`'s when `user` has none (the function's return).
  mlir::Operation *placeFor(mlir::Operation *user, mlir::Value v);

  mlir::func::FuncOp func;
  int64_t parts;
  GroupsOf groupsOf;
  bool attention;
  bool balanced;
  llvm::DenseSet<mlir::Operation *> seeds;
  llvm::MapVector<mlir::Value, Split> split;
  llvm::SetVector<mlir::Operation *> ops;
  llvm::SmallVector<Whole> wholes;
  unsigned numAttentions = 0;
  std::string whole;
};

} // namespace distopt::split

#endif // DISTOPT_PASSES_DISTRIBUTE_TOKENSPLIT_H
