#!/usr/bin/env bash
# gpu_slot.sh — runs one command on GPUs of its own. It takes COUNT free slots of the GPUS list (a
# lock per GPU: flock on SLOTS/gpu-ID.lock), waits while fewer are free, then replaces itself by
# the command with CUDA_VISIBLE_DEVICES set to those GPUs, so that `--device cuda` (cuda:0) and a
# torchrun job's LOCAL_RANK name them. The locks belong to the command's process and to every
# process it starts; the kernel drops them when the last of those ends, normally or killed
# (kill -9 included), so a dead job's GPU is free again at once and nothing needs cleaning up.
#
# Makefile.experiments puts it before every job that uses the device when DEVICE=cuda and no
# LAUNCH is set (pipelines/gpu.mk); it is not meant for Slurm, which allocates GPUs itself.
#
# Usage: pipelines/gpu_slot.sh --gpus 0,1,2,3 [--count K] [--slots DIR] [--poll SECONDS] -- COMMAND [ARG...]
#   --gpus    the GPUs to share out, as CUDA_VISIBLE_DEVICES names them (indices or UUIDs)
#   --count   GPUs the command needs at once (default 1; a torchrun job: its process count)
#   --slots   the folder of the lock files (default ${TMPDIR:-/tmp}/sinkgate-gpu-slots-UID: on the
#             node's own disk, where flock holds; a shared file system's may not)
#   --poll    seconds between two looks while waiting (default $GPU_SLOT_POLL, else 2)
# Exit status: the command's; 2 for a usage error (no GPUs, COUNT larger than the list).
set -u -o pipefail

die() { printf 'gpu_slot: error: %s\n' "$1" >&2; [ $# -gt 1 ] && printf 'hint: %s\n' "$2" >&2; exit 2; }

gpus='' count=1 poll=${GPU_SLOT_POLL:-2}
slots=${TMPDIR:-/tmp}/sinkgate-gpu-slots-$(id -u)
while [ $# -gt 0 ]; do
  case $1 in
    --gpus) gpus=${2-}; shift 2 || die "--gpus needs a value" ;;
    --count) count=${2-}; shift 2 || die "--count needs a value" ;;
    --slots) slots=${2-}; shift 2 || die "--slots needs a value" ;;
    --poll) poll=${2-}; shift 2 || die "--poll needs a value" ;;
    --) shift; break ;;
    *) die "unknown argument '$1'" "usage: gpu_slot.sh --gpus 0,1 [--count K] [--slots DIR] -- COMMAND [ARG...]" ;;
  esac
done
[ $# -gt 0 ] || die "no command to run after --"
command -v flock > /dev/null || die "flock (util-linux) is not installed" "install util-linux, or give each job its GPU with DEVICE=cuda:N"
[[ $count =~ ^[1-9][0-9]*$ ]] || die "--count must be a positive integer, got '$count'"

IFS=, read -r -a list <<< "${gpus// /}"
[ ${#list[@]} -gt 0 ] ||
  die "no GPU to share out: nvidia-smi -L lists none and CUDA_VISIBLE_DEVICES is unset" \
      "set GPUS=0,1,... (make) or --gpus; or run on the CPU: DEVICE=cpu"
declare -A seen=()
for gpu in "${list[@]}"; do
  [ -n "$gpu" ] || die "empty entry in the GPU list '$gpus'"
  [ -z "${seen[$gpu]+x}" ] || die "GPU '$gpu' is listed twice in '$gpus'"
  seen[$gpu]=1
done
[ "$count" -le ${#list[@]} ] ||
  die "the command needs $count GPUs at once and the list '$gpus' has ${#list[@]}" "lower NPROC, or list more GPUs in GPUS"
mkdir -p "$slots" || die "cannot create the slot folder $slots"

# take: tries every slot once without waiting; on success leaves the chosen GPUs in `taken` with
# their locks held, otherwise holds none.
take() {
  taken=() fds=()
  local gpu fd
  for gpu in "${list[@]}"; do
    exec {fd}>> "$slots/gpu-${gpu//[^A-Za-z0-9._-]/_}.lock" || die "cannot open a lock file in $slots"
    if flock -n "$fd"; then
      taken+=("$gpu") fds+=("$fd")
      [ ${#taken[@]} -eq "$count" ] && return 0
    else
      exec {fd}>&-
    fi
  done
  for fd in "${fds[@]}"; do exec {fd}>&-; done
  return 1
}

waited=0
until take; do
  if [ $waited = 0 ]; then
    printf 'gpu_slot: waiting for %s free GPU(s) of %s (locks in %s)\n' "$count" "$gpus" "$slots" >&2
    waited=1
  fi
  sleep "$poll"
done
visible=$(IFS=,; echo "${taken[*]}")
printf 'gpu_slot: CUDA_VISIBLE_DEVICES=%s for %s\n' "$visible" "$(basename "$1")" >&2
export CUDA_VISIBLE_DEVICES=$visible
exec "$@"
