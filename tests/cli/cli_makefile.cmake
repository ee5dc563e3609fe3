# Tests of Makefile.experiments: the quick profile's graph (dry run) and a tiny end-to-end run
# that produces Tables 1, 2 and 5 from real training runs. Needs every tool (SG_WITH_TORCH).
if(NOT SG_WITH_TORCH)
  return()
endif()
set(SG_MAKE_WORK ${CMAKE_CURRENT_BINARY_DIR}/make-tiny)
set(SG_MAKE make -C ${CMAKE_SOURCE_DIR} -f Makefile.experiments BIN=${CMAKE_RUNTIME_OUTPUT_DIRECTORY}
            DEFAULT_CORPUS=${SG_DEFAULT_CORPUS})
string(REPLACE ";" " " SG_MAKE_LINE "${SG_MAKE}")

add_test(NAME "make: the quick profile's dry run lists the expected commands"
         COMMAND ${SG_MAKE} -n PROFILE=quick OUT=${SG_MAKE_WORK}/dry TOKENS=${SG_MAKE_WORK}/dry/tokens.h5 table1 table2)
set_tests_properties("make: the quick profile's dry run lists the expected commands" PROPERTIES
  PASS_REGULAR_EXPRESSION "sg-tokenize [^ ]+ .*sg-train --tokens [^ ]*tokens.h5 --tier quick --arm baseline.*--seed 0.*sg-train --tokens [^ ]*tokens.h5 --tier quick --arm combo2.*--seed 1.*sg-eval.*sg-pairdiff [^ ]*val.h5 --ref baseline --ref-mean.*sg-pairdiff [^ ]*val.h5 --decompose --sink sinklogit --gate projgate --both combo2")

add_test(NAME "make: the paper profile's dry run lists the injection battery of Tables 6, 7, 9 and Figure 2"
         COMMAND ${SG_MAKE} -n PROFILE=paper OUT=${SG_MAKE_WORK}/dry-paper TOKENS=${SG_MAKE_WORK}/dry-paper/tokens.h5
                 table6 table7 table9 fig2)
set_tests_properties("make: the paper profile's dry run lists the injection battery of Tables 6, 7, 9 and Figure 2" PROPERTIES
  PASS_REGULAR_EXPRESSION "sg-inject --tokens [^ ]*tokens.h5 [^ ]*runs/10M/baseline/0.h5 --junk structured,gaussian .*runs/124M/sinklogit/0.h5 --junk structured,same-context,gaussian,random-direction [^a-z,].*sg-inject --tokens [^ ]*tokens.h5 [^ ]*runs/124M/projgate/0.h5 --junk structured,same-context,gaussian,random-direction,own-direction .*runs/350M/combo2/0.h5 --junk structured .*--context 1024.*gnuplot")

add_test(NAME "make: the paper profile's dry run lists the probes of Table 8, Figures 1, 5 and App. G"
         COMMAND ${SG_MAKE} -n PROFILE=paper OUT=${SG_MAKE_WORK}/dry-paper TOKENS=${SG_MAKE_WORK}/dry-paper/tokens.h5
                 table8 sinks fig1 fig5 gate-tokens kurtosis)
set_tests_properties("make: the paper profile's dry run lists the probes of Table 8, Figures 1, 5 and App. G" PROPERTIES
  PASS_REGULAR_EXPRESSION "sg-probe --tokens [^ ]*tokens.h5 [^ ]*runs/124M/normgate/0.h5 --probe all .*sg-probe --tokens [^ ]*tokens.h5 [^ ]*runs/124M/baseline/0.h5 --probe sinks,kurtosis .*runs/350M/combo/0.h5 --probe all[^\n]*\n[^\n]*--context 1024.*gnuplot")

