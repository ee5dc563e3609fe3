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

# The direction probe on the combo2 run (tiny tier: 2 layers, 2 heads): 57 statistics for each of
# the 4 heads, the 2 layers pooled and the model pooled (399 rows); every read of the batches
# (2 batches x 4 sequences x 32 positions = 256 a head, 1,024 for the model) counted, the histogram's shares summing to 1.
add_test(NAME "cli: sg-probe direction writes its rows for every head, layer and the model"
         COMMAND bash -c "set -euo pipefail; ${probe} --tokens ${SG_CLI_DATA}/tokens.h5 ${SG_CLI_DATA}/run.h5 \
--probe direction --batches 2 --batch-size 4 -o ${SG_PROBE_DATA}/direction.h5 --force --log-level quiet; \
tab=$<TARGET_FILE:sg-tabulate>; \
echo rows $($tab ${SG_PROBE_DATA}/direction.h5 --rows probe,layer,head,statistic --cell value --format csv | tail -n +2 | wc -l); \
echo keys $($tab ${SG_PROBE_DATA}/direction.h5 --rows layer,head --cols statistic --cell value --format csv | tail -n +2 | cut -d, -f1,2 | tr '\\n' ' '); \
$tab ${SG_PROBE_DATA}/direction.h5 --where layer=all --where head=all --where statistic=reads,cos_min,cos_max,share_cos_above_0.9,mean_gate \
--rows statistic --cell value --format csv | sort; \
$tab ${SG_PROBE_DATA}/direction.h5 --where layer=0 --where head=1 --rows statistic --cell value --format tsv | \
awk -F '\\t' '$1 ~ /^cos_hist_/ { n++; s += $2 } END { printf \"bins %d sum %.6f\\n\", n, s }'")
set_tests_properties("cli: sg-probe direction writes its rows for every head, layer and the model" PROPERTIES
  FIXTURES_REQUIRED "${SG_PROBE_FIXTURES}"
  PASS_REGULAR_EXPRESSION "rows 399\nkeys 0,0 0,1 0,all 1,0 1,1 1,all all,all\n.*cos_max,(1|0\\.[0-9]+)\n.*cos_min,-?[0-9.]+\n.*mean_gate,0\\.[0-9]+\n.*reads,1024\n.*share_cos_above_0\\.9,[0-9.]+\n.*bins 40 sum 1\\.000000")

function(sg_probe_error name args code message)
  add_test(NAME "cli: sg-probe ${name}"
           COMMAND ${CMAKE_COMMAND} -DCMD=${probe} "-DARGS=--tokens;${SG_CLI_DATA}/tokens.h5;${args}"
                   -DEXPECT_CODE=${code} "-DEXPECT_STDERR=${message}" -P ${SG_EXPECT})
  set_tests_properties("cli: sg-probe ${name}" PROPERTIES FIXTURES_REQUIRED "${SG_PROBE_FIXTURES}")
endfunction()
sg_probe_error("refuses overrides alone on an arm without a gate"
               "${SG_INJECT_DATA}/baseline.h5;--probe;overrides;-o;${SG_PROBE_DATA}/never.h5" 2
               "none of the probes asked for applies to arm baseline")
sg_probe_error("refuses the direction probe on an arm without a projection or key gate"
               "${SG_INJECT_DATA}/baseline.h5;--probe;direction;-o;${SG_PROBE_DATA}/never.h5" 2
               "the direction probe needs a projection gate (projgate, combo2, or any arm joined with projgate) or a key gate (keygate, or any arm joined with keygate)")
sg_probe_error("refuses the direction probe on any run without a projection or key gate"
               "${SG_CLI_DATA}/run.h5;${SG_INJECT_DATA}/baseline.h5;--probe;sinks,direction;-o;${SG_PROBE_DATA}/never.h5" 2
               "arm is baseline (${SG_INJECT_DATA}/baseline.h5)")
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
