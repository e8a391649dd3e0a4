#!/usr/bin/env python3
"""Whole networks through one generated CPU executable vs onnxruntime.

GPT-2, BERT, Llama, T5 and wav2vec2 fixtures (test/fixtures, real exported
weights read at run time from the ONNX file / llama.weights) and, built
here with seeded random weights, a small ResNet (conv + batch norm + relu,
two basic blocks with a strided 1x1 shortcut, max pooling, a
squeeze-excitation block, global average pooling, Gemm), a chain of
convolutions with a squeeze-excitation scale that runs channels-last, a
CNN with InstanceNormalization and Tile, one that upsamples with
transposed convolutions and a nearest Resize, one that multiplies factors
into its map with ScatterElements and ScatterND (reduction mul), an
AlexNet-style CNN with LRN and a dist-modelgen LLaMA
with a mixture-of-experts layer (moe_llama: TopK routing, its routing
compared too) are compiled into one program
(--default-batch 2) and run on seeded random inputs; every output must
match onnxruntime within rtol 1e-3 / atol 1e-4.

    .venv/bin/python test/numerics/run_networks.py --build build --junit out.xml
    .venv/bin/python test/numerics/run_networks.py --build build --filter "scatter|lrn"
"""
import argparse
import functools
import os
import re
import shutil
import sys
import time

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "test", "fixtures")
BATCH = 2


def random_weight(rng, name, shape, scale=None):
    """A float32 initializer `name` of normal values times `scale` (by
    default 1 / sqrt of the fan-in, the product of dims after the first)."""
    s = scale if scale is not None else 1 / np.sqrt(np.prod(shape[1:]))
    return numpy_helper.from_array(
        (rng.standard_normal(shape) * s).astype(np.float32), name)


def int_tensor(name, values):
    return numpy_helper.from_array(np.array(values, np.int64), name)


def float_tensor(name, values):
    return numpy_helper.from_array(np.array(values, np.float32), name)


def save_classifier(path, nodes, name, image_shape, initializers, opset=17):
    """Checks and saves an image classifier: graph input `image`
    [batch, *image_shape], output `logits` [batch, 10]."""
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["batch"] + image_shape)],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 10])],
        initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


