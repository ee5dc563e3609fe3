# pipelines/probe.mk — Table 8, Figures 1 and 5 and the App. G tables of "Abstention and Noise
# Filtering: Two Missing Primitives of Softmax Attention" (Sections 4.3–4.4, App. C, App. G): what
# trained gates and sinks do, measured by sg-probe on the seed-0 run of every arm.
#
#   make -f Makefile.experiments -j4 table8 sinks fig1 fig5 gate-tokens kurtosis DEVICE=cuda TOKENS=data/fineweb.h5
#   make -f Makefile.experiments PROFILE=quick table8 sinks     # the quick CPU tier (the main job prints them)
#   make -f Makefile.experiments table8-vs-paper sinks-vs-paper selectivity-vs-paper kurtosis-vs-paper
#   make -f Makefile.experiments PROFILE=quick direction       # reads against the gate direction (not in quick)
#
# One sg-probe call per run: $(OUT)/probe/TIER/ARM/SEED.h5 with every probe that applies to the arm
# (overrides need a value-slot gate; selectivity and gate-tokens a gate; sinks and kurtosis every arm),
# on sg-inject's fixed validation batches.
#
# Variables: PROBE_SEED (0: the run probed, as in the paper), PROBE_FLAGS (e.g. --batches 2),
# PROBE_CONTEXT_TIER (0: min(512, the model's context); 1024 at 350M), TABLE8_TIER (124M),
# SINKS_TIER (124M: Section 4.4, Figure 5), FIG1_TIERS (every tier), GATE_TOKENS_TIER (124M),
# KURTOSIS_TIERS (124M 350M), DIRECTION_TIER (124M). Included by Makefile.experiments (OUT, BIN, TIERS, arms_of, DEVICE,
# THREADS, DEVICE_LAUNCH, ARM_ORDER, ARM_LABELS, TIER_ORDER).

PROBE_SEED  ?= 0
PROBE_FLAGS ?=
PROBE_CONTEXT_350M ?= 1024
ifeq ($(PROFILE),quick)
  TABLE8_TIER      ?= $(firstword $(TIERS))
  SINKS_TIER       ?= $(firstword $(TIERS))
  FIG1_TIERS       ?= $(TIERS)
  GATE_TOKENS_TIER ?= $(firstword $(TIERS))
  KURTOSIS_TIERS   ?= $(TIERS)
  DIRECTION_TIER   ?= $(firstword $(TIERS))
else
  TABLE8_TIER      ?= 124M
  SINKS_TIER       ?= 124M
  FIG1_TIERS       ?= 10M 50M 124M 350M
  GATE_TOKENS_TIER ?= 124M
  KURTOSIS_TIERS   ?= 124M 350M
  DIRECTION_TIER   ?= 124M
endif

PROBE_PIPELINES := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))
# The arms of a list with a per-read gate in the value slot (norm, projection or key gate), and with
# any per-read gate (the routing-slot control too), whatever else their names join with '+'.
VALUE_GATED = $(foreach a,$(1),$(if $(filter normgate projgate keygate combo combo2,$(subst +, ,$(a))),$(a)))
GATED       = $(foreach a,$(1),$(if $(filter normgate projgate keygate combo combo2 renorm,$(subst +, ,$(a))),$(a)))
# The arms of a list whose gate has a learned direction w_h (projection gate: on the read; key gate:
# on the key).
DIRECTIONAL = $(foreach a,$(1),$(if $(filter projgate keygate combo2,$(subst +, ,$(a))),$(a)))
# The probe files of some tiers (the PROBE_SEED run of every arm there), and of their gated arms.
probe_files       = $(foreach t,$(1),$(foreach a,$(call arms_of,$(t)),$(OUT)/probe/$(t)/$(a)/$(PROBE_SEED).h5))
gated_probe_files = $(foreach t,$(1),$(foreach a,$(call $(2),$(call arms_of,$(t))),$(OUT)/probe/$(t)/$(a)/$(PROBE_SEED).h5))
# The probes of arm $(1): only those that apply, so the logs carry no skip warnings.
probes_of = $(if $(call VALUE_GATED,$(1)),all,$(if $(call GATED,$(1)),sinks$(comma)selectivity$(comma)gate-tokens$(comma)kurtosis,sinks$(comma)kurtosis))

OVERRIDE_LABELS := --label 'override:trained=trained gate' --label 'override:row-mean=row mean (selectivity removed)' \
  --label 'override:shuffle=shuffled within row' --label 'override:reopen=suppressed reads reopened'
TABLE8_FLAGS := --where probe=overrides --where statistic=loss --rows arm,override --cols dose --cell value \
  --order override=trained,row-mean,shuffle,reopen --order arm=$(ARM_ORDER) $(OVERRIDE_LABELS) $(ARM_LABELS) \
  --label 'dose:*=ε = *' --header arm=Arm --header 'override=Gate override'