# The direction target probes the projection-gate arms at 124M by name (projgate, combo2; never the
# baseline or the norm-gate arms), then tabulates and draws them.
add_test(NAME "make: the paper profile's direction target probes the projection-gate runs at 124M and draws them"
         COMMAND bash -c "${SG_MAKE_LINE} -n PROFILE=paper OUT=${SG_MAKE_WORK}/dry-paper TOKENS=${SG_MAKE_WORK}/dry-paper/tokens.h5 \
direction > ${SG_MAKE_WORK}-direction.txt && grep -c -- '--probe direction' ${SG_MAKE_WORK}-direction.txt && \
grep -o 'runs/124M/[a-z0-9]*/0.h5 --probe direction' ${SG_MAKE_WORK}-direction.txt && grep -c 'direction.gp' ${SG_MAKE_WORK}-direction.txt")
set_tests_properties("make: the paper profile's direction target probes the projection-gate runs at 124M and draws them" PROPERTIES
  PASS_REGULAR_EXPRESSION "^2\nruns/124M/projgate/0.h5 --probe direction\nruns/124M/combo2/0.h5 --probe direction\n1\n$")

add_test(NAME "make: a tiny end-to-end run produces Tables 1, 2, 5, 6, 8, 9, the sink analysis, Figures 1, 5 and the curves"
         COMMAND bash -c "set -euo pipefail; rm -rf '${SG_MAKE_WORK}/run'; ${SG_MAKE_LINE} -j2 PROFILE=quick TIERS=tiny OUT=${SG_MAKE_WORK}/run \
TOKENS=${SG_CLI_DATA}/tokens.h5 ARMS='baseline sinklogit projgate combo2' SEEDS='0 1' THREADS=1 \
TRAIN_FLAGS='--set iterations=4 --set warmup=1 --set eval_interval=4 --set eval_batches=1 --set final_eval_batches=1 --set block_size=16 --log-level quiet' \
INJECT_FLAGS='--batches 2 --log-level quiet' PROBE_FLAGS='--batches 2 --log-level quiet' \
table1 table2 table5 table6 table9 table8 sinks gate-tokens kurtosis fig1 fig5 curves >/dev/null; \
cat ${SG_MAKE_WORK}/run/table1.md ${SG_MAKE_WORK}/run/table2.md ${SG_MAKE_WORK}/run/table5.md \
${SG_MAKE_WORK}/run/table6.md ${SG_MAKE_WORK}/run/table9.md ${SG_MAKE_WORK}/run/table8.md ${SG_MAKE_WORK}/run/sinks.md \
${SG_MAKE_WORK}/run/kurtosis.md; for f in fig1 fig5 curves; do head -c 4 ${SG_MAKE_WORK}/run/$f.png | od -An -c | tr -d ' \\n'; echo \" $f\"; done")
set_tests_properties("make: a tiny end-to-end run produces Tables 1, 2, 5, 6, 8, 9, the sink analysis, Figures 1, 5 and the curves" PROPERTIES
  FIXTURES_REQUIRED sg_tokens FIXTURES_SETUP sg_make_tiny
  PASS_REGULAR_EXPRESSION "Improvement over baseline.*combo2 *\\| [-+][0-9]\\.[0-9]+ ± [0-9]\\.[0-9]+.*Improvement over sink logit.*projection *\\| tiny.*seed 1.*\\| Tier \\| Junk type \\| Cutoff \\| Arm \\| ε = 0\\.2 \\|.*structured \\(other context\\) \\| q25 \\| baseline \\| [-+]0\\.[0-9]+ \\|.*\\| Arm \\| tiny quiet \\(med\\) \\| tiny quiet \\(q25\\) \\|.*\\| sink logit \\| 0\\.[0-9]+ \\|.*\\| Arm \\| Gate override \\| ε = 0 \\| ε = 0\\.2 \\|.*\\| projection gate \\| trained gate \\| [0-9.]+ \\| [0-9.]+ \\|.*\\|  \\| suppressed reads reopened \\|.*\\| Arm \\| mass on position 0 \\| mass on the phantom \\| position-0 norm ratio \\|.*\\| sink logit \\| 0\\.[0-9]+ \\| 0\\.[0-9]+ \\|.*\\| Arm \\| tiny \\|.*\\| combo2 \\| [-+][0-9]\\.[0-9]+ \\|.*PNG fig1\n.*PNG fig5\n.*PNG curves")

