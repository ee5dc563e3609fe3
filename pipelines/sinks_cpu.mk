# pipelines/sinks_cpu.mk — when does a sink form on a CPU? Section 4.4's sink analysis at a growing
# training budget on the built-in corpus: the baseline and the sink logit trained for each of
# SINKS_CPU_STEPS steps at SINKS_CPU_TIER (the quick tier: the main job trains 400 steps), then
# sg-probe's sinks probe on each, tabulated by budget: the baseline's mass on position 0 and its
# position-0 norm ratio, the sink logit's mass on its phantom.
#
#   make -f Makefile.experiments -j2 sinks-cpu                  # results/quick/sinks-cpu/sinks-cpu.md (~100 min)
#   make -f Makefile.experiments -j2 sinks-cpu SINKS_CPU_STEPS='400 3200'   # ~12 min
#
# Every budget is a run of its own (its cosine schedule ends at its last step), with the label
# steps=N. How long it takes and what it showed: docs/paper.md, "Sinks on a CPU" (25,600 steps of
# the quick tier: 86 min a run, one core each; the baseline's position-0 value shrinks, its mass
# does not gather there).
# Included by Makefile.experiments (BIN, OUT, TOKENS, DEVICE, ARM_LABELS); it forces the quick
# profile's token file and one thread a job.

SINKS_CPU_TIER ?= quick
SINKS_CPU_STEPS ?= 3200 25600
SINKS_CPU_ARMS ?= baseline sinklogit
SINKS_CPU_SEED ?= 0
SINKS_CPU_FLAGS ?=
SINKS_CPU_DIR ?= $(if $(filter command line environment,$(origin OUT)),$(OUT),results/quick)/sinks-cpu
SINKS_CPU_TOKENS ?= data/pydoc.h5
SINKS_CPU_RUNS := $(foreach n,$(SINKS_CPU_STEPS),$(foreach a,$(SINKS_CPU_ARMS),$(SINKS_CPU_DIR)/runs/$(n)/$(a).h5))
SINKS_CPU_PROBES := $(SINKS_CPU_RUNS:$(SINKS_CPU_DIR)/runs/%=$(SINKS_CPU_DIR)/probe/%)
sinks_cpu_word = $(word $(1),$(subst /, ,$(2)))

.PHONY: sinks-cpu
sinks-cpu: $(SINKS_CPU_DIR)/sinks-cpu.md
	@cat $<

ifeq ($(filter $(SINKS_CPU_TOKENS),$(TOKENS) $(TINYSTORIES_TOKENS)),)
$(SINKS_CPU_TOKENS):
	$(MAKE) -f $(SG_MAKEFILE) PROFILE=quick TOKENS=$@ tokens
endif

# One budget of one arm: warmup a tenth of the steps, as the quick tier's 40 of 400.
$(SINKS_CPU_RUNS): $(SINKS_CPU_DIR)/runs/%.h5: | $(SINKS_CPU_TOKENS)
	@mkdir -p $(@D)
	$(DEVICE_LAUNCH) $(BIN)/sg-train --tokens $(SINKS_CPU_TOKENS) --tier $(SINKS_CPU_TIER) --arm $(call sinks_cpu_word,2,$*) \
	  --seed $(SINKS_CPU_SEED) --set iterations=$(call sinks_cpu_word,1,$*) \
	  --set warmup=$(shell echo $$(( $(call sinks_cpu_word,1,$*) / 10 ))) \
	  --set checkpoint_interval=$(call sinks_cpu_word,1,$*) --label steps=$(call sinks_cpu_word,1,$*) \
	  --device $(DEVICE) --threads 1 $(PRECISION_FLAG) --log-level quiet $(SINKS_CPU_FLAGS) -o $(@:.h5=.partial.h5) --force && mv $(@:.h5=.partial.h5) $@

$(SINKS_CPU_PROBES): $(SINKS_CPU_DIR)/probe/%.h5: $(SINKS_CPU_DIR)/runs/%.h5
	@mkdir -p $(@D)
	$(DEVICE_LAUNCH) $(BIN)/sg-probe --tokens $(SINKS_CPU_TOKENS) $< --probe sinks --device $(DEVICE) --threads 1 --log-level quiet \
	  -o $@ --force

$(SINKS_CPU_DIR)/sinks-cpu.md: $(SINKS_CPU_PROBES)
	$(BIN)/sg-tabulate $^ --where probe=sinks --where layer=all --where head=all \
	  --where statistic=position0_mass,phantom_mass,r0_ratio --rows steps --cols arm,statistic --cell value --decimals 3 \
	  --order steps=$(subst $(space),$(comma),$(strip $(SINKS_CPU_STEPS))) --order arm=baseline,sinklogit \
	  --col-order position0_mass,phantom_mass,r0_ratio --label 'statistic:position0_mass=mass on position 0' \
	  --label 'statistic:phantom_mass=mass on the phantom' --label 'statistic:r0_ratio=position-0 norm ratio' \
	  $(ARM_LABELS) --header 'steps=Steps' -o $@.tmp --force && mv $@.tmp $@
