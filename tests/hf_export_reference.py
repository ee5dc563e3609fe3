#!/usr/bin/env python3
"""hf_export_reference.py — checks sg-export's folders with the independent implementations that
define them: transformers (the model, its cache, generate), HF tokenizers and tiktoken (the
vocabulary). sinkgate's own numbers come from the tests (logits, cached greedy tokens and attention
weights written by tests/hf/test_export.cpp; sg-eval's loss and sg-sample's text in the
command-line tests); this script never computes a sinkgate number itself.

Commands:
  logits DIR REF...         for each pair: REF (safetensors): ids (B, T), logits (B, T, V), prompt (1, P),
                            greedy (N), weights (B, H, T, T) of layer 0. Prints
                            "max_abs_diff=X attention_diff=Y generate=same|differs" and the loading checks:
                            a baseline loads as GPT2LMHeadModel without trust_remote_code, an arm
                            without it fails with transformers' own message.
  tokenizer VOCAB DIR       DIR's vocab.json and merges.txt against tokenizer_reference.py's conversion of
                            the rank file VOCAB (GPT-2's or another); AutoTokenizer (tokenizer.json) and GPT2Tokenizer (vocab.json
                            + merges.txt alone) against tiktoken on text of every byte class. Prints "tokenizer: ok".
  run DIR TOKENS EVAL SAMPLE PROMPT N [DIR TOKENS EVAL SAMPLE PROMPT N ...]
                            a trained run's export: the loss on sg-eval's validation batches (the run's
                            final_eval_batches windows of the token file TOKENS, eval_seed) against
                            sg-eval's val_loss in the result table EVAL; greedy generate of N tokens after
                            PROMPT against sg-sample's text in the file SAMPLE. Prints, per export,
                            "loss_diff=X generate=same|differs", and "run: ok" when the
                            loss is within 1e-5 and the text the same; several exports in one process
                            (transformers imported once), then "run: all K ok" when every one is.
"""
import json
import os
import shutil
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def load(folder, **kwargs):
    """The exported model and whether it needed trust_remote_code, after the loading checks."""
    from transformers import AutoModelForCausalLM, GPT2LMHeadModel
    with open(os.path.join(folder, "config.json")) as f:
        config = json.load(f)
    if config["model_type"] == "gpt2":
        model = AutoModelForCausalLM.from_pretrained(folder, trust_remote_code=False, **kwargs)
        assert type(model) is GPT2LMHeadModel, type(model)
        return model, config
    try:
        AutoModelForCausalLM.from_pretrained(folder, trust_remote_code=False)
    except ValueError as error:
        assert "trust_remote_code=True" in str(error), str(error)
        print("without trust_remote_code: refused as transformers says")
    else:
        raise AssertionError("a custom arm loaded without trust_remote_code")
    model = AutoModelForCausalLM.from_pretrained(folder, trust_remote_code=True, **kwargs)
    assert type(model).__name__ == "SinkgateForCausalLM", type(model)
    return model, config


def greedy(model, prompt, count):
    """count greedy tokens after prompt (1, P) by generate() with the key-value cache."""
    out = model.generate(prompt, max_new_tokens=count, min_new_tokens=count, do_sample=False, use_cache=True,
                         pad_token_id=model.config.eos_token_id)
    return out[0, prompt.shape[1]:]


def command_logits(folder, reference):
    from safetensors.torch import load_file
    ref = load_file(reference)
    model, config = load(folder, dtype=torch.float32)
    model.eval()
    implementations = ["eager", "sdpa"] if config["model_type"] == "gpt2" else ["eager"]
    worst = 0.0
    with torch.no_grad():
        for implementation in implementations:
            model.set_attn_implementation(implementation)
            logits = model(ref["ids"]).logits
            worst = max(worst, (logits - ref["logits"]).abs().max().item())
        model.set_attn_implementation("eager")
        out = model(ref["ids"], output_attentions=True)
        attention = (out.attentions[0] - ref["weights"]).abs().max().item()
        # The cache: the last position's logits after an incremental pass equal the full pass's.
        ids = ref["ids"]
        first = model(ids[:, :-3], use_cache=True)
        rest = model(ids[:, -3:], cache=first.cache, use_cache=True)
        worst = max(worst, (rest.logits - ref["logits"][:, -3:]).abs().max().item())
        tokens = greedy(model, ref["prompt"], ref["greedy"].numel())
    same = torch.equal(tokens, ref["greedy"])
    print(f"max_abs_diff={worst:.3g} attention_diff={attention:.3g} generate={'same' if same else 'differs'}")
    if not same:
        print("transformers:", tokens.tolist(), "\nsinkgate:    ", ref["greedy"].tolist())