add_test(NAME "make: Table 2 without the arms of a decomposition says so instead of failing"
         COMMAND bash -c "set -euo pipefail; rm -rf '${SG_MAKE_WORK}/two-arms'; ${SG_MAKE_LINE} -j2 PROFILE=quick TIERS=tiny \
OUT=${SG_MAKE_WORK}/two-arms TOKENS=${SG_CLI_DATA}/tokens.h5 ARMS='baseline sinklogit' SEEDS='0 1' THREADS=1 \
TRAIN_FLAGS='--set iterations=2 --set warmup=1 --set eval_interval=2 --set eval_batches=1 --set final_eval_batches=1 --set block_size=16 --log-level quiet' \
table2 >/dev/null; cat ${SG_MAKE_WORK}/two-arms/table2.md")
set_tests_properties("make: Table 2 without the arms of a decomposition says so instead of failing" PROPERTIES
  FIXTURES_REQUIRED sg_tokens PASS_REGULAR_EXPRESSION "No decomposition: it needs the sink logit, a gate")

add_test(NAME "make: without the token file or its corpus, make says what to run"
         COMMAND ${CMAKE_COMMAND} -DCMD=make "-DARGS=-C;${CMAKE_SOURCE_DIR};-f;Makefile.experiments;BIN=${CMAKE_RUNTIME_OUTPUT_DIRECTORY};OUT=${SG_MAKE_WORK}/bare;TOKENS=${SG_MAKE_WORK}/bare/none.h5;CORPUS=${SG_MAKE_WORK}/no-corpus;tokens"
                 -DEXPECT_CODE=2 "-DEXPECT_STDERR=For the quick CPU reproduction on the built-in corpus: make -f ${CMAKE_SOURCE_DIR}/Makefile.experiments -j 2 quick"
                 -P ${SG_EXPECT})

# Table 9 beside the paper's: both columns (quiet mass and the phantom), ours at the tiny tier and the
# paper's at 50M and 124M (pipelines/paper_exposure.csv: the sink logit's phantom share 0.352 at 124M).
add_test(NAME "make: table9-vs-paper sets the quiet-mass and phantom columns beside the paper's"
         COMMAND bash -c "set -euo pipefail; ${SG_MAKE_LINE} PROFILE=quick TIERS=tiny OUT=${SG_MAKE_WORK}/run \
TOKENS=${SG_CLI_DATA}/tokens.h5 ARMS='baseline sinklogit projgate combo2' SEEDS='0 1' THREADS=1 \
TRAIN_FLAGS='--set iterations=4 --set warmup=1 --set eval_interval=4 --set eval_batches=1 --set final_eval_batches=1 --set block_size=16 --log-level quiet' \
INJECT_FLAGS='--batches 2 --log-level quiet' PROBE_FLAGS='--batches 2 --log-level quiet' table9-vs-paper")
set_tests_properties("make: table9-vs-paper sets the quiet-mass and phantom columns beside the paper's" PROPERTIES
  FIXTURES_REQUIRED "sg_tokens;sg_make_tiny"
  PASS_REGULAR_EXPRESSION "\\| Arm \\| Source \\| 50M quiet \\(med\\) \\| 50M quiet \\(q25\\) \\| 124M quiet \\(med\\) \\| 124M quiet \\(q25\\) \\| tiny quiet \\(med\\) \\| tiny quiet \\(q25\\) \\|.*\\| baseline \\| sinkgate \\| – \\| – \\| – \\| – \\| 0\\.[0-9]+ \\| 0\\.[0-9]+ \\|\n\\|  \\| paper \\| 0\\.554 \\| 0\\.357 \\| 0\\.564 \\| 0\\.373 \\| – \\| – \\|.*Share on the phantom.*\\| Arm \\| Source \\| 50M \\| 124M \\| tiny \\|.*\\| sink logit \\| sinkgate \\| – \\| – \\| 0\\.[0-9]+ \\|\n\\|  \\| paper \\| 0\\.309 \\| 0\\.352 \\| – \\|")

