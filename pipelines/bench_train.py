#!/usr/bin/env python3
"""bench_train.py — CPU training throughput of sg-train against PyTorch eager, in the same run.

Measured, each in its own process so that its environment applies, on the same token file,
the same shape (tier cpu: 4 layers, 4 heads, width 256, context 256, micro-batch 8, GPT-2
vocabulary of 50,257) and the same number of threads:
  eager default   an independent GPT-2-style model in plain PyTorch eager (this file), glibc's
                  malloc as it comes;
  eager tuned     the same with GLIBC_TUNABLES=glibc.malloc.hugetlb=1:glibc.malloc.mmap_max=0:
                  glibc.malloc.trim_threshold=T for each T of --trim-thresholds (the best counts);
  sg-train ARM    build/bin/sg-train --tier cpu --arm ARM, with GLIBC_TUNABLES removed from its
                  environment: what a user who sets nothing gets;
  … bf16          with --precisions float32,bf16 (the default where the CPU has AVX512-BF16 or
                  AMX-BF16): eager under torch.autocast("cpu", torch.bfloat16) (the peer: PyTorch's
                  own bf16 mixed precision, in every malloc setting eager runs in) and
                  sg-train --precision bf16 for every arm;
  fp32 peak       the best torch.mm rate (square fp32 matrices, same threads): the machine's
                  attainable fp32 matmul peak, against which the model FLOP/s are set (and one
                  core's, per CPU second, for --cpu-time). Where MKL runs narrower kernels than
                  the CPU can (256-bit on AMD's Zen 5), sg-train's own AVX-512 products outrun it
                  and "% peak" passes 100; build/bin/bench_cpu_kernels prints the FMA peak.
  bf16 peak       the same in bf16 (oneDNN: AMX or AVX512-BF16), the peak of the bf16 rows.
Eager draws its batches as sg-train does, random context windows of the same token file's
training split (the tokens do not change the work, only its realism). Step times: sg-train's from
its run file (curves/tokens_per_second, one value per optimizer step, timing the step only),
eager's from the same span of work (batch, forward, loss, backward, clipping, AdamW step). A run's figure is the median over its steps after the first --skip;
every configuration is measured once per round, rounds interleaved and rotated (A B C, B C A, …),
and the reported figure is the median over rounds. Model FLOPs per token (PaLM's count, the attention
matrix counted whole):
  6 * (12 L C^2 + V C) + 12 L C T       (L layers, width C, vocabulary V, context T)
The load average is recorded around every measurement: on a shared machine read the figures
with it. Above every table: the CPU's model name and flags (lscpu's), its bf16 features, its
caches, ATen's CPU capability and the loss plans sg-train cached for this shape (lib/kernels/loss_tuning.h; a run of
one step before the rounds lets sg-train measure it untimed). --cpu-time adds core-seconds (user + system) per step, which other processes disturb
far less than wall-clock time: eager's from its steps, sg-train's as the difference between a
run of --steps and one of --skip steps (start-up, evaluation and saving cancel). With more than
one thread, CPU time also counts OpenMP's spin-waiting, so use it with --threads 1. Timings are
reported, never asserted.

Run it with the project's Python (torch, numpy, h5py) from the repository root:
  ~/.cache/sinkgate/venv-torch-2.11.0/bin/python pipelines/bench_train.py
  ... pipelines/bench_train.py --rounds 3 --json bench.json              # figures to quote
  ... pipelines/bench_train.py --threads 1 --rounds 3 --cpu-time         # a machine others load
  ... pipelines/bench_train.py --arms baseline,combo2 --no-eager      # arm overheads only
  ... pipelines/bench_train.py --arms keygate,outgate,outgate-elem --no-eager   # the gates beyond the paper
  ... pipelines/bench_train.py --rounds 3 --precisions float32,bf16   # CPU bf16 against fp32 and eager autocast
"""
import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ARMS = ["baseline", "offbyone", "sinklogit", "sinktoken", "normgate", "renorm", "projgate", "combo", "combo2"]
# Beyond the paper: the key gate and the output gates (docs/beyond.md); --arms all-beyond runs them too.
BEYOND_ARMS = ["keygate", "outgate", "outgate-elem", "sinklogit+outgate"]
TUNED = "glibc.malloc.hugetlb=1:glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold={}"
from default_corpus import default_corpus  # noqa: E402

