# pipelines/inject.mk — Tables 6, 7, 9 and Figure 2 of "Abstention and Noise Filtering: Two Missing
# Primitives of Softmax Attention" (Section 6, App. C): the injection battery and exposure accounting
# on the seed-0 run of every arm.
#
#   make -f Makefile.experiments -j4 table6 table7 table9 fig2 DEVICE=cuda TOKENS=data/fineweb.h5
#   make -f Makefile.experiments PROFILE=quick table6 table9     # the quick CPU tier (the main job prints them)
#   make -f Makefile.experiments table7-vs-paper                  # ours beside the paper's numbers
#
# One sg-inject call per run: $(OUT)/inject/TIER/ARM/SEED.h5, every junk type of the tier's battery
# at both cutoffs and the four doses, and the exposure pass. The battery of a tier is INJECT_JUNK_TIER
# plus what Figure 2 needs there (structured junk at a tier of FIG2_TIERS; a random and the gate's
# own direction at FIG2C_TIER), so `make fig2` works at any tier. Own-direction junk is asked for
# only where the arm has a projection gate. The tables show every condition computed (Tables 6 and 7
# print a subset of the (junk, cutoff) pairs: the tables here are a superset of the paper's).
# Beside each result, SEED.settings holds the sg-inject options it was made with; it is rewritten
# only when they change, so changing an INJECT_* variable reruns exactly the injections it changes.
#
# Variables: INJECT_SEED (0), INJECT_DOSES, INJECT_CUTOFFS, INJECT_JUNK_TIER, INJECT_CONTEXT_TIER
# (0: min(512, the model's context); 1024 at 350M as in the paper), INJECT_FLAGS (e.g. --batches 2),
# TABLE6_TIERS, TABLE7_TIERS, TABLE9_TIERS, FIG2_TIERS (one panel per tier), FIG2C_TIER (the
# direction panel).
# Included by Makefile.experiments (it uses its OUT, BIN, TIERS, arms_of, DEVICE, THREADS, DEVICE_LAUNCH).

INJECT_SEED    ?= 0
INJECT_DOSES   ?= 0.2,0.4,0.8,1.6
INJECT_CUTOFFS ?= q25,median
INJECT_FLAGS   ?=
INJECT_JUNK_10M   ?= structured gaussian
INJECT_JUNK_50M   ?= structured same-context gaussian random-direction own-direction
INJECT_JUNK_124M  ?= structured same-context gaussian random-direction own-direction
INJECT_JUNK_350M  ?= structured
INJECT_JUNK_quick ?= structured same-context gaussian random-direction own-direction
INJECT_JUNK_default ?= structured gaussian
INJECT_CONTEXT_350M ?= 1024
ifeq ($(PROFILE),quick)
  TABLE6_TIERS ?= $(TIERS)
  TABLE7_TIERS ?= $(TIERS)
  TABLE9_TIERS ?= $(TIERS)
  FIG2_TIERS   ?= $(TIERS)
  FIG2C_TIER   ?= $(firstword $(TIERS))
else
  TABLE6_TIERS ?= 10M 50M
  TABLE7_TIERS ?= 124M 350M
  TABLE9_TIERS ?= 124M 50M
  FIG2_TIERS   ?= 124M 350M
  FIG2C_TIER   ?= 124M
endif

INJECT_PIPELINES := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))
# The per-run injection tables of some tiers (the seed-0 run of every arm trained there).
inject_files = $(foreach t,$(1),$(foreach a,$(call arms_of,$(t)),$(OUT)/inject/$(t)/$(a)/$(INJECT_SEED).h5))
# The battery of tier $(1): its junk types, then those Figure 2 needs there that they lack.
fig2_junk = $(if $(filter $(1),$(FIG2_TIERS)),structured) $(if $(filter $(1),$(FIG2C_TIER)),random-direction own-direction)
tier_junk = $(or $(INJECT_JUNK_$(1)),$(INJECT_JUNK_default)) \
            $(filter-out $(or $(INJECT_JUNK_$(1)),$(INJECT_JUNK_default)),$(call fig2_junk,$(1)))
