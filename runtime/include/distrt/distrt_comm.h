/*===- distrt_comm.h - DistOpt runtime communication C ABI ----------*- C -*-===//
 *
 * Collectives between the processes of one training job (docs/distributed.md,
 * docs/runtime-abi.md). Included by distrt.h; same conventions: every call
 * returns a distrt_status and never throws; on failure distrt_last_error on
 * the communicator's context (or, for a NULL communicator, on NULL) says
 * what went wrong, where and what to do.
 *
 * Backends, chosen by the context a communicator is created on:
 *  - CPU context: MPI (Open MPI). Sum and mean run a ring reduce-scatter
 *    and all-gather: each element is reduced in one place, so every rank
 *    holds bit-identical results, and each rank moves 2 (n-1)/n of the
 *    buffer (bandwidth-optimal, as NCCL).
 *  - CUDA context: NCCL on the context's stream; the ncclUniqueId is
 *    bootstrapped over MPI (a world of one needs no MPI).
 * The world comes from the launcher's environment (mpirun, srun, torchrun
 * variables). Without a launcher the world is this process alone: rank 0 of
 * 1, every collective a local copy, MPI never initialised.
 *
 *===----------------------------------------------------------------------===*/
#ifndef DISTRT_DISTRT_COMM_H
#define DISTRT_DISTRT_COMM_H

#ifndef DISTRT_DISTRT_H
#error "include distrt/distrt.h, which includes this header"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** Opaque: the world's rank and size, the MPI/NCCL handles, the context. */
typedef struct distrt_comm distrt_comm;

/** The place of this process in the job, read from the launcher's
 *  environment (Open MPI OMPI_COMM_WORLD_*, PMI_*, SLURM_PROCID/NTASKS/
 *  LOCALID, torchrun RANK/WORLD_SIZE/LOCAL_RANK, in that order). Without
 *  any of them: rank 0, size 1, local rank 0. Any pointer may be NULL.
 *  Fails on malformed values (rank outside [0, size), size < 1). */
distrt_status distrt_comm_env(int32_t *rank, int32_t *size,
                              int32_t *local_rank);

/** Joins the world of this process (distrt_comm_env): initialises MPI on
 *  first use when the world has more than one rank, and NCCL on a CUDA
 *  context. Every rank of the world must call it. */
distrt_status distrt_comm_create(distrt_context *ctx, distrt_comm **out);
/** A communicator of the `n` distinct ranks `ranks` of `comm`: rank k of the
 *  new communicator is `ranks[k]`, and collectives on it involve those ranks
 *  only (data-parallel replicas of one pipeline stage, a tensor-parallel
 *  group). Collective over the group's ranks only, which all pass the same
 *  list; ranks outside it do not call it, and ranks that share several
 *  groups create them in the same order. The caller must be in the group.
 *  On a CUDA context the group gets its own NCCL communicator. Release it
 *  with distrt_comm_destroy before `comm`. */
distrt_status distrt_comm_group(distrt_comm *comm, const int32_t *ranks,
                                int32_t n, distrt_comm **out);
/** How long a transfer or collective on `comm` (and on groups made from it
 *  afterwards) waits for its peers before it fails with
 *  DISTRT_ERROR_TIMEOUT, naming the peer (or group) it waited for:
 *  `seconds` > 0, or 0 to wait forever. The default is 60 s, or the
 *  DISTRT_TIMEOUT environment variable (seconds) when set. A rank that
 *  fails this way should end the job (distrt_comm_abort). MPI backend;
 *  NCCL transfers and collectives are not covered. */
distrt_status distrt_comm_set_timeout(distrt_comm *comm, double seconds);
/** Releases the communicator (MPI itself is finalised at process exit). */
distrt_status distrt_comm_destroy(distrt_comm *comm);
/** Ends every rank of the job with exit status `code` (MPI_Abort): a rank
 *  that fails calls it so that its peers, which may be waiting on a
 *  transfer from it, do not hang. Returns only without a multi-rank world
 *  (NULL, or a world of one). */
void distrt_comm_abort(distrt_comm *comm, int code);
distrt_status distrt_comm_rank(const distrt_comm *comm, int32_t *rank);
distrt_status distrt_comm_size(const distrt_comm *comm, int32_t *size);
/** Which backend carries the collectives: "local" (a world of one), "mpi"
 *  or "nccl"; "" for NULL. */
const char *distrt_comm_backend(const distrt_comm *comm);

/** output = op over every rank's input (SUM, MEAN, MAX, MIN). `output` may
 *  be NULL or describe the same memory as `input` (in place); otherwise it
 *  must have input's dtype and element count and not overlap it. Every rank
 *  must pass the same dtype, element count and op: the call checks this
 *  (DISTRT_ERROR_SHAPE_MISMATCH naming both ranks' values) before moving
 *  data. Mean is for floating dtypes. CPU: F32, I32, I64; CUDA: also F16,
 *  BF16. */
