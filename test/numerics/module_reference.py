#!/usr/bin/env python3
"""PyTorch-module training reference: transformers models, not ONNX graphs.

Builds a small Hugging Face `transformers` model with random weights
(seeded), exports it with torch.onnx.export (static shapes, constant
folding, as a user would), writes a batch of inputs as .npy files, then
trains the *PyTorch module itself* in float64 with torch.optim.Adam for
--steps steps on that batch: what the module trains is what PyTorch
trains (buffers such as causal masks and rotary tables, and parameters
with requires_grad=False, stay fixed). test/numerics/run_modules.py
compiles the export with dist-compile --train and compares.

Writes into --work:
  MODEL.onnx            the export (weights inline)
  MODEL.INPUT.npy       one file per graph input, and MODEL.labels.npy
  MODEL.ref.npz         losses (one per step, before that step's update),
                        and for every ONNX initializer that maps to a
                        module parameter, its end value under
                        "end/<initializer name>" and the largest |gradient|
                        each element saw under "gradmax/<name>" (both in
                        the initializer's layout: transposed or sliced);
                        frozen ones under "start/<name>"
  MODEL.json            the dist-compile --train options, inputs, the
                        initializer -> parameter map, and the frozen
                        parameters

Run with Debian's python3-torch 1.13 and transformers 4.40.2 (the venv of
requirements-fixtures.txt, created with --system-site-packages).
"""
import argparse
import json
import os
import sys
import warnings

import numpy as np
import onnx
import onnx.numpy_helper
import torch
import torch.nn.functional as F

BATCH = 2
SEQ = 16
VOCAB = 128


# Decoder-only LMs of one size: 2 layers, hidden 32, 4 query / 2 KV heads.
LM_SIZES = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=64,
                num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, max_position_embeddings=2 * SEQ,
                use_cache=False, tie_word_embeddings=False,
                attn_implementation="eager")


def llama():
    from transformers import LlamaConfig, LlamaForCausalLM
    return LlamaForCausalLM(LlamaConfig(**LM_SIZES)), "lm"


# Mistral's sliding window stays above the sequence length: torch 1.13's
# exporter traces transformers 4.40.2's sliding-window mask wrongly (with a
# window of 8 over 16 tokens onnxruntime's logits differ from the module's
# by 0.6), so a shorter window would test the exporter, not the training.
def mistral():
    from transformers import MistralConfig, MistralForCausalLM
    return MistralForCausalLM(MistralConfig(sliding_window=4096, **LM_SIZES)), "lm"


def whisper():
    from transformers import WhisperConfig, WhisperForConditionalGeneration
    cfg = WhisperConfig(vocab_size=VOCAB, num_mel_bins=8, encoder_layers=1,
                        decoder_layers=1, encoder_attention_heads=2,
                        decoder_attention_heads=2, encoder_ffn_dim=64,
                        decoder_ffn_dim=64, d_model=32,
                        max_source_positions=SEQ, max_target_positions=SEQ,
                        use_cache=False, tie_word_embeddings=False,
                        dropout=0.0, attention_dropout=0.0,
                        activation_dropout=0.0, attn_implementation="eager",
                        decoder_start_token_id=1, pad_token_id=0,
                        bos_token_id=1, eos_token_id=2)
    return WhisperForConditionalGeneration(cfg), "speech"


def bert():
    from transformers import BertConfig, BertForSequenceClassification
    cfg = BertConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
                     num_attention_heads=2, intermediate_size=64,
                     max_position_embeddings=2 * SEQ, num_labels=3,
                     hidden_dropout_prob=0.0,
                     attention_probs_dropout_prob=0.0,
                     attn_implementation="eager")
    return BertForSequenceClassification(cfg), "classify"


def vit():
    from transformers import ViTConfig, ViTForImageClassification
    cfg = ViTConfig(image_size=16, patch_size=8, num_channels=3,
                    hidden_size=32, num_hidden_layers=2,
                    num_attention_heads=2, intermediate_size=64,
                    num_labels=3, hidden_dropout_prob=0.0,
                    attention_probs_dropout_prob=0.0)
    return ViTForImageClassification(cfg), "image"


MODELS = {"llama": llama, "mistral": mistral, "whisper": whisper,
          "bert": bert, "vit": vit}