SINKS_FLAGS := --where probe=sinks --where layer=all --where head=all --rows arm --cols statistic --cell value \
  --decimals 3 --col-order position0_mass,phantom_mass,sink_token_mass,r0_ratio --where statistic=position0_mass,phantom_mass,sink_token_mass,r0_ratio \
  --label 'statistic:position0_mass=mass on position 0' --label 'statistic:phantom_mass=mass on the phantom' \
  --label 'statistic:sink_token_mass=mass on the sink token' --label 'statistic:r0_ratio=position-0 norm ratio' \
  --order arm=$(ARM_ORDER) $(ARM_LABELS) --header arm=Arm

.PHONY: probes table8 sinks fig1 fig5 gate-tokens kurtosis direction table8-vs-paper sinks-vs-paper selectivity-vs-paper \
        kurtosis-vs-paper

probes: $(call probe_files,$(sort $(TABLE8_TIER) $(SINKS_TIER) $(FIG1_TIERS) $(GATE_TOKENS_TIER) $(KURTOSIS_TIERS)))

$(OUT)/probe/%.h5: $(OUT)/runs/%.h5 | $(TOKENS)
	@mkdir -p $(@D)
	$(DEVICE_LAUNCH) $(BIN)/sg-probe --tokens $(TOKENS) $< --probe $(call probes_of,$(call arm_of,$*)) \
	  --context $(or $(PROBE_CONTEXT_$(call tier_of,$*)),0) --device $(DEVICE) --threads $(THREADS) $(PROBE_FLAGS) \
	  -o $@ --force

# Table 8: the validation loss with the trained gate and under each override, clean and at ε = 0.2.
table8: $(OUT)/table8.md
$(OUT)/table8.h5: $(call gated_probe_files,$(TABLE8_TIER),VALUE_GATED) | $(TOKENS)
	$(if $^,$(BIN)/sg-tabulate $^ --format h5 -o $@ --force,rm -f $@)
$(OUT)/table8.md: $(OUT)/table8.h5
	if [ -s $< ]; then $(BIN)/sg-tabulate $< $(TABLE8_FLAGS) -o $@.tmp --force; \
	else echo "No gate-override probes: they need an arm with a value-slot gate (normgate, projgate, combo, combo2) at $(TABLE8_TIER)." > $@.tmp; \
	fi && mv $@.tmp $@

# Section 4.4: mass on position 0, on the phantom (or sink token), and the position-0 read-norm ratio.
sinks: $(OUT)/sinks.md
$(OUT)/sinks.h5: $(call probe_files,$(SINKS_TIER))
	$(BIN)/sg-tabulate $^ --format h5 -o $@ --force
$(OUT)/sinks.md: $(OUT)/sinks.h5
	$(BIN)/sg-tabulate $< $(SINKS_FLAGS) -o $@.tmp --force && mv $@.tmp $@

# App. G, what the filter removes: the most and least attenuated tokens of every gated arm.
gate-tokens: $(OUT)/gate-tokens.md
$(OUT)/gate-tokens.md: $(call gated_probe_files,$(GATE_TOKENS_TIER),GATED) $(PROBE_PIPELINES)/paper_gate_tokens.md
	set -e; { files='$(filter %.h5,$^)'; if [ -n "$$files" ]; then $(BIN)/sg-tabulate $$files --where probe=gate-tokens \
	    --where layer=all --rows arm,end,rank,text --cols statistic --cell value --decimals 3 --whole statistic=occurrences \
	    --order end=most-attenuated,least-attenuated --order arm=$(ARM_ORDER) --col-order mean_gate,occurrences \
	    $(ARM_LABELS) --header arm=Arm --header end=End --header text=Token || exit 1; \
	  else echo "No gated arm at $(GATE_TOKENS_TIER)."; fi; echo; cat $(PROBE_PIPELINES)/paper_gate_tokens.md; } > $@.tmp
	mv $@.tmp $@

# App. G, basis-alignment control: the excess kurtosis of the value coordinates.
kurtosis: $(OUT)/kurtosis.md
$(OUT)/kurtosis.h5: $(call probe_files,$(KURTOSIS_TIERS))
	$(BIN)/sg-tabulate $^ --format h5 -o $@ --force
$(OUT)/kurtosis.md: $(OUT)/kurtosis.h5
	$(BIN)/sg-tabulate $< --where probe=kurtosis --where layer=all --where head=all --rows arm --cols tier --cell value \
	  --decimals 2 --signed --order arm=$(ARM_ORDER) --order tier=$(TIER_ORDER) $(ARM_LABELS) --header arm=Arm \
	  -o $@.tmp --force && mv $@.tmp $@

