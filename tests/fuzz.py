#!/usr/bin/env python3
"""fuzz.py — seeded fuzzing of every sinkgate reader: a corrupted input gets a clear error, never a crash.

Makes small valid inputs of every kind the tools read (with the tools themselves and, for the
Hugging Face folder, transformers' save_pretrained), mutates them by seeded byte changes, bit flips,
truncations, insertions, deletions, splices and text edits, and runs each reader of that kind on each
mutation under a memory cap (RLIMIT_AS) and a time limit. A case fails on

  - a signal (SIGSEGV, SIGABRT, SIGFPE, …),
  - a run over the time limit (a hang, or an allocation that takes the machine),
  - exit 1 (an internal error: a bug, an uncaught library failure, an allocation over the cap),
  - any exit code the reader does not document for bad input (0 and 3 for every reader; 5, a
    diverged run, for a resumed training run),
  - exit 3 whose message does not name the input,
  - an input that a reader changed (readers never write their inputs; sg-train --resume aside).

Then structural cases (tests/h5_hostile.py): HDF5 inputs rewritten with h5py to use what sinkgate's
writers never write — external and soft links, raw data in another file, a FIFO or /dev/zero,
virtual datasets, sparse extents and holes, other filters, committed types, compound attributes,
rank-9 datasets — and lost writes (a whole stored chunk zeroed with its Fletcher32). Each must be
refused, exit 3 naming the file: besides the failures above, exit 0 is a silent accept. A zeroed
chunk must be refused by at least one reader of its kind (the others may not read that dataset).

Usage:
  fuzz.py BIN_DIR WORK_DIR [--cases N] [--structural N] [--seed S] [--kinds a,b] [--jobs J] [--timeout SEC]

  BIN_DIR   the folder of the sg- executables (build/bin)
  WORK_DIR  scratch folder (wiped): seeds/, cases/, failures/ (each failing input, with its command)

The number of cases is N (default 100, under a minute on 2 cores), or $SINKGATE_FUZZ_CASES (a
release campaign: thousands; the old name SG_FUZZ_CASES still works, with a warning); structural
cases: --structural N (default 30), or $SINKGATE_FUZZ_STRUCTURAL. Each case is
reproducible from (--seed, case number): the summary line of a failure says both. Exit 0 when every case passed, 1 otherwise.
"""
import argparse
import concurrent.futures
import hashlib
import json
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tokenizer_reference import bytes_to_unicode  # noqa: E402  (GPT-2's byte alphabet)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pipelines"))
from default_corpus import test_corpus  # noqa: E402

# Documented exit codes (lib/base/error.h): 0 ok, 3 bad input, 5 diverged.
OK, USAGE, INPUT, DIVERGED = 0, 2, 3, 5

CORE_TOOLS = {"sg-bpe", "sg-pairdiff", "sg-tabulate", "sg-tokenize"}  # no LibTorch: a smaller cap
MEMORY_CORE = 2 << 30
MEMORY_TORCH = 6 << 30  # the CUDA wheel maps about 3 GB of shared objects before main()


def run(argv, cwd=None, check=True, env=None):
    result = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if check and result.returncode != 0:
        sys.exit(f"fuzz.py: making the seed inputs failed: {' '.join(argv)}\n{result.stderr.decode(errors='replace')}")
    return result


# --- the seed inputs ----------------------------------------------------------------------------

def small_vocabulary(text, merges_wanted=120):
    """A byte-level BPE vocabulary learned greedily on `text`: (vocab dict, merges list)."""
    alphabet = bytes_to_unicode()
    words = {}
    for word in text.replace("\n", " ").split(" "):
        if word:
            symbols = tuple(alphabet[b] for b in (" " + word).encode())
            words[symbols] = words.get(symbols, 0) + 1
    vocab = {alphabet[b]: i for i, b in enumerate(sorted(alphabet))}
    merges = []
    for _ in range(merges_wanted):
        pairs = {}
        for symbols, count in words.items():
            for pair in zip(symbols, symbols[1:]):
                pairs[pair] = pairs.get(pair, 0) + count
        if not pairs:
            break
        best = max(pairs, key=lambda p: (pairs[p], p))
        merges.append(best)
        vocab[best[0] + best[1]] = len(vocab)
        merged = {}
        for symbols, count in words.items():
            out, i = [], 0
            while i < len(symbols):
                if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == best:
                    out.append(symbols[i] + symbols[i + 1])
                    i += 2
                else:
                    out.append(symbols[i])
                    i += 1
            merged[tuple(out)] = merged.get(tuple(out), 0) + count
        words = merged
    vocab["<|endoftext|>"] = len(vocab)
    return vocab, merges


