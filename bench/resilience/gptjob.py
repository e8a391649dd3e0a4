"""The training job the recovery benchmarks share (elastic.py,
bamboo_runtime.py): a graph-only `dist-modelgen gpt` of 4 blocks and one
batch of 8 sequences for it."""
import os

import numpy as np

from benchutil import run


def gpt_batch(tools, tmp, hidden, seq):
    """Writes TMP/gpt.onnx (4 blocks, 4 heads, vocabulary 2048) and a batch
    of 8 random sequences with their next-token labels; returns the model's
    path and the program's arguments that feed the batch (-o TMP)."""
    model = os.path.join(tmp, "gpt.onnx")
    run([os.path.join(tools, "dist-modelgen"), "gpt", "--layers", "4",
         "--hidden", str(hidden), "--heads", "4", "--seq", str(seq),
         "--vocab", "2048", "-o", model])
    rng = np.random.default_rng(3)
    ids = rng.integers(0, 2048, (8, seq)).astype(np.int64)
    np.save(os.path.join(tmp, "ids.npy"), ids)
    np.save(os.path.join(tmp, "labels.npy"), np.roll(ids, -1, axis=1))
    return model, [f"input_ids={tmp}/ids.npy", f"labels={tmp}/labels.npy",
                   "-o", tmp]
