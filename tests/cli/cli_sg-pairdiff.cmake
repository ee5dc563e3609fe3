# Command-line tests of sg-pairdiff (with sg-tabulate reading its output).
# Fixtures: tests/fixtures/pairs_*.csv (hand-made) and paper_table5.csv (the paper's Table 5, FineWeb
# tiers). Hand-computed answer for pairs_ref + pairs_arm: x − baseline on seeds 0-2 is −0.1, −0.3,
# −0.1 → mean −0.1667, se 0.0667; seed 3 exists only for x and is left out.
set(PAIRDIFF_FIXTURES ${CMAKE_CURRENT_SOURCE_DIR}/fixtures)
set(PAIRDIFF_WORK ${CMAKE_CURRENT_BINARY_DIR}/cli-sg-pairdiff)
# The error tests write -o ${PAIRDIFF_WORK}/never.h5: the folder exists whichever test runs first.
file(MAKE_DIRECTORY ${PAIRDIFF_WORK})

# Runs a bash script (pipefail on) in its own fresh directory $d; passes when the output matches.
function(sg_pairdiff_test name script regex)
  set(dir ${PAIRDIFF_WORK}/${name})
  string(REPLACE " " "_" dir "${dir}")
  add_test(NAME "cli: sg-pairdiff ${name}"
           COMMAND bash -c "set -euo pipefail; d='${dir}'; rm -rf \"$d\"; mkdir -p \"$d\"; cd \"$d\"; ${script}")
  set_tests_properties("cli: sg-pairdiff ${name}" PROPERTIES PASS_REGULAR_EXPRESSION "${regex}")
endfunction()

set(PAIRDIFF $<TARGET_FILE:sg-pairdiff>)
set(TABULATE $<TARGET_FILE:sg-tabulate>)

sg_pairdiff_test("mixes HDF5 and CSV inputs and pipes into sg-tabulate"
  "${TABULATE} ${PAIRDIFF_FIXTURES}/pairs_arm.csv --format h5 -o arm.h5; ${PAIRDIFF} arm.h5 ${PAIRDIFF_FIXTURES}/pairs_ref.csv --log-level quiet | ${TABULATE} - --rows arm --cols tier"
  "\\| x \\| -0\\.1667 ± 0\\.0667 \\|")
sg_pairdiff_test("reads stdin and writes stdout"
  "${PAIRDIFF} - ${PAIRDIFF_FIXTURES}/pairs_arm.csv --log-level quiet < ${PAIRDIFF_FIXTURES}/pairs_ref.csv | ${TABULATE} - --format csv"
  "A,paired_diff,baseline,x,-0\\.1666666666666[0-9]*,0\\.0666666666666[0-9]*,3,\"0,1,2\",3")
sg_pairdiff_test("warns about the seeds it leaves out"
  "${PAIRDIFF} ${PAIRDIFF_FIXTURES}/pairs_ref.csv ${PAIRDIFF_FIXTURES}/pairs_arm.csv -o out.h5 2>&1"
  "tier=A: x vs baseline: seed 3 left out")
sg_pairdiff_test("adds the reference mean with --ref-mean"
  "${PAIRDIFF} ${PAIRDIFF_FIXTURES}/pairs_ref.csv ${PAIRDIFF_FIXTURES}/pairs_arm.csv --ref-mean --log-level quiet -o out.h5; ${TABULATE} out.h5 --rows statistic,arm --cols tier --se none"
  "\\| mean \\| baseline \\| 2\\.0000 \\|")

# The paper's Table 1 (improvement over baseline and over sink logit) from its Table 5.
sg_pairdiff_test("reproduces Table 1 from Table 5"
  "${PAIRDIFF} ${PAIRDIFF_FIXTURES}/paper_table5.csv --ref-mean --log-level quiet -o a.h5; ${PAIRDIFF} ${PAIRDIFF_FIXTURES}/paper_table5.csv --ref sinklogit --arms normgate,projgate,combo,combo2 --log-level quiet -o b.h5; ${TABULATE} a.h5 b.h5 --rows arm --cols tier --sections statistic,ref --signed --plain statistic=mean --order statistic=mean,paired_diff --order ref=baseline,sinklogit --row-order baseline,offbyone,sinktoken,sinklogit,renorm,normgate,projgate,combo,combo2 --label 'sinklogit=sink logit' --label 'combo2=combo2' --section-label 'paired_diff,sinklogit=Improvement over sink logit'"
  "baseline \\| 4\\.2119 \\| 3\\.5399 \\| 3\\.3709 \\| 3\\.0338 \\|.*sink logit \\| -0\\.0185 ± 0\\.0033 \\| -0\\.0068 ± 0\\.0003 \\| -0\\.0052 ± 0\\.0025 \\| -0\\.0013 \\|.*Improvement over sink logit.*combo \\| \\+0\\.0008 ± 0\\.0013 \\| -0\\.0030 ± 0\\.0009 \\| -0\\.0036 ± 0\\.0006 \\| -0\\.0074 \\|")