def make_seeds(bin_dir, seeds, python_ok):
    """Writes the seed inputs into `seeds`; returns {kind: path} (folders for the folder kinds)."""
    os.makedirs(seeds)
    tool = lambda name: os.path.join(bin_dir, name)
    corpus_dir = test_corpus()
    text = ""
    for name in sorted(os.listdir(corpus_dir))[:4]:
        with open(os.path.join(corpus_dir, name), encoding="utf-8") as f:
            text += f.read()
    text = text[:40000]
    paths = {}
    paths["text"] = os.path.join(seeds, "corpus.txt")
    with open(paths["text"], "w", encoding="utf-8") as f:
        f.write(text)
    paths["jsonl"] = os.path.join(seeds, "corpus.jsonl")
    with open(paths["jsonl"], "w", encoding="utf-8") as f:
        for i, part in enumerate(text.split("\n\n")[:40]):
            f.write(json.dumps({"id": i, "text": part}) + "\n")

    vocab, merges = small_vocabulary(text)
    paths["vocab.json"] = os.path.join(seeds, "vocab.json")
    with open(paths["vocab.json"], "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    paths["vocab"] = vocab
    paths["merges"] = os.path.join(seeds, "merges.txt")
    with open(paths["merges"], "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges))
    paths["tokenizer.json"] = os.path.join(seeds, "tokenizer.json")
    with open(paths["tokenizer.json"], "w", encoding="utf-8") as f:
        json.dump({"version": "1.0",
                   "added_tokens": [{"id": vocab["<|endoftext|>"], "content": "<|endoftext|>", "special": True}],
                   "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False},
                   "model": {"type": "BPE", "vocab": vocab, "merges": [f"{a} {b}" for a, b in merges]}},
                  f, ensure_ascii=False)

    paths["tokens"] = os.path.join(seeds, "tokens.h5")
    run([tool("sg-tokenize"), paths["text"], "--vocab", paths["vocab.json"], "--val-tokens", "1500",
         "-o", paths["tokens"], "--log-level", "quiet"])
    tiny = ["--tier", "tiny", "--set", f"vocab_size={len(vocab)}", "--set", "n_layer=1", "--set", "n_embd=16", "--set", "n_head=2", "--set", "block_size=16",
            "--set", "micro_batch=2", "--set", "eval_batches=1", "--set", "final_eval_batches=2", "--set", "eval_interval=3",
            "--set", "warmup=1",
            "--threads", "1", "--log-level", "quiet"]
    paths["run"] = os.path.join(seeds, "run.h5")
    # Unfinished (step 3 of 6), so that --resume trains on.
    run([tool("sg-train"), "--tokens", paths["tokens"], "--arm", "combo2", "--set", "iterations=6",
         "--set", "checkpoint_interval=3", "--stop-after", "3", "-o", paths["run"]] + tiny)
    runs = []
    for arm in ("baseline", "normgate"):
        for seed in ("0", "1"):
            runs.append(os.path.join(seeds, f"{arm}-{seed}.h5"))
            run([tool("sg-train"), "--tokens", paths["tokens"], "--arm", arm, "--seed", seed, "--set", "iterations=2",
                 "-o", runs[-1]] + tiny)
    paths["result"] = os.path.join(seeds, "eval.h5")
    run([tool("sg-eval"), "--tokens", paths["tokens"], "--threads", "1", "--log-level", "quiet", "-o", paths["result"]] + runs)
    paths["pairdiff"] = os.path.join(seeds, "pairdiff.h5")
    run([tool("sg-pairdiff"), paths["result"], "--log-level", "quiet", "-o", paths["pairdiff"]])
    paths["csv"] = os.path.join(seeds, "eval.csv")
    with open(paths["csv"], "wb") as f:
        f.write(run([tool("sg-tabulate"), paths["result"], "--format", "csv"]).stdout)

    paths["lambada"] = os.path.join(seeds, "lambada.jsonl")
    with open(paths["lambada"], "w", encoding="utf-8") as f:
        for part in text.split("\n\n")[:12]:
            f.write(json.dumps({"text": " ".join(part.split()[:40]) or "a b"}) + "\n")
    paths["hellaswag"] = os.path.join(seeds, "hellaswag.jsonl")
    with open(paths["hellaswag"], "w", encoding="utf-8") as f:
        for i in range(6):
            f.write(json.dumps({"activity_label": "Python", "ctx_a": "The tutorial says", "ctx_b": "that lists",
                                "ctx": "The tutorial says that lists", "endings": ["are mutable.", "are [title] fish.",
                                                                                   "sing.", "end."],
                                "label": str(i % 4)}) + "\n")
    paths["examples"] = os.path.join(seeds, "examples.h5")
    run([tool("sg-eval"), "--task", "lambada", "--lambada", paths["lambada"], "--vocab", paths["vocab.json"],
         "--threads", "1", "--log-level", "quiet", "--examples", paths["examples"], "-o", os.path.join(seeds, "zs.h5"),
         runs[0]])

    if python_ok:
        folder = os.path.join(seeds, "hf-gpt2")
        from transformers import GPT2Config, GPT2LMHeadModel
        import torch
        torch.manual_seed(0)
        model = GPT2LMHeadModel(GPT2Config(vocab_size=len(vocab), n_positions=64, n_embd=16, n_layer=1, n_head=2))
        model.save_pretrained(folder)
        shutil.copy(paths["vocab.json"], os.path.join(folder, "vocab.json"))
        shutil.copy(paths["merges"], os.path.join(folder, "merges.txt"))
        paths["hf"] = folder
    return paths


# --- readers ------------------------------------------------------------------------------------

def readers(bin_dir, seeds, out):
    """{kind: [(name, argv with {F} for the case file or {D} for the case folder, allowed codes)]}."""
    t = lambda name: os.path.join(bin_dir, name)
    q = ["--log-level", "quiet"]
    torch = ["--threads", "1"] + q
    o = lambda name: ["-o", os.path.join(out, name), "--force"]
    tokens, run_file, corpus = seeds["tokens"], seeds["run"], seeds["text"]
    small = os.path.join(seeds_dir(seeds), "baseline-0.h5")
    table = [
        ("sg-info", [t("sg-info"), "{F}"], {OK, INPUT}),
        ("sg-tabulate", [t("sg-tabulate"), "{F}"] + q, {OK, INPUT}),
        # Exit 2 where an option names a column: a mutation can rename the column.
        ("sg-pairdiff", [t("sg-pairdiff"), "{F}"] + q + o("pairdiff.h5"), {OK, USAGE, INPUT}),
        ("sg-tabulate md pivot", [t("sg-tabulate"), "{F}", "--rows", "arm", "--cols", "seed", "--cell", "val_loss"] + q,
         {OK, USAGE, INPUT}),
    ]
    vocabulary = [
        ("sg-bpe", [t("sg-bpe"), "--vocab", "{F}", corpus] + q, {OK, INPUT}),
        ("sg-tokenize", [t("sg-tokenize"), corpus, "--vocab", "{F}"] + q + o("tokens.h5"), {OK, INPUT}),
    ]
    kinds = {
        "tokens": [
            ("sg-info", [t("sg-info"), "{F}"], {OK, INPUT}),
            ("sg-eval", [t("sg-eval"), "--tokens", "{F}", small] + torch + o("eval.h5"), {OK, INPUT}),
            ("sg-train", [t("sg-train"), "--tokens", "{F}", "--tier", "tiny", "--set", "n_layer=1", "--set", "n_embd=16",
                          "--set", "block_size=16", "--set", f"vocab_size={len(seeds['vocab'])}", "--set", "iterations=1", "--set", "warmup=0", "--set", "micro_batch=2", "--set",
                          "eval_batches=1", "--set", "final_eval_batches=1"] + torch + o("train.h5"), {OK, INPUT}),
        ],
        "run": [
            ("sg-info", [t("sg-info"), "{F}"], {OK, INPUT}),
            ("sg-eval", [t("sg-eval"), "--tokens", tokens, "{F}"] + torch + o("eval.h5"), {OK, INPUT}),
            ("sg-train --resume", [t("sg-train"), "--tokens", tokens, "--resume", "-o", "{F}"] + torch,
             {OK, INPUT, DIVERGED}),
            ("sg-sample", [t("sg-sample"), "{F}", "--vocab", seeds["vocab.json"], "--prompt", "The list", "-n", "4"]
             + torch, {OK, INPUT}),
        ],
        "result": table,
        "pairdiff": table[:2],
        "examples": table[:2],
        "csv": table,
        "text": [("sg-tokenize", [t("sg-tokenize"), "{F}", "--vocab", seeds["vocab.json"]] + q + o("tokens.h5"),
                  {OK, INPUT}),
                 ("sg-bpe", [t("sg-bpe"), "--vocab", seeds["vocab.json"], "{F}"] + q, {OK, INPUT})],
        "jsonl": [("sg-tokenize", [t("sg-tokenize"), "{F}", "--vocab", seeds["vocab.json"]] + q + o("tokens.h5"),
                   {OK, INPUT})],
        "vocab.json": vocabulary,
        "tokenizer.json": vocabulary,
        # Exit 2 for an example longer than the model's context (lm-eval refuses it too).
        "lambada": [("sg-eval --task lambada", [t("sg-eval"), "--task", "lambada", "--lambada", "{F}", "--vocab",
                                                seeds["vocab.json"], small] + torch + o("zs.h5"), {OK, USAGE, INPUT})],
        "hellaswag": [("sg-eval --task hellaswag", [t("sg-eval"), "--task", "hellaswag", "--hellaswag", "{F}",
                                                    "--vocab", seeds["vocab.json"], small] + torch + o("zs.h5"),
                       {OK, USAGE, INPUT})],
    }
    if "hf" in seeds:
        folder = [
            ("sg-survey", [t("sg-survey"), "{D}", "--text", corpus, "--blocks", "1", "--block-length", "16"] + torch
             + o("survey.h5"), {OK, INPUT}),
            ("sg-sample", [t("sg-sample"), "{D}", "--prompt", "The list", "-n", "4"] + torch, {OK, INPUT}),
        ]
        for name in ("model.safetensors", "config.json", "vocab.json", "merges.txt"):
            kinds["hf/" + name] = folder
    return kinds


def companions(kind, seeds):
    """Files a reader of `kind` expects beside its input (a vocab.json needs its merges.txt)."""
    return [seeds["merges"]] if kind == "vocab.json" else []


def seeds_dir(seeds):
    return os.path.dirname(seeds["tokens"])


def seed_of(kind, seeds):
    if kind.startswith("hf/"):
        return os.path.join(seeds["hf"], kind[3:])
    return seeds[kind]


# --- mutations ----------------------------------------------------------------------------------

TEXT_KINDS = {"text", "jsonl", "csv", "vocab.json", "tokenizer.json", "lambada", "hellaswag", "hf/config.json",
              "hf/vocab.json", "hf/merges.txt"}
INTERESTING = [b"\x00" * 8, b"\xff" * 8, b"\x7f\xff\xff\xff", b"\x80\x00\x00\x00", b"\x00\x00\x00\x80",
               b"\xff\xff\xff\x7f", b"\x01", b"\x00\x00\x10\x00"]
TEXT_TOKENS = ["", "-1", "1e308", "nan", "inf", "-0", "18446744073709551616", "9" * 40, "\"", "\\", "{", "}", "[",
               "]", ",", ":", "\n", "\r\n", "\x00", "\xff", "\udced\udca0\udc80", "null", "true", "\"text\"", "<|endoftext|>", " ",
               "\t", "Ġ", "é"]


def header_length(data):
    """The JSON header's end in a safetensors file (8 + its length), if it looks like one."""
    if len(data) < 8:
        return len(data)
    n = int.from_bytes(data[:8], "little")
    return min(len(data), 8 + n) if n < len(data) else len(data)


def mutate(data, rng, kind, donors):
    """One seeded mutation of `data` (bytes); returns (bytes, description)."""
    n = len(data)
    focus = header_length(data) if kind == "hf/model.safetensors" and rng.random() < 0.85 else n
    position = lambda: rng.randrange(max(focus, 1))
    choice = rng.random()
    if kind in TEXT_KINDS and choice < 0.5:
        text = data.decode("utf-8", errors="surrogateescape")
        what = rng.random()
        at = rng.randrange(max(len(text), 1))
        if what < 0.3:
            token = rng.choice(TEXT_TOKENS)
            length = rng.randrange(0, 6)
            text = text[:at] + token + text[at + length:]
            description = f"text: replace {length} chars at {at} by {token!r}"
        elif what < 0.5:  # a number made extreme
            digits = [i for i, c in enumerate(text) if c.isdigit()]
            if digits:
                at = rng.choice(digits)
            token = rng.choice(["-1", "0", "99999999999", "1e308", "nan", "-2147483649", "65536", "50257"])
            text = text[:at] + token + text[at + 1:]
            description = f"text: number at {at} -> {token}"
        elif what < 0.7:  # lines dropped, repeated or swapped
            lines = text.split("\n")
            i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
            op = rng.choice(["drop", "repeat", "swap"])
            if op == "drop":
                del lines[i]
            elif op == "repeat":
                lines.insert(i, lines[j])
            else:
                lines[i], lines[j] = lines[j], lines[i]
            text = "\n".join(lines)
            description = f"text: {op} lines {i},{j}"
        elif what < 0.85:
            text = text[:at]
            description = f"text: cut at {at}"
        else:
            raw = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 5)))
            out = data[:at] + raw + data[at:]
            return out, f"text: insert raw bytes {raw!r} at {at}"
        return text.encode("utf-8", errors="surrogateescape"), description
    if n == 0:
        return b"\x00", "empty -> one byte"
    data = bytearray(data)
    if choice < 0.62:
        count = rng.choice([1, 1, 1, 2, 4, 8, 32])
        places = [position() for _ in range(count)]
        for p in places:
            data[p] = rng.randrange(256)
        return bytes(data), f"set {count} bytes at {places[:4]}"
    if choice < 0.72:
        p = position()
        bit = rng.randrange(8)
        data[p] ^= 1 << bit
        return bytes(data), f"flip bit {bit} of byte {p}"
    if choice < 0.80:
        p = position()
        value = rng.choice(INTERESTING)
        data[p:p + len(value)] = value
        return bytes(data[:n]), f"write {value.hex()} at {p}"
    if choice < 0.88:
        cut = rng.randrange(n)
        return bytes(data[:cut]), f"truncate to {cut} of {n}"
    if choice < 0.93:
        p, length = position(), rng.randrange(1, 64)
        if rng.random() < 0.5:
            return bytes(data[:p] + data[p + length:]), f"delete {length} bytes at {p}"
        return bytes(data[:p] + bytes(rng.randrange(256) for _ in range(length)) + data[p:]), f"insert {length} at {p}"
    donor = rng.choice(donors) if donors else bytes(data)
    length = rng.randrange(1, 512)
    src = rng.randrange(max(len(donor) - length, 1))
    p = position()
    data[p:p + length] = donor[src:src + length]
    return bytes(data[:max(n, p)]), f"splice {length} bytes from a donor at {src} over {p}"


