#!/usr/bin/env python3
"""One GPU per job, without a GPU: Makefile.experiments under make -j 8 with DEVICE=cuda, a stub
nvidia-smi that lists four GPUs and stand-in sg-* tools that record the CUDA_VISIBLE_DEVICES they
were given, when they started and when they ended, then sleep. Checks, from those records alone:
no two jobs ever held one GPU at the same time, every GPU was used, each job saw exactly the GPUs
it asked for (NPROC of them for a torchrun job), CUDA_VISIBLE_DEVICES narrows the list, LAUNCH
and DEVICE=cuda:N assign nothing, and a job killed with SIGKILL leaves its GPU free at once.

Usage: gpu_slots.py REPO_ROOT WORK_DIR
"""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(sys.argv[1]).resolve()
WORK = Path(sys.argv[2]).resolve()
SLOT = ROOT / "pipelines" / "gpu_slot.sh"
failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
        print("FAILED: " + message)


STAND_IN = r"""#!/usr/bin/env bash
# Records "NAME START END DEVICES" and writes its -o file, as the real tool would.
start=$(date +%s.%N)
out=
while [ $# -gt 0 ]; do [ "$1" = -o ] && out=$2; shift; done
sleep "${STAND_IN_SLEEP:-0.1}"
[ -n "$out" ] && : > "$out"
echo "$(basename "$0") $start $(date +%s.%N) ${CUDA_VISIBLE_DEVICES-unset}" >> "$STAND_IN_LOG"
"""
TORCHRUN = r"""#!/usr/bin/env bash
# torchrun --standalone --no-python --nproc-per-node N COMMAND...: runs COMMAND once.
while [ "${1#--}" != "$1" ]; do case $1 in --nproc-per-node) shift 2;; *) shift;; esac; done
exec "$@"
"""
NVIDIA_SMI = """#!/usr/bin/env bash
[ "$1" = -L ] || exit 1
for i in 0 1 2 3; do echo "GPU $i: NVIDIA H100 80GB HBM3 (UUID: GPU-0000000$i-aaaa-bbbb-cccc-dddddddddddd)"; done
"""


def executable(path, text):
    path.write_text(text)
    path.chmod(0o755)


def setup():
    subprocess.run(["rm", "-rf", str(WORK)], check=True)
    (WORK / "bin").mkdir(parents=True)
    (WORK / "path").mkdir()
    for tool in ("sg-train", "sg-eval", "sg-tabulate"):
        executable(WORK / "bin" / tool, STAND_IN)
    executable(WORK / "path" / "torchrun", TORCHRUN)
    executable(WORK / "path" / "nvidia-smi", NVIDIA_SMI)
    (WORK / "tokens.h5").write_text("")


def run_make(name, extra, env_extra=None, arms="baseline sinklogit projgate", seeds="0 1 2 3"):
    """make -j 8 of the runs and evaluations of ARMS x SEEDS (3 x 4: 24 jobs); returns the records."""
    log = WORK / f"{name}.log"
    env = dict(os.environ, STAND_IN_LOG=str(log), PATH=f"{WORK / 'path'}:{os.environ['PATH']}", GPU_SLOT_POLL="0.05")
    env.pop("CUDA_VISIBLE_DEVICES", None)
    env.update(env_extra or {})
    command = ["make", "-s", "-C", str(WORK), "-f", str(ROOT / "Makefile.experiments"), "-j", "8", "evals",
               f"BIN={WORK / 'bin'}", f"TOKENS={WORK / 'tokens.h5'}", f"OUT={WORK / name}", "TIERS=124M",
               f"ARMS={arms}", f"SEEDS={seeds}", f"TORCHRUN={WORK / 'path' / 'torchrun'}",
               f"GPU_SLOTS={WORK / (name + '-slots')}", *extra]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    check(result.returncode == 0, f"{name}: make exited {result.returncode}: {result.stderr[-2000:]}")
    records = []
    for line in log.read_text().splitlines() if log.exists() else []:
        tool, start, end, devices = line.split()
        records.append((tool, float(start), float(end), devices))
    return records


def check_exclusive(name, records, gpus, per_job):
    check(len(records) == 24, f"{name}: {len(records)} jobs recorded, expected 24")
    used = set()
    for tool, start, end, devices in records:
        mine = devices.split(",")
        want = per_job.get(tool, 1)
        check(len(mine) == want and len(set(mine)) == want and set(mine) <= set(gpus),
              f"{name}: {tool} was given CUDA_VISIBLE_DEVICES={devices}, expected {want} of {gpus}")
        used.update(mine)
    check(used == set(gpus), f"{name}: GPUs used {sorted(used)}, expected every one of {gpus}")
    for i, (tool_a, start_a, end_a, devices_a) in enumerate(records):
        for tool_b, start_b, end_b, devices_b in records[i + 1:]:
            shared = set(devices_a.split(",")) & set(devices_b.split(","))
            overlap = min(end_a, end_b) - max(start_a, start_b)
            check(not shared or overlap <= 0,
                  f"{name}: {tool_a} and {tool_b} held GPU {sorted(shared)} together for {overlap:.3f} s")
    # Eight jobs could run at once; the GPUs allow one a GPU at most.
    events = sorted([(r[1], 1) for r in records] + [(r[2], -1) for r in records])
    running = most = 0
    for _, delta in events:
        running += delta
        most = max(most, running)
    check(most <= len(gpus),
          f"{name}: {most} jobs ran at once on {len(gpus)} GPUs")
    print(f"{name}: {len(records)} jobs, GPUs {sorted(used)}, at most {most} at once")


