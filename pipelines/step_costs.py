#!/usr/bin/env python3
"""step_costs.py — what one sg-train optimizer step costs on a CUDA GPU, computed, not measured.

For a tier's shape and an arm it prints, per phase of the step (embedding, attention projections,
attention core, gates and other arm work, MLP, head + loss, optimizer), Markdown tables of:

  ideal       the useful FLOPs (forward + backward; causal attention counted pair by pair) and the
              minimum HBM bytes of a fused implementation with today's numerics (bf16 GEMM operands,
              a float32 residual stream, float32 master weights, gradients and moments; every
              activation written once and read back once; the gate as one kernel forward and one
              backward; a fused linear + cross-entropy that never writes logits), and the time no
              implementation can beat: max(FLOPs / bf16 rate, bytes / HBM rate), phase by phase;
  as written  the CUDA kernels that sg-train launches today, counted by reading the code that runs
              on CUDA (lib/model/model.cpp, attention.cpp, loss.cpp, lib/train/train.cpp,
              optimizer.cpp) together with the ATen paths they call, each kernel with the FLOPs
              it executes and the bytes it reads and writes, and the time these kernels need at
              best: each kernel max(FLOPs / rate of its precision, bytes / HBM rate, launch floor).

What is counted: one kernel for each ATen operator that computes (elementwise, reduction, copy,
cast, fill, index, GEMM), the autograd engine's own work (gradient sums in input buffers, casts of
a gradient to its input's dtype, AccumulateGrad), autocast's casts (an fp32 weight is cast once a
micro-batch and cached; a view or a non-leaf is cast on every call), the fused attention kernel as
one forward and three backward launches (FlashAttention-2's dot(dO, O), main and dQ-convert
kernels), LayerNorm as one forward and two backward launches, GEMMs as one launch each (cuBLAS may
add a split-K reduction), and the fused AdamW's multi_tensor_apply launches (simulated with
ATen's limits of 36 tensors and 320 blocks of 65,536 elements a launch). Views, reshapes that need
no copy, host-side bookkeeping and cudaMemcpy are not kernels and are not counted; host
synchronisations are listed apart. Elementwise arithmetic is counted as bytes, not FLOPs (it is
well under 0.1 % of the GEMM FLOPs). Rates are parameters, not measurements: the defaults are the
dense bf16 rate this workplace measured on an H200 (790 TFLOP/s), the H200's datasheet float32
rate without tensor cores (67 TFLOP/s, what cuBLAS gives an fp32 GEMM when TF32 is off, LibTorch's
default) and 4.0 TB/s of attainable HBM bandwidth.

--code 236c7a4 models the code that the README's throughput table measured instead (the loss
before commit 14fd484, LibTorch's unfused AdamW after clip_grad_norm_, a dense embedding gradient).
--what-if applies changes to today's code (a bf16 dW GEMM in the loss, one weight cast a
micro-batch, a fused linear + cross-entropy, fused gate kernels, q/k/v by unbind) so that the
saving each would bring is computed the same way; --chunk-rows, --micro-batch and --accumulation
change the loss chunk and the step's shape.

Tier presets are read from lib/run/config.cpp (make_tier lines), so they stay the code's own.

Run it with any Python 3 from the repository root (no build, no torch):
  python3 pipelines/step_costs.py                              # 124M baseline, 8 x 4 x 1,024 tokens
  python3 pipelines/step_costs.py --tier 124M --arm renorm --kernels 15
  python3 pipelines/step_costs.py --tier 124M --all-arms       # one row per arm
  python3 pipelines/step_costs.py --tier 10M --all-arms --code 236c7a4
  python3 pipelines/step_costs.py --what-if dw-bf16,cast-once --chunk-rows 8192
"""
import argparse
import os
import re
import sys

ARMS = ["baseline", "offbyone", "sinklogit", "sinktoken", "normgate", "renorm", "projgate", "combo", "combo2"]
# lib/run/arm.cpp: the paper's names as (zero option, filter).
NAMED_ARMS = {
    "baseline": ("none", "none"), "offbyone": ("offbyone", "none"), "sinklogit": ("sinklogit", "none"),
    "sinktoken": ("sinktoken", "none"), "normgate": ("none", "normgate"), "renorm": ("none", "renorm"),
    "projgate": ("none", "projgate"), "combo": ("sinklogit", "normgate"), "combo2": ("sinklogit", "projgate"),
}
ZEROS = ("none", "offbyone", "sinklogit", "sinktoken")
FILTERS = ("none", "normgate", "renorm", "projgate")
WHAT_IF = {
    "dw-bf16": "the loss's dW GEMM with bf16 operands and an fp32 output, as autocast meant",
    "cast-once": "the logits GEMM reads the micro-batch's cached bf16 weight instead of casting W^T per chunk",
    "fused-loss": "one fused linear + cross-entropy (logits never written), at its ideal bytes",
    "fused-gates": "each arm's gate, phantom or sink-token work as one kernel forward and one backward",
    "qkv-unbind": "q, k, v by unbind of a (B, T, 3, H, d) view: one stack in backward instead of zeros, copies, sums",
}
PHASES = ["embedding", "attn proj", "attn core", "gates+arm", "MLP", "head+loss", "optimizer"]
PHASE_NOTES = {
    "embedding": "token and position lookups, their gradients",
    "attn proj": "ln_1, c_attn, c_proj, residual add, the q/k/v layout's backward",
    "attn core": "fused causal attention, forward + backward",
    "gates+arm": "gate maths, phantom column, renorm's augmented head, sink token",
    "MLP": "ln_2, c_fc, GELU, c_proj, residual add",
    "head+loss": "ln_f, tied head, cross-entropy and its gradients",
    "optimizer": "gradient norm, clipping, AdamW",
}
BF16, F32, I64 = 2, 4, 8
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# --------------------------------------------------------------------------------------------
# Shapes

def read_tiers(root=ROOT):
    """The presets of lib/run/config.cpp: name -> shape fields, and the default vocabulary."""
    config = open(os.path.join(root, "lib/run/config.cpp"), encoding="utf-8").read()
    header = open(os.path.join(root, "lib/run/config.h"), encoding="utf-8").read()
    vocab = int(re.search(r"int64_t vocab_size = (\d+);", header).group(1))
    pattern = re.compile(r'make_tier\("([^"]+)",\s*"[^"]*",' + r"\s*(\d+)," * 7 + r"\s*(\d+)\)")
    tiers = {}
    for match in pattern.finditer(config):
        name, *numbers = match.groups()
        layers, heads, width, context, micro_batch, accumulation, iterations, _warmup = map(int, numbers)
        tiers[name] = dict(layers=layers, heads=heads, width=width, context=context, vocab=vocab,
                           micro_batch=micro_batch, accumulation=accumulation, iterations=iterations)
    if not tiers:
        sys.exit("step_costs: no make_tier(...) presets found in lib/run/config.cpp")
    return tiers


def parse_arm(name):
    if name in NAMED_ARMS:
        return NAMED_ARMS[name]
    zero, _, gate = name.partition("+")
    if zero in ZEROS and gate in FILTERS:
        return zero, gate
    sys.exit(f"step_costs: unknown arm '{name}' (one of {', '.join(ARMS)}, or ZERO+FILTER)")


