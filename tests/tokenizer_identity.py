"""A run knows its tokenizer: the new user's path with a vocabulary other than GPT-2's.

Usage: tokenizer_identity.py BIN_DIR WORK_DIR

A small byte-level BPE vocabulary (tokenizer.json) is trained here with Hugging Face `tokenizers`,
the independent reference; then, with the real executables:
  1. sg-tokenize records the tokenizer's identity in the token file (kind, sha256 of the file,
     vocab_size, eot_id) and embeds the file; its ids are the reference's;
  2. the vocabulary file is moved away: everything after decodes from the embedded copy;
  3. sg-train --tier tiny takes vocab_size from the token file (not padded) and records the
     tokenizer in the run file; a vocab_size below the token file's is refused;
  4. sg-sample decodes with the run's own vocabulary: its text, encoded by the reference and by
     sg-bpe, gives the same ids, which decode back to the text; --vocab with the same file gives
     the same text; --vocab with another vocabulary is refused naming both files and hashes;
  5. sg-eval's LAMBADA encodes with it (token counts as the reference's) and refuses another;
     sg-probe's gate-token report decodes each id as the reference does;
  6. /dev/zero, a FIFO and a folder as a vocabulary are refused at once, naming the file;
  7. files of older versions (no /tokenizer group) keep today's behaviour: GPT-2's vocabulary;
  8. sg-export writes the run's own vocabulary (the embedded file): transformers' AutoTokenizer on
     the folder gives sg-tokenize's ids on a sample text, and sg-sample on the folder gives the
     run's text.
Prints "tokenizer identity: ok" and exits 0, or fails with the first difference.
"""
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys

import h5py
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

BIN, WORK = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
EOT = "<|endoftext|>"


def tool(name, *args, code=0, stdin=None, timeout=300):
    result = subprocess.run([os.path.join(BIN, name), *args], capture_output=True, input=stdin, timeout=timeout)
    if result.returncode != code:
        sys.exit(f"{name} {' '.join(args)}: exit {result.returncode}, expected {code}\n"
                 f"stderr: {result.stderr.decode(errors='replace')}")
    return result.stdout, result.stderr.decode(errors="replace")


def check(condition, message):
    if not condition:
        sys.exit("FAIL: " + message)


def corpus(seed, documents):
    words = ("the cat sat on a mat while dogs ran far away from home and every child read books about "
             "rivers mountains stars ships kings queens gardens numbers 12 345 6789 quickly slowly").split()
    rng = random.Random(seed)
    return ["\n".join(" ".join(rng.choice(words) for _ in range(rng.randint(4, 14))).capitalize() + "."
                      for _ in range(rng.randint(2, 6))) for _ in range(documents)]


def train_vocabulary(path, texts, size):
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=size, special_tokens=[EOT],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tokenizer.train_from_iterator(texts, trainer)
    tokenizer.save(path)
    return Tokenizer.from_file(path)


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)
os.chdir(WORK)
documents = corpus(1, 400)
os.makedirs("corpus")
for i, text in enumerate(documents):
    with open(f"corpus/{i:04d}.txt", "w") as f:
        f.write(text)
reference = train_vocabulary("tokenizer.json", documents, 600)
other = train_vocabulary("other.json", corpus(2, 50), 400)
vocab_size, eot = reference.get_vocab_size(), reference.token_to_id(EOT)
vocab_sha = sha256("tokenizer.json")
check(vocab_size < 1000 and eot is not None, f"the reference vocabulary has {vocab_size} ids, eot {eot}")

# 1. The token file records the identity and embeds the file; its ids are the reference's.
tool("sg-tokenize", "corpus", "--vocab", "tokenizer.json", "--val-tokens", "2000", "-o", "tokens.h5", "--threads", "1")
with h5py.File("tokens.h5", "r") as f:
    group = f["tokenizer"]
    attrs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in group.attrs.items()}
    check(attrs["kind"] == "tokenizer.json", f"kind {attrs['kind']}")
    check(attrs["sha256"] == vocab_sha, f"sha256 {attrs['sha256']} != {vocab_sha}")
    check(int(attrs["vocab_size"]) == vocab_size, f"vocab_size {attrs['vocab_size']} != {vocab_size}")
    check(int(attrs["eot_id"]) == eot, f"eot_id {attrs['eot_id']} != {eot}")
    check(int(f.attrs["vocab_size"]) == vocab_size, "the root vocab_size differs from the record's")
    with open("tokenizer.json", "rb") as v:
        check(bytes(group["files/tokenizer.json"][()]) == v.read(), "the embedded tokenizer.json differs from the file")
    stream = list(f["tokens/val"][()]) + list(f["tokens/train"][()])