def killed_job_frees_its_gpu():
    slots = WORK / "kill-slots"
    slots.mkdir()
    env = dict(os.environ, GPU_SLOT_POLL="0.05")
    holder = subprocess.Popen([str(SLOT), "--gpus", "7", "--slots", str(slots), "--", "sleep", "60"], env=env,
                              stderr=subprocess.DEVNULL)
    lock = slots / "gpu-7.lock"

    def held():  # flock -n exits 1 when another process holds the lock (not when it cannot open it)
        return subprocess.run(["flock", "-n", "-E", "75", str(lock), "true"], stderr=subprocess.DEVNULL).returncode == 75

    deadline = time.time() + 20
    while time.time() < deadline and not held():
        time.sleep(0.05)
    check(held(), "kill: the job never took GPU 7")
    # While the job lives, a second job waits for the GPU.
    second = subprocess.Popen([str(SLOT), "--gpus", "7", "--slots", str(slots), "--poll", "0.05", "--", "true"],
                              env=env, stderr=subprocess.PIPE, text=True)
    time.sleep(0.5)
    check(second.poll() is None, "kill: a second job ran on GPU 7 while the first held it")
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    try:
        second.wait(timeout=10)
    except subprocess.TimeoutExpired:
        second.kill()
        check(False, "kill: GPU 7 was still taken 10 s after its job was killed")
    check(second.returncode == 0, f"kill: the second job exited {second.returncode}")
    check("waiting for 1 free GPU" in second.stderr.read(), "kill: the second job did not say it was waiting")
    print("kill: a SIGKILLed job's GPU went to the waiting job")


def usage_errors():
    for args, words in ((["--gpus", "", "--", "true"], "no GPU to share out"),
                        (["--gpus", "0,1", "--count", "3", "--", "true"], "needs 3 GPUs at once"),
                        (["--gpus", "0,0", "--", "true"], "listed twice")):
        result = subprocess.run([str(SLOT), "--slots", str(WORK / "usage-slots"), *args], capture_output=True, text=True)
        check(result.returncode == 2 and words in result.stderr,
              f"usage: {args} exited {result.returncode} with {result.stderr!r}, expected 2 and {words!r}")


def main():
    setup()
    gpus = ["0", "1", "2", "3"]
    # The GPUs from the stub nvidia-smi (GPUS unset).
    check_exclusive("default", run_make("default", ["DEVICE=cuda"]), gpus, {})
    # NPROC=2: each training job holds two GPUs at once; evaluations one.
    check_exclusive("nproc", run_make("nproc", ["DEVICE=cuda", "NPROC=2"]), gpus, {"sg-train": 2})
    # CUDA_VISIBLE_DEVICES narrows the list to its GPUs.
    records = run_make("visible", ["DEVICE=cuda"], {"CUDA_VISIBLE_DEVICES": "2,3"})
    check_exclusive("visible", records, ["2", "3"], {})
    # With a scheduler's LAUNCH, or a pinned cuda:N, make assigns nothing (one run and its evaluation each).
    for name, extra in (("launch", ["DEVICE=cuda", "LAUNCH=env"]), ("pinned", ["DEVICE=cuda:1"]), ("cpu", [])):
        records = run_make(name, extra, arms="baseline", seeds="0")
        check(len(records) == 2 and all(r[3] == "unset" for r in records),
              f"{name}: make assigned GPUs: {sorted(set(r[3] for r in records))}")
    # The dry run of the whole paper shows every device job on a slot.
    dry = subprocess.run(["make", "-n", "-C", str(WORK), "-f", str(ROOT / "Makefile.experiments"), "-j", "4", "all",
                          "DEVICE=cuda", "GPUS=0,1,2,3", f"TOKENS={WORK / 'tokens.h5'}", f"OUT={WORK / 'dry'}"],
                         capture_output=True, text=True, env=dict(os.environ, PATH=f"{WORK / 'path'}:{os.environ['PATH']}"))
    commands = dry.stdout.replace("\\\n", " ").splitlines()  # one line a command
    device_lines = [l for l in commands if "--device cuda" in l]
    check(dry.returncode == 0 and len(device_lines) > 100, f"dry run: exit {dry.returncode}, {len(device_lines)} device jobs")
    unslotted = [l for l in device_lines if "gpu_slot.sh --gpus '0,1,2,3'" not in l]
    check(not unslotted, f"dry run: {len(unslotted)} device jobs without a slot, e.g. {unslotted[:1]}")
    print(f"dry run of all: {len(device_lines)} device jobs, each on a slot")
    killed_job_frees_its_gpu()
    usage_errors()
    print(f"{'FAILED' if failures else 'ok'}: {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
