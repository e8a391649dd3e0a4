#!/usr/bin/env python3
"""Builds the small ONNX models of the importer's lit tests.

Run with Debian's python3-onnx (1.12):  /usr/bin/python3 make_inputs.py
Every model is tiny; the .onnx files are committed next to this script.
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
F = TensorProto.FLOAT
I64 = TensorProto.INT64


def weight(name, *shape, seed=0):
    rng = np.random.default_rng(seed + len(name))
    return numpy_helper.from_array(
        rng.standard_normal(shape).astype(np.float32), name)


def const(name, values, dtype=np.int64):
    return helper.make_node(
        "Constant", [], [name], name=name,
        value=numpy_helper.from_array(np.array(values, dtype=dtype), name))


def save(model_name, nodes, inputs, outputs, inits=(), opset=13, meta=None):
    graph = helper.make_graph(nodes, model_name, inputs, outputs,
                              initializer=list(inits))
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset)],
        producer_name="make_inputs.py")
    model.ir_version = 8
    for key, value in (meta or {}).items():
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value
    onnx.save(model, os.path.join(HERE, model_name + ".onnx"))


def vinfo(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


# Convolutional network ops: Conv (SAME_UPPER and explicit pads), BN, pools,
# Flatten, Gemm with transB, Clip with constant bounds, LeakyRelu.
save("cnn", [
    helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1",
                     kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER"),
    helper.make_node("BatchNormalization", ["c1", "s", "bb", "m", "v"], ["bn"],
                     name="bn1", epsilon=1e-3),
    const("lo", 0.0, np.float32), const("hi", 6.0, np.float32),
    helper.make_node("Clip", ["bn", "lo", "hi"], ["r1"], name="relu6"),
    helper.make_node("Conv", ["r1", "dw"], ["c2"], name="depthwise",
                     kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=4),
    helper.make_node("MaxPool", ["c2"], ["p1"], name="maxpool",
                     kernel_shape=[2, 2], strides=[2, 2]),
    helper.make_node("AveragePool", ["p1"], ["p2"], name="avgpool",
                     kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1],
                     count_include_pad=1),
    helper.make_node("LeakyRelu", ["p2"], ["l1"], name="leaky", alpha=0.2),
    helper.make_node("GlobalAveragePool", ["l1"], ["g"], name="gap"),
    helper.make_node("Flatten", ["g"], ["f"], name="flatten", axis=1),
    helper.make_node("Gemm", ["f", "fc", "fcb"], ["y"], name="fc",
                     transB=1, alpha=0.5),
], [vinfo("x", F, ["N", 3, 16, 16])], [vinfo("y", F, ["N", 10])], [
    weight("w1", 4, 3, 3, 3), weight("b1", 4), weight("s", 4),
    weight("bb", 4), weight("m", 4), weight("v", 4), weight("dw", 4, 1, 3, 3),
    weight("fc", 10, 4), weight("fcb", 10)])

# Transformer-style data movement with shapes computed at run time:
# Shape -> Gather -> Unsqueeze -> Concat -> Reshape, Split, Transpose,
# MatMul, Softmax, Trilu mask, Where, Expand, Slice, Pad, Cast, Reduce.
save("attention", [
    helper.make_node("Gather", ["wte", "ids"], ["emb"], name="embed"),
    helper.make_node("MatMul", ["emb", "wqkv"], ["qkv"], name="qkv_proj"),
    helper.make_node("Split", ["qkv"], ["q", "k", "v"], name="split_qkv",
                     axis=2),
    helper.make_node("Shape", ["q"], ["q_shape"], name="shape_q"),
    const("zero", 0), const("one", 1),
    helper.make_node("Gather", ["q_shape", "zero"], ["batch"], name="g_b"),
    helper.make_node("Gather", ["q_shape", "one"], ["seq"], name="g_s"),
    const("ax0", [0]),
    helper.make_node("Unsqueeze", ["batch", "ax0"], ["ub"], name="u_b"),
    helper.make_node("Unsqueeze", ["seq", "ax0"], ["us"], name="u_s"),
    const("heads", [2, 8]),
    helper.make_node("Concat", ["ub", "us", "heads"], ["hshape"], name="cat",
                     axis=0),
    helper.make_node("Reshape", ["q", "hshape"], ["q4"], name="reshape_q"),
    helper.make_node("Reshape", ["k", "hshape"], ["k4"], name="reshape_k"),
    helper.make_node("Transpose", ["q4"], ["qt"], name="tq", perm=[0, 2, 1, 3]),
    helper.make_node("Transpose", ["k4"], ["kt"], name="tk", perm=[0, 2, 3, 1]),
    helper.make_node("MatMul", ["qt", "kt"], ["scores"], name="qk"),
    helper.make_node("ConstantOfShape", ["sq"], ["ones"], name="ones",
                     value=numpy_helper.from_array(np.array([1.0], np.float32))),
    helper.make_node("Trilu", ["ones"], ["tri"], name="causal", upper=0),
    helper.make_node("Cast", ["tri"], ["mask"], name="to_bool",
                     to=TensorProto.BOOL),
    const("ninf", -1e4, np.float32),
    helper.make_node("Where", ["mask", "scores", "ninf"], ["masked"],
                     name="apply_mask"),
    helper.make_node("Softmax", ["masked"], ["probs"], name="softmax", axis=-1),
    helper.make_node("ReduceMean", ["probs"], ["red"], name="mean", axes=[-1],
                     keepdims=1),
    helper.make_node("Expand", ["red", "eshape"], ["exp"], name="expand"),
    const("s_start", [0]), const("s_end", [4]), const("s_axes", [3]),
    helper.make_node("Slice", ["exp", "s_start", "s_end", "s_axes"], ["sl"],
                     name="slice"),
    const("pads", [0, 0, 0, 1, 0, 0, 0, 1]),
    helper.make_node("Pad", ["sl", "pads"], ["y"], name="pad"),
], [vinfo("ids", I64, ["batch", 4])], [vinfo("y", F, None)], [
    weight("wte", 32, 16), weight("wqkv", 16, 48),
    numpy_helper.from_array(np.array([4, 4], np.int64), "sq"),
    numpy_helper.from_array(np.array([1, 2, 4, 4], np.int64), "eshape")],
    opset=14)

# Opset-13 exporter spellings of LayerNorm, RMSNorm, GELU (erf) and
# GELU (tanh).
def scalar(name, value):
    return const(name, value, np.float32)

save("patterns", [
    # LayerNorm
    helper.make_node("ReduceMean", ["x"], ["mu"], name="ln_mean", axes=[-1]),
    helper.make_node("Sub", ["x", "mu"], ["d"], name="ln_sub"),
    scalar("two", 2.0),
    helper.make_node("Pow", ["d", "two"], ["d2"], name="ln_pow"),
    helper.make_node("ReduceMean", ["d2"], ["var"], name="ln_var", axes=[-1]),
    scalar("eps", 1e-5),
    helper.make_node("Add", ["var", "eps"], ["ve"], name="ln_add_eps"),
    helper.make_node("Sqrt", ["ve"], ["sd"], name="ln_sqrt"),
    helper.make_node("Div", ["d", "sd"], ["n"], name="ln_div"),
    helper.make_node("Mul", ["n", "ln_g"], ["ng"], name="ln_scale"),
    helper.make_node("Add", ["ng", "ln_b"], ["ln"], name="ln_bias"),
    # GELU, erf form: (x * (1 + erf(x / sqrt 2))) * 0.5
    scalar("sqrt2", 1.4142135381698608), scalar("one", 1.0),
    scalar("half", 0.5),
    helper.make_node("Div", ["ln", "sqrt2"], ["gd"], name="gelu_div"),
    helper.make_node("Erf", ["gd"], ["ge"], name="gelu_erf"),
    helper.make_node("Add", ["ge", "one"], ["ga"], name="gelu_add"),
    helper.make_node("Mul", ["ln", "ga"], ["gm"], name="gelu_mul"),
    helper.make_node("Mul", ["gm", "half"], ["gelu"], name="gelu_half"),
    # GELU, tanh form: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))
    scalar("three", 3.0), scalar("c", 0.044715), scalar("k", 0.7978845608),
    helper.make_node("Pow", ["gelu", "three"], ["t3"], name="tg_pow"),
    helper.make_node("Mul", ["c", "t3"], ["tc"], name="tg_mul_c"),
    helper.make_node("Add", ["gelu", "tc"], ["ts"], name="tg_add"),
    helper.make_node("Mul", ["ts", "k"], ["tk"], name="tg_mul_k"),
    helper.make_node("Tanh", ["tk"], ["tt"], name="tg_tanh"),
    helper.make_node("Add", ["tt", "one"], ["t1"], name="tg_one"),
    helper.make_node("Mul", ["gelu", "half"], ["th"], name="tg_half"),
    helper.make_node("Mul", ["th", "t1"], ["tgelu"], name="tg_out"),
    # RMSNorm: x * (1 / sqrt(mean(x^2) + eps)) * g
    helper.make_node("Pow", ["tgelu", "two"], ["r2"], name="rms_pow"),
    helper.make_node("ReduceMean", ["r2"], ["rm"], name="rms_mean", axes=[-1]),
    scalar("reps", 1e-6),
    helper.make_node("Add", ["rm", "reps"], ["re"], name="rms_eps"),
    helper.make_node("Sqrt", ["re"], ["rs"], name="rms_sqrt"),
    helper.make_node("Div", ["one", "rs"], ["rr"], name="rms_recip"),
    helper.make_node("Mul", ["tgelu", "rr"], ["rn"], name="rms_norm"),
    helper.make_node("Mul", ["rms_g", "rn"], ["rms"], name="rms_scale"),
    # SiLU: x * sigmoid(x)
    helper.make_node("Sigmoid", ["rms"], ["sg"], name="silu_sigmoid"),
    helper.make_node("Mul", ["sg", "rms"], ["y"], name="silu_mul"),
], [vinfo("x", F, [2, 4, 8])], [vinfo("y", F, [2, 4, 8])],
    [weight("ln_g", 8), weight("ln_b", 8), weight("rms_g", 8)])

# Ops the dialect does not model stay opaque with their attributes (the
# CumSum between them, with a constant axis, is graph.cumsum).
save("opaque", [
    helper.make_node("ThresholdedRelu", ["x"], ["h"], name="threshold",
                     alpha=1.5),
    helper.make_node("CumSum", ["h", "axis"], ["c"], name="cumsum",
                     exclusive=1),
    helper.make_node("ThresholdedRelu", ["c"], ["y"], name="threshold2",
                     alpha=0.5),
], [vinfo("x", F, [3, 5])], [vinfo("y", F, [3, 5])],
    [numpy_helper.from_array(np.array(1, np.int64), "axis")])

# CumSum with a constant axis (negative, exclusive, reverse) is
# graph.cumsum.
save("cumsum", [
    const("last", -1),
    helper.make_node("CumSum", ["x", "last"], ["c"], name="scan"),
    const("first", 0),
    helper.make_node("CumSum", ["c", "first"], ["y"], name="scan_back",
                     exclusive=1, reverse=1),
], [vinfo("x", F, [3, 5])], [vinfo("y", F, [3, 5])])

# An axis known only at run time keeps CumSum opaque.
save("cumsum_axis_input", [
    helper.make_node("CumSum", ["x", "axis"], ["y"], name="scan")],
    [vinfo("x", F, [3, 5]), vinfo("axis", I64, [])], [vinfo("y", F, [3, 5])])

# TopK with K from a Constant (opset 13: largest, sorted; negative axis)
# is graph.top_k; so is opset 9's, whose k is an attribute.
save("topk", [
    const("two", [2]),
    helper.make_node("TopK", ["x", "two"], ["v", "i"], name="best"),
    const("one", [1]),
    helper.make_node("TopK", ["x", "one"], ["w", "j"], name="worst", axis=0,
                     largest=0, sorted=0),
], [vinfo("x", F, [3, 5])],
    [vinfo("v", F, [3, 2]), vinfo("i", I64, [3, 2]), vinfo("w", F, [1, 5]),
     vinfo("j", I64, [1, 5])])
save("topk_opset9", [
    helper.make_node("TopK", ["x"], ["v", "i"], name="best", k=3, axis=0)],
    [vinfo("x", F, [4, 2])], [vinfo("v", F, [3, 2]), vinfo("i", I64, [3, 2])],
    opset=9)

# A K known only at run time cannot set the outputs' shape: an error.
save("topk_k_input", [
    helper.make_node("TopK", ["x", "k"], ["v", "i"], name="route")],
    [vinfo("x", F, [3, 5]), vinfo("k", I64, [1])],
    [vinfo("v", F, None), vinfo("i", I64, None)])

# K larger than the axis (opset 9's attribute, which ONNX's shape
# inference does not check): an error naming the node.
save("bad_topk_k", [
    helper.make_node("TopK", ["x"], ["v", "i"], name="route", k=7)],
    [vinfo("x", F, [3, 5])], [vinfo("v", F, None), vinfo("i", I64, None)],
    opset=9)

# Hardmax: the one-hot of the first maximum (opset 13, any axis), between
# two weights so that training runs through it; before opset 13 only the
# last axis means the same (hardmax_opset11 keeps axis 1 of 3 opaque).
save("hardmax", [
    helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
    helper.make_node("Hardmax", ["h"], ["m"], name="pick", axis=1),
    helper.make_node("MatMul", ["m", "w2"], ["y"], name="fc2"),
], [vinfo("x", F, [2, 3, 4])], [vinfo("y", F, [2, 3, 2])],
   [weight("w1", 4, 5), weight("w2", 5, 2)])
save("hardmax_opset11", [
    helper.make_node("Hardmax", ["x"], ["y"], name="pick", axis=1),
], [vinfo("x", F, [2, 3, 4])], [vinfo("y", F, [2, 3, 4])], opset=11)

# LRN (an even size: a window of 1 channel before and 2 after) between a
# 1x1 convolution and a weight, so that training runs through it; and one
# with size 0.
save("lrn", [
    helper.make_node("Conv", ["x", "w1"], ["c"], name="conv"),
    helper.make_node("LRN", ["c"], ["n"], name="norm", size=4, alpha=0.01,
                     beta=0.75, bias=2.0),
    helper.make_node("Mul", ["n", "w2"], ["y"], name="scale"),
], [vinfo("x", F, [2, 3, 4, 4])], [vinfo("y", F, [2, 5, 4, 4])],
   [weight("w1", 5, 3, 1, 1), weight("w2", 5, 1, 1)])
save("lrn_bad_size", [
    helper.make_node("LRN", ["x"], ["y"], name="norm", size=0),
], [vinfo("x", F, [2, 5, 4, 4])], [vinfo("y", F, [2, 5, 4, 4])])

# A loss: SoftmaxCrossEntropyLoss with ignore_index.
save("loss", [
    helper.make_node("SoftmaxCrossEntropyLoss", ["logits", "labels"], ["loss"],
                     name="sce", reduction="mean", ignore_index=-100),
], [vinfo("logits", F, ["N", 7]), vinfo("labels", I64, ["N"])],
    [vinfo("loss", F, [])])

# An exporter's cross-entropy: a linear head, LogSoftmax and
# NegativeLogLikelihoodLoss with ignore_index.
save("loss_nll", [
    helper.make_node("MatMul", ["x", "head"], ["logits"], name="head"),
    helper.make_node("LogSoftmax", ["logits"], ["logp"], name="logp", axis=1),
    helper.make_node("NegativeLogLikelihoodLoss", ["logp", "labels"], ["loss"],
                     name="nll", reduction="mean", ignore_index=-100),
], [vinfo("x", F, ["N", 8]), vinfo("labels", I64, ["N"])],
    [vinfo("loss", F, [])], [weight("head", 8, 7)])

# A reshape whose target is a graph input: not foldable, so its result
# shape cannot be inferred.
save("reshape_dynamic", [
    helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape"),
], [vinfo("x", F, [2, 6]), vinfo("shape", I64, [2])], [vinfo("y", F, None)])

# Graph-only convention of dist-modelgen: EXTERNAL data in a missing file.
graph_only_w = onnx.TensorProto()
graph_only_w.name = "w"
graph_only_w.data_type = F
graph_only_w.dims.extend([8, 4])
graph_only_w.data_location = TensorProto.EXTERNAL
for key, value in (("location", "graph_only.weights"), ("offset", "0"),
                   ("length", "128")):
    entry = graph_only_w.external_data.add()
    entry.key, entry.value = key, value
save("graph_only", [
    helper.make_node("MatMul", ["x", "w"], ["y"], name="mm"),
], [vinfo("x", F, ["batch", 8])], [vinfo("y", F, ["batch", 4])],
    [graph_only_w], meta={"distopt.graph_only": "true"})

# Opset 18 is refused (ReduceMean takes axes as an input there).
save("opset18", [
    helper.make_node("Relu", ["x"], ["y"], name="relu"),
], [vinfo("x", F, [2])], [vinfo("y", F, [2])], opset=18)

# A node without outputs (ONNX's Split inference would divide by zero).
save("no_outputs", [
    helper.make_node("Split", ["x"], [], name="split_nothing", axis=0),
    helper.make_node("Relu", ["x"], ["y"], name="relu"),
], [vinfo("x", F, [4])], [vinfo("y", F, [4])])

# Opset 9: attributes where later opsets take inputs (Unsqueeze/Squeeze
# axes, Slice starts/ends, Clip bounds, Pad pads), Softmax on the last axis
# of a 2-D input, Dropout with a ratio attribute.
save("legacy", [
    helper.make_node("Unsqueeze", ["x"], ["u"], name="unsqueeze", axes=[0]),
    helper.make_node("Slice", ["u"], ["s"], name="slice", starts=[1],
                     ends=[5], axes=[2]),
    helper.make_node("Squeeze", ["s"], ["q"], name="squeeze", axes=[0]),
    helper.make_node("Clip", ["q"], ["c"], name="clip", min=-1.0, max=1.0),
    helper.make_node("Pad", ["c"], ["p"], name="pad", pads=[0, 1, 0, 1],
                     value=0.5),
    helper.make_node("Dropout", ["p"], ["d"], name="dropout", ratio=0.25),
    helper.make_node("Softmax", ["d"], ["y"], name="softmax", axis=1),
], [vinfo("x", F, [3, 6])], [vinfo("y", F, [3, 6])], opset=9)

# A declared output shape that contradicts the ops.
save("shape_conflict", [
    helper.make_node("Relu", ["x"], ["y"], name="relu"),
], [vinfo("x", F, [2, 3])], [vinfo("y", F, [3, 3])])

# Omitted optional inputs and outputs in the middle: Resize without roi
# (linear along an axis too long for an interpolation matrix, 4 x 2^20
# coefficients; shorter ones import as matmuls), an LSTM with only its
# last hidden state (Y omitted; MaxPool's Y, which the schema requires,
# cannot be: onnxruntime and the importer reject that).
save("opaque_positions", [
    const("scales", [1.0, 1.0, 2.0, 262144.0], np.float32),
    helper.make_node("Resize", ["x", "", "scales"], ["r"], name="resize",
                     mode="linear"),
    helper.make_node("LSTM", ["s", "lw", "lr"], ["", "h"], name="lstm_h",
                     hidden_size=2),
], [vinfo("x", F, [1, 2, 4, 4]), vinfo("s", F, [3, 1, 4])],
   [vinfo("r", F, [1, 2, 8, 1048576]), vinfo("h", F, [1, 1, 2])],
   [weight("lw", 1, 8, 4), weight("lr", 1, 8, 2)])

# Range with constant inputs: a long one (position ids) becomes graph.iota,
# a short one folds to graph.constant; Mod with fmod = 1 keeps the flag.
save("range", [
    helper.make_node("Shape", ["ids"], ["shape"], name="shape"),
    const("one", 1),
    const("zero", 0),
    helper.make_node("Gather", ["shape", "one"], ["len"], name="len"),
    helper.make_node("Range", ["zero", "len", "one"], ["pos"], name="pos"),
    helper.make_node("Add", ["ids", "pos"], ["sum"], name="add"),
    const("fs", 0.5, np.float32),
    const("fl", 40.0, np.float32),
    helper.make_node("Range", ["fs", "fl", "fs"], ["posf"], name="posf"),
    const("s10", 10),
    const("s1", 1),
    const("sm3", -3),
    helper.make_node("Range", ["s10", "s1", "sm3"], ["small"], name="small"),
    const("s1000", 1000),
    const("sm7", -7),
    helper.make_node("Range", ["s1000", "zero", "sm7"], ["down"], name="down"),
    helper.make_node("Mod", ["idb", "small"], ["r"], name="rem", fmod=1),
    helper.make_node("Mod", ["idb", "small"], ["rp"], name="rem_py"),
], [vinfo("ids", I64, [2, 100]), vinfo("idb", I64, [2, 3])],
   [vinfo("sum", I64, [2, 100]), vinfo("posf", F, [79]),
    vinfo("r", I64, [2, 3]), vinfo("rp", I64, [2, 3]),
    vinfo("down", I64, [143])])

# Weights deduplicated behind Identity (how torch.onnx writes parameters
# with equal values, e.g. GPT-2's zero biases and unit norm scales, once):
# the Identity's output is a weight of its own reading the same bytes; a
# Cast of a weight stays an op on that weight, never a folded copy.
save("shared_weight", [
    helper.make_node("Identity", ["b"], ["b_alias"], name="alias"),
    helper.make_node("Add", ["x", "b"], ["h"], name="first"),
    helper.make_node("Add", ["h", "b_alias"], ["y"], name="second"),
    helper.make_node("Cast", ["b"], ["b_cast"], name="cast", to=F),
    helper.make_node("Mul", ["y", "b_cast"], ["z"], name="third"),
], [vinfo("x", F, [2, 4])], [vinfo("z", F, [2, 4])],
   [numpy_helper.from_array(np.zeros(4, np.float32), "b")])

# Training semantics (test/codegen/train-frozen.test, import/constants.test):
# a large float Constant (an additive table: 2x80 f32 = 640 bytes, above the
# 512 bytes the scanner strips) is a frozen weight; a Constant of 80 f32
# (320 bytes: more than 64 elements, but inline) a graph.constant;
# x[2,8] -> 80 -> relu -> 4, MSE loss.
save("frozen_constant", [
    helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
    helper.make_node(
        "Constant", [], ["bias_table"], name="bias_table",
        value=numpy_helper.from_array(
            np.linspace(-1, 1, 160).astype(np.float32).reshape(2, 80),
            "bias_table")),
    helper.make_node("Add", ["h", "bias_table"], ["hb"], name="add_table"),
    helper.make_node(
        "Constant", [], ["scale_row"], name="scale_row",
        value=numpy_helper.from_array(
            np.linspace(0.5, 1.5, 80).astype(np.float32).reshape(1, 80),
            "scale_row")),
    helper.make_node("Mul", ["hb", "scale_row"], ["hs"], name="scale"),
    helper.make_node("Relu", ["hs"], ["r"], name="relu"),
    helper.make_node("MatMul", ["r", "w2"], ["y"], name="fc2"),
], [vinfo("x", F, [2, 8])], [vinfo("y", F, [2, 4])],
   [weight("w1", 8, 80), weight("w2", 80, 4)])


def with_training_info(model_name, updated):
    """Adds ONNX training info whose update_binding names `updated`."""
    path = os.path.join(HERE, model_name + ".onnx")
    model = onnx.load(path)
    info = model.training_info.add()
    info.algorithm.CopyFrom(helper.make_graph(
        [helper.make_node("Identity", [u], [u + "_new"]) for u in updated],
        "algorithm", [], [vinfo(u + "_new", F, None) for u in updated]))
    for u in updated:
        entry = info.update_binding.add()
        entry.key, entry.value = u, u + "_new"
    onnx.save(model, path)


# The same network with training info that updates only w2: w1 is frozen.
save("training_info", [
    helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
    helper.make_node("Relu", ["h"], ["r"], name="relu"),
    helper.make_node("MatMul", ["r", "w2"], ["y"], name="fc2"),
], [vinfo("x", F, [2, 8])], [vinfo("y", F, [2, 4])],
   [weight("w1", 8, 80), weight("w2", 80, 4)])
with_training_info("training_info", ["w2"])

# An If on a scalar input (silero VAD picks its branch by sample rate): the
# branches give different shapes, so only --input-value=sr:VALUE, which
# folds the condition, gives the output a static shape.
save("if_scalar", [
    const("rate", 16000),
    helper.make_node("Equal", ["sr", "rate"], ["is16k"], name="is16k"),
    helper.make_node("If", ["is16k"], ["y"], name="by_rate",
                     then_branch=helper.make_graph(
                         [helper.make_node("Mul", ["x", "two"], ["y_then"],
                                           name="double")],
                         "then", [], [vinfo("y_then", F, [1, 4])],
                         initializer=[numpy_helper.from_array(
                             np.array(2.0, np.float32), "two")]),
                     else_branch=helper.make_graph(
                         [const("shape22", [2, 2]),
                          helper.make_node("Reshape", ["x", "shape22"],
                                           ["y_else"], name="square")],
                         "else", [], [vinfo("y_else", F, [2, 2])])),
], [vinfo("x", F, [1, 4]), vinfo("sr", I64, [])], [vinfo("y", F, None)])

# An If on a boolean input nothing pins: both branches give [2, 4], so it
# imports as graph.opaque "If" reading the condition and the values its
# branches use (x, w1, w2); the MatMul after it is planned as usual.
B = TensorProto.BOOL
save("if_runtime", [
    helper.make_node("If", ["flag"], ["h"], name="pick",
                     then_branch=helper.make_graph(
                         [helper.make_node("MatMul", ["x", "w1"], ["h_then"],
                                           name="fc_then")],
                         "then", [], [vinfo("h_then", F, None)]),
                     else_branch=helper.make_graph(
                         [helper.make_node("MatMul", ["x", "w2"], ["m"],
                                           name="fc_else"),
                          helper.make_node("Relu", ["m"], ["h_else"],
                                           name="relu_else")],
                         "else", [], [vinfo("h_else", F, None)])),
    helper.make_node("MatMul", ["h", "w3"], ["y"], name="head"),
], [vinfo("x", F, [2, 8]), vinfo("flag", B, [])], [vinfo("y", F, None)],
   [weight("w1", 8, 4), weight("w2", 8, 4), weight("w3", 4, 3)])

# An If decided at run time whose else_branch does the work (a 64x2048 by
# 2048x64 MatMul of x with its transpose, 16.8 MFLOP per sample, scaled by
# a constant of the outer graph) and whose then_branch only slices x: the
# cost model prices the If as its more expensive branch (if-cost.test).
save("if_cost", [
    const("scale", 0.5, np.float32),
    helper.make_node("If", ["flag"], ["y"], name="choose",
                     then_branch=helper.make_graph(
                         [const("s_start", [0]), const("s_end", [64]),
                          const("s_axes", [2]),
                          helper.make_node("Slice",
                                           ["x", "s_start", "s_end", "s_axes"],
                                           ["y_then"], name="cut")],
                         "then", [], [vinfo("y_then", F, None)]),
                     else_branch=helper.make_graph(
                         [helper.make_node("Transpose", ["x"], ["xt"],
                                           name="flip", perm=[0, 2, 1]),
                          helper.make_node("MatMul", ["x", "xt"], ["g"],
                                           name="gram"),
                          helper.make_node("Mul", ["g", "scale"], ["y_else"],
                                           name="halve")],
                         "else", [], [vinfo("y_else", F, None)])),
], [vinfo("x", F, [1, 64, 2048]), vinfo("flag", B, [])], [vinfo("y", F, None)])

# The same If with a then_branch that holds an initializer of its own
# (a bias): the importer keeps no function for it, says so in a remark,
# and the If gets the generic opaque cost (if-cost.test).
save("if_branch_init", [
    helper.make_node("If", ["flag"], ["y"], name="choose",
                     then_branch=helper.make_graph(
                         [helper.make_node("Add", ["x", "bias"], ["y_then"],
                                           name="shift")],
                         "then", [], [vinfo("y_then", F, None)],
                         initializer=[weight("bias", 2048)]),
                     else_branch=helper.make_graph(
                         [helper.make_node("Relu", ["x"], ["y_else"],
                                           name="clamp")],
                         "else", [], [vinfo("y_else", F, None)])),
], [vinfo("x", F, [1, 64, 2048]), vinfo("flag", B, [])], [vinfo("y", F, None)])

# An If inside a branch of an If: its branch functions sit next to the
# outer ones in @if_branches, named from there; the outer If costs the inner
# one's MatMul of x by itself (2 x 256^3 FLOPs; if-cost.test).
save("if_nested", [
    helper.make_node("If", ["flag"], ["y"], name="outer",
                     then_branch=helper.make_graph(
                         [helper.make_node(
                             "If", ["flag2"], ["z"], name="inner",
                             then_branch=helper.make_graph(
                                 [helper.make_node("MatMul", ["x", "x"],
                                                   ["z_then"], name="square")],
                                 "inner_then", [],
                                 [vinfo("z_then", F, None)]),
                             else_branch=helper.make_graph(
                                 [helper.make_node("Relu", ["x"], ["z_else"],
                                                   name="clamp")],
                                 "inner_else", [],
                                 [vinfo("z_else", F, None)]))],
                         "then", [], [vinfo("z", F, None)]),
                     else_branch=helper.make_graph(
                         [helper.make_node("Neg", ["x"], ["y_else"],
                                           name="negate")],
                         "else", [], [vinfo("y_else", F, None)])),
], [vinfo("x", F, [256, 256]), vinfo("flag", B, []), vinfo("flag2", B, [])],
   [vinfo("y", F, None)])

# An If on an integer input whose branches disagree in dim 0 ([1, 4] and
# [2, 4]): no static shape, an error naming both.
save("if_dims", [
    const("zero", 0),
    helper.make_node("Greater", ["n", "zero"], ["positive"], name="positive"),
    helper.make_node("If", ["positive"], ["y"], name="grow",
                     then_branch=helper.make_graph(
                         [helper.make_node("Identity", ["x"], ["y_then"],
                                           name="keep")],
                         "then", [], [vinfo("y_then", F, None)]),
                     else_branch=helper.make_graph(
                         [helper.make_node("Concat", ["x", "x"], ["y_else"],
                                           name="twice", axis=0)],
                         "else", [], [vinfo("y_else", F, None)])),
], [vinfo("x", F, [1, 4]), vinfo("n", I64, [])], [vinfo("y", F, None)])

# Invalid models that once crashed the importer or imported as a wrong
# program (issue 12; errors.test checks each message, and the fuzz
# regression corpus runs them all). onnxruntime rejects every one.
X4 = vinfo("x", F, [1, 2, 8, 8])
save("bad_zero_stride", [
    helper.make_node("MaxPool", ["x"], ["y"], name="pool", kernel_shape=[2, 2],
                     strides=[0, 0])], [X4], [vinfo("y", F, None)])
# auto_pad="SAME" (TensorFlow's spelling): ONNX 1.12's inference takes any
# value but NOTSET and VALID for SAME, so an unknown one is refused first
# (dist-fuzz onnx: with a huge extent it padded by subtraction for ages).
save("bad_auto_pad", [
    helper.make_node("Conv", ["x", "w"], ["y"], name="conv", auto_pad="SAME")],
    [X4], [vinfo("y", F, None)], [weight("w", 4, 2, 3, 3)])
save("bad_shape_of_failed", [
    helper.make_node("MatMul", ["a", "b"], ["c"], name="mm"),
    helper.make_node("Shape", ["c"], ["s"], name="shape"),
    helper.make_node("Reshape", ["a", "s"], ["y"], name="reshape"),
], [vinfo("a", F, [2, 3]), vinfo("b", F, [4, 5])], [vinfo("y", F, None)],
    opset=15)
save("bad_arity", [helper.make_node("Div", ["a"], ["y"], name="div")],
     [vinfo("a", F, [2, 3])], [vinfo("y", F, None)])
save("bad_extra_operand", [
    helper.make_node("Relu", ["a", "a"], ["y"], name="relu")],
    [vinfo("a", F, [2, 3])], [vinfo("y", F, None)])
save("bad_duplicate_input", [
    helper.make_node("Add", ["a", "a"], ["y"], name="add")],
    [vinfo("a", F, [2, 3]), vinfo("a", F, [2, 3])], [vinfo("y", F, None)])
save("bad_redefined", [
    helper.make_node("Relu", ["a"], ["t"], name="first"),
    helper.make_node("Neg", ["a"], ["t"], name="second"),
], [vinfo("a", F, [2, 3])], [vinfo("t", F, None)])
nodata = TensorProto()
nodata.name, nodata.data_type = "w", F
nodata.dims.extend([2, 3])
save("bad_initializer_no_data", [
    helper.make_node("Add", ["a", "w"], ["y"], name="add")],
    [vinfo("a", F, [2, 3])], [vinfo("y", F, None)], [nodata])
varint = helper.make_tensor("w", I64, [100], list(range(100)))
save("bad_initializer_varints", [
    helper.make_node("Add", ["a", "w"], ["y"], name="add")],
    [vinfo("a", I64, [100])], [vinfo("y", I64, None)], [varint])
save("bad_constant_of_shape_overflow", [
    helper.make_node("ConstantOfShape", ["shape"], ["y"], name="fill")],
    [], [vinfo("y", F, None)],
    [numpy_helper.from_array(np.array([2**62, 2**62], np.int64), "shape")])
save("bad_complex_bias", [
    helper.make_node("Gemm", ["a", "w", "c"], ["y"], name="gemm")],
    [vinfo("a", F, [2, 3])], [vinfo("y", F, None)],
    [weight("w", 3, 4),
     helper.make_tensor("c", TensorProto.COMPLEX64, [4], [1 + 0j] * 4)])
save("bad_conv_transpose_rank", [
    helper.make_node("ConvTranspose", ["a", "w"], ["y"], name="deconv")],
    [vinfo("a", F, [1, 2, 4, 4])], [vinfo("y", F, None)],
    [numpy_helper.from_array(np.ones([2], np.float32), "w")])
# GatherElements whose indices do not have the data's rank (ONNX's shape
# inference passes it): the importer says so.
save("bad_gather_elements_rank", [
    helper.make_node("GatherElements", ["a", "i"], ["y"], name="pick", axis=1)],
    [vinfo("a", F, [2, 3]), vinfo("i", I64, [2])], [vinfo("y", F, [2])])
# A Reshape target whose raw_data is shorter than its dims say (found by
# dist-fuzz onnx: ONNX's shape inference copied past the buffer), and a
# Constant attribute holding fewer typed values than its dims.
short_shape = numpy_helper.from_array(np.array([2, 3], np.int64), "shape")
short_shape.raw_data = short_shape.raw_data[:1]
save("bad_short_raw_data", [
    helper.make_node("Reshape", ["a", "shape"], ["y"], name="reshape")],
    [vinfo("a", F, [3, 2])], [vinfo("y", F, None)], [short_shape])
few = helper.make_tensor("c", F, [2], [1.0, 2.0])
few.dims[0] = 4
save("bad_short_constant", [
    helper.make_node("Constant", [], ["c"], name="const", value=few),
    helper.make_node("Add", ["a", "c"], ["y"], name="add")],
    [vinfo("a", F, [4])], [vinfo("y", F, None)])
# A Range whose start is a Constant scalar with no data at all (dist-fuzz
# onnx: ONNX 1.12's Range inference read its missing element): the
# importer names the Constant.
empty = TensorProto()
empty.data_type = I64
save("bad_empty_constant", [
    helper.make_node("Constant", [], ["zero"], name="zero", value=empty),
    helper.make_node("Range", ["zero", "n", "one"], ["y"], name="range")],
    [], [vinfo("y", I64, None)],
    [numpy_helper.from_array(np.array(4, np.int64), "n"),
     numpy_helper.from_array(np.array(1, np.int64), "one")])

# Resize by interpolation: bilinear x2 along H and x1.5 along W with the
# scales a float initializer (a constant of the computation, not a
# weight), and nearest with scales fed at run time (taken as out / in,
# with a warning).
save("resize", [
    helper.make_node("Resize", ["x", "", "scales"], ["y"], name="bilinear",
                     mode="linear"),
    helper.make_node("Resize", ["x", "", "rt"], ["z"], name="runtime",
                     mode="nearest")],
    [vinfo("x", F, [1, 1, 2, 4]), vinfo("rt", F, [4])],
    [vinfo("y", F, [1, 1, 4, 6]), vinfo("z", F, [1, 1, 3, 4])],
    [numpy_helper.from_array(np.array([1, 1, 2, 1.5], np.float32), "scales")])

# Symbolic dimensions shared by name (--input-dim): a BERT-style embedding
# whose three inputs are all [batch, sequence], the output declared with the
# same names; a [2, batch, 128] state whose open dim is not the leading one;
# and dims an exporter left unnamed or named with an expression.
BS = ["batch", "sequence"]
save("bert_dims", [
    helper.make_node("Gather", ["word", "input_ids"], ["we"], name="word_emb"),
    helper.make_node("Gather", ["types", "token_type_ids"], ["te"],
                     name="type_emb"),
    helper.make_node("Add", ["we", "te"], ["emb"], name="add"),
    helper.make_node("Cast", ["attention_mask"], ["maskf"], name="cast", to=F),
    const("axis2", [2]),
    helper.make_node("Unsqueeze", ["maskf", "axis2"], ["mask3"],
                     name="unsqueeze"),
    helper.make_node("Mul", ["emb", "mask3"], ["out"], name="mask")],
    [vinfo("input_ids", I64, BS), vinfo("attention_mask", I64, BS),
     vinfo("token_type_ids", I64, BS)],
    [vinfo("out", F, BS + [8])],
    [weight("word", 32, 8), weight("types", 2, 8)])
# A float model with a symbolic sequence dimension, for dist-profile's
# --input-dim (test/distributed/dist-profile-input-dim.test).
save("seq_linear", [
    helper.make_node("MatMul", ["x", "w"], ["y"], name="proj")],
    [vinfo("x", F, BS + [8])], [vinfo("y", F, BS + [4])], [weight("w", 8, 4)])
save("state_dims", [
    helper.make_node("Relu", ["state"], ["y"], name="relu")],
    [vinfo("state", F, [2, "batch", 128])], [vinfo("y", F, [2, "batch", 128])])
save("odd_dims", [
    helper.make_node("Relu", ["x"], ["y"], name="relu"),
    helper.make_node("Relu", ["z"], ["w"], name="relu_z")],
    [vinfo("x", F, [None, "2*s0", 4]), vinfo("z", F, [1, None])],
    [vinfo("y", F, None), vinfo("w", F, None)])

# Einsum (issue 14): contractions as graph.matmul (f32) or broadcasting
# graph.binary mul + graph.reduce sum (f64), a diagonal as
# graph.gather_elements, sums, ellipsis broadcasting, implicit outputs.
D = TensorProto.DOUBLE
save("einsum", [
    helper.make_node("Einsum", ["x", "w"], ["y1"], name="bmm",
                     equation="bij,jk->bik"),
    helper.make_node("Einsum", ["x", "w"], ["y2"], name="ellipsis",
                     equation="...ij,jk"),
    helper.make_node("Einsum", ["x", "x"], ["y3"], name="dots",
                     equation="bij,bij->b"),
    helper.make_node("Einsum", ["x"], ["y4"], name="sum_t",
                     equation="bij->jb"),
    helper.make_node("Einsum", ["a", "b", "c"], ["z1"], name="chain",
                     equation="ij,jk,kl->il"),
    helper.make_node("Einsum", ["a"], ["z2"], name="trace", equation="ii"),
    helper.make_node("Einsum", ["a"], ["z3"], name="diag",
                     equation="ii->i"),
    helper.make_node("Einsum", ["b", "a"], ["z4"], name="outer_ellipsis",
                     equation="i..., jj -> ...ij"),
], [vinfo("x", F, [2, 3, 4]), vinfo("w", F, [4, 2]), vinfo("a", D, [3, 3]),
    vinfo("b", D, [3, 2]), vinfo("c", D, [2, 4])],
   [vinfo("y1", F, [2, 3, 2]), vinfo("y2", F, [2, 3, 2]), vinfo("y3", F, [2]),
    vinfo("y4", F, [4, 2]), vinfo("z1", D, [3, 4]), vinfo("z2", D, []),
    vinfo("z3", D, [3]), vinfo("z4", D, [2, 3, 3])], opset=12)
# Einsum equations the importer refuses, naming the node and the equation:
# an output label no input has, and a '.' outside an ellipsis.
save("bad_einsum_label", [
    helper.make_node("Einsum", ["a", "b"], ["y"], name="contract",
                     equation="ij,jk->ix")],
    [vinfo("a", F, [2, 3]), vinfo("b", F, [3, 4])], [vinfo("y", F, [2, 4])],
    opset=12)
save("bad_einsum_dots", [
    helper.make_node("Einsum", ["a"], ["y"], name="dots", equation="i.j->i")],
    [vinfo("a", F, [2, 3])], [vinfo("y", F, [2])], opset=12)

# GatherND (batch_dims 0 and 1) and ScatterElements (add along axis 1, mul
# along axis 0) with their indices as graph inputs: the compiled program
# checks their range at run time.
save("gather_scatter", [
    helper.make_node("GatherND", ["x", "i"], ["g0"], name="gather_nd"),
    helper.make_node("GatherND", ["x", "j"], ["g1"], name="gather_nd_batch",
                     batch_dims=1),
    helper.make_node("ScatterElements", ["a", "s", "u"], ["s0"],
                     name="scatter_add", axis=1, reduction="add"),
    helper.make_node("ScatterElements", ["a", "t", "v"], ["s1"],
                     name="scatter_mul", reduction="mul"),
    helper.make_node("ScatterElements", ["a", "s", "u"], ["s2"],
                     name="scatter"),
], [vinfo("x", F, [2, 3, 4]), vinfo("i", I64, [2, 2]),
    vinfo("j", I64, [2, 1, 1]), vinfo("a", F, [3, 4]),
    vinfo("s", I64, [3, 2]), vinfo("u", F, [3, 2]), vinfo("t", I64, [2, 4]),
    vinfo("v", F, [2, 4])],
   [vinfo("g0", F, [2, 4]), vinfo("g1", F, [2, 1, 4]), vinfo("s0", F, [3, 4]),
    vinfo("s1", F, [3, 4]), vinfo("s2", F, [3, 4])], opset=16)
# ScatterElements whose updates do not have the indices' shape (ONNX's
# shape inference passes it): the importer says so.
save("bad_scatter_elements_shape", [
    helper.make_node("ScatterElements", ["a", "i", "u"], ["y"], name="put",
                     axis=1)],
    [vinfo("a", F, [2, 3]), vinfo("i", I64, [2, 1]), vinfo("u", F, [2, 2])],
    [vinfo("y", F, [2, 3])], opset=16)
# ScatterElements with a reduction ONNX does not define ("maximum" for
# max): the importer names the node and the reductions it knows.
save("bad_scatter_reduction", [
    helper.make_node("ScatterElements", ["a", "i", "u"], ["y"], name="put_max",
                     axis=1, reduction="maximum")],
    [vinfo("a", F, [2, 3]), vinfo("i", I64, [2, 1]), vinfo("u", F, [2, 1])],
    [vinfo("y", F, [2, 3])], opset=16)
# ScatterND: a row overwritten per tuple (a negative index), elements added
# and multiplied at tuples (one repeated).
save("scatter_nd", [
    helper.make_node("ScatterND", ["a", "p", "r"], ["n0"], name="put_rows"),
    helper.make_node("ScatterND", ["a", "q", "w"], ["n1"], name="add_at",
                     reduction="add"),
    helper.make_node("ScatterND", ["a", "q", "w"], ["n2"], name="mul_at",
                     reduction="mul"),
], [vinfo("a", F, [3, 4]), vinfo("p", I64, [2, 1]), vinfo("r", F, [2, 4]),
    vinfo("q", I64, [3, 2]), vinfo("w", F, [3])],
   [vinfo("n0", F, [3, 4]), vinfo("n1", F, [3, 4]), vinfo("n2", F, [3, 4])],
   opset=16)
# ScatterND whose updates do not have indices.shape[:-1] + data.shape[k:]
# (ONNX's shape inference passes it): the importer says so.
save("bad_scatter_nd_shape", [
    helper.make_node("ScatterND", ["a", "i", "u"], ["y"], name="put")],
    [vinfo("a", F, [2, 3]), vinfo("i", I64, [2, 1]), vinfo("u", F, [2, 2])],
    [vinfo("y", F, [2, 3])], opset=16)
# Einsum between a weight and the loss (a contraction, then a diagonal):
# training updates the weight through the ops it lowers into.
save("einsum_train", [
    helper.make_node("Einsum", ["x", "w"], ["h"], name="contract",
                     equation="bij,jk->bik"),
    helper.make_node("Einsum", ["h"], ["y"], name="diag",
                     equation="bii->bi"),
], [vinfo("x", F, [2, 3, 3])], [vinfo("y", F, [2, 3])], [weight("w", 3, 3)],
   opset=12)