distrt_status distrt_all_reduce(distrt_comm *comm, const distrt_tensor *input,
                                 const distrt_tensor *output,
                                 distrt_reduce_op op);

/** Opaque: a started collective (distrt_all_reduce_start). */
typedef struct distrt_request distrt_request;

/** Starts distrt_all_reduce(comm, input, output, op) and returns before it
 *  completes; *request receives the handle distrt_wait completes. Same
 *  arguments, checks (the local ones fail here, at once; the cross-rank one
 *  at distrt_wait) and results (the same bits) as the blocking call. Until
 *  distrt_wait returns, the caller must not write `input` nor read or write
 *  `output`. Collectives on one communicator run in the order they were
 *  started or called: every rank must start and call them in the same
 *  order, and a blocking collective (or distrt_comm_group on it,
 *  distrt_barrier, distrt_comm_destroy) on a communicator with started ones
 *  pending runs after them; distrt_send/distrt_recv do not wait for them.
 *  Wait for every request, also after distrt_comm_destroy (which completes
 *  the pending ones): distrt_wait releases it.
 *  MPI: a worker thread of the communicator runs the started collectives
 *  while the caller computes (MPI initialised with MPI_THREAD_MULTIPLE;
 *  where the MPI library provides less, the call completes the all-reduce
 *  before it returns); with distrt_comm_set_overlap(comm, 0) each runs on
 *  the caller's thread when it is waited for (all pending ones, in start
 *  order, when a blocking collective needs them first), so every rank
 *  must also wait for them in the same order. NCCL: the cross-rank check
 *  (over MPI) runs in the call, then the all-reduce on the communicator's
 *  own stream after the work queued so far on the context's stream;
 *  distrt_wait makes the context's stream wait for it. A world of one: a
 *  copy, done at once. */
distrt_status distrt_all_reduce_start(distrt_comm *comm,
                                      const distrt_tensor *input,
                                      const distrt_tensor *output,
                                      distrt_reduce_op op,
                                      distrt_request **request);
/** How started all-reduces on `comm` (and groups made from it afterwards)
 *  progress on the MPI backend: `thread` = 1 (the default), on a worker
 *  thread while the caller computes, which pays where a core is free for
 *  it; 0, on the caller's thread when waited for, as the blocking call
 *  would run there: for a process whose compute threads hold every core it
 *  may use, where a worker would take time from them (a 2-core machine
 *  with 2 ranks of 1 thread: measured in docs/benchmarks.md). The
 *  DISTRT_COMM_THREAD environment variable (0 or 1) sets the default.
 *  Completes the collectives started before it. NCCL and a world of one
 *  ignore it. */
distrt_status distrt_comm_set_overlap(distrt_comm *comm, int thread);
/** Completes a started collective and releases `request`: returns its
 *  status, with the failure's message on the communicator's context as the
 *  blocking call would set it (a timeout names the peer, as there). NULL is
 *  DISTRT_ERROR_INVALID_ARGUMENT (message on the NULL context). */
distrt_status distrt_wait(distrt_request *request);
/** Reduce-scatter: `input` is `size` equal blocks of its (flattened)
 *  elements, `output` one block (numel(input) = size x numel(output), same
 *  dtype, not overlapping); rank r's output gets op over every rank's block
 *  r (SUM, MEAN, MAX, MIN; mean for floating dtypes). MPI: a ring, each
 *  block reduced in one place in a fixed order. NCCL: ncclReduceScatter. */
distrt_status distrt_reduce_scatter(distrt_comm *comm,
                                    const distrt_tensor *input,
                                    const distrt_tensor *output,
                                    distrt_reduce_op op);
/** All-gather: `output` (numel = size x numel(input), same dtype, not
 *  overlapping) gets every rank's `input`, in rank order. MPI: a ring.
 *  NCCL: ncclAllGather. */
distrt_status distrt_all_gather(distrt_comm *comm, const distrt_tensor *input,
                                const distrt_tensor *output);
/** All-to-all (mixture-of-experts dispatch): `input` is cut along
 *  `split_axis` into size equal pieces and piece j goes to rank j; `output`
 *  is the pieces received from ranks 0..size-1 concatenated along
 *  `concat_axis`. So output has input's dims with dims[split_axis] divided
 *  by size and then dims[concat_axis] multiplied by it (one dtype, dense,
 *  not overlapping; the axes may be equal). Pieces of a non-leading axis are
 *  packed into contiguous blocks and unpacked after the exchange. Every
 *  rank must pass the same dtype, element count and axes. MPI: a pairwise
 *  exchange of the blocks, bounded by the communicator's timeout (blocks
 *  below 2 GiB). NCCL: grouped ncclSend/ncclRecv on the context's stream.
 *  Any dtype. */
distrt_status distrt_all_to_all(distrt_comm *comm, const distrt_tensor *input,
                                const distrt_tensor *output, int32_t split_axis,
                                int32_t concat_axis);
/** Copies `root`'s tensor into every rank's `tensor` (same checks). Any
 *  dtype: MPI carries the bytes. */
