#!/usr/bin/env python3
"""setup.sh's choice of torch and its check of the NVIDIA driver, without a GPU: `./setup.sh --plan`
under a stub nvidia-smi that reports a driver (550, 580) or none, with another CUDA build of the
wheel, and with a second Python standing in for a cluster's torch (a virtual environment that sees
the project's torch through a .pth file, and stubs reporting an old version or the old C++ ABI).

Usage: setup_plan.py REPO_ROOT WORK_DIR PROJECT_PYTHON
"""
import os
import subprocess
import sys
from pathlib import Path

ROOT, WORK, PROJECT_PYTHON = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve(), sys.argv[3]
failures = []


def stub(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/usr/bin/env bash\n" + text)
    path.chmod(0o755)


def plan(name, driver=None, **env_extra):
    """./setup.sh --plan with a stub nvidia-smi reporting `driver` (none: no nvidia-smi at all)."""
    bin_dir = WORK / name / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    if driver:
        stub(bin_dir / "nvidia-smi", f"""case "$*" in
  *driver_version*) echo "{driver}";;
  *name*) echo "NVIDIA H100 80GB HBM3";;
  *) exit 1;;
esac
""")
    # No nvidia-smi of the machine's own on the way (there is none here, but be sure).
    path = ":".join([str(bin_dir)] + [p for p in os.environ["PATH"].split(":") if not (Path(p) / "nvidia-smi").exists()])
    env = {k: v for k, v in os.environ.items() if not k.startswith("SINKGATE_")}
    env.update(PATH=path, SINKGATE_CACHE=str(WORK / "cache"), **env_extra)
    result = subprocess.run([str(ROOT / "setup.sh"), "--plan"], env=env, capture_output=True, text=True, timeout=120)
    return result.returncode, result.stderr


def expect(name, got, code, *words):
    rc, text = got
    ok = rc == code and all(w in text for w in words)
    print(f"{'ok' if ok else 'FAILED'}: {name}: exit {rc}")
    if not ok:
        failures.append(name)
        print(f"  expected exit {code} and {words}; got:\n{text}")


def main():
    subprocess.run(["rm", "-rf", str(WORK)], check=True)
    WORK.mkdir(parents=True)
    pypi = "torch 2.11.0 from PyPI (CUDA 13.0 build)"
    expect("no driver", plan("none"), 0, pypi, "no NVIDIA driver here", "plan: torch: " + pypi)
    expect("driver 580", plan("d580", "580.82.07"), 0, "NVIDIA driver 580.82.07 (NVIDIA H100 80GB HBM3) runs it",
           "CUDA 13 needs 580.65.06 or newer")
    expect("driver 550 refused before any download", plan("d550", "550.54.15"), 1,
           "needs an NVIDIA driver 580.65.06 or newer; this machine's is 550.54.15", "SINKGATE_TORCH_CUDA=cu126")
    expect("driver 550 with a CUDA 12.6 build", plan("d550-cu126", "550.54.15", SINKGATE_TORCH_CUDA="cu126"), 0,
           "torch 2.11.0 from https://download.pytorch.org/whl/cu126 (CUDA 12.6)", "runs it (CUDA 12 needs 525.60.13",
           "venv-torch-2.11.0-cu126")
    expect("driver 550, installed anyway", plan("d550-ignore", "550.54.15", SINKGATE_IGNORE_DRIVER="1"), 0,
           "installing anyway (SINKGATE_IGNORE_DRIVER=1)")
    expect("a CUDA tag that is none", plan("bad-tag", SINKGATE_TORCH_CUDA="12.6"), 1, "must be cuNNN")

    # A second Python standing in for a cluster's torch: its own environment, the project's torch
    # reached through a .pth file, as a module's PYTHONPATH would.
    cluster = WORK / "cluster"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(cluster)], check=True)
    project_site = subprocess.run([PROJECT_PYTHON, "-c", "import torch, os; print(os.path.dirname(os.path.dirname(torch.__file__)))"],
                                  capture_output=True, text=True, check=True).stdout.strip()
    site = subprocess.run([str(cluster / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    Path(site, "cluster_torch.pth").write_text(project_site + "\n")
    python = str(cluster / "bin" / "python")
    expect("a cluster's torch", plan("cluster", SINKGATE_TORCH_PYTHON=python), 0,
           f"torch 2.11.0 of {python} (CUDA 13.0)", "venv-torch-python-")
    expect("a cluster's CUDA 13 torch under driver 550", plan("cluster-550", "550.54.15", SINKGATE_TORCH_PYTHON=python), 1,
           "needs an NVIDIA driver 580.65.06 or newer")
    old = WORK / "old" / "python"
    stub(old, 'echo "2.5.1 12.4 1"\n')
    expect("an older torch refused", plan("old", SINKGATE_TORCH_PYTHON=str(old)), 1,
           "the torch of", "is 2.5.1", "SINKGATE_TORCH_ANY_VERSION=1")
    abi = WORK / "abi" / "python"
    stub(abi, 'echo "2.11.0 12.8 0"\n')
    expect("the old C++ ABI refused", plan("abi", SINKGATE_TORCH_PYTHON=str(abi)), 1, "old C++ ABI")
    notorch = WORK / "notorch" / "python"
    stub(notorch, "exit 1\n")
    expect("a Python without torch refused", plan("notorch", SINKGATE_TORCH_PYTHON=str(notorch)), 1, "cannot import torch")
    expect("a wheel and a Python at once refused", plan("both", SINKGATE_TORCH_PYTHON=python, SINKGATE_TORCH_CUDA="cu126"), 1,
           "both set")
    print(f"{'FAILED' if failures else 'ok'}: {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
