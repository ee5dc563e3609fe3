# Command-line tests of sg-tabulate on tests/fixtures/paper_table5.csv (the paper's Table 5,
# FineWeb tiers) and the hand-made pairs_*.csv.
set(TABULATE_FIXTURES ${CMAKE_CURRENT_SOURCE_DIR}/fixtures)
set(TABULATE_WORK ${CMAKE_CURRENT_BINARY_DIR}/cli-sg-tabulate)

# Runs a bash script (pipefail on) in its own fresh directory $d; passes when the output matches.
function(sg_tabulate_test name script regex)
  set(dir ${TABULATE_WORK}/${name})
  string(REPLACE " " "_" dir "${dir}")
  add_test(NAME "cli: sg-tabulate ${name}"
           COMMAND bash -c "set -euo pipefail; d='${dir}'; rm -rf \"$d\"; mkdir -p \"$d\"; cd \"$d\"; ${script}")
  set_tests_properties("cli: sg-tabulate ${name}" PROPERTIES PASS_REGULAR_EXPRESSION "${regex}")
endfunction()

set(TABULATE $<TARGET_FILE:sg-tabulate>)
set(TABLE5 ${TABULATE_FIXTURES}/paper_table5.csv)

sg_tabulate_test("lays out Table 5: rows tier x arm, a column per seed, the row mean"
  "${TABULATE} ${TABLE5} --rows tier,arm --cols seed --cell val_loss --row-mean --label 'seed:*=seed *' --header tier=Tier"
  "\\| Tier \\| arm \\| seed 0 \\| seed 1 \\| seed 2 \\| seed 3 \\| seed 4 \\| mean \\|.*\\| 50M \\| baseline \\| 3\\.5417 \\| 3\\.5399 \\| 3\\.5381 \\| – \\| – \\| 3\\.5399 \\|\n\\|  \\| sinklogit \\| 3\\.5347")
sg_tabulate_test("writes LaTeX"
  "${TABULATE} ${TABLE5} --where tier=350M --rows arm --cols tier --cell val_loss --format latex"
  "begin\\{tabular\\}\\{lr\\}.*combo2 & \\$3\\.0210\\$ \\\\\\\\")
sg_tabulate_test("writes TSV figure data"
  "${TABULATE} ${TABLE5} --where arm=baseline --rows tier --cols seed --cell val_loss --format tsv"
  "# tier\t0\t1\t2\n10M\t4\\.2141\t4\\.206\t4\\.2155\n")
sg_tabulate_test("renders CSV that reads back to the same CSV"
  "${TABULATE} ${TABLE5} --format csv > a.csv; ${TABULATE} a.csv --format csv > b.csv; cmp a.csv b.csv; ${TABULATE} a.csv --format h5 -o c.h5; ${TABULATE} c.h5 --format csv | cmp - a.csv && echo same"
  "^same\n$")
sg_tabulate_test("lists the formats --format writes, one a line, as its --help names them"
  "${TABULATE} --list-formats; ${TABULATE} --help | grep -o 'md, csv, latex, tsv, or h5'"
  "^md\ncsv\nlatex\ntsv\nh5\nmd, csv, latex, tsv, or h5\n$")
sg_tabulate_test("concatenates and filters inputs"
  "${TABULATE} ${TABULATE_FIXTURES}/pairs_ref.csv ${TABULATE_FIXTURES}/pairs_arm.csv --where seed=3 --decimals 1"
  "\\| A \\| x \\| 3 \\| 9\\.0 \\|")

sg_tabulate_test("refuses an existing output without --force and keeps it"
  "echo keep > out.md; if ${TABULATE} ${TABLE5} -o out.md; then exit 1; else echo \"exit $?\"; fi; cat out.md; ${TABULATE} ${TABLE5} -o out.md --force; head -1 out.md"
  "error: out.md exists\nhint: use --force to overwrite it\nexit 4\nkeep\n\\| tier \\| arm \\| seed \\| val_loss \\|")

function(sg_tabulate_error name code message)
  add_test(NAME "cli: sg-tabulate ${name}"
           COMMAND ${CMAKE_COMMAND} -DCMD=$<TARGET_FILE:sg-tabulate> "-DARGS=${ARGN}" -DEXPECT_CODE=${code}
                   "-DEXPECT_STDERR=${message}" -P ${SG_EXPECT})
