//===- FunctionEmitter.h - Emits one graph function as C++ ------*- C++ -*-===//
//
// Part of DistOpt. The state shared by the per-family emitters: how each SSA
// value is named in the generated code, which buffer holds it, when the
// buffer may be freed, and helpers for the index arithmetic of generated
// loops (shapes are static, so every stride is a constant in the output).
//
//===----------------------------------------------------------------------===//
#ifndef DIST_LIB_CODEGEN_FUNCTIONEMITTER_H
#define DIST_LIB_CODEGEN_FUNCTIONEMITTER_H

#include "lib/Codegen/Codegen.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>

namespace mlir::func {
class FuncOp;
} // namespace mlir::func

namespace distopt::codegen {

/// Emits the body of one model's `run` function.
class FunctionEmitter {
public:
  FunctionEmitter(llvm::raw_ostream &os, llvm::raw_ostream &globals,
                  const CodegenOptions &options, std::string prefix)
      : os(os), globals(globals), options(options), prefix(std::move(prefix)) {}

  llvm::raw_ostream &os;      ///< the body of `run`
  llvm::raw_ostream &globals; ///< namespace-scope definitions (constants)
  const CodegenOptions &options;
  std::string prefix; ///< unique prefix for globals of this model
  /// The arena this body uses and its size, when not its own (`prefix`,
  /// its memory plan's): functions that never run at once share one.
  std::string arenaName;
  std::optional<int64_t> arenaBytes;

  /// A training step: weights and `graph.state` live in persistent buffers
  /// across calls; results marked `graph.update` are written back to them.
  bool training = false;

  /// While a runtime kernel that computes in f32 only is emitted for an op
  /// with f16/bf16 tensors: those tensors' f32 copies (name() and desc()
  /// give them), see emitWidened.
  bool widening = false;
  llvm::DenseMap<mlir::Value, std::string> wide;
  /// Emits `emit` (one op's runtime call) between f32 copies of the op's
  /// f16/bf16 operands and results: operands are widened before the call,
  /// results rounded into their 16-bit buffers after it.
  mlir::LogicalResult
  emitWidened(mlir::Operation *op,
              llvm::function_ref<mlir::LogicalResult()> emit);
  /// f32, or f16/bf16 while widening (the kernel sees f32 copies).
  bool isF32Like(mlir::Type t) const {
    return t.isF32() || (widening && (t.isF16() || t.isBF16()));
  }

  /// Elementwise ops emitted inside their (single) user's kernel.
  llvm::DenseSet<mlir::Operation *> fused;

  /// One row of the model's `--profile` op table (distrt/gen/Profile.h).
  struct ProfiledOp {
    std::string kind, where, signature, phase;
    /// emit.cost_instance, or -1.
    int64_t instance = -1;
    /// Parameters a parameter update writes (0 for other ops).
    int64_t updated = 0;
  };
  /// When set, every emitted op is timed under its index in this table
  /// (shared by the functions of one model).
  std::vector<ProfiledOp> *profiled = nullptr;
  /// Values a stage function computes straight into its caller's result
  /// buffer `out[k]` (k is the value here) rather than into its arena.
  llvm::DenseMap<mlir::Value, unsigned> resultSlots;
  /// Optimizer results written over the weight or state buffer they replace
  /// (inPlaceUpdates): no arena slot, no write-back copy.
  llvm::DenseMap<mlir::Value, mlir::Value> updatesInPlace;
  /// Emits `op` through emitOp, timed when `profiled` is set.
  mlir::LogicalResult emitProfiled(mlir::Operation *op);

  /// A started all-reduce (emit.async) not waited for yet: its result, the
  /// request variable, and the profile row its wait's time adds to (-1).
  struct Started {
    mlir::Value value;
    std::string request, where;
    int64_t row = -1;
  };
  llvm::SmallVector<Started> started;
  /// Declares a request for `op`'s all-reduce and records it as started;
  /// returns the variable.
  std::string startRequest(mlir::Operation *op);
  /// Emits the waits for the started all-reduces `op` (or an op nested in
  /// it) reads; for every one still started when `op` is null (before the
  /// body's terminator).
  void waitFor(mlir::Operation *op);

