#!/usr/bin/env python3
"""Exports the inference benchmark set of bench/codegen/bench_ort.py.

Ten real architectures, each built by the library that defines it
(Hugging Face transformers 4.40.2, torchvision 0.14) with random weights
and small configurations, exported by the standard `torch.onnx.export`
with a fixed batch of 2 and weights inline. Nothing is downloaded. The
files are large-ish (1-40 MB), so they are written to OUT (default
build/bench-models) and never committed; bench_ort.py calls this script
when a model is missing.

Run with the fixtures venv (docs/fixtures.md: Debian's python3-torch and
python3-torchvision seen through a --system-site-packages venv holding
transformers 4.40.2):

    .venv-fixtures/bin/python bench/codegen/make_models.py [--out DIR] [--only NAME...]
"""

import argparse
import os
import sys
import tempfile

import onnx
import torch

BATCH = 2
SEQ = 128
VOCAB = 4096
IMAGE = 128


def _export(model, args, path, input_names, output_names, opset=17):
    model.eval()
    with torch.no_grad():
        torch.onnx.export(model, args, path, input_names=input_names,
                          output_names=output_names, opset_version=opset,
                          do_constant_folding=True)


def _constants_to_initializers(model):
    """Moves the tensors of Constant nodes into graph initializers (same
    values, same names). Works around an importer bug found with these
    models: a Constant node whose tensor is larger than the importer's
    inline limit (the rotary position ids of LLaMA at sequence 128) was
    imported as a graph.weight without a file, so its values came from the
    graph-only initialization rule (DistOpt's LLaMA logits then differed
    from onnxruntime's by 5.8e-2)."""
    kept = []
    for node in model.graph.node:
        attrs = {a.name: a for a in node.attribute}
        if node.op_type == "Constant" and list(attrs) == ["value"]:
            t = onnx.TensorProto()
            t.CopyFrom(attrs["value"].t)
            t.name = node.output[0]
            model.graph.initializer.append(t)
        else:
            kept.append(node)
    del model.graph.node[:]
    model.graph.node.extend(kept)


def _save(tmp_path, out_dir, stem, description):
    model = onnx.load(tmp_path)
    _constants_to_initializers(model)
    model.producer_name = "pytorch (DistOpt bench/codegen/make_models.py)"
    model.doc_string = description
    onnx.checker.check_model(model)
    path = os.path.join(out_dir, stem + ".onnx")
    onnx.save(model, path)
    print("%-14s %5d nodes %10d bytes  %s" % (stem, len(model.graph.node),
                                               os.path.getsize(path),
                                               description))


