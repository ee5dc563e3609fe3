#!/usr/bin/env python3
"""survey_reference.py — reference answers for tests/hf/test_pretrained.cpp and tests/instruments/test_survey.cpp.

Builds small random-initialised GPT-2 and GPT-NeoX models with transformers, saves them with
save_pretrained (safetensors), and runs transformers' own forward pass (attn_implementation="eager",
output_attentions=True) on fixed token ids. The survey statistics of App. F are computed here
independently of lib/instruments/survey.cpp: with numpy, from the attention weights transformers returns and the
value vectors its attention modules compute (captured by forward hooks), row by row over the full
attention matrices rather than from per-key column sums.

Commands:
  models DIR      for each model NAME in MODELS: DIR/NAME/ (the checkpoint folder) and
                  DIR/NAME.reference.safetensors holding
                    ids               I64 (B, T)       the token ids
                    logits            F32 (B, T, V)    transformers' logits
                    attention.L       F32 (B, H, T, T) layer L's attention weights
                    statistics        F64 (L, H, K)    the survey statistics per head, K in the order of
                                                       the metadata key "statistics" (comma-separated)
                  with metadata sink_positions, percentiles (comma-separated) and parameters
                  (transformers' num_parameters()).
  cli-model DIR   DIR: a random GPT-2 with the GPT-2 vocabulary size (50257) and 64 positions, for the
                  command-line tests (no tokenizer files: the tests pass --tokenizer).
  bench DIR       DIR: a random GPT-2 of GPT-2 small's shape (124M parameters), for timing.

Variants covered: tied GPT-2 saved by transformers 5 ("transformer." names); GPT-2 rewritten into
the hub's layout (no prefix, the attn.bias/attn.masked_bias buffers) with an untied head in BF16,
sharded; GPT-NeoX with parallel residual and rotary_pct 0.25; GPT-NeoX sequential with rotary_pct
0.5 and base 500 whose config.json is rewritten in the hub's transformers-4 form (rotary_pct,
rotary_emb_base, torch_dtype); GPT-NeoX in float16, sharded (reference: the float16 weights in
float32).
"""
import json
import math
import os
import sys

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from transformers import GPT2Config, GPT2LMHeadModel, GPTNeoXConfig, GPTNeoXForCausalLM
from transformers.utils import logging as hf_logging

hf_logging.set_verbosity_error()

SINK_POSITIONS = 4
PERCENTILES = [10, 20, 30, 50]
BATCH, LENGTH = 3, 24


def statistic_names():
    return (["sink_mass", "position0_mass", "r0_ratio"] + [f"blind_ratio_p{q}" for q in PERCENTILES] +
            [f"content_share_p{q}" for q in PERCENTILES])


def head_statistics(attention, values, sink=SINK_POSITIONS, percentiles=PERCENTILES):
    """App. F for one head. attention: (B, T, T) weights, values: (B, T, d) value vectors (float64).

    Quiet band: the k = round(q N / 100) smallest read norms r = |v|/sqrt(d) of the pool of every
    non-sink key (b, j >= sink) of all blocks (stable order); statistics over queries i >= sink.
    """
    a = attention.astype(np.float64)
    v = values.astype(np.float64)
    blocks, length, d = v.shape
    norms = np.linalg.norm(v, axis=-1)  # (B, T)
    r = norms / math.sqrt(d)
    rows = a[:, sink:, :]  # (B, T-S, T): queries that can see a non-sink key
    sink_mass = rows[:, :, :sink].sum(-1).mean()
    position0 = rows[:, :, 0].mean()
    pool = r[:, sink:].reshape(-1)
    r0_ratio = r[:, 0].mean() / pool.mean()
    order = np.argsort(pool, kind="stable")
    n = pool.size
    ordinary = rows[:, :, sink:]  # (B, T-S queries, T-S keys)
    effective = ordinary * norms[:, None, sink:]  # a_ij |v_j|
    blind, content = [], []
    for q in percentiles:
        k = int(math.floor(q * n / 100.0 + 0.5))
        quiet = np.zeros(n, dtype=bool)
        quiet[order[:k]] = True
        quiet = quiet.reshape(blocks, length - sink)[:, None, :]  # (B, 1, T-S)
        blind.append((ordinary * quiet).sum() / ordinary.sum() / (k / n))
        content.append((effective * quiet).sum() / effective.sum())
    return [sink_mass, position0, r0_ratio] + blind + content


