#!/usr/bin/env python3
"""bench_telemetry.py — what training's telemetry costs a step, at the 124M shape on this machine.

Trains the 124M tier's model (12 layers, width 768, context 1,024, the GPT-2 vocabulary) for a
few steps of one sequence each, in these configurations, each in its own process, rounds
interleaved and rotated (A B C, B C A, ...):
  off          sg-train as a user runs it: the field telemetry 0 (the default), nothing measured
  every step   --set telemetry=1: the largest attention logit (blockwise over keys, in the
               products' dtype) and activation of every step, as make stability asks
  reference    --reference BIN: another build's sg-train with the same options (for instance the
               last commit that measured them every step, whole (B, H, T, T) float32 matrices)
A run's step time is the median of its steps after the first --skip (sg-train's own per-step
timing, curves/tokens_per_second of the run file); a configuration's figure is the median over
rounds. Reported as ratios against `off` measured in the same run, with the CPU model and the
load average beside them. Timings are reported, never asserted.

Run it from the repository root with the project's Python (h5py):
  ~/.cache/sinkgate/venv-torch-2.11.0/bin/python pipelines/bench_telemetry.py --tokens data/pydoc.h5
  ... pipelines/bench_telemetry.py --tokens data/pydoc.h5 --reference OLD/build/bin/sg-train --rounds 3
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

import h5py


def cpu_model():
    for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
        if line.startswith("Model name:"):
            return line.split(":", 1)[1].strip()
    return "unknown CPU"


def step_seconds(sg_train, args, tokens, extra, work):
    """Median seconds a step of one run, after the first args.skip steps."""
    run = os.path.join(work, "run.h5")
    command = [sg_train, "--tokens", tokens, "--tier", "124M", "--arm", args.arm, "--threads", str(args.threads),
               "--set", "micro_batch=1", "--set", "accumulation=1", "--set", f"iterations={args.steps}",
               "--set", "warmup=1", "--set", f"eval_interval={args.steps}", "--set", "eval_batches=1",
               "--set", "final_eval_batches=1", "--set", "checkpoint_interval=1000000",
               "--log-level", "quiet", "-o", run, "--force", *extra]
    subprocess.run(command, check=True)
    with h5py.File(run, "r") as f:
        speeds = list(f["curves/tokens_per_second"][()])
    os.remove(run)
    tokens_per_step = 1024
    return statistics.median(tokens_per_step / s for s in speeds[args.skip:])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tokens", required=True, help="a token file of the GPT-2 vocabulary (sg-tokenize)")
    parser.add_argument("--sg-train", default="build/bin/sg-train", help="the sg-train executable")
    parser.add_argument("--reference", help="another build's sg-train, measured with the same options")
    parser.add_argument("--arm", default="baseline", help="the arm (default baseline)")
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)), help="threads of every run")
    parser.add_argument("--steps", type=int, default=6, help="optimizer steps a run")
    parser.add_argument("--skip", type=int, default=2, help="warm-up steps left out of each run's median")
    parser.add_argument("--rounds", type=int, default=2, help="rounds, interleaved and rotated")
    args = parser.parse_args()
    if args.steps <= args.skip:
        parser.error("--steps must exceed --skip")

    configurations = [("off", args.sg_train, []), ("every step", args.sg_train, ["--set", "telemetry=1"])]
    if args.reference:
        configurations.append(("reference", args.reference, []))
    results = {name: [] for name, _, _ in configurations}
    loads = []
    with tempfile.TemporaryDirectory() as work:
        for round_index in range(args.rounds):
            shift = round_index % len(configurations)
            for name, binary, extra in configurations[shift:] + configurations[:shift]:
                loads.append(os.getloadavg()[0])
                seconds = step_seconds(binary, args, args.tokens, extra, work)
                results[name].append(seconds)
                print(f"round {round_index + 1}: {name}: {seconds:.3f} s a step", file=sys.stderr)

    off = statistics.median(results["off"])
    print(f"# {cpu_model()}; {args.threads} threads; tier 124M shape, arm {args.arm}, 1 x 1,024 tokens a step; "
          f"median of steps {args.skip + 1}-{args.steps}, median of {args.rounds} rounds; "
          f"load average {min(loads):.2f}-{max(loads):.2f}")
    print("| configuration | s a step | against off | rounds |")
    print("| --- | ---: | ---: | --- |")
    for name, _, _ in configurations:
        value = statistics.median(results[name])
        rounds = ", ".join(f"{v:.3f}" for v in results[name])
        print(f"| {name} | {value:.3f} | {value / off:.3f}x | {rounds} |")


if __name__ == "__main__":
    main()
