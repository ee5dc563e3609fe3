#!/usr/bin/env python3
"""bench_attention.py — one attention layer's forward and backward on the CPU, in float32 and bf16.

Times, in interleaved rounds, causal attention over (batch, heads, context, head width) =
(8, 4, 256, 64) by default (tier cpu's layer, as sg-train's fused path runs it): PyTorch's
scaled_dot_product_attention (ATen's CPU flash attention) against the explicit matrix
(q kᵀ scaled, masked, softmax in float32, times v), each in float32 and under
torch.autocast("cpu", torch.bfloat16). Whether a bf16 run's attention gains from bf16 on this CPU,
and what an explicit bf16 path would give instead. Prints the CPU model and its bf16 flags first;
timings are reported, never asserted.

Run it with the project's Python from the repository root:
  ~/.cache/sinkgate/venv-torch-2.11.0/bin/python pipelines/bench_attention.py [--threads 2] [--rounds 5]
"""
import argparse
import os
import statistics
import time

import torch


def cpu_model():
    """/proc/cpuinfo's model name and its bf16 flags."""
    name, flags = "unknown", []
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and name == "unknown":
                    name = value.strip()
                elif key.strip() == "flags" and not flags:
                    flags = [x for x in value.split() if x in ("avx512_bf16", "amx_bf16", "amx_tile")]
    except OSError:
        pass
    return name, flags


def layer(path, bf16, shape, repeats):
    """Milliseconds a forward and backward of one layer, the median of `repeats` after a warm-up."""
    batch, heads, context, width = shape
    q, k, v = (torch.randn(batch, heads, context, width, requires_grad=True) for _ in range(3))
    future = torch.ones(context, context, dtype=torch.bool).triu(1)

    def step():
        with torch.autocast("cpu", torch.bfloat16, enabled=bf16):
            if path == "sdpa":
                y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                scores = (q @ k.transpose(-1, -2)).float() * width ** -0.5
                p = torch.softmax(scores.masked_fill(future, float("-inf")), -1)
                y = p.to(torch.bfloat16 if bf16 else torch.float32) @ v
        y.float().sum().backward()

    for _ in range(2):
        step()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)), help="torch threads")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (the median is reported)")
    parser.add_argument("--repeats", type=int, default=10, help="steps timed per configuration and round")
    parser.add_argument("--shape", default="8,4,256,64", help="batch,heads,context,head width")
    args = parser.parse_args()
    shape = tuple(int(x) for x in args.shape.split(","))
    if len(shape) != 4 or min(shape) < 1:
        parser.error("--shape takes four positive numbers: batch,heads,context,head width")
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    name, flags = cpu_model()
    print(f"# {name}; bf16 flags: {' '.join(flags) or 'none'}; {args.threads} threads; torch {torch.__version__}; "
          f"shape {shape}")
    configs = [(path, bf16) for bf16 in (False, True) for path in ("sdpa", "explicit")]
    results = {c: [] for c in configs}
    for r in range(args.rounds):
        for i in range(len(configs)):
            c = configs[(i + r) % len(configs)]  # rotated, round by round
            results[c].append(layer(c[0], c[1], shape, args.repeats))
    print("configuration           ms a layer (fwd+bwd)   rounds min-max")
    for (path, bf16), values in results.items():
        label = f"{path} {'bf16' if bf16 else 'float32'}"
        print(f"{label:<24}{statistics.median(values):>10.1f}          {min(values):.1f}-{max(values):.1f}")


if __name__ == "__main__":
    main()
