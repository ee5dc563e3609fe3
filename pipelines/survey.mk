# pipelines/survey.mk — Table 12 and Figure 4 of "Abstention and Noise Filtering: Two Missing
# Primitives of Softmax Attention" (App. F): sinks and norm-blind routing in pretrained GPT-2 and
# Pythia checkpoints, on 16 blocks of 1,024 tokens of WikiText-2 validation text.
#
#   make -f pipelines/survey.mk survey-download     # the ten checkpoints and WikiText-2 (internet, ~23 GB)
#   make -f pipelines/survey.mk table12             # runs/survey/table12.md over the checkpoints present
#   make -f pipelines/survey.mk table12 DEVICE=cuda
#   make -f pipelines/survey.mk fig4                # runs/survey/fig4.png: Figure 4 (per model, against size)
#   make -f pipelines/survey.mk fig4-data           # runs/survey/fig4.tsv: every head's values
#   make -f pipelines/survey.mk survey-modern MODERN_MODELS='Llama-3.2-1B Qwen3-1.7B gpt-oss-20b'
#                                                   # Table 12 and Figure 4 with today's models added
#   make -f pipelines/survey.mk survey-training SURVEY_TRAINING_MODEL=pythia-160m \
#       SURVEY_TRAINING_STEPS='step0 step1000 step143000'   # the statistics over training
#   make -f pipelines/survey.mk survey-bench        # time a random GPT-2 small (124M) on this machine
#   make -f Makefile.experiments table12            # the same, into $(OUT)/survey (results/paper/survey)
#
# Checkpoints are Hugging Face folders $(CHECKPOINTS)/NAME (config.json, model*.safetensors*,
# tokenizer files); table12 surveys those of $(SURVEY_MODELS) that are present and skips the rest.
# Variables shared with Makefile.experiments: BIN (the tools), OUT (outputs), DEVICE, THREADS.
# Outputs, in $(SURVEY_DIR):
#   NAME.h5       result table of one model: every head (scope=head) and the summaries (scope=model)
#   table12.md    Table 12: mean sink mass, median r0 ratio, mean blind-mass ratio and content share @30
#   table12.tsv   the same rows with every percentile, full precision
#   fig4.tsv      Figure 4's data: one line per head, one column per statistic
#   modern/       survey-modern: table12.md, table12.tsv (with family and attention kind), fig4.png
#   training/     survey-training: MODEL.md, MODEL.tsv (with training tokens), MODEL.png, STEP.h5 per step
#
# Included by Makefile.experiments; it also runs alone (make -f pipelines/survey.mk).

BIN ?= $(abspath $(SURVEY_PIPELINES)/../build/bin)
SURVEY_DIR ?= $(or $(OUT),runs)/survey
# The project's Python (transformers, pyarrow, huggingface_hub's hf), as setup.sh installs it.
SURVEY_CACHE ?= $(or $(SINKGATE_CACHE),$(HOME)/.cache/sinkgate)
SURVEY_PYTHON ?= $(firstword $(wildcard $(SURVEY_CACHE)/venv-torch-*/bin/python) python3)
SURVEY_HF ?= $(firstword $(wildcard $(dir $(SURVEY_PYTHON))hf) hf)
CHECKPOINTS ?= checkpoints
SURVEY_TEXT ?= data/wikitext-2/wiki.valid.raw
SURVEY_MODELS ?= gpt2 gpt2-medium gpt2-large gpt2-xl pythia-70m pythia-160m pythia-410m pythia-1b pythia-1.4b pythia-2.8b
SURVEY_BLOCKS ?= 16
SURVEY_BLOCK_LENGTH ?= 1024
SURVEY_FLAGS ?= $(if $(DEVICE),--device $(DEVICE)) $(if $(THREADS),--threads $(THREADS))

# One GPU per job with DEVICE=cuda (GPUS, GPU_SLOTS), when this file runs alone too.
ifndef SG_GPU_ROOT
  include $(patsubst %/,%,$(dir $(abspath $(lastword $(MAKEFILE_LIST)))))/gpu.mk
endif
SURVEY_PRESENT := $(foreach m,$(SURVEY_MODELS),$(if $(wildcard $(CHECKPOINTS)/$(m)/config.json),$(m)))
SURVEY_RESULTS := $(SURVEY_PRESENT:%=$(SURVEY_DIR)/%.h5)
survey_comma := ,
survey_empty :=
survey_space := $(survey_empty) $(survey_empty)
SURVEY_ORDER := $(subst $(survey_space),$(survey_comma),$(strip $(SURVEY_MODELS)))
SURVEY_TABLE12 := sink_mass,r0_ratio,blind_ratio_p30,content_share_p30
SURVEY_LABELS := --label 'statistic:sink_mass=Sink mass' --label 'statistic:r0_ratio=r0 ratio' \
    --label 'statistic:blind_ratio_p30=Blind-mass ratio @30' --label 'statistic:content_share_p30=Content share @30' \
    --header 'model=Model' --header 'params_m=Params (M)' --header 'layers=Layers' --header 'heads=Heads'

