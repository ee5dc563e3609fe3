#!/usr/bin/env python3
"""pipelines/repetitive_text.py — the repetitive-context set of `make stability`: the whitespace- and
repetition-heavy passages of a corpus, as one text file for sg-tokenize.

    python3 pipelines/repetitive_text.py CORPUS_DIR_OR_FILE [--limit CHARS] > repetitive.txt

Walks the corpus (a folder: its .txt, .rst, .md and .jsonl files' text, in sorted path order; or one
file), cuts each file into passages of CHUNK (512) characters at multiples of CHUNK, and keeps a
passage when it is mostly layout or repetition:

  - whitespace: at least WHITESPACE (45 %) of its characters are spaces, tabs or newlines; or
  - repetition: zlib (level 9) compresses it to at most COMPRESSED (30 %) of its bytes.

Ordinary prose compresses to about 50-60 % and is about 15-20 % whitespace; a licence header, an
indented code block or an ASCII table passes. The kept passages are written in corpus order, each
followed by a blank line, until LIMIT (600,000, or --limit) characters are reached (the file that reaches it is
kept whole). The rule is fixed, so the set is the
same on every machine with the same corpus. It is drawn from the whole corpus, training split
included: it measures behaviour on degenerate context, not generalisation (docs/beyond.md).
Exit status 2 on bad input (naming it) or when no passage qualifies.
"""
import json
import os
import sys
import zlib

CHUNK = 512
WHITESPACE = 0.45
COMPRESSED = 0.30
LIMIT = 600_000
SUFFIXES = (".txt", ".rst", ".md", ".jsonl")


def texts(path):
    """(path, text) of every corpus file under `path`, sorted."""
    if os.path.isfile(path):
        files = [path]
    elif os.path.isdir(path):
        files = sorted(os.path.join(root, name) for root, _, names in os.walk(path) for name in names
                       if name.endswith(SUFFIXES))
    else:
        raise OSError(f"{path}: no such file or folder")
    for file in files:
        with open(file, encoding="utf-8", errors="replace") as f:
            if file.endswith(".jsonl"):
                for number, line in enumerate(f, 1):
                    if line.strip():
                        try:
                            yield file, json.loads(line).get("text", "")
                        except (ValueError, AttributeError):
                            raise ValueError(f"{file}:{number}: not a JSON object with a text field")
            else:
                yield file, f.read()


def qualifies(passage):
    raw = passage.encode("utf-8")
    space = sum(c in " \t\n\r" for c in passage) / len(passage)
    return space >= WHITESPACE or len(zlib.compress(raw, 9)) <= COMPRESSED * len(raw)


def main(argv):
    limit = LIMIT
    if len(argv) == 4 and argv[2] == "--limit" and argv[3].isdigit() and int(argv[3]) > 0:
        limit = int(argv[3])
        argv = argv[:2]
    if len(argv) != 2 or argv[1].startswith("-"):
        print("usage: repetitive_text.py CORPUS [--limit CHARS] > repetitive.txt", file=sys.stderr)
        return 2
    written = kept = seen = 0
    out = []
    try:
        for _, text in texts(argv[1]):
            for start in range(0, len(text) - CHUNK + 1, CHUNK):
                passage = text[start:start + CHUNK]
                seen += 1
                if qualifies(passage):
                    out.append(passage + "\n\n")
                    written += len(passage) + 2
                    kept += 1
            if written >= limit:  # the rest of a large corpus is not read
                break
    except (OSError, ValueError) as error:
        print(f"repetitive_text.py: error: {error}", file=sys.stderr)
        return 2
    if not kept:
        print(f"repetitive_text.py: error: {argv[1]}: none of its {seen} passages is repetitive by the rule", file=sys.stderr)
        return 2
    sys.stdout.write("".join(out))
    print(f"repetitive_text.py: kept {kept} of {seen} passages of {CHUNK} characters ({written} characters)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