# The junk types of tier $(1) for arm $(2): own-direction only with a projection gate; with a key gate
# its own direction is on the keys (key-own-direction, in place of own-direction).
has_projgate = $(filter projgate combo2,$(subst +, ,$(1)))
has_keygate  = $(filter keygate,$(subst +, ,$(1)))
inject_junk = $(subst $(space),$(comma),$(strip $(filter-out own-direction,$(call tier_junk,$(1))) \
  $(if $(filter own-direction,$(call tier_junk,$(1))),$(if $(call has_projgate,$(2)),own-direction)$(if $(call has_keygate,$(2)),key-own-direction))))
# The sg-inject options of run $(1) (TIER/ARM/SEED) that decide what it measures.
inject_options = $(strip --junk $(call inject_junk,$(call tier_of,$(1)),$(call arm_of,$(1))) --cutoff $(INJECT_CUTOFFS) \
  --dose $(INJECT_DOSES) --context $(or $(INJECT_CONTEXT_$(call tier_of,$(1))),0) $(INJECT_FLAGS))

JUNK_ORDER  := structured,same-context,gaussian,random-direction,own-direction,key-own-direction
JUNK_LABELS := --label 'junk:structured=structured (other context)' --label 'junk:same-context=structured (same context)' \
               --label junk:gaussian=Gaussian --label 'junk:random-direction=random direction' \
               --label 'junk:own-direction=own gate direction' \
               --label 'junk:key-own-direction=own key-gate direction (on the keys)'
INJECT_TABLE_FLAGS := --where measure=injection --where layer=all --rows tier,junk,cutoff,arm --cols dose \
  --cell delta_loss --signed --decimals 3 --order junk=$(JUNK_ORDER) --order cutoff=q25,median \
  --row-order $(ARM_ORDER) --order tier=$(TIER_ORDER) $(JUNK_LABELS) $(ARM_LABELS) --label 'dose:*=ε = *' \
  --header tier=Tier --header 'junk=Junk type' --header cutoff=Cutoff --header arm=Arm

.PHONY: injections table6 table7 table9 fig2 fig2-paper table6-vs-paper table7-vs-paper table9-vs-paper inject-settings

injections: $(call inject_files,$(sort $(TABLE6_TIERS) $(TABLE7_TIERS) $(TABLE9_TIERS)))

# The settings stamp of a run's battery: its recipe runs every time and rewrites the file only when
# the options differ, so the injection below reruns when, and only when, its settings changed.
$(OUT)/inject/%.settings: inject-settings
	@mkdir -p $(@D)
	@printf '%s\n' '$(call inject_options,$*)' | cmp -s - $@ 2>/dev/null || printf '%s\n' '$(call inject_options,$*)' > $@
inject-settings:

$(OUT)/inject/%.h5: $(OUT)/runs/%.h5 $(OUT)/inject/%.settings | $(TOKENS)
	@mkdir -p $(@D)
	$(DEVICE_LAUNCH) $(BIN)/sg-inject --tokens $(TOKENS) $< $(call inject_options,$*) --device $(DEVICE) --threads $(THREADS) \
	  -o $@ --force

# One table of all the runs of a table's tiers (pipe it into sg-tabulate for other layouts).
$(OUT)/table6.h5: $(call inject_files,$(TABLE6_TIERS))
	$(BIN)/sg-tabulate $^ --format h5 -o $@ --force
$(OUT)/table7.h5: $(call inject_files,$(TABLE7_TIERS))
	$(BIN)/sg-tabulate $^ --format h5 -o $@ --force
$(OUT)/table9.h5: $(call inject_files,$(TABLE9_TIERS))
	$(BIN)/sg-tabulate $^ --format h5 -o $@ --force

