#!/usr/bin/env python3
"""random_checkpoint.py — a Hugging Face checkpoint folder of random bf16 weights with the shapes of
a real model, written tensor by tensor to safetensors shards (never a whole model in memory), for
measuring sg-survey's time and memory at real sizes without downloading the model.

  python3 pipelines/random_checkpoint.py SHAPE DIR [--seed N]

SHAPE is one of SHAPES below (config.json as the model's Hugging Face repository has it). DIR gets
config.json, model-0000i-of-0000n.safetensors shards of about 5 GB and model.safetensors.index.json,
as save_pretrained writes them; no tokenizer (give sg-survey --vocab). Weights: N(0, 0.02) drawn
once into a pool of 2^24 values that every tensor reads from a random start (cycling); norm weights
are ones. The values mean nothing: the folder measures speed and memory, not statistics.
"""
import argparse
import json
import os
import struct

import numpy as np

LLAMA3_ROPE = {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
               "original_max_position_embeddings": 8192}
SHAPES = {
    # meta-llama/Llama-3.2-1B: 1.24 B parameters, embeddings tied.
    "llama-3.2-1b": dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32,
                         num_key_value_heads=8, head_dim=64, vocab_size=128256, max_position_embeddings=131072,
                         rope_theta=500000.0, rope_scaling=LLAMA3_ROPE, tie_word_embeddings=True),
    # meta-llama/Meta-Llama-3-8B: 8.03 B parameters.
    "llama-3-8b": dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
                       num_key_value_heads=8, head_dim=128, vocab_size=128256, max_position_embeddings=8192,
                       rope_theta=500000.0, rope_scaling=None, tie_word_embeddings=False),
}
SHARD_BYTES = 5 << 30
POOL = 1 << 24


def tensors(shape):
    """(name, shape, is_norm) of every tensor of a Llama checkpoint, in save_pretrained's order."""
    C, I, H, K, d = (shape[k] for k in ("hidden_size", "intermediate_size", "num_attention_heads",
                                        "num_key_value_heads", "head_dim"))
    out = [("model.embed_tokens.weight", (shape["vocab_size"], C), False)]
    for l in range(shape["num_hidden_layers"]):
        p = f"model.layers.{l}."
        out += [(p + "input_layernorm.weight", (C,), True), (p + "mlp.down_proj.weight", (C, I), False),
                (p + "mlp.gate_proj.weight", (I, C), False), (p + "mlp.up_proj.weight", (I, C), False),
                (p + "post_attention_layernorm.weight", (C,), True), (p + "self_attn.k_proj.weight", (K * d, C), False),
                (p + "self_attn.o_proj.weight", (C, H * d), False), (p + "self_attn.q_proj.weight", (H * d, C), False),
                (p + "self_attn.v_proj.weight", (K * d, C), False)]
    out.append(("model.norm.weight", (C,), True))
    if not shape["tie_word_embeddings"]:
        out.append(("lm_head.weight", (shape["vocab_size"], C), False))
    return out


def write_shard(path, entries, pool, rng):
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, dims, _ in entries:
        size = int(np.prod(dims)) * 2
        header[name] = {"dtype": "BF16", "shape": list(dims), "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    one = np.full(1, 0x3F80, dtype=np.uint16)  # bf16 1.0
    with open(path + ".tmp", "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for _, dims, norm in entries:
            count = int(np.prod(dims))
            if norm:
                np.repeat(one, count).tofile(f)
                continue
            start = int(rng.integers(0, POOL))
            while count > 0:
                take = min(count, POOL - start)
                pool[start:start + take].tofile(f)
                count -= take
                start = 0
    os.replace(path + ".tmp", path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("shape", choices=sorted(SHAPES))
    parser.add_argument("dir")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    shape = SHAPES[args.shape]
    rng = np.random.default_rng(args.seed)
    # bf16 = the upper 16 bits of a float32 (rounded to nearest even).
    bits = rng.standard_normal(POOL, dtype=np.float32) * np.float32(0.02)
    raw = bits.view(np.uint32)
    pool = ((raw + 0x7FFF + ((raw >> 16) & 1)) >> 16).astype(np.uint16)
    os.makedirs(args.dir, exist_ok=True)
    shards, current, size = [], [], 0
    for entry in tensors(shape):
        bytes_ = int(np.prod(entry[1])) * 2
        if current and size + bytes_ > SHARD_BYTES:
            shards.append(current)
            current, size = [], 0
        current.append(entry)
        size += bytes_
    shards.append(current)
    weight_map, total = {}, 0
    for i, entries in enumerate(shards):
        name = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        write_shard(os.path.join(args.dir, name), entries, pool, rng)
        for entry in entries:
            weight_map[entry[0]] = name
            total += int(np.prod(entry[1])) * 2
    with open(os.path.join(args.dir, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu",
              "attention_bias": False, "mlp_bias": False, "rms_norm_eps": 1e-5, "torch_dtype": "bfloat16",
              **{k: v for k, v in shape.items() if v is not None}}
    with open(os.path.join(args.dir, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    print(f"{args.dir}: {args.shape}, {total // 2:,} parameters in {len(shards)} shard(s), {total / 2**30:.2f} GiB")


if __name__ == "__main__":
    main()