  //===--- Values and buffers ---------------------------------------------===//
  //
  // Where values live is the memory plan dist-prepare-for-emission recorded
  // (dialects/Emit/MemoryPlan.h): the printer declares the body's arena,
  // points each value at its slot, view or resident buffer, and frees
  // nothing per op.

  /// The C++ expression (a typed pointer variable) holding `v`.
  std::string name(mlir::Value v);
  /// Names `v` (an op result or function argument) after its buffer in the
  /// plan: its arena slot (or its own allocation, for a value outside any
  /// plan: a kernel's scratch).
  void allocate(mlir::Value v);
  /// Names `v` (a weight or constant of an inference body) after its
  /// resident buffer `key`, created on the first run (the generated bool
  /// `fresh_<name>` says so: fill it then).
  void bindResident(mlir::Value v, llvm::StringRef key);
  /// `arg` (a block argument of an emit.kernel body) stands for `value`.
  void bindKernelInput(mlir::Value arg, mlir::Value value);
  /// The value outside any kernel that `v` stands for.
  mlir::Value resolve(mlir::Value v) const;
  /// Element strides of `v` in memory (the plan's; row-major by default).
  llvm::SmallVector<int64_t> layoutOf(mlir::Value v) const;
  /// Whether `v`'s memory is row-major.
  bool isRowMajor(mlir::Value v) const;
  /// Whether `v` is a resident weight or constant of an inference body (or
  /// a view of one): it never changes while the program runs.
  bool isConstant(mlir::Value v) const;
  /// Names `v` after the persistent buffer `bufferName` (created on first
  /// use; the generated bool `fresh_<name>` says so).
  void bindPersistent(mlir::Value v, llvm::StringRef bufferName, bool &fresh);
  /// For a value whose op carries `dist.tp_shard`, emits this rank's
  /// `dg::Shard` (once) and returns its C++ name; else "".
  std::string shardOf(mlir::Value v);
  /// Names `v` (a block argument) after a pointer the caller owns, read from
  /// the C++ expression `expr`.
  void bindInput(mlir::Value v, llvm::StringRef expr);
  /// `v` is a view of `of`'s buffer (the plan's offset into it).
  void alias(mlir::Value v, mlir::Value of);
  /// Emits `if (<cond>) return 1;` bookkeeping for a runtime call.
  void call(llvm::StringRef expr, mlir::Operation *op);
  /// Reads the memory plan of `body`'s owner, numbers the ops and declares
  /// the arena; call before emitting the body's ops.
  void computeLifetimes(mlir::Block &body);
  /// Where `op` is emitted (its root's position for fused ops).
  unsigned positionOf(mlir::Operation *op);

  //===--- Types ----------------------------------------------------------===//

  static mlir::RankedTensorType typeOf(mlir::Value v) {
    return llvm::cast<mlir::RankedTensorType>(v.getType());
  }
  static int64_t numel(mlir::Value v) { return typeOf(v).getNumElements(); }
  /// Bytes of `v`'s elements (dense).
  static int64_t bytesOf(mlir::Value v) {
    return numel(v) * (int64_t)byteSize(typeOf(v).getElementType());
  }
  /// C++ scalar type of an element type ("" when unsupported).
  static std::string cType(mlir::Type t);
  static std::string cType(mlir::Value v) {
    return cType(typeOf(v).getElementType());
  }
  /// The type generated loops compute in: f32 for the 16-bit floats (stored
  /// as dg::f16 / dg::bf16), `t` otherwise.
  static mlir::Type computeType(mlir::Type t) {
    if (t.isF16() || t.isBF16())
      return mlir::Float32Type::get(t.getContext());
    return t;
  }
  /// dg::DType enumerator ("" when unsupported).
  static std::string dgType(mlir::Type t);
  /// distrt_dtype enumerator for runtime calls ("" when the ABI lacks it).
  static std::string rtType(mlir::Type t);
  static size_t byteSize(mlir::Type t);

