# Command-line tests of sg-eval (and sg-train --resume) against the token file a run was trained
# on: the run file stores its SHA-256, and another token file is an error unless
# --allow-other-tokens (then a warning). The run is cli_sg-train.cmake's (fixture sg_run); the
# other token file is tokenised here from one page of the tutorial.
set(SG_EVAL_DATA ${SG_CLI_DATA}/eval)
file(MAKE_DIRECTORY ${SG_EVAL_DATA})
add_test(NAME "cli: sg-eval another token file (fixture)"
         COMMAND sg-tokenize /usr/share/doc/python3.11/html/_sources/tutorial/introduction.rst.txt --val-tokens 2000
                 --log-level quiet -o ${SG_EVAL_DATA}/other.h5 --force)
set_tests_properties("cli: sg-eval another token file (fixture)" PROPERTIES FIXTURES_SETUP sg_eval_other)

add_test(NAME "cli: sg-eval refuses a token file the run was not trained on"
         COMMAND ${CMAKE_COMMAND} -DCMD=$<TARGET_FILE:sg-eval>
                 "-DARGS=--tokens;${SG_EVAL_DATA}/other.h5;${SG_CLI_DATA}/run.h5;--batches;1;-o;${SG_EVAL_DATA}/never.h5"
                 -DEXPECT_CODE=3 "-DEXPECT_STDERR=run.h5 was trained on" -P ${SG_EXPECT})
set_tests_properties("cli: sg-eval refuses a token file the run was not trained on" PROPERTIES
                     FIXTURES_REQUIRED "sg_tokens;sg_run;sg_eval_other")
add_test(NAME "cli: sg-eval --allow-other-tokens warns and scores"
         COMMAND sh -c "$<TARGET_FILE:sg-eval> --tokens ${SG_EVAL_DATA}/other.h5 ${SG_CLI_DATA}/run.h5 --batches 1 \
--allow-other-tokens -o - 2>&1 >/dev/null")
set_tests_properties("cli: sg-eval --allow-other-tokens warns and scores" PROPERTIES
                     FIXTURES_REQUIRED "sg_tokens;sg_run;sg_eval_other"
                     PASS_REGULAR_EXPRESSION "warning: [^\n]*run.h5 was trained on [^\n]*tokens.h5 \\(sha256 [0-9a-f]+…\\), not on [^\n]*other.h5.*val_loss [0-9.]+")
add_test(NAME "cli: sg-train --resume refuses a token file the run was not trained on"
         COMMAND sh -c "cp ${SG_CLI_DATA}/run.h5 ${SG_EVAL_DATA}/resume.h5 && $<TARGET_FILE:sg-train> --tokens \
${SG_EVAL_DATA}/other.h5 --resume -o ${SG_EVAL_DATA}/resume.h5; echo \"exit $?\"")
set_tests_properties("cli: sg-train --resume refuses a token file the run was not trained on" PROPERTIES
                     FIXTURES_REQUIRED "sg_tokens;sg_run;sg_eval_other"
                     PASS_REGULAR_EXPRESSION "resume.h5 was trained on .*exit 3")
