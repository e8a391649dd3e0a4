#!/usr/bin/env python3
"""PyTorch training reference for an ONNX model: float64 autograd.

Runs the ONNX graph node by node with PyTorch operators (float tensors in
float64), adds a loss, and trains every float initializer for --steps
steps with torch.optim.SGD or torch.optim.Adam on one fixed batch. Prints
nothing; writes an .npz with `losses` (one per step, computed before that
step's update), the final value of every trained initializer under its
ONNX name, and under `gradmax/NAME` the largest |gradient| each element
saw. The initializers are the leaf tensors, so an initializer used by
several nodes is one parameter, as in the compiled program; an Identity of
an initializer (how torch.onnx writes parameters with equal values, e.g.
zero biases, once) is a parameter of its own, as in the PyTorch module and
in the compiled program (the importer's translateIdentity).

This is the independent reference of test/numerics/run_training.py: the
forward semantics come from the ONNX operator definitions, the gradients
from torch.autograd and the updates from torch.optim, none of it shared
with DistOpt. It needs Debian's python3-torch (run it with /usr/bin/python3;
the test venv has no torch), python3-onnx and python3-numpy.

    /usr/bin/python3 torch_reference.py --model gpt2.onnx \\
        --feed input_ids=ids.npy --labels labels.npy \\
        --optimizer adam --lr 1e-3 --steps 20 --out ref.npz

Batch normalization runs in training form (batch statistics), as
dist-autodiff converts it. Only the operators the training fixtures use
are implemented; any other fails with its name.
"""
import argparse
import sys

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import numpy_helper

# The float type every float tensor is computed in (--dtype).
FLOAT = torch.float64

ONNX_TO_TORCH = {
    onnx.TensorProto.FLOAT: None,
    onnx.TensorProto.DOUBLE: None,
    onnx.TensorProto.FLOAT16: None,
    onnx.TensorProto.INT64: torch.int64,
    onnx.TensorProto.INT32: torch.int64,
    onnx.TensorProto.BOOL: torch.bool,
}


def to_tensor(array):
    t = torch.from_numpy(np.array(array))
    return t.to(FLOAT) if t.is_floating_point() else t


def ints(t):
    return [int(v) for v in t.reshape(-1).tolist()]


def attr(node, name, default=None):
    for a in node.attribute:
        if a.name == name:
            return onnx.helper.get_attribute_value(a)
    return default


def conv_pads(pads, rank):
    """ONNX [b0, b1, ..., e0, e1, ...] as F.pad's last-dim-first pairs."""
    out = []
    for i in reversed(range(rank)):
        out += [pads[i], pads[i + rank]]
    return out


def scatter_reduce(data, axis, idx, updates, reduction):
    """ONNX's scatter reductions (indices already wrapped) by PyTorch's
    scatter / scatter_reduce with include_self, whose backward is the
    reference for the gradient rules."""
    if reduction == b"none":
        return data.scatter(axis, idx, updates)
    if reduction == b"add":
        return data.scatter_add(axis, idx, updates)
    torch_name = {b"mul": "prod", b"max": "amax", b"min": "amin"}[reduction]
    return data.scatter_reduce(axis, idx, updates, reduce=torch_name, include_self=True)


