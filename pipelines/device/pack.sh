#!/usr/bin/env bash
# pack.sh — gathers here, on a Debian 12 machine where ./setup.sh has run, everything a bare GPU
# machine needs to build and check sinkgate without a network: the Debian packages of the build's
# dependencies (HDF5, CLI11, Catch2, nlohmann-json, Gloo's headers, OpenSSL, ICU) and the shared
# libraries they load, the GPT-2 vocabulary and a token file. pipelines/device/build_and_check.sh
# unpacks and uses them there. It is not a package manager: it downloads .deb files, never installs.
#
# Usage: pipelines/device/pack.sh [PACK_DIR]      (default .device-pack, ignored by git)
# Environment:
#   SG_PACK_TOKENS   the token file to carry (default data/pydoc.h5, made by `make … tokens` if absent)
#   SG_PACK_LIMIT_MIB  the size the pack and the tracked tree may reach together (default 64: what
#                      travels to the GPU machine)
# Prints the pack's size and the tracked tree's, and fails when together they pass the limit.
#
# Which packages: the -dev packages the build finds with CMake (DEV below), plus every package that
# owns a shared library those link against, followed through ldd (libhdf5's libcurl and its TLS and
# Kerberos chain, libsz, libaec, ICU's data): a bare machine may lack any of them, or carry another
# soname. The C library, libgcc and libstdc++ stay behind: the GPU machine's compiler brings its own.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PACK=${1:-$ROOT/.device-pack}
LIMIT_MIB=${SG_PACK_LIMIT_MIB:-64}
ARCH_LIB=/usr/lib/x86_64-linux-gnu
CACHE=${SINKGATE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sinkgate}

log() { printf 'pack: %s\n' "$*" >&2; }
die() { printf 'pack: error: %s\n' "$*" >&2; exit 1; }

DEV=(libhdf5-dev libcli11-dev catch2 nlohmann-json3-dev libgloo-dev libssl-dev libicu-dev)
# The libraries the build links from those packages; their ldd closure decides the runtime packages.
LINKED=("$ARCH_LIB/libhdf5_serial.so" "$ARCH_LIB/libssl.so" "$ARCH_LIB/libcrypto.so"
        "$ARCH_LIB/libicuuc.so" "$ARCH_LIB/libicudata.so")
LEAVE=(libc6 libgcc-s1 libstdc++6 gcc-12-base)

command -v apt-get > /dev/null && command -v dpkg > /dev/null || die "needs Debian's apt-get and dpkg (run it where ./setup.sh ran)"
for p in "${DEV[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
    die "the package $p is not installed here: run ./setup.sh first (pack.sh follows the installed libraries)"
done

# The package that owns a file; Debian 12 records some libraries under /lib, some under /usr/lib.
owner() {
  local path=$1 real candidate
  real=$(realpath "$path")
  for candidate in "$path" "$real" "${real#/usr}" "/usr${real}"; do
    dpkg -S "$candidate" 2>/dev/null | head -1 | cut -d: -f1 && return 0
  done
  return 1
}

declare -A wanted=()
for p in "${DEV[@]}"; do wanted[$p]=1; done
for lib in "${LINKED[@]}"; do
  [ -e "$lib" ] || die "$lib is missing although its -dev package is installed"
  for path in "$lib" "$(realpath "$lib")" $(ldd "$lib" | awk '$3 ~ /^\// { print $3 }'); do
    package=$(owner "$path") || die "no Debian package owns $path"
    wanted[$package]=1
  done
done
for p in "${LEAVE[@]}"; do unset "wanted[$p]"; done

mkdir -p "$PACK/debs"
rm -f "$PACK"/debs/*.deb
log "downloading ${#wanted[@]} packages into $PACK/debs"
# The archive's current versions (the pack's headers and libraries come from the same release, which
# may be newer than what is installed here); the versions taken are recorded in packages.txt.
(cd "$PACK/debs" && apt-get download -qq "${!wanted[@]}") ||
  die "apt-get download failed (run 'apt-get update' once, then again)"
for deb in "$PACK"/debs/*.deb; do dpkg-deb -f "$deb" Package Version | paste -sd= | sed 's/^Package: //; s/=Version: /=/'; done |
  sort > "$PACK/packages.txt"

# The GPT-2 vocabulary (the tests and sg-eval's tokenizer) and a token file for the checks.
[ -s "$CACHE/gpt2.tiktoken" ] || die "$CACHE/gpt2.tiktoken is missing: run ./setup.sh first"
cp "$CACHE/gpt2.tiktoken" "$PACK/gpt2.tiktoken"
TOKENS=${SG_PACK_TOKENS:-$ROOT/data/pydoc.h5}
if [ ! -s "$TOKENS" ] && [ -z "${SG_PACK_TOKENS:-}" ]; then
  log "making the default token file with make tokens"
  make -C "$ROOT" -f Makefile.experiments tokens PROFILE=quick >&2
fi
[ -s "$TOKENS" ] || die "no token file at $TOKENS"
cp "$TOKENS" "$PACK/tokens.h5"

pack_bytes=$(du -sb "$PACK" | cut -f1)
tree_bytes=$(git -C "$ROOT" ls-files -z | (cd "$ROOT" && xargs -0 du -cb 2>/dev/null) | awk '$2 == "total" { s += $1 } END { print s + 0 }')
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
log "pack: $(mib "$pack_bytes") in $PACK ($(ls "$PACK/debs" | wc -l) packages, tokens $(mib "$(stat -c %s "$PACK/tokens.h5")"))"
log "tracked tree: $(mib "$tree_bytes"); together $(mib $((pack_bytes + tree_bytes))) of the $LIMIT_MIB MiB that may travel"
[ $((pack_bytes + tree_bytes)) -le $((LIMIT_MIB * 1048576)) ] ||
  die "the pack and the tree pass $LIMIT_MIB MiB: carry a smaller token file (SG_PACK_TOKENS)"
echo "$PACK"