class _LogitsOnly(torch.nn.Module):
    """Returns the first output of a transformers model (logits / hidden)."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, *args):
        out = self.inner(*args)
        return out[0] if isinstance(out, (tuple, list)) else out


def _ids():
    return torch.randint(0, VOCAB, (BATCH, SEQ))


def make_gpt2(out, tmp):
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(vocab_size=VOCAB, n_positions=SEQ, n_embd=256, n_layer=4,
                     n_head=4, use_cache=False, attn_implementation="eager")
    m = _LogitsOnly(GPT2LMHeadModel(cfg))
    _export(m, (_ids(),), tmp, ["input_ids"], ["logits"])
    _save(tmp, out, "gpt2", "GPT2LMHeadModel 4 layers, hidden 256, 4 heads, "
          "seq %d, vocab %d, batch %d" % (SEQ, VOCAB, BATCH))


def make_llama(out, tmp):
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(vocab_size=VOCAB, hidden_size=256, intermediate_size=688,
                      num_hidden_layers=4, num_attention_heads=8,
                      num_key_value_heads=4, max_position_embeddings=SEQ,
                      use_cache=False, attn_implementation="eager")
    m = _LogitsOnly(LlamaForCausalLM(cfg))
    _export(m, (_ids(),), tmp, ["input_ids"], ["logits"])
    _save(tmp, out, "llama", "LlamaForCausalLM 4 layers, hidden 256, SwiGLU "
          "688, 8 heads / 4 KV heads, seq %d, vocab %d, batch %d"
          % (SEQ, VOCAB, BATCH))


def make_mistral(out, tmp):
    from transformers import MistralConfig, MistralForCausalLM
    cfg = MistralConfig(vocab_size=VOCAB, hidden_size=256,
                        intermediate_size=896, num_hidden_layers=4,
                        num_attention_heads=8, num_key_value_heads=2,
                        max_position_embeddings=SEQ, sliding_window=64,
                        use_cache=False, attn_implementation="eager")
    m = _LogitsOnly(MistralForCausalLM(cfg))
    _export(m, (_ids(),), tmp, ["input_ids"], ["logits"])
    _save(tmp, out, "mistral", "MistralForCausalLM 4 layers, hidden 256, "
          "SwiGLU 896, 8 heads / 2 KV heads, sliding window 64, seq %d, "
          "vocab %d, batch %d" % (SEQ, VOCAB, BATCH))


def make_bert(out, tmp):
    from transformers import BertConfig, BertModel
    cfg = BertConfig(vocab_size=VOCAB, hidden_size=256, num_hidden_layers=4,
                     num_attention_heads=4, intermediate_size=1024,
                     max_position_embeddings=SEQ, attn_implementation="eager")
    m = _LogitsOnly(BertModel(cfg))
    mask = torch.ones(BATCH, SEQ, dtype=torch.int64)
    _export(m, (_ids(), mask), tmp, ["input_ids", "attention_mask"],
            ["last_hidden_state"])
    _save(tmp, out, "bert", "BertModel 4 layers, hidden 256, 4 heads, FFN "
          "1024, seq %d, vocab %d, batch %d" % (SEQ, VOCAB, BATCH))


def make_vit(out, tmp):
    from transformers import ViTConfig, ViTModel
    cfg = ViTConfig(image_size=IMAGE, patch_size=16, hidden_size=192,
                    num_hidden_layers=6, num_attention_heads=3,
                    intermediate_size=768, attn_implementation="eager")
    m = _LogitsOnly(ViTModel(cfg, add_pooling_layer=False))
    _export(m, (torch.randn(BATCH, 3, IMAGE, IMAGE),), tmp, ["pixel_values"],
            ["last_hidden_state"])
    _save(tmp, out, "vit", "ViTModel 6 layers, hidden 192, 3 heads, patch 16, "
          "%dx%d, batch %d" % (IMAGE, IMAGE, BATCH))


def make_whisper(out, tmp):
    from transformers import WhisperConfig
    from transformers.models.whisper.modeling_whisper import WhisperEncoder
    cfg = WhisperConfig(d_model=256, encoder_layers=4, encoder_attention_heads=4,
                        encoder_ffn_dim=1024, num_mel_bins=80,
                        max_source_positions=200, attn_implementation="eager")
    enc = WhisperEncoder(cfg)
    m = _LogitsOnly(enc)
    _export(m, (torch.randn(BATCH, 80, 400),), tmp, ["input_features"],
            ["last_hidden_state"])
    _save(tmp, out, "whisper_enc", "WhisperEncoder 4 layers, d_model 256, "
          "4 heads, FFN 1024, 80 mel x 400 frames, batch %d" % BATCH)


def _cnn(out, tmp, stem, model, description):
    torch.manual_seed(0)
    _export(model, (torch.randn(BATCH, 3, IMAGE, IMAGE),), tmp, ["input"],
            ["logits"])
    _save(tmp, out, stem, description + ", %dx%d, batch %d"
          % (IMAGE, IMAGE, BATCH))


def make_resnet18(out, tmp):
    import torchvision
    _cnn(out, tmp, "resnet18", torchvision.models.resnet18(weights=None),
         "torchvision resnet18")


def make_convnext(out, tmp):
    from torchvision.models.convnext import CNBlockConfig, ConvNeXt
    # ConvNeXt-tiny's depths (3, 3, 9, 3) at half its widths.
    cfg = [CNBlockConfig(48, 96, 3), CNBlockConfig(96, 192, 3),
           CNBlockConfig(192, 384, 9), CNBlockConfig(384, None, 3)]
    _cnn(out, tmp, "convnext", ConvNeXt(cfg, stochastic_depth_prob=0.0),
         "torchvision ConvNeXt-tiny depths, half width (48-384)")


def make_efficientnet(out, tmp):
    import torchvision
    _cnn(out, tmp, "efficientnet_b0",
         torchvision.models.efficientnet_b0(weights=None),
         "torchvision efficientnet_b0")


def make_mobilenet(out, tmp):
    import torchvision
    _cnn(out, tmp, "mobilenet_v3s",
         torchvision.models.mobilenet_v3_small(weights=None),
         "torchvision mobilenet_v3_small")


class _FlatLogits(torch.nn.Module):
    """GPT logits flattened to [batch * seq, vocab] (what a cross-entropy
    loss over classes takes, in DistOpt and onnxruntime-training alike)."""

    def __init__(self, inner, vocab):
        super().__init__()
        self.inner = inner
        self.vocab = vocab

    def forward(self, ids):
        return self.inner(ids)[0].reshape(-1, self.vocab)


def make_gpt_train(out, tmp):
    """The training benchmark of bench_train.py (issue 13): GPT, 12 layers,
    hidden 768, 12 heads, sequence 128, vocabulary 8192, untied head
    (97.7M parameters), batch 4, eval mode (no dropout)."""
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(vocab_size=8192, n_positions=128, n_embd=768, n_layer=12,
                     n_head=12, use_cache=False, tie_word_embeddings=False,
                     attn_implementation="eager")
    inner = GPT2LMHeadModel(cfg)
    inner.config.return_dict = False
    m = _FlatLogits(inner, 8192)
    params = sum(p.numel() for p in m.parameters())
    _export(m, (torch.randint(0, 8192, (4, 128)),), tmp, ["input_ids"],
            ["logits"])
    _save(tmp, out, "gpt_train", "GPT2LMHeadModel 12 layers, hidden 768, 12 "
          "heads, seq 128, vocab 8192, untied head, %d parameters, batch 4, "
          "logits [512, 8192]" % params)


MAKERS = {
    "gpt2": make_gpt2,
    "llama": make_llama,
    "mistral": make_mistral,
    "bert": make_bert,
    "vit": make_vit,
    "whisper_enc": make_whisper,
    "resnet18": make_resnet18,
    "convnext": make_convnext,
    "efficientnet_b0": make_efficientnet,
    "mobilenet_v3s": make_mobilenet,
}
# Exported on request only (--only gpt_train): 390 MB.
EXTRA = {"gpt_train": make_gpt_train}


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(root, "build", "bench-models"))
    ap.add_argument("--only", nargs="*", choices=sorted({**MAKERS, **EXTRA}))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name in args.only or MAKERS:
        torch.manual_seed(0)
        with tempfile.TemporaryDirectory() as tmp:
            {**MAKERS, **EXTRA}[name](args.out, os.path.join(tmp, "m.onnx"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
