# make stability (pipelines/stability.mk): the claims printer on hand-made tables (with claims that
# hold and claims that do not), the grid's dry run, and a tiny grid end to end.
find_program(SG_STABILITY_PYTHON NAMES python3)
if(SG_STABILITY_PYTHON)
  add_test(NAME "stability claims: each claim with its numbers from hand-made tables, failing ones marked"
           COMMAND ${SG_STABILITY_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/stability_claims.py ${CMAKE_SOURCE_DIR}/pipelines/stability.py)
  set_tests_properties("stability claims: each claim with its numbers from hand-made tables, failing ones marked" PROPERTIES
    PASS_REGULAR_EXPRESSION "stability claims: ok")
  # The one rule every claim printer uses (pipelines/claim_rule.py): noise, one disagreeing pair, a true effect.
  add_test(NAME "claims rule: holds only when every seed pair agrees and the mean clears its threshold by two SE"
           COMMAND ${SG_STABILITY_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/claim_rule.py ${CMAKE_SOURCE_DIR}/pipelines/claim_rule.py)
  set_tests_properties("claims rule: holds only when every seed pair agrees and the mean clears its threshold by two SE" PROPERTIES
    PASS_REGULAR_EXPRESSION "claim rule: ok")
endif()
if(NOT SG_WITH_TORCH)
  return()
endif()
set(SG_STABILITY_WORK ${CMAKE_CURRENT_BINARY_DIR}/make-stability)
set(SG_STABILITY_MAKE "make -C ${CMAKE_SOURCE_DIR} -f Makefile.experiments BIN=${CMAKE_RUNTIME_OUTPUT_DIRECTORY} DEFAULT_CORPUS=${SG_DEFAULT_CORPUS}")

# The quick profile's grid: eight arms, seven rates from a quarter of the tier's to 1,024 times it (factors of 4),
# two seeds, each run labelled with its factor and kept when it diverges.
add_test(NAME "make: stability's dry run trains every arm at every rate with paired seeds"
         COMMAND bash -c "${SG_STABILITY_MAKE} -n stability-tables PROFILE=quick OUT=${SG_STABILITY_WORK}/dry \
TOKENS=${SG_STABILITY_WORK}/dry/tokens.h5 > ${SG_STABILITY_WORK}-dry.txt; grep -c -e '--label lr_factor=[0-9.]* --on-nonfinite stop' \
${SG_STABILITY_WORK}-dry.txt; grep -o -e 'runs/tiny/[a-z0-9+]*/lr[0-9.]*/[01].partial.h5 --force' ${SG_STABILITY_WORK}-dry.txt | sort -u | wc -l; \
grep -o -e '--tier tiny --arm [a-z0-9+]*' ${SG_STABILITY_WORK}-dry.txt | LC_ALL=C sort -u | tr '\\n' ' '; echo; \
grep -o -e 'lr_factor=[0-9.]*' ${SG_STABILITY_WORK}-dry.txt | sort -u -t= -k2 -g | tr '\\n' ' '")
set_tests_properties("make: stability's dry run trains every arm at every rate with paired seeds" PROPERTIES
  PASS_REGULAR_EXPRESSION "^112\n112\n--tier tiny --arm baseline --tier tiny --arm combo2 --tier tiny --arm keygate --tier tiny --arm offbyone \
--tier tiny --arm outgate --tier tiny --arm projgate --tier tiny --arm sinklogit --tier tiny --arm sinklogit\\+outgate \n\
lr_factor=0.25 lr_factor=1 lr_factor=4 lr_factor=16 lr_factor=64 lr_factor=256 lr_factor=1024 ")

add_test(NAME "make: stability trains a tiny grid, scores it on both sets and prints the claims and the figure"
         COMMAND bash -c "set -euo pipefail; rm -rf '${SG_STABILITY_WORK}/run'; ${SG_STABILITY_MAKE} -j2 stability \
OUT=${SG_STABILITY_WORK}/run STABILITY_TIER=tiny TOKENS=${SG_CLI_DATA}/tokens.h5 CORPUS=${SG_DEFAULT_CORPUS} STABILITY_REPETITIVE_LIMIT=20000 \
STABILITY_ARMS='baseline outgate' STABILITY_LR_FACTORS='1 16' STABILITY_SEEDS='0 1' STABILITY_REPETITIVE_VAL=2000 \
STABILITY_FLAGS='--set iterations=4 --set warmup=1 --set eval_interval=4 --set eval_batches=1 --set final_eval_batches=1 --set block_size=16' \
PROBE_FLAGS='--batches 2' | tail -n 30; head -c 4 ${SG_STABILITY_WORK}/run/stability/stability.png | od -An -c | tr -d ' \\n'; echo")
set_tests_properties("make: stability trains a tiny grid, scores it on both sets and prints the claims and the figure" PROPERTIES
  FIXTURES_REQUIRED sg_tokens
  PASS_REGULAR_EXPRESSION "\\| Arm \\| lr 0\\.0006 \\| lr 0\\.0096 \\| largest stable lr \\|.*\\| baseline \\| [0-9.]+ ± [0-9.]+[^|]*\\| [0-9.]+ ± [0-9.]+.*repetitive-context set.*\\(a\\) the output gate tolerates a larger rate than the baseline[^\n]*: \\*\\*(holds|not shown|untested)\\*\\* — .*\\(d\\) largest stable rate of each arm: baseline [0-9.a-z]+, outgate [0-9.a-z]+.*PNG")
