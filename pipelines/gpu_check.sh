#!/usr/bin/env bash
# gpu_check.sh — the checks that need a CUDA GPU, in one run: the GPU tests of the attention
# kernels against float64, the arms' self-check on the GPU, a short bf16 training run per arm at
# the 124M tier (tokens/s and overhead against the baseline; the baseline again with training's
# telemetry on), the injection battery on a 124M-shaped model (its wall time) and a 10M-tier run
# that must learn; with GPU_CHECK_MEMORY=1, each paper tier's peak memory.
#
# Usage: pipelines/gpu_check.sh [BIN_DIR] [TOKENS] [OUT_DIR]
#   BIN_DIR  the built executables (default build/bin)
#   TOKENS   a token file from sg-tokenize (default data/pydoc.h5: `make -f Makefile.experiments PROFILE=quick tokens`)
#   OUT_DIR  logs and the summary table (default gpu-check)
# Every step runs even when an earlier one fails; the exit status is 1 if any failed.
set -u -o pipefail
BIN=${1:-build/bin}
TOKENS=${2:-data/pydoc.h5}
OUT=${3:-gpu-check}
STEPS=${GPU_CHECK_STEPS:-45}          # optimizer steps of each throughput run
TESTS=${GPU_CHECK_TESTS:-1}           # 0: skip the tests, self-checks and the learning run
ARMS=${GPU_CHECK_ARMS:-baseline offbyone sinklogit sinktoken normgate renorm projgate combo combo2 outgate outgate-elem keygate sinklogit+outgate}
COSTS=${GPU_CHECK_COSTS:-0}           # 1: also the measurements M0, M3-M8 of pipelines/GPU_COSTS.md
# GPU_CHECK_MEMORY=1: also the peak memory of each paper tier (below)
mkdir -p "$OUT"
rm -f "$OUT/failed-steps"

step() {
  echo "== $*"
  local start=$SECONDS
  "$@"
  local rc=$?
  echo "== exit $rc after $((SECONDS - start)) s"
  # A file rather than a variable: steps also run inside pipelines, that is in subshells.
  if [ $rc -ne 0 ]; then echo "$*" >> "$OUT/failed-steps"; fi
  return $rc
}

step nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader

if [ "$TESTS" != 0 ]; then
  step "$BIN/test_attention" "[cuda]" --durations yes
  step "$BIN/sg-arms" --tier tiny --check --device cuda
  step "$BIN/sg-arms" --tier 124M --check --check-length 256 --device cuda
fi

# Throughput per arm: tier 124M (12 layers, width 768, context 1,024, 8 x 4 sequences a step),
# bf16 autocast. The figure is the last progress line's, a window of steps after the warm-up.
# A first short run warms the GPU's clocks and caches, and the baseline runs again at the end:
# the two baseline figures bound the drift over the measurement.
interval=$((STEPS / 3))
printf 'arm\ttokens_per_s\toverhead_vs_baseline\n' > "$OUT/throughput.tsv"
step "$BIN/sg-train" --tier 124M --arm baseline --device cuda --tokens "$TOKENS" -o "$OUT/warm-up.h5" --force \
  --set iterations=10 --set warmup=2 --set checkpoint_interval=100000 --log-level quiet
rm -f "$OUT/warm-up.h5"
base=""
for arm in $ARMS baseline; do
  run="$OUT/tp-$arm.h5"
  step "$BIN/sg-train" --tier 124M --arm "$arm" --device cuda --tokens "$TOKENS" -o "$run" --force \
    --set iterations="$STEPS" --set warmup=2 --set eval_interval="$interval" --set eval_batches=1 \
    --set final_eval_batches=1 --set checkpoint_interval=100000 2>&1 | tee "$OUT/tp-$arm.log"
  rate=$(grep -o '[0-9]* tok/s' "$OUT/tp-$arm.log" | tail -1 | cut -d' ' -f1)
  rm -f "$run"
  [ -n "$rate" ] || { echo "no tokens/s from $arm" >> "$OUT/failed-steps"; continue; }
  [ -n "$base" ] || base=$rate
  awk -v a="$arm" -v r="$rate" -v b="$base" 'BEGIN { printf "%s\t%d\t%+.1f%%\n", a, r, 100 * (b / r - 1) }' \
    >> "$OUT/throughput.tsv"