# Ours beside the paper's (pipelines/paper_probe.csv: Table 8, Section 4.4, App. G, Figure 1b, c).
PAPER_PROBE := $(PROBE_PIPELINES)/paper_probe.csv
table8-vs-paper: $(OUT)/table8.h5
	$(BIN)/sg-tabulate $< $(PAPER_PROBE) --source-key source \
	  $(subst --rows arm$(comma)override,--rows arm$(comma)override$(comma)tier$(comma)source,$(TABLE8_FLAGS)) \
	  --label source:table8=sinkgate -o $(OUT)/$@.md --force
	@cat $(OUT)/$@.md
sinks-vs-paper: $(OUT)/sinks.h5
	$(BIN)/sg-tabulate $< $(PAPER_PROBE) --source-key source \
	  $(subst --rows arm,--rows arm$(comma)tier$(comma)source,$(SINKS_FLAGS)) --order tier=$(TIER_ORDER) \
	  --label source:sinks=sinkgate -o $(OUT)/$@.md --force
	@cat $(OUT)/$@.md
selectivity-vs-paper: $(call gated_probe_files,$(FIG1_TIERS),GATED)
	$(BIN)/sg-tabulate $^ $(PAPER_PROBE) --source-key source --where probe=selectivity --where layer=all --where head=all \
	  --where statistic=within_row_spread,mean_gate --rows statistic,arm,source --cols tier --cell value --decimals 3 \
	  --order tier=$(TIER_ORDER) --order arm=$(ARM_ORDER) --label 'source:$(PROBE_SEED)=sinkgate' $(ARM_LABELS) \
	  -o $(OUT)/$@.md --force
	@cat $(OUT)/$@.md
kurtosis-vs-paper: $(OUT)/kurtosis.h5
	$(BIN)/sg-tabulate $< $(PAPER_PROBE) --source-key source --where probe=kurtosis --where layer=all --where head=all \
	  --rows arm,source --cols tier --cell value --decimals 2 \
	  --signed --order arm=$(ARM_ORDER) --order tier=$(TIER_ORDER) --label source:kurtosis=sinkgate $(ARM_LABELS) \
	  -o $(OUT)/$@.md --force
	@cat $(OUT)/$@.md

# Figure 5: (a) mass on position 0 and on the phantom per arm, (b) the position-0 norm ratio, at SINKS_TIER.
fig5: $(OUT)/fig5.png
$(OUT)/fig5.tsv: $(OUT)/sinks.h5
	$(BIN)/sg-tabulate $< --where probe=sinks --where layer=all --where head=all \
	  --where statistic=position0_mass,phantom_mass,sink_token_mass,r0_ratio --rows arm,statistic --cell value \
	  --format tsv -o $@ --force
$(OUT)/fig5.png: $(OUT)/fig5.tsv $(PROBE_PIPELINES)/fig5.gp $(PROBE_PIPELINES)/figures.gp
	gnuplot -e "data='$<'; output='$@'; tier='$(SINKS_TIER)'; seed='$(PROBE_SEED)'; arms='$(call arms_of,$(SINKS_TIER))'" \
	  $(PROBE_PIPELINES)/fig5.gp

# Figure 1: (a) the zero-option increment and the filtering increments across tiers (Table 1's
# paired differences), (b) the sink logit's phantom share, (c) the within-row spread of the gates.
fig1: $(OUT)/fig1.png
$(OUT)/fig1-a.tsv: $(OUT)/table1.md
	$(BIN)/sg-tabulate $(OUT)/table1-baseline.h5 $$(ls $(OUT)/table1-sinklogit.h5 2>/dev/null) --where statistic=paired_diff \
	  --rows ref,arm,tier --cell mean --format tsv -o $@ --force
$(OUT)/fig1-b.tsv: $(foreach t,$(FIG1_TIERS),$(if $(filter sinklogit,$(call arms_of,$(t))),$(OUT)/probe/$(t)/sinklogit/$(PROBE_SEED).h5))
	files='$^'; if [ -n "$$files" ]; then $(BIN)/sg-tabulate $$files --where probe=sinks --where statistic=phantom_mass \
	  --where layer=all --where head=all --rows arm,tier --cell value --format tsv -o $@ --force; else : > $@; fi
$(OUT)/fig1-c.tsv: $(call gated_probe_files,$(FIG1_TIERS),VALUE_GATED)
	files='$^'; if [ -n "$$files" ]; then $(BIN)/sg-tabulate $$files --where probe=selectivity \
	  --where statistic=within_row_spread --where layer=all --where head=all --rows arm,tier --cell value --format tsv \
	  -o $@ --force; else : > $@; fi