DEFAULT_CORPUS = default_corpus()
# Tier cpu of lib/run/config.cpp.
SHAPE = dict(n_layer=4, n_head=4, n_embd=256, block_size=256, micro_batch=8, vocab_size=50257)


def log(message):
    print(f"bench_train: {message}", file=sys.stderr, flush=True)


def machine():
    """What the figures were measured on: /proc/cpuinfo's model name and flags (lscpu's), the CPUs
    this process may use, the cache sizes, and ATen's CPU capability in the --python's torch."""
    info = {"model_name": "unknown", "flags": "", "cpus": len(os.sched_getaffinity(0))}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key, value = key.strip(), value.strip()
                if key == "model name" and info["model_name"] == "unknown":
                    info["model_name"] = value
                elif key == "flags" and not info["flags"]:
                    info["flags"] = value
    except OSError:
        pass
    caches = []
    for index in range(8):
        folder = f"/sys/devices/system/cpu/cpu0/cache/index{index}"
        try:
            with open(f"{folder}/level") as f:
                level = f.read().strip()
            with open(f"{folder}/type") as f:
                kind = f.read().strip()
            with open(f"{folder}/size") as f:
                size = f.read().strip()
        except OSError:
            break
        if kind != "Instruction":
            caches.append(f"L{level} {size}")
    info["caches"] = ", ".join(caches)
    return info


def loss_plan(args, bf16=False):
    """sg-train's cached CPU loss plan for tier cpu on --threads threads (lib/kernels/loss_tuning.h;
    with bf16, a bf16 run's), or None: '<chunk rows> <products>' and the fast paths that ran."""
    cache = os.environ.get("SINKGATE_CACHE") or (os.path.join(os.environ["XDG_CACHE_HOME"], "sinkgate")
                                                 if os.environ.get("XDG_CACHE_HOME") else
                                                 os.path.expanduser("~/.cache/sinkgate"))
    s = SHAPE
    key = [str(args.threads), str(s["micro_batch"] * s["block_size"]), str(s["n_embd"]), str(s["vocab_size"])]
    found = None
    # A bf16 plan's key ends "bf16", or "bf16+avx512bf16-gemm" where the loss's own AVX512-BF16
    # products are candidates (the CPU has AVX512-BF16 and SINKGATE_CPU_KERNELS leaves them on).
    kernels = os.environ.get("SINKGATE_CPU_KERNELS", "")
    own_bf16 = "avx512_bf16" in machine()["flags"].split() and kernels not in ("0", "avx2")
    bf16_key = "bf16+avx512bf16-gemm" if own_bf16 else "bf16"
    try:
        with open(os.path.join(cache, "loss-chunks.tsv")) as f:
            for line in f:
                fields = line.rstrip("\n").split("\t")
                if bf16 and (len(fields) != 9 or fields[6] != bf16_key):
                    continue
                if len(fields) == (9 if bf16 else 8) and fields[0] == machine()["model_name"] and fields[1:5] == key:
                    found = f"{fields[-2]} rows {fields[-1]} ({fields[5]})"
    except OSError:
        pass
    return found


def bf16_features(flags):
    """The CPU's bf16 instructions by /proc/cpuinfo's names (what sg-train --precision bf16 needs)."""
    have = set(flags.split())
    return [name for name in ("amx_bf16", "amx_tile", "avx512_bf16") if name in have]


def model_flops_per_token(s):
    """Training FLOPs per token: 6 N (N = 12 L C^2 matmul weights + the tied head V C) + 12 L C T."""
    L, C, V, T = s["n_layer"], s["n_embd"], s["vocab_size"], s["block_size"]
    return 6 * (12 * L * C * C + V * C) + 12 * L * C * T


# --------------------------------------------------------------------------------------------
# Workers: run in a subprocess (python bench_train.py --worker KIND …), print one JSON line.

