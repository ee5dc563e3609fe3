"""config_fields.py BIN TOKENS CASES — the bad configuration values of CASES
(tests/fixtures/bad_fields.tsv: zero, negative, non-divisible and huge values of every field)
through every tool that takes --tier, --config and --set: sg-train, sg-arms and sg-info --tier.
Each must exit 2 naming the field, before any output (sg-arms prints no header, sg-train leaves
no run file). The tools validate before any model is built, so each case costs a process start.
Prints "config fields: ok" when every case passes.
"""
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

BIN, TOKENS, CASES = sys.argv[1], sys.argv[2], sys.argv[3]
work = tempfile.mkdtemp(prefix="sg-config-fields-")
cases = []
with open(CASES) as table:
    for line in table:
        line = line.rstrip("\n")
        if line and not line.startswith("#"):
            cases.append(tuple(line.split("\t")))


def command(tool, field, value, index):
    base = ["--tier", "tiny", "--set", f"{field}={value}"]
    if tool == "sg-train":
        return [tool, "--tokens", TOKENS, *base, "--threads", "1", "-o", os.path.join(work, f"run{index}.h5")]
    if tool == "sg-arms":
        return [tool, *base, "--arms", "baseline", "--threads", "1"]
    return [tool, *base]


def run(job):
    tool, index, (field, value) = job
    args = command(tool, field, value, index)
    done = subprocess.run([os.path.join(BIN, args[0]), *args[1:]], capture_output=True, timeout=60)
    err = done.stderr.decode(errors="replace")
    ok = done.returncode == 2 and field in err and done.stdout == b"" and not os.listdir(work)
    return ok, f"{tool} --set {field}={value}: exit {done.returncode}, stdout {len(done.stdout)} bytes: {err.strip()}"


# sg-info (no LibTorch, a few milliseconds a case) takes every case; sg-arms and sg-train (LibTorch's
# start, about 0.3 s of CPU a case) the first value of every field: every field through every
# tool, every value through configure_run (its unit test takes them all too).
first = [case for i, case in enumerate(cases) if case[0] not in (c[0] for c in cases[:i])]
jobs = [("sg-info", i, case) for i, case in enumerate(cases)]
jobs += [(tool, i, case) for tool in ("sg-arms", "sg-train") for i, case in enumerate(first)]
with ThreadPoolExecutor(max_workers=2) as pool:
    results = list(pool.map(run, jobs))
failures = [detail for ok, detail in results if not ok]
for detail in failures:
    print("FAIL: " + detail)
os.rmdir(work)
print(f"{len(jobs) - len(failures)} of {len(jobs)} cases refused with exit 2 naming the field")
if failures:
    sys.exit(1)
print("config fields: ok")
