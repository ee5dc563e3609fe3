#!/usr/bin/env python3
"""crash_consistency.py — sg-train killed by SIGKILL at random moments, resumed, ends as if never killed.

Trains a reference run without interruption. Then, for each of N trials, trains the same run into
a fresh folder but kills it with SIGKILL at a seeded random moment, and again after every resume,
KILLS times in all, before letting it finish. After every kill the output is absent (killed before
the first checkpoint landed) or a complete run file (sg-info reads it), never a half-written one.
The finished run must equal the reference bitwise in everything that does not measure time: every
parameter, every AdamW moment and step, the state (step, data position, tokens seen, RNG), and the
curves (steps, losses, learning rates, validation). Once the output has been written again no
temporary file (`NAME.tmp.PID`) is left beside it.

With --corpus DIR it also kills sg-tokenize of DIR at random moments (--tokenize-kills times),
then tokenises DIR into the same output to the end: the output must be a valid token file with no
temporary file beside it.

Usage:
  crash_consistency.py BIN_DIR TOKENS WORK_DIR [--trials N] [--kills K] [--seed S]
                       [--corpus DIR --tokenize-kills K]

Prints one line per trial and the totals; exit 0 when every trial passed.
"""
import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import time

import h5py
import numpy as np

# Parts of a run file that measure time, not the run.
TIMING = {"curves/tokens_per_second"}
TIMING_ATTRIBUTES = {"created", "command_line"}


def train_command(bin_dir, tokens, output, resume):
    command = [os.path.join(bin_dir, "sg-train"), "--tokens", tokens, "-o", output, "--threads", "1",
               "--log-level", "quiet"]
    if resume:
        return command + ["--resume"]
    return command + ["--tier", "tiny", "--arm", "combo2", "--seed", "5", "--set", "iterations=24",
                      "--set", "warmup=2", "--set", "checkpoint_interval=3", "--set", "eval_interval=6",
                      "--set", "eval_batches=1", "--set", "final_eval_batches=2", "--set", "micro_batch=2"]


def contents(path):
    """{name: value} of every dataset and attribute that does not measure time."""
    out = {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            for key, value in obj.attrs.items():
                # A timing dataset's checksum (sg_crc32c) follows its timings.
                if key not in TIMING_ATTRIBUTES and not (name in TIMING and key == "sg_crc32c"):
                    out[f"{name}@{key}"] = np.asarray(value).tobytes()
            if isinstance(obj, h5py.Dataset) and name not in TIMING:
                out[name] = obj[()].tobytes() if obj.shape != (0,) else b""
        visit("/", f)
        f.visititems(visit)
    return out


def differences(a, b):
    names = sorted(set(a) | set(b))
    return [n for n in names if a.get(n) != b.get(n)]


def valid_run_file(bin_dir, path):
    """Whether sg-info reads `path` (a run file, or any sinkgate file) without an error."""
    done = subprocess.run([os.path.join(bin_dir, "sg-info"), path], capture_output=True)
    return done.returncode == 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("bin_dir")
    parser.add_argument("tokens")
    parser.add_argument("work")
    parser.add_argument("--trials", type=int, default=int(os.environ.get("SINKGATE_CRASH_TRIALS", "6")))
    parser.add_argument("--kills", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--corpus", default="")
    parser.add_argument("--tokenize-kills", type=int, default=10)
    args = parser.parse_args()
    bin_dir = os.path.abspath(args.bin_dir)
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)

    reference = os.path.join(args.work, "reference.h5")
    start = time.monotonic()
    done = subprocess.run(train_command(bin_dir, args.tokens, reference, resume=False), capture_output=True)
    if done.returncode != 0:
        sys.exit(f"crash_consistency: the reference run failed:\n{done.stderr.decode()}")
    span = time.monotonic() - start
    expected = contents(reference)

    rng = random.Random(args.seed)
    kills = valid = absent = invalid = identical = temporaries = 0
    failures = []
    for trial in range(args.trials):
        folder = os.path.join(args.work, f"trial-{trial}")
        os.makedirs(folder)
        output = os.path.join(folder, "run.h5")
        for _ in range(args.kills):
            resume = os.path.exists(output)
            process = subprocess.Popen(train_command(bin_dir, args.tokens, output, resume),
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(rng.uniform(0.05, 0.8 * span))
            if process.poll() is None:
                process.send_signal(signal.SIGKILL)
                kills += 1
            process.wait()
            if not os.path.exists(output):
                absent += 1
            elif valid_run_file(bin_dir, output):
                valid += 1
            else:
                invalid += 1
                failures.append(f"trial {trial}: after a kill, {output} is not a valid run file")
        resume = os.path.exists(output)
        done = subprocess.run(train_command(bin_dir, args.tokens, output, resume), capture_output=True)
        if done.returncode != 0:
            failures.append(f"trial {trial}: the final {'resume' if resume else 'run'} failed: {done.stderr.decode()}")
            continue
        left = [name for name in os.listdir(folder) if ".tmp." in name]
        temporaries += len(left)
        if left:
            failures.append(f"trial {trial}: temporary files left: {left}")
        differ = differences(expected, contents(output))
        if differ:
            failures.append(f"trial {trial}: differs from the uninterrupted run in {differ[:5]}")
        else:
            identical += 1
        print(f"crash_consistency: trial {trial}: {'identical' if not differ else 'DIFFERENT'}", flush=True)
    if args.corpus:
        folder = os.path.join(args.work, "tokenize")
        os.makedirs(folder)
        output = os.path.join(folder, "tokens.h5")
        command = [os.path.join(bin_dir, "sg-tokenize"), args.corpus, "-o", output, "--force", "--log-level", "quiet"]
        start = time.monotonic()
        subprocess.run(command, check=True, capture_output=True)
        span = time.monotonic() - start
        os.remove(output)
        tokenize_kills = 0
        for _ in range(args.tokenize_kills):
            process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(rng.uniform(0.0, span))
            if process.poll() is None:
                process.send_signal(signal.SIGKILL)
                tokenize_kills += 1
            process.wait()
            if os.path.exists(output) and not valid_run_file(bin_dir, output):
                failures.append(f"sg-tokenize: after a kill, {output} is not a valid token file")
        subprocess.run(command, check=True, capture_output=True)
        left = [name for name in os.listdir(folder) if ".tmp." in name]
        temporaries += len(left)
        if left:
            failures.append(f"sg-tokenize: temporary files left after the output was written again: {left}")
        if not valid_run_file(bin_dir, output):
            failures.append(f"sg-tokenize: the final {output} is not a valid token file")
        print(f"crash_consistency: sg-tokenize killed {tokenize_kills} times, then written to the end: "
              f"{len(left)} temporary files left")
    print(f"crash_consistency: {kills} kills; after them {valid} valid run files, {absent} absent, {invalid} invalid; "
          f"{identical} of {args.trials} finished runs bitwise identical to the uninterrupted one; "
          f"{temporaries} temporary files left")
    for failure in failures:
        print("FAIL " + failure)
    if failures:
        return 1
    print("crash_consistency: every killed run resumed to the uninterrupted result")
    return 0


if __name__ == "__main__":
    sys.exit(main())
