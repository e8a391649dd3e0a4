#!/usr/bin/env python3
"""Data-parallel training across processes vs one process on the whole batch.

`dist-compile --train=... --data-parallel` builds a training step whose
gradients and loss are averaged over the ranks mpirun starts
(--dist-data-parallel; the runtime's MPI all-reduce). Each case trains the
same model twice from the same weights on the same global batch:

  - one process, compiled for the whole batch (B rows), --steps N;
  - `mpirun -np 2` of the data-parallel program compiled for B/2 rows per
    rank, given the same B-row files (rank r keeps rows [r*B/2, (r+1)*B/2)).

The loss curves (printed by rank 0) and the end weights and optimizer state
(--save-state) must agree within 1e-5 relative (an element far below its
tensor's largest magnitude is compared against 1e-5 of that magnitude), and
the two ranks must end with bit-identical weights (every rank saves with
--save-state DIR/{rank}).

Cases: the MLP fixture (x[4,8], target[4,4]; 2 rows per rank) with SGD,
with Adam, with SGD accumulating 2 micro-batches per step, for 20 steps,
and with Adam in fp16 (within run_training.py's fp16 tolerance; from an
overflowing loss scale: steps skipped, ranks bit-identical, no comparison
with one process, whose whole-batch gradients overflow at other scales); the 2-layer
GPT-2 fixture (2 sequences of 32 tokens; 1 per rank) with Adam for 5 steps.

Pipeline-parallel forward cases (run_pipeline_case): the planner's pp=2
stages (dist-opt --dist-plan=pp=2,mbs=B --dist-batch=M*B
--dist-stage-regions) compiled into one program (per-list programs of the
forward stream of the plan's M micro-batches) and run by `mpirun -np 2` on
the whole batch: GPT-2 (2 micro-batches
of 1 sequence) and run_networks.py's small ResNet (4 micro-batches of 2
images). The logits must be bit-identical to one process compiled for one
micro-batch and run on each micro-batch's rows, and within 1e-6 relative of
one process compiled for the whole batch (a kernel may block a larger batch
differently, so that comparison is not bit for bit).

Pipeline-parallel training cases (run_pipeline_train_case): the forward
function planned with pp=2 (dist-compile --dist-plan=pp=2,mbs=B
--dist-batch=M*B --train=...: dist-autodiff on the planned function,
dist-partition's per-list programs of the plan's training schedule) under
`mpirun -np 2` on the whole batch vs one process compiled for the whole
batch: the MLP with SGD under GPipe, 1F1B and ZB-H1 and with Adam under 1F1B
(4 micro-batches of 2 rows, 10 steps), GPT-2 with Adam under 1F1B (4
micro-batches of 1 sequence, 3 steps; its deduplicated LayerNorm parameters
are tied across the stages) under 1F1B and interleaved (2 chunks per rank:
4 virtual stages), the MLP with full recomputation (Adam, ZB-H1: each
backward reruns its stage's forward), and data parallelism inside the stages: the
MLP with dp=2 x pp=2 on 4 ranks (SGD under 1F1B, Adam under GPipe; each
replica 2 micro-batches of 2 rows, gradients and loss averaged over the
stage's replicas), and tensor parallelism (dist-tensor-parallel): the MLP
with Adam at tp=2 and with SGD at tp=2 x pp=2 (1F1B, 4 ranks), GPT-2 with
SGD at tp=2 and tp=2 x pp=2 (the ranks' shards put together from their
shards.json; the stages scatter/gather their boundaries, and with sg=0
send them whole: `_sg0`), and the same with sequence parallelism (`_sp`: sp=1, also
with dp=2 and ZeRO-1 and under ZB-H1), the Llama fixture (separate Q, K
and V projections, RoPE, grouped-query heads: `llama_`) with SGD at tp=2,
tp=2 x pp=2, tp=2 with sp=1, tp=2 x cp=2 (also x pp=2) and with momentum at
dp=2 x tp=2 (also with zero=1), its attention projections saved split,
a LLaMA with DeepSeek's multi-head latent attention (`mla_llama_`: q_b,
kv_b and o projections split by heads, the rotary key's gradient summed
over the tensor ranks; under sp=1 the down-projections on the rank's
tokens, their latents gathered) with SGD at tp=2, tp=2 with sp=1, tp=2 x
pp=2 and tp=2 x cp=2 (both also with sp=1) and with momentum at dp=2 x
tp=2 (also with sp=1),
the small ResNet's channel-parallel convolutions (`resnet_bn_*tp2`: SGD
and Adam at tp=2 and dp=2 x tp=2, batch norm's running statistics per
replica under dp, so not compared there; SGD at tp=2 x pp=2 with sp=1,
its stage boundaries, whole on every tensor rank, scatter/gathered:
`resnet_bn_sgd_tp2_pp2_1f1b_sp`), and
edge-cloud split training
(`mlp_adam_edge_cloud_split`: the plan searched on the edge-cloud-wifi
preset with layer 0 pinned to the phone, --dist-search=pin=0-0@phone-soc;
its report must keep the pin). Loss curves and every weight and optimizer state (each
rank saves the stages it owns; the replicas of a stage must agree too)
within 1e-5 relative.

Mixed precision under partitioned plans (mixed_precision_cases): the
MLP with Adam in fp16 (loss scale 1024) under pp=2 1F1B, tp=2, dp=2 x
pp=2 (also with ZeRO-1, 2 and 3) and dp=2 x tp=2 with ZeRO-1, in bf16
under pp=2 GPipe and dp=2 x tp=2, GPT-2 with SGD in bf16 at
tp=2 and pp=2 (1F1B) and in fp16 interleaved (2 chunks per rank) and at
cp=2, the Llama MoE with SGD in fp16 at dp=2 x ep=2, against
one process's mixed-precision program within run_training.py's MIXED
tolerance of the format; and fp16 from an overflowing scale (2^20) at
pp=2, tp=2 and dp=2 with ZeRO-1 on skewed_mlp, whose stages and shards overflow at different
scales: every rank must skip the same steps (step counter and loss scale
bit-identical across ranks) and train after the back-off; GPT-2 in fp16
from 2^20 at tp=2 with one micro-batch of the whole batch must skip one
process's steps and then follow its values. The GPT-2 tp=2 cases run the
vocabulary-parallel cross-entropy on the cast 16-bit logits: their
programs all-gather nothing. GPT-2 with its loss in the model
(gpt2_loss_model) with SGD in bf16 and fp16 at tp=2 and tp=2 x pp=2
(1F1B): the vocabulary-parallel loss that dist-tensor-parallel built
stays f32, its loss curve within LOSS_16 of one process's. Under the
asynchronous schedules: the MLP with Adam in fp16 under PipeDream-2BW and
PipeDream at pp=2, tp=2 x pp=2 and dp=2 x pp=2 with ZeRO-1 and in bf16
at dp=2 x pp=2,
against async_reference (one process's mixed-precision program run one
(micro-)batch at a time: PipeDream's update of a micro-batch skips when
any stage's gradient of it overflowed), PipeMare on deep_mlp in fp16
against pipemare_reference's fp16 emulation (SGD at pp=2, also from
2^20 and with a static 2^16 that skips every step's first micro-batch,
and Adam at pp=3), and all three from 2^20 on skewed_mlp (every
rank the same update count and loss scale).

Asynchronous schedules (run_pipeline_train_case with reference=
async_reference): PipeDream (an update after every micro-batch, weight
stashing) and PipeDream-2BW (W(t+1) = W(t) - lr * grad(W(t-1))) on the MLP
with SGD and Adam at pp=2, with dp=2 x pp=2 (4 ranks) and 2BW with
per-stage replicas 2/1 (3 ranks), and GPT-2 with SGD at pp=2, against the
same delayed updates applied by the single-process program one
(micro-)batch at a time; with tensor parallelism inside the stages
(GPT-2 PipeDream at tp=2 x pp=2, the MLP's 2BW at dp=2 x tp=2 x pp=2 on 8
ranks, 2BW's last_update compared too) against the same reference, and
PipeMare at tp=2 x pp=2 and dp=2 x pp=2 (deep_mlp) against
pipemare_reference. With ZeRO inside the stages (dp=2 x pp=2, Adam):
PipeDream and PipeMare with zero=1 (PipeDream also at dp=2 x tp=2 x pp=2 on
8 ranks), 2BW with zero=1 and 2 and with replicas=2/1 and zero=1, against
the same references as without ZeRO (the moments put together from the
blocks). PipeDream (replicas=2/1 with Adam, 1/2 with SGD) and PipeMare
(deep_mlp, 2/1, Adam) with per-stage replicas, every stage updating once
per round of lcm(replicas) micro-batches, against the same references
stepping round by round (async_updates); PipeDream 2/1 also with zero=1
and in fp16 (from an overflowing scale too: every rank skips the same
rounds).

Tensor-parallel inference (run_tp_forward_case): the Llama fixture's
forward program at tp=2 and tp=2 x pp=2 under mpirun against one process's
logits (within 1e-5 relative), its attention projections loaded as shards;
the small ResNet's at tp=2 and tp=2 x pp=2, its convolutions loaded as
shards.

Branch-parallel inference (run_branches_case): a trunk with three heads
and a joined output (trunk_branches_model), and three heads reading the
input with a Gemm of their Concat after the join, placed by dist-opt
--dist-branches on arm-board-ethernet, partitioned into one program per
device and run by mpirun, one rank per device, against one process: every
output within 1e-6 relative.

ZeRO-1 cases (run_case with zero=True): the data-parallel program is a
plan of data parallelism alone with zero=1 (dist-compile
--dist-plan=dp=R,zero=1,mbs=B --dist-batch=R*B): each rank keeps the
optimizer state of its block of every flattened, zero-padded parameter. The
MLP with Adam and SGD (dp=2, the plain cases' batch and references), with
momentum accumulating 2 micro-batches, with AdamW over 3 ranks (uneven
blocks), and GPT-2 with Adam; the ranks' shards are reassembled
(`unshard`: block sizes and zero padding checked) and compared like every
other tensor.

Cases whose agreement within 1e-5 rests on their data check it
(docs/distributed.md, "Numerics notes"): the MoE SGD and momentum cases
(routing=True) require every routing choice of the single process's
trajectory to be ROUTING_MARGIN from a tie and its own spread under a
2^-24 perturbation of the initial weights (roundoff_floor) under
FLOOR_SHARE x rtol, failing with what to change otherwise (the checked
single process is shared by the cases with the same program and data);
the batch-norm ResNet cases (kinks=True) that miss pass only when each run
matches, within 1e-5, a float64 run (torch_reference.py) that takes the
branches at ReLU kinks and max-pool ties round-off may take
(kink_branches). --data-seed S draws those two families'
data from a generator seeded by S (the other cases keep theirs), to see
whether a family's agreement holds for other data.

Needs mpirun (Open MPI: `openmpi-bin`, installed by scripts/install-deps.sh);
without it every case fails saying so.

    .venv/bin/python test/numerics/run_distributed.py --build build --junit out.xml

Cases run in worker processes, as many at once as -j says (default: the
usable cores, at most 4); each case's output is printed whole, in order.
"""
import argparse
import contextlib
import fcntl
import glob
import hashlib
import io
import json
import math
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
import time
import traceback
import zlib

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from run_training import MIXED, MIXED_FLAGS  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MLP = os.path.join(ROOT, "test", "fixtures", "small", "mlp_external.onnx")
GPT2 = os.path.join(ROOT, "test", "fixtures", "gpt2.onnx")
LLAMA = os.path.join(ROOT, "test", "fixtures", "llama.onnx")
RTOL = 1e-5
# The loss curve of a plan whose loss computes in f32 under mixed precision,
# as one process's does: after step 1 only the 16-bit rounding of the
# weights' updates differs (1/512 of MIXED: 2.4e-4 in bf16, 3.1e-5 in fp16).
LOSS_16 = {low: tol / 512 for low, tol in MIXED.items()}
RANKS = 2


def mpirun_command(ranks=RANKS):
    path = shutil.which("mpirun")
    if not path:
        return None
    return [path, "--allow-run-as-root", "--oversubscribe", "-np", str(ranks)]


NO_MPIRUN = ["mpirun not found: install openmpi-bin (scripts/install-deps.sh "
             "installs it)"]


def mpi_case_folder(compiler, work, name):
    """dist-opt beside `compiler` and the case's folder (made), or
    (None, None) when mpirun is missing."""
    if not mpirun_command():
        return None, None
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    return os.path.join(os.path.dirname(compiler), "dist-opt"), d


def save_feeds(d, feeds):
    """Writes each (input name, array) of `feeds` to `d`; returns the
    programs' NAME=FILE arguments."""
    args = []
    for feed, arr in feeds:
        path = os.path.join(d, "in_" + feed + ".npy")
        np.save(path, np.ascontiguousarray(arr))
        args.append(f"{feed}={path}")
    return args


def curve_of(text):
    return np.array([float(m.group(1)) for m in
                     re.finditer(r"^step \d+ loss (\S+)", text, re.M)])


def compare_rel(name, got, want, rtol=RTOL, like=None):
    """common.compare with atol scaled to the reference tensor's magnitude
    (or to that of `like` where it is larger: a difference of two tensors
    like it is rounded to their precision)."""
    got, want = np.atleast_1d(got), np.atleast_1d(want)
    scale = float(np.max(np.abs(want))) if want.size else 0.0
    if like is not None and like.size:
        scale = max(scale, float(np.max(np.abs(like))))
    return common.compare(name, got, want, rtol, rtol * max(scale, 1e-30))


# GPT-2's attention key bias (the middle third of c_attn.bias) has a zero
# gradient in exact arithmetic: softmax is invariant to adding the same
# q.b_k to every score of a row. Its f32 gradient is round-off (~1e-9),
# different for a 2-row batch and two 1-row halves, and Adam, dividing by
# the gradient's own magnitude, turns that noise into steps of up to lr.
# Those elements (and their Adam moments) are left out of the comparison
# and counted; run_training.py's NO_SIGNAL rule excludes the same ones.
NO_SIGNAL = re.compile(r"attn\.c_attn\.bias(\.exp_avg(_sq)?)?\.npy$")


def signal_mask(base, want):
    if not NO_SIGNAL.search(base) or want.ndim != 1 or want.size % 3:
        return None
    h = want.size // 3
    keep = np.ones(want.size, dtype=bool)
    keep[h:2 * h] = False
    return keep


# Single-process programs by their dist-compile arguments: cases that train
# the same model the same way share one (the ZeRO cases reuse the plain
# data-parallel cases' references).
COMPILED = {}


def compile_once(compiler, args, exe):
    """Compiles `args` into `exe` unless an earlier case did; returns the
    program's path, or raises RuntimeError with dist-compile's error."""
    key = tuple(args)
    if key not in COMPILED:
        p = subprocess.run([compiler] + args + ["-o", exe], capture_output=True,
                           text=True)
        if p.returncode != 0:
            raise RuntimeError(p.stderr[-1500:])
        COMPILED[key] = exe
    return COMPILED[key]


def zero_flags(shapes_dp, ranks, stage):
    """dist-compile flags of a ZeRO plan (stage 1-3) of `ranks` replicas of
    the per-rank batch `shapes_dp`."""
    rows = int(shapes_dp[0].split(":")[1].split("x")[0])
    return [f"--dist-plan=dp={ranks},zero={stage},mbs={rows}",
            f"--dist-batch={rows * ranks}"]


