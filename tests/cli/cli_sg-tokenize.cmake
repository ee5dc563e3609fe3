# Command-line tests of sg-tokenize on a small corpus the tests tokenise (the Python tutorial of the
# default corpus). Its output, cli-data/tokens.h5, is the fixture sg_tokens that the tests of
# sg-train, sg-eval, sg-survey and the Makefile train on.

add_test(NAME "cli: sg-tokenize the tutorial (fixture)"
         COMMAND sg-tokenize ${SG_CORPUS} --val-tokens 5000 -o ${SG_CLI_DATA}/tokens.h5 --force)
set_tests_properties("cli: sg-tokenize the tutorial (fixture)" PROPERTIES FIXTURES_SETUP sg_tokens)

add_test(NAME "cli: sg-tokenize names a bad JSON line"
         COMMAND ${CMAKE_COMMAND} -DCMD=$<TARGET_FILE:sg-tokenize>
                 "-DARGS=${CMAKE_CURRENT_SOURCE_DIR}/fixtures/bad.jsonl;-o;${SG_CLI_DATA}/bad.h5;--force"
                 -DEXPECT_CODE=3 "-DEXPECT_STDERR=bad.jsonl:2:" -P ${SG_EXPECT})

# stdin ("-", by a pipe and by a redirect; JSON Lines with --jsonl) is the same corpus as the file:
# the same documents and tokens in each split.
set(SG_STDIN_TEXT ${SG_CORPUS}/introduction.rst.txt)
add_test(NAME "cli: sg-tokenize reads a pipe, a redirect and JSON Lines on stdin as it reads the file"
         COMMAND bash -c "set -euo pipefail; d='${SG_CLI_DATA}/stdin'; rm -rf \"$d\"; mkdir -p \"$d\"; t='${SG_STDIN_TEXT}'
tok=$<TARGET_FILE:sg-tokenize>; counts() { sed -n 's/.*: \\([0-9]* documents, [0-9]* tokens ([^)]*)\\).*/\\1/p'; }
file=$($tok \"$t\" --val-tokens 1000 -o \"$d/file.h5\" 2>&1 | counts)
pipe=$(cat \"$t\" | $tok - --val-tokens 1000 -o \"$d/pipe.h5\" 2>&1 | counts)
redirect=$($tok - --val-tokens 1000 -o \"$d/redirect.h5\" < \"$t\" 2>&1 | counts)
${SG_PYTHON} -c 'import json,sys; print(json.dumps({\"text\": open(sys.argv[1]).read()}))' \"$t\" > \"$d/one.jsonl\"
jsonl=$($tok - --jsonl --val-tokens 1000 -o \"$d/jsonl.h5\" < \"$d/one.jsonl\" 2>&1 | counts)
echo \"file [$file] pipe [$pipe] redirect [$redirect] jsonl [$jsonl]\"
[ -n \"$file\" ] && [ \"$file\" = \"$pipe\" ] && [ \"$file\" = \"$redirect\" ] && [ \"$file\" = \"$jsonl\" ] && echo same-corpus")
set_tests_properties("cli: sg-tokenize reads a pipe, a redirect and JSON Lines on stdin as it reads the file"
                     PROPERTIES PASS_REGULAR_EXPRESSION "same-corpus")
list(APPEND SG_CORPUS_TESTS "cli: sg-tokenize the tutorial (fixture)"
  "cli: sg-tokenize reads a pipe, a redirect and JSON Lines on stdin as it reads the file")

# A pipe is read once: hashing it for the provenance and tokenising it see the same bytes (a FIFO
# and bash's process substitution give the same tokens as the file); a device is refused.
add_test(NAME "cli: sg-tokenize reads a FIFO and a process substitution once, as it reads the file"
         COMMAND bash -c "set -euo pipefail; d='${SG_CLI_DATA}/fifo'; rm -rf \"$d\"; mkdir -p \"$d\"; \
tok=$<TARGET_FILE:sg-tokenize>; t='${SG_CORPUS}/introduction.rst.txt'; info=$<TARGET_FILE:sg-info>; \
$tok \"$t\" --val-tokens 100 --log-level error -o \"$d/file.h5\"; \
mkfifo \"$d/pipe\"; cat \"$t\" > \"$d/pipe\" & $tok \"$d/pipe\" --val-tokens 100 --log-level error -o \"$d/fifo.h5\"; wait; \
$tok <(cat \"$t\") --val-tokens 100 --log-level error -o \"$d/subst.h5\"; \
for f in file fifo subst; do $info \"$d/$f.h5\" | grep -E '^ +(training|validation) split'; done | sort | uniq -c; \
if $tok /dev/zero -o \"$d/zero.h5\" 2>&1; then exit 1; fi")
set_tests_properties("cli: sg-tokenize reads a FIFO and a process substitution once, as it reads the file" PROPERTIES
  PASS_REGULAR_EXPRESSION "^ *3 +training split +[1-9][0-9]* tokens[^\n]*\n *3 +validation split +100 tokens[^\n]*\nsg-tokenize: error: /dev/zero: a character device, not a regular file")
list(APPEND SG_CORPUS_TESTS "cli: sg-tokenize reads a FIFO and a process substitution once, as it reads the file")


# An empty corpus is exit 3 naming it (the default validation split asked for 5,200,000 tokens of
# it); -o aimed at the vocabulary or the merges.txt beside it is refused (exit 4), both left intact.
add_test(NAME "cli: sg-tokenize refuses an empty corpus and an output on its vocabulary or merges.txt"
         COMMAND bash -c "d='${SG_CLI_DATA}/tokenize-inputs'; rm -rf \"$d\"; mkdir -p \"$d\"; cd \"$d\"; \
tok=$<TARGET_FILE:sg-tokenize>; : > empty.txt; $tok empty.txt --vocab '${SG_GPT2_VOCAB}' -o e.h5 2>&1; echo \"exit $?\"; \
printf '{\"a\": 0}' > vocab.json; printf '#version: 0.2\\n' > merges.txt; printf 'text' > t.txt; \
$tok t.txt --vocab vocab.json -o merges.txt --force 2>&1; echo \"exit $?\"; \
$tok t.txt --vocab vocab.json -o vocab.json --force 2>&1; echo \"exit $?\"; cat vocab.json merges.txt")
set_tests_properties("cli: sg-tokenize refuses an empty corpus and an output on its vocabulary or merges.txt" PROPERTIES
    PASS_REGULAR_EXPRESSION "empty.txt: the corpus is empty [(]0 bytes[)]\n[^\n]*\nexit 3\n[^\n]*merges.txt is also an input[^\n]*\n[^\n]*\nexit 4\n[^\n]*vocab.json is also an input[^\n]*\n[^\n]*\nexit 4\n{\"a\": 0}#version: 0.2")

# Input that is not text: a named HDF5 file (the token file of the fixture, a real one), Parquet,
# a NUL byte, Latin-1 (invalid UTF-8) and gzip are each refused with exit 3, naming the file and
# why; a folder holding them beside text tokenises the text (two documents) and names the skipped
# files on stderr, grouped by reason.
add_test(NAME "cli: sg-tokenize refuses binary input and skips it in a folder, naming it"
         COMMAND bash -c "d='${SG_CLI_DATA}/not-text'; rm -rf \"$d\"; mkdir -p \"$d/corpus\"; cd \"$d\"; \
tok=$<TARGET_FILE:sg-tokenize>; v='${SG_GPT2_VOCAB}'; \
printf 'PAR1\\025\\004\\000\\000' > corpus/shard.parquet; printf 'text\\000more text' > corpus/nul.txt; \
printf 'Caf\\351 cr\\350me br\\373l\\351e' > corpus/latin1.txt; printf '\\037\\213\\010\\000' > corpus/notes.txt.gz; \
printf '\\211HDF\\r\\n\\032\\n\\000\\000' > corpus/run.h5; \
printf 'The first document.\\n' > corpus/a.txt; printf '{\"text\": \"The second.\"}\\n' > corpus/b.jsonl; \
for f in '${SG_CLI_DATA}/tokens.h5' corpus/shard.parquet corpus/nul.txt corpus/latin1.txt corpus/notes.txt.gz; do \
$tok \"$f\" --vocab \"$v\" -o out.h5 --force 2>&1 | grep error; echo \"exit \${PIPESTATUS[0]}\"; done; \
$tok corpus --vocab \"$v\" --val-tokens 2 -o out.h5 --force 2>&1 | grep -E 'skipped|documents'; echo \"exit \${PIPESTATUS[0]}\"; \
cat corpus/a.txt | $tok - corpus/nul.txt --vocab \"$v\" -o out.h5 --force 2>&1 | grep error")
set_tests_properties("cli: sg-tokenize refuses binary input and skips it in a folder, naming it" PROPERTIES
  FIXTURES_REQUIRED sg_tokens
  PASS_REGULAR_EXPRESSION "error: [^\n]*cli-data/tokens.h5: not text \\(an HDF5 file\\)\nexit 3\n[^\n]*error: corpus/shard.parquet: not text \\(a Parquet file\\)\nexit 3\n[^\n]*error: corpus/nul.txt: not text \\(a NUL byte\\)\nexit 3\n[^\n]*error: corpus/latin1.txt: not text \\(invalid UTF-8\\)\nexit 3\n[^\n]*error: corpus/notes.txt.gz: not text \\(a gzip file\\)\nexit 3\n[^\n]*skipped 5 of 7 files, not text: invalid UTF-8 \\(1\\): corpus/latin1.txt; a gzip file \\(1\\): corpus/notes.txt.gz; a NUL byte \\(1\\): corpus/nul.txt; an HDF5 file \\(1\\): corpus/run.h5; a Parquet file \\(1\\): corpus/shard.parquet\n[^\n]*: 2 documents, [^\n]*\nexit 0\n[^\n]*error: corpus/nul.txt: not text")

# A vocabulary folder is no file to hash: the files sg-tokenize reads in it are its inputs, each
# with its SHA-256 in the provenance (here the folder's tokenizer.json, hashed again by Python).
add_test(NAME "cli: sg-tokenize --vocab FOLDER records the SHA-256 of the vocabulary file it reads"
         COMMAND bash -c "set -euo pipefail; d='${SG_CLI_DATA}/tokenize-folder'; o=\"$d.h5\"
${SG_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tokenizer_reference.py pythia \"$d\"
$<TARGET_FILE:sg-tokenize> ${SG_CORPUS}/introduction.rst.txt --vocab \"$d\" --val-tokens 200 --log-level quiet -o \"$o\" --force
$<TARGET_FILE:sg-info> --format json \"$o\" | ${SG_PYTHON} -c '
import hashlib, json, sys
inputs = json.load(sys.stdin)[\"provenance\"][\"inputs\"]
for i in inputs:
    if i[\"path\"].endswith(\"tokenizer.json\"):
        print(\"tokenizer.json\", \"sha256 matches\" if i[\"sha256\"] == hashlib.sha256(open(i[\"path\"], \"rb\").read()).hexdigest() else \"sha256 differs\")
print(len(inputs), \"inputs\")'")
set_tests_properties("cli: sg-tokenize --vocab FOLDER records the SHA-256 of the vocabulary file it reads" PROPERTIES
  PASS_REGULAR_EXPRESSION "tokenizer.json sha256 matches\n2 inputs")