done
# Training's telemetry (the largest attention logit and activation, --set telemetry=N): off by
# default; its cost when measured every step, as make stability asks, against the baseline above.
run="$OUT/tp-telemetry.h5"
step "$BIN/sg-train" --tier 124M --arm baseline --device cuda --tokens "$TOKENS" -o "$run" --force \
  --set iterations="$STEPS" --set warmup=2 --set eval_interval="$interval" --set eval_batches=1 \
  --set final_eval_batches=1 --set checkpoint_interval=100000 --set telemetry=1 2>&1 | tee "$OUT/tp-telemetry.log"
rate=$(grep -o '[0-9]* tok/s' "$OUT/tp-telemetry.log" | tail -1 | cut -d' ' -f1)
rm -f "$run"
if [ -n "$rate" ] && [ -n "$base" ]; then
  awk -v r="$rate" -v b="$base" 'BEGIN { printf "baseline+telemetry=1\t%d\t%+.1f%%\n", r, 100 * (b / r - 1) }' >> "$OUT/throughput.tsv"
else
  echo "no tokens/s from the baseline with telemetry=1" >> "$OUT/failed-steps"
fi
cat "$OUT/throughput.tsv"

# Data parallelism's own cost (the goal: at most 2 %): the baseline again as a world of one rank
# over NCCL (torchrun's variables set by hand), its tokens/s against the plain run's above.
run="$OUT/tp-nccl.h5"
RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=29561 \
  step "$BIN/sg-train" --tier 124M --arm baseline --device cuda --tokens "$TOKENS" -o "$run" --force \
  --set iterations="$STEPS" --set warmup=2 --set eval_interval="$interval" --set eval_batches=1 \
  --set final_eval_batches=1 --set checkpoint_interval=100000 2>&1 | tee "$OUT/tp-nccl.log"
rate=$(grep -o '[0-9]* tok/s' "$OUT/tp-nccl.log" | tail -1 | cut -d' ' -f1)
rm -f "$run"
[ -n "$rate" ] && [ -n "$base" ] && awk -v r="$rate" -v b="$base" \
  'BEGIN { printf "NCCL, world of one: %d tok/s, %+.1f%% against the plain run\n", r, 100 * (b / r - 1) }'

# The injection battery on a 124M-shaped model (issue: under 5 minutes on one H200): a combo2 run of
# two steps (its projection gate has left w_h = 0, so own-direction junk is defined), then every junk
# type at both cutoffs and four doses, 8 batches of 8 x 512 tokens, and the exposure pass.
step "$BIN/sg-train" --tier 124M --arm combo2 --device cuda --tokens "$TOKENS" -o "$OUT/inject-run.h5" --force \
  --set iterations=2 --set warmup=1 --set eval_interval=2 --set eval_batches=1 --set final_eval_batches=1 --log-level quiet
step "$BIN/sg-inject" --tokens "$TOKENS" "$OUT/inject-run.h5" --device cuda \
  --junk structured,same-context,gaussian,random-direction,own-direction -o "$OUT/inject.h5" --force
# Every probe on the same model (Table 8's overrides clean and at 0.2, sinks, selectivity, gate
# tokens, kurtosis): 8 batches of 8 x 512 tokens, the explicit attention matrix one layer at a time.
step "$BIN/sg-probe" --tokens "$TOKENS" "$OUT/inject-run.h5" --device cuda -o "$OUT/probe.h5" --force
# Zero-shot scoring speed on the same 124M-shaped model (the goal: the full LAMBADA set, 5,153
# passages, in minutes on a GPU): 1,000 LAMBADA-like passages of 60 words cut from README.md (the
# real data do not reach this machine); and sg-sample with the cache against --no-cache (greedy
# output must agree).
if command -v python3 > /dev/null; then
  python3 -c "
