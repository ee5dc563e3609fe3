# Tests of Makefile.experiments: the quick profile's graph (dry run) and a tiny end-to-end run
# that produces Tables 1, 2 and 5 from real training runs. Needs every tool (SG_WITH_TORCH).
if(NOT SG_WITH_TORCH)
  return()
endif()
set(SG_MAKE_WORK ${CMAKE_CURRENT_BINARY_DIR}/make-tiny)
set(SG_MAKE make -C ${CMAKE_SOURCE_DIR} -f Makefile.experiments BIN=${CMAKE_RUNTIME_OUTPUT_DIRECTORY})
string(REPLACE ";" " " SG_MAKE_LINE "${SG_MAKE}")

add_test(NAME "make: the quick profile's dry run lists the expected commands"
         COMMAND ${SG_MAKE} -n PROFILE=quick OUT=${SG_MAKE_WORK}/dry TOKENS=${SG_MAKE_WORK}/dry/tokens.h5 table1 table2)
set_tests_properties("make: the quick profile's dry run lists the expected commands" PROPERTIES
  PASS_REGULAR_EXPRESSION "sg-tokenize /usr/share/doc/python3.11/html/_sources.*sg-train --tokens [^ ]*tokens.h5 --tier quick --arm baseline.*--seed 0.*sg-train --tokens [^ ]*tokens.h5 --tier quick --arm combo2.*--seed 1.*sg-eval.*sg-pairdiff [^ ]*val.h5 --ref baseline --ref-mean.*sg-pairdiff [^ ]*val.h5 --decompose --sink sinklogit --gate projgate --both combo2")

add_test(NAME "make: a tiny end-to-end run produces Tables 1, 2 and 5"
         COMMAND bash -c "set -euo pipefail; rm -rf '${SG_MAKE_WORK}/run'; ${SG_MAKE_LINE} -j2 PROFILE=quick TIERS=tiny OUT=${SG_MAKE_WORK}/run \
TOKENS=${SG_CLI_DATA}/tokens.h5 ARMS='baseline sinklogit projgate combo2' SEEDS='0 1' THREADS=1 \
TRAIN_FLAGS='--set iterations=4 --set warmup=1 --set eval_interval=4 --set eval_batches=1 --set final_eval_batches=1 --set block_size=16 --log-level quiet' \
table1 table2 table5 >/dev/null; cat ${SG_MAKE_WORK}/run/table1.md ${SG_MAKE_WORK}/run/table2.md ${SG_MAKE_WORK}/run/table5.md")
set_tests_properties("make: a tiny end-to-end run produces Tables 1, 2 and 5" PROPERTIES
  FIXTURES_REQUIRED sg_tokens
  PASS_REGULAR_EXPRESSION "Improvement over baseline.*combo2 *\\| [-+][0-9]\\.[0-9]+ ± [0-9]\\.[0-9]+.*Improvement over sink logit.*projection *\\| tiny.*seed 1")