def make_batch(kind, rng):
    """Graph inputs (name -> array, in export order) and the labels.

    Token ids start at 1: BERT's and Whisper's token tables are
    nn.Embedding(padding_idx=0), whose row 0 PyTorch never trains. The ONNX
    graph does not say so (a Gather of a weight), so an exported model
    trains that row when a batch holds id 0."""
    def ids(shape):
        return rng.integers(1, VOCAB, shape).astype(np.int64)
    if kind == "lm":
        return {"input_ids": ids((BATCH, SEQ))}, ids((BATCH, SEQ))
    if kind == "speech":
        feats = rng.standard_normal((BATCH, 8, 2 * SEQ)).astype(np.float32)
        return ({"input_features": feats,
                 "decoder_input_ids": ids((BATCH, SEQ // 2))},
                ids((BATCH, SEQ // 2)))
    if kind == "classify":
        return {"input_ids": ids((BATCH, SEQ))}, rng.integers(0, 3, (BATCH,))
    pixels = rng.standard_normal((BATCH, 3, 16, 16)).astype(np.float32)
    return {"pixel_values": pixels}, rng.integers(0, 3, (BATCH,))


def map_initializers(onnx_path, params):
    """ONNX initializer name -> (parameter name, layout) for every float
    initializer holding a parameter's start value: the same name and
    value, the transpose of a matrix (a Linear folded into MatMul), or its
    leading rows (a position table sliced by static position ids)."""
    model = onnx.load(onnx_path)
    mapping = {}
    for init in model.graph.initializer:
        a = onnx.numpy_helper.to_array(init)
        if a.dtype != np.float32:
            continue
        p = params.get(init.name)
        if p is not None and p.shape == a.shape and np.array_equal(p, a):
            mapping[init.name] = (init.name, "same")
            continue
        for name, p in params.items():
            if p.ndim == 2 and p.T.shape == a.shape and np.array_equal(p.T, a):
                mapping[init.name] = (name, "transpose")
                break
            if (p.ndim == a.ndim and p.shape[1:] == a.shape[1:]
                    and p.shape[0] > a.shape[0]
                    and np.array_equal(p[:a.shape[0]], a)):
                mapping[init.name] = (name, "rows")
                break
    # Identity outputs of deduplicated parameters carry the parameter name.
    for node in model.graph.node:
        if node.op_type == "Identity" and node.output[0] in params:
            mapping[node.output[0]] = (node.output[0], "same")
    return mapping


def layout(p, how, shape):
    """A parameter's value in the layout of the initializer holding it."""
    if how == "transpose":
        return p.T
    if how == "rows":
        return p[:shape[0]]
    return p


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, choices=sorted(MODELS))
    ap.add_argument("--work", required=True)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--dtype", choices=["float64", "float32"], default="float64",
                    help="float32 measures PyTorch's own round-off against the "
                         "float64 run")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    os.makedirs(args.work, exist_ok=True)
    torch.manual_seed(0)
    model, kind = MODELS[args.model]()
    model.config.return_dict = False
    model.eval()  # no dropout (every dropout rate is 0 as well)
    rng = np.random.default_rng(0)
    feeds, labels = make_batch(kind, rng)
    stem = os.path.join(args.work, args.model)
    onnx_path = stem + ".onnx"
    with torch.no_grad():
        torch.onnx.export(model, ({n: torch.from_numpy(v)
                                   for n, v in feeds.items()},),
                          onnx_path, input_names=list(feeds),
                          output_names=["logits"], opset_version=17,
                          do_constant_folding=True)
    for name, value in feeds.items():
        np.save("%s.%s.npy" % (stem, name), value)
    np.save(stem + ".labels.npy", labels.astype(np.int64))

    start = {n: p.detach().numpy().copy() for n, p in model.named_parameters()}
    frozen = [n for n, p in model.named_parameters() if not p.requires_grad]
    mapping = map_initializers(onnx_path, start)
    shapes = {i.name: tuple(i.dims) for i in onnx.load(onnx_path).graph.initializer}

    # float64 throughout (tensors the model creates itself too, e.g. masks).
    dtype = getattr(torch, args.dtype)
    torch.set_default_dtype(dtype)
    model.to(dtype)
    trained = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(trained, lr=args.lr)
    inputs = {n: torch.from_numpy(v).to(dtype) if v.dtype == np.float32
              else torch.from_numpy(v) for n, v in feeds.items()}
    target = torch.from_numpy(labels.astype(np.int64)).reshape(-1)
    losses = []
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    gradmax = {n: torch.zeros_like(p) for n, p in named}
    for _ in range(args.steps):
        opt.zero_grad()
        logits = model(**inputs)[0]
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target)
        loss.backward()
        for n, p in named:
            if p.grad is not None:
                gradmax[n] = torch.maximum(gradmax[n], p.grad.abs())
        opt.step()
        losses.append(loss.item())
    end = {n: p.detach().numpy() for n, p in model.named_parameters()}
    out = {"losses": np.array(losses)}
    # The parameters the export holds: a table sliced by static positions
    # keeps only its leading rows.
    held = int(sum(p.numel() for _, p in named))
    for init, (param, how) in mapping.items():
        shape = start[param].shape
        if how == "rows":
            shape = shapes[init]
            if param not in frozen:
                held -= start[param].size - int(np.prod(shape))
        out["end/" + init] = layout(end[param], how, shape)
        if param in gradmax:
            out["gradmax/" + init] = layout(gradmax[param].numpy(), how, shape)
        else:
            out["start/" + init] = layout(start[param], how, shape)
    np.savez(stem + ".ref.npz", **out)
    train = "loss=softmax-cross-entropy:labels optimizer=adam lr=%g" % args.lr
    if frozen:
        train += " freeze=" + ",".join(frozen)
    with open(stem + ".json", "w") as f:
        json.dump({"train": train, "inputs": list(feeds), "frozen": frozen,
                   "mapping": mapping,
                   "parameters": held}, f,
                  indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
