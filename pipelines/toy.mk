# pipelines/toy.mk — Figure 3 of "Abstention and Noise Filtering: Two Missing Primitives of Softmax
# Attention" (App. D–E): the channel-blind superposition task.
#
# 2 conditions × 4 loads × 5 arms (baseline, off-by-one, norm gate, routing-slot control, oracle)
# × 3 seeds = 120 training runs. Each (condition, load) is one sg-toy process that trains all arms
# and seeds of that cell side by side on one core; make -j2 runs two cells at a time.
#
#   make -f pipelines/toy.mk -j2 fig3            # runs/toy/fig3.png (8 minutes on 2 idle cores)
#   make -f pipelines/toy.mk -j2 fig3 TOY_FLAGS='--steps 500'   # a quick look
#   make -f Makefile.experiments -j2 fig3 PROFILE=quick           # the main job's reduced grid (24 runs)
#
# Outputs, in $(TOY_DIR):
#   blind-1.h5 … visible-8.h5   result tables, one row per (condition, load, arm, seed)
#   fig3.tsv                    task error per (condition, arm, load), one column per seed
#   fig3-summary.tsv            mean and standard error over seeds (the plotted numbers)
#   fig3.png                    the figure
#   fig3-claims.md              the paper's claims about Figure 3 that the grid tests, with their
#                               numbers and whether each holds by its seed pairs (pipelines/toy_claims.py)
#
# Beyond the paper (docs/beyond.md): the same task with the key gate and the output gate of Qiu et
# al., both conditions, the quick profile's loads and seeds, in $(TOY_BEYOND_DIR):
#
#   make -f pipelines/toy.mk -j2 fig3-beyond     # runs/toy/beyond/fig3-beyond.png and its claims
#
# Included by Makefile.experiments; it also runs alone (make -f pipelines/toy.mk).

BIN ?= $(abspath $(TOY_PIPELINES)/../build/bin)

TOY_DIR ?= $(or $(OUT),runs)/toy
ifeq ($(PROFILE),quick)
  # The main job's reduced grid: the channel-blind condition, 3 loads, the 4 arms of the claims it
  # checks, 2 seeds (24 runs, about 2 CPU minutes); fig3-claims.md says which claims hold.
  TOY_CONDITIONS ?= blind
  TOY_LOADS ?= 1 2 8
  TOY_ARMS ?= baseline,offbyone,normgate,oracle
  TOY_SEEDS ?= 0,1
endif
TOY_CONDITIONS ?= blind visible
TOY_LOADS ?= 1 2 4 8
TOY_ARMS ?= baseline,offbyone,normgate,renorm,oracle
TOY_SEEDS ?= 0,1,2
TOY_THREADS ?= 1
TOY_FLAGS ?=

TOY_BEYOND_DIR ?= $(TOY_DIR)/beyond
TOY_BEYOND_ARMS ?= baseline,normgate,keygate,outgate,sinklogit+outgate,oracle
TOY_BEYOND_CONDITIONS ?= blind visible
TOY_BEYOND_LOADS ?= 1 2 8
TOY_BEYOND_SEEDS ?= 0,1

TOY_PIPELINES := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))
TOY_RUNS := $(foreach c,$(TOY_CONDITIONS),$(foreach l,$(TOY_LOADS),$(TOY_DIR)/$(c)-$(l).h5))
toy_word = $(word $(1),$(subst -, ,$(2)))

TOY_BEYOND_RUNS := $(foreach c,$(TOY_BEYOND_CONDITIONS),$(foreach l,$(TOY_BEYOND_LOADS),$(TOY_BEYOND_DIR)/$(c)-$(l).h5))

.PHONY: fig3 fig3-claims toy-runs fig3-beyond
fig3: $(TOY_DIR)/fig3.png $(TOY_DIR)/fig3-claims.md
fig3-claims: $(TOY_DIR)/fig3-claims.md
toy-runs: $(TOY_RUNS)

# One cell of the grid: every arm and seed of one condition and load.
$(TOY_RUNS): $(TOY_DIR)/%.h5:
	@mkdir -p $(@D)
	$(BIN)/sg-toy --condition $(call toy_word,1,$*) --load $(call toy_word,2,$*) --arms $(TOY_ARMS) \
	    --seeds $(TOY_SEEDS) --threads $(TOY_THREADS) $(TOY_FLAGS) -o $@ --force

# Figure data: the task error of every run, seeds as columns.
$(TOY_DIR)/fig3.tsv: $(TOY_RUNS)
	$(BIN)/sg-tabulate $^ --rows condition,arm,load --cols seed --cell error --format tsv -o $@ --force

$(TOY_DIR)/fig3.png $(TOY_DIR)/fig3-summary.tsv &: $(TOY_DIR)/fig3.tsv $(TOY_PIPELINES)/fig3.gp $(TOY_PIPELINES)/figures.gp
	gnuplot -e "data='$<'; output='$(TOY_DIR)/fig3.png'; summary='$(TOY_DIR)/fig3-summary.tsv'; seed_names='$(TOY_SEEDS)'" \
	    $(TOY_PIPELINES)/fig3.gp

$(TOY_DIR)/fig3-claims.md: $(TOY_DIR)/fig3.tsv $(TOY_PIPELINES)/toy_claims.py $(TOY_PIPELINES)/claim_rule.py
	python3 $(TOY_PIPELINES)/toy_claims.py $< > $@.tmp && mv $@.tmp $@

# Beyond the paper: the key gate and the output gate on the same task (docs/beyond.md).
fig3-beyond: $(TOY_BEYOND_DIR)/fig3-beyond.png $(TOY_BEYOND_DIR)/fig3-beyond-claims.md
	@cat $(TOY_BEYOND_DIR)/fig3-beyond-claims.md

$(TOY_BEYOND_RUNS): $(TOY_BEYOND_DIR)/%.h5:
	@mkdir -p $(@D)
	$(BIN)/sg-toy --condition $(call toy_word,1,$*) --load $(call toy_word,2,$*) --arms $(TOY_BEYOND_ARMS) \
	    --seeds $(TOY_BEYOND_SEEDS) --threads $(TOY_THREADS) $(TOY_FLAGS) -o $@ --force

$(TOY_BEYOND_DIR)/fig3-beyond.tsv: $(TOY_BEYOND_RUNS)
	$(BIN)/sg-tabulate $^ --rows condition,arm,load --cols seed --cell error --format tsv -o $@ --force

$(TOY_BEYOND_DIR)/fig3-beyond.png $(TOY_BEYOND_DIR)/fig3-beyond-summary.tsv &: $(TOY_BEYOND_DIR)/fig3-beyond.tsv \
    $(TOY_PIPELINES)/fig3.gp $(TOY_PIPELINES)/figures.gp
	gnuplot -e "data='$<'; output='$(TOY_BEYOND_DIR)/fig3-beyond.png'; summary='$(TOY_BEYOND_DIR)/fig3-beyond-summary.tsv'; seed_names='$(TOY_BEYOND_SEEDS)'; arms_caption=1" \
	    $(TOY_PIPELINES)/fig3.gp

$(TOY_BEYOND_DIR)/fig3-beyond-claims.md: $(TOY_BEYOND_DIR)/fig3-beyond.tsv $(TOY_PIPELINES)/toy_claims.py $(TOY_PIPELINES)/claim_rule.py
	python3 $(TOY_PIPELINES)/toy_claims.py --beyond $< > $@.tmp && mv $@.tmp $@