# --- running ------------------------------------------------------------------------------------

def limits(memory):
    def apply():
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        os.setsid()
    return apply


def digest(path):
    h = hashlib.sha256()
    if os.path.isdir(path):
        for name in sorted(os.listdir(path)):
            h.update(name.encode())
            h.update(digest(os.path.join(path, name)).encode())
        return h.hexdigest()
    with open(path, "rb") as f:
        h.update(f.read())
    return h.hexdigest()


def run_reader(name, argv, allowed, target, timeout, out_dir):
    memory = MEMORY_CORE if os.path.basename(argv[0]) in CORE_TOOLS else MEMORY_TORCH
    before = digest(target)
    start = time.monotonic()
    env = dict(os.environ, TMPDIR=out_dir)
    process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               preexec_fn=limits(memory), env=env, cwd=out_dir)
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        return "hang", f"over {timeout} s", time.monotonic() - start
    seconds = time.monotonic() - start
    message = stderr.decode(errors="replace").strip()
    code = process.returncode
    if code < 0:
        return "crash", f"signal {signal.Signals(-code).name}: {message[-300:]}", seconds
    if code == 1:
        return "internal", message[-300:], seconds
    if code not in allowed:
        return "bad-code", f"exit {code}: {message[-300:]}", seconds
    base = os.path.basename(target)
    if code == INPUT and base not in message:
        return "unnamed", f"exit {code} without naming {base}: {message[-300:]}", seconds
    if not name.startswith("sg-train --resume") and digest(target) != before:
        return "changed-input", "the reader changed its input", seconds
    return "ok" if code == OK else f"exit {code}", "", seconds