class Shape:
    """One step's sizes. rows: positions a block sees per micro-batch (one more per sequence with
    the sink token); loss_rows: positions the loss sees."""

    def __init__(self, tier, arm, micro_batch=None, accumulation=None, chunk_rows=0, changes=()):
        self.changes = set(changes)
        self.L, self.H, self.C = tier["layers"], tier["heads"], tier["width"]
        self.T, self.V = tier["context"], tier["vocab"]
        self.B = micro_batch or tier["micro_batch"]
        self.A = accumulation or tier["accumulation"]
        self.d = self.C // self.H
        self.arm = arm
        self.zero, self.gate = parse_arm(arm)
        self.Tb = self.T + (1 if self.zero == "sinktoken" else 0)
        self.rows = self.B * self.Tb
        self.loss_rows = self.B * self.T
        # loss_tuning.cpp, default_loss_chunk_rows: max(64, 2^24 / V), the rule on CUDA.
        self.chunk = chunk_rows or max(64, (1 << 24) // self.V)
        self.tokens = self.B * self.A * self.T
        # renorm's augmented head: q gets sqrt(d), k gets log g, all three padded to a multiple of 8.
        self.d_attn = (self.d + 1 + 7) // 8 * 8 if self.gate == "renorm" else self.d
        self.phantom = self.zero in ("offbyone", "sinklogit")

    def chunks(self):
        """[(rows, count)] of one micro-batch's loss chunks."""
        full, rest = divmod(self.loss_rows, self.chunk)
        return [(self.chunk, full)] + ([(rest, 1)] if rest else [])

    def parameters(self):
        """[(name, numel, decays)] in named_parameters() order (model.cpp, attention.cpp)."""
        C, H, d = self.C, self.H, self.d
        out = []
        if self.zero == "sinktoken":
            out.append(("sink_token", C, False))
        out += [("wte", self.V * C, True), ("wpe", self.T * C, True)]
        for layer in range(self.L):
            out += [(f"{layer}.ln_1.weight", C, False), (f"{layer}.ln_1.bias", C, False)]
            if self.zero == "sinklogit":
                out.append((f"{layer}.sink_logit", H, False))
            if self.gate in ("normgate", "renorm"):
                out.append((f"{layer}.gate_tau", H, False))
            if self.gate == "projgate":
                out += [(f"{layer}.gate_w", H * d, False), (f"{layer}.gate_b", H, False)]
            out += [(f"{layer}.c_attn", 3 * C * C, True), (f"{layer}.attn.c_proj", C * C, True),
                    (f"{layer}.ln_2.weight", C, False), (f"{layer}.ln_2.bias", C, False),
                    (f"{layer}.c_fc", 4 * C * C, True), (f"{layer}.mlp.c_proj", 4 * C * C, True)]
        out += [("ln_f.weight", C, False), ("ln_f.bias", C, False)]
        return out

    def causal_pairs(self):
        """(query, key) pairs a causal head scores in one sequence."""
        return self.Tb * (self.Tb + 1) / 2


# --------------------------------------------------------------------------------------------
# The ideal: useful FLOPs and minimum bytes per phase

def ideal_costs(s):
    """{phase: (FLOPs, bytes)} of one step for a fused implementation with today's numerics."""
    L, H, C, d, V, A = s.L, s.H, s.C, s.d, s.V, s.A
    R, N = s.rows, s.loss_rows
    flops = dict.fromkeys(PHASES, 0.0)
    mem = dict.fromkeys(PHASES, 0.0)
    # A weight grad is written on the first micro-batch and read-modify-written on the others.
    grad_rmw = (F32 + (A - 1) * 2 * F32) / A

    def weights(params):  # per micro-batch: two bf16 reads (forward, dX) and the fp32 grad
        return params * (2 * BF16 + grad_rmw)

    # Embedding: gather rows, write the fp32 residual; backward scatters into the touched rows.
    mem["embedding"] = A * (N * I64 + N * C * F32 + s.T * C * F32 + R * C * F32
                            + N * C * F32 + 2 * N * C * F32 + 2 * s.T * C * F32)
    for _ in range(L):
        # ln_1 (fp32 in, bf16 out), c_attn, c_proj with the residual add in its epilogue.
        fwd = R * C * F32 + R * C * BF16 + R * C * BF16 + R * 3 * C * BF16 + R * C * BF16 + 2 * R * C * F32
        # backward: c_proj dX/dW, c_attn dX/dW, ln_1 with the residual sum, the bf16 copy GEMMs read.
        bwd = (R * C * BF16 + R * C * BF16) + (R * C * BF16 + R * C * BF16) \
            + (R * 3 * C * BF16 + R * C * BF16) + (R * C * BF16 + R * 3 * C * BF16) \
            + (R * C * BF16 + R * C * F32 + R * C * F32 + R * C * F32 + R * C * BF16)
        mem["attn proj"] += A * (fwd + bwd + weights(4 * C * C))
        flops["attn proj"] += A * 3 * 2 * R * 4 * C * C
        # Attention core: q, k, v in, y and the logsumexp out; backward reads them and dy, writes dq, dk, dv.
        qk = d + 1 if s.gate == "renorm" else d
        flops["attn core"] += A * 3 * 2 * (qk + d) * s.causal_pairs() * s.B * H
        mem["attn core"] += A * (R * 3 * C * BF16 + R * C * BF16 + R * H * F32
                                 + R * 3 * C * BF16 + 2 * R * C * BF16 + R * H * F32 + R * 3 * C * BF16)
        # Gates and the phantom: one kernel forward, one backward (fully fused into attention: 0).
        if s.gate in ("normgate", "projgate"):
            mem["gates+arm"] += A * (2 * R * C * BF16 + R * H * F32 + 3 * R * C * BF16 + R * H * F32)
        if s.gate == "renorm":  # the augmented q, k, v built once, their slices read back once
            extra = 3 * R * H * s.d_attn * BF16
            mem["gates+arm"] += A * (R * 3 * C * BF16 + extra + extra + R * 3 * C * BF16)
            mem["attn core"] += A * 3 * R * H * (s.d_attn - d) * BF16 * 2
        if s.phantom:  # out * sigma(lse - b) and D_i = rowsum(dO * out) for db
            mem["gates+arm"] += A * (2 * R * C * BF16 + 2 * R * H * F32 + 2 * R * C * BF16)
        # MLP: ln_2, c_fc with GELU in its epilogue (pre- and post-activation kept), c_proj + residual.
        fwd = R * C * F32 + R * C * BF16 + R * C * BF16 + 2 * R * 4 * C * BF16 + R * 4 * C * BF16 + 2 * R * C * F32
        bwd = (R * C * BF16 + R * 4 * C * BF16 + R * 4 * C * BF16) + (R * 4 * C * BF16 + R * C * BF16) \
            + (R * 4 * C * BF16 + R * C * BF16) + (R * C * BF16 + R * 4 * C * BF16) \
            + (R * C * BF16 + R * C * F32 + R * C * F32 + R * C * F32 + R * C * BF16)
        mem["MLP"] += A * (fwd + bwd + weights(8 * C * C))
        flops["MLP"] += A * 3 * 2 * R * 8 * C * C
    # Head: ln_f, then a fused linear + cross-entropy: h and W read for the logits and for dh, the
    # fp32 dW accumulated once, dh written; ln_f backward.
    mem["head+loss"] = A * (N * C * F32 + N * C * BF16 + N * I64 + 2 * N * C * BF16 + N * C * BF16
                            + V * C * (2 * BF16 + grad_rmw) + 2 * N * C * F32 + N * C * F32)
    flops["head+loss"] = A * 3 * 2 * N * C * V
    # The sink token costs nothing apart in the ideal: its row is written in place and rides along
    # in every phase (R counts it).
    # Optimizer: the norm reads every gradient; fused AdamW reads p, g, m, v, writes p, m, v and a bf16 copy.
    params = sum(n for _, n, _ in s.parameters())
    mem["optimizer"] = params * (F32 + 4 * F32 + 3 * F32 + BF16)
    return {p: (flops[p], mem[p]) for p in PHASES}


# --------------------------------------------------------------------------------------------
# As written: the kernels of today's code

class Ledger:
    """Kernel groups of one step: (phase, pass, what, launches, FLOPs and bytes per launch, rate)."""

    def __init__(self):
        self.rows = []

    def add(self, phase, where, what, calls, flops=0.0, read=0.0, write=0.0, rate="mem"):
        if calls > 0:
            self.rows.append(dict(phase=phase, where=where, what=what, calls=calls, flops=flops,
                                  bytes=read + write, rate=rate))


def add_linear(led, phase, what, s, rows, k, n, input_fp32):
    """An autocast nn::Linear without bias, rows x k -> rows x n: forward and backward kernels."""
    A, m = s.A, s.L * s.A
    acc = s.L * (A - 1)
    if input_fp32:  # autocast casts the fp32 LayerNorm output to bf16 for the GEMM
        led.add(phase, "fwd", f"{what}: input cast fp32->bf16", m, read=rows * k * F32, write=rows * k * BF16)
    led.add(phase, "fwd", f"{what}: weight cast fp32->bf16 (cached for the micro-batch)", m,
            read=k * n * F32, write=k * n * BF16)
    led.add(phase, "fwd", f"{what}: GEMM", m,
            2 * rows * k * n, rows * k * BF16 + k * n * BF16, rows * n * BF16, "bf16")
    led.add(phase, "bwd", f"{what}: GEMM dX", m,
            2 * rows * k * n, rows * n * BF16 + k * n * BF16, rows * k * BF16, "bf16")
    led.add(phase, "bwd", f"{what}: GEMM dW", m, 2 * rows * k * n, rows * (k + n) * BF16, k * n * BF16, "bf16")
    led.add(phase, "bwd", f"{what}: weight grad cast bf16->fp32", m, read=k * n * BF16, write=k * n * F32)
    led.add(phase, "bwd", f"{what}: AccumulateGrad +=", acc, read=2 * k * n * F32, write=k * n * F32)
    if input_fp32:
        led.add(phase, "bwd", f"{what}: input grad cast bf16->fp32", m, read=rows * k * BF16, write=rows * k * F32)


def add_layer_norm(led, phase, what, s, rows, calls, accumulate):
    C = s.C
    led.add(phase, "fwd", f"{what} forward", calls, read=rows * C * F32, write=rows * C * F32 + rows * 2 * F32)
    led.add(phase, "bwd", f"{what} backward dX", calls,
            read=2 * rows * C * F32 + rows * 2 * F32, write=rows * C * F32)
    led.add(phase, "bwd", f"{what} backward dgamma, dbeta", calls, read=2 * rows * C * F32, write=2 * C * F32)
    led.add(phase, "bwd", f"{what} AccumulateGrad += (weight, bias)", 2 * accumulate, read=2 * C * F32, write=C * F32)


def add_residual(led, phase, s):
    """x + branch(x): fp32 + bf16 forward; backward casts the fp32 grad for the bf16 branch and sums
    the identity and LayerNorm paths in the autograd input buffer."""
    R, C, m = s.rows, s.C, s.L * s.A
    led.add(phase, "fwd", "residual add fp32 + bf16", m, read=R * C * (F32 + BF16), write=R * C * F32)
    led.add(phase, "bwd", "branch grad cast fp32->bf16 (engine)", m, read=R * C * F32, write=R * C * BF16)
    led.add(phase, "bwd", "residual grad sum (input buffer add_)", m, read=2 * R * C * F32, write=R * C * F32)


def add_attention_core(led, s, label):
    """FlashAttention-2-shaped kernels: 1 forward, 3 backward (dot(dO,O), main, dQ convert)."""
    R, H, m = s.rows, s.H, s.L * s.A
    w = s.d_attn  # head width the kernel is given (renorm: padded to 72)
    fwd = 4 * w * s.causal_pairs() * s.B * H  # QK^T and PV over the causal pairs
    lse = R * H * F32
    led.add("attn core", "fwd", f"{label} forward (head dim {w})", m,
            fwd, 3 * R * H * w * BF16, R * H * w * BF16 + lse, "bf16")
    led.add("attn core", "bwd", f"{label} backward: rowsum(dO*O), clear dQ accumulator", m,
            read=2 * R * H * w * BF16, write=lse + R * H * w * F32)
    led.add("attn core", "bwd", f"{label} backward: main (recomputes QK^T)", m, 2.5 * fwd,
            5 * R * H * w * BF16 + 2 * lse + R * H * w * F32, 2 * R * H * w * BF16 + R * H * w * F32, "bf16")
    led.add("attn core", "bwd", f"{label} backward: dQ fp32->bf16", m, read=R * H * w * F32, write=R * H * w * BF16)


def add_block(led, s):
    R, C, L, A = s.rows, s.C, s.L, s.A
    m, acc = L * A, L * (A - 1)
    # ---- attention projections ----
    add_layer_norm(led, "attn proj", "ln_1", s, R, m, acc)
    add_linear(led, "attn proj", "c_attn", s, R, C, 3 * C, input_fp32=True)
    add_linear(led, "attn proj", "attn.c_proj", s, R, C, C, input_fp32=False)
    add_residual(led, "attn proj", s)
    # qkv[0], qkv[1], qkv[2] are select()s of one (3, B, H, T, d) view: each SelectBackward writes a
    # zero (3, B, H, T, d) tensor and copies its slice in; the input buffer sums the three; the
    # permuted result is copied by view()'s backward (reshape of a non-contiguous gradient).
    full = R * 3 * C * BF16
    if "qkv-unbind" in s.changes:  # view (B, T, 3, H, d), unbind(2), transpose: one stack backward
        led.add("attn proj", "bwd", "qkv unbind backward: stack into (B, T, 3, H, d)", m, read=full, write=full)
    else:
        led.add("attn proj", "bwd", "qkv select backward: zeros (3, B, H, T, d)", 3 * m, write=full)
        led.add("attn proj", "bwd", "qkv select backward: slice copy", 3 * m, read=R * C * BF16, write=R * C * BF16)
        led.add("attn proj", "bwd", "qkv grads summed (input buffer add_)", 2 * m, read=2 * full, write=full)
        led.add("attn proj", "bwd", "qkv view backward: reshape copy", m, read=full, write=full)
    # ---- attention core ----
    add_attention_core(led, s, label="flash (explicit)" if s.phantom else "SDPA (cuDNN or flash)")
    # ---- MLP ----
    add_layer_norm(led, "MLP", "ln_2", s, R, m, acc)
    add_linear(led, "MLP", "c_fc", s, R, C, 4 * C, input_fp32=True)
    led.add("MLP", "fwd", "GELU", m, read=R * 4 * C * BF16, write=R * 4 * C * BF16)
    led.add("MLP", "bwd", "GELU backward", m, read=2 * R * 4 * C * BF16, write=R * 4 * C * BF16)
    add_linear(led, "MLP", "mlp.c_proj", s, R, 4 * C, C, input_fp32=False)
    add_residual(led, "MLP", s)
    # ---- gates and the phantom ----
    if "fused-gates" in s.changes:
        add_gates_fused(led, s)
    else:
        add_gates(led, s)


def add_gates_fused(led, s):
    """What-if: each arm's extra work as one kernel forward and one backward a layer (the ideal)."""
    R, H, m, acc = s.rows, s.H, s.L * s.A, s.L * (s.A - 1)
    RC, BHT, g = s.rows * s.C, s.rows * s.H, "gates+arm"
    if s.gate in ("normgate", "projgate"):
        led.add(g, "fwd", "fused gate: v -> g v and g", m, read=RC * BF16, write=RC * BF16 + BHT * F32)
        led.add(g, "bwd", "fused gate backward: dv, dtau or dw/db partials", m,
                read=2 * RC * BF16 + BHT * F32, write=RC * BF16)
    if s.gate == "renorm":
        wide = 3 * R * H * s.d_attn * BF16
        led.add(g, "fwd", "fused renorm: q', k', v' at the padded width", m, read=3 * RC * BF16, write=wide)
        led.add(g, "bwd", "fused renorm backward: slices back, d log g", m, read=wide, write=3 * RC * BF16)
    if s.phantom:
        led.add(g, "fwd", "fused phantom: out * sigma(lse - b), lse'", m,
                read=RC * BF16 + BHT * F32, write=RC * BF16 + BHT * F32)
        led.add(g, "bwd", "fused phantom backward: db partials", m, read=2 * RC * BF16 + BHT * F32, write=H * F32)
    if s.gate != "none" or s.zero == "sinklogit":
        led.add(g, "bwd", "AccumulateGrad of the arm's parameters", acc, read=2 * H * s.d * F32, write=H * s.d * F32)


def add_gates(led, s):
    """attention.cpp attend() and SinkAttentionFunction as written: the gate maths in fp32 ATen ops."""
    R, C, H, m, acc = s.rows, s.C, s.H, s.L * s.A, s.L * (s.A - 1)
    BHT = R * H  # one value per (sequence, head, position)
    g = "gates+arm"
    RC = R * C
    if s.gate in ("normgate", "renorm"):
        led.add(g, "fwd", "gate: reads.to(fp32)", m, read=RC * BF16, write=RC * F32)
        led.add(g, "fwd", "gate: pow(2)", m, read=RC * F32, write=RC * F32)
        led.add(g, "fwd", "gate: sum(-1)", m, read=RC * F32, write=BHT * F32)
        led.add(g, "fwd", "gate: sqrt, / sqrt(d), - tau, * beta", 4 * m, read=BHT * F32, write=BHT * F32)
        led.add(g, "bwd", "gate: * beta, / sqrt(d), sqrt backward (2), tau: neg + sum", 6 * m,
                read=2 * BHT * F32, write=BHT * F32)
        led.add(g, "bwd", "gate: pow backward: self.pow(1) copy, 2 *, grad *", 3 * m,
                read=2 * RC * F32, write=RC * F32)
        led.add(g, "bwd", "gate: reads.to(fp32) backward cast", m, read=RC * F32, write=RC * BF16)
        led.add(g, "bwd", "gate: AccumulateGrad tau", acc, read=2 * H * F32, write=H * F32)
    if s.gate == "projgate":
        led.add(g, "fwd", "gate: reads.to(fp32)", m, read=RC * BF16, write=RC * F32)
        led.add(g, "fwd", "gate: reads * w", m, read=RC * F32, write=RC * F32)
        led.add(g, "fwd", "gate: sum(-1), + b", 2 * m, read=RC * F32, write=BHT * F32)
        led.add(g, "bwd", "gate: db = sum; dreads = g * w", 2 * m, read=BHT * F32, write=RC * F32)
        led.add(g, "bwd", "gate: dw = sum(g * reads): mul, reduce", 2 * m, read=2 * RC * F32, write=RC * F32)
        led.add(g, "bwd", "gate: reads.to(fp32) backward cast", m, read=RC * F32, write=RC * BF16)
        led.add(g, "bwd", "gate: AccumulateGrad w, b", 2 * acc, read=2 * H * s.d * F32, write=H * s.d * F32)
    if s.gate != "none":
        led.add(g, "fwd", "gate: sigmoid" + (" (unused by renorm)" if s.gate == "renorm" else ""), m,
                read=BHT * F32, write=BHT * F32)
    if s.gate in ("normgate", "projgate"):
        led.add(g, "fwd", "gated read: v.to(fp32) (a second cast of v)", m, read=RC * BF16, write=RC * F32)
        led.add(g, "fwd", "gated read: * g", m, read=RC * F32 + BHT * F32, write=RC * F32)
        led.add(g, "fwd", "gated read: .to(bf16)", m, read=RC * F32, write=RC * BF16)
        led.add(g, "bwd", "gated read: .to(bf16) backward cast", m, read=RC * BF16, write=RC * F32)
        led.add(g, "bwd", "gated read: dv = grad * g", m, read=RC * F32 + BHT * F32, write=RC * F32)
        led.add(g, "bwd", "gated read: dg = sum(grad * v): mul, reduce", 2 * m, read=2 * RC * F32, write=RC * F32)
        led.add(g, "bwd", "gated read: v.to(fp32) backward cast", m, read=RC * F32, write=RC * BF16)
        led.add(g, "bwd", "gate: sigmoid backward", m, read=2 * BHT * F32, write=BHT * F32)
        led.add(g, "bwd", "v's two grads summed (input buffer add_)", m, read=2 * RC * BF16, write=RC * BF16)
    if s.gate == "renorm":
        wide = R * H * s.d_attn * BF16
        led.add(g, "fwd", "renorm: logsigmoid", m, read=BHT * F32, write=BHT * F32)
        led.add(g, "fwd", "renorm: full(sqrt d), key_bias.to(bf16)", 2 * m, read=BHT * F32, write=BHT * BF16)
        led.add(g, "fwd", "renorm: cat q and k with the extra column", 2 * m,
                read=RC * BF16, write=R * H * (s.d + 1) * BF16)
        led.add(g, "fwd", "renorm: pad q, k, v to 72: fill", 3 * m, write=wide)
        led.add(g, "fwd", "renorm: pad q, k, v to 72: copy", 3 * m, read=RC * BF16, write=RC * BF16)
        led.add(g, "fwd", "renorm: y[..., :d] -> c_proj input: reshape copy", m, read=RC * BF16, write=RC * BF16)
        led.add(g, "bwd", "renorm: y[..., :d] slice backward: zeros (B, H, T, 72)", m, write=wide)
        led.add(g, "bwd", "renorm: y[..., :d] slice backward: copy", m, read=RC * BF16, write=RC * BF16)
        led.add(g, "bwd", "renorm: pad backward (narrow + clone) q, k, v", 3 * m, read=RC * BF16, write=RC * BF16)
        led.add(g, "bwd", "renorm: key_bias cast, logsigmoid backward", 2 * m, read=2 * BHT * F32, write=BHT * F32)
        led.add(g, "bwd", "renorm: v's two grads summed (input buffer add_)", m, read=2 * RC * BF16, write=RC * BF16)
    if s.phantom:
        if s.zero == "offbyone":
            led.add(g, "fwd", "offbyone: zeros({H}) phantom logits", m, write=H * F32)
        led.add(g, "fwd", "phantom: logaddexp, lse - lse', exp", 3 * m, read=2 * BHT * F32, write=BHT * F32)
        led.add(g, "fwd", "phantom: out.to(fp32)", m, read=RC * BF16, write=RC * F32)
        led.add(g, "fwd", "phantom: out * exp(lse - lse')", m, read=RC * F32 + BHT * F32, write=RC * F32)
        led.add(g, "fwd", "phantom: .to(bf16)", m, read=RC * F32, write=RC * BF16)
        led.add(g, "fwd", "phantom: lse.clone, index_put_", 2 * m, read=BHT * F32, write=BHT * F32)
        led.add(g, "bwd", "phantom: grad_out.contiguous() copy", m, read=RC * BF16, write=RC * BF16)
        led.add(g, "bwd", "phantom: grad_out.to(fp32), out_s.to(fp32)", 2 * m, read=RC * BF16, write=RC * F32)
        led.add(g, "bwd", "phantom: (dO * out_s)", m, read=2 * RC * F32, write=RC * F32)
        led.add(g, "bwd", "phantom: .sum(-1)", m, read=RC * F32, write=BHT * F32)
        led.add(g, "bwd", "phantom: b - lse', exp, *, sum, neg (db)", 5 * m, read=2 * BHT * F32, write=BHT * F32)
        if s.zero == "sinklogit":
            led.add(g, "bwd", "sink_logit AccumulateGrad", acc, read=2 * H * F32, write=H * F32)


def add_embedding(led, s, code):
    N, T, C, V, A, R = s.loss_rows, s.T, s.C, s.V, s.A, s.rows
    e = "embedding"
    led.add(e, "fwd", "arange(positions)", A, write=T * I64)
    led.add(e, "fwd", "wte lookup (index_select)", A, read=N * I64 + N * C * F32, write=N * C * F32)
    led.add(e, "fwd", "wpe lookup (index_select)", A, read=T * I64 + T * C * F32, write=T * C * F32)
    led.add(e, "fwd", "wte + wpe", A, read=N * C * F32 + T * C * F32, write=N * C * F32)
    led.add(e, "bwd", "wpe grad: sum over the batch", A, read=N * C * F32, write=T * C * F32)
    led.add(e, "bwd", "wpe embedding_dense_backward: zeros + scatter", 2 * A, read=T * C * F32, write=T * C * F32)
    led.add(e, "bwd", "wpe AccumulateGrad +=", A - 1, read=2 * T * C * F32, write=T * C * F32)
    if code == "today":
        # sparse=true: the lookup gradient is a COO tensor (no kernel); the input buffer adds it to
        # the head's dense (V, C) gradient out of place: a full copy, then index_add_ (atomics).
        led.add(e, "bwd", "wte: dense + sparse grad: copy of the (V, C) dense grad", A,
                read=V * C * F32, write=V * C * F32)
        led.add(e, "bwd", "wte: dense + sparse grad: index_add_ (atomics)", A,
                read=2 * N * C * F32 + N * I64, write=N * C * F32)
    else:
        led.add(e, "bwd", "wte embedding_dense_backward: zeros (V, C)", A, write=V * C * F32)
        led.add(e, "bwd", "wte embedding_dense_backward: sort + segment sums (about 10)", 10 * A,
                read=2 * N * C * F32 / 10, write=N * C * F32 / 10)
        led.add(e, "bwd", "wte: dense + dense grad (input buffer add_)", A, read=2 * V * C * F32, write=V * C * F32)
    if s.zero == "sinktoken" and "fused-gates" in s.changes:  # the sink row written in place
        led.add("gates+arm", "bwd", "sink token: its grad (sum over the batch)", A, read=s.B * C * F32, write=C * F32)
    elif s.zero == "sinktoken":
        g = "gates+arm"
        led.add(g, "fwd", "sink token: cat in front of every sequence", A, read=R * C * F32, write=R * C * F32)
        led.add(g, "fwd", "sink token: narrow -> ln_f needs a contiguous copy", A,
                read=N * C * F32, write=N * C * F32)
        led.add(g, "bwd", "sink token: ln_f backward's contiguous copy", A, read=N * C * F32, write=N * C * F32)
        led.add(g, "bwd", "sink token: narrow backward: zeros + copy", 2 * A, read=N * C * F32, write=R * C * F32)
        led.add(g, "bwd", "sink token: wte grad reshape of the narrowed view (copy)", A,
                read=N * C * F32, write=N * C * F32)
        led.add(g, "bwd", "sink token: its grad (sum over the batch)", A, read=s.B * C * F32, write=C * F32)
        led.add(g, "bwd", "sink token AccumulateGrad", A - 1, read=2 * C * F32, write=C * F32)


def add_loss(led, s, code):
    """LinearCrossEntropy::forward on CUDA under autocast. hidden is ln_f's output, float32
    (autocast runs layer_norm in fp32), so every chunk takes the portable, non-CPU branches."""
    N, C, V, A = s.loss_rows, s.C, s.V, s.A
    h = "head+loss"
    add_layer_norm(led, h, "ln_f", s, N, A, A - 1)
    if "fused-loss" in s.changes:  # what-if: one fused linear + cross-entropy, logits never in HBM
        grad_rmw = (F32 + (A - 1) * 2 * F32) / A
        led.add(h, "fwd", "fused linear + cross-entropy: logits, softmax, dH", A, 2 * 2 * N * C * V,
                N * C * F32 + N * I64 + V * C * BF16, N * C * F32, "bf16")
        led.add(h, "fwd", "fused linear + cross-entropy: dW (fp32 accumulate)", A, 2 * N * C * V,
                N * C * F32 + V * C * BF16, V * C * grad_rmw, "bf16")
        led.add(h, "fwd", "loss: weight cast fp32->bf16 (once a micro-batch)", A,
                read=V * C * F32, write=V * C * BF16)
        led.add(h, "fwd", "loss: loss / weight, detach().to(double), ones_like", 4 * A, read=I64, write=I64)
        led.add(h, "fwd", "loss_sum += value", A - 1, read=2 * I64, write=I64)
        return
    led.add(h, "fwd", "loss: zeros total", A, write=I64)
    for n, count in s.chunks():
        c = A * count
        nV = n * V
        led.add(h, "fwd", "chunk: h slice cast fp32->bf16 (non-leaf, not cached)", c,
                read=n * C * F32, write=n * C * BF16)
        if "cast-once" not in s.changes:  # what-if: the logits GEMM reads the micro-batch's cached cast
            led.add(h, "fwd", "chunk: weight.t() cast fp32->bf16 (a view: never cached)", c,
                    read=V * C * F32, write=V * C * BF16)
        led.add(h, "fwd", f"chunk: logits GEMM (rows x {C} x {V})", c,
                2 * n * C * V, n * C * BF16 + V * C * BF16, nV * BF16, "bf16")
        led.add(h, "fwd", "chunk: logits .to(fp32)", c, read=nV * BF16, write=nV * F32)
        led.add(h, "fwd", "chunk: gather target logits", c, read=n * (I64 + F32), write=n * F32)
        if code == "today":
            led.add(h, "fwd", "chunk: amax", c, read=nV * F32, write=n * F32)
            led.add(h, "fwd", "chunk: sub_(rowmax)", c, read=nV * F32, write=nV * F32)
            led.add(h, "fwd", "chunk: exp_", c, read=nV * F32, write=nV * F32)
            led.add(h, "fwd", "chunk: sum(1)", c, read=nV * F32, write=n * F32)
            led.add(h, "fwd", "chunk: loss terms: log, +, -, sum, to(double), +=", 6 * c,
                    read=2 * n * F32, write=n * F32)
            led.add(h, "fwd", "chunk: row scale: reciprocal, *", 2 * c, read=n * F32, write=n * F32)
            led.add(h, "fwd", "chunk: E cast fp32->bf16 for E W", c, read=nV * F32, write=nV * BF16)
        else:  # 236c7a4: logsumexp, then the softmax rebuilt in place, then two autocast matmuls
            led.add(h, "fwd", "chunk: logsumexp: amax", c, read=nV * F32, write=n * F32)
            led.add(h, "fwd", "chunk: logsumexp: x - max", c, read=nV * F32, write=nV * F32)
            led.add(h, "fwd", "chunk: logsumexp: exp_", c, read=nV * F32, write=nV * F32)
            led.add(h, "fwd", "chunk: logsumexp: sum", c, read=nV * F32, write=n * F32)
            led.add(h, "fwd", "chunk: logsumexp: abs, ==, masked_fill_, log_, add_", 5 * c,
                    read=n * F32, write=n * F32)
            led.add(h, "fwd", "chunk: loss terms: -, sum, to(double), +=", 4 * c, read=2 * n * F32, write=n * F32)
            led.add(h, "fwd", "chunk: probs: sub_(lse)", c, read=nV * F32, write=nV * F32)
            led.add(h, "fwd", "chunk: probs: exp_", c, read=nV * F32, write=nV * F32)
            led.add(h, "fwd", "chunk: probs: full(-1), scatter_add_", 2 * c, read=n * F32, write=n * F32)
            led.add(h, "fwd", "chunk: probs: mul_(1/N)", c, read=nV * F32, write=nV * F32)
            led.add(h, "fwd", "chunk: P cast fp32->bf16 for P W", c, read=nV * F32, write=nV * BF16)
        led.add(h, "fwd", f"chunk: dH GEMM (rows x {V} x {C})", c,
                2 * n * C * V, nV * BF16 + V * C * BF16, n * C * BF16, "bf16")
        if code == "today":
            led.add(h, "fwd", "chunk: E W .to(fp32)", c, read=n * C * BF16, write=n * C * F32)
            led.add(h, "fwd", "chunk: dH: * scale, index_select W[t], * 1/N, -, index_put_", 5 * c,
                    read=2 * n * C * F32, write=n * C * F32)
            led.add(h, "fwd", "chunk: h * row scale", c, read=n * C * F32, write=n * C * F32)
            if "dw-bf16" in s.changes:  # what-if: bf16 operands, fp32 out (addmm_out with out_dtype)
                led.add(h, "fwd", "chunk: h * row scale cast fp32->bf16", c, read=n * C * F32, write=n * C * BF16)
                led.add(h, "fwd", f"chunk: dW GEMM bf16 -> fp32 ({V} x rows x {C}), beta = 1", c, 2 * n * C * V,
                        nV * BF16 + n * C * BF16 + V * C * F32, V * C * F32, "bf16")
            else:  # mm_out / addmm_ are not autocast ops: with fp32 operands this is an fp32 GEMM.
                led.add(h, "fwd", f"chunk: dW GEMM in fp32 ({V} x rows x {C}), beta = 1", c, 2 * n * C * V,
                        nV * F32 + n * C * F32 + V * C * F32, V * C * F32, "fp32")
            led.add(h, "fwd", "chunk: dW index_add_ of -h/N (atomics)", c,
                    read=2 * n * C * F32 + n * I64, write=n * C * F32)
        else:
            led.add(h, "fwd", "chunk: dH index_put_ (bf16 -> fp32 copy)", c, read=n * C * BF16, write=n * C * F32)
            led.add(h, "fwd", "chunk: P^T cast fp32->bf16 (a view: not cached)", c, read=nV * F32, write=nV * BF16)
            led.add(h, "fwd", "chunk: h slice cast fp32->bf16 again", c, read=n * C * F32, write=n * C * BF16)
            led.add(h, "fwd", f"chunk: dW GEMM bf16 ({V} x rows x {C})", c,
                    2 * n * C * V, nV * BF16 + n * C * BF16, V * C * BF16, "bf16")
            led.add(h, "fwd", "chunk: dW .to(fp32)", c, read=V * C * BF16, write=V * C * F32)
            led.add(h, "fwd", "chunk: grad_weight.add_", c, read=2 * V * C * F32, write=V * C * F32)
    led.add(h, "fwd", "loss: weight cast fp32->bf16 (cached after the first chunk)", A,
            read=V * C * F32, write=V * C * BF16)
    if code != "today":
        led.add(h, "fwd", "loss: zeros grad_weight (V, C)", A, write=V * C * F32)
    led.add(h, "fwd", "loss: total * 1/N, to(fp32); loss / weight; ones_like; detach().to(double) / weight", 6 * A,
            read=I64, write=I64)
    led.add(h, "fwd", "loss_sum += value", A - 1, read=2 * I64, write=I64)
    led.add(h, "bwd", "loss backward: div; grad_hidden * scale", 2 * A, read=N * C * F32, write=N * C * F32)
    led.add(h, "bwd", "loss backward: grad_weight * scale (V, C)", A, read=V * C * F32, write=V * C * F32)
    led.add(h, "bwd", "wte AccumulateGrad += (V, C)", A - 1, read=2 * V * C * F32, write=V * C * F32)


def mta_launches(sizes, max_tensors=36, max_blocks=320, chunk=65536):
    """multi_tensor_apply_for_fused_optimizer<4>'s kernel launches for tensors of these sizes."""
    launches = blocks = tensors = 0
    for numel in sizes:
        tensors += 1
        chunks = -(-numel // chunk)
        for index in range(chunks):
            blocks += 1
            if (tensors == max_tensors and index == chunks - 1) or blocks == max_blocks:
                launches += 1
                blocks = 0
                tensors = 0 if index == chunks - 1 else 1
    return launches + (1 if blocks else 0)


def add_optimizer(led, s, code):
    o = "optimizer"
    params = s.parameters()
    numel = sum(n for _, n, _ in params)
    count = len(params)
    led.add(o, "step", "grad norm per tensor", count, read=numel * F32 / count, write=F32)
    led.add(o, "step", "stack the norms (cat, 64 inputs a launch)", -(-count // 64),
            read=count * F32, write=count * F32)
    led.add(o, "step", "total norm, + 1e-6, / max_norm or max_norm /, clamp", 4, read=count * F32, write=F32)
    if code == "today":
        led.add(o, "step", "torch::full(step) per tensor (the kernel reads steps on the device)", count, write=F32)
        decay = [n for _, n, d in params if d]
        no_decay = [n for _, n, d in params if not d]
        launches = mta_launches(decay) + mta_launches(no_decay)
        # p, g, m, v read; p, m, v written, and g too (a grad_scale makes the kernel store it back).
        led.add(o, "step", "_fused_adamw_ (multi_tensor_apply launches)", launches,
                read=numel * 4 * F32 / launches, write=numel * 4 * F32 / launches)
    else:
        led.add(o, "step", "clip: grad.mul_(coef) per tensor", count,
                read=numel * F32 / count, write=numel * F32 / count)
        decayed = sum(1 for _, _, d in params if d)
        decayed_numel = sum(n for _, n, d in params if d)
        led.add(o, "step", "AdamW: p.mul_(1 - lr wd) (decayed tensors)", decayed,
                read=decayed_numel * F32 / decayed, write=decayed_numel * F32 / decayed)
        # m.mul_, m.add_(g), v.mul_, v.addcmul_(g, g), sqrt, /, add_(eps), p.addcdiv_(m, denom)
        per = dict(mul_m=(1, 1), add_m=(2, 1), mul_v=(1, 1), addcmul=(2, 1), sqrt=(1, 1), div=(1, 1),
                   add_eps=(1, 1), addcdiv=(3, 1))  # tensors read, written
        for name, (reads, writes) in per.items():
            led.add(o, "step", f"AdamW: {name} per tensor", count,
                    read=reads * numel * F32 / count, write=writes * numel * F32 / count)


def as_written(s, code):
    led = Ledger()
    add_embedding(led, s, code)
    add_block(led, s)
    add_loss(led, s, code)
    add_optimizer(led, s, code)
    return led.rows


def host_syncs(s, code):
    """Blocking host calls per step, by reading train.cpp (and clip_grad.h at 236c7a4)."""
    rows = [("batch inputs and targets .to(device): pageable copies (the first drains the stream)", 2 * s.A),
            ("loss_sum.item<double>() once a step", 1),
            ("torch::cuda::synchronize() after the step", 1)]
    if code != "today":
        rows.append(("clip_grad_norm_: total_norm.item()", 1))
    return rows


# --------------------------------------------------------------------------------------------
# Tables

def kernel_time(row, rates):
    flops_time = row["flops"] / rates[row["rate"]] if row["flops"] else 0.0
    return max(flops_time, row["bytes"] / rates["hbm"], rates["launch"])


def summarise(s, code, rates):
    ideal = ideal_costs(s)
    kernels = as_written(s, code)
    out = {}
    for phase in PHASES:
        flops, mem = ideal[phase]
        mine = [k for k in kernels if k["phase"] == phase]
        out[phase] = dict(
            flops=flops, bytes=mem, bound=max(flops / rates["bf16"], mem / rates["hbm"]),
            launches=sum(k["calls"] for k in mine),
            written_flops=sum(k["calls"] * k["flops"] for k in mine),
            written_bytes=sum(k["calls"] * k["bytes"] for k in mine),
            written_time=sum(k["calls"] * kernel_time(k, rates) for k in mine))
    return out, kernels


def fmt(x, digits=1):
    return f"{x:,.{digits}f}"


def phase_table(s, code, rates):
    out, _ = summarise(s, code, rates)
    lines = ["| phase | useful GFLOP | min GB | lower bound ms | kernels | executed GFLOP | bytes GB | as-written bound ms |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    total = dict.fromkeys(["flops", "bytes", "bound", "launches", "written_flops", "written_bytes", "written_time"], 0.0)
    for phase in PHASES:
        p = out[phase]
        for key in total:
            total[key] += p[key]
        lines.append(f"| {phase} | {fmt(p['flops'] / 1e9, 0)} | {fmt(p['bytes'] / 1e9, 2)} | {fmt(p['bound'] * 1e3, 2)} | "
                     f"{p['launches']:,} | {fmt(p['written_flops'] / 1e9, 0)} | {fmt(p['written_bytes'] / 1e9, 2)} | "
                     f"{fmt(p['written_time'] * 1e3, 2)} |")
    cells = [fmt(total["flops"] / 1e9, 0), fmt(total["bytes"] / 1e9, 2), fmt(total["bound"] * 1e3, 2),
             f"{int(total['launches']):,}", fmt(total["written_flops"] / 1e9, 0), fmt(total["written_bytes"] / 1e9, 2),
             fmt(total["written_time"] * 1e3, 2)]
    lines.append("| **step** | " + " | ".join(f"**{cell}**" for cell in cells) + " |")
    return lines, total


def totals_table(s, total, rates, measured):
    step_roofline = max(total["flops"] / rates["bf16"], total["bytes"] / rates["hbm"])
    rows = [("whole-step roofline: max(useful FLOPs / bf16 rate, min bytes / HBM rate)", step_roofline),
            ("sum of the phase lower bounds (phases one after another)", total["bound"]),
            ("the counted kernels at their rooflines (as-written bound)", total["written_time"])]
    lines = ["| figure | ms a step | tokens/s |", "| --- | ---: | ---: |"]
    for name, seconds in rows:
        lines.append(f"| {name} | {fmt(seconds * 1e3, 1)} | {fmt(s.tokens / seconds, 0)} |")
    if measured:
        lines.append(f"| measured (given with --measured) | {fmt(s.tokens / measured * 1e3, 1)} | {fmt(measured, 0)} |")
    return lines


def sanity_table(s):
    """The usual count, 6 N + 12 L T C a token (N = 12 L C^2 + V C; attention counted whole), against ours."""
    ideal = ideal_costs(s)
    gemm = ideal["attn proj"][0] + ideal["MLP"][0] + ideal["head+loss"][0]
    attention = ideal["attn core"][0]
    six_n = 6 * (12 * s.L * s.C ** 2 + s.V * s.C) * s.tokens
    whole = 12 * s.L * s.T * s.C * s.tokens
    causal = whole / 2 * (s.Tb + 1) / s.T * s.Tb / s.T
    rows = [("weights (GEMMs)", "6 (12 L C^2 + V C) tokens", six_n, gemm, ""),
            ("attention, whole matrix", "12 L T C tokens", whole, 2 * attention, " (2 x causal)"),
            ("attention, causal pairs", "12 L T C tokens x Tb (Tb + 1) / (2 T^2)", causal, attention, "")]
    lines = ["| quantity | formula | formula GFLOP | this script GFLOP | ratio |", "| --- | --- | ---: | ---: | ---: |"]
    for name, formula, theirs, ours, note in rows:
        lines.append(f"| {name} | {formula} | {fmt(theirs / 1e9, 0)} | {fmt(ours / 1e9, 0)}{note} | {ours / theirs:.4f} |")
    lines.append(f"| per token, usual count | 6 N + 12 L T C | {fmt((six_n + whole) / s.tokens / 1e6, 1)} M | "
                 f"{fmt((gemm + attention) / s.tokens / 1e6, 1)} M (causal) | |")
    return lines


def kernel_table(s, code, rates, top):
    _, kernels = summarise(s, code, rates)
    groups = {}
    for k in kernels:  # the loss's last, shorter chunk joins the others
        key = (k["phase"], k["where"], k["what"])
        g = groups.setdefault(key, dict(k, calls=0, bytes_total=0.0, flops_total=0.0, time=0.0))
        g["calls"] += k["calls"]
        g["bytes_total"] += k["calls"] * k["bytes"]
        g["flops_total"] += k["calls"] * k["flops"]
        g["time"] += k["calls"] * kernel_time(k, rates)
    ranked = sorted(groups.values(), key=lambda g: -g["time"])[:top]
    lines = ["| phase | pass | kernel | launches a step | GB a step | GFLOP a step | bound ms |",
             "| --- | --- | --- | ---: | ---: | ---: | ---: |"]
    for k in ranked:
        lines.append(f"| {k['phase']} | {k['where']} | {k['what']} | {k['calls']:,} | {fmt(k['bytes_total'] / 1e9, 2)} | "
                     f"{fmt(k['flops_total'] / 1e9, 0)} | {fmt(k['time'] * 1e3, 2)} |")
    return lines


def pass_table(s, code):
    kernels = as_written(s, code)
    per = {}
    for k in kernels:
        per[k["where"]] = per.get(k["where"], 0) + k["calls"]
    chunks = sum(count for _, count in s.chunks())
    loss = sum(k["calls"] for k in kernels if k["what"].startswith("chunk:"))
    lines = ["| launches | a step |", "| --- | ---: |",
             f"| forward (all micro-batches; includes the loss, which computes its gradients there) | {per.get('fwd', 0):,} |",
             f"| backward (all micro-batches) | {per.get('bwd', 0):,} |",
             f"| optimizer | {per.get('step', 0):,} |",
             f"| of which the loss's chunks: {chunks} of at most {s.chunk} rows a micro-batch, {s.A} micro-batch(es) | {loss:,} |"]
    if "fused-loss" in s.changes:
        lines[-1] = "| of which the loss's chunks: none (--what-if fused-loss) | 0 |"
    for what, count in host_syncs(s, code):
        lines.append(f"| host sync: {what} | {count} |")
    return lines


def arms_table(tier, args, rates, arms):
    base = None
    lines = ["| arm | useful GFLOP | min GB | lower bound ms | kernels | as-written bound ms | as-written vs baseline |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for arm in arms:
        s = Shape(tier, arm, args.micro_batch, args.accumulation, args.chunk_rows, args.changes)
        out, _ = summarise(s, args.code, rates)
        t = {key: sum(out[p][key] for p in PHASES) for key in ("flops", "bytes", "bound", "launches", "written_time")}
        base = base or t
        lines.append(f"| {arm} | {fmt(t['flops'] / 1e9, 0)} | {fmt(t['bytes'] / 1e9, 2)} | {fmt(t['bound'] * 1e3, 2)} | "
                     f"{int(t['launches']):,} | {fmt(t['written_time'] * 1e3, 1)} | "
                     f"{100 * (t['written_time'] / base['written_time'] - 1):+.1f}% |")
    return lines


def what_ifs(args):
    return (" with " + ", ".join(args.changes)) if args.changes else ""


def main():
    tiers = read_tiers()
    parser = argparse.ArgumentParser(
        description="Computed FLOPs, bytes and kernel launches of one sg-train step on a CUDA GPU.")
    parser.add_argument("--tier", default="124M", choices=sorted(tiers), help="preset of lib/run/config.cpp (default 124M)")
    parser.add_argument("--arm", default="baseline", help="one of the nine arms, or ZERO+FILTER (default baseline)")
    parser.add_argument("--all-arms", action="store_true", help="one summary row per arm instead of one arm's tables")
    parser.add_argument("--micro-batch", type=int, default=0, help="sequences a forward pass (default: the tier's)")
    parser.add_argument("--accumulation", type=int, default=0, help="micro-batches a step (default: the tier's)")
    parser.add_argument("--chunk-rows", type=int, default=0, help="loss chunk rows (default: the code's max(64, 2^24 / V))")
    parser.add_argument("--code", default="today", choices=["today", "236c7a4"], help="which code's kernels to count")
    parser.add_argument("--bf16-tflops", type=float, default=790.0, help="dense bf16 rate (default 790, measured on an H200)")
    parser.add_argument("--fp32-tflops", type=float, default=67.0, help="fp32 GEMM rate without TF32 (default 67, H200 datasheet)")
    parser.add_argument("--hbm-tbs", type=float, default=4.0, help="attainable HBM bandwidth, TB/s (default 4.0)")
    parser.add_argument("--launch-us", type=float, default=2.0, help="least time a kernel takes, microseconds (default 2, assumed)")
    parser.add_argument("--measured", type=float, default=0.0, help="a measured tokens/s to set beside the bounds")
    parser.add_argument("--kernels", type=int, default=0, help="also list the N costliest kernel groups of the as-written step")
    parser.add_argument("--what-if", default="", help="comma-separated changes to today's code: " + "; ".join(
        f"{name}: {meaning}" for name, meaning in WHAT_IF.items()))
    args = parser.parse_args()
    args.changes = [c for c in args.what_if.split(",") if c]
    for change in args.changes:
        if change not in WHAT_IF:
            parser.error(f"unknown --what-if '{change}'; choose from {', '.join(WHAT_IF)}")
    if args.changes and args.code != "today":
        parser.error("--what-if changes today's code; leave --code at today")
    rates = dict(bf16=args.bf16_tflops * 1e12, fp32=args.fp32_tflops * 1e12, mem=float("inf"),
                 hbm=args.hbm_tbs * 1e12, launch=args.launch_us * 1e-6)
    tier = tiers[args.tier]
    arm = "all arms" if args.all_arms else args.arm
    s = Shape(tier, "baseline" if args.all_arms else args.arm, args.micro_batch, args.accumulation, args.chunk_rows,
              args.changes)
    loss = "a fused loss" if "fused-loss" in args.changes else f"loss chunks of {s.chunk} rows"
    print(f"Tier {args.tier}, {arm}: {s.L} layers, {s.H} heads of {s.d}, width {s.C}, {s.Tb} positions a sequence in "
          f"the blocks, vocabulary {s.V}; {s.B} x {s.A} sequences a step ({s.tokens:,} tokens); code {args.code}"
          f"{what_ifs(args)}; {loss}; rates bf16 {args.bf16_tflops:g} TFLOP/s, fp32 "
          f"{args.fp32_tflops:g} TFLOP/s, HBM {args.hbm_tbs:g} TB/s, launch floor {args.launch_us:g} us. "
          "Computed, not measured.")
    print("Phases: " + "; ".join(f"{phase}: {note}" for phase, note in PHASE_NOTES.items()) + ".\n")
    if args.all_arms:
        print("\n".join(arms_table(tier, args, rates, ARMS)))
        return
    lines, total = phase_table(s, args.code, rates)
    print("\n".join(lines))
    print()
    print("\n".join(totals_table(s, total, rates, args.measured)))
    print()
    print("\n".join(pass_table(s, args.code)))
    print()
    print("\n".join(sanity_table(s)))
    if args.kernels:
        print()
        print("\n".join(kernel_table(s, args.code, rates, args.kernels)))


if __name__ == "__main__":
    try:
        main()
    except BrokenPipeError:  # the reader (head, a pager) stopped reading: not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