survey_need_results = $(if $^,,$(error no checkpoint of SURVEY_MODELS is in $(CHECKPOINTS)/: run \
    'make -f pipelines/survey.mk survey-download' (docs/data.md, "Pretrained checkpoints and WikiText-2 validation")))

.PHONY: table12 fig4 fig4-data survey-download survey-bench survey-modern survey-training
table12: $(SURVEY_DIR)/table12.md $(SURVEY_DIR)/table12.tsv
fig4-data: $(SURVEY_DIR)/fig4.tsv
fig4: $(SURVEY_DIR)/fig4.png

# One model: every head of every layer on the first 16 × 1,024 tokens of the text.
$(SURVEY_DIR)/%.h5: $(CHECKPOINTS)/%/config.json $(SURVEY_TEXT)
	@mkdir -p $(@D)
	$(DEVICE_LAUNCH) $(BIN)/sg-survey $(CHECKPOINTS)/$* --text $(SURVEY_TEXT) --blocks $(SURVEY_BLOCKS) --block-length $(SURVEY_BLOCK_LENGTH) \
	    $(SURVEY_FLAGS) -o $@ --force

$(SURVEY_TEXT):
	@echo "survey.mk: $@ is missing: run 'make -f pipelines/survey.mk survey-download', or set SURVEY_TEXT" >&2; exit 1

$(SURVEY_DIR)/table12.md: $(SURVEY_RESULTS)
	$(survey_need_results)
	$(BIN)/sg-tabulate $^ --where scope=model --where statistic=$(SURVEY_TABLE12) --rows model,params_m,layers,heads \
	    --cols statistic --cell value --se none --decimals 3 --order model=$(SURVEY_ORDER) \
	    --col-order $(SURVEY_TABLE12) $(SURVEY_LABELS) -o $@ --force

$(SURVEY_DIR)/table12.tsv: $(SURVEY_RESULTS)
	$(survey_need_results)
	$(BIN)/sg-tabulate $^ --where scope=model --rows model,params_m,layers,heads --cols statistic --cell value \
	    --se none --order model=$(SURVEY_ORDER) --format tsv -o $@ --force

$(SURVEY_DIR)/fig4.tsv: $(SURVEY_RESULTS)
	$(survey_need_results)
	$(BIN)/sg-tabulate $^ --where scope=head --rows model,params_m,layer,head --cols statistic --cell value \
	    --se none --order model=$(SURVEY_ORDER) --format tsv -o $@ --force

# Figure 4: sink mass, blind-mass ratio and content share @30 of every model against its size.
SURVEY_PIPELINES := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))
# Figure 4's numbers and drawing, shared by the paper's models and survey-modern's: the models' result
# tables ($^) in the order $(1), and the figure of $<.
survey_fig4_table = $(BIN)/sg-tabulate $^ --where scope=model --where statistic=sink_mass,blind_ratio_p30,content_share_p30 \
    --rows family,model,params_m --cols statistic --cell value --se none --order model=$(1) \
    --col-order sink_mass,blind_ratio_p30,content_share_p30 --format tsv -o $@ --force
survey_fig4_draw = gnuplot -e "data='$<'; output='$@'; text='$(SURVEY_BLOCKS) blocks of $(SURVEY_BLOCK_LENGTH) tokens of $(SURVEY_TEXT)'" \
    $(SURVEY_PIPELINES)/fig4.gp
$(SURVEY_DIR)/fig4-models.tsv: $(SURVEY_RESULTS)
	$(survey_need_results)
	$(call survey_fig4_table,$(SURVEY_ORDER))
$(SURVEY_DIR)/fig4.png: $(SURVEY_DIR)/fig4-models.tsv $(SURVEY_PIPELINES)/fig4.gp $(SURVEY_PIPELINES)/figures.gp
	$(survey_fig4_draw)

# Beyond the paper: Table 12 and Figure 4 over the paper's models present and today's, MODERN_MODELS
# (folders $(CHECKPOINTS)/NAME of any family sg-survey reads; docs/data.md has the downloads). The
# rows gain the family and the attention kind; every model is surveyed as above, on the same text.
MODERN_MODELS ?= Llama-3.2-1B Qwen3-1.7B OLMo-2-0425-1B gpt-oss-20b
MODERN_DIR := $(SURVEY_DIR)/modern
MODERN_PRESENT := $(foreach m,$(MODERN_MODELS),$(if $(wildcard $(CHECKPOINTS)/$(m)/config.json),$(m)))
MODERN_ALL := $(SURVEY_PRESENT) $(MODERN_PRESENT)
MODERN_ORDER := $(subst $(survey_space),$(survey_comma),$(strip $(SURVEY_MODELS) $(MODERN_MODELS)))
modern_need_results = $(if $(MODERN_PRESENT),,$(error no checkpoint of MODERN_MODELS ($(strip $(MODERN_MODELS))) is in \
    $(CHECKPOINTS)/: see docs/survey-modern.md, "Downloads"))