expected = []
for text in documents:
    expected += reference.encode(text, add_special_tokens=False).ids + [eot]
check(stream == expected, "the token file's ids are not the reference's")

# 2. From here on only the embedded copy can decode.
os.rename("tokenizer.json", "moved-away.json")

# 3. sg-train takes vocab_size from the token file and records the tokenizer.
tiny = ["--tier", "tiny", "--set", "iterations=4", "--set", "warmup=1", "--set", "eval_interval=2",
        "--set", "eval_batches=1", "--set", "final_eval_batches=1", "--set", "block_size=32", "--threads", "1"]
tool("sg-train", "--tokens", "tokens.h5", *tiny, "--arm", "normgate", "-o", "run.h5", "--log-level", "error")
with h5py.File("run.h5", "r") as f:
    model_vocab = f["config"].attrs["vocab_size"]
    model_vocab = int(model_vocab.decode() if isinstance(model_vocab, bytes) else model_vocab)
    check(model_vocab == vocab_size, f"the run's vocab_size is {model_vocab}, the token file's {vocab_size}")
    check(f["model/wte.weight"].shape[0] == vocab_size, "the embedding has another number of rows")
    check(f["tokenizer"].attrs["sha256"] in (vocab_sha, vocab_sha.encode()), "the run file's tokenizer sha256 differs")
_, err = tool("sg-train", "--tokens", "tokens.h5", *tiny, "--set", f"vocab_size={vocab_size - 1}", "-o", "small.h5",
              code=3)
check(f"token ids go up to {vocab_size - 1}" in err, "a vocab_size below the largest id is not refused: " + err)

info = [json.loads(line) for line in tool("sg-info", "tokens.h5", "run.h5", "--format", "json")[0].splitlines()]
for described, part in zip(info, ("tokens", "run")):
    record = described[part]["tokenizer_record"]
    check(record["kind"] == "tokenizer.json" and record["sha256"] == vocab_sha and record["embedded"],
          f"sg-info {part}: {record}")

# 4. sg-sample decodes with the run's own vocabulary.
prompt = documents[0][:40]
sample = ["--prompt", prompt, "-n", "24", "--greedy", "--no-stop", "--log-level", "error"]
out, _ = tool("sg-sample", "run.h5", *sample)
text = out.decode("utf-8")[:-1]  # without the final newline
check(len(text) > 0, "sg-sample wrote nothing")
ids = reference.encode(text, add_special_tokens=False).ids
check(reference.decode(ids, skip_special_tokens=False) == text, "the sample does not round-trip through the reference")
with open("sample.txt", "w") as f:
    f.write(text)
ours, _ = tool("sg-bpe", "--vocab", "moved-away.json", "sample.txt")
check([int(t) for t in ours.split()] == ids, "sg-bpe's ids of the sample differ from the reference's")
same, _ = tool("sg-sample", "run.h5", *sample, "--vocab", "moved-away.json")
check(same == out, "--vocab with the run's own vocabulary changes the sample")
_, err = tool("sg-sample", "run.h5", *sample, "--vocab", "other.json", code=3)
for needle in ("other.json", sha256("other.json"), vocab_sha, "run.h5"):
    check(needle in err, f"refusing another vocabulary, stderr does not name {needle}: {err}")

# 4b. sg-eval's zero-shot tasks encode with it: LAMBADA's token counts are the reference's.
passages = [d.replace("\n", " ") for d in documents[:6]]
with open("lambada.jsonl", "w") as f:
    for passage in passages:
        f.write(json.dumps({"text": passage}) + "\n")
tool("sg-eval", "run.h5", "--task", "lambada", "--lambada", "lambada.jsonl", "--examples", "examples.h5",
     "-o", "eval.h5", "--log-level", "error")
with h5py.File("examples.h5", "r") as f:
    examples = list(f["table/example"][()])
    context_tokens = list(f["table/context_tokens"][()])
    continuation_tokens = list(f["table/continuation_tokens"][()])
check(sorted(examples) == list(range(len(passages))), f"sg-eval scored examples {examples}")
for example, n_context, n_continuation in zip(examples, context_tokens, continuation_tokens):
    context, word = passages[example].rsplit(" ", 1)
    whole = len(reference.encode(context + " " + word, add_special_tokens=False).ids)
    expected = len(reference.encode(context, add_special_tokens=False).ids)
    check((n_context, n_continuation) == (expected, whole - expected),
          f"LAMBADA example {example}: {n_context}+{n_continuation} tokens, the reference {expected}+{whole - expected}")