def unshard(shards, want):
    """The tensor of `want`'s shape that ZeRO shards (each rank's block of
    the flattened tensor, zero-padded at the end) hold, or an error."""
    size = -(-want.size // len(shards))
    if any(s.ndim != 1 or s.size != size for s in shards):
        return None, (f"shards {[s.shape for s in shards]} are not "
                      f"{len(shards)} blocks of {size} elements of {want.shape}")
    flat = np.concatenate(shards)
    if np.any(flat[want.size:] != 0):
        return None, f"padding of {want.shape}'s shards is not zero"
    return flat[:want.size].reshape(want.shape), None


def unshard_tensor_parts(saved, want, base, tp, state_dir):
    """ZeRO under tensor parallelism: `saved` (in rank order, the tensor
    coordinate fastest) holds, per tensor rank t, the ZeRO blocks of t's part
    of the state; the part's layout is its weight's entry in the ranks'
    shards.json (the state file `<weight>.<buffer>.npy`), and a weight not
    there is whole on every tensor rank (their copies must be equal).
    Returns the whole tensor or an error."""
    with open(os.path.join(state_dir, "shards.json")) as f:
        specs = json.load(f)
    weight = max((w for w in specs if base.startswith(w + ".")), key=len,
                 default=None)
    if weight is None:
        # A weight every tensor rank holds whole: each shards all of it.
        fulls = []
        for t in range(tp):
            full, msg = unshard(saved[t::tp], want)
            if msg:
                return None, f"tensor rank {t}: {msg}"
            fulls.append(full)
        if any(not np.array_equal(f, fulls[0]) for f in fulls[1:]):
            return None, "the tensor ranks' copies differ"
        return fulls[0], None
    spec = specs[weight]
    shape, dim = spec["shape"], spec["dim"]
    blocks, n = spec["blocks"], spec["parts"]
    if n != tp or list(shape) != list(want.shape):
        return None, f"weight {weight}'s layout {spec} does not fit {want.shape}"
    piece = shape[dim] // (blocks * n)
    part_shape = list(shape)
    part_shape[dim] = blocks * piece
    outer = int(np.prod(shape[:dim], dtype=np.int64))
    inner = int(np.prod(shape[dim + 1:], dtype=np.int64))
    out = np.empty((outer, blocks, n, piece, inner), want.dtype)
    for t in range(tp):
        part, msg = unshard(saved[t::tp], np.empty(part_shape, want.dtype))
        if msg:
            return None, f"tensor rank {t}: {msg}"
        out[:, :, t] = part.reshape(outer, blocks, piece, inner)
    return out.reshape(shape), None


def run_case(compiler, work, name, model, train, shapes_one, shapes_dp, feeds,
             steps, rtol=RTOL, overflow=False, zero=False, ranks=RANKS):
    """Returns a list of failure messages (empty: passed). With `zero` (a
    ZeRO stage, True meaning 1), the data-parallel program is a ZeRO plan of
    `ranks` replicas: each rank saves its shard of the optimizer state (and
    under ZeRO-3 of the weights), compared reassembled."""
    mpirun = mpirun_command(ranks)
    if not mpirun:
        return ["mpirun not found: install openmpi-bin (scripts/install-deps.sh "
                "installs it)"]
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    one, dp = os.path.join(d, "one.bin"), os.path.join(d, "dp.bin")
    dp_flags = (zero_flags(shapes_dp, ranks, int(zero)) if zero
                else ["--data-parallel"])
    for exe, shapes, flags in ((one, shapes_one, []), (dp, shapes_dp, dp_flags)):
        args = [model, "--train=" + train] + flags
        args += ["--input-shape=" + s for s in shapes]
        try:
            path = compile_once(compiler, args, exe)
        except RuntimeError as e:
            return [f"dist-compile {' '.join(flags)} failed: {e}"]
        if exe == one:
            one = path
    # The same files feed both runs.
    args = save_feeds(d, feeds)
    s_one = os.path.join(d, "state_one")
    os.makedirs(s_one, exist_ok=True)
    for r in range(ranks):
        os.makedirs(os.path.join(d, f"state_dp{r}"), exist_ok=True)
    env = dict(os.environ, OMP_NUM_THREADS="1", OMP_WAIT_POLICY="PASSIVE")
    p1 = subprocess.run([one, "--steps", str(steps), "--save-state", s_one,
                         "-o", d] + args, capture_output=True, text=True,
                        timeout=600, env=env)
    if p1.returncode != 0:
        return ["single-process run failed: " + (p1.stdout + p1.stderr)[-1500:]]
    p2 = subprocess.run(mpirun + [dp, "--steps", str(steps), "--save-state",
                                  os.path.join(d, "state_dp{rank}"), "-o", d] + args,
                        capture_output=True, text=True, timeout=600, env=env)
    if p2.returncode != 0:
        return ["mpirun -np %d failed: %s" % (ranks, (p2.stdout + p2.stderr)[-1500:])]
    errors = []
    c1, c2 = curve_of(p1.stdout), curve_of(p2.stdout)
    if len(c1) != steps or len(c2) != steps:
        return [f"expected {steps} loss lines from each run (rank 0 only under "
                f"mpirun), got {len(c1)} and {len(c2)}:\n{p2.stdout[-800:]}"]
    if overflow:
        # Each rank's fp16 gradient is a mean over its own rows, so it
        # overflows at other scales than the whole batch's: no value
        # comparison with one process, only that steps were skipped and the
        # ranks (or-ed overflow flags) stayed identical.
        counter = np.load(os.path.join(d, "state_dp0", "step.npy"))
        if not float(counter) < steps:
            errors.append(f"no step was skipped (step counter {float(counter)}); "
                          "the loss scale did not overflow")
    else:
        msg = common.compare("loss curve", c2, c1, rtol, 0.0)
        if msg:
            errors.append(msg)
    files = sorted(glob.glob(os.path.join(s_one, "*.npy")))
    excluded = 0
    if not files:
        errors.append("the single-process run saved no state")
    sharded = 0
    for f in files:
        base = os.path.basename(f)
        want = np.load(f)
        saved = [np.load(os.path.join(d, f"state_dp{r}", base)) for r in range(ranks)]
        got = saved[0]
        if zero and got.shape != want.shape:
            # ZeRO: each rank holds one block of this optimizer state.
            got, msg = unshard(saved, want)
            if msg:
                errors.append(f"{base}: {msg}")
                continue
            sharded += 1
        else:
            for r in range(1, ranks):
                if saved[r].tobytes() != saved[0].tobytes():
                    errors.append(f"{base}: rank {r} ends with different bits "
                                  "than rank 0 (replicas drifted)")
        keep = signal_mask(base, want)
        if overflow:
            msg = None
        elif keep is not None:
            excluded += int((~keep).sum())
            msg = compare_rel(base, got[keep], want[keep], rtol)
        else:
            msg = compare_rel(base, got, want, rtol)
        if msg:
            errors.append(msg)
    if zero and not sharded and not errors and "optimizer=sgd" not in train:
        errors.append("no rank saved a shard of the optimizer state")
    if int(zero) >= 3:
        # ZeRO-3: the trained weights (those with optimizer state) too are
        # each rank's block only.
        names = {os.path.basename(f)[:-4] for f in files}
        trained = sorted(n for n in names
                         if any(m.startswith(n + ".") for m in names))
        whole = [n for n in trained if np.load(os.path.join(
            d, "state_dp0", n + ".npy")).shape == np.load(
                os.path.join(s_one, n + ".npy")).shape]
        if not trained or whole:
            errors.append(f"zero=3 but rank 0 saved whole weights: {whole} "
                          f"(of {len(trained)} trained)")
    if sharded:
        print(f"  {name}: {sharded} state tensors reassembled from "
              f"{ranks} ranks' shards")
    if excluded:
        print(f"  {name}: {excluded} no-signal key-bias elements left out "
              "of the end-state comparison (bits still identical across ranks)")
    return errors


def run_pipeline_case(compiler, work, name, model, input_name, batch, feeds,
                      microbatches, weights_dir, dp=1):
    """Pipeline-parallel forward: the planner's pp=2 stages of M
    micro-batches of `batch` rows (dist-opt --dist-plan=pp=2,mbs=batch
    --dist-batch=M*batch --dist-stage-regions) under `mpirun -np 2` on the
    M x batch rows; with `dp` replicas of the pipeline (dp=D,pp=2 on
    2 D ranks) each streams its M micro-batches of the D x M x batch rows
    and the last stage gathers them. Compared with one process
    compiled for `batch` rows run on each micro-batch's rows (bit for bit:
    the same kernels on the same rows) and vs one process compiled for the
    whole M x batch rows (within 1e-6 relative: a kernel may block a larger
    batch differently). Returns a list of failure messages."""
    opt, d = mpi_case_folder(compiler, work, name)
    if not d:
        return NO_MPIRUN
    rows = feeds[0][1].shape[1:]
    shape_of = lambda b: input_name + ":" + "x".join(str(v) for v in (b,) + rows)
    staged = os.path.join(d, "staged.mlir")
    p = subprocess.run([opt, model, "--input-shape=" + shape_of(batch),
                        f"--dist-cluster=cpu-xeon-2s:{dp}",
                        f"--dist-plan=dp={dp},pp=2,mbs={batch}",
                        f"--dist-batch={dp * batch * microbatches}",
                        "--dist-stage-regions", "-o", staged],
                       capture_output=True, text=True)
    if p.returncode != 0:
        return ["dist-opt --dist-plan=pp=2,mbs=B --dist-stage-regions failed: " +
                p.stderr[-1500:]]
    text = open(staged).read()
    if text.count("dist.stage ") != 2:
        return [f"expected 2 dist.stage regions, got {text.count('dist.stage ')}"]
    pp, one, whole = (os.path.join(d, n) for n in ("pp.bin", "one.bin", "whole.bin"))
    for cmd in ([compiler, staged, "-o", pp],
                [compiler, model, "--input-shape=" + shape_of(batch), "-o", one],
                [compiler, model,
                 "--input-shape=" + shape_of(dp * batch * microbatches),
                 "-o", whole]):
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            return [f"{' '.join(cmd[1:2])} failed to compile: {p.stderr[-1500:]}"]
    env = dict(os.environ, OMP_NUM_THREADS="1", OMP_WAIT_POLICY="PASSIVE")
    full = feeds[0][1]
    path = os.path.join(d, "in.npy")
    np.save(path, np.ascontiguousarray(full))
    outs = {k: os.path.join(d, k) for k in ("pp", "one", "whole")}
    for o in outs.values():
        os.makedirs(o, exist_ok=True)
    p = subprocess.run(mpirun_command(2 * dp) +
                       [pp, f"{input_name}={path}", "--weights-dir",
                        weights_dir, "-o", outs["pp"]],
                       capture_output=True, text=True, timeout=600, env=env)
    if p.returncode != 0:
        return ["mpirun -np %d (pipeline) failed: %s" %
                (2 * dp, (p.stdout + p.stderr)[-1500:])]
    p = subprocess.run([whole, f"{input_name}={path}", "-o", outs["whole"]],
                       capture_output=True, text=True, timeout=600, env=env)
    if p.returncode != 0:
        return ["single-process run failed: " + (p.stdout + p.stderr)[-1500:]]
    names = sorted(os.listdir(outs["whole"]))
    if not names or sorted(os.listdir(outs["pp"])) != names:
        return [f"outputs differ: pipeline wrote {sorted(os.listdir(outs['pp']))}, "
                f"one process {names}"]
    per_mb = {n: [] for n in names}
    for m in range(dp * microbatches):
        mp = os.path.join(d, f"in{m}.npy")
        np.save(mp, np.ascontiguousarray(full[m * batch:(m + 1) * batch]))
        om = os.path.join(d, f"one{m}")
        os.makedirs(om, exist_ok=True)
        p = subprocess.run([one, f"{input_name}={mp}", "-o", om],
                           capture_output=True, text=True, timeout=600, env=env)
        if p.returncode != 0:
            return ["single-process micro-batch run failed: " +
                    (p.stdout + p.stderr)[-1500:]]
        for n in names:
            per_mb[n].append(np.load(os.path.join(om, n)))
    errors = []
    for n in names:
        got = np.load(os.path.join(outs["pp"], n))
        same = np.concatenate(per_mb[n])
        if got.shape != same.shape or got.tobytes() != same.tobytes():
            diff = (float(np.max(np.abs(got.astype(np.float64) - same)))
                    if got.shape == same.shape else float("nan"))
            errors.append(f"{n}: pipeline output {got.shape} is not bit-identical "
                          f"to the per-micro-batch single-process outputs "
                          f"{same.shape} (max abs difference {diff:.3g})")
        want = np.load(os.path.join(outs["whole"], n))
        msg = compare_rel(n + " vs the whole batch in one process", got, want, 1e-6)
        if msg:
            errors.append(msg)
        else:
            print(f"  {name}: {n} {list(got.shape)}: bit-identical to one process "
                  f"per micro-batch; vs one process on all {dp * batch * microbatches} "
                  f"rows max abs difference "
                  f"{float(np.max(np.abs(got.astype(np.float64) - want))):.3g}")
    return errors


def join_parts(got, shape, dim, blocks, n):
    """The tensor of `shape` from its tensor-parallel parts got[0..n-1]
    (dimension `dim` viewed as [blocks][parts][piece])."""
    outer = int(np.prod(shape[:dim], dtype=np.int64))
    inner = int(np.prod(shape[dim + 1:], dtype=np.int64))
    piece = shape[dim] // (blocks * n)
    first = next(iter(got.values()))
    out = np.empty((outer, blocks, n, piece, inner), first.dtype)
    for i, a in got.items():
        out[:, :, i] = a.reshape(outer, blocks, piece, inner)
    return out.reshape(shape)


def assemble_shards(state_dirs, zero_blocks=None):
    """Full tensors from the shards the ranks saved: each rank's
    shards.json says, per tensor file, its full shape and which part it
    holds (dimension `dim` viewed as [blocks][parts][n], part `index`; dim
    -1: ZeRO's block `index` of the flattened tensor; with "part":
    [dim, blocks, parts, index] the block or part is of that
    tensor-parallel part of the tensor, and a block's part with "outer"
    likewise of that outer part: an expert rank's tensor part of its
    experts).
    With data parallelism every replica saves its own set of parts.
    Returns {file name: [array per replica]}; a set with a part missing is
    an error. The names put together from ZeRO blocks are added to the set
    `zero_blocks` when given."""
    parts = {}
    for sd in state_dirs:
        path = os.path.join(sd, "shards.json")
        if not os.path.exists(path):
            continue
        with open(path) as f:
            for name, spec in json.load(f).items():
                base = name + ".npy"
                key = (spec.get("outer", [0, 1, 1, 0])[3],
                       spec.get("part", [0, 1, 1, 0])[3], spec["index"])
                sets = parts.setdefault(base, (spec, []))[1]
                got = next((g for g in sets if key not in g), None)
                if got is None:
                    got = {}
                    sets.append(got)
                got[key] = np.load(os.path.join(sd, base))
    full = {}
    for base, (spec, sets) in parts.items():
        shape, dim = spec["shape"], spec["dim"]
        blocks, n = spec["blocks"], spec["parts"]
        pdim, pblocks, pparts, _ = spec.get("part", [0, 1, 1, 0])
        odim, oblocks, oparts, _ = spec.get("outer", [0, 1, 1, 0])
        for got in sets:
            want = sorted((o, p, i) for o in range(oparts)
                          for p in range(pparts) for i in range(n))
            if sorted(got) != want:
                raise ValueError(f"{base}: parts {sorted(got)} of {want} saved")
            if dim != -1:
                # A tensor-parallel part of tensor-parallel part p (an
                # expert rank's features of its experts): the parts p
                # first, joined along their own dimension.
                part_shape = list(shape)
                part_shape[pdim] //= pparts
                pieces = {p: join_parts({i: got[(0, p, i)] for i in range(n)},
                                        part_shape, dim, blocks, n)
                          for p in range(pparts)}
                full.setdefault(base, []).append(
                    pieces[0] if pparts == 1
                    else join_parts(pieces, shape, pdim, pblocks, pparts))
                continue
            # ZeRO: block i of the flattened, zero-padded tensor (or
            # tensor-parallel part p of it, or part p of outer part o).
            outer_shape = list(shape)
            outer_shape[odim] //= oparts
            part_shape = list(outer_shape)
            part_shape[pdim] //= pparts
            outers = {}
            for o in range(oparts):
                pieces = {}
                for p in range(pparts):
                    blocks_of = [got[(o, p, i)] for i in range(n)]
                    tensor, msg = unshard(
                        blocks_of, np.empty(part_shape, blocks_of[0].dtype))
                    if msg:
                        raise ValueError(f"{base}: {msg}")
                    pieces[p] = tensor
                outers[o] = (pieces[0] if pparts == 1 else
                             join_parts(pieces, outer_shape, pdim, pblocks,
                                        pparts))
            full.setdefault(base, []).append(
                outers[0] if oparts == 1
                else join_parts(outers, shape, odim, oblocks, oparts))
            if zero_blocks is not None:
                zero_blocks.add(base)
    return full


def state_file_name(name):
    """The name a program saves a tensor under (every character outside
    [A-Za-z0-9_.-] becomes '_', as the runtime's sanitizeName)."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


def planned_weights(planned, folder):
    """The weights of a planned module (dist-opt output) as the program
    starts from them, by saved-file name: each `graph.weight` reads `size`
    bytes of float32 at `offset` of `file` (in `folder`). Weights the
    importer split out of one deduplicated initializer are there by their
    own names."""
    pattern = re.compile(r'graph\.weight "([^"]+)" \{file = "([^"]+)"(?:, [a-z.]+ = "[^"]*")*'
                         r', offset = (\d+) : i64, size = (\d+) : i64\} : '
                         r"tensor<([0-9x]*)x?f32>")
    out = {}
    with open(planned) as f:
        text = f.read()
    for name, file, offset, size, dims in pattern.findall(text):
        shape = [int(x) for x in dims.split("x") if x]
        with open(os.path.join(folder, file), "rb") as w:
            w.seek(int(offset))
            data = np.frombuffer(w.read(int(size)), dtype="<f4")
        out[state_file_name(name)] = data.reshape(shape).copy()
    if not out:
        raise RuntimeError(f"no float32 graph.weight with a file in {planned}")
    return out


def rank_stages(plan, pp):
    """The pipeline stage of each rank of `plan`: ranks (s * dp + d) * tp + t,
    or with per-stage replicas (replicas=R0/R1/..) slot by slot."""
    dp = int((re.search(r"dp=(\d+)", plan) or [0, 1])[1])
    tp = int((re.search(r"tp=(\d+)", plan) or [0, 1])[1])
    replicas = re.search(r"replicas=([\d/]+)", plan)
    counts = ([int(r) for r in replicas.group(1).split("/")] if replicas
              else [dp] * pp)
    return [s for s, r in enumerate(counts) for _ in range(r * tp)]


def async_updates(plan, pp, m):
    """PipeDream's and PipeMare's updates in a drained step of `m`
    micro-batches: (round, before), where every stage updates once per
    round of `round` micro-batches (1, or with per-stage replicas the lcm of
    the replica counts) and before[s][k] is the number of its updates
    stage s made before micro-batch k's forward. 1F1B: max(0, k - warm_s),
    warm_s = min(pp - s - 1, m). With replicas, the order of the lists is
    the generator's (lib/Schedule/Generators.cpp, replicatedOrder): with
    a_s slots before stage s of T in all, F(s, k) has key 2k + a_s and
    B(s, k) 2k + 2T - a_s - 1, and a replica updates after its last
    backward of each round."""
    replicas = re.search(r"replicas=([\d/]+)", plan)
    if not replicas:
        return 1, [[max(0, k - min(pp - s - 1, m)) for k in range(m)]
                   for s in range(pp)]
    counts = [int(r) for r in replicas.group(1).split("/")]
    rnd = math.lcm(*counts)
    total = sum(counts)
    before = []
    for s, r in enumerate(counts):
        a = sum(counts[:s])
        b = 2 * total - a - 1
        before.append([sum(1 for i in range(m // rnd)
                           if 2 * (i * rnd + rnd - r + k % r) + b < 2 * k + a)
                       for k in range(m)])
    return rnd, before


def async_reference(compiler, d, model, train, input_shape, batch, feeds,
                    steps, plan, pp_states, env):
    """The delayed updates of an asynchronous schedule, applied by one
    process: the product's single-process program, compiled for one
    micro-batch (PipeDream) or the whole batch (2BW), run one step at a time
    from a state whose weights are the versions the schedule computes with;
    the update it makes (new weight - loaded weight, which for SGD,
    momentum and Adam does not depend on the weight) is added to the newest
    weights, and its optimizer state is kept.

    PipeDream (1F1B order, an update after every micro-batch, drained at
    the end of each step): stage s's forward of micro-batch k computes with
    the version after max(0, k - warm_s) of the step's updates, warm_s =
    min(pp - s - 1, M). 2BW: step t computes with W(t-1) (W(0) at t = 0).
    PipeDream with per-stage replicas updates every stage once per round
    of lcm(replicas) micro-batches on the round's mean gradient, all of the
    round's micro-batches computing with one version per stage: one
    reference step on the round's rows, from the versions async_updates
    gives (as with dp replicas, one step on micro-batch k of every
    replica's rows). Returns (loss curve, state folder) or raises
    RuntimeError."""
    kind = re.search(r"schedule=([\w-]+)", plan).group(1)
    pp = int(re.search(r"pp=(\d+)", plan).group(1))
    dp = int((re.search(r"dp=(\d+)", plan) or [0, 1])[1])
    # Tensor parallelism changes nothing the step computes: the tp ranks of
    # a stage replica (ranks (stage * dp + replica) * tp + t) save its parts.
    tp = int((re.search(r"tp=(\d+)", plan) or [0, 1])[1])
    name0, dims = input_shape.split(":")
    rows = int(dims.split("x")[0])
    shard = batch // dp  # each replica's rows, in order
    m = shard // rows
    pipedream = kind == "pipedream"
    rnd, before = async_updates(plan, pp, m)
    # PipeDream's update of micro-batch k averages it over the replicas:
    # micro-batch k of every replica's rows (with per-stage replicas: the
    # rows of round k).
    shape = name0 + ":" + "x".join(
        [str(rows * rnd * dp if pipedream else batch)] + dims.split("x")[1:])
    exe = os.path.join(d, "ref.bin")
    p = subprocess.run([compiler, model, "--input-shape=" + shape,
                        "--train=" + train, "-o", exe],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("dist-compile (reference) failed: " + p.stderr[-1500:])
    state = planned_weights(os.path.join(d, "planned.mlir"),
                            os.path.dirname(model))
    weights = set(state)
    stage_of = {}
    for r, stage in enumerate(rank_stages(plan, pp)):
        for f in glob.glob(os.path.join(pp_states[r], "*.npy")):
            base = os.path.basename(f)[:-4]
            if base in weights:
                stage_of[base] = stage
    cur = os.path.join(d, "ref_state")
    runs = [0]

    def run_one(loaded, part):
        """One step of the reference program from `loaded` on the rows
        `part`; returns (loss, saved state)."""
        runs[0] += 1
        src = os.path.join(d, f"ref_in{runs[0]}")
        dst = os.path.join(d, f"ref_out{runs[0]}")
        os.makedirs(src)
        for k, v in loaded.items():
            np.save(os.path.join(src, k + ".npy"), v)
        args = []
        for feed, arr in feeds:
            path = os.path.join(src, "in_" + feed + ".npy")
            np.save(path, np.ascontiguousarray(arr[part]))
            args.append(f"{feed}={path}")
        # The first step starts from the model's own weights (and a fresh
        # optimizer state), which `loaded` then holds.
        start = (["--weights-dir", os.path.dirname(model)] if runs[0] == 1
                 else ["--load-state", src])
        q = subprocess.run([exe, "--steps", "1", "--save-state", dst,
                            "-o", src] + start + args,
                           capture_output=True, text=True, env=env, timeout=120)
        if q.returncode != 0:
            raise RuntimeError("reference step failed: " + (q.stdout + q.stderr)[-1500:])
        out = {os.path.basename(f)[:-4]: np.load(f)
               for f in glob.glob(os.path.join(dst, "*.npy"))}
        shutil.rmtree(src)
        shutil.rmtree(dst)
        return curve_of(q.stdout)[0], out

    def apply(out, loaded):
        """The newest state after the update `out` made from `loaded`."""
        new = dict(out)
        for w in weights & state.keys() & out.keys():
            new[w] = state[w] + (out[w] - loaded[w])
        return new

    curve = []
    previous = {w: state[w] for w in weights & state.keys()}
    for _ in range(steps):
        if pipedream:
            history, losses = [dict(state)], []
            for k in range(m // rnd):
                loaded = dict(state)
                for w, s in stage_of.items():
                    loaded[w] = history[before[s][k * rnd]][w]
                step_rows = rows * rnd
                part = np.concatenate([
                    np.arange(r * shard + k * step_rows,
                              r * shard + (k + 1) * step_rows)
                    for r in range(dp)])
                loss, out = run_one(loaded, part)
                state = apply(out, loaded)
                history.append(dict(state))
                losses.append(loss)
            curve.append(float(np.mean(np.array(losses, dtype=np.float32),
                                       dtype=np.float32)))
        else:
            loaded = dict(state)
            loaded.update(previous)
            loss, out = run_one(loaded, slice(0, batch))
            previous = {w: state[w] for w in previous}
            state = apply(out, loaded)
            curve.append(loss)
    os.makedirs(cur, exist_ok=True)
    for k, v in state.items():
        np.save(os.path.join(cur, k + ".npy"), v)
    if not pipedream:
        # 2BW's second buffer: W(t) - W(t-1), each stage's own (with
        # tensor parallelism each tp rank's part of it).
        for w, v in previous.items():
            np.save(os.path.join(cur, w + ".last_update.npy"), state[w] - v)
    return np.array(curve), cur


DEEP_MLP_SIZES = (8, 16, 16, 16, 4)


def deep_mlp(work):
    """A chain of four Gemm layers (8 -> 16 -> 16 -> 16 -> 4, ReLU between;
    weights inline, saved beside it as deep_mlp.npz) whose first pipeline
    stage holds more than one layer: the backward of its second layer
    multiplies by that layer's weights, which PipeMare's discrepancy
    correction changes."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    path = os.path.join(work, "deep_mlp.onnx")
    if os.path.exists(path):
        return path
    rng = np.random.default_rng(11)
    sizes = DEEP_MLP_SIZES
    inits, nodes, weights, x = [], [], {}, "x"
    for i in range(len(sizes) - 1):
        w = (rng.standard_normal((sizes[i + 1], sizes[i])) /
             np.sqrt(sizes[i])).astype(np.float32)
        b = (0.1 * rng.standard_normal(sizes[i + 1])).astype(np.float32)
        weights[f"w{i}"], weights[f"b{i}"] = w, b
        inits += [numpy_helper.from_array(w, f"w{i}"),
                  numpy_helper.from_array(b, f"b{i}")]
        out = "y" if i == len(sizes) - 2 else f"h{i}"
        pre = out if out == "y" else f"a{i}"
        nodes.append(helper.make_node("Gemm", [x, f"w{i}", f"b{i}"], [pre],
                                      transB=1))
        if out != "y":
            nodes.append(helper.make_node("Relu", [pre], [out]))
        x = out
    graph = helper.make_graph(
        nodes, "deep_mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", sizes[0]])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", sizes[-1]])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, path)
    np.savez(os.path.join(work, "deep_mlp.npz"), **weights)
    return path


def pipemare_reference(compiler, d, model, train, input_shape, batch, feeds,
                       steps, plan, pp_states, env):
    """PipeMare's updates on deep_mlp, applied by one process in float64
    (numpy, not the product's program: its backward computes with other
    weights than its forward, which no single-process program does).

    Per step, stage s runs 1F1B with warm_s = min(pp - s - 1, M) warm-up
    forwards and updates after every micro-batch's backward: micro-batch
    k's forward computes with the weights after max(0, k - warm_s) of the
    step's updates, its backward with the weights after k updates less
    d * velocity, d = min(k, warm_s) (the updates since its forward), and
    velocity <- g * velocity + (1 - g) * update, g = D^(1/warm_s). The
    update (SGD or Adam on micro-batch k's own gradient) is scaled by
    (warm_s + 1)^-p, p = max(0, 1 - (n - 1) / K), for the stage's n-th
    update. With dp replicas (each on its block of the batch) micro-batch
    k's gradient is the mean over the replicas' k-th micro-batches: the
    gradient of micro-batch k of every block, together. With per-stage
    replicas every stage updates once per round of lcm(replicas)
    micro-batches with the mean of their gradients, micro-batch k's forward
    after before[s][k] of them (async_updates), its backward after those of
    the rounds before k's, and warm_s is the most updates between the
    two.

    In fp16 (mixed-precision=fp16 loss-scale=S) every value the program
    computes in fp16 is rounded to it (the input, the weights' copies, each
    layer's matmul, bias add and activation gradient), the loss and the
    master weights stay float64, the backward is seeded with the dynamic
    loss scale and the gradients unscaled by it. Micro-batch k's update is
    one process's step on k: skipped, with every stage's, when any
    gradient of k overflowed (the scale halved; doubled after 2000 good
    updates), leaving weights, moments, velocities and the update count
    as they were; the correction's d counts the updates taken. Returns
    (loss curve, state folder)."""
    kv = dict(item.split("=") for item in plan.split(","))
    pp = int(kv["pp"])
    warmup = int(kv.get("pipemare_warmup", 0))
    decay = float(kv.get("pipemare_decay", 0.1))
    opt = dict(item.split("=") for item in train.split()[1:])
    lr, kind = float(opt["lr"]), opt["optimizer"]
    mixed = opt.get("mixed-precision", "none")
    if mixed not in ("none", "fp16"):
        raise RuntimeError(f"pipemare_reference emulates f32 and fp16, not "
                           f"{mixed}")
    low = np.float16 if mixed == "fp16" else None
    scale = float(opt.get("loss-scale", 65536.0)) if low else 1.0
    dynamic = low is not None and opt.get("dynamic-loss-scale") != "false"
    good = 0  # updates since the scale last moved

    def q(a):
        """`a` rounded to the program's low type (fp16), as float64."""
        if low is None:
            return a
        return np.asarray(a).astype(low).astype(np.float64)
    rows = int(input_shape.split(":")[1].split("x")[0])
    dp = int(kv.get("dp", 1))
    shard = batch // dp  # each replica's rows, in order
    m = shard // rows
    init = dict(np.load(os.path.join(os.path.dirname(model), "deep_mlp.npz")))
    w = {k: v.astype(np.float64) for k, v in init.items()}
    stage_of = {}
    for r, stage in enumerate(rank_stages(plan, pp)):
        for f in glob.glob(os.path.join(pp_states[r], "*.npy")):
            base = os.path.basename(f)[:-4]
            if base in w:
                stage_of[base] = stage
    if set(stage_of) != set(w):
        raise RuntimeError(f"no rank saved {sorted(set(w) - set(stage_of))}")
    layers = len(DEEP_MLP_SIZES) - 1
    rnd, before = async_updates(plan, pp, m)
    warm = ({s: min(pp - s - 1, m) for s in range(pp)} if rnd == 1 else
            {s: max(k // rnd - before[s][k] for k in range(m))
             for s in range(pp)})
    vel = {k: np.zeros_like(v) for k, v in w.items()}
    mom = {k: (np.zeros_like(v), np.zeros_like(v)) for k, v in w.items()}
    x_all = feeds[0][1].astype(np.float64)
    t_all = feeds[1][1].astype(np.float64)
    n = 0  # updates of every list so far
    curve = []
    # fp16's overflows are values here (inf, then nan), not errors.
    with np.errstate(over="ignore", invalid="ignore"):
        for _ in range(steps):
            history = [dict(w)]  # the weights after each of the step's updates
            taken = []  # whether each of the step's updates was taken
            losses = []
            for j in range(m // rnd):
                # The update's gradient: the mean over its round.
                grads = {}
                for k in range(j * rnd, (j + 1) * rnd):
                    part = np.concatenate([
                        np.arange(r * shard + k * rows,
                                  r * shard + (k + 1) * rows)
                        for r in range(dp)])
                    x, t = x_all[part], t_all[part]

                    def fwd(name):
                        return history[before[stage_of[name]][k]][name]

                    def bwd(name):
                        d = sum(taken[before[stage_of[name]][k]:j])
                        return (w[name] - d * vel[name] if decay < 1
                                else w[name])

                    acts, pres = [q(x)], []
                    for i in range(layers):
                        pre = q(q(acts[-1] @ q(fwd(f"w{i}")).T) +
                                q(fwd(f"b{i}")))
                        pres.append(pre)
                        acts.append(np.maximum(pre, 0) if i + 1 < layers
                                    else pre)
                    diff = acts[-1] - t
                    losses.append(np.mean(diff * diff))
                    dy = q(scale * 2 * diff / diff.size)
                    for i in reversed(range(layers)):
                        if i + 1 < layers:
                            dy = dy * (pres[i] > 0)
                        for name, g in ((f"w{i}", q(dy.T @ acts[i])),
                                        (f"b{i}", q(dy.sum(0)))):
                            grads[name] = grads.get(name, 0) + g / scale / rnd
                        dy = q(dy @ q(bwd(f"w{i}")))
                if not all(np.all(np.isfinite(g)) for g in grads.values()):
                    # An overflow: every stage skips the update (micro-batch
                    # k's, or with per-stage replicas round j's).
                    if dynamic:
                        scale, good = scale * 0.5, 0
                    taken.append(0)
                    history.append(dict(w))
                    continue
                if dynamic:
                    good += 1
                    if good == 2000:
                        scale, good = scale * 2, 0
                taken.append(1)
                n += 1
                for name, g in grads.items():
                    s = stage_of[name]
                    if kind == "sgd":
                        step = -lr * g
                    else:
                        m1, m2 = mom[name]
                        m1 = 0.9 * m1 + 0.1 * g
                        m2 = 0.999 * m2 + 0.001 * g * g
                        mom[name] = (m1, m2)
                        step = -lr * (m1 / (1 - 0.9 ** n)) / (
                            np.sqrt(m2 / (1 - 0.999 ** n)) + 1e-8)
                    if warmup and warm[s]:
                        step = step * (warm[s] + 1.0) ** -max(0.0, 1 - (n - 1) / warmup)
                    if decay < 1 and warm[s]:
                        gamma = decay ** (1.0 / warm[s])
                        vel[name] = gamma * vel[name] + (1 - gamma) * step
                    w[name] = w[name] + step
                history.append(dict(w))
            curve.append(float(np.mean(losses)))
    out = os.path.join(d, "ref_state")
    os.makedirs(out, exist_ok=True)
    for name, v in w.items():
        np.save(os.path.join(out, name + ".npy"), v.astype(np.float32))
        if decay < 1 and warm[stage_of[name]]:
            np.save(os.path.join(out, name + ".velocity.npy"),
                    vel[name].astype(np.float32))
        if kind == "adam":
            np.save(os.path.join(out, name + ".exp_avg.npy"),
                    mom[name][0].astype(np.float32))
            np.save(os.path.join(out, name + ".exp_avg_sq.npy"),
                    mom[name][1].astype(np.float32))
    if dynamic:
        np.save(os.path.join(out, "loss_scale.npy"), np.float32(scale))
        np.save(os.path.join(out, "loss_scale.good_steps.npy"), np.float32(good))
    return np.array(curve), out


def check_tp_split(state_dir, weights, tp):
    """Failures for each of `weights` that rank `state_dir` did not save
    split over `tp` tensor ranks (its shards.json: a tensor-parallel part,
    or ZeRO blocks of one)."""
    path = os.path.join(state_dir, "shards.json")
    specs = {}
    if weights and os.path.exists(path):
        with open(path) as f:
            specs = json.load(f)
    errors = []
    for w in weights:
        spec = specs.get(w)
        parts = (None if spec is None else
                 spec["parts"] if spec["dim"] != -1 else
                 spec.get("part", [0, 1, 1, 0])[2])
        if parts != tp:
            errors.append(f"{w}: not saved split over the {tp} tensor ranks "
                          f"({path}: {spec}); the plan splits it")
    return errors


def check_skipped_together(state_dirs, steps, updates=None):
    """fp16 from an overflowing loss scale under a partitioned plan: each
    micro-batch's gradient is scaled as the mean over its own rows, so it
    overflows at other scales than one process's whole-batch gradient, and
    the values are not compared with one process. What must hold: steps
    were skipped and later ones taken, and every rank (each holding other
    stages, shards or rows) skipped the same ones and moved the loss scale
    alike, i.e. every rank saved the same step counter and loss scale
    bits. `updates`: the updates the run makes when none skips (PipeDream
    updates after every micro-batch: steps x micro-batches; default
    `steps`)."""
    errors = []
    updates = updates or steps
    names = ("step.npy", "loss_scale.npy", "loss_scale.good_steps.npy")
    first = [np.load(os.path.join(state_dirs[0], n)) for n in names]
    if not float(first[0]) < updates:
        errors.append(f"no update was skipped (step counter {float(first[0])} "
                      f"of {updates}); the loss scale did not overflow")
    elif not float(first[0]) > 0:
        errors.append(f"every one of {updates} updates was skipped; the loss "
                      "scale never backed off far enough to train")
    for r, folder in enumerate(state_dirs[1:], 1):
        for n, want in zip(names, first):
            got = np.load(os.path.join(folder, n))
            if got.tobytes() != want.tobytes():
                errors.append(f"{n}: rank {r} saved {got} and rank 0 {want}; "
                              "the ranks did not skip the same steps")
    if not errors:
        print(f"  {float(first[0]):.0f} of {updates} updates taken on every "
              f"rank, loss scale {float(first[1]):g}")
    return errors


def check_skipped_like_one(one, ranks_state):
    """The steps a plan skipped for an fp16 overflow are one process's: the
    step counter and the loss scale (with its count of good steps) rank 0
    saved hold one process's bits."""
    errors = []
    for n in ("step.npy", "loss_scale.npy", "loss_scale.good_steps.npy"):
        want = np.load(os.path.join(one, n))
        got = np.load(os.path.join(ranks_state, n))
        if got.tobytes() != want.tobytes():
            errors.append(f"{n}: the ranks saved {got} and one process {want}; "
                          "they skipped other steps")
    return errors


# Batch norm's running statistics (the small ResNet's names).
RUNNING_STATS = re.compile(r".*\.bn\.[mv]\.npy$")


# Top-k routing is a discontinuity: where a token's k-th and (k+1)-th
# router probabilities (or an expert's C-th and (C+1)-th token by routing
# weight, capacity C) are within round-off, one float32 program picks one
# expert and another program, summing in another order, the other, and the
# runs part by far more than round-off (a token's expert output swapped:
# up to 6e-4 of a weight after 10 steps), with no defect anywhere. An MoE
# case therefore checks that its data keep every routing choice of the
# single process's trajectory this far (relative to the largest
# probability) from a tie: the end weights of the distributed SGD cases
# route with probabilities at most 1.4e-6 of the largest away from one
# process's (llama_moe_sgd_cp2; 2.3e-7 to 1.0e-6 for the others), so this
# leaves a factor of 7.
ROUTING_MARGIN = 1e-5


def run_stepwise(one, steps, state, args, env):
    """The single process's run of `steps` steps as `steps` runs of one step
    of `one`, each resumed from the last's --save-state folder (bit for bit
    what --steps does: docs/codegen.md), the last saving into `state`.
    Returns (the runs' printed output, the state folders the steps started
    from: None for the program's initial weights), or raises RuntimeError."""
    text, starts = "", [None]
    for k in range(steps):
        folder = state if k == steps - 1 else f"{state}_step{k + 1}"
        cmd = [one, "--steps", "1", "--save-state", folder, "-o",
               os.path.dirname(state)]
        if starts[-1]:
            cmd += ["--load-state", starts[-1]]
        p = subprocess.run(cmd + args, capture_output=True, text=True,
                           timeout=600, env=env)
        if p.returncode != 0:
            raise RuntimeError(f"single-process run, step {k + 1}, failed: "
                               + (p.stdout + p.stderr)[-1500:])
        text += p.stdout
        starts.append(folder)
    return text, starts[:-1]


def routing_margins(model, feeds, starts, curve):
    """The smallest routing margin (run_networks.routing_margin: the top-k
    gap and the capacity gap, relative to the largest probability) of each
    step of a trajectory of the MoE `model`: onnxruntime's forward on the
    weights each step started from (`starts`, run_stepwise's; None: the
    graph-only model's initial weights, common.graph_only_weight). Each
    forward's loss must be the program's (`curve`), which shows that the
    weights are the ones the program trained with. Returns [(margin,
    dropped tokens)] per step, or raises RuntimeError."""
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper
    import run_networks
    m = onnx.load(model, load_external_data=False)
    softmax = {n.output[0] for n in m.graph.node if n.op_type == "Softmax"}
    probs = [n.input[0] for n in m.graph.node
             if n.op_type == "TopK" and n.input[0] in softmax]
    if len(probs) != 1:
        raise RuntimeError(f"{model}: expected one router (a TopK of a "
                           f"Softmax), found {len(probs)}")
    m.graph.output.append(helper.make_tensor_value_info(
        probs[0], TensorProto.FLOAT, None))
    inputs = {i.name for i in m.graph.input}
    labels = next(a for n, a in feeds if n not in inputs)
    shapes = [(t.name, list(t.dims)) for t in m.graph.initializer]
    out = []
    for k, start in enumerate(starts):
        del m.graph.initializer[:]
        m.graph.initializer.extend(numpy_helper.from_array(
            np.load(os.path.join(start, common.sanitize(w) + ".npy"))
            if start else common.graph_only_weight(w, shape), w)
            for w, shape in shapes)
        session = ort.InferenceSession(m.SerializeToString(),
                                       providers=["CPUExecutionProvider"])
        logits, p = session.run([m.graph.output[0].name, probs[0]],
                                {n: a for n, a in feeds if n in inputs})
        z = logits.astype(np.float64).reshape(-1, logits.shape[-1])
        z -= z.max(axis=1, keepdims=True)
        nll = np.log(np.exp(z).sum(axis=1)) - z[np.arange(len(z)),
                                                labels.reshape(-1)]
        if abs(nll.mean() - curve[k]) > 1e-5 * abs(curve[k]):
            raise RuntimeError(
                f"routing check: onnxruntime's loss {nll.mean():.7g} on the "
                f"weights of step {k + 1} is not the program's {curve[k]:.7g}: "
                "common.graph_only_weight or the saved state no longer "
                "matches what the program trains")
        out.append(run_networks.routing_margin([p], [probs[0]]))
    return out


# A ReLU input or a max-pool window gap this close to its branch point
# (relative to its tensor's largest |value|) may fall on either side in
# float32 (run_training.py's KINK_MARGIN: 4.5 times the measured radius).
KINK_MARGIN = 1e-6


def float64_run(d, model, feeds, train, steps, microbatches, flip=None):
    """torch_reference.py's float64 training of `model` on `feeds` (saved
    in `d` as in_NAME.npy by save_feeds) with SGD as `train` says,
    `microbatches` per step, batch norm's running statistics not trained,
    recording every branch point within KINK_MARGIN; with `flip` (forward,
    node, index: one of them) forced onto the other side there. Returns its
    .npz (kept in `d` for later calls), or raises RuntimeError."""
    import onnx
    import run_training
    opts = dict(kv.split("=") for kv in train.split()[1:])
    if opts.get("optimizer") != "sgd":
        raise RuntimeError("the float64 branch check only replays SGD")
    out = os.path.join(d, "float64_%d_%d_%d.npz" % (flip or (0, 0, 0)))
    if os.path.exists(out):
        return np.load(out)
    m = onnx.load(model, load_external_data=False)
    inputs = {i.name for i in m.graph.input}
    stats = {n.input[i] for n in m.graph.node
             if n.op_type == "BatchNormalization" for i in (3, 4)}
    args = [run_training.TORCH_PYTHON, run_training.TORCH_REFERENCE,
            "--model", model, "--optimizer", "sgd", "--lr", opts["lr"],
            "--steps", str(steps), "--microbatches", str(microbatches),
            "--exclude", ",".join(sorted(stats)),
            "--kink-margin", str(KINK_MARGIN), "--out", out]
    for n, _ in feeds:
        path = os.path.join(d, "in_" + n + ".npy")
        args += ["--feed", f"{n}={path}"] if n in inputs else ["--labels", path]
    if flip:
        args += ["--flip", "%d:%d:%d" % flip]
    p = subprocess.run(args, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise RuntimeError("torch_reference.py: " + p.stderr[-800:])
    return np.load(out)


def float64_miss(curve, state, want):
    """The largest relative difference of a run (loss `curve`, {tensor:
    end value} `state`) from a float64_run result: per step for the curve,
    per tensor against its largest |value|."""
    worst = float(np.max(np.abs(curve - want["losses"]) /
                         np.abs(want["losses"])))
    for k in want.files:
        if k not in ("losses", "kinks") and not k.startswith("gradmax/"):
            if k not in state:
                raise RuntimeError(f"the float64 run trains {k}, which the "
                                   "run did not save")
            scale = max(float(np.max(np.abs(want[k]))), 1e-30)
            worst = max(worst, float(np.max(np.abs(
                state[k].astype(np.float64) - want[k]))) / scale)
    return worst


def kink_branches(d, model, feeds, train, steps, microbatches, runs, rtol,
                  tries=6):
    """Whether float32 runs that disagree took different branches at a ReLU
    kink or max-pool tie that round-off decides: each run of `runs` (name,
    loss curve, {tensor: whole end value}) must match, within `rtol`, the
    float64 run (float64_run) or that run forced onto the other side of one
    of its `tries` nearest branch points (the agreement runs on one branch
    show). A wrong gradient moves more than one element's share and matches
    none (docs/reliability.md, "The AVX-512 failure is rounding at a ReLU
    kink"; run_kink_selftest). Returns a line saying which branch each run
    took, or None with a second value saying why not."""
    import onnx
    m = onnx.load(model, load_external_data=False)

    def reference(flip=None):
        return float64_run(d, model, feeds, train, steps, microbatches, flip)

    try:
        base = reference()
        nearest = sorted(base["kinks"].tolist(), key=lambda e: e[3])[:tries]
        flipped = {}
        taken = []
        for run, curve, state in runs:
            if float64_miss(curve, state, base) <= rtol:
                taken.append(f"{run} the float64 run's")
                continue
            for forward, node, index, margin in nearest:
                flip = (int(forward), int(node), int(index))
                if flip not in flipped:
                    flipped[flip] = reference(flip)
                if float64_miss(curve, state, flipped[flip]) <= rtol:
                    node = m.graph.node[flip[1]]
                    step, part = divmod(flip[0] - 1, microbatches)
                    taken.append(
                        f"{run} the other side of {node.op_type} "
                        f"{node.output[0]} element {flip[2]} at step "
                        f"{step + 1}, micro-batch {part + 1} (margin "
                        f"{margin:.1e} of its tensor's largest value)")
                    break
            else:
                return None, (f"{run} matches neither the float64 run nor one "
                              f"flipped at its {len(nearest)} nearest branch "
                              "points within rtol")
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
        return None, str(e)
    return "branches taken: " + "; ".join(taken), None


def run_kink_selftest(compiler, work, name, model, train, input_shape, batch,
                      feeds, steps):
    """kink_branches on every CPU (on AVX2 the ResNet cases' own data need
    no flip): the float64 run forced onto the other side of its nearest
    branch point, playing a float32 run, must be accepted as that branch,
    and the float64 run with one tensor's update 1% larger (a wrong
    gradient of that tensor) must be rejected. No program runs."""
    import onnx
    from onnx import numpy_helper
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    save_feeds(d, feeds)
    microbatches = batch // int(input_shape.split(":")[1].split("x")[0])
    try:
        base = float64_run(d, model, feeds, train, steps, microbatches)
        kinks = base["kinks"].tolist()
        if not kinks:
            return ["the float64 run met no branch point within KINK_MARGIN"]
        forward, node, index, margin = min(kinks, key=lambda e: e[3])
        flip = (int(forward), int(node), int(index))
        alt = float64_run(d, model, feeds, train, steps, microbatches, flip)
    except RuntimeError as e:
        return [str(e)]
    params = [k for k in base.files
              if k not in ("losses", "kinks") and not k.startswith("gradmax/")]
    flipped = {k: alt[k] for k in params}
    moved = float64_miss(alt["losses"], flipped, base)
    if moved <= RTOL:
        return [f"flipping forward {flip[0]} node {flip[1]} element {flip[2]} "
                f"moves the run by {moved:.1e} only; the self test needs "
                "another branch point"]
    errors = []
    found, why = kink_branches(d, model, feeds, train, steps, microbatches,
                               [("the flipped run took", alt["losses"],
                                 flipped)], RTOL)
    if not found or f"element {flip[2]} at" not in found:
        errors.append(f"the float64 run flipped at forward {flip[0]} node "
                      f"{flip[1]} element {flip[2]} (margin {margin:.1e}) "
                      f"was not recognized: {found or why}")
    initial = {t.name: numpy_helper.to_array(t)
               for t in onnx.load(model).graph.initializer}
    # The tensor the training moved most, relative to its largest value.
    weight = max(params, key=lambda k: np.max(np.abs(base[k] - initial[k])) /
                 np.max(np.abs(base[k])))
    wrong = dict((k, base[k]) for k in params)
    wrong[weight] = initial[weight] + 1.01 * (base[weight] - initial[weight])
    off = float64_miss(base["losses"], wrong, base)
    found, why = kink_branches(d, model, feeds, train, steps, microbatches,
                               [("the wrong run took", base["losses"], wrong)],
                               RTOL)
    if found:
        errors.append(f"a run whose {weight} took a 1% larger update "
                      f"({off:.1e} away) was accepted: {found}")
    if not errors:
        print(f"  {name}: the run flipped at forward {flip[0]} (margin "
              f"{margin:.1e}; {moved:.1e} away) was found, the one with "
              f"{weight}'s update 1% larger ({off:.1e} away) rejected")
    return errors


def run_moe_checks_selftest(compiler, work, name, model, input_shape, steps,
                            checks):
    """The MoE cases' own checks can fail, on data and rates known to need
    them: each of `checks` (the check, "routing" or "floor", a --data-seed
    and the optimizer and rate of --train) must find the single process
    over its limit (a routing margin under ROUTING_MARGIN, a round-off
    floor over FLOOR_SHARE x rtol). Single-process runs only."""
    d = os.path.join(work, name)
    env = dict(os.environ, OMP_NUM_THREADS="1", OMP_WAIT_POLICY="PASSIVE")
    errors, seen = [], []
    for check, seed, optimizer in checks:
        g = np.random.default_rng([seed, zlib.crc32(b"moe")])
        ids = g.integers(0, 64, (4, 8)).astype(np.int64)[:2]
        labels = g.integers(0, 64, (4, 8)).astype(np.int64)[:2]
        feeds = [("input_ids", ids), ("labels", labels)]
        folder = os.path.join(d, f"{check}_{seed}")
        os.makedirs(folder, exist_ok=True)
        args = save_feeds(folder, feeds)
        state = os.path.join(folder, "state_one")
        try:
            one = compile_once(compiler, [
                model, "--input-shape=" + input_shape,
                "--train=loss=softmax-cross-entropy:labels " + optimizer],
                os.path.join(folder, "one.bin"))
            text, starts = run_stepwise(one, steps, state, args, env)
            if check == "routing":
                value = min(m for m, _ in routing_margins(
                    model, feeds, starts, curve_of(text)))
                ok = value < ROUTING_MARGIN
            else:
                value = roundoff_floor(one, steps, state, model, args, env)
                ok = value > FLOOR_SHARE * RTOL
        except RuntimeError as e:
            return [str(e)]
        seen.append(f"{check} {value:.1e} (seed {seed}, {optimizer})")
        if not ok:
            errors.append(f"the {check} check would pass data known to need "
                          f"it: {value:.1e} with seed {seed}, {optimizer}")
    if not errors:
        print(f"  {name}: the checks fire: " + ", ".join(seen))
    return errors


# The single process's own spread under a 2^-24 perturbation of its
# initial weights must stay under this share of the comparison's rtol;
# beyond it the trajectory amplifies round-off so much that agreement
# within rtol is luck and a miss says nothing.
FLOOR_SHARE = 0.25


def roundoff_floor(one, steps, state, model, args, env, draws=2):
    """How far the single process's trajectory carries round-off: `one`
    run `steps` steps from the graph-only `model`'s initial weights
    (common.graph_only_weight; the rest of the state, step counter and
    momentum, zero) times (1 + 2^-24 n), n standard normal, `draws` times;
    returns the largest difference of an end tensor from the unperturbed
    run's (`state`), relative to the tensor's largest |value|. The
    unperturbed start must give `state` bit for bit (raises RuntimeError
    if not: the initial state is not the program's)."""
    import onnx
    weights = {common.sanitize(t.name) + ".npy": t.name for t in
               onnx.load(model, load_external_data=False).graph.initializer}
    names = sorted(f for f in os.listdir(state) if f.endswith(".npy"))
    worst = 0.0
    for draw in range(-1, draws):
        rng = np.random.default_rng(draw) if draw >= 0 else None
        start, end = (f"{state}_init{draw + 1}", f"{state}_end{draw + 1}")
        os.makedirs(start, exist_ok=True)
        for f in names:
            saved = np.load(os.path.join(state, f))
            if f in weights:
                w = common.graph_only_weight(weights[f], list(saved.shape))
                if rng is not None:
                    w = (w * (1 + 2.0 ** -24 * rng.standard_normal(w.shape))
                         ).astype(np.float32)
            else:
                w = np.zeros_like(saved)
            np.save(os.path.join(start, f), w)
        p = subprocess.run([one, "--steps", str(steps), "--load-state", start,
                            "--save-state", end, "-o", os.path.dirname(state)]
                           + args, capture_output=True, text=True, timeout=600,
                           env=env)
        if p.returncode != 0:
            raise RuntimeError("single-process run from perturbed weights "
                               "failed: " + (p.stdout + p.stderr)[-1500:])
        for f in names:
            want = np.load(os.path.join(state, f))
            got = np.load(os.path.join(end, f))
            if rng is None and not np.array_equal(got, want):
                raise RuntimeError(
                    f"roundoff_floor: from the initial state it made, the "
                    f"single process ends with another {f} than its own "
                    "run: common.graph_only_weight (or the zero start of "
                    "the other state) is not what the program starts from")
            scale = max(float(np.max(np.abs(want))), 1e-30)
            worst = max(worst, float(np.max(np.abs(
                got.astype(np.float64) - want))) / scale)
    return worst


def checked_single(work, single, model, feeds, steps, env):
    """The single process of a routing case, checked: `single` (the
    dist-compile command of its program, "-o PATH" last) compiled and run
    `steps` steps on `feeds` one step at a time (run_stepwise), the
    routing margins of its trajectory (routing_margins) and its round-off
    floor (roundoff_floor). Computed once per program, data and step count
    in a folder of `work` and shared by the cases with the same ones (the
    checks run the single process 13 times, and the MoE cases of one
    optimizer have 4 single-process programs), under a lock so that cases
    running at once wait for the first. Returns (its printed output, its end state folder,
    [(margin, dropped tokens)] per step, floor), or raises RuntimeError."""
    command = single[:-2]
    key = hashlib.sha256(repr((command, steps)).encode())
    for feed, a in feeds:
        key.update(f"{feed} {a.dtype} {a.shape}".encode())
        key.update(np.ascontiguousarray(a).tobytes())
    d = os.path.join(work, "checked_single", key.hexdigest()[:16])
    os.makedirs(d, exist_ok=True)
    state = os.path.join(d, "state_one")
    result = os.path.join(d, "checked.json")
    with open(os.path.join(d, "lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.exists(result):
            one = os.path.join(d, "one.bin")
            p = subprocess.run(command + ["-o", one], capture_output=True,
                               text=True)
            if p.returncode != 0:
                raise RuntimeError(f"dist-compile {command[1]} failed: "
                                   f"{p.stderr[-1500:]}")
            args = save_feeds(d, feeds)
            text, starts = run_stepwise(one, steps, state, args, env)
            margins = routing_margins(model, feeds, starts, curve_of(text))
            floor = roundoff_floor(one, steps, state, model, args, env)
            with open(result + ".tmp", "w") as f:
                json.dump({"text": text, "floor": floor, "margins": [
                    [float(m), int(n)] for m, n in margins]}, f)
            os.replace(result + ".tmp", result)
        with open(result) as f:
            checked = json.load(f)
    return (checked["text"], state,
            [tuple(m) for m in checked["margins"]], checked["floor"])


def run_pipeline_train_case(compiler, work, name, model, train, input_shape,
                            plan, batch, feeds, steps, ranks=2, rtol=RTOL,
                            zero=False, reference=None, search=None,
                            accumulate=False, tp_split=(), split_parts=None,
                            overflow=False, skips_like_one=False,
                            vocab_parallel=False, per_replica=None,
                            loss_rtol=None, boundary_parts=False,
                            routing=False, kinks=False, ring=False,
                            cp_options=None):
    """Pipeline-parallel training: the forward function planned with
    `plan` (dist-opt --dist-plan=PLAN --dist-batch=BATCH; the model is
    compiled for one micro-batch, `input_shape`), then dist-compile --train
    (dist-autodiff on the planned function, dist-partition: per-list
    programs of the plan's training schedule) under `mpirun -np ranks` on
    the whole batch, vs one process compiled for the whole batch. The loss
    curve (rank 0) and every weight and optimizer state (each rank saves
    the stages it owns) must agree within `rtol` relative (without GPT-2's
    no-signal key-bias elements, as in run_case). With `zero` (a plan with
    zero=1) the optimizer state is compared reassembled from the shards of
    each stage's replicas, and some must be sharded. With `search` (a
    cluster) the plan is searched instead (dist-opt --dist-search=PLAN on
    that cluster); its report must show every pin of PLAN kept: the pinned
    layers on the pinned device kind, which runs the first stage. With
    `accumulate` the one process is compiled for one micro-batch with
    accumulation-steps (batch over micro-batch rows) and reads the same
    whole batch, one block per micro-batch: the reference for models whose
    forward depends on the micro-batch (batch norm's batch statistics,
    its running statistics updated once per micro-batch). Each weight of
    `tp_split` must be saved split over the plan's tp tensor ranks (the
    ranks' shards.json): the programs split it, not only run; over
    `split_parts` ranks when given (an expert-parallel plan's experts).
    With `overflow` (fp16 from a loss scale that overflows) the values are
    not compared (check_skipped_together says why and what is), unless
    `skips_like_one`: a plan of one micro-batch and no data parallelism,
    whose gradients are the whole batch's as one process's are, must skip
    the steps one process skips (the same step counter and loss scale) and
    then agree with it as without overflow. With `vocab_parallel` the
    plan's program must all-gather nothing (its generated source calls no
    distrt_all_gather): the softmax cross-entropy ran on each tensor rank's
    columns of the logits. Pipelined such plans take sg=0: Megatron's
    scatter/gather of stage boundaries (sg=1) all-gathers at each receiver.
    With `ring` the generated source runs ring attention, forward and
    backward (the context-parallel attentions did not keep the all-gather
    form), every ring on the load-balanced split (balanced = 1) unless
    `cp_options` (dist-compile --context-parallel-options) has balance=0,
    then every ring on the contiguous one. With `boundary_parts` every value the stages send is one tensor rank's
    part of a flattened whole (each distrt_send of the generated source
    carries a 1-d tensor): the boundaries went by scatter/gather. Tensors whose saved name `per_replica` (a regex)
    matches are each replica's own (batch norm's running statistics under
    dp) and are not compared. `loss_rtol`, when given, is the loss curve's
    tolerance (else `rtol`'s). With `routing` (a mixture-of-experts model)
    the single process (checked_single's, shared by the cases with the same
    program and data) must keep every routing choice of its trajectory
    ROUTING_MARGIN from a tie (routing_margins) and its own round-off floor
    under FLOOR_SHARE x rtol (roundoff_floor), else the case fails saying
    its data or learning rate leave the comparison to round-off. With
    `kinks` (a network with ReLU or max-pool branch points) runs that
    disagree pass when each matches a float64 run taking the branches
    round-off may take (kink_branches)."""
    mpirun = mpirun_command(ranks)
    if not mpirun:
        return ["mpirun not found: install openmpi-bin (scripts/install-deps.sh "
                "installs it)"]
    options = dict(kv.split("=") for kv in plan.split(","))
    tp = int(options.get("tp", 1))
    opt = os.path.join(os.path.dirname(compiler), "dist-opt")
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    planned = os.path.join(d, "planned.mlir")
    report = os.path.join(d, "report.json")
    planner = ([f"--dist-cluster={search}", "--dist-search=" + plan,
                "--dist-report=" + report] if search else
               [f"--dist-cluster=cpu-xeon-2s:{max(1, (ranks + 1) // 2)}",
                "--dist-plan=" + plan])
    p = subprocess.run([opt, model, "--input-shape=" + input_shape] + planner +
                       [f"--dist-batch={batch}", "-o", planned],
                       capture_output=True, text=True)
    if p.returncode != 0:
        return [f"dist-opt {planner[1]} failed: " + p.stderr[-1500:]]
    if search:
        msg = check_pins(report, plan, ranks)
        if msg:
            return [msg + "\n" + p.stdout[-1500:]]
    pp, one = os.path.join(d, "pp.bin"), os.path.join(d, "one.bin")
    name0, dims = input_shape.split(":")
    whole_shape = name0 + ":" + "x".join([str(batch)] + dims.split("x")[1:])
    steps_per = batch // int(dims.split("x")[0])
    single = ([compiler, model, "--input-shape=" + input_shape,
               f"--train={train} accumulation-steps={steps_per}", "-o", one]
              if accumulate else
              [compiler, model, "--input-shape=" + whole_shape,
               "--train=" + train, "-o", one])
    source = os.path.join(d, "pp.cpp")
    undecided = []
    # A routing case's single process is checked_single's, shared.
    cp_flags = ["--context-parallel-options=" + cp_options] if cp_options else []
    for cmd in ([compiler, planned, "--train=" + train, "--emit-source", source,
                 "-o", pp] + cp_flags, single)[:1 if reference or routing else 2]:
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            return [f"dist-compile {cmd[1]} failed: {p.stderr[-1500:]}"]
    if vocab_parallel:
        with open(source) as f:
            if "distrt_all_gather" in f.read():
                return [f"{source} all-gathers: the logits were gathered "
                        "whole, the softmax cross-entropy did not run "
                        "vocabulary-parallel"]
    if ring:
        with open(source) as f:
            text = f.read()
        if ("distrt_ring_attention(" not in text or
                "distrt_ring_attention_backward(" not in text):
            return [f"{source} runs no ring attention (forward and "
                    "backward): the context-parallel attentions kept the "
                    "all-gather form"]
        # distrt_ring_attention[_backward](comm, &q, &k, &v, mask, scale,
        # balanced, ...)
        flags = set(re.findall(r"distrt_ring_attention(?:_backward)?\("
                               r"[\w.]+, &q, &k, &v, (?:&mask|NULL), [^,]+, "
                               r"([01]),", text))
        want = "0" if "balance=0" in (cp_options or "") else "1"
        if flags != {want}:
            return [f"{source} runs its rings with balanced = "
                    f"{sorted(flags)}, not {want}: the sequence was not "
                    "split " + ("contiguously" if want == "0" else
                                "into the load-balanced 2 cp chunks")]
    if boundary_parts:
        with open(source) as f:
            sends = re.findall(r"distrt_tensor t = dg::TS?\(\w+, \w+, "
                               r"\{([0-9, ]*)\}[^;]*;[^;]*?distrt_send\(",
                               f.read())
        whole = [dims for dims in sends if "," in dims]
        if not sends or whole:
            shown = ", ".join(f"[{d}]" for d in whole[:3])
            return [f"{source} sends {len(whole)} of {len(sends)} boundary "
                    f"values whole ({shown}): the stages did not "
                    "scatter/gather them"]
    args = save_feeds(d, feeds)
    env = dict(os.environ, OMP_NUM_THREADS="1", OMP_WAIT_POLICY="PASSIVE")
    s_one = os.path.join(d, "state_one")
    if routing:
        try:
            one_text, s_one, margins, floor = checked_single(
                work, single, model, feeds, steps, env)
        except RuntimeError as e:
            return [str(e)]
        if floor > FLOOR_SHARE * rtol:
            undecided.append(
                f"the trajectory amplifies round-off: from initial weights "
                f"2^-24 apart the single process ends {floor:.1e} of a "
                f"tensor's largest value apart (over {FLOOR_SHARE} x rtol), "
                f"so a comparison within rtol {rtol:g} cannot tell a defect "
                "from rounding; lower the learning rate or give the case "
                "other data")
        step, (margin, _) = min(enumerate(margins, 1), key=lambda m: m[1][0])
        if margin < ROUTING_MARGIN:
            undecided.append(
                f"the data leave the routing to round-off: at step {step} of "
                f"the single process a routing choice is {margin:.1e} of the "
                f"largest router probability from a tie (under "
                f"{ROUTING_MARGIN:g}), so float32 programs summing in other "
                "orders may route a token differently; give the case other "
                "data (its family's generator)")
    elif not reference:
        p1 = subprocess.run([one, "--steps", str(steps), "--save-state", s_one,
                             "-o", d] + args, capture_output=True, text=True,
                            timeout=600, env=env)
        if p1.returncode != 0:
            return ["single-process run failed: " + (p1.stdout + p1.stderr)[-1500:]]
        one_text = p1.stdout
    p2 = subprocess.run(mpirun + [pp, "--steps", str(steps), "--save-state",
                                  os.path.join(d, "state_pp{rank}"),
                                  "--weights-dir", os.path.dirname(model),
                                  "-o", d] + args,
                        capture_output=True, text=True, timeout=600, env=env)
    if p2.returncode != 0:
        return ["mpirun -np %d (pipeline training) failed: %s" %
                (ranks, (p2.stdout + p2.stderr)[-1500:])]
    c2 = curve_of(p2.stdout)
    if reference:
        try:
            c1, s_one = reference(compiler, d, model, train, input_shape,
                                  batch, feeds, steps, plan,
                                  [os.path.join(d, f"state_pp{r}")
                                   for r in range(ranks)], env)
        except RuntimeError as e:
            return [str(e)]
    else:
        c1 = curve_of(one_text)
    if len(c1) != steps or len(c2) != steps:
        return [f"expected {steps} loss lines from each run (rank 0 only under "
                f"mpirun), got {len(c1)} and {len(c2)}:\n{p2.stdout[-800:]}"]
    if overflow:
        # PipeDream updates after each of a replica's micro-batches (with
        # per-stage replicas after each round of them: async_updates).
        per_microbatch = options.get("schedule") in ("pipedream", "pipemare")
        rounds = steps_per // int(options.get("dp", 1))
        if per_microbatch:
            rounds //= async_updates(plan, int(options.get("pp", 1)),
                                     rounds)[0]
        errors = check_skipped_together(
            [os.path.join(d, f"state_pp{r}") for r in range(ranks)], steps,
            steps * rounds if per_microbatch else steps)
        if errors or not skips_like_one:
            return errors
        errors = check_skipped_like_one(s_one, os.path.join(d, "state_pp0"))
        if errors:
            return errors
    errors = list(undecided)
    msg = common.compare("loss curve", c2, c1,
                         rtol if loss_rtol is None else loss_rtol, 0.0)
    if msg:
        errors.append(msg)
    # Every tensor of the single process is saved by the rank that owns it
    # (a step counter by every rank).
    # Tensor-parallel shards are put together first.
    zero_blocks = set()
    try:
        whole = assemble_shards([os.path.join(d, f"state_pp{r}")
                                 for r in range(ranks)], zero_blocks)
    except ValueError as e:
        return [f"tensor-parallel shards: {e}"]
    owners = {base: list(a) for base, a in whole.items()}
    for r in range(ranks):
        for f in glob.glob(os.path.join(d, f"state_pp{r}", "*.npy")):
            if os.path.basename(f) not in whole:
                owners.setdefault(os.path.basename(f), []).append(f)
    files = sorted(glob.glob(os.path.join(s_one, "*.npy")))
    if not files:
        errors.append("the single-process run saved no state")
    worst = 0.0
    # ZeRO blocks the ranks' shards.json described, put together above.
    sharded = len(zero_blocks)
    for f in files:
        base = os.path.basename(f)
        # The accumulating process's own buffers: gradient sums (zero
        # after the step) and the micro-batch counter.
        if accumulate and (base.endswith(".grad_acc.npy") or
                           base == "microbatch.npy"):
            continue
        if per_replica and per_replica.match(base):
            continue
        if base not in owners:
            errors.append(f"{base}: no pipeline rank saved it")
            continue
        want = np.load(f)
        keep = signal_mask(base, want)
        saved = [np.load(p) if isinstance(p, str) else p for p in owners[base]]
        # 2BW's second buffer W(t) - W(t-1) (async_reference saves it) is
        # a difference of weights, rounded to the weight's precision.
        weight = os.path.join(s_one, base.replace(".last_update.npy", ".npy"))
        like = (np.load(weight) if base.endswith(".last_update.npy") and
                os.path.exists(weight) else None)
        if zero and any(a.shape != want.shape for a in saved):
            # ZeRO-1 (zero=1 in the plan): the stage's replicas, in rank
            # order, each saved its block of the flattened state (with
            # tensor parallelism, of its tensor rank's part).
            full, msg = (unshard_tensor_parts(saved, want, base, tp,
                                              os.path.join(d, "state_pp0"))
                         if tp > 1 else unshard(saved, want))
            if msg:
                errors.append(f"{base}: {msg}")
                continue
            saved = [full]
            sharded += 1
        for got in saved:
            if keep is not None:
                got, want_kept = got[keep], want[keep]
            else:
                want_kept = want
            msg = compare_rel(base, got, want_kept, rtol, like)
            if msg:
                errors.append(msg)
            elif want_kept.size:
                scale = max(float(np.max(np.abs(want_kept))), 1e-30)
                if like is not None and like.size:
                    scale = max(scale, float(np.max(np.abs(like))))
                worst = max(worst, float(np.max(np.abs(
                    got.astype(np.float64) - want_kept))) / scale)
    explained = None
    if errors and kinks and not undecided:
        tensors = {base[:-4]: (np.load(a[0]) if isinstance(a[0], str) else
                               a[0]) for base, a in owners.items()}
        one_state = {os.path.basename(f)[:-4]: np.load(f) for f in files}
        explained, why = kink_branches(
            d, model, feeds, train, steps, steps_per,
            [("the single process took", c1, one_state),
             (f"the {ranks} ranks took", c2, tensors)], rtol)
        if explained:
            errors = []
        else:
            errors.append("float64 branch check: " + why)
    if zero and not sharded:
        errors.append("zero=1 but no rank saved a shard of the optimizer state")
    errors += check_tp_split(os.path.join(d, "state_pp0"), tp_split,
                             split_parts or tp)
    if not errors:
        decided = (f"; routing margin {min(m for m, _ in margins):.1e}, "
                   f"round-off floor {floor:.1e}" if routing else "")
        print(f"  {name}: loss {c1[0]:.6g} -> {c1[-1]:.6g}; {len(files)} tensors "
              f"across {ranks} ranks ({sharded} sharded), max rel difference "
              f"{worst:.2g}{decided}")
        if explained:
            print(f"  {name}: the runs differ by more than rtol; {explained}")
    return errors


def skewed_mlp(work):
    """Two Gemm layers (8 -> 16 -> 4, ReLU between) whose gradients differ
    by orders of magnitude across stages and tensor shards: the second
    layer's weights of hidden units 0-7 are 30, of units 8-15 0.01, and the
    first layer's are small (0.01). The first layer's gradient in the
    rows of units 0-7 (pipeline stage 0; tensor rank 0's shard; ZeRO
    replica 0's block) is
    hundreds of times the others', so as a dynamic fp16 loss scale backs
    off, some steps overflow there alone: only a flag combined over every
    rank makes the others skip those steps too."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    path = os.path.join(work, "skewed_mlp.onnx")
    if os.path.exists(path):
        return path
    rng = np.random.default_rng(5)
    w0 = (0.01 * rng.standard_normal((16, 8))).astype(np.float32)
    w1 = np.where(np.arange(16) < 8, 30.0, 0.01).astype(np.float32)
    w1 = (w1 * np.sign(rng.standard_normal((4, 16)))).astype(np.float32)
    weights = dict(w0=w0, b0=np.full(16, 0.1, np.float32), w1=w1,
                   b1=np.zeros(4, np.float32))
    nodes = [helper.make_node("Gemm", ["x", "w0", "b0"], ["a0"], transB=1),
             helper.make_node("Relu", ["a0"], ["h0"]),
             helper.make_node("Gemm", ["h0", "w1", "b1"], ["y"], transB=1)]
    graph = helper.make_graph(
        nodes, "skewed_mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])],
        [numpy_helper.from_array(v, k) for k, v in weights.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, path)
    return path


def mixed_precision_cases(rng):
    """Mixed precision under partitioned plans (run_pipeline_train_case):
    f32 master weights, fp16 or bf16 forward and backward copies, the loss
    scale on the last stage, each rank unscaling its own gradients and the
    overflow flag or-ed over the world. Against one process's mixed-
    precision program on the whole batch, within run_training.py's MIXED
    tolerance of the 16-bit format: a micro-batch's or a shard's 16-bit
    gradient is rounded before the f32 sum over micro-batches (one process
    rounds the whole batch's), and a row-parallel matmul sums its partial
    products in another order, each a rounding of a few units of that
    format's unit roundoff."""
    x = rng.standard_normal((8, 8)).astype(np.float32)
    t = rng.standard_normal((8, 4)).astype(np.float32)
    adam = "loss=mse:target optimizer=adam lr=0.01 "
    fp16 = adam + "mixed-precision=fp16 loss-scale=1024"
    mlp = dict(model=MLP, input_shape="x:2x8", batch=8,
               feeds=[("x", x), ("target", t)], steps=10, train=fp16,
               rtol=MIXED["fp16"])
    overflow = dict(overflow=True, steps=20, model=skewed_mlp,
                    train=adam + "mixed-precision=fp16 loss-scale=1048576")
    ids = rng.integers(0, 512, (4, 32)).astype(np.int64)
    labels = rng.integers(0, 512, (4, 32)).astype(np.int64)
    gpt = dict(model=GPT2, input_shape="input_ids:1x32", batch=4,
               feeds=[("input_ids", ids), ("labels", labels)], steps=3,
               rtol=MIXED["bf16"])
    gpt_sgd = ("loss=softmax-cross-entropy:labels optimizer=sgd lr=0.1 "
               "mixed-precision=bf16")
    gpt_fp16 = ("loss=softmax-cross-entropy:labels optimizer=sgd lr=0.1 "
                "mixed-precision=fp16 loss-scale=1024")
    deep = dict(mlp, model=deep_mlp, reference=pipemare_reference,
                plan="pp=2,mbs=2,schedule=pipemare,pipemare_warmup=12")
    return [
        ("mlp_adam_fp16_pp2_1f1b",
         dict(mlp, plan="pp=2,mbs=2,schedule=1f1b")),
        # 2^20 overflows fp16: the stages skip the same steps, then train.
        ("mlp_adam_fp16_overflow_pp2_1f1b",
         dict(mlp, plan="pp=2,mbs=2,schedule=1f1b", **overflow)),
        ("mlp_adam_bf16_pp2_gpipe",
         dict(mlp, plan="pp=2,mbs=2,schedule=gpipe",
              train=adam + "mixed-precision=bf16", rtol=MIXED["bf16"])),
        ("mlp_adam_fp16_tp2", dict(mlp, plan="tp=2,mbs=2")),
        ("mlp_adam_fp16_overflow_tp2", dict(mlp, plan="tp=2,mbs=2", **overflow)),
        ("mlp_adam_fp16_dp2_pp2_1f1b",
         dict(mlp, plan="dp=2,pp=2,mbs=2,schedule=1f1b", ranks=4)),
        # ZeRO-1: each replica unscales its shard of the mean gradient.
        ("mlp_adam_fp16_dp2_pp2_1f1b_zero1",
         dict(mlp, plan="dp=2,pp=2,mbs=2,schedule=1f1b,zero=1", ranks=4,
              zero=True)),
        ("mlp_adam_fp16_dp2_pp2_1f1b_zero2",
         dict(mlp, plan="dp=2,pp=2,mbs=2,schedule=1f1b,zero=2", ranks=4,
              zero=True)),
        ("mlp_adam_fp16_dp2_pp2_1f1b_zero3",
         dict(mlp, plan="dp=2,pp=2,mbs=2,schedule=1f1b,zero=3", ranks=4,
              zero=True)),
        ("mlp_adam_fp16_dp2_tp2_zero1",
         dict(mlp, plan="dp=2,tp=2,mbs=2,zero=1", ranks=4, zero=True)),
        ("mlp_adam_fp16_overflow_dp2_zero1",
         dict(mlp, plan="dp=2,mbs=2,zero=1", ranks=2, zero=True, **overflow)),
        ("mlp_adam_bf16_dp2_tp2",
         dict(mlp, plan="dp=2,tp=2,mbs=2", ranks=4,
              train=adam + "mixed-precision=bf16", rtol=MIXED["bf16"])),
        # SGD, as gpt2_sgd_tp2: Adam's m / sqrt(v) turns a near-zero
        # gradient's rounding into a whole step of lr (with Adam, a c_attn
        # bias element under pp=2 ends 9.6e-4 off where the tensor's largest
        # is 3e-3: three steps of lr 1e-3 in another direction).
        # The loss reads the bf16 logits cast to f32: vocabulary-parallel
        # on each rank's cast columns (no all-gather of the logits).
        ("gpt2_sgd_bf16_tp2", dict(gpt, plan="tp=2,mbs=1", train=gpt_sgd,
                                   vocab_parallel=True)),
        ("gpt2_sgd_bf16_pp2_1f1b",
         dict(gpt, plan="pp=2,mbs=1,schedule=1f1b", train=gpt_sgd)),
        # Context parallelism: each rank's gradients are its tokens' part,
        # summed over cp before the unscale.
        ("gpt2_sgd_fp16_cp2",
         dict(gpt, plan="cp=2,mbs=1", rtol=MIXED["fp16"], train=gpt_fp16)),
        # Expert parallelism: the experts' gradients summed over the ranks
        # that hold them before the unscale. 5 steps: at lr 0.5 this loss
        # climbs again after step 7 (one process's too), and that unstable
        # stretch magnifies fp16's other rounding order (1.7% at step 8).
        ("llama_moe_sgd_fp16_dp2_ep2",
         dict(model=moe_llama_model, input_shape="input_ids:1x8", batch=2,
              steps=5, plan="dp=2,ep=2,mbs=1", rtol=MIXED["fp16"],
              feeds=[("input_ids", rng.integers(0, 64, (2, 8)).astype(np.int64)),
                     ("labels", rng.integers(0, 64, (2, 8)).astype(np.int64))],
              train="loss=softmax-cross-entropy:labels optimizer=sgd lr=0.5 "
                    "mixed-precision=fp16 loss-scale=1024")),
        # fp16 from an overflowing scale (2^20) under tp=2 with one
        # micro-batch of the whole batch: the vocabulary-parallel loss's
        # gradient (each rank's columns of softmax - onehot times the scale)
        # overflows where one process's does, so the ranks skip one
        # process's steps, then follow its values.
        ("gpt2_sgd_fp16_overflow_tp2",
         dict(gpt, input_shape="input_ids:4x32", plan="tp=2,mbs=4", steps=6,
              rtol=MIXED["fp16"], overflow=True, skips_like_one=True,
              vocab_parallel=True,
              train="loss=softmax-cross-entropy:labels optimizer=sgd lr=0.1 "
                    "mixed-precision=fp16 loss-scale=1048576")),
        # The loss in the model (gpt2_loss_model: next-token labels,
        # ignore index, SoftmaxCrossEntropyLoss): dist-tensor-parallel
        # makes it vocabulary-parallel before dist-autodiff lowers the
        # precision, and its ops stay f32 as one process's loss does: the
        # loss curve within LOSS_16 (2.0e-5 relative in bf16, 4.6e-6 in
        # fp16; when those ops were lowered to 16 bits, 3.7e-3 and 3.1e-4
        # from step 1 on).
    ] + [
        (f"gpt2_inmodel_loss_sgd_{low}_{tag}",
         dict(gpt, model=gpt2_loss_model, plan=plan, ranks=ranks,
              feeds=[("input_ids", ids)], vocab_parallel=True,
              rtol=MIXED[low], loss_rtol=LOSS_16[low],
              train=f"optimizer=sgd lr=0.1 {MIXED_FLAGS[low]}"))
        for low in ("bf16", "fp16")
        for tag, plan, ranks in (("tp2", "tp=2,mbs=1", 2),
                                 ("tp2_pp2_1f1b_sg0",
                                  "tp=2,pp=2,mbs=1,schedule=1f1b,sg=0", 4))
    ] + [
        # An exporter's LogSoftmax + NegativeLogLikelihoodLoss: graph ops
        # on the gathered logits, marked by the importer to stay f32 (in
        # bf16 at tp=2 7.7e-5 relative; 3.9e-3 when they were 16-bit).
        ("gpt2_inmodel_nll_loss_sgd_bf16_tp2",
         dict(gpt, model=gpt2_nll_loss_model,
              plan="tp=2,mbs=1", feeds=[("input_ids", ids)],
              loss_rtol=LOSS_16["bf16"],
              train=f"optimizer=sgd lr=0.1 {MIXED_FLAGS['bf16']}")),
    ] + [
        # fp16 interleaved: each rank holds two stages and or-s their flags
        # before the world's.
        ("gpt2_sgd_fp16_pp2_interleaved",
         dict(gpt, plan="pp=2,mbs=1,schedule=interleaved,chunks=2",
              rtol=MIXED["fp16"], train=gpt_fp16)),
    ] + [
        # The asynchronous schedules against async_reference (one
        # process's mixed-precision program from the same versions).
        # PipeDream-2BW updates once per step: the synchronous overflow
        # check, every micro-batch computing with the 16-bit copies of
        # W(t-1). PipeDream's update of a micro-batch is one process's step
        # on it, so it skips when any stage's gradient of that micro-batch
        # overflowed: the world's or per update, the loss scale moving with
        # every update.
        case for kind in ("2bw", "pipedream") for case in (
            (f"mlp_adam_fp16_pp2_{kind}",
             dict(mlp, plan=f"pp=2,mbs=2,schedule={kind}",
                  reference=async_reference)),
            (f"mlp_adam_bf16_dp2_pp2_{kind}",
             dict(mlp, plan=f"dp=2,pp=2,mbs=2,schedule={kind}", ranks=4,
                  reference=async_reference,
                  train=adam + "mixed-precision=bf16", rtol=MIXED["bf16"])),
            (f"mlp_adam_fp16_dp2_pp2_zero1_{kind}",
             dict(mlp, plan=f"dp=2,pp=2,mbs=2,schedule={kind},zero=1",
                  ranks=4, zero=True, reference=async_reference)),
            (f"mlp_adam_fp16_overflow_pp2_{kind}",
             dict(mlp, plan=f"pp=2,mbs=2,schedule={kind}", **overflow)),
            # Tensor parallelism inside the stages: each tensor rank
            # unscales its parts, the flag or-ed over all four ranks.
            (f"mlp_adam_fp16_tp2_pp2_{kind}",
             dict(mlp, plan=f"tp=2,pp=2,mbs=2,schedule={kind}", ranks=4,
                  reference=async_reference, tp_split=("w1",))))] + [
        # PipeDream with ZeRO-2: the backward call returns this replica's
        # shards, which each update unscales before the world's check.
        ("mlp_adam_fp16_dp2_pp2_zero2_pipedream",
         dict(mlp, plan="dp=2,pp=2,mbs=2,schedule=pipedream,zero=2",
              ranks=4, zero=True, reference=async_reference)),
    ] + [
        # PipeDream with per-stage replicas: an update per round of 2
        # micro-batches on every list, so every rank joins the same
        # overflow checks and skips the same rounds.
        ("mlp_adam_fp16_pp2_replicas21_pipedream",
         dict(mlp, plan="pp=2,mbs=2,schedule=pipedream,replicas=2/1",
              ranks=3, reference=async_reference)),
        ("mlp_adam_fp16_overflow_pp2_replicas21_pipedream",
         dict(mlp, plan="pp=2,mbs=2,schedule=pipedream,replicas=2/1",
              ranks=3, **overflow))] + [
        # PipeMare against pipemare_reference's fp16 emulation (float64
        # between the roundings): its updates per micro-batch skip as
        # PipeDream's, the correction counting the updates taken. SGD as
        # its f32 twin deep_mlp_sgd_pp2_pipemare (from 2^20 the first
        # updates overflow: the reference skips them with every stage and
        # halves the scale as the ranks must; a static 2^16 overflows on
        # every step's first micro-batch, so skips fall between taken
        # updates once the velocity moves: 10 of 40), and Adam over 3
        # stages.
        (f"deep_mlp_sgd_fp16{tag}_pp2_pipemare",
         dict(deep, train="loss=mse:target optimizer=sgd lr=0.05 "
                          "mixed-precision=fp16 loss-scale=" + scale))
        for tag, scale in (("", "1024"), ("_overflow", "1048576"),
                           ("_static", "65536 dynamic-loss-scale=false"))
    ] + [
        ("deep_mlp_adam_fp16_pp3_pipemare",
         dict(deep, ranks=3, train=fp16,
              plan="pp=3,mbs=2,schedule=pipemare,pipemare_decay=0.3")),
        ("mlp_adam_fp16_overflow_pp2_pipemare",
         dict(mlp, plan="pp=2,mbs=2,schedule=pipemare,pipemare_warmup=12",
              **overflow)),
    ]


def cases():
    rng = np.random.default_rng(11)
    x = rng.standard_normal((4, 8)).astype(np.float32)
    t = rng.standard_normal((4, 4)).astype(np.float32)
    mlp = dict(model=MLP, shapes_one=["x:4x8"], shapes_dp=["x:2x8"],
               feeds=[("x", x), ("target", t)], steps=20)
    ids = rng.integers(0, 512, (2, 32)).astype(np.int64)
    labels = rng.integers(0, 512, (2, 32)).astype(np.int64)
    gpt = dict(model=GPT2, shapes_one=["input_ids:2x32"],
               shapes_dp=["input_ids:1x32"],
               feeds=[("input_ids", ids), ("labels", labels)], steps=5)
    return [
        ("mlp_sgd_np2", dict(mlp, train="loss=mse:target optimizer=sgd lr=0.1")),
        ("mlp_adam_np2", dict(mlp, train="loss=mse:target optimizer=adam lr=0.01")),
        # Accumulation: @train_microbatch twice per step (its loss averaged
        # over ranks each time), then @train_apply reduces the accumulated
        # gradients once.
        ("mlp_sgd_accumulate2_np2",
         dict(mlp, train="loss=mse:target optimizer=sgd lr=0.1 accumulation-steps=2")),
        # fp16 (dynamic loss scale from 1024, no overflow): half-precision
        # rounding depends on the rows per matmul, so the values follow the
        # single process within run_training.py's fp16 tolerance.
        ("mlp_adam_fp16_np2",
         dict(mlp, train="loss=mse:target optimizer=adam lr=0.01 "
                         "mixed-precision=fp16 loss-scale=1024",
              rtol=MIXED["fp16"])),
        # fp16 from an overflowing scale (2^20): the overflow flag is or-ed
        # over the ranks, so they skip the same steps and back off together.
        ("mlp_adam_fp16_overflow_np2",
         dict(mlp, train="loss=mse:target optimizer=adam lr=0.01 "
                         "mixed-precision=fp16 loss-scale=1048576",
              overflow=True)),
        ("gpt2_adam_np2", dict(gpt, train="loss=softmax-cross-entropy:labels "
                                          "optimizer=adam lr=0.001")),
        # Dropout: each replica draws its rows' block of the masks one
        # process draws for the whole batch. SGD: with Adam, one c_proj
        # element whose gradient the masks leave near zero ends 1.9e-6 off
        # (the all-reduce's summation order, magnified by m / sqrt(v)).
        ("gpt2_dropout_sgd_np2",
         dict(gpt, model=gpt2_with_dropout,
              train="loss=softmax-cross-entropy:labels optimizer=sgd "
                    "lr=0.1")),
        # ZeRO-1 on the same batch (zero_cases for the MLP).
        ("gpt2_adam_dp2_zero1",
         dict(gpt, zero=True, train="loss=softmax-cross-entropy:labels "
                                    "optimizer=adam lr=0.001")),
        # ZeRO-3 on the same batch: the tied embedding's block is gathered
        # once for its two forward readers.
        ("gpt2_adam_dp2_zero3",
         dict(gpt, zero=3, train="loss=softmax-cross-entropy:labels "
                                 "optimizer=adam lr=0.001")),
        ("gpt2_forward_pp2_mb2",
         dict(pipeline=True, model=GPT2, input_name="input_ids", batch=1,
              microbatches=2, weights_dir=os.path.dirname(GPT2),
              feeds=[("input_ids", rng.integers(0, 512, (2, 32)).astype(np.int64))])),
        # Two replicas of the pipeline (dp=2 x pp=2 on 4 ranks).
        ("gpt2_forward_dp2_pp2_mb2",
         dict(pipeline=True, model=GPT2, input_name="input_ids", batch=1,
              microbatches=2, dp=2, weights_dir=os.path.dirname(GPT2),
              feeds=[("input_ids", np.random.default_rng(7).integers(
                  0, 512, (4, 32)).astype(np.int64))])),
        ("small_resnet_forward_pp2_mb4", "resnet"),
        # Branch-parallel inference: the heads of a trunk on several
        # devices at once (run_branches_case).
        ("trunk_branches_infer_arm_ethernet",
         dict(branches=True, cluster="arm-board-ethernet", batch=4)),
        # The heads read the input (no trunk: the trunk's device sends it)
        # and a Gemm of their Concat follows the join.
        ("input_fork_concat_infer_arm_ethernet",
         dict(branches=True, cluster="arm-board-ethernet", batch=4,
              trunk=False)),
    ] + (pipeline_train_cases(rng) +
         mixed_precision_cases(np.random.default_rng(12)) + zero_cases() +
         reshard_cases(rng))


def zero_cases():
    """ZeRO-1 (run_case with zero): a plan of data parallelism alone with
    zero=1 (dist-compile --dist-plan=dp=R,zero=1,mbs=B --dist-batch=R*B):
    each rank keeps and updates its block of every flattened parameter's
    optimizer state; gradients reduce-scattered, parameters all-gathered."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((4, 8)).astype(np.float32)
    t = rng.standard_normal((4, 4)).astype(np.float32)
    # The batch of the MLP cases of cases() (their references are reused).
    mlp = dict(model=MLP, shapes_one=["x:4x8"], shapes_dp=["x:2x8"],
               feeds=[("x", x), ("target", t)], steps=20, zero=True)
    x6 = rng.standard_normal((6, 8)).astype(np.float32)
    t6 = rng.standard_normal((6, 4)).astype(np.float32)
    return [
        ("mlp_adam_dp2_zero1",
         dict(mlp, train="loss=mse:target optimizer=adam lr=0.01")),
        ("mlp_sgd_dp2_zero1",
         dict(mlp, train="loss=mse:target optimizer=sgd lr=0.1")),
        # Momentum buffers sharded, updated in @train_apply after 2
        # accumulated micro-batches per step.
        ("mlp_momentum_accumulate2_dp2_zero1",
         dict(mlp, train="loss=mse:target optimizer=momentum lr=0.01 "
                         "accumulation-steps=2")),
        # ZeRO-2 and 3 under accumulation: each micro-batch's gradient is
        # reduce-scattered into the rank's block of the accumulator.
        ("mlp_momentum_accumulate2_dp2_zero2",
         dict(mlp, zero=2, train="loss=mse:target optimizer=momentum lr=0.01 "
                                 "accumulation-steps=2")),
        ("mlp_adam_accumulate2_dp2_zero3",
         dict(mlp, zero=3, train="loss=mse:target optimizer=adam lr=0.01 "
                                 "accumulation-steps=2")),
        # Uneven blocks: 128, 16 and 64 elements over 3 ranks (43, 6, 22
        # each, the last block padded).
        ("mlp_adamw_dp3_zero1_uneven",
         dict(mlp, shapes_one=["x:6x8"], feeds=[("x", x6), ("target", t6)],
              ranks=3, train="loss=mse:target optimizer=adamw lr=0.01 "
                             "weight-decay=0.1")),
        # ZeRO-3: each rank keeps its block of every weight as well, the
        # forward and the backward gather it.
        ("mlp_adam_dp2_zero3",
         dict(mlp, zero=3, train="loss=mse:target optimizer=adam lr=0.01")),
        ("mlp_adamw_dp3_zero3_uneven",
         dict(mlp, zero=3, shapes_one=["x:6x8"],
              feeds=[("x", x6), ("target", t6)], ranks=3,
              train="loss=mse:target optimizer=adamw lr=0.01 "
                    "weight-decay=0.1")),
    ]


def gpt2_variant(work, name, edit):
    """GPT-2 as `edit` (a function of the loaded ModelProto) changes it,
    saved once as `work`/`name`/`name`.onnx (weights inline); its path."""
    import onnx
    d = os.path.join(work, name)
    path = os.path.join(d, name + ".onnx")
    if not os.path.exists(path):
        os.makedirs(d, exist_ok=True)
        m = onnx.load(GPT2)
        edit(m)
        onnx.save(m, path)
    return path


def gpt2_split_last_axis(work):
    """GPT-2 whose fused Q|K|V projection is split along axis -1 (as
    dist-modelgen and other exporters write it) instead of 2."""
    def edit(m):
        for n in m.graph.node:
            for a in n.attribute:
                if n.op_type == "Split" and a.name == "axis" and a.i == 2:
                    a.i = -1
    return gpt2_variant(work, "gpt2_negaxis", edit)


def gpt2_tied(work):
    """GPT-2 whose LM head reads the token embedding's table transposed
    (tied embeddings, as GPT-2 is trained; the exported fixture carries the
    head as its own initializer): a Transpose of `transformer.wte.weight`
    replaces the head's weight."""
    from onnx import helper

    def edit(m):
        g = m.graph
        head = next(n for n in g.node if n.op_type == "MatMul" and
                    n.output[0] == g.output[0].name)
        old = head.input[1]
        head.input[1] = "wte_t"
        g.node.insert(list(g.node).index(head), helper.make_node(
            "Transpose", ["transformer.wte.weight"], ["wte_t"], perm=[1, 0]))
        for i, t in enumerate(g.initializer):
            if t.name == old:
                del g.initializer[i]
                break
    return gpt2_variant(work, "gpt2_tied", edit)


def gpt2_with_dropout(work):
    """GPT-2 with training dropout (ratio 0.1) on every attention
    probability tensor (split by heads under tensor parallelism) and on the
    input of every layer norm (whole on every tensor rank)."""
    from onnx import helper, numpy_helper

    def edit(m):
        g = m.graph
        g.initializer.append(numpy_helper.from_array(
            np.array(0.1, np.float32), "dropout_ratio"))
        nodes = []
        for n in g.node:
            if n.op_type == "LayerNormalization":
                x = n.input[0]
                n.input[0] = x + "_dropped"
                nodes.append(helper.make_node("Dropout", [x, "dropout_ratio"],
                                              [x + "_dropped"]))
            nodes.append(n)
            if n.op_type == "Softmax":
                y = n.output[0]
                n.output[0] = y + "_undropped"
                nodes.append(helper.make_node(
                    "Dropout", [y + "_undropped", "dropout_ratio"], [y]))
        del g.node[:]
        g.node.extend(nodes)
    return gpt2_variant(work, "gpt2_dropout", edit)


def check_pins(report, constraints, ranks):
    """Why the searched plan in `report` breaks a pin of `constraints`
    ("pin=0-1@KIND,..."), or None: it must use `ranks` devices, run the
    first stage on KIND and keep the pinned layers there."""
    with open(report) as f:
        r = json.load(f)
    kinds = r["plan"]["stage_device_kinds"]
    if r["devices"]["used"] != ranks:
        return f"the search planned for {r['devices']['used']} devices, not {ranks}"
    for item in constraints.split(","):
        if not item.startswith("pin="):
            continue
        span, kind = item[4:].split("@")
        first, last = (int(v) for v in (span.split("-") * 2)[:2])
        side = [s for s in r.get("pinned", []) if s["device_kind"] == kind]
        if not side or kinds[0] != kind:
            return f"{item}: the plan runs stage 0 on {kinds[0]}, not {kind}"
        if not any(a <= first and last <= b for a, b in side[0]["layers"]):
            return (f"{item}: layers {first}-{last} are not all on {kind} "
                    f"(there: {side[0]['layers']})")
    return None


def pipeline_train_cases(rng):
    """Pipeline training (run_pipeline_train_case): the MLP in two stages
    under every schedule that runs one stage per rank, with SGD and Adam,
    and GPT-2 with Adam."""
    x = rng.standard_normal((8, 8)).astype(np.float32)
    t = rng.standard_normal((8, 4)).astype(np.float32)
    mlp = dict(model=MLP, input_shape="x:2x8", batch=8,
               feeds=[("x", x), ("target", t)], steps=10,
               train="loss=mse:target optimizer=sgd lr=0.05")
    ids = rng.integers(0, 512, (4, 32)).astype(np.int64)
    labels = rng.integers(0, 512, (4, 32)).astype(np.int64)
    out = [(f"mlp_sgd_pp2_{k.replace('-', '')}",
            dict(mlp, plan=f"pp=2,mbs=2,schedule={k}"))
           for k in ("gpipe", "1f1b", "zb-h1")]
    out.append(("mlp_adam_pp2_1f1b",
                dict(mlp, plan="pp=2,mbs=2,schedule=1f1b",
                     train="loss=mse:target optimizer=adam lr=0.01")))
    # Full recomputation: every backward reruns its stage's forward.
    out.append(("mlp_adam_pp2_zbh1_recompute",
                dict(mlp, plan="pp=2,mbs=2,schedule=zb-h1,recompute=full",
                     train="loss=mse:target optimizer=adam lr=0.01")))
    # Data parallelism inside the stages: 2 replicas of each of 2 stages
    # (4 ranks), each replica on its own 4 rows of the batch.
    out.append(("mlp_sgd_dp2_pp2_1f1b",
                dict(mlp, plan="dp=2,pp=2,mbs=2,schedule=1f1b", ranks=4)))
    out.append(("mlp_adam_dp2_pp2_gpipe",
                dict(mlp, plan="dp=2,pp=2,mbs=2,schedule=gpipe", ranks=4,
                     train="loss=mse:target optimizer=adam lr=0.01")))
    # Data parallelism alone with 2 micro-batches per replica: a one-stage
    # pipeline whose micro-batches accumulate (dist-data-parallel takes one
    # micro-batch per replica; the search picks such plans).
    out.append(("mlp_adam_dp2_mb2",
                dict(mlp, plan="dp=2,mbs=2", ranks=2,
                     train="loss=mse:target optimizer=adam lr=0.01")))
    # And on one rank: 4 micro-batches of 2 rows make the step's 8 (the
    # program used to be built for one micro-batch of 2 rows).
    out.append(("mlp_adam_mb4_one_rank",
                dict(mlp, plan="mbs=2", ranks=1,
                     train="loss=mse:target optimizer=adam lr=0.01")))
    out.append(("gpt2_adam_pp2_1f1b",
                dict(model=GPT2, input_shape="input_ids:1x32", batch=4,
                     feeds=[("input_ids", ids), ("labels", labels)], steps=3,
                     plan="pp=2,mbs=1,schedule=1f1b",
                     train="loss=softmax-cross-entropy:labels optimizer=adam "
                           "lr=0.001")))
    # Selective recomputation under ZB-H1: each stage stashes Q, K^T and V
    # and its backward_input computes the scores and probabilities again.
    out.append(("gpt2_adam_pp2_zbh1_selective",
                dict(out[-1][1], plan="pp=2,mbs=1,schedule=zb-h1,"
                                      "recompute=selective")))
    # Interleaved: 4 virtual stages (embeddings and block 0 | block 1 |
    # ...) on 2 ranks, 2 chunks each.
    out.append(("gpt2_adam_pp2_interleaved",
                dict(out[-2][1], plan="pp=2,mbs=1,schedule=interleaved,"
                                      "chunks=2")))
    # V-shaped placement (the search's frequent pick): virtual stages 0 and
    # 3 on rank 0, 1 and 2 on rank 1, so the loss is computed on rank 0;
    # ZB-V and V-Half split the backward, DualPipe-V pairs forward and
    # backward.
    gpt_1f1b = dict(out)["gpt2_adam_pp2_1f1b"]
    for kind in ("zb-v", "v-half", "dualpipe-v"):
        out.append((f"gpt2_adam_pp2_{kind.replace('-', '')}",
                    dict(gpt_1f1b, plan=f"pp=2,mbs=1,schedule={kind},"
                                        "chunks=2")))
    # Tensor parallelism (Megatron): the MLP's two layers and GPT-2's
    # attention and MLP blocks split over 2 ranks, alone and with pp=2.
    # tp alone runs as a one-stage pipeline: 4 micro-batches accumulate.
    gpt = dict(out)["gpt2_adam_pp2_1f1b"]
    out.append(("mlp_adam_tp2",
                dict(mlp, plan="tp=2,mbs=2", ranks=2,
                     train="loss=mse:target optimizer=adam lr=0.01")))
    out.append(("mlp_sgd_tp2_pp2_1f1b",
                dict(mlp, plan="tp=2,pp=2,mbs=2,schedule=1f1b", ranks=4)))
    # GPT-2 with SGD: a row-parallel matmul sums its partial products in
    # another order than one process, and Adam's m / sqrt(v) magnifies that
    # rounding for elements whose gradient is near zero (a c_fc bias element
    # 2.6e-4 off, 1e-4 of one step, after 3 steps); SGD's update is linear.
    sgd = "loss=softmax-cross-entropy:labels optimizer=sgd lr=0.1"
    out.append(("gpt2_sgd_tp2",
                dict(gpt, plan="tp=2,mbs=1", train=sgd)))
    # Dropout under tensor parallelism: each rank draws its part of the
    # attention-probability masks (split by heads) by whole-tensor index,
    # and the whole layer-norm-input masks, so the masks are one
    # process's (one micro-batch of the whole batch, as one process runs).
    out.append(("gpt2_dropout_sgd_tp2",
                dict(gpt, model=gpt2_with_dropout, plan="tp=2,mbs=4",
                     input_shape="input_ids:4x32", train=sgd)))
    # Dropout in a pipeline and across replicas: each stage call draws the
    # block of one process's masks that its micro-batch's rows are
    # (P.batchBlock: replica x micro-batches + micro-batch), keyed by the
    # step, so a recomputed forward draws the same masks again.
    out.append(("gpt2_dropout_sgd_pp2_1f1b",
                dict(gpt, model=gpt2_with_dropout,
                     plan="pp=2,mbs=1,schedule=1f1b", train=sgd)))
    out.append(("gpt2_dropout_sgd_pp2_1f1b_recompute",
                dict(gpt, model=gpt2_with_dropout,
                     plan="pp=2,mbs=1,schedule=1f1b,recompute=full",
                     train=sgd)))
    out.append(("gpt2_dropout_sgd_dp2_tp2",
                dict(gpt, model=gpt2_with_dropout, plan="dp=2,tp=2,mbs=1",
                     ranks=4, train=sgd)))
    # Stage boundaries by Megatron's scatter/gather (sg=1, the default):
    # each tensor rank sends its half of the flattened activation (and of
    # its gradient back), the receiving stage all-gathers the whole; with
    # sg=0 each tensor rank sends the whole tensor.
    out.append(("gpt2_sgd_tp2_pp2_1f1b",
                dict(gpt, plan="tp=2,pp=2,mbs=1,schedule=1f1b", ranks=4,
                     train=sgd)))
    out.append(("gpt2_sgd_tp2_pp2_1f1b_sg0",
                dict(gpt, plan="tp=2,pp=2,mbs=1,schedule=1f1b,sg=0", ranks=4,
                     train=sgd)))
    # The fused projection split along axis -1: three blocks all the same
    # (with one, each rank's columns crossed Q, K and V).
    out.append(("gpt2_negaxis_sgd_tp2",
                dict(gpt, model=gpt2_split_last_axis, plan="tp=2,mbs=1",
                     train=sgd)))
    # Tied embeddings (the LM head reads the token table transposed): the
    # table splits by vocabulary rows for both uses, each rank's 256 rows
    # are its lookup's and its head's columns, the loss is vocabulary-
    # parallel (no all-gather of the logits) and the table's gradient is
    # the sum of its two uses' on the rank's rows. With pp=2 the head's
    # stage reads the rank's rows from the first stage; with sp=1 the
    # lookup's sum is a reduce-scatter (the cut after it sends the tokens).
    tied = dict(gpt, model=gpt2_tied, train=sgd,
                tp_split=("transformer.wte.weight",))
    out.append(("gpt2_tied_sgd_tp2",
                dict(tied, plan="tp=2,mbs=1", vocab_parallel=True)))
    # Pipelined, the boundaries go by scatter/gather (sg=1, all-gathers
    # at the receiver); with sg=0 the program must all-gather nothing.
    out.append(("gpt2_tied_sgd_tp2_pp2_1f1b",
                dict(tied, plan="tp=2,pp=2,mbs=1,schedule=1f1b", ranks=4)))
    out.append(("gpt2_tied_sgd_tp2_pp2_1f1b_sg0",
                dict(tied, plan="tp=2,pp=2,mbs=1,schedule=1f1b,sg=0",
                     ranks=4, vocab_parallel=True)))
    out.append(("gpt2_tied_sgd_tp2_sp",
                dict(tied, plan="tp=2,mbs=1,sp=1")))
    out.append(("gpt2_tied_sgd_tp2_pp2_1f1b_sp",
                dict(tied, plan="tp=2,pp=2,mbs=1,schedule=1f1b,sp=1",
                     ranks=4)))
    # With replicas (each tensor rank's replicas average its rows'
    # gradient) and inside context parallelism (each cp rank's tokens).
    out.append(("gpt2_tied_sgd_dp2_tp2",
                dict(tied, plan="dp=2,tp=2,mbs=1", ranks=4,
                     vocab_parallel=True)))
    out.append(("gpt2_tied_sgd_tp2_cp2",
                dict(tied, plan="tp=2,cp=2,mbs=1", ranks=4)))
    # ZeRO-1 over each tensor rank's replicas: the rows' optimizer state
    # is sharded again over dp (momentum, as gpt2_momentum_dp2_tp2_zero1).
    out.append(("gpt2_tied_momentum_dp2_tp2_zero1",
                dict(tied, plan="dp=2,tp=2,mbs=1,zero=1", ranks=4, zero=True,
                     train="loss=softmax-cross-entropy:labels "
                           "optimizer=momentum lr=0.1")))
    # In bf16: the table's rows are cast for both uses, the loss reads the
    # rank's columns cast to f32.
    out.append(("gpt2_tied_sgd_bf16_tp2",
                dict(tied, plan="tp=2,mbs=1", rtol=MIXED["bf16"],
                     train=sgd + " mixed-precision=bf16",
                     vocab_parallel=True)))
    # The lookup and the head on two pipeline ranks exchange the table's
    # gradient once a step (each sums its part over the micro-batches):
    # the sum of the parts reduce-scattered by ZeRO-1 over dp=2, and in
    # bf16 (each part cast to f32 on its stage) at tp=2 x pp=2.
    out.append(("gpt2_tied_momentum_dp2_pp2_zero1",
                dict(tied, plan="dp=2,pp=2,mbs=1,zero=1,schedule=1f1b",
                     ranks=4, zero=True, tp_split=(),
                     train="loss=softmax-cross-entropy:labels "
                           "optimizer=momentum lr=0.1")))
    out.append(("gpt2_tied_sgd_bf16_tp2_pp2_1f1b",
                dict(tied, plan="tp=2,pp=2,mbs=1,schedule=1f1b", ranks=4,
                     rtol=MIXED["bf16"],
                     train=sgd + " mixed-precision=bf16")))
    # Sequence parallelism (sp=1): each row-parallel sum is a reduce-scatter
    # over the tokens, bias, dropout, residuals and layer norms run on the
    # rank's tokens, and an all-gather feeds each column-parallel region
    # (and the LM head); the norms' gradients are summed over the group.
    # Four rows of a micro-batch (dropout case): the tokens split across
    # rows; with pp=2 the stages send the rank's tokens.
    out.append(("gpt2_sgd_tp2_sp",
                dict(gpt, plan="tp=2,mbs=1,sp=1", train=sgd)))
    out.append(("gpt2_dropout_sgd_tp2_sp",
                dict(gpt, model=gpt2_with_dropout, plan="tp=2,mbs=4,sp=1",
                     input_shape="input_ids:4x32", train=sgd)))
    out.append(("gpt2_sgd_tp2_pp2_1f1b_sp",
                dict(gpt, plan="tp=2,pp=2,mbs=1,schedule=1f1b,sp=1", ranks=4,
                     train=sgd)))
    out.append(("mlp_adam_tp2_sp",
                dict(mlp, plan="tp=2,mbs=2,sp=1", ranks=2,
                     train="loss=mse:target optimizer=adam lr=0.01")))
    # Data and tensor parallelism together: each replica's tp ranks combine
    # their partial sums, each tp rank's replicas average their gradient
    # shards (dist.groups: one group per replica, one per tensor rank).
    out.append(("mlp_adam_dp2_tp2",
                dict(mlp, plan="dp=2,tp=2,mbs=2", ranks=4,
                     train="loss=mse:target optimizer=adam lr=0.01")))
    out.append(("mlp_sgd_dp2_tp2_pp2_1f1b",
                dict(mlp, plan="dp=2,tp=2,pp=2,mbs=2,schedule=1f1b", ranks=8)))
    out.append(("gpt2_sgd_dp2_tp2",
                dict(gpt, plan="dp=2,tp=2,mbs=1", ranks=4, train=sgd)))
    # ZeRO-1 with tp (mlp_adam_dp2_tp2_zero1 below): split weights (the
    # fused QKV in 3 blocks) and weights every tensor rank holds whole.
    # Momentum, not Adam: see the SGD note above.
    out.append(("gpt2_momentum_dp2_tp2_zero1",
                dict(gpt, plan="dp=2,tp=2,mbs=1,zero=1", ranks=4, zero=True,
                     train="loss=softmax-cross-entropy:labels "
                           "optimizer=momentum lr=0.1")))
    # Sequence parallelism with data parallelism and ZeRO-1 (the norms'
    # gradients summed over each replica's tensor ranks, then reduce-
    # scattered over the replicas), and under ZB-H1 (those sums in the
    # backward_weight actions).
    out.append(("gpt2_momentum_dp2_tp2_zero1_sp",
                dict(out[-1][1], plan="dp=2,tp=2,mbs=1,zero=1,sp=1")))
    out.append(("gpt2_sgd_tp2_pp2_zbh1_sp",
                dict(gpt, plan="tp=2,pp=2,mbs=1,schedule=zb-h1,sp=1",
                     ranks=4, train=sgd)))
    # Context parallelism (cp=2, dist-context-parallel): each rank runs its
    # half of every sequence and each attention as ring attention (its key
    # and value blocks passed around the cp group, merged by online
    # softmax); its weight gradients are its tokens' part, summed over
    # the cp ranks (and averaged over dp) once per step by the schedule's
    # sync over dp x cp. The logits are gathered whole, so the loss is one
    # process's. With Adam, against one process; its
    # epsilon of 1e-4 keeps m / sqrt(v) of elements with tiny gradients
    # from magnifying the other order of the cp sums and of the ring's
    # softmax (as with tp, above): with the default 1e-8 a key column of
    # c_attn and a c_fc bias element end 1.5e-5 and 1.9e-5 off (of the
    # tensor's largest element) already in the all-gather form, and with
    # 1e-5 the ring's c_fc bias elements 1.45e-5 (0 in the all-gather
    # form, whose attention rows are one process's bit for bit); with SGD
    # everything is within 3.9e-7.
    gpt_adam = dict(gpt, train="loss=softmax-cross-entropy:labels "
                               "optimizer=adam lr=0.001 epsilon=1e-4")
    out.append(("gpt2_adam_cp2", dict(gpt_adam, plan="cp=2,mbs=1")))
    out.append(("gpt2_sgd_cp2", dict(gpt, plan="cp=2,mbs=1", train=sgd)))
    # A ring of four (8 of the 32 positions each): every block passes three
    # ranks on. Under the load-balanced split (the default: rank c holds
    # the chunks c and 7 - c of 4 positions) every rank computes the same
    # share of the causal scores; with balance=0 the split is contiguous
    # and rank c computes c + 1 of the 4 blocks (rank 0 skips three).
    out.append(("gpt2_sgd_cp4",
                dict(gpt, plan="cp=4,mbs=1", ranks=4, train=sgd, ring=True)))
    out.append(("gpt2_sgd_cp4_contiguous",
                dict(gpt, plan="cp=4,mbs=1", ranks=4, train=sgd, ring=True,
                     cp_options="balance=0")))
    # The all-gather form (ring=0) under the balanced split: the keys and
    # values gathered with each rank's two chunks put in place, their
    # gradients reduce-scattered from rank-major order.
    out.append(("gpt2_sgd_cp2_allgather",
                dict(gpt, plan="cp=2,mbs=1", train=sgd, cp_options="ring=0")))
    out.append(("gpt2_adam_dp2_cp2",
                dict(gpt_adam, plan="dp=2,cp=2,mbs=1", ranks=4)))
    # Adam hides a constant factor on the gradients (m / sqrt(v)); SGD and
    # momentum check the sum over cp and the mean over dp themselves.
    out.append(("gpt2_sgd_dp2_cp2",
                dict(gpt, plan="dp=2,cp=2,mbs=1", ranks=4, train=sgd)))
    out.append(("gpt2_momentum_dp2_cp2_zero2",
                dict(gpt, plan="dp=2,cp=2,mbs=1,zero=2", ranks=4, zero=True,
                     train="loss=softmax-cross-entropy:labels "
                           "optimizer=momentum lr=0.1")))
    # ZeRO over dp x cp (Megatron's distributed optimizer with cp): the
    # optimizer state is sharded over every replica's context ranks, the
    # reduce-scatter sums their parts of the gradients.
    out.append(("gpt2_adam_cp2_zero1",
                dict(gpt_adam, plan="cp=2,mbs=1,zero=1", zero=True)))
    out.append(("gpt2_adam_dp2_cp2_zero1",
                dict(gpt_adam, plan="dp=2,cp=2,mbs=1,zero=1", ranks=4,
                     zero=True)))
    out.append(("gpt2_adam_dp2_cp2_zero2",
                dict(gpt_adam, plan="dp=2,cp=2,mbs=1,zero=2", ranks=4,
                     zero=True)))
    out.append(("gpt2_adam_dp2_cp2_zero3",
                dict(gpt_adam, plan="dp=2,cp=2,mbs=1,zero=3", ranks=4,
                     zero=True)))
    # With a pipeline: each stage's context ranks send their tokens to the
    # same context rank of the next stage.
    out.append(("gpt2_adam_cp2_pp2_1f1b",
                dict(gpt_adam, plan="cp=2,pp=2,mbs=1,schedule=1f1b", ranks=4)))
    # And ZeRO over each stage's context ranks.
    out.append(("gpt2_adam_cp2_pp2_1f1b_zero1",
                dict(gpt_adam, plan="cp=2,pp=2,mbs=1,schedule=1f1b,zero=1",
                     ranks=4, zero=True)))
    out.append(("gpt2_adam_cp2_pp2_1f1b_zero3",
                dict(out[-1][1], plan="cp=2,pp=2,mbs=1,schedule=1f1b,zero=3")))
    # Tensor parallelism inside context parallelism (dist-tensor-parallel
    # after dist-context-parallel: the MLPs, the embeddings and the
    # attention blocks split over each context rank's tensor ranks, each
    # rank's ring attention passing its heads' key and value blocks around
    # its context group; the gradient sync over each tensor rank's dp x cp
    # devices). The first block's QKV and output projections must be saved
    # split, and the programs must run the ring (ring=True).
    # SGD and momentum, not Adam: with Adam a c_fc bias element ends 2e-5
    # off (of the tensor's largest element), Adam's m / sqrt(v) magnifying
    # the other summation order, as with tp alone (above).
    attn = ("transformer.h.0.attn.c_attn.weight",
            "transformer.h.0.attn.c_proj.weight")
    out.append(("gpt2_sgd_tp2_cp2",
                dict(gpt, plan="tp=2,cp=2,mbs=1", ranks=4, train=sgd,
                     tp_split=attn, ring=True)))
    out.append(("gpt2_sgd_tp2_cp2_pp2_1f1b",
                dict(gpt, plan="tp=2,cp=2,pp=2,mbs=1,schedule=1f1b", ranks=8,
                     train=sgd, tp_split=attn, ring=True)))
    # And with sequence parallelism (sp=1): each tensor rank keeps its half
    # of its context rank's positions between the regions (the row-
    # parallel sums reduce-scatter them, the column-parallel inputs all-
    # gather them over the tensor group), and the ring attention on its
    # heads then passes their key and value blocks around its context
    # group: positions split cp x tp ways, the context rank's part first.
    out.append(("gpt2_sgd_tp2_cp2_sp",
                dict(gpt, plan="tp=2,cp=2,mbs=1,sp=1", ranks=4, train=sgd,
                     tp_split=attn, ring=True)))
    # With a pipeline: the stages send their tensor rank's part of their
    # context rank's positions (a quarter of the sequence).
    out.append(("gpt2_sgd_tp2_cp2_pp2_1f1b_sp",
                dict(gpt, plan="tp=2,cp=2,pp=2,mbs=1,schedule=1f1b,sp=1",
                     ranks=8, train=sgd, tp_split=attn, ring=True)))
    out.append(("gpt2_momentum_dp2_tp2_cp2_zero1",
                dict(gpt, plan="dp=2,tp=2,cp=2,mbs=1,zero=1", ranks=8,
                     zero=True, tp_split=attn, ring=True,
                     train="loss=softmax-cross-entropy:labels "
                           "optimizer=momentum lr=0.1")))
    # Ring attention with a mask that differs from head to head (ALiBi's
    # biases, alibi_attention_model): each context rank takes its query
    # rows of every head's mask, and under tp each tensor rank its heads'
    # part of those, its ring on its one head. The Q and output projections
    # must be saved split. Their own generator: drawing from rng here would
    # change every later case's data.
    alibi_rng = np.random.default_rng(62)
    alibi = dict(model=alibi_attention_model, input_shape="input_ids:1x8",
                 batch=2, steps=3, train=sgd,
                 feeds=[("input_ids", alibi_rng.integers(0, 32, (2, 8))),
                        ("labels", alibi_rng.integers(0, 32, (2, 8)))])
    out.append(("alibi_sgd_cp2", dict(alibi, plan="cp=2,mbs=1", ring=True)))
    out.append(("alibi_sgd_tp2_cp2",
                dict(alibi, plan="tp=2,cp=2,mbs=1", ranks=4, ring=True,
                     tp_split=("wq", "wo"))))
    # Llama's attention (separate Q, K and V projections, RoPE, 2 key/value
    # heads for 4 query heads) split over the tensor ranks: one region from
    # the three projections through RoPE and GQA's head expansion to the
    # row-parallel output projection (each tensor rank its query heads and
    # their key/value head). The first block's projections must be saved
    # split. SGD and momentum, as for GPT-2 (above).
    llama = dict(gpt, model=LLAMA, train=sgd,
                 tp_split=("onnx__MatMul_657", "onnx__MatMul_658",
                           "onnx__MatMul_659", "onnx__MatMul_681"))
    out.append(("llama_sgd_tp2", dict(llama, plan="tp=2,mbs=1")))
    out.append(("llama_sgd_tp2_pp2_1f1b",
                dict(llama, plan="tp=2,pp=2,mbs=1,schedule=1f1b", ranks=4)))
    out.append(("llama_momentum_dp2_tp2",
                dict(llama, plan="dp=2,tp=2,mbs=1", ranks=4,
                     train="loss=softmax-cross-entropy:labels "
                           "optimizer=momentum lr=0.1")))
    out.append(("llama_sgd_tp2_sp", dict(llama, plan="tp=2,mbs=1,sp=1")))
    out.append(("llama_sgd_tp2_cp2",
                dict(llama, plan="tp=2,cp=2,mbs=1", ranks=4, ring=True)))
    out.append(("llama_sgd_tp2_cp2_sp",
                dict(llama, plan="tp=2,cp=2,mbs=1,sp=1", ranks=4, ring=True)))
    out.append(("llama_sgd_tp2_cp2_pp2_1f1b",
                dict(llama, plan="tp=2,cp=2,pp=2,mbs=1,schedule=1f1b",
                     ranks=8, ring=True)))
    out.append(("llama_momentum_dp2_tp2_zero1",
                dict(llama, plan="dp=2,tp=2,mbs=1,zero=1", ranks=4, zero=True,
                     train="loss=softmax-cross-entropy:labels "
                           "optimizer=momentum lr=0.1")))
    # DeepSeek's multi-head latent attention (dist-modelgen llama
    # --kv-lora-rank) split over the tensor ranks as the cost model prices
    # it: q_b_proj and kv_b_proj column-parallel by heads (each rank its
    # heads' nope keys and values), o_proj row-parallel, the low-rank
    # a-projections and their RMSNorms whole on every rank, and the one
    # rotary key expanded by each rank to its own heads (its gradient summed
    # over the tensor group). The first block's three split projections
    # must be saved split.
    # Their own generator: drawing from rng here would change the data of
    # every case after them (the MoE cases' routing included).
    mla_rng = np.random.default_rng(56)
    mla_ids = mla_rng.integers(0, 64, (4, 8)).astype(np.int64)
    mla_labels = mla_rng.integers(0, 64, (4, 8)).astype(np.int64)
    mla = dict(model=mla_llama_model, input_shape="input_ids:1x8",
               train="loss=softmax-cross-entropy:labels optimizer=sgd lr=0.5",
               batch=2, steps=10, feeds=[("input_ids", mla_ids[:2]),
                                         ("labels", mla_labels[:2])],
               tp_split=tuple(f"model.layers.0.self_attn.{p}.weight"
                              for p in ("q_b_proj", "kv_b_proj", "o_proj")))
    out.append(("mla_llama_sgd_tp2", dict(mla, plan="tp=2,mbs=1")))
    out.append(("mla_llama_sgd_tp2_sp", dict(mla, plan="tp=2,mbs=1,sp=1")))
    out.append(("mla_llama_sgd_tp2_pp2_1f1b",
                dict(mla, plan="tp=2,pp=2,mbs=1,schedule=1f1b", ranks=4)))
    out.append(("mla_llama_sgd_tp2_cp2",
                dict(mla, plan="tp=2,cp=2,mbs=1", ranks=4, ring=True)))
    # Ring attention with queries and keys of 6 features, values of 4.
    out.append(("mla_llama_sgd_cp2",
                dict(mla, plan="cp=2,mbs=1", tp_split=())))
    out.append(("mla_llama_momentum_dp2_tp2",
                dict(mla, plan="dp=2,tp=2,mbs=1", ranks=4, batch=4,
                     feeds=[("input_ids", mla_ids), ("labels", mla_labels)],
                     train="loss=softmax-cross-entropy:labels "
                           "optimizer=momentum lr=0.1")))
    # Under sequence parallelism the down-projections and their norms run
    # on the rank's tokens (their weights' gradients summed over the tensor
    # group) and the latents are gathered for the up-projections; with a
    # pipeline (the stages send the rank's tokens), inside context
    # parallelism and with data parallelism.
    out.append(("mla_llama_sgd_tp2_pp2_1f1b_sp",
                dict(mla, plan="tp=2,pp=2,mbs=1,schedule=1f1b,sp=1",
                     ranks=4)))
    out.append(("mla_llama_sgd_tp2_cp2_sp",
                dict(mla, plan="tp=2,cp=2,mbs=1,sp=1", ranks=4, ring=True)))
    out.append(("mla_llama_momentum_dp2_tp2_sp",
                dict(mla, plan="dp=2,tp=2,mbs=1,sp=1", ranks=4, batch=4,
                     feeds=[("input_ids", mla_ids), ("labels", mla_labels)],
                     train="loss=softmax-cross-entropy:labels "
                           "optimizer=momentum lr=0.1")))
    # Expert parallelism (dist-expert-parallel): a LLaMA whose second
    # block is a mixture of 4 experts, top-2 routing with capacity 4 of 8
    # tokens per expert (tokens overflow and are dropped), one shared
    # expert. Each rank of an expert group (ep consecutive replicas) keeps 2
    # experts, the dispatched tokens and outputs cross by all-to-all, the
    # experts' gradients are summed over the ranks that hold the same
    # experts and scaled by 1 / dp. The experts' weights must be saved
    # split over the expert ranks.
    moe_ids, moe_labels = family_data("moe", rng, lambda g: (
        g.integers(0, 64, (4, 8)).astype(np.int64),
        g.integers(0, 64, (4, 8)).astype(np.int64)))
    experts = ("model.layers.1.mlp.experts.gate_proj",
               "model.layers.1.mlp.experts.up_proj",
               "model.layers.1.mlp.experts.down_proj")
    # SGD at lr 0.05: at 0.5 (and for some data at 0.2 and 0.1) the
    # trajectory amplifies round-off, a 2^-24 perturbation of the initial
    # weights moving the single process's own end weights by up to 9e-5 of
    # a weight in 10 steps, so agreement within 1e-5 was luck; at 0.05 by
    # at most 1e-6 over the 7 data sets tried (docs/distributed.md,
    # "Numerics notes"). The cases check their own floor (roundoff_floor).
    moe = dict(model=moe_llama_model, input_shape="input_ids:1x8",
               train="loss=softmax-cross-entropy:labels optimizer=sgd lr=0.05",
               batch=2, steps=10, feeds=[("input_ids", moe_ids[:2]),
                                         ("labels", moe_labels[:2])],
               tp_split=experts, split_parts=2, routing=True)
    out.append(("llama_moe_sgd_dp2_ep2", dict(moe, plan="dp=2,ep=2,mbs=1")))
    # The routing and round-off floor checks, on data that fail them:
    # --data-seed 2's data at the cases' lr 0.05 put a routing choice
    # 9.4e-6 of the largest probability from a tie, --data-seed 1's at lr
    # 0.5 make the single process's own spread 2e-5.
    moe_selftest = dict(moe_selftest=True, model=moe_llama_model,
                        input_shape="input_ids:2x8", steps=10)
    out.append(("llama_moe_sgd_checks_selftest",
                dict(moe_selftest, checks=(
                    ("routing", 2, "optimizer=sgd lr=0.05"),
                    ("floor", 1, "optimizer=sgd lr=0.5")))))
    # Momentum, not Adam: Adam's normalized step turns round-off in the
    # 4-replica gradient sum of a near-zero gradient into lr-sized weight
    # differences (the AVX2 run of this case missed 1e-5 by 1.3x).
    # Momentum 0.9 at lr 0.02 and checked as the SGD cases are: at lr 0.1
    # the single process's own spread under a 2^-24 perturbation of its
    # initial weights (roundoff_floor, in the momentum buffers) is up to
    # 7.6e-5 over 6 data sets and the 4 single-process programs below, at
    # 0.05 up to 4.2e-6 (both over FLOOR_SHARE x rtol), at 0.02 up to
    # 1.8e-6; lower rates leave about 1e-6, the gradients' own sensitivity
    # (docs/distributed.md, "Numerics notes").
    moe_momentum_train = ("loss=softmax-cross-entropy:labels "
                          "optimizer=momentum lr=0.02")
    # The floor check on the momentum buffers: --data-seed 5's data at the
    # former lr 0.1 spread the single process by 7.3e-6.
    out.append(("llama_moe_momentum_checks_selftest",
                dict(moe_selftest, checks=(
                    ("floor", 5, "optimizer=momentum lr=0.1"),))))
    out.append(("llama_moe_momentum_dp4_ep2",
                dict(moe, plan="dp=4,ep=2,mbs=1", ranks=4, batch=4,
                     feeds=[("input_ids", moe_ids), ("labels", moe_labels)],
                     train=moe_momentum_train)))
    # ZeRO with ep: the experts' momentum sharded over the expert data
    # group ({0, 2} and {1, 3} at dp = 4; with dp = ep no other rank holds
    # them, so only the dense weights' state is sharded), the dense
    # weights' over the stage's replicas; ZeRO-2 reduce-scatters each
    # micro-batch's gradients right after its backward.
    moe_momentum = dict(moe, zero=True, train=moe_momentum_train)
    out.append(("llama_moe_momentum_dp2_ep2_z1",
                dict(moe_momentum, plan="dp=2,ep=2,mbs=1,zero=1")))
    moe_dp4 = dict(moe_momentum, ranks=4, batch=4,
                   feeds=[("input_ids", moe_ids), ("labels", moe_labels)])
    out.append(("llama_moe_momentum_dp4_ep2_z1",
                dict(moe_dp4, plan="dp=4,ep=2,mbs=1,zero=1")))
    out.append(("llama_moe_momentum_dp4_ep2_z2",
                dict(moe_dp4, plan="dp=4,ep=2,mbs=1,zero=2")))
    # ZeRO-3: each rank keeps a block of its experts over the expert data
    # group (and of each dense weight over all 4), gathered for each stage
    # call.
    out.append(("llama_moe_momentum_dp4_ep2_z3",
                dict(moe_dp4, plan="dp=4,ep=2,mbs=1,zero=3")))
    # With dp = ep the experts stay whole under ZeRO-3 (no other holder).
    out.append(("llama_moe_momentum_dp2_ep2_z3",
                dict(moe_momentum, plan="dp=2,ep=2,mbs=1,zero=3")))
    out.append(("llama_moe_sgd_dp2_ep2_pp2_1f1b",
                dict(moe, plan="dp=2,ep=2,pp=2,mbs=1,schedule=1f1b",
                     ranks=4, batch=4, tp_split=(),
                     feeds=[("input_ids", moe_ids), ("labels", moe_labels)])))
    # Context parallelism with the mixture of experts: routing picks each
    # expert's top-C tokens of the whole sequence, so every context rank
    # routes and dispatches the whole sequence (the router's scores and the
    # block's input gathered over its context group) and runs the experts
    # on its C/cp of each expert's capacity slots, gathered whole before the
    # combine; the experts' gradients are its slots' part, summed over cp
    # with the other weights'. With ep the expert groups are the replicas
    # of one context rank ({0, 2} and {1, 3} at dp = cp = ep = 2), which
    # exchange their slots; the experts' gradients are summed over the
    # ranks that hold the same experts ({0, 1}, {2, 3}: a replica's
    # context ranks).
    out.append(("llama_moe_sgd_cp2",
                dict(moe, plan="cp=2,mbs=1", tp_split=())))
    out.append(("llama_moe_sgd_dp2_cp2_ep2",
                dict(moe, plan="dp=2,cp=2,ep=2,mbs=1", ranks=4)))
    out.append(("llama_moe_momentum_dp2_cp2_ep2_z1",
                dict(moe_momentum, plan="dp=2,cp=2,ep=2,mbs=1,zero=1",
                     ranks=4)))
    out.append(("llama_moe_sgd_dp2_cp2_ep2_pp2_1f1b",
                dict(moe, plan="dp=2,cp=2,ep=2,pp=2,mbs=1,schedule=1f1b",
                     ranks=8, batch=4, tp_split=(),
                     feeds=[("input_ids", moe_ids), ("labels", moe_labels)])))
    # Expert with tensor parallelism (dp = 2, tp = 2, ep = 2): each
    # expert's GEMMs split over the tensor ranks as the cost model prices
    # them (gate and up by their output features, down by its input
    # features); each tensor rank exchanges its half of every expert's
    # capacity slots over the expert group (the all-to-alls run over the
    # ranks of one tensor rank), the slots are gathered over the tensor
    # group before the experts and the partial sums reduce-scattered onto
    # the rank's slots after them, and the exchanged outputs gathered whole
    # for the combine. Each rank keeps its tensor part of its expert
    # group's experts (two axes: experts by (rank / tp) mod ep, features by
    # rank mod tp). The experts must be saved in the 2 tensor parts of the
    # 2 expert parts.
    moe_tp = dict(moe_momentum, zero=False, model=moe_llama_tp_model,
                  ranks=4)
    out.append(("llama_moe_momentum_tp2_ep2",
                dict(moe_tp, plan="dp=2,tp=2,ep=2,mbs=1")))
    # And with sequence parallelism (sp = 1): the block's input is
    # gathered over the tensor group before the routing (which picks each
    # expert's tokens of the whole sequence), the routing, dispatch,
    # experts and combine run as without sp, and the combine's output is
    # sliced to the rank's tokens where the residual add meets them.
    out.append(("llama_moe_momentum_tp2_ep2_sp",
                dict(moe_tp, plan="dp=2,tp=2,ep=2,mbs=1,sp=1")))
    # And with ZeRO at dp = ep: no other rank holds a rank's experts, so
    # they stay whole (their momentum too) and ZeRO shards the dense
    # weights' state over the stage's replicas.
    out.append(("llama_moe_momentum_tp2_ep2_z1",
                dict(moe_tp, plan="dp=2,tp=2,ep=2,mbs=1,zero=1", zero=True)))
    # And with dp > ep (dp = 4, tp = 2, ep = 2: 8 ranks, the smallest world
    # with dp > ep and tp): each rank's tensor part of its experts is also
    # held by the rank of the other expert group at the same place ({0, 4},
    # {1, 5}, {2, 6}, {3, 7}), over which ZeRO shards its momentum (a block
    # of a tensor part of an expert part: three levels of parts), the dense
    # weights' over the 4 replicas of each tensor rank. ZeRO-2 reduce-
    # scatters each micro-batch's gradients into those blocks; ZeRO-3 keeps
    # blocks of the weights too, gathered for each stage call.
    moe_tp_dp4 = dict(moe_tp, ranks=8, batch=4, zero=True,
                      feeds=[("input_ids", moe_ids), ("labels", moe_labels)])
    # (8-rank cases take 60-85 s each on two cores: ZeRO-3, the most
    # partitioned, and DeepSeek's shape below stand for ZeRO-1 and -2,
    # whose blocks are the same; ExpertZeroStateTest checks all three
    # stages' state against the planner's bytes.)
    out.append(("llama_moe_momentum_dp4_tp2_ep2_z3",
                dict(moe_tp_dp4, plan="dp=4,tp=2,ep=2,mbs=1,zero=3")))
    # DeepSeek-V3's published plan in miniature: dp > ep, tp, sequence
    # parallelism, ZeRO-1.
    out.append(("llama_moe_momentum_dp4_tp2_ep2_sp_z1",
                dict(moe_tp_dp4, plan="dp=4,tp=2,ep=2,mbs=1,sp=1,zero=1")))
    out.append(("llama_moe_sgd_tp2_ep2_pp2_1f1b",
                dict(moe, model=moe_llama_tp_model,
                     plan="dp=2,tp=2,ep=2,pp=2,mbs=1,schedule=1f1b",
                     ranks=8, batch=4, tp_split=(),
                     feeds=[("input_ids", moe_ids), ("labels", moe_labels)])))
    # Expert with context and tensor parallelism (dp = cp = tp = ep = 2, 8
    # ranks t + 2 (c + 2 d)): every context rank routes the whole sequence
    # and takes its 2 of every expert's 4 capacity slots; each tensor rank
    # of it exchanges its 1 slot over the expert group (the same context
    # and tensor rank in both replicas: {0, 4}, {1, 5}, ...), the slots
    # are gathered over the tensor group before the experts and the
    # partial sums reduce-scattered after them, and the outputs gathered
    # over the tensor, then the context group for the combine. Each rank
    # keeps its tensor part (rank mod 2) of its expert part ((rank / 4)
    # mod 2); the experts' gradients are summed over a replica's context
    # ranks at the rank's tensor place ({0, 2}, {1, 3}, ...).
    out.append(("llama_moe_momentum_dp2_cp2_tp2_ep2",
                dict(moe_tp, plan="dp=2,cp=2,tp=2,ep=2,mbs=1", ranks=8,
                     ring=True)))
    # And with sequence parallelism: each tensor rank holds its half of
    # the context rank's positions between the regions; the block's input
    # is gathered over the tensor group, then over the context group,
    # before the routing, and the combine's output sliced back.
    out.append(("llama_moe_momentum_dp2_cp2_tp2_ep2_sp",
                dict(moe_tp, plan="dp=2,cp=2,tp=2,ep=2,mbs=1,sp=1",
                     ranks=8, ring=True)))
    # Expert tensor parallelism without ep (dp = 2, tp = 2, ep = 1): every
    # tensor rank holds the whole dispatched tokens and its features of
    # every expert (gate and up by output features behind dist.tp_copy,
    # down by input features, all-reduced over the tensor group before the
    # combine), as the cost model prices them; the experts must be saved in
    # the 2 tensor parts. With sp too (the block's input gathered before
    # the routing, as with ep).
    out.append(("llama_moe_momentum_dp2_tp2",
                dict(moe_tp, plan="dp=2,tp=2,mbs=1")))
    out.append(("llama_moe_momentum_dp2_tp2_sp",
                dict(moe_tp, plan="dp=2,tp=2,mbs=1,sp=1")))
    # And with ZeRO-1: the experts' tensor parts' momentum sharded over
    # the stage's replicas as the dense weights' is.
    out.append(("llama_moe_momentum_dp2_tp2_z1",
                dict(moe_tp, plan="dp=2,tp=2,mbs=1,zero=1", zero=True)))
    # And under context parallelism (cp = 2, tp = 2, ep = 1): each tensor
    # rank runs its features of every expert on its context rank's 2 of
    # the 4 capacity slots (the partial sums all-reduced over the tensor
    # group, then the slots gathered over the context group); the experts
    # must be saved in the 2 tensor parts. Each attention runs as ring
    # attention on the tensor rank's heads (ring=True), as in the cases
    # above.
    out.append(("llama_moe_momentum_cp2_tp2",
                dict(moe_tp, plan="cp=2,tp=2,mbs=1", ring=True)))
    # And in a pipeline (the experts in the second stage's tensor group).
    out.append(("llama_moe_sgd_tp2_pp2_1f1b",
                dict(moe, model=moe_llama_tp_model,
                     plan="tp=2,pp=2,mbs=1,schedule=1f1b", ranks=4,
                     tp_split=())))
    # And its forward program (each replica's rows; the weights are the
    # programs' own initialization, so nothing is loaded from a file).
    out.append(("llama_moe_forward_dp2_ep2",
                dict(forward=True, model=moe_llama_model,
                     input_shape="input_ids:1x8",
                     feeds=[("input_ids", moe_ids[:2])], batch=2, ranks=2,
                     plan="dp=2,ep=2,mbs=1", tp_split=())))
    # And under context and tensor parallelism (8 ranks: each (context
    # rank, tensor rank) exchanges its 1 of every expert's 4 slots).
    out.append(("llama_moe_forward_dp2_cp2_tp2_ep2",
                dict(forward=True, model=moe_llama_tp_model,
                     input_shape="input_ids:1x8",
                     feeds=[("input_ids", moe_ids[:2])], batch=2, ranks=8,
                     plan="dp=2,cp=2,tp=2,ep=2,mbs=1", tp_split=())))
    # Inference: the forward program at tp=2 (one row) and tp=2 x pp=2 (2
    # micro-batches of one row) against one process's logits.
    fwd = dict(forward=True, model=LLAMA, input_shape="input_ids:1x32",
               feeds=[("input_ids", ids[:1])], batch=1, ranks=2,
               plan="tp=2,mbs=1",
               tp_split=[w.replace("__", "::") for w in llama["tp_split"]])
    out.append(("llama_forward_tp2", fwd))
    out.append(("llama_forward_tp2_pp2",
                dict(fwd, plan="tp=2,pp=2,mbs=1", batch=2, ranks=4,
                     feeds=[("input_ids", ids[:2])])))
    # Context parallelism in inference: each context rank runs its half of
    # the sequence, all-gathers the keys and values of each attention and
    # the logits (cp=2; with tp=2 and sp=1 each tensor rank its quarter
    # between the regions; with pp=2 each stage's context ranks send their
    # positions on).
    out.append(("llama_forward_cp2", dict(fwd, plan="cp=2,mbs=1", tp_split=())))
    out.append(("gpt2_forward_dp2_cp2",
                dict(fwd, model=GPT2, plan="dp=2,cp=2,mbs=1", batch=2,
                     ranks=4, feeds=[("input_ids", ids[:2])], tp_split=())))
    out.append(("llama_forward_tp2_cp2_sp",
                dict(fwd, plan="tp=2,cp=2,mbs=1,sp=1", ranks=4)))
    out.append(("llama_forward_cp2_pp2",
                dict(fwd, plan="cp=2,pp=2,mbs=1", batch=2, ranks=4,
                     feeds=[("input_ids", ids[:2])], tp_split=())))
    # Per-stage replicas (PipeDream's "2-1"): stage 0 on two ranks, each
    # running every other micro-batch, stage 1 on one; and the other way
    # round (the loss's shares summed over the last stage's replicas).
    out.append(("mlp_adam_pp2_replicas21_1f1b",
                dict(mlp, plan="pp=2,mbs=2,schedule=1f1b,replicas=2/1",
                     ranks=3, train="loss=mse:target optimizer=adam lr=0.01")))
    out.append(("mlp_sgd_pp2_replicas12_gpipe",
                dict(mlp, plan="pp=2,mbs=2,schedule=gpipe,replicas=1/2",
                     ranks=3)))
    # GPT-2's embedding is tied to its LM head: stage 0's two replicas
    # both update it, the first sends it to the last stage.
    out.append(("gpt2_sgd_pp2_replicas21_1f1b",
                dict(gpt, plan="pp=2,mbs=1,schedule=1f1b,replicas=2/1",
                     ranks=3, train=sgd)))
    # ZeRO-1 over per-stage replicas: each replica's gradient is its
    # micro-batches' share of the step's mean, so the shares are
    # reduce-scattered with sum (not mean) over the stage's replicas, each
    # updates its shard and the parameters are all-gathered; a stage of one
    # replica keeps its whole state.
    out.append(("mlp_adam_pp2_replicas21_zero1_1f1b",
                dict(mlp, plan="pp=2,mbs=2,schedule=1f1b,replicas=2/1,zero=1",
                     ranks=3, zero=True,
                     train="loss=mse:target optimizer=adam lr=0.01")))
    out.append(("mlp_adam_pp2_replicas12_zero1_gpipe",
                dict(mlp, plan="pp=2,mbs=2,schedule=gpipe,replicas=1/2,zero=1",
                     ranks=3, zero=True,
                     train="loss=mse:target optimizer=adam lr=0.01")))
    # ZB-H2 (the search's pick for some plans): backward-input and
    # backward-weight as separate actions, in its own order.
    out.append(("mlp_sgd_pp2_zbh2",
                dict(mlp, plan="pp=2,mbs=2,schedule=zb-h2")))
    # ZeRO-1 inside the stages: each stage's 2 replicas reduce-scatter its
    # gradients, update their shard of the parameters and optimizer state
    # and all-gather the parameters.
    out.append(("mlp_adam_dp2_pp2_zero1_1f1b",
                dict(mlp, plan="dp=2,pp=2,mbs=2,schedule=1f1b,zero=1",
                     ranks=4, zero=True,
                     train="loss=mse:target optimizer=adam lr=0.01")))
    # ZeRO-1 with tensor parallelism: each tensor rank shards its part of
    # every split weight's optimizer state over its own 2 replicas.
    out.append(("mlp_adam_dp2_tp2_zero1",
                dict(mlp, plan="dp=2,tp=2,mbs=2,zero=1", ranks=4, zero=True,
                     train="loss=mse:target optimizer=adam lr=0.01")))
    # ZeRO-2: each micro-batch's gradient reduce-scattered right after its
    # backward (under ZB-H1, its backward-weight) and the shards summed;
    # with data parallelism alone, each gradient right after the op that
    # computes it (dist-data-parallel).
    out.append(("mlp_adam_dp2_pp2_zero2_zbh1",
                dict(mlp, plan="dp=2,pp=2,mbs=2,schedule=zb-h1,zero=2",
                     ranks=4, zero=True,
                     train="loss=mse:target optimizer=adam lr=0.01")))
    out.append(("mlp_adam_dp2_zero2",
                dict(mlp, plan="dp=2,mbs=4,zero=2", input_shape="x:4x8",
                     zero=True,
                     train="loss=mse:target optimizer=adam lr=0.01")))
    out.append(("gpt2_momentum_dp2_tp2_zero2",
                dict(gpt, plan="dp=2,tp=2,mbs=1,zero=2", ranks=4, zero=True,
                     train="loss=softmax-cross-entropy:labels "
                           "optimizer=momentum lr=0.1")))
    # ZeRO-3: each replica keeps its block of every weight its stages
    # train, and every stage call gets the weights gathered; in pipeline
    # stages, and with data parallelism alone over 2 micro-batches a
    # replica (GPT-2: the tied embedding's block serves both readers).
    out.append(("mlp_adam_dp2_pp2_zero3_1f1b",
                dict(mlp, plan="dp=2,pp=2,mbs=2,schedule=1f1b,zero=3",
                     ranks=4, zero=True,
                     train="loss=mse:target optimizer=adam lr=0.01")))
    # ZeRO-3 with ZB-H1 and full recomputation: the split backward calls
    # and the recomputed forward each gather the weights again.
    out.append(("mlp_adam_dp2_pp2_zero3_zbh1_recompute",
                dict(mlp, plan="dp=2,pp=2,mbs=2,schedule=zb-h1,"
                               "recompute=full,zero=3",
                     ranks=4, zero=True,
                     train="loss=mse:target optimizer=adam lr=0.01")))
    out.append(("gpt2_adam_dp2_mb2_zero3",
                dict(gpt, plan="dp=2,mbs=1,zero=3", ranks=2, zero=True,
                     train="loss=softmax-cross-entropy:labels "
                           "optimizer=adam lr=0.001")))
    # ZeRO-3 with tensor parallelism: each tensor rank keeps its 2
    # replicas' blocks of its part of every split weight (and blocks of the
    # whole of the weights every tensor rank holds).
    out.append(("mlp_adam_dp2_tp2_zero3",
                dict(mlp, plan="dp=2,tp=2,mbs=2,zero=3", ranks=4, zero=True,
                     train="loss=mse:target optimizer=adam lr=0.01")))
    out.append(("gpt2_momentum_dp2_tp2_zero3",
                dict(gpt, plan="dp=2,tp=2,mbs=1,zero=3", ranks=4, zero=True,
                     train="loss=softmax-cross-entropy:labels "
                           "optimizer=momentum lr=0.1")))
    out.append(("mlp_momentum_dp2_pp2_zero1_gpipe",
                dict(mlp, plan="dp=2,pp=2,mbs=2,schedule=gpipe,zero=1",
                     ranks=4, zero=True,
                     train="loss=mse:target optimizer=momentum lr=0.01")))
    # Asynchronous schedules against async_reference (the same delayed
    # updates applied by one process).
    for kind in ("pipedream", "2bw"):
        for opt in ("sgd lr=0.05", "adam lr=0.01"):
            out.append((f"mlp_{opt.split()[0]}_pp2_{kind}",
                        dict(mlp, plan=f"pp=2,mbs=2,schedule={kind}",
                             reference=async_reference,
                             train="loss=mse:target optimizer=" + opt)))
    # With data parallelism inside the stages: PipeDream averages each
    # micro-batch's gradients over the replicas before its update.
    for kind in ("pipedream", "2bw"):
        out.append((f"gpt2_sgd_pp2_{kind}",
                    dict(gpt, plan=f"pp=2,mbs=1,schedule={kind}", train=sgd,
                         reference=async_reference)))
    # With tensor parallelism inside the stages: each tp rank stashes (or
    # double-buffers) its own parts of the weights; the tp all-reduces run
    # inside the stage calls, so the updates are one process's. GPT-2's
    # attention and MLP blocks under PipeDream, and the MLP with 2BW and
    # dp replicas of each stage's tp group too (8 ranks; last_update is
    # compared, put together from the tp ranks' parts).
    out.append(("gpt2_sgd_pp2_tp2_pipedream",
                dict(gpt, plan="tp=2,pp=2,mbs=1,schedule=pipedream",
                     ranks=4, train=sgd, reference=async_reference)))
    out.append(("mlp_sgd_dp2_tp2_pp2_2bw",
                dict(mlp, plan="dp=2,tp=2,pp=2,mbs=2,schedule=2bw",
                     ranks=8, reference=async_reference)))
    out.append(("mlp_sgd_dp2_pp2_pipedream",
                dict(mlp, plan="dp=2,pp=2,mbs=2,schedule=pipedream", ranks=4,
                     reference=async_reference)))
    out.append(("mlp_adam_pp2_replicas21_2bw",
                dict(mlp, plan="pp=2,mbs=2,schedule=2bw,replicas=2/1", ranks=3,
                     reference=async_reference,
                     train="loss=mse:target optimizer=adam lr=0.01")))
    # PipeMare against pipemare_reference (float64, so the tolerance is
    # run_training.py's for float32 programs against float64 references):
    # learning-rate rescheduling and discrepancy correction, each alone and
    # together, over two and three stages.
    rng2 = np.random.default_rng(12)
    xd = rng2.standard_normal((8, 8)).astype(np.float32)
    td = rng2.standard_normal((8, 4)).astype(np.float32)
    deep = dict(model=deep_mlp, input_shape="x:2x8", batch=8, steps=10,
                feeds=[("x", xd), ("target", td)], rtol=1e-4,
                reference=pipemare_reference)
    for tag, plan, opt, ranks in (
            ("pp2", "pp=2,mbs=2,schedule=pipemare,pipemare_warmup=12",
             "sgd lr=0.05", 2),
            ("pp2_nocorrection", "pp=2,mbs=2,schedule=pipemare,"
             "pipemare_warmup=12,pipemare_decay=1", "sgd lr=0.05", 2),
            ("pp3", "pp=3,mbs=2,schedule=pipemare,pipemare_decay=0.3",
             "adam lr=0.01", 3),
            # Tensor parallelism inside the stages (each stage's two layers
            # a column- and a row-parallel one): each tp rank corrects and
            # keeps the velocity of its own parts.
            ("pp2_tp2", "pp=2,tp=2,mbs=2,schedule=pipemare,"
             "pipemare_warmup=12", "sgd lr=0.05", 4)):
        out.append((f"deep_mlp_{opt.split()[0]}_{tag}_pipemare",
                     dict(deep, plan=plan, ranks=ranks,
                          train="loss=mse:target optimizer=" + opt)))
    out.append(("mlp_adam_dp2_pp2_2bw",
                dict(mlp, plan="dp=2,pp=2,mbs=2,schedule=2bw", ranks=4,
                     reference=async_reference,
                     train="loss=mse:target optimizer=adam lr=0.01")))
    # ZeRO inside the stages changes where the optimizer state lives, not
    # the numbers: the same references as without it, the Adam moments put
    # together from the replicas' blocks. PipeDream and PipeMare shard each
    # micro-batch's update (zero=1; zero=2 reduce-scatters each gradient
    # inside the backward call), 2BW its step's (zero=1 and 2).
    adam = "loss=mse:target optimizer=adam lr=0.01"
    out.append(("mlp_adam_dp2_pp2_pipedream",
                dict(mlp, plan="dp=2,pp=2,mbs=2,schedule=pipedream", ranks=4,
                     reference=async_reference, train=adam)))
    for z in (1, 2):
        out.append((f"mlp_adam_dp2_pp2_zero{z}_pipedream",
                    dict(mlp, plan="dp=2,pp=2,mbs=2,schedule=pipedream,"
                         f"zero={z}", ranks=4, zero=True,
                         reference=async_reference, train=adam)))
    # With tp=2 too (8 ranks): each tensor rank shards its part of the
    # weights' state (zero=2: and of the gradients) over its own replicas.
    for z in (1, 2):
        out.append((f"mlp_adam_dp2_tp2_pp2_zero{z}_pipedream",
                    dict(mlp, plan="dp=2,tp=2,pp=2,mbs=2,schedule=pipedream,"
                         f"zero={z}", ranks=8, zero=True,
                         reference=async_reference, train=adam,
                         tp_split=("w1",))))
    for z in (1, 2):
        out.append((f"mlp_adam_dp2_pp2_zero{z}_2bw",
                    dict(mlp, plan=f"dp=2,pp=2,mbs=2,schedule=2bw,zero={z}",
                         ranks=4, zero=True, reference=async_reference,
                         train=adam)))
    # 2BW with per-stage replicas 2/1 and zero=1: stage 0's two replicas
    # reduce-scatter their shares of the step's mean gradient (3 ranks).
    out.append(("mlp_adam_pp2_replicas21_zero1_2bw",
                dict(mlp, plan="pp=2,mbs=2,schedule=2bw,replicas=2/1,zero=1",
                     ranks=3, zero=True, reference=async_reference,
                     train=adam)))
    pm_dp = "dp=2,pp=2,mbs=2,schedule=pipemare,pipemare_warmup=12"
    out.append(("deep_mlp_adam_dp2_pp2_pipemare",
                dict(deep, plan=pm_dp, ranks=4, train=adam)))
    for z in (1, 2):
        out.append((f"deep_mlp_adam_dp2_pp2_zero{z}_pipemare",
                    dict(deep, plan=pm_dp + f",zero={z}", ranks=4, zero=True,
                         train=adam)))
    # PipeDream and PipeMare with per-stage replicas: every stage updates
    # once per round of lcm(replicas) = 2 micro-batches on the round's mean
    # gradient (a replica's share summed over the stage's replicas), as one
    # process's step on the round's rows: async_reference / pipemare_reference
    # with their rounds (async_updates).
    out.append(("mlp_adam_pp2_replicas21_pipedream",
                dict(mlp, plan="pp=2,mbs=2,schedule=pipedream,replicas=2/1",
                     ranks=3, reference=async_reference, train=adam)))
    out.append(("mlp_sgd_pp2_replicas12_pipedream",
                dict(mlp, plan="pp=2,mbs=2,schedule=pipedream,replicas=1/2",
                     ranks=3, reference=async_reference)))
    # With zero=1 stage 0's two replicas reduce-scatter their shares of
    # each round's mean (sum), update their blocks and gather the weights.
    out.append(("mlp_adam_pp2_replicas21_zero1_pipedream",
                dict(mlp, plan="pp=2,mbs=2,schedule=pipedream,replicas=2/1,"
                     "zero=1", ranks=3, zero=True, reference=async_reference,
                     train=adam)))
    out.append(("deep_mlp_adam_pp2_replicas21_pipemare",
                dict(deep, plan="pp=2,mbs=2,schedule=pipemare,replicas=2/1,"
                     "pipemare_warmup=12", ranks=3, train=adam)))
    # Batch norm (the small ResNet): each micro-batch normalises with its
    # own statistics and the running statistics follow the micro-batches in
    # order, so the reference is one process accumulating the same 4
    # micro-batches. With full recomputation the backward's second forward
    # must not update them again.
    images, classes = family_data("resnet_bn", rng, lambda g: (
        g.standard_normal((8, 3, 32, 32)).astype(np.float32),
        g.integers(0, 10, (8,)).astype(np.int64)))
    resnet = dict(model=small_resnet_model, input_shape="image:2x3x32x32",
                  batch=8, feeds=[("image", images), ("labels", classes)],
                  steps=6, accumulate=True, kinks=True,
                  train="loss=softmax-cross-entropy:labels optimizer=sgd "
                        "lr=0.05")
    out.append(("resnet_bn_sgd_pp2_gpipe",
                dict(resnet, plan="pp=2,mbs=2,schedule=gpipe")))
    out.append(("resnet_bn_sgd_pp2_interleaved",
                dict(resnet, plan="pp=2,mbs=2,schedule=interleaved,chunks=2")))
    out.append(("resnet_bn_adam_pp2_1f1b_recompute",
                dict(resnet, plan="pp=2,mbs=2,schedule=1f1b,recompute=full",
                     train="loss=softmax-cross-entropy:labels optimizer=adam "
                           "lr=0.001")))
    # Channel-parallel convolutions (tensor parallelism of the CNN): the
    # stem and each block's second convolution keep their rank's output
    # channels, the convolutions after them their input channels (partial
    # sums all-reduced), batch norm, relu, pooling and the first block's
    # residual add work on the rank's channels, the second block's residual
    # gathers them. Batch statistics are per channel, so exact on a split.
    # Under dp each replica keeps its own running statistics (as DDP
    # without SyncBatchNorm), so those are not compared there.
    conv_split = ("stem.w", "stem.bn.s", "stem.bn.m", "l1.a.w", "l1.b.w",
                  "l2.a.w", "l2.b.bn.v", "l2.d.w")
    out.append(("resnet_bn_sgd_tp2",
                dict(resnet, plan="tp=2,mbs=2", tp_split=conv_split)))
    out.append(("resnet_bn_adam_tp2",
                dict(resnet, plan="tp=2,mbs=2", tp_split=conv_split,
                     train="loss=softmax-cross-entropy:labels optimizer=adam "
                           "lr=0.001")))
    out.append(("resnet_bn_sgd_dp2_tp2",
                dict(resnet, plan="dp=2,tp=2,mbs=2", ranks=4,
                     tp_split=conv_split, per_replica=RUNNING_STATS)))
    out.append(("resnet_bn_adam_dp2_tp2",
                dict(resnet, plan="dp=2,tp=2,mbs=2", ranks=4,
                     tp_split=conv_split, per_replica=RUNNING_STATS,
                     train="loss=softmax-cross-entropy:labels optimizer=adam "
                           "lr=0.001")))
    # Pipelined under sequence parallelism: the convolutions' sums stay
    # all-reduces, so nothing splits by tokens, and the boundary after the
    # second block (stages=3; the first block's output is split by
    # channels), whole on every tensor rank, goes by scatter/gather as
    # without sp (each tensor rank sends its half of the flattened
    # activation and of its gradient, the receiver all-gathers the whole).
    out.append(("resnet_bn_sgd_tp2_pp2_1f1b_sp",
                dict(resnet, plan="tp=2,pp=2,mbs=2,schedule=1f1b,sp=1,stages=3",
                     ranks=4, tp_split=conv_split, boundary_parts=True)))
    # The branch check those cases fall back on, tried on every CPU.
    out.append(("resnet_bn_sgd_kink_check_selftest",
                dict(kink_selftest=True, model=small_resnet_model,
                     train=resnet["train"], input_shape=resnet["input_shape"],
                     batch=resnet["batch"], feeds=resnet["feeds"],
                     steps=resnet["steps"])))
    # Its inference (batch norm with the running statistics) at tp=2, 2
    # micro-batches of 2 images, and at tp=2 x pp=2.
    conv_fwd = dict(forward=True, model=small_resnet_model,
                    input_shape="image:2x3x32x32",
                    feeds=[("image", images[:4])], batch=4, ranks=2,
                    plan="tp=2,mbs=2",
                    tp_split=("stem.w", "stem.bn.s", "l1.a.w", "l1.b.w",
                              "l2.a.w", "l2.b.w", "l2.d.w"))
    out.append(("resnet_forward_tp2", conv_fwd))
    out.append(("resnet_forward_tp2_pp2",
                dict(conv_fwd, plan="tp=2,pp=2,mbs=2", ranks=4)))
    # Edge-cloud split training: the search splits the MLP between a phone
    # and a cloud GPU over Wi-Fi with layer 0 (and the input) pinned to the
    # phone, choosing the split and the schedule; the split program on 2
    # ranks trains as one process does.
    out.append(("mlp_adam_edge_cloud_split",
                dict(mlp, plan="pin=0-0@phone-soc,mbs=2",
                     search="edge-cloud-wifi",
                     train="loss=mse:target optimizer=adam lr=0.01")))
    return out


def run_reshard_case(compiler, work, name, model, train, batch, feeds,
                     first, second, steps, rtol=RTOL):
    """A checkpoint written under one plan, resumed under another: `steps`
    steps under `first`, --save-state 'ckpt/{rank}', `steps` more under
    `second` from --load-state 'ckpt/{rank}', against one process training
    2 * `steps` steps without a break. Each side is (plan, input shape,
    ranks); plan None is one process on the whole batch. The resumed run
    re-shards (each tensor from the checkpoint folders that hold it, whole
    or in its tensor-parallel parts); its loss curve and state must follow
    the uninterrupted run within `rtol`."""
    opt = os.path.join(os.path.dirname(compiler), "dist-opt")
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    args = save_feeds(d, feeds)
    env = dict(os.environ, OMP_NUM_THREADS="1", OMP_WAIT_POLICY="PASSIVE")

    def build(tag, plan, shape, ranks):
        exe = os.path.join(d, tag + ".bin")
        src = model
        if plan:
            src = os.path.join(d, tag + ".mlir")
            p = subprocess.run([opt, model, "--input-shape=" + shape,
                                f"--dist-cluster=cpu-xeon-2s:{max(1, (ranks + 1) // 2)}",
                                "--dist-plan=" + plan, f"--dist-batch={batch}",
                                "-o", src], capture_output=True, text=True)
            if p.returncode != 0:
                raise RuntimeError(f"dist-opt --dist-plan={plan}: {p.stderr[-1500:]}")
        cmd = [compiler, src, "--train=" + train, "-o", exe]
        if not plan:
            cmd.insert(2, "--input-shape=" + shape)
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"dist-compile {plan or 'one process'}: {p.stderr[-1500:]}")
        return exe

    def run(exe, ranks, extra):
        cmd = [exe, "--steps", str(steps), "--weights-dir",
               os.path.dirname(model), "-o", d] + extra + args
        if ranks > 1:
            mpirun = mpirun_command(ranks)
            if not mpirun:
                raise RuntimeError("mpirun not found: install openmpi-bin")
            cmd = mpirun + cmd
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                           env=env)
        if p.returncode != 0:
            raise RuntimeError(f"{os.path.basename(exe)} {' '.join(extra)}: "
                               f"{(p.stdout + p.stderr)[-1500:]}")
        return p

    whole = first[1].split(":")[0] + ":" + "x".join(
        [str(batch)] + first[1].split(":")[1].split("x")[1:])
    try:
        one = build("one", None, whole, 1)
        a = build("first", *first)
        b = build("second", *second)
        ckpt = os.path.join(d, "ckpt", "{rank}")
        final = os.path.join(d, "final", "{rank}")
        ref = os.path.join(d, "ref")
        p0 = subprocess.run([one, "--steps", str(2 * steps), "--save-state",
                             ref, "-o", d] + args, capture_output=True,
                            text=True, timeout=600, env=env)
        if p0.returncode != 0:
            return ["one process: " + (p0.stdout + p0.stderr)[-1500:]]
        p1 = run(a, first[2], ["--save-state", ckpt])
        p2 = run(b, second[2], ["--load-state", ckpt, "--save-state", final])
    except RuntimeError as e:
        return [str(e)]
    errors = []
    if "saved under another plan" not in p2.stderr:
        errors.append("the resumed run did not say it re-sharded the "
                      "checkpoint:\n" + p2.stderr[-800:])
    curve = np.concatenate([curve_of(p1.stdout), curve_of(p2.stdout)])
    msg = common.compare("loss curve", curve, curve_of(p0.stdout), rtol, 0.0)
    if msg:
        errors.append(msg)
    try:
        parts = assemble_shards([os.path.join(d, "final", str(r))
                                 for r in range(second[2])])
    except ValueError as e:
        return errors + [f"tensor-parallel shards: {e}"]
    for f in sorted(glob.glob(os.path.join(ref, "*.npy"))):
        base = os.path.basename(f)
        want = np.load(f)
        got = parts.get(base, [None])[0]
        for r in range(second[2]):
            path = os.path.join(d, "final", str(r), base)
            if got is None and os.path.exists(path) and base not in parts:
                got = np.load(path)
        if got is None:
            errors.append(f"{base}: the resumed run saved no copy of it")
            continue
        msg = compare_rel(base, got, want, rtol)
        if msg:
            errors.append(msg)
    if not errors:
        print(f"  {name}: {first[0] or 'one process'} for {steps} steps, then "
              f"{second[0] or 'one process'} for {steps}: loss "
              f"{curve[0]:.6g} -> {curve[-1]:.6g}, as without the break")
    return errors


def reshard_cases(rng):
    """Checkpoints re-sharded between plans (run_reshard_case)."""
    x = rng.standard_normal((8, 8)).astype(np.float32)
    t = rng.standard_normal((8, 4)).astype(np.float32)
    mlp = dict(model=MLP, batch=8, feeds=[("x", x), ("target", t)], steps=5,
               train="loss=mse:target optimizer=adam lr=0.01")
    pp2 = ("pp=2,mbs=2,schedule=1f1b", "x:2x8", 2)
    tp2 = ("tp=2,mbs=2", "x:2x8", 2)
    return [
        # Each pipeline rank saved its stage; each dp replica needs all.
        ("mlp_adam_reshard_pp2_to_dp2",
         dict(mlp, first=pp2, second=("dp=2,mbs=4", "x:4x8", 2))),
        # Each tensor rank saved its part; one process puts them together.
        ("mlp_adam_reshard_tp2_to_one",
         dict(mlp, first=tp2, second=(None, "x:8x8", 1))),
        # And the other way: each tensor rank takes its part.
        ("mlp_adam_reshard_one_to_tp2_pp2",
         dict(mlp, first=(None, "x:8x8", 1),
              second=("tp=2,pp=2,mbs=2,schedule=1f1b", "x:2x8", 4))),
        # ZeRO: each replica saved its block of the Adam moments and one
        # process puts them together; the other way, the 2 replicas of
        # each pipeline stage (ZeRO-2) cut them apart.
        ("mlp_adam_reshard_zero1_dp2_to_one",
         dict(mlp, first=("dp=2,zero=1,mbs=4", "x:4x8", 2),
              second=(None, "x:8x8", 1))),
        ("mlp_adam_reshard_one_to_zero2_dp2_pp2",
         dict(mlp, first=(None, "x:8x8", 1),
              second=("dp=2,pp=2,mbs=2,zero=2,schedule=1f1b", "x:2x8", 4))),
        # ZeRO-3 under tensor parallelism: each rank saved a block of its
        # tensor part of every weight and moment; one process puts the
        # blocks and parts together, and cuts them apart the other way.
        ("mlp_adam_reshard_zero3_dp2_tp2_to_one",
         dict(mlp, first=("dp=2,tp=2,mbs=2,zero=3", "x:2x8", 4),
              second=(None, "x:8x8", 1))),
        ("mlp_adam_reshard_one_to_zero3_dp2_tp2",
         dict(mlp, first=(None, "x:8x8", 1),
              second=("dp=2,tp=2,mbs=2,zero=3", "x:2x8", 4))),
    ] + moe_reshard_cases(rng)


def moe_reshard_cases(rng):
    """The MoE LLaMA's ZeRO-3 blocks under dp > ep with tensor parallelism
    (dp = 4, tp = 2, ep = 2): each rank saved a block of its tensor part of
    its experts (three levels of parts, shards.json's `part` and `outer`),
    which one process puts together (the other way, a whole state cut into
    such blocks, is what every ZeRO-3 case's first load does; its 8-rank
    case is left out of the suite for its time)."""
    ids = rng.integers(0, 64, (4, 8)).astype(np.int64)
    labels = rng.integers(0, 64, (4, 8)).astype(np.int64)
    moe = dict(model=moe_llama_tp_model, batch=4, steps=5,
               feeds=[("input_ids", ids), ("labels", labels)],
               train="loss=softmax-cross-entropy:labels optimizer=momentum "
                     "lr=0.1")
    blocks = ("dp=4,tp=2,ep=2,mbs=1,zero=3", "input_ids:1x8", 8)
    one = (None, "input_ids:4x8", 1)
    return [
        ("llama_moe_momentum_reshard_zero3_dp4_tp2_ep2_to_one",
         dict(moe, first=blocks, second=one)),
    ]


def gpt2_loss_model(work, nll=False):
    """GPT-2 (the fixture) with its loss in the graph, as a model exported
    with its loss returns it: the next-token labels are input_ids shifted
    left (Slice), the last position padded with the ignore index -100
    (Pad), and a SoftmaxCrossEntropyLoss (mean, ignore_index -100) of the
    logits viewed as [tokens, 512] and the labels as [tokens] is the only
    output; with `nll`, a LogSoftmax and a NegativeLogLikelihoodLoss
    instead (the importer builds it from graph ops, gathered whole under
    tensor parallelism)."""
    path = os.path.join(work, "gpt2_nll.onnx" if nll else "gpt2_loss.onnx")
    if os.path.exists(path):
        return path
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    model = onnx.load(GPT2)
    graph = model.graph
    vocab = graph.output[0].type.tensor_type.shape.dim[-1].dim_value
    consts = {"one": [1], "end": [2 ** 62], "seq_axis": [1],
              "pads": [0, 0, 0, 1], "rows": [-1], "logit_rows": [-1, vocab]}
    for name, value in consts.items():
        graph.initializer.append(numpy_helper.from_array(
            np.array(value, dtype=np.int64), "loss/" + name))
    graph.initializer.append(numpy_helper.from_array(
        np.array(-100, dtype=np.int64), "loss/ignore"))
    graph.node.extend([
        helper.make_node("Slice", ["input_ids", "loss/one", "loss/end",
                                   "loss/seq_axis"], ["loss/next"]),
        helper.make_node("Pad", ["loss/next", "loss/pads", "loss/ignore"],
                         ["loss/labels"]),
        helper.make_node("Reshape", ["loss/labels", "loss/rows"],
                         ["loss/label_rows"]),
        helper.make_node("Reshape", [graph.output[0].name, "loss/logit_rows"],
                         ["loss/logits"]),
    ] + ([
        helper.make_node("LogSoftmax", ["loss/logits"], ["loss/logp"], axis=1),
        helper.make_node("NegativeLogLikelihoodLoss",
                         ["loss/logp", "loss/label_rows"], ["loss"],
                         reduction="mean", ignore_index=-100),
    ] if nll else [
        helper.make_node("SoftmaxCrossEntropyLoss",
                         ["loss/logits", "loss/label_rows"], ["loss"],
                         reduction="mean", ignore_index=-100),
    ]))
    del graph.output[:]
    graph.output.append(
        helper.make_tensor_value_info("loss", TensorProto.FLOAT, []))
    onnx.save(model, path)
    return path


def gpt2_nll_loss_model(work):
    """gpt2_loss_model with LogSoftmax + NegativeLogLikelihoodLoss."""
    return gpt2_loss_model(work, nll=True)


def moe_llama_model(work, kv_heads=1):
    """A LLaMA of 2 blocks whose second is a mixture of experts (4 routed
    experts of width 16, top-2, one shared expert), written by
    dist-modelgen into `work` (its weights are the programs' own
    deterministic initialization). With 2 key/value heads tensor
    parallelism can give each of 2 ranks whole heads."""
    path = os.path.join(work, "moe_llama.onnx" if kv_heads == 1 else
                        f"moe_llama_kv{kv_heads}.onnx")
    if not os.path.exists(path):
        subprocess.run([os.path.join(BIN[0], "dist-modelgen"), "llama",
                        "--layers", "2", "--hidden", "16", "--heads", "2",
                        "--kv-heads", str(kv_heads), "--ffn-hidden", "32",
                        "--vocab",
                        "64", "--seq", "8", "--experts", "4", "--top-k", "2",
                        "--expert-ffn", "16", "--shared-experts", "1",
                        "--dense-layers", "1", "-o", path],
                       check=True, capture_output=True)
    return path


def mla_llama_model(work):
    """A LLaMA of 2 blocks with DeepSeek's multi-head latent attention (2
    heads, query rank 6, key/value rank 8, heads of 4 + 2 for queries and
    keys and 4 for values), written by dist-modelgen into `work` (its
    weights are the programs' own deterministic initialization)."""
    path = os.path.join(work, "mla_llama.onnx")
    if not os.path.exists(path):
        subprocess.run([os.path.join(BIN[0], "dist-modelgen"), "llama",
                        "--layers", "2", "--hidden", "16", "--heads", "2",
                        "--ffn-hidden", "32", "--vocab", "64", "--seq", "8",
                        "--kv-lora-rank", "8", "--q-lora-rank", "6",
                        "--qk-nope-head-dim", "4", "--qk-rope-head-dim", "2",
                        "--v-head-dim", "4", "-o", path],
                       check=True, capture_output=True)
    return path


def alibi_attention_model(work):
    """One attention block of 2 heads (hidden 8, head size 4, 8 positions,
    a vocabulary of 32) whose additive mask differs from head to head:
    ALiBi's biases, -slope_h (i - j) for key j at or before query i and
    finfo.min after it (slopes 1/2 and 1/4), a [1, 2, 8, 8] constant.
    Separate Q, K and V projections, a scale of 1/2, a row-parallel output
    projection with a residual, and an LM head; weights its own
    generator's."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    path = os.path.join(work, "alibi_attention.onnx")
    if os.path.exists(path):
        return path
    rng = np.random.default_rng(61)
    heads, size, seq, vocab = 2, 4, 8, 32
    hidden = heads * size
    w = lambda *shape: (0.5 * rng.standard_normal(shape)).astype(np.float32)
    distance = np.arange(seq)[:, None] - np.arange(seq)[None, :]
    slopes = np.array([0.5, 0.25], np.float32)[:, None, None]
    alibi = np.where(distance >= 0, -slopes * distance,
                     np.finfo(np.float32).min).astype(np.float32)[None]
    consts = dict(wte=w(vocab, hidden), wq=w(hidden, hidden),
                  wk=w(hidden, hidden), wv=w(hidden, hidden),
                  wo=w(hidden, hidden), head=w(hidden, vocab),
                  half=np.array(0.5, np.float32),
                  heads=np.array([-1, seq, heads, size], np.int64),
                  rows=np.array([-1, seq, hidden], np.int64))
    n = helper.make_node
    # A Constant node, not an initializer (which would be a trained weight).
    nodes = [n("Constant", [], ["alibi"],
               value=numpy_helper.from_array(alibi, "alibi")),
             n("Gather", ["wte", "input_ids"], ["x"])]
    for p in "qkv":
        nodes += [n("MatMul", ["x", "w" + p], [p + "2"]),
                  n("Reshape", [p + "2", "heads"], [p + "4"])]
    nodes += [
        n("Transpose", ["q4"], ["q"], perm=[0, 2, 1, 3]),
        n("Transpose", ["k4"], ["kt"], perm=[0, 2, 3, 1]),
        n("Transpose", ["v4"], ["v"], perm=[0, 2, 1, 3]),
        n("MatMul", ["q", "kt"], ["s"]),
        n("Mul", ["s", "half"], ["scaled"]),
        n("Add", ["scaled", "alibi"], ["biased"]),
        n("Softmax", ["biased"], ["p"], axis=-1),
        n("MatMul", ["p", "v"], ["o4"]),
        n("Transpose", ["o4"], ["o3"], perm=[0, 2, 1, 3]),
        n("Reshape", ["o3", "rows"], ["o"]),
        n("MatMul", ["o", "wo"], ["y"]),
        n("Add", ["x", "y"], ["h"]),
        n("MatMul", ["h", "head"], ["logits"])]
    graph = helper.make_graph(
        nodes, "alibi_attention",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64,
                                       ["N", seq])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                       ["N", seq, vocab])],
        [numpy_helper.from_array(v, k) for k, v in consts.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, path)
    return path


def moe_llama_tp_model(work):
    """moe_llama_model with 2 key/value heads (tensor parallelism)."""
    return moe_llama_model(work, kv_heads=2)


def small_resnet_model(work):
    """run_networks.py's small ResNet, written into `work`."""
    import run_networks
    path = os.path.join(work, "small_resnet_train.onnx")
    if not os.path.exists(path):
        run_networks.small_resnet(path)
    return path


def resnet_case(work):
    """run_networks.py's small ResNet (conv, batch norm, pooling, Gemm):
    4 micro-batches of 2 images through two stages."""
    import run_networks
    path = os.path.join(work, "small_resnet.onnx")
    run_networks.small_resnet(path)
    images = np.random.default_rng(5).standard_normal((8, 3, 32, 32)).astype(np.float32)
    return dict(pipeline=True, model=path, input_name="image", batch=2,
                microbatches=4, weights_dir=work, feeds=[("image", images)])


def trunk_branches_model(path, trunk=True, seed=3, width=512, heads=3,
                         classes=10):
    """A hierarchical DNN with real weights. With `trunk`: two Gemm+Relu
    layers (64 -> width -> width) shared by `heads` heads (Gemm+Relu of
    width, then a Gemm to `classes`; outputs head0, head1, ...), and a
    join, `joined` = head0 + head1 (the tail, on the trunk's device).
    Without: the heads read the input itself (an empty trunk: the input is
    sent to the heads' devices), and the tail is a Gemm of their Concat
    (`joined`) beside head0 returned as it is."""
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(seed)
    inits, nodes = [], []

    def gemm(x, name, cin, cout, relu):
        for suffix, shape in ((".w", [cout, cin]), (".b", [cout])):
            inits.append(numpy_helper.from_array(
                (rng.standard_normal(shape) / np.sqrt(cin)).astype(np.float32),
                name + suffix))
        nodes.append(helper.make_node("Gemm", [x, name + ".w", name + ".b"],
                                      [name + ".g"], transB=1))
        if not relu:
            return name + ".g"
        nodes.append(helper.make_node("Relu", [name + ".g"], [name + ".r"]))
        return name + ".r"

    x, cin = "x", 64
    if trunk:
        x = gemm(gemm(x, "trunk0", cin, width, True), "trunk1", width, width,
                 True)
        cin = width
    heads_out = []
    for k in range(heads):
        y = gemm(gemm(x, f"branch{k}.0", cin, width, True), f"branch{k}.head",
                 width, classes, False)
        nodes.append(helper.make_node("Identity", [y], [f"head{k}"]))
        heads_out.append(f"head{k}")
    if trunk:
        nodes.append(helper.make_node("Add", ["head0", "head1"], ["joined"]))
        outs = heads_out + ["joined"]
    else:
        nodes.append(helper.make_node("Concat", heads_out, ["cat"], axis=1))
        nodes.append(helper.make_node(
            "Identity", [gemm("cat", "tail", heads * classes, classes, False)],
            ["joined"]))
        outs = ["head0", "joined"]
    graph = helper.make_graph(
        nodes, "trunk_branches",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 64])],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, ["batch", classes])
         for o in outs], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    import onnx
    onnx.save(model, path)
    return path