survey-modern: $(MODERN_DIR)/table12.md $(MODERN_DIR)/table12.tsv $(MODERN_DIR)/fig4.png
$(MODERN_DIR)/table12.md: $(MODERN_ALL:%=$(SURVEY_DIR)/%.h5)
	$(modern_need_results)
	@mkdir -p $(@D)
	$(BIN)/sg-tabulate $^ --where scope=model --where statistic=$(SURVEY_TABLE12) --rows model,family,attention,params_m,layers,heads \
	    --cols statistic --cell value --se none --decimals 3 --order model=$(MODERN_ORDER) \
	    --col-order $(SURVEY_TABLE12) $(SURVEY_LABELS) --header 'family=Family' --header 'attention=Attention' -o $@ --force
$(MODERN_DIR)/table12.tsv: $(MODERN_ALL:%=$(SURVEY_DIR)/%.h5)
	$(modern_need_results)
	@mkdir -p $(@D)
	$(BIN)/sg-tabulate $^ --where scope=model --rows model,family,attention,params_m,layers,heads --cols statistic --cell value \
	    --se none --order model=$(MODERN_ORDER) --format tsv -o $@ --force
$(MODERN_DIR)/fig4-models.tsv: $(MODERN_ALL:%=$(SURVEY_DIR)/%.h5)
	$(modern_need_results)
	@mkdir -p $(@D)
	$(call survey_fig4_table,$(MODERN_ORDER))
$(MODERN_DIR)/fig4.png: $(MODERN_DIR)/fig4-models.tsv $(SURVEY_PIPELINES)/fig4.gp $(SURVEY_PIPELINES)/figures.gp
	$(survey_fig4_draw)

# Over training: the intermediate checkpoints of one model, folders $(SURVEY_TRAINING_DIR)/STEP for
# STEP in SURVEY_TRAINING_STEPS (Pythia's revisions step0 … step143000, OLMo 2's
# stage1-stepN-tokensMB; docs/data.md). Training tokens: M billion where the name says tokensMB,
# else N × SURVEY_TRAINING_TOKENS_PER_STEP (Pythia: 1,024 sequences of 2,048 tokens a step).
SURVEY_TRAINING_MODEL ?= pythia-160m
SURVEY_TRAINING_STEPS ?= step0 step1 step8 step64 step512 step1000 step8000 step36000 step72000 step143000
SURVEY_TRAINING_DIR ?= $(CHECKPOINTS)/$(SURVEY_TRAINING_MODEL)-steps
SURVEY_TRAINING_TOKENS_PER_STEP ?= 2097152
TRAINING_DIR := $(SURVEY_DIR)/training
TRAINING_OUT := $(TRAINING_DIR)/$(SURVEY_TRAINING_MODEL)
TRAINING_STATISTICS := sink_mass,r0_ratio,blind_ratio_p30
TRAINING_ORDER := $(subst $(survey_space),$(survey_comma),$(strip $(SURVEY_TRAINING_STEPS:%=$(SURVEY_TRAINING_MODEL)/%)))

survey-training: $(TRAINING_OUT).md $(TRAINING_OUT).tsv $(TRAINING_OUT).png
$(TRAINING_OUT)/%.h5: $(SURVEY_TRAINING_DIR)/%/config.json $(SURVEY_TEXT)
	@mkdir -p $(@D)
	$(DEVICE_LAUNCH) $(BIN)/sg-survey $(SURVEY_TRAINING_DIR)/$* --name $(SURVEY_TRAINING_MODEL)/$* --text $(SURVEY_TEXT) \
	    --blocks $(SURVEY_BLOCKS) --block-length $(SURVEY_BLOCK_LENGTH) $(SURVEY_FLAGS) -o $@ --force
$(SURVEY_TRAINING_DIR)/%/config.json:
	@echo "survey.mk: $@ is missing: download revision $* of $(SURVEY_TRAINING_MODEL) into $(@D) (docs/survey-modern.md, \"Downloads\"), or set SURVEY_TRAINING_STEPS" >&2; exit 1
