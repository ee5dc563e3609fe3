# Command-line tests of sg-inject on tiny runs trained from the token file of the sg_tokens fixture:
# the combo2 run of cli_sg-train.cmake (sg_run) and a baseline run made here; errors, each by
# running the real executable.
set(SG_INJECT_DATA ${SG_CLI_DATA}/inject)
file(MAKE_DIRECTORY ${SG_INJECT_DATA})
set(inject $<TARGET_FILE:sg-inject>)
set(SG_INJECT_FAST --batches 2 --batch-size 4)

add_test(NAME "cli: sg-inject baseline run (fixture)"
         COMMAND sg-train --tokens ${SG_CLI_DATA}/tokens.h5 --tier tiny --arm baseline --set iterations=2 --set warmup=1
                 --set eval_interval=2 --set eval_batches=1 --set final_eval_batches=1 --set block_size=32 --threads 1
                 --log-level quiet -o ${SG_INJECT_DATA}/baseline.h5 --force)
set_tests_properties("cli: sg-inject baseline run (fixture)" PROPERTIES FIXTURES_SETUP sg_inject_baseline
                     FIXTURES_REQUIRED sg_tokens)

add_test(NAME "cli: sg-inject a result table (fixture)"
         COMMAND sg-pairdiff ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/paper_table5.csv --log-level quiet
                 -o ${SG_INJECT_DATA}/table.h5 --force)
set_tests_properties("cli: sg-inject a result table (fixture)" PROPERTIES FIXTURES_SETUP sg_inject_table)

# A run whose vocabulary (4,100) is smaller than the GPT-2 token file's: trained on the tutorial
# tokenised by a small byte-level BPE that tests/tokenizer_reference.py trains.
add_test(NAME "cli: sg-inject small-vocabulary run (fixture)"
         COMMAND bash -c "set -euo pipefail; d='${SG_INJECT_DATA}/small-vocab'; ${SG_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tokenizer_reference.py pythia \"$d\"; \
$<TARGET_FILE:sg-tokenize> ${SG_CORPUS} --vocab \"$d/tokenizer.json\" --val-tokens 2000 --log-level quiet -o \"$d/tokens.h5\" --force; \
$<TARGET_FILE:sg-train> --tokens \"$d/tokens.h5\" --tier tiny --set vocab_size=4100 --set iterations=1 --set warmup=0 \
--set eval_interval=1 --set eval_batches=1 --set final_eval_batches=1 --set block_size=32 --threads 1 --log-level quiet \
-o \"$d/run.h5\" --force")
set_tests_properties("cli: sg-inject small-vocabulary run (fixture)" PROPERTIES FIXTURES_SETUP sg_inject_small_vocab)

# Two runs in, one table out; own-direction junk is left out for the arm without a projection gate,
# with a warning; the table pipes into sg-tabulate.
string(REPLACE ";" " " SG_INJECT_FAST_LINE "${SG_INJECT_FAST}")
add_test(NAME "cli: sg-inject writes one table for several runs that sg-tabulate lays out"
         COMMAND bash -c "set -euo pipefail; ${inject} --tokens ${SG_CLI_DATA}/tokens.h5 ${SG_CLI_DATA}/run.h5 ${SG_INJECT_DATA}/baseline.h5 \
--junk structured,own-direction --dose 0,0.4 ${SG_INJECT_FAST_LINE} --log-level info -o - 2> ${SG_INJECT_DATA}/log.txt \
| $<TARGET_FILE:sg-tabulate> - --where measure=injection --rows arm,junk,cutoff --cols dose --cell delta_loss --signed; \
grep -c 'warning: .*baseline.h5: own-direction junk needs a projection gate .*, and arm baseline has none; its rows are left out' ${SG_INJECT_DATA}/log.txt")
set_tests_properties("cli: sg-inject writes one table for several runs that sg-tabulate lays out" PROPERTIES
  FIXTURES_REQUIRED "sg_tokens;sg_run;sg_inject_baseline"
  PASS_REGULAR_EXPRESSION "\\| arm \\| junk \\| cutoff \\| 0 \\| 0\\.4 \\|.*\\| combo2 \\| structured \\| q25 \\| [-+]?0\\.0000 \\| [-+][0-9.]+ \\|.*\\|  \\| own-direction \\| q25 \\| [-+]?0\\.0000 \\| [-+][0-9.]+ \\|.*\\| baseline \\| structured \\| q25 \\| [-+]?0\\.0000 \\| [-+][0-9.]+ \\|\n\\|  \\|  \\| median [^\n]*\n1\n")

