#!/usr/bin/env python3
"""parquet_to_jsonl.py — Parquet files (FineWeb-Edu sample-10BT) to JSON Lines for sg-tokenize.

Reads one or more .parquet files, or directories of them (searched recursively, taken in name
order), and writes one JSON object per document, {"text": ...}, one per line, UTF-8 (not
ASCII-escaped), to a file or to stdout ('-'). Only the text column is read, one record batch at a
time, so memory stays bounded whatever the size of the files. Rows whose text is null or the
empty string are skipped (an empty document would add nothing but an end-of-text token) and
counted in the summary. Progress (files, rows, MB written, rows/s) goes to stderr.

With --all-columns every column of every row is written, {"column": value, ...} (lists, numbers
and strings as JSON), and no row is skipped: the form of the zero-shot task files (HellaSwag's
activity_label/ctx_a/ctx_b/endings/label; WikiText's line rows, whose empty rows stand for the
raw file's blank lines).

The output is written to a temporary name beside it and renamed into place at the end, so an
interrupted conversion never leaves a truncated file under the final name; an existing output
is refused without --force.

Exit codes: 0 done; 2 bad usage; 3 unreadable input, not Parquet, or no such text column (the
file and the columns it has are named); 4 output exists (without --force) or cannot be written.

Run it with the project's Python (pyarrow) from the repository root:
  ~/.cache/sinkgate/venv-torch-2.11.0/bin/python pipelines/parquet_to_jsonl.py \\
      fineweb-edu/sample/10BT -o data/fineweb-edu-10BT.jsonl
  ... pipelines/parquet_to_jsonl.py part-000.parquet part-001.parquet -o - | head -c 1000
  ... pipelines/parquet_to_jsonl.py data.parquet --column content -o data.jsonl --force
  ... pipelines/parquet_to_jsonl.py hellaswag/data/validation-00000-of-00001.parquet --all-columns \
      -o data/hellaswag_val.jsonl
"""
import argparse
import json
import os
import sys
import tempfile
import time

EXIT_INPUT, EXIT_OUTPUT = 3, 4  # bad usage: 2, from argparse


class Failure(Exception):
    def __init__(self, message, code, hint=None):
        super().__init__(message)
        self.code, self.hint = code, hint


def find_files(inputs):
    """The Parquet files named or found (recursively, in name order) under the directories given."""
    files = []
    for path in inputs:
        if os.path.isdir(path):
            found = sorted(os.path.join(root, name) for root, _, names in os.walk(path)
                           for name in names if name.endswith(".parquet"))
            if not found:
                raise Failure(f"{path}: directory holds no .parquet files", EXIT_INPUT)
            files += found
        elif os.path.isfile(path):
            files.append(path)
        else:
            raise Failure(f"{path}: no such file or directory", EXIT_INPUT)
    return files


def is_text(arrow_type):
    import pyarrow as pa
    return pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type) or (
        hasattr(pa.types, "is_string_view") and pa.types.is_string_view(arrow_type))


def open_parquet(path, column):
    """The file, checked to hold the text column (column None: any columns)."""
    import pyarrow.parquet as pq
    try:
        parquet = pq.ParquetFile(path)
    except Exception as error:  # pyarrow raises ArrowInvalid, OSError, … for a file that is not Parquet
        raise Failure(f"{path}: not a readable Parquet file ({error})", EXIT_INPUT)
    if column is None:
        return parquet
    names = parquet.schema_arrow.names
    if column not in names:
        raise Failure(f"{path}: no column '{column}'; its columns are: {', '.join(names)}", EXIT_INPUT,
                      "name the text column with --column")
    kind = parquet.schema_arrow.field(column).type
    if not is_text(kind):
        raise Failure(f"{path}: column '{column}' holds {kind}, not text", EXIT_INPUT,
                      "name the text column with --column")
    return parquet


class Progress:
    def __init__(self, files, quiet):
        self.files, self.quiet = files, quiet
        self.start = self.last = time.monotonic()
        self.rows = self.documents = self.skipped = self.bytes = self.reported = 0

    def report(self, file_index, final=False):
        """A progress line at most every two seconds, and a last one at the end."""
        now = time.monotonic()
        if self.quiet or (not final and now - self.last < 2.0) or (final and self.reported == self.rows):
            return
        self.last, self.reported = now, self.rows
        rate = self.rows / max(now - self.start, 1e-9)
        print(f"parquet_to_jsonl: file {file_index}/{len(self.files)}, {self.rows} rows, {self.documents} documents, "
              f"{self.skipped} skipped, {self.bytes / 1e6:.1f} MB written, {rate:.0f} rows/s, "
              f"{self.bytes / 1e6 / max(now - self.start, 1e-9):.1f} MB/s",
              file=sys.stderr, flush=True)


