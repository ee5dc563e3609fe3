# Command-line tests of sg-toy: a tiny grid writes a result table that sg-tabulate reads; an
# existing output is refused without --force; bad options are named.
set(SG_TOY_OUT ${CMAKE_CURRENT_BINARY_DIR}/cli-sg-toy.h5)
set(SG_TOY_TINY --condition blind,visible --load 1,2 --arms baseline,normgate,oracle --seeds 0,1 --dim 8
    --relevant 2 --length 8 --tags 16 --steps 20 --batch-size 16 --eval-sequences 64 --threads 1)

add_test(NAME "cli: sg-toy writes a result table for a tiny grid"
         COMMAND sg-toy ${SG_TOY_TINY} -o ${SG_TOY_OUT} --force)
set_tests_properties("cli: sg-toy writes a result table for a tiny grid" PROPERTIES
                     FIXTURES_SETUP sg_toy_output
                     PASS_REGULAR_EXPRESSION "visible load 2 oracle seed 1: error")

add_test(NAME "cli: sg-toy output reads back with one row per condition, load, arm and seed"
         COMMAND sg-tabulate ${SG_TOY_OUT} --rows condition,load,arm --cols seed --cell error --format tsv)
set_tests_properties("cli: sg-toy output reads back with one row per condition, load, arm and seed" PROPERTIES
                     FIXTURES_REQUIRED sg_toy_output
                     PASS_REGULAR_EXPRESSION "# condition\tload\tarm\t0\t1\nblind\t1\tbaseline\t[0-9.]+\t[0-9.]+\n.*visible\t2\toracle\t[0-9.]+\t[0-9.]+\n")

add_test(NAME "cli: sg-toy refuses to overwrite without --force"
         COMMAND ${CMAKE_COMMAND} -DCMD=$<TARGET_FILE:sg-toy> "-DARGS=--steps;1;--seeds;0;-o;${SG_TOY_OUT}"
                 -DEXPECT_CODE=4 -DEXPECT_STDERR=exists -P ${SG_EXPECT})
set_tests_properties("cli: sg-toy refuses to overwrite without --force" PROPERTIES FIXTURES_REQUIRED sg_toy_output)

add_test(NAME "cli: sg-toy names an arm without a toy form"
         COMMAND ${CMAKE_COMMAND} -DCMD=$<TARGET_FILE:sg-toy> "-DARGS=--arms;baseline,sinktoken;-o;-"
                 -DEXPECT_CODE=2 "-DEXPECT_STDERR=arm 'sinktoken' has no toy form"
                 -P ${SG_EXPECT})
add_test(NAME "cli: sg-toy names a bad condition"
         COMMAND ${CMAKE_COMMAND} -DCMD=$<TARGET_FILE:sg-toy> "-DARGS=--condition;sideways;-o;-"
                 -DEXPECT_CODE=2 "-DEXPECT_STDERR=unknown condition 'sideways'"
                 -P ${SG_EXPECT})
add_test(NAME "cli: sg-toy rejects a load below one"
         COMMAND ${CMAKE_COMMAND} -DCMD=$<TARGET_FILE:sg-toy> "-DARGS=--load;1,0;-o;-"
                 -DEXPECT_CODE=2 "-DEXPECT_STDERR=load must be >= 1" -P ${SG_EXPECT})
add_test(NAME "cli: sg-toy takes --arms repeated as well as comma-separated"
         COMMAND sh -c "$<TARGET_FILE:sg-toy> --condition blind --load 1 --arms baseline --arms normgate,oracle --seeds 0 \
--dim 8 --relevant 2 --length 8 --tags 16 --steps 2 --batch-size 16 --eval-sequences 16 --threads 1 --log-level quiet -o - \
| $<TARGET_FILE:sg-tabulate> - --rows arm --cols seed --cell error")
set_tests_properties("cli: sg-toy takes --arms repeated as well as comma-separated" PROPERTIES
                     PASS_REGULAR_EXPRESSION "\\| baseline \\|[^\n]*\n\\| normgate \\|[^\n]*\n\\| oracle \\|")