$(TRAINING_OUT).md: $(SURVEY_TRAINING_STEPS:%=$(TRAINING_OUT)/%.h5)
	$(BIN)/sg-tabulate $^ --where scope=model --where statistic=$(TRAINING_STATISTICS) --rows model --cols statistic \
	    --cell value --se none --decimals 3 --order model=$(TRAINING_ORDER) --col-order $(TRAINING_STATISTICS) \
	    --label 'statistic:sink_mass=Sink mass' --label 'statistic:r0_ratio=r0 ratio' \
	    --label 'statistic:blind_ratio_p30=Blind-mass ratio @30' --header 'model=Checkpoint' -o $@ --force
# The table's rows with the training tokens of each step: model, step, tokens, then the statistics
# (the header a comment line, as sg-tabulate writes it).
$(TRAINING_OUT).tsv: $(SURVEY_TRAINING_STEPS:%=$(TRAINING_OUT)/%.h5)
	$(BIN)/sg-tabulate $^ --where scope=model --where statistic=$(TRAINING_STATISTICS) --rows model --cols statistic \
	    --cell value --se none --order model=$(TRAINING_ORDER) --col-order $(TRAINING_STATISTICS) --format tsv \
	    -o - | awk -F '\t' -v OFS='\t' -v per_step=$(SURVEY_TRAINING_TOKENS_PER_STEP) \
	    'NR == 1 { $$1 = "# model\tstep\ttokens"; print; next } \
	     { n = split($$1, part, "/"); step = part[n]; model = substr($$1, 1, length($$1) - length(step) - 1); tokens = ""; \
	       if (match(step, /tokens[0-9]+B/)) tokens = substr(step, RSTART + 6, RLENGTH - 7) * 1e9; \
	       else if (match(step, /step[0-9]+/)) tokens = substr(step, RSTART + 4, RLENGTH - 4) * per_step; \
	       if (tokens == "") { print FILENAME ": no stepN or tokensMB in the checkpoint name " step > "/dev/stderr"; exit 1 } \
	       $$1 = model "\t" step "\t" sprintf("%.0f", tokens); print }' > $@.tmp && mv $@.tmp $@
$(TRAINING_OUT).png: $(TRAINING_OUT).tsv $(SURVEY_PIPELINES)/survey_training.gp $(SURVEY_PIPELINES)/figures.gp
	gnuplot -e "data='$<'; output='$@'; text='$(SURVEY_BLOCKS) blocks of $(SURVEY_BLOCK_LENGTH) tokens of $(SURVEY_TEXT)'" \
	    $(SURVEY_PIPELINES)/survey_training.gp

# Downloads (internet): the safetensors weights, config and tokenizer of each model, and
# WikiText-2's validation split (the text column of the parquet file, lines joined as stored).
survey-download:
	@mkdir -p $(CHECKPOINTS) $(dir $(SURVEY_TEXT))
	for m in $(SURVEY_MODELS); do \
	  case $$m in gpt2*) repo=openai-community/$$m ;; *) repo=EleutherAI/$$m ;; esac; \
	  $(SURVEY_HF) download $$repo --include config.json --include 'model*.safetensors*' --include tokenizer.json \
	      --include vocab.json --include merges.txt --local-dir $(CHECKPOINTS)/$$m || exit 1; \
	done
	$(SURVEY_HF) download Salesforce/wikitext --repo-type dataset --include 'wikitext-2-raw-v1/validation-*.parquet' \
	    --local-dir $(dir $(SURVEY_TEXT))hf
	$(SURVEY_PYTHON) -c "import glob, pyarrow.parquet as pq; \
	  rows = pq.read_table(sorted(glob.glob('$(dir $(SURVEY_TEXT))hf/wikitext-2-raw-v1/validation-*.parquet'))[0]).column('text').to_pylist(); \
	  open('$(SURVEY_TEXT)', 'w', encoding='utf-8').write(''.join(rows))"

# The speed check: a random-initialised GPT-2 small (124M parameters, made by transformers) on
# 16 × 1,024 tokens; sg-survey logs the time it took (stderr). The token ids come from the GPT-2 vocabulary that
# setup.sh fetched ($(SURVEY_VOCAB)); any text of 70 kB or more serves.
SURVEY_VOCAB ?= $(or $(SINKGATE_VOCAB),$(SURVEY_CACHE)/gpt2.tiktoken)
SURVEY_BENCH_TEXT ?= /usr/share/doc/python3.11/html/_sources/library/stdtypes.rst.txt
survey-bench:
	@mkdir -p $(SURVEY_DIR)
	$(SURVEY_PYTHON) tests/survey_reference.py bench $(SURVEY_DIR)/bench-gpt2
	$(DEVICE_LAUNCH) $(BIN)/sg-survey $(SURVEY_DIR)/bench-gpt2 --text $(SURVEY_BENCH_TEXT) --vocab $(SURVEY_VOCAB) \
	    $(SURVEY_FLAGS) -o $(SURVEY_DIR)/bench-gpt2.h5 --force
