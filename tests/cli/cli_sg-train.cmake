# Command-line tests of sg-train and sg-eval on the token file of cli_sg-tokenize.cmake's fixture
# (sg_tokens: the Python tutorial of the default corpus, in cli-data/tokens.h5).
# The tests' tiny run. In float32: the tests below check float32 behaviour on every CPU; what
# precision auto chooses (bf16 on a CPU with bf16 units) has a test of its own (SG_TINY_AUTO).
set(SG_TINY_AUTO --tier tiny --set iterations=6 --set warmup=2 --set eval_interval=3 --set eval_batches=1 --set final_eval_batches=1
            --set block_size=32 --threads 1)
set(SG_TINY ${SG_TINY_AUTO} --precision float32)

add_test(NAME "cli: sg-train a tiny run (fixture)"
         COMMAND sg-train --tokens ${SG_CLI_DATA}/tokens.h5 ${SG_TINY} --arm combo2 -o ${SG_CLI_DATA}/run.h5 --force)
set_tests_properties("cli: sg-train a tiny run (fixture)" PROPERTIES FIXTURES_SETUP sg_run FIXTURES_REQUIRED sg_tokens)

add_test(NAME "cli: sg-eval writes a result table that sg-tabulate reads"
         COMMAND sh -c "$<TARGET_FILE:sg-eval> --tokens ${SG_CLI_DATA}/tokens.h5 ${SG_CLI_DATA}/run.h5 -o - | $<TARGET_FILE:sg-tabulate> -")
set_tests_properties("cli: sg-eval writes a result table that sg-tabulate reads" PROPERTIES
                     FIXTURES_REQUIRED "sg_tokens;sg_run" PASS_REGULAR_EXPRESSION "combo2")

# Errors, each by running the real executable.
set(train $<TARGET_FILE:sg-train>)
add_test(NAME "cli: sg-train names a missing token file"
         COMMAND ${CMAKE_COMMAND} -DCMD=${train} "-DARGS=--tokens;${SG_CLI_DATA}/missing.h5;-o;${SG_CLI_DATA}/x.h5"
                 -DEXPECT_CODE=3 -DEXPECT_STDERR=missing.h5 -P ${SG_EXPECT})
add_test(NAME "cli: sg-train refuses a file of the wrong kind"
         COMMAND ${CMAKE_COMMAND} -DCMD=${train} "-DARGS=--tokens;${SG_CLI_DATA}/run.h5;-o;${SG_CLI_DATA}/x.h5;--force"
                 -DEXPECT_CODE=3 -DEXPECT_STDERR=sinkgate-run -P ${SG_EXPECT})
add_test(NAME "cli: sg-train refuses a token file whose vocabulary does not fit the model"
         COMMAND ${CMAKE_COMMAND} -DCMD=${train}
                 "-DARGS=--tokens;${SG_CLI_DATA}/tokens.h5;--tier;tiny;--set;vocab_size=1000;-o;${SG_CLI_DATA}/x.h5;--force"
                 -DEXPECT_CODE=3 -DEXPECT_STDERR=vocabulary -P ${SG_EXPECT})
add_test(NAME "cli: sg-train refuses an unwritable output"
         COMMAND ${CMAKE_COMMAND} -DCMD=${train} "-DARGS=--tokens;${SG_CLI_DATA}/tokens.h5;-o;/nonexistent/dir/run.h5"
                 -DEXPECT_CODE=4 -DEXPECT_STDERR=/nonexistent/dir -P ${SG_EXPECT})
add_test(NAME "cli: sg-train refuses to write its run file to stdout"
         COMMAND ${CMAKE_COMMAND} -DCMD=${train} "-DARGS=--tokens;${SG_CLI_DATA}/tokens.h5;-o;-"
                 -DEXPECT_CODE=2 "-DEXPECT_STDERR=cannot be written to stdout" -P ${SG_EXPECT})
add_test(NAME "cli: sg-train refuses a tier given as a field, pointing to --tier"
         COMMAND ${CMAKE_COMMAND} -DCMD=${train} "-DARGS=--tokens;${SG_CLI_DATA}/tokens.h5;--set;tier=tiny;-o;${SG_CLI_DATA}/x.h5;--force"
                 -DEXPECT_CODE=2 "-DEXPECT_STDERR=use --tier tiny" -P ${SG_EXPECT})
add_test(NAME "cli: sg-train refuses an existing output without --force"
         COMMAND ${CMAKE_COMMAND} -DCMD=${train} "-DARGS=--tokens;${SG_CLI_DATA}/tokens.h5;-o;${SG_CLI_DATA}/run.h5"
                 -DEXPECT_CODE=4 -DEXPECT_STDERR=exists -P ${SG_EXPECT})
add_test(NAME "cli: sg-train stops on a non-finite loss and keeps the last good checkpoint"
         COMMAND ${CMAKE_COMMAND} -DCMD=${train}
                 "-DARGS=--tokens;${SG_CLI_DATA}/tokens.h5;--tier;tiny;--set;lr_peak=1e30;--set;lr_min=0;--set;warmup=0;--set;block_size=16;-o;${SG_CLI_DATA}/diverged.h5;--force"
                 -DEXPECT_CODE=5 -DEXPECT_STDERR=non-finite -DEXPECT_FILE=${SG_CLI_DATA}/diverged.h5
                 -P ${SG_EXPECT})
set_tests_properties("cli: sg-train names a missing token file" "cli: sg-train refuses a file of the wrong kind"
                     "cli: sg-train refuses a token file whose vocabulary does not fit the model"
                     "cli: sg-train refuses an existing output without --force"
                     "cli: sg-train stops on a non-finite loss and keeps the last good checkpoint"
                     PROPERTIES FIXTURES_REQUIRED "sg_tokens;sg_run")

