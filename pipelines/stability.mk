# pipelines/stability.mk — beyond the paper: training stability across learning rates for every arm.
# Qiu et al. (2025) report that the output gate makes training more stable at larger learning
# rates; the paper argues that a zero option removes the pressure that builds sinks. This target
# trains each arm over a log-spaced grid of peak learning rates around the tier's, with paired seeds,
# and prints which arms stay stable, on ordinary validation batches and on a repetitive-context set
# (docs/beyond.md, "Stability"):
#
#   make -f Makefile.experiments -j2 stability                            # quick profile: 112 tiny-tier runs, 2 CPU cores
#   make -f Makefile.experiments -j2 stability STABILITY_ARMS='baseline sinklogit outgate' STABILITY_LR_FACTORS='1 4 16'
#   make -f Makefile.experiments -j4 stability STABILITY_PROFILE=paper TIERS=10M DEVICE=cuda
#
# Every run: the tier's schedule with lr_peak and lr_min both times the factor (the cosine still ends
# at a tenth of the peak), labelled lr_factor=F; sg-train --on-nonfinite stop keeps a diverged run's
# curves (gradient norm before clipping, largest attention logit and residual activation, every
# step). Then sg-eval on the ordinary validation batches and on the repetitive-context set, and
# sg-probe --probe sinks. Outputs in STABILITY_DIR: runs/, evals/, repetitive/, sinks/, and
#   stability-runs.tsv   one row per run (losses, diverged, spikes, maxima, sinks)
#   stability-grid.tsv   mean and SE over seeds per arm and rate
#   stability.md         the Markdown tables (arm x rate), divergences marked
#   stability-claims.md  the claims with their numbers (pipelines/stability.py)
#   stability.png        final loss and largest attention logit against the rate
#
# Variables: STABILITY_ARMS, STABILITY_LR_FACTORS, STABILITY_SEEDS, STABILITY_PROFILE (quick),
# STABILITY_TIER (quick: tiny, the tier of the early observation, 200 steps; else the first of TIERS),
# STABILITY_FLAGS (extra sg-train options),
# STABILITY_DIR (results/PROFILE/stability, or OUT/stability when OUT is given),
# STABILITY_REPETITIVE_LIMIT, STABILITY_REPETITIVE_VAL (characters of the repetitive set, 600000; its
# validation tokens, 50000); the profile's
# TOKENS, CORPUS, DEVICE, PROBE_FLAGS pass through. Included by Makefile.experiments.

STABILITY_ARMS       ?= baseline offbyone sinklogit projgate combo2 outgate sinklogit+outgate keygate
STABILITY_LR_FACTORS ?= 0.25 1 4 16 64 256 1024
STABILITY_SEEDS      ?= 0 1
STABILITY_PROFILE    ?= quick
STABILITY_TIER       ?= $(if $(filter quick,$(PROFILE)),tiny,$(firstword $(TIERS)))
STABILITY_FLAGS      ?=
STABILITY_DIR        ?= $(if $(filter command line environment,$(origin OUT)),$(OUT),results/$(STABILITY_PROFILE))/stability
STABILITY_REPETITIVE_VAL ?= 50000
STABILITY_REPETITIVE_LIMIT ?= 600000

STABILITY_RUNS := $(foreach a,$(STABILITY_ARMS),$(foreach f,$(STABILITY_LR_FACTORS),$(foreach s,$(STABILITY_SEEDS),\
  $(STABILITY_DIR)/runs/$(STABILITY_TIER)/$(a)/lr$(f)/$(s).h5)))
STABILITY_EVALS := $(STABILITY_RUNS:$(STABILITY_DIR)/runs/%=$(STABILITY_DIR)/evals/%)
STABILITY_REPETITIVE := $(STABILITY_RUNS:$(STABILITY_DIR)/runs/%=$(STABILITY_DIR)/repetitive/%)
STABILITY_SINKS := $(STABILITY_RUNS:$(STABILITY_DIR)/runs/%=$(STABILITY_DIR)/sinks/%)
stability_word = $(word $(1),$(subst /, ,$(2)))
# The factor of a run path TIER/ARM/lrF/SEED.
stability_factor = $(patsubst lr%,%,$(call stability_word,3,$(1)))

.PHONY: stability stability-tables

stability:
	$(MAKE) -f $(SG_MAKEFILE) PROFILE=$(STABILITY_PROFILE) $(if $(filter quick,$(STABILITY_PROFILE)),THREADS=1) \
	  STABILITY_DIR=$(STABILITY_DIR) stability-tables
	@echo; echo "## Stability across learning rates ($(STABILITY_PROFILE) profile; docs/beyond.md, \"Stability\"; the figure: $(STABILITY_DIR)/stability.png)"; echo
	@cat $(STABILITY_DIR)/stability.md
	@echo; echo "### Claims"; echo
	@cat $(STABILITY_DIR)/stability-claims.md

# Every run and evaluation by name: Makefile.experiments marks every file .SECONDARY, and make does
# not remake a missing secondary file for an up-to-date table, so a grid grown in the same folder
# (more arms, rates or seeds) would otherwise keep its old tables.
stability-tables: $(STABILITY_RUNS) $(STABILITY_EVALS) $(STABILITY_REPETITIVE) $(STABILITY_SINKS) \
    $(STABILITY_DIR)/stability-claims.md $(STABILITY_DIR)/stability.png

