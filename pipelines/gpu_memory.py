#!/usr/bin/env python3
"""gpu_memory.py — an estimate of a training run's peak GPU memory per tier, from the tiers'
configuration (sg-info --tier), for choosing a card; pipelines/gpu_check.sh with
GPU_CHECK_MEMORY=1 measures the same runs on a GPU.

The estimate, in bytes, for bf16 autocast and the flash attention path:
  state        18 P: float32 weights, gradients and AdamW's two moments (16 P), and the bf16 copies
               of the weights that autocast casts once a micro-batch (2 P); P the parameter count
  activations  L * T * B * C * (34 + extra): what one micro-batch keeps for its backward pass,
               34 bytes per element of the (T, B, C) stream and layer as Korthikanti et al. (2022,
               "Reducing Activation Recomputation in Large Transformer Models") count a layer in
               half precision without the attention matrix (flash attention), plus `extra` for
               what this model keeps besides: 8 for the float32 residual stream and LayerNorm
               inputs, and 12 for a gated arm's float32 (B, H, T, d) gate tensors
  loss         3 * rows * V * 4: the chunked loss's float32 logits, exponentials and gradient of
               one chunk (333 rows on a GPU)
  overhead     2 GiB: the CUDA context, cuBLAS and cuDNN workspaces, the allocator's slack
It is an estimate, not a measurement: measured peaks belong in docs/measurements.md.

Usage: python3 pipelines/gpu_memory.py [--bin build/bin] [--tiers 10M,50M,124M,350M]
"""
import argparse
import subprocess

GIB = 1024 ** 3
CARDS = {"80 GB (H100, A100)": 80e9, "141 GB (H200)": 141e9}


def tier_fields(binary, tier):
    out = subprocess.run([f"{binary}/sg-info", "--tier", tier], capture_output=True, text=True, check=True).stdout
    fields = {}
    for line in out.splitlines()[1:]:
        parts = line.split()
        if len(parts) == 2:
            fields[parts[0]] = parts[1]
    return {k: int(fields[k]) for k in ("n_layer", "n_embd", "block_size", "vocab_size", "micro_batch", "accumulation")}


def estimate(f, gated):
    layers, width, context, vocab, batch = f["n_layer"], f["n_embd"], f["block_size"], f["vocab_size"], f["micro_batch"]
    parameters = 12 * layers * width ** 2 + vocab * width + context * width + (4 * layers + 2) * width
    state = 18 * parameters
    activations = layers * context * batch * width * (34 + 8 + (12 if gated else 0))
    loss = 3 * 333 * vocab * 4
    return parameters, state + activations + loss + 2 * GIB


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin", default="build/bin", help="the folder of sg-info")
    parser.add_argument("--tiers", default="10M,50M,124M,350M", help="tiers (comma-separated)")
    args = parser.parse_args()
    print("| tier | parameters | micro-batch | baseline (estimate) | a gated arm (estimate) | "
          + " | ".join(f"fits {card}" for card in CARDS) + " |")
    print("| --- | ---: | ---: | ---: | ---: |" + " --- |" * len(CARDS))
    for tier in args.tiers.split(","):
        f = tier_fields(args.bin, tier)
        parameters, plain = estimate(f, gated=False)
        _, gated = estimate(f, gated=True)
        fits = " | ".join("yes" if gated < size else "no" for size in CARDS.values())
        print(f"| {tier} | {parameters / 1e6:.0f}M | {f['micro_batch']} x {f['block_size']} | {plain / GIB:.1f} GiB | "
              f"{gated / GIB:.1f} GiB | {fits} |")


if __name__ == "__main__":
    main()
