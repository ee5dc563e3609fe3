# pipelines/zeroshot.mk — Tables 10 and 11 of "Abstention and Noise Filtering: Two Missing
# Primitives of Softmax Attention" (Section 4.1): zero-shot LAMBADA, HellaSwag and WikiText-2 of
# the 124M models, scored as lm-evaluation-harness v0.4 scores them (sg-eval --task), mean ± sd
# over seeds; and LAMBADA accuracy by the distance to the target's most recent earlier occurrence.
#
#   make -f Makefile.experiments -j4 table10 table11 DEVICE=cuda TOKENS=data/fineweb.h5
#   make -f Makefile.experiments table10-vs-paper table11-vs-paper
#   make -f Makefile.experiments zeroshot-pretrained PRETRAINED='checkpoints/gpt2 checkpoints/pythia-160m'
#
# One sg-eval call per run: $(OUT)/zeroshot/TIER/ARM/SEED.h5 (every metric; with the per-example
# log-likelihoods beside it, SEED.examples.h5). The data are not fetched here (docs/data.md,
# "Zero-shot task data", says how): LAMBADA (OpenAI's lambada_test.jsonl), HellaSwag (hellaswag_val.jsonl),
# WikiText-2 (wiki.test.raw).
#
# Variables: LAMBADA, HELLASWAG, WIKITEXT (the data files), ZEROSHOT_TIER (124M; quick: the first
# tier), ZEROSHOT_FLAGS (e.g. --limit 500 --batch-size 32), PRETRAINED (checkpoint folders for
# zeroshot-pretrained). Included by Makefile.experiments (OUT, BIN, arms_of, seeds_of, DEVICE,
# THREADS, DEVICE_LAUNCH, ARM_ORDER, ARM_LABELS).

LAMBADA   ?= data/lambada_test.jsonl
HELLASWAG ?= data/hellaswag_val.jsonl
WIKITEXT  ?= data/wiki.test.raw
ZEROSHOT_FLAGS ?=
PRETRAINED ?=
ifeq ($(PROFILE),quick)
  ZEROSHOT_TIER ?= $(firstword $(TIERS))
else
  ZEROSHOT_TIER ?= 124M
endif
ZEROSHOT_PIPELINES := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))
PAPER_ZEROSHOT := $(ZEROSHOT_PIPELINES)/paper_zeroshot.csv
ZEROSHOT_DATA := $(LAMBADA) $(HELLASWAG) $(WIKITEXT)
zeroshot_files = $(foreach a,$(call arms_of,$(1)),$(foreach s,$(call seeds_of,$(1)),$(OUT)/zeroshot/$(1)/$(a)/$(s).h5))

.PHONY: zeroshot table10 table11 table10-vs-paper table11-vs-paper zeroshot-pretrained

zeroshot: $(call zeroshot_files,$(ZEROSHOT_TIER))

# The data files are the user's to fetch: say how when one is missing.
$(LAMBADA):
	@echo "zeroshot.mk: $@ is missing: LAMBADA, OpenAI's lambada_test.jsonl (5,153 passages)." >&2; \
	 echo "  fetch it as docs/data.md, \"Zero-shot task data\", shows, or name it: LAMBADA=FILE" >&2; exit 1
$(HELLASWAG):
	@echo "zeroshot.mk: $@ is missing: HellaSwag's validation split, hellaswag_val.jsonl (10,042 items)." >&2; \
	 echo "  fetch it as docs/data.md, \"Zero-shot task data\", shows, or name it: HELLASWAG=FILE" >&2; exit 1
$(WIKITEXT):
	@echo "zeroshot.mk: $@ is missing: WikiText-2's raw test file, wiki.test.raw." >&2; \
	 echo "  fetch it as docs/data.md, \"Zero-shot task data\", shows, or name it: WIKITEXT=FILE" >&2; exit 1

$(OUT)/zeroshot/%.h5: $(OUT)/runs/%.h5 $(ZEROSHOT_DATA)
	@mkdir -p $(@D)
	$(DEVICE_LAUNCH) $(BIN)/sg-eval --task lambada,hellaswag,wikitext $< --lambada $(LAMBADA) --hellaswag $(HELLASWAG) \
	  --wikitext $(WIKITEXT) --device $(DEVICE) --threads $(THREADS) $(ZEROSHOT_FLAGS) \
	  --examples $(@:.h5=.examples.h5) -o $@ --force

# Mean and standard deviation over seeds of every metric, per arm.
$(OUT)/zeroshot-$(ZEROSHOT_TIER).h5: $(call zeroshot_files,$(ZEROSHOT_TIER))
	$(BIN)/sg-pairdiff $^ --summary --value value -o $@.tmp --force && mv $@.tmp $@