def text_batches(path, column, batch_rows):
    """The text column of one file, a list of str or None per record batch."""
    parquet = open_parquet(path, column)
    batches = parquet.iter_batches(batch_size=batch_rows, columns=[column])
    while True:
        try:
            batch = next(batches, None)
        except Exception as error:  # a corrupt page, a truncated file, …
            raise Failure(f"{path}: cannot read ({error})", EXIT_INPUT)
        if batch is None:
            return
        yield batch.column(0).to_pylist()


def row_batches(path, batch_rows):
    """Every column of one file, a list of dicts per record batch."""
    parquet = open_parquet(path, None)
    batches = parquet.iter_batches(batch_size=batch_rows)
    while True:
        try:
            batch = next(batches, None)
        except Exception as error:
            raise Failure(f"{path}: cannot read ({error})", EXIT_INPUT)
        if batch is None:
            return
        yield batch.to_pylist()


def convert(files, column, out, batch_rows, progress, all_columns=False):
    """Writes the documents of every file to the binary stream out."""
    if all_columns:
        for index, path in enumerate(files, 1):
            for rows in row_batches(path, batch_rows):
                data = "".join(json.dumps(row, ensure_ascii=False, default=str) + "\n" for row in rows).encode("utf-8")
                progress.rows += len(rows)
                progress.documents += len(rows)
                out.write(data)
                progress.bytes += len(data)
                progress.report(index)
        progress.report(len(files), final=True)
        return
    for index, path in enumerate(files, 1):
        for texts in text_batches(path, column, batch_rows):
            lines = [json.dumps({"text": text}, ensure_ascii=False) for text in texts if text]  # not None, not ""
            progress.rows += len(texts)
            progress.documents += len(lines)
            progress.skipped += len(texts) - len(lines)
            if lines:
                data = ("\n".join(lines) + "\n").encode("utf-8")
                out.write(data)
                progress.bytes += len(data)
            progress.report(index)
    progress.report(len(files), final=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("inputs", nargs="+", help="Parquet files or directories of them")
    parser.add_argument("-o", "--output", required=True, help="JSON Lines output ('-': stdout)")
    parser.add_argument("--column", default="text", help="the column holding each document's text (default: %(default)s)")
    parser.add_argument("--all-columns", action="store_true",
                        help="write every column of every row (no row skipped): the zero-shot task files")
    parser.add_argument("--force", action="store_true", help="overwrite an existing output")
    parser.add_argument("--batch-rows", type=int, default=8192, help="rows read at a time, which bounds memory (default: %(default)s)")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    args = parser.parse_args()
    if args.batch_rows < 1:
        parser.error("--batch-rows must be >= 1")

    temporary = None
    try:
        files = find_files(args.inputs)
        for path in files:  # check every input before writing anything
            open_parquet(path, None if args.all_columns else args.column)
        progress = Progress(files, args.quiet)
        if args.output == "-":
            convert(files, args.column, sys.stdout.buffer, args.batch_rows, progress, args.all_columns)
            sys.stdout.buffer.flush()
        else:
            if os.path.exists(args.output) and not args.force:
                raise Failure(f"{args.output}: exists", EXIT_OUTPUT, "give --force to overwrite it")
            folder = os.path.dirname(os.path.abspath(args.output))
            try:
                descriptor, temporary = tempfile.mkstemp(prefix=os.path.basename(args.output) + ".", suffix=".tmp",
                                                         dir=folder)
            except OSError as error:
                raise Failure(f"{args.output}: cannot write ({error.strerror})", EXIT_OUTPUT)
            with os.fdopen(descriptor, "wb", buffering=1 << 20) as out:
                convert(files, args.column, out, args.batch_rows, progress, args.all_columns)
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(temporary, 0o666 & ~umask)
            os.replace(temporary, args.output)
            temporary = None
        if not args.quiet:
            print(f"parquet_to_jsonl: {len(files)} files, {progress.documents} documents "
                  f"({progress.skipped} null or empty rows skipped) -> {args.output}", file=sys.stderr)
    except Failure as failure:
        print(f"parquet_to_jsonl: error: {failure}", file=sys.stderr)
        if failure.hint:
            print(f"hint: {failure.hint}", file=sys.stderr)
        return failure.code
    except BrokenPipeError:  # e.g. '-o - | head': the reader has gone, which is not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as error:  # writing: a full disk, a lost mount, …
        print(f"parquet_to_jsonl: error: cannot write {args.output}: {error.strerror or error}", file=sys.stderr)
        return EXIT_OUTPUT
    finally:
        if temporary and os.path.exists(temporary):
            os.remove(temporary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