def capture_values(model):
    """Registers hooks that store each layer's value vectors (B, H, T, d); returns the list."""
    config = model.config
    store = []
    if config.model_type == "gpt2":
        heads, width = config.n_head, config.n_embd
        modules = [block.attn.c_attn for block in model.transformer.h]

        def split(out):
            b, t, _ = out.shape
            return out[..., 2 * width:].reshape(b, t, heads, width // heads).transpose(1, 2)
    else:
        heads, width = config.num_attention_heads, config.hidden_size
        modules = [layer.attention.query_key_value for layer in model.gpt_neox.layers]

        def split(out):
            b, t, _ = out.shape
            d = width // heads
            return out.reshape(b, t, heads, 3 * d)[..., 2 * d:].transpose(1, 2)
    for module in modules:
        module.register_forward_hook(lambda _m, _i, out: store.append(split(out).detach().float()))
    return store


def reference(model, ids):
    """transformers' logits, attentions, and the statistics computed here, as a dict of tensors."""
    values = capture_values(model)
    with torch.no_grad():
        out = model(torch.tensor(ids), output_attentions=True)
    tensors = {"ids": torch.tensor(ids, dtype=torch.int64), "logits": out.logits.float().contiguous()}
    stats = []
    for layer, attention in enumerate(out.attentions):
        tensors[f"attention.{layer}"] = attention.float().contiguous()
        a = attention.float().numpy()
        v = values[layer].numpy()
        stats.append([head_statistics(a[:, h], v[:, h]) for h in range(a.shape[1])])
    tensors["statistics"] = torch.tensor(np.array(stats), dtype=torch.float64)
    return tensors


def random_ids(vocab, seed):
    rng = np.random.default_rng(seed)
    return rng.integers(0, vocab, size=(BATCH, LENGTH)).tolist()


def to_hub_layout(folder):
    """Rewrites a GPT-2 checkpoint the way the hub's gpt2 files are: no 'transformer.' prefix, plus
    the causal-mask buffers, in two shards with an index."""
    weights = {}
    for name in sorted(os.listdir(folder)):
        if name.endswith(".safetensors"):
            weights.update(load_file(os.path.join(folder, name)))
            os.remove(os.path.join(folder, name))
    index_path = os.path.join(folder, "model.safetensors.index.json")
    if os.path.exists(index_path):
        os.remove(index_path)
    renamed = {}
    for name, tensor in weights.items():
        renamed[name[len("transformer."):] if name.startswith("transformer.") else name] = tensor
    layers = 1 + max(int(n.split(".")[1]) for n in renamed if n.startswith("h."))
    positions = renamed["wpe.weight"].shape[0]
    for layer in range(layers):
        renamed[f"h.{layer}.attn.bias"] = torch.tril(torch.ones(positions, positions, dtype=torch.uint8)).view(1, 1, positions, positions)
        renamed[f"h.{layer}.attn.masked_bias"] = torch.tensor(-1e4)
    names = sorted(renamed)
    shards = [names[: len(names) // 2], names[len(names) // 2:]]
    weight_map = {}
    for i, shard in enumerate(shards):
        file_name = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        save_file({n: renamed[n].contiguous() for n in shard}, os.path.join(folder, file_name), metadata={"format": "pt"})
        weight_map.update({n: file_name for n in shard})
    with open(index_path, "w") as f:
        json.dump({"metadata": {}, "weight_map": weight_map}, f, indent=2)


def to_legacy_neox_config(folder):
    """Rewrites config.json in the hub's transformers-4 spelling of the rotary settings."""
    path = os.path.join(folder, "config.json")
    with open(path) as f:
        config = json.load(f)
    rope = config.pop("rope_parameters")
    config["rotary_pct"] = rope["partial_rotary_factor"]
    config["rotary_emb_base"] = rope["rope_theta"]
    config["torch_dtype"] = config.pop("dtype")
    with open(path, "w") as f:
        json.dump(config, f, indent=2)


def build(name):
    """A random-initialised model of that name (float32)."""
    torch.manual_seed(sum(map(ord, name)))
    if name.startswith("gpt2"):
        config = GPT2Config(n_embd=48, n_head=4, n_layer=3, n_positions=64, vocab_size=97, initializer_range=0.15,
                            bos_token_id=0, eos_token_id=0, tie_word_embeddings=(name == "gpt2-tied"),
                            attn_implementation="eager")
        model = GPT2LMHeadModel(config)
    else:
        config = GPTNeoXConfig(hidden_size=64, num_attention_heads=4, num_hidden_layers=3, intermediate_size=96,
                               vocab_size=101, max_position_embeddings=64, initializer_range=0.15,
                               use_parallel_residual=(name != "neox-sequential"),
                               rotary_pct=0.5 if name == "neox-sequential" else 0.25,
                               rotary_emb_base=500 if name == "neox-sequential" else 10000,
                               bos_token_id=0, eos_token_id=0, attn_implementation="eager")
        model = GPTNeoXForCausalLM(config)
    model.eval()
    return model


MODELS = {
    # name: (dtype saved, max_shard_size or None, rewrite of the saved folder)
    "gpt2-tied": (torch.float32, None, None),
    "gpt2-hub-bf16": (torch.bfloat16, None, to_hub_layout),
    "neox-parallel": (torch.float32, None, None),
    "neox-sequential": (torch.float32, None, to_legacy_neox_config),
    "neox-fp16-sharded": (torch.float16, "40KB", None),
}


def make_models(out):
    os.makedirs(out, exist_ok=True)
    for name, (dtype, shard, rewrite) in MODELS.items():
        folder = os.path.join(out, name)
        kwargs = {"max_shard_size": shard} if shard else {}
        build(name).to(dtype).save_pretrained(folder, **kwargs)
        if rewrite:
            rewrite(folder)
        # The reference reads the files back as saved (and rewritten) and computes in float32; its
        # buffers (the rotary frequencies) are made afresh in float32, not rounded to the saved dtype.
        family = GPT2LMHeadModel if name.startswith("gpt2") else GPTNeoXForCausalLM
        model = family.from_pretrained(folder, dtype=torch.float32, attn_implementation="eager").eval()
        tensors = reference(model, random_ids(model.config.vocab_size, seed=len(name)))
        save_file(tensors, os.path.join(out, name + ".reference.safetensors"),
                  metadata={"statistics": ",".join(statistic_names()), "sink_positions": str(SINK_POSITIONS),
                            "percentiles": ",".join(map(str, PERCENTILES)),
                            "parameters": str(model.num_parameters())})


def make_gpt2(out, layers, heads, width, positions, seed):
    torch.manual_seed(seed)
    config = GPT2Config(n_embd=width, n_head=heads, n_layer=layers, n_positions=positions, vocab_size=50257)
    GPT2LMHeadModel(config).save_pretrained(out)


def main(argv):
    if len(argv) != 3 or argv[1] not in ("models", "cli-model", "bench"):
        sys.exit(__doc__)
    command, out = argv[1], argv[2]
    if command == "models":
        make_models(out)
    elif command == "cli-model":
        make_gpt2(out, layers=2, heads=4, width=32, positions=64, seed=1)
    else:
        make_gpt2(out, layers=12, heads=12, width=768, positions=1024, seed=0)


if __name__ == "__main__":
    main(sys.argv)