# The main job carries a reduced Figure 3: the channel-blind condition at three loads, the four arms
# of the claims it checks, two seeds, and the claims printed.
add_test(NAME "make: the quick profile's Figure 3 is the reduced grid with its claims"
         COMMAND ${SG_MAKE} -n PROFILE=quick OUT=${SG_MAKE_WORK}/dry-toy fig3)
set_tests_properties("make: the quick profile's Figure 3 is the reduced grid with its claims" PROPERTIES
  PASS_REGULAR_EXPRESSION "sg-toy --condition blind --load 1 --arms baseline,offbyone,normgate,oracle [^a-z]*--seeds 0,1 .*sg-toy --condition blind --load 8 .*toy_claims.py [^ ]*dry-toy/toy/fig3.tsv")

# Beyond the paper: the toy task with the key gate and the output gate, both conditions, its own
# figure and claims.
add_test(NAME "make: fig3-beyond runs the new gates in both conditions with their own figure and claims"
         COMMAND ${SG_MAKE} -n OUT=${SG_MAKE_WORK}/dry-toy-beyond fig3-beyond)
set_tests_properties("make: fig3-beyond runs the new gates in both conditions with their own figure and claims" PROPERTIES
  PASS_REGULAR_EXPRESSION "sg-toy --condition blind --load 1 --arms baseline,normgate,keygate,outgate,sinklogit\\+outgate,oracle [^a-z]*--seeds 0,1 .*sg-toy --condition visible --load 8 .*fig3-beyond.png.*toy_claims.py --beyond [^ ]*dry-toy-beyond/toy/beyond/fig3-beyond.tsv")

# `all` builds every artifact whose inputs are here and names the inputs of the others: with every
# input present (stand-in files: a dry run reads none of them) it lists Tables 1 to 12 and Figures
# 1 to 5 with the TinyStories runs; with none, Tables 3, 4 and Figure 3 and what each other needs.
add_test(NAME "make: all with every input present lists Tables 1 to 12 and Figures 1 to 5, TinyStories included"
         COMMAND bash -c "set -euo pipefail; d=${SG_MAKE_WORK}/all-inputs; rm -rf $d; mkdir -p $d/checkpoints/gpt2; \
touch $d/checkpoints/gpt2/config.json $d/lambada.jsonl $d/hellaswag.jsonl $d/wiki.test.raw $d/wiki.valid.raw; \
${SG_MAKE_LINE} -n PROFILE=paper OUT=$d/out TOKENS=${SG_CLI_DATA}/tokens.h5 TINYSTORIES_TOKENS=${SG_CLI_DATA}/tokens.h5 \
LAMBADA=$d/lambada.jsonl HELLASWAG=$d/hellaswag.jsonl WIKITEXT=$d/wiki.test.raw CHECKPOINTS=$d/checkpoints \
SURVEY_TEXT=$d/wiki.valid.raw all | grep -o -E -e 'table(1[0-2]|[1-9])\\.md' -e 'fig[1-5]\\.png' -e '--tier tinystories' \
-e 'all: every table and figure of the paper' | sort -u | tr '\\n' ' '")
set_tests_properties("make: all with every input present lists Tables 1 to 12 and Figures 1 to 5, TinyStories included" PROPERTIES
  FIXTURES_REQUIRED sg_tokens
  PASS_REGULAR_EXPRESSION "--tier tinystories all: every table and figure of the paper fig1.png fig2.png fig3.png fig4.png fig5.png table1.md table10.md table11.md table12.md table2.md table3.md table4.md table5.md table6.md table7.md table8.md table9.md ")
