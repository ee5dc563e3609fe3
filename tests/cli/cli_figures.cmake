# Tests of the figures (pipelines/*.gp through Makefile.experiments): a tiny make run draws Figures
# 1, 2, 3, 5, the curves and the direction figure, and tests/cli/figures.sh checks the data each is drawn from, not its
# pixels: a series for every arm trained and none for an arm not trained, every point accounted for,
# Figure 2's points below its log axis's floor marked; Figure 2 at a tier whose battery lacks its
# junk types; its settings stamp (the same settings rerun nothing, new doses rerun the injections).
# Needs every tool (SG_WITH_TORCH).
if(NOT SG_WITH_TORCH)
  return()
endif()
add_test(NAME "figures: a tiny make run draws Figures 1, 2, 3, 5, the curves and the direction figure, a series for each arm trained and every point accounted for"
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/figures.sh ${CMAKE_CURRENT_BINARY_DIR}/figures ${SG_CLI_DATA}/tokens.h5
                 make -C ${CMAKE_SOURCE_DIR} -f Makefile.experiments BIN=${CMAKE_RUNTIME_OUTPUT_DIRECTORY}
                 DEFAULT_CORPUS=${SG_DEFAULT_CORPUS})
set_tests_properties("figures: a tiny make run draws Figures 1, 2, 3, 5, the curves and the direction figure, a series for each arm trained and every point accounted for"
  PROPERTIES FIXTURES_REQUIRED sg_tokens PASS_REGULAR_EXPRESSION "figures: every series and point accounted for")