# Errors.
function(sg_inject_error name args code message)
  add_test(NAME "cli: sg-inject ${name}"
           COMMAND ${CMAKE_COMMAND} -DCMD=${inject} "-DARGS=--tokens;${SG_CLI_DATA}/tokens.h5;${args}"
                   -DEXPECT_CODE=${code} "-DEXPECT_STDERR=${message}" -P ${SG_EXPECT})
  set_tests_properties("cli: sg-inject ${name}" PROPERTIES
                       FIXTURES_REQUIRED "sg_tokens;sg_run;sg_inject_baseline;sg_inject_table;sg_inject_small_vocab")
endfunction()
sg_inject_error("refuses own-direction junk on an arm without a projection gate"
                "${SG_INJECT_DATA}/baseline.h5;--junk;own-direction;-o;${SG_INJECT_DATA}/never.h5" 2 "arm baseline has none")
sg_inject_error("names an unknown junk type" "${SG_CLI_DATA}/run.h5;--junk;structured,noise;-o;${SG_INJECT_DATA}/never.h5"
                2 "unknown junk type 'noise'")
sg_inject_error("refuses a dose below 0" "${SG_CLI_DATA}/run.h5;--dose;0.2,-0.4;-o;${SG_INJECT_DATA}/never.h5" 2
                "--dose: '-0.4' is not a dose")
sg_inject_error("refuses a context longer than the model's" "${SG_CLI_DATA}/run.h5;--context;64;-o;${SG_INJECT_DATA}/never.h5"
                2 "exceeds the model's context of 32")
sg_inject_error("refuses a result table given as a run file"
                "${SG_INJECT_DATA}/table.h5;-o;${SG_INJECT_DATA}/never.h5" 3 "expected 'sinkgate-run'")
sg_inject_error("refuses a token file whose vocabulary does not fit the model"
                "${SG_INJECT_DATA}/small-vocab/run.h5;-o;${SG_INJECT_DATA}/never.h5" 3 "has a vocabulary of 4100")
sg_inject_error("refuses an existing output without --force" "${SG_CLI_DATA}/run.h5;-o;${SG_INJECT_DATA}/baseline.h5" 4 "exists")
list(APPEND SG_CORPUS_TESTS "cli: sg-inject small-vocabulary run (fixture)")

# --same-context earlier: the same-context rows become same-context-earlier rows, and their junk
# differs from the look-ahead kind's (the loss under it is another number).
add_test(NAME "cli: sg-inject --same-context earlier draws from earlier positions only, and says so"
         COMMAND bash -c "set -euo pipefail; i=${inject}; t=${SG_CLI_DATA}/tokens.h5; r=${SG_INJECT_DATA}/baseline.h5; \
for s in any earlier; do $i --tokens $t $r --junk same-context --same-context $s --cutoff median --dose 1.6 \
--batches 2 --batch-size 4 --no-exposure --threads 1 --log-level quiet -o - | $<TARGET_FILE:sg-tabulate> - --rows junk --cell loss \
--decimals 6 --format tsv; done")
set_tests_properties("cli: sg-inject --same-context earlier draws from earlier positions only, and says so" PROPERTIES
  FIXTURES_REQUIRED "sg_tokens;sg_inject_baseline"
  PASS_REGULAR_EXPRESSION "same-context\t([0-9.]+)\n.*same-context-earlier\t([0-9.]+)\n$")