  /// `dg::T(ptr, DTYPE, {dims})` for `v`, optionally with other dims.
  std::string desc(mlir::Value v);
  std::string desc(mlir::Value v, llvm::ArrayRef<int64_t> dims);
  /// `v` (rank >= 2) with a unit dim inserted before its last one, in its
  /// own layout: a 1-D convolution's tensors as 2-D ones of height 1.
  std::string descWithUnitHeight(mlir::Value v);
  /// "graph.matmul at file:line:col", used in runtime error messages.
  static std::string where(mlir::Operation *op);

  /// Fails unless every operand and result has a loop-supported type.
  mlir::LogicalResult checkTypes(mlir::Operation *op);

  //===--- Index arithmetic -----------------------------------------------===//

  static llvm::SmallVector<int64_t> stridesOf(llvm::ArrayRef<int64_t> shape);
  /// Expression for coordinate `dim` of linear index `idx` in `shape`.
  static std::string coord(llvm::ArrayRef<int64_t> shape, unsigned dim,
                           llvm::StringRef idx);
  /// Linear offset into a tensor of shape `in` (NumPy-broadcast to `out`)
  /// for linear index `idx` of `out`.
  static std::string broadcastOffset(llvm::ArrayRef<int64_t> out,
                                     llvm::ArrayRef<int64_t> in,
                                     llvm::StringRef idx);
  /// The same for strided memory: `idx` walks the memory of a dense output
  /// of shape `out` laid out with `outStrides`; the operand of shape `in`
  /// (broadcast to `out`) is laid out with `inStrides`.
  static std::string stridedOffset(llvm::ArrayRef<int64_t> out,
                                   llvm::ArrayRef<int64_t> outStrides,
                                   llvm::ArrayRef<int64_t> in,
                                   llvm::ArrayRef<int64_t> inStrides,
                                   llvm::StringRef idx);
  /// Where element `i` of a row-major output of shape `out` reads an
  /// operand of shape `in` laid out with `inStrides`, inside a row loop
  /// (openRowLoop): the offset of row `r` plus `j` times the operand's last
  /// stride, so that the loop over `j` vectorizes; null when the operand is
  /// read at `i` itself.
  static std::optional<std::string>
  rowOffset(llvm::ArrayRef<int64_t> out, llvm::ArrayRef<int64_t> in,
            llvm::ArrayRef<int64_t> inStrides);
  /// The same for an output laid out densely in any dimension order
  /// (`outStrides`, a channels-last buffer): its rows and columns are those
  /// of its memory, the column the dimension of stride 1.
  static std::optional<std::string>
  rowOffset(llvm::ArrayRef<int64_t> out, llvm::ArrayRef<int64_t> outStrides,
            llvm::ArrayRef<int64_t> in, llvm::ArrayRef<int64_t> inStrides);
  /// Whether a loop writing `result` runs over rows and columns: a CPU
  /// program, a row-major result of rank 2 or more, rows of 8 or more. With
  /// `anyOrder`, a result laid out densely in another dimension order too
  /// (rows of its memory; rowOffset with the output's strides reads it).
  bool loopsByRows(mlir::Value result, bool anyOrder = false);
  /// The row length of such a loop: the extent of the result's dimension
  /// of stride 1.
  int64_t rowLength(mlir::Value result);
  /// Opens the loop over `rows` rows `r` and `cols` columns `j`
  /// (dg::parallelRows<rows, cols>, the column loop DG_SIMD) with
  /// `i = r * cols + j`; closeRowLoop closes it.
  void openRowLoop(int64_t rows, int64_t cols);
  /// The same over the rows and columns of `result`.
  void openRowLoop(mlir::Value result);
  void closeRowLoop();
  /// Opens `if (dg::parallelFor<n>(P, [=] DG_HD (int64_t i) {`.
  void openLoop(int64_t n, llvm::StringRef idx = "i");
  void closeLoop();
  /// Opens `if (dg::parallelChunks<n>(P, [=] DG_HD (int64_t lo, int64_t hi)
  /// {`: what the caller prints next runs once a chunk; the loop over `i` of
  /// the chunk opens with openChunkItems and closes with closeChunkLoop.
  void openChunkLoop(int64_t n);
  void openChunkItems();
  void closeChunkLoop();

