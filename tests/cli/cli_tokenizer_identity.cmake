# A run knows its tokenizer (tests/tokenizer_identity.py): a vocabulary trained by Hugging Face
# `tokenizers` (the reference) goes through sg-tokenize, sg-train, sg-sample and sg-probe with the
# vocabulary file moved away; other vocabularies, devices and FIFOs are refused; files of older
# versions keep GPT-2's vocabulary; sg-export writes the run's vocabulary, which transformers'
# AutoTokenizer reads. Needs the project's Python (SG_PYTHON: tokenizers, h5py, transformers).
if(SG_PYTHON AND SG_GPT2_VOCAB AND TARGET sg-train AND TARGET sg-sample AND TARGET sg-probe AND TARGET sg-bpe
   AND TARGET sg-export)
  add_test(NAME "cli: a run knows its tokenizer from sg-tokenize to sg-sample, sg-probe and sg-export"
           COMMAND ${SG_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tokenizer_identity.py ${CMAKE_RUNTIME_OUTPUT_DIRECTORY}
                   ${SG_CLI_DATA}/tokenizer-identity)
  set_tests_properties("cli: a run knows its tokenizer from sg-tokenize to sg-sample, sg-probe and sg-export" PROPERTIES
                       ENVIRONMENT "SINKGATE_VOCAB=${SG_GPT2_VOCAB}" PASS_REGULAR_EXPRESSION "tokenizer identity: ok"
                       TIMEOUT 600)
else()
  message(STATUS "sinkgate: SG_PYTHON or SG_GPT2_VOCAB not set, the tokenizer-identity test is left out")
endif()