def small_resnet(path, seed=0, squeeze_excitation=False):
    """A ResNet-style CNN for 3x32x32 images, 10 classes; with a
    squeeze-excitation block before the pooling when asked (this suite; the
    training suite's finite differences and PyTorch replay use the plain
    network)."""
    rng = np.random.default_rng(seed)
    inits, nodes = [], []

    def w(name, shape, scale=None):
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
        s = scale if scale is not None else 1.0 / np.sqrt(fan_in)
        inits.append(numpy_helper.from_array(
            (rng.standard_normal(shape) * s).astype(np.float32), name))
        return name

    def conv_bn(x, name, cin, cout, k, stride, relu=True):
        pads = [k // 2] * 4
        nodes.append(helper.make_node("Conv", [x, w(name + ".w", [cout, cin, k, k])],
                                      [name + ".c"], strides=[stride] * 2, pads=pads))
        for p, lo, hi in (("s", 0.5, 1.5), ("b", -0.2, 0.2), ("m", -0.1, 0.1),
                          ("v", 0.5, 1.5)):
            inits.append(numpy_helper.from_array(
                rng.uniform(lo, hi, cout).astype(np.float32), f"{name}.bn.{p}"))
        nodes.append(helper.make_node(
            "BatchNormalization", [name + ".c"] + [f"{name}.bn.{p}" for p in "sbmv"],
            [name + ".n"], epsilon=1e-5))
        if not relu:
            return name + ".n"
        nodes.append(helper.make_node("Relu", [name + ".n"], [name + ".r"]))
        return name + ".r"

    def block(x, name, cin, cout, stride):
        y = conv_bn(x, name + ".a", cin, cout, 3, stride)
        y = conv_bn(y, name + ".b", cout, cout, 3, 1, relu=False)
        if stride != 1 or cin != cout:
            x = conv_bn(x, name + ".d", cin, cout, 1, stride, relu=False)
        nodes.append(helper.make_node("Add", [x, y], [name + ".sum"]))
        nodes.append(helper.make_node("Relu", [name + ".sum"], [name + ".out"]))
        return name + ".out"

    def squeeze_excite(x):
        nodes.append(helper.make_node("GlobalAveragePool", [x], ["se.gap"]))
        nodes.append(helper.make_node(
            "Conv", ["se.gap", w("se.w1", [8, 32, 1, 1]), w("se.b1", [8], 0.1)],
            ["se.c1"]))
        nodes.append(helper.make_node("Relu", ["se.c1"], ["se.r"]))
        nodes.append(helper.make_node(
            "Conv", ["se.r", w("se.w2", [32, 8, 1, 1]), w("se.b2", [32], 0.1)],
            ["se.c2"]))
        nodes.append(helper.make_node("HardSigmoid", ["se.c2"], ["se.s"],
                                      alpha=1.0 / 6, beta=0.5))
        nodes.append(helper.make_node("Mul", [x, "se.s"], ["se.out"]))
        return "se.out"

    x = conv_bn("image", "stem", 3, 16, 3, 1)
    nodes.append(helper.make_node("MaxPool", [x], ["pool"], kernel_shape=[3, 3],
                                  strides=[2, 2], pads=[1, 1, 1, 1]))
    x = block("pool", "l1", 16, 16, 1)
    x = block(x, "l2", 16, 32, 2)
    # Squeeze-excitation (MobileNetV3, EfficientNet): 1x1 convolutions of a
    # [N, C, 1, 1] tensor, which the CPU programs run as matmuls.
    if squeeze_excitation:
        x = squeeze_excite(x)
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["gap"]))
    nodes.append(helper.make_node("Flatten", ["gap"], ["flat"], axis=1))
    nodes.append(helper.make_node("Gemm", ["flat", w("fc.w", [10, 32]), w("fc.b", [10])],
                                  ["logits"], transB=1))
    save_classifier(path, nodes, "small_resnet", [3, 32, 32], inits)