TEXTS = [
    "Hello world! It's a test: don't, won't, they'll, we've, I'm, you'd, she's.",
    "  leading spaces, trailing spaces   \n\n\ttabs\tand\r\nnewlines\n   \n",
    "Numbers 1 22 333 4444 55555 3.14159 1e-10 0x1F 1,000,000 ²³ ١٢٣",
    "Déjà vu au café : « Noël » à Zürich, Ångström, mañana — naïve façade.",
    "Ελληνικά, Русский текст, 한국어 텍스트, 日本語のテキスト。中文文本。हिन्दी पाठ। العربية",
    "Emoji 😀👍🏽👩‍👩‍👧 and symbols ©®™ ∑∫√ ← → ⇒ ♠♥ and combining e\u0301 a\u0308.",
    "def f(x):\n    return {'a': [1, 2], \"b\": None}  # code\n",
    "".join(chr(c) for c in range(32, 127)),
    bytes(range(256)).decode("utf-8", errors="replace"),
    "".join(chr(c) for c in range(0x80, 0x800, 7)),
    "\u00a0\u2009\u3000non-breaking and ideographic spaces\u200b zero width",
]


def check_tokenizer(vocab_path, folder):
    from tokenizer_reference import ENDOFTEXT, bytes_to_unicode, gpt2_encoding, split_by_lower_ranks
    from tiktoken.load import load_tiktoken_bpe
    from transformers import AutoTokenizer, GPT2Tokenizer
    ranks = load_tiktoken_bpe(vocab_path)
    byte_char = bytes_to_unicode()
    show = lambda token: "".join(byte_char[b] for b in token)
    vocab = {show(token): rank for token, rank in ranks.items()}
    vocab[ENDOFTEXT] = max(ranks.values()) + 1
    merges = []
    for token, rank in sorted(ranks.items(), key=lambda item: item[1]):
        if len(token) > 1:
            parts = split_by_lower_ranks(ranks, token, rank)
            merges.append(f"{show(parts[0])} {show(parts[1])}")
    with open(os.path.join(folder, "vocab.json"), encoding="utf-8") as f:
        assert json.load(f) == vocab, "vocab.json differs from the rank file's conversion"
    with open(os.path.join(folder, "merges.txt"), encoding="utf-8") as f:
        lines = f.read().split("\n")
    assert lines[0] == "#version: 0.2" and lines[-1] == "", lines[:2]
    assert lines[1:-1] == merges, "merges.txt differs from the rank file's conversion"
    encoding = gpt2_encoding(vocab_path)
    fast = AutoTokenizer.from_pretrained(folder)
    with tempfile.TemporaryDirectory() as plain:
        for name in ("vocab.json", "merges.txt", "tokenizer_config.json"):
            shutil.copy(os.path.join(folder, name), plain)
        slow = GPT2Tokenizer.from_pretrained(plain)
        for text in TEXTS + ["\n".join(TEXTS)]:
            expected = encoding.encode_ordinary(text)
            for name, tokenizer in (("tokenizer.json", fast), ("vocab.json + merges.txt", slow)):
                ids = tokenizer(text, add_special_tokens=False)["input_ids"]
                assert ids == expected, f"{name}: {text[:40]!r}: {ids[:12]} != tiktoken {expected[:12]}"
                assert tokenizer.decode(ids) == text, f"{name}: decode({text[:40]!r})"
    assert fast.eos_token == ENDOFTEXT and fast.eos_token_id == vocab[ENDOFTEXT]
    print("tokenizer: ok")