def worker_peak(args):
    """Best fp32 torch.mm rate over a few square sizes: FLOP per wall-clock second on --threads
    threads, and FLOP per CPU second on one thread (a core's peak, which other load disturbs less)."""
    import torch

    def best_rate(clock, sizes, budget, dtype=torch.float32):
        best = 0.0
        for n in sizes:
            a, b = torch.randn(n, n, dtype=dtype), torch.randn(n, n, dtype=dtype)
            c = torch.empty(n, n, dtype=dtype)
            torch.mm(a, b, out=c)
            flops = 2.0 * n ** 3
            for _ in range(max(5, int(budget / flops))):
                start = clock()
                torch.mm(a, b, out=c)
                best = max(best, flops / max(clock() - start, 1e-9))
        return best

    torch.set_num_threads(args.threads)
    wall = best_rate(time.perf_counter, (1024, 2048), 4e10)
    bf16 = best_rate(time.perf_counter, (1024, 2048), 8e10, torch.bfloat16) if args.bf16_peak else None
    torch.set_num_threads(1)
    core = best_rate(time.process_time, (2048,), 2e10)
    return {"flops_per_second": wall, "core_flops_per_cpu_second": core, "bf16_flops_per_second": bf16,
            "aten_cpu_capability": torch.backends.cpu.get_cpu_capability()}


