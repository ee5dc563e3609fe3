#!/usr/bin/env python3
"""bench_tokenizer.py — single-core GPT-2 BPE throughput: sinkgate's sg-bpe against tiktoken.

Both encode the same text in the same run, on one thread each: sg-bpe --count --threads 1 as a
subprocess (timed from outside, so nothing is scraped from its log), tiktoken's gpt2
encode_ordinary in this process. The token counts must agree (exit 1 if not). Printed: MB/s
(10^6 bytes of UTF-8 per second) of both and their ratio, the best of --repeat interleaved runs,
by wall-clock time and by CPU time (user + system; on a shared machine the fairer per-core figure).
sg-bpe is timed end to end (process start, libtorch loading, vocabulary, reading, encoding) and
net of the fixed cost measured on an empty input (the encoding rate).

Run it with the project's Python (it needs tiktoken), from the repository root:
  ~/.cache/sinkgate/venv-torch-2.11.0/bin/python pipelines/bench_tokenizer.py
  ... pipelines/bench_tokenizer.py --text corpus.txt --repeat 5 --sg-bpe build/bin/sg-bpe
"""
import argparse
import glob
import os
import resource
import subprocess
import sys
import tempfile
import time

import tiktoken
from tiktoken.load import load_tiktoken_bpe

GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
from default_corpus import default_corpus  # noqa: E402

DEFAULT_TEXT = os.path.join(default_corpus(), "**", "*.rst.txt")


def default_vocab():
    if os.environ.get("SINKGATE_VOCAB"):
        return os.environ["SINKGATE_VOCAB"]
    cache = os.environ.get("SINKGATE_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "sinkgate")
    return os.path.join(cache, "gpt2.tiktoken")


class Timing:
    """Best wall-clock and CPU seconds over the runs recorded."""

    def __init__(self):
        self.wall = self.cpu = float("inf")

    def record(self, wall, cpu):
        self.wall, self.cpu = min(self.wall, wall), min(self.cpu, cpu)


def time_tiktoken(encoding, text, timing):
    wall, cpu = time.perf_counter(), time.process_time()
    ids = encoding.encode_ordinary(text)
    timing.record(time.perf_counter() - wall, time.process_time() - cpu)
    return len(ids)


def time_sg_bpe(sg_bpe, vocab, path, timing):
    def children_cpu():
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime
    wall, cpu = time.perf_counter(), children_cpu()
    done = subprocess.run([sg_bpe, "--count", "--threads", "1", "--log-level", "quiet", "--vocab", vocab, path],
                          check=True, capture_output=True, text=True)
    timing.record(time.perf_counter() - wall, children_cpu() - cpu)
    return int(done.stdout.split()[0])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--text", nargs="+", default=[DEFAULT_TEXT],
                        help="text files or glob patterns, concatenated in sorted order (default: %(default)s)")
    parser.add_argument("--vocab", default=default_vocab(), help="gpt2.tiktoken (default: %(default)s)")
    parser.add_argument("--sg-bpe", default="build/bin/sg-bpe", help="the sg-bpe executable (default: %(default)s)")
    parser.add_argument("--repeat", type=int, default=5, help="runs of each, the best counts (default: %(default)s)")
    args = parser.parse_args()

    files = sorted({f for pattern in args.text for f in glob.glob(pattern, recursive=True)})
    if not files:
        sys.exit(f"bench_tokenizer: no text files match {args.text}")
    data = b"".join(open(f, "rb").read() for f in files)
    text = data.decode("utf-8", errors="replace")
    megabytes = len(text.encode("utf-8")) / 1e6

    encoding = tiktoken.Encoding(name="gpt2", pat_str=GPT2_PATTERN, mergeable_ranks=load_tiktoken_bpe(args.vocab),
                                 special_tokens={"<|endoftext|>": 50256})
    encoding.encode_ordinary(text[:100000])  # warm up
    tiktoken_time, fixed_time, sg_time = Timing(), Timing(), Timing()
    with tempfile.TemporaryDirectory() as folder:
        corpus, empty = os.path.join(folder, "corpus.txt"), os.path.join(folder, "empty.txt")
        with open(corpus, "wb") as f:
            f.write(text.encode("utf-8"))
        open(empty, "wb").close()
        for _ in range(args.repeat):  # interleaved, so that both see the same load on a shared machine
            tiktoken_count = time_tiktoken(encoding, text, tiktoken_time)
            time_sg_bpe(args.sg_bpe, args.vocab, empty, fixed_time)
            sg_count = time_sg_bpe(args.sg_bpe, args.vocab, corpus, sg_time)

    rate = lambda seconds: megabytes / max(seconds, 1e-9)
    net_wall, net_cpu = sg_time.wall - fixed_time.wall, sg_time.cpu - fixed_time.cpu
    print(f"text: {len(files)} files, {megabytes:.2f} MB, {tiktoken_count} tokens (tiktoken {tiktoken.__version__}), "
          f"best of {args.repeat}")
    print(f"{'MB/s, one thread':40} {'wall':>8} {'CPU':>8}")
    print(f"{'tiktoken encode_ordinary':40} {rate(tiktoken_time.wall):8.2f} {rate(tiktoken_time.cpu):8.2f}")
    print(f"{'sg-bpe --count --threads 1, end to end':40} {rate(sg_time.wall):8.2f} {rate(sg_time.cpu):8.2f}")
    print(f"{'sg-bpe, net of start-up on empty input':40} {rate(net_wall):8.2f} {rate(net_cpu):8.2f}"
          f"   (start-up {fixed_time.wall:.3f} s wall, {fixed_time.cpu:.3f} s CPU)")
    print(f"{'ratio sinkgate / tiktoken, end to end':40} {tiktoken_time.wall / sg_time.wall:8.2f} "
          f"{tiktoken_time.cpu / sg_time.cpu:8.2f}")
    print(f"{'ratio sinkgate / tiktoken, net':40} {tiktoken_time.wall / max(net_wall, 1e-9):8.2f} "
          f"{tiktoken_time.cpu / max(net_cpu, 1e-9):8.2f}")
    if sg_count != tiktoken_count:
        print(f"bench_tokenizer: token counts differ: sg-bpe {sg_count}, tiktoken {tiktoken_count}", file=sys.stderr)
        return 1
    print(f"token counts agree: {sg_count}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