add_test(NAME "make: all without inputs builds Tables 3, 4 and Figure 3 and names what each other artifact needs"
         COMMAND ${SG_MAKE} -n PROFILE=paper OUT=${SG_MAKE_WORK}/all-bare/out TOKENS=${SG_MAKE_WORK}/all-bare/none.h5
                 CORPUS=${SG_MAKE_WORK}/all-bare/none TINYSTORIES_TOKENS=${SG_MAKE_WORK}/all-bare/none.h5
                 TINYSTORIES_CORPUS=${SG_MAKE_WORK}/all-bare/none CHECKPOINTS=${SG_MAKE_WORK}/all-bare/none all)
set_tests_properties("make: all without inputs builds Tables 3, 4 and Figure 3 and names what each other artifact needs" PROPERTIES
  PASS_REGULAR_EXPRESSION "all: left out for want of their inputs:[^\n]*\n[^\n]*Tables 1 2 5 6 7 8 9, Figures 1 2 5[^\n]*no token file [^\n]*none.h5[^\n]*docs/data.md[^\n]*\n[^\n]*Tables 10 11: [^\n]*\n[^\n]*Table 12, Figure 4: no pretrained checkpoint[^\n]*survey-download[^\n]*\n[^\n]*Table 5 TinyStories rows: [^\n]*TinyStories[^\n]*\n.*paper_tables.py [^ ]+ table3.*paper_tables.py [^ ]+ table4.*sg-toy --condition blind --load 1 .*fig3.gp")
set_tests_properties("make: all without inputs builds Tables 3, 4 and Figure 3 and names what each other artifact needs" PROPERTIES
  FAIL_REGULAR_EXPRESSION "sg-train|sg-tokenize")

# Table 5's TinyStories rows: the tier's runs train on their own token file and head Table 5, the
# 10M tier's label untouched when it is absent.
add_test(NAME "make: Table 5 carries the TinyStories tier's rows when its token file is present"
         COMMAND bash -c "set -euo pipefail; rm -rf '${SG_MAKE_WORK}/tinystories'; ${SG_MAKE_LINE} -j2 PROFILE=paper TIERS=tiny \
ARMS_tiny=baseline SEEDS_tiny=0 OUT=${SG_MAKE_WORK}/tinystories TOKENS=${SG_CLI_DATA}/tokens.h5 \
TINYSTORIES_TOKENS=${SG_CLI_DATA}/tokens.h5 ARMS_tinystories='baseline offbyone' SEEDS_tinystories='0 1' THREADS=1 \
TRAIN_FLAGS='--set iterations=2 --set warmup=1 --set eval_interval=2 --set eval_batches=1 --set final_eval_batches=1 --set block_size=16 --set micro_batch=2 --set n_layer=1 --set n_head=2 --set n_embd=32 --log-level quiet' \
table5 >/dev/null; cat ${SG_MAKE_WORK}/tinystories/table5.md")
set_tests_properties("make: Table 5 carries the TinyStories tier's rows when its token file is present" PROPERTIES
  FIXTURES_REQUIRED sg_tokens
  PASS_REGULAR_EXPRESSION "\\| TinyStories 10M \\| baseline \\| [0-9.]+ \\| [0-9.]+ \\| [0-9.]+ \\|\n\\|  \\| off-by-one \\| [0-9.]+ \\| [0-9.]+ \\| [0-9.]+ \\|\n\\| tiny \\| baseline \\| [0-9.]+ \\| – \\| [0-9.]+ \\|")