endfunction()
add_test(NAME "cli: sg-tabulate takes the input files after a repeatable option"
         COMMAND $<TARGET_FILE:sg-tabulate> --label x=y ${TABLE5} --where arm=baseline --where tier=10M)
set_tests_properties("cli: sg-tabulate takes the input files after a repeatable option" PROPERTIES
                     PASS_REGULAR_EXPRESSION "\\| 10M \\| baseline \\| 0 \\| 4\\.2141 \\|")
sg_tabulate_error("names the key that splits a cell" 2 "they differ in seed" ${TABLE5} --rows tier --cols arm)
sg_tabulate_error("names an absent pivot column" 2 "no column 'nope' (--rows)" ${TABLE5} --rows nope)
sg_tabulate_error("names an unreadable input" 3 "absent.csv: no such file" ${TABULATE_FIXTURES}/absent.csv)
file(WRITE ${TABULATE_WORK}/notes.md "# Notes\n\nThe sink logit helped.\n")
file(WRITE ${TABULATE_WORK}/hostname "vm\n")
sg_tabulate_error("refuses a Markdown file: not a result table" 3 "notes.md: not a result table (CSV): 1 column(s)"
                  ${TABULATE_WORK}/notes.md)
sg_tabulate_error("refuses a one-word text file: not a result table" 3 "hostname: not a result table (CSV)"
                  ${TABULATE_WORK}/hostname)

add_test(NAME "cli: sg-tabulate --where matching no row names the column's values and the likely one"
         COMMAND ${CMAKE_COMMAND} -DCMD=$<TARGET_FILE:sg-tabulate> "-DARGS=${TABLE5};--where;arm=basline" -DEXPECT_CODE=2
                 "-DEXPECT_STDERR=did you mean 'baseline'? the values of arm here: baseline, offbyone" -P ${SG_EXPECT})

# -o's extension picks the format unless --format says otherwise.
add_test(NAME "cli: sg-tabulate picks the format from the output's extension"
         COMMAND sh -c "set -e; d=$(mktemp -d); t=$<TARGET_FILE:sg-tabulate>; f=${CMAKE_CURRENT_SOURCE_DIR}/fixtures/paper_table5.csv; \
$t $f --rows tier,arm --cols seed --cell val_loss -o $d/t.tex; $t $f --rows tier,arm --cols seed --cell val_loss -o $d/t.csv; \
$t $f --rows tier,arm --cols seed --cell val_loss --format md -o $d/m.csv; head -1 $d/t.tex; head -1 $d/t.csv; head -1 $d/m.csv; rm -r $d")
set_tests_properties("cli: sg-tabulate picks the format from the output's extension" PROPERTIES
                     PASS_REGULAR_EXPRESSION "^\\\\begin\\{tabular\\}[^\n]*\ntier,arm,[^\n]*\n\\| tier \\| arm \\|")
# An upstream failure leaves stdin empty: say so, not "empty file".
add_test(NAME "cli: sg-tabulate on an empty pipe asks whether the previous command failed"
         COMMAND ${CMAKE_COMMAND} -DCMD=sh "-DARGS=-c;false | $<TARGET_FILE:sg-tabulate> -" -DEXPECT_CODE=3
                 "-DEXPECT_STDERR=did the previous command in the pipe fail?" -P ${SG_EXPECT})

# An output that is a FIFO (or a device such as /dev/null) is refused, never renamed over: the
# rename that puts an output in place would replace the device itself.
sg_tabulate_test("refuses an output that is a FIFO and leaves it a FIFO"
  "mkfifo out; for format in md h5; do if ${TABULATE} ${TABLE5} --format $format -o out --force 2> err; then echo \"exit 0\"; else echo \"exit $?\"; fi; \
head -1 err; done; test -p out && echo 'still a FIFO'"
  "exit 4\nsg-tabulate: error: out is not a regular file \\(a device, FIFO or socket\\)[^\n]*\nexit 4\n[^\n]*out is not a regular file[^\n]*\nstill a FIFO")
