# Tables 3 and 4 as the make targets print them, from the code's tiers (sg-info) and arms (sg-arms),
# compared cell by cell with the paper's, transcribed in pipelines/paper_table3.csv and
# paper_table4.csv. Needs sg-arms (SG_WITH_TORCH) and a Python 3.
if(NOT TARGET sg-arms)
  return()
endif()
find_program(SG_PAPER_TABLES_PYTHON NAMES python3)
foreach(table table3 table4)
  add_test(NAME "paper: ${table} from the code's definitions equals the paper's, cell by cell"
           COMMAND bash -c "set -euo pipefail; diff <(${SG_PAPER_TABLES_PYTHON} ${CMAKE_SOURCE_DIR}/pipelines/paper_tables.py \
${CMAKE_RUNTIME_OUTPUT_DIRECTORY} ${table} --csv) ${CMAKE_SOURCE_DIR}/pipelines/paper_${table}.csv && echo same")
  set_tests_properties("paper: ${table} from the code's definitions equals the paper's, cell by cell" PROPERTIES
                       PASS_REGULAR_EXPRESSION "^same\n$")
endforeach()
add_test(NAME "make: table3 and table4 print the paper's layout"
         COMMAND make -s -C ${CMAKE_SOURCE_DIR} -f Makefile.experiments BIN=${CMAKE_RUNTIME_OUTPUT_DIRECTORY}
                 OUT=${CMAKE_CURRENT_BINARY_DIR}/paper-tables table3 table4)
set_tests_properties("make: table3 and table4 print the paper's layout" PROPERTIES
  PASS_REGULAR_EXPRESSION "\\| 124M \\| 12 \\| 12 \\| 768 \\| 1024 \\| 8x4 \\| 48,800 \\| 800 \\| 1.60B \\|.*\\| combo2 \\| phantom, learned \\| learned direction \\| H\\(d\\+2\\) \\|")