# sinks-cpu: the sink analysis by training budget, one run per budget and arm, a row per budget.
add_test(NAME "make: sinks-cpu tabulates the sink analysis by training budget"
         COMMAND bash -c "set -euo pipefail; rm -rf '${SG_MAKE_WORK}/sinks-cpu'; ${SG_MAKE_LINE} -j2 OUT=${SG_MAKE_WORK}/sinks-cpu \
SINKS_CPU_TOKENS=${SG_CLI_DATA}/tokens.h5 SINKS_CPU_TIER=tiny SINKS_CPU_STEPS='2 4' \
SINKS_CPU_FLAGS='--set eval_interval=2 --set eval_batches=1 --set final_eval_batches=1 --set block_size=16' sinks-cpu")
set_tests_properties("make: sinks-cpu tabulates the sink analysis by training budget" PROPERTIES
  FIXTURES_REQUIRED sg_tokens
  PASS_REGULAR_EXPRESSION "\\| Steps \\| baseline mass on position 0 \\| baseline position-0 norm ratio \\| sink logit mass on position 0 \\| sink logit mass on the phantom \\| sink logit position-0 norm ratio \\|\n[^\n]*\n\\| 2 \\| 0\\.[0-9]+ \\| [0-9.]+ \\| 0\\.[0-9]+ \\| 0\\.[0-9]+ \\| [0-9.]+ \\|\n\\| 4 \\| 0\\.[0-9]+ \\| [0-9.]+ \\| 0\\.[0-9]+ \\| 0\\.[0-9]+ \\| [0-9.]+ \\|")

# gates-beyond: the arms of the paper's third open question trained with paired seeds, and its tables:
# the parameters per layer, the output gate's 2x2 decomposition with the sink logit beside the
# projection gate's, the sink analysis with the output gate's abstention, the key gate's own direction,
# the keys against the key gate's direction, and the toy task with the new gates (a short grid).
add_test(NAME "make: gates-beyond trains the output gate and key gate arms and prints the tables of the question"
         COMMAND bash -c "set -euo pipefail; rm -rf '${SG_MAKE_WORK}/gates-beyond'; ${SG_MAKE_LINE} -j2 OUT=${SG_MAKE_WORK}/gates-beyond \
TIERS=tiny TOKENS=${SG_CLI_DATA}/tokens.h5 SEEDS='0 1' \
TRAIN_FLAGS='--set iterations=4 --set warmup=1 --set eval_interval=4 --set eval_batches=1 --set final_eval_batches=1 --set block_size=16 --log-level quiet' \
INJECT_FLAGS='--batches 2 --log-level quiet' PROBE_FLAGS='--batches 2 --log-level quiet' \
\"GATES_BEYOND_TOY=TOY_BEYOND_CONDITIONS=blind TOY_BEYOND_LOADS=2 'TOY_FLAGS=--steps 20 --batch-size 16 --log-interval 0'\" gates-beyond")
set_tests_properties("make: gates-beyond trains the output gate and key gate arms and prints the tables of the question" PROPERTIES
  FIXTURES_REQUIRED sg_tokens
  PASS_REGULAR_EXPRESSION "\\| tiny \\| keygate \\| none \\| keygate \\| none \\| 66 \\|\n\\| tiny \\| outgate \\| none \\| none \\| outgate \\| 128 \\|.*Improvement over baseline.*output gate *\\| [-+][0-9]\\.[0-9]+ ± [0-9]\\.[0-9]+.*\\| projection \\| tiny \\| [-+][0-9.]+ \\|.*\\| output \\| tiny \\| [-+][0-9.]+ \\|.*\\| Arm \\| mass on position 0 \\| mass on the phantom \\| position-0 norm ratio \\| output gate, mean \\| rows the output gate closes \\(< 0\\.1\\) \\|.*\\| sink logit \\+ output gate \\| 0\\.[0-9]+ \\| 0\\.[0-9]+ \\| [0-9.]+ \\| 0\\.[0-9]+ \\| [0-9.]+ \\|.*own key-gate direction \\(on the keys\\) \\| q25 \\| key gate \\| [-+][0-9.]+ \\|.*Own direction: defined for the projection gate.*\\(e\\) The reads.*\\| key gate \\| 0 \\| -?[0-9.]+ \\|.*\\| every layer \\| -?[0-9.]+ \\|.*\\(f\\) The toy task.*fig3-beyond.png.*channel-blind: the key gate [^:]*baseline: [-+]0\\.[0-9]+ \\(load 2\\)")

