# Command-line tests of sg-export on tiny runs of every arm trained from the token file of
# cli_sg-tokenize.cmake's fixture (sg_tokens): transformers, on the exported folder, gives sg-eval's
# validation loss on the run file (within 1e-5) and sg-sample's greedy text, token for token
# (tests/hf_export_reference.py run); sinkgate reads the folder back as the run (sg-eval's val and
# LAMBADA, sg-sample's greedy text, sg-survey's statistics: tests/export_round_trip.py), and refuses
# a folder whose config.json or tensors do not match; bad outputs and inputs are refused.
# (Logits, attention weights and cached decoding against transformers for every arm, the tokenizer
# files against tiktoken: tests/hf/test_export.cpp.)
set(SG_EXPORT_DATA ${CMAKE_CURRENT_BINARY_DIR}/cli-export)
file(MAKE_DIRECTORY ${SG_EXPORT_DATA})
set(export $<TARGET_FILE:sg-export>)
# Twelve steps move every gate off its initial value; the checks compare two implementations of
# the same weights, which need no longer training.
set(SG_EXPORT_TINY --tier tiny --set iterations=12 --set warmup=2 --set eval_interval=6 --set eval_batches=1
                   --set final_eval_batches=1 --set block_size=32 --threads 1)
set(SG_EXPORT_REFERENCES "")  # hf_export_reference.py run's arguments, six per arm
set(SG_EXPORT_FIXTURES sg_tokens)

