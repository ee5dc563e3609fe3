# Command-line tests of sg-arms.
add_test(NAME "cli: sg-arms --check passes for every arm on the tiny tier"
         COMMAND sg-arms --tier tiny --check --threads 1)
set_tests_properties("cli: sg-arms --check passes for every arm on the tiny tier"
                     PROPERTIES PASS_REGULAR_EXPRESSION "combo2\tsinklogit\tprojgate\tnone")
add_test(NAME "cli: sg-arms --check passes for the key gate and the output gates with every zero option"
         COMMAND sg-arms --tier tiny --check --threads 1
                 --arms keygate,outgate,outgate-elem,offbyone+keygate,sinktoken+outgate,combo2+outgate-elem,sinklogit+keygate+outgate)
set_tests_properties("cli: sg-arms --check passes for the key gate and the output gates with every zero option"
                     PROPERTIES PASS_REGULAR_EXPRESSION "all checks passed" FAIL_REGULAR_EXPRESSION "FAILED")
add_test(NAME "cli: sg-arms names a bad arm"
         COMMAND ${CMAKE_COMMAND} -DCMD=$<TARGET_FILE:sg-arms> "-DARGS=--arm;nonsense" -DEXPECT_CODE=2
                 "-DEXPECT_STDERR=unknown arm 'nonsense'" -P ${SG_EXPECT})
add_test(NAME "cli: sg-arms names a bad config file line"
         COMMAND ${CMAKE_COMMAND} -DCMD=$<TARGET_FILE:sg-arms> "-DARGS=--config;${CMAKE_CURRENT_SOURCE_DIR}/fixtures/bad.conf"
                 -DEXPECT_CODE=3 "-DEXPECT_STDERR=bad.conf:2: unknown configuration field 'n_layers'"
                 -P ${SG_EXPECT})
add_test(NAME "cli: sg-arms takes --arms as a comma list, repeatable"
         COMMAND sg-arms --tier tiny --arms baseline,sinktoken+projgate --arm combo2)
set_tests_properties("cli: sg-arms takes --arms as a comma list, repeatable" PROPERTIES
                     PASS_REGULAR_EXPRESSION "\nbaseline\t[^\n]*\nsinktoken\\+projgate\t[^\n]*\ncombo2\t")
# A bad tier fails before the header: nothing reaches stdout.
add_test(NAME "cli: sg-arms prints nothing before the error of an unknown tier"
         COMMAND sh -c "$<TARGET_FILE:sg-arms> --tier 125M 2>/dev/null; echo \"exit $? bytes\"; $<TARGET_FILE:sg-arms> --tier 125M 2>/dev/null | wc -c")
set_tests_properties("cli: sg-arms prints nothing before the error of an unknown tier" PROPERTIES
                     PASS_REGULAR_EXPRESSION "^exit 2 bytes\n0\n$")
