#!/usr/bin/env python3
"""tokenizer_reference.py — reference answers for tests/text/test_tokenizer.cpp, from tiktoken and HF tokenizers.

The C++ tests never compare the tokenizer with its own output; they ask this script, which runs the
independent implementations that define the encodings: tiktoken for GPT-2's, HF tokenizers for a
tokenizer.json (its normalizer and added tokens included). Text travels through files, as bytes, so
no quoting can change it.

Commands (VOCAB is a tiktoken rank file, "base64token rank" lines, such as gpt2.tiktoken):
  encode VOCAB FILE...      for each FILE: FILE.ids (tiktoken gpt2 encode_ordinary of the bytes decoded
                            with errors='replace', ids separated by spaces) and FILE.utf8 (that decoded
                            text, re-encoded as UTF-8)
  split FILE...             for each FILE (valid UTF-8): FILE.split, the UTF-8 byte lengths of its GPT-2
                            pre-tokens as Python's regex module splits them
  encode-hf JSON FILE...    for each FILE: FILE.hf.ids, the ids of HF tokenizers' Tokenizer.from_file(JSON)
                            (add_special_tokens=False) on the same decoded text
  convert VOCAB DIR         the rank file in the Hugging Face forms: DIR/vocab.json + DIR/merges.txt, and
                            DIR/tokenizer.json (written by HF tokenizers, merges as pairs) plus
                            DIR/tokenizer-string-merges.json (the same with "a b" merge strings)
  pythia DIR                DIR/tokenizer.json: a byte-level BPE trained by HF tokenizers on the Python tutorial
                            (TUTORIAL, plus a few lines of other scripts) and shaped like Pythia's (GPT-NeoX)
                            tokenizer.json: NFC normalizer, ByteLevel pre-tokenizer and decoder, special
                            <|endoftext|> and <|padding|> (ids 0 and 1) and runs of 24 down to 2 spaces as
                            normalized added tokens; DIR/options.json: the same model with added tokens that
                            use single_word, lstrip, rstrip and normalized true/false; DIR/sample.txt: the
                            training text, and DIR/sample-nfd.txt: the same in NFD
  classes OUT               OUT: 0x110000 bytes, the class of every code point as tiktoken's regex engine
                            sees it: 1 \\p{L}, 2 \\p{N}, 3 \\s, 0 anything else (surrogates: 0)
  tables                    prints the C++ range tables of lib/text/unicode.cpp (the same classes)
"""
import base64
import glob
import json
import os
import sys
import unicodedata

import tiktoken
from tiktoken.load import load_tiktoken_bpe

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pipelines"))
from default_corpus import test_corpus  # noqa: E402

TUTORIAL = os.path.join(test_corpus(), "*.rst.txt")
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
ENDOFTEXT = "<|endoftext|>"


def gpt2_encoding(vocab_path):
    """tiktoken's gpt2 encoding, built offline from the rank file (any rank file with GPT-2's
    pattern: <|endoftext|> follows the ranks, 50256 for GPT-2's)."""
    ranks = load_tiktoken_bpe(vocab_path)
    return tiktoken.Encoding(name="gpt2", pat_str=GPT2_PATTERN, mergeable_ranks=ranks,
                             special_tokens={ENDOFTEXT: max(ranks.values()) + 1})


def read_text(path):
    with open(path, "rb") as f:
        return f.read().decode("utf-8", errors="replace")


def write_ids(path, ids):
    with open(path, "w") as f:
        f.write(" ".join(str(i) for i in ids))


def command_encode(vocab_path, files):
    encoding = gpt2_encoding(vocab_path)
    for path in files:
        text = read_text(path)
        write_ids(path + ".ids", encoding.encode_ordinary(text))
        with open(path + ".utf8", "wb") as f:
            f.write(text.encode("utf-8"))


def command_split(files):
    import regex
    pattern = regex.compile(GPT2_PATTERN)
    for path in files:
        with open(path, "rb") as f:
            text = f.read().decode("utf-8")
        write_ids(path + ".split", (len(piece.encode("utf-8")) for piece in pattern.findall(text)))


def command_encode_hf(json_path, files):
    from tokenizers import Tokenizer
    tokenizer = Tokenizer.from_file(json_path)
    for path in files:
        write_ids(path + ".hf.ids", tokenizer.encode(read_text(path), add_special_tokens=False).ids)


