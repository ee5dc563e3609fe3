# Command-line tests of sg-tokenize on a small corpus the tests tokenise (the Python tutorial of the
# default corpus). Its output, cli-data/tokens.h5, is the fixture sg_tokens that the tests of
# sg-train, sg-eval, sg-survey and the Makefile train on.
set(SG_CORPUS /usr/share/doc/python3.11/html/_sources/tutorial)

add_test(NAME "cli: sg-tokenize the tutorial (fixture)"
         COMMAND sg-tokenize ${SG_CORPUS} --val-tokens 5000 -o ${SG_CLI_DATA}/tokens.h5 --force)
set_tests_properties("cli: sg-tokenize the tutorial (fixture)" PROPERTIES FIXTURES_SETUP sg_tokens)

add_test(NAME "cli: sg-tokenize names a bad JSON line"
         COMMAND ${CMAKE_COMMAND} -DCMD=$<TARGET_FILE:sg-tokenize>
                 "-DARGS=${CMAKE_CURRENT_SOURCE_DIR}/fixtures/bad.jsonl;-o;${SG_CLI_DATA}/bad.h5;--force"
                 -DEXPECT_CODE=3 "-DEXPECT_STDERR=bad.jsonl:2:" -P ${SG_EXPECT})