def worker_eager(args):
    """Trains the Python reference for --steps steps; returns the seconds of every step."""
    import h5py
    import numpy as np
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    s = SHAPE
    L, H, C, T, V, B = s["n_layer"], s["n_head"], s["n_embd"], s["block_size"], s["vocab_size"], s["micro_batch"]

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.ln_2 = nn.LayerNorm(C), nn.LayerNorm(C)
            self.qkv = nn.Linear(C, 3 * C, bias=False)
            self.attn_out = nn.Linear(C, C, bias=False)
            self.fc = nn.Linear(C, 4 * C, bias=False)
            self.fc_out = nn.Linear(4 * C, C, bias=False)

        def forward(self, x):
            b, t, _ = x.shape
            q, k, v = self.qkv(self.ln_1(x)).view(b, t, 3, H, C // H).permute(2, 0, 3, 1, 4)  # (B, H, T, d) each
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.attn_out(y.transpose(1, 2).reshape(b, t, C))
            return x + self.fc_out(F.gelu(self.fc(self.ln_2(x))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(V, C), nn.Embedding(T, C)
            self.blocks = nn.ModuleList(Block() for _ in range(L))
            self.ln_f = nn.LayerNorm(C)
            for name, p in self.named_parameters():
                if p.dim() >= 2:
                    std = 0.02 / math.sqrt(2 * L) if name.endswith(("attn_out.weight", "fc_out.weight")) else 0.02
                    nn.init.normal_(p, 0.0, std)

        def forward(self, idx, targets):
            x = self.wte(idx) + self.wpe(torch.arange(idx.size(1)))
            for block in self.blocks:
                x = block(x)
            logits = F.linear(self.ln_f(x), self.wte.weight)  # (B, T, V), tied head
            return F.cross_entropy(logits.view(-1, V), targets.view(-1))

    model = GPT()
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                                  lr=6e-4, betas=(0.9, 0.95), eps=1e-8)
    with h5py.File(args.tokens, "r") as f:
        stream = torch.from_numpy(f["tokens/train"][:].astype(np.int64))
    generator = torch.Generator().manual_seed(args.seed)
    seconds, cpu_seconds = [], []
    # bf16: PyTorch's CPU mixed precision as its documentation gives it (fp32 master weights and
    # AdamW, autocast around the forward pass and the loss).
    precision = torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.worker == "eager-bf16")
    for _ in range(args.steps):
        start, cpu_start = time.perf_counter(), time.process_time()
        offsets = torch.randint(0, stream.numel() - T - 1, (B,), generator=generator)
        windows = torch.stack([stream[o:o + T + 1] for o in offsets.tolist()])
        optimizer.zero_grad(set_to_none=True)
        with precision:
            loss = model(windows[:, :-1].contiguous(), windows[:, 1:].contiguous())
        loss.backward()
        loss_value = loss.item()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        seconds.append(time.perf_counter() - start)
        cpu_seconds.append(time.process_time() - cpu_start)
        if not math.isfinite(loss_value):
            raise SystemExit(f"bench_train: eager loss is {loss_value}")
    return {"seconds": seconds, "cpu_seconds": cpu_seconds, "loss": loss_value}


def run_worker(kind, args, env):
    command = [args.python, os.path.abspath(__file__), "--worker", kind, "--threads", str(args.threads),
               "--steps", str(args.steps), "--tokens", args.tokens, "--seed", str(args.seed)]
    if kind == "peak" and "bf16" in args.precision_list:
        command.append("--bf16-peak")
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"bench_train: the {kind} worker failed (exit {done.returncode}):\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------------------------
# The driver.

def children_cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def sg_train_run(args, arm, env, workdir, steps, precision="float32"):
    """Runs sg-train for one arm in one precision; returns the seconds of every optimizer step (from
    its run file), the process's CPU seconds (user + system) and the run's configuration."""
    import h5py
    output = os.path.join(workdir, f"run-{arm}-{precision}.h5")
    k = str(steps)
    command = [args.sg_train, "--tokens", args.tokens, "--tier", "cpu", "--arm", arm, "--seed", str(args.seed),
               "--precision", precision,
               "-o", output, "--force", "--threads", str(args.threads), "--log-level", "quiet",
               "--set", f"iterations={k}", "--set", f"warmup={min(args.skip, 2, steps)}", "--set", f"eval_interval={k}",
               "--set", "eval_batches=1", "--set", "final_eval_batches=1", "--set", f"checkpoint_interval={k}"]
    cpu = children_cpu_seconds()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    cpu = children_cpu_seconds() - cpu
    if done.returncode != 0:
        sys.exit(f"bench_train: sg-train --arm {arm} --precision {precision} failed (exit {done.returncode}):\n{done.stderr}")
    # sinkgate stores strings fixed-length: h5py gives them as bytes.
    text = lambda value: value.decode() if isinstance(value, bytes) else value
    with h5py.File(output, "r") as f:
        if text(f.attrs.get("format")) != "sinkgate-run":
            sys.exit(f"bench_train: {output} is not a sinkgate-run file")
        tokens_per_second = f["curves/tokens_per_second"][:]
        config = {key: text(f["config"].attrs[key]) for key in f["config"].attrs} if "config" in f else {}
    os.remove(output)
    differing = {key: config.get(key) for key in SHAPE if str(config.get(key)) != str(SHAPE[key])}
    if differing:
        sys.exit(f"bench_train: sg-train's tier cpu is {differing}, the Python reference {SHAPE}: update SHAPE")
    tokens_per_step = SHAPE["micro_batch"] * SHAPE["block_size"]
    return [tokens_per_step / float(t) for t in tokens_per_second], cpu, config


def median_after_skip(seconds, skip):
    kept = seconds[skip:] if len(seconds) > skip else seconds[-1:]
    return statistics.median(kept)


def load_average():
    return os.getloadavg()[0]


def tokenize_default(args, workdir):
    path = os.path.join(workdir, "tokens.h5")
    log(f"tokenising {DEFAULT_CORPUS} -> {path}")
    subprocess.run([args.sg_tokenize, DEFAULT_CORPUS, "-o", path, "--force", "--log-level", "quiet"], check=True)
    return path


def suffix_of(precision):
    """The label suffix of a precision's configurations: none for float32, " bf16"."""
    return "" if precision == "float32" else f" {precision}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--tokens", help="token file (sg-tokenize); default: the Python docs tokenised into a temporary folder")
    parser.add_argument("--sg-train", default="build/bin/sg-train", help="the sg-train executable")
    parser.add_argument("--sg-tokenize", default="build/bin/sg-tokenize", help="the sg-tokenize executable (default tokens)")
    parser.add_argument("--python", default=sys.executable, help="the Python (torch, numpy, h5py) of the eager runs")
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)), help="threads of every run")
    parser.add_argument("--steps", type=int, default=8, help="optimizer steps per run")
    parser.add_argument("--skip", type=int, default=3, help="warm-up steps left out of each run's median")
    parser.add_argument("--rounds", type=int, default=1,
                        help="interleaved rounds; figures are medians over rounds (3 or more for figures to quote)")
    parser.add_argument("--arms", default=",".join(ARMS), help="sg-train arms (comma-separated; all-beyond: the nine and the gates beyond the "
                        "paper); baseline is always run")
    parser.add_argument("--precisions", default=None,
                        help="float32, bf16 or both (comma-separated); default: both where the CPU has AVX512-BF16 "
                             "or AMX-BF16, else float32")
    parser.add_argument("--trim-thresholds", default="268435456,4294967296",
                        help="glibc.malloc.trim_threshold values tried for eager tuned (bytes, comma-separated)")
    parser.add_argument("--no-eager", action="store_true", help="skip PyTorch eager (arm overheads only)")
    parser.add_argument("--cpu-time", action="store_true",
                        help="also measure CPU core-seconds per step (sg-train: one more run of --skip steps to "
                             "difference against); steadier than wall-clock on a loaded machine")
    parser.add_argument("--seed", type=int, default=0, help="seed of the models and batches")
    parser.add_argument("--json", metavar="FILE", help="also write every measurement as JSON ('-': stdout)")
    parser.add_argument("--worker", choices=["eager", "eager-bf16", "peak"], help=argparse.SUPPRESS)
    parser.add_argument("--bf16-peak", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.worker:
        result = worker_peak(args) if args.worker == "peak" else worker_eager(args)
        print(json.dumps(result))
        return
    if args.skip < 1 and args.cpu_time:
        parser.error("--cpu-time needs --skip >= 1")
    if args.steps <= args.skip:
        parser.error(f"--steps ({args.steps}) must exceed --skip ({args.skip})")
    host = machine()
    features = bf16_features(host["flags"])
    if args.precisions is None:
        args.precisions = "float32,bf16" if features else "float32"
        if not features:
            log("this CPU has no bf16 instructions (AVX512-BF16, AMX-BF16): float32 only")
    args.precision_list = [p for p in dict.fromkeys(args.precisions.split(",")) if p]
    if any(p not in ("float32", "bf16") for p in args.precision_list) or not args.precision_list:
        parser.error(f"--precisions takes float32, bf16 or both, not {args.precisions}")
    requested = args.arms.replace("all-beyond", ",".join(ARMS + BEYOND_ARMS)).split(",")
    arms = ["baseline"] + list(dict.fromkeys(a for a in requested if a and a != "baseline"))
    thresholds = [int(t) for t in args.trim_thresholds.split(",") if t]
    try:
        import h5py  # noqa: F401  (run files are read with it)
    except ImportError:
        sys.exit(f"bench_train: {sys.executable} lacks h5py: add h5py to the virtual environment (setup.sh)")
    if not os.access(args.sg_train, os.X_OK):
        sys.exit(f"bench_train: no sg-train at {args.sg_train} (build first, or give --sg-train)")

    plain = {k: v for k, v in os.environ.items() if k != "GLIBC_TUNABLES"}  # what a user who sets nothing has
    configurations = []  # (label, kind, env or arm, precision)
    for precision in args.precision_list:
        suffix = suffix_of(precision)
        eager = "eager" if precision == "float32" else "eager-bf16"
        if not args.no_eager:
            configurations.append((f"eager default{suffix}", eager, plain, precision))
            for t in thresholds:
                configurations.append((f"eager tuned trim={t}{suffix}", eager, dict(plain, GLIBC_TUNABLES=TUNED.format(t)),
                                       precision))
        configurations += [(f"sg-train {arm}{suffix}", "sg-train", arm, precision) for arm in arms]

    with tempfile.TemporaryDirectory(prefix="bench-train-") as workdir:
        args.tokens = args.tokens or tokenize_default(args, workdir)
        load_start = os.getloadavg()
        log(f"{args.threads} threads, {args.steps} steps a run (first {args.skip} skipped), {args.rounds} rounds, "
            f"{', '.join(args.precision_list)}; load average {load_start[0]:.2f} {load_start[1]:.2f} {load_start[2]:.2f} "
            f"on {os.cpu_count()} CPUs")
        # sg-train measures its CPU loss plan once per machine, threads, shape and precision
        # (loss_tuning.h), inside its first step: a run of one step first keeps that out of every timed run.
        for precision in args.precision_list:
            sg_train_run(args, "baseline", plain, workdir, 1, precision)
        peaks = [run_worker("peak", args, plain)]
        runs = {label: [] for label, _, _, _ in configurations}
        cpu_runs = {label: [] for label, _, _, _ in configurations}  # core-seconds per step, with --cpu-time
        loads = {label: [] for label, _, _, _ in configurations}
        sg_config = {}
        for round_index in range(args.rounds):
            # Each round starts one configuration later, so that none always runs first (right
            # after the peak measurement, which was seen to slow the next run by up to 25 %).
            shift = round_index % len(configurations)
            for label, kind, what, precision in configurations[shift:] + configurations[:shift]:
                before = load_average()
                if kind.startswith("eager"):
                    result = run_worker(kind, args, what)
                    seconds = result["seconds"]
                    cpu_runs[label].append(statistics.mean(result["cpu_seconds"][args.skip:]))
                else:
                    seconds, cpu_long, config = sg_train_run(args, what, plain, workdir, args.steps, precision)
                    sg_config = sg_config or config
                    if args.cpu_time:  # the steps after the first --skip, net of start-up, evaluation and saving
                        _, cpu_short, _ = sg_train_run(args, what, plain, workdir, args.skip, precision)
                        cpu_runs[label].append((cpu_long - cpu_short) / (args.steps - args.skip))
                loads[label].append((before + load_average()) / 2)
                runs[label].append(seconds)
                step = median_after_skip(seconds, args.skip)
                cpu_note = f"  {cpu_runs[label][-1]:6.3f} CPU s/step" if cpu_runs[label] and args.cpu_time else ""
                log(f"round {round_index + 1}/{args.rounds}  {label:<36} {step:7.3f} s/step  "
                    f"{SHAPE['micro_batch'] * SHAPE['block_size'] / step:8.0f} tok/s{cpu_note}  (load {loads[label][-1]:.2f})")
            peaks.append(run_worker("peak", args, plain))
        load_end = os.getloadavg()

    tokens_per_step = SHAPE["micro_batch"] * SHAPE["block_size"]
    flops_token = model_flops_per_token(SHAPE)
    peak = max(p["flops_per_second"] for p in peaks)  # FLOP/s on --threads threads (wall clock)
    bf16_peak = max((p.get("bf16_flops_per_second") or 0.0) for p in peaks) or None
    core_peak = max(p["core_flops_per_cpu_second"] for p in peaks)  # FLOP per CPU second of one core
    precision_of = {label: precision for label, _, _, precision in configurations}
    rows = {}
    for label in runs:
        per_round = [median_after_skip(s, args.skip) for s in runs[label]]
        step = statistics.median(per_round)
        own_peak = bf16_peak if precision_of[label] == "bf16" and bf16_peak else peak
        rows[label] = {"precision": precision_of[label], "seconds_per_step": step, "tokens_per_second": tokens_per_step / step,
                       "cpu_seconds_per_step": statistics.median(cpu_runs[label]) if args.cpu_time else None,
                       "cpu_fraction_of_core_peak": (tokens_per_step * flops_token / statistics.median(cpu_runs[label])
                                                     / core_peak) if args.cpu_time else None,
                       "per_round_seconds": per_round, "steps_seconds": runs[label],
                       "per_round_cpu_seconds": cpu_runs[label] if args.cpu_time else None,
                       "load_average": statistics.median(loads[label]),
                       "fraction_of_peak": tokens_per_step / step * flops_token / own_peak}
    for row in rows.values():  # each precision's rows against its own sg-train baseline
        baseline = rows[f"sg-train baseline{suffix_of(row['precision'])}"]
        row["relative_to_baseline"] = row["seconds_per_step"] / baseline["seconds_per_step"]
        if args.cpu_time:
            row["cpu_relative_to_baseline"] = row["cpu_seconds_per_step"] / baseline["cpu_seconds_per_step"]

    def say(*parts, **kwargs):  # the table goes to stdout, or to stderr when the JSON does
        print(*parts, **kwargs, file=sys.stderr if args.json == "-" else sys.stdout)

    say(f"# CPU training throughput: tier cpu (L={SHAPE['n_layer']}, H={SHAPE['n_head']}, C={SHAPE['n_embd']}, "
          f"T={SHAPE['block_size']}, B={SHAPE['micro_batch']}, V={SHAPE['vocab_size']}), {args.threads} threads, "
          f"{args.steps} steps a run (median after {args.skip}), median of {args.rounds} interleaved rounds")
    aten = peaks[0].get("aten_cpu_capability", "unknown")
    plan = loss_plan(args)
    plan_bf16 = loss_plan(args, bf16=True) if "bf16" in args.precision_list else None
    say(f"# CPU: {host['model_name']}; {host['cpus']} CPUs usable; caches {host['caches'] or 'unknown'}; "
        f"ATen CPU capability {aten}; sg-train's loss plan: {plan or 'none cached'}"
        + (f"; bf16: {plan_bf16 or 'none cached'}" if "bf16" in args.precision_list else ""))
    say(f"# bf16 features: {', '.join(features) or 'none (no AVX512-BF16, no AMX-BF16)'}")
    say(f"# flags: {host['flags']}")
    say(f"# load average (1 min) {load_start[0]:.2f} at start, {load_end[0]:.2f} at end, on {os.cpu_count()} CPUs")
    say(f"# fp32 matmul peak (best torch.mm): {peak / 1e9:.1f} GFLOP/s on {args.threads} threads (wall clock), "
          f"{core_peak / 1e9:.1f} GFLOP per CPU second on one core"
          + (f"; bf16 matmul peak (best bf16 torch.mm): {bf16_peak / 1e9:.1f} GFLOP/s" if bf16_peak else "")
          + f"; model {flops_token / 1e6:.1f} MFLOP/token = 6(12LC^2 + VC) + 12LCT")
    cpu_header = f" {'CPU s':>7} {'vs base':>8} {'% core':>7}" if args.cpu_time else ""
    say(f"{'configuration':<36} {'s/step':>8} {'spread':>7} {'tok/s':>8} {'GFLOP/s':>8} {'% peak':>7} "
          f"{'vs base':>8}{cpu_header} {'load':>5}")
    for label, row in rows.items():
        spread = (max(row["per_round_seconds"]) - min(row["per_round_seconds"])) / row["seconds_per_step"]
        cpu = (f" {row['cpu_seconds_per_step']:7.3f} {100 * (row['cpu_relative_to_baseline'] - 1):+7.1f}%"
               f" {100 * row['cpu_fraction_of_core_peak']:6.1f}%" if args.cpu_time else "")
        say(f"{label:<36} {row['seconds_per_step']:8.3f} {100 * spread:6.1f}% {row['tokens_per_second']:8.0f} "
              f"{row['tokens_per_second'] * flops_token / 1e9:8.1f} {100 * row['fraction_of_peak']:6.1f}% "
              f"{100 * (row['relative_to_baseline'] - 1):+7.1f}%{cpu} {row['load_average']:5.2f}")
    say("# s/step: median over rounds of each run's median step (wall clock); spread: (max - min) over rounds / "
          "median; % peak: against its precision's torch.mm peak; vs base: against sg-train baseline of the same "
          "precision; load: 1-minute load average around the runs")
    if any(row["fraction_of_peak"] > 1 for row in rows.values()):
        say("# % peak above 100: torch.mm (MKL) runs narrower kernels than this CPU can, and sg-train's loss runs "
            "its own AVX-512 products; build/bin/bench_cpu_kernels prints the CPU's FMA peak")
    if args.cpu_time:
        say("# CPU s: core-seconds (user + system) per step after the first --skip, median over rounds; eager's "
              "from its steps, sg-train's as the difference of a --steps and a --skip run; % core: model FLOP per "
              "CPU second against one core's torch.mm peak per CPU second")

    summary = {}
    metrics = [("seconds_per_step", "wall clock", "per_round_seconds")] + (
        [("cpu_seconds_per_step", "CPU time", "per_round_cpu_seconds")] if args.cpu_time else [])
    for precision in args.precision_list:
        suffix = suffix_of(precision)
        baseline = rows[f"sg-train baseline{suffix}"]
        for key, name, rounds_key in metrics:
            name_p = f"{name}{suffix}"
            figures = summary.setdefault(precision, {}).setdefault(key, {})
            sg_labels = [label for label in rows if label.startswith("sg-train") and rows[label]["precision"] == precision]
            slowest = max(sg_labels, key=lambda label: rows[label][key])
            figures.update({"slowest_arm": slowest, "slowest_arm_overhead": rows[slowest][key] / baseline[key] - 1})
            if not args.no_eager:
                default = f"eager default{suffix}"
                tuned = [label for label in rows if label.startswith("eager tuned") and rows[label]["precision"] == precision]
                best = min(tuned or [default], key=lambda label: rows[label][key])
                # Paired by round: both measured minutes apart, so a slow spell of a shared host
                # touches both sides of each ratio.
                paired = [e / b for e, b in zip(rows[best][rounds_key], baseline[rounds_key])]
                figures.update({
                    "speedup_vs_eager_default": rows[default][key] / baseline[key],
                    "speedup_vs_eager_tuned": rows[best][key] / baseline[key], "eager_tuned_best": best,
                    "eager_default_slowdown": rows[default][key] / rows[best][key],
                    "paired_speedups_vs_eager_tuned": paired, "paired_speedup_vs_eager_tuned": statistics.median(paired)})
                target = ">= 1.10x" if precision == "float32" else ">= 1.5x"
                say(f"{name_p}: sg-train baseline{suffix} is {figures['speedup_vs_eager_default']:.2f}x eager default{suffix}, "
                      f"{figures['speedup_vs_eager_tuned']:.2f}x the best eager{suffix} ({best}; target {target}); "
                      f"eager default is {figures['eager_default_slowdown']:.2f}x slower than tuned")
                say(f"{name_p}: round by round, best eager / sg-train baseline = "
                      f"{', '.join(f'{r:.2f}' for r in paired)}; median {statistics.median(paired):.2f}x")
            if precision != "float32" and "sg-train baseline" in rows:
                fp32 = rows["sg-train baseline"]
                paired = [f / b for f, b in zip(fp32[rounds_key], baseline[rounds_key])]
                figures.update({"speedup_vs_sg_train_float32": fp32[key] / baseline[key],
                                "paired_speedups_vs_sg_train_float32": paired})
                say(f"{name_p}: sg-train baseline{suffix} is {fp32[key] / baseline[key]:.2f}x sg-train baseline float32 "
                    f"(target >= 1.5x); round by round {', '.join(f'{r:.2f}' for r in paired)}; "
                    f"median {statistics.median(paired):.2f}x")
            say(f"{name_p}: slowest arm {slowest} at {100 * figures['slowest_arm_overhead']:+.1f}% vs baseline{suffix} "
                  f"(target <= +5%)")
    if args.json:
        document = {"shape": SHAPE, "threads": args.threads, "steps": args.steps, "skip": args.skip,
                    "rounds": args.rounds, "cpu_time": args.cpu_time, "flops_per_token": flops_token,
                    "precisions": args.precision_list, "bf16_features": features,
                    "fp32_peak_flops_per_second": peak, "bf16_peak_flops_per_second": bf16_peak,
                    "fp32_core_peak_flops_per_cpu_second": core_peak,
                    "peaks": peaks, "load_average_start": load_start, "load_average_end": load_end,
                    "sg_train_config": {k: str(v) for k, v in sg_config.items()}, "rows": rows, "summary": summary,
                    "machine": dict(host, aten_cpu_capability=aten), "loss_plan": plan, "loss_plan_bf16": plan_bf16}
        text = json.dumps(document, indent=1)
        if args.json == "-":
            print(text)
        else:
            with open(args.json, "w") as f:
                f.write(text + "\n")


if __name__ == "__main__":
    main()