def one_case(case, args, kinds, seeds, pool_kinds, donors):
    rng = random.Random(args.seed * 1_000_003 + case)
    kind = pool_kinds[case % len(pool_kinds)]
    source = seed_of(kind, seeds)
    with open(source, "rb") as f:
        original = f.read()
    data, description = mutate(original, rng, kind, donors)
    case_dir = os.path.join(args.work, "cases", str(case))
    os.makedirs(case_dir)
    if kind.startswith("hf/"):
        folder = os.path.join(case_dir, "model")
        shutil.copytree(seeds["hf"], folder)
        target_file = os.path.join(folder, kind[3:])
        target = folder
    else:
        target_file = target = os.path.join(case_dir, os.path.basename(source).replace(".", f"-{case}.", 1))
        for companion in companions(kind, seeds):
            shutil.copy(companion, case_dir)
    results = []
    for name, template, allowed in kinds[kind]:
        with open(target_file, "wb") as f:  # afresh for each reader: sg-train --resume writes its file
            f.write(data)
        argv = [a.replace("{F}", target).replace("{D}", target) for a in template]
        outcome, detail, seconds = run_reader(name, argv, allowed, target, args.timeout, case_dir)
        results.append((name, outcome, detail, seconds, argv))
    def copy(keep):
        os.makedirs(keep)
        with open(target_file, "wb") as f:
            f.write(data)
        if os.path.isdir(target):
            shutil.copytree(target, os.path.join(keep, "model"))
        else:
            shutil.copy(target, keep)
            for companion in companions(kind, seeds):
                shutil.copy(companion, keep)
    keep_failure(args, f"{case}-{kind.replace('/', '_')}", f"case {case}, seed {args.seed}, kind {kind}: {description}",
                 results, copy)
    shutil.rmtree(case_dir, ignore_errors=True)
    return case, kind, description, results


