# Command-line tests of sg-eval (and sg-train --resume) against the token file a run was trained
# on: the run file stores its SHA-256, and another token file is an error unless
# --allow-other-tokens (then a warning). The run is cli_sg-train.cmake's (fixture sg_run); the
# other token file is tokenised here from one page of the tutorial.
set(SG_EVAL_DATA ${SG_CLI_DATA}/eval)
file(MAKE_DIRECTORY ${SG_EVAL_DATA})
add_test(NAME "cli: sg-eval another token file (fixture)"
         COMMAND sg-tokenize ${SG_CORPUS}/introduction.rst.txt --val-tokens 2000
                 --log-level quiet -o ${SG_EVAL_DATA}/other.h5 --force)
set_tests_properties("cli: sg-eval another token file (fixture)" PROPERTIES FIXTURES_SETUP sg_eval_other)

add_test(NAME "cli: sg-eval refuses a token file the run was not trained on"
         COMMAND ${CMAKE_COMMAND} -DCMD=$<TARGET_FILE:sg-eval>
                 "-DARGS=--tokens;${SG_EVAL_DATA}/other.h5;${SG_CLI_DATA}/run.h5;--batches;1;-o;${SG_EVAL_DATA}/never.h5"
                 -DEXPECT_CODE=3 "-DEXPECT_STDERR=run.h5 was trained on" -P ${SG_EXPECT})
set_tests_properties("cli: sg-eval refuses a token file the run was not trained on" PROPERTIES
                     FIXTURES_REQUIRED "sg_tokens;sg_run;sg_eval_other")
add_test(NAME "cli: sg-eval --allow-other-tokens warns and scores"
         COMMAND sh -c "$<TARGET_FILE:sg-eval> --tokens ${SG_EVAL_DATA}/other.h5 ${SG_CLI_DATA}/run.h5 --batches 1 \
--allow-other-tokens -o - 2>&1 >/dev/null")
set_tests_properties("cli: sg-eval --allow-other-tokens warns and scores" PROPERTIES
                     FIXTURES_REQUIRED "sg_tokens;sg_run;sg_eval_other"
                     PASS_REGULAR_EXPRESSION "warning: [^\n]*run.h5 was trained on [^\n]*tokens.h5 \\(sha256 [0-9a-f]+…\\), not on [^\n]*other.h5.*val_loss [0-9.]+")
add_test(NAME "cli: sg-train --resume refuses a token file the run was not trained on"
         COMMAND sh -c "cp ${SG_CLI_DATA}/run.h5 ${SG_EVAL_DATA}/resume.h5 && $<TARGET_FILE:sg-train> --tokens \
${SG_EVAL_DATA}/other.h5 --resume -o ${SG_EVAL_DATA}/resume.h5; echo \"exit $?\"")
set_tests_properties("cli: sg-train --resume refuses a token file the run was not trained on" PROPERTIES
                     FIXTURES_REQUIRED "sg_tokens;sg_run;sg_eval_other"
                     PASS_REGULAR_EXPRESSION "resume.h5 was trained on .*exit 3")

# The zero-shot tasks on tiny task files written here (their numbers are checked against the
# Python reference in tests/instruments/test_zero_shot.cpp; these tests check the tool: the
# options, the long table, --examples, the errors naming the file).
file(WRITE ${SG_EVAL_DATA}/lambada.jsonl [=[{"text": "The cat sat on the mat and the cat"}
{"text": "He bought bread at the store, but the store had no bread"}
]=])
file(WRITE ${SG_EVAL_DATA}/hellaswag.jsonl [=[{"activity_label": "Cooking", "ctx_a": "A man cuts an onion.", "ctx_b": "he [title] then", "endings": ["cries.", "laughs  loudly.", "[step] sings.", "runs"], "label": "0"}
]=])
file(WRITE ${SG_EVAL_DATA}/wiki.test.raw " \n = Title = \n \n Hello @-@ world , this is ( a test ) . \n \n = = Part = = \n More text 's here . \n")
file(WRITE ${SG_EVAL_DATA}/nofield.jsonl "{\"passage\": \"a b\"}\n")
file(WRITE ${SG_EVAL_DATA}/empty.jsonl "")
set(SG_EVAL_TASKS "--lambada ${SG_EVAL_DATA}/lambada.jsonl --hellaswag ${SG_EVAL_DATA}/hellaswag.jsonl \
--wikitext ${SG_EVAL_DATA}/wiki.test.raw")
add_test(NAME "cli: sg-eval zero-shot tasks write the long table and every example"
         COMMAND sh -c "$<TARGET_FILE:sg-eval> ${SG_CLI_DATA}/run.h5 --task val,lambada,hellaswag,wikitext --tokens \
${SG_CLI_DATA}/tokens.h5 --batches 1 ${SG_EVAL_TASKS} --examples ${SG_EVAL_DATA}/examples.h5 --force -o \
${SG_EVAL_DATA}/zero-shot.h5 --log-level quiet && $<TARGET_FILE:sg-tabulate> ${SG_EVAL_DATA}/zero-shot.h5 --format csv \
&& $<TARGET_FILE:sg-tabulate> ${SG_EVAL_DATA}/examples.h5 --format csv")
set_tests_properties("cli: sg-eval zero-shot tasks write the long table and every example" PROPERTIES
                     FIXTURES_REQUIRED "sg_tokens;sg_run"
                     PASS_REGULAR_EXPRESSION "val,loss,all,[0-9.]+,[0-9]+.*lambada,acc,all,[0-9.]+,2.*lambada,perplexity,all.*lambada,acc,1-32,[0-9.]+,2.*hellaswag,acc_norm,all.*wikitext,ppl,all,[0-9.]+,26.*wikitext,word_perplexity.*lambada,0,-1,-?[0-9.]+,[01],-1,8,1.*hellaswag,0,3,")
