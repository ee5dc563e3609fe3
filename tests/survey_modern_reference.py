#!/usr/bin/env python3
"""survey_modern_reference.py — reference answers for the decoder families of lib/hf/families.h
(tests/hf/test_families.cpp).

For each family, a tiny random model is built with transformers' own classes (2 layers, width 64,
4 query heads on 2 key/value heads, the family's own options switched on), saved with
save_pretrained, read back in float32 and run with attn_implementation="eager" and
output_attentions=True. The survey statistics of App. F are computed here row by row from the
attention weights transformers returns and the value vectors of v_proj (a forward hook), each query
head reading its key/value group's values; in a sliding-window layer query i's sink is the first
S keys of its window (start max(0, i - W + 1)) and only the other keys it sees receive mass; a
learned sink's share (gpt-oss) is 1 - the row's sum, reported as zero_option_mass.

Commands:
  make-models DIR  the make tests' checkpoints (tests/cli/cli_sg-survey.cmake): DIR/NAME/ for each NAME of
               MODELS at GPT-2's vocabulary size (sg-survey --vocab the GPT-2 tokenizer), and
               DIR/llama-steps/stepN/ for N in STEPS: the llama model saved with a different seed each,
               standing in for intermediate checkpoints; no references.
  models DIR   DIR/NAME/ (the checkpoint) and DIR/NAME.reference.safetensors for each NAME of MODELS:
                 ids I64 (B, T); logits F32 (B, T, V); attention.L F32 (B, H, T, T);
                 read_norms.L F32 (B, H, T) = |v_j|/sqrt(d) of each query head's group;
                 phantom.L F32 (B, H, T) (gpt_oss); statistics F64 (L, H, K), K as the metadata key
                 "statistics"; metadata sink_positions, percentiles, parameters, windows (per layer).
               DIR/mxfp4.safetensors: hand-packed blocks U8 (E, R, G, 16), scales U8 (E, R, G) and
                 transformers' convert_moe_packed_tensors of them in float32, "dequantised".
"""
import json
import math
import os
import sys

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from transformers import AutoConfig, AutoModelForCausalLM
from transformers.integrations.mxfp4 import convert_moe_packed_tensors
from transformers.utils import logging as hf_logging

hf_logging.set_verbosity_error()

SINK_POSITIONS = 4
PERCENTILES = [10, 20, 30, 50]
BATCH, LENGTH = 3, 24
SHAPE = dict(hidden_size=64, num_attention_heads=4, num_key_value_heads=2, num_hidden_layers=2, intermediate_size=96,
             vocab_size=101, max_position_embeddings=64, initializer_range=0.15, attn_implementation="eager")

# name: (model_type, options, dtype saved, max_shard_size)
MODELS = {
    "llama": ("llama", dict(attention_bias=True, rope_parameters={
        "rope_type": "llama3", "rope_theta": 10000.0, "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
        "original_max_position_embeddings": 16}), torch.bfloat16, None),
    "mistral": ("mistral", dict(sliding_window=8), torch.float16, "40KB"),
    "qwen2": ("qwen2", dict(use_sliding_window=True, sliding_window=8, max_window_layers=1), torch.float32, None),
    "qwen3": ("qwen3", dict(head_dim=32, tie_word_embeddings=True), torch.float32, None),
    "olmo2": ("olmo2", dict(), torch.float32, None),
    "gpt_oss": ("gpt_oss", dict(num_local_experts=4, num_experts_per_tok=2, sliding_window=8, head_dim=16,
                                layer_types=["sliding_attention", "full_attention"],
                                rope_parameters={"rope_type": "yarn", "rope_theta": 150000.0, "factor": 4.0,
                                                 "original_max_position_embeddings": 16, "beta_fast": 32.0,
                                                 "beta_slow": 1.0, "truncate": False}), torch.float32, None),
}


def statistic_names(phantom):
    return (["sink_mass", "position0_mass"] + (["zero_option_mass"] if phantom else []) + ["r0_ratio"] +
            [f"blind_ratio_p{q}" for q in PERCENTILES] + [f"content_share_p{q}" for q in PERCENTILES])


def head_statistics(a, r, phantom, window, sink=SINK_POSITIONS):
    """One head: a (B, T, T) weights, r (B, T) read norms, phantom (B, T) or None, window W or 0."""
    a, r = a.astype(np.float64), r.astype(np.float64)
    blocks, length = r.shape
    sink_sum = position0 = zero = 0.0
    received = np.zeros((blocks, length))
    for b in range(blocks):
        for i in range(length):
            start = max(0, i - window + 1) if window else 0
            in_sink = np.zeros(length, dtype=bool)
            in_sink[start:start + sink] = True
            received[b] += np.where(in_sink, 0.0, a[b, i])
            if i >= sink:
                p = phantom[b, i] if phantom is not None else 0.0
                sink_sum += a[b, i][in_sink].sum() + p
                zero += p
                position0 += a[b, i, 0]
    queries = blocks * (length - sink)
    stats = [sink_sum / queries, position0 / queries] + ([zero / queries] if phantom is not None else [])
    pool_r, pool_m = r[:, sink:].reshape(-1), received[:, sink:].reshape(-1)
    stats.append(r[:, 0].mean() / pool_r.mean())
    order = np.argsort(pool_r, kind="stable")
    n = pool_r.size
    blind, content = [], []
    for q in PERCENTILES:
        k = int(math.floor(q * n / 100.0 + 0.5))
        band = order[:k]
        blind.append(pool_m[band].sum() / pool_m.sum() / (k / n))
        content.append((pool_m * pool_r)[band].sum() / (pool_m * pool_r).sum())
    return stats + blind + content