  /// A float literal of type `t` for value `v`.
  static std::string literal(double v, mlir::Type t);

  /// Emits a fresh f32 temporary holding `v` (f32) broadcast to `shape`
  /// (NumPy rules: a norm's scale of one element over its D) and returns
  /// its name; the caller emits `P.release(name)` after its last use.
  std::string broadcastTemp(mlir::Value v, llvm::ArrayRef<int64_t> shape);

private:
  llvm::DenseMap<mlir::Value, std::string> names;
  /// The dg::Shard emitted for a tensor-parallel weight or state (shardOf).
  llvm::DenseMap<mlir::Value, std::string> shards;
  llvm::DenseMap<mlir::Operation *, unsigned> positions;
  llvm::DenseMap<mlir::Value, mlir::Value> outer;
  unsigned counter = 0;
};

//===--- Per-family emitters (one file each) ------------------------------===//

/// Ops of each family; return failure (with a diagnostic on the op) when
/// the op cannot be lowered, `std::nullopt`-like `false` when not theirs.
bool isElementwise(mlir::Operation *op);
mlir::LogicalResult emitElementwise(FunctionEmitter &e, mlir::Operation *op);
bool isDataOp(mlir::Operation *op);
/// Ops whose result shares the operand's buffer (reshape, flatten, ...).
bool isAliasOp(mlir::Operation *op);
mlir::LogicalResult emitDataOp(FunctionEmitter &e, mlir::Operation *op);
bool isNNOp(mlir::Operation *op);
mlir::LogicalResult emitNNOp(FunctionEmitter &e, mlir::Operation *op);
/// The `ignore_index, reduction` arguments of the runtime's softmax
/// cross-entropy calls (forward and backward) for \p op, one of them.
std::string crossEntropyArgs(mlir::Operation *op);
/// Training ops: state, optimizer updates, gradients (EmitTrain.cpp).
bool isTrainOp(mlir::Operation *op);
mlir::LogicalResult emitTrainOp(FunctionEmitter &e, mlir::Operation *op);
/// Reductions are generated loops (EmitReduce.cpp).
mlir::LogicalResult emitReduce(FunctionEmitter &e, mlir::Operation *op);
/// `dist` collectives (EmitComm.cpp).
bool isCommOp(mlir::Operation *op);
bool hasCollectives(mlir::Operation *root);
mlir::LogicalResult emitCommOp(FunctionEmitter &e, mlir::Operation *op);

/// Emits one op of a function or stage body through its family's emitter
/// (Emitter.cpp); a diagnostic on the op when it has no lowering.
mlir::LogicalResult emitOp(FunctionEmitter &e, mlir::Operation *op);

/// Fails, naming \p func, unless dist-prepare-for-emission recorded its
/// memory plan (the printer emits what the plan decided).
mlir::LogicalResult requireMemoryPlan(mlir::Operation *func);

/// Writes the value \p v back to the persistent buffer `name` (a weight or
/// optimizer state; a result with `graph.update = name`) at the end of a
/// training step (Emitter.cpp).
void emitUpdateWriteBack(FunctionEmitter &e, llvm::StringRef name,
                         mlir::Value v);

/// The run-time fields of a model's `dg::Model` table (distrt/gen/Program.h)
/// besides its name, files and tensor specs.
struct ModelTableFields {
  /// Names of the generated step functions ("nullptr" for none).
  std::string run = "run", apply = "nullptr";
  int64_t accumulation = 1;
  bool collectives = false;
  /// Name of the per-input batch-shard flag array, or "nullptr".
  std::string shards = "nullptr";
  /// Name of the per-rank data-parallel replica array and the replica
  /// count, or "nullptr" and 0 (rank r keeps block r of the world).
  std::string replicaOf = "nullptr";
  int64_t replicas = 0;
  /// Pipeline programs: ranks the stages need and the rank with the outputs
  /// (0, 0 otherwise).
  unsigned world = 0, outputRank = 0;
  /// The `--profile` op table ("nullptr", 0 for none).
  std::string ops = "nullptr";
  size_t numOps = 0;
  /// A tensor-parallel job of one stage and one micro-batch: its tp, under
  /// which each rank's --profile-json files its ops (0 otherwise).
  unsigned profileTp = 0;
  /// A training step (it updates weights): the program refuses --serve.
  bool trains = false;
};

/// Whether \p fn is a training step: a result of it is a weight or state
/// update (`graph.update`).
bool updatesWeights(mlir::func::FuncOp fn);

/// Writes the `inputs[]` and `outputs[]` tensor specs of `inputs` /
/// `outputs` (named `inNames` / `outNames`) and the `model` table of
/// `model` with `fields` (Emitter.cpp); shared by single-device, data-parallel
/// and pipeline programs.
void emitModelTable(llvm::raw_ostream &out, const ModelUnit &model,
                    mlir::ValueRange inputs, llvm::ArrayRef<std::string> inNames,
                    mlir::ValueRange outputs,
                    llvm::ArrayRef<std::string> outNames,
                    const ModelTableFields &fields);

/// The optimizer results of training step \p fn (a function whose results
/// carry `graph.update`) that may be written over the persistent buffer
/// they replace, mapped to the weight or state value that reads it: the
/// update reads that buffer last (no later op, view or fused loop reads
/// the old value) and the result is returned once, as that buffer's
/// update. Call after computeFusion (\p fused).
llvm::DenseMap<mlir::Value, mlir::Value>
inPlaceUpdates(mlir::Operation *fn,
               const llvm::DenseSet<mlir::Operation *> &fused);

/// Writes the `--profile` op table `ops[]` of \p ops (nothing when empty;
/// Emitter.cpp).
void emitOpTable(llvm::raw_ostream &out,
                 llvm::ArrayRef<FunctionEmitter::ProfiledOp> ops);

/// Whether `func`'s module holds per-list programs (dist-partition's
/// `dist.action_list` functions; EmitPipeline.cpp).
bool isPipelined(mlir::Operation *func);
/// Emits a pipeline model: namespace `ns` with one function per stage and a
/// `run` that executes this rank's stages per micro-batch, receiving and
/// sending the values that cross stage boundaries (EmitPipeline.cpp).
mlir::LogicalResult emitPipelineModel(const ModelUnit &model,
                                      mlir::Operation *func, llvm::StringRef ns,
                                      const CodegenOptions &options,
                                      llvm::raw_ostream &os);

/// Collects the ops evaluated inside their user's loop: every op of an
/// emit.kernel loop but the one it yields (Fusion.cpp).
void computeFusion(mlir::Block &body, llvm::DenseSet<mlir::Operation *> &fused);

/// Emit.kernel bodies (EmitElementwise.cpp: loop and eltwise; EmitNN.cpp:
/// post_ops).
mlir::LogicalResult emitLoopKernel(FunctionEmitter &e, mlir::Operation *kernel);
mlir::LogicalResult emitEltwiseKernel(FunctionEmitter &e,
                                      mlir::Operation *kernel);
mlir::LogicalResult emitPostOpKernel(FunctionEmitter &e,
                                     mlir::Operation *kernel);

} // namespace distopt::codegen

#endif // DIST_LIB_CODEGEN_FUNCTIONEMITTER_H