add_test(NAME "cli: sg-eval names a missing task file and says how to get it"
         COMMAND ${CMAKE_COMMAND} -DCMD=$<TARGET_FILE:sg-eval>
                 "-DARGS=${SG_CLI_DATA}/run.h5;--task;lambada;--lambada;${SG_EVAL_DATA}/absent.jsonl;-o;-"
                 -DEXPECT_CODE=3 "-DEXPECT_STDERR=absent.jsonl: cannot be read" -P ${SG_EXPECT})
set_tests_properties("cli: sg-eval names a missing task file and says how to get it" PROPERTIES FIXTURES_REQUIRED sg_run)
add_test(NAME "cli: sg-eval refuses a task file without its field"
         COMMAND ${CMAKE_COMMAND} -DCMD=$<TARGET_FILE:sg-eval>
                 "-DARGS=${SG_CLI_DATA}/run.h5;--task;lambada;--lambada;${SG_EVAL_DATA}/nofield.jsonl;-o;-"
                 -DEXPECT_CODE=3 "-DEXPECT_STDERR=nofield.jsonl: line 1 has no \"text\" field" -P ${SG_EXPECT})
set_tests_properties("cli: sg-eval refuses a task file without its field" PROPERTIES FIXTURES_REQUIRED sg_run)
add_test(NAME "cli: sg-eval refuses an empty task file"
         COMMAND ${CMAKE_COMMAND} -DCMD=$<TARGET_FILE:sg-eval>
                 "-DARGS=${SG_CLI_DATA}/run.h5;--task;hellaswag;--hellaswag;${SG_EVAL_DATA}/empty.jsonl;-o;-"
                 -DEXPECT_CODE=3 "-DEXPECT_STDERR=empty.jsonl: holds no records" -P ${SG_EXPECT})
set_tests_properties("cli: sg-eval refuses an empty task file" PROPERTIES FIXTURES_REQUIRED sg_run)
add_test(NAME "cli: sg-eval --task names the known tasks"
         COMMAND ${CMAKE_COMMAND} -DCMD=$<TARGET_FILE:sg-eval> "-DARGS=${SG_CLI_DATA}/run.h5;--task;lambda;-o;-"
                 -DEXPECT_CODE=2 "-DEXPECT_STDERR=unknown task 'lambda'" -P ${SG_EXPECT})
set_tests_properties("cli: sg-eval --task names the known tasks" PROPERTIES FIXTURES_REQUIRED sg_run)
add_test(NAME "cli: sg-eval val needs the token file"
         COMMAND ${CMAKE_COMMAND} -DCMD=$<TARGET_FILE:sg-eval> "-DARGS=${SG_CLI_DATA}/run.h5;-o;-"
                 -DEXPECT_CODE=2 "-DEXPECT_STDERR=needs --tokens" -P ${SG_EXPECT})
