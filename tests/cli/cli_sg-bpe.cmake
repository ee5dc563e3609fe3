# Command-line tests of sg-bpe. The expected ids are tiktoken's (gpt2, encode_ordinary).
#
# This file is also the script those tests run (cmake -P, CMAKE_SCRIPT_MODE_FILE set): in WORK it
# writes TEXT (REPEAT times) to input.txt, runs TOOL with ARGS (arguments separated by '|'; STDIN=ON
# feeds input.txt to stdin; VOCAB_ENV sets SINKGATE_VOCAB), and checks EXPECT_CODE (default 0),
# stdout against EXPECT_STDOUT (surrounding white space ignored), stderr against EXPECT_STDERR
# (contains), and that ARGS_SAME (arguments separated by '|') prints the same stdout.
if(CMAKE_SCRIPT_MODE_FILE)
  string(REPLACE "|" ";" ARGS "${ARGS}")
  if(DEFINED ARGS_SAME)
    string(REPLACE "|" ";" ARGS_SAME "${ARGS_SAME}")
  endif()
  file(REMOVE_RECURSE ${WORK})
  file(MAKE_DIRECTORY ${WORK})
  if(NOT DEFINED REPEAT)
    set(REPEAT 1)
  endif()
  string(REPEAT "${TEXT}" ${REPEAT} input)
  file(WRITE ${WORK}/input.txt "${input}")
  if(DEFINED VOCAB_ENV)
    set(ENV{SINKGATE_VOCAB} "${VOCAB_ENV}")
  endif()
  set(stdin)
  if(STDIN)
    set(stdin INPUT_FILE ${WORK}/input.txt)
  endif()
  execute_process(COMMAND ${TOOL} ${ARGS} ${stdin} WORKING_DIRECTORY ${WORK}
                  RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT DEFINED EXPECT_CODE)
    set(EXPECT_CODE 0)
  endif()
  if(NOT code EQUAL EXPECT_CODE)
    message(FATAL_ERROR "exit code ${code}, expected ${EXPECT_CODE}\nstderr: ${err}")
  endif()
  string(STRIP "${out}" stripped)
  if(DEFINED EXPECT_STDOUT AND NOT stripped STREQUAL EXPECT_STDOUT)
    message(FATAL_ERROR "stdout '${stripped}', expected '${EXPECT_STDOUT}'")
  endif()
  if(DEFINED EXPECT_STDERR)
    string(FIND "${err}" "${EXPECT_STDERR}" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "stderr lacks '${EXPECT_STDERR}'\nstderr: ${err}")
    endif()
  endif()
  if(DEFINED ARGS_SAME)
    execute_process(COMMAND ${TOOL} ${ARGS_SAME} WORKING_DIRECTORY ${WORK} RESULT_VARIABLE code_same
                    OUTPUT_VARIABLE out_same ERROR_VARIABLE err_same)
    if(NOT code_same EQUAL 0 OR NOT out_same STREQUAL out)
      string(LENGTH "${out}" length)
      string(LENGTH "${out_same}" length_same)
      message(FATAL_ERROR "'${ARGS_SAME}' printed ${length_same} characters (exit ${code_same}), "
                          "'${ARGS}' ${length}, or different ones\nstderr: ${err_same}")
    endif()
  endif()
  file(REMOVE_RECURSE ${WORK})
  return()
endif()

# sg_bpe_test(NAME arguments for the script above…)
function(sg_bpe_test name)
  string(MAKE_C_IDENTIFIER "${name}" folder)
  add_test(NAME "cli: sg-bpe ${name}"
           COMMAND ${CMAKE_COMMAND} -DTOOL=$<TARGET_FILE:sg-bpe> -DWORK=${CMAKE_CURRENT_BINARY_DIR}/sg-bpe/${folder}
                   ${ARGN} -P ${CMAKE_CURRENT_LIST_FILE})
endfunction()

set(vocab "--vocab|${SG_GPT2_VOCAB}")
sg_bpe_test("encodes a file to tiktoken's ids" "-DTEXT=Hello world" "-DARGS=${vocab}|input.txt"
            "-DEXPECT_STDOUT=15496 995")
sg_bpe_test("encodes stdin" "-DTEXT=Hello world" "-DARGS=${vocab}|-" -DSTDIN=ON "-DEXPECT_STDOUT=15496 995")
sg_bpe_test("takes the vocabulary from SINKGATE_VOCAB" "-DTEXT=Hello world" "-DVOCAB_ENV=${SG_GPT2_VOCAB}"
            "-DARGS=input.txt" "-DEXPECT_STDOUT=15496 995")
sg_bpe_test("counts tokens" "-DTEXT=Hello world" "-DARGS=${vocab}|--count|input.txt" "-DEXPECT_STDOUT=2"
            "-DEXPECT_STDERR=2 tokens from 11 bytes")
sg_bpe_test("decodes ids" "-DTEXT=15496 995\n50256" "-DARGS=${vocab}|--decode|input.txt"
            "-DEXPECT_STDOUT=Hello world<|endoftext|>")
sg_bpe_test("gives the same ids on any number of threads"
            "-DTEXT=It's 2024:  prices rose 3.5%\ton  average\n\n  naïve café, 東京 😀 don't \n" -DREPEAT=20000
            "-DARGS=${vocab}|--threads|4|input.txt" "-DARGS_SAME=${vocab}|--threads|1|input.txt")
sg_bpe_test("names a bad id" "-DTEXT=15496 abc" "-DARGS=${vocab}|--decode|input.txt" -DEXPECT_CODE=3
            "-DEXPECT_STDERR=input.txt: 'abc' is not a token id")
sg_bpe_test("names an id outside the vocabulary" "-DTEXT=50257" "-DARGS=${vocab}|--decode|input.txt" -DEXPECT_CODE=3
            "-DEXPECT_STDERR=token id 50257 is not in the vocabulary")
sg_bpe_test("rejects --count with --decode" "-DTEXT=1" "-DARGS=${vocab}|--count|--decode|input.txt" -DEXPECT_CODE=2
            "-DEXPECT_STDERR=--count and --decode exclude each other")
sg_bpe_test("names a missing vocabulary" "-DTEXT=x" "-DARGS=--vocab|no-such.tiktoken|input.txt" -DEXPECT_CODE=3
            "-DEXPECT_STDERR=cannot open vocabulary file 'no-such.tiktoken'")
sg_bpe_test("names a missing input" "-DTEXT=x" "-DARGS=${vocab}|no-such-input.txt" -DEXPECT_CODE=3
            "-DEXPECT_STDERR=cannot open input 'no-such-input.txt'")
add_test(NAME "cli: sg-bpe refuses a directory as its input"
         COMMAND ${CMAKE_COMMAND} -DCMD=$<TARGET_FILE:sg-bpe> "-DARGS=${CMAKE_CURRENT_SOURCE_DIR}" -DEXPECT_CODE=3
                 "-DEXPECT_STDERR=is a directory, expected a text file" -P ${SG_EXPECT})