import json, random
random.seed(0)
words = open('README.md', encoding='utf-8').read().split()
with open('$OUT/lambada-like.jsonl', 'w') as out:
    for i in range(1000):
        s = random.randrange(0, len(words) - 80)
        out.write(json.dumps({'text': ' '.join(words[s:s + 60])}) + '\\n')
" && step "$BIN/sg-eval" "$OUT/inject-run.h5" --task lambada --lambada "$OUT/lambada-like.jsonl" --device cuda \
      --batch-size 64 -o "$OUT/zero-shot.h5" --force
fi
step sh -c "a=\$('$BIN/sg-sample' '$OUT/inject-run.h5' --prompt 'The' -n 200 --greedy --device cuda) && \
  b=\$('$BIN/sg-sample' '$OUT/inject-run.h5' --prompt 'The' -n 200 --greedy --device cuda --no-cache --log-level quiet) && \
  [ \"\$a\" = \"\$b\" ] && echo 'sg-sample: cached and uncached greedy agree'"
rm -f "$OUT/inject-run.h5"

# Resume on the GPU: a run stopped at step 40 and resumed must end where an uninterrupted run
# ends (the flash backward's atomics make GPU runs close rather than bitwise equal).
resume_flags=(--tier 10M --arm combo2 --device cuda --tokens "$TOKENS" --set iterations=80 --set warmup=8
              --set eval_interval=40)
step "$BIN/sg-train" "${resume_flags[@]}" -o "$OUT/resumed.h5" --force --stop-after 40 --log-level quiet
step "$BIN/sg-train" "${resume_flags[@]}" -o "$OUT/resumed.h5" --resume 2>&1 | tee "$OUT/resumed.log"
step "$BIN/sg-train" "${resume_flags[@]}" -o "$OUT/straight.h5" --force 2>&1 | tee "$OUT/straight.log"
resumed=$(grep -o 'final val_loss [0-9.]*' "$OUT/resumed.log" | cut -d' ' -f3)
straight=$(grep -o 'final val_loss [0-9.]*' "$OUT/straight.log" | cut -d' ' -f3)
echo "resume on the GPU: final val_loss ${resumed:-missing} resumed, ${straight:-missing} uninterrupted"
awk -v a="${resumed:-0}" -v b="${straight:-99}" 'BEGIN { d = a - b; exit !(d < 0.02 && d > -0.02) }' ||
  echo "resumed and uninterrupted runs disagree" >> "$OUT/failed-steps"

rm -f "$OUT/resumed.h5" "$OUT/straight.h5"

if [ "$TESTS" != 0 ]; then
  # Learning on the GPU: the 10M tier for a few hundred steps must bring the validation loss well
  # below its start (ln 50257 = 10.8), and sg-eval must read the run on the GPU.
  step "$BIN/sg-train" --tier 10M --arm combo2 --device cuda --tokens "$TOKENS" -o "$OUT/learn.h5" --force \
    --set iterations=300 --set warmup=30 --set eval_interval=100 2>&1 | tee "$OUT/learn.log"
  step "$BIN/sg-eval" "$OUT/learn.h5" --tokens "$TOKENS" --device cuda -o "$OUT/learn-eval.h5" --force
  final=$(grep -o 'val [0-9.]*' "$OUT/learn.log" | tail -1 | cut -d' ' -f2)
  echo "10M combo2 after 300 steps: validation loss ${final:-missing}"
  awk -v v="${final:-99}" 'BEGIN { exit !(v < 8.0) }' || echo "the 10M run did not learn" >> "$OUT/failed-steps"
fi

