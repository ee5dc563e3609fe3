# Every option list a tool's --help or its docs page shows equals its table in lib/ (STYLE.md rule
# 16): tiers, junk types, cutoffs, probes, table formats, evaluation tasks, log levels, the arms
# and the options of each arm axis. The tables
# are printed by option_tables, which reads lib/ directly (no tool's --help code path), and
# option_lists.cmake compares them with each tool's --help and with docs/tools/*.md.
add_executable(option_tables ${CMAKE_CURRENT_SOURCE_DIR}/cli/option_tables.cpp)
if(SG_WITH_TORCH)
  target_link_libraries(option_tables PRIVATE sg)
  target_compile_definitions(option_tables PRIVATE SG_OPTION_TABLES_TORCH)
else()
  target_link_libraries(option_tables PRIVATE sg_core)
endif()
set(SG_OPTION_LISTS -DTABLES=$<TARGET_FILE:option_tables> -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/option_lists.cmake)

# tool | its options and the table of each (checks apart by commas)
set(SG_OPTION_CHECKS
  "sg-info|--tier|tiers,--log-level|log-levels"
  "sg-tabulate|--format|formats,--log-level|log-levels"
  "sg-tokenize|--log-level|log-levels")
if(SG_WITH_TORCH)
  list(APPEND SG_OPTION_CHECKS
    "sg-train|--tier|tiers,--log-level|log-levels,--arm|paper-arms,--arm|zero-options,--arm|filters,--arm|output-gates"
    "sg-arms|--tier|tiers,--arms|paper-arms,--arms|zero-options,--arms|filters,--arms|output-gates"
    "sg-inject|--junk|junk,--cutoff|cutoffs"
    "sg-probe|--probe|probes,--junk|junk,--cutoff|cutoffs"
    "sg-eval|--task|tasks")
endif()
foreach(entry ${SG_OPTION_CHECKS})
  string(FIND "${entry}" "|" bar)
  string(SUBSTRING "${entry}" 0 ${bar} tool)
  math(EXPR bar "${bar} + 1")
  string(SUBSTRING "${entry}" ${bar} -1 checks)
  string(REPLACE "," ";" checks "${checks}")
  if(NOT TARGET ${tool})
    continue()
  endif()
  add_test(NAME "option lists: ${tool} --help lists equal the tables in lib/"
           COMMAND ${CMAKE_COMMAND} -DTOOL=$<TARGET_FILE:${tool}> "-DCHECKS=${checks}" ${SG_OPTION_LISTS})
  set_tests_properties("option lists: ${tool} --help lists equal the tables in lib/" PROPERTIES
    PASS_REGULAR_EXPRESSION "option lists: ok")
endforeach()

# docs page | option | table | other words the row may quote
set(SG_OPTION_DOCS
  "sg-info.md|--tier|tiers|all"
  "sg-tabulate.md|--format|formats|@format-spellings @format-extensions h5 .h5 auto -o")
if(SG_WITH_TORCH)
  list(APPEND SG_OPTION_DOCS
    "sg-train.md|--tier|tiers"
    "sg-arms.md|--tier|tiers"
    "sg-inject.md|--junk|junk"
    "sg-inject.md|--cutoff|cutoffs"
    "sg-probe.md|--probe|probes|all"
    "sg-eval.md|--task|tasks")
endif()
add_test(NAME "option lists: the docs pages' option tables equal the tables in lib/"
         COMMAND ${CMAKE_COMMAND} -DDOCS=${PROJECT_SOURCE_DIR}/docs/tools "-DCHECKS=${SG_OPTION_DOCS}" ${SG_OPTION_LISTS})
set_tests_properties("option lists: the docs pages' option tables equal the tables in lib/" PROPERTIES
  PASS_REGULAR_EXPRESSION "option lists: ok")
