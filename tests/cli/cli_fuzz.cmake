# The fuzz test (tests/fuzz.py): seeded mutations of every input kind the tools read, each reader
# run under a memory cap and a time limit; any signal, hang, internal error, undocumented exit code
# or error that does not name its file fails it. 100 cases here (under a minute) and 30 structural
# ones (HDF5 files using features sinkgate never writes, and zeroed chunks: exit 0 fails too); a
# release campaign sets SINKGATE_FUZZ_CASES and SINKGATE_FUZZ_STRUCTURAL (e.g.
# SINKGATE_FUZZ_CASES=3000 SINKGATE_FUZZ_STRUCTURAL=1000 ctest -R fuzz).
if(SG_PYTHON AND TARGET sg-train AND TARGET sg-survey)
  add_test(NAME "fuzz: mutated inputs of every kind: no crash, hang, internal error or unnamed file"
           COMMAND ${SG_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/fuzz.py ${CMAKE_RUNTIME_OUTPUT_DIRECTORY}
                   ${CMAKE_CURRENT_BINARY_DIR}/fuzz)
  set_tests_properties("fuzz: mutated inputs of every kind: no crash, hang, internal error or unnamed file"
                       PROPERTIES PASS_REGULAR_EXPRESSION "fuzz: no crash" TIMEOUT 1500)
  list(APPEND SG_CORPUS_TESTS "fuzz: mutated inputs of every kind: no crash, hang, internal error or unnamed file")
endif()
