"""The inputs the benchmarks feed a bench/codegen model (shared by
bench_ort.py and bench/gpu/make_bundle.py): one .npy file per graph
input, random token ids below VOCAB for int64 inputs (all ones for a mask),
standard normal for float inputs, seeded, so every program and onnxruntime
see the same values."""
import os

import numpy as np
import onnx

VOCAB = 4096


def make_inputs(path, work, prefix=""):
    """Writes the inputs of the model at `path` under `work`; returns
    (feeds by name, the program's NAME=FILE arguments, output names)."""
    model = onnx.load(path, load_external_data=False)
    rng = np.random.default_rng(0)
    feeds, args = {}, []
    for i in model.graph.input:
        dims = [d.dim_value for d in i.type.tensor_type.shape.dim]
        if i.type.tensor_type.elem_type == onnx.TensorProto.INT64:
            a = (np.ones(dims) if "mask" in i.name
                 else rng.integers(0, VOCAB, dims)).astype(np.int64)
        else:
            a = rng.standard_normal(dims).astype(np.float32)
        f = os.path.join(work, prefix + i.name + ".npy")
        np.save(f, a)
        feeds[i.name] = a
        args.append(f"{i.name}={f}")
    return feeds, args, [o.name for o in model.graph.output]