def reference(model, ids):
    config = model.config
    groups = config.num_attention_heads // config.num_key_value_heads
    values = []
    for layer in model.model.layers:
        layer.self_attn.v_proj.register_forward_hook(lambda _m, _i, out: values.append(out.detach().float()))
    with torch.no_grad():
        out = model(torch.tensor(ids), output_attentions=True)
    tensors = {"ids": torch.tensor(ids, dtype=torch.int64), "logits": out.logits.float().contiguous()}
    # Mistral's attention keeps no sliding_window of its own: config.sliding_window applies to every layer.
    default = config.sliding_window if config.model_type == "mistral" else None
    windows = [getattr(layer.self_attn, "sliding_window", default) or 0 for layer in model.model.layers]
    phantom = config.model_type == "gpt_oss"
    stats = []
    for layer, attention in enumerate(out.attentions):
        b, t, _ = values[layer].shape
        d = values[layer].shape[-1] // config.num_key_value_heads
        v = values[layer].view(b, t, config.num_key_value_heads, d).transpose(1, 2).repeat_interleave(groups, dim=1)
        norms = v.norm(dim=-1) / math.sqrt(d)  # (B, H, T)
        tensors[f"attention.{layer}"] = attention.float().contiguous()
        tensors[f"read_norms.{layer}"] = norms.contiguous()
        sink = (1 - attention.float().sum(-1)).contiguous() if phantom else None
        if phantom:
            tensors[f"phantom.{layer}"] = sink
        a = attention.float().numpy()
        stats.append([head_statistics(a[:, h], norms[:, h].numpy(), None if sink is None else sink[:, h].numpy(),
                                      windows[layer]) for h in range(a.shape[1])])
    tensors["statistics"] = torch.tensor(np.array(stats), dtype=torch.float64)
    return tensors, windows


def pack_mxfp4(generator, experts, rows, columns):
    """Random MXFP4 blocks (E, R, G, 16) and scales (E, R, G) near 2^0, as gpt-oss stores them."""
    groups = columns // 32
    blocks = torch.randint(0, 256, (experts, rows, groups, 16), dtype=torch.uint8, generator=generator)
    scales = torch.randint(122, 129, (experts, rows, groups), dtype=torch.uint8, generator=generator)
    return blocks, scales


STEPS = [0, 1000, 143000]


def save_model(name, folder, seed, **shape):
    """Family `name` of MODELS with random weights (seed) saved in `folder`; returns the model, read
    back in float32 as saved."""
    model_type, options, dtype, shard = MODELS[name]
    torch.manual_seed(seed)
    config = AutoConfig.for_model(model_type, **{**SHAPE, **shape}, **options)
    model = AutoModelForCausalLM.from_config(config).eval()
    kwargs = {"max_shard_size": shard} if shard else {}
    if model_type == "gpt_oss":
        generator = torch.Generator().manual_seed(7)
        weights = {}
        for l, layer in enumerate(model.model.layers):
            for proj in ("gate_up_proj", "down_proj"):
                weight = getattr(layer.mlp.experts, proj)
                blocks, scales = pack_mxfp4(generator, weight.shape[0], weight.shape[2], weight.shape[1])
                with torch.no_grad():
                    weight.copy_(convert_moe_packed_tensors(blocks, scales, dtype=torch.float32))
                weights[f"model.layers.{l}.mlp.experts.{proj}_blocks"] = blocks
                weights[f"model.layers.{l}.mlp.experts.{proj}_scales"] = scales
        model.save_pretrained(folder)
        saved = load_file(os.path.join(folder, "model.safetensors"))
        for l in range(len(model.model.layers)):
            for proj in ("gate_up_proj", "down_proj"):
                del saved[f"model.layers.{l}.mlp.experts.{proj}"]
        saved.update(weights)
        save_file(saved, os.path.join(folder, "model.safetensors"), metadata={"format": "pt"})
    else:
        model.to(dtype).save_pretrained(folder, **kwargs)
        model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, attn_implementation="eager").eval()
    return model


def make_cli_models(out):
    for name in MODELS:
        save_model(name, os.path.join(out, name), sum(map(ord, name)), vocab_size=50257, max_position_embeddings=256)
    for step in STEPS:
        save_model("llama", os.path.join(out, "llama-steps", f"step{step}"), step, vocab_size=50257, max_position_embeddings=256)


def make_models(out):
    os.makedirs(out, exist_ok=True)
    for name, (model_type, options, dtype, shard) in MODELS.items():
        model = save_model(name, os.path.join(out, name), sum(map(ord, name)))
        rng = np.random.default_rng(len(name))
        ids = rng.integers(0, SHAPE["vocab_size"], size=(BATCH, LENGTH)).tolist()
        tensors, windows = reference(model, ids)
        save_file(tensors, os.path.join(out, name + ".reference.safetensors"),
                  metadata={"statistics": ",".join(statistic_names(model_type == "gpt_oss")),
                            "sink_positions": str(SINK_POSITIONS), "percentiles": ",".join(map(str, PERCENTILES)),
                            "parameters": str(model.num_parameters()), "windows": ",".join(map(str, windows))})
    generator = torch.Generator().manual_seed(11)
    blocks, scales = pack_mxfp4(generator, 2, 3, 64)
    scales[0, 0, 0], scales[1, 2, 1] = 0, 255  # the extremes of the exponent
    save_file({"blocks": blocks, "scales": scales,
               "dequantised": convert_moe_packed_tensors(blocks, scales, dtype=torch.float32).contiguous()},
              os.path.join(out, "mxfp4.safetensors"))


def main(argv):
    if len(argv) != 3 or argv[1] not in ("models", "make-models"):
        sys.exit(__doc__)
    (make_models if argv[1] == "models" else make_cli_models)(argv[2])


if __name__ == "__main__":
    main(sys.argv)
