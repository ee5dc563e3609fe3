#!/usr/bin/env bash
# setup.sh — install everything sinkgate needs and build it; idempotent.
#
# 0. Which torch: PyPI's wheel (a CUDA 13.0 build), another CUDA build of the same version
#    (SINKGATE_TORCH_CUDA=cu126, or SINKGATE_TORCH_INDEX=URL), or the torch a Python of the machine
#    already has (SINKGATE_TORCH_PYTHON=/path/to/python: a cluster module, a container). Where
#    nvidia-smi exists, the NVIDIA driver is read and checked against that build before anything
#    is downloaded. `./setup.sh --plan` says all this and stops.
# 1. Debian packages (compilers' libraries, HDF5, CLI11, Catch2, ccache, the default corpus).
# 2. LibTorch from that torch, in a virtual environment kept in a per-user cache (SINKGATE_CACHE,
#    default ~/.cache/sinkgate) so that fresh clones reuse it, with the tests' Python references.
# 3. CMake configure + build into ./build (SINKGATE_BUILD to change).
#
# A second run on a ready machine only re-runs the incremental build (seconds). docs/gpu.md has
# the GPU machine's route; docs/build.md every variable.
set -euo pipefail

TORCH_VERSION=2.11.0
# The CUDA version of PyPI's torch wheel of TORCH_VERSION for Linux x86-64.
TORCH_PYPI_CUDA=13.0
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${SINKGATE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sinkgate}
BUILD=${SINKGATE_BUILD:-$ROOT/build}
JOBS=${SINKGATE_JOBS:-$(nproc)}
PLAN=0
case "${1:-}" in
  --plan) PLAN=1 ;;
  "") ;;
  *) echo "usage: ./setup.sh [--plan]   (--plan: say which torch and driver, install nothing)" >&2; exit 2 ;;
esac

log() { printf 'setup: %s\n' "$*" >&2; }
die() { printf 'setup: error: %s\n' "$1" >&2; [ $# -gt 1 ] && printf 'hint: %s\n' "$2" >&2; exit 1; }
# version_at_least HAVE NEED: true when HAVE >= NEED (dotted versions).
version_at_least() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -1)" = "$2" ]; }

# --- 0. which torch, and whether this machine's driver runs it --------------------------
TORCH_PYTHON=${SINKGATE_TORCH_PYTHON:-}
TORCH_INDEX=${SINKGATE_TORCH_INDEX:-}
if [ -n "${SINKGATE_TORCH_CUDA:-}" ]; then
  [[ $SINKGATE_TORCH_CUDA =~ ^(cu[0-9]{3}|cpu)$ ]] || die "SINKGATE_TORCH_CUDA must be cuNNN (cu126, cu128, cu130) or cpu, got '$SINKGATE_TORCH_CUDA'"
  TORCH_INDEX=https://download.pytorch.org/whl/$SINKGATE_TORCH_CUDA
fi
[ -n "$TORCH_PYTHON" ] && [ -n "$TORCH_INDEX" ] && die "SINKGATE_TORCH_PYTHON and SINKGATE_TORCH_INDEX/SINKGATE_TORCH_CUDA both set" "choose one: the machine's torch, or a wheel to install"

# The CUDA version (12.6, 13.0; "none" for a CPU build, "unknown") of the torch that will be used.
if [ -n "$TORCH_PYTHON" ]; then
  [ -x "$TORCH_PYTHON" ] || TORCH_PYTHON=$(command -v "$TORCH_PYTHON" || true)
  [ -n "$TORCH_PYTHON" ] && [ -x "$TORCH_PYTHON" ] || die "SINKGATE_TORCH_PYTHON=${SINKGATE_TORCH_PYTHON}: no such Python"
  info=$("$TORCH_PYTHON" -c 'import torch; print(torch.__version__.split("+")[0], torch.version.cuda or "none", int(torch._C._GLIBCXX_USE_CXX11_ABI))' 2>/dev/null) ||
    die "$TORCH_PYTHON cannot import torch" "give the Python whose torch to build against (python -c 'import torch' must work), or unset SINKGATE_TORCH_PYTHON for PyPI's wheel"
  read -r have_version TORCH_CUDA have_abi <<< "$info"
  [ "$have_abi" = 1 ] || die "the torch of $TORCH_PYTHON ($have_version) is built with the old C++ ABI (_GLIBCXX_USE_CXX11_ABI=0); sinkgate's libraries (HDF5, CLI11) use the new one"                              "use a torch built with the new ABI (every PyPI wheel since 2.7), or unset SINKGATE_TORCH_PYTHON"
  if [ "${have_version%.*}" != "${TORCH_VERSION%.*}" ]; then
    version_at_least "$have_version" "$TORCH_VERSION" ||
      [ "${SINKGATE_TORCH_ANY_VERSION:-0}" = 1 ] ||
      die "the torch of $TORCH_PYTHON is $have_version; sinkgate is written against torch $TORCH_VERSION and older versions lack APIs it uses"           "use a Python with torch ${TORCH_VERSION%.*}.x or newer, or SINKGATE_TORCH_ANY_VERSION=1 to try anyway"
    log "the torch of $TORCH_PYTHON is $have_version, not ${TORCH_VERSION%.*}.x: sinkgate is tested with $TORCH_VERSION"
  fi
  TORCH_SOURCE="torch $have_version of $TORCH_PYTHON (CUDA $TORCH_CUDA)"
  VENV=${SINKGATE_VENV:-$CACHE/venv-torch-python-$(printf '%s' "$TORCH_PYTHON" | sha256sum | cut -c1-12)}
elif [ -n "$TORCH_INDEX" ]; then
  tag=${TORCH_INDEX%/}; tag=${tag##*/}
  case $tag in
    cpu) TORCH_CUDA=none ;;
    cu[0-9][0-9][0-9]) TORCH_CUDA=${tag:2:2}.${tag:4:1} ;;
    *) TORCH_CUDA=unknown; tag=index-$(printf '%s' "$TORCH_INDEX" | sha256sum | cut -c1-12) ;;
  esac
  TORCH_SOURCE="torch $TORCH_VERSION from $TORCH_INDEX (CUDA $TORCH_CUDA)"
  VENV=${SINKGATE_VENV:-$CACHE/venv-torch-$TORCH_VERSION-$tag}