# The paper's Table 2 (norm form) from its Table 5: 350M has no solo gate.
sg_pairdiff_test("reproduces Table 2 with --decompose"
  "${PAIRDIFF} ${PAIRDIFF_FIXTURES}/paper_table5.csv --decompose --sink sinklogit --gate normgate --both combo --log-level quiet | ${TABULATE} - --rows gate_arm,tier --cols term --se none --order term=sink,gate,both,overlap,filter --label gate_arm:normgate=norm"
  "\\| norm \\| 10M \\| 0\\.0185 \\| 0\\.0037 \\| 0\\.0177 \\| 0\\.0045 \\| -0\\.0008 \\|.*\\|  \\| 350M \\| 0\\.0013 \\| – \\| 0\\.0087 \\| – \\| 0\\.0074 \\|")

sg_pairdiff_test("refuses an existing output without --force and keeps it"
  "echo keep > out.h5; if ${PAIRDIFF} ${PAIRDIFF_FIXTURES}/pairs_ref.csv -o out.h5; then exit 1; else echo \"exit $?\"; fi; cat out.h5; ${PAIRDIFF} ${PAIRDIFF_FIXTURES}/pairs_ref.csv -o out.h5 --force --ref-mean --log-level error; ${TABULATE} out.h5 --format csv"
  "error: out.h5 exists\nhint: use --force to overwrite it\nexit 4\nkeep\n#role")

# Errors: exit code and message.
function(sg_pairdiff_error name code message)
  add_test(NAME "cli: sg-pairdiff ${name}"
           COMMAND ${CMAKE_COMMAND} -DCMD=$<TARGET_FILE:sg-pairdiff> "-DARGS=${ARGN}" -DEXPECT_CODE=${code}
                   "-DEXPECT_STDERR=${message}" -P ${SG_EXPECT})
endfunction()
sg_pairdiff_error("names a reference arm that is nowhere" 2 "no arm 'nosuch' (--ref)"
                  ${PAIRDIFF_FIXTURES}/paper_table5.csv --ref nosuch -o ${PAIRDIFF_WORK}/never.h5)
sg_pairdiff_error("names a group without the reference arm" 3 "tier=50M: the reference arm 'offbyone' is absent"
                  ${PAIRDIFF_FIXTURES}/paper_table5.csv --ref offbyone -o ${PAIRDIFF_WORK}/never.h5)
sg_pairdiff_error("names an arm with no paired seed" 3 "tier=A: y vs baseline: no seed in common"
                  ${PAIRDIFF_FIXTURES}/pairs_disjoint.csv -o ${PAIRDIFF_WORK}/never.h5)
sg_pairdiff_error("names a missing value column" 2 "no column 'loss'"
                  ${PAIRDIFF_FIXTURES}/pairs_ref.csv --value loss -o ${PAIRDIFF_WORK}/never.h5)
sg_pairdiff_error("refuses an input that is neither HDF5 nor CSV" 3 "neither an HDF5 file nor CSV text"
                  $<TARGET_FILE:sg-pairdiff> -o ${PAIRDIFF_WORK}/never.h5)
sg_pairdiff_error("checks the output directory before reading inputs" 4 "does not exist"
                  ${PAIRDIFF_FIXTURES}/absent.csv -o ${PAIRDIFF_WORK}/no/such/dir/out.h5)

# An error about a column (--value, --by, --pair, --where) names the files the rows came from.
sg_pairdiff_test("names the input files in an error about a column"
  "for args in '--value val_los' '--by arms' '--pair seeds' '--where tiers=A'; do
     set +e; ${PAIRDIFF} ${PAIRDIFF_FIXTURES}/pairs_ref.csv ${PAIRDIFF_FIXTURES}/pairs_arm.csv $args -o out.h5 2> err.txt; code=$?; set -e
     echo \"$args: exit $code: $(cat err.txt)\"
     [ $code = 2 ] && grep -q 'pairs_ref.csv, .*pairs_arm.csv: ' err.txt || exit 1
   done; echo all-named"
  "all-named")