def run_branches_case(compiler, work, name, cluster, batch, trunk=True):
    """Branch-parallel inference (dist-opt --dist-branches, issue 16): the
    trunk and the heads of trunk_branches_model placed by the planner on
    `cluster` for one batch, partitioned into one program per device
    (dist-partition: the pieces' DAG, values sent straight from the device
    computing them to each device reading them) and run by mpirun, one
    rank per device. The placement must use several devices, and every
    output (each head and the joined tail) must match one process running
    the whole model on the batch within 1e-6 relative."""
    opt, d = mpi_case_folder(compiler, work, name)
    if not d:
        return NO_MPIRUN
    model = trunk_branches_model(os.path.join(d, "trunk_branches.onnx"), trunk)
    shape = f"--input-shape=x:{batch}x64"
    planned, report = os.path.join(d, "planned.mlir"), os.path.join(d, "r.json")
    p = subprocess.run([opt, model, shape, f"--dist-cluster={cluster}",
                        "--dist-mode=infer", f"--dist-batch={batch}",
                        "--dist-search", "--dist-branches",
                        "--dist-report=" + report, "-o", planned],
                       capture_output=True, text=True)
    if p.returncode != 0:
        return ["dist-opt --dist-branches failed: " + p.stderr[-1500:]]
    print("  " + p.stdout.strip().replace("\n", "\n  "))
    branches = json.load(open(report))["branches"]
    devices = branches["best"]["piece_devices"]
    if branches["recorded"] != "branches" or len(set(devices)) < 2:
        return [f"the planner recorded {branches['recorded']} with pieces on "
                f"devices {devices}; this case needs a branch placement over "
                f"several devices"]
    ranks = max(devices) + 1
    exe, one = os.path.join(d, "branches.bin"), os.path.join(d, "one.bin")
    for cmd in ([compiler, planned, "-o", exe],
                [compiler, model, shape, "-o", one]):
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            return [f"{cmd[1]} failed to compile: {p.stderr[-1500:]}"]
    x = np.random.default_rng(9).standard_normal((batch, 64)).astype(np.float32)
    path = os.path.join(d, "x.npy")
    np.save(path, x)
    env = dict(os.environ, OMP_NUM_THREADS="1", OMP_WAIT_POLICY="PASSIVE")
    outs = {k: os.path.join(d, k) for k in ("branches", "one")}
    for o in outs.values():
        os.makedirs(o, exist_ok=True)
    p = subprocess.run(mpirun_command(ranks) +
                       [exe, f"x={path}", "--weights-dir", d, "-o",
                        outs["branches"]],
                       capture_output=True, text=True, timeout=600, env=env)
    if p.returncode != 0:
        return [f"mpirun -np {ranks} (branch placement) failed: "
                f"{(p.stdout + p.stderr)[-1500:]}"]
    p = subprocess.run([one, f"x={path}", "-o", outs["one"]],
                       capture_output=True, text=True, timeout=600, env=env)
    if p.returncode != 0:
        return ["single-process run failed: " + (p.stdout + p.stderr)[-1500:]]
    names = sorted(os.listdir(outs["one"]))
    if not names or sorted(os.listdir(outs["branches"])) != names:
        return [f"outputs differ: the placement wrote "
                f"{sorted(os.listdir(outs['branches']))}, one process {names}"]
    errors = []
    for n in names:
        got = np.load(os.path.join(outs["branches"], n))
        want = np.load(os.path.join(outs["one"], n))
        msg = compare_rel(n, got, want, 1e-6)
        if msg:
            errors.append(msg)
        else:
            print(f"  {name}: {n} {list(got.shape)} on {ranks} ranks (pieces "
                  f"on devices {devices}): max abs difference "
                  f"{float(np.max(np.abs(got.astype(np.float64) - want))):.3g}")
    return errors