# make from any folder: named by its path (-f PATH) or with -C PATH, the make file finds its
# fragments, the tools (BIN: build/bin beside it) and the scripts of pipelines/ beside itself, and
# writes OUT relative to the folder make runs in (the one stood in for -f, the one -C names).
set(SG_MAKE_ELSEWHERE ${SG_MAKE_WORK}/elsewhere)
add_test(NAME "make: -f PATH from another folder finds the fragments, the tools and the scripts beside the make file"
         COMMAND bash -c "set -euo pipefail; d='${SG_MAKE_ELSEWHERE}/f'; rm -rf \"$d\"; mkdir -p \"$d\"; cd \"$d\"; \
make -f '${CMAKE_SOURCE_DIR}/Makefile.experiments' -n PROFILE=quick table1 table6 table8 fig3 curves table3 | \
grep -o -E -e '[^ ]*/sg-train --tokens data/pydoc.h5 --tier quick --arm baseline' -e '-o results/quick/runs/quick/baseline/0.partial.h5' \
-e '[^ ]*/sg-inject --tokens data/pydoc.h5' -e '[^ ]*/sg-probe --tokens' -e '[^ \"]*/fig3.gp' -e '[^ ]*/curves.gp' \
-e 'python3 [^ ]*/paper_tables.py [^ ]*' | LC_ALL=C sort -u")
set_tests_properties("make: -f PATH from another folder finds the fragments, the tools and the scripts beside the make file" PROPERTIES
  PASS_REGULAR_EXPRESSION "-o results/quick/runs/quick/baseline/0.partial.h5\n${CMAKE_SOURCE_DIR}/build/bin/sg-inject --tokens data/pydoc.h5\n${CMAKE_SOURCE_DIR}/build/bin/sg-probe --tokens\n${CMAKE_SOURCE_DIR}/build/bin/sg-train --tokens data/pydoc.h5 --tier quick --arm baseline\n${CMAKE_SOURCE_DIR}/pipelines/curves.gp\n${CMAKE_SOURCE_DIR}/pipelines/fig3.gp\npython3 ${CMAKE_SOURCE_DIR}/pipelines/paper_tables.py ${CMAKE_SOURCE_DIR}/build/bin\n$")

# Real targets from another folder, both forms: Table 3 (sg-info) and the help; -f writes under
# the folder stood in, -C under the folder it names (here OUT is absolute, so nothing lands in the
# source tree); the quick target's recursive make names the make file by its absolute path.
add_test(NAME "make: table3 and help run from another folder with -f PATH and with -C PATH"
         COMMAND bash -c "set -euo pipefail; d='${SG_MAKE_ELSEWHERE}/real'; rm -rf \"$d\"; mkdir -p \"$d/a\" \"$d/b\"; \
cd \"$d/a\"; make -s -f '${CMAKE_SOURCE_DIR}/Makefile.experiments' BIN=${CMAKE_RUNTIME_OUTPUT_DIRECTORY} table3 > /dev/null; \
head -1 results/paper/table3.md; cd \"$d/b\"; \
make -s -C '${CMAKE_SOURCE_DIR}' -f Makefile.experiments BIN=${CMAKE_RUNTIME_OUTPUT_DIRECTORY} OUT=\"$d/b/out\" table3 > /dev/null; \
head -1 \"$d/b/out/table3.md\"; make -f '${CMAKE_SOURCE_DIR}/Makefile.experiments' help | grep -E '^#   (all|sinks-cpu) '; \
make -f '${CMAKE_SOURCE_DIR}/Makefile.experiments' -n quick | grep -o -E '^make[^ ]* -f [^ ]*Makefile.experiments PROFILE=quick' | LC_ALL=C sort -u; ls \"$d/a\" \"$d/b\"")
set_tests_properties("make: table3 and help run from another folder with -f PATH and with -C PATH" PROPERTIES
  PASS_REGULAR_EXPRESSION "^\\| [^\n]*\\|\n\\| [^\n]*\\|\n#   sinks-cpu [^\n]*\n#   all [^\n]*\nmake[^ ]* -f ${CMAKE_SOURCE_DIR}/Makefile.experiments PROFILE=quick\n[^\n]*/a:\nresults\n\n[^\n]*/b:\nout\n$")

