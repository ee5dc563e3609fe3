# The rules every input and output meets (docs/guarantees.md), from the command line of the core
# tools: FIFOs never waited on, a corpus folder's odd members, a checksum that cannot be removed
# unnoticed, an input folder's files never an output, stdout on a full device, long output names,
# sg-pairdiff's missing and infinite values: tests/cli/input_rules.py.
if(TARGET sg-tokenize AND TARGET sg-tabulate AND TARGET sg-pairdiff AND SG_PYTHON AND SG_GPT2_VOCAB)
  add_test(NAME "cli: inputs and outputs meet the rules of docs/guarantees.md"
           COMMAND ${SG_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/cli/input_rules.py ${CMAKE_RUNTIME_OUTPUT_DIRECTORY}
                   ${SG_GPT2_VOCAB})
  set_tests_properties("cli: inputs and outputs meet the rules of docs/guarantees.md" PROPERTIES
                       PASS_REGULAR_EXPRESSION "input rules: ok" TIMEOUT 600)
endif()