# Tables 6 and 7: the increase in validation loss (nats) per tier, junk type (cutoff), arm and dose.
table6: $(OUT)/table6.md
table7: $(OUT)/table7.md
$(OUT)/table6.md $(OUT)/table7.md: $(OUT)/%.md: $(OUT)/%.h5
	$(BIN)/sg-tabulate $< $(INJECT_TABLE_FLAGS) -o $@.tmp --force && mv $@.tmp $@

# Table 9: exposure — the mean share of a row's attention mass on quiet reads, and on the phantom.
table9: $(OUT)/table9.md
$(OUT)/table9.md: $(OUT)/table9.h5
	$(BIN)/sg-tabulate $< --where measure=exposure --where layer=all --rows arm --cols tier,cutoff --cell quiet_mass \
	  --decimals 3 --row-order $(ARM_ORDER) --order tier=$(subst $(space),$(comma),$(TABLE9_TIERS)) \
	  --order cutoff=median,q25 --label 'cutoff:median=quiet (med)' --label 'cutoff:q25=quiet (q25)' $(ARM_LABELS) \
	  --header arm=Arm -o $@.quiet --force
	$(BIN)/sg-tabulate $< --where measure=exposure --where layer=all --where cutoff=median --rows arm --cols tier \
	  --cell phantom_mass --decimals 3 --row-order $(ARM_ORDER) --order tier=$(subst $(space),$(comma),$(TABLE9_TIERS)) \
	  --missing – $(ARM_LABELS) --header arm=Arm -o $@.phantom --force
	{ echo "Share of each attention row's mass on quiet reads (below the per-head median or 25th percentile norm):"; \
	  echo; cat $@.quiet; echo; echo "Share on the phantom (the sink token for the sink-token arm; – without one):"; \
	  echo; cat $@.phantom; } > $@.tmp && rm -f $@.quiet $@.phantom && mv $@.tmp $@

# Ours beside the paper's (pipelines/paper_injection.csv, paper_exposure.csv: Tables 6, 7 and 9).
table6-vs-paper table7-vs-paper: %-vs-paper: $(OUT)/%.h5
	$(BIN)/sg-tabulate $< $(INJECT_PIPELINES)/paper_injection.csv --source-key source \
	  --where tier=$(subst $(space),$(comma),$(if $(filter table6,$*),$(TABLE6_TIERS),$(TABLE7_TIERS))) \
	  $(subst --rows tier$(comma)junk$(comma)cutoff$(comma)arm,--rows tier$(comma)junk$(comma)cutoff$(comma)arm$(comma)source,$(INJECT_TABLE_FLAGS)) \
	  --label source:$*=sinkgate -o $(OUT)/$@.md --force
	@cat $(OUT)/$@.md
# Our tiers beside the paper's (50M and 124M): at a CPU tier the paper's columns stand beside ours.
TABLE9_VS_PAPER_TIERS = $(subst $(space),$(comma),$(sort $(TABLE9_TIERS) 50M 124M))
table9-vs-paper: $(OUT)/table9.h5
	$(BIN)/sg-tabulate $< $(INJECT_PIPELINES)/paper_exposure.csv --source-key source \
	  --where tier=$(TABLE9_VS_PAPER_TIERS) --where measure=exposure --where layer=all \
	  --order tier=$(TIER_ORDER) --rows arm,source --cols tier,cutoff --cell quiet_mass --decimals 3 --missing – \
	  --row-order $(ARM_ORDER) \
	  --order cutoff=median,q25 --label 'cutoff:median=quiet (med)' --label 'cutoff:q25=quiet (q25)' \
	  --label source:table9=sinkgate $(ARM_LABELS) --header arm=Arm --header source=Source -o $(OUT)/$@.quiet --force
	$(BIN)/sg-tabulate $< $(INJECT_PIPELINES)/paper_exposure.csv --source-key source \
	  --where tier=$(TABLE9_VS_PAPER_TIERS) --where measure=exposure --where layer=all \
	  --where cutoff=median --order tier=$(TIER_ORDER) --rows arm,source --cols tier --cell phantom_mass --decimals 3 --missing – \
	  --row-order $(ARM_ORDER) --label source:table9=sinkgate $(ARM_LABELS) --header arm=Arm --header source=Source \
	  -o $(OUT)/$@.phantom --force
	{ echo "Share of each attention row's mass on quiet reads, ours (sinkgate) beside the paper's:"; echo; \
	  cat $(OUT)/$@.quiet; echo; echo "Share on the phantom (the sink token for the sink-token arm; – without one):"; \
	  echo; cat $(OUT)/$@.phantom; } > $(OUT)/$@.md.tmp && rm -f $(OUT)/$@.quiet $(OUT)/$@.phantom && \
	  mv $(OUT)/$@.md.tmp $(OUT)/$@.md
	@cat $(OUT)/$@.md

