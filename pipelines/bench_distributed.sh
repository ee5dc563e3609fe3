#!/usr/bin/env bash
# bench_distributed.sh — the overhead of data-parallel sg-train over Gloo on this machine's CPUs.
#
# Two measurements in the same run, on the same token file and configuration (tier quick, a batch
# of 16 sequences of 64 tokens, STEPS steps), every process with one thread:
#   A  two single-process runs side by side (each trains the whole batch; the two cores are as
#      loaded as in B): the median of their per-step tokens/s, each;
#   B  one run as two ranks (each trains half of every batch, gradients summed over Gloo): the
#      median per-step tokens/s of the run (the whole batch per step).
# Ideal data parallelism gives B = 2 A; the script prints B / 2A and the overhead 1 − B / 2A,
# with the CPU model beside them. No timing is a test assertion; rerun it to compare.
#
#   pipelines/bench_distributed.sh [TOKENS] [STEPS]      (default data/pydoc.h5, 60)
set -euo pipefail
TOKENS=${1:-data/pydoc.h5}
STEPS=${2:-60}
BIN=${BIN:-build/bin}
OUT=$(mktemp -d /tmp/sg-bench-distributed-XXXXXX)
trap 'rm -rf "$OUT"' EXIT
[ -f "$TOKENS" ] || { echo "bench_distributed: no token file $TOKENS (make -f Makefile.experiments PROFILE=quick tokens)" >&2; exit 2; }
ARGS=(--tokens "$TOKENS" --tier quick --arm combo2 --threads 1 --set iterations="$STEPS" --set warmup=1
      --set micro_batch=8 --set accumulation=2 --set eval_interval="$STEPS" --set final_eval_batches=1
      --set checkpoint_interval="$STEPS" --log-level quiet)
median() {  # the median tokens_per_second of the steps after the first five, from a --log-json file
  python3 -c "
import json, statistics, sys
rates = [r['tokens_per_second'] for r in map(json.loads, open(sys.argv[1])) if 'tokens_per_second' in r][5:]
print(f'{statistics.median(rates):.1f}')" "$1"
}
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores; $(date -u +%Y-%m-%d)"
"$BIN/sg-train" "${ARGS[@]}" -o "$OUT/a0.h5" --log-json "$OUT/a0.jsonl" &
"$BIN/sg-train" "${ARGS[@]}" -o "$OUT/a1.h5" --log-json "$OUT/a1.jsonl" &
wait
a0=$(median "$OUT/a0.jsonl"); a1=$(median "$OUT/a1.jsonl")
port=$((29000 + RANDOM % 1000))
for rank in 0 1; do
  RANK=$rank WORLD_SIZE=2 LOCAL_RANK=$rank MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
    "$BIN/sg-train" "${ARGS[@]}" -o "$OUT/b.h5" --log-json "$OUT/b$rank.jsonl" &
done
wait
b=$(median "$OUT/b0.jsonl")
python3 -c "
a = ($a0 + $a1) / 2; b = $b
print(f'A  one process, one thread, beside another: {a:.0f} tok/s ({$a0:.0f}, {$a1:.0f})')
print(f'B  two ranks, one thread each:             {b:.0f} tok/s')
print(f'B / 2A = {b / (2 * a):.3f}   overhead = {100 * (1 - b / (2 * a)):.1f} %')"
