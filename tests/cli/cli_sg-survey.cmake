# Command-line tests of sg-survey: a random GPT-2 checkpoint made by tests/survey_reference.py and a
# tiny sinktoken run trained from the token file of cli_sg-tokenize.cmake's fixture (sg_tokens, which
# writes cli-data/tokens.h5), surveyed on a page of the Python tutorial; the output is rendered by
# sg-tabulate the way pipelines/survey.mk renders Table 12.
set(SG_SURVEY_DATA ${CMAKE_CURRENT_BINARY_DIR}/cli-survey)
file(MAKE_DIRECTORY ${SG_SURVEY_DATA})
set(SG_SURVEY_TEXT ${SG_CORPUS}/introduction.rst.txt)
set(survey $<TARGET_FILE:sg-survey>)
set(tabulate $<TARGET_FILE:sg-tabulate>)

add_test(NAME "cli: sg-survey random GPT-2 checkpoint (fixture)"
         COMMAND ${SG_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/survey_reference.py cli-model ${SG_SURVEY_DATA}/tiny-gpt2)
set_tests_properties("cli: sg-survey random GPT-2 checkpoint (fixture)" PROPERTIES FIXTURES_SETUP sg_survey_model)

add_test(NAME "cli: sg-survey tiny sinktoken run (fixture)"
         COMMAND sg-train --tokens ${SG_CLI_DATA}/tokens.h5 --tier tiny --arm sinktoken
                 --set iterations=2 --set warmup=1 --set eval_interval=2 --set eval_batches=1 --set final_eval_batches=1
                 --set block_size=32 --threads 1 -o ${SG_SURVEY_DATA}/sinktoken.h5 --force)
set_tests_properties("cli: sg-survey tiny sinktoken run (fixture)" PROPERTIES
                     FIXTURES_SETUP sg_survey_run FIXTURES_REQUIRED sg_tokens)

add_test(NAME "cli: sg-survey of a Hugging Face checkpoint renders as Table 12"
         COMMAND sh -c "${survey} ${SG_SURVEY_DATA}/tiny-gpt2 --text ${SG_SURVEY_TEXT} --vocab ${SG_GPT2_VOCAB} \
--blocks 2 --block-length 64 --threads 1 -o - | ${tabulate} - --where scope=model \
--rows model,params_m,layers,heads --cols statistic --cell value --se none --decimals 3")
set_tests_properties("cli: sg-survey of a Hugging Face checkpoint renders as Table 12" PROPERTIES
                     FIXTURES_REQUIRED sg_survey_model
                     PASS_REGULAR_EXPRESSION "sink_mass.*r0_ratio.*blind_ratio_p30.*content_share_p30.*\n.*\n[|] tiny-gpt2 [|] 2 [|] 2 [|] 4 [|]")

add_test(NAME "cli: sg-survey of a sinkgate run counts the sink token as sink mass"
         COMMAND sh -c "${survey} ${SG_SURVEY_DATA}/sinktoken.h5 --text ${SG_SURVEY_TEXT} --vocab ${SG_GPT2_VOCAB} \
--blocks 3 --block-length 32 --batch-size 2 --threads 1 -o - | ${tabulate} - --where scope=model --where arm=sinktoken")
set_tests_properties("cli: sg-survey of a sinkgate run counts the sink token as sink mass" PROPERTIES
                     FIXTURES_REQUIRED sg_survey_run PASS_REGULAR_EXPRESSION "tiny/sinktoken/0 [|] sinkgate [|] sinktoken .*zero_option_mass")

# Errors, each by running the real executable.
set(SG_SURVEY_ARGS --text;${SG_SURVEY_TEXT};--vocab;${SG_GPT2_VOCAB};--threads;1;-o;${SG_SURVEY_DATA}/x.h5;--force)
add_test(NAME "cli: sg-survey names a text too short for the blocks"
         COMMAND ${CMAKE_COMMAND} -DCMD=${survey} "-DARGS=${SG_SURVEY_DATA}/tiny-gpt2;${SG_SURVEY_ARGS};--blocks;1000;--block-length;64"
                 -DEXPECT_CODE=3 "-DEXPECT_STDERR=fewer than the 1000 blocks" -P ${SG_EXPECT})
add_test(NAME "cli: sg-survey refuses blocks longer than the context"
         COMMAND ${CMAKE_COMMAND} -DCMD=${survey} "-DARGS=${SG_SURVEY_DATA}/tiny-gpt2;${SG_SURVEY_ARGS};--blocks;1;--block-length;65"
                 -DEXPECT_CODE=2 -DEXPECT_STDERR=context -P ${SG_EXPECT})
add_test(NAME "cli: sg-survey refuses a folder that is not a checkpoint"
         COMMAND ${CMAKE_COMMAND} -DCMD=${survey} "-DARGS=${SG_SURVEY_DATA};${SG_SURVEY_ARGS}"
                 -DEXPECT_CODE=3 "-DEXPECT_STDERR=${SG_SURVEY_DATA}/config.json" -P ${SG_EXPECT})
add_test(NAME "cli: sg-survey refuses a file that is not a run file"
         COMMAND ${CMAKE_COMMAND} -DCMD=${survey} "-DARGS=${SG_SURVEY_TEXT};${SG_SURVEY_ARGS}"
                 -DEXPECT_CODE=3 -DEXPECT_STDERR=introduction.rst.txt -P ${SG_EXPECT})
add_test(NAME "cli: sg-survey refuses --name with several checkpoints"
         COMMAND ${CMAKE_COMMAND} -DCMD=${survey}
                 "-DARGS=${SG_SURVEY_DATA}/tiny-gpt2;${SG_SURVEY_DATA}/tiny-gpt2;${SG_SURVEY_ARGS};--name;a"
                 -DEXPECT_CODE=2 -DEXPECT_STDERR=--name -P ${SG_EXPECT})
add_test(NAME "cli: sg-survey refuses a percentile outside (0, 100)"
         COMMAND ${CMAKE_COMMAND} -DCMD=${survey} "-DARGS=${SG_SURVEY_DATA}/tiny-gpt2;${SG_SURVEY_ARGS};--percentiles;0,30"
                 -DEXPECT_CODE=2 -DEXPECT_STDERR=percentile -P ${SG_EXPECT})
set_tests_properties("cli: sg-survey names a text too short for the blocks" "cli: sg-survey refuses blocks longer than the context"
                     "cli: sg-survey refuses --name with several checkpoints" "cli: sg-survey refuses a percentile outside (0, 100)"
                     PROPERTIES FIXTURES_REQUIRED sg_survey_model)

# Table 12 and Figure 4 through pipelines/survey.mk on the random checkpoint: the table's labelled
# header, and a PNG.
add_test(NAME "cli: survey.mk renders Table 12 and draws Figure 4"
         COMMAND sh -c "set -e; rm -rf ${SG_SURVEY_DATA}/fig4; make -s -C ${CMAKE_SOURCE_DIR} -f pipelines/survey.mk table12 fig4 \
BIN=${CMAKE_RUNTIME_OUTPUT_DIRECTORY} CHECKPOINTS=${SG_SURVEY_DATA} SURVEY_MODELS=tiny-gpt2 SURVEY_TEXT=${SG_SURVEY_TEXT} \
SURVEY_BLOCKS=2 SURVEY_BLOCK_LENGTH=64 'SURVEY_FLAGS=--vocab ${SG_GPT2_VOCAB} --threads 1 --log-level quiet' \
OUT=${SG_SURVEY_DATA}/fig4 2>&1; cat ${SG_SURVEY_DATA}/fig4/survey/table12.md; \
head -c 4 ${SG_SURVEY_DATA}/fig4/survey/fig4.png | od -An -c | tr -d ' \\n'")
set_tests_properties("cli: survey.mk renders Table 12 and draws Figure 4" PROPERTIES FIXTURES_REQUIRED sg_survey_model
                     PASS_REGULAR_EXPRESSION "\\| Model \\| Params \\(M\\) \\| Layers \\| Heads \\| Sink mass \\|.*PNG")
# Beyond the paper, through pipelines/survey.mk: survey-modern adds a tiny random model of every decoder
# family (tests/survey_modern_reference.py make-models, at GPT-2's vocabulary size) to Table 12 and
# Figure 4 beside the random GPT-2; survey-training surveys three "steps" (the llama model saved
# with three seeds) and draws them against training tokens (step N: N × 2,097,152 tokens).
add_test(NAME "cli: survey.mk tiny random models of each decoder family (fixture)"
         COMMAND sh -c "rm -rf ${SG_SURVEY_DATA}/modern && ${SG_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/survey_modern_reference.py make-models ${SG_SURVEY_DATA}/modern >/dev/null 2>&1 && cp -r ${SG_SURVEY_DATA}/tiny-gpt2 ${SG_SURVEY_DATA}/modern/")
set_tests_properties("cli: survey.mk tiny random models of each decoder family (fixture)" PROPERTIES
                     FIXTURES_SETUP sg_survey_modern FIXTURES_REQUIRED sg_survey_model)
set(SG_SURVEY_MAKE_LINE "make -s -C ${CMAKE_SOURCE_DIR} -f pipelines/survey.mk BIN=${CMAKE_RUNTIME_OUTPUT_DIRECTORY} \
CHECKPOINTS=${SG_SURVEY_DATA}/modern SURVEY_TEXT=${SG_SURVEY_TEXT} SURVEY_BLOCKS=2 SURVEY_BLOCK_LENGTH=64 \
'SURVEY_FLAGS=--vocab ${SG_GPT2_VOCAB} --threads 1 --log-level quiet'")
add_test(NAME "cli: survey.mk survey-modern adds every decoder family to Table 12 and Figure 4"
         COMMAND sh -c "set -e; rm -rf ${SG_SURVEY_DATA}/modern-out; ${SG_SURVEY_MAKE_LINE} OUT=${SG_SURVEY_DATA}/modern-out survey-modern \
SURVEY_MODELS=tiny-gpt2 'MODERN_MODELS=llama mistral qwen2 qwen3 olmo2 gpt_oss' 2>&1; d=${SG_SURVEY_DATA}/modern-out/survey/modern; \
cat $d/table12.md; cut -f1 $d/fig4-models.tsv | sort -u | tr '\\n' ' '; echo; head -c 4 $d/fig4.png | od -An -c | tr -d ' \\n'")
set_tests_properties("cli: survey.mk survey-modern adds every decoder family to Table 12 and Figure 4" PROPERTIES
  FIXTURES_REQUIRED sg_survey_modern
  PASS_REGULAR_EXPRESSION "[|] Model [|] Family [|] Attention [|] Params [(]M[)] [|] Layers [|] Heads [|] Sink mass [|][^\n]*\n[^\n]*\n[|] tiny-gpt2 [|] gpt2 [|] mha [|][^\n]*\n[|] llama [|] llama [|] gqa [|][^\n]*\n[|] mistral [|] mistral [|] gqa[+]window [|][^\n]*\n[|] qwen2 [|] qwen2 [|] gqa[+]window [|][^\n]*\n[|] qwen3 [|] qwen3 [|] gqa [|][^\n]*\n[|] olmo2 [|] olmo2 [|] gqa [|][^\n]*\n[|] gpt_oss [|] gpt_oss [|] gqa[+]window[+]sinks [|][^\n]*\n.*# family gpt2 gpt_oss llama mistral olmo2 qwen2 qwen3 \n.*PNG")
add_test(NAME "cli: survey.mk survey-training tabulates and draws the statistics against training tokens"
         COMMAND sh -c "set -e; rm -rf ${SG_SURVEY_DATA}/training-out; ${SG_SURVEY_MAKE_LINE} OUT=${SG_SURVEY_DATA}/training-out survey-training \
SURVEY_TRAINING_MODEL=llama 'SURVEY_TRAINING_STEPS=step0 step1000 step143000' 2>&1; d=${SG_SURVEY_DATA}/training-out/survey/training; \
cat $d/llama.md $d/llama.tsv; head -c 4 $d/llama.png | od -An -c | tr -d ' \\n'")
set_tests_properties("cli: survey.mk survey-training tabulates and draws the statistics against training tokens" PROPERTIES
  FIXTURES_REQUIRED sg_survey_modern
  PASS_REGULAR_EXPRESSION "[|] Checkpoint [|] Sink mass [|] r0 ratio [|] Blind-mass ratio @30 [|][^\n]*\n[^\n]*\n[|] llama/step0 [|][^\n]*\n[|] llama/step1000 [|][^\n]*\n[|] llama/step143000 [|][^\n]*\n# model\tstep\ttokens\tsink_mass\tr0_ratio\tblind_ratio_p30\nllama\tstep0\t0\t[^\n]*\nllama\tstep1000\t2097152000\t[^\n]*\nllama\tstep143000\t299892736000\t[^\n]*\n.*PNG")
add_test(NAME "cli: survey.mk survey-training names a step folder that is missing"
         COMMAND sh -c "${SG_SURVEY_MAKE_LINE} OUT=${SG_SURVEY_DATA}/training-missing survey-training SURVEY_TRAINING_MODEL=llama 'SURVEY_TRAINING_STEPS=step0 step7' 2>&1; echo \"exit $?\"")
set_tests_properties("cli: survey.mk survey-training names a step folder that is missing" PROPERTIES
  FIXTURES_REQUIRED sg_survey_modern PASS_REGULAR_EXPRESSION "llama-steps/step7/config.json is missing: download revision step7 of llama[^\n]*\n.*exit 2")

# These read a page of the tests' corpus (SG_SURVEY_TEXT).
list(APPEND SG_CORPUS_TESTS
  "cli: sg-survey tiny sinktoken run (fixture)"
  "cli: sg-survey of a Hugging Face checkpoint renders as Table 12"
  "cli: sg-survey of a sinkgate run counts the sink token as sink mass"
  "cli: sg-survey names a text too short for the blocks"
  "cli: sg-survey refuses blocks longer than the context"
  "cli: sg-survey refuses a folder that is not a checkpoint"
  "cli: sg-survey refuses a file that is not a run file"
  "cli: sg-survey refuses --name with several checkpoints"
  "cli: sg-survey refuses a percentile outside (0, 100)"
  "cli: survey.mk renders Table 12 and draws Figure 4"
  "cli: survey.mk survey-modern adds every decoder family to Table 12 and Figure 4"
  "cli: survey.mk survey-training tabulates and draws the statistics against training tokens"
  "cli: survey.mk survey-training names a step folder that is missing"
)

# A config.json nested 200,000 levels deep crashed sg-sample, sg-eval and sg-survey (the stack
# overflowed in an error message's dump of the value): now exit 3 naming the file, in all three.
add_test(NAME "cli: a config.json nested 200,000 levels deep is exit 3 naming it in sg-sample, sg-eval and sg-survey"
         COMMAND sh -c "d=${SG_SURVEY_DATA}/deep; rm -rf $d; cp -r ${SG_SURVEY_DATA}/tiny-gpt2 $d; \
{ printf '{\"model_type\": '; head -c 200000 /dev/zero | tr '\\0' '['; head -c 200000 /dev/zero | tr '\\0' ']'; printf '}'; } \
> $d/config.json; \
$<TARGET_FILE:sg-sample> $d --prompt a -n 1 --vocab ${SG_GPT2_VOCAB} --threads 1; echo \"exit $?\"; \
$<TARGET_FILE:sg-eval> $d --task wikitext --wikitext ${SG_SURVEY_TEXT} --vocab ${SG_GPT2_VOCAB} --threads 1 -o $d/e.h5; \
echo \"exit $?\"; ${survey} $d --text ${SG_SURVEY_TEXT} --vocab ${SG_GPT2_VOCAB} --threads 1 -o $d/s.h5; echo \"exit $?\"")
set_tests_properties("cli: a config.json nested 200,000 levels deep is exit 3 naming it in sg-sample, sg-eval and sg-survey"
                     PROPERTIES FIXTURES_REQUIRED sg_survey_model
                     PASS_REGULAR_EXPRESSION "sg-sample: error: [^\n]*deep/config.json: JSON nested deeper than 64 levels\nhint: [^\n]*\nexit 3\nsg-eval: error: [^\n]*deep/config.json: JSON nested deeper than 64 levels\nhint: [^\n]*\nexit 3\nsg-survey: error: [^\n]*deep/config.json: JSON nested deeper than 64 levels\nhint: [^\n]*\nexit 3")

# A checkpoint folder whose weights are a FIFO (no writer) or a character device: sg-survey,
# sg-eval and sg-sample refuse it at once by name (exit 3), never wait on it, never call it empty.
add_test(NAME "cli: a checkpoint folder's weights as a FIFO or a device are refused at once by the model tools"
         COMMAND bash -c "set -uo pipefail; d='${SG_SURVEY_DATA}/fifo-weights'; rm -rf \"$d\"; mkdir -p \"$d\"
for f in config.json vocab.json merges.txt; do cp '${SG_SURVEY_DATA}/tiny-gpt2/'$f \"$d/\" 2>/dev/null || true; done
cp '${SG_SURVEY_DATA}/tiny-gpt2/'tokenizer.json \"$d/\" 2>/dev/null || true
mkfifo \"$d/model.safetensors\"
timeout 30 ${survey} \"$d\" --text ${SG_SURVEY_TEXT} -o - >/dev/null 2>\"$d/survey.err\"; echo \"survey exit $?\"
timeout 30 $<TARGET_FILE:sg-eval> \"$d\" --task wikitext --wikitext ${SG_SURVEY_TEXT} -o - >/dev/null 2>\"$d/eval.err\"; echo \"eval exit $?\"
timeout 30 $<TARGET_FILE:sg-sample> \"$d\" --prompt Hello -n 2 >/dev/null 2>\"$d/sample.err\"; echo \"sample exit $?\"
grep -h -o 'model.safetensors: a FIFO' \"$d\"/*.err | sort | uniq -c | sed 's/^ *//'
rm \"$d/model.safetensors\"; ln -s /dev/zero \"$d/model.safetensors\"
timeout 30 ${survey} \"$d\" --text ${SG_SURVEY_TEXT} -o - 2>&1 >/dev/null | grep -o 'model.safetensors[^:]*: a character device'")
set_tests_properties("cli: a checkpoint folder's weights as a FIFO or a device are refused at once by the model tools" PROPERTIES
  FIXTURES_REQUIRED sg_survey_model
  PASS_REGULAR_EXPRESSION "survey exit 3\neval exit 3\nsample exit 3\n3 model.safetensors: a FIFO\nmodel.safetensors[^\n]*: a character device")