_, err = tool("sg-eval", "run.h5", "--task", "lambada", "--lambada", "lambada.jsonl", "--vocab", "other.json",
              "-o", "eval2.h5", code=3)
check(sha256("other.json") in err and vocab_sha in err, "sg-eval --vocab with another vocabulary: " + err)

# 5. sg-probe's gate-token report decodes with the token file's vocabulary.
tool("sg-probe", "run.h5", "--tokens", "tokens.h5", "--probe", "gate-tokens", "--min-count", "1", "--top", "0",
     "--batches", "1", "--batch-size", "2", "--context", "32", "-o", "probe.h5", "--log-level", "error")
checked = 0
with h5py.File("probe.h5", "r") as f:
    tokens = f["table/token"][()]
    texts = [t.decode() if isinstance(t, bytes) else t for t in f["table/text"][()]]
for token, shown in zip(tokens, texts):
    shown = shown.rstrip("\0")
    if token < 0 or not shown.isalnum():
        continue
    check(shown == reference.decode([int(token)]), f"gate-tokens: id {token} shown as {shown!r}")
    checked += 1
check(checked > 0, "gate-tokens: no row to compare")

# 6. Devices, FIFOs and folders are refused at once, naming the file.
os.mkfifo("fifo.json")
for bad in ("/dev/zero", "fifo.json"):
    _, err = tool("sg-tokenize", "corpus", "--vocab", bad, "-o", "bad.h5", code=3, timeout=60)
    check(bad in err and "not a regular file" in err, f"--vocab {bad}: {err}")
    _, err = tool("sg-sample", "run.h5", *sample, "--vocab", bad, code=3, timeout=60)
    check(bad in err and "not a regular file" in err, f"sg-sample --vocab {bad}: {err}")

# 7. Older files: no /tokenizer group.
shutil.copy("tokens.h5", "old-tokens.h5")
with h5py.File("old-tokens.h5", "a") as f:
    del f["tokenizer"]
tool("sg-train", "--tokens", "old-tokens.h5", *tiny, "-o", "old-run.h5", "--log-level", "error")
with h5py.File("old-run.h5", "r") as f:
    check("tokenizer" not in f, "a run on an old token file records a tokenizer")
    check(f["config"].attrs["vocab_size"] in (str(vocab_size), str(vocab_size).encode()),
          "a run on an old token file does not take its vocab_size")
shutil.copy("run.h5", "old-run2.h5")
with h5py.File("old-run2.h5", "a") as f:
    del f["tokenizer"]
# Today's behaviour: GPT-2's vocabulary, whose 50,257 ids do not fit this run's vocabulary.
_, err = tool("sg-sample", "old-run2.h5", *sample, code=3)
check("50257 token ids" in err, "an old run is not decoded with GPT-2's vocabulary: " + err)

# 8. sg-export writes the run's own vocabulary, from the run file alone (the file is still away).
from transformers import AutoTokenizer  # noqa: E402  (only this step needs transformers)

tool("sg-export", "run.h5", "-o", "export", "--threads", "1", "--log-level", "error")
exported = sorted(os.listdir("export"))
check("tokenizer.json" in exported and "tokenizer_config.json" in exported, f"the export's files: {exported}")
with open("export/tokenizer.json", "rb") as f, open("moved-away.json", "rb") as v:
    check(f.read() == v.read(), "the export's tokenizer.json is not the run's vocabulary file")
hf = AutoTokenizer.from_pretrained("export")
check(hf.eos_token_id == eot, f"AutoTokenizer's end-of-text id {hf.eos_token_id}, the vocabulary's {eot}")
sample_text = documents[1] + "\n\n  Numbers 12 345, and  spaces   here: kings' gardens!\n"
os.makedirs("sample")
with open("sample/0.txt", "w") as f:
    f.write(sample_text)
tool("sg-tokenize", "sample", "--vocab", "moved-away.json", "--val-tokens", "1", "-o", "sample.h5", "--threads", "1",
     "--log-level", "error")
with h5py.File("sample.h5", "r") as f:
    stream = [int(t) for t in list(f["tokens/val"][()]) + list(f["tokens/train"][()])]
ids = hf(sample_text, add_special_tokens=False)["input_ids"]
check(stream == ids + [eot], f"AutoTokenizer on the export: {ids[:12]}…, sg-tokenize: {stream[:12]}…")
check(hf.decode(ids) == sample_text, "AutoTokenizer on the export does not decode its ids back to the text")
out_export, _ = tool("sg-sample", "export", *sample)
check(out_export == out, f"sg-sample on the export: {out_export!r}, on the run: {out!r}")
print("tokenizer identity: ok")
