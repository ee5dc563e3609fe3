# The README's code blocks marked <!-- runnable --> run as written: each is extracted and run by bash
# (-euo pipefail) in a scratch folder where build/ is this build tree, so the examples cannot rot.
if(NOT SG_WITH_TORCH)
  return()
endif()
set(SG_README_WORK ${CMAKE_CURRENT_BINARY_DIR}/readme)
get_filename_component(SG_BUILD_TREE ${CMAKE_RUNTIME_OUTPUT_DIRECTORY} DIRECTORY)
add_test(NAME "readme: the runnable code blocks run as written"
         COMMAND bash -c "set -euo pipefail; rm -rf '${SG_README_WORK}'; mkdir -p '${SG_README_WORK}'; cd '${SG_README_WORK}'; \
ln -s '${SG_BUILD_TREE}' build; \
awk '/^<!-- runnable -->$/ { armed = 1; next } armed && /^```/ { if (inside) { armed = 0; inside = 0; n++ } else inside = 1; next } \
inside { print > (\"block\" n \".sh\") }' '${CMAKE_SOURCE_DIR}/README.md'; \
ls block*.sh > /dev/null; for b in block*.sh; do echo \"== $b\"; bash -euo pipefail $b; done; echo readme-blocks-ok")
set_tests_properties("readme: the runnable code blocks run as written" PROPERTIES
                     PASS_REGULAR_EXPRESSION "readme-blocks-ok" TIMEOUT 300)
