#!/usr/bin/env bash
# build_and_check.sh — on a bare GPU machine (nvcc, CMake, ninja and a python3 with torch; no
# network, none of our Debian packages): unpacks what pipelines/device/pack.sh gathered into a
# private prefix, builds the executables the GPU checks run against that machine's own torch, runs
# pipelines/gpu_check.sh, and leaves one summary and one archive of logs in OUT_DIR.
#
# Usage: pipelines/device/build_and_check.sh [PACK_DIR] [OUT_DIR]
#   PACK_DIR  what pack.sh made (default .device-pack)
#   OUT_DIR   summary.md, gpu-check.tsv and logs.tar.gz (default device-out, or $OUT when set)
# Environment:
#   SG_DEVICE_BUDGET_S  seconds the whole script may take; it stops itself before them (default 540)
#   SG_DEVICE_JOBS      build jobs (default: every core)
#   SG_DEVICE_PREFIX    where the packages are unpacked (default /tmp/sg-prefix; never /)
#   SG_DEVICE_BUILD     the build folder (default build-device)
#   SG_DEVICE_PYTHON    the python whose torch the build uses (default python3: the device's)
#   SG_DEVICE_CMAKE_EXTRA  more CMake options (the rehearsal hides this machine's packages with them)
#   SG_DEVICE_REHEARSE  1: no GPU checks, only a CPU smoke test of what was built (the rehearsal)
#   GPU_CHECK_*         passed on to gpu_check.sh (GPU_CHECK_COSTS=1 adds pipelines/GPU_COSTS.md's
#                       measurements, about 6 minutes more: a second call's work)
#
# Expected cost of each stage on one H200 machine (16 cores), from the rehearsal on 2 cores and
# gpu_check.sh's last measured run (docs/gpu.md has the figures):
#   unpack 5-15 s · configure 20-30 s · build 1.5-2.5 min (sg_core, sg and 8 targets: 10 CPU-minutes, no ccache)
#   · gpu_check 4-5 min · summary 1 s.
# Every stage prints a timestamp; a stage that fails ends the script with the summary still written.
set -u -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PACK=$(cd "${1:-$ROOT/.device-pack}" 2>/dev/null && pwd) || { echo "build_and_check: error: no pack folder ${1:-.device-pack} (run pipelines/device/pack.sh here first)" >&2; exit 2; }
OUT=${2:-${OUT:-$ROOT/device-out}}
BUDGET=${SG_DEVICE_BUDGET_S:-540}
JOBS=${SG_DEVICE_JOBS:-$(nproc)}
PREFIX=${SG_DEVICE_PREFIX:-/tmp/sg-prefix}
BUILD=${SG_DEVICE_BUILD:-$ROOT/build-device}
REHEARSE=${SG_DEVICE_REHEARSE:-0}
TARGETS=(test_attention sg-arms sg-train sg-inject sg-probe sg-eval sg-sample sg-toy)

cd "$ROOT"  # gpu_check.sh reads README.md by a relative path
mkdir -p "$OUT/logs"
OUT=$(cd "$OUT" && pwd)
SUMMARY=$OUT/summary.md
start=$SECONDS
stage_start=$SECONDS
stages=()
stamp() { printf '[%s +%4ds] %s\n' "$(date -u +%H:%M:%S)" $((SECONDS - start)) "$*"; }
left() { echo $((BUDGET - (SECONDS - start))); }

finish() {
  local status=$1
  {
    echo "# build_and_check on $(hostname) at $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo
    echo "commit $(git -C "$ROOT" rev-parse --short=12 HEAD 2>/dev/null || echo unknown), $(nproc) cores, budget ${BUDGET} s"
    command -v nvidia-smi > /dev/null &&
      nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | sed 's/^/GPU: /'
    echo "torch: ${TORCH_VERSION:-unknown}"
    echo
    echo "| stage | seconds | result |"
    echo "| --- | --- | --- |"
    printf '%s\n' "${stages[@]}"
    for table in "$OUT"/gpu-check/throughput.tsv "$OUT"/gpu-check/costs.tsv "$OUT"/gpu-check/memory.tsv; do
      [ -s "$table" ] && { echo; echo "$(basename "$table"):"; echo '```'; cat "$table"; echo '```'; }
    done
    [ -s "$OUT/gpu-check/failed-steps" ] && { echo; echo "failed steps:"; sed 's/^/- /' "$OUT/gpu-check/failed-steps"; }
    echo
    echo "exit $status after $((SECONDS - start)) s"
  } > "$SUMMARY"
  [ -s "$OUT/gpu-check/throughput.tsv" ] && cp "$OUT/gpu-check/throughput.tsv" "$OUT/gpu-check.tsv"
  # One archive of every log: few files to copy back from a remote machine.
  tar -czf "$OUT/logs.tar.gz" -C "$OUT" logs $( [ -d "$OUT/gpu-check" ] && echo gpu-check) 2>/dev/null
  rm -rf "$OUT/logs" "$OUT/gpu-check"
  cat "$SUMMARY"
  exit "$status"
}

# stage NAME COMMAND…: runs it with its output in logs/NAME.log, times it, records the result.
stage() {
  local name=$1; shift
  stage_start=$SECONDS
  stamp "stage $name: start ($(left) s of the budget left)"
  "$@" > "$OUT/logs/$name.log" 2>&1
  local rc=$?
  local took=$((SECONDS - stage_start))
  stamp "stage $name: exit $rc after $took s"
  stages+=("| $name | $took | $([ $rc = 0 ] && echo ok || echo "exit $rc") |")
  if [ $rc != 0 ]; then
    tail -25 "$OUT/logs/$name.log"
    finish 1
  fi
}