else
  TORCH_CUDA=$TORCH_PYPI_CUDA
  TORCH_SOURCE="torch $TORCH_VERSION from PyPI (CUDA $TORCH_CUDA build)"
  VENV=${SINKGATE_VENV:-$CACHE/venv-torch-$TORCH_VERSION}
fi

# The oldest driver of each CUDA major version (CUDA's minor-version compatibility).
driver_needed() { case $1 in 12.*) echo 525.60.13 ;; 13.*) echo 580.65.06 ;; *) echo "" ;; esac; }
DRIVER=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1 | tr -d ' ' || true)
if [ -z "$DRIVER" ]; then
  log "$TORCH_SOURCE; no NVIDIA driver here (no nvidia-smi, or it lists no GPU): the tools run on the CPU"
else
  GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
  need=$(driver_needed "$TORCH_CUDA")
  if [ -z "$need" ]; then
    log "$TORCH_SOURCE; NVIDIA driver $DRIVER ($GPU): the driver this build needs is not known to setup.sh"
  elif version_at_least "$DRIVER" "$need"; then
    log "$TORCH_SOURCE; NVIDIA driver $DRIVER ($GPU) runs it (CUDA ${TORCH_CUDA%%.*} needs $need or newer)"
  elif [ "${SINKGATE_IGNORE_DRIVER:-0}" = 1 ]; then
    log "$TORCH_SOURCE; NVIDIA driver $DRIVER is older than the $need it needs: installing anyway (SINKGATE_IGNORE_DRIVER=1); the GPU will not be usable"
  else
    die "$TORCH_SOURCE needs an NVIDIA driver $need or newer; this machine's is $DRIVER ($GPU)" \
        "a CUDA 12 build runs on drivers from 525.60.13: SINKGATE_TORCH_CUDA=cu126 ./setup.sh (or cu128); or build against a torch the machine has: SINKGATE_TORCH_PYTHON=/path/to/python ./setup.sh; SINKGATE_IGNORE_DRIVER=1 installs it anyway, for the CPU (docs/gpu.md)"
  fi
fi
if [ "$PLAN" = 1 ]; then
  log "plan: torch: $TORCH_SOURCE; virtual environment: $VENV; build: $BUILD"
  exit 0
fi