def bytes_to_unicode():
    """GPT-2's reversible map from bytes to printable characters (openai/gpt-2 encoder.py)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, (chr(c) for c in cs)))


def split_by_lower_ranks(ranks, token, max_rank):
    """The two parts that BPE with ranks below max_rank leaves of token: the merge that made it."""
    parts = [bytes([b]) for b in token]
    while True:
        best = None
        for i in range(len(parts) - 1):
            rank = ranks.get(parts[i] + parts[i + 1])
            if rank is not None and rank < max_rank and (best is None or rank < best[1]):
                best = (i, rank)
        if best is None:
            return parts
        i = best[0]
        parts = parts[:i] + [parts[i] + parts[i + 1]] + parts[i + 2:]


def command_convert(vocab_path, out_dir):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    ranks = load_tiktoken_bpe(vocab_path)
    byte_char = bytes_to_unicode()
    show = lambda token: "".join(byte_char[b] for b in token)
    vocab = {show(token): rank for token, rank in ranks.items()}
    vocab[ENDOFTEXT] = max(ranks.values()) + 1
    merges = []
    for token, rank in sorted(ranks.items(), key=lambda item: item[1]):
        if len(token) == 1:
            continue
        parts = split_by_lower_ranks(ranks, token, rank)
        assert len(parts) == 2, (token, parts)
        merges.append((show(parts[0]), show(parts[1])))
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(os.path.join(out_dir, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n")
        f.writelines(f"{a} {b}\n" for a, b in merges)
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens([ENDOFTEXT])
    path = os.path.join(out_dir, "tokenizer.json")
    tokenizer.save(path)
    with open(path, encoding="utf-8") as f:
        config = json.load(f)
    config["model"]["merges"] = [m if isinstance(m, str) else " ".join(m) for m in config["model"]["merges"]]
    with open(os.path.join(out_dir, "tokenizer-string-merges.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, ensure_ascii=False)


OTHER_SCRIPTS = """Déjà vu au café : l'élève a réécrit « Noël » à Zürich, Ångström, mañana, façade, naïve.
Größe, Straße, Übermaß, Ærøskøbing, Łódź, Dvořák, İstanbul, Ελληνικά, Русский текст, Україна.
한국어 텍스트입니다. 안녕하세요, 세계! 日本語のテキスト。中文文本。हिन्दी पाठ। العربية 😀👍🏽
"""


def command_pythia(out_dir):
    from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    files = sorted(glob.glob(TUTORIAL))
    if not files:
        sys.exit(f"tokenizer_reference.py: no training text at {TUTORIAL} (Debian package python3.11-doc)")
    text = "".join(open(f, encoding="utf-8").read() for f in files) + OTHER_SCRIPTS * 20
    tokenizer = Tokenizer(models.BPE())
    tokenizer.normalizer = normalizers.NFC()
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=4000, show_progress=False, special_tokens=[ENDOFTEXT, "<|padding|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(text.splitlines(keepends=True), trainer)
    # Pythia's space tokens: {"content": "  ", "single_word": false, "lstrip": false, "rstrip": false,
    # "normalized": true, "special": false}, the longest first.
    tokenizer.add_tokens([AddedToken(" " * n, single_word=False, lstrip=False, rstrip=False, normalized=True,
                                     special=False) for n in range(24, 1, -1)])
    os.makedirs(out_dir, exist_ok=True)
    tokenizer.save(os.path.join(out_dir, "tokenizer.json"))
    tokenizer.add_tokens([
        AddedToken("<mask>", lstrip=True, rstrip=True, normalized=False),
        AddedToken("[W]", single_word=True, normalized=True),
        AddedToken("caf\u00e9", normalized=True),           # matches "café" in NFC and in NFD input
        AddedToken("cafe\u0301!", normalized=False),        # matches only the raw NFD text
        AddedToken("\u212b", normalized=True),              # ANGSTROM SIGN, matched as its NFC "Å"
        AddedToken("<r>", rstrip=True, normalized=True),     # the spaces it takes in are matched again
        AddedToken("end of", normalized=False),
        AddedToken("[S]", special=True, single_word=True, lstrip=True),
        AddedToken("\u00e9t\u00e9 ", single_word=True, normalized=True),
    ])
    tokenizer.save(os.path.join(out_dir, "options.json"))
    with open(os.path.join(out_dir, "sample.txt"), "w", encoding="utf-8") as f:
        f.write(text)
    with open(os.path.join(out_dir, "sample-nfd.txt"), "w", encoding="utf-8") as f:
        f.write(unicodedata.normalize("NFD", text))


def code_point_classes():
    """The class of every code point, read from tiktoken's own regex engine: an encoding whose
    pattern matches one character of a class and whose ranks are the 256 bytes returns exactly the
    bytes of the characters of that class (unmatched text is skipped)."""
    single_bytes = {bytes([b]): b for b in range(256)}
    every = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000)
    classes = bytearray(0x110000)
    for value, pattern in ((1, r"\p{L}"), (2, r"\p{N}"), (3, r"\s")):
        probe = tiktoken.Encoding(name=f"probe{value}", pat_str=pattern, mergeable_ranks=single_bytes,
                                  special_tokens={})
        for character in bytes(probe.encode_ordinary(every)).decode("utf-8"):
            assert classes[ord(character)] == 0, hex(ord(character))
            classes[ord(character)] = value
    return classes


def command_classes(out_path):
    with open(out_path, "wb") as f:
        f.write(code_point_classes())


def command_tables():
    classes = code_point_classes()
    print(f"// Generated by tests/tokenizer_reference.py tables (tiktoken {tiktoken.__version__}).")
    for value, name in ((1, "kLetterRanges"), (2, "kNumberRanges"), (3, "kSpaceRanges")):
        ranges = []
        for c in range(0x110000):
            if classes[c] == value:
                if ranges and ranges[-1][1] == c - 1:
                    ranges[-1][1] = c
                else:
                    ranges.append([c, c])
        print(f"constexpr CodePointRange {name}[] = {{")
        cells = [f"{{0x{a:X}, 0x{b:X}}}," for a, b in ranges]
        line = " "
        for cell in cells:
            if len(line) + len(cell) + 1 > 110:
                print(line)
                line = " "
            line += " " + cell
        print(line)
        print("};")


def main(argv):
    if len(argv) >= 3 and argv[0] == "encode":
        command_encode(argv[1], argv[2:])
    elif len(argv) >= 2 and argv[0] == "split":
        command_split(argv[1:])
    elif len(argv) >= 3 and argv[0] == "encode-hf":
        command_encode_hf(argv[1], argv[2:])
    elif len(argv) == 3 and argv[0] == "convert":
        command_convert(argv[1], argv[2])
    elif len(argv) == 2 and argv[0] == "pythia":
        command_pythia(argv[1])
    elif len(argv) == 2 and argv[0] == "classes":
        command_classes(argv[1])
    elif len(argv) == 1 and argv[0] == "tables":
        command_tables()
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
