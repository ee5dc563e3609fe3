# A full disk (a 1 MB tmpfs, where the test can mount one) gives exit code 4 and the reason, never a
# crash, and leaves no temporary file: tests/cli/disk_full.sh.
if(TARGET sg-tokenize AND TARGET sg-train)
  add_test(NAME "cli: a full disk is exit 4 with the reason, no crash, nothing left behind"
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/cli/disk_full.sh ${CMAKE_RUNTIME_OUTPUT_DIRECTORY}
                   ${SG_CLI_DATA}/tokens.h5 ${SG_CORPUS})
  set_tests_properties("cli: a full disk is exit 4 with the reason, no crash, nothing left behind" PROPERTIES
                       FIXTURES_REQUIRED sg_tokens SKIP_RETURN_CODE 77
                       PASS_REGULAR_EXPRESSION "disk full: exit 4 with the reason, nothing left behind")
endif()
if(TEST "cli: a full disk is exit 4 with the reason, no crash, nothing left behind")
  list(APPEND SG_CORPUS_TESTS "cli: a full disk is exit 4 with the reason, no crash, nothing left behind")
endif()