# --- 1. Debian packages ---------------------------------------------------------------
DEB_PACKAGES=(build-essential cmake ninja-build ccache git pkg-config
              libhdf5-dev libcli11-dev catch2 nlohmann-json3-dev libssl-dev libicu-dev libgloo-dev
              python3-venv python3.11-doc gnuplot-nox universal-ctags)
missing=()
for p in "${DEB_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  log "installing Debian packages: ${missing[*]}"
  SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# --- 2. LibTorch (PyPI torch wheel) and the Python test references ----------------------
PY_PACKAGES=(numpy tiktoken==0.14.0 transformers==5.24.0 safetensors==0.8.0 pyarrow==26.0.1 h5py==3.16.0)
stamp="$VENV/.sinkgate-ok"
want="torch==$TORCH_VERSION ${PY_PACKAGES[*]}${TORCH_INDEX:+ from $TORCH_INDEX}${TORCH_PYTHON:+ torch of $TORCH_PYTHON}"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  mkdir -p "$CACHE"
  pip=("$VENV/bin/python" -m pip install -q --disable-pip-version-check)
  if [ -n "$TORCH_PYTHON" ]; then
    # An environment of that Python's version that reaches its torch through a .pth file (after
    # its own packages, so the references installed here win), wherever that torch lives: the
    # interpreter's site-packages, another virtual environment, a module's PYTHONPATH.
    [ -x "$VENV/bin/python" ] || { log "creating virtual environment $VENV beside the torch of $TORCH_PYTHON"; "$TORCH_PYTHON" -m venv "$VENV"; }
    torch_dir=$("$TORCH_PYTHON" -c 'import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))')
    site=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
    echo "$torch_dir" > "$site/sinkgate-torch.pth"
    "$VENV/bin/python" -c 'import torch' 2>/dev/null ||
      die "the environment $VENV cannot import the torch of $TORCH_PYTHON (from $torch_dir)" "check that $TORCH_PYTHON -c 'import torch' works in this shell"
  else
    [ -x "$VENV/bin/python" ] || { log "creating virtual environment $VENV"; "${SINKGATE_PYTHON:-python3}" -m venv "$VENV"; }
    log "installing torch==$TORCH_VERSION${TORCH_INDEX:+ from $TORCH_INDEX} into $VENV (the wheel is several GB the first time)"
    "${pip[@]}" ${TORCH_INDEX:+--index-url "$TORCH_INDEX"} "torch==$TORCH_VERSION"
  fi
  log "installing ${PY_PACKAGES[*]} into $VENV"
  "${pip[@]}" "${PY_PACKAGES[@]}"
  echo "$want" > "$stamp"
fi

# --- 2b. the GPT-2 BPE rank file, as openai-whisper's source package ships it ----------------
VOCAB=${SINKGATE_VOCAB:-$CACHE/gpt2.tiktoken}
if [ ! -s "$VOCAB" ]; then
  log "fetching the GPT-2 vocabulary (openai-whisper source package, one file extracted)"
  tmp=$(mktemp -d)
  "$VENV/bin/python" -m pip download -q --disable-pip-version-check --no-deps --no-binary :all: \
      openai-whisper==20250625 -d "$tmp"
  tar -xzf "$tmp"/openai_whisper-*.tar.gz -C "$tmp" --wildcards '*/whisper/assets/gpt2.tiktoken'
  mv "$(find "$tmp" -name gpt2.tiktoken)" "$VOCAB.tmp" && mv "$VOCAB.tmp" "$VOCAB"
  rm -rf "$tmp"
fi

TORCH_CMAKE=$("$VENV/bin/python" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)' 2>/dev/null)

# --- 3. configure and build ----------------------------------------------------------
configure=(-DCMAKE_PREFIX_PATH="$TORCH_CMAKE" -DSG_PYTHON="$VENV/bin/python" -DSG_GPT2_VOCAB="$VOCAB")
if [ ! -f "$BUILD/build.ninja" ] || [ "$(cat "$BUILD/.sinkgate-configure" 2>/dev/null)" != "${configure[*]}" ]; then
  log "configuring $BUILD"
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release "${configure[@]}" >/dev/null
  echo "${configure[*]}" > "$BUILD/.sinkgate-configure"
fi
log "building ($JOBS jobs)"
cmake --build "$BUILD" -j "$JOBS"
log "ready: $BUILD/bin"