# Figure 3's claims (pipelines/toy_claims.py) on hand-made seed tables: one whose seed pairs support
# the paper's claims (the routing-slot control recovering the oracle, as ours does: that claim is not
# shown), one whose numbers contradict them (and leave two claims untested), and one of noise where
# the means pass a comparison of means but a seed pair disagrees.
find_program(SG_TOY_CLAIMS_PYTHON NAMES python3)
if(SG_TOY_CLAIMS_PYTHON)
  add_test(NAME "toy claims: each claim of Figure 3 with its numbers, where they hold"
           COMMAND ${SG_TOY_CLAIMS_PYTHON} ${CMAKE_SOURCE_DIR}/pipelines/toy_claims.py
                   ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/toy/claims_hold.tsv)
  set_tests_properties("toy claims: each claim of Figure 3 with its numbers, where they hold" PROPERTIES
    PASS_REGULAR_EXPRESSION "rises with the load: \\*\\*holds\\*\\* — 0\\.0000 at load 1, 0\\.2500 at load 8; the rise per seed: mean \\+0\\.2500, SE 0\\.0020 \\(2 pairs, 2 of 2 agree; threshold 0\\.05\\).*matches the oracle: \\*\\*holds\\*\\* — norm gate − oracle \\+0\\.0000 \\(load 1\\), \\+0\\.0010 \\(load 8\\); every seed pair at every load: mean \\+0\\.0005, SE 0\\.0005 \\(4 pairs, 4 of 4 agree; tolerance 0\\.02\\).*does not help: \\*\\*holds\\*\\* — at load 8 baseline 0\\.2500, off-by-one 0\\.2499, oracle 0\\.0000: it closes 0\\.0% .*does not recover the oracle: \\*\\*not shown\\*\\* — .*closes 100\\.0% .*\\(2 pairs, 0 of 2 agree; threshold 0\\).*coincide: \\*\\*holds\\*\\* — baseline − oracle \\+0\\.0100 \\(load 1\\)")
  add_test(NAME "toy claims: claims the numbers contradict are not shown, claims without their arms are untested"
           COMMAND ${SG_TOY_CLAIMS_PYTHON} ${CMAKE_SOURCE_DIR}/pipelines/toy_claims.py
                   ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/toy/claims_fail.tsv)
  set_tests_properties("toy claims: claims the numbers contradict are not shown, claims without their arms are untested" PROPERTIES
    PASS_REGULAR_EXPRESSION "rises with the load: \\*\\*not shown\\*\\* — 0\\.2000 at load 1, 0\\.2100 at load 8.*matches the oracle: \\*\\*not shown\\*\\*.*does not help: \\*\\*not shown\\*\\* — .*closes 52\\.4% .*routing-slot control does not recover the oracle: \\*\\*untested\\*\\*.*coincide: \\*\\*untested\\*\\*")
  add_test(NAME "toy claims: on noise, and with one seed pair of four against the rest, a claim is not shown"
           COMMAND ${SG_TOY_CLAIMS_PYTHON} ${CMAKE_SOURCE_DIR}/pipelines/toy_claims.py
                   ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/toy/claims_noise.tsv)
  set_tests_properties("toy claims: on noise, and with one seed pair of four against the rest, a claim is not shown" PROPERTIES
    PASS_REGULAR_EXPRESSION "rises with the load: \\*\\*not shown\\*\\* — 0\\.1000 at load 1, 0\\.2850 at load 8; the rise per seed: mean \\+0\\.1850, SE 0\\.0650 \\(4 pairs, 3 of 4 agree; threshold 0\\.05\\).*coincide: \\*\\*not shown\\*\\* — baseline − oracle \\+0\\.0000 \\(load 1\\); every seed pair at every load: mean \\+0\\.0000, SE 0\\.0129 \\(4 pairs, 2 of 4 agree; tolerance 0\\.02\\)"
    FAIL_REGULAR_EXPRESSION "\\*\\*holds\\*\\*")
  # --beyond (make fig3-beyond): the gates beyond the paper against the baseline-oracle gap in
  # place of claims 3 and 4; an arm that closes most of the gap is reported as filtering.
  add_test(NAME "toy claims: --beyond asks whether the key and output gates track the baseline"
           COMMAND ${SG_TOY_CLAIMS_PYTHON} ${CMAKE_SOURCE_DIR}/pipelines/toy_claims.py --beyond
                   ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/toy/claims_beyond.tsv)
  set_tests_properties("toy claims: --beyond asks whether the key and output gates track the baseline" PROPERTIES
    PASS_REGULAR_EXPRESSION "the key gate − baseline: \\+0\\.0000 \\(load 1\\), -0\\.0100 \\(load 8\\)\n- channel-blind: the key gate does not filter \\(tracks the baseline\\): \\*\\*holds\\*\\* — .*closes 4\\.0% .*the output gate does not filter \\(tracks the baseline\\): \\*\\*holds\\*\\* — .*closes 0\\.0% .*the sink logit with the output gate does not filter \\(tracks the baseline\\): \\*\\*not shown\\*\\* — .*closes 80\\.0% .*coincide: \\*\\*holds\\*\\*"
    FAIL_REGULAR_EXPRESSION "off-by-one does not help|routing-slot control")
  add_test(NAME "toy claims: a summary in place of the seed table is an input error naming the fix"
           COMMAND ${SG_TOY_CLAIMS_PYTHON} ${CMAKE_SOURCE_DIR}/pipelines/toy_claims.py
                   ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/toy/summary.tsv)
  set_tests_properties("toy claims: a summary in place of the seed table is an input error naming the fix" PROPERTIES
    PASS_REGULAR_EXPRESSION "give the table with one column per seed \\(fig3.tsv, not fig3-summary.tsv\\)")
  add_test(NAME "toy claims: --beyond without a table is a usage error"
           COMMAND ${SG_TOY_CLAIMS_PYTHON} ${CMAKE_SOURCE_DIR}/pipelines/toy_claims.py --beyond)
  set_tests_properties("toy claims: --beyond without a table is a usage error" PROPERTIES WILL_FAIL TRUE)
endif()
