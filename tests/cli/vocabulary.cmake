# One option vocabulary (STYLE.md rule 15): a tool's --help names no option by a spelling that the
# vocabulary spells otherwise. Run as: cmake -DTOOL=path/to/sg-X -P vocabulary.cmake
# (prints "vocabulary: ok", or fails naming each option and the spelling to use).
execute_process(COMMAND ${TOOL} --help OUTPUT_VARIABLE help RESULT_VARIABLE code)
if(NOT code EQUAL 0)
  message(FATAL_ERROR "${TOOL} --help exited ${code}")
endif()
# spelling found | the vocabulary's spelling
set(rules
  "--tokenizer|--vocab FILE"
  "--vocabulary|--vocab FILE"
  "--batch|--batch-size"
  "--bs|--batch-size"
  "--doses|--dose (a list)"
  "--cutoffs|--cutoff (a list)"
  "--junks|--junk (a list)"
  "--seed-list|--seeds (a list)"
  "--out|-o/--output"
  "--output-file|-o/--output"
  "--overwrite|--force"
  "--nthreads|--threads"
  "--num-threads|--threads"
  "--loglevel|--log-level"
  "--verbose|--log-level debug"
  "--quiet|--log-level quiet")
set(problems "")
foreach(rule ${rules})
  string(REPLACE "|" ";" parts "${rule}")
  list(GET parts 0 wrong)
  list(GET parts 1 right)
  # the option as a whole word: "--batch" but not "--batch-size"
  string(REGEX MATCH "(^|[ ,\n])${wrong}([ ,=\n]|$)" found "${help}")
  if(found)
    list(APPEND problems "${wrong}: the vocabulary spells it ${right}")
  endif()
endforeach()
# The output, where a tool has one, is -o/--output.
if(help MATCHES "--output" AND NOT help MATCHES "-o,--output")
  list(APPEND problems "--output without its short form -o")
endif()
if(problems)
  list(JOIN problems "\n  " text)
  message(FATAL_ERROR "${TOOL}: options spelled outside the vocabulary:\n  ${text}")
endif()
message("vocabulary: ok")