def channels_last_chain(path, seed=2):
    """Three convolutions with a squeeze-excitation scale between them:
    the CPU programs run this chain channels-last, so the scale's
    broadcast multiply and the copies into and out of that layout are
    generated loops over rows of channels (codegen/copy-rows.test,
    codegen/emit-rows-channels-last.mlir)."""
    rng = np.random.default_rng(seed)

    def w(name, shape):
        return numpy_helper.from_array(
            (rng.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))).astype(np.float32),
            name)
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["a"], ["b"]),
             helper.make_node("GlobalAveragePool", ["b"], ["g"]),
             helper.make_node("Sigmoid", ["g"], ["s"]),
             helper.make_node("Mul", ["b", "s"], ["m"]),
             helper.make_node("Conv", ["m", "w2"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["c", "w3"], ["y"])]
    graph = helper.make_graph(
        nodes, "channels_last_chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 12, 20])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8, 12, 20])],
        [w("w1", [16, 3, 3, 3]), w("w2", [16, 16, 3, 3]), w("w3", [8, 16, 1, 1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


def instance_norm_tile(path, seed=3):
    """A CNN whose normalizations are InstanceNormalization (2-D, and 1-D
    over a flattened map as wav2vec2's feature encoder has it) with a Tile
    of the map between them: the importer builds both from graph ops
    (layer norm, reshape, expand, mul, add), so their kernels and gradients
    are those ops' (run_training.py checks the gradient)."""
    rng = np.random.default_rng(seed)

    w = functools.partial(random_weight, rng)
    nodes = [helper.make_node("Conv", ["image", "w1"], ["a"], pads=[1, 1, 1, 1]),
             helper.make_node("InstanceNormalization", ["a", "s1", "b1"], ["n1"],
                              epsilon=1e-3),
             helper.make_node("Relu", ["n1"], ["r1"]),
             helper.make_node("Tile", ["r1", "repeats"], ["t"]),
             helper.make_node("Reshape", ["t", "flat"], ["f"]),
             helper.make_node("InstanceNormalization", ["f", "s2", "b2"], ["n2"]),
             helper.make_node("Reshape", ["n2", "map"], ["m"]),
             helper.make_node("Conv", ["m", "w2"], ["c"], strides=[2, 2]),
             helper.make_node("Relu", ["c"], ["r2"]),
             helper.make_node("GlobalAveragePool", ["r2"], ["g"]),
             helper.make_node("Flatten", ["g"], ["h"]),
             helper.make_node("Gemm", ["h", "fc"], ["logits"])]
    save_classifier(path, nodes, "instance_norm_tile", [3, 8, 6],
                    [w("w1", [8, 3, 3, 3]), w("s1", [8], 0.5), w("b1", [8], 0.5),
                     int_tensor("repeats", [1, 1, 2, 3]), int_tensor("flat", [0, 8, -1]),
                     w("s2", [8], 0.5), w("b2", [8], 0.5), int_tensor("map", [0, 8, 16, 18]),
                     w("w2", [12, 8, 3, 3]), w("fc", [12, 10])])


def upsampling_net(path, seed=4):
    """A CNN that halves its map and brings it back as segmentation
    decoders (PaddleOCR's DB detector, U-Nets, FPNs) do: a transposed
    convolution (strided, with pads, output_padding and a bias), a nearest
    x2 Resize as PyTorch exports nn.Upsample (asymmetric, floor), and a
    grouped, dilated transposed convolution with SAME_UPPER auto_pad. The
    importer makes each transposed convolution a graph.conv_grad_input and
    the Resize a broadcast (run_training.py checks their gradients)."""
    rng = np.random.default_rng(seed)

    w = functools.partial(random_weight, rng)
    nodes = [helper.make_node("Conv", ["image", "w1"], ["a"], strides=[2, 2],
                              pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["a"], ["r1"]),
             helper.make_node("ConvTranspose", ["r1", "u1", "c1"], ["up"],
                              strides=[2, 2], pads=[1, 1, 1, 1],
                              output_padding=[1, 1]),
             helper.make_node("Relu", ["up"], ["r2"]),
             helper.make_node("Resize", ["r2", "", "scales"], ["big"],
                              mode="nearest",
                              coordinate_transformation_mode="asymmetric",
                              nearest_mode="floor"),
             helper.make_node("ConvTranspose", ["big", "u2"], ["v"], group=2,
                              dilations=[2, 2], auto_pad="SAME_UPPER"),
             # Every position reaches the logits (not an average).
             helper.make_node("Flatten", ["v"], ["h"]),
             helper.make_node("Gemm", ["h", "fc"], ["logits"])]
    save_classifier(path, nodes, "upsampling_net", [3, 8, 6],
                    [w("w1", [8, 3, 3, 3]), w("u1", [8, 6, 3, 3]), w("c1", [6], 0.5),
                     float_tensor("scales", [1, 1, 2, 2]),
                     w("u2", [6, 2, 3, 3]), w("fc", [768, 10])])


def gather_elements_net(path, seed=5):
    """A CNN that picks, per channel, the positions where the input is
    largest (ArgMax of the image, tiled over the channels: repeated
    indices) from its feature map with GatherElements, once with the
    indices and once with them less the axis length (negative, counted from
    the end): the importer makes each a graph.gather_elements, whose
    gradient is an elementwise scatter-add (run_training.py checks it)."""
    rng = np.random.default_rng(seed)

    w = functools.partial(random_weight, rng)
    nodes = [helper.make_node("Conv", ["image", "w1"], ["a"], pads=[1, 1, 1, 1]),
             helper.make_node("Reshape", ["a", "flat8"], ["fa"]),
             helper.make_node("Reshape", ["image", "flat4"], ["fi"]),
             helper.make_node("ArgMax", ["fi"], ["at"], axis=2, keepdims=1),
             helper.make_node("Tile", ["at", "repeats"], ["idx"]),
             helper.make_node("Sub", ["idx", "len"], ["neg"]),
             helper.make_node("GatherElements", ["fa", "idx"], ["g1"], axis=2),
             helper.make_node("GatherElements", ["fa", "neg"], ["g2"], axis=-1),
             helper.make_node("Mul", ["g2", "half"], ["g2h"]),
             helper.make_node("Concat", ["g1", "g2h"], ["g"], axis=2),
             helper.make_node("Flatten", ["g"], ["h"]),
             helper.make_node("Gemm", ["h", "fc"], ["logits"])]
    save_classifier(path, nodes, "gather_elements_net", [4, 6, 6],
                    [w("w1", [8, 4, 3, 3]), int_tensor("flat8", [0, 8, 36]), int_tensor("flat4", [0, 4, 36]),
                     int_tensor("repeats", [1, 2, 3]), int_tensor("len", [36]),
                     numpy_helper.from_array(np.array([0.5], np.float32), "half"),
                     w("fc", [48, 10])])


def scatter_net(path, seed=8):
    """A CNN that multiplies factors into its feature map with scatters
    (reduction mul): ScatterElements along the positions, at the three
    repeated positions where the input is largest (ArgMax tiled) and the
    same less the axis length (negative), with tanh factors from a second
    convolution; then ScatterND of channel slices (channels first, tuples
    [1], [1], [-1], [5]: one repeated, one negative) with tanh factors of
    that convolution's first four channels. Its gradient multiplies by the
    other factors at each position (run_training.py checks it against
    finite differences, onnxruntime and PyTorch)."""
    rng = np.random.default_rng(seed)

    w = functools.partial(random_weight, rng)
    nodes = [helper.make_node("Conv", ["image", "w1"], ["a"], pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["image", "w2"], ["b"], pads=[1, 1, 1, 1]),
             helper.make_node("Reshape", ["a", "flat8"], ["fa"]),
             helper.make_node("Reshape", ["b", "flat8"], ["fb"]),
             helper.make_node("Reshape", ["image", "flat4"], ["fi"]),
             helper.make_node("ArgMax", ["fi"], ["at"], axis=2, keepdims=1),
             helper.make_node("Tile", ["at", "repeats"], ["idx"]),
             helper.make_node("Sub", ["idx", "len"], ["neg"]),
             helper.make_node("Tanh", ["fb"], ["tb"]),
             helper.make_node("Slice", ["tb", "s0", "s3", "s2"], ["u1"]),
             helper.make_node("Slice", ["tb", "s3", "s6", "s2"], ["u2"]),
             helper.make_node("ScatterElements", ["fa", "idx", "u1"], ["m1"],
                              axis=2, reduction="mul"),
             helper.make_node("ScatterElements", ["m1", "neg", "u2"], ["m2"],
                              axis=-1, reduction="mul"),
             helper.make_node("Transpose", ["m2"], ["cm"], perm=[1, 0, 2]),
             helper.make_node("Transpose", ["tb"], ["ct"], perm=[1, 0, 2]),
             helper.make_node("Slice", ["ct", "s0", "s4", "s0"], ["u3"]),
             helper.make_node("ScatterND", ["cm", "rows", "u3"], ["m3"],
                              reduction="mul"),
             helper.make_node("Transpose", ["m3"], ["m"], perm=[1, 0, 2]),
             helper.make_node("Flatten", ["m"], ["h"]),
             helper.make_node("Gemm", ["h", "fc"], ["logits"])]
    save_classifier(path, nodes, "scatter_net", [4, 6, 6],
                    [w("w1", [8, 4, 3, 3]), w("w2", [8, 4, 3, 3]),
                     int_tensor("flat8", [0, 8, 36]), int_tensor("flat4", [0, 4, 36]),
                     int_tensor("repeats", [1, 2, 3]), int_tensor("len", [36]),
                     int_tensor("s0", [0]), int_tensor("s2", [2]), int_tensor("s3", [3]),
                     int_tensor("s4", [4]), int_tensor("s6", [6]),
                     int_tensor("rows", [[1], [1], [-1], [5]]),
                     w("fc", [288, 10])])


def lrn_net(path, seed=9):
    """An AlexNet-style CNN: convolution, LRN across 5 channels, max
    pooling, a second convolution and an LRN across 3 with a large alpha
    (its normalization matters), then Gemm (no ReLU, whose kinks would blur
    the finite differences; odd windows only, as onnxruntime's LRN refuses
    even ones). The importer builds LRN from
    graph ops (squares, a channel-window average pool, pow, div), so its
    gradient is theirs (run_training.py checks it)."""
    rng = np.random.default_rng(seed)

    w = functools.partial(random_weight, rng)
    nodes = [helper.make_node("Conv", ["image", "w1"], ["a"], pads=[1, 1, 1, 1]),
             helper.make_node("LRN", ["a"], ["n1"], size=5, alpha=1e-2, beta=0.75, bias=1.0),
             helper.make_node("MaxPool", ["n1"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Conv", ["p", "w2"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("LRN", ["c"], ["n2"], size=3, alpha=0.5, beta=0.6, bias=2.0),
             helper.make_node("Flatten", ["n2"], ["h"]),
             helper.make_node("Gemm", ["h", "fc"], ["logits"])]
    save_classifier(path, nodes, "lrn_net", [3, 6, 6],
                    [w("w1", [8, 3, 3, 3]), w("w2", [6, 8, 3, 3]), w("fc", [54, 10])])


def resize_net(path, seed=6):
    """A CNN that resizes its map with interpolation: bilinear upsampling
    by a fractional factor (half_pixel, as torch's interpolate(...,
    align_corners=False) exports it), bicubic downsampling by 0.6 and 0.5
    (align_corners) and a 1-D linear resize of the flattened map
    (asymmetric). The importer makes each resized axis a matmul with a
    constant interpolation matrix, so the gradients are the matmuls'
    (run_training.py checks them)."""
    rng = np.random.default_rng(seed)

    w = functools.partial(random_weight, rng)
    nodes = [helper.make_node("Conv", ["image", "w1"], ["a"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["a"], ["r1"]),
             helper.make_node("Resize", ["r1", "", "up"], ["big"], mode="linear"),
             helper.make_node("Conv", ["big", "w2"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Resize", ["c", "", "small"], ["s"], mode="cubic",
                              coordinate_transformation_mode="align_corners"),
             helper.make_node("Reshape", ["s", "flat"], ["f"]),
             helper.make_node("Resize", ["f", "", "stretch"], ["g"], mode="linear",
                              coordinate_transformation_mode="asymmetric"),
             helper.make_node("Flatten", ["g"], ["h"]),
             helper.make_node("Gemm", ["h", "fc"], ["logits"])]
    save_classifier(path, nodes, "resize_net", [3, 6, 4],
                    [w("w1", [6, 3, 3, 3]), float_tensor("up", [1, 1, 1.5, 1.5]),
                     w("w2", [4, 6, 3, 3]), float_tensor("small", [1, 1, 0.6, 0.5]), int_tensor("flat", [0, 4, 15]),
                     float_tensor("stretch", [1, 1, 2.0]), w("fc", [120, 10])], opset=13)


MOE = dict(experts=4, top_k=2, seq=8, vocab=512)


def moe_llama(path, build, seed=7, scale=0.5, routing_outputs=True):
    """A 2-layer LLaMA from dist-modelgen whose second layer is a mixture
    of experts (docs/modelgen.md: 4 experts, top-2 of them per token, each
    taking its 4 best of the 8 tokens, and a shared expert; batch 2): TopK
    routes (graph.top_k), GatherElements dispatches, ScatterElements
    combines. Its seeded random weights (normal times `scale`) make the
    routing decide: per sequence some expert is wanted by more tokens than
    it takes (tokens dropped), and no choice is closer than float32
    round-off (routing_margin). With `routing_outputs` the router's
    probabilities and both TopKs' outputs are extra graph outputs, so the
    routing is compared too."""
    import subprocess
    subprocess.run([os.path.join(build, "bin", "dist-modelgen"), "llama",
                    "--layers", "2", "--dense-layers", "1", "--hidden", "32",
                    "--heads", "4", "--kv-heads", "2", "--ffn-hidden", "64",
                    "--seq", str(MOE["seq"]), "--vocab", str(MOE["vocab"]),
                    "--experts", str(MOE["experts"]), "--top-k", str(MOE["top_k"]),
                    "--expert-ffn", "16", "--shared-experts", "1", "-o", path],
                   check=True, stdout=subprocess.DEVNULL)
    model = onnx.load(path, load_external_data=False)
    g = model.graph
    rng = np.random.default_rng(seed)
    weights = [numpy_helper.from_array(
        (rng.standard_normal(list(t.dims)) * scale).astype(np.float32), t.name)
        for t in g.initializer]
    del g.initializer[:]
    g.initializer.extend(weights)
    # With weights inline it is no longer graph-only (whose programs
    # initialize the weights themselves).
    kept = [p for p in model.metadata_props if p.key != "distopt.graph_only"]
    del model.metadata_props[:]
    model.metadata_props.extend(kept)
    for n in g.node if routing_outputs else []:
        if n.op_type == "TopK":
            g.output.extend([helper.make_tensor_value_info(n.output[0], TensorProto.FLOAT, None),
                             helper.make_tensor_value_info(n.output[1], TensorProto.INT64, None)])
            if n.input[0].split("/")[-1].startswith("Softmax"):
                g.output.append(helper.make_tensor_value_info(
                    n.input[0], TensorProto.FLOAT, None))
    onnx.save(model, path)
    return path


def routing_margin(outputs, names):
    """How decided the MoE routing of one run is: (the smallest gap between
    a token's k-th and (k+1)-th router probability, relative to the largest;
    the tokens the experts dropped, each sequence's wanted slots beyond an
    expert's capacity). `outputs` by `names` hold moe_llama's extra
    outputs."""
    out = dict(zip(names, outputs))
    probs = next(v for n, v in out.items() if n.split("/")[-1].startswith("Softmax"))
    k, cap = MOE["top_k"], MOE["top_k"] * MOE["seq"] // MOE["experts"]
    ranked = np.sort(probs, axis=-1)[..., ::-1]
    gaps = [ranked[..., k - 1] - ranked[..., k]]
    chosen = np.argsort(-probs, axis=-1, kind="stable")[..., :k]
    # Each expert's tokens: its cap best routing weights over the sequence
    # (slots past the tokens that chose it hold exact zeros, which tie
    # alike everywhere: lowest index first, weight 0).
    gates = np.where(np.any(chosen[..., None] == np.arange(MOE["experts"]), -2), probs, 0)
    by_expert = np.sort(gates, axis=1)[:, ::-1]
    full = by_expert[:, cap - 1] > 0
    gaps.append((by_expert[:, cap - 1] - by_expert[:, cap])[full])
    gap = float(min(np.min(x) for x in gaps if x.size) / np.max(probs))
    wanted = (gates > 0).sum(axis=1)
    return gap, int(np.maximum(wanted - cap, 0).sum())


def inputs_for(path, rng):
    model = onnx.load(path, load_external_data=False)
    inits = {i.name for i in model.graph.initializer}
    feeds = []
    for i in model.graph.input:
        if i.name in inits:
            continue
        tt = i.type.tensor_type
        shape = [d.dim_value if d.dim_value else BATCH for d in tt.shape.dim]
        if tt.elem_type == TensorProto.INT64:
            if "mask" in i.name:
                arr = np.ones(shape, np.int64)
                arr[:, -5:] = 0  # some padding positions
            else:
                arr = rng.integers(0, 512, shape).astype(np.int64)
        else:
            arr = rng.standard_normal(shape).astype(np.float32)
        feeds.append((i.name, arr))
    return feeds, [o.name for o in model.graph.output]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--junit")
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--atol", type=float, default=1e-4)
    ap.add_argument("--filter", default="", help="regex on network names")
    args = ap.parse_args()
    t0 = time.time()
    try:
        import onnxruntime as ort
    except ImportError:
        return common.finish("numerics.networks",
                             [("networks", "skipped", "onnxruntime not installed")],
                             args.junit, 0)
    work = common.work_dir("dist-networks")
    resnet = os.path.join(work, "small_resnet.onnx")
    small_resnet(resnet, squeeze_excitation=True)
    chain = os.path.join(work, "channels_last_chain.onnx")
    channels_last_chain(chain)
    instnorm = os.path.join(work, "instance_norm_tile.onnx")
    instance_norm_tile(instnorm)
    deconv = os.path.join(work, "upsampling_net.onnx")
    upsampling_net(deconv)
    gathers = os.path.join(work, "gather_elements_net.onnx")
    gather_elements_net(gathers)
    resizes = os.path.join(work, "resize_net.onnx")
    resize_net(resizes)
    scatters = os.path.join(work, "scatter_net.onnx")
    scatter_net(scatters)
    lrns = os.path.join(work, "lrn_net.onnx")
    lrn_net(lrns)
    moe = moe_llama(os.path.join(work, "moe_llama.onnx"), args.build)
    nets = [("gpt2", os.path.join(FIXTURES, "gpt2.onnx")),
            ("bert", os.path.join(FIXTURES, "bert.onnx")),
            ("llama", os.path.join(FIXTURES, "llama.onnx")),
            ("t5", os.path.join(FIXTURES, "t5.onnx")),
            ("wav2vec2", os.path.join(FIXTURES, "wav2vec2.onnx")),
            ("small_resnet", resnet),
            ("channels_last_chain", chain),
            ("instance_norm_tile", instnorm),
            ("upsampling_net", deconv),
            ("gather_elements_net", gathers),
            ("resize_net", resizes),
            ("scatter_net", scatters),
            ("lrn_net", lrns),
            ("moe_llama", moe)]
    # Filtered-out networks still draw their inputs below, so a network gets
    # the same inputs in a filtered run as in a full one.
    chosen = {name for name, _ in nets if re.search(args.filter, name)}
    exe = os.path.join(work, "nets.bin")
    ok, skipped, secs, log = common.compile_models(
        args.build, [n for n in nets if n[0] in chosen], exe,
        extra=["--default-batch", str(BATCH)])
    print(f"compiled {len(chosen)} networks into one program in {secs:.1f} s")
    results = []
    rng = np.random.default_rng(1)
    for name, path in nets:
        if name not in chosen:
            inputs_for(path, rng)
            continue
        if name in skipped or not ok:
            msg = skipped.get(name, log[-1500:])
            results.append((name, "failed", "did not compile: " + msg))
            continue
        feeds, out_names = inputs_for(path, rng)
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        want = sess.run(out_names, dict(feeds))
        if name == "moe_llama":
            gap, dropped = routing_margin(want, out_names)
            print(f"  moe_llama routing: smallest top-k gap {gap:.1e} of the "
                  f"largest probability, {dropped} tokens dropped")
            if gap < 1e-4 or dropped == 0:
                results.append((name, "failed", "the random weights leave the "
                                "routing undecided (a near tie) or drop no token; "
                                "change moe_llama's seed or scale"))
                continue
        outdir = os.path.join(work, name)
        t1 = time.time()
        rc, text = common.run_program(exe, name, feeds, outdir)
        run_s = time.time() - t1
        if rc != 0:
            results.append((name, "failed", text.strip()[-1500:]))
            continue
        errors = []
        for oname, w in zip(out_names, want):
            got = np.load(os.path.join(outdir, common.sanitize(oname) + ".npy"))
            msg = common.compare(oname, got, w, args.rtol, args.atol)
            if msg:
                errors.append(msg)
            else:
                err = np.max(np.abs(got.astype(np.float64) - w)) if w.size else 0
                print(f"  {name}.{oname}: {list(w.shape)} max abs diff {err:.2e}")
        results.append((name, "failed" if errors else "passed", "; ".join(errors)))
        print(f"{'ok  ' if not errors else 'FAIL'} {name} ({run_s:.2f} s){': ' + '; '.join(errors) if errors else ''}")
    shutil.rmtree(work, ignore_errors=True)
    return common.finish("numerics.networks", results, args.junit, time.time() - t0)


if __name__ == "__main__":
    sys.exit(main())
