#!/usr/bin/env bash
# setup.sh — install everything sinkgate needs and build it; idempotent.
#
# 1. Debian packages (compilers' libraries, HDF5, CLI11, Catch2, ccache, the default corpus).
# 2. LibTorch from PyPI's torch wheel, in a virtual environment kept in a per-user cache
#    (SINKGATE_CACHE, default ~/.cache/sinkgate) so that fresh clones reuse it.
# 3. CMake configure + build into ./build (SINKGATE_BUILD to change).
#
# A second run on a ready machine only re-runs the incremental build (seconds).
set -euo pipefail

TORCH_VERSION=2.11.0
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${SINKGATE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sinkgate}
VENV=${SINKGATE_VENV:-$CACHE/venv-torch-$TORCH_VERSION}
BUILD=${SINKGATE_BUILD:-$ROOT/build}
JOBS=${SINKGATE_JOBS:-$(nproc)}

log() { printf 'setup: %s\n' "$*" >&2; }

# --- 1. Debian packages ---------------------------------------------------------------
DEB_PACKAGES=(build-essential cmake ninja-build ccache git pkg-config
              libhdf5-dev libcli11-dev catch2 nlohmann-json3-dev libssl-dev libicu-dev libgloo-dev
              python3-venv python3.11-doc gnuplot-nox)
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
PY_PACKAGES=("torch==$TORCH_VERSION" numpy tiktoken==0.14.0 transformers==5.24.0 safetensors==0.8.0 pyarrow==26.0.1 h5py==3.16.0)
stamp="$VENV/.sinkgate-ok"
want="${PY_PACKAGES[*]}"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  PYTHON=${SINKGATE_PYTHON:-python3}
  mkdir -p "$CACHE"
  [ -x "$VENV/bin/python" ] || { log "creating virtual environment $VENV"; "$PYTHON" -m venv "$VENV"; }
  log "installing ${PY_PACKAGES[*]} into $VENV (the torch wheel is several GB the first time)"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check "${PY_PACKAGES[@]}"
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
