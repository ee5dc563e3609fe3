#!/usr/bin/env bash
# rehearse.sh — runs build_and_check.sh here, as a bare GPU machine would, before any device time
# is spent: in a private mount namespace whose /usr is an overlay from which every file of the
# packed packages is deleted, so that the build can find HDF5, CLI11, Catch2, nlohmann-json, Gloo,
# OpenSSL and ICU only in the prefix it unpacks. A package the pack lacks, or a path the script gets
# wrong, fails here. No GPU: the checks are replaced by a CPU smoke test (SG_DEVICE_REHEARSE=1).
#
# Usage: pipelines/device/rehearse.sh [PACK_DIR] [OUT_DIR]     (needs root: unshare -m, overlayfs)
# Environment: SG_DEVICE_JOBS (default 2), SG_REHEARSE_FRESH=0 to keep the last rehearsal's build,
# SG_REHEARSE_CCACHE=1 to let ccache serve the build (by
# default it is off, so the build's time is the device's work at this machine's speed).
#
# The toolchain's own libraries stay visible (cmake, ninja, the compilers, python3, git load some of
# the packed runtime libraries, libcurl's chain for instance); the executables built still take the
# prefix's copies first, through LD_LIBRARY_PATH, as on the device, and the script's library check
# prints where each came from.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PACK=$(cd "${1:-$ROOT/.device-pack}" && pwd)
OUT=${2:-$ROOT/device-out}
WORK=$(mktemp -d /tmp/sg-rehearse.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

[ "$(id -u)" = 0 ] || { echo "rehearse: error: needs root (a mount namespace and an overlay)" >&2; exit 2; }
[ -s "$PACK/packages.txt" ] || { echo "rehearse: error: $PACK/packages.txt missing: run pipelines/device/pack.sh" >&2; exit 2; }

# Packages the toolchain itself loads stay visible.
tools=()
for t in cmake ninja g++ c++ ld as make git python3 nvcc ccache tar gzip; do
  p=$(command -v "$t" 2>/dev/null) && tools+=("$(realpath "$p")")
done
tools+=("$(g++ -print-prog-name=cc1plus)")
declare -A keep=()
for lib in $(ldd "${tools[@]}" 2>/dev/null | awk '$3 ~ /^\// { print $3 }' | sort -u); do
  real=$(realpath "$lib")
  for candidate in "$lib" "$real" "${real#/usr}" "/usr${real}"; do
    owner=$(dpkg -S "$candidate" 2>/dev/null | head -1 | cut -d: -f1) && { keep[$owner]=1; break; }
  done
done

# Installed here by setup.sh but neither packed nor on the device: hidden too (h5cc, HDF5's compiler
# wrapper, would otherwise lead CMake's FindHDF5 to this machine's paths).
ALSO_HIDDEN=(hdf5-helpers)

# Every file of the other packed packages, as seen under /usr, to be deleted in the overlay.
hide="$WORK/hide.txt"
: > "$hide"
hidden=() kept=()
while IFS='=' read -r package version; do
  if [ -n "${keep[$package]:-}" ]; then kept+=("$package"); continue; fi
  hidden+=("$package")
  dpkg -L "$package" | while read -r f; do
    [ -d "$f" ] && [ ! -L "$f" ] && continue
    case "$f" in /lib/*) f=/usr$f;; /usr/*) ;; *) continue;; esac
    echo "$f"
  done >> "$hide"
done < <(cat "$PACK/packages.txt"; printf '%s=\n' "${ALSO_HIDDEN[@]}")
echo "rehearse: hiding $(wc -l < "$hide") files of ${#hidden[@]} packages; visible for the toolchain: ${kept[*]:-none}" >&2

mkdir -p "$WORK/upper" "$WORK/work"
ccache_flag=-DCCACHE=OFF
[ "${SG_REHEARSE_CCACHE:-0}" = 1 ] && ccache_flag=
CACHE=${SINKGATE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sinkgate}
export SG_DEVICE_PYTHON=${SG_DEVICE_PYTHON:-$(ls -d "$CACHE"/venv-torch-*/bin/python | tail -1)}
export SG_DEVICE_REHEARSE=1 SG_DEVICE_JOBS=${SG_DEVICE_JOBS:-2} SG_DEVICE_BUDGET_S=${SG_DEVICE_BUDGET_S:-7200}
export SG_DEVICE_BUILD=${SG_DEVICE_BUILD:-$ROOT/build-rehearse}
# Fresh, as on the device (SG_REHEARSE_FRESH=0 keeps an earlier rehearsal's build: checks only).
[ "${SG_REHEARSE_FRESH:-1}" = 0 ] || rm -rf "$SG_DEVICE_BUILD"
export SG_DEVICE_CMAKE_EXTRA="$ccache_flag ${SG_DEVICE_CMAKE_EXTRA:-}"
unshare -m bash -euo pipefail -c '
  mount --make-rprivate /
  mount -t overlay overlay -o "lowerdir=/usr,upperdir=$0/upper,workdir=$0/work" /usr
  xargs -d "\n" rm -f < "$0/hide.txt"
  for probe in /usr/include/hdf5/serial/hdf5.h /usr/include/CLI/CLI.hpp /usr/include/nlohmann/json.hpp \
               /usr/include/gloo/algorithm.h /usr/include/unicode/unorm2.h /usr/lib/cmake/Catch2/Catch2Config.cmake; do
    [ ! -e "$probe" ] || { echo "rehearse: $probe is still visible" >&2; exit 1; }
  done
  exec "$1/pipelines/device/build_and_check.sh" "$2" "$3"
' "$WORK" "$ROOT" "$PACK" "$OUT"
