# Command-line test of the corpus path for FineWeb-Edu: pipelines/parquet_to_jsonl.py turns small
# Parquet files that tests/parquet_roundtrip.py writes (several row groups, unicode, an empty string
# and a null, both skipped) into JSON Lines, which sg-tokenize then reads one document a line.
# Needs the project's Python (SG_PYTHON, with pyarrow; h5py is used when present).
if(SG_PYTHON)
  set(vocab)
  if(SG_GPT2_VOCAB)
    set(vocab --vocab ${SG_GPT2_VOCAB})
  endif()
  add_test(NAME "cli: parquet_to_jsonl converts Parquet to JSON Lines that sg-tokenize reads"
           COMMAND ${SG_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/parquet_roundtrip.py
                   --converter ${PROJECT_SOURCE_DIR}/pipelines/parquet_to_jsonl.py
                   --sg-tokenize $<TARGET_FILE:sg-tokenize> ${vocab} --work ${CMAKE_CURRENT_BINARY_DIR}/cli-parquet)
else()
  message(STATUS "sinkgate: SG_PYTHON not set, the Parquet conversion test is left out")
endif()