FAILURES = {"crash", "hang", "internal", "bad-code", "unnamed", "changed-input", "accepted", "silent-accept"}


def keep_failure(args, name, title, results, copy):
    """When a reader of `results` failed: WORK/failures/NAME holds the input (copy(folder) makes the
    folder and puts it there) and a README of `title` and each failed command with what went wrong."""
    failed = [r for r in results if r[1] in FAILURES]
    if not failed:
        return
    keep = os.path.join(args.work, "failures", name)
    os.makedirs(os.path.dirname(keep), exist_ok=True)
    copy(keep)
    with open(os.path.join(keep, "README"), "w") as f:
        f.write(title + "\n")
        for reader, outcome, detail, seconds, argv in failed:
            f.write(f"{outcome}: {' '.join(argv)}\n  {detail}\n")


# --- structural families (a hostile-input campaign): each a function of (rng, seeds, bin_dir, case_dir) returning
# [(reader name, argv, allowed exit codes, file that must stay unchanged or None)]; exit 0 is a
# failure ("accepted") where the family's input must be refused.

CONFIG_OUT_OF_RANGE = [("n_layer", "1000000"), ("n_embd", "1000000000"), ("block_size", "100000000"),
                       ("vocab_size", "1000000000"), ("eval_batches", "1000000000"),
                       ("iterations", str(2 ** 62)), ("tier", "garbage"), ("micro_batch", "100000000"),
                       ("arm", "baseline"), ("n_layer", "2"), ("block_size", "17"), ("n_head", "1")]


def family_config_edits(rng, seeds, bin_dir, case_dir):
    """A run file whose /config attribute was deleted, retyped, or set out of range or out of step
    with its tensors (h5py): every reader refuses it (exit 3 naming it)."""
    import h5py
    target = os.path.join(case_dir, "edited.h5")
    shutil.copy(seeds["run"], target)
    with h5py.File(target, "r+") as f:
        config = f["config"].attrs
        names = sorted(k for k in config.keys() if k != "loss_plan")
        edit = rng.choice(["delete", "retype", "value"])
        if edit == "delete":
            key = rng.choice(names)
            del config[key]
        elif edit == "retype":
            key = rng.choice(names)
            config[key] = rng.choice([7, 2.5, [b"1", b"2"]])
        else:
            key, value = rng.choice(CONFIG_OUT_OF_RANGE)
            config[key] = value
    t = lambda name: os.path.join(bin_dir, name)
    torch = ["--threads", "1", "--log-level", "quiet"]
    out = os.path.join(case_dir, "out.h5")
    return f"{edit} {key}", [
        ("sg-info", [t("sg-info"), target], {INPUT}, target),
        ("sg-eval", [t("sg-eval"), "--tokens", seeds["tokens"], target, "-o", out, "--force"] + torch, {INPUT}, target),
        ("sg-train --resume", [t("sg-train"), "--tokens", seeds["tokens"], "--resume", "-o", target] + torch, {INPUT},
         target),
    ]