# A missing fragment is an error, not a silent lack of targets.
add_test(NAME "make: a missing fragment of pipelines/ is an error"
         COMMAND bash -c "d='${SG_MAKE_ELSEWHERE}/lonely'; rm -rf \"$d\"; mkdir -p \"$d/pipelines\"; \
cp '${CMAKE_SOURCE_DIR}/Makefile.experiments' \"$d\"; cp '${CMAKE_SOURCE_DIR}'/pipelines/*.mk \"$d/pipelines\"; \
rm \"$d/pipelines/probe.mk\"; cd /tmp; make -f \"$d/Makefile.experiments\" -n table1 2>&1; echo \"exit $?\"")
set_tests_properties("make: a missing fragment of pipelines/ is an error" PROPERTIES
  PASS_REGULAR_EXPRESSION "pipelines/probe.mk: No such file or directory[^\n]*\n(.*\n)?exit 2\n$")

# A tier of one's own without ARMS_T / SEEDS_T trains the profile's default arms and seeds
# (quick: ARMS_quick, SEEDS_quick; paper: the nine arms of Table 4, seeds 0 1 2) and says so.
add_test(NAME "make: a tier without ARMS_T and SEEDS_T trains the profile's default arms and seeds, and says so"
         COMMAND bash -c "set -euo pipefail; cd /tmp; m='${CMAKE_SOURCE_DIR}/Makefile.experiments'; \
make -f \"$m\" -n PROFILE=quick TIERS=small OUT=${SG_MAKE_ELSEWHERE}/own table1 | grep -E -o -e '^Makefile.experiments: tier small has no [A-Z]+_small' \
-e '--tier small --arm [a-z0-9]+ *[\\]?\$' -e '--seed [0-9]+ --device' | LC_ALL=C sort | uniq -c; \
make -f \"$m\" -n PROFILE=paper TIERS=small OUT=${SG_MAKE_ELSEWHERE}/own-paper TOKENS=${SG_MAKE_ELSEWHERE}/none.h5 table1 | \
grep -c -E -e '--tier small --arm [a-z0-9]+ ' ")
set_tests_properties("make: a tier without ARMS_T and SEEDS_T trains the profile's default arms and seeds, and says so" PROPERTIES
  PASS_REGULAR_EXPRESSION "^ +4 --seed 0 --device\n +4 --seed 1 --device\n +2 --tier small --arm baseline *[\\\\]?\n +2 --tier small --arm combo2 *[\\\\]?\n +2 --tier small --arm projgate *[\\\\]?\n +2 --tier small --arm sinklogit *[\\\\]?\n +1 Makefile.experiments: tier small has no ARMS_small\n +1 Makefile.experiments: tier small has no SEEDS_small\n27\n$")

# One GPU per job (pipelines/gpu.mk, gpu_slot.sh), without a GPU: a stub nvidia-smi lists four,
# stand-in tools record the GPUs they were given; make -j 8 must never put two jobs on one.
add_test(NAME "make: with DEVICE=cuda each concurrent job holds GPUs of its own, waits for a free one, and a killed job frees its GPU"
         COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/gpu_slots.py ${CMAKE_SOURCE_DIR} ${CMAKE_CURRENT_BINARY_DIR}/gpu-slots)
set_tests_properties("make: with DEVICE=cuda each concurrent job holds GPUs of its own, waits for a free one, and a killed job frees its GPU"
  PROPERTIES PASS_REGULAR_EXPRESSION "ok: 0 failures")