set_tests_properties("cli: sg-eval val needs the token file" PROPERTIES FIXTURES_REQUIRED sg_run)
add_test(NAME "cli: sg-eval one zero-shot task alone"
         COMMAND sh -c "$<TARGET_FILE:sg-eval> ${SG_CLI_DATA}/run.h5 --task lambada --lambada ${SG_EVAL_DATA}/lambada.jsonl \
--log-level quiet -o - | $<TARGET_FILE:sg-tabulate> - --format csv")
set_tests_properties("cli: sg-eval one zero-shot task alone" PROPERTIES FIXTURES_REQUIRED sg_run
                     PASS_REGULAR_EXPRESSION "tiny,combo2,0,tiny/combo2/0,sinkgate,lambada,acc,all,")
list(APPEND SG_CORPUS_TESTS "cli: sg-eval another token file (fixture)")

# One validation loss, named by its batches: sg-eval's default (the run's final_eval_batches, its
# eval_seed) is the number sg-info prints as the run's final val_loss, and both name the batches.
add_test(NAME "cli: sg-eval and sg-info give one final validation loss and name its batches"
         COMMAND bash -c "set -euo pipefail; r=${SG_CLI_DATA}/run.h5; \
$<TARGET_FILE:sg-info> $r | grep 'final val_loss'; \
$<TARGET_FILE:sg-eval> --tokens ${SG_CLI_DATA}/tokens.h5 $r --threads 1 --log-level error -o - \
| $<TARGET_FILE:sg-tabulate> - --format csv | grep -v '^#' > ${SG_CLI_DATA}/eval-named.csv; cat ${SG_CLI_DATA}/eval-named.csv; \
python3 -c \"import csv, json, subprocess, sys; row = next(csv.DictReader(open(sys.argv[1]))); \
info = json.loads(subprocess.check_output([sys.argv[2], '--format', 'json', sys.argv[3]]).splitlines()[0])['run']; \
print('same loss' if abs(float(row['val_loss']) - info['final_val_loss']) < 1e-5 and int(row['val_batches']) == info['final_val_batches'] else 'DIFFERENT')\" \
${SG_CLI_DATA}/eval-named.csv $<TARGET_FILE:sg-info> $r")
set_tests_properties("cli: sg-eval and sg-info give one final validation loss and name its batches" PROPERTIES
  FIXTURES_REQUIRED "sg_tokens;sg_run"
  PASS_REGULAR_EXPRESSION "final val_loss +[0-9.]+ \\(1 batches of 8 windows x 32 tokens, eval_seed 1234: sg-eval's default, Tables 1, 2, 5\\)\ntier,arm,seed,val_loss,val_batches,eval_seed,scored_tokens,steps,run\ntiny,combo2,0,[0-9.]+,1,1234,256,6,[^\n]*\nsame loss\n")

# Every result of a tool that runs a model records the arithmetic: device, CPU, thread count and
# each run's loss plan, with where it came from (tests/instruments/test_runs.cpp checks that the
# run's plan is the one that runs, bit for bit).
add_test(NAME "cli: sg-eval and sg-train record the arithmetic: device, threads, the run's loss plan"
         COMMAND bash -c "set -euo pipefail; d='${SG_CLI_DATA}/eval-plan'; rm -rf \"$d\"; mkdir -p \"$d\"
$<TARGET_FILE:sg-train> --tokens ${SG_CLI_DATA}/tokens.h5 ${SG_TINY_LINE} --precision float32 --set loss_plan=16:plain:portable --stop-after 2 \
--threads 1 -o \"$d/run.h5\" --log-level quiet
SINKGATE_LOSS_PRODUCTS=avx512 $<TARGET_FILE:sg-eval> \"$d/run.h5\" --tokens ${SG_CLI_DATA}/tokens.h5 --batches 1 --threads 1 \
--log-level quiet -o \"$d/scores.h5\"
$<TARGET_FILE:sg-info> \"$d/scores.h5\" | grep arithmetic
$<TARGET_FILE:sg-info> \"$d/run.h5\" | grep arithmetic
$<TARGET_FILE:sg-info> --format json \"$d/scores.h5\" | ${SG_PYTHON} -c 'import json, sys; print(\"json:\", json.load(sys.stdin)[\"provenance\"][\"arithmetic\"])'")
set_tests_properties("cli: sg-eval and sg-train record the arithmetic: device, threads, the run's loss plan" PROPERTIES
  FIXTURES_REQUIRED sg_tokens
  PASS_REGULAR_EXPRESSION "  arithmetic +cpu \\([^)\n]+\\), 1 thread; loss plan 16:plain:portable, the run's own\n  arithmetic +cpu \\([^)\n]+\\), 1 thread; loss plan 16:plain:portable\njson: cpu \\(")