# One run of the grid: the tier's peak and final rates times the factor.
$(STABILITY_RUNS): $(STABILITY_DIR)/runs/%.h5: | $(TOKENS)
	@mkdir -p $(@D)
	if [ -f $(@:.h5=.partial.h5) ]; then \
	  $(TRAIN_LAUNCH) $(BIN)/sg-train --tokens $(TOKENS) -o $(@:.h5=.partial.h5) --resume --device $(DEVICE) --threads $(THREADS) \
	    --on-nonfinite stop --log-level quiet; \
	else \
	  rates=$$($(BIN)/sg-info --tier $(call stability_word,1,$*) | awk -v f=$(call stability_factor,$*) \
	    '$$1 == "lr_peak" { peak = $$2 * f } $$1 == "lr_min" { low = $$2 * f } END { printf "--set lr_peak=%.6g --set lr_min=%.6g", peak, low }'); \
	  $(TRAIN_LAUNCH) $(BIN)/sg-train --tokens $(TOKENS) --tier $(call stability_word,1,$*) --arm $(call stability_word,2,$*) \
	    --seed $(call stability_word,4,$*) $$rates --set telemetry=1 --label lr_factor=$(call stability_factor,$*) --on-nonfinite stop \
	    --device $(DEVICE) --threads $(THREADS) $(PRECISION_FLAG) --log-level quiet $(STABILITY_FLAGS) -o $(@:.h5=.partial.h5) --force; \
	fi && mv $(@:.h5=.partial.h5) $@

$(STABILITY_EVALS): $(STABILITY_DIR)/evals/%.h5: $(STABILITY_DIR)/runs/%.h5 | $(TOKENS)
	@mkdir -p $(@D)
	$(DEVICE_LAUNCH) $(BIN)/sg-eval --tokens $(TOKENS) $< --device $(DEVICE) --threads $(THREADS) --log-level quiet -o $@ --force

# The repetitive-context set: whitespace- and repetition-heavy passages of the corpus
# (pipelines/repetitive_text.py), tokenised; its validation split is what the runs are scored on.
$(STABILITY_DIR)/repetitive.txt:
	@mkdir -p $(@D)
	python3 $(SG_ROOT)/pipelines/repetitive_text.py $(CORPUS) --limit $(STABILITY_REPETITIVE_LIMIT) > $@.tmp && mv $@.tmp $@
$(STABILITY_DIR)/repetitive.h5: $(STABILITY_DIR)/repetitive.txt
	$(BIN)/sg-tokenize $< --val-tokens $(STABILITY_REPETITIVE_VAL) --log-level quiet -o $@ --force

$(STABILITY_REPETITIVE): $(STABILITY_DIR)/repetitive/%.h5: $(STABILITY_DIR)/runs/%.h5 $(STABILITY_DIR)/repetitive.h5
	@mkdir -p $(@D)
	$(DEVICE_LAUNCH) $(BIN)/sg-eval --tokens $(STABILITY_DIR)/repetitive.h5 --allow-other-tokens $< --device $(DEVICE) \
	  --threads $(THREADS) --log-level quiet -o $@ --force

$(STABILITY_SINKS): $(STABILITY_DIR)/sinks/%.h5: $(STABILITY_DIR)/runs/%.h5 | $(TOKENS)
	@mkdir -p $(@D)
	$(DEVICE_LAUNCH) $(BIN)/sg-probe --tokens $(TOKENS) $< --probe sinks --device $(DEVICE) --threads $(THREADS) --log-level quiet \
	  $(PROBE_FLAGS) -o $@ --force

$(STABILITY_DIR)/curves.tsv: $(STABILITY_RUNS)
	$(BIN)/sg-info --curves $^ > $@.tmp && mv $@.tmp $@
$(STABILITY_DIR)/val.csv: $(STABILITY_EVALS)
	$(BIN)/sg-tabulate $^ --format csv -o $@ --force
$(STABILITY_DIR)/repetitive.csv: $(STABILITY_REPETITIVE)
	$(BIN)/sg-tabulate $^ --format csv -o $@ --force
$(STABILITY_DIR)/sinks.csv: $(STABILITY_SINKS)
	$(BIN)/sg-tabulate $^ --where probe=sinks --where layer=all --where head=all --format csv -o $@ --force

$(STABILITY_DIR)/stability-claims.md $(STABILITY_DIR)/stability.md $(STABILITY_DIR)/stability-runs.tsv \
$(STABILITY_DIR)/stability-grid.tsv &: $(STABILITY_DIR)/curves.tsv $(STABILITY_DIR)/val.csv \
    $(STABILITY_DIR)/repetitive.csv $(STABILITY_DIR)/sinks.csv $(SG_ROOT)/pipelines/stability.py
	python3 $(SG_ROOT)/pipelines/stability.py --curves $(STABILITY_DIR)/curves.tsv --val $(STABILITY_DIR)/val.csv \
	  --repetitive $(STABILITY_DIR)/repetitive.csv --sinks $(STABILITY_DIR)/sinks.csv --out $(STABILITY_DIR) > /dev/null

$(STABILITY_DIR)/stability.png: $(STABILITY_DIR)/stability-runs.tsv $(STABILITY_DIR)/stability-grid.tsv \
    $(SG_ROOT)/pipelines/stability.gp $(SG_ROOT)/pipelines/figures.gp
	gnuplot -e "runs='$(STABILITY_DIR)/stability-runs.tsv'; grid='$(STABILITY_DIR)/stability-grid.tsv'; output='$@'" \
	  $(SG_ROOT)/pipelines/stability.gp
