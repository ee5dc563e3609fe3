#!/usr/bin/env python3
"""sigterm_after_finish.py — SIGTERM delivered after sg-train's last checkpoint: exit 0, never 143.

A cluster's time limit can fall after a run's last step and checkpoint, while the process is on its
way out. The run is finished, so sg-train must exit 0 (or 6, a stop after a checkpoint); the
signal's default action (exit 143) would make a scheduler report a finished run as failed.

The moment is made certain, not raced: sg-train's stderr is a pipe this script reads until the
last step's progress line, then fills to the brim through a second, non-blocking description of
the same pipe. sg-train's next line to stderr — the "finished" line, written after the final
checkpoint — then blocks. Once the run file says finished, the script sends SIGTERM, drains the
pipe and takes the exit status.

Usage: sigterm_after_finish.py SG_TRAIN TOKENS WORK_DIR
Prints "exit N" and "finished line after the signal"; exit 0 when sg-train exited 0 or 6.
"""
import os
import shutil
import signal
import subprocess
import sys
import time

import h5py


def finished(path):
    try:
        with h5py.File(path, "r") as f:
            return int(f["state"].attrs["finished"]) == 1
    except (OSError, KeyError):
        return False


def main():
    train, tokens, work = sys.argv[1:4]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    run = os.path.join(work, "run.h5")
    # Two steps; the final validation (40 batches) keeps the run busy after the last progress line
    # long enough for the pipe to be filled before the "finished" line.
    argv = [train, "--tokens", tokens, "--tier", "tiny", "--set", "iterations=2", "--set", "warmup=0",
            "--set", "eval_interval=2", "--set", "eval_batches=1", "--set", "final_eval_batches=40",
            "--set", "block_size=16", "--threads", "1", "--log-interval", "0", "-o", run]
    read_end, write_end = os.pipe()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=write_end)
    os.close(write_end)
    seen = b""
    # The whole line: stderr is unbuffered, and its newline is a write of its own.
    while b"step 2/2" not in seen or b"\n" not in seen[seen.index(b"step 2/2"):]:
        chunk = os.read(read_end, 4096)
        if not chunk:
            print(seen.decode(errors="replace"))
            sys.exit("sg-train ended before its last step")
        seen += chunk
    if b"finished at step" in seen:
        sys.exit("sg-train wrote its finished line before the pipe was filled: raise final_eval_batches")
    # Fill the pipe through a description of its own (O_NONBLOCK there leaves sg-train's blocking).
    filler = os.open(f"/proc/{process.pid}/fd/2", os.O_WRONLY | os.O_NONBLOCK)
    filled = 0
    try:
        while True:
            filled += os.write(filler, b"#" * 4096)
    except BlockingIOError:
        pass
    while True:
        try:
            filled += os.write(filler, b"#")
        except BlockingIOError:
            break
    os.close(filler)
    deadline = time.monotonic() + 300
    while not finished(run):
        if process.poll() is not None or time.monotonic() > deadline:
            sys.exit(f"sg-train exited ({process.returncode}) or timed out before its run file said finished")
        time.sleep(0.1)
    time.sleep(0.5)  # on its way out: blocked on the finished line
    if process.poll() is not None:
        sys.exit(f"sg-train exited ({process.returncode}) before the signal: the pipe did not hold it")
    process.send_signal(signal.SIGTERM)
    rest = b""
    while True:
        chunk = os.read(read_end, 65536)
        if not chunk:
            break
        rest += chunk
    code = process.wait()
    print(f"exit {code if code >= 0 else 128 - code}")
    if b"finished at step 2" in rest.replace(b"#", b""):
        print("finished line after the signal")
    return 0 if code in (0, 6) else 1


if __name__ == "__main__":
    sys.exit(main())