distrt_status distrt_broadcast(distrt_comm *comm, const distrt_tensor *tensor,
                               int32_t root);
/** Returns on every rank once every rank has called it. */
distrt_status distrt_barrier(distrt_comm *comm);

/** Point-to-point (pipeline stages): sends `tensor` to rank `peer`, which
 *  must call distrt_recv with this rank as its peer and the same `tag`
 *  (0 <= tag < 2^15). Messages of one (sender, receiver, tag) arrive in the
 *  order they were sent. Any dtype. Fails on a peer outside [0, size) or
 *  equal to this rank. MPI (CPU): buffered and non-blocking — a copy of the
 *  header (dtype, element count) and the bytes goes out in the background,
 *  so the caller may reuse `tensor` at once and two ranks sending to each
 *  other do not wait on each other; distrt_comm_destroy waits for what is
 *  still in flight. NCCL (CUDA): the header over MPI, the bytes with
 *  ncclSend on the context's stream (blocking until the peer receives). */
distrt_status distrt_send(distrt_comm *comm, const distrt_tensor *tensor,
                          int32_t peer, int32_t tag);
/** Receives into `tensor` what rank `peer` sent with `tag`. When the sent
 *  dtype or element count differs from `tensor`'s, the message is drained
 *  into scratch memory (never written past `tensor`) and the call fails with
 *  DISTRT_ERROR_SHAPE_MISMATCH naming both sides. */
distrt_status distrt_recv(distrt_comm *comm, const distrt_tensor *tensor,
                          int32_t peer, int32_t tag);

/** Ring attention (context parallelism, docs/distributed.md): the
 *  communicator's rank c holds block c of a sequence cut into size
 *  blocks: the queries `q` [..., Sq, D] of its positions, and the keys `k`
 *  [..., Skv, D] and values `v` [..., Skv, Dv] of its Skv positions (the
 *  leading dims, heads and rows, the same in all three). With `balanced`
 *  0 block c is positions c Skv .. (c + 1) Skv - 1; with 1 (the
 *  load-balanced split, Sq and Skv even) the sequence is cut into 2 size
 *  chunks and block c is chunk c then chunk 2 size - 1 - c, so under a
 *  causal mask every rank computes the same number of scores. `out`
 *  [..., Sq, Dv] receives softmax(scale q K^T + mask) V over the keys and
 *  values of every block, and `lse` [..., Sq] (f32) the log-sum-exp of
 *  each query row's scores,
 *  which the backward reads. `mask` (NULL: none) is added to the scores:
 *  [..., Sq, size Skv], this rank's query rows against every position
 *  (in natural order, whatever `balanced`), its leading dims all 1 (one
 *  mask for every head) or q's. An entry at or
 *  below -1e30 (-inf, or the finfo.min exporters fill with) drops its key:
 *  its exp is 0 in f32 anyway whenever the row sees another key, and a row
 *  that sees none gets zeros. The call runs size steps: in each the rank
 *  computes its queries against the block it holds, merging into the
 *  running max and sum of every row (online softmax), while it passes that
 *  block on to rank c + 1 and receives rank c - 1's (size - 1 transfers of
 *  K and V in all). A block the mask drops wholly for this rank's rows
 *  (above a causal mask's diagonal) is not computed, nor is the score of
 *  an entry it drops; the block is still passed on. Every rank passes the
 *  same `balanced`, shapes and scale. F32. MPI (CPU):
 *  non-blocking transfers bounded by the communicator's timeout; NCCL
 *  (CUDA): grouped ncclSend/ncclRecv on a stream beside the context's,
 *  overlapping the kernels. A world of one computes the attention of its
 *  own block. */
distrt_status distrt_ring_attention(distrt_comm *comm, const distrt_tensor *q,
                                    const distrt_tensor *k,
                                    const distrt_tensor *v,
                                    const distrt_tensor *mask, float scale,
                                    int32_t balanced, const distrt_tensor *out,
                                    const distrt_tensor *lse);
/** The backward of distrt_ring_attention: from its inputs, its `out` and
 *  `lse` and the gradient `dout` of out, the gradients `dq`, `dk` and `dv`
 *  (q's, k's and v's shapes) of this rank's blocks (the mask gets none).
 *  The key and value blocks travel the ring again, and with each one the
 *  sums of its gradients over the ranks it has visited: after size steps
 *  every block's gradients are back on the rank that holds it (size - 1
 *  transfers of K and V, size of their gradients). Blocks the mask drops
 *  are skipped as in the forward. The sums run in one fixed order, so
 *  every run gives the same bits. */
distrt_status distrt_ring_attention_backward(
    distrt_comm *comm, const distrt_tensor *q, const distrt_tensor *k,
    const distrt_tensor *v, const distrt_tensor *mask, float scale,
    int32_t balanced, const distrt_tensor *out, const distrt_tensor *lse,
    const distrt_tensor *dout, const distrt_tensor *dq, const distrt_tensor *dk,
    const distrt_tensor *dv);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DISTRT_DISTRT_COMM_H */