def window_start(seed, split_val, index, bound):
    """lib/text/sampler.cpp's window_start, for sg-eval's validation batches."""
    mask = (1 << 64) - 1

    def mix64(x):
        x = (x + 0x9E3779B97F4A7C15) & mask
        x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & mask
        x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & mask
        return x ^ (x >> 31)

    key = mix64((seed & mask) ^ mix64(0x5641 if split_val else 0x5452))
    limit = ((1 << 64) - bound) % bound
    attempt = 0
    while True:
        draw = mix64(key ^ mix64((index * 0x100000001B3 + attempt) & mask))
        product = draw * bound
        if (product & mask) >= limit:
            return product >> 64
        attempt += 1


def command_run(folder, tokens_path, eval_path, sample_path, prompt_text, count):
    import h5py
    from transformers import AutoTokenizer
    model, config = load(folder, dtype=torch.float32)
    model.eval()
    with h5py.File(eval_path, "r") as f:
        table = f["table"]
        val_loss = float(table["val_loss"][0])
        batches = int(table["val_batches"][0])
        eval_seed = int(table["eval_seed"][0])
        scored = int(table["scored_tokens"][0])
    context = config["n_positions"]
    rows = scored // context
    assert rows % batches == 0
    with h5py.File(tokens_path, "r") as f:
        val = f["tokens/val"][:].astype("int64")
    windows = [val[start:start + context + 1] for start in
               (window_start(eval_seed, True, k, len(val) - context) for k in range(rows))]
    batch = torch.tensor(windows)
    with torch.no_grad():
        logits = model(batch[:, :-1]).logits
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]).double(),
                                                 batch[:, 1:].reshape(-1)).item()
        tokenizer = AutoTokenizer.from_pretrained(folder)
        prompt = torch.tensor([tokenizer(prompt_text, add_special_tokens=False)["input_ids"]])
        out = model.generate(prompt, max_new_tokens=count, do_sample=False, use_cache=True,
                             pad_token_id=config["eos_token_id"])
    new = out[0, prompt.shape[1]:].tolist()
    if config["eos_token_id"] in new:
        new = new[:new.index(config["eos_token_id"])]
    text = tokenizer.decode(new)
    with open(sample_path, encoding="utf-8", errors="replace") as f:
        sampled = f.read()
    sampled = sampled[:-1] if sampled.endswith("\n") else sampled  # sg-sample ends its output with a newline
    same = text == sampled
    ok = abs(loss - val_loss) <= 1e-5 and same
    if ok:
        print("run: ok (loss within 1e-5 of sg-eval's, greedy text as sg-sample's)")
    print(f"loss_diff={abs(loss - val_loss):.3g} (transformers {loss:.6f}, sg-eval {val_loss:.6f}) "
          f"generate={'same' if same else 'differs'}")
    if not same:
        print("transformers:", repr(text), "\nsg-sample:   ", repr(sampled))
    return ok


def main(argv):
    if len(argv) >= 3 and argv[0] == "logits" and len(argv) % 2 == 1:
        for folder, reference in zip(argv[1::2], argv[2::2]):
            print(os.path.basename(folder) + ":", flush=True)
            command_logits(folder, reference)
    elif len(argv) == 3 and argv[0] == "tokenizer":
        check_tokenizer(argv[1], argv[2])
    elif len(argv) >= 7 and argv[0] == "run" and (len(argv) - 1) % 6 == 0:
        groups = [argv[i:i + 6] for i in range(1, len(argv), 6)]
        passed = 0
        for folder, tokens, eval_path, sample, prompt, count in groups:
            if len(groups) > 1:
                print(os.path.basename(os.path.normpath(folder)) + ":", flush=True)
            passed += command_run(folder, tokens, eval_path, sample, prompt, int(count))
        if len(groups) > 1 and passed == len(groups):
            print(f"run: all {len(groups)} ok")
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