def run_tp_forward_case(compiler, work, name, model, input_shape, plan,
                        batch, feeds, ranks, tp_split, rtol=RTOL):
    """Tensor-parallel inference: the forward program of `plan` (dist-compile
    --dist-plan=PLAN --dist-batch=BATCH, one micro-batch of `input_shape`)
    under `mpirun -np ranks` on the whole batch vs one process compiled for
    the whole batch: every output within `rtol` relative (a row-parallel
    matmul sums its partial products in another order). Each weight of
    `tp_split` must be loaded as a shard (the program's source), so the
    case fails when the plan runs it whole."""
    opt, d = mpi_case_folder(compiler, work, name)
    if not d:
        return NO_MPIRUN
    name0, dims = input_shape.split(":")
    whole_shape = name0 + ":" + "x".join([str(batch)] + dims.split("x")[1:])
    tp_bin, one = os.path.join(d, "tp.bin"), os.path.join(d, "one.bin")
    src = os.path.join(d, "tp.cpp")
    for cmd in ([compiler, model, "--input-shape=" + input_shape,
                 f"--dist-cluster=cpu-xeon-2s:{max(1, (ranks + 1) // 2)}",
                 "--dist-plan=" + plan, f"--dist-batch={batch}",
                 "--emit-source", src, "-o", tp_bin],
                [compiler, model, "--input-shape=" + whole_shape, "-o", one]):
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            return [f"dist-compile {' '.join(cmd[2:5])} failed: "
                    f"{p.stderr[-1500:]}"]
    text = open(src).read()
    errors = [f"{w}: the program loads it whole; the plan splits it"
              for w in tp_split
              if f'P.loadWeightShard("{w}"' not in text]
    args = save_feeds(d, feeds)
    env = dict(os.environ, OMP_NUM_THREADS="1", OMP_WAIT_POLICY="PASSIVE")
    outs = {k: os.path.join(d, k) for k in ("tp", "one")}
    for o in outs.values():
        os.makedirs(o, exist_ok=True)
    p = subprocess.run(mpirun_command(ranks) +
                       [tp_bin] + args + ["--weights-dir",
                                          os.path.dirname(model), "-o",
                                          outs["tp"]],
                       capture_output=True, text=True, timeout=600, env=env)
    if p.returncode != 0:
        return [f"mpirun -np {ranks} (tensor-parallel forward) failed: "
                f"{(p.stdout + p.stderr)[-1500:]}"]
    p = subprocess.run([one] + args + ["-o", outs["one"]],
                       capture_output=True, text=True, timeout=600, env=env)
    if p.returncode != 0:
        return ["single-process run failed: " + (p.stdout + p.stderr)[-1500:]]
    names = sorted(os.listdir(outs["one"]))
    if not names or sorted(os.listdir(outs["tp"])) != names:
        return errors + [f"outputs differ: tp wrote "
                         f"{sorted(os.listdir(outs['tp']))}, one process "
                         f"{names}"]
    for n in names:
        got = np.load(os.path.join(outs["tp"], n))
        want = np.load(os.path.join(outs["one"], n))
        msg = compare_rel(n, got, want, rtol)
        if msg:
            errors.append(msg)
        elif not errors:
            print(f"  {name}: {n} {list(got.shape)} on {ranks} ranks: max "
                  f"rel difference {float(np.max(np.abs(got.astype(np.float64) - want))) / max(float(np.max(np.abs(want))), 1e-30):.2g}")
    return errors