# Table 10: LAMBADA acc, HellaSwag acc, WikiText-2 ppl (word perplexity), mean ± sd over seeds.
# (metric=acc,ppl picks one metric per task: LAMBADA's perplexity is named "perplexity", as lm-eval names it.)
TABLE10_FLAGS = --where bin=all --where metric=acc,ppl --where task=lambada,hellaswag,wikitext \
  --rows arm --cols task --cell mean --se sd --decimals 3 \
  --col-order lambada,hellaswag,wikitext --label task:lambada='LAMBADA acc' --label task:hellaswag='HellaSwag acc' \
  --label task:wikitext='WikiText-2 ppl' --row-order $(ARM_ORDER) $(ARM_LABELS) --header arm=Arm
table10: $(OUT)/table10.md
$(OUT)/table10.md: $(OUT)/zeroshot-$(ZEROSHOT_TIER).h5
	$(BIN)/sg-tabulate $< $(TABLE10_FLAGS) -o $@.tmp --force && mv $@.tmp $@
	@cat $@

# Table 11: LAMBADA accuracy by the distance to the target's most recent earlier occurrence,
# mean over seeds; then the number of passages in each bin (the same for every run).
TABLE11_FLAGS = --where task=lambada --where metric=acc --where bin='absent,1-32,33-96,>96' --rows arm --cols bin \
  --cell mean --se none --decimals 3 --col-order 'absent,1-32,33-96,>96' --label 'bin:absent=target absent' \
  --label 'bin:1-32=distance ≤ 32' --label 'bin:33-96=distance 33–96' --label 'bin:>96=distance > 96' \
  --row-order $(ARM_ORDER) $(ARM_LABELS) --header arm=Arm
table11: $(OUT)/table11.md
$(OUT)/table11.md: $(OUT)/zeroshot-$(ZEROSHOT_TIER).h5 $(firstword $(call zeroshot_files,$(ZEROSHOT_TIER)))
	$(BIN)/sg-tabulate $< $(TABLE11_FLAGS) -o $@.tmp --force
	echo >> $@.tmp
	$(BIN)/sg-tabulate $(word 2,$^) --where task=lambada --where metric=acc --where bin='absent,1-32,33-96,>96' \
	  --rows task --cols bin --cell n --whole task=lambada --label task:lambada=passages --header task= \
	  --col-order 'absent,1-32,33-96,>96' --label 'bin:absent=target absent' --label 'bin:1-32=distance ≤ 32' \
	  --label 'bin:33-96=distance 33–96' --label 'bin:>96=distance > 96' --format md >> $@.tmp
	mv $@.tmp $@
	@cat $@

# Ours beside the paper's (pipelines/paper_zeroshot.csv, source=paper).
table10-vs-paper: $(OUT)/zeroshot-$(ZEROSHOT_TIER).h5
	$(BIN)/sg-tabulate $< $(PAPER_ZEROSHOT) --source-key source \
	  $(subst --rows arm,--rows arm$(comma)source,$(TABLE10_FLAGS)) --label source:zeroshot-$(ZEROSHOT_TIER)=sinkgate \
	  -o $(OUT)/$@.md --force
	@cat $(OUT)/$@.md
table11-vs-paper: $(OUT)/zeroshot-$(ZEROSHOT_TIER).h5
	$(BIN)/sg-tabulate $< $(PAPER_ZEROSHOT) --source-key source \
	  $(subst --rows arm,--rows arm$(comma)source,$(TABLE11_FLAGS)) --label source:zeroshot-$(ZEROSHOT_TIER)=sinkgate \
	  -o $(OUT)/$@.md --force
	@cat $(OUT)/$@.md

# Reference points: pretrained checkpoints on the same tasks (docs/paper.md: GPT-2's published lm-eval figures).
zeroshot-pretrained: $(ZEROSHOT_DATA)
	@if [ -z "$(PRETRAINED)" ]; then echo "zeroshot.mk: name the checkpoint folders: PRETRAINED='checkpoints/gpt2 …'" >&2; exit 1; fi
	@mkdir -p $(OUT)
	$(DEVICE_LAUNCH) $(BIN)/sg-eval --task lambada,hellaswag,wikitext $(PRETRAINED) --lambada $(LAMBADA) --hellaswag $(HELLASWAG) \
	  --wikitext $(WIKITEXT) --device $(DEVICE) --threads $(THREADS) $(ZEROSHOT_FLAGS) -o $(OUT)/zeroshot-pretrained.h5 --force
	$(BIN)/sg-tabulate $(OUT)/zeroshot-pretrained.h5 --where bin=all --where metric=acc,acc_norm,ppl,word_perplexity,byte_perplexity,bits_per_byte \
	  --rows arm --cols task,metric --cell value --decimals 4 -o $(OUT)/zeroshot-pretrained.md --force
	@cat $(OUT)/zeroshot-pretrained.md
