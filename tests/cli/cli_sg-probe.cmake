# Command-line tests of sg-probe on the tiny runs of cli_sg-train.cmake (combo2, fixture sg_run) and
# cli_sg-inject.cmake (baseline, small vocabulary): one table for several runs laid out by
# sg-tabulate, probes left out where they do not apply, and errors, each by running the executable.
set(SG_PROBE_DATA ${SG_CLI_DATA}/probe)
file(MAKE_DIRECTORY ${SG_PROBE_DATA})
set(probe $<TARGET_FILE:sg-probe>)
set(SG_PROBE_FIXTURES "sg_tokens;sg_run;sg_inject_baseline;sg_inject_small_vocab")

# Every probe on two runs; Table 8's layout from the table, the gate-token rows carry decoded text,
# and the baseline's gate probes are left out with a warning.
add_test(NAME "cli: sg-probe writes one table for several runs that sg-tabulate lays out"
         COMMAND bash -c "set -euo pipefail; ${probe} --tokens ${SG_CLI_DATA}/tokens.h5 ${SG_CLI_DATA}/run.h5 \
${SG_INJECT_DATA}/baseline.h5 --batches 2 --batch-size 4 --min-count 2 --top 3 -o ${SG_PROBE_DATA}/all.h5 --force \
2> ${SG_PROBE_DATA}/log.txt; \
$<TARGET_FILE:sg-tabulate> ${SG_PROBE_DATA}/all.h5 --where probe=overrides --where statistic=loss --rows arm,override \
--cols dose --cell value; \
$<TARGET_FILE:sg-tabulate> ${SG_PROBE_DATA}/all.h5 --where probe=sinks --where layer=all --where head=all --rows arm \
--cols statistic --cell value; \
$<TARGET_FILE:sg-tabulate> ${SG_PROBE_DATA}/all.h5 --where probe=gate-tokens --where layer=all --where statistic=occurrences \
--rows end,rank,token,text --cell value --format csv | head -3; \
grep -c 'warning: .*baseline.h5: probe overrides does not apply to arm baseline' ${SG_PROBE_DATA}/log.txt")
set_tests_properties("cli: sg-probe writes one table for several runs that sg-tabulate lays out" PROPERTIES
  FIXTURES_REQUIRED "${SG_PROBE_FIXTURES}"
  PASS_REGULAR_EXPRESSION "\\| arm \\| override \\| 0 \\| 0\\.2 \\|.*\\| combo2 \\| trained \\| [0-9.]+ \\| [0-9.]+ \\|\n\\|  \\| row-mean [^\n]*\n\\|  \\| shuffle [^\n]*\n\\|  \\| reopen [^\n]*\n\\| arm \\| position0_mass \\| phantom_mass \\| sink_mass \\| r0_ratio \\|.*\\| combo2 \\| 0\\.[0-9]+ \\| 0\\.[0-9]+ \\|.*\\| baseline \\| 0\\.[0-9]+ \\| – \\|.*most-attenuated,1,[0-9]+,[^,\n]+,[0-9]+.*\n1\n")

function(sg_probe_error name args code message)
  add_test(NAME "cli: sg-probe ${name}"
           COMMAND ${CMAKE_COMMAND} -DCMD=${probe} "-DARGS=--tokens;${SG_CLI_DATA}/tokens.h5;${args}"
                   -DEXPECT_CODE=${code} "-DEXPECT_STDERR=${message}" -P ${SG_EXPECT})
  set_tests_properties("cli: sg-probe ${name}" PROPERTIES FIXTURES_REQUIRED "${SG_PROBE_FIXTURES}")
endfunction()
sg_probe_error("refuses overrides alone on an arm without a gate"
               "${SG_INJECT_DATA}/baseline.h5;--probe;overrides;-o;${SG_PROBE_DATA}/never.h5" 2
               "none of the probes asked for applies to arm baseline")
sg_probe_error("names an unknown probe with a suggestion" "${SG_CLI_DATA}/run.h5;--probe;sinkz;-o;${SG_PROBE_DATA}/never.h5"
               2 "did you mean 'sinks'?")
sg_probe_error("refuses a vocabulary other than the one the token file records"
               "${SG_CLI_DATA}/run.h5;--probe;gate-tokens;--vocab;${SG_INJECT_DATA}/small-vocab/tokenizer.json;-o;${SG_PROBE_DATA}/never.h5"
               3 "is not the one ${SG_CLI_DATA}/tokens.h5 records")
sg_probe_error("refuses a token file whose vocabulary does not fit the model"
               "${SG_INJECT_DATA}/small-vocab/run.h5;-o;${SG_PROBE_DATA}/never.h5" 3 "has a vocabulary of 4100")
sg_probe_error("refuses a context with no query after the sink positions"
               "${SG_CLI_DATA}/run.h5;--context;4;--sink-positions;4;-o;${SG_PROBE_DATA}/never.h5" 2 "leaves no query")
sg_probe_error("refuses an existing output without --force" "${SG_CLI_DATA}/run.h5;-o;${SG_INJECT_DATA}/baseline.h5" 4 "exists")
sg_probe_error("refuses an output that is one of its inputs" "${SG_CLI_DATA}/run.h5;-o;${SG_CLI_DATA}/run.h5;--force" 4 "is also an input")