case "$PREFIX" in /|/usr|/usr/*) echo "build_and_check: error: refusing to unpack into $PREFIX" >&2; exit 2;; esac
ls "$PACK"/debs/*.deb > /dev/null 2>&1 || { echo "build_and_check: error: $PACK/debs holds no .deb files" >&2; exit 2; }

# --- 1. unpack: dpkg -x where dpkg exists, else ar + tar (a .deb is an ar archive) ------------
unpack() {
  rm -rf "$PREFIX" && mkdir -p "$PREFIX"
  local deb
  for deb in "$PACK"/debs/*.deb; do
    if command -v dpkg > /dev/null; then
      dpkg -x "$deb" "$PREFIX" || return 1
    else
      python3 - "$deb" "$PREFIX" <<'EOF' || return 1
import io, sys, tarfile
data = open(sys.argv[1], 'rb').read()
assert data[:8] == b'!<arch>\n', sys.argv[1] + ': not a .deb'
at = 8
while at < len(data):
    name = data[at:at + 16].decode().strip().rstrip('/')
    size = int(data[at + 48:at + 58].decode())
    body = data[at + 60:at + 60 + size]
    at += 60 + size + (size & 1)
    if name.startswith('data.tar'):
        mode = {'xz': 'r:xz', 'gz': 'r:gz', 'bz2': 'r:bz2'}.get(name.rsplit('.', 1)[-1], 'r:')
        if name.endswith('.zst'):
            raise SystemExit(sys.argv[1] + ': zstd data needs dpkg')
        tarfile.open(fileobj=io.BytesIO(body), mode=mode).extractall(sys.argv[2], filter='tar')
EOF
    fi
  done
  echo "unpacked $(ls "$PACK"/debs/*.deb | wc -l) packages into $PREFIX"
}
stage unpack unpack

LIBS="$PREFIX/usr/lib/x86_64-linux-gnu:$PREFIX/lib/x86_64-linux-gnu"
export LD_LIBRARY_PATH="$LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# Debian's multiarch headers (openssl/opensslconf.h) live in include/x86_64-linux-gnu, which the
# compiler searches by itself under /usr but not under a prefix.
export CPATH="$PREFIX/usr/include/x86_64-linux-gnu${CPATH:+:$CPATH}"

# --- 2. configure against the machine's own torch and the prefix -----------------------------
PYTHON=$(command -v "${SG_DEVICE_PYTHON:-python3}")
TORCH_CMAKE=$("$PYTHON" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)' 2>/dev/null)
TORCH_VERSION=$("$PYTHON" -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda)' 2>/dev/null)
[ -n "$TORCH_CMAKE" ] || { stamp "no torch in $PYTHON"; stages+=("| configure | 0 | no torch in python3 |"); finish 1; }
configure() {
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$TORCH_CMAKE;$PREFIX/usr" \
    -DHDF5_NO_FIND_PACKAGE_CONFIG_FILE=ON \
    -DHDF5_C_INCLUDE_DIR="$PREFIX/usr/include/hdf5/serial" \
    -DHDF5_hdf5_LIBRARY_RELEASE="$PREFIX/usr/lib/x86_64-linux-gnu/libhdf5_serial.so" \
    -DOPENSSL_ROOT_DIR="$PREFIX/usr" -DICU_ROOT="$PREFIX/usr" \
    -DSG_PYTHON="$PYTHON" -DSG_GPT2_VOCAB="$PACK/gpt2.tiktoken" \
    ${SG_DEVICE_CMAKE_EXTRA:-}
}
stage configure configure

# --- 3. build only what the checks run --------------------------------------------------------
stage build cmake --build "$BUILD" -j "$JOBS" --target "${TARGETS[@]}"
# Every executable must load its libraries from the prefix or the machine, none missing.
check_libraries() {
  local exe missing=0
  for exe in "$BUILD"/bin/sg-train "$BUILD"/bin/test_attention; do
    ldd "$exe" | grep 'not found' && missing=1
    ldd "$exe" | grep -E 'libhdf5|libicuuc|libcrypto'
  done
  return $missing
}
stage libraries check_libraries

# --- 4. the checks ------------------------------------------------------------------------------
if [ "$REHEARSE" = 1 ]; then
  # No GPU here: what was built must run. The arms' self-check on the CPU, and the attention tests
  # that run without a GPU (the [cuda] ones say they are skipped).
  smoke() {
    "$BUILD/bin/sg-arms" --tier tiny --check &&
      "$BUILD/bin/test_attention" "[cuda]" &&
      "$BUILD/bin/sg-train" --tokens "$PACK/tokens.h5" --tier tiny --arm combo2 --set iterations=5 --set warmup=1 \
        --log-level quiet -o "$OUT/logs/smoke.h5" --force &&
      rm -f "$OUT/logs/smoke.h5"
  }
  stage smoke smoke
else
  checks() {
    # Leave 20 s for the summary and the archive.
    timeout --signal=TERM --kill-after=10 $(( $(left) - 20 )) \
      "$ROOT/pipelines/gpu_check.sh" "$BUILD/bin" "$PACK/tokens.h5" "$OUT/gpu-check"
  }
  stage gpu_check checks
fi
finish 0
