# Command-line tests of sg-info on the fixtures of the other tools: the tutorial's token file
# (sg_tokens), the tiny combo2 run (sg_run, where sg-train is built) and the paper's Table 5 CSV.
set(info $<TARGET_FILE:sg-info>)

# The token file is cli_sg-tokenize.cmake's fixture, left out where the tokenizer's references are.
if(NOT "cli_sg-tokenize" IN_LIST SG_SKIPPED)
  add_test(NAME "cli: sg-info describes a token file and a CSV result table"
           COMMAND ${info} ${SG_CLI_DATA}/tokens.h5 ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/paper_table5.csv)
  set_tests_properties("cli: sg-info describes a token file and a CSV result table" PROPERTIES
    FIXTURES_REQUIRED sg_tokens
    PASS_REGULAR_EXPRESSION "kind +token file \\(sinkgate-tokens, schema_version 1\\)\n +tokenizer +gpt2, vocabulary 50257, end-of-text id 50256.*validation split +5000 tokens.*written by +sg-tokenize.*paper_table5.csv\n +kind +result table \\(CSV\\)\n +rows +71\n +key +tier \\(string\\)\n +key +arm \\(string\\)\n +key +seed \\(int64\\)\n +value +val_loss \\(float64\\)")
endif()

add_test(NAME "cli: sg-info --tier prints a preset, and all prints every tier"
         COMMAND bash -c "${info} --tier 124M; ${info} --tier all | grep -c '^tier '")
set_tests_properties("cli: sg-info --tier prints a preset, and all prints every tier" PROPERTIES
  PASS_REGULAR_EXPRESSION "tier 124M: paper tier \\(Table 3\\), 1.60B tokens\n +n_layer +12\n +n_head +12\n +n_embd +768\n +block_size +1024\n.*\n9\n")

add_test(NAME "cli: sg-info names a file that is not a sinkgate file"
         COMMAND ${CMAKE_COMMAND} -DCMD=${info} "-DARGS=$<TARGET_FILE:sg-info>" -DEXPECT_CODE=3
                 "-DEXPECT_STDERR=neither an HDF5 file nor CSV text" -P ${SG_EXPECT})
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/cli-sg-info-hostname "vm\n")
add_test(NAME "cli: sg-info refuses a one-word text file rather than call it a result table"
         COMMAND ${CMAKE_COMMAND} -DCMD=${info} "-DARGS=${CMAKE_CURRENT_BINARY_DIR}/cli-sg-info-hostname" -DEXPECT_CODE=3
                 "-DEXPECT_STDERR=cli-sg-info-hostname: not a result table (CSV): 1 column(s) (vm)" -P ${SG_EXPECT})
add_test(NAME "cli: sg-info without files or --tier is a usage error"
         COMMAND ${CMAKE_COMMAND} -DCMD=${info} -DEXPECT_CODE=2 "-DEXPECT_STDERR=nothing to describe" -P ${SG_EXPECT})
add_test(NAME "cli: sg-info names an unknown tier"
         COMMAND ${CMAKE_COMMAND} -DCMD=${info} "-DARGS=--tier;125M" -DEXPECT_CODE=2 "-DEXPECT_STDERR=unknown tier '125M'" -P ${SG_EXPECT})

# The run file of sg-train's tiny run (sg_run): in builds with LibTorch.
if(TARGET sg-train)
  # The tiny combo2 run: 2 layers, 2 heads, width 64, context 32, vocabulary 50,257. Parameters by
  # hand: wte 50,257 x 64 = 3,216,448; wpe 32 x 64 = 2,048; per block two LayerNorms (2 x 128),
  # c_attn 12,288, c_proj 4,096, MLP 2 x 16,384, combo2's b_h, w_h, b_h 2 + 64 + 2: 49,476, twice
  # 98,952; ln_f 128: 3,317,576.
  add_test(NAME "cli: sg-info describes a run file: run, parameters, progress, configuration against the tier"
           COMMAND ${info} ${SG_CLI_DATA}/run.h5)
  set_tests_properties("cli: sg-info describes a run file: run, parameters, progress, configuration against the tier" PROPERTIES
    FIXTURES_REQUIRED "sg_tokens;sg_run"
    PASS_REGULAR_EXPRESSION "kind +run file \\(sinkgate-run, schema_version 1\\).*run +tier tiny, arm combo2, seed 0.*parameters +3317576 .*progress +step 6 of 6, finished.*token file +[^ ]*tokens.h5  sha256 [0-9a-f][0-9a-f][0-9a-f][0-9a-f]+.*    n_layer +2\n.*    block_size \\* +32\n.*    iterations \\* +6\n.*written by +sg-train")

  if(SG_PYTHON)
    add_test(NAME "cli: sg-info --format json is one parseable object per file"
             COMMAND bash -c "set -euo pipefail; ${info} --format json ${SG_CLI_DATA}/run.h5 | ${SG_PYTHON} -c \
  'import json, sys; d = json.load(sys.stdin); r = d[\"run\"]; print(d[\"kind\"], r[\"arm\"], r[\"parameters\"], r[\"config\"][\"n_head\"], sorted(r[\"differs_from_tier\"]), d[\"provenance\"][\"tool\"])'")
    set_tests_properties("cli: sg-info --format json is one parseable object per file" PROPERTIES
      FIXTURES_REQUIRED "sg_tokens;sg_run"
      PASS_REGULAR_EXPRESSION "run combo2 3317576 2 \\['block_size', 'eval_batches', 'eval_interval', 'final_eval_batches', 'iterations', 'warmup'\\] sg-train")
  endif()

  if(SG_PYTHON)
    add_test(NAME "cli: sg-info --format json on several files is JSON Lines, and -o writes it atomically"
             COMMAND bash -c "set -euo pipefail; d='${CMAKE_CURRENT_BINARY_DIR}/cli-sg-info'; rm -rf \"$d\"; mkdir -p \"$d\"; \
${info} --format json ${SG_CLI_DATA}/run.h5 ${SG_CLI_DATA}/tokens.h5 ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/paper_table5.csv \
-o \"$d/info.jsonl\"; ${SG_PYTHON} -c \
'import json, sys; print(*[json.loads(line)[\"kind\"] for line in open(sys.argv[1])])' \"$d/info.jsonl\"; \
if ${info} --format json ${SG_CLI_DATA}/run.h5 -o \"$d/info.jsonl\" 2>&1; then exit 1; fi; echo refused")
    set_tests_properties("cli: sg-info --format json on several files is JSON Lines, and -o writes it atomically" PROPERTIES
      FIXTURES_REQUIRED "sg_tokens;sg_run"
      PASS_REGULAR_EXPRESSION "run tokens result\n.*info.jsonl exists.*\nrefused")
  endif()

  add_test(NAME "cli: sg-info --curves prints a run's curves as TSV"
           COMMAND ${info} --curves ${SG_CLI_DATA}/run.h5)
  set_tests_properties("cli: sg-info --curves prints a run's curves as TSV" PROPERTIES
    FIXTURES_REQUIRED "sg_tokens;sg_run"
    PASS_REGULAR_EXPRESSION "^# run\ttier\tarm\tseed\tseries\tstep\tvalue\n# tiny/combo2/0: val_loss over eval_batches 1 \\(batches of 8 windows x [0-9]+ tokens, eval_seed 1234\\); the final val_loss over final_eval_batches 1 of the same stream\ntiny/combo2/0\ttiny\tcombo2\t0\ttrain_loss\t1\t[0-9.]+\n.*tiny/combo2/0\ttiny\tcombo2\t0\tval_loss\t6\t[0-9.]+\n")
endif()
