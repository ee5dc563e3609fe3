# Command-line tests of sg-sample on the run of cli_sg-train.cmake (fixture sg_run): greedy output
# is the same with and without the cache and from stdin or --prompt; bad options are refused.
# (Token-for-token equality with argmax generation, every arm: tests/instruments/test_generation.cpp.)
add_test(NAME "cli: sg-sample greedy output is the same with the cache, without it, and from stdin"
         COMMAND sh -c "a=$($<TARGET_FILE:sg-sample> ${SG_CLI_DATA}/run.h5 --prompt 'The tutorial' -n 12 --greedy \
--log-level quiet) && b=$($<TARGET_FILE:sg-sample> ${SG_CLI_DATA}/run.h5 --prompt 'The tutorial' -n 12 --greedy --no-cache \
--log-level quiet) && c=$(printf 'The tutorial' | $<TARGET_FILE:sg-sample> ${SG_CLI_DATA}/run.h5 -n 12 --greedy \
--log-level quiet) && [ -n \"$a\" ] && [ \"$a\" = \"$b\" ] && [ \"$a\" = \"$c\" ] && echo same")
set_tests_properties("cli: sg-sample greedy output is the same with the cache, without it, and from stdin" PROPERTIES
                     FIXTURES_REQUIRED sg_run PASS_REGULAR_EXPRESSION "same")
add_test(NAME "cli: sg-sample with a seed repeats itself and reports its speed"
         COMMAND sh -c "a=$($<TARGET_FILE:sg-sample> ${SG_CLI_DATA}/run.h5 --prompt x -n 8 --seed 5 --top-k 20 --top-p 0.9 \
2>/dev/null) && b=$($<TARGET_FILE:sg-sample> ${SG_CLI_DATA}/run.h5 --prompt x -n 8 --seed 5 --top-k 20 --top-p 0.9 \
2>&1 >/dev/null) && [ \"$a\" = \"$($<TARGET_FILE:sg-sample> ${SG_CLI_DATA}/run.h5 --prompt x -n 8 --seed 5 --top-k 20 \
--top-p 0.9 2>/dev/null)\" ] && echo \"$b\"")
set_tests_properties("cli: sg-sample with a seed repeats itself and reports its speed" PROPERTIES
                     FIXTURES_REQUIRED sg_run PASS_REGULAR_EXPRESSION "1 prompt tokens, 8 generated in [0-9.]+ s")
add_test(NAME "cli: sg-sample refuses --prompt with --prompt-file"
         COMMAND ${CMAKE_COMMAND} -DCMD=$<TARGET_FILE:sg-sample>
                 "-DARGS=${SG_CLI_DATA}/run.h5;--prompt;a;--prompt-file;b.txt" -DEXPECT_CODE=2
                 "-DEXPECT_STDERR=give --prompt or --prompt-file, not both" -P ${SG_EXPECT})
set_tests_properties("cli: sg-sample refuses --prompt with --prompt-file" PROPERTIES FIXTURES_REQUIRED sg_run)
add_test(NAME "cli: sg-sample refuses a top-p outside 0 < p <= 1"
         COMMAND ${CMAKE_COMMAND} -DCMD=$<TARGET_FILE:sg-sample> "-DARGS=${SG_CLI_DATA}/run.h5;--prompt;a;--top-p;1.5"
                 -DEXPECT_CODE=2 "-DEXPECT_STDERR=--top-p must lie in (0, 1]" -P ${SG_EXPECT})
set_tests_properties("cli: sg-sample refuses a top-p outside 0 < p <= 1" PROPERTIES FIXTURES_REQUIRED sg_run)
add_test(NAME "cli: sg-sample refuses an empty stdin, and --prompt '' generates from nothing"
         COMMAND sh -c "if $<TARGET_FILE:sg-sample> ${SG_CLI_DATA}/run.h5 -n 2 < /dev/null; then exit 1; else echo \"exit $?\"; fi; \
$<TARGET_FILE:sg-sample> ${SG_CLI_DATA}/run.h5 --prompt '' -n 2 --greedy --log-level error > /dev/null && echo generated")
set_tests_properties("cli: sg-sample refuses an empty stdin, and --prompt '' generates from nothing" PROPERTIES
                     FIXTURES_REQUIRED sg_run
                     PASS_REGULAR_EXPRESSION "stdin: the prompt is empty\nhint: to generate from the end-of-text token alone, say so: --prompt ''\nexit 3\ngenerated")
add_test(NAME "cli: sg-sample names a missing model"
         COMMAND ${CMAKE_COMMAND} -DCMD=$<TARGET_FILE:sg-sample> "-DARGS=${SG_CLI_DATA}/no-such-run.h5;--prompt;a"
                 -DEXPECT_CODE=3 "-DEXPECT_STDERR=no-such-run.h5: no such file or folder" -P ${SG_EXPECT})