def family_deep_json(rng, seeds, bin_dir, case_dir):
    """A Hugging Face folder whose config.json nests a value 200,000 levels deep (it overflowed the
    stack in an error message): refused, exit 3 naming config.json."""
    folder = os.path.join(case_dir, "model")
    shutil.copytree(seeds["hf"], folder)
    levels = rng.choice([65, 1000, 200000])
    key = rng.choice(["model_type", "n_layer", "architectures", "extra"])
    with open(os.path.join(folder, "config.json")) as f:
        config = json.load(f)
    config[key] = None
    text = json.dumps(config).replace(f'"{key}": null', f'"{key}": ' + "[" * levels + "]" * levels)
    with open(os.path.join(folder, "config.json"), "w") as f:
        f.write(text)
    t = lambda name: os.path.join(bin_dir, name)
    torch = ["--threads", "1", "--log-level", "quiet"]
    return f"{key} nested {levels} deep", [
        ("sg-sample", [t("sg-sample"), folder, "--prompt", "The list", "-n", "2"] + torch, {INPUT}, None),
        ("sg-survey", [t("sg-survey"), folder, "--text", seeds["text"], "--blocks", "1", "--block-length", "16",
                       "-o", os.path.join(case_dir, "s.h5"), "--force"] + torch, {INPUT}, None),
    ]


def family_output_is_input(rng, seeds, bin_dir, case_dir):
    """An output (-o, --log-json) aimed at one of the tool's inputs, primary or secondary, with
    --force: refused (exit 4), the input unchanged."""
    t = lambda name: os.path.join(bin_dir, name)
    torch = ["--threads", "1", "--log-level", "quiet"]
    folder = os.path.join(case_dir, "model")
    if "hf" in seeds:
        shutil.copytree(seeds["hf"], folder)
    tokens, text = os.path.join(case_dir, "tokens.h5"), os.path.join(case_dir, "corpus.txt")
    vocab, merges = os.path.join(case_dir, "vocab.json"), os.path.join(case_dir, "merges.txt")
    config = os.path.join(case_dir, "train.conf")
    for source, copy in ((seeds["tokens"], tokens), (seeds["text"], text), (seeds["vocab.json"], vocab),
                         (seeds["merges"], merges)):
        shutil.copy(source, copy)
    with open(config, "w") as f:
        f.write(f"vocab_size = {len(seeds['vocab'])}\nn_layer = 1\nn_embd = 16\nblock_size = 16\niterations = 1\n"
                "warmup = 0\nmicro_batch = 2\neval_batches = 1\nfinal_eval_batches = 1\n")
    train = [t("sg-train"), "--tokens", tokens, "--tier", "tiny", "--config", config] + torch
    run_out = os.path.join(case_dir, "run.h5")
    cases = [
        ("sg-tokenize -o its --vocab", [t("sg-tokenize"), text, "--vocab", vocab, "-o", vocab, "--force"], vocab),
        ("sg-tokenize -o merges.txt", [t("sg-tokenize"), text, "--vocab", vocab, "-o", merges, "--force"], merges),
        ("sg-train -o its --config", train + ["-o", config, "--force"], config),
        ("sg-train --log-json its tokens", train + ["-o", run_out, "--force", "--log-json", tokens], tokens),
        ("sg-train --log-json its --config", train + ["-o", run_out, "--force", "--log-json", config], config),
        ("sg-train --log-json its -o", train + ["-o", run_out, "--force", "--log-json", run_out], None),
        ("sg-probe --vocab v -o v", [t("sg-probe"), seeds["run"], "--tokens", seeds["tokens"], "--vocab", vocab, "-o", vocab,
                                     "--force"] + torch, vocab),
    ]
    if "hf" in seeds:
        survey = [t("sg-survey"), folder, "--blocks", "1", "--block-length", "16"] + torch
        cases += [
            ("sg-survey -o model.safetensors", survey + ["--text", text, "-o", os.path.join(folder, "model.safetensors"),
                                                         "--force"], os.path.join(folder, "model.safetensors")),
            ("sg-survey -o its --text", survey + ["--text", text, "-o", text, "--force"], text),
            ("sg-survey -o vocab.json", survey + ["--text", text, "-o", os.path.join(folder, "vocab.json"), "--force"],
             os.path.join(folder, "vocab.json")),
        ]
    name, argv, target = rng.choice(cases)
    return name, [(name, argv, {4}, target)]


FAMILIES = {"config-edits": family_config_edits, "deep-json": family_deep_json, "output-is-input": family_output_is_input}


def run_family_case(case, family, args, seeds, bin_dir):
    """One case of a structural family: each reader must exit with an allowed code (never 0), name
    its file when it exits 3, and leave its protected file unchanged."""
    rng = random.Random(args.seed * 7_000_003 + case)
    case_dir = os.path.join(args.work, "cases", f"family-{case}")
    os.makedirs(case_dir)
    description, runs = FAMILIES[family](rng, seeds, bin_dir, case_dir)
    results = []
    for name, argv, allowed, keep in runs:
        before = digest(keep) if keep else None
        target = keep or next(a for a in argv[1:] if os.path.exists(a))
        outcome, detail, seconds = run_reader(name, argv, allowed | {OK}, target, args.timeout, case_dir)
        if outcome == "ok":
            outcome, detail = "accepted", "exit 0 where the input must be refused"
        elif keep and digest(keep) != before:
            outcome, detail = "changed-input", f"{keep} was overwritten"
        results.append((name, outcome, detail, seconds, argv))
    keep_failure(args, f"f{case}-{family}", f"family case {case}, seed {args.seed}, {family}: {description}", results,
                 lambda keep: shutil.copytree(case_dir, keep))
    shutil.rmtree(case_dir, ignore_errors=True)
    return case, family, description, results


