#!/usr/bin/env python3
"""parquet_roundtrip.py — tests pipelines/parquet_to_jsonl.py and sg-tokenize on Parquet it writes.

Writes, in --work, a folder of two small Parquet files (several row groups; unicode, quotes,
backslashes and newlines in the text; an empty string and a null, which the converter skips;
other columns beside "text") and one whose text column is named "content"; converts the folder
to JSON Lines and checks every line against the documents, in file-name order, byte for byte
against the stdout form; checks the errors (missing column, existing output, not Parquet); then
tokenises the JSON Lines with sg-tokenize and checks the token file's document count (h5py when
the Python has it, else sg-tokenize's summary line) and, with h5py, that there is exactly one
end-of-text token per document. Exit 0 when everything holds; prints what failed otherwise.

Run by ctest (tests/cli/cli_parquet.cmake), or by hand:
  ~/.cache/sinkgate/venv-torch-2.11.0/bin/python tests/parquet_roundtrip.py \\
      --converter pipelines/parquet_to_jsonl.py --sg-tokenize build/bin/sg-tokenize --work /tmp/parquet-test
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq

# (file, texts) in the order the converter must emit them: files by name, rows in order.
DOCUMENTS = {
    "a.parquet": ["Hello world.", "naïve café, 東京 😀 — «quotes» \"double\" and 'single'", "", None,
                  "line one\nline two\r\n\ttabbed \\ backslash", "Straße ünïcödé 🙂🙃", "مرحبا بالعالم", "x"],
    "sub/b.parquet": ["The second file, in a subfolder.", None, "Ελληνικά κείμενα", "last document"],
}
END_OF_TEXT = 50256


def write_fixtures(work):
    folder = os.path.join(work, "parquet")
    for name, texts in DOCUMENTS.items():
        path = os.path.join(folder, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        table = pa.table({"id": pa.array(range(len(texts)), pa.int64()),
                          "text": pa.array(texts, pa.string()),
                          "score": pa.array([0.5] * len(texts), pa.float32())})
        pq.write_table(table, path, row_group_size=3)
        if pq.ParquetFile(path).num_row_groups < 2:
            raise SystemExit(f"fixture {path} has a single row group")
    other = os.path.join(work, "content.parquet")
    pq.write_table(pa.table({"content": ["only this"], "url": ["https://example.org"]}), other)
    with open(os.path.join(work, "not.parquet"), "w") as f:
        f.write("this is not a Parquet file\n")
    return folder, other


def run(command, **kwargs):
    return subprocess.run(command, capture_output=True, **kwargs)


class Checks:
    def __init__(self):
        self.failed = 0

    def expect(self, condition, message, detail=""):
        """Prints the check; on failure also the detail (e.g. the tool's stderr)."""
        print(("ok    " if condition else "FAIL  ") + message)
        if not condition and detail:
            print("      " + detail.strip().replace("\n", "\n      "))
        self.failed += not condition


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--converter", required=True, help="pipelines/parquet_to_jsonl.py")
    parser.add_argument("--sg-tokenize", required=True, help="the sg-tokenize executable")
    parser.add_argument("--vocab", help="gpt2.tiktoken (default: sg-tokenize's own default)")
    parser.add_argument("--work", required=True, help="scratch folder (emptied first)")
    args = parser.parse_args()

    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    folder, other = write_fixtures(args.work)
    convert = [sys.executable, args.converter]
    expected = [t for texts in DOCUMENTS.values() for t in texts if t]  # nulls and "" skipped
    checks = Checks()

    # Conversion of the folder: one line per document, in order, UTF-8 unescaped.
    jsonl = os.path.join(args.work, "out.jsonl")
    done = run(convert + [folder, "-o", jsonl, "--batch-rows", "2"])
    checks.expect(done.returncode == 0, "converter exits 0", f"exit {done.returncode}: {done.stderr.decode()}")
    data = open(jsonl, "rb").read() if os.path.exists(jsonl) else b""
    lines = data.decode("utf-8").split("\n")
    checks.expect(lines[-1] == "", "output ends with a newline")
    records = [json.loads(line) for line in lines[:-1]]
    checks.expect([r.get("text") for r in records] == expected,
                  f"{len(expected)} documents in file-name and row order, text unchanged")
    checks.expect(all(set(r) == {"text"} for r in records), "each line holds only the field 'text'")
    checks.expect("東京".encode("utf-8") in data and b"\\u" not in data, "UTF-8 written as is, not \\u-escaped")
    checks.expect(b"3 null or empty rows skipped" in done.stderr, "the summary counts the 3 skipped rows",
                  done.stderr.decode())
    checks.expect(not [n for n in os.listdir(args.work) if n.endswith(".tmp")], "no temporary file left")

    done = run(convert + [folder, "-o", "-", "--quiet"])
    checks.expect(done.returncode == 0 and done.stdout == data, "-o - writes the same bytes to stdout")
    checks.expect(done.stderr == b"", "--quiet keeps stderr empty")
    done = run(convert + [other, "--column", "content", "-o", "-"])
    checks.expect(done.stdout == b'{"text": "only this"}\n', "--column names another text column")

    # Errors, before any output is written.
    missing = os.path.join(args.work, "missing-column.jsonl")
    done = run(convert + [other, "-o", missing])
    stderr = done.stderr.decode()
    checks.expect(done.returncode == 3 and "content.parquet: no column 'text'" in stderr and "content, url" in stderr,
                  "a missing column names the file and the columns it has", stderr)
    checks.expect(not os.path.exists(missing), "no output after an error")
    done = run(convert + [folder, "-o", jsonl])
    checks.expect(done.returncode == 4 and b"exists" in done.stderr, "an existing output is refused without --force",
                  done.stderr.decode())
    done = run(convert + [folder, "-o", jsonl, "--force", "--quiet"])
    checks.expect(done.returncode == 0 and open(jsonl, "rb").read() == data, "--force overwrites it")
    done = run(convert + [os.path.join(args.work, "not.parquet"), "-o", "-"])
    checks.expect(done.returncode == 3 and b"not.parquet: not a readable Parquet file" in done.stderr,
                  "a file that is not Parquet is named", done.stderr.decode())
    done = run(convert + [os.path.join(args.work, "nowhere"), "-o", "-"])
    checks.expect(done.returncode == 3 and b"nowhere: no such file or directory" in done.stderr,
                  "a missing input is named", done.stderr.decode())

    # sg-tokenize reads the JSON Lines: one document per line.
    tokens = os.path.join(args.work, "tokens.h5")
    command = [args.sg_tokenize, jsonl, "--val-tokens", "8", "-o", tokens, "--force", "--threads", "1"]
    if args.vocab:
        command += ["--vocab", args.vocab]
    done = run(command)
    stderr = done.stderr.decode()
    checks.expect(done.returncode == 0, "sg-tokenize reads the JSON Lines", stderr)
    try:
        import h5py
    except ImportError:
        h5py = None
    if h5py is not None and os.path.exists(tokens):
        with h5py.File(tokens, "r") as f:
            documents = int(f.attrs["documents"])
            stream = list(f["tokens/val"][:]) + list(f["tokens/train"][:])
        checks.expect(documents == len(expected), f"token file holds {len(expected)} documents (h5py: {documents})")
        checks.expect(stream.count(END_OF_TEXT) == len(expected) and stream[-1] == END_OF_TEXT,
                      "one end-of-text token after each document")
    else:
        found = re.search(r"sg-tokenize: (\d+) documents", stderr)
        checks.expect(found is not None and int(found.group(1)) == len(expected),
                      f"sg-tokenize reports {len(expected)} documents (no h5py: from its summary line)")

    print(f"{checks.failed} checks failed" if checks.failed else "all checks passed")
    if not checks.failed:
        shutil.rmtree(args.work, ignore_errors=True)
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