# Figure 2: delta_loss against dose, one panel per tier of FIG2_TIERS with structured junk at the q25
# cutoff and one line per arm; then a random fixed direction against the gate's own direction at the
# median cutoff, at FIG2C_TIER, for the baseline and the arms with a projection gate (as in the
# paper). fig2.tsv: every point of the figure, those below the log axis's floor marked (fig2.gp).
FIG2C_ARMS = $(filter baseline projgate combo2 %+projgate,$(call arms_of,$(FIG2C_TIER)))
fig2: $(OUT)/fig2.png
$(OUT)/fig2-ab.tsv: $(call inject_files,$(sort $(FIG2_TIERS)))
	$(BIN)/sg-tabulate $^ --where measure=injection --where junk=structured --where cutoff=q25 \
	  --rows tier,arm,dose --cell delta_loss --format tsv -o $@ --force
$(OUT)/fig2-c.tsv: $(call inject_files,$(FIG2C_TIER))
	$(BIN)/sg-tabulate $^ --where measure=injection --where junk=random-direction,own-direction --where cutoff=median \
	  $(if $(FIG2C_ARMS),--where arm=$(subst $(space),$(comma),$(strip $(FIG2C_ARMS)))) \
	  --rows junk,arm,dose --cell delta_loss --format tsv -o $@ --force
$(OUT)/fig2.png $(OUT)/fig2.tsv &: $(OUT)/fig2-ab.tsv $(OUT)/fig2-c.tsv $(INJECT_PIPELINES)/fig2.gp $(INJECT_PIPELINES)/figures.gp
	gnuplot -e "ab='$(OUT)/fig2-ab.tsv'; c='$(OUT)/fig2-c.tsv'; output='$(OUT)/fig2.png'; data='$(OUT)/fig2.tsv'; \
	  tiers='$(FIG2_TIERS)'; ctier='$(FIG2C_TIER)'; seed='$(INJECT_SEED)'" $(INJECT_PIPELINES)/fig2.gp

# The same figure from the paper's own numbers (pipelines/paper_injection.csv), to set beside ours.
fig2-paper: $(OUT)/fig2-paper.png
$(OUT)/fig2-paper.png: $(INJECT_PIPELINES)/paper_injection.csv $(INJECT_PIPELINES)/fig2.gp $(INJECT_PIPELINES)/figures.gp
	@mkdir -p $(@D)
	$(BIN)/sg-tabulate $< --where tier=124M,350M --where junk=structured --where cutoff=q25 --rows tier,arm,dose \
	  --cell delta_loss --format tsv -o $(OUT)/fig2-paper-ab.tsv --force
	$(BIN)/sg-tabulate $< --where tier=124M --where junk=random-direction,own-direction --where cutoff=median \
	  --where arm=baseline,projgate,combo2 --rows junk,arm,dose --cell delta_loss --format tsv -o $(OUT)/fig2-paper-c.tsv --force
	gnuplot -e "ab='$(OUT)/fig2-paper-ab.tsv'; c='$(OUT)/fig2-paper-c.tsv'; output='$@'; data='$(OUT)/fig2-paper.tsv'; \
	  tiers='124M 350M'; ctier='124M'; seed='0'; paper=1" $(INJECT_PIPELINES)/fig2.gp