# The HDF5 kinds that structural cases rewrite (tests/h5_hostile.py).
STRUCTURAL_KINDS = ["tokens", "run", "result", "pairdiff", "examples"]


def one_structural(case, args, kinds, seeds, pool_kinds):
    """Structural case `case`: an HDF5 input rewritten by one h5_hostile.py edit, run by every reader of its kind."""
    import h5_hostile
    rng = random.Random(args.seed * 1_000_003 + 500_000_000 + case)
    kind = pool_kinds[case % len(pool_kinds)]
    edit = h5_hostile.EDITS[rng.randrange(len(h5_hostile.EDITS))]
    case_dir = os.path.join(args.work, "cases", f"s{case}")
    os.makedirs(case_dir)
    source = seed_of(kind, seeds)
    target = os.path.join(case_dir, os.path.basename(source).replace(".", f"-s{case}.", 1))
    edited = target + ".edited"  # side files (a FIFO, the linked copy, raw data) go beside it, named from it
    try:
        dataset = h5_hostile.edit(edit, source, edited, seed=rng.randrange(1 << 30))
    except SystemExit as e:  # no dataset of the kind the edit needs: nothing to test
        shutil.rmtree(case_dir, ignore_errors=True)
        return case, kind, f"{edit}: skipped ({e})", []
    with open(edited, "rb") as f:
        data = f.read()
    description = f"{edit} on {dataset}"
    results = []
    for name, template, allowed in kinds[kind]:
        with open(target, "wb") as f:
            f.write(data)
        argv = [a.replace("{F}", target) for a in template]
        outcome, detail, seconds = run_reader(name, argv, allowed, target, args.timeout, case_dir)
        if outcome == "ok" and edit != "zero-chunk":
            outcome, detail = "silent-accept", f"exit 0 on a file with {description}"
        results.append((name, outcome, detail, seconds, argv))
    if edit == "zero-chunk" and results and all(r[1] == "ok" for r in results):
        name, _, _, seconds, argv = results[0]
        results[0] = (name, "silent-accept", f"every reader exit 0 on a file with {description}", seconds, argv)
    keep_failure(args, f"s{case}-{kind}-{edit}", f"structural case {case}, seed {args.seed}, kind {kind}: {description}",
                 results, lambda keep: shutil.copytree(case_dir, keep, ignore=lambda d, names: [n for n in names if n.endswith(".fifo")]))
    shutil.rmtree(case_dir, ignore_errors=True)
    return case, kind, description, results


def default_structural():
    """$SINKGATE_FUZZ_STRUCTURAL, else 30."""
    return os.environ.get("SINKGATE_FUZZ_STRUCTURAL", "30")


