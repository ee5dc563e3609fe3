#!/usr/bin/env python3
"""bench_startup.py — start-up time and peak resident memory of the sinkgate tools.

For each tool: `--help`, and one real small call (sg-tabulate on a result table, sg-pairdiff on the
paper's Table 5 CSV, sg-bpe on a paragraph, sg-tokenize on a page of text, sg-info on a run file:
--run FILE, else one this build's sg-train makes, tier tiny, two steps, where it is built). Each command runs
--runs times (default 10); the script prints the median wall time and the median peak resident
set (ru_maxrss of the child, from wait4), with the machine's CPU model.

With --reference OTHER_BIN (the bin folder of another build, e.g. the commit before a change),
both builds run interleaved, command by command and run by run, and the ratios reference / this
are printed: the figure to quote, since both sides share the machine's state of the moment.

--tools sg-info,... measures those tools' commands alone (a reference folder then needs only them).

Usage:
  python3 pipelines/bench_startup.py --bin build/bin
  python3 pipelines/bench_startup.py --bin build/bin --reference /tmp/old/build/bin --runs 10
  python3 pipelines/bench_startup.py --bin build/bin --reference /tmp/old/bin --tools sg-info
"""
import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLE5 = os.path.join(ROOT, "tests", "fixtures", "paper_table5.csv")
from default_corpus import default_corpus  # noqa: E402

TEXT = os.path.join(default_corpus(), "tutorial", "introduction.rst.txt")


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def measure(argv, cwd):
    """One run: (wall seconds, peak RSS in MB). Output is discarded; a failure stops the script."""
    with open(os.devnull, "wb") as null:
        start = time.perf_counter()
        child = subprocess.Popen(argv, cwd=cwd, stdout=null, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        err = child.stderr.read().decode(errors="replace")
        child.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"bench_startup: {' '.join(argv)} exited {code}:\n{err}")
    return wall, usage.ru_maxrss / 1024.0


def make_run(bin_dir, work):
    """A tiny run file made by this build's sg-tokenize and sg-train, or None where they are not built."""
    b = lambda tool: os.path.join(bin_dir, tool)
    if not (os.path.exists(b("sg-train")) and os.path.exists(b("sg-tokenize"))):
        return None
    tokens, run = os.path.join(work, "run-tokens.h5"), os.path.join(work, "run.h5")
    subprocess.run([b("sg-tokenize"), TEXT, "--val-tokens", "2000", "--log-level", "quiet", "-o", tokens], check=True)
    subprocess.run([b("sg-train"), "--tokens", tokens, "--tier", "tiny", "--set", "iterations=2", "--set", "warmup=1",
                    "--set", "eval_batches=1", "--set", "final_eval_batches=1", "--set", "block_size=32",
                    "--log-level", "quiet", "-o", run], check=True)
    return run


def commands(bin_dir, work, tools, run):
    """(label, argv) for one build, of the tools listed; inputs it needs are made in `work`."""
    b = lambda tool: os.path.join(bin_dir, tool)
    out = [(f"{tool} --help", [b(tool), "--help"])
           for tool in ("sg-tokenize", "sg-bpe", "sg-pairdiff", "sg-tabulate", "sg-info") if tool in tools]
    if "sg-tabulate" in tools:
        table = os.path.join(work, "table5.h5")
        if not os.path.exists(table):
            subprocess.run([b("sg-pairdiff"), TABLE5, "--ref", "baseline", "--log-level", "quiet", "-o", table],
                           check=True)
        out.append(("sg-tabulate table5.h5",
                    [b("sg-tabulate"), table, "--rows", "tier,arm", "--cols", "statistic", "--cell", "mean"]))
    if "sg-pairdiff" in tools:
        out.append(("sg-pairdiff table5.csv", [b("sg-pairdiff"), TABLE5, "--ref", "baseline", "--log-level", "quiet",
                                               "-o", os.path.join(work, "pairs.h5"), "--force"]))
    if "sg-bpe" in tools:
        out.append(("sg-bpe --count page", [b("sg-bpe"), "--count", "--threads", "1", TEXT]))
    if "sg-tokenize" in tools:
        out.append(("sg-tokenize page", [b("sg-tokenize"), TEXT, "--val-tokens", "100", "--threads", "1",
                                         "--log-level", "quiet", "-o", os.path.join(work, "tokens.h5"), "--force"]))
    if "sg-info" in tools and run:
        out.append(("sg-info run.h5", [b("sg-info"), run]))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"), help="bin folder of the build to measure")
    parser.add_argument("--reference", help="bin folder of a reference build, run interleaved")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--tools", default="sg-tokenize,sg-bpe,sg-pairdiff,sg-tabulate,sg-info",
                        help="comma-separated tools whose commands run (default: the tools that need no model)")
    parser.add_argument("--run", help="the run file sg-info describes (default: one this build makes)")
    args = parser.parse_args()
    tools = args.tools.split(",")
    builds = [("this", os.path.abspath(args.bin))]
    if args.reference:
        builds.append(("reference", os.path.abspath(args.reference)))
    work = tempfile.mkdtemp(prefix="sg-bench-startup-")
    try:
        run = os.path.abspath(args.run) if args.run else (make_run(builds[0][1], work) if "sg-info" in tools else None)
        sets = {}
        for name, bin_dir in builds:
            folder = os.path.join(work, name)
            os.makedirs(folder)
            sets[name] = (folder, commands(bin_dir, folder, tools, run))
        labels = [label for label, _ in sets["this"][1]]
        results = {name: {label: [] for label in labels} for name, _ in builds}
        for label_index, label in enumerate(labels):
            for name, _ in builds:  # one warm-up run each (page cache, dynamic loader)
                measure(sets[name][1][label_index][1], sets[name][0])
            for _ in range(args.runs):
                for name, _ in builds:
                    results[name][label].append(measure(sets[name][1][label_index][1], sets[name][0]))
        print(f"CPU: {cpu_model()} ({os.cpu_count()} logical CPUs); median of {args.runs} runs")
        header = f"{'command':28s} {'ms':>8s} {'MB':>7s}"
        if args.reference:
            header += f" {'ref ms':>8s} {'ref MB':>7s} {'time ×':>7s} {'mem ×':>7s}"
        print(header)
        for label in labels:
            wall = statistics.median(w for w, _ in results["this"][label]) * 1000
            rss = statistics.median(r for _, r in results["this"][label])
            line = f"{label:28s} {wall:8.1f} {rss:7.1f}"
            if args.reference:
                ref_wall = statistics.median(w for w, _ in results["reference"][label]) * 1000
                ref_rss = statistics.median(r for _, r in results["reference"][label])
                line += f" {ref_wall:8.1f} {ref_rss:7.1f} {ref_wall / wall:7.1f} {ref_rss / rss:7.1f}"
            print(line)
        if args.reference:
            print("time × and mem ×: the reference's median over this build's (above 1: this build is faster, smaller)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
