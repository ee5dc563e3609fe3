# One validation of a configuration for every tool that takes --tier, --config and --set
# (lib/run/config.h, configure_run): every bad value of tests/fixtures/bad_fields.tsv through
# sg-train, sg-arms and sg-info --tier, each exit 2 naming the field: tests/cli/config_fields.py.
if(TARGET sg-train AND TARGET sg-arms AND TARGET sg-info AND SG_PYTHON)
  add_test(NAME "cli: sg-train, sg-arms and sg-info refuse every bad configuration value with exit 2 naming the field"
           COMMAND ${SG_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/cli/config_fields.py ${CMAKE_RUNTIME_OUTPUT_DIRECTORY}
                   ${SG_CLI_DATA}/tokens.h5 ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/bad_fields.tsv)
  set_tests_properties("cli: sg-train, sg-arms and sg-info refuse every bad configuration value with exit 2 naming the field"
                       PROPERTIES FIXTURES_REQUIRED sg_tokens PASS_REGULAR_EXPRESSION "config fields: ok" TIMEOUT 120)
endif()