# fig1.tsv: every point of the figure (fig1.gp).
$(OUT)/fig1.png $(OUT)/fig1.tsv &: $(OUT)/fig1-a.tsv $(OUT)/fig1-b.tsv $(OUT)/fig1-c.tsv $(PROBE_PIPELINES)/fig1.gp \
                                   $(PROBE_PIPELINES)/figures.gp
	gnuplot -e "a='$(OUT)/fig1-a.tsv'; b='$(OUT)/fig1-b.tsv'; c='$(OUT)/fig1-c.tsv'; output='$(OUT)/fig1.png'; \
	  data='$(OUT)/fig1.tsv'; tiers='$(FIG1_TIERS)'; seed='$(PROBE_SEED)'; \
	  seeds='$(foreach t,$(FIG1_TIERS),$(t):$(subst $(space),$(comma),$(strip $(call seeds_of,$(t)))))'" \
	  $(PROBE_PIPELINES)/fig1.gp

# Section 7's open limitation: how close the reads come to each head's learned gate direction. One
# `sg-probe --probe direction` per PROBE_SEED run of an arm with a projection or key gate at DIRECTION_TIER
# ($(OUT)/direction/TIER/ARM/SEED.h5, apart from the probe files: `all` does not include it); a table
# of the pooled quantiles and shares per arm and layer, and the figure (pipelines/direction.gp).
direction_files = $(foreach a,$(call DIRECTIONAL,$(call arms_of,$(DIRECTION_TIER))),$(OUT)/direction/$(DIRECTION_TIER)/$(a)/$(PROBE_SEED).h5)
DIRECTION_LABELS := --label 'statistic:cos_q50=median cos' --label 'statistic:cos_q99=cos q99' --label 'statistic:cos_max=max cos' \
  --label 'statistic:share_cos_above_0.5=share > 0.5' --label 'statistic:share_cos_above_0.8=share > 0.8' \
  --label 'statistic:share_cos_above_0.9=share > 0.9' --label 'statistic:mean_gate_cos_above_0.5=gate at cos > 0.5' \
  --label 'statistic:mean_gate=mean gate' --label 'layer:all=every layer'
direction: $(OUT)/direction.md $(OUT)/direction.png
$(OUT)/direction/%.h5: $(OUT)/runs/%.h5 | $(TOKENS)
	@mkdir -p $(@D)
	$(DEVICE_LAUNCH) $(BIN)/sg-probe --tokens $(TOKENS) $< --probe direction \
	  --context $(or $(PROBE_CONTEXT_$(call tier_of,$*)),0) --device $(DEVICE) --threads $(THREADS) $(PROBE_FLAGS) \
	  -o $@ --force
$(OUT)/direction.h5: $(direction_files)
	$(if $^,$(BIN)/sg-tabulate $^ --where head=all --format h5 -o $@ --force,rm -f $@)
$(OUT)/direction.md: $(OUT)/direction.h5
	if [ -s $< ]; then $(BIN)/sg-tabulate $< --rows arm,layer --cols statistic --cell value --decimals 3 \
	  --where statistic=cos_q50,cos_q99,cos_max,share_cos_above_0.5,share_cos_above_0.8,share_cos_above_0.9,mean_gate_cos_above_0.5,mean_gate \
	  --col-order cos_q50,cos_q99,cos_max,share_cos_above_0.5,share_cos_above_0.8,share_cos_above_0.9,mean_gate_cos_above_0.5,mean_gate \
	  $(DIRECTION_LABELS) --order arm=$(ARM_ORDER) $(ARM_LABELS) --header arm=Arm --header layer=Layer -o $@.tmp --force; \
	else echo "No direction probe: it needs an arm with a projection or key gate (projgate, combo2, keygate, ZERO+projgate, ZERO+keygate) at $(DIRECTION_TIER)." > $@.tmp; \
	fi && mv $@.tmp $@
$(OUT)/direction-hist.tsv: $(OUT)/direction.h5
	if [ -s $< ]; then $(BIN)/sg-tabulate $< --rows arm,layer,statistic --cell value --format tsv -o $@ --force; \
	else : > $@; fi
$(OUT)/direction.png $(OUT)/direction.tsv &: $(OUT)/direction-hist.tsv $(PROBE_PIPELINES)/direction.gp $(PROBE_PIPELINES)/figures.gp
	gnuplot -e "input='$<'; output='$(OUT)/direction.png'; data='$(OUT)/direction.tsv'; tier='$(DIRECTION_TIER)'; \
	  seed='$(PROBE_SEED)'; arms='$(call DIRECTIONAL,$(call arms_of,$(DIRECTION_TIER)))'" $(PROBE_PIPELINES)/direction.gp