# --resume continues the file's run: the start-up line names it, and an option that would change
# it (another arm, seed or field) is refused instead of dropped.
string(REPLACE ";" " " SG_TINY_LINE "${SG_TINY}")
string(REPLACE ";" " " SG_TINY_AUTO_LINE "${SG_TINY_AUTO}")
add_test(NAME "cli: sg-train --resume names the file's run and refuses options that differ from it"
         COMMAND bash -c "set -euo pipefail; d='${SG_CLI_DATA}/resume'; rm -rf \"$d\"; mkdir -p \"$d\"; train=${train}
$train --tokens ${SG_CLI_DATA}/tokens.h5 ${SG_TINY_LINE} --arm sinklogit --seed 3 --stop-after 2 -o \"$d/run.h5\" 2>/dev/null
set +e; $train --tokens ${SG_CLI_DATA}/tokens.h5 --resume --arm combo2 --set warmup=1 -o \"$d/run.h5\" 2> \"$d/refused.txt\"; code=$?; set -e
echo \"refused with $code: $(cat \"$d/refused.txt\")\"
$train --tokens ${SG_CLI_DATA}/tokens.h5 --resume --seed 3 --threads 1 -o \"$d/run.h5\" 2>&1 | head -1")
set_tests_properties("cli: sg-train --resume names the file's run and refuses options that differ from it" PROPERTIES
  FIXTURES_REQUIRED sg_tokens
  PASS_REGULAR_EXPRESSION "refused with 2: sg-train: error: --resume continues the run in [^ ]*run.h5 as it was configured, but the command line asks for arm combo2 \\(the file: sinklogit\\), warmup 1 \\(the file: 2\\).*\nsg-train: resuming tier tiny, arm sinklogit, seed 3, 6 steps")

# The loss plan is part of the run: fixed at the start from the environment (here chunks of 32
# rows), recorded, printed by sg-info, kept by --resume in an environment that would choose another
# (64 rows; said once), and replaced only by --set loss_plan, with a warning. A bad plan is a usage
# error naming the field.
add_test(NAME "cli: sg-train records its loss plan, --resume keeps it, --set loss_plan replaces it with a warning"
         COMMAND bash -c "set -euo pipefail; d='${SG_CLI_DATA}/loss-plan'; rm -rf \"$d\"; mkdir -p \"$d\"; train=${train}
SINKGATE_LOSS_PRODUCTS=plain SINKGATE_LOSS_CHUNK_ROWS=32 $train --tokens ${SG_CLI_DATA}/tokens.h5 ${SG_TINY_LINE} --stop-after 2 -o \"$d/run.h5\" 2>/dev/null
$<TARGET_FILE:sg-info> \"$d/run.h5\" | grep 'loss plan'
SINKGATE_LOSS_CHUNK_ROWS=64 $train --tokens ${SG_CLI_DATA}/tokens.h5 --resume --stop-after 1 -o \"$d/run.h5\" 2>&1 | grep 'loss plan'
$train --tokens ${SG_CLI_DATA}/tokens.h5 --resume --set loss_plan=64:plain --stop-after 1 -o \"$d/run.h5\" 2>&1 | grep 'loss plan'
$<TARGET_FILE:sg-info> --format json \"$d/run.h5\" | ${SG_PYTHON} -c 'import json, sys; print(\"json:\", json.load(sys.stdin)[\"run\"][\"loss_plan\"])'
set +e; $train --tokens ${SG_CLI_DATA}/tokens.h5 ${SG_TINY_LINE} --set loss_plan=2048:fastest -o \"$d/bad.h5\" 2>&1; echo \"exit $?\"")
set_tests_properties("cli: sg-train records its loss plan, --resume keeps it, --set loss_plan replaces it with a warning" PROPERTIES
  FIXTURES_REQUIRED sg_tokens
  PASS_REGULAR_EXPRESSION "  loss plan +32:plain:[a-z0-9]+ \\(chunks of 32 rows, plain products, [a-z0-9]+ softmax rows; kept by --resume\\)\nsg-train \\[tiny/baseline/0\\] loss plan 32:plain:[a-z0-9]+, the run's own \\(recorded in its file\\); SINKGATE_LOSS_CHUNK_ROWS would choose a new run's plan, not this one's: --set loss_plan=... replaces it\nsg-train: warning: loss plan 64:plain:[a-z0-9]+ replaces the run's 32:plain:[a-z0-9]+ \\(--set loss_plan\\): the resumed run will not be bitwise identical to an uninterrupted one\njson: 64:plain:[a-z0-9]+\nsg-train: error: field 'loss_plan': '2048:fastest' names products 'fastest', not plain, packed, avx512, bf16 or avx512bf16\n.*exit 2")