def run_one(compiler, work, name, c):
    """Runs one prepared case; its failure messages (empty: passed)."""
    if c.pop("branches", False):
        return run_branches_case(compiler, work, name, **c)
    if c.pop("pipeline", False):
        return run_pipeline_case(compiler, work, name, **c)
    if c.pop("forward", False):
        return run_tp_forward_case(compiler, work, name, **c)
    if c.pop("kink_selftest", False):
        return run_kink_selftest(compiler, work, name, **c)
    if c.pop("moe_selftest", False):
        return run_moe_checks_selftest(compiler, work, name, **c)
    if "first" in c:
        return run_reshard_case(compiler, work, name, **c)
    if "plan" in c:
        return run_pipeline_train_case(compiler, work, name, **c)
    return run_case(compiler, work, name, **c)


# The prepared cases, inherited by the forked workers (run_in_worker).
PREPARED = []
# The build's bin folder (main sets it), for the models written at run time.
BIN = [""]
# --data-seed (main sets it): None keeps every case's own data.
DATA_SEED = [None]


def family_data(family, rng, draw):
    """The data `draw(generator)` makes for a family of cases: from the
    suite's generator `rng`, or under --data-seed S from a generator of
    (S, `family`) instead. `rng` is drawn from either way, so the cases
    after the family keep their data; the seed shows whether a family's
    agreement holds for other data than its own (docs/distributed.md,
    "Numerics notes")."""
    data = draw(rng)
    if DATA_SEED[0] is None:
        return data
    return draw(np.random.default_rng(
        [DATA_SEED[0], zlib.crc32(family.encode())]))