# The GPU-cost measurements (pipelines/GPU_COSTS.md, section 7), each against its prediction there:
# the machine's clocks during a run (M0), the SDPA backend (M3), sequence length (M4), vocabulary
# alignment (M5), one micro-batch (M6), the 10M tier's speed (M7) and the loss's chunk (M8). About
# 6 minutes at today's speed; one table last, tokens/s per variant.
if [ "$COSTS" != 0 ]; then
  printf 'variant\ttokens_per_s\n' > "$OUT/costs.tsv"
  variant() {  # NAME TIER ARM [KEY=VALUE environment ...] -- [sg-train options ...]
    local name=$1 tier=$2 arm=$3 env=()
    shift 3
    while [ $# -gt 0 ] && [ "$1" != -- ]; do env+=("$1"); shift; done
    [ $# -gt 0 ] && shift
    step env "${env[@]}" "$BIN/sg-train" --tier "$tier" --arm "$arm" --device cuda --tokens "$TOKENS" \
      -o "$OUT/cost.h5" --force --set iterations=24 --set warmup=2 --set eval_interval=8 --set eval_batches=1 \
      --set final_eval_batches=1 --set checkpoint_interval=100000 "$@" 2>&1 | tee "$OUT/cost-$name.log"
    printf '%s\t%s\n' "$name" "$(grep -o '[0-9]* tok/s' "$OUT/cost-$name.log" | tail -1 | cut -d' ' -f1)" \
      >> "$OUT/costs.tsv"
    rm -f "$OUT/cost.h5"
  }
  nvidia-smi --query-gpu=name,mig.mode.current,memory.total,clocks.sm,clocks.max.sm,clocks.mem,power.draw,power.limit,temperature.gpu \
    --format=csv -lms 500 > "$OUT/smi.csv" 2>&1 &
  smi=$!
  variant M0-baseline 124M baseline --
  kill $smi 2>/dev/null
  for arm in baseline sinktoken renorm sinklogit; do
    variant "M3-$arm-cudnn-last" 124M "$arm" TORCH_CUDNN_SDPA_DEPRIORITIZED=1 --
  done
  variant M4-baseline-1023 124M baseline -- --set block_size=1023
  variant M4-sinktoken-1023 124M sinktoken -- --set block_size=1023
  variant M5-baseline-vocab-50304 124M baseline -- --set vocab_size=50304
  variant M6-baseline-one-micro-batch 124M baseline -- --set micro_batch=32 --set accumulation=1
  variant M7-10M-baseline 10M baseline -- --set iterations=60
  for rows in 2048 8192; do
    variant "M8-baseline-loss-chunk-$rows" 124M baseline SINKGATE_LOSS_CHUNK_ROWS=$rows --
  done
  cat "$OUT/costs.tsv"
fi

# The toy task of Figure 3 on the GPU: one cell of the grid, shortened.
step timeout 120 "$BIN/sg-toy" --device cuda --condition blind --load 8 --steps 1000 --log-interval 0 \
  -o "$OUT/toy.h5" --force

# Peak memory per tier (GPU_CHECK_MEMORY=1, about 2 minutes): three steps of the baseline and of
# combo2 at each paper tier's preset, nvidia-smi sampling the memory in use every 200 ms; set beside
# pipelines/gpu_memory.py's estimate in docs/gpu.md.
if [ "${GPU_CHECK_MEMORY:-0}" = 1 ]; then
  printf 'tier\tarm\tpeak_mib\n' > "$OUT/memory.tsv"
  for tier in 10M 50M 124M 350M; do
    for arm in baseline combo2; do
      nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 > "$OUT/memory-$tier-$arm.txt" &
      sampler=$!
      step "$BIN/sg-train" --tier "$tier" --arm "$arm" --device cuda --tokens "$TOKENS" -o "$OUT/memory.h5" --force \
        --set iterations=3 --set warmup=1 --set eval_interval=3 --set eval_batches=1 --set final_eval_batches=1 \
        --set checkpoint_interval=100000 --log-level quiet
      kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null
      printf '%s\t%s\t%s\n' "$tier" "$arm" "$(sort -n "$OUT/memory-$tier-$arm.txt" | tail -1)" >> "$OUT/memory.tsv"
    done
  done
  rm -f "$OUT/memory.h5"
  cat "$OUT/memory.tsv"
fi

if [ -s "$OUT/failed-steps" ]; then
  echo "gpu_check: FAILED:"
  cat "$OUT/failed-steps"
  exit 1
fi
echo "gpu_check: all steps passed"
