#!/usr/bin/env python3
"""Writes GPT-2 124M (the real 12-layer, 768-wide, 50257-vocab configuration)
with random weights, exported by torch.onnx.export (opset 17, dynamic batch,
sequence 1024), in two layouts:

  OUT/gpt2-124m.onnx                         weights inline (raw_data)
  OUT/gpt2-124m-ext.onnx + gpt2-124m-ext.weights   weights as external data

Needs the fixtures venv (torch 1.13 + transformers, requirements-fixtures.txt):

  .venv-fixtures/bin/python bench/import/make_gpt2_124m.py OUT
"""

import os
import sys
import tempfile

import onnx
import torch


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out, exist_ok=True)
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(0)
    config = GPT2Config(use_cache=False, attn_implementation="eager")
    model = GPT2LMHeadModel(config).eval()
    model.config.return_dict = False
    params = sum(p.numel() for p in model.parameters())
    inline = os.path.join(out, "gpt2-124m.onnx")
    ids = torch.randint(0, config.vocab_size, (1, config.n_positions))
    with torch.no_grad():
        torch.onnx.export(model, (ids,), inline, input_names=["input_ids"],
                          output_names=["logits"], opset_version=17,
                          dynamic_axes={"input_ids": {0: "batch"},
                                        "logits": {0: "batch"}},
                          do_constant_folding=True)
    print("%s: %d parameters, %d bytes" % (inline, params,
                                           os.path.getsize(inline)))
    ext = os.path.join(out, "gpt2-124m-ext.onnx")
    weights = "gpt2-124m-ext.weights"
    if os.path.exists(os.path.join(out, weights)):
        os.remove(os.path.join(out, weights))
    m = onnx.load(inline)
    onnx.save_model(m, ext, save_as_external_data=True,
                    all_tensors_to_one_file=True, location=weights,
                    size_threshold=0)
    print("%s: %d bytes + %s: %d bytes" % (
        ext, os.path.getsize(ext), weights,
        os.path.getsize(os.path.join(out, weights))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