def run_node(node, x, training):
    op = node.op_type
    a = lambda k: attr(node, k)  # noqa: E731
    if op in ("Identity", "Dropout"):
        return [x[0]]
    if op == "Constant":
        return [to_tensor(numpy_helper.to_array(a("value")))]
    if op == "ConstantOfShape":
        v = a("value")
        fill = numpy_helper.to_array(v) if v is not None else np.zeros(1, np.float32)
        return [torch.full(ints(x[0]), fill.item(), dtype=to_tensor(fill).dtype)]
    if op == "Shape":
        return [torch.tensor(list(x[0].shape), dtype=torch.int64)]
    if op == "Cast":
        return [x[0].to(ONNX_TO_TORCH[a("to")] or FLOAT)]
    if op == "Gather":
        axis = a("axis") or 0
        idx = x[1]
        idx = torch.where(idx < 0, idx + x[0].shape[axis], idx)
        return [torch.index_select(x[0], axis, idx.reshape(-1))
                .reshape(x[0].shape[:axis] + idx.shape + x[0].shape[axis + 1:])]
    if op == "Unsqueeze":
        out = x[0]
        rank = out.dim() + len(ints(x[1]))
        for ax in sorted(v % rank for v in ints(x[1])):
            out = out.unsqueeze(ax)
        return [out]
    if op == "Squeeze":
        axes = ints(x[1]) if len(x) > 1 else [i for i, d in enumerate(x[0].shape) if d == 1]
        out = x[0]
        for ax in sorted((v % x[0].dim() for v in axes), reverse=True):
            out = out.squeeze(ax)
        return [out]
    if op == "Concat":
        return [torch.cat(x, dim=a("axis"))]
    if op == "Reshape":
        shape = ints(x[1])
        shape = [x[0].shape[i] if d == 0 else d for i, d in enumerate(shape)]
        return [x[0].reshape(shape)]
    if op == "Flatten":
        axis = a("axis") if a("axis") is not None else 1
        return [x[0].reshape(int(np.prod(x[0].shape[:axis])), -1)]
    if op == "Transpose":
        perm = a("perm") or list(reversed(range(x[0].dim())))
        return [x[0].permute(*perm)]
    if op == "Slice":
        starts, ends = ints(x[1]), ints(x[2])
        axes = ints(x[3]) if len(x) > 3 else list(range(len(starts)))
        steps = ints(x[4]) if len(x) > 4 else [1] * len(starts)
        out = x[0]
        for s, e, ax, st in zip(starts, ends, axes, steps):
            if st != 1:
                raise NotImplementedError("Slice with steps")
            n = out.shape[ax]
            s = max(0, min(n, s + n if s < 0 else s))
            e = max(0, min(n, e + n if e < 0 else e))
            out = out.narrow(ax, s, max(0, e - s))
        return [out]
    if op == "Split":
        sizes = ints(x[1]) if len(x) > 1 else None
        axis = a("axis") or 0
        if sizes is None:
            sizes = [x[0].shape[axis] // len(node.output)] * len(node.output)
        return list(torch.split(x[0], sizes, dim=axis))
    if op == "Expand":
        return [torch.broadcast_to(x[0], torch.broadcast_shapes(x[0].shape, tuple(ints(x[1]))))]
    if op == "Trilu":
        k = int(x[1].item()) if len(x) > 1 else 0
        upper = a("upper") if a("upper") is not None else 1
        return [torch.triu(x[0], k) if upper else torch.tril(x[0], k)]
    if op == "ReduceMean":
        axes = a("axes") if a("axes") is not None else list(range(x[0].dim()))
        keep = a("keepdims") if a("keepdims") is not None else 1
        return [x[0].mean(dim=tuple(axes), keepdim=bool(keep))]
    if op == "TopK":
        # A stable sort: of equal values the lower index comes first, as
        # onnxruntime orders them (torch.topk leaves ties unordered).
        axis = a("axis") if a("axis") is not None else -1
        largest = a("largest") if a("largest") is not None else 1
        order = torch.sort(x[0].detach(), dim=axis, descending=bool(largest),
                           stable=True).indices
        idx = order.narrow(axis, 0, ints(x[1])[0])
        return [torch.gather(x[0], axis, idx), idx]
    if op == "GatherElements":
        axis = a("axis") or 0
        idx = torch.where(x[1] < 0, x[1] + x[0].shape[axis], x[1])
        return [torch.gather(x[0], axis, idx)]
    if op == "ScatterElements":
        axis = a("axis") or 0
        idx = torch.where(x[1] < 0, x[1] + x[0].shape[axis], x[1])
        return [scatter_reduce(x[0], axis, idx, x[2], a("reduction") or b"none")]
    if op == "ScatterND":
        # The data as rows [indexed dims, rest]; each tuple's row number
        # (negative indices wrapped) repeated along the rest.
        k = x[1].shape[-1]
        dims = torch.tensor(x[0].shape[:k])
        idx = torch.where(x[1] < 0, x[1] + dims, x[1])
        strides = torch.tensor([int(np.prod(x[0].shape[j + 1:k])) for j in range(k)])
        rows = (idx * strides).sum(-1).reshape(-1, 1)
        data = x[0].reshape(int(np.prod(x[0].shape[:k])), -1)
        updates = x[2].reshape(rows.shape[0], data.shape[1])
        out = scatter_reduce(data, 0, rows.expand(-1, data.shape[1]), updates,
                             a("reduction") or b"none")
        return [out.reshape(x[0].shape)]
    if op == "ArgMax":
        axis = a("axis") or 0
        keep = a("keepdims") if a("keepdims") is not None else 1
        return [torch.argmax(x[0], dim=axis, keepdim=bool(keep))]
    if op == "Tile":
        return [x[0].repeat(*ints(x[1]))]
    if op == "Range":
        return [torch.arange(x[0].item(), x[1].item(), x[2].item(), dtype=x[0].dtype)]
    if op == "Where":
        return [torch.where(x[0], x[1], x[2])]
    binary = {"Add": torch.add, "Sub": torch.sub, "Mul": torch.mul, "Div": torch.div,
              "Pow": torch.pow}
    if op in binary:
        if op == "Div" and not x[0].is_floating_point():
            return [torch.div(x[0], x[1], rounding_mode="trunc")]
        return [binary[op](x[0], x[1])]
    unary = {"Tanh": torch.tanh, "Relu": torch.relu, "Sqrt": torch.sqrt,
             "Exp": torch.exp, "Neg": torch.neg, "Sigmoid": torch.sigmoid,
             "Erf": torch.erf, "Cos": torch.cos, "Sin": torch.sin}
    if op in unary:
        return [unary[op](x[0])]
    if op == "MatMul":
        return [torch.matmul(x[0], x[1])]
    if op == "Gemm":
        m0 = x[0].t() if a("transA") else x[0]
        m1 = x[1].t() if a("transB") else x[1]
        y = (a("alpha") if a("alpha") is not None else 1.0) * (m0 @ m1)
        if len(x) > 2:
            y = y + (a("beta") if a("beta") is not None else 1.0) * x[2]
        return [y]
    if op == "Softmax":
        return [torch.softmax(x[0], dim=a("axis") if a("axis") is not None else -1)]
    if op == "LayerNormalization":
        axis = a("axis") if a("axis") is not None else -1
        axis %= x[0].dim()
        eps = a("epsilon") if a("epsilon") is not None else 1e-5
        return [F.layer_norm(x[0], x[0].shape[axis:], x[1],
                             x[2] if len(x) > 2 else None, eps)]
    if op == "BatchNormalization":
        eps = a("epsilon") if a("epsilon") is not None else 1e-5
        # Training form: normalise with the batch mean and biased variance.
        # Running statistics are inputs here and never affect the loss.
        return [F.batch_norm(x[0], x[3].detach().clone(), x[4].detach().clone(),
                             x[1], x[2], training=training, eps=eps)]
    if op == "Conv":
        rank = x[0].dim() - 2
        pads = a("pads") or [0] * (2 * rank)
        y = F.pad(x[0], conv_pads(pads, rank)) if any(pads) else x[0]
        conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[rank]
        return [conv(y, x[1], x[2] if len(x) > 2 else None,
                     stride=a("strides") or 1, dilation=a("dilations") or 1,
                     groups=a("group") or 1)]
    if op == "MaxPool":
        rank = x[0].dim() - 2
        pads = a("pads") or [0] * (2 * rank)
        y = F.pad(x[0], conv_pads(pads, rank), value=-float("inf")) if any(pads) else x[0]
        pool = {1: F.max_pool1d, 2: F.max_pool2d}[rank]
        return [pool(y, a("kernel_shape"), stride=a("strides") or 1,
                     dilation=a("dilations") or 1)]
    if op == "GlobalAveragePool":
        return [x[0].mean(dim=tuple(range(2, x[0].dim())), keepdim=True)]
    raise NotImplementedError(f"ONNX operator {op} has no PyTorch mapping in "
                              "torch_reference.py; add one")


class Kinks:
    """The loss's branch points met on the way: a ReLU input at 0, a max
    pool's two largest window values equal. Where one is nearer than
    `margin` (relative to the tensor's largest |value|), float32 round-off
    can take either branch, and each branch gives a different gradient.
    Records those places as (step, node, flat index, margin); `flips` (a set
    of such (step, node, index)) forces the other branch there, which gives
    the float64 trajectory that round-off leading the other way follows.
    Exact ties (a window of zeros after a ReLU) are no choice: every
    implementation takes the first, and all give the same gradient."""

    def __init__(self, margin, flips):
        self.margin = margin
        self.flips = set(flips)
        self.step = 0
        self.events = []

    def _record(self, node, near, dist, scale):
        for idx in near.reshape(-1).nonzero().reshape(-1).tolist():
            self.events.append((self.step, node, idx,
                                float(dist.reshape(-1)[idx] / scale)))

    def _flipped(self, node, shape):
        mask = torch.zeros(shape, dtype=torch.bool).reshape(-1)
        for step, n, idx in self.flips:
            if step == self.step and n == node:
                mask[idx] = True
        return mask.reshape(shape)

    def relu(self, node, x):
        xd = x.detach()
        scale = xd.abs().max()
        if self.margin and scale > 0:
            self._record(node, (xd.abs() < self.margin * scale) & (xd != 0),
                         xd.abs(), scale)
        positive = (xd > 0) ^ self._flipped(node, xd.shape)
        return torch.where(positive, x, torch.zeros_like(x))

    def maxpool(self, node, onnx_node, x, y):
        kernel = attr(onnx_node, "kernel_shape")
        strides = attr(onnx_node, "strides") or [1] * len(kernel)
        pads = attr(onnx_node, "pads") or [0] * (2 * len(kernel))
        if len(kernel) != 2 or any(d != 1 for d in attr(onnx_node, "dilations") or []):
            return y
        xp = F.pad(x, conv_pads(pads, 2), value=-float("inf"))
        u = xp.unfold(2, kernel[0], strides[0]).unfold(3, kernel[1], strides[1])
        u = u[:, :, :y.shape[2], :y.shape[3]].reshape(*y.shape, -1)
        top = torch.topk(u.detach(), 2, dim=-1)
        first, second = top.values[..., 0], top.values[..., 1]
        scale = x.detach().abs().max()
        gap = first - second
        if self.margin and scale > 0:
            self._record(node, torch.isfinite(gap) & (gap > 0) &
                         (gap < self.margin * scale), gap, scale)
        mask = self._flipped(node, y.shape)
        if not mask.any():
            return y
        runner_up = u.gather(-1, top.indices[..., 1:2]).squeeze(-1)
        return torch.where(mask, runner_up, y)


class OnnxModule:
    def __init__(self, path, batch_norm_training=True):
        self.model = onnx.load(path)
        self.training = batch_norm_training
        self.params = {}
        self.consts = {}
        for init in self.model.graph.initializer:
            t = to_tensor(numpy_helper.to_array(init))
            if t.is_floating_point():
                self.params[init.name] = t.clone().requires_grad_(True)
            else:
                self.consts[init.name] = t
        # Identity outputs of float initializers: parameters of their own.
        self.untied = set()
        for node in self.model.graph.node:
            if node.op_type == "Identity" and node.input[0] in self.params:
                self.params[node.output[0]] = (
                    self.params[node.input[0]].detach().clone().requires_grad_(True))
                self.untied.add(node.output[0])

    def __call__(self, feeds, kinks=None):
        env = dict(self.consts)
        env.update(self.params)
        env.update(feeds)
        for k, node in enumerate(self.model.graph.node):
            if node.output[0] in self.untied:
                continue
            ins = [env[n] for n in node.input if n]
            if kinks and node.op_type == "Relu":
                outs = [kinks.relu(k, ins[0])]
            else:
                outs = run_node(node, ins, self.training)
                if kinks and node.op_type == "MaxPool":
                    outs = [kinks.maxpool(k, node, ins[0], outs[0])] + outs[1:]
            env.update(zip(node.output, outs))
        return [env[o.name] for o in self.model.graph.output]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--feed", action="append", default=[],
                    help="NAME=FILE.npy, a graph input")
    ap.add_argument("--labels", required=True,
                    help=".npy of class indices; the loss is the mean softmax "
                         "cross entropy of the first output over its last axis")
    ap.add_argument("--optimizer", choices=["sgd", "adam"], required=True)
    ap.add_argument("--lr", type=float, required=True)
    ap.add_argument("--momentum", type=float, default=0.0)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--exclude", default="",
                    help="comma-separated initializers that are not trained "
                         "(batch-norm running statistics)")
    ap.add_argument("--dtype", choices=["float64", "float32"], default="float64",
                    help="float32 measures PyTorch's own round-off against the "
                         "float64 run")
    ap.add_argument("--kink-margin", type=float, default=0.0,
                    help="record the ReLU inputs and max-pool window gaps "
                         "within this fraction of their tensor's largest "
                         "|value| of a branch point (npz key `kinks`: step, "
                         "node, flat index, margin)")
    ap.add_argument("--flip", action="append", default=[],
                    help="STEP:NODE:INDEX, take the other branch there "
                         "(a kink the run with --kink-margin recorded)")
    ap.add_argument("--microbatches", type=int, default=1,
                    help="split the batch into this many micro-batches, each "
                         "a forward of its own (batch norm's statistics "
                         "per micro-batch), and step on the mean of their "
                         "losses' gradients, as dist-autodiff's "
                         "accumulation-steps; a kink's step is then the "
                         "forward's number, (step - 1) * K + micro-batch + 1")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    global FLOAT
    FLOAT = getattr(torch, args.dtype)
    torch.set_default_dtype(FLOAT)

    net = OnnxModule(args.model)
    for name in filter(None, args.exclude.split(",")):
        p = net.params.pop(name)
        net.consts[name] = p.detach()
    feeds = {}
    for f in args.feed:
        name, path = f.split("=", 1)
        feeds[name] = to_tensor(np.load(path))
    labels = torch.from_numpy(np.load(args.labels).astype(np.int64)).reshape(-1)
    params = list(net.params.values())
    if args.optimizer == "sgd":
        opt = torch.optim.SGD(params, lr=args.lr, momentum=args.momentum)
    else:
        opt = torch.optim.Adam(params, lr=args.lr)
    losses = []
    gradmax = {name: torch.zeros_like(p) for name, p in net.params.items()}
    kinks = Kinks(args.kink_margin,
                  [tuple(int(v) for v in f.split(":")) for f in args.flip])
    events = kinks.events
    if not args.kink_margin and not args.flip:
        kinks = None
    k = args.microbatches
    if k < 1 or any(t.shape[0] % k for t in list(feeds.values()) + [labels]):
        sys.exit(f"--microbatches {k} does not divide the batch")
    for step in range(args.steps):
        opt.zero_grad()
        total = 0.0
        for m in range(k):
            if kinks:
                kinks.step = step * k + m + 1
            part = {n: t.chunk(k)[m] for n, t in feeds.items()}
            logits = net(part, kinks)[0]
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                   labels.reshape(k, -1)[m])
            (loss / k).backward()
            total += loss.item() / k
        # A parameter no path reaches has no gradient; torch.optim skips it,
        # as the compiled program leaves it unchanged.
        for name, p in net.params.items():
            if p.grad is not None:
                gradmax[name] = torch.maximum(gradmax[name], p.grad.abs())
        opt.step()
        losses.append(total)
    out = {"losses": np.array(losses),
           "kinks": np.array(events, dtype=np.float64).reshape(-1, 4)}
    out.update({name: p.detach().numpy() for name, p in net.params.items()})
    # Largest |gradient| each element saw: elements whose gradient is zero in
    # exact arithmetic (a key bias under softmax's shift invariance, a bias
    # before batch norm) have float64 round-off here, and the caller can
    # tell them apart from elements with a signal.
    out.update({"gradmax/" + name: g.numpy() for name, g in gradmax.items()})
    np.savez(args.out, **out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