# The precision is part of the run too: --precision bf16 is refused, naming what is missing, where
# the CPU's bf16 instructions are absent or masked (SINKGATE_CPU_KERNELS=avx2); where they are
# present it is recorded (sg-info prints it, with the bf16 loss plan), and --resume keeps it and
# refuses another.
add_test(NAME "cli: sg-train --precision bf16 is refused without bf16 instructions, else recorded and kept by --resume"
         COMMAND bash -c "set -euo pipefail; d='${SG_CLI_DATA}/precision'; rm -rf \"$d\"; mkdir -p \"$d\"; train=${train}
set +e; SINKGATE_CPU_KERNELS=avx2 $train --tokens ${SG_CLI_DATA}/tokens.h5 ${SG_TINY_AUTO_LINE} --precision bf16 -o \"$d/masked.h5\" 2> \"$d/masked.txt\"; code=$?; set -e
echo \"refused with $code: $(cat \"$d/masked.txt\")\"; test ! -e \"$d/masked.h5\"
if grep -qE '^flags.* (avx512_bf16|amx_bf16)( |$)' /proc/cpuinfo; then
  $train --tokens ${SG_CLI_DATA}/tokens.h5 ${SG_TINY_AUTO_LINE} --precision bf16 --stop-after 2 -o \"$d/run.h5\" 2>/dev/null
  $<TARGET_FILE:sg-info> \"$d/run.h5\" | grep -E '^  (precision|loss plan) '
  set +e; $train --tokens ${SG_CLI_DATA}/tokens.h5 --resume --precision float32 -o \"$d/run.h5\" 2>&1; echo \"exit $?\"; set -e
else echo 'this CPU has no bf16 instructions'; fi")
set_tests_properties("cli: sg-train --precision bf16 is refused without bf16 instructions, else recorded and kept by --resume" PROPERTIES
  FIXTURES_REQUIRED sg_tokens
  PASS_REGULAR_EXPRESSION "refused with 2: [^\n]*\nsg-train: error: precision bf16 on the CPU needs bf16 matrix instructions \\(AVX512-BF16 or AMX-BF16\\), but the CPU kernels are capped at AVX2 \\(SINKGATE_CPU_KERNELS=avx2\\)[^\n]*\nhint: train in float32[^\n]*\n(this CPU has no bf16 instructions|  loss plan +[0-9]+:bf16:[a-z0-9]+ [^\n]*\n  precision +bf16 \\(bf16 matrix products, float32 master weights[^\n]*\nsg-train: error: --resume continues the run in [^ ]*run.h5 as it was configured, but the command line asks for precision float32 \\(the file: bf16\\)[^\n]*\n.*exit 2)")

# precision auto: bf16 where the CPU lists bf16 matrix instructions in /proc/cpuinfo (avx512_bf16
# with avx512f, or amx_bf16 with amx_tile), announced as auto's choice; float32 where they are
# absent or masked (SINKGATE_CPU_KERNELS=avx2). A run file of a version without the field (the
# attribute removed here) trained in float32 on a CPU and resumes so, whatever the CPU.
add_test(NAME "cli: sg-train --precision auto trains in bf16 on a CPU with bf16 units, float32 elsewhere and in older run files"
         COMMAND bash -c "set -euo pipefail; d='${SG_CLI_DATA}/precision-auto'; rm -rf \"$d\"; mkdir -p \"$d\"; train=${train}
has() { grep -qE \"^flags.* $1( |$)\" /proc/cpuinfo; }
expect=float32; if { has avx512f && has avx512_bf16; } || { has amx_bf16 && has amx_tile; }; then expect=bf16; fi
precision_of() { $<TARGET_FILE:sg-info> \"$1\" | awk '$1 == \"precision\" { print $2; exit }'; }
$train --tokens ${SG_CLI_DATA}/tokens.h5 ${SG_TINY_AUTO_LINE} --stop-after 1 -o \"$d/auto.h5\" 2> \"$d/auto.txt\"
got=$(precision_of \"$d/auto.h5\"); if [ \"$got\" = $expect ]; then echo \"auto: $got, as /proc/cpuinfo says\"; else echo \"auto: $got, /proc/cpuinfo: $expect\"; fi
if [ $expect = bf16 ]; then grep -c \"precision bf16: .*auto's choice on this CPU (--precision float32 trains in float32)\" \"$d/auto.txt\"; else echo 1; fi
SINKGATE_CPU_KERNELS=avx2 $train --tokens ${SG_CLI_DATA}/tokens.h5 ${SG_TINY_AUTO_LINE} --stop-after 1 -o \"$d/masked.h5\" 2>/dev/null
echo \"masked: $(precision_of \"$d/masked.h5\")\"
$train --tokens ${SG_CLI_DATA}/tokens.h5 ${SG_TINY_LINE} --stop-after 1 -o \"$d/old.h5\" 2>/dev/null
${SG_PYTHON} -c 'import h5py, sys; f = h5py.File(sys.argv[1], \"r+\"); del f[\"config\"].attrs[\"precision\"]; f.close()' \"$d/old.h5\"
$<TARGET_FILE:sg-info> \"$d/old.h5\" | grep -E '^  precision '
$train --tokens ${SG_CLI_DATA}/tokens.h5 --resume --stop-after 2 -o \"$d/old.h5\" 2>/dev/null
echo \"resumed: $(precision_of \"$d/old.h5\")\"")
set_tests_properties("cli: sg-train --precision auto trains in bf16 on a CPU with bf16 units, float32 elsewhere and in older run files" PROPERTIES
  FIXTURES_REQUIRED sg_tokens
  PASS_REGULAR_EXPRESSION "^auto: (bf16|float32), as /proc/cpuinfo says\n1\nmasked: float32\n  precision +not recorded \\(a run file of an older version: float32 on a CPU, bf16 on a GPU\\)\nresumed: float32\n$")

# AMX: where the CPU lists AMX-BF16 (Intel Sapphire Rapids and later), a bf16 run's matrix products
# run on AMX tiles: oneDNN's own account of each product it executes (ONEDNN_VERBOSE=1) names an
# AMX kernel for every bf16 matmul of a training step. Skipped, and reported so, without AMX.
add_test(NAME "cli: sg-train's bf16 matrix products run on AMX tiles where the CPU has AMX-BF16"
         COMMAND bash -c "set -euo pipefail; d='${SG_CLI_DATA}/amx'; rm -rf \"$d\"; mkdir -p \"$d\"
if ! grep -qE '^flags.* amx_bf16( |$)' /proc/cpuinfo || ! grep -qE '^flags.* amx_tile( |$)' /proc/cpuinfo; then
  echo 'SKIPPED: this CPU has no AMX-BF16'; exit 0; fi
ONEDNN_VERBOSE=1 ${train} --tokens ${SG_CLI_DATA}/tokens.h5 ${SG_TINY_AUTO_LINE} --precision bf16 --stop-after 1 -o \"$d/run.h5\" \
  2>&1 | grep -E '^onednn_verbose,.*,exec,cpu,matmul,.*src:bf16' > \"$d/matmuls.txt\" || true
total=$(wc -l < \"$d/matmuls.txt\"); amx=$(grep -c '_amx,' \"$d/matmuls.txt\" || true)
if [ \"$total\" -gt 0 ] && [ \"$amx\" = \"$total\" ]; then echo \"every one of $total bf16 matmuls on AMX tiles\"
else echo \"$amx of $total bf16 matmuls on AMX tiles\"; head -3 \"$d/matmuls.txt\"; fi")
set_tests_properties("cli: sg-train's bf16 matrix products run on AMX tiles where the CPU has AMX-BF16" PROPERTIES
  FIXTURES_REQUIRED sg_tokens SKIP_REGULAR_EXPRESSION "SKIPPED: this CPU has no AMX-BF16"
  PASS_REGULAR_EXPRESSION "^every one of [1-9][0-9]* bf16 matmuls on AMX tiles\n$")

# The loss's own AVX512-BF16 products are a bf16 run's plan: named in a float32 run they are
# refused by name; in a bf16 run (where the CPU has AVX512-BF16) recorded and printed by sg-info.
add_test(NAME "cli: sg-train takes avx512bf16 loss products in a bf16 run only"
         COMMAND bash -c "set -euo pipefail; d='${SG_CLI_DATA}/own-bf16'; rm -rf \"$d\"; mkdir -p \"$d\"; train=${train}
set +e; $train --tokens ${SG_CLI_DATA}/tokens.h5 ${SG_TINY_LINE} --set loss_plan=32:avx512bf16 -o \"$d/float.h5\" 2>&1; echo \"exit $?\"; set -e
if grep -qE '^flags.* avx512_bf16( |$)' /proc/cpuinfo; then
  $train --tokens ${SG_CLI_DATA}/tokens.h5 ${SG_TINY_AUTO_LINE} --precision bf16 --set loss_plan=32:avx512bf16 --stop-after 2 -o \"$d/run.h5\" 2>/dev/null
  $<TARGET_FILE:sg-info> \"$d/run.h5\" | grep -E '^  loss plan '
else echo '  loss plan 32:avx512bf16:none (this CPU has no AVX512-BF16)'; fi")
set_tests_properties("cli: sg-train takes avx512bf16 loss products in a bf16 run only" PROPERTIES
  FIXTURES_REQUIRED sg_tokens
  PASS_REGULAR_EXPRESSION "sg-train: error: loss_plan 32:avx512bf16 names avx512bf16 products, which run in a bf16 run only\nhint: train with --precision bf16[^\n]*\nexit 2\n  loss plan +32:avx512bf16:[a-z0-9]+ ")

# A sweep: two runs of one tier, arm and seed apart only by a hyperparameter stay apart in every
# table made from them: --label iters=N becomes a key column (and `run` names each file), so
# sg-tabulate lays them out and sg-pairdiff pairs within each label value.
add_test(NAME "cli: sg-train --label keeps the runs of a sweep apart in sg-eval, sg-tabulate and sg-pairdiff"
         COMMAND bash -c "set -euo pipefail; d='${SG_CLI_DATA}/sweep'; rm -rf \"$d\"; mkdir -p \"$d\"
for steps in 2 4; do for arm in baseline sinklogit; do
  ${train} --tokens ${SG_CLI_DATA}/tokens.h5 --tier tiny --arm $arm --set iterations=$steps --set warmup=1 \
    --set eval_interval=2 --set eval_batches=1 --set final_eval_batches=1 --set block_size=16 --threads 1 \
    --label iters=$steps --log-level quiet -o \"$d/$arm-$steps.h5\"
done; done
$<TARGET_FILE:sg-eval> --tokens ${SG_CLI_DATA}/tokens.h5 \"$d\"/*.h5 --threads 1 --log-level quiet -o \"$d/val.h5\"
$<TARGET_FILE:sg-tabulate> \"$d/val.h5\" --rows iters --cols arm --cell val_loss
$<TARGET_FILE:sg-pairdiff> \"$d/val.h5\" --ref baseline --log-level quiet | $<TARGET_FILE:sg-tabulate> - --rows iters --cols arm --se none
$<TARGET_FILE:sg-tabulate> \"$d/val.h5\" --where iters=4 --rows run --cols arm --cell steps
set +e; ${train} --tokens ${SG_CLI_DATA}/tokens.h5 --resume --label iters=9 -o \"$d/baseline-2.h5\" 2>&1; echo \"exit $?\"")
set_tests_properties("cli: sg-train --label keeps the runs of a sweep apart in sg-eval, sg-tabulate and sg-pairdiff" PROPERTIES
  FIXTURES_REQUIRED sg_tokens
  PASS_REGULAR_EXPRESSION "\\| iters \\| baseline \\| sinklogit \\|\n\\| :--- \\| ---: \\| ---: \\|\n\\| 2 \\| [0-9.]+ \\| [0-9.]+ \\|\n\\| 4 \\| [0-9.]+ \\| [0-9.]+ \\|.*\\| iters \\| sinklogit \\|\n\\| :--- \\| ---: \\|\n\\| 2 \\| [-0-9.]+ \\|\n\\| 4 \\| [-0-9.]+ \\|.*\\| [^|]*sweep/baseline-4.h5 \\| 4 \\| – \\|.*asks for labels iters=9 \\(the file: iters=2\\).*exit 2")

# Progress: the run's name on every line, its size at the start, a line every --log-interval
# seconds besides the evaluations' (0: those only), and the curves as JSON Lines (--log-json).
add_test(NAME "cli: sg-train names the run on every progress line and writes the curves as JSON Lines"
         COMMAND bash -c "set -euo pipefail; d='${SG_CLI_DATA}/progress'; rm -rf \"$d\"; mkdir -p \"$d\"
${train} --tokens ${SG_CLI_DATA}/tokens.h5 ${SG_TINY_LINE} --arm projgate --seed 2 --log-interval 0 -o \"$d/a.h5\" 2>&1 | grep -c '^sg-train \\[tiny/projgate/2\\] step'
${train} --tokens ${SG_CLI_DATA}/tokens.h5 ${SG_TINY_LINE} --label run=lr-sweep --log-interval 0.000001 \
  --log-json \"$d/curves.jsonl\" -o \"$d/b.h5\" 2>&1 | sed -n '2p;6p'
${SG_PYTHON} -c 'import json, sys; rows = [json.loads(l) for l in open(sys.argv[1])]; print(len(rows), rows[0][\"run\"], [r[\"step\"] for r in rows if \"val_loss\" in r], rows[-1][\"final_val_loss\"] > 0)' \"$d/curves.jsonl\"")
set_tests_properties("cli: sg-train names the run on every progress line and writes the curves as JSON Lines" PROPERTIES
  FIXTURES_REQUIRED sg_tokens
  PASS_REGULAR_EXPRESSION "^2\nsg-train \\[lr-sweep\\] [0-9]+ parameters, 256 tokens a step \\(8 x 1 sequences of 32\\), 6 steps to go\nsg-train \\[lr-sweep\\] step 3/6  loss [0-9.]+  val [0-9.]+  lr [0-9.e+-]+  [0-9]+ tok/s  eta [0-9:]+\n7 lr-sweep \\[3, 6\\] True\n$")

# Near misses get a pointer: a tier in the wrong case, a field given as an option, a typo'd field.
add_test(NAME "cli: sg-train suggests the tier a typo meant"
         COMMAND ${CMAKE_COMMAND} -DCMD=${train} "-DARGS=--tokens;${SG_CLI_DATA}/tokens.h5;--tier;Tiny;-o;${SG_CLI_DATA}/x.h5;--force"
                 -DEXPECT_CODE=2 "-DEXPECT_STDERR=did you mean 'tiny'?" -P ${SG_EXPECT})
add_test(NAME "cli: sg-train points a field given as an option to --set"
         COMMAND ${CMAKE_COMMAND} -DCMD=${train} "-DARGS=--tokens;${SG_CLI_DATA}/tokens.h5;--iterations;50;-o;${SG_CLI_DATA}/x.h5"
                 -DEXPECT_CODE=2 "-DEXPECT_STDERR=use --set iterations=VALUE" -P ${SG_EXPECT})
add_test(NAME "cli: sg-train suggests the field and names the values of a range error"
         COMMAND bash -c "${train} --tokens ${SG_CLI_DATA}/tokens.h5 --set iteration=5 -o ${SG_CLI_DATA}/x.h5 --force 2>&1; \
${train} --tokens ${SG_CLI_DATA}/tokens.h5 --tier tiny --set iterations=5 --set warmup=50 -o ${SG_CLI_DATA}/x.h5 --force 2>&1; true")
set_tests_properties("cli: sg-train suggests the tier a typo meant" "cli: sg-train points a field given as an option to --set"
                     "cli: sg-train suggests the field and names the values of a range error" PROPERTIES FIXTURES_REQUIRED sg_tokens)
set_tests_properties("cli: sg-train suggests the field and names the values of a range error" PROPERTIES
                     PASS_REGULAR_EXPRESSION "did you mean 'iterations'\\?.*warmup \\(50\\) must lie in \\[0, iterations \\(5\\)\\]")

# Run files hold float32 tensors only: a weight or an optimizer moment rewritten as float64 (h5py)
# is an input error naming the tensor, not a failure inside LibTorch's step (exit 1); its attributes
# (the checksum among them) are kept, so that the dtype and not a missing checksum is what is refused.
if(SG_PYTHON)
  add_test(NAME "cli: sg-train --resume refuses float64 weights and moments, naming the tensor"
           COMMAND bash -c "set -uo pipefail; d='${SG_CLI_DATA}/float64'; rm -rf \"$d\"; mkdir -p \"$d\"; cd \"$d\"; \
train=$<TARGET_FILE:sg-train>; t='${SG_CLI_DATA}/tokens.h5'; \
$train --tokens $t --tier tiny --set iterations=4 --set warmup=1 --set eval_interval=4 --threads 1 --stop-after 1 --log-level error -o run.h5; \
for what in model/wte.weight optimizer/wte.weight/exp_avg; do cp run.h5 \"w.h5\"; \
${SG_PYTHON} -c \"import h5py, sys; f = h5py.File('w.h5', 'r+'); d = f[sys.argv[1]]; x = d[...]; a = dict(d.attrs); del f[sys.argv[1]]; f[sys.argv[1]] = x.astype('float64'); [f[sys.argv[1]].attrs.__setitem__(k, v) for k, v in a.items()]\" $what; \
$train --tokens $t --resume --threads 1 --log-level error -o w.h5 2>&1; echo \"exit $?\"; done")
  set_tests_properties("cli: sg-train --resume refuses float64 weights and moments, naming the tensor" PROPERTIES
    FIXTURES_REQUIRED sg_tokens
    PASS_REGULAR_EXPRESSION "w.h5: /model/wte.weight is stored as float64, but run files hold float32 tensors.*\nexit 3\n.*w.h5: /optimizer/wte.weight/exp_avg is stored as float64, but run files hold float32 tensors.*\nexit 3")
endif()

# A lock file planted as a symbolic or hard link to another file is refused (exit 4), and the file
# it points at keeps its bytes: in a shared folder a link would otherwise make sg-train overwrite it.
add_test(NAME "cli: sg-train refuses a lock file that is a link and leaves its target alone"
         COMMAND bash -c "set -uo pipefail; d='${SG_CLI_DATA}/lock-link'; rm -rf \"$d\"; mkdir -p \"$d\"; cd \"$d\"; \
train=$<TARGET_FILE:sg-train>; t='${SG_CLI_DATA}/tokens.h5'; echo precious > victim.txt; \
ln -s victim.txt run.h5.lock; $train --tokens $t --tier tiny --set iterations=1 --set warmup=0 --threads 1 -o run.h5 2>&1; echo \"exit $?\"; \
rm run.h5.lock; ln victim.txt run.h5.lock; $train --tokens $t --tier tiny --set iterations=1 --set warmup=0 --threads 1 -o run.h5 2>&1; \
echo \"exit $?\"; cat victim.txt; ls")
set_tests_properties("cli: sg-train refuses a lock file that is a link and leaves its target alone" PROPERTIES
  FIXTURES_REQUIRED sg_tokens
  PASS_REGULAR_EXPRESSION "run.h5.lock is a symbolic link. sinkgate does not write through one.*\nexit 4\n.*run.h5.lock is a hard link to another file.*\nexit 4\nprecious\nrun.h5.lock\nvictim.txt\n$")

# Output names of 251 to 255 bytes, which other tools write: the lock file's name fits the file
# system too (the name's head and a hash, then .lock), and is gone after the run.
add_test(NAME "cli: sg-train writes a run file of a 251- and a 255-byte name"
         COMMAND bash -c "set -uo pipefail; d='${SG_CLI_DATA}/long-name'; rm -rf \"$d\"; mkdir -p \"$d\"; cd \"$d\"; \
train=$<TARGET_FILE:sg-train>; t='${SG_CLI_DATA}/tokens.h5'; \
for length in 251 255; do name=$(printf 'r%.0s' $(seq $((length - 3)))).h5; \
$train --tokens $t --tier tiny --set iterations=1 --set warmup=0 --set block_size=16 --threads 1 --log-level error -o $name 2>&1; \
code=$?; echo \"exit $code $(printf %s $name | wc -c) bytes, $(ls | wc -l) file\"; rm -f $name; done")
set_tests_properties("cli: sg-train writes a run file of a 251- and a 255-byte name" PROPERTIES
  FIXTURES_REQUIRED sg_tokens PASS_REGULAR_EXPRESSION "^exit 0 251 bytes, 1 file\nexit 0 255 bytes, 1 file\n$")

# SIGTERM: the run checkpoints the step it is on and exits 6; resumed, it goes on. Meanwhile a
# second sg-train on the same output is refused at once (exit 4, naming the holder's pid), and no
# lock file is left behind.
add_test(NAME "cli: sg-train checkpoints on SIGTERM and holds its output against a second writer"
         COMMAND bash -c "set -uo pipefail; d='${SG_CLI_DATA}/signal'; rm -rf \"$d\"; mkdir -p \"$d\"; cd \"$d\"; \
train=$<TARGET_FILE:sg-train>; t='${SG_CLI_DATA}/tokens.h5'; \
$train --tokens $t --tier tiny --arm baseline --set iterations=100000 --set eval_interval=100000 --threads 1 \
--log-level quiet -o run.h5 --force 2> first.txt & pid=$!; \
for i in $(seq 100); do [ -e run.h5.lock ] && [ -e run.h5 ] && break; sleep 0.1; done; sleep 1; \
$train --tokens $t --tier tiny --arm baseline --threads 1 --log-level quiet -o run.h5 --force 2> second.txt; \
echo \"second exit $?\"; grep -o 'another process (pid [0-9]*) is writing run.h5' second.txt; \
kill -TERM $pid; wait $pid; echo \"first exit $?\"; grep -o 'stopped by SIGTERM at step [0-9]*' first.txt; \
ls; $<TARGET_FILE:sg-info> run.h5 | grep -o 'step [0-9]* of 100000, unfinished'")
set_tests_properties("cli: sg-train checkpoints on SIGTERM and holds its output against a second writer" PROPERTIES
  FIXTURES_REQUIRED sg_tokens
  PASS_REGULAR_EXPRESSION "second exit 4\nanother process \\(pid [0-9]+\\) is writing run.h5\nfirst exit 6\nstopped by SIGTERM at step [1-9][0-9]*\nfirst.txt\nrun.h5\nsecond.txt\nstep [1-9][0-9]* of 100000, unfinished")

# A diverging run keeps a checkpoint that is finite (it scores), not one of NaN weights.
add_test(NAME "cli: sg-train never writes non-finite weights into a checkpoint"
         COMMAND bash -c "d='${SG_CLI_DATA}/diverge'; rm -rf \"$d\"; mkdir -p \"$d\"; \
$<TARGET_FILE:sg-train> --tokens ${SG_CLI_DATA}/tokens.h5 --tier tiny --arm baseline --precision float32 --set lr_peak=1000 \
--set checkpoint_interval=1 --set iterations=60 --set warmup=1 --threads 1 --log-level quiet -o $d/nan.h5 --force 2>&1; \
echo \"exit $?\"; $<TARGET_FILE:sg-eval> --tokens ${SG_CLI_DATA}/tokens.h5 $d/nan.h5 --batches 1 --log-level quiet -o - \
| $<TARGET_FILE:sg-tabulate> - --format csv")
set_tests_properties("cli: sg-train never writes non-finite weights into a checkpoint" PROPERTIES
  FIXTURES_REQUIRED sg_tokens
  PASS_REGULAR_EXPRESSION "are not finite at step [0-9]+; [^ ]*nan.h5 keeps its last checkpoint.*exit 5\n.*\ntiny,baseline,0,[0-9][0-9.e+]*,")

# An output that is one of the inputs is refused, --force or not.
add_test(NAME "cli: sg-eval refuses to overwrite one of its inputs"
         COMMAND ${CMAKE_COMMAND} -DCMD=$<TARGET_FILE:sg-eval>
                 "-DARGS=--tokens;${SG_CLI_DATA}/tokens.h5;${SG_CLI_DATA}/run.h5;-o;${SG_CLI_DATA}/run.h5;--force"
                 -DEXPECT_CODE=4 "-DEXPECT_STDERR=is also an input" -P ${SG_EXPECT})
set_tests_properties("cli: sg-eval refuses to overwrite one of its inputs" PROPERTIES FIXTURES_REQUIRED "sg_tokens;sg_run")
add_test(NAME "cli: sg-train refuses to overwrite its token file"
         COMMAND ${CMAKE_COMMAND} -DCMD=$<TARGET_FILE:sg-train>
                 "-DARGS=--tokens;${SG_CLI_DATA}/tokens.h5;--tier;tiny;-o;${SG_CLI_DATA}/tokens.h5;--force"
                 -DEXPECT_CODE=4 "-DEXPECT_STDERR=is also an input" -P ${SG_EXPECT})
set_tests_properties("cli: sg-train refuses to overwrite its token file" PROPERTIES FIXTURES_REQUIRED sg_tokens)
add_test(NAME "cli: sg-train names a directory given as the token file"
         COMMAND ${CMAKE_COMMAND} -DCMD=$<TARGET_FILE:sg-train>
                 "-DARGS=--tokens;${CMAKE_CURRENT_SOURCE_DIR};--tier;tiny;-o;${SG_CLI_DATA}/never.h5" -DEXPECT_CODE=3
                 "-DEXPECT_STDERR=is a directory, expected a file" -P ${SG_EXPECT})
add_test(NAME "cli: an output under a regular file is named as such, without a mkdir hint"
         COMMAND ${CMAKE_COMMAND} -DCMD=$<TARGET_FILE:sg-train>
                 "-DARGS=--tokens;${SG_CLI_DATA}/tokens.h5;--tier;tiny;-o;${SG_CLI_DATA}/tokens.h5/sub/run.h5"
                 -DEXPECT_CODE=4 "-DEXPECT_STDERR=tokens.h5 is a file, not a directory" -P ${SG_EXPECT})
set_tests_properties("cli: an output under a regular file is named as such, without a mkdir hint" PROPERTIES
                     FIXTURES_REQUIRED sg_tokens)

# A closed pipe (SIGPIPE ignored; EPIPE handled): a log reader that goes away does not stop a run,
# and a data writer whose reader has gone exits 0 and leaves no temporary file.
add_test(NAME "cli: sg-train piped into head finishes its run"
         COMMAND sh -c "$<TARGET_FILE:sg-train> --tokens ${SG_CLI_DATA}/tokens.h5 --tier tiny --set iterations=6 \
--set warmup=2 --set eval_interval=3 --set eval_batches=1 --set final_eval_batches=1 --threads 1 --log-interval 0.01 \
-o ${SG_CLI_DATA}/piped.h5 --force 2>&1 | head -1 > /dev/null; $<TARGET_FILE:sg-info> ${SG_CLI_DATA}/piped.h5")
set_tests_properties("cli: sg-train piped into head finishes its run" PROPERTIES FIXTURES_REQUIRED sg_tokens
                     PASS_REGULAR_EXPRESSION "step 6 of 6, finished")
add_test(NAME "cli: a result table to a closed pipe exits 0 and leaves no temporary file"
         COMMAND sh -c "export TMPDIR=${SG_CLI_DATA}/pipe-tmp; rm -rf $TMPDIR; mkdir -p $TMPDIR; \
$<TARGET_FILE:sg-eval> --tokens ${SG_CLI_DATA}/tokens.h5 ${SG_CLI_DATA}/run.h5 --batches 1 --log-level quiet -o - \
| head -c 1 > /dev/null; ls -A $TMPDIR | wc -l | sed 's/^/left: /'")
set_tests_properties("cli: a result table to a closed pipe exits 0 and leaves no temporary file" PROPERTIES
                     FIXTURES_REQUIRED "sg_tokens;sg_run" PASS_REGULAR_EXPRESSION "left: 0")

# Crash consistency (tests/crash_consistency.py): runs killed by SIGKILL at random moments, several
# times each, then resumed, end bitwise equal to an uninterrupted run (timings aside); after every
# kill the output is absent or a complete run file; no temporary file outlives the next write.
# SINKGATE_CRASH_TRIALS sets the number of trials (6 here, 3 kills each).
if(SG_PYTHON)
  add_test(NAME "cli: sg-train killed by SIGKILL at random moments resumes to the uninterrupted run, bitwise"
           COMMAND ${SG_PYTHON} ${PROJECT_SOURCE_DIR}/tests/crash_consistency.py ${CMAKE_RUNTIME_OUTPUT_DIRECTORY}
                   ${SG_CLI_DATA}/tokens.h5 ${SG_CLI_DATA}/crash --corpus ${SG_CORPUS} --tokenize-kills 5)
  set_tests_properties("cli: sg-train killed by SIGKILL at random moments resumes to the uninterrupted run, bitwise"
                       PROPERTIES FIXTURES_REQUIRED sg_tokens TIMEOUT 900
                       PASS_REGULAR_EXPRESSION "every killed run resumed to the uninterrupted result")
  list(APPEND SG_CORPUS_TESTS "cli: sg-train killed by SIGKILL at random moments resumes to the uninterrupted run, bitwise")
endif()

# Outputs aimed at inputs: -o on the --config file, --log-json on the token file, the
# --config file or the run file itself are refused (exit 4) and leave the input as it was; a token
# file whose validation split is shorter than a window is refused (exit 3) before the run file exists.
add_test(NAME "cli: sg-train refuses outputs aimed at its inputs and a too short token file before writing"
         COMMAND bash -c "set -uo pipefail; d='${SG_CLI_DATA}/train-inputs'; rm -rf \"$d\"; mkdir -p \"$d\"; cd \"$d\"; \
train=$<TARGET_FILE:sg-train>; cp '${SG_CLI_DATA}/tokens.h5' t.h5; printf 'iterations = 1\\nwarmup = 0\\n' > c.conf; \
sum() { sha256sum t.h5 c.conf | sha256sum; }; before=$(sum); \
a=\"--tokens t.h5 --tier tiny --config c.conf --threads 1 --log-level error\"; \
$train $a -o c.conf --force 2>&1; echo \"exit $?\"; \
$train $a -o r.h5 --log-json t.h5 2>&1; echo \"exit $?\"; \
$train $a -o r.h5 --log-json c.conf 2>&1; echo \"exit $?\"; \
$train $a -o r.h5 --log-json ./r.h5 2>&1; echo \"exit $?\"; \
[ \"$before\" = \"$(sum)\" ] && echo inputs unchanged; \
printf 'A few words.' > short.txt; $<TARGET_FILE:sg-tokenize> short.txt --vocab '${SG_GPT2_VOCAB}' --val-tokens 2 -o s.h5 --log-level error; \
$train --tokens s.h5 --tier tiny --set iterations=1 --set warmup=0 --threads 1 --log-level error -o r.h5 2>&1; echo \"exit $?\"; ls")
set_tests_properties("cli: sg-train refuses outputs aimed at its inputs and a too short token file before writing" PROPERTIES
    FIXTURES_REQUIRED sg_tokens
    PASS_REGULAR_EXPRESSION "c.conf is also an input[^\n]*\n[^\n]*\nexit 4\n[^\n]*--log-json t.h5 is the token file[^\n]*\n[^\n]*\nexit 4\n[^\n]*--log-json c.conf is the --config file[^\n]*\n[^\n]*\nexit 4\n[^\n]*--log-json ./r.h5 is the run file[^\n]*\n[^\n]*\nexit 4\ninputs unchanged\n[^\n]*s.h5: the [a-z]+ split has [0-9]+ tokens, not more than the context length 64\n[^\n]*\nexit 3\nc.conf\ns.h5\nshort.txt\nt.h5\n$")

# A token split read window by window (SINKGATE_RESIDENT_TOKENS below its size, as a stream of more
# than 2^31 tokens is by default) whose chunk was zeroed with its Fletcher32 (a lost write, which
# libhdf5 passes): the chunk table's CRC32C refuses it (exit 3, naming the file and the chunk),
# as the whole-split CRC32C does when the split is kept in memory. Never a run trained on zeros.
if(SG_PYTHON)
  add_test(NAME "cli: sg-train refuses a token file with a zeroed chunk, read whole or window by window"
           COMMAND bash -c "set -uo pipefail; d='${SG_CLI_DATA}/zeroed-tokens'; rm -rf \"$d\"; mkdir -p \"$d\"; \
${SG_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/h5_hostile.py zero-chunk ${SG_CLI_DATA}/tokens.h5 \"$d/tokens.h5\" --dataset /tokens/train; \
for resident in 0 4294967296; do SINKGATE_RESIDENT_TOKENS=$resident $<TARGET_FILE:sg-train> --tokens \"$d/tokens.h5\" \
--tier tiny --set iterations=2 --set warmup=0 --set block_size=16 --threads 1 --log-level quiet -o \"$d/run-$resident.h5\" \
--force 2> \"$d/err.txt\"; echo \"resident $resident: exit $?\"; grep -oE 'tokens.h5: dataset /tokens/train fails (its checksum|the checksum of its chunk [0-9]+)' \"$d/err.txt\"; done")
  set_tests_properties("cli: sg-train refuses a token file with a zeroed chunk, read whole or window by window" PROPERTIES
    FIXTURES_REQUIRED sg_tokens
    PASS_REGULAR_EXPRESSION "/tokens/train\nresident 0: exit 3\ntokens.h5: dataset /tokens/train fails the checksum of its chunk 0\nresident 4294967296: exit 3\ntokens.h5: dataset /tokens/train fails its checksum\n$")
endif()

# SIGTERM after the last step's checkpoint, while sg-train is on its way out (held there by a full
# stderr pipe): the run is finished, so exit 0, never the signal's default 143.
if(SG_PYTHON)
  add_test(NAME "cli: sg-train signalled after its last checkpoint exits 0, not 143"
           COMMAND ${SG_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/sigterm_after_finish.py $<TARGET_FILE:sg-train>
                   ${SG_CLI_DATA}/tokens.h5 ${SG_CLI_DATA}/sigterm-after-finish)
  set_tests_properties("cli: sg-train signalled after its last checkpoint exits 0, not 143" PROPERTIES
    FIXTURES_REQUIRED sg_tokens PASS_REGULAR_EXPRESSION "exit 0\nfinished line after the signal")
endif()

# A rate far too large overflows the attention at step 2: by default exit 5 (the run file keeps its
# last checkpoint); with --on-nonfinite stop, exit 0 and the step in the curves, the run unfinished.
set(SG_OVERFLOW --tokens ${SG_CLI_DATA}/tokens.h5 --tier tiny --set lr_peak=1e30 --set lr_min=1e29 --set iterations=5
                --set warmup=1 --set eval_interval=5 --set eval_batches=1 --set final_eval_batches=1 --set block_size=16
                --threads 1 --log-level quiet)
string(REPLACE ";" " " SG_OVERFLOW_LINE "${SG_OVERFLOW}")
add_test(NAME "cli: sg-train stops at a non-finite loss with exit 5 by default"
         COMMAND ${CMAKE_COMMAND} -DCMD=${train} "-DARGS=${SG_OVERFLOW};-o;${SG_CLI_DATA}/overflow-error.h5;--force"
                 -DEXPECT_CODE=5 "-DEXPECT_STDERR=non-finite training loss at step 1" -P ${SG_EXPECT})
set_tests_properties("cli: sg-train stops at a non-finite loss with exit 5 by default" PROPERTIES FIXTURES_REQUIRED sg_tokens)
add_test(NAME "cli: sg-train --on-nonfinite stop keeps the diverged step in the curves"
         COMMAND sh -c "${train} ${SG_OVERFLOW_LINE} --on-nonfinite stop -o ${SG_CLI_DATA}/overflow.h5 --force && \
$<TARGET_FILE:sg-info> --curves ${SG_CLI_DATA}/overflow.h5 | cut -f5-7 | grep -e '^train_loss' -e '^grad_norm' && \
$<TARGET_FILE:sg-info> ${SG_CLI_DATA}/overflow.h5 | grep progress")
set_tests_properties("cli: sg-train --on-nonfinite stop keeps the diverged step in the curves" PROPERTIES
  FIXTURES_REQUIRED sg_tokens
  PASS_REGULAR_EXPRESSION "\ntrain_loss\t1\t10\\.[0-9]+\ntrain_loss\t2\tnan\ngrad_norm\t1\t[0-9.]+\ngrad_norm\t2\tnan\n *progress +step 2 of 5, ")