# The nine, and one arm with every option beyond the paper (the key gate, the output gate, the sink
# token's separate pass).
foreach(arm baseline offbyone sinklogit sinktoken normgate renorm projgate combo combo2 sinktoken+keygate+outgate)
  add_test(NAME "cli: sg-export ${arm} run (fixture)"
           COMMAND sg-train --tokens ${SG_CLI_DATA}/tokens.h5 ${SG_EXPORT_TINY} --arm ${arm}
                   -o ${SG_EXPORT_DATA}/${arm}.h5 --force)
  set_tests_properties("cli: sg-export ${arm} run (fixture)" PROPERTIES
                       FIXTURES_SETUP sg_export_${arm} FIXTURES_REQUIRED sg_tokens)
  set(run ${SG_EXPORT_DATA}/${arm}.h5)
  add_test(NAME "cli: sg-export ${arm} folder (fixture)"
           COMMAND ${export} ${run} -o ${SG_EXPORT_DATA}/${arm} --force --threads 1)
  set_tests_properties("cli: sg-export ${arm} folder (fixture)" PROPERTIES
                       FIXTURES_SETUP sg_export_${arm}_folder FIXTURES_REQUIRED sg_export_${arm})
  # sg-eval's loss and sg-sample's greedy text on the run, for the one transformers test below.
  add_test(NAME "cli: sg-export ${arm}: sg-eval's loss and sg-sample's greedy text on the run (fixture)"
           COMMAND sh -c "$<TARGET_FILE:sg-eval> --tokens ${SG_CLI_DATA}/tokens.h5 ${run} --threads 1 -o ${SG_EXPORT_DATA}/${arm}-eval.h5 --force && \
$<TARGET_FILE:sg-sample> ${run} --prompt 'The tutorial' -n 12 --greedy --threads 1 --log-level quiet \
> ${SG_EXPORT_DATA}/${arm}-sample.txt")
  set_tests_properties("cli: sg-export ${arm}: sg-eval's loss and sg-sample's greedy text on the run (fixture)" PROPERTIES
                       FIXTURES_SETUP sg_export_${arm}_outputs FIXTURES_REQUIRED "sg_tokens;sg_export_${arm}")
  list(APPEND SG_EXPORT_REFERENCES ${SG_EXPORT_DATA}/${arm} ${SG_CLI_DATA}/tokens.h5 ${SG_EXPORT_DATA}/${arm}-eval.h5
       ${SG_EXPORT_DATA}/${arm}-sample.txt "The tutorial" 12)
  list(APPEND SG_EXPORT_FIXTURES sg_export_${arm}_folder sg_export_${arm}_outputs)
  add_test(NAME "cli: sg-eval, sg-sample and sg-survey read the ${arm} export as its run"
           COMMAND ${SG_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/export_round_trip.py same ${CMAKE_RUNTIME_OUTPUT_DIRECTORY}
                   ${run} ${SG_EXPORT_DATA}/${arm} ${SG_CLI_DATA}/tokens.h5 ${SG_EVAL_DATA}/lambada.jsonl
                   ${SG_CORPUS}/introduction.rst.txt ${SG_EXPORT_DATA}/${arm}-round-trip)
  set_tests_properties("cli: sg-eval, sg-sample and sg-survey read the ${arm} export as its run" PROPERTIES
                       FIXTURES_REQUIRED "sg_tokens;sg_export_${arm};sg_export_${arm}_folder"
                       PASS_REGULAR_EXPRESSION "round trip: ok" TIMEOUT 600)
endforeach()
# One Python process for every arm (importing transformers costs more than one arm's check).
list(LENGTH SG_EXPORT_REFERENCES SG_EXPORT_COUNT)
math(EXPR SG_EXPORT_COUNT "${SG_EXPORT_COUNT} / 6")
add_test(NAME "cli: sg-export, every arm: transformers gives sg-eval's loss and sg-sample's greedy text"
         COMMAND ${SG_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/hf_export_reference.py run ${SG_EXPORT_REFERENCES})
set_tests_properties("cli: sg-export, every arm: transformers gives sg-eval's loss and sg-sample's greedy text" PROPERTIES
                     FIXTURES_REQUIRED "${SG_EXPORT_FIXTURES}" PASS_REGULAR_EXPRESSION "run: all ${SG_EXPORT_COUNT} ok" TIMEOUT 600)

add_test(NAME "cli: sg-eval and sg-sample refuse an export whose arm or tensors do not match"
         COMMAND ${SG_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/export_round_trip.py refusals ${CMAKE_RUNTIME_OUTPUT_DIRECTORY}
                 ${SG_EXPORT_DATA}/combo2 ${SG_CLI_DATA}/tokens.h5 ${SG_EXPORT_DATA}/refusals)
set_tests_properties("cli: sg-eval and sg-sample refuse an export whose arm or tensors do not match" PROPERTIES
                     FIXTURES_REQUIRED "sg_tokens;sg_export_combo2_folder" PASS_REGULAR_EXPRESSION "refusals: ok")

add_test(NAME "cli: sg-export refuses an existing non-empty folder without --force"
         COMMAND ${CMAKE_COMMAND} -DCMD=${export} "-DARGS=${SG_EXPORT_DATA}/combo2.h5;-o;${SG_EXPORT_DATA}"
                 -DEXPECT_CODE=4 "-DEXPECT_STDERR=exists and is not empty" -P ${SG_EXPECT})
set_tests_properties("cli: sg-export refuses an existing non-empty folder without --force" PROPERTIES
                     FIXTURES_REQUIRED "sg_export_combo2;sg_export_combo2_folder")
add_test(NAME "cli: sg-export refuses a file as its folder"
         COMMAND ${CMAKE_COMMAND} -DCMD=${export} "-DARGS=${SG_EXPORT_DATA}/combo2.h5;-o;${SG_EXPORT_DATA}/combo2.h5"
                 -DEXPECT_CODE=4 "-DEXPECT_STDERR=exists and is not a folder" -P ${SG_EXPECT})
set_tests_properties("cli: sg-export refuses a file as its folder" PROPERTIES FIXTURES_REQUIRED sg_export_combo2)
add_test(NAME "cli: sg-export names a missing run file"
         COMMAND ${CMAKE_COMMAND} -DCMD=${export} "-DARGS=${SG_EXPORT_DATA}/no-such-run.h5;-o;${SG_EXPORT_DATA}/none"
                 -DEXPECT_CODE=3 -DEXPECT_STDERR=no-such-run.h5 -P ${SG_EXPECT})
add_test(NAME "cli: sg-export refuses a token file as its run"
         COMMAND ${CMAKE_COMMAND} -DCMD=${export} "-DARGS=${SG_CLI_DATA}/tokens.h5;-o;${SG_EXPORT_DATA}/tokens-export"
                 -DEXPECT_CODE=3 -DEXPECT_STDERR=sinkgate-run -P ${SG_EXPECT})
set_tests_properties("cli: sg-export refuses a token file as its run" PROPERTIES FIXTURES_REQUIRED sg_tokens)
add_test(NAME "cli: sg-export needs -o"
         COMMAND ${CMAKE_COMMAND} -DCMD=${export} "-DARGS=${SG_EXPORT_DATA}/combo2.h5" -DEXPECT_CODE=2
                 "-DEXPECT_STDERR=--output is required" -P ${SG_EXPECT})