def run_in_worker(job):
    """One case in a worker process: (errors, what it printed, seconds).
    An exception is the case's failure, not the suite's."""
    compiler, work, index = job
    name, c = PREPARED[index]
    t = time.time()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            errors = run_one(compiler, work, name, dict(c))
        except Exception:  # noqa: BLE001 - reported as the case's failure
            errors = ["the case raised:\n" + traceback.format_exc()]
    return errors, out.getvalue(), time.time() - t


def default_jobs():
    """Cases run at once: one per core this process may use, at most 4
    (each case's mpirun starts 2-8 ranks; compiling dominates a case)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    return max(1, min(cores, 4))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--junit")
    ap.add_argument("--keep", action="store_true", help="keep the work folder")
    ap.add_argument("-k", help="only cases whose name contains this")
    ap.add_argument("--data-seed", type=int, metavar="S",
                    help="draw the MoE and batch-norm ResNet families' data "
                         "from a generator seeded by S instead of their own "
                         "(the other cases keep theirs)")
    ap.add_argument("-j", "--jobs", type=int, default=default_jobs(),
                    help="cases run at once, each in its own process "
                         "(default: the usable cores, at most 4)")
    a = ap.parse_args()
    compiler = common.tool(a.build, "dist-compile")
    BIN[0] = os.path.dirname(compiler)
    DATA_SEED[0] = a.data_seed
    work = common.work_dir("dist-distributed")
    t0 = time.time()
    # Models the cases share are written here, once, before any case runs
    # (the workers would otherwise race to write the same file).
    for name, c in cases():
        if a.k and a.k not in name:
            continue
        if c == "resnet":
            c = resnet_case(work)
        if callable(c.get("model")):
            c = dict(c, model=c["model"](work))
        PREPARED.append((name, c))
    jobs = [(compiler, work, i) for i in range(len(PREPARED))]
    if a.jobs > 1 and len(jobs) > 1:
        pool = multiprocessing.get_context("fork").Pool(min(a.jobs, len(jobs)))
        outcomes = pool.imap(run_in_worker, jobs)
    else:
        pool, outcomes = None, map(run_in_worker, jobs)
    results = []
    for (name, _), (errors, printed, seconds) in zip(PREPARED, outcomes):
        status = "failed" if errors else "passed"
        results.append((name, status, "\n".join(errors)))
        sys.stdout.write(printed)
        print(f"{status.upper()}: {name} ({seconds:.1f}s)", flush=True)
        for e in errors:
            print("  " + e.replace("\n", "\n  "))
    if pool:
        pool.close()
        pool.join()
    if a.keep:
        print("work folder: " + work)
    else:
        shutil.rmtree(work, ignore_errors=True)
    return common.finish("distributed", results, a.junit, time.time() - t0)


if __name__ == "__main__":
    sys.exit(main())