def default_cases():
    """$SINKGATE_FUZZ_CASES, else the old name $SG_FUZZ_CASES (with a warning), else 100."""
    if "SINKGATE_FUZZ_CASES" in os.environ:
        return os.environ["SINKGATE_FUZZ_CASES"]
    if "SG_FUZZ_CASES" in os.environ:
        print("fuzz: warning: SG_FUZZ_CASES is an old name; use SINKGATE_FUZZ_CASES", file=sys.stderr)
        return os.environ["SG_FUZZ_CASES"]
    return "100"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("bin_dir")
    parser.add_argument("work")
    parser.add_argument("--cases", type=int, default=int(default_cases()))
    parser.add_argument("--structural", type=int, default=int(default_structural()))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--kinds", default="", help="comma-separated kinds (default: all)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=15.0)
    parser.add_argument("--families", default=",".join(FAMILIES),
                        help="structural families to run beside the byte mutations, comma-separated ('' for none)")
    parser.add_argument("--family-cases", type=int, default=None,
                        help="cases of the families, shared among them (default: a tenth of --cases, at least one each)")
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(os.path.join(args.work, "cases"))
    try:
        import transformers  # noqa: F401
        python_ok = True
    except ImportError:
        python_ok = False
        print("fuzz: transformers is missing here, so the Hugging Face folder is left out", file=sys.stderr)
    start = time.monotonic()
    seeds = make_seeds(os.path.abspath(args.bin_dir), os.path.join(args.work, "seeds"), python_ok)
    print(f"fuzz: seed inputs made in {time.monotonic() - start:.1f} s", flush=True)
    kinds = readers(os.path.abspath(args.bin_dir), seeds, os.path.join(args.work, "cases"))
    chosen = [k for k in args.kinds.split(",") if k] or sorted(kinds)
    unknown = [k for k in chosen if k not in kinds]
    if unknown:
        sys.exit(f"fuzz.py: unknown kinds {unknown}; known: {sorted(kinds)}")
    # Every reader must pass on the unchanged seed input, or its cases would test nothing.
    broken = []
    for kind in chosen:
        for name, template, allowed in kinds[kind]:
            source = seed_of(kind, seeds)
            check = os.path.join(args.work, "cases", "seed-check")
            os.makedirs(check, exist_ok=True)
            if kind.startswith("hf/"):
                target = os.path.join(check, "model")
                shutil.rmtree(target, ignore_errors=True)
                shutil.copytree(seeds["hf"], target)
            else:
                target = os.path.join(check, os.path.basename(source))
                shutil.copy(source, target)
                for companion in companions(kind, seeds):
                    shutil.copy(companion, check)
            argv = [a.replace("{F}", target).replace("{D}", target) for a in template]
            outcome, detail, _ = run_reader(name, argv, {OK}, target, args.timeout, check)
            if outcome != "ok":
                broken.append(f"{kind}: {name}: {outcome}: {detail}")
    if broken:
        sys.exit("fuzz.py: readers fail on the unchanged seed inputs:\n  " + "\n  ".join(broken))
    shutil.rmtree(os.path.join(args.work, "cases", "seed-check"), ignore_errors=True)
    # Cheap readers get more cases: a torch tool starts in about half a second, a core tool in 10 ms.
    pool = []
    for kind in chosen:
        cheap = all(os.path.basename(argv[0]) in CORE_TOOLS or argv[0].endswith("sg-info") for _, argv, _ in kinds[kind])
        pool += [kind] * (3 if cheap else 1)
    donors = []
    for kind in chosen:
        with open(seed_of(kind, seeds), "rb") as f:
            donors.append(f.read()[:65536])
    counts, failures, slowest = {}, [], (0.0, "")
    done = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as executor:
        futures = [executor.submit(one_case, case, args, kinds, seeds, pool, donors) for case in range(args.cases)]
        for future in concurrent.futures.as_completed(futures):
            case, kind, description, results = future.result()
            done += 1
            for name, outcome, detail, seconds, argv in results:
                key = (kind, outcome)
                counts[key] = counts.get(key, 0) + 1
                if seconds > slowest[0]:
                    slowest = (seconds, f"case {case} {kind} {name}")
                if outcome in FAILURES:
                    failures.append((case, kind, name, outcome, description, detail))
            if done % 100 == 0:
                print(f"fuzz: {done}/{args.cases} cases, {len(failures)} failures, "
                      f"{time.monotonic() - start:.0f} s", flush=True)
    families = [f for f in args.families.split(",") if f]
    unknown = [f for f in families if f not in FAMILIES]
    if unknown:
        sys.exit(f"fuzz.py: unknown families {unknown}; known: {sorted(FAMILIES)}")
    if "hf" not in seeds and "deep-json" in families:
        families.remove("deep-json")
    family_cases = args.family_cases if args.family_cases is not None else max(len(families), args.cases // 10)
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as executor:
        futures = [executor.submit(run_family_case, case, families[case % len(families)], args, seeds,
                                   os.path.abspath(args.bin_dir)) for case in range(family_cases if families else 0)]
        for future in concurrent.futures.as_completed(futures):
            case, family, description, results = future.result()
            for name, outcome, detail, seconds, argv in results:
                key = (family, outcome)
                counts[key] = counts.get(key, 0) + 1
                if outcome in FAILURES:
                    failures.append((case, family, name, outcome, description, detail))
    chosen = chosen + families
    # Structural cases: HDF5 inputs using what sinkgate never writes, and lost writes.
    structural_pool = [k for k in STRUCTURAL_KINDS if k in chosen]
    edits = {}
    if structural_pool and args.structural > 0:
        done = 0
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as executor:
            futures = [executor.submit(one_structural, case, args, kinds, seeds, structural_pool)
                       for case in range(args.structural)]
            for future in concurrent.futures.as_completed(futures):
                case, kind, description, results = future.result()
                done += 1
                edit = description.split(" ")[0].rstrip(":")
                for name, outcome, detail, seconds, argv in results:
                    key = ("structural " + kind, outcome)
                    counts[key] = counts.get(key, 0) + 1
                    edits[(edit, outcome)] = edits.get((edit, outcome), 0) + 1
                    if seconds > slowest[0]:
                        slowest = (seconds, f"structural case {case} {kind} {name}")
                    if outcome in FAILURES:
                        failures.append((f"s{case}", kind, name, outcome, description, detail))
                if not results:
                    edits[(edit, "skipped")] = edits.get((edit, "skipped"), 0) + 1
                if done % 100 == 0:
                    print(f"fuzz: {done}/{args.structural} structural cases, {len(failures)} failures, "
                          f"{time.monotonic() - start:.0f} s", flush=True)
    runs = sum(counts.values())
    print(f"fuzz: {args.cases} mutated inputs and {args.structural if structural_pool else 0} structural ones, "
          f"{runs} reader runs in {time.monotonic() - start:.0f} s "
          f"(seed {args.seed}; slowest run {slowest[0]:.1f} s, {slowest[1]})")
    for kind in chosen + ["structural " + k for k in structural_pool]:
        row = {o: c for (k, o), c in counts.items() if k == kind}
        if row:
            print(f"  {kind:20s} " + "  ".join(f"{o} {c}" for o, c in sorted(row.items())))
    for edit in sorted({e for e, _ in edits}):
        row = {o: c for (e, o), c in edits.items() if e == edit}
        print(f"  edit {edit:22s} " + "  ".join(f"{o} {c}" for o, c in sorted(row.items())))
    for case, kind, name, outcome, description, detail in sorted(failures, key=lambda f: str(f[0])):
        print(f"FAIL case {case} ({kind}, {description}): {name}: {outcome}: {detail}")
    if failures:
        print(f"fuzz: {len(failures)} failures; inputs kept in {os.path.join(args.work, 'failures')}")
        return 1
    print("fuzz: no crash, hang, internal error or unnamed input")
    return 0


if __name__ == "__main__":
    sys.exit(main())
